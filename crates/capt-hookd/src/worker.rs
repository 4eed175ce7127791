//! One worker process as the host sees it: spawn and hello, events multiplexed by id over its
//! stdin/stdout, and retirement (TERM, grace, KILL, reap).

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use capt_hook_proto::{
    BUILD, EventRequest, EventResponse, MAX_FRAME, PROTOCOL, WorkerFrame, decode, encode,
};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot, watch};
use tokio::time::timeout;

use crate::framing::{read_frame, write_frame};

/// Events one worker may have outstanding; a further event waits for a slot.
pub const MAX_OUTSTANDING: usize = 64;
/// How long a new worker has to answer the hello.
pub(crate) const STARTUP: Duration = Duration::from_secs(10);
/// How long a retiring worker has between TERM and KILL.
const GRACE: Duration = Duration::from_secs(2);

/// What a caller waiting on an event gets.
type Reply = Result<EventResponse, CallError>;

/// An event sent and not yet answered. Holding the slot permit here (not in the caller) keeps
/// an abandoned event counted against the worker until the worker actually answers it.
struct Pending {
    reply: oneshot::Sender<Reply>,
    _slot: OwnedSemaphorePermit,
}

/// Why a call did not produce a response.
#[derive(Debug)]
pub enum CallError {
    /// No slot freed up before the deadline; the event was never sent.
    NoSlot,
    /// The worker did not answer before the deadline.
    TimedOut,
    /// The worker died or broke the protocol.
    Broken(String),
    /// The worker refused the event (for example, its deadline passed before dispatch).
    Refused(String),
    /// The worker was retired before the event was sent; another worker may take it (the
    /// event comes back for that).
    Retired(Box<EventRequest>),
}

/// A running worker.
pub struct Worker {
    /// Hash of the canonical root and semantic environment.
    pub key: String,
    /// The canonical project root.
    pub root: PathBuf,
    /// Host-wide sequence number: tells a worker apart from its successor under the same key.
    pub generation: u64,
    /// The worker's pid, also its process group (it leads its own group).
    pub pid: u32,
    /// Unix milliseconds at spawn, for status.
    pub started_at_unix_ms: u64,
    /// Frames for the writer task, which owns the worker's stdin.
    frames: mpsc::UnboundedSender<Vec<u8>>,
    /// Outstanding events by id.
    pending: Mutex<HashMap<u64, Pending>>,
    /// Next event id; ids are never reused within a worker.
    next_id: AtomicU64,
    /// The 64 outstanding-event slots.
    slots: Arc<Semaphore>,
    /// Events answered, for status.
    served: AtomicU64,
    /// When the last event finished, for idle retirement.
    last_used: Mutex<Instant>,
    /// Set once the worker is retiring or gone; no new event is sent to it.
    broken: AtomicBool,
    /// Tells the supervisor task to stop the process.
    retire: watch::Sender<bool>,
    /// Becomes true once the process has been reaped.
    reaped: watch::Receiver<bool>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "worker {} gen {} pid {}",
            self.key, self.generation, self.pid
        )
    }
}

/// Everything needed to start a worker.
pub struct Spawn<'a> {
    /// Worker key.
    pub key: &'a str,
    /// Canonical root.
    pub root: &'a Path,
    /// The key's semantic environment, added to the worker's base environment.
    pub semantic_env: &'a BTreeMap<String, String>,
    /// Generation number.
    pub generation: u64,
    /// Worker binary.
    pub exe: &'a Path,
    /// Told to each session once: why the project's Rust hooks are not live.
    pub note: Option<&'a str>,
    /// Where the worker's stderr goes (the host log, line by line through the host).
    pub log: &'a Arc<crate::logfile::HostLog>,
}

/// Why a worker could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The process could not be started.
    #[error("cannot start {}: {source}", exe.display())]
    Start {
        /// The worker binary.
        exe: std::path::PathBuf,
        /// Why it did not start.
        source: std::io::Error,
    },
    /// The process started without the pipes it was given.
    #[error("worker pipes missing")]
    Pipes,
    /// The hello failed: the worker refused, broke the protocol or exited.
    #[error("worker {} failed its hello: {reason}", exe.display())]
    Hello {
        /// The worker binary.
        exe: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The hello did not arrive in time.
    #[error("worker did not say hello within {0:?}")]
    HelloTimeout(std::time::Duration),
}

impl Worker {
    /// Starts a worker and completes the hello within the startup bound. `on_exit` runs once
    /// the process has been reaped, whatever the cause.
    pub async fn spawn(
        spec: Spawn<'_>,
        on_exit: impl FnOnce(&Worker) + Send + 'static,
    ) -> Result<Arc<Worker>, SpawnError> {
        let mut cmd = tokio::process::Command::new(spec.exe);
        // On this thread: one `stat` of a root just resolved (its attributes are fresh), where
        // a hop through the blocking pool cost a cold start 0.1-0.3 ms.
        let cwd = match std::fs::metadata(spec.root) {
            Ok(m) if m.is_dir() => spec.root.to_path_buf(),
            _ => std::env::temp_dir(),
        };
        cmd.arg("serve").arg("--root").arg(spec.root);
        if let Some(note) = spec.note {
            cmd.arg("--note").arg(note);
        }
        cmd.current_dir(cwd)
            .env_clear()
            .envs(base_env())
            .envs(spec.semantic_env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Through the host, so the log can rotate under it without losing a line.
            .stderr(Stdio::piped())
            // Its own process group, so retirement reaches the hooks' subprocesses too.
            .process_group(0);
        let mut child = cmd.spawn().map_err(|source| SpawnError::Start {
            exe: spec.exe.to_path_buf(),
            source,
        })?;
        let pid = child.id().unwrap_or(0);
        let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(SpawnError::Pipes);
        };
        // Until the worker and every process that inherited its stderr have closed it.
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(Arc::clone(spec.log).pump(stderr));
        }
        let hello = async {
            let ours = WorkerFrame::Hello {
                protocol: PROTOCOL,
                build: BUILD.into(),
            };
            write_frame(&mut stdin, &encode(&ours))
                .await
                .map_err(|e| e.to_string())?;
            match read_frame(&mut stdout, MAX_FRAME).await {
                Ok(Some(body)) => match decode::<WorkerFrame>(&body) {
                    Ok(theirs) if theirs == ours => Ok(()),
                    Ok(theirs) => Err(format!("worker refused: it answered {theirs:?}")),
                    Err(e) => Err(e.to_string()),
                },
                Ok(None) => Err("worker exited before its hello".into()),
                Err(e) => Err(e.to_string()),
            }
        };
        match timeout(STARTUP, hello).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                stop(&mut child, pid).await;
                return Err(SpawnError::Hello {
                    exe: spec.exe.to_path_buf(),
                    reason: e,
                });
            }
            Err(_) => {
                stop(&mut child, pid).await;
                return Err(SpawnError::HelloTimeout(STARTUP));
            }
        }

        let (frames, frames_rx) = mpsc::unbounded_channel();
        let (retire, retire_rx) = watch::channel(false);
        let (reaped_tx, reaped) = watch::channel(false);
        let worker = Arc::new(Worker {
            key: spec.key.to_owned(),
            root: spec.root.to_path_buf(),
            generation: spec.generation,
            pid,
            started_at_unix_ms: crate::now_unix_ms(),
            frames,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            slots: Arc::new(Semaphore::new(MAX_OUTSTANDING)),
            served: AtomicU64::new(0),
            last_used: Mutex::new(Instant::now()),
            broken: AtomicBool::new(false),
            retire,
            reaped,
        });
        tokio::spawn(write_loop(stdin, frames_rx));
        tokio::spawn(read_loop(Arc::clone(&worker), stdout));
        tokio::spawn(supervise(
            Arc::clone(&worker),
            child,
            retire_rx,
            reaped_tx,
            on_exit,
        ));
        Ok(worker)
    }

    /// Sends one event and waits for its answer until `reply_by`.
    pub async fn call(
        &self,
        mut req: EventRequest,
        reply_by: Instant,
    ) -> Result<EventResponse, CallError> {
        let reply_by = tokio::time::Instant::from_std(reply_by);
        let slot = match tokio::time::timeout_at(reply_by, Arc::clone(&self.slots).acquire_owned())
            .await
        {
            Err(_) => return Err(CallError::NoSlot),
            Ok(Err(_)) => return Err(CallError::Retired(Box::new(req))),
            Ok(Ok(slot)) => slot,
        };
        if self.broken.load(Ordering::SeqCst) {
            return Err(CallError::Retired(Box::new(req)));
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        self.lock_pending().insert(
            id,
            Pending {
                reply: tx,
                _slot: slot,
            },
        );
        req.schema = 1;
        let frame = encode(&WorkerFrame::Event { id, request: req });
        if self.frames.send(frame).is_err() {
            self.lock_pending().remove(&id);
            return Err(CallError::Broken("worker stdin closed".into()));
        }
        let outcome = tokio::time::timeout_at(reply_by, rx).await;
        *self.last_used.lock() = Instant::now();
        match outcome {
            Ok(Ok(Ok(resp))) => Ok(resp),
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(_)) => Err(CallError::Broken(self.death_note())),
            Err(_) => Err(CallError::TimedOut),
        }
    }

    /// Events sent and not answered.
    pub fn outstanding(&self) -> u64 {
        self.lock_pending().len() as u64
    }

    /// Events answered.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Time since the last event finished, or zero while events are outstanding.
    pub fn idle_for(&self) -> Duration {
        if self.outstanding() > 0 {
            return Duration::ZERO;
        }
        self.last_used.lock().elapsed()
    }

    /// When the last event finished (or the worker started).
    pub fn last_used(&self) -> Instant {
        *self.last_used.lock()
    }

    /// True once the worker is retiring or gone.
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::SeqCst)
    }

    /// Starts stopping the worker without waiting: no new event is sent to it from now on.
    pub fn stop(&self) {
        self.broken.store(true, Ordering::SeqCst);
        let _ = self.retire.send(true);
    }

    /// Stops the worker (TERM, grace, KILL) and waits until it has been reaped.
    pub async fn retire(&self) {
        self.stop();
        let mut reaped = self.reaped.clone();
        let _ = reaped.wait_for(|r| *r).await;
    }

    fn lock_pending(&self) -> parking_lot::MutexGuard<'_, HashMap<u64, Pending>> {
        self.pending.lock()
    }

    fn death_note(&self) -> String {
        format!("worker pid {} exited before answering", self.pid)
    }

    /// Fails every outstanding event: the worker can no longer answer them.
    fn fail_all(&self, why: &str) {
        self.broken.store(true, Ordering::SeqCst);
        let drained: Vec<Pending> = self.lock_pending().drain().map(|(_, p)| p).collect();
        for p in drained {
            let _ = p.reply.send(Err(CallError::Broken(why.to_owned())));
        }
    }
}

/// The worker's base environment: the host's, minus every request-scoped variable, so the first
/// client's session never leaks into a shared worker.
fn base_env() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| {
            !capt_hook_proto::is_request_env(k) && k != crate::env::PATH && k != "LANG"
        })
        .collect();
    let path =
        std::env::var(crate::env::PATH).unwrap_or_else(|_| "/usr/bin:/bin:/usr/sbin:/sbin".into());
    env.push((crate::env::PATH.into(), path));
    env.push(("LANG".into(), "C.UTF-8".into()));
    env
}

/// Bytes of queued frames gathered into one write to a worker.
const WRITE_BATCH: usize = 256 * 1024;

/// Writes queued events to the worker. Under load, the frames already queued go out in one
/// write, so the worker's reader wakes once for them rather than once each.
async fn write_loop(mut stdin: ChildStdin, mut frames: mpsc::UnboundedReceiver<Vec<u8>>) {
    let mut batch = Vec::new();
    while let Some(body) = frames.recv().await {
        batch.clear();
        let mut next = Some(body);
        while let Some(body) = next.take() {
            if let Err(e) = capt_hook_proto::push_frame(&mut batch, &body) {
                tracing::warn!(error = %e, "an event frame too large for a worker");
                return;
            }
            if batch.len() < WRITE_BATCH {
                next = frames.try_recv().ok();
            }
        }
        let written = async {
            stdin.write_all(&batch).await?;
            stdin.flush().await
        };
        if let Err(e) = written.await {
            tracing::warn!(error = %e, "writing to a worker failed");
            break;
        }
    }
}

/// Routes answers to their callers. Anything unexpected (an unknown id, a frame the host never
/// asks for, bad bytes) means the channel can no longer be trusted: the worker is retired.
async fn read_loop(worker: Arc<Worker>, stdout: ChildStdout) {
    // Buffered: a frame's header and body, and the answers that arrived together under load,
    // come in one read instead of three per frame.
    let mut stdout = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
    let why = loop {
        let body = match read_frame(&mut stdout, MAX_FRAME).await {
            Ok(Some(b)) => b,
            Ok(None) => break worker.death_note(),
            Err(e) => break format!("worker broke the protocol: {e}"),
        };
        let (id, reply) = match decode::<WorkerFrame>(&body) {
            Ok(WorkerFrame::Result { id, response }) => (id, Ok(response)),
            Ok(WorkerFrame::Error { id, error }) => (id, Err(CallError::Refused(error))),
            Ok(other) => break format!("worker broke the protocol: unexpected {other:?}"),
            Err(e) => break format!("worker broke the protocol: {e}"),
        };
        let Some(pending) = worker.lock_pending().remove(&id) else {
            break format!("worker broke the protocol: answer for unknown id {id}");
        };
        worker.served.fetch_add(1, Ordering::Relaxed);
        // A caller that gave up has dropped its receiver; the answer is discarded.
        let _ = pending.reply.send(reply);
    };
    if !worker.is_broken() {
        tracing::warn!(key = %worker.key, pid = worker.pid, "{why}; retiring the worker");
    }
    worker.fail_all(&why);
    let _ = worker.retire.send(true);
}

/// Owns the child: waits for it to exit on its own, or stops it when asked, then reaps it.
async fn supervise(
    worker: Arc<Worker>,
    mut child: Child,
    mut retire: watch::Receiver<bool>,
    reaped: watch::Sender<bool>,
    on_exit: impl FnOnce(&Worker),
) {
    tokio::select! {
        status = child.wait() => {
            tracing::warn!(key = %worker.key, pid = worker.pid, ?status, "worker exited");
        }
        _ = async { drop(retire.wait_for(|r| *r).await) } => {
            stop(&mut child, worker.pid).await;
            tracing::info!(key = %worker.key, pid = worker.pid, "worker retired");
        }
    }
    worker.fail_all(&worker.death_note());
    on_exit(&worker);
    let _ = reaped.send(true);
}

/// TERM to the worker's process group, KILL after the grace period, then reap.
async fn stop(child: &mut Child, pid: u32) {
    signal_group(pid, rustix::process::Signal::TERM);
    if timeout(GRACE, child.wait()).await.is_err() {
        signal_group(pid, rustix::process::Signal::KILL);
        let _ = child.wait().await;
    }
    // No signal after the reap: the pid may already name another process.
}

/// Signals a process group; a group that is already gone is fine.
pub fn signal_group(pgid: u32, sig: rustix::process::Signal) {
    if let Some(pid) = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

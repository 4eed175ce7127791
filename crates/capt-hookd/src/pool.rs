//! The workers, one per key (canonical root + semantic environment): started on demand,
//! reused while warm, retired when idle, broken, timed out, or serving a temp-dir root. At most
//! `max_workers` run at once: starting one more retires the least recently used idle worker,
//! and when every worker is busy the event is refused as busy (the client evaluates it itself).

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use capt_hook_proto::{EventRequest, HostReply, Refusal, WorkerStatus};
use tokio::sync::Mutex as AsyncMutex;

use crate::records::Records;
use crate::rust::Builds;
use crate::worker::{CallError, Spawn, Worker};
use capt_hook_rust_project::Selection;

/// Time kept back from the caller's deadline so the reply reaches it before it gives up.
const REPLY_MARGIN: Duration = Duration::from_millis(50);
/// Time the worker's own deadline is kept before the host's, so the engine abandons slow hooks
/// and answers before the host stops waiting.
const WORKER_MARGIN: Duration = Duration::from_millis(100);

/// How long a root's canonical path is reused. Resolving it runs off the runtime thread (a
/// slow file system must not stall other connections), which costs two thread hand-offs per
/// event; a busy session sends many events a second from the same root.
const ROOT_TTL: Duration = Duration::from_secs(1);

/// A key's worker, if one is running; locked while one is starting.
type Slot = Arc<AsyncMutex<Option<Arc<Worker>>>>;

/// The pool.
pub struct Pool {
    /// One slot per key. The async mutex serializes starting: concurrent first events for a
    /// cold root wait for one worker instead of starting many.
    slots: Mutex<HashMap<String, Slot>>,
    /// Live workers by generation, for status, sweeping and shutdown (a starting slot is
    /// locked, so the slots map cannot be read without waiting).
    live: Arc<Mutex<BTreeMap<u64, Arc<Worker>>>>,
    /// Last generation handed out.
    generation: AtomicU64,
    /// The worker binary.
    exe: PathBuf,
    /// The host log, which also receives every worker's stderr.
    log: Arc<crate::logfile::HostLog>,
    /// Workers idle this long are retired.
    pub idle: Duration,
    /// The temp directory: roots inside it are ephemeral.
    temp: PathBuf,
    /// Durable pids of live workers, for reaping after a host crash.
    records: Arc<Records>,
    /// Most workers running or starting at once.
    pub max_workers: usize,
    /// Workers being started now; counted against `max_workers` with the running ones.
    starting: Arc<AtomicUsize>,
    /// Background builds of Rust hook projects.
    builds: Arc<Builds>,
    /// Sent with every event ([`EventRequest::notice_epoch`]): moves on after each evaluated
    /// ResourcePressure event, so workers look for the notice it may have left. It starts at
    /// this host's start time, so a worker never sees a value an earlier host sent.
    notice_epoch: AtomicU64,
    /// Canonical paths of the roots seen in the last [`ROOT_TTL`], with when each was resolved.
    roots: Mutex<HashMap<String, (PathBuf, Instant)>>,
}

/// Why no worker could be had for an event.
enum NoWorker {
    /// Every worker is busy and the cap is reached.
    Busy(String),
    /// Starting one failed.
    Failed(String),
    /// The deadline passed first.
    Late(String),
}

/// A claimed place under the worker cap for a worker being started; released when dropped.
struct Starting(Arc<AtomicUsize>);

impl Drop for Starting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Pool {
    /// An empty pool.
    pub fn new(
        exe: PathBuf,
        log: Arc<crate::logfile::HostLog>,
        idle: Duration,
        max_workers: usize,
        records: Records,
    ) -> Pool {
        let temp = std::env::temp_dir();
        Pool {
            slots: Mutex::new(HashMap::new()),
            live: Arc::new(Mutex::new(BTreeMap::new())),
            generation: AtomicU64::new(0),
            exe,
            log,
            idle,
            temp: temp.canonicalize().unwrap_or(temp),
            records: Arc::new(records),
            max_workers: max_workers.max(1),
            starting: Arc::new(AtomicUsize::new(0)),
            builds: Builds::new(crate::rust::cli_exe()),
            notice_epoch: AtomicU64::new(crate::now_unix_ms()),
            roots: Mutex::new(HashMap::new()),
        }
    }

    /// The canonical path of a request's root, resolved at most once per [`ROOT_TTL`].
    async fn canonical(&self, root: &str) -> PathBuf {
        let now = Instant::now();
        if let Some(known) = self.known_root(root, now) {
            return known;
        }
        let resolved = canonical_root(root).await;
        self.remember_root(root, &resolved, now);
        resolved
    }

    fn known_root(&self, root: &str, now: Instant) -> Option<PathBuf> {
        let roots = self.roots.lock();
        let (path, at) = roots.get(root)?;
        (now.saturating_duration_since(*at) < ROOT_TTL).then(|| path.clone())
    }

    fn remember_root(&self, root: &str, resolved: &Path, now: Instant) {
        let mut roots = self.roots.lock();
        // Expired entries go on every miss, so the map holds only the last second's roots.
        roots.retain(|_, (_, at)| now.saturating_duration_since(*at) < ROOT_TTL);
        roots.insert(root.to_owned(), (resolved.to_path_buf(), now));
    }

    /// Evaluates one event on its worker, starting one if needed. A worker retired by the cap
    /// between being picked and being sent the event is replaced once.
    pub async fn dispatch(&self, mut req: EventRequest, deadline: Instant) -> HostReply {
        let root = self.canonical(&req.root).await;
        let pressure = req.event == crate::pressure::EVENT;
        req.notice_epoch = Some(self.notice_epoch.load(Ordering::SeqCst));
        let reply = match self.dispatch_to(&root, req, deadline).await {
            Ok(reply) => reply,
            Err(req) => self
                .dispatch_to(&root, req, deadline)
                .await
                .unwrap_or_else(|_| HostReply::Failed {
                    message: "the worker was retired twice before the event could be sent".into(),
                    timed_out: false,
                }),
        };
        // Only once the notice is on disk: an event sent meanwhile may have looked too early,
        // and the next one, carrying the new value, looks again.
        if pressure {
            self.notice_epoch.fetch_add(1, Ordering::SeqCst);
        }
        reply
    }

    /// Starts the worker an event from `root` with request environment `env` would use, with
    /// no event to send it: the host a client started for its first event gets that worker
    /// going while the client connects. A failure is only logged; the event retries the start.
    ///
    /// Everything up to the worker's fork runs at once on this thread (a few `stat` calls),
    /// not on the blocking pool: each hop there cost a cold start 0.1-0.3 ms.
    pub async fn prestart(&self, root: &str, env: &BTreeMap<String, String>) {
        let root = canonical_root_now(root);
        let semantic = semantic_env(env);
        let key = worker_key(&root, &semantic);
        let by = Instant::now() + crate::worker::STARTUP;
        let choice = crate::rust::select(&root, &semantic);
        match self.worker(&key, &root, &semantic, by, Some(choice)).await {
            Ok(_) => {}
            Err(NoWorker::Busy(why) | NoWorker::Failed(why) | NoWorker::Late(why)) => {
                tracing::warn!(key, error = %why, "could not start the first event's worker early");
            }
        }
    }

    /// One attempt; the event comes back when its worker was retired before it was sent.
    async fn dispatch_to(
        &self,
        root: &Path,
        mut req: EventRequest,
        deadline: Instant,
    ) -> Result<HostReply, EventRequest> {
        let semantic = semantic_env(&req.env);
        let key = worker_key(root, &semantic);
        let reply_by = deadline.checked_sub(REPLY_MARGIN).unwrap_or(deadline);
        let worker_deadline = reply_by
            .checked_sub(WORKER_MARGIN)
            .filter(|d| *d > Instant::now());
        req.deadline_unix_ms = crate::unix_ms_at(worker_deadline.unwrap_or(reply_by));

        let worker = match self.worker(&key, root, &semantic, reply_by, None).await {
            Ok(w) => w,
            Err(NoWorker::Busy(reason)) => {
                return Ok(HostReply::Refused {
                    code: Refusal::Busy,
                    reason,
                });
            }
            Err(NoWorker::Failed(message) | NoWorker::Late(message)) => {
                return Ok(HostReply::Failed {
                    message,
                    timed_out: false,
                });
            }
        };
        let outcome = worker.call(req, reply_by).await;
        let reply = match outcome {
            Ok(resp) if resp.stale_build => {
                // The project's Rust sources changed under its worker, which answered with the
                // TOML hooks alone: retire it and build, so a later event gets the new build.
                tracing::info!(
                    key,
                    pid = worker.pid,
                    "project worker is stale; retiring it"
                );
                retire_later(&worker);
                self.build(root, &semantic);
                HostReply::Event(resp)
            }
            Ok(resp) => HostReply::Event(resp),
            Err(CallError::Retired(req)) => return Err(*req),
            Err(CallError::NoSlot) => HostReply::Refused {
                code: Refusal::DeadlinePassed,
                reason: "the deadline passed while the worker's 64 slots were busy".into(),
            },
            Err(CallError::Refused(reason)) => HostReply::Refused {
                code: Refusal::DeadlinePassed,
                reason,
            },
            Err(CallError::TimedOut) => {
                tracing::warn!(
                    key,
                    pid = worker.pid,
                    "worker missed the deadline; retiring it"
                );
                retire_later(&worker);
                HostReply::Failed {
                    message: "the worker did not answer before the deadline".into(),
                    timed_out: true,
                }
            }
            Err(CallError::Broken(message)) => {
                retire_later(&worker);
                HostReply::Failed {
                    message,
                    timed_out: false,
                }
            }
        };
        // A temp-dir root will not be seen again: do not keep a worker warm for it.
        if root.starts_with(&self.temp) && worker.outstanding() == 0 {
            retire_later(&worker);
        }
        Ok(reply)
    }

    /// Claims a place under the worker cap, retiring the least recently used idle worker when
    /// the cap is reached.
    fn claim_start(&self, key: &str) -> Result<Starting, NoWorker> {
        let live = self.live.lock();
        let running: Vec<&Arc<Worker>> = live.values().filter(|w| !w.is_broken()).collect();
        if running.len() + self.starting.load(Ordering::SeqCst) >= self.max_workers {
            let Some(lru) = running
                .iter()
                .filter(|w| w.outstanding() == 0)
                .min_by_key(|w| w.last_used())
            else {
                return Err(NoWorker::Busy(format!(
                    "all {} workers are busy (the cap is {}; set {} to change it)",
                    running.len(),
                    self.max_workers,
                    crate::env::CAPT_HOOKD_MAX_WORKERS
                )));
            };
            tracing::info!(
                key = %lru.key,
                pid = lru.pid,
                for_key = key,
                "at the worker cap; retiring the least recently used idle worker"
            );
            lru.stop();
        }
        self.starting.fetch_add(1, Ordering::SeqCst);
        Ok(Starting(Arc::clone(&self.starting)))
    }

    /// The live worker for `key`, started if there is none. Waiting for another event's start
    /// is bounded by the caller's deadline.
    async fn worker(
        &self,
        key: &str,
        root: &Path,
        semantic: &BTreeMap<String, String>,
        reply_by: Instant,
        chosen: Option<Selection>,
    ) -> Result<Arc<Worker>, NoWorker> {
        let slot = {
            let mut slots = self.slots.lock();
            Arc::clone(slots.entry(key.to_owned()).or_default())
        };
        let mut guard = tokio::time::timeout_at(reply_by.into(), slot.lock())
            .await
            .map_err(|_| {
                NoWorker::Late("the deadline passed while a worker was starting".to_owned())
            })?;
        if let Some(w) = guard.as_ref().filter(|w| !w.is_broken()) {
            return Ok(Arc::clone(w));
        }
        let claim = self.claim_start(key)?;
        let choice = match chosen {
            Some(c) => c,
            None => crate::rust::choose(root, semantic).await,
        };
        if choice.wants_build() {
            self.build(root, semantic);
        }
        let worker = match self.start(key, root, semantic, &choice, reply_by).await {
            Err(NoWorker::Failed(why)) if choice.exe().is_some() => {
                // The project's build crashed at start or failed its hello: retire that build
                // and serve the TOML hooks with the stock worker, telling sessions why.
                tracing::error!(key, error = %why, "project worker failed to start; using the stock worker");
                if let Some(hash) = choice.project_hash() {
                    let why = format!("its built worker failed at start ({why})");
                    crate::rust::retire_build(root, semantic, hash, why).await;
                }
                let stock = crate::rust::choose(root, semantic).await;
                self.start(key, root, semantic, &stock, reply_by).await?
            }
            other => other?,
        };
        let generation = worker.generation;
        tracing::info!(key, root = %root.display(), pid = worker.pid, generation, "worker started");
        {
            let mut live = self.live.lock();
            live.insert(generation, Arc::clone(&worker));
            // Counted as running from here; the claim is released under the same lock.
            drop(claim);
            self.records
                .save_soon(live.values().map(|w| w.pid).collect());
        }
        *guard = Some(Arc::clone(&worker));
        Ok(worker)
    }

    /// Spawns the chosen binary for `key` and completes its hello, within the deadline.
    async fn start(
        &self,
        key: &str,
        root: &Path,
        semantic: &BTreeMap<String, String>,
        choice: &Selection,
        reply_by: Instant,
    ) -> Result<Arc<Worker>, NoWorker> {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let (live, records) = (Arc::clone(&self.live), Arc::clone(&self.records));
        // A project worker's key names its build, so status tells builds apart.
        let shown = match choice.project_hash() {
            Some(hash) => format!("{key}@{}", &hash[..hash.len().min(12)]),
            None => key.to_owned(),
        };
        let spec = Spawn {
            key: &shown,
            root,
            semantic_env: semantic,
            generation,
            exe: choice.exe().unwrap_or(&self.exe),
            note: choice.note(),
            log: &self.log,
        };
        let start = Worker::spawn(spec, move |w: &Worker| {
            let mut live = live.lock();
            live.remove(&w.generation);
            records.save_soon(live.values().map(|w| w.pid).collect());
        });
        tokio::time::timeout_at(reply_by.into(), start)
            .await
            .map_err(|_| {
                NoWorker::Late("the deadline passed while the worker was starting".to_owned())
            })?
            .map_err(|e| NoWorker::Failed(e.to_string()))
    }

    /// Starts a background build of `root`'s Rust hooks (one per root at a time); when it ends,
    /// the root's workers are retired so the next event starts whichever binary is current.
    fn build(&self, root: &Path, semantic: &BTreeMap<String, String>) {
        let live = Arc::clone(&self.live);
        let built = root.to_path_buf();
        self.builds.start(root, semantic, move || {
            let live = live.lock();
            for w in live.values().filter(|w| w.root == built) {
                tracing::info!(key = %w.key, pid = w.pid, "build ended; retiring the root's worker");
                w.stop();
            }
        });
    }

    /// Every live worker.
    pub fn workers(&self) -> Vec<Arc<Worker>> {
        self.live.lock().values().cloned().collect()
    }

    /// Status rows, sorted by key.
    pub fn status(&self) -> Vec<WorkerStatus> {
        let mut rows: Vec<WorkerStatus> = self
            .workers()
            .iter()
            .filter(|w| !w.is_broken())
            .map(|w| WorkerStatus {
                key: w.key.clone(),
                root: w.root.display().to_string(),
                pid: w.pid,
                generation: w.generation,
                outstanding: w.outstanding(),
                served: w.served(),
                started_at_unix_ms: w.started_at_unix_ms,
            })
            .collect();
        rows.sort_by(|a, b| (&a.key, a.generation).cmp(&(&b.key, b.generation)));
        rows
    }

    /// Stops and reaps every worker, concurrently.
    pub async fn retire_all(&self) {
        let workers = self.workers();
        let mut set = tokio::task::JoinSet::new();
        for w in workers {
            set.spawn(async move { w.retire().await });
        }
        while set.join_next().await.is_some() {}
        self.slots.lock().clear();
    }

    /// Writes the worker records now, for a host about to stop. Each worker's exit queued a
    /// save on the blocking pool, which the stopping runtime may drop unrun; the next host then
    /// found the last worker still recorded and paid a check and a rewrite (0.5-0.7 ms) before
    /// it could start the first event's worker.
    pub fn save_records_now(&self) {
        let live = self.live.lock();
        self.records.save_now(live.values().map(|w| w.pid));
    }

    /// Retires workers idle past the idle period or whose root no longer exists.
    pub async fn sweep(&self) {
        for w in self.workers() {
            let gone = matches!(tokio::fs::metadata(&w.root).await, Err(e) if e.kind() == std::io::ErrorKind::NotFound);
            if w.outstanding() == 0 && (w.idle_for() >= self.idle || gone) {
                tracing::info!(key = %w.key, pid = w.pid, gone, "retiring an idle worker");
                w.retire().await;
            }
        }
        // Forget slots whose worker is gone, so the map does not grow with every temp root.
        let mut slots = self.slots.lock();
        slots.retain(|_, s| {
            s.try_lock()
                .map(|w| w.as_ref().is_some_and(|w| !w.is_broken()))
                .unwrap_or(true)
        });
    }
}

/// Retires a worker in the background, so the reply does not wait for the grace period.
fn retire_later(worker: &Arc<Worker>) {
    let w = Arc::clone(worker);
    tokio::spawn(async move { w.retire().await });
}

/// The root made absolute with symlinks resolved (kept as given when it cannot be resolved);
/// the file system is consulted off the runtime thread.
pub async fn canonical_root(root: &str) -> PathBuf {
    let abs = absolute(root);
    tokio::fs::canonicalize(&abs).await.unwrap_or(abs)
}

/// [`canonical_root`] on this thread.
fn canonical_root_now(root: &str) -> PathBuf {
    let abs = absolute(root);
    std::fs::canonicalize(&abs).unwrap_or(abs)
}

/// `root` made absolute against our working directory.
fn absolute(root: &str) -> PathBuf {
    let p = Path::new(root);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// The part of a request's environment that selects a worker (see the key below).
fn semantic_env(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    env.iter()
        .filter(|(k, _)| capt_hook_proto::is_semantic_env(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// 16 hex characters of blake3 over the root and each semantic `NAME=value`, NUL-separated.
pub fn worker_key(root: &Path, semantic: &BTreeMap<String, String>) -> String {
    let mut h = blake3::Hasher::new();
    h.update(root.as_os_str().as_encoded_bytes());
    for (k, v) in semantic {
        h.update(b"\0");
        h.update(k.as_bytes());
        h.update(b"=");
        h.update(v.as_bytes());
    }
    h.finalize().to_hex()[..16].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root is resolved again once its entry is older than the TTL: a moved symlink is
    /// followed after at most that long, and never before.
    #[test]
    fn canonical_roots_are_reused_for_the_ttl_only() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, link) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("link"),
        );
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let null = std::fs::File::options()
            .write(true)
            .open("/dev/null")
            .unwrap();
        let log = crate::logfile::HostLog::new(null, "/dev/null".into(), u64::MAX);
        let records = Records::new(tmp.path().join("records"));
        let pool = Pool::new("/bin/false".into(), log, Duration::from_secs(1), 1, records);
        let root = link.to_str().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let resolve = || runtime.block_on(pool.canonical(root));
        let (a, b) = (a.canonicalize().unwrap(), b.canonicalize().unwrap());
        assert_eq!(resolve(), a);
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&b, &link).unwrap();
        assert_eq!(resolve(), a, "reused within the TTL");
        let now = Instant::now();
        assert_eq!(pool.known_root(root, now), Some(a.clone()));
        assert_eq!(pool.known_root(root, now + ROOT_TTL), None, "expired");
        // An expired entry is dropped when another root is resolved.
        pool.remember_root("/elsewhere", Path::new("/elsewhere"), now + ROOT_TTL);
        assert_eq!(pool.roots.lock().len(), 1);
        assert_eq!(resolve(), b, "resolved again after the TTL");
    }

    #[test]
    fn keys_split_on_semantic_env_only() {
        let root = Path::new("/p");
        let none = BTreeMap::new();
        let hooks = BTreeMap::from([("HOOKS_X".to_owned(), "1".to_owned())]);
        assert_eq!(worker_key(root, &none).len(), 16);
        assert_ne!(worker_key(root, &none), worker_key(root, &hooks));
        assert_ne!(worker_key(root, &none), worker_key(Path::new("/q"), &none));
        assert_eq!(worker_key(root, &hooks), worker_key(root, &hooks.clone()));
    }
}

//! `<worker> serve --root R`: the host's side of a worker. Framed messages on
//! stdin/stdout, a hello that names this build, then events multiplexed by id.
//!
//! Threads are bounded whatever the hooks do: each event runs on its own thread, at most
//! [`MAX_EVENT_THREADS`] at once (the host's per-worker cap; an event past it is refused), and
//! returns at its deadline because slow handlers run on the engine's bounded pool and are
//! abandoned there. Async hooks run after the reply on a fixed background lane with a bounded
//! queue and their own deadline, so they never hold an event thread.

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::Mutex;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::project::Project;
use crate::worker::ServeOptions;
use capt_hook_engine::registry::Registry;
use capt_hook_proto::{
    BUILD, EventRequest, MAX_FRAME, PROTOCOL, WorkerFrame, decode, encode, read_frame, write_frame,
};

use crate::worker::warm::{
    Claim, Warm, claim, deadline_of, has_async_hooks, respond_traced, run_async_hooks,
};

/// How long a worker whose host went away waits for events already running.
const DRAIN: Duration = Duration::from_secs(5);
/// Events evaluated at once; the host never sends more (its per-worker cap), and a further one
/// is refused rather than given another thread.
pub const MAX_EVENT_THREADS: usize = 64;
/// Threads running async hooks after replies.
const BACKGROUND_THREADS: usize = 4;
/// Async runs waiting for a background thread; when full, a new run is dropped (and logged).
const BACKGROUND_QUEUE: usize = 64;
/// How long one event's async hooks may run before their handlers are abandoned.
const ASYNC_TIMEOUT: Duration = Duration::from_secs(180);

/// Event threads kept waiting for the next event once theirs is answered (the rest exit):
/// starting a thread costs more than evaluating a typical event.
const SPARE_EVENT_THREADS: usize = 8;

/// The write half of the protocol channel, shared by event threads.
type Out = Arc<Mutex<File>>;

/// Writes what this load learned about its patterns for the next worker, on a thread of its
/// own: only a load that parsed patterns the file did not have (the first of a build for a
/// project, or after its hooks changed) has anything to write.
fn save_pattern_facts() {
    let Some(cache) = capt_hook_core::pattern::installed_facts_cache() else {
        return;
    };
    if cache.counts().1 == 0 {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("capt-hook-facts".into())
        .spawn(move || {
            if let Err(e) = cache.save() {
                eprintln!("capt-hook-worker: cannot save the pattern facts: {e}");
            }
        });
    if let Err(e) = spawned {
        eprintln!("capt-hook-worker: cannot save the pattern facts: {e}");
    }
}

/// Serves until the host closes stdin or breaks the protocol.
pub fn run(opts: &ServeOptions, base: Arc<Registry>) -> ExitCode {
    let out = match protocol_out() {
        Ok(f) => Arc::new(Mutex::new(f)),
        Err(e) => {
            eprintln!("capt-hook-worker: cannot set up the protocol channel: {e}");
            return ExitCode::from(1);
        }
    };
    let mut input = std::io::stdin().lock();

    // Hello first: the host names its build and we echo ours, so it can refuse a mismatch.
    match read_frame(&mut input, MAX_FRAME).map(|b| b.map(|b| decode::<WorkerFrame>(&b))) {
        Ok(None) => return ExitCode::SUCCESS,
        Ok(Some(Ok(WorkerFrame::Hello { protocol, build }))) => {
            send(
                &out,
                &WorkerFrame::Hello {
                    protocol: PROTOCOL,
                    build: BUILD.into(),
                },
            );
            if protocol != PROTOCOL || build != BUILD {
                eprintln!(
                    "capt-hook-worker: host is build {build} (protocol {protocol}), this worker \
                     is {BUILD} (protocol {PROTOCOL})"
                );
                return ExitCode::from(1);
            }
        }
        other => {
            eprintln!("capt-hook-worker: expected a hello frame, got {other:?}");
            return ExitCode::from(1);
        }
    }

    // Claims of events whose client was killed before releasing them ([`capt_hook_proto::claim`]).
    capt_hook_proto::claim::sweep();

    // What an earlier worker of this build learned parsing this project's patterns.
    let facts = capt_hook_proto::paths::pattern_facts_dir();
    let project = blake3::hash(opts.root.as_os_str().as_encoded_bytes()).to_hex();
    if let Some(cache) = capt_hook_core::pattern::FactsCache::open(&facts, &project[..16]) {
        capt_hook_core::pattern::install_facts_cache(cache);
    }

    // Every step before the first event is on its path, so the threads this loop needs start
    // beside the load instead of after it.
    let threads = EventThreads::new();
    let (warm, background) = std::thread::scope(|s| {
        let lanes = s.spawn(|| {
            capt_hook_journal::flush_on_terminate();
            capt_hook_journal::start();
            // The first event's thread, so that event does not start one.
            if let Err(e) = threads.spare() {
                eprintln!("capt-hook-worker: no spare event thread: {e}");
            }
            Background::start()
        });
        let warm = Arc::new(Warm::load(&opts.root, base, opts.note.clone()));
        let lanes = lanes
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (warm, lanes)
    });
    save_pattern_facts();
    let running = Arc::new(AtomicUsize::new(0));
    let code = loop {
        let frame = match read_frame(&mut input, MAX_FRAME) {
            Ok(None) => break ExitCode::SUCCESS,
            Ok(Some(body)) => decode::<WorkerFrame>(&body),
            Err(e) => {
                eprintln!("capt-hook-worker: {e}");
                break ExitCode::from(1);
            }
        };
        match frame {
            Ok(WorkerFrame::Event { id, request }) if id != 0 => {
                if running.fetch_add(1, Ordering::SeqCst) >= MAX_EVENT_THREADS {
                    running.fetch_sub(1, Ordering::SeqCst);
                    send(
                        &out,
                        &WorkerFrame::Error {
                            id,
                            error: format!("worker busy: {MAX_EVENT_THREADS} events running"),
                        },
                    );
                    continue;
                }
                let (w, o, r) = (warm.clone(), out.clone(), running.clone());
                let bg = background.clone();
                let spawned = threads.run(Box::new(move || {
                    serve_event(&w, &o, &bg, id, request);
                    r.fetch_sub(1, Ordering::SeqCst);
                }));
                if let Err(e) = spawned {
                    running.fetch_sub(1, Ordering::SeqCst);
                    send(
                        &out,
                        &WorkerFrame::Error {
                            id,
                            error: format!("no thread: {e}"),
                        },
                    );
                }
            }
            other => {
                // The host only sends events; anything else means the channel is corrupt.
                eprintln!("capt-hook-worker: protocol violation: {other:?}");
                break ExitCode::from(1);
            }
        }
    };
    // The host is gone (or broken): give running events a moment, then exit with them
    // abandoned rather than linger as an orphan.
    let until = Instant::now() + DRAIN;
    while running.load(Ordering::SeqCst) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    capt_hook_journal::flush(DRAIN);
    code
}

fn serve_event(warm: &Warm, out: &Out, background: &Background, id: u64, request: EventRequest) {
    if let Err(e) = request.validate() {
        let error = e.to_string();
        return send(out, &WorkerFrame::Error { id, error });
    }
    // Claimed before the deadline is looked at: the client releases the claim of an event it
    // evaluated locally only once this deadline has passed, so an event this worker starts
    // late is either still claimed by that evaluation or refused here as too late.
    let claimed = match claim(
        &request,
        &format!("the host's worker (pid {})", std::process::id()),
    ) {
        Claim::Ours => true,
        Claim::Unclaimed => false,
        Claim::Theirs(owner) => {
            let error = format!("not run: {owner} already ran this event");
            return send(out, &WorkerFrame::Error { id, error });
        }
    };
    let deadline = match deadline_of(&request) {
        Ok(d) => d,
        Err(e) => {
            if claimed && let Some(rid) = &request.request_id {
                capt_hook_proto::claim::release(rid);
            }
            let error = e.to_string();
            return send(out, &WorkerFrame::Error { id, error });
        }
    };
    let (project, stale_build) = warm.project();
    let (mut response, entry) = respond_traced(&project, &request, deadline);
    response.stale_build = stale_build;
    // Queued before the reply (a non-blocking channel send; the journal's own thread writes
    // it): the host may retire this worker the moment the reply arrives, and the SIGTERM
    // flush only writes what is already queued.
    capt_hook_journal::submit(entry);
    send(out, &WorkerFrame::Result { id, response });
    if has_async_hooks(&project) {
        background.submit(project, request);
    }
}

/// One event's evaluation, run on an event thread.
type Job = Box<dyn FnOnce() + Send>;

/// The threads events run on: each event gets a thread of its own at once (a spare one when
/// there is one, else a new one), so no event waits behind another; the caller bounds how many
/// run together.
#[derive(Clone, Default)]
struct EventThreads {
    /// Spare threads, each waiting on its own channel for the next event.
    spare: Arc<Mutex<Vec<Sender<Job>>>>,
}

impl EventThreads {
    fn new() -> EventThreads {
        EventThreads::default()
    }

    /// Runs `job` on a spare thread, else on a new one; `Err` when no thread could be started
    /// (the job is dropped unrun).
    fn run(&self, job: Job) -> std::io::Result<()> {
        let mut job = job;
        while let Some(spare) = self.lock().pop() {
            match spare.send(job) {
                Ok(()) => return Ok(()),
                // That thread is gone; try the next spare one.
                Err(crossbeam_channel::SendError(back)) => job = back,
            }
        }
        self.start(Some(job))
    }

    /// Starts a thread that waits as a spare for its first job.
    fn spare(&self) -> std::io::Result<()> {
        self.start(None)
    }

    fn start(&self, job: Option<Job>) -> std::io::Result<()> {
        let threads = self.clone();
        std::thread::Builder::new()
            .name("capt-hook-event".into())
            .spawn(move || threads.serve(job))
            .map(drop)
    }

    /// An event thread's life: its first job (if it was started with one), then as a spare
    /// until there are enough spares.
    fn serve(&self, first: Option<Job>) {
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        let mut next = first;
        loop {
            if let Some(job) = next.take() {
                job();
            }
            {
                let mut spare = self.lock();
                if spare.len() >= SPARE_EVENT_THREADS {
                    return;
                }
                spare.push(tx.clone());
            }
            match rx.recv() {
                Ok(job) => next = Some(job),
                Err(_) => return,
            }
        }
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, Vec<Sender<Job>>> {
        self.spare.lock()
    }
}

/// One event's async hooks, waiting for the lane.
type AsyncRun = (Arc<Project>, EventRequest);

/// The lane that runs async hooks after replies: a fixed set of threads fed by a bounded queue,
/// started by the first run queued (most projects have no async hooks, and a worker's start
/// is on its first event's path).
#[derive(Clone)]
struct Background {
    queue: Sender<AsyncRun>,
    /// The queue's far end, which every lane thread takes from once the first run is queued.
    rx: Receiver<AsyncRun>,
    started: Arc<std::sync::Once>,
}

impl Background {
    fn start() -> Background {
        let (queue, rx) = crossbeam_channel::bounded::<AsyncRun>(BACKGROUND_QUEUE);
        Background {
            queue,
            rx,
            started: Arc::new(std::sync::Once::new()),
        }
    }

    fn spawn_threads(&self) {
        for i in 0..BACKGROUND_THREADS {
            let rx = self.rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("capt-hook-async-{i}"))
                .spawn(move || {
                    for (project, request) in rx {
                        run_async_hooks(&project, &request, Instant::now() + ASYNC_TIMEOUT);
                    }
                });
            if let Err(e) = spawned {
                eprintln!("capt-hook-worker: cannot start an async-hook thread: {e}");
            }
        }
    }

    /// Queues one event's async hooks; drops them (logged) when the lane is saturated.
    fn submit(&self, project: Arc<Project>, request: EventRequest) {
        self.started.call_once(|| self.spawn_threads());
        match self.queue.try_send((project, request)) {
            Ok(()) => {}
            Err(TrySendError::Full((_, r))) => eprintln!(
                "capt-hook-worker: {BACKGROUND_QUEUE} async runs already queued; dropped the \
                 async hooks of a {} event",
                r.event
            ),
            Err(TrySendError::Disconnected(_)) => {
                eprintln!("capt-hook-worker: no async-hook thread is running");
            }
        }
    }
}

fn send(out: &Out, frame: &WorkerFrame) {
    let body = encode(frame);
    let mut f = out.lock();
    if let Err(e) = write_frame(&mut *f, &body) {
        // The host closed our stdout: it is gone or retiring us; exit follows at stdin EOF.
        eprintln!("capt-hook-worker: writing a frame: {e}");
    }
}

/// Moves the protocol to a private copy of fd 1 and points fd 1 at stderr, so a hook library
/// that prints can never corrupt the frame stream.
fn protocol_out() -> std::io::Result<File> {
    let proto = rustix::io::dup(std::io::stdout().as_fd())?;
    rustix::stdio::dup2_stdout(std::io::stderr().as_fd())?;
    let mut f = File::from(proto);
    f.flush()?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use capt_hook_core::EventKind;
    use capt_hook_engine::{Registry, on};
    use parking_lot::Condvar;

    /// Both tests count the process's threads, so they must not overlap.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// The engine's and the worker's own threads (named `capt-hook-…`): other tests of this
    /// process start threads of their own at any time, so the process total would be noise.
    /// This process's threads whose name starts with `prefix`.
    fn threads_named(prefix: &str) -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(Result::ok)
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|name| name.starts_with(prefix))
            })
            .count()
    }

    fn threads() -> usize {
        threads_named("capt-hook-")
    }

    fn request(root: &std::path::Path) -> EventRequest {
        let payload = serde_json::json!({
            "session_id": "t", "cwd": root, "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": {},
        });
        EventRequest {
            schema: 1,
            event: "PostToolUse".into(),
            root: root.display().to_string(),
            cwd: root.display().to_string(),
            env: Default::default(),
            payload_raw: payload.to_string(),
            client_pid: 2,
            client_ppid: 1,
            deadline_unix_ms: 0,
            notice_epoch: None,
            notices: Vec::new(),
            classic: false,
            agent: None,
            request_id: None,
        }
    }

    /// Events run at once each on a thread of their own (none waits behind another, so a
    /// slow event cannot delay a fast one), and sequential events reuse spare threads.
    #[test]
    fn event_threads_run_every_event_at_once_and_are_reused() {
        // It starts threads named like the engine's, which the other tests here count.
        let _serial = SERIAL.lock();
        let threads = EventThreads::new();
        let n = SPARE_EVENT_THREADS * 3;
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let ids = Arc::new(Mutex::new(std::collections::HashSet::new()));
        for _ in 0..n {
            let (gate, ids) = (Arc::clone(&gate), Arc::clone(&ids));
            threads
                .run(Box::new(move || {
                    ids.lock().insert(std::thread::current().id());
                    // Held until every job is running (bounded, so a failure cannot hang).
                    let (lock, cv) = &*gate;
                    let mut open = lock.lock();
                    cv.wait_while_for(&mut open, |open| !*open, Duration::from_secs(20));
                }))
                .unwrap();
        }
        let until = Instant::now() + Duration::from_secs(10);
        while ids.lock().len() < n && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let running = ids.lock().len();
        let (lock, cv) = &*gate;
        *lock.lock() = true;
        cv.notify_all();
        assert_eq!(running, n, "events waited behind other events");
        // Finished threads keep at most the spare count.
        let until = Instant::now() + Duration::from_secs(10);
        while threads.lock().len() < SPARE_EVENT_THREADS && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(threads.lock().len(), SPARE_EVENT_THREADS);
        // One at a time, events run on the spare threads: no new thread starts.
        let seen = ids.lock().clone();
        let (tx, rx) = crossbeam_channel::unbounded();
        for _ in 0..50 {
            let tx = tx.clone();
            threads
                .run(Box::new(move || {
                    tx.send(std::thread::current().id()).unwrap()
                }))
                .unwrap();
            let id = rx.recv_timeout(Duration::from_secs(10)).unwrap();
            assert!(seen.contains(&id), "a new thread ran a sequential event");
        }
    }

    /// A spare started before any event takes the first one: no thread starts for it.
    #[test]
    fn a_spare_thread_takes_the_first_event() {
        let _serial = SERIAL.lock();
        let pool = EventThreads::new();
        // Event threads only: tests beside this one start engine threads of their own.
        let events = || threads_named("capt-hook-event");
        let before = events();
        pool.spare().unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        while pool.lock().is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(pool.lock().len(), 1, "the spare did not register");
        let (tx, rx) = crossbeam_channel::unbounded();
        pool.run(Box::new(move || {
            tx.send(std::thread::current().id()).unwrap()
        }))
        .unwrap();
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(events(), before + 1, "a thread started for the event");
    }

    /// Async handlers that never return until released hold at most the background lane and
    /// the engine's handler pool; the rest queue (boundedly) or are dropped.
    #[test]
    fn stuck_async_handlers_do_not_grow_threads() {
        let _serial = SERIAL.lock();
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let started = Arc::new(AtomicUsize::new(0));
        let mut reg = Registry::new();
        let (g, s) = (Arc::clone(&gate), Arc::clone(&started));
        reg.add(
            "t",
            on(&[EventKind::PostToolUse], move |_| {
                s.fetch_add(1, Ordering::SeqCst);
                let (lock, cv) = &*g;
                let mut open = lock.lock();
                // Bounded so a failing test cannot hang the suite.
                cv.wait_while_for(&mut open, |open| !*open, Duration::from_secs(20));
                Ok(None)
            })
            .name("stuck")
            .run_async(true),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let project = Arc::new(Project::from_registry(dir.path(), reg));
        assert!(has_async_hooks(&project));
        let before = threads();
        let lane = Background::start();
        assert_eq!(threads(), before, "the lane started threads before any run");
        for _ in 0..500 {
            lane.submit(Arc::clone(&project), request(dir.path()));
        }
        std::thread::sleep(Duration::from_millis(300));
        let during = threads();
        // The lane's threads plus the engine's handler pool (16), however many runs were asked.
        assert!(
            during <= before + BACKGROUND_THREADS + 16,
            "{before} threads before, {during} with stuck async handlers"
        );
        assert!(started.load(Ordering::SeqCst) <= BACKGROUND_THREADS);
        let (lock, cv) = &*gate;
        *lock.lock() = true;
        cv.notify_all();
    }

    /// Sync handlers stuck past the deadline: the event still returns at its deadline, the
    /// engine's pool does not grow, and jobs that queued behind the stuck ones are skipped once
    /// their deadline has passed instead of running late.
    #[test]
    fn stuck_handlers_are_abandoned_and_their_queue_is_skipped() {
        let _serial = SERIAL.lock();
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let started = Arc::new(AtomicUsize::new(0));
        let mut reg = Registry::new();
        for i in 0..40 {
            let (g, s) = (Arc::clone(&gate), Arc::clone(&started));
            reg.add(
                "t",
                on(&[EventKind::PostToolUse], move |_| {
                    s.fetch_add(1, Ordering::SeqCst);
                    let (lock, cv) = &*g;
                    let mut open = lock.lock();
                    cv.wait_while_for(&mut open, |open| !*open, Duration::from_secs(20));
                    Ok(None)
                })
                .name(format!("stuck {i}")),
            )
            .unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let project = Project::from_registry(dir.path(), reg);
        let before = threads();
        let req = request(dir.path());
        let t = Instant::now();
        let response =
            crate::worker::warm::respond(&project, &req, Some(t + Duration::from_millis(200)));
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!(response.exit, 0);
        let ran = started.load(Ordering::SeqCst);
        assert!(ran <= 16, "{ran} handlers ran at once");
        assert!(threads() <= before + 16, "the handler pool grew");
        let (lock, cv) = &*gate;
        *lock.lock() = true;
        cv.notify_all();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            started.load(Ordering::SeqCst),
            ran,
            "handlers that queued past their deadline must not run late"
        );
    }
}

//! `capt-hookd serve`: the listener, one task per connection, and the ordered shutdown.
//!
//! Shape (after mini-redis): every connection task holds a clone of `drained_tx`, so shutdown
//! can wait for the last one by waiting for the channel to close. Abuse is bounded: a connection
//! cap that sheds the oldest connections still waiting for their request (see [`crate::conns`]),
//! a stall timeout on every read, and a memory budget for request frames in flight (see
//! [`crate::framing`]). The accept loop never waits for a free slot, so it always sees shutdown.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use capt_hook_proto::{
    BUILD, EventRequest, HostReply, HostRequest, HostStatus, MAX_FRAME, Op, PROTOCOL, Refusal,
    Status, decode, encode, paths,
};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, watch};

use crate::conns::{Conn, Conns};
use crate::framing::{Budget, Held, RequestError, read_request, write_frame};
use crate::pool::Pool;
use crate::records::Records;

mod http;

/// Connections open at once (fewer when the descriptor limit is low). A client arriving at the
/// cap sheds the oldest connection still waiting for its request.
const MAX_CONNECTIONS: usize = 1024;
/// Descriptors kept back from connections for the log, the listener and worker pipes.
const FD_HEADROOM: u64 = 256;
/// Time a client has to send its whole request after connecting.
const REQUEST_READ: Duration = Duration::from_secs(10);
/// Longest wait for the next byte of a request (the first one included): a connection that
/// sends nothing, or stops part-way through a header or frame, is closed after this.
const STALL: Duration = Duration::from_secs(5);
/// Time a client has to take its reply.
const REPLY_WRITE: Duration = Duration::from_secs(5);
/// Memory for client request frames in flight across connections: one maximal frame fits,
/// and [`FRAME_RESERVE`] of it is kept for small frames, so clients holding partial large
/// frames can neither grow the host without bound nor starve ordinary events.
const FRAME_BUDGET: usize = MAX_FRAME + FRAME_RESERVE;
/// The part of [`FRAME_BUDGET`] only small frames ([`crate::framing::SMALL_FRAME`]) may use.
const FRAME_RESERVE: usize = 32 * 1024 * 1024;
/// Pause after the process ran out of descriptors, so accept does not spin.
const FD_PAUSE: Duration = Duration::from_millis(20);
/// Time in-flight events get to finish once shutdown starts.
const DRAIN: Duration = Duration::from_secs(30);
/// Deadline for an event whose client sent none.
const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);
/// Longest deadline the host honours, so a bogus client cannot pin a slot forever.
const MAX_DEADLINE: Duration = Duration::from_secs(600);
/// How long a new host waits for a shutting-down predecessor to let go of the socket.
const TAKEOVER: Duration = Duration::from_secs(35);

/// State shared by every connection.
struct Host {
    /// The workers.
    pool: Pool,
    /// For uptime.
    started: Instant,
    /// For status.
    started_unix_ms: u64,
    /// Set when shutdown begins: events are refused from then on.
    draining: AtomicBool,
    /// Asks the accept loop to stop (from the `shutdown` op).
    shutdown: watch::Sender<bool>,
    /// Our effective uid: only peers with the same uid are served.
    euid: u32,
    /// Events admitted and not yet answered, for status.
    in_flight: AtomicU64,
    /// Open connections, oldest first.
    conns: Arc<Conns>,
    /// Connections kept open at once.
    max_connections: usize,
    /// Memory for request frames in flight.
    budget: Arc<Budget>,
    /// Watches each session's processes for ResourcePressure; `None` when sampling is off.
    pressure: Option<Arc<crate::pressure::Monitor>>,
    /// The release check after session starts.
    update: Arc<crate::update::Updater>,
    /// Answers the mod left to the command hook, for its request to find.
    remembered: http::Remembered,
    /// The directory this host's executable was installed in: control operations are served
    /// only to the `capt-hookd` or `capt-hook` installed there ([`control_peer`]).
    install_dir: Option<PathBuf>,
}

/// Runs the host in the foreground until shutdown. Prints `ready` on stdout once the socket
/// accepts connections (the client that started us waits for that line), then points stdout at
/// /dev/null.
///
/// `prestart` is the project root of the event that made a client start us: its worker starts
/// at once, while that client is still waiting for `ready` and connecting, instead of after
/// its event arrives. The worker's key comes from our own environment, which is the client's.
pub fn serve(prestart: Option<&str>) -> anyhow::Result<()> {
    // Leave the starting client's session, so its terminal's signals do not reach us. When run
    // by hand from a shell we lead a process group already and this fails harmlessly.
    let _ = rustix::process::setsid();

    let state_dir = paths::state_dir();
    let sock_dir = paths::socket_dir();
    paths::ensure_private_dir(&state_dir)
        .with_context(|| format!("state dir {}", state_dir.display()))?;
    paths::ensure_private_dir(&sock_dir)
        .with_context(|| format!("socket dir {}", sock_dir.display()))?;
    let (log, log_path, trouble) = open_log(&state_dir)?;
    let log = crate::logfile::HostLog::new(log, log_path.clone(), paths::log_max_bytes());
    crate::init_logging(&log);
    for line in trouble {
        tracing::warn!(log = %log_path.display(), "{line}");
    }
    if let Err(e) = log.rotate_if_large() {
        tracing::warn!(error = %e, "cannot rotate the log");
    }
    let max_connections = raise_fd_limit();

    let lock = crate::files::open_own(
        &sock_dir.join(paths::LIFETIME_LOCK),
        File::options().create(true).truncate(false).write(true),
    )
    .context("opening the host lock")?;
    if !take_lifetime_lock(&lock)? {
        // Another host is live and answering: nothing to do, and the client may proceed.
        println!("ready (already running)");
        return Ok(());
    }

    Records::new(state_dir.join(paths::WORKER_RECORDS)).reap_leftovers();
    let socket = sock_dir.join(paths::SOCKET_NAME);
    // We hold the lifetime lock, so any socket file here belongs to a dead host.
    match std::fs::remove_file(&socket) {
        Ok(()) => tracing::info!("removed a stale socket"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).context("removing a stale socket"),
    }
    let std_listener = bind_private(&socket)?;
    // The mod's socket, beside it, bound the same way.
    let http_socket = paths::http_socket_path();
    // As above: under the lifetime lock any socket file here is a dead host's (none is fine).
    let _ = std::fs::remove_file(&http_socket);
    // Without it the mod's events go to the command hooks: never a reason not to serve.
    let std_http = match bind_private(&http_socket) {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::warn!(socket = %http_socket.display(), error = %e, "no HTTP socket for the mod");
            None
        }
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = UnixListener::from_std(std_listener)?;
        let http = std_http.map(UnixListener::from_std).transpose()?;
        tokio::spawn(crate::logfile::keep_rotated(std::sync::Arc::clone(&log)));
        let records = Records::new(state_dir.join(paths::WORKER_RECORDS));
        let pool = Pool::new(
            crate::env::worker_exe(),
            log,
            crate::env::idle(),
            crate::env::max_workers(),
            records,
        );
        let update = Arc::new(crate::update::Updater::new(&state_dir));
        let prestart = prestart.map(|root| {
            (
                root.to_owned(),
                capt_hook_proto::request_env(std::env::vars()),
            )
        });
        let sockets = Sockets {
            framed: listener,
            http,
            paths: [socket, http_socket],
        };
        run(sockets, pool, max_connections, update, prestart).await
    })?;
    drop(lock);
    tracing::info!("host stopped");
    Ok(())
}

/// Takes the lifetime lock. `Ok(false)` when a live host holds it and answers; when the holder
/// does not answer it is shutting down, so wait for it to let go.
fn take_lifetime_lock(lock: &File) -> anyhow::Result<bool> {
    let until = Instant::now() + TAKEOVER;
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(true),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e).context("locking the host lock"),
        }
        if crate::ctl::request(Op::Version, Duration::from_secs(2)).is_ok() {
            return Ok(false);
        }
        if Instant::now() >= until {
            bail!("another host holds the lock and does not answer");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Opens the host log in the host state directory, else nowhere. The host serves every session
/// of the user, so its log has one fixed place: never `CAPTAIN_HOOK_LOG_DIR`, which is a
/// session's setting (its workers' logs follow it) and would put the log wherever the first
/// client pointed. A log problem never keeps the host from serving: it is written, as
/// `trouble`, into the log if it opened.
fn open_log(state_dir: &Path) -> anyhow::Result<(File, PathBuf, Vec<String>)> {
    let mut trouble = Vec::new();
    let path = state_dir.join(paths::LOG_NAME);
    let opened = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state_dir)
        .and_then(|()| crate::files::open_append(&path));
    match opened {
        Ok((file, moved)) => {
            if let Some(moved) = moved {
                trouble.push(format!(
                    "the log was not a regular file of ours (a symlink?); moved it aside \
                     unfollowed to {}",
                    moved.display()
                ));
            }
            return Ok((file, path, trouble));
        }
        Err(e) => trouble.push(format!("cannot log to {}: {e}", path.display())),
    }
    let null = File::options()
        .write(true)
        .open("/dev/null")
        .with_context(|| trouble.join("; "))?;
    Ok((null, "/dev/null".into(), trouble))
}

/// Raises the soft descriptor limit to the hard one and returns the connection cap it allows.
fn raise_fd_limit() -> usize {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current < lim.maximum {
        lim.current = lim.maximum;
        if let Err(e) = setrlimit(Resource::Nofile, lim) {
            tracing::warn!(error = %e, "cannot raise the descriptor limit");
        }
    }
    let soft = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    let room = soft.saturating_sub(FD_HEADROOM).max(16);
    MAX_CONNECTIONS.min(usize::try_from(room).unwrap_or(usize::MAX))
}

/// Tells whoever started us that the socket is live, then detaches stdout from their pipe.
fn signal_ready() -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    let null = File::options().write(true).open("/dev/null")?;
    rustix::stdio::dup2_stdout(null.as_fd())?;
    Ok(())
}

/// The host's two listeners: the framed one (the `hook` client, control commands) and the
/// mod's HTTP one; `paths` are removed at shutdown.
struct Sockets {
    framed: UnixListener,
    http: Option<UnixListener>,
    paths: [PathBuf; 2],
}

/// Binds a Unix socket only its owner may connect to, ready for tokio.
fn bind_private(path: &Path) -> anyhow::Result<std::os::unix::net::UnixListener> {
    let listener = std::os::unix::net::UnixListener::bind(path)
        .with_context(|| format!("binding {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

async fn run(
    sockets: Sockets,
    pool: Pool,
    max_connections: usize,
    update: Arc<crate::update::Updater>,
    prestart: Option<(String, std::collections::BTreeMap<String, String>)>,
) -> anyhow::Result<()> {
    let (shutdown, mut shutdown_rx) = watch::channel(false);
    let (fire, fired) = mpsc::unbounded_channel();
    let pressure = crate::pressure::Settings::from_env()
        .map(|settings| crate::pressure::Monitor::start(settings, fire));
    let host = Arc::new(Host {
        pool,
        started: Instant::now(),
        started_unix_ms: crate::now_unix_ms(),
        draining: AtomicBool::new(false),
        shutdown,
        euid: rustix::process::geteuid().as_raw(),
        in_flight: AtomicU64::new(0),
        conns: Arc::new(Conns::default()),
        max_connections,
        budget: Budget::new(FRAME_BUDGET, FRAME_RESERVE),
        pressure,
        update,
        remembered: http::Remembered::default(),
        // Read once, at start: once an upgrade renames a new binary over ours, our own
        // executable's link reads "… (deleted)", but the directory is still where the
        // installed control binaries are.
        install_dir: std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf)),
    });
    let Sockets {
        framed: listener,
        http: http_listener,
        paths: socket_paths,
    } = sockets;
    tokio::spawn(send_pressure_events(Arc::clone(&host), fired));
    if let Some((root, env)) = prestart {
        let host = Arc::clone(&host);
        tokio::spawn(async move { host.pool.prestart(&root, &env).await });
        // Lets the prestart run up to its worker's fork before we say ready: the worker's own
        // start is the longest step of a cold start, and the client connecting meanwhile
        // waits for that worker anyway.
        tokio::task::yield_now().await;
    }
    signal_ready()?;
    tracing::info!(
        pid = std::process::id(),
        build = BUILD,
        socket = %socket_paths[0].display(),
        http_socket = %socket_paths[1].display(),
        max_connections,
        max_workers = host.pool.max_workers,
        "host ready"
    );
    let (drained_tx, mut drained_rx) = mpsc::channel::<()>(1);
    let mut sweep = tokio::time::interval(
        (host.pool.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(60)),
    );
    let (mut term, mut int) = match (
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()),
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()),
    ) {
        (Ok(t), Ok(i)) => (t, i),
        _ => {
            tracing::error!("cannot install signal handlers");
            return Ok(());
        }
    };

    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => admit(stream, &host, &drained_tx),
                Err(e) if out_of_descriptors(&e) => {
                    // Make room the way a new client at the cap would, then let the
                    // shed connection close before accepting again.
                    let shed = host.conns.shed_one();
                    tracing::warn!(error = %e, shed, "out of descriptors");
                    tokio::time::sleep(FD_PAUSE).await;
                }
                Err(e) => tracing::warn!(error = %e, "accept failed"),
            },
            accepted = accept_http(http_listener.as_ref()) => match accepted {
                Ok((stream, _)) => http::admit(stream, &host, &drained_tx),
                Err(e) if out_of_descriptors(&e) => {
                    let shed = host.conns.shed_one();
                    tracing::warn!(error = %e, shed, "out of descriptors");
                    tokio::time::sleep(FD_PAUSE).await;
                }
                Err(e) => tracing::warn!(error = %e, "accept failed (http)"),
            },
            _ = shutdown_rx.wait_for(|s| *s) => break,
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = sweep.tick() => {
                let host = Arc::clone(&host);
                tokio::spawn(async move { host.pool.sweep().await });
            }
        }
    }

    // Ordered shutdown: stop admitting, drop connections still waiting for their request, let
    // admitted events finish, stop the workers.
    tracing::info!("shutting down: draining");
    host.draining.store(true, Ordering::SeqCst);
    drop(listener);
    drop(http_listener);
    for socket in &socket_paths {
        let _ = std::fs::remove_file(socket);
    }
    host.conns.shed_waiting();
    drop(drained_tx);
    if tokio::time::timeout(DRAIN, drained_rx.recv())
        .await
        .is_err()
    {
        tracing::warn!("events still running after the drain period");
    }
    host.pool.retire_all().await;
    host.pool.save_records_now();
    Ok(())
}

/// The next connection to the HTTP socket; never, when there is none.
async fn accept_http(
    listener: Option<&UnixListener>,
) -> std::io::Result<(UnixStream, tokio::net::unix::SocketAddr)> {
    match listener {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Sends each ResourcePressure event the sampler raises to its session's worker. Nobody waits
/// for the answer: what the hooks say waits in the worker for the session's next tool event.
async fn send_pressure_events(host: Arc<Host>, mut fired: mpsc::UnboundedReceiver<EventRequest>) {
    while let Some(req) = fired.recv().await {
        if host.draining.load(Ordering::SeqCst) {
            return;
        }
        let host = Arc::clone(&host);
        tokio::spawn(async move {
            match host
                .pool
                .dispatch(req, Instant::now() + DEFAULT_DEADLINE)
                .await
            {
                HostReply::Event(r) => {
                    tracing::info!(exit = r.exit, said = %r.stdout.trim(), "ResourcePressure evaluated");
                }
                other => tracing::warn!(?other, "ResourcePressure could not be evaluated"),
            }
        });
    }
}

fn out_of_descriptors(e: &std::io::Error) -> bool {
    let raw = e.raw_os_error();
    raw == Some(rustix::io::Errno::MFILE.raw_os_error())
        || raw == Some(rustix::io::Errno::NFILE.raw_os_error())
}

/// Registers a new connection and starts its task; when even the control lane is full, the
/// client is told the host is busy.
fn admit(stream: UnixStream, host: &Arc<Host>, drained: &mpsc::Sender<()>) {
    let Some(registered) = host.conns.admit(host.max_connections) else {
        tokio::spawn(async move {
            let mut stream = stream;
            let busy = refuse(
                Refusal::Busy,
                "every connection slot is serving an event; try again",
            );
            let _ =
                tokio::time::timeout(REPLY_WRITE, write_frame(&mut stream, &encode(&busy))).await;
        });
        return;
    };
    let (host, done) = (Arc::clone(host), drained.clone());
    tokio::spawn(async move {
        let conn = Arc::clone(&registered.conn);
        handle(stream, &host, &conn).await;
        drop((registered, done));
    });
}

/// How a connection's wait for its request ended.
enum Arrival {
    /// A request, with the budget bytes its frame holds until the reply is written.
    Request(HostRequest, Held),
    /// Something to answer instead (a refusal).
    Reply(HostReply),
    /// A refusal not worth a log line each: a client that sent nothing or stalled (abusers
    /// arrive by the thousand).
    Quiet(HostReply),
    /// Shed to make room for another client.
    Shed,
}

/// Serves one connection: one request, one reply.
async fn handle(mut stream: UnixStream, host: &Host, conn: &Conn) {
    let arrival = tokio::select! {
        biased;
        () = conn.shed() => Arrival::Shed,
        read = tokio::time::timeout(REQUEST_READ, read_request_from(&mut stream, host, conn)) => {
            match read {
                Ok(Ok((req, held))) => Arrival::Request(req, held),
                Ok(Err(arrival)) => arrival,
                Err(_) => Arrival::Quiet(refuse(
                    Refusal::BadRequest,
                    "no complete request within the read timeout",
                )),
            }
        }
    };
    let (reply, _held) = match arrival {
        Arrival::Shed => {
            // Best effort and never waiting: a client that is really there learns why.
            let busy = refuse(Refusal::Busy, "shed: the host is at its connection cap");
            let mut frame = Vec::new();
            let _ = capt_hook_proto::push_frame(&mut frame, &encode(&busy));
            let _ = stream.try_write(&frame);
            tracing::debug!("shed a connection that was waiting for its request");
            return;
        }
        Arrival::Quiet(reply) => {
            tracing::debug!(?reply, "dropped a silent or stalled connection");
            let _ =
                tokio::time::timeout(REPLY_WRITE, write_frame(&mut stream, &encode(&reply))).await;
            return;
        }
        // Shed between the last byte and here: the request was never served.
        Arrival::Request(..) if !conn.serving() => return,
        Arrival::Request(req, _) if conn.overflow && matches!(req.op, Op::Event(_)) => (
            refuse(
                Refusal::Busy,
                "every connection slot is serving an event; try again",
            ),
            None,
        ),
        Arrival::Request(req, held) => (answer(req, host).await, Some(held)),
        Arrival::Reply(reply) => (reply, None),
    };
    if let HostReply::Refused { code, reason } = &reply {
        tracing::info!(?code, reason, "refused a request");
    }
    match tokio::time::timeout(REPLY_WRITE, write_frame(&mut stream, &encode(&reply))).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "client left before its reply"),
        Err(_) => tracing::debug!("client did not take its reply"),
    }
}

/// Reads and authenticates the request: same uid as the host, and the pid it claims is the
/// kernel's pid for the peer.
async fn read_request_from(
    stream: &mut UnixStream,
    host: &Host,
    conn: &Conn,
) -> Result<(HostRequest, Held), Arrival> {
    let loud = |code, reason: &str| Arrival::Reply(refuse(code, reason));
    let cred = stream
        .peer_cred()
        .map_err(|e| loud(Refusal::Untrusted, &format!("no peer credentials: {e}")))?;
    if cred.uid() != host.euid {
        return Err(loud(
            Refusal::Untrusted,
            &format!("peer uid {} is not the host's", cred.uid()),
        ));
    }
    let mut held = Held::new(Arc::clone(&host.budget));
    let body = match read_request(stream, MAX_FRAME, &mut held, STALL, || conn.reading()).await {
        Ok(Some(b)) => b,
        Ok(None) => return Err(Arrival::Quiet(refuse(Refusal::BadRequest, "no request"))),
        Err(e @ RequestError::OverBudget { .. }) => {
            return Err(loud(Refusal::Busy, &e.to_string()));
        }
        Err(e @ RequestError::Stalled(_)) => {
            return Err(Arrival::Quiet(refuse(Refusal::BadRequest, &e.to_string())));
        }
        Err(e) => return Err(loud(Refusal::BadRequest, &e.to_string())),
    };
    let req: HostRequest = decode(&body).map_err(|e| loud(Refusal::BadRequest, &e.to_string()))?;
    drop(body);
    if req.protocol != PROTOCOL {
        return Err(loud(
            Refusal::ProtocolMismatch,
            &format!("client speaks protocol {}, host {PROTOCOL}", req.protocol),
        ));
    }
    let peer_pid = cred.pid().and_then(|p| u32::try_from(p).ok());
    if peer_pid.is_some_and(|p| p != req.client_pid) {
        return Err(loud(
            Refusal::Untrusted,
            "claimed client pid does not match the socket peer",
        ));
    }
    if matches!(req.op, Op::Shutdown | Op::RestartWorkers) {
        control_peer(peer_pid, host.install_dir.as_deref())
            .map_err(|why| loud(Refusal::Untrusted, &why))?;
    }
    Ok((req, held))
}

/// The programs that may stop the host or its workers: the control binaries installed beside
/// it.
pub const CONTROL_BINARIES: [&str; 2] = ["capt-hookd", "capt-hook"];

/// Checks that the peer asking for a control operation (shutdown, restart-workers; shutdown
/// drains) runs one of [`CONTROL_BINARIES`] installed in `install_dir`, the host's own
/// directory: its executable as the kernel names it (`/proc/<pid>/exe`), against those files
/// resolved through links. The uid was checked already. This keeps a program an agent wrote,
/// or a copy of the binary elsewhere, from stopping the host through the socket; the installed
/// binary run from an agent's tool call is the builtin `host` pack's to deny. Linux only:
/// elsewhere there is no `/proc/<pid>/exe` and this passes.
#[cfg(target_os = "linux")]
fn control_peer(peer_pid: Option<u32>, install_dir: Option<&Path>) -> Result<(), String> {
    let refuse = |why: String| {
        format!(
            "control operations (shutdown, restart-workers) are served only to the installed \
             capt-hookd or capt-hook beside the host; {why}. Run `capt-hookd shutdown` (or \
             `restart-workers`) from {} in your own terminal",
            install_dir.map_or_else(|| "the install".to_owned(), |d| d.display().to_string())
        )
    };
    let pid = peer_pid.ok_or_else(|| refuse("the peer's pid is unknown".to_owned()))?;
    let dir =
        install_dir.ok_or_else(|| refuse("the host's own directory is unknown".to_owned()))?;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .map_err(|e| refuse(format!("/proc/{pid}/exe cannot be read ({e})")))?;
    let allowed = CONTROL_BINARIES
        .iter()
        .filter_map(|name| std::fs::canonicalize(dir.join(name)).ok())
        .any(|installed| installed == exe);
    if allowed {
        Ok(())
    } else {
        Err(refuse(format!("pid {pid} runs {}", exe.display())))
    }
}

#[cfg(not(target_os = "linux"))]
fn control_peer(_: Option<u32>, _: Option<&Path>) -> Result<(), String> {
    Ok(())
}

async fn answer(req: HostRequest, host: &Host) -> HostReply {
    match req.op {
        Op::Version => HostReply::Version {
            protocol: PROTOCOL,
            build: BUILD.into(),
            pid: std::process::id(),
        },
        Op::Status => HostReply::Status(HostStatus {
            schema: 1,
            pid: std::process::id(),
            build: BUILD.into(),
            uptime_ms: host.started.elapsed().as_millis() as u64,
            started_at_unix_ms: host.started_unix_ms,
            in_flight: host.in_flight.load(Ordering::SeqCst),
            workers: host.pool.status(),
            connections: host.conns.len() as u64,
            frame_bytes: host.budget.used() as u64,
        }),
        Op::RestartWorkers => {
            host.pool.retire_all().await;
            HostReply::Done
        }
        Op::Shutdown => {
            let _ = host.shutdown.send(true);
            HostReply::Done
        }
        Op::Event(event) => {
            if host.draining.load(Ordering::SeqCst) {
                return refuse(Refusal::Draining, "the host is shutting down");
            }
            if req.build != BUILD {
                return refuse(
                    Refusal::BuildMismatch,
                    &format!(
                        "client build {} is not host build {BUILD}; run `capt-hookd shutdown`",
                        req.build
                    ),
                );
            }
            if event.client_pid != req.client_pid {
                return refuse(
                    Refusal::Untrusted,
                    "event client pid does not match the request's",
                );
            }
            // The mod left this event's answer to the command hook: it is given, not run again.
            if event.agent.is_none()
                && let Some(resp) = host.remembered.take(&event)
            {
                tracing::debug!(event = %event.event, "answered from the mod's event");
                return HostReply::Event(resp);
            }
            dispatch_event(*event, host).await
        }
    }
}

/// Evaluates one event on its project's worker: the part the framed and the HTTP sockets share
/// once each has checked its peer.
async fn dispatch_event(event: EventRequest, host: &Host) -> HostReply {
    if host.draining.load(Ordering::SeqCst) {
        return refuse(Refusal::Draining, "the host is shutting down");
    }
    if let Err(e) = event.validate() {
        return refuse(Refusal::BadRequest, &e.to_string());
    }
    let now = crate::now_unix_ms();
    let remaining = match event.deadline_unix_ms {
        0 => DEFAULT_DEADLINE,
        d if d <= now => {
            return refuse(
                Refusal::DeadlinePassed,
                "the event's deadline passed before dispatch",
            );
        }
        d => Duration::from_millis(d - now).min(MAX_DEADLINE),
    };
    if let Some(monitor) = &host.pressure {
        monitor.observe(&event);
    }
    let mut event = event;
    // Notices are the host's own to add.
    event.notices.clear();
    let update = (event.event == "SessionStart").then(|| {
        crate::update::Settings::from_request(&event.env, |name| std::env::var(name).ok())
    });
    // A newer release (or a release that did not verify) rides on this session start's
    // answer, rendered by the worker with the hooks' own notices.
    let telling = match &update {
        Some(Some(_)) => host.update.take_untold(),
        _ => None,
    };
    if let Some(notice) = &telling {
        event.notices.push(notice.text());
    }
    host.in_flight.fetch_add(1, Ordering::SeqCst);
    let reply = host.pool.dispatch(event, Instant::now() + remaining).await;
    host.in_flight.fetch_sub(1, Ordering::SeqCst);
    if let Some(notice) = telling {
        // A SessionStart answer always carries notices (its output is JSON or nothing),
        // so an answer of the worker's own is one that told.
        let told = matches!(&reply, HostReply::Event(r) if r.status == Status::Ok && r.exit == 0);
        host.update.told(notice, told);
    }
    if let Some(settings) = update {
        // Detached: the reply does not wait for the check.
        host.update.after_session_start(settings);
    }
    reply
}

fn refuse(code: Refusal, reason: &str) -> HostReply {
    HostReply::Refused {
        code,
        reason: reason.to_owned(),
    }
}

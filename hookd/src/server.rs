//! `capt-hookd serve`: the listener, one task per connection, and the ordered shutdown.
//!
//! Shape (after mini-redis): a semaphore caps connections; every connection task holds a clone
//! of `drained_tx`, so shutdown can wait for the last one by waiting for the channel to close.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use capt_hook_proto::{
    BUILD, HostReply, HostRequest, HostStatus, MAX_FRAME, Op, PROTOCOL, Refusal, decode, encode,
    paths,
};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Semaphore, mpsc, watch};

use crate::framing::{read_frame, write_frame};
use crate::pool::Pool;
use crate::records::Records;

/// Connections served at once; further clients wait in the listen backlog.
const MAX_CONNECTIONS: usize = 1024;
/// Time a client has to send its request after connecting.
const REQUEST_READ: Duration = Duration::from_secs(10);
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
}

/// Runs the host in the foreground until shutdown. Prints `ready` on stdout once the socket
/// accepts connections (the client that started us waits for that line), then points stdout at
/// /dev/null.
pub fn serve() -> anyhow::Result<()> {
    // Leave the starting client's session, so its terminal's signals do not reach us. When run
    // by hand from a shell we lead a process group already and this fails harmlessly.
    let _ = rustix::process::setsid();

    let state_dir = paths::state_dir();
    let sock_dir = paths::socket_dir();
    paths::ensure_private_dir(&state_dir)
        .with_context(|| format!("state dir {}", state_dir.display()))?;
    paths::ensure_private_dir(&sock_dir)
        .with_context(|| format!("socket dir {}", sock_dir.display()))?;
    let log_dir = paths::log_dir();
    std::fs::create_dir_all(&log_dir).with_context(|| format!("log dir {}", log_dir.display()))?;
    let log = open_log(&log_dir.join(paths::LOG_NAME))?;
    crate::init_logging(&log);

    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(sock_dir.join(paths::LIFETIME_LOCK))
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
    let std_listener = std::os::unix::net::UnixListener::bind(&socket)
        .with_context(|| format!("binding {}", socket.display()))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
    std_listener.set_nonblocking(true)?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = UnixListener::from_std(std_listener)?;
        let records = Records::new(state_dir.join(paths::WORKER_RECORDS));
        let pool = Pool::new(crate::env::worker_exe(), log, crate::env::idle(), records);
        signal_ready()?;
        tracing::info!(pid = std::process::id(), build = BUILD, socket = %socket.display(), "host ready");
        run(listener, pool, &socket).await;
        anyhow::Ok(())
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

fn open_log(path: &Path) -> anyhow::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    File::options()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
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

async fn run(listener: UnixListener, pool: Pool, socket: &PathBuf) {
    let (shutdown, mut shutdown_rx) = watch::channel(false);
    let host = Arc::new(Host {
        pool,
        started: Instant::now(),
        started_unix_ms: crate::now_unix_ms(),
        draining: AtomicBool::new(false),
        shutdown,
        euid: rustix::process::geteuid().as_raw(),
        in_flight: AtomicU64::new(0),
    });
    let limit = Arc::new(Semaphore::new(MAX_CONNECTIONS));
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
            return;
        }
    };

    loop {
        let Ok(permit) = Arc::clone(&limit).acquire_owned().await else {
            break;
        };
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let (host, done) = (Arc::clone(&host), drained_tx.clone());
                    tokio::spawn(async move {
                        handle(stream, &host).await;
                        drop((permit, done));
                    });
                }
                Err(e) => tracing::warn!(error = %e, "accept failed"),
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

    // Ordered shutdown: stop admitting, let admitted events finish, stop the workers.
    tracing::info!("shutting down: draining");
    host.draining.store(true, Ordering::SeqCst);
    drop(listener);
    let _ = std::fs::remove_file(socket);
    drop(drained_tx);
    if tokio::time::timeout(DRAIN, drained_rx.recv())
        .await
        .is_err()
    {
        tracing::warn!("events still running after the drain period");
    }
    host.pool.retire_all().await;
}

/// Serves one connection: one request, one reply.
async fn handle(mut stream: UnixStream, host: &Host) {
    let reply = match tokio::time::timeout(REQUEST_READ, read_request(&mut stream, host)).await {
        Ok(Ok(req)) => answer(req, host).await,
        Ok(Err(reply)) => reply,
        Err(_) => refuse(Refusal::BadRequest, "no request within the read timeout"),
    };
    if let HostReply::Refused { code, reason } = &reply {
        tracing::info!(?code, reason, "refused a request");
    }
    if let Err(e) = write_frame(&mut stream, &encode(&reply)).await {
        tracing::debug!(error = %e, "client left before its reply");
    }
}

/// Reads and authenticates the request: same uid as the host, and the pid it claims is the
/// kernel's pid for the peer.
async fn read_request(stream: &mut UnixStream, host: &Host) -> Result<HostRequest, HostReply> {
    let cred = stream
        .peer_cred()
        .map_err(|e| refuse(Refusal::Untrusted, &format!("no peer credentials: {e}")))?;
    if cred.uid() != host.euid {
        return Err(refuse(
            Refusal::Untrusted,
            &format!("peer uid {} is not the host's", cred.uid()),
        ));
    }
    let body = match read_frame(stream, MAX_FRAME).await {
        Ok(Some(b)) => b,
        Ok(None) => return Err(refuse(Refusal::BadRequest, "no request")),
        Err(e) => return Err(refuse(Refusal::BadRequest, &e.to_string())),
    };
    let req: HostRequest =
        decode(&body).map_err(|e| refuse(Refusal::BadRequest, &e.to_string()))?;
    if req.protocol != PROTOCOL {
        return Err(refuse(
            Refusal::ProtocolMismatch,
            &format!("client speaks protocol {}, host {PROTOCOL}", req.protocol),
        ));
    }
    let peer_pid = cred.pid().and_then(|p| u32::try_from(p).ok());
    if peer_pid.is_some_and(|p| p != req.client_pid) {
        return Err(refuse(
            Refusal::Untrusted,
            "claimed client pid does not match the socket peer",
        ));
    }
    Ok(req)
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
            if let Err(e) = event.validate() {
                return refuse(Refusal::BadRequest, &e);
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
            host.in_flight.fetch_add(1, Ordering::SeqCst);
            let reply = host.pool.dispatch(event, Instant::now() + remaining).await;
            host.in_flight.fetch_sub(1, Ordering::SeqCst);
            reply
        }
    }
}

fn refuse(code: Refusal, reason: &str) -> HostReply {
    HostReply::Refused {
        code,
        reason: reason.to_owned(),
    }
}

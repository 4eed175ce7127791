//! Sending one event to the host, starting the host when nothing listens, and the local
//! one-shot evaluation used when the host cannot answer a mandatory event.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use capt_hook_proto::{
    EventRequest, EventResponse, HostReply, HostRequest, MAX_FRAME, Refusal, decode, encode, paths,
    read_frame, write_frame,
};

/// How a dispatch failed, in the order and spelling the skip note uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// No host could be started (binary missing, or it failed to start).
    HostUnavailable,
    /// The host or worker failed in flight, or answered something undecodable.
    TransportError,
    /// No answer before the deadline.
    TransportTimeout,
    /// The host refused the event until the deadline (draining, mismatched build, …).
    TransportRefused,
    /// The host answered without a verdict because the worker was too busy.
    Shed,
    /// A mandatory event was answered but its hooks did not all finish.
    NoVerdict,
    /// The worker answered with a failure exit.
    WorkerError,
}

impl Kind {
    /// The kebab-case name printed in notes.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::HostUnavailable => "host-unavailable",
            Kind::TransportError => "transport-error",
            Kind::TransportTimeout => "transport-timeout",
            Kind::TransportRefused => "transport-refused",
            Kind::Shed => "shed",
            Kind::NoVerdict => "no-verdict",
            Kind::WorkerError => "worker-error",
        }
    }
}

/// A failed dispatch.
#[derive(Debug)]
pub struct Failure {
    /// The class of failure.
    pub kind: Kind,
    /// What happened, for stderr.
    pub message: String,
}

fn fail(kind: Kind, message: impl Into<String>) -> Failure {
    Failure {
        kind,
        message: message.into(),
    }
}

/// Extra time allowed for the host's reply past the deadline: it answers by the deadline, and
/// a typed late reply is worth more than a bare timeout.
const REPLY_GRACE: Duration = Duration::from_millis(500);
/// Pause between attempts while the host refuses (e.g. it is draining).
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// One attempt's outcome before classification.
enum Attempt {
    /// Nothing listens on the socket.
    NotListening(io::Error),
    /// The host answered.
    Reply(HostReply),
    /// Connected, then the exchange failed.
    Broken(io::Error),
}

/// Sends `req` to the host within `timeout`, starting the host if nothing listens and resending
/// while it refuses before dispatch. Never resends an event the host accepted.
pub fn dispatch(req: &EventRequest, timeout: Duration) -> Result<EventResponse, Failure> {
    let deadline = Instant::now() + timeout;
    let mut req = req.clone();
    req.deadline_unix_ms = unix_ms_in(timeout);
    let body = encode(&HostRequest::event(std::process::id(), req));
    let mut started = false;
    loop {
        match attempt(&body, deadline) {
            Attempt::Reply(HostReply::Event(resp)) => return Ok(resp),
            Attempt::Reply(HostReply::Failed { message, timed_out }) => {
                let kind = if timed_out {
                    Kind::TransportTimeout
                } else {
                    Kind::TransportError
                };
                return Err(fail(kind, message));
            }
            Attempt::Reply(HostReply::Refused {
                code: Refusal::Draining,
                ..
            }) => {}
            Attempt::Reply(HostReply::Refused { reason, .. }) => {
                return Err(fail(
                    Kind::TransportRefused,
                    format!("host refused the event: {reason}"),
                ));
            }
            Attempt::Reply(other) => {
                return Err(fail(
                    Kind::TransportError,
                    format!("unexpected host reply {other:?}"),
                ));
            }
            Attempt::Broken(e)
                if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut =>
            {
                return Err(fail(
                    Kind::TransportTimeout,
                    "the host did not answer before the deadline",
                ));
            }
            Attempt::Broken(e) => {
                return Err(fail(
                    Kind::TransportError,
                    format!("host connection failed: {e}"),
                ));
            }
            Attempt::NotListening(e) => {
                if !started {
                    start_host(deadline)?;
                    started = true;
                    continue;
                }
                if Instant::now() >= deadline {
                    return Err(fail(
                        Kind::HostUnavailable,
                        format!("no host answered: {e}"),
                    ));
                }
            }
        }
        if Instant::now() + RETRY_PAUSE >= deadline {
            return Err(fail(
                Kind::TransportRefused,
                "the host refused the event until the deadline",
            ));
        }
        std::thread::sleep(RETRY_PAUSE);
    }
}

fn attempt(body: &[u8], deadline: Instant) -> Attempt {
    let mut stream = match UnixStream::connect(paths::socket_path()) {
        Ok(s) => s,
        Err(e) => return Attempt::NotListening(e),
    };
    let wait = deadline.saturating_duration_since(Instant::now()) + REPLY_GRACE;
    let exchange = (|| {
        stream.set_read_timeout(Some(wait))?;
        stream.set_write_timeout(Some(wait))?;
        // A host that refuses a peer answers before reading the request, so a failed write
        // may still have a refusal waiting to be read.
        let written = write_frame(&mut stream, body);
        match (read_frame(&mut stream, MAX_FRAME), written) {
            (Ok(Some(b)), _) => decode::<HostReply>(&b).map_err(io::Error::other),
            (_, Err(e)) => Err(e),
            (Ok(None), Ok(())) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "host closed the connection",
            )),
            (Err(capt_hook_proto::FrameError::Io(e)), Ok(())) => Err(e),
            (Err(e), Ok(())) => Err(io::Error::other(e)),
        }
    })();
    match exchange {
        Ok(reply) => Attempt::Reply(reply),
        Err(e) => Attempt::Broken(e),
    }
}

/// Starts the host unless another client is already doing so. The spawn lock makes one client
/// the starter; the others wait for the lock and find the host listening. The starter waits
/// for the host's `ready` line, which it prints only once the socket accepts connections, so no
/// client ever races a half-started host.
fn start_host(deadline: Instant) -> Result<(), Failure> {
    let dir = paths::socket_dir();
    paths::ensure_private_dir(&dir)
        .map_err(|e| fail(Kind::HostUnavailable, format!("{}: {e}", dir.display())))?;
    let lock = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(paths::SPAWN_LOCK))
        .map_err(|e| fail(Kind::HostUnavailable, format!("spawn lock: {e}")))?;
    loop {
        match lock.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => {
                return Err(fail(
                    Kind::TransportRefused,
                    format!("waiting for the host to start: {e}"),
                ));
            }
        }
    }
    // Another client may have started it while we waited for the lock.
    if UnixStream::connect(paths::socket_path()).is_ok() {
        return Ok(());
    }
    let exe = sibling("capt-hookd");
    let mut child = Command::new(&exe)
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // Never our stderr: the host outlives us, and Claude Code waits for the pipe to close.
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            fail(
                Kind::HostUnavailable,
                format!("cannot start {}: {e}", exe.display()),
            )
        })?;
    let Some(stdout) = child.stdout.take() else {
        return Err(fail(Kind::HostUnavailable, "host stdout missing"));
    };
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(line) if line.starts_with("ready") => Ok(()),
        Ok(_) => {
            let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
            Err(fail(
                Kind::HostUnavailable,
                format!("capt-hookd failed to start ({status}); see its log"),
            ))
        }
        Err(_) => Err(fail(
            Kind::TransportRefused,
            "the host was not ready before the deadline",
        )),
    }
}

/// Evaluates the event in a child `capt-hook-worker evaluate`, killed at the timeout. Used once,
/// only for a mandatory event the host could not answer.
pub fn evaluate_locally(req: &EventRequest, timeout: Duration) -> Result<EventResponse, String> {
    let mut req = req.clone();
    req.deadline_unix_ms = unix_ms_in(timeout);
    let deadline = Instant::now() + timeout;
    let root = PathBuf::from(&req.root);
    let exe = sibling("capt-hook-worker");
    let mut child = Command::new(&exe)
        .arg("evaluate")
        .current_dir(if root.is_dir() {
            root
        } else {
            std::env::temp_dir()
        })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("worker pipes missing".into());
    };
    let body = encode(&req);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let written = stdin.write_all(&body);
        drop(stdin);
        let mut out = Vec::new();
        let read = (&mut stdout).take(MAX_FRAME as u64).read_to_end(&mut out);
        let _ = tx.send(written.and(read).map(|_| out));
    });
    let out = match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => return Err(format!("local evaluation i/o: {e}")),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err("local evaluation timed out".into());
        }
    };
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("local evaluation failed ({status})"));
    }
    decode::<EventResponse>(&out).map_err(|e| format!("local evaluation answered badly: {e}"))
}

/// A binary installed beside this one.
fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)))
        .unwrap_or_else(|| name.into())
}

fn unix_ms_in(d: Duration) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    now + d.as_millis() as u64
}

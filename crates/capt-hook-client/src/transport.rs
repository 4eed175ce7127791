//! Sending one event to the host, starting the host when nothing listens, and the local
//! one-shot evaluation used when the host cannot answer a guarded event. Every failure is a
//! typed [`Kind`] decided where it happens, never read back out of an error text.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use capt_hook_proto::clock::unix_ms_in;

use capt_hook_proto::{
    EventRequest, EventResponse, HostReply, HostRequest, MAX_FRAME, Refusal, decode, encode, paths,
    read_frame, write_frame,
};

/// How a dispatch failed; the spelling is what the ask answer and stderr show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The client could not read or send its own input (stdin, no project root).
    BadInput,
    /// No host could be started (binary missing, or it failed to start).
    HostUnavailable,
    /// The host or worker failed in flight, or answered something undecodable.
    TransportError,
    /// No answer before the deadline.
    TransportTimeout,
    /// The host refused the event until the deadline (draining, mismatched build, …).
    TransportRefused,
    /// The event was answered, but its hooks did not all finish and the answer did not say so.
    NoVerdict,
    /// The worker answered with a failure exit, or broke its protocol.
    WorkerError,
    /// The local evaluator could not be run (not installed beside the client).
    DependencyUnavailable,
    /// The process behind the socket is not the installed host: nothing was sent to it.
    UntrustedHost,
}

impl Kind {
    /// The kebab-case name printed in notes.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::BadInput => "bad-input",
            Kind::HostUnavailable => "host-unavailable",
            Kind::TransportError => "transport-error",
            Kind::TransportTimeout => "transport-timeout",
            Kind::TransportRefused => "transport-refused",
            Kind::NoVerdict => "no-verdict",
            Kind::WorkerError => "worker-error",
            Kind::DependencyUnavailable => "dependency-unavailable",
            Kind::UntrustedHost => "untrusted-host",
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

/// Time kept between the deadline the host is given and the moment we stop waiting for it: it
/// answers by its deadline, and a typed late reply is worth more than a bare timeout. At most a
/// tenth of the budget, so short timeouts stay short.
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
    /// Connected to a process that is not the installed host; why.
    Untrusted(String),
}

/// Sends `req` to the host and waits for its answer until `answer_by`, starting the host if
/// nothing listens and resending while it refuses before dispatch. Never resends an event the
/// host accepted.
pub fn dispatch(req: &EventRequest, answer_by: Instant) -> Result<EventResponse, Failure> {
    dispatch_until(req, answer_by).0
}

/// [`dispatch`], also returning the deadline the host was given (Unix milliseconds): no worker
/// of the host starts the event after it.
pub fn dispatch_until(
    req: &EventRequest,
    answer_by: Instant,
) -> (Result<EventResponse, Failure>, u64) {
    let budget = answer_by.saturating_duration_since(Instant::now());
    let grace = REPLY_GRACE.min(budget / 10);
    let mut sent = req.clone();
    sent.deadline_unix_ms = unix_ms_in(budget - grace);
    let host_deadline = sent.deadline_unix_ms;
    (send(sent, answer_by, grace), host_deadline)
}

fn send(sent: EventRequest, answer_by: Instant, grace: Duration) -> Result<EventResponse, Failure> {
    let deadline = answer_by.checked_sub(grace).unwrap_or(answer_by);
    let root = sent.root.clone();
    let body = encode(&HostRequest::event(std::process::id(), sent));
    let mut started = false;
    loop {
        match attempt(&body, answer_by) {
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
            Attempt::Untrusted(why) => return Err(fail(Kind::UntrustedHost, why)),
            Attempt::NotListening(e) => {
                if !started {
                    start_host(deadline, &root)?;
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

fn attempt(body: &[u8], answer_by: Instant) -> Attempt {
    let mut stream = match connect(answer_by) {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::TimedOut => return Attempt::Broken(e),
        Err(e) => return Attempt::NotListening(e),
    };
    // Before a byte of the event goes out: it may carry the session's secrets.
    if let Err(HostRefused(why)) = verify_host(&stream) {
        return Attempt::Untrusted(why);
    }
    // A zero timeout means "block forever" to the socket: never pass one.
    let wait = answer_by
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
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

/// Connects to the host by `answer_by`. A stopped or wedged host whose accept backlog is full
/// makes `connect` wait for room; the socket's send timeout bounds that wait (Linux applies it
/// to a Unix `connect`), so a client never outlives its deadline in `connect`.
fn connect(answer_by: Instant) -> io::Result<UnixStream> {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType, sockopt};
    let fd = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    // A zero timeout means "wait forever" to the kernel: never pass one.
    let wait = answer_by
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    sockopt::set_socket_timeout(&fd, sockopt::Timeout::Send, Some(wait))?;
    match rustix::net::connect(&fd, &SocketAddrUnix::new(paths::socket_path())?) {
        Ok(()) => Ok(UnixStream::from(fd)),
        Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INPROGRESS) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the host did not accept the connection before the deadline",
        )),
        Err(e) => Err(e.into()),
    }
}

/// Makes sure a host is listening by `deadline`, starting one (for `root`) when none is.
pub fn ensure_host(deadline: Instant, root: &str) -> Result<(), Failure> {
    if UnixStream::connect(paths::socket_path()).is_ok() {
        return Ok(());
    }
    start_host(deadline, root)
}

/// Starts the host unless another client is already doing so. The spawn lock makes one client
/// the starter; the others wait for the lock and find the host listening. The starter waits
/// for the host's `ready` line, which it prints only once the socket accepts connections, so no
/// client ever races a half-started host. The host is told `root`, so it starts the worker for
/// this event while we wait for `ready` and connect.
fn start_host(deadline: Instant, root: &str) -> Result<(), Failure> {
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
        .args(["serve", "--prestart", root])
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

/// Evaluates the event in a child `capt-hook-worker evaluate`, killed at `answer_by`: the
/// guarded event's fallback when the host could not answer. The child gets a deadline a little
/// before ours, so a hook still running is reported by the worker rather than cut off by us.
pub fn evaluate_locally(req: &EventRequest, answer_by: Instant) -> Result<EventResponse, Failure> {
    let budget = answer_by.saturating_duration_since(Instant::now());
    let mut req = req.clone();
    req.deadline_unix_ms = unix_ms_in(budget * 9 / 10);
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
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            fail(
                Kind::DependencyUnavailable,
                format!("cannot run {}: {e}", exe.display()),
            )
        })?;
    let (Some(mut stdin), Some(mut stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(fail(Kind::WorkerError, "worker pipes missing"));
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
    // Read on its own thread so a chatty worker never blocks on a full stderr pipe.
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.take(64 * 1024).read_to_string(&mut text);
        text
    });
    let out = match rx.recv_timeout(answer_by.saturating_duration_since(Instant::now())) {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(fail(
                Kind::WorkerError,
                format!("local evaluation i/o: {e}"),
            ));
        }
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(fail(
                Kind::TransportTimeout,
                "local evaluation did not finish before the deadline",
            ));
        }
    };
    let status = child
        .wait()
        .map_err(|e| fail(Kind::WorkerError, e.to_string()))?;
    if !status.success() {
        let stderr = errors.join().unwrap_or_default();
        let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(fail(
            Kind::WorkerError,
            format!("local evaluation failed ({status}) {first}")
                .trim_end()
                .to_owned(),
        ));
    }
    decode::<EventResponse>(&out).map_err(|e| {
        fail(
            Kind::WorkerError,
            format!("local evaluation answered badly: {e}"),
        )
    })
}

/// Why [`verify_host`] refused the process behind the socket, worded for the user.
#[derive(Debug)]
struct HostRefused(String);

/// Checks that the process behind `stream` runs the host this client would start: the
/// `capt-hookd` installed beside it (resolved through links), run by this user. Read from the
/// kernel (the peer's credentials, then its executable in `/proc`), not from anything the peer
/// says. This stops another program of the user's from posing as the host on the socket (a
/// host copied elsewhere, a stale build, a listener an agent left behind); it does not stop a
/// process of the user's that replaces the installed binary itself, which the user's own
/// permissions allow. Linux only: elsewhere there is no `/proc/<pid>/exe` and this passes.
#[cfg(target_os = "linux")]
fn verify_host(stream: &UnixStream) -> Result<(), HostRefused> {
    let refuse = |why: String| {
        HostRefused(format!(
            "refused the host behind {}: {why}; nothing was sent to it (stop it with the \
             `capt-hookd shutdown` beside the binary it runs, which is the only one it obeys, \
             or end that process, and the next event starts the installed host)",
            paths::socket_path().display()
        ))
    };
    let cred = rustix::net::sockopt::socket_peercred(stream)
        .map_err(|e| refuse(format!("its credentials cannot be read ({e})")))?;
    let pid = cred.pid.as_raw_nonzero().get();
    let uid = rustix::process::getuid();
    if cred.uid != uid {
        return Err(refuse(format!(
            "it runs as uid {}, not as this user (uid {})",
            cred.uid.as_raw(),
            uid.as_raw()
        )));
    }
    let expected = sibling("capt-hookd");
    let expected = resolved(&expected).map_err(|e| {
        refuse(format!(
            "the installed host {} to compare it with cannot be found ({e})",
            expected.display()
        ))
    })?;
    let actual = std::fs::read_link(format!("/proc/{pid}/exe"))
        .map_err(|e| refuse(format!("/proc/{pid}/exe cannot be read ({e})")))?;
    if actual != expected {
        return Err(refuse(format!(
            "pid {pid} runs {}, not the installed {}",
            actual.display(),
            expected.display()
        )));
    }
    Ok(())
}

/// `sibling`'s path with every link resolved, as the kernel names a process's executable in
/// `/proc/<pid>/exe`. `sibling` must be absolute with a canonical directory, as [`sibling`]'s
/// is: this binary's directory, read from `/proc/self/exe`, which the kernel gives with every
/// link resolved already. So only the file itself can be a link, and one `readlink` says
/// whether it is (`canonicalize` would `readlink` every component, on every event).
#[cfg(target_os = "linux")]
fn resolved(sibling: &std::path::Path) -> io::Result<PathBuf> {
    match std::fs::read_link(sibling) {
        // EINVAL: it exists and is not a link.
        Err(e) if e.kind() == io::ErrorKind::InvalidInput && sibling.is_absolute() => {
            Ok(sibling.to_path_buf())
        }
        Err(e) if e.kind() != io::ErrorKind::InvalidInput => Err(e),
        // A link (an install that links the host from elsewhere), or a path not known to be
        // canonical: resolve the whole of it.
        _ => std::fs::canonicalize(sibling),
    }
}

#[cfg(not(target_os = "linux"))]
fn verify_host(_: &UnixStream) -> Result<(), HostRefused> {
    Ok(())
}

/// A binary installed beside this one.
fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)))
        .unwrap_or_else(|| name.into())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn resolved_follows_a_linked_host_and_keeps_a_plain_one() {
        let dir =
            std::env::temp_dir().join(format!("capt-hook-client-resolved-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("real")).unwrap();
        let dir = std::fs::canonicalize(&dir).unwrap();
        let host = dir.join("real/capt-hookd");
        std::fs::write(&host, "").unwrap();
        std::os::unix::fs::symlink(&host, dir.join("capt-hookd")).unwrap();
        assert_eq!(resolved(&host).unwrap(), host);
        assert_eq!(resolved(&dir.join("capt-hookd")).unwrap(), host);
        // A relative path is not known to be canonical: resolved in full.
        let cwd = std::env::current_dir().unwrap();
        let relative = pathdiff(&host, &cwd);
        assert_eq!(resolved(&relative).unwrap(), host);
        let missing = resolved(&dir.join("gone")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `path` relative to `base` (both absolute), through `..` as needed.
    fn pathdiff(path: &std::path::Path, base: &std::path::Path) -> PathBuf {
        let (p, b): (Vec<_>, Vec<_>) = (path.components().collect(), base.components().collect());
        let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let mut out = PathBuf::new();
        for _ in common..b.len() {
            out.push("..");
        }
        out.extend(&p[common..]);
        out
    }
}

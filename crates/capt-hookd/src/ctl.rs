//! The control commands (`status`, `restart-workers`, `shutdown`): a plain std client that never
//! starts a host.

use std::io;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use capt_hook_proto::{
    HostReply, HostRequest, MAX_FRAME, Op, decode, encode, paths, read_frame, write_frame,
};

/// Pause before asking a busy host again.
const BUSY_PAUSE: Duration = Duration::from_millis(50);

/// Sends one request to the running host and returns its reply, asking again while the host is
/// too busy to take it (a burst of connections fills its slots for a moment, or sheds ours before
/// reading it) and the budget lasts.
pub fn request(op: Op, budget: Duration) -> io::Result<HostReply> {
    let until = Instant::now() + budget;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let again = Instant::now() + BUSY_PAUSE < until;
        match request_once(op.clone(), left.max(Duration::from_millis(1))) {
            Ok(HostReply::Refused {
                code: capt_hook_proto::Refusal::Busy,
                ..
            }) if again => std::thread::sleep(BUSY_PAUSE),
            // A live host closed our connection before answering (shed under a burst): ask
            // again. No host at all (nothing listening) is an error at once.
            Err(e)
                if again
                    && matches!(
                        e.kind(),
                        io::ErrorKind::BrokenPipe
                            | io::ErrorKind::ConnectionReset
                            | io::ErrorKind::UnexpectedEof
                    ) =>
            {
                std::thread::sleep(BUSY_PAUSE)
            }
            other => return other,
        }
    }
}

fn request_once(op: Op, budget: Duration) -> io::Result<HostReply> {
    let mut stream = UnixStream::connect(paths::socket_path())?;
    stream.set_read_timeout(Some(budget))?;
    stream.set_write_timeout(Some(budget))?;
    write_frame(
        &mut stream,
        &encode(&HostRequest::new(std::process::id(), op)),
    )?;
    match read_frame(&mut stream, MAX_FRAME) {
        Ok(Some(body)) => decode(&body).map_err(io::Error::other),
        Ok(None) => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "host closed the connection",
        )),
        Err(capt_hook_proto::FrameError::Io(e)) => Err(e),
        Err(e) => Err(io::Error::other(e)),
    }
}

/// Waits until no host holds the lifetime lock (the host has exited), up to `budget`.
pub fn wait_for_exit(budget: Duration) -> bool {
    let path = paths::socket_dir().join(paths::LIFETIME_LOCK);
    let until = Instant::now() + budget;
    loop {
        match std::fs::File::open(&path) {
            Err(_) => return true,
            Ok(f) => {
                if f.try_lock().is_ok() {
                    return true;
                }
            }
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

//! `capt-hook-worker serve --root R`: the host's side of a worker. Framed messages on
//! stdin/stdout, a hello that names this build, then events multiplexed by id, each on its own
//! thread (the host caps a worker at 64 outstanding events, so the thread count is bounded).

use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capt_hook_proto::{
    BUILD, MAX_FRAME, PROTOCOL, WorkerFrame, decode, encode, read_frame, write_frame,
};

use crate::warm::{Warm, deadline_of, respond, run_async_hooks};

/// How long a worker whose host went away waits for events already running.
const DRAIN: Duration = Duration::from_secs(5);

/// The write half of the protocol channel, shared by event threads.
type Out = Arc<Mutex<File>>;

/// Serves until the host closes stdin or breaks the protocol.
pub fn run(root: &Path) -> ExitCode {
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
            return ExitCode::from(2);
        }
    }

    let warm = Arc::new(Warm::load(root));
    let running = Arc::new(AtomicUsize::new(0));
    let code = loop {
        let frame = match read_frame(&mut input, MAX_FRAME) {
            Ok(None) => break ExitCode::SUCCESS,
            Ok(Some(body)) => decode::<WorkerFrame>(&body),
            Err(e) => {
                eprintln!("capt-hook-worker: {e}");
                break ExitCode::from(2);
            }
        };
        match frame {
            Ok(WorkerFrame::Event { id, request }) if id != 0 => {
                let (w, o, r) = (warm.clone(), out.clone(), running.clone());
                running.fetch_add(1, Ordering::SeqCst);
                let spawned = std::thread::Builder::new().spawn(move || {
                    serve_event(&w, &o, id, request);
                    r.fetch_sub(1, Ordering::SeqCst);
                });
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
                break ExitCode::from(2);
            }
        }
    };
    // The host is gone (or broken): give running events a moment, then exit with them
    // abandoned rather than linger as an orphan.
    let until = Instant::now() + DRAIN;
    while running.load(Ordering::SeqCst) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    code
}

fn serve_event(warm: &Warm, out: &Out, id: u64, request: capt_hook_proto::EventRequest) {
    let deadline = match request.validate().and_then(|()| deadline_of(&request)) {
        Ok(d) => d,
        Err(error) => return send(out, &WorkerFrame::Error { id, error }),
    };
    let project = warm.project();
    let response = respond(&project, &request, deadline);
    send(out, &WorkerFrame::Result { id, response });
    run_async_hooks(&project, &request);
}

fn send(out: &Out, frame: &WorkerFrame) {
    let body = encode(frame);
    let mut f = out.lock().unwrap_or_else(|p| p.into_inner());
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

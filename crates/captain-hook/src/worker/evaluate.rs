//! `capt-hook-worker evaluate`: the client's one-shot fallback when the host cannot answer a
//! mandatory event. Reads one [`EventRequest`] JSON on stdin, writes one [`EventResponse`] JSON
//! on stdout. Async hooks are dropped: nobody waits for them.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use capt_hook_proto::{EventRequest, MAX_FRAME, decode, encode};

use crate::registry::Registry;
use crate::worker::warm::{Warm, deadline_of, respond};

/// Runs the one-shot evaluation; exit 0 when a response was written, 1 otherwise.
pub fn run(base: Arc<Registry>) -> ExitCode {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin()
        .lock()
        .take(MAX_FRAME as u64 + 1)
        .read_to_end(&mut input)
    {
        eprintln!("capt-hook-worker: reading the request: {e}");
        return ExitCode::from(1);
    }
    if input.len() > MAX_FRAME {
        eprintln!("capt-hook-worker: request exceeds {MAX_FRAME} bytes");
        return ExitCode::from(1);
    }
    let req: EventRequest = match decode(&input) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("capt-hook-worker: {e}");
            return ExitCode::from(1);
        }
    };
    if let Err(e) = req.validate() {
        eprintln!("capt-hook-worker: {e}");
        return ExitCode::from(1);
    }
    let deadline = match deadline_of(&req) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("capt-hook-worker: {e}");
            return ExitCode::from(1);
        }
    };
    let warm = Warm::load(req.root.as_ref(), base, None);
    let response = respond(&warm.project().0, &req, deadline);
    let mut out = std::io::stdout().lock();
    match out.write_all(&encode(&response)).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("capt-hook-worker: writing the response: {e}");
            ExitCode::from(1)
        }
    }
}

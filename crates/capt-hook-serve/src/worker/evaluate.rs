//! `capt-hook-worker evaluate`: the client's one-shot fallback when the host cannot answer a
//! guarded event. Reads one [`EventRequest`] JSON on stdin, writes one [`EventResponse`] JSON
//! on stdout. Async hooks are dropped: nobody waits for them.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use capt_hook_proto::{EventRequest, MAX_FRAME, decode, encode};

use crate::worker::warm::{Claim, Warm, claim, deadline_of, respond_traced};
use capt_hook_engine::registry::Registry;

/// Longest wait for the journal before exiting; the client is not waiting on it.
const JOURNAL_FLUSH: std::time::Duration = std::time::Duration::from_secs(2);

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
    let root: &std::path::Path = req.root.as_ref();
    let mut note = None;
    if base.is_empty() && capt_hook_rust_project::is_rust_project(root) {
        // The stock worker stands in for a Rust hook project: its own build answers when it is
        // current, else the TOML hooks do and the session is told why (as the host would).
        let env = |name: &str| {
            req.env
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
        };
        match capt_hook_rust_project::select(
            root,
            capt_hook_rust_project::sdk_dir(env).as_deref(),
            env,
        ) {
            capt_hook_rust_project::Selection::Project { exe, .. } => {
                return delegate(&exe, &input);
            }
            capt_hook_rust_project::Selection::NotLive { note: n, .. } => note = Some(n),
            capt_hook_rust_project::Selection::Stock => {}
        }
    }
    // After the hand-over to a project's own worker, which claims the event itself.
    capt_hook_proto::claim::sweep();
    if let Claim::Theirs(owner) = claim(&req, "local evaluation") {
        eprintln!(
            "capt-hook-worker: {owner} is already running this event; it is not run a second time"
        );
        return ExitCode::from(1);
    }
    let warm = Warm::load(root, base, note);
    let (response, entry) = respond_traced(&warm.project().0, &req, deadline);
    let mut out = std::io::stdout().lock();
    match out.write_all(&encode(&response)).and_then(|()| out.flush()) {
        Ok(()) => {
            // The client has its answer; the log line and ledger rows follow, briefly.
            capt_hook_journal::submit(entry);
            capt_hook_journal::flush(JOURNAL_FLUSH);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("capt-hook-worker: writing the response: {e}");
            ExitCode::from(1)
        }
    }
}

/// Hands the request to the project's own build and relays its answer.
fn delegate(exe: &std::path::Path, input: &[u8]) -> ExitCode {
    use std::process::{Command, Stdio};
    let child = Command::new(exe)
        .arg("evaluate")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!("capt-hook-worker: cannot run {}: {e}", exe.display());
            return ExitCode::from(1);
        }
    };
    if let Some(mut stdin) = child.stdin.take()
        && let Err(e) = stdin.write_all(input)
    {
        eprintln!("capt-hook-worker: writing to {}: {e}", exe.display());
    }
    match child.wait_with_output() {
        Ok(out) if out.status.success() => {
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(&out.stdout).and_then(|()| stdout.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::from(1),
            }
        }
        Ok(out) => {
            eprintln!(
                "capt-hook-worker: {} evaluate exited with {}",
                exe.display(),
                out.status
            );
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("capt-hook-worker: waiting for {}: {e}", exe.display());
            ExitCode::from(1)
        }
    }
}

//! `<worker> run <Event> --root R [--async]`: one event evaluated in this process, as
//! `capt-hook run` does it, for a Rust hook project's own build (`capt-hook run` hands the event
//! here when the project's build is current, so its Rust hooks answer without a host).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use crate::project::{Evaluation, Project, default_hooks_dir};
use capt_hook_engine::dispatch::DispatchOptions;
use capt_hook_engine::registry::Registry;

/// Reads the payload on stdin, prints the envelope; exit codes as `capt-hook run`'s.
pub fn run(event: &str, root: &Path, base: &Registry, run_async: bool) -> ExitCode {
    let stdin = match crate::project::read_input(event, std::io::stdin().lock()) {
        Ok(stdin) => stdin,
        Err(rejected) => return print(&rejected),
    };
    let project = Project::load_with(root, &default_hooks_dir(root), base);
    evaluate_and_print(&project, event, &stdin, run_async)
}

/// Evaluates one event with `project` and prints what `capt-hook run` prints: load errors and
/// the evaluation's lines on stderr, the envelope on stdout; the evaluation's exit code.
pub fn evaluate_and_print(
    project: &Project,
    event: &str,
    stdin: &[u8],
    run_async: bool,
) -> ExitCode {
    for e in project.errors() {
        eprintln!("capt-hook: {e}");
    }
    let (eval, entry) = project.evaluate_traced(
        event,
        stdin,
        DispatchOptions {
            deadline: None,
            run_async,
        },
        crate::project::Origin::default(),
    );
    if !write(&eval) {
        return ExitCode::from(1);
    }
    // The session log and ledger, as a worker writes them; an async twin's run is not an
    // answer, and the host's workers do not journal theirs either.
    if !run_async {
        capt_hook_journal::submit(entry);
        capt_hook_journal::flush(JOURNAL_FLUSH);
    }
    ExitCode::from(eval.exit_code)
}

/// Prints `eval` as `capt-hook run` does (a payload refused before any hook ran, say): its
/// lines on stderr, the envelope on stdout; its exit code, or 1 when stdout is gone.
pub fn print(eval: &Evaluation) -> ExitCode {
    if write(eval) {
        ExitCode::from(eval.exit_code)
    } else {
        ExitCode::from(1)
    }
}

/// Writes `eval`'s lines to stderr and its envelope to stdout; false when stdout is gone.
fn write(eval: &Evaluation) -> bool {
    for line in &eval.stderr {
        eprintln!("{line}");
    }
    if let Some(out) = &eval.stdout {
        let mut stdout = std::io::stdout().lock();
        if writeln!(stdout, "{out}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return false;
        }
    }
    true
}

/// Longest wait for the journal before exiting. Ledger rows are in the spool within the first
/// milliseconds, so a ledger slower than this only delays their commit to the next writer.
const JOURNAL_FLUSH: std::time::Duration = std::time::Duration::from_secs(1);

//! State that could not be written, kept until the engine tells the user.
//!
//! A failed state write makes stateful behaviour err quietly (a capped hook is skipped, a
//! once-only message repeats), which is safe but invisible. Every failure to create a state
//! directory or file is noted here, keyed by the directory that refused it (the nearest one that
//! exists); [`take_write_failure`] hands each such directory out once per process, so the engine
//! can surface it as a `systemMessage` without repeating it on every event.

use parking_lot::{Mutex, MutexGuard};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A directory under which state could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "captain-hook cannot write its state under {dir}: {reason}; max_fires limits, once-only \
     messages and per-turn throttles are not remembered (capped hooks are skipped) until it is \
     writable: fix its permissions or point CAPTAIN_HOOK_STATE_DIR at a writable directory"
)]
pub struct WriteFailure {
    /// The directory that refused the write (the nearest existing ancestor of the target).
    pub dir: PathBuf,
    /// The operating system's message.
    pub reason: String,
}

#[derive(Default)]
struct Ledger {
    /// Failures noted and not yet handed out, oldest first.
    pending: Vec<WriteFailure>,
    /// Directories already handed out (or pending): each is reported once.
    known: BTreeSet<PathBuf>,
}

static LEDGER: Mutex<Ledger> = Mutex::new(Ledger {
    pending: Vec::new(),
    known: BTreeSet::new(),
});

fn ledger() -> MutexGuard<'static, Ledger> {
    LEDGER.lock()
}

/// Notes that writing at `target` failed with `err`.
pub(crate) fn note(target: &Path, err: &std::io::Error) {
    let dir = target
        .ancestors()
        .find(|a| a.symlink_metadata().is_ok())
        .unwrap_or(target)
        .to_path_buf();
    let mut ledger = ledger();
    if ledger.known.insert(dir.clone()) {
        tracing::warn!(dir = %dir.display(), error = %err, "state is not writable");
        ledger.pending.push(WriteFailure {
            dir,
            reason: err.to_string(),
        });
    }
}

/// The oldest state write failure not yet reported, if any; each directory is handed out once
/// per process.
pub fn take_write_failure() -> Option<WriteFailure> {
    let mut ledger = ledger();
    (!ledger.pending.is_empty()).then(|| ledger.pending.remove(0))
}

#[cfg(test)]
pub(crate) fn forget(dir: &Path) {
    let mut ledger = ledger();
    ledger.known.retain(|d| !d.starts_with(dir));
    ledger.pending.retain(|f| !f.dir.starts_with(dir));
}

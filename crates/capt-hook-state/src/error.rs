//! Errors of the state crate: each names the file and says what to do about it.

use std::path::PathBuf;
use std::time::Duration;

/// A state operation that could not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The file or one of its parent directories could not be written.
    #[error(
        "cannot write state file {path}: {source}; make the state directory writable or point \
         CAPTAIN_HOOK_STATE_DIR at one that is"
    )]
    Write {
        /// The file being written.
        path: PathBuf,
        /// The underlying failure.
        source: std::io::Error,
    },
    /// The file exists but could not be read (permissions, I/O).
    #[error("cannot read state file {path}: {source}; check its permissions")]
    Read {
        /// The file being read.
        path: PathBuf,
        /// The underlying failure.
        source: std::io::Error,
    },
    /// The file holds invalid JSON or does not match the model (strict reads only).
    #[error(
        "state file {path} does not hold a valid {model}: {reason}; it is kept and moved aside \
         as {path}.bak.<timestamp> on the next write"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The model the file should hold.
        model: String,
        /// The parser's message.
        reason: String,
    },
    /// The model could not be turned into JSON (a map with non-string keys, a failing
    /// `Serialize` impl).
    #[error(
        "cannot serialize {model} for {path}: {source}; the model must serialize to a JSON object"
    )]
    Serialize {
        /// The destination file.
        path: PathBuf,
        /// The model type.
        model: String,
        /// The serializer's error.
        source: serde_json::Error,
    },
    /// The lock file could not be opened or locked.
    #[error("cannot lock {path}: {source}; make the state directory writable")]
    Lock {
        /// The `.lock` sibling.
        path: PathBuf,
        /// The underlying failure.
        source: std::io::Error,
    },
    /// Another holder kept the lock past the timeout.
    #[error(
        "gave up after {waited:?} waiting for the lock {path}; another process holds it (or a \
         mutate() is nested inside another on the same slot, which never finishes)"
    )]
    LockTimeout {
        /// The `.lock` sibling.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },
    /// A file that must never be read as empty (the ticket store) did not parse; it was moved
    /// aside so the next operation starts clean and nothing in it is lost.
    #[error(
        "ticket store {path} is corrupt ({reason}); moved it aside as {backup}; every ticket in \
         it is void until you restore it"
    )]
    CorruptMovedAside {
        /// The file.
        path: PathBuf,
        /// Where it went.
        backup: PathBuf,
        /// The parser's message.
        reason: String,
    },
    /// The file could not be removed.
    #[error("cannot delete state file {path}: {source}; check the directory's permissions")]
    Delete {
        /// The file.
        path: PathBuf,
        /// The underlying failure.
        source: std::io::Error,
    },
}

//! Who runs a guarded event: the host's worker or the client's local evaluation, never both.
//!
//! A guarded event the host does not answer in time is evaluated again by the client
//! (`capt-hook-worker evaluate`), while the host's worker may still be running it (a wedged
//! worker, a slow judge). Hooks have side effects (fire counters, tickets, judge calls), so the
//! first runner takes a claim on the event's request id, a file created with `O_EXCL` in the
//! per-user runtime directory, and the second finds it taken and runs nothing. The client that
//! made the id removes the claim once no one can start the event any more; a claim left by a
//! killed client is swept after [`STALE_AFTER`].

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The claims' directory under the socket directory.
pub const CLAIMS_DIR: &str = "claims";

/// Longest a request id may be.
pub const MAX_ID_LEN: usize = 64;

/// A claim older than this belongs to an event nobody waits for any more.
pub const STALE_AFTER: Duration = Duration::from_secs(15 * 60);

/// Where claims live: `<socket dir>/claims`.
pub fn claims_dir() -> PathBuf {
    crate::paths::socket_dir().join(CLAIMS_DIR)
}

/// A fresh request id for one event of this process: the pid (unique among live processes)
/// and the clock in nanoseconds (unique across a pid's reuse).
pub fn new_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}

/// Whether `id` can name a claim file: 1 to [`MAX_ID_LEN`] ASCII letters, digits, `-` or `_`.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The outcome of [`take`].
#[derive(Debug, PartialEq, Eq)]
pub enum Claimed {
    /// This process runs the event.
    Ours,
    /// Another runner took it first; its own description (`host worker pid 12`).
    Theirs(String),
}

/// Takes the claim on `id` in `dir`, describing this runner as `who`. An `Err` means no claim
/// could be recorded (the directory cannot be made, the id is not a file name).
pub fn take_in(dir: &Path, id: &str, who: &str) -> io::Result<Claimed> {
    if !valid_id(id) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("request id {id:?} is not 1 to {MAX_ID_LEN} letters, digits, '-' or '_'"),
        ));
    }
    let path = dir.join(id);
    let create = || {
        std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&path)
    };
    // The directory is made on first need, so the common case costs one `open`.
    let file = match create() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            crate::paths::ensure_private_dir(dir)?;
            create()
        }
        other => other,
    };
    match file {
        Ok(mut f) => {
            // Best effort: the file's existence is the claim, the text only says whose it is.
            let _ = f.write_all(who.as_bytes());
            Ok(Claimed::Ours)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let owner = std::fs::read_to_string(&path).unwrap_or_default();
            Ok(Claimed::Theirs(if owner.trim().is_empty() {
                "another runner".to_owned()
            } else {
                owner.trim().to_owned()
            }))
        }
        Err(e) => Err(e),
    }
}

/// [`take_in`] the per-user [`claims_dir`].
pub fn take(id: &str, who: &str) -> io::Result<Claimed> {
    take_in(&claims_dir(), id, who)
}

/// Removes the claim on `id` in `dir`, if any.
pub fn release_in(dir: &Path, id: &str) {
    if valid_id(id) {
        let _ = std::fs::remove_file(dir.join(id));
    }
}

/// [`release_in`] the per-user [`claims_dir`].
pub fn release(id: &str) {
    release_in(&claims_dir(), id);
}

/// Removes the claims in `dir` older than `age`; returns how many went.
pub fn sweep_in(dir: &Path, age: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|d| d > age);
        if old && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// [`sweep_in`] the per-user [`claims_dir`], with [`STALE_AFTER`].
pub fn sweep() -> usize {
    sweep_in(&claims_dir(), STALE_AFTER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("capt-hook-claims-{}", new_id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_first_runner_takes_the_claim_and_the_second_is_told_whose_it_is() {
        let d = dir();
        let id = new_id();
        assert_eq!(
            take_in(&d, &id, "host worker pid 7").unwrap(),
            Claimed::Ours
        );
        assert_eq!(
            take_in(&d, &id, "local evaluation").unwrap(),
            Claimed::Theirs("host worker pid 7".into())
        );
        release_in(&d, &id);
        assert_eq!(take_in(&d, &id, "local evaluation").unwrap(), Claimed::Ours);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn ids_that_are_not_file_names_are_refused() {
        let d = dir();
        for bad in ["", "../x", "a/b", ".", &"x".repeat(MAX_ID_LEN + 1)] {
            assert!(!valid_id(bad), "{bad}");
            assert!(take_in(&d, bad, "w").is_err(), "{bad}");
        }
        assert!(valid_id(&new_id()));
    }

    #[test]
    fn only_old_claims_are_swept() {
        let d = dir();
        let id = new_id();
        assert_eq!(take_in(&d, &id, "w").unwrap(), Claimed::Ours);
        assert_eq!(sweep_in(&d, Duration::from_secs(60)), 0);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(sweep_in(&d, Duration::from_millis(1)), 1);
        assert_eq!(take_in(&d, &id, "w").unwrap(), Claimed::Ours);
        std::fs::remove_dir_all(&d).unwrap();
    }
}

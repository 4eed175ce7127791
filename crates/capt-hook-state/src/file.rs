//! File primitives: tolerant reads, atomic writes, moving bad files aside, and `.lock` siblings.
//!
//! State is private: directories are created 0700 and files 0600, and a lock file is never
//! opened through a symlink (the rename that installs a state file replaces a link instead of
//! writing through it).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StateError;

/// What a read found.
pub(crate) enum ReadOutcome<T> {
    /// No file.
    Missing,
    /// A file that parsed as the model.
    Valid(T),
    /// A file that exists but is not valid JSON for the model; the parser's message.
    Corrupt(String),
}

/// Reads `path` as `T`. Only I/O failures other than "not found" are errors; bad content is
/// reported as [`ReadOutcome::Corrupt`] so callers can fall back to a default.
pub(crate) fn read_model<T: DeserializeOwned>(path: &Path) -> Result<ReadOutcome<T>, StateError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ReadOutcome::Missing),
        Err(source) => {
            return Err(StateError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    Ok(match serde_json::from_slice::<T>(&bytes) {
        Ok(v) => ReadOutcome::Valid(v),
        Err(e) => ReadOutcome::Corrupt(e.to_string()),
    })
}

/// What the writer knows about the file it is about to replace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prior {
    /// Nothing: the writer checks the current file itself before replacing it.
    Unknown,
    /// The writer read it (under the lock) and it was missing or valid.
    Fine,
    /// The writer read it (under the lock) and it was corrupt.
    Corrupt,
}

/// Serializes `value` compactly and writes it atomically to `path`. A file that does not hold a
/// valid `T` is moved aside as `<path>.bak.<timestamp>` first, so its data is never silently lost.
pub(crate) fn write_model<T: Serialize + DeserializeOwned>(
    path: &Path,
    value: &T,
    prior: Prior,
) -> Result<(), StateError> {
    let bytes = serde_json::to_vec(value).map_err(|source| StateError::Serialize {
        path: path.to_path_buf(),
        model: std::any::type_name::<T>().to_owned(),
        source,
    })?;
    let corrupt = match prior {
        Prior::Fine => false,
        Prior::Corrupt => true,
        // An unreadable file is not known to be bad; only content that fails to parse is.
        Prior::Unknown => matches!(read_model::<T>(path), Ok(ReadOutcome::Corrupt(_))),
    };
    if corrupt {
        match move_aside(path) {
            Ok(bak) => tracing::warn!(
                path = %path.display(),
                backup = %bak.display(),
                "state file did not match its model; moved it aside before writing"
            ),
            // Another writer may have moved it already; anything else must not lose the data.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(StateError::Write {
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
    }
    write_atomic(path, &bytes)
}

/// Writes `bytes` to a uniquely named temporary file in `path`'s directory, then renames it over
/// `path`. The unique name keeps concurrent writers from renaming each other's temp file; the
/// rename makes readers see either the old or the new content, never a torn file. The temp file
/// is removed if anything fails.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    let err = |source| StateError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = parent_of(path);
    create_private_dirs(dir).map_err(err)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .inspect_err(|e| crate::health::note(dir, e))
        .map_err(err)?;
    tmp.write_all(bytes).map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// Creates `dir` and its missing parents with mode 0700.
pub(crate) fn create_private_dirs(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let result = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    if let Err(e) = &result {
        crate::health::note(dir, e);
    }
    result
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Renames `path` to `<path>.bak.<UTC timestamp>` (with `.N` appended if that name is taken).
pub(crate) fn move_aside(path: &Path) -> std::io::Result<PathBuf> {
    let stamp = utc_stamp(SystemTime::now());
    let base = format!("{}.bak.{stamp}", path.display());
    let mut bak = PathBuf::from(&base);
    let mut n = 1;
    while bak.symlink_metadata().is_ok() {
        bak = PathBuf::from(format!("{base}.{n}"));
        n += 1;
    }
    std::fs::rename(path, &bak)?;
    Ok(bak)
}

/// `YYYYMMDDTHHMMSSZ` in UTC (a time before the epoch, which a clock set wrong could give,
/// reads as the epoch).
pub(crate) fn utc_stamp(t: SystemTime) -> String {
    jiff::Timestamp::try_from(t)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .max(jiff::Timestamp::UNIX_EPOCH)
        .strftime("%Y%m%dT%H%M%SZ")
        .to_string()
}

/// How long to wait for a lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockWait {
    /// Block until the lock is free.
    #[default]
    Forever,
    /// Try once; fail with [`StateError::LockTimeout`] if it is held.
    NoWait,
    /// Poll with backoff until the duration has passed.
    Timeout(Duration),
}

/// An exclusive advisory lock on a `.lock` sibling, released on drop (also while unwinding).
#[derive(Debug)]
pub(crate) struct LockGuard {
    file: File,
}

impl LockGuard {
    /// True when [`LockGuard::record_write`] ran under this lock before (in any process): the
    /// lock file is empty until then. An unreadable lock file counts as written, so a caller
    /// that treats "written before, file now missing" as damage errs towards damage.
    pub(crate) fn saw_write(&self) -> bool {
        self.file.metadata().map_or(true, |m| m.len() > 0)
    }

    /// Records in the lock file itself that a value is written under it, just before the
    /// write and while the lock is held, so the next holder sees the mark only with the write
    /// done (or failed); a marker kept anywhere else (or the lock file's mere existence, which
    /// `open` creates before `flock`) could be seen by a second process before the first one's
    /// value is on disk.
    pub(crate) fn record_write(&self) -> std::io::Result<()> {
        if self.file.metadata()?.len() == 0 {
            (&self.file).write_all(b"w")?;
        }
        Ok(())
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Closing the descriptor releases the lock too; unlocking first makes it prompt even if
        // the handle were ever leaked into a child.
        let _ = self.file.unlock();
    }
}

/// The lock sibling of a state file: `<file>.lock`.
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Takes the exclusive lock on `lock` (created with its parents if needed; never deleted, so
/// every process locks the same inode).
pub(crate) fn lock(lock: &Path, wait: LockWait) -> Result<LockGuard, StateError> {
    let err = |source| StateError::Lock {
        path: lock.to_path_buf(),
        source,
    };
    use std::os::unix::fs::OpenOptionsExt;
    create_private_dirs(parent_of(lock)).map_err(err)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(lock)
        .inspect_err(|e| crate::health::note(lock, e))
        .map_err(err)?;
    let deadline = match wait {
        LockWait::Forever => {
            file.lock().map_err(err)?;
            return Ok(LockGuard { file });
        }
        LockWait::NoWait => Instant::now(),
        LockWait::Timeout(d) => Instant::now() + d,
    };
    let start = Instant::now();
    // Short first sleeps keep uncontended waits fast; the cap keeps many waiters from spinning.
    let mut pause = Duration::from_micros(500);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(LockGuard { file }),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => return Err(err(e)),
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(StateError::LockTimeout {
                path: lock.to_path_buf(),
                waited: now - start,
            });
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn stamps_are_utc_calendar_times() {
        let t = UNIX_EPOCH + Duration::from_secs(1_784_541_601); // 2026-07-20T10:00:01Z
        assert_eq!(utc_stamp(t), "20260720T100001Z");
        assert_eq!(utc_stamp(UNIX_EPOCH), "19700101T000000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(&utc_stamp(leap)[..8], "20000229");
    }

    #[test]
    fn atomic_write_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/x.json");
        write_atomic(&p, b"{}").unwrap();
        write_atomic(&p, b"{\"a\":1}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"a\":1}");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn no_wait_fails_while_held_and_succeeds_after() {
        let dir = tempfile::tempdir().unwrap();
        let l = dir.path().join("x.json.lock");
        let held = lock(&l, LockWait::Forever).unwrap();
        assert!(matches!(
            lock(&l, LockWait::NoWait),
            Err(StateError::LockTimeout { .. })
        ));
        let t = Instant::now();
        assert!(matches!(
            lock(&l, LockWait::Timeout(Duration::from_millis(30))),
            Err(StateError::LockTimeout { .. })
        ));
        assert!(t.elapsed() >= Duration::from_millis(30));
        drop(held);
        lock(&l, LockWait::NoWait).unwrap();
    }
}

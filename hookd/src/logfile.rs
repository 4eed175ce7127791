//! The host log kept to a size: past `CAPT_HOOK_LOG_MAX_BYTES` it is copied to
//! `capt-hookd.log.1` (replacing the previous copy) and emptied in place. Emptying rather than
//! renaming keeps every writer on the right file: the host's own lines and each worker's
//! stderr go through descriptors opened in append mode on the one file, which renaming would
//! leave pointing at the old copy. A line written during the copy can be lost.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often the size is looked at.
const CHECK: Duration = Duration::from_secs(30);

/// The rotated copy's path: `<log>.1`.
pub fn rotated(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

/// Rotates `log` (open on `path`) when it is larger than `max` bytes; true when it did.
pub fn rotate_if_large(log: &File, path: &Path, max: u64) -> io::Result<bool> {
    if log.metadata()?.len() <= max {
        return Ok(false);
    }
    let copy = rotated(path);
    let tmp = copy.with_extension("1.tmp");
    std::fs::copy(path, &tmp)?;
    std::fs::rename(&tmp, &copy)?;
    log.set_len(0)?;
    Ok(true)
}

/// Checks the log's size now and then for the host's life, off the runtime thread.
pub async fn keep_rotated(log: File, path: PathBuf, max: u64) {
    let log = std::sync::Arc::new(log);
    let mut tick = tokio::time::interval(CHECK);
    loop {
        tick.tick().await;
        let (l, p) = (std::sync::Arc::clone(&log), path.clone());
        match tokio::task::spawn_blocking(move || rotate_if_large(&l, &p, max)).await {
            Ok(Ok(true)) => tracing::info!(
                copy = %rotated(&path).display(),
                max,
                "the log passed its size limit; rotated"
            ),
            Ok(Ok(false)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot rotate the log"),
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_large_log_is_copied_aside_and_emptied_for_every_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("capt-hookd.log");
        let (mut log, _) = crate::files::open_append(&path).unwrap();
        let mut other = log.try_clone().unwrap();
        log.write_all(&[b'x'; 100]).unwrap();
        assert!(!rotate_if_large(&log, &path, 100).unwrap());
        log.write_all(b"\nlast line before\n").unwrap();
        assert!(rotate_if_large(&log, &path, 100).unwrap());
        let copy = std::fs::read_to_string(rotated(&path)).unwrap();
        assert!(copy.ends_with("last line before\n"), "{copy}");
        // Both descriptors append at the new start, not at their old offsets.
        other.write_all(b"after\n").unwrap();
        log.write_all(b"again\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "after\nagain\n");
    }
}

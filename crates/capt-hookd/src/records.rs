//! Durable records of live workers (`workers.json`), so a host that starts after a crash can
//! reap the previous generation's workers instead of leaving them running.

use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One worker as recorded: its pid plus its start time, so a reused pid is never mistaken for it.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Record {
    pid: u32,
    start_ticks: u64,
}

/// The record file.
#[derive(Debug)]
pub struct Records {
    path: PathBuf,
    /// Last save requested from async code.
    requested: AtomicU64,
    /// Last save written; a background save overtaken by a newer one is skipped.
    written: Mutex<u64>,
}

impl Records {
    /// Records kept at `path`.
    pub fn new(path: PathBuf) -> Records {
        Records {
            path,
            requested: AtomicU64::new(0),
            written: Mutex::new(0),
        }
    }

    /// [`Records::save`] from async code: the file work runs on the blocking pool, in order.
    pub fn save_soon(self: &Arc<Self>, pids: Vec<u32>) {
        let seq = self.requested.fetch_add(1, Ordering::SeqCst) + 1;
        let me = Arc::clone(self);
        tokio::task::spawn_blocking(move || me.save_in_order(seq, pids.into_iter()));
    }

    /// [`Records::save`] on this thread, ordered after every save requested before it: one of
    /// those still queued on the blocking pool finds itself overtaken and skips. For a host
    /// that is stopping, whose runtime may drop the queued saves unrun.
    pub fn save_now(&self, pids: impl Iterator<Item = u32>) {
        let seq = self.requested.fetch_add(1, Ordering::SeqCst) + 1;
        self.save_in_order(seq, pids);
    }

    /// Saves unless a later request (`seq` is this one's place) was written already.
    fn save_in_order(&self, seq: u64, pids: impl Iterator<Item = u32>) {
        let mut written = self.written.lock();
        if *written > seq {
            return;
        }
        *written = seq;
        self.save(pids);
    }

    /// Replaces the records with the given live pids.
    pub fn save(&self, pids: impl Iterator<Item = u32>) {
        let records: Vec<Record> = pids
            .filter_map(|pid| start_ticks(pid).map(|start_ticks| Record { pid, start_ticks }))
            .collect();
        let body = serde_json::to_vec(&records).unwrap_or_default();
        if let Err(e) = crate::files::write_replace(&self.path, &body) {
            tracing::warn!(error = %e, path = %self.path.display(), "cannot save worker records");
        }
    }

    /// Stops every recorded worker that is still the same process (TERM, then KILL), then
    /// clears the records. Runs before the new host admits any event.
    pub fn reap_leftovers(&self) {
        let body = match crate::files::read_own(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                self.move_aside(&e.to_string());
                Vec::new()
            }
        };
        let records: Vec<Record> = match serde_json::from_slice(&body) {
            // The previous host stopped cleanly and left nothing. Not written again: creating
            // and renaming a file costs a cold start 0.5-2 ms before the host is ready.
            Ok(r) if Vec::<Record>::is_empty(&r) => return,
            Ok(r) => r,
            Err(e) if body.is_empty() => {
                tracing::debug!(error = %e, "empty worker records");
                Vec::new()
            }
            Err(e) => {
                self.move_aside(&e.to_string());
                Vec::new()
            }
        };
        let alive: Vec<&Record> = records
            .iter()
            .filter(|r| start_ticks(r.pid) == Some(r.start_ticks))
            .collect();
        for r in &alive {
            tracing::info!(pid = r.pid, "stopping a worker left by a previous host");
            crate::worker::signal_group(r.pid, rustix::process::Signal::TERM);
        }
        let until = std::time::Instant::now() + Duration::from_secs(2);
        while alive
            .iter()
            .any(|r| start_ticks(r.pid) == Some(r.start_ticks))
            && std::time::Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        for r in alive
            .iter()
            .filter(|r| start_ticks(r.pid) == Some(r.start_ticks))
        {
            crate::worker::signal_group(r.pid, rustix::process::Signal::KILL);
        }
        self.save(std::iter::empty());
    }

    /// Keeps records this host cannot read as `<file>.bak` (replacing an older one), so what
    /// was there can still be looked at, and says so in the host log; the workers they named
    /// cannot be reaped.
    fn move_aside(&self, why: &str) {
        let mut bak = self.path.clone().into_os_string();
        bak.push(".bak");
        match std::fs::rename(&self.path, &bak) {
            Ok(()) => tracing::warn!(
                error = why,
                moved_to = %std::path::Path::new(&bak).display(),
                "unreadable worker records moved aside; workers they named are not reaped"
            ),
            Err(e) => tracing::warn!(
                error = why,
                rename_error = %e,
                path = %self.path.display(),
                "unreadable worker records, and they cannot be moved aside; ignoring them"
            ),
        }
    }
}

/// The process's start time in clock ticks since boot (`/proc/<pid>/stat` field 22); `None`
/// when it is gone, a zombie, or the platform has no procfs.
fn start_ticks(pid: u32) -> Option<u64> {
    capt_hook_proto::procfs::stat(pid)
        .filter(|s| !s.zombie)
        .map(|s| s.start_ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host after a clean stop finds nothing to reap and leaves the file as it is (rewriting
    /// it was on every cold start's path); a record of a gone worker is cleared.
    #[test]
    fn reaping_rewrites_the_records_only_when_there_were_some() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("workers.json");
        std::fs::write(&path, "[]").unwrap();
        let before = std::fs::metadata(&path).unwrap().ino();
        Records::new(path.clone()).reap_leftovers();
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), before, "rewritten");

        // A pid that no process has: nothing to stop, but the record goes.
        std::fs::write(&path, r#"[{"pid":4294967295,"start_ticks":1}]"#).unwrap();
        Records::new(path.clone()).reap_leftovers();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[]");
    }

    /// Records that do not parse are kept as `workers.json.bak` and replaced by empty ones.
    #[test]
    fn corrupt_records_are_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("workers.json");
        std::fs::write(&path, "[{\"pid\": 12, \"start").unwrap();
        std::fs::write(dir.path().join("workers.json.bak"), "older").unwrap();
        Records::new(path.clone()).reap_leftovers();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("workers.json.bak")).unwrap(),
            "[{\"pid\": 12, \"start"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[]");
    }

    #[test]
    fn own_start_time_is_readable() {
        assert!(start_ticks(std::process::id()).is_some());
        assert!(start_ticks(u32::MAX).is_none());
    }
}

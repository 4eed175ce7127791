//! Ledger rows on their way into SQLite. The writer appends each batch's rows to its own spool
//! file before it touches the ledger and empties the file once they are committed, so rows
//! survive what SQLite cannot absorb at that moment: a lock held past the busy timeout, a
//! ledger that fails to open, or the process ending mid-write (a worker retired with SIGTERM
//! gets one second to flush). A spool whose owner is gone is imported by the next writer that
//! reaches the ledger, in any process; inserts are idempotent, so a row imported twice is kept
//! once.
//!
//! Each process owns one file, `<db>.pending/<pid>-<nanos>.jsonl`, and holds an exclusive lock
//! on it while it lives: a file whose lock can be taken has no owner. The file is locked under a
//! temporary name and only then renamed to `.jsonl`, so no importer can take a file its owner
//! has not locked yet.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::entry::NewDecision;

/// One spooled row (the ledger's columns, `action` as written).
#[derive(Serialize, Deserialize)]
struct Row {
    ts_ms: u64,
    session_id: String,
    kind: String,
    source_file: String,
    event: String,
    action: String,
    tool_name: Option<String>,
    tool_digest: Option<String>,
    event_uuid: Option<String>,
    message: Option<String>,
    detail_json: String,
}

impl Row {
    fn of(d: &NewDecision) -> Row {
        Row {
            ts_ms: d.ts_ms,
            session_id: d.session_id.clone(),
            kind: d.kind.clone(),
            source_file: d.source_file.clone(),
            event: d.event.clone(),
            action: d.action.to_owned(),
            tool_name: d.tool_name.clone(),
            tool_digest: d.tool_digest.clone(),
            event_uuid: d.event_uuid.clone(),
            message: d.message.clone(),
            detail_json: d.detail_json.clone(),
        }
    }

    fn decision(self) -> Option<NewDecision> {
        let action = ["allow", "block", "warn", "nudge", "note"]
            .into_iter()
            .find(|a| *a == self.action)?;
        Some(NewDecision {
            ts_ms: self.ts_ms,
            session_id: self.session_id,
            kind: self.kind,
            source_file: self.source_file,
            event: self.event,
            action,
            tool_name: self.tool_name,
            tool_digest: self.tool_digest,
            event_uuid: self.event_uuid,
            message: self.message,
            detail_json: self.detail_json,
        })
    }
}

/// The spool directory of a ledger.
pub fn dir_of(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".pending");
    db.with_file_name(name)
}

/// This process's spool file, locked for as long as it is open.
#[derive(Debug)]
pub struct Spool {
    dir: PathBuf,
    path: PathBuf,
    file: File,
    /// Rows written and not yet known to be committed.
    holds_rows: bool,
}

impl Spool {
    /// Creates and locks this process's spool file next to the ledger at `db`.
    pub fn create(db: &Path) -> std::io::Result<Spool> {
        let dir = dir_of(db);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let stem = format!("{}-{nanos}", std::process::id());
        let temp = dir.join(format!("{stem}.new"));
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.lock()?;
        let path = dir.join(format!("{stem}.jsonl"));
        std::fs::rename(&temp, &path)?;
        Ok(Spool {
            dir,
            path,
            file,
            holds_rows: false,
        })
    }

    /// Appends rows (one write, so a crash leaves at most one partial last line).
    pub fn append(&mut self, rows: &[NewDecision]) -> std::io::Result<()> {
        let mut buf = String::new();
        for r in rows {
            buf.push_str(&serde_json::to_string(&Row::of(r)).map_err(std::io::Error::other)?);
            buf.push('\n');
        }
        self.file.write_all(buf.as_bytes())?;
        self.holds_rows = true;
        Ok(())
    }

    /// True while rows written here may not be in the ledger yet.
    pub fn holds_rows(&self) -> bool {
        self.holds_rows
    }

    /// Every row in this spool, oldest first.
    pub fn rows(&mut self) -> std::io::Result<Vec<NewDecision>> {
        self.file.rewind()?;
        Ok(read_rows(&self.file))
    }

    /// Empties the spool: its rows are committed.
    pub fn clear(&mut self) -> std::io::Result<()> {
        self.file.set_len(0)?;
        self.holds_rows = false;
        Ok(())
    }

    /// Spool files of processes that are gone, each locked while the caller holds it.
    pub fn orphans(&self) -> Vec<Orphan> {
        orphans(&self.dir, Some(&self.path))
    }

    /// This spool's file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The spool files in `dir` (see [`dir_of`]) whose process is gone, `own` excepted, each
/// locked while the caller holds it.
pub fn orphans(dir: &Path, own: Option<&Path>) -> Vec<Orphan> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if Some(path.as_path()) == own || path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let Ok(file) = OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&path)
        else {
            continue;
        };
        if file.try_lock().is_ok() {
            out.push(Orphan { path, file });
        }
    }
    out
}

/// A dead process's spool, locked by us.
#[derive(Debug)]
pub struct Orphan {
    path: PathBuf,
    file: File,
}

impl Orphan {
    /// Its rows.
    pub fn rows(&self) -> Vec<NewDecision> {
        read_rows(&self.file)
    }

    /// Removes it once its rows are committed.
    pub fn remove(self) -> std::io::Result<()> {
        std::fs::remove_file(&self.path)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The rows of a spool; a line cut short by a crash, or not a row, is skipped.
fn read_rows(file: &File) -> Vec<NewDecision> {
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str::<Row>(&l).ok())
        .filter_map(Row::decision)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str) -> NewDecision {
        NewDecision {
            ts_ms: 5,
            session_id: "s".into(),
            kind: kind.into(),
            source_file: String::new(),
            event: "Stop".into(),
            action: "block",
            tool_name: None,
            tool_digest: None,
            event_uuid: None,
            message: Some("m".into()),
            detail_json: "{}".into(),
        }
    }

    #[test]
    fn a_live_spool_is_never_an_orphan_and_a_dead_ones_rows_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("decisions.db");
        let mut mine = Spool::create(&db).unwrap();
        let mut other = Spool::create(&db).unwrap();
        other.append(&[row("a"), row("b")]).unwrap();
        // A crash mid-write leaves a partial line: skipped, the rest kept.
        other.file.write_all(b"{\"ts_ms\": 7, \"sess").unwrap();
        assert!(
            mine.orphans().is_empty(),
            "a live process's spool was taken"
        );
        drop(other);
        let orphans = mine.orphans();
        assert_eq!(orphans.len(), 1);
        let kinds: Vec<String> = orphans[0].rows().into_iter().map(|r| r.kind).collect();
        assert_eq!(kinds, ["a", "b"]);
        // Locked by us now: no other importer takes it meanwhile.
        let third = Spool::create(&db).unwrap();
        assert!(
            third
                .orphans()
                .iter()
                .all(|o| o.path() != orphans[0].path())
        );
        for o in orphans {
            o.remove().unwrap();
        }
        assert!(mine.orphans().is_empty());

        mine.append(&[row("c")]).unwrap();
        assert!(mine.holds_rows());
        assert_eq!(mine.rows().unwrap().len(), 1);
        mine.clear().unwrap();
        assert!(!mine.holds_rows());
        assert!(mine.rows().unwrap().is_empty());
        mine.append(&[row("d")]).unwrap();
        assert_eq!(mine.rows().unwrap()[0].kind, "d");
    }
}

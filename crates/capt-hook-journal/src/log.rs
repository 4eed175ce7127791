//! Session logs: `<log dir>/sessions/<session>.jsonl`, one JSON [`LogLine`] per event, rotated
//! to `<session>.1.jsonl` past a size. Only the journal's writer thread appends.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::entry::LogLine;

/// The directory of session logs under a log directory.
pub fn sessions_dir(log_dir: &Path) -> PathBuf {
    log_dir.join("sessions")
}

/// A session id as a file name: characters outside `[A-Za-z0-9._-]` become `_`, so an id can
/// never leave the directory; empty, `.` and `..` become `unknown`.
pub fn file_stem(session: &str) -> String {
    let stem: String = session
        .chars()
        .take(128)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.is_empty() || stem.chars().all(|c| c == '.') {
        "unknown".to_owned()
    } else {
        stem
    }
}

/// The log file of a session.
pub fn session_file(log_dir: &Path, session: &str) -> PathBuf {
    sessions_dir(log_dir).join(format!("{}.jsonl", file_stem(session)))
}

/// Appends lines to a session's log, first moving a log past `max_bytes` aside to
/// `<session>.1.jsonl` (replacing the previous one).
pub fn append(
    log_dir: &Path,
    session: &str,
    lines: &[String],
    max_bytes: u64,
) -> std::io::Result<()> {
    let dir = sessions_dir(log_dir);
    let path = session_file(log_dir, session);
    // The file's size, which also says whether the directory exists: it is created only when
    // missing, not on every event of a worker.
    match std::fs::metadata(&path) {
        Ok(m) if m.len() > max_bytes => {
            std::fs::rename(&path, dir.join(format!("{}.1.jsonl", file_stem(session))))?;
        }
        Ok(_) => {}
        Err(_) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?,
    }
    let mut buf = String::new();
    for line in lines {
        buf.push_str(line);
        buf.push('\n');
    }
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        // A symlink planted at a log's path is refused, not written through.
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&path)?;
    // One write per batch: lines of concurrent writers (two workers, one session) never
    // interleave mid-line.
    f.write_all(buf.as_bytes())
}

/// The session logs in a log directory, newest first: (session, path).
pub fn list(log_dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(sessions_dir(log_dir))? {
        let entry = entry?;
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".jsonl") else {
            continue;
        };
        if stem.ends_with(".1") {
            continue;
        }
        let modified = entry.metadata().and_then(|m| m.modified()).ok();
        found.push((modified, stem.to_owned(), path));
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(found.into_iter().map(|(_, s, p)| (s, p)).collect())
}

/// Removes session logs (and their rotated parts) not written to for `max_age`; returns how
/// many. A session that old is over: its transcript is all that is left of it.
pub fn prune(log_dir: &Path, max_age: std::time::Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(sessions_dir(log_dir)) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > max_age);
        let ours = path.extension().is_some_and(|e| e == "jsonl");
        if old && ours && std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// One line of a log file read back: the parsed line, or the raw text when it does not parse
/// (a line from another build, a torn write).
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    /// A well-formed line.
    Line(Box<LogLine>),
    /// Anything else, verbatim.
    Raw(String),
}

/// Reads every line of a log file (the rotated-away part first when there is one).
pub fn read(path: &Path) -> std::io::Result<Vec<Read>> {
    let mut out = Vec::new();
    let rotated = path.with_extension("1.jsonl");
    if rotated.exists() {
        read_into(&File::open(&rotated)?, &mut out)?;
    }
    read_into(&File::open(path)?, &mut out)?;
    Ok(out)
}

/// Reads lines from `f` into `out`.
pub fn read_into(f: &File, out: &mut Vec<Read>) -> std::io::Result<()> {
    for line in BufReader::new(f).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(parse(&line));
    }
    Ok(())
}

/// Parses one log line.
pub fn parse(line: &str) -> Read {
    match serde_json::from_str::<LogLine>(line) {
        Ok(l) => Read::Line(Box::new(l)),
        Err(_) => Read::Raw(line.to_owned()),
    }
}

/// A log line for people: time, event, tool and subject, verdict, the hooks that fired,
/// failures, timing.
pub fn render(l: &LogLine) -> String {
    let mut s = format!("{} {}", l.ts, l.event);
    if let Some(tool) = &l.tool {
        s.push_str(&format!(" {tool}"));
    }
    if let Some(subject) = &l.subject {
        s.push_str(&format!(" {subject:?}"));
    }
    s.push_str(&format!(
        " -> {}",
        l.verdict.as_deref().unwrap_or("nothing")
    ));
    for f in &l.fired {
        match &f.message {
            Some(m) => s.push_str(&format!(" [{}: {} {m:?}]", f.hook, f.action)),
            None => s.push_str(&format!(" [{}: {}]", f.hook, f.action)),
        }
    }
    for e in &l.errors {
        s.push_str(&format!(" ERROR {e}"));
    }
    for j in &l.judge {
        let model = j
            .model
            .as_deref()
            .map(|m| format!("/{m}"))
            .unwrap_or_default();
        let cost = j.cost_usd.map(|c| format!(" ${c:.4}")).unwrap_or_default();
        match &j.error {
            None => s.push_str(&format!(
                " (judge {} {}{model} {} ms{cost})",
                j.hook, j.backend, j.latency_ms
            )),
            Some(e) => s.push_str(&format!(
                " (judge {} {}{model} FAILED after {} ms: {e})",
                j.hook, j.backend, j.latency_ms
            )),
        }
    }
    s.push_str(&format!(" ({:.2} ms", l.elapsed_ms));
    if l.exit != 0 {
        s.push_str(&format!(", exit {}", l.exit));
    }
    s.push(')');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_stay_inside_the_directory() {
        assert_eq!(file_stem("abc-123_x.y"), "abc-123_x.y");
        assert_eq!(file_stem("../../etc/passwd"), ".._.._etc_passwd");
        assert_eq!(file_stem(".."), "unknown");
        assert_eq!(file_stem(""), "unknown");
    }

    #[test]
    fn appends_rotate_past_the_limit_and_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let line = |i: usize| {
            format!(
                "{{\"ts\":\"t\",\"ts_ms\":{i},\"session\":\"s\",\"event\":\"Stop\",\"elapsed_ms\":0.5,\"exit\":0}}"
            )
        };
        for i in 0..5 {
            append(dir.path(), "s", &[line(i)], 150).unwrap();
        }
        let path = session_file(dir.path(), "s");
        assert!(
            path.with_extension("1.jsonl").exists(),
            "rotated past 150 bytes"
        );
        let read = read(&path).unwrap();
        let order: Vec<u64> = read
            .iter()
            .map(|r| match r {
                Read::Line(l) => l.ts_ms,
                Read::Raw(raw) => panic!("unparsed {raw}"),
            })
            .collect();
        // Lines 0 and 1 went with the rotation before last; the rest read in order.
        assert_eq!(order, [2, 3, 4]);
        append(dir.path(), "s", &["torn {".to_owned()], 1 << 20).unwrap();
        assert!(matches!(read_path_last(&path), Read::Raw(r) if r == "torn {"));
        assert_eq!(list(dir.path()).unwrap()[0].0, "s");
    }

    #[test]
    fn prune_removes_only_old_session_logs() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), "old", &["{}".into()], 1 << 20).unwrap();
        append(dir.path(), "new", &["{}".into()], 1 << 20).unwrap();
        let month = std::time::Duration::from_secs(31 * 86_400);
        let f = std::fs::File::options()
            .append(true)
            .open(session_file(dir.path(), "old"))
            .unwrap();
        f.set_modified(std::time::SystemTime::now() - month)
            .unwrap();
        assert_eq!(
            prune(dir.path(), std::time::Duration::from_secs(30 * 86_400)),
            1
        );
        assert!(!session_file(dir.path(), "old").exists());
        assert!(session_file(dir.path(), "new").exists());
    }

    fn read_path_last(path: &Path) -> Read {
        read(path).unwrap().pop().unwrap()
    }
}

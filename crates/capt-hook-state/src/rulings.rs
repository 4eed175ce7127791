//! The user's durable rulings: answers the user recorded once, outside any session, that stand
//! for later actions ("never post to #general", "the staging program may be restarted"). A
//! ticket rule (`user_ruled`) reads them as evidence, counting only those recorded before the
//! acting session started, so an agent cannot write itself a ruling mid-session.
//!
//! The seeds read these from another tool's notes; here they are one JSON object per line in
//! `<state root>/hooks/rulings.jsonl`:
//! `{"id": "c9b27c1", "text": "…", "tags": ["scope:durable"], "recorded": "2026-12-01T09:00:00Z"}`.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One ruling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ruling {
    /// Its identifier, named by `user_ruled = { ids = [...] }`.
    pub id: String,
    /// The user's words.
    pub text: String,
    /// Labels (`scope:durable`) a rule may require.
    #[serde(default)]
    pub tags: BTreeSet<String>,
    /// When it was recorded, RFC 3339 (`2026-12-01T09:00:00Z`).
    pub recorded: String,
}

impl Ruling {
    /// When it was recorded, in Unix milliseconds; `None` when `recorded` does not read as a
    /// time (such a ruling never counts: nothing shows it predates the session).
    pub fn recorded_ms(&self) -> Option<u64> {
        parse_time_ms(&self.recorded)
    }
}

/// A rulings file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RulingsError {
    /// The file exists but could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line is not a ruling.
    #[error("{path}:{line}: not a ruling: {why}")]
    Line {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
}

/// `<state root>/hooks/rulings.jsonl`.
pub fn rulings_path(state_root: &Path) -> PathBuf {
    state_root.join("hooks").join("rulings.jsonl")
}

/// The rulings in `path`, oldest line first; a missing file holds none. A line that is not a
/// ruling is an error naming it: a ticket check then denies rather than reading around it.
pub fn read_rulings(path: &Path) -> Result<Vec<Ruling>, RulingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(RulingsError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: Ruling = serde_json::from_str(line).map_err(|e| RulingsError::Line {
            path: path.to_owned(),
            line: i + 1,
            why: e.to_string(),
        })?;
        if r.recorded_ms().is_none() {
            return Err(RulingsError::Line {
                path: path.to_owned(),
                line: i + 1,
                why: format!("`recorded` is not an RFC 3339 time: {:?}", r.recorded),
            });
        }
        out.push(r);
    }
    Ok(out)
}

/// Appends `ruling` to `path`, creating the file and its directory.
pub fn append_ruling(path: &Path, ruling: &Ruling) -> Result<(), RulingsError> {
    let io = |source| RulingsError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let line = serde_json::to_string(ruling).map_err(|e| RulingsError::Line {
        path: path.to_owned(),
        line: 0,
        why: e.to_string(),
    })?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    writeln!(f, "{line}").map_err(io)
}

/// An RFC 3339 time (as transcripts and rulings write them) in Unix milliseconds.
pub fn parse_time_ms(text: &str) -> Option<u64> {
    let t: jiff::Timestamp = text.trim().parse().ok()?;
    u64::try_from(t.as_millisecond()).ok()
}

/// Unix milliseconds as RFC 3339.
pub fn format_time_ms(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rulings_round_trip_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = rulings_path(dir.path());
        assert_eq!(
            read_rulings(&path).unwrap(),
            Vec::new(),
            "no file, no rulings"
        );
        let r = Ruling {
            id: "c9b27c1".into(),
            text: "The staging program may be restarted.".into(),
            tags: ["scope:durable".to_owned()].into(),
            recorded: format_time_ms(1_700_000_000_000),
        };
        append_ruling(&path, &r).unwrap();
        let back = read_rulings(&path).unwrap();
        assert_eq!(back, vec![r.clone()]);
        assert_eq!(back[0].recorded_ms(), Some(1_700_000_000_000));

        std::fs::write(
            &path,
            format!("{}\n{{\"id\": 1}}\n", serde_json::to_string(&r).unwrap()),
        )
        .unwrap();
        let e = read_rulings(&path).unwrap_err().to_string();
        assert!(e.contains("rulings.jsonl:2: not a ruling"), "{e}");
        std::fs::write(
            &path,
            "{\"id\": \"a\", \"text\": \"t\", \"recorded\": \"yesterday\"}\n",
        )
        .unwrap();
        let e = read_rulings(&path).unwrap_err().to_string();
        assert!(e.contains(":1:") && e.contains("RFC 3339"), "{e}");
    }
}

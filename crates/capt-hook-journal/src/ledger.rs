//! The decision ledger: one SQLite row per delivered verdict, at `CAPT_HOOK_DECISIONS_DB`
//! (default `<state dir>/hooks/decisions.db`). WAL mode and a busy timeout, so several workers
//! and a reading `capt-hook decisions` share it without errors.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, params_from_iter};
use serde::Serialize;

use crate::entry::NewDecision;

pub use capt_hook_proto::env::CAPT_HOOK_DECISIONS_DB;

/// How long a writer or reader waits for another's lock before giving up.
const BUSY: Duration = Duration::from_secs(2);

/// The value `source` always has in rows this build writes.
pub const SOURCE: &str = "captain-hook";

/// The schema. `UNIQUE` plus `ON CONFLICT DO NOTHING` keeps a repeated write from doubling a
/// row (unlike `INSERT OR IGNORE`, a row that breaks the `CHECK` is still an error).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY,
    ts_ms INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    source TEXT NOT NULL,
    kind TEXT NOT NULL,
    source_file TEXT NOT NULL DEFAULT '',
    event TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('allow', 'block', 'warn', 'nudge', 'note')),
    tool_name TEXT,
    tool_digest TEXT,
    event_uuid TEXT,
    message TEXT,
    detail_json TEXT NOT NULL DEFAULT '{}',
    UNIQUE (session_id, ts_ms, source, kind, tool_digest)
);
CREATE INDEX IF NOT EXISTS decisions_session_ts ON decisions (session_id, ts_ms);
CREATE INDEX IF NOT EXISTS decisions_tool_digest ON decisions (tool_digest);
CREATE INDEX IF NOT EXISTS decisions_source_file ON decisions (source_file);
CREATE INDEX IF NOT EXISTS decisions_ts ON decisions (ts_ms);
";

/// A ledger that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// No ledger exists at the path (nothing has been recorded there yet).
    #[error(
        "no decision ledger at {0} yet (set {CAPT_HOOK_DECISIONS_DB} if the host writes elsewhere)"
    )]
    Missing(PathBuf),
    /// The directory could not be created.
    #[error("cannot create {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// SQLite refused.
    #[error("decision ledger {path}: {source}")]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
}

/// The ledger's path: `CAPT_HOOK_DECISIONS_DB`, else `<state dir>/hooks/decisions.db`.
pub fn default_path() -> PathBuf {
    match std::env::var_os(CAPT_HOOK_DECISIONS_DB).filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => capt_hook_state::state_root()
            .join("hooks")
            .join("decisions.db"),
    }
}

/// One recorded decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// Row id.
    pub id: i64,
    /// Unix milliseconds.
    pub ts_ms: i64,
    /// UTC time.
    pub ts: String,
    /// The session.
    pub session_id: String,
    /// Who wrote it (`captain-hook`).
    pub source: String,
    /// The hook's name.
    pub hook: String,
    /// Where the hook is defined.
    pub source_file: String,
    /// The event.
    pub event: String,
    /// `allow`, `block`, `warn`, `nudge` or `note`.
    pub action: String,
    /// The tool.
    pub tool_name: Option<String>,
    /// Digest of tool name and input.
    pub tool_digest: Option<String>,
    /// The tool call's id.
    pub event_uuid: Option<String>,
    /// What the hook said.
    pub message: Option<String>,
    /// Further facts.
    pub detail: serde_json::Value,
}

/// Which decisions to list; every field narrows.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Only this session.
    pub session: Option<String>,
    /// Only this hook.
    pub hook: Option<String>,
    /// Only this action.
    pub action: Option<String>,
    /// Only this event.
    pub event: Option<String>,
    /// At or after (Unix milliseconds).
    pub since_ms: Option<u64>,
    /// Before (Unix milliseconds).
    pub until_ms: Option<u64>,
    /// The newest this many (all when `None`).
    pub limit: Option<u64>,
}

/// An open ledger.
#[derive(Debug)]
pub struct Ledger {
    conn: Connection,
    path: PathBuf,
}

impl Ledger {
    /// Opens (creating when needed) the ledger for writing.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| LedgerError::Dir {
                    path: dir.to_path_buf(),
                    source,
                })?;
        }
        let sql = |source| LedgerError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(BUSY).map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sql)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sql)?;
        conn.execute_batch(SCHEMA).map_err(sql)?;
        Ok(Ledger {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Opens an existing ledger for reading.
    pub fn open_read(path: &Path) -> Result<Ledger, LedgerError> {
        if !path.exists() {
            return Err(LedgerError::Missing(path.to_path_buf()));
        }
        let sql = |source| LedgerError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql)?;
        conn.busy_timeout(BUSY).map_err(sql)?;
        Ok(Ledger {
            conn,
            path: path.to_path_buf(),
        })
    }

    fn err(&self, source: rusqlite::Error) -> LedgerError {
        LedgerError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Inserts rows in one transaction; returns how many were new.
    pub fn insert(&mut self, rows: &[NewDecision]) -> Result<usize, LedgerError> {
        let tx = self.conn.transaction().map_err(|e| LedgerError::Sqlite {
            path: self.path.clone(),
            source: e,
        })?;
        let mut added = 0;
        {
            let mut stmt = tx
                // The unique key treats NULL digests (events without a tool) as distinct, so
                // `NOT EXISTS … IS` keeps a replayed row (a spool imported twice) from doubling.
                .prepare_cached(
                    "INSERT INTO decisions (ts_ms, session_id, source, kind, \
                     source_file, event, action, tool_name, tool_digest, event_uuid, message, \
                     detail_json) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12 \
                     WHERE NOT EXISTS (SELECT 1 FROM decisions WHERE session_id = ?2 \
                     AND ts_ms = ?1 AND source = ?3 AND kind = ?4 AND tool_digest IS ?9) \
                     ON CONFLICT DO NOTHING",
                )
                .map_err(|e| LedgerError::Sqlite {
                    path: self.path.clone(),
                    source: e,
                })?;
            for r in rows {
                added += stmt
                    .execute(rusqlite::params![
                        i64::try_from(r.ts_ms).unwrap_or(i64::MAX),
                        r.session_id,
                        SOURCE,
                        r.kind,
                        r.source_file,
                        r.event,
                        r.action,
                        r.tool_name,
                        r.tool_digest,
                        r.event_uuid,
                        r.message,
                        r.detail_json,
                    ])
                    .map_err(|e| LedgerError::Sqlite {
                        path: self.path.clone(),
                        source: e,
                    })?;
            }
        }
        tx.commit().map_err(|e| LedgerError::Sqlite {
            path: self.path.clone(),
            source: e,
        })?;
        Ok(added)
    }

    /// The decisions `q` selects, oldest first (the newest `limit` when limited).
    pub fn query(&self, q: &Query) -> Result<Vec<Decision>, LedgerError> {
        let mut clauses = Vec::new();
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        for (column, value) in [
            ("session_id", &q.session),
            ("kind", &q.hook),
            ("action", &q.action),
            ("event", &q.event),
        ] {
            if let Some(v) = value {
                args.push(v.clone().into());
                clauses.push(format!("{column} = ?{}", args.len()));
            }
        }
        for (op, value) in [(">=", q.since_ms), ("<", q.until_ms)] {
            if let Some(v) = value {
                args.push(i64::try_from(v).unwrap_or(i64::MAX).into());
                clauses.push(format!("ts_ms {op} ?{}", args.len()));
            }
        }
        let filter = if clauses.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", clauses.join(" AND "))
        };
        let limit = match q.limit {
            Some(n) => format!("LIMIT {n}"),
            None => String::new(),
        };
        let sql = format!(
            "SELECT * FROM (SELECT id, ts_ms, session_id, source, kind, source_file, event, \
             action, tool_name, tool_digest, event_uuid, message, detail_json FROM decisions \
             {filter} ORDER BY ts_ms DESC, id DESC {limit}) ORDER BY ts_ms, id"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params_from_iter(args), |row| {
                let ts_ms: i64 = row.get(1)?;
                let detail: String = row.get(12)?;
                Ok(Decision {
                    id: row.get(0)?,
                    ts_ms,
                    ts: crate::time::utc(u64::try_from(ts_ms).unwrap_or(0)),
                    session_id: row.get(2)?,
                    source: row.get(3)?,
                    hook: row.get(4)?,
                    source_file: row.get(5)?,
                    event: row.get(6)?,
                    action: row.get(7)?,
                    tool_name: row.get(8)?,
                    tool_digest: row.get(9)?,
                    event_uuid: row.get(10)?,
                    message: row.get(11)?,
                    detail: serde_json::from_str(&detail)
                        .unwrap_or(serde_json::Value::String(detail)),
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// The ledger's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(session: &str, kind: &str, action: &'static str, ts_ms: u64) -> NewDecision {
        NewDecision {
            ts_ms,
            session_id: session.into(),
            kind: kind.into(),
            source_file: "hooks.toml:3".into(),
            event: "PreToolUse".into(),
            action,
            tool_name: Some("Bash".into()),
            tool_digest: Some("abc".into()),
            event_uuid: Some("toolu_1".into()),
            message: Some("no".into()),
            detail_json: "{\"elapsed_ms\":1.5}".into(),
        }
    }

    #[test]
    fn writes_once_and_queries_by_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/decisions.db");
        assert!(matches!(
            Ledger::open_read(&path),
            Err(LedgerError::Missing(_))
        ));
        let mut ledger = Ledger::open(&path).unwrap();
        let rows = [
            row("s1", "stash", "block", 1000),
            row("s1", "find", "note", 2000),
            row("s2", "stash", "block", 3000),
        ];
        assert_eq!(ledger.insert(&rows).unwrap(), 3);
        // The unique key makes a repeated write a no-op, a row without a tool digest too.
        assert_eq!(ledger.insert(&rows[..1]).unwrap(), 0);
        let mut stop = row("s1", "gate", "block", 2500);
        stop.tool_digest = None;
        assert_eq!(ledger.insert(&[stop.clone()]).unwrap(), 1);
        assert_eq!(ledger.insert(&[stop]).unwrap(), 0);
        let mode: String = ledger
            .conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");

        let reader = Ledger::open_read(&path).unwrap();
        let all = reader.query(&Query::default()).unwrap();
        assert_eq!(
            all.iter().map(|d| d.ts_ms).collect::<Vec<_>>(),
            [1000, 2000, 2500, 3000]
        );
        assert_eq!(all[0].detail["elapsed_ms"], 1.5);
        let q = |f: fn(&mut Query)| {
            let mut q = Query::default();
            f(&mut q);
            reader
                .query(&q)
                .unwrap()
                .iter()
                .map(|d| d.ts_ms)
                .collect::<Vec<_>>()
        };
        assert_eq!(q(|q| q.session = Some("s1".into())), [1000, 2000, 2500]);
        assert_eq!(q(|q| q.hook = Some("stash".into())), [1000, 3000]);
        assert_eq!(q(|q| q.action = Some("note".into())), [2000]);
        assert_eq!(q(|q| q.since_ms = Some(2000)), [2000, 2500, 3000]);
        assert_eq!(q(|q| q.until_ms = Some(2000)), [1000]);
        assert_eq!(q(|q| q.limit = Some(2)), [2500, 3000]);
        assert!(q(|q| q.event = Some("Stop".into())).is_empty());
    }

    #[test]
    fn a_bad_action_is_refused_by_the_schema() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::open(&dir.path().join("d.db")).unwrap();
        let err = ledger.insert(&[row("s", "h", "explode", 1)]).unwrap_err();
        assert!(err.to_string().contains("CHECK"), "{err}");
    }
}

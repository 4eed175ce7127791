//! The decision ledger: one SQLite row per delivered verdict, at `CAPT_HOOK_DECISIONS_DB`
//! (default `<state dir>/hooks/decisions.db`). WAL mode and a busy timeout, so several workers
//! and a reading `capt-hook decisions` share it without errors.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension as _, params_from_iter};
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

/// Schema version 2 adds `judge_calls`: one row per call an LLM hook made to its judge, tied to
/// the event's decision rows by `session_id`, `ts_ms` and `hook` (= `decisions.kind`). Added
/// with `IF NOT EXISTS`, so a version-1 ledger gains the table and keeps every row.
const JUDGE_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS judge_calls (
    id INTEGER PRIMARY KEY,
    ts_ms INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    event TEXT NOT NULL,
    hook TEXT NOT NULL,
    tool_digest TEXT,
    seq INTEGER NOT NULL,
    backend TEXT NOT NULL,
    model TEXT,
    latency_ms INTEGER NOT NULL,
    cost_usd REAL,
    ok INTEGER NOT NULL CHECK (ok IN (0, 1)),
    error TEXT,
    UNIQUE (session_id, ts_ms, hook, seq)
);
CREATE INDEX IF NOT EXISTS judge_calls_event ON judge_calls (session_id, ts_ms, hook);
CREATE INDEX IF NOT EXISTS judge_calls_ts ON judge_calls (ts_ms);
";

/// Schema version 3 chains the decisions (see [`crate::chain`]): each row gains its link and
/// hash, and `chain` records what the first row links to (the head of the file it was rotated
/// from). Rows already there keep no hash; `verify` reports them as unchained.
const CHAIN_SCHEMA: &str = "
ALTER TABLE decisions ADD COLUMN prev_hash TEXT;
ALTER TABLE decisions ADD COLUMN row_hash TEXT;
";

/// The chain's own facts, key by key (`anchor`, `anchor_file`).
const CHAIN_META: &str =
    "CREATE TABLE IF NOT EXISTS chain (key TEXT PRIMARY KEY, value TEXT NOT NULL);";

/// The schema version this build writes (`PRAGMA user_version`; ledgers before judge calls
/// were 0, before the hash chain 2).
pub const SCHEMA_VERSION: i64 = 3;

/// The columns a decision row is hashed over, in [`crate::chain::RowContent`] order.
const CONTENT: &str = "ts_ms, session_id, source, kind, source_file, event, action, tool_name, \
                       tool_digest, event_uuid, message, detail_json";

/// A ledger that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// Rotation would overwrite an existing file.
    #[error("will not rotate the decision ledger into {0}: the file exists")]
    ArchiveExists(PathBuf),
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
    /// The hash of the row before it (rows written before the chain have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
    /// This row's hash over its content and `prev_hash`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_hash: Option<String>,
    /// The calls the hook made to its judge for this event (LLM hooks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub judge: Vec<JudgeCallRow>,
}

/// One recorded judge call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeCallRow {
    /// The event's arrival (Unix milliseconds).
    pub ts_ms: i64,
    /// UTC time.
    pub ts: String,
    /// The session.
    pub session_id: String,
    /// The event.
    pub event: String,
    /// The hook that asked.
    pub hook: String,
    /// The backend.
    pub backend: String,
    /// The model, when known.
    pub model: Option<String>,
    /// Wall-clock time of the call.
    pub latency_ms: i64,
    /// What it cost, when the backend says.
    pub cost_usd: Option<f64>,
    /// A verdict came back.
    pub ok: bool,
    /// Why none came.
    pub error: Option<String>,
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

impl Query {
    /// The `WHERE` clause (empty when nothing narrows) and its arguments: each set field of
    /// `columns` must equal its column, and the time bounds apply to `ts_ms`.
    fn filter(&self, columns: &[(&str, &Option<String>)]) -> (String, Vec<rusqlite::types::Value>) {
        let mut clauses = Vec::new();
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        for (column, value) in columns {
            if let Some(v) = value {
                args.push(v.clone().into());
                clauses.push(format!("{column} = ?{}", args.len()));
            }
        }
        for (op, value) in [(">=", self.since_ms), ("<", self.until_ms)] {
            if let Some(v) = value {
                args.push(i64::try_from(v).unwrap_or(i64::MAX).into());
                clauses.push(format!("ts_ms {op} ?{}", args.len()));
            }
        }
        if clauses.is_empty() {
            (String::new(), args)
        } else {
            (format!("WHERE {}", clauses.join(" AND ")), args)
        }
    }
}

/// True when `schema.table` has `column`.
fn has_column(
    conn: &Connection,
    schema: &str,
    table: &str,
    column: &str,
) -> Result<bool, rusqlite::Error> {
    conn.query_row(
        "SELECT count(*) FROM pragma_table_info(?1, ?2) WHERE name = ?3",
        [table, schema, column],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// The link the next decision row carries: the last row's hash; when the last row has none
/// (or there are no rows), the recorded anchor, else [`crate::chain::GENESIS`].
fn head(conn: &Connection) -> Result<String, rusqlite::Error> {
    let last: Option<Option<String>> = conn
        .query_row(
            "SELECT row_hash FROM decisions ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    match last {
        Some(Some(hash)) => Ok(hash),
        _ => Ok(anchor(conn)?.0),
    }
}

/// The chain's anchor and the file it came from.
fn anchor(conn: &Connection) -> Result<(String, Option<String>), rusqlite::Error> {
    let get = |key: &str| -> Result<Option<String>, rusqlite::Error> {
        conn.query_row("SELECT value FROM chain WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()
    };
    let has_meta: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'chain'",
        [],
        |r| r.get(0),
    )?;
    if has_meta == 0 {
        return Ok((crate::chain::GENESIS.to_owned(), None));
    }
    Ok((
        get("anchor")?.unwrap_or_else(|| crate::chain::GENESIS.to_owned()),
        get("anchor_file")?,
    ))
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
        let mut conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(BUSY).map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sql)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sql)?;
        conn.execute_batch(SCHEMA).map_err(sql)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql)?;
        if version < SCHEMA_VERSION {
            // Under the write lock, with the version read again: two writers opening an old
            // ledger at once must not both add the columns.
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(sql)?;
            let version: i64 = tx
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .map_err(sql)?;
            if version < SCHEMA_VERSION {
                tx.execute_batch(JUDGE_SCHEMA).map_err(sql)?;
                if !has_column(&tx, "main", "decisions", "row_hash").map_err(sql)? {
                    tx.execute_batch(CHAIN_SCHEMA).map_err(sql)?;
                }
                tx.execute_batch(CHAIN_META).map_err(sql)?;
                tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                    .map_err(sql)?;
            }
            tx.commit().map_err(sql)?;
        }
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
        self.insert_all(rows, &[]).map(|(d, _)| d)
    }

    /// Inserts judge-call rows in one transaction; returns how many were new.
    pub fn insert_judge_calls(
        &mut self,
        rows: &[crate::judge::NewJudgeCall],
    ) -> Result<usize, LedgerError> {
        self.insert_all(&[], rows).map(|(_, j)| j)
    }

    /// Inserts decisions and the judge calls behind them in one transaction, so a reader never
    /// sees a decision without its calls; returns how many of each were new.
    pub fn insert_all(
        &mut self,
        decisions: &[NewDecision],
        judge: &[crate::judge::NewJudgeCall],
    ) -> Result<(usize, usize), LedgerError> {
        let path = self.path.clone();
        let sql = move |source| LedgerError::Sqlite {
            path: path.clone(),
            source,
        };
        // Immediate: the chain's head is read and extended in one write lock, so two writers
        // never link their rows to the same predecessor.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(&sql)?;
        let (mut added, mut judged) = (0, 0);
        if !decisions.is_empty() {
            let mut prev = head(&tx).map_err(&sql)?;
            let mut stmt = tx
                // The unique key treats NULL digests (events without a tool) as distinct, so
                // `NOT EXISTS … IS` keeps a replayed row (a spool imported twice) from doubling.
                .prepare_cached(
                    "INSERT INTO decisions (ts_ms, session_id, source, kind, \
                     source_file, event, action, tool_name, tool_digest, event_uuid, message, \
                     detail_json, prev_hash, row_hash) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, \
                     ?9, ?10, ?11, ?12, ?13, ?14 \
                     WHERE NOT EXISTS (SELECT 1 FROM decisions WHERE session_id = ?2 \
                     AND ts_ms = ?1 AND source = ?3 AND kind = ?4 AND tool_digest IS ?9) \
                     ON CONFLICT DO NOTHING",
                )
                .map_err(&sql)?;
            for r in decisions {
                let ts_ms = i64::try_from(r.ts_ms).unwrap_or(i64::MAX);
                let hash = crate::chain::row_hash(
                    &prev,
                    &crate::chain::RowContent {
                        ts_ms,
                        session_id: &r.session_id,
                        source: SOURCE,
                        kind: &r.kind,
                        source_file: &r.source_file,
                        event: &r.event,
                        action: r.action,
                        tool_name: r.tool_name.as_deref(),
                        tool_digest: r.tool_digest.as_deref(),
                        event_uuid: r.event_uuid.as_deref(),
                        message: r.message.as_deref(),
                        detail_json: &r.detail_json,
                    },
                );
                let n = stmt
                    .execute(rusqlite::params![
                        ts_ms,
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
                        prev,
                        hash,
                    ])
                    .map_err(&sql)?;
                if n > 0 {
                    added += n;
                    prev = hash;
                }
            }
        }
        if !judge.is_empty() {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO judge_calls (ts_ms, session_id, event, hook, tool_digest, seq, \
                     backend, model, latency_ms, cost_usd, ok, error) VALUES (?1, ?2, ?3, ?4, \
                     ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT DO NOTHING",
                )
                .map_err(&sql)?;
            for r in judge {
                judged += stmt
                    .execute(rusqlite::params![
                        i64::try_from(r.ts_ms).unwrap_or(i64::MAX),
                        r.session_id,
                        r.event,
                        r.call.hook,
                        r.tool_digest,
                        r.seq,
                        r.call.backend,
                        r.call.model,
                        i64::try_from(r.call.latency_ms).unwrap_or(i64::MAX),
                        r.call.cost_usd,
                        r.call.ok,
                        r.call.error,
                    ])
                    .map_err(&sql)?;
            }
        }
        tx.commit().map_err(&sql)?;
        Ok((added, judged))
    }

    /// True when the ledger has the `judge_calls` table (a version-1 ledger no writer of this
    /// build has opened yet does not).
    fn has_judge_calls(&self) -> Result<bool, LedgerError> {
        self.conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'judge_calls'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    /// The judge calls `q` selects (its `hook`, `session`, `event` and time bounds; `action`
    /// does not apply), oldest first (the newest `limit` when limited).
    pub fn judge_calls(&self, q: &Query) -> Result<Vec<JudgeCallRow>, LedgerError> {
        if !self.has_judge_calls()? {
            return Ok(Vec::new());
        }
        let (filter, args) = q.filter(&[
            ("session_id", &q.session),
            ("hook", &q.hook),
            ("event", &q.event),
        ]);
        let limit = q.limit.map(|n| format!("LIMIT {n}")).unwrap_or_default();
        self.judge_rows(
            &format!(
                "SELECT * FROM (SELECT ts_ms, session_id, event, hook, backend, model, \
                 latency_ms, cost_usd, ok, error, id, seq FROM judge_calls {filter} \
                 ORDER BY ts_ms DESC, id DESC {limit}) ORDER BY ts_ms, id"
            ),
            args,
        )
    }

    fn judge_rows(
        &self,
        sql: &str,
        args: Vec<rusqlite::types::Value>,
    ) -> Result<Vec<JudgeCallRow>, LedgerError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params_from_iter(args), |row| {
                let ts_ms: i64 = row.get(0)?;
                Ok(JudgeCallRow {
                    ts_ms,
                    ts: crate::time::utc(u64::try_from(ts_ms).unwrap_or(0)),
                    session_id: row.get(1)?,
                    event: row.get(2)?,
                    hook: row.get(3)?,
                    backend: row.get(4)?,
                    model: row.get(5)?,
                    latency_ms: row.get(6)?,
                    cost_usd: row.get(7)?,
                    ok: row.get(8)?,
                    error: row.get(9)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// The decisions `q` selects, oldest first (the newest `limit` when limited), each with
    /// the judge calls its hook made for that event.
    pub fn query(&self, q: &Query) -> Result<Vec<Decision>, LedgerError> {
        let (filter, args) = q.filter(&[
            ("session_id", &q.session),
            ("kind", &q.hook),
            ("action", &q.action),
            ("event", &q.event),
        ]);
        let limit = match q.limit {
            Some(n) => format!("LIMIT {n}"),
            None => String::new(),
        };
        let chain = self.chain_columns()?;
        let sql = format!(
            "SELECT * FROM (SELECT id, ts_ms, session_id, source, kind, source_file, event, \
             action, tool_name, tool_digest, event_uuid, message, detail_json, {chain} \
             FROM decisions {filter} ORDER BY ts_ms DESC, id DESC {limit}) ORDER BY ts_ms, id"
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
                    prev_hash: row.get(13)?,
                    row_hash: row.get(14)?,
                    judge: Vec::new(),
                })
            })
            .map_err(|e| self.err(e))?;
        let mut decisions = rows
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        if self.has_judge_calls()? {
            for d in &mut decisions {
                d.judge = self.judge_rows(
                    "SELECT ts_ms, session_id, event, hook, backend, model, latency_ms, \
                     cost_usd, ok, error FROM judge_calls WHERE session_id = ?1 AND ts_ms = ?2 \
                     AND hook = ?3 ORDER BY seq",
                    vec![
                        d.session_id.clone().into(),
                        d.ts_ms.into(),
                        d.hook.clone().into(),
                    ],
                )?;
            }
        }
        Ok(decisions)
    }

    /// The ledger's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The chain columns to select: themselves, or `NULL`s in a ledger no writer of this build
    /// has opened yet.
    fn chain_columns(&self) -> Result<&'static str, LedgerError> {
        Ok(
            if has_column(&self.conn, "main", "decisions", "row_hash").map_err(|e| self.err(e))? {
                "prev_hash, row_hash"
            } else {
                "NULL, NULL"
            },
        )
    }

    /// Checks this file's hash chain: every row, in the order written.
    pub fn verify(&self) -> Result<crate::chain::FileReport, LedgerError> {
        let e = |e| self.err(e);
        let chain = self.chain_columns()?;
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT id, {CONTENT}, {chain} FROM decisions ORDER BY id"
            ))
            .map_err(e)?;
        let rows = stmt
            .query_map([], |r| {
                let prev_hash: Option<String> = r.get(13)?;
                let computed = match &prev_hash {
                    None => None,
                    Some(prev) => Some(crate::chain::row_hash(
                        prev,
                        &crate::chain::RowContent {
                            ts_ms: r.get(1)?,
                            session_id: &r.get::<_, String>(2)?,
                            source: &r.get::<_, String>(3)?,
                            kind: &r.get::<_, String>(4)?,
                            source_file: &r.get::<_, String>(5)?,
                            event: &r.get::<_, String>(6)?,
                            action: &r.get::<_, String>(7)?,
                            tool_name: r.get::<_, Option<String>>(8)?.as_deref(),
                            tool_digest: r.get::<_, Option<String>>(9)?.as_deref(),
                            event_uuid: r.get::<_, Option<String>>(10)?.as_deref(),
                            message: r.get::<_, Option<String>>(11)?.as_deref(),
                            detail_json: &r.get::<_, String>(12)?,
                        },
                    )),
                };
                Ok(crate::chain::StoredRow {
                    id: r.get(0)?,
                    computed,
                    prev_hash,
                    row_hash: r.get(14)?,
                })
            })
            .map_err(e)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(e)?;
        let (anchor, anchor_file) = anchor(&self.conn).map_err(e)?;
        Ok(crate::chain::walk(&rows, &anchor, anchor_file))
    }

    /// Rotation: moves every row (decisions and judge calls) into a new ledger file at
    /// `archive`, in one transaction, and anchors this file's chain to the moved rows' head,
    /// so the next row links to the last row of the archive. Writers keep this file open and
    /// never see a half-moved ledger. Returns how many decisions moved.
    pub fn rotate(&mut self, archive: &Path) -> Result<u64, LedgerError> {
        if archive.exists() {
            return Err(LedgerError::ArchiveExists(archive.to_path_buf()));
        }
        drop(Ledger::open(archive)?);
        let path = self.path.clone();
        let sql = move |source| LedgerError::Sqlite {
            path: path.clone(),
            source,
        };
        self.conn
            .execute("ATTACH DATABASE ?1 AS archive", [archive.to_string_lossy()])
            .map_err(&sql)?;
        let moved = (|| -> Result<u64, rusqlite::Error> {
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let head = head(&tx)?;
            let moved = tx.execute(
                &format!(
                    "INSERT INTO archive.decisions (id, {CONTENT}, prev_hash, row_hash) \
                     SELECT id, {CONTENT}, prev_hash, row_hash FROM main.decisions ORDER BY id"
                ),
                [],
            )?;
            tx.execute_batch(
                "INSERT INTO archive.judge_calls SELECT * FROM main.judge_calls ORDER BY id;
                 INSERT INTO archive.chain SELECT * FROM main.chain;
                 DELETE FROM main.decisions;
                 DELETE FROM main.judge_calls;",
            )?;
            // Beside the ledger: its name, so the pair can move together; elsewhere: the path.
            let file = match (archive.parent(), archive.file_name()) {
                (Some(dir), Some(name)) if Some(dir) == self.path.parent() => {
                    name.to_string_lossy().into_owned()
                }
                _ => archive.to_string_lossy().into_owned(),
            };
            tx.execute(
                "INSERT INTO main.chain (key, value) VALUES ('anchor', ?1), ('anchor_file', ?2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [head, file],
            )?;
            tx.commit()?;
            Ok(moved as u64)
        })();
        let detached = self.conn.execute("DETACH DATABASE archive", []);
        let moved = moved.map_err(&sql)?;
        detached.map_err(&sql)?;
        Ok(moved)
    }
}

/// How a ledger file joins the file it was rotated from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "link")]
pub enum Link {
    /// It starts the chain (no predecessor recorded).
    Genesis,
    /// The predecessor's last row is the one this file's first row links to.
    Joined,
    /// The recorded predecessor is not there (moved away or shipped elsewhere): this file is
    /// checked from its anchor, the predecessor not at all.
    Missing,
    /// The predecessor's last row is not the one this file links to: rows were cut from the
    /// predecessor's end, or it is another file.
    Mismatch {
        /// The predecessor's head.
        found: String,
    },
    /// The recorded predecessor is this file or one already followed (or the chain of files
    /// is past 10,000): the links were edited.
    Cycle,
}

/// One file's part in [`verify_files`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileCheck {
    /// The file.
    pub path: PathBuf,
    /// Its own chain.
    #[serde(flatten)]
    pub report: crate::chain::FileReport,
    /// How it joins its predecessor.
    #[serde(flatten)]
    pub link: Link,
}

impl FileCheck {
    /// True when neither the file's chain nor its link to the predecessor is broken.
    pub fn intact(&self) -> bool {
        self.report.broken.is_none() && !matches!(self.link, Link::Mismatch { .. } | Link::Cycle)
    }
}

/// At most this many rotated files are followed back (a loop of links ends here too).
const MAX_FILES: usize = 10_000;

/// Verifies the ledger at `path` and, through the anchors rotation recorded, every file it was
/// rotated from that is still there; newest first.
pub fn verify_files(path: &Path) -> Result<Vec<FileCheck>, LedgerError> {
    let mut out: Vec<FileCheck> = Vec::new();
    let mut next = Some((path.to_path_buf(), Ledger::open_read(path)?.verify()?));
    while let Some((file, report)) = next.take() {
        let mut link = Link::Genesis;
        if let Some(name) = &report.anchor_file {
            let prev = file
                .parent()
                .map_or_else(|| PathBuf::from(name), |dir| dir.join(name));
            if prev == file || out.iter().any(|c| c.path == prev) || out.len() + 1 >= MAX_FILES {
                link = Link::Cycle;
            } else if prev.exists() {
                let older = Ledger::open_read(&prev)?.verify()?;
                link = if older.head == report.anchor {
                    Link::Joined
                } else {
                    Link::Mismatch {
                        found: older.head.clone(),
                    }
                };
                next = Some((prev, older));
            } else {
                link = Link::Missing;
            }
        }
        out.push(FileCheck {
            path: file,
            report,
            link,
        });
    }
    Ok(out)
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

    fn judge_row(
        session: &str,
        hook: &str,
        ts_ms: u64,
        seq: u32,
        ok: bool,
    ) -> crate::judge::NewJudgeCall {
        crate::judge::NewJudgeCall {
            ts_ms,
            session_id: session.into(),
            event: "PreToolUse".into(),
            tool_digest: Some("abc".into()),
            seq,
            call: crate::judge::JudgeCall {
                hook: hook.into(),
                backend: "claude".into(),
                model: Some("haiku".into()),
                latency_ms: 1200,
                cost_usd: ok.then_some(0.0021),
                ok,
                error: (!ok).then(|| "claude judge: exited with exit status: 3".into()),
            },
        }
    }

    #[test]
    fn judge_calls_join_their_decision_and_list_on_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.db");
        let mut ledger = Ledger::open(&path).unwrap();
        ledger.insert(&[row("s1", "gate", "block", 1000)]).unwrap();
        let calls = [
            judge_row("s1", "gate", 1000, 0, true),
            judge_row("s1", "gate", 1000, 1, false),
            // A call whose verdict fired nothing has no decision row, but is kept.
            judge_row("s1", "nudge", 2000, 0, true),
        ];
        assert_eq!(ledger.insert_judge_calls(&calls).unwrap(), 3);
        assert_eq!(ledger.insert_judge_calls(&calls).unwrap(), 0, "no doubles");
        let reader = Ledger::open_read(&path).unwrap();
        let d = reader.query(&Query::default()).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].judge.len(), 2);
        assert_eq!(d[0].judge[0].cost_usd, Some(0.0021));
        assert_eq!(d[0].judge[0].latency_ms, 1200);
        assert!(!d[0].judge[1].ok);
        assert!(
            d[0].judge[1]
                .error
                .as_deref()
                .unwrap()
                .contains("exit status: 3")
        );
        let all = reader.judge_calls(&Query::default()).unwrap();
        assert_eq!(all.len(), 3);
        let q = Query {
            hook: Some("nudge".into()),
            ..Query::default()
        };
        assert_eq!(reader.judge_calls(&q).unwrap()[0].ts_ms, 2000);
    }

    #[test]
    fn a_ledger_from_before_judge_calls_keeps_its_rows_and_gains_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            // A version-0 ledger, as builds before judge calls left it.
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(SCHEMA).unwrap();
            conn.execute(
                "INSERT INTO decisions (ts_ms, session_id, source, kind, event, action) \
                 VALUES (5, 's0', 'captain-hook', 'old', 'Stop', 'block')",
                [],
            )
            .unwrap();
        }
        // Readers of an old ledger see its decisions and no judge calls.
        let reader = Ledger::open_read(&path).unwrap();
        assert_eq!(reader.query(&Query::default()).unwrap().len(), 1);
        assert!(reader.judge_calls(&Query::default()).unwrap().is_empty());
        drop(reader);
        let mut ledger = Ledger::open(&path).unwrap();
        let version: i64 = ledger
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        ledger
            .insert_judge_calls(&[judge_row("s0", "old", 5, 0, true)])
            .unwrap();
        let d = ledger.query(&Query::default()).unwrap();
        assert_eq!((d[0].hook.as_str(), d[0].judge.len()), ("old", 1));
        // Opening again migrates nothing twice.
        drop(ledger);
        assert!(Ledger::open(&path).is_ok());
    }

    fn broken(path: &Path) -> Option<(i64, crate::chain::Break)> {
        Ledger::open_read(path).unwrap().verify().unwrap().broken
    }

    /// Every row links to the one before; an edited, removed or reordered row is named.
    #[test]
    fn the_chain_names_the_first_changed_removed_or_reordered_row() {
        use crate::chain::Break;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.db");
        let mut ledger = Ledger::open(&path).unwrap();
        let rows: Vec<_> = (1..=5)
            .map(|i| row("s", &format!("h{i}"), "block", i * 10))
            .collect();
        ledger.insert(&rows[..2]).unwrap();
        // A replayed row adds nothing and does not move the head.
        ledger.insert(&rows[..3]).unwrap();
        ledger.insert(&rows[3..]).unwrap();
        let ok = ledger.verify().unwrap();
        assert_eq!((ok.rows, ok.broken.clone(), ok.unchained), (5, None, None));
        let listed = ledger.query(&Query::default()).unwrap();
        assert_eq!(listed[0].prev_hash.as_deref(), Some(crate::chain::GENESIS));
        assert_eq!(listed[1].prev_hash, listed[0].row_hash);
        assert_eq!(ok.head, listed[4].row_hash.clone().unwrap());

        let conn = Connection::open(&path).unwrap();
        conn.execute("UPDATE decisions SET action = 'allow' WHERE id = 3", [])
            .unwrap();
        assert_eq!(broken(&path), Some((3, Break::Changed)));
        conn.execute("UPDATE decisions SET action = 'block' WHERE id = 3", [])
            .unwrap();
        assert_eq!(broken(&path), None, "undone, the chain holds again");

        // Rows 2 and 3 trade places (ids swapped).
        conn.execute_batch(
            "UPDATE decisions SET id = 100 WHERE id = 2;
             UPDATE decisions SET id = 2 WHERE id = 3;
             UPDATE decisions SET id = 3 WHERE id = 100;",
        )
        .unwrap();
        assert_eq!(broken(&path), Some((2, Break::Reordered)));
        conn.execute_batch(
            "UPDATE decisions SET id = 100 WHERE id = 2;
             UPDATE decisions SET id = 2 WHERE id = 3;
             UPDATE decisions SET id = 3 WHERE id = 100;",
        )
        .unwrap();
        assert_eq!(broken(&path), None);

        conn.execute("DELETE FROM decisions WHERE id = 4", [])
            .unwrap();
        assert_eq!(broken(&path), Some((5, Break::Removed)));
    }

    /// Rows from before the chain are reported as unchained; the chain starts after them.
    #[test]
    fn rows_from_before_the_chain_are_unchained_and_the_chain_starts_after_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(SCHEMA).unwrap();
            conn.execute_batch(JUDGE_SCHEMA).unwrap();
            conn.pragma_update(None, "user_version", 2).unwrap();
            for ts in [1, 2] {
                conn.execute(
                    "INSERT INTO decisions (ts_ms, session_id, source, kind, event, action) \
                     VALUES (?1, 's0', 'captain-hook', 'old', 'Stop', 'block')",
                    [ts],
                )
                .unwrap();
            }
        }
        // Read before any writer of this build opened it: no chain columns, nothing chained.
        let before = Ledger::open_read(&path).unwrap().verify().unwrap();
        assert_eq!((before.unchained, before.broken), (Some((1, 2)), None));
        let mut ledger = Ledger::open(&path).unwrap();
        ledger.insert(&[row("s", "new", "block", 9)]).unwrap();
        let r = ledger.verify().unwrap();
        assert_eq!((r.rows, r.unchained, r.broken), (3, Some((1, 2)), None));
        // A hash stripped from a chained row is not mistaken for an old row.
        ledger.insert(&[row("s", "newer", "block", 10)]).unwrap();
        ledger
            .conn
            .execute("UPDATE decisions SET row_hash = NULL WHERE id = 3", [])
            .unwrap();
        assert_eq!(
            ledger.verify().unwrap().broken.map(|b| b.0),
            Some(3),
            "row 3 unhashed after it was chained"
        );
    }

    /// Rotation moves the rows into an archive; the next row links to the archive's last, and
    /// verification follows the link.
    #[test]
    fn rotation_keeps_the_chain_verifiable_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("decisions.db");
        let archive = dir.path().join("decisions.1.db");
        let mut ledger = Ledger::open(&path).unwrap();
        ledger
            .insert(&[row("s", "a", "block", 1), row("s", "b", "block", 2)])
            .unwrap();
        ledger
            .insert_judge_calls(&[judge_row("s", "a", 1, 0, true)])
            .unwrap();
        assert_eq!(ledger.rotate(&archive).unwrap(), 2);
        assert!(matches!(
            ledger.rotate(&archive),
            Err(LedgerError::ArchiveExists(_))
        ));
        assert!(ledger.query(&Query::default()).unwrap().is_empty());
        let old = Ledger::open_read(&archive).unwrap();
        let moved = old.query(&Query::default()).unwrap();
        assert_eq!(moved.len(), 2);
        assert_eq!(moved[0].judge.len(), 1, "judge calls move with their rows");
        let archive_head = moved[1].row_hash.clone().unwrap();

        ledger.insert(&[row("s", "c", "block", 3)]).unwrap();
        let now = ledger.query(&Query::default()).unwrap();
        assert_eq!(now[0].prev_hash.as_deref(), Some(archive_head.as_str()));
        let checks = verify_files(&path).unwrap();
        assert_eq!(checks.len(), 2);
        assert_eq!(checks[0].link, Link::Joined);
        assert_eq!(
            checks[0].report.anchor_file.as_deref(),
            Some("decisions.1.db")
        );
        assert_eq!(checks[1].link, Link::Genesis);
        assert!(checks.iter().all(FileCheck::intact));

        // A second rotation chains three files.
        let archive2 = dir.path().join("decisions.2.db");
        ledger.rotate(&archive2).unwrap();
        ledger.insert(&[row("s", "d", "block", 4)]).unwrap();
        assert_eq!(verify_files(&path).unwrap().len(), 3);

        // Cutting the oldest archive's last row shows at the link of the file after it.
        Connection::open(&archive)
            .unwrap()
            .execute("DELETE FROM decisions WHERE id = 2", [])
            .unwrap();
        let checks = verify_files(&path).unwrap();
        assert!(
            matches!(checks[1].link, Link::Mismatch { .. }),
            "{checks:?}"
        );
        assert!(!checks[1].intact());

        // A link edited to point back at the ledger itself is caught, not followed forever.
        let looped = Ledger::open(&archive2).unwrap();
        looped
            .conn
            .execute(
                "UPDATE chain SET value = 'decisions.2.db' WHERE key = 'anchor_file'",
                [],
            )
            .unwrap();
        drop(looped);
        let checks = verify_files(&path).unwrap();
        assert_eq!(checks[1].link, Link::Cycle, "{checks:?}");
        assert!(!checks[1].intact());

        // An archive shipped elsewhere: the ledger is checked from its anchor.
        std::fs::remove_file(&archive2).unwrap();
        let checks = verify_files(&path).unwrap();
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].link, Link::Missing);
        assert!(checks[0].intact());
    }

    #[test]
    fn a_bad_action_is_refused_by_the_schema() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::open(&dir.path().join("d.db")).unwrap();
        let err = ledger.insert(&[row("s", "h", "explode", 1)]).unwrap_err();
        assert!(err.to_string().contains("CHECK"), "{err}");
    }
}

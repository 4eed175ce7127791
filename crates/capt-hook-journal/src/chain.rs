//! The ledger's hash chain: each decision row stores the hash of the row written before it
//! (`prev_hash`) and its own hash over its content and that link (`row_hash`), so an edited,
//! removed or reordered row breaks the chain at a row `capt-hook decisions verify` can name.
//!
//! What it does not stop: someone who can write the file can recompute every hash after an
//! edit, and rows cut from the end leave no gap. The chain makes an edit evident against a copy
//! of the head hash kept elsewhere (`verify` prints it; `export` ships rows with their hashes).

use serde::Serialize;

/// The link of the first row of a ledger that has no predecessor file.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Tells this encoding from any later one; part of every hash.
const DOMAIN: &[u8] = b"capt-hook decision ledger row v1\0";

/// The hashed content of one decision row, in column order.
#[derive(Debug, Clone, Copy)]
pub struct RowContent<'a> {
    /// Unix milliseconds.
    pub ts_ms: i64,
    /// The session.
    pub session_id: &'a str,
    /// The writer (`captain-hook`).
    pub source: &'a str,
    /// The hook's name.
    pub kind: &'a str,
    /// Where the hook is defined.
    pub source_file: &'a str,
    /// The event.
    pub event: &'a str,
    /// The action.
    pub action: &'a str,
    /// The tool.
    pub tool_name: Option<&'a str>,
    /// Digest of tool name and input.
    pub tool_digest: Option<&'a str>,
    /// The tool call's id.
    pub event_uuid: Option<&'a str>,
    /// What the hook said.
    pub message: Option<&'a str>,
    /// Further facts, as stored.
    pub detail_json: &'a str,
}

/// The hash of a row linked to `prev` (lowercase hex BLAKE3).
///
/// Every field is length-prefixed and absent fields are marked apart from empty ones, so no two
/// different rows encode alike.
pub fn row_hash(prev: &str, row: &RowContent<'_>) -> String {
    let mut h = blake3::Hasher::new();
    h.update(DOMAIN);
    let mut field = |v: Option<&[u8]>| match v {
        None => {
            h.update(&[0]);
        }
        Some(b) => {
            h.update(&[1]);
            h.update(&(b.len() as u64).to_le_bytes());
            h.update(b);
        }
    };
    field(Some(prev.as_bytes()));
    field(Some(row.ts_ms.to_string().as_bytes()));
    for v in [
        Some(row.session_id),
        Some(row.source),
        Some(row.kind),
        Some(row.source_file),
        Some(row.event),
        Some(row.action),
        row.tool_name,
        row.tool_digest,
        row.event_uuid,
        row.message,
        Some(row.detail_json),
    ] {
        field(v.map(str::as_bytes));
    }
    h.finalize().to_hex().to_string()
}

/// How the chain of one ledger file broke.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Break {
    /// The row's content no longer matches its hash: it was changed.
    Changed,
    /// The row's link names a hash no earlier row has: rows before it were removed (or the link
    /// itself was edited).
    Removed,
    /// The row links to another row of the file than the one before it: rows were reordered.
    Reordered,
    /// The row has no hash although rows before it do: its hash was stripped or the row was
    /// inserted by hand.
    Unhashed,
}

impl Break {
    /// A sentence for the report.
    pub fn describe(&self) -> &'static str {
        match self {
            Break::Changed => "its content does not match its hash (the row was changed)",
            Break::Removed => {
                "it links to a row that is not there (rows before it were removed, or its link \
                 was edited)"
            }
            Break::Reordered => {
                "it links to another row than the one before it (rows were reordered)"
            }
            Break::Unhashed => {
                "it has no hash although rows before it do (its hash was stripped, or the row \
                 was inserted by hand)"
            }
        }
    }
}

/// The verdict on one ledger file's chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileReport {
    /// Rows in the file.
    pub rows: u64,
    /// Rows written before the chain existed (no hash), from the start of the file: the id of
    /// the first and last such row. Their content cannot be checked.
    pub unchained: Option<(i64, i64)>,
    /// The link the first chained row must carry: [`GENESIS`], or the head of the file this
    /// one was rotated from.
    pub anchor: String,
    /// The file this one continues (rotation), as recorded.
    pub anchor_file: Option<String>,
    /// The hash of the last row (the anchor when the file has no chained rows).
    pub head: String,
    /// The first row where the chain broke, and how.
    pub broken: Option<(i64, Break)>,
}

/// One stored row as [`walk`] reads it: id, content, link and hash.
#[derive(Debug, Clone)]
pub struct StoredRow {
    /// Row id (insertion order).
    pub id: i64,
    /// The hash of the content and `prev_hash` (recomputed, not read).
    pub computed: Option<String>,
    /// The stored link.
    pub prev_hash: Option<String>,
    /// The stored hash.
    pub row_hash: Option<String>,
}

/// Walks rows in id order from `anchor` and says where, if anywhere, the chain breaks.
pub fn walk(rows: &[StoredRow], anchor: &str, anchor_file: Option<String>) -> FileReport {
    let mut report = FileReport {
        rows: rows.len() as u64,
        unchained: None,
        anchor: anchor.to_owned(),
        anchor_file,
        head: anchor.to_owned(),
        broken: None,
    };
    let stored: std::collections::HashSet<&str> =
        rows.iter().filter_map(|r| r.row_hash.as_deref()).collect();
    let mut chained = false;
    for row in rows {
        let (Some(prev), Some(hash)) = (&row.prev_hash, &row.row_hash) else {
            // Only a row with neither link nor hash can predate the chain.
            if chained || row.prev_hash.is_some() || row.row_hash.is_some() {
                report.broken = Some((row.id, Break::Unhashed));
                return report;
            }
            report.unchained = Some(match report.unchained {
                None => (row.id, row.id),
                Some((first, _)) => (first, row.id),
            });
            continue;
        };
        chained = true;
        if *prev != report.head {
            let how = if stored.contains(prev.as_str()) {
                Break::Reordered
            } else {
                Break::Removed
            };
            report.broken = Some((row.id, how));
            return report;
        }
        if row.computed.as_deref() != Some(hash.as_str()) {
            report.broken = Some((row.id, Break::Changed));
            return report;
        }
        report.head = hash.clone();
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(kind: &str) -> RowContent<'_> {
        RowContent {
            ts_ms: 1,
            session_id: "s",
            source: "captain-hook",
            kind,
            source_file: "",
            event: "PreToolUse",
            action: "block",
            tool_name: Some("Bash"),
            tool_digest: None,
            event_uuid: None,
            message: Some(""),
            detail_json: "{}",
        }
    }

    #[test]
    fn the_hash_tells_absent_from_empty_and_depends_on_the_link() {
        let a = content("a");
        let mut b = a;
        b.message = None;
        assert_ne!(row_hash(GENESIS, &a), row_hash(GENESIS, &b));
        assert_ne!(row_hash(GENESIS, &a), row_hash(&"1".repeat(64), &a));
        assert_eq!(row_hash(GENESIS, &a), row_hash(GENESIS, &content("a")));
        assert_eq!(row_hash(GENESIS, &a).len(), 64);
    }

    fn chain(kinds: &[&str]) -> Vec<StoredRow> {
        let mut prev = GENESIS.to_owned();
        kinds
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let hash = row_hash(&prev, &content(k));
                let row = StoredRow {
                    id: i as i64 + 1,
                    computed: Some(hash.clone()),
                    prev_hash: Some(prev.clone()),
                    row_hash: Some(hash.clone()),
                };
                prev = hash;
                row
            })
            .collect()
    }

    #[test]
    fn walk_names_the_first_broken_row_and_how() {
        let rows = chain(&["a", "b", "c", "d"]);
        let ok = walk(&rows, GENESIS, None);
        assert_eq!(ok.broken, None);
        assert_eq!(ok.head, rows[3].row_hash.clone().unwrap());

        let mut changed = rows.clone();
        changed[1].computed = Some("x".into());
        assert_eq!(
            walk(&changed, GENESIS, None).broken,
            Some((2, Break::Changed))
        );

        let removed: Vec<_> = rows.iter().filter(|r| r.id != 2).cloned().collect();
        assert_eq!(
            walk(&removed, GENESIS, None).broken,
            Some((3, Break::Removed))
        );

        let mut reordered = rows.clone();
        reordered.swap(2, 3);
        assert_eq!(
            walk(&reordered, GENESIS, None).broken,
            Some((4, Break::Reordered)),
            "d comes before c, which it links to"
        );

        let mut stripped = rows.clone();
        stripped[2].row_hash = None;
        assert_eq!(
            walk(&stripped, GENESIS, None).broken,
            Some((3, Break::Unhashed))
        );
    }

    #[test]
    fn rows_before_the_chain_are_reported_unchained_not_failed() {
        let mut rows = chain(&["a", "b"]);
        for r in &mut rows {
            r.id += 2;
        }
        for id in [2, 1] {
            let legacy = StoredRow {
                id,
                computed: None,
                prev_hash: None,
                row_hash: None,
            };
            rows.insert(0, legacy);
        }
        let r = walk(&rows, GENESIS, None);
        assert_eq!(r.unchained, Some((1, 2)));
        assert_eq!(r.broken, None);
        assert_eq!(r.rows, 4);
    }
}

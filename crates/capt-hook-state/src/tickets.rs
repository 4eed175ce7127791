//! Permission tickets: one JSON file per project under the state root
//! (`<state root>/hooks/tickets/<project key>.json`), read and written under its `.lock` sibling
//! like every other state file, so concurrent sessions of one project never lose a ticket.
//!
//! Unlike session slots, a ticket store that does not parse is never read as empty: an empty
//! store would silently deny everything the user already granted, and writing over it would lose
//! those grants. It is moved aside as `<file>.bak.<timestamp>` and the operation fails naming
//! both files, so the hook denies visibly and the user can restore it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::StateError;
use crate::file::{self, LockWait, Prior, ReadOutcome};
use crate::paths;

/// How long a ticket operation waits for another session's lock before failing.
pub const TICKET_LOCK_TIMEOUT: Duration = Duration::from_secs(2);

/// How far a ticket reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reach {
    /// The one action whose fingerprint the ticket records.
    Action,
    /// Every action at the ticket's place.
    Place,
}

impl Reach {
    /// `action` or `place`.
    pub fn name(self) -> &'static str {
        match self {
            Reach::Action => "action",
            Reach::Place => "place",
        }
    }
}

/// One item a rule found: where it came from and the words themselves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// `user_said`, `user_answered`, `decide`, `condition` or `unchecked`.
    pub source: String,
    /// The user's words (a prompt, a question and its answer), or why nothing checked.
    pub text: String,
}

/// A record that one action, or every later action at one place, may go ahead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    /// Twelve hex characters, named in every allow and by `capt-hook tickets revoke`.
    pub id: String,
    /// The declaration's ticket kind (`slack.write`).
    pub kind: String,
    /// The place keys and their exact values.
    pub place: BTreeMap<String, String>,
    /// How far it reaches.
    pub reach: Reach,
    /// For [`Reach::Action`]: the fingerprint of the one action it covers.
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// The rule that minted it.
    pub rule: String,
    /// What the rule found.
    pub evidence: Vec<Evidence>,
    /// The session it was minted in, when known.
    #[serde(default)]
    pub session: Option<String>,
    /// Unix milliseconds when it was minted.
    pub minted_at: u64,
    /// Unix milliseconds when it stops covering anything (`None`: never).
    #[serde(default)]
    pub expires_at: Option<u64>,
}

impl Ticket {
    /// True when the ticket covers an action of `kind` at `place` with `fingerprint` at `now`.
    pub fn covers(
        &self,
        kind: &str,
        place: &BTreeMap<String, String>,
        fingerprint: &str,
        now: u64,
    ) -> bool {
        self.kind == kind
            && &self.place == place
            && self.is_live(now)
            && match self.reach {
                Reach::Place => true,
                Reach::Action => self.fingerprint.as_deref() == Some(fingerprint),
            }
    }

    /// True until `expires_at` (exclusive).
    pub fn is_live(&self, now: u64) -> bool {
        self.expires_at.is_none_or(|e| now < e)
    }
}

/// The file's model.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TicketFile {
    tickets: Vec<Ticket>,
}

/// The ticket store of one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketStore {
    path: PathBuf,
}

/// Unix milliseconds as `YYYYMMDDTHHMMSSZ`, for listings.
pub fn utc_time(unix_ms: u64) -> String {
    file::utc_stamp(std::time::UNIX_EPOCH + Duration::from_millis(unix_ms))
}

/// The twelve-hex id of a new ticket: unique per mint, not guessable from its content.
pub fn new_ticket_id(kind: &str, place: &BTreeMap<String, String>, now: u64) -> String {
    let mut h = blake3::Hasher::new();
    h.update(kind.as_bytes());
    for (k, v) in place {
        h.update(k.as_bytes());
        h.update(b"\0");
        h.update(v.as_bytes());
        h.update(b"\0");
    }
    h.update(&now.to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    // Two mints in one millisecond of one process still differ.
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    h.update(&n.to_le_bytes());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.update(&nanos.to_le_bytes());
    h.finalize().to_hex()[..12].to_owned()
}

impl TicketStore {
    /// The store of the project at `project_root`: `<state_root>/hooks/tickets/<project key>.json`.
    pub fn for_project(state_root: &Path, project_root: &Path) -> TicketStore {
        TicketStore {
            path: state_root
                .join("hooks")
                .join("tickets")
                .join(format!("{}.json", paths::project_key(project_root))),
        }
    }

    /// A store at an explicit file (tests, tools).
    pub fn at(path: impl Into<PathBuf>) -> TicketStore {
        TicketStore { path: path.into() }
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` over the tickets under the lock; writes them back when `f` says so.
    fn with_tickets<R>(
        &self,
        f: impl FnOnce(&mut Vec<Ticket>) -> (R, bool),
    ) -> Result<R, StateError> {
        let _guard = file::lock(
            &file::lock_path(&self.path),
            LockWait::Timeout(TICKET_LOCK_TIMEOUT),
        )?;
        let mut data = match file::read_model::<TicketFile>(&self.path)? {
            ReadOutcome::Missing => TicketFile::default(),
            ReadOutcome::Valid(v) => v,
            ReadOutcome::Corrupt(reason) => {
                let backup = file::move_aside(&self.path).map_err(|source| StateError::Write {
                    path: self.path.clone(),
                    source,
                })?;
                tracing::warn!(path = %self.path.display(), backup = %backup.display(), "corrupt ticket store moved aside");
                return Err(StateError::CorruptMovedAside {
                    path: self.path.clone(),
                    backup,
                    reason,
                });
            }
        };
        let (out, write) = f(&mut data.tickets);
        if write {
            file::write_model(&self.path, &data, Prior::Fine)?;
        }
        Ok(out)
    }

    /// Every ticket in the store, expired and live.
    pub fn list(&self) -> Result<Vec<Ticket>, StateError> {
        self.with_tickets(|t| (t.clone(), false))
    }

    /// The live ticket covering the action, if any (the newest when several do).
    pub fn find(
        &self,
        kind: &str,
        place: &BTreeMap<String, String>,
        fingerprint: &str,
        now: u64,
    ) -> Result<Option<Ticket>, StateError> {
        self.with_tickets(|t| {
            let found = t
                .iter()
                .rev()
                .find(|x| x.covers(kind, place, fingerprint, now))
                .cloned();
            (found, false)
        })
    }

    /// Adds `ticket`, dropping tickets that expired before `now` so the file stays small.
    pub fn mint(&self, ticket: Ticket, now: u64) -> Result<(), StateError> {
        self.with_tickets(|t| {
            t.retain(|x| x.is_live(now));
            t.push(ticket);
            ((), true)
        })
    }

    /// Removes the ticket `id`; false when there is none.
    pub fn revoke(&self, id: &str) -> Result<bool, StateError> {
        self.with_tickets(|t| {
            let before = t.len();
            t.retain(|x| x.id != id);
            let removed = t.len() != before;
            (removed, removed)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(channel: &str) -> BTreeMap<String, String> {
        [("channel".to_owned(), channel.to_owned())]
            .into_iter()
            .collect()
    }

    fn ticket(reach: Reach, expires_at: Option<u64>) -> Ticket {
        Ticket {
            id: new_ticket_id("chat.post", &place("dev"), 1),
            kind: "chat.post".into(),
            place: place("dev"),
            reach,
            fingerprint: Some("fp1".into()),
            rule: "asked".into(),
            evidence: vec![Evidence {
                source: "user_said".into(),
                text: "post it to #dev".into(),
            }],
            session: Some("s1".into()),
            minted_at: 1000,
            expires_at,
        }
    }

    #[test]
    fn reach_decides_what_a_ticket_covers() {
        let dir = tempfile::tempdir().unwrap();
        let store = TicketStore::for_project(dir.path(), dir.path());
        store.mint(ticket(Reach::Action, None), 1000).unwrap();
        assert!(
            store
                .find("chat.post", &place("dev"), "fp1", 2000)
                .unwrap()
                .is_some()
        );
        assert!(
            store
                .find("chat.post", &place("dev"), "fp2", 2000)
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .find("chat.post", &place("ops"), "fp1", 2000)
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .find("mail.send", &place("dev"), "fp1", 2000)
                .unwrap()
                .is_none()
        );
        store.mint(ticket(Reach::Place, None), 1000).unwrap();
        assert!(
            store
                .find("chat.post", &place("dev"), "fp2", 2000)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn expired_tickets_never_match_and_are_pruned_on_mint() {
        let dir = tempfile::tempdir().unwrap();
        let store = TicketStore::for_project(dir.path(), dir.path());
        store.mint(ticket(Reach::Place, Some(5000)), 1000).unwrap();
        assert!(
            store
                .find("chat.post", &place("dev"), "x", 4999)
                .unwrap()
                .is_some()
        );
        assert!(
            store
                .find("chat.post", &place("dev"), "x", 5000)
                .unwrap()
                .is_none()
        );
        let mut other = ticket(Reach::Place, None);
        other.kind = "mail.send".into();
        store.mint(other, 6000).unwrap();
        let all = store.list().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].kind, "mail.send");
    }

    #[test]
    fn revoke_removes_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let store = TicketStore::for_project(dir.path(), dir.path());
        let t = ticket(Reach::Place, None);
        let id = t.id.clone();
        assert_eq!(id.len(), 12);
        store.mint(t, 1000).unwrap();
        assert!(!store.revoke("000000000000").unwrap());
        assert!(store.revoke(&id).unwrap());
        assert!(store.list().unwrap().is_empty());
    }

    #[test]
    fn a_corrupt_store_fails_naming_it_and_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let store = TicketStore::for_project(dir.path(), dir.path());
        std::fs::create_dir_all(store.path().parent().unwrap()).unwrap();
        std::fs::write(store.path(), "{not json").unwrap();
        let err = store
            .find("chat.post", &place("dev"), "x", 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&store.path().display().to_string()), "{err}");
        assert!(err.contains(".bak."), "{err}");
        assert!(!store.path().exists());
        let backups: Vec<_> = std::fs::read_dir(store.path().parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".json.bak."))
            .collect();
        assert_eq!(backups.len(), 1);
        assert_eq!(std::fs::read(backups[0].path()).unwrap(), b"{not json");
        // The next operation starts from an empty store.
        assert!(store.list().unwrap().is_empty());
    }

    #[test]
    fn concurrent_mints_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let store = TicketStore::for_project(dir.path(), dir.path());
        std::thread::scope(|s| {
            for i in 0..8 {
                let store = store.clone();
                s.spawn(move || {
                    let mut t = ticket(Reach::Place, None);
                    t.id = format!("{i:012}");
                    store.mint(t, 1000).unwrap();
                });
            }
        });
        assert_eq!(store.list().unwrap().len(), 8);
    }
}

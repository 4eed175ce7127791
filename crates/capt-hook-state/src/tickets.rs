//! Permission tickets: one JSON file per project under the state root
//! (`<state root>/hooks/tickets/<project key>.json`), read and written under its `.lock` sibling
//! like every other state file, so concurrent sessions of one project never lose a ticket.
//!
//! A ticket belongs to the session tree it was minted in (`tree`: the root session id; a
//! subagent's calls carry their parent's session id, so they read and spend the same tickets).
//! Revoking marks a ticket `revoked_at` instead of deleting it, so the store still shows what
//! was granted and when it was taken back. Files written before trees existed stay readable:
//! such a ticket's tree is the session that minted it.
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
    /// The root session id of the tree it was minted in; only actions of that tree spend it
    /// (`None`: minted where no session was known; it covers only such actions).
    #[serde(default)]
    pub tree: Option<String>,
    /// Who minted it: `main`, a subagent's id, or the tool that wrote it.
    #[serde(default)]
    pub author: Option<String>,
    /// Unix milliseconds when it was minted.
    pub minted_at: u64,
    /// Unix milliseconds when it stops covering anything (`None`: never).
    #[serde(default)]
    pub expires_at: Option<u64>,
    /// Unix milliseconds when the user revoked it (`None`: not revoked).
    #[serde(default)]
    pub revoked_at: Option<u64>,
}

/// What [`TicketStore::revoke`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revoked {
    /// The ticket is now revoked.
    Now,
    /// It already was, at this time (Unix ms).
    Already(u64),
    /// No ticket has that id.
    Unknown,
}

impl Ticket {
    /// True when the ticket covers an action of `kind` at `place` with `fingerprint`, acting in
    /// one of `trees`, at `now`.
    pub fn covers(
        &self,
        kind: &str,
        place: &BTreeMap<String, String>,
        fingerprint: &str,
        trees: &[String],
        now: u64,
    ) -> bool {
        self.kind == kind
            && &self.place == place
            && self.is_live(now)
            && match &self.tree {
                Some(tree) => trees.contains(tree),
                None => trees.is_empty(),
            }
            && match self.reach {
                Reach::Place => true,
                Reach::Action => self.fingerprint.as_deref() == Some(fingerprint),
            }
    }

    /// True until `expires_at` (exclusive), unless revoked.
    pub fn is_live(&self, now: u64) -> bool {
        self.revoked_at.is_none() && !self.is_expired(now)
    }

    /// True from `expires_at` on.
    pub fn is_expired(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|e| now >= e)
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
        for t in &mut data.tickets {
            // Written before trees existed: the minting session stands for its tree.
            if t.tree.is_none() {
                t.tree = t.session.clone();
            }
        }
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

    /// The live ticket covering the action taken in one of `trees`, if any (the newest when
    /// several do).
    pub fn find(
        &self,
        kind: &str,
        place: &BTreeMap<String, String>,
        fingerprint: &str,
        trees: &[String],
        now: u64,
    ) -> Result<Option<Ticket>, StateError> {
        self.with_tickets(|t| {
            let found = t
                .iter()
                .rev()
                .find(|x| x.covers(kind, place, fingerprint, trees, now))
                .cloned();
            (found, false)
        })
    }

    /// Adds `ticket`, dropping tickets that expired before `now` so the file stays small
    /// (revoked ones stay until they expire, so the store shows what was taken back).
    pub fn mint(&self, ticket: Ticket, now: u64) -> Result<(), StateError> {
        self.with_tickets(|t| {
            t.retain(|x| !x.is_expired(now));
            t.push(ticket);
            ((), true)
        })
    }

    /// Marks the ticket `id` revoked at `now`: it covers nothing from then on.
    pub fn revoke(&self, id: &str, now: u64) -> Result<Revoked, StateError> {
        self.with_tickets(|t| match t.iter_mut().find(|x| x.id == id) {
            None => (Revoked::Unknown, false),
            Some(x) => match x.revoked_at {
                Some(at) => (Revoked::Already(at), false),
                None => {
                    x.revoked_at = Some(now);
                    (Revoked::Now, true)
                }
            },
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

    fn s1() -> Vec<String> {
        vec!["s1".to_owned()]
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
            tree: Some("s1".into()),
            author: Some("main".into()),
            minted_at: 1000,
            expires_at,
            revoked_at: None,
        }
    }

    #[test]
    fn reach_decides_what_a_ticket_covers() {
        let dir = tempfile::tempdir().unwrap();
        let store = TicketStore::for_project(dir.path(), dir.path());
        store.mint(ticket(Reach::Action, None), 1000).unwrap();
        assert!(
            store
                .find("chat.post", &place("dev"), "fp1", &s1(), 2000)
                .unwrap()
                .is_some()
        );
        assert!(
            store
                .find("chat.post", &place("dev"), "fp2", &s1(), 2000)
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .find("chat.post", &place("ops"), "fp1", &s1(), 2000)
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .find("mail.send", &place("dev"), "fp1", &s1(), 2000)
                .unwrap()
                .is_none()
        );
        store.mint(ticket(Reach::Place, None), 1000).unwrap();
        assert!(
            store
                .find("chat.post", &place("dev"), "fp2", &s1(), 2000)
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
                .find("chat.post", &place("dev"), "x", &s1(), 4999)
                .unwrap()
                .is_some()
        );
        assert!(
            store
                .find("chat.post", &place("dev"), "x", &s1(), 5000)
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
    fn revoke_marks_the_ticket_and_keeps_it_listed() {
        let dir = tempfile::tempdir().unwrap();
        let store = TicketStore::for_project(dir.path(), dir.path());
        let t = ticket(Reach::Place, None);
        let id = t.id.clone();
        assert_eq!(id.len(), 12);
        store.mint(t, 1000).unwrap();
        assert_eq!(
            store.revoke("000000000000", 2000).unwrap(),
            Revoked::Unknown
        );
        assert_eq!(store.revoke(&id, 2000).unwrap(), Revoked::Now);
        assert_eq!(store.revoke(&id, 3000).unwrap(), Revoked::Already(2000));
        let all = store.list().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].revoked_at, Some(2000));
        assert!(!all[0].is_live(2500));
        assert!(
            store
                .find("chat.post", &place("dev"), "fp1", &s1(), 2500)
                .unwrap()
                .is_none()
        );
        // A later mint keeps the revoked ticket (it never expires) in the listing.
        let mut other = ticket(Reach::Place, None);
        other.id = "0123456789ab".into();
        store.mint(other, 4000).unwrap();
        assert_eq!(store.list().unwrap().len(), 2);
    }

    #[test]
    fn a_ticket_covers_only_its_own_tree() {
        let dir = tempfile::tempdir().unwrap();
        let store = TicketStore::for_project(dir.path(), dir.path());
        store.mint(ticket(Reach::Place, None), 1000).unwrap();
        let found = |trees: &[&str]| {
            let trees: Vec<String> = trees.iter().map(|t| (*t).to_owned()).collect();
            store
                .find("chat.post", &place("dev"), "x", &trees, 2000)
                .unwrap()
                .is_some()
        };
        assert!(found(&["s1"]));
        assert!(found(&["other", "s1"]));
        assert!(!found(&["s2"]));
        assert!(!found(&[]));
        // A ticket minted where no session was known covers only actions without one.
        let mut loose = ticket(Reach::Place, None);
        loose.kind = "mail.send".into();
        loose.session = None;
        loose.tree = None;
        store.mint(loose, 1000).unwrap();
        let trees: Vec<String> = Vec::new();
        assert!(
            store
                .find("mail.send", &place("dev"), "x", &trees, 2000)
                .unwrap()
                .is_some()
        );
        assert!(
            store
                .find("mail.send", &place("dev"), "x", &s1(), 2000)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_store_written_before_trees_is_read_with_the_session_as_tree() {
        let dir = tempfile::tempdir().unwrap();
        let store = TicketStore::for_project(dir.path(), dir.path());
        std::fs::create_dir_all(store.path().parent().unwrap()).unwrap();
        let old = r#"{"tickets":[{"id":"59019de3352f","kind":"chat.post","place":{"channel":"dev"},
            "reach":"place","fingerprint":null,"rule":"asked",
            "evidence":[{"source":"user_said","text":"post to #dev"}],
            "session":"s1","minted_at":1000,"expires_at":null}]}"#;
        std::fs::write(store.path(), old).unwrap();
        let all = store.list().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].tree.as_deref(), Some("s1"));
        assert_eq!(all[0].revoked_at, None);
        assert!(
            store
                .find("chat.post", &place("dev"), "x", &s1(), 2000)
                .unwrap()
                .is_some()
        );
        assert_eq!(store.revoke("59019de3352f", 3000).unwrap(), Revoked::Now);
        let text = std::fs::read_to_string(store.path()).unwrap();
        assert!(
            text.contains("\"revoked_at\": 3000") || text.contains("\"revoked_at\":3000"),
            "{text}"
        );
    }

    #[test]
    fn a_corrupt_store_fails_naming_it_and_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let store = TicketStore::for_project(dir.path(), dir.path());
        std::fs::create_dir_all(store.path().parent().unwrap()).unwrap();
        std::fs::write(store.path(), "{not json").unwrap();
        let err = store
            .find("chat.post", &place("dev"), "x", &s1(), 1)
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

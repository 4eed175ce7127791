//! Notices waiting for a session's next tool event. Events the host sends on its own
//! (ResourcePressure) have no Claude Code waiting for their answer, so what their hooks say is
//! kept and added to the session's next tool event instead. They are kept in the session's
//! state directory, not in the worker: the worker that answered the host's event may be retired
//! (idle, cap, a new build) before the session's next tool event reaches a fresh one.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;

use capt_hook_state::SessionStore;
use serde::{Deserialize, Serialize};

/// Most notices kept per session; older ones give way.
const PER_SESSION: usize = 8;
/// Most sessions [`take_after`] remembers; past it, it forgets them all and looks again.
const REMEMBERED: usize = 4096;
/// The state file, `<session dir>/pending_notices.json`.
const KEY: &str = "pending_notices";

/// Session directories this process found without a notice, with the host's notice epoch at
/// the time: until the epoch moves, no notice can have arrived for them.
static FOUND_NONE: Mutex<Option<HashMap<PathBuf, u64>>> = Mutex::new(None);

/// The notices a session has not been shown yet.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Pending {
    notices: Vec<String>,
}

/// Keeps `text` for the next tool event of the store's session. A store that persists nothing
/// (no state root) keeps nothing; a failed write is logged.
pub fn post(store: &SessionStore, text: String) {
    let kept = store.slot_named::<Pending>(KEY).mutate(|p| {
        if p.notices.contains(&text) {
            return;
        }
        if p.notices.len() >= PER_SESSION {
            p.notices.remove(0);
        }
        p.notices.push(text);
    });
    if let Err(e) = kept {
        tracing::warn!(error = %e, "cannot keep a notice for the session's next tool event");
    }
}

/// [`take`] for an event the host sent with its notice epoch (`None`: always look). A notice is
/// only ever posted by a ResourcePressure event, after which the host moves the epoch; so a
/// session found without one under the same epoch has none, and the file need not be looked
/// for again. A look costs a failed `stat` on every tool event, a tenth of the whole event.
pub fn take_after(store: &SessionStore, epoch: Option<u64>) -> Option<String> {
    let (Some(epoch), Some(dir)) = (epoch, store.dir()) else {
        return take(store);
    };
    let seen =
        |map: &Option<HashMap<PathBuf, u64>>| map.as_ref().and_then(|m| m.get(dir)) == Some(&epoch);
    if seen(&FOUND_NONE.lock()) {
        return None;
    }
    let taken = take(store);
    if taken.is_none() {
        let mut guard = FOUND_NONE.lock();
        let map = guard.get_or_insert_with(HashMap::new);
        if map.len() >= REMEMBERED {
            map.clear();
        }
        map.insert(dir.to_path_buf(), epoch);
    }
    taken
}

/// Takes the session's waiting notices, joined into one text.
pub fn take(store: &SessionStore) -> Option<String> {
    let slot = store.slot_named::<Pending>(KEY);
    // The tool-event path: one failed stat for a session that never had a notice.
    if !slot.path().is_some_and(|p| p.exists()) || slot.get()?.notices.is_empty() {
        return None;
    }
    let taken = slot.mutate(|p| std::mem::take(&mut p.notices));
    match taken {
        Ok(list) if !list.is_empty() => Some(list.join("\n\n")),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, "cannot take the session's waiting notices");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under one host epoch a session found without a notice is not looked at again; a new
    /// epoch (the host evaluated a ResourcePressure event) or no epoch looks on disk.
    #[test]
    fn a_session_without_notices_is_looked_at_once_per_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let s = SessionStore::for_session(dir.path(), Some("notices-epoch"));
        assert_eq!(take_after(&s, Some(7)), None);
        post(&s, "pressure".into());
        assert_eq!(
            take_after(&s, Some(7)),
            None,
            "not looked for under epoch 7"
        );
        assert_eq!(take_after(&s, Some(8)).as_deref(), Some("pressure"));
        post(&s, "again".into());
        assert_eq!(take_after(&s, None).as_deref(), Some("again"));
        let null = SessionStore::null();
        assert_eq!(take_after(&null, Some(8)), None);
    }

    #[test]
    fn notices_wait_per_session_on_disk_and_are_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let a = SessionStore::for_session(dir.path(), Some("notices-a"));
        let b = SessionStore::for_session(dir.path(), Some("notices-b"));
        assert_eq!(take(&a), None);
        post(&a, "one".into());
        post(&a, "two".into());
        post(&a, "two".into());
        post(&b, "other".into());
        // Another process (a fresh worker) sees them: nothing lives in this one's memory.
        let a_again = SessionStore::for_session(dir.path(), Some("notices-a"));
        assert_eq!(take(&a_again).as_deref(), Some("one\n\ntwo"));
        assert_eq!(take(&a), None);
        assert_eq!(take(&b).as_deref(), Some("other"));
        for i in 0..(PER_SESSION + 2) {
            post(&a, format!("n{i}"));
        }
        let all = take(&a).unwrap();
        assert!(!all.contains("n0\n") && all.starts_with("n2"), "{all}");
    }
}

//! Notices waiting for a session's next tool event. Events the host sends on its own
//! (ResourcePressure) have no Claude Code waiting for their answer, so what their hooks say is
//! kept and added to the session's next tool event instead. They are kept in the session's
//! state directory, not in the worker: the worker that answered the host's event may be retired
//! (idle, cap, a new build) before the session's next tool event reaches a fresh one.

use capt_hook_state::SessionStore;
use serde::{Deserialize, Serialize};

/// Most notices kept per session; older ones give way.
const PER_SESSION: usize = 8;
/// The state file, `<session dir>/pending_notices.json`.
const KEY: &str = "pending_notices";

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

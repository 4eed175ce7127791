//! Which hook's handler runs on this thread. Every hook matched on an event shares one
//! [`crate::Event`], so the hook a handler belongs to is known only to the dispatcher that calls
//! it; it says so here, and [`crate::Event::hook_store`] reads it to give the handler the state
//! of its own hook (the seeds' `sessions/<session>/<state key>/<agent>/` layout).

use std::cell::RefCell;

thread_local! {
    static STATE_KEY: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Puts the previous key back when the handler returns or unwinds.
struct Restore(Option<String>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        STATE_KEY.with(|k| *k.borrow_mut() = previous);
    }
}

/// Runs `f` (a hook's handler) as the hook whose state key is `key` (its name: registrations
/// that share a name share their state).
pub fn with_state_key<T>(key: &str, f: impl FnOnce() -> T) -> T {
    let previous = STATE_KEY.with(|k| k.borrow_mut().replace(key.to_owned()));
    let _restore = Restore(previous);
    f()
}

/// The state key of the hook whose handler runs on this thread, if one does.
pub fn current_state_key() -> Option<String> {
    STATE_KEY.with(|k| k.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_holds_inside_and_is_restored_after_a_panic() {
        assert_eq!(current_state_key(), None);
        with_state_key("outer", || {
            assert_eq!(current_state_key().as_deref(), Some("outer"));
            let caught = std::panic::catch_unwind(|| {
                with_state_key("inner", || panic!("handler failed"));
            });
            assert!(caught.is_err());
            assert_eq!(current_state_key().as_deref(), Some("outer"));
        });
        assert_eq!(current_state_key(), None);
    }

    #[test]
    fn a_handler_gets_its_own_hooks_store_per_agent() {
        use crate::{Event, EventContext, EventKind};
        let dir = tempfile::tempdir().unwrap();
        let ctx = || EventContext {
            state_root: Some(dir.path().to_path_buf()),
            ..EventContext::default()
        };
        let payload = |agent: Option<&str>| {
            let mut v = serde_json::json!({"session_id": "s1"});
            if let Some(a) = agent {
                v["agent_id"] = a.into();
            }
            v
        };
        let main = Event::new(EventKind::PreToolUse, payload(None), ctx()).unwrap();
        let sub = Event::new(EventKind::PreToolUse, payload(Some("a1")), ctx()).unwrap();
        // Outside a handler: the session's store.
        assert_eq!(main.hook_store(), *main.store());
        let session = main.store().dir().unwrap().to_path_buf();
        with_state_key("lint", || {
            assert_eq!(
                main.hook_store().dir(),
                Some(session.join("lint/main").as_path())
            );
            assert_eq!(
                sub.hook_store().dir(),
                Some(session.join("lint/a1").as_path())
            );
        });
        let slot_path = with_state_key("lint", || {
            let slot = main.hook_store().slot::<Vec<String>>();
            slot.set(&vec!["a.py".to_owned()]).unwrap();
            slot.path().map(std::path::Path::to_path_buf)
        });
        assert_eq!(slot_path, Some(session.join("lint/main/vec.json")));
        // No session: nothing persists, in a handler or not.
        let none = Event::new(EventKind::PreToolUse, serde_json::json!({}), ctx()).unwrap();
        assert!(with_state_key("lint", || none.hook_store().is_null()));
    }
}

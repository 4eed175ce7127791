//! Notices waiting for a session's next tool event. Events the host sends on its own
//! (ResourcePressure) have no Claude Code waiting for their answer, so what their hooks say is
//! kept here and added to the session's next tool event instead. In memory, per worker process:
//! the host sends a session's events to one worker, and a notice lost with a retired worker
//! was about a process that stayed quiet long enough for the worker to idle out.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Most notices kept per session; older ones give way.
const PER_SESSION: usize = 8;
/// Most sessions with notices waiting; a session past this gives way.
const SESSIONS: usize = 256;

/// True while any notice waits: the tool-event path reads only this.
static ANY: AtomicBool = AtomicBool::new(false);
static PENDING: Mutex<Option<HashMap<String, Vec<String>>>> = Mutex::new(None);

/// Keeps `text` for `session`'s next tool event.
pub fn post(session: &str, text: String) {
    let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
    let map = pending.get_or_insert_with(HashMap::new);
    if !map.contains_key(session)
        && map.len() >= SESSIONS
        && let Some(k) = map.keys().next().cloned()
    {
        map.remove(&k);
    }
    let list = map.entry(session.to_owned()).or_default();
    if list.len() >= PER_SESSION {
        list.remove(0);
    }
    if !list.contains(&text) {
        list.push(text);
    }
    ANY.store(true, Ordering::SeqCst);
}

/// Takes `session`'s waiting notices, joined into one text.
pub fn take(session: &str) -> Option<String> {
    if !ANY.load(Ordering::Relaxed) {
        return None;
    }
    let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
    let map = pending.as_mut()?;
    let list = map.remove(session)?;
    if map.is_empty() {
        ANY.store(false, Ordering::SeqCst);
    }
    Some(list.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_wait_per_session_and_are_taken_once() {
        post("notices-a", "one".into());
        post("notices-a", "two".into());
        post("notices-a", "two".into());
        post("notices-b", "other".into());
        assert_eq!(take("notices-a").as_deref(), Some("one\n\ntwo"));
        assert_eq!(take("notices-a"), None);
        assert_eq!(take("notices-b").as_deref(), Some("other"));
    }
}

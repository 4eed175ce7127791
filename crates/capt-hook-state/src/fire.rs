//! Fire limits (`max_fires`, state-cli.md §1.5) and the once-per-turn throttle of blocking gates
//! and LLM hooks (§1.6), both kept per agent context.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::deque::Deque;
use crate::error::StateError;
use crate::file::LockWait;
use crate::paths;
use crate::slot::Slot;
use crate::store::SessionStore;

/// How many results a hook delivered in one (session, hook, agent context); backs `max_fires`.
/// Written only by [`FireCounter`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HookState {
    /// Delivered (or currently reserved) fires.
    pub fire_count: u32,
}

/// How long a fire counter waits for its lock before the hook is skipped. Holders only do a
/// read and a write, so waiting this long means something is wedged.
pub const FIRE_LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// The `max_fires` counter of one hook in one agent context:
/// `<session>/<hook state key>/<agent_id or "main">/hook_state.json`.
///
/// Reserve-then-release: [`FireCounter::reserve`] increments the count under the lock *before*
/// the handler runs, so parallel processes can never together exceed the cap; a handler that
/// delivers nothing drops its [`Reservation`], which gives the fire back.
///
/// A damaged counter errs towards silence, never towards a fire past the cap: a corrupt
/// `hook_state.json` is moved aside (`.bak.<timestamp>`) and replaced by a spent counter
/// (`fire_count` = the cap), and so is a counter file that vanished after a value was written
/// (its `.lock` sibling, which nothing removes, records the first write). The hook then stays
/// quiet for the rest of that session and agent context.
#[derive(Clone, Debug)]
pub struct FireCounter {
    slot: Slot<HookState>,
    wait: LockWait,
}

impl FireCounter {
    /// The counter of hook `hook_state_key` for `agent_id` (`None` or empty is the main agent).
    /// A null store gives a counter that allows every fire (nothing can be remembered).
    pub fn new(store: &SessionStore, hook_state_key: &str, agent_id: Option<&str>) -> FireCounter {
        let path = store
            .hook_dir(hook_state_key, agent_id)
            .map(|d| d.join("hook_state.json"));
        FireCounter {
            slot: Slot::at(path),
            wait: LockWait::Timeout(FIRE_LOCK_TIMEOUT),
        }
    }

    /// Changes how long [`FireCounter::reserve`] waits for the lock.
    pub fn with_wait(mut self, wait: LockWait) -> FireCounter {
        self.wait = wait;
        self
    }

    /// The counter file, or `None` without a session.
    pub fn path(&self) -> Option<&Path> {
        self.slot.path()
    }

    /// Fires delivered or reserved so far.
    pub fn count(&self) -> u32 {
        self.slot.load().fire_count
    }

    /// Reserves one fire if fewer than `cap` are spent: `None` means the hook must not run.
    /// `cap == 0` never fires. Commit the reservation when the handler delivered a result;
    /// dropping it gives the fire back. A state failure (logged) also returns `None`, so a broken
    /// state directory silences capped hooks rather than letting them fire without limit.
    pub fn reserve(&self, cap: u32) -> Option<Reservation> {
        if cap == 0 {
            return None;
        }
        if self.slot.is_null() {
            return Some(Reservation::noop());
        }
        let spent = move || HookState { fire_count: cap };
        let taken = self.slot.try_mutate_from(
            self.wait,
            move |written_before| {
                if written_before {
                    tracing::warn!("fire counter lost; treating the capped hook as spent");
                    spent()
                } else {
                    HookState::default()
                }
            },
            spent,
            |s| {
                if s.fire_count >= cap {
                    Ok::<bool, std::convert::Infallible>(false)
                } else {
                    s.fire_count += 1;
                    Ok(true)
                }
            },
        );
        match taken.map(|r| r.unwrap_or_else(|never| match never {})) {
            Ok(true) => Some(Reservation {
                slot: Some(self.slot.clone()),
                wait: self.wait,
                done: false,
            }),
            Ok(false) => None,
            Err(e) => {
                tracing::warn!(error = %e, "fire counter unavailable; skipping the capped hook");
                None
            }
        }
    }
}

/// One reserved fire. [`Reservation::commit`] keeps it; dropping it (handler returned nothing,
/// failed, or panicked) gives it back under the lock.
#[must_use = "dropping a reservation gives the fire back; commit it when a result was delivered"]
#[derive(Debug)]
pub struct Reservation {
    slot: Option<Slot<HookState>>,
    wait: LockWait,
    done: bool,
}

impl Reservation {
    fn noop() -> Reservation {
        Reservation {
            slot: None,
            wait: LockWait::Forever,
            done: true,
        }
    }

    /// Keeps the fire: the handler delivered a result.
    pub fn commit(mut self) {
        self.done = true;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(slot) = &self.slot
            && let Err(e) =
                slot.mutate_with(self.wait, |s| s.fire_count = s.fire_count.saturating_sub(1))
        {
            tracing::warn!(error = %e, "could not give back a reserved fire; it stays spent");
        }
    }
}

/// Session-wide primitive bookkeeping in `primitive_state.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PrimitiveState {
    /// Per agent context (`main` or the agent id): the transcript length when a blocking gate or
    /// LLM hook last fired there.
    pub last_fired_at: BTreeMap<String, u64>,
    /// Per agent context: the id of the user prompt (Claude Code's `prompt_id`) being answered
    /// when that fire was recorded; absent when the event carried none.
    pub last_fired_prompt: BTreeMap<String, String>,
    /// Per hook name: hashes ([`text_hash`]) of texts that already triggered it.
    pub consumed: BTreeMap<String, BTreeSet<String>>,
    /// Content lemmas of recently fired nudges (echo damping).
    pub echo_lemmas: BTreeSet<String>,
    /// Transcript length until which echo damping applies.
    pub echo_window_end: u64,
    /// Sentences of fired warnings, for stripping quoted echoes (oldest evicted first).
    pub echo_verbatim: Deque<String, 40>,
    /// User prompts answered in a session of an agent whose transcript is not in Claude Code's
    /// format (Codex, Gemini CLI, …): there they mark the turns the throttles compare
    /// ([`PrimitiveState::prompt_turn`]).
    pub prompts: u64,
    /// `prompts` at that session's last Stop that was not a stop hook's continuation: the turn
    /// a continuing Stop belongs to, whatever prompt the continuation was sent as (Gemini CLI
    /// sends a blocked stop's reason as a new prompt).
    pub stop_prompts: u64,
}

impl PrimitiveState {
    /// The current turn as `(transcript_len, current_turn_len)` for [`TurnThrottle`] from the
    /// prompts counted (`continuing`: for a Stop a stop hook made the agent continue, the turn
    /// of the Stop it continues): each prompt moves the turn's start one place on, and a fire
    /// recorded in this turn lies past it.
    pub fn prompt_turn(&self, continuing: bool) -> (usize, usize) {
        let n = if continuing {
            self.stop_prompts
        } else {
            self.prompts
        };
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        (n.saturating_add(1), 1)
    }

    /// True when `text` already triggered `hook`.
    pub fn is_consumed(&self, hook: &str, text: &str) -> bool {
        self.consumed
            .get(hook)
            .is_some_and(|s| s.contains(&text_hash(text)))
    }

    /// Records that `text` triggered `hook`; true when it had not before.
    pub fn consume(&mut self, hook: &str, text: &str) -> bool {
        self.consumed
            .entry(hook.to_owned())
            .or_default()
            .insert(text_hash(text))
    }
}

/// First 16 hex characters of the blake3 hash of `text`: the consumption ledger's key.
pub fn text_hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex()[..16].to_owned()
}

/// Where an agent's turn stands when a gate asks: its own transcript's length, the length of the
/// turn at its end, and the id of the user prompt being answered when Claude Code sent one.
#[derive(Clone, Copy, Debug)]
pub struct TurnAt<'a> {
    /// Events in the stopping agent's transcript.
    pub transcript_len: usize,
    /// Events in its current turn.
    pub current_turn_len: usize,
    /// Claude Code's `prompt_id` (2.1.196 and later): one per user prompt.
    pub prompt_id: Option<&'a str>,
}

impl TurnAt<'_> {
    fn turn_start(&self) -> u64 {
        self.transcript_len.saturating_sub(self.current_turn_len) as u64
    }
}

/// "At most once per turn per agent context" for blocking gates and LLM hooks: blocking one
/// subagent never silences the gate for another agent or for the main agent's Stop.
///
/// A turn is one user prompt. When both the fire and the asking event carry Claude Code's
/// `prompt_id`, the ids decide: the transcript file can lag behind the event (a hooks module
/// answers Stop inside Claude Code before it has written the turn), so positions read from it
/// may still show the previous turn. Otherwise positions decide, counted in the stopping agent's
/// own transcript (the subagent's on SubagentStop), so positions from different agents are
/// never compared.
#[derive(Clone, Debug)]
pub struct TurnThrottle {
    slot: Slot<PrimitiveState>,
    agent: String,
}

impl TurnThrottle {
    /// The throttle of `agent_id`'s context (`None` or empty is the main agent).
    pub fn new(store: &SessionStore, agent_id: Option<&str>) -> TurnThrottle {
        TurnThrottle {
            slot: store.slot(),
            agent: paths::agent_segment(agent_id),
        }
    }

    /// True when a fire was recorded inside the turn `at` stands in.
    pub fn fired_this_turn(&self, at: TurnAt<'_>) -> bool {
        fired_in(&self.slot.load(), &self.agent, at)
    }

    /// Check and record in one locked step: when nothing fired in the current turn, records a
    /// fire at `at` and returns true; otherwise returns false. Use it at the moment a gate is
    /// about to block, so two gates racing in one agent context cannot both fire.
    /// Always true without a session (nothing can be remembered).
    pub fn claim(&self, at: TurnAt<'_>) -> Result<bool, StateError> {
        if self.slot.is_null() {
            return Ok(true);
        }
        let agent = self.agent.clone();
        self.slot.mutate(|s| {
            if fired_in(s, &agent, at) {
                return false;
            }
            record(s, agent, at);
            true
        })
    }

    /// Records a fire at `at`.
    pub fn record_fire(&self, at: TurnAt<'_>) -> Result<(), StateError> {
        let agent = self.agent.clone();
        self.slot.mutate(|s| record(s, agent, at))
    }
}

fn fired_in(s: &PrimitiveState, agent: &str, at: TurnAt<'_>) -> bool {
    if let (Some(now), Some(then)) = (at.prompt_id, s.last_fired_prompt.get(agent)) {
        return now == then;
    }
    s.last_fired_at
        .get(agent)
        .is_some_and(|&fired| fired > at.turn_start())
}

fn record(s: &mut PrimitiveState, agent: String, at: TurnAt<'_>) {
    // A fire without an id forgets the older one, so it is never compared with a later prompt.
    match at.prompt_id {
        Some(id) => s.last_fired_prompt.insert(agent.clone(), id.to_owned()),
        None => s.last_fired_prompt.remove(&agent),
    };
    s.last_fired_at.insert(agent, at.transcript_len as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, SessionStore) {
        let dir = tempfile::tempdir().unwrap();
        let s = SessionStore::for_session(dir.path(), Some("s"));
        (dir, s)
    }

    #[test]
    fn caps_count_only_committed_fires() {
        let (root, s) = store();
        let c = FireCounter::new(&s, "pack:hook", None);
        assert_eq!(
            c.path().unwrap(),
            root.path()
                .join("hooks/sessions/s/pack:hook/main/hook_state.json")
        );
        assert!(c.reserve(0).is_none());
        // Two empty results do not spend the single fire.
        drop(c.reserve(1).unwrap());
        drop(c.reserve(1).unwrap());
        c.reserve(1).unwrap().commit();
        assert!(c.reserve(1).is_none());
        assert_eq!(c.count(), 1);
        // A reservation held open blocks others from exceeding the cap.
        let two = FireCounter::new(&s, "other", None);
        let held = two.reserve(1).unwrap();
        assert!(two.reserve(1).is_none());
        drop(held);
        assert!(two.reserve(1).is_some());
    }

    #[test]
    fn each_agent_has_its_own_budget() {
        let (_root, s) = store();
        let main = FireCounter::new(&s, "h", None);
        let sub = FireCounter::new(&s, "h", Some("a1"));
        main.reserve(1).unwrap().commit();
        assert!(main.reserve(1).is_none());
        sub.reserve(1).unwrap().commit();
        assert!(sub.reserve(1).is_none());
        assert!(FireCounter::new(&s, "h", Some("a2")).reserve(1).is_some());
    }

    #[test]
    fn a_corrupt_counter_is_kept_aside_and_counts_as_spent() {
        let (_root, s) = store();
        let c = FireCounter::new(&s, "nudge", None);
        c.reserve(1).unwrap().commit();
        let path = c.path().unwrap().to_path_buf();
        std::fs::write(&path, b"{\"fire_count\": garbage").unwrap();
        assert!(
            c.reserve(1).is_none(),
            "a corrupt counter must not fire again"
        );
        assert_eq!(c.count(), 1);
        let dir = path.parent().unwrap();
        let baks: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("hook_state.json.bak."))
            .collect();
        assert_eq!(baks.len(), 1, "{baks:?}");
        assert_eq!(
            std::fs::read(dir.join(&baks[0])).unwrap(),
            b"{\"fire_count\": garbage"
        );
    }

    #[test]
    fn a_lost_counter_counts_as_spent_but_a_new_one_starts_at_zero() {
        let (_root, s) = store();
        let c = FireCounter::new(&s, "nudge", None);
        c.reserve(2).unwrap().commit();
        std::fs::remove_file(c.path().unwrap()).unwrap();
        assert!(c.reserve(2).is_none());
        let fresh = FireCounter::new(&s, "other", None);
        assert!(fresh.reserve(2).is_some());
    }

    #[test]
    fn a_lock_file_created_by_a_racing_process_is_not_a_lost_counter() {
        // Another process has opened (so created) the lock file but not yet taken the lock or
        // written anything: the counter is new, not lost. Its existence alone silenced the hook
        // for the session when 32 processes reserved at once.
        let (_root, s) = store();
        let c = FireCounter::new(&s, "nudge", None);
        let lock = crate::file::lock_path(c.path().unwrap());
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        std::fs::write(&lock, b"").unwrap();
        c.reserve(1).unwrap().commit();
        assert_eq!(c.count(), 1);
        assert!(c.reserve(1).is_none());
    }

    #[test]
    fn state_dirs_and_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let (root, s) = store();
        let c = FireCounter::new(&s, "h", None);
        c.reserve(1).unwrap().commit();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let file = c.path().unwrap();
        assert_eq!(mode(file), 0o600);
        assert_eq!(mode(&crate::file::lock_path(file)), 0o600);
        let mut dir = file.parent().unwrap();
        while dir != root.path() {
            assert_eq!(mode(dir), 0o700, "{}", dir.display());
            dir = dir.parent().unwrap();
        }
    }

    #[test]
    fn a_symlinked_lock_is_not_followed() {
        let (root, s) = store();
        let c = FireCounter::new(&s, "h", None);
        let file = c.path().unwrap();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let target = root.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, crate::file::lock_path(file)).unwrap();
        assert!(c.reserve(1).is_none(), "no lock, no fire");
        assert!(!target.exists(), "the link's target was not created");
    }

    #[test]
    fn an_unwritable_state_dir_is_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the state root should be: nothing can be created under it (even by root).
        let blocker = dir.path().join("state");
        std::fs::write(&blocker, b"").unwrap();
        let s = SessionStore::for_session(&blocker, Some("s"));
        let c = FireCounter::new(&s, "h", None);
        assert!(c.reserve(1).is_none());
        assert!(c.reserve(1).is_none());
        let mut mine = Vec::new();
        while let Some(f) = crate::health::take_write_failure() {
            if f.dir.starts_with(dir.path()) {
                mine.push(f);
            }
        }
        assert_eq!(mine.len(), 1, "{mine:?}");
        assert_eq!(mine[0].dir, blocker);
        assert!(mine[0].to_string().contains("CAPTAIN_HOOK_STATE_DIR"));
        crate::health::forget(dir.path());
    }

    #[test]
    fn null_store_always_allows() {
        let c = FireCounter::new(&SessionStore::null(), "h", None);
        c.reserve(1).unwrap().commit();
        c.reserve(1).unwrap().commit();
        assert!(c.reserve(0).is_none());
    }

    /// A position-only turn (no prompt id): `len` events, the last `turn` of them this turn.
    fn at(len: usize, turn: usize) -> TurnAt<'static> {
        TurnAt {
            transcript_len: len,
            current_turn_len: turn,
            prompt_id: None,
        }
    }

    fn prompt(len: usize, turn: usize, id: &str) -> TurnAt<'_> {
        TurnAt {
            prompt_id: Some(id),
            ..at(len, turn)
        }
    }

    #[test]
    fn throttle_is_per_turn_and_per_agent() {
        let (_root, s) = store();
        let main = TurnThrottle::new(&s, None);
        let sub = TurnThrottle::new(&s, Some("a1"));
        // Turn of 4 events starting at 0; the gate fires at length 4.
        assert!(!main.fired_this_turn(at(4, 4)));
        main.record_fire(at(4, 4)).unwrap();
        assert!(main.fired_this_turn(at(4, 4)));
        // The agent keeps working in the same turn.
        assert!(main.fired_this_turn(at(8, 8)));
        // A new prompt at index 8 starts a fresh turn.
        assert!(!main.fired_this_turn(at(10, 2)));
        // Other agent contexts are unaffected.
        assert!(!sub.fired_this_turn(at(4, 4)));
        let null = TurnThrottle::new(&SessionStore::null(), None);
        null.record_fire(at(3, 3)).unwrap();
        assert!(!null.fired_this_turn(at(3, 3)));
        assert!(null.claim(at(3, 3)).unwrap());
        assert!(null.claim(at(3, 3)).unwrap());
        // claim = check + record under one lock.
        let other = TurnThrottle::new(&s, Some("a2"));
        assert!(other.claim(at(5, 5)).unwrap());
        assert!(!other.claim(at(6, 6)).unwrap());
        assert!(other.claim(at(9, 2)).unwrap());
    }

    #[test]
    fn prompt_ids_decide_the_turn_when_the_transcript_lags() {
        let (_root, s) = store();
        let main = TurnThrottle::new(&s, None);
        assert!(main.claim(prompt(4, 4, "p1")).unwrap());
        // Stopping again while answering p1: spent, wherever the transcript stands.
        assert!(!main.claim(prompt(9, 1, "p1")).unwrap());
        // The next prompt's Stop arrives before Claude Code wrote the turn: the file still
        // reads as p1's turn, yet p2 is a new turn.
        assert!(main.fired_this_turn(at(4, 4)), "positions alone say spent");
        assert!(!main.fired_this_turn(prompt(4, 4, "p2")));
        assert!(main.claim(prompt(4, 4, "p2")).unwrap());
        assert!(!main.claim(prompt(4, 4, "p2")).unwrap());
        // A fire without an id forgets the old one: later events fall back to positions.
        main.record_fire(at(12, 2)).unwrap();
        assert!(main.fired_this_turn(prompt(13, 3, "p2")));
        assert!(!main.fired_this_turn(prompt(20, 2, "p3")));
    }

    #[test]
    fn handles_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<SessionStore>();
        send_sync::<FireCounter>();
        send_sync::<Reservation>();
        send_sync::<TurnThrottle>();
        send_sync::<Slot<HookState>>();
    }

    #[test]
    fn consumption_ledger_hashes_texts() {
        let mut p = PrimitiveState::default();
        assert!(p.consume("h", "retry again"));
        assert!(!p.consume("h", "retry again"));
        assert!(p.is_consumed("h", "retry again"));
        assert!(!p.is_consumed("g", "retry again"));
        assert_eq!(text_hash("x").len(), 16);
    }
}

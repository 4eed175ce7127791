//! Session and durable state for hooks: typed JSON files that survive across events
//! (`reference/state-cli.md` §1).
//!
//! * [`SessionStore`] holds one session's slots under
//!   `<state root>/hooks/sessions/<session_id>/<model_key>.json`; a payload without a session id
//!   gets a null store that persists nothing.
//! * [`Slot`] is one typed file: tolerant reads, atomic writes, and a locked
//!   [`Slot::mutate`] (with the no-nesting rule documented there).
//! * [`WorkflowState`] and [`DurableState`] bundle the load/save/reset/mutate plumbing for one
//!   model (a workflow record under `<session_id>/<state key>/<agent>/<model_key>.json`, as the
//!   seeds lay it out); [`Deque`] caps a growing collection.
//! * [`FireCounter`] enforces `max_fires` with reserve-then-release; [`TurnThrottle`] is the
//!   once-per-turn rule of blocking gates.
//! * [`cleanup_stale`] removes session directories whose transcript is gone.
//!
//! A file that does not parse as its model reads as empty (logged), and the next write moves it
//! aside as `<name>.json.bak.<timestamp>` instead of overwriting it ([`FireCounter`] reads a
//! damaged counter as spent instead). Directories are created 0700 and files 0600; a directory
//! that refuses a write is reported once through [`take_write_failure`].

mod cleanup;
mod deque;
mod error;
mod file;
mod fire;
mod health;
pub mod paths;
pub mod rulings;
mod slot;
mod store;
pub mod tickets;
mod traits;

pub use cleanup::{
    CLAUDE_CONFIG_DIR, CODEX_HOME, CleanupReport, STALE_AFTER, TRANSCRIPT_NOTE, claude_config_dir,
    cleanup_stale, cleanup_stale_sessions, default_transcript_roots, note_transcript,
};
pub use deque::Deque;
pub use error::StateError;
pub use file::LockWait;
pub use fire::{
    FIRE_LOCK_TIMEOUT, FireCounter, HookState, PrimitiveState, Reservation, TurnAt, TurnThrottle,
    text_hash,
};
pub use health::{WriteFailure, take_write_failure};
pub use paths::{model_key, state_root};
pub use slot::Slot;
pub use store::{
    ModelKind, SeenKeys, SessionStore, TrackedModel, track, track_as, tracked_models, untrack,
};
pub use tickets::{Evidence, Reach, Ticket, TicketStore};
pub use traits::{
    DurableContext, DurableRoots, DurableState, DurableStore, Scope, SessionContext, WorkflowState,
};

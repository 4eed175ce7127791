//! What the runtime remembers about events: per-session logs (one JSON line per event: what
//! fired, the verdict, timing, errors) and the decision ledger (SQLite, one row per delivered
//! verdict, and one per judge call of an LLM hook). Workers hand an [`Entry`] to [`submit`] after the reply is sent; a background
//! thread writes it. `capt-hook logs` and `capt-hook decisions` read the results.

pub mod chain;
pub mod entry;
pub mod export;
pub mod judge;
pub mod ledger;
pub mod log;
pub mod spool;
pub mod time;
pub mod writer;

pub use entry::{Entry, Fired, LogLine, LoggedHook, NewDecision};
pub use judge::{JudgeCall, NewJudgeCall};
pub use ledger::{
    Decision, FileCheck, JudgeCallRow, Ledger, LedgerError, Link, Query, verify_files,
};
pub use writer::{flush, flush_on_terminate, start, submit};

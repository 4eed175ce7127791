//! Hooks run against events Claude Code did not send: a hook's inline tests run through the
//! dispatcher ([`run_test`], [`run_registry`]) with the reports `capt-hook test` prints, and a
//! recorded session replayed event by event ([`replay`]).
//!
//! The tests' data (the simulated input, the expectation) lives in the engine
//! (`capt_hook_engine::inline`), since every hook carries it; it is re-exported here so one
//! path names all of inline testing.

mod payload;
mod report;
mod run;

pub mod replay;

pub use capt_hook_engine::inline::*;
pub use payload::build_payload;
pub use report::{Status, TestOutcome, all_passed, human_report, json_report};
pub use run::{evaluate_alone, run_registry, run_test};

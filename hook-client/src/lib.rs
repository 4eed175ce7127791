//! The `hook` client Claude Code runs for every event: std only (no async runtime, no parser
//! tables), so it starts about as fast as a process can.

pub mod doctor;
pub mod env;
pub mod guard;
pub mod run;
pub mod transport;

//! The `hook` client Claude Code runs for every event: std, the wire crate, raw syscalls and a
//! bump allocator only (no async runtime, no libc, no parser tables), so it starts about as fast
//! as a process can.

pub mod alloc;
pub mod doctor;
pub mod env;
pub mod run;
pub mod transport;

//! The wire between `hook`, `capt-hookd` and `capt-hook-worker`: serde message types, 4-byte
//! big-endian length framing with a size cap, and the per-user host paths every binary agrees on.
//!
//! Std + serde only, so the `hook` client can link it without an async runtime.

pub mod claim;
pub mod classic;
pub mod clock;
pub mod env;
pub mod envelope;
pub mod failure;
mod frame;
#[cfg(any(test, feature = "proptest"))]
pub mod fuzz;
pub mod paths;
pub mod payload;
pub mod procfs;
mod wire;

pub use classic::{ClassicAnswer, ClassicResult};
pub use frame::{FrameError, decode, encode, frame_len, push_frame, read_frame, write_frame};
pub use wire::*;

/// The JSON library the wire uses, so the client needs no second copy of it.
pub use serde_json;

/// Version of the message shapes below; both ends refuse any other.
pub const PROTOCOL: u32 = 1;

/// This build's identity. A host only talks to workers and clients of the same build, so a
/// half-upgraded install is reported instead of silently mixing versions. Release builds may
/// stamp it with `CAPT_HOOK_BUILD` at compile time.
pub const BUILD: &str = match option_env!("CAPT_HOOK_BUILD") {
    Some(b) => b,
    None => env!("CARGO_PKG_VERSION"),
};

/// Largest event payload (stdin) the client accepts: 32 MiB.
pub const MAX_EVENT_INPUT: usize = 32 * 1024 * 1024;

/// Largest frame body either side reads: twice the payload cap (JSON escaping of control bytes
/// can double it and more) plus room for the envelope fields.
pub const MAX_FRAME: usize = 2 * MAX_EVENT_INPUT + 1024 * 1024 + 4096;

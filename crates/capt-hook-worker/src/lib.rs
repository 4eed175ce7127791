//! `capt-hook-worker`: the stock worker, the SDK's worker loop with no Rust hooks, so it serves a
//! project's TOML files alone.

use std::process::ExitCode;

/// Runs the stock worker with its arguments (without the program name).
pub fn main(args: &[String]) -> ExitCode {
    captain_hook::worker::main(args, captain_hook::Registry::new())
}

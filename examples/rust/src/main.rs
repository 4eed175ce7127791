//! The examples as a project worker: the `main` a Rust hook project has. The host starts it with
//! `serve --root R`; `evaluate` answers one event on stdin; `test --root R` runs the inline tests.

use std::process::ExitCode;

#[global_allocator]
static ALLOC: captain_hook::Allocator = captain_hook::Allocator;

fn main() -> ExitCode {
    match capt_hook_examples::registry() {
        Ok(registry) => captain_hook::serve(registry),
        Err(e) => {
            eprintln!("capt-hook-examples: a hook does not register: {e}");
            ExitCode::from(1)
        }
    }
}

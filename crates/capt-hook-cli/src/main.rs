//! The `capt-hook` command.

// `capt-hook run` evaluates events as a worker does, on the worker's allocator.
#[global_allocator]
static ALLOC: captain_hook::Allocator = captain_hook::Allocator;

fn main() -> std::process::ExitCode {
    capt_hook_cli::main()
}

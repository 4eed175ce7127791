//! `capt-hook-worker`: see [`capt_hook_worker`].

#[global_allocator]
static ALLOC: captain_hook::Allocator = captain_hook::Allocator;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    capt_hook_worker::main(&args)
}

//! `hook run <Event> [--async]`.

#[global_allocator]
static ALLOC: capt_hook_client::alloc::Allocator = capt_hook_client::alloc::Allocator;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    capt_hook_client::run::main(&args)
}

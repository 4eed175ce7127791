//! The runtime binary, for the end-to-end tests.

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    capt_hook_worker::main(&args)
}

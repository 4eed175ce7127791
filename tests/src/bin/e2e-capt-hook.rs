//! The `capt-hook` command line, for the end-to-end tests (`logs`, `decisions`).

fn main() -> std::process::ExitCode {
    capt_hook_cli::main()
}

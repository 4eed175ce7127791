//! The `capt-hook` command.

fn main() -> std::process::ExitCode {
    capt_hook_cli::main()
}

//! The `capt-hook` command line, for the end-to-end tests (the host runs it for builds; the
//! tests read `logs` and `decisions` with it).

fn main() -> std::process::ExitCode {
    capt_hook_cli::main()
}

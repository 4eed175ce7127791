//! `capt-hook-worker`: evaluates events for one project, either for the host over framed
//! stdin/stdout (`serve --root R`) or once for the client's fallback (`evaluate`).

pub mod evaluate;
pub mod serve;
pub mod warm;

use std::process::ExitCode;

const USAGE: &str = "usage: capt-hook-worker serve --root ROOT | evaluate | version";

/// Runs the worker with its arguments (without the program name).
pub fn main(args: &[String]) -> ExitCode {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["serve", "--root", root] => serve::run(root.as_ref()),
        ["evaluate"] => evaluate::run(),
        ["version"] => {
            println!("{{\"schema\":1,\"build\":{:?}}}", capt_hook_proto::BUILD);
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

//! The worker loop: evaluates events for one project, either for the host over framed stdin/stdout
//! (`serve --root R`) or once for the client's fallback (`evaluate`). The stock `capt-hook-worker`
//! runs it with no Rust hooks; a project's own build (`capt-hook build`) runs it with the hooks its
//! `main` registered, through `captain_hook::serve`. Either way the TOML files of the hooks
//! directory load after the Rust hooks, so registration order is Rust first, then the files in byte
//! order of name.

pub mod agent;
pub mod evaluate;
pub mod run;
pub mod serve;
pub mod test;
pub mod warm;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use capt_hook_engine::registry::Registry;

const USAGE: &str = "usage: <worker> serve --root ROOT [--note TEXT] | evaluate | run EVENT --root \
                     ROOT [--async] | test --root ROOT [--json] | version";

/// What the host tells a worker at start besides its root.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The project root.
    pub root: PathBuf,
    /// A notice to give each session once (`systemMessage`): why the project's Rust hooks are
    /// not live in this worker.
    pub note: Option<String>,
}

/// Runs a worker with its arguments (without the program name); `base` holds the hooks
/// registered in Rust, empty for the stock worker.
pub fn main(args: &[String], base: Registry) -> ExitCode {
    let base = Arc::new(base);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["serve", "--root", root, rest @ ..] => {
            let note = match rest {
                [] => None,
                ["--note", note] => Some((*note).to_owned()),
                _ => return usage(),
            };
            let opts = ServeOptions {
                root: root.into(),
                note,
            };
            serve::run(&opts, base)
        }
        ["evaluate"] => evaluate::run(base),
        ["run", event, "--root", root] => run::run(event, root.as_ref(), &base, false),
        ["run", event, "--root", root, "--async"] => run::run(event, root.as_ref(), &base, true),
        ["test", "--root", root] => test::run(root.as_ref(), &base, false),
        ["test", "--root", root, "--json"] => test::run(root.as_ref(), &base, true),
        ["version"] => {
            println!(
                "{{\"schema\":1,\"build\":{:?},\"protocol\":{},\"rust_hooks\":{}}}",
                capt_hook_proto::BUILD,
                capt_hook_proto::PROTOCOL,
                base.hooks().len()
            );
            ExitCode::SUCCESS
        }
        _ => usage(),
    }
}

/// Exit 1, never 2: exit 2 means a blocking verdict and nothing else.
fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(1)
}

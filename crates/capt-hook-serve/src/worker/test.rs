//! `<worker> test --root R`: the inline tests of every hook this worker would serve (its Rust
//! hooks, then the TOML files), reported as `capt-hook test` reports them.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::project::{Project, default_hooks_dir};
use capt_hook_engine::registry::Registry;
use capt_hook_testing::{TestOutcome, all_passed, human_report, json_report, run_test};

/// Runs the tests; exit 0 when all passed and every file loaded, else 1.
pub fn run(root: &Path, base: &Arc<Registry>, json: bool) -> ExitCode {
    let project = Project::load_with(root, &default_hooks_dir(root), base);
    let mut outcomes: Vec<TestOutcome> = Vec::new();
    for hook in project.dispatcher().registry().hooks() {
        for t in &hook.tests {
            outcomes.push(run_test(hook, t, Some(root)));
        }
    }
    for e in project.errors() {
        eprintln!("  ERROR {e}");
    }
    if json {
        print!("{}", json_report(&outcomes));
    } else {
        print!("{}", human_report(&outcomes));
    }
    if all_passed(&outcomes) && project.errors().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

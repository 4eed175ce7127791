//! `capt-hook list` (what runs in this project, and why) and `capt-hook pack list | test`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use captain_hook::Registry;
use captain_hook::packs::{self, State, builtin::BUILTINS};
use captain_hook::project::Project;
use captain_hook::testing::{TestOutcome, all_passed, human_report, run_test};
use serde_json::Value;

/// `capt-hook list`: every hook the runtime would run for this project, one line each
/// (`name kind events source origin`), then the packs and pack hooks that are not running, as
/// `#` lines saying why.
pub fn list(root: &Path, hooks_dir: &Path) -> ExitCode {
    let project = Project::load_with_packs(root, hooks_dir, &Registry::new());
    for e in project.errors() {
        eprintln!("capt-hook: {e}");
    }
    for n in project.notices() {
        eprintln!("capt-hook: {n}");
    }
    let packs = project.packs();
    for h in project.dispatcher().registry().hooks() {
        let source = h
            .source
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let origin = match packs.and_then(|p| p.origin(&h.name)) {
            Some(p) => format!("{} ({})", p.id, p.why),
            None => "project".to_owned(),
        };
        println!("{}\t{}\t{}\t{source}\t{origin}", h.name, h.kind, h.events);
    }
    for line in judgeless(&project, root) {
        println!("{line}");
    }
    if let Some(packs) = packs {
        for p in packs.infos.iter().filter(|p| p.state != State::Active) {
            println!("# {} {}: {}", p.id, p.state.word(), p.why);
        }
        for h in &packs.hooks_off {
            println!(
                "# {h} off: disabled in {}",
                hooks_dir.join("config.toml").display()
            );
        }
    }
    if project.errors().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// A `#` line for each pack LLM hook that stays quiet here because its judge cannot run (the
/// packs' LLM hooks skip rather than fail without one), saying why.
fn judgeless(project: &Project, root: &Path) -> Vec<String> {
    let Some(packs) = project.packs() else {
        return Vec::new();
    };
    project
        .dispatcher()
        .registry()
        .hooks()
        .iter()
        .filter(|h| packs.origin(&h.name).is_some() && h.kind.starts_with("llm_"))
        .filter_map(|h| {
            let specialty = h.specialty.as_deref()?;
            let why = captain_hook::llm::missing_judge(Some(root), specialty)?;
            Some(format!("# {} skipped: {why}", h.name))
        })
        .collect()
}

/// `capt-hook pack list`: one row per pack considered for this project.
pub fn pack_list(root: &Path, hooks_dir: &Path) -> ExitCode {
    let project = Project::load_with_packs(root, hooks_dir, &Registry::new());
    let Some(packs) = project.packs() else {
        return ExitCode::SUCCESS;
    };
    // Policy packs load first; listed first, with how far they are trusted.
    let policy = captain_hook::packs::policy::load(
        &captain_hook::packs::policy::Settings::from_env(),
        &mut Registry::new(),
    );
    let width = packs
        .infos
        .iter()
        .map(|p| p.id.len())
        .chain(policy.packs.iter().map(|p| p.id.len()))
        .max()
        .unwrap_or(0);
    for p in &policy.packs {
        use captain_hook::packs::policy::Trust;
        let (state, why) = match &p.trust {
            Trust::Signed => (
                "signed",
                "signature verified; not switchable off".to_owned(),
            ),
            Trust::Unverified => (
                "active",
                "no trusted key: unverified; not switchable off".to_owned(),
            ),
            Trust::Refused(e) => ("refused", e.message.clone()),
        };
        println!(
            "  {:<width$}  {:<7}  {:>3} hooks  {:<8}  {}",
            p.id, "policy", p.hooks, state, why
        );
    }
    for p in &packs.infos {
        println!(
            "  {:<width$}  {:<7}  {:>3} hooks  {:<8}  {}",
            p.id,
            p.kind,
            p.hooks,
            p.state.word(),
            p.why
        );
    }
    for line in judgeless(&project, root) {
        println!("{line}");
    }
    for e in policy.errors.iter().chain(&packs.errors) {
        println!("!  {e}");
    }
    for n in &packs.notices {
        println!("!  {n}");
    }
    if packs.errors.is_empty() && policy.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `capt-hook pack test [PLUGIN_ROOT]`: a plugin's pack alone (its layout, its dependency on
/// captain-hook, its hooks and their inline tests), or with no argument every builtin pack.
pub fn pack_test(plugin_root: Option<&PathBuf>) -> ExitCode {
    let mut registry = Registry::new();
    let mut problems: Vec<String> = Vec::new();
    match plugin_root {
        None => {
            for b in BUILTINS {
                problems.extend(
                    packs::load_builtin(b, &mut registry)
                        .iter()
                        .map(|e| e.to_string()),
                );
            }
        }
        Some(dir) => {
            problems.extend(plugin_layout_problems(dir));
            if problems.is_empty() {
                problems.extend(
                    packs::load_plugin_pack(dir, &mut registry)
                        .iter()
                        .map(|e| e.to_string()),
                );
                if problems.is_empty() && registry.is_empty() {
                    problems.push(format!(
                        "{}: the pack has no hooks",
                        dir.join("capt-hook/hooks").display()
                    ));
                }
            }
        }
    }
    let mut outcomes: Vec<TestOutcome> = Vec::new();
    for hook in registry.hooks() {
        for t in &hook.tests {
            outcomes.push(run_test(hook, t, None));
        }
    }
    for p in &problems {
        eprintln!("  ERROR {p}");
    }
    print!("{}", human_report(&outcomes));
    if problems.is_empty() && all_passed(&outcomes) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// What is wrong with a plugin directory as a pack's home: the plugin manifest, its dependency
/// on captain-hook (`{"name": "captain-hook", "version": ">=X.Y.Z", …}` in `dependencies`), and
/// the pack's own layout.
fn plugin_layout_problems(dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let manifest = dir.join(".claude-plugin/plugin.json");
    match std::fs::read_to_string(&manifest).map(|t| serde_json::from_str::<Value>(&t)) {
        Err(e) => problems.push(format!("{}: {e}", manifest.display())),
        Ok(Err(e)) => problems.push(format!("{}: not JSON: {e}", manifest.display())),
        Ok(Ok(v)) => {
            let deps = v.get("dependencies").and_then(Value::as_array);
            let ours = deps
                .into_iter()
                .flatten()
                .find(|d| d.get("name").and_then(Value::as_str) == Some("captain-hook"));
            match ours {
                None => problems.push(format!(
                    "{}: dependencies needs {{\"name\": \"captain-hook\", \"marketplace\": \
                     \"captain-hook\", \"version\": \">=X.Y.Z\"}}",
                    manifest.display()
                )),
                Some(d) => {
                    let version = d.get("version").and_then(Value::as_str).unwrap_or("");
                    if !is_minimum_version(version) {
                        problems.push(format!(
                            "{}: the captain-hook dependency's version must be >=X.Y.Z, not {version:?}",
                            manifest.display()
                        ));
                    }
                }
            }
        }
    }
    for (path, dir_expected) in [("capt-hook/pack.toml", false), ("capt-hook/hooks", true)] {
        let p = dir.join(path);
        let ok = if dir_expected {
            p.is_dir()
        } else {
            p.is_file()
        };
        if !ok {
            problems.push(format!("{} is missing", p.display()));
        }
    }
    problems
}

/// `>=` then three dot-separated numbers, spaces allowed after `>=`.
fn is_minimum_version(v: &str) -> bool {
    let Some(rest) = v.trim().strip_prefix(">=") else {
        return false;
    };
    let parts: Vec<&str> = rest.trim_start().split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

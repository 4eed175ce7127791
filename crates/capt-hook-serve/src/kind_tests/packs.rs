use std::sync::Arc;

use capt_hook_core::{Action, EventContext, EventKind};

use capt_hook_engine::dispatch::{DispatchOptions, Dispatcher};
use capt_hook_engine::registry::Registry;
use capt_hook_packs::*;
use capt_hook_testing::run_test;
use capt_hook_toml::loader::{CONFIG_FILE, load_source};
use std::path::{Path, PathBuf};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project root, a hooks dir and a home, all empty.
fn scratch() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let hooks = root.join(".claude/hooks");
    (tmp, root, hooks, home)
}

fn bash(registry: &Registry, root: &Path, command: &str) -> Option<capt_hook_core::HookResult> {
    let evt = capt_hook_core::Event::new(
        EventKind::PreToolUse,
        serde_json::json!({"session_id": "s", "tool_name": "Bash", "tool_input": {"command": command}}),
        EventContext {
            project_root: Some(root.to_path_buf()),
            ..EventContext::default()
        },
    )
    .unwrap();
    Dispatcher::new(Arc::new(registry.clone()), Some(root))
        .outcome(&Arc::new(evt), DispatchOptions::default())
        .result
}

#[test]
fn every_builtin_pack_loads_and_passes_its_inline_tests() {
    for b in builtin::BUILTINS {
        let mut reg = Registry::new();
        let errors = load_builtin(b, &mut reg);
        assert!(errors.is_empty(), "{}: {errors:?}", b.name);
        assert!(!reg.is_empty(), "{} has no hooks", b.name);
        for hook in reg.hooks() {
            assert!(!hook.tests.is_empty(), "{} has no inline tests", hook.name);
            assert!(
                hook.name.starts_with(&format!("{}/", b.name)),
                "{}",
                hook.name
            );
            for t in &hook.tests {
                let outcome = run_test(hook, t, None);
                assert_eq!(
                    outcome.status,
                    capt_hook_testing::Status::Pass,
                    "{}: {outcome:?}",
                    hook.name
                );
            }
        }
    }
}

#[test]
fn a_project_without_hooks_gets_the_always_on_packs_folded_together() {
    let (_tmp, root, hooks, home) = scratch();
    let mut reg = Registry::new();
    let packs = load(&root, &hooks, &home.join(".claude"), &mut reg);
    assert!(packs.errors.is_empty(), "{:?}", packs.errors);
    assert!(packs.notices.is_empty(), "{:?}", packs.notices);
    let state = |id: &str| {
        packs
            .infos
            .iter()
            .find(|p| p.id == id)
            .unwrap()
            .state
            .clone()
    };
    assert_eq!(state("builtin:general"), State::Active);
    assert_eq!(state("builtin:performance"), State::Active);
    assert_eq!(state("builtin:go"), State::Inactive);
    // The runtime's load leaves the builtin hooks' inline tests unread (load_builtin has them).
    assert!(reg.hooks().iter().all(|h| h.tests.is_empty()));
    for cmd in ["pkill node", "git stash pop"] {
        let r = bash(&reg, &root, cmd).unwrap();
        assert_eq!(r.action, Action::Block, "{cmd}");
    }
    // The filesystem guard leaves the plain form to the rewrite, so the fold rewrites.
    let r = bash(&reg, &root, "find ~ -name x").unwrap();
    assert_eq!(r.action, Action::Rewrite, "{r:?}");
    let input = r.updated_input.unwrap();
    assert_eq!(input["command"], "rg --files ~ --glob x");
    assert!(bash(&reg, &root, "ls -la").is_none());
}

#[test]
fn manifests_turn_language_packs_on_and_config_turns_packs_and_hooks_off() {
    let (_tmp, root, hooks, home) = scratch();
    write(&root.join("svc/go.mod"), "module x\n");
    write(
        &hooks.join(CONFIG_FILE),
        "[packs]\ndisable = [\"performance\", \"builtin:fixes\"]\n\n[hooks]\ndisable = [\"general/commands:block_command_pkill\", \"nope\"]\n",
    );
    let mut reg = Registry::new();
    let packs = load(&root, &hooks, &home.join(".claude"), &mut reg);
    let info = |id: &str| packs.infos.iter().find(|p| p.id == id).unwrap().clone();
    assert_eq!(info("builtin:go").state, State::Active);
    assert!(
        info("builtin:go").why.contains("go.mod"),
        "{:?}",
        info("builtin:go")
    );
    assert_eq!(info("builtin:performance").state, State::Off);
    assert_eq!(info("builtin:fixes").state, State::Off);
    assert_eq!(
        packs.hooks_off,
        vec!["general/commands:block_command_pkill"]
    );
    assert!(
        bash(&reg, &root, "pkill node").is_none(),
        "the pkill hook is off"
    );
    assert_eq!(
        bash(&reg, &root, "git stash pop").unwrap().action,
        Action::Block,
        "the rest of its pack still runs"
    );
    assert_eq!(packs.notices.len(), 1, "{:?}", packs.notices);
    assert!(packs.notices[0].contains("`nope`"), "{:?}", packs.notices);
    assert!(packs.origin("general/commands:hook_stash_guard").is_some());
    assert!(packs.origin("mine:hook_x").is_none());
}

/// The host guard is mandatory: a project's config.toml naming its pack or its hook turns
/// nothing off, and says so.
#[test]
fn the_mandatory_host_guard_cannot_be_turned_off() {
    let (_tmp, root, hooks, home) = scratch();
    write(
        &hooks.join(CONFIG_FILE),
        "[packs]\ndisable = [\"host\", \"builtin:host\"]\n\n[hooks]\ndisable = [\"host/control:hook_host_control\"]\n",
    );
    let mut reg = Registry::new();
    let packs = load(&root, &hooks, &home.join(".claude"), &mut reg);
    let info = packs.infos.iter().find(|p| p.id == "builtin:host").unwrap();
    assert_eq!(info.state, State::Active);
    assert!(info.why.contains("mandatory"), "{info:?}");
    assert!(packs.hooks_off.is_empty(), "{:?}", packs.hooks_off);
    let r = bash(&reg, &root, "capt-hookd restart-workers").unwrap();
    assert_eq!(r.action, Action::Block);
    assert!(
        r.message
            .as_deref()
            .unwrap_or("")
            .contains("their own terminal"),
        "{r:?}"
    );
    assert!(bash(&reg, &root, "capt-hookd status").is_none());
    assert_eq!(packs.notices.len(), 2, "{:?}", packs.notices);
    assert!(
        packs
            .notices
            .iter()
            .all(|n| n.contains("cannot be turned off")),
        "{:?}",
        packs.notices
    );
    assert!(
        reg.hooks()
            .iter()
            .any(|h| h.name == "host/control:hook_host_control" && h.mandatory),
        "the hook itself is mandatory for the client"
    );
}

#[test]
fn a_config_that_does_not_parse_turns_nothing_off_and_says_where() {
    let (_tmp, root, hooks, home) = scratch();
    write(&hooks.join(CONFIG_FILE), "[packs]\ndisabled = [\"go\"]\n");
    let mut reg = Registry::new();
    let packs = load(&root, &hooks, &home.join(".claude"), &mut reg);
    assert!(packs.errors.is_empty());
    assert!(
        packs.notices[0].contains("config.toml:2:"),
        "{:?}",
        packs.notices
    );
    assert!(bash(&reg, &root, "pkill node").is_some());
}

/// A plugin `id` installed at `<tmp>/plugins/<name>` and enabled in the user's settings.
fn install_plugin(home: &Path, tmp: &Path, id: &str, files: &[(&str, &str)]) -> PathBuf {
    let name = id.split('@').next().unwrap();
    let dir = tmp.join("plugins").join(name);
    write(
        &dir.join(".claude-plugin/plugin.json"),
        &format!(r#"{{"name": "{name}"}}"#),
    );
    for (path, text) in files {
        write(&dir.join(path), text);
    }
    let settings = home.join(".claude/settings.json");
    let mut enabled: serde_json::Value = std::fs::read_to_string(&settings)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| serde_json::json!({"enabledPlugins": {}}));
    enabled["enabledPlugins"][id] = true.into();
    write(&settings, &enabled.to_string());
    let roster_path = home.join(".claude/plugins/installed_plugins.json");
    let mut roster: serde_json::Value = std::fs::read_to_string(&roster_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| serde_json::json!({"version": 2, "plugins": {}}));
    roster["plugins"][id] = serde_json::json!([{"scope": "user", "installPath": dir}]);
    write(&roster_path, &roster.to_string());
    dir
}

const DEPLOY_GUARD: &str = "[[hook]]\nkind = \"block_command\"\nargv = [\"make\", \"deploy\"]\nreason = \"deploys go through CI\"\n";

#[test]
fn plugin_packs_load_after_the_builtins_and_broken_ones_are_load_errors() {
    let (tmp, root, hooks, home) = scratch();
    install_plugin(
        &home,
        tmp.path(),
        "acme@market",
        &[
            ("capt-hook/pack.toml", "description = \"deploy rules\"\n"),
            ("capt-hook/hooks/deploy.toml", DEPLOY_GUARD),
        ],
    );
    install_plugin(&home, tmp.path(), "plain@market", &[]);
    install_plugin(
        &home,
        tmp.path(),
        "broken@market",
        &[("capt-hook/pack.toml", "description = 1\n")],
    );
    let mut reg = Registry::new();
    let packs = load(&root, &hooks, &home.join(".claude"), &mut reg);
    let acme = packs
        .infos
        .iter()
        .find(|p| p.id == "plugin:acme@market")
        .unwrap();
    assert_eq!((acme.state.clone(), acme.hooks), (State::Active, 1));
    assert!(acme.why.contains("settings.json"), "{acme:?}");
    assert!(
        !packs.infos.iter().any(|p| p.id == "plugin:plain@market"),
        "a plugin without capt-hook/ is not a pack"
    );
    let broken = packs
        .infos
        .iter()
        .find(|p| p.id == "plugin:broken@market")
        .unwrap();
    assert_eq!(broken.state, State::Broken);
    assert_eq!(packs.errors.len(), 1, "{:?}", packs.errors);
    assert!(
        packs.errors[0].message.contains("pack.toml and hooks/"),
        "{:?}",
        packs.errors
    );
    let r = bash(&reg, &root, "make deploy").unwrap();
    assert_eq!(r.action, Action::Block);
    assert!(
        reg.hooks()
            .last()
            .unwrap()
            .name
            .starts_with("acme@market/deploy:")
    );
}

/// `load` defers compiling the builtin packs' patterns to their first search; this loads every
/// builtin hook file the ordinary way, where a pattern that does not compile is a load error.
#[test]
fn every_builtin_pattern_compiles_when_loaded_eagerly() {
    for b in builtin::BUILTINS {
        for (name, text) in b.hooks {
            let path = PathBuf::from(format!("builtin:{}/hooks/{name}", b.name));
            let errors = load_source(text, name, &path, &mut Registry::new());
            assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        }
    }
}

/// A worker's load reads the packs on a second thread; the result is what loading them one
/// after the other gives: the Rust hooks, then the project's files, then the packs in their
/// order, with both sides' load errors.
#[test]
fn packs_loaded_beside_the_project_keep_registration_order_and_errors() {
    let (_tmp, root, hooks, _home) = scratch();
    write(
        &hooks.join("a.toml"),
        "[[hook]]\nkind = \"block_command\"\nargv = [\"x\"]\nreason = \"x\"\n",
    );
    write(&hooks.join("b.toml"), "[[hook]]\nkind = \"nope\"\n");
    write(
        &hooks.join(CONFIG_FILE),
        "[packs]\ndisable = [\"no-such-pack\"]\n",
    );
    let mut base = Registry::new();
    let y = capt_hook_engine::primitives::CommandMatch::argv(&["y"]).unwrap();
    base.add(
        "rust",
        capt_hook_engine::primitives::block_command(y, "y").name("first"),
    )
    .unwrap();

    let project = crate::project::Project::load_with_packs(&root, &hooks, &base);

    let mut sequential = base.clone();
    let mut errors = capt_hook_toml::loader::load_dir(&hooks, &mut sequential);
    let claude = capt_hook_state::claude_config_dir();
    let packs = load(&root, &hooks, &claude, &mut sequential);
    errors.extend(packs.errors.iter().cloned());
    let names =
        |r: &[Arc<capt_hook_engine::Hook>]| r.iter().map(|h| h.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(project.dispatcher().registry().hooks()),
        names(sequential.hooks())
    );
    assert_eq!(
        project.dispatcher().registry().hooks()[0].name,
        "rust:block_command_first"
    );
    assert!(
        project.dispatcher().registry().hooks().len() > 2,
        "packs were appended"
    );
    assert_eq!(project.errors(), &errors[..]);
    assert!(errors.iter().any(|e| e.file.ends_with("b.toml")));
}

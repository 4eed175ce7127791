//! The general pack's rm guard, and the safety pack's recursive-delete rule, against a real
//! filesystem: repositories, directories holding them, broad globs, missing paths and the trash
//! rewrite need directories on disk that are not scratch space (everything under the temp dir
//! is), which inline tests cannot make. They live under the user's cache directory instead.

// A test fails by panicking: unwrap and expect are how it says what broke.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use capt_hook_core::{Action, Event, EventContext, EventKind, HookResult};
use capt_hook_engine::dispatch::{DispatchOptions, Dispatcher};
use capt_hook_engine::registry::Registry;
use capt_hook_packs::builtin::BUILTINS;
use serde_json::json;

/// A fresh directory outside scratch space, unique to the test.
fn workspace(name: &str) -> PathBuf {
    // Neither under a temp dir (those are exempt) nor inside a repository (the target dir sits
    // inside this checkout, whose .git the guard finds): the user's cache directory.
    let home = std::env::home_dir().expect("a home directory");
    let dir = home
        .join(".cache/capt-hook-tests/deletions")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The general pack's deletions hooks alone, as a worker registers them.
fn deletions() -> Dispatcher {
    let general = BUILTINS.iter().find(|b| b.name == "general").unwrap();
    let mut registry = Registry::new();
    let errors = capt_hook_packs::load_builtin(general, &mut registry);
    assert!(errors.is_empty(), "{errors:?}");
    let mut only = Registry::new();
    for hook in registry.hooks() {
        if hook.name.starts_with("general/deletions:") {
            only.push((**hook).clone());
        }
    }
    Dispatcher::new(Arc::new(only), None)
}

/// The verdict on `command` run in `cwd`, with `path` as the request's PATH.
fn verdict(command: &str, cwd: &Path, path: &str) -> Option<HookResult> {
    let env = BTreeMap::from([("PATH".to_owned(), path.to_owned())]);
    let evt = Event::new(
        EventKind::PreToolUse,
        json!({
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "cwd": cwd.display().to_string(),
        }),
        EventContext {
            request_env: Some(Arc::new(env)),
            ..EventContext::default()
        },
    )
    .unwrap();
    deletions().dispatch(&Arc::new(evt), DispatchOptions::default())
}

fn blocked(result: Option<HookResult>, pattern: &str) {
    let r = result.expect("a verdict");
    assert_eq!(r.action, Action::Block, "{r:?}");
    let message = r.message.unwrap_or_default();
    assert!(message.contains(pattern), "{message:?} lacks {pattern:?}");
}

#[test]
fn repositories_are_never_deleted_whole() {
    let root = workspace("repos");
    let proj = root.join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::create_dir_all(root.join("jj/.jj")).unwrap();
    let nowhere = "/nonexistent";
    blocked(verdict("rm -rf proj", &root, nowhere), "git/jj repository");
    blocked(verdict("rm -rf jj/", &root, nowhere), "git/jj repository");
    blocked(verdict("rm -rf .", &proj, nowhere), "git/jj repository");
    blocked(
        verdict(
            &format!("rm -r {}", root.display()),
            Path::new("/"),
            nowhere,
        ),
        "holding some",
    );
    // Inside a repository version control restores what rm takes.
    assert_eq!(verdict("rm -rf src build.log", &proj, nowhere), None);
    assert_eq!(verdict("cd src && rm -r ../target", &proj, nowhere), None);
}

#[test]
fn broad_globs_are_blocked_outside_scratch() {
    let root = workspace("globs");
    let proj = root.join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    for i in 0..11 {
        std::fs::write(proj.join(format!("out{i}.log")), "").unwrap();
    }
    std::fs::write(proj.join("keep.txt"), "").unwrap();
    blocked(
        verdict("rm *.log", &proj, "/nonexistent"),
        "more than 10 paths",
    );
    assert_eq!(verdict("rm k*.txt out1*.log", &proj, "/nonexistent"), None);
}

#[test]
fn outside_a_repository_rm_becomes_trash_where_trash_exists() {
    let root = workspace("trash");
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let trash = bin.join("trash");
    std::fs::write(&trash, "#!/bin/sh\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&trash, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(root.join("notes.txt"), "").unwrap();
    let with_trash = bin.display().to_string();

    let r = verdict("rm -f notes.txt old.txt", &root, &with_trash).expect("a rewrite");
    assert_eq!(r.action, Action::Rewrite, "{r:?}");
    let input = r.updated_input.unwrap();
    assert_eq!(input["command"], "trash notes.txt old.txt");
    assert!(r.note.unwrap_or_default().contains("restored"));

    // A line that is more than one plain rm cannot be rewritten safely: it is blocked.
    blocked(
        verdict("rm notes.txt && make", &root, &with_trash),
        "outside any git/jj repository",
    );
    // Without trash, the plain rm is blocked too.
    blocked(
        verdict("rm notes.txt", &root, "/nonexistent"),
        "outside any git/jj repository",
    );
}

/// The safety pack's recursive-delete rule alone: it stops a tree inside a repository, which
/// the general pack lets version control answer for, unless the line deletes nothing at all.
#[test]
fn a_recursive_delete_inside_a_repository_needs_something_to_delete() {
    let root = workspace("recursive");
    let proj = root.join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::create_dir_all(proj.join("build/out")).unwrap();
    let safety = BUILTINS.iter().find(|b| b.name == "safety").unwrap();
    let mut registry = Registry::new();
    let errors = capt_hook_packs::load_builtin(safety, &mut registry);
    assert!(errors.is_empty(), "{errors:?}");
    let mut only = Registry::new();
    for hook in registry.hooks() {
        if hook.name == "safety/filesystem:block_command_rm_recursive" {
            only.push((**hook).clone());
        }
    }
    assert_eq!(only.hooks().len(), 1, "the rule is there, once");
    let dispatcher = Dispatcher::new(Arc::new(only), None);
    let verdict = |command: &str| {
        let evt = Event::new(
            EventKind::PreToolUse,
            json!({
                "tool_name": "Bash",
                "tool_input": {"command": command},
                "cwd": proj.display().to_string(),
            }),
            EventContext::default(),
        )
        .unwrap();
        dispatcher.dispatch(&Arc::new(evt), DispatchOptions::default())
    };
    blocked(verdict("rm -rf build"), "rm -r deletes a whole tree");
    blocked(
        verdict("rm -rf gone build/out"),
        "rm -r deletes a whole tree",
    );
    // A command before the rm could make the missing path (here from the tree that exists).
    blocked(
        verdict("mv build gone && rm -rf gone"),
        "rm -r deletes a whole tree",
    );
    for nothing in [
        "rm -rf gone",
        r"rm -rf C:\Users\u\AppData\Local\Temp\x",
        "cd build && rm -r -f missing",
    ] {
        assert_eq!(verdict(nothing), None, "{nothing}");
    }
    std::fs::remove_dir_all(&root).unwrap();
}

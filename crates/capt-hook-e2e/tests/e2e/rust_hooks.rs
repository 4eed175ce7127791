//! A Rust hook project goes live through a real host: scaffolded, built, served by its own
//! worker; edited, served by the stock worker with a one-time note while a background build
//! runs; then served by the new build. A build whose worker cannot start is retired and said.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use capt_hook_proto::serde_json::{Value, json};

use crate::support::*;

/// The SDK the project builds against: this workspace.
fn sdk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace root")
        .to_path_buf()
}

/// Builds of every run share one cargo target directory, so the SDK compiles once.
fn build_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("rust-hooks")
}

/// A `main` whose one handler blocks `cat secrets` with `message`.
fn handler(message: &str) -> String {
    format!(
        r#"use captain_hook::core::EventKind;
use captain_hook::{{Expect, HookResult, Input, Registry, on}};

fn main() -> std::process::ExitCode {{
    let mut hooks = Registry::new();
    hooks
        .add(
            "project",
            on(&[EventKind::PreToolUse], |evt| {{
                let hit = evt.command().is_some_and(|c| c.contains("cat secrets"));
                Ok(hit.then(|| HookResult::block("{message}")))
            }})
            .name("secrets")
            .test(Input::command("cat secrets"), Expect::block().matching("{message}")),
        )
        .expect("valid hook");
    captain_hook::serve(hooks)
}}
"#
    )
}

fn pre_tool(root: &Path, session: &str, command: &str) -> Vec<u8> {
    json!({
        "session_id": session, "transcript_path": "/dev/null", "cwd": root,
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": "toolu_1",
    })
    .to_string()
    .into_bytes()
}

fn reason(v: &Value) -> &str {
    v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default()
}

/// The keys of the live workers (a project build's key ends in `@<hash>`).
fn worker_keys(env: &Env) -> Vec<String> {
    env.status()
        .map(|s| {
            s["workers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|w| w["key"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_rust_hook_project_goes_live_and_follows_its_sources() {
    let (sdk, builds) = (sdk(), build_dir());
    // The temp user's HOME hides the real toolchain and registry cache: name them.
    let home = PathBuf::from(std::env::var("HOME").unwrap());
    let cargo_home =
        std::env::var("CARGO_HOME").unwrap_or_else(|_| home.join(".cargo").display().to_string());
    let rustup_home =
        std::env::var("RUSTUP_HOME").unwrap_or_else(|_| home.join(".rustup").display().to_string());
    let env = Env::with(&[
        ("CAPT_HOOK_SDK", sdk.to_str().unwrap()),
        ("CAPT_HOOK_BUILD_DIR", builds.to_str().unwrap()),
        ("CARGO_HOME", &cargo_home),
        ("RUSTUP_HOME", &rustup_home),
        // `capt-hook build` runs a real `cargo build --release`; cargo's own profile variables
        // (which outrank the project's manifest) make that release build unoptimised, so a cold
        // run compiles the SDK and its C grammars at debug speed. What this test checks (build,
        // go live, rebuild on edit, retire a broken build) does not depend on optimisation.
        ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0"),
        ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "256"),
    ]);
    let root = env.project("rusty", HOOKS);
    let src = root.join(".claude/hooks/src/main.rs");

    // Scaffold, then a handler of our own, then build: cargo's output is shown, exit 0.
    let init = env
        .cmd("capt-hook")
        .arg("--root")
        .arg(&root)
        .args(["init", "--rust"])
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", stderr(&init));
    assert!(
        root.join(".claude/hooks/Cargo.lock").is_file(),
        "the SDK's lock file seeds the project's"
    );
    std::fs::write(&src, handler("v1 handler says no")).unwrap();
    let build = env
        .cmd("capt-hook")
        .arg("--root")
        .arg(&root)
        .arg("build")
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", stderr(&build));
    let tests = env
        .cmd("capt-hook")
        .arg("--root")
        .arg(&root)
        .arg("test")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&tests.stdout);
    assert!(tests.status.success(), "{report}{}", stderr(&tests));
    assert!(
        report.contains("secrets"),
        "the Rust hook's inline test ran: {report}"
    );

    // Live: the handler answers, and the TOML hooks load in the same worker.
    let out = env.hook("PreToolUse", &pre_tool(&root, "s1", "cat secrets"), &[]);
    let v = json_out(&out);
    assert_eq!(decision(&v), Some("deny"), "{v}");
    assert!(reason(&v).contains("v1 handler says no"), "{v}");
    let v = json_out(&env.hook("PreToolUse", &pre_tool(&root, "s1", "git stash"), &[]));
    assert!(
        reason(&v).contains("jj shelve"),
        "TOML hooks still run: {v}"
    );
    let keys = worker_keys(&env);
    assert!(
        keys.iter().any(|k| k.contains('@')),
        "a project build serves: {keys:?}"
    );

    // Edited: the next event is answered without the stale Rust hooks, with the note once.
    std::fs::write(&src, handler("v2 handler says no")).unwrap();
    let v = json_out(&env.hook("PreToolUse", &pre_tool(&root, "s2", "cat secrets"), &[]));
    assert_ne!(
        decision(&v),
        Some("deny"),
        "stale Rust hooks must not answer: {v}"
    );
    let note = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        note.contains("not live") && note.contains("background build"),
        "{v}"
    );
    let v = json_out(&env.hook("PreToolUse", &pre_tool(&root, "s2", "cat secrets"), &[]));
    assert!(
        v["systemMessage"]
            .as_str()
            .is_none_or(|m| !m.contains("not live")),
        "told once: {v}"
    );
    assert!(
        reason(&json_out(&env.hook(
            "PreToolUse",
            &pre_tool(&root, "s2", "git stash"),
            &[]
        )))
        .contains("jj shelve")
    );

    // The background build lands and a later event answers from it (a bound, not a speed
    // assertion: a release build of the edited crate on a busy machine).
    let until = Instant::now() + Duration::from_secs(900);
    loop {
        let v = json_out(&env.hook("PreToolUse", &pre_tool(&root, "s3", "cat secrets"), &[]));
        if reason(&v).contains("v2 handler says no") {
            break;
        }
        assert!(
            Instant::now() < until,
            "the background build never went live: {v}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let log = std::fs::read_to_string(
        capt_hook_rust_project::Cache::for_root(&root.canonicalize().unwrap(), |n| {
            (n == "CAPT_HOOK_BUILD_DIR").then(|| builds.display().to_string())
        })
        .log(),
    )
    .unwrap_or_default();
    assert!(
        log.contains("Compiling project-hooks") || log.contains("Finished"),
        "the build was logged: {log}"
    );

    // A build whose worker cannot start: retired, reported, and the TOML hooks serve.
    std::fs::write(&src, handler("v3 never runs")).unwrap();
    let canonical = root.canonicalize().unwrap();
    let cache = capt_hook_rust_project::Cache::for_root(&canonical, |n| {
        (n == "CAPT_HOOK_BUILD_DIR").then(|| builds.display().to_string())
    });
    let hash = capt_hook_rust_project::source_hash(
        &canonical.join(".claude/hooks"),
        &capt_hook_rust_project::sdk_id(Some(&sdk)),
    )
    .unwrap();
    let broken = env.dir.path().join("broken-worker");
    std::fs::write(&broken, "#!/bin/sh\necho 'not a worker' >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    cache.install(&hash, &broken).unwrap();
    // The live v2 worker notices the edit and retires; the next start picks the broken build.
    let _ = env.hook("PreToolUse", &pre_tool(&root, "s4", "ls"), &[]);
    let v = json_out(&env.hook("PreToolUse", &pre_tool(&root, "s5", "git stash"), &[]));
    assert!(
        reason(&v).contains("jj shelve"),
        "the stock worker serves the TOML hooks: {v}"
    );
    let note = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        note.contains("failed at start"),
        "the session is told why: {v}"
    );
    assert!(
        cache.failure(&hash).is_some(),
        "the broken build is retired"
    );
}

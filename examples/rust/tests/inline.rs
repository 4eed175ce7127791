//! Every example's inline tests, run the way `capt-hook test` runs them: each hook alone through
//! the dispatcher a session uses, in a scratch state directory. Any failure fails the build.

use capt_hook_examples::{PAGES, registry};
use captain_hook::Registry;
use captain_hook::testing::{Status, human_report, run_registry};

#[test]
fn every_example_passes_its_inline_tests() {
    let registry = match registry() {
        Ok(r) => r,
        Err(e) => panic!("an example does not register: {e}"),
    };
    let outcomes = run_registry(&registry, None);
    let report = human_report(&outcomes);
    println!("{report}");
    let bad: Vec<_> = outcomes
        .iter()
        .filter(|o| o.status != Status::Pass)
        .collect();
    assert!(
        bad.is_empty(),
        "{} inline tests did not pass:\n{report}",
        bad.len()
    );
    // Every page registers hooks, and every hook carries at least one test.
    for (page, register) in PAGES {
        let mut reg = Registry::new();
        if let Err(e) = register(&mut reg) {
            panic!("{page}: {e}");
        }
        assert!(!reg.is_empty(), "{page} registers nothing");
        for hook in reg.hooks() {
            assert!(!hook.tests.is_empty(), "{} has no inline test", hook.name);
        }
    }
    // Names are unique across pages, so each hook's fire count and state are its own.
    let mut names: Vec<&str> = registry.hooks().iter().map(|h| h.name.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "two example hooks share a name");
}

/// The examples answer live: the package's worker binary (`captain_hook::serve`) evaluates a
/// real request the way the client's fallback sends it, and its inline tests pass through the
/// worker's own `test` command.
#[test]
fn the_example_worker_answers_a_real_request() {
    use std::io::Write;
    use std::process::{Command, Stdio};

    let root = tempfile::tempdir().expect("a temp project");
    let payload = serde_json::json!({
        "session_id": "live-example",
        "tool_name": "Bash",
        "tool_input": {"command": "cd repo && git stash pop"},
    });
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis() as u64
        + 20_000;
    let request = serde_json::json!({
        "schema": 1,
        "event": "PreToolUse",
        "root": root.path(),
        "cwd": root.path(),
        "env": {"CAPTAIN_HOOK_STATE_DIR": root.path().join("state")},
        "payload_raw": payload.to_string(),
        "client_pid": std::process::id(),
        "client_ppid": 1,
        "deadline_unix_ms": deadline,
    });
    let bin = env!("CARGO_BIN_EXE_capt-hook-examples");
    let mut child = Command::new(bin)
        .arg("evaluate")
        .env("CAPTAIN_HOOK_STATE_DIR", root.path().join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example worker starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(request.to_string().as_bytes())
        .expect("the request is written");
    let out = child.wait_with_output().expect("the worker exits");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    let response: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("one JSON response");
    let printed: serde_json::Value =
        serde_json::from_str(response["stdout"].as_str().expect("the client's stdout"))
            .expect("an envelope");
    assert_eq!(
        printed["hookSpecificOutput"]["permissionDecision"], "deny",
        "{printed}"
    );
    let reason = printed["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .expect("a reason");
    assert!(reason.contains("git stash is not allowed"), "{reason}");
    assert_eq!(response["exit"], 0);

    let tests = Command::new(bin)
        .args(["test", "--root"])
        .arg(root.path())
        .env("CAPTAIN_HOOK_STATE_DIR", root.path().join("state"))
        .output()
        .expect("the worker runs its tests");
    let report = String::from_utf8_lossy(&tests.stdout);
    assert!(tests.status.success(), "{report}");
    assert!(report.contains(" 0 failed, 0 errors"), "{report}");
}

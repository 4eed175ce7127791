//! The `capt-hook` binary, run as a real process.

// A test fails by panicking: unwrap and expect are how it says what broke.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod cases;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_capt-hook")
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A temporary project with `.claude/hooks/` and a private HOME.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new(files: &[(&str, &str)]) -> Project {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".claude/hooks")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(".claude/hooks").join(name), text).unwrap();
        }
        Project { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn run(&self, args: &[&str], stdin: &[u8]) -> Output {
        self.run_env(args, stdin, &[])
    }

    fn run_env(&self, args: &[&str], stdin: &[u8], env: &[(&str, &Path)]) -> Output {
        let mut child = Command::new(bin())
            .args(args)
            .current_dir(self.root())
            .env("CLAUDE_PROJECT_DIR", self.root())
            .env("HOME", self.root().join("home"))
            .env("CAPTAIN_HOOK_LOG_DIR", self.root().join("logs"))
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A child that exits early closes its stdin; that is not our failure.
        let _ = child.stdin.take().unwrap().write_all(stdin);
        child.wait_with_output().unwrap()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const STASH: &str = r#"
[[hook]]
kind = "block_command"
argv = ["git", "stash"]
reason = "No stashing"
hint = "Commit to a branch"

  [[hook.test]]
  input = { command = "git stash pop" }
  expect = "block"
  pattern = "branch"

  [[hook.test]]
  input = { command = "echo 'git stash'" }
  expect = "allow"
"#;

#[test]
fn run_blocks_and_prints_one_line_of_json() {
    let p = Project::new(&[("stash.toml", STASH)]);
    let out = p.run(
        &["run", "PreToolUse"],
        br#"{"session_id":"s","tool_name":"Bash","tool_input":{"command":"cd a && git stash"}}"#,
    );
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecisionReason"],
        "BLOCKED: No stashing. Commit to a branch."
    );
}

/// `run` journals its answer as a worker does: a session log line and a ledger row per
/// delivered verdict, read back by `logs` and `decisions`. The async twin writes nothing, and a
/// spawned process keeps no ledger rows.
#[test]
fn run_writes_the_session_log_and_the_ledger() {
    let p = Project::new(&[("stash.toml", STASH)]);
    let payload = |session: &str| {
        format!(
            r#"{{"session_id":"{session}","tool_name":"Bash","tool_input":{{"command":"git stash"}},"tool_use_id":"toolu_r"}}"#
        )
    };
    let out = p.run(&["run", "PreToolUse"], payload("run-1").as_bytes());
    assert!(text(&out.stdout).contains("No stashing"));
    let logs = p.run(&["logs", "--session", "run-1", "--json"], b"");
    let lines: Vec<serde_json::Value> = text(&logs.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{}", text(&logs.stderr));
    assert_eq!(lines[0]["verdict"], "block");
    let rows = |session: &str| -> Vec<serde_json::Value> {
        let out = p.run(&["decisions", "--json", "--session", session], b"");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let got = rows("run-1");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["event_uuid"], "toolu_r");
    assert_eq!(got[0]["action"], "block");

    p.run(
        &["run", "PreToolUse", "--async"],
        payload("run-async").as_bytes(),
    );
    let none = p.run(&["logs", "--session", "run-async", "--json"], b"");
    assert!(text(&none.stdout).is_empty(), "{}", text(&none.stdout));

    let spawned = p.run_env(
        &["run", "PreToolUse"],
        payload("run-spawned").as_bytes(),
        &[("CAPT_HOOK_SPAWNED", Path::new("1"))],
    );
    assert!(text(&spawned.stdout).contains("No stashing"));
    let logged = p.run(&["logs", "--session", "run-spawned", "--json"], b"");
    assert_eq!(text(&logged.stdout).lines().count(), 1);
    assert!(rows("run-spawned").is_empty());
}

/// `decisions verify` checks the ledger's hash chain and names the first edited row (exit 1);
/// `export` ships rows with their hashes, as JSON lines or OTLP/JSON; after `rotate`, the chain
/// is checked across both files.
#[test]
fn decisions_verify_names_an_edited_row_and_export_carries_the_chain() {
    let p = Project::new(&[("stash.toml", STASH)]);
    for (i, cmd) in ["git stash", "git stash pop", "git stash list"]
        .iter()
        .enumerate()
    {
        let payload = format!(
            r#"{{"session_id":"chain","tool_name":"Bash","tool_input":{{"command":"{cmd}"}},"tool_use_id":"toolu_{i}"}}"#
        );
        p.run(&["run", "PreToolUse"], payload.as_bytes());
    }
    let db = p.root().join("home/.claude/state/hooks/decisions.db");
    let ok = p.run(&["decisions", "verify"], b"");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert!(text(&ok.stdout).contains("3 rows"), "{}", text(&ok.stdout));
    assert!(
        text(&ok.stdout).contains("chain intact"),
        "{}",
        text(&ok.stdout)
    );

    let jsonl = p.run(&["decisions", "export", "--format", "jsonl"], b"");
    let rows: Vec<serde_json::Value> = text(&jsonl.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3, "{}", text(&jsonl.stderr));
    assert_eq!(rows[1]["prev_hash"], rows[0]["row_hash"]);
    let otlp = p.run(&["decisions", "export", "--format", "otlp-json"], b"");
    let req: serde_json::Value = serde_json::from_str(text(&otlp.stdout).trim()).unwrap();
    let records = &req["resourceLogs"][0]["scopeLogs"][0]["logRecords"];
    assert_eq!(records.as_array().unwrap().len(), 3, "{req}");
    assert_eq!(records[0]["severityText"], "WARN");

    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE decisions SET message = 'fine' WHERE id = 2", [])
        .unwrap();
    let bad = p.run(&["decisions", "verify"], b"");
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stdout));
    assert!(
        text(&bad.stdout).contains("BROKEN at row 2"),
        "{}",
        text(&bad.stdout)
    );
    let said = text(&bad.stderr);
    assert!(
        said.contains(&db.display().to_string()) && said.contains("row 2"),
        "{said}"
    );

    let archive = p.root().join("home/old.db");
    let rotated = p.run(
        &["decisions", "rotate", "--to", archive.to_str().unwrap()],
        b"",
    );
    assert_eq!(rotated.status.code(), Some(0), "{}", text(&rotated.stderr));
    let after = p.run(&["decisions", "verify"], b"");
    assert_eq!(after.status.code(), Some(1), "the archive keeps the edit");
    assert!(
        text(&after.stderr).contains(&archive.display().to_string()),
        "{}",
        text(&after.stderr)
    );
}

/// Policy packs load before the project's hooks: a signed pack's guard denies; with the trusted
/// key configured, the same pack altered by one byte does not load, and a guarded call asks,
/// naming the altered file; `policy verify` exits 1 naming it, `status` says signed/REFUSED.
#[test]
fn an_altered_policy_pack_makes_guarded_calls_ask_naming_the_file() {
    let p = Project::new(&[]);
    let fixtures = workspace().join("crates/capt-hook-packs/tests/fixtures/policy");
    let pack = p.root().join("policy/org");
    std::fs::create_dir_all(pack.join("hooks")).unwrap();
    for rel in [
        "pack.toml",
        "hooks/guard.toml",
        "SHA256SUMS",
        "SHA256SUMS.minisig",
    ] {
        std::fs::copy(fixtures.join("org").join(rel), pack.join(rel)).unwrap();
    }
    let dir = p.root().join("policy");
    let key = fixtures.join("trusted.pub");
    let env: &[(&str, &Path)] = &[
        ("CAPT_HOOK_POLICY_DIR", &dir),
        ("CAPT_HOOK_POLICY_KEY", &key),
        ("CAPT_HOOK_RUN_PACKS", Path::new("1")),
    ];
    let call = |cmd: &str| -> serde_json::Value {
        let payload = format!(
            r#"{{"session_id":"pol","tool_name":"Bash","tool_input":{{"command":"{cmd}"}},"tool_use_id":"toolu_p","hook_event_name":"PreToolUse","permission_mode":"default"}}"#
        );
        let out = p.run_env(&["run", "PreToolUse"], payload.as_bytes(), env);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_str(text(&out.stdout).trim()).unwrap_or(serde_json::Value::Null)
    };
    let denied = call("terraform apply -auto-approve");
    assert_eq!(
        denied["hookSpecificOutput"]["permissionDecision"], "deny",
        "{denied}"
    );
    assert!(
        denied.to_string().contains("organisation policy"),
        "{denied}"
    );
    let status = p.run_env(&["policy", "verify"], b"", env);
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stderr));
    assert!(
        text(&status.stdout).contains("policy:org"),
        "{}",
        text(&status.stdout)
    );
    assert!(
        text(&status.stdout).contains("signed"),
        "{}",
        text(&status.stdout)
    );
    let listed = p.run_env(&["pack", "list"], b"", env);
    let row = text(&listed.stdout)
        .lines()
        .find(|l| l.contains("policy:org"))
        .map(str::to_owned)
        .unwrap_or_default();
    assert!(row.contains("signed"), "{}", text(&listed.stdout));

    // One byte changed.
    let guard = pack.join("hooks/guard.toml");
    let altered = std::fs::read_to_string(&guard)
        .unwrap()
        .replace("apply", "applz");
    std::fs::write(&guard, altered).unwrap();
    let asked = call("ls");
    assert_eq!(
        asked["hookSpecificOutput"]["permissionDecision"], "ask",
        "{asked}"
    );
    let reason = asked["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("hooks/guard.toml"), "{asked}");
    let verify = p.run_env(&["policy", "verify"], b"", env);
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify.stdout));
    assert!(
        text(&verify.stdout).contains("REFUSED") && text(&verify.stdout).contains("guard.toml"),
        "{}",
        text(&verify.stdout)
    );
}

/// `policy sign` writes what `policy verify` accepts with the key's public half: an unsigned
/// pack, signed, verifies; one byte changed after signing is refused naming the file; signed
/// again, it verifies again. A bad key changes nothing.
#[test]
fn policy_sign_round_trips_with_policy_verify() {
    let p = Project::new(&[]);
    let fixtures = workspace().join("crates/capt-hook-packs/tests/fixtures/policy");
    let pack = p.root().join("policy/team");
    std::fs::create_dir_all(pack.join("hooks")).unwrap();
    for rel in ["pack.toml", "hooks/guard.toml"] {
        std::fs::copy(fixtures.join("org").join(rel), pack.join(rel)).unwrap();
    }
    let keys = workspace().join("tests/fixtures/release-key");
    let secret = keys.join("test.key");
    let public = keys.join("test.pub");
    let dir = p.root().join("policy");
    let env: &[(&str, &Path)] = &[
        ("CAPT_HOOK_POLICY_DIR", &dir),
        ("CAPT_HOOK_POLICY_KEY", &public),
    ];
    let verify = |want: i32| -> String {
        let out = p.run_env(&["policy", "verify"], b"", env);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(want),
            "{stdout}{}",
            text(&out.stderr)
        );
        stdout
    };
    assert!(verify(1).contains("not signed"));

    // A key that is not a secret key: refused, naming it, and nothing written.
    let bad = p.run(
        &[
            "policy",
            "sign",
            "--key",
            public.to_str().unwrap(),
            pack.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad.stderr).contains("test.pub"),
        "{}",
        text(&bad.stderr)
    );
    assert!(!pack.join("SHA256SUMS").exists());

    let sign = || {
        let out = p.run(
            &[
                "policy",
                "sign",
                "--key",
                secret.to_str().unwrap(),
                pack.to_str().unwrap(),
            ],
            b"",
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains("2 files"),
            "{}",
            text(&out.stdout)
        );
    };
    sign();
    let sums = std::fs::read_to_string(pack.join("SHA256SUMS")).unwrap();
    let printed = p.run(&["policy", "sums", pack.to_str().unwrap()], b"");
    assert_eq!(text(&printed.stdout), sums, "sign writes what sums prints");
    assert!(verify(0).contains("signed"));

    let guard = pack.join("hooks/guard.toml");
    let altered = std::fs::read_to_string(&guard)
        .unwrap()
        .replace("apply", "applz");
    std::fs::write(&guard, altered).unwrap();
    let refused = verify(1);
    assert!(
        refused.contains("REFUSED") && refused.contains("guard.toml"),
        "{refused}"
    );
    sign();
    assert!(verify(0).contains("signed"));
}

/// A mistyped command line is an error (exit 1, naming what was wrong), never exit 2, which
/// Claude Code reads as a blocking verdict; help and version exit 0.
#[test]
fn usage_errors_exit_1_not_2() {
    let p = Project::new(&[]);
    for (args, says) in [
        (&["bogus"][..], "bogus"),
        (&["run"][..], "<EVENT>"),
        (
            &["run", "PreToolUse", "--no-such-flag"][..],
            "--no-such-flag",
        ),
    ] {
        let out = p.run(args, b"");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    for args in [&["--help"][..], &["--version"][..]] {
        assert_eq!(p.run(args, b"").status.code(), Some(0), "{args:?}");
    }
}

#[test]
fn run_edges_unknown_event_blank_and_malformed_stdin() {
    let p = Project::new(&[("stash.toml", STASH)]);
    // An unknown name is a newer Claude Code's event: exit 0, nothing on stdout.
    let out = p.run(&["run", "PreToolUze"], b"{}");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr)
            .contains("Invalid event type: 'PreToolUze'. Valid event names are: PreToolUse")
    );

    let out = p.run(&["run", "PreToolUse"], b"  \n\t ");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty());

    // A guarded call whose payload cannot be read asks the user; other events print nothing.
    let out = p.run(&["run", "PreToolUse"], b"{not json");
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask");
    assert!(text(&out.stderr).starts_with("Malformed stdin: "));
    let out = p.run(&["run", "Stop"], b"{not json");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).starts_with("Malformed stdin: "));
}

/// stdin is read up to the client's limit (32 MiB) and no further: a larger payload, even an
/// endless one, is answered at once, a guarded call asking the user and naming the limit.
#[test]
fn run_refuses_stdin_over_the_clients_limit_without_reading_on() {
    let p = Project::new(&[("stash.toml", STASH)]);
    let limit = capt_hook_proto::MAX_EVENT_INPUT;
    let said = format!("over the {limit}-byte (32 MiB) limit");
    let mut big = vec![b' '; limit + 1];
    big[0] = b'{';
    let out = p.run(&["run", "PreToolUse"], &big);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(reason.contains(&said), "{reason}");
    assert!(text(&out.stderr).contains(&said), "{}", text(&out.stderr));
    // Other events have no answer to give: stderr says why.
    let out = p.run(&["run", "Stop"], &big);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains(&said));
    // At the limit the payload is read (and is then merely malformed: it never closes).
    let out = p.run(&["run", "PreToolUse"], &big[..limit]);
    assert!(text(&out.stderr).starts_with("Malformed stdin: "));
    // An endless writer is not waited on.
    let out = Command::new(bin())
        .args(["run", "PreToolUse"])
        .current_dir(p.root())
        .env("CLAUDE_PROJECT_DIR", p.root())
        .env("HOME", p.root().join("home"))
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains(&said), "{}", text(&out.stdout));
    // `explain` reads the same way, and fails.
    let out = p.run(&["explain", "PreToolUse"], &big);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains(&said));
}

#[test]
fn check_fails_on_a_named_hooks_dir_that_is_missing_or_empty() {
    let p = Project::new(&[("stash.toml", STASH)]);
    let missing = p.root().join("nope");
    let out = p.run(&["check", "--hooks", missing.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("does not exist"),
        "{}",
        text(&out.stderr)
    );
    let empty = p.root().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("_skipped.toml"), STASH).unwrap();
    let out = p.run(&["test", "--hooks", missing.to_str().unwrap()], b"");
    assert_eq!(
        out.status.code(),
        Some(1),
        "a test run over nothing is not a pass"
    );
    let out = p.run(&["check", "--hooks", empty.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("holds no hook files"),
        "{}",
        text(&out.stderr)
    );
    // The default directory may be absent: a project without hooks is fine.
    std::fs::remove_dir_all(p.root().join(".claude")).unwrap();
    let out = p.run(&["check"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let hooks = p.root().join("h");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("stash.toml"), STASH).unwrap();
    let out = p.run(&["check", "--hooks", hooks.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // `run` with a named directory that is missing asks on a guarded call.
    let payload = br#"{"tool_name":"Bash","tool_input":{"command":"ls"}}"#;
    let out = p.run(
        &["run", "PreToolUse", "--hooks", missing.to_str().unwrap()],
        payload,
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask", "{v}");
}

/// Malformed payloads of every kind: never a panic, never exit 2, never an approval; one that
/// cannot be read at all asks the user.
#[test]
fn thirty_malformed_payloads() {
    let p = Project::new(&[("stash.toml", STASH)]);
    let big = format!(
        r#"{{"tool_name":"Bash","tool_input":{{"command":"echo {}"}}}}"#,
        "x".repeat(10 << 20)
    );
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let payloads: Vec<Vec<u8>> = vec![
        b"{".to_vec(),
        br#"{"tool_name": "Bash", "tool_input": {"command": "git st"#.to_vec(),
        b"[]".to_vec(),
        b"[1, 2]".to_vec(),
        b"\"just a string\"".to_vec(),
        b"42".to_vec(),
        b"true".to_vec(),
        b"null".to_vec(),
        br#"{"tool_name": 7}"#.to_vec(),
        br#"{"tool_name": "Bash"}"#.to_vec(),
        br#"{"tool_name": "Bash", "tool_input": "git stash"}"#.to_vec(),
        br#"{"tool_name": "Bash", "tool_input": {"command": 42}}"#.to_vec(),
        br#"{"tool_name": "Bash", "tool_input": {"command": null}}"#.to_vec(),
        br#"{"tool_name": "Bash", "tool_input": {"command": ["git", "stash"]}}"#.to_vec(),
        br#"{"tool_name": ["Bash"], "tool_input": {"command": "git stash"}}"#.to_vec(),
        br#"{"tool_name": "Edit", "tool_input": {"file_path": 1, "old_string": {}}}"#.to_vec(),
        br#"{"tool_name": "MultiEdit", "tool_input": {"file_path": "/a", "edits": "x"}}"#.to_vec(),
        br#"{"tool_name": "MultiEdit", "tool_input": {"file_path": "/a", "edits": [1, 2]}}"#
            .to_vec(),
        br#"{"session_id": 5, "agent_id": [], "cwd": false}"#.to_vec(),
        br#"{"tool_name": "", "tool_input": {}}"#.to_vec(),
        b"\xff\xfe\xfd".to_vec(),
        b"{\"tool_name\": \"Bash\", \"tool_input\": {\"command\": \"\xff\"}}".to_vec(),
        br#"{"tool_name": "Bash", "tool_input": {"command": "\u0000git stash"}}"#.to_vec(),
        br#"{"tool_name": "Bash", "tool_input": {"command": "echo \"unterminated"}}"#.to_vec(),
        br#"{"tool_name": "Bash", "tool_input": {"command": "$($($($($("}}"#.to_vec(),
        br#"{"a": 1} {"b": 2}"#.to_vec(),
        br#"{"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_name": "Edit"}"#.to_vec(),
        big.into_bytes(),
        deep.into_bytes(),
        br#"{"tool_name": "Bash", "tool_input": {"command": "git stash", "timeout": 1e999}}"#
            .to_vec(),
    ];
    assert_eq!(payloads.len(), 30);
    for (i, payload) in payloads.iter().enumerate() {
        let out = p.run(&["run", "PreToolUse"], payload);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "payload {i}: {stderr}");
        assert!(!stderr.contains("panicked"), "payload {i}: {stderr}");
        if stderr.contains("Malformed stdin") {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(
                v["hookSpecificOutput"]["permissionDecision"], "ask",
                "payload {i}"
            );
        } else if !out.stdout.is_empty() {
            // The only payloads that may produce a verdict are well-formed Bash calls; a line
            // that cannot be read to the end gets a notice saying so.
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(
                v["hookSpecificOutput"].is_object()
                    || v["systemMessage"]
                        .as_str()
                        .is_some_and(|m| m.contains("could not be read")),
                "payload {i}: {v}"
            );
            assert_ne!(
                v["hookSpecificOutput"]["permissionDecision"], "allow",
                "payload {i}"
            );
        }
    }
}

#[test]
fn test_command_output_and_exit_codes() {
    let p = Project::new(&[("stash.toml", STASH)]);
    let out = p.run(&["test"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("  PASS  stash:block_command_"));
    assert!(stdout.ends_with("\n2 tests: 2 passed, 0 failed, 0 errors, 0 skipped\n"));

    let out = p.run(&["test", "--format", "json"], b"");
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["status"], "pass");
    assert_eq!(lines[0]["expected"], "block");

    let failing = STASH.replace("pattern = \"branch\"", "pattern = \"mercurial\"");
    let p = Project::new(&[("stash.toml", &failing)]);
    let out = p.run(&["test"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("doesn't match 'mercurial'"));

    let p = Project::new(&[(
        "none.toml",
        "[[hook]]\nkind = \"hook\"\nevents = \"Stop\"\nmessage = \"m\"\n",
    )]);
    let out = p.run(&["test"], b"");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "No inline tests found.\n");

    let p = Project::new(&[("stash.toml", STASH), ("bad.toml", "[[hook]]\nkind = 3\n")]);
    let out = p.run(&["test"], b"");
    assert_eq!(
        out.status.code(),
        Some(1),
        "a file that does not load fails the run"
    );
    assert!(text(&out.stderr).contains("bad.toml:2:"));
}

#[test]
fn check_and_list() {
    let p = Project::new(&[("stash.toml", STASH)]);
    let out = p.run(&["check"], b"");
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("1 hooks in 1 files"));
    let out = p.run(&["list"], b"");
    let line = text(&out.stdout);
    let cols: Vec<&str> = line.trim_end().split('\t').collect();
    assert_eq!(cols[1], "block_command");
    // A guard on shell commands also guards the ones skill and command files run.
    assert_eq!(cols[2], "PreToolUse|PreSkillShellCommand");
    assert!(cols[3].ends_with("stash.toml:2"), "{line}");

    let p = Project::new(&[(
        "bad.toml",
        "[[hook]]\nkind = \"hook\"\nevents = \"Stop\"\nmessage = \"m\"\nonly_if = [{ command = \"(\" }]\n",
    )]);
    let out = p.run(&["check"], b"");
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("bad.toml:5:"), "{stderr}");
    assert!(stderr.contains("hook[0].only_if[0]"), "{stderr}");
}

#[test]
fn explain_says_why_each_hook_did_or_did_not_fire() {
    let hooks = r#"
[[hook]]
kind = "block_command"
argv = ["git", "stash"]
reason = "No stashing"

[[hook]]
kind = "hook"
name = "edits"
events = "PreToolUse"
message = "careful"
only_if = [{ tool = "Edit" }]

[[hook]]
kind = "hook"
name = "stop"
events = "Stop"
message = "later"
"#;
    let p = Project::new(&[("h.toml", hooks)]);
    let out = p.run(
        &["explain", "PreToolUse"],
        br#"{"tool_name":"Bash","tool_input":{"command":"git stash"}}"#,
    );
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    let stdout: String = stdout
        .lines()
        .map(|l| {
            // Hash suffixes and paths vary; keep the shape.
            if l.starts_with("  h:block_command_") {
                "  h:block_command_<hash> (block_command, <source>)".to_owned()
            } else if let Some(i) = l.find(", /") {
                format!("{}, <source>)", &l[..i])
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(stdout);
}

#[test]
fn init_scaffolds_a_passing_file_and_never_overwrites() {
    let p = Project::new(&[]);
    let out = p.run(&["init"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = p.run(&["test"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("3 tests: 3 passed"));
    let out = p.run(&["init"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("already exists"));
}

/// `init` points the `#:schema` line at the schema the install wrote into the user's home (a
/// `file://` URL, no network), and leaves the line out, saying so, when there is none.
#[test]
fn init_points_the_schema_line_at_the_installed_schema() {
    let p = Project::new(&[]);
    let example = p.root().join(".claude/hooks/example.toml");
    let out = p.run(&["init"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let schema = p
        .root()
        .join("home/.local/share/captain-hook/hooks.schema.json");
    assert!(
        text(&out.stderr).contains(&format!(
            "no #:schema line: {} is not there",
            schema.display()
        )),
        "{}",
        text(&out.stderr)
    );
    let first = std::fs::read_to_string(&example).unwrap();
    assert!(!first.contains("#:schema"), "{first}");

    std::fs::remove_file(&example).unwrap();
    std::fs::create_dir_all(schema.parent().unwrap()).unwrap();
    std::fs::copy(workspace().join("docs/hooks.schema.json"), &schema).unwrap();
    let out = p.run(&["init"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("#:schema"),
        "{}",
        text(&out.stderr)
    );
    let written = std::fs::read_to_string(&example).unwrap();
    let line = written.lines().next().unwrap();
    let url = line
        .strip_prefix("#:schema file://")
        .unwrap_or_else(|| panic!("{line}"));
    // The temp directory's path has no character a URL path must escape.
    assert_eq!(Path::new(url), schema, "{line}");
    assert_eq!(&written[line.len() + 1..], first);
    let out = p.run(&["test"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn committed_schema_is_up_to_date() {
    let p = Project::new(&[]);
    let out = p.run(&["schema"], b"");
    let committed = std::fs::read_to_string(workspace().join("docs/hooks.schema.json"))
        .expect("docs/hooks.schema.json is committed");
    assert!(
        text(&out.stdout) == committed,
        "docs/hooks.schema.json is stale: run `cargo run -p capt-hook-cli -- schema > docs/hooks.schema.json`"
    );
}

#[test]
fn examples_pass_their_inline_tests() {
    let p = Project::new(&[]);
    // examples/seeds holds the TOML twins of the seeds' examples (issue 29): a hooks folder is
    // not read recursively, so it is named here.
    for dir in ["examples", "examples/seeds", "examples/session-workflow"] {
        let examples = workspace().join(dir);
        let out = p.run(&["test", "--hooks", examples.to_str().unwrap()], b"");
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{dir}: {stdout}{}",
            text(&out.stderr)
        );
        assert!(!stdout.contains("No inline tests"), "{stdout}");
    }
}

#[test]
fn code_hooks_survive_binary_huge_and_mismatched_files() {
    let hooks = r#"
[[hook]]
kind = "lint"
pattern = "print($$$)"
message = "no print: {violations}"

[[hook]]
kind = "rewrite_code"
pattern = "os.system($CMD)"
replace = "subprocess.run($CMD)"
"#;
    let p = Project::new(&[("code.toml", hooks)]);
    let root = p.root().to_str().unwrap().to_owned();
    std::fs::write(p.root().join("bin.py"), [0u8, 159, 146, 150, 0xff, b'\n']).unwrap();
    let big: String = "x = 1\nprint(x)\n".repeat(5 * 1024 * 1024 / 15);
    std::fs::write(p.root().join("big.py"), &big).unwrap();
    std::fs::write(p.root().join("small.py"), "a = 1\n").unwrap();

    // A binary file: no result, no panic.
    let payload = format!(
        r#"{{"tool_name":"Edit","tool_input":{{"file_path":"{root}/bin.py","old_string":"a","new_string":"print(1)"}},"tool_response":{{}}}}"#
    );
    let out = p.run(&["run", "PostToolUse"], payload.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());

    // A 5 MB file written whole: every line changed, the list is capped.
    let payload = serde_json::json!({
        "tool_name": "Write",
        "tool_input": {"file_path": format!("{root}/big.py"), "content": big},
        "tool_response": {"type": "create", "originalFile": null},
    });
    let out = p.run(&["run", "PostToolUse"], payload.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        ctx.starts_with("no print: print(x) (line 2), print(x) (line 4)"),
        "{ctx}"
    );
    assert!(ctx.contains("more)"), "{ctx}");

    // An Edit whose old_string is not in the file: nothing to rewrite against, no result.
    let payload = format!(
        r#"{{"tool_name":"Edit","tool_input":{{"file_path":"{root}/small.py","old_string":"zzz","new_string":"import os"}}}}"#
    );
    let out = p.run(&["run", "PreToolUse"], payload.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

/// Runs `capt-hook run` with a private state root.
fn run_with_state(p: &Project, state: &Path, event: &str, payload: &str) -> Output {
    p.run_env(
        &["run", event],
        payload.as_bytes(),
        &[("CAPTAIN_HOOK_STATE_DIR", state)],
    )
}

#[test]
fn a_capped_hook_never_over_fires_under_32_parallel_processes() {
    let p = Project::new(&[(
        "cap.toml",
        "[[hook]]\nkind = \"hook\"\nevents = \"PreToolUse\"\nmessage = \"capped\"\nmax_fires = 5\n",
    )]);
    let state = p.root().join("state");
    let payload = r#"{"session_id":"s1","tool_name":"Bash","tool_input":{"command":"ls"}}"#;
    let fired: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..32)
            .map(|_| scope.spawn(|| run_with_state(&p, &state, "PreToolUse", payload)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                let out = h.join().unwrap();
                assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
                usize::from(!out.stdout.is_empty())
            })
            .sum()
    });
    assert_eq!(fired, 5);
    // Another agent context has its own allowance.
    let sub =
        r#"{"session_id":"s1","agent_id":"a1","tool_name":"Bash","tool_input":{"command":"ls"}}"#;
    assert!(
        !run_with_state(&p, &state, "PreToolUse", sub)
            .stdout
            .is_empty()
    );
}

#[test]
fn a_corrupt_counter_is_kept_aside_and_counts_as_spent() {
    let p = Project::new(&[(
        "cap.toml",
        "[[hook]]\nkind = \"hook\"\nevents = \"PreToolUse\"\nmessage = \"twice\"\nmax_fires = 2\n",
    )]);
    let state = p.root().join("state");
    let payload = r#"{"session_id":"s2","tool_name":"Bash","tool_input":{"command":"ls"}}"#;
    assert!(
        !run_with_state(&p, &state, "PreToolUse", payload)
            .stdout
            .is_empty()
    );
    let files: Vec<PathBuf> = walk(&state)
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "hook_state.json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::write(&files[0], "{ not json").unwrap();
    // A count that cannot be read is not reset to zero (that would let the hook fire past its
    // cap): it counts as spent for the rest of the session...
    for _ in 0..2 {
        let out = run_with_state(&p, &state, "PreToolUse", payload);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    }
    // ...and the bad bytes were moved aside, not lost.
    let backups: Vec<PathBuf> = walk(&state)
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("hook_state.json.bak."))
        .collect();
    assert_eq!(backups.len(), 1);
    assert_eq!(std::fs::read_to_string(&backups[0]).unwrap(), "{ not json");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn replay_shows_where_a_stateful_hook_fires() {
    let example = workspace().join("examples/session-workflow");
    let p = Project::new(&[]);
    let out = p.run(
        &[
            "replay",
            example.join("transcript.jsonl").to_str().unwrap(),
            "--hooks",
            example.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Stop               BLOCK   end of turn"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("10 events replayed, 2 with a verdict\n"),
        "{stdout}"
    );
}

// ---- Every Claude Code event, in the shape the real client honours ----------------------------

/// The repository's copy of the external spec files (`tests/fixtures/`).
fn fixtures() -> PathBuf {
    workspace().join("tests/fixtures")
}

/// The published examples of what Claude Code sends (the repository's copy of the reference's,
/// `tests/fixtures/reference/claude-code/payloads`); a missing folder fails the test.
fn reference_payloads() -> Vec<(String, serde_json::Value)> {
    let dir = fixtures().join("reference/claude-code/payloads");
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "the Claude Code reference payloads are read from {}: {e}",
            dir.display()
        )
    });
    let mut out = Vec::new();
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.contains(".input.") {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let event = v["hook_event_name"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| name.split('.').next().unwrap().to_owned());
        out.push((event, v));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The keys the reference's decision-control table lets each event return (beyond the universal
/// `systemMessage`): top-level keys, then `hookSpecificOutput` keys.
fn allowed(event: &str) -> (&'static [&'static str], &'static [&'static str]) {
    const TOP: &[&str] = &["decision", "reason"];
    match event {
        "PreToolUse" => (
            &[],
            &[
                "permissionDecision",
                "permissionDecisionReason",
                "updatedInput",
                "additionalContext",
            ],
        ),
        "PermissionRequest" => (&[], &["decision"]),
        "PermissionDenied" => (&[], &["retry"]),
        "UserPromptSubmit" => (TOP, &["additionalContext", "sessionTitle"]),
        "PostToolUse" => (TOP, &["additionalContext", "updatedToolOutput"]),
        "UserPromptExpansion"
        | "PostToolUseFailure"
        | "PostToolBatch"
        | "Stop"
        | "SubagentStop" => (TOP, &["additionalContext"]),
        "TaskCreated" | "ConfigChange" | "PreCompact" => (TOP, &[]),
        "SessionStart" => (
            &[],
            &[
                "additionalContext",
                "initialUserMessage",
                "sessionTitle",
                "watchPaths",
                "reloadSkills",
            ],
        ),
        "Setup" | "SubagentStart" | "PostModelSwitch" => (&[], &["additionalContext"]),
        // Claude Code reads no context on these, and refuses a skill's command for any rewrite.
        "PreSkillShellCommand" | "PreModelSwitch" => {
            (&[], &["permissionDecision", "permissionDecisionReason"])
        }
        "MessageDisplay" => (&[], &["displayContent"]),
        "CwdChanged" | "FileChanged" => (&[], &["watchPaths"]),
        "Elicitation" | "ElicitationResult" => (&[], &["action", "content"]),
        _ => (&[], &[]),
    }
}

/// Checks one event: every reference payload of it runs with no hooks (exit 0, nothing printed),
/// then with a warning and with a block on every event; each output uses only the keys the
/// reference allows for the event, and the message is never dropped.
fn check_event(event: &str) {
    let payloads: Vec<serde_json::Value> = reference_payloads()
        .into_iter()
        .filter(|(e, _)| e == event)
        .map(|(_, v)| v)
        .collect();
    assert!(!payloads.is_empty(), "no reference payload for {event}");
    let quiet = Project::new(&[]);
    let hooks = |block: bool| {
        format!(
            "[[hook]]\nkind = \"hook\"\nevents = {:?}\nmessage = \"MSG-{event}\"\nblock = {block}\nskip_planning_agents = false\n",
            event
        )
    };
    let warn = Project::new(&[("all.toml", &hooks(false))]);
    let block = Project::new(&[("all.toml", &hooks(true))]);
    for payload in payloads {
        let stdin = payload.to_string();
        let out = quiet.run(&["run", event], stdin.as_bytes());
        assert_eq!(out.status.code(), Some(0), "{event}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{event}: {}", text(&out.stdout));

        for (p, blocking) in [(&warn, false), (&block, true)] {
            let out = p.run(&["run", event], stdin.as_bytes());
            let stdout = text(&out.stdout);
            let stderr = text(&out.stderr);
            let exit_two =
                blocking && matches!(event, "TaskCompleted" | "TeammateIdle" | "WorktreeCreate");
            if exit_two {
                // These events honour a block only as a failing exit, with feedback on stderr.
                assert_eq!(out.status.code(), Some(2), "{event}: {stderr}");
                assert!(
                    stderr.contains(&format!("MSG-{event}")),
                    "{event}: {stderr}"
                );
                continue;
            }
            assert_eq!(
                out.status.code(),
                Some(0),
                "{event} block={blocking}: {stderr}"
            );
            match event {
                // The dialog shows for a warning; WorktreeCreate's stdout is a path.
                "PermissionRequest" if !blocking => {
                    assert!(stdout.is_empty(), "{stdout}");
                    continue;
                }
                "WorktreeCreate" => {
                    assert!(stdout.is_empty(), "{stdout}");
                    continue;
                }
                "PreCompact" if !blocking => {
                    assert_eq!(stdout.trim(), format!("MSG-{event}"));
                    continue;
                }
                // The continuation a stop hook caused: a plain hook does not block it again.
                "Stop" | "SubagentStop" if payload["stop_hook_active"] == true => {
                    assert!(stdout.is_empty(), "{event} looped: {stdout}");
                    continue;
                }
                _ => {}
            }
            // Elicitation's decline carries no text: the reference has nowhere to put it.
            if !(blocking && matches!(event, "Elicitation" | "ElicitationResult")) {
                assert!(
                    stdout.contains(&format!("MSG-{event}")),
                    "{event} block={blocking}: the message was dropped: {stdout:?}"
                );
            }
            let v: serde_json::Value = serde_json::from_str(stdout.trim())
                .unwrap_or_else(|e| panic!("{event}: not JSON ({e}): {stdout}"));
            let (top, specific) = allowed(event);
            for key in v.as_object().unwrap().keys() {
                assert!(
                    key == "systemMessage"
                        || key == "hookSpecificOutput"
                        || top.contains(&key.as_str()),
                    "{event}: Claude Code does not read top-level `{key}` here: {v}"
                );
            }
            if let Some(hso) = v.get("hookSpecificOutput").and_then(|h| h.as_object()) {
                assert_eq!(hso["hookEventName"], event, "{v}");
                for key in hso.keys().filter(|k| *k != "hookEventName") {
                    assert!(
                        specific.contains(&key.as_str()),
                        "{event}: Claude Code does not read hookSpecificOutput.{key}: {v}"
                    );
                }
            }
            if blocking {
                let blocks = v["decision"] == "block"
                    || v["hookSpecificOutput"]["permissionDecision"] == "deny"
                    || v["hookSpecificOutput"]["decision"]["behavior"] == "deny"
                    || v["hookSpecificOutput"]["action"] == "decline";
                let can_block = !matches!(
                    event,
                    "PermissionDenied"
                        | "SessionStart"
                        | "Setup"
                        | "SubagentStart"
                        | "PostToolUseFailure"
                        | "MessageDisplay"
                        | "Notification"
                        | "SessionEnd"
                        | "PostCompact"
                        | "InstructionsLoaded"
                        | "StopFailure"
                        | "CwdChanged"
                        | "DirectoryAdded"
                        | "FileChanged"
                        | "WorktreeRemove"
                        | "PostModelSwitch"
                );
                assert_eq!(blocks, can_block, "{event}: {v}");
            }
        }
    }
}

macro_rules! event_tests {
    ($($name:ident => $event:literal,)*) => {
        $(#[test] fn $name() { check_event($event); })*

        /// Every event Claude Code documents has a test above.
        #[test]
        fn every_documented_event_is_checked() {
            let tested = [$($event),*];
            for (event, _) in reference_payloads() {
                assert!(tested.contains(&event.as_str()), "{event} has no test");
            }
            // Every event of Claude Code 2.1.332: all of the events table but our own
            // ResourcePressure.
            assert_eq!(tested.len(), capt_hook_core::EventKind::ALL.len() - 1);
        }
    };
}

event_tests! {
    ev_session_start => "SessionStart",
    ev_setup => "Setup",
    ev_instructions_loaded => "InstructionsLoaded",
    ev_user_prompt_submit => "UserPromptSubmit",
    ev_user_prompt_expansion => "UserPromptExpansion",
    ev_message_display => "MessageDisplay",
    ev_pre_tool_use => "PreToolUse",
    ev_permission_request => "PermissionRequest",
    ev_permission_denied => "PermissionDenied",
    ev_post_tool_use => "PostToolUse",
    ev_post_tool_use_failure => "PostToolUseFailure",
    ev_post_tool_batch => "PostToolBatch",
    ev_notification => "Notification",
    ev_subagent_start => "SubagentStart",
    ev_subagent_stop => "SubagentStop",
    ev_task_created => "TaskCreated",
    ev_task_completed => "TaskCompleted",
    ev_stop => "Stop",
    ev_stop_failure => "StopFailure",
    ev_teammate_idle => "TeammateIdle",
    ev_config_change => "ConfigChange",
    ev_cwd_changed => "CwdChanged",
    ev_directory_added => "DirectoryAdded",
    ev_file_changed => "FileChanged",
    ev_worktree_create => "WorktreeCreate",
    ev_worktree_remove => "WorktreeRemove",
    ev_pre_compact => "PreCompact",
    ev_post_compact => "PostCompact",
    ev_session_end => "SessionEnd",
    ev_elicitation => "Elicitation",
    ev_elicitation_result => "ElicitationResult",
    ev_pre_model_switch => "PreModelSwitch",
    ev_post_model_switch => "PostModelSwitch",
    ev_pre_skill_shell_command => "PreSkillShellCommand",
}

/// The plugin registers every event Claude Code sends, once, in exec form (Claude Code spawns
/// the client itself, no shell), and asks Claude Code to block the guarded call when the client
/// cannot answer at all (`onFailure`), on the guard events and PreModelSwitch (where Claude
/// Code itself blocks on a timeout) only: elsewhere a broken client must not stop the session.
/// `hooks/hooks.json` holds the events Claude Code 2.1.139 (the first with exec form) knows;
/// each later one sits alone in a file that `plugin.json` lists, because a Claude Code that does
/// not know an event refuses the whole file it is in (2.1.138 and 2.1.240 checked by hand).
#[test]
fn plugin_registers_every_event() {
    use capt_hook_core::EventKind;
    // Added after 2.1.139, per the changelog (MessageDisplay 2.1.152, DirectoryAdded 2.1.219)
    // and the 2.1.332 bundle (the other three).
    const LATER: &[&str] = &[
        "MessageDisplay",
        "DirectoryAdded",
        "PreModelSwitch",
        "PostModelSwitch",
        "PreSkillShellCommand",
    ];
    let plugin = workspace().join("plugin");
    let read = |rel: &str| -> serde_json::Value {
        let text =
            std::fs::read_to_string(plugin.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"))
    };
    let manifest = read(".claude-plugin/plugin.json");
    let extra: Vec<&str> = manifest["hooks"]
        .as_array()
        .expect("plugin.json lists the later events' files")
        .iter()
        .map(|v| v.as_str().unwrap().trim_start_matches("./"))
        .collect();
    let mut registered: Vec<(String, serde_json::Value)> = Vec::new();
    for file in std::iter::once("hooks/hooks.json").chain(extra.iter().copied()) {
        let v = read(file);
        // The hooks module's file names the module and registers no command hook.
        if file == "hooks/mod.json" {
            assert_eq!(v["modules"], serde_json::json!(["../mod/captain-hook.js"]));
            assert!(v.get("hooks").is_none(), "{file} holds the module alone");
            assert!(plugin.join("mod/captain-hook.js").is_file());
            continue;
        }
        let hooks = v["hooks"].as_object().unwrap_or_else(|| panic!("{file}"));
        for (name, entries) in hooks {
            let later = LATER.contains(&name.as_str());
            if file == "hooks/hooks.json" {
                assert!(
                    !later,
                    "{name} is newer than 2.1.139: it needs a file of its own"
                );
            } else {
                assert_eq!(
                    file,
                    format!("hooks/{name}.json"),
                    "one later event per file"
                );
                assert_eq!(hooks.len(), 1, "{file} holds one event");
            }
            registered.push((name.clone(), entries.clone()));
        }
    }
    for kind in EventKind::ALL {
        let name = kind.name();
        let entries: Vec<&serde_json::Value> = registered
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, e)| e)
            .collect();
        // ResourcePressure is our host's own; registering WorktreeCreate would replace Claude
        // Code's git worktree creation for every user of the plugin.
        if matches!(name, "ResourcePressure" | "WorktreeCreate") {
            assert!(entries.is_empty(), "{name} must not be registered");
            continue;
        }
        assert_eq!(entries.len(), 1, "{name} is registered once");
        let entries = entries[0].as_array().unwrap();
        assert_eq!(entries.len(), 1, "{name}");
        let handlers = entries[0]["hooks"].as_array().unwrap();
        assert_eq!(handlers.len(), 1, "{name}");
        let h = &handlers[0];
        assert_eq!(h["type"], "command", "{name}");
        assert_eq!(h["command"], "${CLAUDE_PLUGIN_ROOT}/bin/hook", "{name}");
        assert_eq!(h["args"], serde_json::json!(["run", name]), "{name}");
        let block = kind.is_guard() || kind == EventKind::PreModelSwitch;
        let expected = if block {
            serde_json::json!("block")
        } else {
            serde_json::Value::Null
        };
        assert_eq!(h["onFailure"], expected, "{name}: onFailure");
        // The plugin matches every tool and source: the hooks decide what applies.
        assert!(entries[0].get("matcher").is_none(), "{name}");
    }
    assert_eq!(registered.len(), EventKind::ALL.len() - 2);
}

/// `check` warns about a blocking Stop hook that repeats on every continuation (it can loop),
/// and not about the same hook without `repeat` or about a gate.
#[test]
fn check_warns_on_a_stop_hook_that_can_loop() {
    let looping = "[[hook]]\nkind = \"hook\"\nevents = \"Stop\"\nmessage = \"again\"\nblock = true\nrepeat = true\n";
    let p = Project::new(&[("loop.toml", looping)]);
    let out = p.run(&["check"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("warning:") && text(&out.stderr).contains("loop"),
        "{}",
        text(&out.stderr)
    );
    let fine = "[[hook]]\nkind = \"hook\"\nevents = \"Stop\"\nmessage = \"once\"\nblock = true\n\n[[hook]]\nkind = \"gate\"\nmessage = \"tests?\"\n";
    let p = Project::new(&[("fine.toml", fine)]);
    let out = p.run(&["check"], b"");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        !text(&out.stderr).contains("warning:"),
        "{}",
        text(&out.stderr)
    );
}

/// Every relative link in the README and the docs resolves to a file in the repository.
#[test]
fn doc_links_resolve() {
    let root = workspace();
    let mut files = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let link = regex_lite_links();
    let mut broken = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for target in link(&text) {
            if target.starts_with("http") || target.starts_with('#') {
                continue;
            }
            let path = target.split('#').next().unwrap_or_default();
            if !file.parent().unwrap().join(path).exists() {
                broken.push(format!("{}: {target}", file.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `](target)` link targets in markdown text.
fn regex_lite_links() -> impl Fn(&str) -> Vec<String> {
    |text: &str| {
        text.match_indices("](")
            .filter_map(|(i, _)| {
                let rest = &text[i + 2..];
                rest.find(')').map(|end| rest[..end].to_owned())
            })
            .collect()
    }
}

/// Every field the docs' table of common fields lists, and every kind the kinds table names, is
/// accepted by the loader (checked against the schema it validates with).
#[test]
fn documented_fields_and_kinds_are_accepted() {
    let doc = std::fs::read_to_string(workspace().join("docs/hooks-toml.md")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(workspace().join("docs/hooks.schema.json")).unwrap(),
    )
    .unwrap();
    let entries = schema["$defs"]["HookEntry"]["oneOf"].as_array().unwrap();
    let kind_of =
        |e: &serde_json::Value| e["properties"]["kind"]["const"].as_str().map(str::to_owned);
    let section = |title: &str| -> Vec<String> {
        let start = doc
            .find(title)
            .unwrap_or_else(|| panic!("no {title:?} in the docs"));
        doc[start..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .filter_map(|l| l.split('|').nth(1))
            .flat_map(|cell| {
                cell.split(',')
                    .map(|c| c.trim().trim_matches('`').to_owned())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let fields = section("Fields every kind accepts");
    assert!(
        fields.len() > 10 && fields.contains(&"repeat".to_owned()),
        "{fields:?}"
    );
    for field in fields {
        for entry in entries {
            assert!(
                entry["properties"].get(&field).is_some(),
                "documented field `{field}` is not accepted by kind {:?}",
                kind_of(entry)
            );
        }
    }
    let kinds: Vec<String> = entries.iter().filter_map(kind_of).collect();
    let documented = section("## Kinds");
    assert!(documented.len() > 10, "{documented:?}");
    for kind in documented {
        assert!(
            kinds.contains(&kind),
            "documented kind `{kind}` is not accepted"
        );
    }
}

/// A state directory that cannot be written is said once, where the user sees it, instead of
/// silently turning fire limits off.
#[test]
fn unwritable_state_is_reported_in_a_system_message() {
    let p = Project::new(&[(
        "nudge.toml",
        "[[hook]]\nkind = \"nudge\"\nmessage = \"read the docs first\"\n",
    )]);
    // A regular file where the state directory should be: no user can create directories in it.
    let blocker = p.root().join("state-is-a-file");
    std::fs::write(&blocker, "x").unwrap();
    let payload = format!(
        "{{\"session_id\":\"s1\",\"cwd\":{:?},\"tool_name\":\"Bash\",\"tool_input\":{{\"command\":\"ls\"}}}}",
        p.root().display().to_string()
    );
    let out = p.run_env(
        &["run", "PreToolUse"],
        payload.as_bytes(),
        &[("CAPTAIN_HOOK_STATE_DIR", &blocker)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notice = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        notice.contains("session state cannot be written") && notice.contains("state-is-a-file"),
        "{v}"
    );
    // The nudge itself stays quiet: without its counter it cannot keep its once-per-session
    // promise, and a limit errs towards firing less, never more.
    assert!(v.get("hookSpecificOutput").is_none(), "{v}");
}

/// `docs/runtime.md` lists every environment variable exactly as the one table declares it.
#[test]
fn docs_list_every_environment_variable() {
    let doc = std::fs::read_to_string(workspace().join("docs/runtime.md")).unwrap();
    let table = capt_hook_proto::env::markdown_table();
    assert!(
        doc.contains(&table),
        "docs/runtime.md must carry the settings table from capt_hook_proto::env:\n{table}"
    );
}

/// A line nested past the parser's limit that no rule denies still says it could not be read.
#[test]
fn an_unreadable_line_is_never_silent() {
    let p = Project::new(&[(
        "ro.toml",
        "[[hook]]\nkind = \"approve\"\nlabel = \"reads\"\nonly_if = [{ tool = \"Bash\" }, { read_only_command = true }]\n",
    )]);
    let deep = format!("{}ls{}", "$(".repeat(60), ")".repeat(60));
    let payload = serde_json::json!({"session_id": "s", "cwd": p.root(), "tool_name": "Bash", "tool_input": {"command": deep}});
    let out = p.run(&["run", "PreToolUse"], payload.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v.get("hookSpecificOutput").is_none(),
        "never approved as read-only: {v}"
    );
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("could not be read to the end"),
        "{v}"
    );
}

/// The unit `helper install` writes is one systemd accepts as it is: `systemd-analyze verify`
/// (from Debian's `systemd` package) reports nothing, for a host path with a space and a `%`.
/// A path systemd would refuse to run is an error at install time instead.
#[cfg(target_os = "linux")]
#[test]
fn the_installed_unit_passes_systemd_analyze_verify() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(&[]);
    let host = p.root().join("my hooks/100%/capt-hookd");
    std::fs::create_dir_all(host.parent().unwrap()).unwrap();
    std::fs::write(&host, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = p.root().join("config");
    let env: &[(&str, &Path)] = &[("XDG_CONFIG_HOME", &config)];
    let out = p.run_env(
        &[
            "helper",
            "install",
            "--no-start",
            "--host",
            host.to_str().unwrap(),
        ],
        b"",
        env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let unit = config.join("systemd/user/capt-hookd.service");
    let verify = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .output()
        .expect("systemd-analyze runs (Debian: apt-get install systemd)");
    assert!(
        verify.status.success() && verify.stderr.is_empty() && verify.stdout.is_empty(),
        "systemd-analyze verify {}: {}{}",
        unit.display(),
        text(&verify.stdout),
        text(&verify.stderr)
    );

    let quoted = p.root().join("it's/capt-hookd");
    std::fs::create_dir_all(quoted.parent().unwrap()).unwrap();
    std::fs::write(&quoted, "#!/bin/sh\n").unwrap();
    let out = p.run_env(
        &[
            "helper",
            "install",
            "--print",
            "--host",
            quoted.to_str().unwrap(),
        ],
        b"",
        env,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("systemd cannot run"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn helper_install_writes_the_unit_for_the_named_host_and_status_says_no_host_answers() {
    let p = Project::new(&[]);
    let host = p.root().join("bin/capt-hookd");
    std::fs::create_dir_all(host.parent().unwrap()).unwrap();
    std::fs::write(&host, "#!/bin/sh\n").unwrap();
    let config = p.root().join("config");
    let runtime = p.root().join("run");
    let env: &[(&str, &Path)] = &[("XDG_CONFIG_HOME", &config), ("XDG_RUNTIME_DIR", &runtime)];

    let out = p.run_env(
        &[
            "helper",
            "install",
            "--print",
            "--host",
            host.to_str().unwrap(),
        ],
        b"",
        env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    assert!(
        printed.contains(&format!("ExecStart=\"{}\" serve", host.display())),
        "{printed}"
    );
    assert!(!config.exists(), "--print writes nothing");

    let out = p.run_env(
        &[
            "helper",
            "install",
            "--no-start",
            "--host",
            host.to_str().unwrap(),
        ],
        b"",
        env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let unit = config.join("systemd/user/capt-hookd.service");
    assert_eq!(std::fs::read_to_string(&unit).unwrap(), printed);

    let out = p.run_env(
        &["helper", "install", "--host", "/nonexistent/capt-hookd"],
        b"",
        env,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("is not a file"),
        "{}",
        text(&out.stderr)
    );

    // No host runs on this private socket: status says so, exits 1, and starts nothing.
    let out = p.run_env(&["helper", "status"], b"", env);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("helper not reachable"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains(&unit.display().to_string()),
        "{}",
        text(&out.stdout)
    );
    assert!(!runtime.join("captain-hook/capt-hookd.sock").exists());

    let out = p.run_env(&["helper", "uninstall"], b"", env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!unit.exists());
}

#[test]
fn list_shows_the_packs_and_what_a_project_turned_off() {
    let p = Project::new(&[
        ("stash.toml", STASH),
        (
            "config.toml",
            "[packs]\ndisable = [\"performance\"]\n[hooks]\ndisable = [\"general/commands:block_command_pkill\"]\n",
        ),
    ]);
    let out = p.run(&["list"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].ends_with("\tproject"),
        "project hooks first: {stdout}"
    );
    assert!(
        lines.iter().any(
            |l| l.starts_with("general/commands:hook_stash_guard\thook\t")
                && l.ends_with("builtin:general (always on)")
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("# builtin:performance off: disabled in"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# builtin:go inactive: no go.mod or go.work"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# general/commands:block_command_pkill off"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("\ngeneral/commands:block_command_pkill\t"),
        "{stdout}"
    );

    let out = p.run(&["pack", "list"], b"");
    assert_eq!(out.status.code(), Some(0));
    let rows = text(&out.stdout);
    assert!(
        rows.lines().any(|l| l.contains("builtin:general")
            && l.contains("active")
            && l.contains("always on")),
        "{rows}"
    );
    // config.toml is settings, never a hook file.
    let out = p.run(&["check"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// The packs' LLM hooks stay quiet where their judge cannot run, and `pack list` and `list`
/// say which and why; where it can, nothing is said.
#[test]
fn pack_list_shows_llm_hooks_skipped_for_want_of_a_judge() {
    let p = Project::new(&[]);
    let missing = p.root().join("no-such-claude");
    let out = p.run_env(
        &["pack", "list"],
        b"",
        &[("CAPT_HOOK_CLAUDE_BIN", &missing)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = text(&out.stdout);
    assert!(
        rows.lines().any(
            |l| l.starts_with("# general/review:llm_gate_review skipped: no judge")
                && l.contains("no-such-claude")
        ),
        "{rows}"
    );
    let out = p.run_env(&["list"], b"", &[("CAPT_HOOK_CLAUDE_BIN", &missing)]);
    assert!(
        text(&out.stdout).contains("# general/questions:llm_gate_narrate_then_wait skipped"),
        "{}",
        text(&out.stdout)
    );
    // A judge that can run: no such line.
    let fake = p.root().join("fake-claude");
    std::fs::write(&fake, "#!/bin/sh\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = p.run_env(&["pack", "list"], b"", &[("CAPT_HOOK_CLAUDE_BIN", &fake)]);
    assert!(
        !text(&out.stdout).contains("skipped"),
        "{}",
        text(&out.stdout)
    );
}

/// `run` keeps what parsing patterns taught it in one file for every project, and a later run
/// answers the same from it; a file it cannot read only means parsing again.
#[test]
fn runs_share_what_parsing_patterns_taught_them() {
    let p = Project::new(&[]);
    let cache = p.root().join("cache");
    let env: &[(&str, &Path)] = &[("XDG_CACHE_HOME", &cache)];
    let payload = br#"{"session_id":"s","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}"#;
    let decision = |out: &Output| {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {:?} {}", text(&out.stdout), text(&out.stderr)));
        v["hookSpecificOutput"]["permissionDecision"].clone()
    };
    let facts = cache.join("captain-hook/host-v1/patterns/capt-hook-run.json");
    let first = p.run_env(&["run", "PreToolUse", "--packs"], payload, env);
    assert_eq!(decision(&first), "deny");
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&facts).expect("the first run saved its facts"))
            .unwrap();
    let learned = stored["facts"].as_object().map_or(0, |f| f.len());
    assert!(learned > 50, "the packs' patterns are kept: {learned}");
    // Read back, not parsed again: the file is left as it was.
    let written = std::fs::metadata(&facts).unwrap().modified().unwrap();
    let second = p.run_env(&["run", "PreToolUse", "--packs"], payload, env);
    assert_eq!(decision(&second), "deny");
    assert_eq!(
        std::fs::metadata(&facts).unwrap().modified().unwrap(),
        written
    );
    std::fs::write(&facts, "{ not json").unwrap();
    let third = p.run_env(&["run", "PreToolUse", "--packs"], payload, env);
    assert_eq!(decision(&third), "deny");
    assert!(
        serde_json::from_slice::<serde_json::Value>(&std::fs::read(&facts).unwrap()).is_ok(),
        "a broken file is replaced by what the run parsed"
    );
}

#[test]
fn run_loads_packs_only_when_asked() {
    let p = Project::new(&[]);
    let payload = br#"{"session_id":"s","tool_name":"Bash","tool_input":{"command":"pkill node"}}"#;
    let out = p.run(&["run", "PreToolUse"], payload);
    assert_eq!(
        text(&out.stdout),
        "",
        "the behaviour-case path runs the project's hooks alone"
    );
    let out = p.run(&["run", "PreToolUse", "--packs"], payload);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    let out = p.run(&["explain", "PreToolUse", "--packs"], payload);
    let explained = text(&out.stdout);
    assert!(
        explained.contains("general/commands:block_command_pkill"),
        "{explained}"
    );
    assert!(explained.contains("verdict: block"), "{explained}");
    let out = p.run(&["explain", "PreToolUse"], payload);
    assert!(
        text(&out.stdout).contains("no hooks registered"),
        "{}",
        text(&out.stdout)
    );
    // A named hooks directory keeps the packs: an empty one must not switch them off.
    let empty = p.root().join("empty-hooks");
    std::fs::create_dir_all(&empty).unwrap();
    let named = empty.to_str().unwrap();
    let out = p.run(&["run", "PreToolUse", "--packs", "--hooks", named], payload);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {:?}", text(&out.stdout)));
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    let out = p.run(
        &["explain", "PreToolUse", "--packs", "--hooks", named],
        payload,
    );
    assert!(
        text(&out.stdout).contains("general/commands:block_command_pkill"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn pack_test_checks_builtin_packs_and_a_plugins_layout_dependency_and_tests() {
    let p = Project::new(&[]);
    let out = p.run(&["pack", "test"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("0 failed, 0 errors"),
        "{}",
        text(&out.stdout)
    );

    let plugin = p.root().join("plugin");
    let write = |rel: &str, body: &str| {
        let f = plugin.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, body).unwrap();
    };
    write(".claude-plugin/plugin.json", r#"{"name": "acme"}"#);
    let out = p.run(&["pack", "test", plugin.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("dependencies needs"), "{stderr}");
    assert!(
        stderr.contains("capt-hook/pack.toml is missing"),
        "{stderr}"
    );

    write(
        ".claude-plugin/plugin.json",
        r#"{"name": "acme", "dependencies": [{"name": "captain-hook", "marketplace": "captain-hook", "version": ">=0.1.0"}]}"#,
    );
    write("capt-hook/pack.toml", "description = \"deploys\"\n");
    write(
        "capt-hook/hooks/deploy.toml",
        &STASH.replace("No stashing", "Deploys go through CI"),
    );
    let out = p.run(&["pack", "test", plugin.to_str().unwrap()], b"");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("PASS  plugin/deploy:"),
        "{}",
        text(&out.stdout)
    );

    write(
        "capt-hook/hooks/deploy.toml",
        &STASH.replace("\"block\"\n  pattern", "\"warn\"\n  pattern"),
    );
    let out = p.run(&["pack", "test", plugin.to_str().unwrap()], b"");
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failing inline test fails the pack"
    );
}

#[test]
fn tickets_minted_by_a_run_are_listed_and_revoked() {
    let hook = r#"
[[hook]]
kind = "tickets"
only_if = [{ tool = "mcp__chat__post_message" }]
ticket = "chat.post"
place = { channel = "/channel" }
reach = "place"
deny = "Ask the user first."
rules = [{ name = "asked", user_said = { pattern = "post", names = ["channel"] } }]
"#;
    let p = Project::new(&[("t.toml", hook)]);
    let state = p.root().join("state");
    let env = [("CAPTAIN_HOOK_STATE_DIR", state.as_path())];
    let transcript = p.root().join("t.jsonl");
    std::fs::write(
        &transcript,
        "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"post it to #deploys\"}}\n",
    )
    .unwrap();
    let payload = serde_json::json!({
        "session_id": "s1", "hook_event_name": "PreToolUse",
        "tool_name": "mcp__chat__post_message",
        "tool_input": {"channel": "deploys", "text": "hi"},
        "transcript_path": transcript, "cwd": p.root(),
    })
    .to_string();
    let out = p.run_env(&["run", "PreToolUse"], payload.as_bytes(), &env);
    assert!(
        text(&out.stdout).contains("\"permissionDecision\":\"allow\""),
        "{out:?}"
    );
    let out = p.run_env(&["tickets", "list", "--json"], b"", &env);
    assert!(out.status.success(), "{out:?}");
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["place"]["channel"], "deploys");
    assert_eq!(listed["evidence"][0]["text"], "post it to #deploys");
    assert_eq!(listed["tree"], "s1");
    assert_eq!(listed["author"], "main");
    assert_eq!(listed["revoked_at"], serde_json::Value::Null);
    let id = listed["id"].as_str().unwrap().to_owned();
    let human = text(&p.run_env(&["tickets", "list"], b"", &env).stdout);
    assert!(
        human.contains(&id) && human.contains("reach=place") && human.contains("tree=s1"),
        "{human}"
    );
    let out = p.run_env(&["tickets", "revoke", &id], b"", &env);
    assert!(out.status.success(), "{out:?}");
    let out = p.run_env(&["tickets", "revoke", &id], b"", &env);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!("ticket {id} was already revoked")),
        "{out:?}"
    );
    let out = p.run_env(&["tickets", "revoke", "000000000000"], b"", &env);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no ticket 000000000000"),
        "{out:?}"
    );
    // Revoked: gone from the live listing, kept (marked) in --all, and the post is checked
    // again, minting a fresh ticket from the same words.
    assert!(text(&p.run_env(&["tickets", "list"], b"", &env).stdout).starts_with("no tickets in "));
    let all = text(&p.run_env(&["tickets", "list", "--all"], b"", &env).stdout);
    assert!(all.contains(&id) && all.contains("revoked 20"), "{all}");
    let out = p.run_env(&["run", "PreToolUse"], payload.as_bytes(), &env);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("\"permissionDecision\":\"allow\"") && !stdout.contains(&id),
        "{stdout}"
    );
}

/// A Rust hook project without a build for its sources: `run` serves the TOML hooks (its
/// `Cargo.toml` is not a hook file), tells the session once that the Rust hooks are not live,
/// and `build` on a directory without a manifest names what is missing.
#[test]
fn an_unbuilt_rust_project_runs_its_toml_hooks_and_says_so_once() {
    let p = Project::new(&[
        ("guards.toml", STASH),
        (
            "Cargo.toml",
            "[package]\nname = \"project-hooks\"\nversion = \"0.1.0\"\n",
        ),
    ]);
    std::fs::create_dir_all(p.root().join(".claude/hooks/src")).unwrap();
    std::fs::write(p.root().join(".claude/hooks/src/main.rs"), "fn main() {}\n").unwrap();
    let builds = p.root().join("builds");
    let env: &[(&str, &Path)] = &[("CAPT_HOOK_BUILD_DIR", &builds)];
    let payload = serde_json::json!({
        "session_id": "rs1", "cwd": p.root(), "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "git stash"},
    })
    .to_string();
    let out = p.run_env(&["run", "PreToolUse"], payload.as_bytes(), env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    let note = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        note.contains("not live") && note.contains("capt-hook build"),
        "{v}"
    );
    let again = p.run_env(&["run", "PreToolUse"], payload.as_bytes(), env);
    let v: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert!(
        v.get("systemMessage").is_none(),
        "told once per session: {v}"
    );

    let plain = Project::new(&[("guards.toml", STASH)]);
    let out = plain.run(&["build"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("not a Rust hook project"),
        "{}",
        text(&out.stderr)
    );
}

/// A manifest cargo cannot read fails the build visibly, and the failure is recorded, so `run`
/// says why the Rust hooks are not live instead of asking for a build that cannot succeed.
#[test]
fn a_broken_manifest_fails_the_build_and_is_recorded() {
    let p = Project::new(&[
        ("guards.toml", STASH),
        ("Cargo.toml", "[package\nname = 1\n"),
    ]);
    let builds = p.root().join("builds");
    let home = PathBuf::from(std::env::var("HOME").unwrap());
    let cargo_home =
        std::env::var("CARGO_HOME").map_or_else(|_| home.join(".cargo"), PathBuf::from);
    let rustup_home =
        std::env::var("RUSTUP_HOME").map_or_else(|_| home.join(".rustup"), PathBuf::from);
    let env: &[(&str, &Path)] = &[
        ("CAPT_HOOK_BUILD_DIR", &builds),
        ("CARGO_HOME", &cargo_home),
        ("RUSTUP_HOME", &rustup_home),
    ];
    let out = p.run_env(&["build"], b"", env);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("Cargo.toml"),
        "{}",
        text(&out.stderr)
    );
    let payload = serde_json::json!({
        "session_id": "bm1", "cwd": p.root(), "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "git stash"},
    })
    .to_string();
    let out = p.run_env(&["run", "PreToolUse"], payload.as_bytes(), env);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    let note = v["systemMessage"].as_str().unwrap_or_default();
    assert!(note.contains("its last build failed"), "{v}");
}

#[test]
fn check_names_an_llm_specialty_the_project_does_not_have() {
    let gate = "[[hook]]\nkind = \"llm_gate\"\nprompt = \"p\"\nmessage = \"m\"\nspecialty = \"security\"\n";
    let p = Project::new(&[("gate.toml", gate)]);
    let out = p.run(&["check"], b"");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        said.contains("gate.toml:5:1: hook[0].specialty: ")
            && said.contains("no specialty `security`"),
        "{said}"
    );
    std::fs::write(
        p.root().join(".claude/hooks/config.toml"),
        "[llm.specialties.security]\nbackend = \"claude\"\n",
    )
    .unwrap();
    let out = p.run(&["check"], b"");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

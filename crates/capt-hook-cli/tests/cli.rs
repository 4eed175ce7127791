//! The `capt-hook` binary, run as a real process.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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

#[test]
fn run_edges_unknown_event_blank_and_malformed_stdin() {
    let p = Project::new(&[("stash.toml", STASH)]);
    let out = p.run(&["run", "PreToolUze"], b"{}");
    assert_eq!(out.status.code(), Some(1));
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
            // The only payloads that may produce a verdict are well-formed Bash calls.
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(v["hookSpecificOutput"].is_object(), "payload {i}");
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
    assert_eq!(cols[2], "PreToolUse");
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
    for dir in ["examples", "examples/session-workflow"] {
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
fn a_corrupt_state_file_is_kept_aside_and_the_hook_keeps_working() {
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
    // The bad file reads as a fresh count: the hook still works...
    assert!(
        !run_with_state(&p, &state, "PreToolUse", payload)
            .stdout
            .is_empty()
    );
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

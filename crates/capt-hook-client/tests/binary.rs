//! The `hook` binary as built: arguments, exit codes,
//! descriptors 0 to 2 and what it prints, with no host and no worker beside it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The binary copied alone into a fresh directory, so no `capt-hookd` or `capt-hook-worker`
/// from the build directory is found beside it (and started), with a sandbox HOME and runtime
/// directory.
struct Alone {
    dir: PathBuf,
}

impl Alone {
    fn new(name: &str) -> Alone {
        let dir = std::env::temp_dir().join(format!(
            "capt-hook-client-binary-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["bin", "home", "run"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        std::fs::copy(env!("CARGO_BIN_EXE_hook"), dir.join("bin/hook")).unwrap();
        Alone { dir }
    }

    /// `sh -c script` with `$HOOK` the copied binary: the shell can close a descriptor
    /// before starting it, which `Command` cannot.
    fn shell(&self, script: &str, stdin: &[u8]) -> Output {
        // The tests run in parallel threads: one that forks while another copies its binary
        // holds the copy open for writing until it execs, and an exec of that copy then fails
        // with "Text file busy" (sh exits 126). That is the test's race, not the client's.
        for _ in 0..20 {
            let out = self.shell_once(script, stdin);
            let busy = out.status.code() == Some(126) && text(&out.stderr).contains("busy");
            if !busy {
                return out;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("{} stayed busy", self.dir.join("bin/hook").display());
    }

    fn shell_once(&self, script: &str, stdin: &[u8]) -> Output {
        let mut child = Command::new("sh")
            .args(["-c", script])
            .env("HOOK", self.dir.join("bin/hook"))
            .env("HOME", self.dir.join("home"))
            .env("XDG_RUNTIME_DIR", self.dir.join("run"))
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("FACTORY_PROJECT_DIR")
            .env_remove("CAPT_HOOK_CLIENT_TIMEOUT")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        // A shell that could not start the client has closed its end: its status says why.
        if let Err(e) = child.stdin.take().unwrap().write_all(stdin) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
        child.wait_with_output().unwrap()
    }
}

impl Drop for Alone {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn async_runs_exit_at_once_and_usage_errors_exit_1() {
    let alone = Alone::new("usage");
    let idle = alone.shell(r#""$HOOK" run Stop --async"#, b"");
    assert_eq!(idle.status.code(), Some(0), "{}", text(&idle.stderr));
    assert!(idle.stdout.is_empty() && idle.stderr.is_empty());
    let bad = alone.shell(r#""$HOOK" walk"#, b"");
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad.stderr).starts_with("hook: usage: hook run"),
        "{}",
        text(&bad.stderr)
    );
    // The arguments reach the parser in order: the event is the one named.
    let named = alone.shell(r#""$HOOK" run --agent codex Stop --async"#, b"");
    assert_eq!(named.status.code(), Some(0), "{}", text(&named.stderr));
}

/// Closed standard descriptors are opened on /dev/null at start-up (start.rs, tested there);
/// here, the run around it: a closed stdin is an empty payload.
#[test]
fn a_closed_stdin_reads_as_empty_not_as_a_bad_descriptor() {
    let alone = Alone::new("stdin");
    // Stop is not guarded: with no payload and no project it is a plain error.
    let out = alone.shell(r#"exec "$HOOK" run Stop <&-"#, b"");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no project root"), "{err}");
    assert!(!err.contains("Bad file descriptor"), "{err}");
}

#[test]
fn a_guarded_call_with_nothing_to_answer_it_prints_the_ask_answer_in_full() {
    let alone = Alone::new("guarded");
    let payload = format!(
        r#"{{"hook_event_name":"PreToolUse","cwd":"{}","tool_name":"Bash","tool_input":{{"command":"ls"}}}}"#,
        alone.dir.display()
    );
    let out = alone.shell(r#""$HOOK" run PreToolUse"#, payload.as_bytes());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The whole envelope, flushed before exit: one JSON line.
    let v: capt_hook_proto::serde_json::Value =
        capt_hook_proto::serde_json::from_str(stdout.trim_end()).expect(&stdout);
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecision"], "ask",
        "{stdout}"
    );
    assert!(stdout.ends_with('\n'), "{stdout:?}");
    assert!(stderr.contains("host-unavailable"), "{stderr}");
}

#[test]
fn with_stderr_closed_the_answer_still_goes_to_stdout() {
    let alone = Alone::new("stderr");
    let payload = format!(
        r#"{{"hook_event_name":"PreToolUse","cwd":"{}","tool_name":"Bash","tool_input":{{"command":"ls"}}}}"#,
        alone.dir.display()
    );
    // With descriptor 2 closed, the client's first socket or file would take its number and
    // its stderr lines would go there; /dev/null takes it instead.
    let out = alone.shell(r#"exec "$HOOK" run PreToolUse 2>&-"#, payload.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(r#""permissionDecision":"ask""#), "{stdout}");
}

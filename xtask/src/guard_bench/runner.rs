//! Each case through the real CLI, as a user's Claude Code would ask it with no project hooks:
//! `capt-hook run PreToolUse --packs --root <project> --hooks <dir>` with a Bash tool call on
//! stdin, one process per case (so a crash or a hang is the case's alone and is seen as one),
//! a few in flight at once.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::io::AsyncWriteExt;

/// What we answered for one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ours {
    Deny(String),
    Ask(String),
    /// Context for the model, the call goes on.
    Warn(String),
    /// No verdict, or an explicit allow.
    Allow,
    /// A non-zero exit, a signal, a panic, or output that is not Claude Code's envelope.
    Crash(String),
    /// No answer within the deadline; the process was killed.
    Timeout,
}

impl Ours {
    pub fn name(&self) -> &'static str {
        match self {
            Ours::Deny(_) => "deny",
            Ours::Ask(_) => "ask",
            Ours::Warn(_) => "warn",
            Ours::Allow => "allow",
            Ours::Crash(_) => "crash",
            Ours::Timeout => "timeout",
        }
    }

    /// Whether the call stops for the user or for good: a deny or an ask.
    pub fn blocks(&self) -> bool {
        matches!(self, Ours::Deny(_) | Ours::Ask(_))
    }

    pub fn failed(&self) -> bool {
        matches!(self, Ours::Crash(_) | Ours::Timeout)
    }

    pub fn message(&self) -> &str {
        match self {
            Ours::Deny(m) | Ours::Ask(m) | Ours::Warn(m) | Ours::Crash(m) => m,
            Ours::Allow | Ours::Timeout => "",
        }
    }
}

/// Where and how the CLI runs.
#[derive(Debug, Clone)]
pub struct Setup {
    pub cli: PathBuf,
    /// The project root the payload's `cwd` names: an empty git repository outside the system
    /// temp dir, so no manifest turns a language pack on and no path is a throwaway one.
    pub root: PathBuf,
    /// The hooks directory: empty for the packs alone, or the natural rules' fixture.
    pub hooks: PathBuf,
    /// Whether the builtin packs run (`--packs`).
    pub packs: bool,
    /// HOME for the runs: empty, so no plugin pack of the real user's is loaded.
    pub home: PathBuf,
    pub jobs: usize,
    pub timeout: Duration,
}

/// Variables of the caller's that would point the CLI somewhere else.
const UNSET: [&str; 5] = [
    "CAPTAIN_HOOK_STATE_DIR",
    "CLAUDE_PROJECT_DIR",
    "FACTORY_PROJECT_DIR",
    "CLAUDE_CONFIG_DIR",
    "XDG_CONFIG_HOME",
];

/// Our answer for each command, in order.
pub fn run_all(setup: &Setup, commands: &[String]) -> anyhow::Result<Vec<Ours>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        let mut out = vec![Ours::Allow; commands.len()];
        let mut next = 0;
        let mut running = FuturesUnordered::new();
        loop {
            while running.len() < setup.jobs.max(1) && next < commands.len() {
                let i = next;
                next += 1;
                let fut = one(setup, i, &commands[i]);
                running.push(async move { (i, fut.await) });
            }
            match running.next().await {
                Some((i, ours)) => out[i] = ours,
                None => break,
            }
        }
        Ok(out)
    })
}

/// The Bash tool call Claude Code would send for `command`, as the first event of session
/// `case` (each case its own session: no hook's per-session fire count carries over).
pub fn payload(root: &Path, case: usize, command: &str) -> Vec<u8> {
    serde_json::json!({
        "session_id": format!("guard-bench-{case}"),
        "transcript_path": "/dev/null",
        "cwd": root,
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "guard-bench case"},
        "tool_use_id": "toolu_guard_bench",
    })
    .to_string()
    .into_bytes()
}

async fn one(setup: &Setup, case: usize, command: &str) -> Ours {
    let mut cmd = tokio::process::Command::new(&setup.cli);
    cmd.arg("run").arg("PreToolUse");
    if setup.packs {
        cmd.arg("--packs");
    }
    cmd.arg("--root")
        .arg(&setup.root)
        .arg("--hooks")
        .arg(&setup.hooks)
        .env("HOME", &setup.home)
        .current_dir(&setup.root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for name in UNSET {
        cmd.env_remove(name);
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return Ours::Crash(format!("spawning {}: {e}", setup.cli.display())),
    };
    let body = payload(&setup.root, case, command);
    if let Some(mut stdin) = child.stdin.take() {
        // A CLI that exits before reading all of stdin is judged by its exit and output.
        let _ = stdin.write_all(&body).await;
    }
    match tokio::time::timeout(setup.timeout, child.wait_with_output()).await {
        Err(_) => Ours::Timeout,
        Ok(Err(e)) => Ours::Crash(format!("waiting: {e}")),
        Ok(Ok(output)) => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            if !output.status.success() || stderr.contains("panicked") {
                return Ours::Crash(format!("{}: {}", output.status, tail(&stderr, 400)));
            }
            classify(&String::from_utf8_lossy(&output.stdout))
        }
    }
}

/// Our verdict from the envelope `run` printed.
pub fn classify(stdout: &str) -> Ours {
    let text = stdout.trim();
    if text.is_empty() {
        return Ours::Allow;
    }
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return Ours::Crash(format!("not JSON on stdout: {}", tail(text, 200)));
    };
    let specific = &v["hookSpecificOutput"];
    let reason = specific["permissionDecisionReason"]
        .as_str()
        .or_else(|| v["reason"].as_str())
        .unwrap_or_default()
        .to_owned();
    match specific["permissionDecision"].as_str() {
        Some("deny") => Ours::Deny(reason),
        Some("ask") => Ours::Ask(reason),
        Some("allow") => Ours::Allow,
        Some(other) => Ours::Crash(format!("unknown permissionDecision {other:?}")),
        None if v["decision"].as_str() == Some("block") => Ours::Deny(reason),
        None => match specific["additionalContext"].as_str() {
            Some(context) => Ours::Warn(context.to_owned()),
            None => Ours::Allow,
        },
    }
}

fn tail(text: &str, max: usize) -> String {
    let text = text.trim();
    let start = text
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| text.len() - i <= max)
        .unwrap_or(text.len());
    text[start..].replace('\n', " | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_as_verdicts() {
        assert_eq!(classify(""), Ours::Allow);
        assert_eq!(
            classify(
                r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"BLOCKED: no"}}"#
            ),
            Ours::Deny("BLOCKED: no".into())
        );
        assert_eq!(
            classify(
                r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"sure?"}}"#
            ),
            Ours::Ask("sure?".into())
        );
        assert_eq!(
            classify(
                r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"careful"}}"#
            ),
            Ours::Warn("careful".into())
        );
        assert_eq!(classify(r#"{"systemMessage":"hi"}"#), Ours::Allow);
        assert!(matches!(classify("oops"), Ours::Crash(_)));
    }

    #[test]
    fn payload_is_a_bash_call() {
        let v: serde_json::Value =
            serde_json::from_slice(&payload(Path::new("/p"), 7, "rm -rf /")).expect("json");
        assert_eq!(v["tool_input"]["command"], "rm -rf /");
        assert_eq!(v["tool_name"], "Bash");
        assert_eq!(v["cwd"], "/p");
        assert_eq!(v["session_id"], "guard-bench-7");
    }

    #[test]
    fn crashes_and_hangs_are_seen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = |name: &str, body: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            path
        };
        let mut setup = Setup {
            cli: script(
                "deny",
                r#"cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"no"}}'"#,
            ),
            root: dir.path().to_path_buf(),
            hooks: dir.path().to_path_buf(),
            packs: true,
            home: dir.path().to_path_buf(),
            jobs: 2,
            timeout: Duration::from_millis(500),
        };
        let cmds = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(
            run_all(&setup, &cmds).expect("runs"),
            vec![Ours::Deny("no".into()), Ours::Deny("no".into())]
        );
        setup.cli = script("crash", "echo boom >&2; exit 3");
        let got = run_all(&setup, &cmds[..1]).expect("runs");
        assert!(
            matches!(&got[0], Ours::Crash(m) if m.contains("boom")),
            "{got:?}"
        );
        setup.cli = script("hang", "sleep 5");
        assert_eq!(
            run_all(&setup, &cmds[..1]).expect("runs"),
            vec![Ours::Timeout]
        );
    }
}

//! The harness: a temp user (HOME, XDG_RUNTIME_DIR, TMPDIR) with the runtime installed, so a
//! test never touches the real user's host, and helpers to run events and control commands.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use capt_hook_proto::serde_json::{self, Value, json};

/// A block on `git stash`, a warning on `cargo publish`, a Stop gate.
pub const HOOKS: &str = r#"
[[hook]]
kind = "block_command"
argv = ["git", "stash"]
reason = "use jj shelve"

[[hook]]
kind = "hook"
events = "Stop"
message = "run the tests first"
"#;

/// One isolated user with the runtime installed.
pub struct Env {
    /// Removed on drop.
    pub dir: tempfile::TempDir,
    /// Where `hook`, `capt-hookd` and `capt-hook-worker` are installed.
    pub bin: PathBuf,
    /// Variables every command gets (e.g. a fake worker for the host).
    extra: Vec<(String, String)>,
}

impl Env {
    /// A fresh user with the runtime installed.
    pub fn new() -> Env {
        Env::with(&[])
    }

    /// A fresh user whose commands (and so the host they start) get `extra` variables.
    pub fn with(extra: &[(&str, &str)]) -> Env {
        let dir = tempfile::Builder::new()
            .prefix("che2e")
            .tempdir()
            .expect("temp dir");
        for sub in ["home", "run", "tmp", "projects"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        let bin = dir.path().join("home/.local/share/captain-hook/bin");
        std::fs::create_dir_all(&bin).expect("mkdir bin");
        for (from, to) in [
            (env!("CARGO_BIN_EXE_e2e-hook"), "hook"),
            (env!("CARGO_BIN_EXE_e2e-capt-hookd"), "capt-hookd"),
            (
                env!("CARGO_BIN_EXE_e2e-capt-hook-worker"),
                "capt-hook-worker",
            ),
            (env!("CARGO_BIN_EXE_e2e-capt-hook"), "capt-hook"),
        ] {
            std::fs::copy(from, bin.join(to)).expect("install binary");
        }
        let extra = extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Env { dir, bin, extra }
    }

    /// The fake worker binary.
    pub fn fake_worker() -> &'static str {
        env!("CARGO_BIN_EXE_e2e-fake-worker")
    }

    /// The socket directory.
    pub fn run_dir(&self) -> PathBuf {
        self.dir.path().join("run/captain-hook")
    }

    /// The host's temp dir: roots inside it are throwaway.
    pub fn host_tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    /// A command for an installed binary in this user's environment.
    pub fn cmd(&self, bin: &str) -> Command {
        self.program(self.bin.join(bin))
    }

    /// A command for any program in this user's environment.
    pub fn program(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("HOME", self.dir.path().join("home"))
            .env("XDG_RUNTIME_DIR", self.dir.path().join("run"))
            .env("TMPDIR", self.host_tmp())
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("FACTORY_PROJECT_DIR")
            .env_remove("CAPT_HOOK_CLIENT_TIMEOUT")
            .env_remove("CAPT_HOOKD_WORKER")
            // Claude Code's switches turn the host's release check off; a test sets them itself.
            .env_remove("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
            .env_remove("DISABLE_AUTOUPDATER")
            // The host state directory follows it; this user's lives under the temp HOME.
            .env_remove("XDG_CACHE_HOME")
            .envs(self.extra.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// A project (outside the host's temp dir) with `hooks` as its one TOML file.
    pub fn project(&self, name: &str, hooks: &str) -> PathBuf {
        let root = self.dir.path().join("projects").join(name);
        write_hooks(&root, hooks);
        root
    }

    /// Starts `hook run <event>` with `payload` written to its stdin.
    pub fn spawn_hook(&self, event: &str, payload: &[u8], vars: &[(&str, &str)]) -> Child {
        let mut child = self
            .cmd("hook")
            .args(["run", event])
            .envs(vars.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn hook");
        let mut stdin = child.stdin.take().expect("stdin");
        // A client may refuse oversized input before reading all of it.
        let _ = stdin.write_all(payload);
        drop(stdin);
        child
    }

    /// Runs `hook run <event>` to completion.
    pub fn hook(&self, event: &str, payload: &[u8], vars: &[(&str, &str)]) -> Output {
        self.spawn_hook(event, payload, vars)
            .wait_with_output()
            .expect("hook output")
    }

    /// Runs the installed `capt-hook` with `args`.
    pub fn capt_hook(&self, args: &[&str]) -> Output {
        self.cmd("capt-hook")
            .args(args)
            .output()
            .expect("capt-hook")
    }

    /// `capt-hookd status` parsed, or `None` when no host answers.
    pub fn status(&self) -> Option<Value> {
        let out = self
            .cmd("capt-hookd")
            .arg("status")
            .output()
            .expect("status");
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).expect("status json"))
    }

    /// Polls `cond` until it holds (a synchronization bound of 60 s, not a speed assertion).
    pub fn wait_until(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let until = Instant::now() + Duration::from_secs(60);
        while !cond() {
            assert!(Instant::now() < until, "gave up waiting for: {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pids of the live workers.
    pub fn worker_pids(&self) -> Vec<u32> {
        self.status()
            .map(|s| {
                s["workers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|w| w["pid"].as_u64())
                    .map(|p| p as u32)
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = self.cmd("capt-hookd").arg("shutdown").output();
    }
}

/// Writes `hooks` as the project's one hook file.
pub fn write_hooks(root: &Path, hooks: &str) {
    let dir = root.join(".claude/hooks");
    std::fs::create_dir_all(&dir).expect("mkdir hooks");
    std::fs::write(dir.join("hooks.toml"), hooks).expect("write hooks");
}

/// A PreToolUse payload running `command` in `root`.
pub fn bash(root: &Path, command: &str) -> Vec<u8> {
    json!({
        "session_id": "e2e", "transcript_path": "/dev/null", "cwd": root,
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": "toolu_1",
    })
    .to_string()
    .into_bytes()
}

/// A Stop payload in `root`.
pub fn stop(root: &Path) -> Vec<u8> {
    json!({
        "session_id": "e2e", "transcript_path": "/dev/null", "cwd": root,
        "hook_event_name": "Stop", "stop_hook_active": false,
    })
    .to_string()
    .into_bytes()
}

/// Stdout parsed as one JSON value (`Null` when empty).
pub fn json_out(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return Value::Null;
    }
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {text}"))
}

/// The PreToolUse decision in an envelope, if any.
pub fn decision(v: &Value) -> Option<&str> {
    v["hookSpecificOutput"]["permissionDecision"].as_str()
}

/// Stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Sends a signal to a pid.
pub fn signal(pid: u32, sig: rustix::process::Signal) {
    if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(p, sig);
    }
}

//! A throwaway user for demos and benchmarks: temp HOME and runtime dir, so nothing touches the
//! real user's host, plus helpers to run `hook` and the host's control commands in it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{Context, bail};

/// Variables of ours the sandbox's commands do not inherit: a project, a client deadline.
const UNSET: [&str; 3] = [
    "CLAUDE_PROJECT_DIR",
    "FACTORY_PROJECT_DIR",
    "CAPT_HOOK_CLIENT_TIMEOUT",
];

/// The sandbox; its directory is removed on drop.
pub struct Sandbox {
    /// Root of everything (HOME lives here).
    pub dir: PathBuf,
    /// Where the binaries are.
    pub bins: PathBuf,
    /// Whether dropping the sandbox removes its directory (false for one made elsewhere).
    owned: bool,
}

impl Sandbox {
    /// A fresh sandbox using the binaries in `bins`.
    pub fn new(bins: &Path, name: &str) -> anyhow::Result<Sandbox> {
        let dir =
            std::env::temp_dir().join(format!("capt-hook-xtask-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["home", "run", "tmp", "projects"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        Ok(Sandbox {
            dir,
            bins: bins.to_path_buf(),
            owned: true,
        })
    }

    /// A sandbox another process made (and will remove) at `dir`.
    pub fn attach(dir: &Path, bins: &Path) -> Sandbox {
        Sandbox {
            dir: dir.to_path_buf(),
            bins: bins.to_path_buf(),
            owned: false,
        }
    }

    /// A command for one of the binaries with the sandbox's environment. TMPDIR points inside
    /// the sandbox so the projects (outside it) are not treated as throwaway roots.
    pub fn command(&self, bin: &str) -> Command {
        self.with_env(Command::new(self.bins.join(bin)))
    }

    fn with_env(&self, mut cmd: Command) -> Command {
        cmd.env("HOME", self.dir.join("home"))
            .env("XDG_RUNTIME_DIR", self.dir.join("run"))
            .env("TMPDIR", self.dir.join("tmp"));
        for name in UNSET {
            cmd.env_remove(name);
        }
        cmd
    }

    /// The request-scoped environment a client started by [`Sandbox::command`] sends, so a
    /// request made here reaches the same worker as theirs.
    pub fn request_env(&self) -> std::collections::BTreeMap<String, String> {
        capt_hook_proto::request_env(std::env::vars().filter(|(k, _)| !UNSET.contains(&k.as_str())))
    }

    /// `sh -c script` with the sandbox's environment, as Claude Code runs a hook command.
    pub fn shell(&self, script: &str) -> Command {
        let mut sh = Command::new("sh");
        sh.args(["-c", script]);
        self.with_env(sh)
    }

    /// Installs the runtime and the plugin into the sandbox's home exactly as `cargo xtask
    /// install` does, and copies the committed plugin beside it (its `bin/hook` the POSIX sh
    /// wrapper, which finds the installed client); returns (installed plugin, checkout plugin).
    pub fn install_plugin(&self) -> anyhow::Result<(PathBuf, PathBuf)> {
        // The binaries are the ones this sandbox runs (already built: the host may be running).
        let installed = crate::install_from(&self.bins, &self.dir.join("home"))?;
        let checkout = self.dir.join("plugin-checkout");
        crate::copy_dir(&crate::workspace_root().join("plugin"), &checkout)?;
        Ok((installed, checkout))
    }

    /// The host socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("run/captain-hook/capt-hookd.sock")
    }

    /// Creates a project with the given hook files; returns its root.
    pub fn project(&self, name: &str, hooks: &[(&str, &str)]) -> anyhow::Result<PathBuf> {
        let root = self.dir.join("projects").join(name);
        let hooks_dir = root.join(".claude/hooks");
        std::fs::create_dir_all(&hooks_dir)?;
        for (file, text) in hooks {
            std::fs::write(hooks_dir.join(file), text)?;
        }
        Ok(root)
    }

    /// Starts the host in the background and waits for its `ready` line; returns its pid.
    pub fn start_host(&self) -> anyhow::Result<u32> {
        let mut child = self
            .command("capt-hookd")
            .arg("serve")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting capt-hookd")?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().context("no stdout")?).read_line(&mut line)?;
        if !line.starts_with("ready") {
            bail!("capt-hookd did not become ready: {line:?}");
        }
        Ok(child.id())
    }

    /// Runs `hook run <event>` with `payload` on stdin.
    pub fn hook(&self, event: &str, payload: &[u8]) -> anyhow::Result<Output> {
        let mut child = self
            .command("hook")
            .args(["run", event])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        child.stdin.take().context("no stdin")?.write_all(payload)?;
        Ok(child.wait_with_output()?)
    }

    /// `capt-hookd status`, parsed.
    pub fn status(&self) -> anyhow::Result<serde_json::Value> {
        let out = self.command("capt-hookd").arg("status").output()?;
        if !out.status.success() {
            bail!("status failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// `capt-hookd shutdown`, waiting for the host to exit. A host obeys only the capt-hookd
    /// beside it, and the running one may have been started from the sandbox's binaries or
    /// from the copy [`Sandbox::install_plugin`] put in its home: the installed one is asked
    /// first, then the sandbox's.
    pub fn shutdown(&self) -> anyhow::Result<()> {
        let installed = crate::installed_bin_dir(&self.dir.join("home")).join("capt-hookd");
        let mut refused = String::new();
        for bin in [installed, self.bins.join("capt-hookd")] {
            if !bin.exists() {
                continue;
            }
            let out = self.with_env(Command::new(&bin)).arg("shutdown").output()?;
            if out.status.success() {
                return Ok(());
            }
            refused = String::from_utf8_lossy(&out.stderr).into_owned();
        }
        bail!("shutdown failed: {refused}")
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.shutdown();
        if self.owned {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A Claude Code payload for `event` in `root`; PreToolUse carries a Bash `command`.
pub fn payload(event: &str, root: &Path, command: Option<&str>, session: &str) -> Vec<u8> {
    let mut v = serde_json::json!({
        "session_id": session,
        "transcript_path": "/dev/null",
        "cwd": root,
        "hook_event_name": event,
    });
    if let Some(command) = command {
        v["tool_name"] = "Bash".into();
        v["tool_input"] = serde_json::json!({"command": command, "description": "demo"});
        v["tool_use_id"] = "toolu_demo".into();
    }
    if event == "Stop" {
        v["stop_hook_active"] = false.into();
    }
    v.to_string().into_bytes()
}

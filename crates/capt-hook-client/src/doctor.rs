//! `capt-hook doctor`'s runtime checks: duplicate hook registrations that make Claude Code
//! dispatch an event twice, and a missing or stale host. Never starts a host.

use std::fmt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use capt_hook_proto::serde_json::{self, Value};
use capt_hook_proto::{
    BUILD, HostReply, HostRequest, MAX_FRAME, Op, decode, encode, paths, read_frame, write_frame,
};

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// False when the user should act.
    pub ok: bool,
    /// What was found and, when not ok, what to do.
    pub message: String,
}

/// Everything `doctor` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The findings, in check order.
    pub findings: Vec<Finding>,
}

impl Report {
    /// True when no finding needs action.
    pub fn is_healthy(&self) -> bool {
        self.findings.iter().all(|f| f.ok)
    }

    fn push(&mut self, ok: bool, message: String) {
        self.findings.push(Finding { ok, message });
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for finding in &self.findings {
            writeln!(
                f,
                "{} {}",
                if finding.ok { "ok  " } else { "FAIL" },
                finding.message
            )?;
        }
        Ok(())
    }
}

/// Where `xtask install` puts the binaries.
pub fn install_dir(home: &Path) -> PathBuf {
    capt_hook_proto::paths::bin_dir(home)
}

/// Runs every check for the project at `root`, with `home` as the user's home.
pub fn doctor(root: &Path, home: &Path) -> Report {
    let mut report = Report::default();
    check_install(home, &mut report);
    check_host(&mut report);
    let files = [
        root.join(".claude/settings.json"),
        root.join(".claude/settings.local.json"),
        home.join(".claude/settings.json"),
    ];
    let mut duplicates = 0;
    for file in files.iter().filter(|f| f.is_file()) {
        for (event, command) in hand_wired(file) {
            duplicates += 1;
            report.push(
                false,
                format!(
                    "{}: {event} runs `{command}` besides the plugin, so Claude Code dispatches \
                     the event twice; delete that entry",
                    file.display()
                ),
            );
        }
    }
    if duplicates == 0 {
        report.push(
            true,
            "no hand-wired capt-hook entries in settings files".into(),
        );
    }
    report
}

fn check_install(home: &Path, report: &mut Report) {
    let dir = install_dir(home);
    let missing: Vec<&str> = ["hook", "capt-hookd", "capt-hook-worker"]
        .into_iter()
        .filter(|b| !dir.join(b).is_file())
        .collect();
    if missing.is_empty() {
        report.push(true, format!("binaries installed in {}", dir.display()));
    } else {
        report.push(
            false,
            format!(
                "missing from {}: {}; run `cargo xtask install`",
                dir.display(),
                missing.join(", ")
            ),
        );
    }
}

fn check_host(report: &mut Report) {
    let socket = paths::socket_path();
    match host_version(&socket) {
        Ok((build, pid)) if build == BUILD => {
            report.push(
                true,
                format!(
                    "host pid {pid} (build {build}) answers at {}",
                    socket.display()
                ),
            );
        }
        Ok((build, pid)) => report.push(
            false,
            format!(
                "host pid {pid} is build {build}, not {BUILD}: it refuses this client's events; \
                 run `capt-hookd shutdown` (the next event starts the current host)"
            ),
        ),
        Err(e) => report.push(
            false,
            format!(
                "no host answers at {} ({e}); the next event starts one, and if it does not, \
                 see {}",
                socket.display(),
                paths::state_dir().join(paths::LOG_NAME).display()
            ),
        ),
    }
}

/// Asks the host at `socket` for its build and pid (never starts one).
pub fn host_version(socket: &Path) -> std::io::Result<(String, u32)> {
    let mut stream = UnixStream::connect(socket)?;
    stream.set_read_timeout(Some(Duration::from_secs(3)))?;
    write_frame(
        &mut stream,
        &encode(&HostRequest::new(std::process::id(), Op::Version)),
    )?;
    let body = read_frame(&mut stream, MAX_FRAME)
        .map_err(std::io::Error::other)?
        .ok_or_else(|| std::io::Error::other("host closed the connection"))?;
    match decode::<HostReply>(&body).map_err(std::io::Error::other)? {
        HostReply::Version { build, pid, .. } => Ok((build, pid)),
        other => Err(std::io::Error::other(format!("unexpected reply {other:?}"))),
    }
}

/// `(event, command)` for each hook command in a settings file that runs captain-hook directly
/// (`capt-hook run …` or a `hook run …` outside the plugin).
pub fn hand_wired(file: &Path) -> Vec<(String, String)> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let Ok(settings) = serde_json::from_str::<Value>(&text) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        return found;
    };
    for (event, groups) in events {
        let commands = groups
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g.get("hooks").and_then(Value::as_array))
            .flatten()
            .filter_map(command_line);
        for command in commands {
            if runs_captain_hook(&command) {
                found.push((event.clone(), command));
            }
        }
    }
    found
}

/// A handler's command line: `command`, followed by its exec-form `args` when it has them.
fn command_line(handler: &Value) -> Option<String> {
    let command = handler.get("command").and_then(Value::as_str)?;
    let args = handler.get("args").and_then(Value::as_array);
    let mut line = command.to_owned();
    for arg in args.into_iter().flatten().filter_map(Value::as_str) {
        line.push(' ');
        line.push_str(arg);
    }
    Some(line)
}

fn runs_captain_hook(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    words.windows(2).any(|w| {
        let program = w[0]
            .trim_matches(['"', '\''])
            .rsplit('/')
            .next()
            .unwrap_or("");
        w[1] == "run" && matches!(program, "capt-hook" | "hook")
    }) || command.contains("uvx capt-hook")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_hand_wired_entries() {
        let dir = std::env::temp_dir().join(format!("doctor-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("settings.json");
        std::fs::write(
            &file,
            r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[
                {"type":"command","command":"capt-hook run PreToolUse"},
                {"type":"command","command":"jq . | grep x"}]}],
              "Stop":[{"hooks":[{"type":"command","command":"/x/bin/hook run Stop"}]}],
              "PreSkillShellCommand":[{"hooks":[
                {"type":"command","command":"/x/bin/hook","args":["run","PreSkillShellCommand"]},
                {"type":"command","command":"/x/bin/other","args":["run"]}]}]}}"#,
        )
        .unwrap();
        let found = hand_wired(&file);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0].0, "PreToolUse");
        // Exec form (`args`) is found as well as a shell line.
        assert!(
            found
                .iter()
                .any(|(event, line)| event == "PreSkillShellCommand"
                    && line == "/x/bin/hook run PreSkillShellCommand"),
            "{found:?}"
        );
    }
}

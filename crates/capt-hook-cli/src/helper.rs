//! `capt-hook helper status | install | uninstall`: the host as a managed service.
//!
//! Without a service the first event of a login starts the host (the client spawns it). A
//! systemd user unit (Linux) or a launchd agent (macOS) starts it at login instead, so that
//! first event finds a warm host; the host still starts on demand if the service is stopped.
//! This module owns both service definitions: `cargo xtask install --service` runs
//! `capt-hook helper install` rather than writing its own copy.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, bail};
use capt_hook_proto::{BUILD, paths};

/// The systemd user unit's file name.
pub const SYSTEMD_UNIT: &str = "capt-hookd.service";
/// The launchd agent's label (and, with `.plist`, its file name).
pub const LAUNCHD_LABEL: &str = "io.github.captain-hook-rs.capt-hookd";
/// Seconds the service manager waits for the host to stop: its drain period (30 s) plus the
/// workers' retirement.
const STOP_TIMEOUT_SECS: u32 = 45;

/// Which service manager a definition is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    /// A systemd user unit.
    Systemd,
    /// A launchd user agent.
    Launchd,
}

impl Manager {
    /// The service manager of this platform.
    pub fn native() -> Manager {
        if cfg!(target_os = "macos") {
            Manager::Launchd
        } else {
            Manager::Systemd
        }
    }

    /// Where the definition is installed for the user whose home is `home`.
    pub fn file(self, home: &Path) -> PathBuf {
        match self {
            Manager::Systemd => capt_hook_proto::paths::config_base(home)
                .join("systemd")
                .join("user")
                .join(SYSTEMD_UNIT),
            Manager::Launchd => home
                .join("Library")
                .join("LaunchAgents")
                .join(format!("{LAUNCHD_LABEL}.plist")),
        }
    }

    /// The definition that runs `host serve`.
    pub fn definition(self, host: &Path) -> anyhow::Result<String> {
        match self {
            Manager::Systemd => systemd_unit(host),
            Manager::Launchd => Ok(launchd_agent(host, &paths::state_dir().join("launchd.log"))),
        }
    }
}

/// A systemd user unit that runs `host serve` from login to logout.
///
/// `KillMode=mixed`: stopping sends SIGTERM to the host alone, which drains and retires its
/// workers in order; anything left when the timeout ends is killed. `Restart=on-failure`: a
/// crashed host comes back, while `capt-hookd shutdown` (exit 0) stays down until the next
/// event starts one. No socket activation: see `docs/service.md` for why it would make the first
/// event slower, not faster.
///
/// systemd refuses to run a program whose path holds a quote, a backslash or a control
/// character ("Executable name contains special characters"), so such a path is an error here
/// rather than a unit that never starts.
pub fn systemd_unit(host: &Path) -> anyhow::Result<String> {
    let path = host.to_string_lossy();
    if let Some(c) = path
        .chars()
        .find(|c| matches!(c, '"' | '\'' | '\\') || c.is_control())
    {
        bail!(
            "systemd cannot run a program whose path contains {c:?}: {}; put capt-hookd in \
             another directory and pass it with --host",
            host.display()
        );
    }
    let exec = systemd_quote(&path);
    Ok(format!(
        "[Unit]\n\
         Description=captain-hook host: answers Claude Code hook events\n\
         Documentation=https://github.com/captain-hook-rs/captain-hook/blob/main/docs/service.md\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={exec} serve\n\
         Restart=on-failure\n\
         RestartSec=2\n\
         KillMode=mixed\n\
         TimeoutStopSec={STOP_TIMEOUT_SECS}\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n"
    ))
}

/// A path for `ExecStart=`: double-quoted (spaces stay in the word), `%` (a specifier) doubled.
/// Quotes and backslashes never get here (see [`systemd_unit`]).
fn systemd_quote(word: &str) -> String {
    format!("\"{}\"", word.replace('%', "%%"))
}

/// A launchd agent that runs `host serve` at login and again if it crashes.
///
/// `ProcessType=Interactive`: the host answers while the user waits, so launchd must not
/// throttle it as background work.
pub fn launchd_agent(host: &Path, log: &Path) -> String {
    let host = xml_escape(&host.to_string_lossy());
    let log = xml_escape(&log.to_string_lossy());
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>{LAUNCHD_LABEL}</string>
	<key>ProgramArguments</key>
	<array>
		<string>{host}</string>
		<string>serve</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ProcessType</key>
	<string>Interactive</string>
	<key>ExitTimeOut</key>
	<integer>{STOP_TIMEOUT_SECS}</integer>
	<key>StandardErrorPath</key>
	<string>{log}</string>
</dict>
</plist>
"#
    )
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The host binary to run: the one named, else `capt-hookd` beside this program (the installed
/// bin directory), else in `../Helpers/` (this program is the app bundle's `Contents/MacOS/`).
pub fn find_host(named: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = named {
        if !p.is_file() {
            bail!("--host {} is not a file", p.display());
        }
        return Ok(std::path::absolute(p)?);
    }
    let exe = std::env::current_exe()
        .and_then(|e| e.canonicalize())
        .context("locating this program")?;
    let dir = exe.parent().context("this program has no directory")?;
    let candidates = [
        dir.join("capt-hookd"),
        dir.join("..").join("Helpers").join("capt-hookd"),
    ];
    for c in &candidates {
        if c.is_file() {
            return Ok(c.canonicalize()?);
        }
    }
    bail!(
        "no capt-hookd beside {} (looked for {}); name it with --host",
        exe.display(),
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(" and ")
    )
}

fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os(capt_hook_proto::env::HOME)
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .context("HOME is not set")
}

/// `helper status`: whether a host answers (never starting one) and whether a service is
/// installed. Exit 1 when no host answers.
pub fn status() -> anyhow::Result<ExitCode> {
    let manager = Manager::native();
    let file = manager.file(&home()?);
    let service = if file.is_file() {
        format!("{} ({})", file.display(), service_state(manager))
    } else {
        "not installed (the first event starts the host; `capt-hook helper install` adds one)"
            .to_owned()
    };
    let socket = paths::socket_path();
    match capt_hook_client::doctor::host_version(&socket) {
        Ok((build, pid)) => {
            println!(
                "helper {build} ok={} pid={pid} socket={}",
                build == BUILD,
                socket.display()
            );
            if build != BUILD {
                println!(
                    "  the host is build {build}, this capt-hook is {BUILD}: run `capt-hookd \
                     shutdown` so the next event starts the current one"
                );
            }
            println!("service: {service}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("helper not reachable: {e} ({})", socket.display());
            println!("service: {service}");
            Ok(ExitCode::from(1))
        }
    }
}

/// What the service manager says of the installed service, in a word or two.
fn service_state(manager: Manager) -> String {
    let out = match manager {
        Manager::Systemd => Command::new("systemctl")
            .args(["--user", "is-active", SYSTEMD_UNIT])
            .output(),
        Manager::Launchd => Command::new("launchctl")
            .args(["list", LAUNCHD_LABEL])
            .output(),
    };
    match out {
        Ok(o) if manager == Manager::Launchd => if o.status.success() {
            "loaded"
        } else {
            "not loaded"
        }
        .to_owned(),
        Ok(o) => {
            let said = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            if said.is_empty() {
                "state unknown: systemctl --user said nothing".to_owned()
            } else {
                said
            }
        }
        Err(e) => format!("state unknown: {e}"),
    }
}

/// `helper install`: writes the service definition for `host` and asks the service manager to
/// start it. `print` writes nothing and prints the definition; `start = false` only writes it.
pub fn install(host: Option<&Path>, print: bool, start: bool) -> anyhow::Result<ExitCode> {
    let manager = Manager::native();
    let host = find_host(host)?;
    let text = manager.definition(&host)?;
    if print {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let file = manager.file(&home()?);
    write_atomically(&file, &text)?;
    println!("wrote {}", file.display());
    if !start {
        println!("not started (--no-start); the first event still starts the host on demand");
        return Ok(ExitCode::SUCCESS);
    }
    // A host the client started holds the socket: stop it (it drains), so the service's host
    // is the one that serves.
    let _ = Command::new(&host).arg("shutdown").output();
    let steps: Vec<Vec<String>> = match manager {
        Manager::Systemd => vec![
            vec!["systemctl".into(), "--user".into(), "daemon-reload".into()],
            vec![
                "systemctl".into(),
                "--user".into(),
                "enable".into(),
                "--now".into(),
                SYSTEMD_UNIT.into(),
            ],
        ],
        Manager::Launchd => {
            let domain = format!("gui/{}", uid()?);
            vec![
                vec![
                    "launchctl".into(),
                    "bootout".into(),
                    format!("{domain}/{LAUNCHD_LABEL}"),
                ],
                vec![
                    "launchctl".into(),
                    "bootstrap".into(),
                    domain,
                    file.display().to_string(),
                ],
            ]
        }
    };
    for (i, step) in steps.iter().enumerate() {
        let out = Command::new(&step[0]).args(&step[1..]).output();
        let failed = match &out {
            Ok(o) if o.status.success() => None,
            Ok(o) => Some(String::from_utf8_lossy(&o.stderr).trim().to_owned()),
            Err(e) => Some(e.to_string()),
        };
        // launchd's bootout of an agent that is not loaded fails, and that is fine.
        let optional = manager == Manager::Launchd && i == 0;
        if let Some(why) = failed.filter(|_| !optional) {
            eprintln!(
                "warning: `{}` failed: {why}\n  the service is installed but not running; the \
                 first event still starts the host on demand",
                step.join(" ")
            );
            return Ok(ExitCode::SUCCESS);
        }
    }
    println!("started: {}", service_state(manager));
    Ok(ExitCode::SUCCESS)
}

/// `helper uninstall`: stops the service and removes its definition. The host keeps starting
/// on demand.
pub fn uninstall() -> anyhow::Result<ExitCode> {
    let manager = Manager::native();
    let file = manager.file(&home()?);
    let stop: Vec<String> = match manager {
        Manager::Systemd => vec![
            "systemctl".into(),
            "--user".into(),
            "disable".into(),
            "--now".into(),
            SYSTEMD_UNIT.into(),
        ],
        Manager::Launchd => vec![
            "launchctl".into(),
            "bootout".into(),
            format!("gui/{}/{LAUNCHD_LABEL}", uid()?),
        ],
    };
    if let Ok(o) = Command::new(&stop[0]).args(&stop[1..]).output()
        && !o.status.success()
    {
        eprintln!(
            "note: `{}`: {}",
            stop.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    match std::fs::remove_file(&file) {
        Ok(()) => println!("removed {}", file.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("no service installed at {}", file.display())
        }
        Err(e) => return Err(e).with_context(|| format!("removing {}", file.display())),
    }
    Ok(ExitCode::SUCCESS)
}

fn uid() -> anyhow::Result<String> {
    let out = Command::new("id")
        .arg("-u")
        .output()
        .context("running id -u")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn write_atomically(file: &Path, text: &str) -> anyhow::Result<()> {
    let dir = file.parent().context("the service file has a directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp",
        file.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("writing {}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unit's `key=value` lines of one section.
    fn section<'a>(unit: &'a str, name: &str) -> Vec<(&'a str, &'a str)> {
        let header = format!("[{name}]");
        unit.lines()
            .skip_while(|l| *l != header)
            .skip(1)
            .take_while(|l| !l.starts_with('['))
            .filter_map(|l| l.split_once('='))
            .collect()
    }

    #[test]
    fn the_systemd_unit_runs_the_host_in_the_foreground_and_drains_on_stop() {
        let unit = systemd_unit(Path::new(
            "/home/u/.local/share/captain-hook/bin/capt-hookd",
        ))
        .unwrap();
        let service = section(&unit, "Service");
        let get = |k: &str| service.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        assert_eq!(
            get("ExecStart"),
            Some("\"/home/u/.local/share/captain-hook/bin/capt-hookd\" serve")
        );
        assert_eq!(get("Type"), Some("simple"));
        assert_eq!(get("KillMode"), Some("mixed"));
        assert_eq!(get("Restart"), Some("on-failure"));
        assert_eq!(get("TimeoutStopSec"), Some("45"));
        assert_eq!(
            section(&unit, "Install"),
            vec![("WantedBy", "default.target")]
        );
        assert!(!unit.contains("ListenStream"), "no socket activation");
    }

    #[test]
    fn odd_host_paths_are_quoted_for_systemd_and_escaped_for_launchd() {
        let unit = systemd_unit(Path::new("/opt/my hooks/100%/capt-hookd")).unwrap();
        assert!(
            unit.contains(r#"ExecStart="/opt/my hooks/100%%/capt-hookd" serve"#),
            "{unit}"
        );
        for bad in [
            "/opt/my \"hooks\"/capt-hookd",
            "/opt/a\\b/capt-hookd",
            "/opt/it's/capt-hookd",
        ] {
            let err = systemd_unit(Path::new(bad)).unwrap_err().to_string();
            assert!(err.contains("--host") && err.contains(bad), "{err}");
        }
        let agent = launchd_agent(
            Path::new("/Users/a&b/Applications/Captain Hook.app/Contents/Helpers/capt-hookd"),
            Path::new("/tmp/<log>"),
        );
        let v = plist::Value::from_reader_xml(agent.as_bytes()).unwrap();
        let args = v.as_dictionary().unwrap()["ProgramArguments"]
            .as_array()
            .unwrap();
        assert_eq!(
            args[0].as_string(),
            Some("/Users/a&b/Applications/Captain Hook.app/Contents/Helpers/capt-hookd")
        );
    }

    #[test]
    fn the_launchd_agent_parses_as_a_plist_with_the_keys_launchd_needs() {
        let agent = launchd_agent(
            Path::new("/Applications/Captain Hook.app/Contents/Helpers/capt-hookd"),
            Path::new("/Users/u/Library/Caches/captain-hook/host-v1/launchd.log"),
        );
        let v = plist::Value::from_reader_xml(agent.as_bytes()).unwrap();
        let d = v.as_dictionary().unwrap();
        assert_eq!(d["Label"].as_string(), Some(LAUNCHD_LABEL));
        let args: Vec<&str> = d["ProgramArguments"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(plist::Value::as_string)
            .collect();
        assert_eq!(
            args,
            [
                "/Applications/Captain Hook.app/Contents/Helpers/capt-hookd",
                "serve"
            ]
        );
        assert_eq!(d["RunAtLoad"].as_boolean(), Some(true));
        let keep = d["KeepAlive"].as_dictionary().unwrap();
        assert_eq!(keep["SuccessfulExit"].as_boolean(), Some(false));
        assert_eq!(d["ProcessType"].as_string(), Some("Interactive"));
        assert_eq!(
            d["ExitTimeOut"].as_signed_integer(),
            Some(i64::from(STOP_TIMEOUT_SECS))
        );
    }

    #[test]
    fn definitions_install_where_each_manager_looks() {
        let home = Path::new("/home/u");
        assert!(
            Manager::Launchd
                .file(home)
                .ends_with("Library/LaunchAgents/io.github.captain-hook-rs.capt-hookd.plist")
        );
        assert!(
            Manager::Systemd
                .file(home)
                .ends_with("systemd/user/capt-hookd.service")
        );
    }
}

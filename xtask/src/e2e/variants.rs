//! The ways a case runs our plugin: with its hooks module (the mod answers inside Claude Code)
//! or without it (the command hooks answer, as on a Claude Code without mods), and, for the
//! overhead figures, a plugin whose only hook is a no-op binary. Each copy of our plugin counts
//! the processes Claude Code starts from `bin/hook`.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// How our plugin answers in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The hooks module answers; the command hooks only what it leaves to them.
    Mod,
    /// No hooks module: every event goes to the command hooks.
    Command,
    /// Not our plugin: one whose PreToolUse hook is a static no-op binary (the overhead floor).
    Noop,
    /// Not our plugin: one whose hooks module passes classic.PreToolUse straight on, with no
    /// I/O (the floor for any module a plugin ships: Claude Code runs plugins' modules in a
    /// worker, a "hop", and only the plugins its binary carries in its own thread).
    NoopMod,
}

/// The variable naming the file the counting `bin/hook` appends its arguments to.
pub const SPAWN_LOG: &str = "CAPT_E2E_SPAWNS";

impl Route {
    /// The tag printed beside a case's name.
    pub fn tag(self) -> &'static str {
        match self {
            Route::Mod => "mod",
            Route::Command => "cmd",
            Route::Noop => "noop",
            Route::NoopMod => "noop-mod",
        }
    }

    /// Parses `--path` values.
    pub fn parse(s: &str) -> Option<Route> {
        match s {
            "mod" => Some(Route::Mod),
            "cmd" => Some(Route::Command),
            _ => None,
        }
    }
}

/// The plugin directories each path runs: copies of the installed plugin whose `bin/hook`
/// counts its starts before running the client, the `Command` one without the hooks module.
pub struct Plugins {
    /// With the hooks module.
    pub with_mod: PathBuf,
    /// Without it.
    pub without_mod: PathBuf,
    /// The no-op plugin.
    pub noop: PathBuf,
    /// The no-op module's plugin.
    pub noop_mod: PathBuf,
}

impl Plugins {
    /// Makes the copies under `dir` from the installed plugin `installed`.
    pub fn prepare(installed: &Path, dir: &Path) -> anyhow::Result<Plugins> {
        let with_mod = dir.join("with-mod");
        let without_mod = dir.join("without-mod");
        for copy in [&with_mod, &without_mod] {
            let _ = std::fs::remove_dir_all(copy);
            crate::copy_dir(installed, copy)
                .with_context(|| format!("copying the plugin to {}", copy.display()))?;
            counting_client(installed, copy)?;
        }
        drop_module(&without_mod)?;
        let noop = noop_plugin(&dir.join("noop-plugin"), dir)?;
        let noop_mod = noop_mod_plugin(&dir.join("noop-mod-plugin"))?;
        Ok(Plugins {
            with_mod,
            without_mod,
            noop,
            noop_mod,
        })
    }

    /// The plugin directory for `path`.
    pub fn of(&self, path: Route) -> &Path {
        match path {
            Route::Mod => &self.with_mod,
            Route::Command => &self.without_mod,
            Route::Noop => &self.noop,
            Route::NoopMod => &self.noop_mod,
        }
    }
}

/// Replaces the copy's `bin/hook` with a script that notes its arguments in `$CAPT_E2E_SPAWNS`
/// and runs the installed client (the one `installed/bin/hook` links to).
fn counting_client(installed: &Path, copy: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let client = std::fs::canonicalize(installed.join("bin/hook"))
        .context("resolving the installed client")?;
    let shim = copy.join("bin/hook");
    let _ = std::fs::remove_file(&shim);
    let script = format!(
        "#!/bin/sh\n# e2e-claude: count this start, then run the client.\n\
         [ -n \"${SPAWN_LOG}\" ] && echo \"$*\" >> \"${SPAWN_LOG}\"\nexec '{}' \"$@\"\n",
        client.display()
    );
    std::fs::write(&shim, script)?;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// Removes the hooks module from a plugin copy: its file and its entry in `plugin.json`.
fn drop_module(copy: &Path) -> anyhow::Result<()> {
    let manifest = copy.join(".claude-plugin/plugin.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&manifest)?)?;
    let hooks = v["hooks"]
        .as_array_mut()
        .context("plugin.json lists hook files")?;
    let before = hooks.len();
    hooks.retain(|h| h != "./hooks/mod.json");
    anyhow::ensure!(
        hooks.len() + 1 == before,
        "plugin.json does not list hooks/mod.json"
    );
    std::fs::write(&manifest, serde_json::to_string_pretty(&v)?)?;
    std::fs::remove_file(copy.join("hooks/mod.json"))?;
    Ok(())
}

/// A plugin whose one hook, on PreToolUse, is a static no-op binary.
fn noop_plugin(dir: &Path, build_in: &Path) -> anyhow::Result<PathBuf> {
    // The bench's libc-free no-op where it builds (x86_64, aarch64), else /bin/true.
    let noop = crate::bench::exec::build_noop(build_in).unwrap_or_else(|e| {
        println!("e2e-claude: no static no-op ({e:#}); /bin/true is the no-op hook");
        PathBuf::from("/bin/true")
    });
    std::fs::create_dir_all(dir.join(".claude-plugin"))?;
    std::fs::create_dir_all(dir.join("hooks"))?;
    std::fs::write(
        dir.join(".claude-plugin/plugin.json"),
        r#"{"name": "e2e-noop", "version": "0.0.0", "description": "A PreToolUse hook that does nothing"}"#,
    )?;
    let hooks = serde_json::json!({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": noop.display().to_string(), "args": []}
    ]}]}});
    std::fs::write(dir.join("hooks/hooks.json"), hooks.to_string())?;
    Ok(dir.to_path_buf())
}

/// The plugin label Claude Code logs for the no-op module.
const NOOP_MOD: &str = "e2e-noop-mod";

/// A plugin whose only hook is a module that passes classic.PreToolUse on (`next(e)`), doing
/// nothing else.
fn noop_mod_plugin(dir: &Path) -> anyhow::Result<PathBuf> {
    let _ = std::fs::remove_dir_all(dir);
    for sub in [".claude-plugin", "hooks", "mod"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let manifest = serde_json::json!({
        "name": NOOP_MOD, "version": "0.0.0",
        "description": "A hooks module that passes PreToolUse on",
        "hooks": ["./hooks/mod.json"],
    });
    std::fs::write(dir.join(".claude-plugin/plugin.json"), manifest.to_string())?;
    std::fs::write(
        dir.join("hooks/mod.json"),
        r#"{"modules": ["../mod/noop.js"]}"#,
    )?;
    std::fs::write(
        dir.join("mod/noop.js"),
        "export const register = (on) => {\n  on('classic.PreToolUse', async ($, e, next) => next(e))\n}\n",
    )?;
    Ok(dir.to_path_buf())
}

/// The managed settings that let only the organization's mods load.
pub const MODS_MANAGED_ONLY: &str = r#"{"pluginConfigs": {"cc-plugin-sec-default@builtin": {"options": {"allowManagedModsOnly": true}}}}"#;

/// Wraps `claude` so it runs in its own mount namespace where `/etc` is a copy holding
/// `/etc/claude-code/managed-settings.json` with `settings`: Claude Code reads managed settings
/// from that fixed path, and the machine's own `/etc` is left alone.
pub fn under_managed_settings(
    claude: &Path,
    settings: &str,
    scratch: &Path,
) -> anyhow::Result<std::process::Command> {
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch)?;
    let file = scratch.join("managed-settings.json");
    std::fs::write(&file, settings)?;
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["-m", "sh", "-c"])
        .arg(
            "set -e; cp -a /etc \"$1/etc\"; mkdir -p \"$1/etc/claude-code\"; \
             cp \"$1/managed-settings.json\" \"$1/etc/claude-code/\"; \
             mount --bind \"$1/etc\" /etc; shift; exec \"$@\"",
        )
        .arg("sh")
        .arg(scratch)
        .arg(claude);
    Ok(cmd)
}

/// The lines the counting `bin/hook` wrote: one per start, its arguments.
pub fn spawns(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The answers the host gave our hooks module during the run, from the host log's lines
/// after `from` bytes: (event, result JSON, passed on to the command hook).
pub fn mod_answers(host_log: &Path, from: u64) -> Vec<(String, String, bool)> {
    host_log_since(host_log, from)
        .lines()
        .filter(|l| l.contains("mod answer"))
        .filter_map(|l| {
            let field = |name: &str| {
                let (_, rest) = l.split_once(&format!(" {name}="))?;
                Some(rest.to_owned())
            };
            let event = field("event")?.split(' ').next()?.to_owned();
            let pass = field("pass")?.starts_with("true");
            let result = field("result")?;
            Some((event, result, pass))
        })
        .collect()
}

/// What the host logged from byte `from` of its log on (the log is shared by every case of a
/// run; a case reads its own stretch). Empty when there is no log.
pub fn host_log_since(host_log: &Path, from: u64) -> String {
    let text = std::fs::read(host_log).unwrap_or_default();
    let start = usize::try_from(from).unwrap_or(0).min(text.len());
    String::from_utf8_lossy(&text[start..]).into_owned()
}

/// The time Claude Code's debug log gives each run of our (or the no-op's) PreToolUse: a
/// command hook's `… PreToolUse:<tool> [<command>] (plugin <p>) finished with status N (Xms)`,
/// a hooks module's `hooks module <p> classic.PreToolUse settled in Xms`. Milliseconds.
pub fn pre_tool_use_ms(debug: &str, path: Route) -> Vec<f64> {
    debug
        .lines()
        .filter_map(|l| match path {
            Route::Mod | Route::NoopMod => {
                let label = if path == Route::Mod {
                    "hooks module captain-hook"
                } else {
                    "hooks module e2e-noop-mod"
                };
                let rest = l.split_once(label)?.1;
                let ms = rest.split_once("classic.PreToolUse settled in ")?.1;
                ms.split("ms").next()?.trim().parse().ok()
            }
            Route::Command | Route::Noop => {
                let rest = l.split_once("Hooks: PreToolUse:")?.1;
                let (_, tail) = rest.split_once(" finished with status ")?;
                let ms = tail.split_once('(')?.1.split("ms)").next()?;
                ms.trim().parse().ok()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_are_read_per_path() {
        let debug = "2026-12-05T09:35:26.702Z [DEBUG] Hooks: PreToolUse:Bash [/p/bin/hook run PreToolUse] (plugin captain-hook@inline) finished with status 0 (16ms)\n\
                     2026-12-05T09:35:26.738Z [DEBUG] hooks module captain-hook@inline classic.PreToolUse settled in 0.9ms (native link, next() included)\n\
                     2026-12-05T09:35:26.738Z [DEBUG] hooks module captain-hook@inline classic.Stop settled in 3ms (native link)\n";
        assert_eq!(pre_tool_use_ms(debug, Route::Command), [16.0]);
        assert_eq!(pre_tool_use_ms(debug, Route::Mod), [0.9]);
        let hop = "2026-12-05T17:44:59.419Z [DEBUG] hooks module e2e-noop-mod@inline classic.PreToolUse settled in 5.2ms (worker hop, next() included)\n";
        assert_eq!(pre_tool_use_ms(hop, Route::NoopMod), [5.2]);
        assert!(pre_tool_use_ms(hop, Route::Mod).is_empty());
    }

    #[test]
    fn mod_answers_are_read_from_the_host_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("capt-hookd.log");
        std::fs::write(
            &log,
            "old mod answer event=Stop pass=false result={}\n\
             2026 DEBUG capt_hookd::server::http: mod answer event=Stop pass=false result={\"block\":\"E2E-X\"}\n\
             2026 DEBUG capt_hookd::server::http: mod answer event=PreToolUse pass=true result={}\n",
        )
        .unwrap();
        let from = "old mod answer event=Stop pass=false result={}\n".len() as u64;
        let answers = mod_answers(&log, from);
        assert_eq!(
            answers,
            [
                ("Stop".to_owned(), "{\"block\":\"E2E-X\"}".to_owned(), false),
                ("PreToolUse".to_owned(), "{}".to_owned(), true)
            ]
        );
    }
}

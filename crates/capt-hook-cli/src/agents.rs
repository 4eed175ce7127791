//! `capt-hook install --agent <agent>` and `uninstall --agent <agent>`: another coding agent's
//! hook configuration file read, changed by capt-hook-agents' installer, and written back whole
//! (through a temporary file, so the agent never reads half of it). A file that is not JSON of
//! the expected shape is left untouched and named in the error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use capt_hook_agents::Agent;
use capt_hook_agents::install::{self, Scope};
use serde_json::Value;

/// The `hook` client beside this program, else `hook` on the PATH.
fn default_hook() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("hook")))
        .filter(|p| p.is_file())
        .map_or_else(|| "hook".to_owned(), |p| p.display().to_string())
}

fn agent_of(name: &str) -> anyhow::Result<Agent> {
    Ok(name.parse::<Agent>()?)
}

/// The environment the user's files are found by (`HOME`, `CODEX_HOME`, …): the process's
/// own, or a test's.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

fn path_for(agent: Agent, user: bool, root: &Path, env: Env) -> anyhow::Result<PathBuf> {
    let home = PathBuf::from(env("HOME").unwrap_or_default());
    let scope = if user { Scope::User } else { Scope::Project };
    Ok(install::config_path(agent, scope, &home, root, env)?)
}

/// The file's JSON; `None` when there is no file.
fn read(path: &Path) -> anyhow::Result<Option<Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(&text).map(Some).with_context(|| {
        format!(
            "{} is not JSON capt-hook can edit (left as it is)",
            path.display()
        )
    })
}

fn write(path: &Path, value: &Value) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    write_text(path, text)
}

fn write_text(path: &Path, text: String) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.capt-hook.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("hooks")
    ));
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

/// The user's Codex `config.toml`, where Codex keeps which hooks the user trusts (its own
/// `CODEX_HOME`, else `~/.codex`), whichever scope the hooks were installed in.
fn codex_config(root: &Path, env: Env) -> anyhow::Result<PathBuf> {
    let user_hooks = path_for(Agent::Codex, true, root, env)?;
    Ok(user_hooks.with_file_name("config.toml"))
}

/// Codex names a hooks file by its absolute path under Codex's working directory as Codex got
/// it: with links resolved when started in the project (the working directory the system
/// reports), but as written when given the directory (`codex -C <link>`; observed with Codex
/// 0.169 in cargo xtask e2e-agents, trust-via-link). The resolved name first.
fn codex_sources(hooks: &Path) -> Vec<PathBuf> {
    let given = std::path::absolute(hooks).unwrap_or_else(|_| hooks.to_path_buf());
    let resolved = match (
        hooks.parent().and_then(|d| d.canonicalize().ok()),
        hooks.file_name(),
    ) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => given.clone(),
    };
    if resolved == given {
        vec![resolved]
    } else {
        vec![resolved, given]
    }
}

/// The trust Codex needs for our hooks in `hooks` (the file at `path`) under each name Codex
/// may give that file.
fn codex_trust(path: &Path, hooks: &Value) -> Vec<capt_hook_agents::codex::Trust> {
    codex_sources(path)
        .iter()
        .flat_map(|source| capt_hook_agents::codex::trust_entries(source, hooks))
        .collect()
}

/// Takes back Codex's trust in our hooks as `before` held them and gives it to them as `after`
/// holds them (hooks file at `hooks`), in the user's `config.toml`, as a review in Codex would;
/// the rest of that file stays as written. Returns the file when it changed.
fn codex_retrust(
    root: &Path,
    hooks: &Path,
    before: Option<&Value>,
    after: Option<&Value>,
    env: Env,
) -> anyhow::Result<Option<PathBuf>> {
    use capt_hook_agents::codex::retrust;
    let old = before.map(|v| codex_trust(hooks, v)).unwrap_or_default();
    let new = after.map(|v| codex_trust(hooks, v)).unwrap_or_default();
    let config = codex_config(root, env)?;
    let text = match std::fs::read_to_string(&config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", config.display())),
    };
    let next = retrust(&text, &old, &new).map_err(|e| edit_error(&config, e))?;
    if next == text {
        return Ok(None);
    }
    write_text(&config, next)?;
    Ok(Some(config))
}

fn edit_error(path: &Path, e: capt_hook_agents::AgentError) -> anyhow::Error {
    anyhow::anyhow!("{}: {e} (left as it is)", path.display())
}

/// `capt-hook install --agent <agent> [--user] [--hook PATH]`.
pub fn install(
    root: &Path,
    agent: &str,
    user: bool,
    hook: Option<&Path>,
    env: Env,
) -> anyhow::Result<ExitCode> {
    let agent = agent_of(agent)?;
    if agent.table().install.is_none() {
        bail!(capt_hook_agents::AgentError::NotInstallable(agent));
    }
    let path = path_for(agent, user, root, env)?;
    let hook = hook.map_or_else(default_hook, |h| h.display().to_string());
    let existing = read(&path)?;
    let next =
        install::install(agent, existing.as_ref(), &hook).map_err(|e| edit_error(&path, e))?;
    let unchanged = existing.as_ref() == Some(&next);
    if unchanged {
        println!(
            "{}: capt-hook's hooks are already in {}",
            agent.table().title,
            path.display()
        );
    } else {
        write(&path, &next)?;
        println!(
            "{}: every event now runs `{}` ({})",
            agent.table().title,
            install::command(&hook, agent, "<Event>"),
            path.display()
        );
    }
    if agent == Agent::Codex {
        // Codex runs an unmanaged hook only once the user trusts its hash; installing is the
        // user's say-so, so the installer records it as a review in Codex would.
        if let Some(config) = codex_retrust(root, &path, existing.as_ref(), Some(&next), env)? {
            println!(
                "Codex trusts these hooks now (their hashes are in {}); `codex` lists them \
                 under /hooks.",
                config.display()
            );
        }
        if !user && !unchanged {
            // Observed with Codex 0.169 (cargo xtask e2e-agents): an untrusted project's
            // `.codex/` is ignored whole, with one warning on stderr.
            println!(
                "Codex reads a project's .codex/hooks.json only in a trusted project: trust {} \
                 in Codex (`codex --trust`, or `[projects.\"{}\"] trust_level = \"trusted\"` in \
                 its config.toml), or install with --user.",
                root.display(),
                root.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `capt-hook uninstall --agent <agent> [--user]`.
pub fn uninstall(root: &Path, agent: &str, user: bool, env: Env) -> anyhow::Result<ExitCode> {
    let agent = agent_of(agent)?;
    if agent.table().install.is_none() {
        bail!(capt_hook_agents::AgentError::NotInstallable(agent));
    }
    let path = path_for(agent, user, root, env)?;
    let Some(existing) = read(&path)? else {
        println!(
            "{}: nothing to remove ({} does not exist)",
            agent.table().title,
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    let next = install::uninstall(agent, &existing).map_err(|e| edit_error(&path, e))?;
    if agent == Agent::Codex
        && let Some(config) = codex_retrust(root, &path, Some(&existing), None, env)?
    {
        println!("Codex's trust in them is taken back ({})", config.display());
    }
    if next == existing {
        println!(
            "{}: no capt-hook hooks in {}",
            agent.table().title,
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let no_hooks = next
        .get("hooks")
        .and_then(Value::as_object)
        .is_none_or(|h| h.is_empty());
    // A file holding nothing but an empty hook list (as install creates one) goes too.
    let nothing_else = next
        .as_object()
        .is_some_and(|o| o.keys().all(|k| k == "hooks" || k == "version"));
    if no_hooks && (install::owns_file(agent) || nothing_else) {
        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    } else {
        write(&path, &next)?;
    }
    println!(
        "{}: capt-hook's hooks removed from {}",
        agent.table().title,
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `capt-hook doctor`'s lines for other agents: for each agent whose directory is on this
/// machine (or whose project file exists), whether our hooks are installed and current.
/// Not installing is a choice, so only hooks that are installed but stale need action.
pub fn doctor(root: &Path, home: &Path) -> Vec<capt_hook_client::doctor::Finding> {
    use capt_hook_client::doctor::Finding;
    let hook = default_hook();
    let mut out = Vec::new();
    for agent in Agent::ALL {
        let Some(plan) = agent.table().install else {
            continue;
        };
        let title = agent.table().title;
        let user_dir = Path::new(plan.user)
            .components()
            .next()
            .map(|c| home.join(c));
        let mut seen = false;
        for scope in [Scope::Project, Scope::User] {
            let Ok(path) =
                install::config_path(agent, scope, home, root, |v| std::env::var(v).ok())
            else {
                continue;
            };
            let text = match read(&path) {
                Ok(None) => continue,
                Ok(Some(v)) => v,
                Err(e) => {
                    out.push(Finding {
                        ok: false,
                        message: format!("{title}: {e:#}"),
                    });
                    seen = true;
                    continue;
                }
            };
            seen = true;
            let state = install::state(agent, &text, &hook);
            let current = matches!(state, Ok(install::State::Current));
            let (ok, message) = match state {
                Ok(install::State::Current) => (
                    true,
                    format!(
                        "{title}: capt-hook's hooks are current in {}",
                        path.display()
                    ),
                ),
                Ok(install::State::Absent) => (
                    true,
                    format!("{title}: no capt-hook hooks in {}", path.display()),
                ),
                Ok(install::State::Stale(why)) => (
                    false,
                    format!(
                        "{title}: capt-hook's hooks in {} are stale ({why}); run `capt-hook \
                         install --agent {}{}`",
                        path.display(),
                        agent.name(),
                        if scope == Scope::User { " --user" } else { "" }
                    ),
                ),
                Err(e) => (false, format!("{title}: {}: {e}", path.display())),
            };
            out.push(Finding { ok, message });
            if agent == Agent::Codex && current {
                out.push(codex_hook_trust(&path, &text, home));
                if scope == Scope::Project {
                    out.push(codex_project_trust(root, home));
                }
            }
        }
        if !seen && user_dir.is_some_and(|d| d.is_dir()) {
            out.push(Finding {
                ok: true,
                message: format!(
                    "{title}: found, capt-hook not installed (`capt-hook install --agent {}`)",
                    agent.name()
                ),
            });
        }
    }
    out
}

/// The user's Codex `config.toml` for doctor, which is given the home directory.
fn codex_config_in(home: &Path) -> PathBuf {
    std::env::var_os("CODEX_HOME")
        .filter(|d| !d.is_empty())
        .map_or_else(|| home.join(".codex"), PathBuf::from)
        .join("config.toml")
}

/// Whether Codex trusts each of our hooks in `hooks` (the file at `path`) by the hash it
/// keeps: an untrusted hook is skipped without a word.
fn codex_hook_trust(path: &Path, hooks: &Value, home: &Path) -> capt_hook_client::doctor::Finding {
    use capt_hook_client::doctor::Finding;
    // Under the resolved name: how Codex names the file when started in the project.
    let wanted = codex_sources(path)
        .first()
        .map(|source| capt_hook_agents::codex::trust_entries(source, hooks))
        .unwrap_or_default();
    let config = codex_config_in(home);
    let text = match std::fs::read_to_string(&config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Finding {
                ok: false,
                message: format!("OpenAI Codex CLI: reading {}: {e}", config.display()),
            };
        }
    };
    match capt_hook_agents::codex::untrusted(&text, &wanted) {
        Ok(missing) if missing.is_empty() => Finding {
            ok: true,
            message: format!(
                "OpenAI Codex CLI: Codex trusts capt-hook's {} hooks by hash ({})",
                wanted.len(),
                config.display()
            ),
        },
        Ok(missing) => Finding {
            ok: false,
            message: format!(
                "OpenAI Codex CLI: {} of capt-hook's {} hooks have no matching trust hash in {}, \
                 so Codex skips them without a word: run `capt-hook install --agent codex` \
                 again, or review them in Codex (/hooks)",
                missing.len(),
                wanted.len(),
                config.display()
            ),
        },
        Err(e) => Finding {
            ok: false,
            message: format!("OpenAI Codex CLI: {}: {e}", config.display()),
        },
    }
}

/// Whether Codex trusts the project, without which it ignores the project's `.codex/hooks.json`
/// (and so our hooks there) with one warning.
fn codex_project_trust(root: &Path, home: &Path) -> capt_hook_client::doctor::Finding {
    use capt_hook_client::doctor::Finding;
    let config = codex_config_in(home);
    let text = match std::fs::read_to_string(&config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Finding {
                ok: false,
                message: format!("OpenAI Codex CLI: reading {}: {e}", config.display()),
            };
        }
    };
    match capt_hook_agents::codex::trusts_project(&text, root) {
        Ok(true) => Finding {
            ok: true,
            message: format!(
                "OpenAI Codex CLI: {} is a trusted project, so its .codex/hooks.json is read",
                root.display()
            ),
        },
        Ok(false) => Finding {
            ok: false,
            message: format!(
                "OpenAI Codex CLI: {} is not a trusted project in {}, so Codex ignores its \
                 .codex/hooks.json: trust it (`codex --trust` there) or install with --user",
                root.display(),
                config.display()
            ),
        },
        Err(e) => Finding {
            ok: false,
            message: format!("OpenAI Codex CLI: {}: {e}", config.display()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An environment whose only variable is `HOME`: a test never touches the user's files.
    fn home_env(home: &Path) -> impl Fn(&str) -> Option<String> + use<> {
        let home = home.display().to_string();
        move |v: &str| (v == "HOME").then(|| home.clone())
    }

    #[test]
    fn install_twice_then_uninstall_leaves_the_users_hooks() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let env = home_env(&root.join("home"));
        let file = root.join(".codex/hooks.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let theirs = serde_json::json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./audit.sh"}]}
        ]}});
        std::fs::write(&file, theirs.to_string()).unwrap();
        let hook = Path::new("/opt/bin/hook");
        install(root, "codex", false, Some(hook), &env).unwrap();
        let once = std::fs::read_to_string(&file).unwrap();
        assert!(
            once.contains("/opt/bin/hook run --agent codex PreToolUse"),
            "{once}"
        );
        install(root, "codex", false, Some(hook), &env).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), once, "idempotent");
        // Codex's trust in our hooks (and not in theirs) is in the user's config.toml.
        let config = root.join("home/.codex/config.toml");
        let trust = std::fs::read_to_string(&config).unwrap();
        assert_eq!(trust.matches("trusted_hash").count(), 10, "{trust}");
        assert!(!trust.contains(":pre_tool_use:0:0"), "{trust}");
        assert!(trust.contains(":pre_tool_use:1:0"), "{trust}");
        uninstall(root, "codex", false, &env).unwrap();
        let after: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(after, theirs);
        let trust = std::fs::read_to_string(&config).unwrap();
        assert!(!trust.contains("trusted_hash"), "{trust}");

        // A file install created goes when its hooks go.
        let cursor = root.join(".cursor/hooks.json");
        install(root, "cursor", false, Some(hook), &env).unwrap();
        uninstall(root, "cursor", false, &env).unwrap();
        assert!(!cursor.exists());
    }

    /// A project reached through a link: Codex names its hooks file by the link when given
    /// the link (`codex -C`), by the resolved path when started inside, so both are trusted,
    /// and both taken back by uninstall.
    #[test]
    fn a_linked_project_is_trusted_under_both_names() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        let link = tmp.path().join("link");
        std::fs::create_dir_all(&real).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let env = home_env(&tmp.path().join("home"));
        install(
            &link,
            "codex",
            false,
            Some(Path::new("/opt/bin/hook")),
            &env,
        )
        .unwrap();
        let config = tmp.path().join("home/.codex/config.toml");
        let trust = std::fs::read_to_string(&config).unwrap();
        let real_key = format!(
            "\"{}:pre_tool_use:0:0\"",
            real.canonicalize()
                .unwrap()
                .join(".codex/hooks.json")
                .display()
        );
        let link_key = format!(
            "\"{}:pre_tool_use:0:0\"",
            link.join(".codex/hooks.json").display()
        );
        assert!(trust.contains(&real_key), "{trust}");
        assert!(trust.contains(&link_key), "{trust}");
        assert_eq!(trust.matches("trusted_hash").count(), 20, "{trust}");
        uninstall(&link, "codex", false, &env).unwrap();
        let trust = std::fs::read_to_string(&config).unwrap();
        assert!(!trust.contains("trusted_hash"), "{trust}");
    }

    #[test]
    fn copilot_gets_a_file_of_its_own_and_unreadable_files_are_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let env = home_env(&root.join("home"));
        install(root, "copilot", false, Some(Path::new("hook")), &env).unwrap();
        let file = root.join(".github/hooks/capt-hook.json");
        assert!(file.is_file());
        uninstall(root, "copilot", false, &env).unwrap();
        assert!(!file.exists(), "our own file goes with our hooks");

        let settings = root.join(".gemini/settings.json");
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        std::fs::write(&settings, "{ // a comment\n}").unwrap();
        let e = install(root, "gemini", false, None, &env).unwrap_err();
        assert!(
            format!("{e:#}").contains("settings.json is not JSON"),
            "{e:#}"
        );
        assert_eq!(
            std::fs::read_to_string(&settings).unwrap(),
            "{ // a comment\n}"
        );
        assert!(install(root, "claude", false, None, &env).is_err());

        // doctor: a home with Cursor's directory and a stale Codex project file.
        let home = root.join("home");
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        install(root, "codex", false, Some(Path::new("/gone/hook")), &env).unwrap();
        let findings = doctor(root, &home);
        let text: Vec<String> = findings
            .iter()
            .map(|f| format!("{} {}", f.ok, f.message))
            .collect();
        assert!(
            text.iter()
                .any(|t| t.starts_with("false OpenAI Codex CLI") && t.contains("stale")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.starts_with("true Cursor: found, capt-hook not installed")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.starts_with("false Google Gemini CLI") && t.contains("not JSON")),
            "{text:?}"
        );
        assert!(install(root, "aider", false, None, &env).is_err());
    }

    /// A current project install is only half the story in Codex: doctor says whether Codex
    /// trusts the project, without which the file is never read.
    #[test]
    fn doctor_says_whether_codex_trusts_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("shop");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(home.join(".codex")).unwrap();
        let env = home_env(&home);
        install(&root, "codex", false, None, &env).unwrap();
        // Install trusted our hooks by hash, in the user's config.toml.
        let hashes = |home: &Path| -> Vec<String> {
            doctor(&root, home)
                .iter()
                .filter(|f| f.message.contains("trust hash") || f.message.contains("by hash"))
                .map(|f| format!("{} {}", f.ok, f.message))
                .collect()
        };
        let trusted = hashes(&home);
        assert!(
            trusted.len() == 1
                && trusted[0].starts_with("true ")
                && trusted[0].contains("hooks by hash"),
            "{trusted:?}"
        );
        let codex_lines = |home: &Path| -> Vec<String> {
            doctor(&root, home)
                .iter()
                .filter(|f| f.message.contains("trusted project"))
                .map(|f| format!("{} {}", f.ok, f.message))
                .collect()
        };
        let untrusted = codex_lines(&home);
        assert!(
            untrusted.len() == 1
                && untrusted[0].starts_with("false ")
                && untrusted[0].contains("codex --trust"),
            "{untrusted:?}"
        );
        std::fs::write(
            home.join(".codex/config.toml"),
            format!(
                "[projects.{:?}]\ntrust_level = \"trusted\"\n",
                root.display().to_string()
            ),
        )
        .unwrap();
        let trusted = codex_lines(&home);
        assert!(
            trusted.len() == 1 && trusted[0].starts_with("true "),
            "{trusted:?}"
        );
        // That file no longer holds our hashes: Codex would skip our hooks without a word.
        let untrusted = hashes(&home);
        assert!(
            untrusted.len() == 1
                && untrusted[0].starts_with("false ")
                && untrusted[0].contains("no matching trust hash"),
            "{untrusted:?}"
        );
    }
}

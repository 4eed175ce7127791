//! Which Claude Code plugins are enabled for a project, and where each is installed.
//!
//! `enabledPlugins` is read from the user, project, local and managed settings files; a later
//! file in that order overrides an earlier one for the same plugin. The local file of a git
//! worktree is the main checkout's; the user file and the roster live in Claude Code's
//! configuration directory (`$CLAUDE_CONFIG_DIR`, else `~/.claude`). Installs come from
//! `<config dir>/plugins/installed_plugins.json`:
//! a project- or local-scope install counts only for its own project, and one whose directory is
//! gone is skipped. Among a plugin's installs, local wins over project over user.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// An enabled plugin with an install on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plugin {
    /// `<name>@<marketplace>`.
    pub id: String,
    /// The plugin's root directory.
    pub root: PathBuf,
    /// The settings file whose `enabledPlugins` turned it on.
    pub enabled_by: PathBuf,
}

/// What discovery found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Enabled plugins with an install, by id.
    pub plugins: Vec<Plugin>,
    /// Enabled plugins that could not be used, with why.
    pub skipped: Vec<(String, String)>,
    /// Files that could not be read as they should: said once per session, never fatal.
    pub notices: Vec<String>,
    /// Every file read, so a change reloads the project.
    pub watched: Vec<PathBuf>,
}

/// The settings files, lowest precedence first.
fn settings_files(root: &Path, claude_dir: &Path) -> Vec<PathBuf> {
    let managed = if cfg!(target_os = "macos") {
        PathBuf::from("/Library/Application Support/ClaudeCode/managed-settings.json")
    } else {
        PathBuf::from("/etc/claude-code/managed-settings.json")
    };
    vec![
        claude_dir.join("settings.json"),
        root.join(".claude").join("settings.json"),
        main_checkout(root)
            .join(".claude")
            .join("settings.local.json"),
        managed,
    ]
}

/// The main checkout of the git worktree at `root` (`root` itself when it is not a linked
/// worktree): a linked worktree's `.git` file points into `<main>/.git/worktrees/<name>`.
fn main_checkout(root: &Path) -> PathBuf {
    let Ok(text) = std::fs::read_to_string(root.join(".git")) else {
        return root.to_path_buf();
    };
    text.lines()
        .find_map(|l| l.strip_prefix("gitdir:"))
        .map(|d| root.join(d.trim()))
        .and_then(|gitdir| {
            let parts: Vec<_> = gitdir.components().collect();
            let at = parts.iter().rposition(|c| c.as_os_str() == "worktrees")?;
            let dot_git: PathBuf = parts[..at].iter().collect();
            (dot_git.file_name()? == ".git").then(|| dot_git.parent().map(Path::to_path_buf))?
        })
        .unwrap_or_else(|| root.to_path_buf())
}

/// The enabled plugins for the project at `root`, found through the files in `claude_dir`
/// (Claude Code's configuration directory) and the project's settings.
pub fn discover(root: &Path, claude_dir: &Path) -> Discovery {
    let mut out = Discovery::default();
    let mut enabled: BTreeMap<String, (bool, PathBuf)> = BTreeMap::new();
    for file in settings_files(root, claude_dir) {
        out.watched.push(file.clone());
        let Some(v) = read_json(&file, &mut out.notices) else {
            continue;
        };
        match v.get("enabledPlugins") {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                for (id, on) in map {
                    enabled.insert(id.clone(), (on.as_bool() == Some(true), file.clone()));
                }
            }
            Some(_) => out.notices.push(format!(
                "{}: enabledPlugins is not an object; its plugins' packs are not loaded",
                file.display()
            )),
        }
    }
    if !enabled.values().any(|(on, _)| *on) {
        return out;
    }
    let roster = claude_dir.join("plugins").join("installed_plugins.json");
    out.watched.push(roster.clone());
    let installs = match read_json(&roster, &mut out.notices).map(|v| installs_of(&v)) {
        Some(Ok(i)) => i,
        Some(Err(why)) => {
            out.notices.push(format!(
                "{}: {why}; no plugin packs are loaded",
                roster.display()
            ));
            return out;
        }
        None => BTreeMap::new(),
    };
    let here = realpath(root);
    for (id, (on, file)) in enabled {
        if !on {
            continue;
        }
        let mut candidates: Vec<&Install> = installs
            .get(&id)
            .into_iter()
            .flatten()
            .filter(|i| {
                i.project
                    .as_ref()
                    .is_none_or(|p| realpath(Path::new(p)) == here)
            })
            .collect();
        candidates.sort_by_key(|i| match i.scope.as_str() {
            "local" => 0,
            "project" => 1,
            "user" => 2,
            _ => 3,
        });
        match candidates.first() {
            None => out.skipped.push((
                id,
                format!(
                    "enabled in {} but not installed for this project",
                    file.display()
                ),
            )),
            Some(i) if !i.path.is_dir() => out.skipped.push((
                id,
                format!("its install path {} no longer exists", i.path.display()),
            )),
            Some(i) => out.plugins.push(Plugin {
                id,
                root: i.path.clone(),
                enabled_by: file,
            }),
        }
    }
    out
}

/// One install record.
#[derive(Debug)]
struct Install {
    path: PathBuf,
    scope: String,
    project: Option<String>,
}

/// The installs by plugin id, from either roster version: v2 keeps a list of installs per id
/// under `plugins`, v1 one object per id.
/// Why Claude Code's plugin roster cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum RosterError {
    #[error("`plugins` is not an object")]
    PluginsNotObject,
    #[error("the roster is not a JSON object")]
    NotObject,
    #[error("the entry for {0} is neither a list nor an object")]
    BadEntry(String),
    #[error("an install of {0} has no installPath")]
    NoInstallPath(String),
}

fn installs_of(v: &Value) -> Result<BTreeMap<String, Vec<Install>>, RosterError> {
    let plugins = match v {
        Value::Object(top) => match top.get("plugins") {
            Some(Value::Object(p)) => p,
            Some(_) => return Err(RosterError::PluginsNotObject),
            None => top,
        },
        _ => return Err(RosterError::NotObject),
    };
    let mut out = BTreeMap::new();
    for (id, entry) in plugins {
        let records: Vec<&Value> = match entry {
            Value::Array(list) => list.iter().collect(),
            Value::Object(_) => vec![entry],
            _ => return Err(RosterError::BadEntry(id.clone())),
        };
        let mut list = Vec::new();
        for r in records {
            let Some(path) = r.get("installPath").and_then(Value::as_str) else {
                return Err(RosterError::NoInstallPath(id.clone()));
            };
            list.push(Install {
                path: PathBuf::from(path),
                scope: r
                    .get("scope")
                    .and_then(Value::as_str)
                    .unwrap_or("user")
                    .to_owned(),
                project: r
                    .get("projectPath")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
        out.insert(id.clone(), list);
    }
    Ok(out)
}

/// A JSON file's value; `None` when it is missing (silently) or unreadable (with a notice).
fn read_json(file: &Path, notices: &mut Vec<String>) -> Option<Value> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            notices.push(format!("cannot read {}: {e}", file.display()));
            return None;
        }
    };
    match serde_json::from_str(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            notices.push(format!(
                "{} is not valid JSON ({e}); the plugins it enables are not loaded",
                file.display()
            ));
            None
        }
    }
}

fn realpath(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn later_settings_win_other_projects_installs_and_missing_paths_are_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let (home, root, other) = (
            tmp.path().join("home"),
            tmp.path().join("proj"),
            tmp.path().join("other"),
        );
        for d in [&home, &root, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        let a = tmp.path().join("cache/a");
        let b_mine = tmp.path().join("cache/b-local");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b_mine).unwrap();
        write(
            &home.join(".claude/settings.json"),
            r#"{"enabledPlugins": {"a@m": true, "b@m": true, "c@m": true, "off@m": true}}"#,
        );
        write(
            &root.join(".claude/settings.json"),
            r#"{"enabledPlugins": {"off@m": false}}"#,
        );
        let roster = serde_json::json!({"version": 2, "plugins": {
            "a@m": [{"scope": "user", "installPath": a}],
            "b@m": [
                {"scope": "user", "installPath": tmp.path().join("gone")},
                {"scope": "local", "installPath": b_mine, "projectPath": root},
                {"scope": "project", "installPath": a, "projectPath": other},
            ],
            "c@m": [{"scope": "user", "installPath": tmp.path().join("gone")}],
            "off@m": [{"scope": "user", "installPath": a}],
        }});
        write(
            &home.join(".claude/plugins/installed_plugins.json"),
            &roster.to_string(),
        );
        let found = discover(&root, &home.join(".claude"));
        let ids: Vec<(&str, &Path)> = found
            .plugins
            .iter()
            .map(|p| (p.id.as_str(), p.root.as_path()))
            .collect();
        assert_eq!(ids, vec![("a@m", a.as_path()), ("b@m", b_mine.as_path())]);
        assert_eq!(found.skipped.len(), 1, "{:?}", found.skipped);
        assert!(found.skipped[0].1.contains("no longer exists"));
        assert!(found.notices.is_empty(), "{:?}", found.notices);
    }

    #[test]
    fn a_corrupt_roster_loads_no_plugins_and_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path();
        write(
            &home.join(".claude/settings.json"),
            r#"{"enabledPlugins": {"a@m": true}}"#,
        );
        write(&home.join(".claude/plugins/installed_plugins.json"), "[1]");
        let found = discover(tmp.path(), &home.join(".claude"));
        assert!(found.plugins.is_empty());
        assert!(
            found.notices[0].contains("not a JSON object"),
            "{:?}",
            found.notices
        );
    }

    #[test]
    fn a_linked_worktree_reads_the_main_checkouts_local_settings() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("main");
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        write(
            &wt.join(".git"),
            &format!("gitdir: {}\n", main.join(".git/worktrees/wt").display()),
        );
        assert_eq!(main_checkout(&wt), main);
        assert_eq!(main_checkout(&main), main);
    }
}

//! The hook configuration `capt-hook install --agent` writes: every event of the agent's table
//! pointed at our client (`hook run --agent <agent> <Event>`), the user's other hooks and
//! settings kept as they were, and the same file whether it runs once or twice. The caller
//! reads and writes the file; this only turns one JSON value into the next.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::agent::{Agent, AgentError};
use crate::normalise::quote;
use crate::table::{ConfigFormat, Install};

/// Which configuration file: every project of the user, or one project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's own file (under the home directory, or the agent's home variable).
    User,
    /// The project's file, under its root.
    Project,
}

fn plan(agent: Agent) -> Result<Install, AgentError> {
    agent
        .table()
        .install
        .ok_or(AgentError::NotInstallable(agent))
}

/// The file `agent`'s hooks are written to.
pub fn config_path(
    agent: Agent,
    scope: Scope,
    home: &Path,
    root: &Path,
    env: impl Fn(&str) -> Option<String>,
) -> Result<PathBuf, AgentError> {
    let p = plan(agent)?;
    Ok(match scope {
        Scope::Project => root.join(p.project),
        Scope::User => match p
            .user_env
            .and_then(|(var, file)| env(var).filter(|d| !d.is_empty()).map(|d| (d, file)))
        {
            Some((dir, file)) => Path::new(&dir).join(file),
            None => home.join(p.user),
        },
    })
}

/// The command line the agent runs for `event`.
pub fn command(hook: &str, agent: Agent, event: &str) -> String {
    format!("{} run --agent {} {event}", quote(hook), agent.name())
}

/// True for a command line [`command`] wrote for `agent` (whatever the client's path was then).
pub fn is_ours(agent: Agent, line: &str) -> bool {
    let marker = format!(" run --agent {} ", agent.name());
    let Some(at) = line.find(&marker) else {
        return false;
    };
    let program = line[..at].trim().trim_matches('\'');
    Path::new(program).file_name().is_some_and(|n| n == "hook")
}

fn bad(path: &str, problem: &str) -> AgentError {
    AgentError::Config {
        path: path.to_owned(),
        problem: problem.to_owned(),
    }
}

/// `existing` (the file's JSON, `None` when there is none) with our hooks for `agent` in place
/// of any earlier ones. `hook` is the client's path.
pub fn install(agent: Agent, existing: Option<&Value>, hook: &str) -> Result<Value, AgentError> {
    let p = plan(agent)?;
    let mut config = match existing {
        Some(v) => uninstall(agent, v)?,
        None => Value::Object(Map::new()),
    };
    let Value::Object(top) = &mut config else {
        return Err(bad("(top level)", "must be a JSON object"));
    };
    if !matches!(p.format, ConfigFormat::Groups { .. }) {
        top.entry("version").or_insert(json!(1));
    }
    let hooks = top
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err(bad("hooks", "must be an object"));
    };
    for row in agent.table().events.iter().filter(|e| e.ours.is_some()) {
        let line = command(hook, agent, row.name);
        let entry = match p.format {
            ConfigFormat::Groups { timeout } => json!({"hooks": [
                {"type": "command", "command": line, "timeout": timeout}
            ]}),
            ConfigFormat::Flat => json!({"command": line}),
            ConfigFormat::OwnFile { timeout_sec } => json!({
                "type": "command", "bash": line, "timeoutSec": timeout_sec
            }),
        };
        let list = hooks
            .entry(row.name)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = list else {
            return Err(bad(&format!("hooks.{}", row.name), "must be an array"));
        };
        list.push(entry);
    }
    Ok(config)
}

/// `existing` without our hooks for `agent`: every other hook, group and setting is kept; a
/// group or event list left empty by the removal goes with it.
pub fn uninstall(agent: Agent, existing: &Value) -> Result<Value, AgentError> {
    let mut config = existing.clone();
    let Value::Object(top) = &mut config else {
        return Err(bad("(top level)", "must be a JSON object"));
    };
    let Some(hooks) = top.get_mut("hooks") else {
        return Ok(config);
    };
    let Value::Object(hooks) = hooks else {
        return Err(bad("hooks", "must be an object"));
    };
    let ours = |h: &Value| {
        ["command", "bash"]
            .iter()
            .filter_map(|k| h.get(*k).and_then(Value::as_str))
            .any(|c| is_ours(agent, c))
    };
    let mut emptied = Vec::new();
    for (event, list) in hooks.iter_mut() {
        let Value::Array(list) = list else {
            return Err(bad(&format!("hooks.{event}"), "must be an array"));
        };
        let before = list.len();
        let mut kept = Vec::with_capacity(before);
        for entry in list.drain(..) {
            match entry.get("hooks").and_then(Value::as_array) {
                // A group: drop our handlers, and the group when nothing else is left in it.
                Some(inner) => {
                    let rest: Vec<Value> = inner.iter().filter(|h| !ours(h)).cloned().collect();
                    if rest.len() == inner.len() {
                        kept.push(entry);
                    } else if !rest.is_empty() {
                        let mut group = entry.clone();
                        group["hooks"] = Value::Array(rest);
                        kept.push(group);
                    }
                }
                None if ours(&entry) => {}
                None => kept.push(entry),
            }
        }
        if kept.is_empty() && before > 0 {
            emptied.push(event.clone());
        }
        *list = kept;
    }
    for event in emptied {
        hooks.remove(&event);
    }
    Ok(config)
}

/// What an agent's configuration holds of ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// None of our hooks.
    Absent,
    /// Every event, pointed at this client: what [`install`] would write.
    Current,
    /// Some of ours, but not what [`install`] would write now; says what differs.
    Stale(String),
}

/// What `existing` holds of our hooks for `agent`, against the client at `hook`.
pub fn state(agent: Agent, existing: &Value, hook: &str) -> Result<State, AgentError> {
    let ours = |h: &Value| {
        ["command", "bash"]
            .iter()
            .filter_map(|k| h.get(*k).and_then(Value::as_str))
            .find(|c| is_ours(agent, c))
            .map(str::to_owned)
    };
    let mut found: Vec<(String, String)> = Vec::new();
    if let Some(hooks) = existing.get("hooks").and_then(Value::as_object) {
        for (event, list) in hooks {
            for entry in list.as_array().into_iter().flatten() {
                let handlers = entry
                    .get("hooks")
                    .and_then(Value::as_array)
                    .map_or_else(|| vec![entry], |h| h.iter().collect());
                found.extend(
                    handlers
                        .into_iter()
                        .filter_map(ours)
                        .map(|c| (event.clone(), c)),
                );
            }
        }
    }
    if found.is_empty() {
        return Ok(State::Absent);
    }
    if install(agent, Some(existing), hook)? == *existing {
        return Ok(State::Current);
    }
    let missing: Vec<&str> = agent
        .table()
        .events
        .iter()
        .filter(|e| e.ours.is_some() && !found.iter().any(|(ev, _)| ev == e.name))
        .map(|e| e.name)
        .collect();
    let elsewhere = found.iter().any(|(ev, c)| *c != command(hook, agent, ev));
    let mut why = Vec::new();
    if !missing.is_empty() {
        why.push(format!("no hook for {}", missing.join(", ")));
    }
    if elsewhere {
        why.push(format!("some run another client than {hook}"));
    }
    if why.is_empty() {
        why.push("the entries differ from what install writes".to_owned());
    }
    Ok(State::Stale(why.join("; ")))
}

/// True when nothing but our own entries made up a file of our own (Copilot's): the installer
/// deletes it rather than leaving an empty one.
pub fn owns_file(agent: Agent) -> bool {
    agent
        .table()
        .install
        .is_some_and(|p| matches!(p.format, ConfigFormat::OwnFile { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn theirs() -> Value {
        json!({
            "model": {"name": "gemini-2.5-pro"},
            "hooks": {
                "BeforeTool": [
                    {"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh"}]}
                ],
                "SessionEnd": [{"hooks": [{"type": "command", "command": "notify-send bye"}]}]
            }
        })
    }

    #[test]
    fn install_is_idempotent_and_uninstall_restores_the_users_file() {
        let hook = "/opt/capt hook/bin/hook";
        let once = install(Agent::Gemini, Some(&theirs()), hook).unwrap();
        let twice = install(Agent::Gemini, Some(&once), hook).unwrap();
        assert_eq!(once, twice);
        assert_eq!(once["model"], theirs()["model"]);
        let before_tool = once["hooks"]["BeforeTool"].as_array().unwrap();
        assert_eq!(before_tool.len(), 2, "theirs kept, ours added: {once}");
        assert_eq!(
            before_tool[1]["hooks"][0]["command"],
            "'/opt/capt hook/bin/hook' run --agent gemini BeforeTool"
        );
        assert_eq!(before_tool[1]["hooks"][0]["timeout"], 40_000);
        assert!(
            once["hooks"].get("BeforeModel").is_none(),
            "not evaluated, not installed"
        );
        assert_eq!(uninstall(Agent::Gemini, &once).unwrap(), theirs());
        // A newer client path replaces the old entries.
        let moved = install(Agent::Gemini, Some(&once), "/usr/bin/hook").unwrap();
        assert_eq!(moved["hooks"]["BeforeTool"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn each_format() {
        let cursor = install(Agent::Cursor, None, "hook").unwrap();
        assert_eq!(cursor["version"], 1);
        assert_eq!(
            cursor["hooks"]["beforeShellExecution"][0],
            json!({"command": "hook run --agent cursor beforeShellExecution"})
        );
        let copilot = install(Agent::Copilot, None, "hook").unwrap();
        assert_eq!(
            copilot["hooks"]["preToolUse"][0]["bash"],
            "hook run --agent copilot preToolUse"
        );
        assert!(owns_file(Agent::Copilot) && !owns_file(Agent::Codex));
        let codex = install(Agent::Codex, None, "hook").unwrap();
        assert!(codex.get("version").is_none());
        assert_eq!(codex["hooks"]["Stop"][0]["hooks"][0]["timeout"], 40);
        assert!(matches!(
            install(Agent::Claude, None, "hook"),
            Err(AgentError::NotInstallable(Agent::Claude))
        ));
    }

    #[test]
    fn a_file_of_another_shape_is_refused_not_overwritten() {
        let e = install(Agent::Codex, Some(&json!({"hooks": []})), "hook").unwrap_err();
        assert_eq!(
            e.to_string(),
            "hook configuration: `hooks` must be an object"
        );
        let e = install(Agent::Codex, Some(&json!({"hooks": {"Stop": {}}})), "hook").unwrap_err();
        assert!(
            e.to_string().contains("`hooks.Stop` must be an array"),
            "{e}"
        );
        assert!(install(Agent::Codex, Some(&json!([1])), "hook").is_err());
    }

    #[test]
    fn states() {
        let hook = "/usr/bin/hook";
        assert_eq!(
            state(Agent::Gemini, &theirs(), hook).unwrap(),
            State::Absent
        );
        let ours = install(Agent::Gemini, Some(&theirs()), hook).unwrap();
        assert_eq!(state(Agent::Gemini, &ours, hook).unwrap(), State::Current);
        let State::Stale(why) = state(Agent::Gemini, &ours, "/opt/new/hook").unwrap() else {
            panic!("a moved client is stale");
        };
        assert!(why.contains("another client than /opt/new/hook"), "{why}");
        let mut partial = ours.clone();
        partial["hooks"]
            .as_object_mut()
            .unwrap()
            .remove("AfterAgent");
        let State::Stale(why) = state(Agent::Gemini, &partial, hook).unwrap() else {
            panic!("a missing event is stale");
        };
        assert_eq!(why, "no hook for AfterAgent");
    }

    #[test]
    fn paths() {
        let home = Path::new("/home/u");
        let root = Path::new("/w/shop");
        let none = |_: &str| None;
        let p = |a, s| config_path(a, s, home, root, none).unwrap();
        assert_eq!(
            p(Agent::Codex, Scope::Project),
            Path::new("/w/shop/.codex/hooks.json")
        );
        assert_eq!(
            p(Agent::Codex, Scope::User),
            Path::new("/home/u/.codex/hooks.json")
        );
        let codex_home = |v: &str| (v == "CODEX_HOME").then(|| "/cx".to_owned());
        assert_eq!(
            config_path(Agent::Codex, Scope::User, home, root, codex_home).unwrap(),
            Path::new("/cx/hooks.json")
        );
        assert_eq!(
            p(Agent::Copilot, Scope::Project),
            Path::new("/w/shop/.github/hooks/capt-hook.json")
        );
        assert!(is_ours(Agent::Codex, "'/a b/hook' run --agent codex Stop"));
        assert!(!is_ours(Agent::Codex, "/a/hook run --agent gemini Stop"));
        assert!(!is_ours(Agent::Codex, "/a/my-hook run --agent codex Stop"));
    }
}

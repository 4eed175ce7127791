//! OpenAI Codex CLI (npm `@openai/codex`, observed at 0.169): Claude Code's event names and
//! envelope, with three differences that bite. Its output parser refuses a whole answer over one
//! field it does not know for that event, and a refused answer lets the call run; a plain
//! `permissionDecision: "allow"` or an `ask` is refused the same way; and edits arrive as one
//! `apply_patch` call holding a patch, not as Edit/Write with a `file_path`.

use std::path::Path;

use serde_json::{Map, Value};

use capt_hook_core::EventKind::*;

use crate::agent::{Agent, AgentError};
use crate::table::{
    AgentTable, Call, ConfigFormat, InputMap, Install, OutputStyle, PayloadStyle, ToolRow, row,
};

/// Codex's table.
pub fn table() -> AgentTable {
    AgentTable {
        agent: Agent::Codex,
        title: "OpenAI Codex CLI",
        env: &[],
        // Every Codex event but SessionStart carries the turn's id; Claude Code sends none.
        marks: &["turn_id"],
        payload: PayloadStyle::Claude,
        output: OutputStyle::ClaudeFields,
        fields: &[],
        counts: &[],
        events: vec![
            // A deny needs a non-empty reason; an allow is honoured only with updatedInput.
            row("PreToolUse", Some(PreToolUse), Call::Payload, "brcn"),
            // `decision.behavior` allow/deny; an updatedInput there is refused.
            row(
                "PermissionRequest",
                Some(PermissionRequest),
                Call::Payload,
                "bpn",
            ),
            row("PostToolUse", Some(PostToolUse), Call::Payload, "bcn"),
            row(
                "UserPromptSubmit",
                Some(UserPromptSubmit),
                Call::None,
                "bcn",
            ),
            row("Stop", Some(Stop), Call::None, "bn"),
            row("SubagentStop", Some(SubagentStop), Call::None, "bn"),
            row("SubagentStart", Some(SubagentStart), Call::None, "cn"),
            row("SessionStart", Some(SessionStart), Call::None, "cn"),
            row("PreCompact", Some(PreCompact), Call::None, "n"),
            row("PostCompact", Some(PostCompact), Call::None, "n"),
        ],
        tools: &[
            // Codex applies a shell command that is `apply_patch <<'EOF'` itself, as a patch
            // (0.169 sends its hooks such a call as `Bash`, and no PostToolUse).
            ToolRow {
                name: "Bash",
                ours: "Bash",
                input: InputMap::ShellPatch(&[]),
            },
            ToolRow {
                name: "exec_command",
                ours: "Bash",
                input: InputMap::ShellPatch(&[("cmd", "command")]),
            },
            // Older builds: `command` as an argv array (`["bash", "-lc", "…"]`).
            ToolRow {
                name: "shell",
                ours: "Bash",
                input: InputMap::ShellArgv,
            },
            ToolRow {
                name: "apply_patch",
                ours: "Edit",
                input: InputMap::ApplyPatch,
            },
        ],
        cannot: &[
            "`ask`: Codex refuses the answer (and runs the call), so an ask is sent as a deny \
             with its reason.",
            "A plain allow on PreToolUse: refused the same way, so it is left out and Codex's \
             own approval decides.",
            "A rewrite of an `apply_patch` call, the tool's or a shell command that runs it \
             (the patch cannot be rebuilt from an Edit): refused as a deny that says so.",
            "A rewrite on PermissionRequest: refused as a deny naming the command to run \
             instead.",
            "Context on Stop, SubagentStop, PreCompact and PostCompact: shown to the user as \
             `systemMessage` where the event has one.",
            "Hooks run only once trusted by hash (`[hooks.state]` in the user's \
             `config.toml`); an untrusted hook is skipped silently. `capt-hook install --agent \
             codex` writes the hashes of the hooks it installs there (and `uninstall` removes \
             them), as a review in Codex would. Codex keys them by the hooks file's path under \
             its working directory as it got it (links resolved when started in the project, \
             as written with `codex -C <link>`), so a project installed through a link is \
             trusted under both paths.",
            "A project's `.codex/hooks.json` is read only in a project Codex trusts (`codex \
             --trust`, or `[projects.\"<root>\"] trust_level = \"trusted\"` in `config.toml`); \
             in any other, Codex ignores the project's `.codex/` with one warning and no hook \
             runs; `capt-hook doctor` says whether it trusts this one. Install with `--user` to \
             guard untrusted projects.",
        ],
        config: "`~/.codex/hooks.json` (user) or `.codex/hooks.json` (project), Claude Code's \
                 shape; `timeout` in seconds",
        install: Some(Install {
            user: ".codex/hooks.json",
            user_env: Some(("CODEX_HOME", "hooks.json")),
            project: ".codex/hooks.json",
            // Seconds; above the client's own 30 s deadline, so the client answers first.
            format: ConfigFormat::Groups { timeout: 40 },
        }),
    }
}

/// Codex's `config.toml` (its text) as a table; the error says it is not TOML and why.
fn parse_config(config: &str) -> Result<toml::Table, AgentError> {
    config
        .parse()
        .map_err(|e: toml::de::Error| AgentError::Config {
            path: "config.toml".into(),
            problem: format!("is not TOML: {}", e.message()),
        })
}

/// Whether Codex's `config.toml` (its text) trusts the project at `root`: Codex reads a
/// project's `.codex/`, hooks included, only when `[projects."<root>"]` says `trust_level =
/// "trusted"` (what `codex --trust` writes); anywhere else it ignores them with one warning.
/// `root` matches as given or canonicalised. The error names what does not parse.
pub fn trusts_project(config: &str, root: &Path) -> Result<bool, AgentError> {
    let table = parse_config(config)?;
    let Some(projects) = table.get("projects") else {
        return Ok(false);
    };
    let projects = projects.as_table().ok_or_else(|| AgentError::Config {
        path: "projects".into(),
        problem: "is not a table".into(),
    })?;
    let canonical = root.canonicalize().ok();
    let names = std::iter::once(root).chain(canonical.as_deref());
    Ok(names.into_iter().any(|name| {
        projects
            .get(&name.display().to_string())
            .and_then(|p| p.get("trust_level"))
            .and_then(|t| t.as_str())
            == Some("trusted")
    }))
}

/// One of our handlers as Codex keys its trust: `key` names where it sits
/// (`<hooks.json path>:<event label>:<group>:<handler>`), `hash` what it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    /// The `[hooks.state."<key>"]` table's name.
    pub key: String,
    /// Its `trusted_hash`: `sha256:` and the hex digest of the handler's identity.
    pub hash: String,
}

/// Codex's label for an event in trust keys and identities: the event name in snake case
/// (`PreToolUse` -> `pre_tool_use`).
fn event_label(event: &str) -> String {
    let mut out = String::with_capacity(event.len() + 4);
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Codex 0.169 ignores the matcher of these events, and leaves it out of their identity.
fn takes_matcher(event: &str) -> bool {
    !matches!(event, "UserPromptSubmit" | "Stop")
}

/// `v` with every object's keys in byte order, however the map keeps them: Codex hashes the
/// identity's JSON in that order.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The hash Codex trusts a command handler by: SHA-256 over the compact JSON, keys sorted, of
/// the handler's identity: the event's label, the group's matcher where the event takes one,
/// and the handler alone with Codex's defaults filled in (timeout 600 s, at least 1; not async).
fn handler_hash(event: &str, matcher: Option<&str>, handler: &Map<String, Value>) -> String {
    use sha2::Digest;
    let mut one = Map::new();
    one.insert("type".into(), "command".into());
    for (field, value) in handler {
        // What Codex reads of a command handler; `commandWindows` is dropped off Windows.
        if matches!(field.as_str(), "command" | "statusMessage") {
            one.insert(field.clone(), value.clone());
        }
    }
    let timeout = handler
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(600)
        .max(1);
    one.insert("timeout".into(), timeout.into());
    let run_async = handler
        .get("async")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    one.insert("async".into(), run_async.into());
    let mut identity = Map::new();
    identity.insert("event_name".into(), event_label(event).into());
    if let Some(m) = matcher.filter(|_| takes_matcher(event)) {
        identity.insert("matcher".into(), m.into());
    }
    identity.insert("hooks".into(), Value::Array(vec![Value::Object(one)]));
    let text = sorted(&Value::Object(identity)).to_string();
    let digest = sha2::Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The trust Codex needs for each of our handlers in `hooks` (a `hooks.json`'s JSON) read from
/// `source` (its absolute path, as Codex names it).
pub fn trust_entries(source: &Path, hooks: &Value) -> Vec<Trust> {
    let mut out = Vec::new();
    let Some(events) = hooks.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, groups) in events {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str);
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                let Some(handler) = handler.as_object() else {
                    continue;
                };
                let ours = handler
                    .get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| crate::install::is_ours(Agent::Codex, c));
                if ours {
                    out.push(Trust {
                        key: format!("{}:{}:{g}:{h}", source.display(), event_label(event)),
                        hash: handler_hash(event, matcher, handler),
                    });
                }
            }
        }
    }
    out
}

/// The user's `config.toml` (its text) with the trust in `old` taken back and `new` given:
/// each `[hooks.state."<key>"]` of `new` gets its `trusted_hash`; one of `old` whose hash is
/// still ours loses it (a table left empty goes). Everything else in the file stays as
/// written. The error names what does not parse.
pub fn retrust(config: &str, old: &[Trust], new: &[Trust]) -> Result<String, AgentError> {
    let bad = |path: &str, problem: String| AgentError::Config {
        path: path.to_owned(),
        problem,
    };
    let mut doc: toml_edit::DocumentMut = config
        .parse()
        .map_err(|e: toml_edit::TomlError| bad("config.toml", format!("is not TOML: {e}")))?;
    let hooks = doc
        .entry("hooks")
        .or_insert_with(implicit_table)
        .as_table_like_mut()
        .ok_or_else(|| bad("hooks", "is not a table".into()))?;
    let state = hooks
        .entry("state")
        .or_insert_with(implicit_table)
        .as_table_like_mut()
        .ok_or_else(|| bad("hooks.state", "is not a table".into()))?;
    for t in old {
        let Some(entry) = state.get_mut(&t.key).and_then(|e| e.as_table_like_mut()) else {
            continue;
        };
        if entry.get("trusted_hash").and_then(|h| h.as_str()) == Some(t.hash.as_str()) {
            entry.remove("trusted_hash");
        }
        if entry.is_empty() {
            state.remove(&t.key);
        }
    }
    for t in new {
        let entry = state
            .entry(&t.key)
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
            .as_table_like_mut()
            .ok_or_else(|| {
                bad(
                    &format!("hooks.state.\"{}\"", t.key),
                    "is not a table".into(),
                )
            })?;
        entry.insert("trusted_hash", toml_edit::value(t.hash.as_str()));
    }
    let emptied = |item: Option<&toml_edit::Item>| {
        item.and_then(|i| i.as_table_like())
            .is_some_and(|t| t.is_empty())
    };
    if let Some(hooks) = doc.get_mut("hooks").and_then(|h| h.as_table_like_mut())
        && emptied(hooks.get("state"))
    {
        hooks.remove("state");
    }
    if emptied(doc.get("hooks")) {
        doc.remove("hooks");
    }
    Ok(doc.to_string())
}

/// The entries of `wanted` the user's `config.toml` (its text) does not trust: no
/// `[hooks.state."<key>"]`, or another `trusted_hash` there (Codex shows those as modified).
/// The error names what does not parse.
pub fn untrusted<'a>(config: &str, wanted: &'a [Trust]) -> Result<Vec<&'a Trust>, AgentError> {
    let table = parse_config(config)?;
    let state = table
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(|s| s.as_table());
    Ok(wanted
        .iter()
        .filter(|t| {
            state
                .and_then(|s| s.get(&t.key))
                .and_then(|e| e.get("trusted_hash"))
                .and_then(|h| h.as_str())
                != Some(t.hash.as_str())
        })
        .collect())
}

/// A table written only through its subtables (`[hooks.state."…"]`, no bare `[hooks]` line).
fn implicit_table() -> toml_edit::Item {
    let mut t = toml_edit::Table::new();
    t.set_implicit(true);
    toml_edit::Item::Table(t)
}
#[cfg(test)]
mod tests {
    use super::*;

    /// Each of our handlers gets a key by place and a hash by what it runs; the user's own
    /// handlers get none; the hash is Codex's: the identity's compact JSON, keys sorted.
    #[test]
    fn trust_is_keyed_by_place_and_hashed_by_identity() {
        let theirs = serde_json::json!({"hooks": {"Stop": [
            {"hooks": [{"type": "command", "command": "./mine.sh"}]}
        ]}});
        let ours = crate::install::install(Agent::Codex, Some(&theirs), "/bin/hook").unwrap();
        let source = Path::new("/w/shop/.codex/hooks.json");
        let trust = trust_entries(source, &ours);
        let keys: Vec<&str> = trust.iter().map(|t| t.key.as_str()).collect();
        assert!(
            keys.contains(&"/w/shop/.codex/hooks.json:stop:1:0"),
            "{keys:?}"
        );
        assert!(
            keys.contains(&"/w/shop/.codex/hooks.json:pre_tool_use:0:0"),
            "{keys:?}"
        );
        assert!(
            !keys.iter().any(|k| k.ends_with(":stop:0:0")),
            "theirs is not ours to trust"
        );
        let stop = trust.iter().find(|t| t.key.ends_with(":stop:1:0")).unwrap();
        let identity = "{\"event_name\":\"stop\",\"hooks\":[{\"async\":false,\
                        \"command\":\"/bin/hook run --agent codex Stop\",\"timeout\":40,\
                        \"type\":\"command\"}]}";
        use sha2::Digest;
        let want: String = sha2::Sha256::digest(identity.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(stop.hash, format!("sha256:{want}"));
        // A matcher counts where the event takes one; a moved client is another hook.
        let group = |m: &str| {
            serde_json::json!({"hooks": {"PreToolUse": [{"matcher": m, "hooks": [
                {"type": "command", "command": "/bin/hook run --agent codex PreToolUse"}]}]}})
        };
        let a = trust_entries(source, &group("Bash"));
        let b = trust_entries(source, &group("*"));
        assert_ne!(a[0].hash, b[0].hash);
        let moved = crate::install::install(Agent::Codex, None, "/opt/hook").unwrap();
        assert!(
            trust_entries(source, &moved)
                .iter()
                .all(|t| !trust.contains(t))
        );
    }

    /// Trust is written beside the user's settings and comments, taken back by uninstall, and
    /// only where the hash is still ours.
    #[test]
    fn retrust_keeps_the_users_config() {
        let config = "# mine\nmodel = \"o3\"\n\n[hooks.state.\"/x:stop:0:0\"]\nenabled = false\n";
        let new = vec![
            Trust {
                key: "/w/.codex/hooks.json:stop:0:0".into(),
                hash: "sha256:aa".into(),
            },
            Trust {
                key: "/x:stop:0:0".into(),
                hash: "sha256:bb".into(),
            },
        ];
        let trusted = retrust(config, &[], &new).unwrap();
        assert!(trusted.starts_with("# mine\nmodel = \"o3\"\n"), "{trusted}");
        let parsed: toml::Table = trusted.parse().unwrap();
        let state = &parsed["hooks"]["state"];
        assert_eq!(
            state["/w/.codex/hooks.json:stop:0:0"]["trusted_hash"].as_str(),
            Some("sha256:aa")
        );
        assert_eq!(
            state["/x:stop:0:0"]["enabled"].as_bool(),
            Some(false),
            "{trusted}"
        );
        assert_eq!(
            retrust(&trusted, &new, &new).unwrap(),
            trusted,
            "idempotent"
        );
        assert!(untrusted(&trusted, &new).unwrap().is_empty());
        assert_eq!(untrusted(config, &new).unwrap().len(), 2);
        let back = retrust(&trusted, &new, &[]).unwrap();
        let parsed: toml::Table = back.parse().unwrap();
        assert!(
            parsed["hooks"]["state"]
                .get("/w/.codex/hooks.json:stop:0:0")
                .is_none(),
            "{back}"
        );
        assert_eq!(
            parsed["hooks"]["state"]["/x:stop:0:0"]["enabled"].as_bool(),
            Some(false)
        );
        assert!(
            parsed["hooks"]["state"]["/x:stop:0:0"]
                .get("trusted_hash")
                .is_none()
        );
        // A hash the user changed since is not ours to take back.
        let theirs = retrust(
            &trusted,
            &[Trust {
                key: new[0].key.clone(),
                hash: "sha256:zz".into(),
            }],
            &[],
        )
        .unwrap();
        assert!(theirs.contains("sha256:aa"), "{theirs}");
        assert_eq!(retrust("", &[], &[]).unwrap(), "");
        assert!(retrust("[hooks\n", &[], &new).is_err());
        assert!(retrust("hooks = 3\n", &[], &new).is_err());
    }

    #[test]
    fn a_project_is_trusted_only_by_its_own_entry() {
        let root = Path::new("/nonexistent/shop");
        let trusted = "[projects.\"/nonexistent/shop\"]\ntrust_level = \"trusted\"\n";
        assert_eq!(trusts_project(trusted, root), Ok(true));
        let other = "[projects.\"/nonexistent/other\"]\ntrust_level = \"trusted\"\n";
        assert_eq!(trusts_project(other, root), Ok(false));
        let untrusted = "[projects.\"/nonexistent/shop\"]\ntrust_level = \"untrusted\"\n";
        assert_eq!(trusts_project(untrusted, root), Ok(false));
        assert_eq!(trusts_project("model = \"x\"\n", root), Ok(false));
        assert!(trusts_project("projects = 3\n", root).is_err());
        assert!(trusts_project("[projects\n", root).is_err());
    }
}

//! An agent's payload read as the Claude Code payload our engine evaluates: our event name, the
//! tool under Claude Code's name with Claude Code's input keys, and Claude Code's field names.
//! Fields we do not rename are kept, so a hook that reads an agent's own field still finds it.

use capt_hook_core::EventKind;
use serde_json::{Map, Value, json};

use crate::agent::{Agent, AgentError};
use crate::patch::{self, PatchOp};
use crate::table::{AgentTable, Call, InputMap, PayloadStyle};

/// An agent's event, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalised {
    /// Who sent it.
    pub agent: Agent,
    /// The event's name as the agent spells it.
    pub event: String,
    /// Our event; `None` for an event we leave alone (answer it with nothing).
    pub ours: Option<EventKind>,
    /// The tool's name as the agent spells it, when the event carries a call.
    pub tool: Option<String>,
    /// Claude Code payloads, one per call: one, except that a patch touching several files (or
    /// moving or deleting one) is several calls. Each must be evaluated and the answers folded
    /// by [`crate::render`]. Empty when `ours` is `None`.
    pub payloads: Vec<Value>,
}

/// Reads `payload`, an `event` of `agent` (`None`: the payload's own event field names it).
pub fn normalise(
    agent: Agent,
    event: Option<&str>,
    payload: &Value,
) -> Result<Normalised, AgentError> {
    let table = agent.table();
    let name = event
        .or_else(|| {
            payload
                .get("hook_event_name")
                .or_else(|| payload.get("hookEventName"))
                .and_then(Value::as_str)
        })
        .unwrap_or_default();
    let Some(row) = table.event(name) else {
        return Err(AgentError::UnknownEvent {
            agent,
            name: name.to_owned(),
            events: table
                .events
                .iter()
                .map(|e| e.name)
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    let fail = |field: &str, problem: &str| AgentError::Field {
        agent,
        event: name.to_owned(),
        field: field.to_owned(),
        problem: problem.to_owned(),
    };
    let mut out = Normalised {
        agent,
        event: name.to_owned(),
        ours: row.ours,
        tool: None,
        payloads: Vec::new(),
    };
    let Some(ours) = row.ours else {
        return Ok(out);
    };
    let Some(obj) = payload.as_object() else {
        return Err(fail("(payload)", "must be a JSON object"));
    };
    let mut base = obj.clone();
    for (theirs, our) in table.fields {
        if !base.contains_key(*our)
            && let Some(v) = base.remove(*theirs)
        {
            base.insert((*our).to_owned(), v);
        }
    }
    for (theirs, our) in table.counts {
        if !base.contains_key(*our)
            && let Some(n) = base.get(*theirs).and_then(Value::as_u64)
        {
            base.insert((*our).to_owned(), (n > 0).into());
        }
    }
    base.remove("hookEventName");
    base.insert("hook_event_name".into(), ours.name().into());
    if !base.contains_key("cwd")
        && let Some(root) = obj
            .get("workspace_roots")
            .and_then(Value::as_array)
            .and_then(|r| r.first())
            .filter(|r| r.is_string())
    {
        base.insert("cwd".into(), root.clone());
    }
    let cwd = base.get("cwd").and_then(Value::as_str).map(str::to_owned);

    let str_field = |key: &str| -> Result<String, AgentError> {
        match obj.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(fail(key, "must be a string")),
            None => Err(fail(key, "is missing")),
        }
    };
    let (tool, input) = match row.call {
        Call::None => {
            out.payloads.push(Value::Object(base));
            return Ok(out);
        }
        Call::Payload => match table.payload {
            PayloadStyle::Copilot => (str_field("toolName")?, object_or_text(obj, "toolArgs")),
            _ => (str_field("tool_name")?, object_or_text(obj, "tool_input")),
        },
        Call::Shell => (
            "Bash".to_owned(),
            Ok(json!({"command": str_field("command")?})
                .as_object()
                .cloned()
                .unwrap_or_default()),
        ),
        Call::Mcp => (
            format!("mcp__cursor__{}", str_field("tool_name")?),
            object_or_text(obj, "tool_input"),
        ),
        Call::ReadFile => (
            "Read".to_owned(),
            Ok(json!({"file_path": str_field("file_path")?})
                .as_object()
                .cloned()
                .unwrap_or_default()),
        ),
        Call::FileEdit => ("Edit".to_owned(), file_edit(obj)),
    };
    let input = input.map_err(|(field, problem)| fail(field, problem))?;
    for key in ["tool_name", "tool_input", "toolName", "toolArgs", "edits"] {
        base.remove(key);
    }
    out.tool = Some(tool.clone());
    let calls =
        map_tool(table, &tool, input, cwd.as_deref()).map_err(|source| AgentError::Patch {
            agent,
            event: name.to_owned(),
            source,
        })?;
    for (tool_name, tool_input) in calls {
        let mut p = base.clone();
        if tool_name == "Bash" {
            shell_response(&mut p);
        }
        p.insert("tool_name".into(), tool_name.into());
        p.insert("tool_input".into(), Value::Object(tool_input));
        out.payloads.push(Value::Object(p));
    }
    Ok(out)
}

type FieldProblem = (&'static str, &'static str);

/// A call under Claude Code's tool name, with Claude Code's input keys.
type ToolCall = (String, Map<String, Value>);

/// A tool input given as an object, or as JSON text of one (Copilot's `toolArgs`, Cursor's MCP
/// `tool_input`); missing is empty.
fn object_or_text(
    obj: &Map<String, Value>,
    key: &'static str,
) -> Result<Map<String, Value>, FieldProblem> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err((key, "must be an object or the JSON text of one")),
        },
        Some(_) => Err((key, "must be an object or the JSON text of one")),
    }
}

/// Cursor's afterFileEdit: `file_path` and `edits`, as Edit (one edit) or MultiEdit.
fn file_edit(obj: &Map<String, Value>) -> Result<Map<String, Value>, FieldProblem> {
    let Some(path) = obj.get("file_path").and_then(Value::as_str) else {
        return Err(("file_path", "must be a string"));
    };
    let Some(edits) = obj.get("edits").and_then(Value::as_array) else {
        return Err(("edits", "must be an array of {old_string, new_string}"));
    };
    let mut ops = Vec::new();
    for e in edits {
        let (Some(old), Some(new)) = (
            e.get("old_string").and_then(Value::as_str),
            e.get("new_string").and_then(Value::as_str),
        ) else {
            return Err(("edits", "must be an array of {old_string, new_string}"));
        };
        ops.push(json!({"old_string": old, "new_string": new}));
    }
    let v = match ops.as_slice() {
        [one] => {
            json!({"file_path": path, "old_string": one["old_string"], "new_string": one["new_string"]})
        }
        _ => json!({"file_path": path, "edits": ops}),
    };
    Ok(v.as_object().cloned().unwrap_or_default())
}

/// The calls a tool amounts to, under Claude Code's names.
pub(crate) fn map_tool(
    table: &AgentTable,
    tool: &str,
    mut input: Map<String, Value>,
    cwd: Option<&str>,
) -> Result<Vec<ToolCall>, patch::PatchError> {
    // Cursor's afterFileEdit already gave Edit or MultiEdit; tell them apart by shape.
    if tool == "Edit" && input.contains_key("edits") {
        return Ok(vec![("MultiEdit".into(), input)]);
    }
    let Some(row) = table.tool(tool) else {
        return Ok(vec![(tool.to_owned(), input)]);
    };
    match row.input {
        InputMap::Keys(pairs) | InputMap::ShellPatch(pairs) => {
            for (theirs, ours) in pairs {
                if !input.contains_key(*ours)
                    && let Some(v) = input.remove(*theirs)
                {
                    input.insert((*ours).to_owned(), v);
                }
            }
            let shell_patch = match (row.input, input.get("command")) {
                (InputMap::ShellPatch(_), Some(Value::String(line))) => {
                    patch::shell_invocation(line)
                        .map(|(dir, text)| (dir.map(|d| absolute(d, cwd)), text.to_owned()))
                }
                _ => None,
            };
            let mut calls = vec![(row.ours.to_owned(), input)];
            // The command stays a Bash call (shell rules see it) and its patch is checked too.
            if let Some((dir, text)) = shell_patch {
                calls.extend(patch_calls(&patch::parse(&text)?, dir.as_deref().or(cwd)));
            }
            Ok(calls)
        }
        InputMap::ShellArgv => {
            if let Some(Value::Array(argv)) = input.get("command") {
                let words: Vec<&str> = argv.iter().filter_map(Value::as_str).collect();
                let line = match words.as_slice() {
                    [_, flag, script] if matches!(*flag, "-c" | "-lc") => (*script).to_owned(),
                    _ => words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "),
                };
                input.insert("command".into(), line.into());
            }
            Ok(vec![("Bash".to_owned(), input)])
        }
        InputMap::ApplyPatch => {
            let text = ["command", "input", "patch"]
                .iter()
                .find_map(|k| match input.get(*k) {
                    Some(Value::String(s)) => Some(s.clone()),
                    // The shell form: `["apply_patch", "<patch>"]`.
                    Some(Value::Array(a)) => a.last().and_then(Value::as_str).map(str::to_owned),
                    _ => None,
                })
                .unwrap_or_default();
            Ok(patch_calls(&patch::parse(&text)?, cwd))
        }
    }
}

/// The Edit, MultiEdit, Write and shell calls a patch amounts to. A deletion or a move has no
/// Claude Code tool; it is the `rm` or `mv` it amounts to, so deletion guards see it.
fn patch_calls(ops: &[PatchOp], cwd: Option<&str>) -> Vec<ToolCall> {
    let obj = |v: Value| v.as_object().cloned().unwrap_or_default();
    let mut calls = Vec::new();
    for op in ops {
        match op {
            PatchOp::Add { path, content } => calls.push((
                "Write".to_owned(),
                obj(json!({"file_path": absolute(path, cwd), "content": content})),
            )),
            PatchOp::Delete { path } => calls.push((
                "Bash".to_owned(),
                obj(json!({"command": format!("rm -- {}", quote(path))})),
            )),
            PatchOp::Update {
                path,
                move_to,
                chunks,
            } => {
                let file = absolute(path, cwd);
                calls.push(match chunks.as_slice() {
                    [one] => (
                        "Edit".to_owned(),
                        obj(json!({"file_path": file, "old_string": one.old, "new_string": one.new})),
                    ),
                    _ => (
                        "MultiEdit".to_owned(),
                        obj(json!({"file_path": file, "edits": chunks.iter().map(|c| {
                            json!({"old_string": c.old, "new_string": c.new})
                        }).collect::<Vec<_>>()})),
                    ),
                });
                if let Some(to) = move_to {
                    calls.push((
                        "Bash".to_owned(),
                        obj(json!({"command": format!("mv -- {} {}", quote(path), quote(to))})),
                    ));
                }
            }
        }
    }
    calls
}

fn absolute(path: &str, cwd: Option<&str>) -> String {
    match cwd {
        Some(dir) if !path.starts_with('/') => format!("{}/{path}", dir.trim_end_matches('/')),
        _ => path.to_owned(),
    }
}

/// A word as the shell reads it back: bare when it holds nothing special, else single-quoted.
pub(crate) fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./-=:,+@%".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Claude Code's Bash response is an object with `stdout`; Codex sends the output as a string
/// and Gemini CLI as `llmContent`.
fn shell_response(p: &mut Map<String, Value>) {
    let text = match p.get("tool_response") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) if !o.contains_key("stdout") => {
            match o.get("llmContent").and_then(Value::as_str) {
                Some(s) => s.to_owned(),
                None => return,
            }
        }
        _ => return,
    };
    p.insert(
        "tool_response".into(),
        json!({"stdout": text, "stderr": "", "interrupted": false}),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_round_trips_through_the_shell_grammar() {
        assert_eq!(quote("src/a.py"), "src/a.py");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }

    /// Gemini CLI 0.61's search tools, as its model calls them, are Claude Code's Grep and
    /// Glob with Claude Code's keys.
    #[test]
    fn gemini_search_tools_read_as_grep_and_glob() {
        let grep = normalise(
            Agent::Gemini,
            Some("BeforeTool"),
            &json!({"tool_name": "grep_search", "tool_input": {
                "pattern": "TODO", "dir_path": "/p/src", "include_pattern": "*.py"}}),
        )
        .unwrap();
        assert_eq!(grep.payloads[0]["tool_name"], "Grep");
        assert_eq!(
            grep.payloads[0]["tool_input"],
            json!({"pattern": "TODO", "path": "/p/src", "glob": "*.py"})
        );
        let glob = normalise(
            Agent::Gemini,
            Some("BeforeTool"),
            &json!({"tool_name": "glob", "tool_input": {"pattern": "**/*.rs", "dir_path": "/p"}}),
        )
        .unwrap();
        assert_eq!(glob.payloads[0]["tool_name"], "Glob");
        assert_eq!(
            glob.payloads[0]["tool_input"],
            json!({"pattern": "**/*.rs", "path": "/p"})
        );
    }

    #[test]
    fn an_unknown_event_lists_the_agents_events() {
        let e = normalise(Agent::Gemini, Some("PreToolUse"), &json!({})).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("gemini has no event 'PreToolUse'") && s.contains("BeforeTool"),
            "{s}"
        );
    }

    #[test]
    fn bad_fields_are_named() {
        let e = normalise(Agent::Codex, Some("PreToolUse"), &json!({"tool_name": 3})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "codex PreToolUse payload: field `tool_name` must be a string"
        );
        let e = normalise(
            Agent::Copilot,
            Some("preToolUse"),
            &json!({"toolName": "bash", "toolArgs": "{not json"}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("`toolArgs`"), "{e}");
        let e = normalise(
            Agent::Codex,
            Some("PreToolUse"),
            &json!({"tool_name": "apply_patch", "tool_input": {"command": "oops"}}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("apply_patch line 1"), "{e}");
    }
}

//! The payload Claude Code would send for an inline test's simulated event.

use capt_hook_core::{Condition, EventKind};
use capt_hook_engine::Hook;
use capt_hook_engine::inline::Input;
use serde_json::{Map, Value, json};

/// The tool the test simulates.
fn infer_tool(hook: &Hook, input: &Input) -> String {
    if let Some(t) = &input.tool {
        return t.clone();
    }
    let from_fields = if input.old.is_some() {
        "Edit"
    } else if input.content.is_some() {
        "Write"
    } else if input.prompt.is_some() || input.model.is_some() || input.agent_type.is_some() {
        "Agent"
    } else if input.offset.is_some() || input.limit.is_some() {
        "Read"
    } else if input.command.is_some() {
        "Bash"
    } else if input.file.is_some() {
        "Read"
    } else {
        "Bash"
    };
    let named: Vec<&String> = hook
        .only_if
        .iter()
        .filter_map(|c| match c {
            Condition::Tool(names) => Some(names),
            _ => None,
        })
        .flatten()
        .collect();
    let spellings = capt_hook_core::tool::tool_spellings(from_fields);
    if let Some(hit) = named.iter().find(|n| spellings.contains(&n.as_str())) {
        return (*hit).clone();
    }
    named
        .first()
        .map(|n| (*n).clone())
        .unwrap_or_else(|| from_fields.to_owned())
}

/// Builds the payload Claude Code would send for the test input.
pub fn build_payload(hook: &Hook, input: &Input, event: EventKind) -> Value {
    let mut p = Map::new();
    p.insert("hook_event_name".into(), event.name().into());
    let mut put = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            p.insert(k.into(), v.clone().into());
        }
    };
    put("agent_id", &input.agent_id);
    put("permission_mode", &input.permission_mode);
    put("cwd", &input.cwd);
    put("error", &input.error);
    match event {
        EventKind::UserPromptSubmit => put("prompt", &input.prompt),
        EventKind::SessionStart => {
            put("model", &input.model);
            p.insert(
                "source".into(),
                input
                    .source
                    .clone()
                    .unwrap_or_else(|| "startup".into())
                    .into(),
            );
        }
        // `model` is where the switch goes; `source` what asked for it.
        EventKind::PreModelSwitch | EventKind::PostModelSwitch => {
            put("to_model", &input.model);
            p.insert(
                "source".into(),
                input
                    .source
                    .clone()
                    .unwrap_or_else(|| "command".into())
                    .into(),
            );
        }
        EventKind::SessionEnd => {
            p.insert(
                "reason".into(),
                input
                    .reason
                    .clone()
                    .unwrap_or_else(|| "other".into())
                    .into(),
            );
        }
        EventKind::SubagentStart | EventKind::SubagentStop => {
            p.insert(
                "agent_type".into(),
                input.agent_type.clone().unwrap_or_default().into(),
            );
        }
        EventKind::FileChanged | EventKind::InstructionsLoaded | EventKind::ConfigChange => {
            put("file_path", &input.file);
        }
        // The host's own event has no tool: the test's `tool_input` table holds its fields
        // (`stage`, `process`, `claude_pid`, …).
        EventKind::ResourcePressure => {
            for (k, v) in input.tool_input.iter().flatten() {
                p.insert(k.clone(), v.clone());
            }
        }
        // One call in the batch, in the batch's own shape.
        EventKind::PostToolBatch => {
            let tool = infer_tool(hook, input);
            let tool_input = input
                .tool_input
                .clone()
                .unwrap_or_else(|| synthesise_input(&tool, input));
            p.insert(
                "tool_calls".into(),
                json!([{
                    "tool_name": tool,
                    "tool_input": tool_input,
                    "tool_use_id": "toolu_test",
                    "tool_response": input.output.clone().unwrap_or(Value::Null),
                }]),
            );
        }
        k if k.has_tool() => {
            let tool = infer_tool(hook, input);
            let tool_input = input
                .tool_input
                .clone()
                .unwrap_or_else(|| synthesise_input(&tool, input));
            p.insert("tool_name".into(), tool.into());
            p.insert("tool_input".into(), Value::Object(tool_input));
            if let Some(a) = &input.agent_type {
                p.insert("agent_type".into(), a.clone().into());
            }
            if let Some(o) = &input.output {
                p.insert("tool_response".into(), o.clone());
            }
        }
        _ => {}
    }
    Value::Object(p)
}

fn synthesise_input(tool: &str, input: &Input) -> Map<String, Value> {
    let s = |v: &Option<String>| Value::String(v.clone().unwrap_or_default());
    let mut m = Map::new();
    match capt_hook_core::tool::canonical_tool(tool) {
        "Bash" => {
            m.insert("command".into(), s(&input.command));
        }
        "Edit" => {
            m.insert("file_path".into(), s(&input.file));
            m.insert("old_string".into(), s(&input.old));
            m.insert("new_string".into(), s(&input.content));
        }
        "MultiEdit" => {
            m.insert("file_path".into(), s(&input.file));
            m.insert(
                "edits".into(),
                json!([{"old_string": s(&input.old), "new_string": s(&input.content)}]),
            );
        }
        "Write" => {
            m.insert("file_path".into(), s(&input.file));
            m.insert("content".into(), s(&input.content));
        }
        "Read" => {
            m.insert("file_path".into(), s(&input.file));
            if let Some(l) = input.limit {
                m.insert("limit".into(), l.into());
            }
            if let Some(o) = input.offset {
                m.insert("offset".into(), o.into());
            }
        }
        "Agent" => {
            let prompt = input.prompt.clone().or_else(|| input.content.clone());
            m.insert("prompt".into(), prompt.unwrap_or_default().into());
            if let Some(a) = &input.agent_type {
                m.insert("subagent_type".into(), a.clone().into());
            }
            if let Some(a) = &input.model {
                m.insert("model".into(), a.clone().into());
            }
        }
        _ => {
            for (k, v) in [
                ("command", &input.command),
                ("file_path", &input.file),
                ("new_string", &input.content),
                ("old_string", &input.old),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), v.clone().into());
                }
            }
        }
    }
    m
}

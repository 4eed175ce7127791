//! Our answer written in an agent's own output shape, with only the fields its event accepts.

use capt_hook_core::EventKind;
use capt_hook_core::envelope::Shape;
use capt_hook_proto::envelope::{Answer as Envelope, Permission, Specific};
use serde_json::{Map, Value};

use crate::agent::AgentError;
use crate::normalise::Normalised;
use crate::table::{InputMap, OutputStyle, ToolRow};
use crate::verdict::{self, Decision, Verdict, settle};

/// What a hook command prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// Its exit code.
    pub exit: i32,
}

/// The answer for the agent, from the engine's verdicts on `n`'s payloads (one each, in order):
/// a JSON object on stdout (or nothing) and exit 0, for every agent: each of them reads a block
/// from JSON, and Codex counts a bare exit 2 without stderr as a failed hook. (Claude Code, whose
/// own envelope the engine already printed, is answered with that by the caller; see
/// [`passes_through`].)
pub fn render(n: &Normalised, verdicts: &[Verdict]) -> Result<Answer, AgentError> {
    let Some(ours) = n.ours else {
        return Ok(Answer::default());
    };
    let table = n.agent.table();
    let Some(row) = table.event(&n.event) else {
        return Err(AgentError::UnknownEvent {
            agent: n.agent,
            name: n.event.clone(),
            events: String::new(),
        });
    };
    let tool_row = n.tool.as_deref().and_then(|t| table.tool(t));
    // A call read as several (a shell command that is also a patch) has no one input a rewrite
    // could be given back as.
    let one_call = n.payloads.len() <= 1;
    let reversible = tool_row.is_none_or(|t| t.input.reversible() && one_call);
    let mut v = settle(
        verdict::fold(verdicts.to_vec()),
        row.accepts,
        reversible,
        table.title,
    );
    if let (Decision::Rewrite(input), Some(t)) = (&mut v.decision, tool_row) {
        *input = back(input, t);
    }
    let out = match table.output {
        OutputStyle::Passthrough | OutputStyle::ClaudeFields => claude_fields(ours, row.name, &v),
        OutputStyle::Gemini => gemini(&v),
        OutputStyle::Cursor => cursor(ours, &v),
        OutputStyle::Copilot => copilot(ours, &v),
    };
    Ok(Answer {
        stdout: if out.is_empty() {
            String::new()
        } else {
            Value::Object(out).to_string()
        },
        stderr: String::new(),
        exit: 0,
    })
}

/// True when the engine's own answer (Claude Code's envelope) is the agent's, as it stands: an
/// agent that speaks Claude Code's protocol, for an event that was one call.
pub fn passes_through(n: &Normalised, calls: usize) -> bool {
    n.agent.table().output == OutputStyle::Passthrough && calls == 1
}

/// A rewritten input in the agent's own keys.
fn back(input: &Map<String, Value>, tool: &ToolRow) -> Map<String, Value> {
    let (InputMap::Keys(pairs) | InputMap::ShellPatch(pairs)) = tool.input else {
        return input.clone();
    };
    input
        .iter()
        .map(|(k, v)| {
            let key = pairs
                .iter()
                .find(|(_, ours)| ours == k)
                .map_or(k.as_str(), |(theirs, _)| theirs);
            (key.to_owned(), v.clone())
        })
        .collect()
}

fn put(m: &mut Map<String, Value>, k: &str, v: impl Into<Value>) {
    m.insert(k.to_owned(), v.into());
}

fn joined(lines: &[String]) -> Option<String> {
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// Claude Code's envelope (written by `capt_hook_proto::envelope`), only what the settled
/// verdict holds (which is only what the event accepts): Codex refuses the whole answer over one
/// field it does not expect.
fn claude_fields(ours: EventKind, name: &str, v: &Verdict) -> Map<String, Value> {
    let shape = Shape::of(ours);
    let guard = matches!(shape, Shape::PreToolUse | Shape::PermissionRequest);
    let permission = |s: Specific,
                      decision: Permission,
                      reason: Option<&str>,
                      input: Option<&Map<String, Value>>| {
        if shape == Shape::PermissionRequest {
            return s.dialog(decision, reason.map(str::to_owned), input.cloned());
        }
        let mut s = s.permission(decision);
        if let Some(r) = reason {
            s = s.permission_reason(r);
        }
        match input {
            Some(i) => s.updated_input(i.clone()),
            None => s,
        }
    };
    let mut top = Envelope::default();
    let mut hso = Specific::new(name);
    match &v.decision {
        Decision::None => {}
        Decision::Block(r) if guard => hso = permission(hso, Permission::Deny, Some(r), None),
        Decision::Block(r) => top = top.block(r.as_str()),
        Decision::Ask(r) => hso = permission(hso, Permission::Ask, Some(r), None),
        Decision::Rewrite(i) => hso = permission(hso, Permission::Allow, None, Some(i)),
        Decision::Allow => hso = permission(hso, Permission::Allow, None, None),
    }
    if let Some(c) = joined(&v.context) {
        hso = hso.context(c);
    }
    if let Some(n) = joined(&v.notices) {
        top = top.notice(n);
    }
    if let Some(reason) = &v.halt
        && !guard
    {
        top = top.halt(reason.as_str());
    }
    if !hso.is_bare() {
        top = top.specific(hso);
    }
    top.into_map()
}

/// Gemini CLI: top-level `decision`/`reason`, the rest under `hookSpecificOutput`.
fn gemini(v: &Verdict) -> Map<String, Value> {
    let mut top = Map::new();
    let mut hso = Map::new();
    match &v.decision {
        Decision::Block(r) | Decision::Ask(r) => {
            put(&mut top, "decision", "deny");
            put(&mut top, "reason", r.as_str());
        }
        Decision::Allow => put(&mut top, "decision", "allow"),
        Decision::Rewrite(i) => put(&mut hso, "tool_input", Value::Object(i.clone())),
        Decision::None => {}
    }
    if let Some(c) = joined(&v.context) {
        put(&mut hso, "additionalContext", c);
    }
    if let Some(n) = joined(&v.notices) {
        put(&mut top, "systemMessage", n);
    }
    if let Some(reason) = &v.halt {
        put(&mut top, "continue", false);
        put(&mut top, "stopReason", reason.as_str());
    }
    if !hso.is_empty() {
        put(&mut top, "hookSpecificOutput", Value::Object(hso));
    }
    top
}

/// Cursor: `permission` before a call, `continue` before a prompt, `followup_message` at stop.
fn cursor(ours: EventKind, v: &Verdict) -> Map<String, Value> {
    let mut top = Map::new();
    match ours {
        EventKind::PreToolUse => {
            let mut agent_text = v.context.clone();
            let mut user_text = v.notices.clone();
            match &v.decision {
                Decision::Block(r) | Decision::Ask(r) => {
                    let word = if matches!(v.decision, Decision::Ask(_)) {
                        "ask"
                    } else {
                        "deny"
                    };
                    put(&mut top, "permission", word);
                    user_text.insert(0, r.clone());
                    agent_text.insert(0, r.clone());
                }
                Decision::Allow => put(&mut top, "permission", "allow"),
                Decision::Rewrite(_) | Decision::None => {}
            }
            if let Some(u) = joined(&user_text) {
                put(&mut top, "user_message", u);
            }
            if let Some(a) = joined(&agent_text) {
                put(&mut top, "agent_message", a);
            }
        }
        EventKind::UserPromptSubmit => {
            if let Decision::Block(r) = &v.decision {
                put(&mut top, "continue", false);
                put(&mut top, "user_message", r.as_str());
            }
        }
        EventKind::Stop => {
            if let Decision::Block(r) = &v.decision {
                put(&mut top, "followup_message", r.as_str());
            }
        }
        _ => {}
    }
    top
}

/// Copilot CLI: a deny on preToolUse, nothing else.
fn copilot(ours: EventKind, v: &Verdict) -> Map<String, Value> {
    let mut top = Map::new();
    if ours == EventKind::PreToolUse
        && let Decision::Block(r) = &v.decision
    {
        put(&mut top, "permissionDecision", "deny");
        put(&mut top, "permissionDecisionReason", r.as_str());
    }
    top
}

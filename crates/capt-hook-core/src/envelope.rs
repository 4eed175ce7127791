//! Renders a folded result as the output Claude Code reads for each event.

use serde_json::{Map, Value, json};

use crate::events::EventKind;
use crate::result::{Action, HookResult};

/// What a hook command prints on stdout.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A JSON envelope, printed on one line.
    Json(Value),
    /// Raw text (PreCompact appends it to the compaction instructions).
    Text(String),
}

impl Output {
    /// The bytes to print, without a trailing newline.
    pub fn render(&self) -> String {
        match self {
            Output::Json(v) => v.to_string(),
            Output::Text(t) => t.clone(),
        }
    }
}

fn msg(r: &HookResult) -> Value {
    r.message.clone().map(Value::String).unwrap_or(Value::Null)
}

fn specific(kind: EventKind, fields: Vec<(&str, Value)>) -> Value {
    let mut inner = Map::new();
    inner.insert("hookEventName".into(), kind.name().into());
    for (k, v) in fields {
        inner.insert(k.into(), v);
    }
    json!({ "hookSpecificOutput": inner })
}

/// The tool-event shape PreToolUse uses; advisory events reuse it with their own name.
fn tool_shape(kind: EventKind, r: &HookResult) -> Value {
    match r.action {
        Action::Block => specific(
            kind,
            vec![
                ("permissionDecision", "deny".into()),
                ("permissionDecisionReason", msg(r)),
            ],
        ),
        Action::Warn => {
            let mut fields = vec![("additionalContext", msg(r))];
            if r.approve && kind == EventKind::PreToolUse {
                fields.push(("permissionDecision", "allow".into()));
            }
            specific(kind, fields)
        }
        Action::Allow => {
            let mut fields = vec![("permissionDecision", "allow".into())];
            if let Some(m) = r.message.as_ref().filter(|m| !m.is_empty()) {
                fields.push(("additionalContext", m.clone().into()));
            }
            specific(kind, fields)
        }
        Action::Rewrite => {
            let mut fields = vec![
                ("permissionDecision", "allow".into()),
                (
                    "updatedInput",
                    Value::Object(r.updated_input.clone().unwrap_or_default()),
                ),
            ];
            if let Some(n) = r.note.as_ref().filter(|n| !n.is_empty()) {
                fields.push(("additionalContext", n.clone().into()));
            }
            specific(kind, fields)
        }
    }
}

fn render_result(kind: EventKind, r: &HookResult) -> Option<Output> {
    if r.is_notice_only() {
        return None;
    }
    let json = match kind {
        EventKind::PreToolUse => tool_shape(kind, r),
        EventKind::PermissionRequest => {
            let decision = match r.action {
                Action::Block => {
                    let mut d = Map::new();
                    d.insert("behavior".into(), "deny".into());
                    if let Some(m) = r.message.as_ref().filter(|m| !m.is_empty()) {
                        d.insert("message".into(), m.clone().into());
                    }
                    Value::Object(d)
                }
                // A warning cannot answer a dialog: the dialog shows.
                Action::Warn => return None,
                Action::Allow => json!({"behavior": "allow"}),
                Action::Rewrite => json!({
                    "behavior": "allow",
                    "updatedInput": r.updated_input.clone().unwrap_or_default(),
                }),
            };
            specific(kind, vec![("decision", decision)])
        }
        // Any result but an allow keeps the agent going; an allow says nothing.
        EventKind::Stop | EventKind::SubagentStop => match r.action {
            Action::Allow => return None,
            _ => json!({"decision": "block", "reason": msg(r)}),
        },
        EventKind::PreCompact => match r.action {
            Action::Block => json!({"decision": "block", "reason": msg(r)}),
            _ => {
                return r
                    .message
                    .clone()
                    .filter(|m| !m.is_empty())
                    .map(Output::Text);
            }
        },
        EventKind::MessageDisplay => match r.action {
            Action::Rewrite => {
                let text = r.message.clone().map(Value::String).or_else(|| {
                    r.updated_input
                        .as_ref()
                        .and_then(|u| u.get("message").or_else(|| u.get("content")).cloned())
                })?;
                specific(kind, vec![("displayContent", text)])
            }
            _ => return None,
        },
        _ => tool_shape(kind, r),
    };
    Some(Output::Json(json))
}

/// The output for `kind` given the folded result; `None` prints nothing.
pub fn envelope(kind: EventKind, result: Option<&HookResult>) -> Option<Output> {
    let r = result?;
    let out = render_result(kind, r);
    let notice = r.system_message.as_ref().filter(|n| !n.is_empty());
    match (out, notice) {
        (out, None) => out,
        // PreCompact output is raw text or a decision; it has nowhere to carry a notice.
        (out, Some(_)) if kind == EventKind::PreCompact => out,
        (Some(Output::Json(Value::Object(mut map))), Some(n)) => {
            map.insert("systemMessage".into(), n.clone().into());
            Some(Output::Json(Value::Object(map)))
        }
        (Some(other), Some(_)) => Some(other),
        (None, Some(n)) => Some(Output::Json(json!({"systemMessage": n}))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(kind: EventKind, r: HookResult) -> Option<String> {
        envelope(kind, Some(&r)).map(|o| o.render())
    }

    #[test]
    fn pre_tool_use_shapes() {
        assert_eq!(
            render(EventKind::PreToolUse, HookResult::block("no")).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
        );
        assert_eq!(
            render(EventKind::PreToolUse, HookResult::warn("w")).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"w","permissionDecision":"allow"}}"#
        );
        assert_eq!(
            render(EventKind::PreToolUse, HookResult::context("w")).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"w"}}"#
        );
    }

    #[test]
    fn stop_precompact_and_permission_request() {
        assert_eq!(
            render(EventKind::Stop, HookResult::warn("w")).unwrap(),
            r#"{"decision":"block","reason":"w"}"#
        );
        assert_eq!(render(EventKind::Stop, HookResult::allow()), None);
        assert_eq!(
            render(EventKind::PreCompact, HookResult::warn("keep")).unwrap(),
            "keep"
        );
        assert_eq!(
            render(EventKind::PermissionRequest, HookResult::warn("w")),
            None
        );
        assert_eq!(
            render(EventKind::PermissionRequest, HookResult::block("")).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny"}}}"#
        );
    }

    #[test]
    fn system_messages_ride_or_stand_alone() {
        let r = HookResult::warn("w").with_system_message("heads up");
        assert_eq!(
            render(EventKind::PostToolUse, r).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"w"},"systemMessage":"heads up"}"#
        );
        let alone = HookResult::notice_only().with_system_message("n");
        assert_eq!(
            render(EventKind::PermissionRequest, alone).unwrap(),
            r#"{"systemMessage":"n"}"#
        );
    }
}

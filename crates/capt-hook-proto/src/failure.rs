//! The answer for a guarded call that could not be fully evaluated, shared by the worker (a hook
//! that failed, a hook file that did not load, an unreadable payload) and the `hook` client (no
//! host and no local evaluation): visible, and erring towards the guard.
//!
//! PreToolUse answers `permissionDecision: "ask"` with the reason, so Claude Code's own prompt
//! decides (an "ask" also forces the prompt in auto mode). PermissionRequest has no "ask": it
//! gives no decision, so the dialog shows, and a `systemMessage` says why. PreSkillShellCommand
//! cannot wait for a prompt (Claude Code refuses the command for an ask), so it denies, saying
//! that the command could not be checked: fail closed, visibly.

use serde_json::{Map, Value, json};

/// Events whose call waits on the hooks' answer: a failure there is never silent. The client
/// reads this list without the engine; `capt-hook-core`'s events table (`G`) is checked
/// against it.
pub const GUARDED_EVENTS: &[&str] = &["PreToolUse", "PermissionRequest", "PreSkillShellCommand"];

/// What a skill's command that could not be checked says besides the reason.
pub const CANNOT_ASK: &str = "a skill's shell command cannot wait for a permission prompt, so it \
                              was not run";

/// True for PreToolUse, PermissionRequest and PreSkillShellCommand.
pub fn is_guarded(event: &str) -> bool {
    GUARDED_EVENTS.contains(&event)
}

/// A guarded call that stays with the user, and why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unchecked {
    /// What failed, for the user: `capt-hook: <what> …`.
    pub reason: String,
    /// Context the hooks that did answer gave the agent (PreToolUse only).
    pub context: Option<String>,
    /// A rewrite the hooks that did answer proposed, shown in the prompt (PreToolUse only).
    pub updated_input: Option<Map<String, Value>>,
    /// A notice for the user besides the reason.
    pub notice: Option<String>,
}

impl Unchecked {
    /// An answer carrying only the reason.
    pub fn because(reason: impl Into<String>) -> Unchecked {
        Unchecked {
            reason: reason.into(),
            ..Unchecked::default()
        }
    }

    /// The envelope for `event` (one compact JSON line); `None` for an event that is not
    /// guarded, which has no decision to withhold.
    pub fn envelope(&self, event: &str) -> Option<String> {
        self.to_value(event).map(|v| v.to_string())
    }

    /// [`Unchecked::envelope`] as a JSON value, for callers that add to it.
    pub fn to_value(&self, event: &str) -> Option<Value> {
        let notice = self.notice.as_deref().filter(|n| !n.is_empty());
        let v = match event {
            "PreToolUse" => {
                let mut out = Map::new();
                out.insert("hookEventName".into(), event.into());
                out.insert("permissionDecision".into(), "ask".into());
                out.insert(
                    "permissionDecisionReason".into(),
                    self.reason.clone().into(),
                );
                if let Some(c) = self.context.as_deref().filter(|c| !c.is_empty()) {
                    out.insert("additionalContext".into(), c.into());
                }
                if let Some(input) = &self.updated_input {
                    out.insert("updatedInput".into(), Value::Object(input.clone()));
                }
                let mut top = Map::new();
                top.insert("hookSpecificOutput".into(), Value::Object(out));
                if let Some(n) = notice {
                    top.insert("systemMessage".into(), n.into());
                }
                Value::Object(top)
            }
            "PreSkillShellCommand" => {
                let mut top = Map::new();
                top.insert(
                    "hookSpecificOutput".into(),
                    json!({
                        "hookEventName": event,
                        "permissionDecision": "deny",
                        "permissionDecisionReason": format!("{} ({CANNOT_ASK})", self.reason),
                    }),
                );
                if let Some(n) = notice {
                    top.insert("systemMessage".into(), n.into());
                }
                Value::Object(top)
            }
            "PermissionRequest" => {
                let message = match notice {
                    Some(n) => format!("{}\n\n{n}", self.reason),
                    None => self.reason.clone(),
                };
                json!({ "systemMessage": message })
            }
            _ => return None,
        };
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_tool_use_asks_with_the_reason() {
        let mut u = Unchecked::because("capt-hook: x failed");
        u.context = Some("ctx".into());
        let v: Value = serde_json::from_str(&u.envelope("PreToolUse").unwrap()).unwrap();
        let out = &v["hookSpecificOutput"];
        assert_eq!(out["permissionDecision"], "ask");
        assert_eq!(out["permissionDecisionReason"], "capt-hook: x failed");
        assert_eq!(out["additionalContext"], "ctx");
        assert!(v.get("systemMessage").is_none());
    }

    #[test]
    fn permission_request_shows_the_dialog_with_a_message() {
        let mut u = Unchecked::because("capt-hook: x failed");
        u.notice = Some("n".into());
        let v: Value = serde_json::from_str(&u.envelope("PermissionRequest").unwrap()).unwrap();
        assert_eq!(v, json!({"systemMessage": "capt-hook: x failed\n\nn"}));
        assert_eq!(u.envelope("Stop"), None);
    }

    #[test]
    fn a_skill_command_that_cannot_be_checked_does_not_run() {
        let v: Value = serde_json::from_str(
            &Unchecked::because("capt-hook: x failed")
                .envelope("PreSkillShellCommand")
                .unwrap(),
        )
        .unwrap();
        let out = &v["hookSpecificOutput"];
        assert_eq!(out["permissionDecision"], "deny");
        let reason = out["permissionDecisionReason"].as_str().unwrap();
        assert!(reason.starts_with("capt-hook: x failed") && reason.contains(CANNOT_ASK));
    }
}

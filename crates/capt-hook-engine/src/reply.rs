//! What a handler answers, said on the event: `return evt.block("…")`.
//!
//! Each method returns a ready [`HandlerResult`], so a handler's last line reads as its verdict.
//! "Ask" is the absence of a verdict: the tool call goes through Claude Code's own permission
//! flow (the dialog shows if its rules say so), and on any other event nothing is added.

use capt_hook_core::{Event, HookResult};
use serde_json::{Map, Value};

use crate::hook::{HandlerError, HandlerResult};

/// Verdicts a handler gives, as methods on the event it was given.
pub trait Reply {
    /// Deny the call (PreToolUse, PermissionRequest) or keep the agent going (Stop,
    /// SubagentStop), with `message` as the reason the agent reads.
    fn block(&self, message: impl Into<String>) -> HandlerResult;

    /// Add `message` as context for the agent; never a permission.
    fn warn(&self, message: impl Into<String>) -> HandlerResult;

    /// Approve the call without a dialog.
    fn allow(&self) -> HandlerResult;

    /// No verdict: Claude Code's own permission flow decides.
    fn ask(&self) -> HandlerResult;

    /// Approve the call with `input` as its whole new tool input.
    fn rewrite(&self, input: Map<String, Value>, note: Option<String>) -> HandlerResult;

    /// Approve the Bash call with `command` in place of its command; other input keys are kept.
    fn rewrite_command(&self, command: impl Into<String>, note: Option<String>) -> HandlerResult;

    /// Approve the call with `field` set to `value` in its tool input (added or replaced).
    fn set_tool_input(
        &self,
        field: &str,
        value: impl Into<Value>,
        note: Option<String>,
    ) -> HandlerResult;
}

impl Reply for Event {
    fn block(&self, message: impl Into<String>) -> HandlerResult {
        Ok(Some(HookResult::block(message)))
    }

    fn warn(&self, message: impl Into<String>) -> HandlerResult {
        Ok(Some(HookResult::warn(message)))
    }

    fn allow(&self) -> HandlerResult {
        Ok(Some(HookResult::allow()))
    }

    fn ask(&self) -> HandlerResult {
        Ok(None)
    }

    fn rewrite(&self, input: Map<String, Value>, note: Option<String>) -> HandlerResult {
        Ok(Some(HookResult::rewrite(input, note)))
    }

    fn rewrite_command(&self, command: impl Into<String>, note: Option<String>) -> HandlerResult {
        self.set_tool_input("command", command.into(), note)
    }

    fn set_tool_input(
        &self,
        field: &str,
        value: impl Into<Value>,
        note: Option<String>,
    ) -> HandlerResult {
        // Rewriting an event that has no tool input would invent a call; say so instead.
        let Some(input) = self.tool_input() else {
            return Err(HandlerError::new(format!(
                "cannot set tool input `{field}` on {}: the event carries no tool call",
                self.kind()
            )));
        };
        let mut input = input.clone();
        input.insert(field.to_owned(), value.into());
        Ok(Some(HookResult::rewrite(input, note)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capt_hook_core::{Action, EventContext, EventKind};
    use serde_json::json;

    #[test]
    fn replies_build_the_verdicts_and_refuse_to_invent_a_call() {
        let bash = Event::new(
            EventKind::PreToolUse,
            json!({"tool_name": "Bash", "tool_input": {"command": "cat a", "timeout": 5}}),
            EventContext::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let r = bash.rewrite_command("bat a", Some("nicer".into()));
        let r = r.ok().flatten().unwrap_or_else(|| panic!("a rewrite"));
        assert_eq!(r.action, Action::Rewrite);
        assert_eq!(
            Value::Object(r.updated_input.unwrap_or_default()),
            json!({"command": "bat a", "timeout": 5})
        );
        assert_eq!(bash.ask(), Ok(None));
        assert!(
            bash.block("no")
                .is_ok_and(|r| r.is_some_and(|r| r.is_block()))
        );

        let stop = Event::new(EventKind::Stop, json!({}), EventContext::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let err = stop.set_tool_input("timeout", 5, None).unwrap_err();
        assert!(err.0.contains("Stop"), "{err}");
    }
}

//! The JSON Claude Code reads from a hook command's stdout: the one module that writes its
//! shape (every key, every nesting). Which shape an answer takes is decided elsewhere, typed
//! (capt-hook-core's envelope module picks one from the hooks' folded result); the `hook`
//! client's own fallback for a call nothing could check ([`unchecked`]) is built here too,
//! because the client links no engine.
//!
//! Values are built in the order their fields are set (the workspace's `serde_json` keeps
//! insertion order), so an answer prints the same bytes every time.

use serde_json::{Map, Value};

use crate::failure::CANNOT_ASK;

/// Top-level field: a note for the user.
const SYSTEM_MESSAGE: &str = "systemMessage";
/// Top-level field: the event's own answer.
const SPECIFIC: &str = "hookSpecificOutput";
/// Field of [`SPECIFIC`]: text for the agent.
const CONTEXT: &str = "additionalContext";

/// `permissionDecision`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// The call goes ahead without a prompt.
    Allow,
    /// The call is refused, with the reason.
    Deny,
    /// Claude Code's own permission prompt decides.
    Ask,
}

impl Permission {
    fn as_str(self) -> &'static str {
        match self {
            Permission::Allow => "allow",
            Permission::Deny => "deny",
            Permission::Ask => "ask",
        }
    }
}

/// `hookSpecificOutput` for one event, built field by field.
#[derive(Debug, Clone, PartialEq)]
pub struct Specific(Map<String, Value>);

impl Specific {
    /// The object for `event`, naming it (`hookEventName`), as Claude Code requires.
    pub fn new(event: &str) -> Specific {
        let mut inner = Map::new();
        inner.insert("hookEventName".into(), event.into());
        Specific(inner)
    }

    fn set(mut self, key: &str, value: Value) -> Specific {
        self.0.insert(key.into(), value);
        self
    }

    /// `permissionDecision` (PreToolUse, PreSkillShellCommand, PreModelSwitch).
    pub fn permission(self, decision: Permission) -> Specific {
        self.set("permissionDecision", decision.as_str().into())
    }

    /// `permissionDecisionReason` (a string, or null when a hook gave none).
    pub fn permission_reason(self, reason: impl Into<Value>) -> Specific {
        self.set("permissionDecisionReason", reason.into())
    }

    /// A refusal with its reason: how PreToolUse, PreSkillShellCommand and PreModelSwitch deny.
    pub fn deny(self, reason: impl Into<Value>) -> Specific {
        self.permission(Permission::Deny).permission_reason(reason)
    }

    /// `additionalContext`: text for the agent.
    pub fn context(self, text: impl Into<Value>) -> Specific {
        self.set(CONTEXT, text.into())
    }

    /// Whether `additionalContext` is set.
    pub fn has_context(&self) -> bool {
        self.0.contains_key(CONTEXT)
    }

    /// `updatedInput`: the tool input as rewritten.
    pub fn updated_input(self, input: Map<String, Value>) -> Specific {
        self.set("updatedInput", Value::Object(input))
    }

    /// `updatedToolOutput` (PostToolUse): the tool's output as rewritten.
    pub fn updated_tool_output(self, output: Map<String, Value>) -> Specific {
        self.set("updatedToolOutput", Value::Object(output))
    }

    /// `retry: true` (PermissionDenied): the model may try the call again.
    pub fn retry(self) -> Specific {
        self.set("retry", true.into())
    }

    /// PermissionRequest's `decision`: its `behavior`, with the message the dialog would have
    /// shown (a deny's) and the input as rewritten (an allow's), if any.
    pub fn dialog(
        self,
        behavior: Permission,
        message: Option<String>,
        updated_input: Option<Map<String, Value>>,
    ) -> Specific {
        let mut d = Map::new();
        d.insert("behavior".into(), behavior.as_str().into());
        if let Some(m) = message {
            d.insert("message".into(), m.into());
        }
        if let Some(input) = updated_input {
            d.insert("updatedInput".into(), Value::Object(input));
        }
        self.set("decision", Value::Object(d))
    }

    /// `displayContent` (MessageDisplay): the text shown instead.
    pub fn display_content(self, shown: Value) -> Specific {
        self.set("displayContent", shown)
    }

    /// An elicitation's `action` (accept or decline), with the `content` an accept answers.
    pub fn elicitation(self, accept: bool, content: Option<Map<String, Value>>) -> Specific {
        let out = self.set("action", if accept { "accept" } else { "decline" }.into());
        match content {
            Some(c) => out.set("content", Value::Object(c)),
            None => out,
        }
    }

    /// One of the fields a rewrite may set on `event` ([`rewritable_fields`]), copied as the
    /// hook wrote it.
    pub fn rewritten(self, key: &str, value: Value) -> Specific {
        self.set(key, value)
    }

    /// True when nothing but the event's name is set.
    pub fn is_bare(&self) -> bool {
        self.0.len() == 1
    }

    /// The whole output: `{"hookSpecificOutput": …}`.
    pub fn into_value(self) -> Value {
        Answer::default().specific(self).into_value()
    }

    /// The whole output with a note for the user beside it.
    pub fn with_notice(self, text: String) -> Value {
        Answer::default().specific(self).notice(text).into_value()
    }
}

/// A whole output, built field by field (top-level fields print in the order they are set).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer(Map<String, Value>);

impl Answer {
    fn set(mut self, key: &str, value: Value) -> Answer {
        self.0.insert(key.into(), value);
        self
    }

    /// `decision: "block"` with its `reason` (a string, or null when a hook gave none).
    pub fn block(self, reason: impl Into<Value>) -> Answer {
        self.set("decision", "block".into())
            .set("reason", reason.into())
    }

    /// `systemMessage`: a note for the user.
    pub fn notice(self, text: impl Into<Value>) -> Answer {
        self.set(SYSTEM_MESSAGE, text.into())
    }

    /// `continue: false` with its `stopReason`: the session stops.
    pub fn halt(self, reason: impl Into<Value>) -> Answer {
        self.set("continue", false.into())
            .set("stopReason", reason.into())
    }

    /// `hookSpecificOutput`.
    pub fn specific(self, s: Specific) -> Answer {
        self.set(SPECIFIC, Value::Object(s.0))
    }

    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The output as a JSON object.
    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }

    /// The output as a JSON value.
    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

/// Fields of `event`'s output that a rewrite may set besides a decision (a session title,
/// paths to watch, a first user message); they are copied into `hookSpecificOutput`.
pub fn rewritable_fields(event: &str) -> &'static [&'static str] {
    match event {
        "SessionStart" => &[
            CONTEXT,
            "initialUserMessage",
            "sessionTitle",
            "watchPaths",
            "reloadSkills",
        ],
        "UserPromptSubmit" => &["sessionTitle"],
        "CwdChanged" | "FileChanged" => &["watchPaths"],
        _ => &[],
    }
}

/// `{"decision": "block", "reason": …}`: the top-level block (a string, or null when a hook
/// gave no reason).
pub fn block(reason: impl Into<Value>) -> Value {
    Answer::default().block(reason).into_value()
}

/// `{"systemMessage": …}`: a note for the user and nothing else.
pub fn notice(text: String) -> Value {
    Answer::default().notice(text).into_value()
}

/// Adds to `out` (an output object, possibly empty) the notes an answer carries besides its
/// verdict: each notice joins `systemMessage` after the text it holds, each context line joins
/// `hookSpecificOutput.additionalContext` (created for `event` when missing).
pub fn add_notes(out: &mut Map<String, Value>, event: &str, notices: &[&str], context: &[&str]) {
    for notice in notices.iter().filter(|n| !n.is_empty()) {
        join_text(out, SYSTEM_MESSAGE, notice);
    }
    for text in context.iter().filter(|c| !c.is_empty()) {
        let inner = out
            .entry(SPECIFIC)
            .or_insert_with(|| Specific::new(event).0.into());
        if let Value::Object(inner) = inner {
            join_text(inner, CONTEXT, text);
        }
    }
}

/// Sets `key` to `text`, after the text it already holds (a blank line between).
fn join_text(map: &mut Map<String, Value>, key: &str, text: &str) {
    let joined = match map.get(key).and_then(Value::as_str) {
        Some(prior) if !prior.is_empty() => format!("{prior}\n\n{text}"),
        _ => text.to_owned(),
    };
    map.insert(key.into(), joined.into());
}

/// The answer for a guarded call that could not be checked, with `reason`: PreToolUse asks the
/// user (carrying the `context` and the rewrite the hooks that did answer gave), a skill's
/// command is refused (it cannot wait for a prompt), PermissionRequest shows its dialog with the
/// reason as a `systemMessage`. `None` for an event that is not guarded.
pub fn unchecked(
    event: &str,
    reason: &str,
    context: Option<&str>,
    updated_input: Option<&Map<String, Value>>,
) -> Option<Value> {
    Some(match event {
        "PreToolUse" => {
            let mut s = Specific::new(event)
                .permission(Permission::Ask)
                .permission_reason(reason);
            if let Some(c) = context.filter(|c| !c.is_empty()) {
                s = s.context(c);
            }
            if let Some(input) = updated_input {
                s = s.updated_input(input.clone());
            }
            s.into_value()
        }
        "PreSkillShellCommand" => Specific::new(event)
            .deny(format!("{reason} ({CANNOT_ASK})"))
            .into_value(),
        "PermissionRequest" => notice(reason.to_owned()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_print_in_the_order_they_were_set() {
        let warn = Specific::new("PreToolUse")
            .context("w")
            .permission(Permission::Allow);
        assert_eq!(
            warn.into_value().to_string(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"w","permissionDecision":"allow"}}"#
        );
        assert_eq!(
            Specific::new("PermissionRequest")
                .dialog(Permission::Deny, Some("m".into()), None)
                .into_value()
                .to_string(),
            r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"m"}}}"#
        );
        assert_eq!(
            block(Value::Null).to_string(),
            r#"{"decision":"block","reason":null}"#
        );
    }

    #[test]
    fn notes_join_what_is_there_or_start_it() {
        let mut out = Map::new();
        add_notes(&mut out, "SessionStart", &["a", "", "b"], &["c"]);
        assert_eq!(
            Value::Object(out.clone()).to_string(),
            r#"{"systemMessage":"a\n\nb","hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"c"}}"#
        );
        add_notes(&mut out, "SessionStart", &["d"], &["e"]);
        assert_eq!(out["systemMessage"], "a\n\nb\n\nd");
        assert_eq!(out[SPECIFIC][CONTEXT], "c\n\ne");
    }

    #[test]
    fn an_unchecked_call_carries_what_the_hooks_that_answered_said() {
        let mut input = Map::new();
        input.insert("command".into(), "ls".into());
        let v = unchecked("PreToolUse", "r", Some("ctx"), Some(&input)).unwrap();
        assert_eq!(
            v.to_string(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"r","additionalContext":"ctx","updatedInput":{"command":"ls"}}}"#
        );
        assert_eq!(unchecked("Stop", "r", None, None), None);
    }
}

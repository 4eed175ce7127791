//! Renders a folded result as the output Claude Code reads for each event.

use serde_json::{Map, Value, json};

use crate::events::EventKind;
use crate::result::{Action, HookResult};

/// What a hook command prints, and how it exits.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A JSON envelope, printed on one line.
    Json(Value),
    /// Raw text (PreCompact appends it to the compaction instructions; WorktreeCreate reads a
    /// path).
    Text(String),
    /// Exit 2 with this text on stderr: the only blocking form TaskCompleted, TeammateIdle and
    /// WorktreeCreate honour.
    Exit2(String),
}

impl Output {
    /// The bytes to print on stdout, without a trailing newline.
    pub fn render(&self) -> String {
        match self {
            Output::Json(v) => v.to_string(),
            Output::Text(t) => t.clone(),
            Output::Exit2(_) => String::new(),
        }
    }

    /// The text for stderr and the exit code: `Some` only for [`Output::Exit2`].
    pub fn blocking_stderr(&self) -> Option<&str> {
        match self {
            Output::Exit2(reason) => Some(reason),
            _ => None,
        }
    }
}

/// How an event's verdicts reach Claude Code: the decision-control family the reference puts it
/// in. This table is the one owner of that fact; `docs/events.md` is checked against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `permissionDecision` deny/allow, `updatedInput`, `additionalContext`.
    PreToolUse,
    /// `decision.behavior` allow/deny inside `hookSpecificOutput`.
    PermissionRequest,
    /// PreSkillShellCommand: `permissionDecision` deny with a reason, or nothing. Claude Code
    /// refuses the command for any `updatedInput`, `ask` or `defer` and reads no context, so a
    /// rewrite is a deny naming the command to run instead and a warning is a `systemMessage`.
    SkillShell,
    /// PreModelSwitch: `permissionDecision` deny/allow with a reason; no context, no rewrite.
    ModelSwitch,
    /// `retry: true` for an allow; nothing can block.
    PermissionDenied,
    /// Top-level `decision: "block"` + `reason`; warnings as `additionalContext`.
    Decision,
    /// Top-level `decision: "block"`; no context field, so warnings become `systemMessage`.
    DecisionNoContext,
    /// Stop and SubagentStop: every result but an allow keeps the agent going.
    Stop,
    /// `decision: "block"`, or raw text appended to the compaction instructions.
    PreCompact,
    /// Exit 2 with feedback on stderr blocks; JSON cannot.
    ExitCode,
    /// Context only: blocks and warnings both become `additionalContext`.
    Context,
    /// `displayContent` replaces the text on screen.
    MessageDisplay,
    /// The last stdout line is the new worktree's path; exit 2 fails the creation.
    WorktreeCreate,
    /// `action` accept/decline/cancel with `content`.
    Elicitation,
    /// No decision control: messages go to `systemMessage`.
    Notice,
}

impl Shape {
    /// The shape of `kind`'s output.
    pub fn of(kind: EventKind) -> Shape {
        use EventKind::*;
        match kind {
            PreToolUse => Shape::PreToolUse,
            PermissionRequest => Shape::PermissionRequest,
            PreSkillShellCommand => Shape::SkillShell,
            PreModelSwitch => Shape::ModelSwitch,
            PermissionDenied => Shape::PermissionDenied,
            UserPromptSubmit | UserPromptExpansion | PostToolUse | PostToolBatch => Shape::Decision,
            TaskCreated | ConfigChange => Shape::DecisionNoContext,
            Stop | SubagentStop => Shape::Stop,
            PreCompact => Shape::PreCompact,
            TaskCompleted | TeammateIdle => Shape::ExitCode,
            // PostToolUseFailure cannot block: a block still reaches Claude as context.
            SessionStart | Setup | SubagentStart | PostToolUseFailure | PostModelSwitch => {
                Shape::Context
            }
            MessageDisplay => Shape::MessageDisplay,
            WorktreeCreate => Shape::WorktreeCreate,
            Elicitation | ElicitationResult => Shape::Elicitation,
            Notification | SessionEnd | PostCompact | InstructionsLoaded | StopFailure
            | CwdChanged | DirectoryAdded | FileChanged | WorktreeRemove | ResourcePressure => {
                Shape::Notice
            }
        }
    }

    /// True when a block verdict stops what the event is about.
    pub fn can_block(self) -> bool {
        !matches!(
            self,
            Shape::PermissionDenied | Shape::Context | Shape::MessageDisplay | Shape::Notice
        )
    }
}

/// Fields a rewrite may set on events whose output has more than a decision (a session title,
/// paths to watch, a first user message); they are copied into `hookSpecificOutput`.
fn extra_fields(kind: EventKind) -> &'static [&'static str] {
    match kind {
        EventKind::SessionStart => &[
            "additionalContext",
            "initialUserMessage",
            "sessionTitle",
            "watchPaths",
            "reloadSkills",
        ],
        EventKind::UserPromptSubmit => &["sessionTitle"],
        EventKind::CwdChanged | EventKind::FileChanged => &["watchPaths"],
        _ => &[],
    }
}

fn msg(r: &HookResult) -> Value {
    r.message.clone().map(Value::String).unwrap_or(Value::Null)
}

fn text(r: &HookResult) -> Option<String> {
    r.message.clone().filter(|m| !m.is_empty())
}

fn specific(kind: EventKind, fields: Vec<(&str, Value)>) -> Value {
    let mut inner = Map::new();
    inner.insert("hookEventName".into(), kind.name().into());
    for (k, v) in fields {
        inner.insert(k.into(), v);
    }
    json!({ "hookSpecificOutput": inner })
}

fn context(kind: EventKind, text: Option<String>) -> Option<Value> {
    text.map(|t| specific(kind, vec![("additionalContext", t.into())]))
}

fn notice(text: Option<String>) -> Option<Value> {
    text.map(|t| json!({ "systemMessage": t }))
}

fn top_block(r: &HookResult) -> Value {
    json!({"decision": "block", "reason": msg(r)})
}

fn pre_tool_use(r: &HookResult) -> Option<Value> {
    let kind = EventKind::PreToolUse;
    Some(match r.action {
        Action::Block => specific(
            kind,
            vec![
                ("permissionDecision", "deny".into()),
                ("permissionDecisionReason", msg(r)),
            ],
        ),
        // A warning adds context; only a hook that opted in (`approve`) also grants permission.
        Action::Warn => {
            let mut fields = vec![("additionalContext", msg(r))];
            if r.approve {
                fields.push(("permissionDecision", "allow".into()));
            }
            specific(kind, fields)
        }
        Action::Allow => {
            let mut fields = vec![("permissionDecision", "allow".into())];
            if let Some(m) = text(r) {
                fields.push(("additionalContext", m.into()));
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
    })
}

/// The reason a rewrite gives on PreSkillShellCommand, where Claude Code cannot apply one: the
/// command as it would have been rewritten, so the user (or the agent) can run that instead.
pub fn unrewritable(r: &HookResult) -> String {
    let command = r
        .updated_input
        .as_ref()
        .and_then(|u| u.get("command"))
        .and_then(Value::as_str);
    let mut reason = match command {
        Some(c) => format!(
            "not run: a hook rewrites this command, and a skill's command cannot be changed \
             before it runs; run this instead: {c}"
        ),
        None => "not run: a hook rewrites this command, and a skill's command cannot be \
                 changed before it runs"
            .to_owned(),
    };
    if let Some(n) = r.note.as_deref().filter(|n| !n.is_empty()) {
        reason.push_str(&format!(" ({n})"));
    }
    reason
}

fn skill_shell(r: &HookResult) -> Option<Value> {
    let deny = |reason: Value| {
        specific(
            EventKind::PreSkillShellCommand,
            vec![
                ("permissionDecision", "deny".into()),
                ("permissionDecisionReason", reason),
            ],
        )
    };
    match r.action {
        Action::Block => Some(deny(msg(r))),
        Action::Rewrite => Some(deny(unrewritable(r).into())),
        // The command runs unless a hook refuses it; a warning has no context field to ride.
        Action::Warn => notice(text(r)),
        Action::Allow => None,
    }
}

fn model_switch(r: &HookResult) -> Option<Value> {
    let kind = EventKind::PreModelSwitch;
    match r.action {
        Action::Block => Some(specific(
            kind,
            vec![
                ("permissionDecision", "deny".into()),
                ("permissionDecisionReason", msg(r)),
            ],
        )),
        // An allow also skips Claude Code's own "the cache is lost" confirmation.
        Action::Allow => {
            let mut fields = vec![("permissionDecision", "allow".into())];
            if let Some(m) = text(r) {
                fields.push(("permissionDecisionReason", m.into()));
            }
            Some(specific(kind, fields))
        }
        Action::Warn => notice(text(r)),
        Action::Rewrite => notice(r.note.clone().filter(|n| !n.is_empty()).or_else(|| text(r))),
    }
}

fn permission_request(r: &HookResult) -> Option<Value> {
    let decision = match r.action {
        Action::Block => {
            let mut d = Map::new();
            d.insert("behavior".into(), "deny".into());
            if let Some(m) = text(r) {
                d.insert("message".into(), m.into());
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
    Some(specific(
        EventKind::PermissionRequest,
        vec![("decision", decision)],
    ))
}

/// A rewrite on an event that is not about a tool input: its note as context (where the event
/// has context) plus the event's extra fields from the rewritten object.
fn rewrite_extras(kind: EventKind, r: &HookResult, with_context: bool) -> Option<Value> {
    let mut fields: Vec<(&str, Value)> = Vec::new();
    if let Some(input) = &r.updated_input {
        for key in extra_fields(kind) {
            if let Some(v) = input.get(*key) {
                fields.push((key, v.clone()));
            }
        }
    }
    let note = r.note.clone().filter(|n| !n.is_empty()).or_else(|| text(r));
    if fields.is_empty() {
        return if with_context {
            context(kind, note)
        } else {
            notice(note)
        };
    }
    if with_context
        && let Some(n) = note.clone()
        && !fields.iter().any(|(k, _)| *k == "additionalContext")
    {
        fields.push(("additionalContext", n.into()));
    }
    let mut out = specific(kind, fields);
    if !with_context && let (Some(n), Value::Object(map)) = (note, &mut out) {
        map.insert("systemMessage".into(), n.into());
    }
    Some(out)
}

fn render_result(kind: EventKind, r: &HookResult) -> Option<Output> {
    if r.is_notice_only() {
        return None;
    }
    let json = match Shape::of(kind) {
        Shape::PreToolUse => pre_tool_use(r),
        Shape::PermissionRequest => permission_request(r),
        Shape::SkillShell => skill_shell(r),
        Shape::ModelSwitch => model_switch(r),
        Shape::PermissionDenied => match r.action {
            Action::Allow | Action::Rewrite => Some(specific(kind, vec![("retry", true.into())])),
            // The denial stands either way; the user still sees why.
            Action::Block | Action::Warn => notice(text(r)),
        },
        Shape::Decision => match r.action {
            Action::Block => Some(top_block(r)),
            Action::Warn | Action::Allow => context(kind, text(r)),
            Action::Rewrite if kind == EventKind::PostToolUse => {
                let mut fields = vec![(
                    "updatedToolOutput",
                    Value::Object(r.updated_input.clone().unwrap_or_default()),
                )];
                if let Some(n) = r.note.as_ref().filter(|n| !n.is_empty()) {
                    fields.push(("additionalContext", n.clone().into()));
                }
                Some(specific(kind, fields))
            }
            Action::Rewrite => rewrite_extras(kind, r, true),
        },
        Shape::DecisionNoContext => match r.action {
            Action::Block => Some(top_block(r)),
            _ => notice(text(r)),
        },
        // Any result but an allow keeps the agent going; an allow says nothing.
        Shape::Stop => match r.action {
            Action::Allow => return None,
            _ => Some(top_block(r)),
        },
        Shape::PreCompact => match r.action {
            Action::Block => Some(top_block(r)),
            _ => return text(r).map(Output::Text),
        },
        Shape::ExitCode => match r.action {
            Action::Block => return Some(Output::Exit2(text(r).unwrap_or_default())),
            _ => notice(text(r)),
        },
        Shape::Context => match r.action {
            Action::Rewrite => rewrite_extras(kind, r, true),
            _ => context(kind, text(r)),
        },
        Shape::MessageDisplay => match r.action {
            Action::Rewrite => {
                let shown = r.message.clone().map(Value::String).or_else(|| {
                    r.updated_input.as_ref().and_then(|u| {
                        ["displayContent", "delta", "message", "content"]
                            .iter()
                            .find_map(|k| u.get(*k).cloned())
                    })
                })?;
                Some(specific(kind, vec![("displayContent", shown)]))
            }
            _ => notice(text(r)),
        },
        Shape::WorktreeCreate => {
            return match r.action {
                Action::Block => Some(Output::Exit2(text(r).unwrap_or_default())),
                // Anything but a path on stdout would be read as the path.
                Action::Rewrite => r
                    .updated_input
                    .as_ref()
                    .and_then(|u| u.get("worktreePath").or_else(|| u.get("path")))
                    .and_then(Value::as_str)
                    .map(|p| Output::Text(p.to_owned())),
                Action::Allow | Action::Warn => None,
            };
        }
        Shape::Elicitation => match r.action {
            Action::Block => Some(specific(kind, vec![("action", "decline".into())])),
            Action::Allow => Some(specific(kind, vec![("action", "accept".into())])),
            Action::Rewrite => Some(specific(
                kind,
                vec![
                    ("action", "accept".into()),
                    (
                        "content",
                        Value::Object(r.updated_input.clone().unwrap_or_default()),
                    ),
                ],
            )),
            Action::Warn => notice(text(r)),
        },
        Shape::Notice => match r.action {
            Action::Rewrite => rewrite_extras(kind, r, false),
            _ => notice(text(r)),
        },
    };
    json.map(Output::Json)
}

/// The output for `kind` given the folded result; `None` prints nothing.
pub fn envelope(kind: EventKind, result: Option<&HookResult>) -> Option<Output> {
    let r = result?;
    let out = render_result(kind, r);
    let notice = r.system_message.as_ref().filter(|n| !n.is_empty());
    match (out, notice) {
        (out, None) => out,
        (Some(Output::Json(Value::Object(mut map))), Some(n)) => {
            match map.get("systemMessage").and_then(Value::as_str) {
                Some(own) if !own.is_empty() => {
                    let joined = format!("{own}\n\n{n}");
                    map.insert("systemMessage".into(), joined.into());
                }
                _ => {
                    map.insert("systemMessage".into(), n.clone().into());
                }
            }
            Some(Output::Json(Value::Object(map)))
        }
        // Raw text, a path or an exit code has nowhere to carry a notice.
        (Some(other), Some(_)) => Some(other),
        // WorktreeCreate reads stdout as a path: JSON there would be taken for one.
        (None, Some(_)) if kind == EventKind::WorktreeCreate => None,
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
            render(EventKind::PreToolUse, HookResult::warn("w").approving()).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"w","permissionDecision":"allow"}}"#
        );
        assert_eq!(
            render(EventKind::PreToolUse, HookResult::warn("w")).unwrap(),
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

    #[test]
    fn skill_shell_commands_are_refused_or_left_alone() {
        let kind = EventKind::PreSkillShellCommand;
        assert_eq!(
            render(kind, HookResult::block("no")).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreSkillShellCommand","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
        );
        assert_eq!(render(kind, HookResult::allow()), None);
        assert_eq!(
            render(kind, HookResult::warn("careful")).unwrap(),
            r#"{"systemMessage":"careful"}"#
        );
        let mut input = Map::new();
        input.insert("command".into(), "rg --files".into());
        let out = render(kind, HookResult::rewrite(input, Some("faster".into()))).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let inner = &v["hookSpecificOutput"];
        assert_eq!(inner["permissionDecision"], "deny");
        assert!(inner.get("updatedInput").is_none(), "{out}");
        let reason = inner["permissionDecisionReason"].as_str().unwrap();
        assert!(
            reason.contains("run this instead: rg --files") && reason.contains("faster"),
            "{reason}"
        );
    }

    #[test]
    fn model_switches_are_refused_or_allowed() {
        let kind = EventKind::PreModelSwitch;
        assert_eq!(
            render(kind, HookResult::block("stay on sonnet")).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreModelSwitch","permissionDecision":"deny","permissionDecisionReason":"stay on sonnet"}}"#
        );
        assert_eq!(
            render(kind, HookResult::allow()).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreModelSwitch","permissionDecision":"allow"}}"#
        );
        assert_eq!(
            render(EventKind::PostModelSwitch, HookResult::warn("w")).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PostModelSwitch","additionalContext":"w"}}"#
        );
    }

    /// `docs/events.md` lists every event once, and its "can block" column says what this
    /// table does.
    #[test]
    fn events_doc_matches_the_shape_table() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/events.md"),
        )
        .unwrap();
        for kind in EventKind::ALL {
            let rows: Vec<&str> = doc
                .lines()
                .filter(|l| l.starts_with(&format!("| {} |", kind.name())))
                .collect();
            assert_eq!(rows.len(), 1, "{kind} must have one row in docs/events.md");
            let can_block = rows[0].split('|').nth(3).map(str::trim);
            let expected = if Shape::of(kind).can_block() {
                "yes"
            } else {
                "no"
            };
            assert_eq!(can_block, Some(expected), "{kind}");
        }
    }
}

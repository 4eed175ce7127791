//! Renders a folded result as the output Claude Code reads for each event: the one module that
//! decides which shape an answer takes (the JSON itself is written by
//! `capt_hook_proto::envelope`, which the `hook` client links too). Everything an answer carries is gathered typed first (the hooks'
//! result or an unchecked call, the typed [`Decision`], [`Notes`] from the project and the host)
//! and rendered here once; nobody downstream reads or edits the JSON.

use capt_hook_proto::envelope::{self as wire, Permission, Specific};
use serde_json::{Map, Value};

use crate::events::EventKind;
use crate::result::{Action, HookResult};

mod classic;
pub mod typed;

pub use capt_hook_proto::Decision;
pub use capt_hook_proto::failure::CANNOT_ASK;
pub use classic::classic;

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

fn msg(r: &HookResult) -> Value {
    r.message.clone().map(Value::String).unwrap_or(Value::Null)
}

fn text(r: &HookResult) -> Option<String> {
    r.message.clone().filter(|m| !m.is_empty())
}

/// The rewrite's note, when it has one.
fn note(r: &HookResult) -> Option<String> {
    r.note.clone().filter(|n| !n.is_empty())
}

fn context(kind: EventKind, text: Option<String>) -> Option<Value> {
    text.map(|t| Specific::new(kind.name()).context(t).into_value())
}

fn notice(text: Option<String>) -> Option<Value> {
    text.map(wire::notice)
}

fn top_block(r: &HookResult) -> Value {
    wire::block(msg(r))
}

fn pre_tool_use(r: &HookResult) -> Option<Value> {
    let s = Specific::new(EventKind::PreToolUse.name());
    Some(
        match r.action {
            Action::Block => s.deny(msg(r)),
            // A warning adds context; only a hook that opted in (`approve`) also grants
            // permission.
            Action::Warn => {
                let s = s.context(msg(r));
                if r.approve {
                    s.permission(Permission::Allow)
                } else {
                    s
                }
            }
            Action::Allow => {
                let s = s.permission(Permission::Allow);
                match text(r) {
                    Some(m) => s.context(m),
                    None => s,
                }
            }
            Action::Rewrite => {
                let s = s
                    .permission(Permission::Allow)
                    .updated_input(r.updated_input.clone().unwrap_or_default());
                match note(r) {
                    Some(n) => s.context(n),
                    None => s,
                }
            }
        }
        .into_value(),
    )
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
    if let Some(n) = note(r) {
        reason.push_str(&format!(" ({n})"));
    }
    reason
}

fn skill_shell(r: &HookResult) -> Option<Value> {
    let s = Specific::new(EventKind::PreSkillShellCommand.name());
    match r.action {
        Action::Block => Some(s.deny(msg(r)).into_value()),
        Action::Rewrite => Some(s.deny(unrewritable(r)).into_value()),
        // The command runs unless a hook refuses it; a warning has no context field to ride.
        Action::Warn => notice(text(r)),
        Action::Allow => None,
    }
}

fn model_switch(r: &HookResult) -> Option<Value> {
    let s = Specific::new(EventKind::PreModelSwitch.name());
    match r.action {
        Action::Block => Some(s.deny(msg(r)).into_value()),
        // An allow also skips Claude Code's own "the cache is lost" confirmation.
        Action::Allow => {
            let s = s.permission(Permission::Allow);
            Some(
                match text(r) {
                    Some(m) => s.permission_reason(m),
                    None => s,
                }
                .into_value(),
            )
        }
        Action::Warn => notice(text(r)),
        Action::Rewrite => notice(note(r).or_else(|| text(r))),
    }
}

fn permission_request(r: &HookResult) -> Option<Value> {
    let s = Specific::new(EventKind::PermissionRequest.name());
    let s = match r.action {
        Action::Block => s.dialog(Permission::Deny, text(r), None),
        // A warning cannot answer a dialog: the dialog shows.
        Action::Warn => return None,
        Action::Allow => s.dialog(Permission::Allow, None, None),
        Action::Rewrite => s.dialog(
            Permission::Allow,
            None,
            Some(r.updated_input.clone().unwrap_or_default()),
        ),
    };
    Some(s.into_value())
}

/// A rewrite on an event that is not about a tool input: its note as context (where the event
/// has context) plus the event's extra fields from the rewritten object.
fn rewrite_extras(kind: EventKind, r: &HookResult, with_context: bool) -> Option<Value> {
    let mut s = Specific::new(kind.name());
    let mut copied = false;
    if let Some(input) = &r.updated_input {
        for key in wire::rewritable_fields(kind.name()) {
            if let Some(v) = input.get(*key) {
                s = s.rewritten(key, v.clone());
                copied = true;
            }
        }
    }
    let note = note(r).or_else(|| text(r));
    if !copied {
        return if with_context {
            context(kind, note)
        } else {
            notice(note)
        };
    }
    Some(match note {
        Some(n) if with_context && !s.has_context() => s.context(n).into_value(),
        Some(n) if !with_context => s.with_notice(n),
        _ => s.into_value(),
    })
}

fn render_result(kind: EventKind, r: &HookResult) -> Option<Output> {
    if r.is_notice_only() {
        return None;
    }
    let s = Specific::new(kind.name());
    let json = match Shape::of(kind) {
        Shape::PreToolUse => pre_tool_use(r),
        Shape::PermissionRequest => permission_request(r),
        Shape::SkillShell => skill_shell(r),
        Shape::ModelSwitch => model_switch(r),
        Shape::PermissionDenied => match r.action {
            Action::Allow | Action::Rewrite => Some(s.retry().into_value()),
            // The denial stands either way; the user still sees why.
            Action::Block | Action::Warn => notice(text(r)),
        },
        Shape::Decision => match r.action {
            Action::Block => Some(top_block(r)),
            Action::Warn | Action::Allow => context(kind, text(r)),
            Action::Rewrite if kind == EventKind::PostToolUse => {
                let s = s.updated_tool_output(r.updated_input.clone().unwrap_or_default());
                Some(
                    match note(r) {
                        Some(n) => s.context(n),
                        None => s,
                    }
                    .into_value(),
                )
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
                // What the hook shows instead: its message, or the text field it rewrote.
                let shown = r.message.clone().map(Value::String).or_else(|| {
                    r.updated_input.as_ref().and_then(|u| {
                        ["displayContent", "delta", "message", "content"]
                            .iter()
                            .find_map(|k| u.get(*k).cloned())
                    })
                })?;
                Some(s.display_content(shown).into_value())
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
            Action::Block => Some(s.elicitation(false, None).into_value()),
            Action::Allow => Some(s.elicitation(true, None).into_value()),
            Action::Rewrite => Some(
                s.elicitation(true, Some(r.updated_input.clone().unwrap_or_default()))
                    .into_value(),
            ),
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
    match r.system_message.as_ref().filter(|n| !n.is_empty()) {
        None => out,
        Some(n) => with_notes(
            kind,
            out,
            &Notes {
                notices: vec![n.clone()],
                context: Vec::new(),
            },
        ),
    }
}

/// The decision [`envelope`] gives the call, typed: deny, allow, or none. Only the events that
/// decide a call (PreToolUse, PermissionRequest, PreSkillShellCommand, PreModelSwitch) give one.
pub fn decision(kind: EventKind, result: Option<&HookResult>) -> Decision {
    let Some(r) = result.filter(|r| !r.is_notice_only()) else {
        return Decision::None;
    };
    match (Shape::of(kind), r.action) {
        (
            Shape::PreToolUse | Shape::PermissionRequest | Shape::SkillShell | Shape::ModelSwitch,
            Action::Block,
        ) => Decision::Deny,
        // A skill's command cannot be rewritten: the rewrite refuses it, naming the command.
        (Shape::SkillShell, Action::Rewrite) => Decision::Deny,
        (Shape::PreToolUse, Action::Warn) if r.approve => Decision::Allow,
        (Shape::PreToolUse | Shape::PermissionRequest, Action::Allow | Action::Rewrite)
        | (Shape::ModelSwitch, Action::Allow) => Decision::Allow,
        _ => Decision::None,
    }
}

/// What an answer tells besides the hooks' verdict, in order: notices for the user (joined into
/// `systemMessage` after the verdict's own) and text for the agent (joined into
/// `additionalContext`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Notes {
    /// For the user: load errors, pack notices, the host's newer-release notice, …
    pub notices: Vec<String>,
    /// For the agent (a headless session shows the user no `systemMessage`).
    pub context: Vec<String>,
}

impl Notes {
    /// True when there is nothing to tell.
    pub fn is_empty(&self) -> bool {
        self.notices
            .iter()
            .chain(&self.context)
            .all(String::is_empty)
    }
}

/// Whether an answer of `kind` whose output is `out` can carry [`Notes`]: raw text and exit-2
/// feedback have nowhere to put them, and WorktreeCreate reads stdout as a path, so JSON there
/// would be taken for one. A notice that cannot ride waits for a later event.
pub fn carries_notes(kind: EventKind, out: Option<&Output>) -> bool {
    kind != EventKind::WorktreeCreate && matches!(out, None | Some(Output::Json(Value::Object(_))))
}

/// `out` with `notes` added: each notice joins `systemMessage` (after any the output has), each
/// context line joins `hookSpecificOutput.additionalContext`. An output that cannot carry them
/// ([`carries_notes`]) is returned as it is.
pub fn with_notes(kind: EventKind, out: Option<Output>, notes: &Notes) -> Option<Output> {
    if notes.is_empty() || !carries_notes(kind, out.as_ref()) {
        return out;
    }
    let mut map = match out {
        Some(Output::Json(Value::Object(map))) => map,
        None => Map::new(),
        other => return other,
    };
    let notices: Vec<&str> = notes.notices.iter().map(String::as_str).collect();
    let context: Vec<&str> = notes.context.iter().map(String::as_str).collect();
    wire::add_notes(&mut map, kind.name(), &notices, &context);
    Some(Output::Json(Value::Object(map)))
}

/// A guarded call that could not be fully evaluated (a hook that failed, a hook file that did
/// not load, an unreadable payload) stays with the user, visibly, erring towards the guard.
///
/// PreToolUse answers `permissionDecision: "ask"` with the reason, so Claude Code's own prompt
/// decides (an ask also forces the prompt in auto mode). PermissionRequest has no ask: it gives
/// no decision, so the dialog shows, and a `systemMessage` says why. PreSkillShellCommand cannot
/// wait for a prompt (Claude Code refuses the command for an ask), so it denies, saying the
/// command could not be checked: fail closed, visibly.
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

    /// The answer for `kind`; `None` for an event that is not guarded, which has no decision to
    /// withhold.
    pub fn output(&self, kind: EventKind) -> Option<Output> {
        let notice = self.notice.as_deref().filter(|n| !n.is_empty());
        // The client's own answer when nothing could check the call, with what the hooks that
        // did answer said: PreToolUse asks, a skill's command is refused, PermissionRequest
        // shows its dialog with the reason.
        let v = wire::unchecked(
            kind.name(),
            &self.reason,
            self.context.as_deref(),
            self.updated_input.as_ref(),
        )?;
        with_notes(kind, Some(Output::Json(v)), &Notes::notice(notice))
    }

    /// The decision [`Unchecked::output`] gives: the user decides (ask, or PermissionRequest's
    /// dialog), except for a skill's command, which is refused.
    pub fn decision(kind: EventKind) -> Decision {
        match kind {
            EventKind::PreToolUse | EventKind::PermissionRequest => Decision::Ask,
            EventKind::PreSkillShellCommand => Decision::Deny,
            _ => Decision::None,
        }
    }
}

impl Notes {
    /// One notice, or nothing.
    fn notice(notice: Option<&str>) -> Notes {
        Notes {
            notices: notice.map(str::to_owned).into_iter().collect(),
            context: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    /// The typed decision says what the rendered envelope says, for every event and verdict:
    /// the client decides its fallbacks from the one and Claude Code reads the other.
    #[test]
    fn the_typed_decision_matches_the_rendered_one() {
        let mut input = Map::new();
        input.insert("command".into(), "ls".into());
        let results = [
            HookResult::block("no"),
            HookResult::warn("w"),
            HookResult::warn("w").approving(),
            HookResult::allow(),
            HookResult::rewrite(input, Some("n".into())),
            HookResult::notice_only().with_system_message("n"),
        ];
        for kind in EventKind::ALL {
            for r in &results {
                let rendered = match envelope(kind, Some(r)) {
                    Some(Output::Json(v)) => {
                        let inner = &v["hookSpecificOutput"];
                        let said = inner["permissionDecision"]
                            .as_str()
                            .or_else(|| inner["decision"]["behavior"].as_str());
                        match said {
                            Some("deny") => Decision::Deny,
                            Some("allow") => Decision::Allow,
                            Some("ask") => Decision::Ask,
                            _ => Decision::None,
                        }
                    }
                    _ => Decision::None,
                };
                assert_eq!(decision(kind, Some(r)), rendered, "{kind} {r:?}");
            }
            assert_eq!(decision(kind, None), Decision::None);
        }
    }

    #[test]
    fn unchecked_calls_ask_show_the_dialog_or_refuse() {
        let mut u = Unchecked::because("capt-hook: x failed");
        u.context = Some("ctx".into());
        let Some(Output::Json(v)) = u.output(EventKind::PreToolUse) else {
            panic!("PreToolUse is answered");
        };
        let out = &v["hookSpecificOutput"];
        assert_eq!(out["permissionDecision"], "ask");
        assert_eq!(out["permissionDecisionReason"], "capt-hook: x failed");
        assert_eq!(out["additionalContext"], "ctx");
        assert!(v.get("systemMessage").is_none());

        let mut u = Unchecked::because("capt-hook: x failed");
        u.notice = Some("n".into());
        assert_eq!(
            u.output(EventKind::PermissionRequest),
            Some(Output::Json(
                json!({"systemMessage": "capt-hook: x failed\n\nn"})
            ))
        );
        assert_eq!(u.output(EventKind::Stop), None);

        let Some(Output::Json(v)) =
            Unchecked::because("capt-hook: x failed").output(EventKind::PreSkillShellCommand)
        else {
            panic!("PreSkillShellCommand is answered");
        };
        let out = &v["hookSpecificOutput"];
        assert_eq!(out["permissionDecision"], "deny");
        let reason = out["permissionDecisionReason"].as_str().unwrap();
        assert!(reason.starts_with("capt-hook: x failed") && reason.contains(CANNOT_ASK));

        assert_eq!(Unchecked::decision(EventKind::PreToolUse), Decision::Ask);
        assert_eq!(
            Unchecked::decision(EventKind::PermissionRequest),
            Decision::Ask
        );
        assert_eq!(
            Unchecked::decision(EventKind::PreSkillShellCommand),
            Decision::Deny
        );
    }

    /// The client's last resort (it links no engine, so `capt-hook-proto` writes it) is the
    /// answer this module gives for the same reason, byte for byte.
    #[test]
    fn the_clients_last_resort_is_this_modules_answer() {
        for name in capt_hook_proto::failure::GUARDED_EVENTS {
            let kind: EventKind = name.parse().unwrap();
            let reason = "capt-hook could not check this call (no-host): \"why\"";
            assert_eq!(
                capt_hook_proto::failure::last_resort(name, reason),
                Unchecked::because(reason).output(kind).map(|o| o.render()),
                "{name}"
            );
        }
    }

    #[test]
    fn notes_join_the_message_and_the_context_or_wait() {
        let notes = Notes {
            notices: vec!["load".into(), "release".into()],
            context: vec!["load".into()],
        };
        assert_eq!(
            with_notes(EventKind::SessionStart, None, &notes).map(|o| o.render()),
            Some(
                r#"{"systemMessage":"load\n\nrelease","hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"load"}}"#
                    .to_owned()
            )
        );
        let hooks = envelope(
            EventKind::SessionStart,
            Some(&HookResult::warn("ctx").with_system_message("own")),
        );
        assert_eq!(
            with_notes(EventKind::SessionStart, hooks, &notes).map(|o| o.render()),
            Some(
                r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"ctx\n\nload"},"systemMessage":"own\n\nload\n\nrelease"}"#
                    .to_owned()
            )
        );
        // Raw text and a worktree's path have nowhere to carry them.
        let text = Some(Output::Text("keep".into()));
        assert!(!carries_notes(EventKind::PreCompact, text.as_ref()));
        assert_eq!(
            with_notes(EventKind::PreCompact, text.clone(), &notes),
            text
        );
        assert_eq!(with_notes(EventKind::WorktreeCreate, None, &notes), None);
        assert_eq!(
            with_notes(EventKind::Stop, None, &Notes::default()),
            None,
            "nothing to tell prints nothing"
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

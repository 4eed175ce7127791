//! The same answer as a mod returns it: Claude Code's `ClassicResult` (and `classic.PreToolUse`'s
//! allow/ask/deny result), read off the typed [`Output`] this module renders, before it is
//! rendered. What a mod result cannot carry is listed in [`ClassicAnswer::unsaid`], so the mod
//! passes the event to our command hook, which prints the envelope itself.

use serde_json::{Map, Value};

use super::Output;
use crate::events::EventKind;
use capt_hook_proto::ClassicAnswer;

/// The `hookSpecificOutput` fields a mod's result can set for `kind`, as Claude Code 2.1.332's
/// mod API lists them per event; any other field this module renders must go through the
/// command hook. (PreToolUse has its own result shape and is handled apart.)
fn fields_a_mod_sets(kind: EventKind) -> &'static [&'static str] {
    use EventKind::*;
    match kind {
        UserPromptSubmit => &[
            "additionalContext",
            "sessionTitle",
            "suppressOriginalPrompt",
        ],
        UserPromptExpansion => &["additionalContext", "suppressOriginalPrompt"],
        SessionStart => &[
            "additionalContext",
            "initialUserMessage",
            "sessionTitle",
            "watchPaths",
            "reloadSkills",
        ],
        // Setup is absent: Claude Code 2.1.332 (`-p --init`) drops a module's additionalContext
        // there, and gives the command hook's (e2e-claude's `setup` case).
        PostModelSwitch | SubagentStart | PostToolUseFailure | PostToolBatch | Stop
        | SubagentStop => &["additionalContext"],
        PreModelSwitch => &["permissionDecision", "permissionDecisionReason"],
        PostToolUse => &[
            "additionalContext",
            "updatedToolOutput",
            "updatedMCPToolOutput",
        ],
        PermissionDenied => &["retry"],
        PermissionRequest => &["decision"],
        MessageDisplay => &["displayContent"],
        WorktreeCreate => &["worktreePath"],
        _ => &[],
    }
}

/// The answer `out` (what [`super::envelope`] and friends return for `kind`) as a mod gives it.
pub fn classic(kind: EventKind, out: Option<&Output>) -> ClassicAnswer {
    let mut answer = ClassicAnswer::default();
    match out {
        None => {}
        // Exit 2 is a command hook's block.
        Some(Output::Exit2(reason)) => answer.result.block = Some(reason.clone()),
        Some(Output::Text(path)) if kind == EventKind::WorktreeCreate => {
            answer.result.worktree_path = Some(path.clone());
        }
        Some(Output::Text(_)) => answer.unsaid.push("stdout text".into()),
        Some(Output::Json(Value::Object(map))) => read_json(kind, map, &mut answer),
        Some(Output::Json(_)) => answer.unsaid.push("stdout JSON".into()),
    }
    answer
}

fn read_json(kind: EventKind, map: &Map<String, Value>, answer: &mut ClassicAnswer) {
    for (key, value) in map {
        let r = &mut answer.result;
        match (key.as_str(), value) {
            // Claude Code 2.1.332 blocks a prompt on a module's block but reports it without
            // the reason (the stream's `prompt_submit_outcome.reason` is null); the command
            // hook's block carries it (e2e-claude's `user-prompt-submit-block` case).
            ("decision", Value::String(d))
                if d == "block" && kind == EventKind::UserPromptSubmit =>
            {
                answer
                    .unsaid
                    .push("decision block (UserPromptSubmit)".into());
            }
            ("decision", Value::String(d)) if d == "block" => {
                r.block = Some(text_of(map.get("reason")));
            }
            ("reason", _) if map.get("decision").is_some_and(|d| d == "block") => {}
            ("continue", Value::Bool(false)) => r.prevent_continuation = Some(true),
            ("continue", Value::Bool(true)) => {}
            ("stopReason", Value::String(s)) => r.stop_reason = Some(s.clone()),
            ("hookSpecificOutput", Value::Object(inner)) => read_specific(kind, inner, answer),
            _ => answer.unsaid.push(key.clone()),
        }
    }
}

fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

fn read_specific(kind: EventKind, inner: &Map<String, Value>, answer: &mut ClassicAnswer) {
    if kind == EventKind::PreToolUse {
        return read_pre_tool_use(inner, answer);
    }
    if kind == EventKind::PreSkillShellCommand {
        // A mod refuses a skill's command with a block; there is nothing else to say.
        return match inner.get("permissionDecision").and_then(Value::as_str) {
            Some("deny") => {
                answer.result.block = Some(text_of(inner.get("permissionDecisionReason")));
            }
            Some(other) => answer.unsaid.push(format!("permissionDecision {other}")),
            None => {}
        };
    }
    let allowed = fields_a_mod_sets(kind);
    let r = &mut answer.result;
    for (key, value) in inner {
        if key == "hookEventName" {
            continue;
        }
        if !allowed.contains(&key.as_str()) {
            answer.unsaid.push(key.clone());
            continue;
        }
        match (key.as_str(), value) {
            ("additionalContext", Value::String(s)) => r.additional_context.push(s.clone()),
            ("sessionTitle", Value::String(s)) => r.session_title = Some(s.clone()),
            ("initialUserMessage", Value::String(s)) => r.initial_user_message = Some(s.clone()),
            ("suppressOriginalPrompt", Value::Bool(true)) => {
                r.suppress_original_prompt = Some(true);
            }
            ("reloadSkills", Value::Bool(true)) => r.reload_skills = Some(true),
            ("retry", Value::Bool(true)) => r.retry = Some(true),
            ("suppressOriginalPrompt" | "reloadSkills" | "retry", Value::Bool(false)) => {}
            ("watchPaths", v) => r.watch_paths = Some(v.clone()),
            ("permissionDecision", Value::String(s)) => r.permission_decision = Some(s.clone()),
            ("permissionDecisionReason", Value::String(s)) => {
                r.permission_decision_reason = Some(s.clone());
            }
            ("decision", v @ Value::Object(_)) => r.decision = Some(v.clone()),
            ("updatedToolOutput", v) => r.updated_tool_output = Some(v.clone()),
            ("updatedMCPToolOutput", v) => r.updated_mcp_tool_output = Some(v.clone()),
            ("displayContent", v) => r.display_content = Some(v.clone()),
            ("worktreePath", Value::String(s)) => r.worktree_path = Some(s.clone()),
            // A value of a shape the mod API would refuse: the command hook says it.
            _ => answer.unsaid.push(key.clone()),
        }
    }
}

fn read_pre_tool_use(inner: &Map<String, Value>, answer: &mut ClassicAnswer) {
    let r = &mut answer.result;
    let reason = || text_of(inner.get("permissionDecisionReason"));
    for (key, value) in inner {
        match (key.as_str(), value) {
            ("hookEventName" | "permissionDecisionReason", _) => {}
            ("permissionDecision", Value::String(d)) => match d.as_str() {
                "allow" => r.allow = Some(true),
                "ask" => r.ask = Some(reason()),
                "deny" => r.deny = Some(reason()),
                // `defer` and any later word: only a command hook can say it.
                other => answer.unsaid.push(format!("permissionDecision {other}")),
            },
            ("updatedInput", Value::Object(input)) => r.updated_input = Some(input.clone()),
            ("additionalContext", Value::String(s)) => r.additional_context.push(s.clone()),
            _ => answer.unsaid.push(key.clone()),
        }
    }
    // An allow's reason is shown only by the command path; the allow itself stands either way.
    if r.allow.is_some() && inner.contains_key("permissionDecisionReason") {
        answer.unsaid.push("permissionDecisionReason".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::{Notes, Unchecked, envelope, with_notes};
    use crate::result::HookResult;
    use capt_hook_proto::ClassicResult;
    use serde_json::json;

    fn json_out(v: Value) -> Output {
        Output::Json(v)
    }

    #[test]
    fn pre_tool_use_verdicts_become_allow_ask_deny() {
        let deny = envelope(EventKind::PreToolUse, Some(&HookResult::block("no")));
        let a = classic(EventKind::PreToolUse, deny.as_ref());
        assert_eq!(a.result.deny.as_deref(), Some("no"));
        assert!(a.unsaid.is_empty(), "{:?}", a.unsaid);
        let ask = Unchecked::because("check failed").output(EventKind::PreToolUse);
        let a = classic(EventKind::PreToolUse, ask.as_ref());
        assert_eq!(a.result.ask.as_deref(), Some("check failed"));
        let out = json_out(json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "allow",
            "updatedInput": {"command": "ls -a"}, "additionalContext": "rewritten"}}));
        let a = classic(EventKind::PreToolUse, Some(&out));
        assert_eq!(a.result.allow, Some(true));
        assert_eq!(a.result.updated_input.unwrap()["command"], json!("ls -a"));
        assert_eq!(a.result.additional_context, ["rewritten"]);
        assert!(a.unsaid.is_empty());
        let defer = json_out(json!({"hookSpecificOutput": {"permissionDecision": "defer"}}));
        assert_eq!(
            classic(EventKind::PreToolUse, Some(&defer)).unsaid,
            ["permissionDecision defer"]
        );
    }

    #[test]
    fn a_system_message_is_left_to_the_command_hook() {
        let out = with_notes(
            EventKind::PreToolUse,
            envelope(EventKind::PreToolUse, Some(&HookResult::block("no"))),
            &Notes {
                notices: vec!["a hook file did not load".into()],
                context: Vec::new(),
            },
        );
        let a = classic(EventKind::PreToolUse, out.as_ref());
        assert_eq!(a.result.deny.as_deref(), Some("no"));
        assert_eq!(a.unsaid, ["systemMessage"]);
    }

    #[test]
    fn blocks_contexts_and_event_fields() {
        let stop = envelope(EventKind::Stop, Some(&HookResult::block("keep going")));
        let a = classic(EventKind::Stop, stop.as_ref());
        assert_eq!(a.result.block.as_deref(), Some("keep going"));
        assert!(a.unsaid.is_empty());
        let start = envelope(EventKind::SessionStart, Some(&HookResult::warn("ctx")));
        let a = classic(EventKind::SessionStart, start.as_ref());
        assert_eq!(a.result.additional_context, ["ctx"]);
        let exit2 = Output::Exit2("not done".into());
        assert_eq!(
            classic(EventKind::TaskCompleted, Some(&exit2))
                .result
                .block
                .as_deref(),
            Some("not done")
        );
        let text = Output::Text("more instructions".into());
        assert_eq!(
            classic(EventKind::PreCompact, Some(&text)).unsaid,
            ["stdout text"]
        );
        let path = Output::Text("/wt".into());
        assert_eq!(
            classic(EventKind::WorktreeCreate, Some(&path))
                .result
                .worktree_path
                .as_deref(),
            Some("/wt")
        );
        // FileChanged's watchPaths are read from a command hook only.
        let watch = json_out(json!({"hookSpecificOutput": {
            "hookEventName": "FileChanged", "watchPaths": ["/a"]}}));
        assert_eq!(
            classic(EventKind::FileChanged, Some(&watch)).unsaid,
            ["watchPaths"]
        );
        assert_eq!(classic(EventKind::Stop, None), ClassicAnswer::default());
    }

    #[test]
    fn what_claude_code_drops_from_a_module_goes_to_the_command_hook() {
        let block = envelope(
            EventKind::UserPromptSubmit,
            Some(&HookResult::block("keys")),
        );
        let a = classic(EventKind::UserPromptSubmit, block.as_ref());
        assert_eq!(a.result.block, None);
        assert_eq!(a.unsaid, ["decision block (UserPromptSubmit)"]);
        let ctx = envelope(EventKind::UserPromptSubmit, Some(&HookResult::warn("ctx")));
        let a = classic(EventKind::UserPromptSubmit, ctx.as_ref());
        assert_eq!(a.result.additional_context, ["ctx"]);
        assert!(a.unsaid.is_empty());
        let setup = envelope(EventKind::Setup, Some(&HookResult::warn("ctx")));
        assert_eq!(
            classic(EventKind::Setup, setup.as_ref()).unsaid,
            ["additionalContext"]
        );
    }

    #[test]
    fn guarded_events_of_their_own_shape() {
        let skill = envelope(
            EventKind::PreSkillShellCommand,
            Some(&HookResult::block("no stash")),
        );
        let a = classic(EventKind::PreSkillShellCommand, skill.as_ref());
        assert_eq!(a.result.block.as_deref(), Some("no stash"));
        let pr = envelope(
            EventKind::PermissionRequest,
            Some(&HookResult::block("nope")),
        );
        let a = classic(EventKind::PermissionRequest, pr.as_ref());
        assert_eq!(a.result.decision.unwrap()["behavior"], "deny");
        let pr = Unchecked::because("failed").output(EventKind::PermissionRequest);
        let a = classic(EventKind::PermissionRequest, pr.as_ref());
        assert_eq!(a.unsaid, ["systemMessage"]);
        assert_eq!(a.result, ClassicResult::default());
    }
}

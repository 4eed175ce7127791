//! Which events guard a call, and the `hook` client's own answer for one it could not get
//! checked at all (no host and no local evaluation).
//!
//! Its shape is written by [`crate::envelope`], as every answer's is; the engine's
//! `capt_hook_core::envelope::Unchecked` gives the same answer with what the hooks that did
//! answer said, and a test there checks that the two render the same bytes.

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

/// Other agents' events that guard a call, as `(agent, event)` in the agent's own spelling
/// (`hook run --agent <agent> <event>`). The client reads this list without the adapters;
/// capt-hook-agents owns the fact in its tables and checks this list against them.
pub const AGENT_GUARDED_EVENTS: &[(&str, &str)] = &[
    ("codex", "PreToolUse"),
    ("codex", "PermissionRequest"),
    ("factory", "PreToolUse"),
    ("gemini", "BeforeTool"),
    ("cursor", "beforeShellExecution"),
    ("cursor", "beforeMCPExecution"),
    ("cursor", "beforeReadFile"),
    ("copilot", "preToolUse"),
];

/// [`is_guarded`] for an event from `agent` (`None`, or `claude`: Claude Code's own names).
pub fn is_guarded_for(agent: Option<&str>, event: &str) -> bool {
    match agent {
        None | Some("claude") => is_guarded(event),
        Some(a) => AGENT_GUARDED_EVENTS.contains(&(a, event)),
    }
}

/// The answer (one compact JSON line) for a guarded call nothing could check, with `reason`:
/// PreToolUse asks the user, PermissionRequest shows its dialog with the reason as a
/// `systemMessage`, and PreSkillShellCommand, which cannot wait for a prompt, is refused. `None`
/// for an event that is not guarded.
pub fn last_resort(event: &str, reason: &str) -> Option<String> {
    crate::envelope::unchecked(event, reason, None, None).map(|v| v.to_string())
}

/// Why a guarded event's reply cannot stand as the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shortfall {
    /// The worker failed to run the event, or exited with an unexpected code.
    WorkerError,
    /// The hooks did not all finish and the reply gives no answer of its own that could
    /// stand (it would approve, or it says nothing).
    NoVerdict,
}

/// `None` when a guarded event's reply can stand; otherwise why it cannot. Read by the client
/// (which then evaluates the event itself) and by the host's HTTP side (which then tells the mod
/// to leave the event to the command hook), so both hold a reply to the same bar.
pub fn shortfall(resp: &crate::EventResponse) -> Option<Shortfall> {
    use crate::{Decision, Status};
    if resp.exit == 2 || resp.decision == Decision::Deny {
        return None;
    }
    if resp.exit != 0 || resp.status == Status::Error {
        return Some(Shortfall::WorkerError);
    }
    if resp.guard_completed {
        return None;
    }
    // The worker knew its check was incomplete and said so itself (an ask, a notice): that
    // answer names the failure better than we can, as long as it approves nothing.
    if !resp.stdout.trim().is_empty() && resp.decision != Decision::Allow {
        return None;
    }
    Some(Shortfall::NoVerdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn each_guarded_event_is_answered_and_no_other() {
        let parse = |e: &str| -> Value {
            serde_json::from_str(&last_resort(e, "capt-hook: x failed").unwrap()).unwrap()
        };
        let v = parse("PreToolUse");
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask");
        assert_eq!(
            v["hookSpecificOutput"]["permissionDecisionReason"],
            "capt-hook: x failed"
        );
        assert_eq!(
            parse("PermissionRequest"),
            json!({"systemMessage": "capt-hook: x failed"})
        );
        let v = parse("PreSkillShellCommand");
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap();
        assert!(reason.starts_with("capt-hook: x failed") && reason.contains(CANNOT_ASK));
        for e in GUARDED_EVENTS {
            assert!(last_resort(e, "r").is_some(), "{e}");
        }
        assert_eq!(last_resort("Stop", "r"), None);
    }

    #[test]
    fn guarded_events_by_agent() {
        assert!(is_guarded_for(None, "PreToolUse"));
        assert!(is_guarded_for(Some("claude"), "PermissionRequest"));
        assert!(is_guarded_for(Some("gemini"), "BeforeTool"));
        assert!(!is_guarded_for(Some("gemini"), "PreToolUse"));
        assert!(!is_guarded_for(Some("codex"), "Stop"));
        assert!(!is_guarded_for(Some("aider"), "PreToolUse"));
    }
}

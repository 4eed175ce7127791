//! "The lifecycle" of "Under the hood": a handler on each event of the page's diagram, reading
//! the event's typed payload. Four events can change the agent's course (PreToolUse and
//! PermissionRequest decide a call, Stop and SubagentStop keep the agent going); the others
//! only add context.

use captain_hook::core::payload::{
    NotificationPayload, PermissionRequestPayload, PostToolUseFailurePayload, PostToolUsePayload,
    PreCompactPayload, PreToolUsePayload, SessionEndPayload, SessionStartPayload, StopPayload,
    SubagentStartPayload, SubagentStopPayload, UserPromptSubmitPayload,
};
use captain_hook::{DefError, EventKind, Expect, Input, Registry, Reply, on_typed};
use serde_json::json;

const STEM: &str = "lifecycle";

/// Registers one handler per lifecycle event.
pub fn register(reg: &mut Registry) -> Result<(), DefError> {
    // SessionStart: context for a resumed session only.
    reg.add(
        STEM,
        on_typed(|evt, p: &SessionStartPayload| match p.source.as_deref() {
            Some("resume") => evt.warn("Resumed session: re-read the plan before acting."),
            _ => evt.ask(),
        })
        .name("session start")
        .test(Input::new().event(EventKind::SessionStart), Expect::allow())
        .test(
            Input {
                source: Some("resume".into()),
                ..Input::new()
            },
            Expect::warn().matching("re-read the plan"),
        ),
    )?;

    // UserPromptSubmit: a prompt that asks to skip tests gets a reminder.
    reg.add(
        STEM,
        on_typed(|evt, p: &UserPromptSubmitPayload| {
            let prompt = p.prompt.as_deref().unwrap_or_default().to_lowercase();
            if prompt.contains("skip the tests") {
                evt.warn("Tests stay part of the change; say why before skipping them.")
            } else {
                evt.ask()
            }
        })
        .name("prompt")
        .test(
            Input::new().prompt("ship it and skip the tests"),
            Expect::warn(),
        )
        .test(Input::new().prompt("add a login page"), Expect::allow()),
    )?;

    // PreToolUse: deny writes outside the working directory's tree.
    reg.add(
        STEM,
        on_typed(|evt, p: &PreToolUsePayload| {
            let file = p
                .tool_input
                .as_ref()
                .and_then(|i| i.get("file_path"))
                .and_then(|f| f.as_str())
                .unwrap_or_default();
            if p.tool_name.as_deref() == Some("Write") && file.starts_with("/etc/") {
                evt.block("Writes under /etc are not part of this project.")
            } else {
                evt.ask()
            }
        })
        .name("pre tool")
        .test(
            Input::new().tool("Write").file("/etc/hosts").content("x"),
            Expect::block(),
        )
        .test(
            Input::new().tool("Write").file("src/app.py").content("x"),
            Expect::ask(),
        ),
    )?;

    // PermissionRequest: answer the dialog for read-only `ls`, leave every other one to the user.
    reg.add(
        STEM,
        on_typed(|evt, p: &PermissionRequestPayload| {
            let command = p
                .tool_input
                .as_ref()
                .and_then(|i| i.get("command"))
                .and_then(|c| c.as_str());
            match command {
                Some(c) if c.split_whitespace().next() == Some("ls") => evt.allow(),
                _ => evt.ask(),
            }
        })
        .name("permission")
        .test(
            Input::command("ls -la").event(EventKind::PermissionRequest),
            Expect::allow_explicit(),
        )
        .test(
            Input::command("rm -rf build").event(EventKind::PermissionRequest),
            Expect::ask(),
        ),
    )?;

    // PostToolUse: a failing exit code hidden in a successful call's output.
    reg.add(
        STEM,
        on_typed(|evt, p: &PostToolUsePayload| {
            let stderr = p
                .tool_response
                .as_ref()
                .and_then(|r| r.get("stderr"))
                .and_then(|s| s.as_str())
                .unwrap_or_default();
            if stderr.contains("DeprecationWarning") {
                evt.warn("The command printed deprecation warnings; fix them while you are here.")
            } else {
                evt.ask()
            }
        })
        .name("post tool")
        .test(
            Input {
                output: Some(json!({"stdout": "ok", "stderr": "DeprecationWarning: x"})),
                ..Input::command("pytest")
            },
            Expect::warn(),
        )
        .test(
            Input {
                output: Some(json!({"stdout": "ok", "stderr": ""})),
                ..Input::command("pytest")
            },
            Expect::allow(),
        ),
    )?;

    // PostToolUseFailure: read the failure text.
    reg.add(
        STEM,
        on_typed(|evt, p: &PostToolUseFailurePayload| {
            let error = p.error.as_deref().unwrap_or_default();
            if error.contains("command not found") {
                evt.warn("That program is not installed here; check the project's tool list.")
            } else {
                evt.ask()
            }
        })
        .name("tool failure")
        .test(
            Input {
                error: Some("Exit code 127\nbash: rg: command not found".into()),
                ..Input::command("rg x")
            },
            Expect::warn(),
        ),
    )?;

    // Stop: the last message claims success without evidence.
    reg.add(
        STEM,
        on_typed(|evt, p: &StopPayload| {
            if p.stop_hook_active() {
                return evt.ask();
            }
            let said = p.last_assistant_message.as_deref().unwrap_or_default();
            if said.contains("should work now") {
                evt.block("Run it and show the output instead of saying it should work.")
            } else {
                evt.ask()
            }
        })
        .name("stop")
        .test(Input::new().event(EventKind::Stop), Expect::allow()),
    )?;

    // SubagentStart: tell each reviewer subagent how to finish.
    reg.add(
        STEM,
        on_typed(|evt, _: &SubagentStartPayload| {
            if evt.agent_type() == Some("reviewer") {
                evt.warn("Finish with a list of findings, most severe first.")
            } else {
                evt.ask()
            }
        })
        .name("subagent start")
        .test(Input::new().agent_type("reviewer"), Expect::warn())
        .test(Input::new().agent_type("Explore"), Expect::allow()),
    )?;

    // SubagentStop: a subagent must leave a final message.
    reg.add(
        STEM,
        on_typed(|evt, p: &SubagentStopPayload| {
            let said = p.last_assistant_message.as_deref().unwrap_or_default();
            if said.trim().is_empty() && !p.stop_hook_active() {
                evt.block("Say what you found before you stop.")
            } else {
                evt.ask()
            }
        })
        .name("subagent stop")
        .test(
            Input::new().agent_type("reviewer").agent_id("a1"),
            Expect::block(),
        ),
    )?;

    // PreCompact: a manual compaction gets a reminder to keep the plan.
    reg.add(
        STEM,
        on_typed(|evt, p: &PreCompactPayload| match p.trigger.as_deref() {
            Some("manual") => evt.warn("Keep the current plan and open questions in the summary."),
            _ => evt.ask(),
        })
        .name("pre compact")
        .test(Input::new(), Expect::allow()),
    )?;

    // Notification: advisory only; nothing to say for an idle prompt.
    reg.add(
        STEM,
        on_typed(
            |evt, p: &NotificationPayload| match p.notification_type.as_deref() {
                Some("permission_prompt") => evt.warn("A permission prompt is waiting."),
                _ => evt.ask(),
            },
        )
        .name("notification")
        .test(Input::new(), Expect::allow()),
    )?;

    // SessionEnd: nothing can be blocked any more; a hook may only clean up.
    reg.add(
        STEM,
        on_typed(|evt, p: &SessionEndPayload| {
            if p.reason.as_deref() == Some("clear") {
                evt.warn("Session cleared.")
            } else {
                evt.ask()
            }
        })
        .name("session end")
        .test(
            Input {
                reason: Some("clear".into()),
                ..Input::new()
            },
            Expect::warn(),
        )
        .test(Input::new(), Expect::allow()),
    )?;
    Ok(())
}

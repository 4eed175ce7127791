//! The options every primitive of the "Primitives" page takes: `max_fires`, `async_`,
//! `advisory_on_deny`, and `mandatory` (the guard a call must never pass without).

use captain_hook::session::{NudgeOptions, nudge};
use captain_hook::{
    DefError, Event, EventKind, Expect, HandlerResult, Input, MaxFires, Registry, Reply, cond, on,
};
use serde::{Deserialize, Serialize};

const STEM: &str = "options";

/// Commands seen this session, written after Claude Code already has its answer.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct CommandLog {
    /// The commands, in order.
    pub commands: Vec<String>,
}

/// An async PostToolUse handler: bookkeeping that must not delay the reply.
pub fn log_command(evt: &Event) -> HandlerResult {
    if let Some(command) = evt.command() {
        let command = command.to_owned();
        evt.store()
            .mutate(|log: &mut CommandLog| log.commands.push(command))?;
    }
    evt.ask()
}

/// A mandatory guard: a `kill` of a process group is denied, and if this check cannot run the
/// call is denied too rather than left unchecked.
pub fn no_group_kill(evt: &Event) -> HandlerResult {
    let line = evt.command().unwrap_or_default();
    if line.split_whitespace().any(|w| w == "-9") && line.contains(" -- -") {
        return evt.block("Killing a whole process group ends the session; kill one PID.");
    }
    evt.ask()
}

/// Registers the examples.
pub fn register(reg: &mut Registry) -> Result<(), DefError> {
    // max_fires: a nudge that speaks at most twice per session and agent.
    reg.add(
        STEM,
        nudge(NudgeOptions::new("Prefer `rg` over `grep -r`."))?
            .only_if(cond::runs(&["grep", "-r"])?)
            .max_fires(MaxFires::Count(2))
            .name("prefer rg")
            .test(Input::command("grep -r TODO src"), Expect::warn()),
    )?;

    // async: runs after the reply; its verdict is never shown.
    reg.add(
        STEM,
        on(&[EventKind::PostToolUse], log_command)
            .only_if(cond::tool(&["Bash"]))
            .run_async(true)
            .name("log command")
            .test(Input::command("make"), Expect::allow()),
    )?;

    // advisory_on_deny: this warning still reaches the agent when another hook denies.
    reg.add(
        STEM,
        nudge(NudgeOptions::new(
            "Large deletions are easier to review as their own commit.",
        ))?
        .only_if(cond::runs(&["git", "rm"])?)
        .advisory_on_deny(true)
        .max_fires(MaxFires::Unlimited)
        .name("review deletions")
        .test(Input::command("git rm -r old/"), Expect::warn()),
    )?;

    // mandatory: the call is denied when this hook cannot give its verdict.
    reg.add(
        STEM,
        on(&[EventKind::PreToolUse], no_group_kill)
            .only_if(cond::runs(&["kill"])?)
            .mandatory(true)
            .name("no group kill")
            .test(Input::command("kill -9 -- -1234"), Expect::block())
            .test(Input::command("kill 1234"), Expect::allow()),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Arc;

    use captain_hook::core::{Action, EventContext};
    use captain_hook::{DispatchOptions, Dispatcher, HookResult, deny};
    use serde_json::json;

    use super::*;

    fn dispatcher(extra: Option<captain_hook::HookDef>) -> Dispatcher {
        let mut reg = Registry::new();
        register(&mut reg).unwrap();
        if let Some(def) = extra {
            reg.add("extra", def).unwrap();
        }
        Dispatcher::new(Arc::new(reg), None)
    }

    fn send(
        d: &Dispatcher,
        state: &std::path::Path,
        kind: EventKind,
        cmd: &str,
    ) -> Option<HookResult> {
        send_with(d, state, kind, cmd, false)
    }

    fn send_with(
        d: &Dispatcher,
        state: &std::path::Path,
        kind: EventKind,
        cmd: &str,
        run_async: bool,
    ) -> Option<HookResult> {
        let evt = Event::new(
            kind,
            json!({"session_id": "s1", "tool_name": "Bash", "tool_input": {"command": cmd}}),
            EventContext {
                state_root: Some(state.to_path_buf()),
                ..EventContext::default()
            },
        )
        .unwrap()
        .with_transcript(captain_hook::transcript::Transcript::empty());
        let opts = DispatchOptions {
            run_async,
            ..DispatchOptions::default()
        };
        d.dispatch(&Arc::new(evt), opts)
    }

    #[test]
    fn max_fires_caps_the_nudge_per_session() {
        let state = tempfile::tempdir().unwrap();
        let d = dispatcher(None);
        let fired: Vec<bool> = (0..3)
            .map(|_| send(&d, state.path(), EventKind::PreToolUse, "grep -r x .").is_some())
            .collect();
        assert_eq!(fired, [true, true, false]);
        // The count max_fires keeps is readable (HookState), never writable, from a handler.
        let evt = Event::new(
            EventKind::PreToolUse,
            json!({"session_id": "s1"}),
            EventContext {
                state_root: Some(state.path().to_path_buf()),
                ..EventContext::default()
            },
        )
        .unwrap();
        let count = captain_hook::session::fire_count(&evt, "options:nudge_prefer_rg");
        assert_eq!(count, 2);
    }

    #[test]
    fn async_hooks_run_only_in_the_async_pass() {
        let state = tempfile::tempdir().unwrap();
        let d = dispatcher(None);
        let store = || {
            captain_hook::state::SessionStore::for_session(state.path(), Some("s1"))
                .load::<CommandLog>()
        };
        assert_eq!(send(&d, state.path(), EventKind::PostToolUse, "make"), None);
        assert!(store().commands.is_empty());
        send_with(&d, state.path(), EventKind::PostToolUse, "make", true);
        assert_eq!(store().commands, ["make"]);
    }

    #[test]
    fn an_advisory_rides_on_another_hooks_deny() {
        let state = tempfile::tempdir().unwrap();
        let d = dispatcher(Some(
            deny("No removals today.").only_if(cond::tool(&["Bash"])),
        ));
        let r = send(&d, state.path(), EventKind::PreToolUse, "git rm -r old/").unwrap();
        assert_eq!(r.action, Action::Block);
        let msg = r.message.unwrap();
        assert!(msg.starts_with("No removals today."), "{msg}");
        assert!(msg.contains("easier to review"), "{msg}");
    }
}

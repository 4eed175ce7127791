//! "Session workflow": one typed record carried across a session. The prompt's intent is
//! captured, edits and test runs are recorded as they happen, and Stop is blocked when files
//! were edited but no test ran.

use captain_hook::state::WorkflowState;
use captain_hook::{
    DefError, Event, EventKind, Expect, HandlerError, HandlerResult, Input, Registry, Reply, cond,
    on,
};
use serde::{Deserialize, Serialize};

const STEM: &str = "session_workflow";

/// What the session has done so far, in one file of the session's state.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ReviewState {
    /// The first 200 characters of the latest prompt.
    pub intent: Option<String>,
    /// Whether pytest ran.
    pub ran_tests: bool,
    /// The files edited, in order.
    pub edits: Vec<String>,
}

impl WorkflowState for ReviewState {
    const NAME: &'static str = "review";
}

fn state_error(e: impl std::fmt::Display) -> HandlerError {
    HandlerError::new(format!("review state: {e}"))
}

/// UserPromptSubmit: remember what the user asked for.
pub fn capture_intent(evt: &Event) -> HandlerResult {
    let intent: Option<String> = evt.prompt().map(|p| p.trim().chars().take(200).collect());
    ReviewState::mutate(evt, |s| s.intent = intent).map_err(state_error)?;
    evt.ask()
}

/// PreToolUse on Edit/Write: remember the file.
pub fn record_edit(evt: &Event) -> HandlerResult {
    let Some(file) = evt.file() else {
        return evt.ask();
    };
    let file = file.to_owned();
    ReviewState::mutate(evt, |s| s.edits.push(file)).map_err(state_error)?;
    evt.ask()
}

/// PreToolUse on Bash: remember that pytest ran (anywhere in the line, wrappers seen through).
pub fn mark_tested(evt: &Event) -> HandlerResult {
    if cond::runs(&["pytest"])?.check(evt) {
        ReviewState::mutate(evt, |s| s.ran_tests = true).map_err(state_error)?;
    }
    evt.ask()
}

/// Stop: edited files without a test run keep the agent going.
pub fn require_tests_after_edits(evt: &Event) -> HandlerResult {
    let state = ReviewState::load(evt);
    if !state.edits.is_empty() && !state.ran_tests {
        return evt.block(format!(
            "You edited {} file(s) for `{}` but never ran tests. Run pytest before stopping.",
            state.edits.len(),
            state.intent.as_deref().unwrap_or("this task"),
        ));
    }
    evt.ask()
}

/// Registers the page's four handlers.
pub fn register(reg: &mut Registry) -> Result<(), DefError> {
    use EventKind::*;
    reg.add(
        STEM,
        on(&[UserPromptSubmit], capture_intent)
            .name("capture intent")
            .test(
                Input::new().prompt("refactor the auth module"),
                Expect::allow(),
            ),
    )?;
    reg.add(
        STEM,
        on(&[PreToolUse], record_edit)
            .name("record edit")
            .only_if(cond::tool(&["Edit|Write"]))
            .test(
                Input::new()
                    .tool("Edit")
                    .file("app/users.py")
                    .content("x = 1\n"),
                Expect::allow(),
            ),
    )?;
    reg.add(
        STEM,
        on(&[PreToolUse], mark_tested)
            .name("mark tested")
            .only_if(cond::tool(&["Bash"]))
            .test(Input::command("pytest -q"), Expect::allow()),
    )?;
    reg.add(
        STEM,
        on(&[Stop], require_tests_after_edits)
            .name("require tests after edits")
            .skip_if(cond::waiting(true))
            .test(Input::new(), Expect::allow())
            // The page checks the block by replaying sessions; seeding the record lets an
            // inline test check it too.
            .test(
                Input::new().workflow_state(&ReviewState {
                    intent: Some("fix login".into()),
                    ran_tests: false,
                    edits: vec!["app/users.py".into()],
                }),
                Expect::block().matching("1 file\\(s\\) for `fix login` but never ran tests"),
            )
            .test(
                Input::new().workflow_state(&ReviewState {
                    intent: None,
                    ran_tests: true,
                    edits: vec!["app/users.py".into()],
                }),
                Expect::allow(),
            ),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::path::Path;
    use std::sync::Arc;

    use captain_hook::core::Action;
    use captain_hook::{Dispatcher, EventKind, Registry};

    /// "Verified by replay": the recorded session next to the TOML twin blocks its first Stop
    /// (edits, no pytest yet) and lets the last one through (after `pytest -q`).
    #[test]
    fn replaying_the_recorded_session_blocks_then_allows() {
        let mut reg = Registry::new();
        super::register(&mut reg).unwrap();
        let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../session-workflow");
        let dispatcher = Dispatcher::new(Arc::new(reg), Some(&here));
        let steps =
            captain_hook::replay::replay(&dispatcher, &here, &here.join("transcript.jsonl"))
                .unwrap();
        let stops: Vec<Option<Action>> = steps
            .iter()
            .filter(|s| s.event == EventKind::Stop)
            .map(|s| s.verdict.as_ref().map(|v| v.action))
            .collect();
        assert_eq!(stops, [Some(Action::Block), None]);
    }
}

//! The session workflow in Rust: one typed state record carried across a session. Capture the
//! user's intent, record the files the agent edits, mark when tests ran, and block Stop if the
//! agent edited files but never ran tests.
//!
//! `cargo run -p captain-hook --example session_workflow` runs the hooks' inline tests, then
//! replays `transcript.jsonl` (next to this file) and checks that the first Stop is blocked and
//! the last one, after `pytest`, is not.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use captain_hook::core::{Action, Tokens};
use captain_hook::state::WorkflowState;
use captain_hook::testing::{Status, human_report, run_test};
use captain_hook::{
    Condition, Dispatcher, Event, EventKind, Expect, HandlerError, HookResult, Input, Registry, on,
};
use serde::{Deserialize, Serialize};

/// What the session has done so far.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
struct ReviewState {
    intent: Option<String>,
    ran_tests: bool,
    edits: Vec<String>,
}

impl WorkflowState for ReviewState {
    const NAME: &'static str = "review";
}

fn state_error(e: impl std::fmt::Display) -> HandlerError {
    HandlerError::new(format!("review state: {e}"))
}

fn capture_intent(evt: &Event) -> captain_hook::HandlerResult {
    let intent: Option<String> = evt.prompt().map(|p| p.trim().chars().take(200).collect());
    ReviewState::mutate(evt, |s| s.intent = intent).map_err(state_error)?;
    Ok(None)
}

fn record_edit(evt: &Event) -> captain_hook::HandlerResult {
    if let Some(file) = evt.file() {
        let file = file.to_owned();
        ReviewState::mutate(evt, |s| s.edits.push(file)).map_err(state_error)?;
    }
    Ok(None)
}

fn mark_tested(evt: &Event) -> captain_hook::HandlerResult {
    let pytest = Tokens::new(&["pytest"]).map_err(state_error)?;
    let ran = evt
        .command_line()
        .is_some_and(|line| line.commands().any(|c| pytest.is_prefix_of(&c.unwrapped())));
    if ran {
        ReviewState::mutate(evt, |s| s.ran_tests = true).map_err(state_error)?;
    }
    Ok(None)
}

fn require_tests_after_edits(evt: &Event) -> captain_hook::HandlerResult {
    let state = ReviewState::load(evt);
    if !state.edits.is_empty() && !state.ran_tests {
        return Ok(Some(HookResult::block(format!(
            "You edited {} file(s) for `{}` but never ran tests. Run pytest before stopping.",
            state.edits.len(),
            state.intent.as_deref().unwrap_or("this task"),
        ))));
    }
    Ok(None)
}

fn hooks() -> Result<Registry, captain_hook::DefError> {
    use EventKind::*;
    let mut reg = Registry::new();
    let stem = "session_workflow";
    reg.add(
        stem,
        on(&[UserPromptSubmit], capture_intent)
            .name("capture-intent")
            .test(
                Input {
                    prompt: Some("refactor the auth module".into()),
                    ..Input::default()
                },
                Expect::allow(),
            ),
    )?;
    reg.add(
        stem,
        on(&[PreToolUse], record_edit)
            .name("record-edit")
            .only_if(Condition::tool(&["Edit|Write"]))
            .test(
                Input {
                    tool: Some("Edit".into()),
                    file: Some("app/users.py".into()),
                    content: Some("x = 1\n".into()),
                    ..Input::default()
                },
                Expect::allow(),
            ),
    )?;
    reg.add(
        stem,
        on(&[PreToolUse], mark_tested)
            .name("mark-tested")
            .only_if(Condition::tool(&["Bash"]))
            .test(Input::command("pytest -q"), Expect::allow()),
    )?;
    reg.add(
        stem,
        on(&[Stop], require_tests_after_edits)
            .name("require-tests-after-edits")
            .skip_if(Condition::Waiting(true))
            .test(Input::default(), Expect::allow())
            .test(
                Input {
                    state: Some(
                        serde_json::json!({"review_state": {"edits": ["a.py"], "intent": "fix"}})
                            .as_object()
                            .cloned()
                            .unwrap_or_default(),
                    ),
                    ..Input::default()
                },
                Expect::block().matching("never ran tests"),
            ),
    )?;
    Ok(reg)
}

fn main() -> ExitCode {
    let registry = match hooks() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("hook definition error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcomes: Vec<_> = registry
        .hooks()
        .iter()
        .flat_map(|h| h.tests.iter().map(move |t| run_test(h, t, None)))
        .collect();
    print!("{}", human_report(&outcomes));
    let tests_ok = outcomes.iter().all(|o| o.status == Status::Pass);

    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/session-workflow");
    let dispatcher = Dispatcher::new(Arc::new(registry), Some(&here));
    let steps =
        match captain_hook::replay::replay(&dispatcher, &here, &here.join("transcript.jsonl")) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("replay failed: {e}");
                return ExitCode::FAILURE;
            }
        };
    print!("\n{}", captain_hook::replay::report(&steps, false));
    let stops: Vec<Option<Action>> = steps
        .iter()
        .filter(|s| s.event == EventKind::Stop)
        .map(|s| s.verdict.as_ref().map(|v| v.action))
        .collect();
    let replay_ok = stops == [Some(Action::Block), None];
    if !replay_ok {
        eprintln!("expected the first Stop blocked and the last allowed, got {stops:?}");
    }
    if tests_ok && replay_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

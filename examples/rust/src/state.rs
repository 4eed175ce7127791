//! "State & workflows": session slots, a workflow record shared by several handlers, locked
//! updates, tracked models, durable facts per project and per machine, and workflows that hold
//! a subagent to an ordered checklist.

use captain_hook::core::HookResult;
use captain_hook::session::{Artifact, Step, Workflow, workflow};
use captain_hook::state::{Deque, DurableState, Scope, WorkflowState, track};
use captain_hook::transcript::Transcript;
use captain_hook::{
    DefError, Event, EventKind, Expect, HandlerResult, Input, Registry, Reply, cond, on,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::lines::{bash, edit, said, user};
use crate::session_workflow::ReviewState;

const STEM: &str = "state";

// ---- Read and write a slot ----

/// How many edits the session made, and to which files.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct EditCounter {
    /// Edits counted.
    pub count: u32,
    /// The edited files, in order.
    pub files: Vec<String>,
}

/// PostToolUse: read the slot (or a fresh counter), count the edit, write it back. The hook's
/// own store keeps it apart from other hooks' counters and each subagent's apart from the main
/// agent's (`<session>/<hook name>/<agent>/edit_counter.json`).
pub fn count_edits(evt: &Event) -> HandlerResult {
    let slot = evt.hook_store().slot::<EditCounter>();
    let mut state = slot.get().unwrap_or_default();
    if let Some(file) = evt.file() {
        state.count += 1;
        state.files.push(file.to_owned());
    }
    slot.set(&state)?;
    evt.ask()
}

// ---- Bundle one workflow with WorkflowState ----
// The record is the session-workflow page's `ReviewState`; these handlers fill it from other
// events (PostToolUse, and the transcript's record of pytest).

/// UserPromptSubmit: the intent, at most 200 characters.
pub fn capture_intent(evt: &Event) -> HandlerResult {
    let mut state = ReviewState::load(evt);
    state.intent = Some(
        evt.prompt()
            .unwrap_or_default()
            .trim()
            .chars()
            .take(200)
            .collect(),
    );
    state.save(evt)?;
    evt.ask()
}

/// PostToolUse of Edit/Write: the file, appended under the slot's lock so parallel calls all
/// land ("Serialize racing writers with mutate()").
pub fn record_edits(evt: &Event) -> HandlerResult {
    if let Some(file) = evt.file() {
        let file = file.to_owned();
        ReviewState::mutate(evt, |state| state.edits.push(file))?;
    }
    evt.ask()
}

/// PostToolUse once pytest is on record.
pub fn record_tests(evt: &Event) -> HandlerResult {
    let mut state = ReviewState::load(evt);
    state.ran_tests = true;
    state.save(evt)?;
    evt.ask()
}

/// Stop: edits without a test run keep the agent going.
pub fn require_tests(evt: &Event) -> HandlerResult {
    let state = ReviewState::load(evt);
    if !state.edits.is_empty() && !state.ran_tests {
        return evt.block(format!(
            "Edited {} files but never ran pytest.",
            state.edits.len()
        ));
    }
    evt.ask()
}

// ---- Deduplicate warnings: once and unseen ----

/// PostToolUse of an edit under `migrations/`: the warning is given once per file per session.
pub fn shipped_migration(evt: &Event) -> HandlerResult {
    let Some(file) = evt.file() else {
        return evt.ask();
    };
    if evt.store().once(file, Some("migration-warning")) {
        return evt.warn(format!(
            "{file} is a migration: if it already shipped, add a new one instead of editing it."
        ));
    }
    evt.ask()
}

/// UserPromptSubmit: issue numbers the prompt names that this session has not looked at yet.
pub fn unread_issues(evt: &Event) -> HandlerResult {
    let prompt = evt.prompt().unwrap_or_default();
    let issues: Vec<&str> = prompt
        .split(|c: char| c.is_whitespace() || c == ',' || c == '.')
        .filter(|w| w.len() > 1 && w.starts_with('#') && w[1..].chars().all(|c| c.is_ascii_digit()))
        .collect();
    let fresh = evt.store().unseen(&issues, Some("issues"));
    if fresh.is_empty() {
        return evt.ask();
    }
    evt.warn(format!(
        "Read {} on the tracker before changing code.",
        fresh.join(", ")
    ))
}

// ---- Register models for introspection ----

/// The operation a subagent snapshots before it starts.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Snapshot {
    /// The operation's id.
    pub op_id: String,
}

/// The files a cleanup may touch.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct CleanupScope {
    /// The files.
    pub files: Vec<String>,
}

/// SubagentStart: hand the subagent the paths of the tracked state files.
pub fn list_state_files(evt: &Event) -> HandlerResult {
    let paths = evt.store().tracked_paths();
    let wanted = ["Snapshot", "CleanupScope"];
    let listed: Vec<String> = paths
        .iter()
        .filter(|(name, _)| wanted.contains(&name.as_str()))
        .map(|(name, path)| format!("{name}: {}", path.display()))
        .collect();
    if listed.is_empty() {
        return evt.ask();
    }
    evt.warn(format!("Session state files:\n{}", listed.join("\n")))
}

// ---- Persist across sessions with DurableState ----

/// Files flagged in this repository, the newest 256.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct FlaggedPaths {
    /// The paths, oldest first.
    pub paths: Deque<String, 256>,
}

impl DurableState for FlaggedPaths {
    const SCOPE: Scope = Scope::Project;
}

/// Programs seen printing JSON, on any project of this machine.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct JsonCommands {
    /// Program names, the newest 64.
    pub programs: Deque<String, 64>,
}

impl DurableState for JsonCommands {
    const SCOPE: Scope = Scope::Global;
}

/// PostToolUse of Edit/Write: remember the file for later sessions, under the lock (two
/// sessions may write at once).
pub fn remember(evt: &Event) -> HandlerResult {
    if let Some(file) = evt.file() {
        let file = file.to_owned();
        FlaggedPaths::mutate(evt, |state| state.paths.append(file))?;
    }
    evt.ask()
}

/// PostToolUse of Bash: a program whose output parsed as a JSON object is remembered
/// machine-wide.
pub fn remember_json_programs(evt: &Event) -> HandlerResult {
    let stdout = evt
        .tool_response()
        .and_then(|r| r.get("stdout"))
        .and_then(|s| s.as_str())
        .unwrap_or_default();
    let is_json = serde_json::from_str::<serde_json::Value>(stdout).is_ok_and(|v| v.is_object());
    let program = evt.command().and_then(|c| c.split_whitespace().next());
    if let (true, Some(program)) = (is_json, program) {
        let program = program.to_owned();
        JsonCommands::mutate(evt, |state| {
            if !state.programs.contains(&program) {
                state.programs.append(program);
            }
        })?;
    }
    evt.ask()
}

// ---- Enforce a multi-step workflow ----

/// A step check over the tool history: at least three edits of test files.
pub fn wrote_three_tests(t: &Transcript) -> bool {
    t.tool_calls().named("Edit").touching("test_*.py").count() >= 3
}

/// The lint report an artifact must hold.
#[derive(Debug, Deserialize)]
pub struct LintReport {
    /// Errors found.
    pub errors: u32,
    /// Warnings found.
    pub warnings: u32,
}

/// After a complete review: many edits earn advice to split the change.
pub fn warn_on_large_changeset(evt: &Event) -> Option<HookResult> {
    let edits = evt.transcript().tool_calls().named("Edit").count();
    (edits > 20).then(|| {
        HookResult::warn(format!(
            "Large changeset ({edits} edits). Consider splitting the PR."
        ))
    })
}

fn stop(lines: Vec<serde_json::Value>) -> Input {
    Input::new()
        .agent_type("qa")
        .agent_id("a1")
        .transcript(lines)
}

/// Registers the page's hooks.
pub fn register(reg: &mut Registry) -> Result<(), DefError> {
    use EventKind::*;
    reg.add(
        STEM,
        on(&[PostToolUse], count_edits).name("count edits").test(
            Input::new().tool("Edit").file("a.py").content("x"),
            Expect::allow(),
        ),
    )?;

    reg.add(
        STEM,
        on(&[UserPromptSubmit], capture_intent)
            .name("capture intent")
            .test(Input::new().prompt("tidy the parser"), Expect::allow()),
    )?;
    reg.add(
        STEM,
        on(&[PostToolUse], record_edits)
            .name("record edits")
            .only_if(cond::tool(&["Edit|Write"]))
            .test(
                Input::new().tool("Write").file("b.py").content("y"),
                Expect::allow(),
            ),
    )?;
    reg.add(
        STEM,
        on(&[PostToolUse], record_tests)
            .name("record tests")
            .only_if(cond::ran_command(&["pytest"])?)
            .test(
                Input::command("pytest -q").transcript(vec![bash("t1", "pytest -q")]),
                Expect::allow(),
            ),
    )?;
    reg.add(
        STEM,
        on(&[Stop], require_tests)
            .name("require tests")
            .test(Input::new(), Expect::allow())
            .test(
                Input::new().workflow_state(&ReviewState {
                    intent: None,
                    ran_tests: false,
                    edits: vec!["a.py".into(), "b.py".into()],
                }),
                Expect::block().matching("Edited 2 files but never ran pytest"),
            ),
    )?;

    reg.add(
        STEM,
        on(&[PostToolUse], shipped_migration)
            .name("shipped migration")
            .only_if(cond::tool(&["Edit|Write"]))
            .only_if(cond::file_path(&["*/migrations/*"]))
            .test(
                Input::new()
                    .tool("Edit")
                    .file("db/migrations/0001_init.py")
                    .old("a")
                    .content("b"),
                Expect::warn().matching("0001_init.py is a migration"),
            )
            .test(
                Input::new()
                    .tool("Edit")
                    .file("db/migrations/0001_init.py")
                    .old("a")
                    .content("b")
                    .state(
                        "seen_keys",
                        json!({"seen": {"migration-warning": ["db/migrations/0001_init.py"]}}),
                    ),
                Expect::allow(),
            ),
    )?;
    reg.add(
        STEM,
        on(&[UserPromptSubmit], unread_issues)
            .name("unread issues")
            .test(
                Input::new().prompt("fix #12 and #13, then close #12."),
                Expect::warn().matching("^Read #12, #13 on the tracker"),
            )
            .test(
                Input::new()
                    .prompt("fix #12 and #13")
                    .state("seen_keys", json!({"seen": {"issues": ["#12"]}})),
                Expect::warn().matching("^Read #13 on"),
            )
            .test(Input::new().prompt("tidy up"), Expect::allow()),
    )?;

    track::<Snapshot>();
    track::<CleanupScope>();
    reg.add(
        STEM,
        on(&[SubagentStart], list_state_files)
            .name("list state files")
            .test(
                Input::new().agent_type("cleanup"),
                Expect::warn().matching(r"Snapshot: .*snapshot\.json"),
            ),
    )?;

    reg.add(
        STEM,
        on(&[PostToolUse], remember)
            .name("remember")
            .only_if(cond::tool(&["Edit|Write"]))
            .test(
                Input::new()
                    .tool("Edit")
                    .file("src/a.py")
                    .old("a")
                    .content("b"),
                Expect::allow(),
            ),
    )?;
    reg.add(
        STEM,
        on(&[PostToolUse], remember_json_programs)
            .name("json programs")
            .only_if(cond::tool(&["Bash"]))
            .test(
                Input {
                    output: Some(json!({"stdout": "{\"id\": 1}", "stderr": ""})),
                    ..Input::command("gh api /user")
                },
                Expect::allow(),
            ),
    )?;

    reg.add(
        STEM,
        workflow(Workflow {
            label: "QA-GATE".into(),
            marker: "QA COMPLETE".into(),
            steps: vec![
                Step::condition(
                    "run linter",
                    cond::text_matches("ruff check")?,
                    "Linter has not been run. Run: ruff check src/",
                ),
                Step::condition(
                    "run tests",
                    cond::text_matches("pytest.*passed")?,
                    "Tests have not been run. Run: pytest tests/ -x",
                ),
            ],
            artifacts: Vec::new(),
            post_complete: None,
        })?
        .test(
            stop(vec![user("check the package"), said("Looks fine to me.")]),
            Expect::block().matching("^QA-GATE INCOMPLETE: Linter has not been run"),
        )
        .test(
            stop(vec![said("Running ruff check now: clean.")]),
            Expect::block().matching("Tests have not been run"),
        )
        // The marker is matched exactly: a lower-case near miss does not count.
        .test(
            stop(vec![said(
                "ruff check: clean. pytest: 12 passed. qa complete",
            )]),
            Expect::block(),
        )
        .test(
            stop(vec![said(
                "ruff check: clean. pytest: 12 passed. QA COMPLETE",
            )]),
            Expect::allow(),
        ),
    )?;

    let tests_written = (1..=3)
        .map(|i| edit(&format!("e{i}"), &format!("tests/test_{i}.py")))
        .chain([said("TESTS WRITTEN")])
        .collect::<Vec<_>>();
    reg.add(
        STEM,
        workflow(Workflow {
            label: "TEST-WRITER".into(),
            marker: "TESTS WRITTEN".into(),
            steps: vec![Step::transcript(
                "write tests",
                wrote_three_tests,
                "Fewer than three test files were written. Write at least three test files \
                 before stopping.",
            )],
            artifacts: Vec::new(),
            post_complete: None,
        })?
        .name("three tests")
        .test(
            stop(vec![edit("e1", "tests/test_1.py"), said("done")]),
            Expect::block().matching("Fewer than three test files"),
        )
        .test(stop(tests_written), Expect::allow()),
    )?;

    reg.add(
        STEM,
        workflow(Workflow {
            label: "QUALITY".into(),
            marker: "QUALITY CHECK DONE".into(),
            steps: vec![Step::condition(
                "run linter",
                cond::text_matches("ruff check")?,
                "Run the linter. Run: ruff check src/ --output-format json > reports/lint.json",
            )],
            artifacts: vec![Artifact::validated(
                "reports/lint.json",
                |r: &LintReport| (r.errors > 0).then(|| "Too many errors".to_owned()),
            )],
            post_complete: None,
        })?
        .name("quality")
        .test(
            stop(vec![said("ruff check done. QUALITY CHECK DONE")])
                .cwd("/nonexistent/capt-hook-example"),
            Expect::block().matching("^QUALITY INCOMPLETE: reports/lint.json not found\\.$"),
        ),
    )?;

    reg.add(
        STEM,
        workflow(Workflow {
            label: "REVIEW".into(),
            marker: "REVIEW COMPLETE".into(),
            steps: vec![Step::condition(
                "self-review",
                cond::text_matches("self.review|code review")?,
                "Perform a self-review. Review your changes against the style guide.",
            )],
            artifacts: Vec::new(),
            post_complete: Some(std::sync::Arc::new(warn_on_large_changeset)),
        })?
        .test(
            stop(vec![said("All done.")]),
            Expect::block().matching("Perform a self-review"),
        )
        .test(
            stop(
                (0..21)
                    .map(|i| edit(&format!("e{i}"), &format!("src/m{i}.py")))
                    .chain([said("Did a self-review. REVIEW COMPLETE")])
                    .collect(),
            ),
            Expect::warn().matching(r"Large changeset \(21 edits\)"),
        )
        .test(
            stop(vec![
                edit("e1", "src/a.py"),
                said("Did a self-review. REVIEW COMPLETE"),
            ]),
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

    use captain_hook::core::{Action, EventContext};
    use captain_hook::{DispatchOptions, Dispatcher, Event, EventKind, Registry};
    use serde_json::{Value, json};

    use super::*;

    /// One session of the page's hooks: a state root, a project root, a dispatcher.
    struct Session {
        state: tempfile::TempDir,
        project: tempfile::TempDir,
        dispatcher: Dispatcher,
    }

    impl Session {
        fn new() -> Session {
            Session::only(|_| true)
        }

        /// A session where only the hooks `keep` selects are registered.
        fn only(keep: impl Fn(&str) -> bool) -> Session {
            let mut all = Registry::new();
            register(&mut all).unwrap();
            let mut reg = Registry::new();
            for h in all.hooks().iter().filter(|h| keep(&h.name)) {
                reg.push((**h).clone());
            }
            let project = tempfile::tempdir().unwrap();
            Session {
                state: tempfile::tempdir().unwrap(),
                dispatcher: Dispatcher::new(Arc::new(reg), Some(project.path())),
                project,
            }
        }

        fn event(&self, kind: EventKind, payload: Value, session: &str) -> Arc<Event> {
            self.event_with(kind, payload, session, Transcript::empty())
        }

        fn event_with(
            &self,
            kind: EventKind,
            mut payload: Value,
            session: &str,
            transcript: Transcript,
        ) -> Arc<Event> {
            payload["session_id"] = session.into();
            let context = EventContext {
                project_root: Some(self.project.path().to_path_buf()),
                state_root: Some(self.state.path().to_path_buf()),
                ..EventContext::default()
            };
            Arc::new(
                Event::new(kind, payload, context)
                    .unwrap()
                    .with_transcript(transcript),
            )
        }

        fn send(&self, kind: EventKind, payload: Value, session: &str) -> Option<HookResult> {
            let evt = self.event(kind, payload, session);
            self.dispatcher.dispatch(&evt, DispatchOptions::default())
        }
    }

    /// Transcript lines as the inline-test runner completes them.
    fn fixture(lines: Vec<Value>) -> Transcript {
        let spec = captain_hook::testing::TranscriptInput::Lines(lines);
        let lines = captain_hook::testing::load_transcript(&spec, Path::new(".")).unwrap();
        captain_hook::core::history::transcript_from_values(&lines)
    }

    fn write(path: &str) -> Value {
        json!({"tool_name": "Write", "tool_input": {"file_path": path, "content": "x"}})
    }

    #[test]
    fn the_review_record_carries_across_events_until_tests_run() {
        let s = Session::new();
        s.send(
            EventKind::UserPromptSubmit,
            json!({"prompt": "  tidy up  "}),
            "s1",
        );
        s.send(EventKind::PostToolUse, write("a.py"), "s1");
        s.send(EventKind::PostToolUse, write("b.py"), "s1");
        let r = s.send(EventKind::Stop, json!({}), "s1").unwrap();
        assert_eq!(r.action, Action::Block);
        assert_eq!(
            r.message.as_deref(),
            Some("Edited 2 files but never ran pytest.")
        );
        let record = ReviewState::load(&*s.event(EventKind::Stop, json!({}), "s1"));
        assert_eq!(record.intent.as_deref(), Some("tidy up"));
        // Another session starts from nothing.
        assert_eq!(s.send(EventKind::Stop, json!({}), "s2"), None);
        // The edit counter saw both writes, in its own hook's store (its state key is its
        // registered name, `state:on_count_edits`), not the
        // session's.
        let stop = s.event(EventKind::Stop, json!({}), "s1");
        let counter = captain_hook::core::scope::with_state_key("state:on_count_edits", || {
            stop.hook_store().load::<EditCounter>()
        });
        assert_eq!((counter.count, counter.files.len()), (2, 2));
        assert_eq!(stop.store().load::<EditCounter>().count, 0);
    }

    #[test]
    fn durable_facts_outlive_the_session_in_their_scope() {
        let s = Session::new();
        s.send(EventKind::PostToolUse, write("src/a.py"), "s1");
        let bash = json!({"tool_name": "Bash", "tool_input": {"command": "gh api /user"},
            "tool_response": {"stdout": "{\"login\": \"me\"}"}});
        s.send(EventKind::PostToolUse, bash, "s1");
        // A later session of the same project reads both facts.
        let later = s.event(EventKind::Stop, json!({}), "s2");
        let flagged = FlaggedPaths::load(&*later);
        assert_eq!(flagged.paths.iter().collect::<Vec<_>>(), ["src/a.py"]);
        assert_eq!(
            JsonCommands::load(&*later)
                .programs
                .iter()
                .collect::<Vec<_>>(),
            ["gh"]
        );
        let global = s
            .state
            .path()
            .join("hooks/durable/global/json_commands.json");
        assert!(global.is_file(), "{}", global.display());
    }

    #[test]
    fn artifacts_are_parsed_and_validated() {
        let s = Session::only(|name| name == "state:workflow_quality");
        let dir = tempfile::tempdir().unwrap();
        let done = said("ruff check done. QUALITY CHECK DONE");
        // Each stop is a new session: a workflow that let an agent stop never fires for it again.
        let stop = |session: &str| {
            let evt = s.event_with(
                EventKind::SubagentStop,
                json!({"agent_id": "q1", "agent_type": "qa", "cwd": dir.path()}),
                session,
                fixture(vec![done.clone()]),
            );
            s.dispatcher
                .dispatch(&evt, DispatchOptions::default())
                .and_then(|r| r.message)
        };
        let reports = dir.path().join("reports");
        std::fs::create_dir_all(&reports).unwrap();
        let report = reports.join("lint.json");
        std::fs::write(&report, "{\"errors\": 3}").unwrap();
        let msg = stop("s1").unwrap();
        assert!(
            msg.starts_with("QUALITY INCOMPLETE: reports/lint.json invalid:"),
            "{msg}"
        );
        assert!(msg.contains("warnings"), "{msg}");
        std::fs::write(&report, "{\"errors\": 3, \"warnings\": 0}").unwrap();
        assert_eq!(
            stop("s2").as_deref(),
            Some("QUALITY INCOMPLETE: Too many errors")
        );
        std::fs::write(&report, "{\"errors\": 0, \"warnings\": 4}").unwrap();
        assert_eq!(stop("s3"), None);
        assert!(Path::new(&report).is_file());
    }
}

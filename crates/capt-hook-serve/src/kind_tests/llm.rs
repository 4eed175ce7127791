//! LLM hooks through the real dispatcher, with a judge that is a real program (a shell script
//! the `command` backend runs) counting its calls, in a scratch state root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capt_hook_core::{Action, Condition, Event, EventContext, EventKind};
use serde_json::{Value, json};

use capt_hook_engine::dispatch::{DispatchOptions, Dispatcher, Verdict};
use capt_hook_engine::hook::short_hash;
use capt_hook_engine::primitives::HookDef;
use capt_hook_engine::registry::Registry;
use capt_hook_kinds::llm::*;
use capt_hook_testing::{Expect, Input, Status, run_test};
use serde_json::Map;

/// A scratch project: a state root, a judge script and the file it counts calls in.
struct Judge {
    dir: tempfile::TempDir,
}

impl Judge {
    /// A judge that records each request and answers `verdict` (after `delay` seconds).
    fn new(verdict: &str, delay: f64) -> Judge {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "cat > \"{d}/req.$$\"\necho x >> \"{d}/calls\"\nsleep {delay}\nprintf '%s' '{verdict}'\n",
            d = dir.path().display()
        );
        std::fs::write(dir.path().join("judge.sh"), script).unwrap();
        Judge { dir }
    }

    fn calls(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("calls"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// The requests the judge read, in no particular order.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_dir(self.dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("req."))
            .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap())
            .collect()
    }

    fn env(&self, extra: &[(&str, &str)]) -> Arc<BTreeMap<String, String>> {
        let mut env = BTreeMap::new();
        env.insert("CAPT_HOOK_LLM_BACKEND".into(), "command".into());
        env.insert(
            "CAPT_HOOK_LLM_COMMAND".into(),
            format!("sh {}/judge.sh", self.dir.path().display()),
        );
        env.insert(
            "CAPTAIN_HOOK_LOG_DIR".into(),
            self.dir.path().join("logs").display().to_string(),
        );
        for (k, v) in extra {
            env.insert((*k).into(), (*v).into());
        }
        Arc::new(env)
    }

    fn event(&self, kind: EventKind, payload: Value, root: Option<&Path>) -> Arc<Event> {
        self.event_env(kind, payload, root, &[])
    }

    fn event_env(
        &self,
        kind: EventKind,
        mut payload: Value,
        root: Option<&Path>,
        extra: &[(&str, &str)],
    ) -> Arc<Event> {
        payload["session_id"] = json!("s1");
        let ctx = EventContext {
            project_root: root.map(Path::to_path_buf),
            state_root: Some(self.dir.path().join("state")),
            request_env: Some(self.env(extra)),
            ..EventContext::default()
        };
        let turn = [
            json!({"type": "user", "message": {"role": "user", "content": "fix the build"}}),
            json!({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": "The failure is an external service outage, not our code."}
            ]}}),
        ];
        Arc::new(
            Event::new(kind, payload, ctx)
                .unwrap()
                .with_transcript(capt_hook_transcript::Transcript::from_values(turn.iter())),
        )
    }
}

fn dispatcher(defs: Vec<HookDef>) -> Dispatcher {
    let mut reg = Registry::new();
    for d in defs {
        reg.add("t", d).unwrap();
    }
    Dispatcher::new(Arc::new(reg), None)
}

fn soon() -> DispatchOptions {
    DispatchOptions {
        deadline: Some(Instant::now() + Duration::from_secs(20)),
        run_async: false,
    }
}

const BLOCK: &str = r#"{"block": true, "reasoning": "blames an outage"}"#;
const PASS: &str = r#"{"block": false, "reasoning": "fine"}"#;

#[test]
fn a_stop_gate_blocks_once_per_turn_and_the_second_stop_passes() {
    let judge = Judge::new(BLOCK, 0.0);
    let d = dispatcher(vec![
        llm_gate(LlmOptions::gate(
            "Is the agent making excuses?",
            "Fix it instead: {reasoning}.",
        ))
        .unwrap(),
    ]);
    let first = judge.event(EventKind::Stop, json!({}), None);
    let r = d.dispatch(&first, soon()).expect("the gate blocks");
    assert_eq!(r.action, Action::Block);
    assert_eq!(
        r.message.as_deref(),
        Some("Fix it instead: blames an outage.")
    );
    assert_eq!(judge.calls(), 1);
    let req = &judge.requests()[0];
    let prompt = req["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("<context>") && prompt.contains("external service outage"),
        "{prompt}"
    );
    assert!(
        prompt
            .trim_end()
            .ends_with("<task>\nIs the agent making excuses?\n</task>")
    );
    assert_eq!(req["schema"], VerdictSchema::gate().to_json());
    assert_eq!(req["agent"], true);
    let calls = std::fs::read_to_string(judge.dir.path().join("logs/llm-calls.jsonl")).unwrap();
    let call: Value = serde_json::from_str(calls.trim()).unwrap();
    assert_eq!(
        (&call["ok"], &call["backend"]),
        (&json!(true), &json!("command"))
    );
    assert!(call["latency_ms"].is_u64(), "{call}");

    let second = judge.event(EventKind::Stop, json!({"stop_hook_active": true}), None);
    assert_eq!(d.dispatch(&second, soon()), None, "the turn already fired");
    assert_eq!(judge.calls(), 1, "no second call in the same turn");
}

#[test]
fn a_transcript_that_lags_behind_the_prompt_still_gives_each_prompt_its_turn() {
    // A hooks module answers Stop inside Claude Code before the turn is written: both Stops
    // read the same (old) transcript, but their prompt ids and final replies tell them apart.
    let judge = Judge::new(BLOCK, 0.0);
    let d = dispatcher(vec![
        llm_gate(LlmOptions::gate("Stopping early?", "Go on: {reasoning}.")).unwrap(),
    ]);
    let stop = |prompt: &str, reply: &str, again: bool| {
        judge.event(
            EventKind::Stop,
            json!({"prompt_id": prompt, "last_assistant_message": reply, "stop_hook_active": again}),
            None,
        )
    };
    let first = d
        .dispatch(&stop("p1", "All finished.", false), soon())
        .expect("blocks");
    assert_eq!(first.action, Action::Block);
    let prompt = judge.requests()[0]["prompt"].as_str().unwrap().to_owned();
    assert!(prompt.contains("assistant: All finished."), "{prompt}");
    assert_eq!(d.dispatch(&stop("p1", "Tests ran.", true), soon()), None);
    let second = d.dispatch(&stop("p2", "Second done.", false), soon());
    assert_eq!(
        second.map(|r| r.action),
        Some(Action::Block),
        "p2 is a new turn"
    );
    assert_eq!(judge.calls(), 2);
    assert_eq!(
        d.dispatch(&stop("p2", "Second, tested.", true), soon()),
        None
    );
}

#[test]
fn a_judge_that_says_no_fires_nothing_and_conditions_that_say_no_call_nothing() {
    let judge = Judge::new(PASS, 0.0);
    let d = dispatcher(vec![
        llm_gate(LlmOptions::gate("Excuses?", "m")).unwrap(),
        llm_gate(LlmOptions::gate("Never judged?", "m"))
            .unwrap()
            .only_if(Condition::tool(&["Bash"]))
            .events(&[EventKind::PreToolUse]),
    ]);
    assert_eq!(
        d.dispatch(&judge.event(EventKind::Stop, json!({}), None), soon()),
        None
    );
    assert_eq!(judge.calls(), 1);
    let read = judge.event(
        EventKind::PreToolUse,
        json!({"tool_name": "Read", "tool_input": {"file_path": "/x"}}),
        None,
    );
    assert_eq!(d.dispatch(&read, soon()), None);
    assert_eq!(judge.calls(), 1, "only_if said no: the judge never ran");

    let mut o = LlmOptions::gate("Not while judging", "m");
    o.once_per_turn = Some(false);
    let d = dispatcher(vec![llm_gate(o).unwrap()]);
    let inside = judge.event_env(
        EventKind::Stop,
        json!({}),
        None,
        &[("CAPT_HOOK_JUDGE", "1")],
    );
    assert_eq!(d.dispatch(&inside, soon()), None);
    assert_eq!(
        judge.calls(),
        1,
        "a hook inside a judge's session does not judge"
    );
}

#[test]
fn a_nudge_with_diff_makes_no_call_without_changes_and_keeps_its_fire() {
    let judge = Judge::new(r#"{"fire": true, "reasoning": "r"}"#, 0.0);
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(repo.path())
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(repo.path().join("a.rs"), "fn a() {}\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "init"]);
    let mut o = LlmOptions::nudge(
        "Does the diff hardcode a secret?",
        "Read secrets from the env.",
    );
    o.diff = true;
    o.transcript = false;
    let d = dispatcher(vec![
        llm_nudge(o)
            .unwrap()
            .max_fires(capt_hook_engine::MaxFires::Count(1)),
    ]);
    let evt = || {
        judge.event(
            EventKind::PostToolUse,
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
            Some(repo.path()),
        )
    };
    assert_eq!(d.dispatch(&evt(), soon()), None);
    assert_eq!(judge.calls(), 0, "a clean tree: no call");
    std::fs::write(repo.path().join("a.rs"), "fn a() { let k = \"sk-123\"; }\n").unwrap();
    let r = d.dispatch(&evt(), soon()).expect("the one fire was kept");
    assert_eq!(r.action, Action::Warn);
    assert_eq!(judge.calls(), 1);
    let prompt = judge.requests()[0]["prompt"].as_str().unwrap().to_owned();
    assert!(
        prompt.contains("<diff>") && prompt.contains("sk-123"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("<context>"),
        "transcript = false: {prompt}"
    );
    let outside = tempfile::tempdir().unwrap();
    let not_a_repo = judge.event(
        EventKind::PostToolUse,
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
        Some(outside.path()),
    );
    let mut o = LlmOptions::nudge("Secret?", "m");
    o.diff = true;
    assert_eq!(
        dispatcher(vec![llm_nudge(o).unwrap()]).dispatch(&not_a_repo, soon()),
        None
    );
    assert_eq!(judge.calls(), 1, "no repository: no call");
}

/// An edited file too large to read is never judged unseen: the hook fails naming the file and
/// the limit, so the guarded call goes to the user, and the judge is not called.
#[test]
fn an_edited_file_over_the_limit_fails_the_hook_without_a_call() {
    let judge = Judge::new(PASS, 0.0);
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("huge.py");
    let f = std::fs::File::create(&file).unwrap();
    f.set_len(capt_hook_core::edit::MAX_EDITED_FILE + 1)
        .unwrap();
    let d = dispatcher(vec![
        llm_gate(LlmOptions::gate("Safe edit?", "No."))
            .unwrap()
            .events(&[EventKind::PreToolUse]),
    ]);
    let edit = judge.event(
        EventKind::PreToolUse,
        json!({"tool_name": "Write", "tool_input": {"file_path": file, "content": "x = 1\n"}}),
        None,
    );
    let outcome = d.outcome(&edit, soon());
    assert_eq!(outcome.failures.len(), 1, "{outcome:?}");
    let failure = outcome.failures[0].to_string();
    assert!(
        failure.contains(&format!("the edited file {}", file.display()))
            && failure.contains("over the 32 MiB limit"),
        "{failure}"
    );
    assert!(matches!(
        outcome.verdict(EventKind::PreToolUse),
        Verdict::Unchecked { .. }
    ));
    assert_eq!(judge.calls(), 0);
}

#[test]
fn a_failing_judge_leaves_a_guarded_call_to_the_user_or_blocks_with_on_incomplete() {
    let judge = Judge::new("not json", 0.0);
    let bash = || {
        judge.event(
            EventKind::PreToolUse,
            json!({"tool_name": "Bash", "tool_input": {"command": "git push"}}),
            None,
        )
    };
    let gate = || {
        llm_gate(LlmOptions::gate("Safe push?", "No."))
            .unwrap()
            .events(&[EventKind::PreToolUse])
    };
    let d = dispatcher(vec![gate(), capt_hook_engine::approve("pushes")]);
    let outcome = d.outcome(&bash(), soon());
    assert_eq!(outcome.failures.len(), 1, "{outcome:?}");
    assert!(
        matches!(
            outcome.clone().verdict(EventKind::PreToolUse),
            Verdict::Unchecked { .. }
        ),
        "the approval does not apply when the judge failed"
    );
    let logs = std::fs::read_to_string(judge.dir.path().join("logs/llm-failures.jsonl")).unwrap();
    assert!(
        logs.contains("not json") && logs.contains("Safe push?"),
        "{logs}"
    );

    let mut o = LlmOptions::gate("Safe push?", "No.");
    o.on_incomplete = Some("The safety judge could not run; push by hand.".into());
    let d = dispatcher(vec![llm_gate(o).unwrap().events(&[EventKind::PreToolUse])]);
    let r = d.dispatch(&bash(), soon()).unwrap();
    assert_eq!(r.action, Action::Block);
    assert_eq!(
        r.message.as_deref(),
        Some("The safety judge could not run; push by hand.")
    );
}

#[test]
fn a_hook_that_skips_without_a_judge_says_nothing_where_its_cli_is_missing() {
    let judge = Judge::new(BLOCK, 0.0);
    // The claude judge, pinned to a CLI that does not exist.
    let missing = [
        ("CAPT_HOOK_LLM_BACKEND", "claude"),
        ("CAPT_HOOK_CLAUDE_BIN", "/nonexistent/claude"),
    ];
    let stop = |extra: &[(&str, &str)]| judge.event_env(EventKind::Stop, json!({}), None, extra);
    let gate = |without: WithoutJudge| {
        let mut o = LlmOptions::gate("Blaming an outage?", "Fix it.");
        o.without_judge = without;
        llm_gate(o).unwrap()
    };
    let d = dispatcher(vec![gate(WithoutJudge::Skip)]);
    let outcome = d.outcome(&stop(&missing), soon());
    assert!(outcome.failures.is_empty(), "{outcome:?}");
    assert!(outcome.result.is_none(), "{outcome:?}");
    // The default fails visibly, as a judge that cannot answer does: off the guard events the
    // session is told once per hook, then the failures are only logged.
    let d = dispatcher(vec![gate(WithoutJudge::Fail)]);
    let told = d.outcome(&stop(&missing), soon());
    let note = told
        .result
        .as_ref()
        .and_then(|r| r.system_message.clone())
        .unwrap_or_default();
    assert!(
        note.contains("llm_gate_") && note.contains("failed") && note.contains("capt-hook logs"),
        "{told:?}"
    );
    assert!(told.result.as_ref().is_some_and(|r| r.is_notice_only()));
    assert_eq!(d.outcome(&stop(&missing), soon()).result, None, "told once");
    // Where the judge can run, the skipping hook asks it as any other does.
    let d = dispatcher(vec![gate(WithoutJudge::Skip)]);
    let r = d.dispatch(&stop(&[]), soon()).unwrap();
    assert_eq!(r.action, Action::Block);
    assert_eq!(judge.calls(), 1);
}

#[test]
fn judges_run_side_by_side_and_never_outlive_the_deadline() {
    let judge = Judge::new(BLOCK, 1.0);
    let mut a = LlmOptions::gate("A?", "a");
    a.once_per_turn = Some(false);
    let mut b = LlmOptions::gate("B?", "b");
    b.once_per_turn = Some(false);
    let d = dispatcher(vec![llm_gate(a).unwrap(), llm_gate(b).unwrap()]);
    let started = Instant::now();
    let r = d.dispatch(&judge.event(EventKind::Stop, json!({}), None), soon());
    let took = started.elapsed();
    assert_eq!(r.map(|r| r.action), Some(Action::Block));
    assert_eq!(judge.calls(), 2);
    assert!(
        took < Duration::from_millis(1900),
        "two 1 s judges took {took:?}"
    );

    let slow = Judge::new(BLOCK, 30.0);
    let mut o = LlmOptions::gate("Slow?", "m");
    o.timeout = Some(Duration::from_millis(500));
    let d = dispatcher(vec![llm_gate(o).unwrap()]);
    let started = Instant::now();
    let outcome = d.outcome(&slow.event(EventKind::Stop, json!({}), None), soon());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // A judge out of time at Stop: nothing blocks, and the session is told.
    assert!(
        outcome
            .result
            .as_ref()
            .is_some_and(|r| r.is_notice_only()
                && r.system_message.as_deref().unwrap_or("").contains("failed")),
        "{outcome:?}"
    );
    assert!(outcome.failures.is_empty(), "{outcome:?}");
}

#[test]
fn definitions_are_checked_before_any_event() {
    let e = llm_gate(LlmOptions::gate("q", "Stop: {reason}"))
        .err()
        .unwrap();
    assert_eq!(e.field, "message");
    assert!(
        e.message.contains("{reason}") && e.message.contains("block, reasoning"),
        "{e}"
    );
    let mut o = LlmOptions::gate("q", "m");
    o.verdict = "reasoning".into();
    assert_eq!(llm_gate(o).err().unwrap().field, "verdict");
    assert_eq!(
        llm_gate(LlmOptions::gate(" ", "m")).err().unwrap().field,
        "prompt"
    );
    let mut reg = Registry::new();
    let mut o = LlmOptions::nudge("q", "m");
    o.label = Some("Excuses".into());
    let h = reg.add("t", llm_nudge(o).unwrap()).unwrap();
    assert_eq!(h.name, "t:llm_nudge_excuses");
    assert_eq!(h.max_fires, Some(3));
    assert!(h.events.contains(EventKind::PostToolUse));
    let g = reg
        .add("t", llm_gate(LlmOptions::gate("q", "m")).unwrap())
        .unwrap();
    assert!(g.events.contains(EventKind::Stop) && g.events.contains(EventKind::SubagentStop));
    assert_eq!(g.max_fires, None);
    assert!(!g.skip_if.is_empty(), "a Stop gate skips while waiting");
}

#[test]
fn inline_tests_stub_the_judge() {
    let gate = || {
        llm_gate(LlmOptions::gate("q", "Stop: {reasoning}"))
            .unwrap()
            .test(
                Input::default(),
                Expect::block().matching("inline test stub"),
            )
            .test(
                Input {
                    llm: Some(json!({"block": false}).as_object().unwrap().clone()),
                    ..Input::default()
                },
                Expect::allow(),
            )
            .test(
                Input {
                    llm: Some(json!({"error": "timeout"}).as_object().unwrap().clone()),
                    ..Input::default()
                },
                Expect::allow(),
            )
            .test(
                Input {
                    llm: Some(json!({"block": "yes"}).as_object().unwrap().clone()),
                    ..Input::default()
                },
                Expect::block(),
            )
    };
    let mut reg = Registry::new();
    let h = reg.add("t", gate()).unwrap().clone();
    let status: Vec<Status> = h
        .tests
        .iter()
        .map(|t| run_test(&h, t, None).status)
        .collect();
    // A failing judge (and a stub that does not fit the verdict) is the hook failing: the test
    // reports it rather than passing on the silence.
    assert_eq!(
        status,
        [Status::Pass, Status::Pass, Status::Error, Status::Error]
    );
    let failed = run_test(&h, &h.tests[3], None);
    assert!(
        failed.reason.contains("does not fit the verdict"),
        "{failed:?}"
    );

    let mut o = LlmOptions::gate("q", "m");
    o.on_incomplete = Some("Judge unavailable.".into());
    let h = reg
        .add(
            "t",
            llm_gate(o).unwrap().test(
                Input {
                    llm: Some(json!({"error": "timeout"}).as_object().unwrap().clone()),
                    ..Input::default()
                },
                Expect::block().matching("unavailable"),
            ),
        )
        .unwrap()
        .clone();
    assert_eq!(run_test(&h, &h.tests[0], None).status, Status::Pass);
}

#[test]
fn edit_contexts_carry_the_change_and_required_ones_gate_the_call() {
    let judge = Judge::new(r#"{"fire": true, "reasoning": "r"}"#, 0.0);
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("a.py");
    std::fs::write(&file, "x = 1\n").unwrap();
    let mut o = LlmOptions::nudge("Does a comment narrate the edit?", "No narrating comments.");
    o.contexts = vec![Context::AfterEdit { required: true }];
    let d = dispatcher(vec![llm_nudge(o).unwrap().events(&[EventKind::PreToolUse])]);
    let edit = judge.event(
        EventKind::PreToolUse,
        json!({"tool_name": "Edit", "tool_input": {"file_path": file, "old_string": "x = 1", "new_string": "x = 2  # changed x to 2"}}),
        None,
    );
    assert_eq!(
        d.dispatch(&edit, soon()).map(|r| r.action),
        Some(Action::Warn)
    );
    let prompt = judge.requests()[0]["prompt"].as_str().unwrap().to_owned();
    assert!(
        prompt.contains("<after_edit>\nx = 2  # changed x to 2"),
        "{prompt}"
    );
    assert!(
        prompt.contains("<before_edit>\nx = 1"),
        "ambient before text: {prompt}"
    );
    assert!(
        !prompt.contains("<context>"),
        "own contexts replace the transcript: {prompt}"
    );
    let bash = judge.event(
        EventKind::PreToolUse,
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
        None,
    );
    assert_eq!(d.dispatch(&bash, soon()), None);
    assert_eq!(
        judge.calls(),
        1,
        "the required edit text is missing: no call"
    );
}

#[test]
fn hook_files_lower_to_the_same_hooks_and_report_bad_options() {
    let mut reg = Registry::new();
    capt_hook_toml::loader::load_str(
        "[[hook]]\nkind = \"llm_gate\"\nlabel = \"Excuses\"\nprompt = \"q\"\nmessage = \"m {reasoning}\"\n\
         model = \"large\"\nbackend = \"claude\"\ntimeout_s = 2.5\n\n\
         [[hook]]\nkind = \"llm_nudge\"\nprompt = \"q\"\nmessage = \"risk {risk}\"\nverdict = \"flag\"\n\
         response = [{ name = \"flag\", type = \"bool\" }, { name = \"risk\", type = \"choice\", choices = [\"low\", \"high\"] }]\n",
        "t",
        &mut reg,
    )
    .unwrap();
    let mut sdk = LlmOptions::gate("q", "m {reasoning}");
    sdk.label = Some("Excuses".into());
    let mut sdk_reg = Registry::new();
    sdk_reg.add("t", llm_gate(sdk).unwrap()).unwrap();
    assert_eq!(reg.hooks()[0].name, sdk_reg.hooks()[0].name);
    assert_eq!(reg.hooks()[0].name, "t:llm_gate_excuses");
    assert_eq!(reg.hooks()[1].kind, "llm_nudge");
    let mut async_reg = Registry::new();
    capt_hook_toml::loader::load_str(
        "[[hook]]\nkind = \"llm_nudge\"\nprompt = \"q\"\nmessage = \"m\"\nasync = true\n",
        "t",
        &mut async_reg,
    )
    .unwrap();
    assert!(
        async_reg.hooks()[0].is_async,
        "a nudge may judge after the reply"
    );

    let error = |body: &str| {
        let text = format!("[[hook]]\n{body}\n");
        let errors =
            capt_hook_toml::loader::load_str(&text, "t", &mut Registry::new()).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        let e = &errors[0];
        format!("{}: {}", e.field.clone().unwrap_or_default(), e.message)
    };
    let e = error("kind = \"llm_nudge\"\nprompt = \"q\"\nmessage = \"m\"\non_incomplete = \"x\"");
    assert!(
        e.contains("on_incomplete") && e.contains("llm_gate only"),
        "{e}"
    );
    let e =
        error("kind = \"llm_gate\"\nprompt = \"q\"\nmessage = \"m\"\nname = \"a\"\nlabel = \"b\"");
    assert!(e.contains("not both"), "{e}");
    let e = error(
        "kind = \"llm_gate\"\nprompt = \"q\"\nmessage = \"m\"\nresponse = [{ name = \"x\", type = \"bool\" }]",
    );
    assert!(e.contains("verdict"), "{e}");
    let e = error("kind = \"llm_gate\"\nprompt = \"q\"\nmessage = \"{why}\"");
    assert!(e.contains("message") && e.contains("{why}"), "{e}");
    let e = error("kind = \"llm_gate\"\nprompt = \"q\"\nmessage = \"m\"\nbackend = \"gpt\"");
    assert!(e.contains("backend"), "{e}");
    let e = error("kind = \"llm_gate\"\nprompt = \"q\"\nmessage = \"m\"\ntimeout_s = 0");
    assert!(e.contains("timeout_s"), "{e}");
}

#[test]
fn llm_approve_allows_what_the_judge_finds_safe_and_never_denies() {
    let bash = |judge: &Judge| {
        judge.event(
            EventKind::PermissionRequest,
            json!({"tool_name": "Bash", "tool_input": {"command": "cargo test"}}),
            None,
        )
    };
    let d = || {
        dispatcher(vec![
            llm_approve(ApproveOptions::new("safe commands")).unwrap(),
        ])
    };
    let safe = Judge::new(r#"{"safe": true, "reasoning": "tests"}"#, 0.0);
    assert_eq!(
        d().dispatch(&bash(&safe), soon()).map(|r| r.action),
        Some(Action::Allow)
    );
    let prompt = safe.requests()[0]["prompt"].as_str().unwrap().to_owned();
    assert!(
        prompt.contains("<rubric>") && prompt.contains("<tool_input>\ntool: Bash"),
        "{prompt}"
    );
    let unsafe_ = Judge::new(r#"{"safe": false, "reasoning": "no"}"#, 0.0);
    assert_eq!(d().dispatch(&bash(&unsafe_), soon()), None);
    let broken = Judge::new("garbage", 0.0);
    let outcome = d().outcome(&bash(&broken), soon());
    assert_eq!(
        (outcome.result, outcome.failures.len()),
        (None, 0),
        "the dialog shows"
    );

    let mut reg = Registry::new();
    let h = reg
        .add(
            "t",
            llm_approve(ApproveOptions::new("reads"))
                .unwrap()
                .test(Input::command("ls"), Expect::ask())
                .test(
                    Input {
                        llm: Some(json!({"safe": true}).as_object().unwrap().clone()),
                        ..Input::command("ls")
                    },
                    Expect::allow(),
                ),
        )
        .unwrap()
        .clone();
    assert_eq!(h.name, "t:llm_approve_reads");
    for t in &h.tests {
        assert_eq!(run_test(&h, t, None).status, Status::Pass, "{:?}", t.input);
    }
}

#[test]
fn a_confirmed_block_stands_only_when_the_judges_probability_reaches_protected_and_is_judged_once_per_input()
 {
    let push = |judge: &Judge, cmd: &str| {
        judge.event(
            EventKind::PreToolUse,
            json!({"tool_name": "Bash", "tool_input": {"command": cmd}}),
            None,
        )
    };
    let def = || {
        capt_hook_engine::block_command(
            capt_hook_engine::CommandMatch::argv(&["git", "push"]).unwrap(),
            "Pushing to a queued branch drops the push",
        )
        .confirm(Confirm::new("A push to a branch the merge queue admitted."))
    };
    // Below the threshold: the judge leans towards "not protected", and the block is lifted.
    let no = Judge::new(r#"{"protected": 0.3, "reasoning": "feature branch"}"#, 0.0);
    let d = dispatcher(vec![def()]);
    assert_eq!(d.dispatch(&push(&no, "git push origin feat"), soon()), None);
    assert_eq!(d.dispatch(&push(&no, "git push origin feat"), soon()), None);
    assert_eq!(
        no.calls(),
        1,
        "the same call in the same session is judged once"
    );
    let prompt = no.requests()[0]["prompt"].as_str().unwrap().to_owned();
    assert!(prompt.contains("<rule>\nA push to a branch"), "{prompt}");
    assert!(
        prompt.contains("<hook_message>\nBLOCKED: Pushing"),
        "{prompt}"
    );

    // At the threshold the block stands; so it does above it.
    let even = Judge::new(
        &format!(r#"{{"protected": {PROTECTED}, "reasoning": "cannot tell"}}"#),
        0.0,
    );
    let r = dispatcher(vec![def()]).dispatch(&push(&even, "git push origin main"), soon());
    assert_eq!(r.map(|r| r.action), Some(Action::Block));
    // A yes/no answer is not a probability: the judge failed, the call goes ahead with a note.
    let boolean = Judge::new(r#"{"protected": true, "reasoning": "queued"}"#, 0.0);
    let r = dispatcher(vec![def()])
        .dispatch(&push(&boolean, "git push origin main"), soon())
        .expect("a note");
    assert!(r.is_notice_only(), "{r:?}");
    let yes = Judge::new(r#"{"protected": 0.97, "reasoning": "queued"}"#, 0.0);
    let r = dispatcher(vec![def()]).dispatch(&push(&yes, "git push origin main"), soon());
    assert_eq!(r.map(|r| r.action), Some(Action::Block));
    assert_eq!(
        dispatcher(vec![def()]).dispatch(&push(&yes, "ls"), soon()),
        None
    );
    assert_eq!(yes.calls(), 1, "no block, nothing to confirm");

    let slow = Judge::new(r#"{"protected": 1, "reasoning": "x"}"#, 10.0);
    let d = dispatcher(vec![def().confirm(Confirm {
        rule: "r".into(),
        timeout: Duration::from_millis(300),
    })]);
    let r = d
        .dispatch(&push(&slow, "git push"), soon())
        .expect("a note");
    assert!(r.is_notice_only(), "no decision, only a note: {r:?}");
    assert!(
        r.system_message
            .as_deref()
            .unwrap_or("")
            .contains("could not confirm its block"),
        "{r:?}"
    );
    assert_eq!(
        d.dispatch(&push(&slow, "git push"), soon()),
        None,
        "the note is given once"
    );

    let warn = capt_hook_engine::hook(&[EventKind::PreToolUse], "just a warning")
        .confirm(Confirm::new("r"));
    let e = Registry::new().add("t", warn).err().unwrap();
    assert_eq!(e.field, "confirm");

    // A message-only block with `confirm` after another hook already blocked: the call is
    // refused anyway, so its judge is not asked.
    let after = Judge::new(r#"{"protected": 1, "reasoning": "x"}"#, 0.0);
    let d = dispatcher(vec![
        capt_hook_engine::block_command(
            capt_hook_engine::CommandMatch::argv(&["git", "push"]).unwrap(),
            "no pushes today",
        ),
        capt_hook_engine::deny("pushes need review")
            .confirm(Confirm::new("A push nobody reviewed.")),
    ]);
    let r = d.dispatch(&push(&after, "git push"), soon()).unwrap();
    assert_eq!(r.action, Action::Block);
    assert!(!r.message.unwrap_or_default().contains("need review"));
    assert_eq!(after.calls(), 0, "no judge after another hook's block");
    // Alone, the same hook asks its judge.
    let d = dispatcher(vec![
        capt_hook_engine::deny("pushes need review")
            .confirm(Confirm::new("A push nobody reviewed.")),
    ]);
    assert_eq!(
        d.dispatch(&push(&after, "git push"), soon())
            .map(|r| r.action),
        Some(Action::Block)
    );
    assert_eq!(after.calls(), 1);
}

#[test]
fn prompt_check_turns_the_judges_action_into_a_result() {
    let judge = Judge::new(
        r#"{"action": "block", "reason": "it skipped the tests"}"#,
        0.0,
    );
    let d = dispatcher(vec![capt_hook_engine::on(&[EventKind::Stop], |evt| {
        let mut c = PromptCheck::new("Did the agent skip the tests?", "CHECK");
        c.suffix = " Run them.".into();
        prompt_check(evt, &c)
    })]);
    let r = d
        .dispatch(&judge.event(EventKind::Stop, json!({}), None), soon())
        .unwrap();
    assert_eq!(r.action, Action::Block);
    assert_eq!(
        r.message.as_deref(),
        Some("CHECK: it skipped the tests Run them.")
    );
    let prompt = judge.requests()[0]["prompt"].as_str().unwrap().to_owned();
    assert!(prompt.contains("<agent_reasoning>"), "{prompt}");
    let ok = Judge::new(r#"{"action": "ok", "reason": ""}"#, 0.0);
    assert_eq!(
        d.dispatch(&ok.event(EventKind::Stop, json!({}), None), soon()),
        None
    );
}

#[test]
fn confirm_and_llm_approve_load_from_hook_files() {
    let mut reg = Registry::new();
    capt_hook_toml::loader::load_str(
        "[[hook]]\nkind = \"block_command\"\nargv = [\"git\", \"push\"]\nreason = \"r\"\n\
         confirm = { rule = \"A push to a queued branch.\", timeout_s = 2 }\n\
         [[hook.test]]\ninput = { command = \"git push\" }\nexpect = \"block\"\n\
         [[hook.test]]\ninput = { command = \"git push\", llm = { protected = 0.2 } }\nexpect = \"allow\"\n\n\
         [[hook]]\nkind = \"llm_approve\"\nlabel = \"teammates\"\nrubric = \"Tests are fine.\"\n\
         [[hook.test]]\ninput = { command = \"ls\" }\nexpect = \"ask\"\n",
        "t",
        &mut reg,
    )
    .unwrap();
    for h in reg.hooks() {
        for t in &h.tests {
            assert_eq!(
                run_test(h, t, None).status,
                Status::Pass,
                "{} {:?}",
                h.name,
                t.input
            );
        }
    }
    let errors = capt_hook_toml::loader::load_str(
        "[[hook]]\nkind = \"deny\"\nreason = \"r\"\nconfirm = { rule = \"x\", timeout_s = -1 }\n",
        "t",
        &mut Registry::new(),
    )
    .unwrap_err();
    assert_eq!(
        errors[0].field.as_deref(),
        Some("hook[0].confirm.timeout_s"),
        "{errors:?}"
    );
}

/// A fake Jev endpoint answering every yes/no question with probability `p_yes`. It reads each
/// body as the published request shape and answers 422 to one that is not, as the endpoint does.
fn fake_jev(p_yes: f64, requests: usize) -> String {
    use capt_hook_llm::jev::wire;
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for _ in 0..requests {
            let Ok((conn, _)) = listener.accept() else {
                return;
            };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut len = 0;
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim_end().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            let (status, reply) = match wire::Request::parse(&String::from_utf8_lossy(&body)) {
                Ok(request) => {
                    let answers: serde_json::Map<String, Value> = request
                        .questions
                        .iter()
                        .filter(|(_, q)| matches!(q, wire::Question::Noul { .. }))
                        .map(|(name, _)| (name.clone(), json!({"type": "noul", "noul": p_yes})))
                        .collect();
                    (200, json!({"model": request.model, "answers": answers}))
                }
                Err(e) => (422, json!({"detail": e.to_string()})),
            };
            let reply = reply.to_string();
            write!(
                &conn,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            )
            .unwrap();
        }
    });
    url
}

#[test]
fn jev_decides_first_and_a_reasoning_message_escalates_to_the_claude_judge() {
    // The "claude" judge is a script that shows it saw Jev's quick verdict.
    let judge = Judge::new(r#"{"block": true, "reasoning": "claude wrote this"}"#, 0.0);
    let claude = judge.dir.path().join("claude.sh");
    std::fs::write(
        &claude,
        format!(
            "#!/bin/sh\ncat > \"{d}/claude-prompt\"\necho x >> \"{d}/calls\"\n\
             printf '%s' '{{\"type\":\"result\",\"structured_output\":{{\"block\":true,\"reasoning\":\"claude wrote this\"}}}}'\n",
            d = judge.dir.path().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let claude = claude.display().to_string();
    let env = |url: &str| -> Vec<(&'static str, String)> {
        vec![
            ("CAPT_HOOK_LLM_BACKEND", "auto".into()),
            ("TYPESAFE_API_KEY", "k".into()),
            ("CAPT_HOOK_JEV_URL", url.into()),
            ("CAPT_HOOK_CLAUDE_BIN", claude.clone()),
        ]
    };
    let run = |message: &str, p_yes: f64| {
        let vars = env(&fake_jev(p_yes, 1));
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut o = LlmOptions::gate("Excuses?", message);
        o.once_per_turn = Some(false);
        let d = dispatcher(vec![llm_gate(o).unwrap()]);
        d.dispatch(
            &judge.event_env(EventKind::Stop, json!({}), None, &vars),
            soon(),
        )
    };
    // A literal message: Jev alone decides.
    let r = run("Fix it.", 0.9).unwrap();
    assert_eq!(r.message.as_deref(), Some("Fix it."));
    assert_eq!(judge.calls(), 0, "no LLM call");
    // Jev says no: nothing, and no LLM call even with a {reasoning} message.
    assert_eq!(run("Fix it: {reasoning}", 0.2), None);
    assert_eq!(judge.calls(), 0);
    // Jev fires and the message shows the model's words: claude writes them.
    let r = run("Fix it: {reasoning}", 0.9).unwrap();
    assert_eq!(r.message.as_deref(), Some("Fix it: claude wrote this"));
    assert_eq!(judge.calls(), 1);
    let seen = std::fs::read_to_string(judge.dir.path().join("claude-prompt")).unwrap();
    assert!(
        seen.starts_with("<quick_verdict>\n{\"block\":true"),
        "{seen}"
    );
}

/// Under Jev a confirmation reads the probability of yes: at or above PROTECTED the block
/// stands, below it the call goes ahead without a note, and so does a question Jev declines.
#[test]
fn a_confirmation_under_jev_compares_its_probability_with_protected() {
    let judge = Judge::new(r#"{"protected": 1, "reasoning": "unused"}"#, 0.0);
    let run = |url: &str, command: &str| {
        let vars = [
            ("CAPT_HOOK_LLM_BACKEND", "jev"),
            ("TYPESAFE_API_KEY", "k"),
            ("CAPT_HOOK_JEV_URL", url),
        ];
        let d = dispatcher(vec![
            capt_hook_engine::deny("pushes need review")
                .confirm(Confirm::new("A push nobody reviewed.")),
        ]);
        d.dispatch(
            &judge.event_env(
                EventKind::PreToolUse,
                json!({"tool_name": "Bash", "tool_input": {"command": command}}),
                None,
                &vars,
            ),
            soon(),
        )
    };
    // Each run pushes another branch: a verdict is remembered per session and exact input.
    let r = run(&fake_jev(PROTECTED + 0.2, 1), "git push origin queued");
    assert_eq!(r.map(|r| r.action), Some(Action::Block));
    assert_eq!(
        run(&fake_jev(PROTECTED - 0.2, 1), "git push origin feature"),
        None
    );
    assert_eq!(
        judge.calls(),
        0,
        "Jev answered; the command judge was never asked"
    );

    // A declining endpoint: allowed, and no note (declining is an answer, not a failure).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{BufRead, BufReader, Read, Write};
        let Ok((conn, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(conn.try_clone().unwrap());
        let mut len = 0;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h.trim_end().is_empty() {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let reply =
            json!({"model": "jev-1.13.0", "answers": {"protected": {"refused": true}}}).to_string();
        write!(
            &conn,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
            reply.len()
        )
        .unwrap();
    });
    assert_eq!(
        run(&url, "git push origin other"),
        None,
        "a declined question allows without a note"
    );

    // No key: the judge cannot run, and the call goes ahead with the one-time note.
    let d = dispatcher(vec![
        capt_hook_engine::deny("pushes need review")
            .confirm(Confirm::new("A push nobody reviewed.")),
    ]);
    let no_key = judge.event_env(
        EventKind::PreToolUse,
        json!({"tool_name": "Bash", "tool_input": {"command": "git push"}}),
        None,
        &[("CAPT_HOOK_LLM_BACKEND", "jev")],
    );
    let r = d.dispatch(&no_key, soon()).expect("a note");
    assert!(r.is_notice_only(), "{r:?}");
    assert!(
        r.system_message
            .as_deref()
            .unwrap_or("")
            .contains("TYPESAFE_API_KEY"),
        "{r:?}"
    );
    assert_eq!(d.dispatch(&no_key, soon()), None, "the note is given once");
}

#[test]
fn the_introduced_context_lists_only_what_the_edit_adds() {
    let judge = Judge::new(r#"{"fire": true, "reasoning": "r"}"#, 0.0);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.py");
    std::fs::write(&file, "# old note\nx = 1\nos.environ['A'] = 'a'\n").unwrap();
    let mut o = LlmOptions::nudge("Narrating comments or secrets?", "m");
    o.contexts = vec![Context::Introduced {
        pattern: Some(Arc::new(
            capt_hook_code::AnyLangPattern::new("os.environ[$KEY] = $VALUE").unwrap(),
        )),
        kinds: vec!["comment".into()],
        required: true,
    }];
    let d = dispatcher(vec![llm_nudge(o).unwrap().events(&[EventKind::PreToolUse])]);
    let edit = |old: &str, new: &str| {
        judge.event(
            EventKind::PreToolUse,
            json!({"tool_name": "Edit", "tool_input": {"file_path": file, "old_string": old, "new_string": new}}),
            None,
        )
    };
    let r = d.dispatch(
        &edit("x = 1", "x = 2  # bumped x\nos.environ['B'] = 'b'"),
        soon(),
    );
    assert_eq!(r.map(|r| r.action), Some(Action::Warn));
    let prompt = judge.requests()[0]["prompt"].as_str().unwrap().to_owned();
    assert!(
        prompt.contains(
            "<introduced>\nline 2: # bumped x\nline 3: os.environ['B'] = 'b'\n</introduced>"
        ),
        "{prompt}"
    );
    assert_eq!(d.dispatch(&edit("x = 1", "x = 3"), soon()), None);
    assert_eq!(judge.calls(), 1, "nothing introduced: no call");
}

/// A project root with `config.toml` and `hooks.toml` written, loaded (which records its
/// specialties); the load errors.
fn load_project(dir: &Path, config: &str, hooks: &str) -> Vec<capt_hook_toml::loader::LoadError> {
    let hooks_dir = dir.join(".claude/hooks");
    std::fs::create_dir_all(&hooks_dir).unwrap();
    std::fs::write(hooks_dir.join("config.toml"), config).unwrap();
    std::fs::write(hooks_dir.join("hooks.toml"), hooks).unwrap();
    crate::project::Project::load(dir, &hooks_dir)
        .errors()
        .to_vec()
}

#[test]
fn a_specialty_picks_the_judge_and_its_models_from_the_project_config() {
    let judge = Judge::new(BLOCK, 0.0);
    let project = tempfile::tempdir().unwrap();
    // A fake `claude` recording its arguments.
    let claude = project.path().join("fake-claude");
    std::fs::write(
        &claude,
        format!(
            "#!/bin/sh\ncat > /dev/null\nprintf '%s\\n' \"$@\" > \"{}/claude-args\"\n\
             echo '{{\"type\":\"result\",\"structured_output\":{{\"block\":true,\"reasoning\":\"r\"}}}}'\n",
            project.path().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let errors = load_project(
        project.path(),
        "[llm.specialties.security]\nbackend = \"command\"\n\n\
         [llm.specialties.deep]\nbackend = \"claude\"\nmodels = [\"m-small\", \"m-mid\", \"m-big\"]\n",
        "[[hook]]\nkind = \"llm_gate\"\nprompt = \"p\"\nmessage = \"m\"\nspecialty = \"security\"\n",
    );
    assert!(errors.is_empty(), "{errors:?}");
    let gate = |specialty: &str, model: Size| {
        let mut o = LlmOptions::gate("Is it risky?", "Risky: {reasoning}");
        o.specialty = specialty.into();
        o.model = model;
        o.agent = false;
        // One name per specialty: a failing judge tells the session once per hook.
        o.label = Some(specialty.into());
        // Every Stop of this test is judged.
        o.once_per_turn = Some(false);
        dispatcher(vec![llm_gate(o).unwrap()])
    };
    // The project default is a judge that cannot run: only the specialty's judge can answer.
    let env = [
        ("CAPT_HOOK_LLM_BACKEND", "codex"),
        ("CAPT_HOOK_CODEX_BIN", "/nonexistent/codex"),
        ("CAPT_HOOK_CLAUDE_BIN", claude.to_str().unwrap()),
    ];
    let stop = || judge.event_env(EventKind::Stop, json!({}), Some(project.path()), &env);
    let r = gate("security", Size::Small).dispatch(&stop(), soon());
    assert_eq!(r.map(|r| r.action), Some(Action::Block));
    assert_eq!(judge.calls(), 1, "the specialty's `command` judge answered");
    let r = gate("deep", Size::Medium).dispatch(&stop(), soon());
    assert_eq!(r.map(|r| r.action), Some(Action::Block));
    let args = std::fs::read_to_string(project.path().join("claude-args")).unwrap();
    assert!(args.contains("--model\nm-mid\n"), "{args}");
    // `general` (built in, not configured) keeps the project default, which cannot run here.
    // At Stop a failing judge tells the session (once per hook) rather than failing silently.
    let r = gate("general", Size::Small).outcome(&stop(), soon());
    let note = |r: &capt_hook_engine::dispatch::Outcome| {
        r.result
            .as_ref()
            .and_then(|r| r.system_message.clone())
            .unwrap_or_default()
    };
    assert!(note(&r).contains("codex"), "{r:?}");
    // A hook's own backend wins over its specialty's.
    let mut own = LlmOptions::gate("Is it risky?", "Risky");
    own.specialty = "deep".into();
    own.backend = Some(BackendChoice::Command);
    own.once_per_turn = Some(false);
    let before = judge.calls();
    dispatcher(vec![llm_gate(own).unwrap()]).dispatch(&stop(), soon());
    assert_eq!(judge.calls(), before + 1);
    // A specialty the project does not know fails the judge visibly, naming the known ones.
    let r = gate("secruity", Size::Small).outcome(&stop(), soon());
    let why = note(&r);
    assert!(
        why.contains("secruity") && why.contains("security"),
        "{why}"
    );
}

/// A ticket rule's judge names its specialty as the seeds' `Decide` does; the project checks it
/// when it loads, as it does for the LLM hooks.
#[test]
fn a_ticket_judges_specialty_is_checked_when_the_project_loads() {
    let project = tempfile::tempdir().unwrap();
    let config = "[llm.specialties.security]\nbackend = \"claude\"\n";
    let hooks = "[[hook]]\nkind = \"tickets\"\nticket = \"t\"\nplace = { a = \"/a\" }\n\
                 reach = \"place\"\ndeny = \"d\"\n\
                 rules = [{ name = \"j\", decide = { rules = \"r\", specialty = \"secruity\" } }]\n";
    let errors = load_project(project.path(), config, hooks);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].message.contains("`secruity`"), "{}", errors[0]);
    let known = hooks.replace("secruity", "security");
    assert_eq!(load_project(project.path(), config, &known), Vec::new());
}

#[test]
fn an_unknown_specialty_or_a_bad_mapping_is_a_load_error() {
    let project = tempfile::tempdir().unwrap();
    let errors = load_project(
        project.path(),
        "[llm.specialties.security]\nbackend = \"claude\"\n",
        "[[hook]]\nkind = \"llm_nudge\"\nprompt = \"p\"\nmessage = \"m\"\nspecialty = \"secruity\"\n\n\
         [[hook]]\nkind = \"llm_approve\"\nlabel = \"a\"\nspecialty = \"review\"\n",
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    // At the `specialty` line of the hook that names it, not at the hook's header.
    assert_eq!(e.field.as_deref(), Some("hook[0].specialty"));
    assert!(e.file.ends_with("hooks.toml"), "{e}");
    assert_eq!((e.line, e.column), (5, 1), "{e}");
    assert!(
        e.message.contains("`secruity`")
            && e.message.contains("[llm.specialties.secruity]")
            && e.message.contains("debugging, general, review, security"),
        "{e}"
    );
    let errors = load_project(
        project.path(),
        "[llm.specialties.deep]\nmodels = [\"only-one\"]\n",
        "",
    );
    assert_eq!(
        errors[0].field.as_deref(),
        Some("llm.specialties.deep.models"),
        "{errors:?}"
    );
    // At the list itself: `models = [` puts it on line 2, column 10.
    assert_eq!((errors[0].line, errors[0].column), (2, 10), "{errors:?}");
    // A backend that is not a judge is refused by the config's own parse, with its line.
    let errors = load_project(
        project.path(),
        "[llm.specialties.deep]\nbackend = \"gpt\"\n",
        "[[hook]]\nkind = \"llm_gate\"\nprompt = \"p\"\nmessage = \"m\"\nspecialty = \"deep\"\n",
    );
    assert!(
        errors[0].message.contains("config.toml") && errors[0].message.contains("gpt"),
        "{errors:?}"
    );
    let empty = LlmOptions {
        specialty: " ".into(),
        ..LlmOptions::gate("p", "m")
    };
    assert_eq!(llm_gate(empty).err().unwrap().field, "specialty");
}

/// A fake `claude` that prints `rules` for `auto-mode config` (counting the asks in `dir`).
fn fake_auto_mode(dir: &Path, rules: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(format!("claude-{}", short_hash(rules)));
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n[ \"$1 $2\" = \"auto-mode config\" ] || exit 9\necho x >> \"{}/asks\"\n{rules}\n",
            dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[test]
fn llm_approve_judges_by_claude_codes_auto_mode_rules_or_its_own() {
    let judge = Judge::new(r#"{"safe": true, "reasoning": "reads"}"#, 0.0);
    let bin = tempfile::tempdir().unwrap();
    let cli = fake_auto_mode(
        bin.path(),
        r#"echo '{"environment":["ACME-ENV"],"allow":["ACME-ALLOW"],"soft_deny":["ACME-SOFT"],"hard_deny":["ACME-HARD"]}'"#,
    );
    let approve = |defaults: RubricDefaults, rubric: Option<&str>| {
        let mut o = ApproveOptions::new(format!("a {defaults:?} {rubric:?}"));
        o.defaults = defaults;
        o.rubric = rubric.map(str::to_owned);
        dispatcher(vec![llm_approve(o).unwrap()])
    };
    let dialog = |claude: &str| {
        judge.event_env(
            EventKind::PermissionRequest,
            json!({"tool_name": "Bash", "tool_input": {"command": "make deploy"}}),
            None,
            &[("CAPT_HOOK_CLAUDE_BIN", claude)],
        )
    };
    let prompt_of = |n: usize| -> String {
        let reqs = judge.requests();
        assert_eq!(reqs.len(), n);
        reqs[0]["prompt"].as_str().unwrap().to_owned()
    };
    // Claude Code's rules (from the CLI), the way auto mode applies them, then the hook's own.
    let r = approve(RubricDefaults::Claude, Some("Deploys to staging are fine."))
        .dispatch(&dialog(&cli), soon());
    assert_eq!(r.map(|r| r.action), Some(Action::Allow));
    let p = prompt_of(1);
    for part in [
        "ACME-ENV",
        "Hard blocks:\n- ACME-HARD",
        "Soft blocks:\n- ACME-SOFT",
        "Allow exceptions:\n- ACME-ALLOW",
        "user asked for this specific action",
        "This project's rules (they come first):\nDeploys to staging are fine.",
        "<recent>",
        "make deploy",
    ] {
        assert!(p.contains(part), "{part:?} missing from:\n{p}");
    }
    assert!(!p.contains(&builtin_rules().hard_deny[0]), "{p}");
    // The CLI is asked once, not per dialog.
    approve(RubricDefaults::Claude, Some("again")).dispatch(&dialog(&cli), soon());
    let asks = std::fs::read_to_string(bin.path().join("asks")).unwrap();
    assert_eq!(asks.lines().count(), 1);

    // A CLI that cannot say: our built-in rules instead.
    let broken = fake_auto_mode(bin.path(), "echo 'unknown command' >&2; exit 1");
    let judge2 = Judge::new(r#"{"safe": false, "reasoning": "no"}"#, 0.0);
    let evt = judge2.event_env(
        EventKind::PermissionRequest,
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
        None,
        &[("CAPT_HOOK_CLAUDE_BIN", &broken)],
    );
    assert_eq!(
        approve(RubricDefaults::Claude, None).dispatch(&evt, soon()),
        None
    );
    let p = judge2.requests()[0]["prompt"].as_str().unwrap().to_owned();
    assert!(p.contains(&builtin_rules().hard_deny[0]), "{p}");

    // `builtin` never asks the CLI; `none` is the hook's rubric alone.
    let judge3 = Judge::new(r#"{"safe": false, "reasoning": "no"}"#, 0.0);
    let evt = |j: &Judge| {
        j.event_env(
            EventKind::PermissionRequest,
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
            None,
            &[("CAPT_HOOK_CLAUDE_BIN", "/nonexistent/claude")],
        )
    };
    approve(RubricDefaults::Builtin, None).dispatch(&evt(&judge3), soon());
    let p = judge3.requests()[0]["prompt"].as_str().unwrap().to_owned();
    assert!(p.contains(&builtin_rules().soft_deny[0]), "{p}");
    let judge4 = Judge::new(r#"{"safe": false, "reasoning": "no"}"#, 0.0);
    approve(RubricDefaults::None, Some("Only `ls` is safe.")).dispatch(&evt(&judge4), soon());
    let p = judge4.requests()[0]["prompt"].as_str().unwrap().to_owned();
    assert!(
        p.contains("Only `ls` is safe.") && !p.contains("Soft blocks"),
        "{p}"
    );
    let mut bare = ApproveOptions::new("bare");
    bare.defaults = RubricDefaults::None;
    assert_eq!(llm_approve(bare).err().unwrap().field, "rubric");

    // From a hook file.
    let mut reg = Registry::new();
    capt_hook_toml::loader::load_str(
        "[[hook]]\nkind = \"llm_approve\"\nlabel = \"x\"\ndefaults = \"builtin\"\nspecialty = \"general\"\n",
        "t",
        &mut reg,
    )
    .unwrap();
    let errors = capt_hook_toml::loader::load_str(
        "[[hook]]\nkind = \"llm_approve\"\nlabel = \"x\"\ndefaults = \"none\"\n",
        "t",
        &mut Registry::new(),
    )
    .unwrap_err();
    assert_eq!(
        errors[0].field.as_deref(),
        Some("hook[0].rubric"),
        "{errors:?}"
    );
}

#[test]
fn judge_calls_are_recorded_on_the_event_for_the_journal() {
    let judge = Judge::new(BLOCK, 0.0);
    let d = dispatcher(vec![
        llm_gate(LlmOptions::gate("Is the agent making excuses?", "Fix it.")).unwrap(),
    ]);
    let evt = judge.event(EventKind::Stop, json!({}), None);
    assert!(d.dispatch(&evt, soon()).is_some());
    let calls = capt_hook_journal::judge::recorded(&evt);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].ok && calls[0].backend == "command", "{calls:?}");
    assert!(
        calls[0].hook.starts_with("t:llm_gate_"),
        "the registered name: {calls:?}"
    );
    let failing = Judge::new("not json", 0.0);
    let evt = failing.event(EventKind::Stop, json!({}), None);
    d.dispatch(&evt, soon());
    let calls = capt_hook_journal::judge::recorded(&evt);
    assert!(!calls[0].ok && calls[0].error.is_some(), "{calls:?}");
    // An event without an LLM hook records nothing.
    let evt = judge.event(EventKind::Stop, json!({}), None);
    assert!(capt_hook_journal::judge::recorded(&evt).is_empty());
}

#[test]
fn an_inline_tests_before_text_must_fit_the_edit() {
    let mut o = LlmOptions::nudge("Any new comment?", "Drop it.");
    o.contexts = vec![Context::introduced(None, &["comment"]).unwrap()];
    let mut reg = Registry::new();
    let hook = reg
        .add("t", llm_nudge(o).unwrap().events(&[EventKind::PreToolUse]))
        .unwrap();
    let edit = |before: &str| capt_hook_testing::InlineTest {
        input: Input::new()
            .tool("Edit")
            .file("src/a.py")
            .before(before)
            .old("x = 1")
            .content("x = 2  # two"),
        expect: Expect::warn(),
        line: None,
    };
    let t = edit("x = 1\n");
    assert_eq!(run_test(hook, &t, None).status, Status::Pass);
    let out = run_test(hook, &edit("y = 0\n"), None);
    assert_eq!(out.status, Status::Error, "{}", out.reason);
    assert!(
        out.reason.contains("before:") && out.reason.contains("old_string"),
        "{}",
        out.reason
    );
}

#[test]
fn a_rust_verdict_type_gives_the_schema() {
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Severity {
        Low,
        High,
    }
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Review {
        /// true when the change needs a second look
        risky: bool,
        why: String,
        #[schemars(range(min = 1, max = 5))]
        score: i32,
        severity: Severity,
    }
    let schema = verdict_schema_of::<Review>().unwrap();
    assert_eq!(schema.field("risky").unwrap().ty, FieldType::Bool);
    assert_eq!(
        schema.field("risky").unwrap().description.as_deref(),
        Some("true when the change needs a second look")
    );
    assert_eq!(schema.field("why").unwrap().ty, FieldType::String);
    assert_eq!(
        schema.field("score").unwrap().ty,
        FieldType::Integer {
            min: Some(1),
            max: Some(5)
        }
    );
    assert_eq!(
        schema.field("severity").unwrap().ty,
        FieldType::Choice(vec!["Low".into(), "High".into()])
    );
    // It drives a gate like a field list does: the stubbed judge fills it.
    let mut o = LlmOptions::gate("Is it risky?", "Second look ({severity}, {score}/5): {why}");
    o.response = schema;
    o.verdict = "risky".into();
    let mut reg = Registry::new();
    let hook = reg.add("t", llm_gate(o).unwrap()).unwrap();
    let t = capt_hook_testing::InlineTest {
        input: Input::new(),
        expect: Expect::block().matching("Second look \\((Low|High), 1/5\\): inline test stub"),
        line: None,
    };
    let out = run_test(hook, &t, None);
    assert_eq!(out.status, Status::Pass, "{}", out.reason);

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Loose {
        maybe: Option<bool>,
    }
    let e = verdict_schema_of::<Loose>().err().unwrap();
    assert!(e.message.contains("`maybe`"), "{e:?}");
}

#[test]
fn the_remaining_options_shape_the_call_or_the_result() {
    let judge = Judge::new(BLOCK, 0.0);
    let gate = |f: &dyn Fn(&mut LlmOptions)| {
        let mut o = LlmOptions::gate("Is the agent making excuses?", "Fix it.");
        f(&mut o);
        dispatcher(vec![llm_gate(o).unwrap()])
    };
    // `when` says no: no call.
    let d = gate(&|o| o.when = Some(Arc::new(|_: &Event| false)));
    assert_eq!(
        d.dispatch(&judge.event(EventKind::Stop, json!({}), None), soon()),
        None
    );
    assert_eq!(judge.calls(), 0);
    // A gate skips while the session waits on background work, unless told not to.
    let waiting = json!({"background_tasks": [{"id": "b1"}]});
    assert_eq!(
        gate(&|_| {}).dispatch(&judge.event(EventKind::Stop, waiting.clone(), None), soon()),
        None
    );
    assert_eq!(judge.calls(), 0, "no judge while waiting");
    let r = gate(&|o| o.guards_waiting = Some(false))
        .dispatch(&judge.event(EventKind::Stop, waiting, None), soon());
    assert_eq!(r.map(|r| r.action), Some(Action::Block));
    assert_eq!(judge.calls(), 1);
    // A message computed in Rust from the verdict.
    let computed = Judge::new(BLOCK, 0.0);
    let r = gate(&|o| {
        o.message = Message::Fn(Arc::new(|v: &Map<String, Value>| {
            format!("because {}", v["reasoning"].as_str().unwrap_or(""))
        }));
    })
    .dispatch(&computed.event(EventKind::Stop, json!({}), None), soon());
    assert_eq!(
        r.and_then(|r| r.message).as_deref(),
        Some("because blames an outage")
    );
    // The window: tool results only with `tool_results`, each piece clipped by `budget`, the
    // whole within `max_context`.
    let window = Judge::new(PASS, 0.0);
    let with_tools = |j: &Judge| {
        let evt = j.event(EventKind::Stop, json!({}), None);
        let lines = [
            json!({"type": "user", "message": {"role": "user", "content": "run the suite please"}}),
            json!({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cargo test"}}
            ]}}),
            json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "3 failed", "is_error": true}
            ]}}),
            json!({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": "An external service outage broke three tests, not our code at all."}
            ]}}),
        ];
        let payload = evt.payload().clone();
        Arc::new(
            Event::new(
                EventKind::Stop,
                Value::Object(payload),
                evt.context().clone(),
            )
            .unwrap()
            .with_transcript(capt_hook_transcript::Transcript::from_values(lines.iter())),
        )
    };
    gate(&|o| o.once_per_turn = Some(false)).dispatch(&with_tools(&window), soon());
    gate(&|o| {
        o.once_per_turn = Some(false);
        o.tool_results = true;
        o.budget = Budget {
            prose: 20,
            ..Budget::default()
        };
    })
    .dispatch(&with_tools(&window), soon());
    gate(&|o| {
        o.once_per_turn = Some(false);
        o.max_context = 100;
    })
    .dispatch(&with_tools(&window), soon());
    let contexts: Vec<String> = window
        .requests()
        .iter()
        .map(|r| {
            let p = r["prompt"].as_str().unwrap();
            let start = p.find("<context>\n").unwrap() + "<context>\n".len();
            p[start..p[start..].find("\n</context>").unwrap() + start].to_owned()
        })
        .collect();
    assert_eq!(contexts.len(), 3);
    let plain = contexts
        .iter()
        .find(|c| c.contains("not our code at all"))
        .unwrap();
    assert!(!plain.contains("failed: 3 failed"), "{plain}");
    let tooled = contexts
        .iter()
        .find(|c| c.contains("failed: 3 failed"))
        .unwrap();
    assert!(
        !tooled.contains("not our code at all"),
        "clipped by the budget: {tooled}"
    );
    // Only the newest piece fits in 100 characters.
    assert!(
        contexts.iter().any(|c| c.len() <= 100
            && c.contains("not our code at all")
            && !c.contains("run the suite")),
        "max_context bounds the window: {contexts:?}"
    );

    // advisory_on_deny: a nudge's warning rides on another hook's deny.
    let nudge = Judge::new(r#"{"fire": true, "reasoning": "r"}"#, 0.0);
    let mut n = LlmOptions::nudge("Anything to add?", "Also: check the docs.");
    n.once_per_turn = Some(false);
    let d = dispatcher(vec![
        capt_hook_engine::deny("no pushes"),
        llm_nudge(n.clone())
            .unwrap()
            .events(&[EventKind::PreToolUse])
            .advisory_on_deny(true),
    ]);
    let push = nudge.event(
        EventKind::PreToolUse,
        json!({"tool_name": "Bash", "tool_input": {"command": "git push"}}),
        None,
    );
    let m = d.dispatch(&push, soon()).unwrap().message.unwrap();
    assert!(
        m.contains("no pushes") && m.contains("Also: check the docs."),
        "{m}"
    );
}

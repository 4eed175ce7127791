//! The SDK end to end in one process: Rust builders, TOML loading and its errors, dispatch
//! (fold order, concurrency, deadlines, failing handlers) and the inline-test runner.

// A test fails by panicking: unwrap and expect are how it says what broke.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use captain_hook::core::{Action, EventContext, EventKind, envelope};
use captain_hook::loader::load_str;
use captain_hook::testing::{Status, human_report, run_test};
use captain_hook::{
    CommandMatch, Condition, DispatchOptions, Dispatcher, Event, Expect, HandlerError, Input,
    Registry, approve, ask, block_command, deny, hook, on, rewrite_command, rewrite_command_to,
    set_tool_input, warn_command,
};
use serde_json::{Value, json};

fn bash(command: &str) -> Arc<Event> {
    Arc::new(
        Event::new(
            EventKind::PreToolUse,
            json!({"tool_name": "Bash", "tool_input": {"command": command, "timeout": 5}}),
            EventContext::default(),
        )
        .unwrap(),
    )
}

fn verdict(registry: Registry, evt: &Arc<Event>) -> Option<Value> {
    let d = Dispatcher::new(Arc::new(registry), None);
    let r = d.dispatch(evt, DispatchOptions::default());
    envelope(evt.kind(), r.as_ref()).map(|o| serde_json::from_str(&o.render()).unwrap())
}

#[test]
fn rust_builders_lower_like_toml() {
    let mut reg = Registry::new();
    reg.add(
        "mine",
        block_command(
            CommandMatch::argv(&["git", "stash"]).unwrap(),
            "No stashing.",
        )
        .hint("Commit instead...")
        .test(
            Input::command("git stash pop"),
            Expect::block().matching("Commit"),
        ),
    )
    .unwrap();
    let h = &reg.hooks()[0];
    assert!(h.name.starts_with("mine:block_command_"));
    assert_eq!(h.kind, "block_command");
    let out = verdict(reg.clone(), &bash("cd x && git stash")).unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecisionReason"],
        "BLOCKED: No stashing. Commit instead."
    );
    assert_eq!(verdict(reg.clone(), &bash("echo 'git stash'")), None);
    let outcome = run_test(h, &h.tests[0], None);
    assert_eq!(outcome.status, Status::Pass, "{outcome:?}");

    let mut toml = Registry::new();
    load_str(
        "[[hook]]\nkind = \"block_command\"\nargv = [\"git\", \"stash\"]\nreason = \"No stashing.\"\nhint = \"Commit instead...\"\n",
        "mine",
        &mut toml,
    )
    .unwrap();
    assert_eq!(
        toml.hooks()[0].name,
        reg.hooks()[0].name,
        "same def, same name"
    );
}

#[test]
fn deny_wins_over_approve_whatever_the_order() {
    for approve_first in [true, false] {
        let mut reg = Registry::new();
        let a = approve("everything");
        let d = deny("not this").only_if(Condition::tool(&["Bash"]));
        if approve_first {
            reg.add("p", a).unwrap();
            reg.add("p", d).unwrap();
        } else {
            reg.add("p", d).unwrap();
            reg.add("p", a).unwrap();
        }
        let out = verdict(reg, &bash("ls")).unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    }
}

#[test]
fn rewrites_keep_other_input_keys_and_conditional_form_blocks() {
    let mut reg = Registry::new();
    reg.add(
        "r",
        rewrite_command(r"^cat\s+(\S+)$", r"bat \1")
            .unwrap()
            .note("prettier"),
    )
    .unwrap();
    let out = verdict(reg.clone(), &bash("cat a.txt")).unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["updatedInput"],
        json!({"command": "bat a.txt", "timeout": 5})
    );
    assert_eq!(out["hookSpecificOutput"]["additionalContext"], "prettier");
    // One parsed command matches, the whole line does not: nothing to substitute, so no
    // verdict at all (an unchanged rewrite would have approved the call).
    assert_eq!(verdict(reg, &bash("cat a.txt && make")), None);

    let mut reg = Registry::new();
    reg.add(
        "r",
        rewrite_command_to(|evt| {
            let cmd = evt.command()?;
            cmd.starts_with("pip ").then(|| format!("uv {cmd}"))
        })
        .block_with("Use uv")
        .only_if(Condition::Runs(
            captain_hook::core::Tokens::new(&["pip|npm"]).unwrap(),
        )),
    )
    .unwrap();
    let out = verdict(reg.clone(), &bash("pip install x")).unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["updatedInput"]["command"],
        "uv pip install x"
    );
    let out = verdict(reg.clone(), &bash("npm install x")).unwrap();
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(verdict(reg, &bash("ls")), None);
}

/// The seeds: a conditional rewrite's note may be computed from the event. It reaches the
/// agent as context beside the rewrite, and a computed `None` sends none.
#[test]
fn a_rewrite_note_can_be_computed_from_the_event() {
    let mut reg = Registry::new();
    reg.add(
        "n",
        rewrite_command_to(|evt| Some(evt.command()?.replacen("pip ", "uv pip ", 1)))
            .note_with(|evt| {
                let cmd = evt.command()?;
                cmd.contains("install")
                    .then(|| format!("Rewrote `{cmd}` to run through uv"))
            })
            .only_if(Condition::Runs(
                captain_hook::core::Tokens::new(&["pip"]).unwrap(),
            )),
    )
    .unwrap();
    let out = verdict(reg.clone(), &bash("pip install x")).unwrap();
    let specific = &out["hookSpecificOutput"];
    assert_eq!(specific["updatedInput"]["command"], "uv pip install x");
    assert_eq!(
        specific["additionalContext"],
        "Rewrote `pip install x` to run through uv"
    );
    let out = verdict(reg, &bash("pip list")).unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["updatedInput"]["command"],
        "uv pip list"
    );
    assert!(
        out["hookSpecificOutput"].get("additionalContext").is_none(),
        "{out}"
    );
}

/// Registrations sharing a name share a state key (one fire counter, one state directory):
/// they run in registration order within their group, while other hooks run beside them.
#[test]
fn registrations_sharing_a_state_key_run_in_order_within_their_group() {
    use std::sync::Mutex;
    let order: Arc<Mutex<Vec<&'static str>>> = Arc::new(Mutex::new(Vec::new()));
    let step = |label: &'static str, pause: u64| {
        let order = Arc::clone(&order);
        move |_: &Event| {
            std::thread::sleep(Duration::from_millis(pause));
            order.lock().unwrap().push(label);
            Ok(None)
        }
    };
    let mut reg = Registry::new();
    // The first of the shared pair is the slow one: side by side, the second would finish first.
    reg.add(
        "g",
        on(&[EventKind::PreToolUse], step("same key 1", 300)).name("same-key"),
    )
    .unwrap();
    reg.add(
        "g",
        on(&[EventKind::PreToolUse], step("same key 2", 0)).name("same-key"),
    )
    .unwrap();
    reg.add(
        "g",
        on(&[EventKind::PreToolUse], step("other", 300)).name("other"),
    )
    .unwrap();
    let d = Dispatcher::new(Arc::new(reg), None);
    let started = Instant::now();
    d.dispatch(&bash("ls"), DispatchOptions::default());
    let took = started.elapsed();
    let seen = order.lock().unwrap().clone();
    let at = |label: &str| seen.iter().position(|s| *s == label).unwrap();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(at("same key 1") < at("same key 2"), "{seen:?}");
    // The other group ran beside the shared one, not after it.
    assert!(took < Duration::from_millis(550), "{took:?}");
}

#[test]
fn each_hook_keeps_its_own_state_per_agent() {
    #[derive(Default, serde::Serialize, serde::Deserialize)]
    struct Seen {
        count: u32,
    }
    let counter = |evt: &Event| {
        evt.hook_store()
            .mutate(|s: &mut Seen| s.count += 1)
            .unwrap();
        Ok(None)
    };
    let mut reg = Registry::new();
    reg.add("g", on(&[EventKind::PreToolUse], counter).name("tally"))
        .unwrap();
    // A second registration under the same name shares the hook's state.
    reg.add("g", on(&[EventKind::PreToolUse], counter).name("tally"))
        .unwrap();
    reg.add("g", on(&[EventKind::PreToolUse], counter).name("other"))
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let event = |agent: Option<&str>| {
        let mut payload = json!({"session_id": "s1", "tool_name": "Bash",
            "tool_input": {"command": "ls"}});
        if let Some(a) = agent {
            payload["agent_id"] = a.into();
        }
        let ctx = EventContext {
            state_root: Some(root.path().to_path_buf()),
            ..EventContext::default()
        };
        Arc::new(Event::new(EventKind::PreToolUse, payload, ctx).unwrap())
    };
    let d = Dispatcher::new(Arc::new(reg), None);
    d.dispatch(&event(None), DispatchOptions::default());
    d.dispatch(&event(Some("a1")), DispatchOptions::default());
    let session = root.path().join("hooks/sessions/s1");
    let count = |rel: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(session.join(rel)).unwrap()).unwrap()
    };
    // The state key is the hook's registered name (`<file>:on_<name>`).
    assert_eq!(count("g:on_tally/main/seen.json")["count"], 2);
    assert_eq!(count("g:on_tally/a1/seen.json")["count"], 2);
    assert_eq!(count("g:on_other/main/seen.json")["count"], 1);
    assert!(
        !session.join("seen.json").exists(),
        "nothing at the session root"
    );
}

#[test]
fn set_tool_input_never_clobbers() {
    let mut reg = Registry::new();
    reg.add("s", set_tool_input("Bash", "timeout", 60)).unwrap();
    reg.add("s", set_tool_input("Bash", "description", "ran by a hook"))
        .unwrap();
    let out = verdict(reg, &bash("ls")).unwrap();
    // The first rewrite wins; its field was already present, so the second one does.
    assert_eq!(
        out["hookSpecificOutput"]["updatedInput"]["description"],
        "ran by a hook"
    );
    assert_eq!(out["hookSpecificOutput"]["updatedInput"]["timeout"], 5);
}

#[test]
fn failing_and_panicking_handlers_yield_nothing_and_others_still_count() {
    let mut reg = Registry::new();
    reg.add(
        "h",
        on(&[EventKind::PreToolUse], |_| Err(HandlerError::new("boom"))),
    )
    .unwrap();
    reg.add(
        "h",
        on(&[EventKind::PreToolUse], |_| panic!("handler bug")).name("panics"),
    )
    .unwrap();
    reg.add("h", hook(&[EventKind::PreToolUse], "still here"))
        .unwrap();
    let out = verdict(reg, &bash("ls")).unwrap();
    assert_eq!(out["hookSpecificOutput"]["additionalContext"], "still here");
}

#[test]
fn handlers_run_concurrently_but_fold_in_registration_order() {
    let mut reg = Registry::new();
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    for i in 0..4 {
        let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
        reg.add(
            "c",
            on(&[EventKind::PreToolUse], move |_| {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                // Later-registered handlers finish first.
                std::thread::sleep(Duration::from_millis(80 - 20 * i));
                running.fetch_sub(1, Ordering::SeqCst);
                Ok(Some(captain_hook::HookResult::warn(format!("w{i}"))))
            })
            .name(format!("slow {i}")),
        )
        .unwrap();
    }
    let out = verdict(reg, &bash("ls")).unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["additionalContext"],
        "w0\n\nw1\n\nw2\n\nw3"
    );
    assert!(peak.load(Ordering::SeqCst) > 1, "handlers never overlapped");
}

#[test]
fn a_handler_past_the_deadline_is_abandoned() {
    let mut reg = Registry::new();
    reg.add(
        "d",
        on(&[EventKind::PreToolUse], |_| {
            std::thread::sleep(Duration::from_secs(2));
            Ok(Some(captain_hook::HookResult::block("too late")))
        }),
    )
    .unwrap();
    reg.add("d", hook(&[EventKind::PreToolUse], "on time"))
        .unwrap();
    let d = Dispatcher::new(Arc::new(reg), None);
    let evt = bash("ls");
    let started = Instant::now();
    let r = d
        .dispatch(
            &evt,
            DispatchOptions {
                deadline: Some(Instant::now() + Duration::from_millis(100)),
                run_async: false,
            },
        )
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(r.action, Action::Warn);
    assert_eq!(r.message.as_deref(), Some("on time"));
}

#[test]
fn definition_errors_name_the_field() {
    let cases: Vec<(captain_hook::HookDef, &str)> = vec![
        (hook(&[], "x"), "events"),
        (
            hook(&[EventKind::Stop], "x").only_if(Condition::tool(&["Bash"])),
            "only_if[0]",
        ),
        (
            warn_command(CommandMatch::pattern("ls").unwrap(), "m").events(&[EventKind::Stop]),
            "events",
        ),
        (hook(&[EventKind::PreToolUse], "x").run_async(true), "async"),
        (
            hook(&[EventKind::PostToolUse], "x").mandatory(true),
            "mandatory",
        ),
        (deny(""), "reason"),
    ];
    for (def, field) in cases {
        let err = def.build("f").unwrap_err();
        assert_eq!(err.field, field, "{err}");
    }
    assert_eq!(CommandMatch::argv::<&str>(&[]).unwrap_err().field, "argv");
    assert_eq!(CommandMatch::pattern("(").unwrap_err().field, "pattern");
}

fn load_errors(text: &str) -> String {
    let mut reg = Registry::new();
    match load_str(text, "case", &mut reg) {
        Ok(()) => "loaded".to_owned(),
        Err(errors) => errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[test]
fn load_errors_are_located() {
    insta::assert_snapshot!(load_errors(include_str!("fixtures/bad.toml")));
}

#[test]
fn one_bad_hook_rejects_its_whole_file_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.toml"),
        "[[hook]]\nkind = \"hook\"\nevents = \"Stop\"\nmessage = \"a\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.toml"),
        "[[hook]]\nkind = \"hook\"\nevents = \"Stop\"\nmessage = \"b\"\n\n[[hook]]\nkind = \"nope\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("_skip.toml"), "not toml at all [").unwrap();
    std::fs::write(dir.path().join("c.toml"), [0xff, 0xfe]).unwrap();
    let mut reg = Registry::new();
    let errors = captain_hook::load_dir(dir.path(), &mut reg);
    let names: Vec<&str> = reg.hooks().iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names.len(), 1);
    assert!(names[0].starts_with("a:hook_"));
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0]
            .to_string()
            .contains("b.toml:7:8: hook[1].kind: unknown variant `nope`")
    );
    assert!(errors[1].to_string().contains("c.toml: not UTF-8"));
}

#[test]
fn inline_test_report_format() {
    let mut reg = Registry::new();
    load_str(
        r#"
[[hook]]
kind = "block_command"
argv = ["git", "stash"]
reason = "Use jj instead of git stash"

  [[hook.test]]
  input = { command = "git stash" }
  expect = "block"
  pattern = "mercurial"

  [[hook.test]]
  input = { command = "git stash" }
  expect = "block"

  [[hook.test]]
  input = { command = "ls" }
  expect = "warn"
"#,
        "no_stash",
        &mut reg,
    )
    .unwrap();
    let h = &reg.hooks()[0];
    let outcomes: Vec<_> = h.tests.iter().map(|t| run_test(h, t, None)).collect();
    let report = human_report(&outcomes).replace(&h.name, "<name>");
    insta::assert_snapshot!(report);
}

#[test]
fn workflows_in_rust_take_closures_and_post_complete() {
    use captain_hook::session::{Step, Workflow, workflow, workflow_on_start};
    let transcript = |text: &str| {
        captain_hook::core::history::transcript_from_values(&[json!({
            "type": "assistant", "uuid": "a1", "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}
        })])
    };
    let flow = Workflow {
        label: "REVIEW".into(),
        marker: "REVIEW DONE".into(),
        steps: vec![Step {
            name: "cite".into(),
            check: Arc::new(|evt: &Event| evt.transcript().session().prose_text().contains("see ")),
            message: "Cite the code you reviewed.".into(),
        }],
        artifacts: Vec::new(),
        post_complete: Some(Arc::new(|_| Some(captain_hook::HookResult::warn("thanks")))),
    };
    let mut reg = Registry::new();
    reg.add("wf", workflow(flow).unwrap()).unwrap();
    reg.add(
        "wf",
        workflow_on_start("REVIEW", |_| {
            Some(captain_hook::HookResult::warn("Finish with REVIEW DONE"))
        }),
    )
    .unwrap();
    let d = Dispatcher::new(Arc::new(reg), None);
    let stop = |text: &str| {
        let evt = Event::new(
            EventKind::SubagentStop,
            json!({"agent_id": "a1", "agent_type": "reviewer"}),
            EventContext::default(),
        )
        .unwrap()
        .with_transcript(transcript(text));
        d.dispatch(&Arc::new(evt), DispatchOptions::default())
    };
    let r = stop("I looked around.").unwrap();
    assert_eq!(
        r.message.as_deref(),
        Some("REVIEW INCOMPLETE: Cite the code you reviewed.")
    );
    let r = stop("see src/a.rs; REVIEW DONE").unwrap();
    assert_eq!(r.message.as_deref(), Some("thanks"));
    let start = Event::new(
        EventKind::SubagentStart,
        json!({"agent_id": "a1", "agent_type": "reviewer"}),
        EventContext::default(),
    )
    .unwrap();
    let r = d
        .dispatch(&Arc::new(start), DispatchOptions::default())
        .unwrap();
    assert_eq!(r.message.as_deref(), Some("Finish with REVIEW DONE"));
}

/// A guarded event's outcome once failures are weighed.
fn weighed(reg: Registry, evt: &Arc<Event>) -> captain_hook::dispatch::Verdict {
    let d = Dispatcher::new(Arc::new(reg), None);
    d.outcome(evt, DispatchOptions::default())
        .verdict(evt.kind())
}

#[test]
fn a_failing_handler_never_lets_another_hooks_approval_through() {
    use captain_hook::dispatch::Verdict;
    for failing in [
        on(&[EventKind::PreToolUse], |_| Err(HandlerError::new("boom"))).name("errs"),
        on(&[EventKind::PreToolUse], |_| panic!("handler bug")).name("panics"),
    ] {
        let mut reg = Registry::new();
        reg.add("g", approve("everything")).unwrap();
        reg.add("g", failing).unwrap();
        reg.add("g", hook(&[EventKind::PreToolUse], "context"))
            .unwrap();
        let evt = bash("ls");
        match weighed(reg.clone(), &evt) {
            Verdict::Unchecked { reason, partial } => {
                assert!(
                    reason.contains("g:on_errs failed: boom")
                        || reason.contains("g:on_panics panicked: handler bug"),
                    "{reason}"
                );
                assert_eq!(partial.unwrap().action, Action::Allow);
            }
            other => panic!("expected an unchecked verdict, got {other:?}"),
        }
        // The plain dispatch keeps the context and drops the approval.
        let out = verdict(reg, &evt).unwrap();
        assert_eq!(out["hookSpecificOutput"]["additionalContext"], "context");
        assert!(
            out["hookSpecificOutput"]
                .get("permissionDecision")
                .is_none()
        );
    }
}

/// An `ask` leaves the call to the user whatever another hook approves, names its reason, and
/// loses to a deny; with nothing matched it says nothing.
#[test]
fn an_ask_outweighs_approvals_but_not_a_deny() {
    use captain_hook::dispatch::Verdict;
    let only_rm = || Condition::Runs(captain_hook::core::Tokens::new(&["rm"]).unwrap());
    let mut reg = Registry::new();
    reg.add("g", approve("everything")).unwrap();
    reg.add("g", ask("rm needs a look").name("rm").only_if(only_rm()))
        .unwrap();
    match weighed(reg.clone(), &bash("rm x")) {
        Verdict::Unchecked { reason, partial } => {
            assert!(
                reason.contains("leaves this call to you: rm needs a look (hook g:ask_rm)"),
                "{reason}"
            );
            // A deliberate ask is no failure: no failure wording, no pointer to the logs.
            assert!(
                !reason.contains("could not check") && !reason.contains("capt-hook logs"),
                "{reason}"
            );
            assert_eq!(partial.unwrap().action, Action::Allow);
        }
        other => panic!("expected the call left to the user, got {other:?}"),
    }
    let d = Dispatcher::new(Arc::new(reg.clone()), None);
    let evt = bash("rm x");
    let out = d.outcome(&evt, DispatchOptions::default());
    let rendered = match out.verdict(evt.kind()) {
        Verdict::Unchecked { reason, .. } => {
            captain_hook::core::envelope::Unchecked::because(reason)
                .output(evt.kind())
                .unwrap()
                .render()
        }
        other => panic!("{other:?}"),
    };
    let v: Value = serde_json::from_str(&rendered).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask");
    // Not matched: the approval stands.
    assert!(
        matches!(weighed(reg.clone(), &bash("ls")), Verdict::Decided(Some(r)) if r.action == Action::Allow)
    );
    // A deny wins over the ask.
    reg.add("g", deny("never")).unwrap();
    assert!(matches!(weighed(reg, &bash("rm x")), Verdict::Decided(Some(r)) if r.is_block()));
    // An ask cannot be confirmed or vetoed.
    let err = Registry::new()
        .add("g", ask("x").when(|_| true))
        .unwrap_err()
        .to_string();
    assert!(err.contains("when"), "{err}");
}

#[test]
fn a_deny_stands_and_other_events_only_lose_the_failed_verdict() {
    use captain_hook::dispatch::Verdict;
    let mut reg = Registry::new();
    reg.add(
        "g",
        on(&[EventKind::PreToolUse, EventKind::PostToolUse], |_| {
            Err(HandlerError::new("boom"))
        }),
    )
    .unwrap();
    reg.add("g", deny("never")).unwrap();
    let Verdict::Decided(Some(r)) = weighed(reg.clone(), &bash("ls")) else {
        panic!("the deny must stand");
    };
    assert!(r.is_block());

    let mut reg = Registry::new();
    reg.add(
        "g",
        on(&[EventKind::PostToolUse], |_| {
            Err(HandlerError::new("boom"))
        }),
    )
    .unwrap();
    let post = Arc::new(
        Event::new(
            EventKind::PostToolUse,
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
            EventContext::default(),
        )
        .unwrap(),
    );
    let d = Dispatcher::new(Arc::new(reg), None);
    let outcome = d.outcome(&post, DispatchOptions::default());
    assert_eq!(outcome.failures.len(), 1);
    assert_eq!(
        outcome.verdict(EventKind::PostToolUse),
        Verdict::Decided(None)
    );
}

#[test]
fn a_mandatory_hook_that_fails_or_misses_the_deadline_denies() {
    let slow = on(&[EventKind::PreToolUse], |_| {
        std::thread::sleep(Duration::from_secs(2));
        Ok(None)
    })
    .name("slow")
    .mandatory(true);
    let erring = on(&[EventKind::PermissionRequest], |_| {
        Err(HandlerError::new("no network"))
    })
    .name("erring")
    .mandatory(true);
    let mut reg = Registry::new();
    reg.add("m", slow).unwrap();
    reg.add("m", erring).unwrap();
    reg.add("m", approve("all")).unwrap();
    let d = Dispatcher::new(Arc::new(reg), None);

    let r = d
        .dispatch(
            &bash("ls"),
            DispatchOptions {
                deadline: Some(Instant::now() + Duration::from_millis(100)),
                run_async: false,
            },
        )
        .unwrap();
    assert!(r.is_block());
    let msg = r.message.unwrap();
    assert!(
        msg.contains("mandatory hook m:on_slow did not finish before the deadline"),
        "{msg}"
    );

    let perm = Arc::new(
        Event::new(
            EventKind::PermissionRequest,
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
            EventContext::default(),
        )
        .unwrap(),
    );
    let r = d.dispatch(&perm, DispatchOptions::default()).unwrap();
    let out = envelope(EventKind::PermissionRequest, Some(&r))
        .unwrap()
        .render();
    assert!(out.contains("\"behavior\":\"deny\""), "{out}");
    assert!(out.contains("m:on_erring failed: no network"), "{out}");
}

/// A deny another hook reached stands when a mandatory hook fails beside it, and the user is
/// told which guard did not check the call and where to look.
#[test]
fn a_failed_mandatory_hook_beside_a_deny_adds_its_note() {
    let erring = on(&[EventKind::PreToolUse], |_| {
        Err(HandlerError::new("no network"))
    })
    .name("erring")
    .mandatory(true);
    let mut reg = Registry::new();
    reg.add("m", erring).unwrap();
    reg.add(
        "m",
        block_command(CommandMatch::argv(&["rm"]).unwrap(), "no rm here"),
    )
    .unwrap();
    let d = Dispatcher::new(Arc::new(reg), None);
    let r = d
        .dispatch(&bash("rm x"), DispatchOptions::default())
        .unwrap();
    assert!(r.is_block());
    assert!(
        r.message.as_deref().unwrap().contains("no rm here"),
        "{r:?}"
    );
    let note = r.system_message.unwrap();
    assert!(note.contains("m:on_erring failed: no network"), "{note}");
    assert!(note.contains("capt-hook logs"), "{note}");
}

#[test]
fn a_project_with_a_broken_file_asks_on_guarded_events() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join(".claude/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(
        hooks.join("a.toml"),
        "[[hook]]\nkind = \"block_command\"\nargv = [\"git\", \"stash\"]\nreason = \"no\"\n\
         [[hook]]\nkind = \"approve\"\nlabel = \"all\"\n",
    )
    .unwrap();
    std::fs::write(
        hooks.join("b.toml"),
        "[[hook]]\nkind = \"deny\"\nreason = [\n",
    )
    .unwrap();
    let project = captain_hook::Project::load(dir.path(), &hooks);
    assert_eq!(project.errors().len(), 1);
    let run = |event: &str, command: &str| {
        let payload = json!({"tool_name": "Bash", "tool_input": {"command": command}});
        let eval = project.evaluate(
            event,
            payload.to_string().as_bytes(),
            DispatchOptions::default(),
        );
        assert!(eval.unchecked);
        serde_json::from_str::<Value>(&eval.stdout.expect("an answer")).unwrap()
    };
    let v = run("PreToolUse", "ls");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask", "{v}");
    let why = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(why.contains("b.toml:3:"), "{why}");
    // Without a session there is nowhere to remember the notice: it rides every answer.
    assert!(v["systemMessage"].as_str().unwrap().contains("b.toml:3:"));
    let v = run("PreToolUse", "git stash");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    let v = run("PermissionRequest", "ls");
    assert!(
        v["systemMessage"].as_str().unwrap().contains("b.toml:3:"),
        "{v}"
    );
    assert!(
        v.get("hookSpecificOutput").is_none(),
        "no decision: the dialog shows"
    );
    let v = run("PostToolUse", "ls");
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap()
            .contains("did not load"),
        "{v}"
    );
    // A skill's shell command cannot wait for a prompt: unchecked, it does not run.
    let v = run("PreSkillShellCommand", "ls");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    let why = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        why.contains("b.toml:3:") && why.contains("cannot wait"),
        "{why}"
    );
    // In `claude -p` nobody sees a systemMessage: the session's start tells the agent too.
    let eval = project.evaluate(
        "SessionStart",
        json!({"source": "startup"}).to_string().as_bytes(),
        DispatchOptions::default(),
    );
    let v: Value = serde_json::from_str(&eval.stdout.expect("an answer")).unwrap();
    assert_eq!(
        v["hookSpecificOutput"]["hookEventName"], "SessionStart",
        "{v}"
    );
    assert!(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("b.toml:3:"),
        "{v}"
    );
}

#[test]
fn unreadable_payloads_ask_on_guarded_events_only() {
    let project = captain_hook::Project::from_registry(std::path::Path::new("/"), Registry::new());
    let eval = project.evaluate("PreToolUse", b"{\"tool_name\":", DispatchOptions::default());
    assert!(
        eval.stderr[0].starts_with("Malformed stdin: "),
        "{:?}",
        eval.stderr
    );
    let v: Value = serde_json::from_str(&eval.stdout.unwrap()).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask");
    let eval = project.evaluate(
        "PostToolUse",
        b"{\"tool_name\":",
        DispatchOptions::default(),
    );
    assert_eq!((eval.stdout, eval.exit_code), (None, 0));
    let eval = project.evaluate("PreToolUse", b"[1]", DispatchOptions::default());
    assert!(
        eval.stdout
            .unwrap()
            .contains("expected a JSON object, got an array")
    );
}

/// Inline tests go through the dispatcher a session uses: a test on an event the hook does not
/// listen to fails and says why, a gitignored file is skipped, and a fire cap holds.
#[test]
fn inline_tests_honour_events_gitignore_and_fire_caps() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join(".gitignore"), "generated\n").unwrap();
    let mut reg = Registry::new();
    load_str(
        "[[hook]]\nkind = \"block_command\"\nargv = [\"git\", \"stash\"]\nreason = \"no\"\n\n\
           [[hook.test]]\n  input = { command = \"git stash\", event = \"PostToolUse\" }\n  expect = \"block\"\n\n\
         [[hook]]\nkind = \"hook\"\nevents = \"PreToolUse\"\nmessage = \"careful\"\nonly_if = [{ tool = \"Write\" }]\n\n\
           [[hook.test]]\n  input = { file = \"generated/out.py\", content = \"x\" }\n  expect = \"allow\"\n\n\
           [[hook.test]]\n  input = { file = \"src/out.py\", content = \"x\" }\n  expect = \"warn\"\n\n\
         [[hook]]\nkind = \"hook\"\nevents = \"PreToolUse\"\nmessage = \"never\"\nmax_fires = 0\n\n\
           [[hook.test]]\n  input = { command = \"ls\" }\n  expect = \"warn\"\n",
        "t",
        &mut reg,
    )
    .unwrap();
    let results: Vec<_> = reg
        .hooks()
        .iter()
        .flat_map(|h| {
            h.tests
                .iter()
                .map(|t| {
                    let mut t = t.clone();
                    // Relative test files live under the project root.
                    if let Some(f) = &mut t.input.file {
                        *f = root.path().join(&*f).display().to_string();
                    }
                    run_test(h, &t, Some(root.path()))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(results[0].status, Status::Fail, "{results:?}");
    assert!(
        results[0].reason.contains("listens to PreToolUse"),
        "{results:?}"
    );
    assert_eq!(results[1].status, Status::Pass, "gitignored: {results:?}");
    assert_eq!(results[2].status, Status::Pass, "{results:?}");
    assert_eq!(
        results[3].status,
        Status::Fail,
        "max_fires = 0: {results:?}"
    );
}

/// What `Project::evaluate` (the worker's and `capt-hook run`'s path) prints for a Bash call
/// under a short deadline: the parsed envelope and the elapsed time.
fn evaluate_guarded(reg: Registry, event: &str, command: &str) -> (Value, Duration) {
    let project = captain_hook::Project::from_registry(std::path::Path::new("/"), reg);
    let payload = json!({"tool_name": "Bash", "tool_input": {"command": command}});
    let started = Instant::now();
    let eval = project.evaluate(
        event,
        payload.to_string().as_bytes(),
        DispatchOptions {
            deadline: Some(Instant::now() + Duration::from_millis(150)),
            run_async: false,
        },
    );
    let elapsed = started.elapsed();
    assert_eq!(eval.exit_code, 0);
    let out = eval
        .stdout
        .expect("a guarded call that could not be checked is never silent");
    (serde_json::from_str(&out).unwrap(), elapsed)
}

/// Every way user code can fail (error, panic, hang, in a handler, a `when` veto, a rewrite
/// closure or a custom condition) leaves a guarded call to the user with the hook named, never
/// with another hook's approval; a mandatory hook denies instead. The process keeps serving.
#[test]
fn user_code_that_fails_anywhere_never_lets_a_guarded_call_through() {
    use captain_hook::cond;
    let hang = |_: &Event| {
        std::thread::sleep(Duration::from_secs(2));
        true
    };
    let failing: Vec<(&str, captain_hook::HookDef)> = vec![
        (
            "on_hangs",
            on(
                &[EventKind::PreToolUse, EventKind::PermissionRequest],
                |_| {
                    std::thread::sleep(Duration::from_secs(2));
                    Ok(None)
                },
            )
            .name("hangs"),
        ),
        (
            "hook_vetoed",
            hook(&[EventKind::PreToolUse, EventKind::PermissionRequest], "x")
                .when(|_| panic!("veto bug"))
                .name("vetoed"),
        ),
        (
            "rewrite_command_slow_rewrite",
            rewrite_command_to(move |_| {
                hang(&bash("ls"));
                Some("ls -la".into())
            })
            .events(&[EventKind::PreToolUse, EventKind::PermissionRequest])
            .name("slow rewrite"),
        ),
        (
            "hook_bad_condition",
            hook(&[EventKind::PreToolUse, EventKind::PermissionRequest], "x")
                .only_if(cond::custom("explodes", |_| panic!("condition bug")))
                .name("bad condition"),
        ),
    ];
    for (name, def) in failing {
        let mut reg = Registry::new();
        reg.add("f", approve("everything")).unwrap();
        reg.add("f", def.clone()).unwrap();
        let (v, elapsed) = evaluate_guarded(reg.clone(), "PreToolUse", "ls");
        assert!(
            elapsed < Duration::from_secs(1),
            "{name}: waited {elapsed:?}"
        );
        assert_eq!(
            v["hookSpecificOutput"]["permissionDecision"], "ask",
            "{name}: {v}"
        );
        let why = v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap();
        assert!(why.contains(&format!("f:{name}")), "{name}: {why}");
        // At the dialog: no decision, so the dialog shows; the user is told why.
        let (v, _) = evaluate_guarded(reg, "PermissionRequest", "ls");
        assert!(v.get("hookSpecificOutput").is_none(), "{name}: {v}");
        assert!(
            v["systemMessage"]
                .as_str()
                .unwrap()
                .contains(&format!("f:{name}")),
            "{name}: {v}"
        );

        // The same hook made mandatory denies the call.
        let mut reg = Registry::new();
        reg.add("f", approve("everything")).unwrap();
        reg.add("f", def.mandatory(true)).unwrap();
        let (v, _) = evaluate_guarded(reg, "PreToolUse", "ls");
        assert_eq!(
            v["hookSpecificOutput"]["permissionDecision"], "deny",
            "{name}: {v}"
        );
    }
    // Still serving after all of that: a plain block still blocks.
    let mut reg = Registry::new();
    reg.add("f", deny("no")).unwrap();
    let (v, _) = evaluate_guarded(reg, "PreToolUse", "ls");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
}

/// Off the guarded events, failing user code loses only its own verdict, and a hang there is
/// abandoned at the deadline too (a workflow step, a gate's `when`).
#[test]
fn hangs_off_the_guarded_events_are_abandoned_at_the_deadline() {
    use captain_hook::session::{Step, Workflow, gate, workflow};
    let slow = |_: &Event| {
        std::thread::sleep(Duration::from_secs(2));
        true
    };
    let mut reg = Registry::new();
    reg.add("h", gate("stuck gate").when(slow)).unwrap();
    reg.add(
        "h",
        workflow(Workflow {
            label: "SLOW".into(),
            marker: "DONE".into(),
            steps: vec![Step::new("stuck", slow, "never")],
            artifacts: Vec::new(),
            post_complete: None,
        })
        .unwrap(),
    )
    .unwrap();
    reg.add("h", hook(&[EventKind::SubagentStop], "on time").block(true))
        .unwrap();
    let d = Dispatcher::new(Arc::new(reg), None);
    let evt = Arc::new(
        Event::new(
            EventKind::SubagentStop,
            json!({"agent_id": "a1", "agent_type": "worker"}),
            EventContext::default(),
        )
        .unwrap()
        .with_transcript(captain_hook::transcript::Transcript::empty()),
    );
    let started = Instant::now();
    let opts = DispatchOptions {
        deadline: Some(Instant::now() + Duration::from_millis(150)),
        run_async: false,
    };
    let outcome = d.outcome(&evt, opts);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let failed: Vec<&str> = outcome.failures.iter().map(|f| f.hook.as_str()).collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert_eq!(outcome.result.unwrap().message.as_deref(), Some("on time"));
}

/// `when` vetoes a declarative hook and a handler alike, and runs only once the conditions hold.
#[test]
fn when_vetoes_declarative_and_handler_hooks() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let mut reg = Registry::new();
    reg.add(
        "w",
        hook(&[EventKind::PreToolUse], "careful with rm")
            .only_if(Condition::tool(&["Bash"]))
            .when(move |evt| {
                counted.fetch_add(1, Ordering::SeqCst);
                evt.command().is_some_and(|c| c.contains("rm "))
            }),
    )
    .unwrap();
    reg.add(
        "w",
        on(&[EventKind::PreToolUse], |_| {
            Ok(Some(captain_hook::HookResult::warn("handler spoke")))
        })
        .when(|evt| evt.command() == Some("make")),
    )
    .unwrap();
    let out = verdict(reg.clone(), &bash("rm -rf build")).unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["additionalContext"],
        "careful with rm"
    );
    let out = verdict(reg.clone(), &bash("make")).unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["additionalContext"],
        "handler spoke"
    );
    assert_eq!(verdict(reg.clone(), &bash("ls")), None);
    let before = calls.load(Ordering::SeqCst);
    let write = Arc::new(
        Event::new(
            EventKind::PreToolUse,
            json!({"tool_name": "Write", "tool_input": {"file_path": "a", "content": "rm "}}),
            EventContext::default(),
        )
        .unwrap(),
    );
    assert_eq!(verdict(reg, &write), None);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        before,
        "when ran before only_if held"
    );
}

/// An inline test of a hook whose handler fails is an error, even when it expects no verdict:
/// silence from a broken hook is not a pass.
#[test]
fn inline_tests_of_failing_hooks_are_errors() {
    let mut reg = Registry::new();
    reg.add(
        "t",
        on(&[EventKind::PreToolUse], |_| Err(HandlerError::new("boom")))
            .test(Input::command("ls"), Expect::allow())
            .test(Input::command("ls"), Expect::ask()),
    )
    .unwrap();
    reg.add(
        "t",
        hook(&[EventKind::PreToolUse], "never")
            .only_if(captain_hook::cond::custom("explodes", |_| panic!("bad")))
            .test(Input::command("ls"), Expect::allow()),
    )
    .unwrap();
    let outcomes = captain_hook::testing::run_registry(&reg, None);
    assert_eq!(outcomes.len(), 3);
    for o in &outcomes {
        assert_eq!(o.status, Status::Error, "{o:?}");
    }
    assert!(
        outcomes[0].reason.contains("failed: boom"),
        "{:?}",
        outcomes[0]
    );
    assert!(
        outcomes[2].reason.contains("in a condition"),
        "{:?}",
        outcomes[2]
    );
}

/// The journal entry of an evaluation names what fired, what failed and the verdict, and
/// becomes one ledger row per delivered verdict; a spawned process's event keeps its log line
/// but no rows.
#[test]
fn evaluate_traced_says_what_fired_and_what_failed() {
    let mut reg = Registry::new();
    // The failing handler first: after a block, later handlers are not run at all.
    reg.add(
        "t",
        on(&[EventKind::PreToolUse], |_| Err(HandlerError::new("boom"))).name("broken"),
    )
    .unwrap();
    reg.add(
        "t",
        block_command(
            CommandMatch::argv(&["git", "stash"]).unwrap(),
            "use jj shelve",
        )
        .name("stash-guard"),
    )
    .unwrap();
    let project = captain_hook::Project::from_registry(std::path::Path::new("/"), reg);
    let payload = json!({
        "session_id": "s1", "cwd": "/", "tool_name": "Bash",
        "tool_input": {"command": "git stash pop"}, "tool_use_id": "toolu_9",
    })
    .to_string();
    let (eval, entry) = project.evaluate_traced(
        "PreToolUse",
        payload.as_bytes(),
        DispatchOptions::default(),
        captain_hook::project::Origin::default(),
    );
    assert!(eval.stdout.unwrap().contains("use jj shelve"));
    assert_eq!(entry.verdict.as_deref(), Some("block"));
    assert_eq!(entry.fired.len(), 1);
    let name = entry.fired[0].hook.clone();
    assert!(name.contains("stash_guard"), "{name}");
    assert!(
        entry
            .errors
            .iter()
            .any(|e| e.contains("broken") && e.contains("boom")),
        "{:?}",
        entry.errors
    );
    let line = entry.log_line();
    assert_eq!(
        (line.session.as_str(), line.subject.as_deref()),
        ("s1", Some("git stash pop"))
    );
    let rows = entry.decisions();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].action, rows[0].kind.as_str()),
        ("block", name.as_str())
    );
    assert_eq!(rows[0].event_uuid.as_deref(), Some("toolu_9"));

    let spawned = captain_hook::project::Origin {
        pid: None,
        env: Some(Arc::new(
            [("CAPT_HOOK_SPAWNED".to_owned(), "1".to_owned())].into(),
        )),
        notice_epoch: None,
        notices: Vec::new(),
        agent: None,
    };
    let (_, entry) = project.evaluate_traced(
        "PreToolUse",
        payload.as_bytes(),
        DispatchOptions::default(),
        spawned,
    );
    assert_eq!(entry.fired.len(), 1);
    assert!(
        entry.decisions().is_empty(),
        "spawned processes are not recorded"
    );

    let (_, entry) = project.evaluate_traced(
        "PreToolUse",
        b"{not json",
        DispatchOptions::default(),
        captain_hook::project::Origin::default(),
    );
    assert!(entry.event.is_none());
    assert!(
        entry.errors.iter().any(|e| e.contains("Malformed stdin")),
        "{:?}",
        entry.errors
    );
}

/// What hooks say about a ResourcePressure event waits for the session's next tool event, is
/// delivered there once (to the user and, when nothing else answered, the agent), and never to
/// another session.
#[test]
fn a_resource_pressure_warning_rides_the_sessions_next_tool_event() {
    let mut reg = Registry::new();
    reg.add(
        "t",
        hook(&[EventKind::ResourcePressure], "a child is running away").name("pressure"),
    )
    .unwrap();
    let project = captain_hook::Project::from_registry(std::path::Path::new("/"), reg);
    let pressure = json!({
        "session_id": "rp-1", "cwd": "/", "hook_event_name": "ResourcePressure", "stage": "warn",
        "process": {"pid": 4242, "argv": ["yes"], "cpu_fraction": 0.99, "rss_kib": 2048,
                    "runtime_s": 130.0},
        "metrics": {"cpu": true, "rss": false, "disk": false},
    });
    project.evaluate(
        "ResourcePressure",
        pressure.to_string().as_bytes(),
        DispatchOptions::default(),
    );
    let tool = |session: &str| {
        let payload = json!({"session_id": session, "cwd": "/", "tool_name": "Bash",
                             "tool_input": {"command": "ls"}});
        project
            .evaluate(
                "PreToolUse",
                payload.to_string().as_bytes(),
                DispatchOptions::default(),
            )
            .stdout
    };
    assert_eq!(tool("rp-other"), None, "another session hears nothing");
    let out: Value = serde_json::from_str(&tool("rp-1").unwrap()).unwrap();
    let notice = out["systemMessage"].as_str().unwrap();
    assert!(notice.contains("a child is running away"), "{out}");
    assert!(
        notice.contains("pid 4242 `yes`, 99% CPU, 2 MiB resident, running 130 s"),
        "{out}"
    );
    assert!(
        out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(|c| c.contains("running away")),
        "{out}"
    );
    assert_eq!(tool("rp-1"), None, "delivered once");
}

/// A code hook never lints an edited file too large to read as if it were clean: on a guarded
/// event the user decides, told which file and which limit; elsewhere the trace says so.
#[test]
fn an_edited_file_over_the_limit_is_left_to_the_user_not_passed() {
    use captain_hook::code::{Lang, LintCheck, LintOptions, lint};
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("huge.py");
    let f = std::fs::File::create(&file).unwrap();
    // Sparse: as large as it says without writing it.
    f.set_len(captain_hook::core::edit::MAX_EDITED_FILE + 1)
        .unwrap();
    let todo = || {
        lint(
            LintCheck::text(|t| {
                t.lines()
                    .filter(|l| l.contains("TODO"))
                    .map(str::to_owned)
                    .collect()
            }),
            LintOptions::new(Lang::Python, "no TODO"),
        )
    };
    let mut reg = Registry::new();
    reg.add("t", todo().events(&[EventKind::PreToolUse]))
        .unwrap();
    reg.add("t", todo().name("after")).unwrap();
    let project = captain_hook::Project::from_registry(root.path(), reg);
    let payload = |kind: &str| {
        json!({
            "session_id": "s1", "cwd": root.path(), "hook_event_name": kind, "tool_name": "Write",
            "tool_input": {"file_path": file, "content": "x = 1  # TODO\n"},
        })
        .to_string()
    };
    let limit = format!(
        "the edited file {} is 33554433 bytes (32.0 MiB), over the 32 MiB limit",
        file.display()
    );
    let eval = project.evaluate(
        "PreToolUse",
        payload("PreToolUse").as_bytes(),
        DispatchOptions::default(),
    );
    let v: Value = serde_json::from_str(&eval.stdout.expect("an answer")).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask", "{v}");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(reason.contains(&limit), "{reason}");
    let (_, entry) = project.evaluate_traced(
        "PostToolUse",
        payload("PostToolUse").as_bytes(),
        DispatchOptions::default(),
        captain_hook::project::Origin::default(),
    );
    assert!(
        entry.errors.iter().any(|e| e.contains(&limit)),
        "{:?}",
        entry.errors
    );
    // A file within the limit is linted as always.
    std::fs::write(&file, "x = 0\n").unwrap();
    let eval = project.evaluate(
        "PreToolUse",
        payload("PreToolUse").as_bytes(),
        DispatchOptions::default(),
    );
    let out = eval.stdout.expect("the lint's warning");
    assert!(out.contains("no TODO") && !out.contains("limit"), "{out}");
}

/// A workflow's artifact is read within a limit: too large, or not a file at all (a named pipe
/// would block the read forever), blocks the stop saying so; a good one passes.
#[test]
fn workflow_artifacts_are_read_within_a_limit() {
    use captain_hook::session::{Artifact, MAX_ARTIFACT, Step, Workflow, workflow};
    let dir = tempfile::tempdir().unwrap();
    let flow = Workflow {
        label: "REVIEW".into(),
        marker: "REVIEW DONE".into(),
        steps: vec![Step {
            name: "done".into(),
            check: Arc::new(|_: &Event| true),
            message: "Say REVIEW DONE.".into(),
        }],
        artifacts: vec![Artifact::model::<Value>("report.json")],
        post_complete: Some(Arc::new(|_| Some(captain_hook::HookResult::warn("thanks")))),
    };
    let mut reg = Registry::new();
    reg.add("wf", workflow(flow).unwrap()).unwrap();
    let d = Dispatcher::new(Arc::new(reg), None);
    let stop = |agent: &str| {
        let transcript = captain_hook::core::history::transcript_from_values(&[json!({
            "type": "assistant", "uuid": "a1", "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "REVIEW DONE"}]}
        })]);
        let evt = Event::new(
            EventKind::SubagentStop,
            json!({"agent_id": agent, "agent_type": "reviewer", "cwd": dir.path()}),
            EventContext::default(),
        )
        .unwrap()
        .with_transcript(transcript);
        d.dispatch(&Arc::new(evt), DispatchOptions::default())
            .and_then(|r| r.message)
            .unwrap_or_default()
    };
    let report = dir.path().join("report.json");
    assert_eq!(stop("a1"), "REVIEW INCOMPLETE: report.json not found.");
    let f = std::fs::File::create(&report).unwrap();
    f.set_len(MAX_ARTIFACT + 1).unwrap();
    assert_eq!(
        stop("a2"),
        format!(
            "REVIEW INCOMPLETE: the artifact {} is 16777217 bytes (16.0 MiB), over the 16 MiB \
             limit; it was not read.",
            report.display()
        )
    );
    std::fs::remove_file(&report).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&report)
        .status()
        .unwrap();
    assert!(made.success());
    let started = Instant::now();
    assert_eq!(
        stop("a3"),
        format!(
            "REVIEW INCOMPLETE: the artifact {} is not a regular file; it was not read.",
            report.display()
        )
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    std::fs::remove_file(&report).unwrap();
    std::fs::write(&report, "{\"ok\": true}").unwrap();
    assert_eq!(stop("a4"), "thanks");
}

/// `read_input` takes a payload up to the client's limit and refuses a larger one without
/// reading on (an endless one included), as an unreadable payload is refused.
#[test]
fn read_input_stops_at_the_clients_limit() {
    use captain_hook::project::read_input;
    use std::io::Read;
    let limit = capt_hook_proto::MAX_EVENT_INPUT;
    let at = read_input("PreToolUse", std::io::repeat(b' ').take(limit as u64)).unwrap();
    assert_eq!(at.len(), limit);
    for event in ["PreToolUse", "Stop", "NotAnEvent"] {
        let refused = read_input(event, std::io::repeat(b' ')).unwrap_err();
        assert_eq!(refused.exit_code, 0);
        assert!(refused.unchecked);
        assert_eq!(
            refused.stderr,
            [format!(
                "capt-hook: the event input is over the {limit}-byte (32 MiB) limit; no hook ran"
            )]
        );
        let asks = refused.stdout.is_some_and(|o| {
            o.contains("\"ask\"") && o.contains("over the 33554432-byte (32 MiB) limit")
        });
        assert_eq!(asks, event == "PreToolUse", "{event}");
    }
}

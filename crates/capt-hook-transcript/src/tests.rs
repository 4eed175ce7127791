//! Unit tests of the session view over small hand-written transcripts.

use serde_json::{Value, json};

use crate::*;

fn user(text: &str) -> Value {
    json!({"type": "user", "uuid": format!("u-{text}"), "message": {"role": "user", "content": text}})
}

fn user_with(text: &str, extra: Value) -> Value {
    let mut v = user(text);
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn say(text: &str) -> Value {
    json!({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}})
}

fn call(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "assistant", "uuid": format!("a-{id}"), "message": {"content": [
        {"type": "tool_use", "id": id, "name": name, "input": input}
    ]}})
}

fn result(id: &str, content: &str) -> Value {
    json!({"type": "user", "uuid": format!("r-{id}"), "message": {"content": [
        {"type": "tool_result", "tool_use_id": id, "content": content}
    ]}})
}

fn error(id: &str) -> Value {
    json!({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": id, "content": "Exit code 1", "is_error": true}
    ]}})
}

fn t(lines: &[Value]) -> Transcript {
    Transcript::from_values(lines)
}

#[test]
fn every_line_type_is_kept_and_bad_lines_are_skipped() {
    let text = [
        r#"{"type":"user","message":{"content":"hi"}}"#,
        "not json",
        r#"{"type":"system","subtype":"stop_hook_summary","content":"ok"}"#,
        r#"{"type":"mode","mode":"normal"}"#,
        r#"{"type":"permission-mode","permissionMode":"plan"}"#,
        r#"{"type":"queue-operation","operation":"enqueue","content":"x"}"#,
        r#"{"type":"progress","data":{"type":"hook_progress"}}"#,
        r#"{"type":"summary","summary":"t","leafUuid":"u"}"#,
        r#"{"type":"file-history-snapshot","snapshot":{}}"#,
        r#"{"type":"attachment","attachment":{"type":"queued_command","prompt":"later"}}"#,
        r#"{"type":"brand-new-type","x":1}"#,
        r#"{"type":"assistant"}"#,
        r#"[1,2]"#,
        "",
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"hmm"},{"type":"text","text":"b"}]}}"#,
    ]
    .join("\n");
    let t = Transcript::from_jsonl(&text);
    let kinds: Vec<EntryKind> = t.entries().iter().map(Entry::kind).collect();
    use EntryKind::*;
    assert_eq!(
        kinds,
        [
            User,
            System,
            Mode,
            PermissionMode,
            QueueOperation,
            Progress,
            Summary,
            FileHistorySnapshot,
            Attachment,
            Other,
            Assistant
        ]
    );
    assert_eq!(t.skipped_lines(), 3);
    assert_eq!(t.entries()[1].detail(), Some("stop_hook_summary"));
    assert_eq!(t.entries()[3].detail(), Some("plan"));
    assert_eq!(t.entries()[4].detail(), Some("enqueue"));
    assert_eq!(t.entries()[8].text(), "later");
    assert_eq!(t.entries()[9].type_name(), Some("brand-new-type"));
    assert_eq!(t.entries()[10].text(), "a b");
    assert_eq!(t.entries()[10].thinking(), "hmm");
}

#[test]
fn turns_start_only_at_real_prompts() {
    let t = t(&[
        json!({"type": "system", "subtype": "init"}),
        user("first"),
        call("c1", "Read", json!({"file_path": "/r/a.py"})),
        result("c1", "x"),
        user_with("Caveat: local commands", json!({"isMeta": true})),
        user("<local-command-stdout>ok</local-command-stdout>"),
        user("<task-notification><tool-use-id>x</tool-use-id></task-notification>"),
        user_with(
            "This session is being continued",
            json!({"isCompactSummary": true}),
        ),
        user("[Request interrupted by user]"),
        user_with("sub prompt", json!({"isSidechain": true})),
        user("   "),
        user("<command-name>/review</command-name>"),
        say("ok"),
        user("second"),
        say("done"),
    ]);
    let turns = t.session().turns();
    let prompts: Vec<&str> = turns.iter().map(|x| x.prompt()).collect();
    assert_eq!(
        prompts,
        [
            "",
            "first",
            "<command-name>/review</command-name>",
            "second"
        ]
    );
    assert_eq!(turns[1].window().len(), 10);
    assert_eq!(t.current_turn().len(), 2);
    assert_eq!(t.current_turn().user_text(), "second");
    assert_eq!(t.session().first_prompt(), Some("first"));
    assert_eq!(t.recent(1).user_text(), "");
    assert!(t.recent(1).prompts().next().is_none());
    // A subagent transcript (every line a sidechain) is one preamble turn.
    let sub = Transcript::from_values(&[
        user_with("do it", json!({"isSidechain": true})),
        say("done"),
    ]);
    assert_eq!(sub.turn_count(), 1);
    assert_eq!(sub.current_turn().len(), 2);
    assert!(Transcript::empty().current_turn().is_empty());
}

#[test]
fn calls_pair_with_results_and_errors_are_hidden_by_default() {
    let t = t(&[
        user("go"),
        call("e1", "Edit", json!({"file_path": "/r/tests/test_app.py"})),
        call("b1", "Bash", json!({"command": "pytest"})),
        result("e1", "ok"),
        error("b1"),
        call("b2", "Execute", json!({"command": "ruff check"})),
    ]);
    let all = t.tool_calls();
    assert_eq!(all.count(), 2);
    assert_eq!(all.clone().with_errors().count(), 3);
    assert_eq!(all.clone().failed().first().unwrap().id(), "b1");
    assert_eq!(t.session().count_failures(), 1);
    let edit = all.clone().named("Edit").first().unwrap();
    assert_eq!(edit.result().unwrap().content(), "ok");
    assert_eq!(edit.turn_index(), 0);
    assert!(
        all.clone()
            .named("Bash")
            .first()
            .unwrap()
            .result()
            .is_none()
    );
    assert_eq!(t.session().commands(), ["ruff check"]);
    assert!(!t.session().has_command(&["pytest"]));
    assert!(t.session().has_command(&["ruff", "check"]));
    assert!(all.clone().with_errors().runs(&["pytest"]));
    assert_eq!(all.clone().named("Edit").touching("test_*.py").count(), 1);
    assert_eq!(all.clone().touching(["*.rs", "**/tests/*"]).count(), 1);
    assert_eq!(all.clone().under(&["tests"]).count(), 1);
    assert_eq!(
        all.clone()
            .where_input("command", |v| v == "ruff check")
            .count(),
        1
    );
    assert_eq!(all.files(), ["/r/tests/test_app.py"]);
    assert_eq!(t.calls_in(1).len(), 1);
    assert_eq!(t.results_in(3)[0].tool_use_id(), "e1");
}

#[test]
fn prose_is_user_and_assistant_text_only() {
    let t = t(&[
        user("ship it"),
        json!({"type": "assistant", "message": {"content": [
            {"type": "thinking", "thinking": "deploy succeeded?"},
            {"type": "tool_use", "id": "d", "name": "Bash", "input": {"command": "echo deploy succeeded"}}
        ]}}),
        result("d", "deploy succeeded"),
        json!({"type": "system", "subtype": "x", "content": "deploy succeeded"}),
        say("All green."),
    ]);
    assert_eq!(t.session().prose_text(), "ship it\nAll green.");
    assert_eq!(t.session().assistant_text(10, 3), "All");
}

#[test]
fn windows_slice_around_calls() {
    let t = t(&[
        user("a"),
        call("w1", "Write", json!({"file_path": "/r/x.py"})),
        result("w1", "ok"),
        call("r1", "Read", json!({"file_path": "/r/y.py"})),
        result("r1", "ok"),
        say("done"),
    ]);
    let s = t.session();
    assert_eq!(s.after("Write|Edit", None).range(), 2..6);
    assert_eq!(s.after("Write", Some("x.py")).range(), 2..6);
    assert!(s.after("Write", Some("zzz")).is_empty());
    assert_eq!(s.before("Read").range(), 0..3);
    assert_eq!(s.before("Nope").range(), 0..6);
    assert_eq!(s.prior().range(), 0..5);
    assert_eq!(s.recent(2).range(), 4..6);
    assert_eq!(s.recent(2).tool_calls().with_errors().count(), 0);
    assert_eq!(s.recent(3).tool_calls().count(), 1);
    assert!(s.has_edit_to("**/x.py"));
    assert!(!s.has_edit_to("y.py"));
    assert!(s.has_read("y.py"));
}

#[test]
fn skills_plan_mode_and_tool_names() {
    let t = t(&[
        user("plan"),
        call("p1", "EnterPlanMode", json!({})),
        result("p1", "ok"),
        call("s1", "Skill", json!({"skill": "codex:review"})),
        result("s1", "ok"),
        call("m1", "mcp__github__WebFetch", json!({"url": "u"})),
        result("m1", "ok"),
    ]);
    let s = t.session();
    assert_eq!(s.plan_mode_counts(), (1, 0));
    assert!(s.has_skill(&["review"]));
    assert!(s.has_skill(&["codex:review"]));
    assert!(!s.has_skill(&["codex"]));
    assert!(s.has_tool("WebFetch"));
    assert!(s.has_tool("FetchUrl"));
    let exited = Transcript::from_values(&[
        call("p", "EnterPlanMode", json!({})),
        call("x", "ExitSpecMode", json!({})),
    ]);
    assert_eq!(exited.session().plan_mode_counts(), (1, 1));
    let rejected = Transcript::from_values(&[
        call("p", "EnterPlanMode", json!({})),
        call("x", "ExitPlanMode", json!({})),
        error("x"),
    ]);
    assert_eq!(rejected.session().plan_mode_counts(), (1, 0));
}

#[test]
fn waiting_follows_the_current_turn_and_the_notification_queue() {
    let tools = DEFAULT_WAITING_TOOLS;
    let bg = t(&[
        user("go"),
        call(
            "b",
            "Bash",
            json!({"command": "npm run dev", "run_in_background": true}),
        ),
        result("b", "started"),
    ]);
    assert_eq!(bg.waiting(tools).pending[0].kind, PendingKind::Background);
    let fork = [
        user("go"),
        call("f", "Agent", json!({"prompt": "x"})),
        result("f", "launched"),
    ];
    assert_eq!(t(&fork).waiting(tools).pending[0].kind, PendingKind::Fork);
    let mut later = fork.to_vec();
    later.push(user("next"));
    assert!(!t(&later).waiting(tools).is_waiting());
    let monitor = t(&[user("go"), call("m", "Monitor", json!({}))]);
    assert_eq!(
        monitor.waiting(tools).pending[0].kind,
        PendingKind::WaitingTool
    );
    assert!(!monitor.waiting(&[]).is_waiting());
    let errored = t(&[user("go"), call("m", "Monitor", json!({})), error("m")]);
    assert!(!errored.waiting(tools).is_waiting());
    assert!(!Transcript::empty().waiting(tools).is_waiting());

    // An async launch waits, across turns, until its notification is delivered.
    let launch = json!({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "Async agent launched"}]},
        "toolUseResult": {"isAsync": true, "status": "async_launched", "agentId": "ag"}});
    let note = "<task-notification>\n<tool-use-id>a</tool-use-id>\n</task-notification>";
    let mut lines = vec![
        user("go"),
        call("a", "Agent", json!({"subagent_type": "x", "prompt": "p"})),
        launch,
        user("meanwhile"),
    ];
    assert_eq!(
        t(&lines).waiting(tools).pending[0].kind,
        PendingKind::AsyncAgent
    );
    lines.push(json!({"type": "queue-operation", "operation": "enqueue", "content": note}));
    let queued = t(&lines);
    let w = queued.waiting(tools);
    assert!(w.notification_queued);
    assert_eq!(w.pending[0].kind, PendingKind::AsyncAgent);
    lines.push(json!({"type": "queue-operation", "operation": "dequeue"}));
    assert!(!t(&lines).waiting(tools).is_waiting());
    // Delivery as a user line also completes it.
    let delivered = [
        user("go"),
        call("w", "Workflow", json!({"script": "x"})),
        result("w", "started"),
        user(&note.replace(">a<", ">w<")),
    ];
    assert!(!t(&delivered).waiting(tools).is_waiting());
    assert_eq!(
        t(&delivered[..3]).waiting(tools).pending[0].kind,
        PendingKind::Workflow
    );
    // popAll removes only the items its content contains.
    let q = t(&[
        json!({"type": "queue-operation", "operation": "enqueue", "content": "<task-notification>1</task-notification>"}),
        json!({"type": "queue-operation", "operation": "enqueue", "content": "user text"}),
        json!({"type": "queue-operation", "operation": "popAll", "content": "user text"}),
    ]);
    assert_eq!(
        q.notifications().queued(),
        ["<task-notification>1</task-notification>"]
    );
}

#[test]
fn full_lines_can_be_read_back() {
    let big = format!("{}{}", "y".repeat(RESULT_TEXT_CAP * 3), "12 passed");
    let long_input = "z".repeat(INPUT_STRING_CAP + 1);
    let t = t(&[
        json!({"type": "assistant", "uuid": "a1", "message": {"content": [
            {"type": "tool_use", "id": "w", "name": "Write", "input": {"file_path": "/f", "content": long_input}}]}}),
        json!({"type": "user", "uuid": "u1", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "w", "content": [{"type": "text", "text": big}]}]}}),
    ]);
    let c = t.tool_calls().first().unwrap();
    assert!(c.input_truncated());
    assert_eq!(
        c.full_input().unwrap()["content"].as_str().unwrap().len(),
        INPUT_STRING_CAP + 1
    );
    let r = c.result().unwrap();
    assert!(r.is_truncated());
    assert!(r.content().starts_with("yyy") && r.content().ends_with("12 passed"));
    assert_eq!(r.content_len(), big.len());
    assert_eq!(c.full_result().unwrap().unwrap(), big);
    assert!(Transcript::empty().raw_line(&t.entries()[0]).is_err());
}

#[test]
fn memo_computes_once_per_call() {
    let t = t(&[call("b", "Bash", json!({"command": "ls"}))]);
    let c = t.tool_calls().first().unwrap();
    let mut runs = 0;
    let a = *c.memo(|_| {
        runs += 1;
        7u32
    });
    let b = *c.memo(|_| {
        runs += 1;
        8u32
    });
    assert_eq!((a, b, runs), (7, 7, 1));
    assert!(matches!(c.memo(|_| "other type"), Memo::Fresh(_)));
}

#[test]
fn a_plugged_matcher_decides_has_command() {
    let t = t(&[
        call("b", "Bash", json!({"command": "make test"})),
        result("b", "ok"),
    ])
    .with_matcher(std::sync::Arc::new(|c: &ToolCall, argv: &[&str]| {
        c.command() == Some("make test") && argv == ["pytest"]
    }));
    assert!(t.session().has_command(&["pytest"]));
    assert!(!t.session().has_command(&["make"]));
    assert!(t.session().has_command_with(&["make"], &SplitMatcher));
    assert!(!t.session().has_command(&[]));
}

#[test]
fn handles_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Transcript>();
    send_sync::<LazyTranscript>();
    send_sync::<TranscriptCache>();
    send_sync::<Window<'static>>();
    send_sync::<ToolCalls<'static>>();
}

//! Unit tests of the conditions, one event at a time (kept beside `condition.rs`).

use serde_json::{Value, json};

use super::*;
use crate::events::{EventKind, EventSet};
use crate::{EventContext, Mode};

fn evt(kind: EventKind, payload: Value) -> Event {
    let ctx = EventContext {
        project_root: Some("/proj".into()),
        skip_permissions: Some(false),
        ..EventContext::default()
    };
    Event::new(kind, payload, ctx).unwrap()
}

fn bash(cmd: &str) -> Event {
    evt(
        EventKind::PreToolUse,
        json!({"tool_name": "Bash", "tool_input": {"command": cmd}}),
    )
}

fn write(path: &str, content: &str) -> Event {
    evt(
        EventKind::PreToolUse,
        json!({"tool_name": "Write", "tool_input": {"file_path": path, "content": content}}),
    )
}

fn re(p: &str) -> Pattern {
    Pattern::new(p, Mode::Plain).unwrap()
}

#[test]
fn tool_names_aliases_and_mcp_tails() {
    let c = Condition::tool(&["Bash", "Write"]);
    assert!(c.check(&bash("ls")));
    assert!(c.check(&evt(
        EventKind::PreToolUse,
        json!({"tool_name": "Create", "tool_input": {}})
    )));
    assert!(!c.check(&evt(
        EventKind::PreToolUse,
        json!({"tool_name": "Read", "tool_input": {}})
    )));
    let mcp = evt(
        EventKind::PreToolUse,
        json!({"tool_name": "mcp__github__create_issue", "tool_input": {}}),
    );
    assert!(Condition::tool(&["create_issue"]).check(&mcp));
    assert!(Condition::McpTool(true).check(&mcp));
    assert!(Condition::McpTool(false).check(&bash("ls")));
    // Events without a tool call never satisfy a tool condition.
    assert!(!c.check(&evt(EventKind::Stop, json!({}))));
}

#[test]
fn command_searches_the_raw_line_and_each_commands_words() {
    assert!(Condition::Command(re(r"^git\s+push")).check(&bash("git   push -f")));
    assert!(Condition::Command(re("stash")).check(&bash("echo 'git stash'")));
    assert!(!Condition::Command(re("stash")).check(&bash("ls")));
}

#[test]
fn tool_input_needs_every_field_and_coerces_scalars() {
    let e = evt(
        EventKind::PreToolUse,
        json!({"tool_name": "Bash", "tool_input": {"command": "ls", "run_in_background": true, "timeout": 5}}),
    );
    let c = |fields: &[(&str, &str)]| {
        Condition::ToolInput(
            fields
                .iter()
                .map(|(k, p)| ((*k).to_owned(), re(p)))
                .collect(),
        )
    };
    assert!(c(&[("run_in_background", "^true$"), ("timeout", "^5$")]).check(&e));
    assert!(!c(&[("run_in_background", "^false$")]).check(&e));
    assert!(!c(&[("missing", ".*")]).check(&e));
}

#[test]
fn content_and_file_path_respect_the_project() {
    let inside = write("/proj/src/a.py", "API_KEY = 1\n");
    let outside = write("/tmp/a.py", "API_KEY = 1\n");
    let content = |project_only| Condition::Content {
        pattern: Pattern::new("^API_KEY", Mode::Multiline).unwrap(),
        project_only,
    };
    assert!(content(true).check(&inside));
    assert!(!content(true).check(&outside));
    assert!(content(false).check(&outside));
    let file = |g: &str, project_only| Condition::file_path(vec![Glob::new(g)], project_only);
    assert!(file("**/src/*.py", true).check(&inside));
    assert!(!file("**/src/*.py", true).check(&outside));
    assert!(file("a.py", false).check(&outside), "basename match");
}

#[test]
fn test_files_and_source_edits_use_the_language_table() {
    assert!(Condition::TestFile(true).check(&write("/proj/tests/test_a.py", "")));
    assert!(Condition::TestFile(false).check(&write("/proj/src/a.py", "")));
    let ts = Condition::source_edits("ts");
    assert!(ts.check(&write("/proj/src/a.mts", "")));
    assert!(
        !ts.check(&write("/proj/src/a.test.ts", "")),
        "test files are not source edits"
    );
    assert!(!ts.check(&bash("ls")));
}

#[test]
fn models_and_sources_of_switches_and_sessions() {
    let switch = evt(
        EventKind::PreModelSwitch,
        json!({"from_model": "claude-sonnet-4-6", "to_model": "claude-opus-4-6", "requested_model": null, "source": "picker"}),
    );
    let opus = Condition::Model(vec![Glob::new("claude-opus-*")]);
    assert!(opus.check(&switch));
    assert!(
        !Condition::Model(vec![Glob::new("*sonnet*")]).check(&switch),
        "from_model is not the model"
    );
    assert!(Condition::Source(vec!["sdk".into(), "picker".into()]).check(&switch));
    assert!(!Condition::Source(vec!["command".into()]).check(&switch));
    let start = evt(
        EventKind::SessionStart,
        json!({"model": "claude-opus-4-6", "source": "resume"}),
    );
    assert!(opus.check(&start));
    assert!(Condition::Source(vec!["resume".into()]).check(&start));
    assert!(!opus.check(&bash("ls")), "a tool call names no model");
    assert_eq!(opus.to_string(), "{ model = [\"claude-opus-*\"] }");
}

#[test]
fn agents_modes_and_subagents() {
    let sub = evt(
        EventKind::SubagentStart,
        json!({"agent_id": "a1", "agent_type": "Explore", "permission_mode": "plan"}),
    );
    assert!(Condition::Agent(vec!["Explore".into()]).check(&sub));
    assert!(!Condition::Agent(vec!["Plan".into()]).check(&sub));
    assert!(Condition::FromSubagent(true).check(&sub));
    assert!(Condition::PermissionMode(vec!["plan".into(), "default".into()]).check(&sub));
    assert!(Condition::InPlanMode(true).check(&sub));
    assert!(Condition::FromSubagent(false).check(&bash("ls")));
    assert!(Condition::SkipPermissions(false).check(&bash("ls")));
}

/// An event no adapter read is Claude Code's; one another agent sent names that agent.
#[test]
fn coding_agent_defaults_to_claude_code() {
    let codex = || Condition::CodingAgent(vec!["codex".into(), "gemini".into()]);
    let claude = Condition::CodingAgent(vec!["claude".into()]);
    assert!(claude.check(&bash("ls")));
    assert!(!codex().check(&bash("ls")));
    let from_codex = Event::new(
        EventKind::SessionStart,
        json!({"session_id": "s", "source": "startup"}),
        EventContext {
            coding_agent: Some("codex".into()),
            ..EventContext::default()
        },
    )
    .unwrap();
    assert!(codex().check(&from_codex));
    assert!(!claude.check(&from_codex));
    assert_eq!(
        codex().to_string(),
        "{ coding_agent = [\"codex\", \"gemini\"] }"
    );
}

#[test]
fn combinators_and_their_empty_cases() {
    let yes = Condition::Command(re("ls"));
    let no = Condition::Command(re("rm"));
    let e = bash("ls");
    assert!(Condition::All(vec![]).check(&e));
    assert!(!Condition::Any(vec![]).check(&e));
    assert!(Condition::Any(vec![no.clone(), yes.clone()]).check(&e));
    assert!(!Condition::All(vec![no.clone(), yes.clone()]).check(&e));
    assert!(Condition::Not(Box::new(no.clone())).check(&e));
    assert_eq!(
        first_miss(&e, &[yes.clone(), no.clone()], &[]),
        Some(Miss::OnlyIf(1))
    );
    assert_eq!(
        first_miss(&e, std::slice::from_ref(&yes), std::slice::from_ref(&yes)),
        Some(Miss::SkipIf(0))
    );
    assert_eq!(first_miss(&e, &[], &[no]), None);
}

#[test]
fn conditions_that_can_never_match_are_found_per_event_set() {
    let stop = EventSet::of(&[EventKind::Stop]);
    let changed = EventSet::of(&[EventKind::FileChanged]);
    let file = Condition::file_path(vec![Glob::new("*.lock")], false);
    let tool = Condition::tool(&["Bash"]);
    assert_eq!(never_matches(std::slice::from_ref(&tool), stop), Some(0));
    assert_eq!(never_matches(std::slice::from_ref(&file), stop), Some(0));
    // FileChanged carries a file but no tool call.
    assert_eq!(never_matches(std::slice::from_ref(&file), changed), None);
    assert_eq!(never_matches(std::slice::from_ref(&tool), changed), Some(0));
    assert_eq!(
        never_matches(&[tool], EventSet::of(&[EventKind::PostToolBatch])),
        None
    );
    // The file a FileChanged event is about is what file conditions read.
    let e = evt(
        EventKind::FileChanged,
        json!({"file_path": "/proj/Cargo.lock", "event": "change"}),
    );
    assert!(file.check(&e));
}

#[test]
fn conditions_print_as_they_are_written() {
    assert_eq!(
        Condition::TestFile(true).to_string(),
        "{ test_file = true }"
    );
    assert!(Condition::tool(&["Bash"]).to_string().contains("Bash"));
    let d = Miss::OnlyIf(0).describe(&[Condition::TestFile(true)], &[]);
    assert_eq!(d, "only_if[0] { test_file = true } does not hold");
}

/// `command` searches the raw line and every command's joined argv; skipping the joined texts
/// that stand verbatim in the line (for patterns that only assert word boundaries) must never
/// change the answer. Compared with the plain search of every text, over patterns with and
/// without anchors and lines whose commands are and are not written as they run.
#[test]
fn command_answers_as_if_every_joined_command_were_searched() {
    let patterns = [
        r"git\s+push\b",
        r"\bpush\b",
        r"^git push",
        r"push$",
        r"(?m)^rm",
        r"rm -rf /",
        r"cargo\s+\S+\s+push",
        r"\Bush",
        r"--force\b(?!-)",
        r"a b",
        r"x",
        r"^$",
        r"\bé",
        r"push\b",
    ];
    let lines = [
        "git push",
        "cd x && git push origin",
        "git \"push\" --force",
        "git 'push'",
        "echo git push",
        "FOO=1 git push",
        "sudo -u x rm -rf /",
        "rm  -rf   /",
        "a=1; bash -c 'git push'",
        "git commit -m \"$(echo push)\"",
        "cargo test push && cargo  build --release x push",
        "ls|grep push",
        "pushd /tmp",
        "x=é; git push",
        "git push >/dev/null 2>&1",
        "if true; then git push; fi",
        "a\\ b c",
        "xpush",
    ];
    for p in patterns {
        let pattern = re(p);
        let condition = Condition::Command(pattern.clone());
        for line in lines {
            let e = bash(line);
            let everywhere = pattern.is_match(line)
                || e.joined_commands()
                    .iter()
                    .any(|j| pattern.is_match(&j.text));
            assert_eq!(condition.check(&e), everywhere, "{p:?} on {line:?}");
        }
    }
}

#[test]
fn text_matches_in_the_turn_reads_the_stop_payloads_closing_message() {
    let pattern = Pattern::new("ACKNOWLEDGED", Mode::Multiline).unwrap();
    let turn = Condition::TextMatches {
        pattern: pattern.clone(),
        scope: Scope::Turn,
    };
    let session = Condition::TextMatches {
        pattern,
        scope: Scope::Session,
    };
    let closing = evt(
        EventKind::Stop,
        json!({"last_assistant_message": "Leaving two open. ACKNOWLEDGED"}),
    );
    assert!(turn.check(&closing));
    // The session scope reads the transcript alone, as it always has.
    assert!(!session.check(&closing));
    assert!(!turn.check(&evt(
        EventKind::Stop,
        json!({"last_assistant_message": "done"})
    )));
    assert_eq!(
        turn.to_string(),
        r#"{ text_matches = { pattern = "ACKNOWLEDGED", scope = "turn" } }"#
    );
    assert_eq!(session.to_string(), r#"{ text_matches = "ACKNOWLEDGED" }"#);
}

#[test]
fn touched_this_file_and_open_tasks_without_a_history() {
    let cond = Condition::TouchedThisFile {
        since: Some("ExitPlanMode".into()),
    };
    assert!(cond.reads_tool_call());
    assert!(!cond.check(&write("/home/u/.claude/plans/p.md", "x")));
    assert!(!cond.check(&evt(EventKind::Stop, json!({}))));
    assert_eq!(
        cond.to_string(),
        r#"{ touched_this_file = { since = "ExitPlanMode" } }"#
    );
    assert!(!Condition::OpenTasks(true).check(&evt(EventKind::Stop, json!({}))));
    assert!(Condition::OpenTasks(false).check(&evt(EventKind::Stop, json!({}))));
}

#[test]
fn args_reads_the_words_of_the_command_the_tokens_match() {
    let tokens = |t: &[&str]| Tokens::new(t).unwrap();
    let plus = Condition::Args {
        tokens: tokens(&["git", "push"]),
        pattern: re(r"(?:^|\s)\+\S"),
    };
    assert!(plus.check(&bash("git push origin +main")));
    assert!(plus.check(&bash("cd repo && sudo git -C sub push origin +HEAD:main")));
    assert!(plus.check(&bash("sh -c 'git push origin +main'")));
    // The `+` belongs to another command: the push's own words do not have it.
    assert!(!plus.check(&bash("git push origin main && echo +x")));
    assert!(!plus.check(&bash("echo 'git push origin +main'")));
    // Negative look-ahead: one command's flags judged together.
    let unleased = Condition::Args {
        tokens: tokens(&["git", "push", "--force"]),
        pattern: re(r"^(?!.*--force-with-lease)"),
    };
    assert!(unleased.check(&bash("git push --force origin main")));
    assert!(!unleased.check(&bash("git push --force --force-with-lease origin main")));
    // Seen through an interpreter one-liner.
    assert!(plus.check(&bash(
        "python3 -c 'import os; os.system(\"git push origin +main\")'"
    )));
    // With `exact`, only the literal prefix counts (no wrapper seen through).
    let exact = Condition::Args {
        tokens: tokens(&["git", "push"]).exact(true),
        pattern: re(r"\+"),
    };
    assert!(exact.check(&bash("git push origin +main")));
    assert!(!exact.check(&bash("sudo git push origin +main")));
    assert!(!plus.check(&write("/proj/a", "git push +x")));
    // A quoted value holding blanks stays one word, its blanks escaped (`\x20`), so an option
    // inside it is no option of the command's.
    let forced = Condition::Args {
        tokens: tokens(&["docker", "rm"]),
        pattern: re(r"(?:^|\s)-f(?:\s|$)"),
    };
    assert!(forced.check(&bash("docker rm -f web")));
    assert!(!forced.check(&bash("docker rm \"my -f container\"")));
    // A word we cannot resolve stays as written, blanks and all: rules read its `$`.
    let computed = Condition::Args {
        tokens: tokens(&["git", "branch"]),
        pattern: re(r"^branch \$\(cat f\)$"),
    };
    assert!(computed.check(&bash("git branch $(cat f)")));
    let text = Condition::Args {
        tokens: tokens(&["kubectl"]),
        pattern: re(r"^delete --cache-dir 'note\\x20--dry-run\\'s'$"),
    };
    assert!(text.check(&bash("kubectl delete --cache-dir \"note --dry-run's\"")));
    assert_eq!(
        plus.to_string(),
        r#"{ args = { of = ["git", "push"], match = "(?:^|\\s)\\+\\S" } }"#
    );
}

#[test]
fn unread_code_holds_for_programs_we_cannot_read() {
    let unread = Condition::UnreadCode(true);
    assert!(unread.check(&bash("python3 -c 'import os; os.system(cmd)'")));
    assert!(unread.check(&bash("node -e \"eval(process.argv[1])\" x")));
    assert!(!unread.check(&bash("python3 -c 'print(1)'")));
    assert!(!unread.check(&bash("ls")));
    assert!(!unread.check(&write("/proj/a.py", "os.system(cmd)")));
    assert!(Condition::UnreadCode(false).check(&bash("python3 -c 'print(1)'")));
    assert!(unread.reads_tool_call());
}

#[test]
fn calls_since_counts_the_main_agents_calls_after_its_last_marker_call() {
    let call = |id: &str, name: &str| {
        json!({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": name, "input": {}}
        ]}})
    };
    let lines = [
        call("a", "Bash"),
        call("t", "TaskCreate"),
        call("b", "Bash"),
        call("c", "Grep"),
        call("d", "Read"),
    ];
    let e = evt(
        EventKind::PostToolUse,
        json!({"tool_name": "Edit", "tool_input": {}}),
    )
    .with_transcript(capt_hook_transcript::Transcript::from_values(lines.iter()));
    let since = |n: usize, marker: &str| Condition::CallsSince {
        tools: vec!["Bash".into(), "Grep".into()],
        since: vec![marker.into()],
        at_least: n,
    };
    assert!(since(2, "TaskCreate").check(&e));
    assert!(!since(3, "TaskCreate").check(&e));
    // Never called: counted from the start of the session.
    assert!(since(3, "TaskUpdate").check(&e));
    assert!(!since(4, "TaskUpdate").check(&e));
}

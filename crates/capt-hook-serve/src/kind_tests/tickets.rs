//! Tickets against real transcripts, a real store in a scratch state root, and a judge that is a
//! real program (a shell script the `command` backend runs).

use std::collections::BTreeMap;
use std::sync::Arc;

use capt_hook_core::{Event, EventContext, EventKind};
use serde_json::{Value, json};

use capt_hook_kinds::llm::BackendChoice;
use capt_hook_kinds::tickets::*;
use std::time::Duration;

struct Scratch {
    dir: tempfile::TempDir,
}

fn user(text: &str) -> Value {
    json!({"type": "user", "message": {"role": "user", "content": text}})
}

fn meta(text: &str) -> Value {
    json!({"type": "user", "isMeta": true, "message": {"role": "user", "content": text}})
}

fn asked(question: &str, options: &[&str], answer: &str) -> Vec<Value> {
    let opts: Vec<Value> = options
        .iter()
        .map(|o| json!({"label": o, "description": ""}))
        .collect();
    vec![
        json!({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "q1", "name": "AskUserQuestion",
             "input": {"questions": [{"question": question, "header": "h", "options": opts, "multiSelect": false}]}}
        ]}}),
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "q1",
             "content": format!("User has answered your questions: \"{question}\"=\"{answer}\". You can now continue with the user's answers in mind.")}
        ]}}),
    ]
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn judge(&self, verdict: &str) -> Arc<BTreeMap<String, String>> {
        self.judge_script(&format!("printf '%s' '{verdict}'"))
    }

    /// A judge running `answer` (shell) after counting the call in `calls`.
    fn judge_script(&self, answer: &str) -> Arc<BTreeMap<String, String>> {
        let script = format!(
            "cat > /dev/null\necho x >> \"{d}/calls\"\n{answer}\n",
            d = self.dir.path().display()
        );
        std::fs::write(self.dir.path().join("judge.sh"), script).unwrap();
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
        Arc::new(env)
    }

    fn event(
        &self,
        channel: &str,
        lines: &[Value],
        env: Option<Arc<BTreeMap<String, String>>>,
    ) -> Event {
        let payload = json!({
            "session_id": "s1",
            "hook_event_name": "PreToolUse",
            "tool_name": "mcp__chat__post_message",
            "tool_input": {"channel": channel, "text": "deploy done"},
        });
        let ctx = EventContext {
            project_root: Some(self.dir.path().to_path_buf()),
            state_root: Some(self.dir.path().join("state")),
            request_env: env,
            ..EventContext::default()
        };
        Event::new(EventKind::PreToolUse, payload, ctx)
            .unwrap()
            .with_transcript(capt_hook_transcript::Transcript::from_values(lines.iter()))
    }

    fn calls(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("calls"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    fn store(&self) -> TicketStore {
        TicketStore::for_project(&self.dir.path().join("state"), self.dir.path())
    }
}

fn decl(reach: Reach, when: Source) -> Tickets {
    Tickets {
        kind: "chat.post".into(),
        place: vec!["channel".into()],
        reach,
        rules: vec![Rule {
            name: "asked".into(),
            when,
        }],
        deny: "Ask the user whether to post to this channel.".into(),
        action: Some(action_from_input(
            vec![("channel".into(), Extract::parse("/channel"))],
            Some("post to #{channel}".into()),
        )),
        ttl: Some(Duration::from_secs(3600)),
        window: DEFAULT_WINDOW,
        machine: vec!["[automated]".into()],
        grant: true,
    }
}

fn said(pattern: &str) -> Source {
    Source::UserSaid {
        pattern: Some(pattern.into()),
        names: vec!["channel".into()],
    }
}

#[test]
fn the_users_own_words_mint_a_ticket_that_covers_the_place() {
    let s = Scratch::new();
    let d = decl(Reach::Place, said("post"));
    let no = s.event("deploys", &[user("post the summary to #general")], None);
    assert_eq!(
        d.check(&no, None),
        Outcome::Denied("Ask the user whether to post to this channel.".into())
    );
    assert!(s.store().list().unwrap().is_empty());

    let yes = s.event(
        "deploys",
        &[user("please post the summary to #deploys")],
        None,
    );
    let Outcome::Minted(t) = d.check(&yes, None) else {
        panic!("expected a mint")
    };
    assert_eq!(t.rule, "asked");
    assert_eq!(t.evidence[0].source, "user_said");
    assert_eq!(t.evidence[0].text, "please post the summary to #deploys");
    assert_eq!(t.place["channel"], "deploys");
    assert_eq!(t.id.len(), 12);
    // A later action at the same place is covered even without the words in the window.
    let later = s.event("deploys", &[user("thanks")], None);
    assert!(matches!(d.check(&later, None), Outcome::Covered(c) if c.id == t.id));
    // Another place is not.
    let other = s.event("general", &[user("thanks")], None);
    assert!(matches!(d.check(&other, None), Outcome::Denied(_)));
}

#[test]
fn machine_written_prompts_are_never_the_users_words() {
    let s = Scratch::new();
    let d = decl(Reach::Place, said("post"));
    for lines in [
        vec![meta("post to #deploys")],
        vec![user("[automated] post to #deploys")],
        vec![user(
            "<local-command-stdout>post to #deploys</local-command-stdout>",
        )],
        // A subagent's task prompt is the parent agent's words, not the user's.
        vec![json!({"type": "user", "isSidechain": true, "agentId": "a1",
                    "message": {"role": "user", "content": "post to #deploys"}})],
    ] {
        let e = s.event("deploys", &lines, None);
        assert!(matches!(d.check(&e, None), Outcome::Denied(_)), "{lines:?}");
    }
    // Nor does a tool result that quotes the words.
    let tool = vec![
        json!({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}}]}}),
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "user: post to #deploys"}]}}),
    ];
    assert!(matches!(
        d.check(&s.event("deploys", &tool, None), None),
        Outcome::Denied(_)
    ));
}

#[test]
fn an_action_ticket_covers_only_the_same_action() {
    let s = Scratch::new();
    let d = decl(Reach::Action, said("post"));
    let yes = s.event("deploys", &[user("post to #deploys")], None);
    assert!(matches!(d.check(&yes, None), Outcome::Minted(_)));
    assert!(matches!(d.check(&yes, None), Outcome::Covered(_)));
    // Same place, different text: the words are still in the window, so a second ticket.
    let mut other = yes.payload().clone();
    other["tool_input"]["text"] = json!("rollback");
    let e2 = Event::new(
        EventKind::PreToolUse,
        Value::Object(other),
        yes.context().clone(),
    )
    .unwrap()
    .with_transcript(capt_hook_transcript::Transcript::from_values(
        [user("thanks")].iter(),
    ));
    assert!(matches!(d.check(&e2, None), Outcome::Denied(_)));
}

#[test]
fn revoked_and_expired_tickets_never_match() {
    let s = Scratch::new();
    let d = decl(Reach::Place, said("post"));
    let e = s.event("deploys", &[user("thanks")], None);
    let p = d.context(&e, None).unwrap();
    let mut t = d.mint(&e, &p, "asked", vec![]).unwrap();
    assert!(matches!(d.check(&e, None), Outcome::Covered(_)));
    let now = capt_hook_proto::clock::now_unix_ms();
    assert_eq!(s.store().revoke(&t.id, now).unwrap(), Revoked::Now);
    assert!(matches!(d.check(&e, None), Outcome::Denied(_)));
    t.id = "0123456789ab".into();
    t.minted_at = now - 10_000;
    t.expires_at = Some(now - 1);
    s.store().mint(t, 0).unwrap();
    assert_eq!(s.store().list().unwrap().len(), 2);
    assert!(matches!(d.check(&e, None), Outcome::Denied(_)));
}

#[test]
fn answers_count_unless_approval_is_required_and_withheld() {
    let s = Scratch::new();
    let any = decl(
        Reach::Place,
        Source::UserAnswered {
            pattern: Some("{channel}".into()),
            approved: false,
        },
    );
    let approved = decl(
        Reach::Place,
        Source::UserAnswered {
            pattern: Some("{channel}".into()),
            approved: true,
        },
    );
    let lines = asked(
        "Post the summary to #deploys?",
        &["Yes, post it", "No"],
        "No",
    );
    let e = s.event("deploys", &lines, None);
    assert!(matches!(approved.check(&e, None), Outcome::Denied(_)));
    let Outcome::Minted(t) = any.check(&e, None) else {
        panic!("any answer counts")
    };
    assert_eq!(t.evidence[0].text, "Q: Post the summary to #deploys? A: No");

    let s2 = Scratch::new();
    let yes = asked(
        "Post the summary to #deploys?",
        &["Yes, post it", "No"],
        "Yes, post it",
    );
    assert!(matches!(
        approved.check(&s2.event("deploys", &yes, None), None),
        Outcome::Minted(_)
    ));
    // A question about another channel is no answer for this one.
    let s3 = Scratch::new();
    assert!(matches!(
        approved.check(&s3.event("general", &yes, None), None),
        Outcome::Denied(_)
    ));
}

#[test]
fn decide_mints_on_the_judges_citation_and_keeps_the_words() {
    let s = Scratch::new();
    let d = decl(
        Reach::Place,
        Source::Decide(Decide::new("Post only where the user asked.")),
    );
    let lines = [user("let me know in #deploys when it's done")];
    let env = s.judge(r#"{"cite":"e1","reasoning":"the user asked for #deploys"}"#);
    let Outcome::Minted(t) = d.check(&s.event("deploys", &lines, Some(env)), None) else {
        panic!("the judge cited e1")
    };
    assert_eq!(t.evidence[0].source, "decide:user_said");
    assert_eq!(t.evidence[0].text, "let me know in #deploys when it's done");

    let s2 = Scratch::new();
    let env = s2.judge(r#"{"cite":"none","reasoning":"no"}"#);
    assert!(matches!(
        d.check(&s2.event("deploys", &lines, Some(env)), None),
        Outcome::Denied(_)
    ));
    // A second opinion that cites mints on its citation.
    let s4 = Scratch::new();
    let env = s4.judge_script(&format!(
        "if [ $(wc -l < \"{}/calls\") -eq 1 ]; then printf '%s' '{{\"cite\":\"none\",\"reasoning\":\"no\"}}'; else printf '%s' '{{\"cite\":\"e1\",\"reasoning\":\"yes\"}}'; fi",
        s4.dir.path().display()
    ));
    assert!(matches!(
        d.check(&s4.event("deploys", &lines, Some(env)), None),
        Outcome::Minted(_)
    ));
    assert_eq!(s4.calls(), 2);
    // An answer outside the schema is no citation: denied, naming the judge.
    let s3 = Scratch::new();
    let env = s3.judge(r#"{"cite":"e7","reasoning":"made up"}"#);
    let Outcome::Denied(m) = d.check(&s3.event("deploys", &lines, Some(env)), None) else {
        panic!("an out-of-schema citation cannot mint")
    };
    assert!(m.contains("rule `asked`: the judge gave no verdict"), "{m}");
    assert!(s3.store().list().unwrap().is_empty());
}

#[test]
fn a_corrupt_store_denies_naming_it_and_is_moved_aside() {
    let s = Scratch::new();
    let d = decl(Reach::Place, said("post"));
    let path = s.store().path().to_path_buf();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "[]garbage").unwrap();
    let e = s.event("deploys", &[user("post to #deploys")], None);
    let Outcome::Denied(m) = d.check(&e, None) else {
        panic!("a corrupt store must deny")
    };
    assert!(
        m.starts_with("Ask the user whether to post to this channel."),
        "{m}"
    );
    assert!(m.contains(&path.display().to_string()), "{m}");
    assert!(!path.exists());
    // The next call starts clean and mints.
    assert!(matches!(d.check(&e, None), Outcome::Minted(_)));
}

#[test]
fn a_missing_place_denies_naming_it() {
    let s = Scratch::new();
    let d = decl(Reach::Place, said("post"));
    let mut e = s
        .event("deploys", &[user("post to #deploys")], None)
        .payload()
        .clone();
    e["tool_input"] = json!({"text": "hi"});
    let evt = Event::new(
        EventKind::PreToolUse,
        Value::Object(e),
        EventContext {
            project_root: Some(s.dir.path().to_path_buf()),
            state_root: Some(s.dir.path().join("state")),
            ..EventContext::default()
        },
    )
    .unwrap();
    let Outcome::Denied(m) = d.check(&evt, None) else {
        panic!()
    };
    assert!(
        m.contains("cannot read place `channel`: the tool input has no /channel"),
        "{m}"
    );
}

#[test]
fn unchecked_mints_a_short_action_ticket_recording_the_cause() {
    let s = Scratch::new();
    let d = decl(Reach::Place, said("post"));
    let e = s.event("deploys", &[], None);
    let p = d.context(&e, None).unwrap();
    let t = d.unchecked(&e, &p, "the chat API was down").unwrap();
    assert_eq!(t.reach, Reach::Action);
    assert_eq!(t.evidence[0].text, "the chat API was down");
    let left = t.expires_at.unwrap() - t.minted_at;
    assert_eq!(left, UNCHECKED_TTL.as_millis() as u64);
}

#[test]
fn hook_files_reject_bad_declarations_naming_the_field() {
    let base = "[[hook]]\nkind = \"tickets\"\nticket = \"chat.post\"\nplace = { channel = \"/channel\" }\nreach = \"place\"\ndeny = \"ask\"\n";
    for (rules, field, words) in [
        (
            "rules = [{ name = \"a\", user_said = \"{room}\" }]",
            "hook[0].rules[0].user_said",
            "`{room}` is not a place key",
        ),
        (
            "rules = [{ name = \"a\", user_said = \"x\", condition = { mcp_tool = true } }]",
            "hook[0].rules[0]",
            "exactly one of",
        ),
        (
            "rules = [{ name = \"a\", user_said = \"post(\" }]",
            "hook[0].rules[0].user_said",
            "",
        ),
        (
            "rules = [{ name = \"a\", user_said = \"x\" }]\nttl = \"3w\"",
            "hook[0].ttl",
            "unknown unit `w`",
        ),
        ("rules = []", "hook[0].rules", "at least one rule"),
        (
            "rules = [{ name = \"a\", decide = { rules = \"r\", transcript = \"all\" } }]",
            "hook[0].rules[0].decide.transcript",
            "`all`",
        ),
        (
            "rules = [{ name = \"a\", decide = { rules = \"r\", over = [{ user_said = \"x\", user_answered = {} }] } }]",
            "hook[0].rules[0].decide.over[0]",
            "exactly one of",
        ),
        (
            "rules = [{ name = \"a\", decide = { rules = \"r\", over = [] } }]",
            "hook[0].rules[0].decide.over",
            "list the evidence",
        ),
        (
            "rules = [{ name = \"a\", decide = { rules = \"r\", over = [{ user_said = { names = [\"room\"] } }] } }]",
            "hook[0].rules[0].decide.over[0].user_said.names",
            "`room` is not a place key",
        ),
        (
            "rules = [{ name = \"a\", user_said = \"x\" }]\n  [[hook.test]]\n  input = { tickets = [{ kind = \"chat.post\", place = { channel = \"x\" }, ttl = \"soon\" }] }\n  expect = \"block\"",
            "hook[0].test[0].input.tickets[0].ttl",
            "not a duration",
        ),
    ] {
        let mut reg = capt_hook_engine::registry::Registry::new();
        let text = format!("{base}{rules}\n");
        let errors = capt_hook_toml::loader::load_str(&text, "t", &mut reg).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            errors[0].field.as_deref(),
            Some(field),
            "{text}: {errors:?}"
        );
        assert!(errors[0].message.contains(words), "{text}: {errors:?}");
    }
    let mut reg = capt_hook_engine::registry::Registry::new();
    let ok = format!(
        "{base}rules = [{{ name = \"a\", user_said = \"post .*#{{channel}}\\\\b\" }}]\nttl = \"90m\"\n"
    );
    capt_hook_toml::loader::load_str(&ok, "t", &mut reg).unwrap();
}

#[test]
fn the_seeds_approving_answer() {
    let opts = |o: &[&str]| o.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let two = opts(&["Post to #deploys", "Don't post"]);
    // Any option but the last approves, whatever its words.
    assert!(approving("Post to #deploys", &two));
    assert!(approving("post to #DEPLOYS", &two));
    assert!(!approving("Don't post", &two));
    // The last option approves only when it reads as a go.
    assert!(approving(
        "Yes, go ahead",
        &opts(&["Wait", "Yes, go ahead"])
    ));
    assert!(!approving("No", &opts(&["Yes", "No"])));
    assert!(!approving("Later", &opts(&["Now", "Later"])));
    assert!(!approving(
        "Yes but not today",
        &opts(&["Skip", "Yes but not today"])
    ));
    // A single option is the last one shown.
    assert!(approving("OK", &opts(&["OK"])));
    assert!(!approving("Dismiss", &opts(&["Dismiss"])));
    // Typed words: approving when they hold nothing back.
    assert!(approving("sure, post it there", &two));
    assert!(!approving("post it, but only after the deploy", &two));
    assert!(!approving("please don't", &two));
    assert!(!approving("I wouldn’t", &two));
    assert!(!approving("  ", &two));
    // Multi-select: every pick must approve.
    let three = opts(&["#deploys", "#general", "Neither"]);
    assert!(approving("#deploys, #general", &three));
    assert!(!approving("#deploys, Neither", &three));
}

#[test]
fn the_window_counts_messages_not_lines() {
    let s = Scratch::new();
    let mut d = decl(Reach::Place, said("post"));
    d.window = 3;
    let filler = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    json!({"type": "system", "subtype": "informational", "content": "x"})
                } else {
                    json!({"type": "attachment", "attachment": {"type": "x"}})
                }
            })
            .collect()
    };
    let assistant = |t: &str| json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": t}]}});
    // The prompt, then 40 lines that are no messages and two replies: 3 messages back.
    let mut lines = vec![user("post the summary to #deploys")];
    lines.extend(filler(40));
    lines.push(assistant("on it"));
    lines.extend(filler(5));
    lines.push(assistant("done"));
    assert!(matches!(
        d.check(&s.event("deploys", &lines, None), None),
        Outcome::Minted(_)
    ));
    // One more reply pushes the prompt out of the window.
    let s2 = Scratch::new();
    lines.push(assistant("anything else?"));
    assert!(matches!(
        d.check(&s2.event("deploys", &lines, None), None),
        Outcome::Denied(_)
    ));
    let t = capt_hook_transcript::Transcript::from_values(lines.iter());
    assert_eq!(recent_messages(&t, 3).len(), 8);
    assert_eq!(recent_messages(&t, 0).len(), 0);
    assert_eq!(recent_messages(&t, 1000).len(), t.len());
}

fn write_jsonl(path: &std::path::Path, lines: &[Value]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

impl Scratch {
    /// A session tree on disk: the root session `sess` (the user's words) and its subagent
    /// `a1`, whose own file holds only the task the parent agent wrote.
    fn tree(&self, said: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let root = self.dir.path().join("projects/sess.jsonl");
        let sub = self
            .dir
            .path()
            .join("projects/sess/subagents/agent-a1.jsonl");
        write_jsonl(
            &root,
            &[
                user(said),
                json!({"type": "assistant", "message": {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "post the summary", "subagent_type": "general"}}]}}),
            ],
        );
        write_jsonl(
            &sub,
            &[
                json!({"type": "user", "isSidechain": true, "agentId": "a1",
                       "message": {"role": "user", "content": "post the summary to #deploys"}}),
                json!({"type": "assistant", "isSidechain": true, "agentId": "a1", "message": {"role": "assistant", "content": [
                    {"type": "text", "text": "posting"}]}}),
            ],
        );
        (root, sub)
    }

    /// A PreToolUse whose transcripts are read from disk, as the worker reads them.
    fn disk_event(
        &self,
        channel: &str,
        fields: Value,
        env: Option<Arc<BTreeMap<String, String>>>,
    ) -> Event {
        let mut payload = json!({
            "session_id": "sess",
            "hook_event_name": "PreToolUse",
            "tool_name": "mcp__chat__post_message",
            "tool_input": {"channel": channel, "text": "deploy done"},
        });
        for (k, v) in fields.as_object().unwrap() {
            payload[k] = v.clone();
        }
        let ctx = EventContext {
            project_root: Some(self.dir.path().to_path_buf()),
            state_root: Some(self.dir.path().join("state")),
            request_env: env,
            ..EventContext::default()
        };
        Event::new(EventKind::PreToolUse, payload, ctx).unwrap()
    }
}

#[test]
fn a_subagents_call_is_judged_on_the_words_of_the_session_that_spawned_it() {
    let d = decl(Reach::Place, said("post"));
    // Claude Code's shape: the session's transcript_path, the subagent's agent_id.
    let s = Scratch::new();
    let (root, sub) = s.tree("please post the summary to #deploys");
    let e = s.disk_event(
        "deploys",
        json!({"transcript_path": root, "agent_id": "a1"}),
        None,
    );
    let Outcome::Minted(t) = d.check(&e, None) else {
        panic!("the user asked the root session")
    };
    assert_eq!(t.evidence[0].text, "please post the summary to #deploys");
    assert_eq!(t.tree.as_deref(), Some("sess"));
    assert_eq!(t.author.as_deref(), Some("a1"));
    // The same tree spends it: the main agent's later post is covered ...
    let main = s.disk_event("deploys", json!({"transcript_path": root}), None);
    assert!(matches!(d.check(&main, None), Outcome::Covered(c) if c.id == t.id));
    // ... another session's is not, though it posts to the same channel.
    let other_path = s.dir.path().join("projects/other.jsonl");
    write_jsonl(&other_path, &[user("thanks")]);
    let mut other = main.payload().clone();
    other["session_id"] = json!("other");
    other["transcript_path"] = json!(other_path);
    let other = Event::new(
        EventKind::PreToolUse,
        Value::Object(other),
        main.context().clone(),
    )
    .unwrap();
    assert!(matches!(d.check(&other, None), Outcome::Denied(_)));

    // A payload naming the subagent's own file (as transcript_path, or as
    // agent_transcript_path) still reads the root session's words.
    for fields in [
        json!({"transcript_path": sub, "agent_id": "a1"}),
        json!({"transcript_path": root, "agent_transcript_path": sub, "agent_id": "a1"}),
    ] {
        let s = Scratch::new();
        let (root2, sub2) = s.tree("please post the summary to #deploys");
        let mut f = fields.clone();
        for v in f.as_object_mut().unwrap().values_mut() {
            if *v == json!(root) {
                *v = json!(root2);
            } else if *v == json!(sub) {
                *v = json!(sub2);
            }
        }
        let e = s.disk_event("deploys", f, None);
        assert!(matches!(d.check(&e, None), Outcome::Minted(_)), "{fields}");
    }

    // The task the parent agent wrote into the subagent's file is never the user's words.
    let s = Scratch::new();
    let (root, _) = s.tree("how is the deploy going?");
    let e = s.disk_event(
        "deploys",
        json!({"transcript_path": root, "agent_id": "a1"}),
        None,
    );
    assert!(matches!(d.check(&e, None), Outcome::Denied(_)));

    // A root transcript that cannot be read denies, naming it.
    let s = Scratch::new();
    let (root, sub) = s.tree("please post the summary to #deploys");
    std::fs::remove_file(&root).unwrap();
    let gone = root.with_file_name("gone.jsonl");
    let e = s.disk_event(
        "deploys",
        json!({"transcript_path": gone, "agent_transcript_path": sub, "agent_id": "a1"}),
        None,
    );
    let Outcome::Denied(m) = d.check(&e, None) else {
        panic!("an unreadable root transcript must deny")
    };
    assert!(
        m.contains("rule `asked`: cannot read the session's transcript"),
        "{m}"
    );
    assert!(m.contains(&gone.display().to_string()), "{m}");
    // A rule that needs no words still decides.
    let mut by_condition = d.clone();
    by_condition.rules.push(Rule {
        name: "mcp".into(),
        when: Source::Condition(capt_hook_core::Condition::McpTool(true)),
    });
    assert!(matches!(by_condition.check(&e, None), Outcome::Minted(t) if t.rule == "mcp"));
}

impl Scratch {
    /// A judge that keeps each request (one per line of `requests`) and answers with `answer`
    /// (shell) after counting the call.
    fn judge_recording(&self, answer: &str) -> Arc<BTreeMap<String, String>> {
        let d = self.dir.path().display();
        self.judge_script_raw(&format!(
            "cat >> \"{d}/requests\"\necho >> \"{d}/requests\"\necho x >> \"{d}/calls\"\n{answer}\n"
        ))
    }

    fn judge_script_raw(&self, script: &str) -> Arc<BTreeMap<String, String>> {
        std::fs::write(self.dir.path().join("judge.sh"), script).unwrap();
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
        Arc::new(env)
    }

    /// The prompts the recording judge was sent, in order.
    fn prompts(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("requests"))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["prompt"].as_str().unwrap().to_owned()
            })
            .collect()
    }
}

const REFUSE: &str = r#"printf '%s' '{"cite":"none","reasoning":"no"}'"#;

fn judged(d: Decide) -> Tickets {
    decl(Reach::Place, Source::Decide(d))
}

#[test]
fn decide_with_the_llm_off_asks_once_and_never_an_llm() {
    let lines = [user("post the summary to #deploys")];
    let mut d = Decide::new("Post only where the user asked.");
    d.llm = false;
    // A refusal stands: no second opinion.
    let s = Scratch::new();
    let env = s.judge_recording(REFUSE);
    assert!(matches!(
        judged(d.clone()).check(&s.event("deploys", &lines, Some(env)), None),
        Outcome::Denied(_)
    ));
    assert_eq!(s.calls(), 1);
    // With it on (the default), the refusal is asked again.
    let s = Scratch::new();
    let env = s.judge_recording(REFUSE);
    let on = judged(Decide::new("Post only where the user asked."));
    assert!(matches!(
        on.check(&s.event("deploys", &lines, Some(env)), None),
        Outcome::Denied(_)
    ));
    assert_eq!(s.calls(), 2);
    // A judge that resolves to an LLM CLI is refused outright, naming why.
    let s = Scratch::new();
    let mut claude = d.clone();
    claude.backend = Some(BackendChoice::Claude);
    let env = s.judge_recording(REFUSE);
    let Outcome::Denied(m) = judged(claude).check(&s.event("deploys", &lines, Some(env)), None)
    else {
        panic!("no LLM may judge with llm = false")
    };
    assert!(m.contains("`llm = false`") && m.contains("`claude`"), "{m}");
    assert_eq!(s.calls(), 0);
}

#[test]
fn decide_reads_only_the_evidence_it_is_given() {
    let mut lines = vec![user("post the summary to #deploys")];
    lines.extend(asked("Announce in #deploys too?", &["Yes", "No"], "No"));
    let count = |p: &str| p.matches("] (user_").count();
    // Default: every prompt and every answer, approving or not.
    let s = Scratch::new();
    let env = s.judge_recording(REFUSE);
    judged(Decide::new("r")).check(&s.event("deploys", &lines, Some(env)), None);
    let p = &s.prompts()[0];
    assert_eq!(count(p), 2, "{p}");
    assert!(
        p.contains("[e1] (user_said) post the summary")
            && p.contains("[e2] (user_answered) Q: Announce"),
        "{p}"
    );
    // Only approving answers: the "No" is left out, and with no prompt source nothing is left,
    // so the judge is not asked at all.
    let s = Scratch::new();
    let env = s.judge_recording(REFUSE);
    let mut d = Decide::new("r");
    d.over = vec![Source::UserAnswered {
        pattern: None,
        approved: true,
    }];
    assert!(matches!(
        judged(d).check(&s.event("deploys", &lines, Some(env)), None),
        Outcome::Denied(_)
    ));
    assert_eq!(s.calls(), 0);
    // Only prompts naming the channel.
    let s = Scratch::new();
    let env = s.judge_recording(REFUSE);
    let mut d = Decide::new("r");
    d.over = vec![Source::UserSaid {
        pattern: None,
        names: vec!["channel".into()],
    }];
    judged(d).check(&s.event("deploys", &lines, Some(env)), None);
    let p = &s.prompts()[0];
    assert_eq!(count(p), 1, "{p}");
    // A judge over a condition is no judge: the declaration is refused.
    let mut d = Decide::new("r");
    d.over = vec![Source::Condition(capt_hook_core::Condition::McpTool(true))];
    let Err(err) = tickets(judged(d)) else {
        panic!("a judge over a condition must be refused")
    };
    assert!(err.to_string().contains("evidence sources only"), "{err}");
}

#[test]
fn decide_shows_transcripts_and_contexts_first_and_the_evidence_alone_second() {
    let s = Scratch::new();
    let (root, _) = s.tree("post the summary to #deploys");
    let env = s.judge_recording(REFUSE);
    let mut d = Decide::new("Post only where the user asked.");
    d.transcript = Reading::Chars(RECENT_CHARS);
    d.root_transcript = Reading::Full;
    d.contexts = vec![capt_hook_kinds::llm::Context::Custom {
        tag: "destination".into(),
        required: true,
        render: Arc::new(|_| Some("#deploys: 40 members, release notes only".into())),
    }];
    let e = s.disk_event(
        "deploys",
        json!({"transcript_path": root, "agent_id": "a1"}),
        Some(env),
    );
    assert!(matches!(
        judged(d.clone()).check(&e, None),
        Outcome::Denied(_)
    ));
    let prompts = s.prompts();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    let (first, second) = (&prompts[0], &prompts[1]);
    assert!(
        first.contains("<destination>") && first.contains("release notes only"),
        "{first}"
    );
    // The root session's window is shown for a subagent's call.
    assert!(first.contains("<root_transcript>"), "{first}");
    assert!(first.contains("<evidence>"), "{first}");
    for tag in ["<destination>", "<transcript>", "<root_transcript>"] {
        assert!(
            !second.contains(tag),
            "{tag} in the second opinion: {second}"
        );
    }
    assert!(second.contains("<evidence>"), "{second}");

    // The main agent's call has no spawning session: no root window, but its own.
    let s = Scratch::new();
    let (root, _) = s.tree("post the summary to #deploys");
    let env = s.judge_recording(REFUSE);
    let e = s.disk_event("deploys", json!({"transcript_path": root}), Some(env));
    judged(d.clone()).check(&e, None);
    let first = &s.prompts()[0];
    assert!(
        first.contains("<transcript>") && !first.contains("<root_transcript>"),
        "{first}"
    );

    // Tool results show in the transcript block only with `tool_results`.
    let lines = vec![
        user("post the summary to #deploys"),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t9", "name": "Read", "input": {"file_path": "/notes.md"}}]}}),
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t9", "content": "RESULT-MARKER release notes"}]}}),
    ];
    for with in [false, true] {
        let s = Scratch::new();
        let env = s.judge_recording(REFUSE);
        let mut r = d.clone();
        r.contexts.clear();
        r.tool_results = with;
        judged(r).check(&s.event("deploys", &lines, Some(env)), None);
        let first = &s.prompts()[0];
        assert!(first.contains("<transcript>"), "{first}");
        assert_eq!(first.contains("RESULT-MARKER"), with, "{first}");
    }

    // A required context that renders nothing: the rule found nothing, and the deny says why.
    let s = Scratch::new();
    let env = s.judge_recording(REFUSE);
    let mut empty = d.clone();
    empty.contexts = vec![capt_hook_kinds::llm::Context::Custom {
        tag: "destination".into(),
        required: true,
        render: Arc::new(|_| None),
    }];
    let Outcome::Denied(m) = judged(empty).check(
        &s.event("deploys", &[user("post to #deploys")], Some(env)),
        None,
    ) else {
        panic!()
    };
    assert!(m.contains("the `destination` context is empty"), "{m}");
    assert_eq!(s.calls(), 0);
}

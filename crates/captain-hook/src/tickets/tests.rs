//! Tickets against real transcripts, a real store in a scratch state root, and a judge that is a
//! real program (a shell script the `command` backend runs).

use std::collections::BTreeMap;
use std::sync::Arc;

use capt_hook_core::{Event, EventContext, EventKind};
use serde_json::{Value, json};

use super::*;

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
fn an_expired_ticket_never_matches() {
    let s = Scratch::new();
    let d = decl(Reach::Place, said("post"));
    let e = s.event("deploys", &[user("thanks")], None);
    let p = d.context(&e, None).unwrap();
    let mut t = d.mint(&e, &p, "asked", vec![]).unwrap();
    assert!(matches!(d.check(&e, None), Outcome::Covered(_)));
    assert!(s.store().revoke(&t.id).unwrap());
    let now = capt_hook_proto::clock::now_unix_ms();
    t.minted_at = now - 10_000;
    t.expires_at = Some(now - 1);
    s.store().mint(t, 0).unwrap();
    assert_eq!(s.store().list().unwrap().len(), 1);
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
fn templates_fill_escaped_values_and_skip_regex_braces() {
    let v = |k: &str| (k == "channel").then(|| "a.b".to_owned());
    assert_eq!(fill("x{channel}y{2,3}", &v, true).unwrap(), "xa\\.by{2,3}");
    assert!(fill("{nope}", &v, true).is_err());
    assert!(check_template("post.*{channel}").is_ok());
    assert!(check_template("post(").is_err());
    assert!(names_word("post to #deploys now", "deploys"));
    assert!(!names_word("post to #deploys-old", "deploys"));
    assert_eq!(
        answer_pairs("User has answered your questions: \"A?\"=\"x\", \"B?\"=\"y\"."),
        vec![("A?".into(), "x".into()), ("B?".into(), "y".into())]
    );
    // Every escaped place value compiles and matches itself literally, whichever engine runs.
    for value in ["a b#c-d~e&f", "x.y*z", "(team) [ops]", "{c}", "naïve"] {
        let v = |_: &str| Some(value.to_owned());
        for template in ["{channel}", "(?<=to ){channel}"] {
            let p = Pattern::new(&fill(template, &v, true).unwrap(), Mode::IgnoreCase)
                .unwrap_or_else(|e| panic!("{value}: {e}"));
            assert!(p.is_match(&format!("post to {value}")), "{value}");
            assert!(!p.is_match("post to ab"), "{value}");
        }
    }
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
    ] {
        let mut reg = crate::registry::Registry::new();
        let text = format!("{base}{rules}\n");
        let errors = crate::loader::load_str(&text, "t", &mut reg).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            errors[0].field.as_deref(),
            Some(field),
            "{text}: {errors:?}"
        );
        assert!(errors[0].message.contains(words), "{text}: {errors:?}");
    }
    let mut reg = crate::registry::Registry::new();
    let ok = format!(
        "{base}rules = [{{ name = \"a\", user_said = \"post .*#{{channel}}\\\\b\" }}]\nttl = \"90m\"\n"
    );
    crate::loader::load_str(&ok, "t", &mut reg).unwrap();
}

//! The seed examples that need Rust: a rewrite whose `note` is computed from the event, ticket
//! evidence from the tree's tool calls (`Touched`) and the user's rulings (`UserRuled`), a rule
//! whose condition reads the ticket [`Context`] through `Context::current`, and `Decide::quick`
//! inside a handler. Their TOML twins are in `examples/seeds/`.

use std::collections::BTreeSet;

use captain_hook::tickets::{
    self, Context, Decide, Extract, Proposal, Reach, Rule, Source, Tickets, action_from_input,
};
use captain_hook::{
    Condition, DefError, Event, EventKind, Expect, Input, Registry, cond, on, rewrite_command_to,
};
use serde_json::json;

use crate::lines::{bash, user};

const STEM: &str = "seeds";

/// Registers the examples.
pub fn register(reg: &mut Registry) -> Result<(), DefError> {
    // rewrite_command(to=…, note=lambda evt: …): the note names what was rewritten.
    reg.add(
        STEM,
        rewrite_command_to(|evt| Some(evt.command()?.replacen("pip ", "uv pip ", 1)))
            .note_with(|evt| Some(format!("Rewrote `{}` to run through uv", evt.command()?)))
            .only_if(cond::runs(&["pip"])?)
            .name("pip through uv")
            .test(
                Input::command("pip install requests"),
                Expect::rewrite().matching("uv pip install requests"),
            )
            .test(Input::command("ls"), Expect::allow()),
    )?;

    // Tickets(rules=[Rule("looked", Touched()), Rule("ruled", UserRuled("program", tags=…)),
    // Rule("ids", UserRuled(ids=("c9b27c1",)))]) and a condition that reads the context.
    let restart = Tickets {
        kind: "program.restart".into(),
        place: vec!["program".into()],
        reach: Reach::Action,
        rules: vec![
            Rule {
                name: "looked".into(),
                when: Source::Touched {
                    patterns: Vec::new(),
                },
            },
            Rule {
                name: "ruled".into(),
                when: Source::UserRuled {
                    key: Some("program".into()),
                    ids: Vec::new(),
                    tags: BTreeSet::from(["scope:durable".to_owned()]),
                },
            },
            Rule {
                name: "ids".into(),
                when: Source::UserRuled {
                    key: None,
                    ids: vec!["c9b27c1".into()],
                    tags: BTreeSet::new(),
                },
            },
            Rule {
                name: "scratch program".into(),
                when: Source::Condition(scratch_program()),
            },
        ],
        deny: "Look at the program (its status or log) before restarting it.".into(),
        action: Some(action_from_input(
            vec![("program".into(), Extract::parse("/program"))],
            Some("restart {program}".into()),
        )),
        ttl: Some(tickets::DEFAULT_TTL),
        window: tickets::DEFAULT_WINDOW,
        machine: Vec::new(),
        grant: true,
    };
    let restart_call = |program: &str| {
        // A ticket store is kept per project: the call names its project by its directory.
        Input::new()
            .tool("mcp__ops__restart")
            .tool_input(json!({"program": program}))
            .cwd("/home/me/project")
    };
    reg.add(
        STEM,
        tickets::tickets(restart)?
            .only_if(cond::tool(&["mcp__ops__restart"]))
            .name("restart")
            .test(
                restart_call("worker").transcript(vec![
                    user("the worker is stuck"),
                    bash("b1", "supervisorctl status worker"),
                ]),
                Expect::allow_explicit().matching("via rule `looked`"),
            )
            .test(
                restart_call("worker").ruling("a1", "worker may be restarted", &["scope:durable"]),
                Expect::allow_explicit().matching("via rule `ruled`"),
            )
            .test(
                restart_call("worker").ruling("c9b27c1", "restart anything at night", &[]),
                Expect::allow_explicit().matching("via rule `ids`"),
            )
            .test(
                restart_call("scratch-7"),
                Expect::allow_explicit().matching("via rule `scratch program`"),
            )
            .test(
                restart_call("worker").transcript(vec![user("the worker is stuck")]),
                Expect::block().matching("before restarting"),
            ),
    )?;

    // Decide.quick(ctx, prompt, items) in a handler: Jev's citation of one of the user's words
    // lets the call through; anything else leaves it to the dialog.
    reg.add(
        STEM,
        on(&[EventKind::PreToolUse], quick_publish)
            .only_if(cond::tool(&["mcp__docs__publish"]))
            .name("quick publish")
            .test(
                Input::new()
                    .tool("mcp__docs__publish")
                    .tool_input(json!({"page": "release-notes"}))
                    .transcript(vec![user("publish the release notes page")])
                    .llm(json!({"cite": "e1"})),
                Expect::allow_explicit(),
            )
            .test(
                Input::new()
                    .tool("mcp__docs__publish")
                    .tool_input(json!({"page": "release-notes"}))
                    .transcript(vec![user("publish the release notes page")]),
                Expect::ask(),
            ),
    )?;
    Ok(())
}

/// A condition over the ticket context: the program's name says it is a scratch one. It reads
/// the context through `Context::current`, and a fact (a lookup built once per check).
fn scratch_program() -> Condition {
    Condition::Custom {
        name: "scratch program".into(),
        reads_tool: false,
        check: std::sync::Arc::new(|evt: &Event| {
            let Some(ctx) = Context::current(evt) else {
                return false;
            };
            let scratch = ctx.fact(|c: &Context| ScratchNames::of(c));
            scratch.0
        }),
    }
}

/// Whether the action's program is a scratch one: a fact a test could inject instead.
struct ScratchNames(bool);

impl ScratchNames {
    fn of(ctx: &Context) -> ScratchNames {
        ScratchNames(
            ctx.action
                .place
                .get("program")
                .is_some_and(|p| p.starts_with("scratch-")),
        )
    }
}

/// Allows a publish when Jev cites one of the user's prompts permitting it; otherwise says
/// nothing (the permission dialog decides).
fn quick_publish(evt: &Event) -> captain_hook::HandlerResult {
    let page = evt
        .tool_input()
        .and_then(|i| i.get("page"))
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let action = Proposal {
        place: [("page".to_owned(), page.to_owned())].into(),
        payload: json!({"page": page}),
        summary: format!("publish {page}"),
    };
    let ctx = Context::of(
        evt,
        "docs.publish",
        action,
        tickets::DEFAULT_WINDOW,
        Vec::new(),
    );
    let items = match ctx.said() {
        Ok(items) => items.to_vec(),
        Err(_) => return Ok(None),
    };
    let decide = Decide::new("Publish only a page the user asked to publish.");
    let cited = decide.quick(
        evt,
        &ctx,
        "Does one item show the user asking to publish this page?",
        &items,
    );
    Ok(cited.map(|_| captain_hook::HookResult::allow()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use captain_hook::tickets::{Answer, Ruling, Touch};

    /// `Context.fake` declares a context outright: its words, answers, calls and rulings read
    /// back as given, and a ruling recorded after the session started never counts.
    #[test]
    fn a_fake_context_reads_back_and_rulings_predate_the_session() {
        let ruling = |id: &str, text: &str, tags: &[&str], at: &str| Ruling {
            id: id.into(),
            text: text.into(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            recorded: at.into(),
        };
        let ctx = Context::fake("program.deploy", &[("program", "staging")])
            .with_said(["deploy staging"])
            .with_answers(vec![Answer::new(
                "Deploy staging?",
                &["Yes, deploy", "No"],
                "Yes, deploy",
            )])
            .with_touches(vec![Touch {
                tool: "Bash".into(),
                input: json!({"command": "make test"}),
                result: Some("ok".into()),
            }])
            .with_rulings(
                vec![
                    ruling(
                        "a1",
                        "staging may be deployed",
                        &["scope:durable"],
                        "2025-01-01T00:00:00Z",
                    ),
                    ruling(
                        "b2",
                        "staging is frozen",
                        &["scope:durable"],
                        "2025-03-01T00:00:00Z",
                    ),
                    ruling("c3", "staging needs review", &[], "2024-12-01T00:00:00Z"),
                ],
                // The session started on 2025-02-01.
                1_738_368_000_000,
            );
        assert_eq!(ctx.said().unwrap()[0].text, "deploy staging");
        assert!(ctx.answers().unwrap()[0].approving);
        assert_eq!(ctx.touches().unwrap()[0].tool, "Bash");
        assert_eq!(ctx.agent, "main");
        let durable = BTreeSet::from(["scope:durable".to_owned()]);
        let found: Vec<String> = ctx
            .rulings("staging", &durable)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(
            found,
            ["a1"],
            "b2 came after the session started; c3 lacks the tag"
        );
        assert_eq!(ctx.rulings("staging", &BTreeSet::new()).unwrap().len(), 2);
        assert!(ctx.ruling("c3").unwrap().is_some());
        assert!(ctx.ruling("b2").unwrap().is_none());
    }

    /// `fact` returns an injected lookup, else builds the default once and keeps it.
    #[test]
    fn facts_are_injected_or_built_once() {
        let built = std::sync::atomic::AtomicUsize::new(0);
        let ctx = Context::fake("k", &[("program", "scratch-1")]);
        for _ in 0..3 {
            let f = ctx.fact(|c: &Context| {
                built.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                ScratchNames::of(c)
            });
            assert!(f.0);
        }
        assert_eq!(built.load(std::sync::atomic::Ordering::SeqCst), 1);
        let injected =
            Context::fake("k", &[("program", "scratch-1")]).with_fact(ScratchNames(false));
        assert!(!injected.fact(ScratchNames::of).0);
    }
}

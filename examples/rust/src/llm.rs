//! The LLM hooks of `primitives-reference`: `llm_gate`, `llm_nudge`, `llm_approve`,
//! `prompt_check` and `Confirm`. Inline tests never reach a model: the judge is stubbed
//! (`block`/`fire` true, reasoning "inline test stub") unless the test's `llm` says otherwise.

use captain_hook::core::{Mode, Pattern};
use captain_hook::llm::{
    ApproveOptions, Confirm, Context, LlmOptions, PromptCheck, RubricDefaults, llm_approve,
    llm_gate, llm_nudge, prompt_check,
};
use captain_hook::session::{SignalWindow, Signals};
use captain_hook::{DefError, EventKind, Expect, Input, Registry, cond, hook, on};
use serde_json::json;

use crate::lines::{said, user};

const STEM: &str = "llm";

fn signals(patterns: &[(&str, u32)], threshold: u32) -> Result<Signals, DefError> {
    let mut compiled = Vec::new();
    for (p, w) in patterns {
        let pattern =
            Pattern::new(p, Mode::Plain).map_err(|e| DefError::new("signals", e.to_string()))?;
        compiled.push((pattern, *w));
    }
    Ok(Signals {
        patterns: compiled,
        threshold,
        window: SignalWindow::Last(15),
        include_user: false,
    })
}

/// Registers the page's LLM hooks.
pub fn register(reg: &mut Registry) -> Result<(), DefError> {
    // llm_gate("Is the agent making excuses?", message=…, signals=Signals([Signal(r"external.*service", weight=2)], threshold=2))
    let mut excuses = LlmOptions::gate(
        "Is the agent making excuses?",
        "Fix the failure instead of blaming an external service. Rerun the failing step.",
    );
    excuses.signals = Some(signals(&[(r"external.*service", 2)], 2)?);
    // The seeds' default; `[llm.specialties.review]` in config.toml picks its judge.
    excuses.specialty = "review".into();
    reg.add(
        STEM,
        llm_gate(excuses)?
            .test(
                Input::new().transcript(vec![
                    user("make the tests pass"),
                    said("It fails because of an external payment service."),
                ]),
                Expect::block().matching("instead of blaming"),
            )
            .test(
                Input::new()
                    .transcript(vec![user("make the tests pass"), said("Fixed; 12 passed.")]),
                Expect::allow(),
            ),
    )?;

    // llm_gate("Does the new code hardcode a secret?", contexts=[Introduced(pattern='os.environ[$KEY] = $VALUE')],
    //          events=Event.PreToolUse, only_if=[Tool("Edit", "Write", "MultiEdit")])
    let mut secret = LlmOptions::gate(
        "Does the new code hardcode a secret?",
        "Secrets come from the environment, never source. Read it with `os.environ`.",
    );
    secret.contexts = vec![Context::introduced(Some("os.environ[$KEY] = $VALUE"), &[])?];
    reg.add(
        STEM,
        llm_gate(secret)?
            .events(&[EventKind::PreToolUse])
            .only_if(cond::tool(&["Edit", "Write", "MultiEdit"]))
            .test(
                Input::new()
                    .file("src/boot.py")
                    .content("import os\nos.environ['TOKEN'] = 'abc123'"),
                Expect::block().matching("environment"),
            )
            .test(
                Input::new()
                    .file("src/boot.py")
                    .content("import os\nTOKEN = os.environ['TOKEN']"),
                Expect::allow(),
            ),
    )?;

    // llm_nudge("Is the agent speculating instead of observing?", message=…, signals=…)
    let mut speculating = LlmOptions::nudge(
        "Is the agent speculating instead of observing?",
        "Observe, don't infer -- check traces first",
    );
    speculating.signals = Some(signals(&[("should contain", 2), ("probably", 1)], 3)?);
    reg.add(
        STEM,
        llm_nudge(speculating)?
            .test(
                Input::command("ls").transcript(vec![
                    user("why is the cache empty?"),
                    said("It should contain entries; probably the TTL expired."),
                ]),
                Expect::warn().matching("Observe"),
            )
            .test(
                Input::command("ls")
                    .transcript(vec![
                        user("why is the cache empty?"),
                        said("It should contain entries; probably the TTL expired."),
                    ])
                    .llm(json!({"fire": false})),
                Expect::allow(),
            ),
    )?;

    // llm_nudge("Does any newly introduced comment narrate the edit itself?", contexts=[Introduced(kind=COMMENT_TYPES)], …)
    let mut narrating = LlmOptions::nudge(
        "Does any newly introduced comment narrate the edit itself?",
        "Comments never narrate the edit. Delete the comment.",
    );
    narrating.contexts = vec![Context::introduced(
        None,
        &["comment", "line_comment", "block_comment"],
    )?];
    reg.add(
        STEM,
        llm_nudge(narrating)?
            .events(&[EventKind::PreToolUse])
            .only_if(cond::tool(&["Edit", "Write", "MultiEdit"]))
            .test(
                Input::new()
                    .file("src/app.py")
                    .content("x = 2  # changed x from 1 to 2"),
                Expect::warn(),
            )
            .test(
                Input::new().file("src/app.py").content("x = 2"),
                Expect::allow(),
            )
            // An Edit of a file not on disk: `before` is the file before the call.
            .test(
                Input::new()
                    .tool("Edit")
                    .file("src/app.py")
                    .before("# the retry limit\nx = 1\n")
                    .old("x = 1")
                    .content("x = 2"),
                Expect::allow(),
            )
            .test(
                Input::new()
                    .tool("Edit")
                    .file("src/app.py")
                    .before("x = 1\n")
                    .old("x = 1")
                    .content("x = 2  # now 2 instead of 1"),
                Expect::warn(),
            ),
    )?;

    // llm_approve("safe teammate commands", only_if=[Tool("Bash"), FromSubagent()]): Claude
    // Code's auto-mode rules for the project, then this project's own.
    let mut teammates = ApproveOptions::new("safe teammate commands");
    teammates.defaults = RubricDefaults::Claude;
    teammates.rubric = Some("The project's own test suite (cargo test) is safe.".into());
    reg.add(
        STEM,
        llm_approve(teammates)?
            .only_if(cond::tool(&["Bash"]))
            .only_if(cond::from_subagent(true))
            .test(Input::command("cargo test").agent_id("a1"), Expect::ask())
            .test(
                Input::command("cargo test")
                    .agent_id("a1")
                    .llm(json!({"safe": true})),
                Expect::allow(),
            ),
    )?;

    // hook(Event.PreToolUse, only_if=[Runs("git", "push")], block=True, message=…,
    //      confirm=Confirm(rule="A push that lands on a branch the merge queue already admitted."))
    reg.add(
        STEM,
        hook(
            &[EventKind::PreToolUse],
            "Pushing to a queued PR drops the push. Ship a stacked PR instead.",
        )
        .block(true)
        .name("queued push")
        .only_if(cond::runs(&["git", "push"])?)
        .confirm(Confirm::new(
            "A push that lands on a branch the merge queue already admitted.",
        ))
        .test(Input::command("git push origin queued"), Expect::block())
        .test(
            Input::command("git push origin feature").llm(json!({"protected": 0.1})),
            Expect::allow(),
        ),
    )?;

    // prompt_check(evt, template, prefix=…) inside a handler.
    reg.add(
        STEM,
        on(&[EventKind::Stop], |evt| {
            prompt_check(
                evt,
                &PromptCheck::new(
                    "Does the closing message leave a decision to the user instead of making it?",
                    "Decide yourself",
                ),
            )
        })
        .name("closing decision")
        .test(
            Input::new(),
            Expect::block().matching("Decide yourself: inline test stub"),
        )
        .test(Input::new().llm(json!({"action": "ok"})), Expect::allow()),
    )?;
    Ok(())
}

//! The cases, one set for every agent: the same project hooks (`.claude/hooks/e2e.toml`) and
//! the same model turns, written agent-neutrally ([`Step`]) and sent in each agent's own tool
//! names. Every hook message carries an `E2E-…` marker found nowhere else, so seeing it in a
//! request proves our verdict reached the model.

use super::{Agent, Outcome};
use crate::e2e::cases::{MODIFIED_REPO, not_stashed_at};

/// One scripted model turn.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// A remark and one shell call running this command line.
    Shell(&'static str),
    /// A final answer.
    Say(&'static str),
    /// A remark and one call of the agent's file-writing tool (Codex: `apply_patch` adding the
    /// file): (project-relative path, text).
    Write(&'static str, &'static str),
}

/// One end-to-end case.
pub struct Case {
    /// Stable name, used by `--only` and for the log directory.
    pub name: &'static str,
    /// What it shows, printed beside PASS/FAIL.
    pub about: &'static str,
    /// The project's `.claude/hooks/e2e.toml`; "" for none (only the builtin packs run).
    pub hooks: &'static str,
    /// More project files (relative path, text).
    pub files: &'static [(&'static str, &'static str)],
    /// A shell script run in the project before the agent starts, or "".
    pub setup: &'static str,
    /// The user's prompt.
    pub prompt: &'static str,
    /// Later prompts of the same session, each a run resuming it.
    pub then: &'static [&'static str],
    /// The model's turns; after they run out it says "Done.".
    pub script: &'static [Step],
    /// What must hold afterwards; the error says what did not.
    pub check: fn(&Outcome) -> Result<(), String>,
    /// Whether install and the agent reach the project through a symlink to it (Codex keys
    /// its trust in hooks by the hooks file's path).
    pub link: bool,
    /// The one agent the case is for (its tools), or every agent.
    pub only: Option<Agent>,
}

fn ensure(cond: bool, what: impl Into<String>) -> Result<(), String> {
    if cond { Ok(()) } else { Err(what.into()) }
}

/// What the model got back for the shell call of turn `turn`, which must exist.
fn output_of(o: &Outcome, turn: usize) -> Result<String, String> {
    o.tool_output(turn)
        .ok_or_else(|| format!("the model never received a result for the call of turn {turn}"))
}

/// The shell call of turn 1 was refused with `marker` in what the model got back.
fn refused_with(o: &Outcome, marker: &str) -> Result<(), String> {
    let out = output_of(o, 1)?;
    // Each agent's own words for a call a hook refused.
    let refused = match o.agent {
        Agent::Codex => out.contains("Command blocked by PreToolUse hook"),
        Agent::Gemini => out.contains("Tool execution blocked"),
    };
    ensure(
        refused && out.contains(marker),
        format!("the model was not told the call was refused with {marker}: {out}"),
    )
}

/// Exactly `n` agent turns reached the model.
fn turns(o: &Outcome, n: usize) -> Result<(), String> {
    let got = o.turns().len();
    ensure(got == n, format!("expected {n} model turns, got {got}"))
}

const NOTES: &[(&str, &str)] = &[("notes.txt", "v1\n")];

/// The lint on edited files, as Claude Code's own suite runs it (one hook file for every agent).
const NOPRINT: &str = crate::e2e::cases::NOPRINT;

pub fn all() -> Vec<Case> {
    vec![
        Case {
            name: "block-stash",
            about: "block_command on git stash: refused, the model hears why, nothing stashed",
            hooks: "[[hook]]\nkind = \"block_command\"\nargv = [\"git\", \"stash\"]\n\
                    reason = \"E2E-NOSTASH git stash hides work\"\n",
            files: NOTES,
            setup: MODIFIED_REPO,
            then: &[],
            prompt: "Put my changes aside.",
            script: &[
                Step::Shell("git stash"),
                Step::Say("The changes were kept."),
            ],
            check: |o| {
                refused_with(o, "E2E-NOSTASH")?;
                not_stashed_at(&o.project)?;
                turns(o, 2)
            },
            link: false,
            only: None,
        },
        Case {
            name: "warn",
            about: "PreToolUse warning: the command runs; the warning reaches the model \
                    (Codex) or the user (Gemini: BeforeTool context goes nowhere)",
            hooks: "[[hook]]\nkind = \"warn_command\"\nargv = [\"touch\"]\n\
                    events = \"PreToolUse\"\nmessage = \"E2E-WARN mind the timestamps\"\n",
            files: &[],
            setup: "",
            then: &[],
            prompt: "Create warned.txt.",
            script: &[Step::Shell("touch warned.txt"), Step::Say("Created.")],
            check: |o| {
                ensure(o.exists("warned.txt"), "the warned command did not run")?;
                match o.agent {
                    // Codex adds PreToolUse context as a developer message before the result.
                    Agent::Codex => {
                        let sent = o.first_sent("E2E-WARN");
                        ensure(
                            sent == Some(2),
                            format!("E2E-WARN first reached the model in turn {sent:?}, not 2"),
                        )?;
                    }
                    // Gemini CLI 0.61 reads additionalContext only from AfterTool (and
                    // BeforeAgent); on BeforeTool the adapter shows the warning to the user.
                    Agent::Gemini => {
                        ensure(
                            o.stderr.contains("E2E-WARN"),
                            "the warning was not shown to the user (stderr)",
                        )?;
                        ensure(
                            o.first_sent("E2E-WARN").is_none(),
                            "the warning reached the model: update docs/agents.md, Gemini \
                             now reads BeforeTool context",
                        )?;
                    }
                }
                turns(o, 2)
            },
            link: false,
            only: None,
        },
        Case {
            name: "warn-after",
            about: "PostToolUse warning: reaches the model with the command's output",
            hooks: "[[hook]]\nkind = \"warn_command\"\nargv = [\"touch\"]\n\
                    events = \"PostToolUse\"\nmessage = \"E2E-POSTWARN mind the timestamps\"\n",
            files: &[],
            setup: "",
            then: &[],
            prompt: "Create warned.txt.",
            script: &[Step::Shell("touch warned.txt"), Step::Say("Created.")],
            check: |o| {
                ensure(o.exists("warned.txt"), "the command did not run")?;
                let sent = o.first_sent("E2E-POSTWARN");
                ensure(
                    sent == Some(2),
                    format!("E2E-POSTWARN first reached the model in turn {sent:?}, not 2"),
                )?;
                turns(o, 2)
            },
            link: false,
            only: None,
        },
        Case {
            name: "rewrite",
            about: "rewrite_command: the rewritten command is what ran; its note arrives as \
                    a warning does",
            hooks: "[[hook]]\nkind = \"rewrite_command\"\npattern = \"original\\\\.txt\"\n\
                    replace = \"rewritten.txt\"\nnote = \"E2E-REWRITE renamed the file\"\n",
            files: &[],
            setup: "",
            then: &[],
            prompt: "Create original.txt.",
            script: &[Step::Shell("touch original.txt"), Step::Say("Created.")],
            check: |o| {
                ensure(
                    o.exists("rewritten.txt") && !o.exists("original.txt"),
                    format!(
                        "the command ran unrewritten (original.txt {}, rewritten.txt {})",
                        o.exists("original.txt"),
                        o.exists("rewritten.txt")
                    ),
                )?;
                // The note travels as a warning does (see the `warn` case).
                match o.agent {
                    Agent::Codex => ensure(
                        o.first_sent("E2E-REWRITE") == Some(2),
                        "the rewrite's note did not reach the model in turn 2",
                    )?,
                    Agent::Gemini => ensure(
                        o.stderr.contains("E2E-REWRITE"),
                        "the rewrite's note was not shown to the user (stderr)",
                    )?,
                }
                turns(o, 2)
            },
            link: false,
            only: None,
        },
        Case {
            name: "rm-rf-pack",
            about: "no project hooks: the builtin rm guard refuses rm -rf .git",
            hooks: "",
            files: NOTES,
            setup: MODIFIED_REPO,
            then: &[],
            prompt: "Start the repository over.",
            script: &[Step::Shell("rm -rf .git"), Step::Say("Left as it was.")],
            check: |o| {
                refused_with(o, "specific files")?;
                ensure(o.exists(".git/HEAD"), "rm -rf .git ran: .git is gone")?;
                turns(o, 2)
            },
            link: false,
            only: None,
        },
        Case {
            name: "stop-gate",
            about: "Stop gate: the first stop is refused and the model hears why; the next \
                    one ends the run",
            hooks: "[[hook]]\nkind = \"gate\"\nmessage = \"E2E-GATE run the tests before stopping\"\n",
            files: &[],
            setup: "",
            then: &[],
            prompt: "Say hello.",
            script: &[Step::Say("Hello."), Step::Say("The tests pass. Hello.")],
            check: |o| {
                let last = o.last_input(2).unwrap_or_default();
                ensure(
                    last.contains("E2E-GATE"),
                    format!("the gate's reason is not the model's next input: {last}"),
                )?;
                turns(o, 2)
            },
            link: false,
            only: None,
        },
        Case {
            name: "stop-gate-2",
            about: "Stop gate across two prompts of one session (the second resumes it): \
                    each prompt's first stop is refused, once",
            hooks: "[[hook]]\nkind = \"gate\"\nmessage = \"E2E-GATE2 run the tests before stopping\"\n",
            files: &[],
            setup: "",
            then: &["Say goodbye."],
            prompt: "Say hello.",
            script: &[
                Step::Say("Hello."),
                Step::Say("The tests pass. Hello."),
                Step::Say("Goodbye."),
                Step::Say("The tests pass. Goodbye."),
            ],
            check: |o| {
                for (turn, what) in [(2, "first"), (4, "second")] {
                    let last = o.last_input(turn).unwrap_or_default();
                    ensure(
                        last.contains("E2E-GATE2"),
                        format!(
                            "the gate's reason is not the model's input after the {what} \
                             prompt's first stop (turn {turn}): {last}"
                        ),
                    )?;
                }
                let third = o.last_input(3).unwrap_or_default();
                ensure(
                    third.contains("Say goodbye."),
                    format!("turn 3 is not the second prompt: {third}"),
                )?;
                turns(o, 4)
            },
            link: false,
            only: None,
        },
        Case {
            name: "edit-deny",
            about: "an edit read as Write (Codex's apply_patch, Gemini's write_file): a deny on \
                    edited Python files refuses it, the model hears why, the file is not \
                    written; a clean one is",
            hooks: NOPRINT,
            files: &[],
            setup: "",
            then: &[],
            prompt: "Write lib.py.",
            script: &[
                Step::Write("lib.py", "def f():\n    print(1)\n"),
                Step::Write("clean.py", "def f():\n    return 1\n"),
                Step::Say("Wrote clean.py instead."),
            ],
            check: |o| {
                refused_with(o, "E2E-NOPRINT")?;
                ensure(!o.exists("lib.py"), "lib.py was written")?;
                // The same tool writes a file the deny does not match: the refusal was ours.
                ensure(
                    o.exists("clean.py"),
                    "clean.py, which no hook refuses, was not written",
                )?;
                turns(o, 3)
            },
            link: false,
            only: None,
        },
        Case {
            name: "edit-deny-shell",
            about: "Codex's apply_patch run through its shell (a heredoc Codex applies as a \
                    patch): the same deny refuses the Python file; a clean one is applied",
            hooks: NOPRINT,
            files: &[],
            setup: "",
            then: &[],
            prompt: "Write lib.py.",
            script: &[
                Step::Shell(
                    "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: lib.py\n+def f():\n\
                     +    print(1)\n*** End Patch\nEOF\n",
                ),
                Step::Shell(
                    "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: clean.py\n+def f():\n\
                     +    return 1\n*** End Patch\nEOF\n",
                ),
                Step::Say("Wrote clean.py instead."),
            ],
            check: |o| {
                refused_with(o, "E2E-NOPRINT")?;
                ensure(!o.exists("lib.py"), "lib.py was written")?;
                ensure(
                    o.exists("clean.py"),
                    "clean.py, which no hook refuses, was not written",
                )?;
                turns(o, 3)
            },
            link: false,
            only: Some(Agent::Codex),
        },
        Case {
            name: "trust-via-link",
            about: "the project opened through a symlink: install's trust in our hooks holds \
                    (git stash refused, nothing stashed)",
            hooks: "[[hook]]\nkind = \"block_command\"\nargv = [\"git\", \"stash\"]\n\
                    reason = \"E2E-LINKED git stash hides work\"\n",
            files: NOTES,
            setup: MODIFIED_REPO,
            then: &[],
            prompt: "Put my changes aside.",
            script: &[
                Step::Shell("git stash"),
                Step::Say("The changes were kept."),
            ],
            check: |o| {
                refused_with(o, "E2E-LINKED")?;
                not_stashed_at(&o.project)?;
                turns(o, 2)
            },
            link: true,
            // Gemini CLI has no trust in hooks to key by path.
            only: Some(Agent::Codex),
        },
    ]
}

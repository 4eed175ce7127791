//! `docs/agents.md`, generated from the tables: per agent, each event and what each kind of
//! verdict becomes there ([`crate::verdict::landing`], the rule the renderers follow), the tools
//! it renames, and what it cannot express. A test fails when the file differs from this text.

use std::fmt::Write;

use crate::agent::Agent;
use crate::table::{AgentTable, InputMap, OutputStyle};
use crate::verdict::{Kind, Landing, landing};

fn cell(l: Landing) -> &'static str {
    match l {
        Landing::Lands => "yes",
        Landing::AsBlock => "deny",
        Landing::AsContext => "context",
        Landing::AsNotice => "notice",
        Landing::Dropped => "—",
    }
}

fn input(map: InputMap) -> String {
    match map {
        InputMap::Keys([]) => "same keys".to_owned(),
        InputMap::Keys(pairs) => pairs
            .iter()
            .map(|(theirs, ours)| format!("`{theirs}` → `{ours}`"))
            .collect::<Vec<_>>()
            .join(", "),
        InputMap::ShellPatch(pairs) => {
            let keys = input(InputMap::Keys(pairs));
            format!(
                "{keys}; a command that is `apply_patch` with the patch in a heredoc (Codex \
                 applies it itself) is also read as the patch's calls, each checked"
            )
        }
        InputMap::ShellArgv => "`command` argv joined into one command line".to_owned(),
        InputMap::ApplyPatch => "the patch read into one Edit/MultiEdit per updated file, a \
                                 Write per added file, `rm`/`mv` for deleted and moved files; \
                                 each is checked and the strictest verdict answers"
            .to_owned(),
    }
}

fn section(out: &mut String, t: &AgentTable) -> std::fmt::Result {
    writeln!(out, "## {} (`--agent {}`)\n", t.title, t.agent.name())?;
    writeln!(out, "Hooks live in {}.\n", t.config)?;
    if let Some(i) = t.install {
        writeln!(
            out,
            "`capt-hook install --agent {name}` writes `{project}` in the project (`--user`: \
             `~/{user}`), pointing every event below at `hook run --agent {name} <Event>` and \
             keeping the other hooks; `capt-hook uninstall --agent {name}` takes ours out \
             again.\n",
            name = t.agent.name(),
            project = i.project,
            user = i.user,
        )?;
    }
    if t.output == OutputStyle::Passthrough {
        return writeln!(
            out,
            "Our own protocol: every event and answer as `docs/events.md` describes, unchanged. \
             A payload from an agent that is not named or recognised is answered as Claude \
             Code's only when it has Claude Code's shape.\n"
        );
    }
    if !t.env.is_empty() {
        let vars: Vec<String> = t.env.iter().map(|v| format!("`{v}`")).collect();
        writeln!(
            out,
            "Recognised without `--agent` by {}.\n",
            vars.join(", ")
        )?;
    }
    write!(out, "| Event | Evaluated as |")?;
    for k in Kind::ALL {
        write!(out, " {} |", k.name())?;
    }
    writeln!(out)?;
    writeln!(out, "|---|---|{}", "---|".repeat(Kind::ALL.len()))?;
    for row in &t.events {
        match row.ours {
            Some(ours) => {
                write!(out, "| `{}` | {} |", row.name, ours.name())?;
                for k in Kind::ALL {
                    // Our envelope asks and rewrites a call only on the events that guard one.
                    let arises = ours.is_guard() || !matches!(k, Kind::Ask | Kind::Rewrite);
                    let text = if arises {
                        cell(landing(row.accepts, k))
                    } else {
                        "n/a"
                    };
                    write!(out, " {text} |")?;
                }
            }
            None => {
                write!(out, "| `{}` | not evaluated |", row.name)?;
                for _ in Kind::ALL {
                    write!(out, " — |")?;
                }
            }
        }
        writeln!(out)?;
    }
    if !t.tools.is_empty() {
        writeln!(out, "\n| Tool | Matches `tool =` | Input |\n|---|---|---|")?;
        for tool in t.tools {
            writeln!(
                out,
                "| `{}` | {} | {} |",
                tool.name,
                tool.ours,
                input(tool.input)
            )?;
        }
    }
    if !t.cannot.is_empty() {
        writeln!(out, "\nWhat it cannot express, and what is sent instead:\n")?;
        for c in t.cannot {
            writeln!(out, "* {c}")?;
        }
    }
    writeln!(out)
}

/// The text of `docs/agents.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Agents\n\n\
         <!-- Generated from crates/capt-hook-agents (matrix::markdown); do not edit. \
         `CAPT_HOOK_BLESS=1 cargo test -p capt-hook-agents` rewrites it. -->\n\n\
         One set of project hooks answers every agent below. Each agent's payload is read as the \
         Claude Code payload the rules are written for (its event under our name, its tools \
         under Claude Code's names with Claude Code's input keys), and the verdict is written \
         back in the agent's own shape with only the fields it accepts. `hook run --agent \
         <name> <Event>` names the agent; without it the agent is recognised from its \
         environment or its payload, and a payload of no shape we know is refused with an \
         error rather than guessed at. An agent we do not know (an unknown `--agent` name, or \
         a payload of no known shape) is told so once per worker, with that error; its later \
         events get no answer, and `capt-hook logs` keeps the reason for each.\n\n\
         The tables say what becomes of each kind of verdict on each event: **yes** it lands \
         as such; **deny** it is sent as a refusal that says why (an ask the agent cannot show, \
         a rewrite it cannot apply: never weaker than the verdict); **context** or **notice** \
         its text reaches the model or the user; **—** nothing reaches the agent, which goes \
         on as it would; **n/a** our answers never carry it there. **warn** is text for the \
         model (`additionalContext`); on Stop events a warning keeps the agent going, so it \
         arrives as a block.\n\n\
         **Proven with the real CLIs.** `cargo xtask e2e-agents` (CI runs it after \
         `e2e-claude`) installs pinned releases of `@openai/codex` and `@google/gemini-cli` \
         from npm, points each at a scripted fake model API of ours on loopback (Codex: a \
         custom model provider speaking the Responses API; Gemini CLI: \
         `GOOGLE_GEMINI_BASE_URL`), runs `capt-hook install --agent` into each case's project, \
         and checks in a headless run (`codex exec`, `gemini -p`) that a `block_command` on \
         `git stash` is refused with its reason sent to the model and nothing stashed, a \
         PreToolUse warning arrives (the model in Codex, the user in Gemini CLI, as its table \
         says), a PostToolUse warning reaches the model, a `rewrite_command` runs the \
         rewritten command, the builtin `rm` guard refuses \
         `rm -rf .git`, a Stop gate (Codex's `Stop`, Gemini CLI's `AfterAgent`) sends the \
         model back once with its reason, once again in the same session's next prompt (a \
         resumed run), an edit of a Python file (Codex's `apply_patch`, as its tool and run \
         through its shell; Gemini CLI's `write_file`) is refused by a deny on edited Python files while a clean one through \
         the same tool is written, and `capt-hook uninstall --agent` leaves the project's other hooks as they were. Codex runs there without \
         `--dangerously-bypass-hook-trust`: our hooks run because `capt-hook install --agent \
         codex` wrote their trust hashes into the user's `config.toml` (the project itself is \
         trusted there too; so are they in a project Codex is given through a symlink), and \
         offers the fake model `apply_patch` because the suite's \
         model catalog (`model_catalog_json`) says it takes one. Factory, Cursor and Copilot CLI are \
         proven by fixture payloads only.\n\n",
    );
    for a in Agent::ALL {
        // Writing to a String cannot fail.
        let _ = section(&mut out, a.table());
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

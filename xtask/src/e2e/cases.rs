//! The cases: hook files, the model's scripted turns, and what must follow. Every hook message
//! carries an `E2E-…` marker that appears nowhere else, so finding it in a request proves our
//! verdict reached the model. Tool calls answer `tool_id(turn, block)`; `{P}` in a tool input or
//! project file is the project's path.

use serde_json::json;

use super::Outcome;
use super::api::{Block, Reply, tool_id};

/// Claude Code's permission mode for a case.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// `-p` with no permission rules: anything that would prompt is refused.
    Default,
    /// `--permission-mode acceptEdits`: file edits in the project need no prompt.
    AcceptEdits,
    /// `--permission-mode auto`: the classifier decides (it cannot run here, so it denies).
    Auto,
    /// `--dangerously-skip-permissions`: only hooks stand between the model and the tools.
    Bypass,
}

impl Mode {
    /// The CLI arguments selecting the mode.
    pub fn args(self) -> &'static [&'static str] {
        match self {
            Mode::Default => &[],
            Mode::AcceptEdits => &["--permission-mode", "acceptEdits"],
            Mode::Auto => &["--permission-mode", "auto"],
            Mode::Bypass => &["--dangerously-skip-permissions"],
        }
    }
}

/// The plugin a case runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plugin {
    /// The plugin as `cargo xtask install` installed it.
    Installed,
    /// A copy of it whose `bin/hook` is gone: every hook fails to start.
    WithoutClient,
    /// The installed plugin, under managed settings that load only the organization's mods
    /// (`allowManagedModsOnly`): our hooks module is refused and the command hooks answer.
    ModsRefusedByPolicy,
}

/// The case whose runs give the overhead figures (it also runs the no-op plugin).
pub const OVERHEAD: &str = "hook-overhead";

/// One end-to-end case.
pub struct Case {
    /// Stable name, used by `--only` and for the log directory.
    pub name: &'static str,
    /// What it shows, printed beside PASS/FAIL.
    pub about: &'static str,
    /// The project's `.claude/hooks/e2e.toml`; "" for a project without `.claude/hooks` (only
    /// the builtin packs run).
    pub hooks: &'static str,
    /// More project files (relative path, text).
    pub files: &'static [(&'static str, &'static str)],
    /// A shell script run in the project (the sandbox's HOME) after its files are written and
    /// before Claude Code starts, or "".
    pub setup: &'static str,
    /// Claude Code settings for the run (`--settings`), or "": project settings are not read
    /// from a workspace nobody trusted, and `-p` never asks.
    pub settings: &'static str,
    /// More Claude Code arguments.
    pub args: &'static [&'static str],
    /// Which plugin Claude Code loads.
    pub plugin: Plugin,
    /// The user's prompts: one is given with `-p`; more are fed as stream-json input, in order,
    /// where an entry starting with `{` is a raw stream-json line (an SDK control request), sent
    /// once every prompt before it has its result.
    pub prompts: &'static [&'static str],
    /// Claude Code's permission mode.
    pub mode: Mode,
    /// The model's replies, one per agent-loop request; after it runs out the model says "Done.".
    pub script: Vec<Reply>,
    /// What must hold afterwards; the error says what did not.
    pub check: fn(&Outcome) -> Result<(), String>,
}

/// Fails with `what` unless `cond`.
fn ensure(cond: bool, what: impl Into<String>) -> Result<(), String> {
    if cond { Ok(()) } else { Err(what.into()) }
}

fn say(text: &str) -> Reply {
    Reply::Blocks(vec![Block::Text(text.into())])
}

/// A reply with a short remark and one tool call (so the call is block 2 of its turn).
fn call(name: &str, input: serde_json::Value) -> Reply {
    Reply::Blocks(vec![
        Block::Text("On it.".into()),
        Block::Tool {
            name: name.into(),
            input,
        },
    ])
}

fn bash(command: &str) -> Reply {
    call(
        "Bash",
        json!({"command": command, "description": "e2e scripted command"}),
    )
}

/// The tool result for the call in `turn`'s reply, which must exist.
fn result_of(o: &Outcome, turn: usize) -> Result<(String, bool), String> {
    o.tool_result(&tool_id(turn, 2))
        .ok_or_else(|| format!("the model never received a result for the call of turn {turn}"))
}

/// `marker` is in the request of turn `turn` and in none before it.
fn first_at(o: &Outcome, marker: &str, turn: usize) -> Result<(), String> {
    match o.first_sent(marker) {
        Some(t) if t == turn => Ok(()),
        Some(t) => Err(format!(
            "{marker} first reached the model in turn {t}, expected turn {turn}"
        )),
        None => Err(format!("{marker} never reached the model")),
    }
}

/// Our plugin answered `event` at least once with exit 0 and output holding `marker`: its
/// command hook (per Claude Code's debug log), or its hooks module (per the host's log of what
/// it returned to the module).
fn answered(o: &Outcome, event: &str, marker: &str) -> Result<(), String> {
    let mut outputs = o.hook_outputs(event);
    outputs.extend(
        o.mod_answers
            .iter()
            .filter(|(e, _, passed)| e == event && !passed)
            .map(|(_, result, _)| ("0".to_owned(), result.clone())),
    );
    ensure(
        !outputs.is_empty(),
        format!("Claude Code never ran our hook (command or module) for {event}"),
    )?;
    ensure(
        outputs
            .iter()
            .any(|(s, out)| s == "0" && out.contains(marker)),
        format!("our {event} hook did not answer with {marker} and exit 0: {outputs:?}"),
    )
}

/// A deny on edited Python files holding `print(`: the lint on edited files, the same hook file
/// in Claude Code's suite and the other agents' (`edit-deny`).
pub(super) const NOPRINT: &str = "[[hook]]\nkind = \"deny\"\nreason = \"E2E-NOPRINT no print() in library code\"\n\
                       only_if = [{ tool = \"Edit|Write\" }, { file_path = \"*.py\" }, \
                       { content = \"print\\\\(\" }]\n";

/// A settings hook that does nothing on CwdChanged (see the `cwd-changed` case).
const SWITCH_ON_CWD_CHANGED: &str =
    r#"{"hooks": {"CwdChanged": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#;
/// A settings hook that does nothing on FileChanged but makes Claude Code watch `watched.lock`.
const SEED_WATCHED_LOCK: &str = r#"{"hooks": {"FileChanged": [{"matcher": "watched.lock", "hooks": [{"type": "command", "command": "true"}]}]}}"#;

/// A slash command whose shell lines Claude Code runs when it expands: one that proves shell
/// lines run here (its output, `E2E-SKILL42`, is not in the file), then `git stash`.
const STASHIT: &str = "---\ndescription: Put the work in progress aside\n\
                       allowed-tools: Bash(echo:*), Bash(git stash:*)\n---\n\
                       Shell check: !`echo E2E-SKILL$((40+2))`\n\n!`git stash`\n\n\
                       Say whether the work was put aside.\n";
/// A git repository whose tracked `notes.txt` is modified (what `git stash` would take away).
pub(super) const MODIFIED_REPO: &str = "git init -q && git add notes.txt && \
                             git -c user.email=e2e@example.com -c user.name=e2e commit -qm init && \
                             echo v2 > notes.txt";

/// `notes.txt` is still modified and the stash is empty: `git stash` never ran.
fn not_stashed(o: &Outcome) -> Result<(), String> {
    not_stashed_at(&o.project)
}

/// [`not_stashed`] for the project at `project` (any agent's).
pub(super) fn not_stashed_at(project: &std::path::Path) -> Result<(), String> {
    let status = git_at(project, &["status", "--porcelain", "--", "notes.txt"])?;
    ensure(
        status.trim() == "M notes.txt",
        format!("notes.txt is no longer modified (git status: {status:?}): git stash ran"),
    )?;
    let stashes = git_at(project, &["stash", "list"])?;
    ensure(
        stashes.trim().is_empty(),
        format!("the stash is not empty: {stashes:?}"),
    )
}

/// `git <args>` in `project`; its stdout.
pub(super) fn git_at(project: &std::path::Path, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(project)
        .output()
        .map_err(|e| format!("running git {}: {e}", args.join(" ")))?;
    ensure(
        out.status.success(),
        format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ),
    )?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Claude Code 2.1.332's words for a guard hook that failed under `onFailure: "block"`.
const ON_FAILURE_BLOCKS: &str = "blocking because onFailure is \"block\"";
/// Our hooks module's words for a guarded call the host could not answer (its `.catch`).
const MOD_CANNOT_CHECK: &str = "captain-hook could not check this call";

/// What refuses a guarded call when our client is gone: Claude Code's `onFailure` on the
/// command route, our module's `.catch` on the mod's route (it cannot start the host).
fn guard_failed_words(o: &Outcome) -> &'static str {
    match o.route {
        super::Route::Mod => MOD_CANNOT_CHECK,
        _ => ON_FAILURE_BLOCKS,
    }
}

/// Claude Code refused a command's shell line `command` for `reason` (a part of it): the
/// model read `[not run: blocked by hook: …]` in the line's place in the first request, and the
/// user was shown `Not run in /<name>: <command> (blocked by hook: …)`.
fn refused_line(o: &Outcome, command: &str, reason: &str) -> Result<(), String> {
    let first = o.turns().first().map(|b| (*b).clone()).unwrap_or_default();
    let slot = first["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter_map(|b| b["text"].as_str())
        .find_map(|t| {
            t.split_once("[not run: blocked by hook: ")
                .map(|(_, rest)| rest)
        })
        .ok_or("the model was not sent `[not run: blocked by hook: …]` for the refused line")?;
    ensure(
        slot.contains(reason),
        format!("the model read the refusal without {reason:?}: {slot:.300}"),
    )?;
    let shown: Vec<&str> = o
        .stream
        .iter()
        .filter(|v| v["subtype"] == "informational" && v["tag"] == "skill_shell_hook")
        .filter_map(|v| v["content"].as_str())
        .collect();
    ensure(
        shown.iter().any(|n| {
            n.starts_with("Not run in /")
                && n.contains(&format!(": {command} (blocked by hook: "))
                && n.contains(reason)
        }),
        format!("the user was not shown that {command:?} did not run, with {reason:?}: {shown:?}"),
    )
}

/// The answer to the control request `id`: `Ok(response)` on success, `Err((code, error))`
/// when refused; `None` when none came.
fn control_answer(o: &Outcome, id: &str) -> Option<Result<serde_json::Value, (String, String)>> {
    let r = o
        .stream
        .iter()
        .find(|v| v["type"] == "control_response" && v["response"]["request_id"] == id)?;
    let r = &r["response"];
    Some(if r["subtype"] == "success" {
        Ok(r["response"].clone())
    } else {
        Err((
            r["error_code"].as_str().unwrap_or("").to_owned(),
            r["error"].as_str().unwrap_or("").to_owned(),
        ))
    })
}

/// The `model` of each agent-loop request.
fn models(o: &Outcome) -> Vec<String> {
    o.turns()
        .iter()
        .map(|b| b["model"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// An SDK client switches to haiku between two turns.
const SWITCH_TO_HAIKU: &[&str] = &[
    "Hello.",
    r#"{"type": "control_request", "request_id": "e2e-model", "request": {"subtype": "set_model", "model": "haiku"}}"#,
    "Hello again.",
];

/// The shell lines of the expanded command ran at all: the check line's output reached the
/// model in the first request.
fn shell_lines_ran(o: &Outcome) -> Result<(), String> {
    ensure(
        o.first_sent("E2E-SKILL42") == Some(1),
        "the command's shell check line did not run (E2E-SKILL42 never reached the model)",
    )
}

/// All the cases, in the order they run.
pub fn all() -> Vec<Case> {
    vec![
        Case {
            name: "pre-tool-use-deny",
            about: "PreToolUse block: error tool_result with our reason; the command never ran",
            hooks: "[[hook]]\nkind = \"block_command\"\nargv = [\"touch\"]\nreason = \"E2E-DENY no new files\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Create denied.txt."],
            mode: Mode::Bypass,
            script: vec![bash("touch denied.txt")],
            check: |o| {
                ensure(
                    !o.exists("denied.txt"),
                    "the denied command ran (denied.txt exists)",
                )?;
                let (text, is_error) = result_of(o, 1)?;
                ensure(is_error, format!("the tool result is not an error: {text}"))?;
                ensure(
                    text.contains("E2E-DENY"),
                    format!("the tool result lacks our reason: {text}"),
                )
            },
        },
        Case {
            name: "pre-tool-use-parallel-calls",
            about: "PreToolUse on two calls in one reply: one denied, the other runs",
            hooks: "[[hook]]\nkind = \"block_command\"\nargv = [\"rm\"]\nreason = \"E2E-NORM deleting is not allowed\"\n",
            files: &[("victim.txt", "keep me\n")],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Make a file and delete another."],
            mode: Mode::Bypass,
            script: vec![Reply::Blocks(vec![
                Block::Text("Both at once.".into()),
                Block::Tool {
                    name: "Bash".into(),
                    input: json!({"command": "touch made.txt", "description": "make"}),
                },
                Block::Tool {
                    name: "Bash".into(),
                    input: json!({"command": "rm -f victim.txt", "description": "delete"}),
                },
            ])],
            check: |o| {
                ensure(o.exists("made.txt"), "the allowed call did not run")?;
                ensure(o.exists("victim.txt"), "the denied call ran")?;
                let (text, is_error) = o
                    .tool_result(&tool_id(1, 3))
                    .ok_or("the model never received a result for the denied call")?;
                ensure(
                    is_error && text.contains("E2E-NORM"),
                    format!("the denied call's result lacks our reason: {text}"),
                )?;
                let (text, is_error) = result_of(o, 1)?;
                ensure(!is_error, format!("the allowed call failed: {text}"))
            },
        },
        Case {
            name: "pre-tool-use-deny-in-subagent",
            about: "PreToolUse block inside a subagent: its next request carries our reason",
            hooks: "[[hook]]\nkind = \"block_command\"\nargv = [\"touch\"]\nreason = \"E2E-SUBDENY helpers may not create files\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Ask a helper to create a file."],
            mode: Mode::Bypass,
            script: vec![
                call(
                    "Agent",
                    json!({"description": "Create a file", "prompt": "Create helper.txt.", "subagent_type": "general-purpose", "run_in_background": false}),
                ),
                bash("touch helper.txt"),
                say("I could not create it."),
                say("The helper was not allowed to create it."),
            ],
            check: |o| {
                ensure(!o.exists("helper.txt"), "the subagent's denied call ran")?;
                let (text, is_error) = result_of(o, 2)?;
                ensure(
                    is_error && text.contains("E2E-SUBDENY"),
                    format!("the subagent's tool result lacks our reason: {text}"),
                )?;
                let third = o.turns().get(2).map(|b| b.to_string()).unwrap_or_default();
                ensure(
                    third.contains("Create helper.txt."),
                    "the reason went to the wrong conversation (turn 3 is not the subagent's)",
                )
            },
        },
        Case {
            name: "pre-tool-use-warn",
            about: "PreToolUse warn: context reaches the model; the call still needs permission",
            hooks: "[[hook]]\nkind = \"warn_command\"\nargv = [\"touch\"]\nevents = \"PreToolUse\"\nmessage = \"E2E-WARN mind the timestamps\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Create warned.txt."],
            mode: Mode::Default,
            script: vec![bash("touch warned.txt")],
            check: |o| {
                ensure(
                    o.first_sent("E2E-WARN").is_some(),
                    "the warning never reached the model",
                )?;
                ensure(
                    !o.exists("warned.txt"),
                    "the warning granted a permission nobody gave (warned.txt exists)",
                )?;
                let (text, is_error) = result_of(o, 1)?;
                ensure(
                    is_error,
                    format!("the unpermitted call was not refused: {text}"),
                )
            },
        },
        Case {
            name: "pre-tool-use-warn-approve",
            about: "PreToolUse warn with approve = true: context, and the call runs",
            hooks: "[[hook]]\nkind = \"warn_command\"\nargv = [\"touch\"]\nevents = \"PreToolUse\"\napprove = true\nmessage = \"E2E-APPROVEWARN approved with a note\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Create approved.txt."],
            mode: Mode::Default,
            script: vec![bash("touch approved.txt")],
            check: |o| {
                ensure(
                    o.first_sent("E2E-APPROVEWARN").is_some(),
                    "the warning never reached the model",
                )?;
                ensure(o.exists("approved.txt"), "the approved call did not run")
            },
        },
        Case {
            name: "pre-tool-use-rewrite",
            about: "PreToolUse rewrite: the rewritten command is what ran",
            hooks: "[[hook]]\nkind = \"rewrite_command\"\npattern = \"original\\\\.txt\"\nreplace = \"rewritten.txt\"\nnote = \"E2E-REWRITE renamed the file\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Create original.txt."],
            mode: Mode::Default,
            script: vec![bash("touch original.txt")],
            check: |o| {
                ensure(
                    o.exists("rewritten.txt"),
                    "the rewritten command did not run",
                )?;
                ensure(!o.exists("original.txt"), "the original command ran")?;
                ensure(
                    o.first_sent("E2E-REWRITE").is_some(),
                    "the rewrite's note never reached the model",
                )
            },
        },
        Case {
            name: "pre-tool-use-ask",
            about: "PreToolUse no verdict (ask): Claude Code's own permission rules decide",
            hooks: "[[hook]]\nkind = \"block_command\"\nargv = [\"rm\"]\nreason = \"E2E-UNUSED not this one\"\n",
            files: &[],
            setup: "",
            settings: "{\"permissions\": {\"allow\": [\"Bash(touch allowed.txt)\"]}}",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Create allowed.txt and other.txt."],
            mode: Mode::Default,
            script: vec![bash("touch allowed.txt"), bash("touch other.txt")],
            check: |o| {
                ensure(
                    o.exists("allowed.txt"),
                    "a call the user's rules allow did not run",
                )?;
                ensure(
                    !o.exists("other.txt"),
                    "a call no rule allows ran without a prompt",
                )?;
                ensure(
                    !o.ever_sent("E2E-UNUSED"),
                    "a hook that did not match said something",
                )
            },
        },
        Case {
            name: "permission-request-allow",
            about: "PermissionRequest allow: the prompt is answered yes, the call runs",
            hooks: "[[hook]]\nkind = \"approve\"\nlabel = \"e2e lets touch through\"\nevents = \"PermissionRequest\"\nonly_if = [{ runs = [\"touch\"] }]\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Create permitted.txt."],
            mode: Mode::Default,
            script: vec![bash("touch permitted.txt")],
            check: |o| {
                answered(o, "PermissionRequest", "allow")?;
                ensure(o.exists("permitted.txt"), "the permitted call did not run")
            },
        },
        Case {
            name: "permission-request-deny",
            about: "PermissionRequest deny: error tool_result with our reason; nothing ran",
            hooks: "[[hook]]\nkind = \"deny\"\nreason = \"E2E-PRDENY not today\"\nevents = \"PermissionRequest\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Create refused.txt."],
            mode: Mode::Default,
            script: vec![bash("touch refused.txt")],
            check: |o| {
                ensure(!o.exists("refused.txt"), "the refused call ran")?;
                let (text, is_error) = result_of(o, 1)?;
                ensure(is_error, format!("the tool result is not an error: {text}"))?;
                ensure(
                    text.contains("E2E-PRDENY"),
                    format!("the tool result lacks our reason: {text}"),
                )
            },
        },
        Case {
            name: "post-tool-use-block",
            about: "PostToolUse block (lint): the reason reaches the model with the result",
            hooks: "[[hook]]\nkind = \"lint\"\nregex = \"FIXME\"\nmessage = \"E2E-LINT fix these first: {violations}\"\nblock = true\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Write app.py."],
            mode: Mode::AcceptEdits,
            script: vec![call(
                "Write",
                json!({"file_path": "{P}/app.py", "content": "x = 1  # FIXME later\n"}),
            )],
            check: |o| {
                ensure(o.exists("app.py"), "the Write did not happen")?;
                first_at(o, "E2E-LINT", 2)?;
                let (_, text) = o.last_message(2).unwrap_or_default();
                ensure(
                    text.contains("E2E-LINT") && text.contains("FIXME later"),
                    format!("the lint is not beside the tool result: {text}"),
                )
            },
        },
        Case {
            name: "edit-deny",
            about: "a deny on edited Python files (the other agents' edit-deny): the Write is refused, the model hears why, the file is not written; a clean one is",
            hooks: NOPRINT,
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Write lib.py."],
            mode: Mode::AcceptEdits,
            script: vec![
                call(
                    "Write",
                    json!({"file_path": "{P}/lib.py", "content": "def f():\n    print(1)\n"}),
                ),
                call(
                    "Write",
                    json!({"file_path": "{P}/clean.py", "content": "def f():\n    return 1\n"}),
                ),
                say("Wrote clean.py instead."),
            ],
            check: |o| {
                let (text, is_error) = result_of(o, 1)?;
                ensure(is_error, format!("the Write was not refused: {text}"))?;
                ensure(
                    text.contains("E2E-NOPRINT"),
                    format!("the tool result lacks our reason: {text}"),
                )?;
                ensure(!o.exists("lib.py"), "lib.py was written")?;
                ensure(
                    o.exists("clean.py"),
                    "clean.py was not written: the refusal was not ours",
                )
            },
        },
        Case {
            name: "post-tool-use-warn",
            about: "PostToolUse warn: the context reaches the model with the result",
            hooks: "[[hook]]\nkind = \"warn_command\"\nargv = [\"echo\"]\nmessage = \"E2E-POSTWARN echo is noisy\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Say hello in the shell."],
            mode: Mode::Bypass,
            script: vec![bash("echo hello")],
            check: |o| {
                first_at(o, "E2E-POSTWARN", 2)?;
                let (text, is_error) = result_of(o, 1)?;
                ensure(
                    !is_error && text.contains("hello"),
                    format!("the call failed: {text}"),
                )
            },
        },
        Case {
            name: "post-tool-use-failure-context",
            about: "PostToolUseFailure warn: context reaches the model with the error",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"PostToolUseFailure\"\nmessage = \"E2E-FAILCTX the build is flaky\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Run the failing step."],
            mode: Mode::Bypass,
            script: vec![bash("echo failing >&2; exit 3")],
            check: |o| {
                first_at(o, "E2E-FAILCTX", 2)?;
                let (text, is_error) = result_of(o, 1)?;
                ensure(
                    is_error,
                    format!("the failing call is not an error result: {text}"),
                )
            },
        },
        Case {
            name: "user-prompt-submit-block",
            about: "UserPromptSubmit block: the prompt never reaches the model; the user sees why",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"UserPromptSubmit\"\nblock = true\nmessage = \"E2E-PROMPTBLOCK prompts with keys are refused\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Deploy with key sk-e2e-SECRET-4242."],
            mode: Mode::Default,
            script: vec![say("I should never be asked.")],
            check: |o| {
                ensure(
                    !o.ever_sent("SECRET-4242"),
                    "the blocked prompt reached the model",
                )?;
                let blocked = o
                    .stream
                    .iter()
                    .find(|v| v["prompt_submit_outcome"]["kind"] == "blocked_by_hook");
                let reason = blocked
                    .map(|v| v["prompt_submit_outcome"]["reason"].to_string())
                    .unwrap_or_default();
                ensure(
                    reason.contains("E2E-PROMPTBLOCK"),
                    format!(
                        "Claude Code did not report the prompt blocked with our reason ({reason:?})"
                    ),
                )
            },
        },
        Case {
            name: "user-prompt-submit-context",
            about: "UserPromptSubmit warn: context arrives with the prompt",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"UserPromptSubmit\"\nmessage = \"E2E-PROMPTCTX the user prefers short answers\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Hello."],
            mode: Mode::Default,
            script: vec![say("Hi.")],
            check: |o| first_at(o, "E2E-PROMPTCTX", 1),
        },
        Case {
            name: "session-start-context",
            about: "SessionStart: context in the first request",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"SessionStart\"\nmessage = \"E2E-SESSIONCTX this project uses jj\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Hello."],
            mode: Mode::Default,
            script: vec![say("Hi.")],
            check: |o| first_at(o, "E2E-SESSIONCTX", 1),
        },
        Case {
            name: "stop-gate-once",
            about: "Stop gate: blocks once per turn, the model sees why, then it may stop",
            hooks: "[[hook]]\nkind = \"gate\"\nmessage = \"E2E-GATE run the tests before stopping\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Finish up."],
            mode: Mode::Default,
            script: vec![say("All finished."), say("Tests ran; finished.")],
            check: |o| {
                let turns = o.turns().len();
                ensure(
                    turns == 2,
                    format!("expected 2 model turns (stop, blocked, stop), got {turns}"),
                )?;
                first_at(o, "E2E-GATE", 2)?;
                // Claude Code 2.1.332 sends Stop feedback as a message of role "system".
                let (role, text) = o.last_message(2).unwrap_or_default();
                ensure(
                    role != "assistant" && text.contains("E2E-GATE"),
                    format!(
                        "the gate's reason is not the next message to the model ({role}: {text})"
                    ),
                )
            },
        },
        Case {
            name: "stop-gate-every-turn",
            about: "Stop gate: once per turn means once again in the next turn",
            hooks: "[[hook]]\nkind = \"gate\"\nmessage = \"E2E-GATE2 run the tests before stopping\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["First task.", "Second task."],
            mode: Mode::Default,
            script: vec![
                say("First done."),
                say("First done, tests ran."),
                say("Second done."),
                say("Second done, tests ran."),
            ],
            check: |o| {
                let turns = o.turns().len();
                ensure(
                    turns == 4,
                    format!("expected 4 model turns (two prompts, each gated once), got {turns}"),
                )?;
                first_at(o, "E2E-GATE2", 2)?;
                let (_, third) = o.last_message(3).unwrap_or_default();
                ensure(
                    third.contains("Second task."),
                    format!("turn 3 is not the second prompt: {third}"),
                )?;
                let (role, fourth) = o.last_message(4).unwrap_or_default();
                ensure(
                    role != "assistant" && fourth.contains("E2E-GATE2"),
                    format!("the gate did not block the second turn's stop ({role}: {fourth})"),
                )
            },
        },
        Case {
            name: "stop-hook-no-loop",
            about: "Stop block from a plain hook: given once, not again under stop_hook_active",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"Stop\"\nblock = true\nmessage = \"E2E-STOPHOOK summarise before stopping\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Finish up."],
            mode: Mode::Default,
            script: vec![say("All finished."), say("Summary: done.")],
            check: |o| {
                let turns = o.turns().len();
                ensure(
                    turns == 2,
                    format!("expected 2 model turns (blocked once, then allowed), got {turns}"),
                )?;
                first_at(o, "E2E-STOPHOOK", 2)
            },
        },
        Case {
            name: "subagent-stop-no-loop",
            about: "SubagentStop block: the subagent goes on once, not again under stop_hook_active",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"SubagentStop\"\nblock = true\nmessage = \"E2E-SUBSTOP list the files too\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Ask a helper to look around."],
            mode: Mode::Bypass,
            script: vec![
                call(
                    "Agent",
                    json!({"description": "Look around", "prompt": "Describe the project.", "subagent_type": "general-purpose", "run_in_background": false}),
                ),
                say("It is empty."),
                say("It is empty and has no files."),
                say("The helper says the project is empty."),
            ],
            check: |o| {
                let turns = o.turns().len();
                ensure(
                    turns == 4,
                    format!(
                        "expected 4 model turns (main, sub, sub continued once, main), got {turns}"
                    ),
                )?;
                first_at(o, "E2E-SUBSTOP", 3)?;
                let sub = o.turns().get(2).map(|b| b.to_string()).unwrap_or_default();
                ensure(
                    sub.contains("Describe the project."),
                    "turn 3 is not the subagent's continuation",
                )
            },
        },
        Case {
            name: "post-tool-batch-context",
            about: "PostToolBatch (new): context before the next model call",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"PostToolBatch\"\nmessage = \"E2E-BATCH the batch is done\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Say hello in the shell."],
            mode: Mode::Bypass,
            script: vec![bash("echo hello")],
            check: |o| first_at(o, "E2E-BATCH", 2),
        },
        Case {
            name: "post-tool-batch-block",
            about: "PostToolBatch block (new): the loop stops before the next model call",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"PostToolBatch\"\nblock = true\nmessage = \"E2E-BATCHSTOP stop after the shell\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Say hello in the shell."],
            mode: Mode::Bypass,
            script: vec![bash("echo hello > said.txt")],
            check: |o| {
                ensure(o.exists("said.txt"), "the tool call did not run")?;
                let turns = o.turns().len();
                ensure(
                    turns == 1,
                    format!("the model was called again after the block ({turns} turns)"),
                )?;
                answered(o, "PostToolBatch", "E2E-BATCHSTOP")
            },
        },
        Case {
            name: "subagent-start-context",
            about: "SubagentStart (new): context in the subagent's first request",
            // general-purpose is on the default planning-agent list, which `hook` skips.
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"SubagentStart\"\nskip_planning_agents = false\nmessage = \"E2E-SUBAGENT stay in the project\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Ask a helper to look around."],
            mode: Mode::Bypass,
            // In the foreground, so the subagent's turn comes before the main agent's next one.
            script: vec![
                call(
                    "Agent",
                    json!({"description": "Look around", "prompt": "List the files in the project.", "subagent_type": "general-purpose", "run_in_background": false}),
                ),
                say("The project is empty."),
                say("The helper says the project is empty."),
            ],
            check: |o| {
                first_at(o, "E2E-SUBAGENT", 2)?;
                let sub = o.turns().get(1).map(|b| b.to_string()).unwrap_or_default();
                ensure(
                    sub.contains("List the files in the project."),
                    "turn 2 is not the subagent's first request",
                )
            },
        },
        Case {
            name: "user-prompt-expansion-context",
            about: "UserPromptExpansion (new): context beside the expanded command",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"UserPromptExpansion\"\nmessage = \"E2E-EXPAND expanded by e2e\"\n",
            files: &[(".claude/commands/e2e-cmd.md", "Say the magic word.\n")],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["/e2e-cmd"],
            mode: Mode::Default,
            script: vec![say("Please.")],
            check: |o| {
                first_at(o, "E2E-EXPAND", 1)?;
                ensure(
                    o.first_sent("Say the magic word.") == Some(1),
                    "the command did not expand",
                )
            },
        },
        Case {
            name: "user-prompt-expansion-block",
            about: "UserPromptExpansion block (new): the command does not expand or reach the model",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"UserPromptExpansion\"\nblock = true\nmessage = \"E2E-NOEXPAND that command is retired\"\n",
            files: &[(".claude/commands/e2e-cmd.md", "Say the secret word.\n")],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["/e2e-cmd"],
            mode: Mode::Default,
            script: vec![say("I should never be asked.")],
            check: |o| {
                answered(o, "UserPromptExpansion", "E2E-NOEXPAND")?;
                ensure(
                    !o.ever_sent("Say the secret word."),
                    "the blocked command's text reached the model",
                )?;
                let shown = o.result_text();
                ensure(
                    shown.contains("E2E-NOEXPAND"),
                    format!("the user was not shown why: {shown:?}"),
                )
            },
        },
        Case {
            name: "permission-denied",
            about: "PermissionDenied (new, auto mode): our hook runs and answers cleanly",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"PermissionDenied\"\nmessage = \"E2E-DENIED-NOTE auto mode said no\"\n",
            // Edits inside the project pass auto mode unchecked; a download goes to the
            // classifier, which cannot run against the fake API, so auto mode denies it.
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Fetch the page."],
            mode: Mode::Auto,
            script: vec![bash("curl -s http://127.0.0.1:9/ > fetched.txt")],
            check: |o| {
                answered(o, "PermissionDenied", "E2E-DENIED-NOTE")?;
                ensure(!o.exists("fetched.txt"), "the denied call ran")?;
                ensure(
                    !o.ever_sent("PermissionDenied hook"),
                    "a warning offered the model a retry",
                )
            },
        },
        Case {
            name: "permission-denied-retry",
            about: "PermissionDenied allow (new): Claude Code tells the model it may retry",
            hooks: "[[hook]]\nkind = \"approve\"\nlabel = \"e2e lets downloads be retried\"\nevents = \"PermissionDenied\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Fetch the page."],
            mode: Mode::Auto,
            script: vec![bash("curl -s http://127.0.0.1:9/ > fetched.txt")],
            check: |o| {
                answered(o, "PermissionDenied", "\"retry\":true")?;
                ensure(!o.exists("fetched.txt"), "the denied call ran")?;
                // Claude Code 2.1.332's wording of the retry note.
                let (_, text) = o.last_message(2).unwrap_or_default();
                ensure(
                    text.contains("PermissionDenied hook"),
                    format!("the model was not told it may retry: {text}"),
                )
            },
        },
        Case {
            name: "stop-failure",
            about: "StopFailure (new, API error): our hook runs and answers cleanly",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"StopFailure\"\nmessage = \"E2E-STOPFAIL the API failed\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Hello."],
            mode: Mode::Default,
            // Claude Code answers a 400 by retrying without some beta features (five times in
            // 2.1.332); after that the turn fails.
            script: vec![Reply::Error(400); 8],
            check: |o| answered(o, "StopFailure", "E2E-STOPFAIL"),
        },
        Case {
            name: "message-display",
            about: "MessageDisplay (new): our hook runs; a display-only notice never reaches the model",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"MessageDisplay\"\nmessage = \"E2E-DISPLAY shown to the user\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Hello."],
            mode: Mode::Default,
            script: vec![say("Hi."), say("Hi again.")],
            check: |o| {
                answered(o, "MessageDisplay", "E2E-DISPLAY")?;
                ensure(
                    !o.ever_sent("E2E-DISPLAY"),
                    "a display-only notice reached the model",
                )
            },
        },
        Case {
            name: "session-end",
            about: "SessionEnd: our hook runs and answers cleanly when -p exits",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"SessionEnd\"\nmessage = \"E2E-BYE session over\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Hello."],
            mode: Mode::Default,
            script: vec![say("Hi.")],
            check: |o| answered(o, "SessionEnd", "E2E-BYE"),
        },
        Case {
            name: "setup",
            about: "Setup (new, -p --init): our hook runs and answers with context",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"Setup\"\nmessage = \"E2E-SETUP dependencies are installed\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &["--init"],
            plugin: Plugin::Installed,
            prompts: &["Hello."],
            mode: Mode::Default,
            script: vec![say("Hi.")],
            // Claude Code 2.1.332 logs "provided additionalContext" for Setup but sends it to
            // the model from no hook (settings hooks included), so only our answer is checked.
            check: |o| answered(o, "Setup", r#""additionalContext":"E2E-SETUP"#),
        },
        Case {
            name: "cwd-changed",
            about: "CwdChanged (new, `cd` in Bash): our hook runs and answers cleanly",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"CwdChanged\"\nmessage = \"E2E-CWD moved\"\n",
            files: &[("sub/keep.txt", "kept\n")],
            setup: "",
            // Claude Code 2.1.332 fires CwdChanged (for plugins too) only when a settings file
            // registers a hook for it; a no-op one switches it on.
            settings: SWITCH_ON_CWD_CHANGED,
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Go into sub."],
            mode: Mode::Bypass,
            script: vec![bash("cd sub && pwd")],
            check: |o| answered(o, "CwdChanged", "E2E-CWD"),
        },
        Case {
            name: "config-change-block",
            about: "ConfigChange block (new): Claude Code keeps the old settings",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"ConfigChange\"\nblock = true\nmessage = \"E2E-CONFIG settings are frozen\"\n",
            files: &[(".claude/settings.local.json", "{}\n")],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Change the local settings."],
            mode: Mode::Bypass,
            // Claude Code notices the write through a file watcher, within about two seconds;
            // the second call keeps the session alive until it has.
            script: vec![
                bash(r#"echo '{"env": {"E2E_X": "1"}}' > .claude/settings.local.json"#),
                bash("sleep 3"),
            ],
            check: |o| {
                answered(o, "ConfigChange", "E2E-CONFIG")?;
                ensure(
                    o.debug.contains("ConfigChange hook blocked change to"),
                    "Claude Code did not keep the old settings",
                )
            },
        },
        Case {
            name: "file-changed",
            about: "FileChanged (new, a watched file rewritten): our file condition holds, we answer",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"FileChanged\"\nmessage = \"E2E-WATCHED the lockfile moved\"\nonly_if = [{ file_path = \"**/watched.lock\" }]\n",
            files: &[("watched.lock", "v1\n")],
            setup: "",
            // Claude Code starts its watcher only for files something names; a settings group
            // whose matcher names the file seeds the list (our plugin's group has no matcher).
            settings: SEED_WATCHED_LOCK,
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Bump the lockfile."],
            mode: Mode::Bypass,
            script: vec![bash("echo v2 > watched.lock"), bash("sleep 3")],
            check: |o| answered(o, "FileChanged", "E2E-WATCHED"),
        },
        Case {
            name: "task-created-block",
            about: "TaskCreated block (new): the task is refused with our reason as the tool error",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"TaskCreated\"\nblock = true\nmessage = \"E2E-TASK name the ticket in the subject\"\n",
            files: &[],
            setup: "",
            // `-p` offers the task tools only with this switch, and only after a ToolSearch.
            settings: r#"{"env": {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}}"#,
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Plan the work."],
            mode: Mode::Bypass,
            script: vec![
                call("ToolSearch", json!({"query": "select:TaskCreate"})),
                call(
                    "TaskCreate",
                    json!({"subject": "Write the tests", "description": "All of them"}),
                ),
            ],
            check: |o| {
                let (text, is_error) = result_of(o, 2)?;
                ensure(
                    is_error && text.contains("E2E-TASK"),
                    format!("the task was not refused with our reason: {text}"),
                )
            },
        },
        Case {
            name: "task-completed-block",
            about: "TaskCompleted block (new): the model hears why the task may not close",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"TaskCompleted\"\nblock = true\nmessage = \"E2E-NOTDONE the tests are still red\"\n",
            files: &[],
            setup: "",
            settings: r#"{"env": {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}}"#,
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Do the work and tick it off."],
            mode: Mode::Bypass,
            script: vec![
                call(
                    "ToolSearch",
                    json!({"query": "select:TaskCreate,TaskUpdate"}),
                ),
                call(
                    "TaskCreate",
                    json!({"subject": "Write the tests", "description": "All of them"}),
                ),
                call("TaskUpdate", json!({"taskId": "1", "status": "completed"})),
            ],
            check: |o| {
                // Claude Code 2.1.332 returns the feedback as the result, not flagged an error.
                let (text, _) = result_of(o, 3)?;
                ensure(
                    text.contains("TaskCompleted hook feedback") && text.contains("E2E-NOTDONE"),
                    format!("completing the task was not refused with our reason: {text}"),
                )
            },
        },
        Case {
            name: "directory-added",
            about: "DirectoryAdded (new, an SDK client adds a repo root): our hook runs and answers",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"DirectoryAdded\"\nmessage = \"E2E-ADDED the vendored repo is read-only\"\n",
            files: &[("vendor/lib/README", "vendored\n")],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            // `/add-dir` "isn't available" in -p; an SDK client's register_repo_root is, for a
            // directory below the working directory.
            prompts: &[
                r#"{"type": "control_request", "request_id": "e2e-1", "request": {"subtype": "register_repo_root", "directory": "{P}/vendor/lib"}}"#,
                "Hello.",
            ],
            mode: Mode::Default,
            script: vec![say("Hi.")],
            // For this source Claude Code writes the notice to its debug log only.
            check: |o| answered(o, "DirectoryAdded", "E2E-ADDED"),
        },
        Case {
            name: "pre-compact-block",
            about: "PreCompact block: /compact is refused, no summary is requested",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"PreCompact\"\nblock = true\nmessage = \"E2E-NOCOMPACT keep the history\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Hello.", "/compact"],
            mode: Mode::Default,
            script: vec![say("Hi."), say("<summary>A greeting.</summary>")],
            check: |o| {
                answered(o, "PreCompact", "E2E-NOCOMPACT")?;
                let turns = o.turns().len();
                ensure(
                    turns == 1,
                    format!(
                        "expected only the greeting turn, got {turns} (a summary was requested)"
                    ),
                )?;
                ensure(
                    !o.stream.iter().any(|v| v["subtype"] == "compact_boundary"),
                    "the conversation was compacted anyway",
                )
            },
        },
        Case {
            name: "pre-compact-instructions",
            about: "PreCompact warn: our text joins the compaction instructions",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"PreCompact\"\nmessage = \"E2E-KEEPNOTES keep the file names\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Hello.", "/compact"],
            mode: Mode::Default,
            script: vec![say("Hi."), say("<summary>A greeting.</summary>")],
            check: |o| {
                ensure(o.turns().len() == 2, "no summary was requested")?;
                first_at(o, "E2E-KEEPNOTES", 2)
            },
        },
        Case {
            name: "post-compact",
            about: "PostCompact (new, /compact): our hook runs and answers cleanly",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"PostCompact\"\nmessage = \"E2E-POSTCOMPACT history was summarised\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Hello.", "/compact"],
            mode: Mode::Default,
            script: vec![say("Hi."), say("<summary>A greeting.</summary>")],
            check: |o| {
                ensure(
                    o.stream.iter().any(|v| v["subtype"] == "compact_boundary"),
                    "the conversation was not compacted",
                )?;
                answered(o, "PostCompact", "E2E-POSTCOMPACT")
            },
        },
        Case {
            name: "llm-gate-claude-judge",
            about: "llm_gate: the real claude CLI judges (structured output), blocks once per turn",
            hooks: "[[hook]]\nkind = \"llm_gate\"\nprompt = \"E2E-JUDGEPROMPT Is the agent stopping early?\"\n\
                    message = \"E2E-LLMGATE {reasoning}\"\nbackend = \"claude\"\nagent = false\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Finish up."],
            mode: Mode::Default,
            // The main agent stops; the judge (a turn: the CLI offers it the StructuredOutput
            // tool) blocks; the main agent stops again and the gate, spent for the turn, lets it.
            script: vec![
                say("All finished."),
                Reply::Blocks(vec![Block::Tool {
                    name: "StructuredOutput".into(),
                    input: json!({"block": true, "reasoning": "E2E-VERDICT no tests were run"}),
                }]),
                say("Tests ran; finished."),
            ],
            check: |o| {
                let turns = o.turns();
                ensure(
                    turns.len() == 3,
                    format!(
                        "expected 3 model turns (stop, judge, stop again), got {}",
                        turns.len()
                    ),
                )?;
                let judge = turns[1];
                let tools: Vec<&str> = judge["tools"]
                    .as_array()
                    .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
                    .unwrap_or_default();
                ensure(
                    tools.contains(&"StructuredOutput") && !tools.contains(&"Bash"),
                    format!("turn 2 is not a tool-less structured judge call: tools {tools:?}"),
                )?;
                let asked = judge.to_string();
                ensure(
                    asked.contains("E2E-JUDGEPROMPT") && asked.contains("All finished."),
                    "the judge was not sent the task and the transcript window",
                )?;
                let (role, text) = o.last_message(3).unwrap_or_default();
                ensure(
                    role != "assistant"
                        && text.contains("E2E-LLMGATE E2E-VERDICT no tests were run"),
                    format!("the judge's verdict did not reach the model ({role}: {text})"),
                )
            },
        },
        Case {
            name: "llm-nudge-clean-diff",
            about: "llm_nudge with diff = true: a repository without changes never calls the judge",
            hooks: "[[hook]]\nkind = \"llm_nudge\"\nprompt = \"E2E-DIFFPROMPT Is this diff risky?\"\n\
                    message = \"E2E-LLMNUDGE\"\nbackend = \"claude\"\nagent = false\ndiff = true\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Commit the project, then list it."],
            mode: Mode::Bypass,
            script: vec![
                bash(
                    "git init -q && git add -A && git -c user.email=e2e@example.com \
                     -c user.name=e2e commit -qm init && echo E2E-COMMITTED",
                ),
                bash("ls"),
                say("Done."),
            ],
            check: |o| {
                let (out, is_error) = result_of(o, 1)?;
                ensure(
                    !is_error && out.contains("E2E-COMMITTED"),
                    format!("the scripted commit failed: {out}"),
                )?;
                ensure(
                    !o.ever_sent("E2E-DIFFPROMPT"),
                    "the judge was asked although the tree had no changes",
                )?;
                ensure(
                    !o.ever_sent("E2E-LLMNUDGE"),
                    "the nudge fired without a judge",
                )?;
                let turns = o.turns().len();
                ensure(turns == 3, format!("expected 3 model turns, got {turns}"))
            },
        },
        Case {
            name: "skill-shell-block",
            about: "PreSkillShellCommand block (new): /stashit's !`git stash` does not run; model and user hear why",
            hooks: "[[hook]]\nkind = \"block_command\"\nargv = [\"git\", \"stash\"]\nreason = \"E2E-NOSTASH git stash hides work\"\n",
            files: &[
                (".claude/commands/stashit.md", STASHIT),
                ("notes.txt", "v1\n"),
            ],
            setup: MODIFIED_REPO,
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["/stashit"],
            mode: Mode::Default,
            // The model only answers: nothing but the command file could run git stash.
            script: vec![say("The work was not put aside.")],
            check: |o| {
                not_stashed(o)?;
                shell_lines_ran(o)?;
                answered(o, "PreSkillShellCommand", "E2E-NOSTASH")?;
                refused_line(o, "git stash", "E2E-NOSTASH")
            },
        },
        Case {
            name: "skill-shell-pack-guard",
            about: "PreSkillShellCommand, no project hooks: the builtin stash guard stops /stashit",
            hooks: "",
            files: &[
                (".claude/commands/stashit.md", STASHIT),
                ("notes.txt", "v1\n"),
            ],
            setup: MODIFIED_REPO,
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["/stashit"],
            mode: Mode::Default,
            script: vec![say("The work was not put aside.")],
            check: |o| {
                not_stashed(o)?;
                shell_lines_ran(o)?;
                // The general pack's stash guard, word for word.
                let guard = "git stash shares one stack with every session";
                answered(o, "PreSkillShellCommand", guard)?;
                refused_line(o, "git stash", guard)
            },
        },
        Case {
            name: "skill-shell-rewrite",
            about: "PreSkillShellCommand rewrite (new): a skill's find is refused, naming the rg to run",
            hooks: "[[hook]]\nkind = \"rewrite_command\"\npattern = '^find ~ -name (\\S+)$'\nreplace = 'rg --files ~ --glob \\1'\nnote = \"E2E-RGNOTE rg skips ignored trees\"\n",
            files: &[(
                ".claude/skills/findnotes/SKILL.md",
                "---\nname: findnotes\ndescription: Find the notes file\n\
                 allowed-tools: Bash(find:*)\n---\nThe notes: !`find ~ -name notes.md`\n\n\
                 Open the first one.\n",
            )],
            // What the find would print, were it run.
            setup: "mkdir -p \"$HOME/E2E-FOUND\" && touch \"$HOME/E2E-FOUND/notes.md\"",
            // Claude Code's own check refuses a find outside the session's directories before
            // any hook is asked.
            settings: r#"{"permissions": {"additionalDirectories": ["~"]}}"#,
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["/findnotes"],
            mode: Mode::Default,
            script: vec![say("I will search with rg instead.")],
            check: |o| {
                let instead = "run this instead: rg --files ~ --glob notes.md";
                answered(o, "PreSkillShellCommand", instead)?;
                ensure(
                    !o.ever_sent("E2E-FOUND"),
                    "the find ran: its output reached the model",
                )?;
                refused_line(o, "find ~ -name notes.md", instead)?;
                refused_line(o, "find ~ -name notes.md", "E2E-RGNOTE")
            },
        },
        Case {
            name: "model-switch-block",
            about: "PreModelSwitch block (new): an SDK set_model is refused with our reason; the model stays",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"PreModelSwitch\"\nblock = true\nmessage = \"E2E-NOSWITCH stay on this model\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: SWITCH_TO_HAIKU,
            mode: Mode::Default,
            script: vec![say("Hi."), say("Hi again.")],
            check: |o| {
                answered(o, "PreModelSwitch", "E2E-NOSWITCH")?;
                match control_answer(o, "e2e-model") {
                    Some(Err((code, error))) => ensure(
                        code == "blocked_by_hook" && error.contains("E2E-NOSWITCH"),
                        format!("set_model was refused otherwise: {code}: {error}"),
                    )?,
                    other => return Err(format!("set_model was not refused: {other:?}")),
                }
                let models = models(o);
                ensure(
                    models.len() == 2 && models[0] == models[1],
                    format!("the turns after the refused switch ran on another model: {models:?}"),
                )
            },
        },
        Case {
            name: "model-switch-post-context",
            about: "PostModelSwitch (new): an SDK set_model switches; our context reaches the new model",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"PostModelSwitch\"\nmessage = \"E2E-SWITCHED mind the new model's limits\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: SWITCH_TO_HAIKU,
            mode: Mode::Default,
            script: vec![say("Hi."), say("Hi again.")],
            // model-switch-block's control: with no PreModelSwitch hook of ours the same request
            // switches.
            check: |o| {
                let to = match control_answer(o, "e2e-model") {
                    Some(Ok(answer)) => answer["model"].as_str().unwrap_or("").to_owned(),
                    other => return Err(format!("set_model did not succeed: {other:?}")),
                };
                let models = models(o);
                ensure(
                    models.len() == 2 && models[0] != to && models[1] == to,
                    format!("expected a turn on the old model, then one on {to}: {models:?}"),
                )?;
                first_at(o, "E2E-SWITCHED", 2)
            },
        },
        Case {
            name: "model-switch-command-block",
            about: "PreModelSwitch block (new): `/model haiku` in -p is refused with our reason; the model stays",
            hooks: "[[hook]]\nkind = \"hook\"\nevents = \"PreModelSwitch\"\nblock = true\nmessage = \"E2E-NOMODELCMD stay on this model\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            // Without a hook, the same prompts switch (Claude Code answers "Set model to `Haiku
            // …` for this session only" and the second turn runs on haiku).
            prompts: &["Hello.", "/model haiku", "Hello again."],
            mode: Mode::Default,
            script: vec![say("Hi."), say("Hi again.")],
            check: |o| {
                answered(o, "PreModelSwitch", "E2E-NOMODELCMD")?;
                let results: Vec<&str> = o
                    .stream
                    .iter()
                    .filter(|v| v["type"] == "result")
                    .filter_map(|v| v["result"].as_str())
                    .collect();
                ensure(
                    results.iter().any(|r| r.contains("E2E-NOMODELCMD")),
                    format!("the user was not shown why /model did nothing: {results:?}"),
                )?;
                let models = models(o);
                ensure(
                    models.len() == 2 && models[0] == models[1],
                    format!("the turns after the refused switch ran on another model: {models:?}"),
                )
            },
        },
        Case {
            name: "no-client-blocks-bash",
            about: "onFailure block (new): the plugin's client is gone; Claude Code blocks the Bash call",
            hooks: "",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::WithoutClient,
            prompts: &["Create ran.txt."],
            // Bypass: no permission rule stands in the way, only the hook that cannot start.
            mode: Mode::Bypass,
            script: vec![bash("touch ran.txt")],
            check: |o| {
                ensure(
                    !o.exists("ran.txt"),
                    "the call ran although its guard could not start (ran.txt exists)",
                )?;
                let (text, is_error) = result_of(o, 1)?;
                ensure(
                    is_error && text.contains(guard_failed_words(o)),
                    format!("the call was not refused for the failed guard: {text}"),
                )
            },
        },
        Case {
            name: "no-client-blocks-skill-shell",
            about: "onFailure block (new): the plugin's client is gone; a command's shell line does not run",
            hooks: "",
            files: &[(
                ".claude/commands/mark.md",
                "---\ndescription: Leave a mark\nallowed-tools: Bash(touch:*)\n---\n\
                 !`touch marked.txt`\n\nSay done.\n",
            )],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::WithoutClient,
            prompts: &["/mark"],
            mode: Mode::Bypass,
            script: vec![say("Done.")],
            check: |o| {
                ensure(
                    !o.exists("marked.txt"),
                    "the shell line ran although its guard could not start (marked.txt exists)",
                )?;
                refused_line(o, "touch marked.txt", guard_failed_words(o))
            },
        },
        Case {
            name: "mods-refused-by-policy",
            about: "managed allowManagedModsOnly: our module is not loaded; the command hooks still guard",
            hooks: "[[hook]]\nkind = \"block_command\"\nargv = [\"touch\"]\nreason = \"E2E-POLICY no new files\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::ModsRefusedByPolicy,
            prompts: &["Create policy.txt."],
            mode: Mode::Bypass,
            script: vec![bash("touch policy.txt")],
            check: |o| {
                ensure(!o.exists("policy.txt"), "the denied command ran")?;
                let (text, is_error) = result_of(o, 1)?;
                ensure(
                    is_error && text.contains("E2E-POLICY"),
                    format!("the call was not denied with our reason: {text}"),
                )?;
                if o.route != super::Route::Mod {
                    return Ok(());
                }
                ensure(
                    o.debug.contains("allowManagedModsOnly"),
                    "Claude Code's debug log does not say the policy refused our module",
                )?;
                ensure(
                    o.mod_answers.is_empty(),
                    "the module answered although the policy refuses it",
                )?;
                ensure(
                    o.spawns.iter().any(|s| s == "run PreToolUse"),
                    "the command hook did not answer PreToolUse",
                )
            },
        },
        Case {
            name: OVERHEAD,
            about: "20 Bash calls, each checked: the PreToolUse time Claude Code logs, per route",
            hooks: "[[hook]]\nkind = \"block_command\"\nargv = [\"rm\"]\nreason = \"E2E-UNUSED\"\n",
            files: &[],
            setup: "",
            settings: "",
            args: &[],
            plugin: Plugin::Installed,
            prompts: &["Run true twenty times."],
            mode: Mode::Bypass,
            script: (0..20).map(|_| bash("true")).collect(),
            check: |o| {
                for turn in 1..=20 {
                    let (text, is_error) = result_of(o, turn)?;
                    ensure(!is_error, format!("call {turn} was refused: {text}"))?;
                }
                if o.route == super::Route::Mod {
                    ensure(
                        !o.spawns.iter().any(|s| s == "run PreToolUse"),
                        "bin/hook ran for PreToolUse although the module answered",
                    )?;
                }
                Ok(())
            },
        },
    ]
}

//! The shape of one agent's table. Every per-agent fact lives in a value of these types (one
//! module per agent); the code that reads payloads, renders verdicts and writes the docs matrix
//! reads the tables and never asks which agent it is serving.

use capt_hook_core::EventKind;

use crate::agent::Agent;

/// Everything we know about one agent's hooks.
#[derive(Debug)]
pub struct AgentTable {
    /// Which agent this is.
    pub agent: Agent,
    /// Its product name, for the docs.
    pub title: &'static str,
    /// Environment variables the agent sets for its hooks and no other agent does: their
    /// presence names it when `--agent` was not given. Checked in [`Agent::ALL`] order.
    pub env: &'static [&'static str],
    /// Payload fields only this agent sends (detection without `--agent`).
    pub marks: &'static [&'static str],
    /// How its payloads carry a tool call.
    pub payload: PayloadStyle,
    /// How it reads an answer.
    pub output: OutputStyle,
    /// Top-level payload fields renamed to Claude Code's (`(theirs, ours)`); applied only where
    /// the payload lacks ours.
    pub fields: &'static [(&'static str, &'static str)],
    /// Counts read as Claude Code's flags (`(theirs, ours)`): true when the count is above zero
    /// (Cursor's `loop_count` of follow-ups is Claude Code's `stop_hook_active`).
    pub counts: &'static [(&'static str, &'static str)],
    /// Its events, in its own spelling.
    pub events: Vec<EventRow>,
    /// Its tools whose name or input differ from Claude Code's. A tool not listed keeps its name
    /// and input (`mcp__*` tools among them).
    pub tools: &'static [ToolRow],
    /// What it cannot express, in prose, for the docs.
    pub cannot: &'static [&'static str],
    /// Where its hook configuration lives, for the docs.
    pub config: &'static str,
    /// How `capt-hook install --agent` writes that configuration; `None` where something else
    /// installs us (Claude Code's plugin).
    pub install: Option<Install>,
}

/// Where and how the installer writes an agent's hook configuration.
#[derive(Debug, Clone, Copy)]
pub struct Install {
    /// The user-level file, under the home directory.
    pub user: &'static str,
    /// A variable that moves the user-level directory, and the file's name under it
    /// (`CODEX_HOME`, `hooks.json`).
    pub user_env: Option<(&'static str, &'static str)>,
    /// The project-level file, under the project root.
    pub project: &'static str,
    /// The file's shape.
    pub format: ConfigFormat,
}

/// The shape of an agent's hook configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// Claude Code's: `{"hooks": {Event: [{"hooks": [{"type": "command", "command", "timeout"}]}]}}`
    /// inside a file that may hold other settings; `timeout` in the agent's own unit.
    Groups {
        /// The timeout written, in the agent's unit.
        timeout: u32,
    },
    /// Cursor's: `{"version": 1, "hooks": {event: [{"command"}]}}`.
    Flat,
    /// Copilot CLI's: a file of our own, `{"version": 1, "hooks": {event: [{"type": "command",
    /// "bash", "timeoutSec"}]}}`.
    OwnFile {
        /// `timeoutSec`.
        timeout_sec: u32,
    },
}

impl AgentTable {
    /// The row for the agent's event `name` (exact spelling).
    pub fn event(&self, name: &str) -> Option<&EventRow> {
        self.events.iter().find(|e| e.name == name)
    }

    /// The row for the agent's tool `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolRow> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// How a payload carries its tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadStyle {
    /// `tool_name` and `tool_input` (an object), snake_case fields: Claude Code, Codex, Factory,
    /// Gemini CLI.
    Claude,
    /// `toolName` and `toolArgs` (an object, or JSON text of one), camelCase fields: Copilot CLI.
    Copilot,
    /// One event per kind of call, each with its own fields ([`Call`]): Cursor.
    Cursor,
}

/// The shape an agent reads answers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStyle {
    /// Our envelope, byte for byte: Claude Code itself.
    Passthrough,
    /// Claude Code's envelope restricted to the fields the event accepts: Codex (which refuses
    /// a whole answer over one unknown field) and Factory.
    ClaudeFields,
    /// Top-level `decision` allow/deny with `reason`, `hookSpecificOutput.{additionalContext,
    /// tool_input}`, `systemMessage`.
    Gemini,
    /// `permission` allow/deny/ask with `user_message`/`agent_message`; `continue` on prompts;
    /// `followup_message` on stop.
    Cursor,
    /// `permissionDecision` deny with `permissionDecisionReason`, on preToolUse only.
    Copilot,
}

/// One of the agent's events.
#[derive(Debug, Clone, Copy)]
pub struct EventRow {
    /// Its name as the agent spells it.
    pub name: &'static str,
    /// Our event it is evaluated as; `None` for an event we know and deliberately leave alone
    /// (it is answered with nothing).
    pub ours: Option<EventKind>,
    /// Where its tool call is, when it has one.
    pub call: Call,
    /// What an answer to it can carry.
    pub accepts: Accepts,
}

/// Where an event's tool call is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// No tool call.
    None,
    /// The payload's tool fields ([`PayloadStyle`]).
    Payload,
    /// A shell command in the payload's `command`: Bash.
    Shell,
    /// An MCP call: `tool_name`, `tool_input` (object or JSON text).
    Mcp,
    /// A file about to be read, `file_path`: Read.
    ReadFile,
    /// A file just edited, `file_path` and `edits` (`old_string`/`new_string`): Edit or
    /// MultiEdit.
    FileEdit,
}

/// What an answer to one event can carry, as the agent honours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Accepts {
    /// Refuse or block what the event is about (a call, a prompt, a stop).
    pub block: bool,
    /// Leave the call to the user.
    pub ask: bool,
    /// Run the call with changed input.
    pub rewrite: bool,
    /// Grant permission outright.
    pub allow: bool,
    /// Text for the agent (the model).
    pub context: bool,
    /// Text for the user.
    pub notice: bool,
}

impl Accepts {
    /// Nothing: the agent ignores every answer to the event.
    pub const NONE: Accepts = Accepts::of("");

    /// From letters: `b`lock, `a`sk, `r`ewrite, `p`ermit (allow), `c`ontext, `n`otice. Const, so
    /// the tables read as one short word per row.
    pub const fn of(flags: &str) -> Accepts {
        let b = flags.as_bytes();
        let mut a = Accepts {
            block: false,
            ask: false,
            rewrite: false,
            allow: false,
            context: false,
            notice: false,
        };
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'b' => a.block = true,
                b'a' => a.ask = true,
                b'r' => a.rewrite = true,
                b'p' => a.allow = true,
                b'c' => a.context = true,
                b'n' => a.notice = true,
                _ => {}
            }
            i += 1;
        }
        a
    }
}

/// An event row: the agent's name, ours, where the call is, what an answer can carry.
pub const fn row(
    name: &'static str,
    ours: Option<EventKind>,
    call: Call,
    accepts: &str,
) -> EventRow {
    EventRow {
        name,
        ours,
        call,
        accepts: Accepts::of(accepts),
    }
}

/// One of the agent's tools, as our rules see it.
#[derive(Debug, Clone, Copy)]
pub struct ToolRow {
    /// Its name as the agent spells it.
    pub name: &'static str,
    /// Claude Code's name for the same tool (what `tool = "…"` matches).
    pub ours: &'static str,
    /// How its input becomes Claude Code's.
    pub input: InputMap,
}

/// How a tool's input becomes Claude Code's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMap {
    /// Keys renamed (`(theirs, ours)`), the rest kept; a rewrite maps back the same way.
    Keys(&'static [(&'static str, &'static str)]),
    /// Keys renamed as for [`InputMap::Keys`], and a command line that is Codex's `apply_patch`
    /// with the patch in a heredoc, which Codex applies itself instead of running it
    /// ([`crate::patch::shell_invocation`]), also read as the patch's calls (as
    /// [`InputMap::ApplyPatch`]), so rules on edited files see it.
    ShellPatch(&'static [(&'static str, &'static str)]),
    /// A command given as an argv array or a string, read as one Bash command line; a rewrite
    /// cannot be mapped back.
    ShellArgv,
    /// Codex's `apply_patch`: the patch text in `command` (or `input`), read as the Edit, Write
    /// and shell calls it amounts to ([`crate::patch`]); a rewrite cannot be mapped back.
    ApplyPatch,
}

impl InputMap {
    /// True when a rewritten input can be given back to the agent in its tool's own keys.
    pub fn reversible(self) -> bool {
        matches!(self, InputMap::Keys(_) | InputMap::ShellPatch(_))
    }
}

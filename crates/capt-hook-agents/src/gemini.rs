//! Google Gemini CLI (npm `@google/gemini-cli`, observed at 0.61): its own event names, tool
//! names passed through unrenamed (`run_shell_command`, `replace`, `write_file`), and its own
//! answer shape. A Claude Code answer is read as an allow there, so every answer is rewritten.

use capt_hook_core::EventKind::*;

use crate::agent::Agent;
use crate::table::{
    AgentTable, Call, ConfigFormat, InputMap, Install, OutputStyle, PayloadStyle, ToolRow, row,
};

/// Gemini CLI's table.
pub fn table() -> AgentTable {
    AgentTable {
        agent: Agent::Gemini,
        title: "Google Gemini CLI",
        // It also sets CLAUDE_PROJECT_DIR, so it is checked before Claude Code.
        env: &["GEMINI_PROJECT_DIR", "GEMINI_SESSION_ID"],
        marks: &[],
        payload: PayloadStyle::Claude,
        output: OutputStyle::Gemini,
        // AfterAgent's final text is what Claude Code's Stop calls the last message.
        fields: &[("prompt_response", "last_assistant_message")],
        counts: &[],
        events: vec![
            // `hookSpecificOutput.tool_input` merges into the model's arguments.
            row("BeforeTool", Some(PreToolUse), Call::Payload, "brpn"),
            // A deny there replaces the tool's output; a block from us is sent as context so the
            // output stays and the reason is added.
            row("AfterTool", Some(PostToolUse), Call::Payload, "cn"),
            row("BeforeAgent", Some(UserPromptSubmit), Call::None, "bcn"),
            // A deny rejects the final answer and sends the reason as a new prompt: a Stop gate.
            row("AfterAgent", Some(Stop), Call::None, "bn"),
            row("SessionStart", Some(SessionStart), Call::None, "cn"),
            row("SessionEnd", Some(SessionEnd), Call::None, "n"),
            row("PreCompress", Some(PreCompact), Call::None, "n"),
            row("Notification", Some(Notification), Call::None, "n"),
            // Model-level events have no counterpart in our hooks.
            row("BeforeModel", None, Call::None, ""),
            row("AfterModel", None, Call::None, ""),
            row("BeforeToolSelection", None, Call::None, ""),
        ],
        tools: &[
            ToolRow {
                name: "run_shell_command",
                ours: "Bash",
                input: InputMap::Keys(&[]),
            },
            ToolRow {
                name: "replace",
                ours: "Edit",
                input: InputMap::Keys(&[]),
            },
            ToolRow {
                name: "write_file",
                ours: "Write",
                input: InputMap::Keys(&[]),
            },
            ToolRow {
                name: "read_file",
                ours: "Read",
                input: InputMap::Keys(&[("absolute_path", "file_path")]),
            },
            // Gemini CLI 0.61 sends `dir_path` where Claude Code's Glob and Grep say `path`
            // (seen in the tool schemas the real CLI sends its model, `cargo xtask e2e-agents`).
            ToolRow {
                name: "glob",
                ours: "Glob",
                input: InputMap::Keys(&[("dir_path", "path")]),
            },
            ToolRow {
                name: "grep_search",
                ours: "Grep",
                input: InputMap::Keys(&[("dir_path", "path"), ("include_pattern", "glob")]),
            },
            // The name older builds gave the search tool.
            ToolRow {
                name: "search_file_content",
                ours: "Grep",
                input: InputMap::Keys(&[]),
            },
            ToolRow {
                name: "list_directory",
                ours: "LS",
                input: InputMap::Keys(&[("dir_path", "path")]),
            },
            ToolRow {
                name: "web_fetch",
                ours: "WebFetch",
                input: InputMap::Keys(&[]),
            },
            ToolRow {
                name: "google_web_search",
                ours: "WebSearch",
                input: InputMap::Keys(&[]),
            },
        ],
        cannot: &[
            "`ask`: no answer asks the user; an ask is sent as a deny with its reason.",
            "A warning on BeforeTool: Gemini CLI gives `additionalContext` to the model only \
             after a tool ran (AfterTool) or with a prompt (BeforeAgent), so a PreToolUse \
             warning is shown to the user (`systemMessage`); a PostToolUse warning reaches the \
             model with the tool's output.",
            "A block on AfterTool: sent as context (a Gemini deny there would hide the tool's \
             output).",
            "BeforeModel, AfterModel and BeforeToolSelection: not evaluated; answered with \
             nothing.",
        ],
        config: "`~/.gemini/settings.json` (user) or `.gemini/settings.json` (project) under \
                 `hooks`; `timeout` in milliseconds",
        install: Some(Install {
            user: ".gemini/settings.json",
            user_env: None,
            project: ".gemini/settings.json",
            // Milliseconds.
            format: ConfigFormat::Groups { timeout: 40_000 },
        }),
    }
}

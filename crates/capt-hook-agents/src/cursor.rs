//! Cursor: one event per kind of call (`beforeShellExecution`, `beforeReadFile`,
//! `afterFileEdit`, …), each with its own fields, and answers in `permission` /
//! `user_message` / `agent_message`.

use capt_hook_core::EventKind::*;

use crate::agent::Agent;
use crate::table::{AgentTable, Call, ConfigFormat, Install, OutputStyle, PayloadStyle, row};

/// Cursor's table.
pub fn table() -> AgentTable {
    AgentTable {
        agent: Agent::Cursor,
        title: "Cursor",
        env: &[],
        marks: &["cursor_version", "conversation_id", "generation_id"],
        payload: PayloadStyle::Cursor,
        output: OutputStyle::Cursor,
        fields: &[("conversation_id", "session_id")],
        // A stop after a follow-up it asked for: a Stop gate must not keep it going forever.
        counts: &[("loop_count", "stop_hook_active")],
        events: vec![
            row(
                "beforeShellExecution",
                Some(PreToolUse),
                Call::Shell,
                "bapcn",
            ),
            row("beforeMCPExecution", Some(PreToolUse), Call::Mcp, "bapcn"),
            row("beforeReadFile", Some(PreToolUse), Call::ReadFile, "bp"),
            row("afterShellExecution", Some(PostToolUse), Call::Shell, ""),
            row("afterMCPExecution", Some(PostToolUse), Call::Mcp, ""),
            row("afterFileEdit", Some(PostToolUse), Call::FileEdit, ""),
            row(
                "beforeSubmitPrompt",
                Some(UserPromptSubmit),
                Call::None,
                "b",
            ),
            // `followup_message` sends the agent back to work: a Stop gate.
            row("stop", Some(Stop), Call::None, "b"),
            row("sessionStart", Some(SessionStart), Call::None, ""),
            row("sessionEnd", Some(SessionEnd), Call::None, ""),
            row("preCompact", Some(PreCompact), Call::None, ""),
            // The generic tool events fire for the same calls as the specific ones above;
            // evaluating both would run every guard twice.
            row("preToolUse", None, Call::None, ""),
            row("postToolUse", None, Call::None, ""),
        ],
        tools: &[],
        cannot: &[
            "A rewrite: no event takes changed input; sent as a deny naming the command to run \
             instead.",
            "Context after a call (`afterFileEdit`, `afterShellExecution`): these events take \
             no answer, so a PostToolUse lint reaches the agent only through the Stop gate.",
            "An MCP call's server name: the tool is named `mcp__cursor__<tool>`.",
        ],
        config: "`.cursor/hooks.json` (project) or `~/.cursor/hooks.json` (user), `version: 1`",
        install: Some(Install {
            user: ".cursor/hooks.json",
            user_env: None,
            project: ".cursor/hooks.json",
            format: ConfigFormat::Flat,
        }),
    }
}

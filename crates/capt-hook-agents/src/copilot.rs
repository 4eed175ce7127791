//! GitHub Copilot CLI (npm `@github/copilot`): camelCase events and fields, `toolName` and
//! `toolArgs` (JSON text), and only one answer it acts on: a preToolUse deny.

use capt_hook_core::EventKind::*;

use crate::agent::Agent;
use crate::table::{
    AgentTable, Call, ConfigFormat, InputMap, Install, OutputStyle, PayloadStyle, ToolRow, row,
};

/// Copilot CLI's table.
pub fn table() -> AgentTable {
    AgentTable {
        agent: Agent::Copilot,
        title: "GitHub Copilot CLI",
        env: &[],
        marks: &["toolName", "toolArgs"],
        payload: PayloadStyle::Copilot,
        output: OutputStyle::Copilot,
        fields: &[
            ("sessionId", "session_id"),
            ("toolResult", "tool_response"),
            ("transcriptPath", "transcript_path"),
        ],
        counts: &[],
        events: vec![
            row("preToolUse", Some(PreToolUse), Call::Payload, "b"),
            row("postToolUse", Some(PostToolUse), Call::Payload, ""),
            row(
                "userPromptSubmitted",
                Some(UserPromptSubmit),
                Call::None,
                "",
            ),
            row("sessionStart", Some(SessionStart), Call::None, ""),
            row("sessionEnd", Some(SessionEnd), Call::None, ""),
            row("agentStop", Some(Stop), Call::None, ""),
            row("subagentStop", Some(SubagentStop), Call::None, ""),
            row("errorOccurred", None, Call::None, ""),
        ],
        tools: &[
            ToolRow {
                name: "bash",
                ours: "Bash",
                input: InputMap::Keys(&[]),
            },
            ToolRow {
                name: "edit",
                ours: "Edit",
                input: InputMap::Keys(&[
                    ("path", "file_path"),
                    ("old_str", "old_string"),
                    ("new_str", "new_string"),
                ]),
            },
            ToolRow {
                name: "create",
                ours: "Write",
                input: InputMap::Keys(&[("path", "file_path"), ("file_text", "content")]),
            },
            ToolRow {
                name: "view",
                ours: "Read",
                input: InputMap::Keys(&[("path", "file_path")]),
            },
        ],
        cannot: &[
            "Anything but a deny on preToolUse: every other answer is ignored, so an ask and a \
             rewrite are sent as denies (the rewrite naming the command to run instead).",
            "A Stop gate: agentStop takes no answer; the gate is not enforced.",
            "Context and notices: not shown.",
        ],
        config: "`.github/hooks/*.json` (project) or `~/.copilot/hooks/*.json` (user), \
                 `version: 1`, command under `bash`",
        install: Some(Install {
            user: ".copilot/hooks/capt-hook.json",
            user_env: Some(("COPILOT_HOME", "hooks/capt-hook.json")),
            project: ".github/hooks/capt-hook.json",
            format: ConfigFormat::OwnFile { timeout_sec: 40 },
        }),
    }
}

//! Factory Droid (npm `droid`): Claude Code's events and envelope, `FACTORY_PROJECT_DIR`, and
//! its own tool names (`Execute`, `Create`, `Edit` with `old_str`/`new_str`, `FetchUrl`).

use capt_hook_core::EventKind::*;

use crate::agent::Agent;
use crate::table::{
    AgentTable, Call, ConfigFormat, InputMap, Install, OutputStyle, PayloadStyle, ToolRow, row,
};

/// Factory's table.
pub fn table() -> AgentTable {
    AgentTable {
        agent: Agent::Factory,
        title: "Factory Droid",
        env: &["FACTORY_PROJECT_DIR"],
        marks: &[],
        payload: PayloadStyle::Claude,
        output: OutputStyle::ClaudeFields,
        fields: &[],
        counts: &[],
        events: vec![
            // Its published reference lists allow/deny/ask and context, not updatedInput.
            row("PreToolUse", Some(PreToolUse), Call::Payload, "bapcn"),
            row("PostToolUse", Some(PostToolUse), Call::Payload, "bcn"),
            row(
                "UserPromptSubmit",
                Some(UserPromptSubmit),
                Call::None,
                "bcn",
            ),
            row("Stop", Some(Stop), Call::None, "bn"),
            row("SubagentStop", Some(SubagentStop), Call::None, "bn"),
            row("SessionStart", Some(SessionStart), Call::None, "cn"),
            row("SessionEnd", Some(SessionEnd), Call::None, "n"),
            row("PreCompact", Some(PreCompact), Call::None, "n"),
            row("Notification", Some(Notification), Call::None, "n"),
        ],
        tools: &[
            ToolRow {
                name: "Execute",
                ours: "Bash",
                input: InputMap::Keys(&[]),
            },
            ToolRow {
                name: "Create",
                ours: "Write",
                input: InputMap::Keys(&[]),
            },
            ToolRow {
                name: "Edit",
                ours: "Edit",
                input: InputMap::Keys(&[("old_str", "old_string"), ("new_str", "new_string")]),
            },
            ToolRow {
                name: "FetchUrl",
                ours: "WebFetch",
                input: InputMap::Keys(&[]),
            },
        ],
        cannot: &[
            "A rewrite (`updatedInput` is not in Factory's published reference): sent as a deny \
             naming the command to run instead.",
        ],
        config: "`~/.factory/settings.json` (user) or `.factory/settings.json` (project), \
                 Claude Code's shape",
        install: Some(Install {
            user: ".factory/settings.json",
            user_env: None,
            project: ".factory/settings.json",
            format: ConfigFormat::Groups { timeout: 40 },
        }),
    }
}

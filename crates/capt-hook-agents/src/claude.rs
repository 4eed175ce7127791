//! Claude Code: the protocol our engine speaks. Its answers pass through untouched; its rows
//! exist so the docs matrix and detection read every agent the same way.

use capt_hook_core::EventKind;

use crate::agent::Agent;
use crate::table::{Accepts, AgentTable, Call, EventRow, OutputStyle, PayloadStyle};

/// Claude Code's table.
pub fn table() -> AgentTable {
    AgentTable {
        agent: Agent::Claude,
        title: "Claude Code",
        env: &["CLAUDE_PROJECT_DIR"],
        marks: &[],
        payload: PayloadStyle::Claude,
        output: OutputStyle::Passthrough,
        fields: &[],
        counts: &[],
        events: EventKind::ALL
            .into_iter()
            .filter(|k| *k != EventKind::ResourcePressure)
            .map(|k| EventRow {
                name: k.name(),
                ours: Some(k),
                call: if k.has_tool() {
                    Call::Payload
                } else {
                    Call::None
                },
                // Passed through unchanged: every answer lands as our envelope gives it.
                accepts: Accepts::of("barpcn"),
            })
            .collect(),
        tools: &[],
        cannot: &[],
        config: "the captain-hook plugin (`plugin/hooks/hooks.json`, every event)",
        install: None,
    }
}

//! Claude Code: the protocol our engine speaks. Its answers pass through untouched; its rows
//! exist so the docs matrix and detection read every agent the same way.

use capt_hook_core::EventKind;
use capt_hook_core::envelope::Shape;

use crate::Agent;
use crate::table::{Accepts, AgentTable, Call, EventRow, OutputStyle, PayloadStyle};

/// What an answer to `kind` can carry in Claude Code, read off the envelope's own shape table
/// (capt-hook-core owns the fact; this only restates it in the matrix's terms).
fn accepts(kind: EventKind) -> Accepts {
    Accepts::of(match Shape::of(kind) {
        Shape::PreToolUse => "barpcn",
        Shape::PermissionRequest => "brpn",
        Shape::SkillShell => "bn",
        Shape::ModelSwitch => "bpn",
        Shape::PermissionDenied => "pn",
        Shape::Decision => "bcn",
        Shape::DecisionNoContext | Shape::Stop | Shape::PreCompact | Shape::ExitCode => "bn",
        Shape::Context => "cn",
        Shape::MessageDisplay => "rn",
        Shape::WorktreeCreate => "br",
        Shape::Elicitation => "bprn",
        Shape::Notice => "n",
    })
}

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
                accepts: accepts(k),
            })
            .collect(),
        tools: &[],
        cannot: &[],
        config: "`.claude/settings.json` (project) or `~/.claude/settings.json` (user): \
                 `capt-hook install`",
    }
}

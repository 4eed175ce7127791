//! Which agents there are, and why one's event could not be read or answered: a leaf module,
//! so each agent's table can name its agent without importing the crate root.

use std::fmt;
use std::str::FromStr;

/// A coding agent whose hooks we answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Anthropic's Claude Code: our engine's own protocol.
    Claude,
    /// OpenAI Codex CLI.
    Codex,
    /// Factory Droid.
    Factory,
    /// Google Gemini CLI.
    Gemini,
    /// Cursor.
    Cursor,
    /// GitHub Copilot CLI.
    Copilot,
}

impl Agent {
    /// Every agent. Detection from the environment checks them in this order, except that
    /// Claude Code comes last (Gemini CLI sets `CLAUDE_PROJECT_DIR` too).
    pub const ALL: [Agent; 6] = [
        Agent::Claude,
        Agent::Codex,
        Agent::Factory,
        Agent::Gemini,
        Agent::Cursor,
        Agent::Copilot,
    ];

    /// The name `--agent` takes.
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => capt_hook_core::event::CLAUDE,
            Agent::Codex => "codex",
            Agent::Factory => "factory",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor",
            Agent::Copilot => "copilot",
        }
    }

    /// Other spellings `--agent` accepts: the products' own names.
    fn aliases(self) -> &'static [&'static str] {
        match self {
            Agent::Claude => &["claude-code"],
            Agent::Codex => &["codex-cli"],
            Agent::Factory => &["droid"],
            Agent::Gemini => &["gemini-cli"],
            Agent::Cursor => &[],
            Agent::Copilot => &["copilot-cli"],
        }
    }

    /// The comma-separated names, for error messages.
    pub fn valid_names() -> String {
        Agent::ALL.map(Agent::name).join(", ")
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Agent {
    type Err = AgentError;

    fn from_str(s: &str) -> Result<Agent, AgentError> {
        let wanted = s.trim().to_ascii_lowercase();
        Agent::ALL
            .into_iter()
            .find(|a| a.name() == wanted || a.aliases().contains(&wanted.as_str()))
            .ok_or_else(|| AgentError::UnknownAgent(s.to_owned()))
    }
}

/// Why an event from an agent could not be read or answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// `--agent` named no agent we know.
    #[error("unknown agent '{0}'; known agents are: {names}", names = Agent::valid_names())]
    UnknownAgent(String),
    /// No agent was named, none was recognised, and the payload is not Claude Code's shape.
    #[error(
        "this event comes from an agent capt-hook does not know (no --agent, no agent's \
         environment variables, and the payload is not Claude Code's shape: {0}); name one with \
         --agent ({names})",
        names = Agent::valid_names()
    )]
    Unrecognised(String),
    /// The agent has no event of this name.
    #[error("{agent} has no event '{name}'; its events are: {events}")]
    UnknownEvent {
        /// The agent.
        agent: Agent,
        /// The name given.
        name: String,
        /// The agent's event names.
        events: String,
    },
    /// A payload field the event needs is missing or of the wrong type.
    #[error("{agent} {event} payload: field `{field}` {problem}")]
    Field {
        /// The agent.
        agent: Agent,
        /// The agent's event name.
        event: String,
        /// The field.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An `apply_patch` input that is not a patch.
    #[error("{agent} {event} payload: tool_input: {source}")]
    Patch {
        /// The agent.
        agent: Agent,
        /// The agent's event name.
        event: String,
        /// Where the patch went wrong.
        source: crate::patch::PatchError,
    },
    /// The installer has nothing to write for this agent.
    #[error(
        "capt-hook install does not write {0}'s hooks (Claude Code gets them from the \
         captain-hook plugin)"
    )]
    NotInstallable(Agent),
    /// An agent's hook configuration file of a shape the installer will not overwrite.
    #[error("hook configuration: `{path}` {problem}")]
    Config {
        /// Where in the file (`hooks.Stop`).
        path: String,
        /// What is wrong there.
        problem: String,
    },
}

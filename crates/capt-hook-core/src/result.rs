//! What one hook says about an event.

use serde_json::{Map, Value};

/// The verdict kinds. "Ask" is not one: it is the absence of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Deny the call, or keep the agent from stopping.
    Block,
    /// Add context for the agent.
    Warn,
    /// Approve the call without a dialog.
    Allow,
    /// Approve the call with a changed input.
    Rewrite,
}

impl Action {
    /// The action's lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Action::Block => "block",
            Action::Warn => "warn",
            Action::Allow => "allow",
            Action::Rewrite => "rewrite",
        }
    }
}

/// One hook's result.
#[derive(Debug, Clone, PartialEq)]
pub struct HookResult {
    /// The verdict.
    pub action: Action,
    /// The reason (block), context (warn, allow) or display text.
    pub message: Option<String>,
    /// The replacement tool input (rewrite).
    pub updated_input: Option<Map<String, Value>>,
    /// Context attached to a rewrite.
    pub note: Option<String>,
    /// For a warn at PreToolUse: also approve the call (Claude Code's `permissionDecision`);
    /// off unless the hook opted in with `approve = true`.
    pub approve: bool,
    /// A notice shown to the user, not the agent.
    pub system_message: Option<String>,
}

impl HookResult {
    fn of(action: Action, message: Option<String>) -> HookResult {
        HookResult {
            action,
            message,
            updated_input: None,
            note: None,
            approve: false,
            system_message: None,
        }
    }

    /// A block with `message`.
    pub fn block(message: impl Into<String>) -> HookResult {
        Self::of(Action::Block, Some(message.into()))
    }

    /// A warning with `message`: context for the agent, never a permission.
    pub fn warn(message: impl Into<String>) -> HookResult {
        Self::of(Action::Warn, Some(message.into()))
    }

    /// This result with `approve` set: a warning at PreToolUse then also grants permission
    /// (`permissionDecision: "allow"`), as the original's warnings did.
    pub fn approving(mut self) -> HookResult {
        self.approve = true;
        self
    }

    /// An approval.
    pub fn allow() -> HookResult {
        Self::of(Action::Allow, None)
    }

    /// A rewrite of the whole tool input.
    pub fn rewrite(updated_input: Map<String, Value>, note: Option<String>) -> HookResult {
        HookResult {
            updated_input: Some(updated_input),
            note,
            ..Self::of(Action::Rewrite, None)
        }
    }

    /// Attaches a user-visible notice.
    pub fn with_system_message(mut self, notice: impl Into<String>) -> HookResult {
        self.system_message = Some(notice.into());
        self
    }

    /// True for a block.
    pub fn is_block(&self) -> bool {
        self.action == Action::Block
    }
}

/// Trims a message the way hand-written multi-line strings want: common indentation removed,
/// surrounding blank space stripped.
pub fn dedent(text: &str) -> String {
    let indent = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    text.lines()
        .map(|l| {
            if l.len() >= indent {
                &l[indent..]
            } else {
                l.trim_start()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedent_strips_common_indent() {
        assert_eq!(dedent("\n    a\n      b\n    "), "a\n  b");
    }
}

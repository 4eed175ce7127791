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
///
/// Indentation is counted in characters (any Unicode whitespace, one each), and each line loses
/// at most that many of its own leading whitespace characters: a line indented with `\t` or an
/// ideographic space beside lines indented with spaces loses one character per column, never a
/// byte offset measured on another line (judge output reaches this, whatever it is made of).
pub fn dedent(text: &str) -> String {
    let indent = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.chars().take_while(|c| c.is_whitespace()).count())
        .min()
        .unwrap_or(0);
    text.lines()
        .map(|l| strip_indent(l, indent))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// `line` without up to `n` of its leading whitespace characters.
fn strip_indent(line: &str, n: usize) -> &str {
    let mut rest = line;
    for _ in 0..n {
        let mut chars = rest.chars();
        match chars.next() {
            Some(c) if c.is_whitespace() => rest = chars.as_str(),
            _ => break,
        }
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedent_strips_common_indent() {
        assert_eq!(dedent("\n    a\n      b\n    "), "a\n  b");
    }

    #[test]
    fn dedent_counts_mixed_unicode_indentation_in_characters() {
        // Two spaces beside one ideographic space (three bytes): one character in common.
        assert_eq!(dedent("  a\n\u{3000}b"), "a\nb");
        assert_eq!(dedent("\n  x\n\u{3000}\u{3000}y"), "x\ny");
        assert_eq!(dedent("\u{3000}a\n\u{3000}\u{3000}b"), "a\n\u{3000}b");
        // A tab, a no-break space and an em space count one each.
        assert_eq!(dedent("\t\ta\n\u{a0}\u{2003}\u{2003}b"), "a\n\u{2003}b");
        assert_eq!(dedent("x\n  \u{3000}y"), "x\n  \u{3000}y");
        // A blank line of wide whitespace, longer in bytes than the indentation.
        assert_eq!(dedent("    a\n\u{3000}\u{3000}\n    b"), "a\n\nb");
        // One character in common: the spaced lines keep their second space (the first line's
        // goes with the trim of the whole).
        assert_eq!(dedent("  é\n\u{3000}ü\n  ñ"), "é\nü\n ñ");
    }

    #[test]
    fn dedent_never_panics_on_any_mix_of_whitespace() {
        const SPACES: [&str; 6] = [" ", "\t", "\u{3000}", "\u{a0}", "\u{2003}", "\u{85}"];
        let mut prefixes = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> = prefixes
                .iter()
                .flat_map(|p| SPACES.iter().map(move |s| format!("{p}{s}")))
                .collect();
            prefixes.extend(longer);
        }
        prefixes.sort();
        prefixes.dedup();
        for a in &prefixes {
            for b in &prefixes {
                let text = format!("{a}é\n{b}\n{b}z\n{a}");
                let out = dedent(&text);
                let lines: Vec<&str> = out.lines().collect();
                assert_eq!(lines.first().map(|l| l.trim()), Some("é"), "{text:?}");
                assert_eq!(lines.last().map(|l| l.trim()), Some("z"), "{text:?}");
            }
        }
    }
}

//! Typed tool calls parsed leniently from a payload's `tool_name` and `tool_input`.

use serde_json::{Map, Value};

/// Pairs of tool names Claude Code and its forks use for the same tool (one table, shared with
/// the transcript queries).
pub use capt_hook_transcript::names::TOOL_ALIASES;

/// The canonical name for a tool name, after reverse aliases (`Execute` → `Bash`).
pub fn canonical_tool(name: &str) -> &str {
    TOOL_ALIASES
        .iter()
        .find(|(_, alias)| *alias == name)
        .map(|(canon, _)| *canon)
        .unwrap_or(name)
}

/// Every spelling of `name`: itself plus its alias partner, if any.
pub fn tool_spellings(name: &str) -> Vec<&str> {
    let mut out = vec![name];
    for (a, b) in TOOL_ALIASES {
        if *a == name {
            out.push(b);
        } else if *b == name {
            out.push(a);
        }
    }
    out
}

/// One replacement of a MultiEdit call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditOp {
    /// The text to replace.
    pub old_string: String,
    /// The replacement.
    pub new_string: String,
    /// Replace every occurrence instead of exactly one.
    pub replace_all: bool,
}

/// A tool call, typed when the input has the fields its tool requires; otherwise [`ToolCall::Other`].
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    /// A shell command.
    Bash {
        /// The command line.
        command: String,
    },
    /// One string replacement in a file.
    Edit {
        /// The target file.
        file_path: String,
        /// The text replaced.
        old_string: String,
        /// The new text.
        new_string: String,
        /// Replace every occurrence.
        replace_all: bool,
    },
    /// Several replacements in one file.
    MultiEdit {
        /// The target file.
        file_path: String,
        /// The replacements, applied in order.
        edits: Vec<EditOp>,
    },
    /// A whole-file write.
    Write {
        /// The target file.
        file_path: String,
        /// The new content.
        content: String,
    },
    /// A file read.
    Read {
        /// The file read.
        file_path: String,
    },
    /// A notebook cell edit.
    NotebookEdit {
        /// The notebook.
        notebook_path: String,
        /// The cell's new source.
        new_source: String,
    },
    /// A subagent launch.
    Agent {
        /// The subagent's prompt.
        prompt: String,
        /// The subagent type, from `subagent_type` or `agent_type`.
        subagent_type: Option<String>,
    },
    /// A skill invocation.
    Skill {
        /// The skill's name.
        skill: String,
        /// Its arguments.
        args: Option<String>,
    },
    /// Any other call, or a known tool whose input lacks a required field.
    Other,
}

fn str_field(input: &Map<String, Value>, key: &str) -> Option<String> {
    input.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn bool_field(input: &Map<String, Value>, key: &str) -> Option<bool> {
    match input.get(key) {
        None | Some(Value::Null) => Some(false),
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => None,
    }
}

impl ToolCall {
    /// Parses a call; never fails (a malformed input is [`ToolCall::Other`]).
    pub fn parse(tool_name: &str, input: &Value) -> ToolCall {
        let Some(input) = input.as_object() else {
            return ToolCall::Other;
        };
        Self::parse_object(canonical_tool(tool_name), input).unwrap_or(ToolCall::Other)
    }

    fn parse_object(name: &str, input: &Map<String, Value>) -> Option<ToolCall> {
        Some(match name {
            "Bash" => ToolCall::Bash {
                command: str_field(input, "command")?,
            },
            "Edit" => ToolCall::Edit {
                file_path: str_field(input, "file_path")?,
                old_string: str_field(input, "old_string")?,
                new_string: str_field(input, "new_string")?,
                replace_all: bool_field(input, "replace_all")?,
            },
            "MultiEdit" => {
                let edits = input.get("edits")?.as_array()?;
                let edits = edits
                    .iter()
                    .map(|e| {
                        let e = e.as_object()?;
                        Some(EditOp {
                            old_string: str_field(e, "old_string")?,
                            new_string: str_field(e, "new_string")?,
                            replace_all: bool_field(e, "replace_all")?,
                        })
                    })
                    .collect::<Option<Vec<_>>>()?;
                ToolCall::MultiEdit {
                    file_path: str_field(input, "file_path")?,
                    edits,
                }
            }
            "Write" => ToolCall::Write {
                file_path: str_field(input, "file_path")?,
                content: str_field(input, "content")?,
            },
            "Read" => ToolCall::Read {
                file_path: str_field(input, "file_path")?,
            },
            "NotebookEdit" => ToolCall::NotebookEdit {
                notebook_path: str_field(input, "notebook_path")?,
                new_source: str_field(input, "new_source")?,
            },
            "Agent" => ToolCall::Agent {
                prompt: str_field(input, "prompt")?,
                subagent_type: str_field(input, "subagent_type")
                    .or_else(|| str_field(input, "agent_type"))
                    .filter(|s| !s.is_empty()),
            },
            "Skill" => ToolCall::Skill {
                skill: str_field(input, "skill")?,
                args: str_field(input, "args"),
            },
            _ => return None,
        })
    }

    /// The Bash command, if this is a Bash call.
    pub fn command(&self) -> Option<&str> {
        match self {
            ToolCall::Bash { command } => Some(command),
            _ => None,
        }
    }

    /// The file the call targets (edits, writes, reads, notebooks).
    pub fn file_path(&self) -> Option<&str> {
        match self {
            ToolCall::Edit { file_path, .. }
            | ToolCall::MultiEdit { file_path, .. }
            | ToolCall::Write { file_path, .. }
            | ToolCall::Read { file_path } => Some(file_path),
            ToolCall::NotebookEdit { notebook_path, .. } => Some(notebook_path),
            _ => None,
        }
    }

    /// The new text the call writes.
    pub fn content(&self) -> Option<String> {
        match self {
            ToolCall::Edit { new_string, .. } => Some(new_string.clone()),
            ToolCall::Write { content, .. } => Some(content.clone()),
            ToolCall::MultiEdit { edits, .. } => Some(
                edits
                    .iter()
                    .map(|e| e.new_string.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            ToolCall::NotebookEdit { new_source, .. } => Some(new_source.clone()),
            _ => None,
        }
    }

    /// The text the call replaces.
    pub fn old(&self) -> Option<String> {
        match self {
            ToolCall::Edit { old_string, .. } => Some(old_string.clone()),
            ToolCall::MultiEdit { edits, .. } => Some(
                edits
                    .iter()
                    .map(|e| e.old_string.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        }
    }

    /// The subagent type of an Agent/Task call.
    pub fn agent_type(&self) -> Option<&str> {
        match self {
            ToolCall::Agent { subagent_type, .. } => subagent_type.as_deref(),
            _ => None,
        }
    }
}

/// Applies an edit to a file's text; `None` when `old` is missing or, without `replace_all`,
/// ambiguous.
pub fn apply_edit(text: &str, op: &EditOp) -> Option<String> {
    let count = text.matches(op.old_string.as_str()).count();
    if op.old_string.is_empty() || count == 0 || (!op.replace_all && count > 1) {
        return None;
    }
    Some(if op.replace_all {
        text.replace(&op.old_string, &op.new_string)
    } else {
        text.replacen(&op.old_string, &op.new_string, 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aliases_pick_the_type_and_missing_fields_fall_back_to_other() {
        let c = ToolCall::parse("Execute", &json!({"command": "ls"}));
        assert_eq!(c.command(), Some("ls"));
        assert_eq!(ToolCall::parse("Bash", &json!({})), ToolCall::Other);
        assert_eq!(
            ToolCall::parse("Bash", &json!({"command": 3})),
            ToolCall::Other
        );
        assert_eq!(ToolCall::parse("Bash", &json!("ls")), ToolCall::Other);
        let t = ToolCall::parse("Task", &json!({"prompt": "p", "subagent_type": "Explore"}));
        assert_eq!(t.agent_type(), Some("Explore"));
    }

    #[test]
    fn multiedit_joins_new_and_old_strings() {
        let c = ToolCall::parse(
            "MultiEdit",
            &json!({"file_path": "/a.py", "edits": [
                {"old_string": "a", "new_string": "b"},
                {"old_string": "c", "new_string": "d", "replace_all": true}]}),
        );
        assert_eq!(c.content().as_deref(), Some("b\nd"));
        assert_eq!(c.old().as_deref(), Some("a\nc"));
        assert_eq!(c.file_path(), Some("/a.py"));
    }

    #[test]
    fn edits_need_exactly_one_occurrence() {
        let op = |o: &str, all| EditOp {
            old_string: o.into(),
            new_string: "X".into(),
            replace_all: all,
        };
        assert_eq!(
            apply_edit("a b a", &op("b", false)).as_deref(),
            Some("a X a")
        );
        assert_eq!(apply_edit("a b a", &op("a", false)), None);
        assert_eq!(
            apply_edit("a b a", &op("a", true)).as_deref(),
            Some("X b X")
        );
        assert_eq!(apply_edit("a b a", &op("z", false)), None);
    }
}

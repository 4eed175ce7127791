//! Tool names: alias pairs, MCP suffixes, and the tool families queries care about.

/// Names Claude Code and its forks use for the same tool; a spec naming one matches both.
pub const TOOL_ALIASES: &[(&str, &str)] = &[
    ("Bash", "Execute"),
    ("Write", "Create"),
    ("Agent", "Task"),
    ("WebFetch", "FetchUrl"),
    ("ExitPlanMode", "ExitSpecMode"),
];

/// Tools that change a file's content (`touched_file`, `has_edit_to`).
pub const EDIT_TOOLS: &[&str] = &["Edit", "MultiEdit", "Write", "NotebookEdit"];

/// Tools whose input names one file (`file_path`, or `notebook_path` for NotebookEdit).
pub const FILE_TOOLS: &[&str] = &["Edit", "MultiEdit", "Write", "Read", "NotebookEdit"];

fn same_tool(a: &str, b: &str) -> bool {
    a == b
        || TOOL_ALIASES
            .iter()
            .any(|&(x, y)| (a == x && b == y) || (a == y && b == x))
}

/// The `<tool>` of `mcp__<server>__<tool>`, if `name` is an MCP tool.
pub fn mcp_tool(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("mcp__")?;
    rest.rsplit_once("__").map(|(_, tool)| tool)
}

/// True when `name` matches the pipe-separated `spec` (`"Edit|Write"`): exactly, through an
/// alias, or as the `<tool>` part of an MCP name. Case-sensitive; not a regex.
pub fn tool_name_matches(name: &str, spec: &str) -> bool {
    spec.split('|').any(|want| tool_name_is(name, want))
}

/// True when `name` is the single tool `want` (alias and MCP aware).
pub fn tool_name_is(name: &str, want: &str) -> bool {
    if want.is_empty() || name.is_empty() {
        return false;
    }
    same_tool(name, want) || mcp_tool(name).is_some_and(|t| same_tool(t, want))
}

/// True when `name` is one of `family` (alias aware, not MCP: an MCP tool's input shape is its
/// own).
pub(crate) fn in_family(name: &str, family: &[&str]) -> bool {
    family.iter().any(|f| same_tool(name, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_pipes_and_mcp_suffixes() {
        assert!(tool_name_matches("Execute", "Bash"));
        assert!(tool_name_matches("Task", "Agent"));
        assert!(tool_name_matches("Write", "Edit|Create"));
        assert!(tool_name_matches("mcp__github__Bash", "Bash"));
        assert!(tool_name_matches("mcp__a__b__Read", "Read"));
        assert!(!tool_name_matches("Edit", "Edit.*"));
        assert!(!tool_name_matches("edit", "Edit"));
        assert!(!tool_name_matches("Edit", ""));
        assert!(in_family("Create", EDIT_TOOLS));
        assert!(!in_family("mcp__x__Edit", EDIT_TOOLS));
    }
}

//! OpenAI Codex CLI (npm `@openai/codex`, observed at 0.169): Claude Code's event names and
//! envelope, with three differences that bite. Its output parser refuses a whole answer over one
//! field it does not know for that event, and a refused answer lets the call run; a plain
//! `permissionDecision: "allow"` or an `ask` is refused the same way; and edits arrive as one
//! `apply_patch` call holding a patch, not as Edit/Write with a `file_path`.

use std::path::Path;

use capt_hook_core::EventKind::*;

use crate::agent::{Agent, AgentError};
use crate::table::{
    AgentTable, Call, ConfigFormat, InputMap, Install, OutputStyle, PayloadStyle, ToolRow, row,
};

/// Codex's table.
pub fn table() -> AgentTable {
    AgentTable {
        agent: Agent::Codex,
        title: "OpenAI Codex CLI",
        env: &[],
        // Every Codex event but SessionStart carries the turn's id; Claude Code sends none.
        marks: &["turn_id"],
        payload: PayloadStyle::Claude,
        output: OutputStyle::ClaudeFields,
        fields: &[],
        counts: &[],
        events: vec![
            // A deny needs a non-empty reason; an allow is honoured only with updatedInput.
            row("PreToolUse", Some(PreToolUse), Call::Payload, "brcn"),
            // `decision.behavior` allow/deny; an updatedInput there is refused.
            row(
                "PermissionRequest",
                Some(PermissionRequest),
                Call::Payload,
                "bpn",
            ),
            row("PostToolUse", Some(PostToolUse), Call::Payload, "bcn"),
            row(
                "UserPromptSubmit",
                Some(UserPromptSubmit),
                Call::None,
                "bcn",
            ),
            row("Stop", Some(Stop), Call::None, "bn"),
            row("SubagentStop", Some(SubagentStop), Call::None, "bn"),
            row("SubagentStart", Some(SubagentStart), Call::None, "cn"),
            row("SessionStart", Some(SessionStart), Call::None, "cn"),
            row("PreCompact", Some(PreCompact), Call::None, "n"),
            row("PostCompact", Some(PostCompact), Call::None, "n"),
        ],
        tools: &[
            ToolRow {
                name: "Bash",
                ours: "Bash",
                input: InputMap::Keys(&[]),
            },
            ToolRow {
                name: "exec_command",
                ours: "Bash",
                input: InputMap::Keys(&[("cmd", "command")]),
            },
            // Older builds: `command` as an argv array (`["bash", "-lc", "…"]`).
            ToolRow {
                name: "shell",
                ours: "Bash",
                input: InputMap::ShellArgv,
            },
            ToolRow {
                name: "apply_patch",
                ours: "Edit",
                input: InputMap::ApplyPatch,
            },
        ],
        cannot: &[
            "`ask`: Codex refuses the answer (and runs the call), so an ask is sent as a deny \
             with its reason.",
            "A plain allow on PreToolUse: refused the same way, so it is left out and Codex's \
             own approval decides.",
            "A rewrite of an `apply_patch` call (the patch cannot be rebuilt from an Edit): \
             refused as a deny that says so.",
            "A rewrite on PermissionRequest: refused as a deny naming the command to run \
             instead.",
            "Context on Stop, SubagentStop, PreCompact and PostCompact: shown to the user as \
             `systemMessage` where the event has one.",
            "Hooks run only once trusted by hash (`[hooks.state]` in `config.toml`); an \
             untrusted hook is skipped silently.",
            "A project's `.codex/hooks.json` is read only in a project Codex trusts (`codex \
             --trust`, or `[projects.\"<root>\"] trust_level = \"trusted\"` in `config.toml`); \
             in any other, Codex ignores the project's `.codex/` with one warning and no hook \
             runs; `capt-hook doctor` says whether it trusts this one. Install with `--user` to \
             guard untrusted projects.",
        ],
        config: "`~/.codex/hooks.json` (user) or `.codex/hooks.json` (project), Claude Code's \
                 shape; `timeout` in seconds",
        install: Some(Install {
            user: ".codex/hooks.json",
            user_env: Some(("CODEX_HOME", "hooks.json")),
            project: ".codex/hooks.json",
            // Seconds; above the client's own 30 s deadline, so the client answers first.
            format: ConfigFormat::Groups { timeout: 40 },
        }),
    }
}

/// Whether Codex's `config.toml` (its text) trusts the project at `root`: Codex reads a
/// project's `.codex/`, hooks included, only when `[projects."<root>"]` says `trust_level =
/// "trusted"` (what `codex --trust` writes); anywhere else it ignores them with one warning.
/// `root` matches as given or canonicalised. The error names what does not parse.
pub fn trusts_project(config: &str, root: &Path) -> Result<bool, AgentError> {
    let table: toml::Table = config
        .parse()
        .map_err(|e: toml::de::Error| AgentError::Config {
            path: "config.toml".into(),
            problem: format!("is not TOML: {}", e.message()),
        })?;
    let Some(projects) = table.get("projects") else {
        return Ok(false);
    };
    let projects = projects.as_table().ok_or_else(|| AgentError::Config {
        path: "projects".into(),
        problem: "is not a table".into(),
    })?;
    let canonical = root.canonicalize().ok();
    let names = std::iter::once(root).chain(canonical.as_deref());
    Ok(names.into_iter().any(|name| {
        projects
            .get(&name.display().to_string())
            .and_then(|p| p.get("trust_level"))
            .and_then(|t| t.as_str())
            == Some("trusted")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_is_trusted_only_by_its_own_entry() {
        let root = Path::new("/nonexistent/shop");
        let trusted = "[projects.\"/nonexistent/shop\"]\ntrust_level = \"trusted\"\n";
        assert_eq!(trusts_project(trusted, root), Ok(true));
        let other = "[projects.\"/nonexistent/other\"]\ntrust_level = \"trusted\"\n";
        assert_eq!(trusts_project(other, root), Ok(false));
        let untrusted = "[projects.\"/nonexistent/shop\"]\ntrust_level = \"untrusted\"\n";
        assert_eq!(trusts_project(untrusted, root), Ok(false));
        assert_eq!(trusts_project("model = \"x\"\n", root), Ok(false));
        assert!(trusts_project("projects = 3\n", root).is_err());
        assert!(trusts_project("[projects\n", root).is_err());
    }
}

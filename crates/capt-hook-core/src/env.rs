//! Every environment variable the engine reads, declared once.

/// The project root, set by Claude Code for hook commands.
pub const CLAUDE_PROJECT_DIR: &str = "CLAUDE_PROJECT_DIR";
/// The project root as Factory's droid sets it; read after `CLAUDE_PROJECT_DIR`.
pub const FACTORY_PROJECT_DIR: &str = "FACTORY_PROJECT_DIR";
/// Comma-separated subagent types that count as planning agents (replaces the default list).
pub const HOOKS_PLANNING_AGENTS: &str = "HOOKS_PLANNING_AGENTS";
/// `1`, `true` or `yes` adds the `raw` annotation to every event.
pub const CAPT_HOOK_CCX_RAW: &str = "CAPT_HOOK_CCX_RAW";
/// Root of session and durable state (default `~/.claude/state`).
pub const CAPTAIN_HOOK_STATE_DIR: &str = "CAPTAIN_HOOK_STATE_DIR";
/// Directory for log files (default: the platform's cache directory).
pub const CAPTAIN_HOOK_LOG_DIR: &str = "CAPTAIN_HOOK_LOG_DIR";

/// The subagent types skipped by hooks with `skip_planning_agents` when the setting is unset.
pub const DEFAULT_PLANNING_AGENTS: &[&str] = &[
    "Explore",
    "Plan",
    "general-purpose",
    "explore",
    "plan",
    "web-analyzer",
    "search-specialist",
    "claude-code-guide",
    "context-manager",
    "sentry-error-debugger",
    "logfire-trace-debugger",
    "sentry:issue-summarizer",
];

/// The planning agent list in effect.
pub fn planning_agents() -> Vec<String> {
    match std::env::var(HOOKS_PLANNING_AGENTS) {
        Ok(v) if !v.trim().is_empty() => v
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        _ => DEFAULT_PLANNING_AGENTS
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
    }
}

/// True when `CAPT_HOOK_CCX_RAW` asks for the `raw` annotation.
pub fn ccx_raw() -> bool {
    std::env::var(CAPT_HOOK_CCX_RAW).is_ok_and(|v| is_truthy(&v))
}

/// `1`, `true` or `yes`, in any case.
pub fn is_truthy(value: &str) -> bool {
    matches!(value.to_ascii_lowercase().as_str(), "1" | "true" | "yes")
}

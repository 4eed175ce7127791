//! The environment variables the engine reads. Their names, defaults and docs are owned by
//! `capt_hook_proto::env`; the parsing lives here.

pub use capt_hook_proto::env::{
    CAPT_HOOK_CCX_RAW, CAPT_HOOK_LOG, CAPT_HOOK_RUN_PACKS, CAPTAIN_HOOK_LOG_DIR,
    CAPTAIN_HOOK_STATE_DIR, CLAUDE_PROJECT_DIR, FACTORY_PROJECT_DIR, HOOKS_PLANNING_AGENTS,
    HOOKS_WAITING_TOOLS,
};

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

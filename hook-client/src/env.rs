//! Every environment variable `hook` reads, declared once. (The host socket's location comes
//! from `XDG_RUNTIME_DIR` and `HOME`, declared in `capt_hook_proto::paths`.)

use std::time::Duration;

/// Seconds (a float) one event may take in the client, host attempts and local fallback
/// together; default 30.
pub const CAPT_HOOK_CLIENT_TIMEOUT: &str = "CAPT_HOOK_CLIENT_TIMEOUT";
/// The project root, set by Claude Code for hook commands.
pub const CLAUDE_PROJECT_DIR: &str = "CLAUDE_PROJECT_DIR";
/// The project root as Factory's droid sets it; read after `CLAUDE_PROJECT_DIR`.
pub const FACTORY_PROJECT_DIR: &str = "FACTORY_PROJECT_DIR";

/// The default deadline.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The client's deadline: `Err` names a value that is not positive; an unparsable value falls
/// back to the default.
pub fn timeout() -> Result<Duration, String> {
    let Ok(raw) = std::env::var(CAPT_HOOK_CLIENT_TIMEOUT) else {
        return Ok(DEFAULT_TIMEOUT);
    };
    match raw.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s.min(86_400.0))),
        Ok(s) if s.is_finite() => Err(format!("request timeout {s}s must be positive")),
        _ => Ok(DEFAULT_TIMEOUT),
    }
}

/// The first non-empty of `CLAUDE_PROJECT_DIR` and `FACTORY_PROJECT_DIR`.
pub fn project_dir() -> Option<String> {
    [CLAUDE_PROJECT_DIR, FACTORY_PROJECT_DIR]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.is_empty())
}

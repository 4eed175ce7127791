//! How `hook` reads its environment variables; their names and meaning are declared once, in
//! [`capt_hook_proto::env`]. (The host socket's location comes from `XDG_RUNTIME_DIR` and
//! `HOME`, read in `capt_hook_proto::paths`.)

use std::time::Duration;

pub use capt_hook_proto::env::{CAPT_HOOK_CLIENT_TIMEOUT, CLAUDE_PROJECT_DIR, FACTORY_PROJECT_DIR};

/// The default deadline.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A `CAPT_HOOK_CLIENT_TIMEOUT` that is a number but not a positive one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BadTimeout(pub f64);

impl std::fmt::Display for BadTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "request timeout {}s must be positive", self.0)
    }
}

impl std::error::Error for BadTimeout {}

/// The client's deadline: `Err` names a value that is not positive; an unparsable value falls
/// back to the default.
pub fn timeout() -> Result<Duration, BadTimeout> {
    let Ok(raw) = std::env::var(CAPT_HOOK_CLIENT_TIMEOUT) else {
        return Ok(DEFAULT_TIMEOUT);
    };
    match raw.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s.min(86_400.0))),
        Ok(s) if s.is_finite() => Err(BadTimeout(s)),
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

//! What the session did before this event: the transcript, read lazily through a
//! process-wide cache, and the conditions that query it.

use std::sync::{Arc, OnceLock};

use capt_hook_shell::CommandLine;
use capt_hook_transcript::{CommandMatcher, ToolCall, Transcript, TranscriptCache};

use crate::tokens::Tokens;

pub use crate::env::HOOKS_WAITING_TOOLS;

/// A Bash call's parsed line, parsed once per call and kept with the call in the transcript
/// cache.
fn parsed(call: &ToolCall) -> capt_hook_transcript::Memo<'_, CommandLine> {
    call.memo(|c| CommandLine::parse(c.command().unwrap_or("")))
}

/// True when a Bash call ran a command these tokens match, seen as the `runs` condition sees
/// the current call (wrappers, runners and nesting included), except that package runners
/// (`uv run pytest`) are read literally (see [`Tokens::matches_ran`]).
pub fn call_runs(call: &ToolCall, tokens: &Tokens) -> bool {
    tokens.matches_ran(&parsed(call))
}

/// The matcher the transcript crate uses for its own `has_command` queries.
fn shell_matcher() -> Arc<dyn CommandMatcher> {
    Arc::new(|call: &ToolCall, argv: &[&str]| {
        Tokens::new(argv)
            .map(|t| call_runs(call, &t))
            .unwrap_or(false)
    })
}

/// The process-wide transcript cache: a worker re-reads only what was appended since the last
/// event of the same session.
pub fn transcripts() -> &'static TranscriptCache {
    static CACHE: OnceLock<TranscriptCache> = OnceLock::new();
    CACHE.get_or_init(|| {
        TranscriptCache::new(
            Some(shell_matcher()),
            capt_hook_transcript::DEFAULT_CACHE_FILES,
        )
    })
}

/// A transcript built from lines already in memory (inline tests, replay), with our matcher.
pub fn transcript_from_values<'a>(
    lines: impl IntoIterator<Item = &'a serde_json::Value>,
) -> Transcript {
    Transcript::from_values(lines).with_matcher(shell_matcher())
}

/// The tools whose use in the current turn means the session is waiting.
pub fn waiting_tools() -> Vec<String> {
    match std::env::var(HOOKS_WAITING_TOOLS) {
        Ok(v) if !v.trim().is_empty() => v
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        _ => capt_hook_transcript::DEFAULT_WAITING_TOOLS
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
    }
}

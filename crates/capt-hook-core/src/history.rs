//! What the session did before this event: the transcript, read lazily through a
//! process-wide cache, and the conditions that query it.

use std::sync::{Arc, OnceLock};

use capt_hook_shell::CommandLine;
use capt_hook_transcript::{CommandMatcher, ToolCall, Transcript, TranscriptCache};

use crate::tokens::Tokens;

pub use crate::env::HOOKS_WAITING_TOOLS;

/// The unwrapped argv of every command a Bash call ran, nested ones included; parsed once per
/// call and kept with the call in the transcript cache.
#[derive(Debug, Default)]
struct Argvs(Vec<Vec<String>>);

fn argvs(call: &ToolCall) -> capt_hook_transcript::Memo<'_, Argvs> {
    call.memo(|c| {
        let line = CommandLine::parse(c.command().unwrap_or(""));
        Argvs(
            line.commands()
                .map(|cmd| cmd.unwrapped().into_iter().map(str::to_owned).collect())
                .filter(|argv: &Vec<String>| !argv.is_empty())
                .collect(),
        )
    })
}

/// True when a Bash call ran a command whose unwrapped argv starts with `tokens`.
pub fn call_runs(call: &ToolCall, tokens: &Tokens) -> bool {
    let memo = argvs(call);
    memo.0.iter().any(|argv| {
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        tokens.is_prefix_of(&words)
    })
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

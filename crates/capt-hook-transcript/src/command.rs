//! Deciding whether a Bash call "ran" a command. The exact answer needs a real shell parser,
//! which lives in another crate; the engine plugs it in through [`CommandMatcher`], and this
//! crate only ships an approximate fallback for standalone use.

use crate::entry::ToolCall;

/// Decides whether a Bash call ran a command whose argv (wrappers such as `sudo`, `env`,
/// `timeout` stripped) starts with the given tokens.
///
/// The engine implements it with its shell parser, typically caching the parsed line on the call
/// with [`ToolCall::memo`] so each command line is parsed once per worker:
///
/// ```ignore
/// let matcher = |call: &ToolCall, argv: &[&str]| {
///     let line = call.memo(|c| CommandLine::parse(c.command().unwrap_or("")));
///     line.commands().any(|c| c.unwrapped().starts_with(argv))
/// };
/// ```
pub trait CommandMatcher: Send + Sync {
    /// True when `call` (a Bash call) ran a command whose unwrapped argv starts with `argv`.
    fn runs(&self, call: &ToolCall, argv: &[&str]) -> bool;
}

impl<F> CommandMatcher for F
where
    F: Fn(&ToolCall, &[&str]) -> bool + Send + Sync,
{
    fn runs(&self, call: &ToolCall, argv: &[&str]) -> bool {
        self(call, argv)
    }
}

/// Wrapper programs whose arguments name the program that really runs.
const WRAPPERS: &[&str] = &[
    "command", "doas", "env", "exec", "nice", "nohup", "sudo", "time", "timeout", "xargs",
];

/// Wrapper options that take a separate value (`sudo -u root`, `timeout -s KILL`).
const VALUE_FLAGS: &[&str] = &[
    "-u", "-g", "-s", "-k", "-n", "-C", "-D", "-h", "-p", "-I", "-L",
];

/// The fallback used when no matcher is plugged in: splits the line on `;`, `&`, `|`, newlines
/// and parentheses outside quotes, removes one layer of quotes, drops `NAME=value` prefixes and
/// leading wrappers, and compares argv prefixes. It does not look inside `$(…)`, `sh -c '…'` or
/// heredocs; the engine's shell parser does.
#[derive(Clone, Copy, Debug, Default)]
pub struct SplitMatcher;

impl CommandMatcher for SplitMatcher {
    fn runs(&self, call: &ToolCall, argv: &[&str]) -> bool {
        if argv.is_empty() || call.command().is_none() {
            return false;
        }
        let argvs = call.memo(|c| split_argvs(c.command().unwrap_or("")));
        argvs
            .iter()
            .any(|words| words.len() >= argv.len() && words.iter().zip(argv).all(|(a, b)| a == b))
    }
}

/// The argv of each simple command in `line` as [`SplitMatcher`] sees it: split on operators,
/// one quote layer removed, `NAME=value` prefixes and wrappers dropped.
pub fn split_argvs(line: &str) -> Vec<Vec<String>> {
    simple_commands(line)
        .iter()
        .map(|words| {
            unwrap(words)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|argv| !argv.is_empty())
        .collect()
}

/// The words of each simple command in `line`, one quote layer removed.
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let finish_word = |words: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                if !matches!(n, '"' | '\\' | '$' | '`') {
                                    word.push('\\');
                                }
                                word.push(n);
                            }
                        }
                        q => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next()
                    && n != '\n'
                {
                    word.push(n);
                }
            }
            '#' if !in_word => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                finish_word(&mut words, &mut word, &mut in_word);
                commands.push(std::mem::take(&mut words));
            }
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                finish_word(&mut words, &mut word, &mut in_word);
                commands.push(std::mem::take(&mut words));
            }
            c if c.is_whitespace() => finish_word(&mut words, &mut word, &mut in_word),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    finish_word(&mut words, &mut word, &mut in_word);
    commands.push(words);
    commands.retain(|w| !w.is_empty());
    commands
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Drops `NAME=value` prefixes and leading wrappers with their options and values.
fn unwrap(words: &[String]) -> Vec<&str> {
    let mut rest: Vec<&str> = words.iter().map(String::as_str).collect();
    loop {
        while rest.first().is_some_and(|w| is_assignment(w)) {
            rest.remove(0);
        }
        let Some(first) = rest.first() else {
            return rest;
        };
        let program = first.rsplit('/').next().unwrap_or(first);
        if !WRAPPERS.contains(&program) {
            return rest;
        }
        let is_timeout = program == "timeout";
        rest.remove(0);
        while let Some(w) = rest.first() {
            if *w == "--" {
                rest.remove(0);
                break;
            }
            if w.starts_with('-') {
                let takes_value = VALUE_FLAGS.contains(w);
                rest.remove(0);
                if takes_value && !rest.is_empty() {
                    rest.remove(0);
                }
            } else if is_assignment(w) || w.chars().all(|c| c.is_ascii_digit()) {
                rest.remove(0);
            } else {
                break;
            }
        }
        if is_timeout && !rest.is_empty() {
            // timeout's DURATION (`5`, `10s`, `1.5m`).
            if rest[0].starts_with(|c: char| c.is_ascii_digit()) {
                rest.remove(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(line: &str, argv: &[&str]) -> bool {
        simple_commands(line)
            .iter()
            .any(|w| unwrap(w).starts_with(argv))
    }

    #[test]
    fn wrappers_and_prefixes_are_stripped_but_launchers_are_literal() {
        assert!(runs("env PYTHONPATH=src pytest -q", &["pytest"]));
        assert!(runs("sudo pytest -q tests/", &["pytest"]));
        assert!(runs("sudo -u root timeout -s KILL 30 pytest", &["pytest"]));
        assert!(runs("cd backend && pytest -x", &["pytest"]));
        assert!(runs("FOO=1 ruff check src/ | tee log", &["ruff", "check"]));
        assert!(!runs("uv run pytest -q", &["pytest"]));
        assert!(!runs("python -m pytest -q", &["pytest"]));
        assert!(!runs("echo \"run pytest later\"", &["pytest"]));
        assert!(!runs("# pytest", &["pytest"]));
        assert!(runs("'ruff' \"check\"", &["ruff", "check"]));
        assert!(!runs("ruff checker", &["ruff", "check"]));
    }
}

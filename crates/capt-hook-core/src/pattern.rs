//! Regular expressions written for Python's `re.search`.
//!
//! Patterns the linear-time `regex` crate accepts run on it; patterns that need look-around or
//! back-references fall back to `fancy-regex` with a backtracking limit, so a hostile pattern
//! costs bounded time instead of hanging the hook.

use std::fmt;

/// The backtracking budget for `fancy-regex` patterns; beyond it a search counts as no match.
const BACKTRACK_LIMIT: usize = 1_000_000;

/// A compiled search pattern.
#[derive(Clone)]
pub struct Pattern {
    source: String,
    engine: Engine,
}

#[derive(Clone)]
enum Engine {
    Linear(regex::Regex),
    Backtracking(fancy_regex::Regex),
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pattern({:?})", self.source)
    }
}

/// A pattern that compiles on neither engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid regex `{pattern}`: {reason}")]
pub struct PatternError {
    /// The pattern as written.
    pub pattern: String,
    /// The compiler's explanation.
    pub reason: String,
}

/// How a pattern treats `^` and `$`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `^`/`$` anchor the whole text (Python's default).
    Plain,
    /// `^`/`$` anchor each line (Python's `re.MULTILINE`).
    Multiline,
    /// Case-insensitive, whole text.
    IgnoreCase,
}

impl Pattern {
    /// Compiles `source` as Python would read it.
    pub fn new(source: &str, mode: Mode) -> Result<Pattern, PatternError> {
        let translated = translate(source);
        let flagged = match mode {
            Mode::Plain => translated,
            Mode::Multiline => format!("(?m){translated}"),
            Mode::IgnoreCase => format!("(?i){translated}"),
        };
        let engine = match regex::Regex::new(&flagged) {
            Ok(r) => Engine::Linear(r),
            Err(linear_err) => {
                let fancy = fancy_regex::RegexBuilder::new(&flagged)
                    .backtrack_limit(BACKTRACK_LIMIT)
                    .build()
                    .map_err(|e| PatternError {
                        pattern: source.to_owned(),
                        // The linear engine's message is usually the clearer one when both fail.
                        reason: first_line(&if matches!(e, fancy_regex::Error::ParseError(..)) {
                            linear_err.to_string()
                        } else {
                            e.to_string()
                        }),
                    })?;
                Engine::Backtracking(fancy)
            }
        };
        Ok(Pattern {
            source: source.to_owned(),
            engine,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True when the pattern is found anywhere in `text`.
    pub fn is_match(&self, text: &str) -> bool {
        match &self.engine {
            Engine::Linear(r) => r.is_match(text),
            Engine::Backtracking(r) => r.is_match(text).unwrap_or(false),
        }
    }

    /// Replaces every match, reading `replacement` in either Python (`\1`, `\g<name>`) or Rust
    /// (`$1`, `${name}`) syntax. Returns `None` when the backtracking budget ran out.
    pub fn replace_all(&self, text: &str, replacement: &str) -> Option<String> {
        let template = python_template(replacement);
        match &self.engine {
            Engine::Linear(r) => Some(r.replace_all(text, template.as_str()).into_owned()),
            Engine::Backtracking(r) => r
                .try_replacen(text, 0, template.as_str())
                .ok()
                .map(|c| c.into_owned()),
        }
    }
}

fn first_line(s: &str) -> String {
    let lines: Vec<&str> = s
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    let last = lines.last().copied().unwrap_or(s).trim();
    last.strip_prefix("error: ").unwrap_or(last).to_owned()
}

/// Rewrites Python-only syntax to the equivalent the Rust engines understand.
fn translate(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                // Python's `\Z` is the absolute end of text.
                Some('Z') => out.push_str("\\z"),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Turns a Python `re.sub` template into a Rust one: `\1` / `\g<1>` / `\g<name>` become
/// `${1}` / `${name}`, a literal `$` is escaped, and Rust's own `$1` / `${name}` pass through.
fn python_template(repl: &str) -> String {
    let mut out = String::with_capacity(repl.len());
    let chars: Vec<char> = repl.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let n = chars[i + 1];
            if n.is_ascii_digit() {
                let mut j = i + 1;
                while j < chars.len() && chars[j].is_ascii_digit() && j < i + 3 {
                    j += 1;
                }
                let group: String = chars[i + 1..j].iter().collect();
                out.push_str(&format!("${{{group}}}"));
                i = j;
                continue;
            }
            if n == 'g'
                && chars.get(i + 2) == Some(&'<')
                && let Some(end) = chars[i + 3..].iter().position(|&ch| ch == '>')
            {
                {
                    let name: String = chars[i + 3..i + 3 + end].iter().collect();
                    out.push_str(&format!("${{{name}}}"));
                    i = i + 3 + end + 1;
                    continue;
                }
            }
            let escaped = match n {
                'n' => Some('\n'),
                't' => Some('\t'),
                'r' => Some('\r'),
                '\\' => Some('\\'),
                _ => None,
            };
            if let Some(e) = escaped {
                out.push(e);
                i += 2;
                continue;
            }
            out.push('\\');
            i += 1;
            continue;
        }
        if c == '$' {
            // Keep Rust-style group references; escape any other dollar.
            let next = chars.get(i + 1).copied();
            let is_ref = matches!(next, Some(d) if d.is_ascii_digit() || d == '{');
            if is_ref {
                out.push('$');
            } else {
                out.push_str("$$");
            }
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_and_lookaround_patterns_search() {
        let p = Pattern::new(r"git\s+stash", Mode::Plain).unwrap();
        assert!(p.is_match("cd x && git  stash pop"));
        let look = Pattern::new(r"--force\b(?!-)", Mode::Plain).unwrap();
        assert!(look.is_match("git push --force"));
        assert!(!look.is_match("git push --force-with-lease"));
        assert!(Pattern::new(r"a\Z", Mode::Plain).unwrap().is_match("ba"));
    }

    #[test]
    fn bad_patterns_are_errors() {
        let err = Pattern::new("(unclosed", Mode::Plain).unwrap_err();
        assert_eq!(err.pattern, "(unclosed");
        assert!(!err.reason.is_empty());
    }

    #[test]
    fn python_and_rust_templates() {
        let p = Pattern::new(r"^cat\s+(\S+)$", Mode::Plain).unwrap();
        assert_eq!(p.replace_all("cat x", r"bat \1").unwrap(), "bat x");
        assert_eq!(p.replace_all("cat x", r"bat \g<1>!").unwrap(), "bat x!");
        assert_eq!(
            p.replace_all("cat x", "bat $1 $HOME").unwrap(),
            "bat x $HOME"
        );
        let named = Pattern::new(r"(?P<f>\w+)\.txt", Mode::Plain).unwrap();
        assert_eq!(named.replace_all("a.txt", r"\g<f>.md").unwrap(), "a.md");
        let look = Pattern::new(r"git push --force\b(?!-)", Mode::Plain).unwrap();
        assert_eq!(
            look.replace_all("git push --force", "git push --force-with-lease")
                .unwrap(),
            "git push --force-with-lease"
        );
    }
}

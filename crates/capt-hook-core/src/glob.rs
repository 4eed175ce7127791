//! Globs with Python `fnmatch` semantics: `*` crosses `/`, `?` is one character, `[seq]` and
//! `[!seq]` are classes (an unclosed `[` is literal), everything else is literal, and the match
//! is anchored at both ends. A path matches when its whole text or its basename matches.

use regex::Regex;

/// A compiled glob.
#[derive(Debug, Clone)]
pub struct Glob {
    source: String,
    regex: Regex,
}

/// A glob that could not be compiled (only possible through a pathological class).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid glob `{glob}`: {reason}")]
pub struct GlobError {
    /// The glob as written.
    pub glob: String,
    /// Why it failed.
    pub reason: String,
}

impl Glob {
    /// Compiles `glob` once, so matching costs one regex run.
    pub fn new(glob: &str) -> Result<Glob, GlobError> {
        let pattern = translate(glob);
        let regex = Regex::new(&pattern).map_err(|e| GlobError {
            glob: glob.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(Glob {
            source: glob.to_owned(),
            regex,
        })
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Anchored match of the whole text.
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }

    /// True when the whole path or its basename matches.
    pub fn matches_path(&self, path: &str) -> bool {
        self.is_match(path) || self.is_match(basename(path))
    }
}

/// The part after the last `/` (the whole text when there is none).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Translates an fnmatch glob to an anchored regex, the way Python's `fnmatch.translate` reads
/// it: classes are copied with `!` turned into `^`, and a `[` without a closing `]` is literal.
fn translate(glob: &str) -> String {
    let chars: Vec<char> = glob.chars().collect();
    let mut out = String::from("(?s)^");
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '*' => {
                // Consecutive stars mean the same as one.
                while i < chars.len() && chars[i] == '*' {
                    i += 1;
                }
                out.push_str(".*");
            }
            '?' => out.push('.'),
            '[' => {
                let mut j = i;
                if j < chars.len() && chars[j] == '!' {
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    out.push_str("\\[");
                } else {
                    let body: String = chars[i..j].iter().collect();
                    i = j + 1;
                    let (negate, body) = match body.strip_prefix('!') {
                        Some(rest) => (true, rest.to_owned()),
                        None => (false, body),
                    };
                    out.push('[');
                    if negate {
                        out.push('^');
                    }
                    for (k, ch) in body.chars().enumerate() {
                        match ch {
                            // A leading `]` is a member; elsewhere these need escaping for
                            // the regex crate's class syntax.
                            '\\' | '[' | '&' | '~' | '^' => {
                                out.push('\\');
                                out.push(ch);
                            }
                            ']' if k == 0 => out.push_str("\\]"),
                            '-' => out.push('-'),
                            _ => out.push(ch),
                        }
                    }
                    out.push(']');
                }
            }
            _ => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out.push('$');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(glob: &str, path: &str) -> bool {
        Glob::new(glob).unwrap().matches_path(path)
    }

    #[test]
    fn star_crosses_slashes_and_basename_counts() {
        assert!(m("*.py", "a/b/c.py"));
        assert!(m("docs/*.md", "docs/a/b.md"));
        assert!(m("*src/*.py", "/home/me/proj/src/deep/x.py"));
        assert!(!m("src/*.py", "/home/me/proj/src/a.py"));
        assert!(m("**/src/*.py", "/home/me/proj/src/a.py"));
    }

    #[test]
    fn double_star_needs_a_slash() {
        assert!(m("**/foo.py", "src/foo.py"));
        assert!(m("**/foo.py", "/abs/src/foo.py"));
        assert!(!m("**/foo.py", "foo.py"));
    }

    #[test]
    fn classes_question_marks_and_literals() {
        assert!(m("file?.txt", "file1.txt"));
        assert!(!m("file?.txt", "file10.txt"));
        assert!(m("[ab].rs", "a.rs"));
        assert!(!m("[!ab].rs", "a.rs"));
        assert!(m("[!ab].rs", "c.rs"));
        assert!(m("x[.rs", "x[.rs"));
        assert!(m("a+b(1).txt", "a+b(1).txt"));
        assert!(!m("*.PY", "a.py"));
        assert!(m("**/.env*", "/p/.env.local"));
    }
}

//! Globs with Python `fnmatch` semantics, the rules `touching`, `has_edit_to` and `read_file`
//! use: the whole text must match; `*` matches any run of characters including `/` (so `**` is
//! just two stars); `?` matches one character; `[seq]` / `[!seq]` are classes with `a-z` ranges
//! (an unclosed `[` is literal); everything else is literal and case-sensitive. A path matches
//! when its whole text or its basename does.

/// A parsed glob. Parsing never fails: every string is a valid fnmatch pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    source: String,
    tokens: Vec<Token>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Literal(char),
    AnyChar,
    Star,
    Class {
        negate: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Token {
    fn matches(&self, c: char) -> bool {
        match self {
            Token::Literal(l) => *l == c,
            Token::AnyChar => true,
            Token::Star => true,
            Token::Class { negate, ranges } => {
                ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negate
            }
        }
    }
}

impl Glob {
    /// Parses `pattern`.
    pub fn new(pattern: &str) -> Glob {
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            i += 1;
            match c {
                '*' => {
                    if tokens.last() != Some(&Token::Star) {
                        tokens.push(Token::Star);
                    }
                }
                '?' => tokens.push(Token::AnyChar),
                '[' => match parse_class(&chars, i) {
                    Some((token, next)) => {
                        tokens.push(token);
                        i = next;
                    }
                    None => tokens.push(Token::Literal('[')),
                },
                c => tokens.push(Token::Literal(c)),
            }
        }
        Glob {
            source: pattern.to_owned(),
            tokens,
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True when the whole of `text` matches.
    pub fn is_match(&self, text: &str) -> bool {
        // Classic wildcard matching: every token but `*` consumes exactly one character, so on a
        // mismatch it suffices to let the most recent `*` absorb one more character and retry.
        let text: Vec<char> = text.chars().collect();
        let (mut p, mut t) = (0usize, 0usize);
        let mut retry: Option<(usize, usize)> = None;
        while t < text.len() {
            match self.tokens.get(p) {
                Some(Token::Star) => {
                    retry = Some((p + 1, t));
                    p += 1;
                    continue;
                }
                Some(tok) if tok.matches(text[t]) => {
                    p += 1;
                    t += 1;
                    continue;
                }
                _ => {}
            }
            match retry {
                Some((after_star, absorbed)) => {
                    retry = Some((after_star, absorbed + 1));
                    p = after_star;
                    t = absorbed + 1;
                }
                None => return false,
            }
        }
        self.tokens[p..].iter().all(|tok| *tok == Token::Star)
    }

    /// True when the whole path or its basename matches.
    pub fn matches_path(&self, path: &str) -> bool {
        self.is_match(path) || self.is_match(basename(path))
    }
}

/// Parses a class whose `[` was just consumed (`start` is the index after it), the way
/// Python's `fnmatch.translate` does: a `!` negates, a `]` right after `[` or `[!` is a member,
/// and without a closing `]` there is no class at all.
fn parse_class(chars: &[char], start: usize) -> Option<(Token, usize)> {
    let mut j = start;
    if chars.get(j) == Some(&'!') {
        j += 1;
    }
    if chars.get(j) == Some(&']') {
        j += 1;
    }
    while j < chars.len() && chars[j] != ']' {
        j += 1;
    }
    if j >= chars.len() {
        return None;
    }
    let mut body = &chars[start..j];
    let negate = body.first() == Some(&'!');
    if negate {
        body = &body[1..];
    }
    let mut ranges = Vec::new();
    let mut k = 0;
    while k < body.len() {
        if k + 2 < body.len() && body[k + 1] == '-' {
            // A reversed range (`z-a`) matches nothing, as in Python.
            ranges.push((body[k], body[k + 2]));
            k += 3;
        } else {
            ranges.push((body[k], body[k]));
            k += 1;
        }
    }
    Some((Token::Class { negate, ranges }, j + 1))
}

/// The part after the last `/` (the whole text when there is none).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// True when `path` matches any of `globs` (whole path or basename).
pub fn matches_any(globs: &[Glob], path: &str) -> bool {
    globs.iter().any(|g| g.matches_path(path))
}

/// Anything that names a set of globs: one pattern, a list of patterns, or compiled [`Glob`]s.
pub trait IntoGlobs {
    /// The globs.
    fn into_globs(self) -> Vec<Glob>;
}

impl IntoGlobs for &str {
    fn into_globs(self) -> Vec<Glob> {
        vec![Glob::new(self)]
    }
}

impl IntoGlobs for String {
    fn into_globs(self) -> Vec<Glob> {
        vec![Glob::new(&self)]
    }
}

impl<S: AsRef<str>> IntoGlobs for &[S] {
    fn into_globs(self) -> Vec<Glob> {
        self.iter().map(|s| Glob::new(s.as_ref())).collect()
    }
}

impl<S: AsRef<str>, const N: usize> IntoGlobs for [S; N] {
    fn into_globs(self) -> Vec<Glob> {
        self.iter().map(|s| Glob::new(s.as_ref())).collect()
    }
}

impl<S: AsRef<str>> IntoGlobs for Vec<S> {
    fn into_globs(self) -> Vec<Glob> {
        self.iter().map(|s| Glob::new(s.as_ref())).collect()
    }
}

impl<S: AsRef<str>> IntoGlobs for &Vec<S> {
    fn into_globs(self) -> Vec<Glob> {
        self.iter().map(|s| Glob::new(s.as_ref())).collect()
    }
}

impl IntoGlobs for &[Glob] {
    fn into_globs(self) -> Vec<Glob> {
        self.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(glob: &str, path: &str) -> bool {
        Glob::new(glob).matches_path(path)
    }

    #[test]
    fn star_crosses_slashes_and_basename_counts() {
        assert!(m("*.py", "a/b/c.py"));
        assert!(m("test_*.py", "/repo/tests/test_app.py"));
        assert!(m("docs/*.md", "docs/a/b.md"));
        assert!(m("**/docs/*.md", "/r/docs/guide/conventions.md"));
        assert!(!m("src/*.py", "/home/me/proj/src/a.py"));
        assert!(m("**/src/*.py", "/home/me/proj/src/a.py"));
        assert!(m("**/src/components/**", "/r/src/components/Button.tsx"));
        assert!(!m("**/api/*.py", "/r/app/apis/x.txt"));
    }

    #[test]
    fn double_star_needs_a_slash() {
        assert!(m("**/foo.py", "src/foo.py"));
        assert!(!m("**/foo.py", "foo.py"));
    }

    #[test]
    fn classes_question_marks_and_literals() {
        assert!(m("file?.txt", "file1.txt"));
        assert!(!m("file?.txt", "file10.txt"));
        assert!(m("[ab].rs", "a.rs"));
        assert!(!m("[!ab].rs", "a.rs"));
        assert!(m("[!ab].rs", "c.rs"));
        assert!(m("[a-c]x", "bx"));
        assert!(!m("[z-a]x", "bx"));
        assert!(m("[!z-a]x", "bx"));
        assert!(m("[]]x", "]x"));
        assert!(m("[!]]x", "ax"));
        assert!(m("[a-]x", "-x"));
        assert!(m("x[.rs", "x[.rs"));
        assert!(m("[!].rs", "[!].rs"));
        assert!(m("a+b(1).txt", "a+b(1).txt"));
        assert!(!m("*.PY", "a.py"));
        assert!(m("**/.env*", "/p/.env.local"));
        assert!(m("*", ""));
        assert!(!m("?", ""));
        assert!(m("é?", "éa"));
    }

    #[test]
    fn backtracking_stays_correct() {
        assert!(m("*a*b*c", "xxaxxbxxbxxc"));
        assert!(!m("*a*b*c", "xxaxxbxxbxx"));
        assert!(m("a*", "a"));
        assert!(!m("a*b", "a"));
        let long = "a".repeat(2000);
        assert!(!Glob::new("*a*a*a*a*a*b").is_match(&long));
    }
}

//! Regular expressions written for Python's `re.search`.
//!
//! Patterns the linear-time `regex` crate accepts run on it; patterns that need look-around or
//! back-references fall back to `fancy-regex` with a backtracking limit, so a hostile pattern
//! costs bounded time instead of hanging the hook.
//!
//! A project loads many patterns and most of them never see text they could match. So a pattern
//! the linear engine reads is only parsed when it is loaded (that is what finds its errors), and
//! compiled the first time a search gets past its literal prefilter: the literals one of which
//! every match starts with. A line without them is answered by a substring search, and a worker
//! starts without compiling patterns its first events never reach. What the parse finds is kept
//! per project for the next worker of the same build ([`FactsCache`]), which does not parse again.

use std::cell::Cell;
use std::fmt;
use std::sync::{Arc, OnceLock};

use memchr::memmem::Finder;
use regex_syntax::hir::literal::Extractor;
use regex_syntax::hir::{Class, Hir, HirKind, Look};

mod facts;
use facts::Facts;
pub use facts::{FactsCache, install as install_facts_cache, installed as installed_facts_cache};

/// The backtracking budget for `fancy-regex` patterns; beyond it a search counts as no match.
const BACKTRACK_LIMIT: usize = 1_000_000;
/// Patterns whose syntax tree weighs more than this (about one NFA state per unit) compile when
/// loaded: a compile that could hit the `regex` crate's size limit must fail at load, not later.
const LAZY_WEIGHT: usize = 20_000;
/// More prefix literals than this make the prefilter no cheaper than the regex itself.
const MAX_LITERALS: usize = 8;
/// Literals every match holds beyond its start (`cargo\s+\S+\s+push` holds `push`): a few
/// substring searches are cheaper than one search on the compiled regex.
const MAX_REQUIRED: usize = 3;

thread_local! {
    /// Set while [`deferred`] runs on this thread.
    static DEFER: Cell<bool> = const { Cell::new(false) };
}

/// Runs `load` with every pattern it creates compiled on first use, those needing the
/// backtracking engine included. Compiling look-around patterns is most of the cost of loading
/// the builtin packs (a millisecond of every worker's start), and their patterns are known to
/// compile: their tests load them the ordinary way. Only for such sources: a pattern deferred
/// here that then failed to compile would search as "no match" instead of failing its load.
pub fn deferred<R>(load: impl FnOnce() -> R) -> R {
    /// Restores the flag even if `load` panics.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEFER.set(self.0);
        }
    }
    let _restore = Restore(DEFER.replace(true));
    load()
}

/// A compiled search pattern.
#[derive(Clone)]
pub struct Pattern {
    source: String,
    /// The pattern as the engines read it (Python syntax translated, mode flags prepended).
    flagged: Arc<str>,
    /// Every match starts with one of these; `None` when no short list says so.
    prefixes: Option<Arc<[Finder<'static>]>>,
    /// Every match contains all of these (longest first); empty when none is known.
    required: Arc<[Finder<'static>]>,
    /// Its only assertions are word boundaries (see [`Pattern::is_edge_neutral`]).
    edge_neutral: bool,
    /// Built on first use for patterns the linear engine parsed; shared by clones.
    engine: Arc<OnceLock<Engine>>,
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
    /// Compiles `source` as Python would read it. A pattern the linear engine parses is
    /// checked now and compiled on first use; any other is compiled now. In a process with a
    /// [`FactsCache`] installed, a pattern the cache knows (this build parsed it before) is
    /// not parsed again.
    pub fn new(source: &str, mode: Mode) -> Result<Pattern, PatternError> {
        Pattern::with_facts(source, mode, facts::installed())
    }

    /// [`Pattern::new`], with the facts of a pattern `cache` knows taken from it instead of
    /// parsed, and those it does not know recorded into it.
    fn with_facts(
        source: &str,
        mode: Mode,
        cache: Option<&FactsCache>,
    ) -> Result<Pattern, PatternError> {
        let translated = translate(source);
        let flagged: Arc<str> = match mode {
            Mode::Plain => translated,
            Mode::Multiline => format!("(?m){translated}"),
            Mode::IgnoreCase => format!("(?i){translated}"),
        }
        .into();
        let known = cache.and_then(|c| c.get(&flagged));
        let parsed;
        let facts = match known {
            Some(f) => f,
            None => {
                parsed = Facts::of(&flagged);
                &parsed
            }
        };
        let pattern = Pattern {
            source: source.to_owned(),
            prefixes: facts.prefixes.as_deref().map(finders),
            required: finders(&facts.required),
            edge_neutral: facts.edge_neutral,
            engine: Arc::new(OnceLock::new()),
            flagged,
        };
        if !facts.lazy && !DEFER.get() {
            let engine = compile(source, &pattern.flagged)?;
            let _ = pattern.engine.set(engine);
        }
        // Only a pattern that loaded: one that failed is parsed again, and fails again.
        if let (Some(cache), None) = (cache, known) {
            cache.learn(&pattern.flagged, facts);
        }
        Ok(pattern)
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True when the pattern's only assertions are word boundaries (no `^`, `$`, `\A`, `\z`,
    /// no look-around): then a match in a stretch of some text whose neighbours are not word
    /// characters is a match in the whole text, because every assertion sees the same
    /// characters either way.
    pub fn is_edge_neutral(&self) -> bool {
        self.edge_neutral
    }

    /// False only when the pattern matches nowhere in `text`, nor in any piece of it: none of
    /// the literals every match starts with occurs in it, or a literal every match holds does
    /// not. One search over several texts joined together turns a pattern away from all of
    /// them at once.
    pub fn may_match(&self, text: &str) -> bool {
        let text = text.as_bytes();
        self.prefixes
            .as_ref()
            .is_none_or(|prefixes| prefixes.iter().any(|f| f.find(text).is_some()))
            && self.required.iter().all(|f| f.find(text).is_some())
    }

    /// True when the pattern is found anywhere in `text`.
    pub fn is_match(&self, text: &str) -> bool {
        if !self.may_match(text) {
            return false;
        }
        match self.engine() {
            Some(Engine::Linear(r)) => r.is_match(text),
            Some(Engine::Backtracking(r)) => r.is_match(text).unwrap_or(false),
            None => false,
        }
    }

    /// Replaces every match, reading `replacement` in either Python (`\1`, `\g<name>`) or Rust
    /// (`$1`, `${name}`) syntax. Returns `None` when the backtracking budget ran out.
    pub fn replace_all(&self, text: &str, replacement: &str) -> Option<String> {
        let template = python_template(replacement);
        match self.engine() {
            Some(Engine::Linear(r)) => Some(r.replace_all(text, template.as_str()).into_owned()),
            Some(Engine::Backtracking(r)) => r
                .try_replacen(text, 0, template.as_str())
                .ok()
                .map(|c| c.into_owned()),
            None => None,
        }
    }

    /// The compiled engine, built now if this is its first use. `None` only if a pattern that
    /// parsed failed to compile, which the weight bound at load rules out.
    fn engine(&self) -> Option<&Engine> {
        if let Some(e) = self.engine.get() {
            return Some(e);
        }
        let built = compile(&self.source, &self.flagged).ok()?;
        Some(self.engine.get_or_init(|| built))
    }
}

/// Compiles on the linear engine, else on the backtracking one.
fn compile(source: &str, flagged: &str) -> Result<Engine, PatternError> {
    match regex::Regex::new(flagged) {
        Ok(r) => Ok(Engine::Linear(r)),
        Err(linear_err) => {
            let fancy = fancy_regex::RegexBuilder::new(flagged)
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
            Ok(Engine::Backtracking(fancy))
        }
    }
}

/// A bound on the size of the automaton `hir` compiles to, in about NFA states: a class costs
/// a few states per range (its UTF-8 sequences), a counted repetition one copy per count.
/// `re` with its look-around groups (`(?=…)`, `(?!…)`, `(?<=…)`, `(?<!…)`) removed: a pattern
/// that matches every span `re` matches. `None` when that cannot be said with confidence:
/// unbalanced syntax, or the `x` flag (whose comments may hold unbalanced parentheses).
fn without_lookaround(re: &str) -> Option<String> {
    let mut out = String::with_capacity(re.len());
    let mut rest = re;
    while let Some(c) = rest.chars().next() {
        let len = if c == '(' && rest[1..].starts_with('?') {
            let after = &rest[2..];
            if ["=", "!", "<=", "<!"].iter().any(|l| after.starts_with(l)) {
                // Dropped whole, nested groups included.
                rest = &rest[group_len(rest)?..];
                continue;
            }
            let flags = &after[..after.find([':', ')'])?];
            let is_flags = flags.chars().all(|c| c.is_ascii_alphabetic() || c == '-');
            if is_flags && flags.contains('x') {
                return None;
            }
            1
        } else {
            token_len(rest)?
        };
        out.push_str(&rest[..len]);
        rest = &rest[len..];
    }
    Some(out)
}

/// The length of the token `re` starts with: an escape, a whole character class, or one
/// character. Parentheses are tokens of their own.
fn token_len(re: &str) -> Option<usize> {
    let mut chars = re.char_indices();
    match chars.next()? {
        (_, '\\') => chars.next().map(|(i, c)| i + c.len_utf8()),
        (_, '[') => {
            // A `]` first (after an optional `^`) is a member, not the end.
            let mut depth = 1;
            let mut at = 1 + usize::from(re[1..].starts_with('^'));
            if re[at..].starts_with(']') {
                at += 1;
            }
            while depth > 0 {
                let next = &re[at..];
                match next.chars().next()? {
                    '\\' => at += token_len(next)?,
                    '[' => {
                        depth += 1;
                        at += 1;
                    }
                    ']' => {
                        depth -= 1;
                        at += 1;
                    }
                    c => at += c.len_utf8(),
                }
            }
            Some(at)
        }
        (_, c) => Some(c.len_utf8()),
    }
}

/// The length of the group `re` starts with (at its `(`), through its matching `)`.
fn group_len(re: &str) -> Option<usize> {
    let mut depth = 0;
    let mut at = 0;
    loop {
        let next = &re[at..];
        match next.chars().next()? {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        at += token_len(next)?;
    }
}

fn weight(hir: &Hir) -> usize {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 1,
        HirKind::Literal(lit) => lit.0.len(),
        HirKind::Class(Class::Unicode(c)) => c.ranges().len().saturating_mul(8) + 1,
        HirKind::Class(Class::Bytes(c)) => c.ranges().len() + 1,
        HirKind::Repetition(r) => {
            let copies = r.max.unwrap_or(r.min).max(1) as usize + 1;
            weight(&r.sub).saturating_mul(copies)
        }
        HirKind::Capture(c) => weight(&c.sub).saturating_add(2),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs
            .iter()
            .map(weight)
            .fold(subs.len(), usize::saturating_add),
    }
}

/// The literals one of which every match of `hir` starts with, when there are a few and none
/// is empty.
fn prefix_literals(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    let mut seq = Extractor::new().extract(hir);
    seq.optimize_for_prefix_by_preference();
    let literals = seq.literals()?;
    if literals.is_empty()
        || literals.len() > MAX_LITERALS
        || literals.iter().any(|l| l.as_bytes().is_empty())
    {
        return None;
    }
    Some(literals.iter().map(|l| l.as_bytes().to_vec()).collect())
}

/// Literals of two bytes or more that every match of `hir` holds: the literal parts of its
/// top-level sequence (through groups and repetitions of at least one), longest first.
fn required_literals(hir: &Hir) -> Vec<Vec<u8>> {
    fn collect<'h>(hir: &'h Hir, out: &mut Vec<&'h [u8]>) {
        match hir.kind() {
            HirKind::Literal(lit) => out.push(&lit.0),
            HirKind::Capture(c) => collect(&c.sub, out),
            HirKind::Repetition(r) if r.min >= 1 => collect(&r.sub, out),
            HirKind::Concat(subs) => subs.iter().for_each(|s| collect(s, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    collect(hir, &mut found);
    found.retain(|l| l.len() >= 2);
    found.sort_by_key(|l| std::cmp::Reverse(l.len()));
    found.dedup();
    found
        .into_iter()
        .take(MAX_REQUIRED)
        .map(<[u8]>::to_vec)
        .collect()
}

/// Substring searchers for `literals`.
fn finders(literals: &[Vec<u8>]) -> Arc<[Finder<'static>]> {
    literals
        .iter()
        .map(|l| Finder::new(l).into_owned())
        .collect()
}

/// Word-boundary assertions: they read only whether the characters beside a position are word
/// characters.
fn is_word_look(look: Look) -> bool {
    matches!(
        look,
        Look::WordAscii
            | Look::WordAsciiNegate
            | Look::WordUnicode
            | Look::WordUnicodeNegate
            | Look::WordStartAscii
            | Look::WordEndAscii
            | Look::WordStartUnicode
            | Look::WordEndUnicode
            | Look::WordStartHalfAscii
            | Look::WordEndHalfAscii
            | Look::WordStartHalfUnicode
            | Look::WordEndHalfUnicode
    )
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

#[cfg(test)]
mod lazy_tests {
    use super::*;

    const PATTERNS: [&str; 19] = [
        r"npm\s+push\b.*--force1",
        r"(?:ab)+(cd)\s*x(?:yz)?w",
        r"tail\s+-(?:n\s*)?5",
        r"q(?:--)?-\s+--no",
        r"cargo\s+\S+\s+push",
        r"(?:git|hg)\s+(?:push|pull)",
        r"^rm\s+-rf",
        r"\bdd\b",
        r"push$",
        r"[0-9]+x",
        r"(?i)DROP\s+TABLE",
        r"(?m)^foo",
        r"a*",
        r"é+t",
        r"\Aab\z",
        r"x|",
        r"[^\x00-\x{10FFFF}]",
        r"(?s).",
        r"\w{3}\d",
    ];
    const TEXTS: [&str; 17] = [
        "",
        "ababcd xw",
        "cargo test -q -- --nocapture | tail -5",
        "abcdxyzw",
        "npm  push --force1",
        "cargo test -q push",
        "git pull",
        "rm -rf /",
        "sudo dd if=x",
        "git push",
        "12x",
        "drop table users",
        "bar\nfoo",
        "ééét",
        "ab",
        "hello world",
        "abc1",
    ];

    /// Look-around patterns (compiled on the backtracking engine) with the literals of the
    /// pattern without its look-around as their prefilter.
    const LOOKAROUND: [&str; 9] = [
        r"\bfind\s+/(?!\S*\s+-maxdepth)",
        r"(?<=cargo )test(?=\s)",
        r"git(?!\s+(?:status|log\b))\s+\w+",
        r"(?<!sudo )rm\s+-rf",
        r"[(?=]x(?=y)",
        r"\(a(?=\))",
        r"(?<name>tail)\s+(?!-f)-\w",
        r"(?:(?=a)|b)c",
        r"x(?=(?:a(?!b)|[)]))",
    ];

    #[test]
    fn lookaround_patterns_answer_as_the_backtracking_regex() {
        let texts: Vec<String> = TEXTS
            .iter()
            .map(|t| t.to_string())
            .chain(
                [
                    "find / -name x",
                    "find /x -maxdepth 2",
                    "cargo test -q",
                    "git status && git commit -m x",
                    "sudo rm -rf /",
                    "rm -rf /tmp",
                    "(=xy",
                    "(a)",
                    "tail -n 5 && tail -f log",
                    "ac bc c",
                    "xab x) xa",
                ]
                .map(String::from),
            )
            .collect();
        for p in LOOKAROUND {
            for mode in [Mode::Plain, Mode::IgnoreCase] {
                let ours = Pattern::new(p, mode).unwrap();
                // Ignoring case turns literals into classes, which no prefilter holds.
                assert!(
                    mode == Mode::IgnoreCase
                        || ours.prefixes.is_some()
                        || !ours.required.is_empty(),
                    "{p}: no prefilter"
                );
                let Engine::Backtracking(eager) = compile(p, &ours.flagged).unwrap() else {
                    panic!("{p} needs backtracking");
                };
                for t in &texts {
                    assert_eq!(
                        ours.is_match(t),
                        eager.is_match(t).unwrap(),
                        "{p:?} {mode:?} on {t:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn lookaround_is_removed_whole_and_only_when_sure() {
        let cases = [
            (r"a(?=b)c", Some("ac")),
            (r"a(?!b(?=c))d", Some("ad")),
            (r"(?<=x)y(?<!z)", Some("y")),
            (r"[(?=]x", Some("[(?=]x")),
            (r"[]()]a(?=\))", Some("[]()]a")),
            (r"[^]x(]", Some("[^]x(]")),
            (r"\(?=a", Some(r"\(?=a")),
            (r"(?<n>a)(?i:b)", Some("(?<n>a)(?i:b)")),
            (r"(?P<xs>a)(?=b)", Some("(?P<xs>a)")),
            (r"(?i-x:a)(?=b)", None),
            (r"[[:alpha:](]b(?=c)", Some("[[:alpha:](]b")),
            (r"(?x)a(?=b) # (", None),
            (r"a(?=b", None),
            (r"a[b", None),
        ];
        for (re, want) in cases {
            assert_eq!(without_lookaround(re).as_deref(), want, "{re}");
        }
    }

    /// Prefiltered, lazily compiled patterns answer exactly as the compiled regex does.
    #[test]
    fn lazy_patterns_answer_as_the_compiled_regex() {
        for p in PATTERNS {
            for mode in [Mode::Plain, Mode::Multiline, Mode::IgnoreCase] {
                let lazy = Pattern::new(p, mode).unwrap();
                let eager = match compile(p, &lazy.flagged).unwrap() {
                    Engine::Linear(r) => r,
                    Engine::Backtracking(_) => panic!("{p} needs no backtracking"),
                };
                for t in TEXTS {
                    assert_eq!(
                        lazy.is_match(t),
                        eager.is_match(t),
                        "{p:?} {mode:?} on {t:?}"
                    );
                    for other in TEXTS {
                        let joined = format!("{t} && {other}");
                        assert_eq!(
                            lazy.is_match(&joined),
                            eager.is_match(&joined),
                            "{p:?} {mode:?} on {joined:?}"
                        );
                    }
                }
            }
        }
    }

    /// Loading parses: a pattern is checked at load and compiled only when a search needs it,
    /// and a line without any of its prefixes never compiles it.
    #[test]
    fn compiling_waits_for_a_search_that_needs_it() {
        let p = Pattern::new(r"npm\s+push\b.*--force", Mode::Plain).unwrap();
        assert!(p.engine.get().is_none());
        assert!(!p.is_match("git status --short"));
        assert!(
            p.engine.get().is_none(),
            "no `npm`: answered by the prefilter"
        );
        assert!(p.is_match("npm push --force"));
        assert!(p.engine.get().is_some());
        let inner = Pattern::new(r"cargo\s+\S+\s+push", Mode::Plain).unwrap();
        assert!(!inner.is_match("cargo test -q -- --nocapture"));
        assert!(
            inner.engine.get().is_none(),
            "no `push` after `cargo`: answered by the prefilter"
        );
        assert!(inner.is_match("cargo x push"));
        assert!(
            Pattern::new(r"(?<=a)b", Mode::Plain)
                .unwrap()
                .engine
                .get()
                .is_some()
        );
    }

    /// Under `deferred`, even a look-around pattern waits for its first search, and answers
    /// as the eager one does; outside it, one that cannot compile still fails at load.
    #[test]
    fn deferred_loads_compile_backtracking_patterns_on_first_search() {
        let source = r"\bfind\s+/(?!\S*\s+-maxdepth)";
        let eager = Pattern::new(source, Mode::Plain).unwrap();
        let lazy = deferred(|| Pattern::new(source, Mode::Plain)).unwrap();
        assert!(eager.engine.get().is_some());
        assert!(lazy.engine.get().is_none(), "compiled at load");
        for line in ["find / -name x", "find /x -maxdepth 2", "ls"] {
            assert_eq!(lazy.is_match(line), eager.is_match(line), "{line}");
        }
        assert!(lazy.engine.get().is_some());
        assert!(!DEFER.get(), "the flag is restored");
        assert!(Pattern::new(r"(?<=a)b(", Mode::Plain).is_err());
    }

    /// A pattern too big to compile lazily with confidence is compiled (and judged) at load,
    /// exactly as before.
    #[test]
    fn heavy_patterns_compile_at_load() {
        let heavy = r"(?:\w{200}){200}";
        let ours = Pattern::new(heavy, Mode::Plain).map(|p| p.engine.get().is_some());
        let direct = compile(heavy, heavy).map(|_| true);
        assert_eq!(ours, direct);
    }

    /// Only word-boundary assertions leave a pattern edge-neutral.
    #[test]
    fn edge_neutral_patterns() {
        for (p, neutral) in [
            (r"git\s+push\b", true),
            (r"\Bfoo\b{start}", true),
            (r"cargo\s+\S+", true),
            (r"^git", false),
            (r"push$", false),
            (r"(?m)^x", false),
            (r"--force\b(?!-)", false),
        ] {
            assert_eq!(
                Pattern::new(p, Mode::Plain).unwrap().is_edge_neutral(),
                neutral,
                "{p}"
            );
        }
    }
}

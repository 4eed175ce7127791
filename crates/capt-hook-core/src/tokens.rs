//! Token lists: argv prefixes where `*` stands for any one word and `a|b` for either word,
//! matched against what a command line runs (spec: "Seeing what runs").
//!
//! Beyond the literal prefix, a list matches every argv the line runs (the program behind
//! wrappers and runners, see [`capt_hook_shell::Command::runs`]) with the program compared by
//! basename, git's global options skipped, positional tokens as a prefix of the positional
//! words and flag tokens as sets: `-rf` holds when `-r` (or `-R`, `--recursive`) and `-f` (or
//! `--force`) are both among the options, per [`capt_hook_shell::programs`]. `exact` keeps the
//! literal prefix alone. A line the parser could not read to the end also matches when the
//! tokens appear, in order, among the words of its raw text.

use std::fmt;
use std::ops::Range;

use capt_hook_shell::programs::{self, FlagTable};
use capt_hook_shell::{Command, CommandLine, Word, basename};

/// One token of an argv prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// `*`: exactly one word, whatever it is.
    Any,
    /// One of these words, exactly.
    Word(Vec<String>),
}

impl Token {
    fn matches(&self, word: &str) -> bool {
        match self {
            Token::Any => true,
            Token::Word(alts) => alts.iter().any(|a| a == word),
        }
    }

    /// True when the token names the program `word` runs: the word itself, or its last path
    /// component (`/usr/bin/rm` for `rm`). Compared without splitting: this runs for every
    /// token list on every command.
    #[inline]
    fn names_program(&self, word: &str) -> bool {
        match self {
            Token::Any => true,
            Token::Word(alts) => alts.iter().any(|a| names(a, word)),
        }
    }

    /// The flag spellings of a token whose every alternative is an option (`-rf`, `--force`).
    fn flags(&self) -> Option<&[String]> {
        match self {
            Token::Word(alts) if alts.iter().all(|a| is_option(a)) => Some(alts),
            _ => None,
        }
    }
}

/// Why a token list is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Nothing to match.
    #[error("the token list is empty")]
    Empty,
    /// A token with nothing in it (`""` or `"a|"`).
    #[error("token {index} is empty")]
    EmptyToken {
        /// Position in the list.
        index: usize,
    },
}

/// An argv prefix to look for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    tokens: Vec<Token>,
    exact: bool,
    /// [`initial`] of each alternative of the first token (all bits for `*` or an alternative
    /// with a `/`): a line none of whose programs shares one cannot match.
    initials: u64,
}

/// One bit for a program name's first byte; a program whose basename has no bit in common with
/// a token's alternatives is not named by them.
fn initial(name: &str) -> u64 {
    name.as_bytes().first().map_or(0, |b| 1 << (b & 63))
}

/// True when `alt` names the program `word` runs: the word itself, its last path components
/// (`/usr/bin/rm` for `rm`), or the program a Windows spelling runs (`rm.exe`,
/// `C:\\Git\\bin\\git.exe` for `git`; see [`basename`]).
#[inline]
fn names(alt: &str, word: &str) -> bool {
    (word.ends_with(alt)
        && (word.len() == alt.len() || word.as_bytes()[word.len() - alt.len() - 1] == b'/'))
        || (word.len() > alt.len() && basename(word) == alt)
}

/// The words of a line, gathered once per line so that a token list naming a program or a
/// positional word the line never has is turned away before it walks every command (most
/// lists, on most lines).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineWords {
    /// Every text below, back to back (one allocation per line instead of one per word).
    text: String,
    /// The first word of every argv the line runs, and every command's executable, once each
    /// (every token list compares its first token with each of these).
    programs: Vec<Box<str>>,
    /// [`initial`] of each program's basename.
    initials: u64,
    /// Every word as a program sees it and as written (one quote layer off), and every argument.
    words: Vec<Range<usize>>,
    /// The line could not be read to the end: token lists fall back to its raw words, which
    /// these do not cover.
    open: bool,
}

impl LineWords {
    /// Gathers the words of `line`.
    pub fn of(line: &CommandLine) -> LineWords {
        let mut all = LineWords {
            open: line.unreadable.is_some(),
            ..LineWords::default()
        };
        let push = |text: &mut String, list: &mut Vec<Range<usize>>, w: &str| {
            let start = text.len();
            text.push_str(w);
            list.push(start..text.len());
        };
        let mut program = |w: &str| {
            if !w.is_empty() && !all.programs.iter().any(|p| &**p == w) {
                // The program's name, and its last `/` component as written (a token may name
                // `\\rm` or `rm.exe` literally).
                all.initials |= initial(basename(w)) | initial(w.rsplit('/').next().unwrap_or(w));
                all.programs.push(w.into());
            }
        };
        for c in line.commands() {
            program(&c.executable);
            for ws in c.run_words() {
                if let Some(first) = ws.first() {
                    program(key(first));
                }
            }
        }
        for c in line.commands() {
            for w in &c.words {
                push(&mut all.text, &mut all.words, key(w));
                if w.text != key(w) {
                    push(&mut all.text, &mut all.words, &w.text);
                }
            }
            // Each argument is its word as written, already in; only one that is not.
            for (i, a) in c.args.iter().enumerate() {
                if c.words.get(i + 1).is_none_or(|w| w.text != *a) {
                    push(&mut all.text, &mut all.words, a);
                }
            }
        }
        all
    }

    fn has_word(&self, w: &str) -> bool {
        self.words.iter().any(|r| &self.text[r.clone()] == w)
    }
}

/// True for a word that is an option: `-x…` or `--x…`, but not `-` or `--`.
fn is_option(word: &str) -> bool {
    word.len() > 1 && word.starts_with('-') && word != "--"
}

/// A word as a program sees it.
#[inline]
fn key(w: &Word) -> &str {
    w.key()
}

/// One word as the `args` text shows it: a word holding a blank is single-quoted with its blanks
/// escaped as bash's `$'…'` escapes them (`\x20`, `\t`, `\n`; a quote as `\'`), so the text has
/// one blank between words and none inside one: a quoted value (`--description 'note
/// --dry-run'`) does not read as an option of its own, and `docker rm "my -f container"` names
/// one container. No `$` leads it: rules read `$` as an expansion they cannot resolve.
fn args_word(word: &str) -> std::borrow::Cow<'_, str> {
    if !word.chars().any(char::is_whitespace) {
        return std::borrow::Cow::Borrowed(word);
    }
    let mut out = String::with_capacity(word.len() + 8);
    out.push('\'');
    for c in word.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            ' ' => out.push_str("\\x20"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            c if c.is_whitespace() => {
                let _ = std::fmt::Write::write_fmt(&mut out, format_args!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    std::borrow::Cow::Owned(out)
}

impl Tokens {
    /// Parses tokens as written in a hook file.
    pub fn new<S: AsRef<str>>(tokens: &[S]) -> Result<Tokens, TokenError> {
        if tokens.is_empty() {
            return Err(TokenError::Empty);
        }
        let mut out = Vec::with_capacity(tokens.len());
        for (index, t) in tokens.iter().enumerate() {
            let t = t.as_ref();
            if t == "*" {
                out.push(Token::Any);
                continue;
            }
            let alts: Vec<String> = t.split('|').map(str::to_owned).collect();
            if alts.iter().any(String::is_empty) {
                return Err(TokenError::EmptyToken { index });
            }
            out.push(Token::Word(alts));
        }
        let initials = match &out[0] {
            Token::Word(alts) if alts.iter().all(|a| !a.contains('/')) => {
                alts.iter().fold(0, |m, a| m | initial(a))
            }
            _ => u64::MAX,
        };
        Ok(Tokens {
            tokens: out,
            exact: false,
            initials,
        })
    }

    /// The same list matching the literal argv prefix alone (`exact = true`).
    pub fn exact(mut self, exact: bool) -> Tokens {
        self.exact = exact;
        self
    }

    /// True when the list keeps to the literal argv prefix.
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// True when a `*` token is present.
    pub fn has_wildcard(&self) -> bool {
        self.tokens.iter().any(|t| matches!(t, Token::Any))
    }

    /// True when `argv` starts with these tokens, literally.
    pub fn is_prefix_of(&self, argv: &[&str]) -> bool {
        argv.len() >= self.tokens.len() && self.tokens.iter().zip(argv).all(|(t, w)| t.matches(w))
    }

    /// True when a command's `executable` and `args` start with these tokens, literally.
    pub fn is_prefix_of_command(&self, cmd: &Command) -> bool {
        if cmd.executable.is_empty() || cmd.args.len() + 1 < self.tokens.len() {
            return false;
        }
        let words =
            std::iter::once(cmd.executable.as_str()).chain(cmd.args.iter().map(String::as_str));
        self.tokens.iter().zip(words).all(|(t, w)| t.matches(w))
    }

    /// True when some command of the line runs an argv these tokens match (the `runs`
    /// condition); on a line that could not be read to the end, also when the tokens appear
    /// in order among its raw words.
    pub fn matches_line(&self, line: &CommandLine) -> bool {
        let found = if self.exact {
            line.parts
                .iter()
                .any(|p| self.is_prefix_of_command(&p.command))
        } else {
            line.parts.iter().any(|p| self.matches_command(&p.command))
        };
        found || (line.unreadable.is_some() && self.matches_raw_words(&line.raw))
    }

    /// [`Tokens::matches_line`], told the line's [`LineWords`] (which must be those of
    /// `line`) so that a list the line's words cannot satisfy is answered without walking it.
    pub fn matches_line_with(&self, line: &CommandLine, words: &LineWords) -> bool {
        self.may_match_words(words) && self.matches_line(line)
    }

    /// False only when [`Tokens::matches_line`] is false on every line with these words: the
    /// first token names none of its programs (by basename, or as the literal executable), or a
    /// later token that is neither `*` nor a flag (flags match other spellings too) equals none
    /// of its words, and the line was read to the end.
    pub fn may_match_words(&self, words: &LineWords) -> bool {
        if words.open {
            return true;
        }
        if self.initials & words.initials == 0 {
            return false;
        }
        let program = match &self.tokens[0] {
            Token::Any => true,
            Token::Word(alts) => words
                .programs
                .iter()
                .any(|w| alts.iter().any(|a| names(a, w))),
        };
        program
            && self.tokens[1..].iter().all(|t| match t {
                Token::Word(alts) if t.flags().is_none() => alts.iter().any(|a| words.has_word(a)),
                _ => true,
            })
    }

    /// True when the line's primary command (its last top-level one) runs an argv these tokens
    /// match, wrappers seen through (the `primary_runs` condition); falls back like
    /// [`Tokens::matches_line`].
    pub fn matches_primary(&self, line: &CommandLine) -> bool {
        let found = line.primary().is_some_and(|c| {
            if self.exact {
                self.is_prefix_of(&c.unwrapped())
            } else {
                self.matches_command(c)
            }
        });
        found || (line.unreadable.is_some() && self.matches_raw_words(&line.raw))
    }

    /// True when one of the argvs `cmd` runs (its own, or one behind a wrapper or runner)
    /// matches.
    pub fn matches_command(&self, cmd: &Command) -> bool {
        self.matches_command_through(cmd, true)
    }

    /// [`Tokens::matches_command`], with or without the programs package runners launch
    /// (`uv run pytest`, see [`Command::launched`]).
    fn matches_command_through(&self, cmd: &Command, launchers: bool) -> bool {
        if cmd.words.is_empty() {
            return false;
        }
        // A plain loop: this runs for every token list on every command of every event.
        self.matches_words(&cmd.words)
            || cmd.runs.iter().any(|r| {
                (launchers || !cmd.launched.contains(r))
                    && cmd
                        .words
                        .get(r.clone())
                        .is_some_and(|ws| self.matches_words(ws))
            })
            || self.is_prefix_of_command(cmd)
    }

    /// True when `f` holds for the words after the program (joined by single spaces, as the
    /// program sees them) of some argv of the line these tokens match (the `args` condition).
    /// On a line that could not be read to the end and whose raw words hold the tokens, `f`
    /// is asked about the raw text instead, erring towards the guard.
    pub fn any_args(&self, line: &CommandLine, f: impl Fn(&str) -> bool) -> bool {
        let joined = |ws: &[Word]| {
            ws.iter()
                .skip(1)
                // A word we cannot resolve (`$(cat f)`) stays as written: rules read its `$`.
                .map(|w| match &w.value {
                    Some(value) => args_word(value),
                    None => std::borrow::Cow::Borrowed(w.text.as_str()),
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let found = line.parts.iter().any(|p| {
            let cmd = &p.command;
            if self.exact {
                return self.is_prefix_of_command(cmd) && f(&cmd.args.join(" "));
            }
            if cmd.words.is_empty() {
                return false;
            }
            (self.matches_words(&cmd.words) && f(&joined(&cmd.words)))
                || cmd.runs.iter().any(|r| {
                    cmd.words
                        .get(r.clone())
                        .is_some_and(|ws| self.matches_words(ws) && f(&joined(ws)))
                })
        });
        found || (line.unreadable.is_some() && self.matches_raw_words(&line.raw) && f(&line.raw))
    }

    /// [`Tokens::matches_line`] as `ran_command` reads a past call: the program a package
    /// runner launches (`uv run pytest`, `npx jest`) does not count, as in the original, where
    /// "ran pytest" means pytest itself or behind a wrapper such as `sudo` or `env`. Guards
    /// (`runs`) see through the runner.
    pub fn matches_ran(&self, line: &CommandLine) -> bool {
        if self.exact {
            return self.matches_line(line);
        }
        let found = line
            .parts
            .iter()
            .any(|p| self.matches_command_through(&p.command, false));
        found || (line.unreadable.is_some() && self.matches_raw_words(&line.raw))
    }

    /// The structural match of one argv: program by basename, git's global options skipped,
    /// positional tokens as a prefix of the positional words, flag tokens as sets.
    fn matches_words(&self, ws: &[Word]) -> bool {
        let Some(first) = ws.first() else {
            return false;
        };
        if !self.tokens[0].names_program(key(first)) {
            return false;
        }
        let program = basename(key(first));
        if self.literal_rest(ws) {
            return true;
        }
        let mut i = 1;
        if program == "git" && ws.get(1).is_some_and(|w| key(w).starts_with('-')) {
            i += programs::git_globals(&ws[1..]).0;
        }
        let rest = &ws[i.min(ws.len())..];
        // Positional tokens must be the first positional words, in order.
        let mut positional = self.tokens[1..].iter().filter(|t| t.flags().is_none());
        let mut want = positional.next();
        let mut options_end = rest.len();
        for (k, w) in rest.iter().enumerate() {
            let w = key(w);
            if w == "--" && options_end == rest.len() {
                options_end = k;
                // The end-of-options marker is not a positional word, unless a token names it.
                if !want.is_some_and(|t| t.matches(w)) {
                    continue;
                }
            }
            if k < options_end && is_option(w) {
                continue;
            }
            match want {
                Some(t) if t.matches(w) => want = positional.next(),
                Some(_) => return false,
                None => break,
            }
        }
        if want.is_some() {
            return false;
        }
        let mut flags = self.tokens[1..].iter().filter_map(Token::flags).peekable();
        if flags.peek().is_none() {
            return true;
        }
        let subcommand = rest.iter().map(key).find(|w| !w.starts_with('-'));
        let table = programs::flag_table(program, subcommand);
        let single_dash = programs::SINGLE_DASH_LONG.contains(&program);
        let options = rest[..options_end].iter().map(key).filter(|w| is_option(w));
        flags.all(|alts| {
            alts.iter()
                .any(|flag| flag_present(flag, options.clone(), table, single_dash))
        })
    }

    /// The literal prefix after the program word (already matched by basename).
    fn literal_rest(&self, ws: &[Word]) -> bool {
        ws.len() >= self.tokens.len()
            && self.tokens[1..]
                .iter()
                .zip(&ws[1..])
                .all(|(t, w)| t.matches(key(w)))
    }

    /// The fallback for a line the parser could not read: the first token is some word of the
    /// raw text (by basename), and the others follow it in order. Linear in the text.
    pub fn matches_raw_words(&self, raw: &str) -> bool {
        let mut words = raw
            .split(|c: char| c.is_whitespace() || "\"'`;&|(){}<>$\\".contains(c))
            .filter(|w| !w.is_empty());
        if !words
            .by_ref()
            .any(|w| self.tokens[0].matches(w) || self.tokens[0].matches(basename(w)))
        {
            return false;
        }
        // Positional tokens follow in order; flags may be anywhere after the program.
        let mut positional = self.tokens[1..].iter().filter(|t| t.flags().is_none());
        let mut want = positional.next();
        for w in words.clone() {
            match want {
                Some(t) if t.matches(w) => want = positional.next(),
                Some(_) => {}
                None => break,
            }
        }
        let options = words.filter(|w| is_option(w));
        want.is_none()
            && self.tokens[1..]
                .iter()
                .filter_map(Token::flags)
                .all(|alts| {
                    alts.iter()
                        .any(|f| flag_present(f, options.clone(), None, false))
                })
    }

    /// The regex a token list stands for when it has to match raw text: each token escaped,
    /// `*` as one run of non-space, alternatives grouped, joined by whitespace.
    pub fn to_regex(&self) -> String {
        self.tokens
            .iter()
            .map(|t| match t {
                Token::Any => r"\S+".to_owned(),
                Token::Word(alts) if alts.len() == 1 => regex::escape(&alts[0]),
                Token::Word(alts) => format!(
                    "(?:{})",
                    alts.iter()
                        .map(|a| regex::escape(a))
                        .collect::<Vec<_>>()
                        .join("|")
                ),
            })
            .collect::<Vec<_>>()
            .join(r"\s+")
    }
}

/// The short letters of a cluster option (`-rf` → `rf`), up to and including a letter that
/// takes a value (the rest of the word is that value).
fn cluster_letters<'a>(word: &'a str, table: Option<&FlagTable>) -> &'a str {
    let letters = &word[1..];
    match table {
        Some(t) => match letters.find(|c| t.valued.contains(c)) {
            Some(i) => &letters[..=i],
            None => letters,
        },
        None => letters,
    }
}

/// The group of spellings (in `table`) that `pred` picks.
fn same_as(
    table: Option<&FlagTable>,
    pred: impl Fn(&(&str, &[&str])) -> bool,
) -> Option<&(&'static str, &'static [&'static str])> {
    table.and_then(|t| t.same.iter().find(|e| pred(e)))
}

/// True when `flag` (a token: a short cluster, a long option or a single-dash long option) is
/// present among `options`, in any order or grouping and with the program's other spellings.
fn flag_present<'a>(
    flag: &str,
    options: impl Iterator<Item = &'a str> + Clone,
    table: Option<&FlagTable>,
    single_dash: bool,
) -> bool {
    let long_name = |w: &'a str| w.split_once('=').map_or(w, |(n, _)| n);
    if flag.starts_with("--") {
        let group = same_as(table, |(_, long)| long.contains(&flag));
        return options.clone().any(|w| {
            if w.starts_with("--") {
                long_name(w) == flag
            } else {
                !single_dash
                    && group.is_some_and(|(short, _)| {
                        cluster_letters(w, table).chars().any(|c| short.contains(c))
                    })
            }
        });
    }
    if single_dash || options.clone().any(|w| w == flag) {
        return options.clone().any(|w| w == flag);
    }
    // A short cluster: every letter, by any of its spellings.
    flag[1..].chars().all(|c| {
        let group = same_as(table, |(short, _)| short.contains(c));
        options.clone().any(|w| {
            if w.starts_with("--") {
                group.is_some_and(|(_, long)| long.contains(&long_name(w)))
            } else {
                cluster_letters(w, table)
                    .chars()
                    .any(|o| o == c || group.is_some_and(|(short, _)| short.contains(o)))
            }
        })
    })
}

impl fmt::Display for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<String> = self
            .tokens
            .iter()
            .map(|t| match t {
                Token::Any => "\"*\"".to_owned(),
                Token::Word(a) => format!("{:?}", a.join("|")),
            })
            .collect();
        write!(f, "[{}]", words.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_wildcards_and_alternatives() {
        let t = Tokens::new(&["git", "stash|shelve"]).unwrap();
        assert!(t.is_prefix_of(&["git", "stash", "pop"]));
        assert!(t.is_prefix_of(&["git", "shelve"]));
        assert!(!t.is_prefix_of(&["git", "stashpop"]));
        assert!(!t.is_prefix_of(&["git"]));
        let w = Tokens::new(&["docker", "*", "prune"]).unwrap();
        assert!(w.is_prefix_of(&["docker", "image", "prune", "-a"]));
        assert!(!w.is_prefix_of(&["docker", "prune"]));
        assert_eq!(w.to_regex(), r"docker\s+\S+\s+prune");
        assert_eq!(Tokens::new::<&str>(&[]).unwrap_err(), TokenError::Empty);
        assert!(Tokens::new(&["a|"]).is_err());
    }

    fn runs(tokens: &[&str], line: &str) -> bool {
        Tokens::new(tokens)
            .unwrap()
            .matches_line(&CommandLine::parse(line))
    }

    fn exact(tokens: &[&str], line: &str) -> bool {
        Tokens::new(tokens)
            .unwrap()
            .exact(true)
            .matches_line(&CommandLine::parse(line))
    }

    #[test]
    fn flag_clusters_match_as_sets_with_long_spellings() {
        let rf = ["rm", "-rf"];
        for line in [
            "rm -rf build",
            "rm -fr build",
            "rm -r -f build",
            "rm -f -r build",
            "rm -Rf build",
            "rm --recursive --force build",
            "rm -r --force build",
            "rm build -rf",
            "rm -rfv build",
            "rm -v -R -f build",
        ] {
            assert!(runs(&rf, line), "{line}");
        }
        for line in [
            "rm -r build",
            "rm -f build.log",
            "rm -- -rf",
            "echo rm -rf build",
            "git commit -m 'rm -rf build'",
            "rmdir -rf x",
        ] {
            assert!(!runs(&rf, line), "{line}");
        }
        let force = ["git", "push", "--force"];
        assert!(runs(&force, "git push --force"));
        assert!(runs(&force, "git push -f origin main"));
        assert!(runs(&force, "git push origin main --force"));
        assert!(!runs(&force, "git push --force-with-lease"));
        assert!(!runs(&force, "git push origin"));
        let f = ["git", "push", "-f"];
        assert!(runs(&f, "git push --force"));
        let clean = ["git", "clean", "-fd"];
        assert!(runs(&clean, "git clean -df"));
        assert!(runs(&clean, "git clean -d --force"));
        assert!(runs(&clean, "git clean -xfd"));
        assert!(!runs(&clean, "git clean -n"));
        // A valued letter ends its cluster: `-mfix` is the message "fix", not `-f`.
        assert!(!runs(&["git", "commit", "-n"], "git commit -mno"));
        assert!(runs(&["git", "commit", "-n"], "git commit -nm wip"));
        assert!(runs(&["git", "commit", "-n"], "git commit --no-verify"));
        // find's single-dash options are words, not clusters.
        assert!(runs(&["find", "-delete"], "find . -name x -delete"));
        assert!(!runs(&["find", "-delete"], "find . -type d -name elt"));
    }

    #[test]
    fn wrappers_paths_and_git_globals() {
        for line in [
            "sudo rm -rf /x",
            "sudo -u root rm -rf /x",
            "/bin/rm -rf /x",
            "\\rm -rf /x",
            "\"rm\" -rf /x",
            "env FOO=1 nice -n 5 rm -rf build",
            "timeout 5 rm -rf build",
            "ls | xargs rm -rf",
            "find . -name '*.o' -exec rm -rf {} +",
            "busybox rm -rf x",
            "command rm -rf x",
            "cd x && sudo -E rm -rf y",
            "sh -c 'sudo rm -rf x'",
            "echo $(rm -rf x)",
            "bash <<EOF\nrm -rf x\nEOF",
            "sh <<< 'rm -rf x'",
            "watch rm -rf x",
            "echo hi > $(rm -rf x)",
        ] {
            assert!(runs(&["rm", "-rf"], line), "{line}");
        }
        for line in [
            "command -v rm",
            "cat <<EOF\nrm -rf x\nEOF",
            "cat <<'EOF'\n$(rm -rf x)\nEOF",
        ] {
            assert!(!runs(&["rm", "-rf"], line), "{line}");
        }
        assert!(runs(&["rm", "-rf"], "cat <<EOF\n$(rm -rf x)\nEOF"));
        assert!(runs(&["sudo", "rm"], "sudo rm -rf x"));
        assert!(runs(&["git", "stash"], "sudo git stash"));
        assert!(runs(&["git", "stash"], "git -C dir stash"));
        assert!(runs(
            &["git", "reset", "--hard"],
            "git -C ../x reset --hard"
        ));
        assert!(runs(
            &["git", "reset", "--hard"],
            "git --no-pager -c core.pager=cat reset --hard HEAD~1"
        ));
        assert!(runs(
            &["git", "reset", "--hard"],
            "git --git-dir=.git --work-tree=. reset --hard"
        ));
        assert!(!runs(
            &["git", "reset", "--hard"],
            "git reset --soft HEAD~1"
        ));
        assert!(!runs(&["git", "stash"], "git commit -m stash"));
        assert!(runs(&["git", "checkout", "."], "git checkout -- ."));
        assert!(runs(&["git", "checkout", "--", "."], "git checkout -- ."));
        assert!(!runs(&["git", "push"], "git stash push"));
        assert!(!runs(&["npm", "test"], "npm run test"));
    }

    /// Runners, substituted arguments, env's options, git's `--` and aliases: the command that
    /// would run is what a list matches, and reads stay unmatched.
    #[test]
    fn runners_and_substitutions_are_seen() {
        let root = ["rm", "-rf", "/"];
        for line in [
            "parallel bash -c 'rm -rf {}' ::: /",
            "parallel rm -rf ::: /",
            "parallel rm -rf {} ::: a /",
            "printf / | xargs -I{} rm -rf {}",
            "echo / | xargs rm -rf",
            "xargs -I% rm -rf % <<< /",
            "env -S 'rm -rf /'",
            "env -S 'rm -rf' /",
            "env - rm -rf /",
            "env -i rm -rf /",
            "env -P /usr/bin rm -rf /",
            "uv run rm -rf /",
            "uvx --python 3.12 rm -rf /",
            "npx -y rm -rf /",
            "pnpm exec rm -rf /",
            "bunx rm -rf /",
            "poetry run rm -rf /",
            "strace -f -o trace.log rm -rf /",
            "ltrace -e malloc rm -rf /",
            "sg wheel -c 'rm -rf /'",
            "sg wheel rm -rf /",
            "chroot /mnt rm -rf /",
            "firejail --private rm -rf /",
            "systemd-run --user -p MemoryMax=1G rm -rf /",
            "ssh -p 2222 -i ~/.ssh/id host 'rm -rf /'",
            "ssh -l me -o BatchMode=yes -F cfg -J jump host rm -rf /",
            "git -c alias.x='!rm -rf /' x",
        ] {
            assert!(runs(&root, line), "{line}");
        }
        // Without its argument, the runner's command is still seen as written.
        assert!(runs(&["rm", "-rf"], "cat list | xargs -I{} rm -rf {}"));
        assert!(runs(
            &["git", "reset", "--hard"],
            "env -S 'PATH=/x git reset --hard'"
        ));
        assert!(runs(&["git", "reset", "--hard"], "git -- reset --hard"));
        // `ran_command` reads package runners literally; wrappers it still sees through.
        let ran = |tokens: &[&str], line: &str| {
            Tokens::new(tokens)
                .unwrap()
                .matches_ran(&CommandLine::parse(line))
        };
        for line in [
            "uv run pytest",
            "uvx pytest",
            "npx pytest",
            "uv run sudo pytest",
        ] {
            assert!(runs(&["pytest"], line), "{line}");
            assert!(!ran(&["pytest"], line), "{line}");
        }
        for line in [
            "pytest -q",
            "sudo pytest",
            "env A=1 pytest",
            "strace -f pytest",
        ] {
            assert!(ran(&["pytest"], line), "{line}");
        }
        assert!(runs(
            &["git", "reset", "--hard"],
            "git -C d -- reset --hard"
        ));
        assert!(runs(
            &["git", "reset", "--hard"],
            "git -c alias.nuke='reset --hard' nuke"
        ));
        for line in [
            "git -c alias.x='!rm -rf /' status",
            "ssh -p 22 host ls /",
            "uv run pytest -q",
            "npx prettier --check .",
            "parallel echo rm -rf ::: /",
            "printf / | xargs -I{} echo rm -rf {}",
            "strace -o rm ls -rf",
            "env -P rm ls -rf /",
        ] {
            assert!(!runs(&root, line), "{line}");
        }
    }

    #[test]
    fn primary_sees_through_wrappers_of_the_last_command() {
        let primary = |tokens: &[&str], line: &str| {
            Tokens::new(tokens)
                .unwrap()
                .matches_primary(&CommandLine::parse(line))
        };
        assert!(primary(&["pytest"], "cd x && sudo pytest -q"));
        assert!(primary(&["pytest"], "timeout 60 env A=1 pytest"));
        assert!(primary(&["tee"], "cd x && sudo pytest -q | tee log"));
        assert!(!primary(&["pytest"], "cd x && sudo pytest -q | tee log"));
        assert!(!primary(&["git", "stash"], "bash -c 'git stash'"));
        let exact = Tokens::new(&["pytest"]).unwrap().exact(true);
        assert!(exact.matches_primary(&CommandLine::parse("sudo pytest")));
        assert!(!exact.matches_primary(&CommandLine::parse("/usr/bin/pytest")));
    }

    #[test]
    fn exact_keeps_the_literal_prefix() {
        assert!(exact(&["rm", "-rf"], "rm -rf build"));
        assert!(exact(&["rm", "-rf"], "cd x && rm -rf build"));
        assert!(!exact(&["rm", "-rf"], "rm -fr build"));
        assert!(!exact(&["rm", "-rf"], "sudo rm -rf build"));
        assert!(!exact(&["rm", "-rf"], "/bin/rm -rf build"));
    }

    /// The word prefilter never changes an answer: every list on every line answers the
    /// same with it as without it, and it does turn lists away (or it would be no prefilter).
    #[test]
    fn the_word_prefilter_agrees_with_the_full_match() {
        let lines = [
            "git status --short",
            "cd /work/app && git status --short | head -20 && cargo test -q 2>&1 | tail -5",
            r#"bash -lc 'git fetch && git rebase origin/main' && git commit -m "$(cat msg.txt)""#,
            "sudo -u root rm -rf /x",
            "/bin/rm -rf /x",
            "\\rm -rf x",
            "\"rm\" -rf x",
            "env FOO=1 nice -n 5 rm -rf build",
            "ls | xargs rm -rf",
            "find . -name '*.o' -exec rm -rf {} +",
            "busybox rm -rf x",
            "echo $(git stash)",
            "bash <<EOF\nrm -rf x\nEOF",
            "watch git push",
            "> out.txt",
            "FOO=1 ./scripts/deploy.sh --prod",
            "git -C ../x reset --hard",
            "docker image prune -a",
            "eval 'git push --force'",
            "echo $(echo $(echo $(git push)))",
            &format!("echo {}git stash{}", "$(".repeat(60), ")".repeat(60)),
            "if true; then npm publish; fi",
            "git 'pu'sh origin && git \"stash\" pop",
            "git checkout -- . && git -C dir stash",
            "git push -f origin main",
            "",
        ];
        let lists: &[&[&str]] = &[
            &["git"],
            &["git", "push"],
            &["git", "stash|push"],
            &["rm", "-rf"],
            &["/bin/rm"],
            &["bin/rm"],
            &["\\rm"],
            &["\\rm", "-rf"],
            &["sudo", "rm"],
            &["xargs"],
            &["*", "prune"],
            &["docker", "*", "prune"],
            &["deploy.sh"],
            &["./scripts/deploy.sh"],
            &["cargo|npm", "publish|test"],
            &["cat"],
            &["head", "-20"],
            &["kubectl"],
            &["echo"],
            &["nice"],
            &["stash"],
            &["git", "checkout", "--", "."],
            &["git", "push", "--force"],
            &["git", "*", "main"],
            &["git", "'pu'sh"],
            &["git", "stash", "pop"],
        ];
        let (mut checked, mut turned_away) = (0, 0);
        for raw in lines {
            let line = CommandLine::parse(raw);
            let words = LineWords::of(&line);
            for tokens in lists {
                for exact in [false, true] {
                    let t = Tokens::new(tokens).unwrap().exact(exact);
                    let full = t.matches_line(&line);
                    assert_eq!(
                        t.matches_line_with(&line, &words),
                        full,
                        "{tokens:?} (exact {exact}) on {raw:?}"
                    );
                    checked += 1;
                    turned_away += usize::from(!t.may_match_words(&words));
                }
            }
        }
        assert!(
            checked > 900 && turned_away > checked / 2,
            "{turned_away} of {checked}"
        );
    }

    #[test]
    fn unreadable_lines_fall_back_to_raw_words() {
        let deep = format!("echo {}git stash{}", "$(".repeat(60), ")".repeat(60));
        let line = CommandLine::parse(&deep);
        assert!(line.unreadable.is_some());
        assert!(Tokens::new(&["git", "stash"]).unwrap().matches_line(&line));
        assert!(!Tokens::new(&["git", "push"]).unwrap().matches_line(&line));
        let t = Tokens::new(&["rm", "-rf"]).unwrap();
        assert!(t.matches_raw_words("x ( /bin/rm -r -f y"));
        assert!(t.matches_raw_words("x;rm -fr y"));
        assert!(!t.matches_raw_words("rm -r y"));
        assert!(!t.matches_raw_words("-rf rm"));
    }
}

//! The parsed line's data: a [`CommandLine`] and its [`Part`]s, each a [`Command`] with its
//! words, operator, redirects and quote layers. Built by the walk (`walk.rs`, `fast.rs`); this
//! module depends on neither, so the types sit below the code that makes them.

use std::ops::Range;

use crate::words::Word;
use crate::wrappers::{self, wrapper_prefix_len};

/// Lines longer than this are not parsed (tree-sitter's time grows with the text, and no real
/// command is this long); they come back empty with [`Unreadable::TooLong`].
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Why a line could not be read to the end: what it runs past that point is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unreadable {
    /// Substitutions, groups or compound commands nested past the parser's limit.
    Nesting,
    /// Command strings inside command strings (`bash -c`, `eval`) past the re-parse limit.
    PayloadDepth,
    /// Longer than [`MAX_LINE_BYTES`], or too slow to parse within a time linear in its length.
    TooLong,
    /// A syntax error: the parser had to guess where commands start and end.
    SyntaxError,
    /// A runner (`parallel`, `xargs`) substitutes its arguments into more commands than the
    /// parser follows.
    TooManyJobs,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unreadable::Nesting => "it nests deeper than the parser follows",
            Unreadable::PayloadDepth => {
                "it nests command strings (`bash -c`, `eval`) deeper than the parser follows"
            }
            Unreadable::TooLong => "it is too long for the parser",
            Unreadable::SyntaxError => "it has a syntax error",
            Unreadable::TooManyJobs => {
                "it substitutes arguments into more commands (`parallel`, `xargs`) than the parser follows"
            }
        })
    }
}

/// The operator joining a part to the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `;` (also a newline between statements is reported as `None`, not this).
    Seq,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `|` or `|&`
    Pipe,
    /// `&`
    Background,
}

impl Op {
    /// The operator as written in the shell.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Seq => ";",
            Op::And => "&&",
            Op::Or => "||",
            Op::Pipe => "|",
            Op::Background => "&",
        }
    }
}

/// One file redirect of a command (`2>&1`, `> out.txt`, `< in`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The file descriptor written before the operator (`2` in `2>&1`).
    pub fd: Option<u32>,
    /// The operator: one of `>`, `>>`, `<`, `<<`, `>&`, `<&`, `>|`, `&>`, `&>>`, `<<<`.
    pub op: String,
    /// The redirect target's text (one quote layer stripped).
    pub target: String,
}

/// The quote layer enclosing a payload part (`sh -c '…'` is single, `eval "…"` double).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuoteLayer {
    /// Unquoted word.
    Bare,
    /// Inside `'…'`.
    Single,
    /// Inside `"…"`.
    Double,
}

/// One simple command found in the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The node's source text.
    pub raw: String,
    /// The command name with one quote layer stripped ("" for a redirect-only statement).
    pub executable: String,
    /// The arguments, one quote layer stripped each, in order.
    pub args: Vec<String>,
    /// Leading `NAME=value` assignments (they are not argv).
    pub env: Vec<(String, String)>,
    /// File redirects, both the command's own and those of its enclosing statement.
    pub redirects: Vec<Redirect>,
    /// Byte range in [`CommandLine::raw`] covering the command without its redirects; `None`
    /// when the command cannot be spliced (nested in another command's word, or degraded).
    pub span: Option<Range<usize>>,
    /// 0 for top-level commands, 1 + host nesting for substitution and payload commands.
    pub nesting: u8,
    /// Index (into [`CommandLine::parts`]) of the command that hosts this nested one.
    pub host: Option<usize>,
    /// The quote layers enclosing a payload command, outermost first.
    pub contexts: Vec<QuoteLayer>,
    /// True when an argv word holds an unresolved expansion (`$V`, `${V}`, `$(…)`, backticks).
    pub tainted: bool,
    /// Structural info for `executable` then each of `args` (empty for a redirect-only part).
    pub words: Vec<Word>,
    /// The other argvs this command runs, as ranges of [`Command::words`]: the program behind
    /// each wrapper (`sudo env A=1 rm x` → `env A=1 rm x`, `rm x`) and runner (`xargs rm`,
    /// `find -exec rm {} +`, `busybox rm`), in word order. Command strings are nested parts.
    pub runs: Vec<Range<usize>>,
    /// The ranges of [`Command::runs`] reached through a package runner (`uv run pytest`,
    /// `npx jest`, `poetry run …`): guards see what they launch, while a question about what
    /// the session ran (`ran_command`) reads the launcher literally, as the original does.
    pub launched: Vec<Range<usize>>,
    /// The `( … )` subshells around the command, outermost first, each by a number unique in
    /// the line: what a subshell changes (`cd`, variables) ends with it, so a `cd` applies to
    /// a later command only when its subshells are a prefix of that command's.
    pub subshells: Vec<u32>,
}

impl Command {
    /// `executable` followed by `args`; empty when there is no executable.
    pub fn argv(&self) -> Vec<&str> {
        if self.executable.is_empty() {
            return Vec::new();
        }
        std::iter::once(self.executable.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect()
    }

    /// The argv joined with single spaces, or `raw` when argv is empty.
    pub fn joined(&self) -> String {
        if self.executable.is_empty() {
            self.raw.clone()
        } else {
            self.argv().join(" ")
        }
    }

    /// The argv with leading wrappers (`sudo -u x`, `env A=1`, `timeout 5`, …) stripped.
    pub fn unwrapped(&self) -> Vec<&str> {
        unwrap_argv(&self.argv())
    }

    /// Every argv the command runs, its own first, as word slices (see [`Command::runs`]);
    /// nothing for a part without an executable.
    pub fn run_words(&self) -> impl Iterator<Item = &[Word]> {
        let own = (!self.words.is_empty()).then_some(&self.words[..]);
        own.into_iter()
            .chain(self.runs.iter().filter_map(|r| self.words.get(r.clone())))
    }

    /// Recomputes [`Command::runs`] from the words.
    pub(crate) fn find_runs(&mut self) -> wrappers::Found {
        let found = wrappers::runs_in_env(&self.words, &self.env);
        self.runs.clone_from(&found.runs);
        self.launched.clone_from(&found.launched);
        found
    }
}

/// Strips leading wrapper programs and their options from an argv.
///
/// While `argv[0]`'s basename is a wrapper (`sudo`, `env`, `timeout`, `xargs`, `busybox`, …),
/// it is dropped with its options, their values, its assignments and its operands
/// (`timeout`'s DURATION); a wrapper that runs nothing (`command -v x`) leaves nothing.
pub fn unwrap_argv<'a>(argv: &[&'a str]) -> Vec<&'a str> {
    argv[wrapper_prefix_len(argv)..].to_vec()
}

/// One command and the operator joining it to the next part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The command.
    pub command: Command,
    /// The operator after this command, if any. A host keeps the operator that follows it even
    /// though its nested parts sit between it and the next command of its level.
    pub op: Option<Op>,
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandLine {
    /// The exact input.
    pub raw: String,
    /// Every command in document order, nested ones right after their host.
    pub parts: Vec<Part>,
    /// Text of every shell comment, `#` stripped, nested payload comments included.
    pub comments: Vec<String>,
    /// True when tree-sitter reported a syntax error anywhere in the line.
    pub has_error: bool,
    /// Set when the line could not be read to the end (see [`Unreadable`]): callers matching
    /// commands must not take "not found" for "not run".
    pub unreadable: Option<Unreadable>,
    /// Set when an interpreter one-liner of the line (`python -c`, `node -e`, `perl -e`,
    /// `ruby -e`) runs code we could not read to the end (a call with a computed argument, an
    /// unterminated string, `eval` of computed text), or a command's program name is computed
    /// (`$CMD -rf /`, `bash -c "$X"`): why, for the user. The commands the line's literal text
    /// runs are parts of it either way; this says there may be more.
    pub unread_code: Option<String>,
}

impl CommandLine {
    /// Every command, nested ones included.
    pub fn commands(&self) -> impl Iterator<Item = &Command> {
        self.parts.iter().map(|p| &p.command)
    }

    /// The last top-level command (nested commands never count).
    pub fn primary(&self) -> Option<&Command> {
        self.commands().filter(|c| c.nesting == 0).last()
    }

    /// The first top-level command.
    pub fn head(&self) -> Option<&Command> {
        self.commands().find(|c| c.nesting == 0)
    }

    /// True when the line holds no command.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }
}

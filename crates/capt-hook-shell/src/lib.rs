//! Bash command lines parsed with tree-sitter-bash into the ordered list of commands they run.
//!
//! A [`CommandLine`] keeps every command it can find: top-level ones joined by operators, and
//! nested ones (`$(…)`, backticks, `sh -c '…'`, `eval …`) placed right after the command that
//! hosts them, with `nesting >= 1`. Conditions in `capt-hook-core` match against these parts.
//!
//! Choices worth knowing:
//! - heredoc bodies are data, unless they feed a shell (`bash <<EOF`); substitutions run
//!   wherever bash runs them: in words, assignments, redirect targets, here-strings and the
//!   bodies of heredocs whose delimiter is unquoted;
//! - words a redirect swallowed (`rm >log -rf /`) are arguments, as bash runs them, and the
//!   command loses its span;
//! - what a command runs through wrappers and runners (`sudo -u x rm`, `xargs rm`,
//!   `uv run rm`, `find -exec rm {} +`) is listed in [`Command::runs`]; command strings
//!   (`sh -c`, `eval`, `watch`, `parallel`, `ssh host cmd`, heredocs and here-strings fed to a
//!   shell) are re-parsed into nested parts, up to three levels deep;
//! - runners that substitute arguments (`parallel … ::: a`, `xargs -I{}` fed by a literal
//!   `echo`/`printf` or a here-string) and git aliases that shell out
//!   (`git -c alias.x='!…' x`) add the command lines that would run, rebuilt with the
//!   arguments in place, as nested parts without spans;
//! - interpreter one-liners (`python -c`, `node -e`, `perl -e`, `ruby -e`, or the same
//!   programs fed by a heredoc) add the command lines their literal calls run (`os.system`,
//!   `subprocess.run`, `execSync`, `system`, backticks) as nested parts without spans; a
//!   program we cannot read to the end says so in [`CommandLine::unread_code`], as does a
//!   command whose program's name is computed (`$CMD -rf /`, `bash -c "$X"`, `eval "$X"`);
//! - nesting is capped (about 50 levels of `$(…)`), so hostile input cannot exhaust the stack;
//!   a line cut short by a cap, by its length or by a syntax error says so in
//!   [`CommandLine::unreadable`], so callers can fail closed.

use std::rc::Rc;

mod command;
mod computed;
mod fast;
mod jobs;
mod line;
pub mod programs;
mod scripts;
mod source;
mod splice;
mod walk;
mod words;
mod wrappers;

pub use splice::SpliceError;
pub use words::Word;
pub use wrappers::{SHELLS, basename, wrapper_prefix_len};

pub use line::{
    Command, CommandLine, MAX_LINE_BYTES, Op, Part, QuoteLayer, Redirect, Unreadable, unwrap_argv,
};

impl CommandLine {
    /// Parses `raw`. Never fails: a line that does not parse cleanly still yields the commands
    /// tree-sitter recovered, with [`CommandLine::has_error`] set.
    pub fn parse(raw: &str) -> CommandLine {
        if raw.len() > MAX_LINE_BYTES {
            return CommandLine {
                raw: raw.to_owned(),
                unreadable: Some(Unreadable::TooLong),
                ..CommandLine::default()
            };
        }
        Self::parse_fast(raw).unwrap_or_else(|| Self::parse_full(raw))
    }

    /// The parser-free path alone: `Some` only for plain lines (tests compare it with
    /// [`CommandLine::parse_full`]).
    #[doc(hidden)]
    pub fn parse_fast(raw: &str) -> Option<CommandLine> {
        let mut line = fast::parse_simple(raw)?;
        computed::note(&mut line);
        Some(line)
    }

    /// Parses `raw` with tree-sitter, skipping the fast path for plain lines (the two agree;
    /// a differential test holds them to it).
    #[doc(hidden)]
    pub fn parse_full(raw: &str) -> CommandLine {
        let mut walker = walk::Walker::default();
        let src = source::Src {
            text: raw,
            map: source::SrcMap::Offset(0),
            contexts: Rc::from(Vec::new()),
            payload_depth: 0,
        };
        let top = walk::Level {
            nesting: 0,
            host: None,
            floor: 0,
            spans: true,
        };
        walker.walk_text(&src, top, 0);
        let unreadable = walker
            .unreadable
            .or(walker.has_error.then_some(Unreadable::SyntaxError));
        let mut line = CommandLine {
            raw: raw.to_owned(),
            parts: walker.parts,
            comments: walker.comments,
            has_error: walker.has_error,
            unreadable,
            unread_code: walker.unread_code,
        };
        computed::note(&mut line);
        line
    }
}

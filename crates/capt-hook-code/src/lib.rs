//! Code-aware hooks on ast-grep and tree-sitter: structural lint, diff lint, code and command
//! rewrites, the `pattern` condition and style rules.
//!
//! * [`Lang`] is the one registry of languages (ids, file extensions, grammars).
//! * [`CodePattern`] is an ast-grep pattern compiled and checked for one language;
//!   [`AnyLangPattern`] compiles per file language for the `pattern` condition.
//! * [`lint_pattern`], [`lint_regex`], [`diff_lint`], [`changed_lines`] and
//!   [`format_violations`] build a lint message; [`rewrite_code`] and [`CommandRewrite`]
//!   rewrite; [`check_style`] and [`format_style_report`] run a style guide.
//!
//! See the crate's README for patterns, metavariables and the grammar pitfalls.

mod lang;
mod lint;
mod pattern;
mod rewrite;
mod style;

pub use lang::Lang;
pub use lint::{
    Violation, changed_lines, diff_lint, diff_lint_parsed, format_violations, lint_parsed,
    lint_pattern, lint_regex, more_marker,
};
pub use pattern::{AnyLangPattern, CodePattern, Match, ParsedCode, matches};
pub use rewrite::{CommandRewrite, is_structural, rewrite_code};
pub use style::{
    CustomCheck, STYLE_ITEM_SEP, StyleCheck, StyleFinding, StyleRule, check_style,
    format_style_report,
};

/// Why a pattern, language or text could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    /// A language id that names no compiled-in grammar.
    #[error("unknown language `{0}` (known: py, ts, tsx, js, rs, go, bash)")]
    UnknownLanguage(String),
    /// A pattern that does not compile for its language.
    #[error("invalid {lang} pattern `{pattern}`: {reason}")]
    Pattern {
        /// The pattern as written.
        pattern: String,
        /// The language it was compiled for.
        lang: Lang,
        /// What is wrong with it.
        reason: String,
    },
    /// A pattern without a language that compiles in none of them.
    #[error("pattern `{pattern}` compiles in no supported language: {reasons}")]
    NoLanguage {
        /// The pattern as written.
        pattern: String,
        /// Each language's complaint.
        reasons: String,
    },
    /// tree-sitter could not produce a tree at all (it recovers from syntax errors, so this
    /// means the parser itself failed).
    #[error("could not parse {lang} text: {reason}")]
    Parse {
        /// The language.
        lang: Lang,
        /// The parser's explanation.
        reason: String,
    },
}

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

#![warn(missing_docs)]

mod comments;
mod lang;
mod lint;
pub mod matchers;
mod pattern;
mod rewrite;
mod style;

pub use comments::{
    CommentBlock, CommentBudget, added_comment_lines, comment_blocks, grown_over_budget,
    reworded_over_budget,
};
pub use lang::Lang;
pub use lint::{
    Violation, changed_lines, diff_lint, diff_lint_parsed, format_violations, lint_parsed,
    lint_pattern, lint_regex, more_marker,
};
pub use matchers::{Matcher, MatcherError};
pub use pattern::{AnyLangPattern, CodePattern, Match, ParsedCode, matches};
pub use rewrite::{CommandRewrite, is_structural, rewrite_code};
pub use style::{
    Change, CustomCheck, STYLE_ITEM_SEP, StyleCheck, StyleFinding, StyleRule, check_style,
    format_style_report,
};

/// Why a pattern, language or text could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodeError {
    /// A language id that names no compiled-in grammar.
    #[error("unknown language `{0}` (known: {known})", known = Lang::known_ids())]
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

#[cfg(test)]
mod robustness {
    use super::*;

    /// About 5 MB of Python with a print() every few lines.
    fn big_python() -> (String, usize) {
        let mut s = String::with_capacity(5_300_000);
        let mut i = 0;
        while s.len() < 5_000_000 {
            s.push_str(&format!(
                "def f{i}(x):\n    print(x, {i})\n    return x + {i}\n\n"
            ));
            i += 1;
        }
        (s, i)
    }

    #[test]
    fn a_five_megabyte_file_is_linted_diffed_and_rewritten() {
        let (post, defs) = big_python();
        assert!(post.len() >= 5_000_000 && defs > 77_777);
        let lines = post.lines().count();
        let pre = post.replacen("print(x, 77777)", "pass", 1);

        let changed = changed_lines(&pre, &post);
        assert_eq!(changed.len(), 1, "{changed:?}");
        let p = CodePattern::new("print($$$)", Lang::Python).unwrap();
        // One parse serves both the whole-file lint and the changed-lines lint.
        let parsed = ParsedCode::parse(Lang::Python, &post).unwrap();
        assert!(parsed.contains(&p));
        assert_eq!(lint_parsed(&p, &parsed, None).len(), defs);
        let on_edit = lint_parsed(&p, &parsed, Some(&changed));
        assert_eq!(on_edit.len(), 1);
        assert_eq!(on_edit[0].snippet, "print(x, 77777)");
        let fresh = diff_lint(&p, &pre, &post);
        assert_eq!(fresh, on_edit);
        let re = capt_hook_core::Pattern::new(r"return x \+ 5\d{4}$", capt_hook_core::Mode::Plain)
            .unwrap();
        assert_eq!(
            lint_regex(&re, &post, None).len(),
            10_000.min(defs - 50_000)
        );
        let args = CodePattern::new("print($$$A)", Lang::Python).unwrap();
        let out = rewrite_code(&args, "log($$$A)", &post).unwrap();
        assert_eq!(out.len(), post.len() - 2 * defs);

        // A rewrite of every line: the diff budget bounds the search.
        let other = post.replace("return", "yield");
        let changed = changed_lines(&post, &other);
        assert!(!changed.is_empty() && *changed.last().unwrap().end() <= lines);
    }

    #[test]
    fn odd_inputs_never_panic() {
        let deep = format!("x = {}1{}\n", "(".repeat(20_000), ")".repeat(20_000));
        let p = CodePattern::new("print($$$)", Lang::Python).unwrap();
        assert!(lint_pattern(&p, &deep, None).is_empty());
        // A repeated metavariable compares subtrees recursively; deep input must not overflow.
        let same = format!(
            "{0}1{1} == {0}1{1}\n",
            "(".repeat(20_000),
            ")".repeat(20_000)
        );
        let eq = CodePattern::new("$A == $A", Lang::Python).unwrap();
        assert_eq!(lint_pattern(&eq, &same, None).len(), 1);
        assert!(matches(&eq, &same));
        assert!(rewrite_code(&eq, "$A is $A", &same).is_some());
        let deep_js = format!("const a = {}1{};\n", "[".repeat(20_000), "]".repeat(20_000));
        let js = CodePattern::new("console.log($$$)", Lang::JavaScript).unwrap();
        assert!(lint_pattern(&js, &deep_js, None).is_empty());
        // NUL bytes, lone control characters, non-ASCII text, CRLF and unbalanced syntax.
        let odd = "print('\0')\r\nprint('é\u{1F600}')\r\n\u{7}def (((\nprint(x\n";
        let v = lint_pattern(&p, odd, None);
        // tree-sitter may read a NUL as the end of a token; what matters is that nothing panics.
        assert!(
            v.contains(&Violation::new(2, "print('é\u{1F600}')")),
            "{v:?}"
        );
        assert!(lint_pattern(&p, "", None).is_empty());
        assert!(diff_lint(&p, "", "").is_empty());
        assert_eq!(rewrite_code(&p, "x", ""), None);
        let r = CommandRewrite::new("cat $$$ARGS", "bat $$$ARGS").unwrap();
        assert_eq!(r.rewrite("echo \"unterminated | cat"), None);
        assert_eq!(
            r.rewrite("cat <<EOF\nhello\nEOF\n").as_deref(),
            Some("bat <<EOF\nhello\nEOF\n")
        );
        for lang in Lang::ALL {
            let parsed = ParsedCode::parse(lang, "\0\u{FFFD}((({{{").unwrap();
            assert!(parsed.has_syntax_error());
        }
    }
}

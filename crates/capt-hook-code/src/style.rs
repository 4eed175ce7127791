//! Style rules: a set of checks applied to one edit, reported as one aggregated message.

use std::collections::HashSet;
use std::fmt;
use std::ops::RangeInclusive;
use std::sync::{Arc, OnceLock};

use crate::Lang;
use crate::lint::{Changed, Violation, more_marker};
use crate::matchers::{Matcher, MatcherError};
use crate::pattern::{CodePattern, Match, ParsedCode, normalize_ws};

/// A check written as code: it reads the edit and returns violations.
pub type CustomCheck = Arc<dyn Fn(&Change<'_>) -> Vec<Violation> + Send + Sync>;

/// One edit of a file as a style check written as code sees it: the text before and after,
/// the path, and both parsed (the pre-edit tree only when a check asks for it).
pub struct Change<'a> {
    /// The post-edit text.
    pub source: &'a str,
    /// The pre-edit text (`""` for a new file).
    pub pre: &'a str,
    /// The file's path, for checks that look at its name.
    pub path: &'a str,
    tree: &'a ParsedCode,
    pre_tree: OnceLock<Option<ParsedCode>>,
}

impl<'a> Change<'a> {
    /// An edit whose post-edit text is already parsed as `tree`.
    pub fn new(tree: &'a ParsedCode, pre: &'a str, path: &'a str) -> Change<'a> {
        Change {
            source: tree.text(),
            pre,
            path,
            tree,
            pre_tree: OnceLock::new(),
        }
    }

    /// The parsed post-edit file.
    pub fn tree(&self) -> &ParsedCode {
        self.tree
    }

    /// The parsed pre-edit file, parsed on first use; `None` only when no parser could be set
    /// up (tree-sitter parses any text, recovering from syntax errors).
    pub fn pre_tree(&self) -> Option<&ParsedCode> {
        self.pre_tree
            .get_or_init(|| ParsedCode::parse(self.tree.lang(), self.pre).ok())
            .as_ref()
    }
}

/// What a style rule looks for.
#[derive(Clone)]
pub enum StyleCheck {
    /// An ast-grep pattern; each match is `<first line of match> (line N)`.
    Pattern(CodePattern),
    /// A structural matcher ([`crate::matchers`]), checked against the language when built.
    Matcher {
        /// The language whose files the matcher reads.
        lang: Lang,
        /// The matcher.
        matcher: Matcher,
    },
    /// A closure over the edit (Rust SDK only).
    Custom {
        /// The language whose files the closure reads.
        lang: Lang,
        /// The check itself.
        check: CustomCheck,
    },
}

impl fmt::Debug for StyleCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StyleCheck::Pattern(p) => write!(f, "{p:?}"),
            StyleCheck::Matcher { lang, matcher } => write!(f, "{matcher:?} ({lang})"),
            StyleCheck::Custom { lang, .. } => write!(f, "Custom({lang})"),
        }
    }
}

/// One rule of a style guide.
#[derive(Debug, Clone)]
pub struct StyleRule {
    /// The rule's name (`NoPrint`).
    pub name: String,
    /// What the rule matches.
    pub check: StyleCheck,
    /// The message; `{violations}` is replaced by the list, else the list is appended.
    pub message: String,
    /// Report only what the edit introduces (absent from the pre-edit file).
    pub diff: bool,
    /// What each violation is called in the list, instead of the matched code (patterns and
    /// matchers; a closure labels its own violations).
    pub label: Option<String>,
}

impl StyleRule {
    /// A rule matched by an ast-grep pattern.
    pub fn pattern(
        name: impl Into<String>,
        pattern: CodePattern,
        message: impl Into<String>,
        diff: bool,
    ) -> StyleRule {
        StyleRule {
            name: name.into(),
            check: StyleCheck::Pattern(pattern),
            message: message.into(),
            diff,
            label: None,
        }
    }

    /// A rule matched by a structural matcher in files of `lang`; refused when the matcher
    /// means nothing there ([`Matcher::check`]).
    pub fn matcher(
        name: impl Into<String>,
        lang: Lang,
        matcher: Matcher,
        message: impl Into<String>,
        diff: bool,
    ) -> Result<StyleRule, MatcherError> {
        matcher.check(lang)?;
        Ok(StyleRule {
            name: name.into(),
            check: StyleCheck::Matcher { lang, matcher },
            message: message.into(),
            diff,
            label: None,
        })
    }

    /// A rule written as a closure over the edit. With `diff`, only the violations whose text
    /// the same closure does not also report on the pre-edit file are kept.
    pub fn custom(
        name: impl Into<String>,
        lang: Lang,
        message: impl Into<String>,
        diff: bool,
        check: impl Fn(&Change<'_>) -> Vec<Violation> + Send + Sync + 'static,
    ) -> StyleRule {
        StyleRule {
            name: name.into(),
            check: StyleCheck::Custom {
                lang,
                check: Arc::new(check),
            },
            message: message.into(),
            diff,
            label: None,
        }
    }

    /// Names each violation `label` instead of by the matched code.
    pub fn label(mut self, label: impl Into<String>) -> StyleRule {
        self.label = Some(label.into());
        self
    }

    /// The language of files this rule applies to.
    pub fn lang(&self) -> Lang {
        match &self.check {
            StyleCheck::Pattern(p) => p.lang(),
            StyleCheck::Matcher { lang, .. } | StyleCheck::Custom { lang, .. } => *lang,
        }
    }
}

/// The violations one rule found.
#[derive(Debug, Clone)]
pub struct StyleFinding<'r> {
    /// The rule that found them.
    pub rule: &'r StyleRule,
    /// Violations on changed lines, in file order.
    pub violations: Vec<Violation>,
}

/// Applies every rule of `lang` to an edit of the file at `path`: `post` is the whole post-edit
/// text, `pre` the whole pre-edit text (`""` for a new file), `changed` the changed lines of
/// `post` (`None`: all of them). Each file is parsed once. Rules of other languages are
/// skipped; rules that find nothing are left out.
pub fn check_style<'r>(
    rules: &'r [StyleRule],
    lang: Lang,
    path: &str,
    pre: &str,
    post: &str,
    changed: Option<&[RangeInclusive<usize>]>,
) -> Vec<StyleFinding<'r>> {
    let applicable: Vec<&StyleRule> = rules.iter().filter(|r| r.lang() == lang).collect();
    if applicable.is_empty() {
        return Vec::new();
    }
    let Ok(after) = ParsedCode::parse(lang, post) else {
        return Vec::new();
    };
    let change = Change::new(&after, pre, path);
    let changed = changed.map(Changed::new);
    let touches = |line: usize, end: usize| changed.as_ref().is_none_or(|c| c.touches(line, end));
    let mut findings = Vec::new();
    for rule in applicable {
        // A diff rule's pre-edit file; the same parse serves every rule that asks.
        let before = if rule.diff { change.pre_tree() } else { None };
        let label = |mut v: Violation| {
            if let Some(l) = &rule.label {
                v.snippet.clone_from(l);
            }
            v
        };
        let violations: Vec<Violation> = match &rule.check {
            StyleCheck::Pattern(p) => {
                let seen: HashSet<String> = before
                    .map(|b| b.find(p).iter().map(Match::normalized).collect())
                    .unwrap_or_default();
                after
                    .find_where(p, touches)
                    .iter()
                    .filter(|m| !seen.contains(&m.normalized()))
                    .map(Violation::from_match)
                    .map(label)
                    .collect()
            }
            StyleCheck::Matcher { matcher, .. } => {
                let label = rule.label.as_deref();
                match before {
                    Some(before) => matcher.diff(before, &after, label),
                    None => matcher.violations(&after, label),
                }
                .into_iter()
                .filter(|v| touches(v.line, v.line))
                .collect()
            }
            StyleCheck::Custom { check, .. } => {
                let seen: HashSet<String> = before
                    .map(|b| {
                        check(&Change::new(b, "", path))
                            .iter()
                            .map(|v| normalize_ws(&v.snippet))
                            .collect()
                    })
                    .unwrap_or_default();
                check(&change)
                    .into_iter()
                    .filter(|v| {
                        touches(v.line, v.line) && !seen.contains(&normalize_ws(&v.snippet))
                    })
                    .collect()
            }
        };
        if !violations.is_empty() {
            findings.push(StyleFinding { rule, violations });
        }
    }
    findings
}

/// The separator between the items of one rule's section.
pub const STYLE_ITEM_SEP: &str = "\n  - ";

/// The aggregated message: one section per finding, joined by a blank line. In each section the
/// first `max_shown` items (`<snippet> (line N)`, then `…(+K more)`) are joined with
/// `"\n  - "` and replace `{violations}` in the rule's message, or follow the message after a
/// first `"\n  - "` when it has no placeholder. `None` when nothing was found.
pub fn format_style_report(findings: &[StyleFinding<'_>], max_shown: usize) -> Option<String> {
    if findings.is_empty() {
        return None;
    }
    let sections: Vec<String> = findings
        .iter()
        .map(|f| {
            let mut items: Vec<String> = f
                .violations
                .iter()
                .take(max_shown)
                .map(Violation::to_string)
                .collect();
            if f.violations.len() > max_shown {
                items.push(more_marker(f.violations.len() - max_shown));
            }
            let list = items.join(STYLE_ITEM_SEP);
            if f.rule.message.contains("{violations}") {
                f.rule.message.replace("{violations}", &list)
            } else {
                format!("{}{STYLE_ITEM_SEP}{list}", f.rule.message)
            }
        })
        .collect();
    Some(sections.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changed_lines;

    fn rules() -> Vec<StyleRule> {
        vec![
            StyleRule::pattern(
                "NoPrint",
                CodePattern::new("print($$$)", Lang::Python).unwrap(),
                "Use logging instead of print(): {violations}",
                false,
            ),
            StyleRule::pattern(
                "NoNewStarImport",
                CodePattern::new("from $M import *", Lang::Python).unwrap(),
                "Wildcard import added",
                true,
            ),
        ]
    }

    #[test]
    fn edits_report_only_changed_lines() {
        // code.jsonl CA35, step 1.
        let pre = "import logging\nfrom os.path import *\n\nlog = logging.getLogger(__name__)\n\n\ndef run(jobs):\n    print('legacy banner')\n    for job in jobs:\n        job.start()\n    return len(jobs)\n";
        let post = "import logging\nfrom os.path import *\n\nlog = logging.getLogger(__name__)\n\n\ndef run(jobs):\n    print('legacy banner')\n    for job in jobs:\n        print('starting', job)\n        job.start()\n        print('started')\n    return len(jobs)\n";
        let rules = rules();
        let changed = changed_lines(pre, post);
        let found = check_style(&rules, Lang::Python, "app.py", pre, post, Some(&changed));
        assert_eq!(
            format_style_report(&found, 5).unwrap(),
            "Use logging instead of print(): print('starting', job) (line 10)\n  - print('started') (line 12)"
        );
        // Step 2: a new wildcard import next to an old one.
        let pre = "import logging\nfrom os.path import *\n\nlog = logging.getLogger(__name__)\n\n\ndef run(jobs):\n    print('legacy banner')\n    for job in jobs:\n        job.start()\n    return len(jobs)\n";
        let post = "import logging\nfrom pathlib import *\nfrom os.path import *\n\nlog = logging.getLogger(__name__)\n\n\ndef run(jobs):\n    print('legacy banner')\n    for job in jobs:\n        job.start()\n    return len(jobs)\n";
        let changed = changed_lines(pre, post);
        let found = check_style(&rules, Lang::Python, "app.py", pre, post, Some(&changed));
        assert_eq!(
            format_style_report(&found, 5).unwrap(),
            "Wildcard import added\n  - from pathlib import * (line 2)"
        );
    }

    #[test]
    fn a_new_file_reports_every_rule() {
        // code.jsonl CA36.
        let post = "from typing import *\nfrom os.path import *\n\nprint(join(\"a\", \"b\"))\n";
        let rules = rules();
        let found = check_style(&rules, Lang::Python, "app.py", "", post, None);
        assert_eq!(
            format_style_report(&found, 5).unwrap(),
            "Use logging instead of print(): print(join(\"a\", \"b\")) (line 4)\n\nWildcard import added\n  - from typing import * (line 1)\n  - from os.path import * (line 2)"
        );
        assert!(check_style(&rules, Lang::TypeScript, "app.ts", "", post, None).is_empty());
        assert!(format_style_report(&[], 5).is_none());
    }

    #[test]
    fn truncation_and_custom_rules() {
        let post = "print(1)\nprint(2)\nprint(3)\n";
        let rules = rules();
        let found = check_style(&rules, Lang::Python, "app.py", "", post, None);
        assert_eq!(
            format_style_report(&found, 2).unwrap(),
            "Use logging instead of print(): print(1) (line 1)\n  - print(2) (line 2)\n  - …(+1 more)"
        );

        // A closure over the tree: flag functions with more than one parameter.
        let wide = StyleRule::custom(
            "WideFn",
            Lang::Rust,
            "Too many parameters: {violations}",
            true,
            |change| {
                let code = change.tree();
                let mut out = Vec::new();
                let mut stack = vec![code.ts_root()];
                while let Some(node) = stack.pop() {
                    if node.kind() == "function_item"
                        && let Some(params) = node.child_by_field_name("parameters")
                        && params.named_child_count() > 1
                    {
                        let name = node
                            .child_by_field_name("name")
                            .map(|n| &code.text()[n.byte_range()]);
                        out.push(Violation::new(
                            node.start_position().row + 1,
                            format!("fn {}", name.unwrap_or("?")),
                        ));
                    }
                    let mut cursor = node.walk();
                    stack.extend(node.children(&mut cursor));
                }
                out.sort_by_key(|v| v.line);
                out
            },
        );
        let rules = [wide];
        let pre = "fn a(x: u8, y: u8) {}\n";
        let post = "fn a(x: u8, y: u8) {}\nfn b(x: u8, y: u8) {}\nfn c(x: u8) {}\n";
        let changed = changed_lines(pre, post);
        let found = check_style(&rules, Lang::Rust, "lib.rs", pre, post, Some(&changed));
        assert_eq!(
            format_style_report(&found, 5).unwrap(),
            "Too many parameters: fn b (line 2)"
        );
    }
}

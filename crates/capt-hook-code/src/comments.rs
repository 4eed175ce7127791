//! Comment blocks and their budget, for the comment-budget guard: a run of comment lines says
//! one non-obvious thing, and an edit that leaves a long one has usually restated the code.
//!
//! A *block* is a run of whole-line comments (tree-sitter comment nodes with only indentation
//! before them) on consecutive lines; a blank line or a line of code ends it. Trailing comments
//! (`x = 1  # meters`) are not blocks. A *doc* block (`///`, `//!`, `/** … */`) is documentation
//! a tool renders, so only its opening paragraph is held to a budget, a larger one.

use crate::{Lang, ParsedCode};

/// How long a comment block may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommentBudget {
    /// Lines of a plain block.
    pub lines: usize,
    /// Characters of a plain block (its lines trimmed, markers included).
    pub chars: usize,
    /// Lines of a doc block's opening paragraph.
    pub doc_lines: usize,
    /// Characters of a doc block's opening paragraph.
    pub doc_chars: usize,
}

impl Default for CommentBudget {
    /// The original's caps: three lines or 200 characters for a plain block, six lines or 400
    /// characters for a doc comment's opening paragraph.
    fn default() -> CommentBudget {
        CommentBudget {
            lines: 3,
            chars: 200,
            doc_lines: 6,
            doc_chars: 400,
        }
    }
}

/// One block of comment lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentBlock {
    /// First line, 1-based.
    pub start: usize,
    /// Last line, 1-based, inclusive.
    pub end: usize,
    /// The block's lines, trimmed.
    pub text: Vec<String>,
    /// A doc comment.
    pub doc: bool,
}

impl CommentBlock {
    /// Lines in the block.
    pub fn lines(&self) -> usize {
        self.text.len()
    }

    /// True when the block is over `budget`: a plain block by its lines or characters, a doc
    /// block by its opening paragraph's.
    pub fn over(&self, budget: &CommentBudget) -> bool {
        if self.doc {
            let head: Vec<&String> = self
                .text
                .iter()
                .skip_while(|l| is_bare_marker(l))
                .take_while(|l| !is_bare_marker(l))
                .collect();
            let chars: usize = head.iter().map(|l| l.chars().count()).sum();
            head.len() > budget.doc_lines || chars > budget.doc_chars
        } else {
            let chars: usize = self.text.iter().map(|l| l.chars().count()).sum();
            self.lines() > budget.lines || chars > budget.chars
        }
    }

    /// The block's words with markers and spacing dropped, line by line: two spellings of one
    /// comment (re-indented, re-spaced) compare equal.
    fn words(&self) -> Vec<String> {
        self.text
            .iter()
            .map(|l| {
                l.trim_start_matches(['/', '*', '#', '!', '-', ';'])
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|l| !l.is_empty())
            .collect()
    }
}

/// A doc line with nothing but its marker: the paragraph break of a doc comment.
fn is_bare_marker(line: &str) -> bool {
    line.trim_matches(|c: char| matches!(c, '/' | '*' | '!' | '#') || c.is_whitespace())
        .is_empty()
}

/// The comment blocks of `text` in `lang`; none when it does not parse.
pub fn comment_blocks(lang: Lang, text: &str) -> Vec<CommentBlock> {
    let Ok(parsed) = ParsedCode::parse(lang, text) else {
        return Vec::new();
    };
    let lines: Vec<&str> = text.lines().collect();
    // Whole-line comment lines, with whether they are doc lines.
    let mut marked: Vec<Option<bool>> = vec![None; lines.len()];
    let mut stack = vec![parsed.ts_root()];
    while let Some(node) = stack.pop() {
        if node.kind().contains("comment") {
            let start = node.start_position();
            let end = node.end_position();
            let Some(line) = lines.get(start.row) else {
                continue;
            };
            let before = line.get(..start.column).unwrap_or("");
            if !before.trim().is_empty() {
                continue;
            }
            let first = line.trim_start();
            // A shebang is an interpreter line, not a comment.
            if start.row == 0 && first.starts_with("#!") {
                continue;
            }
            let doc = is_doc(lang, first);
            // A block comment's closing line can hold code after it (`*/ x()`): it still
            // belongs to the comment.
            let last = if end.column == 0 && end.row > start.row {
                end.row - 1
            } else {
                end.row
            };
            let rows = start.row..=last.min(lines.len().saturating_sub(1));
            for mark in marked.iter_mut().take(*rows.end() + 1).skip(*rows.start()) {
                *mark = Some(doc);
            }
            continue;
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    let mut blocks: Vec<CommentBlock> = Vec::new();
    for (row, mark) in marked.iter().enumerate() {
        let Some(doc) = *mark else {
            continue;
        };
        let line = lines[row].trim().to_owned();
        match blocks.last_mut() {
            Some(b) if b.end == row && b.doc == doc => {
                b.end = row + 1;
                b.text.push(line);
            }
            _ => blocks.push(CommentBlock {
                start: row + 1,
                end: row + 1,
                text: vec![line],
                doc,
            }),
        }
    }
    // Python's inline script metadata (`# /// script` … `# ///`) is data for a tool.
    blocks.retain(|b| {
        !(b.text
            .first()
            .is_some_and(|l| l.starts_with("# /// script"))
            && b.text.last().is_some_and(|l| l == "# ///"))
    });
    blocks
}

fn is_doc(lang: Lang, first: &str) -> bool {
    match lang {
        Lang::Rust => {
            (first.starts_with("///") && !first.starts_with("////"))
                || first.starts_with("//!")
                || first.starts_with("/**")
                || first.starts_with("/*!")
        }
        Lang::TypeScript | Lang::Tsx | Lang::JavaScript => first.starts_with("/**"),
        _ => false,
    }
}

/// The over-budget blocks `after` has that `before` did not have at that length: new ones, and
/// ones grown longer than the block they came from. A block comes from a block of `before` when
/// they share a line of text; rewording or re-indenting a long block it already had is not
/// counted, a block moved elsewhere with new words is.
pub fn grown_over_budget(
    lang: Lang,
    before: &str,
    after: &str,
    budget: &CommentBudget,
) -> Vec<CommentBlock> {
    let old = comment_blocks(lang, before);
    comment_blocks(lang, after)
        .into_iter()
        .filter(|b| b.over(budget))
        .filter(|b| {
            let words = b.words();
            let ancestors: Vec<&CommentBlock> = old
                .iter()
                .filter(|o| o.words().iter().any(|w| words.contains(w)))
                .collect();
            ancestors.is_empty() || ancestors.iter().all(|a| b.lines() > a.lines())
        })
        .collect()
}

/// The over-budget blocks of `before` that `after` rewords without growing: a block of `after`
/// that shares a line of text with a long block of `before`, is no longer than it, and is not
/// its words unchanged. Rewording a long comment is the moment to shorten it, so the comment
/// guard's advisory sibling warns; [`grown_over_budget`] blocks only what grew.
pub fn reworded_over_budget(
    lang: Lang,
    before: &str,
    after: &str,
    budget: &CommentBudget,
) -> Vec<CommentBlock> {
    let old: Vec<CommentBlock> = comment_blocks(lang, before)
        .into_iter()
        .filter(|b| b.over(budget))
        .collect();
    if old.is_empty() {
        return Vec::new();
    }
    comment_blocks(lang, after)
        .into_iter()
        .filter(|b| b.over(budget))
        .filter(|b| {
            let words = b.words();
            old.iter().any(|o| {
                let old_words = o.words();
                old_words.iter().any(|w| words.contains(w))
                    && b.lines() <= o.lines()
                    && old_words != words
            })
        })
        .collect()
}

/// What an edit adds, counted in lines: `(comment, all)`, where `all` is the non-blank lines
/// of `after` that `before` did not have (as many times as it had them) and `comment` those of
/// them inside a comment block (trailing comments are code lines). The comment guard's other
/// advisory sibling warns when most of what an edit adds is comments.
pub fn added_comment_lines(lang: Lang, before: &str, after: &str) -> (usize, usize) {
    let mut old: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for line in before.lines().map(str::trim).filter(|l| !l.is_empty()) {
        *old.entry(line).or_default() += 1;
    }
    let blocks = comment_blocks(lang, after);
    let in_block = |row: usize| blocks.iter().any(|b| (b.start..=b.end).contains(&row));
    let (mut comment, mut all) = (0, 0);
    for (i, line) in after.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match old.get_mut(line) {
            Some(n) if *n > 0 => *n -= 1,
            _ => {
                all += 1;
                if in_block(i + 1) {
                    comment += 1;
                }
            }
        }
    }
    (comment, all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grown(lang: Lang, before: &str, after: &str) -> usize {
        grown_over_budget(lang, before, after, &CommentBudget::default()).len()
    }

    #[test]
    fn rewording_a_long_block_is_told_apart_from_keeping_or_growing_it() {
        let budget = CommentBudget::default();
        let long = "# one here\n# two here\n# three here\n# four here\nx = 1\n";
        let reworded = "# one here\n# two, said again\n# three here\n# four here\nx = 1\n";
        let shorter = "# one here\n# three here\nx = 1\n";
        let grown = "# one here\n# two here\n# three here\n# four here\n# five\nx = 1\n";
        let reindented = "#   one here\n# two here\n# three here\n# four here\nx = 2\n";
        let r = |a: &str| reworded_over_budget(Lang::Python, long, a, &budget).len();
        assert_eq!(r(reworded), 1);
        assert_eq!(r(shorter), 0, "shortened under the budget");
        assert_eq!(r(grown), 0, "grown: the guard's, not the warning's");
        assert_eq!(r(reindented), 0, "same words");
        assert_eq!(
            reworded_over_budget(Lang::Python, "x = 1\n", reworded, &budget).len(),
            0,
            "a new block is the guard's"
        );
    }

    #[test]
    fn added_lines_count_comments_apart_from_code() {
        let before = "x = 1\n";
        let after = "x = 1\n# why y\n# is two\n# here\ny = 2  # trailing\n\n";
        assert_eq!(added_comment_lines(Lang::Python, before, after), (3, 4));
        // A line the file already had twice, added a third time, is added.
        assert_eq!(
            added_comment_lines(Lang::Python, "a = 1\na = 1\n", "a = 1\na = 1\na = 1\n"),
            (0, 1)
        );
        assert_eq!(
            added_comment_lines(Lang::Rust, "fn f() {}\n", "fn f() {}\n"),
            (0, 0)
        );
    }

    #[test]
    fn plain_blocks_are_capped_by_lines_and_characters() {
        let four = "# one here\n# two here\n# three here\n# four here\nx = 1\n";
        let three = "# one here\n# two here\n# three here\nx = 1\n";
        assert_eq!(grown(Lang::Python, "", four), 1);
        assert_eq!(grown(Lang::Python, "", three), 0);
        let long = format!(
            "package p\n\nfunc F() {{\n\t// {}\n\tx := 1\n}}\n",
            "x".repeat(198)
        );
        let short = format!(
            "package p\n\nfunc F() {{\n\t// {}\n\tx := 1\n}}\n",
            "x".repeat(197)
        );
        assert_eq!(grown(Lang::Go, "", &long), 1);
        assert_eq!(grown(Lang::Go, "", &short), 0);
        // A blank line ends a block.
        let split = "# a here\n# b here\n\n# c here\n# d here\nx = 1\n";
        assert_eq!(grown(Lang::Python, "", split), 0);
        // Trailing comments, a shebang and script metadata are not blocks.
        let trailing = "a = 1  # m\nb = 2  # m\nc = 3  # m\nd = 4  # m\n";
        assert_eq!(grown(Lang::Python, "", trailing), 0);
        let shebang = "#!/usr/bin/env python3\n# one\n# two\n# three\nx = 1\n";
        assert_eq!(grown(Lang::Python, "", shebang), 0);
        let script =
            "# /// script\n# requires-python = \">=3.13\"\n# dependencies = []\n# ///\nx = 1\n";
        assert_eq!(grown(Lang::Python, "", script), 0);
        // A block comment counts its lines.
        let block = "/*\n one\n two\n three\n four\n*/\nfn f() {}\n";
        assert_eq!(grown(Lang::Rust, "", block), 1);
    }

    #[test]
    fn doc_comments_are_capped_by_their_opening_paragraph() {
        let six = "/// one\n/// two\n/// three\n/// four\n/// five\n/// six\npub fn f() {}\n";
        let seven =
            "/// one\n/// two\n/// three\n/// four\n/// five\n/// six\n/// seven\npub fn f() {}\n";
        assert_eq!(grown(Lang::Rust, "", six), 0);
        assert_eq!(grown(Lang::Rust, "", seven), 1);
        let headed = "/// Summary.\n///\n/// a\n/// b\n/// c\n/// d\n/// e\n/// f\npub fn f() {}\n";
        assert_eq!(grown(Lang::Rust, "", headed), 0);
        let js = "/**\n * Summary.\n *\n * a\n * b\n * c\n * d\n * e\n */\nfunction f() {}\n";
        assert_eq!(grown(Lang::JavaScript, "", js), 0);
        // Python docstrings are strings, never comment blocks.
        let py = "def f():\n    \"\"\"\n    a\n    b\n    c\n    d\n    \"\"\"\n";
        assert_eq!(grown(Lang::Python, "", py), 0);
    }

    #[test]
    fn only_new_or_lengthened_blocks_count() {
        let long = "# a here\n# b here\n# c here\n# d here\nx = 1\n";
        // Untouched, reworded or re-spaced: the block was already that long.
        assert_eq!(grown(Lang::Python, long, long), 0);
        let reworded = long.replace("# b here", "# b reworded here");
        assert_eq!(grown(Lang::Python, long, &reworded), 0);
        let respaced = long.replace("# ", "#  ");
        assert_eq!(grown(Lang::Python, long, &respaced), 0);
        // Lengthened, or grown past the budget.
        let longer = long.replace("# d here", "# d here\n# e here");
        assert_eq!(grown(Lang::Python, long, &longer), 1);
        let three = "# a here\n# b here\n# c here\nx = 1\n";
        assert_eq!(grown(Lang::Python, three, long), 1);
        // Moved with new words: new.
        let moved = "x = 1\n# new one\n# new two\n# new three\n# new four\ny = 2\n";
        assert_eq!(grown(Lang::Python, long, moved), 1);
    }
}

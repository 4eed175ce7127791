//! The per-thread tree-sitter parser and the mapping of re-parsed text back to the raw line.

use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

use tree_sitter::{Parser, Tree};

use crate::QuoteLayer;

thread_local! {
    // Creating a parser and loading the grammar costs more than parsing a short command, so
    // each thread keeps one.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn new_parser() -> Option<Parser> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    Some(parser)
}

/// Parses `text` as bash; `None` only if the grammar cannot be loaded or the text is too large
/// for tree-sitter's 32-bit offsets.
pub(crate) fn parse_tree(text: &str) -> Option<Tree> {
    if u32::try_from(text.len()).is_err() {
        return None;
    }
    let cached = PARSER.try_with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            *slot = new_parser();
        }
        slot.as_mut()?.parse(text, None)
    });
    match cached {
        Ok(tree) => tree,
        // Thread-local storage is being torn down: fall back to a one-off parser.
        Err(_) => new_parser()?.parse(text, None),
    }
}

/// Maps byte offsets of a text being walked to byte offsets in [`crate::CommandLine::raw`].
#[derive(Debug, Clone)]
pub(crate) enum SrcMap {
    /// The text is a slice of the raw line starting at this offset.
    Offset(usize),
    /// The text was rebuilt (a dequoted payload): entry `i - start` is the raw offset of byte `i`.
    Table(Rc<[usize]>, usize),
    /// The text cannot be mapped back (spans are `None`).
    Unmapped,
}

impl SrcMap {
    /// The raw offset of local byte `i`.
    pub(crate) fn at(&self, i: usize) -> Option<usize> {
        match self {
            SrcMap::Offset(o) => o.checked_add(i),
            SrcMap::Table(t, start) => t.get(start.checked_add(i)?).copied(),
            SrcMap::Unmapped => None,
        }
    }

    /// The raw range covering local range `r` (from its first byte to just after its last).
    pub(crate) fn range(&self, r: Range<usize>) -> Option<Range<usize>> {
        if r.is_empty() {
            return None;
        }
        let start = self.at(r.start)?;
        let end = self.at(r.end - 1)? + 1;
        (start < end).then_some(start..end)
    }

    /// The map of the sub-text starting at local offset `by`.
    pub(crate) fn shifted(&self, by: usize) -> SrcMap {
        match self {
            SrcMap::Offset(o) => SrcMap::Offset(o + by),
            SrcMap::Table(t, start) => SrcMap::Table(Rc::clone(t), start + by),
            SrcMap::Unmapped => SrcMap::Unmapped,
        }
    }

    /// Composes a payload's local-to-parent `table` with this parent map.
    pub(crate) fn compose(&self, table: &[usize]) -> SrcMap {
        let mapped: Option<Vec<usize>> = table.iter().map(|&i| self.at(i)).collect();
        match mapped {
            Some(v) => SrcMap::Table(v.into(), 0),
            None => SrcMap::Unmapped,
        }
    }
}

/// One text being walked: the top-level line, a remainder after a heredoc, or a payload.
pub(crate) struct Src<'s> {
    /// The text tree-sitter parsed.
    pub text: &'s str,
    /// Where its bytes are in the raw line.
    pub map: SrcMap,
    /// Quote layers around this text (payloads only), outermost first.
    pub contexts: Rc<[QuoteLayer]>,
    /// How many payload re-parses led here (0 for the raw line).
    pub payload_depth: u8,
}

impl Src<'_> {
    /// The text of a local byte range, or "" when it is not on character boundaries.
    pub(crate) fn slice(&self, r: Range<usize>) -> &str {
        self.text.get(r).unwrap_or("")
    }
}

//! The per-thread tree-sitter parser and the mapping of re-parsed text back to the raw line.

use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{ParseOptions, ParseState, Parser, Tree};

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

/// Replaces, byte for byte, the characters tree-sitter-bash 0.25's scanner would hand to C's
/// `isdigit`: it does so for the character after `{`, `{12` or `{1..2` (a brace range), and
/// `isdigit` on a code point past 255 reads outside its table, which crashes the process
/// (`{` followed by U+E0000, the emoji tag characters, is enough). The stand-in is `x` repeated
/// to the same length, so byte offsets, and the words read back from the original text, are
/// unchanged.
fn defuse(text: &str) -> std::borrow::Cow<'_, str> {
    let b = text.as_bytes();
    let mut hits = Vec::new();
    let mut i = 0;
    while let Some(k) = b[i..].iter().position(|&c| c == b'{') {
        let mut j = i + k + 1;
        let digits = |j: &mut usize| {
            while b.get(*j).is_some_and(u8::is_ascii_digit) {
                *j += 1;
            }
        };
        digits(&mut j);
        if b.get(j..j + 2) == Some(b"..") {
            j += 2;
            digits(&mut j);
        }
        // Lead bytes from 0xC4 on start code points of 0x100 and above.
        if b.get(j).is_some_and(|&c| c >= 0xC4) {
            let len = text[j..].chars().next().map_or(1, char::len_utf8);
            hits.push(j..j + len);
        }
        i = j.max(i + k + 1);
    }
    if hits.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = text.as_bytes().to_vec();
    for r in hits {
        out[r].fill(b'x');
    }
    // Whole characters were replaced by ASCII, so the bytes are still UTF-8.
    std::borrow::Cow::Owned(String::from_utf8(out).unwrap_or_default())
}

/// How long tree-sitter may take for a text of `len` bytes. It parses ordinary lines at well
/// under a microsecond per byte, but its error recovery slows down more than linearly on some
/// garbage; past this budget the parse is given up and the line reported unreadable, which
/// keeps every line's cost linear in its length.
fn budget(len: usize) -> Duration {
    // Unoptimised builds (tests) run the C parser many times slower.
    let scale = if cfg!(debug_assertions) { 20 } else { 1 };
    (Duration::from_millis(50) + Duration::from_micros(u64::try_from(len).unwrap_or(u64::MAX)))
        * scale
}

/// Parses `text` as bash; `None` if the grammar cannot be loaded, the text is too large for
/// tree-sitter's 32-bit offsets, or the parse overran its [`budget`].
pub(crate) fn parse_tree(text: &str) -> Option<Tree> {
    if u32::try_from(text.len()).is_err() {
        return None;
    }
    let text = defuse(text);
    let bytes = text.as_bytes();
    let deadline = Instant::now() + budget(bytes.len());
    let parse = |parser: &mut Parser| {
        let mut progress = |_: &ParseState| {
            if Instant::now() > deadline {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let options = ParseOptions::new().progress_callback(&mut progress);
        let tree = parser.parse_with_options(
            &mut |i: usize, _| bytes.get(i..).unwrap_or_default(),
            None,
            Some(options),
        );
        // A cancelled parse would resume where it stopped on the next call.
        parser.reset();
        tree
    };
    let cached = PARSER.try_with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            *slot = new_parser();
        }
        parse(slot.as_mut()?)
    });
    match cached {
        Ok(tree) => tree,
        // Thread-local storage is being torn down: fall back to a one-off parser.
        Err(_) => parse(&mut new_parser()?),
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
    /// A command string found in this text, one quote layer and one payload level deeper.
    pub(crate) fn nested<'t>(&self, text: &'t str, map: SrcMap, layer: QuoteLayer) -> Src<'t> {
        let mut contexts = self.contexts.to_vec();
        contexts.push(layer);
        Src {
            text,
            map,
            contexts: contexts.into(),
            payload_depth: self.payload_depth + 1,
        }
    }

    /// The text of a local byte range, or "" when it is not on character boundaries.
    pub(crate) fn slice(&self, r: Range<usize>) -> &str {
        self.text.get(r).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scanner_crashers_are_defused() {
        assert_eq!(defuse("echo {a,b}"), "echo {a,b}");
        assert_eq!(defuse("{\u{E0000}"), "{xxxx");
        assert_eq!(defuse("{12\u{10FFFF}"), "{12xxxx");
        assert_eq!(defuse("{1..2é}"), "{1..2é}");
        assert_eq!(defuse("{1..2\u{100}} {"), "{1..2xx} {");
        for line in ["{\u{E0000}", "{\u{10FFFF}", "echo {1..\u{E0067}"] {
            assert!(parse_tree(line).is_some());
        }
    }
}

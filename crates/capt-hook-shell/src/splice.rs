//! Rewriting parts of a command line in place.

use crate::{CommandLine, QuoteLayer};

/// Why [`CommandLine::splice`] refused a set of replacements.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpliceError {
    /// The index is not a part of the line.
    #[error("part {index} is out of range (the line has {len} parts)")]
    OutOfRange {
        /// The requested index.
        index: usize,
        /// How many parts the line has.
        len: usize,
    },
    /// The part has no span (nested in a word, or its source cannot be mapped).
    #[error("part {index} cannot be spliced: it has no span")]
    NoSpan {
        /// The requested index.
        index: usize,
    },
    /// Two replaced parts overlap (or the same part is replaced twice).
    #[error("parts {first} and {second} overlap")]
    Overlap {
        /// The earlier part.
        first: usize,
        /// The later part.
        second: usize,
    },
    /// The replacement would break out of the quotes enclosing a payload part.
    #[error("replacement for part {index} cannot be embedded in its {layer:?} quote layer")]
    Unembeddable {
        /// The requested index.
        index: usize,
        /// The layer the replacement does not survive.
        layer: QuoteLayer,
    },
}

/// True when `text` can be written inside `layer` and come out unchanged.
fn survives(text: &str, layer: QuoteLayer) -> bool {
    match layer {
        QuoteLayer::Single => !text.contains('\''),
        QuoteLayer::Double => {
            let mut chars = text.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' if !matches!(chars.next(), Some('"' | '$' | '`' | '\\')) => return false,
                    '\\' => {}
                    '"' | '$' | '`' => return false,
                    _ => {}
                }
            }
            true
        }
        QuoteLayer::Bare => text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c)),
    }
}

impl CommandLine {
    /// Returns `raw` with each `(part index, replacement)` written over that part's span.
    ///
    /// Fails for an out-of-range index, a span-less part, overlapping spans, or a replacement
    /// that would not survive the quote layers around a payload part.
    pub fn splice(&self, replacements: &[(usize, String)]) -> Result<String, SpliceError> {
        let mut edits = Vec::with_capacity(replacements.len());
        for (index, text) in replacements {
            let index = *index;
            let part = self.parts.get(index).ok_or(SpliceError::OutOfRange {
                index,
                len: self.parts.len(),
            })?;
            let span = part
                .command
                .span
                .clone()
                .filter(|s| self.raw.get(s.clone()).is_some())
                .ok_or(SpliceError::NoSpan { index })?;
            if let Some(&layer) = part.command.contexts.iter().find(|&&l| !survives(text, l)) {
                return Err(SpliceError::Unembeddable { index, layer });
            }
            edits.push((span, index, text.as_str()));
        }
        edits.sort_by_key(|(span, index, _)| (span.start, *index));
        for pair in edits.windows(2) {
            if pair[1].0.start < pair[0].0.end {
                let (a, b) = (pair[0].1.min(pair[1].1), pair[0].1.max(pair[1].1));
                return Err(SpliceError::Overlap {
                    first: a,
                    second: b,
                });
            }
        }
        let mut out = String::with_capacity(self.raw.len());
        let mut pos = 0;
        for (span, _, text) in edits {
            out.push_str(&self.raw[pos..span.start]);
            out.push_str(text);
            pos = span.end;
        }
        out.push_str(&self.raw[pos..]);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_survival() {
        assert!(survives("git stash", QuoteLayer::Single));
        assert!(!survives("it's", QuoteLayer::Single));
        assert!(survives(r#"echo \"hi\""#, QuoteLayer::Double));
        assert!(!survives(r#"echo "hi""#, QuoteLayer::Double));
        assert!(!survives("echo $HOME", QuoteLayer::Double));
        assert!(!survives(r"a\b", QuoteLayer::Double));
        assert!(survives("git-stash", QuoteLayer::Bare));
        assert!(!survives("git stash", QuoteLayer::Bare));
    }
}

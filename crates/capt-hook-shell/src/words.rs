//! Word-level helpers: one-layer quote stripping and full dequoting with taint detection.
//!
//! tree-sitter tells us where a word starts and ends, but its inner node shapes vary a lot
//! (`$"…"` splits into two nodes, backticks swallow leading blanks, …). Dequoting therefore runs
//! a small lexer over the word's source text, which behaves the same whatever the tree looks like.

use std::ops::Range;

/// One argv word with its structural information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The text used in `executable`/`args`: one outer quote pair stripped, else verbatim.
    pub text: String,
    /// The fully dequoted and unescaped value; `None` when an unresolved expansion taints it.
    pub value: Option<String>,
    /// True when the unquoted word holds a glob (`* ? [`), a brace list/range, or a leading `~`.
    pub expandable: bool,
    /// Byte range of the word in [`crate::CommandLine::raw`], when it can be mapped there.
    pub span: Option<Range<usize>>,
}

impl Word {
    /// The text a program sees: the dequoted value, or the source text when an expansion
    /// leaves the value unknown.
    pub fn key(&self) -> &str {
        self.value.as_deref().unwrap_or(&self.text)
    }
}

impl AsRef<str> for Word {
    fn as_ref(&self) -> &str {
        self.key()
    }
}

/// Strips exactly one pair of matching outer quotes for `"…"` / `'…'` words.
///
/// `kind` is the tree-sitter node kind; only `string` and `raw_string` are stripped so that
/// concatenations like `pre'mid'post` keep their text verbatim.
pub(crate) fn one_layer(kind: &str, text: &str) -> String {
    let quote = match kind {
        "string" => '"',
        "raw_string" => '\'',
        _ => return text.to_owned(),
    };
    text.strip_prefix(quote)
        .and_then(|t| t.strip_suffix(quote))
        .unwrap_or(text)
        .to_owned()
}

/// The result of fully dequoting a word.
pub(crate) struct Dequoted {
    /// The value, `None` when tainted by an expansion.
    pub value: Option<String>,
    /// Unquoted glob/brace/tilde seen.
    pub expandable: bool,
}

/// Fully dequotes `text`. When `map` is given, it receives for every output byte the index of
/// the source byte it came from (offset by `base`), so re-parsed payloads can be mapped back.
pub(crate) fn dequote(text: &str, base: usize, mut map: Option<&mut Vec<usize>>) -> Dequoted {
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut expandable = false;
    let mut tainted = false;
    let mut i = 0;
    // Pushes one byte and records where it came from.
    let mut push = |out: &mut Vec<u8>, byte: u8, src: usize| {
        out.push(byte);
        if let Some(m) = map.as_deref_mut() {
            m.push(base + src);
        }
    };
    while i < b.len() && !tainted {
        let c = b[i];
        match c {
            b'\\' => match b.get(i + 1) {
                Some(b'\n') => i += 2,
                Some(&n) => {
                    push(&mut out, n, i + 1);
                    i += 2;
                }
                None => {
                    push(&mut out, c, i);
                    i += 1;
                }
            },
            b'\'' => {
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    push(&mut out, b[i], i);
                    i += 1;
                }
                i += 1;
            }
            b'"' => {
                i = double_quoted(b, i + 1, &mut out, &mut push, &mut tainted);
            }
            b'`' => tainted = true,
            b'$' => match b.get(i + 1) {
                Some(b'\'') => i = ansi_c(b, i + 2, &mut out, &mut push),
                Some(b'"') => i = double_quoted(b, i + 2, &mut out, &mut push, &mut tainted),
                Some(&n) if starts_expansion(n) => tainted = true,
                _ => {
                    push(&mut out, c, i);
                    i += 1;
                }
            },
            _ => {
                let glob = matches!(c, b'*' | b'?' | b'[') || (c == b'~' && i == 0);
                if glob || (c == b'{' && is_brace_expansion(&b[i..])) {
                    expandable = true;
                }
                push(&mut out, c, i);
                i += 1;
            }
        }
    }
    let value = if tainted {
        None
    } else {
        // Only ASCII bytes are ever dropped or rewritten, so the bytes stay valid UTF-8 except
        // for ANSI-C `\x` escapes, which may produce arbitrary bytes.
        Some(
            String::from_utf8(out)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        )
    };
    Dequoted { value, expandable }
}

/// True when `$` followed by `n` starts a parameter, command or arithmetic expansion.
fn starts_expansion(n: u8) -> bool {
    n.is_ascii_alphanumeric()
        || matches!(
            n,
            b'_' | b'{' | b'(' | b'[' | b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-'
        )
}

/// True when the text at a `{` looks like a brace list `{a,b}` or range `{a..b}`.
fn is_brace_expansion(b: &[u8]) -> bool {
    let Some(close) = b.iter().position(|&c| c == b'}') else {
        return false;
    };
    let inner = &b[1..close];
    inner.contains(&b',') || inner.windows(2).any(|w| w == b"..")
}

/// Reads a double-quoted section starting after the opening quote; returns the index after the
/// closing quote.
fn double_quoted(
    b: &[u8],
    mut i: usize,
    out: &mut Vec<u8>,
    push: &mut impl FnMut(&mut Vec<u8>, u8, usize),
    tainted: &mut bool,
) -> usize {
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => return i + 1,
            b'\\' => match b.get(i + 1) {
                Some(b'\n') => i += 2,
                Some(&n) if matches!(n, b'$' | b'`' | b'"' | b'\\') => {
                    push(out, n, i + 1);
                    i += 2;
                }
                _ => {
                    push(out, c, i);
                    i += 1;
                }
            },
            b'`' => {
                *tainted = true;
                return b.len();
            }
            b'$' if b.get(i + 1).is_some_and(|&n| starts_expansion(n)) => {
                *tainted = true;
                return b.len();
            }
            _ => {
                push(out, c, i);
                i += 1;
            }
        }
    }
    i
}

/// Reads an ANSI-C `$'…'` section starting after the opening quote; returns the index after
/// the closing quote.
fn ansi_c(
    b: &[u8],
    mut i: usize,
    out: &mut Vec<u8>,
    push: &mut impl FnMut(&mut Vec<u8>, u8, usize),
) -> usize {
    while i < b.len() {
        let c = b[i];
        if c == b'\'' {
            return i + 1;
        }
        if c != b'\\' {
            push(out, c, i);
            i += 1;
            continue;
        }
        let start = i;
        let Some(&e) = b.get(i + 1) else {
            push(out, c, i);
            return b.len();
        };
        i += 2;
        let simple = match e {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'e' | b'E' => Some(0x1b),
            b'f' => Some(0x0c),
            b'v' => Some(0x0b),
            b'\\' | b'\'' | b'"' | b'?' => Some(e),
            _ => None,
        };
        if let Some(v) = simple {
            push(out, v, start);
            continue;
        }
        let (radix, max) = match e {
            b'x' => (16, 2),
            b'u' => (16, 4),
            b'U' => (16, 8),
            b'0'..=b'7' => {
                // The first octal digit is the escape letter itself.
                i -= 1;
                (8, 3)
            }
            _ => {
                push(out, b'\\', start);
                push(out, e, start + 1);
                continue;
            }
        };
        let digits_start = i;
        let mut code: u32 = 0;
        while i < b.len() && i - digits_start < max {
            let Some(d) = (b[i] as char).to_digit(radix) else {
                break;
            };
            code = code.saturating_mul(radix).saturating_add(d);
            i += 1;
        }
        if i == digits_start {
            push(out, b'\\', start);
            push(out, e, start + 1);
            continue;
        }
        if matches!(e, b'u' | b'U') {
            let ch = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
            let mut buf = [0u8; 4];
            for &byte in ch.encode_utf8(&mut buf).as_bytes() {
                push(out, byte, start);
            }
        } else {
            push(out, (code & 0xff) as u8, start);
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn val(s: &str) -> Option<String> {
        dequote(s, 0, None).value
    }

    #[test]
    fn dequotes_quotes_and_escapes() {
        assert_eq!(val(r#"'it'\''s'"#).as_deref(), Some("it's"));
        assert_eq!(val(r#""a\"b""#).as_deref(), Some("a\"b"));
        assert_eq!(val(r"c\ d").as_deref(), Some("c d"));
        assert_eq!(val(r"pre'mid'post").as_deref(), Some("premidpost"));
        assert_eq!(val(r#""a\nb""#).as_deref(), Some("a\\nb"));
        assert_eq!(val(r"$'a\nb\x41\101'").as_deref(), Some("a\nbAA"));
        assert_eq!(val(r#"$"x"y"#).as_deref(), Some("xy"));
        assert_eq!(val("cost$").as_deref(), Some("cost$"));
        assert_eq!(val("'$HOME'").as_deref(), Some("$HOME"));
    }

    #[test]
    fn expansions_taint() {
        for s in [
            "$V", "${V}", "$(x)", "`x`", "\"a $V\"", "a$1", "$((1+2))", "\"`x`\"",
        ] {
            assert_eq!(val(s), None, "{s}");
        }
    }

    #[test]
    fn expandable_words() {
        for (s, e) in [
            ("*.rs", true),
            ("{a,b}", true),
            ("{1..3}", true),
            ("~/x", true),
            ("'*'", false),
            ("a~b", false),
            ("{}", false),
        ] {
            assert_eq!(dequote(s, 0, None).expandable, e, "{s}");
        }
    }

    #[test]
    fn map_points_at_source_bytes() {
        let mut map = Vec::new();
        let d = dequote(r#""a\"b""#, 10, Some(&mut map));
        assert_eq!(d.value.as_deref(), Some("a\"b"));
        assert_eq!(map, vec![11, 13, 14]);
    }

    #[test]
    fn one_layer_strips_only_strings() {
        assert_eq!(one_layer("string", "\"a b\""), "a b");
        assert_eq!(one_layer("raw_string", "'a'"), "a");
        assert_eq!(one_layer("concatenation", "pre'mid'post"), "pre'mid'post");
        assert_eq!(one_layer("string", "\"unterminated"), "\"unterminated");
    }
}

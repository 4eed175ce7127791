//! Reading a hook payload as leniently as Claude Code writes it.
//!
//! Claude Code's runtime serializes payloads with `JSON.stringify`, which emits what a strict
//! reader refuses: lone surrogate escapes (`"\ud800"`) from strings cut mid-pair, and nesting as
//! deep as the tool input happens to be. Editors and pipes add a UTF-8 byte-order mark or bytes
//! after the object. Each of these once made a guarded call pass unchecked, so the one reader
//! every binary uses ([`parse`]) accepts them and fails only on text that is not one JSON object.
//!
//! Well-formed payloads take the strict path untouched. Only when it fails is the text repaired
//! in one linear pass: lone surrogates become U+FFFD, anything after the first top-level value is
//! dropped, and a subtree nested deeper than [`MAX_DEPTH`] is kept as a JSON string holding its
//! raw text. That last rule is what makes the result safe to use: a `Value` of bounded depth can
//! be matched, cloned, serialized and dropped by recursive code without overflowing the stack,
//! which no amount of parser stack would guarantee for the value itself.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

/// Nesting kept as structure; deeper subtrees become strings of their raw JSON. Below
/// `serde_json`'s own recursion limit (128), with room for the code that walks the value.
pub const MAX_DEPTH: usize = 100;

/// Why a payload could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PayloadError {
    /// The payload is JSON, but not an object.
    NotAnObject(&'static str),
    /// Not JSON even after repair; the parser's message, with line and column.
    Syntax(String),
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayloadError::NotAnObject(what) => write!(f, "expected a JSON object, got {what}"),
            PayloadError::Syntax(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for PayloadError {}

/// Parses stdin as a payload: `Ok(None)` for blank input, the object otherwise. Invalid UTF-8
/// is replaced (U+FFFD) rather than refused: JSON's structure is ASCII, so a stray byte can only
/// sit inside a string.
pub fn parse(bytes: &[u8]) -> Result<Option<Value>, PayloadError> {
    // The strict check first: it reads ASCII a word at a time, the lossy one byte by byte.
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim().is_empty() {
        return Ok(None);
    }
    let value = match serde_json::from_str::<Value>(text) {
        Ok(v) => v,
        Err(strict) => {
            let repaired = repair(text);
            let mut stream = serde_json::Deserializer::from_str(&repaired).into_iter::<Value>();
            match stream.next() {
                Some(Ok(v)) => v,
                Some(Err(e)) => return Err(PayloadError::Syntax(e.to_string())),
                None => return Err(PayloadError::Syntax(strict.to_string())),
            }
        }
    };
    match value {
        Value::Object(_) => Ok(Some(value)),
        other => Err(PayloadError::NotAnObject(kind_name(&other))),
    }
}

/// How an error names a JSON value's type (`an array`, `null`, …).
pub fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One pass over the text: lone surrogate escapes become `\ufffd` (same length, so positions in
/// error messages still hold), subtrees deeper than [`MAX_DEPTH`] become strings, and the text
/// ends with the first top-level value. Structure is ASCII, so slicing at these bytes is always
/// on a character boundary.
fn repair(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0; // bytes of `text` already in `out`
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i);
                out.push_str(&text[copied..i]);
                push_string(&mut out, &text[i..end]);
                copied = end;
                i = end;
                continue;
            }
            b'[' | b'{' if depth == MAX_DEPTH => {
                let Some(end) = subtree_end(bytes, i) else {
                    // Unterminated: leave it for the parser to report.
                    break;
                };
                out.push_str(&text[copied..i]);
                // A str always serializes.
                out.push_str(&serde_json::to_string(&text[i..end]).unwrap_or_default());
                copied = end;
                i = end;
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    i += 1;
                    out.push_str(&text[copied..i]);
                    return Cow::Owned(out);
                }
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The index just past the string literal starting at `start` (or the end of the text).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index just past the array or object starting at `start`; `None` when it never closes.
fn subtree_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = string_end(bytes, i);
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Copies a string literal, replacing each surrogate escape that is not half of a valid pair.
fn push_string(out: &mut String, lit: &str) {
    let b = lit.as_bytes();
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit_at(b, i) {
            Some(0xD800..=0xDBFF) if matches!(unit_at(b, i + 6), Some(0xDC00..=0xDFFF)) => {
                i += 12;
            }
            Some(0xD800..=0xDFFF) => {
                out.push_str(&lit[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
            }
            Some(_) => i += 6,
            None => i += 2,
        }
    }
    out.push_str(&lit[copied.min(lit.len())..]);
}

/// The code unit of a `\uXXXX` escape at `i`, if there is one.
fn unit_at(b: &[u8], i: usize) -> Option<u16> {
    if b.get(i) != Some(&b'\\') || b.get(i + 1) != Some(&b'u') {
        return None;
    }
    let hex = std::str::from_utf8(b.get(i + 2..i + 6)?).ok()?;
    u16::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Value {
        parse(text.as_bytes()).unwrap().unwrap()
    }

    #[test]
    fn well_formed_payloads_take_the_strict_path() {
        assert_eq!(ok(r#"{"a":[1,{"b":"\ud83d\ude00"}]}"#)["a"][1]["b"], "😀");
        assert_eq!(parse(b"  \n").unwrap(), None);
        assert_eq!(parse(b"").unwrap(), None);
    }

    #[test]
    fn what_claude_code_writes_is_read() {
        assert_eq!(ok("\u{feff}{\"a\":1}")["a"], 1);
        assert_eq!(ok(r#"{"a":"x\ud800y"}"#)["a"], "x\u{fffd}y");
        assert_eq!(ok(r#"{"a":"\udc00\ud800"}"#)["a"], "\u{fffd}\u{fffd}");
        // An escaped backslash before `ud800` is text, not an escape.
        assert_eq!(ok(r#"{"a":"\\ud800","b":"\ud800"}"#)["a"], "\\ud800");
        assert_eq!(ok("{\"a\":1}\n{\"b\":2}")["a"], 1);
        assert_eq!(ok("{\"a\":\"}\"} trailing }}]] junk")["a"], "}");
        let invalid_utf8 = parse(b"{\"a\":\"\xff\"}").unwrap().unwrap();
        assert_eq!(invalid_utf8["a"], "\u{fffd}");
    }

    #[test]
    fn deep_nesting_is_kept_as_text_below_the_cap() {
        let n = 100_000;
        let text = format!(
            r#"{{"tool_name":"Bash","tool_input":{{"command":"rm -rf /","deep":{}1{}}}}}"#,
            "[".repeat(n),
            "]".repeat(n)
        );
        let v = ok(&text);
        assert_eq!(v["tool_input"]["command"], "rm -rf /");
        let mut cur = &v["tool_input"]["deep"];
        let mut depth = 2;
        while let Value::Array(items) = cur {
            cur = &items[0];
            depth += 1;
        }
        assert_eq!(depth, MAX_DEPTH);
        let raw = cur.as_str().expect("the rest is raw text");
        assert!(
            raw.starts_with("[[[") && raw.ends_with("]]]") && raw.contains("[1]"),
            "{raw:.20}"
        );
        assert_eq!(raw.len(), 2 * (n - 98) + 1);
    }

    #[test]
    fn unreadable_payloads_are_errors_that_say_where() {
        let e = parse(b"{\"a\":").unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
        assert_eq!(
            parse(b"[1]").unwrap_err(),
            PayloadError::NotAnObject("an array")
        );
        assert!(parse(b"{\"a\":[[[[").is_err());
        assert!(parse(&[b'['; 200_000]).is_err());
    }
}

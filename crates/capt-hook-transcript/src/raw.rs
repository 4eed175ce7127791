//! The lean shape one transcript line is parsed into.
//!
//! Every field is lenient: a value of an unexpected type reads as "absent" instead of failing
//! the line, and everything not listed (usage, images, `originalFile`, snapshots) is skipped by
//! the parser without being allocated. Big strings (tool results, tool inputs other than a Bash
//! `command`) are cut to a cap while parsing, so a 10 MB tool result never exists in memory as
//! a whole; the entry's byte span lets a caller re-read the full line on demand.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::lenient::{
    Flag, IsTrue, LStr, Lenient, clip, ignore_maps, ignore_other_types, ignore_seqs, ignore_strings,
};

/// Bytes of any one string inside a tool input kept in memory (a Bash `command` is kept whole).
pub const INPUT_STRING_CAP: usize = 4096;
/// Bytes of a system entry's `content` kept in memory.
pub const SYSTEM_TEXT_CAP: usize = 4096;

/// Result text kept while parsing: the first [`RESULT_HEAD`] and the last [`RESULT_TAIL`]
/// bytes (a command's verdict is usually at the end of its output), with the full length
/// remembered. A string is taken as is; an array contributes the concatenated `text` of its
/// text parts (images and other parts are skipped); anything else is empty.
#[derive(Debug, Default)]
pub(crate) struct ResultText {
    head: String,
    head_closed: bool,
    tail: String,
    dropped: bool,
    /// Length in bytes of the whole text.
    pub len: usize,
}

/// Bytes kept from the start of a tool result.
pub const RESULT_HEAD: usize = 1536;
/// Bytes kept from the end of a tool result.
pub const RESULT_TAIL: usize = 1536;
/// Bytes of a tool result kept in memory (head plus tail).
pub const RESULT_TEXT_CAP: usize = RESULT_HEAD + RESULT_TAIL;

impl ResultText {
    fn push(&mut self, s: &str) {
        self.len += s.len();
        let mut rest = s;
        if !self.head_closed {
            let part = clip(rest, RESULT_HEAD - self.head.len());
            self.head.push_str(part);
            rest = &rest[part.len()..];
            // Once anything spills over (even a character that straddles the cap), later text
            // must never go back to the head.
            self.head_closed = !rest.is_empty() || self.head.len() == RESULT_HEAD;
        }
        if rest.is_empty() {
            return;
        }
        if rest.len() > 2 * RESULT_TAIL {
            self.dropped = true;
            self.tail.clear();
            rest = &rest[floor_boundary(rest, rest.len() - RESULT_TAIL)..];
        }
        self.tail.push_str(rest);
        if self.tail.len() > 2 * RESULT_TAIL {
            let cut = floor_boundary(&self.tail, self.tail.len() - RESULT_TAIL);
            self.tail.drain(..cut);
            self.dropped = true;
        }
    }

    /// The kept text: the whole text when it fit, else head, an omission marker, and tail.
    pub fn finish(self) -> String {
        let ResultText {
            mut head,
            tail,
            dropped,
            len,
            ..
        } = self;
        if !dropped && head.len() + tail.len() <= RESULT_TEXT_CAP {
            head.push_str(&tail);
            return head;
        }
        let tail = &tail[floor_boundary(&tail, tail.len().saturating_sub(RESULT_TAIL))..];
        let omitted = len - head.len() - tail.len();
        head.push_str(&format!("\n[… {omitted} bytes omitted …]\n"));
        head.push_str(tail);
        head
    }
}

/// The largest character boundary of `s` at or below `i`.
fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[derive(Default, serde::Deserialize)]
#[serde(default)]
struct TextPart {
    #[serde(rename = "type")]
    ty: LStr,
    text: LStr,
}

impl<'de> Deserialize<'de> for ResultText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ResultText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                let mut out = ResultText::default();
                out.push(s);
                Ok(out)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = ResultText::default();
                while let Some(part) = seq.next_element::<Lenient<TextPart>>()? {
                    if let Some(TextPart {
                        ty: LStr(Some(ty)),
                        text: LStr(Some(text)),
                    }) = part.0
                        && ty == "text"
                    {
                        out.push(&text);
                    }
                }
                Ok(out)
            }
            ignore_other_types!();
            ignore_maps!();
        }
        d.deserialize_any(V)
    }
}

/// A JSON value whose strings are cut to [`INPUT_STRING_CAP`] while parsing.
pub(crate) struct Lean {
    pub value: Value,
    pub truncated: bool,
}

impl<'de> Deserialize<'de> for Lean {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LeanVisitor)
    }
}

struct LeanVisitor;

impl<'de> Visitor<'de> for LeanVisitor {
    type Value = Lean;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Lean, E> {
        Ok(lean(Value::Bool(b)))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Lean, E> {
        Ok(lean(Value::from(n)))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Lean, E> {
        Ok(lean(Value::from(n)))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Lean, E> {
        Ok(lean(
            serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number),
        ))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Lean, E> {
        let kept = clip(s, INPUT_STRING_CAP);
        Ok(Lean {
            value: Value::String(kept.to_owned()),
            truncated: kept.len() < s.len(),
        })
    }
    fn visit_unit<E: de::Error>(self) -> Result<Lean, E> {
        Ok(lean(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Lean, A::Error> {
        let mut items = Vec::new();
        let mut truncated = false;
        while let Some(item) = seq.next_element::<Lean>()? {
            truncated |= item.truncated;
            items.push(item.value);
        }
        Ok(Lean {
            value: Value::Array(items),
            truncated,
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Lean, A::Error> {
        let mut out = Map::new();
        let mut truncated = false;
        while let Some(key) = map.next_key::<String>()? {
            let item = map.next_value::<Lean>()?;
            truncated |= item.truncated;
            out.insert(key, item.value);
        }
        Ok(Lean {
            value: Value::Object(out),
            truncated,
        })
    }
}

fn lean(value: Value) -> Lean {
    Lean {
        value,
        truncated: false,
    }
}

/// A tool input: an object whose `command` is kept whole (command matching must see all of it)
/// and whose other strings are capped. A non-object input reads as an empty object.
#[derive(Default)]
pub(crate) struct Input {
    pub value: Map<String, Value>,
    pub truncated: bool,
}

impl<'de> Deserialize<'de> for Input {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Input;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Input, A::Error> {
                let mut out = Input::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "command" {
                        let v = map.next_value::<Value>()?;
                        out.value.insert(key, v);
                    } else {
                        let item = map.next_value::<Lean>()?;
                        out.truncated |= item.truncated;
                        out.value.insert(key, item.value);
                    }
                }
                Ok(out)
            }
            ignore_other_types!();
            ignore_strings!();
            ignore_seqs!();
        }
        d.deserialize_any(V)
    }
}

/// One content block of a message, all kinds flattened into one lenient struct (a tagged enum
/// would buffer every block, base64 images included, before looking at its type).
#[derive(Default, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Block {
    #[serde(rename = "type")]
    pub ty: LStr,
    pub text: LStr,
    pub thinking: LStr,
    pub id: LStr,
    pub name: LStr,
    pub input: Input,
    pub tool_use_id: LStr,
    pub content: ResultText,
    pub is_error: Flag,
}

/// `message.content`: a plain string, or a list of blocks.
#[derive(Default)]
pub(crate) enum Content {
    #[default]
    Empty,
    Text(String),
    Blocks(Vec<Block>),
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Content, E> {
                Ok(Content::Text(s.to_owned()))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Content, E> {
                Ok(Content::Text(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut blocks = Vec::new();
                while let Some(b) = seq.next_element::<Lenient<Block>>()? {
                    blocks.extend(b.0);
                }
                Ok(Content::Blocks(blocks))
            }
            ignore_other_types!();
            ignore_maps!();
        }
        d.deserialize_any(V)
    }
}

/// `message` of a user or assistant line.
#[derive(Default, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Message {
    pub content: Content,
}

/// The few fields of the top-level `toolUseResult` that queries need.
#[derive(Default, serde::Deserialize)]
#[serde(default)]
pub(crate) struct UseResult {
    #[serde(rename = "isAsync")]
    pub is_async: IsTrue,
    #[serde(rename = "agentId")]
    pub agent_id: LStr,
    pub status: LStr,
    /// `{"task": {"id": "3", …}}` of a TaskCreate result: the id the new task got.
    pub task: Lenient<TaskRef>,
}

/// The created task a TaskCreate result names.
#[derive(Default, serde::Deserialize)]
#[serde(default)]
pub(crate) struct TaskRef {
    pub id: LStr,
}

/// `attachment` of an attachment line (a queued command replayed to the model carries its text).
#[derive(Default, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Attachment {
    #[serde(rename = "type")]
    pub ty: LStr,
    pub prompt: LStr,
}

/// One transcript line.
#[derive(Default, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Line {
    #[serde(rename = "type")]
    pub ty: LStr,
    pub uuid: LStr,
    pub timestamp: LStr,
    #[serde(rename = "isSidechain")]
    pub is_sidechain: Flag,
    #[serde(rename = "isMeta")]
    pub is_meta: Flag,
    #[serde(rename = "isCompactSummary")]
    pub is_compact_summary: Flag,
    #[serde(rename = "isVisibleInTranscriptOnly")]
    pub is_visible_in_transcript_only: Flag,
    #[serde(rename = "isApiErrorMessage")]
    pub is_api_error: Flag,
    #[serde(rename = "agentId")]
    pub agent_id: LStr,
    pub message: Lenient<Message>,
    #[serde(rename = "toolUseResult")]
    pub tool_use_result: Lenient<UseResult>,
    pub subtype: LStr,
    pub content: LStr,
    pub operation: LStr,
    pub mode: LStr,
    #[serde(rename = "permissionMode")]
    pub permission_mode: LStr,
    pub attachment: Lenient<Attachment>,
}

/// Parses one line. `Err` for bytes that are not a JSON object of the expected shape.
pub(crate) fn parse_line(bytes: &[u8]) -> Result<Line, serde_json::Error> {
    let line: Line = serde_json::from_slice(bytes)?;
    if line.ty.0.is_none() {
        return Err(de::Error::custom("line without a string `type`"));
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_types_read_as_absent() {
        let l = parse_line(br#"{"type":"user","uuid":5,"isMeta":"yes","message":"oops"}"#).unwrap();
        assert_eq!(l.uuid.0, None);
        assert!(l.is_meta.0);
        assert!(l.message.0.is_none());
        assert!(parse_line(b"[1,2]").is_err());
        assert!(parse_line(b"{\"type\":3}").is_err());
        assert!(parse_line(b"{not json").is_err());
    }

    #[test]
    fn big_strings_are_capped_but_commands_are_whole() {
        let big = "x".repeat(10_000);
        let line = format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"t","name":"Bash","input":{{"command":"{big}","description":"{big}"}}}},{{"type":"image","source":{{"data":"{big}"}}}}]}}}}"#
        );
        let l = parse_line(line.as_bytes()).unwrap();
        let Content::Blocks(blocks) = l.message.0.unwrap().content else {
            panic!()
        };
        assert_eq!(blocks.len(), 2);
        let input = &blocks[0].input;
        assert!(input.truncated);
        assert_eq!(input.value["command"].as_str().unwrap().len(), 10_000);
        assert_eq!(
            input.value["description"].as_str().unwrap().len(),
            INPUT_STRING_CAP
        );
    }

    #[test]
    fn result_text_keeps_head_and_tail_in_order() {
        let mut r = ResultText::default();
        for i in 0..2000 {
            r.push(&format!("{i} "));
        }
        let whole: String = (0..2000).map(|i| format!("{i} ")).collect();
        assert_eq!(r.len, whole.len());
        let text = r.finish();
        let (head, tail) = text.split_once("\n[… ").unwrap();
        assert_eq!(head, &whole[..RESULT_HEAD]);
        assert!(whole.ends_with(tail.split_once("omitted …]\n").unwrap().1));
        let mut fits = ResultText::default();
        fits.push("a");
        fits.push(&"é".repeat(1500));
        fits.push("z");
        assert_eq!(fits.finish(), format!("a{}z", "é".repeat(1500)));
        let mut over = ResultText::default();
        over.push(&"é".repeat(RESULT_HEAD + 1));
        let over = over.finish();
        assert!(over.contains("bytes omitted") && over.len() < RESULT_TEXT_CAP + 64);
    }

    #[test]
    fn result_text_is_flattened_and_capped() {
        let big = "é".repeat(5000);
        let line = format!(
            r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":"t","content":[{{"type":"text","text":"a"}},{{"type":"image","source":{{}}}},{{"type":"text","text":"{big}"}}]}}]}},"toolUseResult":"Error: x"}}"#
        );
        let l = parse_line(line.as_bytes()).unwrap();
        let Content::Blocks(blocks) = l.message.0.unwrap().content else {
            panic!()
        };
        let c = std::mem::take(&mut blocks.into_iter().next().unwrap().content);
        assert_eq!(c.len, 1 + big.len());
        let text = c.finish();
        assert!(text.starts_with("aé") && text.ends_with("éé"));
        assert!(text.contains("bytes omitted"));
        assert!(text.len() < RESULT_TEXT_CAP + 64);
        assert!(l.tool_use_result.0.is_none());
    }
}

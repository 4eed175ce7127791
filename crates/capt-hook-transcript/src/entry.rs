//! What one transcript line becomes: an [`Entry`], plus the [`ToolCall`]s and [`ToolResult`]s it
//! carries, each holding only what queries need.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::lenient::clip;
use crate::names::{self, FILE_TOOLS};
use crate::raw::{Content, Line, SYSTEM_TEXT_CAP};

/// The line's `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// `user`: a prompt, tool results, or harness-injected text.
    User,
    /// `assistant`: text, thinking and tool calls.
    Assistant,
    /// `system`: compact boundaries, API errors, stop-hook summaries, local commands.
    System,
    /// `mode`.
    Mode,
    /// `permission-mode`.
    PermissionMode,
    /// `queue-operation`: the notification/command queue's audit trail.
    QueueOperation,
    /// `attachment`.
    Attachment,
    /// `progress`: hook, agent, bash and MCP progress.
    Progress,
    /// `summary`: a session title.
    Summary,
    /// `file-history-snapshot`: checkpoint bookkeeping.
    FileHistorySnapshot,
    /// `custom-title`, `ai-title`, `last-prompt`, `agent-name` and any type not listed above.
    Other,
}

impl EntryKind {
    fn of(ty: &str) -> EntryKind {
        match ty {
            "user" => EntryKind::User,
            "assistant" => EntryKind::Assistant,
            "system" => EntryKind::System,
            "mode" => EntryKind::Mode,
            "permission-mode" => EntryKind::PermissionMode,
            "queue-operation" => EntryKind::QueueOperation,
            "attachment" => EntryKind::Attachment,
            "progress" => EntryKind::Progress,
            "summary" => EntryKind::Summary,
            "file-history-snapshot" => EntryKind::FileHistorySnapshot,
            _ => EntryKind::Other,
        }
    }
}

/// Where a line sits in its source, so the full line can be read again on demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineSpan {
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Length in bytes, without the newline.
    pub len: u32,
}

const SIDECHAIN: u8 = 1;
const META: u8 = 2;
const COMPACT_SUMMARY: u8 = 4;
const TRANSCRIPT_ONLY: u8 = 8;
const API_ERROR: u8 = 16;
const INTERRUPTED: u8 = 32;

/// User text that the harness, not a person, put in the transcript: local command output,
/// `!` shell input and output, and delivered task notifications. None of it opens a turn.
const HARNESS_PREFIXES: &[&str] = &[
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
];

/// Marker Claude Code writes when the user interrupts a response.
const INTERRUPTION: &str = "[Request interrupted by user";

/// One parsed line.
#[derive(Clone, Debug)]
pub struct Entry {
    kind: EntryKind,
    flags: u8,
    type_name: Option<Box<str>>,
    uuid: Option<Box<str>>,
    timestamp: Option<Box<str>>,
    agent_id: Option<Box<str>>,
    text: Box<str>,
    thinking: Box<str>,
    detail: Option<Box<str>>,
    pub(crate) calls: (u32, u32),
    pub(crate) results: (u32, u32),
    span: LineSpan,
}

impl Entry {
    /// The line's type.
    pub fn kind(&self) -> EntryKind {
        self.kind
    }

    /// The raw `type` string of an [`EntryKind::Other`] line.
    pub fn type_name(&self) -> Option<&str> {
        self.type_name.as_deref()
    }

    /// `uuid`, when present.
    pub fn uuid(&self) -> Option<&str> {
        self.uuid.as_deref()
    }

    /// `timestamp` (ISO-8601 text), when present.
    pub fn timestamp(&self) -> Option<&str> {
        self.timestamp.as_deref()
    }

    /// `agentId` of a sidechain line.
    pub fn agent_id(&self) -> Option<&str> {
        self.agent_id.as_deref()
    }

    /// The prose of a user or assistant line: its text blocks joined with single spaces (a plain
    /// string message as is). Thinking, tool input and tool output never appear here. For a
    /// system line its `content` (capped), for a queue operation its `content`, for a queued
    /// command attachment its prompt; empty otherwise.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Thinking blocks of an assistant line, joined with single spaces.
    pub fn thinking(&self) -> &str {
        &self.thinking
    }

    /// `subtype` of a system line, `operation` of a queue operation, the mode of a mode line,
    /// `attachment.type` of an attachment.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// `isSidechain`.
    pub fn is_sidechain(&self) -> bool {
        self.flags & SIDECHAIN != 0
    }

    /// `isMeta` (harness-injected context such as skill bodies and caveats).
    pub fn is_meta(&self) -> bool {
        self.flags & META != 0
    }

    /// `isCompactSummary` (the summary that continues a compacted session).
    pub fn is_compact_summary(&self) -> bool {
        self.flags & COMPACT_SUMMARY != 0
    }

    /// `isVisibleInTranscriptOnly`.
    pub fn is_visible_in_transcript_only(&self) -> bool {
        self.flags & TRANSCRIPT_ONLY != 0
    }

    /// `isApiErrorMessage`.
    pub fn is_api_error(&self) -> bool {
        self.flags & API_ERROR != 0
    }

    /// A user line whose text says the user interrupted the response.
    pub fn is_interrupted(&self) -> bool {
        self.flags & INTERRUPTED != 0
    }

    /// True for a user or assistant line.
    pub fn is_message(&self) -> bool {
        matches!(self.kind, EntryKind::User | EntryKind::Assistant)
    }

    /// True when this line opens a turn: a user line a person typed, with non-blank text, that
    /// is not meta, sidechain, compact summary, transcript-only, an interruption marker, local
    /// command or shell output, or a task notification. Tool results carry no text, so they never
    /// open a turn.
    pub fn is_prompt(&self) -> bool {
        if self.kind != EntryKind::User
            || self.flags & (SIDECHAIN | META | COMPACT_SUMMARY | TRANSCRIPT_ONLY | INTERRUPTED)
                != 0
        {
            return false;
        }
        let text = self.text.trim_start();
        !text.is_empty() && !HARNESS_PREFIXES.iter().any(|p| text.starts_with(p))
    }

    /// Where the line sits in its source.
    pub fn span(&self) -> LineSpan {
        self.span
    }
}

/// One `tool_use` block of an assistant line.
#[derive(Clone, Debug)]
pub struct ToolCall {
    id: Box<str>,
    name: Box<str>,
    input: Map<String, Value>,
    input_truncated: bool,
    pub(crate) entry: u32,
    memo: OnceLock<Arc<dyn Any + Send + Sync>>,
}

impl ToolCall {
    /// The tool-use id (`toolu_…`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool name exactly as invoked.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when the name matches the pipe spec `spec` (aliases and MCP suffixes honoured).
    pub fn is_named(&self, spec: &str) -> bool {
        names::tool_name_matches(&self.name, spec)
    }

    /// The input object. Strings longer than [`crate::INPUT_STRING_CAP`] are cut (see
    /// [`ToolCall::input_truncated`]), except a Bash `command`, which is always whole.
    pub fn input(&self) -> &Map<String, Value> {
        &self.input
    }

    /// True when some input string was cut; the full input is one re-read away
    /// ([`crate::CallRef::full_input`]).
    pub fn input_truncated(&self) -> bool {
        self.input_truncated
    }

    /// A top-level input string field.
    pub fn input_str(&self, key: &str) -> Option<&str> {
        self.input.get(key).and_then(Value::as_str)
    }

    /// A top-level input field's truthiness (`true`, non-zero, non-empty).
    pub fn input_flag(&self, key: &str) -> bool {
        match self.input.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::Object(o)) => !o.is_empty(),
        }
    }

    /// The command line of a Bash (or Execute) call.
    pub fn command(&self) -> Option<&str> {
        if self.is_named("Bash") {
            self.input_str("command")
        } else {
            None
        }
    }

    /// The file a file tool targets: `file_path` of Edit, MultiEdit, Write and Read (and their
    /// aliases), `notebook_path` of NotebookEdit.
    pub fn file_path(&self) -> Option<&str> {
        if !names::in_family(&self.name, FILE_TOOLS) {
            return None;
        }
        self.input_str("file_path")
            .or_else(|| self.input_str("notebook_path"))
    }

    /// The skill a Skill call invokes.
    pub fn skill(&self) -> Option<&str> {
        if self.is_named("Skill") {
            self.input_str("skill")
        } else {
            None
        }
    }

    /// A value computed once per call and kept with the transcript (and, through
    /// [`crate::TranscriptCache`], across events): the engine parses each Bash command line only
    /// once this way. A call holds one memo type; asking for another type computes it afresh
    /// each time.
    pub fn memo<T: Any + Send + Sync>(&self, compute: impl FnOnce(&ToolCall) -> T) -> Memo<'_, T> {
        if let Some(stored) = self.memo.get() {
            return match stored.downcast_ref::<T>() {
                Some(v) => Memo::Cached(v),
                None => Memo::Fresh(Arc::new(compute(self))),
            };
        }
        let ours = Arc::new(compute(self));
        // Another thread may have stored a value first; then whatever it stored wins if it has
        // our type, and ours is used once otherwise.
        let _ = self.memo.set(ours.clone());
        match self.memo.get().and_then(|s| s.downcast_ref::<T>()) {
            Some(v) => Memo::Cached(v),
            None => Memo::Fresh(ours),
        }
    }
}

/// A memoized value ([`ToolCall::memo`]).
#[derive(Debug)]
pub enum Memo<'a, T> {
    /// Stored with the call.
    Cached(&'a T),
    /// Computed now because the call's memo holds another type.
    Fresh(Arc<T>),
}

impl<T> std::ops::Deref for Memo<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Memo::Cached(v) => v,
            Memo::Fresh(v) => v,
        }
    }
}

/// One `tool_result` block of a user line.
#[derive(Clone, Debug)]
pub struct ToolResult {
    tool_use_id: Box<str>,
    content: Box<str>,
    content_len: usize,
    is_error: bool,
    is_async: bool,
    agent_id: Option<Box<str>>,
    status: Option<Box<str>>,
    task_id: Option<Box<str>>,
    pub(crate) entry: u32,
}

impl ToolResult {
    /// The call this result answers.
    pub fn tool_use_id(&self) -> &str {
        &self.tool_use_id
    }

    /// The result text (a list's text parts concatenated). Past [`crate::RESULT_TEXT_CAP`]
    /// bytes only its first [`crate::RESULT_HEAD`] and last [`crate::RESULT_TAIL`] bytes are kept,
    /// around a `[… N bytes omitted …]` line; [`crate::CallRef::full_result`] reads it whole.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Length in bytes of the full result text.
    pub fn content_len(&self) -> usize {
        self.content_len
    }

    /// True when [`ToolResult::content`] is not the whole text.
    pub fn is_truncated(&self) -> bool {
        self.content.len() != self.content_len
    }

    /// `is_error` of the block.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The line's `toolUseResult.isAsync` is exactly `true` (an Agent launched in the background).
    pub fn is_async(&self) -> bool {
        self.is_async
    }

    /// `toolUseResult.agentId`: the subagent that ran (or runs) the call.
    pub fn agent_id(&self) -> Option<&str> {
        self.agent_id.as_deref()
    }

    /// `toolUseResult.status` (`completed`, `async_launched`, …).
    pub fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }

    /// `toolUseResult.task.id`: the id a TaskCreate call's new task got.
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// Index of the user entry carrying the result.
    pub fn entry_index(&self) -> usize {
        self.entry as usize
    }
}

/// The parsed lines of one source, append-only.
#[derive(Clone, Debug, Default)]
pub(crate) struct Data {
    pub entries: Vec<Entry>,
    pub calls: Vec<ToolCall>,
    pub results: Vec<ToolResult>,
    /// Lines that were not JSON objects with a `type`, or not usable user/assistant lines.
    pub skipped: usize,
}

fn boxed(s: Option<String>) -> Option<Box<str>> {
    s.map(String::into_boxed_str)
}

impl Data {
    /// Adds the line at `span`. Returns false (and adds nothing) for a user or assistant line
    /// without a usable `message`.
    pub fn push(&mut self, line: Line, span: LineSpan) -> bool {
        let ty = line.ty.0.unwrap_or_default();
        let kind = EntryKind::of(&ty);
        let index = self.entries.len() as u32;
        let mut flags = 0;
        for (on, bit) in [
            (line.is_sidechain.0, SIDECHAIN),
            (line.is_meta.0, META),
            (line.is_compact_summary.0, COMPACT_SUMMARY),
            (line.is_visible_in_transcript_only.0, TRANSCRIPT_ONLY),
            (line.is_api_error.0, API_ERROR),
        ] {
            if on {
                flags |= bit;
            }
        }
        let calls_start = self.calls.len() as u32;
        let results_start = self.results.len() as u32;
        let mut text = String::new();
        let mut thinking = String::new();
        let mut detail = None;
        match kind {
            EntryKind::User | EntryKind::Assistant => {
                let Some(message) = line.message.0 else {
                    return false;
                };
                let use_result = line.tool_use_result.0.unwrap_or_default();
                let mut use_result = Some(use_result);
                match message.content {
                    Content::Empty => {}
                    Content::Text(s) => text = s,
                    Content::Blocks(blocks) => {
                        for block in blocks {
                            let ty = block.ty.0.as_deref().unwrap_or("");
                            match (kind, ty) {
                                (_, "text") => join(&mut text, block.text.0.as_deref()),
                                (EntryKind::Assistant, "thinking") => {
                                    join(&mut thinking, block.thinking.0.as_deref())
                                }
                                (EntryKind::Assistant, "tool_use") => self.calls.push(ToolCall {
                                    id: block.id.0.unwrap_or_default().into(),
                                    name: block.name.0.unwrap_or_default().into(),
                                    input: block.input.value,
                                    input_truncated: block.input.truncated,
                                    entry: index,
                                    memo: OnceLock::new(),
                                }),
                                (EntryKind::User, "tool_result") => {
                                    // The line's toolUseResult describes its (single) result.
                                    let u = use_result.take().unwrap_or_default();
                                    self.results.push(ToolResult {
                                        tool_use_id: block.tool_use_id.0.unwrap_or_default().into(),
                                        content_len: block.content.len,
                                        content: block.content.finish().into(),
                                        is_error: block.is_error.0,
                                        is_async: u.is_async.0,
                                        agent_id: boxed(u.agent_id.0),
                                        status: boxed(u.status.0),
                                        task_id: boxed(u.task.0.and_then(|t| t.id.0)),
                                        entry: index,
                                    })
                                }
                                _ => {}
                            }
                        }
                    }
                }
                if kind == EntryKind::User && text.contains(INTERRUPTION) {
                    flags |= INTERRUPTED;
                }
            }
            EntryKind::System => {
                detail = line.subtype.0;
                if let Some(c) = line.content.0 {
                    text = clip(&c, SYSTEM_TEXT_CAP).to_owned();
                }
            }
            EntryKind::Mode => detail = line.mode.0,
            EntryKind::PermissionMode => detail = line.permission_mode.0,
            EntryKind::QueueOperation => {
                detail = line.operation.0;
                text = line.content.0.unwrap_or_default();
            }
            EntryKind::Attachment => {
                if let Some(a) = line.attachment.0 {
                    if a.ty.0.as_deref() == Some("queued_command") {
                        text = a.prompt.0.unwrap_or_default();
                    }
                    detail = a.ty.0;
                }
            }
            _ => {}
        }
        self.entries.push(Entry {
            kind,
            flags,
            type_name: (kind == EntryKind::Other).then(|| ty.into_boxed_str()),
            uuid: boxed(line.uuid.0),
            timestamp: boxed(line.timestamp.0),
            agent_id: boxed(line.agent_id.0),
            text: text.into_boxed_str(),
            thinking: thinking.into_boxed_str(),
            detail: boxed(detail),
            calls: (calls_start, self.calls.len() as u32),
            results: (results_start, self.results.len() as u32),
            span,
        });
        true
    }
}

fn join(out: &mut String, part: Option<&str>) {
    if let Some(p) = part {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(p);
    }
}

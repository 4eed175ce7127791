//! Chainable queries over tool calls, each paired with its result.

use serde_json::Value;

use crate::entry::{Entry, ToolCall, ToolResult};
use crate::error::TranscriptError;
use crate::glob::{Glob, IntoGlobs, matches_any};
use crate::names::{self, EDIT_TOOLS};
use crate::transcript::Transcript;
use crate::window::fallback_matcher;

/// One tool call with the transcript it belongs to, so its result, turn and entry are at hand.
/// Dereferences to [`ToolCall`].
#[derive(Clone, Copy)]
pub struct CallRef<'t> {
    t: &'t Transcript,
    call: &'t ToolCall,
    from_subagent: bool,
}

impl std::fmt::Debug for CallRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallRef")
            .field("id", &self.call.id())
            .field("name", &self.call.name())
            .field("from_subagent", &self.from_subagent)
            .finish()
    }
}

impl<'t> std::ops::Deref for CallRef<'t> {
    type Target = ToolCall;
    fn deref(&self) -> &ToolCall {
        self.call
    }
}

impl<'t> CallRef<'t> {
    /// The call.
    pub fn call(&self) -> &'t ToolCall {
        self.call
    }

    /// The transcript holding the call (a subagent's for sidechain calls).
    pub fn transcript(&self) -> &'t Transcript {
        self.t
    }

    /// True for a call read from a subagent transcript.
    pub fn from_subagent(&self) -> bool {
        self.from_subagent
    }

    /// The paired result (by `tool_use_id`, anywhere in the file), if it arrived.
    pub fn result(&self) -> Option<&'t ToolResult> {
        self.t.result_of(self.call.id())
    }

    /// True when the result is an error.
    pub fn is_error(&self) -> bool {
        self.result().is_some_and(ToolResult::is_error)
    }

    /// Index of the assistant entry carrying the call.
    pub fn entry_index(&self) -> usize {
        self.call.entry as usize
    }

    /// The assistant entry carrying the call.
    pub fn entry(&self) -> &'t Entry {
        &self.t.entries()[self.call.entry as usize]
    }

    /// The turn the call was made in (of its own transcript).
    pub fn turn_index(&self) -> usize {
        self.t.index.turn_of(self.call.entry as usize)
    }

    /// True when this Bash call ran a command whose unwrapped argv starts with `argv` (the
    /// transcript's matcher decides; see [`Transcript::with_matcher`]).
    pub fn runs(&self, argv: &[&str]) -> bool {
        if argv.is_empty() || !self.call.is_named("Bash") {
            return false;
        }
        match &self.t.matcher {
            Some(m) => m.runs(self.call, argv),
            None => fallback_matcher().runs(self.call, argv),
        }
    }

    /// The call's input exactly as written, read again from the transcript (only needed when
    /// [`ToolCall::input_truncated`] is true).
    pub fn full_input(&self) -> Result<Value, TranscriptError> {
        let line = self.t.raw_line(self.entry())?;
        find_block(&line, "id", self.call.id())
            .and_then(|b| b.get("input").cloned())
            .ok_or_else(|| changed(self.t, self.entry()))
    }

    /// The result's full text, read again from the transcript (only needed when
    /// [`ToolResult::is_truncated`] is true).
    pub fn full_result(&self) -> Result<Option<String>, TranscriptError> {
        let Some(result) = self.result() else {
            return Ok(None);
        };
        let entry = &self.t.entries()[result.entry_index()];
        let line = self.t.raw_line(entry)?;
        let block = find_block(&line, "tool_use_id", self.call.id())
            .ok_or_else(|| changed(self.t, entry))?;
        Ok(Some(match block.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
            _ => String::new(),
        }))
    }
}

fn find_block<'v>(line: &'v Value, key: &str, id: &str) -> Option<&'v Value> {
    line.pointer("/message/content")?
        .as_array()?
        .iter()
        .find(|b| b.get(key).and_then(Value::as_str) == Some(id))
}

fn changed(t: &Transcript, entry: &Entry) -> TranscriptError {
    TranscriptError::Changed {
        path: t
            .path()
            .map_or_else(|| "<memory>".into(), |p| p.to_path_buf()),
        offset: entry.span().offset,
    }
}

/// Which calls a query shows, by their result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Errors {
    Hide,
    Include,
    Only,
}

/// A chainable filter over tool calls. Calls whose result is an error are hidden by default
/// ([`ToolCalls::with_errors`] shows them, [`ToolCalls::failed`] shows only them). Filters narrow;
/// terminals (`count`, `exists`, `any`, `first`, `last`, `files`, …) read.
///
/// ```
/// # use capt_hook_transcript::Transcript;
/// # let t = Transcript::empty();
/// let wrote_tests = t.tool_calls().named("Edit|Write").touching("test_*.py").count() >= 3;
/// # assert!(!wrote_tests);
/// ```
#[derive(Clone, Debug)]
pub struct ToolCalls<'t> {
    items: Vec<CallRef<'t>>,
    errors: Errors,
}

impl<'t> ToolCalls<'t> {
    pub(crate) fn from_calls(
        t: &'t Transcript,
        calls: &'t [ToolCall],
        from_subagent: bool,
    ) -> ToolCalls<'t> {
        let mut q = ToolCalls {
            items: Vec::with_capacity(calls.len()),
            errors: Errors::Hide,
        };
        q.extend_from(t, calls, from_subagent);
        q
    }

    pub(crate) fn extend_from(
        &mut self,
        t: &'t Transcript,
        calls: &'t [ToolCall],
        from_subagent: bool,
    ) {
        self.items.extend(calls.iter().map(|call| CallRef {
            t,
            call,
            from_subagent,
        }));
    }

    fn visible(&self) -> impl Iterator<Item = &CallRef<'t>> {
        let errors = self.errors;
        self.items.iter().filter(move |c| match errors {
            Errors::Include => true,
            Errors::Hide => !c.is_error(),
            Errors::Only => c.is_error(),
        })
    }

    /// Keeps the calls for which `keep` is true.
    pub fn filter(mut self, mut keep: impl FnMut(&CallRef<'t>) -> bool) -> ToolCalls<'t> {
        self.items.retain(|c| keep(c));
        self
    }

    /// Calls whose name matches the pipe spec (`"Edit|Write"`), aliases and MCP suffixes honoured.
    pub fn named(self, spec: &str) -> ToolCalls<'t> {
        self.filter(|c| names::tool_name_matches(c.name(), spec))
    }

    /// Calls whose name matches any of the specs.
    pub fn named_any<S: AsRef<str>>(self, specs: &[S]) -> ToolCalls<'t> {
        self.filter(|c| {
            specs
                .iter()
                .any(|s| names::tool_name_matches(c.name(), s.as_ref()))
        })
    }

    /// Edit, MultiEdit, Write (Create) and NotebookEdit calls.
    pub fn edits(self) -> ToolCalls<'t> {
        self.filter(|c| names::in_family(c.name(), EDIT_TOOLS))
    }

    /// Calls whose file ([`ToolCall::file_path`]) matches a glob, by full path or basename.
    pub fn touching(self, globs: impl IntoGlobs) -> ToolCalls<'t> {
        let globs: Vec<Glob> = globs.into_globs();
        self.filter(|c| c.file_path().is_some_and(|p| matches_any(&globs, p)))
    }

    /// Calls whose file starts with a prefix or contains `/<prefix>`.
    pub fn under<S: AsRef<str>>(self, prefixes: &[S]) -> ToolCalls<'t> {
        self.filter(|c| {
            c.file_path().is_some_and(|p| {
                prefixes.iter().any(|x| {
                    let x = x.as_ref();
                    p.starts_with(x) || p.contains(&format!("/{x}"))
                })
            })
        })
    }

    /// Calls made in the given turns (indices of each call's own transcript).
    pub fn in_turns(self, turns: &[usize]) -> ToolCalls<'t> {
        self.filter(|c| turns.contains(&c.turn_index()))
    }

    /// Calls whose top-level input `key` exists and satisfies `test`.
    pub fn where_input(self, key: &str, mut test: impl FnMut(&Value) -> bool) -> ToolCalls<'t> {
        self.filter(|c| c.input().get(key).is_some_and(&mut test))
    }

    /// Only calls of this transcript, not of its subagents.
    pub fn main_only(self) -> ToolCalls<'t> {
        self.filter(|c| !c.from_subagent)
    }

    /// Shows errored calls too.
    pub fn with_errors(mut self) -> ToolCalls<'t> {
        self.errors = Errors::Include;
        self
    }

    /// Shows only errored calls.
    pub fn failed(mut self) -> ToolCalls<'t> {
        self.errors = Errors::Only;
        self
    }

    /// Number of calls.
    pub fn count(&self) -> usize {
        self.visible().count()
    }

    /// True when there is at least one call.
    pub fn exists(&self) -> bool {
        self.visible().next().is_some()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        !self.exists()
    }

    /// True when some call satisfies `test`.
    pub fn any(&self, test: impl FnMut(&CallRef<'t>) -> bool) -> bool {
        self.visible().any(test)
    }

    /// The earliest call.
    pub fn first(&self) -> Option<CallRef<'t>> {
        self.visible().next().copied()
    }

    /// The latest call.
    pub fn last(&self) -> Option<CallRef<'t>> {
        self.visible().last().copied()
    }

    /// The calls, in order.
    pub fn iter(&self) -> impl Iterator<Item = CallRef<'t>> + '_ {
        self.visible().copied()
    }

    /// The calls as a vector.
    pub fn to_vec(&self) -> Vec<CallRef<'t>> {
        self.iter().collect()
    }

    /// The file of each file-touching call, one per call, in order.
    pub fn files(&self) -> Vec<&'t str> {
        self.visible().filter_map(|c| c.call.file_path()).collect()
    }

    /// The command lines of the Bash calls.
    pub fn commands(&self) -> Vec<&'t str> {
        self.visible().filter_map(|c| c.call.command()).collect()
    }

    /// True when some Bash call ran a command whose unwrapped argv starts with `argv`.
    pub fn runs(&self, argv: &[&str]) -> bool {
        self.visible().any(|c| c.runs(argv))
    }
}

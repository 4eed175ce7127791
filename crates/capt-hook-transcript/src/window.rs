//! Windows over a transcript: the session, a turn, the last n entries, slices around a call.

use std::ops::Range;

use crate::command::{CommandMatcher, SplitMatcher};
use crate::entry::{Entry, EntryKind, ToolCall};
use crate::glob::IntoGlobs;
use crate::names::tool_name_matches;
use crate::query::ToolCalls;
use crate::transcript::{Subagent, Transcript};

/// The windows of a transcript, made here so the transcript module needs nothing of this one.
impl Transcript {
    /// The whole session as a window.
    pub fn session(&self) -> Window<'_> {
        Window::new(self, 0, self.len())
    }

    /// The last turn as a window (empty for an empty transcript).
    pub fn current_turn(&self) -> Window<'_> {
        self.session().current_turn()
    }

    /// The current turn or the whole session.
    pub fn scope(&self, scope: Scope) -> Window<'_> {
        match scope {
            Scope::Turn => self.current_turn(),
            Scope::Session => self.session(),
        }
    }

    /// The tool calls of the whole session (errored calls hidden; see [`crate::ToolCalls`]).
    pub fn tool_calls(&self) -> ToolCalls<'_> {
        self.session().tool_calls()
    }

    /// The last `n` entries as a window.
    pub fn recent(&self, n: usize) -> Window<'_> {
        self.session().recent(n)
    }
}

/// Which part of the session a condition reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The current (last) turn: from the latest prompt on.
    #[default]
    Turn,
    /// Everything.
    Session,
}

/// A contiguous range of a transcript's entries. Every slice returns another window; queries
/// read only the entries inside. With [`Window::with_subagents`], tool-call queries also read
/// the subagent transcripts the window launched (all of them for the whole session).
#[derive(Clone, Copy)]
pub struct Window<'t> {
    t: &'t Transcript,
    start: usize,
    end: usize,
    subagents: bool,
}

impl std::fmt::Debug for Window<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window")
            .field("path", &self.t.path())
            .field("range", &(self.start..self.end))
            .field("subagents", &self.subagents)
            .finish()
    }
}

/// One turn (possibly cut by the window it came from).
#[derive(Clone, Copy, Debug)]
pub struct Turn<'t> {
    index: usize,
    prompt: &'t str,
    window: Window<'t>,
}

impl<'t> Turn<'t> {
    /// Position in the session, from 0. Entries before the first prompt form turn 0.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The prompt that opened the turn; empty for a preamble or a turn whose opening entry lies
    /// outside the window.
    pub fn prompt(&self) -> &'t str {
        self.prompt
    }

    /// The turn's entries as a window.
    pub fn window(&self) -> Window<'t> {
        self.window
    }
}

impl<'t> Window<'t> {
    pub(crate) fn new(t: &'t Transcript, start: usize, end: usize) -> Window<'t> {
        let end = end.min(t.len());
        Window {
            t,
            start: start.min(end),
            end,
            subagents: false,
        }
    }

    fn sub(&self, start: usize, end: usize) -> Window<'t> {
        let end = end.clamp(self.start, self.end);
        Window {
            start: start.clamp(self.start, end),
            end,
            ..*self
        }
    }

    /// The transcript this window reads.
    pub fn transcript(&self) -> &'t Transcript {
        self.t
    }

    /// Entry indices covered.
    pub fn range(&self) -> Range<usize> {
        self.start..self.end
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// True when the window holds no entry.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// The entries.
    pub fn entries(&self) -> &'t [Entry] {
        &self.t.entries()[self.start..self.end]
    }

    /// True when the window covers the whole transcript.
    pub fn is_whole(&self) -> bool {
        self.start == 0 && self.end == self.t.len()
    }

    /// The same window, with tool-call queries also reading subagent transcripts.
    pub fn with_subagents(self) -> Window<'t> {
        Window {
            subagents: true,
            ..self
        }
    }

    /// The same window, reading only this transcript.
    pub fn without_subagents(self) -> Window<'t> {
        Window {
            subagents: false,
            ..self
        }
    }

    /// True when tool-call queries include subagent transcripts.
    pub fn includes_subagents(&self) -> bool {
        self.subagents
    }

    /// The turns overlapping the window, cut to it.
    pub fn turns(&self) -> Vec<Turn<'t>> {
        let starts = &self.t.index.turn_starts;
        let prompted = &self.t.index.turn_prompted;
        let mut out = Vec::new();
        if self.is_empty() {
            return out;
        }
        for i in self.t.index.turn_of(self.start)..starts.len() {
            let s = starts[i] as usize;
            if s >= self.end {
                break;
            }
            let e = starts.get(i + 1).map_or(self.t.len(), |&n| n as usize);
            let window = self.sub(s, e);
            let prompt = if prompted[i] && s >= self.start {
                self.t.entries()[s].text()
            } else {
                ""
            };
            out.push(Turn {
                index: i,
                prompt,
                window,
            });
        }
        out
    }

    /// The window's last turn (cut to the window); empty when the window is.
    pub fn current_turn(&self) -> Window<'t> {
        if self.is_empty() {
            return self.sub(self.end, self.end);
        }
        let i = self.t.index.turn_of(self.end - 1);
        let s = self.t.index.turn_starts.get(i).map_or(0, |&s| s as usize);
        self.sub(s, self.end)
    }

    /// The last `n` entries.
    pub fn recent(&self, n: usize) -> Window<'t> {
        self.sub(self.end.saturating_sub(n), self.end)
    }

    /// Everything before the last user or assistant entry (empty when there is none).
    pub fn prior(&self) -> Window<'t> {
        match self.entries().iter().rposition(Entry::is_message) {
            Some(i) => self.sub(self.start, self.start + i),
            None => self.sub(self.start, self.start),
        }
    }

    /// Strictly after the last call matching `tool` (pipe spec) whose file contains `file` (when
    /// given); errored calls count. Empty when no call matches.
    pub fn after(&self, tool: &str, file: Option<&str>) -> Window<'t> {
        let last = self.own_calls().iter().rev().find(|c| {
            tool_name_matches(c.name(), tool)
                && file.is_none_or(|f| c.file_path().is_some_and(|p| p.contains(f)))
        });
        match last {
            Some(c) => self.sub(c.entry as usize + 1, self.end),
            None => self.sub(self.end, self.end),
        }
    }

    /// Strictly before the last call matching `tool`; the whole window when none does.
    pub fn before(&self, tool: &str) -> Window<'t> {
        match self
            .own_calls()
            .iter()
            .rev()
            .find(|c| tool_name_matches(c.name(), tool))
        {
            Some(c) => self.sub(self.start, c.entry as usize),
            None => *self,
        }
    }

    /// The calls made by this transcript's entries inside the window.
    pub(crate) fn own_calls(&self) -> &'t [ToolCall] {
        if self.is_empty() {
            return &[];
        }
        let entries = self.t.entries();
        let lo = entries[self.start].calls.0 as usize;
        let hi = entries[self.end - 1].calls.1 as usize;
        &self.t.calls()[lo..hi.max(lo)]
    }

    /// The subagents this window's queries read: all of them for the whole session, else those
    /// launched by Agent/Task calls inside the window (matched through the result's `agentId`).
    pub fn subagents(&self) -> Vec<&'t Subagent> {
        let all = self.t.subagents();
        if self.is_whole() {
            return all.iter().collect();
        }
        let mut out: Vec<&Subagent> = Vec::new();
        for call in self.own_calls() {
            if !call.is_named("Agent") {
                continue;
            }
            let id = self.t.result_of(call.id()).and_then(|r| r.agent_id());
            if let Some(sub) = id.and_then(|id| all.iter().find(|s| s.agent_id() == id))
                && !out.iter().any(|o| std::ptr::eq(*o, sub))
            {
                out.push(sub);
            }
        }
        out
    }

    /// The tool calls as a chainable query (errored calls hidden until
    /// [`ToolCalls::with_errors`]).
    pub fn tool_calls(&self) -> ToolCalls<'t> {
        let mut q = ToolCalls::from_calls(self.t, self.own_calls(), false);
        if self.subagents {
            for sub in self.subagents() {
                q.extend_from(sub.transcript(), sub.transcript().calls(), true);
            }
        }
        q
    }

    /// User and assistant entries with text: the prose `text_matches` reads. Thinking, tool input
    /// and tool output are never part of it.
    pub fn prose(&self) -> impl Iterator<Item = &'t Entry> + 't {
        self.entries()
            .iter()
            .filter(|e| e.is_message() && !e.text().is_empty())
    }

    /// The prose texts joined with newlines.
    pub fn prose_text(&self) -> String {
        let mut out = String::new();
        for e in self.prose() {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(e.text());
        }
        out
    }

    /// The prompts that opened turns inside the window, oldest first (`user_said` reads these).
    pub fn prompts(&self) -> impl Iterator<Item = &'t str> + 't {
        self.turns()
            .into_iter()
            .map(|t| t.prompt)
            .filter(|p| !p.is_empty())
    }

    /// The prompt of the window's last turn ("" when it has none).
    pub fn user_text(&self) -> &'t str {
        self.turns().last().map_or("", |t| t.prompt)
    }

    /// The first prompt in the window.
    pub fn first_prompt(&self) -> Option<&'t str> {
        self.prompts().next()
    }

    /// The last `n` non-empty assistant texts, each trimmed and cut to `max_per_msg` characters,
    /// joined with `"\n---\n"`.
    pub fn assistant_text(&self, n: usize, max_per_msg: usize) -> String {
        let texts: Vec<&str> = self
            .entries()
            .iter()
            .filter(|e| e.kind() == EntryKind::Assistant)
            .map(|e| e.text().trim())
            .filter(|t| !t.is_empty())
            .collect();
        texts[texts.len().saturating_sub(n)..]
            .iter()
            .map(|t| t.chars().take(max_per_msg).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n---\n")
    }

    /// True when some (non-errored) call matches the pipe spec `tool`.
    pub fn has_tool(&self, tool: &str) -> bool {
        self.tool_calls().named(tool).exists()
    }

    /// True when some (non-errored) Bash call ran a command whose unwrapped argv starts with
    /// `argv`, according to the transcript's matcher ([`Transcript::with_matcher`]; the
    /// approximate [`SplitMatcher`] when none was plugged in).
    pub fn has_command(&self, argv: &[&str]) -> bool {
        self.tool_calls().runs(argv)
    }

    /// [`Window::has_command`] with an explicit matcher.
    pub fn has_command_with(&self, argv: &[&str], matcher: &dyn CommandMatcher) -> bool {
        !argv.is_empty()
            && self
                .tool_calls()
                .named("Bash")
                .any(|c| matcher.runs(c.call(), argv))
    }

    /// True when an Edit, MultiEdit, Write or NotebookEdit targets a file matching a glob.
    pub fn has_edit_to(&self, globs: impl IntoGlobs) -> bool {
        self.tool_calls().edits().touching(globs).exists()
    }

    /// True when a Read targets a file matching a glob.
    pub fn has_read(&self, globs: impl IntoGlobs) -> bool {
        self.tool_calls().named("Read").touching(globs).exists()
    }

    /// True when a Skill call names one of `names`, directly or as the part after the first
    /// `:` (`plugin:skill` matches `skill`).
    pub fn has_skill(&self, names: &[&str]) -> bool {
        self.tool_calls().named("Skill").any(|c| {
            c.skill().is_some_and(|s| {
                names.contains(&s)
                    || s.split_once(':')
                        .is_some_and(|(_, rest)| names.contains(&rest))
            })
        })
    }

    /// (EnterPlanMode calls, ExitPlanMode calls), errored calls not counted: plan mode is on
    /// when the first is larger.
    pub fn plan_mode_counts(&self) -> (usize, usize) {
        let q = self.without_subagents().tool_calls();
        (
            q.clone().named("EnterPlanMode").count(),
            q.named("ExitPlanMode").count(),
        )
    }

    /// The command lines of the (non-errored) Bash calls.
    pub fn commands(&self) -> Vec<&'t str> {
        self.tool_calls().commands()
    }

    /// Number of calls whose result is an error.
    pub fn count_failures(&self) -> usize {
        self.tool_calls().failed().count()
    }
}

pub(crate) fn fallback_matcher() -> &'static dyn CommandMatcher {
    &SplitMatcher
}

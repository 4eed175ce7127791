//! A typed view of one hook payload.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use capt_hook_shell::CommandLine;
use capt_hook_transcript::{LazyTranscript, Transcript};
use serde_json::{Map, Value};

use crate::events::EventKind;
use crate::tool::ToolCall;

/// Claude Code's name among the coding agents (`hook run --agent claude`): the agent of an
/// event no other agent's adapter read.
pub const CLAUDE: &str = "claude";

/// Why a payload could not become an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EventError {
    /// The payload is JSON but not an object.
    #[error("expected a JSON object, got {0}")]
    NotAnObject(&'static str),
}

/// Where the event happens: the project it belongs to and facts the payload does not carry.
#[derive(Debug, Clone, Default)]
pub struct EventContext {
    /// The project root (for project-only conditions and `.gitignore`); `None` counts every path
    /// as part of the project.
    pub project_root: Option<PathBuf>,
    /// Overrides the process-tree check for `--dangerously-skip-permissions` (tests set it).
    pub skip_permissions: Option<bool>,
    /// Root of session state (fire counts, throttles); `None` keeps nothing across events.
    pub state_root: Option<PathBuf>,
    /// The process that sent the event (the hook client, when a worker evaluates for a host):
    /// the `claude` ancestor is searched from there, not from the worker, which Claude Code
    /// did not start.
    pub origin_pid: Option<u32>,
    /// The sender's request-scoped environment (`CAPT_HOOK_*`, `CLAUDE_*`, …), read instead of
    /// this process's when the event came through the host.
    pub request_env: Option<std::sync::Arc<BTreeMap<String, String>>>,
    /// The coding agent that sent the event, by the name `hook run --agent` takes (`codex`,
    /// `gemini`, …), when it is not Claude Code: its payload was read as Claude Code's, so
    /// nothing in the payload says so any more.
    pub coding_agent: Option<String>,
}

/// One event: its kind, the raw payload kept verbatim, and typed accessors over it.
#[derive(Debug)]
pub struct Event {
    kind: EventKind,
    payload: Map<String, Value>,
    tool: ToolCall,
    /// Looked up once: every `tool` condition of every hook reads it.
    tool_name: Option<String>,
    context: EventContext,
    /// Parsed on first use and shared by every hook that reads the command.
    command_line: OnceLock<Option<CommandLine>>,
    /// Each command's words joined by spaces, built once for every regex that searches them.
    joined: OnceLock<Vec<JoinedCommand>>,
    /// The command and its joined commands in one text, for prefilters searching them all.
    command_texts: OnceLock<Option<String>>,
    /// The command's words, gathered once for every token list that looks for some.
    line_words: OnceLock<crate::tokens::LineWords>,
    annotations: OnceLock<BTreeMap<String, Option<String>>>,
    images: OnceLock<Option<crate::edit::EditImages>>,
    /// Read on first use, through the process-wide cache.
    transcript: LazyTranscript,
    /// The session's state directory, opened on first use.
    store: OnceLock<capt_hook_state::SessionStore>,
    /// Values several hooks derive from this event (an edited file, its parse), kept so each
    /// is computed once per event.
    memo: parking_lot::Mutex<std::collections::HashMap<String, Memo>>,
    /// PostToolBatch: one view per call of the batch, built on first use.
    batch: OnceLock<Vec<std::sync::Arc<Event>>>,
}

type Memo = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// One command's argv joined by single spaces, as `command` regexes search it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedCommand {
    /// The joined argv (the raw text for a redirect-only part).
    pub text: String,
    /// The text stands verbatim in the raw line with no word character on either side, so an
    /// edge-neutral pattern ([`crate::pattern::Pattern::is_edge_neutral`]) that misses the raw
    /// line misses it too: most commands of a plain line are written just as they run.
    pub in_raw: bool,
}

/// True when `text` occurs in `raw` between two non-word characters (or the line's ends).
/// `hint` is where it probably stands (the command's own span): checked first, it spares the
/// substring search for most commands of a plain line.
fn stands_in(raw: &str, text: &str, hint: Option<usize>) -> bool {
    // Any non-ASCII neighbour counts as a word character: the cautious reading.
    let wordy = |b: Option<&u8>| {
        b.is_some_and(|b| !b.is_ascii() || b.is_ascii_alphanumeric() || *b == b'_')
    };
    let bytes = raw.as_bytes();
    let bounded = |at: usize| {
        let before = at.checked_sub(1).and_then(|i| bytes.get(i));
        !wordy(before) && !wordy(bytes.get(at + text.len()))
    };
    if let Some(at) = hint
        && raw.get(at..at + text.len()) == Some(text)
        && bounded(at)
    {
        return true;
    }
    occurrences(bytes, text.as_bytes()).any(bounded)
}

/// Where `needle` starts in `hay`. A command line is short: checking each place its first byte
/// occurs costs less than setting up a substring searcher (std's or memchr's) for it.
fn occurrences<'a>(hay: &'a [u8], needle: &'a [u8]) -> Box<dyn Iterator<Item = usize> + 'a> {
    match needle.first() {
        None => Box::new(0..=hay.len()),
        Some(&b) => {
            Box::new(memchr::memchr_iter(b, hay).filter(move |&at| hay[at..].starts_with(needle)))
        }
    }
}

impl Event {
    /// Builds an event from a parsed payload.
    pub fn new(
        kind: EventKind,
        payload: Value,
        context: EventContext,
    ) -> Result<Event, EventError> {
        let payload = match payload {
            Value::Object(map) => map,
            other => {
                return Err(EventError::NotAnObject(
                    capt_hook_proto::payload::kind_name(&other),
                ));
            }
        };
        let tool_name = if kind.has_tool() || kind.has_tool_batch() {
            payload
                .get("tool_name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
        } else {
            None
        };
        let tool = match &tool_name {
            Some(name) => ToolCall::parse(
                name,
                payload
                    .get("tool_input")
                    .unwrap_or(&Value::Object(Map::new())),
            ),
            None => ToolCall::Other,
        };
        Ok(Event {
            kind,
            payload,
            tool,
            tool_name,
            context,
            command_line: OnceLock::new(),
            joined: OnceLock::new(),
            command_texts: OnceLock::new(),
            line_words: OnceLock::new(),
            annotations: OnceLock::new(),
            images: OnceLock::new(),
            transcript: LazyTranscript::new(None),
            store: OnceLock::new(),
            memo: Default::default(),
            batch: OnceLock::new(),
        }
        .with_transcript_path())
    }

    /// PostToolBatch: one event per call of the batch, each carrying that call's `tool_name`,
    /// `tool_input`, `tool_use_id` and `tool_response` beside the batch's common fields, so tool
    /// conditions read it as they read a single call. Empty on every other event.
    pub fn batch_calls(&self) -> &[std::sync::Arc<Event>] {
        self.batch.get_or_init(|| {
            if !self.kind.has_tool_batch() || self.tool_name.is_some() {
                return Vec::new();
            }
            let Some(calls) = self.payload.get("tool_calls").and_then(Value::as_array) else {
                return Vec::new();
            };
            let mut common = self.payload.clone();
            common.remove("tool_calls");
            calls
                .iter()
                .filter_map(Value::as_object)
                .filter_map(|call| {
                    let mut payload = common.clone();
                    for (k, v) in call {
                        payload.insert(k.clone(), v.clone());
                    }
                    Event::new(self.kind, Value::Object(payload), self.context.clone())
                        .ok()
                        .map(std::sync::Arc::new)
                })
                .collect()
        })
    }

    fn with_transcript_path(mut self) -> Event {
        let path = self.transcript_path().map(PathBuf::from);
        self.transcript = crate::history::transcripts().lazy(path);
        self
    }

    /// Uses `transcript` instead of reading the payload's transcript file (inline tests,
    /// replay).
    pub fn with_transcript(mut self, transcript: Transcript) -> Event {
        self.transcript = LazyTranscript::ready(transcript);
        self
    }

    /// A value derived from this event, computed on first request and shared by every hook
    /// that asks for the same `key` (and type) afterwards.
    pub fn memo<T: std::any::Any + Send + Sync>(
        &self,
        key: &str,
        compute: impl FnOnce() -> T,
    ) -> std::sync::Arc<T> {
        if let Some(hit) = self.memo_map().get(key).cloned()
            && let Ok(v) = hit.downcast::<T>()
        {
            return v;
        }
        // Computed outside the lock: hooks on other threads may memoise other keys meanwhile.
        let value = std::sync::Arc::new(compute());
        self.memo_map().insert(key.to_owned(), value.clone());
        value
    }

    /// The value memoised under `key`, if some hook computed one (never computes it).
    pub fn memo_peek<T: std::any::Any + Send + Sync>(
        &self,
        key: &str,
    ) -> Option<std::sync::Arc<T>> {
        self.memo_map().get(key).cloned()?.downcast::<T>().ok()
    }

    fn memo_map(&self) -> parking_lot::MutexGuard<'_, std::collections::HashMap<String, Memo>> {
        // No poisoning: a hook that panicked mid-insert leaves a usable map (entries are whole
        // values).
        self.memo.lock()
    }

    /// The session's state store, session-wide (the framework's own records; a hook's own state
    /// is [`Event::hook_store`]): null (nothing persists) without a session id or state root.
    pub fn store(&self) -> &capt_hook_state::SessionStore {
        self.store.get_or_init(|| match &self.context.state_root {
            Some(root) => capt_hook_state::SessionStore::for_session(root, self.session_id()),
            None => capt_hook_state::SessionStore::null(),
        })
    }

    /// The running hook's own store, as the seeds lay state out: `<session>/<hook name>/<agent>/`
    /// (`main`, or the subagent's id), so each hook keeps its slots apart from other hooks' and
    /// each agent apart from the others. Outside a hook's handler (the framework's own records)
    /// and without a session it is [`Event::store`] (null without a session).
    pub fn hook_store(&self) -> capt_hook_state::SessionStore {
        match crate::scope::current_state_key() {
            Some(key) => {
                capt_hook_state::SessionStore::at(self.store().hook_dir(&key, self.agent_id()))
            }
            None => self.store().clone(),
        }
    }

    /// Where the stopping agent stands in its turn, as `(events so far, events in the current
    /// turn)`: the positions the once-per-turn throttles compare. Claude Code's come from its
    /// transcript. Another agent's transcript is not in that format (reading it as Claude Code's
    /// finds no prompt, so a whole session looks like one turn), so there the user prompts
    /// counted by [`Event::mark_prompt`] mark the turns.
    pub fn turn_span(&self) -> (usize, usize) {
        if self.context.coding_agent.is_some() {
            return self
                .store()
                .load::<capt_hook_state::PrimitiveState>()
                .prompt_turn(self.kind == EventKind::Stop && self.stop_hook_active());
        }
        let t = self.transcript();
        (t.len(), t.current_turn().len())
    }

    /// Marks another agent's turns for [`Event::turn_span`]: its user prompt (UserPromptSubmit,
    /// Gemini CLI's BeforeAgent, …) is counted, and a Stop that is no stop hook's continuation
    /// records the turn it ends, which its continuations keep (Gemini CLI sends a blocked stop's
    /// reason as a new prompt, Codex does not). Call once per event, before its hooks run.
    pub fn mark_turn(&self) -> Result<(), capt_hook_state::StateError> {
        if self.context.coding_agent.is_none() {
            return Ok(());
        }
        use capt_hook_state::PrimitiveState;
        match self.kind {
            EventKind::UserPromptSubmit => self.store().mutate(|s: &mut PrimitiveState| {
                s.prompts += 1;
            }),
            EventKind::Stop if !self.stop_hook_active() => {
                self.store().mutate(|s: &mut PrimitiveState| {
                    s.stop_prompts = s.prompts;
                })
            }
            _ => Ok(()),
        }
    }

    /// The session's transcript (the agent's own for a subagent), read on first use; empty
    /// when there is none or it cannot be read.
    pub fn transcript(&self) -> &Transcript {
        self.transcript.get()
    }

    /// The event's kind.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// The raw payload.
    pub fn payload(&self) -> &Map<String, Value> {
        &self.payload
    }

    /// The payload as this event's typed struct (every field Claude Code documents for it,
    /// unknown ones kept). Parsed on each call: hooks that need more than the accessors below
    /// ask for it, the hot path never does.
    pub fn typed(&self) -> Result<crate::Payload, crate::PayloadError> {
        crate::Payload::parse(self.kind, &self.payload)
    }

    /// The context the event was built with.
    pub fn context(&self) -> &EventContext {
        &self.context
    }

    /// The project root, if known.
    pub fn project_root(&self) -> Option<&Path> {
        self.context.project_root.as_deref()
    }

    fn str_field(&self, key: &str) -> Option<&str> {
        self.payload
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    /// The session id, when the payload has one.
    pub fn session_id(&self) -> Option<&str> {
        self.str_field("session_id")
    }

    /// The subagent's id; missing, null and empty all mean the main agent.
    pub fn agent_id(&self) -> Option<&str> {
        self.str_field("agent_id")
    }

    /// True when a subagent sent the event.
    pub fn is_subagent(&self) -> bool {
        self.agent_id().is_some()
    }

    /// The id of the user prompt being answered (Claude Code 2.1.196 and later send it on every
    /// event after the first prompt): one per turn, known even before the transcript is written.
    pub fn prompt_id(&self) -> Option<&str> {
        self.str_field("prompt_id")
    }

    /// The user's prompt (UserPromptSubmit).
    pub fn prompt(&self) -> Option<&str> {
        self.str_field("prompt")
    }

    /// True when Claude Code is already continuing because of a stop hook.
    pub fn stop_hook_active(&self) -> bool {
        self.payload
            .get("stop_hook_active")
            .and_then(Value::as_bool)
            == Some(true)
    }

    /// The transcript to read: the agent's own when given, else the session's.
    pub fn transcript_path(&self) -> Option<&str> {
        self.str_field("agent_transcript_path")
            .or_else(|| self.str_field("transcript_path"))
    }

    /// The working directory Claude Code reported.
    pub fn cwd(&self) -> Option<&str> {
        self.str_field("cwd")
    }

    /// The coding agent running the session: `claude` unless the event came through another
    /// agent's adapter ([`EventContext::coding_agent`]).
    pub fn coding_agent(&self) -> &str {
        self.context.coding_agent.as_deref().unwrap_or(CLAUDE)
    }

    /// The permission mode (`default`, `plan`, `acceptEdits`, `bypassPermissions`, …).
    pub fn permission_mode(&self) -> Option<&str> {
        self.str_field("permission_mode")
    }

    /// The model the event is about: the switch's `to_model` on PreModelSwitch and
    /// PostModelSwitch, the session's `model` on SessionStart; `None` elsewhere.
    pub fn model(&self) -> Option<&str> {
        match self.kind {
            EventKind::PreModelSwitch | EventKind::PostModelSwitch => self.str_field("to_model"),
            EventKind::SessionStart => self.str_field("model"),
            _ => None,
        }
    }

    /// The tool's name as sent (tool events only).
    pub fn tool_name(&self) -> Option<&str> {
        self.tool_name.as_deref()
    }

    /// The typed tool call ([`ToolCall::Other`] on events without one).
    pub fn tool(&self) -> &ToolCall {
        &self.tool
    }

    /// The raw `tool_input` object (tool events only).
    pub fn tool_input(&self) -> Option<&Map<String, Value>> {
        if self.tool_name.is_some() || self.kind.has_tool() {
            self.payload.get("tool_input").and_then(Value::as_object)
        } else {
            None
        }
    }

    /// The Bash command text.
    pub fn command(&self) -> Option<&str> {
        self.tool.command()
    }

    /// The Bash command parsed once, on first use.
    pub fn command_line(&self) -> Option<&CommandLine> {
        self.command_line
            .get_or_init(|| self.command().map(CommandLine::parse))
            .as_ref()
    }

    /// The Bash command if a hook has parsed it already (never parses).
    pub fn parsed_command_line(&self) -> Option<&CommandLine> {
        self.command_line.get().and_then(Option::as_ref)
    }

    /// Every parsed command's argv joined by single spaces (raw text for a redirect-only part).
    pub fn joined_commands(&self) -> &[JoinedCommand] {
        self.joined.get_or_init(|| {
            let Some(cl) = self.command_line() else {
                return Vec::new();
            };
            cl.commands()
                .map(|c| {
                    let text = c.joined();
                    JoinedCommand {
                        in_raw: stands_in(&cl.raw, &text, c.span.as_ref().map(|r| r.start)),
                        text,
                    }
                })
                .collect()
        })
    }

    /// The parsed command's words (none without a command), gathered on first use.
    pub fn line_words(&self) -> &crate::tokens::LineWords {
        self.line_words.get_or_init(|| {
            self.command_line()
                .map(crate::tokens::LineWords::of)
                .unwrap_or_default()
        })
    }

    /// The raw command followed by each joined command the raw line does not already hold,
    /// newline-separated: a literal found in none of these texts is found here only where it
    /// spans a newline, and one found in any of them is found here.
    pub fn command_texts(&self) -> &str {
        let raw = self.command().unwrap_or_default();
        let joined = self.command_texts.get_or_init(|| {
            let mut more = self
                .joined_commands()
                .iter()
                .filter(|j| {
                    !j.in_raw
                        && occurrences(raw.as_bytes(), j.text.as_bytes())
                            .next()
                            .is_none()
                })
                .peekable();
            more.peek()?;
            let mut all = raw.to_owned();
            for j in more {
                all.push('\n');
                all.push_str(&j.text);
            }
            Some(all)
        });
        joined.as_deref().unwrap_or(raw)
    }

    /// The file the call targets, or the file the event is about (FileChanged,
    /// InstructionsLoaded, ConfigChange).
    pub fn file(&self) -> Option<&str> {
        self.tool.file_path().or_else(|| match self.kind {
            EventKind::FileChanged | EventKind::InstructionsLoaded | EventKind::ConfigChange => {
                self.str_field("file_path")
            }
            _ => None,
        })
    }

    /// The new text an edit or write puts in the file.
    pub fn content(&self) -> Option<String> {
        self.tool.content()
    }

    /// The text an edit replaces.
    pub fn old(&self) -> Option<String> {
        self.tool.old()
    }

    /// The subagent type: the Agent call's `subagent_type` on tool events (the raw `agent_type`
    /// on PermissionRequest), the payload's `agent_type` on subagent events.
    pub fn agent_type(&self) -> Option<&str> {
        match self.kind {
            EventKind::SubagentStart | EventKind::SubagentStop => {
                self.str_field("agent_type").or_else(|| {
                    self.payload
                        .get("tool_input")
                        .and_then(|t| t.get("subagent_type"))
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                })
            }
            EventKind::PermissionRequest => self.str_field("agent_type"),
            k if k.has_tool() => self.tool.agent_type(),
            _ => None,
        }
    }

    /// The tool's response (PostToolUse).
    pub fn tool_response(&self) -> Option<&Value> {
        self.payload.get("tool_response")
    }

    /// The failure text (PostToolUseFailure).
    pub fn error(&self) -> Option<&str> {
        self.str_field("error")
    }

    /// The payload's `source`, what caused the event: startup, resume, clear or compact on
    /// SessionStart; command, picker, sdk, auto or resume on the model switches; …
    pub fn source(&self) -> Option<&str> {
        self.str_field("source")
    }

    /// Why the session ended (SessionEnd).
    pub fn reason(&self) -> Option<&str> {
        self.str_field("reason")
    }

    /// The notification or display message (Notification, MessageDisplay).
    pub fn message(&self) -> Option<&str> {
        self.str_field("message")
    }

    /// What triggered compaction (PreCompact): manual or auto.
    pub fn trigger(&self) -> Option<&str> {
        self.str_field("trigger")
    }

    /// True when Claude Code runs without permission prompts: the payload says
    /// `bypassPermissions`, or an ancestor `claude` process was started with
    /// `--dangerously-skip-permissions`.
    pub fn skip_permissions(&self) -> bool {
        if let Some(v) = self.context.skip_permissions {
            return v;
        }
        self.permission_mode() == Some("bypassPermissions")
            || match self.context.origin_pid {
                Some(pid) => skips_permissions_from(pid),
                None => ancestor_skips_permissions(),
            }
    }

    /// The edited file before and after the call (Edit, Write, MultiEdit at PreToolUse and
    /// PostToolUse), computed once; `None` for other calls and for files that are not text.
    pub fn edit_images(&self) -> Option<&crate::edit::EditImages> {
        self.images
            .get_or_init(|| crate::edit::compute(self))
            .as_ref()
    }

    /// The event with the edited file's text before the call given instead of read from disk
    /// (an inline test's file does not exist): the images are `before` and the call applied to
    /// it. `Err` says why the call cannot apply (not an edit, or `old_string` not in `before`).
    pub fn with_file_before(self, before: String) -> Result<Event, crate::edit::EditError> {
        let images = crate::edit::from_before(&self, before)?;
        // A fresh event has computed nothing yet; set it before anyone reads.
        let _ = self.images.set(Some(images));
        Ok(self)
    }

    /// The whole file before the call.
    pub fn pre_image(&self) -> Option<&str> {
        self.edit_images().map(|i| i.pre.as_str())
    }

    /// The whole file after the call.
    pub fn post_image(&self) -> Option<&str> {
        self.edit_images().map(|i| i.post.as_str())
    }

    /// `ccx:<key>[=<value>]` annotations: from shell comments of the Bash command (nested
    /// payloads included), from `ccx:` header lines of an Agent prompt or Skill args, and `raw`
    /// from `CAPT_HOOK_CCX_RAW`.
    pub fn annotations(&self) -> &BTreeMap<String, Option<String>> {
        self.annotations.get_or_init(|| {
            let mut out = BTreeMap::new();
            if let Some(cl) = self.command_line() {
                for comment in &cl.comments {
                    collect_annotations(comment, &mut out);
                }
            }
            let header_text = match &self.tool {
                ToolCall::Agent { prompt, .. } => Some(prompt.as_str()),
                ToolCall::Skill { args, .. } => args.as_deref(),
                _ => None,
            };
            if let Some(text) = header_text {
                out.extend(annotations_in_header(text));
            }
            let raw = match &self.context.request_env {
                Some(env) => env
                    .get(crate::env::CAPT_HOOK_CCX_RAW)
                    .is_some_and(|v| crate::env::is_truthy(v)),
                None => crate::env::ccx_raw(),
            };
            if raw {
                out.insert("raw".to_owned(), None);
            }
            out
        })
    }
}

/// `ccx: key[=value] …` header lines of a prompt.
pub fn annotations_in_header(text: &str) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.trim().strip_prefix("ccx:") {
            for token in rest.split_whitespace() {
                insert_annotation(token, &mut out);
            }
        }
    }
    out
}

fn collect_annotations(text: &str, out: &mut BTreeMap<String, Option<String>>) {
    for token in text.split_whitespace() {
        if let Some(rest) = token.strip_prefix("ccx:") {
            insert_annotation(rest, out);
        }
    }
}

fn insert_annotation(token: &str, out: &mut BTreeMap<String, Option<String>>) {
    let (key, value) = match token.split_once('=') {
        Some((k, v)) => (k, Some(v.to_owned())),
        None => (token, None),
    };
    if !key.is_empty() {
        out.insert(key.to_owned(), value);
    }
}

/// Walks the process tree up to the nearest `claude` process and reports whether it runs
/// without permission prompts. Computed once per process: the answer cannot change.
fn ancestor_skips_permissions() -> bool {
    static CACHE: OnceLock<bool> = OnceLock::new();
    *CACHE.get_or_init(|| skips_permissions_from(std::process::id()))
}

/// Walks up from `pid` to the nearest `claude` process and reads its flags.
fn skips_permissions_from(start: u32) -> bool {
    let mut pid = start;
    for _ in 0..64 {
        let Some((ppid, argv)) = proc_info(pid) else {
            return false;
        };
        let is_claude = argv
            .first()
            .map(|a| crate::glob::basename(a) == "claude")
            .unwrap_or(false);
        if is_claude {
            return argv.iter().any(|a| {
                a == "--dangerously-skip-permissions" || a == "--allow-dangerously-skip-permissions"
            });
        }
        if ppid <= 1 {
            return false;
        }
        pid = ppid;
    }
    false
}

fn proc_info(pid: u32) -> Option<(u32, Vec<String>)> {
    let stat = capt_hook_proto::procfs::stat(pid)?;
    Some((stat.ppid, capt_hook_proto::procfs::cmdline(pid)?))
}

/// Workflow state (`ReviewState::load(evt)`) reads the event's session store.
impl capt_hook_state::SessionContext for Event {
    fn session_store(&self) -> &capt_hook_state::SessionStore {
        self.store()
    }

    fn agent_id(&self) -> Option<&str> {
        self.agent_id()
    }
}

/// Durable state (`Facts::load(evt)`) lives under the state root, per project or global.
impl capt_hook_state::DurableContext for Event {
    fn durable_store(&self, scope: capt_hook_state::Scope) -> capt_hook_state::DurableStore {
        let root = self
            .context
            .state_root
            .clone()
            .unwrap_or_else(capt_hook_state::state_root);
        match scope {
            capt_hook_state::Scope::Global => capt_hook_state::DurableStore::global(&root),
            // Without a repository root the store keeps its data in memory: one store per
            // event, so what a hook call writes it can read back, and nothing persists.
            capt_hook_state::Scope::Project if self.project_root().is_none() => (*self
                .memo("durable_project_store", || {
                    capt_hook_state::DurableStore::project(&root, None)
                }))
            .clone(),
            capt_hook_state::Scope::Project => {
                capt_hook_state::DurableStore::project(&root, self.project_root())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occurrences_finds_every_start_overlapping_ones_included() {
        let all = |h: &str, n: &str| occurrences(h.as_bytes(), n.as_bytes()).collect::<Vec<_>>();
        assert_eq!(all("aaa", "aa"), [0, 1]);
        assert_eq!(all("git push; git", "git"), [0, 10]);
        assert_eq!(all("ab", ""), [0, 1, 2]);
        assert!(all("git", "gitx").is_empty());
    }

    /// The span hint only finds a witness sooner: a hint at a bounded occurrence says yes, a
    /// wrong or unbounded one falls back to the search, which decides.
    #[test]
    fn stands_in_with_and_without_a_hint() {
        let raw = "xgit push && git push";
        for hint in [None, Some(0), Some(1), Some(13), Some(99)] {
            assert!(stands_in(raw, "git push", hint), "{hint:?}");
            assert!(!stands_in("xgit push", "git push", hint), "{hint:?}");
            assert!(!stands_in("git pushy", "git push", hint), "{hint:?}");
            assert!(stands_in("a; git push", "git push", hint), "{hint:?}");
        }
    }
    use serde_json::json;

    fn ev(kind: EventKind, v: Value) -> Event {
        Event::new(kind, v, EventContext::default()).unwrap()
    }

    #[test]
    fn agent_id_normalises_empty_and_null() {
        assert_eq!(
            ev(EventKind::Stop, json!({"agent_id": ""})).agent_id(),
            None
        );
        assert_eq!(
            ev(EventKind::Stop, json!({"agent_id": null})).agent_id(),
            None
        );
        assert!(ev(EventKind::Stop, json!({"agent_id": "a1"})).is_subagent());
    }

    #[test]
    fn skip_permissions_is_read_from_the_claude_ancestor_of_the_origin() {
        // A stand-in `claude` started with the flag: bash's `exec -a` sets its argv[0].
        let spawn = |flag: &str| {
            std::process::Command::new("bash")
                // The inner bash keeps running (two commands, so no exec) with the flag in its
                // argv: `claude -c 'sleep 30; true' <flag>`.
                .args([
                    "-c",
                    &format!("exec -a claude bash -c 'sleep 30; true' {flag}"),
                ])
                .spawn()
                .unwrap()
        };
        let mut skipping = spawn("--dangerously-skip-permissions");
        let mut normal = spawn("--verbose");
        // Wait until both have exec'd into their `claude` argv.
        for child in [&skipping, &normal] {
            for _ in 0..500 {
                if proc_info(child.id())
                    .is_some_and(|(_, argv)| argv.first().is_some_and(|a| a == "claude"))
                {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        let ctx = |pid: u32| EventContext {
            origin_pid: Some(pid),
            ..EventContext::default()
        };
        let evt = |pid| Event::new(EventKind::PreToolUse, json!({}), ctx(pid)).unwrap();
        let (a, b) = (
            evt(skipping.id()).skip_permissions(),
            evt(normal.id()).skip_permissions(),
        );
        let _ = (
            skipping.kill(),
            normal.kill(),
            skipping.wait(),
            normal.wait(),
        );
        assert!(a);
        assert!(!b);
    }

    #[test]
    fn memo_computes_once_per_key() {
        let e = ev(EventKind::Stop, json!({}));
        let mut runs = 0;
        let a = *e.memo("k", || {
            runs += 1;
            7u32
        });
        let b = *e.memo("k", || {
            runs += 1;
            8u32
        });
        let c = *e.memo("other", || 9u32);
        assert_eq!((a, b, c, runs), (7, 7, 9, 1));
    }

    #[test]
    fn non_objects_are_rejected() {
        let err = Event::new(EventKind::Stop, json!([1]), EventContext::default()).unwrap_err();
        assert_eq!(err.to_string(), "expected a JSON object, got an array");
    }

    #[test]
    fn tool_fields_only_on_tool_events() {
        let p = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
        assert_eq!(ev(EventKind::PreToolUse, p.clone()).command(), Some("ls"));
        assert_eq!(ev(EventKind::Stop, p).command(), None);
    }

    #[test]
    fn annotations_from_comments_and_prompt_headers() {
        let e = ev(
            EventKind::PreToolUse,
            json!({"tool_name": "Bash", "tool_input": {"command": "ls # ccx:why=audit ccx:fast"}}),
        );
        assert_eq!(e.annotations().get("why"), Some(&Some("audit".to_owned())));
        assert_eq!(e.annotations().get("fast"), Some(&None));
        let a = ev(
            EventKind::PreToolUse,
            json!({"tool_name": "Agent", "tool_input": {"prompt": "ccx: review=deep\nDo it"}}),
        );
        assert_eq!(
            a.annotations().get("review"),
            Some(&Some("deep".to_owned()))
        );
    }

    #[test]
    fn post_image_applies_the_edit_to_the_file_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.py");
        std::fs::write(&f, "x = 1\ny = 2\n").unwrap();
        let e = ev(
            EventKind::PreToolUse,
            json!({"tool_name": "Edit", "tool_input": {"file_path": f, "old_string": "y = 2", "new_string": "y = 3"}}),
        );
        assert_eq!(e.pre_image(), Some("x = 1\ny = 2\n"));
        assert_eq!(e.post_image(), Some("x = 1\ny = 3\n"));
    }
}

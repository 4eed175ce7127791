//! What one evaluated event leaves behind: the [`Entry`] the worker hands over (cheap to build:
//! it shares the parsed event), the [`LogLine`] a session log holds for it, and the ledger rows
//! its delivered verdicts become.

use std::sync::Arc;

use capt_hook_core::{Action, Event, HookResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest message or subject kept in a log line, in characters.
const CLIP: usize = 200;

/// One hook that delivered a result.
#[derive(Debug, Clone)]
pub struct Fired {
    /// The hook's name.
    pub hook: String,
    /// The file (and line) that defines it, when known.
    pub source: Option<String>,
    /// What it said.
    pub result: HookResult,
}

/// One evaluated event, as the worker hands it to the journal after the reply is sent.
#[derive(Debug, Clone)]
pub struct Entry {
    /// When the event arrived (Unix milliseconds).
    pub ts_ms: u64,
    /// The event name the client gave.
    pub event_name: String,
    /// The parsed event; `None` when the payload could not be read.
    pub event: Option<Arc<Event>>,
    /// Hooks that delivered a result, in registration order.
    pub fired: Vec<Fired>,
    /// Hooks that matched and failed, and other reasons the hooks could not answer.
    pub errors: Vec<String>,
    /// The answer's verdict: the folded action, `unchecked` when a failure left the call to
    /// the user, `None` when nothing was said.
    pub verdict: Option<String>,
    /// The client's exit code.
    pub exit: i32,
    /// Time spent evaluating.
    pub elapsed_ms: f64,
    /// The request came from a process captain-hook spawned (`CAPT_HOOK_SPAWNED`): logged,
    /// but kept out of the decision ledger.
    pub spawned: bool,
}

/// One hook in a log line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedHook {
    /// The hook's name.
    pub hook: String,
    /// `block`, `warn`, `allow` or `rewrite`.
    pub action: String,
    /// What it said, clipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One line of a session log (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    /// UTC time of the event.
    pub ts: String,
    /// The same, in Unix milliseconds.
    pub ts_ms: u64,
    /// The session (`unknown` when the payload named none).
    pub session: String,
    /// The event name.
    pub event: String,
    /// The tool, on tool events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What the event is about: the command, file, pattern or prompt, clipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The answer's verdict (see [`Entry::verdict`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Hooks that delivered a result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fired: Vec<LoggedHook>,
    /// Failures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Calls LLM hooks made to their judges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judge: Vec<crate::judge::JudgeCall>,
    /// Time spent evaluating.
    pub elapsed_ms: f64,
    /// The client's exit code.
    pub exit: i32,
}

/// A row for the decision ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDecision {
    /// Unix milliseconds.
    pub ts_ms: u64,
    /// The session.
    pub session_id: String,
    /// The hook's name.
    pub kind: String,
    /// Where the hook is defined (empty when unknown).
    pub source_file: String,
    /// The event name.
    pub event: String,
    /// `allow`, `block`, `warn` or `note` (a rewrite).
    pub action: &'static str,
    /// The tool, on tool events.
    pub tool_name: Option<String>,
    /// A digest of the tool name and input, to tie rows to one call.
    pub tool_digest: Option<String>,
    /// Claude Code's id for the tool call (`tool_use_id`).
    pub event_uuid: Option<String>,
    /// What the hook said.
    pub message: Option<String>,
    /// Further facts, as a JSON object.
    pub detail_json: String,
}

impl Entry {
    /// The session id, when the payload carried one.
    pub fn session_id(&self) -> Option<&str> {
        self.event
            .as_ref()
            .and_then(|e| e.session_id())
            .filter(|s| !s.is_empty())
    }

    /// The session log line for this event.
    pub fn log_line(&self) -> LogLine {
        let evt = self.event.as_deref();
        LogLine {
            ts: crate::time::utc(self.ts_ms),
            ts_ms: self.ts_ms,
            session: self.session_id().unwrap_or("unknown").to_owned(),
            event: self.event_name.clone(),
            tool: evt.and_then(Event::tool_name).map(str::to_owned),
            subject: evt.and_then(subject).map(|s| clip(&s)),
            verdict: self.verdict.clone(),
            fired: self
                .fired
                .iter()
                .map(|f| LoggedHook {
                    hook: f.hook.clone(),
                    action: f.result.action.name().to_owned(),
                    message: said(&f.result).map(clip),
                })
                .collect(),
            errors: self.errors.clone(),
            judge: evt.map(crate::judge::recorded).unwrap_or_default(),
            elapsed_ms: (self.elapsed_ms * 1000.0).round() / 1000.0,
            exit: self.exit,
        }
    }

    /// The ledger rows: one per delivered verdict. None for an event without a session or
    /// one sent by a spawned process.
    pub fn decisions(&self) -> Vec<NewDecision> {
        let Some(session) = self.session_id() else {
            return Vec::new();
        };
        if self.spawned || self.fired.is_empty() {
            return Vec::new();
        }
        let evt = self.event.as_deref();
        let tool_name = evt.and_then(Event::tool_name).map(str::to_owned);
        let tool_digest = evt.and_then(tool_digest);
        let event_uuid = evt
            .and_then(|e| e.payload().get("tool_use_id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let detail = serde_json::json!({ "elapsed_ms": self.elapsed_ms }).to_string();
        self.fired
            .iter()
            .map(|f| NewDecision {
                ts_ms: self.ts_ms,
                session_id: session.to_owned(),
                kind: f.hook.clone(),
                source_file: f.source.clone().unwrap_or_default(),
                event: self.event_name.clone(),
                action: match f.result.action {
                    Action::Block => "block",
                    Action::Warn => "warn",
                    Action::Allow => "allow",
                    Action::Rewrite => "note",
                },
                tool_name: tool_name.clone(),
                tool_digest: tool_digest.clone(),
                event_uuid: event_uuid.clone(),
                message: said(&f.result).map(str::to_owned),
                detail_json: detail.clone(),
            })
            .collect()
    }
}

impl Entry {
    /// The ledger rows for the judge calls the event's hooks made; none for an event without a
    /// session or one sent by a spawned process (as for [`Entry::decisions`]).
    pub fn judge_rows(&self) -> Vec<crate::judge::NewJudgeCall> {
        let (Some(session), Some(evt)) = (self.session_id(), self.event.as_deref()) else {
            return Vec::new();
        };
        if self.spawned {
            return Vec::new();
        }
        let calls = crate::judge::recorded(evt);
        if calls.is_empty() {
            return Vec::new();
        }
        let digest = tool_digest(evt);
        calls
            .into_iter()
            .zip(0u32..)
            .map(|(call, seq)| crate::judge::NewJudgeCall {
                ts_ms: self.ts_ms,
                session_id: session.to_owned(),
                event: self.event_name.clone(),
                tool_digest: digest.clone(),
                seq,
                call,
            })
            .collect()
    }
}

/// What a result says: the message, else a rewrite's note, else the user notice.
fn said(r: &HookResult) -> Option<&str> {
    [&r.message, &r.note, &r.system_message]
        .into_iter()
        .find_map(|m| m.as_deref().filter(|m| !m.is_empty()))
}

/// What an event is about, for a log line.
fn subject(evt: &Event) -> Option<String> {
    if let Some(input) = evt.tool_input() {
        for key in [
            "command",
            "file_path",
            "notebook_path",
            "pattern",
            "url",
            "prompt",
        ] {
            if let Some(v) = input.get(key).and_then(Value::as_str) {
                return Some(v.to_owned());
            }
        }
        return None;
    }
    evt.payload()
        .get("prompt")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// 16 hex characters of blake3 over the tool name and its input's JSON.
fn tool_digest(evt: &Event) -> Option<String> {
    let name = evt.tool_name()?;
    let mut h = blake3::Hasher::new();
    h.update(name.as_bytes());
    h.update(b"\0");
    if let Some(input) = evt.tool_input() {
        h.update(Value::Object(input.clone()).to_string().as_bytes());
    }
    Some(h.finalize().to_hex()[..16].to_owned())
}

/// `text` on one line, at most [`CLIP`] characters (an ellipsis marks a cut).
fn clip(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match one_line.char_indices().nth(CLIP) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

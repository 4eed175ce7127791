//! Replays a recorded session: rebuilds the events Claude Code would have sent at each step of
//! a transcript and runs the hooks on them, with scratch state, so stateful hooks can be checked
//! against real sessions before they ship.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use capt_hook_core::{EventContext, EventKind, HookResult, envelope};
use serde_json::{Map, Value, json};

use capt_hook_core::Event;
use capt_hook_engine::dispatch::{DispatchOptions, Dispatcher, Trace};

/// Why a transcript could not be replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The transcript could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The transcript.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The scratch directory could not be prepared.
    #[error("cannot prepare the scratch directory: {0}")]
    Scratch(std::io::Error),
}

/// One replayed event.
#[derive(Debug, Clone)]
pub struct ReplayStep {
    /// 1-based line of the transcript the event belongs to.
    pub line: usize,
    /// The event.
    pub event: EventKind,
    /// What it was about (`Bash: pytest -q`, the prompt, …).
    pub subject: String,
    /// Hooks that returned a result, in registration order, with it.
    pub fired: Vec<(String, HookResult)>,
    /// The folded verdict.
    pub verdict: Option<HookResult>,
    /// What Claude Code would have received.
    pub output: Option<String>,
}

/// A user line that is a real prompt (not a tool result, not a meta or command echo).
fn prompt_of(line: &Value) -> Option<String> {
    if line.get("type")?.as_str()? != "user"
        || line.get("isMeta").and_then(Value::as_bool) == Some(true)
        || line.get("isSidechain").and_then(Value::as_bool) == Some(true)
    {
        return None;
    }
    let content = line.get("message")?.get("content")?;
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            if blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            {
                return None;
            }
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        }
        _ => return None,
    };
    (!text.trim().is_empty()
        && !text.starts_with("<command-")
        && !text.starts_with("<local-command"))
    .then_some(text)
}

fn blocks<'a>(line: &'a Value, kind: &str) -> Vec<&'a Value> {
    if line.get("isSidechain").and_then(Value::as_bool) == Some(true) {
        return Vec::new();
    }
    line.get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some(kind))
                .collect()
        })
        .unwrap_or_default()
}

fn subject(tool: &str, input: &Value) -> String {
    let detail = [
        "command",
        "file_path",
        "notebook_path",
        "pattern",
        "prompt",
        "skill",
    ]
    .iter()
    .find_map(|k| input.get(*k).and_then(Value::as_str))
    .unwrap_or("");
    let detail: String = detail
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(80)
        .collect();
    if detail.is_empty() {
        tool.to_owned()
    } else {
        format!("{tool}: {detail}")
    }
}

struct Replayer<'d> {
    dispatcher: &'d Dispatcher,
    root: PathBuf,
    state_root: PathBuf,
    transcript: PathBuf,
    session_id: String,
    steps: Vec<ReplayStep>,
}

impl Replayer<'_> {
    fn emit(&mut self, line: usize, kind: EventKind, subject: String, fields: Map<String, Value>) {
        let mut payload = Map::new();
        payload.insert("session_id".into(), self.session_id.clone().into());
        payload.insert(
            "transcript_path".into(),
            self.transcript.display().to_string().into(),
        );
        payload.insert("cwd".into(), self.root.display().to_string().into());
        payload.insert("hook_event_name".into(), kind.name().into());
        payload.insert("permission_mode".into(), "default".into());
        payload.extend(fields);
        let context = EventContext {
            project_root: Some(self.root.clone()),
            skip_permissions: Some(false),
            state_root: Some(self.state_root.clone()),
            origin_pid: None,
            request_env: None,
            coding_agent: None,
        };
        let Ok(evt) = Event::new(kind, Value::Object(payload), context) else {
            return;
        };
        let evt = Arc::new(evt);
        let (verdict, traces) = self.dispatcher.explain(&evt, DispatchOptions::default());
        let fired = self
            .dispatcher
            .registry()
            .hooks()
            .iter()
            .zip(traces)
            .filter_map(|(h, t)| match t {
                Trace::Matched(Some(r)) => Some((h.name.clone(), r)),
                _ => None,
            })
            .collect();
        let output = envelope(kind, verdict.as_ref()).map(|o| o.render());
        self.steps.push(ReplayStep {
            line,
            event: kind,
            subject,
            fired,
            verdict,
            output,
        });
    }
}

/// Replays `transcript` against the dispatcher's hooks for the project at `root`.
pub fn replay(
    dispatcher: &Dispatcher,
    root: &Path,
    transcript: &Path,
) -> Result<Vec<ReplayStep>, ReplayError> {
    let text = std::fs::read_to_string(transcript).map_err(|source| ReplayError::Read {
        path: transcript.to_path_buf(),
        source,
    })?;
    let scratch = tempfile::tempdir().map_err(ReplayError::Scratch)?;
    let prefix_path = scratch.path().join("transcript.jsonl");
    let mut prefix = std::fs::File::create(&prefix_path).map_err(ReplayError::Scratch)?;
    let lines: Vec<(usize, Value)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| serde_json::from_str(l).ok().map(|v| (i + 1, v)))
        .collect();
    let session_id = lines
        .iter()
        .find_map(|(_, v)| v.get("sessionId").and_then(Value::as_str))
        .unwrap_or("replay")
        .to_owned();
    let mut r = Replayer {
        dispatcher,
        root: root.to_path_buf(),
        state_root: scratch.path().join("state"),
        transcript: prefix_path,
        session_id,
        steps: Vec::new(),
    };
    // Tool calls waiting for their results: id -> (name, input).
    let mut open: Vec<(String, String, Value)> = Vec::new();
    let mut in_turn = false;
    let mut last_line = 0;
    for (n, line) in &lines {
        let raw = serde_json::to_string(line).unwrap_or_default();
        if let Some(prompt) = prompt_of(line) {
            if in_turn {
                r.emit(last_line, EventKind::Stop, "end of turn".into(), Map::new());
            }
            let mut f = Map::new();
            f.insert("prompt".into(), prompt.clone().into());
            let subject: String = prompt
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(80)
                .collect();
            r.emit(*n, EventKind::UserPromptSubmit, subject, f);
            in_turn = true;
        }
        // The line is on disk before hooks for its tool calls run, as in Claude Code.
        writeln!(prefix, "{raw}").map_err(ReplayError::Scratch)?;
        prefix.flush().map_err(ReplayError::Scratch)?;
        for call in blocks(line, "tool_use") {
            let (Some(id), Some(name)) = (
                call.get("id").and_then(Value::as_str),
                call.get("name").and_then(Value::as_str),
            ) else {
                continue;
            };
            let input = call.get("input").cloned().unwrap_or(json!({}));
            let mut f = Map::new();
            f.insert("tool_name".into(), name.into());
            f.insert("tool_input".into(), input.clone());
            f.insert("tool_use_id".into(), id.into());
            r.emit(*n, EventKind::PreToolUse, subject(name, &input), f);
            open.push((id.to_owned(), name.to_owned(), input));
        }
        for result in blocks(line, "tool_result") {
            let Some(id) = result.get("tool_use_id").and_then(Value::as_str) else {
                continue;
            };
            let Some(pos) = open.iter().position(|(i, _, _)| i == id) else {
                continue;
            };
            let (id, name, input) = open.remove(pos);
            let failed = result.get("is_error").and_then(Value::as_bool) == Some(true);
            let response = line
                .get("toolUseResult")
                .cloned()
                .or_else(|| result.get("content").cloned())
                .unwrap_or(Value::Null);
            let mut f = Map::new();
            f.insert("tool_name".into(), name.clone().into());
            f.insert("tool_input".into(), input.clone());
            f.insert("tool_use_id".into(), id.into());
            let kind = if failed {
                f.insert(
                    "error".into(),
                    response.as_str().unwrap_or("tool failed").into(),
                );
                EventKind::PostToolUseFailure
            } else {
                f.insert("tool_response".into(), response);
                EventKind::PostToolUse
            };
            r.emit(*n, kind, subject(&name, &input), f);
        }
        last_line = *n;
    }
    if in_turn {
        r.emit(
            last_line,
            EventKind::Stop,
            "end of session".into(),
            Map::new(),
        );
    }
    Ok(r.steps)
}

/// The human report: one line per event where a hook said something.
pub fn report(steps: &[ReplayStep], all: bool) -> String {
    let mut out = String::new();
    let mut with_verdicts = 0;
    for s in steps {
        if s.output.is_some() {
            with_verdicts += 1;
        }
        if !all && s.fired.is_empty() {
            continue;
        }
        let verdict = match &s.verdict {
            Some(v) => v.action.name().to_uppercase(),
            None => "-".to_owned(),
        };
        out.push_str(&format!(
            "line {:<5} {:<18} {:<7} {}\n",
            s.line,
            s.event.name(),
            verdict,
            s.subject
        ));
        for (name, r) in &s.fired {
            let msg = r
                .message
                .as_deref()
                .or(r.note.as_deref())
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("");
            out.push_str(&format!("           {name}: {} {msg}\n", r.action.name()));
        }
    }
    out.push_str(&format!(
        "\n{} events replayed, {} with a verdict\n",
        steps.len(),
        with_verdicts
    ));
    out
}

//! The simulated event of an inline test, one definition for the SDK and hook files.

use std::path::Path;

use capt_hook_core::EventKind;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The simulated event of an inline test: `input = { … }` in a hook file, `Input { … }` in
/// Rust. Unset fields are left out of the payload.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The event (default: the hook's first event).
    pub event: Option<EventKind>,
    /// The tool (default: the hook's first `tool` condition, else inferred from the fields).
    pub tool: Option<String>,
    /// Bash `command`.
    pub command: Option<String>,
    /// The target file.
    pub file: Option<String>,
    /// New text (Edit `new_string`, Write `content`).
    pub content: Option<String>,
    /// The whole file before the call, for an Edit/MultiEdit/Write whose file is not on disk
    /// (the edit is applied to it): what `before_edit`, `after_edit` and `introduced` read.
    pub before: Option<String>,
    /// Replaced text (Edit `old_string`).
    pub old: Option<String>,
    /// The raw tool input, used verbatim instead of a synthesised one.
    pub tool_input: Option<Map<String, Value>>,
    /// The user prompt, or an Agent call's prompt.
    pub prompt: Option<String>,
    /// The subagent type.
    pub agent_type: Option<String>,
    /// The subagent id.
    pub agent_id: Option<String>,
    /// An Agent call's model; the session's model on SessionStart; where the switch goes
    /// (`to_model`) on PreModelSwitch and PostModelSwitch.
    pub model: Option<String>,
    /// The tool response (PostToolUse).
    pub output: Option<Value>,
    /// The failure text (PostToolUseFailure).
    pub error: Option<String>,
    /// SessionEnd's reason.
    pub reason: Option<String>,
    /// SessionStart's source.
    pub source: Option<String>,
    /// The permission mode.
    pub permission_mode: Option<String>,
    /// The coding agent running the session (`codex`, `gemini`, …; default `claude`), as the
    /// `coding_agent` condition reads it.
    pub coding_agent: Option<String>,
    /// Whether Claude Code runs with permission prompts skipped.
    pub skip_permissions: Option<bool>,
    /// Read offset.
    pub offset: Option<i64>,
    /// Read limit.
    pub limit: Option<i64>,
    /// The working directory.
    pub cwd: Option<String>,
    /// The session so far: transcript lines inline, or a `.jsonl` file relative to the hook file.
    pub transcript: Option<TranscriptInput>,
    /// Session state slots to pre-seed, by slot key.
    pub state: Option<Map<String, Value>>,
    /// Workflow records to pre-seed where their `load` reads them (under their state key and
    /// the event's agent): `(state key, model key, record)`. Rust tests only
    /// ([`Input::workflow_state`]).
    #[serde(skip)]
    #[schemars(skip)]
    pub workflow: Vec<(String, String, Value)>,
    /// The stubbed judge's verdict for LLM hooks: these fields over the defaults (`block` and
    /// `fire` true, text `"inline test stub"`); `error = "…"` makes the judge fail.
    pub llm: Option<Map<String, Value>>,
    /// Permission tickets in the project's store before the event (`tickets` hooks).
    pub tickets: Option<Vec<TicketInput>>,
    /// The user's durable rulings on record before the event (`user_ruled` ticket rules).
    pub rulings: Option<Vec<RulingInput>>,
    /// The request's environment, as the host hands a worker the client's (`on_path` reads its
    /// `PATH`); unset, the test process's own environment applies.
    pub env: Option<std::collections::BTreeMap<String, String>>,
}

/// A permission ticket an inline test puts in the store before its event: minted `age` ago,
/// living `ttl` from then (expired when `age >= ttl`), in the test's session tree unless `tree`
/// says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketInput {
    /// The ticket kind (`chat.post`).
    pub kind: String,
    /// The place keys and their values.
    pub place: std::collections::BTreeMap<String, String>,
    /// `place` (default): every call at the place; `action`: the test's own tool call only.
    pub reach: Option<ReachSpec>,
    /// How long ago it was minted (default 0).
    pub age: Option<DurationSpec>,
    /// Its lifetime from minting (default: until revoked).
    pub ttl: Option<DurationSpec>,
    /// It was revoked (just before the event).
    #[serde(default)]
    pub revoked: bool,
    /// The root session of the tree it was minted in (default: the test's session,
    /// `inline-test`).
    pub tree: Option<String>,
    /// The rule recorded on it (default `preloaded`).
    pub rule: Option<String>,
}

/// A durable ruling of the user's an inline test puts on record before its event, recorded
/// `age` before it (default: a day, so before the test's session started).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RulingInput {
    /// Its id.
    pub id: String,
    /// The user's words.
    pub text: String,
    /// Its tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// How long before the event it was recorded (default 1 day).
    pub age: Option<DurationSpec>,
}

impl Input {
    /// An input with just a Bash command.
    pub fn command(command: impl Into<String>) -> Input {
        Input {
            command: Some(command.into()),
            ..Input::default()
        }
    }

    /// An empty input: the hook's first event, its first tool.
    pub fn new() -> Input {
        Input::default()
    }

    /// The event to simulate.
    pub fn event(mut self, event: EventKind) -> Input {
        self.event = Some(event);
        self
    }

    /// The tool to simulate.
    pub fn tool(mut self, tool: impl Into<String>) -> Input {
        self.tool = Some(tool.into());
        self
    }

    /// The target file.
    pub fn file(mut self, file: impl Into<String>) -> Input {
        self.file = Some(file.into());
        self
    }

    /// The new text (Edit `new_string`, Write `content`).
    pub fn content(mut self, content: impl Into<String>) -> Input {
        self.content = Some(content.into());
        self
    }

    /// The replaced text (Edit `old_string`).
    pub fn old(mut self, old: impl Into<String>) -> Input {
        self.old = Some(old.into());
        self
    }

    /// The whole file before the call (see [`Input::before`]).
    pub fn before(mut self, text: impl Into<String>) -> Input {
        self.before = Some(text.into());
        self
    }

    /// The user prompt (or an Agent call's prompt).
    pub fn prompt(mut self, prompt: impl Into<String>) -> Input {
        self.prompt = Some(prompt.into());
        self
    }

    /// The subagent's id.
    pub fn agent_id(mut self, id: impl Into<String>) -> Input {
        self.agent_id = Some(id.into());
        self
    }

    /// The subagent's type.
    pub fn agent_type(mut self, agent_type: impl Into<String>) -> Input {
        self.agent_type = Some(agent_type.into());
        self
    }

    /// The working directory.
    pub fn cwd(mut self, cwd: impl Into<String>) -> Input {
        self.cwd = Some(cwd.into());
        self
    }

    /// The raw tool input, used verbatim.
    pub fn tool_input(mut self, input: Value) -> Input {
        self.tool_input = input.as_object().cloned();
        self
    }

    /// Whether Claude Code runs with permission prompts skipped.
    pub fn skip_permissions(mut self, skip: bool) -> Input {
        self.skip_permissions = Some(skip);
        self
    }

    /// The session so far, as transcript lines (missing `uuid`, `timestamp` and `sessionId`
    /// are filled in).
    pub fn transcript(mut self, lines: Vec<Value>) -> Input {
        self.transcript = Some(TranscriptInput::Lines(lines));
        self
    }

    /// The stubbed judge's answer for LLM hooks (a JSON object: verdict fields over the
    /// defaults, or `{"error": "…"}` to make the judge fail); anything else is ignored.
    pub fn llm(mut self, verdict: Value) -> Input {
        if let Value::Object(fields) = verdict {
            self.llm = Some(fields);
        }
        self
    }

    /// The session so far, from a `.jsonl` file relative to the file that defines the hook.
    pub fn transcript_file(mut self, path: impl Into<String>) -> Input {
        self.transcript = Some(TranscriptInput::File(path.into()));
        self
    }

    /// Pre-seeds the session slot `key` with `value`.
    pub fn state(mut self, key: impl Into<String>, value: Value) -> Input {
        self.state
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }

    /// Puts a permission ticket in the store before the event.
    pub fn ticket(mut self, ticket: TicketInput) -> Input {
        self.tickets.get_or_insert_with(Vec::new).push(ticket);
        self
    }

    /// Puts a durable ruling of the user's on record a day before the event.
    pub fn ruling(mut self, id: &str, text: &str, tags: &[&str]) -> Input {
        self.rulings.get_or_insert_with(Vec::new).push(RulingInput {
            id: id.to_owned(),
            text: text.to_owned(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            age: None,
        });
        self
    }

    /// Pre-seeds a workflow state record where its `load` reads it.
    pub fn workflow_state<T: capt_hook_state::WorkflowState>(mut self, value: &T) -> Input {
        // A serde struct always serialises; a failure would leave the slot unseeded, which the
        // test then shows as a wrong verdict.
        let json = serde_json::to_value(value).unwrap_or(Value::Null);
        self.workflow.push((T::state_key(), T::model_key(), json));
        self
    }

    /// Python-style repr listing the fields that are set, used in test ids.
    pub fn repr(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut s = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                parts.push(format!("{k}={}", py_str(v)));
            }
        };
        s("event", &self.event.map(|e| e.name().to_owned()));
        s("command", &self.command);
        s("file", &self.file);
        s("content", &self.content);
        s("old", &self.old);
        s("before", &self.before);
        s("tool", &self.tool);
        s("prompt", &self.prompt);
        s("agent_type", &self.agent_type);
        s("agent_id", &self.agent_id);
        s("model", &self.model);
        s("error", &self.error);
        s("reason", &self.reason);
        s("source", &self.source);
        s("permission_mode", &self.permission_mode);
        s("coding_agent", &self.coding_agent);
        s("cwd", &self.cwd);
        if let Some(t) = &self.tool_input {
            parts.push(format!("tool_input={}", Value::Object(t.clone())));
        }
        if let Some(o) = &self.output {
            parts.push(format!("output={o}"));
        }
        if let Some(b) = self.skip_permissions {
            parts.push(format!(
                "skip_permissions={}",
                if b { "True" } else { "False" }
            ));
        }
        if let Some(o) = self.offset {
            parts.push(format!("offset={o}"));
        }
        if let Some(l) = self.limit {
            parts.push(format!("limit={l}"));
        }
        match &self.transcript {
            Some(TranscriptInput::Lines(t)) => {
                parts.push(format!("transcript=[{} lines]", t.len()))
            }
            Some(TranscriptInput::File(f)) => parts.push(format!("transcript={}", py_str(f))),
            None => {}
        }
        if let Some(l) = &self.llm {
            parts.push(format!("llm={}", Value::Object(l.clone())));
        }
        if let Some(s) = &self.state {
            let keys: Vec<&str> = s.keys().map(String::as_str).collect();
            parts.push(format!("state=[{}]", keys.join(", ")));
        }
        if !self.workflow.is_empty() {
            let keys: Vec<&str> = self.workflow.iter().map(|(_, k, _)| k.as_str()).collect();
            parts.push(format!("state=[{}]", keys.join(", ")));
        }
        if let Some(t) = &self.tickets {
            let kinds: Vec<&str> = t.iter().map(|t| t.kind.as_str()).collect();
            parts.push(format!("tickets=[{}]", kinds.join(", ")));
        }
        format!("Input({})", parts.join(", "))
    }
}

/// `s` quoted the way Python's `repr` quotes a string, for test ids and reports.
pub fn py_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// A test's transcript: lines inline, or a fixture file.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TranscriptInput {
    /// Raw transcript lines (missing `uuid`, `timestamp` and `sessionId` are filled in).
    Lines(Vec<Value>),
    /// A `.jsonl` file, relative to the file that declares the test.
    File(String),
}

/// Why a test's transcript fixture could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FixtureError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The fixture file.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not JSON.
    #[error("{}:{line}: not JSON: {source}", path.display())]
    NotJson {
        /// The fixture file.
        path: std::path::PathBuf,
        /// The 1-based line.
        line: usize,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
}

/// The transcript lines of a test, a fixture file read relative to `base`; fixture lines may
/// leave out the envelope Claude Code always writes, which is filled in. The error names the
/// file and line.
pub fn load_transcript(spec: &TranscriptInput, base: &Path) -> Result<Vec<Value>, FixtureError> {
    let mut lines: Vec<Value> = match spec {
        TranscriptInput::Lines(l) => l.clone(),
        TranscriptInput::File(rel) => {
            let path = base.join(rel);
            let text = std::fs::read_to_string(&path).map_err(|source| FixtureError::Read {
                path: path.clone(),
                source,
            })?;
            let mut out = Vec::new();
            for (n, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                out.push(
                    serde_json::from_str(line).map_err(|source| FixtureError::NotJson {
                        path: path.clone(),
                        line: n + 1,
                        source,
                    })?,
                );
            }
            out
        }
    };
    for (i, line) in lines.iter_mut().enumerate() {
        if let Some(obj) = line.as_object_mut() {
            obj.entry("uuid")
                .or_insert_with(|| format!("fixture-{i}").into());
            obj.entry("sessionId").or_insert_with(|| "fixture".into());
            obj.entry("timestamp")
                .or_insert_with(|| format!("2026-01-01T00:00:{:02}.000Z", i % 60).into());
        }
    }
    Ok(lines)
}

/// How far a minted ticket reaches.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ReachSpec {
    /// This one action (the same tool input).
    Action,
    /// Every later action at the same place.
    Place,
}

/// A duration: seconds, or a number with a unit (`"90s"`, `"30m"`, `"8h"`, `"7d"`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DurationSpec {
    /// Seconds.
    Seconds(u64),
    /// A number with a unit: `s`, `m`, `h` or `d`.
    Text(String),
}

/// Why a duration's text is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// No leading number.
    #[error("`{0}` is not a duration; write seconds or e.g. \"30m\", \"8h\", \"7d\"")]
    NotADuration(String),
    /// A unit other than s, m, h or d.
    #[error("unknown unit `{0}`; use s, m, h or d")]
    UnknownUnit(String),
}

impl DurationSpec {
    /// The duration, or why the text is not one.
    pub fn to_duration(&self) -> Result<std::time::Duration, DurationError> {
        let secs = match self {
            DurationSpec::Seconds(n) => *n,
            DurationSpec::Text(t) => {
                let t = t.trim();
                let (num, unit) =
                    t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
                let n: u64 = num
                    .parse()
                    .map_err(|_| DurationError::NotADuration(t.to_owned()))?;
                let scale = match unit.trim() {
                    "" | "s" => 1,
                    "m" => 60,
                    "h" => 3600,
                    "d" => 86_400,
                    u => return Err(DurationError::UnknownUnit(u.to_owned())),
                };
                n.saturating_mul(scale)
            }
        };
        Ok(std::time::Duration::from_secs(secs))
    }
}

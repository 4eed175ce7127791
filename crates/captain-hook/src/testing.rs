//! Inline tests: a simulated event and the verdict one hook must give for it.

use std::fmt::Write as _;
use std::path::Path;

use capt_hook_core::{
    Action, Condition, Event, EventContext, EventKind, HookResult, Mode, Pattern,
};
use serde_json::{Map, Value, json};

use crate::hook::Hook;

/// The simulated event of an inline test. Unset fields are left out of the payload.
#[derive(Debug, Clone, Default, PartialEq)]
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
    /// An Agent call's model.
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
    /// Whether Claude Code runs with permission prompts skipped.
    pub skip_permissions: Option<bool>,
    /// Read offset.
    pub offset: Option<i64>,
    /// Read limit.
    pub limit: Option<i64>,
    /// The working directory.
    pub cwd: Option<String>,
    /// The session so far, as raw transcript lines.
    pub transcript: Option<Vec<Value>>,
    /// Session state slots to pre-seed, by slot key.
    pub state: Option<Map<String, Value>>,
}

impl Input {
    /// An input with just a Bash command.
    pub fn command(command: impl Into<String>) -> Input {
        Input {
            command: Some(command.into()),
            ..Input::default()
        }
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
        s("tool", &self.tool);
        s("prompt", &self.prompt);
        s("agent_type", &self.agent_type);
        s("agent_id", &self.agent_id);
        s("model", &self.model);
        s("error", &self.error);
        s("reason", &self.reason);
        s("source", &self.source);
        s("permission_mode", &self.permission_mode);
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
        if let Some(t) = &self.transcript {
            parts.push(format!("transcript=[{} lines]", t.len()));
        }
        if let Some(s) = &self.state {
            let keys: Vec<&str> = s.keys().map(String::as_str).collect();
            parts.push(format!("state=[{}]", keys.join(", ")));
        }
        format!("Input({})", parts.join(", "))
    }
}

fn py_str(s: &str) -> String {
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

/// The verdict a test expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A block.
    Block,
    /// A warning.
    Warn,
    /// No result or an allow (`explicit`: only an allow).
    Allow {
        /// Require an actual allow.
        explicit: bool,
    },
    /// No result: the permission dialog would show.
    Ask,
    /// A rewrite.
    Rewrite,
}

/// An expectation: the verdict plus optional checks on its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    /// The verdict.
    pub verdict: Verdict,
    /// Regex the message must contain (rewrite: substring of the new `command`).
    pub pattern: Option<String>,
    /// Rewrite only: substrings each named field of the new input must contain.
    pub fields: Vec<(String, String)>,
    /// Regex the user-visible notice must contain.
    pub system_message: Option<String>,
}

impl Expect {
    fn of(verdict: Verdict) -> Expect {
        Expect {
            verdict,
            pattern: None,
            fields: Vec::new(),
            system_message: None,
        }
    }
    /// Expect a block.
    pub fn block() -> Expect {
        Self::of(Verdict::Block)
    }
    /// Expect a warning.
    pub fn warn() -> Expect {
        Self::of(Verdict::Warn)
    }
    /// Expect no result or an allow.
    pub fn allow() -> Expect {
        Self::of(Verdict::Allow { explicit: false })
    }
    /// Expect no result.
    pub fn ask() -> Expect {
        Self::of(Verdict::Ask)
    }
    /// Expect a rewrite.
    pub fn rewrite() -> Expect {
        Self::of(Verdict::Rewrite)
    }
    /// Adds a pattern the message must contain.
    pub fn matching(mut self, pattern: impl Into<String>) -> Expect {
        self.pattern = Some(pattern.into());
        self
    }

    /// The lower-case name of the expected verdict.
    pub fn name(&self) -> &'static str {
        match self.verdict {
            Verdict::Block => "block",
            Verdict::Warn => "warn",
            Verdict::Allow { .. } => "allow",
            Verdict::Ask => "ask",
            Verdict::Rewrite => "rewrite",
        }
    }
}

/// One inline test of a hook.
#[derive(Debug, Clone, PartialEq)]
pub struct InlineTest {
    /// The simulated event.
    pub input: Input,
    /// What the hook must say.
    pub expect: Expect,
    /// Where the test is written, when known.
    pub line: Option<usize>,
}

/// How one test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The expectation held.
    Pass,
    /// It did not.
    Fail,
    /// The test could not run.
    Error,
    /// The test was not run.
    Skip,
}

impl Status {
    /// The lower-case name used in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Error => "error",
            Status::Skip => "skip",
        }
    }
}

/// One test's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcome {
    /// `<hook name>:<input repr>`.
    pub id: String,
    /// How it ended.
    pub status: Status,
    /// The expected verdict's name.
    pub expected: String,
    /// Why it failed, errored or was skipped; empty on a pass.
    pub reason: String,
}

fn describe(r: Option<&HookResult>) -> String {
    match r {
        None => "no result".to_owned(),
        Some(r) => match r.action {
            Action::Rewrite => format!(
                "rewrite({})",
                r.updated_input
                    .as_ref()
                    .map(|u| Value::Object(u.clone()).to_string())
                    .unwrap_or_default()
            ),
            a => match &r.message {
                Some(m) => format!("{}({})", a.name(), py_str(m)),
                None => format!("{}()", a.name()),
            },
        },
    }
}

/// The tool the test simulates.
fn infer_tool(hook: &Hook, input: &Input) -> String {
    if let Some(t) = &input.tool {
        return t.clone();
    }
    let from_fields = if input.old.is_some() {
        "Edit"
    } else if input.content.is_some() {
        "Write"
    } else if input.prompt.is_some() || input.model.is_some() || input.agent_type.is_some() {
        "Agent"
    } else if input.offset.is_some() || input.limit.is_some() {
        "Read"
    } else if input.command.is_some() {
        "Bash"
    } else if input.file.is_some() {
        "Read"
    } else {
        "Bash"
    };
    let named: Vec<&String> = hook
        .only_if
        .iter()
        .filter_map(|c| match c {
            Condition::Tool(names) => Some(names),
            _ => None,
        })
        .flatten()
        .collect();
    let spellings = capt_hook_core::tool::tool_spellings(from_fields);
    if let Some(hit) = named.iter().find(|n| spellings.contains(&n.as_str())) {
        return (*hit).clone();
    }
    named
        .first()
        .map(|n| (*n).clone())
        .unwrap_or_else(|| from_fields.to_owned())
}

/// Builds the payload Claude Code would send for the test input.
pub fn build_payload(hook: &Hook, input: &Input, event: EventKind) -> Value {
    let mut p = Map::new();
    p.insert("hook_event_name".into(), event.name().into());
    let mut put = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            p.insert(k.into(), v.clone().into());
        }
    };
    put("agent_id", &input.agent_id);
    put("permission_mode", &input.permission_mode);
    put("cwd", &input.cwd);
    put("error", &input.error);
    match event {
        EventKind::UserPromptSubmit => put("prompt", &input.prompt),
        EventKind::SessionStart => {
            p.insert(
                "source".into(),
                input
                    .source
                    .clone()
                    .unwrap_or_else(|| "startup".into())
                    .into(),
            );
        }
        EventKind::SessionEnd => {
            p.insert(
                "reason".into(),
                input
                    .reason
                    .clone()
                    .unwrap_or_else(|| "other".into())
                    .into(),
            );
        }
        EventKind::SubagentStart | EventKind::SubagentStop => {
            p.insert(
                "agent_type".into(),
                input.agent_type.clone().unwrap_or_default().into(),
            );
        }
        EventKind::FileChanged | EventKind::InstructionsLoaded | EventKind::ConfigChange => {
            put("file_path", &input.file);
        }
        // One call in the batch, in the batch's own shape.
        EventKind::PostToolBatch => {
            let tool = infer_tool(hook, input);
            let tool_input = input
                .tool_input
                .clone()
                .unwrap_or_else(|| synthesise_input(&tool, input));
            p.insert(
                "tool_calls".into(),
                json!([{
                    "tool_name": tool,
                    "tool_input": tool_input,
                    "tool_use_id": "toolu_test",
                    "tool_response": input.output.clone().unwrap_or(Value::Null),
                }]),
            );
        }
        k if k.has_tool() => {
            let tool = infer_tool(hook, input);
            let tool_input = input
                .tool_input
                .clone()
                .unwrap_or_else(|| synthesise_input(&tool, input));
            p.insert("tool_name".into(), tool.into());
            p.insert("tool_input".into(), Value::Object(tool_input));
            if let Some(a) = &input.agent_type {
                p.insert("agent_type".into(), a.clone().into());
            }
            if let Some(o) = &input.output {
                p.insert("tool_response".into(), o.clone());
            }
        }
        _ => {}
    }
    Value::Object(p)
}

fn synthesise_input(tool: &str, input: &Input) -> Map<String, Value> {
    let s = |v: &Option<String>| Value::String(v.clone().unwrap_or_default());
    let mut m = Map::new();
    match capt_hook_core::tool::canonical_tool(tool) {
        "Bash" => {
            m.insert("command".into(), s(&input.command));
        }
        "Edit" => {
            m.insert("file_path".into(), s(&input.file));
            m.insert("old_string".into(), s(&input.old));
            m.insert("new_string".into(), s(&input.content));
        }
        "MultiEdit" => {
            m.insert("file_path".into(), s(&input.file));
            m.insert(
                "edits".into(),
                json!([{"old_string": s(&input.old), "new_string": s(&input.content)}]),
            );
        }
        "Write" => {
            m.insert("file_path".into(), s(&input.file));
            m.insert("content".into(), s(&input.content));
        }
        "Read" => {
            m.insert("file_path".into(), s(&input.file));
            if let Some(l) = input.limit {
                m.insert("limit".into(), l.into());
            }
            if let Some(o) = input.offset {
                m.insert("offset".into(), o.into());
            }
        }
        "Agent" => {
            let prompt = input.prompt.clone().or_else(|| input.content.clone());
            m.insert("prompt".into(), prompt.unwrap_or_default().into());
            if let Some(a) = &input.agent_type {
                m.insert("subagent_type".into(), a.clone().into());
            }
            if let Some(a) = &input.model {
                m.insert("model".into(), a.clone().into());
            }
        }
        _ => {
            for (k, v) in [
                ("command", &input.command),
                ("file_path", &input.file),
                ("new_string", &input.content),
                ("old_string", &input.old),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), v.clone().into());
                }
            }
        }
    }
    m
}

/// Runs one hook alone against one event (no fold): opt-outs, conditions, then the body.
pub fn evaluate_alone(hook: &Hook, evt: &Event) -> Option<HookResult> {
    if crate::dispatch::planning_skip(hook, evt) {
        return None;
    }
    let result = match crate::dispatch::matching_event(hook, evt) {
        Ok(Some(call)) => hook.execute(&call),
        Ok(None) => hook.execute(evt),
        Err(_) => None,
    };
    result.map(|r| if hook.approve { r.approving() } else { r })
}

/// Runs one inline test of `hook` with `root` as the project root.
pub fn run_test(hook: &Hook, test: &InlineTest, root: Option<&Path>) -> TestOutcome {
    let id = format!("{}:{}", hook.name, test.input.repr());
    let expected = test.expect.name().to_owned();
    let outcome = |status, reason: String| TestOutcome {
        id: id.clone(),
        status,
        expected: expected.clone(),
        reason,
    };
    let Some(event) = test.input.event.or_else(|| hook.events.first()) else {
        return outcome(Status::Error, "the hook listens to no event".to_owned());
    };
    let payload = build_payload(hook, &test.input, event);
    // Each test gets a scratch state root, so pre-seeded slots and once-per-turn throttles
    // never leak between tests or into the user's real state.
    let scratch = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return outcome(Status::Error, format!("IOError: scratch state dir: {e}")),
    };
    let mut payload = payload;
    if let Some(obj) = payload.as_object_mut() {
        obj.insert("session_id".into(), "inline-test".into());
    }
    if let Some(state) = &test.input.state {
        let store = capt_hook_state::SessionStore::for_session(scratch.path(), Some("inline-test"));
        for (key, value) in state {
            if let Err(e) = store.slot_named::<Value>(key).set(value) {
                return outcome(Status::Error, format!("StateError: {e}"));
            }
        }
    }
    let context = EventContext {
        project_root: root.map(Path::to_path_buf),
        skip_permissions: test.input.skip_permissions,
        state_root: Some(scratch.path().to_path_buf()),
        origin_pid: None,
        request_env: None,
    };
    let evt = match Event::new(event, payload, context) {
        Ok(e) => e,
        Err(e) => return outcome(Status::Error, format!("EventError: {e}")),
    };
    let evt = match &test.input.transcript {
        Some(lines) => evt.with_transcript(capt_hook_core::history::transcript_from_values(lines)),
        None => evt.with_transcript(capt_hook_transcript::Transcript::empty()),
    };
    let result = evaluate_alone(hook, &evt);
    match check(&hook.name, &test.expect, result.as_ref()) {
        Ok(()) => outcome(Status::Pass, String::new()),
        Err(CheckError::Fail(m)) => outcome(Status::Fail, m),
        Err(CheckError::Error(m)) => outcome(Status::Error, m),
    }
}

enum CheckError {
    Fail(String),
    Error(String),
}

fn search(pattern: &str, text: &str) -> Result<bool, CheckError> {
    Pattern::new(pattern, Mode::Plain)
        .map(|p| p.is_match(text))
        .map_err(|e| CheckError::Error(format!("PatternError: {e}")))
}

fn check(name: &str, expect: &Expect, r: Option<&HookResult>) -> Result<(), CheckError> {
    let fail = |m: String| Err(CheckError::Fail(format!("[{name}] {m}")));
    let got = describe(r);
    match (&expect.verdict, r) {
        (Verdict::Allow { explicit: false }, None) => {}
        (Verdict::Allow { .. }, Some(r)) if r.action == Action::Allow => {}
        (Verdict::Allow { .. }, _) => return fail(format!("Expected Allow, got {got}")),
        (Verdict::Ask, None) => {}
        (Verdict::Ask, _) => return fail(format!("Expected Ask, got {got}")),
        (Verdict::Block, Some(r)) | (Verdict::Warn, Some(r))
            if r.action
                == if expect.verdict == Verdict::Block {
                    Action::Block
                } else {
                    Action::Warn
                } =>
        {
            if let Some(p) = &expect.pattern {
                let msg = r.message.clone().unwrap_or_default();
                if !search(p, &msg)? {
                    let label = if r.action == Action::Block {
                        "Block"
                    } else {
                        "Warn"
                    };
                    return fail(format!(
                        "{label} message {} doesn't match {}",
                        py_str(&msg),
                        py_str(p)
                    ));
                }
            }
        }
        (Verdict::Block, _) => return fail(format!("Expected Block, got {got}")),
        (Verdict::Warn, _) => return fail(format!("Expected Warn, got {got}")),
        (Verdict::Rewrite, Some(r)) if r.action == Action::Rewrite => {
            let input = r.updated_input.clone().unwrap_or_default();
            if let Some(p) = &expect.pattern {
                let cmd = input
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !cmd.contains(p.as_str()) {
                    return fail(format!(
                        "Rewrite command {} doesn't contain {}",
                        py_str(cmd),
                        py_str(p)
                    ));
                }
            }
            for (key, needle) in &expect.fields {
                let text = match input.get(key) {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                if !text.contains(needle.as_str()) {
                    return fail(format!(
                        "Rewrite field {key} {} doesn't contain {}",
                        py_str(&text),
                        py_str(needle)
                    ));
                }
            }
        }
        (Verdict::Rewrite, _) => return fail(format!("Expected Rewrite, got {got}")),
    }
    if let Some(p) = &expect.system_message {
        let notice = r.and_then(|r| r.system_message.clone()).unwrap_or_default();
        if !search(p, &notice)? {
            return fail(format!(
                "System message {} doesn't match {}",
                py_str(&notice),
                py_str(p)
            ));
        }
    }
    Ok(())
}

/// The human report: one line per test, a blank line, then the totals.
pub fn human_report(outcomes: &[TestOutcome]) -> String {
    if outcomes.is_empty() {
        return "No inline tests found.\n".to_owned();
    }
    let mut out = String::new();
    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    for o in outcomes {
        let _ = match o.status {
            Status::Pass => writeln!(out, "  PASS  {}", o.id),
            Status::Fail => writeln!(out, "  FAIL  {}: {}", o.id, o.reason),
            Status::Error => writeln!(out, "  ERROR {}: {}", o.id, o.reason),
            Status::Skip => writeln!(out, "  SKIP  {}: {}", o.id, o.reason),
        };
    }
    let _ = writeln!(
        out,
        "\n{} tests: {} passed, {} failed, {} errors, {} skipped",
        outcomes.len(),
        count(Status::Pass),
        count(Status::Fail),
        count(Status::Error),
        count(Status::Skip)
    );
    out
}

/// The JSON report: one object per line.
pub fn json_report(outcomes: &[TestOutcome]) -> String {
    if outcomes.is_empty() {
        return format!(
            "{}\n",
            json!({"status": "empty", "reason": "no inline tests"})
        );
    }
    outcomes
        .iter()
        .map(|o| {
            format!(
                "{}\n",
                json!({"id": o.id, "status": o.status.name(), "expected": o.expected, "reason": o.reason})
            )
        })
        .collect()
}

/// True when every outcome passed or was skipped.
pub fn all_passed(outcomes: &[TestOutcome]) -> bool {
    outcomes
        .iter()
        .all(|o| matches!(o.status, Status::Pass | Status::Skip))
}

//! Typed payloads: one struct per event with the fields Claude Code (or our host) sends.
//!
//! Parsed on demand from the raw map an [`Event`](crate::Event) keeps, never on the PreToolUse
//! hot path. Every named field is optional: real payloads lack fields the docs list (older builds,
//! doc examples without `session_id`), and `null` reads as absent. Fields we do not name land in
//! `extra`, so nothing a newer Claude Code sends is lost when a payload is written back.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::events::EventKind;

/// Declares a struct whose named fields are all `Option` (absent and `null` read as `None`, and
/// `None` is not written back) and which keeps unknown fields in `extra`. `event` structs also
/// flatten [`Common`] in.
macro_rules! record {
    (@build $(#[$m:meta])* $name:ident [$($head:tt)*]
        $($(#[$fm:meta])* $field:ident : $ty:ty,)*) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        pub struct $name {
            $($head)*
            $(
                $(#[$fm])*
                #[doc = concat!("\n\nThe payload's `", stringify!($field), "` field.")]
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )*
            /// Fields this crate does not name, kept verbatim.
            #[serde(flatten)]
            pub extra: Map<String, Value>,
        }
    };
    ($(#[$m:meta])* event $name:ident { $($body:tt)* }) => {
        record!(@build $(#[$m])* $name [
            /// The fields every event may carry.
            #[serde(flatten)]
            pub common: Common,
        ] $($body)*);
    };
    ($(#[$m:meta])* $name:ident { $($body:tt)* }) => {
        record!(@build $(#[$m])* $name [] $($body)*);
    };
}

/// The fields every event may carry; none is sent on every event.
// Written out rather than through `record!`: a flattened struct with its own `extra` would
// swallow every unknown field a second time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Common {
    /// The session; missing only in hand-written payloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The session's JSONL transcript; it may lag the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// The working directory when the hook fires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `default`, `plan`, `acceptEdits`, `auto`, `dontAsk` or `bypassPermissions`; not on every event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// The event's name as sent; [`Payload::parse`] goes by the caller's kind, not this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_event_name: Option<String>,
    /// The user prompt being processed; absent before the first one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// Set inside a subagent, and on SubagentStart/SubagentStop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The agent's name (`Explore`, `plugin:name`), with `--agent` or inside a subagent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The turn's effort level, on tool-context events when the model supports effort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// A per-session scratch directory (newer builds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratchpad_dir: Option<String>,
}

record! {
    /// The `effort` object.
    Effort {
        /// `low`, `medium`, `high`, `xhigh` or `max`.
        level: String,
    }
}

record! {
    /// PreToolUse: a tool is about to run.
    event PreToolUsePayload {
        tool_name: String,
        tool_input: Value,
        tool_use_id: String,
    }
}

record! {
    /// PostToolUse: a tool ran successfully.
    event PostToolUsePayload {
        tool_name: String,
        tool_input: Value,
        /// The tool's structured output; its shape depends on the tool.
        tool_response: Value,
        tool_use_id: String,
        /// Run time without permission prompts and PreToolUse hooks (a `Number`, so an
        /// integer stays one when written back).
        duration_ms: serde_json::Number,
    }
}

record! {
    /// PostToolUseFailure: a tool started and failed.
    event PostToolUseFailurePayload {
        tool_name: String,
        tool_input: Value,
        tool_use_id: String,
        /// For Bash the first line is `Exit code N`.
        error: String,
        is_interrupt: bool,
        duration_ms: serde_json::Number,
    }
}

record! {
    /// PostToolBatch: every call of a parallel batch resolved.
    event PostToolBatchPayload {
        tool_calls: Vec<BatchToolCall>,
    }
}

record! {
    /// One call of a PostToolBatch.
    BatchToolCall {
        tool_name: String,
        tool_input: Value,
        tool_use_id: String,
        /// The serialized `tool_result` content the model sees, not PostToolUse's object.
        tool_response: Value,
    }
}

record! {
    /// PermissionRequest: a permission dialog is about to show (no `tool_use_id` in practice).
    event PermissionRequestPayload {
        tool_name: String,
        tool_input: Value,
        tool_use_id: String,
        /// The "always allow" updates the dialog offers; entries differ by `type`.
        permission_suggestions: Vec<Value>,
    }
}

record! {
    /// PermissionDenied: the auto-mode classifier denied a tool call.
    event PermissionDeniedPayload {
        tool_name: String,
        tool_input: Value,
        tool_use_id: String,
        reason: String,
    }
}

record! {
    /// UserPromptSubmit: the user submitted a prompt.
    event UserPromptSubmitPayload {
        prompt: String,
        session_title: String,
    }
}

record! {
    /// UserPromptExpansion: a typed slash command or MCP prompt is about to expand.
    event UserPromptExpansionPayload {
        /// `slash_command` or `mcp_prompt`.
        expansion_type: String,
        command_name: String,
        command_args: String,
        command_source: String,
        prompt: String,
    }
}

record! {
    /// MessageDisplay: a batch of assistant text is about to be shown.
    event MessageDisplayPayload {
        turn_id: String,
        message_id: String,
        /// Zero-based batch index within the message.
        index: u64,
        /// True on the message's last batch.
        #[serde(rename = "final")]
        is_final: bool,
        delta: String,
    }
}

record! {
    /// Stop: the main agent finished responding.
    event StopPayload {
        /// True when Claude Code is already continuing because a Stop hook blocked.
        stop_hook_active: bool,
        last_assistant_message: String,
        background_tasks: Vec<BackgroundTask>,
        session_crons: Vec<SessionCron>,
    }
}

record! {
    /// SubagentStop: a subagent finished (`agent_id`, `agent_type` are in [`Common`]).
    event SubagentStopPayload {
        stop_hook_active: bool,
        /// The subagent's own transcript.
        agent_transcript_path: String,
        last_assistant_message: String,
        background_tasks: Vec<BackgroundTask>,
        session_crons: Vec<SessionCron>,
    }
}

record! {
    /// One in-flight background task on Stop/SubagentStop.
    BackgroundTask {
        id: String,
        #[serde(rename = "type")]
        kind: String,
        status: String,
        description: String,
        command: String,
        agent_type: String,
        server: String,
        tool: String,
        name: String,
    }
}

record! {
    /// One scheduled session cron on Stop/SubagentStop.
    SessionCron {
        id: String,
        schedule: String,
        recurring: bool,
        prompt: String,
    }
}

record! {
    /// StopFailure: the turn ended with an API error.
    event StopFailurePayload {
        /// `rate_limit`, `overloaded`, … or `unknown`.
        error: String,
        error_details: String,
        /// The rendered API error text, not Claude's words.
        last_assistant_message: String,
    }
}

record! {
    /// SubagentStart: a subagent is starting (`agent_id`, `agent_type` are in [`Common`]).
    event SubagentStartPayload {}
}

record! {
    /// PreCompact: the conversation is about to be compacted.
    event PreCompactPayload {
        /// `manual` or `auto`.
        trigger: String,
        /// What the user passed to `/compact`; `null` on auto compaction.
        custom_instructions: String,
    }
}

record! {
    /// PostCompact: the conversation was compacted.
    event PostCompactPayload {
        trigger: String,
        compact_summary: String,
    }
}

record! {
    /// Notification: Claude Code shows a notification.
    event NotificationPayload {
        message: String,
        title: String,
        /// `permission_prompt`, `idle_prompt`, `auth_success`, `elicitation_dialog`, …
        notification_type: String,
    }
}

record! {
    /// SessionStart: a session starts or resumes.
    event SessionStartPayload {
        /// `startup`, `resume`, `clear`, `compact` or `fork`.
        source: String,
        model: String,
        session_title: String,
    }
}

record! {
    /// SessionEnd: the session ends.
    event SessionEndPayload {
        /// `clear`, `resume`, `logout`, `prompt_input_exit` or `other`.
        reason: String,
    }
}

record! {
    /// Setup: `--init` or `--maintenance` runs.
    event SetupPayload {
        /// `init` or `maintenance`.
        trigger: String,
    }
}

record! {
    /// TaskCreated and TaskCompleted: a task is created or marked complete.
    event TaskPayload {
        task_id: String,
        task_subject: String,
        task_description: String,
        teammate_name: String,
        /// Deprecated by Claude Code; still sent by some builds.
        team_name: String,
    }
}

/// TaskCreated's payload.
pub type TaskCreatedPayload = TaskPayload;
/// TaskCompleted's payload.
pub type TaskCompletedPayload = TaskPayload;

record! {
    /// TeammateIdle: an agent-team teammate is about to go idle.
    event TeammateIdlePayload {
        teammate_name: String,
        team_name: String,
    }
}

record! {
    /// ConfigChange: a settings, policy or skill file changed.
    event ConfigChangePayload {
        /// `user_settings`, `project_settings`, `local_settings`, `policy_settings` or `skills`.
        source: String,
        file_path: String,
    }
}

record! {
    /// InstructionsLoaded: a CLAUDE.md or rules file was loaded.
    event InstructionsLoadedPayload {
        file_path: String,
        /// `User`, `Project`, `Local` or `Managed`.
        memory_type: String,
        /// `session_start`, `nested_traversal`, `path_glob_match`, `include` or `compact`.
        load_reason: String,
        /// The file's `paths:` globs, on `path_glob_match` loads.
        globs: Vec<String>,
        trigger_file_path: String,
        parent_file_path: String,
    }
}

record! {
    /// CwdChanged: the working directory changed.
    event CwdChangedPayload {
        old_cwd: String,
        new_cwd: String,
    }
}

record! {
    /// FileChanged: a watched file changed on disk.
    event FileChangedPayload {
        file_path: String,
        /// `change`, `add` or `unlink`.
        event: String,
    }
}

record! {
    /// DirectoryAdded: a directory was added to the session.
    event DirectoryAddedPayload {
        directory: String,
        /// `slash_command` or `register_repo_root`.
        source: String,
    }
}

record! {
    /// WorktreeCreate: a worktree is being created.
    event WorktreeCreatePayload {
        /// The worktree's slug.
        name: String,
    }
}

record! {
    /// WorktreeRemove: a worktree is being removed.
    event WorktreeRemovePayload {
        worktree_path: String,
    }
}

record! {
    /// Elicitation: an MCP server asks the user for input.
    event ElicitationPayload {
        mcp_server_name: String,
        message: String,
        /// `form` or `url`.
        mode: String,
        url: String,
        elicitation_id: String,
        /// The JSON Schema of the requested form.
        requested_schema: Value,
    }
}

record! {
    /// ElicitationResult: the user answered an MCP elicitation.
    event ElicitationResultPayload {
        mcp_server_name: String,
        /// `accept`, `decline` or `cancel`.
        action: String,
        mode: String,
        elicitation_id: String,
        content: Value,
    }
}

/// Reads a field whose `null` means something (the default model), so it stays `Some(Null)`
/// instead of reading as absent.
fn null_kept<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

record! {
    /// PreModelSwitch (a switch of the session's model was requested) and PostModelSwitch (it
    /// changed): the same fields.
    event ModelSwitchPayload {
        /// The resolved model id before the switch.
        from_model: String,
        /// The resolved model id after it (what matchers test, `[1m]` tags aside).
        to_model: String,
        /// What was asked for: an alias (`opus`), a full id, or `null` for the default (kept
        /// as `Value::Null`, so it is written back as sent).
        #[serde(deserialize_with = "null_kept")]
        requested_model: Value,
        /// `command` (`/model`, the config row, fast mode), `picker` or `sdk`; on
        /// PostModelSwitch also `auto` (fallback) and `resume`.
        source: String,
        /// Prompt tokens the next request re-sends (0 before the first answer).
        context_tokens: serde_json::Number,
        /// Whether the current model's prompt cache is likely still warm.
        prompt_cache_warm: bool,
        /// `5m` or `1h`.
        cache_ttl: String,
        /// The estimated cost of caching the context again on `to_model`.
        estimated_cache_write_usd: serde_json::Number,
        /// `configured`, `catalog` or `default` (the model is unknown).
        pricing: String,
    }
}

/// PreModelSwitch's payload.
pub type PreModelSwitchPayload = ModelSwitchPayload;
/// PostModelSwitch's payload.
pub type PostModelSwitchPayload = ModelSwitchPayload;

record! {
    /// PreSkillShellCommand: a shell command of a skill or slash-command file is about to run.
    event PreSkillShellCommandPayload {
        /// `Bash` or `PowerShell`.
        tool_name: String,
        /// `{ "command": … }`, as it will run.
        tool_input: Value,
        /// Names this command only; no tool call in the transcript has it.
        tool_use_id: String,
        /// The skill or command whose text holds the command.
        command_name: String,
        /// Where that skill or command came from.
        command_source: String,
        /// `user`, `claude` (the Skill tool) or `other`.
        invoked_by: String,
    }
}

record! {
    /// ResourcePressure (from our host): a child process of the session is using a lot.
    event ResourcePressurePayload {
        /// `warn`, `judge` or `escalate`.
        stage: String,
        claude_pid: u32,
        claude_start_unix: i64,
        process: Box<PressuredProcess>,
        /// Which rates are sustained.
        metrics: PressureMetrics,
    }
}

record! {
    /// The process a ResourcePressure event is about.
    PressuredProcess {
        pid: u32,
        ppid: u32,
        pgid: u32,
        start_unix: i64,
        start_usec: u64,
        comm: String,
        argv: Vec<String>,
        cwd: String,
        runtime_s: f64,
        /// CPU use as a fraction of one core over the last sample (1.0 = one core busy).
        cpu_fraction: f64,
        /// Resident memory in KiB.
        rss_kib: u64,
        disk_bps: f64,
        /// Up to the Claude process, nearest first.
        ancestry: Vec<AncestorProcess>,
    }
}

record! {
    /// One ancestor of a pressured process.
    AncestorProcess {
        pid: u32,
        comm: String,
    }
}

record! {
    /// Which of a pressured process's rates are sustained.
    PressureMetrics {
        cpu: bool,
        /// Resident memory is over its threshold.
        rss: bool,
        disk: bool,
    }
}

impl StopPayload {
    /// True when Claude Code is already continuing because a Stop hook blocked.
    pub fn stop_hook_active(&self) -> bool {
        self.stop_hook_active.unwrap_or(false)
    }
}

impl SubagentStopPayload {
    /// True when the subagent is already continuing because a SubagentStop hook blocked.
    pub fn stop_hook_active(&self) -> bool {
        self.stop_hook_active.unwrap_or(false)
    }
}

/// A payload that does not have its event's shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{event} payload{}: {message}", at(path))]
pub struct PayloadError {
    /// The event the payload was read as.
    pub event: EventKind,
    /// Where in the payload, as `tool_calls[0].tool_name`; `.` for the payload itself.
    pub path: String,
    /// What was wrong there.
    pub message: String,
}

fn at(path: &str) -> String {
    if path == "." {
        String::new()
    } else {
        format!(", field `{path}`")
    }
}

/// Declares [`Payload`] from the event → struct table; `parse` matches on every [`EventKind`],
/// so an event added there without a payload here does not compile.
macro_rules! payloads {
    ($($kind:ident($ty:ty),)*) => {
        /// One event's typed payload.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(untagged)]
        pub enum Payload {
            $(
                #[doc = concat!("A ", stringify!($kind), " payload.")]
                $kind($ty),
            )*
        }

        impl Payload {
            /// Reads `map` as the payload of `kind`.
            pub fn parse(kind: EventKind, map: &Map<String, Value>) -> Result<Payload, PayloadError> {
                match kind {
                    $(EventKind::$kind => read(kind, map).map(Payload::$kind),)*
                }
            }

            /// The event this payload belongs to.
            pub fn kind(&self) -> EventKind {
                match self {
                    $(Payload::$kind(_) => EventKind::$kind,)*
                }
            }

            /// The fields every event may carry.
            pub fn common(&self) -> &Common {
                match self {
                    $(Payload::$kind(p) => &p.common,)*
                }
            }

            /// The fields the typed struct does not name.
            pub fn extra(&self) -> &Map<String, Value> {
                match self {
                    $(Payload::$kind(p) => &p.extra,)*
                }
            }
        }
    };
}

payloads! {
    PreToolUse(PreToolUsePayload),
    PostToolUse(PostToolUsePayload),
    PostToolUseFailure(PostToolUseFailurePayload),
    UserPromptSubmit(UserPromptSubmitPayload),
    Stop(StopPayload),
    SubagentStop(SubagentStopPayload),
    SubagentStart(SubagentStartPayload),
    PreCompact(PreCompactPayload),
    Notification(NotificationPayload),
    SessionStart(SessionStartPayload),
    SessionEnd(SessionEndPayload),
    PermissionRequest(PermissionRequestPayload),
    MessageDisplay(MessageDisplayPayload),
    PermissionDenied(PermissionDeniedPayload),
    PostToolBatch(PostToolBatchPayload),
    UserPromptExpansion(UserPromptExpansionPayload),
    StopFailure(StopFailurePayload),
    PostCompact(PostCompactPayload),
    Setup(SetupPayload),
    TaskCreated(TaskCreatedPayload),
    TaskCompleted(TaskCompletedPayload),
    TeammateIdle(TeammateIdlePayload),
    ConfigChange(ConfigChangePayload),
    InstructionsLoaded(InstructionsLoadedPayload),
    CwdChanged(CwdChangedPayload),
    FileChanged(FileChangedPayload),
    DirectoryAdded(DirectoryAddedPayload),
    WorktreeCreate(WorktreeCreatePayload),
    WorktreeRemove(WorktreeRemovePayload),
    Elicitation(ElicitationPayload),
    ElicitationResult(ElicitationResultPayload),
    PreModelSwitch(PreModelSwitchPayload),
    PostModelSwitch(PostModelSwitchPayload),
    PreSkillShellCommand(PreSkillShellCommandPayload),
    ResourcePressure(ResourcePressurePayload),
}

fn read<'de, T: Deserialize<'de>>(
    event: EventKind,
    map: &'de Map<String, Value>,
) -> Result<T, PayloadError> {
    serde_path_to_error::deserialize(map).map_err(|e| {
        // serde loses the path inside a flattened struct; reading `Common` alone recovers it.
        let e = match e.path().iter().next() {
            None => match serde_path_to_error::deserialize::<_, Common>(map) {
                Err(common) => common,
                Ok(_) => e,
            },
            Some(_) => e,
        };
        PayloadError {
            event,
            path: e.path().to_string(),
            message: e.into_inner().to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventSet;
    use serde_json::json;
    use std::path::{Path, PathBuf};

    /// The repository's copy of the external spec files (`tests/fixtures/`); its absence fails
    /// the test rather than skipping it, so a broken checkout cannot pass silently.
    fn fixtures() -> PathBuf {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        assert!(
            dir.join("reference").is_dir(),
            "the reference payloads are read from {}, which is missing",
            dir.display()
        );
        dir
    }

    fn json_files(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        let mut files: Vec<PathBuf> = entries
            .map(|e| e.expect("directory entry").path())
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.ends_with(".json") && keep(name)
            })
            .collect();
        files.sort();
        files
    }

    fn object(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            other => panic!("expected an object, got {other}"),
        }
    }

    /// Fields a reference file carries that no documented input lists: kept in `extra`.
    const UNDOCUMENTED: &[(&str, &[&str])] = &[(
        "SessionStart.resume.json",
        &[
            "seconds_since_last_response",
            "context_tokens",
            "prompt_cache_likely_expired",
            "estimated_cache_write_usd",
        ],
    )];

    /// Events in the reference payloads that Claude Code's hooks reference does not list (yet).
    const NOT_OURS: &[&str] = &[];

    #[test]
    fn every_reference_input_parses_into_its_struct_and_writes_back_unchanged() {
        let reference = fixtures().join("reference");
        let mut files = json_files(&reference.join("claude-code/payloads"), |n| {
            n.contains(".input.")
        });
        let loose = reference.join("payloads");
        files.extend(json_files(&loose, |_| true));
        files.extend(json_files(&loose.join("variants"), |_| true));
        assert!(
            files.len() >= 60,
            "only {} payload files found",
            files.len()
        );

        let mut seen = EventSet::EMPTY;
        for file in &files {
            let name = file.file_name().unwrap().to_str().unwrap();
            let text = std::fs::read_to_string(file).unwrap();
            let value: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not JSON: {e}", file.display()));
            let map = object(value);
            let sent = map.get("hook_event_name").and_then(Value::as_str);
            let prefix = name.split('.').next().unwrap();
            // `Hook-input-and-output.input.1.json` is named after its section, not its event.
            let named = prefix.parse::<EventKind>().ok();
            if let (Some(named), Some(sent)) = (named, sent) {
                assert_eq!(
                    named.name(),
                    sent,
                    "{name}: file name and hook_event_name differ"
                );
            }
            let Some(kind) = named.or_else(|| sent.and_then(|s| s.parse().ok())) else {
                let event = sent.unwrap_or(prefix);
                assert!(NOT_OURS.contains(&event), "{name}: unknown event {event:?}");
                continue;
            };
            seen = seen.with(kind);

            let payload = Payload::parse(kind, &map).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(payload.kind(), kind, "{name}");
            assert_eq!(
                serde_json::to_value(&payload).unwrap(),
                Value::Object(map.clone()),
                "{name}: writing the payload back changed it"
            );
            let allowed = UNDOCUMENTED
                .iter()
                .find(|(file, _)| *file == name)
                .map_or(&[][..], |(_, keys)| keys);
            let untyped: Vec<&String> = payload
                .extra()
                .keys()
                .filter(|k| !allowed.contains(&k.as_str()))
                .collect();
            assert!(
                untyped.is_empty(),
                "{name}: documented fields left untyped: {untyped:?}"
            );
            if let Some(&(_, keys)) = UNDOCUMENTED.iter().find(|(file, _)| *file == name) {
                assert_eq!(
                    payload.extra().len(),
                    keys.len(),
                    "{name}: {:?}",
                    payload.extra()
                );
            }
        }
        let missing: Vec<EventKind> = EventKind::ALL
            .into_iter()
            .filter(|k| *k != EventKind::ResourcePressure && !seen.contains(*k))
            .collect();
        assert!(missing.is_empty(), "no reference payload for {missing:?}");
    }

    #[test]
    fn typed_fields_hold_the_values_sent() {
        let stop = object(json!({
            "session_id": "s", "hook_event_name": "Stop", "effort": {"level": "high"},
            "stop_hook_active": true,
            "background_tasks": [{"id": "b1", "type": "shell", "status": "running",
                                  "description": "dev", "command": "npm run dev"}],
            "session_crons": [{"id": "c1", "schedule": "* * * * *", "recurring": false,
                               "prompt": "p"}]
        }));
        let Payload::Stop(p) = Payload::parse(EventKind::Stop, &stop).unwrap() else {
            panic!("not a Stop payload");
        };
        assert!(p.stop_hook_active());
        assert_eq!(p.common.session_id.as_deref(), Some("s"));
        assert_eq!(p.common.effort.unwrap().level.as_deref(), Some("high"));
        let task = &p.background_tasks.as_ref().unwrap()[0];
        assert_eq!(task.kind.as_deref(), Some("shell"));
        assert_eq!(task.command.as_deref(), Some("npm run dev"));
        assert_eq!(p.session_crons.unwrap()[0].recurring, Some(false));

        let batch = object(json!({"tool_calls": [
            {"tool_name": "Read", "tool_input": {"file_path": "/a"}, "tool_use_id": "t1",
             "tool_response": "1\tx"}
        ]}));
        let Payload::PostToolBatch(b) = Payload::parse(EventKind::PostToolBatch, &batch).unwrap()
        else {
            panic!("not a PostToolBatch payload");
        };
        let call = &b.tool_calls.unwrap()[0];
        assert_eq!(call.tool_name.as_deref(), Some("Read"));
        assert_eq!(call.tool_input, Some(json!({"file_path": "/a"})));

        let shown = object(json!({"index": 3, "final": true, "delta": "x\n"}));
        let Payload::MessageDisplay(m) = Payload::parse(EventKind::MessageDisplay, &shown).unwrap()
        else {
            panic!("not a MessageDisplay payload");
        };
        assert_eq!((m.index, m.is_final), (Some(3), Some(true)));
    }

    #[test]
    fn missing_and_null_fields_are_tolerated() {
        for kind in EventKind::ALL {
            let empty = Payload::parse(kind, &Map::new())
                .unwrap_or_else(|e| panic!("{kind} rejects an empty payload: {e}"));
            assert_eq!(empty.kind(), kind);
            assert_eq!(serde_json::to_value(&empty).unwrap(), json!({}), "{kind}");
        }
        // Shapes real payloads have that the docs do not show.
        let cases = [
            (
                EventKind::Stop,
                json!({"session_id": "s", "stop_hook_active": false}),
            ),
            (
                EventKind::SubagentStop,
                json!({"agent_id": "a", "background_tasks": null}),
            ),
            (
                EventKind::PreCompact,
                json!({"trigger": "auto", "custom_instructions": null}),
            ),
            (
                EventKind::PermissionRequest,
                json!({"tool_name": "Bash", "tool_input": {"command": "ls"},
                       "permission_suggestions": [
                           {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
                           {"type": "addDirectories", "directories": ["/x"],
                            "destination": "session"}]}),
            ),
            (
                EventKind::Notification,
                json!({"message": "m", "notification_type": "idle_prompt"}),
            ),
            (
                EventKind::PreToolUse,
                json!({"tool_name": "Write", "tool_input": {}}),
            ),
            (
                EventKind::PostToolUse,
                json!({"tool_name": "Bash", "duration_ms": 12.5}),
            ),
        ];
        for (kind, payload) in cases {
            let map = object(payload);
            let parsed = Payload::parse(kind, &map).unwrap_or_else(|e| panic!("{kind}: {e}"));
            let nulls_dropped: Map<String, Value> =
                map.into_iter().filter(|(_, v)| !v.is_null()).collect();
            assert_eq!(
                serde_json::to_value(&parsed).unwrap(),
                Value::Object(nulls_dropped)
            );
        }
        let Payload::PreCompact(p) = Payload::parse(
            EventKind::PreCompact,
            &object(json!({"custom_instructions": null})),
        )
        .unwrap() else {
            panic!("not a PreCompact payload");
        };
        assert_eq!(p.custom_instructions, None);
    }

    #[test]
    fn unknown_fields_are_kept_at_every_level() {
        let sent = json!({
            "session_id": "s", "future_top": {"a": 1},
            "effort": {"level": "max", "budget": 3},
            "stop_hook_active": false,
            "background_tasks": [{"id": "b", "progress": 0.5}],
            "session_crons": [{"id": "c", "next_run": "soon"}]
        });
        let parsed = Payload::parse(EventKind::SubagentStop, &object(sent.clone())).unwrap();
        assert_eq!(parsed.extra().get("future_top"), Some(&json!({"a": 1})));
        assert_eq!(
            parsed.common().effort.as_ref().unwrap().extra["budget"],
            json!(3)
        );
        assert!(
            !parsed.extra().contains_key("session_id"),
            "common fields are not extra"
        );
        assert_eq!(serde_json::to_value(&parsed).unwrap(), sent);

        let batch = json!({"tool_calls": [{"tool_name": "Read", "is_error": true}], "n": 1});
        let parsed = Payload::parse(EventKind::PostToolBatch, &object(batch.clone())).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), batch);
    }

    #[test]
    fn a_mistyped_field_is_named_with_its_event_and_path() {
        let cases = [
            (
                EventKind::PostToolBatch,
                json!({"tool_calls": [{"tool_name": "Read"}, {"tool_name": 5}]}),
                "PostToolBatch payload, field `tool_calls[1].tool_name`: invalid type: integer `5`",
            ),
            (
                EventKind::Stop,
                json!({"stop_hook_active": "yes"}),
                "Stop payload, field `stop_hook_active`: invalid type: string \"yes\"",
            ),
            (
                EventKind::ResourcePressure,
                json!({"process": {"pid": -1}}),
                "ResourcePressure payload, field `process.pid`: invalid value: integer `-1`",
            ),
        ];
        for (kind, payload, expected) in cases {
            let err = Payload::parse(kind, &object(payload)).unwrap_err();
            assert_eq!(err.event, kind);
            let text = err.to_string();
            assert!(text.starts_with(expected), "{text}");
        }
        // Common fields are flattened in, where serde loses the path; it is found all the same.
        for (payload, expected) in [
            (
                json!({"cwd": 5}),
                "PreToolUse payload, field `cwd`: invalid type: integer `5`",
            ),
            (
                json!({"effort": {"level": 3}}),
                "PreToolUse payload, field `effort.level`: invalid type: integer `3`",
            ),
        ] {
            let err = Payload::parse(EventKind::PreToolUse, &object(payload)).unwrap_err();
            assert!(err.to_string().starts_with(expected), "{err}");
        }
    }
}

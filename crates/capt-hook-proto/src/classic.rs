//! What crosses between our plugin's hooks module (a "mod" Claude Code runs inside itself) and
//! the host's HTTP socket: the event the mod posts, and the answer in the shape the mod hands
//! back to Claude Code (its `ClassicResult`, or `classic.PreToolUse`'s allow/ask/deny result).
//!
//! The worker fills [`ClassicAnswer`] from the same typed output it renders the envelope from
//! (`capt_hook_core::envelope::classic`); the mod only copies `result` out. Whatever a mod
//! cannot say (a `systemMessage`, raw stdout, a field the event reads only from a command hook)
//! is listed in `unsaid`: then the mod passes the event on to our command hook, which gets the
//! same answer from the host without the hooks running again.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Decision;

/// The HTTP path the mod posts events to.
pub const EVENT_PATH: &str = "/v1/event";

/// An answer to one event as a mod returns it to Claude Code. Field names are Claude Code's
/// (`ClassicResult` and `PreToolUseResult` in its mod API); every field is optional and left
/// out when unset, so the serialized object is exactly what the mod returns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClassicResult {
    /// PreToolUse: run the call without a permission prompt (always `true` when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<bool>,
    /// PreToolUse: ask the user, with this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<String>,
    /// PreToolUse: refuse the call; the model reads this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny: Option<String>,
    /// PreToolUse: the tool's arguments replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Map<String, Value>>,
    /// Every other event: its block, veto or re-prompt, with this reason (a command hook's
    /// `decision: "block"` or exit 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
    /// `continue: false` (always `true` when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prevent_continuation: Option<bool>,
    /// Shown when `prevent_continuation` stops the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Text for the model with the event.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_context: Vec<String>,
    /// UserPromptSubmit, SessionStart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_title: Option<String>,
    /// UserPromptSubmit, UserPromptExpansion (always `true` when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppress_original_prompt: Option<bool>,
    /// SessionStart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_user_message: Option<String>,
    /// SessionStart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_paths: Option<Value>,
    /// SessionStart (always `true` when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reload_skills: Option<bool>,
    /// PreModelSwitch: `allow`, `ask` or `deny`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_decision: Option<String>,
    /// PreModelSwitch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_decision_reason: Option<String>,
    /// PermissionRequest: `{behavior: "allow" | "deny", …}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Value>,
    /// PostToolUse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_tool_output: Option<Value>,
    /// PostToolUse, MCP tools.
    #[serde(
        default,
        rename = "updatedMCPToolOutput",
        skip_serializing_if = "Option::is_none"
    )]
    pub updated_mcp_tool_output: Option<Value>,
    /// PermissionDenied (always `true` when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<bool>,
    /// MessageDisplay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_content: Option<Value>,
    /// WorktreeCreate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_path: Option<String>,
}

/// An answer as a mod can apply it: the result, and what of the answer it cannot say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassicAnswer {
    /// What the mod returns.
    pub result: ClassicResult,
    /// Parts of the answer no mod result carries (`systemMessage`, `stdout text`, a field the
    /// event reads only from a command hook): when any, the command hook must answer instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsaid: Vec<String>,
}

/// The body the mod posts to [`EVENT_PATH`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModRequest {
    /// The classic event's name (`PreToolUse`, `Stop`, …).
    pub event: String,
    /// The event's input as the mod received it: the command hook's stdin object, except on
    /// PreToolUse, where it is Claude Code's tool-call envelope (`tool`, `tool_use_id` and the
    /// tool's arguments beside them).
    pub input: Value,
    /// PreToolUse only: the session fields the envelope lacks (`session_id`, `transcript_path`,
    /// `cwd`, `permission_mode`), as the mod last saw them on another event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<Map<String, Value>>,
    /// The request-scoped environment a command hook would have (see
    /// [`crate::is_request_env`]); `hook mod-init` prints it for the mod.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// Why a [`ModRequest`] cannot become an event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModRequestError {
    /// `input` is not a JSON object.
    NotAnObject,
    /// A PreToolUse envelope without a string field it needs.
    Envelope(&'static str),
}

impl std::fmt::Display for ModRequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModRequestError::NotAnObject => f.write_str("input must be a JSON object"),
            ModRequestError::Envelope(field) => write!(
                f,
                "the PreToolUse envelope in input needs a string field `{field}`"
            ),
        }
    }
}

impl std::error::Error for ModRequestError {}

impl ModRequest {
    /// The payload a command hook would read on stdin for this event. PreToolUse's envelope is
    /// unfolded: `tool` becomes `tool_name`, the arguments `tool_input`, and the session fields
    /// come from `base`; every other event's input is that payload already.
    pub fn payload(&self) -> Result<Map<String, Value>, ModRequestError> {
        let Value::Object(input) = &self.input else {
            return Err(ModRequestError::NotAnObject);
        };
        if self.event != "PreToolUse" || input.contains_key("hook_event_name") {
            return Ok(input.clone());
        }
        let text = |field: &'static str| match input.get(field) {
            Some(Value::String(s)) => Ok(s.clone()),
            _ => Err(ModRequestError::Envelope(field)),
        };
        let tool = text("tool")?;
        let id = text("tool_use_id")?;
        let mut payload = self.base.clone().unwrap_or_default();
        payload.insert("hook_event_name".into(), "PreToolUse".into());
        payload.insert("tool_name".into(), tool.into());
        // The tool's own arguments, without the keys the envelope adds around them.
        let args: Map<String, Value> = input
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "tool" | "tool_use_id" | "agentId"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        payload.insert("tool_input".into(), Value::Object(args));
        payload.insert("tool_use_id".into(), id.into());
        if let Some(agent) = input.get("agentId").filter(|a| a.is_string()) {
            payload.insert("agent_id".into(), agent.clone());
        }
        Ok(payload)
    }
}

/// The host's answer to a [`ModRequest`] (HTTP 200).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModReply {
    /// The decision the answer gives a guarded call, typed.
    pub decision: Decision,
    /// What the mod returns, when it returns the answer itself.
    pub result: ClassicResult,
    /// The mod must pass the event on (`next(e)`): the answer holds what no mod result can
    /// say (`unsaid`), and our command hook gets it from the host, which remembers it, so the
    /// hooks do not run twice.
    pub pass: bool,
    /// What made `pass` true.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsaid: Vec<String>,
    /// The envelope the command path prints for this answer.
    pub stdout: String,
    /// The command path's exit code (2: a blocking verdict on stderr).
    pub exit: i32,
    /// The command path's stderr.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
}

/// The error body of any non-200 reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModError {
    /// A sentence saying what went wrong.
    pub error: String,
}

/// The mod's answer for a guarded call the host could not check (the client's
/// [`crate::failure::last_resort`], as a mod result): PreToolUse asks the user, a skill's
/// command is refused, and PermissionRequest leaves its dialog up, its reason being a notice
/// only a command hook can show.
pub fn last_resort(event: &str, reason: &str) -> Option<ClassicAnswer> {
    let mut answer = ClassicAnswer::default();
    match event {
        "PreToolUse" => answer.result.ask = Some(reason.to_owned()),
        "PreSkillShellCommand" => {
            answer.result.block = Some(format!("{reason} ({})", crate::failure::CANNOT_ASK));
        }
        "PermissionRequest" => answer.unsaid.push("systemMessage".into()),
        _ => return None,
    }
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(event: &str, input: Value) -> ModRequest {
        ModRequest {
            event: event.into(),
            input,
            base: None,
            env: BTreeMap::new(),
        }
    }

    #[test]
    fn a_pre_tool_use_envelope_unfolds_into_the_stdin_payload() {
        let mut r = request(
            "PreToolUse",
            json!({"tool": "Bash", "tool_use_id": "toolu_1", "command": "ls", "agentId": "a7"}),
        );
        r.base = Some(
            json!({"session_id": "s", "cwd": "/p", "permission_mode": "default"})
                .as_object()
                .unwrap()
                .clone(),
        );
        let p = Value::Object(r.payload().unwrap());
        assert_eq!(p["hook_event_name"], "PreToolUse");
        assert_eq!(p["tool_name"], "Bash");
        assert_eq!(p["tool_input"], json!({"command": "ls"}));
        assert_eq!(p["tool_use_id"], "toolu_1");
        assert_eq!(p["agent_id"], "a7");
        assert_eq!(p["session_id"], "s");
        assert_eq!(p["permission_mode"], "default");
    }

    #[test]
    fn other_events_and_bad_envelopes() {
        let stop = json!({"hook_event_name": "Stop", "session_id": "s"});
        let r = request("Stop", stop.clone());
        assert_eq!(Value::Object(r.payload().unwrap()), stop);
        let bad = request("PreToolUse", json!({"tool": "Bash"}));
        assert_eq!(
            bad.payload().unwrap_err(),
            ModRequestError::Envelope("tool_use_id")
        );
        assert!(
            bad.payload()
                .unwrap_err()
                .to_string()
                .contains("tool_use_id")
        );
        assert_eq!(
            request("Stop", json!([1])).payload().unwrap_err(),
            ModRequestError::NotAnObject
        );
    }

    #[test]
    fn results_serialize_with_claude_codes_names_and_nothing_unset() {
        let r = ClassicResult {
            allow: Some(true),
            updated_input: Some(Map::new()),
            additional_context: vec!["c".into()],
            updated_mcp_tool_output: Some(json!(1)),
            ..ClassicResult::default()
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"allow": true, "updatedInput": {}, "additionalContext": ["c"],
                   "updatedMCPToolOutput": 1})
        );
        assert_eq!(
            serde_json::to_value(ClassicResult::default()).unwrap(),
            json!({})
        );
    }

    #[test]
    fn the_last_resort_fails_closed_on_every_guarded_event() {
        assert_eq!(
            last_resort("PreToolUse", "r")
                .unwrap()
                .result
                .ask
                .as_deref(),
            Some("r")
        );
        let skill = last_resort("PreSkillShellCommand", "r").unwrap();
        assert!(skill.result.block.unwrap().starts_with("r ("));
        assert_eq!(
            last_resort("PermissionRequest", "r").unwrap().unsaid,
            ["systemMessage"]
        );
        assert_eq!(last_resort("Stop", "r"), None);
        for e in crate::failure::GUARDED_EVENTS {
            assert!(last_resort(e, "r").is_some(), "{e}");
        }
    }
}

//! Background work a session launched, kept in its state so hooks see it after the turn that
//! launched it (the `waiting` condition reads it). The `track_background` kind writes it; this
//! module owns its shape and what counts as still running.
//!
//! A record is a Bash or Agent call that ran in the background (`run_in_background`, or an
//! Agent result Claude Code marks `isAsync`). It counts until the transcript delivers the
//! call's completion notification, or a Stop or SubagentStop payload's `background_tasks` no
//! longer lists its task: that list is Claude Code's own and replaces the records.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::Event;
use crate::tool::canonical_tool;

/// The state slot's name: one file per session, `<session>/spawns.json`.
const SLOT: &str = "spawns";
/// Records kept at most; the oldest go first (a session launching more is not waiting on its
/// first hundreds).
const MAX_RECORDS: usize = 64;

/// One background launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spawn {
    /// The launching call's tool-use id (its completion notification names it).
    pub tool_use_id: String,
    /// `Bash` or `Agent`.
    pub tool: String,
    /// Claude Code's id for the task (`backgroundTaskId`, `agentId`), when the result gave one.
    #[serde(default)]
    pub task_id: Option<String>,
    /// The command, or the agent's description.
    #[serde(default)]
    pub what: String,
    /// The agent context that launched it (`None`: the main agent).
    #[serde(default)]
    pub agent_id: Option<String>,
}

/// The session's records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spawns {
    /// Launches, oldest first.
    pub launches: Vec<Spawn>,
}

fn flag(input: &serde_json::Map<String, Value>, key: &str) -> bool {
    match input.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The launch a PostToolUse reports, when its call ran in the background.
pub fn launch_of(evt: &Event) -> Option<Spawn> {
    let tool = canonical_tool(evt.tool_name()?);
    if tool != "Bash" && tool != "Agent" {
        return None;
    }
    let input = evt.tool_input()?;
    let response = evt.tool_response();
    let field = |key: &str| response.and_then(|r| r.get(key));
    let is_async = field("isAsync") == Some(&Value::Bool(true));
    if !flag(input, "run_in_background") && !is_async {
        return None;
    }
    let tool_use_id = text(evt.payload().get("tool_use_id"))?;
    let task_id = text(field("backgroundTaskId"))
        .or_else(|| text(field("agentId")))
        .or_else(|| text(field("taskId")));
    let what = text(input.get("command"))
        .or_else(|| text(input.get("description")))
        .unwrap_or_default();
    Some(Spawn {
        tool_use_id,
        tool: tool.to_owned(),
        task_id,
        what,
        agent_id: evt.agent_id().map(str::to_owned),
    })
}

/// The session's records as stored (empty without a session).
pub fn load(evt: &Event) -> Spawns {
    evt.store().slot_named::<Spawns>(SLOT).load()
}

/// Records what `evt` reports: a background launch (PostToolUse), or, on a Stop or SubagentStop
/// whose payload lists `background_tasks`, drops the records whose task that list no longer
/// holds (tasks Claude Code does not list have ended). Returns whether anything changed.
pub fn record(evt: &Event) -> Result<bool, capt_hook_state::StateError> {
    let slot = evt.store().slot_named::<Spawns>(SLOT);
    if let Some(spawn) = launch_of(evt) {
        return slot.mutate(|s| {
            if s.launches
                .iter()
                .any(|l| l.tool_use_id == spawn.tool_use_id)
            {
                return false;
            }
            s.launches.push(spawn);
            let over = s.launches.len().saturating_sub(MAX_RECORDS);
            s.launches.drain(..over);
            true
        });
    }
    let Some(listed) = evt
        .payload()
        .get("background_tasks")
        .and_then(Value::as_array)
    else {
        return Ok(false);
    };
    let running: Vec<&str> = listed
        .iter()
        .filter(|t| t.get("status").and_then(Value::as_str) != Some("completed"))
        .filter_map(|t| t.get("id").and_then(Value::as_str))
        .collect();
    slot.mutate(|s| {
        let before = s.launches.len();
        s.launches
            .retain(|l| l.task_id.as_deref().is_some_and(|id| running.contains(&id)));
        s.launches.len() != before
    })
}

/// The records of `evt`'s agent context whose completion the transcript has not delivered.
pub fn running(evt: &Event) -> Vec<Spawn> {
    let spawns = load(evt);
    if spawns.launches.is_empty() {
        return Vec::new();
    }
    let notes = evt.transcript().notifications();
    spawns
        .launches
        .into_iter()
        .filter(|l| l.agent_id.as_deref() == evt.agent_id())
        .filter(|l| !notes.completed(&l.tool_use_id))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::{Value, json};

    use super::*;
    use crate::EventContext;
    use crate::condition::is_waiting;
    use crate::events::EventKind;

    fn evt(root: &Path, kind: EventKind, mut payload: Value) -> Event {
        let obj = payload.as_object_mut().unwrap();
        obj.insert("session_id".into(), "s1".into());
        let ctx = EventContext {
            project_root: Some(root.to_path_buf()),
            skip_permissions: Some(false),
            state_root: Some(root.join("state")),
            ..EventContext::default()
        };
        Event::new(kind, payload, ctx).unwrap()
    }

    fn transcript(root: &Path, lines: &[Value]) -> String {
        let path = root.join("t.jsonl");
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(&path, text.join("\n")).unwrap();
        path.display().to_string()
    }

    fn launch(root: &Path, tool: &str, input: Value, response: Value) -> Event {
        evt(
            root,
            EventKind::PostToolUse,
            json!({"tool_name": tool, "tool_input": input, "tool_response": response,
                   "tool_use_id": "bg1"}),
        )
    }

    fn later_turn(root: &Path, extra: Value) -> Event {
        let lines = [
            json!({"type": "user", "message": {"role": "user", "content": "start the server"}}),
            json!({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": "bg1", "name": "Bash",
                 "input": {"command": "npm run dev", "run_in_background": true}}]}}),
            json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "bg1", "content": "running in background"}]}}),
            json!({"type": "user", "message": {"role": "user", "content": "now fix the header"}}),
            extra,
        ];
        let lines: Vec<Value> = lines.into_iter().filter(|l| !l.is_null()).collect();
        let path = transcript(root, &lines);
        evt(
            root,
            EventKind::PreToolUse,
            json!({"tool_name": "Edit", "tool_input": {"file_path": "/p/a.rs"},
                   "transcript_path": path}),
        )
    }

    #[test]
    fn a_background_bash_keeps_the_session_waiting_after_its_turn() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // Without the record, the transcript alone sees the launch only in its own turn.
        assert!(!is_waiting(&later_turn(root, Value::Null)));
        let post = launch(
            root,
            "Bash",
            json!({"command": "npm run dev", "run_in_background": true}),
            json!({"backgroundTaskId": "b1"}),
        );
        assert!(record(&post).unwrap());
        // Recorded once, however often the event is seen.
        assert!(!record(&post).unwrap());
        let spawns = load(&post);
        assert_eq!(spawns.launches.len(), 1);
        assert_eq!(spawns.launches[0].task_id.as_deref(), Some("b1"));
        assert_eq!(spawns.launches[0].what, "npm run dev");
        assert!(is_waiting(&later_turn(root, Value::Null)));
        // A delivered completion notification ends it.
        let note = json!({"type": "user", "message": {"role": "user", "content":
            "<task-notification><tool-use-id>bg1</tool-use-id></task-notification>"}});
        assert!(!is_waiting(&later_turn(root, note)));
    }

    #[test]
    fn foreground_calls_and_other_tools_are_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let fg = launch(root, "Bash", json!({"command": "ls"}), json!({}));
        assert_eq!(launch_of(&fg), None);
        let read = launch(root, "Read", json!({"run_in_background": true}), json!({}));
        assert_eq!(launch_of(&read), None);
        let agent = launch(
            root,
            "Task",
            json!({"description": "survey", "prompt": "p"}),
            json!({"isAsync": true, "agentId": "a1"}),
        );
        let spawn = launch_of(&agent).unwrap();
        assert_eq!(
            (spawn.tool.as_str(), spawn.task_id.as_deref()),
            ("Agent", Some("a1"))
        );
        assert_eq!(spawn.what, "survey");
    }

    #[test]
    fn a_stop_listing_the_tasks_prunes_the_ended_ones_and_replaces_the_records() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let post = launch(
            root,
            "Bash",
            json!({"command": "npm run dev", "run_in_background": true}),
            json!({"backgroundTaskId": "b1"}),
        );
        record(&post).unwrap();
        let still = evt(
            root,
            EventKind::Stop,
            json!({"background_tasks": [{"id": "b1", "status": "running"}]}),
        );
        assert!(!record(&still).unwrap());
        assert_eq!(load(&still).launches.len(), 1);
        // The payload's list is Claude Code's answer: an empty one is not waiting.
        let ended = evt(root, EventKind::Stop, json!({"background_tasks": []}));
        assert!(!is_waiting(&ended));
        assert!(record(&ended).unwrap());
        assert!(load(&ended).launches.is_empty());
    }

    #[test]
    fn a_subagents_launch_is_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut post = json!({"tool_name": "Bash", "tool_use_id": "bg2", "agent_id": "sub1",
            "tool_input": {"command": "make watch", "run_in_background": true}});
        post["tool_response"] = json!({"backgroundTaskId": "b2"});
        record(&evt(root, EventKind::PostToolUse, post)).unwrap();
        let main = evt(root, EventKind::PreToolUse, json!({"tool_name": "Read"}));
        assert!(running(&main).is_empty());
        let sub = evt(
            root,
            EventKind::PreToolUse,
            json!({"tool_name": "Read", "agent_id": "sub1"}),
        );
        assert_eq!(running(&sub).len(), 1);
    }
}

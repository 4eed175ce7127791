//! Adapters at the edge, so one engine answers every coding agent: the agent is named (or
//! detected), its payload is read as the Claude Code payload our engine evaluates
//! ([`normalise`]), and the Claude Code answer the engine gives is written back in the agent's
//! own output shape with only the fields it accepts ([`render`]).
//!
//! Each agent is one module holding one table ([`table::AgentTable`]): its event names, its tool
//! names and inputs, what an answer to each event can carry, and what it cannot express. What an
//! agent cannot express is answered the safe way: a deny stays a deny, an ask it cannot show
//! becomes a deny with the reason, and a rewrite it cannot apply becomes a deny naming the
//! suggested command. `docs/agents.md` is generated from the same tables ([`matrix`]).

use std::sync::LazyLock;

use serde_json::Value;

mod agent;
pub mod claude;
pub mod codex;
pub mod copilot;
pub mod cursor;
pub mod factory;
pub mod gemini;
pub mod install;
pub mod matrix;
mod normalise;
pub mod patch;
mod render;
pub mod table;
pub mod verdict;

pub use agent::{Agent, AgentError};
pub use normalise::{Normalised, normalise};
pub use render::{Answer, passes_through, render};
pub use table::AgentTable;
pub use verdict::{Decision, Verdict};

static TABLES: LazyLock<[AgentTable; 6]> = LazyLock::new(|| {
    [
        claude::table(),
        codex::table(),
        factory::table(),
        gemini::table(),
        cursor::table(),
        copilot::table(),
    ]
});

impl Agent {
    /// The agent's table.
    pub fn table(self) -> &'static AgentTable {
        &TABLES[self as usize]
    }
}

/// Which agent sent an event: the name given (`--agent`) first; else an environment variable
/// only that agent sets; else payload fields only that agent sends, or an event name only it
/// uses; else Claude Code, but only when the payload has Claude Code's shape (a `session_id`;
/// an event name our table does not know yet is a newer Claude Code's). Anything else is an error naming the way out.
pub fn detect(
    explicit: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
    payload: &Value,
) -> Result<Agent, AgentError> {
    if let Some(name) = explicit {
        return name.parse();
    }
    let others = Agent::ALL.into_iter().filter(|a| *a != Agent::Claude);
    let set = |v: &str| env(v).is_some_and(|x| !x.is_empty());
    if let Some(a) = others
        .clone()
        .find(|a| a.table().env.iter().any(|v| set(v)))
    {
        return Ok(a);
    }
    let has = |k: &str| payload.get(k).is_some();
    if let Some(a) = others
        .clone()
        .find(|a| a.table().marks.iter().any(|k| has(k)))
    {
        return Ok(a);
    }
    let event = payload
        .get("hook_event_name")
        .or_else(|| payload.get("hookEventName"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let claude = Agent::Claude.table();
    let mut owners: Vec<Agent> = Vec::new();
    if claude.event(event).is_none() {
        owners = others
            .filter(|a| a.table().event(event).is_some())
            .collect();
        if let [only] = owners.as_slice() {
            return Ok(*only);
        }
    }
    // Claude Code's shape (a session id) with no other agent's mark or event name: Claude
    // Code's, even for an event our table does not know yet (a newer Claude Code's), which is
    // then answered with nothing, as before agents were told apart.
    if owners.is_empty() && payload.get("session_id").is_some_and(Value::is_string) {
        return Ok(Agent::Claude);
    }
    let what = if event.is_empty() {
        "it names no event in hook_event_name".to_owned()
    } else if claude.event(event).is_none() {
        format!("'{event}' is not a Claude Code event")
    } else {
        "it has no session_id".to_owned()
    };
    Err(AgentError::Unrecognised(what))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn names_parse_and_unknown_names_list_the_known() {
        assert_eq!("Codex".parse::<Agent>().unwrap(), Agent::Codex);
        assert_eq!("droid".parse::<Agent>().unwrap(), Agent::Factory);
        let e = "aider".parse::<Agent>().unwrap_err().to_string();
        assert!(e.contains("'aider'") && e.contains("codex, factory"), "{e}");
        for a in Agent::ALL {
            assert_eq!(a.table().agent, a, "tables are in Agent order");
        }
    }

    #[test]
    fn detection_order() {
        let p = json!({"hook_event_name": "PreToolUse", "session_id": "s"});
        assert_eq!(detect(Some("gemini"), no_env, &p).unwrap(), Agent::Gemini);
        // Gemini CLI sets CLAUDE_PROJECT_DIR as well as its own.
        let gemini_env = |v: &str| {
            matches!(v, "GEMINI_PROJECT_DIR" | "CLAUDE_PROJECT_DIR").then(|| "/p".to_owned())
        };
        assert_eq!(detect(None, gemini_env, &p).unwrap(), Agent::Gemini);
        let turn = json!({"hook_event_name": "PreToolUse", "session_id": "s", "turn_id": "t"});
        assert_eq!(detect(None, no_env, &turn).unwrap(), Agent::Codex);
        let before = json!({"hook_event_name": "BeforeTool", "session_id": "s"});
        assert_eq!(detect(None, no_env, &before).unwrap(), Agent::Gemini);
        assert_eq!(detect(None, no_env, &p).unwrap(), Agent::Claude);
        // A Claude-shaped event newer than our table is still Claude Code's.
        let future = json!({"hook_event_name": "SomeFutureEvent", "session_id": "s"});
        assert_eq!(detect(None, no_env, &future).unwrap(), Agent::Claude);
        let bare = json!({"session_id": "s", "cwd": "/p"});
        assert_eq!(detect(None, no_env, &bare).unwrap(), Agent::Claude);
        let shapeless = json!({"hook_event_name": "SomeFutureEvent"});
        assert!(detect(None, no_env, &shapeless).is_err());
    }

    /// The client picks its fallbacks from the proto's list without these tables; the two name
    /// the same events.
    #[test]
    fn the_clients_guard_list_is_the_tables() {
        let mut from_tables: Vec<(&str, &str)> = Agent::ALL
            .into_iter()
            .filter(|a| *a != Agent::Claude)
            .flat_map(|a| {
                a.table()
                    .events
                    .iter()
                    .filter(|e| e.ours.is_some_and(|k| k.is_guard()))
                    .map(move |e| (a.name(), e.name))
            })
            .collect();
        let mut listed = capt_hook_proto::failure::AGENT_GUARDED_EVENTS.to_vec();
        from_tables.sort();
        listed.sort();
        assert_eq!(from_tables, listed);
    }

    #[test]
    fn an_unknown_shape_is_an_error_not_a_guess() {
        for p in [
            json!({"event": "before_tool"}),
            json!({"hook_event_name": "OnToolCall", "sessionId": "s"}),
            json!({"hook_event_name": "PreToolUse"}),
        ] {
            let e = detect(None, no_env, &p).unwrap_err();
            assert!(matches!(e, AgentError::Unrecognised(_)), "{e}");
            assert!(e.to_string().contains("--agent"), "{e}");
        }
    }
}

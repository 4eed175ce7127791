//! The hooks of the seed documents, written with the Rust SDK. One module per seed page; each
//! exports `register`, which adds that page's hooks (with their inline tests) to a registry.
//! `README.md` beside this crate maps every seed snippet to the function that ports it.
//!
//! The hooks are examples, not a policy: several of them answer the same call differently (two
//! rewrites of `cat`, a warning and a block on `git stash`), as the seed pages show alternatives.

pub mod lifecycle;
pub mod llm;
pub mod options;
pub mod primitives;
pub mod seeds;
pub mod session_workflow;
pub mod state;
pub mod under_the_hood;

use captain_hook::{DefError, Registry};

/// A page's `register` function.
pub type Register = fn(&mut Registry) -> Result<(), DefError>;

/// Every page, by the name its hooks are registered under.
pub const PAGES: [(&str, Register); 8] = [
    ("primitives", primitives::register),
    ("options", options::register),
    ("state", state::register),
    ("session_workflow", session_workflow::register),
    ("under_the_hood", under_the_hood::register),
    ("lifecycle", lifecycle::register),
    ("llm", llm::register),
    ("seeds", seeds::register),
];

/// Every example hook in one registry, page after page.
pub fn registry() -> Result<Registry, DefError> {
    let mut reg = Registry::new();
    for (_, register) in PAGES {
        register(&mut reg)?;
    }
    Ok(reg)
}

/// Transcript lines for inline tests, in the shape Claude Code writes them (the test runner
/// fills in `uuid`, `timestamp` and `sessionId`).
pub mod lines {
    use serde_json::{Value, json};

    /// The user's prompt.
    pub fn user(text: &str) -> Value {
        json!({"type": "user", "message": {"role": "user", "content": text}})
    }

    /// The agent's prose.
    pub fn said(text: &str) -> Value {
        json!({"type": "assistant", "message": {"role": "assistant",
            "content": [{"type": "text", "text": text}]}})
    }

    /// A tool call by the agent; `id` must be unique within the transcript.
    pub fn call(id: &str, tool: &str, input: Value) -> Value {
        json!({"type": "assistant", "message": {"role": "assistant",
            "content": [{"type": "tool_use", "id": id, "name": tool, "input": input}]}})
    }

    /// An Edit of `path`.
    pub fn edit(id: &str, path: &str) -> Value {
        call(
            id,
            "Edit",
            json!({"file_path": path, "old_string": "a", "new_string": "b"}),
        )
    }

    /// A Bash call running `command`.
    pub fn bash(id: &str, command: &str) -> Value {
        call(id, "Bash", json!({"command": command}))
    }
}

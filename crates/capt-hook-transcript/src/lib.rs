//! Claude Code transcript JSONL (`reference/protocol.md` §11) as a session view with queries.
//!
//! * [`Transcript`] parses a file line by line into lean [`Entry`]s, [`ToolCall`]s and
//!   [`ToolResult`]s: every line type is accepted, unknown types are kept as
//!   [`EntryKind::Other`], malformed lines are skipped, and big strings are cut while parsing
//!   (a line can always be re-read in full through its byte span).
//! * [`Window`] is a slice of the session (the whole session, the current turn, the last n
//!   entries) with the queries conditions need: [`ToolCalls`] filters, prose, prompts,
//!   `has_command`, `has_edit_to`, plan-mode counts, the native task list ([`Window::tasks`]).
//!   Turns start at real user prompts ([`Entry::is_prompt`]).
//! * [`Transcript::waiting`] is the transcript half of the `waiting` condition.
//! * [`TranscriptCache`] keeps parsed transcripts across events and reads only appended lines;
//!   [`LazyTranscript`] reads on first use only.
//! * Command matching is pluggable ([`CommandMatcher`]) so this crate needs no shell parser.
//!
//! ```
//! use capt_hook_transcript::{Scope, Transcript};
//!
//! let t = Transcript::from_jsonl(concat!(
//!     r#"{"type":"user","message":{"role":"user","content":"fix the tests"}}"#, "\n",
//!     r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"sudo pytest -q"}}]}}"#, "\n",
//!     r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"3 passed"}]}}"#, "\n",
//! ));
//! assert!(t.session().has_command(&["pytest"]));
//! assert_eq!(t.scope(Scope::Turn).prompts().collect::<Vec<_>>(), ["fix the tests"]);
//! assert_eq!(t.tool_calls().named("Bash").first().unwrap().result().unwrap().content(), "3 passed");
//! ```

mod cache;
mod command;
mod entry;
mod error;
pub mod glob;
mod lenient;
pub mod names;
mod query;
mod raw;
mod tasks;
mod transcript;
mod waiting;
mod window;

pub use cache::{DEFAULT_CACHE_FILES, LazyTranscript, TranscriptCache};
pub use command::{CommandMatcher, SplitMatcher, split_argvs};
pub use entry::{Entry, EntryKind, LineSpan, Memo, ToolCall, ToolResult};
pub use error::TranscriptError;
pub use glob::{Glob, IntoGlobs};
pub use query::{CallRef, ToolCalls};
pub use raw::{INPUT_STRING_CAP, RESULT_HEAD, RESULT_TAIL, RESULT_TEXT_CAP, SYSTEM_TEXT_CAP};
pub use tasks::Task;
pub use transcript::{Subagent, Transcript};
pub use waiting::{DEFAULT_WAITING_TOOLS, Notifications, Pending, PendingKind, Waiting};
pub use window::{Scope, Turn, Window};

#[cfg(test)]
mod tests;

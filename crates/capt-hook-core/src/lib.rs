//! The engine's data model: events, tool calls, conditions, results, the deny-wins fold and the
//! output envelopes Claude Code reads. Its I/O is reading what an event names (the transcript,
//! the edited file, capped in size) and the session's state store the event carries.

pub mod capped;
pub mod condition;
pub mod deletes;
pub mod edit;
pub mod env;
pub mod envelope;
pub mod event;
pub mod events;
pub mod fold;
pub mod glob;
pub mod history;
pub mod lang;
pub mod paths;
pub mod pattern;
pub mod payload;
pub mod readonly;
pub mod result;
pub mod scope;
pub mod spawns;
pub mod tokens;
pub mod tool;

pub use condition::{Condition, Miss};
pub use envelope::{Output, envelope};
pub use event::{Event, EventContext, EventError, JoinedCommand};
pub use events::{EventKind, EventSet, UnknownEvent};
pub use fold::{FoldInput, fold};
pub use glob::Glob;
pub use pattern::{Mode, Pattern};
pub use payload::{Payload, PayloadError};
pub use result::{Action, HookResult};
pub use tokens::Tokens;
pub use tool::ToolCall;

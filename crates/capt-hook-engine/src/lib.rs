//! The hook engine: what a hook is and how one event runs through many.
//!
//! A [`Hook`] is built from a [`HookDef`] (the builder of [`primitives`], which also holds the
//! command-level kinds: `hook`, `on`, `block_command`, `rewrite_command`, …) and kept in a
//! [`Registry`] in fold order; the [`Dispatcher`] matches an event against it, runs the bodies
//! (user code on a bounded pool, under the event's deadline) and folds the results. Handlers
//! answer through [`Reply`], typed handlers through [`typed`], and Rust conditions come from
//! [`cond`]. [`inline`] holds the data of a hook's inline tests (the runner is
//! `capt-hook-testing`), [`notices`] the session notices a project posts.
//!
//! Every other SDK crate sits on this one and nothing here names them: richer kinds plug in
//! through [`primitives::custom`] and [`primitives::BodyLayer`].

pub mod cond;
pub mod dispatch;
pub mod hook;
pub mod inline;
pub mod notices;
pub mod primitives;
pub mod registry;
pub mod reply;
pub mod typed;

pub use dispatch::{DispatchOptions, Dispatcher, Trace};
pub use hook::{DefError, HandlerError, HandlerResult, Hook};
pub use inline::{Expect, InlineTest, Input};
pub use primitives::{
    CommandMatch, HookDef, MaxFires, approve, block_command, deny, hook, on, rewrite_command,
    rewrite_command_to, rewrite_command_with, set_tool_input, warn_command,
};
pub use registry::Registry;
pub use reply::Reply;
pub use typed::{TypedPayload, on_typed};

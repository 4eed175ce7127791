//! captain-hook: Claude Code hooks as typed, declarative data.
//!
//! Hooks are registered in a [`Registry`] either from Rust with the builder functions of
//! [`primitives`] or from `.claude/hooks/*.toml` files with [`loader`]; both produce the same
//! [`Hook`] values, so the [`Dispatcher`], the fold and the inline-test runner are shared.
//!
//! What only Rust can say: handlers ([`on`], [`on_typed`] with the event's typed payload) that
//! answer through [`Reply`]; conditions built with [`cond`] or written as a
//! [`cond::CustomCondition`]; [`HookDef::when`] vetoes; typed session and durable state
//! ([`state`]); workflow steps, artifact checks and `post_complete` callbacks ([`session`]);
//! lint and style callbacks over the parsed file ([`code`]). User code runs on the handler pool
//! under the event's deadline, and a failure of it never lets a guarded call through silently
//! ([`dispatch`]). `examples/rust` in the repository ports the seed documents' hooks with these.

mod alloc;
pub mod code;
pub mod cond;
pub mod dispatch;
#[cfg(test)]
mod fuzz;
pub mod hook;
pub mod llm;
pub mod loader;
pub mod notices;
pub mod packs;
pub mod primitives;
pub mod project;
pub mod registry;
pub mod replay;
pub mod reply;
pub mod session;
pub mod spec;
pub mod testing;
pub mod tickets;
pub mod typed;
pub mod worker;

/// The allocator a worker should run on: an event makes many small allocations, and mimalloc
/// serves them in about a third of glibc's instructions.
pub use alloc::Allocator;
pub use capt_hook_core as core;
pub use capt_hook_core::{Condition, Event, EventKind, HookResult};
pub use capt_hook_state as state;
pub use capt_hook_transcript as transcript;
pub use dispatch::{DispatchOptions, Dispatcher, Trace};
pub use hook::{HandlerError, HandlerResult, Hook};
pub use loader::{LoadError, load_dir};
pub use primitives::{
    CommandMatch, DefError, HookDef, MaxFires, approve, block_command, deny, hook, on,
    rewrite_command, rewrite_command_to, rewrite_command_with, set_tool_input, warn_command,
};
pub use project::{Evaluation, Project};
pub use registry::Registry;
pub use reply::Reply;
pub use testing::{Expect, InlineTest, Input};
pub use typed::{TypedPayload, on_typed};

/// Runs this process as a project's worker with the hooks of `registry` (then the project's
/// TOML files): the `main` of a Rust hook project built by `capt-hook build`, which the host
/// starts with the same arguments it gives the stock worker.
pub fn serve(registry: Registry) -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    worker::main(&args, registry)
}

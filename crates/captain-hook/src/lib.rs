//! captain-hook: Claude Code hooks as typed, declarative data.
//!
//! This crate is the front a Rust hook project depends on: it re-exports the SDK's crates
//! under one name and holds no logic of its own beyond [`serve`]. Hooks are registered in a
//! [`Registry`] either from Rust with the builder functions of [`primitives`] or from
//! `.claude/hooks/*.toml` files with [`loader`]; both produce the same [`Hook`] values, so the
//! [`Dispatcher`], the fold and the inline-test runner are shared.
//!
//! What only Rust can say: handlers ([`on`], [`on_typed`] with the event's typed payload) that
//! answer through [`Reply`]; conditions built with [`cond`] or written as a
//! [`cond::CustomCondition`]; [`HookDef::when`] vetoes; typed session and durable state
//! ([`state`]); workflow steps, artifact checks and `post_complete` callbacks ([`session`]);
//! lint and style callbacks over the parsed file ([`code`]). User code runs on the handler pool
//! under the event's deadline, and a failure of it never lets a guarded call through silently
//! ([`dispatch`]). `examples/rust` in the repository ports the seed documents' hooks with these.
//!
//! Where each part lives (see `docs/architecture.md`): the engine (`capt-hook-engine`), the
//! hook kinds (`capt-hook-kinds`), the TOML format (`capt-hook-toml`), packs
//! (`capt-hook-packs`), the test runner and replay (`capt-hook-testing`), and the project and
//! worker loop (`capt-hook-serve`).

// `hook` names both the engine's module and its `hook` builder function (the engine re-exports
// it at its root), so this one line brings in both.
pub use capt_hook_engine::{cond, dispatch, hook, notices, primitives, registry, reply, typed};
pub use capt_hook_kinds::{code, session, tickets};
pub use capt_hook_packs as packs;
pub use capt_hook_serve::{project, worker};
pub use capt_hook_testing as testing;
pub use capt_hook_testing::replay;
pub use capt_hook_toml::{loader, spec};

/// LLM hooks ([`capt_hook_kinds::llm`]) and the project-load check of their specialties.
pub mod llm {
    pub use capt_hook_kinds::llm::*;
    pub use capt_hook_serve::specialties::{check_specialties, check_specialties_in};
}

pub use capt_hook_core as core;
pub use capt_hook_core::{Condition, Event, EventKind, HookResult};
/// The allocator a worker should run on: an event makes many small allocations, and mimalloc
/// serves them in about a third of glibc's instructions.
pub use capt_hook_serve::Allocator;
pub use capt_hook_state as state;
pub use capt_hook_transcript as transcript;
pub use dispatch::{DispatchOptions, Dispatcher, Trace};
pub use hook::{HandlerError, HandlerResult, Hook};
pub use loader::{LoadError, load_dir};
pub use primitives::{
    CommandMatch, DefError, HookDef, MaxFires, approve, ask, block_command, deny, on,
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
    capt_hook_serve::worker::main(&args, registry)
}

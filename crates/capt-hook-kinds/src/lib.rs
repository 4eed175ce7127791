//! The hook kinds built on the engine's [`HookDef`](capt_hook_engine::HookDef), each lowered
//! through [`custom`](capt_hook_engine::primitives::custom): code-aware lints, rewrites and
//! style guides ([`code`]), session nudges, gates and workflows ([`session`]), LLM judges
//! ([`llm`]) and permission tickets ([`tickets`]).
//!
//! Nothing here reads a hook file: the TOML format (`capt-hook-toml`) lowers its tables to
//! these builders.

pub mod code;
pub mod llm;
pub mod session;
pub mod tickets;

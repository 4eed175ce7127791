//! Tests of the hook kinds and the packs that load hook files or whole projects, which only
//! this crate (above the format, the packs and the runner) can do.

mod llm;
mod packs;
mod tickets;

//! The hook file format: [`spec`] is `.claude/hooks/*.toml` as Rust types (and the JSON Schema
//! generated from them), [`loader`] finds, parses and lowers those files to the same
//! definitions the Rust SDK builds, with errors that name file, line, column and field.

pub mod loader;
pub mod spec;

pub use loader::{LoadError, load_dir};

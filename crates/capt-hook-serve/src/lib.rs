//! A project's hooks, served: [`project`] loads a project's hook files and packs into one
//! registry (reloading when they change) and evaluates an event against it; [`worker`] is the
//! loop the host runs as the project's worker (and its `evaluate`, `run` and `test` modes);
//! [`specialties`] checks the judges' specialties against the project's `config.toml`.

mod alloc;
#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod kind_tests;
pub mod project;
pub mod specialties;
pub mod worker;

/// The allocator a worker should run on: an event makes many small allocations, and mimalloc
/// serves them in about a third of glibc's instructions.
pub use alloc::Allocator;

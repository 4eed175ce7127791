//! Globs with Python `fnmatch` semantics: `*` crosses `/`, `?` is one character, `[seq]` and
//! `[!seq]` are classes (an unclosed `[` is literal), everything else is literal, and the match
//! is anchored at both ends. A path matches when its whole text or its basename matches.
//!
//! One implementation serves the engine and the transcript queries (`touched_file`,
//! `read_file`): it lives in `capt-hook-transcript`, which depends on nothing of ours.

pub use capt_hook_transcript::Glob;
pub use capt_hook_transcript::glob::basename;

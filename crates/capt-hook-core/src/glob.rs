//! Globs with Python `fnmatch` semantics: `*` crosses `/`, `?` is one character, `[seq]` and
//! `[!seq]` are classes (an unclosed `[` is literal), everything else is literal, and the match
//! is anchored at both ends. A path matches when its whole text or its basename matches.
//!
//! One implementation serves the engine and the transcript queries (`touched_file`,
//! `read_file`): it lives in `capt-hook-transcript`, which depends on nothing of ours.

pub use capt_hook_transcript::Glob;
pub use capt_hook_transcript::glob::basename;

#[cfg(test)]
mod tests {
    use super::*;

    fn m(glob: &str, path: &str) -> bool {
        Glob::new(glob).matches_path(path)
    }

    #[test]
    fn star_crosses_slashes_and_basename_counts() {
        assert!(m("*.py", "a/b/c.py"));
        assert!(m("docs/*.md", "docs/a/b.md"));
        assert!(m("*src/*.py", "/home/me/proj/src/deep/x.py"));
        assert!(!m("src/*.py", "/home/me/proj/src/a.py"));
        assert!(m("**/src/*.py", "/home/me/proj/src/a.py"));
    }

    #[test]
    fn double_star_needs_a_slash() {
        assert!(m("**/foo.py", "src/foo.py"));
        assert!(m("**/foo.py", "/abs/src/foo.py"));
        assert!(!m("**/foo.py", "foo.py"));
    }

    #[test]
    fn classes_question_marks_and_literals() {
        assert!(m("file?.txt", "file1.txt"));
        assert!(!m("file?.txt", "file10.txt"));
        assert!(m("[ab].rs", "a.rs"));
        assert!(!m("[!ab].rs", "a.rs"));
        assert!(m("[!ab].rs", "c.rs"));
        assert!(m("x[.rs", "x[.rs"));
        assert!(m("a+b(1).txt", "a+b(1).txt"));
        assert!(!m("*.PY", "a.py"));
        assert!(m("**/.env*", "/p/.env.local"));
    }
}

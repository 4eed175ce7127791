//! The one table of source languages: the ids hooks name them by, their file extensions, and
//! which files are tests. `source_edits`, `test_file`, lint languages and the code crate's
//! grammars all read it, so `ts` means the same files everywhere.

use std::path::Path;
use std::sync::OnceLock;

use crate::glob::Glob;

/// One language: its canonical id, the other names hooks may use, and its file extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LangInfo {
    /// The canonical short id (`py`, `ts`, …).
    pub id: &'static str,
    /// Other ids accepted for it (lower case).
    pub aliases: &'static [&'static str],
    /// File extensions (lower case, no dot).
    pub extensions: &'static [&'static str],
}

impl LangInfo {
    /// fnmatch globs for the language's files (`*.py`, `*.pyi`).
    pub fn globs(&self) -> Vec<String> {
        self.extensions.iter().map(|e| format!("*.{e}")).collect()
    }
}

/// Every language hooks can name; the code crate compiles a grammar for each.
pub const LANGUAGES: &[LangInfo] = &[
    LangInfo {
        id: "py",
        aliases: &["python", "python3", "pyi"],
        extensions: &["py", "pyi"],
    },
    LangInfo {
        id: "ts",
        aliases: &["typescript", "mts", "cts"],
        extensions: &["ts", "mts", "cts"],
    },
    LangInfo {
        id: "tsx",
        aliases: &[],
        extensions: &["tsx"],
    },
    LangInfo {
        id: "js",
        aliases: &["javascript", "jsx", "mjs", "cjs", "node"],
        extensions: &["js", "mjs", "cjs", "jsx"],
    },
    LangInfo {
        id: "rs",
        aliases: &["rust"],
        extensions: &["rs"],
    },
    LangInfo {
        id: "go",
        aliases: &["golang"],
        extensions: &["go"],
    },
    LangInfo {
        id: "bash",
        aliases: &["sh", "shell"],
        extensions: &["sh", "bash"],
    },
    LangInfo {
        id: "java",
        aliases: &[],
        extensions: &["java"],
    },
];

/// The language named `id` (case-insensitive, surrounding spaces ignored).
pub fn lookup(id: &str) -> Option<&'static LangInfo> {
    let id = id.trim().to_ascii_lowercase();
    LANGUAGES
        .iter()
        .find(|l| l.id == id || l.aliases.contains(&id.as_str()))
}

/// The language of a file, from its extension only (no extension, no language).
pub fn for_path(path: &str) -> Option<&'static LangInfo> {
    let ext = Path::new(path).extension()?.to_str()?.to_ascii_lowercase();
    LANGUAGES
        .iter()
        .find(|l| l.extensions.contains(&ext.as_str()))
}

/// The source-file globs of a language key; a key not in the table means `*.<key>`.
pub fn source_globs(key: &str) -> Vec<String> {
    lookup(key).map_or_else(|| vec![format!("*.{}", key.trim())], LangInfo::globs)
}

/// Globs that mark a test file (`**/` means a directory must precede the name).
pub const TEST_FILE_GLOBS: &[&str] = &[
    "**/test_*.py",
    "**/*_test.py",
    "**/conftest.py",
    "**/tests/**/*.py",
    "**/*_test.go",
    "**/*.test.*",
    "**/*.spec.*",
];

/// True when `file` is a test file by [`TEST_FILE_GLOBS`].
pub fn is_test_file(file: &str) -> bool {
    static GLOBS: OnceLock<Vec<Glob>> = OnceLock::new();
    GLOBS
        .get_or_init(|| TEST_FILE_GLOBS.iter().map(|g| Glob::new(g)).collect())
        .iter()
        .any(|g| g.matches_path(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_aliases_and_extensions_agree() {
        assert_eq!(lookup(" TypeScript ").map(|l| l.id), Some("ts"));
        assert_eq!(for_path("/a/b.mts").map(|l| l.id), Some("ts"));
        assert_eq!(source_globs("ts"), ["*.ts", "*.mts", "*.cts"]);
        assert_eq!(source_globs("kt"), ["*.kt"]);
        assert!(is_test_file("/p/tests/unit/test_a.py"));
        assert!(!is_test_file("/p/src/a.py"));
        // No id or extension belongs to two languages.
        for (i, a) in LANGUAGES.iter().enumerate() {
            for b in &LANGUAGES[i + 1..] {
                assert!(!a.extensions.iter().any(|e| b.extensions.contains(e)));
                assert!(!b.aliases.contains(&a.id) && !a.aliases.contains(&b.id));
            }
        }
    }
}

//! The one registry of languages: ids, file extensions and tree-sitter grammars.
//!
//! Every grammar is turned into a `tree_sitter::Language` at most once per process (a
//! `OnceLock` per language); ast-grep keeps one parser per language and thread on top of that.

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use ast_grep_core::matcher::PatternBuilder;
use ast_grep_core::tree_sitter::{LanguageExt, StrDoc, TSLanguage};
use ast_grep_core::{Language, Pattern, PatternError};

/// A language whose grammar is compiled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    /// Python (`py`, `pyi`).
    Python,
    /// TypeScript without JSX (`ts`, `mts`, `cts`).
    TypeScript,
    /// TypeScript with JSX (`tsx`).
    Tsx,
    /// JavaScript, JSX included (`js`, `mjs`, `cjs`, `jsx`).
    JavaScript,
    /// Rust (`rs`).
    Rust,
    /// Go (`go`).
    Go,
    /// Bash and POSIX shell (`sh`, `bash`).
    Bash,
    /// Java (`java`).
    Java,
}

/// The character a `$` metavariable becomes before the pattern is parsed, for grammars where
/// `$` cannot start an identifier (the parser would otherwise see an error instead of a name).
const EXPANDO: char = 'µ';

impl Lang {
    /// Every supported language, in a stable order.
    pub const ALL: [Lang; 8] = [
        Lang::Python,
        Lang::TypeScript,
        Lang::Tsx,
        Lang::JavaScript,
        Lang::Rust,
        Lang::Go,
        Lang::Bash,
        Lang::Java,
    ];

    /// The canonical ids of every supported language, for error messages (`py, ts, …`).
    pub fn known_ids() -> String {
        Lang::ALL.map(Lang::id).join(", ")
    }

    /// Looks a language up by the ids hooks use (`py`, `python`, `ts`, `tsx`, `js`, `jsx`, `rs`,
    /// `rust`, `go`, `bash`, `sh`, …); case-insensitive, surrounding spaces ignored.
    pub fn from_id(id: &str) -> Option<Lang> {
        Lang::of(capt_hook_core::lang::lookup(id)?)
    }

    /// The language of a file, from its extension only (no extension, no language).
    pub fn from_path(path: &str) -> Option<Lang> {
        Lang::of(capt_hook_core::lang::for_path(path)?)
    }

    /// The compiled grammar for an entry of the language table, if there is one.
    fn of(info: &capt_hook_core::lang::LangInfo) -> Option<Lang> {
        Lang::ALL.into_iter().find(|l| l.id() == info.id)
    }

    /// The canonical short id (`py`, `ts`, `tsx`, `js`, `rs`, `go`, `bash`, `java`).
    pub fn id(self) -> &'static str {
        match self {
            Lang::Python => "py",
            Lang::TypeScript => "ts",
            Lang::Tsx => "tsx",
            Lang::JavaScript => "js",
            Lang::Rust => "rs",
            Lang::Go => "go",
            Lang::Bash => "bash",
            Lang::Java => "java",
        }
    }

    /// File extensions (lower case, no dot) that belong to this language, from the core's
    /// language table.
    pub fn extensions(self) -> &'static [&'static str] {
        capt_hook_core::lang::lookup(self.id()).map_or(&[], |info| info.extensions)
    }

    /// fnmatch globs for the language's files (`*.py`, `*.pyi`), for a lint's file guard.
    pub fn globs(self) -> Vec<String> {
        capt_hook_core::lang::source_globs(self.id())
    }

    /// The tree-sitter grammar, built on first use and cached for the process.
    pub fn grammar(self) -> TSLanguage {
        static CACHE: [OnceLock<TSLanguage>; Lang::ALL.len()] =
            [const { OnceLock::new() }; Lang::ALL.len()];
        CACHE[self as usize]
            .get_or_init(|| match self {
                Lang::Python => tree_sitter_python::LANGUAGE.into(),
                Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
                Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
                Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
                Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
                Lang::Go => tree_sitter_go::LANGUAGE.into(),
                Lang::Bash => tree_sitter_bash::LANGUAGE.into(),
                Lang::Java => tree_sitter_java::LANGUAGE.into(),
            })
            .clone()
    }

    /// Whether `$` has to be swapped for [`EXPANDO`] before the grammar can parse a pattern.
    fn needs_expando(self) -> bool {
        // In JS/TS and Java `$` is an identifier character and in Bash `$NAME` is an expansion
        // node, so they parse metavariables as they are.
        matches!(self, Lang::Python | Lang::Rust | Lang::Go)
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl Language for Lang {
    fn kind_to_id(&self, kind: &str) -> u16 {
        self.grammar().id_for_node_kind(kind, true)
    }

    fn field_to_id(&self, field: &str) -> Option<u16> {
        self.grammar().field_id_for_name(field).map(|f| f.get())
    }

    fn expando_char(&self) -> char {
        if self.needs_expando() { EXPANDO } else { '$' }
    }

    fn pre_process_pattern<'q>(&self, query: &'q str) -> Cow<'q, str> {
        if self.needs_expando() {
            Cow::Owned(swap_metavar_sigils(query, EXPANDO))
        } else {
            Cow::Borrowed(query)
        }
    }

    fn build_pattern(&self, builder: &PatternBuilder) -> Result<Pattern, PatternError> {
        builder.build(|src| StrDoc::try_new(src, *self))
    }
}

impl LanguageExt for Lang {
    fn get_ts_language(&self) -> TSLanguage {
        self.grammar()
    }
}

/// Replaces the `$` of each metavariable (`$NAME`, `$_`, `$$$`, `$$$NAME`) by `expando`, and
/// leaves every other `$` (say `$1`, or a lone `$` in a string) alone.
fn swap_metavar_sigils(query: &str, expando: char) -> String {
    let mut out = String::with_capacity(query.len() + 8);
    let mut dollars = 0usize;
    let flush = |out: &mut String, dollars: usize, sigil: char| {
        out.extend(std::iter::repeat_n(sigil, dollars));
    };
    for c in query.chars() {
        if c == '$' {
            dollars += 1;
            continue;
        }
        let starts_name = c.is_ascii_uppercase() || c == '_';
        let sigil = if dollars > 0 && (starts_name || dollars == 3) {
            expando
        } else {
            '$'
        };
        flush(&mut out, dollars, sigil);
        dollars = 0;
        out.push(c);
    }
    // A trailing `$$$` is the anonymous multi-match.
    let sigil = if dollars == 3 { expando } else { '$' };
    flush(&mut out, dollars, sigil);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_extensions_round_trip() {
        for lang in Lang::ALL {
            assert_eq!(Lang::from_id(lang.id()), Some(lang));
            for ext in lang.extensions() {
                assert_eq!(Lang::from_path(&format!("/a/b.{ext}")), Some(lang));
            }
        }
        assert_eq!(Lang::from_id(" Python "), Some(Lang::Python));
        assert_eq!(Lang::from_id("jsx"), Some(Lang::JavaScript));
        assert_eq!(Lang::from_id("sh"), Some(Lang::Bash));
        assert_eq!(Lang::from_id("cobol"), None);
        assert_eq!(Lang::from_path("/x/release"), None);
        assert_eq!(Lang::from_path("/x/notes.txt"), None);
        assert_eq!(Lang::from_path("/x/A.TSX"), Some(Lang::Tsx));
        assert_eq!(Lang::Python.globs(), vec!["*.py", "*.pyi"]);
    }

    #[test]
    fn every_grammar_loads_with_a_compatible_abi() {
        for lang in Lang::ALL {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&lang.grammar()).expect("grammar ABI");
            assert!(parser.parse("x", None).is_some());
        }
    }

    #[test]
    fn sigils_are_swapped_only_on_metavariables() {
        assert_eq!(swap_metavar_sigils("print($$$)", 'µ'), "print(µµµ)");
        assert_eq!(swap_metavar_sigils("f($A, $$$REST)", 'µ'), "f(µA, µµµREST)");
        assert_eq!(swap_metavar_sigils("x = '$1 $a'", 'µ'), "x = '$1 $a'");
        assert_eq!(swap_metavar_sigils("$_", 'µ'), "µ_");
        assert_eq!(swap_metavar_sigils("a $$$", 'µ'), "a µµµ");
    }
}

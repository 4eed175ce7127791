//! Loads `.claude/hooks/*.toml` into a [`Registry`]. Every error names the file, line, column
//! and field; a bad file is skipped whole and the others still load.
//!
//! The pieces: finding and reading the files (here), TOML to typed specs with spans (`parse`),
//! turning serde's and toml's errors into file:line:col and field paths (`locate`), compiling
//! conditions and kind options (`compile`), and lowering specs to the SDK's definitions
//! (`lower`), the same builder calls a Rust hook file makes.

mod compile;
mod llm;
mod locate;
mod lower;
mod parse;

use std::fmt;
use std::path::{Path, PathBuf};

use capt_hook_engine::registry::Registry;

pub use compile::compile_condition;
use compile::*;
pub use llm::backend_of;
use locate::*;
use lower::*;
use parse::*;

/// The token-list conditions that take `exact`, and the one-key form each becomes with it:
/// `parse` rewrites to these forms, `locate` names them as written (kept here, which both
/// read, so neither reads the other).
const EXACT_FORMS: [(&str, &str); 3] = [
    ("runs", "runs_exact"),
    ("primary_runs", "primary_runs_exact"),
    ("ran_command", "ran_command_exact"),
];

/// A hook file problem, located.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct LoadError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line (0 when the whole file is at fault, e.g. unreadable).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The field at fault, as a path (`hook[2].only_if[0].command`).
    pub field: Option<String>,
    /// The bytes of the file the error points at, when known: [`LoadError::render`] underlines
    /// them.
    pub span: Option<std::ops::Range<usize>>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        match &self.field {
            Some(field) => write!(f, ": {field}: {}", self.message),
            None => write!(f, ": {}", self.message),
        }
    }
}

impl LoadError {
    /// The error as a terminal shows it: the one-line form, then the file's lines around the
    /// span with the span underlined (`capt-hook test`, `run`, `explain`). The file is read
    /// again here, so an error that has no span, or whose file is gone or changed under the
    /// span, is shown in its one-line form.
    pub fn render(&self) -> String {
        use annotate_snippets::{Level, Renderer, Snippet};
        let Some(span) = self.span.clone() else {
            return self.to_string();
        };
        let Ok(text) = std::fs::read_to_string(&self.file) else {
            return self.to_string();
        };
        if span.end > text.len()
            || !text.is_char_boundary(span.start)
            || !text.is_char_boundary(span.end)
        {
            return self.to_string();
        }
        let title = match &self.field {
            Some(field) => format!("{field}: {}", self.message),
            None => self.message.clone(),
        };
        let origin = self.file.display().to_string();
        let report = Level::Error.title(&title).snippet(
            Snippet::source(&text)
                .origin(&origin)
                .fold(true)
                .annotation(Level::Error.span(span)),
        );
        Renderer::plain().render(report).to_string()
    }
}

/// The project's settings file in the hooks directory (which packs and pack hooks are off).
pub const CONFIG_FILE: &str = "config.toml";

/// `*.toml` files of a hooks directory that are not hook files: the settings file and a Rust
/// hook project's manifest.
pub const NOT_HOOK_FILES: &[&str] = &[CONFIG_FILE, "Cargo.toml"];

/// The hook files of a directory, in load order: `*.toml` directly inside, names starting with
/// `_` and the [`NOT_HOOK_FILES`] skipped, sorted by the bytes of the file name.
pub fn hook_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.extension().is_some_and(|e| e == "toml")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| !n.starts_with('_') && !NOT_HOOK_FILES.contains(&n))
        })
        .collect();
    files.sort_by(|a, b| {
        a.file_name()
            .map(|n| n.as_encoded_bytes().to_vec())
            .cmp(&b.file_name().map(|n| n.as_encoded_bytes().to_vec()))
    });
    Ok(files)
}

/// Loads every hook file of `dir` into `registry`. A missing directory loads nothing.
pub fn load_dir(dir: &Path, registry: &mut Registry) -> Vec<LoadError> {
    let files = match hook_files(dir) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            return vec![LoadError {
                file: dir.to_path_buf(),
                line: 0,
                column: 0,
                field: None,
                span: None,
                message: format!("cannot list the hooks directory: {e}"),
            }];
        }
    };
    let mut errors = Vec::new();
    for file in files {
        errors.extend(load_file(&file, registry));
    }
    errors
}

/// Loads one file; on any error nothing from it is registered.
pub fn load_file(path: &Path, registry: &mut Registry) -> Vec<LoadError> {
    let whole = |message: String| LoadError {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        field: None,
        span: None,
        message,
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return vec![whole(format!("cannot read: {e}"))],
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return vec![whole(format!(
                "not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ))];
        }
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match load_text(&text, &stem, path) {
        Ok(hooks) => {
            for h in hooks {
                registry.push(h);
            }
            Vec::new()
        }
        Err(errors) => errors,
    }
}

/// Parses and builds every hook of a file's text; all errors are reported, in file order,
/// and nothing is returned unless the whole file is good.
fn load_text(
    text: &str,
    stem: &str,
    path: &Path,
) -> Result<Vec<capt_hook_engine::Hook>, Vec<LoadError>> {
    let located = Located::new(text);
    let mut built = Vec::new();
    let mut errors = Vec::new();
    for table in parse_str(&located, path, stem) {
        match table {
            Ok(hook) => built.push(hook),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(built)
    } else {
        errors.sort_by_key(|(offset, _)| *offset);
        Err(errors.into_iter().map(|(_, e)| e).collect())
    }
}

/// Parses the text of the hook file at `path` (which need not exist: an embedded file names
/// where it came from) and registers its hooks under the name stem `stem`; on any error nothing
/// from it is registered.
pub fn load_source(text: &str, stem: &str, path: &Path, registry: &mut Registry) -> Vec<LoadError> {
    match load_text(text, stem, path) {
        Ok(hooks) => {
            for h in hooks {
                registry.push(h);
            }
            Vec::new()
        }
        Err(errors) => errors,
    }
}

/// Where `key` is written in the hook whose `[[hook]]` header is on 1-based line `hook_line` of
/// the file at `file`: its line, column and field path (`hook[1].specialty`). For checks that
/// run after the load (a judge's specialty against the project's config) and should still point
/// at the line to fix. `None` when the file cannot be read or does not write the key there.
pub fn locate_hook_key(file: &Path, hook_line: usize, key: &str) -> Option<(usize, usize, String)> {
    let text = std::fs::read_to_string(file).ok()?;
    let located = Located::new(&text);
    // The file as TOML, not as lines: a header may be indented, and a key of the same name may
    // sit in the hook's `[[hook.test]]` tables or in a multi-line string.
    let doc = toml::de::DeTable::parse(&text).ok()?;
    let toml::de::DeValue::Array(hooks) = doc.get_ref().get("hook")?.get_ref() else {
        return None;
    };
    let (index, hook) = hooks
        .iter()
        .enumerate()
        .find(|(_, h)| located.line_col(h.span().start).0 == hook_line)?;
    let toml::de::DeValue::Table(table) = hook.get_ref() else {
        return None;
    };
    let (written, _) = table.iter().find(|(k, _)| k.get_ref().as_ref() == key)?;
    let (line, column) = located.line_col(written.span().start);
    Some((line, column, format!("hook[{index}].{key}")))
}

/// Parses hook-file text and registers its hooks (tests and embedding).
pub fn load_str(text: &str, stem: &str, registry: &mut Registry) -> Result<(), Vec<LoadError>> {
    let path = PathBuf::from(format!("{stem}.toml"));
    for h in load_text(text, stem, &path)? {
        registry.push(h);
    }
    Ok(())
}

/// What keeps a hook file's text below the bar every hook file should meet, if anything: it
/// does not load (the first error, with its line), or one of its hooks has no inline test.
pub fn hook_file_problem(path: &Path, text: &str) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    match load_text(text, stem, path) {
        Err(errors) => errors.first().map(ToString::to_string),
        Ok(hooks) => hooks
            .iter()
            .find(|h| h.tests.is_empty())
            .map(|h| format!("{} has no inline test", h.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_file_meets_the_bar_when_it_loads_with_tests() {
        let path = Path::new("/p/.claude/hooks/guards.toml");
        let tested = "[[hook]]\nkind = \"block_command\"\nargv = [\"pkill\"]\nreason = \"no\"\n\n  [[hook.test]]\n  input = { command = \"pkill x\" }\n  expect = \"block\"\n";
        assert_eq!(hook_file_problem(path, tested), None);
        let untested = "[[hook]]\nkind = \"block_command\"\nargv = [\"pkill\"]\nreason = \"no\"\n";
        let why = hook_file_problem(path, untested).unwrap();
        assert!(
            why.contains("guards:block_command_") && why.contains("no inline test"),
            "{why}"
        );
        let broken = "[[hook]]\nkind = \"block_command\"\nreason = 3\n";
        let why = hook_file_problem(path, broken).unwrap();
        assert!(why.contains("guards.toml"), "{why}");
    }

    /// The one error `text` produces, as (line, column, field, message).
    fn only_error(text: &str) -> (usize, usize, Option<String>, String) {
        let mut reg = Registry::new();
        let errors = load_str(text, "t", &mut reg).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        let e = errors.into_iter().next().unwrap();
        assert_eq!(e.file, PathBuf::from("t.toml"));
        (e.line, e.column, e.field, e.message)
    }

    #[test]
    fn toml_syntax_errors_point_at_the_character() {
        let (line, column, field, message) = only_error("[[hook]]\nkind = \"hook\nmessage = 1\n");
        assert_eq!((line, field), (2, None));
        assert!(column >= 8, "{column}");
        assert!(!message.is_empty());
    }

    #[test]
    fn unknown_fields_and_kinds_name_the_path() {
        let (line, column, field, message) =
            only_error("[[hook]]\nkind = \"deny\"\nreason = \"r\"\ncolour = 1\n");
        assert_eq!((line, column), (4, 1));
        assert_eq!(field.as_deref(), Some("hook[0].colour"));
        assert!(message.contains("unknown field `colour`"), "{message}");
        let (line, _, field, message) = only_error("[[hook]]\nkind = \"gatez\"\n");
        assert_eq!(line, 2);
        assert_eq!(field.as_deref(), Some("hook[0].kind"));
        assert!(message.contains("gatez"), "{message}");
    }

    /// A located error renders the file's line with its span underlined; one the file no
    /// longer holds (or with no span) falls back to the one-line form.
    #[test]
    fn errors_render_the_line_with_the_span_underlined() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("guards.toml");
        let text = "[[hook]]\nkind = \"deny\"\nreason = \"r\"\n  colour = 1\n";
        std::fs::write(&path, text).unwrap();
        let errors = load_file(&path, &mut Registry::new());
        assert_eq!(errors.len(), 1, "{errors:?}");
        let shown = errors[0].render();
        assert!(
            shown.contains("hook[0].colour: unknown field `colour`"),
            "{shown}"
        );
        assert!(
            shown.contains(&format!("{}:4:3", path.display())),
            "{shown}"
        );
        assert!(shown.contains("4 |   colour = 1"), "{shown}");
        // The caret sits under the key, as long as the key.
        let caret = shown.lines().find(|l| l.contains('^')).unwrap();
        assert_eq!(
            caret.trim_start_matches([' ', '|']).trim_end(),
            "^^^^^^",
            "{shown}"
        );
        assert!(
            caret.find('^').unwrap()
                == shown
                    .lines()
                    .find(|l| l.contains("colour = 1"))
                    .unwrap()
                    .find("colour")
                    .unwrap(),
            "{shown}"
        );
        std::fs::write(&path, "").unwrap();
        assert_eq!(errors[0].render(), errors[0].to_string());
    }

    /// Serde's own path locates every kind of error a table can have.
    #[test]
    fn serde_errors_name_the_path_and_position() {
        let cases: &[(&str, (usize, usize), &str, &str)] = &[
            // A wrong type: the value.
            (
                "[[hook]]\nkind = \"hook\"\nmessage = 1\n",
                (3, 11),
                "hook[0].message",
                "invalid type",
            ),
            // A missing field: the table's header.
            (
                "[[hook]]\nkind = \"deny\"\n",
                (1, 1),
                "hook[0]",
                "missing field `reason`",
            ),
            // No kind at all.
            (
                "[[hook]]\nreason = \"r\"\n",
                (1, 1),
                "hook[0].kind",
                "missing field `kind`",
            ),
            // A kind that is not a string.
            (
                "[[hook]]\nkind = 3\n",
                (2, 8),
                "hook[0].kind",
                "expected a string",
            ),
            // An unknown condition inside nested lists: the key where it was written.
            (
                "[[hook]]\nkind = \"deny\"\nreason = \"r\"\nonly_if = [{ any = [{ comand = \"x\" }] }]\n",
                (4, 23),
                "hook[0].only_if[0].any[0].comand",
                "unknown variant `comand`",
            ),
            // An unknown field of a nested table.
            (
                "[[hook]]\nkind = \"workflow\"\nlabel = \"L\"\nmarker = \"M\"\n\n[[hook.steps]]\nname = \"s\"\ncolor = 1\n",
                (8, 1),
                "hook[0].steps[0].color",
                "unknown field `color`",
            ),
            // A bad value inside a list of conditions.
            (
                "[[hook]]\nkind = \"deny\"\nreason = \"r\"\nonly_if = [{ tool = \"Bash\" }, { command = 5 }]\n",
                (4, 43),
                "hook[0].only_if[1].command",
                "invalid type",
            ),
            // An untagged value says what it expected.
            (
                "[[hook]]\nkind = \"deny\"\nreason = \"r\"\nmax_fires = \"lots\"\n",
                (4, 13),
                "hook[0].max_fires",
                "expected a non-negative integer or \"unlimited\"",
            ),
            // `{ runs, exact }` is read through a hidden one-key form; errors name what was written.
            (
                "[[hook]]\nkind = \"deny\"\nreason = \"r\"\nonly_if = [{ runs = 5, exact = true }]\n",
                (4, 21),
                "hook[0].only_if[0].runs",
                "invalid type",
            ),
        ];
        for (text, (line, column), field, message) in cases {
            let (l, c, f, m) = only_error(text);
            assert_eq!(
                (l, c, f.as_deref()),
                (*line, *column, Some(*field)),
                "{text}: {m}"
            );
            assert!(m.contains(message), "{text}: {m}");
            assert!(!m.contains("_exact"), "{text}: {m}");
        }
    }

    /// The loader reads kinds by name from one table; serde's tagged form (the JSON Schema)
    /// must know each name the same way.
    #[test]
    fn every_kind_name_is_the_schema_tag() {
        use serde::Deserialize;
        for kind in crate::spec::HookEntry::KINDS {
            let value: toml::Value = toml::from_str(&format!("kind = \"{kind}\"")).unwrap();
            // A kind without required fields (`track_background`) reads from its tag alone.
            if let Err(err) = crate::spec::HookEntry::deserialize(value) {
                assert!(
                    !err.to_string().contains("unknown variant"),
                    "{kind}: {err}"
                );
            }
        }
        assert!(crate::spec::json_schema().contains("\"styleguide\""));
    }

    #[test]
    fn lowering_errors_point_at_the_nested_field() {
        let text = "[[hook]]\nkind = \"hook\"\nevents = \"PreToolUse\"\nmessage = \"m\"\nonly_if = [{ any = [{ command = \"(\" }] }]\n";
        let (line, _, field, message) = only_error(text);
        assert_eq!(line, 5);
        assert_eq!(field.as_deref(), Some("hook[0].only_if[0].any[0].command"));
        assert!(message.contains("invalid regex"), "{message}");
        let (line, _, field, _) =
            only_error("[[hook]]\nkind = \"hook\"\nevents = \"PreTool\"\nmessage = \"m\"\n");
        assert_eq!((line, field.as_deref()), (3, Some("hook[0].events")));
    }

    /// A `coding_agent` naming no agent we know fails at load, naming the field and the known
    /// names; a product's own name is taken.
    #[test]
    fn coding_agent_names_are_checked_at_load() {
        let hook = |agents: &str| {
            format!(
                "[[hook]]\nkind = \"hook\"\nevents = \"SessionStart\"\nmessage = \"m\"\n\
                 only_if = [{{ coding_agent = {agents} }}]\n"
            )
        };
        let (line, _, field, message) = only_error(&hook("[\"codex\", \"claud\"]"));
        assert_eq!(line, 5);
        assert_eq!(field.as_deref(), Some("hook[0].only_if[0].coding_agent"));
        assert!(
            message.contains("unknown agent 'claud'") && message.contains("gemini"),
            "{message}"
        );
        let mut reg = Registry::new();
        load_str(&hook("\"codex-cli|gemini\""), "t", &mut reg).unwrap();
    }

    #[test]
    fn a_bad_file_is_skipped_whole_and_the_good_ones_load() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.toml"),
            "[[hook]]\nkind = \"deny\"\nreason = \"r\"\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("b.toml"),
            "[[hook]]\nkind = \"deny\"\nreason = \"r\"\n\n[[hook]]\nkind = \"nope\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("_off.toml"), "not toml at all [").unwrap();
        let mut reg = Registry::new();
        let errors = load_dir(dir.path(), &mut reg);
        assert_eq!(
            reg.hooks().len(),
            1,
            "b.toml's good hook is skipped with its file"
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].file.ends_with("b.toml"));
    }

    /// A file of many tables loads its hooks in file order, and when some tables are bad,
    /// reports every one of them where it is, in file order, and loads nothing.
    #[test]
    fn many_tables_load_in_order_and_every_bad_one_is_reported() {
        let bad = |i: usize| i % 7 == 3;
        let table = |i: usize| {
            let reason = if bad(i) { "reasn" } else { "reason" };
            format!("[[hook]]\nkind = \"deny\"\nname = \"n{i:03}\"\n{reason} = \"r\"\n\n")
        };
        let n = 64;
        let good: String = (0..n).filter(|&i| !bad(i)).map(table).collect();
        let mut reg = Registry::new();
        load_str(&good, "t", &mut reg).unwrap();
        let names: Vec<&str> = reg.hooks().iter().map(|h| h.name.as_str()).collect();
        let expected: Vec<String> = (0..n)
            .filter(|&i| !bad(i))
            .map(|i| format!("n{i:03}"))
            .collect();
        assert_eq!(names.len(), expected.len());
        for (name, want) in names.iter().zip(&expected) {
            assert!(name.ends_with(want.as_str()), "{names:?}");
        }

        let all: String = (0..n).map(table).collect();
        let errors = load_str(&all, "t", &mut Registry::new()).unwrap_err();
        let got: Vec<(usize, Option<String>)> =
            errors.into_iter().map(|e| (e.line, e.field)).collect();
        // Each table is five lines; the misspelt key is the fourth.
        let want: Vec<(usize, Option<String>)> = (0..n)
            .filter(|&i| bad(i))
            .map(|i| (5 * i + 4, Some(format!("hook[{i}].reasn"))))
            .collect();
        assert_eq!(got, want);
    }

    /// A check after the load finds the line of a hook's key in its file, past other hooks and
    /// their test tables, and names the hook by its index.
    #[test]
    fn a_hook_key_is_located_in_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("judge.toml");
        let text = "# judges\n\n[[hook]]\nkind = \"deny\"\nreason = \"r\"\n\n  [[hook.test]]\n  \
                    input = { command = \"ls\" }\n  expect = \"allow\"\n\n[[hook]]\n\
                    kind = \"llm_gate\"\nmessage = \"m\"\n  specialty = \"nope\"\n";
        std::fs::write(&file, text).unwrap();
        assert_eq!(
            locate_hook_key(&file, 11, "specialty"),
            Some((14, 3, "hook[1].specialty".to_owned()))
        );
        // Not written in that hook (the first one), or no such file: nothing to point at.
        assert_eq!(locate_hook_key(&file, 3, "specialty"), None);
        assert_eq!(
            locate_hook_key(&dir.path().join("gone.toml"), 3, "kind"),
            None
        );

        // An indented header is a header (its table ends there), and a key written only in a
        // hook's test table or inside a multi-line string is not the hook's.
        let text = "[[hook]]\nkind = \"llm_gate\"\nmessage = '''\nspecialty = x\n'''\n\
                    [[hook.test]]\nspecialty = \"t\"\n  [[hook]]\n  kind = \"llm_gate\"\n\
                    \n  specialty = \"nope\"\n";
        std::fs::write(&file, text).unwrap();
        assert_eq!(locate_hook_key(&file, 1, "specialty"), None);
        assert_eq!(
            locate_hook_key(&file, 8, "specialty"),
            Some((11, 3, "hook[1].specialty".to_owned()))
        );
    }

    #[test]
    fn exact_on_a_condition_keeps_the_literal_prefix() {
        let mut reg = Registry::new();
        load_str(
            "[[hook]]\nkind = \"hook\"\nevents = \"PreToolUse\"\nmessage = \"m\"\nblock = true\n\
             only_if = [{ any = [{ runs = [\"rm\", \"-rf\"], exact = true }] }]\n\n\
             [[hook]]\nkind = \"hook\"\nevents = \"PreToolUse\"\nmessage = \"n\"\nblock = true\n\
             only_if = [{ runs = [\"rm\", \"-rf\"], exact = false }]\n",
            "t",
            &mut reg,
        )
        .unwrap();
        let evt = |cmd: &str| {
            capt_hook_core::Event::new(
                capt_hook_core::EventKind::PreToolUse,
                serde_json::json!({"tool_name": "Bash", "tool_input": {"command": cmd}}),
                capt_hook_core::EventContext::default(),
            )
            .unwrap()
        };
        let holds = |i: usize, cmd: &str| {
            capt_hook_core::condition::first_miss(&evt(cmd), &reg.hooks()[i].only_if, &[]).is_none()
        };
        assert!(holds(0, "rm -rf build"));
        assert!(!holds(0, "rm -fr build"), "exact: the literal prefix only");
        assert!(!holds(0, "sudo rm -rf build"));
        assert!(holds(1, "rm -fr build"), "exact = false sees spellings");
        assert!(holds(1, "sudo rm -rf build"));
    }
}

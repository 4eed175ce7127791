//! Loads `.claude/hooks/*.toml` into a [`Registry`]. Every error names the file, line, column
//! and field; a bad file is skipped whole and the others still load.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use capt_hook_core::{Condition, EventKind, Glob, Mode, Pattern, Tokens};
use serde::Deserialize;
use serde::de::IntoDeserializer;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::code;
use crate::primitives::{
    self, CommandMatch, DefError, HookDef, MaxFires, approve, block_command, deny, hook,
    set_tool_input, warn_command,
};
use crate::registry::Registry;
use crate::session;
use crate::spec::*;
use crate::testing::{Expect, InlineTest, TranscriptInput, Verdict, load_transcript};

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

/// The hook files of a directory, in load order: `*.toml` directly inside, names starting with
/// `_` skipped, sorted by the bytes of the file name.
pub fn hook_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.extension().is_some_and(|e| e == "toml")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| !n.starts_with('_'))
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
fn load_text(text: &str, stem: &str, path: &Path) -> Result<Vec<crate::Hook>, Vec<LoadError>> {
    let located = Located::new(text);
    let (defs, raw) = parse_str(text, &path.display().to_string());
    let mut errors: Vec<(usize, LoadError)> = raw
        .into_iter()
        .map(|e| {
            (
                e.span.clone().map(|s| s.start).unwrap_or(0),
                located.raw_error(path, e),
            )
        })
        .collect();
    let mut built = Vec::new();
    for (index, def, span) in defs {
        match def.build(stem) {
            Ok(h) => built.push(h),
            Err(error) => {
                let start = span.start;
                let e = located.def_error(path, LocatedDefError { index, span, error });
                errors.push((start, e));
            }
        }
    }
    if errors.is_empty() {
        Ok(built)
    } else {
        errors.sort_by_key(|(offset, _)| *offset);
        Err(errors.into_iter().map(|(_, e)| e).collect())
    }
}

/// A definition's error with the hook's position, to be located in the text.
struct LocatedDefError {
    index: usize,
    span: Range<usize>,
    error: DefError,
}

/// An error found while reading the text: a span (if known) and a field path.
struct RawError {
    span: Option<Range<usize>>,
    field: Option<String>,
    message: String,
}

/// Parses hook-file text into definitions, each with its index and span; `source` names the file
/// in test sources.
/// A lowered hook with its index in the file and the span of its table.
type ParsedDef = (usize, HookDef, Range<usize>);

fn parse_str(text: &str, source: &str) -> (Vec<ParsedDef>, Vec<RawError>) {
    let doc = match DeTable::parse(text) {
        Ok(d) => d,
        Err(e) => {
            let error = RawError {
                span: e.span(),
                field: None,
                message: clean_message(e.message()),
            };
            return (Vec::new(), vec![error]);
        }
    };
    let mut defs = Vec::new();
    let mut errors = Vec::new();
    for (key, value) in doc.get_ref() {
        if key.get_ref().as_ref() != "hook" {
            errors.push(RawError {
                span: Some(key.span()),
                field: Some(key.get_ref().to_string()),
                message: "unknown top-level key; hook files hold only [[hook]] tables".into(),
            });
            continue;
        }
        let DeValue::Array(items) = value.get_ref() else {
            errors.push(RawError {
                span: Some(value.span()),
                field: Some("hook".into()),
                message: "expected [[hook]] tables".into(),
            });
            continue;
        };
        for (index, item) in items.iter().enumerate() {
            let prefix = format!("hook[{index}]");
            let entry = match HookEntry::deserialize(item.clone().into_deserializer()) {
                Ok(e) => e,
                Err(e) => {
                    let message = clean_message(e.message());
                    let (span, field) = refine(item, &message, e.span());
                    errors.push(RawError {
                        span: Some(span),
                        field: Some(match field {
                            Some(f) => format!("{prefix}.{f}"),
                            None => prefix,
                        }),
                        message,
                    });
                    continue;
                }
            };
            match lower(entry, item, source, text) {
                Ok(def) => defs.push((index, def, item.span())),
                Err(e) => {
                    let span = locate(item, &e.field).unwrap_or(item.span());
                    errors.push(RawError {
                        span: Some(span),
                        field: Some(format!("{prefix}.{}", e.field)),
                        message: e.message,
                    });
                }
            }
        }
    }
    (defs, errors)
}

fn clean_message(m: &str) -> String {
    let m = m.trim().replace('\n', " ");
    // Untagged enums only say that nothing matched; say what would have.
    const EXPECTED: &[(&str, &str)] = &[
        ("OneOrMany", "expected a string or a list of strings"),
        (
            "MaxFiresSpec",
            "expected a non-negative integer or \"unlimited\"",
        ),
        (
            "ContentSpec",
            "expected a regex or { pattern, project_only }",
        ),
        (
            "FilePathSpec",
            "expected a glob, a list of globs, or { globs, project_only }",
        ),
        ("AnnotatedSpec", "expected a key or { key, value }"),
    ];
    for (name, text) in EXPECTED {
        if m.contains(&format!("untagged enum {name}")) {
            return (*text).to_owned();
        }
    }
    m
}

/// Narrows a serde error to the key it names (`unknown field`, `unknown variant`).
fn refine(
    item: &Spanned<DeValue<'_>>,
    message: &str,
    span: Option<Range<usize>>,
) -> (Range<usize>, Option<String>) {
    let named = message
        .split('`')
        .nth(1)
        .filter(|_| message.starts_with("unknown field") || message.starts_with("unknown variant"));
    if let Some(name) = named {
        if message.starts_with("unknown variant")
            && let Some(kind) = find_key(item, "kind")
            && let DeValue::String(s) = kind.1.get_ref()
            && s.as_ref() == name
        {
            return (kind.1.span(), Some("kind".into()));
        }
        if let Some((key_span, path)) = find_key_path(item, name, String::new()) {
            return (key_span, Some(path));
        }
    }
    if message.starts_with("missing field")
        && let Some(name) = message.split('`').nth(1)
    {
        return (span.unwrap_or(item.span()), Some(name.to_owned()));
    }
    (span.unwrap_or(item.span()), None)
}

/// Finds a key anywhere in a value tree (depth first); returns the key's span and its value.
fn find_key<'a, 'i>(
    value: &'a Spanned<DeValue<'i>>,
    name: &str,
) -> Option<(Range<usize>, &'a Spanned<DeValue<'i>>)> {
    match value.get_ref() {
        DeValue::Table(t) => {
            for (k, v) in t.iter() {
                if k.get_ref().as_ref() == name {
                    return Some((k.span(), v));
                }
            }
            t.iter().find_map(|(_, v)| find_key(v, name))
        }
        DeValue::Array(a) => a.iter().find_map(|v| find_key(v, name)),
        _ => None,
    }
}

/// Like [`find_key`], also returning the key's path (`only_if[0].nope`).
fn find_key_path(
    value: &Spanned<DeValue<'_>>,
    name: &str,
    prefix: String,
) -> Option<(Range<usize>, String)> {
    let join = |p: &str, k: &str| {
        if p.is_empty() {
            k.to_owned()
        } else {
            format!("{p}.{k}")
        }
    };
    match value.get_ref() {
        DeValue::Table(t) => {
            for (k, _) in t.iter() {
                if k.get_ref().as_ref() == name {
                    return Some((k.span(), join(&prefix, name)));
                }
            }
            t.iter()
                .find_map(|(k, v)| find_key_path(v, name, join(&prefix, k.get_ref().as_ref())))
        }
        DeValue::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_key_path(v, name, format!("{prefix}[{i}]"))),
        _ => None,
    }
}

/// Resolves a field path (`only_if[1].any[0].command`) to a span.
fn locate(item: &Spanned<DeValue<'_>>, path: &str) -> Option<Range<usize>> {
    let mut cur = item;
    for segment in path.split('.') {
        let (key, indices) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (segment, ""),
        };
        if !key.is_empty() {
            let DeValue::Table(t) = cur.get_ref() else {
                return Some(cur.span());
            };
            cur = match t.iter().find(|(k, _)| k.get_ref().as_ref() == key) {
                Some((_, v)) => v,
                None => return Some(cur.span()),
            };
        }
        for idx in indices
            .split(['[', ']'])
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse::<usize>().ok())
        {
            let DeValue::Array(a) = cur.get_ref() else {
                return Some(cur.span());
            };
            cur = a.get(idx)?;
        }
    }
    Some(cur.span())
}

/// Turns byte offsets into lines and columns.
struct Located<'t> {
    text: &'t str,
}

impl<'t> Located<'t> {
    fn new(text: &'t str) -> Self {
        Located { text }
    }

    fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text.as_bytes()[..offset];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|b| *b == b'\n')
            .map(|p| p + 1)
            .unwrap_or(0);
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        (line, column)
    }

    fn raw_error(&self, path: &Path, e: RawError) -> LoadError {
        let (line, column) = e.span.map(|s| self.line_col(s.start)).unwrap_or((1, 1));
        LoadError {
            file: path.to_path_buf(),
            line,
            column,
            field: e.field,
            message: e.message,
        }
    }

    fn def_error(&self, path: &Path, e: LocatedDefError) -> LoadError {
        // Build-time errors concern the hook as a whole or one of its top-level fields; find
        // that field's key in the hook's table.
        let key = e.error.field.split(['.', '[']).next().unwrap_or_default();
        // An array-of-tables entry's span may cover only its header, so search up to the next
        // `[[hook]]` header instead.
        let rest = &self.text[e.span.start.min(self.text.len())..];
        let end = rest
            .match_indices("\n[[hook]]")
            .map(|(i, _)| i)
            .find(|i| *i > 0)
            .unwrap_or(rest.len());
        let table = &rest[..end];
        let offset = find_key_offset(table, key)
            .map(|o| e.span.start + o)
            .unwrap_or(e.span.start);
        let (line, column) = self.line_col(offset);
        LoadError {
            file: path.to_path_buf(),
            line,
            column,
            field: Some(format!("hook[{}].{}", e.index, e.error.field)),
            message: e.error.message,
        }
    }
}

/// Offset of a line starting with `key =` inside a table's text.
fn find_key_offset(table: &str, key: &str) -> Option<usize> {
    let mut offset = 0;
    for line in table.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix(key)
            && rest.trim_start().starts_with('=')
        {
            return Some(offset + (line.len() - trimmed.len()));
        }
        offset += line.len();
    }
    None
}

/// Parses hook-file text and registers its hooks (tests and embedding).
pub fn load_str(text: &str, stem: &str, registry: &mut Registry) -> Result<(), Vec<LoadError>> {
    let path = PathBuf::from(format!("{stem}.toml"));
    for h in load_text(text, stem, &path)? {
        registry.push(h);
    }
    Ok(())
}

fn err(field: impl Into<String>, message: impl Into<String>) -> DefError {
    DefError::new(field, message)
}

fn regex(field: &str, source: &str, mode: Mode) -> Result<Pattern, DefError> {
    Pattern::new(source, mode).map_err(|e| err(field, e.to_string()))
}

fn globs(field: &str, list: &[String]) -> Result<Vec<Glob>, DefError> {
    if list.is_empty() {
        return Err(err(field, "the glob list is empty"));
    }
    list.iter().map(|g| Ok(Glob::new(g))).collect()
}

fn tokens(field: &str, list: &[String]) -> Result<Tokens, DefError> {
    Tokens::new(list).map_err(|e| err(field, e.to_string()))
}

/// Compiles a condition; `field` is its path, used in errors.
pub fn compile_condition(spec: &ConditionSpec, field: &str) -> Result<Condition, DefError> {
    let sub = |key: &str| format!("{field}.{key}");
    Ok(match spec {
        ConditionSpec::Tool(names) => {
            let names = names.to_vec();
            if capt_hook_core::condition::split_names(&names).is_empty() {
                return Err(err(sub("tool"), "no tool names given"));
            }
            Condition::tool(&names)
        }
        ConditionSpec::McpTool(b) => Condition::McpTool(*b),
        ConditionSpec::Runs(t) => Condition::Runs(tokens(&sub("runs"), t)?),
        ConditionSpec::PrimaryRuns(t) => Condition::PrimaryRuns(tokens(&sub("primary_runs"), t)?),
        ConditionSpec::Command(p) => Condition::Command(regex(&sub("command"), p, Mode::Plain)?),
        ConditionSpec::ToolInput(fields) => {
            if fields.is_empty() {
                return Err(err(sub("tool_input"), "name at least one field"));
            }
            Condition::ToolInput(
                fields
                    .iter()
                    .map(|(k, v)| {
                        Ok((
                            k.clone(),
                            regex(&sub(&format!("tool_input.{k}")), v, Mode::Multiline)?,
                        ))
                    })
                    .collect::<Result<_, DefError>>()?,
            )
        }
        ConditionSpec::Content(c) => {
            let (pattern, project_only) = match c {
                ContentSpec::Pattern(p) => (p, true),
                ContentSpec::Options {
                    pattern,
                    project_only,
                } => (pattern, *project_only),
            };
            Condition::Content {
                pattern: regex(&sub("content"), pattern, Mode::Multiline)?,
                project_only,
            }
        }
        ConditionSpec::FilePath(f) => {
            let (list, project_only) = match f {
                FilePathSpec::One(g) => (vec![g.clone()], true),
                FilePathSpec::Many(g) => (g.clone(), true),
                FilePathSpec::Options {
                    globs,
                    project_only,
                } => (globs.to_vec(), *project_only),
            };
            Condition::file_path(globs(&sub("file_path"), &list)?, project_only)
        }
        ConditionSpec::TestFile(b) => Condition::TestFile(*b),
        ConditionSpec::SourceEdits(lang) => {
            if lang.trim().is_empty() {
                return Err(err(sub("source_edits"), "name a language (py, rs, ts, …)"));
            }
            Condition::source_edits(lang)
        }
        ConditionSpec::Agent(names) => {
            Condition::Agent(capt_hook_core::condition::split_names(&names.to_vec()))
        }
        ConditionSpec::FromSubagent(b) => Condition::FromSubagent(*b),
        ConditionSpec::SkipPermissions(b) => Condition::SkipPermissions(*b),
        ConditionSpec::PermissionMode(m) => Condition::PermissionMode(m.to_vec()),
        ConditionSpec::Annotated(a) => match a {
            AnnotatedSpec::Key(k) => Condition::Annotated {
                key: k.clone(),
                value: None,
                session: false,
            },
            AnnotatedSpec::Options { key, value, scope } => Condition::Annotated {
                key: key.clone(),
                value: value.clone(),
                session: *scope == AnnotatedScope::Session,
            },
        },
        ConditionSpec::ReadOnlyCommand(b) => Condition::ReadOnlyCommand(*b),
        ConditionSpec::Pattern(p) => {
            let (pattern, lang, project_only) = match p {
                PatternCondSpec::Pattern(p) => (p, None, true),
                PatternCondSpec::Options {
                    pattern,
                    lang,
                    project_only,
                } => (pattern, lang.as_deref(), *project_only),
            };
            let compiled = code::LangPattern::new(pattern, lang)
                .map_err(|e| err(sub("pattern"), e.message))?;
            code::pattern_condition(compiled, project_only)
        }
        ConditionSpec::RanCommand(t) => Condition::RanCommand(tokens(&sub("ran_command"), t)?),
        ConditionSpec::TouchedFile(g) => {
            let list = g.to_vec();
            globs(&sub("touched_file"), &list)?;
            Condition::TouchedFile(list)
        }
        ConditionSpec::ReadFile(g) => {
            let list = g.to_vec();
            globs(&sub("read_file"), &list)?;
            Condition::ReadFile(list)
        }
        ConditionSpec::UsedTool(u) => {
            let (names, scope) = match u {
                UsedToolSpec::One(n) => (vec![n.clone()], ScopeSpec::Turn),
                UsedToolSpec::Many(n) => (n.clone(), ScopeSpec::Turn),
                UsedToolSpec::Options { names, scope } => (names.to_vec(), *scope),
            };
            let names = capt_hook_core::condition::split_names(&names);
            if names.is_empty() {
                return Err(err(sub("used_tool"), "no tool names given"));
            }
            Condition::UsedTool {
                names,
                scope: scope_of(scope),
            }
        }
        ConditionSpec::UsedSkill(u) => {
            let (names, scope, subagents) = match u {
                UsedSkillSpec::One(n) => (vec![n.clone()], ScopeSpec::Turn, true),
                UsedSkillSpec::Many(n) => (n.clone(), ScopeSpec::Turn, true),
                UsedSkillSpec::Options {
                    names,
                    scope,
                    subagents,
                } => (names.to_vec(), *scope, *subagents),
            };
            if names.is_empty() {
                return Err(err(sub("used_skill"), "no skill names given"));
            }
            Condition::UsedSkill {
                names,
                scope: scope_of(scope),
                subagents,
            }
        }
        ConditionSpec::UserSaid(u) => {
            let (pattern, scope) = match u {
                UserSaidSpec::Pattern(p) => (p, ScopeSpec::Turn),
                UserSaidSpec::Options { pattern, scope } => (pattern, *scope),
            };
            Condition::UserSaid {
                pattern: regex(&sub("user_said"), pattern, Mode::IgnoreCase)?,
                scope: scope_of(scope),
            }
        }
        ConditionSpec::TextMatches(p) => {
            Condition::TextMatches(regex(&sub("text_matches"), p, Mode::Multiline)?)
        }
        ConditionSpec::Waiting(b) => Condition::Waiting(*b),
        ConditionSpec::InPlanMode(b) => Condition::InPlanMode(*b),
        ConditionSpec::Not(inner) => {
            Condition::Not(Box::new(compile_condition(inner, &sub("not"))?))
        }
        ConditionSpec::Any(list) => Condition::Any(
            list.iter()
                .enumerate()
                .map(|(i, c)| compile_condition(c, &format!("{field}.any[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        ConditionSpec::All(list) => Condition::All(
            list.iter()
                .enumerate()
                .map(|(i, c)| compile_condition(c, &format!("{field}.all[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
    })
}

fn command_match(
    argv: &Option<Vec<String>>,
    pattern: &Option<String>,
) -> Result<CommandMatch, DefError> {
    match (argv, pattern) {
        (Some(_), Some(_)) => Err(err("argv", "give either `argv` or `pattern`, not both")),
        (Some(a), None) => CommandMatch::argv(a),
        (None, Some(p)) => CommandMatch::pattern(p),
        (None, None) => Err(err(
            "argv",
            "give `argv` (a token list) or `pattern` (a regex)",
        )),
    }
}

fn signals(spec: &Option<SignalsSpec>) -> Result<Option<session::Signals>, DefError> {
    let Some(spec) = spec else {
        return Ok(None);
    };
    let compile = |i: usize, p: &str| regex(&format!("signals.patterns[{i}]"), p, Mode::Plain);
    let out = match spec {
        SignalsSpec::List(list) => {
            if list.is_empty() {
                return Err(err("signals", "list at least one pattern"));
            }
            let patterns = list
                .iter()
                .enumerate()
                .map(|(i, p)| compile(i, p))
                .collect::<Result<Vec<_>, _>>()?;
            session::Signals::any_of(patterns)
        }
        SignalsSpec::Options {
            patterns,
            threshold,
            window,
            origin,
        } => {
            if patterns.is_empty() {
                return Err(err("signals.patterns", "list at least one pattern"));
            }
            let mut compiled = Vec::new();
            for (i, p) in patterns.iter().enumerate() {
                let (text, weight) = match p {
                    SignalPatternSpec::Pattern(t) => (t, 1),
                    SignalPatternSpec::Weighted { pattern, weight } => (pattern, *weight),
                };
                if weight == 0 {
                    return Err(err(
                        format!("signals.patterns[{i}].weight"),
                        "weights must be positive",
                    ));
                }
                compiled.push((compile(i, text)?, weight));
            }
            if *threshold == 0 {
                return Err(err("signals.threshold", "the threshold must be positive"));
            }
            let window = match window {
                None => session::SignalWindow::Last(15),
                Some(WindowSpec::Count(0)) => {
                    return Err(err(
                        "signals.window",
                        "the window must hold at least one entry",
                    ));
                }
                Some(WindowSpec::Count(n)) => session::SignalWindow::Last(*n),
                Some(WindowSpec::Turn(_)) => session::SignalWindow::Turn,
            };
            session::Signals {
                patterns: compiled,
                threshold: *threshold,
                window,
                include_user: *origin == OriginSpec::Any,
            }
        }
    };
    Ok(Some(out))
}

fn scope_of(s: ScopeSpec) -> capt_hook_core::condition::Scope {
    match s {
        ScopeSpec::Turn => capt_hook_core::condition::Scope::Turn,
        ScopeSpec::Session => capt_hook_core::condition::Scope::Session,
    }
}

fn code_lang(id: Option<&str>) -> Result<capt_hook_code::Lang, DefError> {
    let id = id.unwrap_or("py");
    capt_hook_code::Lang::from_id(id).ok_or_else(|| {
        err(
            "lang",
            format!("unknown language `{id}` (known: py, ts, tsx, js, rs, go, bash)"),
        )
    })
}

fn code_pattern(
    pattern: &str,
    lang: capt_hook_code::Lang,
) -> Result<capt_hook_code::CodePattern, DefError> {
    capt_hook_code::CodePattern::new(pattern, lang).map_err(|e| err("pattern", e.to_string()))
}

fn lint_options(
    lang: capt_hook_code::Lang,
    message: &str,
    sep: &Option<String>,
    max_shown: Option<usize>,
    trigger: &Option<String>,
    block: bool,
) -> Result<code::LintOptions, DefError> {
    if message.trim().is_empty() {
        return Err(err(
            "message",
            "a lint needs a message (use {violations} for the list)",
        ));
    }
    let mut o = code::LintOptions::new(lang, message);
    if let Some(s) = sep {
        o.sep = s.clone();
    }
    if let Some(m) = max_shown {
        if m == 0 {
            return Err(err("max_shown", "show at least one violation"));
        }
        o.max_shown = m;
    }
    o.trigger = trigger.clone();
    o.block = block;
    Ok(o)
}

macro_rules! common {
    ($def:expr, $spec:expr, $item:expr, $source:expr, $text:expr) => {{
        let spec = $spec;
        let mut d: HookDef = $def;
        if let Some(label) = &spec.name {
            d = d.name(label.clone());
        }
        if let Some(events) = &spec.events {
            let kinds = events
                .to_vec()
                .iter()
                .map(|name| {
                    name.parse::<EventKind>().map_err(|_| {
                        err(
                            "events",
                            format!(
                                "unknown event `{name}`; valid events are {}",
                                EventKind::valid_names()
                            ),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            d = d.events(&kinds);
        }
        for (i, c) in spec.only_if.iter().enumerate() {
            d = d.only_if(compile_condition(c, &format!("only_if[{i}]"))?);
        }
        for (i, c) in spec.skip_if.iter().enumerate() {
            d = d.skip_if(compile_condition(c, &format!("skip_if[{i}]"))?);
        }
        if let Some(m) = spec.max_fires {
            d = d.max_fires(match m {
                MaxFiresSpec::Count(n) => MaxFires::Count(n),
                MaxFiresSpec::Unlimited(_) => MaxFires::Unlimited,
            });
        }
        d = d.advisory_on_deny(spec.advisory_on_deny);
        if let Some(s) = spec.skip_planning_agents {
            d = d.skip_planning_agents(s);
        }
        d = d
            .respect_gitignore(spec.respect_gitignore)
            .run_async(spec.is_async)
            .mandatory(spec.mandatory)
            .approve(spec.approve);
        if let Some(r) = spec.repeat {
            d = d.repeat(r);
        }
        let located = Located::new($text);
        d = d.source($source, located.line_col($item.span().start).0);
        for (i, t) in spec.test.iter().enumerate() {
            let field = format!("test[{i}]");
            let line = locate($item, &field).map(|s| located.line_col(s.start).0);
            d = d.with_test(lower_test(t, &field, line, &$source)?);
        }
        d
    }};
}

fn lower(
    entry: HookEntry,
    item: &Spanned<DeValue<'_>>,
    source: &str,
    text: &str,
) -> Result<HookDef, DefError> {
    let source = source.to_owned();
    let def = match &entry {
        HookEntry::Hook(s) => {
            if s.events.is_none() {
                return Err(err("events", "`hook` needs `events`"));
            }
            common!(
                hook(&[], s.message.clone()).block(s.block),
                s,
                item,
                source.clone(),
                text
            )
        }
        HookEntry::BlockCommand(s) => {
            let mut d = block_command(command_match(&s.argv, &s.pattern)?, s.reason.clone());
            if let Some(h) = &s.hint {
                d = d.hint(h.clone());
            }
            common!(d, s, item, source.clone(), text)
        }
        HookEntry::WarnCommand(s) => common!(
            warn_command(command_match(&s.argv, &s.pattern)?, s.message.clone()),
            s,
            item,
            source.clone(),
            text
        ),
        HookEntry::RewriteCommand(s) => {
            let mut d = if code::is_structural(&s.pattern) {
                code::rewrite_command_structural(&s.pattern, &s.replace)?
            } else {
                primitives::rewrite_command(&s.pattern, s.replace.clone())?
            };
            if let Some(n) = &s.note {
                d = d.note(n.clone());
            }
            common!(d, s, item, source.clone(), text)
        }
        HookEntry::SetToolInput(s) => {
            let mut d = set_tool_input(&s.tool, &s.field, s.value.clone());
            if let Some(n) = &s.note {
                d = d.note(n.clone());
            }
            common!(d, s, item, source.clone(), text)
        }
        HookEntry::Approve(s) => common!(approve(s.label.clone()), s, item, source.clone(), text),
        HookEntry::Deny(s) => common!(deny(s.reason.clone()), s, item, source.clone(), text),
        HookEntry::Lint(s) => {
            let lang = code_lang(s.lang.as_deref())?;
            let check = match (&s.pattern, &s.regex) {
                (Some(_), Some(_)) => {
                    return Err(err("pattern", "give either `pattern` or `regex`, not both"));
                }
                (Some(p), None) => code::LintCheck::Pattern(code_pattern(p, lang)?),
                (None, Some(r)) => code::LintCheck::Regex(regex("regex", r, Mode::Plain)?),
                (None, None) => return Err(err("pattern", "give `pattern` (ast-grep) or `regex`")),
            };
            let options = lint_options(lang, &s.message, &s.sep, s.max_shown, &s.trigger, s.block)?;
            common!(code::lint(check, options), s, item, source.clone(), text)
        }
        HookEntry::DiffLint(s) => {
            let lang = code_lang(s.lang.as_deref())?;
            let pattern = code_pattern(&s.pattern, lang)?;
            let options = lint_options(lang, &s.message, &s.sep, s.max_shown, &s.trigger, s.block)?;
            common!(
                code::diff_lint(pattern, options),
                s,
                item,
                source.clone(),
                text
            )
        }
        HookEntry::RewriteCode(s) => {
            let pattern = code::LangPattern::new(&s.pattern, s.lang.as_deref())?;
            let d = code::rewrite_code(pattern, s.replace.clone(), s.note.clone(), s.project_only);
            common!(d, s, item, source.clone(), text)
        }
        HookEntry::Nudge(s) => {
            let mut o = session::NudgeOptions::new(s.message.clone());
            o.block = s.block;
            o.signals = signals(&s.signals)?;
            if s.message.trim().is_empty() {
                return Err(err("message", "a nudge needs a message"));
            }
            common!(session::nudge(o), s, item, source.clone(), text)
        }
        HookEntry::Gate(s) => {
            let mut o = session::NudgeOptions::new(s.message.clone());
            o.block = true;
            o.signals = signals(&s.signals)?;
            if s.message.trim().is_empty() {
                return Err(err("message", "a gate needs a message"));
            }
            common!(session::nudge(o), s, item, source.clone(), text)
        }
        HookEntry::Workflow(s) => {
            if s.events.is_some() {
                return Err(err(
                    "events",
                    "a workflow always guards SubagentStop; drop `events`",
                ));
            }
            let mut steps = Vec::new();
            for (i, st) in s.steps.iter().enumerate() {
                let check = compile_condition(&st.check, &format!("steps[{i}].check"))?;
                steps.push(session::Step::condition(
                    st.name.clone().unwrap_or_default(),
                    check,
                    st.message.clone(),
                ));
            }
            let mut artifacts = Vec::new();
            for (i, a) in s.artifacts.iter().enumerate() {
                let asserts = a
                    .asserts
                    .iter()
                    .map(|x| session::Assert {
                        pointer: x.pointer.clone(),
                        max: x.max,
                        min: x.min,
                        equals: x.equals.clone(),
                        message: x.message.clone(),
                    })
                    .collect();
                let artifact = session::Artifact::new(a.path.clone(), a.schema.as_ref(), asserts)
                    .map_err(|e| err(format!("artifacts[{i}].schema"), e.message))?;
                artifacts.push(artifact);
            }
            let flow = session::Workflow {
                label: s.label.clone(),
                marker: s.marker.clone(),
                steps,
                artifacts,
                post_complete: None,
            };
            common!(session::workflow(flow)?, s, item, source.clone(), text)
        }
        HookEntry::Styleguide(s) => {
            if s.rules.is_empty() {
                return Err(err("rules", "list at least one rule"));
            }
            let default_lang = s.lang.as_deref();
            let mut rules = Vec::new();
            for (i, r) in s.rules.iter().enumerate() {
                let field = format!("rules[{i}]");
                let lang = code_lang(r.lang.as_deref().or(default_lang))
                    .map_err(|e| err(format!("{field}.lang"), e.message))?;
                let p = code_pattern(&r.pattern, lang)
                    .map_err(|e| err(format!("{field}.pattern"), e.message))?;
                rules.push(capt_hook_code::StyleRule::pattern(
                    r.name.clone(),
                    p,
                    r.message.clone(),
                    r.diff,
                ));
            }
            let d = code::styleguide(rules, s.block, s.max_shown.unwrap_or(5));
            common!(d, s, item, source.clone(), text)
        }
    };
    Ok(def)
}

fn lower_test(
    t: &TestSpec,
    field: &str,
    line: Option<usize>,
    source: &str,
) -> Result<InlineTest, DefError> {
    // A fixture file is read now, so a missing or broken one is a load error naming the test.
    let mut input = t.input.clone();
    if let Some(spec) = &t.input.transcript {
        let base = Path::new(source).parent().unwrap_or(Path::new("."));
        let lines =
            load_transcript(spec, base).map_err(|e| err(format!("{field}.input.transcript"), e))?;
        input.transcript = Some(TranscriptInput::Lines(lines));
    }
    let verdict = match t.expect {
        ExpectSpec::Block => Verdict::Block,
        ExpectSpec::Warn => Verdict::Warn,
        ExpectSpec::Allow => Verdict::Allow {
            explicit: t.explicit,
        },
        ExpectSpec::Ask => Verdict::Ask,
        ExpectSpec::Rewrite => Verdict::Rewrite,
    };
    if t.fields.is_some() && verdict != Verdict::Rewrite {
        return Err(err(
            format!("{field}.fields"),
            "`fields` only applies to expect = \"rewrite\"",
        ));
    }
    // Rewrite patterns are substrings, not regexes; every other text check is a regex.
    if let Some(p) = &t.pattern
        && verdict != Verdict::Rewrite
    {
        regex(&format!("{field}.pattern"), p, Mode::Plain)?;
    }
    if let Some(p) = &t.system_message {
        regex(&format!("{field}.system_message"), p, Mode::Plain)?;
    }
    Ok(InlineTest {
        input,
        expect: Expect {
            verdict,
            pattern: t.pattern.clone(),
            fields: t.fields.clone().unwrap_or_default().into_iter().collect(),
            system_message: t.system_message.clone(),
        },
        line,
    })
}

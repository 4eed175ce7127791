//! Where an error sits: serde's and toml's messages and spans turned into a line, a column and
//! the field path (`hook[3].only_if[0].all[0].command`).

use std::ops::Range;
use std::path::Path;

use toml::Spanned;
use toml::de::DeValue;

use super::*;

pub(super) fn clean_message(m: &str) -> String {
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
    // The one-key forms `{ runs = [...], exact = true }` is rewritten to are not for writing.
    super::parse::EXACT_FORMS
        .iter()
        .fold(m, |m, (_, hidden)| m.replace(&format!(", `{hidden}`"), ""))
}

/// Narrows a serde error to the key it names (`unknown field`, `unknown variant`).
pub(super) fn refine(
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
pub(super) fn find_key<'a, 'i>(
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
pub(super) fn find_key_path(
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
pub(super) fn locate(item: &Spanned<DeValue<'_>>, path: &str) -> Option<Range<usize>> {
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
pub(super) struct Located<'t> {
    pub(super) text: &'t str,
}

impl<'t> Located<'t> {
    pub(super) fn new(text: &'t str) -> Self {
        Located { text }
    }

    pub(super) fn line_col(&self, offset: usize) -> (usize, usize) {
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

    pub(super) fn raw_error(&self, path: &Path, e: RawError) -> LoadError {
        let (line, column) = e.span.map(|s| self.line_col(s.start)).unwrap_or((1, 1));
        LoadError {
            file: path.to_path_buf(),
            line,
            column,
            field: e.field,
            message: e.message,
        }
    }

    pub(super) fn def_error(&self, path: &Path, e: LocatedDefError) -> LoadError {
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
pub(super) fn find_key_offset(table: &str, key: &str) -> Option<usize> {
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

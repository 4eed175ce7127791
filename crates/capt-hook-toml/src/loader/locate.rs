//! Where an error sits: a field path (`hook[3].only_if[0].all[0].command`, from serde's own
//! path) resolved to a span, and spans turned into lines and columns.

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
    EXACT_FORMS
        .iter()
        .fold(m, |m, (_, hidden)| m.replace(&format!(", `{hidden}`"), ""))
}

/// Resolves a field path (`only_if[1].any[0].command`) to the span of its value; a path that
/// leaves the tree resolves to the deepest table or array it reached.
pub(super) fn locate(item: &Spanned<DeValue<'_>>, path: &str) -> Range<usize> {
    walk(item, path, false).unwrap_or_else(|deepest| deepest)
}

/// The span of the value `path` names, when every segment of it is written.
pub(super) fn locate_exact(item: &Spanned<DeValue<'_>>, path: &str) -> Option<Range<usize>> {
    walk(item, path, false).ok()
}

/// Like [`locate`], but a path ending in a key resolves to the key itself (where an unknown
/// field was written).
pub(super) fn locate_key(item: &Spanned<DeValue<'_>>, path: &str) -> Range<usize> {
    walk(item, path, true).unwrap_or_else(|deepest| deepest)
}

/// The span `path` resolves to, or the deepest span reached when it leaves the tree.
fn walk(
    item: &Spanned<DeValue<'_>>,
    path: &str,
    key_span: bool,
) -> Result<Range<usize>, Range<usize>> {
    let mut cur = item;
    let segments: Vec<&str> = path.split('.').collect();
    for (n, segment) in segments.iter().enumerate() {
        let (key, indices) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (*segment, ""),
        };
        if !key.is_empty() {
            let DeValue::Table(t) = cur.get_ref() else {
                return Err(cur.span());
            };
            let Some((k, v)) = t.iter().find(|(k, _)| k.get_ref().as_ref() == key) else {
                return Err(cur.span());
            };
            if key_span && indices.is_empty() && n + 1 == segments.len() {
                return Ok(k.span());
            }
            cur = v;
        }
        for idx in indices
            .split(['[', ']'])
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse::<usize>().ok())
        {
            let DeValue::Array(a) = cur.get_ref() else {
                return Err(cur.span());
            };
            cur = a.get(idx).ok_or(cur.span())?;
        }
    }
    Ok(cur.span())
}

/// The key written at `span` in the table `path` names (`""`: the hook's own table). serde
/// reports an unknown field or condition name at its key, and its path stops at the table
/// holding it; the span, not the message's text, says which key it was.
pub(super) fn key_at(
    item: &Spanned<DeValue<'_>>,
    path: &str,
    span: &Range<usize>,
) -> Option<String> {
    let mut cur = item;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let (key, indices) = segment.split_at(segment.find('[').unwrap_or(segment.len()));
        if !key.is_empty() {
            let DeValue::Table(t) = cur.get_ref() else {
                return None;
            };
            cur = t.iter().find(|(k, _)| k.get_ref().as_ref() == key)?.1;
        }
        for idx in indices
            .split(['[', ']'])
            .filter_map(|s| s.parse::<usize>().ok())
        {
            let DeValue::Array(a) = cur.get_ref() else {
                return None;
            };
            cur = a.get(idx)?;
        }
    }
    let DeValue::Table(t) = cur.get_ref() else {
        return None;
    };
    t.iter()
        .find(|(k, _)| k.span() == *span)
        .map(|(k, _)| k.get_ref().to_string())
}

/// Turns byte offsets into lines and columns. Every hook and inline test asks for its line, so
/// the line starts are found once per file: a lookup is a binary search, not a rescan.
pub(super) struct Located<'t> {
    pub(super) text: &'t str,
    /// Byte offset of each line's first byte.
    line_starts: Vec<usize>,
}

impl<'t> Located<'t> {
    pub(super) fn new(text: &'t str) -> Self {
        let line_starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|p| p + 1))
            .collect();
        Located { text, line_starts }
    }

    pub(super) fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        // The last line starting at or before the offset (a newline itself ends its line).
        let line = self.line_starts.partition_point(|s| *s <= offset);
        let line_start = self.line_starts[line - 1];
        let before = &self.text.as_bytes()[..offset];
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        (line, column)
    }

    pub(super) fn raw_error(&self, path: &Path, e: RawError) -> LoadError {
        let (line, column) = e
            .span
            .as_ref()
            .map(|s| self.line_col(s.start))
            .unwrap_or((1, 1));
        LoadError {
            file: path.to_path_buf(),
            line,
            column,
            field: e.field,
            span: e.span,
            message: e.message,
        }
    }

    pub(super) fn def_error(&self, path: &Path, e: LocatedDefError) -> LoadError {
        let (line, column) = self.line_col(e.span.start);
        LoadError {
            file: path.to_path_buf(),
            line,
            column,
            field: Some(format!("hook[{}].{}", e.index, e.error.field)),
            span: Some(e.span),
            message: e.error.message,
        }
    }
}

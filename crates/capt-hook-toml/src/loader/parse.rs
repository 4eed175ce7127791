//! Hook-file text to hooks: each `[[hook]]` table read, lowered and built, or its error located.

use std::ops::Range;

use serde::de::IntoDeserializer;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::spec::*;
use capt_hook_engine::primitives::{DefError, HookDef};

use super::*;

/// A definition's error with where it points: the key of the field it names when the hook's
/// table writes it, else the hook.
pub(super) struct LocatedDefError {
    pub(super) index: usize,
    pub(super) span: Range<usize>,
    pub(super) error: DefError,
}

/// An error found while reading the text: a span (if known) and a field path.
pub(super) struct RawError {
    pub(super) span: Option<Range<usize>>,
    pub(super) field: Option<String>,
    pub(super) message: String,
}

/// A file's tables, in order: each one's hook, or an error with its offset in the text (for
/// sorting). A file holds nothing else, so anything else there is an error too.
pub(super) type Tables = Vec<Result<capt_hook_engine::Hook, (usize, LoadError)>>;

/// Reads, lowers and builds every `[[hook]]` table of a file's text (`path` names the file in
/// errors and hook sources; `stem` prefixes hook names).
pub(super) fn parse_str(located: &Located, path: &Path, stem: &str) -> Tables {
    let raw = |e: RawError| {
        let offset = e.span.as_ref().map_or(0, |s| s.start);
        Err((offset, located.raw_error(path, e)))
    };
    let doc = match DeTable::parse(located.text) {
        Ok(d) => d,
        Err(e) => {
            return vec![raw(RawError {
                span: e.span(),
                field: None,
                message: clean_message(e.message()),
            })];
        }
    };
    let source = path.display().to_string();
    let mut tables = Vec::new();
    for (key, value) in doc.get_ref() {
        if key.get_ref().as_ref() != "hook" {
            tables.push(raw(RawError {
                span: Some(key.span()),
                field: Some(key.get_ref().to_string()),
                message: "unknown top-level key; hook files hold only [[hook]] tables".into(),
            }));
            continue;
        }
        let DeValue::Array(items) = value.get_ref() else {
            tables.push(raw(RawError {
                span: Some(value.span()),
                field: Some("hook".into()),
                message: "expected [[hook]] tables".into(),
            }));
            continue;
        };
        tables.extend(items.iter().enumerate().map(|(index, item)| {
            match table(index, item, &source, located) {
                Ok(def) => def.build(stem).map_err(|error| {
                    // Build-time errors concern the hook as a whole or one of its top-level
                    // fields: at that field's key when the table has it, else at the hook.
                    let key = error.field.split(['.', '[']).next().unwrap_or_default();
                    let span = locate_key(item, key);
                    let start = item.span().start;
                    (
                        start,
                        located.def_error(path, LocatedDefError { index, span, error }),
                    )
                }),
                Err(e) => raw(e),
            }
        }));
    }
    tables
}

/// One `[[hook]]` table read and lowered, or what is wrong with it.
fn table(
    index: usize,
    item: &Spanned<DeValue<'_>>,
    source: &str,
    located: &Located,
) -> Result<HookDef, RawError> {
    let prefix = format!("hook[{index}]");
    // Errors are located in the table as written, not in its rewritten form.
    let written = item;
    // Copied only to rewrite: a hook's table is the bulk of a worker's start-up work, and most
    // hooks have no `exact` key.
    let rewritten;
    let item = if has_exact(item) {
        rewritten = exact_conditions(item.clone());
        &rewritten
    } else {
        item
    };
    let entry = read_entry(written, item).map_err(|e| RawError {
        field: Some(match e.field {
            Some(f) => format!("{prefix}.{f}"),
            None => prefix.clone(),
        }),
        ..e
    })?;
    lower(entry, item, source, located).map_err(|e| {
        let field = visible_path(&e.field).unwrap_or_default();
        let span = locate(written, &field);
        RawError {
            span: Some(span),
            field: Some(format!("{prefix}.{field}")),
            message: e.message,
        }
    })
}

/// Reads one `[[hook]]` table: its `kind` picks the spec, serde reads the rest and names the
/// path of what it rejects, and that path finds the span.
fn read_entry(
    written: &Spanned<DeValue<'_>>,
    item: &Spanned<DeValue<'_>>,
) -> Result<HookEntry, RawError> {
    let error = |span: Range<usize>, field: Option<String>, message: String| RawError {
        span: Some(span),
        field,
        message,
    };
    let DeValue::Table(table) = item.get_ref() else {
        return Err(error(item.span(), None, "expected a [[hook]] table".into()));
    };
    let Some(kind) = table
        .iter()
        .find(|(k, _)| k.get_ref() == "kind")
        .map(|(_, v)| v)
    else {
        return Err(error(
            item.span(),
            Some("kind".into()),
            "missing field `kind`".into(),
        ));
    };
    let DeValue::String(name) = kind.get_ref() else {
        return Err(error(
            kind.span(),
            Some("kind".into()),
            "expected a string naming the kind".into(),
        ));
    };
    let rest = || {
        let rest: DeTable<'_> = table
            .iter()
            .filter(|(k, _)| k.get_ref() != "kind")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Spanned::new(item.span(), DeValue::Table(rest)).into_deserializer()
    };
    // Read without tracking the path first; only a table that fails is read again to say where.
    if let Some(Ok(entry)) = HookEntry::read_unpathed(name, rest()) {
        return Ok(entry);
    }
    let Some(read) = HookEntry::read(name, rest()) else {
        let expected = HookEntry::KINDS
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(error(
            kind.span(),
            Some("kind".into()),
            format!("unknown variant `{name}`, expected one of {expected}"),
        ));
    };
    read.map_err(|e| {
        // Serde's path ends in an unknown field's key (it records a key before reading its
        // value) and at the table that lacks a missing one, whose message names the key.
        let field = visible_path(&e.path().to_string());
        let message = clean_message(e.inner().message());
        // The parser's own span: a key for a bad key, a value for a bad value, the table for a
        // missing key. An untagged enum buffers its value and reports the table around it, or
        // nothing; then the value the path names is the closer place.
        let value = field.as_deref().and_then(|f| locate_exact(written, f));
        let span = match (e.inner().span(), value) {
            (Some(s), Some(v)) if s.start <= v.start && v.end <= s.end => v,
            (Some(s), _) => s,
            (None, Some(v)) => v,
            (None, None) => field.as_deref().map_or(item.span(), |f| locate(written, f)),
        };
        // An unknown condition name is a variant: the path stops at its table, the span is
        // the key's.
        let field = match key_at(written, field.as_deref().unwrap_or(""), &span) {
            Some(key) => Some(match field {
                Some(path) => format!("{path}.{key}"),
                None => key,
            }),
            None => field,
        };
        error(span, field, message)
    })
}

/// Serde's path with the hidden one-key `exact` forms named as written, `None` at the root.
fn visible_path(path: &str) -> Option<String> {
    if path == "." {
        return None;
    }
    let path = EXACT_FORMS
        .iter()
        .fold(path.to_owned(), |p, (key, hidden)| p.replace(hidden, key));
    Some(path)
}

/// Whether any table in `value` has an `exact` key, which [`exact_conditions`] rewrites.
fn has_exact(value: &Spanned<DeValue<'_>>) -> bool {
    match value.get_ref() {
        DeValue::Array(items) => items.iter().any(has_exact),
        DeValue::Table(table) => table
            .iter()
            .any(|(k, v)| k.get_ref() == "exact" || has_exact(v)),
        _ => false,
    }
}

/// Rewrites every `{ runs = [...], exact = true }` table (and `primary_runs`, `ran_command`)
/// to the one-key form serde reads as a condition; `exact = false` just drops the key.
pub(super) fn exact_conditions(mut value: Spanned<DeValue<'_>>) -> Spanned<DeValue<'_>> {
    match value.get_mut() {
        DeValue::Array(items) => {
            for item in items.iter_mut() {
                let taken = std::mem::replace(item, Spanned::new(0..0, DeValue::Boolean(false)));
                *item = exact_conditions(taken);
            }
        }
        DeValue::Table(table) => {
            let exact =
                table
                    .iter()
                    .find(|(k, _)| k.get_ref() == "exact")
                    .and_then(|(_, v)| match v.get_ref() {
                        DeValue::Boolean(b) => Some(*b),
                        _ => None,
                    });
            let form = EXACT_FORMS
                .iter()
                .find(|(key, _)| table.iter().any(|(k, _)| k.get_ref() == *key));
            if let (Some(exact), Some((key, exact_key)), 2) = (exact, form, table.len()) {
                let rebuilt: DeTable<'_> = std::mem::replace(table, DeTable::new())
                    .into_iter()
                    .filter(|(k, _)| k.get_ref() != "exact")
                    .map(|(k, v)| {
                        if exact && k.get_ref() == *key {
                            (Spanned::new(k.span(), (*exact_key).into()), v)
                        } else {
                            (k, v)
                        }
                    })
                    .collect();
                *table = rebuilt;
            }
            let keys: Vec<_> = table.keys().cloned().collect();
            for k in keys {
                if let Some(v) = table.remove(&k) {
                    table.insert(k, exact_conditions(v));
                }
            }
        }
        _ => {}
    }
    value
}

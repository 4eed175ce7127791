//! Hook-file text to typed specs, each with its index and the span of its table.

use std::ops::Range;

use serde::Deserialize;
use serde::de::IntoDeserializer;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::primitives::{DefError, HookDef};
use crate::spec::*;

use super::*;

/// A definition's error with the hook's position, to be located in the text.
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

/// Parses hook-file text into definitions, each with its index and span; `source` names the file
/// in test sources.
/// A lowered hook with its index in the file and the span of its table.
pub(super) type ParsedDef = (usize, HookDef, Range<usize>);

pub(super) fn parse_str(text: &str, source: &str) -> (Vec<ParsedDef>, Vec<RawError>) {
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
            let item = &exact_conditions(item.clone());
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

/// The token-list conditions that take `exact`, and the one-key form each becomes with it.
pub(super) const EXACT_FORMS: [(&str, &str); 3] = [
    ("runs", "runs_exact"),
    ("primary_runs", "primary_runs_exact"),
    ("ran_command", "ran_command_exact"),
];

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

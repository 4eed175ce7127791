//! Hook-file text to typed specs, each with its index and the span of its table.

use std::ops::Range;

use serde::Deserialize;
use serde::de::IntoDeserializer;
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

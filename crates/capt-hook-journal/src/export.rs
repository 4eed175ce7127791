//! Decisions in the shapes log systems take: JSON lines, and OTLP/JSON logs (one
//! `ExportLogsServiceRequest` per line, the form the OpenTelemetry Collector's `otlpjsonfile`
//! receiver reads), each record with its chain hashes so the copy can be checked against the
//! ledger later.

use serde_json::{Value, json};

use crate::ledger::Decision;

/// How many log records go into one OTLP request (one line).
pub const OTLP_BATCH: usize = 500;

/// The instrumentation scope named in OTLP records.
const SCOPE: &str = "capt-hook.decisions";

/// One decision as a JSON line.
pub fn jsonl(d: &Decision) -> Result<String, serde_json::Error> {
    serde_json::to_string(d)
}

/// OTLP/JSON `AnyValue` of a string.
fn string(v: &str) -> Value {
    json!({ "stringValue": v })
}

/// A log record's severity: a block is a warning, everything else information.
fn severity(action: &str) -> (u8, &'static str) {
    match action {
        "block" => (13, "WARN"),
        _ => (9, "INFO"),
    }
}

/// One decision as an OTLP log record.
pub fn otlp_record(d: &Decision) -> Value {
    let mut attributes = vec![
        json!({ "key": "session.id", "value": string(&d.session_id) }),
        json!({ "key": "capt_hook.hook", "value": string(&d.hook) }),
        json!({ "key": "capt_hook.event", "value": string(&d.event) }),
        json!({ "key": "capt_hook.action", "value": string(&d.action) }),
        json!({ "key": "capt_hook.source_file", "value": string(&d.source_file) }),
        // int64 values are strings in OTLP/JSON.
        json!({ "key": "capt_hook.row_id", "value": { "intValue": d.id.to_string() } }),
        json!({ "key": "capt_hook.detail", "value": string(&d.detail.to_string()) }),
    ];
    for (key, value) in [
        ("capt_hook.tool_name", &d.tool_name),
        ("capt_hook.tool_digest", &d.tool_digest),
        ("capt_hook.event_uuid", &d.event_uuid),
        ("capt_hook.prev_hash", &d.prev_hash),
        ("capt_hook.row_hash", &d.row_hash),
    ] {
        if let Some(v) = value {
            attributes.push(json!({ "key": key, "value": string(v) }));
        }
    }
    let (number, text) = severity(&d.action);
    let nanos = i128::from(d.ts_ms) * 1_000_000;
    json!({
        "timeUnixNano": nanos.to_string(),
        "severityNumber": number,
        "severityText": text,
        "body": string(d.message.as_deref().unwrap_or("")),
        "attributes": attributes,
    })
}

/// Decisions as one OTLP/JSON `ExportLogsServiceRequest`.
pub fn otlp_request(decisions: &[Decision]) -> Value {
    json!({
        "resourceLogs": [{
            "resource": {
                "attributes": [{ "key": "service.name", "value": string(crate::ledger::SOURCE) }]
            },
            "scopeLogs": [{
                "scope": { "name": SCOPE, "version": env!("CARGO_PKG_VERSION") },
                "logRecords": decisions.iter().map(otlp_record).collect::<Vec<_>>(),
            }]
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision() -> Decision {
        Decision {
            id: 7,
            ts_ms: 1_700_000_000_123,
            ts: String::new(),
            session_id: "s1".into(),
            source: "captain-hook".into(),
            hook: "no-stash".into(),
            source_file: "hooks.toml:3".into(),
            event: "PreToolUse".into(),
            action: "block".into(),
            tool_name: Some("Bash".into()),
            tool_digest: None,
            event_uuid: Some("toolu_1".into()),
            message: Some("No stashing".into()),
            detail: json!({"elapsed_ms": 1}),
            prev_hash: Some("00".into()),
            row_hash: Some("ab".into()),
            judge: Vec::new(),
        }
    }

    #[test]
    fn an_otlp_record_carries_time_severity_body_and_hashes() {
        let req = otlp_request(&[decision()]);
        let rec = &req["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
        assert_eq!(rec["timeUnixNano"], "1700000000123000000");
        assert_eq!(rec["severityText"], "WARN");
        assert_eq!(rec["body"]["stringValue"], "No stashing");
        let attr = |k: &str| {
            rec["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == k)
                .map(|a| a["value"].clone())
        };
        assert_eq!(attr("capt_hook.row_hash").unwrap()["stringValue"], "ab");
        assert_eq!(attr("capt_hook.row_id").unwrap()["intValue"], "7");
        assert_eq!(attr("session.id").unwrap()["stringValue"], "s1");
        assert!(attr("capt_hook.tool_digest").is_none(), "absent, not empty");
        assert_eq!(
            req["resourceLogs"][0]["resource"]["attributes"][0]["value"]["stringValue"],
            "captain-hook"
        );
        let line: Value = serde_json::from_str(&jsonl(&decision()).unwrap()).unwrap();
        assert_eq!(line["row_hash"], "ab");
    }
}

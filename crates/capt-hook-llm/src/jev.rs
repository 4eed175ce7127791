//! TypeSafe Jev as a judge: one HTTPS request to its classification endpoint, one closed
//! question per verdict field. It answers in a fraction of a second and writes no prose, so
//! text fields are filled with a one-line summary of the decision.
//!
//! The request: `POST <base>/v1/systemone` with `Authorization: Bearer $TYPESAFE_API_KEY` and
//! `{"state": <the prompt>, "model": "jev-1.13.0", "questions": {<field>: <question>}}`, where a
//! boolean field is `{"type": "noul", "instructions"}`, a choice `{"type": "choice",
//! "instructions", "criteria": {value: description}}` and a bounded integer `{"type": "score",
//! "instructions", "criteria": [level…]}`. The answer read back is `{"answers": {<field>:
//! {"p_yes"} | {"choice"} | {"value"} | {"refused": true}}}`. 408, 429 (after `Retry-After`) and
//! 529 are retried while the deadline allows.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::schema::FieldType;
use crate::{Answer, Backend, Call, CallError, CallErrorKind, FailureRecord, TAIL_CHARS, tail};

/// The Jev model version asked for.
pub const MODEL: &str = "jev-1.13.0";

/// The public endpoint's base URL.
pub const DEFAULT_URL: &str = "https://api.typesafe.ai";

/// The Jev backend.
#[derive(Debug, Clone)]
pub struct Jev {
    /// Base URL (`https://api.typesafe.ai`, or a local fake in tests).
    pub base_url: String,
    /// The API key; `None` fails every call as not configured.
    pub api_key: Option<String>,
}

/// Why Jev cannot be asked for a verdict, or its answers make none.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum JevError {
    /// A field no closed question can decide.
    #[error("field `{0}` is not a yes/no, a choice or a small bounded score")]
    Undecidable(String),
    /// A schema with nothing but text fields.
    #[error("the verdict has no field Jev can decide")]
    NothingToDecide,
    /// The answers skip a field.
    #[error("no answer for `{0}`")]
    NoAnswer(String),
    /// Jev refused a question.
    #[error("Jev declined to answer `{0}`")]
    Declined(String),
    /// A yes/no answer without its probability.
    #[error("`{0}`: no p_yes")]
    NoProbability(String),
    /// A score that is not a number.
    #[error("`{field}`: bad value {value}")]
    BadScore {
        /// The field.
        field: String,
        /// The answer given.
        value: Value,
    },
    /// The answers, read, do not fit the schema.
    #[error(transparent)]
    Shape(#[from] crate::schema::ShapeError),
}

/// True when every field of `schema` is one Jev can decide or fill.
pub fn can_answer(schema: &crate::VerdictSchema) -> bool {
    schema.fields().iter().all(|f| question(f, "").is_some())
}

/// The question for one field, or `None` when Jev cannot decide it (`String` fields are
/// filled, not asked, and get `Some(Null)`).
fn question(f: &crate::Field, task: &str) -> Option<Value> {
    let instructions = match &f.description {
        Some(d) => format!("{task}\n\nAnswer `{}`: {d}", f.name),
        None => format!("{task}\n\nAnswer `{}`.", f.name),
    };
    Some(match &f.ty {
        FieldType::Bool => json!({"type": "noul", "instructions": instructions}),
        FieldType::Choice(c) => json!({
            "type": "choice",
            "instructions": instructions,
            "criteria": c.iter().map(|v| (v.clone(), json!(v))).collect::<Map<_, _>>(),
        }),
        FieldType::Integer {
            min: Some(lo),
            max: Some(hi),
        } if hi - lo <= 10 => json!({
            "type": "score",
            "instructions": instructions,
            "criteria": (*lo..=*hi).map(|n| n.to_string()).collect::<Vec<_>>(),
        }),
        FieldType::Integer { .. } => return None,
        FieldType::String => Value::Null,
    })
}

impl Jev {
    fn fail(
        &self,
        kind: CallErrorKind,
        call: &Call<'_>,
        status: Option<i32>,
        body: &str,
    ) -> CallError {
        CallError {
            backend: "jev",
            kind,
            record: Box::new(FailureRecord {
                backend: "jev".into(),
                argv: vec![format!("POST {}/v1/systemone", self.base_url)],
                exit_code: status,
                stderr_tail: tail(body, TAIL_CHARS),
                prompt_tail: tail(call.prompt, TAIL_CHARS),
            }),
        }
    }

    /// The request body for `call`.
    pub fn body(call: &Call<'_>) -> Result<Value, JevError> {
        let mut questions = Map::new();
        for f in call.schema.fields() {
            match question(f, call.task) {
                Some(Value::Null) => {}
                Some(q) => {
                    questions.insert(f.name.clone(), q);
                }
                None => return Err(JevError::Undecidable(f.name.clone())),
            }
        }
        if questions.is_empty() {
            return Err(JevError::NothingToDecide);
        }
        Ok(json!({"state": call.prompt, "model": MODEL, "questions": questions}))
    }

    /// The verdict from Jev's answers; a refused or missing answer is an error.
    fn verdict(call: &Call<'_>, answers: &Value) -> Result<Map<String, Value>, JevError> {
        let mut out = Map::new();
        let mut decided = Vec::new();
        for f in call.schema.fields() {
            if f.ty == FieldType::String {
                continue;
            }
            let a = answers
                .get(&f.name)
                .ok_or_else(|| JevError::NoAnswer(f.name.clone()))?;
            if a["refused"].as_bool() == Some(true) {
                return Err(JevError::Declined(f.name.clone()));
            }
            let v = match &f.ty {
                // Strictly above one half: an even answer does not fire a hook.
                FieldType::Bool => json!(
                    a["p_yes"]
                        .as_f64()
                        .ok_or_else(|| JevError::NoProbability(f.name.clone()))?
                        > 0.5
                ),
                FieldType::Choice(_) => a["choice"].clone(),
                FieldType::Integer { .. } => match &a["value"] {
                    Value::Number(n) => json!(n.as_f64().unwrap_or(0.0).round() as i64),
                    Value::String(s) => match s.parse::<i64>() {
                        Ok(n) => json!(n),
                        Err(_) => {
                            return Err(JevError::BadScore {
                                field: f.name.clone(),
                                value: a["value"].clone(),
                            });
                        }
                    },
                    other => {
                        return Err(JevError::BadScore {
                            field: f.name.clone(),
                            value: other.clone(),
                        });
                    }
                },
                FieldType::String => continue,
            };
            decided.push(format!("{}={}", f.name, v));
            out.insert(f.name.clone(), v);
        }
        let summary = format!("{MODEL} decided {}", decided.join(", "));
        for f in call.schema.fields() {
            if f.ty == FieldType::String {
                out.insert(f.name.clone(), json!(summary));
            }
        }
        Ok(call.schema.validate(&Value::Object(out))?)
    }
}

impl Backend for Jev {
    fn name(&self) -> &'static str {
        "jev"
    }

    fn judge(&self, call: &Call<'_>) -> Result<Answer, CallError> {
        let started = Instant::now();
        let Some(key) = self.api_key.as_deref().filter(|k| !k.is_empty()) else {
            return Err(self.fail(
                CallErrorKind::NotConfigured("TYPESAFE_API_KEY is not set".into()),
                call,
                None,
                "",
            ));
        };
        let body = Jev::body(call)
            .map_err(|why| self.fail(CallErrorKind::Unsupported(why.to_string()), call, None, ""))?
            .to_string();
        let url = format!("{}/v1/systemone", self.base_url.trim_end_matches('/'));
        let mut backoff = Duration::from_millis(200);
        loop {
            let Some(left) = crate::time_left(call.deadline, crate::MIN_CALL_TIME) else {
                return Err(self.fail(CallErrorKind::Timeout(started.elapsed()), call, None, ""));
            };
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .timeout_global(Some(left))
                .http_status_as_error(false)
                .build()
                .into();
            let sent = agent
                .post(&url)
                .header("Authorization", &format!("Bearer {key}"))
                .content_type("application/json")
                .send(body.as_bytes());
            let mut resp = match sent {
                Ok(r) => r,
                Err(ureq::Error::Timeout(_)) => {
                    return Err(self.fail(
                        CallErrorKind::Timeout(started.elapsed()),
                        call,
                        None,
                        "",
                    ));
                }
                Err(e) => {
                    return Err(self.fail(CallErrorKind::Http(e.to_string()), call, None, ""));
                }
            };
            let status = resp.status().as_u16();
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64);
            let text = resp.body_mut().read_to_string().unwrap_or_default();
            if matches!(status, 408 | 429 | 529) {
                let wait = retry_after.unwrap_or(backoff);
                if Instant::now() + wait + crate::MIN_CALL_TIME < call.deadline {
                    std::thread::sleep(wait);
                    backoff *= 2;
                    continue;
                }
            }
            if status != 200 {
                return Err(self.fail(
                    CallErrorKind::Http(format!("status {status}")),
                    call,
                    Some(i32::from(status)),
                    &text,
                ));
            }
            let value: Value = serde_json::from_str(&text).map_err(|e| {
                self.fail(
                    CallErrorKind::BadOutput(format!("not JSON ({e})")),
                    call,
                    Some(200),
                    &text,
                )
            })?;
            let verdict = Jev::verdict(call, &value["answers"]).map_err(|why| {
                self.fail(
                    CallErrorKind::BadOutput(why.to_string()),
                    call,
                    Some(200),
                    &text,
                )
            })?;
            return Ok(Answer {
                verdict,
                backend: "jev",
                model: Some(MODEL.into()),
                latency: started.elapsed(),
                cost_usd: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VerdictSchema;
    use crate::test_support::call;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    type Seen = Arc<Mutex<Vec<(String, String)>>>;

    /// A one-thread HTTP server that answers each request with the next of `replies`
    /// (status, extra header, body) and records the bodies it received.
    fn fake_server(replies: Vec<(u16, &'static str, String)>) -> (String, Seen) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for (status, header, body) in replies {
                let Ok((conn, _)) = listener.accept() else {
                    return;
                };
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut len = 0;
                let mut auth = String::new();
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).unwrap();
                    let h = h.trim_end();
                    if h.is_empty() {
                        break;
                    }
                    let lower = h.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                    if lower.starts_with("authorization:") {
                        auth = h["authorization:".len()..].trim().to_owned();
                    }
                }
                let mut buf = vec![0; len];
                reader.read_exact(&mut buf).unwrap();
                log.lock()
                    .unwrap()
                    .push((auth, String::from_utf8(buf).unwrap()));
                let mut out = conn;
                write!(
                    out,
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{header}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .unwrap();
            }
        });
        (url, seen)
    }

    #[test]
    fn questions_go_out_and_answers_come_back_as_a_verdict() {
        let (url, seen) = fake_server(vec![
            (429, "retry-after: 0\r\n", "{}".into()),
            (
                200,
                "",
                json!({"answers": {"block": {"p_yes": 0.93, "confidence": 0.9}}}).to_string(),
            ),
        ]);
        let jev = Jev {
            base_url: url,
            api_key: Some("k123".into()),
        };
        let schema = VerdictSchema::gate();
        let mut c = call("<context>x</context>", &schema, Duration::from_secs(10));
        c.task = "Is the agent making excuses?";
        let a = jev.judge(&c).unwrap();
        assert_eq!(a.verdict["block"], true);
        assert_eq!(a.verdict["reasoning"], "jev-1.13.0 decided block=true");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "the 429 was retried");
        assert_eq!(seen[1].0, "Bearer k123");
        let body: Value = serde_json::from_str(&seen[1].1).unwrap();
        assert_eq!(body["model"], MODEL);
        assert_eq!(body["state"], "<context>x</context>");
        assert_eq!(body["questions"]["block"]["type"], "noul");
        assert!(
            body["questions"]["block"]["instructions"]
                .as_str()
                .unwrap()
                .starts_with("Is the agent making excuses?")
        );
        assert!(body["questions"].get("reasoning").is_none());
    }

    #[test]
    fn an_even_answer_is_no_and_refusals_and_errors_fail() {
        let schema = VerdictSchema::nudge();
        let (url, _) = fake_server(vec![
            (
                200,
                "",
                json!({"answers": {"fire": {"p_yes": 0.5}}}).to_string(),
            ),
            (
                200,
                "",
                json!({"answers": {"fire": {"refused": true}}}).to_string(),
            ),
            (422, "", "{\"error\": \"bad question\"}".into()),
        ]);
        let jev = Jev {
            base_url: url,
            api_key: Some("k".into()),
        };
        let c = call("p", &schema, Duration::from_secs(10));
        assert_eq!(jev.judge(&c).unwrap().verdict["fire"], false);
        let e = jev.judge(&c).unwrap_err();
        assert!(
            matches!(&e.kind, CallErrorKind::BadOutput(w) if w.contains("declined")),
            "{e}"
        );
        let e = jev.judge(&c).unwrap_err();
        assert_eq!(e.record.exit_code, Some(422));
        assert!(e.record.stderr_tail.contains("bad question"));

        let e = Jev {
            base_url: "http://127.0.0.1:9".into(),
            api_key: None,
        }
        .judge(&c)
        .unwrap_err();
        assert!(matches!(e.kind, CallErrorKind::NotConfigured(_)), "{e}");
    }

    #[test]
    fn only_categorical_verdicts_can_be_asked() {
        assert!(can_answer(&VerdictSchema::gate()));
        assert!(can_answer(&VerdictSchema::prompt_check()));
        let open = crate::test_support::open_number_schema();
        assert!(!can_answer(&open));
        let c = call("p", &open, Duration::from_secs(1));
        assert!(Jev::body(&c).is_err());
    }

    #[test]
    fn a_server_that_never_answers_hits_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let hold = std::thread::spawn(move || {
            let conn = listener.accept();
            std::thread::sleep(Duration::from_secs(3));
            drop(conn);
        });
        let jev = Jev {
            base_url: url,
            api_key: Some("k".into()),
        };
        let schema = VerdictSchema::gate();
        let started = Instant::now();
        let e = jev
            .judge(&call("p", &schema, Duration::from_millis(500)))
            .unwrap_err();
        assert!(e.is_timeout(), "{e}");
        assert!(started.elapsed() < Duration::from_secs(2));
        let _ = hold.join();
    }
}

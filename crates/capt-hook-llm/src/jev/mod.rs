//! TypeSafe Jev as a judge: one HTTPS request to its System One endpoint, one closed question
//! per verdict field. It answers in a fraction of a second and writes no prose, so text fields
//! are filled with a one-line summary of the decision.
//!
//! The request is `POST <base>/v1/systemone` with `Authorization: Bearer $TYPESAFE_API_KEY` and
//! a body of the shape [`wire`] pins to TypeSafe's published API reference: a boolean field is
//! a `noul` question, a probability field too (its answer kept as the number), a choice a
//! `choice` question and a small bounded integer a `score` question. 408, 429 (after
//! `Retry-After`) and 529 are retried while the deadline allows.

pub mod wire;

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
    /// An answer not of the published shape, or not of its question's type.
    #[error("`{field}`: {why}")]
    BadAnswer {
        /// The field.
        field: String,
        /// What is wrong with it.
        why: String,
    },
    /// The request could not be written.
    #[error("the request could not be written: {0}")]
    Wire(String),
    /// The answers, read, do not fit the schema.
    #[error(transparent)]
    Shape(#[from] crate::schema::ShapeError),
}

/// True when every field of `schema` is one Jev can decide or fill.
pub fn can_answer(schema: &crate::VerdictSchema) -> bool {
    schema.fields().iter().all(|f| question(f, "").is_ok())
}

/// The question for one field; `Ok(None)` for a text field (filled, not asked), `Err` for a
/// field no closed question decides.
fn question(f: &crate::Field, task: &str) -> Result<Option<wire::Question>, JevError> {
    let instructions = Value::String(match &f.description {
        Some(d) => format!("{task}\n\nAnswer `{}`: {d}", f.name),
        None => format!("{task}\n\nAnswer `{}`.", f.name),
    });
    Ok(Some(match &f.ty {
        FieldType::Bool | FieldType::Probability => wire::Question::Noul {
            instructions,
            criteria: None,
        },
        FieldType::Choice(c) if c.len() <= wire::MAX_CHOICE_OPTIONS => wire::Question::Choice {
            instructions,
            criteria: c.iter().map(|v| (v.clone(), json!(v))).collect(),
        },
        FieldType::Integer {
            min: Some(lo),
            max: Some(hi),
        } if levels(*lo, *hi).is_some() => wire::Question::Score {
            instructions,
            criteria: (*lo..=*hi).map(|n| json!(n.to_string())).collect(),
        },
        FieldType::Choice(_) | FieldType::Integer { .. } => {
            return Err(JevError::Undecidable(f.name.clone()));
        }
        FieldType::String => return Ok(None),
    }))
}

/// How many score levels `lo..=hi` makes, when the reference allows that many.
fn levels(lo: i64, hi: i64) -> Option<usize> {
    let n = usize::try_from(hi.checked_sub(lo)?.checked_add(1)?).ok()?;
    (wire::MIN_SCORE_LEVELS..=wire::MAX_SCORE_LEVELS)
        .contains(&n)
        .then_some(n)
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
        let mut questions = std::collections::BTreeMap::new();
        for f in call.schema.fields() {
            if let Some(q) = question(f, call.task)? {
                questions.insert(f.name.clone(), q);
            }
        }
        if questions.is_empty() {
            return Err(JevError::NothingToDecide);
        }
        let request = wire::Request {
            model: MODEL.into(),
            state: Value::String(call.prompt.to_owned()),
            questions,
        };
        serde_json::to_value(&request).map_err(|e| JevError::Wire(e.to_string()))
    }

    /// The verdict from Jev's answers; a declined, missing or mistyped answer is an error.
    fn verdict(
        call: &Call<'_>,
        answers: &Map<String, Value>,
    ) -> Result<Map<String, Value>, JevError> {
        let mut out = Map::new();
        let mut decided = Vec::new();
        for f in call.schema.fields() {
            if f.ty == FieldType::String {
                continue;
            }
            let raw = answers
                .get(&f.name)
                .ok_or_else(|| JevError::NoAnswer(f.name.clone()))?;
            // The reference shows no refusal; an answer that says it refused is read as one
            // rather than as a malformed answer.
            if raw.get("refused").and_then(Value::as_bool) == Some(true) {
                return Err(JevError::Declined(f.name.clone()));
            }
            let answer: wire::Answer =
                serde_json::from_value(raw.clone()).map_err(|e| JevError::BadAnswer {
                    field: f.name.clone(),
                    why: e.to_string(),
                })?;
            let mistyped = || JevError::BadAnswer {
                field: f.name.clone(),
                why: format!("a {} question got {raw}", kind_of(&f.ty)),
            };
            let v = match (&f.ty, answer) {
                // Strictly above one half: an even answer does not fire a hook.
                (FieldType::Bool, wire::Answer::Noul { noul }) => json!(noul > 0.5),
                (FieldType::Probability, wire::Answer::Noul { noul }) => {
                    json!(noul.clamp(0.0, 1.0))
                }
                (FieldType::Choice(_), wire::Answer::Choice { choice, .. }) => json!(choice),
                // The score is the expected level counted from 0: the nearest level, as the
                // field's own number.
                (FieldType::Integer { min, max }, wire::Answer::Score { score, .. }) => {
                    let lo = min.unwrap_or(0);
                    let hi = max.unwrap_or(lo);
                    if !score.is_finite() {
                        return Err(mistyped());
                    }
                    json!((lo + score.round() as i64).clamp(lo, hi))
                }
                _ => return Err(mistyped()),
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

/// The question kind a field is asked as, for messages.
fn kind_of(ty: &FieldType) -> &'static str {
    match ty {
        FieldType::Bool | FieldType::Probability => "noul",
        FieldType::Choice(_) => "choice",
        FieldType::Integer { .. } => "score",
        FieldType::String => "text",
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
            let response: wire::Response = serde_json::from_str(&text).map_err(|e| {
                self.fail(
                    CallErrorKind::BadOutput(format!("not a System One response ({e})")),
                    call,
                    Some(200),
                    &text,
                )
            })?;
            let answers: Map<String, Value> = response.answers.into_iter().collect();
            let verdict = Jev::verdict(call, &answers).map_err(|why| {
                self.fail(
                    match why {
                        JevError::Declined(_) => CallErrorKind::Declined(why.to_string()),
                        _ => CallErrorKind::BadOutput(why.to_string()),
                    },
                    call,
                    Some(200),
                    &text,
                )
            })?;
            return Ok(Answer {
                verdict,
                backend: "jev",
                model: Some(response.model.unwrap_or_else(|| MODEL.into())),
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
    /// (status, extra header, body) and records the bodies it received. Like the real
    /// endpoint, it refuses (422) a body that is not a request of the published shape.
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
                let received = String::from_utf8(buf).unwrap();
                let (status, header, body) = match wire::Request::parse(&received) {
                    Ok(_) => (status, header, body),
                    Err(e) => (422, "", json!({"detail": e.to_string()}).to_string()),
                };
                log.lock().unwrap().push((auth, received));
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
                json!({"model": MODEL, "answers": {"block": {"type": "noul", "noul": 0.93}}})
                    .to_string(),
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
                json!({"model": MODEL, "answers": {"fire": {"type": "noul", "noul": 0.5}}})
                    .to_string(),
            ),
            (
                200,
                "",
                json!({"model": MODEL, "answers": {"fire": {"refused": true}}}).to_string(),
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
            matches!(&e.kind, CallErrorKind::Declined(w) if w.contains("declined")),
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

    /// Scores come back as the expected level counted from 0; a probability field keeps the
    /// number; an answer of another type than its question, or in the shape this client once
    /// assumed (`p_yes`), is a bad answer, not a verdict.
    #[test]
    fn scores_probabilities_and_mistyped_answers() {
        let schema = crate::VerdictSchema::new(vec![
            crate::Field::new("p", FieldType::Probability, "how likely"),
            crate::Field::new(
                "n",
                FieldType::Integer {
                    min: Some(1),
                    max: Some(5),
                },
                "how bad",
            ),
        ])
        .unwrap();
        let (url, seen) = fake_server(vec![
            (
                200,
                "",
                json!({"model": MODEL, "answers": {
                    "p": {"type": "noul", "noul": 0.83},
                    "n": {"type": "score", "score": 2.4, "legend": {}, "probabilities": {}, "confidence": 0.6},
                }})
                .to_string(),
            ),
            (
                200,
                "",
                json!({"model": MODEL, "answers": {
                    "p": {"type": "choice", "choice": "yes", "probabilities": {}, "confidence": 1.0},
                    "n": {"type": "score", "score": 0.0},
                }})
                .to_string(),
            ),
            (
                200,
                "",
                json!({"model": MODEL, "answers": {"p": {"p_yes": 0.9}, "n": {"type": "score", "score": 0.0}}})
                    .to_string(),
            ),
        ]);
        let jev = Jev {
            base_url: url,
            api_key: Some("k".into()),
        };
        let c = call("p", &schema, Duration::from_secs(10));
        let v = jev.judge(&c).unwrap().verdict;
        assert_eq!(v["p"], json!(0.83));
        // Level index 2.4 rounds to 2, the third level of 1..=5.
        assert_eq!(v["n"], json!(3));
        let body: Value = serde_json::from_str(&seen.lock().unwrap()[0].1).unwrap();
        assert_eq!(body["questions"]["p"]["type"], "noul");
        assert_eq!(
            body["questions"]["n"]["criteria"],
            json!(["1", "2", "3", "4", "5"])
        );
        for _ in 0..2 {
            let e = jev.judge(&c).unwrap_err();
            assert!(
                matches!(&e.kind, CallErrorKind::BadOutput(w) if w.starts_with("`p`")),
                "{e}"
            );
        }
    }

    /// A score question has at most ten levels: eleven cannot be asked, and the fake refuses
    /// a body that breaks the published shape as the endpoint does.
    #[test]
    fn requests_outside_the_reference_are_never_sent() {
        let eleven = crate::VerdictSchema::new(vec![crate::Field::new(
            "n",
            FieldType::Integer {
                min: Some(0),
                max: Some(10),
            },
            "",
        )])
        .unwrap();
        assert!(!can_answer(&eleven));
        let ten = crate::VerdictSchema::new(vec![crate::Field::new(
            "n",
            FieldType::Integer {
                min: Some(0),
                max: Some(9),
            },
            "",
        )])
        .unwrap();
        assert!(can_answer(&ten));
        let body = Jev::body(&call("p", &ten, Duration::from_secs(1))).unwrap();
        assert!(wire::Request::parse(&body.to_string()).is_ok());
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

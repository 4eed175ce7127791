//! The System One request and answer shapes, pinned to TypeSafe's published HTTP API reference
//! (`https://docs.typesafe.ai/api`, its question types and `#answer-types`). We read that
//! reference through what quotes it: the JSON Schemas TypeSafe's Python SDK publishes for its
//! question and response models, and the Rust clients on docs.rs that cite the reference's
//! sections (`typesafe-ai`'s `Question`/`Answer`, `openkind-core`'s `answer` module). The
//! limits on choices and score levels are the ones those clients validate against.
//!
//! The client builds its request from these types, so a request that does not fit cannot be
//! sent; the tests' fake endpoint reads requests with [`Request::parse`], so a client that
//! drifted from the shape fails there rather than passing against a lenient fake.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most options a choice question may offer.
pub const MAX_CHOICE_OPTIONS: usize = 255;
/// The fewest levels a score question may have.
pub const MIN_SCORE_LEVELS: usize = 2;
/// The most levels a score question may have.
pub const MAX_SCORE_LEVELS: usize = 10;

/// `POST /v1/systemone`'s body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The model version asked for.
    pub model: String,
    /// What the questions are asked about: text, or a JSON object or array.
    pub state: Value,
    /// The questions, by the names their answers come back under.
    pub questions: BTreeMap<String, Question>,
}

/// One typed question; `type` picks the kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Question {
    /// Is this true? Answered with the probability of yes.
    Noul {
        /// The judgement asked for (the question's name is never shown to the model).
        instructions: Value,
        /// What a yes and a no mean.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        criteria: Option<NoulCriteria>,
    },
    /// One of a set of options, keyed by label with a description each.
    Choice {
        /// The decision asked for.
        instructions: Value,
        /// The options.
        criteria: BTreeMap<String, Value>,
    },
    /// A position on ordered levels, described lowest first.
    Score {
        /// The rating asked for.
        instructions: Value,
        /// The levels, lowest first.
        criteria: Vec<Value>,
    },
}

/// What a noul's yes (`true`) and no (`false`) mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoulCriteria {
    /// A yes.
    #[serde(rename = "true", default, skip_serializing_if = "Option::is_none")]
    pub yes: Option<Value>,
    /// A no.
    #[serde(rename = "false", default, skip_serializing_if = "Option::is_none")]
    pub no: Option<Value>,
}

/// A request the reference does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The body is not a request of the published shape.
    #[error("not a System One request: {0}")]
    Shape(String),
    /// No questions.
    #[error("a request asks at least one question")]
    NoQuestions,
    /// A choice with too few or too many options.
    #[error("choice `{0}` offers {1} options (2 to {MAX_CHOICE_OPTIONS})")]
    Options(String, usize),
    /// A score with too few or too many levels.
    #[error("score `{0}` has {1} levels ({MIN_SCORE_LEVELS} to {MAX_SCORE_LEVELS})")]
    Levels(String, usize),
}

impl Request {
    /// Checks the limits the reference sets beyond the shape.
    pub fn check(&self) -> Result<(), WireError> {
        if self.questions.is_empty() {
            return Err(WireError::NoQuestions);
        }
        for (name, q) in &self.questions {
            match q {
                Question::Noul { .. } => {}
                Question::Choice { criteria, .. } => {
                    if !(2..=MAX_CHOICE_OPTIONS).contains(&criteria.len()) {
                        return Err(WireError::Options(name.clone(), criteria.len()));
                    }
                }
                Question::Score { criteria, .. } => {
                    if !(MIN_SCORE_LEVELS..=MAX_SCORE_LEVELS).contains(&criteria.len()) {
                        return Err(WireError::Levels(name.clone(), criteria.len()));
                    }
                }
            }
        }
        Ok(())
    }

    /// Reads a request body strictly: an unknown field, a missing one or a broken limit is an
    /// error (what the endpoint answers 422 for).
    pub fn parse(body: &str) -> Result<Request, WireError> {
        let r: Request = serde_json::from_str(body).map_err(|e| WireError::Shape(e.to_string()))?;
        r.check()?;
        Ok(r)
    }
}

/// One answer, under its question's name; `type` matches the question's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Answer {
    /// The probability of yes, from 0 to 1.
    Noul {
        /// The probability.
        noul: f64,
    },
    /// The most probable option and the distribution over all of them.
    Choice {
        /// The chosen label.
        choice: String,
        /// Each label's probability.
        #[serde(default)]
        probabilities: BTreeMap<String, f64>,
        /// How sure, from 0 to 1.
        #[serde(default)]
        confidence: Option<f64>,
    },
    /// The probability-weighted level, counted from 0, and the distribution over levels.
    Score {
        /// The expected level index (`sum k * p_k`).
        score: f64,
        /// Each level's description, by index.
        #[serde(default)]
        legend: BTreeMap<String, Value>,
        /// Each level's probability, by index.
        #[serde(default)]
        probabilities: BTreeMap<String, f64>,
        /// How sure, from 0 to 1.
        #[serde(default)]
        confidence: Option<f64>,
    },
}

/// The response body. Fields the reference adds later (usage, timings) are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The model version that answered.
    #[serde(default)]
    pub model: Option<String>,
    /// One answer per question, raw: [`Answer`] reads each, so one bad answer names its
    /// question.
    pub answers: BTreeMap<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_of_the_published_shape_read_and_others_do_not() {
        let good = json!({
            "model": "jev-1.13.0",
            "state": "a call",
            "questions": {
                "block": {"type": "noul", "instructions": "Is it?"},
                "action": {"type": "choice", "instructions": "Which?", "criteria": {"ok": "fine", "block": "stop"}},
                "n": {"type": "score", "instructions": "How much?", "criteria": ["none", "some", "a lot"]},
            },
        });
        let r = Request::parse(&good.to_string()).unwrap();
        assert_eq!(r.questions.len(), 3);
        // The same request written back is the same JSON.
        assert_eq!(serde_json::to_value(&r).unwrap(), good);

        let bad = |v: Value| Request::parse(&v.to_string()).unwrap_err();
        assert!(matches!(
            bad(
                json!({"model": "m", "state": "s", "questions": {"b": {"type": "yesno", "instructions": "?"}}})
            ),
            WireError::Shape(_)
        ));
        // The probability field of an answer is not a question field.
        assert!(matches!(
            bad(
                json!({"model": "m", "state": "s", "questions": {"b": {"type": "noul", "instructions": "?", "p_yes": 1}}})
            ),
            WireError::Shape(_)
        ));
        assert!(matches!(
            bad(json!({"state": "s", "questions": {"b": {"type": "noul", "instructions": "?"}}})),
            WireError::Shape(_)
        ));
        assert_eq!(
            bad(json!({"model": "m", "state": "s", "questions": {}})),
            WireError::NoQuestions
        );
        let levels: Vec<String> = (0..11).map(|n| n.to_string()).collect();
        assert_eq!(
            bad(
                json!({"model": "m", "state": "s", "questions": {"n": {"type": "score", "instructions": "?", "criteria": levels}}})
            ),
            WireError::Levels("n".into(), 11)
        );
        assert_eq!(
            bad(
                json!({"model": "m", "state": "s", "questions": {"c": {"type": "choice", "instructions": "?", "criteria": {"only": "one"}}}})
            ),
            WireError::Options("c".into(), 1)
        );
    }

    #[test]
    fn answers_read_by_their_type() {
        let a: Answer = serde_json::from_value(json!({"type": "noul", "noul": 0.93})).unwrap();
        assert_eq!(a, Answer::Noul { noul: 0.93 });
        let a: Answer = serde_json::from_value(json!({
            "type": "score", "score": 1.6, "legend": {"0": "none", "1": "some", "2": "a lot"},
            "probabilities": {"0": 0.1, "1": 0.2, "2": 0.7}, "confidence": 0.7,
        }))
        .unwrap();
        assert!(matches!(a, Answer::Score { score, .. } if (score - 1.6).abs() < 1e-9));
        // The shape this client assumed before it was pinned: no `type`, `p_yes`.
        assert!(serde_json::from_value::<Answer>(json!({"p_yes": 0.9})).is_err());
    }
}

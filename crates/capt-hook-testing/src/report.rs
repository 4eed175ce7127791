//! What `capt-hook test` prints: one line (or JSON object) per test and the totals.

use std::fmt::Write as _;

use serde_json::json;

/// How one test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The expectation held.
    Pass,
    /// It did not.
    Fail,
    /// The test could not run.
    Error,
    /// The test was not run.
    Skip,
}

impl Status {
    /// The lower-case name used in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Error => "error",
            Status::Skip => "skip",
        }
    }
}

/// One test's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcome {
    /// `<hook name>:<input repr>`.
    pub id: String,
    /// How it ended.
    pub status: Status,
    /// The expected verdict's name.
    pub expected: String,
    /// Why it failed, errored or was skipped; empty on a pass.
    pub reason: String,
}

/// The human report: one line per test, a blank line, then the totals.
pub fn human_report(outcomes: &[TestOutcome]) -> String {
    if outcomes.is_empty() {
        return "No inline tests found.\n".to_owned();
    }
    let mut out = String::new();
    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    for o in outcomes {
        let _ = match o.status {
            Status::Pass => writeln!(out, "  PASS  {}", o.id),
            Status::Fail => writeln!(out, "  FAIL  {}: {}", o.id, o.reason),
            Status::Error => writeln!(out, "  ERROR {}: {}", o.id, o.reason),
            Status::Skip => writeln!(out, "  SKIP  {}: {}", o.id, o.reason),
        };
    }
    let _ = writeln!(
        out,
        "\n{} tests: {} passed, {} failed, {} errors, {} skipped",
        outcomes.len(),
        count(Status::Pass),
        count(Status::Fail),
        count(Status::Error),
        count(Status::Skip)
    );
    out
}

/// The JSON report: one object per line.
pub fn json_report(outcomes: &[TestOutcome]) -> String {
    if outcomes.is_empty() {
        return format!(
            "{}\n",
            json!({"status": "empty", "reason": "no inline tests"})
        );
    }
    outcomes
        .iter()
        .map(|o| {
            format!(
                "{}\n",
                json!({"id": o.id, "status": o.status.name(), "expected": o.expected, "reason": o.reason})
            )
        })
        .collect()
}

/// True when every outcome passed or was skipped.
pub fn all_passed(outcomes: &[TestOutcome]) -> bool {
    outcomes
        .iter()
        .all(|o| matches!(o.status, Status::Pass | Status::Skip))
}

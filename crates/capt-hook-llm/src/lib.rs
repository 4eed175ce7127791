//! Model-backed judges for captain-hook hooks.
//!
//! A hook that needs judgement renders a prompt ([`prompt`]), picks a [`Backend`] and asks it to
//! fill a [`VerdictSchema`]. Every call has one deadline; a backend that fails or runs past it
//! returns a [`CallError`] carrying a [`FailureRecord`] (argv, exit code, stderr tail, prompt
//! tail) for `capt-hook logs`, and never hangs its caller. Cost and latency of every call are
//! logged through `tracing` under the `capt_hook_llm` target.
//!
//! Backends: [`claude::Claude`] (the `claude` CLI in `-p` mode), [`codex::Codex`] (`codex
//! exec`), [`command::CommandBackend`] (any program that reads a JSON request and prints the
//! verdict) and [`jev::Jev`] (TypeSafe's classification API over HTTP). [`Settings`] reads the
//! project's choice from the environment; `auto` is Jev when its key is set, else `claude`.

pub mod claude;
pub mod codex;
pub mod command;
pub mod evidence;
pub mod jev;
mod process;
pub mod prompt;
pub mod schema;
pub mod settings;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

pub use prompt::{Block, Template, render};
pub use schema::{Field, FieldType, ShapeError, VerdictSchema};
pub use settings::{BackendChoice, Settings, SettingsError, Specialties, Specialty};

/// How capable (and costly) a model the judge gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Size {
    /// The fast, cheap tier (haiku by default).
    #[default]
    Small,
    /// The middle tier (sonnet by default).
    Medium,
    /// The strongest tier (opus by default).
    Large,
}

impl Size {
    /// `small`, `medium` or `large`.
    pub fn name(self) -> &'static str {
        match self {
            Size::Small => "small",
            Size::Medium => "medium",
            Size::Large => "large",
        }
    }

    /// Parses `small`, `medium` or `large`.
    pub fn parse(text: &str) -> Option<Size> {
        match text {
            "small" => Some(Size::Small),
            "medium" => Some(Size::Medium),
            "large" => Some(Size::Large),
            _ => None,
        }
    }
}

/// One question for a judge.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// The whole prompt (instructions, tagged context blocks, the task).
    pub prompt: &'a str,
    /// The question alone, as the hook wrote it (Jev asks it once per verdict field).
    pub task: &'a str,
    /// The verdict's shape.
    pub schema: &'a VerdictSchema,
    /// The model tier.
    pub size: Size,
    /// Give the model tools (read files, run read-only commands); off for a plain yes/no check.
    pub agent: bool,
    /// Where the judge runs (the project root).
    pub cwd: Option<PathBuf>,
    /// The call is abandoned (its process killed) at this instant.
    pub deadline: Instant,
}

/// A judge's validated answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The verdict, matching the call's schema.
    pub verdict: Map<String, Value>,
    /// Which backend answered.
    pub backend: &'static str,
    /// The model that answered, when known.
    pub model: Option<String>,
    /// Wall-clock time of the call.
    pub latency: Duration,
    /// What the call cost, when the backend says.
    pub cost_usd: Option<f64>,
}

/// What is kept about a failed call, for `capt-hook logs`: enough to rerun it by hand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailureRecord {
    /// The backend.
    pub backend: String,
    /// The program and its arguments (a schema argument included), or the URL for HTTP.
    pub argv: Vec<String>,
    /// The exit code (or HTTP status), when there was one.
    pub exit_code: Option<i32>,
    /// The last part of stderr (or of the HTTP body).
    pub stderr_tail: String,
    /// The last part of the prompt.
    pub prompt_tail: String,
}

/// How many characters of stderr and of the prompt a failure record keeps.
pub const TAIL_CHARS: usize = 2000;

/// The last `n` characters of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(n)).collect()
}

/// Why a call gave no verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallErrorKind {
    /// The program could not be started.
    #[error("could not start {program}: {reason}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        reason: String,
    },
    /// The deadline passed (after this long); the process was killed. The message leaves the
    /// time out, so repeated timeouts read the same (notes are given once per distinct text).
    #[error("no verdict before the deadline")]
    Timeout(Duration),
    /// The deadline had passed (or nearly) before the call could start.
    #[error("no time left before the event's deadline")]
    NoTime,
    /// The program exited unsuccessfully.
    #[error("exited with {0}")]
    Exit(String),
    /// The output was not a verdict in the schema's shape.
    #[error("bad output: {0}")]
    BadOutput(String),
    /// The HTTP request failed.
    #[error("HTTP: {0}")]
    Http(String),
    /// The backend needs a setting (an API key, a command) that is not there.
    #[error("not configured: {0}")]
    NotConfigured(String),
    /// The backend cannot answer this schema.
    #[error("cannot answer this verdict: {0}")]
    Unsupported(String),
    /// The judge answered that it would not decide (Jev declining a question): an answer,
    /// not a fault, which a confirmation reads as "not shown to be protected".
    #[error("declined: {0}")]
    Declined(String),
}

/// A failed call: why, and the record to keep.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{backend} judge: {kind}")]
pub struct CallError {
    /// The backend.
    pub backend: &'static str,
    /// Why.
    pub kind: CallErrorKind,
    /// What to log (boxed: the error travels in every `Result` of a call).
    pub record: Box<FailureRecord>,
}

impl CallError {
    /// True when the deadline (not the backend) ended the call.
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, CallErrorKind::Timeout(_) | CallErrorKind::NoTime)
    }
}

/// A judge: fills a verdict schema for a prompt before a deadline.
pub trait Backend: Send + Sync {
    /// The backend's name (`claude`, `codex`, `command`, `jev`).
    fn name(&self) -> &'static str;

    /// Asks for a verdict. Must return by `call.deadline` (plus the time to kill a process).
    fn judge(&self, call: &Call<'_>) -> Result<Answer, CallError>;
}

/// Asks `backend` and logs the call's latency and cost, or its failure record. With `log_dir`,
/// every call also leaves a line in `<log_dir>/llm-calls.jsonl` (hook, backend, model, latency,
/// cost, outcome) and a failure its record in `<log_dir>/llm-failures.jsonl`, for `capt-hook
/// logs`: a worker's `tracing` output is not kept by default, and a judge's cost must be.
pub fn judge(
    backend: &dyn Backend,
    call: &Call<'_>,
    hook: &str,
    session: Option<&str>,
    log_dir: Option<&std::path::Path>,
) -> Result<Answer, CallError> {
    let started = Instant::now();
    let result = backend.judge(call);
    let at = CallLog { hook, session };
    if let Some(dir) = log_dir
        && let Err(io) = append_call(dir, &at, backend.name(), &result, started.elapsed())
    {
        tracing::warn!(target: "capt_hook_llm", error = %io, "could not log the judge's call");
    }
    match &result {
        Ok(a) => tracing::info!(
            target: "capt_hook_llm",
            hook,
            backend = a.backend,
            model = a.model.as_deref().unwrap_or(""),
            latency_ms = a.latency.as_millis() as u64,
            cost_usd = a.cost_usd.unwrap_or(0.0),
            "judge answered"
        ),
        Err(e) => {
            tracing::warn!(
                target: "capt_hook_llm",
                hook,
                backend = e.backend,
                error = %e.kind,
                latency_ms = started.elapsed().as_millis() as u64,
                argv = ?e.record.argv,
                exit_code = ?e.record.exit_code,
                stderr_tail = %e.record.stderr_tail,
                prompt_tail = %e.record.prompt_tail,
                "judge failed"
            );
            if let Some(dir) = log_dir
                && let Err(io) = append_failure(dir, &at, e, started.elapsed())
            {
                tracing::warn!(target: "capt_hook_llm", error = %io, "could not keep the failure record");
            }
        }
    }
    result
}

/// The file every call is logged to, under the log directory.
pub const CALL_LOG: &str = "llm-calls.jsonl";

/// Who made a call, for its log lines.
#[derive(Debug, Clone, Copy)]
pub struct CallLog<'a> {
    /// The hook.
    pub hook: &'a str,
    /// The session, when the event named one (`capt-hook logs --judge --session` filters on it).
    pub session: Option<&'a str>,
}

/// Appends one JSON line for a call, answered or not.
pub fn append_call(
    dir: &std::path::Path,
    at: &CallLog<'_>,
    backend: &str,
    result: &Result<Answer, CallError>,
    elapsed: Duration,
) -> std::io::Result<()> {
    let (hook, session) = (at.hook, at.session);
    let line = match result {
        Ok(a) => serde_json::json!({
            "unix_ms": unix_ms(),
            "session": session,
            "hook": hook,
            "backend": a.backend,
            "model": a.model,
            "latency_ms": a.latency.as_millis() as u64,
            "cost_usd": a.cost_usd,
            "ok": true,
        }),
        Err(e) => serde_json::json!({
            "unix_ms": unix_ms(),
            "session": session,
            "hook": hook,
            "backend": backend,
            "latency_ms": elapsed.as_millis() as u64,
            "ok": false,
            "error": e.kind.to_string(),
        }),
    };
    append_line(dir, CALL_LOG, &line)
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Appends `line` to `dir/name`, rotating the file to `name.1` past [`LOG_MAX`].
fn append_line(dir: &std::path::Path, name: &str, line: &Value) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(name);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > LOG_MAX) {
        std::fs::rename(&path, dir.join(format!("{name}.1")))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(f, "{line}")
}

/// The file failure records go to, under the log directory.
pub const FAILURE_LOG: &str = "llm-failures.jsonl";
/// Past this size a log file is rotated to `<name>.1`.
const LOG_MAX: u64 = 1 << 20;

/// Appends one JSON line for a failed call.
pub fn append_failure(
    dir: &std::path::Path,
    at: &CallLog<'_>,
    e: &CallError,
    elapsed: Duration,
) -> std::io::Result<()> {
    let line = serde_json::json!({
        "unix_ms": unix_ms(),
        "session": at.session,
        "hook": at.hook,
        "backend": e.backend,
        "error": e.kind.to_string(),
        "elapsed_ms": elapsed.as_millis() as u64,
        "argv": e.record.argv,
        "exit_code": e.record.exit_code,
        "stderr_tail": e.record.stderr_tail,
        "prompt_tail": e.record.prompt_tail,
    });
    append_line(dir, FAILURE_LOG, &line)
}

/// The time left before `deadline`, or `None` when less than `min` remains.
pub(crate) fn time_left(deadline: Instant, min: Duration) -> Option<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    (left >= min).then_some(left)
}

/// The least time worth starting a call with.
pub(crate) const MIN_CALL_TIME: Duration = Duration::from_millis(200);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_tails() {
        for s in [Size::Small, Size::Medium, Size::Large] {
            assert_eq!(Size::parse(s.name()), Some(s));
        }
        assert_eq!(Size::parse("huge"), None);
        assert_eq!(tail("abcdef", 3), "def");
        assert_eq!(tail("ab", 3), "ab");
        assert_eq!(tail("éèà", 2), "èà");
    }

    #[test]
    fn a_failed_judge_leaves_a_record_line() {
        struct Broken;
        impl Backend for Broken {
            fn name(&self) -> &'static str {
                "broken"
            }
            fn judge(&self, call: &Call<'_>) -> Result<Answer, CallError> {
                Err(CallError {
                    backend: "claude",
                    kind: CallErrorKind::Exit("exit status: 3".into()),
                    record: Box::new(FailureRecord {
                        backend: "claude".into(),
                        argv: vec!["claude".into(), "-p".into()],
                        exit_code: Some(3),
                        stderr_tail: "boom".into(),
                        prompt_tail: tail(call.prompt, TAIL_CHARS),
                    }),
                })
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let schema = VerdictSchema::gate();
        let c = test_support::call("why?", &schema, Duration::from_secs(1));
        assert!(judge(&Broken, &c, "t:llm_gate_x", Some("s9"), Some(dir.path())).is_err());
        let text = std::fs::read_to_string(dir.path().join(FAILURE_LOG)).unwrap();
        let v: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["hook"], "t:llm_gate_x");
        assert_eq!(v["session"], "s9");
        assert_eq!(v["exit_code"], 3);
        assert_eq!(v["argv"], serde_json::json!(["claude", "-p"]));
        assert_eq!(v["stderr_tail"], "boom");
        assert_eq!(v["prompt_tail"], "why?");
        let calls = std::fs::read_to_string(dir.path().join(CALL_LOG)).unwrap();
        let c: Value = serde_json::from_str(calls.trim()).unwrap();
        assert_eq!(
            (c["ok"].clone(), c["backend"].clone()),
            (Value::Bool(false), "broken".into())
        );
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// A call with `prompt` and a deadline `within` from now.
    pub fn call<'a>(prompt: &'a str, schema: &'a VerdictSchema, within: Duration) -> Call<'a> {
        Call {
            prompt,
            task: prompt,
            schema,
            size: Size::Small,
            agent: false,
            cwd: None,
            deadline: Instant::now() + within,
        }
    }

    /// A verdict of one unbounded integer: a schema Jev cannot answer.
    pub fn open_number_schema() -> VerdictSchema {
        VerdictSchema::new(vec![Field::new(
            "n",
            FieldType::Integer {
                min: None,
                max: None,
            },
            "",
        )])
        .expect("a valid schema")
    }

    /// Writes an executable `sh` script with `body` into `dir` under a fresh name and returns
    /// its path.
    pub fn fake_cli(dir: &std::path::Path, body: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(format!("fake-{}", fastrand_name()));
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write fake cli");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path.display().to_string()
    }

    fn fastrand_name() -> String {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        format!(
            "{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        )
    }
}

//! Judge calls (LLM hooks asking a model) an event made: recorded on the event while its hooks
//! run, then kept in the event's session log line and in the ledger's `judge_calls` table, so
//! `capt-hook logs` and `capt-hook decisions` show what each verdict cost and how long it took.

use parking_lot::Mutex;

use capt_hook_core::Event;
use serde::{Deserialize, Serialize};

/// One call to a judge, answered or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeCall {
    /// The hook that asked.
    pub hook: String,
    /// The backend (`claude`, `codex`, `command`, `jev`).
    pub backend: String,
    /// The model that answered, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Wall-clock time of the call.
    pub latency_ms: u64,
    /// What it cost, when the backend says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The judge gave a verdict.
    pub ok: bool,
    /// Why it gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The event memo key the calls are kept under.
const KEY: &str = "captain_hook.judge_calls";

/// The calls one event made so far.
#[derive(Debug, Default)]
struct Calls(Mutex<Vec<JudgeCall>>);

/// Records a call `evt`'s hook made (any thread; hooks judge side by side).
pub fn record(evt: &Event, call: JudgeCall) {
    evt.memo(KEY, Calls::default).0.lock().push(call);
}

/// The calls made for `evt`, its batch's per-call views included, in the order recorded.
pub fn recorded(evt: &Event) -> Vec<JudgeCall> {
    let own = |e: &Event| {
        e.memo_peek::<Calls>(KEY)
            .map(|c| c.0.lock().clone())
            .unwrap_or_default()
    };
    let mut out = own(evt);
    for call in evt.batch_calls() {
        out.extend(own(call));
    }
    out
}

/// A ledger row for one judge call, tied to its event by session, time and hook.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJudgeCall {
    /// The event's arrival (Unix milliseconds), as its decision rows have it.
    pub ts_ms: u64,
    /// The session.
    pub session_id: String,
    /// The event name.
    pub event: String,
    /// Digest of the tool call, on tool events.
    pub tool_digest: Option<String>,
    /// Its place among the event's calls (two calls of one hook stay two rows).
    pub seq: u32,
    /// The call.
    pub call: JudgeCall,
}

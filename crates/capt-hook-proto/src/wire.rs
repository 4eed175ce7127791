//! The messages. Every decoder refuses unknown fields, so a peer from another build fails loudly
//! instead of being half-understood.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One event as the client prepares it; the host forwards it to a worker unchanged except for
/// the deadline, and `capt-hook-worker evaluate` reads the same shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventRequest {
    /// Shape version of this struct; always 1.
    pub schema: u32,
    /// The Claude Code event name from the client's argv (`PreToolUse`, `Stop`, …).
    pub event: String,
    /// The project root: `CLAUDE_PROJECT_DIR`, else `FACTORY_PROJECT_DIR`, else the payload's `cwd`.
    pub root: String,
    /// The payload's `cwd` (the root when the payload has none).
    pub cwd: String,
    /// The request-scoped environment subset (see [`request_env`]).
    pub env: BTreeMap<String, String>,
    /// The stdin bytes, untouched.
    pub payload_raw: String,
    /// The client's pid; the host checks it against the socket peer's.
    pub client_pid: u32,
    /// The client's parent pid (the agent that ran the hook).
    pub client_ppid: u32,
    /// Unix milliseconds after which nobody waits for the answer; 0 = none.
    pub deadline_unix_ms: u64,
    /// Set by the host: changes after each ResourcePressure event it had evaluated. A worker
    /// that found no waiting notice for a session under this value need not look on disk
    /// again until it changes. Clients leave it out; without it the worker always looks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice_epoch: Option<u64>,
    /// Set by the host: notices of its own for the user (a newer release), which the worker
    /// renders into the answer's `systemMessage` after the hooks' own. Typed, so nobody edits
    /// an envelope once it is rendered. Clients leave it empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// Set by the host for an event our hooks module (a mod) posted: the worker adds the answer
    /// as a mod returns it ([`EventResponse::classic`]). Clients leave it out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub classic: bool,
    /// The coding agent that sent the event (`hook run --agent codex BeforeTool`), when it is
    /// not Claude Code: then `event` is the agent's own event name and `payload_raw` its own
    /// payload, and the worker reads both through that agent's adapter and answers in its
    /// shape. Left out for Claude Code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Set by the client on a guarded event it may evaluate locally after the host: whoever
    /// runs the event first claims this id ([`crate::claim`]), so its hooks run once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// Why an event request cannot be served.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// A message schema this build does not speak.
    Schema(u32),
    /// A required field is empty.
    Missing(&'static str),
    /// The payload is larger than [`crate::MAX_EVENT_INPUT`] bytes.
    TooLarge(usize),
    /// The client pid cannot be a real client's.
    ClientPid,
    /// The deadline passed before the event could be dispatched.
    DeadlinePassed,
    /// The request id cannot name a claim ([`crate::claim::valid_id`]).
    RequestId,
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Schema(n) => write!(f, "unsupported event schema {n}"),
            RequestError::Missing(field) => write!(f, "{field} is required"),
            RequestError::TooLarge(len) => write!(
                f,
                "payload of {len} bytes exceeds {} bytes",
                crate::MAX_EVENT_INPUT
            ),
            RequestError::ClientPid => f.write_str("client_pid must be greater than 1"),
            RequestError::DeadlinePassed => f.write_str("deadline passed before dispatch"),
            RequestError::RequestId => write!(
                f,
                "request_id must be 1 to {} letters, digits, '-' or '_'",
                crate::claim::MAX_ID_LEN
            ),
        }
    }
}

impl std::error::Error for RequestError {}

impl EventRequest {
    /// Checks the fields a receiver relies on; the error names the first bad one.
    pub fn validate(&self) -> Result<(), RequestError> {
        if self.schema != 1 {
            return Err(RequestError::Schema(self.schema));
        }
        for (name, value) in [
            ("event", &self.event),
            ("root", &self.root),
            ("cwd", &self.cwd),
        ] {
            if value.is_empty() {
                return Err(RequestError::Missing(name));
            }
        }
        if self.payload_raw.len() > crate::MAX_EVENT_INPUT {
            return Err(RequestError::TooLarge(self.payload_raw.len()));
        }
        if self.client_pid <= 1 {
            return Err(RequestError::ClientPid);
        }
        if self
            .request_id
            .as_deref()
            .is_some_and(|id| !crate::claim::valid_id(id))
        {
            return Err(RequestError::RequestId);
        }
        Ok(())
    }

    /// The request's deadline as an `Instant`: `None` when it has none, an error when it has
    /// already passed.
    pub fn deadline(&self) -> Result<Option<std::time::Instant>, RequestError> {
        if self.deadline_unix_ms == 0 {
            return Ok(None);
        }
        crate::clock::instant_of(self.deadline_unix_ms)
            .map(Some)
            .ok_or(RequestError::DeadlinePassed)
    }
}

/// Whether a worker dispatched the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The engine ran; stdout/stderr/exit are its answer.
    Ok,
    /// The worker failed to run the event; stderr says why.
    Error,
}

/// What an answer tells Claude Code about the call it guards: read by the client to decide its
/// fallbacks, so it never has to read the envelope back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The answer gives no decision (most events; a warning; a notice).
    #[default]
    None,
    /// The call is approved without the user.
    Allow,
    /// The user decides, and is told why (`permissionDecision: "ask"`, or a PermissionRequest
    /// left to its dialog with a message).
    Ask,
    /// The call is refused.
    Deny,
}

/// The answer to one event: what `hook` prints and how it exits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventResponse {
    /// Shape version of this struct; always 1.
    pub schema: u32,
    /// Whether the event was dispatched.
    pub status: Status,
    /// Bytes for the client's stdout, verbatim: the envelope, rendered once, by the worker.
    pub stdout: String,
    /// The decision `stdout` gives, typed: what the client's fallbacks read.
    #[serde(default)]
    pub decision: Decision,
    /// Bytes for the client's stderr, verbatim.
    pub stderr: String,
    /// The client's exit code.
    pub exit: i32,
    /// Time the worker spent on the event.
    pub elapsed_ms: f64,
    /// `true` when every hook finished inside the deadline, so a mandatory event was checked.
    #[serde(default)]
    pub guard_completed: bool,
    /// The worker's own Rust hooks are older than their sources: it answered with the TOML
    /// hooks alone and asks the host to retire it and build the new sources.
    #[serde(default)]
    pub stale_build: bool,
    /// The answer as a mod returns it, when the request asked for it
    /// ([`EventRequest::classic`]): built from the same typed output as `stdout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classic: Option<Box<crate::ClassicAnswer>>,
}

/// A message from a client (`hook`, `capt-hookd status`, …) to the host: one per connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostRequest {
    /// The sender's [`crate::PROTOCOL`]; the host refuses any other.
    pub protocol: u32,
    /// The sender's [`crate::BUILD`]; events from another build are refused.
    pub build: String,
    /// The sender's pid; must equal the pid the kernel reports for the socket peer.
    pub client_pid: u32,
    /// What the sender wants.
    pub op: Op,
}

impl HostRequest {
    /// An event request from this build.
    pub fn event(client_pid: u32, request: EventRequest) -> HostRequest {
        HostRequest::new(client_pid, Op::Event(Box::new(request)))
    }

    /// A request from this build.
    pub fn new(client_pid: u32, op: Op) -> HostRequest {
        HostRequest {
            protocol: crate::PROTOCOL,
            build: crate::BUILD.into(),
            client_pid,
            op,
        }
    }
}

/// The host operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Evaluate one event on the project's worker (boxed: it is large beside the other
    /// operations; clippy's large_enum_variant).
    Event(Box<EventRequest>),
    /// Describe the host and its workers.
    Status,
    /// Stop and reap every worker; keep the host.
    RestartWorkers,
    /// Stop admitting, drain, stop the workers, exit.
    Shutdown,
    /// Report the host's protocol and build.
    Version,
}

/// Why the host did not dispatch a request: the client may retry or fall back, knowing the
/// event did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// The request's protocol is not the host's.
    ProtocolMismatch,
    /// The client's build is not the host's (a half-finished upgrade).
    BuildMismatch,
    /// The peer is another user, or its claimed pid is not the kernel's.
    Untrusted,
    /// The host is shutting down.
    Draining,
    /// The request's deadline passed before it could be dispatched.
    DeadlinePassed,
    /// The request is malformed (a field failed validation).
    BadRequest,
    /// The host is at a resource limit (connections, memory for frames in flight, workers);
    /// the event did not run and the client should evaluate it another way.
    Busy,
}

/// The host's single reply on a connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostReply {
    /// The worker's answer to an event.
    Event(EventResponse),
    /// The request was not dispatched.
    Refused {
        /// The class of refusal.
        code: Refusal,
        /// A sentence for logs and stderr.
        reason: String,
    },
    /// The request was dispatched and failed in flight (worker died, timed out, broke protocol).
    Failed {
        /// A sentence for logs and stderr.
        message: String,
        /// The worker did not answer before the deadline (the client may retry a mandatory
        /// event once); otherwise it broke or crashed.
        timed_out: bool,
    },
    /// The answer to [`Op::Status`].
    Status(HostStatus),
    /// The answer to [`Op::Version`].
    Version {
        /// The host's [`crate::PROTOCOL`].
        protocol: u32,
        /// The host's [`crate::BUILD`].
        build: String,
        /// The host's pid.
        pid: u32,
    },
    /// A control operation completed.
    Done,
}

/// The host and its live workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostStatus {
    /// Shape version of this struct; always 1.
    pub schema: u32,
    /// The host's pid.
    pub pid: u32,
    /// The host's build.
    pub build: String,
    /// Milliseconds since the host started.
    pub uptime_ms: u64,
    /// Unix milliseconds when the host started.
    pub started_at_unix_ms: u64,
    /// Events being served right now, across workers.
    pub in_flight: u64,
    /// Every live worker, sorted by key.
    pub workers: Vec<WorkerStatus>,
    /// Client connections open right now (this one included).
    #[serde(default)]
    pub connections: u64,
    /// Bytes of request frames being received or served right now (this one's included),
    /// counted against the host's frame memory budget.
    #[serde(default)]
    pub frame_bytes: u64,
}

/// One live worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerStatus {
    /// 16 hex characters of a hash of the canonical root and the semantic environment.
    pub key: String,
    /// The canonical project root.
    pub root: String,
    /// The worker's pid.
    pub pid: u32,
    /// Counts workers started by this host; a retired worker's successor has a higher one.
    pub generation: u64,
    /// Events sent and not yet answered (including ones whose caller gave up).
    pub outstanding: u64,
    /// Events answered.
    pub served: u64,
    /// Unix milliseconds when the worker started.
    pub started_at_unix_ms: u64,
}

/// Frames on a worker's stdin/stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkerFrame {
    /// First frame each way: the host names its build; the worker echoes its own.
    Hello {
        /// The sender's [`crate::PROTOCOL`].
        protocol: u32,
        /// The sender's [`crate::BUILD`].
        build: String,
    },
    /// Host → worker: evaluate this event and answer with the same id.
    Event {
        /// Unique per worker connection, never 0.
        id: u64,
        /// The event.
        request: EventRequest,
    },
    /// Worker → host: the answer to the event with this id.
    Result {
        /// The event's id.
        id: u64,
        /// The answer.
        response: EventResponse,
    },
    /// Worker → host: the event with this id was not evaluated.
    Error {
        /// The event's id.
        id: u64,
        /// Why.
        error: String,
    },
}

/// Variables that belong to one request: sent along with the event, never copied into a
/// worker's base environment.
pub fn is_request_env(name: &str) -> bool {
    // DISABLE_AUTOUPDATER: the host's release check follows the session's choice.
    matches!(
        name,
        "XDG_CACHE_HOME" | "CEREBRAS_API_KEY" | crate::env::DISABLE_AUTOUPDATER
    ) || [
        "CAPT_HOOK_",
        "CAPTAIN_HOOK_",
        "HOOKS_",
        "CLAUDE_",
        "FACTORY_",
        "ORCA_",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// Variables that change what hooks do, so workers are keyed by them: two sessions that differ
/// in any of these never share a worker.
pub fn is_semantic_env(name: &str) -> bool {
    matches!(
        name,
        "XDG_CACHE_HOME"
            | "CAPTAIN_HOOK_STATE_DIR"
            | "CAPTAIN_HOOK_LOG_DIR"
            | "CAPTAIN_HOOK_TASKS_DIR"
            | "CAPT_HOOK_DECISIONS_DB"
            | "CAPT_HOOK_BUILD_DIR"
            | "CAPT_HOOK_SDK"
            | "CLAUDE_CONFIG_DIR"
            | crate::env::CAPT_HOOK_POLICY_DIR
            | crate::env::CAPT_HOOK_POLICY_KEY
    ) || name.starts_with("HOOKS_")
}

/// The request-scoped subset of an environment.
pub fn request_env<I: IntoIterator<Item = (String, String)>>(vars: I) -> BTreeMap<String, String> {
    vars.into_iter()
        .filter(|(k, _)| is_request_env(k))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{decode, encode};

    pub(crate) fn sample_request() -> EventRequest {
        EventRequest {
            schema: 1,
            event: "PreToolUse".into(),
            root: "/p".into(),
            cwd: "/p".into(),
            env: BTreeMap::from([("HOOKS_X".into(), "1".into())]),
            payload_raw: "{\"cwd\":\"/p\"}".into(),
            client_pid: 1234,
            client_ppid: 1,
            deadline_unix_ms: 0,
            notice_epoch: None,
            notices: Vec::new(),
            classic: false,
            agent: None,
            request_id: None,
        }
    }

    #[test]
    fn messages_round_trip() {
        let req = HostRequest::event(9, sample_request());
        assert_eq!(decode::<HostRequest>(&encode(&req)).unwrap(), req);
        let frame = WorkerFrame::Event {
            id: 3,
            request: sample_request(),
        };
        let text = String::from_utf8(encode(&frame)).unwrap();
        assert!(text.starts_with("{\"op\":\"event\",\"id\":3,"), "{text}");
        assert_eq!(decode::<WorkerFrame>(text.as_bytes()).unwrap(), frame);
        let status = HostRequest::new(9, Op::Status);
        assert!(
            String::from_utf8(encode(&status))
                .unwrap()
                .contains("\"op\":\"status\"")
        );
        let refused = HostReply::Refused {
            code: Refusal::Draining,
            reason: "bye".into(),
        };
        assert_eq!(decode::<HostReply>(&encode(&refused)).unwrap(), refused);
    }

    #[test]
    fn unknown_fields_and_trailing_json_are_refused() {
        let mut v: serde_json::Value = serde_json::from_slice(&encode(&sample_request())).unwrap();
        v["extra"] = 1.into();
        assert!(decode::<EventRequest>(v.to_string().as_bytes()).is_err());
        let hello = br#"{"op":"hello","protocol":1,"build":"x","id":4}"#;
        assert!(decode::<WorkerFrame>(hello).is_err());
        let mut body = encode(&sample_request());
        body.extend_from_slice(b" {}");
        assert!(decode::<EventRequest>(&body).is_err());
    }

    #[test]
    fn validation_names_the_bad_field() {
        let mut r = sample_request();
        r.cwd.clear();
        assert_eq!(r.validate().unwrap_err().to_string(), "cwd is required");
        let mut r = sample_request();
        r.client_pid = 1;
        assert!(r.validate().is_err());
        assert!(sample_request().validate().is_ok());
    }

    #[test]
    fn env_families() {
        assert!(is_request_env("CLAUDE_PROJECT_DIR"));
        assert!(is_request_env("HOOKS_FOO"));
        assert!(!is_request_env("PATH"));
        assert!(is_semantic_env("HOOKS_FOO"));
        // Where Claude Code's settings and plugin roster are: which plugin packs load.
        assert!(is_semantic_env("CLAUDE_CONFIG_DIR"));
        assert!(!is_semantic_env("CLAUDE_CODE_SESSION_ID"));
        // Which policy packs load and the key they must be signed with: a worker per pair.
        assert!(is_semantic_env("CAPT_HOOK_POLICY_DIR"));
        assert!(is_semantic_env("CAPT_HOOK_POLICY_KEY"));
        // Claude Code's switch the release check follows travels with the request.
        assert!(is_request_env("DISABLE_AUTOUPDATER"));
        assert!(!is_semantic_env("DISABLE_AUTOUPDATER"));
    }
}

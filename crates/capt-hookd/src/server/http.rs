//! The host's HTTP side: our plugin's hooks module (a mod Claude Code runs inside itself) posts
//! each event to its own 0600 Unix socket beside the framed one, through Claude Code's HTTP
//! client, so no process starts per event.
//!
//! One request per connection: `POST /v1/event` with a `Content-Length` body
//! ([`ModRequest`]); the reply is [`ModReply`] (200) or [`ModError`]. The socket gets what the
//! framed one gets: the same peer-uid check, connection cap and shedding, stall and read
//! timeouts, frame memory budget, worker pool and verdicts. The peer is Claude Code itself, so
//! its pid stands for the client's and the client's parent's.
//!
//! The request head is parsed with `httparse` (already in the tree through `ureq`), not a
//! server framework: one POST with a length is all a mod sends, and the reading of its body
//! must go through the same budgeted reader as a frame.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capt_hook_proto::classic::{EVENT_PATH, ModError, ModReply, ModRequest};
use capt_hook_proto::failure::{is_guarded, shortfall};
use capt_hook_proto::serde_json::{self, Value};
use capt_hook_proto::{ClassicAnswer, EventRequest, EventResponse, HostReply, MAX_FRAME};
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::{Host, REPLY_WRITE, REQUEST_READ, STALL};
use crate::conns::Conn;
use crate::framing::{Held, RequestError, read_body, read_some};

/// Longest request head (request line and headers) read.
const MAX_HEAD: usize = 16 * 1024;
/// Most headers parsed.
const MAX_HEADERS: usize = 32;
/// How long an answer left for the command hook is kept: it asks right after the mod passes.
const REMEMBER_FOR: Duration = Duration::from_secs(30);
/// Most answers kept for command hooks at once; the oldest goes first.
const REMEMBER_MAX: usize = 256;

/// A reply: status code and JSON body.
type Reply = (u16, String);

fn error(status: u16, message: impl Into<String>) -> Reply {
    let body = serde_json::to_string(&ModError {
        error: message.into(),
    })
    .unwrap_or_default();
    (status, body)
}

/// Registers a connection to the HTTP socket and starts its task; at the cap the client is
/// told the host is busy.
pub(super) fn admit(stream: UnixStream, host: &Arc<Host>, drained: &mpsc::Sender<()>) {
    let Some(registered) = host.conns.admit(host.max_connections) else {
        tokio::spawn(async move {
            let mut stream = stream;
            let busy = error(503, "the host is at its connection cap; try again");
            let _ = tokio::time::timeout(REPLY_WRITE, write_reply(&mut stream, &busy)).await;
        });
        return;
    };
    let (host, done) = (Arc::clone(host), drained.clone());
    tokio::spawn(async move {
        let conn = Arc::clone(&registered.conn);
        handle(stream, &host, &conn).await;
        drop((registered, done));
    });
}

/// Serves one connection: one request, one reply, then close.
async fn handle(mut stream: UnixStream, host: &Host, conn: &Conn) {
    let arrival = tokio::select! {
        biased;
        () = conn.shed() => None,
        read = tokio::time::timeout(REQUEST_READ, read_request(&mut stream, host, conn)) => Some(
            match read {
                Ok(r) => r,
                Err(_) => Err(error(408, "no complete request within the read timeout")),
            },
        ),
    };
    let reply = match arrival {
        None => {
            let _ = stream.try_write(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
            return;
        }
        Some(Err(reply)) => reply,
        Some(Ok(_)) if !conn.serving() => return,
        Some(Ok((req, pid, held))) => {
            let reply = serve(req, pid, host).await;
            drop(held);
            reply
        }
    };
    if reply.0 != 200 {
        tracing::info!(status = reply.0, body = %reply.1, "mod request not served");
    }
    match tokio::time::timeout(REPLY_WRITE, write_reply(&mut stream, &reply)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "mod left before its reply"),
        Err(_) => tracing::debug!("mod did not take its reply"),
    }
}

async fn write_reply(stream: &mut UnixStream, (status, body): &Reply) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await
}

/// Reads and authenticates one request: the peer's uid is the host's; its pid stands for the
/// client's.
async fn read_request(
    stream: &mut UnixStream,
    host: &Host,
    conn: &Conn,
) -> Result<(ModRequest, u32, Held), Reply> {
    let cred = stream
        .peer_cred()
        .map_err(|e| error(403, format!("no peer credentials: {e}")))?;
    if cred.uid() != host.euid {
        return Err(error(
            403,
            format!("peer uid {} is not the host's", cred.uid()),
        ));
    }
    let pid = cred
        .pid()
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p > 1)
        .ok_or_else(|| error(403, "the peer's pid is unknown"))?;
    let mut head = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut first = true;
    let (head_len, len) = loop {
        let n = read_some(stream, &mut chunk, STALL)
            .await
            .map_err(|e| error(400, e.to_string()))?;
        if n == 0 {
            return Err(error(400, "the connection closed inside the request head"));
        }
        if first {
            conn.reading();
            first = false;
        }
        head.extend_from_slice(&chunk[..n]);
        if let Some(parsed) = parse_head(&head)? {
            break parsed;
        }
        if head.len() > MAX_HEAD {
            return Err(error(400, format!("request head over {MAX_HEAD} bytes")));
        }
    };
    let mut held = Held::new(Arc::clone(&host.budget));
    let body = read_body(stream, len, &head[head_len..], &mut held, STALL)
        .await
        .map_err(|e| match e {
            RequestError::OverBudget { .. } => error(503, e.to_string()),
            e => error(400, e.to_string()),
        })?;
    drop(head);
    let req: ModRequest = serde_json::from_slice(&body)
        .map_err(|e| error(400, format!("the request body is not a ModRequest: {e}")))?;
    Ok((req, pid, held))
}

/// The head's length and the body's, once the head is complete; an error reply for a request
/// this side does not serve.
fn parse_head(bytes: &[u8]) -> Result<Option<(usize, usize)>, Reply> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(error(400, format!("malformed request head: {e}"))),
    };
    if req.method != Some("POST") {
        return Err(error(405, "only POST is served"));
    }
    if req.path != Some(EVENT_PATH) {
        return Err(error(404, format!("only {EVENT_PATH} is served")));
    }
    let mut len = None;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(error(411, "send the body with a Content-Length"));
        }
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .ok_or_else(|| error(400, "Content-Length is not a number"))?;
            len = Some(n);
        }
    }
    let len = len.ok_or_else(|| error(411, "send the body with a Content-Length"))?;
    if len > MAX_FRAME {
        return Err(error(
            413,
            format!("a {len}-byte body is over the {MAX_FRAME}-byte limit"),
        ));
    }
    Ok(Some((head_len, len)))
}

/// The event a [`ModRequest`] stands for, as a command hook's client would send it.
fn event_request(req: ModRequest, pid: u32) -> Result<EventRequest, Reply> {
    let payload = req.payload().map_err(|e| error(400, e.to_string()))?;
    let text = |v: Option<&String>| v.filter(|s| !s.is_empty()).cloned();
    let cwd = payload
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    // The project root as the client finds it.
    let root = text(req.env.get(capt_hook_proto::env::CLAUDE_PROJECT_DIR))
        .or_else(|| text(req.env.get(capt_hook_proto::env::FACTORY_PROJECT_DIR)))
        .or_else(|| cwd.clone())
        .ok_or_else(|| {
            error(
                400,
                "no project root: env has no CLAUDE_PROJECT_DIR and the input no cwd",
            )
        })?;
    Ok(EventRequest {
        schema: 1,
        event: req.event,
        cwd: cwd.unwrap_or_else(|| root.clone()),
        root,
        env: capt_hook_proto::request_env(req.env),
        payload_raw: serde_json::to_string(&payload).unwrap_or_default(),
        client_pid: pid,
        client_ppid: pid,
        deadline_unix_ms: 0,
        notice_epoch: None,
        notices: Vec::new(),
        classic: true,
        agent: None,
        request_id: None,
    })
}

/// Evaluates the event and answers the mod.
async fn serve(req: ModRequest, pid: u32, host: &Host) -> Reply {
    let event = match event_request(req, pid) {
        Ok(e) => e,
        Err(reply) => return reply,
    };
    let key = MemoKey::of(&event.event, &event.payload_raw);
    let event_name = event.event.clone();
    let guarded = is_guarded(&event.event);
    let reply = super::dispatch_event(event, host).await;
    let name = event_name.clone();
    let answer = match reply {
        HostReply::Event(resp) if !(guarded && shortfall(&resp).is_some()) => resp,
        // The host could not give an answer that stands (refused, failed, incomplete): the
        // command hook answers as it does without a mod, with its own fallbacks (a guarded call
        // evaluated locally, else left to the user).
        other => {
            tracing::info!(event = %name, ?other, "a mod's event goes to the command hook");
            let reply = pass_on(Vec::from(["the host's answer".to_owned()]));
            tracing::debug!(event = %name, pass = true, result = "{}", "mod answer");
            return ok(&reply);
        }
    };
    let (reply, remember) = mod_reply(answer);
    // What the mod returns, for a reader of the log (the e2e suite checks verdicts by it).
    tracing::debug!(
        event = %name,
        pass = reply.pass,
        result = %serde_json::to_string(&reply.result).unwrap_or_default(),
        "mod answer"
    );
    if let (Some(resp), Some(key)) = (remember, key) {
        host.remember(key, resp);
    }
    ok(&reply)
}

fn ok(reply: &ModReply) -> Reply {
    (200, serde_json::to_string(reply).unwrap_or_default())
}

/// A reply that leaves the event to the command hook, with nothing remembered for it.
fn pass_on(unsaid: Vec<String>) -> ModReply {
    ModReply {
        decision: capt_hook_proto::Decision::None,
        result: Default::default(),
        pass: true,
        unsaid,
        stdout: String::new(),
        exit: 0,
        stderr: String::new(),
    }
}

/// The mod's reply to the worker's answer, and the answer to keep for the command hook when the
/// mod must pass the event on.
fn mod_reply(mut resp: EventResponse) -> (ModReply, Option<EventResponse>) {
    let ClassicAnswer { result, unsaid } = resp.classic.take().map_or_else(
        || ClassicAnswer {
            result: Default::default(),
            unsaid: vec!["the mod answer (the worker sent none)".into()],
        },
        |answer| *answer,
    );
    let pass = !unsaid.is_empty();
    let reply = ModReply {
        decision: resp.decision,
        result,
        pass,
        unsaid,
        stdout: resp.stdout.clone(),
        exit: resp.exit,
        stderr: resp.stderr.clone(),
    };
    (reply, pass.then_some(resp))
}

/// What ties a mod's event to the command hook's request for the same event: the event, the
/// session, and the tool call or subagent it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MemoKey {
    event: String,
    session: String,
    call: String,
}

impl MemoKey {
    /// The key of an event with this payload; `None` without a session id, which nothing could
    /// be matched on safely.
    pub(super) fn of(event: &str, payload_raw: &str) -> Option<MemoKey> {
        let payload = capt_hook_proto::payload::parse(payload_raw.as_bytes())
            .ok()
            .flatten()?;
        let field = |name: &str| payload.get(name).and_then(Value::as_str).map(str::to_owned);
        Some(MemoKey {
            event: event.to_owned(),
            session: field("session_id").filter(|s| !s.is_empty())?,
            call: field("tool_use_id")
                .or_else(|| field("agent_id"))
                .unwrap_or_default(),
        })
    }
}

/// Answers kept for the command hook (see [`MemoKey`]), oldest first.
#[derive(Debug, Default)]
pub(super) struct Remembered {
    entries: parking_lot::Mutex<Vec<(MemoKey, EventResponse, Instant)>>,
}

impl Remembered {
    fn keep(&self, key: MemoKey, resp: EventResponse) {
        let mut entries = self.entries.lock();
        let now = Instant::now();
        entries.retain(|(k, _, at)| *k != key && now.duration_since(*at) < REMEMBER_FOR);
        if entries.len() >= REMEMBER_MAX {
            entries.remove(0);
        }
        entries.push((key, resp, now));
    }

    /// The answer kept for this event, taken (each is given once).
    pub(super) fn take(&self, event: &EventRequest) -> Option<EventResponse> {
        if self.entries.lock().is_empty() {
            return None;
        }
        let key = MemoKey::of(&event.event, &event.payload_raw)?;
        let mut entries = self.entries.lock();
        let i = entries.iter().position(|(k, _, _)| *k == key)?;
        let (_, resp, at) = entries.remove(i);
        (at.elapsed() < REMEMBER_FOR).then_some(resp)
    }
}

impl Host {
    fn remember(&self, key: MemoKey, resp: EventResponse) {
        self.remembered.keep(key, resp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capt_hook_proto::serde_json::{Map, json};
    use capt_hook_proto::{ClassicResult, Decision, Status};

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn event(name: &str, payload_raw: &str) -> EventRequest {
        EventRequest {
            schema: 1,
            event: name.into(),
            root: "/p".into(),
            cwd: "/p".into(),
            env: Default::default(),
            payload_raw: payload_raw.into(),
            client_pid: 7,
            client_ppid: 6,
            deadline_unix_ms: 0,
            notice_epoch: None,
            notices: Vec::new(),
            classic: false,
            agent: None,
            request_id: None,
        }
    }

    fn resp(classic: Option<ClassicAnswer>) -> EventResponse {
        EventResponse {
            schema: 1,
            status: Status::Ok,
            stdout: "{}\n".into(),
            decision: Decision::Deny,
            stderr: String::new(),
            exit: 0,
            elapsed_ms: 0.0,
            guard_completed: true,
            stale_build: false,
            classic: classic.map(Box::new),
        }
    }

    #[test]
    fn heads_are_read_to_the_bar_the_mod_needs() {
        let ok = b"POST /v1/event HTTP/1.1\r\nHost: d\r\nContent-Length: 12\r\n\r\n{\"a\":1}";
        let (head, len) = parse_head(ok).unwrap().unwrap();
        assert_eq!(len, 12);
        assert_eq!(&ok[head..], b"{\"a\":1}");
        assert_eq!(parse_head(b"POST /v1/event HTTP/1.1\r\nHo").unwrap(), None);
        let status = |b: &[u8]| parse_head(b).unwrap_err().0;
        assert_eq!(status(b"GET /v1/event HTTP/1.1\r\n\r\n"), 405);
        assert_eq!(status(b"POST /x HTTP/1.1\r\n\r\n"), 404);
        assert_eq!(status(b"POST /v1/event HTTP/1.1\r\n\r\n"), 411);
        assert_eq!(
            status(b"POST /v1/event HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            411
        );
        assert_eq!(
            status(b"POST /v1/event HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
            400
        );
        let huge = format!(
            "POST /v1/event HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_FRAME + 1
        );
        assert_eq!(status(huge.as_bytes()), 413);
        assert_eq!(status(b"\x01\x02 nonsense\r\n\r\n"), 400);
    }

    #[test]
    fn a_mod_request_becomes_the_command_hooks_request() {
        let req = ModRequest {
            event: "Stop".into(),
            input: json!({"hook_event_name": "Stop", "session_id": "s", "cwd": "/p/sub"}),
            base: None,
            env: [
                ("CLAUDE_PROJECT_DIR".to_owned(), "/p".to_owned()),
                ("PATH".to_owned(), "/bin".to_owned()),
            ]
            .into(),
        };
        let e = event_request(req, 4242).unwrap();
        assert_eq!((e.root.as_str(), e.cwd.as_str()), ("/p", "/p/sub"));
        assert_eq!((e.client_pid, e.client_ppid), (4242, 4242));
        assert!(e.classic);
        // Only the request-scoped variables travel, as from the client.
        assert!(!e.env.contains_key("PATH") && e.env.contains_key("CLAUDE_PROJECT_DIR"));
        let rootless = ModRequest {
            event: "Stop".into(),
            input: json!({"session_id": "s"}),
            base: None,
            env: Default::default(),
        };
        assert_eq!(event_request(rootless, 9).unwrap_err().0, 400);
    }

    #[test]
    fn an_answer_a_mod_cannot_say_is_kept_for_the_command_hook_once() {
        let said = ClassicAnswer {
            result: ClassicResult {
                deny: Some("no".into()),
                ..Default::default()
            },
            unsaid: Vec::new(),
        };
        let (reply, kept) = mod_reply(resp(Some(said)));
        assert!(!reply.pass && kept.is_none());
        assert_eq!(reply.result.deny.as_deref(), Some("no"));
        let unsaid = ClassicAnswer {
            unsaid: vec!["systemMessage".into()],
            ..Default::default()
        };
        let (reply, kept) = mod_reply(resp(Some(unsaid)));
        assert!(reply.pass);
        let kept = kept.unwrap();
        let payload = object(json!({"session_id": "s", "tool_use_id": "t1"}));
        let raw = serde_json::to_string(&payload).unwrap();
        let memo = Remembered::default();
        memo.keep(MemoKey::of("PreToolUse", &raw).unwrap(), kept.clone());
        let mut asked = event("PreToolUse", &raw);
        // Another call of the same session is not this one.
        asked.payload_raw = r#"{"session_id":"s","tool_use_id":"t2"}"#.into();
        assert_eq!(memo.take(&asked), None);
        asked.payload_raw = raw.clone();
        assert_eq!(memo.take(&asked), Some(kept));
        assert_eq!(memo.take(&asked), None, "an answer is given once");
        // No session id, nothing to match on.
        assert_eq!(MemoKey::of("Stop", "{}"), None);
        // A worker that sent no mod answer leaves the event to the command hook.
        assert!(mod_reply(resp(None)).0.pass);
    }
}

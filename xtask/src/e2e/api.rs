//! A scripted stand-in for a model API on 127.0.0.1: the Anthropic Messages API by default,
//! or another agent's wire ([`Wire`]; those live in `wire.rs`).
//!
//! Claude Code only needs `POST /v1/messages` (streamed as server-sent events) to run a session.
//! Each request that carries `tools` is a turn of an agent's loop (the main agent or a
//! subagent) and gets the next scripted reply; any other request (a side query Claude Code makes
//! for itself) gets a short neutral text, and a judge's call the script does not answer gets a
//! structured "no", so neither consumes the script. Every request is
//! recorded, so a case can assert what the model was sent after a hook answered. Plain
//! `std::net` and one thread per connection: a case makes a handful of requests.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One content block of a scripted model reply.
#[derive(Clone, Debug)]
pub enum Block {
    /// Assistant prose.
    Text(String),
    /// A tool call with its input.
    Tool { name: String, input: Value },
}

/// One scripted reply to an agent-loop request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// The assistant's message; it stops for tool use when it holds a tool call.
    Blocks(Vec<Block>),
    /// An API error with this HTTP status (it uses up its place in the script like a reply).
    Error(u16),
}

/// One request Claude Code made.
#[derive(Clone, Debug)]
pub struct Request {
    /// The HTTP method.
    pub method: String,
    /// The request target, query included.
    pub path: String,
    /// The JSON body (`Null` when there was none or it was not JSON).
    pub body: Value,
    /// Whether it was an agent-loop turn (it consumed a scripted reply).
    pub turn: bool,
}

/// The bodies of the agent-loop requests among `requests`, in order.
pub fn turns(requests: &[Request]) -> Vec<&Value> {
    requests
        .iter()
        .filter(|r| r.turn)
        .map(|r| &r.body)
        .collect()
}

/// The first agent-loop turn (from 1) whose request contains `needle` anywhere, if any.
pub fn first_sent(requests: &[Request], needle: &str) -> Option<usize> {
    turns(requests)
        .iter()
        .position(|b| b.to_string().contains(needle))
        .map(|i| i + 1)
}

/// The API dialect the fake speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic's Messages API (Claude Code).
    Messages,
    /// OpenAI's Responses API (Codex's custom model provider).
    Responses,
    /// Google's Gemini API, `generateContent` and `streamGenerateContent` (Gemini CLI).
    Gemini,
}

/// What the server shares with its connection threads.
struct State {
    wire: Wire,
    script: Vec<Reply>,
    turns: usize,
    requests: Vec<Request>,
}

/// A running fake API; it stops accepting when dropped.
pub struct FakeApi {
    port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

/// The id the fake gives the `index`th block of the `turn`th reply (both from 1), so a case
/// can find the tool result that answers it.
pub fn tool_id(turn: usize, index: usize) -> String {
    format!("toolu_e2e_{turn}_{index}")
}

/// What an unscripted turn (the script ran out) and every side query get.
pub const FILLER: &str = "Done.";

impl FakeApi {
    /// Listens on an ephemeral loopback port and serves `script` in order, as the Messages API.
    pub fn start(script: Vec<Reply>) -> io::Result<FakeApi> {
        FakeApi::start_wire(Wire::Messages, script)
    }

    /// Listens on an ephemeral loopback port and serves `script` in order, speaking `wire`.
    pub fn start_wire(wire: Wire, script: Vec<Reply>) -> io::Result<FakeApi> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(Mutex::new(State {
            wire,
            script,
            turns: 0,
            requests: Vec::new(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let st = st.clone();
                std::thread::spawn(move || {
                    if let Err(e) = serve(conn, &st) {
                        // A client hanging up mid-request is normal at exit; anything else
                        // would show up as a failed case anyway.
                        if e.kind() != io::ErrorKind::UnexpectedEof {
                            eprintln!("fake api: {e}");
                        }
                    }
                });
            }
        });
        Ok(FakeApi { port, state, stop })
    }

    /// The base URL for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.state
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Serves one keep-alive connection until the client closes it.
fn serve(conn: TcpStream, state: &Mutex<State>) -> io::Result<()> {
    let mut out = conn.try_clone()?;
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let (method, path) = match (parts.next(), parts.next()) {
            (Some(m), Some(p)) => (m.to_owned(), p.to_owned()),
            _ => return Ok(()),
        };
        let mut length = 0usize;
        let mut chunked = false;
        let mut close = false;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().unwrap_or(0),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => close = value.eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
        let body = if chunked {
            read_chunked(&mut reader)?
        } else {
            let mut body = vec![0; length];
            reader.read_exact(&mut body)?;
            body
        };
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (status, content_type, payload) = answer(&method, &path, body, state);
        write!(
            out,
            "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nrequest-id: req_e2e\r\n\r\n",
            if status == 200 { "OK" } else { "Error" },
            payload.len()
        )?;
        out.write_all(payload.as_bytes())?;
        out.flush()?;
        if close {
            let _ = out.shutdown(Shutdown::Both);
            return Ok(());
        }
    }
}

fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk)?;
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

/// Whether the Messages fake answers `path` (anything else gets a 404 and is reported).
pub fn served(path: &str) -> bool {
    served_by(Wire::Messages, path)
}

/// Whether the fake speaking `wire` answers `path`.
pub fn served_by(wire: Wire, path: &str) -> bool {
    let route = path.split('?').next().unwrap_or(path);
    match wire {
        Wire::Messages => matches!(route, "/v1/messages" | "/v1/messages/count_tokens"),
        Wire::Responses | Wire::Gemini => super::wire::served(wire, route),
    }
}

/// Records the request and picks the answer: `(status, content type, body)`.
fn answer(
    method: &str,
    path: &str,
    body: Value,
    state: &Mutex<State>,
) -> (u16, &'static str, String) {
    let Ok(mut st) = state.lock() else {
        return (
            500,
            "application/json",
            error_body("fake api state poisoned"),
        );
    };
    let route = path.split('?').next().unwrap_or(path);
    let with_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    // A judge's call (an LLM hook's `claude -p` offered only StructuredOutput) that the script
    // has no answer for (a builtin pack's judge beside what the case tests) gets a verdict that
    // says no, and leaves the script to the agents.
    let judge_schema = judge_schema(&body).filter(|_| {
        !matches!(st.script.get(st.turns), Some(Reply::Blocks(b))
            if b.iter().any(|x| matches!(x, Block::Tool { name, .. } if name == STRUCTURED)))
    });
    let is_turn = method == "POST"
        && with_tools
        && judge_schema.is_none()
        && (route == "/v1/messages" || (st.wire != Wire::Messages && served_by(st.wire, route)));
    st.requests.push(Request {
        method: method.to_owned(),
        path: path.to_owned(),
        body: body.clone(),
        turn: is_turn,
    });
    if st.wire != Wire::Messages {
        let reply = if is_turn {
            st.turns += 1;
            let reply = st.script.get(st.turns - 1).cloned();
            (st.turns, reply)
        } else {
            (0, None)
        };
        return super::wire::answer(st.wire, method, path, reply);
    }
    match (method, route) {
        ("POST", "/v1/messages") => {
            let (turn, reply) = if is_turn {
                st.turns += 1;
                (st.turns, st.script.get(st.turns - 1).cloned())
            } else if let Some(schema) = &judge_schema {
                let no = Block::Tool {
                    name: STRUCTURED.into(),
                    input: saying_no(schema),
                };
                (0, Some(Reply::Blocks(vec![no])))
            } else {
                (0, None)
            };
            let blocks = match reply {
                Some(Reply::Error(status)) => {
                    return (status, "application/json", error_body("scripted failure"));
                }
                Some(Reply::Blocks(blocks)) => blocks,
                None => vec![Block::Text(FILLER.into())],
            };
            let model = body["model"].as_str().unwrap_or("claude-e2e").to_owned();
            if body["stream"].as_bool() == Some(true) {
                (200, "text/event-stream", sse(turn, &model, &blocks))
            } else {
                (200, "application/json", whole(turn, &model, &blocks))
            }
        }
        ("POST", "/v1/messages/count_tokens") => (
            200,
            "application/json",
            json!({"input_tokens": 100}).to_string(),
        ),
        // Anything else is logged by the case runner (it is in `requests`) and refused.
        _ => (
            404,
            "application/json",
            error_body("not served by the e2e fake"),
        ),
    }
}

/// The tool Claude Code's `-p --json-schema` offers a model for its structured answer.
const STRUCTURED: &str = "StructuredOutput";

/// The answer schema of a judge's call: one offered [`STRUCTURED`] (only `claude -p
/// --json-schema` offers it; 2.1.332 sends a deferred-tools placeholder beside it).
fn judge_schema(body: &Value) -> Option<Value> {
    body["tools"]
        .as_array()?
        .iter()
        .find(|t| t["name"] == STRUCTURED)
        .map(|t| t["input_schema"].clone())
}

/// A value of `schema` that says no: every required field false, empty or zero.
fn saying_no(schema: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let Some(name) = name.as_str() else { continue };
        let kind = &schema["properties"][name]["type"];
        let value = match kind.as_str().or_else(|| kind[0].as_str()) {
            Some("boolean") => json!(false),
            Some("number" | "integer") => json!(0),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!(""),
        };
        out.insert(name.to_owned(), value);
    }
    Value::Object(out)
}

/// An error body in Anthropic's shape (the other wires read the HTTP status).
pub fn error_body(message: &str) -> String {
    json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
        .to_string()
}

fn stop_reason(blocks: &[Block]) -> &'static str {
    if blocks.iter().any(|b| matches!(b, Block::Tool { .. })) {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn usage() -> Value {
    json!({"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

/// A non-streamed reply.
fn whole(turn: usize, model: &str, blocks: &[Block]) -> String {
    let content: Vec<Value> = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| match b {
            Block::Text(t) => json!({"type": "text", "text": t}),
            Block::Tool { name, input } => {
                json!({"type": "tool_use", "id": tool_id(turn, i + 1), "name": name, "input": input})
            }
        })
        .collect();
    json!({
        "id": format!("msg_e2e_{turn}"), "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason(blocks), "stop_sequence": null,
        "usage": usage(),
    })
    .to_string()
}

/// A streamed reply: the event sequence the Messages API sends, one delta per block.
fn sse(turn: usize, model: &str, blocks: &[Block]) -> String {
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_e2e_{turn}"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage(),
        }}),
    );
    for (i, block) in blocks.iter().enumerate() {
        let (start, delta) = match block {
            Block::Text(t) => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": t}),
            ),
            Block::Tool { name, input } => (
                json!({"type": "tool_use", "id": tool_id(turn, i + 1), "name": name, "input": {}}),
                json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            ),
        };
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": i, "content_block": start}),
        );
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": i, "delta": delta}),
        );
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason(blocks), "stop_sequence": null}, "usage": {"output_tokens": 10}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends one HTTP/1.1 request over a fresh connection and returns (status line, body).
    fn post(api: &FakeApi, path: &str, body: &Value) -> (String, String) {
        let mut conn = TcpStream::connect(("127.0.0.1", api.port)).expect("connect");
        let body = body.to_string();
        write!(
            conn,
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        let mut reply = String::new();
        conn.read_to_string(&mut reply).expect("read");
        let (head, body) = reply.split_once("\r\n\r\n").expect("header end");
        (
            head.lines().next().unwrap_or("").to_owned(),
            body.to_owned(),
        )
    }

    fn events(sse: &str) -> Vec<Value> {
        sse.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).expect("event data is JSON"))
            .collect()
    }

    /// A judge's call the script does not answer gets a structured "no" and leaves the script
    /// to the agents; one the script answers (a StructuredOutput call next) takes that answer.
    #[test]
    fn an_unscripted_judge_is_told_no_and_a_scripted_one_answers() {
        let verdict = json!({"block": true, "reasoning": "scripted"});
        let api = FakeApi::start(vec![
            Reply::Blocks(vec![Block::Tool {
                name: "Bash".into(),
                input: json!({"command": "ls"}),
            }]),
            Reply::Blocks(vec![Block::Tool {
                name: STRUCTURED.into(),
                input: verdict.clone(),
            }]),
        ])
        .expect("start");
        let judge = json!({"model": "m", "messages": [], "tools": [
            {"name": "DeferredToolPlaceholder"}, {"name": STRUCTURED,
            "input_schema": {"type": "object", "required": ["block", "reasoning", "score"],
                "properties": {"block": {"type": "boolean"}, "reasoning": {"type": "string"},
                    "score": {"type": "number"}}}}]});
        let input_of = |body: &str| -> Value {
            let v: Value = serde_json::from_str(body).expect("json");
            v["content"][0]["input"].clone()
        };
        let (_, said) = post(&api, "/v1/messages", &judge);
        assert_eq!(
            input_of(&said),
            json!({"block": false, "reasoning": "", "score": 0})
        );
        let turn = json!({"model": "m", "tools": [{"name": "Bash"}], "messages": []});
        let (_, first) = post(&api, "/v1/messages", &turn);
        assert_eq!(
            input_of(&first),
            json!({"command": "ls"}),
            "the script was left"
        );
        let (_, scripted) = post(&api, "/v1/messages", &judge);
        assert_eq!(input_of(&scripted), verdict);
        let turns: Vec<bool> = api.requests().iter().map(|r| r.turn).collect();
        assert_eq!(turns, [false, true, true]);
    }

    #[test]
    fn turns_follow_the_script_and_side_queries_do_not_consume_it() {
        let api = FakeApi::start(vec![
            Reply::Blocks(vec![
                Block::Text("hi".into()),
                Block::Tool {
                    name: "Bash".into(),
                    input: json!({"command": "ls"}),
                },
            ]),
            Reply::Error(400),
        ])
        .expect("start");
        let turn =
            json!({"model": "m", "stream": true, "tools": [{"name": "Bash"}], "messages": []});

        let (status, side) = post(&api, "/v1/messages", &json!({"model": "m", "messages": []}));
        assert!(status.contains(" 200 "), "{status}");
        assert!(side.contains(FILLER), "{side}");

        let (status, sse) = post(&api, "/v1/messages?beta=true", &turn);
        assert!(status.contains(" 200 "), "{status}");
        let evs = events(&sse);
        let kinds: Vec<&str> = evs.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(kinds.first(), Some(&"message_start"));
        assert_eq!(kinds.last(), Some(&"message_stop"));
        let start = evs
            .iter()
            .find(|e| e["content_block"]["type"] == "tool_use")
            .expect("a tool_use block");
        assert_eq!(start["content_block"]["id"], tool_id(1, 2));
        let input = evs
            .iter()
            .find_map(|e| e["delta"]["partial_json"].as_str())
            .expect("input delta");
        assert_eq!(
            serde_json::from_str::<Value>(input).expect("json"),
            json!({"command": "ls"})
        );
        let delta = evs
            .iter()
            .find(|e| e["type"] == "message_delta")
            .expect("message_delta");
        assert_eq!(delta["delta"]["stop_reason"], "tool_use");

        let (status, _) = post(&api, "/v1/messages", &turn);
        assert!(status.contains(" 400 "), "{status}");
        let (_, after) = post(&api, "/v1/messages", &turn);
        assert!(
            after.contains(FILLER),
            "the script ran out: filler expected"
        );

        let requests = api.requests();
        assert_eq!(requests.len(), 4);
        assert_eq!(
            requests.iter().map(|r| r.turn).collect::<Vec<_>>(),
            [false, true, true, true]
        );
        assert_eq!(requests[1].body, turn);
    }

    #[test]
    fn unknown_paths_are_refused_and_recorded() {
        let api = FakeApi::start(Vec::new()).expect("start");
        let (status, _) = post(&api, "/v1/other", &json!({}));
        assert!(status.contains(" 404 "), "{status}");
        let (status, count) = post(&api, "/v1/messages/count_tokens", &json!({}));
        assert!(status.contains(" 200 ") && count.contains("input_tokens"));
        let paths: Vec<String> = api.requests().into_iter().map(|r| r.path).collect();
        assert_eq!(paths, ["/v1/other", "/v1/messages/count_tokens"]);
        assert!(!served("/v1/other") && served("/v1/messages?beta=true"));
    }
}

//! A loopback relay between Codex and the fake Responses API that turns a scripted call of a
//! freeform tool into the item a real model sends for one. Codex 0.169 offers `apply_patch` only
//! as a freeform ("custom") tool, and runs it only from a `custom_tool_call` item carrying the
//! patch as plain text; the fake writes every tool call as a `function_call` with JSON
//! arguments. A scripted call whose input is a bare JSON string (a freeform tool takes text, not
//! an object) is sent on as a `custom_tool_call` with that text; everything else passes as is.
//! The fake still receives (and records) every request unchanged.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

/// A running relay; it stops accepting when dropped.
pub struct Relay {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Relay {
    /// Listens on an ephemeral loopback port and relays each request to `upstream`
    /// (`http://127.0.0.1:<port>`, the fake's base URL).
    pub fn start(upstream: &str) -> io::Result<Relay> {
        let target = upstream
            .strip_prefix("http://")
            .ok_or_else(|| io::Error::other(format!("not a plain-HTTP base URL: {upstream}")))?
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let sp = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let target = target.clone();
                std::thread::spawn(move || {
                    if let Err(e) = serve(conn, &target)
                        && e.kind() != io::ErrorKind::UnexpectedEof
                    {
                        // Seen in the suite's output; the case then fails on what the model got.
                        eprintln!("e2e relay: {e}");
                    }
                });
            }
        });
        Ok(Relay { port, stop })
    }

    /// The base URL the agent is given instead of the fake's.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Relays one keep-alive connection until the client closes it: each request is sent to
/// `target` on a connection of its own, and its answer sent back with freeform calls rewritten.
fn serve(conn: TcpStream, target: &str) -> io::Result<()> {
    let mut out = conn.try_clone()?;
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
            return Ok(());
        };
        let (method, path) = (method.to_owned(), path.to_owned());
        let mut length = 0usize;
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
                "content-length" => {
                    length = value
                        .parse()
                        .map_err(|e| io::Error::other(format!("content-length {value:?}: {e}")))?;
                }
                // Codex sends its JSON bodies whole; anything else would reach the fake garbled.
                "transfer-encoding" | "content-encoding" => {
                    return Err(io::Error::other(format!(
                        "{name}: {value} on {method} {path}: the relay passes plain bodies only"
                    )));
                }
                "connection" => close = value.eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;

        let mut upstream = TcpStream::connect(target)?;
        write!(
            upstream,
            "{method} {path} HTTP/1.1\r\nhost: {target}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )?;
        upstream.write_all(&body)?;
        upstream.flush()?;
        let mut answer = Vec::new();
        upstream.read_to_end(&mut answer)?;
        let (status, content_type, payload) = split_answer(&answer)?;
        let payload = if content_type.starts_with("text/event-stream") {
            freeform(&payload)
        } else {
            payload
        };
        write!(
            out,
            "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
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

/// The fake's whole answer as (status code and reason, content type, body).
fn split_answer(answer: &[u8]) -> io::Result<(String, String, String)> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| io::Error::other("the fake's answer has no end of headers"))?;
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_once(' '))
        .map(|(_, rest)| rest.to_owned())
        .ok_or_else(|| io::Error::other(format!("the fake's answer has no status: {head}")))?;
    let content_type = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "application/json".into());
    Ok((status, content_type, body.to_owned()))
}

/// A Responses event stream with each `function_call` whose arguments are a JSON string turned
/// into the `custom_tool_call` carrying that string.
fn freeform(sse: &str) -> String {
    let mut out = String::with_capacity(sse.len());
    for line in sse.split_inclusive('\n') {
        let rewritten = line
            .strip_prefix("data: ")
            .and_then(|data| serde_json::from_str::<Value>(data.trim_end()).ok())
            .and_then(|mut event| {
                let item = event.get_mut("item")?;
                if item["type"] != "function_call" {
                    return None;
                }
                let args = item["arguments"].as_str()?;
                let Ok(Value::String(input)) = serde_json::from_str::<Value>(args) else {
                    return None;
                };
                *item = json!({"type": "custom_tool_call", "call_id": item["call_id"],
                    "name": item["name"], "input": input});
                Some(format!("data: {event}\n"))
            });
        out.push_str(rewritten.as_deref().unwrap_or(line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::e2e::api::{Block, FakeApi, Reply, Wire};

    fn events(sse: &str) -> Vec<Value> {
        sse.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).expect("event data is JSON"))
            .collect()
    }

    /// A call with text for input becomes a custom tool call; one with an object stays a
    /// function call; the stream's other events are untouched.
    #[test]
    fn a_text_input_becomes_a_custom_tool_call() {
        let api = FakeApi::start_wire(
            Wire::Responses,
            vec![Reply::Blocks(vec![
                Block::Text("On it.".into()),
                Block::Tool {
                    name: "apply_patch".into(),
                    input: Value::String("*** Begin Patch\n*** End Patch\n".into()),
                },
                Block::Tool {
                    name: "exec_command".into(),
                    input: json!({"cmd": "ls"}),
                },
            ])],
        )
        .expect("fake");
        let relay = Relay::start(&api.base_url()).expect("relay");
        let addr = relay.base_url().replace("http://", "");
        let body = json!({"tools": [{"type": "function", "name": "x"}], "input": []}).to_string();
        let mut conn = TcpStream::connect(&addr).expect("connect");
        write!(
            conn,
            "POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("send");
        let mut answer = Vec::new();
        conn.read_to_end(&mut answer).expect("read");
        let (status, kind, sse) = split_answer(&answer).expect("an answer");
        assert_eq!(
            (status.as_str(), kind.as_str()),
            ("200 OK", "text/event-stream")
        );
        let items: Vec<Value> = events(&sse)
            .into_iter()
            .filter(|e| e["type"] == "response.output_item.done")
            .map(|e| e["item"].clone())
            .collect();
        assert_eq!(items[0]["type"], "message");
        assert_eq!(
            items[1],
            json!({"type": "custom_tool_call", "call_id": "toolu_e2e_1_2",
                "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n"})
        );
        assert_eq!(items[2]["type"], "function_call");
        assert_eq!(items[2]["arguments"], json!({"cmd": "ls"}).to_string());
        assert!(sse.contains("response.completed"), "{sse}");
        // The fake saw the request as it was sent.
        assert_eq!(api.requests()[0].body["tools"][0]["name"], "x");
    }
}

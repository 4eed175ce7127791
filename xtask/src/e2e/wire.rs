//! The two other model APIs the fake in `api.rs` can speak, enough for one agent session each:
//! OpenAI's Responses API as Codex's custom model provider calls it (`POST <base>/responses`,
//! streamed), and Google's Gemini API as Gemini CLI calls it (`POST
//! /v1beta/models/<model>:streamGenerateContent?alt=sse`, or `:generateContent` whole).
//!
//! A scripted reply is turned into the wire's own items: Codex receives a `message` item for
//! text and a `function_call` item (call id [`tool_id`], arguments a JSON string) for a tool call,
//! or a `custom_tool_call` carrying the text when the scripted input is a bare string (a freeform
//! tool, such as apply_patch); Gemini receives `text` and `functionCall` parts in one candidate.

use serde_json::{Value, json};

use super::api::{Block, FILLER, Reply, Wire, tool_id};

/// Whether the fake speaking `wire` serves `route` (a path without its query).
pub fn served(wire: Wire, route: &str) -> bool {
    match wire {
        Wire::Messages => false,
        Wire::Responses => route == "/v1/responses",
        Wire::Gemini => route.strip_prefix("/v1beta/models/").is_some_and(|rest| {
            rest.ends_with(":streamGenerateContent") || rest.ends_with(":generateContent")
        }),
    }
}

/// The answer to one request: `(status, content type, body)`. `reply` is the turn's number and
/// its scripted reply (`(0, None)` for a side query; `(n, None)` once the script ran out).
pub fn answer(
    wire: Wire,
    method: &str,
    path: &str,
    (turn, reply): (usize, Option<Reply>),
) -> (u16, &'static str, String) {
    let route = path.split('?').next().unwrap_or(path);
    if method != "POST" || !served(wire, route) {
        return (
            404,
            "application/json",
            error(404, "not served by the e2e fake"),
        );
    }
    let blocks = match reply {
        Some(Reply::Error(status)) => {
            return (
                status,
                "application/json",
                error(status, "scripted failure"),
            );
        }
        Some(Reply::Blocks(blocks)) => blocks,
        None => vec![Block::Text(FILLER.into())],
    };
    match wire {
        Wire::Responses => (200, "text/event-stream", responses_sse(turn, &blocks)),
        Wire::Gemini => {
            let chunk = gemini_chunk(&blocks);
            if route.ends_with(":streamGenerateContent") {
                (200, "text/event-stream", format!("data: {chunk}\n\n"))
            } else {
                (200, "application/json", chunk.to_string())
            }
        }
        // The Messages API is answered in api.rs.
        Wire::Messages => (500, "application/json", error(500, "wrong wire")),
    }
}

/// An error body both wires understand well enough to report the status.
fn error(status: u16, message: &str) -> String {
    json!({"error": {"code": status, "message": message, "type": "invalid_request_error"}})
        .to_string()
}

/// The Responses stream for one reply: created, one item per block, completed.
fn responses_sse(turn: usize, blocks: &[Block]) -> String {
    let mut out = String::new();
    let mut event = |data: Value| {
        let name = data["type"].as_str().unwrap_or("message").to_owned();
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    let id = format!("resp_e2e_{turn}");
    event(json!({"type": "response.created", "response": {"id": id}}));
    for (i, block) in blocks.iter().enumerate() {
        match block {
            Block::Text(text) => {
                let item_id = format!("msg_e2e_{turn}_{}", i + 1);
                event(
                    json!({"type": "response.output_item.added", "output_index": i,
                    "item": {"type": "message", "role": "assistant", "id": item_id, "content": []}}),
                );
                event(
                    json!({"type": "response.output_text.delta", "output_index": i,
                    "item_id": item_id, "delta": text}),
                );
                event(
                    json!({"type": "response.output_item.done", "output_index": i,
                    "item": {"type": "message", "role": "assistant", "id": item_id,
                        "content": [{"type": "output_text", "text": text}]}}),
                );
            }
            // A freeform ("custom") tool, such as Codex's apply_patch, takes plain text and runs
            // only from a `custom_tool_call`: a scripted input that is a bare string is one.
            Block::Tool {
                name,
                input: Value::String(text),
            } => {
                event(
                    json!({"type": "response.output_item.done", "output_index": i,
                    "item": {"type": "custom_tool_call", "call_id": tool_id(turn, i + 1),
                        "name": name, "input": text}}),
                );
            }
            Block::Tool { name, input } => {
                event(
                    json!({"type": "response.output_item.done", "output_index": i,
                    "item": {"type": "function_call", "call_id": tool_id(turn, i + 1),
                        "name": name, "arguments": input.to_string()}}),
                );
            }
        }
    }
    event(
        json!({"type": "response.completed", "response": {"id": id, "usage": {
        "input_tokens": 100, "input_tokens_details": null, "output_tokens": 10,
        "output_tokens_details": null, "total_tokens": 110}}}),
    );
    out
}

/// One Gemini response (a stream of one chunk): the blocks as parts of one candidate.
fn gemini_chunk(blocks: &[Block]) -> Value {
    let parts: Vec<Value> = blocks
        .iter()
        .map(|b| match b {
            Block::Text(text) => json!({"text": text}),
            Block::Tool { name, input } => json!({"functionCall": {"name": name, "args": input}}),
        })
        .collect();
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
            "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10,
            "totalTokenCount": 110},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(sse: &str) -> Vec<Value> {
        sse.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).expect("event data is JSON"))
            .collect()
    }

    fn script() -> Reply {
        Reply::Blocks(vec![
            Block::Text("On it.".into()),
            Block::Tool {
                name: "exec_command".into(),
                input: json!({"cmd": "ls"}),
            },
        ])
    }

    #[test]
    fn responses_stream_carries_text_then_a_function_call_then_completion() {
        let (status, kind, sse) = answer(
            Wire::Responses,
            "POST",
            "/v1/responses",
            (1, Some(script())),
        );
        assert_eq!((status, kind), (200, "text/event-stream"));
        let evs = events(&sse);
        let kinds: Vec<&str> = evs.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(kinds.first(), Some(&"response.created"));
        assert_eq!(kinds.last(), Some(&"response.completed"));
        assert!(kinds.contains(&"response.output_text.delta"));
        let call = evs
            .iter()
            .find(|e| e["item"]["type"] == "function_call")
            .expect("a function call");
        assert_eq!(call["item"]["call_id"], tool_id(1, 2));
        let args: Value =
            serde_json::from_str(call["item"]["arguments"].as_str().expect("a string"))
                .expect("JSON arguments");
        assert_eq!(args, json!({"cmd": "ls"}));
    }

    /// A scripted call whose input is text goes out as the freeform tool call a model makes.
    #[test]
    fn a_text_input_becomes_a_custom_tool_call() {
        let patch = "*** Begin Patch\n*** Add File: a.py\n+x = 1\n*** End Patch\n";
        let reply = Reply::Blocks(vec![Block::Tool {
            name: "apply_patch".into(),
            input: Value::String(patch.into()),
        }]);
        let (_, _, sse) = answer(Wire::Responses, "POST", "/v1/responses", (3, Some(reply)));
        let evs = events(&sse);
        let call = evs
            .iter()
            .find(|e| e["item"]["type"] == "custom_tool_call")
            .expect("a custom tool call");
        assert_eq!(call["item"]["name"], "apply_patch");
        assert_eq!(call["item"]["input"], patch);
        assert_eq!(call["item"]["call_id"], tool_id(3, 1));
        assert!(!evs.iter().any(|e| e["item"]["type"] == "function_call"));
    }

    #[test]
    fn gemini_streams_or_answers_whole_and_refuses_other_paths() {
        let stream = "/v1beta/models/gemini-e2e:streamGenerateContent?alt=sse";
        let (status, kind, sse) = answer(Wire::Gemini, "POST", stream, (1, Some(script())));
        assert_eq!((status, kind), (200, "text/event-stream"));
        let chunk = &events(&sse)[0];
        let parts = &chunk["candidates"][0]["content"]["parts"];
        assert_eq!(parts[0]["text"], "On it.");
        assert_eq!(parts[1]["functionCall"]["args"], json!({"cmd": "ls"}));

        let whole = "/v1beta/models/gemini-e2e:generateContent";
        let (_, kind, text) = answer(Wire::Gemini, "POST", whole, (0, None));
        assert_eq!(kind, "application/json");
        assert!(text.contains(FILLER), "{text}");

        let (status, _, _) = answer(Wire::Gemini, "POST", "/v1/other", (0, None));
        assert_eq!(status, 404);
        let (status, _, _) = answer(Wire::Gemini, "POST", stream, (2, Some(Reply::Error(503))));
        assert_eq!(status, 503);
        assert!(served(Wire::Responses, "/v1/responses"));
        assert!(!served(Wire::Responses, "/v1/messages"));
    }
}

//! A worker that misbehaves on purpose, for the host's fault tests. `FAKE_WORKER_MODE`:
//! * `hang`: says hello, then never answers an event;
//! * `slow`: answers each event with `{"slow":true}` after 400 ms;
//! * `garbage`: says hello, then answers the first event with bytes that are not a frame;
//! * `badbuild`: says hello with another build;
//! * `typed`: answers each event at once with an envelope whose text says deny, and with the
//!   typed decision `FAKE_WORKER_DECISION` (`allow` or `deny`) on a check it calls incomplete,
//!   so a test sees which of the two the client reads.

use std::io::Write;
use std::time::Duration;

use capt_hook_proto::{
    BUILD, Decision, EventResponse, MAX_FRAME, PROTOCOL, Status, WorkerFrame, decode, encode,
    read_frame, write_frame,
};

fn main() {
    let mode = std::env::var("FAKE_WORKER_MODE").unwrap_or_default();
    let mut input = std::io::stdin().lock();
    let out = std::sync::Arc::new(parking_lot::Mutex::new(std::io::stdout()));
    let Ok(Some(_hello)) = read_frame(&mut input, MAX_FRAME) else {
        return;
    };
    let build = if mode == "badbuild" {
        "0.0.0-other".to_owned()
    } else {
        BUILD.to_owned()
    };
    send(
        &out,
        &encode(&WorkerFrame::Hello {
            protocol: PROTOCOL,
            build,
        }),
    );
    while let Ok(Some(body)) = read_frame(&mut input, MAX_FRAME) {
        let Ok(WorkerFrame::Event { id, .. }) = decode::<WorkerFrame>(&body) else {
            return;
        };
        match mode.as_str() {
            "slow" => {
                let out = out.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(400));
                    let response = EventResponse {
                        schema: 1,
                        status: Status::Ok,
                        stdout: "{\"slow\":true}\n".into(),
                        decision: Default::default(),
                        stderr: String::new(),
                        exit: 0,
                        elapsed_ms: 400.0,
                        guard_completed: true,
                        stale_build: false,
                        classic: None,
                    };
                    send(&out, &encode(&WorkerFrame::Result { id, response }));
                });
            }
            "typed" => {
                let decision = match std::env::var("FAKE_WORKER_DECISION").as_deref() {
                    Ok("deny") => Decision::Deny,
                    _ => Decision::Allow,
                };
                let response = EventResponse {
                    schema: 1,
                    status: Status::Ok,
                    stdout: "{\"fake\":true,\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\"}}\n".into(),
                    decision,
                    stderr: String::new(),
                    exit: 0,
                    elapsed_ms: 0.0,
                    guard_completed: false,
                    stale_build: false,
                    classic: None,
                };
                send(&out, &encode(&WorkerFrame::Result { id, response }));
            }
            "garbage" => {
                let mut o = out.lock();
                let _ = o.write_all(b"\x00\x00\x00\x05nope!");
                let _ = o.flush();
            }
            _ => {}
        }
    }
}

fn send(out: &parking_lot::Mutex<std::io::Stdout>, body: &[u8]) {
    let mut o = out.lock();
    let _ = write_frame(&mut *o, body);
}

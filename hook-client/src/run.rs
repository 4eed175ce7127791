//! `hook run <Event> [--async]`: read the event, send it to the host, print the verdict.
//!
//! Exit codes are decided here and only here: the reply's own code when the host (or the local
//! fallback) answered; 0 with a skip note when a mandatory event could not be checked; 1 for an
//! infrastructure failure on any other event or bad input. 2 only ever comes from a reply.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use capt_hook_proto::serde_json::{self, Value, json};
use capt_hook_proto::{EventRequest, EventResponse, MAX_EVENT_INPUT, request_env};

use crate::guard;
use crate::transport::{self, Kind};

/// Runs `hook` with its arguments (without the program name).
pub fn main(args: &[String]) -> ExitCode {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let event = match args.as_slice() {
        // Async hooks run inside the worker after the foreground reply; nothing to do here.
        ["run", _, "--async"] => return ExitCode::SUCCESS,
        ["run", event] if !event.is_empty() && !event.starts_with('-') => *event,
        _ => return error("usage: hook run EVENT [--async]"),
    };
    let timeout = match crate::env::timeout() {
        Ok(t) => t,
        Err(e) => return error(&e),
    };
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin()
        .lock()
        .take(MAX_EVENT_INPUT as u64 + 1)
        .read_to_end(&mut input)
    {
        return error(&format!("reading stdin: {e}"));
    }
    if input.len() > MAX_EVENT_INPUT {
        return error(&format!("event input exceeds {MAX_EVENT_INPUT} bytes"));
    }
    let Ok(payload_raw) = String::from_utf8(input) else {
        return error("event input is not UTF-8");
    };
    let payload: Value = serde_json::from_str(&payload_raw).unwrap_or(Value::Null);
    let cwd = payload
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    let Some(root) = crate::env::project_dir().or_else(|| cwd.clone()) else {
        return error("no project root: CLAUDE_PROJECT_DIR is unset and the payload has no cwd");
    };
    let mandatory = guard::mandatory(event, &payload);
    let req = EventRequest {
        schema: 1,
        event: event.to_owned(),
        cwd: cwd.unwrap_or_else(|| root.clone()),
        root,
        env: request_env(std::env::vars()),
        payload_raw,
        client_pid: std::process::id(),
        client_ppid: std::os::unix::process::parent_id(),
        deadline_unix_ms: 0,
        mandatory,
    };
    dispatch(&req, timeout)
}

fn dispatch(req: &EventRequest, timeout: Duration) -> ExitCode {
    let mut result = transport::dispatch(req, timeout);
    if req.mandatory && matches!(&result, Err(f) if f.kind == Kind::TransportTimeout) {
        result = transport::dispatch(req, timeout);
    }
    match result {
        Ok(resp) if req.mandatory => match grade(&resp) {
            None => emit(&resp),
            Some(kind) => skip(&req.event, kind),
        },
        Ok(resp) => emit(&resp),
        Err(failure) if req.mandatory => match transport::evaluate_locally(req, timeout) {
            Ok(resp) => match grade(&resp) {
                None => emit(&resp),
                Some(kind) => skip(&req.event, kind),
            },
            // The note keeps the host's failure: that is what the user must fix.
            Err(_) => skip(&req.event, failure.kind),
        },
        Err(failure) => error(&failure.message),
    }
}

/// `None` when a mandatory event's reply can stand; otherwise why it cannot.
fn grade(resp: &EventResponse) -> Option<Kind> {
    if resp.exit == 2 || denies(&resp.stdout) {
        return None;
    }
    if resp.exit != 0 {
        return Some(Kind::WorkerError);
    }
    if resp.guard_completed {
        return None;
    }
    if resp.stderr.contains("no verdict") {
        return Some(Kind::Shed);
    }
    Some(Kind::NoVerdict)
}

/// Whether the envelope denies the call (PreToolUse or PermissionRequest shape).
fn denies(stdout: &str) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(stdout.trim()) else {
        return false;
    };
    let out = &v["hookSpecificOutput"];
    out["permissionDecision"] == "deny" || out["decision"]["behavior"] == "deny"
}

/// Prints a reply verbatim and exits with its code.
fn emit(resp: &EventResponse) -> ExitCode {
    let Ok(code) = u8::try_from(resp.exit) else {
        return error(&format!("invalid worker exit code {}", resp.exit));
    };
    let mut out = std::io::stdout().lock();
    if let Err(e) = out
        .write_all(resp.stdout.as_bytes())
        .and_then(|()| out.flush())
    {
        return error(&format!("write result: {e}"));
    }
    let _ = std::io::stderr().write_all(resp.stderr.as_bytes());
    ExitCode::from(code)
}

/// The text shown when a mandatory event could not be checked.
pub fn skip_note(kind: &str) -> String {
    format!(
        "capt-hook: the session guard could not finish ({kind}), so this call was not checked \
         for session-ending programs and runs under your own permissions. Check the host with \
         `capt-hookd status`; reinstall captain-hook if the host is missing or outdated."
    )
}

/// The skip-note envelope for a mandatory event (keys sorted, one line).
pub fn skip_envelope(event: &str, kind: &str) -> String {
    let note = skip_note(kind);
    let v = if event == "PreToolUse" {
        json!({
            "hookSpecificOutput": {"additionalContext": note, "hookEventName": "PreToolUse"},
            "systemMessage": note,
        })
    } else {
        json!({"systemMessage": note})
    };
    v.to_string()
}

/// Lets a mandatory call through visibly: the note on stdout, one line on stderr, exit 0, so
/// Claude Code's own permission prompt still applies.
fn skip(event: &str, kind: Kind) -> ExitCode {
    println!("{}", skip_envelope(event, kind.as_str()));
    eprintln!(
        "hook: the session guard did not complete ({}); skipped",
        kind.as_str()
    );
    ExitCode::SUCCESS
}

fn error(message: &str) -> ExitCode {
    eprintln!("hook: {message}");
    ExitCode::from(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(stdout: &str, exit: i32, guard_completed: bool) -> EventResponse {
        EventResponse {
            schema: 1,
            status: capt_hook_proto::Status::Ok,
            stdout: stdout.into(),
            stderr: String::new(),
            exit,
            elapsed_ms: 0.0,
            guard_completed,
        }
    }

    #[test]
    fn grading() {
        let deny =
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"}}"#;
        assert_eq!(grade(&resp(deny, 0, false)), None);
        assert_eq!(grade(&resp("", 2, false)), None);
        assert_eq!(grade(&resp("", 1, true)), Some(Kind::WorkerError));
        assert_eq!(grade(&resp("", 0, true)), None);
        assert_eq!(grade(&resp("", 0, false)), Some(Kind::NoVerdict));
    }

    #[test]
    fn skip_envelopes() {
        let pre: Value = serde_json::from_str(&skip_envelope("PreToolUse", "shed")).unwrap();
        assert_eq!(pre["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert!(pre["systemMessage"].as_str().unwrap().contains("(shed)"));
        assert!(
            pre["hookSpecificOutput"]
                .get("permissionDecision")
                .is_none()
        );
        let perm: Value =
            serde_json::from_str(&skip_envelope("PermissionRequest", "shed")).unwrap();
        assert_eq!(perm.as_object().unwrap().len(), 1);
    }
}

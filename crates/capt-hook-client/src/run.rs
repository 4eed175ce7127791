//! `hook run <Event> [--async]`: read the event, send it to the host, print the verdict.
//!
//! Exit codes are decided here and only here: the reply's own code when the host (or the local
//! fallback) answered; 1 for an infrastructure failure or bad input on an event that decides
//! nothing. 2 only ever comes from a reply.
//!
//! A guarded call (PreToolUse, PermissionRequest, PreSkillShellCommand) never ends in silence
//! or exit 1: when the host cannot answer (any failure kind), the client evaluates the event
//! itself with `capt-hook-worker evaluate`, and when that fails too it prints the answer naming
//! what failed ([`last_resort`]): Claude Code's own permission prompt decides, or a skill's
//! command is refused. Which answers can stand is read from the reply's typed decision, never
//! from the envelope it prints. One deadline, `CAPT_HOOK_CLIENT_TIMEOUT`, covers the
//! host (two thirds of it, retries included) and the local evaluation (the rest).

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use capt_hook_proto::failure::{is_guarded_for, last_resort};
use capt_hook_proto::serde_json::Value;
use capt_hook_proto::{
    EventRequest, EventResponse, MAX_EVENT_INPUT, is_request_env, paths, payload,
};

use crate::transport::{self, Kind};

/// Left at the end of the deadline for printing our own answer after local evaluation failed.
const PRINT_MARGIN: Duration = Duration::from_millis(50);

const USAGE: &str = "usage: hook run [--agent AGENT] EVENT [--async]";

/// What `hook` was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmd<'a> {
    /// Nothing: async hooks run inside the worker after the foreground reply.
    Nothing,
    /// `hook mod-init`.
    ModInit,
    /// Answer one event. `agent` is another coding agent's name (`--agent codex`), `None` for
    /// Claude Code; `event` is `None` when the payload must name it.
    Run {
        agent: Option<&'a str>,
        event: Option<&'a str>,
    },
}

/// Reads the arguments; `None` for a usage error.
fn parse_args<'a>(args: &[&'a str]) -> Option<Cmd<'a>> {
    let rest = match args {
        ["mod-init"] => return Some(Cmd::ModInit),
        // Claude Code before 2.1.139 drops exec form's `args` and runs the bare command: the
        // payload names its event.
        [] => {
            return Some(Cmd::Run {
                agent: None,
                event: None,
            });
        }
        ["run", rest @ ..] => rest,
        _ => return None,
    };
    let (mut agent, mut event, mut is_async) = (None, None, false);
    let mut it = rest.iter();
    while let Some(arg) = it.next() {
        match *arg {
            "--async" => is_async = true,
            "--agent" => agent = Some(*it.next()?),
            a if a.starts_with("--agent=") => agent = a.get("--agent=".len()..),
            a if !a.is_empty() && !a.starts_with('-') && event.is_none() => event = Some(a),
            _ => return None,
        }
    }
    let event = event?;
    if agent.is_some_and(str::is_empty) {
        return None;
    }
    if is_async {
        return Some(Cmd::Nothing);
    }
    Some(Cmd::Run {
        // Claude Code's own events need no adapter.
        agent: agent.filter(|a| *a != "claude"),
        event: Some(event),
    })
}

/// Runs `hook` with its arguments (without the program name).
pub fn main(args: &[String]) -> std::process::ExitCode {
    std::process::ExitCode::from(exit_code(args))
}

/// [`main`], returning the exit status as a number. Whatever was printed is flushed before it
/// returns.
pub fn exit_code(args: &[String]) -> u8 {
    let code = run(args);
    let _ = std::io::stdout().flush();
    code
}

fn run(args: &[String]) -> u8 {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (agent, named) = match parse_args(&args) {
        Some(Cmd::Nothing) => return 0,
        Some(Cmd::ModInit) => return mod_init(),
        Some(Cmd::Run { agent, event }) => (agent, event),
        None => return error(USAGE),
    };
    let mut input = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(MAX_EVENT_INPUT as u64 + 1)
        .read_to_end(&mut input);
    let parsed = payload::parse(&input);
    let payload = match &parsed {
        Ok(Some(v)) => v,
        _ => &Value::Null,
    };
    let event = match named.or_else(|| payload.get("hook_event_name").and_then(Value::as_str)) {
        Some(e) if !e.is_empty() => e,
        _ => {
            return error(
                "usage: hook run EVENT [--async] (run without arguments, the payload must name \
                 its event in hook_event_name)",
            );
        }
    };
    let guarded = is_guarded_for(agent, event);
    // A guarded call is never refused over input we can still send: it gets an answer.
    let refuse = |what: String| {
        if guarded {
            unchecked(agent, event, Kind::BadInput, &what)
        } else {
            error(&what)
        }
    };
    let timeout = match crate::env::timeout() {
        Ok(t) => t,
        Err(e) if guarded => {
            eprintln!("hook: {e}; using the default");
            crate::env::DEFAULT_TIMEOUT
        }
        Err(e) => return error(&e.to_string()),
    };
    if let Err(e) = read {
        return refuse(format!("reading stdin: {e}"));
    }
    if input.len() > MAX_EVENT_INPUT {
        return refuse(format!("event input exceeds {MAX_EVENT_INPUT} bytes"));
    }
    // JSON's structure is ASCII: replacing stray bytes keeps every readable field readable.
    let payload_raw = match String::from_utf8(input) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    // Cursor names the workspace instead of a cwd on some events.
    let cwd = payload
        .get("cwd")
        .or_else(|| payload.get("workspace_roots").and_then(|r| r.get(0)))
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    let Some(root) = crate::env::project_dir().or_else(|| cwd.clone()) else {
        let why = match &parsed {
            Err(e) => {
                format!("the payload could not be read ({e}) and CLAUDE_PROJECT_DIR is unset")
            }
            Ok(_) => {
                "no project root: CLAUDE_PROJECT_DIR is unset and the payload has no cwd".to_owned()
            }
        };
        return refuse(why);
    };
    let req = EventRequest {
        schema: 1,
        event: event.to_owned(),
        cwd: cwd.unwrap_or_else(|| root.clone()),
        root,
        env: own_env(),
        payload_raw,
        client_pid: std::process::id(),
        client_ppid: std::os::unix::process::parent_id(),
        deadline_unix_ms: 0,
        notice_epoch: None,
        notices: Vec::new(),
        classic: false,
        agent: agent.map(str::to_owned),
        // Only a guarded event may be run twice (by the host, then locally): it is claimed.
        request_id: guarded.then(capt_hook_proto::claim::new_id),
    };
    dispatch(&req, timeout)
}

/// The request-scoped variables of this process. `std::env::vars` would panic on any variable
/// that is not UTF-8, anywhere in the environment (a guarded call then fails to Claude Code's
/// own `onFailure`); one that is not, which no request variable is, is skipped instead. Names
/// are checked before a value is copied out.
fn own_env() -> std::collections::BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok().filter(|n| is_request_env(n))?;
            Some((name, value.into_string().ok()?))
        })
        .collect()
}

/// `hook mod-init`: what our hooks module (a mod inside Claude Code, which can start a process
/// but not cheaply) needs once per load. Starts the host when none runs, then prints one JSON
/// line: the host's HTTP socket (`socket`) and the request-scoped environment a command hook
/// would send (`env`: Claude Code's own plus the variables it gives hooks, which the mod passes
/// as this process's environment), so the mod reads both rules from here rather than copying
/// them.
fn mod_init() -> u8 {
    let timeout = crate::env::timeout().unwrap_or(crate::env::DEFAULT_TIMEOUT);
    let root = crate::env::project_dir()
        .or_else(|| {
            std::env::current_dir()
                .ok()
                .map(|d| d.display().to_string())
        })
        .unwrap_or_else(|| "/".to_owned());
    if let Err(f) = transport::ensure_host(Instant::now() + timeout, &root) {
        return error(&format!("mod-init: {} ({})", f.message, f.kind.as_str()));
    }
    let line = capt_hook_proto::serde_json::json!({
        "socket": paths::http_socket_path(),
        "env": own_env(),
    });
    println!("{line}");
    0
}

fn dispatch(req: &EventRequest, timeout: Duration) -> u8 {
    let start = Instant::now();
    let deadline = start + timeout;
    let agent = req.agent.as_deref();
    if !is_guarded_for(agent, &req.event) {
        return match transport::dispatch(req, deadline) {
            Ok(resp) => emit(&resp),
            Err(failure) => error(&failure.message),
        };
    }
    let (host, host_deadline) = transport::dispatch_until(req, start + timeout * 2 / 3);
    let host = match host {
        // The event ran on the host: a bad answer is reported, never evaluated a second time.
        Ok(resp) => {
            // The host answered, so no one else will run the event: its claim can go.
            release_claim(req);
            return graded(agent, &req.event, &resp, "the host's answer");
        }
        Err(f) => f,
    };
    // The event is still answered (locally, below), but an impostor on the socket is said.
    if host.kind == Kind::UntrustedHost {
        eprintln!("hook: {}", host.message);
    }
    let local_by = deadline
        .checked_sub(PRINT_MARGIN.min(timeout / 10))
        .unwrap_or(deadline);
    let code = match transport::evaluate_locally(req, local_by) {
        Ok(resp) => graded(agent, &req.event, &resp, "local evaluation"),
        Err(local) => {
            let why = format!(
                "the host could not answer ({}: {}) and local evaluation failed ({}: {})",
                host.kind.as_str(),
                host.message,
                local.kind.as_str(),
                local.message
            );
            unchecked(agent, &req.event, host.kind, &why)
        }
    };
    // A host worker starts nothing past the deadline it was given, so once that has passed the
    // claim has done its work; so has it when no host ever accepted the event (none could be
    // started, or it refused before dispatch). Otherwise a worker may still get the event: the
    // claim stays for it to find, and a sweep removes it later.
    let never_accepted = matches!(host.kind, Kind::HostUnavailable | Kind::TransportRefused);
    if never_accepted || capt_hook_proto::clock::now_unix_ms() > host_deadline {
        release_claim(req);
    }
    code
}

fn release_claim(req: &EventRequest) {
    if let Some(id) = &req.request_id {
        capt_hook_proto::claim::release(id);
    }
}

/// Prints a guarded event's answer when it can stand, or the ask answer saying why not.
fn graded(agent: Option<&str>, event: &str, resp: &EventResponse, from: &str) -> u8 {
    match grade(resp) {
        None => emit(resp),
        Some(kind) => {
            let detail = resp.stderr.lines().find(|l| !l.trim().is_empty());
            let why = match detail {
                Some(d) => format!("{from} was incomplete ({}: {d})", kind.as_str()),
                None => format!("{from} was incomplete ({})", kind.as_str()),
            };
            unchecked(agent, event, kind, &why)
        }
    }
}

/// `None` when a guarded event's reply can stand; otherwise why it cannot
/// ([`capt_hook_proto::failure::shortfall`]).
fn grade(resp: &EventResponse) -> Option<Kind> {
    capt_hook_proto::failure::shortfall(resp).map(|s| match s {
        capt_hook_proto::failure::Shortfall::NoVerdict => Kind::NoVerdict,
        _ => Kind::WorkerError,
    })
}

/// Prints a reply verbatim and exits with its code.
fn emit(resp: &EventResponse) -> u8 {
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
    code
}

/// The reason shown in the prompt when the client itself must answer a guarded call.
pub fn reason(kind: Kind, why: &str) -> String {
    format!(
        "capt-hook could not check this call ({}): {why}. Decide yourself; `capt-hook doctor` \
         checks the installation.",
        kind.as_str()
    )
}

/// Leaves a guarded call to the user, visibly: the ask answer on stdout, one line on stderr,
/// exit 0. Another agent's call is refused instead (exit 2, the reason on stderr: the one
/// blocking answer every agent's guard event reads without its own output shape, which only
/// the worker's adapters know).
fn unchecked(agent: Option<&str>, event: &str, kind: Kind, why: &str) -> u8 {
    if agent.is_some() {
        eprintln!("{}", reason(kind, why));
        return 2;
    }
    if let Some(envelope) = last_resort(event, &reason(kind, why)) {
        println!("{envelope}");
    }
    eprintln!("hook: could not check this call ({}): {why}", kind.as_str());
    0
}

fn error(message: &str) -> u8 {
    eprintln!("hook: {message}");
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(
        stdout: &str,
        decision: capt_hook_proto::Decision,
        exit: i32,
        guard_completed: bool,
    ) -> EventResponse {
        EventResponse {
            schema: 1,
            status: capt_hook_proto::Status::Ok,
            stdout: stdout.into(),
            decision,
            stderr: String::new(),
            exit,
            elapsed_ms: 0.0,
            guard_completed,
            stale_build: false,
            classic: None,
        }
    }

    #[test]
    fn grading() {
        use capt_hook_proto::Decision::{Allow, Ask, Deny, None as Nothing};
        let json = "{}";
        // A deny stands even when the check was incomplete; so does an exit-2 block.
        assert_eq!(grade(&resp(json, Deny, 0, false)), None);
        assert_eq!(grade(&resp("", Nothing, 2, false)), None);
        assert_eq!(grade(&resp("", Nothing, 1, true)), Some(Kind::WorkerError));
        assert_eq!(grade(&resp("", Nothing, 0, true)), None);
        assert_eq!(grade(&resp(json, Allow, 0, true)), None);
        assert_eq!(grade(&resp("", Nothing, 0, false)), Some(Kind::NoVerdict));
        assert_eq!(grade(&resp(json, Ask, 0, false)), None);
        // A notice without a decision names the failure itself.
        assert_eq!(grade(&resp(json, Nothing, 0, false)), None);
        // An incomplete check never approves a call.
        assert_eq!(grade(&resp(json, Allow, 0, false)), Some(Kind::NoVerdict));
        let mut failed = resp("", Nothing, 0, true);
        failed.status = capt_hook_proto::Status::Error;
        assert_eq!(grade(&failed), Some(Kind::WorkerError));
    }

    #[test]
    fn arguments() {
        let run = |agent, event| Some(Cmd::Run { agent, event });
        assert_eq!(parse_args(&["run", "Stop"]), run(None, Some("Stop")));
        assert_eq!(parse_args(&[]), run(None, None));
        assert_eq!(parse_args(&["run", "Stop", "--async"]), Some(Cmd::Nothing));
        assert_eq!(
            parse_args(&["run", "--agent", "gemini", "BeforeTool"]),
            run(Some("gemini"), Some("BeforeTool"))
        );
        assert_eq!(
            parse_args(&["run", "--agent=codex", "PreToolUse"]),
            run(Some("codex"), Some("PreToolUse"))
        );
        assert_eq!(
            parse_args(&["run", "--agent", "claude", "PreToolUse"]),
            run(None, Some("PreToolUse"))
        );
        assert_eq!(
            parse_args(&["run", "--agent", "codex", "Stop", "--async"]),
            Some(Cmd::Nothing)
        );
        for bad in [
            &["run"][..],
            &["run", "--agent"],
            &["run", "--agent", "codex"],
            &["run", "--agent=", "Stop"],
            &["run", "-x"],
            &["run", "A", "B"],
            &["walk"],
        ] {
            assert_eq!(parse_args(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_reason_names_the_kind() {
        let r = reason(Kind::TransportTimeout, "no answer");
        assert!(r.contains("(transport-timeout): no answer"), "{r}");
    }
}

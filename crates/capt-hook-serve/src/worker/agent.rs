//! An event from another coding agent (`hook run --agent codex PreToolUse`): read through that
//! agent's adapter as the Claude Code event(s) it amounts to, each evaluated as Claude Code's,
//! and the answers written back in the agent's own shape (capt-hook-agents owns every
//! per-agent fact; this only routes).

use std::time::Instant;

use capt_hook_agents::{Agent, AgentError, Normalised, Verdict, normalise, passes_through, render};
use capt_hook_proto::{Decision, EventRequest, EventResponse, Status};

/// The Claude Code requests an agent's event amounts to (one per call; none for an event we
/// leave alone), with the reading they came from.
pub fn claude_requests(
    req: &EventRequest,
    agent: &str,
) -> Result<(Normalised, Vec<EventRequest>), AgentError> {
    let payload = match capt_hook_proto::payload::parse(req.payload_raw.as_bytes()) {
        Ok(Some(v)) => v,
        Ok(None) => serde_json::Value::Object(Default::default()),
        Err(e) => {
            return Err(AgentError::Field {
                agent: agent.parse()?,
                event: req.event.clone(),
                field: "(payload)".into(),
                problem: format!("is not JSON: {e}"),
            });
        }
    };
    let agent: Agent = agent.parse()?;
    let n = normalise(agent, Some(&req.event), &payload)?;
    let Some(ours) = n.ours else {
        return Ok((n, Vec::new()));
    };
    let subs = n
        .payloads
        .iter()
        .map(|p| EventRequest {
            event: ours.name().to_owned(),
            payload_raw: p.to_string(),
            agent: None,
            ..req.clone()
        })
        .collect();
    Ok((n, subs))
}

/// Which adapter reads `req`, by agent name: the agent the client named; else, for an event
/// name Claude Code does not have (a hook configured without `--agent`), the agent whose
/// payload shape it is. `Ok(None)` for Claude Code's own events; `Err` for an event of no agent
/// we know, saying how to name one.
pub fn agent_of(req: &EventRequest) -> Result<Option<String>, AgentError> {
    if let Some(a) = &req.agent {
        return Ok(Some(a.clone()));
    }
    if req.classic || req.event.parse::<capt_hook_core::EventKind>().is_ok() {
        return Ok(None);
    }
    let mut payload = match capt_hook_proto::payload::parse(req.payload_raw.as_bytes()) {
        Ok(Some(v)) => v,
        _ => serde_json::Value::Object(Default::default()),
    };
    // The event named on the command line speaks for a payload that does not name it.
    if let Some(obj) = payload.as_object_mut()
        && !obj.contains_key("hook_event_name")
        && !obj.contains_key("hookEventName")
    {
        obj.insert("hook_event_name".into(), req.event.clone().into());
    }
    match capt_hook_agents::detect(None, |v| req.env.get(v).cloned(), &payload)? {
        Agent::Claude => Ok(None),
        a => Ok(Some(a.name().to_owned())),
    }
}

/// Deny wins, then ask, then allow: what the client grades the folded answer by.
fn stricter(a: Decision, b: Decision) -> Decision {
    let rank = |d: Decision| match d {
        Decision::Deny => 3,
        Decision::Ask => 2,
        Decision::Allow => 1,
        _ => 0,
    };
    if rank(b) > rank(a) { b } else { a }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A journal entry for an agent event that ran no hooks.
fn bare_entry(
    req: &EventRequest,
    error: Option<String>,
    exit: i32,
    started: Instant,
) -> capt_hook_journal::Entry {
    capt_hook_journal::Entry {
        ts_ms: now_ms(),
        event_name: req.event.clone(),
        event: None,
        fired: Vec::new(),
        errors: error.into_iter().collect(),
        verdict: None,
        exit,
        elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
        spawned: false,
    }
}

/// True the first time this worker hears from the unknown agent `key` (its name, or "unnamed").
fn first_word_about(key: String) -> bool {
    static TOLD: parking_lot::Mutex<Vec<String>> = parking_lot::Mutex::new(Vec::new());
    let mut told = TOLD.lock();
    if told.contains(&key) {
        return false;
    }
    told.push(key);
    true
}

/// The answer to an event that could not be read: the agent's own answer to a failed check
/// where its event is known (a guard refuses the call), else the worker's error, naming why.
pub fn unreadable(
    req: &EventRequest,
    agent: Option<&str>,
    e: &AgentError,
) -> (EventResponse, capt_hook_journal::Entry) {
    let started = Instant::now();
    let message = format!("capt-hook: {e}");
    let known = agent.and_then(|a| a.parse::<Agent>().ok()).and_then(|a| {
        a.table().event(&req.event).map(|row| Normalised {
            agent: a,
            event: req.event.clone(),
            ours: row.ours,
            tool: None,
            payloads: Vec::new(),
        })
    });
    // An agent we do not know is told so once per worker; after that its events get no answer
    // (none it could read exists) and the journal keeps the reason (`capt-hook logs`).
    let stranger = match e {
        AgentError::UnknownAgent(name) => Some(format!("named {name}")),
        AgentError::Unrecognised(_) => Some("unnamed".to_owned()),
        _ => None,
    };
    if let Some(key) = stranger
        && !first_word_about(key)
    {
        let r = EventResponse {
            schema: 1,
            status: Status::Ok,
            stdout: String::new(),
            decision: Decision::None,
            stderr: String::new(),
            exit: 0,
            elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
            guard_completed: false,
            stale_build: false,
            classic: None,
        };
        return (r, bare_entry(req, Some(message), 0, started));
    }
    let entry = bare_entry(req, Some(message.clone()), 1, started);
    let mut r = EventResponse {
        schema: 1,
        status: Status::Error,
        stdout: String::new(),
        decision: Decision::None,
        stderr: message + "\n",
        exit: 1,
        elapsed_ms: 0.0,
        guard_completed: false,
        stale_build: false,
        classic: None,
    };
    if let Some(Ok(a)) = known.and_then(|n| {
        let failed = Verdict::failed(n.ours?, format!("capt-hook could not check this call: {e}"));
        Some(render(&n, &[failed]))
    }) && !a.stdout.is_empty()
    {
        let guarded = capt_hook_proto::failure::is_guarded_for(agent, &req.event);
        r.status = Status::Ok;
        r.stdout = a.stdout + "\n";
        r.stderr = a.stderr;
        r.exit = a.exit;
        r.decision = if guarded {
            Decision::Deny
        } else {
            Decision::None
        };
    }
    r.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    (r, entry)
}

/// Answers `req`, an event of `agent`, evaluating each Claude Code event it amounts to with
/// `claude` (its response, journal entry and typed verdict). An event that cannot be read is
/// answered the way the agent reads a failed check where it can be (a guard refuses the call),
/// else reported as the worker's error.
pub fn respond(
    req: &EventRequest,
    agent: &str,
    claude: impl Fn(&EventRequest) -> (EventResponse, capt_hook_journal::Entry, Verdict),
) -> (EventResponse, capt_hook_journal::Entry) {
    let started = Instant::now();
    let response = |stdout: String, stderr: String, exit: i32, decision, completed| EventResponse {
        schema: 1,
        status: Status::Ok,
        stdout,
        decision,
        stderr,
        exit,
        elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
        guard_completed: completed,
        stale_build: false,
        classic: None,
    };
    let (n, subs) = match claude_requests(req, agent) {
        Ok(x) => x,
        Err(e) => return unreadable(req, Some(agent), &e),
    };
    if subs.is_empty() {
        return (
            response(String::new(), String::new(), 0, Decision::None, true),
            bare_entry(req, None, 0, started),
        );
    }
    let mut verdicts = Vec::new();
    let mut entries = Vec::new();
    let mut decision = Decision::None;
    let mut completed = true;
    let mut stale = false;
    let mut responses = Vec::new();
    for sub in &subs {
        let (resp, entry, verdict) = claude(sub);
        decision = stricter(decision, resp.decision);
        completed &= resp.guard_completed;
        stale |= resp.stale_build;
        verdicts.push(verdict);
        entries.push(entry);
        responses.push(resp);
    }
    // Every call was journalled; the caller submits the last once the reply is sent.
    let last = entries.pop();
    for e in entries {
        capt_hook_journal::submit(e);
    }
    let entry = last.unwrap_or_else(|| bare_entry(req, None, 0, started));
    // An agent speaking Claude Code's protocol gets the engine's envelope as it was printed.
    if passes_through(&n, responses.len())
        && let Some(resp) = responses.pop()
    {
        return (resp, entry);
    }
    match render(&n, &verdicts) {
        Ok(a) => {
            let stdout = if a.stdout.is_empty() || a.stdout.ends_with('\n') {
                a.stdout
            } else {
                a.stdout + "\n"
            };
            let mut r = response(stdout, a.stderr, a.exit, decision, completed);
            r.stale_build = stale;
            (r, entry)
        }
        Err(e) => {
            let mut r = response(
                String::new(),
                format!("capt-hook: {e}\n"),
                1,
                Decision::None,
                false,
            );
            r.status = Status::Error;
            (r, entry)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::{Project, default_hooks_dir};
    use crate::worker::warm::respond_traced;
    use capt_hook_engine::registry::Registry;
    use serde_json::{Value, json};

    fn project(root: &std::path::Path) -> Project {
        let hooks = default_hooks_dir(root);
        std::fs::create_dir_all(&hooks).unwrap();
        let hook = "[[hook]]\nkind = \"block_command\"\nargv = [\"git\", \"stash\"]\n\
                    reason = \"stashes hide work\"\n\n[[hook]]\nkind = \"block_command\"\n\
                    argv = [\"rm\"]\nreason = \"keep the notes\"\n";
        std::fs::write(hooks.join("guards.toml"), hook).unwrap();
        Project::load_with_packs(root, &hooks, &Registry::new())
    }

    fn request(root: &std::path::Path, agent: &str, event: &str, payload: Value) -> EventRequest {
        EventRequest {
            schema: 1,
            event: event.into(),
            root: root.display().to_string(),
            cwd: root.display().to_string(),
            env: Default::default(),
            payload_raw: payload.to_string(),
            client_pid: 2,
            client_ppid: 1,
            deadline_unix_ms: 0,
            notice_epoch: None,
            notices: Vec::new(),
            classic: false,
            agent: Some(agent.into()),
            request_id: None,
        }
    }

    fn stdout(r: &EventResponse) -> Value {
        serde_json::from_str(&r.stdout).unwrap_or(Value::Null)
    }

    /// One `block_command` guards Gemini's shell, Codex's patch and Copilot's bash, each
    /// answered in its own shape.
    #[test]
    fn one_rule_answers_every_agent_in_its_shape() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let p = project(root);
        let cwd = root.display().to_string();

        let gemini = json!({"session_id": "g", "cwd": cwd, "hook_event_name": "BeforeTool",
            "timestamp": "2026-12-05T11:00:00Z", "tool_name": "run_shell_command",
            "tool_input": {"command": "git stash"}});
        let (r, _) = respond_traced(&p, &request(root, "gemini", "BeforeTool", gemini), None);
        let v = stdout(&r);
        assert_eq!(v["decision"], "deny", "{}", r.stdout);
        assert!(
            v["reason"].as_str().unwrap().contains("stashes hide work"),
            "{v}"
        );
        assert_eq!((r.exit, r.decision), (0, Decision::Deny));

        // The patch deletes a file: the `rm` it amounts to is refused, so the patch is.
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Delete File: notes.txt\n\
                     *** End Patch\n";
        let codex = json!({"session_id": "c", "cwd": cwd, "hook_event_name": "PreToolUse",
            "turn_id": "1", "tool_name": "apply_patch", "tool_input": {"command": patch}});
        let (r, _) = respond_traced(&p, &request(root, "codex", "PreToolUse", codex), None);
        let v = stdout(&r);
        assert_eq!(
            v["hookSpecificOutput"]["permissionDecision"], "deny",
            "{}",
            r.stdout
        );
        assert!(r.guard_completed);

        let copilot = json!({"timestamp": 1, "cwd": cwd, "toolName": "bash",
            "toolArgs": "{\"command\":\"ls\"}"});
        let (r, _) = respond_traced(&p, &request(root, "copilot", "preToolUse", copilot), None);
        assert_eq!(
            (r.stdout.as_str(), r.exit),
            ("", 0),
            "an allowed call says nothing"
        );
    }

    /// A Stop gate blocks once in each of two prompts' turns of a Codex or Gemini session: the
    /// agents' transcripts are not Claude Code's, so the prompt events we answer mark the turns,
    /// and a continuing stop stays in its turn even when its continuation came as a prompt.
    /// The session's agent is what `coding_agent` reads.
    #[test]
    fn stop_gate_once_per_prompt_and_coding_agent_in_other_agents() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let hooks = default_hooks_dir(root);
        std::fs::create_dir_all(&hooks).unwrap();
        let hook = "[[hook]]\nkind = \"gate\"\nmessage = \"run the tests\"\n\n\
                    [[hook]]\nkind = \"hook\"\nevents = \"UserPromptSubmit\"\n\
                    message = \"not in Claude Code\"\nskip_if = [{ coding_agent = \"claude\" }]\n";
        std::fs::write(hooks.join("gate.toml"), hook).unwrap();
        let p = Project::load_with_packs(root, &hooks, &Registry::new());
        assert!(p.errors().is_empty(), "{:?}", p.errors());
        // A transcript in Codex's rollout format, which reads as no Claude Code turn at all.
        let transcript = root.join("rollout.jsonl");
        std::fs::write(
            &transcript,
            "{\"timestamp\":\"2026-12-05T11:00:00Z\",\"type\":\"response_item\",\
             \"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[]}}\n",
        )
        .unwrap();
        // Unique per run: the worker keeps session state under the user's state root.
        let sid = |agent: &str| format!("{agent}-{}", root.display()).replace('/', "-");
        for (agent, prompt_event, stop_event, blocked) in [
            (
                "codex",
                "UserPromptSubmit",
                "Stop",
                "\"decision\":\"block\"",
            ),
            (
                "gemini",
                "BeforeAgent",
                "AfterAgent",
                "\"decision\":\"deny\"",
            ),
        ] {
            let base = json!({"session_id": sid(agent), "cwd": root.display().to_string(),
                "transcript_path": transcript.display().to_string(), "turn_id": "1"});
            let event = |name: &str, extra: Value| {
                let mut v = base.clone();
                v["hook_event_name"] = name.into();
                for (k, x) in extra.as_object().unwrap() {
                    v[k] = x.clone();
                }
                if agent == "gemini" {
                    v.as_object_mut().unwrap().remove("turn_id");
                }
                let (r, _) = respond_traced(&p, &request(root, agent, name, v), None);
                r
            };
            let stop = |active: bool| {
                event(
                    stop_event,
                    json!({"stop_hook_active": active, "last_assistant_message": "Done.",
                        "prompt": "hi", "prompt_response": "Done."}),
                )
            };
            for turn in 1..=2 {
                let r = event(prompt_event, json!({"prompt": format!("prompt {turn}")}));
                assert!(
                    r.stdout.contains("not in Claude Code")
                        || r.stderr.contains("not in Claude Code"),
                    "{agent}: coding_agent = {agent} on its prompt: {r:?}"
                );
                let r = stop(false);
                assert!(
                    r.stdout.replace(' ', "").contains(blocked)
                        && r.stdout.contains("run the tests"),
                    "{agent} turn {turn}: the gate blocks the first stop: {r:?}"
                );
                if agent == "gemini" {
                    // Gemini CLI sends the block's reason as a new prompt to continue.
                    event(prompt_event, json!({"prompt": "run the tests"}));
                }
                let r = stop(true);
                assert!(
                    !r.stdout.contains("run the tests"),
                    "{agent} turn {turn}: the gate blocks once per turn: {r:?}"
                );
            }
        }
    }

    /// What cannot be read is refused in the agent's shape on a guard, an error elsewhere; an
    /// event we leave alone is answered with nothing.
    #[test]
    fn unreadable_events_fail_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let p = project(root);
        let bad = json!({"timestamp": 1, "cwd": "/", "toolName": "bash", "toolArgs": "{oops"});
        let (r, entry) = respond_traced(&p, &request(root, "copilot", "preToolUse", bad), None);
        assert_eq!(stdout(&r)["permissionDecision"], "deny", "{}", r.stdout);
        assert_eq!(entry.errors.len(), 1);

        let (r, _) = respond_traced(&p, &request(root, "aider", "PreToolUse", json!({})), None);
        assert_eq!((r.status, r.exit), (Status::Error, 1));
        assert!(r.stderr.contains("unknown agent 'aider'"), "{}", r.stderr);
        // Told once: its next event gets no answer, and the journal keeps why.
        let (r, entry) = respond_traced(&p, &request(root, "aider", "Stop", json!({})), None);
        assert_eq!((r.status, r.exit, r.stderr.as_str()), (Status::Ok, 0, ""));
        assert!(
            entry.errors[0].contains("unknown agent 'aider'"),
            "{entry:?}"
        );

        // Without --agent: Gemini's event name and shape name it; a shape of no agent we know
        // is an error that says how to name one.
        let gemini = json!({"session_id": "g", "cwd": "/", "hook_event_name": "BeforeTool",
            "tool_name": "run_shell_command", "tool_input": {"command": "git stash"}});
        let mut unnamed = request(root, "gemini", "BeforeTool", gemini);
        unnamed.agent = None;
        let (r, _) = respond_traced(&p, &unnamed, None);
        assert_eq!(stdout(&r)["decision"], "deny", "{}", r.stdout);
        let mut unknown = request(root, "x", "OnToolCall", json!({"tool": "sh"}));
        unknown.agent = None;
        let (r, _) = respond_traced(&p, &unknown, None);
        assert_eq!((r.status, r.exit), (Status::Error, 1));
        assert!(
            r.stderr.contains("an agent capt-hook does not know"),
            "{}",
            r.stderr
        );
        let (r, _) = respond_traced(&p, &unknown, None);
        assert_eq!((r.status, r.exit, r.stderr.as_str()), (Status::Ok, 0, ""));

        let model = json!({"session_id": "g", "hook_event_name": "BeforeModel"});
        let (r, _) = respond_traced(&p, &request(root, "gemini", "BeforeModel", model), None);
        assert_eq!((r.stdout.as_str(), r.exit, r.status), ("", 0, Status::Ok));
    }
}

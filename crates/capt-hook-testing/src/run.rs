//! Running one inline test: the hook alone in a registry, through the dispatcher the worker
//! uses, in a scratch state root.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capt_hook_core::{Action, Event, EventContext, HookResult, Mode, Pattern};
use serde_json::Value;

use crate::payload::build_payload;
use crate::report::{Status, TestOutcome};
use capt_hook_engine::dispatch::{DispatchOptions, Dispatcher, Trace};
use capt_hook_engine::hook::FailureCause;
use capt_hook_engine::hook::Hook;
use capt_hook_engine::inline::{Expect, InlineTest, Verdict};
use capt_hook_engine::inline::{load_transcript, py_str};
use capt_hook_engine::registry::Registry;

fn describe(r: Option<&HookResult>) -> String {
    match r {
        None => "no result".to_owned(),
        Some(r) => match r.action {
            Action::Rewrite => format!(
                "rewrite({})",
                r.updated_input
                    .as_ref()
                    .map(|u| Value::Object(u.clone()).to_string())
                    .unwrap_or_default()
            ),
            a => match &r.message {
                Some(m) => format!("{}({})", a.name(), py_str(m)),
                None => format!("{}()", a.name()),
            },
        },
    }
}

/// Runs `hook` alone against `evt` through the dispatcher the worker uses, so a test honours
/// what a session would: the hook's events, planning agents, `.gitignore`, async mode, fire caps
/// and Stop continuations; the fold sees this one hook. Returns the verdict and, when the hook
/// did not run, why.
pub fn evaluate_alone(
    hook: &Hook,
    evt: &Arc<Event>,
    root: Option<&Path>,
) -> (Option<HookResult>, Option<String>) {
    let (result, trace) = evaluate_traced(hook, evt, root);
    let why = trace.and_then(|t| t.skip_reason(hook));
    (result, why)
}

/// [`evaluate_alone`] with the hook's trace itself, so a caller can tell a hook that failed
/// from one that gave no verdict.
fn evaluate_traced(
    hook: &Hook,
    evt: &Arc<Event>,
    root: Option<&Path>,
) -> (Option<HookResult>, Option<Trace>) {
    let mut registry = Registry::new();
    registry.push(hook.clone());
    let dispatcher = Dispatcher::new(Arc::new(registry), root);
    let opts = DispatchOptions {
        deadline: Some(Instant::now() + TEST_DEADLINE),
        run_async: hook.is_async,
    };
    let (result, traces) = dispatcher.explain(evt, opts);
    (result, traces.into_iter().next())
}

/// Runs every inline test of every hook in `registry`, in registration order, with `root` as
/// the project root.
pub fn run_registry(registry: &Registry, root: Option<&Path>) -> Vec<TestOutcome> {
    registry
        .hooks()
        .iter()
        .flat_map(|h| h.tests.iter().map(move |t| run_test(h, t, root)))
        .collect()
}

/// How long a Rust handler under test may run before it counts as hung.
const TEST_DEADLINE: Duration = Duration::from_secs(10);

/// Runs one inline test of `hook` with `root` as the project root.
pub fn run_test(hook: &Hook, test: &InlineTest, root: Option<&Path>) -> TestOutcome {
    let id = format!("{}:{}", hook.name, test.input.repr());
    let expected = test.expect.name().to_owned();
    let outcome = |status, reason: String| TestOutcome {
        id: id.clone(),
        status,
        expected: expected.clone(),
        reason,
    };
    let Some(event) = test.input.event.or_else(|| hook.events.first()) else {
        return outcome(Status::Error, "the hook listens to no event".to_owned());
    };
    let payload = build_payload(hook, &test.input, event);
    // Each test gets a scratch state root, so pre-seeded slots and once-per-turn throttles
    // never leak between tests or into the user's real state.
    let scratch = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return outcome(Status::Error, format!("IOError: scratch state dir: {e}")),
    };
    let mut payload = payload;
    if let Some(obj) = payload.as_object_mut() {
        obj.insert("session_id".into(), "inline-test".into());
    }
    let store = capt_hook_state::SessionStore::for_session(scratch.path(), Some("inline-test"));
    for (key, value) in test.input.state.iter().flatten() {
        if let Err(e) = store.slot_named::<Value>(key).set(value) {
            return outcome(Status::Error, format!("StateError: {e}"));
        }
    }
    // A workflow record goes where the seeds put it: under its state key and the agent.
    for (state_key, model_key, value) in &test.input.workflow {
        let dir = store.hook_dir(state_key, test.input.agent_id.as_deref());
        let slot = capt_hook_state::SessionStore::at(dir).slot_named::<Value>(model_key);
        if let Err(e) = slot.set(value) {
            return outcome(Status::Error, format!("StateError: {e}"));
        }
    }
    let context = EventContext {
        project_root: root.map(Path::to_path_buf),
        skip_permissions: test.input.skip_permissions,
        state_root: Some(scratch.path().to_path_buf()),
        origin_pid: None,
        request_env: test.input.env.clone().map(std::sync::Arc::new),
        coding_agent: test.input.coding_agent.clone(),
    };
    let evt = match Event::new(event, payload, context) {
        Ok(e) => e,
        Err(e) => return outcome(Status::Error, format!("EventError: {e}")),
    };
    let evt = match &test.input.before {
        None => evt,
        Some(text) => match evt.with_file_before(text.clone()) {
            Ok(e) => e,
            Err(why) => return outcome(Status::Error, format!("before: {why}")),
        },
    };
    let evt = match &test.input.transcript {
        Some(spec) => {
            // A fixture file sits beside the file that declares the test.
            let base = hook
                .source
                .as_ref()
                .and_then(|s| Path::new(&s.file).parent().map(Path::to_path_buf))
                .unwrap_or_default();
            match load_transcript(spec, &base) {
                Ok(lines) => {
                    evt.with_transcript(capt_hook_core::history::transcript_from_values(&lines))
                }
                Err(e) => return outcome(Status::Error, format!("transcript: {e}")),
            }
        }
        None => evt.with_transcript(capt_hook_transcript::Transcript::empty()),
    };
    if let Some(tickets) = &test.input.tickets
        && let Err(e) = preload_tickets(&evt, tickets)
    {
        return outcome(Status::Error, format!("tickets: {e}"));
    }
    if let Some(rulings) = &test.input.rulings
        && let Err(e) = preload_rulings(&evt, rulings)
    {
        return outcome(Status::Error, format!("rulings: {e}"));
    }
    // Inline tests never reach a model: every LLM hook answers from the stub.
    evt.memo(capt_hook_kinds::llm::STUB_KEY, || {
        capt_hook_kinds::llm::LlmStub {
            active: true,
            values: test.input.llm.clone().unwrap_or_default(),
        }
    });
    let (result, trace) = evaluate_traced(hook, &Arc::new(evt), root);
    // An `ask` leaves the call to the user: that is its verdict, and only `expect = "ask"`
    // passes on it (its pattern searched in the reason).
    if let Some(Trace::Failed(FailureCause::Asked(reason))) = &trace {
        return match (&test.expect.verdict, &test.expect.pattern) {
            (Verdict::Ask, Some(p)) => match search(p, reason) {
                Ok(true) => outcome(Status::Pass, String::new()),
                Ok(false) => outcome(
                    Status::Fail,
                    format!(
                        "[{}] Ask reason does not match {}: {}",
                        hook.name,
                        py_str(p),
                        py_str(reason)
                    ),
                ),
                Err(CheckError::Error(m) | CheckError::Fail(m)) => outcome(Status::Error, m),
            },
            (Verdict::Ask, None) => outcome(Status::Pass, String::new()),
            (v, _) => outcome(
                Status::Fail,
                format!(
                    "[{}] Expected {v:?}, got ask({})",
                    hook.name,
                    py_str(reason)
                ),
            ),
        };
    }
    // A hook that failed gave no verdict of its own: an expectation of "allow" or "ask" must
    // not pass on that silence.
    if let Some(t @ (Trace::Failed(_) | Trace::Abandoned)) = &trace {
        return outcome(Status::Error, t.describe(hook));
    }
    let why_not = trace.and_then(|t| t.skip_reason(hook));
    match check(&hook.name, &test.expect, result.as_ref()) {
        Ok(()) => outcome(Status::Pass, String::new()),
        Err(CheckError::Fail(m)) => match why_not {
            Some(why) => outcome(Status::Fail, format!("{m} ({why})")),
            None => outcome(Status::Fail, m),
        },
        Err(CheckError::Error(m)) => outcome(Status::Error, m),
    }
}

enum CheckError {
    Fail(String),
    Error(String),
}

fn search(pattern: &str, text: &str) -> Result<bool, CheckError> {
    Pattern::new(pattern, Mode::Plain)
        .map(|p| p.is_match(text))
        .map_err(|e| CheckError::Error(format!("PatternError: {e}")))
}

fn check(name: &str, expect: &Expect, r: Option<&HookResult>) -> Result<(), CheckError> {
    let fail = |m: String| Err(CheckError::Fail(format!("[{name}] {m}")));
    let got = describe(r);
    match (&expect.verdict, r) {
        (Verdict::Allow { explicit: false }, None) => {}
        (Verdict::Allow { .. }, Some(r)) if r.action == Action::Allow => {}
        (Verdict::Allow { .. }, _) => return fail(format!("Expected Allow, got {got}")),
        (Verdict::Ask, None) => {}
        (Verdict::Ask, _) => return fail(format!("Expected Ask, got {got}")),
        (Verdict::Block, Some(r)) | (Verdict::Warn, Some(r))
            if r.action
                == if expect.verdict == Verdict::Block {
                    Action::Block
                } else {
                    Action::Warn
                } =>
        {
            if let Some(p) = &expect.pattern {
                let msg = r.message.clone().unwrap_or_default();
                if !search(p, &msg)? {
                    let label = if r.action == Action::Block {
                        "Block"
                    } else {
                        "Warn"
                    };
                    return fail(format!(
                        "{label} message {} doesn't match {}",
                        py_str(&msg),
                        py_str(p)
                    ));
                }
            }
        }
        (Verdict::Block, _) => return fail(format!("Expected Block, got {got}")),
        (Verdict::Warn, _) => return fail(format!("Expected Warn, got {got}")),
        (Verdict::Rewrite, Some(r)) if r.action == Action::Rewrite => {
            let input = r.updated_input.clone().unwrap_or_default();
            if let Some(p) = &expect.pattern {
                let cmd = input
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !cmd.contains(p.as_str()) {
                    return fail(format!(
                        "Rewrite command {} doesn't contain {}",
                        py_str(cmd),
                        py_str(p)
                    ));
                }
            }
            for (key, needle) in &expect.fields {
                let text = match input.get(key) {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                if !text.contains(needle.as_str()) {
                    return fail(format!(
                        "Rewrite field {key} {} doesn't contain {}",
                        py_str(&text),
                        py_str(needle)
                    ));
                }
            }
        }
        (Verdict::Rewrite, _) => return fail(format!("Expected Rewrite, got {got}")),
    }
    if let Some(p) = &expect.system_message {
        let notice = r.and_then(|r| r.system_message.clone()).unwrap_or_default();
        if !search(p, &notice)? {
            return fail(format!(
                "System message {} doesn't match {}",
                py_str(&notice),
                py_str(p)
            ));
        }
    }
    Ok(())
}

/// Puts a test's rulings on record in its scratch state root, each `age` (default a day) before
/// now, so they predate the test's session.
fn preload_rulings(
    evt: &Event,
    rulings: &[capt_hook_engine::inline::RulingInput],
) -> Result<(), PreloadError> {
    use capt_hook_state::rulings::{Ruling, append_ruling, format_time_ms, rulings_path};
    let state_root = evt
        .context()
        .state_root
        .clone()
        .unwrap_or_else(capt_hook_state::state_root);
    let path = rulings_path(&state_root);
    let now = capt_hook_proto::clock::now_unix_ms();
    for (i, r) in rulings.iter().enumerate() {
        let age = match &r.age {
            Some(d) => d.to_duration().map_err(|why| PreloadError::Duration {
                field: format!("rulings[{i}].age"),
                why,
            })?,
            None => std::time::Duration::from_secs(24 * 3600),
        };
        let ruling = Ruling {
            id: r.id.clone(),
            text: r.text.clone(),
            tags: r.tags.iter().cloned().collect(),
            recorded: format_time_ms(now.saturating_sub(age.as_millis() as u64)),
        };
        append_ruling(&path, &ruling).map_err(|e| PreloadError::Rulings(e.to_string()))?;
    }
    Ok(())
}

/// Why a test's tickets could not be put in its store.
#[derive(Debug, thiserror::Error)]
enum PreloadError {
    #[error(transparent)]
    Store(#[from] capt_hook_kinds::tickets::TicketError),
    #[error("{field}: {why}")]
    Duration {
        field: String,
        why: capt_hook_engine::inline::DurationError,
    },
    #[error(transparent)]
    Mint(#[from] capt_hook_state::StateError),
    #[error("{0}")]
    Rulings(String),
}

/// Puts a test's tickets in the scratch store of its project, minted `age` before now.
fn preload_tickets(
    evt: &Event,
    tickets: &[capt_hook_engine::inline::TicketInput],
) -> Result<(), PreloadError> {
    use capt_hook_kinds::tickets::{
        Evidence, Proposal, Reach, Ticket, new_ticket_id, store_for, tool_payload,
    };
    let store = store_for(evt)?;
    let now = capt_hook_proto::clock::now_unix_ms();
    let ms = |d: &Option<capt_hook_engine::inline::DurationSpec>,
              field: &str|
     -> Result<Option<u64>, PreloadError> {
        d.as_ref()
            .map(|d| {
                d.to_duration()
                    .map(|d| d.as_millis() as u64)
                    .map_err(|why| PreloadError::Duration {
                        field: field.to_owned(),
                        why,
                    })
            })
            .transpose()
    };
    // The test's own call, as a TOML declaration reads it, is what an action ticket covers.
    let own = Proposal {
        place: Default::default(),
        payload: tool_payload(
            evt.tool_name().unwrap_or(""),
            &Value::Object(evt.tool_input().cloned().unwrap_or_default()),
        ),
        summary: String::new(),
    };
    for (i, t) in tickets.iter().enumerate() {
        let minted_at = now.saturating_sub(ms(&t.age, &format!("tickets[{i}].age"))?.unwrap_or(0));
        let reach = match t.reach {
            Some(capt_hook_engine::inline::ReachSpec::Action) => Reach::Action,
            _ => Reach::Place,
        };
        let ticket = Ticket {
            id: new_ticket_id(&t.kind, &t.place, minted_at),
            kind: t.kind.clone(),
            place: t.place.clone(),
            reach,
            fingerprint: (reach == Reach::Action).then(|| own.fingerprint()),
            rule: t.rule.clone().unwrap_or_else(|| "preloaded".to_owned()),
            evidence: vec![Evidence {
                source: "test".to_owned(),
                text: "put in the store by the inline test".to_owned(),
            }],
            session: evt.session_id().map(str::to_owned),
            tree: t
                .tree
                .clone()
                .or_else(|| capt_hook_kinds::tickets::tree(evt)),
            author: Some("test".to_owned()),
            minted_at,
            expires_at: ms(&t.ttl, &format!("tickets[{i}].ttl"))?.map(|ttl| minted_at + ttl),
            revoked_at: t.revoked.then_some(now),
        };
        // Minting prunes what expired before the time given; 0 keeps a test's expired tickets.
        store.mint(ticket, 0)?;
    }
    Ok(())
}

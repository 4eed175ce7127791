//! `stop_runaway`: answers the host's ResourcePressure stages for a process the session started.
//!
//! * `warn` (the process kept pressing for the host's window): the hook's message.
//! * `judge` (it kept pressing through a second window): the process is checked to be the one
//!   the host saw (same pid and start time, still below the session's agent) and screened
//!   (nested agents, terminal multiplexers, deploys and the like are never stopped); then a
//!   judge rates it disposable or not. Disposable: SIGTERM, and the agent is told.
//! * `escalate` (still alive a while after the judge stage): SIGKILL, only for a process this
//!   hook sent SIGTERM to.
//!
//! Anything it cannot check (another system than Linux, a process gone or reused, a judge that
//! fails) leaves the process running: a stop is never a guess. Inline tests never signal.

use std::sync::Arc;
use std::time::Duration;

use capt_hook_core::{Event, EventKind, EventSet, HookResult, Pattern};
use capt_hook_llm::prompt::{Block, transcript_window};
use capt_hook_llm::schema::{Field, FieldType};
use serde_json::Value;

use super::{BackendChoice, Budget, Question, Size, VerdictSchema, ask};
use capt_hook_engine::hook::{HandlerFn, HandlerResult};
use capt_hook_engine::primitives::{CustomKind, DefError, HookDef, custom};

/// The session slot recording the signals this hook sent, by process identity.
const SLOT: &str = "stop_runaway";
/// Deepest ancestry walked from the process to the session's agent.
const MAX_DEPTH: usize = 64;
/// Seconds two start times may differ and still name one process (the host rounds down).
const START_SLACK: i64 = 1;

/// What a `stop_runaway` hook is told to do.
#[derive(Clone)]
pub struct StopOptions {
    /// The `warn` stage's message.
    pub message: String,
    /// Command lines never stopped, beyond the built-in screen (searched in the process's and
    /// its ancestors' command lines).
    pub exclude: Vec<Pattern>,
    /// The judge's tier (default small).
    pub size: Size,
    /// The judge's specialty (default `general`).
    pub specialty: String,
    /// The hook's own choice of judge.
    pub backend: Option<BackendChoice>,
    /// The judge's own time limit.
    pub timeout: Option<Duration>,
}

impl StopOptions {
    /// The defaults with the `warn` stage's message.
    pub fn new(message: impl Into<String>) -> StopOptions {
        StopOptions {
            message: message.into(),
            exclude: Vec::new(),
            size: Size::Small,
            specialty: super::GENERAL_SPECIALTY.to_owned(),
            backend: None,
            timeout: Some(Duration::from_secs(30)),
        }
    }
}

/// Programs never stopped: agents, the host, terminals and what keeps a session reachable.
const SCREENED_PROGRAMS: &[(&str, &str)] = &[
    ("claude", "a nested agent"),
    ("codex", "a nested agent"),
    ("gemini", "a nested agent"),
    ("capt-hookd", "the captain-hook host"),
    ("capt-hook-worker", "the captain-hook host"),
    ("tmux", "a terminal multiplexer"),
    ("screen", "a terminal multiplexer"),
    ("zellij", "a terminal multiplexer"),
    ("ssh", "a remote session"),
    ("sshd", "a remote session"),
    ("login", "a terminal host"),
];

/// Words that mark work whose interruption can leave things half-done.
const SCREENED_WORDS: &str = r"(?i)\b(?:deploy\w*|release|publish\w*|migrat\w*|terraform|tofu|pulumi|kubectl|helm|ansible\w*|rsync|pg_dump|pg_restore|mysqldump|apt|apt-get|dnf|yum|brew)\b";

/// The process the host reported, as its payload names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Its pid.
    pub pid: u32,
    /// Its start, Unix seconds.
    pub start_unix: i64,
    /// The session's agent.
    pub agent_pid: u32,
    /// The agent's start, Unix seconds, when the host knew it.
    pub agent_start_unix: Option<i64>,
    /// Its command line.
    pub argv: Vec<String>,
}

impl Target {
    /// The process of a ResourcePressure payload.
    pub fn of(evt: &Event) -> Option<Target> {
        let p = evt.payload();
        let process = p.get("process")?;
        let int = |v: Option<&Value>| v.and_then(Value::as_i64);
        Some(Target {
            pid: u32::try_from(int(process.get("pid"))?).ok()?,
            start_unix: int(process.get("start_unix"))?,
            agent_pid: u32::try_from(int(p.get("claude_pid"))?).ok()?,
            agent_start_unix: int(p.get("claude_start_unix")),
            argv: process
                .get("argv")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// The key its signals are recorded under (a reused pid is another process).
    fn key(&self) -> String {
        format!("{}:{}", self.pid, self.start_unix)
    }

    fn program(&self) -> String {
        self.argv
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or(a).to_owned())
            .unwrap_or_else(|| format!("pid {}", self.pid))
    }
}

/// A live process as the system shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Live {
    /// Its parent.
    pub ppid: u32,
    /// Its start, Unix seconds.
    pub start_unix: i64,
    /// Its command line.
    pub argv: Vec<String>,
}

/// Reads a live process (`None`: gone, a zombie, or a system this hook cannot read).
pub type LookupFn = Arc<dyn Fn(u32) -> Option<Live> + Send + Sync>;

/// The system's processes, from `/proc`.
#[cfg(target_os = "linux")]
pub fn system_lookup() -> LookupFn {
    Arc::new(|pid| {
        use capt_hook_proto::procfs;
        let st = procfs::stat(pid).filter(|s| !s.zombie)?;
        let ticks = rustix::param::clock_ticks_per_second() as f64;
        let boot = procfs::boot_time_unix()? as f64;
        Some(Live {
            ppid: st.ppid,
            start_unix: (boot + st.start_ticks as f64 / ticks) as i64,
            argv: procfs::cmdline(pid).unwrap_or_default(),
        })
    })
}

/// Elsewhere nothing is read, so nothing is stopped (the warning still comes).
#[cfg(not(target_os = "linux"))]
pub fn system_lookup() -> LookupFn {
    Arc::new(|_| None)
}

/// Why `target` must not be signalled, or `None` when it is the process the host saw, still
/// below the session's agent, and passes the screen.
pub fn refusal(
    target: &Target,
    lookup: &dyn Fn(u32) -> Option<Live>,
    exclude: &[Pattern],
) -> Option<String> {
    let Some(live) = lookup(target.pid) else {
        return Some("it is gone, or this system's processes cannot be read".to_owned());
    };
    if (live.start_unix - target.start_unix).abs() > START_SLACK {
        return Some("its pid now names another process".to_owned());
    }
    if target.pid == target.agent_pid {
        return Some("it is the session's agent".to_owned());
    }
    let mut lines = vec![live.argv.join(" ")];
    let mut at = live.ppid;
    let mut reached = false;
    for _ in 0..MAX_DEPTH {
        if at == target.agent_pid {
            let agent = lookup(at);
            reached = match (agent, target.agent_start_unix) {
                (Some(a), Some(start)) => (a.start_unix - start).abs() <= START_SLACK,
                (Some(_), None) => true,
                (None, _) => false,
            };
            break;
        }
        let Some(parent) = lookup(at) else { break };
        lines.push(parent.argv.join(" "));
        at = parent.ppid;
    }
    if !reached {
        return Some("it no longer descends from the session's agent".to_owned());
    }
    let words = Pattern::new(SCREENED_WORDS, capt_hook_core::Mode::Plain).ok();
    for line in &lines {
        let program = line
            .split_whitespace()
            .next()
            .map(|p| p.rsplit('/').next().unwrap_or(p))
            .unwrap_or("");
        if let Some((_, what)) = SCREENED_PROGRAMS.iter().find(|(p, _)| *p == program) {
            return Some(format!("it is {what} (`{program}`)"));
        }
        if words.as_ref().is_some_and(|w| w.is_match(line)) {
            return Some(format!("`{}` may leave work half-done", clip(line)));
        }
        if exclude.iter().any(|p| p.is_match(line)) {
            return Some(format!("`{}` is excluded by the hook", clip(line)));
        }
    }
    None
}

fn clip(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

/// Sends SIGTERM (SIGKILL with `kill`) to the process alone, never its group: a group may hold
/// the agent's shell.
#[cfg(unix)]
fn send(pid: u32, kill: bool) -> Result<(), String> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| format!("{pid} is not a pid"))?;
    let signal = if kill {
        rustix::process::Signal::KILL
    } else {
        rustix::process::Signal::TERM
    };
    rustix::process::kill_process(pid, signal).map_err(|e| e.to_string())
}

#[cfg(not(unix))]
fn send(_pid: u32, _kill: bool) -> Result<(), String> {
    Err("signals are not supported on this system".to_owned())
}

fn schema() -> Result<VerdictSchema, DefError> {
    VerdictSchema::new(vec![
        Field::new(
            "disposable",
            FieldType::Bool,
            "true when the process is a runaway nobody is waiting for",
        ),
        Field::new("reasoning", FieldType::String, "one sentence why"),
    ])
    .map_err(|e| DefError::new("stop_runaway", e.to_string()))
}

const TASK: &str = "\
<process> is a process the coding agent's session started; it has kept a CPU core busy or held \
gigabytes of memory for several minutes. <context>, when given, is the session's recent work. Is it \
disposable: a runaway nobody is waiting for (a stuck loop, a watcher or server left behind, a \
test that hangs, a command started by mistake), rather than work the user or the agent is \
waiting on (a build, a long test suite, a data job, a server the agent is using now)? Answer \
disposable = true only when the evidence says so; when unsure, false. Say why in `reasoning` \
(one sentence).";

/// What the signals recorded say about a process.
type Signals = std::collections::BTreeMap<String, String>;

fn stage_judge(
    evt: &Event,
    o: &StopOptions,
    lookup: &dyn Fn(u32) -> Option<Live>,
    name: &str,
) -> HandlerResult {
    let Some(target) = Target::of(evt) else {
        return Ok(None);
    };
    let slot = evt.store().slot_named::<Signals>(SLOT);
    if slot.load().contains_key(&target.key()) {
        return Ok(None);
    }
    if let Some(why) = refusal(&target, lookup, &o.exclude) {
        tracing::info!(
            pid = target.pid,
            why,
            "stop_runaway leaves the process running"
        );
        return Ok(None);
    }
    let facts = serde_json::to_string_pretty(evt.payload().get("process").unwrap_or(&Value::Null))
        .unwrap_or_default();
    let mut blocks = vec![Block::new("process", facts)];
    let window = transcript_window(evt.transcript(), 4000, false, Budget::default());
    if !window.is_empty() {
        blocks.push(Block::new("context", window));
    }
    let schema = schema()?;
    let prompt = capt_hook_llm::render(&blocks, TASK);
    let q = Question {
        prompt: &prompt,
        task: TASK,
        schema: &schema,
        size: o.size,
        specialty: &o.specialty,
        agent: false,
        backend: o.backend,
        timeout: o.timeout,
        stub_base: None,
        escalate: None,
    };
    let verdict = match ask(evt, &q, name) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(pid = target.pid, error = %e, "stop_runaway: no verdict, the process keeps running");
            return Ok(None);
        }
    };
    if verdict.get("disposable") != Some(&Value::Bool(true)) {
        return Ok(None);
    }
    let why = verdict
        .get("reasoning")
        .and_then(Value::as_str)
        .unwrap_or("");
    signal(evt, &target, false, lookup, o, why)
}

fn stage_escalate(
    evt: &Event,
    o: &StopOptions,
    lookup: &dyn Fn(u32) -> Option<Live>,
) -> HandlerResult {
    let Some(target) = Target::of(evt) else {
        return Ok(None);
    };
    let sent = evt.store().slot_named::<Signals>(SLOT).load();
    if sent.get(&target.key()).map(String::as_str) != Some("TERM") {
        return Ok(None);
    }
    signal(evt, &target, true, lookup, o, "")
}

/// Checks the process once more, signals it and says so; an inline test stops before the
/// signal.
fn signal(
    evt: &Event,
    target: &Target,
    kill: bool,
    lookup: &dyn Fn(u32) -> Option<Live>,
    o: &StopOptions,
    why: &str,
) -> HandlerResult {
    if let Some(refused) = refusal(target, lookup, &o.exclude) {
        tracing::info!(
            pid = target.pid,
            refused,
            "stop_runaway leaves the process running"
        );
        return Ok(None);
    }
    let stubbed = evt.memo(super::STUB_KEY, super::LlmStub::default).active;
    if !stubbed && let Err(e) = send(target.pid, kill) {
        tracing::warn!(pid = target.pid, error = %e, "stop_runaway could not signal the process");
        return Ok(None);
    }
    let key = target.key();
    let value = if kill { "KILL" } else { "TERM" }.to_owned();
    if let Err(e) = evt.store().slot_named::<Signals>(SLOT).mutate(|s| {
        s.insert(key, value);
    }) {
        tracing::warn!(error = %e, "stop_runaway could not record its signal");
    }
    let program = target.program();
    let text = if kill {
        format!(
            "`{program}` (pid {}) ignored SIGTERM and kept running; captain-hook sent it SIGKILL.",
            target.pid
        )
    } else {
        format!(
            "captain-hook stopped `{program}` (pid {}) with SIGTERM: it kept a core busy or held gigabytes of memory for minutes, and a judge rated it disposable ({}). Start it again if it was needed.",
            target.pid,
            why.trim().trim_end_matches('.')
        )
    };
    Ok(Some(HookResult::warn(text)))
}

/// A `stop_runaway` hook reading live processes through `lookup` (tests pass their own).
#[track_caller]
pub fn stop_runaway_with(o: StopOptions, lookup: LookupFn) -> Result<HookDef, DefError> {
    if o.message.trim().is_empty() {
        return Err(DefError::new(
            "message",
            "a stop_runaway needs the warn stage's message",
        ));
    }
    schema()?;
    let identity = o.message.clone();
    let specialty = o.specialty.clone();
    let handler: HandlerFn = Arc::new(move |evt: &Event| -> HandlerResult {
        if evt.kind() != EventKind::ResourcePressure {
            return Ok(None);
        }
        let name = capt_hook_engine::dispatch::current_hook_name()
            .unwrap_or_else(|| "stop_runaway".to_owned());
        match evt.payload().get("stage").and_then(Value::as_str) {
            // A payload without a stage is an earlier host's, which only warned.
            None | Some("warn") => Ok(Some(HookResult::warn(o.message.clone()))),
            Some("judge") => stage_judge(evt, &o, lookup.as_ref(), &name),
            Some("escalate") => stage_escalate(evt, &o, lookup.as_ref()),
            _ => Ok(None),
        }
    });
    Ok(custom(CustomKind {
        kind: "stop_runaway",
        default_events: EventSet::of(&[EventKind::ResourcePressure]),
        guards: Vec::new(),
        skip_guards: Vec::new(),
        handler,
        identity,
        skip_planning_agents: false,
        default_max_fires: None,
        // It may ask a judge and signal a process: the pool, with the deadline.
        inline: false,
        manages_repetition: false,
    })
    .with_specialty(specialty))
}

/// A `stop_runaway` hook reading the system's processes.
#[track_caller]
pub fn stop_runaway(o: StopOptions) -> Result<HookDef, DefError> {
    stop_runaway_with(o, system_lookup())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::{Map, json};

    use super::*;
    use capt_hook_core::EventContext;

    fn live(ppid: u32, start_unix: i64, argv: &[&str]) -> Live {
        Live {
            ppid,
            start_unix,
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// claude(10) -> sh(11) -> the target (12), from a table.
    fn table(target_argv: &[&str], shell_argv: &[&str]) -> impl Fn(u32) -> Option<Live> {
        let mut t = HashMap::new();
        t.insert(10, live(1, 100, &["claude"]));
        t.insert(11, live(10, 200, shell_argv));
        t.insert(12, live(11, 300, target_argv));
        move |pid| t.get(&pid).cloned()
    }

    fn target(pid: u32, start_unix: i64) -> Target {
        Target {
            pid,
            start_unix,
            agent_pid: 10,
            agent_start_unix: Some(100),
            argv: vec!["yes".into()],
        }
    }

    #[test]
    fn only_the_reported_process_below_the_agent_passes_the_checks() {
        let t = table(&["yes"], &["sh", "-c", "yes"]);
        assert_eq!(refusal(&target(12, 300), &t, &[]), None);
        assert!(
            refusal(&target(12, 250), &t, &[])
                .unwrap()
                .contains("another process")
        );
        assert!(refusal(&target(13, 300), &t, &[]).unwrap().contains("gone"));
        let mut other_agent = target(12, 300);
        other_agent.agent_pid = 99;
        assert!(refusal(&other_agent, &t, &[]).unwrap().contains("descends"));
        let mut restarted_agent = target(12, 300);
        restarted_agent.agent_start_unix = Some(150);
        assert!(refusal(&restarted_agent, &t, &[]).is_some());
        assert!(
            refusal(&target(10, 100), &t, &[])
                .unwrap()
                .contains("agent")
        );
    }

    #[test]
    fn agents_terminals_deploys_and_excluded_lines_are_never_stopped() {
        let nested = table(&["/usr/local/bin/claude", "-p", "review"], &["sh"]);
        assert!(
            refusal(&target(12, 300), &nested, &[])
                .unwrap()
                .contains("nested agent")
        );
        let under_tmux = table(&["yes"], &["tmux", "new", "-d"]);
        assert!(
            refusal(&target(12, 300), &under_tmux, &[])
                .unwrap()
                .contains("multiplexer")
        );
        let deploy = table(
            &["node", "build.js"],
            &["sh", "-c", "./deploy.sh production"],
        );
        assert!(
            refusal(&target(12, 300), &deploy, &[])
                .unwrap()
                .contains("half-done")
        );
        let mine = Pattern::new(r"\bfuzz\b", capt_hook_core::Mode::Plain).unwrap();
        let fuzz = table(&["cargo", "fuzz", "run"], &["sh"]);
        assert!(
            refusal(&target(12, 300), &fuzz, &[mine])
                .unwrap()
                .contains("excluded")
        );
    }

    fn pressure(dir: &std::path::Path, stage: &str, pid: u32, start: i64) -> Event {
        let payload = json!({
            "session_id": "s1", "hook_event_name": "ResourcePressure", "stage": stage,
            "claude_pid": 10, "claude_start_unix": 100,
            "process": {"pid": pid, "start_unix": start, "argv": ["yes"], "cpu_fraction": 0.99},
        });
        let ctx = EventContext {
            state_root: Some(dir.to_path_buf()),
            ..EventContext::default()
        };
        let evt = Event::new(EventKind::ResourcePressure, payload, ctx).unwrap();
        // The inline-test stub: the judge answers from these fields and no signal is sent.
        evt.memo(super::super::STUB_KEY, || super::super::LlmStub {
            active: true,
            values: Map::new(),
        });
        evt
    }

    #[test]
    fn a_disposable_runaway_gets_sigterm_then_sigkill_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(&["yes"], &["sh", "-c", "yes"]);
        let o = StopOptions::new("warned");
        let judged = stage_judge(&pressure(dir.path(), "judge", 12, 300), &o, &t, "h").unwrap();
        let text = judged.expect("stopped").message.unwrap();
        assert!(
            text.contains("SIGTERM") && text.contains("pid 12"),
            "{text}"
        );
        // Judged once: the record says it was signalled.
        assert_eq!(
            stage_judge(&pressure(dir.path(), "judge", 12, 300), &o, &t, "h").unwrap(),
            None
        );
        let killed = stage_escalate(&pressure(dir.path(), "escalate", 12, 300), &o, &t).unwrap();
        assert!(killed.expect("killed").message.unwrap().contains("SIGKILL"));
        // A process this hook never signalled is not escalated.
        assert_eq!(
            stage_escalate(&pressure(dir.path(), "escalate", 12, 299), &o, &t).unwrap(),
            None
        );
    }

    #[test]
    fn a_judge_that_says_no_or_fails_leaves_it_running() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(&["yes"], &["sh"]);
        let o = StopOptions::new("warned");
        for values in [json!({"disposable": false}), json!({"error": "timeout"})] {
            let evt = pressure(dir.path(), "judge", 12, 300);
            // A fresh event whose stub says no (or fails).
            let evt2 = Event::new(
                EventKind::ResourcePressure,
                Value::Object(evt.payload().clone()),
                EventContext {
                    state_root: Some(dir.path().to_path_buf()),
                    ..EventContext::default()
                },
            )
            .unwrap();
            evt2.memo(super::super::STUB_KEY, || super::super::LlmStub {
                active: true,
                values: values.as_object().unwrap().clone(),
            });
            assert_eq!(stage_judge(&evt2, &o, &t, "h").unwrap(), None);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_system_lookup_reads_a_real_child_and_a_signal_stops_it() {
        let mut child = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap();
        let lookup = system_lookup();
        let me = lookup(std::process::id()).expect("this process");
        // Until the child has exec'd, its command line is not `sleep`'s yet.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let it = loop {
            let it = lookup(child.id()).expect("the child");
            if !it.argv.is_empty() || std::time::Instant::now() > deadline {
                break it;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(it.ppid, std::process::id());
        assert_eq!(it.argv, ["sleep", "300"]);
        let t = Target {
            pid: child.id(),
            start_unix: it.start_unix,
            agent_pid: std::process::id(),
            agent_start_unix: Some(me.start_unix),
            argv: it.argv.clone(),
        };
        assert_eq!(refusal(&t, lookup.as_ref(), &[]), None);
        send(child.id(), false).unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success(), "SIGTERM ended it: {status:?}");
    }
}

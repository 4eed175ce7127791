//! ResourcePressure: the host watches the processes each session started, and when one stays
//! over a CPU or memory threshold for a sustained window it sends a `ResourcePressure` event to
//! that session's worker. Hooks subscribed to it can warn; what they say reaches the session on
//! its next tool event (see `captain_hook::notices`).
//!
//! A session is known from its events: the client's parent leads to the agent (the nearest
//! `claude` ancestor, else the parent itself), whose descendants are sampled. Sampling runs on
//! its own thread every interval and costs the event path one short map update per event.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capt_hook_proto::EventRequest;
use serde_json::json;

use crate::env;

/// Sessions not seen for this long are forgotten (their agent may be gone without a trace).
/// The event this module fires (Claude Code never sends it).
pub const EVENT: &str = "ResourcePressure";

const FORGET: Duration = Duration::from_secs(12 * 3600);
/// Most sessions tracked at once; the least recently seen gives way.
const MAX_SESSIONS: usize = 512;
/// Deepest ancestry walked from a client to its agent.
const MAX_DEPTH: usize = 64;

/// Thresholds and timing, from the environment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Time between samples.
    pub interval: Duration,
    /// CPU use, as a fraction of one core, at or over which a process is pressing.
    pub cpu: f64,
    /// Resident memory in KiB at or over which a process is pressing.
    pub rss_kib: u64,
    /// How long a process must stay over a threshold before the event fires.
    pub sustain: Duration,
}

impl Settings {
    /// The settings the environment gives; `None` when sampling is off
    /// (`CAPT_HOOKD_PRESSURE_SAMPLE_MS=0`).
    pub fn from_env() -> Option<Settings> {
        let num = |name: &str, default: f64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .unwrap_or(default)
        };
        let interval_ms = num(env::CAPT_HOOKD_PRESSURE_SAMPLE_MS, 2000.0);
        if interval_ms == 0.0 {
            return None;
        }
        Some(Settings {
            interval: Duration::from_secs_f64(interval_ms.max(50.0) / 1000.0),
            cpu: num(env::CAPT_HOOKD_PRESSURE_CPU, 90.0) / 100.0,
            rss_kib: (num(env::CAPT_HOOKD_PRESSURE_RSS_MB, 4096.0) * 1024.0) as u64,
            sustain: Duration::from_secs_f64(num(env::CAPT_HOOKD_PRESSURE_SECS, 120.0)),
        })
    }
}

/// One process as sampled.
#[derive(Debug, Clone, PartialEq)]
pub struct Proc {
    /// Its pid.
    pub pid: u32,
    /// Its parent.
    pub ppid: u32,
    /// Its process group.
    pub pgid: u32,
    /// Identifies the process across pid reuse (start time in the sampler's own unit).
    pub start_key: u64,
    /// When it started, Unix seconds, when known.
    pub started_unix: Option<f64>,
    /// CPU time used so far, in seconds.
    pub cpu_secs: f64,
    /// Resident memory in KiB.
    pub rss_kib: u64,
    /// The command name.
    pub comm: String,
    /// The command line.
    pub argv: Vec<String>,
}

/// What the host remembers of a session from its latest event.
#[derive(Debug, Clone)]
struct Session {
    client_ppid: u32,
    root: String,
    cwd: String,
    env: BTreeMap<String, String>,
    seen: Instant,
}

/// The watcher: the sessions seen, and the thread that samples their processes.
pub struct Monitor {
    sessions: Mutex<HashMap<String, Session>>,
}

impl Monitor {
    /// Starts sampling; events to send go to `fire`.
    pub fn start(
        settings: Settings,
        fire: tokio::sync::mpsc::UnboundedSender<EventRequest>,
    ) -> Arc<Monitor> {
        let monitor = Arc::new(Monitor {
            sessions: Mutex::new(HashMap::new()),
        });
        let m = Arc::clone(&monitor);
        let spawned = std::thread::Builder::new()
            .name("capt-hookd-pressure".into())
            .spawn(move || Sampler::new(settings, fire).run(&m));
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the resource sampler; ResourcePressure is off");
        }
        monitor
    }

    /// Notes the session an event came from. On the event path: a look at the payload's first
    /// key (where Claude Code puts `session_id`) and a map update; the session's root and
    /// environment are copied only when they change.
    pub fn observe(&self, req: &EventRequest) {
        if req.event == EVENT {
            return;
        }
        // An orphaned client's parent is init: its "descendants" would be every process.
        if req.client_ppid <= 1 {
            return;
        }
        let Some(id) = session_id(&req.payload_raw) else {
            return;
        };
        let mut sessions = self.sessions.lock();
        match sessions.get_mut(&id) {
            Some(s)
                if s.client_ppid == req.client_ppid && s.root == req.root && s.env == req.env =>
            {
                s.seen = Instant::now();
                if s.cwd != req.cwd {
                    s.cwd.clone_from(&req.cwd);
                }
            }
            _ => {
                if sessions.len() >= MAX_SESSIONS
                    && let Some(oldest) = sessions
                        .iter()
                        .min_by_key(|(_, s)| s.seen)
                        .map(|(k, _)| k.clone())
                {
                    sessions.remove(&oldest);
                }
                sessions.insert(
                    id,
                    Session {
                        client_ppid: req.client_ppid,
                        root: req.root.clone(),
                        cwd: req.cwd.clone(),
                        env: req.env.clone(),
                        seen: Instant::now(),
                    },
                );
            }
        }
    }

    fn snapshot(&self) -> Vec<(String, Session)> {
        let mut sessions = self.sessions.lock();
        sessions.retain(|_, s| s.seen.elapsed() < FORGET);
        sessions
            .iter()
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect()
    }

    fn forget(&self, id: &str) {
        self.sessions.lock().remove(id);
    }
}

/// The payload's `session_id`, read without parsing past it: a visitor that stops at the key.
/// Claude Code writes it first, so this reads a few dozen bytes; anywhere else it still works.
pub fn session_id(payload: &str) -> Option<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Find<'a>(&'a mut Option<String>);
    impl<'de> Visitor<'de> for Find<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "session_id" {
                    *self.0 = map.next_value::<Option<String>>()?;
                    // Stop here: an error is the way out of a serde visit.
                    return Err(serde::de::Error::custom("found"));
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut found = None;
    let mut de = serde_json::Deserializer::from_str(payload.trim_start_matches('\u{feff}'));
    let _ = de.deserialize_map(Find(&mut found));
    found.filter(|s| !s.is_empty())
}

/// A process's pressure history.
#[derive(Debug)]
struct Tracked {
    start_key: u64,
    cpu_secs: f64,
    at: Instant,
    cpu_fraction: f64,
    over_since: Option<Instant>,
    /// The last stage sent for it, and when.
    stage: Option<(Stage, Instant)>,
}

/// The stages of one runaway process, each sent once: `warn` after it pressed for the window,
/// `judge` when it kept pressing for another window after the warning (a hook may then judge it
/// and stop it), `escalate` when it is still alive a quarter window (at least 5 s) after that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The first notice.
    Warn,
    /// Judge it: stop it if it is disposable.
    Judge,
    /// It outlived the judge stage.
    Escalate,
}

impl Stage {
    /// The payload's `stage`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Warn => "warn",
            Stage::Judge => "judge",
            Stage::Escalate => "escalate",
        }
    }
}

impl Settings {
    /// How long after the judge stage a process still alive is escalated.
    fn escalate_after(&self) -> Duration {
        (self.sustain / 4).max(Duration::from_secs(5))
    }
}

impl Tracked {
    /// A process seen for the first time: its CPU is measured from this sample on.
    fn first(p: &Proc, now: Instant) -> Tracked {
        Tracked {
            start_key: p.start_key,
            cpu_secs: p.cpu_secs,
            at: now,
            cpu_fraction: 0.0,
            over_since: None,
            stage: None,
        }
    }
}

struct Sampler {
    settings: Settings,
    fire: tokio::sync::mpsc::UnboundedSender<EventRequest>,
    tracked: HashMap<u32, Tracked>,
    host_pid: u32,
}

impl Sampler {
    fn new(settings: Settings, fire: tokio::sync::mpsc::UnboundedSender<EventRequest>) -> Sampler {
        Sampler {
            settings,
            fire,
            tracked: HashMap::new(),
            host_pid: std::process::id(),
        }
    }

    fn run(mut self, monitor: &Monitor) {
        loop {
            std::thread::sleep(self.settings.interval);
            if self.fire.is_closed() {
                return;
            }
            let sessions = monitor.snapshot();
            if sessions.is_empty() {
                self.tracked.clear();
                continue;
            }
            let Some(procs) = scan() else {
                tracing::warn!("cannot list processes; ResourcePressure sampling stops");
                return;
            };
            for gone in self.tick(&sessions, &procs, Instant::now()) {
                monitor.forget(&gone);
            }
        }
    }

    /// One sample: updates every session's descendants and fires for those pressing long
    /// enough. Returns the sessions whose agent is gone.
    fn tick(
        &mut self,
        sessions: &[(String, Session)],
        procs: &[Proc],
        now: Instant,
    ) -> Vec<String> {
        let by_pid: HashMap<u32, &Proc> = procs.iter().map(|p| (p.pid, p)).collect();
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for p in procs {
            children.entry(p.ppid).or_default().push(p.pid);
        }
        // One agent may have had several sessions (/clear): the latest one hears about it.
        let mut agents: HashMap<u32, &(String, Session)> = HashMap::new();
        let mut gone = Vec::new();
        for entry in sessions {
            match agent_of(entry.1.client_ppid, &by_pid) {
                Some(agent) => {
                    let slot = agents.entry(agent).or_insert(entry);
                    if entry.1.seen > slot.1.seen {
                        *slot = entry;
                    }
                }
                None => gone.push(entry.0.clone()),
            }
        }
        let mut live = HashSet::new();
        for (&agent, (id, session)) in &agents {
            let mut stack = children.get(&agent).cloned().unwrap_or_default();
            while let Some(pid) = stack.pop() {
                // The host and its workers are not the session's.
                if pid == self.host_pid {
                    continue;
                }
                let Some(p) = by_pid.get(&pid) else { continue };
                stack.extend(children.get(&pid).into_iter().flatten());
                live.insert(pid);
                if let Some((stage, req)) = self
                    .update(p, now)
                    .map(|stage| (stage, self.event(id, session, agent, p, &by_pid, stage)))
                {
                    tracing::info!(
                        session = %id,
                        pid,
                        stage = stage.name(),
                        command = %argv_of(p).join(" "),
                        "a process stayed over its resource threshold; sending ResourcePressure"
                    );
                    let _ = self.fire.send(req);
                }
            }
        }
        self.tracked.retain(|pid, _| live.contains(pid));
        gone
    }

    /// Records a sample of `p`; the stage to send when it has reached one (see [`Stage`]).
    fn update(&mut self, p: &Proc, now: Instant) -> Option<Stage> {
        let s = self.settings;
        let t = self
            .tracked
            .entry(p.pid)
            .or_insert_with(|| Tracked::first(p, now));
        if t.start_key != p.start_key {
            // The pid was reused: a new process.
            *t = Tracked::first(p, now);
            return None;
        }
        let wall = now.saturating_duration_since(t.at).as_secs_f64();
        if wall > 0.0 {
            t.cpu_fraction = ((p.cpu_secs - t.cpu_secs) / wall).max(0.0);
            t.cpu_secs = p.cpu_secs;
            t.at = now;
        } else {
            // The first sight: no rate yet, unless memory alone presses.
            t.cpu_fraction = 0.0;
        }
        let over = (wall > 0.0 && t.cpu_fraction >= s.cpu) || p.rss_kib >= s.rss_kib;
        // After the judge stage only being alive matters: a stopped process is gone.
        if let Some((Stage::Judge, at)) = t.stage {
            if now.saturating_duration_since(at) < s.escalate_after() {
                return None;
            }
            t.stage = Some((Stage::Escalate, now));
            return Some(Stage::Escalate);
        }
        if !over {
            t.over_since = None;
            return None;
        }
        // A rate covers the interval before this sample: the process was busy from then.
        let since = *t.over_since.get_or_insert(
            now.checked_sub(Duration::from_secs_f64(wall))
                .unwrap_or(now),
        );
        match t.stage {
            None if now.saturating_duration_since(since) >= s.sustain => {
                t.stage = Some((Stage::Warn, now));
                Some(Stage::Warn)
            }
            // Pressing for another whole window after the warning (a break restarts it).
            Some((Stage::Warn, at))
                if now.saturating_duration_since(since.max(at)) >= s.sustain =>
            {
                t.stage = Some((Stage::Judge, now));
                Some(Stage::Judge)
            }
            _ => None,
        }
    }

    /// The ResourcePressure event for a process.
    fn event(
        &self,
        id: &str,
        session: &Session,
        agent: u32,
        p: &Proc,
        by_pid: &HashMap<u32, &Proc>,
        stage: Stage,
    ) -> EventRequest {
        let t = &self.tracked[&p.pid];
        let mut ancestry = Vec::new();
        let mut at = p.ppid;
        for _ in 0..MAX_DEPTH {
            let Some(a) = by_pid.get(&at) else { break };
            ancestry.push(json!({"pid": a.pid, "comm": a.comm}));
            if a.pid == agent {
                break;
            }
            at = a.ppid;
        }
        let now_unix = capt_hook_proto::clock::now_unix_ms() as f64 / 1000.0;
        let over_for = t
            .over_since
            .map(|s| s.elapsed().as_secs_f64())
            .unwrap_or(0.0);
        let payload = json!({
            "session_id": id,
            "cwd": session.cwd,
            "hook_event_name": EVENT,
            "stage": stage.name(),
            // When the next stage can come, so a warning can say how long the process has.
            "next_stage_in_s": match stage {
                Stage::Warn => Some(self.settings.sustain.as_secs_f64().round()),
                Stage::Judge => Some(self.settings.escalate_after().as_secs_f64().round()),
                Stage::Escalate => None,
            },
            "claude_pid": agent,
            "claude_start_unix": by_pid.get(&agent).and_then(|a| a.started_unix).map(|s| s as i64),
            "process": {
                "pid": p.pid,
                "ppid": p.ppid,
                "pgid": p.pgid,
                "start_unix": p.started_unix.map(|s| s as i64),
                "comm": p.comm,
                "argv": argv_of(p),
                "cwd": process_cwd(p.pid),
                "runtime_s": p.started_unix.map(|s| (now_unix - s).max(0.0)),
                "cpu_fraction": (t.cpu_fraction * 1000.0).round() / 1000.0,
                "rss_kib": p.rss_kib,
                "pressed_s": (over_for * 10.0).round() / 10.0,
                "ancestry": ancestry,
            },
            "metrics": {
                "cpu": t.cpu_fraction >= self.settings.cpu,
                "rss": p.rss_kib >= self.settings.rss_kib,
                "disk": false,
            },
        });
        EventRequest {
            schema: 1,
            event: EVENT.into(),
            root: session.root.clone(),
            cwd: session.cwd.clone(),
            env: session.env.clone(),
            payload_raw: payload.to_string(),
            client_pid: self.host_pid,
            client_ppid: agent,
            deadline_unix_ms: 0,
            notice_epoch: None,
            notices: Vec::new(),
            classic: false,
            agent: None,
            request_id: None,
        }
    }
}

/// The agent a client's parent belongs to: the nearest `claude` ancestor, else the parent
/// itself; `None` when the parent is gone.
fn agent_of(client_ppid: u32, by_pid: &HashMap<u32, &Proc>) -> Option<u32> {
    by_pid.get(&client_ppid)?;
    let mut at = client_ppid;
    for _ in 0..MAX_DEPTH {
        let Some(p) = by_pid.get(&at) else { break };
        let argv = argv_of(p);
        let exe = argv.first().map(|a| a.rsplit('/').next().unwrap_or(a));
        if p.comm == "claude" || exe == Some("claude") {
            return Some(p.pid);
        }
        if p.ppid <= 1 {
            break;
        }
        at = p.ppid;
    }
    Some(client_ppid)
}

/// A process's command line: as sampled, else read now (the `/proc` scan leaves it out, since
/// only a session's ancestors and pressing processes need it).
fn argv_of(p: &Proc) -> std::borrow::Cow<'_, [String]> {
    if !p.argv.is_empty() {
        return std::borrow::Cow::Borrowed(&p.argv);
    }
    #[cfg(target_os = "linux")]
    if let Some(argv) = capt_hook_proto::procfs::cmdline(p.pid) {
        return std::borrow::Cow::Owned(argv);
    }
    std::borrow::Cow::Borrowed(&[])
}

#[cfg(target_os = "linux")]
fn process_cwd(pid: u32) -> Option<String> {
    capt_hook_proto::procfs::cwd(pid).map(|p| p.display().to_string())
}

#[cfg(not(target_os = "linux"))]
fn process_cwd(_pid: u32) -> Option<String> {
    None
}

/// Every process, from `/proc`.
#[cfg(target_os = "linux")]
pub fn scan() -> Option<Vec<Proc>> {
    use capt_hook_proto::procfs;
    let ticks = rustix::param::clock_ticks_per_second() as f64;
    let page_kib = rustix::param::page_size() as u64 / 1024;
    let boot = procfs::boot_time_unix().map(|b| b as f64);
    let mut out = Vec::new();
    for pid in procfs::pids()? {
        // A process may exit between the listing and the read: skip it.
        let Some(st) = procfs::stat(pid) else {
            continue;
        };
        if st.zombie {
            continue;
        }
        out.push(Proc {
            pid,
            ppid: st.ppid,
            pgid: st.pgid,
            start_key: st.start_ticks,
            started_unix: boot.map(|b| b + st.start_ticks as f64 / ticks),
            cpu_secs: st.cpu_ticks as f64 / ticks,
            rss_kib: st.rss_pages * page_kib,
            // Read when needed (see `argv_of`): most processes are never looked at twice.
            argv: Vec::new(),
            comm: st.comm,
        });
    }
    Some(out)
}

/// Every process, from `ps` (macOS and other systems without `/proc`; `ps` reads libproc).
#[cfg(not(target_os = "linux"))]
pub fn scan() -> Option<Vec<Proc>> {
    let out = std::process::Command::new("ps")
        .args(["-axo", PS_COLUMNS])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| {
        parse_ps(
            &String::from_utf8_lossy(&out.stdout),
            capt_hook_proto::clock::now_unix_ms(),
        )
    })
}

/// The `ps -o` columns [`parse_ps`] reads.
pub const PS_COLUMNS: &str = "pid=,ppid=,pgid=,rss=,time=,etime=,args=";

/// Parses `ps -axo` [`PS_COLUMNS`] output taken at `now_ms`.
pub fn parse_ps(text: &str, now_ms: u64) -> Vec<Proc> {
    let now = now_ms as f64 / 1000.0;
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let pid = f.next()?.parse().ok()?;
            let ppid = f.next()?.parse().ok()?;
            let pgid = f.next()?.parse().ok()?;
            let rss_kib = f.next()?.parse().ok()?;
            let cpu_secs = clock_secs(f.next()?)?;
            let age = clock_secs(f.next()?)?;
            let argv: Vec<String> = f.map(str::to_owned).collect();
            let started = now - age;
            Some(Proc {
                pid,
                ppid,
                pgid,
                // Whole seconds of start time: enough to tell a reused pid apart.
                start_key: started.max(0.0) as u64,
                started_unix: Some(started),
                cpu_secs,
                rss_kib,
                comm: argv
                    .first()
                    .map(|a| a.rsplit('/').next().unwrap_or(a).to_owned())
                    .unwrap_or_default(),
                argv,
            })
        })
        .collect()
}

/// `[dd-][hh:]mm:ss[.ff]` as seconds (`ps`'s `time` and `etime`).
fn clock_secs(text: &str) -> Option<f64> {
    let (days, rest) = match text.split_once('-') {
        Some((d, r)) => (d.parse::<f64>().ok()?, r),
        None => (0.0, text),
    };
    let mut secs = 0.0;
    for part in rest.split(':') {
        secs = secs * 60.0 + part.parse::<f64>().ok()?;
    }
    Some(days * 86_400.0 + secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: u32, ppid: u32, cpu_secs: f64, rss_kib: u64, argv: &[&str]) -> Proc {
        Proc {
            pid,
            ppid,
            pgid: pid,
            start_key: 7,
            started_unix: Some(1000.0),
            cpu_secs,
            rss_kib,
            comm: argv[0].rsplit('/').next().unwrap().to_owned(),
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn session(client_ppid: u32) -> (String, Session) {
        (
            "s1".into(),
            Session {
                client_ppid,
                root: "/p".into(),
                cwd: "/p".into(),
                env: BTreeMap::new(),
                seen: Instant::now(),
            },
        )
    }

    fn sampler() -> (Sampler, tokio::sync::mpsc::UnboundedReceiver<EventRequest>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let settings = Settings {
            interval: Duration::from_secs(1),
            cpu: 0.9,
            rss_kib: 1_000_000,
            sustain: Duration::from_secs(5),
        };
        (Sampler::new(settings, tx), rx)
    }

    #[test]
    fn session_id_is_read_from_the_first_key_or_later() {
        assert_eq!(
            session_id(r#"{"session_id":"abc","x":1}"#).as_deref(),
            Some("abc")
        );
        assert_eq!(
            session_id(r#"{"tool_input":{"session_id":"no"},"session_id":"yes"}"#).as_deref(),
            Some("yes")
        );
        assert_eq!(session_id(r#"{"cwd":"/p"}"#), None);
        assert_eq!(session_id("not json"), None);
        assert_eq!(session_id(r#"{"session_id":""}"#), None);
    }

    #[test]
    fn a_sustained_busy_child_fires_once_and_a_burst_does_not() {
        let (mut s, mut rx) = sampler();
        let sessions = [session(10)];
        let t0 = Instant::now();
        let at = |secs: u64| t0 + Duration::from_secs(secs);
        // claude(10) -> sh(11) -> busy(12); burst(13) is busy for two seconds only.
        let tree = |busy: f64, burst: f64| {
            vec![
                proc(10, 1, 0.0, 100, &["/usr/bin/claude"]),
                proc(11, 10, 0.0, 100, &["sh"]),
                proc(12, 11, busy, 100, &["yes"]),
                proc(13, 10, burst, 100, &["make"]),
                proc(14, 1, 50.0, 100, &["elsewhere"]),
            ]
        };
        for (i, burst) in [0.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
            .into_iter()
            .enumerate()
        {
            s.tick(&sessions, &tree(i as f64, burst), at(i as u64));
        }
        let req = rx.try_recv().expect("the busy child fired");
        assert!(rx.try_recv().is_err(), "once, and never for the burst");
        assert_eq!(req.event, "ResourcePressure");
        assert_eq!(req.client_ppid, 10);
        let v: serde_json::Value = serde_json::from_str(&req.payload_raw).unwrap();
        assert_eq!(v["session_id"], "s1");
        assert_eq!(v["process"]["pid"], 12);
        assert_eq!(v["process"]["argv"][0], "yes");
        assert_eq!(v["process"]["cpu_fraction"], 1.0);
        assert_eq!(v["metrics"]["cpu"], true);
        assert_eq!(v["process"]["ancestry"][0]["pid"], 11);
        assert_eq!(v["process"]["ancestry"][1]["comm"], "claude");
        assert_eq!(v["stage"], "warn");
        assert_eq!(v["next_stage_in_s"], 5.0);
        // Still busy a window after the warning: the judge stage, once.
        s.tick(&sessions, &tree(20.0, 2.0), at(20));
        let v: serde_json::Value =
            serde_json::from_str(&rx.try_recv().expect("judge stage").payload_raw).unwrap();
        assert_eq!(
            (v["stage"].as_str(), v["process"]["pid"].as_u64()),
            (Some("judge"), Some(12))
        );
        s.tick(&sessions, &tree(21.0, 2.0), at(21));
        assert!(rx.try_recv().is_err(), "no second judge stage");
        // Alive (busy or not) once the escalation delay (5 s at least) passed: escalate, once.
        s.tick(&sessions, &tree(21.0, 2.0), at(25));
        let v: serde_json::Value =
            serde_json::from_str(&rx.try_recv().expect("escalate stage").payload_raw).unwrap();
        assert_eq!(v["stage"], "escalate");
        s.tick(&sessions, &tree(21.0, 2.0), at(40));
        assert!(rx.try_recv().is_err(), "nothing after the escalation");
    }

    #[test]
    fn a_break_after_the_warning_restarts_the_judge_window() {
        let (mut s, mut rx) = sampler();
        let sessions = [session(10)];
        let t0 = Instant::now();
        let tree = |busy: f64| {
            vec![
                proc(10, 1, 0.0, 100, &["/usr/bin/claude"]),
                proc(12, 10, busy, 100, &["yes"]),
            ]
        };
        let mut cpu = 0.0;
        for i in 0..=6u64 {
            s.tick(&sessions, &tree(cpu), t0 + Duration::from_secs(i));
            cpu += 1.0;
        }
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&rx.try_recv().expect("warn").payload_raw)
                .unwrap()["stage"],
            "warn"
        );
        // Idle for a sample (no CPU since the last): the window starts again when it presses.
        cpu -= 1.0;
        s.tick(&sessions, &tree(cpu), t0 + Duration::from_secs(7));
        for i in 8..=11u64 {
            cpu += 1.0;
            s.tick(&sessions, &tree(cpu), t0 + Duration::from_secs(i));
        }
        assert!(rx.try_recv().is_err(), "not a whole window since the break");
        cpu += 1.0;
        s.tick(&sessions, &tree(cpu), t0 + Duration::from_secs(12));
        let v: serde_json::Value =
            serde_json::from_str(&rx.try_recv().expect("judge").payload_raw).unwrap();
        assert_eq!(v["stage"], "judge");
    }

    #[test]
    fn memory_alone_presses_and_a_dead_agent_ends_its_session() {
        let (mut s, mut rx) = sampler();
        let sessions = [session(11)];
        let t0 = Instant::now();
        let tree = vec![
            proc(11, 1, 0.0, 100, &["bash"]),
            proc(12, 11, 0.0, 2_000_000, &["java"]),
        ];
        for i in 0..7 {
            s.tick(&sessions, &tree, t0 + Duration::from_secs(i));
        }
        let v: serde_json::Value =
            serde_json::from_str(&rx.try_recv().expect("fired").payload_raw).unwrap();
        assert_eq!(v["metrics"]["rss"], true);
        assert_eq!(v["metrics"]["cpu"], false);
        assert_eq!(
            v["claude_pid"], 11,
            "no claude ancestor: the client's parent"
        );
        let gone = s.tick(&sessions, &[], t0 + Duration::from_secs(8));
        assert_eq!(gone, ["s1"]);
    }

    #[test]
    fn ps_output_parses_on_either_system() {
        let text = "  4242     1  4242 10240 01:02:03 1-00:00:10 /usr/bin/yes y\n\
                    4243  4242  4242   512  0:00.50      00:05 claude --resume\nbad line\n";
        let procs = parse_ps(text, 100_000_000);
        assert_eq!(procs.len(), 2);
        assert_eq!(procs[0].cpu_secs, 3723.0);
        assert_eq!(procs[0].started_unix, Some(100_000.0 - 86_410.0));
        assert_eq!(procs[0].comm, "yes");
        assert_eq!(procs[1].cpu_secs, 0.5);
        assert_eq!(procs[1].argv, ["claude", "--resume"]);
    }

    /// The `ps` sampler (macOS's) read against this system's real `ps`: this process is in it.
    #[test]
    fn ps_lists_this_process() {
        let Ok(out) = std::process::Command::new("ps")
            .args(["-axo", PS_COLUMNS])
            .output()
        else {
            // No `ps` here: the parser test above still covers the format.
            return;
        };
        let procs = parse_ps(
            &String::from_utf8_lossy(&out.stdout),
            capt_hook_proto::clock::now_unix_ms(),
        );
        assert!(
            procs.iter().any(|p| p.pid == std::process::id()),
            "{procs:?}"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn proc_scan_sees_this_process_and_its_memory() {
        let procs = scan().unwrap();
        let me = procs.iter().find(|p| p.pid == std::process::id()).unwrap();
        assert!(me.rss_kib > 0 && me.started_unix.is_some() && !argv_of(me).is_empty());
    }
}

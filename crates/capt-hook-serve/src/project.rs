//! One project's hooks, loaded once and used for many events: the unit a worker process keeps
//! warm and `capt-hook run` builds for a single event.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use capt_hook_core::envelope::{self, Decision, envelope};
use capt_hook_core::{Action, EventContext, EventKind, HookResult, Output};
use capt_hook_journal::Entry;
use serde_json::Value;

use capt_hook_core::Event;
use capt_hook_engine::dispatch::{DispatchOptions, Dispatcher, Verdict, is_guarded};
use capt_hook_engine::registry::Registry;
use capt_hook_packs::Packs;
use capt_hook_toml::loader::{LoadError, hook_files, load_dir};

/// What evaluating one event printed and how the process should exit.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Evaluation {
    /// The envelope line for stdout, if any (no trailing newline).
    pub stdout: Option<String>,
    /// Lines for stderr (malformed input, blocking feedback for exit-2 events).
    pub stderr: Vec<String>,
    /// The exit code: 0, or 2 for a block on an event that only honours exit 2 (TaskCompleted,
    /// TeammateIdle, WorktreeCreate).
    pub exit_code: u8,
    /// Something kept the hooks from giving their whole verdict (an unreadable payload, a hook
    /// file that did not load, a hook that failed); on a guarded event the answer then asks
    /// the user or denies, and says why.
    pub unchecked: bool,
    /// The decision `stdout` gives the call, typed (the client's fallbacks read it).
    pub decision: Decision,
    /// The same answer as our hooks module (a mod inside Claude Code) returns it (boxed: it is
    /// large beside the rest, and an evaluation travels in `Result`s).
    pub classic: Box<capt_hook_proto::ClassicAnswer>,
    /// The same answer as a typed verdict, for the adapters that answer another agent in its
    /// own shape (boxed, as `classic`).
    pub typed: Box<envelope::typed::Verdict>,
}

/// Where an event came from, when another process sent it.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The sender's pid.
    pub pid: Option<u32>,
    /// The sender's request-scoped environment.
    pub env: Option<Arc<std::collections::BTreeMap<String, String>>>,
    /// The coding agent whose adapter read the event (`codex`, …); `None` for Claude Code.
    pub agent: Option<String>,
    /// The host's notice epoch ([`capt_hook_proto::EventRequest::notice_epoch`]).
    pub notice_epoch: Option<u64>,
    /// The host's own notices for the user ([`capt_hook_proto::EventRequest::notices`]), told
    /// after the hooks' and the project's.
    pub notices: Vec<String>,
}

/// A project's loaded hooks.
#[derive(Debug)]
pub struct Project {
    root: PathBuf,
    hooks_dir: PathBuf,
    dispatcher: Dispatcher,
    errors: Vec<LoadError>,
    /// Told to each session once, on its first event that can carry it (why the project's
    /// Rust hooks are not live, from the host).
    notice: Option<String>,
    /// Problems that turn nothing off but are told to each session once (from packs).
    notices: Vec<String>,
    /// The packs, when the project was loaded with them.
    packs: Option<Packs>,
    /// Files besides the hook files whose change means a reload (pack settings, plugins).
    watched: Vec<PathBuf>,
    fingerprint: Vec<(PathBuf, Option<SystemTime>, u64)>,
}

/// A file's modification time and length; `(None, 0)` when it cannot be read.
fn stamp(path: &Path) -> (Option<SystemTime>, u64) {
    std::fs::metadata(path).map_or((None, 0), |m| (m.modified().ok(), m.len()))
}

/// The default hooks directory of a root.
pub fn default_hooks_dir(root: &Path) -> PathBuf {
    root.join(".claude").join("hooks")
}

fn fingerprint(dir: &Path, watched: &[PathBuf]) -> Vec<(PathBuf, Option<SystemTime>, u64)> {
    let mut out = Vec::new();
    if let Ok(meta) = std::fs::metadata(dir) {
        out.push((dir.to_path_buf(), meta.modified().ok(), meta.len()));
    }
    let files = hook_files(dir).unwrap_or_default();
    for f in files.into_iter().chain(watched.iter().cloned()) {
        let (at, len) = stamp(&f);
        out.push((f, at, len));
    }
    // The root's .gitignore changes opt-outs.
    out
}

impl Project {
    /// Loads the hooks of `hooks_dir` for the project at `root`. Files that fail to load are
    /// reported in [`Project::errors`]; the rest are served.
    pub fn load(root: &Path, hooks_dir: &Path) -> Project {
        Project::load_with(root, hooks_dir, &Registry::new())
    }

    /// [`Project::load`] after the hooks of `base` (a project's Rust hooks): they register
    /// first, the files after them.
    pub fn load_with(root: &Path, hooks_dir: &Path, base: &Registry) -> Project {
        let mut registry = base.clone();
        let mut errors = load_dir(hooks_dir, &mut registry);
        errors.extend(crate::specialties::check_specialties(
            root, hooks_dir, &registry,
        ));
        for e in &errors {
            tracing::error!(error = %e, "hook file did not load");
        }
        Project {
            root: root.to_path_buf(),
            hooks_dir: hooks_dir.to_path_buf(),
            dispatcher: Dispatcher::new(Arc::new(registry), Some(root)),
            errors,
            fingerprint: fingerprint(hooks_dir, &[]),
            notice: None,
            notices: Vec::new(),
            packs: None,
            watched: Vec::new(),
        }
    }

    /// [`Project::load_with`], then every active pack (builtin, language, enabled plugins) after
    /// the project's own hooks: what the host's workers run. Claude Code's files are read from
    /// `$CLAUDE_CONFIG_DIR` (else `~/.claude`).
    pub fn load_with_packs(root: &Path, hooks_dir: &Path, base: &Registry) -> Project {
        let claude_dir = capt_hook_state::claude_config_dir();
        // The packs load on a second thread while this one reads the project's files: a
        // worker's start is on the path of the first event, and the two share nothing but
        // the order their hooks are appended in, which the join below keeps.
        let ((project_hooks, mut errors), (packs, pack_hooks, policy, mut registry)) =
            std::thread::scope(|s| {
                let packs = s.spawn(|| {
                    // Policy first: the organisation's hooks lead the fold, whatever the project
                    // registers, and nothing in the project turns them off.
                    let mut policy_hooks = Registry::new();
                    let policy = capt_hook_packs::policy::load(
                        &capt_hook_packs::policy::Settings::from_env(),
                        &mut policy_hooks,
                    );
                    let mut hooks = Registry::new();
                    let packs = capt_hook_packs::load(root, hooks_dir, &claude_dir, &mut hooks);
                    (packs, hooks, policy, policy_hooks)
                });
                let mut registry = base.clone();
                let errors = load_dir(hooks_dir, &mut registry);
                let packs = packs
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                ((registry, errors), packs)
            });
        registry.extend(project_hooks);
        registry.extend(pack_hooks);
        // A refused policy pack is a load error like a broken project file: the calls its
        // hooks might have denied ask, naming the file at fault.
        errors.extend(policy.errors.iter().cloned());
        errors.extend(packs.errors.iter().cloned());
        errors.extend(crate::specialties::check_specialties_in(
            root,
            hooks_dir,
            &packs.config,
            &registry,
        ));
        for e in &errors {
            tracing::error!(error = %e, "hook file did not load");
        }
        for n in &packs.notices {
            tracing::warn!(notice = %n, "pack notice");
        }
        let mut watched = packs.watched.clone();
        watched.extend(policy.watched.iter().cloned());
        Project {
            root: root.to_path_buf(),
            hooks_dir: hooks_dir.to_path_buf(),
            dispatcher: Dispatcher::new(Arc::new(registry), Some(root)),
            errors,
            fingerprint: fingerprint(hooks_dir, &watched),
            notice: None,
            notices: packs.notices.clone(),
            watched,
            packs: Some(packs),
        }
    }

    /// [`Project::load`] for a hooks directory the user named: one that does not exist is a
    /// load error, not a project without hooks.
    pub fn load_named(root: &Path, hooks_dir: &Path) -> Project {
        let mut project = Project::load(root, hooks_dir);
        if !hooks_dir.is_dir() {
            let e = LoadError {
                file: hooks_dir.to_path_buf(),
                line: 0,
                column: 0,
                field: None,
                span: None,
                message: "the named hooks directory does not exist".into(),
            };
            tracing::error!(error = %e, "hook file did not load");
            project.errors.push(e);
        }
        project
    }

    /// Builds a project around an existing registry (Rust SDK users).
    pub fn from_registry(root: &Path, registry: Registry) -> Project {
        Project {
            root: root.to_path_buf(),
            hooks_dir: default_hooks_dir(root),
            dispatcher: Dispatcher::new(Arc::new(registry), Some(root)),
            errors: Vec::new(),
            fingerprint: Vec::new(),
            notice: None,
            notices: Vec::new(),
            packs: None,
            watched: Vec::new(),
        }
    }

    /// Sets the notice each session is told once (see [`Project::notice`]).
    pub fn with_notice(mut self, notice: Option<String>) -> Project {
        self.notice = notice;
        self
    }

    /// The notice each session is told once, if any.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// True when a hook file was added, removed or changed since loading.
    pub fn is_stale(&self) -> bool {
        let Some(((dir, at, len), files)) = self.fingerprint.split_first() else {
            return false;
        };
        // Files are added, removed and renamed through the directory, which then changes:
        // while it has not, the files recorded are the files there are, and a look at each is
        // enough. Every event asks, so it is not worth listing the directory each time.
        if dir == &self.hooks_dir && stamp(dir) == (*at, *len) {
            return files.iter().any(|(f, at, len)| stamp(f) != (*at, *len));
        }
        fingerprint(&self.hooks_dir, &self.watched) != self.fingerprint
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The load errors.
    pub fn errors(&self) -> &[LoadError] {
        &self.errors
    }

    /// What the packs tell each session once: nothing is off, but worth saying.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The packs, when the project was loaded with them.
    pub fn packs(&self) -> Option<&Packs> {
        self.packs.as_ref()
    }

    /// The dispatcher.
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    /// Evaluates one event given its name and raw stdin bytes, with Claude Code's conventions:
    /// an unknown event name exits 1, blank stdin prints nothing, malformed JSON is reported on
    /// stderr and otherwise ignored (exit 0), and the envelope goes to stdout.
    pub fn evaluate(&self, event: &str, stdin: &[u8], opts: DispatchOptions) -> Evaluation {
        self.evaluate_from(event, stdin, opts, Origin::default())
    }

    /// [`Project::evaluate`] for an event another process sent (the hook client): process-tree
    /// facts such as `--dangerously-skip-permissions` are read from its ancestors, and its
    /// request-scoped environment replaces this process's.
    pub fn evaluate_from(
        &self,
        event: &str,
        stdin: &[u8],
        opts: DispatchOptions,
        origin: Origin,
    ) -> Evaluation {
        self.evaluate_traced(event, stdin, opts, origin).0
    }

    /// [`Project::evaluate_from`], also returning the journal entry for the event (what fired,
    /// the verdict, failures, timing). Building it costs a few clones; the caller hands it to
    /// [`capt_hook_journal::submit`] once the reply is on its way.
    pub fn evaluate_traced(
        &self,
        event: &str,
        stdin: &[u8],
        opts: DispatchOptions,
        origin: Origin,
    ) -> (Evaluation, Entry) {
        let started = Instant::now();
        // A request's own environment when it came from another process, else this one's.
        let spawned = match origin.env.as_ref() {
            Some(env) => env
                .get(capt_hook_proto::env::CAPT_HOOK_SPAWNED)
                .is_some_and(|v| !v.is_empty()),
            None => std::env::var_os(capt_hook_proto::env::CAPT_HOOK_SPAWNED)
                .is_some_and(|v| !v.is_empty()),
        };
        let mut entry = Entry {
            ts_ms: capt_hook_proto::clock::now_unix_ms(),
            event_name: event.to_owned(),
            event: None,
            fired: Vec::new(),
            errors: Vec::new(),
            verdict: None,
            exit: 0,
            elapsed_ms: 0.0,
            spawned,
        };
        let eval = self.evaluate_into(event, stdin, opts, origin, &mut entry);
        if entry.event.is_none() {
            entry.errors.extend(eval.stderr.iter().cloned());
        }
        entry.exit = i32::from(eval.exit_code);
        entry.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        (eval, entry)
    }

    fn evaluate_into(
        &self,
        event: &str,
        stdin: &[u8],
        opts: DispatchOptions,
        origin: Origin,
        entry: &mut Entry,
    ) -> Evaluation {
        let notice_epoch = origin.notice_epoch;
        let origin_notices = origin.notices;
        let context = |_: Option<&str>| EventContext {
            project_root: Some(self.root.clone()),
            skip_permissions: None,
            state_root: Some(capt_hook_state::state_root()),
            origin_pid: origin.pid,
            request_env: origin.env,
            coding_agent: origin.agent,
        };
        let evt = match read_event(event, stdin, context) {
            Ok(Some(e)) => Arc::new(e),
            Ok(None) => return Evaluation::default(),
            Err(rejected) => return rejected,
        };
        entry.event = Some(Arc::clone(&evt));
        let kind = evt.kind();
        // Another agent's prompts and stops mark the turns the throttles cannot see in its
        // transcript.
        if !opts.run_async
            && let Err(e) = evt.mark_turn()
        {
            tracing::warn!(error = %e, "could not mark the session's turn");
        }
        if kind == EventKind::SessionStart && !opts.run_async {
            // The session's directory names its transcript, so it goes once that is deleted.
            if let (Some(sid), Some(transcript)) = (evt.session_id(), evt.transcript_path()) {
                let root = capt_hook_state::state_root();
                if let Err(e) = capt_hook_state::note_transcript(&root, sid, Path::new(transcript))
                {
                    tracing::warn!(error = %e, "cannot note the session's transcript");
                }
            }
            // Sessions whose transcripts are gone are removed once per session start; it is a
            // directory scan, never on the path of a tool call.
            let report = capt_hook_state::cleanup_stale_sessions(evt.session_id());
            tracing::debug!(?report, "stale session cleanup");
        }
        let mut outcome = self.dispatcher.outcome(&evt, opts);
        let failed = !outcome.failures.is_empty();
        entry.fired = std::mem::take(&mut outcome.fired);
        entry.errors = outcome.failures.iter().map(ToString::to_string).collect();
        if !self.errors.is_empty() {
            entry.errors.push(format!(
                "{} hook file error(s): their hooks did not run",
                self.errors.len()
            ));
        }
        // Async hooks run after Claude Code has its answer: their verdicts are never printed.
        if opts.run_async {
            return Evaluation {
                unchecked: failed,
                ..Evaluation::default()
            };
        }
        let verdict = self.weigh_load_errors(kind, outcome.verdict(kind));
        if kind == EventKind::ResourcePressure {
            hold_pressure_notice(&evt, &verdict);
        }
        let verdict = with_pending_notice(&evt, verdict, notice_epoch);
        entry.verdict = match &verdict {
            Verdict::Decided(r) => r.as_ref().map(|r| r.action.name().to_owned()),
            Verdict::Unchecked { .. } => Some("unchecked".to_owned()),
        };
        let unchecked = failed || !self.errors.is_empty();
        let (out, decision) = match verdict {
            Verdict::Decided(r) => (
                envelope(kind, r.as_ref()),
                envelope::decision(kind, r.as_ref()),
            ),
            Verdict::Unchecked { reason, partial } => (
                unchecked_answer(kind, reason, partial),
                envelope::Unchecked::decision(kind),
            ),
        };
        // What is told once per session, and the host's notices, ride on an answer that can
        // carry them; otherwise they wait for a later event (their once-markers untouched).
        let out = if envelope::carries_notes(kind, out.as_ref()) {
            let mut notes = self.notes_once(&evt);
            notes.notices.extend(origin_notices);
            envelope::with_notes(kind, out, &notes)
        } else {
            out
        };
        let classic = Box::new(envelope::classic(kind, out.as_ref()));
        let typed = Box::new(envelope::typed::verdict(kind, out.as_ref()));
        match out {
            // The events that only honour exit 2 get their feedback on stderr.
            Some(out) if out.blocking_stderr().is_some() => Evaluation {
                stdout: None,
                stderr: out
                    .blocking_stderr()
                    .map(str::to_owned)
                    .into_iter()
                    .collect(),
                exit_code: 2,
                unchecked,
                decision,
                classic,
                typed,
            },
            out => Evaluation {
                stdout: out.map(|o| o.render()),
                stderr: Vec::new(),
                exit_code: 0,
                unchecked,
                decision,
                classic,
                typed,
            },
        }
    }

    /// What this session has not been told yet: hook files and packs that did not load (to the
    /// user, and on SessionStart to the agent too), the packs' notices and the project's notice,
    /// each once per session (and again when it changes). Stderr alone is hidden by Claude Code.
    /// Call it only for an answer that carries notes: each one returned is marked as told.
    fn notes_once(&self, evt: &Event) -> envelope::Notes {
        let mut notes = envelope::Notes::default();
        let once = |text: String, scope: &str| {
            let key = blake3::hash(text.as_bytes()).to_hex();
            evt.store().once(&key[..16], Some(scope)).then_some(text)
        };
        if !self.errors.is_empty() {
            let listed: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
            let key = blake3::hash(listed.join("\n").as_bytes()).to_hex();
            let notice = format!(
                "capt-hook: {} did not load, so its hooks are not running: {}. Run `capt-hook \
                 check` (project files) or `capt-hook pack list` (packs) after fixing it.",
                if listed.len() == 1 {
                    "a hook file".to_owned()
                } else {
                    format!("{} hook file errors", listed.len())
                },
                listed.join("; ")
            );
            // Keyed by the errors, not the sentence, as before: a session told about these
            // errors is not told again.
            if evt.store().once(&key[..16], Some("capt-hook:load-errors")) {
                // A headless session (`claude -p`) shows a systemMessage to nobody: the agent
                // is told too, once, so it can tell its user that a hook file is broken.
                if evt.kind() == EventKind::SessionStart {
                    notes.context.push(notice.clone());
                }
                notes.notices.push(notice);
            }
        }
        if !self.notices.is_empty() {
            let joined: Vec<String> = self
                .notices
                .iter()
                .map(|n| format!("capt-hook: {n}"))
                .collect();
            notes
                .notices
                .extend(once(joined.join("\n\n"), "capt-hook:pack-notices"));
        }
        if let Some(notice) = &self.notice {
            notes
                .notices
                .extend(once(notice.clone(), "capt-hook:notice"));
        }
        notes
    }

    /// On a guarded event, hooks that did not load might have denied the call: their
    /// absence leaves it to the user, unless a hook that did load denies it.
    fn weigh_load_errors(&self, kind: EventKind, verdict: Verdict) -> Verdict {
        if self.errors.is_empty() || !is_guarded(kind) {
            return verdict;
        }
        let shown: Vec<String> = self
            .errors
            .iter()
            .take(3)
            .map(ToString::to_string)
            .collect();
        let more = match self.errors.len().saturating_sub(3) {
            0 => String::new(),
            n => format!(" (and {n} more)"),
        };
        let why = format!(
            "capt-hook could not check this call: a hook file did not load, so its hooks did \
             not run: {}{more}. Fix it (`capt-hook check` lists every error); until then, decide \
             yourself.",
            shown.join("; ")
        );
        match verdict {
            Verdict::Decided(Some(r)) if r.is_block() => Verdict::Decided(Some(r)),
            Verdict::Decided(partial) => Verdict::Unchecked {
                reason: why,
                partial,
            },
            Verdict::Unchecked { reason, partial } => Verdict::Unchecked {
                reason: format!("{reason} Also: {why}"),
                partial,
            },
        }
    }
}

/// The tool events a waiting notice rides on.
fn carries_notices(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::PreToolUse
            | EventKind::PostToolUse
            | EventKind::PostToolUseFailure
            | EventKind::PermissionRequest
            | EventKind::PostToolBatch
    )
}

/// What the hooks said about a ResourcePressure event, kept (with the process's facts) for the
/// session's next tool event: nobody reads the answer to an event the host sent.
fn hold_pressure_notice(evt: &Event, verdict: &Verdict) {
    let said = match verdict {
        Verdict::Decided(Some(r))
        | Verdict::Unchecked {
            partial: Some(r), ..
        } => [&r.message, &r.system_message]
            .into_iter()
            .filter_map(|m| m.as_deref().filter(|m| !m.is_empty()))
            .collect::<Vec<_>>()
            .join(" "),
        _ => return,
    };
    if evt.session_id().is_none() || said.is_empty() {
        return;
    }
    let p = evt.payload().get("process");
    let field = |k: &str| p.and_then(|p| p.get(k));
    let argv: Vec<&str> = field("argv")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut facts = format!(
        "pid {}",
        field("pid").and_then(Value::as_u64).unwrap_or_default()
    );
    if !argv.is_empty() {
        let mut cmd = argv.join(" ");
        if let Some((i, _)) = cmd.char_indices().nth(120) {
            cmd.truncate(i);
            cmd.push('…');
        }
        facts.push_str(&format!(" `{cmd}`"));
    }
    if let Some(cpu) = field("cpu_fraction").and_then(Value::as_f64) {
        facts.push_str(&format!(", {:.0}% CPU", cpu * 100.0));
    }
    if let Some(kib) = field("rss_kib").and_then(Value::as_u64) {
        facts.push_str(&format!(", {} MiB resident", kib / 1024));
    }
    if let Some(secs) = field("runtime_s").and_then(Value::as_f64) {
        facts.push_str(&format!(", running {secs:.0} s"));
    }
    capt_hook_engine::notices::post(evt.store(), format!("capt-hook: {said} ({facts})"));
}

/// Adds the notices waiting for this session (see [`capt_hook_engine::notices`]) to a tool
/// event's verdict: the user sees them, and so does the agent when no hook said anything else.
fn with_pending_notice(evt: &Event, verdict: Verdict, epoch: Option<u64>) -> Verdict {
    if !carries_notices(evt.kind()) {
        return verdict;
    }
    let Some(notice) = capt_hook_engine::notices::take_after(evt.store(), epoch) else {
        return verdict;
    };
    let add = |r: Option<HookResult>| {
        Some(match r {
            Some(mut r) => {
                r.system_message = Some(match r.system_message.take() {
                    Some(own) if !own.is_empty() => format!("{own}\n\n{notice}"),
                    _ => notice.clone(),
                });
                r
            }
            None => HookResult::warn(notice.clone()).with_system_message(notice.clone()),
        })
    };
    match verdict {
        Verdict::Decided(r) => Verdict::Decided(add(r)),
        Verdict::Unchecked { reason, partial } => Verdict::Unchecked {
            reason,
            partial: add(partial),
        },
    }
}

/// The ask answer for a call some hook could not check, carrying what the hooks that did answer
/// said: their context, a rewrite to show in the prompt, their notices. Never their approval.
fn unchecked_answer(
    kind: EventKind,
    reason: String,
    partial: Option<HookResult>,
) -> Option<Output> {
    let mut answer = envelope::Unchecked::because(reason);
    if let Some(r) = partial {
        answer.notice = r.system_message.clone();
        match r.action {
            Action::Rewrite => {
                answer.updated_input = r.updated_input;
                answer.context = r.note;
            }
            Action::Warn | Action::Allow => answer.context = r.message,
            Action::Block => {}
        }
    }
    answer.output(kind)
}

/// The answer for a guarded event whose payload could not be read: the user decides.
fn unreadable(kind: EventKind, error: &dyn std::fmt::Display) -> Option<Output> {
    envelope::Unchecked::because(format!(
        "capt-hook could not read this {kind} payload ({error}), so no hook checked the call; \
         decide yourself."
    ))
    .output(kind)
}

/// Turns an event name and stdin into an event, with Claude Code's conventions: an unknown name
/// (a newer Claude Code's event) and blank stdin are `Ok(None)`, and a payload that is not a JSON object
/// is reported as `Malformed stdin: …` and exits 0 — with an answer that asks the user when the
/// event decides a tool call, which must never pass unchecked in silence. The payload is read
/// as leniently as Claude Code writes it ([`capt_hook_proto::payload`]). `context` gets the
/// payload's `cwd` (for callers that resolve the project root from it).
pub fn read_event(
    event: &str,
    stdin: &[u8],
    context: impl FnOnce(Option<&str>) -> EventContext,
) -> Result<Option<Event>, Evaluation> {
    // A name this build does not know comes from a newer Claude Code: nothing to do.
    let Ok(kind) = event.parse::<EventKind>() else {
        tracing::debug!(event, "unknown event name; no-op");
        return Ok(None);
    };
    let malformed = |e: &dyn std::fmt::Display| {
        let out = unreadable(kind, e);
        Evaluation {
            stdout: out.as_ref().map(Output::render),
            stderr: vec![format!("Malformed stdin: {e}")],
            exit_code: 0,
            unchecked: true,
            decision: envelope::Unchecked::decision(kind),
            classic: Box::new(envelope::classic(kind, out.as_ref())),
            typed: Box::new(envelope::typed::verdict(kind, out.as_ref())),
        }
    };
    let payload = match parse_payload(stdin) {
        Ok(Some(v)) => v,
        Ok(None) => return Ok(None),
        Err(e) => return Err(malformed(&e)),
    };
    let context = context(payload.get("cwd").and_then(Value::as_str));
    Event::new(kind, payload, context)
        .map(Some)
        .map_err(|e| malformed(&e))
}

/// Reads an event's payload from `input` (stdin) for [`read_event`], at most
/// [`capt_hook_proto::MAX_EVENT_INPUT`] bytes: the hook client's limit, so a payload either
/// reader takes the other takes too. A larger one is not read further (nor drained: an endless
/// writer would never let go) and is answered as an unreadable payload is: a guarded event asks
/// the user, naming the limit; stderr says why; exit 0.
pub fn read_input(event: &str, input: impl std::io::Read) -> Result<Vec<u8>, Evaluation> {
    use std::io::Read;
    let limit = capt_hook_proto::MAX_EVENT_INPUT;
    let mut bytes = Vec::new();
    let why = match input
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut bytes)
    {
        Ok(_) if bytes.len() <= limit => return Ok(bytes),
        Ok(_) => format!(
            "the event input is over the {limit}-byte ({} MiB) limit",
            limit / (1024 * 1024)
        ),
        Err(e) => format!("reading stdin: {e}"),
    };
    let kind = event.parse::<EventKind>().ok();
    let out = kind.and_then(|k| unreadable(k, &why));
    Err(Evaluation {
        stdout: out.as_ref().map(Output::render),
        stderr: vec![format!("capt-hook: {why}; no hook ran")],
        exit_code: 0,
        unchecked: true,
        decision: kind.map_or(Decision::None, envelope::Unchecked::decision),
        classic: Box::new(
            kind.map_or_else(Default::default, |k| envelope::classic(k, out.as_ref())),
        ),
        typed: Box::new(kind.map_or_else(Default::default, |k| {
            envelope::typed::verdict(k, out.as_ref())
        })),
    })
}

/// `Ok(None)` for blank input; an error for anything that is not one JSON object, read as
/// leniently as Claude Code writes it.
pub fn parse_payload(
    stdin: &[u8],
) -> Result<Option<Value>, capt_hook_proto::payload::PayloadError> {
    capt_hook_proto::payload::parse(stdin)
}

/// The project root for an event: the explicit one, else `CLAUDE_PROJECT_DIR`, else
/// `FACTORY_PROJECT_DIR`, else the payload's `cwd`, else the process's working directory.
///
/// The payload is parsed only when neither the caller nor the environment names the root:
/// under Claude Code `CLAUDE_PROJECT_DIR` is set, and evaluation parses the payload anyway.
pub fn resolve_root(explicit: Option<&Path>, stdin: &[u8]) -> PathBuf {
    if let Some(root) = named_root(explicit) {
        return root;
    }
    let payload = parse_payload(stdin).ok().flatten();
    let cwd = payload
        .as_ref()
        .and_then(|v| v.get("cwd"))
        .and_then(Value::as_str);
    root_from(None, cwd)
}

/// [`resolve_root`] when the payload's `cwd` is already known.
pub fn root_from(explicit: Option<&Path>, payload_cwd: Option<&str>) -> PathBuf {
    if let Some(root) = named_root(explicit) {
        return root;
    }
    if let Some(cwd) = payload_cwd.filter(|c| !c.is_empty()) {
        return PathBuf::from(cwd);
    }
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// The root given explicitly or by `CLAUDE_PROJECT_DIR` / `FACTORY_PROJECT_DIR`.
fn named_root(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(r) = explicit {
        return Some(r.to_path_buf());
    }
    [
        capt_hook_core::env::CLAUDE_PROJECT_DIR,
        capt_hook_core::env::FACTORY_PROJECT_DIR,
    ]
    .into_iter()
    .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
    .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event asks whether the hooks changed: a file edited in place, added, removed, or
    /// a watched file appearing is seen, and an untouched project is not reloaded.
    #[test]
    fn staleness_sees_files_edited_added_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let hooks = default_hooks_dir(root);
        std::fs::create_dir_all(&hooks).unwrap();
        let hook = "[[hook]]\nkind = \"block_command\"\nargv = [\"x\"]\nreason = \"x\"\n";
        std::fs::write(hooks.join("a.toml"), hook).unwrap();
        let load = || Project::load_with_packs(root, &hooks, &Registry::new());
        let p = load();
        assert!(!p.is_stale(), "nothing changed");
        std::fs::write(hooks.join("a.toml"), format!("{hook}# edited\n")).unwrap();
        assert!(p.is_stale(), "a file edited in place");
        let p = load();
        std::fs::write(hooks.join("b.toml"), hook).unwrap();
        assert!(p.is_stale(), "a file added");
        let p = load();
        std::fs::remove_file(hooks.join("b.toml")).unwrap();
        assert!(p.is_stale(), "a file removed");
        let p = load();
        std::fs::write(hooks.join(capt_hook_toml::loader::CONFIG_FILE), "").unwrap();
        assert!(p.is_stale(), "a watched file appeared");
        assert!(!load().is_stale());
    }
}

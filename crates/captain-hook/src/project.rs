//! One project's hooks, loaded once and used for many events: the unit a worker process keeps
//! warm and `capt-hook run` builds for a single event.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use capt_hook_core::{Action, EventContext, EventKind, HookResult, Output, envelope};
use capt_hook_proto::failure::Unchecked;
use serde_json::Value;

use crate::Event;
use crate::dispatch::{DispatchOptions, Dispatcher, Verdict, is_guarded};
use crate::loader::{LoadError, hook_files, load_dir};
use crate::registry::Registry;

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
}

/// Where an event came from, when another process sent it.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The sender's pid.
    pub pid: Option<u32>,
    /// The sender's request-scoped environment.
    pub env: Option<Arc<std::collections::BTreeMap<String, String>>>,
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
    fingerprint: Vec<(PathBuf, Option<SystemTime>, u64)>,
}

/// The default hooks directory of a root.
pub fn default_hooks_dir(root: &Path) -> PathBuf {
    root.join(".claude").join("hooks")
}

fn fingerprint(dir: &Path) -> Vec<(PathBuf, Option<SystemTime>, u64)> {
    let mut out = Vec::new();
    if let Ok(meta) = std::fs::metadata(dir) {
        out.push((dir.to_path_buf(), meta.modified().ok(), meta.len()));
    }
    for f in hook_files(dir).unwrap_or_default() {
        let meta = std::fs::metadata(&f).ok();
        out.push((
            f,
            meta.as_ref().and_then(|m| m.modified().ok()),
            meta.map(|m| m.len()).unwrap_or(0),
        ));
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
        let errors = load_dir(hooks_dir, &mut registry);
        for e in &errors {
            tracing::error!(error = %e, "hook file did not load");
        }
        Project {
            root: root.to_path_buf(),
            hooks_dir: hooks_dir.to_path_buf(),
            dispatcher: Dispatcher::new(Arc::new(registry), Some(root)),
            errors,
            fingerprint: fingerprint(hooks_dir),
            notice: None,
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
        !self.fingerprint.is_empty() && fingerprint(&self.hooks_dir) != self.fingerprint
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The load errors.
    pub fn errors(&self) -> &[LoadError] {
        &self.errors
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
        let context = |_: Option<&str>| EventContext {
            project_root: Some(self.root.clone()),
            skip_permissions: None,
            state_root: Some(capt_hook_state::state_root()),
            origin_pid: origin.pid,
            request_env: origin.env,
        };
        let evt = match read_event(event, stdin, context) {
            Ok(Some(e)) => Arc::new(e),
            Ok(None) => return Evaluation::default(),
            Err(rejected) => return rejected,
        };
        let kind = evt.kind();
        if kind == EventKind::SessionStart && !opts.run_async {
            // Old sessions whose transcripts are gone are removed once per session start; it
            // is a directory scan, never on the path of a tool call.
            let report = capt_hook_state::cleanup_stale_sessions(evt.session_id());
            tracing::debug!(?report, "stale session cleanup");
        }
        let outcome = self.dispatcher.outcome(&evt, opts);
        let failed = !outcome.failures.is_empty();
        // Async hooks run after Claude Code has its answer: their verdicts are never printed.
        if opts.run_async {
            return Evaluation {
                unchecked: failed,
                ..Evaluation::default()
            };
        }
        let verdict = self.weigh_load_errors(kind, outcome.verdict(kind));
        let unchecked = failed || !self.errors.is_empty();
        let mut out = match verdict {
            Verdict::Decided(r) => envelope(kind, r.as_ref()),
            Verdict::Unchecked { reason, partial } => {
                unchecked_answer(kind, reason, partial).map(Output::Json)
            }
        };
        self.announce_load_errors(&evt, &mut out);
        if let Some(notice) = &self.notice {
            let key = blake3::hash(notice.as_bytes()).to_hex();
            announce_once(
                &evt,
                &mut out,
                &key[..16],
                "capt-hook:notice",
                notice.clone(),
            );
        }
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
            },
            out => Evaluation {
                stdout: out.map(|o| o.render()),
                stderr: Vec::new(),
                exit_code: 0,
                unchecked,
            },
        }
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

    /// Hook files that did not load are told to the user once per session (and again when
    /// the errors change), on whatever event comes first: stderr alone is hidden by Claude Code.
    fn announce_load_errors(&self, evt: &Event, out: &mut Option<Output>) {
        if self.errors.is_empty() || matches!(out, Some(o) if !matches!(o, Output::Json(_))) {
            // Raw text and exit-2 feedback have nowhere to carry a notice; a later event will.
            return;
        }
        let listed: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
        let key = blake3::hash(listed.join("\n").as_bytes()).to_hex();
        let notice = format!(
            "capt-hook: {} in {} did not load, so its hooks are not running: {}. Run `capt-hook \
             check` after fixing it.",
            if listed.len() == 1 {
                "a hook file".to_owned()
            } else {
                format!("{} hook file errors", listed.len())
            },
            self.hooks_dir.display(),
            listed.join("; ")
        );
        announce_once(evt, out, &key[..16], "capt-hook:load-errors", notice);
    }
}

/// Adds `notice` to the envelope's `systemMessage` the first time this session sees `key` in
/// `scope`: stderr alone is hidden by Claude Code. Raw text and exit-2 feedback have nowhere to
/// carry a notice, so a later event will.
fn announce_once(evt: &Event, out: &mut Option<Output>, key: &str, scope: &str, notice: String) {
    // WorktreeCreate reads stdout as a path: JSON there would be taken for one.
    if matches!(out, Some(o) if !matches!(o, Output::Json(_)))
        || evt.kind() == EventKind::WorktreeCreate
    {
        return;
    }
    if !evt.store().once(key, Some(scope)) {
        return;
    }
    let mut map = match out.take() {
        Some(Output::Json(Value::Object(map))) => map,
        Some(other) => {
            *out = Some(other);
            return;
        }
        None => serde_json::Map::new(),
    };
    let joined = match map.get("systemMessage").and_then(Value::as_str) {
        Some(prior) if !prior.is_empty() => format!("{prior}\n\n{notice}"),
        _ => notice,
    };
    map.insert("systemMessage".into(), joined.into());
    *out = Some(Output::Json(Value::Object(map)));
}

/// The ask answer for a call some hook could not check, carrying what the hooks that did answer
/// said: their context, a rewrite to show in the prompt, their notices. Never their approval.
fn unchecked_answer(kind: EventKind, reason: String, partial: Option<HookResult>) -> Option<Value> {
    let mut answer = Unchecked::because(reason);
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
    answer.to_value(kind.name())
}

/// The answer for a guarded event whose payload could not be read: the user decides.
fn unreadable(kind: EventKind, error: &dyn std::fmt::Display) -> Option<String> {
    Unchecked::because(format!(
        "capt-hook could not read this {kind} payload ({error}), so no hook checked the call; \
         decide yourself."
    ))
    .envelope(kind.name())
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
    let malformed = |e: &dyn std::fmt::Display| Evaluation {
        stdout: unreadable(kind, e),
        stderr: vec![format!("Malformed stdin: {e}")],
        exit_code: 0,
        unchecked: true,
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

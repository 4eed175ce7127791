//! One project's hooks kept loaded, reloaded when a hook file changes, and the translation of an
//! engine evaluation into the wire's [`EventResponse`].

use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::project::default_hooks_dir;
use capt_hook_proto::{EventRequest, EventResponse, RequestError, Status};
use capt_hook_rust_project::Fingerprint;

use crate::project::Project;
use capt_hook_engine::DispatchOptions;
use capt_hook_engine::registry::Registry;

/// The loaded project of a worker.
pub struct Warm {
    /// Where the hook files live; reloaded from here when they change.
    hooks_dir: PathBuf,
    /// The project root the hooks were loaded for.
    root: PathBuf,
    /// The hooks registered in Rust; the files load after them.
    base: Arc<Registry>,
    /// Told to each session once (from the host: why the Rust hooks are not live).
    note: Option<String>,
    /// A project worker's Rust sources as they were when it started.
    rust: Option<Fingerprint>,
    /// The current load. Events hold their own `Arc`, so a reload never disturbs one in flight.
    current: Mutex<Current>,
}

/// The current load and whether the Rust hooks in it went stale.
struct Current {
    project: Arc<Project>,
    /// The Rust sources changed after this worker started: it serves the files alone, tells
    /// each session why, and asks the host to retire it (sticky: a build never un-stales).
    stale: bool,
}

impl Warm {
    /// Loads the hooks of `root`: `base` (Rust) first, then the files, then the packs; `note` is
    /// told to each session once.
    pub fn load(root: &Path, base: Arc<Registry>, note: Option<String>) -> Warm {
        let hooks_dir = default_hooks_dir(root);
        // Only a worker with Rust hooks watches their sources: the stock worker has none to
        // go stale (the host picks it when the project's build is missing or old).
        let rust = (!base.is_empty() && capt_hook_rust_project::is_rust_project(root))
            .then(|| capt_hook_rust_project::fingerprint(&hooks_dir));
        let project = Project::load_with_packs(root, &hooks_dir, &base).with_notice(note.clone());
        Warm {
            hooks_dir,
            root: root.to_path_buf(),
            base,
            note,
            rust,
            current: Mutex::new(Current {
                project: Arc::new(project),
                stale: false,
            }),
        }
    }

    /// The project to evaluate with, reloaded first if a hook file changed, and whether this
    /// worker's Rust hooks are stale. The checks (a few `stat` calls) run outside the lock, so
    /// concurrent events do not queue behind each other's; a change is looked at again under
    /// the lock, so concurrent events reload once, not N times.
    pub fn project(&self) -> (Arc<Project>, bool) {
        let (project, stale) = {
            let current = self.current.lock();
            (Arc::clone(&current.project), current.stale)
        };
        let rust_changed = || {
            self.rust.as_ref().is_some_and(|at_start| {
                capt_hook_rust_project::fingerprint(&self.hooks_dir) != *at_start
            })
        };
        if (stale || !rust_changed()) && !project.is_stale() {
            return (project, stale);
        }
        let mut current = self.current.lock();
        let went_stale = !current.stale && rust_changed();
        if went_stale || current.project.is_stale() {
            current.stale |= went_stale;
            current.project = Arc::new(self.reload(current.stale));
        }
        (Arc::clone(&current.project), current.stale)
    }

    /// A fresh load: without the Rust hooks once they are stale, with the notice that says so.
    fn reload(&self, stale: bool) -> Project {
        if stale {
            let note = capt_hook_rust_project::stale_note(&self.hooks_dir);
            Project::load_with_packs(&self.root, &self.hooks_dir, &Registry::new())
                .with_notice(Some(note))
        } else {
            Project::load_with_packs(&self.root, &self.hooks_dir, &self.base)
                .with_notice(self.note.clone())
        }
    }
}

pub use capt_hook_proto::clock::now_unix_ms;

/// The request's deadline as an `Instant`, or `Err` when it has already passed.
pub fn deadline_of(req: &EventRequest) -> Result<Option<Instant>, RequestError> {
    req.deadline()
}

/// Who runs an event with a request id, as [`claim`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Ours: to release if the event is not run after all.
    Ours,
    /// Nothing to claim (no request id), or no claim could be recorded (said on stderr:
    /// running the hooks beats leaving a guarded call unanswered).
    Unclaimed,
    /// Another runner has it; named.
    Theirs(String),
}

/// Takes `req`'s claim ([`capt_hook_proto::claim`]) for this runner, described as `who`, before
/// any of its hooks run.
pub fn claim(req: &EventRequest, who: &str) -> Claim {
    let Some(id) = &req.request_id else {
        return Claim::Unclaimed;
    };
    match capt_hook_proto::claim::take(id, who) {
        Ok(capt_hook_proto::claim::Claimed::Ours) => Claim::Ours,
        Ok(capt_hook_proto::claim::Claimed::Theirs(owner)) => Claim::Theirs(owner),
        Err(e) => {
            eprintln!("capt-hook-worker: could not claim event {id}, running it anyway: {e}");
            Claim::Unclaimed
        }
    }
}

/// The sending client: its pid and request-scoped environment; `agent`, the coding agent whose
/// adapter turned its event into `req` (`None`: Claude Code's own).
fn origin(req: &EventRequest, agent: Option<&str>) -> crate::project::Origin {
    crate::project::Origin {
        pid: Some(req.client_pid),
        env: Some(Arc::new(req.env.clone())),
        notice_epoch: req.notice_epoch,
        notices: req.notices.clone(),
        agent: agent.map(str::to_owned),
    }
}

/// Evaluates `req` with `project` (sync hooks), answering as the client should print it.
pub fn respond(project: &Project, req: &EventRequest, deadline: Option<Instant>) -> EventResponse {
    respond_traced(project, req, deadline).0
}

/// [`respond`], also returning the event's journal entry, for [`capt_hook_journal::submit`]
/// once the response has been sent. Another agent's event goes through its adapter
/// ([`crate::worker::agent`]).
pub fn respond_traced(
    project: &Project,
    req: &EventRequest,
    deadline: Option<Instant>,
) -> (EventResponse, capt_hook_journal::Entry) {
    use crate::worker::agent;
    match agent::agent_of(req) {
        Ok(None) => {
            let (response, entry, _) = respond_claude(project, req, deadline, None);
            (response, entry)
        }
        Ok(Some(name)) => agent::respond(req, &name, |sub| {
            respond_claude(project, sub, deadline, Some(&name))
        }),
        Err(e) => agent::unreadable(req, None, &e),
    }
}

/// [`respond_traced`] for a Claude Code event, read from `agent`'s when that is named, with the
/// answer as a typed verdict too (what another agent's adapter answers from).
fn respond_claude(
    project: &Project,
    req: &EventRequest,
    deadline: Option<Instant>,
    agent: Option<&str>,
) -> (
    EventResponse,
    capt_hook_journal::Entry,
    capt_hook_agents::Verdict,
) {
    let started = Instant::now();
    let (eval, entry) = project.evaluate_traced(
        &req.event,
        req.payload_raw.as_bytes(),
        DispatchOptions {
            deadline,
            run_async: false,
        },
        origin(req, agent),
    );
    let mut stderr = String::new();
    for e in project.errors() {
        stderr.push_str(&format!("capt-hook: {e}\n"));
    }
    for line in &eval.stderr {
        stderr.push_str(line);
        stderr.push('\n');
    }
    let response = EventResponse {
        schema: 1,
        status: Status::Ok,
        stdout: eval.stdout.map(|s| s + "\n").unwrap_or_default(),
        decision: eval.decision,
        stderr,
        exit: i32::from(eval.exit_code),
        elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
        // Every matched hook gave its verdict from a payload that was read and hook files that
        // all loaded. Otherwise the answer already says so (ask, or deny for a mandatory hook).
        guard_completed: !eval.unchecked,
        stale_build: false,
        classic: req.classic.then_some(eval.classic),
    };
    (response, entry, *eval.typed)
}

/// True when the project has async hooks (to run after the reply).
pub fn has_async_hooks(project: &Project) -> bool {
    project
        .dispatcher()
        .registry()
        .hooks()
        .iter()
        .any(|h| h.is_async)
}

/// Runs the project's async hooks for an event whose reply has been sent; handlers still
/// running at `deadline` are abandoned.
pub fn run_async_hooks(project: &Project, req: &EventRequest, deadline: Instant) {
    match crate::worker::agent::agent_of(req) {
        Ok(None) => run_async_claude(project, req, deadline, None),
        Ok(Some(agent)) => {
            // An event that could not be read was reported by the foreground reply.
            if let Ok((_, subs)) = crate::worker::agent::claude_requests(req, &agent) {
                for sub in &subs {
                    run_async_claude(project, sub, deadline, Some(&agent));
                }
            }
        }
        Err(_) => {}
    }
}

/// [`run_async_hooks`] for a Claude Code event, read from `agent`'s when that is named.
fn run_async_claude(project: &Project, req: &EventRequest, deadline: Instant, agent: Option<&str>) {
    project.evaluate_from(
        &req.event,
        req.payload_raw.as_bytes(),
        DispatchOptions {
            deadline: Some(deadline),
            run_async: true,
        },
        origin(req, agent),
    );
}

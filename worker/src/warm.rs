//! One project's hooks kept loaded, reloaded when a hook file changes, and the translation of an
//! engine evaluation into the wire's [`EventResponse`].

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use capt_hook_proto::{EventRequest, EventResponse, RequestError, Status};
use captain_hook::project::default_hooks_dir;
use captain_hook::{DispatchOptions, Project};

/// The loaded project of a worker.
pub struct Warm {
    /// The current load. Events hold their own `Arc`, so a reload never disturbs one in flight.
    current: Mutex<Arc<Project>>,
}

impl Warm {
    /// Loads the hooks of `root` and its packs.
    pub fn load(root: &Path) -> Warm {
        let project = Project::load_with_packs(root, &default_hooks_dir(root));
        Warm {
            current: Mutex::new(Arc::new(project)),
        }
    }

    /// The project to evaluate with, reloaded first if a hook file changed. The check is a few
    /// `stat` calls; doing it under the lock means concurrent events reload once, not N times.
    pub fn project(&self) -> Arc<Project> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if current.is_stale() {
            *current = Arc::new(current.reload());
        }
        Arc::clone(&current)
    }
}

pub use capt_hook_proto::clock::now_unix_ms;

/// The request's deadline as an `Instant`, or `Err` when it has already passed.
pub fn deadline_of(req: &EventRequest) -> Result<Option<Instant>, RequestError> {
    req.deadline()
}

/// The sending client: its pid and request-scoped environment.
fn origin(req: &EventRequest) -> captain_hook::project::Origin {
    captain_hook::project::Origin {
        pid: Some(req.client_pid),
        env: Some(Arc::new(req.env.clone())),
    }
}

/// Evaluates `req` with `project` (sync hooks), answering as the client should print it.
pub fn respond(project: &Project, req: &EventRequest, deadline: Option<Instant>) -> EventResponse {
    let started = Instant::now();
    let eval = project.evaluate_from(
        &req.event,
        req.payload_raw.as_bytes(),
        DispatchOptions {
            deadline,
            run_async: false,
        },
        origin(req),
    );
    let mut stderr = String::new();
    for e in project.errors() {
        stderr.push_str(&format!("capt-hook: {e}\n"));
    }
    for line in &eval.stderr {
        stderr.push_str(line);
        stderr.push('\n');
    }
    EventResponse {
        schema: 1,
        status: Status::Ok,
        stdout: eval.stdout.map(|s| s + "\n").unwrap_or_default(),
        stderr,
        exit: i32::from(eval.exit_code),
        elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
        // Every matched hook gave its verdict from a payload that was read and hook files that
        // all loaded. Otherwise the envelope already says so (ask, or deny for a mandatory hook).
        guard_completed: !eval.unchecked,
    }
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
    project.evaluate_from(
        &req.event,
        req.payload_raw.as_bytes(),
        DispatchOptions {
            deadline: Some(deadline),
            run_async: true,
        },
        origin(req),
    );
}

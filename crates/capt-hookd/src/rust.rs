//! Rust hook projects, as the host sees them: which binary a root's worker runs (its own build
//! when it is current, else the stock worker with a note saying why), and the background
//! builds that bring a project's build up to date. A build is `capt-hook build` run as a child
//! process beside the host, never on an event's path; at most one per root at a time (the
//! host's set here, and the build's own lock across processes). When one ends, the root's
//! workers are retired so the next event starts whichever binary is now current.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use capt_hook_rust_project::{Cache, Selection};

/// Picks the binary for `root` (reads and hashes the hook sources, off the runtime thread).
pub async fn choose(root: &Path, semantic: &BTreeMap<String, String>) -> Selection {
    let (root, semantic) = (root.to_path_buf(), semantic.clone());
    let picked = tokio::task::spawn_blocking(move || select(&root, &semantic)).await;
    picked.unwrap_or_else(|e| Selection::NotLive {
        note: format!(
            "captain-hook: could not check this project's Rust hooks ({e}); only the TOML hooks \
             run"
        ),
        hash: None,
        build: false,
    })
}

/// [`choose`] on this thread: for the worker a new host starts first, which nothing else is
/// waiting on yet and whose start waits for this choice anyway.
pub fn select(root: &Path, semantic: &BTreeMap<String, String>) -> Selection {
    let env = capt_hook_rust_project::request_env(semantic);
    capt_hook_rust_project::select(root, capt_hook_rust_project::sdk_dir(&env).as_deref(), &env)
}

/// Records that a project's build cannot serve (it crashed at start or failed its hello), so
/// the host stops starting it until the sources change.
pub async fn retire_build(
    root: &Path,
    semantic: &BTreeMap<String, String>,
    hash: &str,
    why: String,
) {
    let (root, semantic, hash) = (root.to_path_buf(), semantic.clone(), hash.to_owned());
    let saved = tokio::task::spawn_blocking(move || {
        Cache::for_root(&root, capt_hook_rust_project::request_env(&semantic))
            .record_failure(&hash, &why)
    })
    .await;
    if !matches!(saved, Ok(Ok(()))) {
        tracing::error!(?saved, "could not record a failed project worker");
    }
}

/// The background builds this host runs.
pub struct Builds {
    /// `capt-hook`, which does the building.
    cli: PathBuf,
    /// Roots with a build running now.
    running: Mutex<HashSet<PathBuf>>,
}

impl Builds {
    /// No builds yet; `cli` is the `capt-hook` binary.
    pub fn new(cli: PathBuf) -> Arc<Builds> {
        Arc::new(Builds {
            cli,
            running: Mutex::new(HashSet::new()),
        })
    }

    /// Starts `capt-hook build` for `root` unless one is running; `done` runs when it exits,
    /// whatever the outcome (the build records its own failure for the next selection).
    pub fn start(
        self: &Arc<Self>,
        root: &Path,
        semantic: &BTreeMap<String, String>,
        done: impl FnOnce() + Send + 'static,
    ) {
        if !self.running.lock().insert(root.to_path_buf()) {
            return;
        }
        let log = Cache::for_root(root, capt_hook_rust_project::request_env(semantic)).log();
        let mut cmd = tokio::process::Command::new(&self.cli);
        cmd.arg("build")
            .arg("--root")
            .arg(root)
            .current_dir(root)
            .envs(semantic)
            .stdin(Stdio::null())
            .process_group(0)
            .kill_on_drop(false);
        let root_shown = root.to_path_buf();
        let (this, root) = (Arc::clone(self), root.to_path_buf());
        tokio::spawn(async move {
            let outcome = match open_log(&log).await {
                Ok(out) => {
                    let err = out.try_clone().map(Stdio::from).unwrap_or(Stdio::null());
                    match cmd.stdout(Stdio::from(out)).stderr(err).spawn() {
                        Ok(mut child) => child.wait().await.map_err(|e| e.to_string()),
                        Err(e) => Err(format!("cannot start {}: {e}", this.cli.display())),
                    }
                }
                Err(e) => Err(format!("cannot open {}: {e}", log.display())),
            };
            match &outcome {
                Ok(status) => {
                    tracing::info!(root = %root.display(), %status, log = %log.display(), "background build ended")
                }
                Err(e) => {
                    tracing::error!(root = %root.display(), error = %e, "background build did not run")
                }
            }
            this.running.lock().remove(&root);
            done();
        });
        tracing::info!(root = %root_shown.display(), cli = %self.cli.display(), "background build started");
    }
}

/// The build log, created (and its directory) off the runtime thread.
async fn open_log(log: &Path) -> std::io::Result<std::fs::File> {
    let log = log.to_path_buf();
    tokio::task::spawn_blocking(move || {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::File::create(&log)
    })
    .await
    .map_err(std::io::Error::other)?
}

/// `capt-hook` beside the host binary.
pub fn cli_exe() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("capt-hook")))
        .unwrap_or_else(|| "capt-hook".into())
}

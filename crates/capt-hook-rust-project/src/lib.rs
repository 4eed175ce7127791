//! Rust hook projects: a `.claude/hooks/` directory that is a Cargo package whose `main` hands
//! its registry to `captain_hook::serve`. This crate owns the facts the CLI (which builds), the
//! host (which picks the binary to run) and the worker (which notices edited sources) share:
//! which files are the sources, the hash that names a build, where builds are cached, and what
//! the last build of a hash left behind. Std and blake3 only, so the host stays small.

mod cache;
pub mod prebuilt;
mod sources;

pub use cache::{Cache, Selection, request_env, select, stale_note, unbuilt_note};
pub use sources::{Fingerprint, fingerprint, source_hash, sources};

use std::path::{Path, PathBuf};

/// The binary a hook project builds; the scaffold names its `[[bin]]` so.
pub const WORKER_BIN: &str = "capt-hook-project-worker";

/// The hooks directory of a root, which is the hook project's package directory.
pub fn crate_dir(root: &Path) -> PathBuf {
    root.join(".claude").join("hooks")
}

/// True when the root's hooks directory is a Cargo package.
pub fn is_rust_project(root: &Path) -> bool {
    crate_dir(root).join("Cargo.toml").is_file()
}

/// The identity of the SDK a build links: this build of captain-hook plus the installed SDK's
/// own stamp (`BUILD-ID`, written by `cargo xtask install`), so reinstalling the SDK makes
/// every project's build stale.
pub fn sdk_id(sdk: Option<&Path>) -> String {
    let stamp = sdk
        .and_then(|d| std::fs::read_to_string(d.join("BUILD-ID")).ok())
        .unwrap_or_default();
    format!(
        "{}+{}+{}",
        capt_hook_proto::BUILD,
        capt_hook_proto::PROTOCOL,
        stamp.trim()
    )
}

/// The SDK source a hook project builds against: `$CAPT_HOOK_SDK` (read through `env`), else
/// `sdk/` beside the directory of the running binary (where `cargo xtask install` puts it).
pub fn sdk_dir(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(dir) = env(capt_hook_proto::env::CAPT_HOOK_SDK).filter(|d| !d.is_empty()) {
        return Some(dir.into());
    }
    let exe = std::env::current_exe().ok()?;
    let installed = exe.parent()?.parent()?.join("sdk");
    installed.is_dir().then_some(installed)
}

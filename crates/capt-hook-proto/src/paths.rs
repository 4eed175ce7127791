//! Where the per-user host lives. Client, host and doctor compute these the same way.

use std::path::PathBuf;

pub use crate::env::{CAPT_HOOK_LOG_MAX_BYTES, CAPTAIN_HOOK_LOG_DIR, HOME, XDG_RUNTIME_DIR};

/// File name of the host socket.
pub const SOCKET_NAME: &str = "capt-hookd.sock";
/// Held (flock) by the live host for its whole life: proves whether a socket file is stale.
pub const LIFETIME_LOCK: &str = "capt-hookd.lock";
/// Held by the one client that is starting a host, so concurrent clients start one host.
pub const SPAWN_LOCK: &str = "spawn.lock";
/// The host's log (its own lines and every worker's stderr).
pub const LOG_NAME: &str = "capt-hookd.log";
/// Durable records of live workers, so the next host can reap a crashed host's leftovers.
pub const WORKER_RECORDS: &str = "workers.json";
/// Under the state directory: what workers learned parsing each project's patterns, so the
/// next worker of the same build does not parse them again.
pub const PATTERN_FACTS: &str = "patterns";

fn home() -> PathBuf {
    std::env::var_os(HOME)
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| "/".into())
}

/// The per-user host state directory (log, worker records):
/// `~/.cache/captain-hook/host-v1` (`~/Library/Caches/captain-hook/host-v1` on macOS).
pub fn state_dir() -> PathBuf {
    let base = if cfg!(target_os = "macos") {
        home().join("Library").join("Caches")
    } else {
        home().join(".cache")
    };
    base.join("captain-hook").join("host-v1")
}

/// The log directory: `$CAPTAIN_HOOK_LOG_DIR` when set, else the host state directory.
pub fn log_dir() -> PathBuf {
    match std::env::var_os(CAPTAIN_HOOK_LOG_DIR).filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => state_dir(),
    }
}

/// The size past which a log is rotated: `$CAPT_HOOK_LOG_MAX_BYTES`, else 10 MiB (at least
/// 64 KiB, so a typo cannot rotate on every line).
pub fn log_max_bytes() -> u64 {
    std::env::var(CAPT_HOOK_LOG_MAX_BYTES)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(10 * 1024 * 1024)
        .max(64 * 1024)
}

/// The directory holding the socket and its locks: `$XDG_RUNTIME_DIR/captain-hook` when set,
/// else the state directory. Created 0700 by whoever gets there first.
pub fn socket_dir() -> PathBuf {
    match std::env::var_os(XDG_RUNTIME_DIR).filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("captain-hook"),
        None => state_dir(),
    }
}

/// The host socket.
pub fn socket_path() -> PathBuf {
    socket_dir().join(SOCKET_NAME)
}

/// Creates `dir` (and parents) and makes it private (0700). Refuses a symlink or a file, and a
/// directory owned by someone else, since the socket inside is the user's trust boundary.
pub fn ensure_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.file_type().is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is not a real directory",
            dir.display()
        )));
    }
    let me = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    if let Some(uid) = me
        && meta.uid() != uid
    {
        return Err(std::io::Error::other(format!(
            "{} is owned by another user",
            dir.display()
        )));
    }
    if meta.permissions().mode() & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

//! Every per-user directory captain-hook uses, each defined once: the host's socket and state,
//! logs, caches, build outputs, configuration and the install. Client, host, workers, the CLI
//! and doctor all read them from here.

use std::ffi::OsString;
use std::path::PathBuf;

pub use crate::env::{
    CAPT_HOOK_BUILD_DIR, CAPT_HOOK_LOG_MAX_BYTES, CAPTAIN_HOOK_LOG_DIR, HOME, XDG_CACHE_HOME,
    XDG_CONFIG_HOME, XDG_RUNTIME_DIR,
};

/// File name of the host socket.
pub const SOCKET_NAME: &str = "capt-hookd.sock";
/// File name of the host's HTTP socket, beside [`SOCKET_NAME`]: our hooks module (a mod inside
/// Claude Code) posts events to it through Claude Code's own HTTP client.
pub const HTTP_SOCKET_NAME: &str = "capt-hookd-http.sock";
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

/// The directory of the pattern-facts files ([`PATTERN_FACTS`] under the state directory).
pub fn pattern_facts_dir() -> PathBuf {
    state_dir().join(PATTERN_FACTS)
}

/// A variable lookup: the process environment ([`process_var`]) or, in the host, a request's
/// variables.
pub trait Lookup: Fn(&str) -> Option<OsString> {}
impl<F: Fn(&str) -> Option<OsString>> Lookup for F {}

/// The value of `name` in the process environment.
pub fn process_var(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// A directory named by `name` through `env`, when set, non-empty and absolute (the XDG base
/// directory rule: a relative value is ignored).
fn dir_var(env: &impl Lookup, name: &str) -> Option<PathBuf> {
    env(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// The user's home through `env`: `$HOME`, else `/`.
pub fn home_in(env: &impl Lookup) -> PathBuf {
    env(HOME)
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| "/".into())
}

/// The user's home: `$HOME`, else `/`.
pub fn home() -> PathBuf {
    home_in(&process_var)
}

/// Where per-user caches go through `env`: `~/Library/Caches` on macOS, else
/// `$XDG_CACHE_HOME`, else `~/.cache`. Everything captain-hook keeps that it could rebuild
/// (host state, build outputs, pattern facts) lives under `<this>/captain-hook`.
///
/// Written here rather than taken from a directories crate: the host resolves it with a
/// request's variables (`env`), not only its own, and this crate is std-only so the `hook`
/// client links nothing more.
pub fn cache_base_in(env: &impl Lookup) -> PathBuf {
    if cfg!(target_os = "macos") {
        return home_in(env).join("Library").join("Caches");
    }
    dir_var(env, XDG_CACHE_HOME).unwrap_or_else(|| home_in(env).join(".cache"))
}

/// Where user configuration goes for the user whose home is `home`: `$XDG_CONFIG_HOME`, else
/// `~/.config` (the systemd user unit lives under it).
pub fn config_base(home: &std::path::Path) -> PathBuf {
    dir_var(&process_var, XDG_CONFIG_HOME).unwrap_or_else(|| home.join(".config"))
}

/// Where `cargo xtask install` puts captain-hook for the user whose home is `home`:
/// `~/.local/share/captain-hook` (`bin/`, `plugin/`, `sdk/`). Fixed, not `$XDG_DATA_HOME`: the
/// plugin's POSIX fallback and the service definitions name it.
pub fn install_dir(home: &std::path::Path) -> PathBuf {
    home.join(".local").join("share").join("captain-hook")
}

/// File name of the hooks files' JSON Schema in the install directory.
pub const SCHEMA_NAME: &str = "hooks.schema.json";

/// The hooks files' JSON Schema as the install writes it for the user whose home is `home`:
/// `<install dir>/hooks.schema.json`. `capt-hook init` points a new file's `#:schema` line here,
/// so editors (Taplo, Even Better TOML) complete and check it without a network.
pub fn schema_path(home: &std::path::Path) -> PathBuf {
    install_dir(home).join(SCHEMA_NAME)
}

/// The installed binaries for the user whose home is `home`.
pub fn bin_dir(home: &std::path::Path) -> PathBuf {
    install_dir(home).join("bin")
}

/// Where Rust hook projects build, through `env`: `$CAPT_HOOK_BUILD_DIR`, else
/// `<cache base>/captain-hook/rust`.
pub fn build_base_in(env: &impl Lookup) -> PathBuf {
    env(CAPT_HOOK_BUILD_DIR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_base_in(env).join("captain-hook").join("rust"))
}

/// The per-user host state directory (log, worker records, pattern facts):
/// `<cache base>/captain-hook/host-v1`.
pub fn state_dir() -> PathBuf {
    cache_base_in(&process_var)
        .join("captain-hook")
        .join("host-v1")
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

/// The host's HTTP socket, for the mod.
pub fn http_socket_path() -> PathBuf {
    socket_dir().join(HTTP_SOCKET_NAME)
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

#[cfg(test)]
mod dirs_tests {
    use super::*;

    fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl Lookup {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    #[cfg(not(target_os = "macos"))]
    fn caches_follow_xdg_then_home() {
        let env = vars(&[(HOME, "/home/u"), (XDG_CACHE_HOME, "/x/cache")]);
        assert_eq!(cache_base_in(&env), PathBuf::from("/x/cache"));
        assert_eq!(
            build_base_in(&env),
            PathBuf::from("/x/cache/captain-hook/rust")
        );
        // A relative XDG value is ignored, as the base directory rules say.
        let env = vars(&[(HOME, "/home/u"), (XDG_CACHE_HOME, "rel")]);
        assert_eq!(cache_base_in(&env), PathBuf::from("/home/u/.cache"));
        let env = vars(&[(HOME, "/home/u"), (CAPT_HOOK_BUILD_DIR, "/b")]);
        assert_eq!(build_base_in(&env), PathBuf::from("/b"));
        assert_eq!(home_in(&vars(&[])), PathBuf::from("/"));
    }

    #[test]
    fn the_install_is_under_local_share() {
        let home = std::path::Path::new("/home/u");
        assert_eq!(
            bin_dir(home),
            PathBuf::from("/home/u/.local/share/captain-hook/bin")
        );
    }
}

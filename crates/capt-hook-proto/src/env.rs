//! Every environment variable captain-hook reads, declared once: its name, who reads it, its
//! default and what it does. The binaries' own `env` modules re-export these names and keep the
//! parsing next to the code that uses the value; `docs/runtime.md`'s settings table is checked
//! against [`VARS`] by a test. Std only, so the `hook` client can link it.

/// One environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvVar {
    /// The variable's name.
    pub name: &'static str,
    /// Which programs read it.
    pub read_by: &'static str,
    /// The value in effect when it is unset.
    pub default: &'static str,
    /// What it changes.
    pub doc: &'static str,
}

macro_rules! vars {
    ($($(#[doc = $doc:literal])+ $name:ident, read_by: $by:literal, default: $default:literal;)*) => {
        $($(#[doc = $doc])+ pub const $name: &str = stringify!($name);)*

        /// Every variable, in the order of the settings table in `docs/runtime.md`.
        pub const VARS: &[EnvVar] = &[$(EnvVar {
            name: stringify!($name),
            read_by: $by,
            default: $default,
            doc: concat!($($doc),+),
        },)*];
    };
}

vars! {
    /// The project root Claude Code sets for hook commands.
    CLAUDE_PROJECT_DIR, read_by: "hook, capt-hook, workers", default: "the payload's `cwd`";
    /// The project root as Factory's droid sets it; read after `CLAUDE_PROJECT_DIR`.
    FACTORY_PROJECT_DIR, read_by: "hook, capt-hook, workers", default: "unset";
    /// Seconds (a float) the whole attempt to answer one event may take, retries and local
    /// evaluation included.
    CAPT_HOOK_CLIENT_TIMEOUT, read_by: "hook", default: "30";
    /// Root of session and durable state.
    CAPTAIN_HOOK_STATE_DIR, read_by: "capt-hook, workers", default: "`~/.claude/state`";
    /// Directory for log files (the CLI's, session and judge logs); the host's own log stays
    /// in the host state directory.
    CAPTAIN_HOOK_LOG_DIR, read_by: "all", default: "the host state directory";
    /// Bytes past which the host log is rotated (to `capt-hookd.log.1`).
    CAPT_HOOK_LOG_MAX_BYTES, read_by: "capt-hookd", default: "10485760";
    /// The decision ledger (SQLite): one row per verdict a hook delivered.
    CAPT_HOOK_DECISIONS_DB, read_by: "workers, capt-hook", default: "`<state dir>/hooks/decisions.db`";
    /// Set by captain-hook in processes it spawns: their events are logged but never recorded
    /// in the decision ledger.
    CAPT_HOOK_SPAWNED, read_by: "workers", default: "unset";
    /// A `tracing` filter for `capt-hook`'s log.
    CAPT_HOOK_LOG, read_by: "capt-hook", default: "`warn`";
    /// `1` (or `true`, `yes`): `capt-hook run` also runs the packs, as `--packs` does, for harnesses that cannot
    /// add the flag (the behaviour-case runner calls `CMD run <Event>`).
    CAPT_HOOK_RUN_PACKS, read_by: "capt-hook", default: "unset";
    /// Policy pack directories, `:`-separated, loaded before every project's hooks and never
    /// turned off by one (replaces the defaults).
    CAPT_HOOK_POLICY_DIR, read_by: "capt-hook, workers", default: "`/etc/captain-hook/policy` and `~/.config/captain-hook/policy`";
    /// The minisign public key policy packs must be signed with; with one, an unsigned or
    /// altered pack does not load and the calls it guards ask.
    CAPT_HOOK_POLICY_KEY, read_by: "capt-hook, workers", default: "`/etc/captain-hook/policy.pub` when it exists";
    /// A `tracing` filter for the host's log.
    CAPT_HOOKD_LOG, read_by: "capt-hookd", default: "`info`";
    /// Seconds a worker may sit idle before it is retired.
    CAPT_HOOKD_IDLE_SECS, read_by: "capt-hookd", default: "1800";
    /// Most workers kept at once; one more retires the least recently used idle worker.
    CAPT_HOOKD_MAX_WORKERS, read_by: "capt-hookd", default: "16";
    /// Milliseconds between the host's samples of each session's processes, for
    /// ResourcePressure; `0` turns sampling off.
    CAPT_HOOKD_PRESSURE_SAMPLE_MS, read_by: "capt-hookd", default: "2000";
    /// CPU use, in percent of one core, at or over which a session's process is pressing.
    CAPT_HOOKD_PRESSURE_CPU, read_by: "capt-hookd", default: "90";
    /// Resident memory, in MiB, at or over which a session's process is pressing.
    CAPT_HOOKD_PRESSURE_RSS_MB, read_by: "capt-hookd", default: "4096";
    /// Seconds a process must keep pressing before ResourcePressure fires (once per process).
    CAPT_HOOKD_PRESSURE_SECS, read_by: "capt-hookd", default: "120";
    /// The worker binary the host runs.
    CAPT_HOOKD_WORKER, read_by: "capt-hookd", default: "`capt-hook-worker` beside `capt-hookd`";
    /// Comma-separated subagent types that count as planning agents (replaces the list).
    HOOKS_PLANNING_AGENTS, read_by: "capt-hook, workers", default: "Explore, Plan, general-purpose, …";
    /// Comma-separated tools whose pending calls mean the session is waiting (replaces the list).
    HOOKS_WAITING_TOOLS, read_by: "capt-hook, workers", default: "the built-in list";
    /// `false` (or `0`, `no`, `off`) turns off the host's check for a newer release after a
    /// session starts.
    HOOKS_UPDATE_ENABLED, read_by: "capt-hookd", default: "`true`";
    /// Least minutes between two release checks, across all sessions.
    HOOKS_UPDATE_INTERVAL_MINUTES, read_by: "capt-hookd", default: "720";
    /// The release the check reads: a directory (URL, `file://` URL or path) holding
    /// `SHA256SUMS`, `SHA256SUMS.minisig` and `manifest.json`, as `cargo xtask release` writes
    /// it and `install.sh` takes it.
    CAPT_HOOK_UPDATE_URL, read_by: "capt-hookd", default: "the repository's latest GitHub release";
    /// The minisign public key releases must be signed with (a key file, or its base64 line):
    /// `install.sh` verifies what it installs with it, the host's release check what it reads.
    CAPT_HOOK_RELEASE_PUBKEY, read_by: "install.sh, capt-hookd", default: "the key `install.sh` verified the install with (`release.pub` in the install directory)";
    /// Claude Code's switch for traffic it does without; set to anything (`0` included, as
    /// Claude Code reads it) in a session's or the host's environment, it also turns the
    /// host's release check off.
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, read_by: "capt-hookd", default: "unset";
    /// Claude Code's switch for its own updates; set to anything, it also turns the host's
    /// release check off.
    DISABLE_AUTOUPDATER, read_by: "capt-hookd", default: "unset";
    /// `1`, `true` or `yes` adds the `raw` annotation to every event.
    CAPT_HOOK_CCX_RAW, read_by: "capt-hook, workers", default: "unset";
    /// The judge LLM hooks use when a hook names none: `auto` (Jev when `TYPESAFE_API_KEY` is
    /// set, else `claude`), `claude`, `codex`, `command` or `jev`.
    CAPT_HOOK_LLM_BACKEND, read_by: "capt-hook, workers", default: "`auto`";
    /// The `command` judge: a shell command that reads the JSON request on stdin and prints
    /// the verdict.
    CAPT_HOOK_LLM_COMMAND, read_by: "capt-hook, workers", default: "unset";
    /// The `claude` CLI the `claude` judge runs.
    CAPT_HOOK_CLAUDE_BIN, read_by: "capt-hook, workers", default: "`claude` on `PATH`";
    /// The `claude` judge's models for small, medium and large, comma-separated.
    CAPT_HOOK_CLAUDE_MODELS, read_by: "capt-hook, workers", default: "`haiku,sonnet,opus`";
    /// The `codex` CLI the `codex` judge runs.
    CAPT_HOOK_CODEX_BIN, read_by: "capt-hook, workers", default: "`codex` on `PATH`";
    /// The TypeSafe API key; with it, `auto` judges with Jev.
    TYPESAFE_API_KEY, read_by: "capt-hook, workers", default: "unset";
    /// Base URL of the Jev API.
    CAPT_HOOK_JEV_URL, read_by: "capt-hook, workers", default: "`https://api.typesafe.ai`";
    /// Set in a judge's own process tree; LLM hooks evaluated inside it do not judge again.
    CAPT_HOOK_JUDGE, read_by: "capt-hook, workers", default: "unset";
    /// The captain-hook SDK source `capt-hook init --rust` points a hook project at.
    CAPT_HOOK_SDK, read_by: "capt-hook", default: "`sdk/` beside the installed `bin/`";
    /// Where Rust hook projects' builds are cached (one directory per project root).
    CAPT_HOOK_BUILD_DIR, read_by: "capt-hook, capt-hookd, workers", default: "`$XDG_CACHE_HOME/captain-hook/rust`";
    /// The user's cache directory (absolute, else ignored); the host state directory is
    /// `captain-hook/host-v1` under it (`~/Library/Caches` on macOS, which ignores it).
    XDG_CACHE_HOME, read_by: "all", default: "`~/.cache`";
    /// The user's runtime directory; the host socket lives under it when set.
    XDG_RUNTIME_DIR, read_by: "hook, capt-hookd, capt-hook", default: "the host state directory";
    /// The seed of the property tests (`cargo test`): a number, or `random` for a new one each
    /// run (printed, so a failure can be replayed). CI runs the fixed seed.
    CAPT_HOOK_FUZZ_SEED, read_by: "the test suite", default: "a fixed seed";
    /// Multiplies every property test's cases, for a long local run.
    CAPT_HOOK_FUZZ_CASES, read_by: "the test suite", default: "1";
    /// The user's home: the state, log and socket defaults hang off it.
    HOME, read_by: "all", default: "`/`";
    /// The user's configuration directory; `capt-hook helper install` puts the systemd user
    /// unit under `systemd/user/` in it.
    XDG_CONFIG_HOME, read_by: "capt-hook", default: "`~/.config`";
    /// `PATH` given to workers.
    PATH, read_by: "capt-hookd", default: "`/usr/bin:/bin:/usr/sbin:/sbin`";
}

/// The settings table `docs/runtime.md` carries, rendered from [`VARS`].
pub fn markdown_table() -> String {
    let mut out =
        String::from("| variable | read by | default | what it does |\n|---|---|---|---|\n");
    for v in VARS {
        let doc = v.doc.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            v.name, v.read_by, v.default, doc
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_documented() {
        for (i, v) in VARS.iter().enumerate() {
            assert!(!v.doc.trim().is_empty() && !v.default.is_empty(), "{v:?}");
            assert!(VARS[i + 1..].iter().all(|w| w.name != v.name), "{}", v.name);
        }
        assert_eq!(CAPT_HOOK_CLIENT_TIMEOUT, "CAPT_HOOK_CLIENT_TIMEOUT");
    }
}

//! Removal of session directories whose session is long gone (state-cli.md §1.8).

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::paths;

/// Claude Code's configuration directory (default `~/.claude`); transcripts live in its
/// `projects/` folder.
pub const CLAUDE_CONFIG_DIR: &str = "CLAUDE_CONFIG_DIR";
/// Codex's home (default `~/.codex`); its transcripts live in `sessions/`.
pub const CODEX_HOME: &str = "CODEX_HOME";

/// How old (by modification time) a session directory must be before it may be removed.
pub const STALE_AFTER: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Deepest directory level searched for transcripts; Claude Code uses two, Codex four.
const MAX_DEPTH: usize = 8;

/// What a cleanup pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Session directories removed.
    pub removed: Vec<PathBuf>,
    /// Directories old enough but kept because their transcript still exists.
    pub kept: usize,
}

fn env_dir(name: &str, fallback: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => paths::home().join(fallback),
    }
}

/// Claude Code's configuration directory: `$CLAUDE_CONFIG_DIR` when set and non-empty, else
/// `~/.claude` (user settings, the plugin roster, transcripts).
pub fn claude_config_dir() -> PathBuf {
    env_dir(CLAUDE_CONFIG_DIR, ".claude")
}

/// Where transcripts are searched: `$CLAUDE_CONFIG_DIR/projects` (else `~/.claude/projects`)
/// and `$CODEX_HOME/sessions` (else `~/.codex/sessions`).
pub fn default_transcript_roots() -> Vec<PathBuf> {
    vec![
        claude_config_dir().join("projects"),
        env_dir(CODEX_HOME, ".codex").join("sessions"),
    ]
}

/// [`cleanup_stale`] with the state root from the environment, the default transcript roots
/// and the 30-day age. Call it once per session start; it never fails (errors are skipped).
pub fn cleanup_stale_sessions(current_session: Option<&str>) -> CleanupReport {
    cleanup_stale(
        &paths::state_root(),
        current_session,
        &default_transcript_roots(),
        STALE_AFTER,
    )
}

/// Removes `<state_root>/hooks/sessions/<id>` directories that are older than `max_age`, are not
/// `exclude`, and whose transcript (`<id>.jsonl`, or a Codex rollout ending in `-<id>.jsonl`)
/// exists under none of `transcript_roots`. Just before removing, the directory is stat'ed
/// again and skipped if it was replaced or touched meanwhile, so a session that came back to
/// life is never deleted. Symlinks are never followed or removed.
pub fn cleanup_stale(
    state_root: &Path,
    exclude: Option<&str>,
    transcript_roots: &[PathBuf],
    max_age: Duration,
) -> CleanupReport {
    let mut report = CleanupReport::default();
    let Some(cutoff) = SystemTime::now().checked_sub(max_age) else {
        return report;
    };
    let Ok(entries) = std::fs::read_dir(paths::sessions_dir(state_root)) else {
        return report;
    };
    let is_stale = |meta: &std::fs::Metadata| meta.modified().is_ok_and(|m| m < cutoff);

    let mut candidates = Vec::new();
    for entry in entries.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if !meta.is_dir() || !is_stale(&meta) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if Some(name.as_str()) == exclude {
            continue;
        }
        candidates.push((entry.path(), name, meta.dev(), meta.ino()));
    }
    if candidates.is_empty() {
        return report;
    }

    let known = known_session_ids(transcript_roots);
    for (path, name, dev, ino) in candidates {
        if known.contains(&name) {
            report.kept += 1;
            continue;
        }
        let unchanged = path
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir() && m.dev() == dev && m.ino() == ino && is_stale(&m));
        if unchanged && std::fs::remove_dir_all(&path).is_ok() {
            report.removed.push(path);
        }
    }
    report
}

/// Every session id that has a transcript under `roots`: the stem of each `*.jsonl`, plus the
/// trailing uuid of Codex rollout names (`rollout-<timestamp>-<uuid>.jsonl`).
fn known_session_ids(roots: &[PathBuf]) -> HashSet<String> {
    let mut ids = HashSet::new();
    let mut stack: Vec<(PathBuf, usize)> = roots.iter().map(|r| (r.clone(), 0)).collect();
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() {
                if depth < MAX_DEPTH {
                    stack.push((entry.path(), depth + 1));
                }
            } else if let Some(stem) = name.strip_suffix(".jsonl") {
                if stem.len() > 36
                    && let Some(tail) = stem.get(stem.len() - 36..)
                {
                    ids.insert(tail.to_owned());
                }
                ids.insert(stem.to_owned());
            }
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{File, FileTimes};

    fn age(path: &Path, days: u64) {
        let t = SystemTime::now() - Duration::from_secs(days * 86_400);
        File::open(path)
            .unwrap()
            .set_times(FileTimes::new().set_modified(t))
            .unwrap();
    }

    #[test]
    fn removes_only_old_sessions_without_transcripts() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let projects = dir.path().join("projects");
        let codex = dir.path().join("codex");
        let sessions = paths::sessions_dir(&state);
        let uuid = "0123abcd-0000-1111-2222-333344445555";
        for id in ["gone", "alive", "fresh", "current", "codexy", uuid] {
            std::fs::create_dir_all(sessions.join(id).join("hook/main")).unwrap();
        }
        std::fs::create_dir_all(projects.join("-home-me-proj")).unwrap();
        std::fs::write(projects.join("-home-me-proj/alive.jsonl"), "").unwrap();
        std::fs::create_dir_all(codex.join("2026/07/20")).unwrap();
        std::fs::write(
            codex.join(format!(
                "2026/07/20/rollout-2026-07-20T10-00-00-{uuid}.jsonl"
            )),
            "",
        )
        .unwrap();
        std::fs::write(codex.join("2026/07/20/codexy.jsonl"), "").unwrap();
        for id in ["gone", "alive", "current", "codexy", uuid] {
            age(&sessions.join(id), 40);
        }
        std::os::unix::fs::symlink(dir.path(), sessions.join("link")).unwrap();

        let report = cleanup_stale(&state, Some("current"), &[projects, codex], STALE_AFTER);
        assert_eq!(report.removed, vec![sessions.join("gone")]);
        assert_eq!(report.kept, 3);
        for id in ["alive", "fresh", "current", "codexy", uuid, "link"] {
            assert!(
                sessions.join(id).symlink_metadata().is_ok(),
                "{id} was removed"
            );
        }
        assert!(dir.path().join("projects").exists());
    }

    #[test]
    fn missing_state_root_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            cleanup_stale(&dir.path().join("nope"), None, &[], STALE_AFTER),
            CleanupReport::default()
        );
    }
}

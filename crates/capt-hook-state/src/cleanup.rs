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

/// The file in a session directory naming the session's transcript (written at SessionStart
/// by [`note_transcript`]): once that transcript is deleted, the directory goes at the next
/// cleanup, whatever its age.
pub const TRANSCRIPT_NOTE: &str = ".transcript";

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

/// Records in the session's directory (created if need be) which transcript the session writes,
/// so the directory can go as soon as that transcript is deleted. Only an absolute path is
/// recorded; the file is rewritten only when it names another one.
pub fn note_transcript(
    state_root: &Path,
    session_id: &str,
    transcript: &Path,
) -> Result<(), crate::StateError> {
    if !transcript.is_absolute() {
        return Ok(());
    }
    let note = paths::session_dir(state_root, session_id).join(TRANSCRIPT_NOTE);
    let want = transcript.as_os_str().as_encoded_bytes();
    if std::fs::read(&note).is_ok_and(|have| have == want) {
        return Ok(());
    }
    crate::file::write_atomic(&note, want)
}

/// The transcript a session directory's [`TRANSCRIPT_NOTE`] names, when it names an absolute
/// path that no longer exists.
fn transcript_gone(dir: &Path) -> bool {
    let Ok(bytes) = std::fs::read(dir.join(TRANSCRIPT_NOTE)) else {
        return false;
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return false;
    };
    let path = Path::new(&text);
    path.is_absolute() && path.symlink_metadata().is_err()
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

/// Removes `<state_root>/hooks/sessions/<id>` directories other than `exclude` whose session is
/// gone: the transcript their [`TRANSCRIPT_NOTE`] names was deleted (at any age), or, with no
/// note, they are older than `max_age` and their transcript (`<id>.jsonl`, or a Codex rollout
/// ending in `-<id>.jsonl`) exists under none of `transcript_roots`. Just before removing, the
/// directory is stat'ed again and skipped if it was replaced (or, for the age rule, touched)
/// meanwhile, so a session that came back to life is never deleted. Symlinks are never followed
/// or removed.
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

    let mut gone = Vec::new();
    let mut candidates = Vec::new();
    for entry in entries.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        if !meta.is_dir() || Some(name.as_str()) == exclude {
            continue;
        }
        if transcript_gone(&entry.path()) {
            gone.push((entry.path(), meta.dev(), meta.ino()));
        } else if is_stale(&meta) {
            candidates.push((entry.path(), name, meta.dev(), meta.ino()));
        }
    }
    let same = |path: &Path, dev: u64, ino: u64| {
        path.symlink_metadata()
            .is_ok_and(|m| m.is_dir() && m.dev() == dev && m.ino() == ino)
    };
    for (path, dev, ino) in gone {
        if same(&path, dev, ino) && transcript_gone(&path) && std::fs::remove_dir_all(&path).is_ok()
        {
            report.removed.push(path);
        }
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
        let unchanged =
            same(&path, dev, ino) && path.symlink_metadata().is_ok_and(|m| is_stale(&m));
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

    /// A session whose noted transcript is deleted goes at the next cleanup, however young;
    /// one whose transcript is there, or that is the current session, stays.
    #[test]
    fn a_deleted_transcript_takes_its_session_along() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let projects = dir.path().join("projects/-p");
        std::fs::create_dir_all(&projects).unwrap();
        let sessions = paths::sessions_dir(&state);
        for id in ["deleted", "kept", "current"] {
            let transcript = projects.join(format!("{id}.jsonl"));
            std::fs::write(&transcript, "").unwrap();
            note_transcript(&state, id, &transcript).unwrap();
            std::fs::create_dir_all(sessions.join(id).join("hook/main")).unwrap();
        }
        // Noting again is a no-op; a relative path is never noted.
        note_transcript(&state, "kept", &projects.join("kept.jsonl")).unwrap();
        note_transcript(&state, "relative", Path::new("x.jsonl")).unwrap();
        assert!(!sessions.join("relative").exists());
        for id in ["deleted", "current"] {
            std::fs::remove_file(projects.join(format!("{id}.jsonl"))).unwrap();
        }
        let report = cleanup_stale(&state, Some("current"), &[], STALE_AFTER);
        assert_eq!(report.removed, vec![sessions.join("deleted")]);
        assert!(sessions.join("kept/hook/main").is_dir());
        assert!(sessions.join("current/hook/main").is_dir());
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

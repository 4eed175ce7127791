//! Where state lives on disk (`reference/state-cli.md` §1.1) and how names become file names.

use std::path::{Path, PathBuf};

/// The state root's override and the home it defaults under, owned by `capt_hook_proto::env`.
pub use capt_hook_proto::env::{CAPTAIN_HOOK_STATE_DIR, HOME};

/// The agent segment used for the top-level agent.
pub const MAIN_AGENT: &str = "main";

/// `$CAPTAIN_HOOK_STATE_DIR` when set and non-empty, else `~/.claude/state`.
pub fn state_root() -> PathBuf {
    match std::env::var_os(CAPTAIN_HOOK_STATE_DIR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => home().join(".claude").join("state"),
    }
}

pub(crate) fn home() -> PathBuf {
    capt_hook_proto::paths::home()
}

/// `<root>/hooks/sessions`: one directory per Claude Code session.
pub fn sessions_dir(root: &Path) -> PathBuf {
    root.join("hooks").join("sessions")
}

/// `<root>/hooks/sessions/<session_id>`; the id is used verbatim unless it could escape the
/// directory (see [`path_component`]).
pub fn session_dir(root: &Path, session_id: &str) -> PathBuf {
    sessions_dir(root).join(path_component(session_id))
}

/// `<root>/hooks/durable`.
pub fn durable_dir(root: &Path) -> PathBuf {
    root.join("hooks").join("durable")
}

/// The agent segment of a per-hook directory: the agent id, or `main` when absent or empty.
pub fn agent_segment(agent_id: Option<&str>) -> String {
    match agent_id {
        Some(id) if !id.is_empty() => path_component(id),
        _ => MAIN_AGENT.to_owned(),
    }
}

/// Makes `name` safe as one path component. Ordinary ids (uuids, hex, hook names) come back
/// unchanged; a separator, NUL, or a name of only dots is replaced, because ids come from
/// payloads and must never point outside the state directory.
pub fn path_component(name: &str) -> String {
    if name.is_empty() {
        return "_".to_owned();
    }
    if name.chars().all(|c| c == '.') {
        return name.replace('.', "_");
    }
    name.chars()
        .map(|c| match c {
            '/' | '\\' | '\0' => '_',
            c => c,
        })
        .collect()
}

/// The snake-case file stem of a model type: an underscore before every uppercase letter but the
/// first character, then everything lowercased (`ReviewState` → `review_state`, `HTTPState` →
/// `h_t_t_p_state`). Module path and generic arguments are ignored.
pub fn model_key_of(type_name: &str) -> String {
    let base = type_name.split('<').next().unwrap_or(type_name);
    let short = base.rsplit("::").next().unwrap_or(base);
    let mut out = String::with_capacity(short.len() + 4);
    for (i, c) in short.chars().enumerate() {
        if i > 0 && c.is_uppercase() {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// The model key of `T` (see [`model_key_of`]).
pub fn model_key<T: ?Sized>() -> String {
    model_key_of(std::any::type_name::<T>())
}

/// The short type name of `T` (`ReviewState`), as `tracked_paths` reports it.
pub fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

/// `<basename of repo_root>-<first 16 hex of blake3(resolved repo_root)>`. The basename comes
/// from the path as given and the hash from the resolved path, so a symlinked checkout shares
/// its target's state while still reading well in a directory listing.
pub fn project_key(repo_root: &Path) -> String {
    let resolved = std::fs::canonicalize(repo_root).unwrap_or_else(|_| absolute(repo_root));
    let hash = blake3::hash(resolved.to_string_lossy().as_bytes());
    let hex = hash.to_hex();
    let base = repo_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".to_owned());
    format!("{}-{}", path_component(&base), &hex.as_str()[..16])
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The nearest ancestor of `start` (itself included) holding a `.git` entry, the way
/// `git rev-parse --show-toplevel` finds a work tree, without running git.
pub fn find_repo_root(start: &Path) -> Option<PathBuf> {
    let start = absolute(start);
    start
        .ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct ReviewState;
    #[allow(clippy::upper_case_acronyms)]
    struct HTTPState;

    #[test]
    fn model_keys_are_snake_case_of_the_short_name() {
        assert_eq!(model_key::<ReviewState>(), "review_state");
        assert_eq!(model_key::<HTTPState>(), "h_t_t_p_state");
        assert_eq!(model_key_of("a::b::MyCustomModel"), "my_custom_model");
        assert_eq!(model_key_of("x::Wrapper<y::Inner>"), "wrapper");
        assert_eq!(short_type_name::<ReviewState>(), "ReviewState");
    }

    #[test]
    fn components_cannot_escape() {
        assert_eq!(path_component("abc-123"), "abc-123");
        assert_eq!(path_component("../x"), ".._x");
        assert_eq!(path_component(".."), "__");
        assert_eq!(path_component(""), "_");
        assert_eq!(agent_segment(None), "main");
        assert_eq!(agent_segment(Some("")), "main");
        assert_eq!(agent_segment(Some("a1")), "a1");
    }

    #[test]
    fn project_key_is_basename_and_16_hex() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("myrepo");
        std::fs::create_dir(&repo).unwrap();
        let key = project_key(&repo);
        let (name, hex) = key.rsplit_once('-').unwrap();
        assert_eq!(name, "myrepo");
        assert_eq!(hex.len(), 16);
        assert!(
            hex.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        // A symlink to the same checkout shares the hash.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&repo, &link).unwrap();
        assert!(project_key(&link).ends_with(hex));
    }

    #[test]
    fn repo_root_is_the_nearest_git_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("r/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("r/a/b")).unwrap();
        assert_eq!(
            find_repo_root(&dir.path().join("r/a/b")).unwrap(),
            dir.path().join("r")
        );
    }
}

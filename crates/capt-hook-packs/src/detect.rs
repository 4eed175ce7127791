//! Language packs turn on when the repository holds their build manifest somewhere. One bounded,
//! breadth-first walk answers every pack: shallow manifests are found first, VCS metadata,
//! hidden and dependency directories and the root `.gitignore`'s entries are never entered, and
//! the walk gives up after a fixed number of entries, so a huge tree costs a bounded start-up.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use capt_hook_core::paths::Gitignore;

/// Directory entries the walk looks at before it stops.
const MAX_ENTRIES: usize = 20_000;
/// How deep below the root it looks.
const MAX_DEPTH: usize = 8;
/// Directories that hold other people's code or build output, never the project's manifests.
const PRUNED: &[&str] = &[
    "node_modules",
    "target",
    "vendor",
    "venv",
    "__pycache__",
    "dist",
    "build",
];

/// For each of `names` found under `root`, the first path (relative to the root) that has it.
pub fn find_manifests(root: &Path, names: &[&str]) -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    if names.is_empty() {
        return found;
    }
    let ignore = Gitignore::load(root);
    let mut queue = VecDeque::from([(PathBuf::new(), 0usize)]);
    let mut seen = 0usize;
    while let Some((rel, depth)) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                tracing::debug!(root = %root.display(), "manifest search stopped at its entry cap");
                return found;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = rel.join(&name);
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                let skip = name.starts_with('.')
                    || PRUNED.contains(&name.as_str())
                    || ignore.is_ignored(&path.to_string_lossy());
                if !skip && depth + 1 < MAX_DEPTH {
                    queue.push_back((path, depth + 1));
                }
            } else if names.contains(&name.as_str()) && !found.contains_key(&name) {
                if ignore.is_ignored(&path.to_string_lossy()) {
                    continue;
                }
                found.insert(name, path);
                if found.len() == names.len() {
                    return found;
                }
            }
        }
    }
    found
}

/// The first of `names` found in the git directory of the repository holding `root` (the
/// common one, for a linked worktree: tools keep repository-wide settings there), searched
/// from `root` up. `None` outside a git repository.
pub fn find_git_marker(root: &Path, names: &[&str]) -> Option<PathBuf> {
    let git = root
        .ancestors()
        .map(|a| a.join(".git"))
        .find(|g| g.exists())?;
    let dir = if git.is_file() {
        // A worktree's `.git` file: `gitdir: <path>`, relative to the worktree.
        let text = std::fs::read_to_string(&git).ok()?;
        let pointer = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
        match git.parent() {
            Some(parent) if pointer.is_relative() => parent.join(pointer),
            _ => pointer,
        }
    } else {
        git
    };
    let common = match std::fs::read_to_string(dir.join("commondir")) {
        Ok(rel) => dir.join(rel.trim()),
        Err(_) => dir,
    };
    names.iter().map(|n| common.join(n)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_manifests_and_skips_ignored_hidden_and_dependency_trees() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let touch = |p: &str| {
            let p = root.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        };
        touch("services/api/go.mod");
        touch("node_modules/pkg/pyproject.toml");
        touch(".venv/lib/pyproject.toml");
        touch("third_party/x/Cargo.toml");
        std::fs::write(root.join(".gitignore"), "third_party/\n").unwrap();
        let found = find_manifests(root, &["go.mod", "pyproject.toml", "Cargo.toml"]);
        assert_eq!(
            found.get("go.mod").map(|p| p.as_path()),
            Some(Path::new("services/api/go.mod"))
        );
        assert!(!found.contains_key("pyproject.toml"), "{found:?}");
        assert!(!found.contains_key("Cargo.toml"), "{found:?}");
        touch("tools/pyproject.toml");
        assert!(find_manifests(root, &["pyproject.toml"]).contains_key("pyproject.toml"));
    }

    #[test]
    fn git_markers_are_read_from_the_common_git_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("main");
        std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        std::fs::create_dir_all(main.join("sub")).unwrap();
        assert_eq!(
            find_git_marker(&main.join("sub"), &[".graphite_repo_config"]),
            None
        );
        std::fs::write(main.join(".git/.graphite_repo_config"), "{}").unwrap();
        let marker = main.join(".git/.graphite_repo_config");
        assert_eq!(
            find_git_marker(&main.join("sub"), &[".graphite_repo_config"]),
            Some(marker.clone())
        );
        // A linked worktree points at its own git dir, whose commondir is the main one.
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", main.join(".git/worktrees/wt").display()),
        )
        .unwrap();
        std::fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        let found = find_git_marker(&wt, &[".graphite_repo_config"]).unwrap();
        assert_eq!(
            found.canonicalize().unwrap(),
            marker.canonicalize().unwrap()
        );
        assert_eq!(
            find_git_marker(tmp.path(), &[".graphite_repo_config"]),
            None
        );
    }
}

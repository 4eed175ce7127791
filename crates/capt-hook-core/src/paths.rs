//! Project membership and `.gitignore` opt-outs for the files events touch.

use std::path::{Component, Path, PathBuf};

use crate::glob::Glob;

/// Resolves symlinks in the longest existing prefix of `path` and normalises the rest, the way
/// Python's `os.path.realpath` treats paths that do not exist yet.
pub fn realpath(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let mut tail = Vec::new();
    let mut cur = path.to_path_buf();
    loop {
        if let Ok(base) = cur.canonicalize() {
            let mut out = base;
            for part in tail.iter().rev() {
                out.push(part);
            }
            return normalise(&out);
        }
        match (cur.file_name().map(|n| n.to_os_string()), cur.parent()) {
            (Some(name), Some(parent)) => {
                tail.push(name);
                cur = parent.to_path_buf();
            }
            _ => return normalise(path),
        }
    }
}

fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// True when `file` belongs to the project: relative paths and unknown roots always do; an
/// absolute path does when its real path lies under the root's.
pub fn is_project_path(file: &str, root: Option<&Path>) -> bool {
    let path = Path::new(file);
    if !path.is_absolute() {
        return true;
    }
    let Some(root) = root else {
        return true;
    };
    realpath(path).starts_with(realpath(root))
}

/// The patterns of a project's top-level `.gitignore`, read as fnmatch globs.
#[derive(Debug, Clone, Default)]
pub struct Gitignore {
    root: Option<PathBuf>,
    globs: Vec<Glob>,
}

impl Gitignore {
    /// Reads `<root>/.gitignore`; a missing or unreadable file ignores nothing.
    pub fn load(root: &Path) -> Gitignore {
        let text = std::fs::read_to_string(root.join(".gitignore")).unwrap_or_default();
        let globs = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| Glob::new(l.trim_end_matches('/')))
            .collect();
        Gitignore {
            root: Some(realpath(root)),
            globs,
        }
    }

    /// True when a pattern matches the file's basename or one component of its path relative to
    /// the root. Files outside the root are never ignored.
    pub fn is_ignored(&self, file: &str) -> bool {
        if self.globs.is_empty() {
            return false;
        }
        let path = Path::new(file);
        let relative: PathBuf = if path.is_absolute() {
            let Some(root) = &self.root else {
                return false;
            };
            match realpath(path).strip_prefix(root) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) => return false,
            }
        } else {
            normalise(path)
        };
        relative.components().any(|c| match c {
            Component::Normal(part) => {
                let part = part.to_string_lossy();
                self.globs.iter().any(|g| g.is_match(&part))
            }
            _ => false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_membership() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(is_project_path("rel/x.py", Some(root)));
        assert!(is_project_path("/anything", None));
        let inside = root.join("src/new.py");
        assert!(is_project_path(inside.to_str().unwrap(), Some(root)));
        assert!(!is_project_path("/etc/passwd", Some(root)));
        let sneaky = format!("{}/../outside.py", root.display());
        assert!(!is_project_path(&sneaky, Some(root)));
    }

    #[test]
    fn gitignore_matches_components_relative_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "# comment\nbuild/\n*.log\ntmp\n").unwrap();
        let gi = Gitignore::load(root);
        let p = |rel: &str| format!("{}/{rel}", root.display());
        assert!(gi.is_ignored(&p("build/out.txt")));
        assert!(gi.is_ignored(&p("a/b/debug.log")));
        assert!(!gi.is_ignored(&p("src/main.rs")));
        assert!(!gi.is_ignored("/tmp/elsewhere.txt"));
        assert!(gi.is_ignored("build/x"));
    }
}

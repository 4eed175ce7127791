//! Which files decide a hook project's build, their content hash (names a build) and their
//! stat fingerprint (tells a running worker, cheaply, that they changed).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Files at the top of the package that feed the build; the TOML hook files beside them do
/// not (the worker loads those at run time).
const TOP_FILES: [&str; 3] = ["Cargo.toml", "Cargo.lock", "build.rs"];
/// Directories whose every file feeds the build.
const SOURCE_DIRS: [&str; 1] = ["src"];

/// The source files of the package at `dir`, sorted, as paths relative to `dir`.
pub fn sources(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = TOP_FILES
        .iter()
        .map(PathBuf::from)
        .filter(|f| dir.join(f).is_file())
        .collect();
    for sub in SOURCE_DIRS {
        walk(dir, Path::new(sub), &mut out)?;
    }
    out.sort();
    Ok(out)
}

fn walk(base: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(base.join(rel)) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let path = rel.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(base, &path, out)?;
        } else if kind.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// The hash that names a build: every source file's path and bytes, and the SDK's identity.
pub fn source_hash(dir: &Path, sdk_id: &str) -> std::io::Result<String> {
    let mut h = blake3::Hasher::new();
    h.update(sdk_id.as_bytes());
    h.update(&[0]);
    for rel in sources(dir)? {
        let bytes = std::fs::read(dir.join(&rel))?;
        h.update(rel.to_string_lossy().as_bytes());
        h.update(&[0]);
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize().to_hex()[..32].to_owned())
}

/// Path, modification time and length of each source file: a few `stat` calls.
pub type Fingerprint = Vec<(PathBuf, Option<SystemTime>, u64)>;

/// The sources' stat fingerprint; an unreadable directory gives an empty one.
pub fn fingerprint(dir: &Path) -> Fingerprint {
    sources(dir)
        .unwrap_or_default()
        .into_iter()
        .map(|rel| {
            let meta = std::fs::metadata(dir.join(&rel)).ok();
            let modified = meta.as_ref().and_then(|m| m.modified().ok());
            (rel, modified, meta.map(|m| m.len()).unwrap_or(0))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_the_manifest_lock_and_src_tree_not_hook_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("src/hooks")).unwrap();
        std::fs::write(d.join("Cargo.toml"), "[package]").unwrap();
        std::fs::write(d.join("guards.toml"), "[[hook]]").unwrap();
        std::fs::write(d.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(d.join("src/hooks/a.rs"), "").unwrap();
        let got = sources(d).unwrap();
        let want: Vec<PathBuf> = ["Cargo.toml", "src/hooks/a.rs", "src/main.rs"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(got, want);

        let before = source_hash(d, "sdk").unwrap();
        assert_eq!(before, source_hash(d, "sdk").unwrap());
        assert_ne!(before, source_hash(d, "other sdk").unwrap());
        std::fs::write(d.join("guards.toml"), "[[hook]]\nkind = 1").unwrap();
        assert_eq!(
            before,
            source_hash(d, "sdk").unwrap(),
            "hook files are not sources"
        );
        let fp = fingerprint(d);
        std::fs::write(d.join("src/main.rs"), "fn main() { }").unwrap();
        assert_ne!(before, source_hash(d, "sdk").unwrap());
        assert_ne!(fp, fingerprint(d), "a longer file changes the fingerprint");
    }
}

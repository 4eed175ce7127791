//! Where a root's builds live and which one the host may run.
//!
//! Layout under the cache base: `target/` (cargo's, shared by every project so the SDK and its
//! dependencies compile once) with `target.lock` (held while cargo runs and its binary is
//! copied out, since every project's binary has the same name there); then one directory per
//! project root holding `builds/<hash>/capt-hook-project-worker` (a finished build),
//! `builds/<hash>/failed` (why the build of that hash failed or why its binary was retired),
//! `build.lock` (held by the one build running for the root) and `build.log` (the last
//! background build's output).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::{WORKER_BIN, crate_dir, sdk_id, source_hash};

/// One root's build cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    /// The cache base, shared by every root.
    pub base: PathBuf,
    /// The cache directory of this root.
    pub dir: PathBuf,
}

impl Cache {
    /// The cache of `root`, with variables read through `env` (the host passes the request's
    /// semantic environment): [`capt_hook_proto::paths::build_base_in`], then a directory named by
    /// the root's hash.
    pub fn for_root(root: &Path, env: impl Fn(&str) -> Option<String>) -> Cache {
        let base = capt_hook_proto::paths::build_base_in(&|name: &str| env(name).map(Into::into));
        let key = blake3::hash(root.as_os_str().as_encoded_bytes()).to_hex();
        Cache {
            dir: base.join(&key[..16]),
            base,
        }
    }

    /// The build directory of a hash.
    fn build_dir(&self, hash: &str) -> PathBuf {
        self.dir.join("builds").join(hash)
    }

    /// The worker binary of a hash (it may not exist).
    pub fn exe(&self, hash: &str) -> PathBuf {
        self.build_dir(hash).join(WORKER_BIN)
    }

    /// Why the build of `hash` failed or its binary was retired, if it did or was.
    pub fn failure(&self, hash: &str) -> Option<String> {
        std::fs::read_to_string(self.build_dir(hash).join("failed")).ok()
    }

    /// Records that the build of `hash` failed (or that its binary cannot serve), so the host
    /// neither runs it nor rebuilds the same sources in a loop.
    pub fn record_failure(&self, hash: &str, why: &str) -> std::io::Result<()> {
        let dir = self.build_dir(hash);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("failed"), why)
    }

    /// Cargo's target directory, shared by every root.
    pub fn target_dir(&self) -> PathBuf {
        self.base.join("target")
    }

    /// Waits for and takes the shared target directory: held while cargo runs and the binary
    /// is copied out of it.
    pub fn lock_target(&self) -> std::io::Result<File> {
        let f = lock_file(&self.base, "target.lock")?;
        f.lock()?;
        Ok(f)
    }

    /// The log of the last background build.
    pub fn log(&self) -> PathBuf {
        self.dir.join("build.log")
    }

    /// Takes the root's build lock without waiting; `None` when another build holds it.
    pub fn try_lock(&self) -> std::io::Result<Option<File>> {
        let f = lock_file(&self.dir, "build.lock")?;
        match f.try_lock() {
            Ok(()) => Ok(Some(f)),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// Waits for and takes the root's build lock.
    pub fn lock(&self) -> std::io::Result<File> {
        let f = lock_file(&self.dir, "build.lock")?;
        f.lock()?;
        Ok(f)
    }

    /// True when a build of this root is running now (someone holds its lock).
    pub fn building(&self) -> bool {
        matches!(self.try_lock(), Ok(None))
    }

    /// Installs a finished binary as the build of `hash` (copy, then rename into place, so a
    /// reader never sees half a file) and clears any failure recorded for it.
    pub fn install(&self, hash: &str, built: &Path) -> std::io::Result<PathBuf> {
        let dir = self.build_dir(hash);
        std::fs::create_dir_all(&dir)?;
        let tmp = dir.join(format!(".{WORKER_BIN}.tmp"));
        std::fs::copy(built, &tmp)?;
        let exe = self.exe(hash);
        std::fs::rename(&tmp, &exe)?;
        let _ = std::fs::remove_file(dir.join("failed"));
        Ok(exe)
    }
}

/// Opens (creating it and its directory) a lock file; taking the lock is the caller's.
fn lock_file(dir: &Path, name: &str) -> std::io::Result<File> {
    std::fs::create_dir_all(dir)?;
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(name))
}

/// Looks a variable up in a request's environment, then this process's: how the host and the
/// client's fallback resolve the cache and SDK for the session that sent an event.
pub fn request_env(env: &BTreeMap<String, String>) -> impl Fn(&str) -> Option<String> + '_ {
    |name| env.get(name).cloned().or_else(|| std::env::var(name).ok())
}

/// Which worker a root gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// The root has no Rust hook project: the stock worker.
    Stock,
    /// The project's build for its current sources.
    Project {
        /// The binary.
        exe: PathBuf,
        /// The source hash it was built from.
        hash: String,
    },
    /// The project's Rust hooks cannot run now: the stock worker serves the TOML hooks and
    /// each session is told `note` once.
    NotLive {
        /// Why, in a sentence for the user.
        note: String,
        /// The sources' hash, when they could be read.
        hash: Option<String>,
        /// A background build would help (no build of these sources failed yet, none running).
        build: bool,
    },
}

impl Selection {
    /// The project's build to run, `None` for the stock worker.
    pub fn exe(&self) -> Option<&Path> {
        match self {
            Selection::Project { exe, .. } => Some(exe),
            _ => None,
        }
    }

    /// The source hash of the project's build that would run.
    pub fn project_hash(&self) -> Option<&str> {
        match self {
            Selection::Project { hash, .. } => Some(hash),
            _ => None,
        }
    }

    /// What each session the stock worker serves in the project's place is told once.
    pub fn note(&self) -> Option<&str> {
        match self {
            Selection::NotLive { note, .. } => Some(note),
            _ => None,
        }
    }

    /// A background build should start.
    pub fn wants_build(&self) -> bool {
        matches!(self, Selection::NotLive { build: true, .. })
    }
}

/// Picks the worker for `root`: reads the sources and hashes them, so it runs when a worker
/// starts, never per event.
pub fn select(root: &Path, sdk: Option<&Path>, env: impl Fn(&str) -> Option<String>) -> Selection {
    let dir = crate_dir(root);
    if !dir.join("Cargo.toml").is_file() {
        return Selection::Stock;
    }
    let cache = Cache::for_root(root, env);
    let hash = match source_hash(&dir, &sdk_id(sdk)) {
        Ok(h) => h,
        Err(e) => {
            return Selection::NotLive {
                note: format!(
                    "captain-hook: the Rust hooks in {} are not live: their sources cannot be \
                     read ({e}); only the TOML hooks run",
                    dir.display()
                ),
                hash: None,
                build: false,
            };
        }
    };
    if let Some(why) = cache.failure(&hash) {
        return Selection::NotLive {
            note: format!(
                "captain-hook: the Rust hooks in {} are not live: {}; only the TOML hooks run \
                 (fix the sources, or run `capt-hook build` to see the errors)",
                dir.display(),
                first_line(&why)
            ),
            hash: Some(hash),
            build: false,
        };
    }
    let exe = cache.exe(&hash);
    if exe.is_file() {
        return Selection::Project { exe, hash };
    }
    Selection::NotLive {
        note: stale_note(&dir),
        hash: Some(hash),
        build: !cache.building(),
    }
}

/// What `capt-hook run` (no host, so no background build) says when the Rust hooks' sources
/// are newer than their build.
pub fn unbuilt_note(dir: &Path) -> String {
    format!(
        "captain-hook: the Rust hooks in {} are not live: their sources changed since the last \
         build (or were never built); run `capt-hook build`; only the TOML hooks run until then",
        dir.display()
    )
}

/// What a session is told when the Rust hooks' sources are newer than their build.
pub fn stale_note(dir: &Path) -> String {
    format!(
        "captain-hook: the Rust hooks in {} are not live: their sources changed since the last \
         build (or were never built); a background build has started and they go live when it \
         lands; only the TOML hooks run until then",
        dir.display()
    )
}

/// The first non-empty line of a failure record, for a one-line note.
fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("its last build failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, tempfile::TempDir) {
        let root = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let dir = crate_dir(root.path());
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
        std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
        (root, cache)
    }

    #[test]
    fn selection_follows_the_cache() {
        let (root, cache_dir) = project();
        let env = |d: PathBuf| {
            move |n: &str| {
                (n == capt_hook_proto::env::CAPT_HOOK_BUILD_DIR).then(|| d.display().to_string())
            }
        };
        let env = env(cache_dir.path().to_path_buf());
        let plain = tempfile::tempdir().unwrap();
        assert_eq!(select(plain.path(), None, &env), Selection::Stock);

        // Never built: not live, and a build is wanted.
        let Selection::NotLive {
            hash: Some(hash),
            build: true,
            note,
        } = select(root.path(), None, &env)
        else {
            panic!("expected a wanted build");
        };
        assert!(note.contains("background build"), "{note}");

        // Built: the project's binary.
        let cache = Cache::for_root(root.path(), &env);
        let built = root.path().join("bin");
        std::fs::write(&built, "binary").unwrap();
        let exe = cache.install(&hash, &built).unwrap();
        assert_eq!(
            select(root.path(), None, &env),
            Selection::Project {
                exe: exe.clone(),
                hash: hash.clone()
            }
        );

        // A recorded failure wins over the binary, and asks for no build of the same sources.
        cache
            .record_failure(&hash, "error[E0308]: mismatched types\n  --> src/main.rs")
            .unwrap();
        let Selection::NotLive {
            build: false, note, ..
        } = select(root.path(), None, &env)
        else {
            panic!("expected a failed build");
        };
        assert!(note.contains("mismatched types"), "{note}");

        // Edited sources: a new hash, not live, build wanted again.
        std::fs::write(
            crate_dir(root.path()).join("src/main.rs"),
            "fn main() { }\n",
        )
        .unwrap();
        assert!(matches!(
            select(root.path(), None, &env),
            Selection::NotLive { build: true, .. }
        ));

        // While a build holds the lock, no second one is wanted.
        let _lock = cache.try_lock().unwrap().unwrap();
        assert!(cache.try_lock().unwrap().is_none());
        assert!(matches!(
            select(root.path(), None, &env),
            Selection::NotLive { build: false, .. }
        ));
    }
}

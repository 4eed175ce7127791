//! The SDK's prebuilt dependencies: a release ships, inside the installed SDK (`sdk/prebuilt/`),
//! the registry crates the SDK depends on compiled as `capt-hook build` compiles them (the
//! scaffold's release profile, the SDK's `Cargo.lock`), together with the `rustc -vV` of the
//! compiler that built them. A first build whose shared target directory is still empty starts
//! from a copy of them when the user's `rustc -vV` is the same, so only the SDK's own crates and
//! the project compile; otherwise cargo compiles everything, and the caller says why.
//!
//! Only registry crates are shipped: cargo names their outputs by a hash of the package,
//! version, features, profile and compiler, never of where the target directory or the user's
//! home is, so the copy is fresh to cargo in any home. The SDK's own crates are path
//! dependencies, whose names hash their absolute path: those would never match and are left
//! out.

use std::path::{Path, PathBuf};

/// The prebuilt dependencies' directory inside the SDK.
pub const PREBUILT: &str = "prebuilt";
/// In it: the `rustc -vV` output of the compiler that built them.
pub const RUSTC_STAMP: &str = "rustc-vV.txt";
/// In it: the target directory's part to copy (`release/` as cargo lays it out).
pub const PROFILE_DIR: &str = "release";

/// What [`seed_target`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seed {
    /// The prebuilt dependencies were copied into the target directory.
    Seeded {
        /// The compiler they were built with (`rustc -vV`'s first line).
        rustc: String,
        /// Files copied.
        files: usize,
    },
    /// The target directory already holds a build: nothing to do.
    AlreadyBuilt,
    /// The SDK ships no prebuilt dependencies (an install from a checkout).
    None,
    /// They were built by another compiler than the user's: not used.
    OtherCompiler {
        /// Theirs (`rustc -vV`'s first line).
        prebuilt: String,
        /// The user's.
        local: String,
    },
}

impl Seed {
    /// What to tell the user, when there is anything to tell: a first build is minutes longer
    /// without them, and the user should know why.
    pub fn note(&self) -> Option<String> {
        match self {
            Seed::Seeded { rustc, files } => Some(format!(
                "started from the SDK's prebuilt dependencies ({files} files, built by {rustc})"
            )),
            Seed::AlreadyBuilt => None,
            Seed::None => Some(
                "the SDK has no prebuilt dependencies (an install from a checkout): this first \
                 build compiles them (minutes, once)"
                    .to_owned(),
            ),
            Seed::OtherCompiler { prebuilt, local } => Some(format!(
                "the SDK's prebuilt dependencies were built by {prebuilt}, this is {local}: \
                 this first build compiles them (minutes, once); a release for this compiler, \
                 or `rustup toolchain install` of that one, avoids it"
            )),
        }
    }
}

/// The first line of a `rustc -vV` output (`rustc 1.90.0 (hash date)`), for messages.
fn first_line(vv: &str) -> String {
    vv.lines().next().unwrap_or_default().trim().to_owned()
}

/// Copies the prebuilt dependencies in `sdk`'s [`PREBUILT`] into `target` (cargo's target
/// directory) when `target` holds no build yet and `local_rustc` (the user's `rustc -vV`) is
/// the one that built them. Run with the target directory's lock held.
pub fn seed_target(sdk: &Path, target: &Path, local_rustc: &str) -> std::io::Result<Seed> {
    if target.join(PROFILE_DIR).exists() {
        return Ok(Seed::AlreadyBuilt);
    }
    let prebuilt = sdk.join(PREBUILT);
    let Ok(stamp) = std::fs::read_to_string(prebuilt.join(RUSTC_STAMP)) else {
        return Ok(Seed::None);
    };
    // The whole `-vV` (commit hash, host, LLVM): a nightly of the same version number is
    // another compiler.
    if stamp.trim() != local_rustc.trim() {
        return Ok(Seed::OtherCompiler {
            prebuilt: first_line(&stamp),
            local: first_line(local_rustc),
        });
    }
    // Into a temporary directory renamed into place, so a copy cut short never looks like a
    // build to the next one.
    let partial = target.join(format!(".{PROFILE_DIR}.seeding"));
    if partial.exists() {
        std::fs::remove_dir_all(&partial)?;
    }
    let files = copy_tree(&prebuilt.join(PROFILE_DIR), &partial)?;
    std::fs::rename(&partial, target.join(PROFILE_DIR))?;
    Ok(Seed::Seeded {
        rustc: first_line(&stamp),
        files,
    })
}

/// Copies the files under `from` into `to` (made), returning how many, every copy with one and
/// the same modification time. Cargo takes a crate as rebuilt when one of its dependencies'
/// outputs is newer than its own; copies timed in the order they were made would look so at
/// random and recompile most of the tree. Registry crates' sources are not compared by time.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(to)?;
    let stamp = std::time::SystemTime::now();
    let mut n = 0;
    let mut stack: Vec<(PathBuf, PathBuf)> = vec![(from.to_path_buf(), to.to_path_buf())];
    while let Some((src, dst)) = stack.pop() {
        for entry in std::fs::read_dir(&src)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let target = dst.join(entry.file_name());
            if kind.is_dir() {
                std::fs::create_dir_all(&target)?;
                stack.push((entry.path(), target));
            } else if kind.is_file() {
                std::fs::copy(entry.path(), &target)?;
                std::fs::File::options()
                    .write(true)
                    .open(&target)?
                    .set_modified(stamp)?;
                n += 1;
            }
            // A symlink is not ours to follow: a shipped tree has none.
        }
    }
    Ok(n)
}

/// The file and directory names in a target directory's `release/{deps,build,.fingerprint}`
/// that belong to `crates` (package names; cargo writes `lib<name_with_underscores>-<hash>.*`
/// in `deps/` and `<package-name>-<hash>` in `build/` and `.fingerprint/`). What a release
/// strips from the tree it ships, since path crates never match elsewhere.
pub fn belongs_to(name: &str, crates: &[&str]) -> bool {
    let stem = name.strip_prefix("lib").unwrap_or(name);
    crates.iter().any(|c| {
        let under = c.replace('-', "_");
        [name, stem].iter().any(|n| {
            [*c, under.as_str()]
                .iter()
                .any(|p| n.strip_prefix(p).is_some_and(|rest| rest.starts_with('-')))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sdk_with(dir: &Path, stamp: &str) -> PathBuf {
        let sdk = dir.join("sdk");
        let deps = sdk.join(PREBUILT).join(PROFILE_DIR).join("deps");
        std::fs::create_dir_all(&deps).unwrap();
        std::fs::write(deps.join("libserde-0123.rlib"), b"rlib").unwrap();
        std::fs::write(deps.join("serde-0123.d"), b"dep-info").unwrap();
        std::fs::write(sdk.join(PREBUILT).join(RUSTC_STAMP), stamp).unwrap();
        sdk
    }

    const VV: &str =
        "rustc 1.90.0 (1159e78c4 2025-09-14)\nbinary: rustc\nhost: x86_64-unknown-linux-gnu\n";

    #[test]
    fn the_same_compiler_starts_from_the_prebuilt_tree() {
        let dir = tempfile::tempdir().unwrap();
        let sdk = sdk_with(dir.path(), VV);
        let target = dir.path().join("target");
        let seed = seed_target(&sdk, &target, VV).unwrap();
        assert_eq!(
            seed,
            Seed::Seeded {
                rustc: "rustc 1.90.0 (1159e78c4 2025-09-14)".into(),
                files: 2
            }
        );
        assert!(seed.note().unwrap().contains("prebuilt"));
        assert_eq!(
            std::fs::read(target.join("release/deps/libserde-0123.rlib")).unwrap(),
            b"rlib"
        );
        assert!(!target.join(".release.seeding").exists());
        let mtime = |rel: &str| {
            std::fs::metadata(target.join(rel))
                .unwrap()
                .modified()
                .unwrap()
        };
        assert_eq!(
            mtime("release/deps/libserde-0123.rlib"),
            mtime("release/deps/serde-0123.d"),
            "one time for every copy, so no dependency looks rebuilt"
        );
        // A second build finds its own tree and leaves it alone.
        std::fs::write(target.join("release/deps/libserde-0123.rlib"), b"rebuilt").unwrap();
        assert_eq!(seed_target(&sdk, &target, VV).unwrap(), Seed::AlreadyBuilt);
        assert_eq!(
            std::fs::read(target.join("release/deps/libserde-0123.rlib")).unwrap(),
            b"rebuilt"
        );
    }

    #[test]
    fn another_compiler_or_no_prebuilt_tree_is_said_and_copies_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let sdk = sdk_with(dir.path(), VV);
        let target = dir.path().join("target");
        let other = VV.replace("1159e78c4", "0000000aa");
        let seed = seed_target(&sdk, &target, &other).unwrap();
        assert!(matches!(seed, Seed::OtherCompiler { .. }), "{seed:?}");
        let note = seed.note().unwrap();
        assert!(
            note.contains("built by rustc 1.90.0 (1159e78c4") && note.contains("0000000aa"),
            "{note}"
        );
        assert!(!target.exists(), "nothing copied");
        let bare = dir.path().join("bare-sdk");
        std::fs::create_dir_all(&bare).unwrap();
        let seed = seed_target(&bare, &target, VV).unwrap();
        assert_eq!(seed, Seed::None);
        assert!(seed.note().unwrap().contains("compiles them"));
    }

    #[test]
    fn path_crates_are_recognised_in_every_directory_cargo_writes() {
        let sdk = ["captain-hook", "capt-hook-core", "project-hooks"];
        for name in [
            "libcaptain_hook-9f3a.rlib",
            "libcaptain_hook-9f3a.rmeta",
            "captain_hook-9f3a.d",
            "captain-hook-9f3a",
            "capt-hook-core-77aa",
            "project_hooks-01",
            "project-hooks-01",
        ] {
            assert!(belongs_to(name, &sdk), "{name}");
        }
        for name in [
            "libserde-0123.rlib",
            "serde_json-aa",
            "capt-hook-core2-77aa",
            "libcaptain_hooks-1.rlib",
        ] {
            assert!(!belongs_to(name, &sdk), "{name}");
        }
    }
}

//! The SDK's prebuilt dependencies for a release (`cargo xtask release --prebuilt-sdk`): a
//! Rust hook project scaffolded and built by the release's own `capt-hook` against the staged
//! SDK, exactly as a user's first `capt-hook build` runs it, then the registry crates of that
//! build kept in `sdk/prebuilt/` with the compiler's `rustc -vV`. What is shipped and why only
//! registry crates: `capt_hook_rust_project::prebuilt`.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use capt_hook_rust_project::WORKER_BIN;
use capt_hook_rust_project::prebuilt::{PREBUILT, PROFILE_DIR, RUSTC_STAMP, belongs_to};

use crate::dist::SDK_CRATES;

/// The scaffold's package name (`capt-hook init --rust`), a path crate like the SDK's.
const PROJECT_PACKAGE: &str = "project-hooks";

/// The parts of cargo's `release/` a later build reuses.
const KEPT: [&str; 3] = ["deps", "build", ".fingerprint"];

/// Builds a hook project with `bins`' `capt-hook` against `sdk` in `work`, then writes the
/// registry crates of that build into `sdk/prebuilt/`.
pub fn build_prebuilt(bins: &Path, sdk: &Path, work: &Path) -> anyhow::Result<usize> {
    let project = work.join("project");
    let build_dir = work.join("build");
    std::fs::create_dir_all(&project)?;
    let capt_hook = bins.join("capt-hook");
    let run = |args: &[&str]| -> anyhow::Result<()> {
        let status = Command::new(&capt_hook)
            .args(args)
            .arg("--root")
            .arg(&project)
            .env(capt_hook_proto::env::CAPT_HOOK_SDK, sdk)
            .env(capt_hook_proto::env::CAPT_HOOK_BUILD_DIR, &build_dir)
            .status()
            .with_context(|| format!("running {}", capt_hook.display()))?;
        if !status.success() {
            bail!("capt-hook {} failed ({status})", args.join(" "));
        }
        Ok(())
    };
    run(&["init", "--rust"])?;
    run(&["build"])?;
    let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-vV")
        .current_dir(&project)
        .output()
        .context("running rustc -vV")?;
    if !rustc.status.success() {
        bail!("rustc -vV failed ({})", rustc.status);
    }
    let out = sdk.join(PREBUILT);
    if out.exists() {
        std::fs::remove_dir_all(&out)?;
    }
    let n = keep_registry_crates(
        &build_dir.join("target").join(PROFILE_DIR),
        &out.join(PROFILE_DIR),
    )?;
    std::fs::write(out.join(RUSTC_STAMP), &rustc.stdout)?;
    Ok(n)
}

/// Copies `from`'s `deps/`, `build/` and `.fingerprint/` entries that are not the SDK's own
/// crates or the project's into `to`; returns the files copied.
pub fn keep_registry_crates(from: &Path, to: &Path) -> anyhow::Result<usize> {
    let mut path_crates: Vec<&str> = SDK_CRATES.to_vec();
    path_crates.extend([PROJECT_PACKAGE, WORKER_BIN]);
    let mut n = 0;
    for part in KEPT {
        let dir = from.join(part);
        if !dir.is_dir() {
            bail!(
                "{} is missing: the build did not run as expected",
                dir.display()
            );
        }
        std::fs::create_dir_all(to.join(part))?;
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if belongs_to(&name, &path_crates) {
                continue;
            }
            let dest = to.join(part).join(&name);
            if entry.file_type()?.is_dir() {
                crate::copy_dir(&entry.path(), &dest)?;
                n += count_files(&dest)?;
            } else {
                std::fs::copy(entry.path(), &dest)?;
                n += 1;
            }
        }
    }
    Ok(n)
}

fn count_files(dir: &Path) -> anyhow::Result<usize> {
    let mut n = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            n += count_files(&entry.path())?;
        } else {
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SDK's and the project's outputs are left out in every directory; registry crates'
    /// are kept whole (a build script's directory with its `out/`).
    #[test]
    fn only_registry_crates_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("release");
        for (rel, body) in [
            ("deps/libserde-01.rlib", "serde"),
            ("deps/serde-01.d", "serde"),
            ("deps/libcaptain_hook-02.rlib", "sdk"),
            ("deps/capt_hook_project_worker-03", "bin"),
            ("build/blake3-04/out/libblake3_sse41.a", "asm"),
            ("build/capt-hook-packs-05/out/packs.rs", "sdk"),
            (".fingerprint/serde-01/lib-serde", "fp"),
            (".fingerprint/project-hooks-06/bin-x", "fp"),
        ] {
            let path = from.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, body).unwrap();
        }
        let to = dir.path().join("prebuilt/release");
        assert_eq!(keep_registry_crates(&from, &to).unwrap(), 4);
        for kept in [
            "deps/libserde-01.rlib",
            "deps/serde-01.d",
            "build/blake3-04/out/libblake3_sse41.a",
            ".fingerprint/serde-01/lib-serde",
        ] {
            assert!(to.join(kept).is_file(), "{kept}");
        }
        for dropped in [
            "deps/libcaptain_hook-02.rlib",
            "deps/capt_hook_project_worker-03",
            "build/capt-hook-packs-05",
            ".fingerprint/project-hooks-06",
        ] {
            assert!(!to.join(dropped).exists(), "{dropped}");
        }
    }
}

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

/// Leaves out of `cmd`'s environment the variables `cargo xtask` (a `cargo run`) set for the
/// xtask package: a user's first build has none of them, and a build script that watches one
/// (ring's watches `CARGO_MANIFEST_DIR`) would make cargo rebuild that crate and everything above
/// it on the user's machine, prebuilt or not.
fn as_a_user_builds(cmd: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let per_package = name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(
                name,
                "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
            );
        if per_package {
            cmd.env_remove(name);
        }
    }
}

/// Builds a hook project with `bins`' `capt-hook` against `sdk` in `work`, then writes the
/// registry crates of that build into `sdk/prebuilt/`.
pub fn build_prebuilt(bins: &Path, sdk: &Path, work: &Path) -> anyhow::Result<usize> {
    let project = work.join("project");
    let build_dir = work.join("build");
    std::fs::create_dir_all(&project)?;
    let capt_hook = bins.join("capt-hook");
    let run = |args: &[&str]| -> anyhow::Result<()> {
        let mut cmd = Command::new(&capt_hook);
        as_a_user_builds(&mut cmd);
        let status = cmd
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
    let mut path_crates: Vec<&str> = SDK_CRATES.to_vec();
    path_crates.extend([PROJECT_PACKAGE, WORKER_BIN]);
    let n = keep_registry_crates(
        &build_dir.join("target").join(PROFILE_DIR),
        &out.join(PROFILE_DIR),
        &path_crates,
    )?;
    std::fs::write(out.join(RUSTC_STAMP), &rustc.stdout)?;
    Ok(n)
}

/// Copies `from`'s `deps/`, `build/` and `.fingerprint/` entries that are not `path_crates`'
/// (the SDK's own crates and the project's) into `to`; returns the files copied.
pub fn keep_registry_crates(from: &Path, to: &Path, path_crates: &[&str]) -> anyhow::Result<usize> {
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
            if belongs_to(&name, path_crates) {
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

    /// `cargo test` runs this with the variables `cargo run` gives xtask; the build the
    /// prebuilt SDK comes from must not see them.
    #[test]
    fn the_prebuilt_build_sees_no_variable_of_the_xtask_package() {
        assert!(
            std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
            "set by cargo test"
        );
        let mut cmd = Command::new("true");
        as_a_user_builds(&mut cmd);
        let removed: Vec<String> = cmd
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        for name in ["CARGO_MANIFEST_DIR", "CARGO_PKG_NAME"] {
            assert!(removed.iter().any(|r| r == name), "{name}: {removed:?}");
        }
        assert!(!removed.iter().any(|r| r == "CARGO_HOME"), "{removed:?}");
    }

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
        let path_crates = [
            "captain-hook",
            "capt-hook-packs",
            PROJECT_PACKAGE,
            WORKER_BIN,
        ];
        assert_eq!(keep_registry_crates(&from, &to, &path_crates).unwrap(), 4);
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

    /// The whole claim, with cargo: a project built against a path "SDK", its registry crates
    /// kept and seeded (as a user's first build does) into another target directory, for the
    /// same project moved elsewhere with its SDK elsewhere: cargo compiles only the two path
    /// crates. Offline, with crates the workspace itself builds (serde_json: a build script).
    #[test]
    fn a_seeded_target_directory_compiles_only_the_path_crates() {
        use capt_hook_rust_project::prebuilt::{Seed, seed_target};
        let dir = tempfile::tempdir().unwrap();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let lock = crate::workspace_root().join("Cargo.lock");
        let make = |name: &str| {
            let sdk = dir.path().join(name).join("sdk");
            let project = dir.path().join(name).join("project");
            std::fs::create_dir_all(sdk.join("src")).unwrap();
            std::fs::create_dir_all(project.join("src")).unwrap();
            std::fs::write(
                sdk.join("Cargo.toml"),
                "[package]\nname = \"mini-sdk\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
                 [dependencies]\nserde_json = \"1\"\n",
            )
            .unwrap();
            std::fs::write(
                sdk.join("src/lib.rs"),
                "pub fn v() -> String { serde_json::json!({\"a\": 1}).to_string() }\n",
            )
            .unwrap();
            std::fs::write(
                project.join("Cargo.toml"),
                format!(
                    "[package]\nname = \"mini-hooks\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
                     [dependencies]\nmini-sdk = {{ path = {:?} }}\n[workspace]\n",
                    sdk.display().to_string()
                ),
            )
            .unwrap();
            std::fs::write(
                project.join("src/main.rs"),
                "fn main() { println!(\"{}\", mini_sdk::v()); }\n",
            )
            .unwrap();
            std::fs::copy(&lock, project.join("Cargo.lock")).unwrap();
            (sdk, project)
        };
        let build = |project: &Path, target: &Path| {
            let out = Command::new(&cargo)
                .args([
                    "build",
                    "--release",
                    "--offline",
                    "--color",
                    "never",
                    "--manifest-path",
                ])
                .arg(project.join("Cargo.toml"))
                .arg("--target-dir")
                .arg(target)
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_TARGET_DIR")
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(out.status.success(), "{err}");
            err
        };
        let (_, first) = make("ci");
        let first_target = dir.path().join("ci-target");
        let log = build(&first, &first_target);
        assert!(log.contains("Compiling serde_json"), "{log}");
        let (sdk, project) = make("user");
        let prebuilt = sdk.join(PREBUILT);
        keep_registry_crates(
            &first_target.join(PROFILE_DIR),
            &prebuilt.join(PROFILE_DIR),
            &["mini-sdk", "mini-hooks"],
        )
        .unwrap();
        std::fs::write(prebuilt.join(RUSTC_STAMP), "rustc test\n").unwrap();
        let target = dir.path().join("user-target");
        let seeded = seed_target(&sdk, &target, "rustc test\n").unwrap();
        assert!(matches!(seeded, Seed::Seeded { .. }), "{seeded:?}");
        let log = build(&project, &target);
        let compiled: Vec<&str> = log
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Compiling "))
            .map(|l| l.split(' ').next().unwrap_or(l))
            .collect();
        assert_eq!(compiled, ["mini-sdk", "mini-hooks"], "{log}");
    }
}

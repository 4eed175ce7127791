//! The workspace as xtask sees it: its root, cargo's target directory, running cargo, and
//! the file helpers the commands share.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The workspace root (xtask lives one level below it).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Cargo's target directory, as cargo itself reports it (honours `CARGO_TARGET_DIR`).
pub fn target_dir() -> anyhow::Result<PathBuf> {
    let out = Command::new(cargo())
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(workspace_root())
        .output()
        .context("running cargo metadata")?;
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("parsing cargo metadata")?;
    meta["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .context("cargo metadata has no target_directory")
}

/// Where a command's downloads are cached: `$XDG_CACHE_HOME` (else `~/.cache`)/captain-hook/
/// `<name>`, so a fresh clone reuses them, else `<target>/<name>/cache`.
pub fn download_cache(target: &Path, name: &str) -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|d| !d.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        });
    match base {
        Some(base) => base.join("captain-hook").join(name),
        None => target.join(name).join("cache"),
    }
}

/// The cargo that runs xtask (`$CARGO`), else `cargo` on `PATH`.
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Runs cargo with `args` in the workspace, failing on a non-zero exit.
pub fn run_cargo(args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new(cargo())
        .args(args)
        .current_dir(workspace_root())
        .status()?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Whether `program` is an executable file in a directory of `PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// Copies the tree at `from` to `to`, creating directories as needed.
pub fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

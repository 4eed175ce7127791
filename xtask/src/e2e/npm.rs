//! A pinned agent CLI from the npm registry, installed once into a cache directory (no install
//! scripts: each suite runs what the package ships in place) and checked by the version it
//! reports.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// `spec` (`package@version`) installed under `cache` unless `version_of` already reports
/// `version` there; afterwards it must. `bin` is the file the suite runs, for the messages.
pub fn ensure(
    cache: &Path,
    spec: &str,
    version: &str,
    bin: &Path,
    version_of: impl Fn() -> Option<String>,
) -> anyhow::Result<()> {
    if version_of().as_deref() == Some(version) {
        return Ok(());
    }
    std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
    println!("installing {spec} into {}", cache.display());
    let status = Command::new("npm")
        .args([
            "install",
            "--prefix",
            &cache.to_string_lossy(),
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--no-update-notifier",
            "--loglevel=error",
            spec,
        ])
        .status()
        .context("running npm (is Node.js installed?)")?;
    if !status.success() {
        bail!("npm install {spec} failed ({status})");
    }
    match version_of() {
        Some(v) if v == version => Ok(()),
        Some(v) => bail!("{} reports version {v}, not {version}", bin.display()),
        None => bail!(
            "{} is missing or does not run after npm install",
            bin.display()
        ),
    }
}

/// The npm platform suffix of this machine (`linux-x64`, `linux-arm64`); the suites run on
/// Linux only.
pub fn platform() -> anyhow::Result<&'static str> {
    if std::env::consts::OS != "linux" {
        bail!("the e2e suites run on Linux only");
    }
    match std::env::consts::ARCH {
        "x86_64" => Ok("linux-x64"),
        "aarch64" => Ok("linux-arm64"),
        other => bail!("no agent CLI builds for the {other} architecture"),
    }
}

/// `node_modules/<package>` under `cache`.
pub fn package_dir(cache: &Path, package: &str) -> PathBuf {
    cache.join("node_modules").join(package)
}

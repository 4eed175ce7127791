//! The pinned Claude Code CLI: installed from the npm registry into a cache directory once,
//! then run straight from its native platform package.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Claude Code release the suite is written against.
pub const VERSION: &str = "2.1.332";

/// The npm package and the prefix of its per-platform native packages.
const PACKAGE: &str = "@anthropic-ai/claude-code";

/// Where the install is cached (see [`crate::workspace::download_cache`]).
pub fn cache_dir(target: &Path) -> PathBuf {
    crate::workspace::download_cache(target, "e2e-claude").join(format!("claude-code-{VERSION}"))
}

/// The native package for this machine (the npm wrapper's postinstall would copy it over its
/// placeholder; we skip install scripts and run it in place).
fn platform_package() -> anyhow::Result<String> {
    let musl = cfg!(target_env = "musl");
    Ok(format!(
        "{PACKAGE}-{}{}",
        super::npm::platform()?,
        if musl { "-musl" } else { "" }
    ))
}

/// The CLI binary, installed into `cache` first unless a working copy of [`VERSION`] is there.
pub fn ensure(cache: &Path) -> anyhow::Result<PathBuf> {
    let bin = super::npm::package_dir(cache, &platform_package()?).join("claude");
    super::npm::ensure(
        cache,
        &format!("{PACKAGE}@{VERSION}"),
        VERSION,
        &bin,
        || version_of(&bin, cache),
    )?;
    Ok(bin)
}

/// `claude --version`'s number, when the binary runs. It runs outside the sandbox, so it gets
/// a HOME of its own (the cache) and the switches that keep it quiet on the network.
fn version_of(bin: &Path, home: &Path) -> Option<String> {
    let out = Command::new(bin)
        .arg("--version")
        .env("HOME", home)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().next().map(str::to_owned)
}

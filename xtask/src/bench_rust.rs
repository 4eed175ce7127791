//! The Rust-worker lines of `cargo xtask bench`: the same 100 TOML hooks answered warm by the
//! stock worker and by a project's own build (which also carries one Rust handler, so it pays
//! for watching its sources), A/B alternating, and the project worker's resident memory.

use std::path::Path;

use anyhow::{Context, bail};

use crate::bench::{hundred_hooks, median, pct, rss_kib, time};
use crate::sandbox::{self, Sandbox};

/// A handler for an event the bench never sends: present, never matching.
const MAIN: &str = r#"use captain_hook::core::EventKind;
use captain_hook::{HookResult, Registry, on};

#[global_allocator]
static ALLOC: captain_hook::Allocator = captain_hook::Allocator;

fn main() -> std::process::ExitCode {
    let mut hooks = Registry::new();
    hooks
        .add(
            "bench",
            on(&[EventKind::PostToolUse], |_| Ok(Some(HookResult::warn("seen")))).name("seen"),
        )
        .expect("valid hook");
    captain_hook::serve(hooks)
}
"#;

/// Variables that point the sandbox's `capt-hook build` at this checkout's SDK, a build cache
/// shared with the tests, and the real toolchain (the sandbox's HOME hides it).
fn build_env() -> Vec<(&'static str, String)> {
    let root = crate::workspace_root();
    let home = std::env::var("HOME").unwrap_or_default();
    vec![
        ("CAPT_HOOK_SDK", root.display().to_string()),
        (
            "CAPT_HOOK_BUILD_DIR",
            root.join("target/tmp/rust-hooks").display().to_string(),
        ),
        (
            "CARGO_HOME",
            std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{home}/.cargo")),
        ),
        (
            "RUSTUP_HOME",
            std::env::var("RUSTUP_HOME").unwrap_or_else(|_| format!("{home}/.rustup")),
        ),
    ]
}

/// Runs the Rust-worker bench with the binaries in `bins`.
pub fn run(bins: &Path, quick: bool) -> anyhow::Result<()> {
    let sandbox = Sandbox::new(bins, "bench-rust")?;
    let env = build_env();
    let stock = sandbox.project("stock", &[("hundred.toml", &hundred_hooks())])?;
    let rust = sandbox.project("rust", &[("hundred.toml", &hundred_hooks())])?;
    let init = sandbox
        .command("capt-hook")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .arg("--root")
        .arg(&rust)
        .args(["init", "--rust"])
        .status()?;
    if !init.success() {
        bail!("capt-hook init --rust failed");
    }
    std::fs::write(rust.join(".claude/hooks/src/main.rs"), MAIN)?;
    println!("== Rust worker (building the bench project's hooks; cargo's output follows)");
    let built = sandbox
        .command("capt-hook")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .arg("--root")
        .arg(&rust)
        .arg("build")
        .status()?;
    if !built.success() {
        bail!("capt-hook build failed");
    }

    let paths = [("stock", &stock), ("rust", &rust)].map(|(name, root)| {
        let path = sandbox.dir.join(format!("payload-{name}.json"));
        let body = sandbox::payload("PreToolUse", root, Some(crate::bench::COMMAND), name);
        (path, body)
    });
    let mut answers = Vec::new();
    for (path, body) in &paths {
        std::fs::write(path, body)?;
        let out = sandbox
            .command("hook")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .args(["run", "PreToolUse"])
            .stdin(std::fs::File::open(path)?)
            .output()?;
        if !out.status.success() {
            bail!("warm-up failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        answers.push(out.stdout);
    }
    if answers[0] != answers[1] {
        bail!("the stock and the Rust worker answered differently");
    }
    let status = sandbox.status()?;
    let project_pid = status["workers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|w| w["key"].as_str().is_some_and(|k| k.contains('@')))
        .and_then(|w| w["pid"].as_u64())
        .context("no project worker is running: the build did not go live")?;

    let samples = if quick { 100 } else { 500 };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        for (i, (path, _)) in paths.iter().enumerate() {
            let ms = time(
                sandbox
                    .command("hook")
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .args(["run", "PreToolUse"]),
                path,
            )?;
            if i == 0 { &mut a } else { &mut b }.push(ms);
        }
    }
    let (stock_ms, rust_ms) = (median(&mut a), median(&mut b));
    println!(
        "warm  stock worker, 100 TOML hooks        median {stock_ms:7.3} ms   p90 {:7.3} ms",
        pct(&a, 0.9)
    );
    println!(
        "      project's Rust worker, same hooks   median {rust_ms:7.3} ms   p90 {:7.3} ms   ratio {:.2}x (target <= 1.1)",
        pct(&b, 0.9),
        rust_ms / stock_ms
    );
    println!("RSS   project's Rust worker {} KiB", rss_kib(project_pid));
    sandbox.shutdown()?;
    Ok(())
}

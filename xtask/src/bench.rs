//! `cargo xtask bench`: the engine's in-process bench (when present), then the runtime:
//! warm `hook run` against `/bin/true`, cold start, 64 concurrent clients, resident memory.
//!
//! Timing spawns processes directly with stdin redirected from a file (no shell in between) and
//! alternates the two commands sample by sample, so drift on a noisy machine hits both alike.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, bail};

use crate::sandbox::{self, Sandbox};

pub(crate) const COMMAND: &str =
    "cd /work/app && git status --short | head -20 && cargo test -q -- --nocapture 2>&1 | tail -5";

pub fn run(args: &[String]) -> anyhow::Result<()> {
    let quick = args.iter().any(|a| a == "--quick");
    let engine_bench = crate::workspace_root().join("crates/captain-hook/examples/bench_engine.rs");
    if engine_bench.exists() {
        println!("== engine (in process)");
        crate::run_cargo(&[
            "run",
            "--release",
            "-p",
            "captain-hook",
            "--example",
            "bench_engine",
        ])?;
        println!();
    }
    let bins = crate::dist()?;
    let sandbox = Sandbox::new(&bins, "bench")?;
    let root = sandbox.project("bench", &[("hundred.toml", &hundred_hooks())])?;
    let payload_path = sandbox.dir.join("payload.json");
    let payload = sandbox::payload("PreToolUse", &root, Some(COMMAND), "bench");
    std::fs::write(&payload_path, &payload)?;

    // Warm: the first event starts the host and the worker and loads the hooks.
    let first = sandbox.hook("PreToolUse", &payload)?;
    if !first.status.success() {
        bail!(
            "first event failed: {}",
            String::from_utf8_lossy(&first.stderr)
        );
    }
    let expected = first.stdout.clone();
    let samples = if quick { 100 } else { 500 };
    let (mut hook, mut truth) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        hook.push(time(
            sandbox.command("hook").args(["run", "PreToolUse"]),
            &payload_path,
        )?);
        truth.push(time(&mut Command::new("/bin/true"), &payload_path)?);
    }
    let (hook_ms, true_ms) = (median(&mut hook), median(&mut truth));
    println!(
        "== runtime (release build, 100-hook project, {samples} samples each, A/B alternating)"
    );
    println!(
        "warm  hook run PreToolUse   median {hook_ms:7.3} ms   p90 {:7.3} ms",
        pct(&hook, 0.9)
    );
    println!(
        "      /bin/true             median {true_ms:7.3} ms   p90 {:7.3} ms",
        pct(&truth, 0.9)
    );
    println!(
        "      ratio                 {:.2}x (target <= 2.0)",
        hook_ms / true_ms
    );

    // What Claude Code really runs: `sh -c '"${CLAUDE_PLUGIN_ROOT}/bin/hook" run PreToolUse'`,
    // with the installed plugin (bin/hook is the native client) and with the committed POSIX sh
    // wrapper (a checkout without `cargo xtask install`), against `sh -c /bin/true`.
    let (installed, checkout) = sandbox.install_plugin()?;
    let script = "\"${CLAUDE_PLUGIN_ROOT}/bin/hook\" run PreToolUse";
    let (mut native, mut wrapper, mut sh_true) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..samples {
        native.push(time(
            sandbox.shell(script).env("CLAUDE_PLUGIN_ROOT", &installed),
            &payload_path,
        )?);
        wrapper.push(time(
            sandbox.shell(script).env("CLAUDE_PLUGIN_ROOT", &checkout),
            &payload_path,
        )?);
        sh_true.push(time(&mut sandbox.shell("/bin/true"), &payload_path)?);
    }
    let (native_ms, wrapper_ms, sh_ms) = (
        median(&mut native),
        median(&mut wrapper),
        median(&mut sh_true),
    );
    println!(
        "plugin sh -c bin/hook (installed, native)  median {native_ms:7.3} ms   ratio {:.2}x sh -c /bin/true (target <= 1.3)",
        native_ms / sh_ms
    );
    println!(
        "plugin sh -c bin/hook (POSIX sh wrapper)   median {wrapper_ms:7.3} ms   ratio {:.2}x",
        wrapper_ms / sh_ms
    );
    println!("       sh -c /bin/true                     median {sh_ms:7.3} ms");

    // Resident memory while warm.
    let status = sandbox.status()?;
    let host_rss = rss_kib(status["pid"].as_u64().unwrap_or(0));
    let worker_rss: Vec<u64> = status["workers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| rss_kib(w["pid"].as_u64().unwrap_or(0)))
        .collect();

    // 64 concurrent clients, 2000 events.
    let total = if quick { 500 } else { 2000 };
    let (lat, wrong) = concurrent(&sandbox, &payload, &expected, 64, total)?;
    let mut lat = lat;
    let p50 = median(&mut lat);
    println!(
        "64 clients × {total} events: {} answered, {wrong} wrong or missing; p50 {p50:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lat.len(),
        pct(&lat, 0.99),
        lat.last().copied().unwrap_or(0.0)
    );
    if wrong > 0 {
        bail!("{wrong} events were not answered exactly once with the expected verdict");
    }
    let status = sandbox.status()?;
    let worker_rss_loaded: Vec<u64> = status["workers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| rss_kib(w["pid"].as_u64().unwrap_or(0)))
        .collect();
    println!(
        "RSS   host {host_rss} KiB; worker {worker_rss:?} KiB idle-warm, {worker_rss_loaded:?} KiB after the load"
    );

    // Cold: no host running; the event pays host start, worker start and hook load.
    let runs = if quick { 5 } else { 15 };
    let mut cold = Vec::new();
    for _ in 0..runs {
        sandbox.shutdown()?;
        cold.push(time(
            sandbox.command("hook").args(["run", "PreToolUse"]),
            &payload_path,
        )?);
    }
    println!(
        "cold  hook run PreToolUse   median {:7.3} ms (target <= 30 ms), {runs} runs",
        median(&mut cold)
    );
    sandbox.shutdown()?;
    crate::bench_rust::run(&bins, quick)
}

/// Wall time of one run of `cmd` with stdin from `input`, output discarded; fails on non-zero.
pub(crate) fn time(cmd: &mut Command, input: &Path) -> anyhow::Result<f64> {
    cmd.stdin(File::open(input)?)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let start = Instant::now();
    let status = cmd.status()?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(ms)
}

/// `clients` threads sending `total` events; returns sorted latencies and the count of events
/// whose answer was not exactly the expected verdict.
fn concurrent(
    sandbox: &Sandbox,
    payload: &[u8],
    expected: &[u8],
    clients: usize,
    total: usize,
) -> anyhow::Result<(Vec<f64>, usize)> {
    let next = Arc::new(AtomicUsize::new(0));
    let results = Arc::new(Mutex::new(Vec::with_capacity(total)));
    let wrong = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..clients {
            let (next, results, wrong) = (next.clone(), results.clone(), wrong.clone());
            s.spawn(move || {
                while next.fetch_add(1, Ordering::SeqCst) < total {
                    let start = Instant::now();
                    match sandbox.hook("PreToolUse", payload) {
                        Ok(out) if out.status.success() && out.stdout == expected => {
                            let ms = start.elapsed().as_secs_f64() * 1000.0;
                            results.lock().unwrap_or_else(|p| p.into_inner()).push(ms);
                        }
                        _ => {
                            wrong.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            });
        }
    });
    let mut lat = Arc::try_unwrap(results)
        .map_err(|_| anyhow::anyhow!("threads still hold results"))?
        .into_inner()
        .context("poisoned")?;
    lat.sort_by(f64::total_cmp);
    Ok((lat, wrong.load(Ordering::SeqCst)))
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    pct(v, 0.5)
}

/// The `q` quantile of sorted samples.
pub(crate) fn pct(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

pub(crate) fn rss_kib(pid: u64) -> u64 {
    u32::try_from(pid)
        .ok()
        .and_then(capt_hook_proto::procfs::rss_kib)
        .unwrap_or(0)
}

/// 100 hooks in the shapes real projects use (argv prefixes, regexes, tool and file guards),
/// the same file as the engine's in-process bench.
pub fn hundred_hooks() -> String {
    include_str!("../../crates/captain-hook/examples/hundred-hooks.toml").to_owned()
}

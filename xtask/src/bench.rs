//! `cargo xtask bench`: the engine's in-process bench (when present), then the runtime: warm
//! `hook run`, the plugin's hook as Claude Code runs it (exec form, and the old `sh -c`), 64
//! concurrent clients, resident memory, cold start. Each figure is printed beside its ceiling
//! measured in the same run: `/bin/true` for a warm event, a static no-op spawned the same way
//! for the exec form ([`exec`]), 64 concurrent `/bin/true` fed the same stdin for the load
//! (beside it, 64 of our client returning at once, the spawn's own latency tail, and the same
//! events sent straight to the host, its and the worker's), the three binaries started with
//! nothing to do for a cold start, reading the payload alone for the engine.
//!
//! Timing spawns processes directly with stdin redirected from a file (no shell in between) and
//! alternates each figure with its ceiling sample by sample (round by round for the load), so
//! drift on a noisy machine hits both alike. The load starts and awaits its 64 runs from one
//! thread, as Claude Code's event loop does, and prints beside it what a harness of 64 blocking
//! threads records for `/bin/true`: that harness's own wake-up delays, not the runs'.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::sandbox::{self, Sandbox};

#[path = "bench_exec.rs"]
pub(crate) mod exec;

pub(crate) const COMMAND: &str =
    "cd /work/app && git status --short | head -20 && cargo test -q -- --nocapture 2>&1 | tail -5";

pub fn run(args: &[String]) -> anyhow::Result<()> {
    let Args { quick, only } = Args::parse(args)?;
    let want = |part: &str| only.as_ref().is_none_or(|o| o.iter().any(|p| p == part));
    let engine_bench = crate::workspace_root().join("crates/captain-hook/examples/bench_engine.rs");
    if engine_bench.exists() && want("engine") {
        engine(quick)?;
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
    if want("warm") {
        warm(&sandbox, &payload_path, samples)?;
    }
    // Installed once for both parts: a second install would stop "the old host" with the
    // first install's `capt-hookd shutdown`, run outside the sandbox's environment.
    let installed = if want("exec") || want("plugin") {
        let installed = sandbox.install_plugin()?;
        // The host running now was started from the build directory; the installed client
        // refuses a host that is not the capt-hookd installed beside it (and answers by local
        // evaluation), so stop it, as an install does: the installed client starts its own.
        sandbox.shutdown()?;
        Some(installed)
    } else {
        None
    };
    if want("exec")
        && let Some((installed, _)) = &installed
    {
        exec::run(&sandbox, installed, &payload_path, &expected, samples)?;
    }
    if want("plugin")
        && let Some((installed, checkout)) = &installed
    {
        plugin(&sandbox, installed, checkout, &payload_path, samples)?;
    }
    if want("load") {
        load(&sandbox, &root, &payload, &expected, quick)?;
    }
    if want("cold") {
        cold(&sandbox, &payload_path, quick)?;
    }
    sandbox.shutdown()?;
    if want("rust") {
        crate::bench_rust::run(&bins, quick)?;
    }
    Ok(())
}

/// The parts `--only` may name, in the order they run (RSS is printed with the load).
const PARTS: [&str; 7] = ["engine", "warm", "exec", "plugin", "load", "cold", "rust"];

/// `bench [--quick] [--only PART,...]`.
#[derive(Debug, PartialEq)]
struct Args {
    /// Fewer samples.
    quick: bool,
    /// Just these parts, for iterating on one figure; `None` runs them all.
    only: Option<Vec<String>>,
}

impl Args {
    /// Anything else is an error naming it: a misspelt flag or part would otherwise run
    /// everything, or nothing, without a word.
    fn parse(args: &[String]) -> anyhow::Result<Args> {
        let mut parsed = Args {
            quick: false,
            only: None,
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--quick" => parsed.quick = true,
                "--only" => {
                    let list = args.next().with_context(|| {
                        format!(
                            "--only needs a comma-separated list of {}",
                            PARTS.join(", ")
                        )
                    })?;
                    let parts: Vec<String> = list.split(',').map(str::to_owned).collect();
                    if let Some(bad) = parts.iter().find(|p| !PARTS.contains(&p.as_str())) {
                        bail!(
                            "--only {list}: no part named {bad:?}; the parts are {}",
                            PARTS.join(", ")
                        );
                    }
                    parsed.only = Some(parts);
                }
                other => {
                    bail!("bench: unknown argument {other:?}; expected --quick or --only PARTS")
                }
            }
        }
        Ok(parsed)
    }
}

/// Warm `hook run` against `/bin/true`, sample by sample.
fn warm(sandbox: &Sandbox, payload_path: &Path, samples: usize) -> anyhow::Result<()> {
    let (mut hook, mut truth) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        hook.push(time(
            sandbox.command("hook").args(["run", "PreToolUse"]),
            payload_path,
        )?);
        truth.push(time(&mut Command::new("/bin/true"), payload_path)?);
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
    Ok(())
}

/// The shell form Claude Code ran before hooks.json's exec form, against `sh -c /bin/true`.
fn plugin(
    sandbox: &Sandbox,
    installed: &Path,
    checkout: &Path,
    payload_path: &Path,
    samples: usize,
) -> anyhow::Result<()> {
    // `sh -c '"${CLAUDE_PLUGIN_ROOT}/bin/hook" run PreToolUse'`, with the installed plugin
    // (bin/hook is the native client) and with the committed POSIX sh wrapper (a checkout
    // without `cargo xtask install`: its `#!/bin/sh` runs a shell in either form), against
    // `sh -c /bin/true`.
    let script = "\"${CLAUDE_PLUGIN_ROOT}/bin/hook\" run PreToolUse";
    let (mut native, mut wrapper, mut sh_true) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..samples {
        native.push(time(
            sandbox.shell(script).env("CLAUDE_PLUGIN_ROOT", installed),
            payload_path,
        )?);
        wrapper.push(time(
            sandbox.shell(script).env("CLAUDE_PLUGIN_ROOT", checkout),
            payload_path,
        )?);
        sh_true.push(time(&mut sandbox.shell("/bin/true"), payload_path)?);
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
    Ok(())
}

/// 64 concurrent clients against 64 concurrent `/bin/true`, beside 64 idle clients and 64
/// connections straight to the host; resident memory around it.
fn load(
    sandbox: &Sandbox,
    root: &Path,
    payload: &[u8],
    expected: &[u8],
    quick: bool,
) -> anyhow::Result<()> {
    // Resident memory while warm.
    let status = sandbox.status()?;
    let host_rss = rss_kib(status["pid"].as_u64().unwrap_or(0));
    let worker_idle = worker_rss(&status);

    // 64 concurrent clients against 64 concurrent `/bin/true` with the same stdin, rounds
    // alternating; every event must be answered once ([`answered_once`]).
    let total = if quick { 500 } else { 2000 };
    let rounds = if quick { 1 } else { 3 };
    let (mut hook_rounds, mut true_rounds) = (Vec::new(), Vec::new());
    let (mut idle_rounds, mut direct_rounds) = (Vec::new(), Vec::new());
    let mut threaded_rounds = Vec::new();
    let socket = sandbox.socket();
    for _ in 0..rounds {
        true_rounds.push(concurrent(CLIENTS, total, async || {
            Ok(spawn_fed(Command::new("/bin/true"), payload).await?.0)
        })?);
        threaded_rounds.push(threaded(CLIENTS, total, || {
            blocking_spawn_fed(&mut Command::new("/bin/true"), payload)
        })?);
        idle_rounds.push(concurrent(CLIENTS, total, async || {
            let mut idle = sandbox.command("hook");
            idle.args(["run", "PreToolUse", "--async"]);
            Ok(spawn_fed(idle, payload).await?.0)
        })?);
        hook_rounds.push(answered_once(
            sandbox,
            total,
            "clients got the expected verdict",
            || {
                concurrent(CLIENTS, total, async || {
                    let mut hook = sandbox.command("hook");
                    hook.args(["run", "PreToolUse"]);
                    let (ok, stdout) = spawn_fed(hook, payload).await?;
                    Ok(ok && stdout == expected)
                })
            },
        )?);
        let request = direct_request(sandbox, root, payload)?;
        direct_rounds.push(answered_once(
            sandbox,
            total,
            "events sent straight to the host were answered right",
            || {
                concurrent(CLIENTS, total, async || {
                    connect_and_send(&socket, &request, expected).await
                })
            },
        )?);
    }
    let hook_load = median_round(hook_rounds);
    let direct_load = median_round(direct_rounds);
    let true_load = median_round(true_rounds);
    let idle_load = median_round(idle_rounds);
    let threaded_load = median_round(threaded_rounds);
    let share = hook_load.per_s / true_load.per_s;
    println!(
        "load  {CLIENTS} clients x {total} events, {rounds} round(s), the median round; every event answered once"
    );
    let line = |name: &str, load: &Load| {
        println!(
            "      {name:<22}{:8.0} events/s   p50 {:7.2} ms   p99 {:7.2} ms ({:.1}x p50)   max {:7.2} ms",
            load.per_s,
            load.p50,
            load.p99,
            load.p99 / load.p50,
            load.max
        );
    };
    line("hook run PreToolUse", &hook_load);
    line("/bin/true", &true_load);
    // The spawn's own cost: our static client returning at once.
    line("hook --async, no work", &idle_load);
    // The host and the worker alone: the same events over 64 connections, no process started.
    line("host, 64 connections", &direct_load);
    // Why the runs are started from one thread: 64 threads each waiting on its own child are
    // 64 more runnable threads on the machine, and how late each is woken after its child
    // exits is counted as the child's latency (on 2 cores, p99 3-6x p50 for /bin/true alone).
    line("/bin/true, 64 threads", &threaded_load);
    println!(
        "      throughput            {:.0}% of /bin/true (target >= 80%), p99 {:.1}x p50 (target <= 3)",
        share * 100.0,
        hook_load.p99 / hook_load.p50
    );
    let worker_rss_loaded = worker_rss(&sandbox.status()?);
    println!(
        "RSS   host {host_rss} KiB (target <= 10240); worker {worker_idle:?} KiB idle-warm, {worker_rss_loaded:?} KiB after the load (target <= 40960)"
    );
    Ok(())
}

/// The engine's in-process bench, built as the worker ships (static, musl) when this machine
/// builds the worker that way: musl's `memcpy` and `memcmp` are not glibc's.
fn engine(quick: bool) -> anyhow::Result<()> {
    let mut args = vec![
        "--release",
        "-p",
        "captain-hook",
        "--example",
        "bench_engine",
    ];
    if quick {
        args.extend(["--", "--quick"]);
    }
    let toolchain = crate::StaticToolchain::detect()?;
    if toolchain.builds_worker() {
        println!(
            "== engine (in process, linked as the worker ships: {})",
            toolchain.how()
        );
        let status = toolchain
            .cargo(&crate::target_dir()?, "run", &args)
            .status()?;
        if !status.success() {
            bail!("the engine bench failed ({status})");
        }
    } else {
        println!("== engine (in process, linked dynamically: the worker ships dynamic here)");
        crate::run_cargo(&[&["run"], &args[..]].concat())?;
    }
    println!();
    Ok(())
}

/// Cold start against the three binaries doing nothing, run by run.
fn cold(sandbox: &Sandbox, payload_path: &Path, quick: bool) -> anyhow::Result<()> {
    // Cold: no host running; the event pays host start, worker start and hook load. Its floor
    // is the same three binaries started one after the other with nothing to do.
    let runs = if quick { 5 } else { 21 };
    let (mut cold, mut chain) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        sandbox.shutdown()?;
        cold.push(time(
            sandbox.command("hook").args(["run", "PreToolUse"]),
            payload_path,
        )?);
        let mut floor = time(
            sandbox
                .command("hook")
                .args(["run", "PreToolUse", "--async"]),
            payload_path,
        )?;
        floor += time(sandbox.command("capt-hookd").arg("version"), payload_path)?;
        floor += time(
            sandbox.command("capt-hook-worker").arg("version"),
            payload_path,
        )?;
        chain.push(floor);
    }
    let (cold_ms, chain_ms) = (median(&mut cold), median(&mut chain));
    println!(
        "cold  hook run PreToolUse   median {cold_ms:7.3} ms   p90 {:7.3} ms (target <= 5 ms), {runs} runs",
        pct(&cold, 0.9)
    );
    println!(
        "      the three binaries, nothing to do, one after another   median {chain_ms:7.3} ms   ({:.1}x)",
        cold_ms / chain_ms
    );
    Ok(())
}

/// Concurrent clients, as Claude Code's parallel tool calls run them.
const CLIENTS: usize = 64;

/// One round of concurrent runs.
struct Load {
    /// Latencies of the runs that succeeded, sorted, in ms.
    lat: Vec<f64>,
    /// Runs that failed or answered wrongly.
    wrong: usize,
    /// Runs per second of wall time.
    per_s: f64,
    p50: f64,
    p99: f64,
    max: f64,
}

impl Load {
    /// The round's figures from its latencies, failures and wall time in seconds.
    fn of(mut lat: Vec<f64>, wrong: usize, wall: f64) -> Load {
        lat.sort_by(f64::total_cmp);
        Load {
            per_s: lat.len() as f64 / wall,
            p50: pct(&lat, 0.5),
            p99: pct(&lat, 0.99),
            max: lat.last().copied().unwrap_or(0.0),
            lat,
            wrong,
        }
    }
}

/// `cmd` fed `payload` on stdin as Claude Code feeds a hook; whether it exited 0, and its
/// stdout.
async fn spawn_fed(cmd: Command, payload: &[u8]) -> anyhow::Result<(bool, Vec<u8>)> {
    let mut child = tokio::process::Command::from(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    // It may exit before reading; its closed pipe is not a failure.
    if let Err(e) = stdin.write_all(payload).await
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    drop(stdin);
    let out = child.wait_with_output().await?;
    Ok((out.status.success(), out.stdout))
}

/// [`spawn_fed`] from a thread that blocks until its child is done: what the threaded
/// harness runs, so its line shows that harness exactly as earlier benches measured with it.
fn blocking_spawn_fed(cmd: &mut Command, payload: &[u8]) -> anyhow::Result<bool> {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    if let Err(e) = stdin.write_all(payload)
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    drop(stdin);
    Ok(child.wait_with_output()?.status.success())
}

/// The frame a client would send for `payload`, length prefix included, made once per round
/// (the round ends long before its deadline) so the timed exchange holds no encoding.
fn direct_request(sandbox: &Sandbox, root: &Path, payload: &[u8]) -> anyhow::Result<Vec<u8>> {
    let root = root.to_string_lossy().into_owned();
    let request = capt_hook_proto::EventRequest {
        schema: 1,
        event: "PreToolUse".into(),
        cwd: root.clone(),
        root,
        env: sandbox.request_env(),
        payload_raw: String::from_utf8_lossy(payload).into_owned(),
        client_pid: std::process::id(),
        client_ppid: std::os::unix::process::parent_id(),
        deadline_unix_ms: capt_hook_proto::clock::unix_ms_in(std::time::Duration::from_secs(60)),
        notice_epoch: None,
        notices: Vec::new(),
        classic: false,
        agent: None,
        request_id: None,
    };
    let body = capt_hook_proto::encode(&capt_hook_proto::HostRequest::event(
        std::process::id(),
        request,
    ));
    let mut frame = Vec::new();
    capt_hook_proto::push_frame(&mut frame, &body)?;
    Ok(frame)
}

/// One event sent over the host's socket as a client sends it, without starting a process;
/// true when it was answered with what the client would print (`expected`) and exit 0.
async fn connect_and_send(socket: &Path, request: &[u8], expected: &[u8]) -> anyhow::Result<bool> {
    use capt_hook_proto::{HostReply, MAX_FRAME};
    let mut stream = tokio::net::UnixStream::connect(socket).await?;
    stream.write_all(request).await?;
    let mut header = [0u8; 4];
    stream.read_exact(&mut header).await?;
    let mut reply = vec![0; capt_hook_proto::frame_len(header, MAX_FRAME)?];
    stream.read_exact(&mut reply).await?;
    Ok(matches!(
        capt_hook_proto::decode::<HostReply>(&reply)?,
        HostReply::Event(response) if response.exit == 0 && response.stdout.as_bytes() == expected
    ))
}

/// Runs `round` and checks that each of its `total` events was answered right and answered
/// once: the worker's count of answers grows by exactly `total` (a retried or locally
/// re-evaluated event would break the count one way or the other).
fn answered_once(
    sandbox: &Sandbox,
    total: usize,
    what: &str,
    round: impl FnOnce() -> anyhow::Result<Load>,
) -> anyhow::Result<Load> {
    let before = served(&sandbox.status()?);
    let round = round()?;
    let counted = served(&sandbox.status()?).saturating_sub(before);
    if round.wrong > 0 || counted != total as u64 {
        bail!(
            "{} of {total} {what} ({} wrong or missing), and the worker answered {counted}: \
             some were lost or doubled",
            round.lat.len(),
            round.wrong
        );
    }
    Ok(round)
}

/// Events the host's workers have answered so far.
fn served(status: &serde_json::Value) -> u64 {
    status["workers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w["served"].as_u64())
        .sum()
}

fn worker_rss(status: &serde_json::Value) -> Vec<u64> {
    status["workers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| rss_kib(w["pid"].as_u64().unwrap_or(0)))
        .collect()
}

/// The round with the median throughput.
fn median_round(mut rounds: Vec<Load>) -> Load {
    rounds.sort_by(|a, b| a.per_s.total_cmp(&b.per_s));
    let mid = rounds.len() / 2;
    rounds.swap_remove(mid)
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

/// `clients` runs of `job` in flight at once until `total` have run, all started and awaited
/// on one thread, as Claude Code (a Bun executable) starts its hooks from its one JavaScript
/// thread: the harness adds no runnable threads of its own to the machine it measures.
fn concurrent(
    clients: usize,
    total: usize,
    job: impl AsyncFn() -> anyhow::Result<bool>,
) -> anyhow::Result<Load> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let started = Cell::new(0);
    let lat = RefCell::new(Vec::with_capacity(total));
    let wrong = Cell::new(0);
    let slot = async || {
        while started.get() < total {
            started.set(started.get() + 1);
            let t = Instant::now();
            match job().await {
                Ok(true) => lat.borrow_mut().push(t.elapsed().as_secs_f64() * 1000.0),
                _ => wrong.set(wrong.get() + 1),
            }
        }
    };
    // Unconstrained: this whole loop is one task to tokio, whose per-poll budget, once the
    // first slots polled spend it, defers every later one to the next wake-up, so some wait
    // far longer than others (measured without it: /bin/true p99 17x p50, ours 6x). Each slot
    // is polled only when its own child or socket moved, as an event loop dispatches (polling
    // all 64 on every wake-up favoured the first ones: /bin/true p99 2.0x instead of 1.1x).
    let mut slots: FuturesUnordered<_> = (0..clients)
        .map(|_| tokio::task::unconstrained(slot()))
        .collect();
    let start = Instant::now();
    runtime.block_on(async { while slots.next().await.is_some() {} });
    let wall = start.elapsed().as_secs_f64();
    drop(slots);
    Ok(Load::of(lat.into_inner(), wrong.get(), wall))
}

/// `clients` threads running `total` jobs between them, each thread blocked on its own run.
fn threaded(
    clients: usize,
    total: usize,
    job: impl Fn() -> anyhow::Result<bool> + Sync,
) -> anyhow::Result<Load> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(total));
    let wrong = AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..clients {
            s.spawn(|| {
                while next.fetch_add(1, Ordering::SeqCst) < total {
                    let t = Instant::now();
                    match job() {
                        Ok(true) => {
                            let ms = t.elapsed().as_secs_f64() * 1000.0;
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
    let lat = results.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(Load::of(
        lat,
        wrong.load(Ordering::SeqCst),
        start.elapsed().as_secs_f64(),
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> anyhow::Result<Args> {
        Args::parse(&list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn arguments_name_what_is_wrong() {
        assert_eq!(
            args(&[]).unwrap(),
            Args {
                quick: false,
                only: None
            }
        );
        assert_eq!(
            args(&["--only", "load,cold", "--quick"]).unwrap(),
            Args {
                quick: true,
                only: Some(vec!["load".into(), "cold".into()])
            }
        );
        assert_eq!(
            args(&["--only", "exec"]).unwrap(),
            Args {
                quick: false,
                only: Some(vec!["exec".into()])
            }
        );
        assert_eq!(
            args(&["--quick", "--only", "warm,exec,plugin"])
                .unwrap()
                .only
                .unwrap(),
            ["warm", "exec", "plugin"]
        );
        let err = |list: &[&str]| args(list).unwrap_err().to_string();
        let exe = err(&["--only", "exe"]);
        assert!(
            exe.contains("\"exe\"") && exe.contains("warm, exec, plugin"),
            "{exe}"
        );
        assert!(
            err(&["--quik"]).contains("\"--quik\""),
            "{}",
            err(&["--quik"])
        );
        assert!(err(&["--only"]).contains("--only needs"));
        let bad = err(&["--only", "load,colt"]);
        assert!(
            bad.contains("\"colt\"") && bad.contains("engine, warm"),
            "{bad}"
        );
    }

    /// Every job runs once, `clients` at a time and never more, each failure counted, and
    /// the loop ends (a slot its waker failed to requeue would hang it: hence the watchdog).
    #[test]
    fn the_loop_runs_every_job_once_with_all_slots_busy() {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (ran, now, most) = (Cell::new(0), Cell::new(0), Cell::new(0));
            let load = concurrent(8, 100, async || {
                ran.set(ran.get() + 1);
                let this = ran.get();
                now.set(now.get() + 1);
                most.set(most.get().max(now.get()));
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                now.set(now.get() - 1);
                Ok(this % 10 != 0)
            })
            .unwrap();
            let _ = done.send((ran.get(), most.get(), load.lat.len(), load.wrong));
        });
        let (ran, most, answered, wrong) = finished
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the loop did not finish");
        assert_eq!((ran, most), (100, 8));
        assert_eq!((answered, wrong), (90, 10));
    }
}

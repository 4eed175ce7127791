//! In-process cost of one PreToolUse Bash event against 100 declarative hooks, beside its floor,
//! and what the builtin packs add to it and to loading a project.
//!
//! Run with `cargo run --release -p captain-hook --example bench_engine` (or `cargo xtask
//! bench`). For each command line it measures the worker's whole path (payload bytes in, with
//! what the host sends along; the envelope line out) and, in the same rounds, the floor any engine pays for that event: reading
//! the JSON payload and parsing the Bash line. Rounds alternate the two, and the figures are the
//! medians over rounds, so a machine busy with other work slows both alike.

// A benchmark with a fixed, known-good payload: a failure to build it is a bug to stop on.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capt_hook_core::{EventContext, EventKind};
use capt_hook_shell::CommandLine;
use captain_hook::loader::load_str;
use captain_hook::project::Origin;
use captain_hook::{DispatchOptions, Dispatcher, Event, Project, Registry};
use serde_json::{Value, json};

// The allocator the stock worker runs on, so this measures the worker's path.
#[global_allocator]
static ALLOC: captain_hook::Allocator = captain_hook::Allocator;

/// 100 hooks in the shapes real projects use; the runtime bench loads the same file.
const HUNDRED_HOOKS: &str = include_str!("hundred-hooks.toml");
/// The per-event target with 100 hooks (issue 15).
const TARGET_US: f64 = 10.0;
/// Events per round, and rounds per command line (`--quick` runs a fifth of them).
const PER_ROUND: u32 = 2_000;
const ROUNDS: u32 = 15;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { ROUNDS / 5 } else { ROUNDS };
    // A typical agent command, a long compound line, and a line with a shell payload and a
    // command substitution (each nested level holds a compound line of its own).
    let lines = [
        "git status --short",
        "cd /work/app && git status --short | head -20 && cargo test -q -- --nocapture 2>&1 | tail -5",
        r#"bash -lc 'git fetch && git rebase origin/main' && git commit -m "$(cat msg.txt)""#,
    ];
    // `--count LINE N`: evaluate line LINE (0-2) N times and nothing else, for instruction
    // counts under `valgrind --tool=callgrind` (two counts' difference is the per-event cost).
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--count") {
        let line = args.get(i + 1).and_then(|a| a.parse::<usize>().ok());
        let n = args.get(i + 2).and_then(|a| a.parse::<u32>().ok());
        let (Some(line), Some(n)) = (line, n) else {
            eprintln!("usage: bench_engine --count <line 0-2> <events>");
            std::process::exit(1);
        };
        let Some(command) = lines.get(line) else {
            eprintln!("bench_engine: no line {line} (there are {})", lines.len());
            std::process::exit(1);
        };
        let (project, payload) = setup(command);
        for _ in 0..n {
            std::hint::black_box(project.evaluate_from(
                "PreToolUse",
                &payload,
                DispatchOptions::default(),
                from_host(),
            ));
        }
        return;
    }
    let mut worst: f64 = 0.0;
    for line in lines {
        worst = worst.max(bench(line, rounds));
    }
    println!(
        "engine: worst line {worst:.2} µs/event (target <= {TARGET_US}): {}",
        if worst <= TARGET_US { "met" } else { "NOT met" }
    );
    packs_cost(lines[1]);
}

/// Prints one line's figures; returns its µs per event.
fn bench(command: &str, rounds: u32) -> f64 {
    let (project, payload) = setup(command);
    let opts = DispatchOptions::default();
    let evaluate = || {
        let out = project.evaluate_from("PreToolUse", &payload, opts, from_host());
        std::hint::black_box(out);
    };
    let json_only = || {
        let v = capt_hook_proto::payload::parse(&payload).expect("payload");
        std::hint::black_box(v);
    };
    let floor = || {
        let v = capt_hook_proto::payload::parse(&payload)
            .expect("payload")
            .expect("object");
        let line = v["tool_input"]["command"].as_str().map(CommandLine::parse);
        std::hint::black_box((v, line));
    };
    let bash_only = || {
        std::hint::black_box(CommandLine::parse(command));
    };
    // Warm caches, the handler pool and the allocator.
    for _ in 0..PER_ROUND {
        evaluate();
        floor();
    }
    let (mut full, mut base, mut json_us, mut bash_us) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        full.push(per_event(&evaluate));
        base.push(per_event(&floor));
        json_us.push(per_event(&json_only));
        bash_us.push(per_event(&bash_only));
    }
    let (full, base) = (median(&mut full), median(&mut base));
    let (json_us, bash_us) = (median(&mut json_us), median(&mut bash_us));
    let answer = project.evaluate("PreToolUse", &payload, opts);
    println!("engine: PreToolUse Bash `{command}`, 100 declarative hooks");
    println!(
        "  evaluate (payload bytes -> envelope)  {full:7.2} µs/event  {:>9.0} events/s  {:.1}x the floor  (target <= {TARGET_US})",
        1e6 / full,
        full / base
    );
    println!(
        "  floor: read the JSON + parse the line {base:7.2} µs/event  (JSON {json_us:.2}, Bash {bash_us:.2})"
    );
    println!(
        "  hooks' share                          {:7.2} µs/event  (verdict: {})",
        full - base,
        verdict(answer.stdout.as_deref())
    );
    full
}

/// What a worker is told with an event by its host: here only the host's notice epoch, so the
/// session's notice file is looked for once (as in a worker), not on every event.
fn from_host() -> Origin {
    Origin {
        notice_epoch: Some(1),
        ..Origin::default()
    }
}

/// The 100-hook project and one PreToolUse Bash payload running `command`.
fn setup(command: &str) -> (Project, Vec<u8>) {
    let mut registry = Registry::new();
    if let Err(errors) = load_str(HUNDRED_HOOKS, "bench", &mut registry) {
        for e in errors {
            eprintln!("{e}");
        }
        std::process::exit(1);
    }
    assert_eq!(registry.hooks().len(), 100);
    let project = Project::from_registry(Path::new("/work/app"), registry);
    let payload = json!({
        "session_id": "bench", "transcript_path": "/dev/null", "hook_event_name": "PreToolUse",
        "cwd": "/work/app", "tool_name": "Bash", "tool_use_id": "toolu_bench",
        "tool_input": {"command": command, "description": "run tests"},
    })
    .to_string()
    .into_bytes();
    (project, payload)
}

/// The mean cost of one call of `f` over one round, in µs.
fn per_event(f: &dyn Fn()) -> f64 {
    let start = Instant::now();
    for _ in 0..PER_ROUND {
        f();
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(PER_ROUND)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// What the envelope decided, for the reader to see the line really matched something.
fn verdict(stdout: Option<&str>) -> String {
    let Some(v) = stdout.and_then(|s| serde_json::from_str::<Value>(s).ok()) else {
        return "none".to_owned();
    };
    let out = &v["hookSpecificOutput"];
    match out["permissionDecision"].as_str() {
        Some(d) => d.to_owned(),
        None if out.get("additionalContext").is_some() => "context".to_owned(),
        None => "other".to_owned(),
    }
}

/// The project's 100 hooks alone against the same plus the always-on builtin packs, alternated
/// in blocks so machine noise hits both; then a project's load with and without its packs.
fn packs_cost(command: &str) {
    let hundred = || {
        let mut r = Registry::new();
        load_str(HUNDRED_HOOKS, "bench", &mut r).expect("the bench's hooks load");
        r
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let (root, home) = (tmp.path().join("proj"), tmp.path().join("home"));
    std::fs::create_dir_all(root.join(".claude/hooks")).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    let mut with = hundred();
    let packs = captain_hook::packs::load(
        &root,
        &root.join(".claude/hooks"),
        &home.join(".claude"),
        &mut with,
    );
    assert!(packs.errors.is_empty(), "{:?}", packs.errors);
    let added = with.hooks().len() - 100;
    let payload = json!({
        "session_id": "bench", "hook_event_name": "PreToolUse", "cwd": "/work/app",
        "tool_name": "Bash", "tool_input": {"command": command},
    });
    let time_block = |d: &Dispatcher| {
        let start = Instant::now();
        for _ in 0..1_000 {
            let evt = Event::new(
                EventKind::PreToolUse,
                payload.clone(),
                EventContext::default(),
            )
            .expect("object payload");
            std::hint::black_box(d.dispatch(&Arc::new(evt), DispatchOptions::default()));
        }
        start.elapsed() / 1_000
    };
    let (alone, both) = (
        Dispatcher::new(Arc::new(hundred()), None),
        Dispatcher::new(Arc::new(with), None),
    );
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        a.push(time_block(&alone));
        b.push(time_block(&both));
    }
    let (a, b) = (median_duration(&mut a), median_duration(&mut b));
    println!("engine: the same line x 100 hooks + the always-on builtin packs ({added} hooks)");
    println!(
        "  {:>10.2} µs/event without packs, {:.2} with: +{:.2} µs",
        micros(a),
        micros(b),
        micros(b.saturating_sub(a))
    );
    let (mut plain, mut packed) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        let start = Instant::now();
        std::hint::black_box(captain_hook::Project::load(
            &root,
            &root.join(".claude/hooks"),
        ));
        plain.push(start.elapsed());
        let start = Instant::now();
        std::hint::black_box(captain_hook::Project::load_with_packs(
            &root,
            &root.join(".claude/hooks"),
            &Registry::new(),
        ));
        packed.push(start.elapsed());
    }
    // The best of ten: loading is short enough that the median mostly measures other processes.
    let best = |v: &[Duration]| v.iter().min().copied().unwrap_or_default().as_secs_f64() * 1e3;
    println!(
        "  {:>10.2} ms to load an empty project, {:.2} with its packs (a worker's start; best of 10)",
        best(&plain),
        best(&packed)
    );
}

fn median_duration(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

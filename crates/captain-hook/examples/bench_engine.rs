//! In-process cost of one PreToolUse Bash event against 100 declarative hooks, and what the
//! builtin packs add to it and to loading a project.
//!
//! Run with `cargo run --release -p captain-hook --example bench_engine` (or `cargo xtask
//! bench`). Prints events per second, µs per event and the share spent parsing the command.

// A benchmark with a fixed, known-good payload: a failure to build it is a bug to stop on.
#![allow(clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use capt_hook_core::{EventContext, EventKind, envelope};
use capt_hook_shell::CommandLine;
use captain_hook::loader::load_str;
use captain_hook::{DispatchOptions, Dispatcher, Event, Registry};
use serde_json::json;

/// 100 hooks in the shapes real projects use; the runtime bench loads the same file.
const HUNDRED_HOOKS: &str = include_str!("hundred-hooks.toml");

fn main() {
    // A typical agent command, a long compound line (both plain: no parser needed), and a line
    // with a substitution and a shell payload, which takes the full tree-sitter parse.
    bench("git status --short");
    bench(
        "cd /work/app && git status --short | head -20 && cargo test -q -- --nocapture 2>&1 | tail -5",
    );
    bench(r#"bash -lc 'git fetch && git rebase origin/main' && git commit -m "$(cat msg.txt)""#);
    packs_cost(
        "cd /work/app && git status --short | head -20 && cargo test -q -- --nocapture 2>&1 | tail -5",
    );
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
    let packs = captain_hook::packs::load(&root, &root.join(".claude/hooks"), &home, &mut with);
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
    let (a, b) = (median(&mut a), median(&mut b));
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

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn bench(command: &str) {
    let mut registry = Registry::new();
    if let Err(errors) = load_str(HUNDRED_HOOKS, "bench", &mut registry) {
        for e in errors {
            eprintln!("{e}");
        }
        std::process::exit(1);
    }
    assert_eq!(registry.hooks().len(), 100);
    let dispatcher = Dispatcher::new(Arc::new(registry), None);
    let payload = json!({
        "session_id": "bench", "hook_event_name": "PreToolUse", "cwd": "/work/app",
        "tool_name": "Bash", "tool_input": {"command": command, "description": "run tests"},
    });

    let iterations = 20_000u32;
    let run_once = || {
        let evt = Event::new(
            EventKind::PreToolUse,
            payload.clone(),
            EventContext::default(),
        )
        .expect("object payload");
        let evt = Arc::new(evt);
        let r = dispatcher.dispatch(&evt, DispatchOptions::default());
        std::hint::black_box(envelope(EventKind::PreToolUse, r.as_ref()));
    };
    for _ in 0..1_000 {
        run_once();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        run_once();
    }
    let total = start.elapsed();

    let parse_start = Instant::now();
    for _ in 0..iterations {
        std::hint::black_box(CommandLine::parse(command));
    }
    let parse = parse_start.elapsed();

    let per_event = total / iterations;
    let per_parse = parse / iterations;
    println!("engine: PreToolUse Bash `{command}` x 100 declarative hooks ({iterations} events)");
    println!(
        "  {:>10.1} events/s",
        iterations as f64 / total.as_secs_f64()
    );
    println!("  {:>10.2} µs/event (target <= 20)", micros(per_event));
    println!(
        "  {:>10.2} µs/event in Bash parsing ({:.0}% of the event)",
        micros(per_parse),
        100.0 * per_parse.as_secs_f64() / per_event.as_secs_f64()
    );
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

//! In-process cost of one PreToolUse Bash event against 100 declarative hooks.
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

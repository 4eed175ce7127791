//! Parse cost of a few command lines: `cargo run --release -p capt-hook-shell --example parse_bench`.

use std::time::Instant;

use capt_hook_shell::CommandLine;

fn main() {
    for line in [
        "git status --short",
        "cd /work/app && git status --short | head -20 && cargo test -q -- --nocapture 2>&1 | tail -5",
        "bash -lc 'git fetch && git rebase origin/main' && echo \"$(git rev-parse HEAD)\"",
    ] {
        for _ in 0..1_000 {
            std::hint::black_box(CommandLine::parse(line));
        }
        let n = 20_000;
        let start = Instant::now();
        for _ in 0..n {
            std::hint::black_box(CommandLine::parse(line));
        }
        let per = start.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!("{per:>8.2} µs  {line}");
    }
}

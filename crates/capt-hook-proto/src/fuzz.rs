//! The one configuration of the workspace's property tests (proptest), so every crate's runs
//! are reproducible the same way: a fixed seed unless [`CAPT_HOOK_FUZZ_SEED`] names one (a
//! number, or `random`), [`CAPT_HOOK_FUZZ_CASES`] multiplying the cases for a long local run,
//! and a failure shrunk and persisted under the crate's `proptest-regressions/` (committed, so
//! every later run, CI's included, tries it first). Compiled for proto's own tests and, through
//! the `proptest` feature, for other crates' dev-dependencies only.

use proptest::test_runner::{Config, RngSeed};

use crate::env::{CAPT_HOOK_FUZZ_CASES, CAPT_HOOK_FUZZ_SEED};

/// The seed CI runs with: the same inputs every time.
pub const FIXED_SEED: u64 = 0x00c4_9700_4b00_5eed;

/// The config of a property with `cases` cases (times [`CAPT_HOOK_FUZZ_CASES`]); says on
/// stderr which seed it runs, so a random one can be replayed.
pub fn config(cases: u32) -> Config {
    let seed = match std::env::var(CAPT_HOOK_FUZZ_SEED).ok().as_deref() {
        None | Some("") => FIXED_SEED,
        Some("random") => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(FIXED_SEED, |d| d.as_nanos() as u64),
        Some(n) => n.parse().unwrap_or(FIXED_SEED),
    };
    let factor = std::env::var(CAPT_HOOK_FUZZ_CASES)
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .filter(|f| *f > 0)
        .unwrap_or(1);
    eprintln!("properties: seed {seed} ({CAPT_HOOK_FUZZ_SEED} replays it), {cases}x{factor} cases");
    Config {
        cases: cases.saturating_mul(factor),
        rng_seed: RngSeed::Fixed(seed),
        ..Config::default()
    }
}

//! `capt-hook check` accepts every field the seeds' signatures list for gate, nudge, lint,
//! diff_lint, rewrite_code, styleguide and tickets: the fixture spells each one and must load
//! without a single error, and a misspelt field is still refused by name.

// A test fails by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use capt_hook_engine::registry::Registry;
use capt_hook_toml::loader::load_str;

const SEED_FIELDS: &str = include_str!("fixtures/seed_fields.toml");

#[test]
fn every_seed_field_loads() {
    let mut reg = Registry::new();
    if let Err(errors) = load_str(SEED_FIELDS, "seed_fields", &mut reg) {
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        panic!("the seeds' fields must load:\n{}", text.join("\n"));
    }
    let names: Vec<String> = reg.hooks().iter().map(|h| h.name.clone()).collect();
    for kind in [
        "every gate field",
        "every nudge field",
        "every lint field",
        "every lint string-mode field",
        "every diff_lint field",
        "every rewrite_code field",
        "every styleguide field",
        "every tickets field",
    ] {
        // Names are slugs: `seed_fields:gate_every_gate_field`.
        let slug = kind.replace([' ', '-'], "_");
        assert!(
            names.iter().any(|n| n.ends_with(&slug)),
            "{kind} not in {names:?}"
        );
    }
}

#[test]
fn a_field_the_seeds_do_not_list_is_still_refused_by_name() {
    let text = SEED_FIELDS.replacen("transcript_events = 50", "transcript_event = 50", 1);
    let errors = load_str(&text, "seed_fields", &mut Registry::new()).unwrap_err();
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(
        text.iter().any(|e| e.contains("transcript_event")),
        "{text:?}"
    );
}

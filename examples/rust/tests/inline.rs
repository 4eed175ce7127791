//! Every example's inline tests, run the way `capt-hook test` runs them: each hook alone through
//! the dispatcher a session uses, in a scratch state directory. Any failure fails the build.

use capt_hook_examples::{PAGES, registry};
use captain_hook::Registry;
use captain_hook::testing::{Status, human_report, run_registry};

#[test]
fn every_example_passes_its_inline_tests() {
    let registry = match registry() {
        Ok(r) => r,
        Err(e) => panic!("an example does not register: {e}"),
    };
    let outcomes = run_registry(&registry, None);
    let report = human_report(&outcomes);
    println!("{report}");
    let bad: Vec<_> = outcomes
        .iter()
        .filter(|o| o.status != Status::Pass)
        .collect();
    assert!(
        bad.is_empty(),
        "{} inline tests did not pass:\n{report}",
        bad.len()
    );
    // Every page registers hooks, and every hook carries at least one test.
    for (page, register) in PAGES {
        let mut reg = Registry::new();
        if let Err(e) = register(&mut reg) {
            panic!("{page}: {e}");
        }
        assert!(!reg.is_empty(), "{page} registers nothing");
        for hook in reg.hooks() {
            assert!(!hook.tests.is_empty(), "{} has no inline test", hook.name);
        }
    }
    // Names are unique across pages, so each hook's fire count and state are its own.
    let mut names: Vec<&str> = registry.hooks().iter().map(|h| h.name.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "two example hooks share a name");
}

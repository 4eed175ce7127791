//! longline's golden cases: `tests/golden/*.yaml`, each a `tests:` list of entries with `id`,
//! `command` and `expected.decision` (`allow`, `ask`, `deny`). An entry that runs under an
//! `overlay` or a `profile` tests a configuration of longline's, not its default policy, and is
//! skipped.

use std::path::Path;

use anyhow::{Context, bail};
use yaml_rust2::{Yaml, YamlLoader};

use super::corpus::{Case, Extracted, PeerVerdict};
use super::fetch::{files, read, relative};

/// Every golden case of the unpacked crate at `top`.
pub fn extract(top: &Path) -> anyhow::Result<Extracted> {
    let mut all = Extracted::default();
    let dir = top.join("tests/golden");
    for file in files(&dir, "yaml")? {
        let text = read(&file)?;
        all.extend(
            yaml_cases(&text, &relative(top, &file))
                .with_context(|| format!("reading {}", file.display()))?,
        );
    }
    Ok(all)
}

/// The cases of one golden file.
pub fn yaml_cases(text: &str, name: &str) -> anyhow::Result<Extracted> {
    let docs = YamlLoader::load_from_str(text).context("not YAML")?;
    let mut out = Extracted::default();
    for doc in &docs {
        let tests = match &doc["tests"] {
            Yaml::Array(tests) => tests,
            Yaml::BadValue | Yaml::Null => continue,
            _ => bail!("`tests` is not a list"),
        };
        for (i, test) in tests.iter().enumerate() {
            let label = test["id"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| format!("test {}", i + 1));
            if !test["overlay"].is_badvalue() || !test["profile"].is_badvalue() {
                out.skip("runs under a configuration overlay or profile");
                continue;
            }
            let Some(command) = test["command"].as_str() else {
                bail!("{label} has no string `command`");
            };
            let word = test["expected"]["decision"].as_str();
            let Some(expected) = word.and_then(PeerVerdict::parse) else {
                bail!("{label} has no known `expected.decision` ({word:?})");
            };
            out.cases
                .push(Case::new(command, expected, format!("{name}: {label}")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Sample entries in longline's golden format, written for this test.
    #[test]
    fn golden_entries() {
        let text = r#"
tests:
  - id: wipe
    command: "git clean -fdx"
    expected: { decision: deny, rule_id: git-clean }
  - id: look
    command: "git status"
    expected:
      decision: allow
  - id: ask-me
    command: 'python3 -c "print(1)"'
    expected:
      decision: ask
    note: "a judge would look"
  - id: configured
    overlay:
      disable_rules: [x]
    command: "curl x"
    expected: { decision: allow }
"#;
        let e = yaml_cases(text, "g.yaml").expect("reads");
        let got: Vec<_> = e
            .cases
            .iter()
            .map(|c| (c.command.as_str(), c.expected, c.source.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("git clean -fdx", PeerVerdict::Deny, "g.yaml: wipe"),
                ("git status", PeerVerdict::Allow, "g.yaml: look"),
                (
                    "python3 -c \"print(1)\"",
                    PeerVerdict::Ask,
                    "g.yaml: ask-me"
                ),
            ]
        );
        assert_eq!(
            e.skipped["runs under a configuration overlay or profile"],
            1
        );
    }

    #[test]
    fn an_entry_without_a_decision_is_an_error_naming_it() {
        let err = yaml_cases(
            "tests:\n  - id: odd\n    command: ls\n    expected: {}\n",
            "g",
        )
        .expect_err("no decision")
        .to_string();
        assert!(err.contains("odd"), "{err}");
        assert!(yaml_cases("tests: [\n", "g").is_err());
    }
}

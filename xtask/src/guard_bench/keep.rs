//! Disagreements with a peer that we keep on purpose (`xtask/guard-bench/keep.toml`): each entry
//! names the cases it covers (a command line, or a regex over it less those an `unless` regex
//! matches; optionally one peer and the peer's verdict, deny or ask, else both) and says why we
//! let the command run where the peer stops it. Covered cases leave the figures and are
//! printed as a count; an entry that covers no case is reported, so the list does not rot.
//!
//! Only the peer's stops can be kept. What we stop where the peer lets the command run always
//! counts (issue 28: "policy differences count: the pack sets the policy"): an over-block costs
//! the user a call whatever our reason, so the reasons for those live in docs/guard-bench.md.

use std::path::Path;

use anyhow::{Context, bail};
use regex::Regex;
use serde::Deserialize;

use super::corpus::{Case, PeerVerdict};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    keep: Vec<RawEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    peer: Option<String>,
    command: Option<String>,
    pattern: Option<String>,
    unless: Option<String>,
    expected: Option<String>,
    reason: String,
}

/// One kept disagreement.
#[derive(Debug)]
pub struct Entry {
    pub peer: Option<String>,
    matcher: Matcher,
    /// A regex that takes a case back out (`pattern` has no look-ahead to say it).
    unless: Option<Regex>,
    pub expected: Option<PeerVerdict>,
    pub reason: String,
    /// What the entry says in one line (its command or pattern), for the report.
    pub label: String,
}

#[derive(Debug)]
enum Matcher {
    Exact(String),
    Pattern(Regex),
}

impl Entry {
    pub fn covers(&self, peer: &str, case: &Case) -> bool {
        self.peer.as_deref().is_none_or(|p| p == peer)
            && matches!(case.expected, PeerVerdict::Deny | PeerVerdict::Ask)
            && self.expected.is_none_or(|e| e == case.expected)
            && match &self.matcher {
                Matcher::Exact(c) => *c == case.command,
                Matcher::Pattern(re) => re.is_match(&case.command),
            }
            && self
                .unless
                .as_ref()
                .is_none_or(|re| !re.is_match(&case.command))
    }
}

/// The entries of a keep file; any mistake in it names the entry and fails the bench.
pub fn parse(text: &str, name: &str) -> anyhow::Result<Vec<Entry>> {
    let file: File = toml::from_str(text).with_context(|| format!("{name}: not a keep list"))?;
    let mut out = Vec::with_capacity(file.keep.len());
    for (i, raw) in file.keep.into_iter().enumerate() {
        let at = format!("{name}: keep entry {}", i + 1);
        if raw.reason.trim().is_empty() {
            bail!("{at}: `reason` is empty (say why we keep the disagreement)");
        }
        let (matcher, label) = match (raw.command, raw.pattern) {
            (Some(c), None) => (Matcher::Exact(c.clone()), c),
            (None, Some(p)) => (
                Matcher::Pattern(
                    Regex::new(&p).with_context(|| format!("{at}: `pattern` is not a regex"))?,
                ),
                format!("/{p}/"),
            ),
            _ => bail!("{at}: give exactly one of `command` and `pattern`"),
        };
        let unless = match raw.unless {
            None => None,
            Some(u) => {
                Some(Regex::new(&u).with_context(|| format!("{at}: `unless` is not a regex"))?)
            }
        };
        let expected = match raw.expected {
            None => None,
            Some(word) => match PeerVerdict::parse(&word) {
                Some(v @ (PeerVerdict::Deny | PeerVerdict::Ask)) => Some(v),
                Some(_) => bail!(
                    "{at}: `expected` {word:?}: only a case the peer stops (deny, ask) can be kept; what we stop where the peer allows counts against the pack whatever the reason (write it in docs/guard-bench.md)"
                ),
                None => bail!("{at}: `expected` {word:?} is not a verdict"),
            },
        };
        out.push(Entry {
            peer: raw.peer,
            matcher,
            unless,
            expected,
            reason: raw.reason,
            label,
        });
    }
    Ok(out)
}

/// The checked-in list.
pub fn load(path: &Path) -> anyhow::Result<Vec<Entry>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_cover_by_command_pattern_peer_and_verdict() {
        let entries = parse(
            r#"
[[keep]]
command = "git push origin main"
reason = "a plain push rewrites nothing"

[[keep]]
peer = "longline"
pattern = "^pip install"
unless = "--force-reinstall"
expected = "ask"
reason = "installs are not destructive"
"#,
            "keep.toml",
        )
        .expect("parses");
        let push = Case::new("git push origin main", PeerVerdict::Ask, "s".into());
        let pip = Case::new("pip install x", PeerVerdict::Ask, "s".into());
        let pip_denied = Case::new("pip install x", PeerVerdict::Deny, "s".into());
        assert!(entries[0].covers("dcg", &push));
        let allowed_push = Case::new("git push origin main", PeerVerdict::Allow, "s".into());
        assert!(
            !entries[0].covers("dcg", &allowed_push),
            "only what the peer stops"
        );
        assert!(entries[1].covers("longline", &pip));
        assert!(!entries[1].covers("dcg", &pip));
        assert!(!entries[1].covers("longline", &pip_denied));
        let forced = Case::new(
            "pip install --force-reinstall x",
            PeerVerdict::Ask,
            "s".into(),
        );
        assert!(!entries[1].covers("longline", &forced));
        assert_eq!(entries[1].label, "/^pip install/");
    }

    #[test]
    fn mistakes_name_the_entry() {
        let no_reason = parse("[[keep]]\ncommand = \"x\"\nreason = \"\"\n", "k")
            .expect_err("empty reason")
            .to_string();
        assert!(no_reason.contains("keep entry 1"), "{no_reason}");
        let both = parse(
            "[[keep]]\ncommand = \"x\"\npattern = \"y\"\nreason = \"r\"\n",
            "k",
        )
        .expect_err("both")
        .to_string();
        assert!(both.contains("exactly one"), "{both}");
        let bad = format!(
            "{:#}",
            parse("[[keep]]\npattern = \"(\"\nreason = \"r\"\n", "k").expect_err("regex")
        );
        assert!(bad.contains("not a regex"), "{bad}");
        assert!(parse("[[keep]]\ncommand = \"x\"\nreason = \"r\"\ntypo = 1\n", "k").is_err());
        let over_block = parse(
            "[[keep]]\ncommand = \"x\"\nexpected = \"allow\"\nreason = \"r\"\n",
            "k",
        )
        .expect_err("an allowed case")
        .to_string();
        assert!(
            over_block.contains("keep entry 1")
                && over_block.contains("only a case the peer stops"),
            "{over_block}"
        );
    }
}

//! `cargo xtask cc-surface`: the hook events the pinned Claude Code knows, read from its own
//! binary, against our events table (`capt_hook_core::EventKind::ALL`).
//!
//! The binary is a Bun executable whose JavaScript modules are stored as plain text, so the
//! settings schema's event list is in it as an array literal:
//! `["PreToolUse","PostToolUse",…,"PreSkillShellCommand"]` (2.1.332 holds it twice: the runtime
//! settings schema and the SDK's). Shorter arrays that start the same way (the events whose
//! matcher is a tool name, the events a cloud session forwards, …) are subsets of it, so the
//! list is the longest such literal; a shorter one naming an event the longest lacks is
//! reported, as it would mean the guess picked the wrong array.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use capt_hook_core::EventKind;

use crate::e2e::claude;

/// How every event list in the bundle starts.
const NEEDLE: &[u8] = br#"["PreToolUse","PostToolUse""#;

/// The longest array literal the scan reads (34 names take about 600 bytes).
const MAX_LITERAL: usize = 8 * 1024;

/// Events our host sends that Claude Code does not.
const OURS_ONLY: &[&str] = &["ResourcePressure"];

/// The array literals of quoted event names in a bundle, distinct, each with where it appears.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Lists {
    /// Each distinct list and the byte offsets of its copies.
    pub found: BTreeMap<Vec<String>, Vec<usize>>,
}

impl Lists {
    /// The bundle's event list: the longest literal. An error when there is none, or when two
    /// different lists share the longest length (no way to tell which is the schema's).
    pub fn events(&self) -> anyhow::Result<&[String]> {
        let Some(max) = self.found.keys().map(Vec::len).max() else {
            bail!(
                "no array literal starting with {} in the binary",
                String::from_utf8_lossy(NEEDLE)
            );
        };
        let longest: Vec<&Vec<String>> = self.found.keys().filter(|l| l.len() == max).collect();
        match longest.as_slice() {
            [one] => Ok(one.as_slice()),
            several => bail!(
                "{} different event lists of {max} names; cannot tell which is the schema's: {}",
                several.len(),
                several
                    .iter()
                    .map(|l| l.join(","))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ),
        }
    }

    /// Names in a shorter list that the event list lacks (none in 2.1.332).
    pub fn strays(&self) -> anyhow::Result<BTreeSet<String>> {
        let events: BTreeSet<&String> = self.events()?.iter().collect();
        Ok(self
            .found
            .keys()
            .flatten()
            .filter(|n| !events.contains(n))
            .cloned()
            .collect())
    }
}

/// Every array literal in `bytes` that starts with [`NEEDLE`] and holds only quoted names
/// (ASCII letters), comma-separated, without spaces, as a minifier writes them.
pub fn scan(bytes: &[u8]) -> Lists {
    let mut lists = Lists::default();
    for start in memchr::memmem::find_iter(bytes, NEEDLE) {
        let end = (start + MAX_LITERAL).min(bytes.len());
        if let Some(names) = parse_literal(&bytes[start..end]) {
            lists.found.entry(names).or_default().push(start);
        }
    }
    lists
}

/// The names of `["A","B",…]` at the start of `bytes`, or `None` when it is not such a literal.
fn parse_literal(bytes: &[u8]) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut rest = bytes.strip_prefix(b"[")?;
    loop {
        rest = rest.strip_prefix(b"\"")?;
        let len = rest.iter().position(|&b| b == b'"')?;
        let name = &rest[..len];
        if name.is_empty() || !name.iter().all(u8::is_ascii_alphabetic) {
            return None;
        }
        names.push(String::from_utf8_lossy(name).into_owned());
        rest = &rest[len + 1..];
        match rest.first()? {
            b',' => rest = &rest[1..],
            b']' => return Some(names),
            _ => return None,
        }
    }
}

/// How the bundle's list and ours differ.
#[derive(Debug, PartialEq, Eq)]
pub struct Diff {
    /// In the bundle, not in our table: events Claude Code sends that we cannot name.
    pub missing: Vec<String>,
    /// In our table (but for [`OURS_ONLY`]), not in the bundle.
    pub extra: Vec<String>,
}

/// Compares the bundle's events with `ours` (our table's names).
pub fn compare(bundle: &[String], ours: &[&str]) -> Diff {
    let bundle_set: BTreeSet<&str> = bundle.iter().map(String::as_str).collect();
    let ours_set: BTreeSet<&str> = ours
        .iter()
        .copied()
        .filter(|n| !OURS_ONLY.contains(n))
        .collect();
    Diff {
        missing: bundle_set
            .difference(&ours_set)
            .map(|s| (*s).to_owned())
            .collect(),
        extra: ours_set
            .difference(&bundle_set)
            .map(|s| (*s).to_owned())
            .collect(),
    }
}

/// Entry point: `cc-surface [--binary PATH]` (default: the pinned Claude Code the e2e suite
/// installs, installed first when missing).
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let binary = match args {
        [] => {
            let target = crate::target_dir()?;
            claude::ensure(&claude::cache_dir(&target))?
        }
        [flag, path] if flag == "--binary" => PathBuf::from(path),
        other => {
            bail!("cc-surface: unknown arguments {other:?} (usage: cc-surface [--binary PATH])")
        }
    };
    if report(&binary)? {
        bail!(
            "{} sends events our table (crates/capt-hook-core/src/events.rs) lacks",
            binary.display()
        );
    }
    Ok(())
}

/// Prints the comparison for `binary`; true when the bundle has an event our table lacks.
fn report(binary: &Path) -> anyhow::Result<bool> {
    let bytes = std::fs::read(binary).with_context(|| format!("reading {}", binary.display()))?;
    let lists = scan(&bytes);
    let events = lists
        .events()
        .with_context(|| format!("reading the hook event list of {}", binary.display()))?;
    let copies = &lists.found[events];
    println!("cc-surface: {}", binary.display());
    println!(
        "bundle: {} events (the longest of {} event lists; {} cop{} at byte {})",
        events.len(),
        lists.found.len(),
        copies.len(),
        if copies.len() == 1 { "y" } else { "ies" },
        copies
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    for stray in lists.strays()? {
        println!(
            "warning: a shorter event list in the bundle names {stray}, which the longest lacks"
        );
    }
    let ours: Vec<&str> = EventKind::ALL.iter().map(|e| e.name()).collect();
    println!(
        "ours: {} events ({} of them ours only: {})",
        ours.len(),
        OURS_ONLY.len(),
        OURS_ONLY.join(", ")
    );
    let diff = compare(events, &ours);
    if diff.missing.is_empty() {
        println!("in the bundle, not in our table: none");
    } else {
        println!(
            "ERROR in the bundle, not in our table: {}",
            diff.missing.join(", ")
        );
    }
    if diff.extra.is_empty() {
        println!("in our table, not in the bundle: none");
    } else {
        println!(
            "warning: in our table, not in the bundle (Claude Code never sends them): {}",
            diff.extra.join(", ")
        );
    }
    Ok(!diff.missing.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    /// Bytes laid out as in the binary: machine code around the JavaScript, the schema's list
    /// twice, shorter subsets, a `new Set([...])`, a literal cut by the end of the file, and
    /// look-alikes that are not lists of names.
    fn fixture() -> Vec<u8> {
        let mut b = vec![0u8, 0x7f, b'E', b'L', b'F', 0xff, 0xfe];
        b.extend_from_slice(
            br#"var Oc=["PreToolUse","PostToolUse","Stop","PreSkillShellCommand"];"#,
        );
        b.extend_from_slice(&[0x00, 0x9c, 0x22, 0x5b]);
        b.extend_from_slice(br#"f=new Set(["PreToolUse","PostToolUse","Stop"]),"#);
        b.extend_from_slice(br#"x=["PreToolUse","PostToolUse"];"#);
        b.extend_from_slice(br#"y=["PreToolUse","PostToolUse",e.kind];"#);
        b.extend_from_slice(br#"z=["PreToolUse","PostToolUse","Pre Tool"];"#);
        b.extend_from_slice(br#"w=["PreToolUse","PostToolUse" ,"Stop"];"#);
        b.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        b.extend_from_slice(br#"SK=["PreToolUse","PostToolUse","Stop","PreSkillShellCommand"],"#);
        b.extend_from_slice(br#"cut=["PreToolUse","PostToolUse","Stop","PreSkillShellCommand","#);
        b
    }

    #[test]
    fn the_longest_list_of_names_is_the_event_list() {
        let bytes = fixture();
        let lists = scan(&bytes);
        let keys: Vec<&Vec<String>> = lists.found.keys().collect();
        assert_eq!(
            keys,
            [
                &names(&["PreToolUse", "PostToolUse"]),
                &names(&["PreToolUse", "PostToolUse", "Stop"]),
                &names(&["PreToolUse", "PostToolUse", "Stop", "PreSkillShellCommand"]),
            ],
            "the look-alikes and the cut literal are not lists"
        );
        let events = lists.events().unwrap();
        assert_eq!(
            events,
            names(&["PreToolUse", "PostToolUse", "Stop", "PreSkillShellCommand"])
        );
        let copies = &lists.found[events];
        assert_eq!(copies.len(), 2);
        assert_eq!(&bytes[copies[0] - 7..copies[0]], b"var Oc=");
        assert!(lists.strays().unwrap().is_empty());
    }

    #[test]
    fn no_list_or_two_longest_lists_are_errors() {
        let err = scan(b"\0\0 nothing here [\"PreToolUse\"]")
            .events()
            .unwrap_err();
        assert!(err.to_string().contains("no array literal"), "{err}");
        let two = scan(
            br#"a=["PreToolUse","PostToolUse","Stop"];b=["PreToolUse","PostToolUse","Setup"];"#,
        );
        let err = two.events().unwrap_err();
        assert!(err.to_string().contains("cannot tell"), "{err}");
    }

    #[test]
    fn a_shorter_list_naming_another_event_is_a_stray() {
        let lists = scan(
            br#"a=["PreToolUse","PostToolUse","Stop","Setup"];b=["PreToolUse","PostToolUse","Odd"];"#,
        );
        assert_eq!(
            lists.strays().unwrap().into_iter().collect::<Vec<_>>(),
            ["Odd"]
        );
    }

    #[test]
    fn differences_both_ways_and_our_own_events_are_not_extra() {
        let bundle = names(&["PreToolUse", "Stop", "PreSkillShellCommand"]);
        let diff = compare(
            &bundle,
            &["PreToolUse", "Stop", "Setup", "ResourcePressure"],
        );
        assert_eq!(diff.missing, ["PreSkillShellCommand"]);
        assert_eq!(diff.extra, ["Setup"]);
        let same = compare(&bundle, &["Stop", "PreSkillShellCommand", "PreToolUse"]);
        assert!(same.missing.is_empty() && same.extra.is_empty());
    }

    /// Our table, read the way `run` reads it, is what the docs say: Claude Code's 34 events
    /// and ResourcePressure.
    #[test]
    fn our_table_holds_our_own_event() {
        let ours: Vec<&str> = EventKind::ALL.iter().map(|e| e.name()).collect();
        for own in OURS_ONLY {
            assert!(ours.contains(own), "{own} is not in EventKind::ALL");
        }
    }
}

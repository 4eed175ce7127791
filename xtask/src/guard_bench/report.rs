//! The figures: per peer and family, how many of the peer's destructive cases we stop (split by
//! how the peer and we stop them), how many of its allowed cases we stop, what we kept on
//! purpose and what crashed; then issue 28's thresholds over every peer's in-family cases.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;

use super::corpus::{Case, Family, PeerVerdict};
use super::runner::Ours;

/// One case run once.
#[derive(Debug)]
pub struct Row<'a> {
    pub peer: &'static str,
    pub case: &'a Case,
    pub ours: Ours,
    /// The keep entry covering the case, by index.
    pub kept: Option<usize>,
}

/// Whether the keep list takes its cases out of the figures (`--no-keep` sets it aside: issue
/// 28's Done-when counts policy differences, so the pack alone must meet the thresholds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Apply,
    SetAside,
}

impl Keep {
    fn other(self) -> Keep {
        match self {
            Keep::Apply => Keep::SetAside,
            Keep::SetAside => Keep::Apply,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Keep::Apply => "with the keep list",
            Keep::SetAside => "without the keep list",
        }
    }
}

/// Counts of one peer verdict: cases, and how many we denied or asked.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub n: usize,
    pub deny: usize,
    pub ask: usize,
}

impl Counts {
    fn add(&mut self, ours: &Ours) {
        self.n += 1;
        match ours {
            Ours::Deny(_) => self.deny += 1,
            Ours::Ask(_) => self.ask += 1,
            _ => {}
        }
    }

    fn merge(&mut self, other: Counts) {
        self.n += other.n;
        self.deny += other.deny;
        self.ask += other.ask;
    }

    pub fn stopped(self) -> usize {
        self.deny + self.ask
    }

    /// The share stopped, in percent (0 cases: `None`).
    pub fn share(self) -> Option<f64> {
        (self.n > 0).then(|| 100.0 * self.stopped() as f64 / self.n as f64)
    }

    fn cell(self) -> String {
        match self.share() {
            None => "-".into(),
            Some(p) => format!("{p:5.1}% {}+{}/{}", self.deny, self.ask, self.n),
        }
    }
}

/// The tally of a set of rows (kept and failed cases are out of the verdict counts).
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub deny: Counts,
    pub ask: Counts,
    pub allow: Counts,
    pub warn: usize,
    pub kept: usize,
    pub failed: usize,
}

impl Tally {
    pub fn of<'r, 'a: 'r>(rows: impl IntoIterator<Item = &'r Row<'a>>) -> Tally {
        Tally::counting(rows, Keep::Apply)
    }

    /// The tally with the keep list applied or set aside: set aside, kept cases count like
    /// any other, so the figures show what the kept disagreements cost.
    pub fn counting<'r, 'a: 'r>(rows: impl IntoIterator<Item = &'r Row<'a>>, keep: Keep) -> Tally {
        let keep = keep == Keep::Apply;
        let mut t = Tally::default();
        for row in rows {
            if keep && row.kept.is_some() {
                t.kept += 1;
                continue;
            }
            if row.ours.failed() {
                t.failed += 1;
                continue;
            }
            match row.case.expected {
                PeerVerdict::Deny => t.deny.add(&row.ours),
                PeerVerdict::Ask => t.ask.add(&row.ours),
                PeerVerdict::Allow => t.allow.add(&row.ours),
                PeerVerdict::Warn => t.warn += 1,
            }
        }
        t
    }

    /// Destructive cases (the peer denies or asks) and how many we stopped.
    pub fn destructive(self) -> Counts {
        let mut c = self.deny;
        c.merge(self.ask);
        c
    }
}

const HEADER: &str = "  family      peer denies: we stop (deny+ask)  peer asks: we stop       peer allows: we stop     warn  kept  crash";

fn line(out: &mut String, label: &str, t: Tally) {
    let _ = writeln!(
        out,
        "  {label:<11} {:>30}  {:>23}  {:>23}  {:>4}  {:>4}  {:>5}",
        t.deny.cell(),
        t.ask.cell(),
        t.allow.cell(),
        t.warn,
        t.kept,
        t.failed
    );
}

/// The table of one peer's rows.
pub fn peer_table(rows: &[Row<'_>], keep: Keep) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{HEADER}");
    let mut by_family: BTreeMap<Family, Vec<&Row<'_>>> = BTreeMap::new();
    for row in rows {
        by_family.entry(row.case.family).or_default().push(row);
    }
    for (family, rows) in &by_family {
        line(
            &mut out,
            family.name(),
            Tally::counting(rows.iter().copied(), keep),
        );
    }
    line(
        &mut out,
        "in-family",
        Tally::counting(rows.iter().filter(|r| r.case.family.in_family()), keep),
    );
    line(&mut out, "all", Tally::counting(rows, keep));
    out
}

/// Issue 28's thresholds.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// Least share of in-family destructive cases stopped, percent.
    pub recall: f64,
    /// Most share of allowed cases stopped, percent (`None`: not held).
    pub blocked: Option<f64>,
}

/// One threshold's line and whether it holds, judged with the keep list applied or set aside
/// as `keep` says; a second line gives the figures the other way, so both are in view.
pub fn check(label: &str, rows: &[Row<'_>], t: Thresholds, keep: Keep) -> (String, bool) {
    let inf = Tally::counting(rows.iter().filter(|r| r.case.family.in_family()), keep);
    let all = Tally::counting(rows, keep);
    let kept = Tally::of(rows).kept;
    let recall = inf.destructive().share().unwrap_or(0.0);
    let blocked = all.allow.share().unwrap_or(0.0);
    let mut ok = recall >= t.recall && all.failed == 0;
    let mut text = format!(
        "{label} {}: in-family recall {recall:.1}% ({} of {}; need >= {}%)",
        keep.describe(),
        inf.destructive().stopped(),
        inf.destructive().n,
        t.recall
    );
    if let Some(max) = t.blocked {
        ok &= blocked <= max;
        let _ = write!(
            text,
            ", allowed blocked {blocked:.2}% ({} of {}; need <= {max}%)",
            all.allow.stopped(),
            all.allow.n
        );
    }
    let _ = write!(
        text,
        ", {} crashes or timeouts (need 0): {}",
        all.failed,
        if ok { "PASS" } else { "FAIL" }
    );
    // The same figures the other way, so the keep list's cost is in plain view.
    let other = keep.other();
    let raw_inf = Tally::counting(rows.iter().filter(|r| r.case.family.in_family()), other);
    let raw_all = Tally::counting(rows, other);
    let _ = write!(
        text,
        "\n  {label} {} ({kept} cases kept): in-family recall {:.1}% ({} of {}), allowed blocked {:.2}% ({} of {})",
        other.describe(),
        raw_inf.destructive().share().unwrap_or(0.0),
        raw_inf.destructive().stopped(),
        raw_inf.destructive().n,
        raw_all.allow.share().unwrap_or(0.0),
        raw_all.allow.stopped(),
        raw_all.allow.n
    );
    (text, ok)
}

/// Why a row is in the misses file, if it is (a kept row is not, unless the keep list is set
/// aside).
pub fn miss_kind(row: &Row<'_>, keep: Keep) -> Option<&'static str> {
    if keep == Keep::Apply && row.kept.is_some() {
        return None;
    }
    match (&row.ours, row.case.expected) {
        (Ours::Crash(_), _) => Some("crash"),
        (Ours::Timeout, _) => Some("timeout"),
        (ours, PeerVerdict::Deny | PeerVerdict::Ask) if !ours.blocks() => Some("missed"),
        (ours, PeerVerdict::Allow) if ours.blocks() => Some("overblocked"),
        _ => None,
    }
}

/// Writes every miss, crash and over-block of `rows` as a JSON line (`config` names the run;
/// with the keep list set aside, `kept` names the entry that would have covered the case).
pub fn write_misses(
    file: &mut impl std::io::Write,
    config: &str,
    rows: &[Row<'_>],
    keep: Keep,
    label: impl Fn(usize) -> String,
) -> anyhow::Result<usize> {
    let mut n = 0;
    for row in rows {
        let Some(kind) = miss_kind(row, keep) else {
            continue;
        };
        let line = serde_json::json!({
            "kept": row.kept.map(&label),
            "config": config,
            "kind": kind,
            "peer": row.peer,
            "family": row.case.family.name(),
            "command": row.case.command,
            "expected": row.case.expected.name(),
            "ours": row.ours.name(),
            "message": row.ours.message(),
            "source": row.case.source,
        });
        writeln!(file, "{line}")?;
        n += 1;
    }
    Ok(n)
}

/// Writes every kept row of `rows` as a JSON line with the keep entry that covers it, so the
/// list can be reviewed case by case.
pub fn write_kept(
    file: &mut impl std::io::Write,
    rows: &[Row<'_>],
    label: impl Fn(usize) -> String,
) -> anyhow::Result<()> {
    for row in rows {
        let Some(i) = row.kept else { continue };
        let line = serde_json::json!({
            "peer": row.peer,
            "family": row.case.family.name(),
            "command": row.case.command,
            "expected": row.case.expected.name(),
            "ours": row.ours.name(),
            "entry": label(i),
            "source": row.case.source,
        });
        writeln!(file, "{line}")?;
    }
    Ok(())
}

/// Creates `path` (and its directory) for the misses.
pub fn create(path: &Path) -> anyhow::Result<std::io::BufWriter<std::fs::File>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    Ok(std::io::BufWriter::new(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(command: &str, expected: PeerVerdict) -> Case {
        Case::new(command, expected, "t".into())
    }

    #[test]
    fn tally_recall_and_thresholds() {
        let cases = [
            case("git reset --hard", PeerVerdict::Deny),
            case("rm -rf /", PeerVerdict::Deny),
            case("git push origin main", PeerVerdict::Ask),
            case("git status", PeerVerdict::Allow),
            case("ls", PeerVerdict::Allow),
            case("terraform plan -destroy", PeerVerdict::Warn),
            case("kubectl delete ns x", PeerVerdict::Deny),
        ];
        let rows = vec![
            Row {
                peer: "p",
                case: &cases[0],
                ours: Ours::Deny("no".into()),
                kept: None,
            },
            Row {
                peer: "p",
                case: &cases[1],
                ours: Ours::Ask("sure?".into()),
                kept: None,
            },
            Row {
                peer: "p",
                case: &cases[2],
                ours: Ours::Allow,
                kept: Some(0),
            },
            Row {
                peer: "p",
                case: &cases[3],
                ours: Ours::Allow,
                kept: None,
            },
            Row {
                peer: "p",
                case: &cases[4],
                ours: Ours::Deny("no".into()),
                kept: None,
            },
            Row {
                peer: "p",
                case: &cases[5],
                ours: Ours::Allow,
                kept: None,
            },
            Row {
                peer: "p",
                case: &cases[6],
                ours: Ours::Warn("hm".into()),
                kept: None,
            },
        ];
        let t = Tally::of(&rows);
        assert_eq!((t.deny.n, t.deny.deny, t.deny.ask), (3, 1, 1));
        assert_eq!((t.allow.n, t.allow.deny), (2, 1));
        assert_eq!((t.warn, t.kept, t.failed), (1, 1, 0));
        let (text, ok) = check(
            "packs",
            &rows,
            Thresholds {
                recall: 60.0,
                blocked: Some(0.5),
            },
            Keep::Apply,
        );
        assert!(!ok, "half the allowed cases are blocked: {text}");
        assert!(text.contains("recall 66.7%"), "{text}");
        // The kept ask (not stopped) counts once the keep list is set aside: 2 of 4.
        assert!(
            text.contains("without the keep list (1 cases kept): in-family recall 50.0% (2 of 4)"),
            "{text}"
        );
        let (_, ok) = check(
            "natural",
            &rows,
            Thresholds {
                recall: 60.0,
                blocked: None,
            },
            Keep::Apply,
        );
        assert!(ok);
        // Set aside, the keep list's case counts: 2 of 4 is below 60%, and the line says how
        // the figures look with the list.
        let (text, ok) = check(
            "packs",
            &rows,
            Thresholds {
                recall: 60.0,
                blocked: None,
            },
            Keep::SetAside,
        );
        assert!(!ok, "{text}");
        assert!(
            text.contains("packs without the keep list: in-family recall 50.0% (2 of 4")
                && text.contains("with the keep list (1 cases kept): in-family recall 66.7%"),
            "{text}"
        );
        let (_, ok) = check(
            "natural",
            &rows,
            Thresholds {
                recall: 70.0,
                blocked: None,
            },
            Keep::Apply,
        );
        assert!(!ok);

        let mut misses = Vec::new();
        assert_eq!(
            write_misses(&mut misses, "packs", &rows, Keep::Apply, |i| i.to_string())
                .expect("writes"),
            2
        );
        let mut all = Vec::new();
        assert_eq!(
            write_misses(&mut all, "packs", &rows, Keep::SetAside, |i| format!(
                "entry {i}"
            ))
            .expect("writes"),
            3,
            "the kept ask we let through is a miss once the list is set aside"
        );
        assert!(
            String::from_utf8(all)
                .expect("utf8")
                .contains(r#""kept":"entry 0""#)
        );
        let text = String::from_utf8(misses).expect("utf8");
        assert!(text.contains(r#""kind":"overblocked""#) && text.contains(r#""command":"ls""#));
        assert!(text.contains(r#""kind":"missed""#) && text.contains("kubectl delete ns x"));
        assert!(peer_table(&rows, Keep::Apply).contains("in-family"));
    }

    #[test]
    fn a_crash_fails_the_check() {
        let c = case("git status", PeerVerdict::Allow);
        let rows = vec![Row {
            peer: "p",
            case: &c,
            ours: Ours::Timeout,
            kept: None,
        }];
        let (text, ok) = check(
            "packs",
            &rows,
            Thresholds {
                recall: 0.0,
                blocked: Some(100.0),
            },
            Keep::Apply,
        );
        assert!(!ok && text.contains("1 crashes"), "{text}");
        assert_eq!(miss_kind(&rows[0], Keep::Apply), Some("timeout"));
    }
}

//! `cargo xtask guard-bench`: the published corpora of the destructive-command guards issue 28
//! measures the `safety` pack against (dcg, longline, Dippy, cc-safety-net), run through the
//! real CLI twice: with the builtin packs and no project hooks, and with the natural
//! `block_command` rules of our docs and no packs (`xtask/guard-bench/natural/`). Prints
//! recall on each peer's destructive cases and the share of its allowed cases we stop, per
//! family, and issue 28's thresholds; `--check` makes a failed threshold fail the command.
//! Every miss, over-block and crash goes to `<target>/guard-bench/misses.jsonl`.

mod corpus;
mod dcg;
mod fetch;
mod keep;
mod longline;
mod report;
mod runner;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use corpus::{Case, Extracted};
use fetch::{PEERS, Peer, Source};
use report::{Keep, Row, Thresholds};
use runner::Setup;

const USAGE: &str = "usage: cargo xtask guard-bench [--check] [--no-keep] [--fetch-only] [--cli PATH] [--only PEER,…] [--config packs|natural] [--jobs N] [--timeout-ms N] [--limit N]";

/// Issue 28: the packs stop at least 97% of in-family destructive cases and at most 0.5% of
/// allowed ones; the natural rules stop at least 95%.
const PACKS: Thresholds = Thresholds {
    recall: 97.0,
    blocked: Some(0.5),
};
const NATURAL: Thresholds = Thresholds {
    recall: 95.0,
    blocked: None,
};

/// The configurations a run measures, in order (`--config` picks one).
const CONFIGS: [&str; 2] = ["packs", "natural"];

#[derive(Debug)]
struct Args {
    check: bool,
    /// Judge the thresholds with xtask/guard-bench/keep.toml set aside (its cases count, and
    /// misses.jsonl lists them): issue 28 counts policy differences against the pack.
    no_keep: bool,
    /// Fetch (and read) the corpora, then stop: CI tells a registry it cannot reach apart from
    /// a threshold that fails.
    fetch_only: bool,
    cli: Option<PathBuf>,
    only: Option<Vec<String>>,
    /// Run one configuration (`packs` or `natural`) instead of both, to iterate on one.
    config: Option<String>,
    jobs: usize,
    timeout: Duration,
    limit: Option<usize>,
}

impl Args {
    fn parse(args: &[String]) -> anyhow::Result<Args> {
        let mut out = Args {
            check: false,
            no_keep: false,
            fetch_only: false,
            cli: None,
            only: None,
            config: None,
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
            timeout: Duration::from_secs(10),
            limit: None,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .with_context(|| format!("{name} needs a value\n{USAGE}"))
            };
            match arg.as_str() {
                "--check" => out.check = true,
                "--no-keep" => out.no_keep = true,
                "--fetch-only" => out.fetch_only = true,
                "--cli" => out.cli = Some(PathBuf::from(value("--cli")?)),
                "--only" => {
                    let names: Vec<String> =
                        value("--only")?.split(',').map(str::to_owned).collect();
                    for name in &names {
                        if !PEERS.iter().any(|p| p.name == name) {
                            bail!("--only: no peer named {name:?}\n{USAGE}");
                        }
                    }
                    out.only = Some(names);
                }
                "--config" => {
                    let name = value("--config")?;
                    if !CONFIGS.contains(&name.as_str()) {
                        bail!("--config: no configuration named {name:?}\n{USAGE}");
                    }
                    out.config = Some(name);
                }
                "--jobs" => out.jobs = number(&value("--jobs")?, "--jobs")?,
                "--timeout-ms" => {
                    out.timeout = Duration::from_millis(number(
                        &value("--timeout-ms")?,
                        "--timeout-ms",
                    )? as u64)
                }
                "--limit" => out.limit = Some(number(&value("--limit")?, "--limit")?),
                other => bail!("unknown argument {other:?}\n{USAGE}"),
            }
        }
        Ok(out)
    }
}

fn number(text: &str, name: &str) -> anyhow::Result<usize> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => bail!("{name} takes a positive number, not {text:?}"),
    }
}

/// One peer's corpus as read.
struct Corpus {
    peer: &'static str,
    label: String,
    cases: Vec<Case>,
    skipped: BTreeMap<String, usize>,
}

pub fn run(args: &[String]) -> anyhow::Result<()> {
    let args = Args::parse(args)?;
    let target = crate::target_dir()?;
    let cache = fetch::cache_root(&target);
    let mut corpora = Vec::new();
    for peer in PEERS.iter().filter(|p| {
        args.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|n| n == p.name))
    }) {
        match read_corpus(peer, &cache)? {
            Some(mut corpus) => {
                if let Some(limit) = args.limit {
                    corpus.cases.truncate(limit);
                }
                corpora.push(corpus);
            }
            None => {
                if let Source::Unpublished { why } = peer.source {
                    println!(
                        "{}: no corpus on a package registry, not measured: {why}",
                        peer.name
                    );
                }
            }
        }
    }
    if corpora.is_empty() {
        bail!("no corpus to run");
    }
    if args.fetch_only {
        for corpus in &corpora {
            println!("{}: {} cases", corpus.label, corpus.cases.len());
        }
        return Ok(());
    }

    let cli = match &args.cli {
        Some(cli) => cli.clone(),
        None => {
            crate::run_cargo(&["build", "-p", "capt-hook-cli", "--release"])?;
            target.join("release/capt-hook")
        }
    };
    let cli =
        std::fs::canonicalize(&cli).with_context(|| format!("no CLI at {}", cli.display()))?;
    let fixtures = crate::workspace_root().join("xtask/guard-bench");
    let work = target.join("guard-bench");
    let root = work.join("project");
    let empty = work.join("no-hooks");
    let home = work.join("home");
    for dir in [&root, &empty, &home] {
        // Emptied each run: a stray file would load as a hook or a plugin setting.
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // A repository, as the projects Claude Code works in are: the general pack's rm guard
    // stops deletes outside any repository, which would count every `rm build` against us.
    let init = std::process::Command::new("git")
        .args(["init", "--quiet"])
        .arg(&root)
        .status()
        .context("running git init (is git installed?)")?;
    if !init.success() {
        bail!("git init {} failed ({init})", root.display());
    }
    let natural = fixtures.join("natural");
    check_loads(&cli, &root, &natural, &home)?;
    let keep = keep::load(&fixtures.join("keep.toml"))?;
    let keep_mode = if args.no_keep {
        Keep::SetAside
    } else {
        Keep::Apply
    };

    println!("measuring {}", cli.display());
    for corpus in &corpora {
        let skipped: usize = corpus.skipped.values().sum();
        println!(
            "{}: {} cases{}",
            corpus.label,
            corpus.cases.len(),
            if skipped == 0 {
                String::new()
            } else {
                let why: Vec<String> = corpus
                    .skipped
                    .iter()
                    .map(|(w, n)| format!("{n} {w}"))
                    .collect();
                format!(" (passed over: {})", why.join("; "))
            }
        );
    }

    let misses_path = work.join("misses.jsonl");
    let mut misses = report::create(&misses_path)?;
    let kept_path = work.join("kept.jsonl");
    let mut kept_file = report::create(&kept_path)?;
    let mut failed = Vec::new();
    let mut kept_by_entry = vec![0usize; keep.len()];
    let configs = [
        (
            "packs",
            "the builtin packs, no project hooks",
            &empty,
            true,
            PACKS,
        ),
        (
            "natural",
            "the natural block_command rules of our docs, no packs",
            &natural,
            false,
            NATURAL,
        ),
    ];
    for (config, title, hooks, packs, thresholds) in configs {
        if args.config.as_deref().is_some_and(|c| c != config) {
            continue;
        }
        let setup = Setup {
            cli: cli.clone(),
            root: root.clone(),
            hooks: hooks.clone(),
            packs,
            home: home.clone(),
            jobs: args.jobs,
            timeout: args.timeout,
        };
        // Each distinct command line runs once per configuration, whichever peers name it.
        let mut commands: Vec<String> = corpora
            .iter()
            .flat_map(|c| c.cases.iter().map(|case| case.command.clone()))
            .collect();
        commands.sort();
        commands.dedup();
        let started = Instant::now();
        let answers = runner::run_all(&setup, &commands)?;
        let took = started.elapsed();
        let answer: BTreeMap<&str, &runner::Ours> = commands
            .iter()
            .map(String::as_str)
            .zip(answers.iter())
            .collect();
        println!(
            "\n== {config}: {title} ({} command lines in {:.1}s, {:.1} ms each on {} at once)",
            commands.len(),
            took.as_secs_f64(),
            took.as_secs_f64() * 1000.0 / commands.len().max(1) as f64 * args.jobs as f64,
            args.jobs
        );
        let mut all_rows = Vec::new();
        for corpus in &corpora {
            let rows: Vec<Row<'_>> = corpus
                .cases
                .iter()
                .map(|case| {
                    let kept = keep.iter().position(|e| e.covers(corpus.peer, case));
                    Row {
                        peer: corpus.peer,
                        case,
                        ours: answer[case.command.as_str()].clone(),
                        kept,
                    }
                })
                .collect();
            println!("\n{}", corpus.label);
            print!("{}", report::peer_table(&rows, keep_mode));
            if config == "packs" {
                for row in &rows {
                    if let Some(i) = row.kept {
                        kept_by_entry[i] += 1;
                    }
                }
                report::write_kept(&mut kept_file, &rows, |i| keep[i].label.clone())?;
            }
            all_rows.extend(rows);
        }
        report::write_misses(&mut misses, config, &all_rows, keep_mode, |i| {
            keep[i].label.clone()
        })?;
        let (line, ok) = report::check(config, &all_rows, thresholds, keep_mode);
        println!("\n{line}");
        if !ok {
            failed.push(config);
        }
    }
    std::io::Write::flush(&mut misses)?;
    std::io::Write::flush(&mut kept_file)?;

    println!(
        "\nkept on purpose (xtask/guard-bench/keep.toml): {} entries",
        keep.len()
    );
    for (entry, n) in keep.iter().zip(&kept_by_entry) {
        let peer = entry.peer.as_deref().unwrap_or("any peer");
        println!("  {n:>4}  {} ({peer}): {}", entry.label, entry.reason);
        if *n == 0 {
            println!("        (covers no case: remove it or fix it)");
        }
    }
    println!(
        "\nmisses, over-blocks and crashes: {}",
        misses_path.display()
    );

    if !failed.is_empty() {
        let what = format!("thresholds not met: {}", failed.join(", "));
        if args.check {
            bail!(what);
        }
        println!("{what} (not enforced without --check)");
    }
    Ok(())
}

/// A peer's cases, fetched and read, one per command line; `None` for a peer whose corpus no
/// registry carries.
fn read_corpus(peer: &Peer, cache: &Path) -> anyhow::Result<Option<Corpus>> {
    let Some(top) = fetch::ensure(peer, cache)? else {
        return Ok(None);
    };
    let mut extracted: Extracted = match peer.name {
        "dcg" => dcg::extract(&top)?,
        "longline" => longline::extract(&top)?,
        other => bail!("no reader for {other}'s corpus"),
    };
    extracted.dedup();
    if extracted.cases.is_empty() {
        bail!(
            "{}: read no case from {} (has the corpus's layout changed?)",
            peer.name,
            top.display()
        );
    }
    let label = match peer.source {
        Source::Crate { name, version, .. } => {
            format!("{} {version} (crates.io {name})", peer.name)
        }
        Source::Unpublished { .. } => peer.name.to_owned(),
    };
    Ok(Some(Corpus {
        peer: peer.name,
        label,
        cases: extracted.cases,
        skipped: extracted.skipped,
    }))
}

/// The natural rules must load whole: `run` serves the files that load and only logs the
/// others, which would shrink the figures without a word.
fn check_loads(cli: &Path, root: &Path, hooks: &Path, home: &Path) -> anyhow::Result<()> {
    let out = std::process::Command::new(cli)
        .args(["check", "--root"])
        .arg(root)
        .arg("--hooks")
        .arg(hooks)
        .env("HOME", home)
        .output()
        .with_context(|| format!("running {} check", cli.display()))?;
    if !out.status.success() {
        bail!(
            "{} does not load:\n{}{}",
            hooks.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args() {
        assert!(
            Args::parse(&["--fetch-only".into()])
                .expect("parses")
                .fetch_only
        );
        let a = Args::parse(&[
            "--check".into(),
            "--no-keep".into(),
            "--only".into(),
            "dcg,longline".into(),
            "--jobs".into(),
            "3".into(),
        ])
        .expect("parses");
        assert!(a.check && a.no_keep);
        assert_eq!(a.only, Some(vec!["dcg".to_owned(), "longline".to_owned()]));
        assert_eq!(a.jobs, 3);
        assert!(Args::parse(&["--only".into(), "nobody".into()]).is_err());
        let one = Args::parse(&["--config".into(), "natural".into()]).expect("parses");
        assert_eq!(one.config.as_deref(), Some("natural"));
        assert!(Args::parse(&["--config".into(), "both".into()]).is_err());
        assert!(Args::parse(&["--jobs".into(), "0".into()]).is_err());
        assert!(Args::parse(&["--frobnicate".into()]).is_err());
    }

    #[test]
    fn fixtures_parse() {
        let fixtures = crate::workspace_root().join("xtask/guard-bench");
        let entries = keep::load(&fixtures.join("keep.toml")).expect("keep.toml parses");
        assert!(entries.iter().all(|e| !e.reason.trim().is_empty()));
        let natural = std::fs::read_to_string(fixtures.join("natural/destructive.toml"))
            .expect("natural rules");
        assert!(natural.contains("kind = \"block_command\""));
    }

    /// The bench runs the rules our docs teach: docs/destructive-rules.md holds the natural
    /// rules' file verbatim between its markers.
    #[test]
    fn the_docs_teach_the_natural_rules() {
        let root = crate::workspace_root();
        let file = std::fs::read_to_string(root.join("xtask/guard-bench/natural/destructive.toml"))
            .expect("natural rules");
        let docs = std::fs::read_to_string(root.join("docs/destructive-rules.md"))
            .expect("docs/destructive-rules.md");
        let begin = "<!-- natural rules: begin -->\n```toml\n";
        let end = "```\n<!-- natural rules: end -->";
        let start = docs.find(begin).expect("the begin marker") + begin.len();
        let stop = docs[start..].find(end).expect("the end marker") + start;
        assert!(
            docs[start..stop] == file,
            "docs/destructive-rules.md and xtask/guard-bench/natural/destructive.toml differ: \
             copy the file between the markers"
        );
    }
}

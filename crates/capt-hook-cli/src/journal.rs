//! `capt-hook logs` and `capt-hook decisions`: read what the workers' journal wrote.

use std::io::{Read as _, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use capt_hook_journal::log::{self, Read};
use capt_hook_journal::{Ledger, LedgerError, Query};

/// How often `--follow` looks for new lines.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// `capt-hook logs`.
pub fn logs(
    session: Option<&str>,
    follow: bool,
    json: bool,
    tail: Option<usize>,
) -> anyhow::Result<ExitCode> {
    let dir = capt_hook_proto::paths::log_dir();
    let path = match session {
        Some(s) => log::session_file(&dir, &session_stem(s)),
        None => {
            let sessions = log::sessions_dir(&dir);
            match log::list(&dir) {
                Ok(found) if !found.is_empty() => found[0].1.clone(),
                Ok(_) => {
                    eprintln!("No session logs in {}", sessions.display());
                    return Ok(ExitCode::SUCCESS);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    eprintln!("No captain-hook session logs at {}", sessions.display());
                    return Ok(ExitCode::SUCCESS);
                }
                Err(e) => return Err(e).with_context(|| format!("listing {}", sessions.display())),
            }
        }
    };
    let lines = match log::read(&path) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !follow => {
            eprintln!("No log file at {}", path.display());
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let skip = tail.map_or(0, |n| lines.len().saturating_sub(n));
    let mut out = std::io::stdout().lock();
    for line in &lines[skip..] {
        print_line(&mut out, line, json)?;
    }
    out.flush()?;
    if follow {
        drop(out);
        follow_file(&path, json)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `capt-hook logs --judge`: every judge call and failure record in the log directory (the
/// rotated `.1` files first), oldest first, of one session when given.
pub fn judge_logs(
    session: Option<&str>,
    json: bool,
    tail: Option<usize>,
) -> anyhow::Result<ExitCode> {
    let dir = capt_hook_proto::paths::log_dir();
    let mut records: Vec<serde_json::Value> = Vec::new();
    for name in [capt_hook_llm::CALL_LOG, capt_hook_llm::FAILURE_LOG] {
        for path in [dir.join(format!("{name}.1")), dir.join(name)] {
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            };
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let mut v: serde_json::Value = match serde_json::from_str(line) {
                    Ok(v) => v,
                    Err(e) => {
                        eprintln!("{}:{}: not a JSON record ({e})", path.display(), i + 1);
                        continue;
                    }
                };
                v["record"] = if name == capt_hook_llm::FAILURE_LOG {
                    "failure".into()
                } else {
                    "call".into()
                };
                records.push(v);
            }
        }
    }
    let session = session.map(session_stem);
    records.retain(|v| session.as_deref().is_none_or(|s| v["session"] == s));
    // Stable: a call's line stays before the failure record it wrote at the same moment.
    records.sort_by_key(|v| v["unix_ms"].as_u64().unwrap_or(0));
    if records.is_empty() {
        eprintln!("No judge calls logged in {}", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let skip = tail.map_or(0, |n| records.len().saturating_sub(n));
    let mut out = std::io::stdout().lock();
    for v in &records[skip..] {
        if json {
            writeln!(out, "{v}")?;
        } else {
            writeln!(out, "{}", render_judge(v))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One judge record as text: a call on one line; a failure with its argv, exit code and the
/// tails of stderr and the prompt on indented lines, so it can be rerun by hand.
fn render_judge(v: &serde_json::Value) -> String {
    let str_of = |k: &str| v[k].as_str().unwrap_or("-").to_owned();
    let ts = capt_hook_journal::time::utc(v["unix_ms"].as_u64().unwrap_or(0));
    let session = v["session"].as_str().unwrap_or("-");
    if v["record"] == "failure" {
        let argv: Vec<String> = v["argv"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|x| shell_quote(x.as_str().unwrap_or("")))
                    .collect()
            })
            .unwrap_or_default();
        let indent = |text: &str| {
            text.trim_end()
                .lines()
                .map(|l| format!("\n      {l}"))
                .collect::<String>()
        };
        format!(
            "{ts}  {session}  judge FAILURE {} {} after {} ms: {}\n    argv: {}\n    exit: {}\n    stderr tail:{}\n    prompt tail:{}",
            str_of("hook"),
            str_of("backend"),
            v["elapsed_ms"].as_u64().unwrap_or(0),
            str_of("error"),
            argv.join(" "),
            v["exit_code"]
                .as_i64()
                .map_or("-".to_owned(), |c| c.to_string()),
            indent(v["stderr_tail"].as_str().unwrap_or("")),
            indent(v["prompt_tail"].as_str().unwrap_or("")),
        )
    } else {
        let model = v["model"]
            .as_str()
            .map(|m| format!("/{m}"))
            .unwrap_or_default();
        let cost = v["cost_usd"]
            .as_f64()
            .map(|c| format!(" ${c:.4}"))
            .unwrap_or_default();
        let outcome = if v["ok"] == true {
            "ok".to_owned()
        } else {
            format!("FAILED: {}", str_of("error"))
        };
        format!(
            "{ts}  {session}  judge {} {}{model} {} ms{cost} {outcome}",
            str_of("hook"),
            str_of("backend"),
            v["latency_ms"].as_u64().unwrap_or(0),
        )
    }
}

/// `arg` as one shell word.
fn shell_quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
    {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// A session id, or a path to a transcript or log named after one, as the id.
fn session_stem(given: &str) -> String {
    if given.contains('/') || given.ends_with(".jsonl") {
        let stem = Path::new(given)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or(given);
        return stem.to_owned();
    }
    given.to_owned()
}

fn print_line(out: &mut impl Write, line: &Read, json: bool) -> std::io::Result<()> {
    match (line, json) {
        (Read::Line(l), true) => writeln!(out, "{}", serde_json::to_string(l).unwrap_or_default()),
        (Read::Line(l), false) => writeln!(out, "{}", log::render(l)),
        (Read::Raw(raw), _) => writeln!(out, "{raw}"),
    }
}

/// Prints lines appended to `path` until interrupted; starts over when the file is rotated or
/// replaced.
fn follow_file(path: &Path, json: bool) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut offset = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut inode = std::fs::metadata(path).map(|m| m.ino()).ok();
    let mut partial = String::new();
    loop {
        std::thread::sleep(FOLLOW_POLL);
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        if Some(meta.ino()) != inode || meta.len() < offset {
            inode = Some(meta.ino());
            offset = 0;
            partial.clear();
        }
        if meta.len() == offset {
            continue;
        }
        let mut f =
            std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        f.seek(SeekFrom::Start(offset))?;
        let mut fresh = String::new();
        let n = f.read_to_string(&mut fresh)?;
        offset += n as u64;
        partial.push_str(&fresh);
        let mut out = std::io::stdout().lock();
        while let Some(end) = partial.find('\n') {
            let line: String = partial.drain(..=end).collect();
            if !line.trim().is_empty() {
                print_line(&mut out, &log::parse(line.trim_end()), json)?;
            }
        }
        out.flush()?;
    }
}

/// The `--action` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LedgerAction {
    /// Approved.
    Allow,
    /// Denied or kept from stopping.
    Block,
    /// Context or a notice.
    Warn,
    /// A nudge (rows from other writers).
    Nudge,
    /// A rewrite.
    Note,
}

/// The filters of `capt-hook decisions`.
#[derive(Debug, Clone, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DecisionArgs {
    /// Check or export the ledger instead of listing it.
    #[command(subcommand)]
    pub command: Option<DecisionsCommand>,
    /// Only this session.
    #[arg(long)]
    pub session: Option<String>,
    /// Only this hook (its name).
    #[arg(long)]
    pub hook: Option<String>,
    /// Only this action.
    #[arg(long, value_enum)]
    pub action: Option<LedgerAction>,
    /// Only this event (PreToolUse, Stop, …).
    #[arg(long)]
    pub event: Option<String>,
    /// Only decisions at or after this time: an age (`15m`, `2h`, `7d`), a UTC date or
    /// date-time, or Unix milliseconds.
    #[arg(long)]
    pub since: Option<String>,
    /// Only decisions before this time (same forms as --since).
    #[arg(long)]
    pub until: Option<String>,
    /// The newest N decisions (0 for all).
    #[arg(long, default_value_t = 100)]
    pub limit: u64,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// List the judge calls LLM hooks made (latency, cost, failures), verdict or not, instead
    /// of the decisions.
    #[arg(long, conflicts_with = "action")]
    pub judge: bool,
    /// The ledger (default: $CAPT_HOOK_DECISIONS_DB, else <state dir>/hooks/decisions.db).
    #[arg(long)]
    pub db: Option<PathBuf>,
}

/// `capt-hook decisions verify|export|rotate`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum DecisionsCommand {
    /// Check the ledger's hash chain, and that of every file it was rotated from: names the
    /// first row that was changed, removed or reordered, and exits 1 when one was.
    Verify {
        /// The ledger (default: $CAPT_HOOK_DECISIONS_DB, else <state dir>/hooks/decisions.db).
        #[arg(long)]
        db: Option<PathBuf>,
        /// One JSON object per file.
        #[arg(long)]
        json: bool,
    },
    /// Print every decision (oldest first, with its chain hashes) for a log system.
    Export {
        /// `jsonl`: one decision per line; `otlp-json`: OTLP/JSON log requests, one per line.
        #[arg(long, value_enum, default_value = "jsonl")]
        format: ExportFormat,
        /// Only decisions at or after this time (as for `decisions --since`).
        #[arg(long)]
        since: Option<String>,
        /// Only decisions before this time.
        #[arg(long)]
        until: Option<String>,
        /// The ledger.
        #[arg(long)]
        db: Option<PathBuf>,
    },
    /// Move every row into an archive file beside the ledger; the ledger's next row links to
    /// the archive's last, so `verify` checks both.
    Rotate {
        /// The archive (default: decisions.<UTC time>.db beside the ledger).
        #[arg(long)]
        to: Option<PathBuf>,
        /// The ledger.
        #[arg(long)]
        db: Option<PathBuf>,
    },
}

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// One decision per line, as `decisions --json` prints it.
    Jsonl,
    /// OTLP/JSON `ExportLogsServiceRequest`s, one per line.
    OtlpJson,
}

fn ledger_path(db: &Option<PathBuf>) -> PathBuf {
    db.clone()
        .unwrap_or_else(capt_hook_journal::ledger::default_path)
}

/// `capt-hook decisions verify`.
fn verify(db: &Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let path = ledger_path(db);
    let mut checks = capt_hook_journal::verify_files(&path)?;
    // Oldest first: the first break printed is the earliest in the record.
    checks.reverse();
    let mut out = std::io::stdout().lock();
    for c in &checks {
        if json {
            writeln!(out, "{}", serde_json::to_string(c)?)?;
            continue;
        }
        let r = &c.report;
        writeln!(out, "{}: {} rows", c.path.display(), r.rows)?;
        if let Some((first, last)) = r.unchained {
            writeln!(
                out,
                "  unchained from row {first} to row {last}: written before the hash chain, \
                 their content cannot be checked"
            )?;
        }
        match &c.link {
            capt_hook_journal::Link::Genesis => {}
            capt_hook_journal::Link::Joined => writeln!(
                out,
                "  continues {} (its last row is the one this file's first links to)",
                r.anchor_file.as_deref().unwrap_or("?")
            )?,
            capt_hook_journal::Link::Missing => writeln!(
                out,
                "  continues {}, which is not there: checked from its anchor {}",
                r.anchor_file.as_deref().unwrap_or("?"),
                r.anchor
            )?,
            capt_hook_journal::Link::Cycle => writeln!(
                out,
                "  BROKEN: continues {}, a file already checked (the rotation links were edited)",
                r.anchor_file.as_deref().unwrap_or("?")
            )?,
            capt_hook_journal::Link::Mismatch { found } => writeln!(
                out,
                "  BROKEN: continues {}, whose last row ({found}) is not the one this file \
                 links to ({}): rows were cut from its end or it was replaced",
                r.anchor_file.as_deref().unwrap_or("?"),
                r.anchor
            )?,
        }
        match &r.broken {
            Some((row, how)) => writeln!(out, "  BROKEN at row {row}: {}", how.describe())?,
            None => writeln!(out, "  chain intact; head {}", r.head)?,
        }
    }
    out.flush()?;
    let first_break = checks.iter().find(|c| !c.intact());
    match first_break {
        Some(c) => {
            let at = match &c.report.broken {
                Some((row, _)) => format!("row {row}"),
                None => "its first row".to_owned(),
            };
            eprintln!(
                "capt-hook: the decision ledger was altered: first break in {} at {at}",
                c.path.display()
            );
            Ok(ExitCode::FAILURE)
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `capt-hook decisions export`.
fn export(
    format: ExportFormat,
    since: &Option<String>,
    until: &Option<String>,
    db: &Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let time = flag_time(capt_hook_proto::clock::now_unix_ms());
    let query = Query {
        since_ms: time("since", since)?,
        until_ms: time("until", until)?,
        ..Query::default()
    };
    let path = ledger_path(db);
    let rows = Ledger::open_read(&path)?.query(&query)?;
    let mut out = std::io::stdout().lock();
    match format {
        ExportFormat::Jsonl => {
            for d in &rows {
                writeln!(out, "{}", capt_hook_journal::export::jsonl(d)?)?;
            }
        }
        ExportFormat::OtlpJson => {
            for batch in rows.chunks(capt_hook_journal::export::OTLP_BATCH) {
                writeln!(out, "{}", capt_hook_journal::export::otlp_request(batch))?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `capt-hook decisions rotate`.
fn rotate(to: &Option<PathBuf>, db: &Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let path = ledger_path(db);
    if !path.exists() {
        anyhow::bail!(LedgerError::Missing(path));
    }
    let archive = match to {
        Some(p) => p.clone(),
        None => {
            let stamp = capt_hook_journal::time::utc(capt_hook_proto::clock::now_unix_ms())
                .replace([':', '-'], "");
            path.with_file_name(format!("decisions.{stamp}.db"))
        }
    };
    let moved = Ledger::open(&path)?.rotate(&archive)?;
    eprintln!(
        "Moved {moved} decisions to {}; {} continues its chain",
        archive.display(),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `capt-hook decisions`.
pub fn decisions(args: &DecisionArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        Some(DecisionsCommand::Verify { db, json }) => return verify(db, *json),
        Some(DecisionsCommand::Export {
            format,
            since,
            until,
            db,
        }) => return export(*format, since, until, db),
        Some(DecisionsCommand::Rotate { to, db }) => return rotate(to, db),
        None => {}
    }
    let time = flag_time(capt_hook_proto::clock::now_unix_ms());
    let query = Query {
        session: args.session.clone(),
        hook: args.hook.clone(),
        action: args.action.map(|a| {
            clap::ValueEnum::to_possible_value(&a)
                .map(|v| v.get_name().to_owned())
                .unwrap_or_default()
        }),
        event: args.event.clone(),
        since_ms: time("since", &args.since)?,
        until_ms: time("until", &args.until)?,
        limit: (args.limit > 0).then_some(args.limit),
    };
    let path = args
        .db
        .clone()
        .unwrap_or_else(capt_hook_journal::ledger::default_path);
    let ledger = match Ledger::open_read(&path) {
        Ok(l) => l,
        Err(e @ LedgerError::Missing(_)) => {
            eprintln!("{e}");
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e.into()),
    };
    if args.judge {
        let calls = ledger.judge_calls(&query)?;
        let mut out = std::io::stdout().lock();
        if calls.is_empty() && !args.json {
            eprintln!("No judge calls match in {}", path.display());
        }
        for c in &calls {
            if args.json {
                writeln!(out, "{}", serde_json::to_string(c)?)?;
            } else {
                writeln!(
                    out,
                    "{}  {}  {:<18} {}  {}",
                    c.ts,
                    c.session_id,
                    c.event,
                    c.hook,
                    judge_text(c)
                )?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let rows = ledger.query(&query)?;
    let mut out = std::io::stdout().lock();
    if rows.is_empty() && !args.json {
        eprintln!("No decisions match in {}", path.display());
    }
    for d in &rows {
        if args.json {
            writeln!(out, "{}", serde_json::to_string(d)?)?;
        } else {
            let tool = d.tool_name.as_deref().unwrap_or("-");
            let message = d
                .message
                .as_deref()
                .map(|m| format!(" {:?}", m.lines().next().unwrap_or("")))
                .unwrap_or_default();
            let judged: String = d
                .judge
                .iter()
                .map(|c| format!(" (judge {})", judge_text(c)))
                .collect();
            writeln!(
                out,
                "{}  {}  {:<18} {:<8} {:<6} {}{message}{judged}",
                d.ts, d.session_id, d.event, tool, d.action, d.hook
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A judge call in a few words: backend and model, latency, cost or why it failed.
fn judge_text(c: &capt_hook_journal::JudgeCallRow) -> String {
    let model = c
        .model
        .as_deref()
        .map(|m| format!("/{m}"))
        .unwrap_or_default();
    let cost = c.cost_usd.map(|x| format!(" ${x:.4}")).unwrap_or_default();
    match (&c.error, c.ok) {
        (_, true) => format!("{}{model} {} ms{cost}", c.backend, c.latency_ms),
        (e, false) => format!(
            "{}{model} FAILED after {} ms: {}",
            c.backend,
            c.latency_ms,
            e.as_deref().unwrap_or("no verdict")
        ),
    }
}

/// Reads a `--since`/`--until` value (relative to `now`), naming the flag when it is bad.
fn flag_time(now: u64) -> impl Fn(&str, &Option<String>) -> anyhow::Result<Option<u64>> {
    move |flag, v| {
        v.as_deref()
            .map(|t| capt_hook_journal::time::parse_time(t, now))
            .transpose()
            .with_context(|| format!("--{flag}"))
    }
}

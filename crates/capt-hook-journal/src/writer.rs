//! The journal's writer: one background thread per process takes [`Entry`]s from a bounded
//! queue and appends them to the session logs and the ledger, batching whatever has queued up
//! into one write per session and one SQLite transaction. The event path only queues: it never
//! waits for a disk or a lock, and when the queue is full the entry is dropped and counted.
//! Ledger rows go to this process's spool ([`crate::spool`]) before SQLite, so a ledger that is
//! locked, broken or cut off by the process's end loses none of them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use crate::entry::{Entry, NewDecision};
use crate::judge::NewJudgeCall;
use crate::ledger::Ledger;
use crate::spool::Spool;

/// Entries waiting for the writer.
const QUEUE: usize = 4096;
/// Most entries written in one batch.
const BATCH: usize = 512;
/// After the ledger failed to open or write, wait this long before trying it again.
const LEDGER_RETRY: Duration = Duration::from_secs(30);
/// Most judge calls kept in memory while the ledger cannot take them.
const JUDGE_PENDING: usize = 4096;
/// How often a writer looks for the spools of processes that ended before their rows were in.
const ORPHAN_SCAN: Duration = Duration::from_secs(2);

enum Msg {
    Entry(Box<Entry>),
    Flush(mpsc::Sender<()>),
}

/// A session log past this size is rotated. Fixed: the setting for the host log
/// (`CAPT_HOOK_LOG_MAX_BYTES`) belongs to one request's environment and never reaches workers.
const SESSION_LOG_MAX: u64 = 10 * 1024 * 1024;

/// Entries dropped because the queue was full.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Where the writer puts things; read from the environment when the thread starts.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The log directory (session logs go under `sessions/`).
    pub log_dir: PathBuf,
    /// The ledger.
    pub db: PathBuf,
    /// A session log past this size is rotated.
    pub max_bytes: u64,
}

impl Settings {
    /// The settings this process's environment gives.
    pub fn from_env() -> Settings {
        Settings {
            log_dir: capt_hook_proto::paths::log_dir(),
            db: crate::ledger::default_path(),
            max_bytes: SESSION_LOG_MAX,
        }
    }
}

fn queue() -> Option<&'static SyncSender<Msg>> {
    static QUEUE_TX: OnceLock<Option<SyncSender<Msg>>> = OnceLock::new();
    QUEUE_TX
        .get_or_init(|| {
            let (tx, rx) = mpsc::sync_channel(QUEUE);
            let settings = Settings::from_env();
            match std::thread::Builder::new()
                .name("capt-hook-journal".into())
                .spawn(move || run(&rx, &settings))
            {
                Ok(_) => Some(tx),
                Err(e) => {
                    eprintln!("capt-hook: cannot start the journal thread, nothing is logged: {e}");
                    None
                }
            }
        })
        .as_ref()
}

/// Starts the writer thread now rather than at the first [`submit`], which a worker makes just
/// before its first reply.
pub fn start() {
    queue();
}

/// Hands an entry to the writer without waiting.
pub fn submit(entry: Entry) {
    let Some(tx) = queue() else { return };
    match tx.try_send(Msg::Entry(Box::new(entry))) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => {
            if DROPPED.fetch_add(1, Ordering::Relaxed) == 0 {
                eprintln!(
                    "capt-hook: the journal queue is full ({QUEUE} entries); dropping log lines \
                     and decisions until it drains"
                );
            }
        }
        Err(TrySendError::Disconnected(_)) => {}
    }
}

/// Waits until everything submitted so far is written, up to `timeout`; false when it was not.
pub fn flush(timeout: Duration) -> bool {
    let Some(tx) = queue() else { return false };
    let (done, wait) = mpsc::channel();
    let until = Instant::now() + timeout;
    let mut msg = Msg::Flush(done);
    loop {
        match tx.try_send(msg) {
            Ok(()) => break,
            Err(TrySendError::Full(m)) if Instant::now() < until => {
                msg = m;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return false,
        }
    }
    wait.recv_timeout(until.saturating_duration_since(Instant::now()))
        .is_ok()
}

/// How long a terminating worker gives the journal before exiting (the host waits 2 s before
/// it kills).
const TERM_FLUSH: Duration = Duration::from_millis(1000);

/// For a worker process: on SIGTERM (how the host retires a worker, right after the answer for
/// a throwaway project), write what is queued, then exit as the signal would have. Without it,
/// the log lines and ledger rows of the last events would go down with the process.
pub fn flush_on_terminate() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let term = signal_hook::consts::SIGTERM;
        let mut signals = match signal_hook::iterator::Signals::new([term]) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("capt-hook: cannot catch SIGTERM; a retired worker's last log lines may be lost: {e}");
                return;
            }
        };
        let spawned = std::thread::Builder::new()
            .name("capt-hook-term".into())
            .spawn(move || {
                if signals.forever().next().is_some() {
                    flush(TERM_FLUSH);
                    std::process::exit(128 + term);
                }
            });
        if let Err(e) = spawned {
            eprintln!("capt-hook: cannot watch for SIGTERM: {e}");
        }
    });
}

/// Entries dropped so far because the queue was full.
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// The writer state: the ledger connection, opened on first use and again after a failure.
struct Writer<'a> {
    settings: &'a Settings,
    ledger: Option<Ledger>,
    ledger_retry_at: Option<Instant>,
    /// This process's spool, created with the first rows; `None` before that, or when it
    /// could not be created (rows then live in memory until committed, and are lost with the
    /// process).
    spool: Option<Spool>,
    /// Creating the spool failed (said once; not tried again).
    spool_failed: bool,
    /// Judge calls the ledger has not taken yet.
    judge_pending: Vec<NewJudgeCall>,
    /// Rows kept in memory when there is no spool, waiting for the ledger.
    unspooled: Vec<NewDecision>,
    /// A write to the ledger failed or was put off: the spool holds rows of earlier batches.
    behind: bool,
    /// When orphaned spools were last looked for.
    scanned_at: Option<Instant>,
    /// The last failure reported, so a broken disk is one line a minute, not one per event.
    last_report: Option<(String, Instant)>,
}

/// Session logs untouched for this long are removed when a writer starts.
const KEEP_LOGS: Duration = Duration::from_secs(30 * 86_400);

fn run(rx: &Receiver<Msg>, settings: &Settings) {
    crate::log::prune(&settings.log_dir, KEEP_LOGS);
    let mut w = Writer::new(settings);
    // Rows a process that ended left behind.
    w.record(Vec::new(), Vec::new());
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(m) => batch.push(m),
                Err(_) => break,
            }
        }
        w.write(batch);
    }
}

impl<'a> Writer<'a> {
    /// A writer with nothing open yet: the ledger and the spool open with the first rows.
    fn new(settings: &'a Settings) -> Writer<'a> {
        Writer {
            settings,
            ledger: None,
            ledger_retry_at: None,
            spool: None,
            spool_failed: false,
            judge_pending: Vec::new(),
            unspooled: Vec::new(),
            behind: false,
            scanned_at: None,
            last_report: None,
        }
    }
}

impl Writer<'_> {
    fn write(&mut self, batch: Vec<Msg>) {
        let mut lines: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut rows = Vec::new();
        let mut judge_rows = Vec::new();
        let mut flushes = Vec::new();
        for msg in batch {
            match msg {
                Msg::Entry(e) => {
                    let line = e.log_line();
                    if let Ok(text) = serde_json::to_string(&line) {
                        lines.entry(line.session).or_default().push(text);
                    }
                    rows.extend(e.decisions());
                    judge_rows.extend(e.judge_rows());
                }
                Msg::Flush(done) => flushes.push(done),
            }
        }
        if !rows.is_empty() {
            self.spool(&rows);
        }
        for (session, lines) in lines {
            if let Err(e) = crate::log::append(
                &self.settings.log_dir,
                &session,
                &lines,
                self.settings.max_bytes,
            ) {
                self.report(format!(
                    "cannot write the session log under {}: {e}",
                    self.settings.log_dir.display()
                ));
            }
        }
        self.record(rows, judge_rows);
        for done in flushes {
            let _ = done.send(());
        }
    }

    /// Puts a batch's rows in the spool before anything else can go wrong.
    fn spool(&mut self, rows: &[NewDecision]) {
        if self.spool.is_none() && !self.spool_failed {
            match Spool::create(&self.settings.db) {
                Ok(s) => self.spool = Some(s),
                Err(e) => {
                    self.spool_failed = true;
                    self.report(format!(
                        "cannot create a spool for decisions under {}; rows not yet in the \
                         ledger are lost if this process ends: {e}",
                        crate::spool::dir_of(&self.settings.db).display()
                    ));
                }
            }
        }
        let Some(spool) = self.spool.as_mut() else {
            self.unspooled.extend_from_slice(rows);
            return;
        };
        if let Err(e) = spool.append(rows) {
            self.unspooled.extend_from_slice(rows);
            self.report(format!("cannot write the decision spool: {e}"));
        }
    }

    /// Commits `batch` (and whatever earlier batches left in the spool) to the ledger, then
    /// the spools of processes that are gone. Rows that do not make it stay spooled. The ledger
    /// is opened only when there is something to commit.
    ///
    /// Judge calls (the LLM verdicts behind some decisions) are not spooled: they wait in memory
    /// until the ledger takes them, at most [`JUDGE_PENDING`], and go with the process.
    fn record(&mut self, batch: Vec<NewDecision>, judge: Vec<NewJudgeCall>) {
        self.judge_pending.extend(judge);
        let over = self.judge_pending.len().saturating_sub(JUDGE_PENDING);
        if over > 0 {
            self.judge_pending.drain(..over);
            self.report(format!(
                "{over} judge calls were not recorded: the ledger has not taken them"
            ));
        }
        let orphans = if self.scanned_at.is_none_or(|t| t.elapsed() >= ORPHAN_SCAN) {
            self.scanned_at = Some(Instant::now());
            crate::spool::orphans(
                &crate::spool::dir_of(&self.settings.db),
                self.spool.as_ref().map(Spool::path),
            )
        } else {
            Vec::new()
        };
        if batch.is_empty()
            && !self.behind
            && self.unspooled.is_empty()
            && self.judge_pending.is_empty()
            && orphans.is_empty()
        {
            return;
        }
        if self.ledger.is_none() {
            if self.ledger_retry_at.is_some_and(|t| Instant::now() < t) {
                self.behind |= !batch.is_empty();
                return;
            }
            match Ledger::open(&self.settings.db) {
                Ok(l) => self.ledger = Some(l),
                Err(e) => {
                    self.behind |= !batch.is_empty();
                    self.ledger_retry_at = Some(Instant::now() + LEDGER_RETRY);
                    return self.report(format!(
                        "decisions wait in {} until the ledger opens: {e}",
                        crate::spool::dir_of(&self.settings.db).display()
                    ));
                }
            }
        }
        let in_memory = std::mem::take(&mut self.unspooled);
        let mut rows = in_memory.clone();
        match self.spool.as_mut() {
            // Everything not yet committed, this batch included.
            Some(spool) if self.behind => match spool.rows() {
                Ok(spooled) => rows.extend(spooled),
                Err(e) => {
                    self.report(format!("cannot read the decision spool back: {e}"));
                    rows.extend(batch);
                }
            },
            _ => rows.extend(batch),
        }
        if !rows.is_empty() || !self.judge_pending.is_empty() {
            let judge = std::mem::take(&mut self.judge_pending);
            if !self.commit(&rows, &judge) {
                self.judge_pending = judge;
                self.unspooled = if self.spool.is_some() {
                    in_memory
                } else {
                    rows
                };
                self.behind = true;
                return;
            }
            self.behind = false;
            if let Some(spool) = self.spool.as_mut()
                && let Err(e) = spool.clear()
            {
                // Left in place the rows would only be inserted again, which the ledger
                // ignores.
                self.report(format!("cannot empty the decision spool: {e}"));
            }
        }
        for orphan in orphans {
            let rows = orphan.rows();
            if !rows.is_empty() && !self.commit(&rows, &[]) {
                return;
            }
            if let Err(e) = orphan.remove() {
                self.report(format!("cannot remove an imported decision spool: {e}"));
            }
        }
    }

    /// Inserts rows; false (the ledger closed, to be reopened later) when it failed.
    fn commit(&mut self, rows: &[NewDecision], judge: &[NewJudgeCall]) -> bool {
        let Some(ledger) = self.ledger.as_mut() else {
            return false;
        };
        match ledger.insert_all(rows, judge) {
            Ok(_) => true,
            Err(e) => {
                self.ledger = None;
                self.ledger_retry_at = Some(Instant::now() + LEDGER_RETRY);
                self.report(format!(
                    "{} decisions wait in {} until the ledger takes them: {e}",
                    rows.len(),
                    crate::spool::dir_of(&self.settings.db).display()
                ));
                false
            }
        }
    }

    fn report(&mut self, line: String) {
        let quiet = self
            .last_report
            .as_ref()
            .is_some_and(|(l, at)| *l == line && at.elapsed() < Duration::from_secs(60));
        if !quiet {
            eprintln!("capt-hook: {line}");
            self.last_report = Some((line, Instant::now()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Query;

    fn row(kind: &str) -> NewDecision {
        NewDecision {
            ts_ms: 1_000,
            session_id: "s".into(),
            kind: kind.into(),
            source_file: String::new(),
            event: "PreToolUse".into(),
            action: "block",
            tool_name: Some("Bash".into()),
            tool_digest: Some("d".into()),
            event_uuid: None,
            message: None,
            detail_json: "{}".into(),
        }
    }

    fn writer(settings: &Settings) -> Writer<'_> {
        let mut w = Writer::new(settings);
        w.spool = Some(Spool::create(&settings.db).unwrap());
        w.record(Vec::new(), Vec::new());
        w
    }

    fn kinds(db: &std::path::Path) -> Vec<String> {
        let ledger = Ledger::open_read(db).unwrap();
        let mut k: Vec<String> = ledger
            .query(&Query::default())
            .unwrap()
            .into_iter()
            .map(|d| d.hook)
            .collect();
        k.sort();
        k
    }

    /// Rows that meet a locked ledger wait in the spool: the same writer commits them on its
    /// next batch, and when the process ends first, the next writer of any process does.
    #[test]
    fn a_locked_ledger_loses_no_rows() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            log_dir: dir.path().join("logs"),
            db: dir.path().join("decisions.db"),
            max_bytes: SESSION_LOG_MAX,
        };
        drop(Ledger::open(&settings.db).unwrap());
        let blocker = rusqlite::Connection::open(&settings.db).unwrap();
        blocker.execute_batch("BEGIN IMMEDIATE").unwrap();

        let mut w = writer(&settings);
        let batch = vec![row("a"), row("b")];
        w.spool(&batch);
        w.record(batch, Vec::new());
        assert!(w.behind, "the insert cannot have gone through the lock");
        let batch = vec![row("c")];
        w.spool(&batch);
        w.record(batch, Vec::new());
        // The process ends before the ledger takes them.
        drop(w);

        blocker.execute_batch("COMMIT").unwrap();
        let next = writer(&settings);
        assert_eq!(kinds(&settings.db), ["a", "b", "c"]);
        let left: Vec<_> = std::fs::read_dir(crate::spool::dir_of(&settings.db))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(
            left.len(),
            1,
            "only the live writer's spool remains: {left:?}"
        );

        // Within one process: put off while locked, committed with the next batch.
        let mut w = next;
        blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
        let batch = vec![row("d")];
        w.spool(&batch);
        w.record(batch, Vec::new());
        assert!(w.behind);
        blocker.execute_batch("COMMIT").unwrap();
        w.ledger_retry_at = None;
        let batch = vec![row("e")];
        w.spool(&batch);
        w.record(batch, Vec::new());
        assert!(!w.behind);
        assert_eq!(kinds(&settings.db), ["a", "b", "c", "d", "e"]);
        assert!(w.spool.as_mut().unwrap().rows().unwrap().is_empty());
    }
}

//! The journal's writer: one background thread per process takes [`Entry`]s from a bounded
//! queue and appends them to the session logs and the ledger, batching whatever has queued up
//! into one write per session and one SQLite transaction. The event path only queues: it never
//! waits for a disk or a lock, and when the queue is full the entry is dropped and counted.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use crate::entry::Entry;
use crate::ledger::Ledger;

/// Entries waiting for the writer.
const QUEUE: usize = 4096;
/// Most entries written in one batch.
const BATCH: usize = 512;
/// After the ledger failed to open or write, wait this long before trying it again.
const LEDGER_RETRY: Duration = Duration::from_secs(30);

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
    /// The last failure reported, so a broken disk is one line a minute, not one per event.
    last_report: Option<(String, Instant)>,
}

/// Session logs untouched for this long are removed when a writer starts.
const KEEP_LOGS: Duration = Duration::from_secs(30 * 86_400);

fn run(rx: &Receiver<Msg>, settings: &Settings) {
    crate::log::prune(&settings.log_dir, KEEP_LOGS);
    let mut w = Writer {
        settings,
        ledger: None,
        ledger_retry_at: None,
        last_report: None,
    };
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
        if !rows.is_empty() || !judge_rows.is_empty() {
            self.record(&rows, &judge_rows);
        }
        for done in flushes {
            let _ = done.send(());
        }
    }

    fn record(&mut self, rows: &[crate::entry::NewDecision], judge: &[crate::judge::NewJudgeCall]) {
        if self.ledger.is_none() {
            if self.ledger_retry_at.is_some_and(|t| Instant::now() < t) {
                return;
            }
            match Ledger::open(&self.settings.db) {
                Ok(l) => self.ledger = Some(l),
                Err(e) => {
                    self.ledger_retry_at = Some(Instant::now() + LEDGER_RETRY);
                    return self.report(format!("decisions are not recorded: {e}"));
                }
            }
        }
        if let Some(ledger) = self.ledger.as_mut()
            && let Err(e) = ledger.insert_all(rows, judge)
        {
            self.ledger = None;
            self.ledger_retry_at = Some(Instant::now() + LEDGER_RETRY);
            self.report(format!("{} decisions were not recorded: {e}", rows.len()));
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

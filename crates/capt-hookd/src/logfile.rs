//! The host log, kept to a size without losing a line. Every line reaches the file through one
//! [`HostLog`]: the host's own (tracing writes each event in one call) and its workers' stderr,
//! which the host reads from a pipe and writes line by line. So rotation is a rename and a
//! reopen under the same lock every write takes: a line lands whole in the old file (now
//! `capt-hookd.log.1`, replacing the previous one) or whole in the new one, never in between.

use parking_lot::Mutex;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

/// How often the size is looked at.
const CHECK: Duration = Duration::from_secs(30);
/// Longest piece of a worker's stderr written as one line; a longer line is split.
const MAX_LINE: usize = 64 * 1024;

/// The rotated copy's path: `<log>.1`.
pub fn rotated(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

/// The open host log.
#[derive(Debug)]
pub struct HostLog {
    path: PathBuf,
    /// Rotate past this size.
    max: u64,
    /// The current file; every write and the rotation take this lock.
    file: Mutex<File>,
}

impl HostLog {
    /// Wraps the log `file` open (appending) at `path`.
    pub fn new(file: File, path: PathBuf, max: u64) -> Arc<HostLog> {
        Arc::new(HostLog {
            path,
            max,
            file: Mutex::new(file),
        })
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, File> {
        self.file.lock()
    }

    /// Appends `bytes` in one write.
    pub fn append(&self, bytes: &[u8]) -> io::Result<()> {
        self.lock().write_all(bytes)
    }

    /// A descriptor for the current file, for a child that must write to it directly.
    pub fn try_clone_file(&self) -> io::Result<File> {
        self.lock().try_clone()
    }

    /// When the log is larger than its limit: renames it to `<log>.1` and continues in a
    /// fresh file. True when it rotated.
    pub fn rotate_if_large(&self) -> io::Result<bool> {
        let mut file = self.lock();
        if file.metadata()?.len() <= self.max {
            return Ok(false);
        }
        std::fs::rename(&self.path, rotated(&self.path))?;
        let (fresh, _) = crate::files::open_append(&self.path)?;
        *file = fresh;
        Ok(true)
    }

    /// Writes what `stream` (a worker's stderr) says, line by line, until it closes.
    pub async fn pump(self: Arc<Self>, stream: impl AsyncRead + Unpin) {
        let mut reader = BufReader::new(stream);
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = (&mut reader)
                .take(MAX_LINE as u64)
                .read_until(b'\n', &mut line)
                .await;
            match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if line.last() != Some(&b'\n') {
                        line.push(b'\n');
                    }
                    let log = Arc::clone(&self);
                    let bytes = std::mem::take(&mut line);
                    // A slow disk must not stall the runtime thread.
                    let written =
                        tokio::task::spawn_blocking(move || log.append(&bytes).map(|()| bytes))
                            .await;
                    match written {
                        Ok(Ok(bytes)) => line = bytes,
                        Ok(Err(e)) => tracing::warn!(error = %e, "cannot write a worker's line"),
                        Err(_) => return,
                    }
                }
            }
        }
    }
}

/// `HostLog` as tracing's writer: each event is formatted whole and written in one call.
#[derive(Debug, Clone)]
pub struct Writer(pub Arc<HostLog>);

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.append(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Writer {
    type Writer = Writer;

    fn make_writer(&'a self) -> Writer {
        self.clone()
    }
}

/// Checks the log's size now and then for the host's life, off the runtime thread.
pub async fn keep_rotated(log: Arc<HostLog>) {
    let mut tick = tokio::time::interval(CHECK);
    loop {
        tick.tick().await;
        let l = Arc::clone(&log);
        match tokio::task::spawn_blocking(move || l.rotate_if_large()).await {
            Ok(Ok(true)) => tracing::info!(
                copy = %rotated(&log.path).display(),
                max = log.max,
                "the log passed its size limit; rotated"
            ),
            Ok(Ok(false)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot rotate the log"),
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writers on several threads and a worker's stream, rotating all the while: every line
    /// is in the log or its copy, whole, exactly once.
    #[test]
    fn rotation_under_load_loses_no_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("capt-hookd.log");
        let (file, _) = crate::files::open_append(&path).unwrap();
        let log = HostLog::new(file, path.clone(), 4096);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (mut tx, rx) = tokio::io::duplex(1024);
        let pump = runtime.spawn(Arc::clone(&log).pump(rx));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let rotations = {
            let (log, done) = (Arc::clone(&log), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut n = 0;
                // Also reads both files between rotations, so every rotation is checked.
                let mut seen = Vec::new();
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    if log.rotate_if_large().unwrap() {
                        n += 1;
                        seen.push(std::fs::read_to_string(rotated(&log.path)).unwrap());
                    }
                }
                (n, seen)
            })
        };
        let writers: Vec<_> = (0..3)
            .map(|t| {
                let mut w = Writer(Arc::clone(&log));
                let path = path.clone();
                std::thread::spawn(move || {
                    for i in 0..400 {
                        w.write_all(format!("host {t} line {i}\n").as_bytes())
                            .unwrap();
                        // Writers alone finish within one time slice, and on a loaded machine
                        // a short pause was not enough for the rotating thread to run: wait
                        // (bounded) until it has brought the file back under its limit, so
                        // rotations really fall between writes.
                        if i % 50 == 49 {
                            let until =
                                std::time::Instant::now() + std::time::Duration::from_secs(5);
                            while std::fs::metadata(&path).map_or(0, |m| m.len()) > 4096
                                && std::time::Instant::now() < until
                            {
                                std::thread::sleep(std::time::Duration::from_millis(1));
                            }
                        }
                    }
                })
            })
            .collect();
        runtime.block_on(async {
            use tokio::io::AsyncWriteExt;
            for i in 0..400 {
                // Lines arrive in pieces, as a pipe gives them.
                tx.write_all(b"worker li").await.unwrap();
                tx.write_all(format!("ne {i}\n").as_bytes()).await.unwrap();
            }
            tx.write_all(b"unterminated").await.unwrap();
            drop(tx);
            pump.await.unwrap();
        });
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let (n, copies) = rotations.join().unwrap();
        assert!(n >= 2, "rotated {n} times");
        let mut lines: Vec<String> = copies
            .iter()
            .flat_map(|c| c.lines().map(str::to_owned).collect::<Vec<_>>())
            .chain(
                std::fs::read_to_string(&path)
                    .unwrap()
                    .lines()
                    .map(str::to_owned),
            )
            .collect();
        lines.sort();
        let mut want: Vec<String> = (0..3)
            .flat_map(|t| (0..400).map(move |i| format!("host {t} line {i}")))
            .chain((0..400).map(|i| format!("worker line {i}")))
            .chain(["unterminated".to_owned()])
            .collect();
        want.sort();
        assert_eq!(lines.len(), want.len());
        assert_eq!(lines, want);
    }
}

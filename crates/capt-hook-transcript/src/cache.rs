//! Reading a transcript once per worker rather than once per event: [`TranscriptCache`] keeps
//! each file's parsed lines and reads only what was appended since; [`LazyTranscript`] defers
//! the read until a hook actually asks.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, MutexGuard};
use std::time::SystemTime;

use crate::command::CommandMatcher;
use crate::entry::Data;
use crate::error::TranscriptError;
use crate::transcript::{Index, ReadMark, Source, Transcript, read_file};

/// Files kept by default (a session's main transcript plus its subagents, for a few sessions).
pub const DEFAULT_CACHE_FILES: usize = 32;

struct Cached {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: Option<SystemTime>,
    mark: ReadMark,
    data: Arc<Data>,
    index: Arc<Index>,
}

struct Slot {
    cell: Arc<Mutex<Option<Cached>>>,
    last_used: u64,
}

struct Inner {
    files: Mutex<HashMap<PathBuf, Slot>>,
    matcher: Option<Arc<dyn CommandMatcher>>,
    capacity: usize,
    clock: AtomicU64,
}

/// Parsed transcripts shared across events. Claude Code only appends to a transcript, so a
/// later event re-reads nothing: it checks the file's identity, size and modification time,
/// verifies the bytes just before where it stopped, and parses only the new lines. A replaced or
/// rewritten file is read from scratch. Cloning shares the cache.
#[derive(Clone)]
pub struct TranscriptCache {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TranscriptCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TranscriptCache")
            .field("files", &lock(&self.inner.files).len())
            .field("capacity", &self.inner.capacity)
            .finish()
    }
}

impl Default for TranscriptCache {
    fn default() -> Self {
        TranscriptCache::new(None, DEFAULT_CACHE_FILES)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // No poisoning: a panic while holding the lock leaves consistent data behind (every update
    // is a whole replacement).
    m.lock()
}

impl TranscriptCache {
    /// A cache holding at most `capacity` files, whose transcripts use `matcher` for
    /// `has_command` (the approximate fallback when `None`).
    pub fn new(matcher: Option<Arc<dyn CommandMatcher>>, capacity: usize) -> TranscriptCache {
        TranscriptCache {
            inner: Arc::new(Inner {
                files: Mutex::new(HashMap::new()),
                matcher,
                capacity: capacity.max(1),
                clock: AtomicU64::new(0),
            }),
        }
    }

    /// Number of files held.
    pub fn len(&self) -> usize {
        lock(&self.inner.files).len()
    }

    /// True when no file is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A transcript for `path` (none without a path) that is read through this cache on first use.
    pub fn lazy(&self, path: Option<PathBuf>) -> LazyTranscript {
        LazyTranscript {
            path,
            cache: Some(self.clone()),
            cell: OnceLock::new(),
        }
    }

    fn slot(&self, path: &Path) -> Arc<Mutex<Option<Cached>>> {
        let now = self.inner.clock.fetch_add(1, Ordering::Relaxed);
        let mut files = lock(&self.inner.files);
        let cell = {
            let slot = files.entry(path.to_path_buf()).or_insert_with(|| Slot {
                cell: Arc::default(),
                last_used: now,
            });
            slot.last_used = now;
            slot.cell.clone()
        };
        while files.len() > self.inner.capacity {
            let oldest = files
                .iter()
                .filter(|(p, _)| p.as_path() != path)
                .min_by_key(|(_, s)| s.last_used)
                .map(|(p, _)| p.clone());
            match oldest {
                Some(p) => files.remove(&p),
                None => break,
            };
        }
        cell
    }

    /// The transcript at `path`, reading only what was appended since the last call.
    pub fn load(&self, path: &Path) -> Result<Transcript, TranscriptError> {
        let cell = self.slot(path);
        let mut guard = lock(&cell);
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => {
                *guard = None;
                return Err(TranscriptError::io(path, e));
            }
        };
        let (dev, ino, len, mtime) = (meta.dev(), meta.ino(), meta.len(), meta.modified().ok());
        let same_file = |c: &Cached| c.dev == dev && c.ino == ino;
        let unchanged = guard
            .as_ref()
            .is_some_and(|c| same_file(c) && c.len == len && c.mtime == mtime);
        if !unchanged {
            let mut file = File::open(path).map_err(|e| TranscriptError::io(path, e))?;
            match guard.as_mut() {
                Some(c)
                    if same_file(c)
                        && len >= c.mark.consumed
                        && tail_matches(&mut file, &c.mark) =>
                {
                    // Unique unless an earlier event's snapshot is still alive; then it is
                    // copied once and that snapshot keeps the old lines.
                    let data = Arc::make_mut(&mut c.data);
                    read_file(path, &mut file, data, &mut c.mark)?;
                    Arc::make_mut(&mut c.index).extend(&c.data);
                    c.len = len;
                    c.mtime = mtime;
                }
                _ => {
                    let mut data = Data::default();
                    let mut mark = ReadMark::default();
                    read_file(path, &mut file, &mut data, &mut mark)?;
                    let mut index = Index::default();
                    index.extend(&data);
                    *guard = Some(Cached {
                        dev,
                        ino,
                        len,
                        mtime,
                        mark,
                        data: Arc::new(data),
                        index: Arc::new(index),
                    });
                }
            }
        }
        let Some(c) = guard.as_ref() else {
            return Err(TranscriptError::NotFound {
                path: path.to_path_buf(),
            });
        };
        Ok(Transcript::assemble(
            Some(path.to_path_buf()),
            Source::File(path.to_path_buf()),
            c.data.clone(),
            c.index.clone(),
            Some(self.clone()),
            self.inner.matcher.clone(),
        ))
    }
}

/// True when the bytes just before `mark.consumed` are still the ones read last time.
fn tail_matches(file: &mut File, mark: &ReadMark) -> bool {
    let n = mark.tail.len() as u64;
    if n == 0 {
        return mark.consumed == 0;
    }
    let mut buf = vec![0; mark.tail.len()];
    file.seek(SeekFrom::Start(mark.consumed - n)).is_ok()
        && file.read_exact(&mut buf).is_ok()
        && buf == mark.tail
}

/// A transcript read on first use, at most once: events that no hook asks about never touch
/// the file. A missing or unreadable file reads as an empty transcript; [`LazyTranscript::error`]
/// says why.
pub struct LazyTranscript {
    path: Option<PathBuf>,
    cache: Option<TranscriptCache>,
    cell: OnceLock<(Transcript, Option<TranscriptError>)>,
}

impl std::fmt::Debug for LazyTranscript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyTranscript")
            .field("path", &self.path)
            .field("loaded", &self.is_loaded())
            .finish()
    }
}

impl LazyTranscript {
    /// Reads `path` directly (no cache) on first use.
    pub fn new(path: Option<PathBuf>) -> LazyTranscript {
        LazyTranscript {
            path,
            cache: None,
            cell: OnceLock::new(),
        }
    }

    /// An already parsed transcript (inline test fixtures).
    pub fn ready(transcript: Transcript) -> LazyTranscript {
        let cell = OnceLock::new();
        let _ = cell.set((transcript, None));
        LazyTranscript {
            path: None,
            cache: None,
            cell,
        }
    }

    /// The path it reads.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// True once read.
    pub fn is_loaded(&self) -> bool {
        self.cell.get().is_some()
    }

    /// The transcript, read now if this is the first use.
    pub fn get(&self) -> &Transcript {
        &self
            .cell
            .get_or_init(|| {
                let Some(path) = &self.path else {
                    return (Transcript::empty(), None);
                };
                let loaded = match &self.cache {
                    Some(cache) => cache.load(path),
                    None => Transcript::load(path),
                };
                match loaded {
                    Ok(t) => (t, None),
                    Err(e) => (Transcript::empty(), Some(e)),
                }
            })
            .0
    }

    /// Why the transcript is empty, when reading it failed (reads it if needed).
    pub fn error(&self) -> Option<&TranscriptError> {
        self.get();
        self.cell.get().and_then(|(_, e)| e.as_ref())
    }
}

//! A parsed transcript: entries, tool calls and results, turn boundaries, and its subagents.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::cache::TranscriptCache;
use crate::command::CommandMatcher;
use crate::entry::{Data, Entry, LineSpan, ToolCall, ToolResult};
use crate::error::TranscriptError;
use crate::raw;

/// Bytes remembered before the read position, to notice a file rewritten rather than appended.
const TAIL: usize = 64;
/// Read buffer; lines longer than this are still read whole.
const READ_BUF: usize = 1 << 16;
/// A line buffer grown past this (a huge base64 line) is released instead of kept for reuse.
const KEEP_LINE_BUF: usize = 1 << 20;

/// Where the bytes came from, so a line can be read again in full.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    None,
    File(PathBuf),
    Memory(Arc<str>),
}

/// How far a source has been read.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReadMark {
    /// Bytes consumed (up to the end of the last complete, parsed line).
    pub consumed: u64,
    /// Up to [`TAIL`] bytes just before `consumed`.
    pub tail: Vec<u8>,
}

/// Derived facts kept in step with the data: where turns start and which result answers which
/// call.
#[derive(Clone, Debug, Default)]
pub(crate) struct Index {
    /// Entry index where each turn starts.
    pub turn_starts: Vec<u32>,
    /// Whether each turn opens with a prompt (turn 0 may be a preamble without one).
    pub turn_prompted: Vec<bool>,
    /// Tool-use id to result index (the last result wins, as in the original).
    pub result_of: HashMap<Box<str>, u32>,
    entries_seen: usize,
    results_seen: usize,
}

impl Index {
    /// Indexes the entries and results added since the last call.
    pub fn extend(&mut self, data: &Data) {
        for (i, e) in data.entries.iter().enumerate().skip(self.entries_seen) {
            if e.is_prompt() {
                self.turn_starts.push(i as u32);
                self.turn_prompted.push(true);
            } else if self.turn_starts.is_empty() {
                self.turn_starts.push(i as u32);
                self.turn_prompted.push(false);
            }
        }
        self.entries_seen = data.entries.len();
        for (i, r) in data.results.iter().enumerate().skip(self.results_seen) {
            self.result_of.insert(r.tool_use_id().into(), i as u32);
        }
        self.results_seen = data.results.len();
    }

    /// The turn holding entry `entry`.
    pub fn turn_of(&self, entry: usize) -> usize {
        self.turn_starts
            .partition_point(|&s| s as usize <= entry)
            .saturating_sub(1)
    }
}

/// Reads lines from `reader` (positioned at `mark.consumed`) into `data`. A last line without a
/// newline is taken only if it parses, since it may be a write still in progress; everything
/// else that does not parse is counted in `data.skipped` and passed over.
pub(crate) fn read_lines(
    reader: impl Read,
    data: &mut Data,
    mark: &mut ReadMark,
) -> std::io::Result<()> {
    let mut reader = BufReader::with_capacity(READ_BUF, reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        let complete = buf.last() == Some(&b'\n');
        let mut line = &buf[..];
        while let Some((last, rest)) = line.split_last()
            && matches!(last, b'\n' | b'\r')
        {
            line = rest;
        }
        let span = LineSpan {
            offset: mark.consumed,
            len: line.len().min(u32::MAX as usize) as u32,
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            if !complete {
                break;
            }
        } else {
            match raw::parse_line(line) {
                Ok(parsed) => {
                    if !data.push(parsed, span) {
                        data.skipped += 1;
                    }
                }
                Err(_) if !complete => break,
                Err(_) => data.skipped += 1,
            }
        }
        mark.consumed += n as u64;
        let keep = &buf[n.saturating_sub(TAIL)..n];
        mark.tail.extend_from_slice(keep);
        if mark.tail.len() > TAIL {
            mark.tail.drain(..mark.tail.len() - TAIL);
        }
        if buf.capacity() > KEEP_LINE_BUF {
            buf = Vec::new();
        }
    }
    Ok(())
}

/// One subagent's transcript found in the session's `subagents/` folder.
#[derive(Debug)]
pub struct Subagent {
    agent_id: String,
    transcript: Transcript,
}

impl Subagent {
    /// The agent id (from the file name `agent-<id>.jsonl`).
    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// The subagent's own transcript.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }
}

/// A parsed transcript. Cheap to clone: the parsed data is shared.
pub struct Transcript {
    pub(crate) path: Option<PathBuf>,
    pub(crate) source: Source,
    pub(crate) data: Arc<Data>,
    pub(crate) index: Arc<Index>,
    pub(crate) cache: Option<TranscriptCache>,
    pub(crate) matcher: Option<Arc<dyn CommandMatcher>>,
    subagents: OnceLock<Vec<Subagent>>,
}

impl Clone for Transcript {
    fn clone(&self) -> Self {
        Transcript::assemble(
            self.path.clone(),
            self.source.clone(),
            self.data.clone(),
            self.index.clone(),
            self.cache.clone(),
            self.matcher.clone(),
        )
    }
}

impl std::fmt::Debug for Transcript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transcript")
            .field("path", &self.path)
            .field("entries", &self.data.entries.len())
            .field("tool_calls", &self.data.calls.len())
            .field("skipped", &self.data.skipped)
            .finish()
    }
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript::empty()
    }
}

impl Transcript {
    pub(crate) fn assemble(
        path: Option<PathBuf>,
        source: Source,
        data: Arc<Data>,
        index: Arc<Index>,
        cache: Option<TranscriptCache>,
        matcher: Option<Arc<dyn CommandMatcher>>,
    ) -> Transcript {
        Transcript {
            path,
            source,
            data,
            index,
            cache,
            matcher,
            subagents: OnceLock::new(),
        }
    }

    /// A transcript with no entries (no transcript in the payload).
    pub fn empty() -> Transcript {
        Transcript::assemble(
            None,
            Source::None,
            Arc::default(),
            Arc::default(),
            None,
            None,
        )
    }

    /// Reads the file at `path`, line by line. Bad lines are skipped; only a missing or
    /// unreadable file is an error. For repeated reads of a growing file use
    /// [`TranscriptCache`], which reads only what was appended.
    pub fn load(path: impl AsRef<Path>) -> Result<Transcript, TranscriptError> {
        let path = path.as_ref();
        let mut file = File::open(path).map_err(|e| TranscriptError::io(path, e))?;
        let mut data = Data::default();
        read_file(path, &mut file, &mut data, &mut ReadMark::default())?;
        Ok(Transcript::from_data(
            Some(path.to_path_buf()),
            Source::File(path.to_path_buf()),
            data,
        ))
    }

    /// Parses JSONL text held in memory (inline test fixtures).
    pub fn from_jsonl(text: &str) -> Transcript {
        let mut data = Data::default();
        let mut mark = ReadMark::default();
        // Reading from a byte slice cannot fail.
        let _ = read_lines(text.as_bytes(), &mut data, &mut mark);
        Transcript::from_data(None, Source::Memory(Arc::from(text)), data)
    }

    /// Parses one JSON value per line (inline test fixtures given as objects).
    pub fn from_values<'a>(lines: impl IntoIterator<Item = &'a Value>) -> Transcript {
        let text: String = lines.into_iter().map(|v| format!("{v}\n")).collect();
        Transcript::from_jsonl(&text)
    }

    fn from_data(path: Option<PathBuf>, source: Source, data: Data) -> Transcript {
        let mut index = Index::default();
        index.extend(&data);
        Transcript::assemble(path, source, Arc::new(data), Arc::new(index), None, None)
    }

    /// Uses `matcher` for [`crate::Window::has_command`] in this transcript and its subagents.
    pub fn with_matcher(mut self, matcher: Arc<dyn CommandMatcher>) -> Transcript {
        self.matcher = Some(matcher);
        self.subagents = OnceLock::new();
        self
    }

    /// The file, when loaded from one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Number of entries (every parsed line, of every type). This is the "length of the
    /// transcript" the once-per-turn throttle counts in.
    pub fn len(&self) -> usize {
        self.data.entries.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.data.entries.is_empty()
    }

    /// Every entry, in file order.
    pub fn entries(&self) -> &[Entry] {
        &self.data.entries
    }

    /// Every tool call, in file order.
    pub fn calls(&self) -> &[ToolCall] {
        &self.data.calls
    }

    /// Every tool result, in file order.
    pub fn results(&self) -> &[ToolResult] {
        &self.data.results
    }

    /// The tool calls carried by entry `index` (an assistant line).
    pub fn calls_in(&self, index: usize) -> &[ToolCall] {
        self.data.entries.get(index).map_or(&[], |e| {
            &self.data.calls[e.calls.0 as usize..e.calls.1 as usize]
        })
    }

    /// The tool results carried by entry `index` (a user line).
    pub fn results_in(&self, index: usize) -> &[ToolResult] {
        self.data.entries.get(index).map_or(&[], |e| {
            &self.data.results[e.results.0 as usize..e.results.1 as usize]
        })
    }

    /// Lines skipped because they were not JSON objects with a `type`, or user/assistant lines
    /// without a usable `message`.
    pub fn skipped_lines(&self) -> usize {
        self.data.skipped
    }

    /// The result answering tool use `tool_use_id`, anywhere in the file.
    pub fn result_of(&self, tool_use_id: &str) -> Option<&ToolResult> {
        self.index
            .result_of
            .get(tool_use_id)
            .map(|&i| &self.data.results[i as usize])
    }

    /// Number of turns. Entries before the first prompt form turn 0 without a prompt.
    pub fn turn_count(&self) -> usize {
        self.index.turn_starts.len()
    }

    /// `<dir>/<stem>/subagents/`: where this session's subagent transcripts live.
    pub fn subagent_dir(&self) -> Option<PathBuf> {
        let path = self.path.as_ref()?;
        let stem = path.file_stem()?;
        Some(path.parent()?.join(stem).join("subagents"))
    }

    /// The subagent transcripts on disk (`agent-<id>.jsonl`, names starting with `._` ignored),
    /// sorted by file name, read on first use. Unreadable files are left out.
    pub fn subagents(&self) -> &[Subagent] {
        self.subagents.get_or_init(|| {
            let Some(dir) = self.subagent_dir() else {
                return Vec::new();
            };
            let Ok(entries) = std::fs::read_dir(&dir) else {
                return Vec::new();
            };
            let mut files: Vec<(String, PathBuf)> = entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let id = name.strip_suffix(".jsonl")?;
                    if name.starts_with("._") || !e.file_type().ok()?.is_file() {
                        return None;
                    }
                    let id = id.strip_prefix("agent-").unwrap_or(id).to_owned();
                    Some((id, e.path()))
                })
                .collect();
            files.sort_by(|a, b| a.1.cmp(&b.1));
            files
                .into_iter()
                .filter_map(|(agent_id, path)| {
                    let t = match &self.cache {
                        Some(cache) => cache.load(&path).ok()?,
                        None => Transcript::load(&path).ok()?,
                    };
                    let t = match &self.matcher {
                        Some(m) => t.with_matcher(m.clone()),
                        None => t,
                    };
                    Some(Subagent {
                        agent_id,
                        transcript: t,
                    })
                })
                .collect()
        })
    }

    /// The subagent with this agent id.
    pub fn subagent(&self, agent_id: &str) -> Option<&Subagent> {
        self.subagents().iter().find(|s| s.agent_id == agent_id)
    }

    /// The entry's full line, parsed again from the source (for data the lean parse cut or
    /// skipped: a whole tool result, `originalFile`, usage).
    pub fn raw_line(&self, entry: &Entry) -> Result<Value, TranscriptError> {
        let span = entry.span();
        let changed = || TranscriptError::Changed {
            path: self
                .path
                .clone()
                .unwrap_or_else(|| PathBuf::from("<memory>")),
            offset: span.offset,
        };
        let bytes = match &self.source {
            Source::None => return Err(changed()),
            Source::Memory(text) => {
                let start = span.offset as usize;
                text.as_bytes()
                    .get(start..start + span.len as usize)
                    .ok_or_else(changed)?
                    .to_vec()
            }
            Source::File(path) => {
                let mut f = File::open(path).map_err(|e| TranscriptError::io(path, e))?;
                f.seek(SeekFrom::Start(span.offset))
                    .map_err(|e| TranscriptError::io(path, e))?;
                let mut buf = vec![0; span.len as usize];
                f.read_exact(&mut buf).map_err(|_| changed())?;
                buf
            }
        };
        let value: Value = serde_json::from_slice(&bytes).map_err(|_| changed())?;
        if value.get("uuid").and_then(Value::as_str) != entry.uuid() {
            return Err(changed());
        }
        Ok(value)
    }
}

/// Reads `file` from `mark` on into `data`.
pub(crate) fn read_file(
    path: &Path,
    file: &mut File,
    data: &mut Data,
    mark: &mut ReadMark,
) -> Result<(), TranscriptError> {
    file.seek(SeekFrom::Start(mark.consumed))
        .map_err(|e| TranscriptError::io(path, e))?;
    read_lines(file, data, mark).map_err(|e| TranscriptError::io(path, e))
}

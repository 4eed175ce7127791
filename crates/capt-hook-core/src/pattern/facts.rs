//! What loading a pattern learns from its syntax, and a per-project file that keeps it across
//! worker starts.
//!
//! Parsing a pattern to find its errors and its prefilter literals is most of what loading a
//! hook file costs (regex-syntax's parser and translator, ~20,000 instructions for a short
//! pattern). The result depends on the pattern and on this executable's code alone, so a worker
//! records it in a file named after its project root, and the next worker of
//! the same build for that root reads it back instead of parsing again. A file from another
//! build is never used: it carries the identity of the executable that wrote it (device, inode,
//! size and modification time), which every build and every install changes. A missing,
//! unreadable or foreign file only means parsing, as without it.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use parking_lot::Mutex;
use std::time::Duration;

use regex_syntax::hir::Hir;
use serde::{Deserialize, Serialize};

use super::{LAZY_WEIGHT, is_word_look, prefix_literals, required_literals, weight};

/// More entries than this and a file keeps only what the latest load learned, and a process
/// learns no more: a project's patterns are a few hundred, and a file read at each worker start
/// must stay small.
const MAX_ENTRIES: usize = 2_048;
/// Files not written for this long (another build's, a project gone, or one whose patterns
/// have not changed since: it learns them again) are removed when one is saved.
const KEEP: Duration = Duration::from_secs(30 * 24 * 3600);

/// What a pattern's syntax says, as loading needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Facts {
    /// The linear engine parsed it and it is light enough to compile on first use; otherwise
    /// it is compiled when loaded.
    pub lazy: bool,
    /// Every match starts with one of these literals; `None` when no short list says so.
    pub prefixes: Option<Vec<Vec<u8>>>,
    /// Every match holds all of these literals (longest first).
    pub required: Vec<Vec<u8>>,
    /// Its only assertions are word boundaries.
    pub edge_neutral: bool,
}

impl Facts {
    /// Parses `flagged` (the pattern as the engines read it) for its facts.
    pub fn of(flagged: &str) -> Facts {
        // The `regex` crate parses with these same defaults, so a pattern this parser accepts
        // compiles there too, unless it is too big (which the weight rules out).
        match regex_syntax::parse(flagged) {
            Ok(hir) if weight(&hir) <= LAZY_WEIGHT => Facts {
                lazy: true,
                edge_neutral: hir.properties().look_set().iter().all(is_word_look),
                ..Facts::literals(&hir)
            },
            Ok(_) => Facts::eager(None),
            // Look-around: the pattern without it matches wherever the pattern does, so the
            // literals its matches need are needed here too (the builtin `find` guards do not
            // compile and run on every command that has no `find`).
            Err(_) => Facts::eager(
                super::without_lookaround(flagged).and_then(|p| regex_syntax::parse(&p).ok()),
            ),
        }
    }

    fn literals(hir: &Hir) -> Facts {
        Facts {
            lazy: false,
            prefixes: prefix_literals(hir),
            required: required_literals(hir),
            edge_neutral: false,
        }
    }

    fn eager(hir: Option<Hir>) -> Facts {
        match hir {
            Some(hir) => Facts::literals(&hir),
            None => Facts {
                lazy: false,
                prefixes: None,
                required: Vec::new(),
                edge_neutral: false,
            },
        }
    }
}

/// The file's contents.
#[derive(Serialize, Deserialize)]
struct Stored {
    /// The executable that computed these facts ([`exe_identity`]).
    exe: String,
    /// Facts by pattern as the engines read it.
    facts: HashMap<String, Facts>,
}

/// Facts read from a project's file, and those this process learned since.
#[derive(Debug)]
pub struct FactsCache {
    path: PathBuf,
    exe: String,
    known: HashMap<String, Facts>,
    learned: Mutex<HashMap<String, Facts>>,
}

impl FactsCache {
    /// The cache of the project whose key (a hash of its root) is `project`, kept in `dir`;
    /// `None` when this executable cannot be identified.
    pub fn open(dir: &Path, project: &str) -> Option<FactsCache> {
        let exe = exe_identity()?;
        let path = dir.join(format!("{project}.json"));
        let known = std::fs::read(&path)
            .ok()
            .and_then(|body| serde_json::from_slice::<Stored>(&body).ok())
            .filter(|stored| stored.exe == exe)
            .map(|stored| stored.facts)
            .unwrap_or_default();
        Some(FactsCache {
            path,
            exe,
            known,
            learned: Mutex::new(HashMap::new()),
        })
    }

    pub(super) fn get(&self, flagged: &str) -> Option<&Facts> {
        self.known.get(flagged)
    }

    /// Records what parsing `flagged` found. Bounded: patterns are also made at event time
    /// (a ticket pattern filled from the tool input), and a long-lived worker must not grow
    /// with them.
    pub(super) fn learn(&self, flagged: &str, facts: &Facts) {
        let mut learned = self.learned.lock();
        if learned.len() < MAX_ENTRIES {
            learned.insert(flagged.to_owned(), facts.clone());
        }
    }

    /// How many patterns were read from the file, and how many this process parsed since.
    pub fn counts(&self) -> (usize, usize) {
        let learned = self.learned.lock();
        (self.known.len(), learned.len())
    }

    /// Writes the file when this process learned something, through a new file renamed into
    /// place (a worker reading it meanwhile sees the old one or the new one); then removes the
    /// directory's files that were not written for [`KEEP`]. Returns whether it wrote.
    pub fn save(&self) -> std::io::Result<bool> {
        let learned = self.learned.lock();
        if learned.is_empty() {
            return Ok(false);
        }
        let mut facts = if self.known.len() + learned.len() > MAX_ENTRIES {
            HashMap::new()
        } else {
            self.known.clone()
        };
        facts.extend(learned.iter().map(|(k, v)| (k.clone(), v.clone())));
        let body = serde_json::to_vec(&Stored {
            exe: self.exe.clone(),
            facts,
        })
        .map_err(std::io::Error::other)?;
        drop(learned);
        let dir = self.path.parent().unwrap_or(Path::new("."));
        capt_hook_proto::paths::ensure_private_dir(dir)?;
        let tmp = self
            .path
            .with_extension(format!("json.{}.tmp", std::process::id()));
        let written = (|| {
            use std::os::unix::fs::OpenOptionsExt;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(&body)?;
            std::fs::rename(&tmp, &self.path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written?;
        prune(dir, KEEP);
        Ok(true)
    }
}

/// Removes the files in `dir` not modified for `keep`.
fn prune(dir: &Path, keep: Duration) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > keep);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// This executable as a file: device, inode, size and modification time. A rebuilt or
/// reinstalled binary differs in at least one of them.
fn exe_identity() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(std::env::current_exe().ok()?).ok()?;
    Some(format!(
        "{}:{}:{}:{}.{}",
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec()
    ))
}

static INSTALLED: OnceLock<FactsCache> = OnceLock::new();

/// Makes `cache` the one [`super::Pattern::new`] reads and records into, for the rest of this
/// process (a worker, for its project). A second call changes nothing.
pub fn install(cache: FactsCache) {
    let _ = INSTALLED.set(cache);
}

/// The installed cache, if any.
pub fn installed() -> Option<&'static FactsCache> {
    INSTALLED.get()
}

#[cfg(test)]
mod tests {
    use super::super::{Mode, Pattern};
    use super::*;

    /// Linear, case-insensitive, multi-line, look-around, too heavy to compile lazily, and
    /// patterns with and without prefix and required literals.
    const SOURCES: [(&str, Mode); 9] = [
        (r"npm\s+push\b.*--force1", Mode::Plain),
        (r"cargo\s+\S+\s+push", Mode::Plain),
        (r"(?:git|hg)\s+(?:push|pull)", Mode::Plain),
        (r"DROP\s+TABLE", Mode::IgnoreCase),
        (r"^foo\b", Mode::Multiline),
        (r"--force\b(?!-)", Mode::Plain),
        (r"find\s+(?!-name)\S+", Mode::Plain),
        (r"\w{200}\s+x{300}", Mode::Plain),
        (r"[0-9]+x", Mode::Plain),
    ];
    const TEXTS: [&str; 8] = [
        "npm push x --force1",
        "cargo +nightly push",
        "hg pull",
        "drop   table users",
        "a\nfoo bar",
        "git push --force",
        "git push --force-with-lease; find . -type f",
        "12x",
    ];

    /// Prefix literals, required literals, edge neutrality, compiled already.
    type View = (Option<Vec<Vec<u8>>>, Vec<Vec<u8>>, bool, bool);

    fn view(p: &Pattern) -> View {
        let needles = |f: &[memchr::memmem::Finder<'static>]| {
            f.iter().map(|f| f.needle().to_vec()).collect::<Vec<_>>()
        };
        (
            p.prefixes.as_deref().map(needles),
            needles(&p.required),
            p.edge_neutral,
            p.engine.get().is_some(),
        )
    }

    /// A pattern built from facts read back from the file is the pattern parsing builds: same
    /// literals, same assertions, compiled as eagerly, and it matches the same texts.
    #[test]
    fn facts_read_back_build_the_same_patterns() {
        let dir = tempfile::tempdir().unwrap();
        let first = FactsCache::open(dir.path(), "p").unwrap();
        let parsed: Vec<Pattern> = SOURCES
            .iter()
            .map(|(s, m)| Pattern::with_facts(s, *m, Some(&first)).unwrap())
            .collect();
        assert_eq!(first.counts(), (0, SOURCES.len()));
        assert!(first.save().unwrap());

        let second = FactsCache::open(dir.path(), "p").unwrap();
        assert_eq!(second.counts(), (SOURCES.len(), 0), "every pattern known");
        for ((source, mode), parsed) in SOURCES.iter().zip(&parsed) {
            let cached = Pattern::with_facts(source, *mode, Some(&second)).unwrap();
            let fresh = Pattern::with_facts(source, *mode, None).unwrap();
            assert_eq!(view(&cached), view(&fresh), "{source}");
            assert_eq!(view(parsed), view(&fresh), "{source}");
            for text in TEXTS {
                assert_eq!(
                    cached.is_match(text),
                    fresh.is_match(text),
                    "{source} on {text:?}"
                );
            }
        }
        assert_eq!(second.counts(), (SOURCES.len(), 0), "nothing parsed again");
        assert!(!second.save().unwrap(), "nothing new to write");
    }

    /// A file from another executable (another build, another install) or one that does not
    /// parse is not used: its patterns are parsed.
    #[test]
    fn foreign_or_damaged_files_are_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FactsCache::open(dir.path(), "p").unwrap();
        Pattern::with_facts(r"git\s+stash", Mode::Plain, Some(&cache)).unwrap();
        cache.save().unwrap();
        let path = dir.path().join("p.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let mut stored: serde_json::Value = serde_json::from_str(&text).unwrap();
        // Facts a different build might hold: no literal, so nothing could be turned away.
        stored["exe"] = "another build".into();
        std::fs::write(&path, stored.to_string()).unwrap();
        assert_eq!(FactsCache::open(dir.path(), "p").unwrap().counts(), (0, 0));

        std::fs::write(&path, &text[..text.len() / 2]).unwrap();
        let torn = FactsCache::open(dir.path(), "p").unwrap();
        assert_eq!(torn.counts(), (0, 0));
        // And it is replaced by a whole one once something is learned.
        Pattern::with_facts(r"git\s+stash", Mode::Plain, Some(&torn)).unwrap();
        assert!(torn.save().unwrap());
        assert_eq!(FactsCache::open(dir.path(), "p").unwrap().counts(), (1, 0));
    }

    /// A pattern that fails to load is not recorded, and still fails with its error.
    #[test]
    fn bad_patterns_are_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FactsCache::open(dir.path(), "p").unwrap();
        assert!(Pattern::with_facts("(unclosed", Mode::Plain, Some(&cache)).is_err());
        assert!(Pattern::with_facts(r"a(?<!b", Mode::Plain, Some(&cache)).is_err());
        assert_eq!(cache.counts(), (0, 0));
        assert!(!cache.save().unwrap());
    }

    /// A worker that keeps making patterns at event time stops learning at the bound.
    #[test]
    fn learning_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FactsCache::open(dir.path(), "p").unwrap();
        let facts = Facts::of("x+y");
        for i in 0..MAX_ENTRIES + 10 {
            cache.learn(&format!("x{i}"), &facts);
        }
        assert_eq!(cache.counts(), (0, MAX_ENTRIES));
    }

    /// Files of projects not seen for a month go when another is saved.
    #[test]
    fn old_files_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("gone.json");
        std::fs::write(&old, "{}").unwrap();
        let month_ago = std::time::SystemTime::now() - KEEP - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(month_ago)
            .unwrap();
        let recent = dir.path().join("recent.json");
        std::fs::write(&recent, "{}").unwrap();
        let cache = FactsCache::open(dir.path(), "p").unwrap();
        Pattern::with_facts("x+y", Mode::Plain, Some(&cache)).unwrap();
        cache.save().unwrap();
        assert!(!old.exists());
        assert!(recent.exists());
    }
}

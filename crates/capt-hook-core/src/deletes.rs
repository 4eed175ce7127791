//! What the `rm` commands of a Bash line would delete, classified against the filesystem when
//! the event is evaluated: the `deletes` condition behind the builtin rm guard.
//!
//! A regex over the words can say `rm -rf /` but not "this directory holds a repository" or
//! "nothing under version control could restore this file": those need the disk as it is when
//! the call is decided. Each target of each `rm` the line runs (through wrappers, command
//! strings and `find -exec` alike) is resolved against the working directory (the payload's
//! `cwd`, moved by literal top-level `cd`s before it), globs are expanded within a budget, and
//! the target gets at most one [`DeleteRisk`].

use std::fmt;
use std::path::{Component, Path, PathBuf};

use capt_hook_shell::{CommandLine, Word, basename};

/// The most files one glob target may match before the whole glob counts as too broad.
pub const GLOB_LIMIT: usize = 10;

/// Directory entries read for one target (a glob's expansion, or the search for a repository
/// inside a directory) before giving up; giving up counts as the risky answer.
const SCAN_BUDGET: usize = 20_000;

/// What makes one deletion target dangerous. Targets that are scratch paths, or that lie inside
/// a git or jj repository (so version control can restore them), get none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum DeleteRisk {
    /// The filesystem root.
    Root,
    /// A home directory (the user's, or any directly under `/home` or `/Users`), or those
    /// parents themselves.
    Home,
    /// The root of a git or jj repository (it holds `.git` or `.jj`).
    RepoRoot,
    /// A directory with a repository somewhere below it (or too large to search).
    ContainsRepo,
    /// A path outside every git and jj repository and outside scratch space: nothing could
    /// restore it.
    OutsideRepo,
    /// A glob matching more than [`GLOB_LIMIT`] paths, or too large to expand.
    BroadGlob,
    /// Not a risk but its absence, reported only when no risk is: the line runs only `rm` (and
    /// literal `cd`s), and every path it names is missing from the disk, so it deletes
    /// nothing. Hooks that stop deletes of what may exist (a tree inside the repository) skip
    /// on it.
    Nothing,
}

impl DeleteRisk {
    /// Every risk, in the order they are checked.
    pub const ALL: [DeleteRisk; 7] = [
        DeleteRisk::Root,
        DeleteRisk::Home,
        DeleteRisk::RepoRoot,
        DeleteRisk::ContainsRepo,
        DeleteRisk::OutsideRepo,
        DeleteRisk::BroadGlob,
        DeleteRisk::Nothing,
    ];

    /// The name hook files use.
    pub fn name(self) -> &'static str {
        match self {
            DeleteRisk::Root => "root",
            DeleteRisk::Home => "home",
            DeleteRisk::RepoRoot => "repo_root",
            DeleteRisk::ContainsRepo => "contains_repo",
            DeleteRisk::OutsideRepo => "outside_repo",
            DeleteRisk::BroadGlob => "broad_glob",
            DeleteRisk::Nothing => "nothing",
        }
    }

    /// The risk a hook file names, if any.
    pub fn parse(name: &str) -> Option<DeleteRisk> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }
}

impl fmt::Display for DeleteRisk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The risks of every `rm` target in `line`, each at most once, in [`DeleteRisk::ALL`] order.
/// `cwd` resolves relative targets; without one (or after a `cd` that cannot be followed),
/// relative targets are not classified. `home` is the user's home directory.
pub fn risks(line: &CommandLine, cwd: Option<&Path>, home: &Path) -> Vec<DeleteRisk> {
    let mut found = Vec::new();
    // The working directory each `cd` left, by the subshells it ran in: a `cd` inside
    // `( … )` ends with the subshell, so a command sees the latest one whose subshells are a
    // prefix of its own (a later `cd` outside a subshell comes after that subshell closed).
    let mut dirs: Vec<(&[u32], Option<PathBuf>)> = vec![(&[], cwd.map(normalize))];
    // Whether the line deletes nothing: it stays true while every command is a literal `cd` or
    // a plain `rm` of spelled-out paths that are missing. Any other command could make one of
    // them first (`mv src x && rm -rf x`), so it ends the question.
    let mut nothing = line.unreadable.is_none() && line.unread_code.is_none() && !line.has_error;
    let mut rms = 0usize;
    for command in line.commands() {
        let here = dirs
            .iter()
            .rev()
            .find(|(opened, _)| command.subshells.starts_with(opened))
            .and_then(|(_, dir)| dir.clone());
        if command.nesting == 0
            && let Some(dir) = cd_target(command.unwrapped().as_slice(), home)
        {
            let moved = match (dir, &here) {
                (CdTo::Path(p), _) if p.is_absolute() => Some(normalize(&p)),
                (CdTo::Path(p), Some(base)) => Some(normalize(&base.join(p))),
                _ => None,
            };
            // A `cd` that fails leaves the shell where it was (`cd gone; rm -rf build` deletes
            // ./build), so only a directory that is there keeps the question open.
            nothing &= moved.as_deref().is_some_and(Path::is_dir);
            dirs.push((&command.subshells, moved));
            continue;
        }
        let plain_rm = command.nesting == 0
            && command.runs.is_empty()
            && command.redirects.is_empty()
            && command.env.is_empty()
            && command.words.first().is_some_and(|w| w.key() == "rm");
        if plain_rm {
            rms += 1;
            // The disk is read only while the answer can still be "nothing".
            nothing =
                nothing && targets(&command.words[1..]).all(|w| missing(w, here.as_deref(), home));
        } else {
            nothing = false;
        }
        for words in command.run_words() {
            let Some(program) = words.first() else {
                continue;
            };
            if basename(program.key()) != "rm" {
                continue;
            }
            for target in targets(&words[1..]) {
                for risk in classify_word(target, here.as_deref(), home) {
                    if !found.contains(&risk) {
                        found.push(risk);
                    }
                }
            }
        }
    }
    // Only alone: a missing home or root is still named for what it is.
    if nothing && rms > 0 && found.is_empty() {
        found.push(DeleteRisk::Nothing);
    }
    found.sort();
    found
}

/// True when `word` spells a path (no expansion, glob or `~`) that does not exist, resolved
/// against `cwd`. A symlink counts as there even when it dangles: rm deletes the link.
fn missing(word: &Word, cwd: Option<&Path>, home: &Path) -> bool {
    let Some(text) = word.value.as_deref() else {
        return false;
    };
    if word.expandable || text.is_empty() {
        return false;
    }
    // Not normalized: the kernel walks `a/..` through `a`, so a missing `a` fails it.
    resolve(text, cwd, home).is_some_and(|path| {
        matches!(
            std::fs::symlink_metadata(&path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound
        )
    })
}

/// The path a target spells: `~` and `$HOME` expanded, a relative one joined to `cwd`; `None`
/// when it is relative and there is no `cwd` (or names a user's home we cannot place).
fn resolve(text: &str, cwd: Option<&Path>, home: &Path) -> Option<PathBuf> {
    let path = expand_home(text, home)?;
    match (path.is_absolute(), cwd) {
        (true, _) => Some(path),
        (false, Some(base)) => Some(base.join(path)),
        (false, None) => None,
    }
}

enum CdTo {
    Path(PathBuf),
    Unknown,
}

/// Where a `cd` command goes: `None` when the command is not `cd`.
fn cd_target(argv: &[&str], home: &Path) -> Option<CdTo> {
    let (&first, rest) = argv.split_first()?;
    if first != "cd" {
        return None;
    }
    let operands: Vec<&str> = rest
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect();
    Some(match operands.as_slice() {
        [] => CdTo::Path(home.to_path_buf()),
        [dir] if !dir.contains('$') && !dir.contains('`') => match expand_home(dir, home) {
            Some(p) => CdTo::Path(p),
            None => CdTo::Unknown,
        },
        _ => CdTo::Unknown,
    })
}

/// The operand words of an `rm` (options before `--` dropped).
fn targets(args: &[Word]) -> impl Iterator<Item = &Word> {
    let mut options_done = false;
    args.iter().filter(move |w| {
        let key = w.key();
        if options_done {
            return true;
        }
        if key == "--" {
            options_done = true;
            return false;
        }
        !(key.starts_with('-') && key.len() > 1)
    })
}

/// `~`, `~/x`, `$HOME`, `${HOME}` spelled out; `~user` as a sibling of the user's home.
fn expand_home(text: &str, home: &Path) -> Option<PathBuf> {
    for prefix in ["$HOME", "${HOME}"] {
        if let Some(rest) = text.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return Some(home.join(rest.trim_start_matches('/')));
        }
    }
    let Some(rest) = text.strip_prefix('~') else {
        return Some(PathBuf::from(text));
    };
    let (user, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let base = if user.is_empty() {
        home.to_path_buf()
    } else {
        home.parent()?.join(user)
    };
    Some(base.join(tail))
}

fn classify_word(word: &Word, cwd: Option<&Path>, home: &Path) -> Vec<DeleteRisk> {
    // An unresolved expansion (`rm $FOO`) is read as the literal path it spells: what it names
    // at run time is unknown, and the literal reading keeps a scratch or repository cwd allowed
    // while anything else is blocked.
    let text = word.value.as_deref().unwrap_or(&word.text);
    // `C:\Users\…` and `C:/Users/…` are relative names to a Unix path parser; the only thing
    // read in them is the Windows per-user temp dir, which is scratch like /tmp.
    if is_windows_drive_path(text) {
        let unixy = format!("/{}", text.replace('\\', "/").replacen(':', "", 1));
        if is_scratch(&normalize(Path::new(&unixy))) {
            return Vec::new();
        }
    }
    let Some(path) = resolve(text, cwd, home) else {
        return Vec::new();
    };
    let path = normalize(&path);
    if is_scratch(&path) {
        return Vec::new();
    }
    if !(word.expandable && text.contains(['*', '?', '['])) {
        return on_disk(&path, home).into_iter().collect();
    }
    glob_risks(&path, home)
}

/// The risks of a glob target (outside scratch space): too broad, or those of its matches.
fn glob_risks(pattern: &Path, home: &Path) -> Vec<DeleteRisk> {
    match expand_glob(pattern) {
        Expansion::TooBroad => vec![DeleteRisk::BroadGlob],
        Expansion::Matches(matches) if matches.len() > GLOB_LIMIT => vec![DeleteRisk::BroadGlob],
        Expansion::Matches(matches) => {
            let mut out: Vec<DeleteRisk> = matches
                .iter()
                .filter(|m| !is_scratch(m))
                .filter_map(|m| on_disk(m, home))
                .collect();
            out.dedup();
            out
        }
    }
}

/// The one risk of deleting `path` (absolute, normalized, outside scratch space), if any.
fn on_disk(path: &Path, home: &Path) -> Option<DeleteRisk> {
    if is_repo_root(path) {
        return Some(DeleteRisk::RepoRoot);
    }
    if path.ancestors().skip(1).any(is_repo_root) {
        return None;
    }
    if path == Path::new("/") {
        return Some(DeleteRisk::Root);
    }
    let homes = [Path::new("/home"), Path::new("/Users")];
    if path == home
        || path == Path::new("/root")
        || homes.contains(&path)
        || path.parent().is_some_and(|p| homes.contains(&p))
    {
        return Some(DeleteRisk::Home);
    }
    let is_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    if is_dir && contains_repo(path) {
        return Some(DeleteRisk::ContainsRepo);
    }
    Some(DeleteRisk::OutsideRepo)
}

/// Scratch and temporary space, where deletions are routine: under `/tmp`, `/private/tmp`,
/// `/var/tmp` (and macOS's `/private/var/tmp`), the Windows per-user temp dir, macOS's per-user `/var/folders/*/*/T`, the process's temp dir, or a directory
/// named `scratch` or `scratchpads`. The directories themselves are not exempt.
pub fn is_scratch(path: &Path) -> bool {
    let temp = std::env::temp_dir();
    let mut roots: Vec<&Path> = vec![
        Path::new("/tmp"),
        Path::new("/private/tmp"),
        Path::new("/var/tmp"),
        Path::new("/private/var/tmp"),
    ];
    if temp != Path::new("/") {
        roots.push(&temp);
    }
    if roots.iter().any(|r| path.starts_with(r) && path != *r) {
        return true;
    }
    let parts: Vec<&std::ffi::OsStr> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s),
            _ => None,
        })
        .collect();
    if is_windows_temp(&parts) {
        return true;
    }
    // /var/folders/<xx>/<id>/T/<something>
    if parts.len() > 5
        && parts[0] == "var"
        && parts[1] == "folders"
        && parts[4] == "T"
        && path.starts_with("/var")
    {
        return true;
    }
    let last = parts.len().saturating_sub(1);
    parts[..last]
        .iter()
        .any(|p| *p == "scratch" || *p == "scratchpads")
}

/// `C:\…` or `C:/…`: a Windows path with a drive letter, as Git Bash and MSYS pass them on.
fn is_windows_drive_path(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() > 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/')
}

/// Below the Windows per-user temp dir, `<drive>/Users/<user>/AppData/Local/Temp/<something>`,
/// as MSYS and Git Bash (`/c/…`), Cygwin (`/cygdrive/c/…`) and WSL (`/mnt/c/…`) mount the
/// drive; Windows compares names without case. The temp dir itself is not exempt, and
/// `C:\Users\<user>` is a home, not scratch.
fn is_windows_temp(parts: &[&std::ffi::OsStr]) -> bool {
    let lower: Vec<String> = parts
        .iter()
        .map(|p| p.to_string_lossy().to_ascii_lowercase())
        .collect();
    let drive = match lower.first().map(String::as_str) {
        Some("mnt" | "cygdrive") => 2,
        Some(_) => 1,
        None => return false,
    };
    let Some(letter) = lower.get(drive - 1) else {
        return false;
    };
    if letter.len() != 1 || !letter.bytes().all(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    let tail = &lower[drive..];
    tail.len() > 5
        && tail[0] == "users"
        && tail[2] == "appdata"
        && tail[3] == "local"
        && tail[4] == "temp"
}

fn is_repo_root(dir: &Path) -> bool {
    [".git", ".jj"]
        .iter()
        .any(|m| std::fs::symlink_metadata(dir.join(m)).is_ok())
}

/// A `.git` or `.jj` anywhere below `dir` (symlinks not followed); a directory too large to
/// search within the budget counts as containing one.
fn contains_repo(dir: &Path) -> bool {
    let mut budget = SCAN_BUDGET;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            if budget == 0 {
                return true;
            }
            budget -= 1;
            let name = entry.file_name();
            if name == ".git" || name == ".jj" {
                return true;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    false
}

enum Expansion {
    Matches(Vec<PathBuf>),
    TooBroad,
}

/// Expands a glob the way bash does by default (hidden names only for a pattern that starts
/// with `.`; `**` read as any depth of directories, as with `globstar`), stopping after
/// [`GLOB_LIMIT`] + 1 matches or [`SCAN_BUDGET`] entries.
fn expand_glob(pattern: &Path) -> Expansion {
    let parts: Vec<String> = pattern
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let mut walk = GlobWalk {
        budget: SCAN_BUDGET,
        matches: Vec::new(),
    };
    match walk.expand(PathBuf::from("/"), &parts) {
        Err(Stop::Budget) => Expansion::TooBroad,
        Ok(()) | Err(Stop::Enough) => Expansion::Matches(walk.matches),
    }
}

struct GlobWalk {
    budget: usize,
    matches: Vec<PathBuf>,
}

/// Why a walk ended early.
enum Stop {
    /// More matches than [`GLOB_LIMIT`]: enough to decide.
    Enough,
    /// [`SCAN_BUDGET`] entries read.
    Budget,
}

impl GlobWalk {
    fn expand(&mut self, base: PathBuf, parts: &[String]) -> Result<(), Stop> {
        let Some((part, rest)) = parts.split_first() else {
            if std::fs::symlink_metadata(&base).is_ok() {
                self.matches.push(base);
                if self.matches.len() > GLOB_LIMIT {
                    return Err(Stop::Enough);
                }
            }
            return Ok(());
        };
        if !part.contains(['*', '?', '[']) {
            return self.expand(base.join(part), rest);
        }
        let entries = self.list(&base)?;
        if part == "**" {
            self.expand(base.clone(), rest)?;
            for (name, path, is_dir) in entries {
                if is_dir && !name.starts_with('.') {
                    self.expand(path, parts)?;
                }
            }
            return Ok(());
        }
        let glob = crate::glob::Glob::new(part);
        for (name, path, _) in entries {
            if name.starts_with('.') && !part.starts_with('.') {
                continue;
            }
            if glob.is_match(&name) {
                self.expand(path, rest)?;
            }
        }
        Ok(())
    }

    fn list(&mut self, dir: &Path) -> Result<Vec<(String, PathBuf, bool)>, Stop> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            if self.budget == 0 {
                return Err(Stop::Budget);
            }
            self.budget -= 1;
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            out.push((
                entry.file_name().to_string_lossy().into_owned(),
                entry.path(),
                is_dir,
            ));
        }
        out.sort();
        Ok(out)
    }
}

/// `.` and `..` resolved lexically, so `/tmp/../etc` is `/etc` (a path that merely starts
/// with a scratch directory cannot pass for one).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The risks alone: whether the paths of these lines exist on this machine is beside the
    /// point of the tests that use it (`Nothing` has its own test).
    fn risks_of(line: &str, cwd: &Path, home: &Path) -> Vec<DeleteRisk> {
        let mut found = risks(&CommandLine::parse(line), Some(cwd), home);
        found.retain(|r| *r != DeleteRisk::Nothing);
        found
    }

    fn repo(dir: &Path) {
        std::fs::create_dir_all(dir.join(".git")).unwrap();
    }

    #[test]
    fn root_and_homes() {
        let home = Path::new("/home/alice");
        let cwd = Path::new("/");
        assert_eq!(risks_of("rm -rf /", cwd, home), vec![DeleteRisk::Root]);
        assert_eq!(risks_of("sudo rm -rf ~", cwd, home), vec![DeleteRisk::Home]);
        assert_eq!(risks_of("rm -rf $HOME/", cwd, home), vec![DeleteRisk::Home]);
        assert_eq!(
            risks_of("rm -rf /Users/bob", cwd, home),
            vec![DeleteRisk::Home]
        );
        assert_eq!(risks_of("rm -r ~bob", cwd, home), vec![DeleteRisk::Home]);
        assert_eq!(
            risks_of("rm -rf /tmp/../", cwd, home),
            vec![DeleteRisk::Root]
        );
        assert_eq!(
            risks_of("sh -c 'rm -rf /'", cwd, home),
            vec![DeleteRisk::Root]
        );
        assert_eq!(risks_of("echo rm -rf /", cwd, home), vec![]);
        assert_eq!(risks_of("git rm -r /x", cwd, home), vec![]);
    }

    #[test]
    fn windows_user_temp_is_scratch() {
        let home = Path::new("/home/alice");
        let cwd = Path::new("/");
        for line in [
            "rm -rf /c/Users/u/AppData/Local/Temp/some/subdir/file",
            "rm -rf /C/users/U/appdata/local/temp/x",
            "rm -rf /mnt/c/Users/u/AppData/Local/Temp/x /cygdrive/d/Users/u/AppData/Local/Temp/y",
            r"rm -rf 'C:\Users\u\AppData\Local\Temp\build'",
            "rm -r -f C:/Users/u/AppData/Local/Temp/scratch",
        ] {
            assert_eq!(risks_of(line, cwd, home), vec![], "{line}");
        }
        for line in [
            "rm -rf /c/Users/u/AppData/Local/Temp",
            "rm -rf /c/Users/u/AppData/Local/Tempx/y",
            "rm -rf /c/Users/u/AppData/Local/Temp/../x",
            "rm -rf /c/Users/u",
            // Unquoted, bash drops the backslashes: C:Usersu… is a name in the working dir.
            r"rm -rf C:\Users\u\AppData\Local\Temp\build",
        ] {
            assert_ne!(risks_of(line, cwd, home), vec![], "{line}");
        }
    }

    #[test]
    fn scratch_is_exempt_but_not_its_root() {
        let home = Path::new("/home/alice");
        let cwd = Path::new("/");
        assert_eq!(risks_of("rm -rf /tmp/build /var/tmp/x", cwd, home), vec![]);
        assert_eq!(risks_of("rm -rf /srv/scratch/x", cwd, home), vec![]);
        assert_eq!(
            risks_of("rm -rf /tmp/../srv/data", cwd, home),
            vec![DeleteRisk::OutsideRepo]
        );
        assert!(!is_scratch(Path::new("/tmp")));
        assert!(is_scratch(Path::new("/var/folders/ab/xyz/T/f")));
    }

    #[test]
    fn repositories_on_disk() {
        let tmp = tempfile::tempdir().unwrap();
        // The tempdir is itself scratch space, which `risks` exempts: check the disk directly.
        let root = tmp.path().join("work");
        let proj = root.join("proj");
        repo(&proj);
        std::fs::create_dir_all(proj.join("src")).unwrap();
        std::fs::create_dir_all(root.join("plain")).unwrap();
        let home = Path::new("/home/alice");
        assert_eq!(on_disk(&proj, home), Some(DeleteRisk::RepoRoot));
        assert_eq!(on_disk(&proj.join("src"), home), None);
        assert_eq!(on_disk(&proj.join("missing.txt"), home), None);
        assert_eq!(on_disk(&root, home), Some(DeleteRisk::ContainsRepo));
        assert_eq!(
            on_disk(&root.join("plain"), home),
            Some(DeleteRisk::OutsideRepo)
        );
    }

    #[test]
    fn cd_moves_the_working_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let proj = tmp.path().join("proj");
        repo(&proj);
        let home = Path::new("/home/alice");
        let cl = CommandLine::parse("cd / && rm -rf srv");
        assert_eq!(risks(&cl, Some(&proj), home), vec![DeleteRisk::OutsideRepo]);
        let cl = CommandLine::parse("cd $DIR && rm -rf srv");
        assert_eq!(risks(&cl, Some(Path::new("/")), home), vec![]);
        let cl = CommandLine::parse("cd && rm -rf .");
        assert_eq!(
            risks(&cl, Some(Path::new("/")), home),
            vec![DeleteRisk::Home]
        );
        // A `cd` inside `( … )` ends with the subshell; inside it, it holds.
        let cl = CommandLine::parse("( cd / ); rm -rf srv");
        assert_eq!(risks(&cl, Some(&proj), home), vec![DeleteRisk::Nothing]);
        let cl = CommandLine::parse("(cd / && rm -rf srv)");
        assert_eq!(risks(&cl, Some(&proj), home), vec![DeleteRisk::OutsideRepo]);
    }

    #[test]
    fn a_line_of_missing_paths_deletes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let proj = tmp.path().join("proj");
        repo(&proj);
        std::fs::create_dir_all(proj.join("build")).unwrap();
        let home = Path::new("/home/alice");
        let of = |line: &str| risks(&CommandLine::parse(line), Some(&proj), home);
        let nothing = vec![DeleteRisk::Nothing];
        assert_eq!(of("rm -rf directory"), nothing);
        // Bash drops the backslashes of an unquoted Windows path: a missing relative name.
        assert_eq!(of(r"rm -rf C:\Users\u\AppData\Local\Temp\x"), nothing);
        assert_eq!(of("cd build && rm -r -f gone other"), nothing);
        // A cd that fails leaves the shell in the project, where build is.
        assert_eq!(of("cd sub; rm -rf build"), vec![]);
        assert_eq!(of("rm -rf"), nothing);
        // Something there, or a command that could make it, or a path we cannot spell.
        assert_eq!(of("rm -rf build"), vec![]);
        assert_eq!(of("rm -rf gone build"), vec![]);
        assert_eq!(of("mv build gone && rm -rf gone"), vec![]);
        assert_eq!(of("mkdir gone; rm -rf gone"), vec![]);
        assert_eq!(of("rm -rf $OUT"), vec![]);
        assert_eq!(of("rm -rf gone*"), vec![]);
        assert_eq!(of("sudo rm -rf gone"), vec![]);
        assert_eq!(of("rm -rf \"$(mktemp)\""), vec![]);
        assert_eq!(of("cd $D && rm -rf gone"), vec![]);
        // A dangling symlink is there: rm deletes the link.
        std::os::unix::fs::symlink(proj.join("nowhere"), proj.join("link")).unwrap();
        assert_eq!(of("rm -rf link"), vec![]);
        // A missing path with a risk of its own keeps it.
        assert_eq!(of("rm -rf /home/nobody-here"), vec![DeleteRisk::Home]);
    }

    #[test]
    fn globs_are_expanded_within_limits() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("many");
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..12 {
            std::fs::write(dir.join(format!("f{i}.log")), "").unwrap();
        }
        std::fs::write(dir.join("keep.txt"), "").unwrap();
        let Expansion::Matches(few) = expand_glob(&dir.join("k*")) else {
            panic!("a small glob expands");
        };
        assert_eq!(few, vec![dir.join("keep.txt")]);
        let Expansion::Matches(many) = expand_glob(&dir.join("*.log")) else {
            panic!("the walk stops at the limit, it does not run out of budget");
        };
        assert_eq!(many.len(), GLOB_LIMIT + 1);
        let Expansion::Matches(deep) = expand_glob(&tmp.path().join("**/keep.txt")) else {
            panic!("** expands");
        };
        assert_eq!(deep, vec![dir.join("keep.txt")]);
        let home = Path::new("/home/alice");
        assert_eq!(
            glob_risks(&dir.join("*.log"), home),
            vec![DeleteRisk::BroadGlob]
        );
        // One match, and it lies in scratch space (the tempdir), so it carries no risk.
        assert_eq!(glob_risks(&dir.join("k*"), home), vec![]);
        // Under scratch space the same glob is routine.
        let line = format!("rm {}/*.log", dir.display());
        assert_eq!(risks_of(&line, Path::new("/"), home), vec![]);
    }

    #[test]
    fn names_round_trip() {
        for r in DeleteRisk::ALL {
            assert_eq!(DeleteRisk::parse(r.name()), Some(r));
        }
        assert_eq!(DeleteRisk::parse("everything"), None);
    }
}

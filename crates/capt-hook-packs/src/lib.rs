//! Packs: directories of hook files with a `pack.toml`, loaded after a project's own hooks so the
//! project's verdicts come first in the fold (a deny from anywhere still wins).
//!
//! * Builtin packs are compiled in ([`builtin`]). `general`, `fixes`, `performance` and `safety` are always
//!   on; `go`, `python` and `rust` turn on when their `manifests` are found in the repository.
//! * Plugin packs come from enabled Claude Code plugins ([`plugins`]), at `<plugin root>/capt-hook/`
//!   (`pack.toml` plus `hooks/*.toml`). A plugin without that directory is not a pack.
//! * A project turns packs or single pack hooks off in `.claude/hooks/config.toml`.
//!
//! A pack that cannot load (no `pack.toml` or `hooks/`, a malformed manifest, a hook file that
//! fails) is a load error like a project file's: its hooks do not run, guarded calls are left to
//! the user, and the session is told once. Problems that only mean a plugin is not used (an
//! unreadable settings file, a stale install) are notices, told once per session.

pub mod builtin;
pub mod detect;
pub mod plugins;
pub mod policy;

use std::path::{Path, PathBuf};

use serde::Deserialize;

use capt_hook_engine::registry::Registry;
use capt_hook_toml::loader::{CONFIG_FILE, LoadError, hook_files, load_source};

/// A pack's `pack.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// One line saying what the pack is for.
    #[serde(default)]
    pub description: String,
    /// File names (`go.mod`) of which one must exist somewhere in the repository for the pack to
    /// be on; empty means always on.
    #[serde(default)]
    pub manifests: Vec<String>,
    /// File names of which one must exist in the repository's git directory (the common one,
    /// for a worktree) for the pack to be on: where tools keep repository-wide settings
    /// (`.graphite_repo_config`). Empty means no such condition.
    #[serde(default)]
    pub git_markers: Vec<String>,
    /// The original's NLP resources: accepted so its packs load; nothing here provisions them.
    #[serde(default)]
    pub resources: Vec<String>,
    /// No project can turn the pack or its hooks off (`config.toml` naming them is told it
    /// has no effect). Honoured for builtin packs only: a plugin is the project's choice, so
    /// its claim would mean nothing.
    #[serde(default)]
    pub mandatory: bool,
}

/// `.claude/hooks/config.toml`: what a project turns off.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Packs turned off.
    #[serde(default)]
    pub packs: Switches,
    /// Single pack hooks turned off.
    #[serde(default)]
    pub hooks: Switches,
    /// How LLM hooks' judges are chosen.
    #[serde(default)]
    pub llm: LlmConfig,
}

/// `[llm]` of `config.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// `[llm.specialties.<name>]`: what a hook's `specialty` asks for.
    #[serde(default)]
    pub specialties: std::collections::BTreeMap<String, SpecialtyConfig>,
}

/// One configured specialty.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecialtyConfig {
    /// Its judge.
    pub backend: Option<capt_hook_toml::spec::BackendSpec>,
    /// Model names for small, medium and large (`claude` and `codex`); spanned so an error
    /// in the list is reported at its line.
    pub models: Option<toml::Spanned<Vec<String>>>,
}

/// A list of things turned off.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Switches {
    /// Pack ids (`builtin:go`, `plugin:x@m`) or bare names (`go`, `x@m`); hook names as
    /// `capt-hook list` prints them.
    #[serde(default)]
    pub disable: Vec<String>,
}

/// Reads the project's `config.toml`; a missing file turns nothing off.
pub fn read_config(hooks_dir: &Path) -> Result<Config, LoadError> {
    let file = hooks_dir.join(CONFIG_FILE);
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
        Err(e) => return Err(whole(&file, format!("cannot read: {e}"))),
    };
    toml::from_str(&text).map_err(|e| {
        let (line, column) = e.span().map(|s| line_col(&text, s.start)).unwrap_or((0, 0));
        LoadError {
            file,
            line,
            column,
            field: None,
            span: e.span(),
            message: e.message().to_owned(),
        }
    })
}

/// The 1-based line and column of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |i| before.len() - i - 1)
        + 1;
    (line, column)
}

/// A load error for a whole file (no line, column or field).
pub(crate) fn whole(file: &Path, message: String) -> LoadError {
    LoadError {
        file: file.to_path_buf(),
        line: 0,
        column: 0,
        field: None,
        span: None,
        message,
    }
}

/// Whether a pack is serving and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Its hooks are registered.
    Active,
    /// Turned off by the project's `config.toml`.
    Off,
    /// Not for this repository (no manifest found).
    Inactive,
    /// It did not load: see the load errors.
    Broken,
    /// An enabled plugin that cannot be used (not installed here, install gone).
    Skipped,
}

impl State {
    /// The state as one word.
    pub fn word(&self) -> &'static str {
        match self {
            State::Active => "active",
            State::Off => "off",
            State::Inactive => "inactive",
            State::Broken => "broken",
            State::Skipped => "skipped",
        }
    }
}

/// One pack, as `capt-hook list` and `capt-hook pack list` show it.
#[derive(Debug, Clone)]
pub struct PackInfo {
    /// `builtin:<name>` or `plugin:<id>`.
    pub id: String,
    /// `builtin` or `plugin`.
    pub kind: &'static str,
    /// Its hooks' names start with this (`general/`), so a hook can be traced to its pack.
    pub prefix: String,
    /// From its manifest.
    pub description: String,
    /// Serving or not.
    pub state: State,
    /// Why it is in that state.
    pub why: String,
    /// Hooks it registered.
    pub hooks: usize,
}

/// What loading the packs produced besides hooks.
#[derive(Debug, Clone)]
pub struct Packs {
    /// Every pack considered, in load order.
    pub infos: Vec<PackInfo>,
    /// Fatal problems: the hooks involved are not running.
    pub errors: Vec<LoadError>,
    /// Problems that only mean something is not used.
    pub notices: Vec<String>,
    /// Pack hooks turned off by name.
    pub hooks_off: Vec<String>,
    /// Files whose change should reload the project.
    pub watched: Vec<PathBuf>,
    /// `config.toml` as read for the packs (its `[llm]` judges the LLM hooks), or why it
    /// could not be read: read once per load, for both.
    pub config: Result<Config, LoadError>,
}

impl Default for Packs {
    fn default() -> Packs {
        Packs {
            infos: Vec::new(),
            errors: Vec::new(),
            notices: Vec::new(),
            hooks_off: Vec::new(),
            watched: Vec::new(),
            config: Ok(Config::default()),
        }
    }
}

impl Packs {
    /// The pack a hook of this name came from, if any.
    pub fn origin(&self, hook: &str) -> Option<&PackInfo> {
        self.infos
            .iter()
            .find(|p| p.state == State::Active && hook.starts_with(&p.prefix))
    }
}

/// Loads every pack for the project at `root` (hooks directory `hooks_dir`) into `registry`,
/// after whatever it holds. `claude_dir` is Claude Code's configuration directory (`~/.claude`,
/// or `$CLAUDE_CONFIG_DIR`), where the user settings and the plugin roster are.
pub fn load(root: &Path, hooks_dir: &Path, claude_dir: &Path, registry: &mut Registry) -> Packs {
    let mut out = Packs::default();
    out.watched.push(hooks_dir.join(CONFIG_FILE));
    let config = match read_config(hooks_dir) {
        Ok(c) => c,
        Err(e) => {
            out.notices.push(format!(
                "{e}; no pack or hook is turned off until it is fixed"
            ));
            out.config = Err(e.clone());
            Config::default()
        }
    };
    let mut unused: Vec<&String> = config
        .packs
        .disable
        .iter()
        .chain(&config.hooks.disable)
        .collect();
    let off = |id: &str, unused: &mut Vec<&String>| {
        let bare = id.split_once(':').map_or(id, |(_, n)| n);
        let hit = config.packs.disable.iter().any(|d| d == id || d == bare);
        unused.retain(|d| *d != id && *d != bare);
        hit
    };
    let config_file = hooks_dir.join(CONFIG_FILE);

    let wanted: Vec<String> = builtin::BUILTINS
        .iter()
        .filter_map(|b| toml::from_str::<Manifest>(b.manifest).ok())
        .flat_map(|m| m.manifests)
        .collect();
    let wanted: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let found = detect::find_manifests(root, &wanted);

    for b in builtin::BUILTINS {
        let id = format!("builtin:{}", b.name);
        let source = PathBuf::from(format!("builtin:{}", b.name));
        let mut info = PackInfo {
            id: id.clone(),
            kind: "builtin",
            prefix: format!("{}/", b.name),
            description: String::new(),
            state: State::Active,
            why: "always on".into(),
            hooks: 0,
        };
        let manifest = match toml::from_str::<Manifest>(b.manifest) {
            Ok(m) => m,
            Err(e) => {
                out.errors
                    .push(whole(&source.join("pack.toml"), e.to_string()));
                info.state = State::Broken;
                info.why = "its pack.toml does not parse".into();
                out.infos.push(info);
                continue;
            }
        };
        info.description = manifest.description.clone();
        if !manifest.manifests.is_empty() {
            match manifest.manifests.iter().find_map(|m| found.get(m)) {
                Some(path) => info.why = format!("{} found", path.display()),
                None => {
                    info.state = State::Inactive;
                    info.why = format!("no {} in the repository", manifest.manifests.join(" or "));
                }
            }
        }
        if info.state == State::Active && !manifest.git_markers.is_empty() {
            let names: Vec<&str> = manifest.git_markers.iter().map(String::as_str).collect();
            match detect::find_git_marker(root, &names) {
                Some(path) => info.why = format!("{} found", path.display()),
                None => {
                    info.state = State::Inactive;
                    info.why = format!(
                        "no {} in the repository's git directory",
                        manifest.git_markers.join(" or ")
                    );
                }
            }
        }
        if off(&id, &mut unused) {
            if manifest.mandatory {
                out.notices.push(format!(
                    "{}: `{id}` is mandatory and cannot be turned off; it stays on",
                    config_file.display()
                ));
            } else {
                info.state = State::Off;
                info.why = format!("disabled in {}", config_file.display());
            }
        }
        if manifest.mandatory && info.state == State::Active {
            info.why = "mandatory: always on, whatever a project's config.toml says".into();
        }
        if info.state == State::Active {
            let files = b.runtime.iter().map(|(name, text)| {
                (
                    name.trim_end_matches(".toml").to_owned(),
                    (*text).to_owned(),
                    source.join("hooks").join(name),
                )
            });
            // Builtin patterns compile when first searched, and the files are the copies
            // without inline tests (build.rs): the tests load them whole, proving both.
            let mandatory = manifest.mandatory.then_some(config_file.as_path());
            capt_hook_core::pattern::deferred(|| {
                register(
                    &mut info,
                    files,
                    &config,
                    mandatory,
                    &mut unused,
                    &mut out,
                    registry,
                )
            });
        }
        out.infos.push(info);
    }

    let discovery = plugins::discover(root, claude_dir);
    out.notices.extend(discovery.notices);
    out.watched.extend(discovery.watched);
    for (id, why) in discovery.skipped {
        out.infos.push(PackInfo {
            prefix: format!("{id}/"),
            id: format!("plugin:{id}"),
            kind: "plugin",
            description: String::new(),
            state: State::Skipped,
            why,
            hooks: 0,
        });
    }
    for plugin in discovery.plugins {
        let dir = plugin.root.join("capt-hook");
        if !dir.is_dir() {
            continue;
        }
        let id = format!("plugin:{}", plugin.id);
        let mut info = PackInfo {
            id: id.clone(),
            kind: "plugin",
            prefix: format!("{}/", plugin.id),
            description: String::new(),
            state: State::Active,
            why: format!("enabled in {}", plugin.enabled_by.display()),
            hooks: 0,
        };
        if off(&id, &mut unused) {
            info.state = State::Off;
            info.why = format!("disabled in {}", config_file.display());
            out.infos.push(info);
            continue;
        }
        match read_pack_dir(&dir, &mut out.watched) {
            Err(e) => {
                info.state = State::Broken;
                info.why = e.message.clone();
                out.errors.push(e);
            }
            Ok((manifest, files)) => {
                if manifest.mandatory {
                    out.notices.push(format!(
                        "{}: `mandatory` is honoured for builtin packs only; `{id}` can be \
                         turned off like any plugin pack",
                        dir.join("pack.toml").display()
                    ));
                }
                info.description = manifest.description;
                register(
                    &mut info,
                    files.into_iter(),
                    &config,
                    None,
                    &mut unused,
                    &mut out,
                    registry,
                );
            }
        }
        out.infos.push(info);
    }
    for name in unused {
        out.notices.push(format!(
            "{}: `{name}` names no pack or pack hook of this project; nothing was turned off by it",
            config_file.display()
        ));
    }
    if out.config.is_ok() {
        out.config = Ok(config);
    }
    out
}

/// Registers a pack's hook files (stem without the pack prefix, text, path) under
/// `<prefix><stem>`, leaving out hooks the config turns off, unless the pack is mandatory
/// (`mandatory` is then the config file, named in the notice that the switch did nothing).
fn register(
    info: &mut PackInfo,
    files: impl Iterator<Item = (String, String, PathBuf)>,
    config: &Config,
    mandatory: Option<&Path>,
    unused: &mut Vec<&String>,
    out: &mut Packs,
    registry: &mut Registry,
) {
    let mut broken = false;
    for (stem, text, path) in files {
        let mut scratch = Registry::new();
        let stem = format!("{}{stem}", info.prefix);
        let errors = load_source(&text, &stem, &path, &mut scratch);
        if !errors.is_empty() {
            broken = true;
            out.errors.extend(errors);
            continue;
        }
        for hook in scratch.hooks() {
            if config.hooks.disable.iter().any(|d| *d == hook.name) {
                unused.retain(|d| **d != hook.name);
                if let Some(config_file) = mandatory {
                    out.notices.push(format!(
                        "{}: `{}` belongs to the mandatory pack {} and cannot be turned off; it \
                         stays on",
                        config_file.display(),
                        hook.name,
                        info.id
                    ));
                } else {
                    out.hooks_off.push(hook.name.clone());
                    continue;
                }
            }
            registry.push((**hook).clone());
            info.hooks += 1;
        }
    }
    if broken {
        info.state = State::Broken;
        info.why = format!("{} (some hook files did not load)", info.why);
    }
}

/// A plugin pack's manifest and hook files; an error when the layout or the manifest is wrong.
#[allow(clippy::type_complexity)]
fn read_pack_dir(
    dir: &Path,
    watched: &mut Vec<PathBuf>,
) -> Result<(Manifest, Vec<(String, String, PathBuf)>), LoadError> {
    let manifest_path = dir.join("pack.toml");
    let hooks = dir.join("hooks");
    watched.push(manifest_path.clone());
    watched.push(hooks.clone());
    if !manifest_path.is_file() || !hooks.is_dir() {
        return Err(whole(
            dir,
            "a pack needs both pack.toml and hooks/ (this plugin's capt-hook/ directory lacks one)"
                .into(),
        ));
    }
    let text = std::fs::read_to_string(&manifest_path)
        .map_err(|e| whole(&manifest_path, format!("cannot read: {e}")))?;
    let manifest: Manifest = toml::from_str(&text).map_err(|e| {
        let (line, column) = e.span().map(|s| line_col(&text, s.start)).unwrap_or((0, 0));
        LoadError {
            file: manifest_path.clone(),
            line,
            column,
            field: None,
            span: e.span(),
            message: e.message().to_owned(),
        }
    })?;
    let mut files = Vec::new();
    for path in hook_files(&hooks).map_err(|e| whole(&hooks, format!("cannot list: {e}")))? {
        watched.push(path.clone());
        let text = std::fs::read_to_string(&path)
            .map_err(|e| whole(&path, format!("cannot read: {e}")))?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        files.push((stem, text, path));
    }
    Ok((manifest, files))
}

/// Loads one plugin's pack alone (for `capt-hook pack test`): its hooks, or what is wrong.
pub fn load_plugin_pack(plugin_root: &Path, registry: &mut Registry) -> Vec<LoadError> {
    let id = plugin_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plugin".into());
    let mut watched = Vec::new();
    match read_pack_dir(&plugin_root.join("capt-hook"), &mut watched) {
        Err(e) => vec![e],
        Ok((_, files)) => files
            .into_iter()
            .flat_map(|(stem, text, path)| {
                load_source(&text, &format!("{id}/{stem}"), &path, registry)
            })
            .collect(),
    }
}

/// Loads one builtin pack alone, whatever the repository holds (for `capt-hook pack test`).
pub fn load_builtin(b: &builtin::Builtin, registry: &mut Registry) -> Vec<LoadError> {
    let mut errors = Vec::new();
    if let Err(e) = toml::from_str::<Manifest>(b.manifest) {
        errors.push(whole(
            Path::new(&format!("builtin:{}/pack.toml", b.name)),
            e.to_string(),
        ));
    }
    errors.extend(load_builtin_files(b, b.hooks, registry));
    errors
}

/// Loads `files` (the pack's hook files, or their runtime copies) as builtin pack `b`'s: each
/// named `<pack>/<stem>` and located at `builtin:<pack>/hooks/<file>`.
fn load_builtin_files(
    b: &builtin::Builtin,
    files: &[builtin::File],
    registry: &mut Registry,
) -> Vec<LoadError> {
    let mut errors = Vec::new();
    for (name, text) in files {
        let stem = format!("{}/{}", b.name, name.trim_end_matches(".toml"));
        let path = PathBuf::from(format!("builtin:{}/hooks/{name}", b.name));
        errors.extend(load_source(text, &stem, &path, registry));
    }
    errors
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// What a worker loads of each builtin pack (the copy without inline tests that build.rs
    /// writes) is what `load_builtin` loads of the real files, tests aside: the same hooks, with
    /// the same events, conditions and source lines.
    #[test]
    fn the_runtime_copies_are_the_packs_without_their_tests() {
        let shape = |h: &Arc<capt_hook_engine::Hook>| {
            format!(
                "{} {} {:?} {:?} {:?} {:?} {:?}",
                h.name, h.kind, h.events, h.only_if, h.skip_if, h.source, h.max_fires
            )
        };
        for b in builtin::BUILTINS {
            let mut whole = Registry::new();
            assert!(load_builtin(b, &mut whole).is_empty(), "{}", b.name);
            let mut runtime = Registry::new();
            assert_eq!(b.runtime.len(), b.hooks.len());
            for ((name, text), (real, whole_text)) in b.runtime.iter().zip(b.hooks) {
                assert_eq!(name, real);
                assert_eq!(text.lines().count(), whole_text.lines().count(), "{name}");
                assert!(!text.contains("[[hook.test]]"), "{name}");
            }
            let errors = load_builtin_files(b, b.runtime, &mut runtime);
            assert!(errors.is_empty(), "{}: {errors:?}", b.name);
            let shapes = |r: &Registry| r.hooks().iter().map(shape).collect::<Vec<_>>();
            assert_eq!(shapes(&runtime), shapes(&whole), "{}", b.name);
            assert!(runtime.hooks().iter().all(|h| h.tests.is_empty()));
            assert!(whole.hooks().iter().all(|h| !h.tests.is_empty()));
        }
    }
}

//! `WorkflowState` (one session's workflow record) and `DurableState` (facts that outlive the
//! session, per project or global), as traits over serde + schemars structs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StateError;
use crate::paths::{self, model_key};
use crate::slot::Slot;
use crate::store::{ModelKind, SessionStore, track_as};

/// Anything that can hand out the session store: the engine's event implements it, and so does
/// [`SessionStore`] itself (handy in tests).
pub trait SessionContext {
    /// The current session's store (null without a session id).
    fn session_store(&self) -> &SessionStore;

    /// The subagent the event comes from, `None` for the main agent: a workflow's record is
    /// kept per agent context, as a hook's fire count is.
    fn agent_id(&self) -> Option<&str> {
        None
    }
}

impl SessionContext for SessionStore {
    fn session_store(&self) -> &SessionStore {
        self
    }
}

/// One workflow's record in the session, per agent context, loaded and saved through the event:
///
/// ```
/// # use capt_hook_state::{SessionStore, WorkflowState};
/// #[derive(Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// #[serde(default)]
/// struct ReviewState { edits: Vec<String>, ran_tests: bool }
/// impl WorkflowState for ReviewState { const NAME: &'static str = "review"; }
///
/// # let dir = tempfile::tempdir().unwrap();
/// # let evt = SessionStore::for_session(dir.path(), Some("s"));
/// ReviewState::mutate(&evt, |s| s.edits.push("app.py".into())).unwrap();
/// assert_eq!(ReviewState::load(&evt).edits, ["app.py"]);
/// ```
///
/// `mutate` holds the slot's lock while the closure runs: keep it short and never nest it on the
/// same model (see [`Slot`]).
pub trait WorkflowState: Serialize + DeserializeOwned + JsonSchema + Default + 'static {
    /// The workflow's name (the label the original passed to `@workflow_state`).
    const NAME: &'static str = "";

    /// The file stem; defaults to the snake-cased type name (`ReviewState` → `review_state`).
    fn model_key() -> String {
        model_key::<Self>()
    }

    /// The state key the record lives under: [`WorkflowState::NAME`], else the model key.
    fn state_key() -> String {
        if Self::NAME.is_empty() {
            Self::model_key()
        } else {
            Self::NAME.to_owned()
        }
    }

    /// This model's slot in the context's session store, where the seeds put it:
    /// `<session>/<state key>/<agent id or "main">/<model key>.json`. A record an earlier
    /// release wrote at `<session>/<model key>.json` is read until this one is first written.
    fn slot<C: SessionContext + ?Sized>(ctx: &C) -> Slot<Self> {
        let store = ctx.session_store();
        let key = Self::model_key();
        let path = store
            .hook_dir(&Self::state_key(), ctx.agent_id())
            .map(|d| d.join(format!("{}.json", paths::path_component(&key))));
        let legacy = store.slot_named::<Self>(&key).path().map(Path::to_path_buf);
        Slot::at(path).with_legacy(legacy)
    }

    /// The stored record, or a fresh default.
    fn load<C: SessionContext + ?Sized>(ctx: &C) -> Self {
        Self::slot(ctx).load()
    }

    /// Writes the record (last writer wins; prefer [`WorkflowState::mutate`] for accumulating).
    fn save<C: SessionContext + ?Sized>(&self, ctx: &C) -> Result<(), StateError> {
        Self::slot(ctx).set(self)
    }

    /// Deletes the record.
    fn reset<C: SessionContext + ?Sized>(ctx: &C) -> Result<(), StateError> {
        Self::slot(ctx).delete()
    }

    /// Load, change and save under the exclusive lock.
    fn mutate<C: SessionContext + ?Sized, R>(
        ctx: &C,
        f: impl FnOnce(&mut Self) -> R,
    ) -> Result<R, StateError> {
        Self::slot(ctx).mutate(f)
    }

    /// Registers the model for `tracked_models` / `tracked_paths`.
    fn track() {
        crate::store::track_keyed::<Self>(Self::model_key(), Self::state_key());
    }
}

/// Where a durable model lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Scope {
    /// One file per repository: `hooks/durable/projects/<project key>/`.
    #[default]
    Project,
    /// One file for the whole machine: `hooks/durable/global/`.
    Global,
}

/// The durable directory of one scope, or, for project scope without a repo root, a store that
/// keeps its data in memory for as long as the store (and its clones) live and persists
/// nothing: the event's store lives for the event, so a hook call that writes and then reads
/// sees its write, and the next event starts empty.
#[derive(Clone, Debug)]
pub struct DurableStore {
    dir: Option<PathBuf>,
    scope: Scope,
    memory: Arc<Mutex<HashMap<String, crate::slot::Memory>>>,
}

impl PartialEq for DurableStore {
    fn eq(&self, other: &Self) -> bool {
        self.dir == other.dir && self.scope == other.scope
    }
}

impl Eq for DurableStore {}

impl DurableStore {
    /// `<state_root>/hooks/durable/global`.
    pub fn global(state_root: &Path) -> DurableStore {
        DurableStore {
            dir: Some(paths::durable_dir(state_root).join("global")),
            scope: Scope::Global,
            memory: Arc::default(),
        }
    }

    /// `<state_root>/hooks/durable/projects/<project key>`; without a repo root the store is null
    /// and a warning is logged (check [`DurableStore::is_persistent`]).
    pub fn project(state_root: &Path, repo_root: Option<&Path>) -> DurableStore {
        let dir = match repo_root {
            Some(root) => Some(
                paths::durable_dir(state_root)
                    .join("projects")
                    .join(paths::project_key(root)),
            ),
            None => {
                tracing::warn!("durable project state has no repo_root; not persisting");
                None
            }
        };
        DurableStore {
            dir,
            scope: Scope::Project,
            memory: Arc::default(),
        }
    }

    /// The store of `scope`.
    pub fn for_scope(state_root: &Path, scope: Scope, repo_root: Option<&Path>) -> DurableStore {
        match scope {
            Scope::Global => DurableStore::global(state_root),
            Scope::Project => DurableStore::project(state_root, repo_root),
        }
    }

    /// The directory, or `None` when nothing persists.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// False for a project store without a repo root.
    pub fn is_persistent(&self) -> bool {
        self.dir.is_some()
    }

    /// The scope this store serves.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The slot of `T` in this directory (file stem from the type name).
    pub fn slot<T: Serialize + DeserializeOwned>(&self) -> Slot<T> {
        self.slot_named(&model_key::<T>())
    }

    /// The slot of `T` at `<dir>/<key>.json`.
    pub fn slot_named<T: Serialize + DeserializeOwned>(&self, key: &str) -> Slot<T> {
        if self.dir.is_none() {
            let memory = self
                .memory
                .lock()
                .entry(key.to_owned())
                .or_default()
                .clone();
            return Slot::in_memory(memory);
        }
        crate::store::slot_in(self.dir.as_deref(), key)
    }

    /// The stored `T`, else its default.
    pub fn load<T: Serialize + DeserializeOwned + Default>(&self) -> T {
        self.slot::<T>().load()
    }
}

/// Anything that can hand out durable stores: the engine's event implements it from the state
/// root and the project root; [`DurableRoots`] is the plain implementation.
pub trait DurableContext {
    /// The store of `scope`.
    fn durable_store(&self, scope: Scope) -> DurableStore;
}

/// The two roots a durable store needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurableRoots {
    /// The state root (`CAPTAIN_HOOK_STATE_DIR` or `~/.claude/state`).
    pub state_root: PathBuf,
    /// The resolved project root, when one is known.
    pub repo_root: Option<PathBuf>,
}

impl DurableRoots {
    /// Roots with the state root taken from the environment.
    pub fn from_env(repo_root: Option<PathBuf>) -> DurableRoots {
        DurableRoots {
            state_root: paths::state_root(),
            repo_root,
        }
    }
}

impl DurableContext for DurableRoots {
    fn durable_store(&self, scope: Scope) -> DurableStore {
        DurableStore::for_scope(&self.state_root, scope, self.repo_root.as_deref())
    }
}

/// A fact remembered across sessions, in the project's or the machine's durable directory.
/// Same methods as [`WorkflowState`]; `mutate` matters more here, since two sessions can write
/// the same file at once. Cap growing collections with [`crate::Deque`].
pub trait DurableState: Serialize + DeserializeOwned + JsonSchema + Default + 'static {
    /// Where the file lives; project by default.
    const SCOPE: Scope = Scope::Project;

    /// The file stem; defaults to the snake-cased type name.
    fn model_key() -> String {
        model_key::<Self>()
    }

    /// This model's slot (null for a project model without a repo root).
    fn slot<C: DurableContext + ?Sized>(ctx: &C) -> Slot<Self> {
        ctx.durable_store(Self::SCOPE)
            .slot_named(&Self::model_key())
    }

    /// The stored record, or a fresh default.
    fn load<C: DurableContext + ?Sized>(ctx: &C) -> Self {
        Self::slot(ctx).load()
    }

    /// Writes the record (last writer wins).
    fn save<C: DurableContext + ?Sized>(&self, ctx: &C) -> Result<(), StateError> {
        Self::slot(ctx).set(self)
    }

    /// Deletes the record.
    fn reset<C: DurableContext + ?Sized>(ctx: &C) -> Result<(), StateError> {
        Self::slot(ctx).delete()
    }

    /// Load, change and save under the exclusive lock (never nested on the same model).
    fn mutate<C: DurableContext + ?Sized, R>(
        ctx: &C,
        f: impl FnOnce(&mut Self) -> R,
    ) -> Result<R, StateError> {
        Self::slot(ctx).mutate(f)
    }

    /// Registers the model for `tracked_models`.
    fn track() {
        track_as::<Self>(Self::model_key(), ModelKind::Durable(Self::SCOPE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Deque;

    #[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, JsonSchema)]
    #[serde(default)]
    struct FlaggedPaths {
        paths: Deque<String, 2>,
    }
    impl DurableState for FlaggedPaths {}

    #[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, JsonSchema)]
    #[serde(default)]
    struct JsonCommands {
        names: Vec<String>,
    }
    impl DurableState for JsonCommands {
        const SCOPE: Scope = Scope::Global;
    }

    #[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, JsonSchema)]
    #[serde(default)]
    struct ReviewState {
        edits: Vec<String>,
    }
    impl WorkflowState for ReviewState {
        const NAME: &'static str = "review";
    }

    #[test]
    fn workflow_state_lives_under_its_state_key_and_agent() {
        let dir = tempfile::tempdir().unwrap();
        let s = SessionStore::for_session(dir.path(), Some("s"));
        let mut st = ReviewState::load(&s);
        st.edits.push("a".into());
        st.save(&s).unwrap();
        ReviewState::mutate(&s, |st| st.edits.push("b".into())).unwrap();
        assert_eq!(ReviewState::load(&s).edits, ["a", "b"]);
        let main = dir
            .path()
            .join("hooks/sessions/s/review/main/review_state.json");
        assert!(main.exists());
        ReviewState::track();
        assert_eq!(s.tracked_paths()["ReviewState"], main);

        // A subagent keeps its own record, as it keeps its own fire counts.
        struct Sub<'a>(&'a SessionStore);
        impl SessionContext for Sub<'_> {
            fn session_store(&self) -> &SessionStore {
                self.0
            }
            fn agent_id(&self) -> Option<&str> {
                Some("agent-7")
            }
        }
        assert_eq!(ReviewState::load(&Sub(&s)), ReviewState::default());
        ReviewState::mutate(&Sub(&s), |st| st.edits.push("c".into())).unwrap();
        assert!(
            dir.path()
                .join("hooks/sessions/s/review/agent-7/review_state.json")
                .exists()
        );
        assert_eq!(ReviewState::load(&s).edits, ["a", "b"]);

        ReviewState::reset(&s).unwrap();
        assert_eq!(ReviewState::load(&s), ReviewState::default());
        crate::store::untrack::<ReviewState>();
    }

    #[test]
    fn a_record_at_the_old_place_is_read_until_the_new_one_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let s = SessionStore::for_session(dir.path(), Some("s"));
        let old = dir.path().join("hooks/sessions/s/review_state.json");
        std::fs::create_dir_all(old.parent().unwrap()).unwrap();
        std::fs::write(&old, r#"{"edits": ["old.py"]}"#).unwrap();
        assert_eq!(ReviewState::load(&s).edits, ["old.py"]);
        // The first write starts from it and goes to the new place; the old file is left.
        ReviewState::mutate(&s, |st| st.edits.push("new.py".into())).unwrap();
        assert_eq!(ReviewState::load(&s).edits, ["old.py", "new.py"]);
        assert!(
            dir.path()
                .join("hooks/sessions/s/review/main/review_state.json")
                .exists()
        );
        std::fs::write(&old, r#"{"edits": ["stale.py"]}"#).unwrap();
        assert_eq!(ReviewState::load(&s).edits, ["old.py", "new.py"]);
        // A reset removes both, so nothing old is read back.
        ReviewState::reset(&s).unwrap();
        assert!(!old.exists());
        assert_eq!(ReviewState::load(&s), ReviewState::default());
    }

    #[test]
    fn durable_scopes_pick_their_directories() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        let roots = DurableRoots {
            state_root: dir.path().join("state"),
            repo_root: Some(repo.clone()),
        };
        FlaggedPaths::mutate(&roots, |f| {
            f.paths.append("x".into());
            f.paths.append("y".into());
            f.paths.append("z".into());
        })
        .unwrap();
        assert_eq!(
            FlaggedPaths::load(&roots).paths.iter().collect::<Vec<_>>(),
            ["y", "z"]
        );
        let key = paths::project_key(&repo);
        assert!(
            dir.path()
                .join("state/hooks/durable/projects")
                .join(key)
                .join("flagged_paths.json")
                .exists()
        );
        JsonCommands::mutate(&roots, |j| j.names.push("gh".into())).unwrap();
        assert!(
            dir.path()
                .join("state/hooks/durable/global/json_commands.json")
                .exists()
        );
    }

    #[test]
    fn project_scope_without_root_is_memory_only() {
        let dir = tempfile::tempdir().unwrap();
        let roots = DurableRoots {
            state_root: dir.path().to_path_buf(),
            repo_root: None,
        };
        assert!(!roots.durable_store(Scope::Project).is_persistent());
        let n = FlaggedPaths::mutate(&roots, |f| {
            f.paths.append("x".into());
            f.paths.len()
        })
        .unwrap();
        assert_eq!(n, 1);
        assert!(FlaggedPaths::load(&roots).paths.is_empty());
        assert!(!dir.path().join("hooks").exists());
        assert!(roots.durable_store(Scope::Global).is_persistent());
    }

    /// The seeds: without a repository root a project model keeps its data in memory for that
    /// call. One store (an event's) sees its own writes; the next store starts empty; nothing
    /// reaches the disk.
    #[test]
    fn a_rootless_project_store_remembers_for_its_own_life() {
        let dir = tempfile::tempdir().unwrap();
        let store = DurableStore::project(dir.path(), None);
        let slot = store.slot::<FlaggedPaths>();
        slot.mutate(|f| f.paths.append("x".into())).unwrap();
        store
            .slot::<FlaggedPaths>()
            .mutate(|f| f.paths.append("y".into()))
            .unwrap();
        let seen: Vec<String> = store.load::<FlaggedPaths>().paths.iter().cloned().collect();
        assert_eq!(seen, ["x", "y"]);
        slot.delete().unwrap();
        assert_eq!(store.load::<FlaggedPaths>(), FlaggedPaths::default());
        slot.set(&FlaggedPaths::default()).unwrap();
        let fresh = DurableStore::project(dir.path(), None);
        assert!(fresh.slot::<FlaggedPaths>().get().is_none());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

//! The per-session store: typed slots under `hooks/sessions/<session_id>/`, `once`/`unseen`, and
//! the registry of tracked models.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use parking_lot::Mutex;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::StateError;
use crate::fire::{HookState, PrimitiveState};
use crate::paths::{self, model_key, short_type_name};
use crate::slot::Slot;

/// The store of one Claude Code session, or a null store (payload without `session_id`) whose
/// slots are all null: reads are empty, writes vanish, `mutate` runs on an in-memory default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionStore {
    dir: Option<PathBuf>,
}

impl SessionStore {
    /// A store rooted at `dir` (`None` for a null store). The directory is created on first write.
    pub fn at(dir: Option<PathBuf>) -> SessionStore {
        SessionStore { dir }
    }

    /// The store of `session_id` under the state root `root`; null when the id is absent or empty.
    pub fn for_session(root: &Path, session_id: Option<&str>) -> SessionStore {
        match session_id {
            Some(id) if !id.is_empty() => SessionStore::at(Some(paths::session_dir(root, id))),
            _ => SessionStore::null(),
        }
    }

    /// [`SessionStore::for_session`] under [`paths::state_root`] (`CAPTAIN_HOOK_STATE_DIR`).
    pub fn from_env(session_id: Option<&str>) -> SessionStore {
        SessionStore::for_session(&paths::state_root(), session_id)
    }

    /// A store that persists nothing.
    pub fn null() -> SessionStore {
        SessionStore { dir: None }
    }

    /// The session directory, or `None` for a null store.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// True for a store that persists nothing.
    pub fn is_null(&self) -> bool {
        self.dir.is_none()
    }

    /// Creates the session directory (the CLI does this before dispatch); a no-op when null.
    pub fn ensure_dir(&self) -> Result<(), StateError> {
        match &self.dir {
            Some(d) => crate::file::create_private_dirs(d).map_err(|source| StateError::Write {
                path: d.clone(),
                source,
            }),
            None => Ok(()),
        }
    }

    /// The slot of `T` at `<dir>/<snake_case(T)>.json`.
    pub fn slot<T: Serialize + DeserializeOwned>(&self) -> Slot<T> {
        self.slot_named(&model_key::<T>())
    }

    /// The slot of `T` at `<dir>/<key>.json`, for models whose file name is set explicitly.
    pub fn slot_named<T: Serialize + DeserializeOwned>(&self, key: &str) -> Slot<T> {
        slot_in(self.dir.as_deref(), key)
    }

    /// The stored `T`, or `None` (missing, null, corrupt: see [`Slot::get`]).
    pub fn get<T: Serialize + DeserializeOwned>(&self) -> Option<T> {
        self.slot::<T>().get()
    }

    /// The stored `T`, else `default`.
    pub fn get_or<T: Serialize + DeserializeOwned>(&self, default: T) -> T {
        self.slot::<T>().get_or(default)
    }

    /// The stored `T`, else `T::default()`.
    pub fn load<T: Serialize + DeserializeOwned + Default>(&self) -> T {
        self.slot::<T>().load()
    }

    /// Stores `value` atomically in `T`'s slot.
    pub fn set<T: Serialize + DeserializeOwned>(&self, value: &T) -> Result<(), StateError> {
        self.slot::<T>().set(value)
    }

    /// Deletes `T`'s slot file.
    pub fn delete<T: Serialize + DeserializeOwned>(&self) -> Result<(), StateError> {
        self.slot::<T>().delete()
    }

    /// Locked read-modify-write of `T`'s slot (see [`Slot::mutate`] and its no-nesting rule).
    pub fn mutate<T, R>(&self, f: impl FnOnce(&mut T) -> R) -> Result<R, StateError>
    where
        T: Serialize + DeserializeOwned + Default,
    {
        self.slot::<T>().mutate(f)
    }

    /// `<dir>/<hook state key>/<agent segment>`: where a hook's per-agent counters live.
    pub fn hook_dir(&self, hook_state_key: &str, agent_id: Option<&str>) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| {
            d.join(paths::path_component(hook_state_key))
                .join(paths::agent_segment(agent_id))
        })
    }

    /// True the first time `(scope, key)` is seen in this session, false afterwards. A null
    /// store sees everything for the first time.
    pub fn once(&self, key: &str, scope: Option<&str>) -> bool {
        !self.unseen(&[key], scope).is_empty()
    }

    /// The keys (de-duplicated, in order) not yet recorded under `scope`, recording all of them
    /// in one locked write; nothing is written when none is new. On a state failure (logged) every
    /// key counts as unseen, so a deduplicated message is repeated rather than lost.
    pub fn unseen<S: AsRef<str>>(&self, keys: &[S], scope: Option<&str>) -> Vec<String> {
        let mut wanted: Vec<String> = Vec::with_capacity(keys.len());
        for k in keys {
            if !wanted.iter().any(|w| w == k.as_ref()) {
                wanted.push(k.as_ref().to_owned());
            }
        }
        let scope = scope.unwrap_or("").to_owned();
        let slot = self.slot::<SeenKeys>();
        let result = slot.try_mutate(crate::LockWait::Forever, |seen: &mut SeenKeys| {
            let set = seen.seen.entry(scope.clone()).or_default();
            let fresh: Vec<String> = wanted
                .iter()
                .filter(|k| !set.contains(*k))
                .cloned()
                .collect();
            if fresh.is_empty() {
                // Err skips the write: nothing new to record.
                return Err(Vec::new());
            }
            set.extend(fresh.iter().cloned());
            Ok(fresh)
        });
        match result {
            Ok(Ok(fresh)) | Ok(Err(fresh)) => fresh,
            Err(e) => {
                tracing::warn!(error = %e, "failed to record seen keys");
                wanted
            }
        }
    }

    /// `{type name: path}` for every tracked session model (empty for a null store).
    pub fn tracked_paths(&self) -> BTreeMap<String, PathBuf> {
        let Some(dir) = &self.dir else {
            return BTreeMap::new();
        };
        tracked_models()
            .into_iter()
            .filter(|m| m.kind == ModelKind::Session)
            .map(|m| {
                // A workflow record's path is the main agent's; a subagent's sits beside it.
                let dir = match &m.state_key {
                    Some(k) => dir.join(paths::path_component(k)).join(paths::MAIN_AGENT),
                    None => dir.clone(),
                };
                (m.name.to_owned(), dir.join(format!("{}.json", m.key)))
            })
            .collect()
    }
}

/// The ledger behind [`SessionStore::once`] and [`SessionStore::unseen`]: keys seen per scope
/// (`""` for no scope), stored in `seen_keys.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SeenKeys {
    /// Keys recorded under each scope.
    pub seen: BTreeMap<String, BTreeSet<String>>,
}

/// Where a tracked model's files live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelKind {
    /// Under a session directory.
    Session,
    /// Under the durable root, in this scope.
    Durable(crate::Scope),
}

/// A model registered for introspection (`tracked_models`).
#[derive(Clone, Debug)]
pub struct TrackedModel {
    /// The full Rust type name.
    pub type_name: &'static str,
    /// The short type name (`ReviewState`).
    pub name: &'static str,
    /// The file stem (`review_state`).
    pub key: String,
    /// Session or durable.
    pub kind: ModelKind,
    /// For a workflow record: the state key its per-agent directory is under
    /// (`<session>/<state key>/<agent>/<key>.json`); `None` for a model at the session root.
    pub state_key: Option<String>,
    schema: fn() -> schemars::Schema,
}

impl TrackedModel {
    /// The model's JSON Schema.
    pub fn schema(&self) -> schemars::Schema {
        (self.schema)()
    }
}

fn schema_of<T: JsonSchema>() -> schemars::Schema {
    schemars::schema_for!(T)
}

fn entry<T: JsonSchema + 'static>(key: String, kind: ModelKind) -> TrackedModel {
    TrackedModel {
        type_name: std::any::type_name::<T>(),
        name: short_type_name::<T>(),
        key,
        kind,
        state_key: None,
        schema: schema_of::<T>,
    }
}

// The framework's own models are tracked from the start, as the original did at import time.
static TRACKED: LazyLock<Mutex<Vec<TrackedModel>>> = LazyLock::new(|| {
    Mutex::new(vec![
        entry::<HookState>(model_key::<HookState>(), ModelKind::Session),
        entry::<PrimitiveState>(model_key::<PrimitiveState>(), ModelKind::Session),
        entry::<SeenKeys>(model_key::<SeenKeys>(), ModelKind::Session),
    ])
});

/// Registers session model `T` (file stem from its type name) for [`tracked_models`] and
/// [`SessionStore::tracked_paths`]. Registering twice is harmless.
pub fn track<T: JsonSchema + 'static>() {
    track_as::<T>(model_key::<T>(), ModelKind::Session);
}

/// Registers `T` with an explicit file stem and kind (used by the state traits).
pub fn track_as<T: JsonSchema + 'static>(key: String, kind: ModelKind) {
    let mut list = TRACKED.lock();
    let name = std::any::type_name::<T>();
    if !list.iter().any(|m| m.type_name == name) {
        list.push(entry::<T>(key, kind));
    }
}

/// Registers session model `T` kept under a state key (a [`crate::WorkflowState`]).
pub(crate) fn track_keyed<T: JsonSchema + 'static>(key: String, state_key: String) {
    let mut list = TRACKED.lock();
    let name = std::any::type_name::<T>();
    if !list.iter().any(|m| m.type_name == name) {
        let mut model = entry::<T>(key, ModelKind::Session);
        model.state_key = Some(state_key);
        list.push(model);
    }
}

/// Removes `T` from the registry (tests and hot reloads).
pub fn untrack<T: 'static>() {
    let mut list = TRACKED.lock();
    let name = std::any::type_name::<T>();
    list.retain(|m| m.type_name != name);
}

/// Every tracked model, in registration order (the framework's own first).
pub fn tracked_models() -> Vec<TrackedModel> {
    TRACKED.lock().clone()
}

/// The slot `<dir>/<key>.json`, or a null slot without a directory: every store's slots.
pub(crate) fn slot_in<T: Serialize + DeserializeOwned>(dir: Option<&Path>, key: &str) -> Slot<T> {
    Slot::at(dir.map(|d| d.join(format!("{}.json", paths::path_component(key)))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(default)]
    struct EditCounter {
        count: u32,
        files: Vec<String>,
    }

    fn store() -> (tempfile::TempDir, SessionStore) {
        let dir = tempfile::tempdir().unwrap();
        let s = SessionStore::for_session(dir.path(), Some("s1"));
        (dir, s)
    }

    #[test]
    fn slots_round_trip_at_the_documented_path() {
        let (root, s) = store();
        assert_eq!(s.get::<EditCounter>(), None);
        assert_eq!(
            s.get_or(EditCounter {
                count: 7,
                files: vec![]
            })
            .count,
            7
        );
        s.set(&EditCounter {
            count: 2,
            files: vec!["a".into()],
        })
        .unwrap();
        let path = root.path().join("hooks/sessions/s1/edit_counter.json");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"count":2,"files":["a"]}"#
        );
        assert_eq!(s.load::<EditCounter>().count, 2);
        s.mutate(|c: &mut EditCounter| c.count += 1).unwrap();
        assert_eq!(s.load::<EditCounter>().count, 3);
        assert!(
            root.path()
                .join("hooks/sessions/s1/edit_counter.json.lock")
                .exists()
        );
        s.delete::<EditCounter>().unwrap();
        s.delete::<EditCounter>().unwrap();
        assert_eq!(s.get::<EditCounter>(), None);
    }

    #[test]
    fn missing_keys_default_and_extra_keys_are_ignored() {
        let (_root, s) = store();
        let slot = s.slot::<EditCounter>();
        std::fs::create_dir_all(slot.path().unwrap().parent().unwrap()).unwrap();
        std::fs::write(slot.path().unwrap(), r#"{"count":4,"extra":true}"#).unwrap();
        assert_eq!(
            s.load::<EditCounter>(),
            EditCounter {
                count: 4,
                files: vec![]
            }
        );
    }

    #[test]
    fn null_store_reads_empty_and_persists_nothing() {
        let s = SessionStore::for_session(Path::new("/nonexistent"), None);
        assert!(s.is_null());
        s.set(&EditCounter::default()).unwrap();
        assert_eq!(s.get::<EditCounter>(), None);
        assert_eq!(
            s.mutate(|c: &mut EditCounter| {
                c.count += 1;
                c.count
            })
            .unwrap(),
            1
        );
        assert_eq!(
            s.mutate(|c: &mut EditCounter| {
                c.count += 1;
                c.count
            })
            .unwrap(),
            1
        );
        assert!(s.once("k", None));
        assert!(s.once("k", None));
        assert!(s.tracked_paths().is_empty());
        assert_eq!(s.slot::<EditCounter>().path(), None);
        assert_eq!(
            SessionStore::for_session(Path::new("/x"), Some("")),
            SessionStore::null()
        );
    }

    #[test]
    fn once_and_unseen_record_per_scope() {
        let (_root, s) = store();
        assert!(s.once("a", None));
        assert!(!s.once("a", None));
        assert!(s.once("a", Some("other")));
        assert_eq!(s.unseen(&["b", "a", "b", "c"], None), vec!["b", "c"]);
        assert!(s.unseen(&["a", "b"], None).is_empty());
        let seen = s.load::<SeenKeys>();
        assert_eq!(seen.seen[""].len(), 3);
        assert_eq!(seen.seen["other"].len(), 1);
    }

    #[test]
    fn tracked_models_include_the_builtins_and_registered_ones() {
        track::<EditCounter>();
        track::<EditCounter>();
        let models = tracked_models();
        let names: Vec<_> = models.iter().map(|m| m.name).collect();
        assert_eq!(&names[..3], ["HookState", "PrimitiveState", "SeenKeys"]);
        assert_eq!(names.iter().filter(|n| **n == "EditCounter").count(), 1);
        let (root, s) = store();
        let paths = s.tracked_paths();
        assert_eq!(
            paths["EditCounter"],
            root.path().join("hooks/sessions/s1/edit_counter.json")
        );
        assert_eq!(
            paths["SeenKeys"],
            root.path().join("hooks/sessions/s1/seen_keys.json")
        );
        let schema = models
            .iter()
            .find(|m| m.name == "EditCounter")
            .unwrap()
            .schema();
        assert!(schema.as_value().to_string().contains("files"));
        untrack::<EditCounter>();
        assert!(!tracked_models().iter().any(|m| m.name == "EditCounter"));
    }
}

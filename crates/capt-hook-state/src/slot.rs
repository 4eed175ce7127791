//! A typed slot: one model stored as one JSON file.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StateError;
use crate::file::{self, LockWait, Prior, ReadOutcome};

/// One model `T` stored at one path, or a *null* slot (no session, or a project without a root)
/// that reads as empty and persists nothing.
///
/// # Locking and the no-nesting rule
///
/// [`Slot::mutate`] holds an exclusive `flock` on `<file>.lock` while the closure runs. The lock
/// belongs to the open file, not the thread or process, so calling `mutate` (or anything that
/// mutates the same slot, such as [`crate::SessionStore::once`] for `SeenKeys`) from inside
/// the closure waits for itself forever. Keep closures short and never nest them on one slot;
/// [`LockWait::Timeout`] turns such a bug into an error instead of a hang.
pub struct Slot<T> {
    path: Option<PathBuf>,
    /// Where an earlier release kept this model: read while `path` has never been written, so
    /// a state file written before the move is still found, without a migration step.
    legacy: Option<PathBuf>,
    /// For a slot with no file that still keeps its value for a while (a project's durable
    /// state without a repository root keeps it for the event): the value, as JSON.
    memory: Option<Memory>,
    _model: PhantomData<fn() -> T>,
}

/// The value of a slot kept in memory only.
pub(crate) type Memory = Arc<Mutex<Option<serde_json::Value>>>;

impl<T> Clone for Slot<T> {
    fn clone(&self) -> Self {
        Slot {
            path: self.path.clone(),
            legacy: self.legacy.clone(),
            memory: self.memory.clone(),
            _model: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Slot<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("model", &std::any::type_name::<T>())
            .field("path", &self.path)
            .finish()
    }
}

impl<T: Serialize + DeserializeOwned> Slot<T> {
    /// A slot stored at `path` (`None` makes a null slot).
    pub fn at(path: Option<PathBuf>) -> Slot<T> {
        Slot {
            path,
            legacy: None,
            memory: None,
            _model: PhantomData,
        }
    }

    /// A slot with no file whose value lives in `memory` (shared by the slot's clones).
    pub(crate) fn in_memory(memory: Memory) -> Slot<T> {
        Slot {
            path: None,
            legacy: None,
            memory: Some(memory),
            _model: PhantomData,
        }
    }

    /// The value kept in memory, read as `T` (a value that does not read is none).
    fn remembered(memory: &Memory) -> Option<T> {
        memory
            .lock()
            .clone()
            .and_then(|v| serde_json::from_value(v).ok())
    }

    /// This slot, also reading `legacy` (an older release's place for the model) for as long
    /// as its own file has never been written. Writes go to the slot's own file only; the old
    /// file is left as it was.
    pub fn with_legacy(mut self, legacy: Option<PathBuf>) -> Slot<T> {
        self.legacy = legacy;
        self
    }

    /// The value at the legacy place, when there is one and it reads (a corrupt one is logged
    /// and ignored: the new file starts fresh).
    fn legacy_value(&self) -> Option<T> {
        let legacy = self.legacy.as_ref()?;
        match file::read_model::<T>(legacy) {
            Ok(ReadOutcome::Valid(v)) => Some(v),
            Ok(ReadOutcome::Missing) => None,
            Ok(ReadOutcome::Corrupt(reason)) => {
                tracing::warn!(path = %legacy.display(), %reason, "ignoring an unreadable state file of an earlier release");
                None
            }
            Err(e) => {
                tracing::warn!(path = %legacy.display(), error = %e, "ignoring an unreadable state file of an earlier release");
                None
            }
        }
    }

    /// A slot that reads as empty and persists nothing.
    pub fn null() -> Slot<T> {
        Slot::at(None)
    }

    /// The file, or `None` for a null slot.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// True for a slot that persists nothing.
    pub fn is_null(&self) -> bool {
        self.path.is_none()
    }

    /// The stored value: `None` when there is no file, the slot is null, or the file is corrupt
    /// or unreadable (both logged as warnings, never raised).
    pub fn get(&self) -> Option<T> {
        match self.read() {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(model = std::any::type_name::<T>(), error = %e, "failed to read session state");
                None
            }
        }
    }

    /// The stored value, else `default` (also for a null slot or a corrupt file).
    pub fn get_or(&self, default: T) -> T {
        self.get().unwrap_or(default)
    }

    /// The stored value, else `T::default()`.
    pub fn load(&self) -> T
    where
        T: Default,
    {
        self.get().unwrap_or_default()
    }

    /// Strict read: `Ok(None)` when missing or null, [`StateError::Corrupt`] when the file does
    /// not hold a valid `T`, other errors for I/O failures.
    pub fn read(&self) -> Result<Option<T>, StateError> {
        let Some(path) = &self.path else {
            return Ok(self.memory.as_ref().and_then(Self::remembered));
        };
        match file::read_model::<T>(path)? {
            ReadOutcome::Missing => Ok(self.legacy_value()),
            ReadOutcome::Valid(v) => Ok(Some(v)),
            ReadOutcome::Corrupt(reason) => Err(StateError::Corrupt {
                path: path.clone(),
                model: std::any::type_name::<T>().to_owned(),
                reason,
            }),
        }
    }

    /// Writes `value` atomically (nothing for a null slot). A corrupt file in the way is moved
    /// aside as `<file>.bak.<timestamp>` first. This is last-writer-wins: use
    /// [`Slot::mutate`] when several processes may update the same slot.
    pub fn set(&self, value: &T) -> Result<(), StateError> {
        match (&self.path, &self.memory) {
            (Some(path), _) => file::write_model(path, value, Prior::Unknown),
            (None, Some(memory)) => {
                *memory.lock() = serde_json::to_value(value).ok();
                Ok(())
            }
            (None, None) => Ok(()),
        }
    }

    /// Removes the file (and the legacy one); a missing file or a null slot is fine.
    pub fn delete(&self) -> Result<(), StateError> {
        let Some(path) = &self.path else {
            if let Some(memory) = &self.memory {
                *memory.lock() = None;
            }
            return Ok(());
        };
        // The legacy file goes too, or a reset record would be read back from it.
        for path in std::iter::once(path).chain(self.legacy.as_ref()) {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(StateError::Delete {
                        path: path.clone(),
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    /// Loads (or defaults), applies `f` and saves, all under the slot's exclusive lock, waiting
    /// as long as it takes. See the type's docs for the no-nesting rule.
    pub fn mutate<R>(&self, f: impl FnOnce(&mut T) -> R) -> Result<R, StateError>
    where
        T: Default,
    {
        self.mutate_with(LockWait::Forever, f)
    }

    /// [`Slot::mutate`] with a choice of how long to wait for the lock.
    pub fn mutate_with<R>(
        &self,
        wait: LockWait,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<R, StateError>
    where
        T: Default,
    {
        self.try_mutate(wait, |v| Ok::<R, std::convert::Infallible>(f(v)))
            .map(|r| r.unwrap_or_else(|never| match never {}))
    }

    /// Like [`Slot::mutate_with`], but a closure returning `Err` saves nothing (and neither does
    /// one that panics); the lock is released either way.
    pub fn try_mutate<R, E>(
        &self,
        wait: LockWait,
        f: impl FnOnce(&mut T) -> Result<R, E>,
    ) -> Result<Result<R, E>, StateError>
    where
        T: Default,
    {
        self.try_mutate_from(wait, |_| T::default(), T::default, f)
    }

    /// [`Slot::try_mutate`] with the starting value chosen by the caller when the file is
    /// missing (`missing`, told whether a value was written under this slot's lock before, i.e.
    /// whether the file was lost rather than never written) or corrupt (`corrupt`; the file is
    /// still moved aside before the write). Counters use it to start from "spent" rather than
    /// from zero when their file was damaged. Every write through here marks the lock file
    /// (see [`file::LockGuard::record_write`]: an `fstat`, and one byte the first time).
    pub(crate) fn try_mutate_from<R, E>(
        &self,
        wait: LockWait,
        missing: impl FnOnce(bool) -> T,
        corrupt: impl FnOnce() -> T,
        f: impl FnOnce(&mut T) -> Result<R, E>,
    ) -> Result<Result<R, E>, StateError>
    where
        T: Default,
    {
        let Some(path) = &self.path else {
            let Some(memory) = &self.memory else {
                let mut value = T::default();
                return Ok(f(&mut value));
            };
            // The memory's own lock stands in for the file lock: one writer at a time.
            let mut held = memory.lock();
            let mut value = held
                .clone()
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default();
            let result = f(&mut value);
            if result.is_ok() {
                *held = serde_json::to_value(&value).ok();
            }
            return Ok(result);
        };
        let lock = file::lock_path(path);
        let guard = file::lock(&lock, wait)?;
        let (mut value, prior) = match file::read_model::<T>(path)? {
            // Never written here: an earlier release's file, if any, is where this starts.
            ReadOutcome::Missing if !guard.saw_write() => match self.legacy_value() {
                Some(v) => (v, Prior::Fine),
                None => (missing(false), Prior::Fine),
            },
            ReadOutcome::Missing => (missing(true), Prior::Fine),
            ReadOutcome::Valid(v) => (v, Prior::Fine),
            ReadOutcome::Corrupt(reason) => {
                tracing::warn!(
                    model = std::any::type_name::<T>(),
                    path = %path.display(),
                    %reason,
                    "failed to read session state; moving it aside"
                );
                (corrupt(), Prior::Corrupt)
            }
        };
        match f(&mut value) {
            Ok(r) => {
                // Marked first, so a failure to mark leaves nothing changed; a value that then
                // fails to be written reads as lost, which errs towards "spent".
                guard.record_write().map_err(|source| StateError::Lock {
                    path: lock.clone(),
                    source,
                })?;
                file::write_model(path, &value, prior)?;
                Ok(Ok(r))
            }
            Err(e) => Ok(Err(e)),
        }
    }
}

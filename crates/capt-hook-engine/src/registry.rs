//! The ordered list of hooks; registration order is fold order.

use std::sync::Arc;

use crate::hook::Hook;
use crate::primitives::{DefError, HookDef};

/// Hooks in registration order.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    hooks: Vec<Arc<Hook>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Builds `def` under the name stem `stem` (a file stem or module name) and appends it.
    pub fn add(&mut self, stem: &str, def: HookDef) -> Result<&Hook, DefError> {
        self.hooks.push(Arc::new(def.build(stem)?));
        let last = self.hooks.len() - 1;
        Ok(&self.hooks[last])
    }

    /// Appends `other`'s hooks after these, in their order.
    pub fn extend(&mut self, other: Registry) {
        self.hooks.extend(other.hooks);
    }

    /// Appends an already built hook.
    pub fn push(&mut self, hook: Hook) {
        self.hooks.push(Arc::new(hook));
    }

    /// The hooks, in order.
    pub fn hooks(&self) -> &[Arc<Hook>] {
        &self.hooks
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}

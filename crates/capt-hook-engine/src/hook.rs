//! A registered hook: what it listens to, when it matches, and what it says.

use std::fmt;
use std::sync::Arc;

use capt_hook_core::pattern::PatternError;
use capt_hook_core::{Condition, Event, EventKind, EventSet, HookResult};

use crate::inline::InlineTest;

/// Why a hook definition cannot be registered. `field` names the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct DefError {
    /// The field at fault (`events`, `only_if[1]`, `argv`, …).
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl DefError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> DefError {
        DefError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl From<PatternError> for DefError {
    fn from(e: PatternError) -> Self {
        DefError::new("pattern", e.to_string())
    }
}

/// A handler's failure; the hook then yields no result and the failure is logged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HandlerError(pub String);

impl HandlerError {
    /// A failure with a message.
    pub fn new(message: impl Into<String>) -> HandlerError {
        HandlerError(message.into())
    }
}

/// A definition that fails while a handler builds it (a condition compiled on the fly).
impl From<DefError> for HandlerError {
    fn from(e: DefError) -> HandlerError {
        HandlerError(e.to_string())
    }
}

/// A state file that cannot be read or written: the handler fails visibly rather than
/// deciding on data it does not have.
impl From<capt_hook_state::StateError> for HandlerError {
    fn from(e: capt_hook_state::StateError) -> HandlerError {
        HandlerError(format!("state: {e}"))
    }
}

/// What a handler returns.
pub type HandlerResult = Result<Option<HookResult>, HandlerError>;

/// A hook body written in Rust.
pub type HandlerFn = Arc<dyn Fn(&Event) -> HandlerResult + Send + Sync>;

/// A handler plus where it may run.
#[derive(Clone)]
pub struct Handler {
    /// The function.
    pub func: HandlerFn,
    /// Built-in primitives are pure and fast, so they run on the dispatching thread; user
    /// handlers run on the pool, where a slow one cannot hold the others up.
    pub inline: bool,
}

/// What a hook does once its conditions hold.
#[derive(Clone)]
pub enum Body {
    /// A fixed message: block or warn with it verbatim (nothing when empty).
    Message {
        /// The message.
        message: String,
        /// Block instead of warn.
        block: bool,
    },
    /// A handler that computes the result.
    Handler(Handler),
    /// Leave the call to the user with `reason`: no verdict of its own, and on a guarded event
    /// the other hooks' approval does not apply (the dispatcher reports it as a
    /// [`FailureCause::Asked`], which Claude Code sees as `permissionDecision: "ask"`).
    Ask {
        /// Why the user is asked.
        reason: String,
    },
}

impl Body {
    /// What a fixed message answers: nothing when it is empty, else a block or a warning.
    pub fn message_result(message: &str, block: bool) -> Option<HookResult> {
        if message.is_empty() {
            None
        } else if block {
            Some(HookResult::block(message))
        } else {
            Some(HookResult::warn(message))
        }
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Body::Message { message, block } => f
                .debug_struct("Message")
                .field("message", message)
                .field("block", block)
                .finish(),
            Body::Handler(h) => write!(f, "Handler(inline: {})", h.inline),
            Body::Ask { reason } => f.debug_struct("Ask").field("reason", reason).finish(),
        }
    }
}

/// Where a hook was defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A hook ready for dispatch.
#[derive(Debug, Clone)]
pub struct Hook {
    /// `<file stem>:<kind>_<slug or hash>`.
    pub name: String,
    /// The primitive that made it (`hook`, `block_command`, `on`, …).
    pub kind: &'static str,
    /// The events it listens to.
    pub events: EventSet,
    /// All must hold, in order.
    pub only_if: Vec<Condition>,
    /// Any holding skips the hook.
    pub skip_if: Vec<Condition>,
    /// What it does.
    pub body: Body,
    /// Message-only hooks still count after another hook blocked.
    pub declarative: bool,
    /// Its warnings ride on another hook's deny.
    pub advisory_on_deny: bool,
    /// Skip SubagentStart/SubagentStop for planning agent types.
    pub skip_planning_agents: bool,
    /// Skip events whose file is gitignored.
    pub respect_gitignore: bool,
    /// Delivered results allowed per session, hook and agent (`None`: unlimited).
    pub max_fires: Option<u32>,
    /// Runs after the reply, never on a decision event.
    pub is_async: bool,
    /// The client must not let the call through unchecked.
    pub mandatory: bool,
    /// A warning from this hook also grants permission at PreToolUse.
    pub approve: bool,
    /// Its blocking Stop/SubagentStop verdict is given again on the continuation Claude Code
    /// marks `stop_hook_active`; true for kinds that manage their own repetition (a gate fires
    /// once per turn, a workflow until its checklist passes), opt-in for the rest so a plain
    /// blocking Stop hook cannot loop.
    pub repeat: bool,
    /// The kind limits its own repetition at Stop (gate, workflow).
    pub self_limiting: bool,
    /// Inline tests.
    pub tests: Vec<InlineTest>,
    /// Where it was defined.
    pub source: Option<Source>,
    /// The judge specialty it asks for (LLM hooks), checked against the project's config when
    /// the project loads.
    pub specialty: Option<String>,
}

impl Hook {
    /// A warning for `capt-hook check` when this hook can block Stop/SubagentStop on every
    /// continuation: Claude Code then loops until its own cap overrides the hook.
    pub fn stop_loop_warning(&self) -> Option<String> {
        let stops = EventSet::of(&[EventKind::Stop, EventKind::SubagentStop]);
        if !self.repeat || self.self_limiting || !self.events.intersects(stops) {
            return None;
        }
        // On Stop every result but an allow keeps the agent going, so any message blocks.
        Some(format!(
            "{}{}: blocks {} on every continuation (repeat = true), so Claude Code can loop until \
             its stop-hook cap overrides it; use a gate, or drop repeat",
            self.source
                .as_ref()
                .map(|s| format!("{s}: "))
                .unwrap_or_default(),
            self.name,
            self.events,
        ))
    }

    /// Runs the body once the conditions held. Errors and panics become `None` and are logged;
    /// they never take the process down.
    pub fn execute(&self, evt: &Event) -> Option<HookResult> {
        if self.max_fires == Some(0) {
            return None;
        }
        match &self.body {
            Body::Message { message, block } => Body::message_result(message, *block),
            Body::Handler(h) => run_handler(&self.name, &h.func, evt),
            // An ask is no result; the dispatcher, which sees the whole call, reports it.
            Body::Ask { .. } => None,
        }
    }
}

/// Calls a handler, turning an error or a panic into no result (both are logged).
pub fn run_handler(name: &str, func: &HandlerFn, evt: &Event) -> Option<HookResult> {
    call(name, func, evt).unwrap_or(None)
}

/// Why a hook that matched gave no verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureCause {
    /// The handler returned an error.
    Error(String),
    /// The handler panicked.
    Panic(String),
    /// The handler was still running at the deadline.
    Deadline,
    /// The handler never ran: every pool thread was busy and the queue full (or it reached a
    /// thread only after the deadline).
    NotRun,
    /// The hook (an `ask`) leaves the call to the user, for this reason: it gave no verdict, and
    /// the call is answered as one capt-hook could not check.
    Asked(String),
}

impl std::fmt::Display for FailureCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FailureCause::Error(e) => write!(f, "failed: {e}"),
            FailureCause::Panic(p) => write!(f, "panicked: {p}"),
            FailureCause::Deadline => f.write_str("did not finish before the deadline"),
            FailureCause::NotRun => f.write_str("could not run: every handler thread was busy"),
            FailureCause::Asked(reason) => write!(f, "leaves it to the user: {reason}"),
        }
    }
}

/// Calls a handler, keeping its error or panic (logged) as a [`FailureCause`].
pub(crate) fn call(
    name: &str,
    func: &HandlerFn,
    evt: &Event,
) -> Result<Option<HookResult>, FailureCause> {
    // The handler's state (Event::hook_store) is its own hook's: registrations that share a
    // name share it.
    let run = || capt_hook_core::scope::with_state_key(name, || func(evt));
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => {
            tracing::warn!(hook = name, error = %e, "hook handler failed; no result");
            Err(FailureCause::Error(e.to_string()))
        }
        Err(panic) => {
            let what = panic_text(panic.as_ref());
            tracing::error!(hook = name, panic = %what, "hook handler panicked; no result");
            Err(FailureCause::Panic(what))
        }
    }
}

/// A panic's message, when it carried one.
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// Lower-case, runs of anything but `[a-z0-9]` as one `_`, trimmed.
pub fn slug(label: &str) -> String {
    let mut out = String::new();
    let mut pending = false;
    for c in label.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending && !out.is_empty() {
                out.push('_');
            }
            pending = false;
            out.push(c);
        } else {
            pending = true;
        }
    }
    out
}

/// The first 8 hex digits of the message's hash, for hooks without a label.
pub fn short_hash(message: &str) -> String {
    blake3::hash(message.as_bytes()).to_hex()[..8].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_hashes() {
        assert_eq!(slug("  No Stash!! (ever) "), "no_stash_ever");
        assert_eq!(slug("read-only git"), "read_only_git");
        assert_eq!(short_hash("x").len(), 8);
        assert_ne!(short_hash("x"), short_hash("y"));
    }
}

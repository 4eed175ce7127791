//! The primitives as builder values: `hook`, `on`, `block_command`, `warn_command`,
//! `rewrite_command`, `set_tool_input`, `approve` and `deny`. Each lowers to one [`Hook`]
//! with the defaults of its kind; TOML files lower through the same functions.

use std::fmt;
use std::sync::Arc;

use capt_hook_core::condition::never_matches;
use capt_hook_core::events::{DECISION_EVENTS, GUARD_EVENTS, SHELL_GUARD_EVENTS};
use capt_hook_core::{
    Condition, Event, EventKind, EventSet, HookResult, Mode, Pattern, Tokens, tokens::TokenError,
};
use serde_json::Value;

// The definition error lives with the hook it fails to become (so `hook` needs nothing from
// this module); its path here is the one users know.
pub use crate::hook::DefError;
use crate::hook::{Body, Handler, HandlerFn, HandlerResult, Hook, Source, short_hash, slug};
use crate::inline::{Expect, InlineTest, Input};

/// How a command primitive recognises its command.
#[derive(Debug, Clone)]
pub enum CommandMatch {
    /// An argv prefix (`["git", "stash"]`): structural, never fires on a quoted mention.
    Argv(Tokens),
    /// A regex over the raw line and each command's words.
    Pattern(Pattern),
}

impl CommandMatch {
    /// An argv prefix; `*` matches one word, `a|b` either word.
    pub fn argv<S: AsRef<str>>(tokens: &[S]) -> Result<CommandMatch, DefError> {
        Tokens::new(tokens)
            .map(CommandMatch::Argv)
            .map_err(|e: TokenError| DefError::new("argv", e.to_string()))
    }

    /// With `exact`, an argv prefix matches literally only (no wrappers or spellings seen
    /// through); a regex is unchanged.
    pub fn exact(self, exact: bool) -> CommandMatch {
        match self {
            CommandMatch::Argv(tokens) => CommandMatch::Argv(tokens.exact(exact)),
            other => other,
        }
    }

    /// A regex in Python `re` syntax.
    pub fn pattern(regex: &str) -> Result<CommandMatch, DefError> {
        Pattern::new(regex, Mode::Plain)
            .map(CommandMatch::Pattern)
            .map_err(|e| DefError::new("pattern", e.to_string()))
    }

    /// The condition the match lowers to. A token list holding `*` cannot be an argv prefix
    /// condition the way the seeds describe (the prefix cannot require the extra word), so it
    /// stays a regex over the raw text.
    fn condition(&self) -> Condition {
        match self {
            CommandMatch::Argv(tokens) if tokens.has_wildcard() => {
                // Escaped tokens always form a valid regex.
                match Pattern::new(&tokens.to_regex(), Mode::Plain) {
                    Ok(p) => Condition::Command(p),
                    Err(_) => Condition::Runs(tokens.clone()),
                }
            }
            CommandMatch::Argv(tokens) => Condition::Runs(tokens.clone()),
            CommandMatch::Pattern(p) => Condition::Command(p.clone()),
        }
    }
}

/// A command rewriter supplied by another crate (the structural ast-grep form lives in the
/// code crate, which implements this).
pub trait CommandRewriter: Send + Sync {
    /// The new command, or `None` to leave it unchanged.
    fn rewrite(&self, command: &str) -> Option<String>;
}

/// A layer put around a hook's body once its name is known: the registration point through
/// which a kind defined above the engine changes what any hook does. The LLM kinds' `Confirm`
/// (a judge that must agree before a block stands) is the one there is; the engine only knows
/// this trait, so it needs nothing from the crates built on it.
pub trait BodyLayer: Send + Sync {
    /// `body` with the layer around it, for the hook named `name`; `Err` for a layer whose
    /// definition cannot work.
    fn wrap(&self, body: Body, name: String) -> Result<Body, DefError>;
}

/// A `to` function for the conditional rewrite form.
pub type RewriteFn = Arc<dyn Fn(&Event) -> Option<String> + Send + Sync>;

/// A note computed from the event (see [`HookDef::note_with`]).
pub type NoteFn = Arc<dyn Fn(&Event) -> Option<String> + Send + Sync>;

/// The context a rewrite carries for the agent: fixed text, or computed from the event.
#[derive(Clone)]
enum Note {
    Text(String),
    Computed(NoteFn),
}

impl Note {
    fn render(note: &Option<Note>, evt: &Event) -> Option<String> {
        match note {
            None => None,
            Some(Note::Text(t)) => Some(t.clone()),
            Some(Note::Computed(f)) => f(evt),
        }
    }

    /// A computed note is user code, so the body carrying it runs on the handler pool.
    fn is_user_code(note: &Option<Note>) -> bool {
        matches!(note, Some(Note::Computed(_)))
    }
}

#[derive(Clone)]
enum Kind {
    Hook {
        message: String,
        block: bool,
    },
    On {
        handler: HandlerFn,
    },
    BlockCommand {
        matcher: CommandMatch,
        reason: String,
        hint: Option<String>,
    },
    WarnCommand {
        matcher: CommandMatch,
        message: String,
    },
    RewriteRegex {
        pattern: Pattern,
        replace: String,
        note: Option<Note>,
    },
    RewriteTo {
        to: RewriteFn,
        block: Option<String>,
        note: Option<Note>,
    },
    RewriteWith {
        label: String,
        rewriter: Arc<dyn CommandRewriter>,
        note: Option<Note>,
    },
    SetToolInput {
        tool: String,
        field: String,
        value: Value,
        note: Option<Note>,
    },
    Approve {
        label: String,
    },
    Deny {
        reason: String,
    },
    Ask {
        reason: String,
    },
    Custom(CustomKind),
}

/// A handler-backed primitive defined outside this module (code-aware kinds, session kinds):
/// its guards, defaults and handler, lowered like any built-in kind.
#[derive(Clone)]
pub struct CustomKind {
    /// The kind's name (`lint`, `gate`, …), used in hook names and `list`.
    pub kind: &'static str,
    /// Events when the definition names none.
    pub default_events: EventSet,
    /// Conditions prepended to `only_if`.
    pub guards: Vec<Condition>,
    /// Conditions prepended to `skip_if`.
    pub skip_guards: Vec<Condition>,
    /// Computes the result once the conditions held.
    pub handler: HandlerFn,
    /// Text hashed into the name when no `name` is given.
    pub identity: String,
    /// Default for `skip_planning_agents`.
    pub skip_planning_agents: bool,
    /// Default for `max_fires` (`None`: unlimited).
    pub default_max_fires: Option<u32>,
    /// Pure and fast: run on the dispatching thread rather than the pool.
    pub inline: bool,
    /// The kind limits its own repetition at Stop (once per turn, until a checklist passes),
    /// so its blocks are given on `stop_hook_active` continuations too.
    pub manages_repetition: bool,
}

/// Defines a hook of a [`CustomKind`].
#[track_caller]
pub fn custom(kind: CustomKind) -> HookDef {
    def(Kind::Custom(kind))
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Hook { .. } => "hook",
            Kind::On { .. } => "on",
            Kind::BlockCommand { .. } => "block_command",
            Kind::WarnCommand { .. } => "warn_command",
            Kind::RewriteRegex { .. } | Kind::RewriteTo { .. } | Kind::RewriteWith { .. } => {
                "rewrite_command"
            }
            Kind::SetToolInput { .. } => "set_tool_input",
            Kind::Approve { .. } => "approve",
            Kind::Deny { .. } => "deny",
            Kind::Ask { .. } => "ask",
            Kind::Custom(c) => c.kind,
        }
    }
}

/// A fire limit as written: the kind's default, unlimited, or a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxFires {
    /// The kind's default (unlimited for every kind in this module).
    #[default]
    Default,
    /// No limit.
    Unlimited,
    /// At most this many delivered results per session, hook and agent.
    Count(u32),
}

/// A hook definition, built with the functions of this module and registered with
/// [`crate::Registry::add`].
#[derive(Clone)]
pub struct HookDef {
    kind: Kind,
    name: Option<String>,
    events: Option<EventSet>,
    only_if: Vec<Condition>,
    skip_if: Vec<Condition>,
    max_fires: MaxFires,
    advisory_on_deny: bool,
    skip_planning_agents: Option<bool>,
    respect_gitignore: bool,
    is_async: bool,
    mandatory: bool,
    approve: bool,
    repeat: Option<bool>,
    confirm: Option<Arc<dyn BodyLayer>>,
    specialty: Option<String>,
    when: Vec<WhenFn>,
    tests: Vec<InlineTest>,
    source: Option<Source>,
}

/// A veto written in Rust (see [`HookDef::when`]).
pub type WhenFn = Arc<dyn Fn(&Event) -> bool + Send + Sync>;

impl fmt::Debug for HookDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookDef")
            .field("kind", &self.kind.name())
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[track_caller]
fn def(kind: Kind) -> HookDef {
    let loc = std::panic::Location::caller();
    HookDef {
        kind,
        name: None,
        events: None,
        only_if: Vec::new(),
        skip_if: Vec::new(),
        max_fires: MaxFires::Default,
        advisory_on_deny: false,
        skip_planning_agents: None,
        respect_gitignore: true,
        is_async: false,
        mandatory: false,
        approve: false,
        repeat: None,
        confirm: None,
        specialty: None,
        when: Vec::new(),
        tests: Vec::new(),
        source: Some(Source {
            file: loc.file().to_owned(),
            line: loc.line() as usize,
        }),
    }
}

/// A declarative hook: warn (or block) with `message` whenever its conditions hold.
#[track_caller]
pub fn hook(events: &[EventKind], message: impl Into<String>) -> HookDef {
    def(Kind::Hook {
        message: message.into(),
        block: false,
    })
    .events(events)
}

/// A hook whose result a Rust function computes.
#[track_caller]
pub fn on<F>(events: &[EventKind], handler: F) -> HookDef
where
    F: Fn(&Event) -> HandlerResult + Send + Sync + 'static,
{
    def(Kind::On {
        handler: Arc::new(handler),
    })
    .events(events)
}

/// Blocks a Bash command at PreToolUse with `BLOCKED: <reason>. <hint>.`
#[track_caller]
pub fn block_command(matcher: CommandMatch, reason: impl Into<String>) -> HookDef {
    def(Kind::BlockCommand {
        matcher,
        reason: reason.into(),
        hint: None,
    })
}

/// Warns about a Bash command, by default after it ran (PostToolUse).
#[track_caller]
pub fn warn_command(matcher: CommandMatch, message: impl Into<String>) -> HookDef {
    def(Kind::WarnCommand {
        matcher,
        message: message.into(),
    })
}

/// Rewrites a Bash command with a regex substitution (all matches; `\1`, `\g<name>`, `$1`).
/// The rewrite happens whenever the regex matched, even when the text comes out the same.
#[track_caller]
pub fn rewrite_command(pattern: &str, replace: impl Into<String>) -> Result<HookDef, DefError> {
    let pattern = Pattern::new(pattern, Mode::Plain)?;
    Ok(def(Kind::RewriteRegex {
        pattern,
        replace: replace.into(),
        note: None,
    }))
}

/// Rewrites a Bash command to what `to` returns; `None` blocks with [`HookDef::block_with`]'s
/// message when one is set, else leaves the command alone.
#[track_caller]
pub fn rewrite_command_to<F>(to: F) -> HookDef
where
    F: Fn(&Event) -> Option<String> + Send + Sync + 'static,
{
    def(Kind::RewriteTo {
        to: Arc::new(to),
        block: None,
        note: None,
    })
}

/// Rewrites a Bash command with a [`CommandRewriter`] (the structural form plugs in here).
#[track_caller]
pub fn rewrite_command_with(label: &str, rewriter: Arc<dyn CommandRewriter>) -> HookDef {
    def(Kind::RewriteWith {
        label: label.to_owned(),
        rewriter,
        note: None,
    })
}

/// Adds `field = value` to the tool input of `tool` calls that do not set the field.
#[track_caller]
pub fn set_tool_input(tool: &str, field: &str, value: impl Into<Value>) -> HookDef {
    def(Kind::SetToolInput {
        tool: tool.to_owned(),
        field: field.to_owned(),
        value: value.into(),
        note: None,
    })
}

/// Approves matching calls, both before the dialog (PreToolUse) and at it (PermissionRequest).
#[track_caller]
pub fn approve(label: impl Into<String>) -> HookDef {
    def(Kind::Approve {
        label: label.into(),
    })
}

/// Denies matching calls with `reason`.
#[track_caller]
pub fn deny(reason: impl Into<String>) -> HookDef {
    def(Kind::Deny {
        reason: reason.into(),
    })
}

/// Leaves matching calls to the user with `reason`: Claude Code shows its permission prompt
/// (`permissionDecision: "ask"`) whatever other hooks approve; a deny still wins. A skill's
/// command, which cannot wait for a prompt, is refused saying so.
#[track_caller]
pub fn ask(reason: impl Into<String>) -> HookDef {
    def(Kind::Ask {
        reason: reason.into(),
    })
}

/// `reason.` or `reason. hint.`, each with its own trailing dots replaced by one.
pub fn blocked_message(reason: &str, hint: Option<&str>) -> String {
    let mut msg = format!("BLOCKED: {}.", reason.trim_end_matches('.'));
    if let Some(h) = hint.filter(|h| !h.is_empty()) {
        msg.push_str(&format!(" {}.", h.trim_end_matches('.')));
    }
    msg
}

impl HookDef {
    /// A stable label; the hook's name becomes `<stem>:<kind>_<slug(label)>`.
    pub fn name(mut self, label: impl Into<String>) -> Self {
        self.name = Some(label.into());
        self
    }

    /// The events to listen to (replaces the kind's default).
    pub fn events(mut self, events: &[EventKind]) -> Self {
        self.events = Some(EventSet::of(events));
        self
    }

    /// Adds a condition that must hold.
    pub fn only_if(mut self, c: Condition) -> Self {
        self.only_if.push(c);
        self
    }

    /// Adds a condition that skips the hook when it holds.
    pub fn skip_if(mut self, c: Condition) -> Self {
        self.skip_if.push(c);
        self
    }

    /// Blocks instead of warning (`hook` only).
    pub fn block(mut self, block: bool) -> Self {
        if let Kind::Hook { block: b, .. } = &mut self.kind {
            *b = block;
        }
        self
    }

    /// The hint appended to a `block_command` message.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        if let Kind::BlockCommand { hint: h, .. } = &mut self.kind {
            *h = Some(hint.into());
        }
        self
    }

    /// Context attached to a rewrite.
    pub fn note(self, note: impl Into<String>) -> Self {
        self.set_note(Note::Text(note.into()))
    }

    /// Context attached to a rewrite, computed from the event when the rewrite is made (`None`:
    /// no note). It is user code, so the hook then runs on the handler pool, under the event's
    /// deadline.
    pub fn note_with<F>(self, note: F) -> Self
    where
        F: Fn(&Event) -> Option<String> + Send + Sync + 'static,
    {
        self.set_note(Note::Computed(Arc::new(note)))
    }

    fn set_note(mut self, note: Note) -> Self {
        let n = Some(note);
        match &mut self.kind {
            Kind::RewriteRegex { note, .. }
            | Kind::RewriteTo { note, .. }
            | Kind::RewriteWith { note, .. }
            | Kind::SetToolInput { note, .. } => *note = n,
            _ => {}
        }
        self
    }

    /// For the conditional rewrite: block with this message when `to` returns nothing.
    pub fn block_with(mut self, message: impl Into<String>) -> Self {
        if let Kind::RewriteTo { block, .. } = &mut self.kind {
            *block = Some(message.into());
        }
        self
    }

    /// Delivered results allowed per session, hook and agent.
    pub fn max_fires(mut self, m: MaxFires) -> Self {
        self.max_fires = m;
        self
    }

    /// Let this hook's warning ride on another hook's deny.
    pub fn advisory_on_deny(mut self, yes: bool) -> Self {
        self.advisory_on_deny = yes;
        self
    }

    /// Skip planning agents at SubagentStart/SubagentStop (default depends on the kind).
    pub fn skip_planning_agents(mut self, yes: bool) -> Self {
        self.skip_planning_agents = Some(yes);
        self
    }

    /// Skip events whose file is gitignored (default true).
    pub fn respect_gitignore(mut self, yes: bool) -> Self {
        self.respect_gitignore = yes;
        self
    }

    /// Run after the reply (never on a decision event).
    pub fn run_async(mut self, yes: bool) -> Self {
        self.is_async = yes;
        self
    }

    /// The client must not let the call through unchecked.
    pub fn mandatory(mut self, yes: bool) -> Self {
        self.mandatory = yes;
        self
    }

    /// At PreToolUse, let this hook's warning also grant permission (`permissionDecision:
    /// "allow"`); without it a warning only adds context.
    pub fn approve(mut self, yes: bool) -> Self {
        self.approve = yes;
        self
    }

    /// Give a blocking Stop/SubagentStop verdict again while Claude Code is already continuing
    /// because of a stop hook (`stop_hook_active`). Off by default except for kinds that limit
    /// their own repetition, so a plain blocking Stop hook cannot loop.
    pub fn repeat(mut self, yes: bool) -> Self {
        self.repeat = Some(yes);
        self
    }

    /// Puts a layer around the hook's body. With the LLM kinds' `Confirm`, a blocking hook's
    /// block stands only when a judge agrees the call is what `confirm.rule` protects against;
    /// a judge that cannot answer in time allows, with a note.
    pub fn confirm(mut self, confirm: impl BodyLayer + 'static) -> Self {
        self.confirm = Some(Arc::new(confirm));
        self
    }

    /// Adds a veto written in Rust: the hook gives its verdict only when `when` holds. Unlike a
    /// condition, it runs with the handler on the handler pool, under the event's deadline, so it
    /// may be slow; if it panics or misses the deadline the hook counts as failed (on a guarded
    /// call the user decides, and a `mandatory` hook denies), never as silently skipped.
    pub fn when<F>(mut self, when: F) -> Self
    where
        F: Fn(&Event) -> bool + Send + Sync + 'static,
    {
        self.when.push(Arc::new(when));
        self
    }

    /// Adds an inline test.
    #[track_caller]
    pub fn test(mut self, input: Input, expect: Expect) -> Self {
        let line = std::panic::Location::caller().line() as usize;
        self.tests.push(InlineTest {
            input,
            expect,
            line: Some(line),
        });
        self
    }

    /// Adds a prepared inline test.
    pub fn with_test(mut self, test: InlineTest) -> Self {
        self.tests.push(test);
        self
    }

    /// Records where the hook was defined.
    pub fn source(mut self, file: impl Into<String>, line: usize) -> Self {
        self.source = Some(Source {
            file: file.into(),
            line,
        });
        self
    }

    fn default_events(&self) -> Result<EventSet, DefError> {
        use EventKind::*;
        Ok(match &self.kind {
            Kind::Hook { .. } | Kind::On { .. } => {
                return Err(DefError::new(
                    "events",
                    "this kind has no default events; list the events to listen to",
                ));
            }
            Kind::WarnCommand { .. } => EventSet::of(&[PostToolUse]),
            // A guard on shell commands holds for every way Claude Code runs one: a Bash call
            // and a command a skill or slash-command file holds (where a rewrite is refused).
            Kind::BlockCommand { .. }
            | Kind::RewriteRegex { .. }
            | Kind::RewriteTo { .. }
            | Kind::RewriteWith { .. } => SHELL_GUARD_EVENTS,
            // An approval adds nothing to a skill's command (it runs unless refused).
            Kind::Approve { .. } => EventSet::of(&[PreToolUse, PermissionRequest]),
            Kind::Deny { .. } | Kind::Ask { .. } => SHELL_GUARD_EVENTS.with(PermissionRequest),
            Kind::Custom(c) => c.default_events,
            // Setting a field is a rewrite, which a skill's command would refuse outright.
            Kind::SetToolInput { .. } => EventSet::of(&[PreToolUse]),
        })
    }

    /// The label hashed into the name when no `name` is given.
    fn identity(&self) -> String {
        match &self.kind {
            Kind::Hook { message, .. } => short_hash(message),
            Kind::On { .. } => short_hash(
                &self
                    .source
                    .as_ref()
                    .map(|s| s.to_string())
                    .unwrap_or_default(),
            ),
            Kind::BlockCommand { reason, hint, .. } => {
                short_hash(&blocked_message(reason, hint.as_deref()))
            }
            Kind::WarnCommand { message, .. } => short_hash(message),
            Kind::RewriteRegex {
                pattern, replace, ..
            } => short_hash(&format!("{}\n{replace}", pattern.as_str())),
            Kind::RewriteTo { .. } => short_hash(
                &self
                    .source
                    .as_ref()
                    .map(|s| s.to_string())
                    .unwrap_or_default(),
            ),
            Kind::RewriteWith { label, .. } => slug(label),
            Kind::SetToolInput {
                tool, field, value, ..
            } => short_hash(&format!("{tool}\n{field}\n{value}")),
            Kind::Approve { label } => slug(label),
            Kind::Deny { reason } => slug(reason),
            Kind::Ask { reason } => slug(reason),
            Kind::Custom(c) => short_hash(&c.identity),
        }
    }

    /// Lowers the definition to a hook named under `stem`, applying the kind's defaults and
    /// checking everything that can be checked before an event arrives.
    pub fn build(self, stem: &str) -> Result<Hook, DefError> {
        let kind_name = self.kind.name();
        let events = match self.events {
            Some(e) if e.is_empty() => {
                return Err(DefError::new("events", "the event list is empty"));
            }
            Some(e) => e,
            None => self.default_events()?,
        };
        let suffix = match &self.name {
            Some(n) if !slug(n).is_empty() => slug(n),
            Some(_) => return Err(DefError::new("name", "the name has no letters or digits")),
            None => self.identity(),
        };
        let name = format!("{stem}:{kind_name}_{suffix}");

        let Lowered {
            guards,
            skip_guards,
            mut body,
            mut declarative,
            skip_planning_agents: default_skip_planning,
            default_max_fires,
            manages_repetition,
        } = self.kind.clone().lower()?;
        if let Some(c) = self.confirm {
            body = c.wrap(body, name.clone())?;
            // Its block now waits on a judge: after another hook's block it would only add a
            // paid call to a call that is refused anyway.
            declarative = false;
        }

        if self.is_async && events.intersects(DECISION_EVENTS) {
            return Err(DefError::new(
                "async",
                format!(
                    "an async hook on a decision event ({}) would have its verdict silently discarded",
                    events
                ),
            ));
        }
        if self.mandatory && (events.iter().any(|e| !e.is_guard()) || self.is_async) {
            return Err(DefError::new(
                "mandatory",
                format!("only synchronous hooks on guard events ({GUARD_EVENTS}) can be mandatory"),
            ));
        }
        if let Some(i) = never_matches(&self.only_if, events) {
            return Err(DefError::new(
                format!("only_if[{i}]"),
                format!(
                    "{} reads the tool call and can never match on {events}",
                    self.only_if[i]
                ),
            ));
        }
        if let Some(i) = never_matches(&self.skip_if, events) {
            return Err(DefError::new(
                format!("skip_if[{i}]"),
                format!(
                    "{} reads the tool call and can never match on {events}",
                    self.skip_if[i]
                ),
            ));
        }
        if !guards.is_empty() && never_matches(&guards, events).is_some() {
            return Err(DefError::new(
                "events",
                format!("{kind_name} guards a tool call and can never match on {events}"),
            ));
        }

        if !self.when.is_empty() {
            // A veto runs on the pool as a handler, and a handler has no way to ask.
            if matches!(body, Body::Ask { .. }) {
                return Err(DefError::new(
                    "when",
                    "an ask takes no `when` vetoes; say when it applies with conditions",
                ));
            }
            body = with_vetoes(body, self.when);
        }
        let mut only_if = guards;
        only_if.extend(self.only_if);
        let mut skip_if = skip_guards;
        skip_if.extend(self.skip_if);
        Ok(Hook {
            name,
            kind: kind_name,
            events,
            only_if,
            skip_if,
            body,
            declarative,
            advisory_on_deny: self.advisory_on_deny,
            skip_planning_agents: self.skip_planning_agents.unwrap_or(default_skip_planning),
            respect_gitignore: self.respect_gitignore,
            max_fires: match self.max_fires {
                MaxFires::Default => default_max_fires,
                MaxFires::Unlimited => None,
                MaxFires::Count(n) => Some(n),
            },
            is_async: self.is_async,
            mandatory: self.mandatory,
            approve: self.approve,
            repeat: self.repeat.unwrap_or(manages_repetition),
            self_limiting: manages_repetition,
            tests: self.tests,
            source: self.source,
            specialty: self.specialty,
        })
    }

    /// Marks the definition as asking a judge of `specialty`, so loading the project can check
    /// that its `config.toml` knows it.
    pub fn with_specialty(mut self, specialty: String) -> HookDef {
        self.specialty = Some(specialty);
        self
    }
}

/// What a kind lowers to before the definition's common fields apply: the guards it puts before
/// the user's conditions, its body and its defaults. Every kind, built-in or custom, goes through
/// this one shape.
struct Lowered {
    /// Conditions prepended to `only_if`.
    guards: Vec<Condition>,
    /// Conditions prepended to `skip_if`.
    skip_guards: Vec<Condition>,
    /// What the hook does once its conditions hold.
    body: Body,
    /// Message-only: still counts after another hook blocked.
    declarative: bool,
    /// Default for `skip_planning_agents`.
    skip_planning_agents: bool,
    /// Default for `max_fires`.
    default_max_fires: Option<u32>,
    /// The kind limits its own repetition at Stop.
    manages_repetition: bool,
}

impl Lowered {
    /// A kind with no skip guards, no fire cap and no repetition control of its own.
    fn of(guards: Vec<Condition>, body: Body, declarative: bool, skip_planning: bool) -> Lowered {
        Lowered {
            guards,
            skip_guards: Vec::new(),
            body,
            declarative,
            skip_planning_agents: skip_planning,
            default_max_fires: None,
            manages_repetition: false,
        }
    }
}

impl Kind {
    /// The kind's guards, body and defaults; `Err` for a definition that cannot work.
    fn lower(self) -> Result<Lowered, DefError> {
        let bash = || Condition::tool(&["Bash"]);
        let inline = |f: HandlerFn| {
            Body::Handler(Handler {
                func: f,
                inline: true,
            })
        };
        // A body is pure (run on the dispatching thread) unless it carries user code.
        let pure = match &self {
            Kind::RewriteRegex { note, .. }
            | Kind::RewriteWith { note, .. }
            | Kind::SetToolInput { note, .. } => !Note::is_user_code(note),
            _ => true,
        };
        let body_of = |f: HandlerFn, pure: bool| {
            Body::Handler(Handler {
                func: f,
                inline: pure,
            })
        };
        Ok(match self {
            Kind::Custom(c) => Lowered {
                guards: c.guards,
                skip_guards: c.skip_guards,
                body: Body::Handler(Handler {
                    func: c.handler,
                    inline: c.inline,
                }),
                declarative: false,
                skip_planning_agents: c.skip_planning_agents,
                default_max_fires: c.default_max_fires,
                manages_repetition: c.manages_repetition,
            },
            Kind::Hook { message, block } => {
                Lowered::of(vec![], Body::Message { message, block }, true, !block)
            }
            Kind::On { handler } => Lowered::of(
                vec![],
                Body::Handler(Handler {
                    func: handler,
                    inline: false,
                }),
                false,
                true,
            ),
            Kind::BlockCommand {
                matcher,
                reason,
                hint,
            } => {
                if reason.trim().is_empty() {
                    return Err(DefError::new("reason", "a block needs a reason"));
                }
                Lowered::of(
                    vec![bash(), matcher.condition()],
                    Body::Message {
                        message: blocked_message(&reason, hint.as_deref()),
                        block: true,
                    },
                    true,
                    false,
                )
            }
            Kind::WarnCommand { matcher, message } => {
                if message.trim().is_empty() {
                    return Err(DefError::new("message", "a warning needs a message"));
                }
                Lowered::of(
                    vec![bash(), matcher.condition()],
                    Body::Message {
                        message,
                        block: false,
                    },
                    true,
                    true,
                )
            }
            Kind::RewriteRegex {
                pattern,
                replace,
                note,
            } => {
                let p = pattern.clone();
                let f: HandlerFn = Arc::new(move |evt: &Event| {
                    let Some(cmd) = evt.command() else {
                        return Ok(None);
                    };
                    // The guard matches per parsed command (`rm x` in `rm x && make`), but the
                    // substitution works on the whole line: when the regex does not match the
                    // line there is nothing to substitute, and an unchanged "rewrite" would
                    // approve the call.
                    if !p.is_match(cmd) {
                        return Ok(None);
                    }
                    Ok(p.replace_all(cmd, &replace)
                        .and_then(|new| rewrite_command_input(evt, new, &note)))
                });
                Lowered::of(
                    vec![bash(), Condition::Command(pattern)],
                    body_of(f, pure),
                    false,
                    true,
                )
            }
            Kind::RewriteTo { to, block, note } => {
                let f: HandlerFn = Arc::new(move |evt: &Event| {
                    Ok(match to(evt) {
                        Some(new) => rewrite_command_input(evt, new, &note),
                        None => block.clone().map(HookResult::block),
                    })
                });
                // `to` is user code: it runs on the pool, under the deadline.
                let pooled = Body::Handler(Handler {
                    func: f,
                    inline: false,
                });
                Lowered::of(vec![bash()], pooled, false, true)
            }
            Kind::RewriteWith { rewriter, note, .. } => {
                let f: HandlerFn = Arc::new(move |evt: &Event| {
                    let Some(cmd) = evt.command() else {
                        return Ok(None);
                    };
                    Ok(rewriter
                        .rewrite(cmd)
                        .filter(|new| new != cmd)
                        .and_then(|new| rewrite_command_input(evt, new, &note)))
                });
                Lowered::of(vec![bash()], body_of(f, pure), false, true)
            }
            Kind::SetToolInput {
                tool,
                field,
                value,
                note,
            } => {
                if field.is_empty() {
                    return Err(DefError::new("field", "the field name is empty"));
                }
                let f: HandlerFn = Arc::new(move |evt: &Event| {
                    let Some(input) = evt.tool_input() else {
                        return Ok(None);
                    };
                    if input.contains_key(&field) {
                        return Ok(None);
                    }
                    let mut updated = input.clone();
                    updated.insert(field.clone(), value.clone());
                    Ok(Some(HookResult::rewrite(updated, Note::render(&note, evt))))
                });
                Lowered::of(
                    vec![Condition::tool(&[tool])],
                    body_of(f, pure),
                    false,
                    true,
                )
            }
            Kind::Approve { label } => {
                if label.trim().is_empty() {
                    return Err(DefError::new("label", "an approval needs a label"));
                }
                let f: HandlerFn = Arc::new(|_: &Event| Ok(Some(HookResult::allow())));
                Lowered::of(vec![], inline(f), false, true)
            }
            Kind::Deny { reason } => {
                if reason.trim().is_empty() {
                    return Err(DefError::new("reason", "a deny needs a reason"));
                }
                let f: HandlerFn =
                    Arc::new(move |_: &Event| Ok(Some(HookResult::block(reason.clone()))));
                Lowered::of(vec![], inline(f), false, true)
            }
            Kind::Ask { reason } => {
                if reason.trim().is_empty() {
                    return Err(DefError::new("reason", "an ask needs a reason"));
                }
                Lowered::of(vec![], Body::Ask { reason }, false, true)
            }
        })
    }
}

/// `body` behind `when` vetoes, run on the handler pool: the vetoes are user code, so they get
/// the deadline and failure handling a handler gets.
fn with_vetoes(body: Body, when: Vec<WhenFn>) -> Body {
    let func: HandlerFn = match body {
        Body::Message { message, block } => Arc::new(move |evt: &Event| {
            if !when.iter().all(|w| w(evt)) || message.is_empty() {
                return Ok(None);
            }
            Ok(Some(if block {
                HookResult::block(message.clone())
            } else {
                HookResult::warn(message.clone())
            }))
        }),
        Body::Handler(h) => Arc::new(move |evt: &Event| {
            if when.iter().all(|w| w(evt)) {
                (h.func)(evt)
            } else {
                Ok(None)
            }
        }),
        // Refused before this is reached (see the `when` check in the build).
        ask @ Body::Ask { .. } => return ask,
    };
    Body::Handler(Handler {
        func,
        inline: false,
    })
}

/// A rewrite of the event's tool input with `command` replaced; other keys are kept.
fn rewrite_command_input(evt: &Event, new: String, note: &Option<Note>) -> Option<HookResult> {
    let mut input = evt.tool_input().cloned().unwrap_or_default();
    input.insert("command".into(), Value::String(new));
    Some(HookResult::rewrite(input, Note::render(note, evt)))
}

//! The events Claude Code (and our host) can send, and sets of them.

use std::fmt;
use std::str::FromStr;

/// Declares the events once: the enum, its order, names, and which events carry a tool call
/// (`T`), a batch of tool calls (`B`), name a file outside a tool call (`F`), wait for a
/// decision (`D`) or guard a call (`G`: a failure to answer is never silent). Every other table of
/// per-event facts (envelopes, docs, `hooks.json`) is keyed by this enum.
macro_rules! events {
    ($($(#[doc = $doc:literal])* $name:ident [$($flag:ident)*],)*) => {
        /// One hook event. Declaration order matters: inline tests simulate a hook's first event
        /// in this order, and event sets print in it. Hook files name events exactly as the
        /// variants are spelled.
        #[derive(
            Debug,
            Clone,
            Copy,
            PartialEq,
            Eq,
            Hash,
            PartialOrd,
            Ord,
            serde::Deserialize,
            serde::Serialize,
            schemars::JsonSchema,
        )]
        pub enum EventKind {
            $($(#[doc = $doc])* $name,)*
        }

        impl EventKind {
            /// Every event, in declaration order.
            pub const ALL: [EventKind; EVENT_COUNT] = [$(EventKind::$name,)*];

            /// The event's name as Claude Code spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $(EventKind::$name => stringify!($name),)*
                }
            }

            const fn flags(self) -> &'static str {
                match self {
                    $(EventKind::$name => concat!($(stringify!($flag)),*),)*
                }
            }
        }
    };
}

/// How many events there are.
pub const EVENT_COUNT: usize = 35;

events! {
    /// Before a tool runs; the verdict can deny, allow or rewrite the call.
    PreToolUse [T D G],
    /// After a tool ran successfully.
    PostToolUse [T],
    /// After a tool failed.
    PostToolUseFailure [T],
    /// The user submitted a prompt.
    UserPromptSubmit [],
    /// The main agent wants to stop.
    Stop [D],
    /// A subagent wants to stop.
    SubagentStop [D],
    /// A subagent is starting.
    SubagentStart [],
    /// The conversation is about to be compacted.
    PreCompact [],
    /// Claude Code shows a notification.
    Notification [],
    /// A session starts or resumes.
    SessionStart [],
    /// A session ends.
    SessionEnd [],
    /// Claude Code is about to show a permission dialog.
    PermissionRequest [T D G],
    /// Claude Code is about to display assistant text.
    MessageDisplay [],
    /// The auto-mode classifier denied a tool call.
    PermissionDenied [T D],
    /// A batch of parallel tool calls resolved, before the next model call.
    PostToolBatch [B],
    /// A typed slash command or MCP prompt is about to expand.
    UserPromptExpansion [],
    /// A turn ended with an API error instead of a Stop.
    StopFailure [],
    /// The conversation was compacted.
    PostCompact [],
    /// Claude Code runs its setup (`--init`, `--maintenance`).
    Setup [],
    /// A task is being created.
    TaskCreated [D],
    /// A task is being marked complete.
    TaskCompleted [D],
    /// An agent-team teammate is about to go idle.
    TeammateIdle [D],
    /// A settings, policy or skill file changed.
    ConfigChange [F],
    /// A CLAUDE.md or rules file was loaded.
    InstructionsLoaded [F],
    /// The working directory changed.
    CwdChanged [],
    /// A watched file changed on disk.
    FileChanged [F],
    /// A directory was added to the session.
    DirectoryAdded [],
    /// A worktree is being created; a hook may supply its path.
    WorktreeCreate [D],
    /// A worktree is being removed.
    WorktreeRemove [],
    /// An MCP server asks the user for input.
    Elicitation [D],
    /// The user answered an MCP elicitation.
    ElicitationResult [D],
    /// Before a requested model switch (`/model`, the picker, the SDK's `set_model`); the
    /// verdict can refuse it.
    PreModelSwitch [D],
    /// After the session's model changed, for any reason; context reaches the new model.
    PostModelSwitch [],
    /// Before a shell command that a skill or slash-command file holds runs (`` !`cmd` ``): a
    /// Bash (or PowerShell) call in all but name, answered allow or deny only.
    PreSkillShellCommand [T D G],
    /// Sent by our host, not Claude Code: the machine is short of resources.
    ResourcePressure [],
}

impl EventKind {
    fn bit(self) -> u64 {
        1 << (self as u64)
    }

    /// True for events that carry one tool call (`tool_name`, `tool_input`).
    pub fn has_tool(self) -> bool {
        ONE_TOOL_EVENTS.contains(self)
    }

    /// True for PostToolBatch, whose payload lists several tool calls; tool conditions hold
    /// when one call of the batch satisfies them.
    pub fn has_tool_batch(self) -> bool {
        BATCH_EVENTS.contains(self)
    }

    /// True for events whose verdict Claude Code waits for and acts on; an async hook there
    /// would have its verdict discarded.
    pub fn is_decision(self) -> bool {
        DECISION_EVENTS.contains(self)
    }

    /// True for the events that guard a call (PreToolUse, PermissionRequest,
    /// PreSkillShellCommand): one that cannot be evaluated is answered visibly, never with
    /// silence.
    pub fn is_guard(self) -> bool {
        GUARD_EVENTS.contains(self)
    }

    /// The comma-separated list of valid names, for error messages.
    pub fn valid_names() -> String {
        EventKind::ALL.map(EventKind::name).join(", ")
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an unknown event name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Invalid event type: '{name}'. Valid event names are: {}",
    EventKind::valid_names()
)]
pub struct UnknownEvent {
    /// The name that matched no event.
    pub name: String,
}

impl FromStr for EventKind {
    type Err = UnknownEvent;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventKind::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| UnknownEvent { name: s.to_owned() })
    }
}

/// A set of events, iterated in declaration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EventSet(u64);

/// Events whose payload carries one tool call.
const ONE_TOOL_EVENTS: EventSet = EventSet::matching('T');

/// Events whose payload lists several tool calls.
const BATCH_EVENTS: EventSet = EventSet::matching('B');

/// Events whose payload carries tool calls (one, or PostToolBatch's list).
pub const TOOL_EVENTS: EventSet = ONE_TOOL_EVENTS.union(BATCH_EVENTS);

/// Events about a file that is not a tool call's (`file_path` conditions apply).
pub const FILE_EVENTS: EventSet = EventSet::matching('F');

/// Events whose verdict Claude Code waits for; an async hook on one would be discarded.
pub const DECISION_EVENTS: EventSet = EventSet::matching('D');

/// Events that guard a call; Claude Code 2.1.332 treats the same three specially (a guard
/// entry it cannot load refuses its whole file or plugin).
pub const GUARD_EVENTS: EventSet = EventSet::matching('G');

/// The events before a shell command runs: a Bash tool call, and a command a skill or slash
/// command file holds. A guard on shell commands listens to both by default.
pub const SHELL_GUARD_EVENTS: EventSet =
    EventSet((1 << EventKind::PreToolUse as u64) | (1 << EventKind::PreSkillShellCommand as u64));

impl EventSet {
    /// The empty set.
    pub const EMPTY: EventSet = EventSet(0);

    /// Every event.
    pub const ALL: EventSet = EventSet((1 << EVENT_COUNT as u64) - 1);

    /// The events whose flags hold `flag` (const, so the sets above are computed once).
    const fn matching(flag: char) -> EventSet {
        let mut bits = 0u64;
        let mut i = 0;
        while i < EVENT_COUNT {
            let flags = EventKind::ALL[i].flags().as_bytes();
            let mut j = 0;
            while j < flags.len() {
                if flags[j] == flag as u8 {
                    bits |= 1 << i;
                }
                j += 1;
            }
            i += 1;
        }
        EventSet(bits)
    }

    /// The union of two sets.
    pub const fn union(self, other: EventSet) -> EventSet {
        EventSet(self.0 | other.0)
    }

    /// A set of the given events.
    pub fn of(events: &[EventKind]) -> EventSet {
        events.iter().fold(EventSet::EMPTY, |s, e| s.with(*e))
    }

    /// This set plus `e`.
    pub fn with(self, e: EventKind) -> EventSet {
        EventSet(self.0 | e.bit())
    }

    /// True when `e` is in the set.
    pub fn contains(self, e: EventKind) -> bool {
        self.0 & e.bit() != 0
    }

    /// True when the two sets share an event.
    pub fn intersects(self, other: EventSet) -> bool {
        self.0 & other.0 != 0
    }

    /// True for the empty set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The members in declaration order.
    pub fn iter(self) -> impl Iterator<Item = EventKind> {
        EventKind::ALL
            .into_iter()
            .filter(move |e| self.contains(*e))
    }

    /// The first member in declaration order.
    pub fn first(self) -> Option<EventKind> {
        self.iter().next()
    }
}

impl fmt::Display for EventSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(EventKind::name).collect();
        f.write_str(&names.join("|"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_lists_valid_names() {
        for e in EventKind::ALL {
            assert_eq!(e.name().parse::<EventKind>().unwrap(), e);
        }
        let err = "Bogus".parse::<EventKind>().unwrap_err().to_string();
        assert!(err.starts_with("Invalid event type: 'Bogus'. Valid event names are: PreToolUse"));
        assert!(err.contains("ResourcePressure"));
    }

    #[test]
    fn sets_iterate_in_declaration_order() {
        let s = EventSet::of(&[EventKind::Stop, EventKind::PreToolUse]);
        assert_eq!(s.first(), Some(EventKind::PreToolUse));
        assert_eq!(s.to_string(), "PreToolUse|Stop");
        assert!(s.intersects(TOOL_EVENTS));
        assert!(!EventSet::of(&[EventKind::Stop]).intersects(TOOL_EVENTS));
    }

    #[test]
    fn guard_events_are_the_three_claude_code_names() {
        let names: Vec<&str> = GUARD_EVENTS.iter().map(EventKind::name).collect();
        assert_eq!(
            names,
            ["PreToolUse", "PermissionRequest", "PreSkillShellCommand"]
        );
        assert!(EventKind::PreSkillShellCommand.has_tool());
        assert!(!EventKind::PreModelSwitch.is_guard());
        // The client reads the proto's list without this table; the two name the same events.
        assert_eq!(names, capt_hook_proto::failure::GUARDED_EVENTS);
        assert_eq!(
            SHELL_GUARD_EVENTS.to_string(),
            "PreToolUse|PreSkillShellCommand"
        );
    }
}

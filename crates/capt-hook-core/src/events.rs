//! The events Claude Code (and our host) can send, and sets of them.

use std::fmt;
use std::str::FromStr;

/// One hook event. Declaration order matters: inline tests simulate a hook's first event in this
/// order, and event sets print in it. Hook files name events exactly as the variants are spelled.
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
    /// Before a tool runs; the verdict can deny, allow or rewrite the call.
    PreToolUse,
    /// After a tool ran successfully.
    PostToolUse,
    /// After a tool failed.
    PostToolUseFailure,
    /// The user submitted a prompt.
    UserPromptSubmit,
    /// The main agent wants to stop.
    Stop,
    /// A subagent wants to stop.
    SubagentStop,
    /// A subagent is starting.
    SubagentStart,
    /// The conversation is about to be compacted.
    PreCompact,
    /// Claude Code shows a notification.
    Notification,
    /// A session starts or resumes.
    SessionStart,
    /// A session ends.
    SessionEnd,
    /// Claude Code is about to show a permission dialog.
    PermissionRequest,
    /// Claude Code is about to display a message.
    MessageDisplay,
    /// Sent by our host, not Claude Code: the machine is short of resources.
    ResourcePressure,
}

impl EventKind {
    /// Every event, in declaration order.
    pub const ALL: [EventKind; 14] = [
        EventKind::PreToolUse,
        EventKind::PostToolUse,
        EventKind::PostToolUseFailure,
        EventKind::UserPromptSubmit,
        EventKind::Stop,
        EventKind::SubagentStop,
        EventKind::SubagentStart,
        EventKind::PreCompact,
        EventKind::Notification,
        EventKind::SessionStart,
        EventKind::SessionEnd,
        EventKind::PermissionRequest,
        EventKind::MessageDisplay,
        EventKind::ResourcePressure,
    ];

    /// The event's name as Claude Code spells it.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::PreToolUse => "PreToolUse",
            EventKind::PostToolUse => "PostToolUse",
            EventKind::PostToolUseFailure => "PostToolUseFailure",
            EventKind::UserPromptSubmit => "UserPromptSubmit",
            EventKind::Stop => "Stop",
            EventKind::SubagentStop => "SubagentStop",
            EventKind::SubagentStart => "SubagentStart",
            EventKind::PreCompact => "PreCompact",
            EventKind::Notification => "Notification",
            EventKind::SessionStart => "SessionStart",
            EventKind::SessionEnd => "SessionEnd",
            EventKind::PermissionRequest => "PermissionRequest",
            EventKind::MessageDisplay => "MessageDisplay",
            EventKind::ResourcePressure => "ResourcePressure",
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// True for events that carry a tool call.
    pub fn has_tool(self) -> bool {
        TOOL_EVENTS.contains(self)
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
pub struct EventSet(u16);

/// Events whose payload carries a tool call.
pub const TOOL_EVENTS: EventSet = EventSet(
    (1 << EventKind::PreToolUse as u16)
        | (1 << EventKind::PostToolUse as u16)
        | (1 << EventKind::PostToolUseFailure as u16)
        | (1 << EventKind::PermissionRequest as u16),
);

/// Events whose verdict Claude Code waits for; an async hook on one would be discarded.
pub const DECISION_EVENTS: EventSet = EventSet(
    (1 << EventKind::PreToolUse as u16)
        | (1 << EventKind::PermissionRequest as u16)
        | (1 << EventKind::Stop as u16)
        | (1 << EventKind::SubagentStop as u16),
);

impl EventSet {
    /// The empty set.
    pub const EMPTY: EventSet = EventSet(0);

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
}

//! Is the session waiting on background work? The transcript half of the `waiting` condition
//! (engine.md §2.6 items 2–4; item 1, the payload's `background_tasks` and `session_crons`, is
//! the engine's).

use crate::entry::{EntryKind, ToolCall};
use crate::names::tool_name_is;
use crate::transcript::Transcript;

/// Tools whose use in the current turn means the agent expects to be woken up later
/// (`HOOKS_WAITING_TOOLS` replaces the list).
pub const DEFAULT_WAITING_TOOLS: &[&str] =
    &["Monitor", "TeamCreate", "ScheduleWakeup", "SendMessage"];

const NOTIFICATION: &str = "<task-notification>";

fn marker(tool_use_id: &str) -> String {
    format!("<tool-use-id>{tool_use_id}</tool-use-id>")
}

/// The notification queue replayed from `queue-operation` lines: `enqueue` appends, `dequeue`
/// and `remove` drop the head, `popAll` drops every queued item its content contains.
#[derive(Clone, Debug, Default)]
pub struct Notifications<'t> {
    queued: Vec<&'t str>,
    enqueued: Vec<&'t str>,
    delivered: Vec<&'t str>,
}

impl<'t> Notifications<'t> {
    fn replay(t: &'t Transcript) -> Notifications<'t> {
        let mut n = Notifications::default();
        for e in t.entries() {
            match e.kind() {
                EntryKind::QueueOperation => match e.detail() {
                    Some("enqueue") => {
                        n.enqueued.push(e.text());
                        n.queued.push(e.text());
                    }
                    Some("dequeue" | "remove") if !n.queued.is_empty() => {
                        n.queued.remove(0);
                    }
                    Some("popAll") => {
                        let content = e.text();
                        n.queued.retain(|q| !content.contains(q));
                    }
                    _ => {}
                },
                // A notification that reached the model shows up as a user line carrying it,
                // or as a replayed queued command.
                EntryKind::User if e.text().contains(NOTIFICATION) => n.delivered.push(e.text()),
                EntryKind::Attachment if e.detail() == Some("queued_command") => {
                    n.delivered.push(e.text())
                }
                _ => {}
            }
        }
        n
    }

    /// Queued items not yet delivered.
    pub fn queued(&self) -> &[&'t str] {
        &self.queued
    }

    /// True when an undelivered `<task-notification>` sits in the queue.
    pub fn has_pending(&self) -> bool {
        self.queued.iter().any(|q| q.contains(NOTIFICATION))
    }

    /// True when the completion notification of `tool_use_id` is still queued.
    pub fn pending(&self, tool_use_id: &str) -> bool {
        let m = marker(tool_use_id);
        self.queued.iter().any(|q| q.contains(&m))
    }

    /// True when the completion notification of `tool_use_id` reached the agent: delivered, or
    /// enqueued once and no longer queued.
    pub fn completed(&self, tool_use_id: &str) -> bool {
        let m = marker(tool_use_id);
        self.delivered.iter().any(|d| d.contains(&m))
            || (self.enqueued.iter().any(|q| q.contains(&m))
                && !self.queued.iter().any(|q| q.contains(&m)))
    }
}

/// Why a call keeps the session waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PendingKind {
    /// A waiting tool (Monitor, SendMessage, …) used in the current turn.
    WaitingTool,
    /// A Bash, Agent or Task call with `run_in_background` in the current turn.
    Background,
    /// An Agent or Task call without `subagent_type` (a fork) in the current turn.
    Fork,
    /// An async Agent/Task launch whose completion notification has not been delivered.
    AsyncAgent,
    /// A Workflow launch whose completion notification has not been delivered.
    Workflow,
}

/// One call that keeps the session waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending<'t> {
    /// The call's tool-use id.
    pub tool_use_id: &'t str,
    /// The tool name as invoked.
    pub name: &'t str,
    /// Why it counts.
    pub kind: PendingKind,
}

/// The transcript's answer to "is the session waiting on background work?".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Waiting<'t> {
    /// True when an undelivered task notification is queued.
    pub notification_queued: bool,
    /// Calls that keep the session waiting, in file order.
    pub pending: Vec<Pending<'t>>,
}

impl Waiting<'_> {
    /// True when anything keeps the session waiting.
    pub fn is_waiting(&self) -> bool {
        self.notification_queued || !self.pending.is_empty()
    }
}

fn ephemeral(call: &ToolCall, waiting_tools: &[&str]) -> Option<PendingKind> {
    if waiting_tools.iter().any(|w| tool_name_is(call.name(), w)) {
        return Some(PendingKind::WaitingTool);
    }
    let agent = tool_name_is(call.name(), "Agent");
    if (agent || tool_name_is(call.name(), "Bash")) && call.input_flag("run_in_background") {
        return Some(PendingKind::Background);
    }
    if agent && call.input_str("subagent_type").is_none() {
        return Some(PendingKind::Fork);
    }
    None
}

impl Transcript {
    /// The notification queue replayed from the transcript.
    pub fn notifications(&self) -> Notifications<'_> {
        Notifications::replay(self)
    }

    /// Waiting, from the transcript: an undelivered task notification is queued; or in the
    /// current turn a waiting tool was used, a Bash/Agent/Task call ran in the background, or an
    /// Agent/Task call had no `subagent_type` (a fork); or anywhere in the session an async
    /// Agent/Task launch or a Workflow launch has no delivered completion notification. Calls
    /// whose result is an error never count. An empty transcript is not waiting.
    pub fn waiting(&self, waiting_tools: &[&str]) -> Waiting<'_> {
        let notes = self.notifications();
        let turn_start = self.current_turn().range().start;
        let mut out = Waiting {
            notification_queued: notes.has_pending(),
            pending: Vec::new(),
        };
        for call in self.calls() {
            let result = self.result_of(call.id());
            if result.is_some_and(|r| r.is_error()) {
                continue;
            }
            let current = call.entry as usize >= turn_start;
            let kind = current
                .then(|| ephemeral(call, waiting_tools))
                .flatten()
                .or_else(|| {
                    if tool_name_is(call.name(), "Agent") {
                        (result.is_some_and(|r| r.is_async()) && !notes.completed(call.id()))
                            .then_some(PendingKind::AsyncAgent)
                    } else if call.name() == "Workflow" {
                        (!notes.completed(call.id())).then_some(PendingKind::Workflow)
                    } else {
                        None
                    }
                });
            if let Some(kind) = kind
                && !out.pending.iter().any(|p| p.tool_use_id == call.id())
            {
                out.pending.push(Pending {
                    tool_use_id: call.id(),
                    name: call.name(),
                    kind,
                });
            }
        }
        out
    }
}

//! Handlers that receive their event's typed payload: `on_typed(|evt, p: &StopPayload| …)`
//! listens to Stop and hands over every field Claude Code documents for it.
//!
//! The payload is parsed when the handler runs, never on the dispatch path of other hooks. A
//! payload that does not have its event's shape is a handler failure (so a guarded call is left
//! to the user, never passed silently), with the field named.
//!
//! On PostToolBatch a hook sees the batch one call at a time (the first call that satisfies its
//! conditions), as tool conditions do: `PostToolBatchPayload::tool_calls` is then absent and the
//! call's `tool_name`, `tool_input` and `tool_response` are in `extra` and the event's accessors.

use capt_hook_core::payload::{self, Payload};
use capt_hook_core::{Event, EventKind};

use crate::hook::{HandlerError, HandlerResult};
use crate::primitives::{HookDef, on};

/// A payload struct of [`capt_hook_core::payload`] and the events that carry it.
pub trait TypedPayload: Sized + Send + Sync + 'static {
    /// The events whose payload has this shape.
    const EVENTS: &'static [EventKind];

    /// The struct inside `payload`, when `payload` is one of [`TypedPayload::EVENTS`].
    fn from_payload(payload: Payload) -> Option<Self>;
}

macro_rules! typed {
    ($($ty:ident: $($kind:ident)|+;)*) => {
        $(
            impl TypedPayload for payload::$ty {
                const EVENTS: &'static [EventKind] = &[$(EventKind::$kind),+];

                fn from_payload(payload: Payload) -> Option<Self> {
                    match payload {
                        $(Payload::$kind(p) => Some(p),)+
                        _ => None,
                    }
                }
            }
        )*
    };
}

typed! {
    PreToolUsePayload: PreToolUse;
    PostToolUsePayload: PostToolUse;
    PostToolUseFailurePayload: PostToolUseFailure;
    PostToolBatchPayload: PostToolBatch;
    PermissionRequestPayload: PermissionRequest;
    PermissionDeniedPayload: PermissionDenied;
    UserPromptSubmitPayload: UserPromptSubmit;
    UserPromptExpansionPayload: UserPromptExpansion;
    MessageDisplayPayload: MessageDisplay;
    StopPayload: Stop;
    SubagentStopPayload: SubagentStop;
    StopFailurePayload: StopFailure;
    SubagentStartPayload: SubagentStart;
    PreCompactPayload: PreCompact;
    PostCompactPayload: PostCompact;
    NotificationPayload: Notification;
    SessionStartPayload: SessionStart;
    SessionEndPayload: SessionEnd;
    SetupPayload: Setup;
    TaskPayload: TaskCreated | TaskCompleted;
    TeammateIdlePayload: TeammateIdle;
    ConfigChangePayload: ConfigChange;
    InstructionsLoadedPayload: InstructionsLoaded;
    CwdChangedPayload: CwdChanged;
    FileChangedPayload: FileChanged;
    DirectoryAddedPayload: DirectoryAdded;
    WorktreeCreatePayload: WorktreeCreate;
    WorktreeRemovePayload: WorktreeRemove;
    ElicitationPayload: Elicitation;
    ElicitationResultPayload: ElicitationResult;
    ModelSwitchPayload: PreModelSwitch | PostModelSwitch;
    PreSkillShellCommandPayload: PreSkillShellCommand;
    ResourcePressurePayload: ResourcePressure;
}

/// The event's payload as `P`; an error names the field that does not fit.
pub fn payload_of<P: TypedPayload>(evt: &Event) -> Result<P, HandlerError> {
    let parsed = evt.typed().map_err(|e| HandlerError::new(e.to_string()))?;
    let kind = parsed.kind();
    P::from_payload(parsed).ok_or_else(|| {
        HandlerError::new(format!(
            "a {kind} event has no {} payload",
            std::any::type_name::<P>()
                .rsplit("::")
                .next()
                .unwrap_or("typed")
        ))
    })
}

/// A handler hook on the events of `P`, given the event and its typed payload.
#[track_caller]
pub fn on_typed<P, F>(handler: F) -> HookDef
where
    P: TypedPayload,
    F: Fn(&Event, &P) -> HandlerResult + Send + Sync + 'static,
{
    on(P::EVENTS, move |evt: &Event| {
        let payload = payload_of::<P>(evt)?;
        handler(evt, &payload)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use capt_hook_core::EventContext;
    use serde_json::json;

    #[test]
    fn every_event_has_one_typed_payload() {
        let mut seen: Vec<EventKind> = Vec::new();
        fn add<P: TypedPayload>(seen: &mut Vec<EventKind>) {
            seen.extend_from_slice(P::EVENTS);
        }
        use payload::*;
        add::<PreToolUsePayload>(&mut seen);
        add::<PostToolUsePayload>(&mut seen);
        add::<PostToolUseFailurePayload>(&mut seen);
        add::<PostToolBatchPayload>(&mut seen);
        add::<PermissionRequestPayload>(&mut seen);
        add::<PermissionDeniedPayload>(&mut seen);
        add::<UserPromptSubmitPayload>(&mut seen);
        add::<UserPromptExpansionPayload>(&mut seen);
        add::<MessageDisplayPayload>(&mut seen);
        add::<StopPayload>(&mut seen);
        add::<SubagentStopPayload>(&mut seen);
        add::<StopFailurePayload>(&mut seen);
        add::<SubagentStartPayload>(&mut seen);
        add::<PreCompactPayload>(&mut seen);
        add::<PostCompactPayload>(&mut seen);
        add::<NotificationPayload>(&mut seen);
        add::<SessionStartPayload>(&mut seen);
        add::<SessionEndPayload>(&mut seen);
        add::<SetupPayload>(&mut seen);
        add::<TaskPayload>(&mut seen);
        add::<TeammateIdlePayload>(&mut seen);
        add::<ConfigChangePayload>(&mut seen);
        add::<InstructionsLoadedPayload>(&mut seen);
        add::<CwdChangedPayload>(&mut seen);
        add::<FileChangedPayload>(&mut seen);
        add::<DirectoryAddedPayload>(&mut seen);
        add::<WorktreeCreatePayload>(&mut seen);
        add::<WorktreeRemovePayload>(&mut seen);
        add::<ElicitationPayload>(&mut seen);
        add::<ElicitationResultPayload>(&mut seen);
        add::<ModelSwitchPayload>(&mut seen);
        add::<PreSkillShellCommandPayload>(&mut seen);
        add::<ResourcePressurePayload>(&mut seen);
        for kind in EventKind::ALL {
            assert_eq!(
                seen.iter().filter(|k| **k == kind).count(),
                1,
                "{kind} needs exactly one typed payload"
            );
            // Each event's own (empty) payload converts to its struct.
            let evt = Event::new(kind, json!({}), EventContext::default())
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(evt.typed().is_ok(), "{kind}");
        }
        assert_eq!(seen.len(), EventKind::ALL.len());
    }

    #[test]
    fn a_batch_handler_sees_one_call_at_a_time() {
        use std::sync::Arc;

        use crate::dispatch::{DispatchOptions, Dispatcher};
        use crate::registry::Registry;
        use crate::reply::Reply;

        let mut reg = Registry::new();
        let def = on_typed(|evt, p: &payload::PostToolBatchPayload| {
            let tool = p.extra.get("tool_name").and_then(|t| t.as_str());
            evt.warn(format!(
                "calls listed: {}, this call: {}",
                p.tool_calls.is_some(),
                tool.unwrap_or("?")
            ))
        })
        .only_if(crate::cond::tool(&["Read"]));
        reg.add("t", def).unwrap_or_else(|e| panic!("{e}"));
        let evt = Event::new(
            EventKind::PostToolBatch,
            json!({"tool_calls": [
                {"tool_name": "Bash", "tool_input": {"command": "ls"}},
                {"tool_name": "Read", "tool_input": {"file_path": "a.py"}},
            ]}),
            EventContext::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let r = Dispatcher::new(Arc::new(reg), None)
            .dispatch(&Arc::new(evt), DispatchOptions::default())
            .unwrap_or_else(|| panic!("the Read call matches"));
        assert_eq!(
            r.message.as_deref(),
            Some("calls listed: false, this call: Read")
        );
    }

    #[test]
    fn a_payload_of_the_wrong_shape_names_the_field() {
        let evt = Event::new(
            EventKind::Stop,
            json!({"stop_hook_active": "yes"}),
            EventContext::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let err = payload_of::<payload::StopPayload>(&evt).unwrap_err();
        assert!(err.0.contains("stop_hook_active"), "{err}");
        let ok = Event::new(
            EventKind::Stop,
            json!({"stop_hook_active": true}),
            EventContext::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(payload_of::<payload::StopPayload>(&ok).is_ok_and(|p| p.stop_hook_active()));
        let err = payload_of::<payload::SessionEndPayload>(&ok).unwrap_err();
        assert!(
            err.0.contains("Stop event has no SessionEndPayload"),
            "{err}"
        );
    }
}

//! Our answer as a typed verdict, for the readers that speak another agent's protocol: read off
//! the typed [`Output`] this module renders, before it is rendered, so the envelope's shape stays
//! known here alone (the agents' adapters build their own answers from [`Verdict`]).

use serde_json::{Map, Value};

use super::Output;
use crate::events::EventKind;

/// What the answer decides.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Decision {
    /// Nothing: the agent goes on as it would.
    #[default]
    None,
    /// Permission granted.
    Allow,
    /// Refused or blocked, with the reason.
    Block(String),
    /// Left to the user, with the reason.
    Ask(String),
    /// Run with this input instead (Claude Code's keys).
    Rewrite(Map<String, Value>),
}

/// An answer, typed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    /// The decision.
    pub decision: Decision,
    /// Text for the agent (`additionalContext`).
    pub context: Vec<String>,
    /// Text for the user (`systemMessage`).
    pub notices: Vec<String>,
    /// Stop the whole session (`continue: false`), with the reason shown.
    pub halt: Option<String>,
}

impl Verdict {
    /// The answer when no hook could check `kind`'s event (`why`): a guarded call is left to the
    /// user, as the Claude Code client does with a failed hook; elsewhere the user is told.
    pub fn failed(kind: EventKind, why: String) -> Verdict {
        let mut v = Verdict::default();
        if kind.is_guard() {
            v.decision = Decision::Ask(why);
        } else {
            v.notices.push(why);
        }
        v
    }
}

/// The answer `out` (what [`super::envelope`] and friends return for `kind`) as a [`Verdict`].
/// Exit 2 is a block; text that is not JSON (PreCompact's instructions) is context.
pub fn verdict(kind: EventKind, out: Option<&Output>) -> Verdict {
    let mut v = Verdict::default();
    match out {
        None => {}
        Some(Output::Exit2(reason)) => {
            v.decision = Decision::Block(nonempty(reason.trim(), "blocked by a hook"));
        }
        // WorktreeCreate's path is for Claude Code alone; no other agent has the event.
        Some(Output::Text(_)) if kind == EventKind::WorktreeCreate => {}
        Some(Output::Text(t)) if !t.trim().is_empty() => v.context.push(t.trim().to_owned()),
        Some(Output::Text(_)) => {}
        Some(Output::Json(Value::Object(obj))) => read(obj, &mut v),
        // The renderers never produce another JSON value.
        Some(Output::Json(_)) => {}
    }
    v
}

fn read(obj: &Map<String, Value>, v: &mut Verdict) {
    let s = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
    if let Some(m) = s(obj, "systemMessage").filter(|m| !m.is_empty()) {
        v.notices.push(m);
    }
    if obj.get("continue") == Some(&Value::Bool(false)) {
        v.halt = Some(s(obj, "stopReason").unwrap_or_default());
    }
    if s(obj, "decision").as_deref() == Some("block") {
        v.decision = Decision::Block(nonempty(
            &s(obj, "reason").unwrap_or_default(),
            "blocked by a hook",
        ));
    }
    let Some(hso) = obj.get("hookSpecificOutput").and_then(Value::as_object) else {
        return;
    };
    if let Some(c) = s(hso, "additionalContext").filter(|c| !c.is_empty()) {
        v.context.push(c);
    }
    let updated = hso.get("updatedInput").and_then(Value::as_object).cloned();
    let reason = s(hso, "permissionDecisionReason").unwrap_or_default();
    match s(hso, "permissionDecision").as_deref() {
        Some("deny") => v.decision = Decision::Block(nonempty(&reason, "denied by a hook")),
        Some("ask") => v.decision = Decision::Ask(nonempty(&reason, "a hook asks you first")),
        Some("allow") => v.decision = updated.map(Decision::Rewrite).unwrap_or(Decision::Allow),
        _ => {}
    }
    // PermissionRequest's form.
    if let Some(d) = hso.get("decision").and_then(Value::as_object) {
        match s(d, "behavior").as_deref() {
            Some("deny") => {
                v.decision = Decision::Block(nonempty(
                    &s(d, "message").unwrap_or_default(),
                    "denied by a hook",
                ));
            }
            Some("allow") => {
                v.decision = d
                    .get("updatedInput")
                    .and_then(Value::as_object)
                    .cloned()
                    .map(Decision::Rewrite)
                    .unwrap_or(Decision::Allow);
            }
            _ => {}
        }
    }
}

fn nonempty(text: &str, otherwise: &str) -> String {
    if text.trim().is_empty() {
        otherwise.to_owned()
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::{Notes, Unchecked, envelope, with_notes};
    use crate::result::HookResult;
    use serde_json::json;

    #[test]
    fn each_verdict_reads_back_from_the_output_it_renders() {
        let pre = EventKind::PreToolUse;
        let deny = envelope(pre, Some(&HookResult::block("no")));
        assert_eq!(
            verdict(pre, deny.as_ref()).decision,
            Decision::Block("no".into())
        );
        let ask = Unchecked::because("unsure").output(pre);
        assert_eq!(
            verdict(pre, ask.as_ref()).decision,
            Decision::Ask("unsure".into())
        );
        let warned = with_notes(
            pre,
            envelope(pre, Some(&HookResult::warn("careful"))),
            &Notes {
                notices: vec!["a hook file did not load".into()],
                context: Vec::new(),
            },
        );
        let v = verdict(pre, warned.as_ref());
        assert_eq!(v.context, ["careful"]);
        assert_eq!(v.notices, ["a hook file did not load"]);
        let stop = envelope(EventKind::Stop, Some(&HookResult::block("go on")));
        assert_eq!(
            verdict(EventKind::Stop, stop.as_ref()).decision,
            Decision::Block("go on".into())
        );
        let exit2 = Output::Exit2("  not done ".into());
        assert_eq!(
            verdict(EventKind::TaskCompleted, Some(&exit2)).decision,
            Decision::Block("not done".into())
        );
        let rewrite = Output::Json(json!({"hookSpecificOutput": {
            "permissionDecision": "allow", "updatedInput": {"command": "ls -a"}}}));
        let Decision::Rewrite(input) = verdict(pre, Some(&rewrite)).decision else {
            panic!("a rewrite");
        };
        assert_eq!(input["command"], "ls -a");
        let halt = Output::Json(json!({"continue": false, "stopReason": "out of budget"}));
        assert_eq!(
            verdict(EventKind::PostToolUse, Some(&halt)).halt.as_deref(),
            Some("out of budget")
        );
        let text = Output::Text("keep the plan\n".into());
        assert_eq!(
            verdict(EventKind::PreCompact, Some(&text)).context,
            ["keep the plan"]
        );
        assert_eq!(verdict(pre, None), Verdict::default());
    }

    #[test]
    fn a_failed_check_asks_on_a_guard_and_tells_elsewhere() {
        let v = Verdict::failed(EventKind::PreToolUse, "down".into());
        assert_eq!(v.decision, Decision::Ask("down".into()));
        let v = Verdict::failed(EventKind::PostToolUse, "down".into());
        assert_eq!(
            (v.decision, v.notices),
            (Decision::None, vec!["down".into()])
        );
    }
}

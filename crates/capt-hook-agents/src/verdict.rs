//! Our answer, read back as a typed verdict, and settled to what one agent's event can carry.
//!
//! The engine renders Claude Code's envelope (capt-hook-core's `envelope` owns that shape); this
//! reads it once into a [`Verdict`] so every agent's renderer works from the same facts.
//! [`landing`] is the one rule for what becomes of a verdict an event cannot carry; the
//! renderers and the docs matrix both read it.

use capt_hook_core::EventKind;
use serde_json::{Map, Value};

use crate::agent::AgentError;
use crate::render::Answer;
use crate::table::Accepts;

/// What the answer decides.
#[derive(Debug, Clone, PartialEq, Default)]
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

impl Decision {
    /// Higher is more restrictive: the fold over several calls keeps the highest.
    fn rank(&self) -> u8 {
        match self {
            Decision::None => 0,
            Decision::Allow => 1,
            Decision::Rewrite(_) => 2,
            Decision::Ask(_) => 3,
            Decision::Block(_) => 4,
        }
    }
}

/// An answer, typed.
#[derive(Debug, Clone, PartialEq, Default)]
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

/// Reads our answer to `kind`. Exit 2 is a block with stderr as the reason. Another failure on
/// an event that guards a call leaves the call to the user (as the Claude Code client does);
/// elsewhere it is a notice. Text that is not JSON (PreCompact's instructions) is context.
pub fn read(kind: EventKind, answer: &Answer) -> Result<Verdict, AgentError> {
    let mut v = Verdict::default();
    let err_line = answer
        .stderr
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim();
    match answer.exit {
        0 => {}
        2 => {
            v.decision = Decision::Block(nonempty(answer.stderr.trim(), "blocked by a hook"));
            return Ok(v);
        }
        code => {
            let why = format!("capt-hook could not check this call (exit {code}): {err_line}");
            if kind.is_guard() {
                v.decision = Decision::Ask(why);
            } else {
                v.notices.push(why);
            }
            return Ok(v);
        }
    }
    let text = answer.stdout.trim();
    if text.is_empty() {
        return Ok(v);
    }
    let obj = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(obj)) => obj,
        Ok(_) => {
            return Err(AgentError::Envelope {
                event: kind.name().to_owned(),
                problem: "JSON that is not an object".into(),
            });
        }
        Err(_) => {
            v.context.push(text.to_owned());
            return Ok(v);
        }
    };
    let s = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
    if let Some(m) = s(&obj, "systemMessage").filter(|m| !m.is_empty()) {
        v.notices.push(m);
    }
    if obj.get("continue") == Some(&Value::Bool(false)) {
        v.halt = Some(s(&obj, "stopReason").unwrap_or_default());
    }
    if s(&obj, "decision").as_deref() == Some("block") {
        v.decision = Decision::Block(nonempty(
            &s(&obj, "reason").unwrap_or_default(),
            "blocked by a hook",
        ));
    }
    let Some(hso) = obj.get("hookSpecificOutput").and_then(Value::as_object) else {
        return Ok(v);
    };
    if let Some(c) = s(hso, "additionalContext").filter(|c| !c.is_empty()) {
        v.context.push(c);
    }
    let updated = hso.get("updatedInput").and_then(Value::as_object).cloned();
    let reason = s(hso, "permissionDecisionReason").unwrap_or_default();
    match s(hso, "permissionDecision").as_deref() {
        Some("deny") => v.decision = Decision::Block(nonempty(&reason, "denied by a hook")),
        Some("ask") => v.decision = Decision::Ask(nonempty(&reason, "a hook asks you first")),
        Some("allow") => {
            v.decision = updated
                .clone()
                .map(Decision::Rewrite)
                .unwrap_or(Decision::Allow)
        }
        _ => {}
    }
    // PermissionRequest's form.
    if let Some(d) = hso.get("decision").and_then(Value::as_object) {
        match s(d, "behavior").as_deref() {
            Some("deny") => {
                v.decision = Decision::Block(nonempty(
                    &s(d, "message").unwrap_or_default(),
                    "denied by a hook",
                ))
            }
            Some("allow") => {
                v.decision = d
                    .get("updatedInput")
                    .and_then(Value::as_object)
                    .cloned()
                    .map(Decision::Rewrite)
                    .unwrap_or(Decision::Allow)
            }
            _ => {}
        }
    }
    Ok(v)
}

fn nonempty(text: &str, otherwise: &str) -> String {
    if text.trim().is_empty() {
        otherwise.to_owned()
    } else {
        text.to_owned()
    }
}

/// The verdicts of several calls of one event, folded: the most restrictive decision wins (a
/// deny on any file of a patch refuses the patch), every context and notice is kept once.
pub fn fold(verdicts: Vec<Verdict>) -> Verdict {
    let mut out = Verdict::default();
    for v in verdicts {
        if v.decision.rank() > out.decision.rank() {
            out.decision = v.decision;
        }
        for c in v.context {
            if !out.context.contains(&c) {
                out.context.push(c);
            }
        }
        for n in v.notices {
            if !out.notices.contains(&n) {
                out.notices.push(n);
            }
        }
        out.halt = out.halt.or(v.halt);
    }
    out
}

/// The kinds of verdict the docs matrix lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A deny or block.
    Block,
    /// Leave it to the user.
    Ask,
    /// Changed input.
    Rewrite,
    /// A warning: text for the agent.
    Warn,
    /// Permission granted.
    Allow,
}

impl Kind {
    /// Every kind, in the matrix's column order.
    pub const ALL: [Kind; 5] = [
        Kind::Block,
        Kind::Ask,
        Kind::Rewrite,
        Kind::Warn,
        Kind::Allow,
    ];

    /// The column heading.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Block => "block",
            Kind::Ask => "ask",
            Kind::Rewrite => "rewrite",
            Kind::Warn => "warn",
            Kind::Allow => "allow",
        }
    }
}

/// What becomes of a verdict on an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Landing {
    /// The agent acts on it as such.
    Lands,
    /// Sent as a block (an ask or a rewrite the agent cannot carry: refused, saying why).
    AsBlock,
    /// Sent as text for the agent.
    AsContext,
    /// Sent as text for the user.
    AsNotice,
    /// Nothing reaches the agent; it goes on as it would.
    Dropped,
}

/// The one rule for a verdict an event cannot carry: refusals never weaken (an ask or a rewrite
/// falls to a block where there is one), and text falls to the next channel that exists.
pub fn landing(a: Accepts, kind: Kind) -> Landing {
    let text = if a.context {
        Landing::AsContext
    } else if a.notice {
        Landing::AsNotice
    } else {
        Landing::Dropped
    };
    match kind {
        Kind::Block if a.block => Landing::Lands,
        Kind::Ask if a.ask => Landing::Lands,
        Kind::Rewrite if a.rewrite => Landing::Lands,
        Kind::Ask | Kind::Rewrite if a.block => Landing::AsBlock,
        Kind::Block | Kind::Ask | Kind::Rewrite => text,
        Kind::Warn if a.context => Landing::Lands,
        Kind::Warn if a.notice => Landing::AsNotice,
        Kind::Warn => Landing::Dropped,
        Kind::Allow if a.allow => Landing::Lands,
        Kind::Allow => Landing::Dropped,
    }
}

/// `v` reduced to what an event accepting `a` can carry, by [`landing`]. `reversible` is false
/// when the call's tool cannot take a rewritten input back (then a rewrite is refused);
/// `title` names the agent in the reasons.
pub fn settle(v: Verdict, a: Accepts, reversible: bool, title: &str) -> Verdict {
    let mut out = Verdict {
        decision: Decision::None,
        context: Vec::new(),
        notices: Vec::new(),
        halt: v.halt,
    };
    let text = |landing: Landing, t: String, out: &mut Verdict| match landing {
        Landing::AsContext => out.context.push(t),
        Landing::AsNotice => out.notices.push(t),
        _ => {}
    };
    let (kind, reason) = match &v.decision {
        Decision::None => (None, String::new()),
        Decision::Allow => (Some(Kind::Allow), String::new()),
        Decision::Block(r) => (Some(Kind::Block), r.clone()),
        Decision::Ask(r) => (
            Some(Kind::Ask),
            format!("{r} (this call would be left to you, and {title} cannot ask; refused)"),
        ),
        Decision::Rewrite(input) => (Some(Kind::Rewrite), unrewritable(input, title)),
    };
    if let Some(kind) = kind {
        let mut l = landing(a, kind);
        if kind == Kind::Rewrite && l == Landing::Lands && !reversible {
            l = landing(
                Accepts {
                    rewrite: false,
                    ..a
                },
                kind,
            );
        }
        match (l, &v.decision) {
            (Landing::Lands, d) => out.decision = d.clone(),
            (Landing::AsBlock, _) => out.decision = Decision::Block(reason),
            (other, Decision::Block(r) | Decision::Ask(r)) => text(other, r.clone(), &mut out),
            (other, _) if !reason.is_empty() => text(other, reason, &mut out),
            _ => {}
        }
    }
    for c in v.context {
        let l = match landing(a, Kind::Warn) {
            Landing::Lands => Landing::AsContext,
            other => other,
        };
        text(l, c, &mut out);
    }
    if a.notice {
        out.notices.extend(v.notices);
    }
    out
}

/// The reason a rewrite the agent cannot apply is refused with: the command as rewritten, so
/// the user (or the model) can run that instead.
pub fn unrewritable(input: &Map<String, Value>, title: &str) -> String {
    match input.get("command").and_then(Value::as_str) {
        Some(c) => format!(
            "not run: a hook rewrites this call and {title} cannot run a changed call; run this \
             instead: {c}"
        ),
        None => format!(
            "not run: a hook rewrites this call and {title} cannot apply the change; make the \
             change another way"
        ),
    }
}

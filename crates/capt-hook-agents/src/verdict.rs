//! Our answer as a typed verdict (capt-hook-core's `envelope::typed` reads it off the output
//! the engine renders, so the envelope's shape is known there alone), settled to what one
//! agent's event can carry. [`landing`] is the one rule for what becomes of a verdict an event
//! cannot carry; the renderers and the docs matrix both read it.

use crate::table::Accepts;
pub use capt_hook_core::envelope::typed::{Decision, Verdict};
use serde_json::{Map, Value};

/// Higher is more restrictive: the fold over several calls keeps the highest.
fn rank(d: &Decision) -> u8 {
    match d {
        Decision::None => 0,
        Decision::Allow => 1,
        Decision::Rewrite(_) => 2,
        Decision::Ask(_) => 3,
        Decision::Block(_) => 4,
    }
}

/// The verdicts of several calls of one event, folded: the most restrictive decision wins (a
/// deny on any file of a patch refuses the patch), every context and notice is kept once.
pub fn fold(verdicts: Vec<Verdict>) -> Verdict {
    let mut out = Verdict::default();
    for v in verdicts {
        if rank(&v.decision) > rank(&out.decision) {
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

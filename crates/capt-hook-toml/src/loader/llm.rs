//! The LLM kinds' tables (`llm_gate`, `llm_nudge`, `llm_approve`, `confirm`) lowered to the
//! builders of `capt_hook_kinds::llm`: the format's side of those kinds, kept here so the
//! kinds know nothing of hook files.

use std::sync::Arc;
use std::time::Duration;

use capt_hook_engine::primitives::{DefError, HookDef};
use capt_hook_kinds::llm::{
    ApproveOptions, BackendChoice, Budget, Confirm, Context, EscalateFn, Field, FieldType,
    LlmOptions, RubricDefaults, Size, VerdictSchema, llm_approve, llm_gate, llm_nudge,
};
use capt_hook_kinds::session::Signals;
use serde_json::{Map, Value};

use crate::spec::{ContextName, ContextSpec};

/// The definition a hook file's `llm_gate` (`block`) or `llm_nudge` table lowers to, with its
/// signals and its `when` condition already compiled.
#[track_caller]
pub(crate) fn from_spec(
    s: &crate::spec::LlmSpec,
    block: bool,
    signals: Option<Signals>,
    when: Option<capt_hook_core::Condition>,
) -> Result<HookDef, DefError> {
    use crate::spec::ResponseTypeSpec;
    let kind = if block { "llm_gate" } else { "llm_nudge" };
    if s.name.is_some() && s.label.is_some() {
        return Err(DefError::new("label", "give `label` or `name`, not both"));
    }
    if !block {
        for (field, set) in [
            ("on_incomplete", s.on_incomplete.is_some()),
            ("guards_waiting", s.guards_waiting.is_some()),
        ] {
            if set {
                return Err(DefError::new(
                    field,
                    format!("`{field}` applies to llm_gate only; {kind} never blocks"),
                ));
            }
        }
    }
    let mut o = if block {
        LlmOptions::gate(s.prompt.clone(), s.message.clone())
    } else {
        LlmOptions::nudge(s.prompt.clone(), s.message.clone())
    };
    if let Some(fields) = &s.response {
        let mut out = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            let at = |what: &str| format!("response[{i}].{what}");
            let ty = match f.ty {
                ResponseTypeSpec::Bool => FieldType::Bool,
                ResponseTypeSpec::String => FieldType::String,
                ResponseTypeSpec::Integer => FieldType::Integer {
                    min: f.min,
                    max: f.max,
                },
                ResponseTypeSpec::Choice => match &f.choices {
                    Some(c) => FieldType::Choice(c.clone()),
                    None => return Err(DefError::new(at("choices"), "a choice needs `choices`")),
                },
            };
            if f.choices.is_some() && f.ty != ResponseTypeSpec::Choice {
                return Err(DefError::new(
                    at("choices"),
                    "only a `choice` field has choices",
                ));
            }
            if (f.min.is_some() || f.max.is_some()) && f.ty != ResponseTypeSpec::Integer {
                return Err(DefError::new(
                    at("min"),
                    "only an `integer` field has bounds",
                ));
            }
            out.push(Field::new(
                &f.name,
                ty,
                f.description.as_deref().unwrap_or(""),
            ));
        }
        o.response = VerdictSchema::new(out).map_err(|e| DefError::new("response", e.0))?;
        if s.verdict.is_none() {
            // A custom verdict keeps the default field name when it has it.
            let default = if block { "block" } else { "fire" };
            if o.response.field(default).is_none() {
                return Err(DefError::new(
                    "verdict",
                    "a custom response needs `verdict`: the boolean field that fires the hook",
                ));
            }
        }
    }
    if let Some(v) = &s.verdict {
        o.verdict = v.clone();
    }
    o.label = s.label.clone();
    if let Some(c) = when {
        o.when = Some(Arc::new(move |evt: &capt_hook_core::Event| c.check(evt)));
    }
    o.signals = signals;
    let contexts = contexts(&s.contexts, "contexts")?;
    o.contexts = contexts;
    o.guards_waiting = s.guards_waiting;
    o.once_per_turn = s.once_per_turn;
    if let Some(m) = s.max_context {
        o.max_context = m;
    }
    o.model = model_of(s.model);
    if let Some(sp) = &s.specialty {
        o.specialty = sp.clone();
    }
    o.backend = backend_of(s.backend);
    if let Some(a) = s.agent {
        o.agent = a;
    }
    if let Some(t) = s.transcript {
        o.transcript = t;
    }
    o.tool_results = s.tool_results;
    if let Some(b) = &s.budget {
        let d = Budget::default();
        o.budget = Budget {
            prose: b.prose.unwrap_or(d.prose),
            call: b.call.unwrap_or(d.call),
            result: b.result.unwrap_or(d.result),
        };
    }
    o.diff = s.diff;
    o.on_incomplete = s.on_incomplete.clone();
    o.without_judge = match s.without_judge {
        Some(crate::spec::WithoutJudgeSpec::Skip) => capt_hook_kinds::llm::WithoutJudge::Skip,
        Some(crate::spec::WithoutJudgeSpec::Fail) | None => {
            capt_hook_kinds::llm::WithoutJudge::Fail
        }
    };
    o.timeout = s.timeout_s.map(|t| seconds("timeout_s", t)).transpose()?;
    o.escalate = s.escalate.map(|on| {
        let field = o.verdict.clone();
        Arc::new(move |v: &Map<String, Value>| on && v.get(&field) == Some(&Value::Bool(true)))
            as EscalateFn
    });
    if block { llm_gate(o) } else { llm_nudge(o) }
}

/// A seconds value from a hook file as a duration; `field` names it in the error.
pub(crate) fn seconds(field: &str, value: f64) -> Result<Duration, DefError> {
    if value.is_finite() && value > 0.0 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(DefError::new(field, "give a positive number of seconds"))
    }
}

/// A hook file's `model` size (default small).
pub(crate) fn model_of(m: Option<crate::spec::ModelSpec>) -> Size {
    use crate::spec::ModelSpec;
    match m {
        None | Some(ModelSpec::Small) => Size::Small,
        Some(ModelSpec::Medium) => Size::Medium,
        Some(ModelSpec::Large) => Size::Large,
    }
}

/// A hook file's `backend` as the judge it names (`None`: the specialty's, else the default).
pub fn backend_of(b: Option<crate::spec::BackendSpec>) -> Option<BackendChoice> {
    use crate::spec::BackendSpec;
    b.map(|b| match b {
        BackendSpec::Auto => BackendChoice::Auto,
        BackendSpec::Claude => BackendChoice::Claude,
        BackendSpec::Codex => BackendChoice::Codex,
        BackendSpec::Command => BackendChoice::Command,
        BackendSpec::Jev => BackendChoice::Jev,
    })
}

/// A hook file's `confirm` table.
pub(crate) fn confirm_from_spec(c: &crate::spec::ConfirmSpec) -> Result<Confirm, DefError> {
    let mut out = Confirm::new(c.rule.clone());
    if let Some(t) = c.timeout_s {
        out.timeout = seconds("confirm.timeout_s", t)?;
    }
    Ok(out)
}

/// A hook file's `llm_approve` table.
#[track_caller]
pub(crate) fn approve_from_spec(s: &crate::spec::LlmApproveSpec) -> Result<HookDef, DefError> {
    let mut o = ApproveOptions::new(s.label.clone());
    o.rubric = s.rubric.clone();
    o.defaults = match s.defaults {
        None | Some(crate::spec::RubricDefaultsSpec::Claude) => RubricDefaults::Claude,
        Some(crate::spec::RubricDefaultsSpec::Builtin) => RubricDefaults::Builtin,
        Some(crate::spec::RubricDefaultsSpec::None) => RubricDefaults::None,
    };
    o.model = model_of(s.model);
    if let Some(sp) = &s.specialty {
        o.specialty = sp.clone();
    }
    o.backend = backend_of(s.backend);
    o.timeout = s.timeout_s.map(|t| seconds("timeout_s", t)).transpose()?;
    if s.name.is_some() {
        return Err(DefError::new(
            "name",
            "an llm_approve is named by its `label`",
        ));
    }
    llm_approve(o)
}

/// Characters of the `<tool_call>` block: a long subagent prompt is cut, not dropped.
const TOOL_CALL_CHARS: usize = 12_000;

/// The `<tool_call>` block: the pending call's tool and input, nothing on events without one.
fn tool_call_block(evt: &capt_hook_core::Event) -> Option<String> {
    let tool = evt.tool_name()?;
    let input = serde_json::to_string_pretty(evt.tool_input()?).ok()?;
    let mut text = format!("tool: {tool}\ninput: {input}");
    if text.len() > TOOL_CALL_CHARS {
        let mut end = TOOL_CALL_CHARS;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("\n[cut]");
    }
    Some(text)
}

/// Evidence blocks as a hook file lists them (`contexts` of an LLM hook or of a ticket rule's
/// judge); `field` names the list in errors.
pub(crate) fn contexts(specs: &[ContextSpec], field: &str) -> Result<Vec<Context>, DefError> {
    let mut contexts = Vec::new();
    for (i, c) in specs.iter().enumerate() {
        let at = |what: &str| format!("{field}[{i}]{what}");
        let (name, required, pattern, kinds, tag, text) = match c {
            ContextSpec::Name(n) => (*n, None, None, None, None, None),
            ContextSpec::Options {
                context,
                required,
                pattern,
                kinds,
                tag,
                text,
            } => (
                *context,
                *required,
                pattern.as_ref(),
                kinds.as_ref(),
                tag.as_ref(),
                text.as_ref(),
            ),
        };
        if name != ContextName::Introduced && (pattern.is_some() || kinds.is_some()) {
            return Err(DefError::new(
                at(""),
                "`pattern` and `kinds` belong to the `introduced` context",
            ));
        }
        if name != ContextName::Text && (tag.is_some() || text.is_some()) {
            return Err(DefError::new(
                at(""),
                "`tag` and `text` belong to the `text` context",
            ));
        }
        contexts.push(match name {
            ContextName::BeforeEdit => Context::BeforeEdit {
                required: required.unwrap_or(false),
            },
            ContextName::AfterEdit => Context::AfterEdit {
                required: required.unwrap_or(false),
            },
            ContextName::Text => {
                let (Some(tag), Some(text)) = (tag, text) else {
                    return Err(DefError::new(
                        at(""),
                        "a `text` context needs a `tag` (its block's name) and the `text`",
                    ));
                };
                let mut chars = tag.chars();
                let block_name = chars
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !block_name {
                    return Err(DefError::new(
                        at(".tag"),
                        format!("`{tag}` is not a block name (letters, digits, `_`)"),
                    ));
                }
                let text = text.clone();
                Context::Custom {
                    tag: tag.clone(),
                    required: false,
                    render: Arc::new(move |_| Some(text.clone())),
                }
            }
            ContextName::ToolCall => Context::Custom {
                tag: "tool_call".to_owned(),
                required: required.unwrap_or(true),
                render: Arc::new(tool_call_block),
            },
            ContextName::Introduced => {
                let pattern = pattern
                    .map(|p| capt_hook_code::AnyLangPattern::new(p).map(Arc::new))
                    .transpose()
                    .map_err(|e| DefError::new(at(".pattern"), e.to_string()))?;
                let kinds = kinds.cloned().unwrap_or_default();
                if pattern.is_none() && kinds.is_empty() {
                    return Err(DefError::new(
                        at(""),
                        "`introduced` needs a `pattern` or `kinds` to look for",
                    ));
                }
                Context::Introduced {
                    pattern,
                    kinds,
                    required: required.unwrap_or(true),
                }
            }
        });
    }
    Ok(contexts)
}

/// A hook file's `stop_runaway` table.
#[track_caller]
pub(crate) fn stop_from_spec(s: &crate::spec::StopRunawaySpec) -> Result<HookDef, DefError> {
    let mut o = capt_hook_kinds::llm::StopOptions::new(s.message.clone());
    o.exclude = s
        .exclude
        .iter()
        .enumerate()
        .map(|(i, r)| {
            capt_hook_core::Pattern::new(r, capt_hook_core::Mode::Plain)
                .map_err(|e| DefError::new(format!("exclude[{i}]"), e.to_string()))
        })
        .collect::<Result<_, _>>()?;
    o.size = model_of(s.model);
    if let Some(sp) = &s.specialty {
        o.specialty = sp.clone();
    }
    o.backend = backend_of(s.backend);
    if let Some(t) = s.timeout_s {
        o.timeout = Some(seconds("timeout_s", t)?);
    }
    capt_hook_kinds::llm::stop_runaway(o)
}

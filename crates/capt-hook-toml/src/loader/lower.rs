//! Lowering a spec to the SDK's definition: the same builder calls a Rust hook file makes, so
//! both paths share one engine.

use std::path::Path;

use capt_hook_core::{EventKind, Mode};
use toml::Spanned;
use toml::de::DeValue;

use crate::spec::*;
use capt_hook_engine::inline::{Expect, InlineTest, TranscriptInput, Verdict, load_transcript};
use capt_hook_engine::primitives::{
    self, DefError, HookDef, MaxFires, approve, ask, block_command, deny, hook, set_tool_input,
    warn_command,
};
use capt_hook_kinds::code;
use capt_hook_kinds::session;

use super::*;

macro_rules! common {
    ($def:expr, $spec:expr, $item:expr, $source:expr, $text:expr) => {{
        let spec = $spec;
        let mut d: HookDef = $def;
        if let Some(label) = &spec.name {
            d = d.name(label.clone());
        }
        if let Some(events) = &spec.events {
            let kinds = events
                .to_vec()
                .iter()
                .map(|name| {
                    name.parse::<EventKind>().map_err(|_| {
                        err(
                            "events",
                            format!(
                                "unknown event `{name}`; valid events are {}",
                                EventKind::valid_names()
                            ),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            d = d.events(&kinds);
        }
        for (i, c) in spec.only_if.iter().enumerate() {
            let c = compile_condition(c, &format!("only_if[{i}]"))?;
            d = d.only_if(if spec.exact { c.exact_tokens() } else { c });
        }
        for (i, c) in spec.skip_if.iter().enumerate() {
            let c = compile_condition(c, &format!("skip_if[{i}]"))?;
            d = d.skip_if(if spec.exact { c.exact_tokens() } else { c });
        }
        if let Some(m) = spec.max_fires {
            d = d.max_fires(match m {
                MaxFiresSpec::Count(n) => MaxFires::Count(n),
                MaxFiresSpec::Unlimited(_) => MaxFires::Unlimited,
            });
        }
        d = d.advisory_on_deny(spec.advisory_on_deny);
        if let Some(s) = spec.skip_planning_agents {
            d = d.skip_planning_agents(s);
        }
        d = d
            .respect_gitignore(spec.respect_gitignore)
            .run_async(spec.is_async)
            .mandatory(spec.mandatory)
            .approve(spec.approve);
        if let Some(r) = spec.repeat {
            d = d.repeat(r);
        }
        if let Some(c) = &spec.confirm {
            d = d.confirm(super::llm::confirm_from_spec(c)?);
        }
        let located: &Located = $text;
        d = d.source($source, located.line_col($item.span().start).0);
        for (i, t) in spec.test.iter().enumerate() {
            let field = format!("test[{i}]");
            let line = Some(located.line_col(locate($item, &field).start).0);
            d = d.with_test(lower_test(t, &field, line, &$source)?);
        }
        d
    }};
}

pub(super) fn lower(
    entry: HookEntry,
    item: &Spanned<DeValue<'_>>,
    source: &str,
    text: &Located,
) -> Result<HookDef, DefError> {
    let source = source.to_owned();
    let def = match &entry {
        HookEntry::Hook(s) => {
            if s.events.is_none() {
                return Err(err("events", "`hook` needs `events`"));
            }
            common!(
                hook(&[], s.message.clone()).block(s.block),
                s,
                item,
                source.clone(),
                text
            )
        }
        HookEntry::BlockCommand(s) => {
            let matcher = command_match(&s.argv, &s.pattern)?.exact(s.exact);
            let mut d = block_command(matcher, s.reason.clone());
            if let Some(h) = &s.hint {
                d = d.hint(h.clone());
            }
            common!(d, s, item, source.clone(), text)
        }
        HookEntry::WarnCommand(s) => common!(
            warn_command(
                command_match(&s.argv, &s.pattern)?.exact(s.exact),
                s.message.clone()
            ),
            s,
            item,
            source.clone(),
            text
        ),
        HookEntry::RewriteCommand(s) => {
            let mut d = if code::is_structural(&s.pattern) {
                code::rewrite_command_structural(&s.pattern, &s.replace)?
            } else {
                primitives::rewrite_command(&s.pattern, s.replace.clone())?
            };
            if let Some(n) = &s.note {
                d = d.note(n.clone());
            }
            common!(d, s, item, source.clone(), text)
        }
        HookEntry::SetToolInput(s) => {
            let mut d = set_tool_input(&s.tool, &s.field, s.value.clone());
            if let Some(n) = &s.note {
                d = d.note(n.clone());
            }
            common!(d, s, item, source.clone(), text)
        }
        HookEntry::Approve(s) => common!(approve(s.label.clone()), s, item, source.clone(), text),
        HookEntry::Deny(s) => common!(deny(s.reason.clone()), s, item, source.clone(), text),
        HookEntry::Ask(s) => common!(ask(s.reason.clone()), s, item, source.clone(), text),
        HookEntry::TrackBackground(s) => {
            common!(session::track_background(), s, item, source.clone(), text)
        }
        HookEntry::Lint(s) => {
            let lang = code_lang(s.lang.as_deref())?;
            let check = match (&s.pattern, &s.regex) {
                (Some(_), Some(_)) => {
                    return Err(err("pattern", "give either `pattern` or `regex`, not both"));
                }
                (Some(p), None) => code::LintCheck::Pattern(code_pattern(p, lang)?),
                (None, Some(r)) => code::LintCheck::Regex(regex("regex", r, Mode::Plain)?),
                (None, None) => return Err(err("pattern", "give `pattern` (ast-grep) or `regex`")),
            };
            let options = lint_options(lang, &s.message, &s.sep, s.max_shown, &s.trigger, s.block)?;
            common!(code::lint(check, options), s, item, source.clone(), text)
        }
        HookEntry::DiffLint(s) => {
            let lang = code_lang(s.lang.as_deref())?;
            let pattern = code_pattern(&s.pattern, lang)?;
            let options = lint_options(lang, &s.message, &s.sep, s.max_shown, &s.trigger, s.block)?;
            common!(
                code::diff_lint(pattern, options),
                s,
                item,
                source.clone(),
                text
            )
        }
        HookEntry::RewriteCode(s) => {
            let pattern = code::LangPattern::new(&s.pattern, s.lang.as_deref())?;
            let d = code::rewrite_code(pattern, s.replace.clone(), s.note.clone(), s.project_only);
            common!(d, s, item, source.clone(), text)
        }
        HookEntry::Nudge(s) => {
            if s.message.trim().is_empty() {
                return Err(err("message", "a nudge needs a message"));
            }
            let mut o = session::NudgeOptions::new(s.message.clone());
            o.block = s.block;
            o.signals = signals(&s.signals)?;
            o.when = veto(&s.when, s.exact)?;
            o.guards_waiting = s.guards_waiting;
            o.transcript_events = s.transcript_events;
            common!(session::nudge(o)?, s, item, source.clone(), text)
        }
        HookEntry::Gate(s) => {
            if s.message.trim().is_empty() {
                return Err(err("message", "a gate needs a message"));
            }
            let mut o = session::NudgeOptions::new(s.message.clone());
            o.block = true;
            o.signals = signals(&s.signals)?;
            o.when = veto(&s.when, s.exact)?;
            o.guards_waiting = s.guards_waiting;
            o.transcript_events = s.transcript_events;
            common!(session::nudge(o)?, s, item, source.clone(), text)
        }
        HookEntry::LlmGate(s) | HookEntry::LlmNudge(s) => {
            let block = matches!(entry, HookEntry::LlmGate(_));
            let when = when_condition(&s.when, s.exact)?;
            let d = super::llm::from_spec(s, block, signals(&s.signals)?, when)?;
            common!(d, s, item, source.clone(), text)
        }
        HookEntry::StopRunaway(s) => common!(
            super::llm::stop_from_spec(s)?,
            s,
            item,
            source.clone(),
            text
        ),
        HookEntry::LlmApprove(s) => {
            common!(
                super::llm::approve_from_spec(s)?,
                s,
                item,
                source.clone(),
                text
            )
        }
        HookEntry::Tickets(s) => common!(tickets_from_spec(s)?, s, item, source.clone(), text),
        HookEntry::Workflow(s) => {
            if s.events.is_some() {
                return Err(err(
                    "events",
                    "a workflow always guards SubagentStop; drop `events`",
                ));
            }
            let mut steps = Vec::new();
            for (i, st) in s.steps.iter().enumerate() {
                let check = compile_condition(&st.check, &format!("steps[{i}].check"))?;
                steps.push(session::Step::condition(
                    st.name.clone().unwrap_or_default(),
                    check,
                    st.message.clone(),
                ));
            }
            let mut artifacts = Vec::new();
            for (i, a) in s.artifacts.iter().enumerate() {
                let asserts = a
                    .asserts
                    .iter()
                    .map(|x| session::Assert {
                        pointer: x.pointer.clone(),
                        max: x.max,
                        min: x.min,
                        equals: x.equals.clone(),
                        message: x.message.clone(),
                    })
                    .collect();
                let artifact = session::Artifact::new(a.path.clone(), a.schema.as_ref(), asserts)
                    .map_err(|e| err(format!("artifacts[{i}].schema"), e.message))?;
                artifacts.push(artifact);
            }
            let flow = session::Workflow {
                label: s.label.clone(),
                marker: s.marker.clone(),
                steps,
                artifacts,
                post_complete: None,
            };
            common!(session::workflow(flow)?, s, item, source.clone(), text)
        }
        HookEntry::Styleguide(s) => {
            if s.rules.is_empty() {
                return Err(err("rules", "list at least one rule"));
            }
            let default_lang = s.lang.as_deref();
            let mut rules = Vec::new();
            for (i, r) in s.rules.iter().enumerate() {
                let field = format!("rules[{i}]");
                let lang = code_lang(r.lang.as_deref().or(default_lang))
                    .map_err(|e| err(format!("{field}.lang"), e.message))?;
                let rule = match (&r.pattern, &r.matcher) {
                    (Some(p), None) => {
                        let p = code_pattern(p, lang)
                            .map_err(|e| err(format!("{field}.pattern"), e.message))?;
                        capt_hook_code::StyleRule::pattern(
                            r.name.clone(),
                            p,
                            r.message.clone(),
                            r.diff,
                        )
                    }
                    (None, Some(m)) => capt_hook_code::Matcher::parse(m)
                        .and_then(|m| {
                            capt_hook_code::StyleRule::matcher(
                                r.name.clone(),
                                lang,
                                m,
                                r.message.clone(),
                                r.diff,
                            )
                        })
                        .map_err(|e| err(format!("{field}.match"), e.to_string()))?,
                    _ => {
                        return Err(err(
                            field,
                            "give a rule exactly one of `pattern` (ast-grep) and `match` (a matcher)",
                        ));
                    }
                };
                rules.push(match &r.label {
                    Some(l) => rule.label(l.clone()),
                    None => rule,
                });
            }
            let mut d = code::styleguide(rules, s.block, s.max_shown.unwrap_or(5));
            // A rule's own tests run as the styleguide's.
            for (i, r) in s.rules.iter().enumerate() {
                for (j, t) in r.test.iter().enumerate() {
                    let field = format!("rules[{i}].test[{j}]");
                    let line = Some(text.line_col(locate(item, &field).start).0);
                    d = d.with_test(lower_test(t, &field, line, &source)?);
                }
            }
            common!(d, s, item, source.clone(), text)
        }
    };
    Ok(def)
}

/// Seconds, or a number with a unit; `field` names it in the error.
/// A hook file's `when`: the condition a nudge, gate or LLM hook checks before its signals.
fn when_condition(
    spec: &Option<ConditionSpec>,
    exact: bool,
) -> Result<Option<capt_hook_core::Condition>, DefError> {
    let Some(spec) = spec else {
        return Ok(None);
    };
    let c = compile_condition(spec, "when")?;
    Ok(Some(if exact { c.exact_tokens() } else { c }))
}

/// [`when_condition`] as a nudge's or gate's veto.
fn veto(spec: &Option<ConditionSpec>, exact: bool) -> Result<Option<session::Veto>, DefError> {
    Ok(when_condition(spec, exact)?.map(session::Veto::Condition))
}

fn duration(field: &str, d: &DurationSpec) -> Result<std::time::Duration, DefError> {
    d.to_duration().map_err(|e| err(field, e.to_string()))
}

fn tickets_from_spec(s: &TicketsSpec) -> Result<HookDef, DefError> {
    use capt_hook_kinds::tickets::{
        Decide, Extract, Reach, Reading, Rule, Source, Tickets, check_template,
    };
    if s.place.is_empty() {
        return Err(err(
            "place",
            "name at least one place key (e.g. `{ channel = \"/channel\" }`)",
        ));
    }
    let keys: Vec<String> = s.place.keys().cloned().collect();
    let template = |field: String, t: &str| -> Result<(), DefError> {
        check_template(t).map_err(|e| err(field.clone(), e))?;
        let mut rest = t;
        while let Some(i) = rest.find('{') {
            let tail = &rest[i + 1..];
            let Some(j) = tail.find('}') else { break };
            let key = &tail[..j];
            if !key.is_empty()
                && key.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !key.chars().all(|c| c.is_ascii_digit())
                && !keys.iter().any(|k| k == key)
            {
                return Err(err(
                    field,
                    format!("`{{{key}}}` is not a place key; the place keys are {keys:?}"),
                ));
            }
            rest = &tail[j + 1..];
        }
        Ok(())
    };
    let said_source = |field: String, said: &TicketSaidSpec| -> Result<Source, DefError> {
        let (pattern, names) = match said {
            TicketSaidSpec::Pattern(p) => (Some(p.clone()), Vec::new()),
            TicketSaidSpec::Options { pattern, names } => (pattern.clone(), names.clone()),
        };
        if pattern.is_none() && names.is_empty() {
            return Err(err(field, "give a `pattern` or `names`"));
        }
        if let Some(p) = &pattern {
            template(field.clone(), p)?;
        }
        if let Some(n) = names.iter().find(|n| !keys.contains(n)) {
            return Err(err(
                format!("{field}.names"),
                format!("`{n}` is not a place key; the place keys are {keys:?}"),
            ));
        }
        Ok(Source::UserSaid { pattern, names })
    };
    let answered =
        |field: String, a: &TicketAnsweredSpec, approved: bool| -> Result<Source, DefError> {
            if let Some(p) = &a.pattern {
                template(format!("{field}.pattern"), p)?;
            }
            Ok(Source::UserAnswered {
                pattern: a.pattern.clone(),
                approved: a.approved.unwrap_or(approved),
            })
        };
    let touched = |field: String, t: &TouchedSpec| -> Result<Source, DefError> {
        Ok(Source::Touched {
            patterns: match t {
                TouchedSpec::Naming(true) => Vec::new(),
                TouchedSpec::Naming(false) => {
                    return Err(err(
                        field,
                        "`touched = false` finds nothing; leave the rule out instead",
                    ));
                }
                TouchedSpec::Patterns(ps) => {
                    if ps.is_empty() {
                        return Err(err(
                            field,
                            "list at least one pattern, or write `touched = true`",
                        ));
                    }
                    for (j, p) in ps.iter().enumerate() {
                        template(format!("{field}[{j}]"), p)?;
                    }
                    ps.clone()
                }
            },
        })
    };
    let ruled = |field: String, r: &UserRuledSpec| -> Result<Source, DefError> {
        if r.key.is_none() && r.ids.is_empty() {
            return Err(err(field, "give a place `key` or ruling `ids`"));
        }
        if let Some(k) = r.key.as_ref().filter(|k| !keys.contains(k)) {
            return Err(err(
                format!("{field}.key"),
                format!("`{k}` is not a place key; the place keys are {keys:?}"),
            ));
        }
        if r.key.is_none() && !r.tags.is_empty() {
            return Err(err(
                format!("{field}.tags"),
                "tags filter the rulings a `key` finds; give the `key`",
            ));
        }
        Ok(Source::UserRuled {
            key: r.key.clone(),
            ids: r.ids.clone(),
            tags: r.tags.iter().cloned().collect(),
        })
    };
    let reading = |field: String, r: &Option<ReadingSpec>| -> Result<Reading, DefError> {
        Ok(match r {
            None | Some(ReadingSpec::Flag(false)) => Reading::Off,
            Some(ReadingSpec::Flag(true)) => Reading::Chars(capt_hook_kinds::tickets::RECENT_CHARS),
            Some(ReadingSpec::Chars(n)) => Reading::Chars(*n),
            Some(ReadingSpec::Word(w)) => match w.as_str() {
                "recent" => Reading::Chars(capt_hook_kinds::tickets::RECENT_CHARS),
                "full" => Reading::Full,
                other => {
                    return Err(err(
                        field,
                        format!(
                            "`{other}`: write true, false, a number of characters, \"recent\" or \"full\""
                        ),
                    ));
                }
            },
        })
    };
    let mut rules = Vec::new();
    for (i, r) in s.rules.iter().enumerate() {
        let field = format!("rules[{i}]");
        let one = "give exactly one of `user_said`, `user_answered`, `touched`, `user_ruled`, \
                   `decide`, `condition`";
        let given = [
            r.user_said.is_some(),
            r.user_answered.is_some(),
            r.touched.is_some(),
            r.user_ruled.is_some(),
            r.decide.is_some(),
            r.condition.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(err(field, one));
        }
        let when = match (&r.user_said, &r.user_answered, &r.decide, &r.condition) {
            _ if r.touched.is_some() => touched(
                format!("{field}.touched"),
                r.touched.as_ref().unwrap_or(&TouchedSpec::Naming(true)),
            )?,
            _ if r.user_ruled.is_some() => match &r.user_ruled {
                Some(u) => ruled(format!("{field}.user_ruled"), u)?,
                None => return Err(err(field, one)),
            },
            (Some(said), None, None, None) => said_source(format!("{field}.user_said"), said)?,
            (None, Some(a), None, None) => answered(format!("{field}.user_answered"), a, true)?,
            (None, None, Some(d), None) => {
                if d.rules.trim().is_empty() {
                    return Err(err(
                        format!("{field}.decide.rules"),
                        "say in prose what the user must have permitted",
                    ));
                }
                let mut decide = Decide::new(d.rules.clone());
                decide.model = super::llm::model_of(d.model);
                if let Some(sp) = &d.specialty {
                    if sp.trim().is_empty() {
                        return Err(err(
                            format!("{field}.decide.specialty"),
                            "the specialty is empty",
                        ));
                    }
                    decide.specialty = sp.clone();
                }
                decide.backend = super::llm::backend_of(d.backend);
                decide.second_opinion = d.second_opinion;
                decide.llm = d.llm;
                decide.tool_results = d.tool_results;
                decide.transcript = reading(format!("{field}.decide.transcript"), &d.transcript)?;
                decide.root_transcript = reading(
                    format!("{field}.decide.root_transcript"),
                    &d.root_transcript,
                )?;
                if let Some(over) = &d.over {
                    decide.over = Vec::new();
                    for (j, o) in over.iter().enumerate() {
                        let at = format!("{field}.decide.over[{j}]");
                        decide.over.push(
                            match (&o.user_said, &o.user_answered, &o.touched, &o.user_ruled) {
                                (Some(said), None, None, None) => {
                                    said_source(format!("{at}.user_said"), said)?
                                }
                                (None, Some(a), None, None) => {
                                    answered(format!("{at}.user_answered"), a, false)?
                                }
                                (None, None, Some(t), None) => touched(format!("{at}.touched"), t)?,
                                (None, None, None, Some(u)) => {
                                    ruled(format!("{at}.user_ruled"), u)?
                                }
                                _ => {
                                    return Err(err(
                                        at,
                                        "give exactly one of `user_said`, `user_answered`, \
                                         `touched`, `user_ruled`",
                                    ));
                                }
                            },
                        );
                    }
                    if decide.over.is_empty() {
                        return Err(err(
                            format!("{field}.decide.over"),
                            "list the evidence the judge reads (`user_said`, `user_answered`)",
                        ));
                    }
                }
                if let Some(secs) = d.deadline {
                    decide.deadline =
                        super::llm::seconds(&format!("{field}.decide.deadline"), secs)?;
                }
                decide.contexts =
                    super::llm::contexts(&d.contexts, &format!("{field}.decide.contexts"))?;
                Source::Decide(decide)
            }
            (None, None, None, Some(c)) => {
                Source::Condition(compile_condition(c, &format!("{field}.condition"))?)
            }
            _ => return Err(err(field, one)),
        };
        rules.push(Rule {
            name: r.name.clone(),
            when,
        });
    }
    let ttl = match &s.ttl {
        Some(d) => Some(duration("ttl", d)?),
        None => Some(capt_hook_kinds::tickets::DEFAULT_TTL),
    };
    let place = s
        .place
        .iter()
        .map(|(k, v)| (k.clone(), Extract::parse(v)))
        .collect();
    capt_hook_kinds::tickets::tickets(Tickets {
        kind: s.ticket.clone(),
        place: keys,
        reach: match s.reach {
            ReachSpec::Action => Reach::Action,
            ReachSpec::Place => Reach::Place,
        },
        rules,
        deny: s.deny.clone(),
        action: Some(capt_hook_kinds::tickets::action_from_input(
            place,
            s.summary.clone(),
        )),
        ttl,
        window: s.window.unwrap_or(capt_hook_kinds::tickets::DEFAULT_WINDOW),
        machine: s.machine.clone(),
        grant: s.grant,
    })
}

pub(super) fn lower_test(
    t: &TestSpec,
    field: &str,
    line: Option<usize>,
    source: &str,
) -> Result<InlineTest, DefError> {
    // A fixture file is read now, so a missing or broken one is a load error naming the test.
    let mut input = t.input.clone();
    if let Some(spec) = &t.input.transcript {
        let base = Path::new(source).parent().unwrap_or(Path::new("."));
        let lines = load_transcript(spec, base)
            .map_err(|e| err(format!("{field}.input.transcript"), e.to_string()))?;
        input.transcript = Some(TranscriptInput::Lines(lines));
    }
    for (i, ticket) in t.input.tickets.iter().flatten().enumerate() {
        for (name, d) in [("age", &ticket.age), ("ttl", &ticket.ttl)] {
            if let Some(d) = d {
                duration(&format!("{field}.input.tickets[{i}].{name}"), d)?;
            }
        }
    }
    let verdict = match t.expect {
        ExpectSpec::Block => Verdict::Block,
        ExpectSpec::Warn => Verdict::Warn,
        ExpectSpec::Allow => Verdict::Allow {
            explicit: t.explicit,
        },
        ExpectSpec::Ask => Verdict::Ask,
        ExpectSpec::Rewrite => Verdict::Rewrite,
    };
    if t.fields.is_some() && verdict != Verdict::Rewrite {
        return Err(err(
            format!("{field}.fields"),
            "`fields` only applies to expect = \"rewrite\"",
        ));
    }
    // Rewrite patterns are substrings, not regexes; every other text check is a regex.
    if let Some(p) = &t.pattern
        && verdict != Verdict::Rewrite
    {
        regex(&format!("{field}.pattern"), p, Mode::Plain)?;
    }
    if let Some(p) = &t.system_message {
        regex(&format!("{field}.system_message"), p, Mode::Plain)?;
    }
    Ok(InlineTest {
        input,
        expect: Expect {
            verdict,
            pattern: t.pattern.clone(),
            fields: t.fields.clone().unwrap_or_default().into_iter().collect(),
            system_message: t.system_message.clone(),
        },
        line,
    })
}

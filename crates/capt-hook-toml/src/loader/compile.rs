//! Compiling the parts of a spec that can fail before an event arrives: regexes, globs, token
//! lists, conditions, signals and code patterns; errors name the field.

use capt_hook_core::{Condition, Glob, Mode, Pattern, Tokens};

use crate::spec::*;
use capt_hook_engine::primitives::{CommandMatch, DefError};
use capt_hook_kinds::code;
use capt_hook_kinds::session;

pub(super) fn err(field: impl Into<String>, message: impl std::fmt::Display) -> DefError {
    DefError::new(field, message.to_string())
}

pub(super) fn regex(field: &str, source: &str, mode: Mode) -> Result<Pattern, DefError> {
    Pattern::new(source, mode).map_err(|e| err(field, e.to_string()))
}

pub(super) fn globs(field: &str, list: &[String]) -> Result<Vec<Glob>, DefError> {
    if list.is_empty() {
        return Err(err(field, "the glob list is empty"));
    }
    list.iter().map(|g| Ok(Glob::new(g))).collect()
}

pub(super) fn tokens(field: &str, list: &[String]) -> Result<Tokens, DefError> {
    Tokens::new(list).map_err(|e| err(field, e.to_string()))
}

/// Compiles a condition; `field` is its path, used in errors.
pub fn compile_condition(spec: &ConditionSpec, field: &str) -> Result<Condition, DefError> {
    let sub = |key: &str| format!("{field}.{key}");
    Ok(match spec {
        ConditionSpec::Tool(names) => {
            let names = names.to_vec();
            if capt_hook_core::condition::split_names(&names).is_empty() {
                return Err(err(sub("tool"), "no tool names given"));
            }
            Condition::tool(&names)
        }
        ConditionSpec::McpTool(b) => Condition::McpTool(*b),
        ConditionSpec::Runs(t) => Condition::Runs(tokens(&sub("runs"), t)?),
        ConditionSpec::PrimaryRuns(t) => Condition::PrimaryRuns(tokens(&sub("primary_runs"), t)?),
        ConditionSpec::Command(p) => Condition::Command(regex(&sub("command"), p, Mode::Plain)?),
        ConditionSpec::ToolInput(fields) => {
            if fields.is_empty() {
                return Err(err(sub("tool_input"), "name at least one field"));
            }
            Condition::ToolInput(
                fields
                    .iter()
                    .map(|(k, v)| {
                        Ok((
                            k.clone(),
                            regex(&sub(&format!("tool_input.{k}")), v, Mode::Multiline)?,
                        ))
                    })
                    .collect::<Result<_, DefError>>()?,
            )
        }
        ConditionSpec::Content(c) => {
            let (pattern, project_only) = match c {
                ContentSpec::Pattern(p) => (p, true),
                ContentSpec::Options {
                    pattern,
                    project_only,
                } => (pattern, *project_only),
            };
            Condition::Content {
                pattern: regex(&sub("content"), pattern, Mode::Multiline)?,
                project_only,
            }
        }
        ConditionSpec::FilePath(f) => {
            let (list, project_only) = match f {
                FilePathSpec::One(g) => (vec![g.clone()], true),
                FilePathSpec::Many(g) => (g.clone(), true),
                FilePathSpec::Options {
                    globs,
                    project_only,
                } => (globs.to_vec(), *project_only),
            };
            Condition::file_path(globs(&sub("file_path"), &list)?, project_only)
        }
        ConditionSpec::TestFile(b) => Condition::TestFile(*b),
        ConditionSpec::SourceEdits(lang) => {
            if lang.trim().is_empty() {
                return Err(err(sub("source_edits"), "name a language (py, rs, ts, …)"));
            }
            Condition::source_edits(lang)
        }
        ConditionSpec::Agent(names) => {
            Condition::Agent(capt_hook_core::condition::split_names(&names.to_vec()))
        }
        ConditionSpec::FromSubagent(b) => Condition::FromSubagent(*b),
        ConditionSpec::SkipPermissions(b) => Condition::SkipPermissions(*b),
        ConditionSpec::PermissionMode(m) => Condition::PermissionMode(m.to_vec()),
        ConditionSpec::CodingAgent(names) => {
            let mut agents = Vec::new();
            for name in capt_hook_core::condition::split_names(&names.to_vec()) {
                // Stored by the agent's own name, so an alias (`codex-cli`) matches too.
                let agent: capt_hook_agents::Agent = name
                    .parse()
                    .map_err(|e: capt_hook_agents::AgentError| err(sub("coding_agent"), e))?;
                agents.push(agent.name().to_owned());
            }
            if agents.is_empty() {
                return Err(err(
                    sub("coding_agent"),
                    format!("name an agent ({})", capt_hook_agents::Agent::valid_names()),
                ));
            }
            Condition::CodingAgent(agents)
        }
        ConditionSpec::Model(m) => Condition::Model(globs(&sub("model"), &m.to_vec())?),
        ConditionSpec::Source(s) => Condition::Source(s.to_vec()),
        ConditionSpec::Annotated(a) => match a {
            AnnotatedSpec::Key(k) => Condition::Annotated {
                key: k.clone(),
                value: None,
                session: false,
            },
            AnnotatedSpec::Options { key, value, scope } => Condition::Annotated {
                key: key.clone(),
                value: value.clone(),
                session: *scope == AnnotatedScope::Session,
            },
        },
        ConditionSpec::ReadOnlyCommand(b) => Condition::ReadOnlyCommand(*b),
        ConditionSpec::Deletes(names) => {
            let mut risks = Vec::new();
            for name in names.to_vec() {
                let Some(risk) = capt_hook_core::deletes::DeleteRisk::parse(&name) else {
                    let known: Vec<&str> = capt_hook_core::deletes::DeleteRisk::ALL
                        .iter()
                        .map(|r| r.name())
                        .collect();
                    return Err(err(
                        sub("deletes"),
                        format!(
                            "unknown risk {name:?}; expected one of {}",
                            known.join(", ")
                        ),
                    ));
                };
                risks.push(risk);
            }
            if risks.is_empty() {
                return Err(err(sub("deletes"), "name at least one risk"));
            }
            Condition::Deletes(risks)
        }
        ConditionSpec::CommentBudget(spec) => {
            let d = capt_hook_code::CommentBudget::default();
            let budget = match spec {
                CommentBudgetSpec::Default(true) => d,
                CommentBudgetSpec::Default(false) => {
                    return Err(err(
                        sub("comment_budget"),
                        "`false` would never match; write `true` or the caps",
                    ));
                }
                CommentBudgetSpec::Options {
                    lines,
                    chars,
                    doc_lines,
                    doc_chars,
                } => capt_hook_code::CommentBudget {
                    lines: lines.unwrap_or(d.lines),
                    chars: chars.unwrap_or(d.chars),
                    doc_lines: doc_lines.unwrap_or(d.doc_lines),
                    doc_chars: doc_chars.unwrap_or(d.doc_chars),
                },
            };
            code::comment_budget_condition(budget)
        }
        ConditionSpec::CommentEdit(spec) => code::comment_edit_condition(match spec {
            CommentEditSpec::Reworded => code::CommentEdit::Reworded,
            CommentEditSpec::MostlyComments => code::CommentEdit::MostlyComments,
        }),
        ConditionSpec::HookFileProblems(want) => {
            let want = *want;
            Condition::Custom {
                name: format!("{{ hook_file_problems = {want} }}"),
                reads_tool: true,
                check: std::sync::Arc::new(move |evt: &capt_hook_core::Event| {
                    hook_file_text(evt).is_some_and(|(path, text)| {
                        super::hook_file_problem(&path, &text).is_some() == want
                    })
                }),
            }
        }
        ConditionSpec::CallsSince(c) => {
            if c.at_least == 0 {
                return Err(err(
                    sub("calls_since"),
                    "`at_least = 0` always holds; count from 1",
                ));
            }
            let names = |v: &OneOrMany<String>| {
                let mut all = Vec::new();
                for n in capt_hook_core::condition::split_names(&v.to_vec()) {
                    for s in capt_hook_core::tool::tool_spellings(&n) {
                        if !all.iter().any(|a: &String| a == s) {
                            all.push(s.to_owned());
                        }
                    }
                }
                all
            };
            Condition::CallsSince {
                tools: names(&c.tools),
                since: names(&c.since),
                at_least: c.at_least,
            }
        }
        ConditionSpec::LastCall(c) => {
            if c.input.is_empty() {
                return Err(err(sub("last_call.input"), "name at least one field"));
            }
            let mut tools = Vec::new();
            for n in capt_hook_core::condition::split_names(&c.tool.to_vec()) {
                for s in capt_hook_core::tool::tool_spellings(&n) {
                    if !tools.iter().any(|a: &String| a == s) {
                        tools.push(s.to_owned());
                    }
                }
            }
            let input = c
                .input
                .iter()
                .map(|(k, v)| {
                    Ok((
                        k.clone(),
                        regex(&sub(&format!("last_call.input.{k}")), v, Mode::Multiline)?,
                    ))
                })
                .collect::<Result<Vec<_>, DefError>>()?;
            Condition::LastCall { tools, input }
        }
        ConditionSpec::OnPath(program) => {
            if program.is_empty() || program.contains('/') {
                return Err(err(sub("on_path"), "name a program, without a directory"));
            }
            Condition::OnPath(program.clone())
        }
        ConditionSpec::Args(a) => Condition::Args {
            tokens: tokens(&sub("args.of"), &a.of)?.exact(a.exact),
            pattern: regex(&sub("args.match"), &a.pattern, Mode::Plain)?,
        },
        ConditionSpec::UnreadCode(b) => Condition::UnreadCode(*b),
        ConditionSpec::Pattern(p) => {
            let (pattern, lang, project_only) = match p {
                PatternCondSpec::Pattern(p) => (p, None, true),
                PatternCondSpec::Options {
                    pattern,
                    lang,
                    project_only,
                } => (pattern, lang.as_deref(), *project_only),
            };
            let compiled = code::LangPattern::new(pattern, lang)
                .map_err(|e| err(sub("pattern"), e.message))?;
            code::pattern_condition(compiled, project_only)
        }
        ConditionSpec::RanCommand(t) => Condition::RanCommand(tokens(&sub("ran_command"), t)?),
        ConditionSpec::RunsExact(t) => Condition::Runs(tokens(&sub("runs"), t)?.exact(true)),
        ConditionSpec::PrimaryRunsExact(t) => {
            Condition::PrimaryRuns(tokens(&sub("primary_runs"), t)?.exact(true))
        }
        ConditionSpec::RanCommandExact(t) => {
            Condition::RanCommand(tokens(&sub("ran_command"), t)?.exact(true))
        }
        ConditionSpec::TouchedFile(g) => {
            let list = g.to_vec();
            globs(&sub("touched_file"), &list)?;
            Condition::TouchedFile(list)
        }
        ConditionSpec::TouchedThisFile(t) => match t {
            TouchedThisFileSpec::Flag(true) => Condition::TouchedThisFile { since: None },
            TouchedThisFileSpec::Flag(false) => {
                Condition::Not(Box::new(Condition::TouchedThisFile { since: None }))
            }
            TouchedThisFileSpec::Since { since } if since.trim().is_empty() => {
                return Err(err(sub("touched_this_file.since"), "no tool name given"));
            }
            TouchedThisFileSpec::Since { since } => Condition::TouchedThisFile {
                since: Some(since.clone()),
            },
        },
        ConditionSpec::OpenTasks(b) => Condition::OpenTasks(*b),
        ConditionSpec::ReadFile(g) => {
            let list = g.to_vec();
            globs(&sub("read_file"), &list)?;
            Condition::ReadFile(list)
        }
        ConditionSpec::UsedTool(u) => {
            let (names, scope) = match u {
                UsedToolSpec::One(n) => (vec![n.clone()], ScopeSpec::Turn),
                UsedToolSpec::Many(n) => (n.clone(), ScopeSpec::Turn),
                UsedToolSpec::Options { names, scope } => (names.to_vec(), *scope),
            };
            let names = capt_hook_core::condition::split_names(&names);
            if names.is_empty() {
                return Err(err(sub("used_tool"), "no tool names given"));
            }
            Condition::UsedTool {
                names,
                scope: scope_of(scope),
            }
        }
        ConditionSpec::UsedSkill(u) => {
            let (names, scope, subagents) = match u {
                UsedSkillSpec::One(n) => (vec![n.clone()], ScopeSpec::Turn, true),
                UsedSkillSpec::Many(n) => (n.clone(), ScopeSpec::Turn, true),
                UsedSkillSpec::Options {
                    names,
                    scope,
                    subagents,
                } => (names.to_vec(), *scope, *subagents),
            };
            if names.is_empty() {
                return Err(err(sub("used_skill"), "no skill names given"));
            }
            Condition::UsedSkill {
                names,
                scope: scope_of(scope),
                subagents,
            }
        }
        ConditionSpec::UserSaid(u) => {
            let (pattern, scope) = match u {
                UserSaidSpec::Pattern(p) => (p, ScopeSpec::Turn),
                UserSaidSpec::Options { pattern, scope } => (pattern, *scope),
            };
            Condition::UserSaid {
                pattern: regex(&sub("user_said"), pattern, Mode::IgnoreCase)?,
                scope: scope_of(scope),
            }
        }
        ConditionSpec::TextMatches(t) => {
            let (pattern, scope) = match t {
                TextMatchesSpec::Pattern(p) => (p, capt_hook_core::condition::Scope::Session),
                TextMatchesSpec::Options { pattern, scope } => (
                    pattern,
                    scope.map_or(capt_hook_core::condition::Scope::Session, scope_of),
                ),
            };
            Condition::TextMatches {
                pattern: regex(&sub("text_matches"), pattern, Mode::Multiline)?,
                scope,
            }
        }
        ConditionSpec::Waiting(b) => Condition::Waiting(*b),
        ConditionSpec::InPlanMode(b) => Condition::InPlanMode(*b),
        ConditionSpec::Not(inner) => {
            Condition::Not(Box::new(compile_condition(inner, &sub("not"))?))
        }
        ConditionSpec::Any(list) => Condition::Any(
            list.iter()
                .enumerate()
                .map(|(i, c)| compile_condition(c, &format!("{field}.any[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        ConditionSpec::All(list) => Condition::All(
            list.iter()
                .enumerate()
                .map(|(i, c)| compile_condition(c, &format!("{field}.all[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
    })
}

pub(super) fn command_match(
    argv: &Option<Vec<String>>,
    pattern: &Option<String>,
) -> Result<CommandMatch, DefError> {
    match (argv, pattern) {
        (Some(_), Some(_)) => Err(err("argv", "give either `argv` or `pattern`, not both")),
        (Some(a), None) => CommandMatch::argv(a),
        (None, Some(p)) => CommandMatch::pattern(p),
        (None, None) => Err(err(
            "argv",
            "give `argv` (a token list) or `pattern` (a regex)",
        )),
    }
}

pub(super) fn signals(spec: &Option<SignalsSpec>) -> Result<Option<session::Signals>, DefError> {
    let Some(spec) = spec else {
        return Ok(None);
    };
    let compile = |i: usize, p: &str| regex(&format!("signals.patterns[{i}]"), p, Mode::Plain);
    let out = match spec {
        SignalsSpec::List(list) => {
            if list.is_empty() {
                return Err(err("signals", "list at least one pattern"));
            }
            let patterns = list
                .iter()
                .enumerate()
                .map(|(i, p)| compile(i, p))
                .collect::<Result<Vec<_>, _>>()?;
            session::Signals::any_of(patterns)
        }
        SignalsSpec::Options {
            patterns,
            threshold,
            window,
            origin,
        } => {
            if patterns.is_empty() {
                return Err(err("signals.patterns", "list at least one pattern"));
            }
            let mut compiled = Vec::new();
            for (i, p) in patterns.iter().enumerate() {
                let (text, weight) = match p {
                    SignalPatternSpec::Pattern(t) => (t, 1),
                    SignalPatternSpec::Weighted { pattern, weight } => (pattern, *weight),
                };
                if weight == 0 {
                    return Err(err(
                        format!("signals.patterns[{i}].weight"),
                        "weights must be positive",
                    ));
                }
                compiled.push((compile(i, text)?, weight));
            }
            if *threshold == 0 {
                return Err(err("signals.threshold", "the threshold must be positive"));
            }
            let window = match window {
                None => session::SignalWindow::Last(15),
                Some(WindowSpec::Count(0)) => {
                    return Err(err(
                        "signals.window",
                        "the window must hold at least one entry",
                    ));
                }
                Some(WindowSpec::Count(n)) => session::SignalWindow::Last(*n),
                Some(WindowSpec::Turn(_)) => session::SignalWindow::Turn,
            };
            session::Signals {
                patterns: compiled,
                threshold: *threshold,
                window,
                include_user: *origin == OriginSpec::Any,
            }
        }
    };
    Ok(Some(out))
}

pub(super) fn scope_of(s: ScopeSpec) -> capt_hook_core::condition::Scope {
    match s {
        ScopeSpec::Turn => capt_hook_core::condition::Scope::Turn,
        ScopeSpec::Session => capt_hook_core::condition::Scope::Session,
    }
}

pub(super) fn code_lang(id: Option<&str>) -> Result<capt_hook_code::Lang, DefError> {
    let id = id.unwrap_or("py");
    capt_hook_code::Lang::from_id(id).ok_or_else(|| {
        err(
            "lang",
            capt_hook_code::CodeError::UnknownLanguage(id.to_owned()).to_string(),
        )
    })
}

pub(super) fn code_pattern(
    pattern: &str,
    lang: capt_hook_code::Lang,
) -> Result<capt_hook_code::CodePattern, DefError> {
    capt_hook_code::CodePattern::new(pattern, lang).map_err(|e| err("pattern", e.to_string()))
}

pub(super) fn lint_options(
    lang: capt_hook_code::Lang,
    message: &str,
    sep: &Option<String>,
    max_shown: Option<usize>,
    trigger: &Option<String>,
    block: bool,
) -> Result<code::LintOptions, DefError> {
    if message.trim().is_empty() {
        return Err(err(
            "message",
            "a lint needs a message (use {violations} for the list)",
        ));
    }
    let mut o = code::LintOptions::new(lang, message);
    if let Some(s) = sep {
        o.sep = s.clone();
    }
    if let Some(m) = max_shown {
        if m == 0 {
            return Err(err("max_shown", "show at least one violation"));
        }
        o.max_shown = m;
    }
    o.trigger = trigger.clone();
    o.block = block;
    Ok(o)
}

/// The edited file and its text after the call: read from disk once the call ran (PostToolUse),
/// else the edit applied to the file before it.
fn hook_file_text(evt: &capt_hook_core::Event) -> Option<(std::path::PathBuf, String)> {
    let file = std::path::PathBuf::from(evt.file()?);
    let text = if evt.kind() == capt_hook_core::EventKind::PostToolUse {
        std::fs::read_to_string(&file).ok()?
    } else {
        evt.edit_images()?.post.clone()
    };
    Some((file, text))
}

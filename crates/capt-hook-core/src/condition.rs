//! Conditions: compiled predicates over an event, evaluated in order with short-circuit.

use std::fmt;
use std::sync::Arc;

use crate::event::Event;
use crate::glob::Glob;
use crate::paths::is_project_path;
use crate::pattern::Pattern;
use crate::tokens::Tokens;
use crate::tool::tool_spellings;
pub use capt_hook_transcript::Scope;

/// A predicate written in Rust, for what data cannot say.
pub type CustomCheck = Arc<dyn Fn(&Event) -> bool + Send + Sync>;

/// Globs that mark a test file; owned by [`crate::lang`].
pub use crate::lang::{TEST_FILE_GLOBS, is_test_file};

/// The source-file globs of a language key (`py`, `rs`, …); unknown keys mean `*.<key>`.
pub fn language_globs(lang: &str) -> Vec<String> {
    crate::lang::source_globs(lang)
}

fn compile_globs(globs: &[String]) -> Vec<Glob> {
    // Built-in glob tables are known to compile.
    globs.iter().map(|g| Glob::new(g)).collect()
}

/// `, exact = true` for a literal token list, as a hook file writes it.
fn exact(t: &Tokens) -> &'static str {
    if t.is_exact() { ", exact = true" } else { "" }
}

/// One compiled condition.
#[derive(Clone)]
pub enum Condition {
    /// The tool is one of these names (aliases and MCP tails included).
    Tool(Vec<String>),
    /// The tool is (or, with `false`, is not) an MCP tool.
    McpTool(bool),
    /// Some command of the line, nested ones included, starts with these tokens.
    Runs(Tokens),
    /// The primary command, wrappers stripped, starts with these tokens.
    PrimaryRuns(Tokens),
    /// The regex matches the raw line or some command's words.
    Command(Pattern),
    /// Every named input field exists and matches its regex.
    ToolInput(Vec<(String, Pattern)>),
    /// The edit's new text matches.
    Content {
        /// The regex (multi-line).
        pattern: Pattern,
        /// The file must lie in the project.
        project_only: bool,
    },
    /// The event's file matches a glob.
    FilePath {
        /// The globs.
        globs: Vec<Glob>,
        /// The file must lie in the project.
        project_only: bool,
    },
    /// The event's file is (or is not) a project test file.
    TestFile(bool),
    /// An Edit/Write of a non-test source file of the language.
    SourceEdits {
        /// The language key as written.
        lang: String,
        /// Its globs.
        globs: Vec<Glob>,
    },
    /// The subagent type is one of these.
    Agent(Vec<String>),
    /// The event does (or does not) come from a subagent.
    FromSubagent(bool),
    /// Claude Code runs (or does not run) with permission prompts skipped.
    SkipPermissions(bool),
    /// The payload's permission mode is one of these.
    PermissionMode(Vec<String>),
    /// The coding agent running the session (`claude`, `codex`, `gemini`, `factory`, `cursor`,
    /// `copilot`: the names `hook run --agent` takes) is one of these.
    CodingAgent(Vec<String>),
    /// The model the event is about matches one of these globs: the switch's `to_model` on
    /// PreModelSwitch and PostModelSwitch, the session's `model` on SessionStart.
    Model(Vec<Glob>),
    /// The payload's `source` (what caused the event: `startup`, `resume`, `command`, `picker`,
    /// `sdk`, `auto`, …) is one of these.
    Source(Vec<String>),
    /// The call (or, with `session`, the session's first prompt) carries a `ccx:` annotation.
    Annotated {
        /// The annotation's key.
        key: String,
        /// The value it must have, if any.
        value: Option<String>,
        /// Read the session's first prompt instead of the event.
        session: bool,
    },
    /// Every command of the line is (or is not) known to be read-only.
    ReadOnlyCommand(bool),
    /// Some `rm` target of the line has one of these risks, judged on disk now.
    Deletes(Vec<crate::deletes::DeleteRisk>),
    /// An executable of this name is on the `PATH` (the request's, else this process's).
    OnPath(String),
    /// Some argv the line runs matches the tokens (as [`Condition::Runs`]) and its words after
    /// the program, joined by single spaces (a word holding a blank single-quoted, its blanks escaped as `\x20`), match the
    /// regex: one command's flags and operands judged together, which a `runs` beside a
    /// `command` regex cannot say.
    Args {
        /// The argv the words belong to.
        tokens: Tokens,
        /// Searched in the words after the program.
        pattern: Pattern,
    },
    /// The line runs (or does not run) interpreter code we could not read to the end
    /// ([`capt_hook_shell::CommandLine::unread_code`]).
    UnreadCode(bool),
    /// The main agent called one of `tools` at least `at_least` times since its last call of
    /// one of `since` (since the session began when it never called one).
    CallsSince {
        /// The tools counted (aliases and MCP tails count).
        tools: Vec<String>,
        /// The tools whose last call starts the count.
        since: Vec<String>,
        /// How many calls make the condition hold.
        at_least: usize,
    },
    /// The main agent's latest call of one of `tools` (an earlier call, not the one being
    /// decided) has every named input field matching.
    LastCall {
        /// The tools (aliases and MCP tails count).
        tools: Vec<String>,
        /// Input fields and what each must match (scalars as text).
        input: Vec<(String, Pattern)>,
    },
    /// An earlier Bash call ran a command whose unwrapped argv starts with these tokens.
    RanCommand(Tokens),
    /// An earlier edit of the main agent targeted a matching file.
    TouchedFile(Vec<String>),
    /// An earlier, completed edit of the main agent targeted this event's own file, after the
    /// last successful call of `since` when given.
    TouchedThisFile {
        /// Only edits after the last successful call of this tool (pipe spec) count.
        since: Option<String>,
    },
    /// The main agent's native task list (TaskCreate/TaskUpdate/TodoWrite) has (or has not)
    /// a task that is not completed.
    OpenTasks(bool),
    /// An earlier Read (subagents' included) targeted a matching file.
    ReadFile(Vec<String>),
    /// The tool was called in scope.
    UsedTool {
        /// Tool names (aliases and MCP tails count).
        names: Vec<String>,
        /// The current turn or the whole session.
        scope: Scope,
    },
    /// A Skill call in scope named one of these skills.
    UsedSkill {
        /// Skill names (`plugin:skill` also matches `skill`).
        names: Vec<String>,
        /// The current turn or the whole session.
        scope: Scope,
        /// Search subagent transcripts too.
        subagents: bool,
    },
    /// A user prompt in scope matches (case-insensitive).
    UserSaid {
        /// The regex.
        pattern: Pattern,
        /// The current turn or the whole session.
        scope: Scope,
    },
    /// The prose in scope (prompts and assistant text) matches.
    TextMatches {
        /// The regex (multi-line).
        pattern: Pattern,
        /// The current turn (with a Stop payload's `last_assistant_message`) or the session.
        scope: Scope,
    },
    /// The session is (or is not) waiting on background work.
    Waiting(bool),
    /// Plan mode is (or is not) on.
    InPlanMode(bool),
    /// The inner condition does not hold.
    Not(Box<Condition>),
    /// At least one holds.
    Any(Vec<Condition>),
    /// All hold.
    All(Vec<Condition>),
    /// A Rust predicate.
    Custom {
        /// Shown by `explain` and in errors.
        name: String,
        /// Whether it reads the tool call (for the "can never match" check).
        reads_tool: bool,
        /// The predicate.
        check: CustomCheck,
    },
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Condition({self})")
    }
}

fn list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::Tool(names) => write!(f, "{{ tool = {} }}", list(names)),
            Condition::McpTool(b) => write!(f, "{{ mcp_tool = {b} }}"),
            Condition::Runs(t) => write!(f, "{{ runs = {t}{} }}", exact(t)),
            Condition::PrimaryRuns(t) => write!(f, "{{ primary_runs = {t}{} }}", exact(t)),
            Condition::Command(p) => write!(f, "{{ command = {:?} }}", p.as_str()),
            Condition::ToolInput(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, p)| format!("{k} = {:?}", p.as_str()))
                    .collect();
                write!(f, "{{ tool_input = {{ {} }} }}", parts.join(", "))
            }
            Condition::Content {
                pattern,
                project_only,
            } => write!(
                f,
                "{{ content = {{ pattern = {:?}, project_only = {project_only} }} }}",
                pattern.as_str()
            ),
            Condition::FilePath {
                globs,
                project_only,
            } => {
                let g: Vec<String> = globs.iter().map(|g| g.as_str().to_owned()).collect();
                write!(
                    f,
                    "{{ file_path = {{ globs = {}, project_only = {project_only} }} }}",
                    list(&g)
                )
            }
            Condition::TestFile(b) => write!(f, "{{ test_file = {b} }}"),
            Condition::SourceEdits { lang, .. } => write!(f, "{{ source_edits = {lang:?} }}"),
            Condition::Agent(names) => write!(f, "{{ agent = {} }}", list(names)),
            Condition::FromSubagent(b) => write!(f, "{{ from_subagent = {b} }}"),
            Condition::SkipPermissions(b) => write!(f, "{{ skip_permissions = {b} }}"),
            Condition::PermissionMode(m) => write!(f, "{{ permission_mode = {} }}", list(m)),
            Condition::CodingAgent(a) => write!(f, "{{ coding_agent = {} }}", list(a)),
            Condition::Model(globs) => {
                let g: Vec<String> = globs.iter().map(|g| g.as_str().to_owned()).collect();
                write!(f, "{{ model = {} }}", list(&g))
            }
            Condition::Source(s) => write!(f, "{{ source = {} }}", list(s)),
            Condition::Annotated {
                key,
                value,
                session,
            } => match (value, session) {
                (None, false) => write!(f, "{{ annotated = {key:?} }}"),
                (v, s) => write!(
                    f,
                    "{{ annotated = {{ key = {key:?}, value = {v:?}, scope = \"{}\" }} }}",
                    if *s { "session" } else { "event" }
                ),
            },
            Condition::ReadOnlyCommand(b) => write!(f, "{{ read_only_command = {b} }}"),
            Condition::Deletes(risks) => {
                let names: Vec<String> = risks.iter().map(|r| r.name().to_owned()).collect();
                write!(f, "{{ deletes = {} }}", list(&names))
            }
            Condition::OnPath(program) => write!(f, "{{ on_path = {program:?} }}"),
            Condition::Args { tokens, pattern } => write!(
                f,
                "{{ args = {{ of = {tokens}, match = {:?}{} }} }}",
                pattern.as_str(),
                exact(tokens)
            ),
            Condition::UnreadCode(b) => write!(f, "{{ unread_code = {b} }}"),
            Condition::CallsSince {
                tools,
                since,
                at_least,
            } => write!(
                f,
                "{{ calls_since = {{ tools = {}, since = {}, at_least = {at_least} }} }}",
                list(tools),
                list(since)
            ),
            Condition::LastCall { tools, input } => {
                let parts: Vec<String> = input
                    .iter()
                    .map(|(k, p)| format!("{k} = {:?}", p.as_str()))
                    .collect();
                write!(
                    f,
                    "{{ last_call = {{ tool = {}, input = {{ {} }} }} }}",
                    list(tools),
                    parts.join(", ")
                )
            }
            Condition::RanCommand(t) => write!(f, "{{ ran_command = {t}{} }}", exact(t)),
            Condition::TouchedFile(g) => write!(f, "{{ touched_file = {} }}", list(g)),
            Condition::TouchedThisFile { since: None } => {
                write!(f, "{{ touched_this_file = true }}")
            }
            Condition::TouchedThisFile { since: Some(t) } => {
                write!(f, "{{ touched_this_file = {{ since = {t:?} }} }}")
            }
            Condition::OpenTasks(b) => write!(f, "{{ open_tasks = {b} }}"),
            Condition::ReadFile(g) => write!(f, "{{ read_file = {} }}", list(g)),
            Condition::UsedTool { names, scope } => write!(
                f,
                "{{ used_tool = {{ names = {}, scope = \"{}\" }} }}",
                list(names),
                scope_name(*scope)
            ),
            Condition::UsedSkill {
                names,
                scope,
                subagents,
            } => write!(
                f,
                "{{ used_skill = {{ names = {}, scope = \"{}\", subagents = {subagents} }} }}",
                list(names),
                scope_name(*scope)
            ),
            Condition::UserSaid { pattern, scope } => write!(
                f,
                "{{ user_said = {{ pattern = {:?}, scope = \"{}\" }} }}",
                pattern.as_str(),
                scope_name(*scope)
            ),
            Condition::TextMatches {
                pattern,
                scope: Scope::Session,
            } => write!(f, "{{ text_matches = {:?} }}", pattern.as_str()),
            Condition::TextMatches { pattern, scope } => write!(
                f,
                "{{ text_matches = {{ pattern = {:?}, scope = \"{}\" }} }}",
                pattern.as_str(),
                scope_name(*scope)
            ),
            Condition::Waiting(b) => write!(f, "{{ waiting = {b} }}"),
            Condition::InPlanMode(b) => write!(f, "{{ in_plan_mode = {b} }}"),
            Condition::Not(c) => write!(f, "{{ not = {c} }}"),
            Condition::Any(cs) | Condition::All(cs) => {
                let key = if matches!(self, Condition::Any(_)) {
                    "any"
                } else {
                    "all"
                };
                let inner: Vec<String> = cs.iter().map(ToString::to_string).collect();
                write!(f, "{{ {key} = [{}] }}", inner.join(", "))
            }
            Condition::Custom { name, .. } if name.starts_with('{') => f.write_str(name),
            Condition::Custom { name, .. } => write!(f, "{{ custom = {name:?} }}"),
        }
    }
}

/// Splits `"A|B"` entries into separate names.
pub fn split_names<S: AsRef<str>>(names: &[S]) -> Vec<String> {
    names
        .iter()
        .flat_map(|n| n.as_ref().split('|').map(str::to_owned).collect::<Vec<_>>())
        .filter(|n| !n.is_empty())
        .collect()
}

impl Condition {
    /// `tool`: names split on `|` and widened by their aliases.
    pub fn tool<S: AsRef<str>>(names: &[S]) -> Condition {
        let mut all = Vec::new();
        for n in split_names(names) {
            for s in tool_spellings(&n) {
                if !all.iter().any(|a: &String| a == s) {
                    all.push(s.to_owned());
                }
            }
        }
        Condition::Tool(all)
    }

    /// `file_path` over globs.
    pub fn file_path(globs: Vec<Glob>, project_only: bool) -> Condition {
        Condition::FilePath {
            globs,
            project_only,
        }
    }

    /// `source_edits` for a language key.
    pub fn source_edits(lang: &str) -> Condition {
        Condition::SourceEdits {
            lang: lang.to_owned(),
            globs: compile_globs(&language_globs(lang)),
        }
    }

    /// The same condition with every token list in it (`runs`, `primary_runs`, `ran_command`,
    /// nested ones included) matching the literal argv prefix alone.
    pub fn exact_tokens(self) -> Condition {
        match self {
            Condition::Runs(t) => Condition::Runs(t.exact(true)),
            Condition::PrimaryRuns(t) => Condition::PrimaryRuns(t.exact(true)),
            Condition::RanCommand(t) => Condition::RanCommand(t.exact(true)),
            Condition::Args { tokens, pattern } => Condition::Args {
                tokens: tokens.exact(true),
                pattern,
            },
            Condition::Not(inner) => Condition::Not(Box::new(inner.exact_tokens())),
            Condition::Any(cs) => Condition::Any(cs.into_iter().map(Self::exact_tokens).collect()),
            Condition::All(cs) => Condition::All(cs.into_iter().map(Self::exact_tokens).collect()),
            other => other,
        }
    }

    /// True when the condition can only hold on events that carry a tool call.
    pub fn reads_tool_call(&self) -> bool {
        match self {
            Condition::Tool(_)
            | Condition::McpTool(_)
            | Condition::Runs(_)
            | Condition::PrimaryRuns(_)
            | Condition::Command(_)
            | Condition::ToolInput(_)
            | Condition::Content { .. }
            | Condition::FilePath { .. }
            | Condition::SourceEdits { .. }
            | Condition::ReadOnlyCommand(true)
            | Condition::Deletes(_)
            | Condition::Args { .. }
            | Condition::UnreadCode(true)
            | Condition::TouchedThisFile { .. }
            | Condition::TestFile(true) => true,
            Condition::Custom { reads_tool, .. } => *reads_tool,
            Condition::All(cs) => cs.iter().any(Condition::reads_tool_call),
            Condition::Any(cs) => !cs.is_empty() && cs.iter().all(Condition::reads_tool_call),
            _ => false,
        }
    }

    /// Evaluates the condition.
    pub fn check(&self, evt: &Event) -> bool {
        match self {
            Condition::Tool(names) => match evt.tool_name() {
                Some(name) => {
                    names.iter().any(|n| n == name)
                        || capt_hook_transcript::names::mcp_tool(name)
                            .is_some_and(|tail| names.iter().any(|n| n == tail))
                }
                None => false,
            },
            Condition::McpTool(want) => {
                evt.tool_name().is_some_and(|n| n.starts_with("mcp__")) == *want
            }
            Condition::Runs(tokens) => evt
                .command_line()
                .is_some_and(|cl| tokens.matches_line_with(cl, evt.line_words())),
            Condition::PrimaryRuns(tokens) => evt
                .command_line()
                .is_some_and(|cl| tokens.matches_primary(cl)),
            Condition::Command(pattern) => match evt.command() {
                // Most patterns have a literal found in none of the texts: one search says so.
                Some(raw) if !raw.is_empty() && !pattern.may_match(evt.command_texts()) => false,
                Some(raw) if !raw.is_empty() => {
                    // A command written in the line just as it runs cannot match where the
                    // whole line did not, for a pattern that only asserts word boundaries.
                    let neutral = pattern.is_edge_neutral();
                    pattern.is_match(raw)
                        || evt
                            .joined_commands()
                            .iter()
                            .any(|j| !(neutral && j.in_raw) && pattern.is_match(&j.text))
                }
                _ => false,
            },
            Condition::ToolInput(fields) => match evt.tool_input() {
                Some(input) => fields_match(input, fields),
                None => false,
            },
            Condition::LastCall { tools, input } => evt
                .transcript()
                .session()
                .without_subagents()
                .tool_calls()
                .named_any(tools)
                .last()
                .is_some_and(|c| fields_match(c.input(), input)),
            Condition::Content {
                pattern,
                project_only,
            } => {
                if *project_only && !in_project(evt) {
                    return false;
                }
                evt.content()
                    .is_some_and(|c| !c.is_empty() && pattern.is_match(&c))
            }
            Condition::FilePath {
                globs,
                project_only,
            } => match evt.file() {
                Some(file) => {
                    (!*project_only || in_project(evt))
                        && globs.iter().any(|g| g.matches_path(file))
                }
                None => false,
            },
            Condition::TestFile(want) => {
                let is = evt
                    .file()
                    .is_some_and(|f| in_project(evt) && is_test_file(f));
                is == *want
            }
            Condition::SourceEdits { globs, .. } => {
                let edit = evt
                    .tool_name()
                    .is_some_and(|n| matches!(n, "Edit" | "Write" | "Create"));
                edit && evt.file().is_some_and(|f| {
                    in_project(evt) && globs.iter().any(|g| g.matches_path(f)) && !is_test_file(f)
                })
            }
            Condition::Agent(names) => evt
                .agent_type()
                .is_some_and(|t| names.iter().any(|n| n == t)),
            Condition::FromSubagent(want) => evt.is_subagent() == *want,
            Condition::SkipPermissions(want) => evt.skip_permissions() == *want,
            Condition::PermissionMode(modes) => evt
                .permission_mode()
                .is_some_and(|m| modes.iter().any(|x| x == m)),
            Condition::CodingAgent(names) => names.iter().any(|n| n == evt.coding_agent()),
            Condition::Model(globs) => evt
                .model()
                .is_some_and(|m| globs.iter().any(|g| g.matches_path(m))),
            Condition::Source(sources) => {
                evt.source().is_some_and(|s| sources.iter().any(|x| x == s))
            }
            Condition::Annotated {
                key,
                value,
                session,
            } => {
                let found = if *session {
                    let first = evt.transcript().session().first_prompt().unwrap_or("");
                    crate::event::annotations_in_header(first).remove(key)
                } else {
                    evt.annotations().get(key).cloned()
                };
                match found {
                    Some(v) => value.is_none() || value.as_deref() == v.as_deref(),
                    None => false,
                }
            }
            Condition::ReadOnlyCommand(want) => {
                let is = evt
                    .command_line()
                    .is_some_and(crate::readonly::is_read_only);
                is == *want
            }
            Condition::Deletes(wanted) => {
                let Some(line) = evt.command_line() else {
                    return false;
                };
                // Several hooks ask about the same line: the disk is read once per event.
                let found = evt.memo("deletes", || {
                    let cwd = evt.cwd().map(std::path::Path::new).or(evt.project_root());
                    crate::deletes::risks(line, cwd, &capt_hook_proto::paths::home())
                });
                found.iter().any(|r| wanted.contains(r))
            }
            Condition::OnPath(program) => on_path(evt, program),
            Condition::Args { tokens, pattern } => evt.command_line().is_some_and(|cl| {
                tokens.may_match_words(evt.line_words())
                    && tokens.any_args(cl, |args| pattern.is_match(args))
            }),
            Condition::UnreadCode(want) => {
                evt.command_line()
                    .is_some_and(|cl| cl.unread_code.is_some())
                    == *want
            }
            Condition::CallsSince {
                tools,
                since,
                at_least,
            } => {
                let calls = evt.transcript().session().without_subagents().tool_calls();
                let start = calls
                    .clone()
                    .named_any(since)
                    .last()
                    .map(|c| c.entry_index());
                calls
                    .named_any(tools)
                    .filter(|c| start.is_none_or(|s| c.entry_index() > s))
                    .count()
                    >= *at_least
            }
            Condition::RanCommand(tokens) => evt
                .transcript()
                .session()
                .with_subagents()
                .tool_calls()
                .named("Bash")
                .any(|call| crate::history::call_runs(call, tokens)),
            Condition::TouchedFile(globs) => evt.transcript().session().has_edit_to(globs),
            Condition::TouchedThisFile { since } => touched_this_file(evt, since.as_deref()),
            Condition::OpenTasks(want) => {
                evt.transcript().session().open_tasks().is_empty() != *want
            }
            Condition::ReadFile(globs) => {
                evt.transcript().session().with_subagents().has_read(globs)
            }
            Condition::UsedTool { names, scope } => evt
                .transcript()
                .scope(*scope)
                .tool_calls()
                .named_any(names)
                .exists(),
            Condition::UsedSkill {
                names,
                scope,
                subagents,
            } => {
                let window = evt.transcript().scope(*scope);
                let window = if *subagents {
                    window.with_subagents()
                } else {
                    window
                };
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                window.has_skill(&names)
            }
            Condition::UserSaid { pattern, scope } => {
                let window = evt.transcript().scope(*scope);
                let mut prompts = window.prompts();
                // On UserPromptSubmit the new prompt is not in the transcript yet.
                evt.prompt().is_some_and(|p| pattern.is_match(p))
                    || prompts.any(|p| pattern.is_match(p))
            }
            Condition::TextMatches { pattern, scope } => {
                // A Stop payload's closing message may not be in the transcript yet.
                let last = match scope {
                    Scope::Turn => evt
                        .payload()
                        .get("last_assistant_message")
                        .and_then(serde_json::Value::as_str),
                    Scope::Session => None,
                };
                last.is_some_and(|m| pattern.is_match(m))
                    || pattern.is_match(&evt.transcript().scope(*scope).prose_text())
            }
            Condition::Waiting(want) => is_waiting(evt) == *want,
            Condition::InPlanMode(want) => {
                let on = evt.permission_mode() == Some("plan") || {
                    let (enter, exit) = evt.transcript().session().plan_mode_counts();
                    enter > exit
                };
                on == *want
            }
            Condition::Not(c) => !c.check(evt),
            Condition::Any(cs) => cs.iter().any(|c| c.check(evt)),
            Condition::All(cs) => cs.iter().all(|c| c.check(evt)),
            Condition::Custom { check, .. } => check(evt),
        }
    }
}

/// The name of a transcript scope as written in hook files.
pub fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Turn => "turn",
        Scope::Session => "session",
    }
}

/// `touched_this_file`: an earlier edit of the main agent, answered without an error, targeted
/// the event's file (the call being decided, already in the transcript, never counts).
fn touched_this_file(evt: &Event, since: Option<&str>) -> bool {
    let Some(file) = evt.file() else {
        return false;
    };
    let this_call = evt
        .payload()
        .get("tool_use_id")
        .and_then(serde_json::Value::as_str);
    let calls = evt.transcript().session().without_subagents().tool_calls();
    // The cycle starts after the last call of `since` that succeeded (a rejected
    // ExitPlanMode keeps the same plan open).
    let start = since.and_then(|tool| {
        calls
            .clone()
            .named(tool)
            .filter(|c| c.result().is_some())
            .last()
            .map(|c| c.entry_index())
    });
    calls.edits().any(|c| {
        start.is_none_or(|s| c.entry_index() > s)
            && Some(c.id()) != this_call
            && c.result().is_some()
            && c.file_path() == Some(file)
    })
}

/// Every named field of `input` exists as a scalar and matches (bool and number as text).
fn fields_match(
    input: &serde_json::Map<String, serde_json::Value>,
    fields: &[(String, Pattern)],
) -> bool {
    fields.iter().all(|(key, pattern)| {
        let text = match input.get(key) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Bool(b)) => b.to_string(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            _ => return false,
        };
        pattern.is_match(&text)
    })
}

/// Background work the session waits on: payload-reported tasks or crons, background launches
/// the session's state recorded (`crate::spawns`), or what the transcript shows (engine.md §2.6).
pub fn is_waiting(evt: &Event) -> bool {
    let listed = |key: &str| {
        evt.payload()
            .get(key)
            .and_then(serde_json::Value::as_array)
            .is_some_and(|a| !a.is_empty())
    };
    if listed("background_tasks") || listed("session_crons") {
        return true;
    }
    // Launches recorded in earlier turns (`track_background`); a payload that lists the
    // background tasks is Claude Code's own answer and replaces them.
    let payload_lists = evt
        .payload()
        .get("background_tasks")
        .is_some_and(serde_json::Value::is_array);
    if !payload_lists && !crate::spawns::running(evt).is_empty() {
        return true;
    }
    let tools = crate::history::waiting_tools();
    let tools: Vec<&str> = tools.iter().map(String::as_str).collect();
    evt.transcript().waiting(&tools).is_waiting()
}

/// True when `program` is an executable file in a directory of the `PATH`: the request's own
/// when the event came through the host with one, else this process's.
fn on_path(evt: &Event, program: &str) -> bool {
    let path = match evt
        .context()
        .request_env
        .as_ref()
        .and_then(|e| e.get("PATH"))
    {
        Some(p) => std::ffi::OsString::from(p),
        None => match std::env::var_os("PATH") {
            Some(p) => p,
            None => return false,
        },
    };
    std::env::split_paths(&path).any(|dir| is_executable(&dir.join(program)))
}

fn is_executable(file: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn in_project(evt: &Event) -> bool {
    evt.file()
        .is_some_and(|f| is_project_path(f, evt.project_root()))
}

/// Which events a condition list can never match on, for load-time validation: the conditions
/// that read a tool call, when none of `events` carries one.
pub fn never_matches(conditions: &[Condition], events: crate::events::EventSet) -> Option<usize> {
    if events.intersects(crate::events::TOOL_EVENTS) {
        return None;
    }
    // `file_path` and `test_file` also read the file FileChanged & co. are about.
    let file_events = events.intersects(crate::events::FILE_EVENTS);
    conditions.iter().position(|c| {
        c.reads_tool_call()
            && !(file_events && matches!(c, Condition::FilePath { .. } | Condition::TestFile(true)))
    })
}

/// Evaluates `only_if` then `skip_if`; returns where the first deciding condition sits.
pub fn first_miss(evt: &Event, only_if: &[Condition], skip_if: &[Condition]) -> Option<Miss> {
    if let Some(i) = only_if.iter().position(|c| !c.check(evt)) {
        return Some(Miss::OnlyIf(i));
    }
    skip_if.iter().position(|c| c.check(evt)).map(Miss::SkipIf)
}

/// Where the condition that kept a hook from matching sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// `only_if[i]` did not hold.
    OnlyIf(usize),
    /// `skip_if[i]` held.
    SkipIf(usize),
}

impl Miss {
    /// `only_if[0] { tool = ["Bash"] } does not hold`, for the lists the miss was found in.
    pub fn describe(self, only_if: &[Condition], skip_if: &[Condition]) -> String {
        match self {
            Miss::OnlyIf(i) => match only_if.get(i) {
                Some(c) => format!("only_if[{i}] {c} does not hold"),
                None => format!("only_if[{i}] does not hold"),
            },
            Miss::SkipIf(i) => match skip_if.get(i) {
                Some(c) => format!("skip_if[{i}] {c} holds"),
                None => format!("skip_if[{i}] holds"),
            },
        }
    }
}

#[cfg(test)]
#[path = "condition_tests.rs"]
mod tests;

//! The hook file format (`.claude/hooks/*.toml`) as serde types. The JSON Schema printed by
//! `capt-hook schema` is generated from these, so the schema and the loader cannot disagree.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

/// A hook file: a list of `[[hook]]` tables.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "captain-hook hook file")]
pub struct HookFile {
    /// The hooks, registered in the order written.
    #[serde(default)]
    pub hook: Vec<HookEntry>,
}

/// One value or a list of them.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A single value.
    One(T),
    /// Several values.
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    /// The values as a list.
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// An event name, as Claude Code spells it.
pub use capt_hook_core::EventKind as EventName;

/// The literal `"unlimited"`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unlimited {
    /// No limit.
    Unlimited,
}

/// A fire limit: a count, or `"unlimited"`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MaxFiresSpec {
    /// At most this many delivered results per session, hook and agent.
    Count(u32),
    /// No limit.
    Unlimited(Unlimited),
}

/// A regex with options.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ContentSpec {
    /// A regex (the file must lie in the project).
    Pattern(String),
    /// A regex and whether the file must lie in the project.
    Options {
        /// The regex (multi-line).
        pattern: String,
        /// The file must lie in the project (default true).
        #[serde(default = "yes")]
        project_only: bool,
    },
}

/// Globs with options.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum FilePathSpec {
    /// One glob.
    One(String),
    /// Several globs.
    Many(Vec<String>),
    /// Globs and whether the file must lie in the project.
    Options {
        /// The globs.
        globs: OneOrMany<String>,
        /// The file must lie in the project (default true).
        #[serde(default = "yes")]
        project_only: bool,
    },
}

/// An annotation key, or a key with a required value.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AnnotatedSpec {
    /// The key.
    Key(String),
    /// The key, value and scope.
    Options {
        /// The key.
        key: String,
        /// The required value.
        #[serde(default)]
        value: Option<String>,
        /// `event` (default: the call itself) or `session` (the session's first prompt).
        #[serde(default)]
        scope: AnnotatedScope,
    },
}

/// Where an annotation is looked for.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AnnotatedScope {
    /// The call itself (its shell comments, prompt or skill header).
    #[default]
    Event,
    /// The session's first prompt.
    Session,
}

fn yes() -> bool {
    true
}

/// An ast-grep pattern with options.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PatternCondSpec {
    /// A pattern; the language comes from the file's extension.
    Pattern(String),
    /// A pattern, its language and whether the file must lie in the project.
    Options {
        /// The ast-grep pattern.
        pattern: String,
        /// The language (`py`, `ts`, `tsx`, `js`, `rs`, `go`, `bash`).
        lang: Option<String>,
        /// The file must lie in the project (default true).
        #[serde(default = "yes")]
        project_only: bool,
    },
}

/// A transcript scope.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ScopeSpec {
    /// The current turn (from the latest user prompt on).
    #[default]
    Turn,
    /// The whole session.
    Session,
}

/// Tool names, optionally with a scope.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum UsedToolSpec {
    /// One name (current turn).
    One(String),
    /// Several names (current turn).
    Many(Vec<String>),
    /// Names and scope.
    Options {
        /// Tool names.
        names: OneOrMany<String>,
        /// `turn` (default) or `session`.
        #[serde(default)]
        scope: ScopeSpec,
    },
}

/// Skill names, optionally with a scope.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum UsedSkillSpec {
    /// One name (current turn).
    One(String),
    /// Several names (current turn).
    Many(Vec<String>),
    /// Names, scope and whether subagents count.
    Options {
        /// Skill names.
        names: OneOrMany<String>,
        /// `turn` (default) or `session`.
        #[serde(default)]
        scope: ScopeSpec,
        /// Subagents' skill calls count too (default true).
        #[serde(default = "yes")]
        subagents: bool,
    },
}

/// A regex over user prompts, optionally with a scope.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum UserSaidSpec {
    /// A regex (current turn, case-insensitive).
    Pattern(String),
    /// A regex and scope.
    Options {
        /// The regex.
        pattern: String,
        /// `turn` (default) or `session`.
        #[serde(default)]
        scope: ScopeSpec,
    },
}

/// A regex over the transcript's prose, optionally with a scope.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TextMatchesSpec {
    /// A regex over the whole session's prose.
    Pattern(String),
    /// A regex and scope.
    Options {
        /// The regex.
        pattern: String,
        /// `session` (default) or `turn` (the current turn, plus a Stop payload's
        /// `last_assistant_message`).
        scope: Option<ScopeSpec>,
    },
}

/// `touched_this_file`: `true`/`false`, or the tool whose last successful call opens the window.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TouchedThisFileSpec {
    /// Any earlier edit in the session (`true`), or none (`false`).
    Flag(bool),
    /// Only edits after the last successful call of `since` (a tool name; `"A|B"` splits).
    Since {
        /// The tool.
        since: String,
    },
}

/// A signal pattern, optionally weighted.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SignalPatternSpec {
    /// A regex of weight 1.
    Pattern(String),
    /// A regex and its weight.
    Weighted {
        /// The regex, searched in each piece of prose.
        pattern: String,
        /// Its weight (default 1).
        #[serde(default = "one")]
        weight: u32,
    },
}

fn one() -> u32 {
    1
}

/// The literal `"turn"`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TurnLiteral {
    /// The current turn.
    Turn,
}

/// How much prose signals read: the last N pieces, or the current turn.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum WindowSpec {
    /// The last N pieces of prose.
    Count(usize),
    /// The current turn.
    Turn(TurnLiteral),
}

/// Whose prose signals read.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OriginSpec {
    /// The agent's own text.
    #[default]
    Assistant,
    /// The agent's text and the user's prompts.
    Any,
}

/// Signals: a list of regexes (weight 1, threshold 1), or weighted patterns with options.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SignalsSpec {
    /// Regexes of weight 1; any match fires.
    List(Vec<String>),
    /// Weighted patterns with a threshold and a window.
    Options {
        /// The patterns.
        patterns: Vec<SignalPatternSpec>,
        /// The score at which the nudge fires (default 1).
        #[serde(default = "one")]
        threshold: u32,
        /// The last N pieces of prose (default 15), or `"turn"`.
        window: Option<WindowSpec>,
        /// `assistant` (default) or `any` (user prompts too).
        #[serde(default)]
        origin: OriginSpec,
    },
}

/// One workflow step.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    /// A label for the step.
    pub name: Option<String>,
    /// Holds once the step is done (any condition, against the stopping agent's transcript).
    pub check: ConditionSpec,
    /// What to tell the agent while it is not done.
    pub message: String,
}

/// One assertion on an artifact's JSON.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssertSpec {
    /// JSON pointer to the value (`/errors`).
    pub pointer: String,
    /// Largest allowed number.
    pub max: Option<f64>,
    /// Smallest allowed number.
    pub min: Option<f64>,
    /// Required value.
    pub equals: Option<serde_json::Value>,
    /// The block message when the assertion fails.
    pub message: String,
}

/// A file the workflow must produce.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactSpec {
    /// The path (relative to the agent's working directory).
    pub path: String,
    /// A JSON Schema the file must satisfy.
    pub schema: Option<serde_json::Value>,
    /// Assertions on the file's content.
    #[serde(default, rename = "assert")]
    pub asserts: Vec<AssertSpec>,
}

/// One rule of a `styleguide`: an ast-grep `pattern` or a structural `match`, exactly one.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StyleRuleSpec {
    /// The rule's name.
    pub name: String,
    /// The ast-grep pattern that finds violations.
    pub pattern: Option<String>,
    /// A structural matcher (`imports & child_of(control_flow) & ~under(type_checking)`;
    /// docs/code-patterns.md lists the vocabulary).
    #[serde(rename = "match")]
    pub matcher: Option<String>,
    /// The section's message; `{violations}` is replaced by the list, else the list follows.
    pub message: String,
    /// The language (default: the styleguide's `lang`).
    pub lang: Option<String>,
    /// Flag only violations the edit introduces.
    #[serde(default)]
    pub diff: bool,
    /// What each violation is called in the list (default: the matched code, or the name a
    /// matched definition binds).
    pub label: Option<String>,
    /// Inline tests of this rule; they run as the styleguide's own.
    #[serde(default)]
    pub test: Vec<TestSpec>,
}

/// `{ args = { of = ["git", "push"], match = '…' } }`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgsSpec {
    /// The argv whose words are searched: a token list, as `runs` takes.
    pub of: Vec<String>,
    /// A regex searched in that argv's words after the program, joined by single spaces.
    #[serde(rename = "match")]
    pub pattern: String,
    /// Match `of` as the literal argv prefix alone.
    #[serde(default)]
    pub exact: bool,
}

/// A condition: an inline table with exactly one key.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ConditionSpec {
    /// The tool is one of these names (`"A|B"` splits; aliases and MCP tails count).
    Tool(OneOrMany<String>),
    /// The tool is (or is not) an MCP tool.
    McpTool(bool),
    /// Some parsed command, nested ones included, starts with these tokens.
    Runs(Vec<String>),
    /// The primary command, wrappers stripped, starts with these tokens.
    PrimaryRuns(Vec<String>),
    /// The regex matches the raw command line or some command's words.
    Command(String),
    /// Every named top-level input field exists and matches its regex.
    ToolInput(BTreeMap<String, String>),
    /// The edit's new text matches.
    Content(ContentSpec),
    /// The event's file matches (fnmatch, whole path or basename).
    FilePath(FilePathSpec),
    /// The event's file is (or is not) a project test file.
    TestFile(bool),
    /// An Edit/Write of a non-test source file of this language (`py`, `rs`, `ts`, …).
    SourceEdits(String),
    /// The subagent type is one of these.
    Agent(OneOrMany<String>),
    /// The event comes (or does not come) from a subagent.
    FromSubagent(bool),
    /// Claude Code runs (or does not run) with permission prompts skipped.
    SkipPermissions(bool),
    /// The payload's permission mode is one of these.
    PermissionMode(OneOrMany<String>),
    /// The coding agent running the session is one of these (`claude`, `codex`, `gemini`,
    /// `factory`, `cursor`, `copilot`; `"A|B"` splits).
    CodingAgent(OneOrMany<String>),
    /// The model the event is about matches one of these globs (`to_model` on PreModelSwitch
    /// and PostModelSwitch, `model` on SessionStart).
    Model(OneOrMany<String>),
    /// The payload's `source` is one of these (`command`, `picker`, `sdk`, `startup`, …).
    Source(OneOrMany<String>),
    /// The call carries a `ccx:<key>[=<value>]` annotation.
    Annotated(AnnotatedSpec),
    /// Every command in the line is (or is not) a known read-only program.
    ReadOnlyCommand(bool),
    /// Some `rm` target of the line, resolved and read on disk now, has one of these risks:
    /// `root`, `home`, `repo_root`, `contains_repo`, `outside_repo`, `broad_glob`.
    Deletes(OneOrMany<String>),
    /// An executable of this name is on the `PATH`.
    OnPath(String),
    /// Some argv the line runs matches `of` (as `runs`) and its words after the program,
    /// joined by single spaces, match the regex `match`.
    Args(ArgsSpec),
    /// The line runs (or does not run) interpreter code (`python -c`, `node -e`, `perl -e`,
    /// `ruby -e`) that could not be read to the end.
    UnreadCode(bool),
    /// The main agent called one of `tools` at least `at_least` times since its last call of
    /// one of `since`.
    CallsSince(CallsSinceSpec),
    /// The main agent's latest call of the tool has input fields matching.
    LastCall(LastCallSpec),
    /// The edit leaves a comment block over budget that it created or lengthened (`true`: the
    /// default budget).
    CommentBudget(CommentBudgetSpec),
    /// The edit rewords a comment block that was already over the default budget without
    /// growing it (`reworded`), or most of the lines it adds are comments (`mostly_comments`).
    CommentEdit(CommentEditSpec),
    /// The edited hook file (its text after the edit) does not load, or has a hook without an
    /// inline test.
    HookFileProblems(bool),
    /// The edit's new text contains a structural (ast-grep) match.
    Pattern(PatternCondSpec),
    /// An earlier Bash call ran a command whose unwrapped argv starts with these tokens.
    RanCommand(Vec<String>),
    /// `{ runs = [...], exact = true }`: the literal argv prefix alone. The loader rewrites the
    /// two-key table to this one-key form before serde reads it.
    #[schemars(skip)]
    RunsExact(Vec<String>),
    /// `{ primary_runs = [...], exact = true }`, rewritten like `RunsExact`.
    #[schemars(skip)]
    PrimaryRunsExact(Vec<String>),
    /// `{ ran_command = [...], exact = true }`, rewritten like `RunsExact`.
    #[schemars(skip)]
    RanCommandExact(Vec<String>),
    /// An earlier edit of the main agent targeted a matching file.
    TouchedFile(OneOrMany<String>),
    /// An earlier, completed edit of the main agent targeted this event's own file.
    TouchedThisFile(TouchedThisFileSpec),
    /// The main agent's native task list (TaskCreate/TaskUpdate/TodoWrite) has (or, with
    /// `false`, has not) a task that is not completed.
    OpenTasks(bool),
    /// An earlier Read (subagents' included) targeted a matching file.
    ReadFile(OneOrMany<String>),
    /// The tool was called in scope (default: the current turn).
    UsedTool(UsedToolSpec),
    /// A Skill call in scope named the skill (default: the current turn).
    UsedSkill(UsedSkillSpec),
    /// A user prompt in scope matches (case-insensitive; default: the current turn).
    UserSaid(UserSaidSpec),
    /// The transcript's prose (user prompts and assistant text) matches (default: the session).
    TextMatches(TextMatchesSpec),
    /// The session is (or is not) waiting on background work.
    Waiting(bool),
    /// Plan mode is (or is not) on.
    InPlanMode(bool),
    /// The inner condition does not hold.
    Not(Box<ConditionSpec>),
    /// At least one holds (`[]` never holds).
    Any(Vec<ConditionSpec>),
    /// All hold (`[]` always holds).
    All(Vec<ConditionSpec>),
}

/// `calls_since = { tools = [...], since = [...], at_least = N }`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallsSinceSpec {
    /// The tools counted (`"A|B"` splits).
    pub tools: OneOrMany<String>,
    /// The tools whose last call starts the count (`"A|B"` splits).
    pub since: OneOrMany<String>,
    /// How many calls make the condition hold (at least 1).
    pub at_least: usize,
}

/// `last_call = { tool = "...", input = { field = regex } }`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LastCallSpec {
    /// The tool (`"A|B"` splits).
    pub tool: OneOrMany<String>,
    /// Input fields and the regex each must match.
    pub input: BTreeMap<String, String>,
}

/// What `comment_edit` looks for.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CommentEditSpec {
    /// An already-long comment block reworded, not grown.
    Reworded,
    /// More than half of at least four added lines are comment lines.
    MostlyComments,
}

/// `comment_budget = true`, or the budget spelled out.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CommentBudgetSpec {
    /// `true`: three lines or 200 characters for a plain block, six lines or 400 characters for
    /// a doc comment's opening paragraph.
    Default(bool),
    /// Each cap (the default's where left out).
    Options {
        /// Lines of a plain block.
        lines: Option<usize>,
        /// Characters of a plain block.
        chars: Option<usize>,
        /// Lines of a doc comment's opening paragraph.
        doc_lines: Option<usize>,
        /// Characters of a doc comment's opening paragraph.
        doc_chars: Option<usize>,
    },
}

/// The verdict an inline test expects.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ExpectSpec {
    /// A block.
    Block,
    /// A warning.
    Warn,
    /// No result or an allow.
    Allow,
    /// No result (the dialog would show).
    Ask,
    /// A rewrite.
    Rewrite,
}

/// One inline test.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestSpec {
    /// The simulated event.
    #[serde(default)]
    pub input: capt_hook_engine::inline::Input,
    /// The verdict the hook must give.
    pub expect: ExpectSpec,
    /// Regex the message must contain (rewrite: substring of the new `command`).
    pub pattern: Option<String>,
    /// Rewrite: substrings each named field of the new input must contain.
    pub fields: Option<BTreeMap<String, String>>,
    /// Regex the user-visible notice must contain.
    pub system_message: Option<String>,
    /// With `expect = "allow"`: require an actual allow, not just no result.
    #[serde(default)]
    pub explicit: bool,
}

/// Declares one kind's table: its own fields plus the fields every kind accepts.
macro_rules! kind_spec {
    ($(#[$meta:meta])* $name:ident { $($(#[$fmeta:meta])* $field:ident : $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
            /// Optional stable label; the name becomes `<file stem>:<kind>_<slug(name)>`.
            pub name: Option<String>,
            /// The events to listen to (default per kind).
            #[schemars(with = "Option<OneOrMany<EventName>>")]
            pub events: Option<OneOrMany<String>>,
            /// Conditions that must all hold, checked in order.
            #[serde(default)]
            pub only_if: Vec<ConditionSpec>,
            /// Conditions any of which skips the hook.
            #[serde(default)]
            pub skip_if: Vec<ConditionSpec>,
            /// Delivered results allowed per session, hook and agent.
            pub max_fires: Option<MaxFiresSpec>,
            /// A warning from this hook rides along on another hook's deny.
            #[serde(default)]
            pub advisory_on_deny: bool,
            /// Skip SubagentStart/SubagentStop for planning agent types.
            pub skip_planning_agents: Option<bool>,
            /// Skip events whose file is gitignored (default true).
            #[serde(default = "yes")]
            pub respect_gitignore: bool,
            /// Run after the reply (never on a decision event).
            #[serde(default, rename = "async")]
            pub is_async: bool,
            /// PreToolUse/PermissionRequest only: never let the call through unchecked.
            #[serde(default)]
            pub mandatory: bool,
            /// Token lists of this hook (`argv`, `runs`, `primary_runs`, `ran_command`) keep
            /// the literal argv prefix alone: no wrappers, spellings or git options seen through.
            #[serde(default)]
            pub exact: bool,
            /// PreToolUse: a warning from this hook also grants permission
            /// (`permissionDecision: "allow"`); without it a warning only adds context.
            #[serde(default)]
            pub approve: bool,
            /// Stop/SubagentStop: give a blocking verdict again while Claude Code is already
            /// continuing because of a stop hook (`stop_hook_active`); default false except for
            /// `gate` and `workflow`, which limit their own repetition.
            pub repeat: Option<bool>,
            /// A blocking hook's block stands only when a judge agrees the call is what `rule`
            /// protects against (a judge that cannot answer within `timeout_s` allows).
            pub confirm: Option<ConfirmSpec>,
            /// Inline tests.
            #[serde(default)]
            pub test: Vec<TestSpec>,
        }
    };
}

kind_spec!(
    /// Block or warn with a fixed message.
    HookSpec {
        /// The message, delivered verbatim.
        message: String,
        /// Block instead of warn.
        #[serde(default)]
        block: bool,
    }
);

kind_spec!(
    /// Block a Bash command at PreToolUse.
    BlockCommandSpec {
        /// Token list (argv prefix; `*` one word, `a|b` either word).
        argv: Option<Vec<String>>,
        /// Regex over the raw line and each command's words.
        pattern: Option<String>,
        /// Why: the message is `BLOCKED: <reason>. <hint>.`
        reason: String,
        /// What to do instead.
        hint: Option<String>,
    }
);

kind_spec!(
    /// Warn about a Bash command (PostToolUse by default).
    WarnCommandSpec {
        /// Token list (argv prefix; `*` one word, `a|b` either word).
        argv: Option<Vec<String>>,
        /// Regex over the raw line and each command's words.
        pattern: Option<String>,
        /// The warning.
        message: String,
    }
);

kind_spec!(
    /// Rewrite a Bash command before it runs.
    RewriteCommandSpec {
        /// A regex (replaced everywhere), or a structural pattern with `$NAME` metavariables.
        pattern: String,
        /// The replacement (`\1`, `\g<name>`, `$1`, `${name}`).
        replace: String,
        /// Context for the agent.
        note: Option<String>,
    }
);

kind_spec!(
    /// Add a field to a tool's input when it is absent.
    SetToolInputSpec {
        /// The tool (`"A|B"` splits).
        tool: String,
        /// The input field.
        field: String,
        /// Its value.
        value: serde_json::Value,
        /// Context for the agent.
        note: Option<String>,
    }
);

kind_spec!(
    /// Approve matching calls (PreToolUse and PermissionRequest by default).
    ApproveSpec {
        /// What is approved, in a few words.
        label: String,
    }
);

kind_spec!(
    /// Deny matching calls (PreToolUse and PermissionRequest by default).
    DenySpec {
        /// Why.
        reason: String,
    }
);

kind_spec!(
    /// Record the session's background launches (Bash and Agent calls run in the background) in
    /// its state, so `waiting` sees them after the turn that launched them.
    TrackBackgroundSpec {}
);

kind_spec!(
    /// Leave matching calls to the user (PreToolUse, PreSkillShellCommand and
    /// PermissionRequest by default): Claude Code asks, whatever other hooks approve.
    AskSpec {
        /// Why the user is asked.
        reason: String,
    }
);

kind_spec!(
    /// Lint the edited file (PostToolUse by default); only changed lines are reported.
    LintSpec {
        /// An ast-grep pattern; each match is a violation.
        pattern: Option<String>,
        /// A regex; each matching line is a violation.
        regex: Option<String>,
        /// The language (default `py`); its extensions guard the hook.
        lang: Option<String>,
        /// The message; `{violations}` is replaced by the list.
        message: String,
        /// Between listed violations (default `, `).
        sep: Option<String>,
        /// How many violations to list (default 5).
        max_shown: Option<usize>,
        /// Lint only files containing this text.
        trigger: Option<String>,
        /// Deny instead of warning.
        #[serde(default)]
        block: bool,
    }
);

kind_spec!(
    /// Lint only what an edit introduces.
    DiffLintSpec {
        /// An ast-grep pattern.
        pattern: String,
        /// The language (default `py`).
        lang: Option<String>,
        /// The message; `{violations}` is replaced by the list.
        message: String,
        /// Between listed violations (default `, `).
        sep: Option<String>,
        /// How many violations to list (default 5).
        max_shown: Option<usize>,
        /// Lint only files containing this text.
        trigger: Option<String>,
        /// Deny instead of warning.
        #[serde(default)]
        block: bool,
    }
);

kind_spec!(
    /// Rewrite the new text of an edit with an ast-grep fix template (PreToolUse).
    RewriteCodeSpec {
        /// The ast-grep pattern.
        pattern: String,
        /// The replacement template (`$X`, `$$$X`).
        replace: String,
        /// The language (default: from the file extension).
        lang: Option<String>,
        /// Context for the agent.
        note: Option<String>,
        /// Only rewrite files inside the project (default true).
        #[serde(default = "yes")]
        project_only: bool,
    }
);

kind_spec!(
    /// Apply a list of ast-grep style rules to an edit; one aggregated warning or deny.
    StyleguideSpec {
        /// The rules.
        rules: Vec<StyleRuleSpec>,
        /// The default language of the rules (default `py`).
        lang: Option<String>,
        /// Deny instead of warning.
        #[serde(default)]
        block: bool,
        /// How many violations to list per rule (default 5).
        max_shown: Option<usize>,
    }
);

kind_spec!(
    /// Warn (or block) with a message; once per session by default.
    NudgeSpec {
        /// The message (dedented and trimmed).
        message: String,
        /// Block instead of warning (then once per turn, and never while waiting).
        #[serde(default)]
        block: bool,
        /// Fire only when the agent's recent prose scores.
        signals: Option<SignalsSpec>,
        /// A veto checked before the signals: the hook fires only when this condition holds.
        when: Option<ConditionSpec>,
        /// Skip while the session waits on background work (default: a blocking hook skips on
        /// Stop/SubagentStop; `false` never skips, `true` skips on every event).
        guards_waiting: Option<bool>,
        /// Read only the transcript's last this many events, 1 to 256 (default: all).
        transcript_events: Option<u16>,
    }
);

kind_spec!(
    /// Block Stop/SubagentStop once per turn per agent; skipped while waiting.
    GateSpec {
        /// The message (dedented and trimmed).
        message: String,
        /// Fire only when the agent's recent prose scores.
        signals: Option<SignalsSpec>,
        /// A veto checked before the signals: the hook fires only when this condition holds.
        when: Option<ConditionSpec>,
        /// Skip while the session waits on background work (default: a blocking hook skips on
        /// Stop/SubagentStop; `false` never skips, `true` skips on every event).
        guards_waiting: Option<bool>,
        /// Read only the transcript's last this many events, 1 to 256 (default: all).
        transcript_events: Option<u16>,
    }
);

kind_spec!(
    /// A multi-step workflow a subagent must finish before it stops.
    WorkflowSpec {
        /// Prefixes every message: `<LABEL> INCOMPLETE: …`.
        label: String,
        /// The text the agent writes when it believes it is done.
        marker: String,
        /// The steps, in order.
        steps: Vec<StepSpec>,
        /// Files that must exist and validate once the marker appears.
        #[serde(default)]
        artifacts: Vec<ArtifactSpec>,
    }
);

/// A model tier.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ModelSpec {
    /// Fast and cheap (haiku by default).
    Small,
    /// The middle tier (sonnet by default).
    Medium,
    /// The strongest tier (opus by default).
    Large,
}

/// Who judges.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BackendSpec {
    /// Jev when `TYPESAFE_API_KEY` is set, else the `claude` CLI.
    Auto,
    /// The `claude` CLI.
    Claude,
    /// The `codex` CLI.
    Codex,
    /// The command in `CAPT_HOOK_LLM_COMMAND`.
    Command,
    /// TypeSafe Jev.
    Jev,
}

/// Where `llm_approve`'s base rules come from.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RubricDefaultsSpec {
    /// Claude Code's auto-mode rules for the project (`claude auto-mode config`), else ours.
    Claude,
    /// Our built-in rules.
    Builtin,
    /// None: `rubric` is the whole rubric.
    None,
}

/// The type of a custom verdict field.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ResponseTypeSpec {
    /// `true` or `false`.
    Bool,
    /// Free text.
    String,
    /// A whole number (`min`/`max` bound it).
    Integer,
    /// One of `choices`.
    Choice,
}

/// One field of a custom verdict.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseFieldSpec {
    /// The field's name (`{name}` in the message substitutes it).
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: ResponseTypeSpec,
    /// What it means, for the model.
    pub description: Option<String>,
    /// `choice`: the allowed values.
    pub choices: Option<Vec<String>>,
    /// `integer`: the smallest value.
    pub min: Option<i64>,
    /// `integer`: the largest value.
    pub max: Option<i64>,
}

/// A built-in evidence block.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ContextName {
    /// `<before_edit>`: the edited file around the change, before the call.
    BeforeEdit,
    /// `<after_edit>`: the edited file around the change, after the call.
    AfterEdit,
    /// `<introduced>`: what the edit adds (`pattern` matches, or `kinds` nodes on changed lines).
    Introduced,
    /// `<tag>`: fixed text the hook file gives (a channel's purpose, a policy).
    Text,
    /// `<tool_call>`: the call being decided, its tool name and input as JSON (a subagent's
    /// prompt, a plan), capped at 12,000 characters; required unless it says otherwise.
    ToolCall,
}

/// An evidence block, by name or with options.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ContextSpec {
    /// The block, optional.
    Name(ContextName),
    /// The block, and whether the judge is skipped (no fire consumed) without it.
    Options {
        /// Which block.
        context: ContextName,
        /// Skip the judge when the block is empty (default: true for `introduced`, else false).
        required: Option<bool>,
        /// `introduced`: an ast-grep pattern; its new matches are listed.
        pattern: Option<String>,
        /// `introduced`: tree-sitter node kinds (`comment`, …) listed when on changed lines.
        kinds: Option<Vec<String>>,
        /// `text`: the block's name.
        tag: Option<String>,
        /// `text`: what the block says.
        text: Option<String>,
    },
}

/// How much of each piece of the transcript window the judge sees.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetSpec {
    /// Characters of one piece of prose (default 600).
    pub prose: Option<usize>,
    /// Characters of one tool call's input (default 200).
    pub call: Option<usize>,
    /// Characters of one tool result (default 300).
    pub result: Option<usize>,
}

kind_spec!(
    /// A judge decides: block (`llm_gate`) or warn (`llm_nudge`) when its verdict fires.
    LlmSpec {
        /// The question for the judge.
        prompt: String,
        /// What the hook says: literal, or a `{field}` template over the verdict.
        message: String,
        /// Stable identity: the hook's name derives from it instead of the prompt.
        label: Option<String>,
        /// Custom verdict fields (default `{block, reasoning}` / `{fire, reasoning}`).
        response: Option<Vec<ResponseFieldSpec>>,
        /// The boolean field that fires the hook (default `block` / `fire`).
        verdict: Option<String>,
        /// Judge only when the agent's recent prose scores.
        signals: Option<SignalsSpec>,
        /// A veto checked before the signals: the judge is asked only when this condition holds.
        when: Option<ConditionSpec>,
        /// Evidence blocks after the transcript window.
        #[serde(default)]
        contexts: Vec<ContextSpec>,
        /// `llm_gate`: skip while the session waits on background work (default true on
        /// Stop/SubagentStop).
        guards_waiting: Option<bool>,
        /// Quiet for the rest of the turn once an LLM hook fired in it (default: on, except
        /// on tool events).
        once_per_turn: Option<bool>,
        /// Characters of transcript the judge reads (default 2000).
        max_context: Option<usize>,
        /// `small` (default), `medium` or `large`.
        model: Option<ModelSpec>,
        /// The specialty (default `review`): `config.toml`'s `[llm.specialties]` or a
        /// built-in one (`general`, `review`, `debugging`).
        specialty: Option<String>,
        /// Who judges (default: the specialty's, else the project's `CAPT_HOOK_LLM_BACKEND`,
        /// else `auto`).
        backend: Option<BackendSpec>,
        /// Give the judge read-only tools over the project (default true).
        agent: Option<bool>,
        /// Show the judge the recent transcript (default true).
        transcript: Option<bool>,
        /// Show each tool call's result in the transcript window.
        #[serde(default)]
        tool_results: bool,
        /// How much of each prose piece, call and result the window keeps.
        budget: Option<BudgetSpec>,
        /// Show the working-tree diff; a clean tree or no repository means no call.
        #[serde(default)]
        diff: bool,
        /// `llm_gate`: block with this remediation when the judge cannot answer.
        on_incomplete: Option<String>,
        /// Seconds the judge may take (default 90), always within the event's deadline.
        timeout_s: Option<f64>,
        /// Under Jev: `true` sends verdicts that fire on to the `claude` judge (which sees
        /// Jev's answer), `false` never does (default: escalate when `message` names a text
        /// field, which Jev cannot write).
        escalate: Option<bool>,
        /// Where the judge's CLI is not installed: `fail` (default) like a judge that cannot
        /// answer, or `skip` quietly (`capt-hook pack list` says why).
        without_judge: Option<WithoutJudgeSpec>,
    }
);

/// What an LLM hook does where its judge cannot run.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WithoutJudgeSpec {
    /// Fail as a judge that cannot answer does.
    Fail,
    /// Say nothing.
    Skip,
}

/// `confirm = { rule, timeout_s }`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmSpec {
    /// What the block protects against, in one sentence.
    pub rule: String,
    /// Seconds to wait for the judge before allowing (default 3).
    pub timeout_s: Option<f64>,
}

kind_spec!(
    /// A judge answers permission dialogs it finds safe with allow; it never denies.
    LlmApproveSpec {
        /// Short name for the hook.
        label: String,
        /// The project's own rules, read before the base rules.
        rubric: Option<String>,
        /// Where the base rules come from (default `claude`).
        defaults: Option<RubricDefaultsSpec>,
        /// `small` (default), `medium` or `large`.
        model: Option<ModelSpec>,
        /// The specialty (default `general`): `config.toml`'s `[llm.specialties]` or a
        /// built-in one (`general`, `review`, `debugging`).
        specialty: Option<String>,
        /// Who judges (default: the specialty's, else the project's `CAPT_HOOK_LLM_BACKEND`,
        /// else `auto`).
        backend: Option<BackendSpec>,
        /// Seconds the judge may take (default 90), always within the event's deadline.
        timeout_s: Option<f64>,
    }
);

kind_spec!(
    /// Answers the host's ResourcePressure stages: warns, then stops a process a judge rates
    /// disposable (SIGTERM, then SIGKILL if it ignores it).
    StopRunawaySpec {
        /// The `warn` stage's message.
        message: String,
        /// Regexes over the process's and its ancestors' command lines: a match is never
        /// stopped (beside the built-in screen).
        #[serde(default)]
        exclude: Vec<String>,
        /// `small` (default), `medium` or `large`.
        model: Option<ModelSpec>,
        /// The specialty (default `general`).
        specialty: Option<String>,
        /// Who judges (default: the specialty's, else the project's).
        backend: Option<BackendSpec>,
        /// Seconds the judge may take (default 30), within the event's deadline.
        timeout_s: Option<f64>,
    }
);

// A ticket's reach and a duration are read by an inline test's `tickets` input too, which
// every hook carries, so they live with that input in the engine; this is their path in the
// format.
pub use capt_hook_engine::inline::{DurationSpec, ReachSpec};

/// `user_said` in a ticket rule: a regex template, or options.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TicketSaidSpec {
    /// A case-insensitive regex over the user's prompts; `{key}` is the place value, escaped.
    Pattern(String),
    /// A pattern and the place keys the prompt must name.
    Options {
        /// The regex template (optional when `names` is given).
        pattern: Option<String>,
        /// Place keys whose values the prompt must name as whole words.
        #[serde(default)]
        names: Vec<String>,
    },
}

/// `user_answered` in a ticket rule.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketAnsweredSpec {
    /// A regex template over the question and its options (`{key}` is the place value).
    pub pattern: Option<String>,
    /// Only an approving answer counts: an option other than the last, a last option that
    /// reads as a go, or typed words that hold nothing back (default true in a rule, false in a
    /// judge's `over`).
    pub approved: Option<bool>,
}

/// How much transcript a judge reads: `true`/`"recent"` (the last 2000 characters), a number
/// of characters, `"full"`, or `false` (none).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ReadingSpec {
    /// `true`: the recent window; `false`: none.
    Flag(bool),
    /// The last this many characters.
    Chars(usize),
    /// `"recent"` or `"full"`.
    Word(String),
}

/// `touched` in a ticket rule: `true` (a call naming every place value), or regex templates.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TouchedSpec {
    /// `true`: an earlier call whose input or result names every non-empty place value.
    Naming(bool),
    /// Case-insensitive regex templates (`{key}` is the place value) over a call's tool,
    /// input and result; any matching counts.
    Patterns(Vec<String>),
}

/// `user_ruled` in a ticket rule: the user's durable rulings recorded before the session.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserRuledSpec {
    /// A place key: rulings naming the action's value of it as a whole name count.
    pub key: Option<String>,
    /// Tags each ruling found by `key` must carry.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Ruling ids that stand whatever the action.
    #[serde(default)]
    pub ids: Vec<String>,
}

/// One evidence source a judge reads: exactly one of `user_said`, `user_answered`, `touched`,
/// `user_ruled`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideOverSpec {
    /// The user's prompts (optionally only those matching).
    pub user_said: Option<TicketSaidSpec>,
    /// The user's answers (optionally only those to matching questions; default: approving
    /// or not).
    pub user_answered: Option<TicketAnsweredSpec>,
    /// The tree's earlier tool calls.
    pub touched: Option<TouchedSpec>,
    /// The user's durable rulings.
    pub user_ruled: Option<UserRuledSpec>,
}

/// `decide` in a ticket rule: a judge cites the user's words that permit the action.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideSpec {
    /// The hook's rules for this kind of action, in prose.
    pub rules: String,
    /// `small` (default), `medium` or `large`.
    pub model: Option<ModelSpec>,
    /// The specialty (default `review`): `config.toml`'s `[llm.specialties]` or a built-in one.
    pub specialty: Option<String>,
    /// Who judges (default: the project's `CAPT_HOOK_LLM_BACKEND`, else `auto`).
    pub backend: Option<BackendSpec>,
    /// Seconds each asking of the judge may take (default 20); past it the rule found nothing.
    pub deadline: Option<f64>,
    /// Ask a refusal again on the evidence alone; refuse only when both refuse (default true).
    #[serde(default = "yes")]
    pub second_opinion: bool,
    /// The evidence the judge reads (default: every prompt and every answer in the window).
    pub over: Option<Vec<DecideOverSpec>>,
    /// The acting session's transcript the judge also reads (default false).
    pub transcript: Option<ReadingSpec>,
    /// For a subagent's call: the spawning session's transcript (default false).
    pub root_transcript: Option<ReadingSpec>,
    /// The transcript windows show tool results (default false).
    #[serde(default)]
    pub tool_results: bool,
    /// An answer Jev does not settle goes to the LLM (default true); false: Jev alone judges
    /// and an unsettled answer refuses.
    #[serde(default = "yes")]
    pub llm: bool,
    /// Evidence blocks shown to the first asking before the evidence (`text` blocks, or the
    /// edit-shaped ones of the LLM hooks).
    #[serde(default)]
    pub contexts: Vec<ContextSpec>,
}

/// One rule that mints a ticket: a name and exactly one evidence source.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketRuleSpec {
    /// The rule's name, recorded on the ticket.
    pub name: String,
    /// The user said it in one of their own prompts in the window.
    pub user_said: Option<TicketSaidSpec>,
    /// The user answered an AskUserQuestion in the window.
    pub user_answered: Option<TicketAnsweredSpec>,
    /// A judge cites the user's words or answers.
    pub decide: Option<DecideSpec>,
    /// Any condition holds.
    pub condition: Option<ConditionSpec>,
    /// An earlier tool call of the tree touched the place.
    pub touched: Option<TouchedSpec>,
    /// A durable ruling of the user's covers it.
    pub user_ruled: Option<UserRuledSpec>,
}

kind_spec!(
    /// Permission tickets: allow an action a live ticket covers, else mint one from the first
    /// rule whose evidence holds, else deny with `deny`.
    TicketsSpec {
        /// The ticket kind (`chat.post`).
        ticket: String,
        /// The place keys, each read from the tool input by JSON pointer (`/channel`) or a
        /// `{field}` template.
        place: BTreeMap<String, String>,
        /// `action` (this one call) or `place` (every later call at the same place).
        reach: ReachSpec,
        /// The rules that mint a ticket, in order.
        rules: Vec<TicketRuleSpec>,
        /// What the agent can do to get permission, said on every deny.
        deny: String,
        /// One line naming the action (a `{key}` template over the place).
        summary: Option<String>,
        /// How long a minted ticket lives (default 7 days).
        ttl: Option<DurationSpec>,
        /// How many recent messages (user and assistant lines) of each session the evidence is
        /// read from (default 60).
        window: Option<usize>,
        /// Markers of a prompt a tool wrote on the user's behalf.
        #[serde(default)]
        machine: Vec<String>,
        /// A covered call is allowed outright (default true); false: the ticket only lifts the
        /// deny and Claude Code's permission flow decides.
        #[serde(default = "yes")]
        grant: bool,
    }
);

/// Declares [`HookEntry`] and the one table of kind names the loader reads it by.
macro_rules! hook_entries {
    ($($(#[$meta:meta])* $name:literal => $variant:ident($spec:ty),)*) => {
        /// One `[[hook]]` table; `kind` picks the primitive.
        #[derive(Debug, Clone, Deserialize, JsonSchema)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum HookEntry {
            $($(#[$meta])* $variant($spec),)*
        }

        impl HookEntry {
            /// Every `kind`, in declaration order.
            pub const KINDS: &[&str] = &[$($name),*];

            /// Reads the rest of a `[[hook]]` table (without its `kind` key) as the spec of
            /// `kind`; serde then names the path of whatever it rejects. `None`: no such kind.
            pub fn read<'de, D: serde::Deserializer<'de>>(
                kind: &str,
                rest: D,
            ) -> Option<Result<HookEntry, serde_path_to_error::Error<D::Error>>> {
                match kind {
                    $($name => Some(serde_path_to_error::deserialize(rest).map(HookEntry::$variant)),)*
                    _ => None,
                }
            }

            /// [`HookEntry::read`] without the path: the same reading at about two thirds of
            /// the cost, for the common case of a table that reads cleanly. Read again with
            /// [`HookEntry::read`] to name what a rejected table got wrong.
            pub fn read_unpathed<'de, D: serde::Deserializer<'de>>(
                kind: &str,
                rest: D,
            ) -> Option<Result<HookEntry, D::Error>> {
                match kind {
                    $($name => Some(<$spec as Deserialize>::deserialize(rest).map(HookEntry::$variant)),)*
                    _ => None,
                }
            }
        }
    };
}

hook_entries! {
    /// Block or warn with a fixed message.
    "hook" => Hook(HookSpec),
    /// Block a Bash command.
    "block_command" => BlockCommand(BlockCommandSpec),
    /// Warn about a Bash command.
    "warn_command" => WarnCommand(WarnCommandSpec),
    /// Rewrite a Bash command.
    "rewrite_command" => RewriteCommand(RewriteCommandSpec),
    /// Add a missing tool-input field.
    "set_tool_input" => SetToolInput(SetToolInputSpec),
    /// Approve calls.
    "approve" => Approve(ApproveSpec),
    /// Deny calls.
    "deny" => Deny(DenySpec),
    /// Leave calls to the user.
    "ask" => Ask(AskSpec),
    /// Record background launches.
    "track_background" => TrackBackground(TrackBackgroundSpec),
    /// Lint edits.
    "lint" => Lint(LintSpec),
    /// Lint what edits introduce.
    "diff_lint" => DiffLint(DiffLintSpec),
    /// Rewrite code in edits.
    "rewrite_code" => RewriteCode(RewriteCodeSpec),
    /// Apply style rules to edits.
    "styleguide" => Styleguide(StyleguideSpec),
    /// Nudge the agent.
    "nudge" => Nudge(NudgeSpec),
    /// Gate the agent's stop.
    "gate" => Gate(GateSpec),
    /// Hold a subagent to a workflow.
    "workflow" => Workflow(WorkflowSpec),
    /// Block when a model judges so.
    "llm_gate" => LlmGate(LlmSpec),
    /// Warn when a model judges so.
    "llm_nudge" => LlmNudge(LlmSpec),
    /// Answer permission dialogs a model finds safe.
    "llm_approve" => LlmApprove(LlmApproveSpec),
    /// Permission tickets.
    "tickets" => Tickets(TicketsSpec),
    /// Warn about, then stop, a runaway process.
    "stop_runaway" => StopRunaway(StopRunawaySpec),
}

/// The JSON Schema of a hook file, pretty-printed.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(HookFile);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

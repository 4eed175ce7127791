//! LLM hooks: `llm_gate` (block when a judge says so) and `llm_nudge` (warn when it says so).
//!
//! A judge is slow and costs money, so it runs last: the hook's conditions, `when`, signals, the
//! once-per-turn throttle and every required piece of evidence are checked first, and any of
//! them saying no means no call (and no fire consumed). The call itself runs on the handler
//! pool, so several LLM hooks of one event judge side by side, with one deadline inside the
//! event's. A judge that fails or runs out of time gives no verdict: the hook then fails
//! visibly (logged, and on a guarded event the call is left to the user), or blocks with its
//! `on_incomplete` remediation. The models and backends live in `capt-hook-llm`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capt_hook_core::{Event, EventKind, EventSet, HookResult};
use capt_hook_llm::prompt::{Block, transcript_window, with_final_reply};
use capt_hook_llm::{Call, Settings, evidence};
use capt_hook_state::{PrimitiveState, TurnThrottle};
use serde_json::{Map, Value};

pub use capt_hook_llm::prompt::Budget;
pub use capt_hook_llm::{
    BackendChoice, Field, FieldType, Size, Specialties, Specialty, Template, VerdictSchema,
};

use crate::session::{Signals, When, waiting_guards};
use capt_hook_engine::hook::{HandlerError, HandlerFn, HandlerResult, short_hash};
use capt_hook_engine::primitives::{CustomKind, DefError, HookDef, custom};

/// A message computed from the verdict (Rust SDK).
pub type MessageFn = Arc<dyn Fn(&Map<String, Value>) -> String + Send + Sync>;

/// What the hook says when the judge fires it.
#[derive(Clone)]
pub enum Message {
    /// A literal, or a `{field}` template over the verdict (only `{identifier}` substitutes).
    Template(Template),
    /// Computed from the verdict.
    Fn(MessageFn),
}

impl From<&str> for Message {
    fn from(text: &str) -> Message {
        Message::Template(Template::new(text))
    }
}

impl From<String> for Message {
    fn from(text: String) -> Message {
        Message::Template(Template::new(text))
    }
}

/// Renders a custom context's text for an event (`None` or empty: nothing to show).
pub type ContextFn = Arc<dyn Fn(&Event) -> Option<String> + Send + Sync>;

/// A piece of evidence rendered as its own tagged block after the transcript window.
#[derive(Clone)]
pub enum Context {
    /// `<before_edit>`: the edited file around the change, before the call.
    BeforeEdit {
        /// Skip the judge (no fire consumed) when there is no such text.
        required: bool,
    },
    /// `<after_edit>`: the edited file around the change, after the call.
    AfterEdit {
        /// Skip the judge (no fire consumed) when there is no such text.
        required: bool,
    },
    /// `<introduced>`: what the edit adds that the file did not have, one `line N: text` per
    /// find: matches of an ast-grep pattern (new ones only), or nodes of the given tree-sitter
    /// kinds (`comment`, …) on changed lines. Empty for files in no supported language.
    Introduced {
        /// The ast-grep pattern, compiled for each file's language.
        pattern: Option<Arc<capt_hook_code::AnyLangPattern>>,
        /// Node kinds whose nodes on changed lines count.
        kinds: Vec<String>,
        /// Skip the judge (no fire consumed) when nothing was introduced (default true).
        required: bool,
    },
    /// Any evidence, computed in Rust.
    Custom {
        /// The block's tag.
        tag: String,
        /// Skip the judge (no fire consumed) when it renders nothing.
        required: bool,
        /// The text.
        render: ContextFn,
    },
}

impl Context {
    /// `<introduced>` for an ast-grep `pattern` (any supported language) and/or tree-sitter
    /// node `kinds`; required (no call when nothing was introduced).
    pub fn introduced(pattern: Option<&str>, kinds: &[&str]) -> Result<Context, DefError> {
        let pattern = pattern
            .map(|p| capt_hook_code::AnyLangPattern::new(p).map(Arc::new))
            .transpose()
            .map_err(|e| DefError::new("contexts", e.to_string()))?;
        if pattern.is_none() && kinds.is_empty() {
            return Err(DefError::new(
                "contexts",
                "`introduced` needs a pattern or node kinds to look for",
            ));
        }
        Ok(Context::Introduced {
            pattern,
            kinds: kinds.iter().map(|k| (*k).to_owned()).collect(),
            required: true,
        })
    }

    /// The block's tag.
    pub(crate) fn tag(&self) -> &str {
        match self {
            Context::BeforeEdit { .. } => "before_edit",
            Context::AfterEdit { .. } => "after_edit",
            Context::Introduced { .. } => "introduced",
            Context::Custom { tag, .. } => tag,
        }
    }

    /// No judge without this block.
    pub(crate) fn required(&self) -> bool {
        match self {
            Context::BeforeEdit { required } | Context::AfterEdit { required } => *required,
            Context::Introduced { required, .. } | Context::Custom { required, .. } => *required,
        }
    }

    /// The block's text for `evt`, when there is any.
    pub(crate) fn render(&self, evt: &Event) -> Option<String> {
        let excerpts = || {
            let images = evt.edit_images()?;
            Some(evidence::edit_excerpts(
                &images.pre,
                &images.post,
                EDIT_EXCERPT_CHARS,
            ))
        };
        match self {
            Context::BeforeEdit { .. } => excerpts().map(|(before, _)| before),
            Context::AfterEdit { .. } => excerpts().map(|(_, after)| after),
            Context::Introduced { pattern, kinds, .. } => {
                introduced(evt, pattern.as_deref(), kinds)
            }
            Context::Custom { render, .. } => render(evt),
        }
        .filter(|t| !t.trim().is_empty())
    }
}

/// What the event's edit introduces, as `line N: text` lines (see [`Context::Introduced`]).
fn introduced(
    evt: &Event,
    pattern: Option<&capt_hook_code::AnyLangPattern>,
    kinds: &[String],
) -> Option<String> {
    use capt_hook_code::{Lang, ParsedCode, changed_lines, diff_lint};
    let images = evt.edit_images()?;
    let lang = Lang::from_path(evt.file()?)?;
    let mut lines: Vec<(usize, String)> = Vec::new();
    if let Some(p) = pattern.and_then(|p| p.for_lang(lang)) {
        lines.extend(
            diff_lint(p, &images.pre, &images.post)
                .into_iter()
                .map(|v| (v.line, v.snippet)),
        );
    }
    if !kinds.is_empty() {
        let changed = changed_lines(&images.pre, &images.post);
        let parsed = ParsedCode::parse(lang, &images.post).ok()?;
        let mut stack = vec![parsed.ts_root()];
        while let Some(node) = stack.pop() {
            let line = node.start_position().row + 1;
            if kinds.iter().any(|k| k == node.kind()) && changed.iter().any(|r| r.contains(&line)) {
                let text = images.post.get(node.byte_range()).unwrap_or("").trim();
                lines.push((line, text.lines().next().unwrap_or("").to_owned()));
                continue;
            }
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }
    lines.sort();
    lines.dedup();
    let out: Vec<String> = lines
        .into_iter()
        .map(|(n, text)| format!("line {n}: {text}"))
        .collect();
    Some(out.join("\n"))
}

/// Characters of an edited file shown before and after the change.
const EDIT_EXCERPT_CHARS: usize = 4000;
/// Characters of the working-tree diff.
const DIFF_CHARS: usize = 8000;
/// The specialty of `llm_gate` and `llm_nudge` when they name none (the seeds' default).
pub const DEFAULT_SPECIALTY: &str = "review";
/// The specialty of judges that name none of their own (`confirm`, `prompt_check`).
pub const GENERAL_SPECIALTY: &str = "general";

/// Each loaded project's specialties, by project root: set when the project loads, read by its
/// judges (a worker serves one project; `capt-hook run` loads one).
static SPECIALTIES: parking_lot::Mutex<std::collections::BTreeMap<PathBuf, Arc<Specialties>>> =
    parking_lot::Mutex::new(std::collections::BTreeMap::new());

/// Records the specialties of the project at `root`: the registration point through which
/// loading a project (`capt-hook-serve`, which reads its `config.toml`) tells its judges.
pub fn set_specialties(root: &std::path::Path, specialties: Specialties) {
    SPECIALTIES
        .lock()
        .insert(root.to_path_buf(), Arc::new(specialties));
}

/// The specialties of the event's project (the built-in ones for a project never loaded).
fn specialties(evt: &Event) -> Arc<Specialties> {
    evt.project_root()
        .and_then(|root| SPECIALTIES.lock().get(root).cloned())
        .unwrap_or_default()
}

/// Why the judge of `specialty` (as the project at `root` configures it, under this process's
/// environment) cannot run here, if it cannot: what `capt-hook pack list` shows for LLM hooks
/// that skip without a judge.
pub fn missing_judge(root: Option<&std::path::Path>, specialty: &str) -> Option<String> {
    let table = root
        .and_then(|r| SPECIALTIES.lock().get(r).cloned())
        .unwrap_or_default();
    let spec = table.get(specialty)?;
    match Settings::from_lookup(|k| std::env::var(k).ok()) {
        Ok(s) => s.for_specialty(spec).missing_judge(
            None,
            &VerdictSchema::gate(),
            std::env::var_os("PATH").as_deref(),
        ),
        Err(e) => Some(e.to_string()),
    }
}

/// Why the judge this event's hook would ask cannot run here, if it cannot.
fn judge_missing(evt: &Event, o: &LlmOptions) -> Option<String> {
    let table = specialties(evt);
    // An unknown specialty is the judge call's own error to report.
    let spec = table.get(&o.specialty)?;
    match Settings::from_lookup(|k| env_var(evt, k)) {
        Ok(s) => s.for_specialty(spec).missing_judge(
            o.backend,
            &o.response,
            std::env::var_os("PATH").as_deref(),
        ),
        Err(e) => Some(e.to_string()),
    }
}

/// How long a judge may take when the event has no deadline of its own.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90);
/// Time kept back from the event's deadline to turn a verdict into a reply.
const DEADLINE_MARGIN: Duration = Duration::from_millis(1500);

/// The options of `llm_gate` and `llm_nudge`; [`LlmOptions::gate`] and [`LlmOptions::nudge`]
/// give the defaults.
#[derive(Clone)]
pub struct LlmOptions {
    /// The question for the judge.
    pub prompt: String,
    /// What the hook says when it fires.
    pub message: Message,
    /// The verdict's shape.
    pub response: VerdictSchema,
    /// The boolean field that fires the hook.
    pub verdict: String,
    /// Stable identity: the hook's name derives from it instead of the prompt.
    pub label: Option<String>,
    /// Judge only when the agent's recent prose scores.
    pub signals: Option<Signals>,
    /// Judge only when this holds.
    pub when: Option<When>,
    /// Evidence blocks, in order.
    pub contexts: Vec<Context>,
    /// Skip while the session waits on background work (`None`: gates on Stop/SubagentStop;
    /// `Some(true)`: on every event, for a nudge too).
    pub guards_waiting: Option<bool>,
    /// Stay quiet for the rest of the turn once an LLM hook or gate fired in it (`None`: on,
    /// except on tool events, where every call is judged).
    pub once_per_turn: Option<bool>,
    /// Characters of transcript the judge reads.
    pub max_context: usize,
    /// The model tier.
    pub model: Size,
    /// The specialty (default `review`): the project's `config.toml` maps it to a judge and
    /// model names; an unknown one is a load error.
    pub specialty: String,
    /// The judge (`None`: the specialty's, else the project's `CAPT_HOOK_LLM_BACKEND`, else
    /// `auto`).
    pub backend: Option<BackendChoice>,
    /// Give the judge read-only tools over the project.
    pub agent: bool,
    /// Show the judge the recent transcript.
    pub transcript: bool,
    /// Show each tool call's result in the transcript window.
    pub tool_results: bool,
    /// How much of each prose piece, call and result the window keeps.
    pub budget: Budget,
    /// Show the working-tree diff; no diff (or no repository) means no call.
    pub diff: bool,
    /// Block with this remediation when the judge cannot answer (gates).
    pub on_incomplete: Option<String>,
    /// The judge's own time limit (`None`: [`DEFAULT_TIMEOUT`]), always within the event's.
    pub timeout: Option<Duration>,
    /// Under Jev, which verdicts the `claude` judge must confirm (`None`: the verdicts that
    /// fire when the message names a text field, since Jev writes no prose; else none).
    pub escalate: Option<EscalateFn>,
    /// What the hook does where no judge can run (its CLI is not installed): fail visibly
    /// (the default), or stay quiet ([`WithoutJudge::Skip`], what the builtin packs use).
    pub without_judge: WithoutJudge,
}

/// What an LLM hook does when the judge it would ask cannot run on this machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum WithoutJudge {
    /// Ask anyway and fail as a judge that cannot answer does (logged; `on_incomplete` applies).
    #[default]
    Fail,
    /// Say nothing: the hook is skipped, and `capt-hook pack list` says why.
    Skip,
}

impl LlmOptions {
    fn new(prompt: String, message: Message, response: VerdictSchema, verdict: &str) -> Self {
        LlmOptions {
            prompt,
            message,
            response,
            verdict: verdict.to_owned(),
            label: None,
            signals: None,
            when: None,
            contexts: Vec::new(),
            guards_waiting: None,
            once_per_turn: None,
            max_context: 2000,
            model: Size::Small,
            specialty: DEFAULT_SPECIALTY.to_owned(),
            backend: None,
            agent: true,
            transcript: true,
            tool_results: false,
            budget: Budget::default(),
            diff: false,
            on_incomplete: None,
            timeout: None,
            escalate: None,
            without_judge: WithoutJudge::Fail,
        }
    }

    /// A gate's defaults: `GateVerdict {block, reasoning}`, fired by `block`.
    pub fn gate(prompt: impl Into<String>, message: impl Into<Message>) -> LlmOptions {
        LlmOptions::new(
            prompt.into(),
            message.into(),
            VerdictSchema::gate(),
            "block",
        )
    }

    /// A nudge's defaults: `NudgeVerdict {fire, reasoning}`, fired by `fire`.
    pub fn nudge(prompt: impl Into<String>, message: impl Into<Message>) -> LlmOptions {
        LlmOptions::new(
            prompt.into(),
            message.into(),
            VerdictSchema::nudge(),
            "fire",
        )
    }
}

/// The verdict schema of a Rust type deriving `JsonSchema`: `bool` fields, `String`s, integers
/// (bounded by `#[schemars(range(min = …, max = …))]` or their type), and enums of unit variants
/// (as choices). Every field is required, as a verdict's are; anything else is an error naming
/// the field.
pub fn verdict_schema_of<T: schemars::JsonSchema>() -> Result<VerdictSchema, DefError> {
    let root = schemars::schema_for!(T);
    let root = root.as_value();
    let err = |m: String| DefError::new("response", m);
    // A field's schema, with a `$ref` to the root's definitions followed.
    let resolve = |v: &Value| -> Value {
        match v.get("$ref").and_then(Value::as_str) {
            Some(r) => r
                .rsplit('/')
                .next()
                .and_then(|name| root.pointer(&format!("/$defs/{name}")))
                .cloned()
                .unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let props = root
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| err("the verdict type must be a struct with named fields".into()))?;
    let mut fields = Vec::new();
    for (name, prop) in props {
        let p = resolve(prop);
        let description = prop
            .get("description")
            .or_else(|| p.get("description"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let choices: Option<Vec<String>> = p
            .get("enum")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .or_else(|| {
                p.get("oneOf").and_then(Value::as_array).map(|a| {
                    a.iter()
                        .filter_map(|v| v.get("const").and_then(Value::as_str).map(str::to_owned))
                        .collect()
                })
            });
        let ty = match (p.get("type").and_then(Value::as_str), choices) {
            (_, Some(c)) if !c.is_empty() => FieldType::Choice(c),
            (Some("boolean"), _) => FieldType::Bool,
            (Some("string"), _) => FieldType::String,
            (Some("integer"), _) => FieldType::Integer {
                min: p.get("minimum").and_then(Value::as_f64).map(|m| m as i64),
                max: p.get("maximum").and_then(Value::as_f64).map(|m| m as i64),
            },
            _ => {
                return Err(err(format!(
                    "field `{name}`: a verdict field is a bool, a String, an integer or an enum \
                     of unit variants, and never optional (got {p})"
                )));
            }
        };
        fields.push(Field::new(name, ty, description));
    }
    VerdictSchema::new(fields).map_err(|e| err(e.0))
}

/// A gate judged by a model: blocks Stop and SubagentStop (by default) when the verdict says
/// so, at most once per turn per agent, never while the session waits on background work.
#[track_caller]
pub fn llm_gate(options: LlmOptions) -> Result<HookDef, DefError> {
    build(options, true)
}

/// A nudge judged by a model: warns after tool calls (by default) when the verdict says so,
/// three times per session and agent by default.
#[track_caller]
pub fn llm_nudge(options: LlmOptions) -> Result<HookDef, DefError> {
    build(options, false)
}

#[track_caller]
fn build(o: LlmOptions, block: bool) -> Result<HookDef, DefError> {
    use EventKind::*;
    if o.prompt.trim().is_empty() {
        return Err(DefError::new("prompt", "an LLM hook needs a prompt"));
    }
    match o.response.field(&o.verdict) {
        Some(f) if f.ty == FieldType::Bool => {}
        Some(_) => {
            return Err(DefError::new(
                "verdict",
                format!("`{}` is not a boolean field of the response", o.verdict),
            ));
        }
        None => {
            return Err(DefError::new(
                "verdict",
                format!(
                    "the response has no field `{}`; name the boolean field that fires the hook",
                    o.verdict
                ),
            ));
        }
    }
    if let Message::Template(t) = &o.message {
        if t.render(&Map::new()).trim().is_empty() {
            return Err(DefError::new("message", "an LLM hook needs a message"));
        }
        if let Some(missing) = t
            .fields()
            .into_iter()
            .find(|f| o.response.field(f).is_none())
        {
            return Err(DefError::new(
                "message",
                format!(
                    "`{{{missing}}}` names no field of the response (fields: {})",
                    o.response
                        .fields()
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    if !block && o.on_incomplete.is_some() {
        return Err(DefError::new(
            "on_incomplete",
            "`on_incomplete` applies to llm_gate only; a nudge never blocks",
        ));
    }
    if o.on_incomplete
        .as_deref()
        .is_some_and(|m| m.trim().is_empty())
    {
        return Err(DefError::new("on_incomplete", "the remediation is empty"));
    }
    if o.specialty.trim().is_empty() {
        return Err(DefError::new("specialty", "the specialty is empty"));
    }
    let kind = if block { "llm_gate" } else { "llm_nudge" };
    let specialty = o.specialty.clone();
    let identity = o.label.clone().unwrap_or_else(|| o.prompt.clone());
    let label = o.label.clone();
    let skip_guards = waiting_guards(block, o.guards_waiting);
    let def = custom(CustomKind {
        kind,
        default_events: if block {
            EventSet::of(&[Stop, SubagentStop])
        } else {
            EventSet::of(&[PostToolUse])
        },
        guards: Vec::new(),
        skip_guards,
        handler: handler(o, block, format!("{kind}_{}", short_hash(&identity))),
        identity,
        skip_planning_agents: !block,
        default_max_fires: if block { None } else { Some(3) },
        // A judge waits on a process or the network: never on the dispatching thread.
        inline: false,
        manages_repetition: block,
    })
    .with_specialty(specialty);
    Ok(match label {
        Some(l) => def.name(l),
        None => def,
    })
}

/// What an inline test's stubbed judge answers: `input.llm` over the schema's defaults.
#[derive(Debug, Clone, Default)]
pub struct LlmStub {
    /// Set by the inline-test runner; a real event never has it.
    pub active: bool,
    /// The fields given in the test (`error` makes the judge fail with that text).
    pub values: Map<String, Value>,
}

/// The event memo key under which the test runner leaves the [`LlmStub`].
pub const STUB_KEY: &str = "captain_hook.llm_stub";

/// Why the judge (or the inline-test stub) gave no verdict.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// An inline test's stub asked for a failure (`llm = { error = "…" }`).
    #[error("stubbed judge failure: {0}")]
    Stubbed(String),
    /// An inline test's stub fields do not fit the verdict.
    #[error("the test's `llm` stub does not fit the verdict: {0}")]
    StubShape(#[source] capt_hook_llm::ShapeError),
    /// The hook names a specialty the project's table lacks.
    #[error("the specialty `{name}` is not configured (known: {known})")]
    UnknownSpecialty {
        /// The specialty asked for.
        name: String,
        /// The configured ones.
        known: String,
    },
    /// The judge variables cannot be used.
    #[error(transparent)]
    Settings(#[from] capt_hook_llm::SettingsError),
    /// The judge was asked and failed.
    #[error(transparent)]
    Call(#[from] capt_hook_llm::CallError),
}

impl LlmStub {
    fn answer(
        &self,
        schema: &VerdictSchema,
        base: Option<&Map<String, Value>>,
    ) -> Result<Map<String, Value>, AskError> {
        if let Some(e) = self.values.get("error") {
            return Err(AskError::Stubbed(
                e.as_str().map_or_else(|| e.to_string(), str::to_owned),
            ));
        }
        let mut verdict = schema.stub();
        for (k, v) in base.into_iter().flatten().chain(&self.values) {
            verdict.insert(k.clone(), v.clone());
        }
        schema
            .validate(&Value::Object(verdict))
            .map_err(AskError::StubShape)
    }
}

/// A variable as the event's sender set it: request-scoped names from the request, when the
/// event came through the host; everything else from this process.
pub(crate) fn env_var(evt: &Event, name: &str) -> Option<String> {
    match &evt.context().request_env {
        Some(env) => env.get(name).cloned().or_else(|| {
            // A request-scoped name the sender did not set is unset: the worker's own value
            // belongs to whichever session started it.
            (!capt_hook_proto::is_request_env(name))
                .then(|| std::env::var(name).ok())
                .flatten()
        }),
        None => std::env::var(name).ok(),
    }
}

/// When the judge must have answered: its own limit, within the event's deadline.
fn call_deadline(timeout: Option<Duration>) -> Instant {
    let own = Instant::now() + timeout.unwrap_or(DEFAULT_TIMEOUT);
    match capt_hook_engine::dispatch::current_deadline() {
        Some(d) => own.min(d.checked_sub(DEADLINE_MARGIN).unwrap_or(d)),
        None => own,
    }
}

/// The evidence blocks, or `None` when a required one is empty (no call, no fire).
fn evidence_blocks(evt: &Event, o: &LlmOptions) -> Option<Vec<Block>> {
    let mut blocks = Vec::new();
    // Own contexts without signals or `when` mean the author assembled the evidence.
    let own_context = !o.contexts.is_empty() && o.signals.is_none() && o.when.is_none();
    if o.transcript && !own_context {
        let window = transcript_window(evt.transcript(), o.max_context, o.tool_results, o.budget);
        // StopFailure's field of the same name is the API's error, not a reply.
        let reply = matches!(evt.kind(), EventKind::Stop | EventKind::SubagentStop)
            .then(|| {
                evt.payload()
                    .get("last_assistant_message")
                    .and_then(Value::as_str)
            })
            .flatten();
        let window = with_final_reply(window, reply, o.max_context, o.budget);
        if !window.is_empty() {
            blocks.push(Block::new("context", window));
        }
    }
    if o.diff {
        let stub = evt.memo(STUB_KEY, LlmStub::default);
        let diff = if stub.active {
            Some("diff --git a/src/lib.rs b/src/lib.rs\n+// inline test stub".to_owned())
        } else {
            let root = evt
                .project_root()
                .map(std::path::Path::to_path_buf)
                .or_else(|| evt.cwd().map(std::path::PathBuf::from))?;
            evidence::git_diff(&root, call_deadline(None), DIFF_CHARS)
        };
        blocks.push(Block::new("diff", diff?));
    }
    let mut contexts = o.contexts.clone();
    // The edit's before and after text ride along on edit events unless listed already.
    for ambient in [
        Context::BeforeEdit { required: false },
        Context::AfterEdit { required: false },
    ] {
        if !contexts.iter().any(|c| c.tag() == ambient.tag()) {
            contexts.push(ambient);
        }
    }
    for c in &contexts {
        match c.render(evt) {
            Some(text) => blocks.push(Block::new(c.tag(), text)),
            None if c.required() => return None,
            None => {}
        }
    }
    Some(blocks)
}

/// One question for a judge, whatever the hook.
pub(crate) struct Question<'a> {
    /// The whole prompt.
    pub prompt: &'a str,
    /// The question alone.
    pub task: &'a str,
    /// The verdict's shape.
    pub schema: &'a VerdictSchema,
    /// The model tier.
    pub size: Size,
    /// The specialty, resolved through the project's table.
    pub specialty: &'a str,
    /// Tools for the judge.
    pub agent: bool,
    /// The hook's choice of judge.
    pub backend: Option<BackendChoice>,
    /// The hook's own time limit.
    pub timeout: Option<Duration>,
    /// What the inline-test stub answers before the test's own fields (default: the schema's
    /// stub, which fires).
    pub stub_base: Option<&'a Map<String, Value>>,
    /// Two stages: when Jev answers first, the verdicts this holds for go on to the `claude`
    /// judge, which sees Jev's answer (a Jev failure goes there too).
    pub escalate: Option<&'a EscalateFn>,
}

/// Which first-stage verdicts a second, stronger judge must confirm (Rust SDK).
pub type EscalateFn = Arc<dyn Fn(&Map<String, Value>) -> bool + Send + Sync>;

/// Asks the judge (or the inline-test stub).
pub(crate) fn ask(
    evt: &Event,
    q: &Question<'_>,
    name: &str,
) -> Result<Map<String, Value>, AskError> {
    let stub = evt.memo(STUB_KEY, LlmStub::default);
    if stub.active {
        return stub.answer(q.schema, q.stub_base);
    }
    let table = specialties(evt);
    let specialty = table
        .get(q.specialty)
        .ok_or_else(|| AskError::UnknownSpecialty {
            name: q.specialty.to_owned(),
            known: table.names(),
        })?;
    let settings = Settings::from_lookup(|k| env_var(evt, k))?.for_specialty(specialty);
    let backend = settings.backend(q.backend, q.schema)?;
    let call = Call {
        prompt: q.prompt,
        task: q.task,
        schema: q.schema,
        size: q.size,
        agent: q.agent,
        cwd: evt.project_root().map(std::path::Path::to_path_buf),
        deadline: call_deadline(q.timeout),
    };
    let log = env_var(evt, capt_hook_proto::env::CAPTAIN_HOOK_LOG_DIR)
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(capt_hook_proto::paths::log_dir);
    let first = judge_and_record(evt, backend, &call, name, &log);
    let Some(escalate) = q.escalate.filter(|_| backend.name() == "jev") else {
        return Ok(first?.verdict);
    };
    let quick = match first {
        Ok(a) if !escalate(&a.verdict) => return Ok(a.verdict),
        Ok(a) => Some(Value::Object(a.verdict).to_string()),
        // A failed first stage asks the second without a quick verdict.
        Err(_) => None,
    };
    // The fast classifier's answer leads, so the second judge writes the words it lacks.
    let prompt = match &quick {
        Some(v) => format!("<quick_verdict>\n{v}\n</quick_verdict>\n\n{}", q.prompt),
        None => q.prompt.to_owned(),
    };
    let call = Call {
        prompt: &prompt,
        ..call
    };
    Ok(judge_and_record(evt, &settings.claude, &call, name, &log)?.verdict)
}

/// Asks `backend`, logging the call (and a failure's record) under `log`, and records it on
/// the event for its session log line and the decision ledger.
fn judge_and_record(
    evt: &Event,
    backend: &dyn capt_hook_llm::Backend,
    call: &Call<'_>,
    hook: &str,
    log: &std::path::Path,
) -> Result<capt_hook_llm::Answer, capt_hook_llm::CallError> {
    // The registered name (`file:llm_gate_label`) when the dispatcher runs us, so the call
    // joins the hook's decisions; the handler's own key otherwise.
    let hook = &capt_hook_engine::dispatch::current_hook_name().unwrap_or_else(|| hook.to_owned());
    let started = Instant::now();
    let result = capt_hook_llm::judge(backend, call, hook, evt.session_id(), Some(log));
    let record = match &result {
        Ok(a) => capt_hook_journal::JudgeCall {
            hook: hook.to_owned(),
            backend: a.backend.to_owned(),
            model: a.model.clone(),
            latency_ms: a.latency.as_millis() as u64,
            cost_usd: a.cost_usd,
            ok: true,
            error: None,
        },
        Err(e) => capt_hook_journal::JudgeCall {
            hook: hook.to_owned(),
            backend: backend.name().to_owned(),
            model: None,
            latency_ms: started.elapsed().as_millis() as u64,
            cost_usd: None,
            ok: false,
            error: Some(e.to_string()),
        },
    };
    capt_hook_journal::judge::record(evt, record);
    result
}

fn handler(o: LlmOptions, block: bool, name: String) -> HandlerFn {
    let ledger_key = name.clone();
    let escalate: Option<EscalateFn> = o.escalate.clone().or_else(|| {
        let writes_prose = match &o.message {
            Message::Template(t) => t.fields().iter().any(|f| {
                o.response
                    .field(f)
                    .is_some_and(|f| f.ty == FieldType::String)
            }),
            Message::Fn(_) => false,
        };
        let field = o.verdict.clone();
        writes_prose.then(|| {
            Arc::new(move |v: &Map<String, Value>| v.get(&field) == Some(&Value::Bool(true)))
                as EscalateFn
        })
    });
    Arc::new(move |evt: &Event| -> HandlerResult {
        // A hook evaluated inside a judge's own session must not judge again.
        if env_var(evt, capt_hook_proto::env::CAPT_HOOK_JUDGE).is_some() {
            return Ok(None);
        }
        let tool_event = evt.kind().has_tool() || evt.kind().has_tool_batch();
        let once = o.once_per_turn.unwrap_or(!tool_event);
        let t = evt.transcript();
        let throttle = TurnThrottle::new(evt.store(), evt.agent_id());
        if once && throttle.fired_this_turn(crate::session::turn_at(evt)) {
            return Ok(None);
        }
        if let Some(when) = &o.when
            && !when(evt)
        {
            return Ok(None);
        }
        let mut matched: Vec<String> = Vec::new();
        if let Some(signals) = &o.signals {
            let state: PrimitiveState = evt.store().load();
            let texts = crate::session::signal_texts(evt, t, signals, None);
            let Some(hit) = signals.score(&texts, |text| state.is_consumed(&ledger_key, text))
            else {
                return Ok(None);
            };
            matched = hit.into_iter().map(str::to_owned).collect();
        }
        // The edit rides along as evidence: a judge never rules on an edit it cannot see.
        if let Some(why) = capt_hook_core::edit::refused(evt) {
            return Err(HandlerError::new(why.to_string()));
        }
        let Some(blocks) = evidence_blocks(evt, &o) else {
            return Ok(None);
        };
        let prompt = capt_hook_llm::render(&blocks, &o.prompt);
        let question = Question {
            prompt: &prompt,
            task: &o.prompt,
            schema: &o.response,
            size: o.model,
            specialty: &o.specialty,
            agent: o.agent,
            backend: o.backend,
            timeout: o.timeout,
            stub_base: None,
            escalate: escalate.as_ref(),
        };
        if o.without_judge == WithoutJudge::Skip
            && !evt.memo(STUB_KEY, LlmStub::default).active
            && let Some(why) = judge_missing(evt, &o)
        {
            tracing::debug!(hook = %name, %why, "skipped: no judge");
            return Ok(None);
        }
        let verdict = match ask(evt, &question, &name) {
            Ok(v) => v,
            Err(e) => {
                return match (&o.on_incomplete, block) {
                    (Some(remedy), true) => {
                        tracing::warn!(hook = %name, error = %e, "judge failed; blocking (on_incomplete)");
                        Ok(Some(HookResult::block(remedy.clone())))
                    }
                    // Off the guard events a failed hook changes nothing the user sees (a guard
                    // event's failure already asks the user, with a note), so the session is
                    // told once, as a hook file that does not load is.
                    // An inline test's stub that fails stays the hook's failure: the test
                    // reports it.
                    _ if !evt.kind().is_guard()
                        && !matches!(e, AskError::Stubbed(_) | AskError::StubShape(_)) =>
                    {
                        tracing::warn!(hook = %name, error = %e, "judge failed");
                        Ok(judge_failure_note(evt, &name, &e))
                    }
                    _ => Err(HandlerError::new(e.to_string())),
                };
            }
        };
        if verdict.get(&o.verdict) != Some(&Value::Bool(true)) {
            return Ok(None);
        }
        if !matched.is_empty() {
            let key = ledger_key.clone();
            if let Err(e) = evt.store().mutate(|s: &mut PrimitiveState| {
                for text in &matched {
                    s.consume(&key, text);
                }
            }) {
                tracing::warn!(error = %e, "could not record consumed signal texts");
            }
        }
        // Claim the turn atomically, so two LLM hooks racing in one agent context cannot
        // both fire in it.
        if once && !throttle.claim(crate::session::turn_at(evt)).unwrap_or(true) {
            return Ok(None);
        }
        let message = match &o.message {
            Message::Template(tpl) => tpl.render(&verdict),
            Message::Fn(f) => f(&verdict),
        };
        let message = capt_hook_core::result::dedent(&message);
        Ok(Some(if block {
            HookResult::block(message)
        } else {
            HookResult::warn(message)
        }))
    })
}

/// The once-per-session note for a judge that failed at `name`: the first failure of each hook
/// in a session is told (`systemMessage`), later ones only logged.
fn judge_failure_note(evt: &Event, name: &str, e: &AskError) -> Option<HookResult> {
    let hook = capt_hook_engine::dispatch::current_hook_name().unwrap_or_else(|| name.to_owned());
    let told = evt
        .store()
        .slot_named::<std::collections::BTreeSet<String>>("judge_failures_told");
    // A store that cannot record it tells every time rather than never.
    let first = told.mutate(|set| set.insert(hook.clone())).unwrap_or(true);
    first.then(|| {
        HookResult::notice_only().with_system_message(format!(
            "capt-hook: the judge of {hook} failed ({e}), so the hook said nothing; \
             `capt-hook logs --judge` shows the call. Later failures of this hook in this \
             session are only logged."
        ))
    })
}

mod approve;
mod stop;
pub use approve::{
    ApproveOptions, AutoModeRules, Confirm, PROTECTED, PromptCheck, RubricDefaults, builtin_rules,
    llm_approve, prompt_check, render_rubric,
};
pub use stop::{
    Live, LookupFn, StopOptions, Target, refusal, stop_runaway, stop_runaway_with, system_lookup,
};

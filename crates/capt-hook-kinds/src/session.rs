//! Primitives with memory: `nudge`, `gate` and `workflow`.
//!
//! They read the session's transcript (through [`Event::transcript`]) and keep their own
//! bookkeeping in the session store: which prose already triggered a nudge, and when a gate
//! last blocked in each agent context (gates fire at most once per turn per agent).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use capt_hook_core::capped::ReadError;
use capt_hook_core::condition::is_waiting;
use capt_hook_core::result::dedent;
use capt_hook_core::{Condition, Event, EventKind, EventSet, HookResult, Pattern};
use capt_hook_state::{PrimitiveState, TurnAt, TurnThrottle};
use capt_hook_transcript::Transcript;
use serde::de::DeserializeOwned;
use serde_json::Value;

use capt_hook_engine::hook::{HandlerFn, HandlerResult};
use capt_hook_engine::primitives::{CustomKind, DefError, HookDef, custom};

/// Which prose a signal-scored nudge reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalWindow {
    /// The last N pieces of prose.
    Last(usize),
    /// The current turn.
    Turn,
}

/// Weighted patterns scored over the agent's recent prose.
#[derive(Debug, Clone)]
pub struct Signals {
    /// Each pattern with its weight (positive).
    pub patterns: Vec<(Pattern, u32)>,
    /// The score at which the nudge fires.
    pub threshold: u32,
    /// How much prose is read.
    pub window: SignalWindow,
    /// Also read user prompts, not only the agent's own text.
    pub include_user: bool,
}

impl Signals {
    /// Patterns of weight 1 with threshold 1 over the last 15 pieces of prose.
    pub fn any_of(patterns: Vec<Pattern>) -> Signals {
        Signals {
            patterns: patterns.into_iter().map(|p| (p, 1)).collect(),
            threshold: 1,
            window: SignalWindow::Last(15),
            include_user: false,
        }
    }

    /// The texts that score, or `None` when the threshold is not reached. A text that already
    /// triggered this hook (`consumed`) never counts again.
    pub(crate) fn score<'t>(
        &self,
        texts: &[&'t str],
        consumed: impl Fn(&str) -> bool,
    ) -> Option<Vec<&'t str>> {
        let mut hit = vec![false; self.patterns.len()];
        let mut matched: Vec<&str> = Vec::new();
        for text in texts {
            if consumed(text) {
                continue;
            }
            let mut any = false;
            for (i, (p, _)) in self.patterns.iter().enumerate() {
                if p.is_match(text) {
                    hit[i] = true;
                    any = true;
                }
            }
            if any {
                matched.push(text);
            }
        }
        // Each signal counts once, however many texts it matched.
        let score: u32 = self
            .patterns
            .iter()
            .zip(&hit)
            .filter(|(_, h)| **h)
            .map(|((_, w), _)| *w)
            .sum();
        (score >= self.threshold && !matched.is_empty()).then_some(matched)
    }
}

/// The prose a nudge's signals read; with `events`, only among the transcript's last that many
/// events (the hook's `transcript_events`).
pub(crate) fn signal_texts<'t>(
    evt: &'t Event,
    t: &'t Transcript,
    signals: &Signals,
    events: Option<u16>,
) -> Vec<&'t str> {
    let whole = match events {
        Some(n) => t.session().recent(usize::from(n)),
        None => t.session(),
    };
    let window = match signals.window {
        SignalWindow::Turn => whole.current_turn(),
        SignalWindow::Last(_) => whole,
    };
    let mut texts: Vec<&str> = window
        .prose()
        .filter(|e| signals.include_user || !e.is_prompt())
        .filter(|e| {
            // Only the agent's own words (and, on request, the user's) are prose here.
            signals.include_user || e.kind() == capt_hook_transcript::EntryKind::Assistant
        })
        .map(|e| e.text())
        .collect();
    if signals.include_user
        && evt.kind() == EventKind::UserPromptSubmit
        && let Some(p) = evt.prompt()
    {
        texts.push(p);
    }
    if let SignalWindow::Last(n) = signals.window {
        let skip = texts.len().saturating_sub(n);
        texts.drain(..skip);
    }
    texts
}

/// A predicate written in Rust for `nudge` and `gate`.
pub type When = Arc<dyn Fn(&Event) -> bool + Send + Sync>;

/// A `nudge`'s or `gate`'s veto, checked before its signals: a Rust predicate, or a condition
/// (what a hook file's `when` lowers to).
#[derive(Clone)]
pub enum Veto {
    /// User code: the hook then runs on the handler pool, under the event's deadline.
    Rust(When),
    /// A condition: pure, so the hook stays on the dispatching thread.
    Condition(Condition),
}

impl Veto {
    /// A veto written in Rust.
    pub fn rust<F>(when: F) -> Veto
    where
        F: Fn(&Event) -> bool + Send + Sync + 'static,
    {
        Veto::Rust(Arc::new(when))
    }

    fn holds(&self, evt: &Event) -> bool {
        match self {
            Veto::Rust(f) => f(evt),
            Veto::Condition(c) => c.check(evt),
        }
    }
}

/// The largest `transcript_events` a hook may ask for.
pub const MAX_TRANSCRIPT_EVENTS: u16 = 256;

/// The options of a `nudge` (and of a `gate`, which is a blocking nudge).
#[derive(Clone)]
pub struct NudgeOptions {
    /// The message (dedented and trimmed when delivered).
    pub message: String,
    /// Block instead of warning.
    pub block: bool,
    /// Fire only when the recent prose scores.
    pub signals: Option<Signals>,
    /// Fire only when this holds; checked before the signals, after a gate's once-per-turn
    /// check.
    pub when: Option<Veto>,
    /// Skip while the session waits on background work. `None`: a blocking nudge (a gate)
    /// skips on Stop/SubagentStop, anything else never does; `Some(false)`: never skip (a gate
    /// whose subject is the turn that parks on background work); `Some(true)`: skip on every
    /// event while waiting (a nudge that waits too).
    pub guards_waiting: Option<bool>,
    /// Read only the transcript's last this many events (1 to 256): the signals score prose
    /// among them. `None`: the whole transcript.
    pub transcript_events: Option<u16>,
}

impl NudgeOptions {
    /// A plain warning nudge.
    pub fn new(message: impl Into<String>) -> NudgeOptions {
        NudgeOptions {
            message: message.into(),
            block: false,
            signals: None,
            when: None,
            guards_waiting: None,
            transcript_events: None,
        }
    }
}

/// The skip guards `guards_waiting` resolves to for a hook that blocks (`block`) or not.
pub(crate) fn waiting_guards(block: bool, guards_waiting: Option<bool>) -> Vec<Condition> {
    match guards_waiting {
        None if block => vec![waiting_guard()],
        None | Some(false) => Vec::new(),
        // Asked for outright: the hook waits with the session, whatever the event.
        Some(true) => vec![Condition::Waiting(true)],
    }
}

/// Checks `transcript_events` (1 to [`MAX_TRANSCRIPT_EVENTS`]).
pub(crate) fn check_transcript_events(n: Option<u16>) -> Result<(), DefError> {
    match n {
        Some(n) if n == 0 || n > MAX_TRANSCRIPT_EVENTS => Err(DefError::new(
            "transcript_events",
            format!("{n} is out of range: give 1 to {MAX_TRANSCRIPT_EVENTS} events"),
        )),
        _ => Ok(()),
    }
}

/// Skips a blocking hook on Stop/SubagentStop while the session waits on background work:
/// stopping is how the agent waits, so blocking it would spin.
pub(crate) fn waiting_guard() -> Condition {
    Condition::Custom {
        name: "{ waiting = true }".into(),
        reads_tool: false,
        check: Arc::new(|evt: &Event| {
            matches!(evt.kind(), EventKind::Stop | EventKind::SubagentStop) && is_waiting(evt)
        }),
    }
}

fn nudge_handler(options: NudgeOptions, ledger_key: String) -> HandlerFn {
    Arc::new(move |evt: &Event| -> HandlerResult {
        let store = evt.store();
        let t = evt.transcript();
        let throttle = TurnThrottle::new(store, evt.agent_id());
        if options.block && throttle.fired_this_turn(turn_at(evt)) {
            return Ok(None);
        }
        if let Some(when) = &options.when
            && !when.holds(evt)
        {
            return Ok(None);
        }
        if let Some(signals) = &options.signals {
            let state: PrimitiveState = store.load();
            let texts = signal_texts(evt, t, signals, options.transcript_events);
            let Some(matched) = signals.score(&texts, |text| state.is_consumed(&ledger_key, text))
            else {
                return Ok(None);
            };
            let matched: Vec<String> = matched.into_iter().map(str::to_owned).collect();
            let key = ledger_key.clone();
            if let Err(e) = store.mutate(|s: &mut PrimitiveState| {
                for text in &matched {
                    s.consume(&key, text);
                }
            }) {
                tracing::warn!(error = %e, "could not record consumed signal texts");
            }
        }
        let message = dedent(&options.message);
        if options.block {
            // Claim the turn atomically, so two gates racing in one agent context cannot both
            // block it.
            if !throttle.claim(turn_at(evt)).unwrap_or(true) {
                return Ok(None);
            }
            return Ok(Some(HookResult::block(message)));
        }
        Ok(Some(HookResult::warn(message)))
    })
}

/// Where the event's agent stands in its turn, for the once-per-turn throttle.
pub(crate) fn turn_at(evt: &Event) -> TurnAt<'_> {
    let (transcript_len, current_turn_len) = evt.turn_span();
    TurnAt {
        transcript_len,
        current_turn_len,
        prompt_id: evt.prompt_id(),
    }
}

/// A nudge: warns (or blocks) with `message`, by default once per session and agent.
/// `transcript_events` out of range is a definition error.
#[track_caller]
pub fn nudge(options: NudgeOptions) -> Result<HookDef, DefError> {
    check_transcript_events(options.transcript_events)?;
    Ok(nudge_def(options))
}

#[track_caller]
fn nudge_def(options: NudgeOptions) -> HookDef {
    use EventKind::*;
    let default_events = if options.block {
        EventSet::of(&[Stop, SubagentStop])
    } else if options.signals.is_some() {
        EventSet::of(&[PostToolUse])
    } else {
        EventSet::of(&[PreToolUse])
    };
    let default_max_fires = if options.block {
        None
    } else if options.signals.is_some() {
        Some(3)
    } else {
        Some(1)
    };
    let identity = options.message.clone();
    let ledger_key = format!("nudge_{}", capt_hook_engine::hook::short_hash(&identity));
    let block = options.block;
    // A `when` closure is user code: it runs on the pool, under the deadline.
    let inline = !matches!(options.when, Some(Veto::Rust(_)));
    let skip_guards = waiting_guards(block, options.guards_waiting);
    custom(CustomKind {
        kind: if block { "gate" } else { "nudge" },
        default_events,
        guards: Vec::new(),
        skip_guards,
        handler: nudge_handler(options, ledger_key),
        identity,
        skip_planning_agents: !block,
        default_max_fires,
        inline,
        manages_repetition: block,
    })
}

/// A gate: blocks Stop and SubagentStop with `message`, at most once per turn per agent, and
/// never while the session waits on background work.
#[track_caller]
pub fn gate(message: impl Into<String>) -> HookDef {
    let mut options = NudgeOptions::new(message);
    options.block = true;
    // Default options leave nothing to check.
    nudge_def(options)
}

/// A transcript predicate written in Rust, for workflow steps.
pub type StepCheck = Arc<dyn Fn(&Event) -> bool + Send + Sync>;

/// One step of a workflow: done when its check holds.
#[derive(Clone)]
pub struct Step {
    /// A label for the step.
    pub name: String,
    /// Holds once the step is done.
    pub check: StepCheck,
    /// What to tell the agent while it is not done.
    pub message: String,
}

impl Step {
    /// A step checked by a Rust predicate over the event (its transcript is `evt.transcript()`).
    pub fn new<F>(name: impl Into<String>, check: F, message: impl Into<String>) -> Step
    where
        F: Fn(&Event) -> bool + Send + Sync + 'static,
    {
        Step {
            name: name.into(),
            check: Arc::new(check),
            message: message.into(),
        }
    }

    /// A step checked by a predicate over the stopping agent's transcript alone.
    pub fn transcript<F>(name: impl Into<String>, check: F, message: impl Into<String>) -> Step
    where
        F: Fn(&Transcript) -> bool + Send + Sync + 'static,
    {
        Step::new(name, move |evt: &Event| check(evt.transcript()), message)
    }

    /// A step checked by a condition.
    pub fn condition(
        name: impl Into<String>,
        check: Condition,
        message: impl Into<String>,
    ) -> Step {
        Step {
            name: name.into(),
            check: Arc::new(move |evt: &Event| check.check(evt)),
            message: message.into(),
        }
    }
}

/// One assertion on an artifact's JSON: the value at `pointer` compared with bounds.
#[derive(Debug, Clone)]
pub struct Assert {
    /// JSON pointer (`/errors`).
    pub pointer: String,
    /// Largest allowed number.
    pub max: Option<f64>,
    /// Smallest allowed number.
    pub min: Option<f64>,
    /// Required value.
    pub equals: Option<Value>,
    /// The block message when the assertion fails.
    pub message: String,
}

impl Assert {
    fn holds(&self, doc: &Value) -> bool {
        let Some(v) = doc.pointer(&self.pointer) else {
            return false;
        };
        if let Some(eq) = &self.equals
            && v != eq
        {
            return false;
        }
        if self.max.is_some() || self.min.is_some() {
            let Some(n) = v.as_f64() else {
                return false;
            };
            if self.max.is_some_and(|m| n > m) || self.min.is_some_and(|m| n < m) {
                return false;
            }
        }
        true
    }
}

/// A compiled JSON Schema for an artifact. Validation needs the `artifact-schema` feature (on by
/// default); a build without it refuses a schema at load time rather than skipping the check.
#[derive(Clone)]
pub struct ArtifactSchema {
    #[cfg(feature = "artifact-schema")]
    validator: Arc<jsonschema::Validator>,
}

impl ArtifactSchema {
    /// Compiles `schema`; a bad schema (or a build without validation) is a definition error.
    pub fn compile(schema: &Value) -> Result<ArtifactSchema, DefError> {
        #[cfg(feature = "artifact-schema")]
        {
            jsonschema::validator_for(schema)
                .map(|v| ArtifactSchema {
                    validator: Arc::new(v),
                })
                .map_err(|e| DefError::new("artifacts", format!("invalid JSON Schema: {e}")))
        }
        #[cfg(not(feature = "artifact-schema"))]
        {
            let _ = schema;
            Err(DefError::new(
                "artifacts",
                "this build cannot check JSON Schemas (built without the artifact-schema feature)",
            ))
        }
    }

    /// The first way `doc` fails the schema.
    fn problem(&self, doc: &Value) -> Option<String> {
        #[cfg(feature = "artifact-schema")]
        {
            self.validator.validate(doc).err().map(|e| e.to_string())
        }
        #[cfg(not(feature = "artifact-schema"))]
        {
            let _ = doc;
            None
        }
    }
}

/// A check of an artifact's JSON written in Rust: the problem to block with, or `None`.
pub type ArtifactCheck = Arc<dyn Fn(&Value) -> Option<String> + Send + Sync>;

/// The largest artifact a workflow reads: a larger one blocks the stop with a message naming
/// it and this limit, unread.
pub const MAX_ARTIFACT: u64 = 16 * 1024 * 1024;

/// A file the workflow must have produced once its marker appears.
#[derive(Clone)]
pub struct Artifact {
    /// The path, relative to the agent's working directory unless absolute.
    pub path: String,
    /// A compiled JSON Schema the file must satisfy.
    pub schema: Option<ArtifactSchema>,
    /// Assertions on its content.
    pub asserts: Vec<Assert>,
    /// The typed model and `validate` callback (Rust SDK), run after the schema and asserts.
    pub check: Option<ArtifactCheck>,
}

impl Artifact {
    /// An artifact with an optional JSON Schema (compiled now, so a bad schema is a load error).
    pub fn new(
        path: impl Into<String>,
        schema: Option<&Value>,
        asserts: Vec<Assert>,
    ) -> Result<Artifact, DefError> {
        let schema = schema.map(ArtifactSchema::compile).transpose()?;
        Ok(Artifact {
            path: path.into(),
            schema,
            asserts,
            check: None,
        })
    }

    /// An artifact that must parse as `T` (serde): a file that does not is
    /// `<path> invalid: <error>`.
    pub fn model<T>(path: impl Into<String>) -> Artifact
    where
        T: DeserializeOwned + 'static,
    {
        Artifact::validated::<T, _>(path, |_| None)
    }

    /// An artifact that must parse as `T` and pass `validate`, which returns the message to
    /// block with (after `<LABEL> INCOMPLETE: `) or `None` to pass.
    pub fn validated<T, F>(path: impl Into<String>, validate: F) -> Artifact
    where
        T: DeserializeOwned + 'static,
        F: Fn(&T) -> Option<String> + Send + Sync + 'static,
    {
        let path = path.into();
        let shown = path.clone();
        let check: ArtifactCheck = Arc::new(move |doc: &Value| match T::deserialize(doc) {
            Ok(model) => validate(&model),
            Err(e) => Some(format!("{shown} invalid: {e}")),
        });
        Artifact {
            path,
            schema: None,
            asserts: Vec::new(),
            check: Some(check),
        }
    }

    /// The first problem with the artifact, as the message after `<LABEL> INCOMPLETE: `.
    fn problem(&self, base: &Path) -> Option<String> {
        let path = Path::new(&self.path);
        let full: PathBuf = if path.is_absolute() {
            path.to_path_buf()
        } else {
            base.join(path)
        };
        let text = match capt_hook_core::capped::read_file(&full, MAX_ARTIFACT, "the artifact") {
            Ok(t) => t,
            Err(e) if e.is_not_found() => {
                return Some(format!("{} not found.", self.path));
            }
            Err(ReadError::Io { source, .. }) => {
                return Some(format!("{} invalid: {source}", self.path));
            }
            // Too large, or not a file: the message names the file (and the limit).
            Err(e) => return Some(format!("{e}.")),
        };
        let doc: Value = match serde_json::from_slice(&text) {
            Ok(v) => v,
            Err(e) => return Some(format!("{} invalid: {e}", self.path)),
        };
        if let Some(problem) = self.schema.as_ref().and_then(|s| s.problem(&doc)) {
            return Some(format!("{} invalid: {problem}", self.path));
        }
        if let Some(a) = self.asserts.iter().find(|a| !a.holds(&doc)) {
            return Some(a.message.clone());
        }
        self.check.as_ref().and_then(|check| check(&doc))
    }
}

/// A callback run when the workflow is complete (Rust SDK).
pub type PostComplete = Arc<dyn Fn(&Event) -> Option<HookResult> + Send + Sync>;

/// A multi-step workflow a subagent must finish before it may stop.
#[derive(Clone)]
pub struct Workflow {
    /// Prefixes every message: `<LABEL> INCOMPLETE: …`.
    pub label: String,
    /// The text the agent writes when it believes it is done.
    pub marker: String,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Files that must exist (and validate) once the marker is written.
    pub artifacts: Vec<Artifact>,
    /// Runs when everything is complete.
    pub post_complete: Option<PostComplete>,
}

impl Workflow {
    fn verdict(&self, evt: &Event) -> Option<HookResult> {
        let incomplete =
            |m: &str| Some(HookResult::block(format!("{} INCOMPLETE: {m}", self.label)));
        let prose = evt.transcript().session().prose_text();
        if !prose.contains(&self.marker) {
            let step = self
                .steps
                .iter()
                .find(|s| !(s.check)(evt))
                .or(self.steps.last())?;
            return incomplete(&step.message);
        }
        let base = evt
            .cwd()
            .map(PathBuf::from)
            .or_else(|| evt.project_root().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        if let Some(problem) = self.artifacts.iter().find_map(|a| a.problem(&base)) {
            return incomplete(&problem);
        }
        self.post_complete.as_ref().and_then(|f| f(evt))
    }
}

/// The workflow's SubagentStop guard: fires once per agent, skips while waiting.
#[track_caller]
pub fn workflow(flow: Workflow) -> Result<HookDef, DefError> {
    if flow.label.trim().is_empty() {
        return Err(DefError::new("label", "a workflow needs a label"));
    }
    if flow.marker.is_empty() {
        return Err(DefError::new("marker", "a workflow needs a marker"));
    }
    if flow.steps.is_empty() {
        return Err(DefError::new("steps", "list at least one step"));
    }
    let identity = flow.label.clone();
    // The seeds: the guard blocks every stop of an agent until its checklist passes, and once it
    // lets that agent stop it never fires for it again this session. A fire counter cannot say
    // that (it counts blocks), so the released agents are recorded instead.
    let released_key = format!(
        "workflow_released_{}",
        capt_hook_engine::hook::slug(&flow.label)
    );
    let handler: HandlerFn = Arc::new(move |evt: &Event| {
        let agent = evt.agent_id().unwrap_or("main").to_owned();
        let released = evt
            .store()
            .slot_named::<std::collections::BTreeSet<String>>(&released_key);
        if released.get().is_some_and(|set| set.contains(&agent)) {
            return Ok(None);
        }
        let verdict = flow.verdict(evt);
        if !verdict.as_ref().is_some_and(HookResult::is_block)
            && let Err(e) = released.mutate(|set| set.insert(agent))
        {
            tracing::warn!(error = %e, "could not record a released workflow agent");
        }
        Ok(verdict)
    });
    Ok(custom(CustomKind {
        kind: "workflow",
        default_events: EventSet::of(&[EventKind::SubagentStop]),
        guards: Vec::new(),
        skip_guards: vec![waiting_guard()],
        handler,
        identity,
        skip_planning_agents: false,
        default_max_fires: None,
        // Steps, artifact checks and post_complete may be user code: the pool gives them the
        // deadline.
        inline: false,
        manages_repetition: true,
    }))
}

/// How many results the hook named `hook_name` has delivered to this event's agent in this
/// session (what `max_fires` counts); read-only, the dispatcher keeps the count.
pub fn fire_count(evt: &Event, hook_name: &str) -> u32 {
    capt_hook_state::FireCounter::new(evt.store(), hook_name, evt.agent_id()).count()
}

/// A workflow's setup hook (Rust SDK): runs `on_start` when a subagent starts, e.g. to give it
/// the workflow's instructions. Register it next to the [`workflow`] guard.
#[track_caller]
pub fn workflow_on_start<F>(label: &str, on_start: F) -> HookDef
where
    F: Fn(&Event) -> Option<HookResult> + Send + Sync + 'static,
{
    let handler: HandlerFn = Arc::new(move |evt: &Event| Ok(on_start(evt)));
    custom(CustomKind {
        kind: "workflow_start",
        default_events: EventSet::of(&[EventKind::SubagentStart]),
        guards: Vec::new(),
        skip_guards: Vec::new(),
        handler,
        identity: label.to_owned(),
        skip_planning_agents: true,
        default_max_fires: None,
        inline: false,
        manages_repetition: false,
    })
}

/// Records the session's background launches (`capt_hook_core::spawns`): a Bash or Agent call
/// run in the background, on PostToolUse; on Stop and SubagentStop, the payload's
/// `background_tasks` drops the records of tasks that ended. Never says anything: a state it
/// cannot write is logged, and `waiting` then reads the transcript alone.
#[track_caller]
pub fn track_background() -> HookDef {
    let handler: HandlerFn = Arc::new(|evt: &Event| {
        if let Err(e) = capt_hook_core::spawns::record(evt) {
            tracing::warn!(error = %e, "could not record a background launch");
        }
        Ok(None)
    });
    custom(CustomKind {
        kind: "track_background",
        default_events: EventSet::of(&[
            EventKind::PostToolUse,
            EventKind::Stop,
            EventKind::SubagentStop,
        ]),
        guards: Vec::new(),
        skip_guards: Vec::new(),
        handler,
        identity: "track_background".to_owned(),
        skip_planning_agents: false,
        default_max_fires: None,
        // It writes a state file under its lock: the pool, not the dispatching thread.
        inline: false,
        manages_repetition: false,
    })
}

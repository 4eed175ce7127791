//! Permission tickets: a hook declares which actions need a ticket, and [`Tickets::check`] finds
//! a live ticket covering the action, else mints one from the first rule whose evidence holds
//! (the user's own words, an answer to a question, a judge's citation), else denies with the
//! declaration's `deny` text. It fails closed: a store, source or judge error denies, naming it.
//!
//! Tickets belong to a session tree: the root session and the subagents it spawned (a
//! subagent's hook payload carries its parent's `session_id`). The user's words of a tree are
//! read from the root session's transcript, whichever agent acts, so a subagent's call is judged
//! on what the user told the session that spawned it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use capt_hook_core::{Condition, Event, EventKind, EventSet, HookResult, Mode, Pattern};
use capt_hook_llm::prompt::{Block, Budget, transcript_window};
use capt_hook_transcript::{Transcript, Window};
use serde_json::{Map, Value, json};

pub use capt_hook_state::rulings::Ruling;
pub use capt_hook_state::tickets::{Evidence, Reach, Revoked, Ticket, TicketStore, new_ticket_id};

mod context;
pub use context::{Answer, Context, Touch};

use crate::llm::Context as PromptContext;
use crate::llm::{BackendChoice, EscalateFn, Field, FieldType, Question, Size, VerdictSchema, ask};
use capt_hook_engine::hook::{HandlerFn, HandlerResult};
use capt_hook_engine::primitives::{CustomKind, DefError, HookDef, custom};

/// How long an [`Tickets::unchecked`] ticket lives: long enough for the one action it covers.
pub const UNCHECKED_TTL: Duration = Duration::from_secs(10 * 60);

/// The default ticket lifetime.
pub const DEFAULT_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// The default number of recent messages of each session the evidence is read from.
pub const DEFAULT_WINDOW: usize = 60;

/// Characters of transcript a `Decide` judge reads for `transcript = true` / `"recent"`.
pub const RECENT_CHARS: usize = 2000;

/// What a hook asks a ticket to cover.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// The values of the declaration's place keys.
    pub place: BTreeMap<String, String>,
    /// Every effect-bearing field; an action ticket is bound to its fingerprint.
    pub payload: Value,
    /// One line naming the action in messages.
    pub summary: String,
}

impl Proposal {
    /// The fingerprint an action ticket records: 16 hex of a hash of the payload.
    pub fn fingerprint(&self) -> String {
        blake3::hash(self.payload.to_string().as_bytes()).to_hex()[..16].to_owned()
    }
}

/// The payload of a tool call as a TOML declaration covers it: the tool name and its whole
/// input (an action ticket records its fingerprint).
pub fn tool_payload(tool: &str, input: &Value) -> Value {
    json!({"tool": tool, "input": input})
}

/// Maps an event to the action to cover, or says why it cannot (`Err("…".into())`).
pub type ActionFn = Arc<dyn Fn(&Event) -> Result<Proposal, TicketError> + Send + Sync>;

/// Why a ticket check could not decide (the deny names it), or a declaration cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TicketError {
    /// A `{key}` placeholder with no value to fill it.
    #[error("`{{{0}}}` names no value")]
    NoValue(String),
    /// A pattern (after filling) that does not compile.
    #[error("{0}")]
    Pattern(String),
    /// A JSON pointer the tool input does not hold.
    #[error("the tool input has no {0}")]
    NoPointer(String),
    /// A place template whose field the tool input does not hold.
    #[error("{0} in the tool input")]
    InInput(Box<TicketError>),
    /// A place value that could not be read.
    #[error("cannot read place `{key}`: {why}")]
    Place {
        /// The place key.
        key: String,
        /// Why.
        why: Box<TicketError>,
    },
    /// The root session's transcript could not be read.
    #[error("cannot read the session's transcript {path}: {why}")]
    Transcript {
        /// Its path.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// Neither the check nor the declaration gave an action.
    #[error("the declaration has no action and none was passed")]
    NoAction,
    /// The action lacks one of the declaration's place keys.
    #[error("the action carries no place key `{0}`")]
    MissingPlace(String),
    /// The action has other place keys than the declaration.
    #[error("the action's place keys {got:?} are not the declaration's {want:?}")]
    PlaceMismatch {
        /// The action's keys.
        got: Vec<String>,
        /// The declaration's.
        want: Vec<String>,
    },
    /// A judge asked to read another rule (a judge, a condition) as its evidence.
    #[error(
        "a judge reads evidence sources only (`user_said`, `user_answered`, `touched`, `user_ruled`)"
    )]
    JudgeSource,
    /// The judge's verdict schema could not be built.
    #[error("{0}")]
    Schema(String),
    /// A required context block rendered nothing.
    #[error("the `{0}` context is empty")]
    EmptyContext(String),
    /// The user's rulings could not be read.
    #[error("cannot read the user's rulings: {0}")]
    Rulings(String),
    /// The judge did not answer.
    #[error("the judge gave no verdict ({0})")]
    NoVerdict(#[source] crate::llm::AskError),
    /// The ticket store failed.
    #[error("{0}")]
    Store(String),
    /// The event names no project whose store could hold tickets.
    #[error("the event names no project to keep tickets for")]
    NoProject,
    /// The judge settings cannot be used.
    #[error(transparent)]
    Settings(#[from] capt_hook_llm::SettingsError),
    /// `llm = false` but the judge resolved to an LLM CLI.
    #[error(
        "`llm = false` leaves the verdict to Jev alone, but the judge resolved to `{0}` (set {key} \
         or pick backend = \"jev\")",
        key = capt_hook_proto::env::TYPESAFE_API_KEY
    )]
    NotJev(String),
    /// A custom action's own reason.
    #[error("{0}")]
    Action(String),
}

impl From<String> for TicketError {
    fn from(why: String) -> Self {
        TicketError::Action(why)
    }
}

impl From<&str> for TicketError {
    fn from(why: &str) -> Self {
        TicketError::Action(why.to_owned())
    }
}

/// How much of a session's transcript a `Decide` judge reads besides the evidence items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reading {
    /// Nothing: the evidence items alone (the default).
    #[default]
    Off,
    /// The most recent this many characters (`true` / `"recent"`: [`RECENT_CHARS`]).
    Chars(usize),
    /// The whole session.
    Full,
}

impl Reading {
    fn render(self, t: &Transcript, tool_results: bool) -> Option<String> {
        let chars = match self {
            Reading::Off => return None,
            Reading::Chars(n) => n,
            Reading::Full => usize::MAX,
        };
        Some(transcript_window(t, chars, tool_results, Budget::default())).filter(|w| !w.is_empty())
    }
}

/// `Decide`: a judge reads the user's words and cites the one item that permits the action.
#[derive(Clone)]
pub struct Decide {
    /// The hook's rules for this kind of action, in prose.
    pub rules: String,
    /// The evidence the judge reads: [`Source::UserSaid`] and [`Source::UserAnswered`] items,
    /// each filtered by its own pattern (default: every prompt and every answer, approving or
    /// not).
    pub over: Vec<Source>,
    /// Extra evidence blocks (the destination, a thread) rendered before the evidence.
    pub contexts: Vec<PromptContext>,
    /// The model tier.
    pub model: Size,
    /// The specialty (default `review`): the project's `config.toml` maps it to a judge and
    /// model names; one it does not know makes the rule find nothing, naming it.
    pub specialty: String,
    /// The judge (`None`: the specialty's, else the project default).
    pub backend: Option<BackendChoice>,
    /// How long each asking of the judge may take; past it the rule found nothing.
    pub deadline: Duration,
    /// The acting session's recent transcript, as `<transcript>`.
    pub transcript: Reading,
    /// For a subagent's action: the spawning (root) session's transcript, as
    /// `<root_transcript>`.
    pub root_transcript: Reading,
    /// The transcript windows show each tool call's result.
    pub tool_results: bool,
    /// A first answer that does not settle it (a refusal, or a Jev failure) goes on to the LLM;
    /// off, the first judge (Jev) alone decides, and an unsettled answer refuses.
    pub llm: bool,
    /// A refusal is asked again on the evidence alone; refused only when both refuse.
    pub second_opinion: bool,
}

impl Decide {
    /// A judge over `rules` with the defaults (every prompt and answer, small model, 20 s, the
    /// LLM after Jev, a second opinion, no transcript).
    pub fn new(rules: impl Into<String>) -> Decide {
        Decide {
            rules: rules.into(),
            over: vec![
                Source::UserSaid {
                    pattern: None,
                    names: Vec::new(),
                },
                Source::UserAnswered {
                    pattern: None,
                    approved: false,
                },
            ],
            contexts: Vec::new(),
            model: Size::Small,
            specialty: crate::llm::DEFAULT_SPECIALTY.to_owned(),
            backend: None,
            deadline: Duration::from_secs(20),
            transcript: Reading::Off,
            root_transcript: Reading::Off,
            tool_results: false,
            llm: true,
            second_opinion: true,
        }
    }
}

impl Decide {
    /// Jev's allow on one evidence item, else `None` for the LLM: Jev alone (never an LLM CLI,
    /// no second opinion) is asked to cite the one item of `items` that permits the context's
    /// action, `prompt` being the question. A citation is the item's index; a refusal, an
    /// answer outside the list, or a Jev failure (no key, a timeout) is `None`, leaving the
    /// action to whatever judges next.
    pub fn quick(
        &self,
        evt: &Event,
        ctx: &Context,
        prompt: &str,
        items: &[Evidence],
    ) -> Option<usize> {
        if items.is_empty() {
            return None;
        }
        let ids: Vec<String> = (1..=items.len()).map(|i| format!("e{i}")).collect();
        let schema = cite_schema(&ids).ok()?;
        let evidence: String = items
            .iter()
            .zip(&ids)
            .map(|(it, id)| format!("[{id}] ({}) {}\n", it.source, it.text))
            .collect();
        let blocks = [
            Block::new("rules", self.rules.trim()),
            Block::new(
                "action",
                format!("{}\n{}", ctx.action.summary, ctx.action.payload),
            ),
            Block::new("evidence", evidence),
        ];
        let rendered = capt_hook_llm::render(&blocks, prompt);
        let base: Map<String, Value> = [("cite".to_owned(), json!("none"))].into_iter().collect();
        let q = Question {
            prompt: &rendered,
            task: prompt,
            schema: &schema,
            size: self.model,
            specialty: &self.specialty,
            agent: false,
            backend: Some(BackendChoice::Jev),
            timeout: Some(self.deadline),
            stub_base: Some(&base),
            escalate: None,
        };
        let name = format!("tickets_{}_quick", ctx.kind);
        let v = match ask(evt, &q, &name) {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!(error = %e, "Jev gave no quick citation; the LLM decides");
                return None;
            }
        };
        let cite = v.get("cite").and_then(Value::as_str)?;
        ids.iter().position(|id| id == cite)
    }
}

/// The judge's verdict: the id of the one item that permits the action, or `none`.
fn cite_schema(ids: &[String]) -> Result<VerdictSchema, TicketError> {
    let mut choices = vec!["none".to_owned()];
    choices.extend(ids.iter().cloned());
    VerdictSchema::new(vec![
        Field::new(
            "cite",
            FieldType::Choice(choices),
            "the id of the one evidence item that permits exactly this action, or none",
        ),
        Field::new("reasoning", FieldType::String, "one sentence why"),
    ])
    .map_err(|e| TicketError::Schema(e.to_string()))
}

/// Where a rule looks for its evidence.
#[derive(Clone)]
pub enum Source {
    /// A prompt the user typed in the window (never one a tool or command wrote) matching
    /// `pattern` (a regex; `{key}` stands for the place value, escaped) and naming every
    /// non-empty value of `names` as a whole word.
    UserSaid {
        /// The regex template, case-insensitive.
        pattern: Option<String>,
        /// Place keys whose values the prompt must name.
        names: Vec<String>,
    },
    /// An answer to an AskUserQuestion in the window whose question (with its options) matches
    /// `pattern`; with `approved`, only an approving answer (see [`approving`]).
    UserAnswered {
        /// The regex template over the question and its options.
        pattern: Option<String>,
        /// Only an approving answer counts.
        approved: bool,
    },
    /// An earlier tool call of the tree whose input or result matches one of `patterns`
    /// (regex templates, `{key}` the place value, escaped), or with no patterns, names every
    /// non-empty place value as a whole name.
    Touched {
        /// The regex templates, case-insensitive.
        patterns: Vec<String>,
    },
    /// The user's durable rulings recorded before the acting session started: with `key`,
    /// those naming the action's value of that place key as a whole name and carrying every
    /// tag of `tags`; with `ids`, the standing rulings of those ids, whatever they cover.
    UserRuled {
        /// The place key whose value a ruling must name.
        key: Option<String>,
        /// Ruling ids that stand whatever the action.
        ids: Vec<String>,
        /// Tags a ruling found by `key` must carry.
        tags: BTreeSet<String>,
    },
    /// A judge's citation of the user's words or answers.
    Decide(Decide),
    /// Any condition; its evidence says that it held.
    Condition(Condition),
}

/// One way an action gets a ticket.
#[derive(Clone)]
pub struct Rule {
    /// The rule's name, recorded on the ticket.
    pub name: String,
    /// Where its evidence comes from.
    pub when: Source,
}

/// A hook's declaration of the tickets it accepts and the rules that mint them.
#[derive(Clone)]
pub struct Tickets {
    /// The ticket kind (`chat.post`).
    pub kind: String,
    /// The place keys every action and ticket carries.
    pub place: Vec<String>,
    /// How far a minted ticket reaches.
    pub reach: Reach,
    /// The rules, in order; the first that holds mints.
    pub rules: Vec<Rule>,
    /// What the agent can do to get permission, said on every deny.
    pub deny: String,
    /// Maps the event to the action (`None`: callers pass the action to `check`).
    pub action: Option<ActionFn>,
    /// How long a minted ticket lives (`None`: until revoked).
    pub ttl: Option<Duration>,
    /// How many recent messages (user and assistant lines) of each session of the tree the
    /// evidence is read from.
    pub window: usize,
    /// Markers of a prompt a tool wrote on the user's behalf; such a prompt is never theirs.
    pub machine: Vec<String>,
    /// A covered action is allowed outright (`permissionDecision: "allow"`, no dialog); off,
    /// the ticket only stops the deny and Claude Code's permission flow decides.
    pub grant: bool,
}

/// What `check` decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A live ticket already covered the action.
    Covered(Ticket),
    /// A rule held and minted this ticket.
    Minted(Ticket),
    /// Nothing covered it; the message the agent sees.
    Denied(String),
}

impl Outcome {
    /// The hook result: allow naming the ticket (with `grant` off, the same words as context
    /// only, so Claude Code's own permission flow still decides), or block.
    pub fn into_result(self, grant: bool) -> HookResult {
        match self {
            Outcome::Covered(t) | Outcome::Minted(t) => {
                let text = format!(
                    "ticket {} ({} via rule `{}`) covers this call",
                    t.id, t.kind, t.rule
                );
                if grant {
                    let mut r = HookResult::allow();
                    r.message = Some(text);
                    r
                } else {
                    HookResult::warn(text)
                }
            }
            Outcome::Denied(m) => HookResult::block(m),
        }
    }
}

/// Escapes a place value for use inside a regex.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~ ".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Substitutes `{key}` in a template; `quote` escapes each value for a regex.
fn fill(
    template: &str,
    values: &dyn Fn(&str) -> Option<String>,
    quote: bool,
) -> Result<String, TicketError> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        let key = &rest[start + 1..start + len];
        // `{2,3}` and other regex braces are not placeholders.
        if key.is_empty()
            || !key.chars().all(|c| c.is_alphanumeric() || c == '_')
            || key.chars().all(|c| c.is_ascii_digit())
        {
            out.push_str(&rest[..start + len + 1]);
            rest = &rest[start + len + 1..];
            continue;
        }
        out.push_str(&rest[..start]);
        let v = values(key).ok_or_else(|| TicketError::NoValue(key.to_owned()))?;
        out.push_str(&if quote { escape(&v) } else { v });
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Checks a regex template at load time: placeholders stand for a plain word.
pub fn check_template(template: &str) -> Result<(), TicketError> {
    let probe = fill(template, &|_| Some("x".to_owned()), true)?;
    Pattern::new(&probe, Mode::IgnoreCase)
        .map(|_| ())
        .map_err(|e| TicketError::Pattern(e.to_string()))
}

/// How a TOML declaration reads one place value from the tool input.
#[derive(Debug, Clone)]
pub enum Extract {
    /// A JSON pointer (`/channel`).
    Pointer(String),
    /// A `{field}` template over the top-level input fields.
    Template(String),
}

impl Extract {
    /// `/…` is a pointer, anything else a template.
    pub fn parse(text: &str) -> Extract {
        if text.starts_with('/') {
            Extract::Pointer(text.to_owned())
        } else {
            Extract::Template(text.to_owned())
        }
    }

    fn read(&self, input: &Value) -> Result<String, TicketError> {
        match self {
            Extract::Pointer(p) => match input.pointer(p) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(Value::Null) | None => Err(TicketError::NoPointer(p.clone())),
                Some(v) => Ok(v.to_string()),
            },
            Extract::Template(t) => fill(
                t,
                &|k| match input.get(k) {
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(Value::Null) | None => None,
                    Some(v) => Some(v.to_string()),
                },
                false,
            )
            .map_err(|e| TicketError::InInput(Box::new(e))),
        }
    }
}

/// The action closure of a TOML declaration: each place key read from the tool input; the
/// payload is the tool name and its whole input.
pub fn action_from_input(place: Vec<(String, Extract)>, summary: Option<String>) -> ActionFn {
    Arc::new(move |evt: &Event| {
        let input = Value::Object(evt.tool_input().cloned().unwrap_or_default());
        let mut values = BTreeMap::new();
        for (key, how) in &place {
            let v = how.read(&input).map_err(|e| TicketError::Place {
                key: key.clone(),
                why: Box::new(e),
            })?;
            values.insert(key.clone(), v);
        }
        let tool = evt.tool_name().unwrap_or("").to_owned();
        let summary = match &summary {
            Some(t) => fill(t, &|k| values.get(k).cloned(), false).unwrap_or_else(|_| t.clone()),
            None => {
                let at: Vec<String> = values.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{tool} at {}", at.join(", "))
            }
        };
        Ok(Proposal {
            place: values,
            payload: tool_payload(&tool, &input),
            summary,
        })
    })
}

/// One item of the user's words.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    source: &'static str,
    text: String,
    /// For answers: the question and options, which patterns read.
    question: String,
    approving: bool,
}

/// The transcripts of the acting session tree.
pub struct Sessions {
    /// The root session's: where the user's own words are.
    pub root: Transcript,
    /// For a subagent's action, its own transcript, when it can be found.
    pub own: Option<Transcript>,
}

impl Sessions {
    /// The tree of `evt`: the session's transcript, and for a subagent (an `agent_id`, or an
    /// `agent_transcript_path`) the root session's transcript (`transcript_path`) beside the
    /// subagent's own. A root transcript that cannot be read is an error, never "no words".
    pub fn of(evt: &Event) -> Result<Sessions, TicketError> {
        let acting = evt.transcript();
        let agent_path = evt
            .payload()
            .get("agent_transcript_path")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty());
        if !evt.is_subagent() && agent_path.is_none() {
            return Ok(Sessions {
                root: acting.clone(),
                own: None,
            });
        }
        let root_path = evt
            .payload()
            .get("transcript_path")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(|p| root_of_subagent_file(Path::new(p)).unwrap_or_else(|| PathBuf::from(p)));
        let root = match &root_path {
            Some(p) if acting.path() != Some(p.as_path()) => capt_hook_core::history::transcripts()
                .load(p)
                .map_err(|e| TicketError::Transcript {
                    path: p.clone(),
                    why: e.to_string(),
                })?,
            // An in-memory transcript (inline tests, replay) stands for the whole tree.
            _ => acting.clone(),
        };
        let own = if acting.path().is_some() && acting.path() != root.path() {
            Some(acting.clone())
        } else {
            // Only this subagent's file: a session may have spawned many.
            evt.agent_id()
                .and_then(|id| Some(root.subagent_dir()?.join(format!("agent-{id}.jsonl"))))
                .filter(|p| p.is_file())
                .and_then(|p| capt_hook_core::history::transcripts().load(&p).ok())
        };
        Ok(Sessions { root, own })
    }

    /// Root first, then the acting subagent's.
    fn all(&self) -> impl Iterator<Item = &Transcript> {
        std::iter::once(&self.root).chain(self.own.as_ref())
    }

    /// The transcript the acting agent wrote.
    fn acting(&self) -> &Transcript {
        self.own.as_ref().unwrap_or(&self.root)
    }
}

/// `<dir>/<stem>/subagents/agent-<id>.jsonl` names a subagent's file; its root session's is
/// `<dir>/<stem>.jsonl` (when that exists).
fn root_of_subagent_file(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let dir = path.parent()?;
    if !name.starts_with("agent-") || dir.file_name()? != "subagents" {
        return None;
    }
    let session_dir = dir.parent()?;
    let root = session_dir.with_extension("jsonl");
    root.is_file().then_some(root)
}

/// The last `n` messages (user and assistant lines: prompts, replies, tool calls and their
/// results) of `t`, with whatever other lines lie between them.
pub fn recent_messages(t: &Transcript, n: usize) -> Window<'_> {
    let entries = t.entries();
    let mut seen = 0;
    let mut start = entries.len();
    for (i, e) in entries.iter().enumerate().rev() {
        if seen == n {
            break;
        }
        if e.is_message() {
            seen += 1;
            start = i;
        }
    }
    t.recent(entries.len() - start)
}

/// Words that hold something back: a typed answer with any of them is not an approval.
const HOLDING_BACK: &[&str] = &[
    "no", "not", "don't", "dont", "never", "cancel", "stop", "wait", "hold", "deny", "reject",
    "skip", "later", "but", "except", "unless", "instead", "rather", "without", "nope", "abort",
];

/// Words that make a last option read as a go.
const GO: &[&str] = &[
    "yes", "y", "ok", "okay", "sure", "go", "proceed", "continue", "approve", "approved", "allow",
    "confirm", "do", "send", "post", "ship", "publish", "run", "push", "accept", "agree",
];

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .map(|w| w.replace('’', "'"))
        .collect()
}

/// True when `text` holds nothing back: none of [`HOLDING_BACK`], and no `…n't`.
fn holds_nothing_back(text: &str) -> bool {
    let w = words(text);
    !w.is_empty()
        && !w
            .iter()
            .any(|w| HOLDING_BACK.contains(&w.as_str()) || w.ends_with("n't"))
}

/// The seeds' approving answer, for one question shown with `options` (labels, in order): it
/// picks an option other than the last shown; or picks the last option and that reads as a go
/// (its first word is one of [`GO`] and it holds nothing back); or, matching no option, types
/// words that hold nothing back. A multi-select answer (`a, b`) approves when every pick does.
pub fn approving(answer: &str, options: &[String]) -> bool {
    let answer = answer.trim();
    let index = |pick: &str| {
        options
            .iter()
            .position(|o| o.trim().eq_ignore_ascii_case(pick.trim()))
    };
    let picked = |i: usize, label: &str| {
        i + 1 < options.len()
            || (holds_nothing_back(label)
                && words(label)
                    .first()
                    .is_some_and(|w| GO.contains(&w.as_str())))
    };
    if let Some(i) = index(answer) {
        return picked(i, answer);
    }
    let picks: Vec<&str> = answer.split(", ").collect();
    if picks.len() > 1 && picks.iter().all(|p| index(p).is_some()) {
        return picks.iter().all(|p| index(p).is_some_and(|i| picked(i, p)));
    }
    holds_nothing_back(answer)
}

impl Tickets {
    /// The user's own prompts in the window of each session of the tree, oldest first; never
    /// meta, sidechain or harness lines, nor prompts carrying a `machine` marker.
    fn said(&self, sessions: &Sessions) -> Vec<Evidence> {
        let mut out = Vec::new();
        for t in sessions.all() {
            out.extend(
                recent_messages(t, self.window)
                    .prompts()
                    .filter(|p| {
                        !self
                            .machine
                            .iter()
                            .any(|m| !m.is_empty() && p.contains(m.as_str()))
                    })
                    .map(|p| Evidence {
                        source: "user_said".to_owned(),
                        text: p.trim().to_owned(),
                    }),
            );
        }
        out
    }

    /// The answers to AskUserQuestion calls in the window of each session, oldest first.
    fn answers(&self, sessions: &Sessions) -> Vec<Answer> {
        let mut out = Vec::new();
        for t in sessions.all() {
            let window = recent_messages(t, self.window);
            for call in window.tool_calls().named("AskUserQuestion").iter() {
                let Some(result) = call.result() else {
                    continue;
                };
                if result.is_error() {
                    continue;
                }
                let questions = call
                    .call()
                    .input()
                    .get("questions")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                out.extend(context::answers_of(result.content(), &questions));
            }
        }
        out
    }

    /// The store of the event's project, or why there is none.
    pub fn store(&self, evt: &Event) -> Result<TicketStore, TicketError> {
        store_for(evt)
    }

    /// The action of `evt`: `action` when given, else the declaration's own.
    pub fn context(&self, evt: &Event, action: Option<Proposal>) -> Result<Proposal, TicketError> {
        let p = match (action, &self.action) {
            (Some(p), _) => p,
            (None, Some(f)) => f(evt)?,
            (None, None) => return Err(TicketError::NoAction),
        };
        for key in &self.place {
            if !p.place.contains_key(key) {
                return Err(TicketError::MissingPlace(key.clone()));
            }
        }
        if p.place.len() != self.place.len() {
            return Err(TicketError::PlaceMismatch {
                got: p.place.keys().cloned().collect(),
                want: self.place.clone(),
            });
        }
        Ok(p)
    }

    /// Finds the live ticket of the acting tree covering the action, else mints from the first
    /// rule that holds, else denies; any store, source or judge error denies, naming it.
    pub fn check(&self, evt: &Event, action: Option<Proposal>) -> Outcome {
        let deny = |why: String| Outcome::Denied(format!("{} ({why})", self.deny.trim_end()));
        let p = match self.context(evt, action) {
            Ok(p) => p,
            Err(e) => {
                return deny(format!(
                    "capt-hook could not tell which {} this is: {e}",
                    self.kind
                ));
            }
        };
        let store = match self.store(evt) {
            Ok(s) => s,
            Err(e) => return deny(e.to_string()),
        };
        let now = capt_hook_proto::clock::now_unix_ms();
        match store.find(&self.kind, &p.place, &p.fingerprint(), &trees(evt), now) {
            Ok(Some(t)) => return Outcome::Covered(t),
            Ok(None) => {}
            Err(e) => return deny(e.to_string()),
        }
        // Read once, and only by the rules that read the user's words: a condition rule does
        // not fail on a transcript it never needed.
        let sessions = Sessions::of(evt);
        let ctx = Arc::new(Context::read(self, evt, p.clone(), &sessions));
        // Rust conditions in the rules reach it through `Context::current`.
        let _current = Context::enter(ctx.clone());
        let mut notes = Vec::new();
        for rule in &self.rules {
            match self.evidence(evt, &sessions, &ctx, rule) {
                Ok(Some(evidence)) => {
                    return match self.mint(evt, &p, &rule.name, evidence) {
                        Ok(t) => Outcome::Minted(t),
                        Err(e) => deny(e.to_string()),
                    };
                }
                Ok(None) => {}
                Err(e) => notes.push(format!("rule `{}`: {e}", rule.name)),
            }
        }
        if notes.is_empty() {
            Outcome::Denied(self.deny.clone())
        } else {
            deny(notes.join("; "))
        }
    }

    /// The items `source` (user_said, user_answered, touched or user_ruled) finds for the
    /// context's action, oldest first.
    fn matching(&self, ctx: &Context, source: &Source) -> Result<Vec<Item>, TicketError> {
        let p = &ctx.action;
        let value_of = |k: &str| p.place.get(k).cloned();
        let compile = |pattern: &Option<String>| -> Result<Option<Pattern>, TicketError> {
            pattern
                .as_ref()
                .map(|t| {
                    Pattern::new(&fill(t, &value_of, true)?, Mode::IgnoreCase)
                        .map_err(|e| TicketError::Pattern(e.to_string()))
                })
                .transpose()
        };
        match source {
            Source::UserSaid { pattern, names } => {
                let re = compile(pattern)?;
                let words: Vec<String> = names
                    .iter()
                    .filter_map(|k| value_of(k))
                    .filter(|v| !v.is_empty())
                    .collect();
                Ok(ctx
                    .said()?
                    .iter()
                    .filter(|e| {
                        re.as_ref().is_none_or(|r| r.is_match(&e.text))
                            && words.iter().all(|w| names_word(&e.text, w))
                    })
                    .map(|e| Item {
                        source: "user_said",
                        text: e.text.clone(),
                        question: String::new(),
                        approving: true,
                    })
                    .collect())
            }
            Source::UserAnswered { pattern, approved } => {
                let re = compile(pattern)?;
                Ok(ctx
                    .answers()?
                    .iter()
                    .map(|a| Item {
                        source: "user_answered",
                        approving: a.approving,
                        text: format!("Q: {} A: {}", a.question, a.answer),
                        question: format!("{}\n{}", a.question, a.options.join("\n")),
                    })
                    .filter(|item| {
                        re.as_ref().is_none_or(|r| r.is_match(&item.question))
                            && (!approved || item.approving)
                    })
                    .collect())
            }
            Source::Touched { patterns } => {
                let res = patterns
                    .iter()
                    .map(|t| compile(&Some(t.clone())).map(Option::unwrap))
                    .collect::<Result<Vec<_>, _>>()?;
                let names: Vec<String> = p
                    .place
                    .values()
                    .filter(|v| !v.is_empty())
                    .cloned()
                    .collect();
                Ok(ctx
                    .touches()?
                    .iter()
                    .filter(|t| {
                        let text = t.text();
                        if res.is_empty() {
                            !names.is_empty() && names.iter().all(|n| names_word(&text, n))
                        } else {
                            res.iter().any(|r| r.is_match(&text))
                        }
                    })
                    .map(|t| Item {
                        source: "touched",
                        text: t.summary(),
                        question: String::new(),
                        approving: true,
                    })
                    .collect())
            }
            Source::UserRuled { key, ids, tags } => {
                let mut found: Vec<Ruling> = Vec::new();
                if let Some(k) = key {
                    let value = value_of(k).ok_or_else(|| TicketError::MissingPlace(k.clone()))?;
                    if !value.is_empty() {
                        found.extend(ctx.rulings(&value, tags)?);
                    }
                }
                for id in ids {
                    if let Some(r) = ctx.ruling(id)?
                        && !found.contains(&r)
                    {
                        found.push(r);
                    }
                }
                found.sort_by_key(|r| r.recorded_ms());
                Ok(found
                    .into_iter()
                    .map(|r| Item {
                        source: "user_ruled",
                        text: format!("[{}] {}", r.id, r.text),
                        question: String::new(),
                        approving: true,
                    })
                    .collect())
            }
            Source::Decide(_) | Source::Condition(_) => Err(TicketError::JudgeSource),
        }
    }

    /// What `rule` found for the action, `None` when it found nothing.
    fn evidence(
        &self,
        evt: &Event,
        sessions: &Result<Sessions, TicketError>,
        ctx: &Context,
        rule: &Rule,
    ) -> Result<Option<Vec<Evidence>>, TicketError> {
        let found = |item: &Item| {
            vec![Evidence {
                source: item.source.to_owned(),
                text: item.text.clone(),
            }]
        };
        match &rule.when {
            s @ (Source::UserSaid { .. }
            | Source::UserAnswered { .. }
            | Source::Touched { .. }
            | Source::UserRuled { .. }) => {
                // The most recent item is kept as the evidence.
                Ok(self.matching(ctx, s)?.last().map(found))
            }
            Source::Condition(c) => Ok(c.check(evt).then(|| {
                vec![Evidence {
                    source: "condition".to_owned(),
                    text: format!("the condition of rule `{}` held", rule.name),
                }]
            })),
            Source::Decide(d) => {
                let sessions = sessions.as_ref().map_err(Clone::clone)?;
                self.decide(evt, sessions, ctx, d, &rule.name)
            }
        }
    }

    /// Asks the judge to cite the one item of the user's words that permits the action.
    fn decide(
        &self,
        evt: &Event,
        sessions: &Sessions,
        ctx: &Context,
        d: &Decide,
        rule: &str,
    ) -> Result<Option<Vec<Evidence>>, TicketError> {
        let p = &ctx.action;
        let mut items: Vec<Item> = Vec::new();
        for source in &d.over {
            for item in self.matching(ctx, source)? {
                if !items.contains(&item) {
                    items.push(item);
                }
            }
        }
        if items.is_empty() {
            return Ok(None);
        }
        let ids: Vec<String> = (1..=items.len()).map(|i| format!("e{i}")).collect();
        let schema = cite_schema(&ids)?;
        if !d.llm {
            jev_alone(evt, d, &schema)?;
        }
        let evidence: String = items
            .iter()
            .zip(&ids)
            .map(|(it, id)| format!("[{id}] ({}) {}\n", it.source, it.text))
            .collect();
        // The first asking reads everything the declaration shows; the second opinion reads
        // the evidence alone.
        let mut first_blocks = vec![
            Block::new("rules", d.rules.trim()),
            Block::new("action", format!("{}\n{}", p.summary, p.payload)),
        ];
        for c in &d.contexts {
            match c.render(evt) {
                Some(text) => first_blocks.push(Block::new(c.tag(), text)),
                None if c.required() => {
                    return Err(TicketError::EmptyContext(c.tag().to_owned()));
                }
                None => {}
            }
        }
        if let Some(w) = d.transcript.render(sessions.acting(), d.tool_results) {
            first_blocks.push(Block::new("transcript", w));
        }
        if sessions.own.is_some()
            && let Some(w) = d.root_transcript.render(&sessions.root, d.tool_results)
        {
            first_blocks.push(Block::new("root_transcript", w));
        }
        first_blocks.push(Block::new("evidence", evidence.clone()));
        let second_blocks = [
            Block::new("rules", d.rules.trim()),
            Block::new("action", format!("{}\n{}", p.summary, p.payload)),
            Block::new("evidence", evidence),
        ];
        let first = "Does one evidence item show the user permitting exactly this action? Cite \
                     its id, or answer none. Only the user's own words count; never infer \
                     permission.";
        let second = "Read the evidence items alone, one at a time: does one of them, in the \
                      user's own words, permit exactly this action? Cite its id, or answer none.";
        let base: Map<String, Value> = [("cite".to_owned(), json!("none"))].into_iter().collect();
        // Under Jev, a refusal goes on to the claude judge (a Jev failure too): only a sure
        // citation settles the question on the fast path. With the LLM off, Jev's word stands.
        let escalate: EscalateFn = Arc::new(|v| {
            v.get("cite")
                .and_then(Value::as_str)
                .is_none_or(|c| c == "none")
        });
        let ask_once =
            |blocks: &[Block], task: &str, suffix: &str| -> Result<Option<usize>, TicketError> {
                let prompt = capt_hook_llm::render(blocks, task);
                let q = Question {
                    prompt: &prompt,
                    task,
                    schema: &schema,
                    size: d.model,
                    // The seeds' `Decide` judges under `review` unless it names another.
                    specialty: &d.specialty,
                    agent: false,
                    backend: d.backend,
                    timeout: Some(d.deadline),
                    stub_base: Some(&base),
                    escalate: d.llm.then_some(&escalate),
                };
                let name = format!("tickets_{}_{rule}{suffix}", self.kind);
                // A judge that cannot answer in time found nothing; the deny says so.
                let v = ask(evt, &q, &name).map_err(TicketError::NoVerdict)?;
                let cite = v.get("cite").and_then(Value::as_str).unwrap_or("none");
                Ok(ids.iter().position(|id| id == cite))
            };
        let mut cited = ask_once(&first_blocks, first, "")?;
        // One refusal is asked again; the action is refused only when both askings refuse.
        if cited.is_none() && d.second_opinion && d.llm {
            cited = ask_once(&second_blocks, second, "_second")?;
        }
        Ok(cited.map(|i| {
            vec![Evidence {
                source: format!("decide:{}", items[i].source),
                text: items[i].text.clone(),
            }]
        }))
    }

    /// Mints the ticket `rule` earned for the action.
    pub fn mint(
        &self,
        evt: &Event,
        p: &Proposal,
        rule: &str,
        evidence: Vec<Evidence>,
    ) -> Result<Ticket, TicketError> {
        self.mint_for(evt, p, rule, evidence, self.reach, self.ttl)
    }

    /// Mints the one-action ticket that lets the action go ahead when the check itself could
    /// not finish, recording `cause` so the store says why nothing checked it.
    pub fn unchecked(&self, evt: &Event, p: &Proposal, cause: &str) -> Result<Ticket, TicketError> {
        let evidence = vec![Evidence {
            source: "unchecked".to_owned(),
            text: cause.to_owned(),
        }];
        self.mint_for(
            evt,
            p,
            "unchecked",
            evidence,
            Reach::Action,
            Some(UNCHECKED_TTL),
        )
    }

    fn mint_for(
        &self,
        evt: &Event,
        p: &Proposal,
        rule: &str,
        evidence: Vec<Evidence>,
        reach: Reach,
        ttl: Option<Duration>,
    ) -> Result<Ticket, TicketError> {
        let store = self.store(evt)?;
        let now = capt_hook_proto::clock::now_unix_ms();
        let ticket = Ticket {
            id: new_ticket_id(&self.kind, &p.place, now),
            kind: self.kind.clone(),
            place: p.place.clone(),
            reach,
            fingerprint: (reach == Reach::Action).then(|| p.fingerprint()),
            rule: rule.to_owned(),
            evidence,
            session: evt.session_id().map(str::to_owned),
            tree: tree(evt),
            author: Some(evt.agent_id().unwrap_or("main").to_owned()),
            minted_at: now,
            expires_at: ttl.map(|d| now + d.as_millis() as u64),
            revoked_at: None,
        };
        store
            .mint(ticket.clone(), now)
            .map_err(|e| TicketError::Store(e.to_string()))?;
        Ok(ticket)
    }
}

/// The root session id of the acting tree: the payload's `session_id`, which a subagent's
/// events carry from the session that spawned it.
pub fn tree(evt: &Event) -> Option<String> {
    evt.session_id().map(str::to_owned)
}

/// The trees whose tickets cover the action: its own.
pub fn trees(evt: &Event) -> Vec<String> {
    tree(evt).into_iter().collect()
}

/// The ticket store of the event's project (`<state root>/hooks/tickets/<project key>.json`),
/// or why there is none.
pub fn store_for(evt: &Event) -> Result<TicketStore, TicketError> {
    let state_root = evt
        .context()
        .state_root
        .clone()
        .unwrap_or_else(capt_hook_state::state_root);
    let project = evt
        .project_root()
        .map(Path::to_path_buf)
        .or_else(|| evt.cwd().map(PathBuf::from))
        .ok_or(TicketError::NoProject)?;
    Ok(TicketStore::for_project(&state_root, &project))
}

/// With the LLM off, Jev alone may judge: a judge that resolves to an LLM CLI is refused (the
/// `command` judge, a program the project names, stands in for Jev in tests).
fn jev_alone(evt: &Event, d: &Decide, schema: &VerdictSchema) -> Result<(), TicketError> {
    if evt
        .memo(crate::llm::STUB_KEY, crate::llm::LlmStub::default)
        .active
    {
        return Ok(());
    }
    let settings = capt_hook_llm::Settings::from_lookup(|k| crate::llm::env_var(evt, k))?;
    let name = settings.backend(d.backend, schema)?.name();
    if matches!(name, "claude" | "codex") {
        return Err(TicketError::NotJev(name.to_owned()));
    }
    Ok(())
}

/// True when `text` names `word` as a whole name (not inside a longer word).
fn names_word(text: &str, word: &str) -> bool {
    let lower = text.to_lowercase();
    let word = word.to_lowercase();
    // Nothing is not a name; searching for it would step past the text's end.
    if word.is_empty() {
        return false;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let mut from = 0;
    while let Some(i) = lower[from..].find(&word) {
        let start = from + i;
        let end = start + word.len();
        let before = lower[..start].chars().next_back();
        let after = lower[end..].chars().next();
        if before.is_none_or(|c| !is_word(c)) && after.is_none_or(|c| !is_word(c)) {
            return true;
        }
        from = end;
    }
    false
}

/// `"question"="answer"` pairs of an AskUserQuestion result.
fn answer_pairs(content: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = content;
    while let Some(q0) = rest.find('"') {
        let after_q = &rest[q0 + 1..];
        let Some(q1) = after_q.find("\"=\"") else {
            break;
        };
        let question = &after_q[..q1];
        let after_a = &after_q[q1 + 3..];
        let Some(a1) = after_a.find('"') else {
            break;
        };
        out.push((question.to_owned(), after_a[..a1].to_owned()));
        rest = &after_a[a1 + 1..];
    }
    out
}

/// The hook of a declaration: at PreToolUse, allow a covered or newly minted action, else deny.
#[track_caller]
pub fn tickets(decl: Tickets) -> Result<HookDef, DefError> {
    if decl.kind.trim().is_empty() {
        return Err(DefError::new(
            "ticket",
            "name the ticket kind (e.g. `chat.post`)",
        ));
    }
    if decl.deny.trim().is_empty() {
        return Err(DefError::new(
            "deny",
            "say what the agent can do to get permission",
        ));
    }
    if decl.rules.is_empty() {
        return Err(DefError::new(
            "rules",
            "list at least one rule that mints a ticket",
        ));
    }
    if decl.action.is_none() {
        return Err(DefError::new(
            "place",
            "a tickets hook needs an action to check",
        ));
    }
    for (i, r) in decl.rules.iter().enumerate() {
        if let Source::Decide(d) = &r.when {
            if d.over.is_empty() {
                return Err(DefError::new(
                    format!("rules[{i}].decide.over"),
                    "list the evidence the judge reads (`user_said`, `user_answered`)",
                ));
            }
            if d.over
                .iter()
                .any(|o| matches!(o, Source::Decide(_) | Source::Condition(_)))
            {
                return Err(DefError::new(
                    format!("rules[{i}].decide.over"),
                    TicketError::JudgeSource.to_string(),
                ));
            }
        }
    }
    // Loading the project checks that its `config.toml` knows the first judge's specialty (a
    // hook names one); another judge's unknown one makes its rule find nothing, naming it.
    let specialty = decl.rules.iter().find_map(|r| match &r.when {
        Source::Decide(d) => Some(d.specialty.clone()),
        _ => None,
    });
    let identity = decl.kind.clone();
    let handler: HandlerFn = Arc::new(move |evt: &Event| -> HandlerResult {
        Ok(Some(decl.check(evt, None).into_result(decl.grant)))
    });
    let def = custom(CustomKind {
        kind: "tickets",
        default_events: EventSet::of(&[EventKind::PreToolUse]),
        guards: Vec::new(),
        skip_guards: Vec::new(),
        handler,
        identity,
        skip_planning_agents: false,
        default_max_fires: None,
        inline: false,
        manages_repetition: false,
    });
    Ok(match specialty {
        Some(s) => def.with_specialty(s),
        None => def,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_escaped_values_and_skip_regex_braces() {
        let v = |k: &str| (k == "channel").then(|| "a.b".to_owned());
        assert_eq!(fill("x{channel}y{2,3}", &v, true).unwrap(), "xa\\.by{2,3}");
        assert!(fill("{nope}", &v, true).is_err());
        assert!(check_template("post.*{channel}").is_ok());
        assert!(check_template("post(").is_err());
        assert!(names_word("post to #deploys now", "deploys"));
        assert!(!names_word("post to #deploys-old", "deploys"));
        // Non-ASCII text and words, and an empty word, never split a character or run off the end.
        assert!(names_word(
            "déployer sur #déploiements à 9h",
            "DÉPLOIEMENTS"
        ));
        assert!(!names_word("#déploiementsé", "déploiements"));
        assert!(names_word("İstanbul ölçüm", "ölçüm"));
        for text in ["", "abc", "é", "déploiements"] {
            assert!(!names_word(text, ""), "{text:?}");
        }
        assert_eq!(
            answer_pairs("User has answered your questions: \"A?\"=\"x\", \"B?\"=\"y\"."),
            vec![("A?".into(), "x".into()), ("B?".into(), "y".into())]
        );
        // Every escaped place value compiles and matches itself literally, whichever engine runs.
        for value in ["a b#c-d~e&f", "x.y*z", "(team) [ops]", "{c}", "naïve"] {
            let v = |_: &str| Some(value.to_owned());
            for template in ["{channel}", "(?<=to ){channel}"] {
                let p = Pattern::new(&fill(template, &v, true).unwrap(), Mode::IgnoreCase)
                    .unwrap_or_else(|e| panic!("{value}: {e}"));
                assert!(p.is_match(&format!("post to {value}")), "{value}");
                assert!(!p.is_match("post to ab"), "{value}");
            }
        }
    }
}

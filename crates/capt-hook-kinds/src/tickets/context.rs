//! The [`Context`] a declaration decides on: the action, the acting tree, and everything that
//! tree knows that bears on it (the user's words and answers, the tree's tool calls, the user's
//! durable rulings), read once per check. Rules read it; a Rust condition reaches the context
//! of the check it runs in through [`Context::current`]; a test declares one outright with
//! [`Context::fake`].

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use capt_hook_core::Event;
use capt_hook_state::rulings::{Ruling, parse_time_ms, read_rulings, rulings_path};
use parking_lot::Mutex;
use serde_json::Value;

use super::{
    Evidence, Proposal, Sessions, TicketError, Tickets, answer_pairs, approving, names_word,
    recent_messages,
};

/// One answer of the user's to a question the agent asked (AskUserQuestion).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The question.
    pub question: String,
    /// The options shown, in order.
    pub options: Vec<String>,
    /// What the user picked or typed.
    pub answer: String,
    /// Whether the answer approves (see [`approving`]).
    pub approving: bool,
}

impl Answer {
    /// An answer to `question`, shown with `options`, approving or not as the seeds read it.
    pub fn new(question: &str, options: &[&str], answer: &str) -> Answer {
        let options: Vec<String> = options.iter().map(|o| (*o).to_owned()).collect();
        Answer {
            question: question.to_owned(),
            approving: approving(answer, &options),
            options,
            answer: answer.to_owned(),
        }
    }
}

/// One of the tree's tool calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Touch {
    /// The tool.
    pub tool: String,
    /// Its input.
    pub input: Value,
    /// Its result's text, when it has one.
    pub result: Option<String>,
}

impl Touch {
    /// The text a pattern reads: the tool, its input, and its result.
    pub(super) fn text(&self) -> String {
        match &self.result {
            Some(r) => format!("{} {}\n{r}", self.tool, self.input),
            None => format!("{} {}", self.tool, self.input),
        }
    }

    /// The call as evidence: the tool and its input, shortened.
    pub(super) fn summary(&self) -> String {
        let input = self.input.to_string();
        let mut short: String = input.chars().take(200).collect();
        if short.len() < input.len() {
            short.push('…');
        }
        format!("{} {short}", self.tool)
    }
}

/// What the tree's transcripts hold for a declaration.
#[derive(Debug, Clone, Default, PartialEq)]
struct Words {
    said: Vec<Evidence>,
    answers: Vec<Answer>,
    touches: Vec<Touch>,
    /// When the acting tree's session started (its first timestamped line), if known.
    started_ms: Option<u64>,
}

/// The action a declaration decides, and everything the session tree knows that bears on it.
pub struct Context {
    /// The declaration's ticket kind.
    pub kind: String,
    /// The action to cover.
    pub action: Proposal,
    /// The root session id of the acting tree.
    pub tree: String,
    /// The trees whose tickets cover the action.
    pub trees: Vec<String>,
    /// The acting session.
    pub session: String,
    /// The acting agent (`main`, or the subagent's id).
    pub agent: String,
    /// The id of the pending call.
    pub call: String,
    /// The transcripts' part, or why they could not be read: only the rules that read them fail.
    words: Result<Words, TicketError>,
    /// The user's durable rulings, or why they could not be read.
    rulings: Result<Vec<Ruling>, TicketError>,
    facts: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("kind", &self.kind)
            .field("action", &self.action)
            .field("tree", &self.tree)
            .field("session", &self.session)
            .field("agent", &self.agent)
            .field("call", &self.call)
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// The contexts of the checks running on this thread, innermost last.
    static CURRENT: RefCell<Vec<Arc<Context>>> = const { RefCell::new(Vec::new()) };
}

/// Keeps a context current on this thread while a check runs its rules.
pub(super) struct Entered;

impl Drop for Entered {
    fn drop(&mut self) {
        CURRENT.with(|c| {
            c.borrow_mut().pop();
        });
    }
}

impl Context {
    /// The live context of `evt` for an action of `kind`: the tree's words, answers and tool
    /// calls in its last `window` messages (prompts holding a `machine` marker are not the
    /// user's), and the rulings in the state root. A handler that decides on its own (with
    /// [`super::Decide::quick`], say) builds one here.
    pub fn of(
        evt: &Event,
        kind: &str,
        action: Proposal,
        window: usize,
        machine: Vec<String>,
    ) -> Context {
        let decl = Tickets {
            kind: kind.to_owned(),
            place: action.place.keys().cloned().collect(),
            reach: super::Reach::Action,
            rules: Vec::new(),
            deny: String::new(),
            action: None,
            ttl: None,
            window,
            machine,
            grant: false,
        };
        Context::read(&decl, evt, action, &Sessions::of(evt))
    }

    /// The context `decl` reads for `action`, over the tree's `sessions`.
    pub(super) fn read(
        decl: &Tickets,
        evt: &Event,
        action: Proposal,
        sessions: &Result<Sessions, TicketError>,
    ) -> Context {
        let session = evt.session_id().unwrap_or_default().to_owned();
        let words = sessions
            .as_ref()
            .map(|s| Words::read(decl, s))
            .map_err(Clone::clone);
        let state_root = evt
            .context()
            .state_root
            .clone()
            .unwrap_or_else(capt_hook_state::state_root);
        let rulings = read_rulings(&rulings_path(&state_root))
            .map_err(|e| TicketError::Rulings(e.to_string()));
        Context {
            kind: decl.kind.clone(),
            action,
            tree: super::tree(evt).unwrap_or_default(),
            trees: super::trees(evt),
            session,
            agent: evt.agent_id().unwrap_or("main").to_owned(),
            call: evt
                .payload()
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            words,
            rulings,
            facts: Mutex::new(HashMap::new()),
        }
    }

    /// A context a test declares outright: the action at `place` (key, value pairs) of `kind`,
    /// no words, answers, tool calls or rulings until the `with_*` calls add them, in a tree
    /// and session named `root-session`, acted on by `main` in call `toolu_1`.
    pub fn fake(kind: &str, place: &[(&str, &str)]) -> Context {
        Context {
            kind: kind.to_owned(),
            action: Proposal {
                place: place
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
                payload: Value::Object(Default::default()),
                summary: String::new(),
            },
            tree: "root-session".into(),
            trees: vec!["root-session".into()],
            session: "root-session".into(),
            agent: "main".into(),
            call: "toolu_1".into(),
            words: Ok(Words::default()),
            rulings: Ok(Vec::new()),
            facts: Mutex::new(HashMap::new()),
        }
    }

    /// The user's prompts, oldest first; a plain string is one prompt of the user's.
    pub fn with_said<S: Into<String>>(mut self, said: impl IntoIterator<Item = S>) -> Context {
        if let Ok(w) = &mut self.words {
            w.said = said
                .into_iter()
                .map(|s| Evidence {
                    source: "user_said".into(),
                    text: s.into(),
                })
                .collect();
        }
        self
    }

    /// The user's answers, oldest first.
    pub fn with_answers(mut self, answers: Vec<Answer>) -> Context {
        if let Ok(w) = &mut self.words {
            w.answers = answers;
        }
        self
    }

    /// The tree's tool calls, oldest first.
    pub fn with_touches(mut self, touches: Vec<Touch>) -> Context {
        if let Ok(w) = &mut self.words {
            w.touches = touches;
        }
        self
    }

    /// The user's rulings, and when the acting session started (rulings recorded later do
    /// not count).
    pub fn with_rulings(mut self, rulings: Vec<Ruling>, session_started_ms: u64) -> Context {
        self.rulings = Ok(rulings);
        if let Ok(w) = &mut self.words {
            w.started_ms = Some(session_started_ms);
        }
        self
    }

    /// The action's payload and one-line summary.
    pub fn with_action(mut self, payload: Value, summary: &str) -> Context {
        self.action.payload = payload;
        self.action.summary = summary.to_owned();
        self
    }

    /// Injects a lookup by its type (a thread read from a chat system, say): [`Context::fact`]
    /// returns it instead of building its default.
    pub fn with_fact<T: Any + Send + Sync>(self, fact: T) -> Context {
        self.facts.lock().insert(TypeId::of::<T>(), Arc::new(fact));
        self
    }

    /// The injected lookup of type `T`, or `default` of this context, built once and kept.
    pub fn fact<T: Any + Send + Sync>(&self, default: impl FnOnce(&Context) -> T) -> Arc<T> {
        let id = TypeId::of::<T>();
        if let Some(v) = self.facts.lock().get(&id).cloned()
            && let Ok(v) = v.downcast::<T>()
        {
            return v;
        }
        // Built outside the lock: the default may itself read other facts.
        let built = Arc::new(default(self));
        let mut facts = self.facts.lock();
        let kept = facts.entry(id).or_insert_with(|| built.clone()).clone();
        kept.downcast::<T>().unwrap_or(built)
    }

    fn words(&self) -> Result<&Words, TicketError> {
        self.words.as_ref().map_err(Clone::clone)
    }

    /// The user's words across the tree, oldest first.
    pub fn said(&self) -> Result<&[Evidence], TicketError> {
        Ok(&self.words()?.said)
    }

    /// The user's answers to the agent's questions, oldest first.
    pub fn answers(&self) -> Result<&[Answer], TicketError> {
        Ok(&self.words()?.answers)
    }

    /// The tree's tool calls, oldest first.
    pub fn touches(&self) -> Result<&[Touch], TicketError> {
        Ok(&self.words()?.touches)
    }

    /// Rulings recorded before the acting session started. A session whose start is unknown
    /// (no timestamped line yet) started now: every recorded ruling predates it.
    fn standing(&self) -> Result<Vec<&Ruling>, TicketError> {
        let rulings = self.rulings.as_ref().map_err(Clone::clone)?;
        let started = self
            .words
            .as_ref()
            .ok()
            .and_then(|w| w.started_ms)
            .unwrap_or_else(capt_hook_proto::clock::now_unix_ms);
        Ok(rulings
            .iter()
            .filter(|r| r.recorded_ms().is_some_and(|at| at < started))
            .collect())
    }

    /// The user's standing ruling `id`, when it was recorded before the session started.
    pub fn ruling(&self, id: &str) -> Result<Option<Ruling>, TicketError> {
        Ok(self.standing()?.into_iter().find(|r| r.id == id).cloned())
    }

    /// The user's durable rulings naming `term` as a whole name and carrying every tag of
    /// `tags`, recorded before the session started, oldest first.
    pub fn rulings(&self, term: &str, tags: &BTreeSet<String>) -> Result<Vec<Ruling>, TicketError> {
        Ok(self
            .standing()?
            .into_iter()
            .filter(|r| names_word(&r.text, term) && tags.is_subset(&r.tags))
            .cloned()
            .collect())
    }

    /// The context of the declaration deciding `evt` on this thread, while its rules run (a
    /// Rust condition in a rule reads it here); `None` outside a check, or for another call.
    pub fn current(evt: &Event) -> Option<Arc<Context>> {
        let call = evt
            .payload()
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let session = evt.session_id().unwrap_or_default();
        CURRENT.with(|c| {
            c.borrow()
                .iter()
                .rev()
                .find(|ctx| ctx.call == call && ctx.session == session)
                .cloned()
        })
    }

    /// Makes `ctx` current on this thread until the guard drops.
    pub(super) fn enter(ctx: Arc<Context>) -> Entered {
        CURRENT.with(|c| c.borrow_mut().push(ctx));
        Entered
    }
}

impl Words {
    fn read(decl: &Tickets, sessions: &Sessions) -> Words {
        let started_ms = sessions
            .root
            .entries()
            .iter()
            .find_map(|e| e.timestamp().and_then(parse_time_ms));
        Words {
            said: decl.said(sessions),
            answers: decl.answers(sessions),
            touches: touches(decl.window, sessions),
            started_ms,
        }
    }
}

/// The tool calls in the window of each session of the tree, oldest first.
fn touches(window: usize, sessions: &Sessions) -> Vec<Touch> {
    let mut out = Vec::new();
    for t in sessions.all() {
        for call in recent_messages(t, window).tool_calls().iter() {
            out.push(Touch {
                tool: call.call().name().to_owned(),
                input: Value::Object(call.call().input().clone()),
                result: call.result().map(|r| r.content().to_owned()),
            });
        }
    }
    out
}

/// `"question"="answer"` pairs of an AskUserQuestion result, read into [`Answer`]s.
pub(super) fn answers_of(content: &str, questions: &[Value]) -> Vec<Answer> {
    let pairs = answer_pairs(content);
    let mut out = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        let text = q.get("question").and_then(Value::as_str).unwrap_or("");
        let options: Vec<String> = q
            .get("options")
            .and_then(Value::as_array)
            .map(|o| {
                o.iter()
                    .filter_map(|x| x.get("label").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let answer = pairs
            .iter()
            .find(|(qq, _)| qq == text)
            .or_else(|| pairs.get(i))
            .map(|(_, a)| a.clone());
        let Some(answer) = answer else {
            continue;
        };
        out.push(Answer {
            question: text.to_owned(),
            approving: approving(&answer, &options),
            options,
            answer,
        });
    }
    out
}

//! Permission tickets: a hook declares which actions need a ticket, and [`Tickets::check`] finds
//! a live ticket covering the action, else mints one from the first rule whose evidence holds
//! (the user's own words, an answer to a question, a judge's citation), else denies with the
//! declaration's `deny` text. It fails closed: a store, source or judge error denies, naming it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use capt_hook_core::{Condition, Event, EventKind, EventSet, HookResult, Mode, Pattern};
use capt_hook_llm::prompt::Block;
use serde_json::{Map, Value, json};

pub use capt_hook_state::tickets::{Evidence, Reach, Ticket, TicketStore, new_ticket_id};

use crate::hook::{HandlerFn, HandlerResult};
use crate::llm::{BackendChoice, EscalateFn, Field, FieldType, Question, Size, VerdictSchema, ask};
use crate::primitives::{CustomKind, DefError, HookDef, custom};

/// How long an [`Tickets::unchecked`] ticket lives: long enough for the one action it covers.
pub const UNCHECKED_TTL: Duration = Duration::from_secs(10 * 60);

/// The default ticket lifetime.
pub const DEFAULT_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// The default number of recent transcript entries the evidence is read from.
pub const DEFAULT_WINDOW: usize = 60;

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

/// Maps an event to the action to cover, or says why it cannot.
pub type ActionFn = Arc<dyn Fn(&Event) -> Result<Proposal, String> + Send + Sync>;

/// `Decide`: a judge reads the user's words and cites the one item that permits the action.
#[derive(Debug, Clone)]
pub struct Decide {
    /// The hook's rules for this kind of action, in prose.
    pub rules: String,
    /// The model tier.
    pub model: Size,
    /// The judge (`None`: the project default).
    pub backend: Option<BackendChoice>,
    /// How long each asking of the judge may take; past it the rule found nothing.
    pub deadline: Duration,
    /// A refusal is asked again on the evidence alone; refused only when both refuse.
    pub second_opinion: bool,
}

impl Decide {
    /// A judge over `rules` with the defaults (small model, 20 s).
    pub fn new(rules: impl Into<String>) -> Decide {
        Decide {
            rules: rules.into(),
            model: Size::Small,
            backend: None,
            deadline: Duration::from_secs(20),
            second_opinion: true,
        }
    }
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
    /// `pattern`; with `approved`, only an answer that does not hold back.
    UserAnswered {
        /// The regex template over the question and its options.
        pattern: Option<String>,
        /// Only an approving answer counts.
        approved: bool,
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
    /// How many recent transcript entries the evidence is read from.
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
) -> Result<String, String> {
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
        let v = values(key).ok_or_else(|| format!("`{{{key}}}` names no value"))?;
        out.push_str(&if quote { escape(&v) } else { v });
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Checks a regex template at load time: placeholders stand for a plain word.
pub fn check_template(template: &str) -> Result<(), String> {
    let probe = fill(template, &|_| Some("x".to_owned()), true)?;
    Pattern::new(&probe, Mode::IgnoreCase)
        .map(|_| ())
        .map_err(|e| e.to_string())
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

    fn read(&self, input: &Value) -> Result<String, String> {
        match self {
            Extract::Pointer(p) => match input.pointer(p) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(Value::Null) | None => Err(format!("the tool input has no {p}")),
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
            .map_err(|e| format!("{e} in the tool input")),
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
            let v = how
                .read(&input)
                .map_err(|e| format!("cannot read place `{key}`: {e}"))?;
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
            payload: json!({"tool": tool, "input": input}),
            summary,
        })
    })
}

/// One item of the user's words.
#[derive(Debug, Clone)]
struct Item {
    source: &'static str,
    text: String,
    /// For answers: the question and options, which patterns read.
    question: String,
    approving: bool,
}

/// Words of a negative answer: an answer starting with one holds something back.
const HOLDING_BACK: &[&str] = &[
    "no", "don't", "do not", "dont", "cancel", "stop", "deny", "reject", "never", "not ", "skip",
    "wait",
];

impl Tickets {
    fn user_prompts(&self, evt: &Event) -> Vec<Item> {
        evt.transcript()
            .recent(self.window)
            .prompts()
            .filter(|p| {
                !self
                    .machine
                    .iter()
                    .any(|m| !m.is_empty() && p.contains(m.as_str()))
            })
            .map(|p| Item {
                source: "user_said",
                text: p.trim().to_owned(),
                question: String::new(),
                approving: true,
            })
            .collect()
    }

    fn user_answers(&self, evt: &Event) -> Vec<Item> {
        let window = evt.transcript().recent(self.window);
        let mut items = Vec::new();
        for call in window.tool_calls().named("AskUserQuestion").iter() {
            let Some(result) = call.result() else {
                continue;
            };
            if result.is_error() {
                continue;
            }
            let content = result.content();
            let pairs = answer_pairs(content);
            let questions = call
                .call()
                .input()
                .get("questions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
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
                let lowered = answer.trim().to_lowercase();
                let last = options.last().map(|l| l.trim().to_lowercase());
                let approving = !HOLDING_BACK.iter().any(|w| lowered.starts_with(w))
                    && (options.len() < 2 || last.as_deref() != Some(lowered.as_str()));
                items.push(Item {
                    source: "user_answered",
                    text: format!("Q: {text} A: {answer}"),
                    question: format!("{text}\n{}", options.join("\n")),
                    approving,
                });
            }
        }
        items
    }

    /// The store of the event's project, or why there is none.
    pub fn store(&self, evt: &Event) -> Result<TicketStore, String> {
        let state_root = evt
            .context()
            .state_root
            .clone()
            .unwrap_or_else(capt_hook_state::state_root);
        let project = evt
            .project_root()
            .map(std::path::Path::to_path_buf)
            .or_else(|| evt.cwd().map(std::path::PathBuf::from))
            .ok_or("the event names no project to keep tickets for")?;
        Ok(TicketStore::for_project(&state_root, &project))
    }

    /// The action of `evt`: `action` when given, else the declaration's own.
    pub fn context(&self, evt: &Event, action: Option<Proposal>) -> Result<Proposal, String> {
        let p = match (action, &self.action) {
            (Some(p), _) => p,
            (None, Some(f)) => f(evt)?,
            (None, None) => return Err("the declaration has no action and none was passed".into()),
        };
        for key in &self.place {
            if !p.place.contains_key(key) {
                return Err(format!("the action carries no place key `{key}`"));
            }
        }
        if p.place.len() != self.place.len() {
            return Err(format!(
                "the action's place keys {:?} are not the declaration's {:?}",
                p.place.keys().collect::<Vec<_>>(),
                self.place
            ));
        }
        Ok(p)
    }

    /// Finds the live ticket covering the action, else mints from the first rule that holds,
    /// else denies; any store, source or judge error denies, naming it.
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
            Err(e) => return deny(e),
        };
        let now = capt_hook_proto::clock::now_unix_ms();
        match store.find(&self.kind, &p.place, &p.fingerprint(), now) {
            Ok(Some(t)) => return Outcome::Covered(t),
            Ok(None) => {}
            Err(e) => return deny(e.to_string()),
        }
        let mut notes = Vec::new();
        for rule in &self.rules {
            match self.evidence(evt, &p, rule) {
                Ok(Some(evidence)) => {
                    return match self.mint(evt, &p, &rule.name, evidence) {
                        Ok(t) => Outcome::Minted(t),
                        Err(e) => deny(e),
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

    /// What `rule` found for the action, `None` when it found nothing.
    fn evidence(
        &self,
        evt: &Event,
        p: &Proposal,
        rule: &Rule,
    ) -> Result<Option<Vec<Evidence>>, String> {
        let value_of = |k: &str| p.place.get(k).cloned();
        let found = |item: &Item| {
            Some(vec![Evidence {
                source: item.source.to_owned(),
                text: item.text.clone(),
            }])
        };
        match &rule.when {
            Source::UserSaid { pattern, names } => {
                let re = match pattern {
                    Some(t) => Some(
                        Pattern::new(&fill(t, &value_of, true)?, Mode::IgnoreCase)
                            .map_err(|e| e.to_string())?,
                    ),
                    None => None,
                };
                let words: Vec<String> = names
                    .iter()
                    .filter_map(|k| value_of(k))
                    .filter(|v| !v.is_empty())
                    .collect();
                let hit = self.user_prompts(evt).into_iter().rev().find(|item| {
                    re.as_ref().is_none_or(|r| r.is_match(&item.text))
                        && words.iter().all(|w| names_word(&item.text, w))
                });
                Ok(hit.as_ref().and_then(found))
            }
            Source::UserAnswered { pattern, approved } => {
                let re = match pattern {
                    Some(t) => Some(
                        Pattern::new(&fill(t, &value_of, true)?, Mode::IgnoreCase)
                            .map_err(|e| e.to_string())?,
                    ),
                    None => None,
                };
                let hit = self.user_answers(evt).into_iter().rev().find(|item| {
                    re.as_ref().is_none_or(|r| r.is_match(&item.question))
                        && (!approved || item.approving)
                });
                Ok(hit.as_ref().and_then(found))
            }
            Source::Condition(c) => Ok(c.check(evt).then(|| {
                vec![Evidence {
                    source: "condition".to_owned(),
                    text: format!("the condition of rule `{}` held", rule.name),
                }]
            })),
            Source::Decide(d) => self.decide(evt, p, d, &rule.name),
        }
    }

    /// Asks the judge to cite the one item of the user's words that permits the action.
    fn decide(
        &self,
        evt: &Event,
        p: &Proposal,
        d: &Decide,
        rule: &str,
    ) -> Result<Option<Vec<Evidence>>, String> {
        let mut items = self.user_prompts(evt);
        items.extend(self.user_answers(evt));
        if items.is_empty() {
            return Ok(None);
        }
        let ids: Vec<String> = (1..=items.len()).map(|i| format!("e{i}")).collect();
        let mut choices = vec!["none".to_owned()];
        choices.extend(ids.iter().cloned());
        let schema = VerdictSchema::new(vec![
            Field::new(
                "cite",
                FieldType::Choice(choices),
                "the id of the one evidence item that permits exactly this action, or none",
            ),
            Field::new("reasoning", FieldType::String, "one sentence why"),
        ])
        .map_err(|e| e.to_string())?;
        let evidence: String = items
            .iter()
            .zip(&ids)
            .map(|(it, id)| format!("[{id}] ({}) {}\n", it.source, it.text))
            .collect();
        let first = "Does one evidence item show the user permitting exactly this action? Cite \
                     its id, or answer none. Only the user's own words count; never infer \
                     permission.";
        let second = "Read the evidence items alone, one at a time: does one of them, in the \
                      user's own words, permit exactly this action? Cite its id, or answer none.";
        let base: Map<String, Value> = [("cite".to_owned(), json!("none"))].into_iter().collect();
        // Under Jev, a refusal goes on to the claude judge (a Jev failure too): only a sure
        // citation settles the question on the fast path.
        let escalate: EscalateFn = Arc::new(|v| {
            v.get("cite")
                .and_then(Value::as_str)
                .is_none_or(|c| c == "none")
        });
        let ask_once = |task: &str, suffix: &str| -> Result<Option<usize>, String> {
            let blocks = [
                Block::new("rules", d.rules.trim()),
                Block::new("action", format!("{}\n{}", p.summary, p.payload)),
                Block::new("evidence", evidence.clone()),
            ];
            let prompt = capt_hook_llm::render(&blocks, task);
            let q = Question {
                prompt: &prompt,
                task,
                schema: &schema,
                size: d.model,
                // The seeds' `Decide` judges under `review`.
                specialty: crate::llm::DEFAULT_SPECIALTY,
                agent: false,
                backend: d.backend,
                timeout: Some(d.deadline),
                stub_base: Some(&base),
                escalate: Some(&escalate),
            };
            let name = format!("tickets_{}_{rule}{suffix}", self.kind);
            // A judge that cannot answer in time found nothing; the deny says so.
            let v = ask(evt, &q, &name).map_err(|e| format!("the judge gave no verdict ({e})"))?;
            let cite = v.get("cite").and_then(Value::as_str).unwrap_or("none");
            Ok(ids.iter().position(|id| id == cite))
        };
        let mut cited = ask_once(first, "")?;
        // One refusal is asked again; the action is refused only when both askings refuse.
        if cited.is_none() && d.second_opinion {
            cited = ask_once(second, "_second")?;
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
    ) -> Result<Ticket, String> {
        self.mint_for(evt, p, rule, evidence, self.reach, self.ttl)
    }

    /// Mints the one-action ticket that lets the action go ahead when the check itself could
    /// not finish, recording `cause` so the store says why nothing checked it.
    pub fn unchecked(&self, evt: &Event, p: &Proposal, cause: &str) -> Result<Ticket, String> {
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
    ) -> Result<Ticket, String> {
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
            minted_at: now,
            expires_at: ttl.map(|d| now + d.as_millis() as u64),
        };
        store.mint(ticket.clone(), now).map_err(|e| e.to_string())?;
        Ok(ticket)
    }
}

/// True when `text` names `word` as a whole name (not inside a longer word).
fn names_word(text: &str, word: &str) -> bool {
    let lower = text.to_lowercase();
    let word = word.to_lowercase();
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
        from = start + word.len().max(1);
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
    let identity = decl.kind.clone();
    let handler: HandlerFn = Arc::new(move |evt: &Event| -> HandlerResult {
        Ok(Some(decl.check(evt, None).into_result(decl.grant)))
    });
    Ok(custom(CustomKind {
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
    }))
}

#[cfg(test)]
mod tests;

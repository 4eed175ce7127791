//! Dispatch: find the hooks an event concerns, run them, fold their verdicts.
//!
//! Conditions and built-in primitives are cheap and pure, so they run on the calling thread in
//! registration order. Rust handlers (`on`) run concurrently on a bounded pool, so a slow one
//! delays nobody but itself; a handler still running at the deadline is abandoned and its
//! verdict dropped. The fold always walks results in registration order, so the verdict equals
//! what a sequential run would give.
//!
//! A hook that matched and then failed (its handler returned an error, panicked or missed the
//! deadline) is a [`HookFailure`]. On a guard event (PreToolUse, PermissionRequest,
//! PreSkillShellCommand) a failure never lets another hook's approval through: the call is left
//! to the user ([`Verdict::Unchecked`]), and a failed `mandatory` hook denies it outright, since
//! its author said the call must never pass without it.

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use capt_hook_core::condition::{Miss, first_miss};
use capt_hook_core::paths::Gitignore;
use capt_hook_core::{Action, Event, EventKind, FoldInput, HookResult, fold};
use capt_hook_journal::Fired;
use capt_hook_state::{FireCounter, Reservation};

// How a handler is called (its error or panic kept as a cause) belongs to the hook, so the
// hook needs nothing from the dispatcher; the cause keeps its path here.
pub use crate::hook::FailureCause;
use crate::hook::{Body, Hook, call, panic_text};
use crate::registry::Registry;

/// How many handler jobs run at once in one process.
const POOL_THREADS: usize = 16;
/// Handler jobs waiting for a pool thread. When stuck handlers hold every thread, the queue
/// fills and a new job is abandoned at once instead of piling up (with its event) forever.
const POOL_QUEUE: usize = 256;

/// Options for one dispatch.
#[derive(Debug, Clone, Copy, Default)]
pub struct DispatchOptions {
    /// Handlers unfinished at this instant are abandoned.
    pub deadline: Option<Instant>,
    /// Run the async hooks (after the reply) instead of the sync ones.
    pub run_async: bool,
}

/// Why a hook gave no verdict, or what it gave; one per registered hook, for `explain`.
#[derive(Debug, Clone)]
pub enum Trace {
    /// The hook does not listen to this event.
    NotSubscribed,
    /// The hook runs in the other (sync/async) mode.
    OtherMode,
    /// Skipped for a planning agent.
    PlanningAgent,
    /// Skipped because the event's file is gitignored.
    Gitignored,
    /// A condition decided against it.
    NoMatch(Miss),
    /// An earlier hook blocked and this handler-backed hook was not run.
    Doomed,
    /// It matched and returned this (or nothing).
    Matched(Option<HookResult>),
    /// Its handler missed the deadline.
    Abandoned,
    /// Its handler returned an error or panicked.
    Failed(FailureCause),
    /// It already delivered `max_fires` results in this session for this agent.
    Capped,
    /// Claude Code is already continuing because of a stop hook, and this hook does not repeat.
    Continuation,
}

impl Trace {
    /// One line saying what happened to `hook`, for `explain` and failing inline tests.
    pub fn describe(&self, hook: &Hook) -> String {
        match self {
            Trace::NotSubscribed => format!("skipped: listens to {}", hook.events),
            Trace::OtherMode => "skipped: async hook (runs with --async)".to_owned(),
            Trace::PlanningAgent => "skipped: planning agent".to_owned(),
            Trace::Gitignored => "skipped: the file is gitignored".to_owned(),
            Trace::NoMatch(miss) => {
                format!("no match: {}", miss.describe(&hook.only_if, &hook.skip_if))
            }
            Trace::Doomed => "not run: an earlier hook already blocked".to_owned(),
            Trace::Abandoned => "abandoned: the handler missed the deadline".to_owned(),
            Trace::Failed(cause) => format!("FAILED: the handler {cause}"),
            Trace::Capped => "skipped: max_fires reached for this session and agent".to_owned(),
            Trace::Continuation => "skipped: Claude Code is already continuing because of a \
                                    stop hook (repeat = true blocks again)"
                .to_owned(),
            Trace::Matched(None) => "matched, returned nothing".to_owned(),
            Trace::Matched(Some(r)) => format!(
                "MATCHED -> {}{}",
                r.action.name(),
                r.message
                    .as_ref()
                    .map(|m| format!(": {}", m.replace('\n', "\n      ")))
                    .unwrap_or_default()
            ),
        }
    }

    /// Why the hook gave no verdict without running, or `None` when it ran (or did not match:
    /// a condition deciding against it is what a test usually means).
    pub fn skip_reason(&self, hook: &Hook) -> Option<String> {
        match self {
            Trace::Matched(_) | Trace::NoMatch(_) => None,
            other => Some(other.describe(hook)),
        }
    }
}

/// A hook that matched an event and failed to give its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookFailure {
    /// The hook's name.
    pub hook: String,
    /// The hook said the call must never pass without it.
    pub mandatory: bool,
    /// What went wrong.
    pub cause: FailureCause,
}

impl std::fmt::Display for HookFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hook {} {}", self.hook, self.cause)
    }
}

/// Everything one dispatch found: the folded verdict of the hooks that answered, and the hooks
/// that could not.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The fold of every result that arrived.
    pub result: Option<HookResult>,
    /// Hooks that matched and failed, in registration order.
    pub failures: Vec<HookFailure>,
    /// Hooks that delivered a result, in registration order (for the journal).
    pub fired: Vec<Fired>,
}

/// What to answer for an event once failures are weighed.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The hooks' verdict stands (possibly none).
    Decided(Option<HookResult>),
    /// A tool call some hook could not check: the user decides. `partial` is what the hooks
    /// that did answer said (context and rewrites to show, never an approval).
    Unchecked {
        /// What failed, for the user.
        reason: String,
        /// The fold of the hooks that answered.
        partial: Option<HookResult>,
    },
}

/// Where every failure note sends the user: the session log records each hook's failure.
const SEE_LOGS: &str = "`capt-hook logs` shows what happened.";

/// True for the events whose call waits on the verdict (the events table's guard events).
pub fn is_guarded(kind: EventKind) -> bool {
    kind.is_guard()
}

impl Outcome {
    /// Weighs the failures for an event of `kind`. Off the guarded events a failure only loses
    /// that hook's verdict (it is logged). On them, a deny still stands; otherwise a failed
    /// mandatory hook denies and any other failure leaves the call to the user.
    pub fn verdict(mut self, kind: EventKind) -> Verdict {
        if self.failures.is_empty() || !is_guarded(kind) {
            return Verdict::Decided(self.result);
        }
        if let Some(mut denied) = self.result.take_if(|r| r.is_block()) {
            // The deny stands, and the user learns which guards did not get to check the call.
            let unfinished: Vec<String> = self
                .failures
                .iter()
                .filter(|f| f.mandatory)
                .map(ToString::to_string)
                .collect();
            if !unfinished.is_empty() {
                let note = format!(
                    "capt-hook: the mandatory {} did not check this call ({}); the deny stands. \
                     {SEE_LOGS}",
                    if unfinished.len() == 1 {
                        "hook"
                    } else {
                        "hooks"
                    },
                    unfinished.join("; ")
                );
                denied.system_message = Some(match denied.system_message.take() {
                    Some(m) => format!("{m}\n{note}"),
                    None => note,
                });
            }
            return Verdict::Decided(Some(denied));
        }
        if let Some(f) = self.failures.iter().find(|f| f.mandatory) {
            let mut r = HookResult::block(format!(
                "BLOCKED: the mandatory hook {} {}, so this call stays denied until that hook \
                 can check it. {SEE_LOGS}",
                f.hook, f.cause
            ));
            r.system_message = self.result.and_then(|r| r.system_message);
            return Verdict::Decided(Some(r));
        }
        // Hooks that ask (the `ask` kind) did check the call: their reason is the whole story,
        // without the failure wording or the pointer to the logs.
        let asked: Vec<String> = self
            .failures
            .iter()
            .filter_map(|f| match &f.cause {
                FailureCause::Asked(reason) => Some(format!("{reason} (hook {})", f.hook)),
                _ => None,
            })
            .collect();
        if asked.len() == self.failures.len() {
            return Verdict::Unchecked {
                reason: format!(
                    "capt-hook leaves this call to you: {}. Its other hooks' approval does not apply.",
                    asked.join("; ")
                ),
                partial: self.result,
            };
        }
        let what: Vec<String> = self.failures.iter().map(ToString::to_string).collect();
        Verdict::Unchecked {
            reason: format!(
                "capt-hook could not check this call: {}. Its other hooks' approval does not \
                 apply; decide yourself. {SEE_LOGS}",
                what.join("; ")
            ),
            partial: self.result,
        }
    }
}

/// A registry bound to a project, ready to evaluate events.
pub struct Dispatcher {
    registry: Arc<Registry>,
    gitignore: Option<Gitignore>,
    planning_agents: Vec<String>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dispatcher({} hooks)", self.registry.hooks().len())
    }
}

/// True when the hook skips this event because a planning agent sent it.
pub fn planning_skip(hook: &Hook, evt: &Event) -> bool {
    planning_skip_with(hook, evt, &capt_hook_core::env::planning_agents())
}

fn planning_skip_with(hook: &Hook, evt: &Event, agents: &[String]) -> bool {
    hook.skip_planning_agents
        && matches!(
            evt.kind(),
            EventKind::SubagentStart | EventKind::SubagentStop
        )
        && evt
            .agent_type()
            .is_some_and(|t| agents.iter().any(|a| a == t))
}

/// Reserves one of a capped hook's fires before it runs; `Err` when none is left. Uncapped
/// hooks need no reservation.
fn reserve(hook: &Hook, evt: &Event) -> Result<Option<Reservation>, ()> {
    let Some(cap) = hook.max_fires else {
        return Ok(None);
    };
    FireCounter::new(evt.store(), &hook.name, evt.agent_id())
        .reserve(cap)
        .map(Some)
        .ok_or(())
}

/// Keeps the reserved fire when the hook delivered a result, gives it back otherwise.
fn settle(reservation: Option<Reservation>, result: &Ran) {
    if let Some(r) = reservation
        && matches!(result, Ok(Some(_)))
    {
        r.commit();
    }
}

/// A hook's run: its result, or why it has none.
type Ran = Result<Option<HookResult>, FailureCause>;

/// Runs a matched hook's body, keeping a handler's error or panic as a [`FailureCause`] (the
/// process never goes down with it).
fn run_body(hook: &Hook, evt: &Event) -> Ran {
    match &hook.body {
        Body::Handler(h) if hook.max_fires != Some(0) => call(&hook.name, &h.func, evt),
        Body::Ask { reason } if hook.max_fires != Some(0) => {
            Err(FailureCause::Asked(ask_reason(reason, evt)))
        }
        _ => Ok(hook.execute(evt)),
    }
}

/// An ask's reason, followed by why the line's interpreter code could not be read when it could
/// not (the user then sees which call it was).
fn ask_reason(reason: &str, evt: &Event) -> String {
    match evt
        .parsed_command_line()
        .and_then(|cl| cl.unread_code.as_deref())
    {
        Some(why) => format!("{} ({why})", reason.trim_end_matches('.')),
        None => reason.to_owned(),
    }
}

/// One hook's state between the matching pass and the fold. Kept small, one per registered
/// hook per event: why a hook was skipped is only kept for `explain`, and a result (large, and
/// rare: most hooks do not match) is boxed.
enum Slot {
    /// Not run, and why (for `explain`).
    Skipped(Option<Box<Trace>>),
    /// Ran on this thread.
    Ready(Box<Ran>),
    /// Running on the pool.
    Pending(Receiver<Ran>),
}

impl Dispatcher {
    /// Binds `registry` to the project at `root` (for `.gitignore` opt-outs).
    pub fn new(registry: Arc<Registry>, root: Option<&Path>) -> Dispatcher {
        Dispatcher {
            registry,
            gitignore: root.map(Gitignore::load),
            planning_agents: capt_hook_core::env::planning_agents(),
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    fn opt_out(
        &self,
        hook: &Hook,
        evt: &Event,
        ignored: bool,
        opts: DispatchOptions,
    ) -> Option<Trace> {
        if !hook.events.contains(evt.kind()) {
            return Some(Trace::NotSubscribed);
        }
        if hook.is_async != opts.run_async {
            return Some(Trace::OtherMode);
        }
        if planning_skip_with(hook, evt, &self.planning_agents) {
            return Some(Trace::PlanningAgent);
        }
        // Claude Code marks the continuation a stop hook caused; blocking it again with the
        // same verdict is how agents loop, so only kinds that limit themselves (or hooks that
        // opted in) see it.
        if !hook.repeat
            && matches!(evt.kind(), EventKind::Stop | EventKind::SubagentStop)
            && evt.stop_hook_active()
        {
            return Some(Trace::Continuation);
        }
        if hook.respect_gitignore && ignored {
            return Some(Trace::Gitignored);
        }
        None
    }

    /// Evaluates every hook and returns the folded verdict. On a guarded event a failed hook
    /// turns an approval into no verdict (Claude Code's own permission flow decides) and a
    /// failed mandatory hook into a deny; [`Dispatcher::outcome`] says what failed.
    pub fn dispatch(&self, evt: &Arc<Event>, opts: DispatchOptions) -> Option<HookResult> {
        settled(self.outcome(evt, opts).verdict(evt.kind()))
    }

    /// Evaluates every hook and returns what they said and which of them failed.
    pub fn outcome(&self, evt: &Arc<Event>, opts: DispatchOptions) -> Outcome {
        let mut outcome = self.run(evt, opts, false).0;
        if !opts.run_async {
            outcome.result = with_state_failure(outcome.result);
            outcome.result = with_unreadable_line(evt, outcome.result);
        }
        outcome
    }

    /// Evaluates every hook and returns the verdict (as [`Dispatcher::dispatch`]) plus one
    /// trace per registered hook.
    pub fn explain(
        &self,
        evt: &Arc<Event>,
        opts: DispatchOptions,
    ) -> (Option<HookResult>, Vec<Trace>) {
        let (outcome, traces) = self.run(evt, opts, true);
        (settled(outcome.verdict(evt.kind())), traces)
    }

    /// `explain` also keeps one trace per hook; dispatch skips that work.
    fn run(&self, evt: &Arc<Event>, opts: DispatchOptions, explain: bool) -> (Outcome, Vec<Trace>) {
        let hooks = self.registry.hooks();
        let mut slots: Vec<Slot> = Vec::with_capacity(hooks.len());
        // Pool jobs by hook name: registrations that share a name share one state key (one
        // fire counter, one state directory), so they run in registration order within their
        // group while the groups run side by side.
        let mut later: Vec<(&str, Vec<Job>)> = Vec::new();
        let mut blocked = false;
        // A branch, not `bool::then`: a Trace is as large as a HookResult, and moving one into
        // a closure for each hook that does not match was a copy per hook per event.
        let skip = |t: Trace| Slot::Skipped(if explain { Some(Box::new(t)) } else { None });
        // Whether the event's file is gitignored, asked once for the hooks that respect it.
        let ignored = hooks.iter().any(|h| h.respect_gitignore)
            && matches!((&self.gitignore, evt.file()), (Some(gi), Some(f)) if gi.is_ignored(f));
        for hook in hooks {
            if let Some(t) = self.opt_out(hook, evt, ignored, opts) {
                slots.push(skip(t));
                continue;
            }
            // Custom conditions are user code too: one that panics fails its hook (fail closed on
            // a guarded call) instead of taking the dispatch down or skipping the hook silently.
            let matched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                matching_event(hook, evt)
            }));
            let evt = match matched {
                Ok(Ok(Some(call))) => call,
                Ok(Ok(None)) => Arc::clone(evt),
                Ok(Err(miss)) => {
                    slots.push(skip(Trace::NoMatch(miss)));
                    continue;
                }
                Err(panic) => {
                    let what = format!("{} (in a condition)", panic_text(panic.as_ref()));
                    tracing::error!(hook = %hook.name, panic = %what, "hook condition panicked");
                    slots.push(Slot::Ready(Box::new(Err(FailureCause::Panic(what)))));
                    continue;
                }
            };
            let evt = &evt;
            if blocked && !hook.declarative && !hook.advisory_on_deny {
                slots.push(skip(Trace::Doomed));
                continue;
            }
            let Ok(reservation) = reserve(hook, evt) else {
                slots.push(skip(Trace::Capped));
                continue;
            };
            let slot = match &hook.body {
                Body::Handler(h) if !h.inline => {
                    let (job, rx) = job(
                        Arc::clone(hook),
                        Arc::clone(evt),
                        reservation,
                        opts.deadline,
                    );
                    // Mandatory hooks take the pool's threads first: a call must not pass
                    // unchecked because other handlers held them up. One that shares its name
                    // with other registrations waits its turn in their group instead.
                    let shared = hooks
                        .iter()
                        .filter(|h| h.name == hook.name)
                        .nth(1)
                        .is_some();
                    if hook.mandatory && !shared {
                        submit(job, &hook.name);
                    } else {
                        match later.iter_mut().find(|(name, _)| *name == hook.name) {
                            Some((_, jobs)) => jobs.push(job),
                            None => later.push((&hook.name, vec![job])),
                        }
                    }
                    Slot::Pending(rx)
                }
                _ => {
                    let result = run_body(hook, evt);
                    settle(reservation, &result);
                    Slot::Ready(Box::new(result))
                }
            };
            if let Slot::Ready(ran) = &slot
                && let Ok(Some(r)) = ran.as_ref()
            {
                blocked |= r.is_block();
            }
            slots.push(slot);
        }

        for (name, jobs) in later {
            let job: Job = Box::new(move || {
                for job in jobs {
                    job();
                }
            });
            submit(job, name);
        }

        let mut inputs = Vec::with_capacity(hooks.len());
        let mut failures = Vec::new();
        let mut fired = Vec::new();
        let mut traces = Vec::with_capacity(if explain { hooks.len() } else { 0 });
        for (hook, slot) in hooks.iter().zip(slots) {
            let ran = match slot {
                Slot::Skipped(t) => {
                    // Not `extend(t.map(..))`: that moved a whole Option<Trace> for each
                    // skipped hook, None included.
                    if let Some(t) = t {
                        traces.push(*t);
                    }
                    continue;
                }
                Slot::Ready(r) => *r,
                Slot::Pending(rx) => wait(&rx, opts.deadline).unwrap_or_else(|cause| {
                    tracing::warn!(hook = %hook.name, %cause, "handler abandoned");
                    Err(cause)
                }),
            };
            let result = match ran {
                Ok(r) => r,
                Err(cause) => {
                    if explain {
                        traces.push(match &cause {
                            FailureCause::Deadline => Trace::Abandoned,
                            other => Trace::Failed(other.clone()),
                        });
                    }
                    failures.push(HookFailure {
                        hook: hook.name.clone(),
                        mandatory: hook.mandatory,
                        cause,
                    });
                    continue;
                }
            };
            let result = result.map(|r| if hook.approve { r.approving() } else { r });
            if explain {
                traces.push(Trace::Matched(result.clone()));
            }
            if let Some(r) = &result {
                fired.push(Fired {
                    hook: hook.name.clone(),
                    source: hook.source.as_ref().map(ToString::to_string),
                    result: r.clone(),
                });
            }
            inputs.push(FoldInput {
                result,
                declarative: hook.declarative,
                advisory_on_deny: hook.advisory_on_deny,
            });
        }
        (
            Outcome {
                result: fold(inputs),
                failures,
                fired,
            },
            traces,
        )
    }
}

/// Says so when the Bash line of a guarded call that nothing denied could not be read to the
/// end: token rules then matched its raw words (erring towards the guard) and
/// `read_only_command` was false, which the user should know rather than guess.
fn with_unreadable_line(evt: &Event, result: Option<HookResult>) -> Option<HookResult> {
    // A deny is already visible, with its own reason (case T08 pins that reply).
    if !evt.kind().is_guard() || result.as_ref().is_some_and(HookResult::is_block) {
        return result;
    }
    // Only a line some hook read can have fallen back; an unread one costs no parse here.
    let Some(why) = evt.parsed_command_line().and_then(|cl| cl.unreadable) else {
        return result;
    };
    let notice = format!(
        "capt-hook: this command line could not be read to the end ({why}); its rules \
             matched the line's raw words instead"
    );
    Some(add_notice(result, notice))
}

/// `result` with `notice` added to what the user sees.
fn add_notice(result: Option<HookResult>, notice: String) -> HookResult {
    match result {
        Some(mut r) => {
            r.system_message = Some(match r.system_message.take() {
                Some(own) if !own.is_empty() => format!("{own}\n\n{notice}"),
                _ => notice,
            });
            r
        }
        None => HookResult::notice_only().with_system_message(notice),
    }
}

/// Adds the first not-yet-reported failure to write session state to the verdict, as a notice
/// the user sees: fire limits and once-per-turn gates cannot hold without their files, and the
/// user must not find that out from a nudge that silently stopped.
fn with_state_failure(result: Option<HookResult>) -> Option<HookResult> {
    let Some(failure) = capt_hook_state::take_write_failure() else {
        return result;
    };
    let notice = format!(
        "capt-hook: session state cannot be written under {} ({}); fire limits and \
         once-per-turn gates may not hold until it can",
        failure.dir.display(),
        failure.reason
    );
    Some(add_notice(result, notice))
}

/// The [`HookResult`] form of a verdict: an unchecked call carries no approval, only the
/// context and notices of the hooks that answered.
fn settled(verdict: Verdict) -> Option<HookResult> {
    let partial = match verdict {
        Verdict::Decided(r) => return r,
        Verdict::Unchecked { partial, .. } => partial?,
    };
    let context = match partial.action {
        Action::Warn | Action::Allow => partial.message,
        Action::Rewrite => partial.note,
        Action::Block => return Some(partial),
    };
    let r = match context.filter(|c| !c.is_empty()) {
        Some(c) => HookResult::warn(c),
        None => HookResult::notice_only(),
    };
    match partial.system_message {
        Some(n) => Some(r.with_system_message(n)),
        None if r.is_notice_only() => None,
        None => Some(r),
    }
}

/// Whether a hook's conditions hold: `Ok(None)` for the event itself, `Ok(Some(call))` for a
/// batch of tool calls (PostToolBatch) whose `call` is the first to satisfy them, the miss
/// otherwise.
pub(crate) fn matching_event(hook: &Hook, evt: &Event) -> Result<Option<Arc<Event>>, Miss> {
    let calls = evt.batch_calls();
    if calls.is_empty() {
        return match first_miss(evt, &hook.only_if, &hook.skip_if) {
            None => Ok(None),
            Some(miss) => Err(miss),
        };
    }
    let mut first = None;
    for call in calls {
        match first_miss(call, &hook.only_if, &hook.skip_if) {
            None => return Ok(Some(Arc::clone(call))),
            Some(miss) => {
                first.get_or_insert(miss);
            }
        }
    }
    // A non-empty batch where no call matched always recorded a miss.
    first.map_or(Ok(None), Err)
}

/// Waits for a handler's result until the deadline; `Err` says why none came: the deadline
/// passed, or the job was dropped unrun (the queue was full, or it reached a thread too late).
fn wait(rx: &Receiver<Ran>, deadline: Option<Instant>) -> Result<Ran, FailureCause> {
    match deadline {
        None => rx.recv().map_err(|_| FailureCause::NotRun),
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now());
            rx.recv_timeout(left).map_err(|e| match e {
                RecvTimeoutError::Timeout => FailureCause::Deadline,
                RecvTimeoutError::Disconnected => FailureCause::NotRun,
            })
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// The process-wide handler pool, started on first use so declarative-only runs spawn nothing.
fn pool() -> &'static Sender<Job> {
    static POOL: OnceLock<Sender<Job>> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = crossbeam_channel::bounded::<Job>(POOL_QUEUE);
        for i in 0..POOL_THREADS {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("capt-hook-handler-{i}"))
                .spawn(move || {
                    // Every thread takes from the one queue; it ends when the sender is gone.
                    for job in rx {
                        job();
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "could not start a handler thread");
            }
        }
        tx
    })
}

/// A handler's run as a pool job, and where its result arrives. A job that reaches a thread
/// after `deadline` (it queued behind slow handlers) is skipped: nobody waits for it, and its
/// reservation is given back.
fn job(
    hook: Arc<Hook>,
    evt: Arc<Event>,
    reservation: Option<Reservation>,
    deadline: Option<Instant>,
) -> (Job, Receiver<Ran>) {
    // One result, sent once: room for it, so the handler never waits on a dispatcher that left.
    let (tx, rx) = crossbeam_channel::bounded(1);
    let job: Job = Box::new(move || {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return;
        }
        let result = with_deadline(deadline, &hook, || run_body(&hook, &evt));
        settle(reservation, &result);
        // The dispatcher may have given up on us; that is fine.
        let _ = tx.send(result);
    });
    (job, rx)
}

thread_local! {
    /// The deadline of the event whose handler runs on this thread.
    static DEADLINE: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
    /// The hook whose handler runs on this thread.
    static HOOK: std::cell::RefCell<Option<Arc<Hook>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` as `hook`'s handler, with `deadline` as its deadline.
fn with_deadline<T>(deadline: Option<Instant>, hook: &Arc<Hook>, f: impl FnOnce() -> T) -> T {
    let before = DEADLINE.with(|d| d.replace(deadline));
    let outer = HOOK.with(|h| h.replace(Some(Arc::clone(hook))));
    let out = f();
    HOOK.with(|h| *h.borrow_mut() = outer);
    DEADLINE.with(|d| d.set(before));
    out
}

/// The deadline of the event a pool handler is answering (`None`: none, or not on the pool):
/// a handler that waits on something slow (a model) stops in time instead of being abandoned.
pub fn current_deadline() -> Option<Instant> {
    DEADLINE.with(std::cell::Cell::get)
}

/// The name of the hook whose handler runs on this pool thread, so what it records (a judge
/// call) carries the name the journal and `capt-hook list` use.
pub fn current_hook_name() -> Option<String> {
    HOOK.with(|h| h.borrow().as_ref().map(|h| h.name.clone()))
}

/// Queues a job. A job that cannot be queued is dropped with its sender, which the dispatcher
/// sees as a hook that never ran (a failure, not a silent pass).
fn submit(job: Job, name: &str) {
    match pool().try_send(job) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => tracing::warn!(
            hook = %name,
            "every handler thread is busy and {POOL_QUEUE} jobs wait; handler abandoned"
        ),
        Err(TrySendError::Disconnected(_)) => {
            tracing::error!(hook = %name, "handler pool is gone; handler abandoned");
        }
    }
}

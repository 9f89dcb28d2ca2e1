//! The chain: an immutable, ordered list of hooks for one event, and the rules that combine their
//! answers into one decision (see `decision.rs` for the rules, pinned by the tests below).
//!
//! Invariant: a chain is sorted once, when it is built, by (priority, registration order). Ties keep
//! registration order: of two `critical` hooks, the one registered first runs first. Nothing reorders a
//! chain after that; a configuration change builds a new chain. Pinned by
//! `tests/chain.rs::ties_keep_registration_order`.
//!
//! Deliberately absent: parallel hooks. Peers run matching hooks concurrently and then cannot say
//! which rewrite or which deny won; ours run in chain order, the price of a decision you can explain.

use crate::hooks::builtin::{self, BuiltinSpec};
use crate::hooks::command::{self, CommandSpec};
pub use crate::hooks::context::{HostHooks, RunContext, StandIn};
use crate::hooks::priority::{FailureMode, Priority};
use crate::model::decision::{Answer, Asked, Decision, Denial, HookAnswer, HookFailure, HookOutcome, OutcomeKind};
use crate::model::event::Event;
use globset::GlobSet;
use regex::Regex;
use std::cell::Cell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Instant;

crate::base::error::domain_error! {
    /// A tool pattern or a path glob of a matcher that does not compile.
    MatcherError
}

/// A hook that runs in-process, in Rust: the gatekeeper, the ledger.
pub trait NativeHook: Send + Sync + fmt::Debug {
    fn call(&self, event: &Event) -> Result<HookAnswer, HookFailure>;

    /// Whether the hook reads this event's subject (tool input, result, ...). A binding may skip
    /// converting a large subject when no hook that applies will read it.
    fn needs_subject(&self, _event: &Event) -> bool {
        true
    }
}

/// How a hook runs. Only `Native` hooks run on the synchronous path.
#[derive(Debug, Clone)]
pub enum HookImpl {
    Native(Arc<dyn NativeHook>),
    /// A process: program and arguments, run by `command.rs`.
    Command(CommandSpec),
    /// A hook built into the engine (`builtin.rs`), with the command it may take.
    Builtin(BuiltinSpec),
    /// A function registered by the extension host, by id.
    Host(String),
}

impl HookImpl {
    pub fn kind(&self) -> &'static str {
        match self {
            HookImpl::Native(_) => "native",
            HookImpl::Command(_) => "command",
            HookImpl::Builtin(_) => "builtin",
            HookImpl::Host(_) => "host",
        }
    }
}

/// Which events of the chain's kind a hook applies to. Empty matchers match everything.
#[derive(Debug, Clone, Default)]
pub struct Matcher {
    /// Anchored: `write_to_file|apply_diff` matches exactly those two tools, not `rewrite_to_file_x`.
    pub tool: Option<Regex>,
    /// Matches when any of the event's paths matches.
    pub paths: Option<GlobSet>,
    /// The sources, from which a chain builds one combined index of all its hooks' patterns.
    tool_source: Option<String>,
    path_sources: Vec<globset::Glob>,
}

impl Matcher {
    /// Builds a matcher; the tool pattern is anchored at both ends.
    pub fn new(tool: Option<&str>, paths: &[String]) -> Result<Matcher, MatcherError> {
        let tool_source = tool.map(|t| format!("^(?:{t})$"));
        let tool = match (&tool_source, tool) {
            (Some(anchored), Some(t)) => Some(Regex::new(anchored).map_err(|e| format!("invalid tool pattern `{t}`: {e}"))?),
            _ => None,
        };
        let path_sources = paths
            .iter()
            .map(|p| globset::Glob::new(p).map_err(|e| format!("invalid path glob `{p}`: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let paths = if path_sources.is_empty() {
            None
        } else {
            let mut set = globset::GlobSetBuilder::new();
            for g in &path_sources {
                set.add(g.clone());
            }
            Some(set.build().map_err(|e| e.to_string())?)
        };
        Ok(Matcher { tool, paths, tool_source, path_sources })
    }

    pub fn matches(&self, event: &Event) -> bool {
        let candidates = candidates(event);
        self.matches_with(event, &candidates)
    }

    fn matches_with(&self, event: &Event, candidates: &[globset::Candidate<'_>]) -> bool {
        let tool_ok = match (&self.tool, &event.tool) {
            (None, _) => true,
            (Some(re), Some(tool)) => re.is_match(tool),
            (Some(_), None) => false,
        };
        tool_ok
            && match &self.paths {
                None => true,
                Some(set) => candidates.iter().any(|c| set.is_match_candidate(c)),
            }
    }
}

/// The paths a matcher sees: those the caller named, else the writes the engine resolved from the
/// tool's input (another agent's hook gives only the input: without these, a `paths:` rule of
/// hooks.yaml would never match Claude Code's `Write` or VS Code's `create_file`).
fn candidates(event: &Event) -> Vec<globset::Candidate<'_>> {
    if !event.paths.is_empty() {
        return event.paths.iter().map(globset::Candidate::new).collect();
    }
    event.writes.iter().flat_map(|w| w.iter()).filter_map(|w| w.canonical.as_ref().ok()).map(globset::Candidate::new).collect()
}

/// Every hook's patterns of one chain in two combined sets, so that matching an event costs one
/// regex-set run over the tool name and one glob-set run per path, however many hooks the chain has.
#[derive(Debug, Clone, Default)]
struct MatchIndex {
    tools: Option<regex::RegexSet>,
    /// For each pattern of `tools`, the hook (position in the chain) it belongs to.
    tool_owner: Vec<usize>,
    globs: Option<GlobSet>,
    glob_owner: Vec<usize>,
}

impl MatchIndex {
    fn build(hooks: &[ChainHook]) -> MatchIndex {
        let mut index = MatchIndex::default();
        let mut tools = Vec::new();
        let mut globs = globset::GlobSetBuilder::new();
        for (i, h) in hooks.iter().enumerate() {
            if let Some(t) = &h.matcher.tool_source {
                tools.push(t.clone());
                index.tool_owner.push(i);
            }
            for g in &h.matcher.path_sources {
                globs.add(g.clone());
                index.glob_owner.push(i);
            }
        }
        // Each pattern compiled on its own already (Matcher::new), so the combined sets compile too;
        // if one ever did not, the hooks fall back to their own matchers (`None` here).
        index.tools = (!tools.is_empty()).then(|| regex::RegexSet::new(&tools).ok()).flatten();
        index.globs = (!index.glob_owner.is_empty()).then(|| globs.build().ok()).flatten();
        index
    }
}

#[derive(Debug, Clone)]
pub struct ChainHook {
    /// Shared, so that recording an outcome does not copy the name.
    pub name: Arc<str>,
    pub priority: Priority,
    pub failure: FailureMode,
    pub matcher: Matcher,
    pub imp: HookImpl,
    /// Position in registration order; the tie-breaker within a priority.
    pub registration: usize,
    /// Deliver the hook's output to the agent (see `Evaluation::piped`).
    pub pipe_output: bool,
}

/// Text a `pipe_output` hook produced, for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piped {
    pub hook: String,
    pub text: String,
}

/// The result of running a chain on one event.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub decision: Decision,
    /// The rewritten subject when some hook modified it (and nothing denied).
    pub modified: Option<serde_json::Value>,
    pub additional_context: Vec<String>,
    /// Every hook that ran, in order, with its outcome and duration.
    pub outcomes: Vec<HookOutcome>,
    /// Output of `pipe_output` hooks, in chain order, for the agent.
    pub piped: Vec<Piped>,
    /// Values hooks reported (a builtin's `pr_url`, ...).
    pub context: std::collections::BTreeMap<String, String>,
    /// True when this evaluation was requested from inside a running hook: the chain did not run again.
    pub reentered: bool,
    /// How long the answer waited, after the hooks, for its record to be durable (nanoseconds; 0 when
    /// nothing waited). Shown apart from the hooks' own durations, which never include it.
    pub durable_wait_ns: u64,
}

impl Evaluation {
    /// The answer when the chain could not be run to its end (the engine itself failed while
    /// judging): a deny, because a broken gate never allows.
    pub fn failed(reason: impl Into<String>) -> Evaluation {
        Evaluation {
            decision: Decision::Deny(Denial::new(reason.into())),
            modified: None,
            additional_context: Vec::new(),
            outcomes: Vec::new(),
            piped: Vec::new(),
            context: std::collections::BTreeMap::new(),
            reentered: false,
            durable_wait_ns: 0,
        }
    }
}

/// The synchronous path was asked for, but a matching hook needs the asynchronous one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedsAsync {
    pub hook: String,
    pub kind: &'static str,
}

impl fmt::Display for NeedsAsync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hook `{}` is a {} hook and cannot run on the synchronous path", self.hook, self.kind)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Chain {
    hooks: Vec<ChainHook>,
    index: MatchIndex,
}

thread_local! {
    // Set while this thread runs a chain: an evaluation requested by a hook (through the engine) does
    // not re-enter the hooks for the operation that is already being judged.
    static IN_CHAIN: Cell<bool> = const { Cell::new(false) };
}

impl Chain {
    /// Sorts once, by (priority, registration order), into the chain's immutable order.
    pub fn new(mut hooks: Vec<ChainHook>) -> Chain {
        hooks.sort_by_key(|h| (h.priority, h.registration));
        let index = MatchIndex::build(&hooks);
        Chain { hooks, index }
    }

    /// Every hook of the chain, in chain order, whether it applies to an event or not.
    pub fn hooks(&self) -> &[ChainHook] {
        &self.hooks
    }

    /// The hooks that apply to this event, in chain order.
    ///
    /// Chosen once, before the first hook runs: matchers see the event's tool and paths, which a
    /// rewrite (of the subject) cannot change, so choosing up front is the same as choosing as we go.
    pub fn matching<'a>(&'a self, event: &Event) -> Vec<&'a ChainHook> {
        let candidates = candidates(event);
        let index = &self.index;
        if (!index.tool_owner.is_empty() && index.tools.is_none()) || (!index.glob_owner.is_empty() && index.globs.is_none()) {
            return self.hooks.iter().filter(|h| h.matcher.matches_with(event, &candidates)).collect();
        }
        let mut tool_hit = vec![false; self.hooks.len()];
        if let (Some(tools), Some(tool)) = (&index.tools, &event.tool) {
            for pattern in tools.matches(tool).iter() {
                tool_hit[index.tool_owner[pattern]] = true;
            }
        }
        let mut path_hit = vec![false; self.hooks.len()];
        if let Some(globs) = &index.globs {
            let mut found = Vec::new();
            for c in &candidates {
                globs.matches_candidate_into(c, &mut found);
                for &g in &found {
                    path_hit[index.glob_owner[g]] = true;
                }
            }
        }
        self.hooks
            .iter()
            .enumerate()
            .filter(|(i, h)| (h.matcher.tool.is_none() || tool_hit[*i]) && (h.matcher.paths.is_none() || path_hit[*i]))
            .map(|(_, h)| h)
            .collect()
    }

    /// Runs the chain in this thread. Fails only if a matching hook is not native.
    pub fn run_sync(&self, mut event: Event) -> Result<Evaluation, NeedsAsync> {
        self.judge_sync(&mut event)
    }

    /// `run_sync` on a borrowed event, for a caller that keeps it (the engine records the input):
    /// when a hook that applies is not native, nothing runs and the event is as it was. After the
    /// chain the event's subject is the input as given; a rewrite is in `Evaluation::modified`.
    pub fn judge_sync(&self, event: &mut Event) -> Result<Evaluation, NeedsAsync> {
        if event.depth > 0 {
            return Ok(Combiner::new(event).reentered());
        }
        let hooks = self.matching(event);
        check_native(&hooks)?;
        Ok(run_native(hooks, event))
    }

    /// `run_sync` for a caller that has not loaded the event's subject yet: `subject` is called only
    /// if a hook that applies reads it (a binding saves converting a large tool input that way).
    pub fn run_sync_with<E>(
        &self,
        mut event: Event,
        subject: impl FnOnce() -> Result<serde_json::Value, E>,
    ) -> Result<Evaluation, SyncError<E>> {
        if event.depth > 0 {
            return Ok(Combiner::new(&mut event).reentered());
        }
        let hooks = self.matching(&event);
        check_native(&hooks).map_err(SyncError::NeedsAsync)?;
        let needs_subject = hooks.iter().any(|h| matches!(&h.imp, HookImpl::Native(n) if n.needs_subject(&event)));
        // Only when the caller has not given it: `subject` loads what is missing, never replaces it.
        if needs_subject && event.subject.is_null() {
            event.subject = subject().map_err(SyncError::Subject)?;
        }
        Ok(run_native(hooks, &mut event))
    }
}

/// Why the synchronous path could not answer.
#[derive(Debug)]
pub enum SyncError<E> {
    NeedsAsync(NeedsAsync),
    /// The caller could not provide the subject.
    Subject(E),
}

fn run_native(hooks: Vec<&ChainHook>, event: &mut Event) -> Evaluation {
    {
        if event.depth > 0 || IN_CHAIN.with(Cell::get) {
            return Combiner::new(event).reentered();
        }
        IN_CHAIN.with(|c| c.set(true));
        // Reset the guard however this returns, including by a panic that escapes a hook's catch.
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                IN_CHAIN.with(|c| c.set(false));
            }
        }
        let _reset = Reset;
        let mut combiner = Combiner::new(event);
        combiner.outcomes.reserve_exact(hooks.len());
        for hook in hooks {
            let HookImpl::Native(native) = &hook.imp else { unreachable!("checked by check_native") };
            let started = Instant::now();
            let result = catch_unwind(AssertUnwindSafe(|| native.call(combiner.event)))
                .unwrap_or_else(|panic| Err(HookFailure::Crashed(panic_message(panic))));
            if combiner.apply(hook, result, started.elapsed().as_nanos() as u64).is_break() {
                break;
            }
        }
        combiner.finish()
    }
}

impl Chain {
    /// Runs the chain with every kind of hook: native in place, commands and builtins as processes,
    /// host hooks through the embedder. Hooks run one after another, in chain order, because each may
    /// see the previous one's rewrite and a deny must stop the ones after it.
    pub async fn run(&self, mut event: Event, ctx: &RunContext) -> Evaluation {
        self.judge(&mut event, ctx).await
    }

    /// `run` on a borrowed event (see [`Chain::judge_sync`]).
    pub async fn judge(&self, event: &mut Event, ctx: &RunContext) -> Evaluation {
        if event.depth > 0 {
            return Combiner::new(event).reentered();
        }
        let hooks = self.matching(event);
        let mut combiner = Combiner::new(event);
        combiner.outcomes.reserve_exact(hooks.len());
        for hook in hooks {
            let started = Instant::now();
            let stand_in = match (&hook.imp, &ctx.stand_in) {
                (HookImpl::Native(_), _) | (_, None) => None,
                (imp, Some(stand_in)) => stand_in.answer(&hook.name, imp.kind()),
            };
            let (result, output) = if let Some(answer) = stand_in {
                (answer, None)
            } else {
                match &hook.imp {
                    HookImpl::Native(native) => (
                        catch_unwind(AssertUnwindSafe(|| native.call(combiner.event)))
                            .unwrap_or_else(|panic| Err(HookFailure::Crashed(panic_message(panic)))),
                        None,
                    ),
                    HookImpl::Command(spec) => {
                        let run = command::run(spec, combiner.event, &ctx.workspace, ctx.output_cap).await;
                        (run.result, run.output)
                    }
                    HookImpl::Builtin(spec) => {
                        let run = builtin::run(spec, combiner.event, ctx).await;
                        for (k, v) in &run.context {
                            combiner.context.insert(k.clone(), v.clone());
                        }
                        (run.result, run.output)
                    }
                    HookImpl::Host(id) => match &ctx.host {
                        None => (Err(HookFailure::Error(format!("host hook `{id}` is not registered"))), None),
                        Some(host) => match tokio::time::timeout(ctx.host_timeout, host.call(id, combiner.event)).await {
                            Ok(result) => (result, None),
                            Err(_) => (Err(HookFailure::Timeout { after_ms: ctx.host_timeout.as_millis() as u64 }), None),
                        },
                    },
                }
            };
            if hook.pipe_output
                && let Some(text) = output.filter(|t| !t.is_empty())
            {
                combiner.piped.push(Piped { hook: hook.name.to_string(), text });
            }
            if combiner.apply(hook, result, started.elapsed().as_nanos() as u64).is_break() {
                break;
            }
        }
        combiner.finish()
    }
}

fn check_native(hooks: &[&ChainHook]) -> Result<(), NeedsAsync> {
    match hooks.iter().find(|h| !matches!(h.imp, HookImpl::Native(_))) {
        Some(h) => Err(NeedsAsync { hook: h.name.to_string(), kind: h.imp.kind() }),
        None => Ok(()),
    }
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_owned())
}

/// Folds hook answers into a decision. Shared by the synchronous and asynchronous drivers so that the
/// rules exist once.
#[derive(Debug)]
struct Combiner<'e> {
    /// Borrowed: the caller keeps the event, and after the chain its subject is the input as the
    /// agent sent it again (the rewrite, if any, is in `Evaluation::modified`), so a caller that
    /// records the input needs no copy of it.
    event: &'e mut Event,
    /// The subject before the first `modify`, put back when the chain ends.
    original: Option<serde_json::Value>,
    modified: bool,
    asks: Vec<Asked>,
    denial: Option<Denial>,
    additional_context: Vec<String>,
    outcomes: Vec<HookOutcome>,
    piped: Vec<Piped>,
    context: std::collections::BTreeMap<String, String>,
}

impl<'e> Combiner<'e> {
    fn new(event: &'e mut Event) -> Self {
        Combiner {
            event,
            original: None,
            modified: false,
            asks: Vec::new(),
            denial: None,
            additional_context: Vec::new(),
            outcomes: Vec::new(),
            piped: Vec::new(),
            context: Default::default(),
        }
    }

    fn reentered(self) -> Evaluation {
        Evaluation { reentered: true, ..self.finish() }
    }

    /// Applies one hook's result. `Break` means the chain is decided (a deny) and must stop.
    fn apply(&mut self, hook: &ChainHook, result: Result<HookAnswer, HookFailure>, duration_ns: u64) -> std::ops::ControlFlow<()> {
        use std::ops::ControlFlow::{Break, Continue};
        let result = result.and_then(|a| match (&a.answer, self.event.kind.rewrites()) {
            (Answer::Modify(_), None) => {
                Err(HookFailure::BadAnswer(format!("`modify` on {}, which has nothing to rewrite", self.event.kind)))
            }
            _ => Ok(a),
        });
        let answer = match result {
            Ok(answer) => answer,
            Err(failure) => {
                let closed = hook.failure == FailureMode::Closed;
                let kind = if closed { OutcomeKind::FailedClosed(failure.clone()) } else { OutcomeKind::FailedOpen(failure.clone()) };
                self.outcomes.push(HookOutcome { hook: hook.name.clone(), kind, duration_ns });
                if closed {
                    self.denial = Some(Denial {
                        reason: format!("hook `{}` {failure}; it fails closed, so the action is denied", hook.name),
                        remediation: None,
                        suggested_tool: None,
                    });
                    return Break(());
                }
                return Continue(());
            }
        };
        if let Some(context) = answer.additional_context {
            self.additional_context.push(context);
        }
        let (kind, flow) = match answer.answer {
            Answer::Allow => (OutcomeKind::Allowed, Continue(())),
            Answer::Ask { reason } => {
                self.asks.push(Asked { hook: hook.name.clone(), reason });
                (OutcomeKind::Asked, Continue(()))
            }
            Answer::Modify(subject) => {
                let before = std::mem::replace(&mut self.event.subject, subject);
                self.original.get_or_insert(before);
                self.modified = true;
                (OutcomeKind::Modified, Continue(()))
            }
            Answer::Deny(denial) => {
                self.denial = Some(denial);
                (OutcomeKind::Denied, Break(()))
            }
        };
        self.outcomes.push(HookOutcome { hook: hook.name.clone(), kind, duration_ns });
        flow
    }

    fn finish(mut self) -> Evaluation {
        let decision = match (self.denial, self.asks.is_empty()) {
            (Some(denial), _) => Decision::Deny(denial),
            (None, false) => Decision::Ask { asks: self.asks },
            (None, true) => Decision::Allow,
        };
        let rewritten = self.original.take().map(|original| std::mem::replace(&mut self.event.subject, original));
        let modified = rewritten.filter(|_| self.modified && !matches!(decision, Decision::Deny(_)));
        Evaluation {
            decision,
            modified,
            additional_context: self.additional_context,
            outcomes: self.outcomes,
            piped: self.piped,
            context: self.context,
            reentered: false,
            durable_wait_ns: 0,
        }
    }
}

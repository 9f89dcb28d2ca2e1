//! Judging an event: the synchronous entry (`evaluate`, positional: what the binding's benchmark
//! measures), the asynchronous one (`evaluateAsync`, every kind of hook, the extension's), the
//! output hooks piped for a session (`drainPiped`), and the object shapes of an event and its
//! evaluation.
//!
//! `evaluateAsync` judges a chain of native hooks on the calling thread and settles from the ledger
//! thread that synced its record (the core's `evaluate_then`), or comes back already resolved; other
//! chains go to the core's `evaluate_async`. A promise whose judging task panics settles as a deny
//! (`DenyOnDrop`), never hangs.

use crate::Engine;
use crate::errors::{Code, Result, as_error, error, from_napi, invalid};
use chokepoint_core as core;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::sync::Arc;

/// One event as the extension hands it to the chain.
#[napi(object, js_name = "Event")]
pub struct JsEvent {
    #[napi(ts_type = "EventName")]
    pub event: String,
    pub tool: Option<String>,
    /// The subject hooks judge: tool input on `PreToolUse`, tool result on `PostToolUse`, ...
    pub input: Option<serde_json::Value>,
    /// Workspace-relative paths the event touches (for path matchers).
    pub paths: Option<Vec<String>>,
    pub task_type: Option<String>,
    pub session_id: Option<String>,
    /// The agent acting (`claude-code`, ...), recorded in the trace with the session.
    pub agent_id: Option<String>,
    pub task_id: Option<String>,
    pub plan_id: Option<String>,
    /// The turn within the task (0-based).
    pub turn: Option<u32>,
    /// The model that produced the action, recorded in the trace.
    pub model: Option<String>,
    /// Set on the events host hooks receive. Pass the event (or this value) back to the engine for work
    /// a hook derives from it, and that work does not re-enter the hooks.
    pub hook_depth: Option<u32>,
}

/// The ids and context of an event on the synchronous path (all optional).
#[napi(object, js_name = "EventContext")]
pub struct JsEventContext {
    pub session_id: Option<String>,
    pub agent_id: Option<String>,
    pub task_id: Option<String>,
    pub plan_id: Option<String>,
    pub turn: Option<u32>,
    pub task_type: Option<String>,
    /// The model that produced the action, recorded in the trace.
    pub model: Option<String>,
    pub hook_depth: Option<u32>,
}

#[napi(object, js_name = "EvaluateOptions")]
pub struct JsEvaluateOptions {
    /// `deciding` (default): outcomes other than a plain allow; `all`; or `none`.
    #[napi(ts_type = "OutcomesDetailName")]
    pub outcomes: Option<String>,
}

#[napi(object, js_name = "HookOutcome")]
pub struct JsHookOutcome {
    pub hook: String,
    #[napi(ts_type = "OutcomeName")]
    pub outcome: String,
    /// The hook's own time; never the wait for the record's durability (`Evaluation.durableWaitNs`).
    pub duration_ns: f64,
    /// Why the hook failed, for the two failure outcomes.
    pub error: Option<String>,
}

/// A hook's `ask`: who asked and why (the Pending's `triggered_by` is the first).
#[napi(object, js_name = "Asked")]
pub struct JsAsked {
    pub hook: String,
    pub reason: String,
}

#[napi(object, js_name = "Piped")]
pub struct JsPiped {
    pub hook: String,
    pub text: String,
}

#[napi(object, js_name = "Evaluation")]
pub struct JsEvaluation {
    #[napi(ts_type = "DecisionName")]
    pub decision: String,
    /// The denial's reason; with `ask`, the asks' reasons in one line (each is in `asks`).
    pub reason: Option<String>,
    pub remediation: Option<String>,
    pub suggested_tool: Option<String>,
    /// With `ask`: every hook that asked, in chain order.
    pub asks: Option<Vec<JsAsked>>,
    /// The rewritten subject, when a hook modified it and nothing denied: on `PreToolUse` the tool's
    /// new input, which the tool validates.
    pub modified: Option<serde_json::Value>,
    /// What `modified` rewrites on the other events that rewrite something, read by the core.
    #[napi(ts_type = "Rewrite")]
    pub rewrite: Option<crate::rewrite::JsRewrite>,
    /// Context hooks add for the model, in chain order. Absent when empty.
    pub additional_context: Option<Vec<String>>,
    /// The hooks' outcomes, as `EvaluateOptions.outcomes` asks (by default the deciding ones: every
    /// outcome but a plain allow). Absent when empty. The trace records all of them regardless.
    pub outcomes: Option<Vec<JsHookOutcome>>,
    /// Output of `pipe_output` hooks from this run (on `Error`: for the recovery prompt). Absent when empty.
    pub piped: Option<Vec<JsPiped>>,
    /// Values hooks reported, e.g. `pr_url`. Absent when empty.
    pub context: Option<std::collections::HashMap<String, String>>,
    /// Present (true) only when requested from inside a running hook: the chain did not run again.
    pub reentered: Option<bool>,
    /// How long the answer waited after the hooks for its record to be durable; absent when nothing
    /// waited. Never part of a hook's `durationNs`.
    pub durable_wait_ns: Option<f64>,
}

/// Which outcomes cross back to JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    All,
    Deciding,
    None,
}

// The names `outcomes` takes (the generated `OutcomesDetailName` lists them), read back by the same arms.
core::base::names::names!(Detail {
    Self::Deciding => "deciding",
    Self::All => "all",
    Self::None => "none",
});

impl Detail {
    pub fn from_options(options: Option<JsEvaluateOptions>) -> Result<Detail> {
        match options.and_then(|o| o.outcomes) {
            None => Ok(Detail::Deciding),
            Some(name) => Detail::parse_name("outcomes option", &name).map_err(as_error(Code::Invalid)),
        }
    }
}

pub fn event_kind(name: &str) -> Result<core::EventKind> {
    name.parse::<core::EventKind>().map_err(invalid)
}

/// Builds a core event from the positional arguments of the synchronous entry (and, through
/// `JsEvent::try_into_core`, from the object of the asynchronous one: one mapping of the ids).
fn event_from_parts(name: &str, tool: Option<String>, paths: Option<Vec<String>>, context: Option<JsEventContext>) -> Result<core::Event> {
    let mut event = core::Event::new(event_kind(name)?);
    event.tool = tool;
    event.paths = paths.unwrap_or_default();
    if let Some(c) = context {
        event.ids.session = c.session_id;
        event.ids.agent = c.agent_id;
        event.ids.task = c.task_id;
        event.ids.plan = c.plan_id;
        event.ids.turn = c.turn;
        event.ids.model = c.model;
        event.task_type = c.task_type;
        event.depth = c.hook_depth.unwrap_or(0);
    }
    Ok(event)
}

// The event a host hook is handed, taken apart by every field (so a field the core adds is a compile
// error here until it is carried or said not to be).
impl From<&core::Event> for JsEvent {
    fn from(e: &core::Event) -> Self {
        let core::Event {
            kind,
            ids,
            tool,
            task_type,
            paths,
            subject,
            depth,
            // Resolved for the gatekeeper and the trace; a hook matches on `paths` as the agent named them.
            writes: _,
            // Where the agent resolves relative paths: the engine's concern, judged before any hook.
            base: _,
        } = e;
        // The intent and sub-agent are the engine's to set (from the session), not a caller's: a host hook is
        // handed the shape an embedder passes in, which has neither.
        let core::EventIds { session, agent, task, plan, turn, intent: _, model, subagent: _ } = ids;
        JsEvent {
            event: kind.as_str().to_owned(),
            tool: tool.clone(),
            input: Some(subject.clone()),
            paths: Some(paths.clone()),
            task_type: task_type.clone(),
            session_id: session.clone(),
            agent_id: agent.clone(),
            task_id: task.clone(),
            plan_id: plan.clone(),
            turn: *turn,
            model: model.clone(),
            hook_depth: Some(depth + 1),
        }
    }
}

impl JsEvent {
    pub fn try_into_core(self) -> Result<core::Event> {
        let context = JsEventContext {
            session_id: self.session_id,
            agent_id: self.agent_id,
            task_id: self.task_id,
            plan_id: self.plan_id,
            turn: self.turn,
            task_type: self.task_type,
            model: self.model,
            hook_depth: self.hook_depth,
        };
        let mut event = event_from_parts(&self.event, self.tool, self.paths, Some(context))?;
        event.subject = self.input.unwrap_or(serde_json::Value::Null);
        Ok(event)
    }
}

fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

impl JsEvaluation {
    pub fn from_core(e: core::Evaluation, detail: Detail, kind: core::EventKind) -> Self {
        let (reason, remediation, suggested_tool, asks) = match &e.decision {
            core::Decision::Allow => (None, None, None, None),
            core::Decision::Deny(d) => (Some(d.reason.clone()), d.remediation.clone(), d.suggested_tool.clone(), None),
            core::Decision::Ask { asks } => (
                Some(asks.iter().map(|a| a.reason.as_str()).collect::<Vec<_>>().join("; ")),
                None,
                None,
                Some(asks.iter().map(|a| JsAsked { hook: a.hook.to_string(), reason: a.reason.clone() }).collect()),
            ),
        };
        JsEvaluation {
            decision: e.decision.as_str().to_owned(),
            reason,
            remediation,
            suggested_tool,
            asks,
            rewrite: crate::rewrite::read(kind, e.modified.as_ref()),
            modified: e.modified,
            additional_context: non_empty(e.additional_context),
            outcomes: non_empty(
                e.outcomes
                    .into_iter()
                    .filter(|o| match detail {
                        Detail::All => true,
                        Detail::Deciding => o.kind != core::OutcomeKind::Allowed,
                        Detail::None => false,
                    })
                    .map(|o| JsHookOutcome {
                        hook: o.hook.to_string(),
                        outcome: o.kind.as_str().to_owned(),
                        duration_ns: o.duration_ns as f64,
                        error: match o.kind {
                            core::OutcomeKind::FailedOpen(f) | core::OutcomeKind::FailedClosed(f) => Some(f.to_string()),
                            _ => None,
                        },
                    })
                    .collect(),
            ),
            piped: non_empty(e.piped.into_iter().map(|p| JsPiped { hook: p.hook, text: p.text }).collect()),
            context: (!e.context.is_empty()).then(|| e.context.into_iter().collect()),
            reentered: e.reentered.then_some(true),
            durable_wait_ns: (e.durable_wait_ns > 0).then_some(e.durable_wait_ns as f64),
        }
    }
}

/// Where an `evaluateAsync` stands: judged and settled before the call returned, or awaited through
/// a deferred that whoever settles later resolves.
enum Settling {
    Judging,
    Waiting(napi::JsDeferred<JsEvaluation, Box<dyn FnOnce(Env) -> napi::Result<JsEvaluation> + Send>>),
    Done(core::Evaluation),
}

/// Settles an evaluation exactly once: with the one given, or, dropped unsettled (the task judging it
/// panicked and was unwound), with a deny. A promise of a gate never hangs, and a broken gate denies.
struct DenyOnDrop<F: FnOnce(core::Evaluation)>(Option<F>);

impl<F: FnOnce(core::Evaluation)> DenyOnDrop<F> {
    fn settle(mut self, evaluation: core::Evaluation) {
        if let Some(settle) = self.0.take() {
            settle(evaluation);
        }
    }
}

impl<F: FnOnce(core::Evaluation)> Drop for DenyOnDrop<F> {
    fn drop(&mut self) {
        if let Some(settle) = self.0.take() {
            settle(core::Evaluation::failed("the engine failed while judging this event (a panic; see the log)"));
        }
    }
}

#[napi]
impl Engine {
    /// Runs the event's chain synchronously. For chains of native hooks only: throws (`EENGINE`) if
    /// a hook that applies to this event is a command, builtin or host hook.
    ///
    /// For an embedder that must have the answer on its own thread, before it returns. The extension
    /// is not one: it judges through `evaluateAsync` (a gate waits for its record's sync, which a
    /// synchronous call could only block on). What calls this is the binding's benchmark of its own
    /// cost (`engine.chain8.binding` against `binding.empty_call`) and tests; its arguments are
    /// positional so that what the benchmark measures is the crossing, not reading an object's
    /// fields by name (three napi calls a field). The tool input is converted only if a hook that
    /// applies will read it (declared rules judge by tool and paths).
    #[napi(
        catch_unwind,
        ts_args_type = "event: EventName, tool?: string | null, paths?: string[] | null, input?: unknown, context?: EventContext | null, options?: EvaluateOptions | null",
        ts_return_type = "Evaluation"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn evaluate(
        &self,
        event: String,
        tool: Option<String>,
        paths: Option<Vec<String>>,
        input: Option<Unknown>,
        context: Option<JsEventContext>,
        options: Option<JsEvaluateOptions>,
    ) -> Result<JsEvaluation> {
        let core_event = event_from_parts(&event, tool, paths, context)?;
        let kind = core_event.kind;
        let detail = Detail::from_options(options)?;
        // napi's direct conversion, as `evaluateAsync`'s event takes: it stops at 128 levels, where its
        // serde deserializer (used here before) recursed into a cyclic input until the host's stack
        // overflowed (a segfault of the extension host, not an error).
        let subject = || input.map(serde_json::Value::from_unknown).unwrap_or(Ok(serde_json::Value::Null));
        match self.inner.evaluate_with(core_event, subject) {
            Ok(evaluation) => Ok(JsEvaluation::from_core(evaluation, detail, kind)),
            Err(core::SyncError::NeedsAsync(e)) => Err(error(Code::Engine, e.to_string())),
            Err(core::SyncError::Subject(e)) => Err(invalid(format!(
                "the input cannot be judged: {}; pass JSON-shaped input (no cycles, no functions, at most 128 levels deep)",
                e.reason
            ))),
        }
    }

    /// Runs the event's chain with every kind of hook (commands, builtins, host hooks) and resolves
    /// with the decision. Hooks failing is data in the result, never a rejection.
    ///
    /// A chain of native hooks only is judged at once, on the calling thread: the promise comes back
    /// resolved when the event's record needs no sync, else it settles when the record is durable
    /// (straight from the ledger's syncer thread); other chains run on the binding's async runtime.
    #[napi(catch_unwind, ts_return_type = "Promise<Evaluation>")]
    pub fn evaluate_async<'env>(
        &self,
        env: &'env Env,
        event: JsEvent,
        options: Option<JsEvaluateOptions>,
    ) -> Result<PromiseRaw<'env, JsEvaluation>> {
        let event = event.try_into_core()?;
        let kind = event.kind;
        let detail = Detail::from_options(options)?;
        // Who settles first decides how: an evaluation ready before this call returns becomes an
        // already resolved promise (no round trip through the event loop); a later one resolves the
        // deferred this call leaves behind.
        let state = Arc::new(std::sync::Mutex::new(Settling::Judging));
        let settle = {
            let state = Arc::clone(&state);
            move |evaluation: core::Evaluation| {
                let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                match std::mem::replace(&mut *s, Settling::Judging) {
                    Settling::Waiting(deferred) => {
                        drop(s);
                        deferred.resolve(Box::new(move |_| Ok(JsEvaluation::from_core(evaluation, detail, kind))));
                    }
                    _ => *s = Settling::Done(evaluation),
                }
            }
        };
        if let Err(back) = self.inner.evaluate_then(event, settle) {
            let (event, settle) = *back;
            let (engine, host) = (self.inner.clone(), self.host.clone());
            let settle = DenyOnDrop(Some(settle));
            spawn(async move { settle.settle(engine.evaluate_async(event, Some(host as Arc<dyn core::HostHooks>)).await) });
        }
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        match std::mem::replace(&mut *s, Settling::Judging) {
            Settling::Done(evaluation) => PromiseRaw::resolve(env, JsEvaluation::from_core(evaluation, detail, kind)).map_err(from_napi),
            _ => {
                let (deferred, promise) = env.create_deferred().map_err(from_napi)?;
                *s = Settling::Waiting(deferred);
                Ok(PromiseRaw::new(env.raw(), promise.raw()))
            }
        }
    }

    /// The piped hook output waiting for this session's next turn, oldest first; empties the queue.
    #[napi(catch_unwind)]
    pub fn drain_piped(&self, session_id: String) -> Vec<JsPiped> {
        self.inner.drain_piped(&session_id).into_iter().map(|p| JsPiped { hook: p.hook, text: p.text }).collect()
    }
}

//! The napi-rs binding of `chokepoint-core` for the VS Code extension.
//!
//! Thin by design (see ARCHITECTURE.md): every export converts its arguments into core types, calls
//! the core, and converts the answer back. No logic lives here. Expected outcomes (a decision, a
//! configuration diagnostic) are returned as data; only misuse (an unknown event name, a workspace
//! that is not a directory) throws. Every export catches panics so a bug in the core surfaces as a
//! JavaScript error instead of taking the extension host down.
#![allow(unsafe_code)] // the napi macros expand to FFI glue; this crate writes no unsafe of its own

/// See the workspace's Cargo.toml: the ledger's writer thread frees what the judge allocated. Only
/// Rust's allocations in this addon go through it; Node keeps its own.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod approvals;
mod convert;
mod host;

use chokepoint_core as core;
use convert::{
    JsBlameResult, JsCompactionItem, JsCompactionPlan, JsCompactionPolicy, JsContainedCommand, JsContainedResult, JsEngineInfo,
    JsEvaluateOptions, JsEvaluation, JsEvent, JsEventContext, JsHostHookSpec, JsIntentHolder, JsPiped, JsScopeExpansion, JsTokenizerInfo,
    JsTraceEntry, JsTraceFilter,
};
use host::{HostFn, HostTable};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use std::sync::Arc;

/// The version of the native core.
#[napi(catch_unwind)]
pub fn version() -> &'static str {
    core::VERSION
}

/// Where an `evaluateAsync` stands: judged and settled before the call returned, or awaited through
/// a deferred that whoever settles later resolves.
enum Settling {
    Judging,
    Waiting(napi::JsDeferred<JsEvaluation, Box<dyn FnOnce(Env) -> Result<JsEvaluation> + Send>>),
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

/// Does nothing. The baseline of the binding benchmarks: the cost of crossing napi and no more.
#[napi]
pub fn noop() {}

/// The tokens of each text as one chat message of `model` (its content and the message's framing):
/// exact for OpenAI's o200k and cl100k families, an estimate that errs high for the others (see
/// `tokenizerInfo`). Count each message once, when it enters the history, and keep the count: exact
/// counting runs at about 5 to 10 MB/s, and the first call for a family loads its tokenizer (a few
/// hundred milliseconds). `countTokensAsync` does the same off the JavaScript thread.
#[napi(catch_unwind)]
pub fn count_tokens(texts: Vec<String>, model: String) -> Vec<u32> {
    let counter = core::tokens::TokenCounter::for_model(&model);
    texts.iter().map(|text| counter.count_message(text)).collect()
}

/// `countTokens` on the libuv thread pool, for large texts and the first call (which loads the
/// tokenizer).
#[napi(catch_unwind, ts_return_type = "Promise<number[]>")]
pub fn count_tokens_async(texts: Vec<String>, model: String) -> AsyncTask<CountTokens> {
    AsyncTask::new(CountTokens { counter: core::tokens::TokenCounter::for_model(&model), texts })
}

/// The work of `countTokensAsync`, off the JavaScript thread.
pub struct CountTokens {
    counter: core::tokens::TokenCounter,
    texts: Vec<String>,
}

impl Task for CountTokens {
    type Output = Vec<u32>;
    type JsValue = Vec<u32>;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(self.texts.iter().map(|text| self.counter.count_message(text)).collect())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// How `countTokens` counts for `model`: its tokenizer family, whether counts are exact, and the
/// framing each message adds.
#[napi(catch_unwind)]
pub fn tokenizer_info(model: String) -> JsTokenizerInfo {
    core::tokens::TokenCounter::for_model(&model).into()
}

/// Plans a compaction of the prompt's `items` to `budget` tokens: what to keep, summarise or drop,
/// per item, in the order given (see `CompactionItem` for the order of sacrifice). When the pieces
/// never sacrificed exceed the budget on their own, the plan says so in `overBudget` rather than
/// throwing; only malformed items throw.
#[napi(catch_unwind)]
pub fn plan_compaction(items: Vec<JsCompactionItem>, budget: f64, policy: Option<JsCompactionPolicy>) -> Result<JsCompactionPlan> {
    let items = items.into_iter().map(JsCompactionItem::try_into_core).collect::<Result<Vec<_>>>()?;
    let budget = convert::whole(budget, "budget")?;
    let policy = JsCompactionPolicy::into_core(policy)?;
    let before = items.iter().map(|item| u64::from(item.tokens)).sum();
    Ok(JsCompactionPlan::from_core(core::compaction::plan_compaction_with(&items, budget, &policy), before))
}

/// A running configuration watch (see `Engine.watch`).
#[napi]
pub struct ConfigWatch {
    inner: Option<core::watch::ConfigWatcher>,
}

#[napi]
impl ConfigWatch {
    /// Stops watching. Idempotent.
    #[napi]
    pub fn close(&mut self) {
        self.inner = None;
    }
}

/// The engine of one workspace.
#[napi]
pub struct Engine {
    inner: Arc<core::Engine>,
    host: Arc<HostTable>,
}

#[napi]
impl Engine {
    /// Opens the engine on a workspace folder. Throws if the folder does not exist; configuration
    /// problems do not throw, they are reported by `info().diagnostics`.
    #[napi(factory, catch_unwind)]
    pub fn open(workspace_root: String) -> Result<Engine> {
        core::Engine::open(&workspace_root)
            .map(|inner| Engine { inner: Arc::new(inner), host: Arc::default() })
            .map_err(|e| Error::new(Status::InvalidArg, format!("cannot open workspace `{workspace_root}`: {e}")))
    }

    /// Re-reads the configuration; returns the number of diagnostics of this load.
    #[napi(catch_unwind)]
    pub fn reload(&self) -> u32 {
        self.inner.reload().len() as u32
    }

    #[napi(catch_unwind)]
    pub fn info(&self) -> JsEngineInfo {
        self.inner.info().into()
    }

    /// Runs the event's chain synchronously. For chains of native hooks only: throws if a hook that
    /// applies to this event is a command, builtin or host hook.
    ///
    /// The hot path, so its arguments are positional: every napi call costs a few hundred
    /// nanoseconds, and reading an object's fields by name costs three calls a field. The tool input is
    /// converted only if a hook that applies will read it (declared rules judge by tool and paths).
    /// `extension/src/chokepoint.ts` is the one caller; it takes an `Event` object.
    #[napi(
        catch_unwind,
        ts_args_type = "event: string, tool?: string | null, paths?: string[] | null, input?: unknown, context?: EventContext | null, options?: EvaluateOptions | null",
        ts_return_type = "Evaluation"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn evaluate(
        &self,
        env: &Env,
        event: String,
        tool: Option<String>,
        paths: Option<Vec<String>>,
        input: Option<Unknown>,
        context: Option<JsEventContext>,
        options: Option<JsEvaluateOptions>,
    ) -> Result<JsEvaluation> {
        let core_event = convert::event_from_parts(&event, tool, paths, context)?;
        let detail = convert::Detail::from_options(options)?;
        let subject = || input.map(|i| env.from_js_value(i)).unwrap_or(Ok(serde_json::Value::Null));
        match self.inner.evaluate_with(core_event, subject) {
            Ok(evaluation) => Ok(JsEvaluation::from_core(evaluation, detail)),
            Err(core::SyncError::NeedsAsync(e)) => Err(Error::new(Status::GenericFailure, e.to_string())),
            Err(core::SyncError::Subject(e)) => Err(e),
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
        let detail = convert::Detail::from_options(options)?;
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
                        deferred.resolve(Box::new(move |_| Ok(JsEvaluation::from_core(evaluation, detail))));
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
            Settling::Done(evaluation) => PromiseRaw::resolve(env, JsEvaluation::from_core(evaluation, detail)),
            _ => {
                let (deferred, promise) = env.create_deferred()?;
                *s = Settling::Waiting(deferred);
                Ok(PromiseRaw::new(env.raw(), promise.raw()))
            }
        }
    }

    /// Registers an async JavaScript function as a hook: `async (event) => answer`. It runs in
    /// the chain of every event it lists, at its priority, on the asynchronous path.
    #[napi(catch_unwind, ts_args_type = "spec: HostHookSpec, hook: (event: Event) => Promise<HookAnswer>")]
    pub fn register_host_hook(&self, spec: JsHostHookSpec, hook: HostFn) -> Result<()> {
        let registration = spec.try_into_core()?;
        self.host.insert(registration.name.clone(), hook);
        self.inner.register(registration);
        Ok(())
    }

    /// Reloads the engine whenever hooks.yaml or active_intents.yaml changes (debounced), then calls
    /// `onReload` with the number of problems that reload found (0: the new configuration runs;
    /// more: the last good one keeps running). Keep the returned handle; `close()` stops watching.
    #[napi(catch_unwind, ts_args_type = "onReload: (problems: number) => void")]
    pub fn watch(&self, on_reload: ThreadsafeFunction<u32, (), u32, Status, false>) -> Result<ConfigWatch> {
        let watcher = self
            .inner
            .watch(core::watch::DEFAULT_DEBOUNCE, move |diagnostics| {
                on_reload.call(diagnostics.len() as u32, ThreadsafeFunctionCallMode::NonBlocking);
            })
            .map_err(|e| Error::new(Status::GenericFailure, e))?;
        Ok(ConfigWatch { inner: Some(watcher) })
    }

    /// Releases the JavaScript functions registered as host hooks, so that they no longer keep Node
    /// running. A host hook that is called afterwards fails (and its failure mode applies).
    #[napi]
    pub fn close(&self) {
        self.host.clear();
    }

    /// The intent a session holds, as every process on the workspace sees it; null if none.
    #[napi(catch_unwind)]
    pub fn selected_intent(&self, session_id: String) -> Option<String> {
        self.inner.gatekeeper().selected(&session_id)
    }

    /// Who holds which intent now, across every process on the workspace.
    #[napi(catch_unwind)]
    pub fn intent_holders(&self) -> Result<Vec<JsIntentHolder>> {
        let holders = self.inner.gatekeeper().holders().map_err(|e| Error::new(Status::GenericFailure, e))?;
        Ok(holders.into_iter().map(Into::into).collect())
    }

    /// Releases the intent a session holds; returns how many leases were released (0 or 1).
    #[napi(catch_unwind)]
    pub fn release_intent(&self, session_id: String) -> Result<u32> {
        self.inner.gatekeeper().release(&session_id).map(|n| n as u32).map_err(|e| Error::new(Status::GenericFailure, e))
    }

    /// Records an approved scope expansion (and, with `save`, writes it into active_intents.yaml).
    /// Throws with the reason when the paths cannot be granted (governance files, outside the
    /// workspace, an invalid glob).
    #[napi(catch_unwind)]
    pub fn approve_scope_expansion(&self, expansion: JsScopeExpansion) -> Result<()> {
        let (expansion, save) = expansion.into_core();
        self.inner.gatekeeper().approve_expansion(&expansion, save).map_err(|e| Error::new(Status::InvalidArg, e))
    }

    /// Runs a shell command of a session contained to its intent's scope: Landlock where the kernel
    /// has it, snapshot-and-revert everywhere. Resolves with what the command printed and what
    /// containment did; rejects only when the command could not be started contained at all. Runs
    /// on the libuv thread pool, never on the extension host's thread.
    #[napi(catch_unwind, ts_return_type = "Promise<ContainedResult>")]
    pub fn run_contained(&self, command: JsContainedCommand) -> Result<AsyncTask<Contained>> {
        if command.argv.is_empty() {
            return Err(Error::new(Status::InvalidArg, "runContained needs a program in `argv`".to_owned()));
        }
        Ok(AsyncTask::new(Contained { engine: self.inner.clone(), command: Some(command) }))
    }

    /// Stops the contained command a session is running: its whole process group is killed, what it
    /// changed outside the scope is still undone, and its `runContained` resolves with `cancelled`.
    /// Returns whether one was running (or waiting for its turn).
    #[napi(catch_unwind)]
    pub fn cancel_contained(&self, session_id: String) -> bool {
        self.inner.cancel_contained(&session_id)
    }

    /// The trace ledger's records that match `filter`, newest first, read through its index (brought
    /// up to date with the ledger first, so every durable record is there, whichever process wrote
    /// it). An ungoverned workspace has none. Throws when the index cannot be read or `since` is not a
    /// time.
    #[napi(catch_unwind)]
    pub fn trace_recent(&self, filter: Option<JsTraceFilter>) -> Result<Vec<JsTraceEntry>> {
        let records = self.inner.tracer().query(&JsTraceFilter::into_core(filter)).map_err(|e| Error::new(Status::GenericFailure, e))?;
        Ok(records.into_iter().map(Into::into).collect())
    }

    /// Which recorded write last put line `line` (1-based) of `path` (workspace-relative,
    /// `/`-separated) as it is on disk now, found by content even after lines moved. Throws for a
    /// path outside the workspace, a file that cannot be read, a line past its end, or an ungoverned
    /// workspace.
    #[napi(catch_unwind)]
    pub fn trace_blame(&self, path: String, line: f64) -> Result<JsBlameResult> {
        let line = convert::line_number(line)?;
        let mut lines = self.inner.tracer().blame(&path, Some(line)).map_err(|e| Error::new(Status::InvalidArg, e))?;
        lines.pop().map(Into::into).ok_or_else(|| Error::new(Status::GenericFailure, format!("blame of {path}:{line} returned no line")))
    }

    /// Waits until every record queued so far (by the synchronous `evaluate`) is durable in the
    /// ledger. Throws when the ledger cannot be written.
    #[napi(catch_unwind)]
    pub fn flush_trace(&self) -> Result<()> {
        self.inner.tracer().flush().map_err(|e| Error::new(Status::GenericFailure, e))
    }

    /// The piped hook output waiting for this session's next turn, oldest first; empties the queue.
    #[napi(catch_unwind)]
    pub fn drain_piped(&self, session_id: String) -> Vec<JsPiped> {
        self.inner.drain_piped(&session_id).into_iter().map(|p| JsPiped { hook: p.hook, text: p.text }).collect()
    }
}

/// The work of `Engine.runContained`, off the JavaScript thread.
pub struct Contained {
    engine: Arc<core::Engine>,
    command: Option<JsContainedCommand>,
}

impl Task for Contained {
    type Output = core::containment::ContainReport;
    type JsValue = JsContainedResult;

    fn compute(&mut self) -> Result<Self::Output> {
        let spec = self.command.take().ok_or_else(|| Error::new(Status::GenericFailure, "runContained ran twice".to_owned()))?;
        let mut command = std::process::Command::new(&spec.argv[0]);
        command.args(&spec.argv[1..]);
        command.current_dir(spec.cwd.map_or_else(|| self.engine.sidecar().workspace_root().to_path_buf(), std::path::PathBuf::from));
        command.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        let timeout = spec.timeout_ms.map(|ms| std::time::Duration::from_millis(ms.into()));
        self.engine.run_contained(&spec.session_id, command, timeout).map_err(|e| Error::new(Status::GenericFailure, e))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output.into())
    }
}

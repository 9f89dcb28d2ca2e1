//! Host hooks: JavaScript functions the extension registers (`registerHostHook`), called from the
//! engine's async driver through napi ThreadsafeFunctions. The engine only knows them by id
//! (`HookImpl::Host(id)`). A hook that throws is that hook's failure, which its failure mode turns
//! into a deny or a note.

use crate::Engine;
use crate::errors::{Code, Result, as_error, invalid};
use crate::evaluate::{JsEvent, event_kind};
use chokepoint_core as core;
use napi::bindgen_prelude::{Promise, Status};
use napi::threadsafe_function::ThreadsafeFunction;
use napi_derive::napi;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

/// `async (event) => answer`, called with the event as its one argument.
/// Referenced (not weak): while a hook is registered, Node waits for its answers instead of exiting
/// with an evaluation half done. `Engine.close()` releases them.
pub type HostFn = ThreadsafeFunction<JsEvent, Promise<JsHookAnswer>, JsEvent, Status, false>;

#[derive(Default)]
pub struct HostTable {
    functions: RwLock<HashMap<String, Arc<HostFn>>>,
}

impl std::fmt::Debug for HostTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<String> = self.functions.read().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        f.debug_struct("HostTable").field("ids", &ids).finish()
    }
}

impl HostTable {
    /// Releases every registered function (their calls then fail as unregistered hooks).
    pub fn clear(&self) {
        self.functions.write().unwrap_or_else(|p| p.into_inner()).clear();
    }

    pub fn insert(&self, id: String, function: HostFn) {
        self.functions.write().unwrap_or_else(|p| p.into_inner()).insert(id, Arc::new(function));
    }
}

impl core::HostHooks for HostTable {
    fn call(
        &self,
        id: &str,
        event: &core::Event,
    ) -> Pin<Box<dyn Future<Output = std::result::Result<core::HookAnswer, core::HookFailure>> + Send>> {
        let function = self.functions.read().unwrap_or_else(|p| p.into_inner()).get(id).cloned();
        let event = JsEvent::from(event);
        let id = id.to_owned();
        Box::pin(async move {
            let function = function.ok_or_else(|| core::HookFailure::Error(format!("host hook `{id}` is not registered")))?;
            // A throwing callback is an error of that hook, never a crash of the extension host.
            let promise = function.call_async_catch(event).await.map_err(|e| core::HookFailure::Error(e.reason.clone()))?;
            let answer = promise.await.map_err(|e| core::HookFailure::Error(e.reason.clone()))?;
            answer.try_into_core()
        })
    }
}

/// What a host hook answers.
#[napi(object, js_name = "HookAnswer")]
pub struct JsHookAnswer {
    #[napi(ts_type = "HookAnswerName")]
    pub decision: String,
    pub reason: Option<String>,
    pub remediation: Option<String>,
    pub suggested_tool: Option<String>,
    /// The rewritten subject, with `modify`.
    pub modified: Option<serde_json::Value>,
    pub additional_context: Option<String>,
}

/// Where and how a host hook runs.
#[napi(object, js_name = "HostHookSpec")]
pub struct JsHostHookSpec {
    /// Unique among host hooks; shown in outcomes and the trace.
    pub name: String,
    #[napi(ts_type = "EventName[]")]
    pub events: Vec<String>,
    /// Default `normal`.
    #[napi(ts_type = "PriorityName")]
    pub priority: Option<String>,
    /// Default by priority.
    #[napi(ts_type = "FailureModeName")]
    pub failure: Option<String>,
    /// Anchored regular expression over the tool name.
    pub tool: Option<String>,
    pub paths: Option<Vec<String>>,
}

impl JsHostHookSpec {
    pub fn try_into_core(self) -> Result<core::Registration> {
        let priority = match self.priority.as_deref() {
            None => core::Priority::default(),
            Some(name) => core::Priority::parse_name("priority", name).map_err(as_error(Code::Invalid))?,
        };
        let failure = self
            .failure
            .as_deref()
            .map(|name| core::FailureMode::parse_name("failure mode", name))
            .transpose()
            .map_err(as_error(Code::Invalid))?;
        let events = self.events.iter().map(|e| event_kind(e)).collect::<Result<Vec<_>>>()?;
        let matcher = core::Matcher::new(self.tool.as_deref(), &self.paths.unwrap_or_default()).map_err(|e| invalid(e.to_string()))?;
        Ok(core::Registration { hook: core::HookImpl::Host(self.name.clone()), name: self.name, priority, failure, events, matcher })
    }
}

impl JsHookAnswer {
    pub fn try_into_core(self) -> std::result::Result<core::HookAnswer, core::HookFailure> {
        let JsHookAnswer { decision, reason, remediation, suggested_tool, modified, additional_context } = self;
        let answer = core::Answer::from_decision(&decision, reason, remediation, suggested_tool, modified)?;
        Ok(core::HookAnswer { answer, additional_context })
    }
}

#[napi]
impl Engine {
    /// Registers an async JavaScript function as a hook: `async (event) => answer`. It runs in
    /// the chain of every event it lists, at its priority, on the asynchronous path.
    #[napi(catch_unwind, ts_args_type = "spec: HostHookSpec, hook: (event: Event) => Promise<HookAnswer>")]
    pub fn register_host_hook(&self, spec: JsHostHookSpec, hook: HostFn) -> Result<()> {
        let registration = spec.try_into_core()?;
        self.host.insert(registration.name.clone(), hook);
        self.inner.register(registration);
        Ok(())
    }
}

//! Host hooks: JavaScript functions the extension registers, called from the engine's async driver
//! through napi ThreadsafeFunctions. The engine only knows them by id (`HookImpl::Host(id)`).

use crate::convert::{JsEvent, JsHookAnswer};
use chokepoint_core as core;
use napi::bindgen_prelude::{Promise, Status};
use napi::threadsafe_function::ThreadsafeFunction;
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
    fn call(&self, id: &str, event: &core::Event) -> Pin<Box<dyn Future<Output = Result<core::HookAnswer, core::HookFailure>> + Send>> {
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

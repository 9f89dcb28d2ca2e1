//! Picks up configuration edits while running: a file watcher on `.orchestration/` that reloads the
//! engine once a burst of changes has settled (an editor's save is often several writes).
//!
//! A reload that fails keeps the last good configuration (engine.rs); the callback hears about every
//! reload with its diagnostics, so the embedder can show them.

use crate::base::diagnostic::Diagnostic;
use crate::engine::judge::Engine;
use notify::{RecursiveMode, Watcher};
use std::sync::mpsc;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The default quiet period before a burst of changes is applied.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(150);

/// Watches while it lives; dropping it stops the watcher and its thread.
#[derive(Debug)]
pub struct ConfigWatcher {
    _watcher: notify::RecommendedWatcher,
}

const WATCHED_FILES: [&str; 4] = ["hooks.yaml", "hooks.yml", "active_intents.yaml", "active_intents.yml"];

impl Engine {
    /// Reloads the engine whenever hooks.yaml or active_intents.yaml changes, `debounce` after the last
    /// change of a burst, and calls `on_reload` with that reload's diagnostics.
    ///
    /// Holds the engine weakly: the watcher never keeps an engine alive, and stops doing anything once
    /// the engine is gone.
    pub fn watch(
        self: &Arc<Engine>,
        debounce: Duration,
        on_reload: impl Fn(Vec<Diagnostic>) + Send + 'static,
    ) -> Result<ConfigWatcher, String> {
        let dir = self.sidecar().dir();
        let (tx, rx) = mpsc::channel::<()>();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            // Only changes: reloading opens and reads the files, and those access events must not
            // trigger another reload.
            let change = event.kind.is_create()
                || event.kind.is_remove()
                || matches!(event.kind, notify::EventKind::Modify(m) if !matches!(m, notify::event::ModifyKind::Metadata(_)));
            let relevant =
                change && event.paths.iter().any(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| WATCHED_FILES.contains(&n)));
            if relevant {
                let _ = tx.send(());
            }
        })
        .map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
        watcher.watch(&dir, RecursiveMode::NonRecursive).map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
        let engine: Weak<Engine> = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("chokepoint-config-watch".into())
            .spawn(move || {
                // Ends when the watcher (and with it the sender) is dropped.
                while rx.recv().is_ok() {
                    while rx.recv_timeout(debounce).is_ok() {}
                    let Some(engine) = engine.upgrade() else { return };
                    on_reload(engine.reload());
                }
            })
            .map_err(|e| format!("cannot start the watcher thread: {e}"))?;
        Ok(ConfigWatcher { _watcher: watcher })
    }
}

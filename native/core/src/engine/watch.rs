//! Picks up configuration edits while running: a file watcher on `.orchestration/` that reloads the
//! engine once a burst of changes has settled (an editor's save is often several writes).
//!
//! A reload that fails keeps the last good configuration (engine.rs); the callback hears about every
//! reload with its diagnostics, so the embedder can show them.
//!
//! The folder also holds the ledger and the state database, written at every judged event. On Linux
//! the watcher subscribes only to what a save can be (a close after writing, a rename into the
//! folder, a creation, a deletion), not to every `write` and `open`: watched for those, each ledger
//! append woke the watcher's thread from inside the `write` (a cross-core wake-up on the path to the
//! gate's sync) and cost the served engine ~9% of its CPU under load, for events it then ignored.

use crate::base::diagnostic::Diagnostic;
use crate::engine::engine::Engine;
use std::sync::mpsc;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The default quiet period before a burst of changes is applied.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(150);

/// Watches while it lives; dropping it stops the watcher and its threads.
#[derive(Debug)]
pub struct ConfigWatcher {
    _source: backend::Source,
}

const WATCHED_FILES: [&str; 4] = ["hooks.yaml", "hooks.yml", "active_intents.yaml", "active_intents.yml"];

fn watched(name: Option<&std::ffi::OsStr>) -> bool {
    name.and_then(|n| n.to_str()).is_some_and(|n| WATCHED_FILES.contains(&n))
}

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
        let source = backend::Source::start(&dir, tx).map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
        let engine: Weak<Engine> = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("chokepoint-config-watch".into())
            .spawn(move || {
                // Ends when the source (and with it the sender) is gone.
                while rx.recv().is_ok() {
                    while rx.recv_timeout(debounce).is_ok() {}
                    let Some(engine) = engine.upgrade() else { return };
                    on_reload(engine.reload());
                }
            })
            .map_err(|e| format!("cannot start the watcher thread: {e}"))?;
        Ok(ConfigWatcher { _source: source })
    }
}

#[cfg(target_os = "linux")]
mod backend {
    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
    use std::path::Path;
    use std::sync::mpsc::Sender;

    /// An inotify watch read by a thread of its own; dropped, the watch is removed, which the kernel
    /// reports (`IN_IGNORED`) to the blocked read, and the thread ends.
    #[derive(Debug)]
    pub struct Source {
        watches: Watches,
        watch: WatchDescriptor,
    }

    impl Source {
        pub fn start(dir: &Path, changed: Sender<()>) -> std::io::Result<Source> {
            let mut inotify = Inotify::init()?;
            let mask = WatchMask::CLOSE_WRITE | WatchMask::MOVED_TO | WatchMask::MOVED_FROM | WatchMask::CREATE | WatchMask::DELETE;
            let watch = inotify.watches().add(dir, mask)?;
            let watches = inotify.watches();
            std::thread::Builder::new().name("chokepoint-config-inotify".into()).spawn(move || {
                let mut buffer = [0u8; 4096];
                loop {
                    let Ok(events) = inotify.read_events_blocking(&mut buffer) else { return };
                    let mut relevant = false;
                    for event in events {
                        if event.mask.contains(EventMask::IGNORED) {
                            return;
                        }
                        // Events were dropped: one of them may have been a save.
                        relevant |= super::watched(event.name) || event.mask.contains(EventMask::Q_OVERFLOW);
                    }
                    if relevant && changed.send(()).is_err() {
                        return;
                    }
                }
            })?;
            Ok(Source { watches, watch })
        }
    }

    impl Drop for Source {
        fn drop(&mut self) {
            let _ = self.watches.remove(self.watch.clone());
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod backend {
    use notify::{RecursiveMode, Watcher};
    use std::path::Path;
    use std::sync::mpsc::Sender;

    #[derive(Debug)]
    pub struct Source {
        _watcher: notify::RecommendedWatcher,
    }

    impl Source {
        pub fn start(dir: &Path, changed: Sender<()>) -> Result<Source, notify::Error> {
            let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let Ok(event) = event else { return };
                // Only changes: reloading opens and reads the files, and those access events must not
                // trigger another reload.
                let change = event.kind.is_create()
                    || event.kind.is_remove()
                    || matches!(event.kind, notify::EventKind::Modify(m) if !matches!(m, notify::event::ModifyKind::Metadata(_)));
                if change && event.paths.iter().any(|p| super::watched(p.file_name())) {
                    let _ = changed.send(());
                }
            })?;
            watcher.watch(dir, RecursiveMode::NonRecursive)?;
            Ok(Source { _watcher: watcher })
        }
    }
}

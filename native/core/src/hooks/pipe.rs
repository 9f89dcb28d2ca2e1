//! Where `pipe_output` text waits for the agent: one FIFO per session.
//!
//! Delivery rules (seed 002, kept exactly):
//! - output of most events is queued and drained into the agent's next turn, oldest first;
//! - `SessionStart` output is queued like any other, so it waits for the first turn;
//! - the runtime drains once more after its loop ends, before `SessionEnd` (final delivery);
//! - `SessionEnd` output is never piped: there is no turn left to read it;
//! - `Error` output is not queued: the caller puts it into an immediate recovery prompt.

use crate::hooks::chain::Piped;
use crate::model::event::EventKind;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// What happens to one event's piped output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Queued for the session's next turn.
    NextTurn,
    /// Returned to the caller for an immediate recovery prompt.
    Immediate,
    /// Dropped: nobody is left to read it.
    Never,
}

impl Delivery {
    pub fn for_event(kind: EventKind) -> Delivery {
        match kind {
            EventKind::SessionEnd => Delivery::Never,
            EventKind::Error => Delivery::Immediate,
            _ => Delivery::NextTurn,
        }
    }
}

#[derive(Debug, Default)]
pub struct PipeBuffer {
    sessions: Mutex<HashMap<String, VecDeque<Piped>>>,
}

impl PipeBuffer {
    pub fn push(&self, session: &str, items: impl IntoIterator<Item = Piped>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.entry(session.to_owned()).or_default().extend(items);
    }

    /// Everything queued for the session, oldest first; the queue is empty afterwards.
    pub fn drain(&self, session: &str) -> Vec<Piped> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.remove(session).map(Vec::from).unwrap_or_default()
    }
}

//! The promise of one enqueued record: settled once by the ledger's threads, awaited by its producer
//! in whichever way suits the producer's thread.
//!
//! A producer that may block waits ([`Ticket::wait`]); an async task awaits ([`Ticket::settled`])
//! without parking a thread for the length of a sync; a caller on a thread that must never block (the
//! extension host's event loop, through the binding) hands over a continuation ([`Ticket::then`]) that
//! the syncer runs the moment the record is durable. Each hand-off between threads costs tens of
//! microseconds on a busy machine, and a gate pays them on every tool call, so the last two forms
//! exist to remove the thread that would otherwise sit in `wait` only to pass the news on.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use super::error::LedgerError;
use super::record::Appended;

/// What a record's append came to.
pub type Reply = Result<Appended, LedgerError>;

type Continuation = Box<dyn FnOnce(Reply) + Send>;

enum State {
    /// Not settled; what to call when it is, if the producer handed that over.
    Waiting(Option<Continuation>),
    Settled(Box<Reply>),
    /// The reply went to the producer.
    Taken,
}

struct Slot {
    state: Mutex<State>,
    ready: Condvar,
}

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Nothing panics while holding this lock with the state half-changed.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The producer's side. Dropping a ticket does not cancel the append; `Ledger::flush` reports
/// failures nobody waited for.
#[must_use = "a ticket is how an enqueued record's durability is awaited; drop it only if `flush` will be called"]
pub struct Ticket {
    slot: Arc<Slot>,
    ledger: Arc<Path>,
}

/// The ledger's side: settles the ticket once. Dropped unsettled (the writer stopped, or a bug
/// unwound its thread), it settles the ticket as `Closed`, so no producer waits forever.
pub(crate) struct Settle {
    slot: Option<Arc<Slot>>,
    ledger: Arc<Path>,
}

/// A ticket and the handle that settles it.
pub(crate) fn pair(ledger: Arc<Path>) -> (Settle, Ticket) {
    let slot = Arc::new(Slot { state: Mutex::new(State::Waiting(None)), ready: Condvar::new() });
    (Settle { slot: Some(Arc::clone(&slot)), ledger: Arc::clone(&ledger) }, Ticket { slot, ledger })
}

impl Settle {
    pub(crate) fn send(mut self, reply: Reply) {
        self.settle(reply);
    }

    fn settle(&mut self, reply: Reply) {
        let Some(slot) = self.slot.take() else { return };
        let mut state = slot.lock();
        match std::mem::replace(&mut *state, State::Taken) {
            State::Waiting(Some(then)) => {
                drop(state);
                then(reply);
            }
            State::Waiting(None) => {
                *state = State::Settled(Box::new(reply));
                drop(state);
                slot.ready.notify_all();
            }
            // Settled once only: `slot` was taken above.
            other => *state = other,
        }
    }
}

impl Drop for Settle {
    fn drop(&mut self) {
        if self.slot.is_some() {
            let ledger = self.ledger.to_path_buf();
            self.settle(Err(LedgerError::Closed { ledger }));
        }
    }
}

impl Ticket {
    /// Blocks until the record is synced (or its batch failed).
    pub fn wait(self) -> Reply {
        let mut state = self.slot.lock();
        loop {
            match std::mem::replace(&mut *state, State::Taken) {
                State::Settled(reply) => return *reply,
                State::Taken => return Err(self.closed()),
                waiting @ State::Waiting(_) => {
                    *state = waiting;
                    state = self.slot.ready.wait(state).unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }

    /// The outcome if it is already known, else the ticket back.
    pub fn try_wait(self) -> Result<Reply, Ticket> {
        let mut state = self.slot.lock();
        match std::mem::replace(&mut *state, State::Taken) {
            State::Settled(reply) => Ok(*reply),
            State::Taken => Ok(Err(self.closed())),
            waiting @ State::Waiting(_) => {
                *state = waiting;
                drop(state);
                Err(self)
            }
        }
    }

    /// Calls `then` with the outcome once it is known: at once, on this thread, if it already is;
    /// else on the ledger thread that synced it (the syncer, or the writer when it settles a batch
    /// itself) the moment the sync returns. `then` therefore must
    /// be quick and must not block (resolve a promise, send on a channel): the acknowledgements of
    /// the records after it wait for it.
    pub fn then(self, then: impl FnOnce(Reply) + Send + 'static) {
        let mut state = self.slot.lock();
        match std::mem::replace(&mut *state, State::Taken) {
            State::Settled(reply) => {
                drop(state);
                then(*reply);
            }
            State::Taken => {
                drop(state);
                then(Err(self.closed()));
            }
            State::Waiting(_) => *state = State::Waiting(Some(Box::new(then))),
        }
    }

    /// Resolves once the record is durable (or failed), without holding a thread meanwhile.
    pub async fn settled(self) -> Reply {
        let ledger = Arc::clone(&self.ledger);
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.then(move |reply| {
            let _ = tx.send(reply);
        });
        rx.await.unwrap_or_else(|_| Err(LedgerError::Closed { ledger: ledger.to_path_buf() }))
    }

    fn closed(&self) -> LedgerError {
        LedgerError::Closed { ledger: self.ledger.to_path_buf() }
    }
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket").field("ledger", &self.ledger).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{Record, RecordKind};
    use std::sync::mpsc;

    fn appended(seq: u64) -> Appended {
        Appended { seq, hash: String::new(), offset: 0, record: Record::new(RecordKind::External) }
    }

    #[test]
    fn a_continuation_runs_once_on_the_settling_thread_or_at_once() {
        let (settle, ticket) = pair(Arc::from(Path::new("l")));
        let (tx, rx) = mpsc::channel();
        ticket.then(move |reply| tx.send((reply.unwrap().seq, std::thread::current().id())).unwrap());
        assert!(rx.try_recv().is_err(), "ran before the record was settled");
        let settler = std::thread::spawn(move || {
            settle.send(Ok(appended(7)));
            std::thread::current().id()
        });
        let settler = settler.join().unwrap();
        assert_eq!(rx.recv().unwrap(), (7, settler));

        let (settle, ticket) = pair(Arc::from(Path::new("l")));
        settle.send(Ok(appended(8)));
        let (tx, rx) = mpsc::channel();
        ticket.then(move |reply| tx.send(reply.unwrap().seq).unwrap());
        assert_eq!(rx.try_recv().unwrap(), 8, "an already settled ticket runs the continuation at once");
    }

    #[test]
    fn an_unsettled_ticket_is_closed_when_its_settler_is_dropped() {
        let (settle, ticket) = pair(Arc::from(Path::new("l")));
        let waiter = std::thread::spawn(move || ticket.wait());
        drop(settle);
        assert!(matches!(waiter.join().unwrap(), Err(LedgerError::Closed { .. })));
    }

    #[test]
    fn settled_resolves_without_a_blocking_thread() {
        let (settle, ticket) = pair(Arc::from(Path::new("l")));
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        std::thread::spawn(move || settle.send(Ok(appended(3))));
        assert_eq!(runtime.block_on(ticket.settled()).unwrap().seq, 3);
    }
}

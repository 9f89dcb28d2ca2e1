//! The model layer: the canonical lifecycle events and their payload (`event.rs`), what each
//! lifecycle event carries (`subject.rs`), what a hook answers and what a chain decides
//! (`decision.rs`), what a hook's `modify` may rewrite per event (`rewrite.rs`), the other agents'
//! event names mapped onto ours (`external_events.rs`), and the governance files no agent may write
//! with the handshake's tool names (`governance.rs`). Plain data; uses only the base.

pub mod decision;
pub mod event;
pub mod external_events;
pub mod governance;
pub mod rewrite;
pub mod subject;

//! The containment layer, for shell commands: the workspace snapshot and its content-addressed store
//! (`snapshot.rs`), Landlock (`sandbox.rs`) and macOS's Seatbelt profile (`seatbelt.rs`), and the
//! snapshot and the confinement together, run for one command (`contain.rs`); on Linux, a command run in a world of its own, its writes taken by an overlay's
//! upper layer (`isolate.rs`), which is read back as the command's changes and the allowed ones
//! applied (`layer.rs`). Knows nothing of intents: the scope layer hands it a plan.

pub mod contain;
pub mod isolate;
pub mod layer;
pub mod sandbox;
pub mod seatbelt;
pub mod snapshot;

// `chokepoint_core::containment::ContainReport` and its neighbours, as the edges have always named them.
pub use contain::*;

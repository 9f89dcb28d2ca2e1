//! The hooks layer: the ordered chain, its matchers and its combining rules (`chain.rs`), command hooks
//! as processes (`command.rs`), template variables (`template.rs`), the builtins (`builtin.rs`, and
//! the tree `run_tests` last passed on, `tested_tree.rs`) and the per-session queue of piped output
//! (`pipe.rs`); where a hook runs and what its failure means (`priority.rs`), and what the chain's
//! asynchronous driver runs with besides the event (`context.rs`). Uses the base and the model.

pub mod builtin;
pub mod chain;
pub mod command;
pub mod context;
pub mod pipe;
pub mod priority;
pub mod template;
pub mod tested_tree;

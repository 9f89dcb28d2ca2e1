//! The budget layer, the context budget: token counts per model family (`tokens.rs`) and the compaction plan
//! over a prompt's items (`compaction.rs`). Uses only the base.

pub mod compaction;
pub mod tokens;

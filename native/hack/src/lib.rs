//! No code: see this crate's Cargo.toml for why it exists (one compilation of the dependencies that
//! the addon and the CLI share).

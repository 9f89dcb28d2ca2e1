//! The config layer: `.orchestration/hooks.yaml` as typed data (`hooks.rs`), composed of the
//! sections the layers below define and validate (the approvals' section, the gatekeeper's), and the
//! JSON Schemas generated from those types (`schema.rs`).

pub mod hooks;
pub mod schema;

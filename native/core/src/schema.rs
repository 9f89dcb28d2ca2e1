//! JSON Schemas of the configuration files, generated from the Rust types that read them, so that
//! editors validate and complete `hooks.yaml` and `active_intents.yaml` exactly as the engine reads
//! them. The committed copies under `.orchestration/schema/` are checked against these by a test.

use crate::config::HooksConfig;
use crate::intents::IntentSet;

pub fn hooks_schema() -> String {
    pretty(schemars::schema_for!(HooksConfig))
}

pub fn intents_schema() -> String {
    pretty(schemars::schema_for!(IntentSet))
}

fn pretty(schema: schemars::Schema) -> String {
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema is always serialisable");
    text.push('\n');
    text
}

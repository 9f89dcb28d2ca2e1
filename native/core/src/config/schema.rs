//! JSON Schemas of the configuration files, generated from the Rust types that read them, so that
//! editors validate and complete `hooks.yaml` and `active_intents.yaml` exactly as the engine reads
//! them, and so that readers of the trace ledger know the shape of its records. The committed copies under `.orchestration/schema/` are checked against these by a test.
//! `UPDATE_SCHEMAS=1 cargo test -p chokepoint-core --test engine` writes them again. They are packed
//! into the .vsix for "Govern This Folder", which writes them beside the starter
//! `templates/orchestration/` (one intent, no hooks; `tests/node/walkthrough.test.js` loads it).

use crate::config::hooks::HooksConfig;
use crate::scope::intents::IntentSet;

pub fn hooks_schema() -> String {
    pretty(schemars::schema_for!(HooksConfig))
}

pub fn intents_schema() -> String {
    pretty(schemars::schema_for!(IntentSet))
}

/// One line of a chain of the trace ledger, `.orchestration/trace/<chain>.jsonl` (the record's `v` says
/// which version of this schema it follows).
pub fn trace_record_schema() -> String {
    pretty(schemars::schema_for!(crate::ledger::Record))
}

fn pretty(schema: schemars::Schema) -> String {
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema is always serialisable");
    text.push('\n');
    text
}

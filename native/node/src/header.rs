//! `header.d.ts`, generated: the TypeScript union of every closed vocabulary that crosses the
//! binding, made from the lists the core keeps with its enums (`NAMES`, written once by
//! `base::names::names!` in the arms of a `match`, and `EventKind::ALL`). The binding's `ts_type`s
//! name these aliases, so the generated `index.d.ts` (napi's, with this file as its header) types a
//! string field by what the core can send, and the extension's compiler sees a change to the core.
//!
//! Why not napi's `#[napi(string_enum)]`: it generates a `const enum`, whose values a string the
//! extension received cannot be compared with, and which only a runtime import of the binding
//! could name (only `engine/` loads it). `UPDATE_HEADER=1 cargo test -p chokepoint-node header`
//! writes the file; the test fails when the file and the core part.

use chokepoint_core as core;
use chokepoint_core::approvals::Route;

/// One alias: its name, what it is, and its members (TypeScript literal types).
struct Union {
    name: &'static str,
    doc: &'static str,
    members: Vec<String>,
}

fn quoted(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| format!("'{n}'")).collect()
}

fn unions() -> Vec<Union> {
    use core::approvals::{Effect, FeedbackSource, Lapse, Next, PendingKind, Status};
    let union = |name, doc, members| Union { name, doc, members };
    // Every route is listed: a new variant fails to compile here until it is.
    let routes = [Route::Caller, Route::Human, Route::Reviewer, Route::AutoApprove, Route::AutoDeny, Route::Guard];
    for route in &routes {
        match route {
            Route::Caller | Route::Human | Route::Reviewer | Route::AutoApprove | Route::AutoDeny | Route::Guard | Route::Handler(_) => {}
        }
    }
    let mut route_names: Vec<String> = routes.iter().map(|r| format!("'{r}'")).collect();
    route_names.push("`handler:${string}`".to_owned());
    let events: Vec<&str> = core::EventKind::ALL.iter().map(|e| e.as_str()).collect();
    vec![
        union("EventName", "The lifecycle events (`EventKind::ALL`).", quoted(&events)),
        union("DecisionName", "What the chain decided (`Decision`).", quoted(core::Decision::NAMES)),
        union("OutcomeName", "How one hook's run ended (`OutcomeKind`).", quoted(core::OutcomeKind::NAMES)),
        union("PendingRoute", "Who answers a Pending (`approvals::Route`).", route_names),
        union("PendingKindName", "The kinds of Pending (`approvals::PendingKind`).", quoted(PendingKind::NAMES)),
        union("PendingStatusName", "Where a Pending stands (`approvals::Status`); all but `open` are final.", quoted(Status::NAMES)),
        union("PendingLapseName", "What a Pending becomes when nobody decides it in time (`approvals::Lapse`).", quoted(Lapse::NAMES)),
        union("SettlementNextName", "What follows a decided ask for the agent (`approvals::Next`).", quoted(Next::NAMES)),
        union("DecisionEffectName", "What a decision did to its Pending (`approvals::Effect`).", quoted(Effect::NAMES)),
        union("ApprovalRouteName", "Who answers a Pending by default (`ApprovalRoute`).", quoted(core::ApprovalRoute::NAMES)),
        union(
            "FeedbackSourceName",
            "Who decided, as the policy's feedback counts it (`approvals::FeedbackSource`).",
            quoted(FeedbackSource::NAMES),
        ),
        union(
            "ChangeKindName",
            "How a path changed under a contained command (`containment::snapshot::ChangeKind`).",
            quoted(core::containment::snapshot::ChangeKind::NAMES),
        ),
        union(
            "ConfinementName",
            "How far Landlock confined a command (`containment::sandbox::Confinement`).",
            quoted(core::containment::sandbox::Confinement::NAMES),
        ),
        union("HookAnswerName", "What a hook may answer (`Answer`).", quoted(core::Answer::NAMES)),
        union("PriorityName", "Where a hook runs in its chain (`Priority`).", quoted(core::Priority::NAMES)),
        union("FailureModeName", "What a hook's failure means (`FailureMode`).", quoted(core::FailureMode::NAMES)),
        union("RecordKindName", "The kinds of ledger record (`ledger::RecordKind`).", quoted(core::ledger::RecordKind::NAMES)),
        union("FileStatusName", "How a configuration file stands after the last load (`FileStatus`).", quoted(core::FileStatus::NAMES)),
        union("TokenFamilyName", "The tokenizer families (`budget::tokens::Family`).", quoted(core::budget::tokens::Family::NAMES)),
        union(
            "PromptItemKindName",
            "What a piece of a prompt is, for compaction (`budget::compaction::ItemKind`).",
            quoted(core::budget::compaction::ItemKind::NAMES),
        ),
        union(
            "CoordinationModeName",
            "What the workspace's agents coordinate on (`scope::gatekeeper::CoordinationState`).",
            quoted(core::scope::gatekeeper::CoordinationState::NAMES),
        ),
        union("TaskStatusName", "How a task ended (`model::subject::TaskStatus`).", quoted(core::model::subject::TaskStatus::NAMES)),
        union(
            "MessageRoleName",
            "Who wrote a message of a rewritten turn (`model::rewrite::MessageRole`).",
            quoted(core::model::rewrite::MessageRole::NAMES),
        ),
        union(
            "OutcomesDetailName",
            "Which hook outcomes an evaluation lists (the binding's `evaluate::Detail`).",
            quoted(crate::evaluate::Detail::NAMES),
        ),
    ]
}

/// `LifecycleSubjects`: each lifecycle event's subject as the core defines it (`model::subject`),
/// written from the types' JSON schemas (a subset: objects, arrays, strings, numbers, booleans,
/// nullable fields, string enums and `$defs` references), so `Gate.lifecycle` checks the subject it
/// is given against the core's. What napi cannot do: its types come from `#[napi(object)]` structs,
/// and these never cross as objects (a subject crosses as JSON).
fn subjects() -> String {
    let mut out = String::from("\n/** Each lifecycle event's subject, as our runtime raises it and hooks read it (`model::subject`). */\n");
    out.push_str("export interface LifecycleSubjects {\n");
    for (kind, schema) in core::model::subject::schemas() {
        let schema = schema.as_value();
        let defs = schema.get("$defs").cloned().unwrap_or_default();
        if let Some(doc) = schema.get("description").and_then(|d| d.as_str()) {
            out.push_str(&format!("  /** {} */\n", doc.replace('\n', " ")));
        }
        out.push_str(&format!("  {kind}: {}\n", ts_of(schema, &defs)));
    }
    out.push_str("}\n");
    out
}

/// The TypeScript type a JSON schema of the subset above describes; panics on anything else, so a
/// subject type this cannot write fails the header's test rather than turning into `unknown`.
fn ts_of(schema: &serde_json::Value, defs: &serde_json::Value) -> String {
    use serde_json::Value;
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.strip_prefix("#/$defs/").unwrap_or_else(|| panic!("unsupported reference {reference}"));
        return ts_of(&defs[name], defs);
    }
    if let Some(Value::String(c)) = schema.get("const") {
        return format!("'{c}'");
    }
    if let Some(Value::Array(names)) = schema.get("enum") {
        return names.iter().map(|n| format!("'{}'", n.as_str().expect("a string enum"))).collect::<Vec<_>>().join(" | ");
    }
    if let Some(Value::Array(options)) = schema.get("oneOf").or_else(|| schema.get("anyOf")) {
        return options.iter().map(|o| ts_of(o, defs)).collect::<Vec<_>>().join(" | ");
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        other => panic!("unsupported schema without a type: {other:?} in {schema}"),
    };
    let one = |t: &str| match t {
        "string" => "string".to_owned(),
        "integer" | "number" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "null" => "null".to_owned(),
        "array" => format!("Array<{}>", ts_of(&schema["items"], defs)),
        "object" => {
            let required: Vec<&str> =
                schema.get("required").and_then(Value::as_array).map_or_else(Vec::new, |r| r.iter().filter_map(Value::as_str).collect());
            let properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            let fields: Vec<String> = properties
                .iter()
                .map(|(name, p)| format!("{name}{}: {}", if required.contains(&name.as_str()) { "" } else { "?" }, ts_of(p, defs)))
                .collect();
            format!("{{ {} }}", fields.join("; "))
        }
        other => panic!("unsupported type {other}"),
    };
    types.into_iter().map(one).collect::<Vec<_>>().join(" | ")
}

/// The whole file.
fn header() -> String {
    let mut out = String::from(
        "/* auto-generated by NAPI-RS */\n\n\
         // This header is generated too, from the core's vocabularies, by the test in\n\
         // native/node/src/header.rs (`UPDATE_HEADER=1 cargo test -p chokepoint-node header`): napi puts it\n\
         // at the top of index.d.ts, whose string fields name these unions. Edit neither by hand.\n",
    );
    for u in unions() {
        out.push_str(&format!("\n/** {} */\n", u.doc));
        let one_line = format!("export type {} = {}\n", u.name, u.members.join(" | "));
        if one_line.len() <= 110 {
            out.push_str(&one_line);
        } else {
            out.push_str(&format!("export type {} =\n", u.name));
            for m in &u.members {
                out.push_str(&format!("  | {m}\n"));
            }
        }
    }
    out.push_str(&subjects());
    out
}

/// `protocol/names.ts`: the same unions as values, for the zod schemas that validate what crosses
/// the webview (`protocol/messages.ts` builds its enums of these, so a message's type is the
/// generated union and its check at runtime lists the same names). A union with a pattern
/// (`PendingRoute`'s `handler:${string}`) has no list of values and is left out.
fn names_ts() -> String {
    let mut out = String::from(
        "// Generated, with native/node/header.d.ts, by the test in native/node/src/header.rs\n\
         // (`UPDATE_HEADER=1 cargo test -p chokepoint-node header`): the core's vocabularies as values, for\n\
         // the schemas of protocol/messages.ts. Each list's members are its header union's. Edit neither by hand.\n",
    );
    for u in unions().into_iter().filter(|u| u.members.iter().all(|m| m.starts_with('\''))) {
        let name = u.name.strip_suffix("Name").unwrap_or(u.name);
        out.push_str(&format!("\n/** {} */\nexport const {name}Names = [{}] as const;\n", u.doc, u.members.join(", ")));
    }
    out
}

/// Compares a generated file with its source, or rewrites it under `UPDATE_HEADER`.
fn check_generated(relative: &str, generated: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    if std::env::var_os("UPDATE_HEADER").is_some() {
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert!(
        committed == generated,
        "{relative} differs from the core's vocabularies: run `UPDATE_HEADER=1 cargo test -p chokepoint-node header`, then `npm run build` (napi regenerates index.d.ts with the header)"
    );
}

#[test]
fn protocol_names_are_generated_from_the_core() {
    check_generated("../../protocol/names.ts", &names_ts());
}

#[test]
fn header_d_ts_is_generated_from_the_core() {
    check_generated("header.d.ts", &header());
}

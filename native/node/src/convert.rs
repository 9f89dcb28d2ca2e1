//! Conversions between napi objects and core types. The only place that knows both shapes.

use chokepoint_core as core;
use napi::bindgen_prelude::*;
use napi_derive::napi;

#[napi(object, js_name = "Diagnostic")]
pub struct JsDiagnostic {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub code: String,
    pub message: String,
}

#[napi(object, js_name = "ConfigStatus")]
pub struct JsConfigStatus {
    pub path: String,
    /// `loaded`, `missing` or `invalid`.
    pub status: String,
}

#[napi(object, js_name = "EngineInfo")]
pub struct JsEngineInfo {
    pub version: String,
    pub workspace_root: String,
    pub hooks: JsConfigStatus,
    pub intents: JsConfigStatus,
    pub hook_count: u32,
    pub events: Vec<String>,
    pub task_types: Vec<String>,
    pub intent_ids: Vec<String>,
    pub diagnostics: Vec<JsDiagnostic>,
}

/// One event as the extension hands it to the chain.
#[napi(object, js_name = "Event")]
pub struct JsEvent {
    /// A canonical event name, e.g. `PreToolUse`.
    pub event: String,
    pub tool: Option<String>,
    /// The subject hooks judge: tool input on `PreToolUse`, tool result on `PostToolUse`, ...
    pub input: Option<serde_json::Value>,
    /// Workspace-relative paths the event touches (for path matchers).
    pub paths: Option<Vec<String>>,
    pub task_type: Option<String>,
    pub session_id: Option<String>,
    /// The agent acting (`claude-code`, ...), recorded in the trace with the session.
    pub agent_id: Option<String>,
    pub task_id: Option<String>,
    pub plan_id: Option<String>,
    /// The turn within the task (0-based).
    pub turn: Option<u32>,
    /// The model that produced the action, recorded in the trace.
    pub model: Option<String>,
    /// Set on the events host hooks receive. Pass the event (or this value) back to the engine for work
    /// a hook derives from it, and that work does not re-enter the hooks.
    pub hook_depth: Option<u32>,
}

#[napi(object, js_name = "HookOutcome")]
pub struct JsHookOutcome {
    pub hook: String,
    /// `allow`, `deny`, `ask`, `modify`, `failed_open` or `failed_closed`.
    pub outcome: String,
    pub duration_ns: f64,
    /// Why the hook failed, for the two failure outcomes.
    pub error: Option<String>,
}

#[napi(object, js_name = "Evaluation")]
pub struct JsEvaluation {
    /// `allow`, `deny` or `ask`.
    pub decision: String,
    /// The denial's reason, or the asks' reasons joined.
    pub reason: Option<String>,
    pub remediation: Option<String>,
    pub suggested_tool: Option<String>,
    /// The rewritten subject, when a hook modified it and nothing denied.
    pub modified: Option<serde_json::Value>,
    /// Context hooks add for the model, in chain order. Absent when empty.
    pub additional_context: Option<Vec<String>>,
    /// The hooks' outcomes, as `EvaluateOptions.outcomes` asks (by default the deciding ones: every
    /// outcome but a plain allow). Absent when empty. The trace records all of them regardless.
    pub outcomes: Option<Vec<JsHookOutcome>>,
    /// Output of `pipe_output` hooks from this run (on `Error`: for the recovery prompt). Absent when empty.
    pub piped: Option<Vec<JsPiped>>,
    /// Values hooks reported, e.g. `pr_url`. Absent when empty.
    pub context: Option<std::collections::HashMap<String, String>>,
    /// Present (true) only when requested from inside a running hook: the chain did not run again.
    pub reentered: Option<bool>,
}

#[napi(object, js_name = "EvaluateOptions")]
pub struct JsEvaluateOptions {
    /// `deciding` (default): outcomes other than a plain allow; `all`; or `none`.
    pub outcomes: Option<String>,
}

/// Which outcomes cross back to JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    All,
    Deciding,
    None,
}

impl Detail {
    pub fn from_options(options: Option<JsEvaluateOptions>) -> Result<Detail> {
        match options.and_then(|o| o.outcomes).as_deref() {
            None | Some("deciding") => Ok(Detail::Deciding),
            Some("all") => Ok(Detail::All),
            Some("none") => Ok(Detail::None),
            Some(other) => Err(Error::new(Status::InvalidArg, format!("unknown outcomes option `{other}`; use all, deciding or none"))),
        }
    }
}

/// The ids and context of an event on the synchronous path (all optional).
#[napi(object, js_name = "EventContext")]
pub struct JsEventContext {
    pub session_id: Option<String>,
    pub agent_id: Option<String>,
    pub task_id: Option<String>,
    pub plan_id: Option<String>,
    pub turn: Option<u32>,
    pub task_type: Option<String>,
    /// The model that produced the action, recorded in the trace.
    pub model: Option<String>,
    pub hook_depth: Option<u32>,
}

/// Builds a core event from the positional arguments of the synchronous entry.
pub fn event_from_parts(
    name: &str,
    tool: Option<String>,
    paths: Option<Vec<String>>,
    context: Option<JsEventContext>,
) -> Result<core::Event> {
    let kind = name.parse::<core::EventKind>().map_err(|e| Error::new(Status::InvalidArg, e))?;
    let mut event = core::Event::new(kind);
    event.tool = tool;
    event.paths = paths.unwrap_or_default();
    if let Some(c) = context {
        event.ids.session = c.session_id;
        event.ids.agent = c.agent_id;
        event.ids.task = c.task_id;
        event.ids.plan = c.plan_id;
        event.ids.turn = c.turn;
        event.ids.model = c.model;
        event.task_type = c.task_type;
        event.depth = c.hook_depth.unwrap_or(0);
    }
    Ok(event)
}

#[napi(object, js_name = "Piped")]
pub struct JsPiped {
    pub hook: String,
    pub text: String,
}

/// Who holds an intent (a lease in the workspace's state database).
#[napi(object, js_name = "IntentHolder")]
pub struct JsIntentHolder {
    pub intent_id: String,
    pub session_id: String,
    pub agent_id: Option<String>,
    /// Unix milliseconds.
    pub since: f64,
    pub expires: f64,
}

impl From<core::leases::Lease> for JsIntentHolder {
    fn from(l: core::leases::Lease) -> Self {
        JsIntentHolder {
            intent_id: l.intent,
            session_id: l.session,
            agent_id: l.agent,
            since: l.acquired_at_ms as f64,
            expires: l.expires_at_ms as f64,
        }
    }
}

/// An approved `scope_expansion_request`.
#[napi(object, js_name = "ScopeExpansion")]
pub struct JsScopeExpansion {
    pub session_id: String,
    pub intent_id: String,
    pub paths: Vec<String>,
    pub justification: String,
    /// Who approved it: `human`, a policy's name, a reviewer.
    pub approved_by: String,
    /// Also add the paths to the intent's owned_scope in active_intents.yaml.
    pub save: Option<bool>,
}

impl JsScopeExpansion {
    pub fn into_core(self) -> (core::scope_expansion::Expansion, bool) {
        let expansion = core::scope_expansion::Expansion {
            session: self.session_id,
            intent: self.intent_id,
            paths: self.paths,
            justification: self.justification,
            approved_by: self.approved_by,
            approved_at_ms: core::clock::now_ms(),
        };
        (expansion, self.save.unwrap_or(false))
    }
}

/// A shell command to run contained (`Engine.runContained`).
#[napi(object, js_name = "ContainedCommand")]
pub struct JsContainedCommand {
    pub session_id: String,
    /// Program and arguments (no shell unless the program is one: `["sh", "-c", script]`).
    pub argv: Vec<String>,
    /// Working directory; the workspace root when absent.
    pub cwd: Option<String>,
    /// Milliseconds before the command's whole process group is killed.
    pub timeout_ms: Option<u32>,
}

/// A path a contained command changed.
#[napi(object, js_name = "ContainedChange")]
pub struct JsContainedChange {
    pub path: String,
    /// `created`, `modified`, `deleted` or `type_changed`.
    pub kind: String,
    /// Why it could not be undone (only in `notReverted`).
    pub reason: Option<String>,
}

/// What a contained command did, and what containment did about it.
#[napi(object, js_name = "ContainedResult")]
pub struct JsContainedResult {
    /// Null when it timed out or a signal ended it.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Stopped by `Engine.cancelContained` (the group was killed).
    pub cancelled: bool,
    pub stdout: String,
    pub stderr: String,
    /// `enforced`, `partial` or `unavailable` (Landlock).
    pub confinement: String,
    pub allowed: Vec<JsContainedChange>,
    pub reverted: Vec<JsContainedChange>,
    pub not_reverted: Vec<JsContainedChange>,
    /// The tool error for the agent when something outside the scope was undone or blocked.
    pub tool_error: Option<String>,
    /// What could not be applied (no Landlock, files not held, ...), for the tool result and the trace.
    pub notes: Vec<String>,
    pub duration_ms: f64,
}

impl From<core::containment::ContainReport> for JsContainedResult {
    fn from(r: core::containment::ContainReport) -> Self {
        let change = |c: &core::snapshot::Change, reason: Option<String>| JsContainedChange {
            path: c.path.clone(),
            kind: c.kind.as_str().to_owned(),
            reason,
        };
        let (stdout, stderr) = r.output.as_ref().map_or((String::new(), String::new()), |o| {
            (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
        });
        JsContainedResult {
            exit_code: r.exit_code(),
            timed_out: r.timed_out,
            cancelled: r.cancelled,
            stdout,
            stderr,
            confinement: match r.confinement {
                core::sandbox::Confinement::Enforced { .. } => "enforced",
                core::sandbox::Confinement::Partial { .. } => "partial",
                core::sandbox::Confinement::Unavailable { .. } => "unavailable",
            }
            .to_owned(),
            allowed: r.allowed.iter().map(|c| change(c, None)).collect(),
            reverted: r.reverted.iter().map(|c| change(c, None)).collect(),
            not_reverted: r.not_reverted.iter().map(|n| change(&n.change, Some(n.reason.clone()))).collect(),
            tool_error: r.tool_error(),
            notes: r.notes(),
            duration_ms: r.duration.as_secs_f64() * 1e3,
        }
    }
}

/// What a host hook answers.
#[napi(object, js_name = "HookAnswer")]
pub struct JsHookAnswer {
    /// `allow`, `deny`, `ask` or `modify`.
    pub decision: String,
    pub reason: Option<String>,
    pub remediation: Option<String>,
    pub suggested_tool: Option<String>,
    /// The rewritten subject, with `modify`.
    pub modified: Option<serde_json::Value>,
    pub additional_context: Option<String>,
}

/// Where and how a host hook runs.
#[napi(object, js_name = "HostHookSpec")]
pub struct JsHostHookSpec {
    /// Unique among host hooks; shown in outcomes and the trace.
    pub name: String,
    pub events: Vec<String>,
    /// `critical`, `high`, `normal` (default) or `low`.
    pub priority: Option<String>,
    /// `closed` or `open`; default by priority.
    pub failure: Option<String>,
    /// Anchored regular expression over the tool name.
    pub tool: Option<String>,
    pub paths: Option<Vec<String>>,
}

impl JsHostHookSpec {
    pub fn try_into_core(self) -> Result<core::Registration> {
        let invalid = |m: String| Error::new(Status::InvalidArg, m);
        let priority = match self.priority.as_deref().unwrap_or("normal") {
            "critical" => core::Priority::Critical,
            "high" => core::Priority::High,
            "normal" => core::Priority::Normal,
            "low" => core::Priority::Low,
            other => return Err(invalid(format!("unknown priority `{other}`"))),
        };
        let failure = match self.failure.as_deref() {
            None => None,
            Some("closed") => Some(core::FailureMode::Closed),
            Some("open") => Some(core::FailureMode::Open),
            Some(other) => return Err(invalid(format!("unknown failure mode `{other}`"))),
        };
        let events =
            self.events.iter().map(|e| e.parse::<core::EventKind>()).collect::<std::result::Result<Vec<_>, _>>().map_err(invalid)?;
        let matcher = core::Matcher::new(self.tool.as_deref(), &self.paths.unwrap_or_default()).map_err(|e| invalid(e.to_string()))?;
        Ok(core::Registration { hook: core::HookImpl::Host(self.name.clone()), name: self.name, priority, failure, events, matcher })
    }
}

impl JsHookAnswer {
    pub fn try_into_core(self) -> std::result::Result<core::HookAnswer, core::HookFailure> {
        let denial = || core::Denial {
            reason: self.reason.clone().unwrap_or_else(|| "denied by hook".into()),
            remediation: self.remediation.clone(),
            suggested_tool: self.suggested_tool.clone(),
        };
        let answer = match self.decision.as_str() {
            "allow" => core::Answer::Allow,
            "deny" => core::Answer::Deny(denial()),
            "ask" => core::Answer::Ask { reason: self.reason.clone().unwrap_or_else(|| "the hook asks for a decision".into()) },
            "modify" => core::Answer::Modify(
                self.modified.clone().ok_or_else(|| core::HookFailure::BadAnswer("`modify` without `modified`".into()))?,
            ),
            other => return Err(core::HookFailure::BadAnswer(format!("unknown decision `{other}`"))),
        };
        Ok(core::HookAnswer { answer, additional_context: self.additional_context })
    }
}

impl From<&core::Event> for JsEvent {
    fn from(e: &core::Event) -> Self {
        JsEvent {
            event: e.kind.as_str().to_owned(),
            tool: e.tool.clone(),
            input: Some(e.subject.clone()),
            paths: Some(e.paths.clone()),
            task_type: e.task_type.clone(),
            session_id: e.ids.session.clone(),
            agent_id: e.ids.agent.clone(),
            task_id: e.ids.task.clone(),
            plan_id: e.ids.plan.clone(),
            turn: e.ids.turn,
            model: e.ids.model.clone(),
            hook_depth: Some(e.depth + 1),
        }
    }
}

impl JsEvent {
    pub fn try_into_core(self) -> Result<core::Event> {
        let kind = self.event.parse::<core::EventKind>().map_err(|e| Error::new(Status::InvalidArg, e))?;
        Ok(core::Event {
            kind,
            ids: core::EventIds {
                session: self.session_id,
                agent: self.agent_id,
                task: self.task_id,
                plan: self.plan_id,
                turn: self.turn,
                model: self.model,
                intent: None,
            },
            tool: self.tool,
            task_type: self.task_type,
            paths: self.paths.unwrap_or_default(),
            subject: self.input.unwrap_or(serde_json::Value::Null),
            depth: self.hook_depth.unwrap_or(0),
            ..core::Event::new(kind)
        })
    }
}

fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

fn path_string(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

impl From<core::Diagnostic> for JsDiagnostic {
    fn from(d: core::Diagnostic) -> Self {
        JsDiagnostic { file: path_string(&d.file), line: d.line, column: d.column, code: d.code.to_owned(), message: d.message }
    }
}

impl From<core::ConfigStatus> for JsConfigStatus {
    fn from(s: core::ConfigStatus) -> Self {
        JsConfigStatus { path: path_string(&s.path), status: s.status.as_str().to_owned() }
    }
}

impl From<core::EngineInfo> for JsEngineInfo {
    fn from(i: core::EngineInfo) -> Self {
        JsEngineInfo {
            version: i.version.to_owned(),
            workspace_root: path_string(&i.workspace_root),
            hooks: i.hooks.into(),
            intents: i.intents.into(),
            hook_count: i.hook_count as u32,
            events: i.events.iter().map(|e| e.as_str().to_owned()).collect(),
            task_types: i.task_types,
            intent_ids: i.intent_ids,
            diagnostics: i.diagnostics.into_iter().map(Into::into).collect(),
        }
    }
}

impl JsEvaluation {
    pub fn from_core(e: core::Evaluation, detail: Detail) -> Self {
        let (reason, remediation, suggested_tool) = match &e.decision {
            core::Decision::Allow => (None, None, None),
            core::Decision::Deny(d) => (Some(d.reason.clone()), d.remediation.clone(), d.suggested_tool.clone()),
            core::Decision::Ask { reasons } => (Some(reasons.join("; ")), None, None),
        };
        JsEvaluation {
            decision: e.decision.as_str().to_owned(),
            reason,
            remediation,
            suggested_tool,
            modified: e.modified,
            additional_context: non_empty(e.additional_context),
            outcomes: non_empty(
                e.outcomes
                    .into_iter()
                    .filter(|o| match detail {
                        Detail::All => true,
                        Detail::Deciding => o.kind != core::OutcomeKind::Allowed,
                        Detail::None => false,
                    })
                    .map(|o| JsHookOutcome {
                        hook: o.hook.to_string(),
                        outcome: o.kind.as_str().to_owned(),
                        duration_ns: o.duration_ns as f64,
                        error: match o.kind {
                            core::OutcomeKind::FailedOpen(f) | core::OutcomeKind::FailedClosed(f) => Some(f.to_string()),
                            _ => None,
                        },
                    })
                    .collect(),
            ),
            piped: non_empty(e.piped.into_iter().map(|p| JsPiped { hook: p.hook, text: p.text }).collect()),
            context: (!e.context.is_empty()).then(|| e.context.into_iter().collect()),
            reentered: e.reentered.then_some(true),
        }
    }
}

/// Which trace records `Engine.traceRecent` returns; every field set must match.
#[napi(object, js_name = "TraceFilter")]
pub struct JsTraceFilter {
    pub intent: Option<String>,
    /// A workspace-relative path, or a glob (`src/**/*.ts`): the records that wrote a matching file.
    pub file: Option<String>,
    pub session: Option<String>,
    /// Records at or after this time: RFC 3339, a date, or unix milliseconds as a string.
    pub since: Option<String>,
    /// At most this many, the newest; all when absent.
    pub limit: Option<u32>,
}

impl JsTraceFilter {
    /// The core filter, newest first (as a log is read).
    pub fn into_core(filter: Option<JsTraceFilter>) -> core::ledger::index::Filter {
        let f = filter.unwrap_or(JsTraceFilter { intent: None, file: None, session: None, since: None, limit: None });
        core::ledger::index::Filter {
            intent: f.intent,
            file: f.file,
            session: f.session,
            since: f.since,
            kind: None,
            limit: f.limit.map(|l| l as usize),
            newest_first: true,
        }
    }
}

/// Lines `start..=end` (1-based) a write put in a file.
#[napi(object, js_name = "TraceRange")]
pub struct JsTraceRange {
    pub start: u32,
    pub end: u32,
}

#[napi(object, js_name = "TraceFile")]
pub struct JsTraceFile {
    /// Workspace-relative, `/`-separated.
    pub path: String,
    /// Empty when the write's ranges are unknown or it deleted lines only.
    pub ranges: Vec<JsTraceRange>,
}

/// One record of the trace ledger, as the sidebar lists it.
#[napi(object, js_name = "TraceEntry")]
pub struct JsTraceEntry {
    pub seq: f64,
    /// RFC 3339 UTC with milliseconds.
    pub time: String,
    /// `tool_call`, `lifecycle`, `approval`, `containment` or `external`.
    pub kind: String,
    pub event: Option<String>,
    pub tool: Option<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub intent: Option<String>,
    /// `allow`, `deny` or `ask`, when the record is about a judged event.
    pub decision: Option<String>,
    pub reason: Option<String>,
    pub files: Vec<JsTraceFile>,
}

impl From<core::ledger::Record> for JsTraceEntry {
    fn from(r: core::ledger::Record) -> Self {
        let kind = serde_json::to_value(r.kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        let (decision, reason) = r.decision.map_or((None, None), |d| (Some(d.decision), d.reason));
        JsTraceEntry {
            seq: r.seq as f64,
            time: r.time,
            kind,
            event: r.event,
            tool: r.tool,
            session: r.session,
            agent: r.agent,
            model: r.model,
            intent: r.intent,
            decision,
            reason,
            files: r
                .files
                .into_iter()
                .map(|f| JsTraceFile {
                    path: f.path,
                    ranges: f.ranges.into_iter().map(|x| JsTraceRange { start: x.start, end: x.end }).collect(),
                })
                .collect(),
        }
    }
}

/// The record whose write holds a line now.
#[napi(object, js_name = "BlameOrigin")]
pub struct JsBlameOrigin {
    pub seq: f64,
    pub time: String,
    pub intent: Option<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub tool: Option<String>,
}

/// One line of a file as it is on disk now, and the recorded write that explains it.
#[napi(object, js_name = "BlameResult")]
pub struct JsBlameResult {
    /// 1-based.
    pub line: u32,
    pub text: String,
    /// Absent when no recorded write explains the line (typed by hand, or written outside the
    /// chokepoint, or edited since).
    pub origin: Option<JsBlameOrigin>,
}

impl From<core::ledger::blame::BlameLine> for JsBlameResult {
    fn from(l: core::ledger::blame::BlameLine) -> Self {
        JsBlameResult {
            line: l.line,
            text: l.text,
            origin: l.origin.map(|o| JsBlameOrigin {
                seq: o.seq as f64,
                time: o.time,
                intent: o.intent,
                session: o.session,
                agent: o.agent,
                model: o.model,
                tool: o.tool,
            }),
        }
    }
}

/// A 1-based line number from JavaScript, where a number can be negative, fractional or huge.
pub fn line_number(line: f64) -> Result<u32> {
    if line.fract() == 0.0 && line >= 1.0 && line <= f64::from(u32::MAX) {
        Ok(line as u32)
    } else {
        Err(Error::new(Status::InvalidArg, format!("`{line}` is not a line number (they start at 1)")))
    }
}

/// A whole number of tokens (or a turn number) from JavaScript, where a number can be negative,
/// fractional, NaN or huge: an under-count must not slip through as a silent 0.
pub fn whole(value: f64, what: &str) -> Result<u32> {
    if value.fract() == 0.0 && value >= 0.0 && value <= f64::from(u32::MAX) {
        Ok(value as u32)
    } else {
        Err(Error::new(Status::InvalidArg, format!("`{value}` is not a valid {what} (a whole number from 0)")))
    }
}

/// What `tokenizerInfo` says about a model's counts.
#[napi(object, js_name = "TokenizerInfo")]
pub struct JsTokenizerInfo {
    #[napi(ts_type = "'o200k' | 'cl100k' | 'claude' | 'gemini' | 'llama' | 'unknown'")]
    pub family: String,
    /// Whether counts come from the model's own tokenizer; otherwise they are an estimate that errs high.
    pub exact: bool,
    /// The tokens `countTokens` adds to each text for its message framing.
    pub message_overhead: u32,
}

impl From<core::tokens::TokenCounter> for JsTokenizerInfo {
    fn from(counter: core::tokens::TokenCounter) -> Self {
        JsTokenizerInfo {
            family: counter.family().name().to_owned(),
            exact: counter.is_exact(),
            message_overhead: counter.message_overhead(),
        }
    }
}

/// One piece of the prompt, for `planCompaction`.
#[napi(object, js_name = "CompactionItem")]
pub struct JsCompactionItem {
    /// The system prompt, the intent context and pinned items are never sacrificed; turns go first
    /// (oldest first), then constraints, then acceptance criteria.
    #[napi(ts_type = "'systemPrompt' | 'intentContext' | 'constraint' | 'acceptanceCriterion' | 'turn'")]
    pub kind: String,
    /// Its tokens as `countTokens` gave them (message framing included).
    pub tokens: f64,
    /// For `turn` items, the turn's number (larger is newer). Items with the same number are one
    /// turn: the user's message, the assistant's with its tool calls, the tool results.
    pub turn: Option<f64>,
    /// Never sacrificed (for a turn: the whole turn).
    pub pinned: Option<bool>,
}

impl JsCompactionItem {
    pub fn try_into_core(self) -> Result<core::compaction::Item> {
        use core::compaction::ItemKind;
        let kind = match self.kind.as_str() {
            "systemPrompt" => ItemKind::SystemPrompt,
            "intentContext" => ItemKind::IntentContext,
            "constraint" => ItemKind::Constraint,
            "acceptanceCriterion" => ItemKind::AcceptanceCriterion,
            "turn" => match self.turn {
                Some(turn) => ItemKind::Turn(whole(turn, "turn number")?),
                None => return Err(Error::new(Status::InvalidArg, "a `turn` item needs its `turn` number".to_owned())),
            },
            other => {
                return Err(Error::new(
                    Status::InvalidArg,
                    format!("unknown item kind `{other}`; use systemPrompt, intentContext, constraint, acceptanceCriterion or turn"),
                ));
            }
        };
        Ok(core::compaction::Item { kind, tokens: whole(self.tokens, "token count")?, pinned: self.pinned.unwrap_or(false) })
    }
}

/// How `planCompaction` plans; every field is optional (the defaults in parentheses).
#[napi(object, js_name = "CompactionPolicy")]
pub struct JsCompactionPolicy {
    /// The newest turns kept if at all possible, before any constraint or criterion goes (4).
    pub keep_recent_turns: Option<f64>,
    /// The most the summary may cost, in tokens (2048).
    pub summary_max_tokens: Option<f64>,
    /// The summary is estimated at 1/ratio of what it covers, up to the maximum (10).
    pub summary_ratio: Option<f64>,
    /// The most tokens of turns one summariser call reads (32000).
    pub summary_group_tokens: Option<f64>,
}

impl JsCompactionPolicy {
    pub fn into_core(policy: Option<JsCompactionPolicy>) -> Result<core::compaction::Policy> {
        let default = core::compaction::Policy::default();
        let Some(p) = policy else { return Ok(default) };
        let or = |value: Option<f64>, what: &str, default: u32| value.map_or(Ok(default), |v| whole(v, what));
        Ok(core::compaction::Policy {
            keep_recent_turns: or(p.keep_recent_turns, "keepRecentTurns", default.keep_recent_turns)?,
            summary_max_tokens: or(p.summary_max_tokens, "summaryMaxTokens", default.summary_max_tokens)?,
            summary_ratio: or(p.summary_ratio, "summaryRatio", default.summary_ratio)?,
            summary_group_tokens: or(p.summary_group_tokens, "summaryGroupTokens", default.summary_group_tokens)?,
        })
    }
}

/// A run of summarised turns that one summariser call reads.
#[napi(object, js_name = "SummaryGroup")]
pub struct JsSummaryGroup {
    /// The group is the `summarize` items whose turn is in `firstTurn..=lastTurn`.
    pub first_turn: u32,
    pub last_turn: u32,
    pub tokens: f64,
}

/// The summary that replaces the summarised turns, placed before the oldest kept turn.
#[napi(object, js_name = "CompactionSummary")]
pub struct JsCompactionSummary {
    /// Its estimated cost, counted in `after`: ask the summariser for at most this many tokens.
    pub tokens: u32,
    /// Oldest first.
    pub groups: Vec<JsSummaryGroup>,
}

/// The pieces never sacrificed exceed the budget on their own.
#[napi(object, js_name = "CompactionOverBudget")]
pub struct JsCompactionOverBudget {
    pub budget: u32,
    /// What the system prompt, the intent context and the pinned items take.
    pub required: f64,
    pub over: f64,
    /// For the transcript: "the system prompt, intent context and pinned items take ...".
    pub message: String,
}

/// What `planCompaction` answers.
#[napi(object, js_name = "CompactionPlan")]
pub struct JsCompactionPlan {
    /// Per item, in the order given. Empty when `overBudget` is set.
    #[napi(ts_type = "Array<'keep' | 'summarize' | 'drop'>")]
    pub actions: Vec<String>,
    /// Present when turns are summarised.
    pub summary: Option<JsCompactionSummary>,
    /// Tokens: the prompt as given, as planned (kept items and the summary's cost), dropped, summarised.
    pub before: f64,
    pub after: f64,
    pub dropped: f64,
    pub summarized: f64,
    pub dropped_items: u32,
    pub summarized_items: u32,
    /// How many of the newest turns (pinned ones aside) are kept verbatim.
    pub recent_turns_kept: u32,
    /// Present when even the pieces never sacrificed exceed the budget: nothing was planned.
    pub over_budget: Option<JsCompactionOverBudget>,
}

impl JsCompactionPlan {
    pub fn from_core(plan: std::result::Result<core::compaction::Plan, core::compaction::OverBudget>, before: u64) -> Self {
        use core::compaction::Action;
        match plan {
            Ok(plan) => JsCompactionPlan {
                actions: plan
                    .actions
                    .iter()
                    .map(|a| match a {
                        Action::Keep => "keep",
                        Action::Summarize => "summarize",
                        Action::Drop => "drop",
                    })
                    .map(str::to_owned)
                    .collect(),
                summary: plan.summary.map(|s| JsCompactionSummary {
                    tokens: s.tokens,
                    groups: s
                        .groups
                        .into_iter()
                        .map(|g| JsSummaryGroup { first_turn: g.first_turn, last_turn: g.last_turn, tokens: g.tokens as f64 })
                        .collect(),
                }),
                before: plan.totals.before as f64,
                after: plan.totals.after as f64,
                dropped: plan.totals.dropped as f64,
                summarized: plan.totals.summarized as f64,
                dropped_items: plan.totals.dropped_items,
                summarized_items: plan.totals.summarized_items,
                recent_turns_kept: plan.recent_turns_kept,
                over_budget: None,
            },
            Err(over) => JsCompactionPlan {
                actions: Vec::new(),
                summary: None,
                before: before as f64,
                after: before as f64,
                dropped: 0.0,
                summarized: 0.0,
                dropped_items: 0,
                summarized_items: 0,
                recent_turns_kept: 0,
                over_budget: Some(JsCompactionOverBudget {
                    budget: over.budget,
                    required: over.required as f64,
                    over: over.over() as f64,
                    message: over.to_string(),
                }),
            },
        }
    }
}

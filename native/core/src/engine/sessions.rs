//! The sessions working in a workspace, as a person watching it sees them (the sidebar's Sessions
//! section, `chokepoint sessions`): every session seen in the trace lately or holding a lease, with
//! its agent, sub-agents and model, the intent it holds and until when (or since when its lease is
//! idle: its turn ended and nobody took the intent, `SessionView::lease_idle`), its last actions, its
//! allowed and denied tool calls and its last denial; and a person's revocation of a session's lease.
//!
//! A read model, derived and never stored: the trace's index says what each session did
//! (`ledger::activity`), the lease table who holds what and which leases a person revoked. The
//! window is bounded so a refresh on every change of the trace stays cheap whatever the ledger's
//! length: the records of the last [`WINDOW`], at most [`MAX_SESSIONS`] sessions (the most recently
//! active), the last [`LAST_ACTIONS`] actions of each, read back from the newest [`READ_BACK`]
//! records of the session (where its sub-agents and model are found).
//!
//! **Every worktree.** In a git repository the lease table is the one every worktree shares
//! (`Sidecar::coordination_db`), so each leaseholder is listed whichever worktree it works in; the
//! activity of another worktree's sessions is read from that worktree's own trace index (its ledger
//! is its own), found through git's list of worktrees (`Repo::worktrees`). Each session says where
//! it works ([`SessionView::checkout`]): its lease's worktree and branch, else the worktree whose
//! trace holds its records. A worktree whose index cannot be read is left out, not an error: this
//! view must not fail because another checkout is broken (its own engine says so there).
//!
//! The window's sessions are counted by one aggregate query over the index's time range; then come
//! the sessions holding a lease (live, or idle since their turn's end within the window) or revoked.
//! A session's agent is labelled from its id (`Agent::as_str`: "VS Code agent", "Chokepoint agent"
//! for ours). A `PreToolUse` record carries no paths (they are in its `PostToolUse` record), so an
//! action's summary is what its record holds: the files written, a contained command's argv, a
//! revocation.
//!
//! **A revocation is recorded, and in force even when it is not.** `Engine::revoke_lease` revokes
//! first (`scope::leases`, which owns the revocation's rules), forgets the session's cached selection
//! in this engine at once, then records a `lifecycle` record deciding `revoked` (`data.revoked`: by,
//! reason, lease version), durable before it returns; a ledger that cannot be written leaves the
//! revocation in force and says it was not recorded. The `by` adds the pid and terminal to the name
//! the person gives.

use crate::base::sidecar::Sidecar;
use crate::engine::engine::Engine;
use crate::engine::trace::TraceError;
use crate::ledger::index::{Filter, Index};
use crate::ledger::{Record, RecordKind, RecordedDecision};
use crate::model::external_events::Agent;
use crate::scope::leases::{Checkout, Lease, Revocation};
use std::collections::BTreeSet;
use std::time::Duration;

/// How far back the trace is read for sessions: a day covers a working session of any agent and
/// keeps the counting to the index's time range.
pub const WINDOW: Duration = Duration::from_secs(24 * 3600);
/// At most this many sessions, the most recently active (leaseholders and revoked sessions are
/// always listed, besides).
pub const MAX_SESSIONS: usize = 50;
/// The actions shown per session, newest first.
pub const LAST_ACTIONS: usize = 5;
/// The records read back per session for its actions, sub-agents and model.
pub const READ_BACK: usize = 20;

/// The agent id of our own runtime's sessions (the extension's agent), which are plain ids.
pub const OUR_AGENT: &str = "chokepoint";

/// One session as the Sessions view lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionView {
    /// `<agent>:<its session id>` for another agent's session, our runtime's id for ours.
    pub session: String,
    /// The agent's id (`claude`, `codex`, `gemini`, `vscode`, `chokepoint`), when known.
    pub agent: Option<String>,
    /// The agent's name for people: `Claude Code`, `Codex CLI`, `VS Code's agent` (the agent table's names), `Chokepoint agent`.
    pub label: String,
    /// The sub-agents seen acting in the session (`<type>:<id>`), in the records read back.
    pub subagents: Vec<String>,
    /// The newest model the session's records name.
    pub model: Option<String>,
    /// The lease the session holds now (its intent and expiry), if any; or the lease whose time is
    /// up and that nobody took since ([`SessionView::lease_idle`]).
    pub lease: Option<Lease>,
    /// The lease's time is up (the session's turn ended and it yielded, or it lapsed; since its
    /// `expires_at_ms`) and nobody took the intent since: any session may take it now, and this one
    /// renews it at its next call if nobody did.
    pub lease_idle: bool,
    /// Where it works: the worktree and branch its lease names, else the worktree whose trace holds
    /// its records (and the branch checked out there now). `None` outside a git repository.
    pub checkout: Option<Checkout>,
    /// A person's revocation of its lease that the session has not answered by selecting again.
    pub revoked: Option<Revocation>,
    /// Newest first, at most [`LAST_ACTIONS`], lifecycle events (turns, task and session
    /// boundaries) left out unless a gate refused at one.
    pub actions: Vec<SessionAction>,
    /// Records of the session in the window.
    pub records: u64,
    /// Tool calls allowed and denied in the window.
    pub allowed: u64,
    pub denied: u64,
    /// The newest tool call in the window that was denied: one of those `denied` counts.
    pub last_denial: Option<SessionAction>,
    /// When the session last acted or renewed its lease (unix milliseconds).
    pub last_seen_ms: Option<u64>,
}

/// One record of a session, in short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionAction {
    pub seq: u64,
    /// RFC 3339 UTC with milliseconds.
    pub time: String,
    /// What the record is about: a tool call, a lifecycle event, an approval, ...
    pub kind: RecordKind,
    pub event: Option<String>,
    pub tool: Option<String>,
    /// What it touched: the files a write changed, a contained command's argv, a revocation.
    pub summary: Option<String>,
    /// `allow`, `deny`, `ask`; an approval's status; `revoked` for a person's revocation.
    pub decision: Option<String>,
    pub reason: Option<String>,
    pub subagent: Option<String>,
}

/// What the ledger's revocation record says in its `decision`.
pub const REVOKED: &str = "revoked";

impl Engine {
    /// The sessions working in the workspace now: those with records in the last [`WINDOW`] (the most
    /// recently active first, at most [`MAX_SESSIONS`]), then those holding a lease or revoked with
    /// no record in it. An ungoverned workspace has none. `Err` when the index or the lease table
    /// cannot be read.
    pub fn sessions(&self) -> Result<Vec<SessionView>, TraceError> {
        if !self.sidecar().exists() {
            return Ok(Vec::new());
        }
        let leases = self.gatekeeper().holders().map_err(|e| TraceError::from(format!("cannot read the leases: {e}")))?;
        let since = crate::base::clock::now_ms().saturating_sub(u64::try_from(WINDOW.as_millis()).unwrap_or(u64::MAX));
        // Leases yielded at a turn's end (or lapsed) within the window, which nobody took since; an
        // older one is a session long gone, not worth a line.
        let idle: Vec<Lease> = self
            .gatekeeper()
            .idle_holders()
            .map_err(|e| TraceError::from(format!("cannot read the leases: {e}")))?
            .into_iter()
            .filter(|l| l.expires_at_ms >= since)
            .collect();
        let revocations = self.gatekeeper().revocations().map_err(|e| TraceError::from(format!("cannot read the revoked leases: {e}")))?;
        let repo = self.sidecar().repo();
        let mut views = active_sessions(self.tracer().index()?, since, repo.map(Checkout::of))?;
        if let Some(repo) = repo {
            for other in repo.other_workspaces() {
                let Some(other) = crate::base::repo::Repo::discover(&other) else { continue };
                let Ok(found) = other_worktree(&other, since) else { continue };
                // A session is listed once, where it was found first (this worktree's own first).
                let new: Vec<SessionView> = found.into_iter().filter(|v| !views.iter().any(|seen| seen.session == v.session)).collect();
                views.extend(new);
            }
        }
        for view in &mut views {
            view.lease = leases.iter().find(|l| l.session == view.session).cloned();
            if view.lease.is_none() {
                view.lease = idle.iter().find(|l| l.session == view.session).cloned();
                view.lease_idle = view.lease.is_some();
            }
            view.revoked = revocations.iter().find(|r| r.session == view.session).cloned();
        }
        // Who holds or lost a lease is listed even when the window holds nothing of theirs (a session
        // that selected from a terminal and has not written yet).
        for (lease, is_idle) in leases.iter().map(|l| (l, false)).chain(idle.iter().map(|l| (l, true))) {
            if !views.iter().any(|v| v.session == lease.session) {
                let mut view = quiet(&lease.session, lease.agent.clone(), Some(lease.clone()), None);
                view.lease_idle = is_idle;
                views.push(view);
            }
        }
        for revocation in &revocations {
            if !views.iter().any(|v| v.session == revocation.session) {
                views.push(quiet(&revocation.session, revocation.agent.clone(), None, Some(revocation.clone())));
            }
        }
        for view in &mut views {
            if let Some(checkout) = view.lease.as_ref().and_then(|l| l.checkout.clone()) {
                view.checkout = Some(checkout);
            }
            if view.agent.is_none() {
                view.agent = view.lease.as_ref().and_then(|l| l.agent.clone()).or_else(|| agent_of_session(&view.session));
            }
            view.label = label(view.agent.as_deref());
            let renewed = view.lease.as_ref().map(|l| l.renewed_at_ms);
            view.last_seen_ms = view.last_seen_ms.max(renewed);
        }
        views.sort_by_key(|v| std::cmp::Reverse(v.last_seen_ms));
        Ok(views)
    }

    /// A person revokes `session`'s lease: released in the lease table and remembered there (who,
    /// when, why) for every process that judges the session's next write, then recorded in the
    /// ledger (durable before this returns). This engine's gatekeeper forgets the session's
    /// selection at once; another process's within `gatekeeper::RECHECK`. `None` when the session
    /// held no lease: nothing is revoked or recorded. `Err` when the lease table cannot be written,
    /// or the ledger cannot record a revocation that was made (which is said).
    pub fn revoke_lease(&self, session: &str, by: &str, reason: Option<&str>) -> Result<Option<Revocation>, TraceError> {
        let Some(revocation) = self.gatekeeper().revoke(session, by, reason).map_err(|e| TraceError::from(e.to_string()))? else {
            return Ok(None);
        };
        // The intent is free now: the shared brain says so.
        self.brain().refresh_later();
        let mut record = Record::new(RecordKind::Lifecycle);
        record.session = Some(revocation.session.clone());
        record.agent = revocation.agent.clone();
        record.intent = Some(revocation.intent.clone());
        record.decision = Some(RecordedDecision { decision: REVOKED.to_owned(), reason: Some(revocation.to_string()), hooks: Vec::new() });
        record.data = Some(serde_json::json!({
            "revoked": {
                "by": revocation.by,
                "reason": revocation.reason,
                "lease_version": revocation.version,
            }
        }));
        self.tracer()
            .append(record)
            .map_err(|e| TraceError::from(format!("the lease was revoked, but the revocation could not be recorded in the trace: {e}")))?;
        Ok(Some(revocation))
    }
}

/// The session id of `chokepoint doctor`'s probe of an agent's hooks (`agents::inspect::probe`):
/// `doctor-<pid>`, `<agent>:` before it once the hook names it. Its records stay in the trace, where
/// they show the hooks were tried; a session no agent worked in is not one a person watches.
pub fn probe_session(pid: u32) -> String {
    format!("doctor-{pid}")
}

fn is_probe(session: &str) -> bool {
    let id = session.split_once(':').map_or(session, |(_, id)| id);
    id.strip_prefix("doctor-").is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// The sessions with records in `index` since `since` (at most [`MAX_SESSIONS`], most recently active
/// first), each with its actions and counts, said to work in `checkout`; no lease yet. Doctor's
/// probes are left out.
fn active_sessions(index: &Index, since: u64, checkout: Option<Checkout>) -> Result<Vec<SessionView>, TraceError> {
    let activity = index.session_activity(since, MAX_SESSIONS).map_err(|e| TraceError::from(e.to_string()))?;
    let read = |e: crate::ledger::error::ReadError| TraceError::from(e.to_string());
    let mut views = Vec::with_capacity(activity.len());
    for active in activity.into_iter().filter(|a| !is_probe(&a.session)) {
        let filter = Filter { session: Some(active.session.clone()), limit: Some(READ_BACK), newest_first: true, ..Filter::default() };
        let found = index.query(&filter).map_err(read)?;
        // A record is named by its chain and its number in it: two chains (two worktrees, or one
        // before and after a checkout) both have a record 7.
        let last_denial = match (active.last_denial, active.last_denial_chain.as_deref()) {
            (Some(seq), Some(chain)) => match found.iter().find(|f| f.record.seq == seq && f.chain == chain) {
                Some(f) => Some(action(&f.record)),
                None => index.get_in(chain, seq).map_err(read)?.map(|f| action(&f.record)),
            },
            _ => None,
        };
        let records: Vec<Record> = found.into_iter().map(|f| f.record).collect();
        views.push(SessionView {
            session: active.session.clone(),
            agent: records.iter().find_map(|r| r.agent.clone()),
            label: String::new(),
            subagents: records.iter().filter_map(subagent).collect::<BTreeSet<_>>().into_iter().collect(),
            model: records.iter().find_map(|r| r.model.clone()),
            lease: None,
            lease_idle: false,
            checkout: checkout.clone(),
            revoked: None,
            // What it did, not when its turns began and ended (a gate that refused at one, such as
            // a failing completion gate, stays).
            actions: records.iter().filter(|r| !is_routine(r)).take(LAST_ACTIONS).map(action).collect(),
            records: active.records,
            allowed: active.allowed,
            denied: active.denied,
            last_denial,
            last_seen_ms: active.last_ms,
        });
    }
    Ok(views)
}

/// The active sessions of another worktree of the repository, from its own trace index (brought up
/// to date with its ledger, as its own engine would). Nothing when it is not governed or has never
/// recorded anything: no index is created for it.
fn other_worktree(repo: &crate::base::repo::Repo, since: u64) -> Result<Vec<SessionView>, TraceError> {
    let sidecar = Sidecar::new(repo.work_tree.join(&repo.subdir));
    if !sidecar.exists() || !crate::ledger::chains::any(&sidecar) {
        return Ok(Vec::new());
    }
    let index = Index::open(&sidecar).map_err(|e| TraceError::from(e.to_string()))?;
    index.catch_up().map_err(|e| TraceError::from(e.to_string()))?;
    active_sessions(&index, since, Some(Checkout::of(repo)))
}

/// A session listed for its lease or its revocation alone.
fn quiet(session: &str, agent: Option<String>, lease: Option<Lease>, revoked: Option<Revocation>) -> SessionView {
    SessionView {
        session: session.to_owned(),
        agent,
        label: String::new(),
        subagents: Vec::new(),
        model: None,
        last_seen_ms: revoked.as_ref().map(|r| r.at_ms),
        checkout: None,
        lease,
        lease_idle: false,
        revoked,
        actions: Vec::new(),
        records: 0,
        allowed: 0,
        denied: 0,
        last_denial: None,
    }
}

/// The agent an external session's id names (`claude:abc` → `claude`).
fn agent_of_session(session: &str) -> Option<String> {
    let (prefix, _) = session.split_once(':')?;
    Agent::from_id(prefix).map(|agent| agent.id().to_owned())
}

/// The agent's name for people, from its id.
pub fn label(agent: Option<&str>) -> String {
    match agent {
        Some(OUR_AGENT) => "Chokepoint agent".to_owned(),
        Some(id) => Agent::from_id(id).map_or_else(|| id.to_owned(), |agent| agent.as_str().to_owned()),
        None => "unknown agent".to_owned(),
    }
}

fn subagent(record: &Record) -> Option<String> {
    record.data.as_ref()?.get("subagent")?.as_str().map(str::to_owned)
}

/// A lifecycle event (a turn, a task or a session beginning or ending) that no gate refused.
fn is_routine(record: &Record) -> bool {
    record.kind == RecordKind::Lifecycle && record.decision.as_ref().is_none_or(|d| d.decision == "allow")
}

/// The most a summary says before it is cut (a long command, many files).
const SUMMARY_CHARS: usize = 160;

/// A record in short: what it touched is its files (a write's result, a contained command's changes),
/// else its command (containment), else who revoked a lease.
fn action(record: &Record) -> SessionAction {
    let data = record.data.as_ref();
    let summary = if !record.files.is_empty() {
        let paths: Vec<&str> = record.files.iter().take(3).map(|f| f.path.as_str()).collect();
        Some(match record.files.len().saturating_sub(paths.len()) {
            0 => paths.join(", "),
            more => format!("{} and {more} more", paths.join(", ")),
        })
    } else if let Some(argv) = data.and_then(|d| d.get("argv")).and_then(|a| a.as_array()) {
        Some(argv.iter().filter_map(|a| a.as_str()).collect::<Vec<_>>().join(" "))
    } else {
        data.and_then(|d| d.get("revoked"))
            .and_then(|r| r.get("by"))
            .and_then(|b| b.as_str())
            .map(|by| format!("lease on {} revoked by {by}", record.intent.as_deref().unwrap_or("its intent")))
    };
    SessionAction {
        seq: record.seq,
        time: record.time.clone(),
        kind: record.kind,
        event: record.event.clone(),
        tool: record.tool.clone(),
        summary: summary.map(|s| cut(&s)),
        decision: record.decision.as_ref().map(|d| d.decision.clone()),
        reason: record.decision.as_ref().and_then(|d| d.reason.clone()),
        subagent: subagent(record),
    }
}

/// `text` cut to [`SUMMARY_CHARS`] characters, marked when cut.
fn cut(text: &str) -> String {
    match text.char_indices().nth(SUMMARY_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

//! `chokepoint trace`: check the ledger's integrity, append an event of a script's own through the same
//! durable writer, and through the index (brought up to date first; rebuildable with `reindex`) show,
//! blame and export.
//!
//! `show --team` lists every machine's records from the team's database (`ledger::team_query`), after
//! copying this worktree's pending ones (`ledger::team_copy`): exit 2 without a team database
//! configured, 1 when it cannot be reached.
//!
//! `verify` exit codes say what is wrong with the first failing chain: 0 intact (records git explains
//! as not in this checkout are reported and pass), 10 edited, 11 deleted, 12 inserted, 13 reordered,
//! 14 truncated, 15 a torn tail; 1 when the ledger cannot be read; 2 usage. `reseal` moves the first
//! failing chain aside and starts a new one (exit 1, and nothing changed, for an intact ledger).

use crate::EXIT_CONFIG;
use chokepoint_core::Sidecar;
use chokepoint_core::engine::trace::TeamTraceError;
use chokepoint_core::ledger::index::{Filter, Index};
use chokepoint_core::ledger::team_query::TeamFilter;
use chokepoint_core::ledger::verify::ProblemKind;
use chokepoint_core::ledger::{Record, RecordKind};
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Check the whole ledger: every chain's hash chain, sequence and end, against the heads kept in
    /// the state database and outside the workspace; records git explains as not in this checkout
    /// (another branch, a stash, a reset) are reported, not failed. Names the first bad record; the
    /// exit code says what is wrong with it.
    Verify {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Append an event of your own (a CI run, a human commit) through the same durable writer the
    /// agents use; prints its sequence number once it is on disk.
    Record {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// A JSON object: `event` (its name) and any of `session`, `agent`, `task`, `intent`, `tool`,
        /// `model`, `files`; every other field is kept under `data`.
        #[arg(long)]
        event: String,
    },
    /// List records, newest first, through the index (brought up to date first); with `--team`, every
    /// machine's and worktree's records in the team's database, newest last.
    Show {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        #[arg(long)]
        intent: Option<String>,
        /// A workspace-relative path, or a glob (`src/**/*.ts`).
        #[arg(long)]
        file: Option<String>,
        #[arg(long)]
        session: Option<String>,
        /// RFC 3339 time, a date, or unix milliseconds.
        #[arg(long)]
        since: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// One JSON record a line, as the ledger holds them (with `--team`, each with its machine,
        /// worktree, branch, chain and hash).
        #[arg(long)]
        json: bool,
        /// Every machine's records from the team's database (coordination.url in hooks.yaml, or
        /// CHOKEPOINT_COORDINATION_URL), after this worktree's own are copied there; newest last.
        #[arg(long)]
        team: bool,
    },
    /// Which intent, session and model last wrote each line of FILE (or FILE:LINE), found by content
    /// hash even after the lines moved.
    Blame {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// `path` or `path:line`, relative to the workspace.
        target: String,
        #[arg(long)]
        json: bool,
    },
    /// Export the writes as Agent Trace v0.1 JSON.
    Export {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        #[arg(long, value_parser = ["agent-trace"], default_value = "agent-trace")]
        format: String,
    },
    /// Judge the recorded tool calls again against another hooks.yaml / active_intents.yaml and list
    /// the decisions that would change (allow -> deny, deny -> allow, -> ask), by hook and intent.
    /// Appends nothing to the ledger and takes no lease; command hooks are not run unless asked.
    Replay(crate::replay::ReplayArgs),
    /// Drop and rebuild the index from the ledger (the ledger is the source of truth).
    Reindex {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
    },
    /// The way forward from a chain that fails `verify`: move it aside as evidence
    /// (<chain>.sealed-<ms>.jsonl) and begin a new chain whose first record names it, its hash,
    /// what was wrong, who resealed it and why. Refused for an intact ledger.
    Reseal {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Why the chain is restarted (recorded).
        #[arg(long)]
        reason: String,
        /// Who reseals it (recorded); the user name by default.
        #[arg(long)]
        by: Option<String>,
    },
}

pub fn run(command: TraceCommand) -> ExitCode {
    match command {
        TraceCommand::Verify { workspace, json } => verify(&workspace, json),
        TraceCommand::Record { workspace, event } => record(&workspace, &event),
        TraceCommand::Show { workspace, intent, file, session, since, limit, json, team: true } => {
            if file.is_some() {
                return usage("--file is not available with --team: a file's history is this worktree's index's (drop --team)");
            }
            let since_ms = match since.as_deref().map(chokepoint_core::ledger::index::parse_time).transpose() {
                Ok(since) => since,
                Err(e) => return usage(&e.to_string()),
            };
            let filter = TeamFilter { intent, session, since_ms, limit: Some(limit) };
            show_team(&workspace, &filter, json)
        }
        TraceCommand::Show { workspace, intent, file, session, since, limit, json, team: false } => {
            let filter = Filter { intent, file, session, since, kind: None, limit: Some(limit), newest_first: true };
            show(&workspace, &filter, json)
        }
        TraceCommand::Blame { workspace, target, json } => blame(&workspace, &target, json),
        TraceCommand::Replay(args) => crate::replay::run(args),
        TraceCommand::Export { workspace, .. } => with_index(&workspace, |index| {
            let records = index.query(&Filter::default())?;
            let trace = chokepoint_core::ledger::export::agent_trace(records.into_iter().map(|r| r.record));
            println!("{}", serde_json::to_string_pretty(&trace).map_err(|e| e.to_string())?);
            Ok(ExitCode::SUCCESS)
        }),
        TraceCommand::Reseal { workspace, reason, by } => {
            let sidecar = Sidecar::new(&workspace);
            if !sidecar.exists() {
                return usage(&format!("{} has no .orchestration folder", workspace.display()));
            }
            let by = by.or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "unknown".to_owned());
            match chokepoint_core::ledger::reseal::reseal(&sidecar, &reason, &by) {
                Ok(done) => {
                    match (&done.sealed, &done.sealed_sha256) {
                        (Some(sealed), Some(sha)) => {
                            println!("the chain {} ({}) was moved to {}", done.chain, done.problem, sealed.display());
                            println!("a new chain {} begins with a record of the reseal (sha256 of the sealed file {sha})", done.new_chain);
                        }
                        _ => println!(
                            "the chain {} ({}) is gone; a new chain {} begins with a record of the reseal",
                            done.chain, done.problem, done.new_chain
                        ),
                    }
                    ExitCode::SUCCESS
                }
                Err(chokepoint_core::ledger::reseal::ResealError::NoReason) => usage("--reason must say why the chain is restarted"),
                Err(e) => failure(&e.to_string()),
            }
        }
        TraceCommand::Reindex { workspace } => {
            let sidecar = Sidecar::new(&workspace);
            if !sidecar.exists() {
                return usage(&format!("{} has no .orchestration folder", workspace.display()));
            }
            match chokepoint_core::ledger::index::reindex(&sidecar) {
                Ok(report) => {
                    println!("reindexed {} records ({} files, {} ranges)", report.records, report.files, report.ranges);
                    if let Some(skipped) = &report.first_skipped {
                        eprintln!("warning: {} lines are not records and were left out; first: {skipped}", report.skipped);
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => failure(e.message()),
            }
        }
    }
}

/// Opens the index, brings it up to date with the ledger, and runs `body`.
fn with_index(workspace: &std::path::Path, body: impl FnOnce(&Index) -> Result<ExitCode, String>) -> ExitCode {
    let sidecar = Sidecar::new(workspace);
    if !sidecar.exists() {
        return usage(&format!("{} has no .orchestration folder", workspace.display()));
    }
    let result = Index::open(&sidecar).map_err(String::from).and_then(|index| {
        index.catch_up()?;
        body(&index)
    });
    result.unwrap_or_else(|e| failure(&e))
}

/// How `trace show` names a chain: the random part of its name (`20261127T205400Z-0c09bcbb` is
/// `0c09bcbb`), enough to tell a workspace's chains apart; the legacy file's name as it is.
fn short_chain(chain: &str) -> &str {
    chain.rsplit_once('-').map_or(chain, |(_, random)| random)
}

/// One record as `trace show` lists it, for this worktree's ledger and the team's alike: where it is
/// (`<chain>#<seq>`: two chains, of two worktrees or of one before and after a checkout, both have a
/// record 7, so the chain's short name goes with it) and what it was (tool or event, decision, session
/// and intent).
fn summary(chain: &str, r: &Record) -> (String, String) {
    let decision = r.decision.as_ref().map_or(String::new(), |d| format!(" {}", d.decision));
    let what = r.tool.as_deref().or(r.event.as_deref()).unwrap_or("-");
    let who = [r.session.as_deref().map(|s| format!("session {s}")), r.intent.as_deref().map(|i| format!("intent {i}"))]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
    (format!("{}#{}", short_chain(chain), r.seq), format!("{what}{decision}  {who}"))
}

fn show(workspace: &std::path::Path, filter: &Filter, json: bool) -> ExitCode {
    with_index(workspace, |index| {
        for found in index.query(filter)? {
            let r = &found.record;
            if json {
                println!("{}", r.to_line());
                continue;
            }
            let (at, summary) = summary(&found.chain, r);
            println!("{at:>15}  {}  {summary}", r.time);
            for f in &r.files {
                let ranges: Vec<String> = f.ranges.iter().map(|x| format!("{}-{}", x.start, x.end)).collect();
                println!("                 {} {}", f.path, ranges.join(","));
            }
            if let Some(reason) = r.decision.as_ref().and_then(|d| d.reason.as_deref()) {
                println!("                 reason: {reason}");
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `trace show --team`: the team's records, newest last, with where each was written.
fn show_team(workspace: &std::path::Path, filter: &TeamFilter, json: bool) -> ExitCode {
    if !Sidecar::new(workspace).exists() {
        return usage(&format!("{} has no .orchestration folder", workspace.display()));
    }
    let engine = match chokepoint_core::Engine::open(workspace) {
        Ok(engine) => engine,
        Err(e) => return usage(&format!("cannot open workspace `{}`: {e}", workspace.display())),
    };
    let trace = match engine.tracer().team_trace(filter) {
        Ok(trace) => trace,
        Err(e @ TeamTraceError::NotConfigured) => return usage(&e.to_string()),
        Err(e) => return failure(&e.to_string()),
    };
    if let Err(e) = &trace.copy {
        eprintln!("warning: {e}");
    }
    for found in &trace.records {
        let r = &found.record;
        if json {
            let line = serde_json::json!({
                "machine": found.machine,
                "worktree": found.worktree,
                "branch": found.branch,
                "chain": found.chain,
                "hash": found.record_hash,
                "record": r,
            });
            println!("{line}");
            continue;
        }
        let (at, summary) = summary(&found.chain, r);
        println!("{}  {:<16} {:<16} {at:>15}  {summary}", r.time, found.machine, found.worktree);
        if let Some(reason) = r.decision.as_ref().and_then(|d| d.reason.as_deref()) {
            println!("{:>26}reason: {reason}", "");
        }
    }
    ExitCode::SUCCESS
}

fn blame(workspace: &std::path::Path, target: &str, json: bool) -> ExitCode {
    let (path, line) = match target.rsplit_once(':') {
        Some((p, l)) if l.chars().all(|c| c.is_ascii_digit()) && !l.is_empty() => match l.parse::<u32>() {
            Ok(n) => (p, Some(n)),
            Err(_) => return usage(&format!("`{l}` is not a line number")),
        },
        _ => (target, None),
    };
    let sidecar = Sidecar::new(workspace);
    with_index(workspace, |index| {
        let lines = chokepoint_core::ledger::blame::blame(index, &sidecar, path, line)?;
        for l in &lines {
            if json {
                let origin = l.origin.as_ref().map(|o| {
                    serde_json::json!({ "seq": o.seq, "time": o.time, "intent": o.intent, "session": o.session, "agent": o.agent, "model": o.model, "tool": o.tool })
                });
                println!("{}", serde_json::json!({ "line": l.line, "text": l.text, "origin": origin }));
            } else {
                let who = l.origin.as_ref().map_or("(no record)".to_owned(), |o| {
                    format!(
                        "#{} {} {} {}",
                        o.seq,
                        o.intent.as_deref().unwrap_or("-"),
                        o.session.as_deref().unwrap_or("-"),
                        o.model.as_deref().or(o.agent.as_deref()).unwrap_or("-")
                    )
                });
                println!("{:>5}  {who:<40}  {}", l.line, l.text);
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn verify(workspace: &std::path::Path, json: bool) -> ExitCode {
    let sidecar = Sidecar::new(workspace);
    // Every chain on its own, then against the larger of the head in state.db and its copy outside
    // the workspace (which a command that removed state.db with the ledger could not reach), git
    // asked about a chain that holds fewer records than its head.
    let audit = match chokepoint_core::ledger::audit::verify_ledger(&sidecar) {
        Ok(audit) => audit,
        Err(e) => return failure(&e.to_string()),
    };
    for chain in &audit.chains {
        if let Some(heads) = &chain.heads
            && let (Some(path), Some(why)) = (&heads.outside_path, &heads.outside_unreadable)
        {
            eprintln!(
                "warning: the copy of chain {}'s head kept outside the workspace ({}) cannot be read ({why}); verified against \
                 state.db's alone",
                chain.chain,
                path.display()
            );
        }
    }
    let failing = audit.first_problem();
    if json {
        let head =
            |h: &Option<chokepoint_core::ledger::head::Head>| h.as_ref().map(|h| serde_json::json!({ "count": h.count, "hash": h.hash }));
        let chains: Vec<serde_json::Value> = audit
            .chains
            .iter()
            .map(|c| {
                serde_json::json!({
                    "chain": c.chain,
                    "path": c.path.display().to_string(),
                    "present": c.present,
                    "records": c.verification.records,
                    "headHash": c.verification.head_hash,
                    "headInDatabase": c.heads.as_ref().and_then(|h| head(&h.database)),
                    "headOutside": c.heads.as_ref().and_then(|h| head(&h.outside)),
                    "headOutsidePath": c.heads.as_ref().and_then(|h| h.outside_path.as_ref()).map(|p| p.display().to_string()),
                    "notHere": c.not_here.as_ref().map(|n| serde_json::json!({ "records": n.records, "keptIn": n.kept_in, "detail": n.to_string() })),
                    "problem": c.verification.problem.as_ref().map(|p| serde_json::json!({ "kind": p.kind.to_string(), "line": p.line, "offset": p.offset, "detail": p.detail })),
                })
            })
            .collect();
        // The worktree's current chain, whose heads a person checking this worktree asks about first.
        let current = chokepoint_core::ledger::chains::current(&sidecar).and_then(|c| audit.chains.iter().find(|v| v.chain == c.chain));
        println!(
            "{}",
            serde_json::json!({
                "intact": audit.is_intact(),
                "records": audit.records(),
                "chains": chains,
                "currentChain": current.map(|c| c.chain.clone()),
                "headInDatabase": current.and_then(|c| c.heads.as_ref()).and_then(|h| head(&h.database)),
                "headOutside": current.and_then(|c| c.heads.as_ref()).and_then(|h| head(&h.outside)),
                "headOutsidePath": current.and_then(|c| c.heads.as_ref()).and_then(|h| h.outside_path.as_ref()).map(|p| p.display().to_string()),
                "problem": failing.map(|(c, p)| serde_json::json!({ "chain": c.chain, "kind": p.kind.to_string(), "line": p.line, "offset": p.offset, "detail": p.detail })),
            })
        );
    }
    if !json {
        for chain in audit.chains.iter().filter(|c| c.verification.problem.is_none()) {
            if let Some(not_here) = &chain.not_here {
                println!("note: chain {}: {not_here}", chain.chain);
            }
        }
    }
    match failing {
        None => {
            if !json {
                println!("ledger intact: {} records in {} chains", audit.records(), audit.chains.len());
            }
            ExitCode::SUCCESS
        }
        Some((chain, p)) => {
            if !json {
                eprintln!("ledger damaged: chain {} ({}): {p}", chain.chain, chain.path.display());
                // Only the copy outside the workspace remembers these records: say where it is, for
                // the one innocent case (the workspace cloned again at the same path).
                let from_copy = chain
                    .heads
                    .as_ref()
                    .is_some_and(|h| h.outside.as_ref().is_some_and(|o| h.database.as_ref().is_none_or(|d| d.count < o.count)));
                if p.kind == ProblemKind::Truncated
                    && from_copy
                    && let Some(path) = chain.heads.as_ref().and_then(|h| h.outside_path.as_ref())
                {
                    eprintln!(
                        "note: that head is the copy kept outside the workspace, {}; state.db counts fewer. If this checkout is new \
                         (cloned again at the same path), accept it with `chokepoint trace reseal --reason ...`",
                        path.display()
                    );
                }
            }
            ExitCode::from(match p.kind {
                ProblemKind::Edited => 10,
                ProblemKind::Deleted => 11,
                ProblemKind::Inserted => 12,
                ProblemKind::Reordered => 13,
                ProblemKind::Truncated => 14,
                ProblemKind::TornTail => 15,
            })
        }
    }
}

fn record(workspace: &std::path::Path, event: &str) -> ExitCode {
    let mut fields = match serde_json::from_str::<serde_json::Value>(event) {
        Ok(serde_json::Value::Object(map)) => map,
        Ok(_) => return usage("--event must be a JSON object"),
        Err(e) => return usage(&format!("--event is not valid JSON: {e}")),
    };
    let Some(name) = fields.remove("event").and_then(|v| v.as_str().map(str::to_owned)).filter(|n| !n.is_empty()) else {
        return usage("--event needs an `event` field naming it");
    };
    let mut record = Record::new(RecordKind::External);
    record.event = Some(name);
    let mut take = |key: &str| fields.remove(key).and_then(|v| v.as_str().map(str::to_owned));
    record.session = take("session");
    record.agent = take("agent");
    record.task = take("task");
    record.intent = take("intent");
    record.tool = take("tool");
    record.model = take("model");
    if let Some(files) = fields.remove("files") {
        match serde_json::from_value(files) {
            Ok(files) => record.files = files,
            Err(e) => return usage(&format!("`files` is not a list of {{path, sha256?, ranges?}}: {e}")),
        }
    }
    if !fields.is_empty() {
        record.data = Some(serde_json::Value::Object(fields));
    }
    let sidecar = Sidecar::new(workspace);
    if !sidecar.exists() {
        return usage(&format!("{} has no .orchestration folder", workspace.display()));
    }
    let (ledger, recovery) = match chokepoint_core::ledger::writer::Ledger::open(&sidecar) {
        Ok(l) => l,
        Err(e) => return failure(&e.to_string()),
    };
    if let Some(r) = recovery {
        eprintln!("warning: {r}");
    }
    match ledger.append(record) {
        Ok(appended) => {
            // A chain git changed under the worktree was left for a new one: said, not failed.
            for notice in ledger.notices() {
                eprintln!("note: {notice}");
            }
            println!("{}", appended.seq);
            ExitCode::SUCCESS
        }
        Err(e) => failure(&e.to_string()),
    }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_CONFIG)
}

fn failure(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::FAILURE
}

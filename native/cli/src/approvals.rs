//! `chokepoint approvals list|show|approve|reject|modify|review`: the Pendings of the workspace's
//! live engine (VS Code with Chokepoint, or `chokepoint serve`), for people outside VS Code. Pendings
//! live in the memory of the engine that opened them, so every command asks that engine over its
//! socket (`chokepoint_core::serve`: the same protocol, server and checks as a hook's call); with no
//! engine up there is nothing to list or decide, and the command says so (exit 1). A decision is the
//! engine's `apply_decision`, by `cli:<user>`, recorded in the ledger with it.
//!
//! In a git repository, `list`, `show` and the decisions reach the live engine of every worktree
//! ([`Engines`]: each worktree's engine has its own socket): `list` gives each Pending its worktree
//! and branch, and a decision goes to the engine that holds the Pending (ids are unique across
//! processes). `review` stays with this workspace's engine, whose files its diffs are read from.
//!
//! Also here: the two desks the review works at. How a Pending reads as text is `pending_text.rs`,
//! which `approvals show` and the interactive review (`review.rs`) share.
//!
//! For an ask relayed from another worktree's hook, `list` gives the worktree and branch its subject
//! names, and `show` diffs its write against that worktree's file. No engine up in any worktree: exit
//! 1, saying Pendings exist only while one runs. The decider is the peer the kernel names
//! (`cli:<user> (pid N, on <tty>)`), and a decision is refused to an agent's process
//! (`serve::deciders`), so the ledger records who decided.

use crate::pending_text::{describe, line, text};
use crate::review::{self, Desk};
use crate::team_pendings::TeamDesk;
use chokepoint_core::approvals::PendingDict;
use chokepoint_core::scope::leases::Checkout;
use chokepoint_core::serve::client::{Unanswered, exchange};
use chokepoint_core::serve::endpoint::Endpoint;
use chokepoint_core::serve::protocol::{Answer, Request};
use chokepoint_core::{Engine, Sidecar};
use serde_json::{Value, json};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How long a question to the engine may take: it answers from memory.
const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, clap::Subcommand)]
pub enum ApprovalsCommand {
    /// The open Pendings, oldest first: id, kind, agent, session, tool, why it was asked.
    List(Target),
    /// One Pending in full: kind, agent, session, tool, its input and, for a write, the diff
    /// against the file on disk.
    Show {
        id: String,
        #[command(flatten)]
        target: Target,
    },
    /// Approve a Pending: the call runs as the agent asked.
    Approve {
        id: String,
        /// A note for the agent, delivered with the result.
        #[arg(long)]
        note: Option<String>,
        #[command(flatten)]
        target: Target,
    },
    /// Reject a Pending: the agent is told the reason as the tool's result.
    Reject {
        id: String,
        /// Why, as the agent's model should read it: say what to do instead.
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        target: Target,
    },
    /// Approve a tool call with another input: a JSON object, the tool's whole input, from a file or
    /// `-` for stdin. The chain judges it again before it runs.
    Modify {
        id: String,
        /// The file holding the new input (`-`: stdin).
        #[arg(long = "input", value_name = "FILE|-")]
        input: String,
        /// What was changed and why, for the agent.
        #[arg(long)]
        note: Option<String>,
        #[command(flatten)]
        target: Target,
    },
    /// Decide Pendings one by one as they open (or only `<id>`): each is printed, then approve,
    /// reject with a reason, modify its input in $EDITOR (then confirm), or skip. Ends at the end of
    /// stdin, or after `<id>`.
    Review {
        id: Option<String>,
        #[command(flatten)]
        target: Target,
    },
}

#[derive(Debug, clap::Args)]
pub struct Target {
    /// The workspace whose live engine holds the Pendings.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Print machine-readable JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(command: ApprovalsCommand) -> ExitCode {
    let (target, request) = match &command {
        ApprovalsCommand::List(target) => (target, Request::Pendings),
        ApprovalsCommand::Show { id, target } => (target, Request::Pending { id: id.clone() }),
        ApprovalsCommand::Approve { id, note, target } => (target, decide(id, json!({ "action": "approve", "note": note }))),
        ApprovalsCommand::Reject { id, reason, target } => (target, decide(id, json!({ "action": "reject", "reason": reason }))),
        ApprovalsCommand::Modify { id, input, note, target } => match read_input(input) {
            Ok(input) => (target, decide(id, json!({ "action": "modify", "input": input, "note": note }))),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(crate::EXIT_CONFIG);
            }
        },
        ApprovalsCommand::Review { id, target } => {
            let desk = match Remote::new(&target.workspace) {
                Ok(desk) => desk,
                Err(e) => return failed(&e),
            };
            let (stdin, mut stdout) = (std::io::stdin(), std::io::stdout());
            return match review::run(&desk, id.as_deref(), &mut stdin.lock(), &mut stdout) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => failed(&e),
            };
        }
    };
    // A team's database holds the Pendings of every machine: those no live engine here holds are
    // read and decided there.
    let team = TeamDesk::of(&target.workspace);
    let engines = match (Engines::new(&target.workspace), &team) {
        (Ok(engines), _) => Some(engines),
        (Err(_), Some(_)) => None,
        (Err(e), None) => return failed(&e),
    };
    let (request, team) = match (team, &request) {
        (Some(team), Request::Pendings) => return team_list(engines.as_ref(), &team, target),
        (Some(team), Request::Pending { id } | Request::Decide { id, .. }) if !engines.as_ref().is_some_and(|e| e.holds(id)) => {
            return team_one(&team, request, target);
        }
        (team, _) => (request, team),
    };
    drop(team);
    let Some(engines) = engines else { return failed("no live engine holds this pending") };
    let (remote, answer) = engines.ask(request);
    match answer {
        Ok(Answer::Pendings { pendings }) if target.json => print_json(&Value::Array(pendings)),
        Ok(Answer::Pendings { pendings }) if pendings.is_empty() => println!("no open pendings"),
        Ok(Answer::Pendings { pendings }) => {
            for pending in &pendings {
                println!("{}", line(pending));
            }
        }
        Ok(Answer::Pending { pending }) if target.json => print_json(&pending),
        Ok(Answer::Pending { pending }) => {
            // A relayed ask's write is diffed against the file in the worktree that asked.
            let root = text(&pending, "/subject/workspace_root").map_or_else(|| remote.root.clone(), PathBuf::from);
            print!("{}", describe(&pending, &root));
        }
        Ok(Answer::Decided { pending, .. }) if target.json => print_json(&pending),
        Ok(Answer::Decided { text, .. }) => println!("{text}"),
        Ok(Answer::Refused { reason }) => return failed(&reason),
        Ok(Answer::Reply(_) | Answer::Settled(_)) => {
            return failed("the engine answered a hook's reply to a question about its pendings");
        }
        Err(e) => return failed(&e),
    }
    ExitCode::SUCCESS
}

/// `list` with a team's database: the live engines' Pendings (another machine's among them when an
/// engine here shows it) and the team's that none of them holds, oldest first, each with its machine.
fn team_list(engines: Option<&Engines>, team: &TeamDesk, target: &Target) -> ExitCode {
    let mut all = match engines.map(|e| e.ask(Request::Pendings).1) {
        Some(Ok(Answer::Pendings { pendings })) => pendings,
        Some(Ok(_)) | None => Vec::new(),
        Some(Err(e)) => return failed(&e),
    };
    match team.open() {
        Ok(rows) => {
            for row in rows {
                if !all.iter().any(|p| p.get("id") == row.get("id")) {
                    all.push(row);
                }
            }
        }
        Err(e) => return failed(&e),
    }
    all.sort_by(|a, b| text(a, "/created_at").cmp(&text(b, "/created_at")));
    match () {
        _ if target.json => print_json(&Value::Array(all)),
        _ if all.is_empty() => println!("no open pendings"),
        _ => all.iter().for_each(|p| println!("{}", line(p))),
    }
    ExitCode::SUCCESS
}

/// `show` or a decision of a Pending no live engine here holds: the team's database's.
fn team_one(team: &TeamDesk, request: Request, target: &Target) -> ExitCode {
    match request {
        Request::Pending { id } => match team.get(&id) {
            Ok(Some(pending)) if target.json => print_json(&pending),
            Ok(Some(pending)) => print!("{}", describe(&pending, &target.workspace)),
            Ok(None) => return failed(&format!("no pending `{id}` here or in the team's database")),
            Err(e) => return failed(&e),
        },
        Request::Decide { id, decision, by } => match team.decide(&id, &decision, &by) {
            Ok(text) if target.json => print_json(&json!({ "id": id, "text": text })),
            Ok(text) => println!("{text}"),
            Err(e) => return failed(&e),
        },
        _ => return failed("not a question about one pending"),
    }
    ExitCode::SUCCESS
}

fn decide(id: &str, mut decision: Value) -> Request {
    // An absent note is no note, not `null` (which the action's arguments would refuse).
    if let Some(object) = decision.as_object_mut() {
        object.retain(|_, v| !v.is_null());
    }
    Request::Decide { id: id.to_owned(), decision, by: by() }
}

fn failed(why: &str) -> ExitCode {
    eprintln!("error: {why}");
    ExitCode::from(1)
}

fn print_json(value: &Value) {
    println!("{}", serde_json::to_string_pretty(value).unwrap_or_default());
}

/// A modification's input: a JSON object, from `path` or stdin (`-`).
fn read_input(path: &str) -> Result<Value, String> {
    let text = if path == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| format!("cannot read the input from stdin: {e}"))?;
        text
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read the input file `{path}`: {e}"))?
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(value) if value.is_object() => Ok(value),
        Ok(_) => Err(format!("the input in `{path}` must be a JSON object: the tool's whole input")),
        Err(e) => Err(format!("the input in `{path}` is not JSON: {e}")),
    }
}

/// Who decides from this terminal: `cli:<user> (pid N, on /dev/pts/M)`. The live engine names the
/// decider itself from the socket's peer (`serve::deciders`); this is the name `serve --review` gives.
pub fn by() -> String {
    let me = chokepoint_core::serve::process::this();
    let terminal = me.as_ref().and_then(chokepoint_core::serve::process::Process::terminal);
    chokepoint_core::serve::deciders::Decider { pid: std::process::id(), terminal }.by()
}

/// The live engines of the workspace's repository: this workspace's first, then each other
/// worktree's that runs (the same folder below each worktree's root), each with where it works.
/// Outside a repository, this workspace's alone.
struct Engines {
    live: Vec<(Remote, Option<Checkout>)>,
}

impl Engines {
    /// `Err` when no engine of any worktree runs, saying so for this workspace.
    fn new(workspace: &Path) -> Result<Engines, String> {
        let here = Remote::new(workspace);
        let root =
            here.as_ref().map_or_else(|_| std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_owned()), |r| r.root.clone());
        let sidecar = Sidecar::new(&root);
        let place = |sidecar: &Sidecar| sidecar.repo().map(Checkout::of);
        let mut live = Vec::new();
        let mut unserved = None;
        match here {
            Ok(remote) => live.push((remote, place(&sidecar))),
            Err(e) => unserved = Some(e),
        }
        if let Some(repo) = sidecar.repo() {
            for other in repo.other_workspaces() {
                // A worktree whose engine is not running has no Pendings: not an error.
                if let Ok(remote) = Remote::new(&other) {
                    live.push((remote, place(&Sidecar::new(&other))));
                }
            }
        }
        match (live.is_empty(), unserved) {
            (true, Some(why)) => Err(why),
            _ => Ok(Engines { live }),
        }
    }

    /// Whether one of the engines holds the Pending `id` (open or decided a short while ago).
    fn holds(&self, id: &str) -> bool {
        self.live.iter().any(|(remote, _)| matches!(remote.ask(Request::Pending { id: id.to_owned() }), Ok(Answer::Pending { .. })))
    }

    /// Asks the engines: the Pendings of all of them (each with its worktree and branch, in a
    /// repository), or a question or decision about one Pending of the engine that holds it (else of
    /// the first, whose answer says it has no such Pending). The engine that answered, with its answer.
    fn ask(&self, request: Request) -> (&Remote, Result<Answer, String>) {
        let first = &self.live[0].0;
        let id = match &request {
            Request::Pendings => {
                let mut all = Vec::new();
                for (remote, checkout) in &self.live {
                    match remote.ask(Request::Pendings) {
                        Ok(Answer::Pendings { pendings }) => all.extend(pendings.into_iter().map(|p| placed(p, checkout.as_ref()))),
                        // Another worktree's engine that stopped since, or refuses: its Pendings are not listed.
                        _ if !std::ptr::eq(remote, first) => {}
                        other => return (first, other),
                    }
                }
                // Oldest first across the engines, as each lists its own (RFC 3339 times sort as text).
                all.sort_by(|a, b| text(a, "/created_at").cmp(&text(b, "/created_at")));
                return (first, Ok(Answer::Pendings { pendings: all }));
            }
            Request::Pending { id } | Request::Decide { id, .. } => id.clone(),
            _ => return (first, first.ask(request)),
        };
        let holder = self
            .live
            .iter()
            .map(|(remote, _)| remote)
            .find(|remote| matches!(remote.ask(Request::Pending { id: id.clone() }), Ok(Answer::Pending { .. })))
            .unwrap_or(first);
        (holder, holder.ask(request))
    }
}

/// A Pending with the worktree and branch it comes from: those its subject names, for an ask relayed
/// from another worktree's hook (`serve::relay`), else the engine's that holds it (unchanged outside
/// a repository).
fn placed(mut pending: Value, checkout: Option<&Checkout>) -> Value {
    let relayed = pending.pointer("/subject/worktree").and_then(Value::as_str).map(|worktree| Checkout {
        worktree: worktree.to_owned(),
        root: text(&pending, "/subject/workspace_root").unwrap_or_default().to_owned(),
        branch: text(&pending, "/subject/branch").map(str::to_owned),
    });
    if let (Some(checkout), Some(object)) = (relayed.as_ref().or(checkout), pending.as_object_mut()) {
        object.insert("worktree".into(), json!(checkout.worktree));
        object.insert("worktree_root".into(), json!(checkout.root));
        object.insert("branch".into(), json!(checkout.branch));
    }
    pending
}

/// The workspace's live engine, over its socket.
pub struct Remote {
    endpoint: Endpoint,
    root: PathBuf,
    by: String,
}

impl Remote {
    /// The engine of `workspace`; `Err` when none runs, saying where Pendings come from.
    pub fn new(workspace: &Path) -> Result<Remote, String> {
        let root = std::fs::canonicalize(workspace).map_err(|e| format!("cannot open workspace `{}`: {e}", workspace.display()))?;
        let remote = Remote { endpoint: Endpoint::for_workspace(&root), root, by: by() };
        // Asked once here, so that "nothing is running" is said before anything else.
        remote.ask(Request::Pendings).map(drop)?;
        Ok(remote)
    }

    fn ask(&self, request: Request) -> Result<Answer, String> {
        exchange(&self.endpoint, &request, TIMEOUT).map_err(|e| match e {
            Unanswered::NotServed(why) => format!(
                "no live engine serves {} ({why}); Pendings exist only while one runs: VS Code with the Chokepoint extension on this workspace, or `chokepoint serve` in it",
                self.root.display()
            ),
            Unanswered::Failed(why) => format!("the live engine of {} did not answer: {why}", self.root.display()),
        })
    }
}

impl Desk for Remote {
    fn root(&self) -> &Path {
        &self.root
    }

    fn open(&self) -> Result<Vec<Value>, String> {
        match self.ask(Request::Pendings)? {
            Answer::Pendings { pendings } => Ok(pendings),
            Answer::Refused { reason } => Err(reason),
            _ => Err("the engine answered something else than its pendings".into()),
        }
    }

    fn get(&self, id: &str) -> Result<Value, String> {
        match self.ask(Request::Pending { id: id.to_owned() })? {
            Answer::Pending { pending } => Ok(pending),
            Answer::Refused { reason } => Err(reason),
            _ => Err("the engine answered something else than the pending".into()),
        }
    }

    fn decide(&self, id: &str, decision: Value) -> Result<String, String> {
        match self.ask(Request::Decide { id: id.to_owned(), decision, by: self.by.clone() })? {
            Answer::Decided { text, .. } => Ok(text),
            Answer::Refused { reason } => Err(reason),
            _ => Err("the engine answered something else than the decision".into()),
        }
    }
}

/// The engine of this process (`chokepoint serve --review`): its Pendings without a socket.
pub struct Local {
    pub engine: Arc<Engine>,
    pub by: String,
}

impl Desk for Local {
    fn root(&self) -> &Path {
        self.engine.sidecar().workspace_root()
    }

    fn open(&self) -> Result<Vec<Value>, String> {
        Ok(self.engine.approvals().list().iter().map(PendingDict::to_json).collect())
    }

    fn get(&self, id: &str) -> Result<Value, String> {
        self.engine.approvals().get(id).map(|p| p.to_json()).ok_or_else(|| format!("no pending `{id}` here"))
    }

    fn decide(&self, id: &str, decision: Value) -> Result<String, String> {
        self.engine.approvals().apply_decision(id, &decision, &self.by).map(|a| a.text).map_err(|e| e.to_string())
    }
}

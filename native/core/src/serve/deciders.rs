//! Who may decide. A Pending, a scope expansion, another session's lease are decided by a person (the
//! VS Code window, or a terminal no agent started) or by the configured policy or reviewer, never by
//! an agent: not by its tools, its contained shell and everything under it, its sub-agents, nor the
//! MCP servers it launched. This file tells an agent's processes from a person's.
//!
//! **How the engine learns who the agents are.** From their hooks: an agent starts `chokepoint hook`
//! for every call, so the hook's parent is the agent's process (through a `sh -c` that stays, its
//! parent too). A served hook is read by the server (the socket peer's pid, from the kernel); a hook
//! judging alone registers its agent itself; `chokepoint exec` registers its own process, so a
//! contained command is under an agent's process even when the agent's hooks post over HTTP. Each is
//! kept as (boot, pid, start time) in `agent_processes_v1` of the coordination database
//! (`Sidecar::coordination_db`, shared by the worktrees of a repository, so an agent of one worktree
//! is known in every other): a reused pid is another process, and the commands that change state
//! without the live engine (`intent approve`, `sessions revoke`) read the same table.
//!
//! **The rule** ([`check`]), for the requesting process (the socket peer's pid from the kernel, or
//! the command's own process, never a pid anyone claims), refused when:
//! - a registered agent process is among its ancestors (itself included): the rule;
//! - it lives in another pid namespace than the server (or than the agents' hooks, for a command
//!   without the server): a contained command may run in a namespace of its own;
//! - it runs with `no_new_privs` where the server (or the agents' hooks) does not: every command
//!   contained with Landlock does, everything it starts inherits it, and nothing can unset it, so a
//!   contained command that escaped its parent (`setsid`, a double fork) still carries it;
//! - its environment carries an agent shell's marks ([`MARKS`]): an extra signal only, since an
//!   environment can be cleared.
//!
//! What it does not cover: a process an agent started *outside* Chokepoint's containment (a shell
//! tool not rewritten, an MCP server) that leaves its agent's tree (`setsid` and a double fork) and
//! clears its environment; an agent whose hooks never ran in this boot; a person whose own terminal
//! was started by an agent (then it is an agent's). It rests on the kernel's process table: `/proc`
//! on Linux, `sysctl(KERN_PROC_PID)` on macOS (`process.rs`), where ancestry is walked the same way
//! but there are no pid namespaces and no `no_new_privs` (a command Seatbelt contains carries no
//! mark that survives its environment being cleared), and a process's arguments and environment
//! are not read (a hook's shell parent always makes its own parent an agent's too; an agent shell's
//! marks are not seen, so ancestry alone decides there). Windows is refused a decision from a
//! terminal by design, not for want of a process table: there a process may name any process of its
//! user as its new child's parent (`PROC_THREAD_ATTRIBUTE_PARENT_PROCESS`), so an agent could start a
//! process that claims a person's shell as its parent, and no ancestry proves anything. Nor does it cover the agent process itself
//! when its hooks only post over HTTP (until its first contained command), a hook run from a person's
//! own shell (which makes that shell an agent's: the server spares its own lineage, a hook alone
//! cannot tell), `intent select` (the agent's own handshake), or the configuration files (governance
//! files: the gatekeeper's, not this check's).
//!
//! **Invariant: an agent never decides for itself** (ARCHITECTURE.md, I11). What is a person's: a
//! Pending (the socket's `decide`), a scope expansion (`intent approve`), a session's lease
//! (`sessions revoke`, `intent release`) and the live engine itself (`serve`). The refusal says why, and to run it from the
//! person's own terminal or VS Code. The server reads the agent from its peer (one `/proc` read before
//! judging, the rest after answering, one insert per agent process), a hook judging alone writes it
//! (one `/proc` read and one `SELECT` once the agent is known). The server never registers its own
//! lineage, keeps what it saw in memory too (deleting rows does not unregister an agent for it), and
//! forgets the processes gone when it starts. The ledger's `decided_by` is the server's naming of the
//! peer, `cli:<user> (pid N, on /dev/pts/M)`, not the client's word. Pinned by
//! `native/cli/tests/approvals.rs` (`an_agents_own_process_*`, `a_contained_command_that_leaves_*`,
//! `a_process_in_another_pid_namespace_*`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rusqlite::params;

use super::process::{self, Process};
use crate::base::sqlite::StateDb;
use crate::engine::engine::Engine;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS agent_processes_v1 (
        boot         TEXT NOT NULL,     -- /proc/sys/kernel/random/boot_id: start times count from it
        pid          INTEGER NOT NULL,  -- in the pid namespace pid_ns
        start        INTEGER NOT NULL,  -- clock ticks after boot (/proc/<pid>/stat field 22)
        pid_ns       INTEGER NOT NULL,  -- the pid namespace of the hook that registered it
        no_new_privs INTEGER NOT NULL,  -- whether that hook ran with no_new_privs
        seen_at      INTEGER NOT NULL,  -- unix milliseconds
        PRIMARY KEY (boot, pid, start)
    ) STRICT;
";

/// Environment variables an agent's shell carries, and which values count: Claude Code's Bash
/// (`CLAUDECODE=1`), Codex's sandboxed commands, Gemini CLI's shell, our hooks' commands
/// (`CHOKEPOINT_HOOK_DEPTH`) and contained commands (`CHOKEPOINT_SESSION`).
pub const MARKS: [&str; 6] =
    ["CLAUDECODE", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "GEMINI_CLI", "CHOKEPOINT_HOOK_DEPTH", "CHOKEPOINT_SESSION"];

fn is_mark(name: &str, value: &str) -> bool {
    MARKS.contains(&name) && !value.is_empty() && value != "0"
}

/// What is refused, for the message: "decide a Pending", "approve a scope expansion", ….
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Decide,
    WidenScope,
    Revoke,
    Serve,
}

impl Act {
    fn text(self) -> &'static str {
        match self {
            Act::Decide => "decide a Pending",
            Act::WidenScope => "approve a scope expansion",
            Act::Revoke => "revoke a session's lease",
            Act::Serve => "start the workspace's live engine (whoever runs it may decide its Pendings)",
        }
    }
}

/// A process allowed to decide: who it is, for the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decider {
    pub pid: u32,
    pub terminal: Option<String>,
}

impl Decider {
    /// `cli:<user> (pid N on /dev/pts/3)`: who decided, as the ledger records it.
    pub fn by(&self) -> String {
        let place = self.terminal.as_deref().map_or_else(|| "no terminal".to_owned(), |t| format!("on {t}"));
        format!("cli:{} (pid {}, {place})", user_name(), self.pid)
    }
}

/// This process's user's name (its uid when it has none).
#[cfg(unix)]
pub fn user_name() -> String {
    let uid = nix::unistd::getuid();
    nix::unistd::User::from_uid(uid).ok().flatten().map(|u| u.name).unwrap_or_else(|| uid.to_string())
}

/// This process's user's name, as Windows sets it for a session (`%USERNAME%`): recorded as who
/// decided, never checked.
#[cfg(not(unix))]
pub fn user_name() -> String {
    std::env::var("USERNAME").unwrap_or_else(|_| "unknown user".to_owned())
}

/// The namespace and `no_new_privs` a decider must share: the server's, or the agents' hooks'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reference {
    pid_ns: Option<u64>,
    no_new_privs: bool,
}

impl Reference {
    pub(crate) fn this_process() -> Reference {
        let me = process::this();
        Reference { pid_ns: process::own_pid_namespace(), no_new_privs: me.and_then(|p| p.no_new_privs()).unwrap_or(false) }
    }
}

/// The registered agent processes of a workspace (its `state.db`).
#[derive(Debug, Clone)]
pub struct Registry {
    state: Arc<StateDb>,
    boot: String,
    /// What this process already wrote: a served agent's every call costs no write after its first.
    known: Arc<Mutex<HashSet<(u32, u64)>>>,
    /// Never registered: the server's own process and its ancestors (a person's session), so that
    /// a hook run from odd places cannot make the person's own terminal an agent's.
    spared: Arc<HashSet<(u32, u64)>>,
}

impl Registry {
    /// The registry of `engine`'s workspace; `None` where the kernel names no boot (no `/proc` on
    /// Linux, nor a process table elsewhere) or without an `.orchestration/` folder.
    pub fn of(engine: &Engine) -> Option<Registry> {
        if !engine.sidecar().dir().is_dir() {
            return None;
        }
        Some(Registry {
            state: Arc::clone(engine.coordination_db()),
            boot: process::boot_id()?,
            known: Arc::default(),
            spared: Arc::default(),
        })
    }

    /// As [`Registry::of`], for a server: its own lineage is never registered, and the processes
    /// gone since are forgotten.
    pub(crate) fn for_server(engine: &Engine) -> Option<Registry> {
        let mut registry = Registry::of(engine)?;
        let lineage = process::this().map(|me| me.lineage()).unwrap_or_default();
        registry.spared = Arc::new(lineage.iter().map(|p| (p.pid, p.start)).collect());
        let _ = registry.forget_the_gone();
        Some(registry)
    }

    /// Records `processes` as agents', as seen from a process in `reference`.
    fn remember(&self, processes: &[Process], reference: Reference) -> rusqlite::Result<()> {
        let fresh: Vec<&Process> = {
            let mut known = self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            processes.iter().filter(|p| !self.spared.contains(&(p.pid, p.start)) && known.insert((p.pid, p.start))).collect()
        };
        if fresh.is_empty() {
            return Ok(());
        }
        let conn = self.state.lock()?;
        // Read first: a read takes no write lock (a write that changes nothing still takes it).
        let mut missing = Vec::new();
        for p in fresh {
            let known = conn
                .prepare_cached("SELECT 1 FROM agent_processes_v1 WHERE boot = ?1 AND pid = ?2 AND start = ?3")
                .and_then(|mut select| select.exists(params![self.boot, p.pid, p.start as i64]));
            if !known.unwrap_or(false) {
                missing.push(p);
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        conn.execute_batch(SCHEMA)?;
        let mut insert = conn.prepare_cached(
            "INSERT OR IGNORE INTO agent_processes_v1 (boot, pid, start, pid_ns, no_new_privs, seen_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        let now = crate::base::clock::now_ms() as i64;
        for p in missing {
            let ns = reference.pid_ns.unwrap_or(0) as i64;
            insert.execute(params![self.boot, p.pid, p.start as i64, ns, reference.no_new_privs, now])?;
        }
        Ok(())
    }

    /// Whether `process` is registered (a read: no write lock).
    fn is_known(&self, process: &Process) -> bool {
        let Ok(conn) = self.state.lock() else { return false };
        conn.prepare_cached("SELECT 1 FROM agent_processes_v1 WHERE boot = ?1 AND pid = ?2 AND start = ?3")
            .and_then(|mut select| select.exists(params![self.boot, process.pid, process.start as i64]))
            .unwrap_or(false)
    }

    /// The agent processes `caller` (a `chokepoint hook` process) works for: recorded.
    pub(crate) fn remember_caller_of(&self, caller: &Process, reference: Reference) -> rusqlite::Result<()> {
        self.remember(&agents_of(caller), reference)
    }

    /// Rows of this boot: (pid, start, pid_ns, no_new_privs).
    fn rows(&self) -> rusqlite::Result<Vec<(u32, u64, u64, bool)>> {
        let conn = self.state.lock()?;
        conn.execute_batch(SCHEMA)?;
        let mut select = conn.prepare_cached("SELECT pid, start, pid_ns, no_new_privs FROM agent_processes_v1 WHERE boot = ?1")?;
        let rows = select.query_map(params![self.boot], |row| {
            Ok((row.get::<_, u32>(0)?, row.get::<_, i64>(1)? as u64, row.get::<_, i64>(2)? as u64, row.get::<_, bool>(3)?))
        })?;
        rows.collect()
    }

    /// Forgets the processes of other boots and those gone (counted in this process's namespace).
    fn forget_the_gone(&self) -> rusqlite::Result<()> {
        let ns = process::own_pid_namespace().unwrap_or(0);
        let gone: Vec<(u32, u64)> = self
            .rows()?
            .into_iter()
            .filter(|(pid, start, row_ns, _)| *row_ns == ns && Process::read(*pid).is_none_or(|p| p.start != *start))
            .map(|(pid, start, _, _)| (pid, start))
            .collect();
        let conn = self.state.lock()?;
        conn.execute("DELETE FROM agent_processes_v1 WHERE boot <> ?1", params![self.boot])?;
        let mut delete = conn.prepare_cached("DELETE FROM agent_processes_v1 WHERE boot = ?1 AND pid = ?2 AND start = ?3")?;
        for (pid, start) in gone {
            delete.execute(params![self.boot, pid, start as i64])?;
        }
        Ok(())
    }
}

/// The agent processes a `chokepoint hook` process works for: its parent, and when that parent is a
/// shell running the hook's command line (`sh -c …`, which stays when the line is more than one
/// command), the shell's parent too.
pub fn agents_of(hook: &Process) -> Vec<Process> {
    let Some(parent) = hook.parent() else { return Vec::new() };
    let mut out = vec![parent.clone()];
    if runs_a_command_line(&parent.name(), &parent.args())
        && let Some(grandparent) = parent.parent().filter(|g| g.pid > 1)
    {
        out.push(grandparent);
    }
    out
}

/// Whether a hook's parent named `name` with arguments `args` is a shell running the hook's command
/// line (`sh -c …`), so that its own parent is the agent. Where a process's arguments cannot be read
/// (macOS: they are not read), a shell counts as one: its parent is registered too, which may refuse
/// a person's terminal a hook was run from by hand, never spare an agent.
fn runs_a_command_line(name: &str, args: &[String]) -> bool {
    let shell = matches!(name, "sh" | "dash" | "bash" | "zsh" | "ksh" | "mksh" | "fish");
    shell && (args.is_empty() || args.get(1).is_some_and(|a| a.starts_with('-') && a.contains('c')))
}

/// Registers the agent this process (a `chokepoint hook` judging alone) works for, in its
/// workspace's registry. One insert, skipped by SQLite when the row is there.
pub fn remember_my_agent(engine: &Engine) -> Result<(), String> {
    let (Some(registry), Some(me)) = (Registry::of(engine), process::this()) else { return Ok(()) };
    // The agent's every call comes here: once its process is known, one read of /proc and one of
    // the table, nothing more (a shell between them was registered with it the first time).
    if me.parent().is_some_and(|parent| registry.is_known(&parent)) {
        return Ok(());
    }
    registry.remember_caller_of(&me, Reference::this_process()).map_err(|e| e.to_string())
}

/// Registers this process (`chokepoint exec`, about to run an agent's command) as an agent's.
pub fn remember_me(engine: &Engine) -> Result<(), String> {
    let (Some(registry), Some(me)) = (Registry::of(engine), process::this()) else { return Ok(()) };
    registry.remember(&[me], Reference::this_process()).map_err(|e| e.to_string())
}

/// Whether the process `pid` may `act`, asked by the live engine (`pid` is its socket peer's, as the
/// kernel reports it; 0 when the peer is in a pid namespace the server cannot see into).
pub(crate) fn check_peer(registry: Option<&Registry>, pid: u32, act: Act) -> Result<Decider, String> {
    let reference = Reference::this_process();
    if pid == 0 {
        return Err(refusal_text("this request comes from a process in another pid namespace than the live engine's", act));
    }
    let Some(peer) = Process::read(pid) else {
        return Err(refusal_text(&format!("the requesting process (pid {pid}) cannot be seen in /proc"), act));
    };
    if reference.pid_ns.is_some() && peer.pid_namespace() != reference.pid_ns {
        return Err(refusal_text(&format!("the requesting process (pid {pid}) lives in another pid namespace than the live engine"), act));
    }
    judge(registry, &peer, reference, act)
}

/// Whether this process may `act` (a command that changes state.db without the live engine: `intent
/// approve`, `sessions revoke`, `serve`): checked against the agents the workspace's hooks registered.
pub fn check_this_process(engine: &Engine, act: Act) -> Result<Decider, String> {
    // Where no trustworthy ancestry is read (Windows, where a process may name its child's parent:
    // the module's doc), whose process this is cannot be told: refused, never taken for a person's,
    // or any agent could approve its own widening from its shell.
    let Some(me) = process::this() else {
        return Err(refusal_text(
            "this platform gives no chain of processes an agent cannot forge (on Windows a process may name any process of its user as its child's parent), so an agent's process cannot be told from a person's",
            act,
        ));
    };
    let registry = Registry::of(engine);
    let rows = registry.as_ref().and_then(|r| r.rows().ok()).unwrap_or_default();
    let own = Reference::this_process();
    if own.pid_ns.is_some() && !rows.is_empty() && !rows.iter().any(|(_, _, ns, _)| Some(*ns) == own.pid_ns) {
        return Err(refusal_text("this process lives in another pid namespace than the agents' hooks", act));
    }
    // The agents' hooks run as the person's session does: a mark they lack is a contained command's.
    // No agent registered (no contained command either: `chokepoint exec` registers itself): no
    // reference, and a session that runs with the mark throughout (a sandboxed terminal) is not refused.
    let reference = Reference { pid_ns: own.pid_ns, no_new_privs: rows.iter().all(|r| r.3) };
    judge(registry.as_ref(), &me, reference, act)
}

fn judge(registry: Option<&Registry>, who: &Process, reference: Reference, act: Act) -> Result<Decider, String> {
    let lineage = who.lineage();
    if let Some(registry) = registry {
        let rows = registry.rows().map_err(|e| refusal_text(&format!("the registry of agents' processes cannot be read ({e})"), act))?;
        let ns = reference.pid_ns.unwrap_or(0);
        let mut agents: HashSet<(u32, u64)> = rows.iter().filter(|r| r.2 == ns).map(|r| (r.0, r.1)).collect();
        // What this process saw itself stays known even if someone deletes the table's rows.
        agents.extend(registry.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().copied());
        if let Some(agent) = agent_among(&lineage, &agents) {
            let whose = if agent.pid == who.pid { "this process".to_owned() } else { format!("process {} ({})", agent.pid, agent.name()) };
            return Err(refusal_text(
                &format!("this command (pid {}) runs under {whose}, which Chokepoint saw run an agent's hooks", who.pid),
                act,
            ));
        }
    }
    if who.no_new_privs() == Some(true) && !reference.no_new_privs {
        return Err(refusal_text(
            &format!("this command (pid {}) carries the mark of a command Chokepoint contains (no_new_privs)", who.pid),
            act,
        ));
    }
    let marks = who.environment(is_mark);
    if !marks.is_empty() {
        return Err(refusal_text(&format!("this command (pid {}) runs in an agent's shell ({})", who.pid, marks.join(", ")), act));
    }
    Ok(Decider { pid: who.pid, terminal: who.terminal() })
}

/// The rule itself: the first of `lineage` (a process and its ancestors, nearest first, as
/// `process::lineage_over` walks them on every platform) that is a registered agent's process,
/// named by (pid, start).
fn agent_among<'a>(lineage: &'a [Process], agents: &HashSet<(u32, u64)>) -> Option<&'a Process> {
    lineage.iter().find(|p| agents.contains(&(p.pid, p.start)))
}

fn refusal_text(why: &str, act: Act) -> String {
    format!(
        "refused: {why}. An agent, its tools and everything they start may not {}: a person does. Run this from your own terminal (one no agent started), or decide in VS Code's Chokepoint sidebar",
        act.text()
    )
}

/// The rule over a process table written here, as a Mac's kernel would list it: the walk and the
/// rule are the same on every platform, only the lookup is the kernel's.
#[cfg(test)]
mod rule_tests {
    use super::*;
    use crate::serve::process::lineage_over;
    use std::collections::HashMap;

    fn p(pid: u32, ppid: u32, start: u64) -> Process {
        Process { pid, ppid, start, tty: 0 }
    }

    #[test]
    fn a_descendant_of_an_agent_is_found_and_a_person_s_terminal_beside_it_is_not() {
        // launchd(1) ← Terminal(100) ← login(200) ← zsh(300) ← claude(400) ← zsh -c(500) ← chokepoint(600)
        //                                          ← zsh(310) ← chokepoint(610): the person's own tab
        let rows = [p(1, 0, 0), p(100, 1, 10), p(200, 100, 20), p(300, 200, 30), p(400, 300, 40), p(500, 400, 50), p(600, 500, 60)];
        let person = [p(210, 100, 25), p(310, 210, 35), p(610, 310, 65)];
        let table: HashMap<u32, Process> = rows.iter().chain(&person).map(|r| (r.pid, r.clone())).collect();
        let read = |pid: u32| table.get(&pid).cloned();
        let agents: HashSet<(u32, u64)> = [(400, 40)].into();
        let lineage = lineage_over(&rows[6], read);
        assert_eq!(agent_among(&lineage, &agents).map(|a| a.pid), Some(400), "the agent's shell's command is refused");
        assert_eq!(agent_among(&lineage_over(&rows[4], read), &agents).map(|a| a.pid), Some(400), "so is the agent itself");
        assert_eq!(agent_among(&lineage_over(&person[2], read), &agents), None, "a terminal the agent did not start decides");
        // The agent gone and its pid taken by a process started after its child: not the child's
        // parent, and not the agent, whose (pid, start) it does not have.
        let reused: HashMap<u32, Process> = [(400, p(400, 300, 55)), (500, rows[5].clone()), (600, rows[6].clone())].into();
        let lineage = lineage_over(&rows[6], |pid| reused.get(&pid).cloned());
        assert_eq!(lineage.iter().map(|p| p.pid).collect::<Vec<_>>(), [600, 500]);
        assert_eq!(agent_among(&lineage, &agents), None);
    }

    #[test]
    fn a_shell_running_the_hook_s_command_line_makes_its_parent_the_agent_and_unknown_arguments_count_as_one() {
        assert!(runs_a_command_line("sh", &["sh".into(), "-c".into(), "chokepoint hook".into()]));
        assert!(runs_a_command_line("bash", &["bash".into(), "-lc".into(), "x".into()]));
        assert!(!runs_a_command_line("zsh", &["-zsh".into()]), "a person's login shell is not a command line");
        assert!(!runs_a_command_line("node", &["node".into(), "-c".into()]));
        assert!(runs_a_command_line("zsh", &[]), "unread arguments (macOS): the shell's parent is registered too");
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_descendant_of_a_registered_agent_is_refused_and_others_are_not() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join(".orchestration")).unwrap();
        let engine = Engine::open(ws.path()).unwrap();
        let registry = Registry::of(&engine).unwrap();
        let me = process::this().unwrap();
        // A child of this process stands for the agent; it is not this process's ancestor.
        let mut agent = std::process::Command::new("sleep").arg("10").spawn().unwrap();
        let agent_process = Process::read(agent.id()).unwrap();
        registry.remember(std::slice::from_ref(&agent_process), Reference::this_process()).unwrap();
        let decider = check_this_process(&engine, Act::Decide);
        assert!(decider.is_ok() || decider.as_ref().unwrap_err().contains("agent's shell"), "{decider:?}");
        // The agent itself is refused, naming why.
        let refused = check_peer(Some(&registry), agent.id(), Act::Decide).unwrap_err();
        assert!(refused.contains("saw run an agent's hooks") && refused.contains("your own terminal"), "{refused}");
        // Once it is gone, another process with its pid would be another (pid, start).
        agent.kill().unwrap();
        agent.wait().unwrap();
        registry.forget_the_gone().unwrap();
        assert!(registry.rows().unwrap().is_empty());
        // The peer pid 0: a namespace the server cannot see into.
        assert!(check_peer(Some(&registry), 0, Act::Decide).unwrap_err().contains("another pid namespace"));
        assert_eq!(Decider { pid: me.pid, terminal: None }.by(), format!("cli:{} (pid {}, no terminal)", user_name(), me.pid));
    }
}

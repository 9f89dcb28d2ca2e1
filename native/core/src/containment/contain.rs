//! Containment of the agent's shell commands: a command may change the workspace only where its
//! intent's scope allows, and **never destroys what it did not cause**. Write tools are judged path by
//! path before they run; a shell command names no paths, so it is contained instead.
//!
//! 1. **Isolated** (Linux with user namespaces and overlayfs; `isolate.rs`, `layer.rs`): the command
//!    runs in namespaces of its own over an overlay of the workspace, so every write it makes lands in
//!    the overlay's upper layer and nowhere else. When it ends (its whole process tree, detached
//!    descendants included), its changes are judged: the allowed ones are applied to the workspace,
//!    each only if nobody else changed that path meanwhile (else theirs stays and the command's is set
//!    aside), and the refused ones never land. A person's or another agent's writes during the command
//!    are never touched: they are not in the upper layer. Killing the supervisor or the engine applies
//!    nothing.
//! 2. **Observed** (everywhere else, and when `isolator` is not given): the workspace is snapshotted
//!    before and after, and the changes are reported, never undone: a comparison cannot tell who made
//!    a change, and undoing someone else's would destroy their work. With Landlock, a change outside
//!    the directories it granted was refused to the command by the kernel, so it is someone else's
//!    (`others`); any other change outside the scope is `unattributed`: kept, recorded and reported.
//!
//! Landlock (`sandbox.rs`), where the kernel has it, refuses a write as it happens: isolated, one
//! outside the workspace (inside it, the layer takes it and the report names it precisely); observed,
//! one outside the scope's directories, so the command fails early with `Permission denied`. On macOS
//! Seatbelt plays Landlock's part in the observed run: the command line is wrapped in
//! `/usr/bin/sandbox-exec` with the same grant (`seatbelt.rs`), the snapshot still compares before
//! and after, and a Mac without `sandbox-exec` refuses to run the command unless `landlock: off`.
//!
//! The command runs as a process tree of its own (`base::tree`: a process group, on Windows a Job
//! Object); on timeout and on cancel, the supervisor is asked to stop (it ends the namespace, and with
//! it everything the command started), then the tree is killed.
//!
//! Observed is what runs on another OS, with `isolation: off`, when no `chokepoint` program is given
//! to be the supervisor (a threaded engine cannot create user namespaces itself), or when the kernel
//! refuses the namespaces. Landlock grants a scope folder that does not exist yet as its nearest
//! existing folder: nothing is created in the work tree to grant it. A change to a governance file
//! (`model::governance`) is refused with the gatekeeper's words. One contained command at a time per
//! engine. Pinned by `native/cli/tests/containment.rs` (isolated, Landlock on and off) and
//! `native/core/tests/containment.rs` (observed).

use crate::base::sidecar::{SIDECAR_DIR, Sidecar};
use crate::base::tree::Tree;
use crate::containment::isolate::{SPEC_ENV, SUPERVISOR_ARG, Spec, Status};
use crate::containment::layer::{Applied, Layer};
use crate::containment::sandbox::{self, Confinement};
use crate::containment::seatbelt;
use crate::containment::snapshot::{self, Change, ChangeKind, Entry, EntryKind, Snapshot, Snapshotter};
use crate::model::governance::{self, SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
use globset::{GlobBuilder, GlobSetBuilder};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

/// Files over this many bytes are hashed but not held by the snapshot store.
pub const DEFAULT_MAX_HELD_BYTES: u64 = 32 * 1024 * 1024;

/// Captured output beyond this many bytes per stream is dropped (and said so).
pub const DEFAULT_OUTPUT_CAP: usize = 1024 * 1024;

/// After the command's group is killed, how long its output pipes may take to close.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// How long an isolated command's supervisor has to end its namespace when asked to stop, before its
/// process group is killed.
#[cfg(unix)]
const STOP_GRACE: Duration = Duration::from_secs(2);

/// How long to wait for an isolated command's namespace to end after its supervisor died without
/// ending it (killed from outside): nothing of the upper layer is applied while it may still change.
const NAMESPACE_GRACE: Duration = Duration::from_secs(5);

/// Decides whether a workspace-relative path (`/`-separated) may change. `true` = allowed.
pub type Judge = Box<dyn Fn(&str) -> bool + Send + Sync>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LandlockMode {
    /// Confine when the kernel supports it; otherwise run unconfined and say so.
    Auto,
    /// Never confine.
    Off,
}

/// The command to contain, as its caller describes it.
#[derive(Debug, Clone)]
pub struct Shell {
    /// The program and its arguments.
    pub argv: Vec<OsString>,
    /// Its working folder.
    pub cwd: PathBuf,
    /// Variables set for it, beside the caller's environment.
    pub env: Vec<(OsString, OsString)>,
    /// Pipe its stdout and stderr into the report (stdin from `/dev/null`); otherwise it inherits all
    /// three.
    pub capture: bool,
}

impl Shell {
    /// `<script>` in the platform's shell (`sh -c`, Windows' `cmd /d /s /c`: `base::shell`) in
    /// `cwd`, its output captured.
    pub fn script(script: &str, cwd: &Path) -> Shell {
        Shell { argv: crate::base::shell::script_argv(script), cwd: cwd.to_path_buf(), env: Vec::new(), capture: true }
    }

    fn command(&self, program: &Path, leading: &[&str]) -> Command {
        let mut command = Command::new(program);
        command.args(leading).current_dir(&self.cwd).envs(self.env.iter().map(|(k, v)| (k, v)));
        if self.capture {
            command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        crate::base::tree::prepare(&mut command);
        command
    }
}

/// What to contain a command to.
pub struct ContainPlan {
    /// The workspace root.
    pub root: PathBuf,
    /// Which changed paths may stay changed.
    pub judge: Judge,
    /// For the agent's message: the intent whose scope this is.
    pub intent_id: Option<String>,
    /// The intent's `owned_scope`: the directories Landlock grants, and the agent's message.
    pub scope_globs: Vec<String>,
    /// Extra directories the command may write (temp dirs). One that contains the workspace is not
    /// granted: it would grant the whole workspace. One inside the workspace is granted, but what
    /// changes there is still judged (exclude it too if its changes must stay, e.g. build output).
    pub writable: Vec<PathBuf>,
    /// Relative paths other processes write during a command (see `Snapshotter::new`); never
    /// snapshotted, never changed by a command.
    pub excluded: Vec<String>,
    /// The content-addressed store, beneath which an isolated command's upper layer is made.
    pub store: PathBuf,
    pub landlock: LandlockMode,
    /// The `chokepoint` program, which runs the command isolated (`isolate.rs`); `None`: observed.
    pub isolator: Option<PathBuf>,
    pub max_held_bytes: u64,
    /// Per captured stream.
    pub output_cap: usize,
    /// Set (from any thread) to stop the command: it is stopped as on a timeout, and what it changed
    /// is judged all the same.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl std::fmt::Debug for ContainPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainPlan")
            .field("root", &self.root)
            .field("intent_id", &self.intent_id)
            .field("scope_globs", &self.scope_globs)
            .field("writable", &self.writable)
            .field("excluded", &self.excluded)
            .field("store", &self.store)
            .field("landlock", &self.landlock)
            .field("isolator", &self.isolator)
            .field("max_held_bytes", &self.max_held_bytes)
            .field("output_cap", &self.output_cap)
            .finish_non_exhaustive()
    }
}

impl ContainPlan {
    /// A plan for an intent's scope: the judge is [`scope_judge`], the store and the exclusions are
    /// the sidecar's ([`default_excluded`]), Landlock is `Auto`, nothing extra is writable, observed.
    pub fn for_scope(root: &Path, intent_id: Option<&str>, scope_globs: &[String]) -> ContainPlan {
        ContainPlan {
            root: root.to_path_buf(),
            judge: scope_judge(scope_globs),
            intent_id: intent_id.map(str::to_owned),
            scope_globs: scope_globs.to_vec(),
            writable: Vec::new(),
            excluded: default_excluded(),
            store: Sidecar::new(root).snapshot_store(),
            landlock: LandlockMode::Auto,
            isolator: None,
            max_held_bytes: DEFAULT_MAX_HELD_BYTES,
            output_cap: DEFAULT_OUTPUT_CAP,
            cancel: None,
        }
    }
}

/// The engine's own runtime files, which other processes write while a command runs: the sidecar's,
/// and the repository's shared folder when the workspace is a main checkout (`.git/chokepoint`,
/// where every worktree's processes write the leases). Left out of the snapshot, a change to them is
/// never taken for the command's (the ledger's lock and index, written by every judged event of
/// another agent meanwhile, were reported as the command's changes outside its scope).
pub fn default_excluded() -> Vec<String> {
    let runtime = crate::base::sidecar::RUNTIME_FILES
        .iter()
        .filter(|f| !WATCHED_RUNTIME_FILES.contains(f))
        .map(|f| format!("{SIDECAR_DIR}/{}", f.trim_end_matches('/').replace("-*", "*")));
    let ledger = [format!("{SIDECAR_DIR}/agent_trace.jsonl"), format!("{SIDECAR_DIR}/trace")];
    runtime.chain(ledger).chain([format!(".git/{}", crate::base::repo::SHARED_DIR)]).collect()
}

/// Runtime files the engine writes only when it starts serving or regenerates the brain, not while
/// it judges: a command that changes one is reported, since either steers every agent's next hook.
const WATCHED_RUNTIME_FILES: &[&str] = &["serve.json", "brain.generated.md"];

/// A judge that allows a path matching one of `scope_globs` (compiled as the gatekeeper compiles
/// them: `*` does not cross `/`) unless it is a governance file. An invalid glob allows nothing.
pub fn scope_judge(scope_globs: &[String]) -> Judge {
    let mut scope = GlobSetBuilder::new();
    for g in scope_globs {
        if let Ok(glob) = GlobBuilder::new(g).literal_separator(true).build() {
            scope.add(glob);
        }
    }
    let scope = scope.build().unwrap_or_else(|_| globset::GlobSet::empty());
    Box::new(move |path: &str| scope.is_match(path) && !governance::is_governance_file(path))
}

/// What a command printed, when the caller piped its stdout or stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Some output was over the cap and dropped.
    pub truncated: bool,
}

/// A file the command moved out of the scope: neither its removal inside nor its creation outside is
/// applied, so the file stays where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedOut {
    pub from: String,
    pub to: String,
}

/// One of the command's allowed changes that did not land as it made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotApplied {
    pub change: Change,
    /// Someone else changed the path while the command ran (their version stays); otherwise the
    /// change failed for `reason`.
    pub conflict: bool,
    /// Where the command's version of the file was kept (set aside under the snapshot store).
    pub kept: Option<String>,
    pub reason: String,
}

/// How the command's writes were told apart from others'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolation {
    /// In namespaces of its own over an overlay: its changes are exactly its own.
    Isolated,
    /// Compared before and after, without isolation, for this reason: changes are seen, never undone.
    Observed { reason: String },
}

/// Everything that happened to one contained command.
#[derive(Debug)]
pub struct ContainReport {
    /// `None` when it timed out or was cancelled.
    pub status: Option<ExitStatus>,
    pub timed_out: bool,
    /// The plan's cancel flag stopped it.
    pub cancelled: bool,
    /// When the caller piped stdout or stderr.
    pub output: Option<Captured>,
    pub confinement: Confinement,
    pub isolation: Isolation,
    /// Changes inside the scope, in path order: applied (isolated), or seen (observed).
    pub allowed: Vec<Change>,
    /// The command's changes outside the scope, in path order: never applied (isolated only).
    pub refused: Vec<Change>,
    pub moved_out: Vec<MovedOut>,
    /// Allowed changes that did not land: a conflict with someone else's write, or a failure.
    pub not_applied: Vec<NotApplied>,
    /// Observed only: changes outside the scope made while the command ran, by it or by someone else;
    /// kept.
    pub unattributed: Vec<Change>,
    /// Observed with Landlock only: changes outside the directories Landlock granted, which the
    /// kernel refused to the command, so someone else's; kept, recorded.
    pub others: Vec<Change>,
    /// What of the plan could not be applied (a writable directory not granted, ...): for the person,
    /// in the trace, not for the model.
    pub warnings: Vec<String>,
    pub intent_id: Option<String>,
    pub scope: Vec<String>,
    pub duration: Duration,
}

impl ContainReport {
    pub fn exit_code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// Whether something the command did outside its scope, or could not apply, was held back.
    pub fn held_back(&self) -> bool {
        !self.refused.is_empty() || !self.not_applied.is_empty()
    }

    /// The text the agent gets when the command's writes outside the scope were refused, some of its
    /// changes did not land, changes outside the scope could not be attributed, or (as far as the
    /// captured output tells) a write was blocked. `None` when the command stayed inside.
    pub fn tool_error(&self) -> Option<String> {
        let scope = if self.scope.is_empty() { "no paths".to_owned() } else { self.scope.join(", ") };
        let intent = self.intent_id.as_deref().map(|i| format!("intent `{i}`")).unwrap_or_else(|| "the selected intent".to_owned());
        let advice = |which: &str| match self.intent_id {
            Some(_) => format!(
                "Stay inside {scope}, or ask for more with {SCOPE_EXPANSION_TOOL}(intent_id, paths, justification) naming {which}, then retry."
            ),
            None => format!(
                "This session holds no intent, so it may change nothing in the workspace: select the intent the work serves with \
                 {SELECT_INTENT_TOOL}(intent_id) first (its owned_scope is what it may write), then retry."
            ),
        };
        let mut parts: Vec<String> = Vec::new();
        if !self.refused.is_empty() {
            let moved: BTreeMap<&str, &str> = self.moved_out.iter().map(|m| (m.from.as_str(), m.to.as_str())).collect();
            let outside: Vec<&Change> = self.refused.iter().filter(|c| !moved.contains_key(c.path.as_str())).collect();
            let mut text = format!(
                "the command changed {} path{} outside the scope of {intent} ({scope}); {} not applied, the workspace is as it was there:",
                outside.len(),
                if outside.len() == 1 { "" } else { "s" },
                if outside.len() == 1 { "it was" } else { "they were" },
            );
            for c in &self.refused {
                let what = match moved.get(c.path.as_str()) {
                    Some(to) => format!("moved to `{to}`, outside the scope; it stays where it was"),
                    None => format!("{}; not applied", c.kind.phrase()),
                };
                text.push_str(&format!("\n- `{}`: {what}", c.path));
            }
            // A governance file is not a matter of scope: no expansion would let the command write it.
            for reason in self.refused.iter().filter_map(|c| governance::refusal(&c.path)).take(3) {
                text.push('\n');
                text.push_str(&reason);
                text.push('.');
            }
            text.push('\n');
            text.push_str(&advice("these paths"));
            parts.push(text);
        }
        if !self.not_applied.is_empty() {
            let mut text = "some of the command's changes inside the scope did not land:".to_owned();
            for n in &self.not_applied {
                text.push_str(&format!("\n- `{}` ({}): {}", n.change.path, n.change.kind.phrase(), n.reason));
                if let Some(kept) = &n.kept {
                    text.push_str(&format!("; the command's version is at {kept}"));
                }
            }
            text.push_str("\nRead the files as they are now before changing them again.");
            parts.push(text);
        }
        if !self.unattributed.is_empty() {
            let mut text = format!(
                "while the command ran, {} path{} outside the scope of {intent} changed; without isolation here, Chokepoint cannot tell whether the command or someone else changed {}, so nothing was undone:",
                self.unattributed.len(),
                if self.unattributed.len() == 1 { "" } else { "s" },
                if self.unattributed.len() == 1 { "it" } else { "them" },
            );
            for c in self.unattributed.iter().take(20) {
                text.push_str(&format!("\n- `{}`: {}", c.path, c.kind.phrase()));
            }
            if self.unattributed.len() > 20 {
                text.push_str(&format!("\n- and {} more", self.unattributed.len() - 20));
            }
            text.push_str("\nIf this command made them, it went outside its scope: do not do it again. ");
            text.push_str(&advice("the paths the command must write"));
            parts.push(text);
        }
        if parts.is_empty() && self.blocked() {
            parts.push(format!(
                "the command failed while confined to writing inside the scope of {intent} ({scope}); the `Permission denied` in its output \
                 may be a write outside the scope, which was blocked. {}",
                advice("the paths the command must write")
            ));
        }
        (!parts.is_empty()).then(|| parts.join("\n"))
    }

    /// The command failed confined and its captured output shows a refused write.
    fn blocked(&self) -> bool {
        let failed = !self.timed_out && self.status.is_some_and(|s| !s.success());
        let Some(out) = self.output.as_ref().filter(|_| failed && self.confinement.is_enforced()) else { return false };
        [&out.stdout, &out.stderr].iter().any(|s| {
            let s = String::from_utf8_lossy(s);
            s.contains("Permission denied") || s.contains("Operation not permitted")
        })
    }

    /// What the model needs to know beside the command's output: only what changes how it reads it
    /// (the plan's `warnings` are for the person, in the trace).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.timed_out {
            notes.push("the command timed out; it was stopped with everything it started".to_owned());
        }
        if self.output.as_ref().is_some_and(|o| o.truncated) {
            notes.push("the command's output was over the cap; the rest was dropped".to_owned());
        }
        notes
    }
}

/// Why isolation is not available in this process, once a command found out (it is not tried again).
static NOT_ISOLATED: OnceLock<String> = OnceLock::new();

/// Why commands run observed rather than isolated here, once known: `None` until a command was
/// isolated or failed to be.
pub fn isolation_unavailable() -> Option<&'static str> {
    NOT_ISOLATED.get().map(String::as_str)
}

/// Runs contained commands, keeping the last snapshot so the next one only `stat`s what did not
/// change (its hashes are reused).
#[derive(Debug, Default)]
pub struct Containment {
    last: Option<Snapshot>,
}

impl Containment {
    pub fn new() -> Containment {
        Containment::default()
    }

    /// Runs `shell` contained by `plan`. `Err` only for I/O failures of the containment itself (the
    /// root cannot be read, the store cannot be written) and a command that cannot be spawned at all.
    pub fn run(&mut self, plan: &ContainPlan, shell: Shell, timeout: Option<Duration>) -> io::Result<ContainReport> {
        let started = Instant::now();
        let snapshotter = Snapshotter::new(&plan.root, &plan.store, &plan.excluded, plan.max_held_bytes)?;
        let before = snapshotter.take(self.last.as_ref())?;
        let reason = match (&plan.isolator, isolation_unavailable()) {
            _ if !cfg!(target_os = "linux") => "a command is isolated only on Linux".to_owned(),
            (None, _) => "no isolating program was given".to_owned(),
            (Some(_), Some(why)) => why.to_owned(),
            (Some(isolator), None) => match self.isolated(plan, &snapshotter, &before, isolator, &shell, timeout, started)? {
                Ok(report) => return Ok(report),
                Err(why) => {
                    let _ = NOT_ISOLATED.set(why.clone());
                    why
                }
            },
        };
        self.observed(plan, &snapshotter, before, &shell, timeout, started, reason)
    }

    /// The isolated run. `Ok(Err(why))` when the command could not be isolated and did not run.
    #[allow(clippy::too_many_arguments)]
    fn isolated(
        &mut self,
        plan: &ContainPlan,
        snapshotter: &Snapshotter,
        before: &Snapshot,
        isolator: &Path,
        shell: &Shell,
        timeout: Option<Duration>,
        started: Instant,
    ) -> io::Result<Result<ContainReport, String>> {
        let root = snapshotter.root().to_path_buf();
        let run = Run::create(snapshotter.store())?;
        let mut warnings = Vec::new();
        let grant = isolated_grant(&root, plan, &mut warnings);
        let spec = Spec {
            root: root.clone(),
            upper: run.dir.join("upper"),
            work: run.dir.join("work"),
            status: run.status.clone(),
            cwd: shell.cwd.clone(),
            grant,
            landlock: plan.landlock == LandlockMode::Auto,
            uid: ids().0,
            gid: ids().1,
            parent: std::process::id(),
        };
        let mut command = shell.command(isolator, &[SUPERVISOR_ARG, "--"]);
        command.args(&shell.argv).env(SPEC_ENV, serde_json::to_string(&spec).map_err(io::Error::other)?);
        let mut child = command.spawn()?;
        let tree = adopt(&mut child)?;
        drop(child.stdin.take());
        let capture = Capture::start(&mut child, plan.output_cap);
        let waited = wait(child, &tree, timeout, plan.cancel.as_deref(), true);
        let status = Status::read(&run.status);
        if let Some(why) = status.failed {
            tree.kill();
            capture.map(Capture::finish);
            return Ok(Err(why));
        }
        // The supervisor returns once its namespace has ended; one killed from outside did not wait
        // for that, so it is waited for here before anything of the upper layer is read.
        if let Some(init) = status.init_pid {
            await_gone(init, NAMESPACE_GRACE);
        }
        tree.kill();
        let output = capture.map(Capture::finish);
        let (exit, stopped) = waited?;
        let layer = Layer::read(&spec.upper, &root, before)?;
        let verdict = judge(plan, before, |p| layer.after(p), layer.changes(before));
        let mut allowed = Vec::new();
        let mut not_applied = Vec::new();
        for (change, outcome) in layer.apply(&root, before, &verdict.allowed, &run.aside) {
            match outcome {
                Applied::Applied => allowed.push(change),
                Applied::Conflict { kept } => not_applied.push(NotApplied {
                    change,
                    conflict: true,
                    reason: "someone else changed it while the command ran; their version stays".to_owned(),
                    kept,
                }),
                Applied::Failed { reason, kept } => not_applied.push(NotApplied { change, conflict: false, kept, reason }),
            }
        }
        for name in &layer.unreadable {
            warnings.push(format!("`{name}` has a name that is not UTF-8; the command's change to it was not applied"));
        }
        self.last = Some(before.clone());
        let confinement = status
            .confinement
            .as_deref()
            .map_or_else(|| Confinement::Unavailable { reason: "the command did not start".to_owned() }, Confinement::parse);
        Ok(Ok(ContainReport {
            status: exit,
            timed_out: stopped == Some(Stopped::TimedOut),
            cancelled: stopped == Some(Stopped::Cancelled),
            output,
            confinement,
            isolation: Isolation::Isolated,
            allowed,
            refused: verdict.refused,
            moved_out: verdict.moved_out,
            not_applied,
            unattributed: Vec::new(),
            others: Vec::new(),
            warnings,
            intent_id: plan.intent_id.clone(),
            scope: plan.scope_globs.clone(),
            duration: started.elapsed(),
        }))
    }

    /// The observed run: prevented where Landlock can, compared before and after, never undone.
    #[allow(clippy::too_many_arguments)]
    fn observed(
        &mut self,
        plan: &ContainPlan,
        snapshotter: &Snapshotter,
        before: Snapshot,
        shell: &Shell,
        timeout: Option<Duration>,
        started: Instant,
        reason: String,
    ) -> io::Result<ContainReport> {
        let root = snapshotter.root().to_path_buf();
        let mut warnings = Vec::new();
        let confine = plan.landlock == LandlockMode::Auto && sandbox::can_confine();
        let grant = if confine { observed_grant(&root, plan, &mut warnings) } else { Vec::new() };
        // Where the confinement wraps the program (macOS: `sandbox-exec`), the command line is the
        // wrapper's; a Mac that cannot wrap it refuses to run it rather than run it unconfined.
        let argv = if plan.landlock == LandlockMode::Auto {
            seatbelt::confined_argv(&grant, &shell.argv).map_err(io::Error::other)?
        } else {
            shell.argv.clone()
        };
        let Some((program, args)) = argv.split_first() else { return Err(io::Error::other("no command was given")) };
        let mut command = shell.command(Path::new(program), &[]);
        // cmd's command line is handed over as written (`base::shell`), not quoted again.
        crate::base::shell::add_args(&mut command, program, args);
        let spawned = match plan.landlock {
            LandlockMode::Auto => sandbox::spawn_confined(command, &grant),
            LandlockMode::Off => sandbox::spawn_unconfined(command, "Landlock is turned off for this command"),
        };
        let (mut child, confinement) = spawned?;
        let tree = adopt(&mut child)?;
        drop(child.stdin.take());
        let capture = Capture::start(&mut child, plan.output_cap);
        let waited = wait(child, &tree, timeout, plan.cancel.as_deref(), false);
        // Whatever it left running in its group or job goes with it.
        tree.kill();
        let output = capture.map(Capture::finish);
        let (exit, stopped) = waited?;
        let after = snapshotter.take(Some(&before))?;
        let verdict = judge(plan, &before, |p| after.get(p), snapshot::changes(&before, &after));
        let (others, unattributed): (Vec<Change>, Vec<Change>) = verdict
            .refused
            .into_iter()
            .partition(|c| confinement.is_enforced() && !grant.iter().any(|g| root.join(&c.path).starts_with(g)));
        self.last = Some(after);
        Ok(ContainReport {
            status: exit,
            timed_out: stopped == Some(Stopped::TimedOut),
            cancelled: stopped == Some(Stopped::Cancelled),
            output,
            confinement,
            isolation: Isolation::Observed { reason },
            allowed: verdict.allowed,
            refused: Vec::new(),
            moved_out: Vec::new(),
            not_applied: Vec::new(),
            unattributed,
            others,
            warnings,
            intent_id: plan.intent_id.clone(),
            scope: plan.scope_globs.clone(),
            duration: started.elapsed(),
        })
    }
}

/// Runs one contained command without a previous snapshot to reuse.
pub fn run(plan: &ContainPlan, shell: Shell, timeout: Option<Duration>) -> io::Result<ContainReport> {
    Containment::new().run(plan, shell, timeout)
}

/// This process's user and group ids, which an isolated command keeps.
#[cfg(unix)]
fn ids() -> (u32, u32) {
    (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw())
}

#[cfg(not(unix))]
fn ids() -> (u32, u32) {
    (0, 0)
}

/// One isolated command's folders: its upper and work directories beside the snapshot store (the
/// workspace's file system, so applying is a rename), the status file outside the workspace, and
/// where conflicting versions are set aside. Removed when the run ends, except what was set aside.
struct Run {
    dir: PathBuf,
    status_dir: PathBuf,
    status: PathBuf,
    aside: PathBuf,
}

impl Run {
    fn create(store: &Path) -> io::Result<Run> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let runs = store.join("runs");
        remove_abandoned(&runs);
        let name = format!("{}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed), clock_ms());
        let dir = runs.join(&name);
        std::fs::create_dir_all(dir.join("upper"))?;
        std::fs::create_dir_all(dir.join("work"))?;
        let status_dir = std::env::temp_dir().join(format!("chokepoint-run-{name}"));
        private_dir(&status_dir)?;
        Ok(Run { status: status_dir.join("status"), status_dir, aside: store.join("set-aside").join(&name), dir })
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        remove_run(&self.dir);
        let _ = std::fs::remove_dir_all(&self.status_dir);
    }
}

fn remove_run(dir: &Path) {
    // Overlayfs leaves a folder in the work directory that only its owner may enter, and nobody may
    // list: made removable first.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(listing) = std::fs::read_dir(dir.join("work")) {
            for item in listing.flatten() {
                let _ = std::fs::set_permissions(item.path(), std::fs::Permissions::from_mode(0o700));
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Removes the layers of runs whose engine process has ended without removing them (killed): their
/// command was killed with it, and nothing of a layer is applied after its run.
fn remove_abandoned(runs: &Path) {
    let Ok(listing) = std::fs::read_dir(runs) else { return };
    for item in listing.flatten() {
        let name = item.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.split('-').next()).and_then(|p| p.parse::<u32>().ok()) else { continue };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            remove_run(&item.path());
        }
    }
}

fn clock_ms() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

#[cfg(unix)]
fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn private_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir(dir)
}

/// Waits until process `pid` has ended (gone, or a zombie: its namespace is then gone too), at most
/// `bound`.
fn await_gone(pid: u32, bound: Duration) {
    let deadline = Instant::now() + bound;
    let stat = format!("/proc/{pid}/stat");
    while Instant::now() < deadline {
        match std::fs::read_to_string(&stat) {
            Err(_) => return,
            Ok(s) if s.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')) => return,
            Ok(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// What an isolated command's Landlock grants: the whole workspace (the overlay: what it writes there
/// lands in its own layer and is judged path by path afterwards, so a write outside the scope is
/// reported precisely instead of failing with `Permission denied`) and the extra writable
/// directories; everything else on the machine stays read-only to it.
fn isolated_grant(root: &Path, plan: &ContainPlan, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let mut grant = vec![root.to_path_buf()];
    grant.extend(writable_grant(root, plan, warnings));
    grant
}

/// What an observed command's Landlock grants: each scope directory, or for one that does not exist
/// its nearest existing ancestor in the workspace (nothing is created: the wider grant only means
/// more is seen afterwards than prevented), and the extra writable directories.
fn observed_grant(root: &Path, plan: &ContainPlan, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let mut grant = Vec::new();
    for dir in sandbox::scope_dirs(root, &plan.scope_globs) {
        let rel = relative(root, &dir);
        let Some(existing) = dir.ancestors().find(|a| std::fs::symlink_metadata(a).is_ok()) else { continue };
        match std::fs::canonicalize(existing) {
            Ok(real) if real.starts_with(root) => grant.push(real),
            Ok(real) => warnings
                .push(format!("the scope directory `{rel}` resolves to {}, outside the workspace; it is not granted", real.display())),
            Err(e) => warnings.push(format!("the scope directory `{rel}` cannot be resolved ({e}); it is not granted")),
        }
    }
    grant.extend(writable_grant(root, plan, warnings));
    grant
}

fn writable_grant(root: &Path, plan: &ContainPlan, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let mut grant = Vec::new();
    for dir in &plan.writable {
        match std::fs::canonicalize(dir) {
            Ok(real) if root.starts_with(&real) => warnings.push(format!(
                "the writable directory {} contains the workspace; granting it would grant the whole workspace, so it is not granted",
                dir.display()
            )),
            Ok(real) => grant.push(real),
            Err(e) => warnings.push(format!("the writable directory {} is not granted: {e}", dir.display())),
        }
    }
    grant
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/")
}

struct Verdict {
    allowed: Vec<Change>,
    refused: Vec<Change>,
    moved_out: Vec<MovedOut>,
}

/// Splits the changes into what the judge allows and what it refuses. Two refinements: a refused
/// directory the command created that holds allowed changes is allowed (the allowed content needs
/// it), and a file moved out of the scope is refused on both sides (its removal inside the scope
/// with its creation outside, else the file would be lost). `after` is the entry a changed path has
/// after the command.
fn judge<'a>(plan: &ContainPlan, before: &Snapshot, after: impl Fn(&str) -> Option<&'a Entry>, changes: Vec<Change>) -> Verdict {
    let mut allowed = Vec::new();
    let mut refused = Vec::new();
    for c in changes {
        if (plan.judge)(&c.path) { allowed.push(c) } else { refused.push(c) }
    }
    // A created directory holding allowed content is needed by it.
    let needed: BTreeSet<String> = refused
        .iter()
        .filter(|c| c.kind == ChangeKind::Created && after(&c.path).is_some_and(|e| e.kind == EntryKind::Dir))
        .filter(|c| allowed.iter().any(|a| is_beneath(&a.path, &c.path)))
        .map(|c| c.path.clone())
        .collect();
    let (keep, mut refused): (Vec<Change>, Vec<Change>) = refused.into_iter().partition(|c| needed.contains(&c.path));
    allowed.extend(keep);

    // Moves out of the scope: a refused file whose content is that of a file removed inside the scope.
    let mut moved_out = Vec::new();
    let mut deleted_by_hash: BTreeMap<[u8; 32], Vec<String>> = BTreeMap::new();
    for c in allowed.iter().filter(|c| c.kind == ChangeKind::Deleted) {
        if let Some(h) = before.get(&c.path).filter(|e| e.kind == EntryKind::File && e.len > 0).and_then(|e| e.hash) {
            deleted_by_hash.entry(h).or_default().push(c.path.clone());
        }
    }
    let mut back = BTreeSet::new();
    for c in &refused {
        let Some(h) = after(&c.path).filter(|e| e.kind == EntryKind::File && e.len > 0).and_then(|e| e.hash) else { continue };
        if let Some(from) = deleted_by_hash.get_mut(&h).and_then(Vec::pop) {
            // Its removed parent directories stay with it.
            for a in allowed.iter().filter(|a| a.kind == ChangeKind::Deleted && (a.path == from || is_beneath(&from, &a.path))) {
                back.insert(a.path.clone());
            }
            moved_out.push(MovedOut { from, to: c.path.clone() });
        }
    }
    let (kept_back, mut allowed): (Vec<Change>, Vec<Change>) = allowed.into_iter().partition(|c| back.contains(&c.path));
    refused.extend(kept_back);
    allowed.sort();
    refused.sort();
    Verdict { allowed, refused, moved_out }
}

fn is_beneath(path: &str, dir: &str) -> bool {
    path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/'
}

/// Reads the piped output streams in the background, keeping at most `cap` bytes of each but
/// reading to the end, so a chatty command is neither blocked nor killed by a closed pipe.
struct Capture {
    buffers: Arc<Mutex<Captured>>,
    done: mpsc::Receiver<()>,
    readers: usize,
}

impl Capture {
    fn start(child: &mut Child, cap: usize) -> Option<Capture> {
        let buffers = Arc::new(Mutex::new(Captured::default()));
        let (tx, done) = mpsc::channel();
        let mut readers = 0;
        if let Some(out) = child.stdout.take() {
            spawn_reader(out, cap, buffers.clone(), tx.clone(), |c| &mut c.stdout);
            readers += 1;
        }
        if let Some(err) = child.stderr.take() {
            spawn_reader(err, cap, buffers.clone(), tx, |c| &mut c.stderr);
            readers += 1;
        }
        (readers > 0).then_some(Capture { buffers, done, readers })
    }

    /// What was read, once both streams closed or the grace period is over (a process that left
    /// the group still holds the pipe: what it writes later is not waited for).
    fn finish(self) -> Captured {
        let deadline = Instant::now() + OUTPUT_GRACE;
        for _ in 0..self.readers {
            if self.done.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_err() {
                break;
            }
        }
        std::mem::take(&mut *self.buffers.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

fn spawn_reader(
    mut pipe: impl Read + Send + 'static,
    cap: usize,
    buffers: Arc<Mutex<Captured>>,
    done: mpsc::Sender<()>,
    stream: fn(&mut Captured) -> &mut Vec<u8>,
) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let mut c = buffers.lock().unwrap_or_else(|p| p.into_inner());
                    let room = cap.saturating_sub(stream(&mut c).len());
                    if room < n {
                        c.truncated = true;
                    }
                    stream(&mut c).extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
}

/// Why a command did not end by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    TimedOut,
    Cancelled,
}

/// How often a wait looks at the cancel flag: a Stop button answered within a frame or two.
#[cfg(unix)]
const CANCEL_POLL: Duration = Duration::from_millis(25);

/// Waits for the command, stopping it when the timeout passes or `cancel` is set: `graceful` (an
/// isolated command's supervisor) asks its leader to stop first and kills the group only after
/// [`STOP_GRACE`]; otherwise the whole group is killed at once. Returns the status (`None` when it
/// was stopped) and why it was stopped.
#[cfg(unix)]
fn wait(
    mut child: Child,
    tree: &Tree,
    timeout: Option<Duration>,
    cancel: Option<&AtomicBool>,
    graceful: bool,
) -> io::Result<(Option<ExitStatus>, Option<Stopped>)> {
    if timeout.is_none() && cancel.is_none() {
        return Ok((Some(child.wait()?), None));
    }
    let deadline = timeout.map(|t| Instant::now() + t);
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let stopped = loop {
        let now = Instant::now();
        let until_deadline = deadline.map_or(CANCEL_POLL, |d| d.saturating_duration_since(now));
        let slice = if cancel.is_some() { until_deadline.min(CANCEL_POLL) } else { until_deadline };
        match rx.recv_timeout(slice) {
            Ok(status) => return Ok((Some(status?), None)),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(io::Error::other("the thread waiting for the command ended")),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if cancel.is_some_and(|c| c.load(Ordering::Acquire)) {
            break Stopped::Cancelled;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break Stopped::TimedOut;
        }
    };
    if graceful && let Ok(leader) = i32::try_from(pid) {
        // The supervisor ends the namespace and returns once everything in it has ended.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(leader), nix::sys::signal::Signal::SIGTERM);
        if rx.recv_timeout(STOP_GRACE).is_ok() {
            return Ok((None, Some(stopped)));
        }
    }
    tree.kill();
    // The leader is reaped by the waiting thread; this returns once it is.
    let _ = rx.recv();
    Ok((None, Some(stopped)))
}

#[cfg(not(unix))]
fn wait(
    mut child: Child,
    tree: &Tree,
    timeout: Option<Duration>,
    cancel: Option<&AtomicBool>,
    _graceful: bool,
) -> io::Result<(Option<ExitStatus>, Option<Stopped>)> {
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((Some(status), None));
        }
        let stopped = if cancel.is_some_and(|c| c.load(Ordering::Acquire)) {
            Some(Stopped::Cancelled)
        } else if deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stopped::TimedOut)
        } else {
            None
        };
        if let Some(stopped) = stopped {
            tree.kill();
            let _ = child.kill();
            let _ = child.wait();
            return Ok((None, Some(stopped)));
        }
        std::thread::sleep(deadline.map_or(pause, |d| pause.min(d.saturating_duration_since(Instant::now()))));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// The tree of a command just spawned (`base::tree`); a command that cannot be put in its tree
/// (Windows: its Job Object) is killed before it runs and the run fails with the reason.
fn adopt(child: &mut Child) -> io::Result<Tree> {
    Tree::adopt(Some(child.id())).inspect_err(|_| {
        let _ = child.kill();
        let _ = child.wait();
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::containment::snapshot::Snapshotter;

    #[test]
    fn the_engine_s_runtime_files_are_not_a_command_s_changes_but_its_endpoint_is() {
        let ws = tempfile::tempdir().unwrap();
        let store = ws.path().join(".orchestration/snapshots");
        let s = Snapshotter::new(ws.path(), &store, &default_excluded(), 1024).unwrap();
        for written_while_judging in [
            ".orchestration/agent_trace.lock",
            ".orchestration/agent_trace.jsonl",
            ".orchestration/trace/main.jsonl",
            ".orchestration/trace.db-wal",
            ".orchestration/state.db",
            ".orchestration/state.db-shm",
            ".orchestration/images.db",
            ".orchestration/brain.lock",
            ".orchestration/snapshots/ab/cd",
            ".git/chokepoint/leases.db",
        ] {
            assert!(s.is_excluded(written_while_judging), "{written_while_judging}");
        }
        for watched in [".orchestration/serve.json", ".orchestration/brain.generated.md", ".orchestration/hooks.yaml", "src/a.ts"] {
            assert!(!s.is_excluded(watched), "{watched}");
        }
    }
}

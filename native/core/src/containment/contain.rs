//! Containment of the agent's shell commands: a command may change the workspace only where its
//! intent's scope allows. Write tools are judged path by path before they run; a shell command names
//! no paths, so it is contained instead, in two layers:
//!
//! 1. **Prevention** (Linux, Landlock): the command runs confined to writing beneath the directories
//!    its scope covers (sandbox.rs), plus the caller's extra writable directories (temp dirs). A
//!    write anywhere else fails with `Permission denied`.
//! 2. **Undo**, everywhere, also when Landlock is off or missing: the workspace is snapshotted before
//!    and after the command (snapshot.rs); every change the caller's judge does not allow is undone
//!    from the snapshot and reported. The directories Landlock grants are wider than the globs (a
//!    grant of `src/auth` for `src/auth/*.ts` lets `src/auth/x.js` be written), so this layer always
//!    runs.
//!
//! Never silent: what was undone, what could not be, and what could not be applied at all (no
//! Landlock, files too large or too special to hold) is in the report, and `tool_error` is the text
//! the agent reads.
//!
//! The command runs in its own process group; on timeout, and when it ends, the whole group is
//! killed, so nothing it started keeps writing after the second snapshot.

use crate::base::sidecar::{SIDECAR_DIR, Sidecar};
use crate::containment::sandbox::{self, Confinement};
use crate::containment::snapshot::{self, Change, ChangeKind, EntryKind, NotHeld, Snapshot, Snapshotter};
use crate::model::governance::{GOVERNANCE_FILES, SCOPE_EXPANSION_TOOL};
use globset::{GlobBuilder, GlobSetBuilder};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Files over this many bytes are hashed but not held: a change to one cannot be undone.
pub const DEFAULT_MAX_HELD_BYTES: u64 = 32 * 1024 * 1024;

/// Captured output beyond this many bytes per stream is dropped (and said so).
pub const DEFAULT_OUTPUT_CAP: usize = 1024 * 1024;

/// After the command's group is killed, how long its output pipes may take to close.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// Decides whether a workspace-relative path (`/`-separated) may change. `true` = allowed.
pub type Judge = Box<dyn Fn(&str) -> bool + Send + Sync>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LandlockMode {
    /// Confine when the kernel supports it; otherwise run unconfined and say so.
    Auto,
    /// Never confine (undo only).
    Off,
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
    /// snapshotted, never reverted.
    pub excluded: Vec<String>,
    /// The content-addressed store.
    pub store: PathBuf,
    pub landlock: LandlockMode,
    pub max_held_bytes: u64,
    /// Per captured stream.
    pub output_cap: usize,
    /// Set (from any thread) to stop the command: its whole group is killed as on a timeout, and the
    /// snapshot comparison and revert still run, so a cancelled command leaves nothing outside its
    /// scope either.
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
            .field("max_held_bytes", &self.max_held_bytes)
            .field("output_cap", &self.output_cap)
            .finish_non_exhaustive()
    }
}

impl ContainPlan {
    /// A plan for an intent's scope: the judge is [`scope_judge`], the store and the exclusions are
    /// the sidecar's ([`default_excluded`]), Landlock is `Auto`, nothing extra is writable.
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
            max_held_bytes: DEFAULT_MAX_HELD_BYTES,
            output_cap: DEFAULT_OUTPUT_CAP,
            cancel: None,
        }
    }
}

/// The engine's own runtime files, which other processes write while a command runs.
pub fn default_excluded() -> Vec<String> {
    vec![format!("{SIDECAR_DIR}/snapshots"), format!("{SIDECAR_DIR}/state.db*"), format!("{SIDECAR_DIR}/agent_trace.jsonl")]
}

/// A judge that allows a path matching one of `scope_globs` (compiled as the gatekeeper compiles
/// them: `*` does not cross `/`) unless it is a governance file. An invalid glob allows nothing.
pub fn scope_judge(scope_globs: &[String]) -> Judge {
    let mut scope = GlobSetBuilder::new();
    for g in scope_globs {
        if let Ok(glob) = GlobBuilder::new(g).literal_separator(true).build() {
            scope.add(glob);
        }
    }
    let mut governance = GlobSetBuilder::new();
    for g in GOVERNANCE_FILES {
        if let Ok(glob) = GlobBuilder::new(g).build() {
            governance.add(glob);
        }
    }
    let scope = scope.build().unwrap_or_else(|_| globset::GlobSet::empty());
    let governance = governance.build().unwrap_or_else(|_| globset::GlobSet::empty());
    Box::new(move |path: &str| scope.is_match(path) && !governance.is_match(path))
}

/// What a command printed, when the caller piped its stdout or stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Some output was over the cap and dropped.
    pub truncated: bool,
}

/// A change outside the scope that could not be undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReverted {
    pub change: Change,
    pub reason: String,
}

/// A file the command moved out of the scope: its deletion inside the scope was undone with the
/// creation outside, or the file would have been lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedOut {
    pub from: String,
    pub to: String,
}

/// Everything that happened to one contained command.
#[derive(Debug)]
pub struct ContainReport {
    /// `None` when it timed out (the group was killed).
    pub status: Option<ExitStatus>,
    pub timed_out: bool,
    /// The plan's cancel flag stopped it (the group was killed).
    pub cancelled: bool,
    /// When the caller piped stdout or stderr.
    pub output: Option<Captured>,
    pub confinement: Confinement,
    /// Changes the judge allowed, in path order (for the trace).
    pub allowed: Vec<Change>,
    /// Changes undone, in path order.
    pub reverted: Vec<Change>,
    pub moved_out: Vec<MovedOut>,
    pub not_reverted: Vec<NotReverted>,
    /// Paths that would not have been restored had the command changed them.
    pub not_held: Vec<NotHeld>,
    /// Scope directories created before the command so Landlock could grant them (relative).
    pub created_scope_dirs: Vec<String>,
    /// What of the plan could not be applied (a writable directory not granted, ...).
    pub warnings: Vec<String>,
    pub intent_id: Option<String>,
    pub scope: Vec<String>,
    pub duration: Duration,
}

impl ContainReport {
    pub fn exit_code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// The text the agent gets when anything outside the scope was undone, could not be undone, or
    /// (as far as the captured output tells) was blocked. `None` when the command stayed inside.
    pub fn tool_error(&self) -> Option<String> {
        let scope = if self.scope.is_empty() { "no paths".to_owned() } else { self.scope.join(", ") };
        let intent = self.intent_id.as_deref().map(|i| format!("intent `{i}`")).unwrap_or_else(|| "the selected intent".to_owned());
        let advice = |which: &str| {
            format!(
                "Stay inside {scope}, or ask for more with {SCOPE_EXPANSION_TOOL}(intent_id, paths, justification) naming {which}, then retry."
            )
        };
        if self.reverted.is_empty() && self.not_reverted.is_empty() {
            return self.blocked().then(|| {
                format!(
                    "the command failed while confined to writing inside the scope of {intent} ({scope}); the `Permission denied` in its output \
                     may be a write outside the scope, which was blocked. {}",
                    advice("the paths the command must write")
                )
            });
        }
        let moved: BTreeMap<&str, &str> = self.moved_out.iter().map(|m| (m.from.as_str(), m.to.as_str())).collect();
        // A file moved back into the scope is listed, but it is not a path outside the scope.
        let count = self.reverted.iter().filter(|c| !moved.contains_key(c.path.as_str())).count() + self.not_reverted.len();
        let mut text =
            format!("the command changed {count} path{} outside the scope of {intent} ({scope})", if count == 1 { "" } else { "s" });
        if !self.reverted.is_empty() {
            text.push_str("; undone:");
            for c in &self.reverted {
                let action = match (c.kind, moved.get(c.path.as_str())) {
                    (_, Some(to)) => format!("moved to `{to}`, outside the scope; moved back"),
                    (ChangeKind::Created, _) => "created; removed".to_owned(),
                    (ChangeKind::Modified, _) => "modified; restored to its content before the command".to_owned(),
                    (ChangeKind::Deleted, _) => "deleted; restored".to_owned(),
                    (ChangeKind::TypeChanged, _) => "replaced by another kind of entry; restored".to_owned(),
                };
                text.push_str(&format!("\n- `{}`: {action}", c.path));
            }
        }
        if !self.not_reverted.is_empty() {
            text.push_str(if self.reverted.is_empty() { "; could not be undone:" } else { "\ncould not be undone:" });
            for n in &self.not_reverted {
                text.push_str(&format!("\n- `{}`: {}, left as the command made it: {}", n.change.path, n.change.kind.as_str(), n.reason));
            }
        }
        text.push('\n');
        if self.reverted.iter().chain(self.not_reverted.iter().map(|n| &n.change)).any(|c| c.path == crate::base::sidecar::BRAIN) {
            // The shared brain is not a matter of scope: no expansion would let the command write it.
            text.push_str(&crate::model::governance::brain_refusal());
            text.push_str(".\n");
        }
        text.push_str(&advice("these paths"));
        Some(text)
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

    /// What could not be applied, for the user and the trace: no Landlock, paths not held, ...
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        match &self.confinement {
            Confinement::Enforced { .. } => {}
            Confinement::Partial { abi, missing } => notes.push(format!(
                "Landlock ABI {abi} does not control {}: such writes are undone afterwards, not prevented",
                missing.join("; ")
            )),
            Confinement::Unavailable { reason } => {
                notes.push(format!("{reason}: outside-scope writes are undone afterwards, not prevented"))
            }
        }
        notes.extend(self.warnings.iter().cloned());
        for dir in &self.created_scope_dirs {
            notes.push(format!("created the scope directory `{dir}` before the command so it could be granted (it is in scope)"));
        }
        if !self.not_held.is_empty() {
            let shown: Vec<String> = self.not_held.iter().take(10).map(|n| format!("`{}` ({})", n.path, n.reason)).collect();
            let more = self.not_held.len().saturating_sub(shown.len());
            notes.push(format!(
                "{} path{} could not be held, so a change to {} could not be undone: {}{}",
                self.not_held.len(),
                if self.not_held.len() == 1 { "" } else { "s" },
                if self.not_held.len() == 1 { "it" } else { "them" },
                shown.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            ));
        }
        if self.timed_out {
            notes.push("the command timed out; its whole process group was killed".to_owned());
        }
        if self.output.as_ref().is_some_and(|o| o.truncated) {
            notes.push("the command's output was over the cap; the rest was dropped".to_owned());
        }
        notes
    }
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

    /// Runs `command` contained by `plan`. The caller configures the command (program, arguments,
    /// working directory, environment, stdio): piped stdout and stderr are captured into the report,
    /// inherited ones are left alone; a piped stdin is closed. `Err` only for I/O failures of the
    /// containment itself (the root cannot be read, the store cannot be written) and a command that
    /// cannot be spawned at all.
    pub fn run(&mut self, plan: &ContainPlan, mut command: Command, timeout: Option<Duration>) -> io::Result<ContainReport> {
        let started = Instant::now();
        let snapshotter = Snapshotter::new(&plan.root, &plan.store, &plan.excluded, plan.max_held_bytes)?;
        let root = snapshotter.root().to_path_buf();
        let mut warnings = Vec::new();
        let confine = plan.landlock == LandlockMode::Auto && sandbox::landlock_abi().is_some();
        let (grant, created) = if confine { prepare_grant(&root, plan, &mut warnings) } else { (Vec::new(), Vec::new()) };

        let before = match snapshotter.take(self.last.as_ref()) {
            Ok(s) => s,
            Err(e) => {
                remove_if_empty(&created);
                return Err(e);
            }
        };
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let spawned = match plan.landlock {
            LandlockMode::Auto => sandbox::spawn_confined(command, &grant),
            LandlockMode::Off => sandbox::spawn_unconfined(command, "Landlock is turned off for this command"),
        };
        let (mut child, confinement) = match spawned {
            Ok(s) => s,
            Err(e) => {
                remove_if_empty(&created);
                return Err(e);
            }
        };
        drop(child.stdin.take());
        let capture = Capture::start(&mut child, plan.output_cap);
        let pid = child.id();
        let waited = wait(child, timeout, plan.cancel.as_deref());
        // Whatever it left running goes with it: nothing writes after the second snapshot.
        kill_group(pid);
        let output = capture.map(Capture::finish);
        let (status, stopped, after) = match waited.and_then(|(status, stopped)| Ok((status, stopped, snapshotter.take(Some(&before))?))) {
            Ok(done) => done,
            Err(e) => {
                remove_if_empty(&created);
                return Err(e);
            }
        };
        let verdict = judge(plan, &before, &after, snapshot::changes(&before, &after));
        let outcomes = snapshotter.revert(&before, &after, &verdict.revert);
        let (mut reverted, mut not_reverted) = (Vec::new(), Vec::new());
        for r in outcomes {
            match r.outcome {
                Ok(()) => reverted.push(r.change),
                Err(reason) => not_reverted.push(NotReverted { change: r.change, reason }),
            }
        }
        reverted.sort();
        not_reverted.sort_by(|a, b| a.change.cmp(&b.change));
        let moved_out = verdict.moved_out.into_iter().filter(|m| reverted.iter().any(|c| c.path == m.from)).collect();
        remove_if_empty(&created);
        let not_held = before.not_held();
        self.last = Some(after);
        Ok(ContainReport {
            status,
            timed_out: stopped == Some(Stopped::TimedOut),
            cancelled: stopped == Some(Stopped::Cancelled),
            output,
            confinement,
            allowed: verdict.allowed,
            reverted,
            moved_out,
            not_reverted,
            not_held,
            created_scope_dirs: created.into_iter().map(|c| c.scope_dir).collect(),
            warnings,
            intent_id: plan.intent_id.clone(),
            scope: plan.scope_globs.clone(),
            duration: started.elapsed(),
        })
    }
}

/// Runs one contained command without a previous snapshot to reuse.
pub fn run(plan: &ContainPlan, command: Command, timeout: Option<Duration>) -> io::Result<ContainReport> {
    Containment::new().run(plan, command, timeout)
}

/// A scope directory this run created: its relative name, and every directory created for it,
/// outermost first (removed again, innermost first, if the command left them empty).
struct CreatedDir {
    scope_dir: String,
    chain: Vec<PathBuf>,
}

/// The directories Landlock grants: each scope directory (created if missing; not granted if it
/// resolves outside the workspace) and each extra writable directory that exists and does not
/// contain the workspace.
fn prepare_grant(root: &Path, plan: &ContainPlan, warnings: &mut Vec<String>) -> (Vec<PathBuf>, Vec<CreatedDir>) {
    let mut grant = Vec::new();
    let mut created = Vec::new();
    for dir in sandbox::scope_dirs(root, &plan.scope_globs) {
        let rel = dir.strip_prefix(root).unwrap_or(&dir).to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/");
        if std::fs::symlink_metadata(&dir).is_err() {
            let mut chain: Vec<PathBuf> =
                dir.ancestors().take_while(|a| *a != root && std::fs::symlink_metadata(a).is_err()).map(Path::to_path_buf).collect();
            chain.reverse();
            match std::fs::create_dir_all(&dir) {
                Ok(()) => created.push(CreatedDir { scope_dir: rel.clone(), chain }),
                Err(e) => {
                    warnings.push(format!("the scope directory `{rel}` could not be created ({e}); writes there are refused by Landlock"));
                    continue;
                }
            }
        }
        match std::fs::canonicalize(&dir) {
            Ok(real) if real.starts_with(root) => grant.push(real),
            Ok(real) => warnings
                .push(format!("the scope directory `{rel}` resolves to {}, outside the workspace; it is not granted", real.display())),
            Err(e) => warnings.push(format!("the scope directory `{rel}` cannot be resolved ({e}); it is not granted")),
        }
    }
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
    (grant, created)
}

fn remove_if_empty(created: &[CreatedDir]) {
    for c in created {
        // Innermost first; remove_dir refuses a directory that is not empty, so content always stays.
        for dir in c.chain.iter().rev() {
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}

struct Verdict {
    allowed: Vec<Change>,
    revert: Vec<Change>,
    moved_out: Vec<MovedOut>,
}

/// Splits the changes into what the judge allows and what must be undone. Two refinements:
/// a refused directory the command created that holds allowed changes stays (the allowed content
/// needs it), and a file moved out of the scope is moved back (its deletion inside the scope is
/// undone with its creation outside, else the file would be lost).
fn judge(plan: &ContainPlan, before: &Snapshot, after: &Snapshot, changes: Vec<Change>) -> Verdict {
    let mut allowed = Vec::new();
    let mut refused = Vec::new();
    for c in changes {
        if (plan.judge)(&c.path) { allowed.push(c) } else { refused.push(c) }
    }
    // A created directory holding allowed content is needed by it.
    let needed: BTreeSet<String> = refused
        .iter()
        .filter(|c| c.kind == ChangeKind::Created && after.get(&c.path).is_some_and(|e| e.kind == EntryKind::Dir))
        .filter(|c| allowed.iter().any(|a| is_beneath(&a.path, &c.path)))
        .map(|c| c.path.clone())
        .collect();
    let (keep, mut revert): (Vec<Change>, Vec<Change>) = refused.into_iter().partition(|c| needed.contains(&c.path));
    allowed.extend(keep);

    // Moves out of the scope: a refused file whose content is that of a file deleted inside the scope.
    let mut moved_out = Vec::new();
    let mut deleted_by_hash: BTreeMap<[u8; 32], Vec<String>> = BTreeMap::new();
    for c in allowed.iter().filter(|c| c.kind == ChangeKind::Deleted) {
        if let Some(h) = before.get(&c.path).filter(|e| e.kind == EntryKind::File && e.len > 0).and_then(|e| e.hash) {
            deleted_by_hash.entry(h).or_default().push(c.path.clone());
        }
    }
    let mut back = BTreeSet::new();
    for c in &revert {
        let Some(h) = after.get(&c.path).filter(|e| e.kind == EntryKind::File && e.len > 0).and_then(|e| e.hash) else { continue };
        if let Some(from) = deleted_by_hash.get_mut(&h).and_then(Vec::pop) {
            // Its deleted parent directories come back with it.
            for a in allowed.iter().filter(|a| a.kind == ChangeKind::Deleted && (a.path == from || is_beneath(&from, &a.path))) {
                back.insert(a.path.clone());
            }
            moved_out.push(MovedOut { from, to: c.path.clone() });
        }
    }
    let (moved_back, allowed): (Vec<Change>, Vec<Change>) = allowed.into_iter().partition(|c| back.contains(&c.path));
    revert.extend(moved_back);
    let mut allowed = allowed;
    allowed.sort();
    revert.sort();
    Verdict { allowed, revert, moved_out }
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
const CANCEL_POLL: Duration = Duration::from_millis(25);

/// Waits for the command, killing its whole group when the timeout passes or `cancel` is set.
/// Returns the status (`None` when it was stopped) and why it was stopped.
#[cfg(unix)]
fn wait(mut child: Child, timeout: Option<Duration>, cancel: Option<&AtomicBool>) -> io::Result<(Option<ExitStatus>, Option<Stopped>)> {
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
    kill_group(pid);
    // The leader is reaped by the waiting thread; this returns once it is.
    let _ = rx.recv();
    Ok((None, Some(stopped)))
}

#[cfg(not(unix))]
fn wait(mut child: Child, timeout: Option<Duration>, cancel: Option<&AtomicBool>) -> io::Result<(Option<ExitStatus>, Option<Stopped>)> {
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
            let _ = child.kill();
            let _ = child.wait();
            return Ok((None, Some(stopped)));
        }
        std::thread::sleep(deadline.map_or(pause, |d| pause.min(d.saturating_duration_since(Instant::now()))));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

#[cfg(unix)]
fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        // ESRCH (the group is already gone) is the common, expected case.
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: u32) {}

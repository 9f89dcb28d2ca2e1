//! The sidecar folder `.orchestration/`: where a workspace keeps its intents, hook configuration,
//! ledger and lock database. One place names these paths so no other module spells them.
//!
//! **Invariant: one repository, one coordination.** What agents coordinate on (leases and
//! revocations, approved scope expansions, the brain's lessons, the registry of agents' processes)
//! lives in `<git common dir>/chokepoint/state.db` (`Sidecar::coordination_db`; a governed folder
//! below the work tree's root gets `chokepoint/folders/<its path>/`), which every worktree of the
//! repository opens (`git worktree add`, Claude Code's `--worktree`, other agents' parallel
//! checkouts): two worktrees' sessions never both hold an intent, and a revocation or an expansion
//! made in one is judged in the other. Why git's common folder is `base/repo.rs`'s; it is found once
//! per `Sidecar` and its clones (`OnceLock`), so once per engine. The folder is created owner-only by
//! the first store that opens it, and only for a governed workspace (`StateDb::making_folder`);
//! outside a repository it is the workspace's `.orchestration/state.db`. What stays per worktree: the
//! ledger and its head (each worktree records its own branch's work), the trace index, `serve.json`
//! and the live engine's socket. Pinned by `native/cli/tests/worktrees.rs` and this module's tests
//! (the location, the folder's mode).
//!
//! The runtime files (`RUNTIME_FILES`: the state and index databases, the image store, `serve.json`,
//! the generated brain, …) are git-ignored and created owner-only (`owner_only`); what a confined
//! shell must not reach lives in the per-user folder outside the workspace
//! (`Sidecar::outside_state_dir`: `$XDG_STATE_HOME` or `~/.local/state`, `chokepoint/<hash of the
//! workspace>/`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::base::repo::Repo;

/// The name of the sidecar folder at the root of a governed workspace.
pub const SIDECAR_DIR: &str = ".orchestration";

/// The sidecar's `.gitignore`, relative to the workspace root.
pub const IGNORE_FILE: &str = ".orchestration/.gitignore";

/// The engine's runtime files, as lines of the sidecar's `.gitignore`: state, not configuration.
pub const RUNTIME_FILES: &[&str] = &[
    "state.db",
    "state.db-*",
    "trace.db",
    "trace.db-*",
    "agent_trace.lock",
    "snapshots/",
    "serve.json",
    "brain.lock",
    "brain.generated.md",
    "images.db",
    "images.db-*",
];

/// The mode the engine's runtime files are created with: owner-only, since the ledger records what
/// every agent wrote and the state database holds leases and approvals. A file that exists keeps
/// the mode it has: a team that shares a checkout between users widens it once (`chmod g+rw`), and
/// nothing narrows it back. SQLite gives a database's `-wal` and `-shm` the database's mode.
pub const RUNTIME_MODE: u32 = 0o600;

/// Makes `options` create its file with [`RUNTIME_MODE`] (on Unix; elsewhere the default).
pub fn owner_only(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, RUNTIME_MODE);
    options
}

/// Creates `path` empty with [`RUNTIME_MODE`] when it does not exist (a database SQLite is about to
/// open, which it would create 0644), and leaves an existing file as it is.
pub fn create_owner_only(path: &Path) -> std::io::Result<()> {
    match owner_only(std::fs::OpenOptions::new().write(true).create_new(true)).open(path) {
        Err(error) if error.kind() != std::io::ErrorKind::AlreadyExists => Err(error),
        _ => Ok(()),
    }
}

/// Creates the folder `path` and those above it that are missing, owner-only (0700 on Unix): the
/// repository's shared folder of runtime state (leases and approvals, like the sidecar) and the
/// per-user folder outside the workspace (the ledger's head copy).
pub fn create_owner_only_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

/// The shared brain, relative to the workspace root: what people write for every agent, with one
/// section Chokepoint generates (`engine::brain`). A governance file: no agent writes it.
pub const BRAIN: &str = ".orchestration/CLAUDE.md";

/// The brain's generated part, relative to the workspace root: the hooks in force, the intents and
/// who holds each, the lessons (`engine::brain`). Rendered from this machine's live state, so it is
/// a runtime file, ignored by git, never committed.
pub const BRAIN_GENERATED: &str = ".orchestration/brain.generated.md";

/// The first line of a `.gitignore` Chokepoint writes.
pub const IGNORE_HEADER: &str = "# Written by Chokepoint: runtime state, not configuration.";

/// The whole `.gitignore` of a sidecar that has none: the header and [`RUNTIME_FILES`].
pub fn runtime_ignore() -> String {
    let mut text = format!("{IGNORE_HEADER}\n");
    for line in RUNTIME_FILES {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// An ignore file with `lines` in it: those it lacks added at its end, under `header` when it does
/// not have it yet; the file's own lines stay as they are, in their order.
pub fn with_lines(text: Option<&str>, header: &str, lines: &[&str]) -> String {
    let text = text.unwrap_or_default();
    let present: Vec<&str> = text.lines().map(str::trim).collect();
    let missing: Vec<&str> = lines.iter().copied().filter(|line| !present.contains(line)).collect();
    if missing.is_empty() {
        return text.to_owned();
    }
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !present.contains(&header) {
        out.push_str(header);
        out.push('\n');
    }
    for line in missing {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Paths of the governance files of one workspace.
#[derive(Debug, Clone)]
pub struct Sidecar {
    root: PathBuf,
    /// The git repository of the workspace, looked up on first need ([`Sidecar::repo`]) and shared
    /// by every clone, so an engine (and each of its stores) reads git's files once.
    repo: Arc<OnceLock<Option<Repo>>>,
}

/// Two sidecars are the same when they name the same workspace (the repository follows from it).
impl PartialEq for Sidecar {
    fn eq(&self, other: &Sidecar) -> bool {
        self.root == other.root
    }
}

impl Eq for Sidecar {}

impl Sidecar {
    pub fn new(workspace_root: impl Into<PathBuf>) -> Self {
        Sidecar { root: workspace_root.into(), repo: Arc::default() }
    }

    pub fn workspace_root(&self) -> &Path {
        &self.root
    }

    pub fn dir(&self) -> PathBuf {
        self.root.join(SIDECAR_DIR)
    }

    pub fn hooks_yaml(&self) -> PathBuf {
        self.dir().join("hooks.yaml")
    }

    pub fn active_intents_yaml(&self) -> PathBuf {
        self.dir().join("active_intents.yaml")
    }

    /// This worktree's own SQLite database of runtime state (`.orchestration/state.db`): what is
    /// this checkout's alone, the ledger's head. What agents coordinate on is in
    /// [`Sidecar::coordination_db`].
    pub fn state_db(&self) -> PathBuf {
        self.dir().join("state.db")
    }

    /// The git repository holding the workspace (`None` outside one), found by reading git's files
    /// once per sidecar and its clones ([`Repo::discover`]).
    pub fn repo(&self) -> Option<&Repo> {
        self.repo.get_or_init(|| Repo::discover(&self.root)).as_ref()
    }

    /// The SQLite database of what every process and every worktree of the repository coordinate on
    /// (intent leases and revocations, approved scope expansions, the brain's lessons, the agents'
    /// processes): `<git common dir>/chokepoint/state.db` ([`Repo::shared_dir`]), so that two
    /// worktrees' agents never both hold one intent; outside a repository, [`Sidecar::state_db`].
    /// Its folder is created (owner-only) by the first store that opens it.
    pub fn coordination_db(&self) -> PathBuf {
        match self.repo() {
            Some(repo) => repo.shared_dir().join("state.db"),
            None => self.state_db(),
        }
    }

    /// The ledger's single file of before chains (`ledger::chains`): read as one more chain when
    /// present, and never appended again.
    pub fn trace_ledger(&self) -> PathBuf {
        self.dir().join("agent_trace.jsonl")
    }

    /// The trace ledger's folder of chains: `<chain>.jsonl` files, one hash chain each, committed
    /// with the project (`ledger::chains`).
    pub fn trace_dir(&self) -> PathBuf {
        self.dir().join("trace")
    }

    /// The lock file that serialises this worktree's appends to the ledger, and names the chain they
    /// go to (ignored by git: each worktree has its own).
    pub fn trace_lock(&self) -> PathBuf {
        self.dir().join("agent_trace.lock")
    }

    /// The SQLite index of the ledger, rebuildable from it at any time. (The chain head is kept in
    /// the state database, which a rebuild of the index never touches.)
    pub fn trace_index(&self) -> PathBuf {
        self.dir().join("trace.db")
    }

    /// The texts of written files before and after each write, by hash, for the Trace view's diffs
    /// (`ledger::images`): a runtime file, which the ledger never depends on.
    pub fn images_db(&self) -> PathBuf {
        self.dir().join("images.db")
    }

    /// Where a live engine says its HTTP endpoint's URL and token (0600, while it serves).
    pub fn serve_file(&self) -> PathBuf {
        self.dir().join("serve.json")
    }

    /// The shared brain ([`BRAIN`]).
    pub fn brain(&self) -> PathBuf {
        self.root.join(BRAIN)
    }

    /// The brain's generated part ([`BRAIN_GENERATED`]).
    pub fn brain_generated(&self) -> PathBuf {
        self.root.join(BRAIN_GENERATED)
    }

    /// The lock file that serialises rewrites of the brain's generated section across processes.
    pub fn brain_lock(&self) -> PathBuf {
        self.dir().join("brain.lock")
    }

    /// The per-user folder outside the workspace where this workspace keeps what a shell command in
    /// the workspace must not reach (a copy of the ledger's head): `$XDG_STATE_HOME/chokepoint/<hash>`,
    /// else `~/.local/state/chokepoint/<hash>` (on Windows, where neither is usual,
    /// `%LOCALAPPDATA%\chokepoint\<hash>` before `~`), the hash naming the workspace's canonical path
    /// in 16 hex digits (as the live engine's socket is named). `None` when no variable gives an
    /// absolute folder. Nothing is created here.
    pub fn outside_state_dir(&self) -> Option<PathBuf> {
        use sha2::{Digest, Sha256};
        let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
        let local_app_data = || if cfg!(windows) { absolute("LOCALAPPDATA") } else { None };
        let base = absolute("XDG_STATE_HOME").or_else(local_app_data).or_else(|| absolute("HOME").map(|home| home.join(".local/state")))?;
        let canonical = std::fs::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone());
        let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
        let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        Some(base.join("chokepoint").join(name))
    }

    /// Where shell containment keeps the content it can restore (content-addressed).
    pub fn snapshot_store(&self) -> PathBuf {
        self.dir().join("snapshots")
    }

    /// Keeps the engine's runtime files (the state database, the snapshot store) out of version
    /// control: writes `.orchestration/.gitignore` naming them, once, if the folder has none. The
    /// configuration beside them is meant to be committed. Best effort: a read-only sidecar is not an
    /// error here.
    pub fn ignore_runtime_files(&self) {
        let file = self.dir().join(".gitignore");
        if self.exists() && !file.exists() {
            let _ = std::fs::write(file, runtime_ignore());
        }
    }

    /// Whether the workspace is governed at all: it has a sidecar folder.
    pub fn exists(&self) -> bool {
        self.dir().is_dir()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::repo::tests::git;
    use crate::base::sqlite::StateDb;

    /// A new git repository at `dir/name` (no commit yet), its workspace governed (a sidecar folder).
    fn governed_repo(dir: &Path, name: &str) -> PathBuf {
        let root = dir.join(name);
        std::fs::create_dir_all(root.join(SIDECAR_DIR)).unwrap();
        git(&root, &["init", "-q"]);
        root
    }

    /// Two worktrees of one repository coordinate in one database under git's common folder, each
    /// keeping its own state.db (the ledger's head); a folder in no repository keeps both in one.
    #[test]
    #[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
    fn the_worktrees_of_a_repository_share_one_coordination_database() {
        let dir = tempfile::tempdir().unwrap();
        let main = governed_repo(dir.path(), "repo");
        git(&main, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(&main, &["worktree", "add", "-q", "-b", "feature", "../wt2"]);
        let (first, second) = (Sidecar::new(&main), Sidecar::new(dir.path().join("wt2")));

        let common = std::fs::canonicalize(main.join(".git")).unwrap();
        assert_eq!(first.coordination_db(), common.join("chokepoint/state.db"));
        assert_eq!(second.coordination_db(), first.coordination_db());
        assert_ne!(second.state_db(), first.state_db(), "the ledger's head stays per worktree");
        assert_eq!(second.repo().unwrap().worktree_name(), "wt2");

        let elsewhere = Sidecar::new(dir.path().join("plain"));
        std::fs::create_dir_all(elsewhere.dir()).unwrap();
        assert!(elsewhere.repo().is_none());
        assert_eq!(elsewhere.coordination_db(), elsewhere.state_db());
    }

    /// The shared folder is made, owner-only, by the first open of a governed workspace's store, and
    /// never for a workspace that is not governed.
    #[cfg(unix)]
    #[test]
    fn the_shared_folder_is_made_owner_only_and_only_for_a_governed_workspace() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("repo");
        std::fs::create_dir_all(&main).unwrap();
        git(&main, &["init", "-q"]);
        let sidecar = Sidecar::new(&main);
        let db = sidecar.coordination_db();

        let ungoverned = StateDb::making_folder(&db, sidecar.dir());
        assert!(ungoverned.lock().is_err(), "no folder is made in .git for an ungoverned workspace");
        assert!(!db.parent().unwrap().exists());

        std::fs::create_dir_all(sidecar.dir()).unwrap();
        let governed = StateDb::making_folder(&db, sidecar.dir());
        drop(governed.lock().unwrap());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(db.parent().unwrap()), 0o700);
        assert_eq!(mode(&db), RUNTIME_MODE);

        // A shared folder that cannot be made is an error that says where and what to do.
        let other = governed_repo(dir.path(), "other");
        let sidecar = Sidecar::new(&other);
        std::fs::write(other.join(".git").join(crate::base::repo::SHARED_DIR), "not a folder").unwrap();
        let error =
            StateDb::making_folder(sidecar.coordination_db(), sidecar.dir()).lock().err().expect("no folder, no database").to_string();
        assert!(error.contains("make git's folder writable"), "{error}");
    }

    /// The first open that makes the shared folder adopts the named tables (with their indexes and
    /// rows) from the worktree's own state.db; a later open adopts nothing again.
    #[test]
    #[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
    fn the_shared_database_adopts_the_worktrees_tables_once() {
        let dir = tempfile::tempdir().unwrap();
        let main = governed_repo(dir.path(), "repo");
        let sidecar = Sidecar::new(&main);
        let old = rusqlite::Connection::open(sidecar.state_db()).unwrap();
        old.execute_batch(
            "CREATE TABLE kept_v1 (key TEXT PRIMARY KEY, n INTEGER NOT NULL); CREATE INDEX kept_v1_by_n ON kept_v1 (n);
             INSERT INTO kept_v1 VALUES ('a', 1), ('b', 2);
             CREATE TABLE left_v1 (x INTEGER); INSERT INTO left_v1 VALUES (1);",
        )
        .unwrap();
        drop(old);
        let shared =
            || StateDb::making_folder(sidecar.coordination_db(), sidecar.dir()).adopting(sidecar.state_db(), &["kept_v1", "absent_v1"]);
        let first = shared();
        {
            let conn = first.lock().unwrap();
            let rows: i64 = conn.query_row("SELECT COUNT(*) FROM kept_v1", [], |r| r.get(0)).unwrap();
            assert_eq!(rows, 2);
            let names: Vec<String> = conn
                .prepare("SELECT name FROM sqlite_master ORDER BY name")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(names, ["kept_v1", "kept_v1_by_n", "sqlite_autoindex_kept_v1_1"], "only the named tables, with their indexes");
            conn.execute("DELETE FROM kept_v1 WHERE key = 'a'", []).unwrap();
        }
        drop(first);
        let again = shared();
        let rows: i64 = again.lock().unwrap().query_row("SELECT COUNT(*) FROM kept_v1", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 1, "adopted once, when the folder was made");
    }
}

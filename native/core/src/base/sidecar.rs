//! The sidecar folder `.orchestration/`: where a workspace keeps its intents, hook configuration,
//! ledger and lock database. One place names these paths so no other module spells them.

use std::path::{Path, PathBuf};

/// The name of the sidecar folder at the root of a governed workspace.
pub const SIDECAR_DIR: &str = ".orchestration";

/// The sidecar's `.gitignore`, relative to the workspace root.
pub const IGNORE_FILE: &str = ".orchestration/.gitignore";

/// The engine's runtime files, as lines of the sidecar's `.gitignore`: state, not configuration.
pub const RUNTIME_FILES: &[&str] =
    &["state.db", "state.db-*", "trace.db", "trace.db-*", "agent_trace.lock", "snapshots/", "serve.json", "brain.lock"];

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

/// The shared brain, relative to the workspace root: what people write for every agent, with one
/// section Chokepoint generates (`engine::brain`). A governance file: no agent writes it.
pub const BRAIN: &str = ".orchestration/CLAUDE.md";

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

/// Paths of the governance files of one workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sidecar {
    root: PathBuf,
}

impl Sidecar {
    pub fn new(workspace_root: impl Into<PathBuf>) -> Self {
        Sidecar { root: workspace_root.into() }
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

    /// The SQLite database of runtime state shared by every process on this workspace (intent leases).
    pub fn state_db(&self) -> PathBuf {
        self.dir().join("state.db")
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

    /// Where a live engine says its HTTP endpoint's URL and token (0600, while it serves).
    pub fn serve_file(&self) -> PathBuf {
        self.dir().join("serve.json")
    }

    /// The shared brain ([`BRAIN`]).
    pub fn brain(&self) -> PathBuf {
        self.root.join(BRAIN)
    }

    /// The lock file that serialises rewrites of the brain's generated section across processes.
    pub fn brain_lock(&self) -> PathBuf {
        self.dir().join("brain.lock")
    }

    /// The per-user folder outside the workspace where this workspace keeps what a shell command in
    /// the workspace must not reach (a copy of the ledger's head): `$XDG_STATE_HOME/chokepoint/<hash>`,
    /// else `~/.local/state/chokepoint/<hash>`, the hash naming the workspace's canonical path in 16
    /// hex digits (as the live engine's socket is named). `None` when neither variable gives an
    /// absolute folder. Nothing is created here.
    pub fn outside_state_dir(&self) -> Option<PathBuf> {
        use sha2::{Digest, Sha256};
        let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
        let base = absolute("XDG_STATE_HOME").or_else(|| absolute("HOME").map(|home| home.join(".local/state")))?;
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

//! The whole ledger of a worktree checked, git-aware (`chokepoint trace verify`): every chain file on
//! its own, exactly as `verify.rs` checks one file, then against the heads this worktree knows.
//!
//! - **What git may do to the ledger.** The chains are committed, so a `checkout` or `switch` to a
//!   branch made before some records, a `stash`, a `reset --hard` or a `pull` leave a chain's file
//!   shorter than its head, or take it away, and a head outside the checkout cannot tell that from
//!   someone cutting records off. Here (never on a hook's path) git is asked: a chain's file that is
//!   exactly what git has for it (`git status` names nothing: clean against the index and `HEAD`), or
//!   a missing file that git has in some commit and that was not deleted from the index or the work
//!   tree, is explained by git. The records the head counts beyond it are reported as not in this
//!   checkout, with the commit that holds them when one does (another branch, a stash), and the
//!   ledger passes.
//! - **What stays tampering.** A chain's file that is shorter than its head and differs from what
//!   git has (cut by hand), a removed file that no commit holds (an uncommitted chain deleted), a
//!   file whose record at the head's count hashes differently, and every edited, inserted, deleted
//!   or reordered line: git never produces those. Nothing is explained outside a git repository.
//! - **Chains with no head here** (merged in from another branch or worktree, a fresh clone) verify
//!   on their own: their chain, their numbering, their end.
//! - **Accepted.** A chain reset by git (`reset --hard`, `checkout -- <file>`) to a committed version
//!   passes with a note, since git cannot tell whose reset it was. Pinned by
//!   `native/cli/tests/trace_git.rs` (`tampering_git_does_not_explain_is_still_caught`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::chains;
use super::error::LedgerError;
use super::head::{self, Heads};
use super::record::{Head, sha256_hex};
use super::verify::{Problem, ProblemKind, Verification, verify};
use crate::base::sidecar::Sidecar;

/// How one chain verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainVerification {
    pub chain: String,
    pub path: PathBuf,
    /// Whether the file exists.
    pub present: bool,
    /// The file's check, against the strongest head known here (against none when git explains
    /// why the file holds fewer records than it).
    pub verification: Verification,
    /// Both heads known here, if any.
    pub heads: Option<Heads>,
    /// Records the head counts that this checkout does not hold, and git explains.
    pub not_here: Option<NotHere>,
}

/// Records of a chain that git explains are not in this checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotHere {
    /// How many records the head counts beyond the file as it is.
    pub records: u64,
    /// A commit that holds the chain up to its head (another branch, a stash); `None` when no commit
    /// does (a `reset --hard` or `checkout` of the file discarded some of them).
    pub kept_in: Option<String>,
}

impl std::fmt::Display for NotHere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kept_in {
            Some(commit) => write!(
                f,
                "{} records are not in this checkout; commit {} holds them (another branch or a stash)",
                self.records,
                short(commit)
            ),
            None => write!(
                f,
                "{} records are not in this checkout: git discarded them (a reset --hard or a checkout of the file), and no commit \
                 holds them all",
                self.records
            ),
        }
    }
}

/// The outcome of [`verify_ledger`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerVerification {
    /// Every chain: the files found (the legacy file first, then by name), then the chains known
    /// here by their heads whose file is missing.
    pub chains: Vec<ChainVerification>,
}

impl LedgerVerification {
    /// The first chain that fails, and its problem.
    pub fn first_problem(&self) -> Option<(&ChainVerification, &Problem)> {
        self.chains.iter().find_map(|chain| chain.verification.problem.as_ref().map(|problem| (chain, problem)))
    }

    pub fn is_intact(&self) -> bool {
        self.first_problem().is_none()
    }

    /// Records in every chain file.
    pub fn records(&self) -> u64 {
        self.chains.iter().map(|chain| chain.verification.records).sum()
    }
}

/// Checks every chain of `sidecar`'s ledger (see the module's comment). Reads only; runs `git` for a
/// chain that holds fewer records than its head, or is missing. `Err` when a file or the heads
/// cannot be read.
pub fn verify_ledger(sidecar: &Sidecar) -> Result<LedgerVerification, LedgerError> {
    let files = chains::list(sidecar).map_err(|source| LedgerError::Io {
        path: sidecar.trace_dir(),
        op: "list the chains in",
        source: std::sync::Arc::new(source),
    })?;
    let mut heads = head::read_all(sidecar)?;
    let mut out = Vec::with_capacity(files.len());
    let mut git = Git::new(sidecar.workspace_root());
    for file in files {
        let heads = heads.remove(&file.chain);
        out.push(check(&file.chain, &file.path, true, heads, &mut git)?);
    }
    for (chain, heads) in heads {
        let path = chains::path_of(sidecar, &chain);
        let present = path.exists();
        out.push(check(&chain, &path, present, Some(heads), &mut git)?);
    }
    Ok(LedgerVerification { chains: out })
}

fn check(chain: &str, path: &Path, present: bool, heads: Option<Heads>, git: &mut Git) -> Result<ChainVerification, LedgerError> {
    let head = heads.as_ref().and_then(Heads::strongest).cloned();
    let verification = verify(path, head.as_ref())?;
    let mut result = ChainVerification { chain: chain.to_owned(), path: path.to_owned(), present, verification, heads, not_here: None };
    let shorter = result.verification.problem.as_ref().is_some_and(|p| p.kind == ProblemKind::Truncated)
        && head.as_ref().is_some_and(|head| result.verification.records < head.count);
    if let (true, Some(head)) = (shorter, head) {
        // Intact on its own, and git has it as it is: what is missing is elsewhere in git, or was
        // discarded by it.
        let alone = verify(path, None)?;
        if alone.is_intact()
            && let Some(kept_in) = git.explains(path, present, &head)
        {
            result.not_here = Some(NotHere { records: head.count - alone.records, kept_in });
            result.verification = alone;
        }
    }
    Ok(result)
}

/// The git of a workspace, asked only when a chain needs explaining.
struct Git {
    root: PathBuf,
    /// `None` until asked; then whether the workspace is in a git work tree.
    repository: Option<bool>,
}

impl Git {
    fn new(root: &Path) -> Git {
        Git { root: root.to_owned(), repository: None }
    }

    /// Whether git explains that the chain at `path` holds fewer records than `head` (see the
    /// module's comment): `Some(commit that holds the records, if any)`, or `None` when it does not.
    fn explains(&mut self, path: &Path, present: bool, head: &Head) -> Option<Option<String>> {
        if !*self.repository.get_or_insert_with(|| crate::base::repo::Repo::discover(&self.root).is_some()) {
            return None;
        }
        let rel = path.strip_prefix(&self.root).ok()?.to_string_lossy().into_owned();
        // Clean against the index and HEAD: the file is what git has for it (or, missing, git has
        // nothing to say about it: neither tracked nor deleted).
        let status = self.run(&["status", "--porcelain", "--untracked-files=all", "--", &rel])?;
        if !status.trim().is_empty() {
            return None;
        }
        let kept_in = self.holding(&rel, head);
        // A missing file is explained only by a commit that has it (a switch to a branch without it
        // took it away; a reset may have discarded its last records before): an uncommitted chain
        // that is gone was removed by hand (or by `git clean`, which is the same).
        if !present && kept_in.is_none() && self.run(&["log", "--all", "--format=%H", "-n", "1", "--", &rel])?.trim().is_empty() {
            return None;
        }
        Some(kept_in)
    }

    /// A commit on any ref (branches, tags, the stash and what it keeps) whose version of `rel` holds
    /// record number `head.count` hashing to `head.hash`. Looks at the newest 64 commits that touched
    /// the file.
    fn holding(&self, rel: &str, head: &Head) -> Option<String> {
        let commits = self.run(&["log", "--all", "--format=%H", "-n", "64", "--", rel])?;
        commits
            .lines()
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .find(|commit| {
                self.show(&format!("{commit}:{rel}")).is_some_and(|bytes| {
                    let count = usize::try_from(head.count).unwrap_or(usize::MAX);
                    bytes.split(|&b| b == b'\n').nth(count.saturating_sub(1)).is_some_and(|line| sha256_hex(line) == head.hash)
                })
            })
            .map(str::to_owned)
    }

    fn run(&self, args: &[&str]) -> Option<String> {
        let output = self.command(args).output().ok()?;
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    }

    fn show(&self, object: &str) -> Option<Vec<u8>> {
        let output = self.command(&["show", object]).output().ok()?;
        output.status.success().then_some(output.stdout)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("git");
        command.arg("-C").arg(&self.root).args(["-c", "core.quotepath=off"]).args(args);
        command.stdin(Stdio::null()).stderr(Stdio::null());
        // What the caller's environment says about another repository is not this workspace's.
        for var in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"] {
            command.env_remove(var);
        }
        command
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

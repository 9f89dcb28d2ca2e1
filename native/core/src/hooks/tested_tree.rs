//! What `run_tests` remembers between runs: the tree its command last passed on. A completion gate
//! fires at the end of every turn (VS Code's agent's `Stop` follows every chat reply, a question
//! answered included), and a whole test suite run again over a tree nothing changed is minutes of a
//! person's wait for the same answer. A tree the same command passed on is not tested again.
//!
//! - **What "the tree" is.** A fingerprint: `HEAD`, the whole diff against it (binary included)
//!   and every untracked file that is not ignored, with its content, and the test command: SHA-256
//!   of all of them, `.orchestration/` left out (each judged event appends to the ledger there). Any change an agent or a person made since, committed or not, changes it. Without
//!   git there is no fingerprint and the tests always run.
//! - **Why it is kept outside the workspace** (`Sidecar::outside_state_dir`, as the ledger's heads
//!   are): a fingerprint an agent could write would let it skip the tests, and a gate must hold
//!   against the agent. A command contained in the scope cannot reach that folder.
//! - **Only a pass is remembered.** A failure, a timeout or a crash leaves the last pass as it was,
//!   and the next completion runs the tests again.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use crate::base::sidecar::Sidecar;

/// The file, in the workspace's outside state folder, that holds the last pass.
const FILE: &str = "tests-passed";

/// The tree is the code, not `.orchestration/`: the completion gate's own record lands in the
/// ledger there, so counting it would make every tree new.
const OUTSIDE_THE_SIDECAR: &str = ":(exclude).orchestration";

/// The fingerprint of the workspace's tree for `command`, or `None` when it is not a git work tree
/// (or git cannot say).
pub fn fingerprint(workspace: &Path, command: &[String]) -> Option<String> {
    let mut hash = Sha256::new();
    for arg in command {
        hash.update(arg.as_bytes());
        hash.update([0]);
    }
    hash.update(git(workspace, &["rev-parse", "--verify", "-q", "HEAD"]).unwrap_or_default());
    // The diff is streamed into the hash: never cut at an output cap, so a change past it counts.
    let mut diff = Command::new("git")
        .args(["diff", "HEAD", "--binary", "--no-ext-diff", "--no-color", "--", ".", OUTSIDE_THE_SIDECAR])
        .current_dir(workspace)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut out = diff.stdout.take()?;
    let mut chunk = [0u8; 64 * 1024];
    loop {
        match out.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => hash.update(&chunk[..n]),
            Err(_) => return None,
        }
    }
    if !diff.wait().ok()?.success() {
        return None;
    }
    let untracked = git(workspace, &["ls-files", "--others", "--exclude-standard", "-z", "--", ".", OUTSIDE_THE_SIDECAR])?;
    for path in untracked.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        hash.update(path);
        hash.update([0]);
        let file = workspace.join(String::from_utf8_lossy(path).as_ref());
        match std::fs::read(&file) {
            Ok(content) => hash.update(Sha256::digest(&content)),
            // A folder (a nested repository) or a file gone meanwhile: its name stands for it.
            Err(_) => hash.update(b"?"),
        }
    }
    Some(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn git(workspace: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .args(args)
        .current_dir(workspace)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    // `rev-parse --verify -q HEAD` fails in a repository without a commit: no HEAD, still a tree.
    (out.status.success() || args.first() == Some(&"rev-parse")).then_some(out.stdout)
}

fn file(workspace: &Path) -> Option<PathBuf> {
    Some(Sidecar::new(workspace).outside_state_dir()?.join(FILE))
}

/// When (unix milliseconds) the tests last passed on the tree `fingerprint` names, if they did.
pub fn passed_on(workspace: &Path, fingerprint: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file(workspace)?).ok()?;
    let (remembered, at) = text.trim().split_once(' ')?;
    (remembered == fingerprint).then(|| at.parse().ok())?
}

/// Remembers that the tests passed on the tree `fingerprint` names, now. Best effort: a folder that
/// cannot be written means the tests run again next time, which is never wrong.
pub fn remember_pass(workspace: &Path, fingerprint: &str) {
    let Some(path) = file(workspace) else { return };
    let Some(dir) = path.parent() else { return };
    if crate::base::sidecar::create_owner_only_dir(dir).is_err() {
        return;
    }
    let temporary = path.with_extension("tmp");
    let text = format!("{fingerprint} {}\n", crate::base::clock::now_ms());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    let written = crate::base::sidecar::owner_only(&mut options)
        .open(&temporary)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    if written.is_ok() {
        let _ = std::fs::rename(&temporary, &path);
    }
}

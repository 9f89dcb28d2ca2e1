//! The git repository a workspace belongs to, found by reading git's own files (never by running
//! git: this runs on a hook's hot path, once per process).
//!
//! - **Why the common folder.** Every worktree of a repository (`git worktree add`) has a git folder
//!   of its own (`<common>/worktrees/<name>`, named by the `.git` *file* at its root) and shares one
//!   common folder (`.git` of the main checkout, named by the worktree's `commondir` file). What the
//!   agents of every worktree coordinate on lives under the common folder ([`Repo::shared_dir`]),
//!   which no checkout, merge or reset touches and which no work tree holds.
//! - **A workspace below the root of its work tree** (one package of a monorepo, governed on its own)
//!   gets a shared folder of its own, named by its path in the work tree, so two governed folders of
//!   one repository never share intents they do not have in common.
//! - **Not a repository** (no `.git` above the workspace, or one git's files do not describe):
//!   [`Repo::discover`] says `None` and the caller keeps its state in the workspace, as before.

use std::path::{Component, Path, PathBuf};

/// The folder under a repository's common git folder that holds Chokepoint's shared state.
pub const SHARED_DIR: &str = "chokepoint";

/// The git repository of a workspace: which worktree it is, and where the state its worktrees share
/// is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The root of the work tree holding the workspace (where its `.git` is).
    pub work_tree: PathBuf,
    /// This worktree's git folder (`.git` itself for the main checkout).
    pub git_dir: PathBuf,
    /// The folder every worktree of the repository shares (`git rev-parse --git-common-dir`).
    pub common_dir: PathBuf,
    /// The workspace's path inside its work tree, `/`-separated; empty at the work tree's root.
    pub subdir: String,
}

/// One worktree of a repository, as [`Repo::worktrees`] lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// Its root folder.
    pub root: PathBuf,
    /// Its git folder.
    pub git_dir: PathBuf,
    /// Whether it is the repository's main checkout (the one whose `.git` is the common folder).
    pub main: bool,
}

impl Repo {
    /// The repository holding `workspace` (an absolute path), found by looking for `.git` in it and
    /// each folder above it. `None` when there is none, or when what is found is not a git folder
    /// (a `.git` file that names no folder, a folder without `HEAD`).
    pub fn discover(workspace: &Path) -> Option<Repo> {
        let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
        let mut dir = Some(workspace.as_path());
        while let Some(here) = dir {
            let dot_git = here.join(".git");
            if let Ok(meta) = std::fs::symlink_metadata(&dot_git) {
                let git_dir = if meta.is_dir() { Some(dot_git) } else { read_gitdir_file(&dot_git, here) };
                let git_dir = git_dir.filter(|d| d.join("HEAD").is_file())?;
                let common_dir = common_dir_of(&git_dir);
                let subdir = relative(&workspace, here);
                return Some(Repo { work_tree: here.to_path_buf(), git_dir, common_dir, subdir });
            }
            dir = here.parent();
        }
        None
    }

    /// Where the state the worktrees of this repository share is kept: `<common>/chokepoint`, and
    /// below it the workspace's path in its work tree when it is not the root. Nothing is created.
    pub fn shared_dir(&self) -> PathBuf {
        let base = self.common_dir.join(SHARED_DIR);
        if self.subdir.is_empty() { base } else { base.join("folders").join(&self.subdir) }
    }

    /// This worktree's name as people know it: the name of its root folder.
    pub fn worktree_name(&self) -> String {
        name_of(&self.work_tree)
    }

    /// Whether this is a worktree added to the repository (`git worktree add`), not its main checkout.
    pub fn is_linked(&self) -> bool {
        self.git_dir != self.common_dir
    }

    /// The branch checked out now (`HEAD` read again on each call: a checkout changes it), or, when
    /// `HEAD` is detached, `detached at <first 12 hex digits>`. `None` when `HEAD` cannot be read.
    pub fn branch(&self) -> Option<String> {
        let head = std::fs::read_to_string(self.git_dir.join("HEAD")).ok()?;
        let head = head.trim();
        match head.strip_prefix("ref:") {
            Some(reference) => {
                let reference = reference.trim();
                Some(reference.strip_prefix("refs/heads/").unwrap_or(reference).to_owned())
            }
            None if head.len() >= 12 && head.bytes().all(|b| b.is_ascii_hexdigit()) => Some(format!("detached at {}", &head[..12])),
            None => None,
        }
    }

    /// Every worktree of the repository: the main checkout (unless the repository is bare) and each
    /// added one whose folder still exists, as git's own files name them.
    pub fn worktrees(&self) -> Vec<Worktree> {
        let mut out = Vec::new();
        let main_root = self.common_dir.parent().map(Path::to_path_buf);
        if self.common_dir.file_name().is_some_and(|n| n == ".git")
            && let Some(root) = main_root
        {
            out.push(Worktree { root, git_dir: self.common_dir.clone(), main: true });
        }
        let Ok(entries) = std::fs::read_dir(self.common_dir.join("worktrees")) else { return out };
        let mut linked: Vec<Worktree> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let git_dir = entry.path();
                let gitdir_file = std::fs::read_to_string(git_dir.join("gitdir")).ok()?;
                // `gitdir` names the worktree's `.git` file; its folder is the worktree's root.
                let dot_git = PathBuf::from(gitdir_file.trim());
                let dot_git = if dot_git.is_absolute() { dot_git } else { git_dir.join(dot_git) };
                let root = dot_git.parent()?.to_path_buf();
                root.is_dir().then_some(Worktree { root, git_dir, main: false })
            })
            .collect();
        linked.sort_by(|a, b| a.root.cmp(&b.root));
        out.extend(linked);
        out
    }
}

impl Repo {
    /// This governed folder in every other worktree of the repository (the same `subdir` below each
    /// other worktree's root), canonical: where the other worktrees' live engines, ledgers and
    /// sessions are. For the few callers that reach across worktrees (the Sessions view, the
    /// approvals of every engine, a relayed ask), never a hook's hot path.
    pub fn other_workspaces(&self) -> Vec<PathBuf> {
        let canonical = |path: PathBuf| std::fs::canonicalize(&path).unwrap_or(path);
        let here = canonical(self.work_tree.join(&self.subdir));
        self.worktrees().into_iter().map(|w| canonical(w.root.join(&self.subdir))).filter(|other| *other != here).collect()
    }
}

impl Repo {
    /// The URL of the remote `name` as the repository's `config` file sets it (`[remote "origin"]`,
    /// `url = …`), read from the common folder; `None` when it has no such remote.
    pub fn remote_url(&self, name: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.common_dir.join("config")).ok()?;
        let header = format!("[remote \"{name}\"]");
        let mut inside = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                inside = line == header;
            } else if inside
                && let Some((key, value)) = line.split_once('=')
                && key.trim() == "url"
            {
                return Some(value.trim().trim_matches('"').to_owned());
            }
        }
        None
    }
}

impl Worktree {
    /// Its name as people know it: the name of its root folder.
    pub fn name(&self) -> String {
        name_of(&self.root)
    }
}

fn name_of(root: &Path) -> String {
    root.file_name().map_or_else(|| root.to_string_lossy().into_owned(), |n| n.to_string_lossy().into_owned())
}

/// The git folder a `.git` file names (`gitdir: <path>`, relative to the file's folder when not
/// absolute).
fn read_gitdir_file(file: &Path, base: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let path = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let path = PathBuf::from(path);
    let path = if path.is_absolute() { path } else { base.join(path) };
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

/// The common folder of `git_dir`: what its `commondir` file names (relative to it when not
/// absolute), else `git_dir` itself.
fn common_dir_of(git_dir: &Path) -> PathBuf {
    let Ok(text) = std::fs::read_to_string(git_dir.join("commondir")) else { return git_dir.to_path_buf() };
    let path = PathBuf::from(text.trim());
    let path = if path.is_absolute() { path } else { git_dir.join(path) };
    std::fs::canonicalize(&path).unwrap_or(path)
}

/// `path` relative to `base` (`base` is one of its ancestors), `/`-separated.
fn relative(path: &Path, base: &Path) -> String {
    let rest = path.strip_prefix(base).unwrap_or(Path::new(""));
    rest.components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::process::Command;

    /// Runs git in `dir` with a fixed identity and default branch (`main`); also for the tests of
    /// the modules that keep state per repository (`base::sidecar`).
    pub(crate) fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir)
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?}");
    }

    fn rev_parse(dir: &Path, what: &str) -> PathBuf {
        let out = Command::new("git").args(["rev-parse", "--path-format=absolute", what]).current_dir(dir).output().unwrap();
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    }

    #[test]
    #[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
    fn finds_the_common_folder_of_a_worktree_as_git_does() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("repo");
        std::fs::create_dir(&main).unwrap();
        git(&main, &["init", "-q"]);
        git(&main, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(&main, &["worktree", "add", "-q", "-b", "feature", "../wt2"]);
        let wt2 = dir.path().join("wt2");

        let first = Repo::discover(&main).unwrap();
        let second = Repo::discover(&wt2).unwrap();
        assert_eq!(first.common_dir, rev_parse(&main, "--git-common-dir"));
        assert_eq!(second.common_dir, rev_parse(&wt2, "--git-common-dir"));
        assert_eq!(second.git_dir, rev_parse(&wt2, "--git-dir"));
        assert_eq!(first.shared_dir(), second.shared_dir());
        assert!(!first.is_linked() && second.is_linked());
        assert_eq!(first.branch().as_deref(), Some("main"));
        assert_eq!(second.branch().as_deref(), Some("feature"));
        assert_eq!(second.worktree_name(), "wt2");
        let names: Vec<_> = first.worktrees().iter().map(Worktree::name).collect();
        assert_eq!(names, ["repo", "wt2"]);
        assert_eq!(first.other_workspaces(), [std::fs::canonicalize(&wt2).unwrap()]);
        assert_eq!(second.other_workspaces(), [std::fs::canonicalize(&main).unwrap()]);
    }

    #[test]
    #[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
    fn a_governed_folder_below_the_root_shares_with_its_own_worktrees_only() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("repo");
        std::fs::create_dir_all(main.join("packages/api")).unwrap();
        git(&main, &["init", "-q"]);
        let package = Repo::discover(&main.join("packages/api")).unwrap();
        let root = Repo::discover(&main).unwrap();
        assert_eq!(package.subdir, "packages/api");
        assert_ne!(package.shared_dir(), root.shared_dir());
        assert!(package.shared_dir().starts_with(root.shared_dir()));
    }

    #[test]
    #[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
    fn a_detached_head_and_a_folder_that_is_no_repository() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Repo::discover(dir.path()), None, "a temporary folder is in no repository");
        let main = dir.path().join("repo");
        std::fs::create_dir(&main).unwrap();
        git(&main, &["init", "-q"]);
        git(&main, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(&main, &["checkout", "-q", "--detach"]);
        let branch = Repo::discover(&main).unwrap().branch().unwrap();
        assert!(branch.starts_with("detached at "), "{branch}");
    }
}

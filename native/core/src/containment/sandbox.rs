//! Kernel-enforced confinement of a command's writes: Landlock on Linux, Seatbelt on macOS
//! (`seatbelt.rs`'s profile, applied here).
//!
//! The command runs inside a Landlock domain that handles only the *write-class* file system rights
//! of the best ABI the kernel offers: reads stay unrestricted everywhere, writes (create, write,
//! truncate, remove, rename, link, make device/fifo/socket/symlink, device ioctls) are allowed only
//! beneath the directories given, plus the device files a shell needs.
//!
//! How this stays free of `unsafe`: a Landlock domain belongs to a thread and is inherited across
//! fork and exec. So a short-lived std thread restricts itself, spawns the command (which inherits the
//! domain) and ends; the `Child` goes back to the caller. No other thread of this process is ever
//! restricted, and no `pre_exec` hook is needed.
//!
//! On macOS the confinement wraps the program instead: the command line becomes
//! `/usr/bin/sandbox-exec -p <profile> -D W0=<folder> … -- <program> <args>` (`seatbelt.rs`'s
//! `confined_argv`, a pure function of its arguments, tested everywhere), built by the caller before it configures the
//! `Command` (whose stdio cannot be read back, so a `Command` cannot be rewrapped here), and
//! [`spawn_confined`] reports it enforced only when the program it is given is that wrapper. A Mac
//! without `sandbox-exec` refuses to run the command (`seatbelt::confine` says why): never unconfined in
//! its place.
//!
//! On Windows, or where the kernel has no Landlock, the command is spawned as it is and the
//! confinement says why it is `Unavailable`: the caller then relies on the snapshot's comparison
//! (`snapshot.rs`) and must say so.

use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command};

/// What the kernel enforces on a spawned command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confinement {
    /// Every write-class right of this ABI is handled: writes outside the granted directories fail.
    /// `abi` is Landlock's; 0 for macOS's Seatbelt, which has no ABI versions.
    Enforced { abi: u32 },
    /// Enforced, but this ABI cannot control everything: `missing` says what stays uncontrolled.
    Partial { abi: u32, missing: Vec<String> },
    /// The command runs unconfined.
    Unavailable { reason: String },
}

crate::base::names::names!(Confinement {
    Self::Enforced { .. } => "enforced",
    Self::Partial { .. } => "partial",
    Self::Unavailable { .. } => "unavailable",
});

impl Confinement {
    pub fn is_enforced(&self) -> bool {
        !matches!(self, Confinement::Unavailable { .. })
    }

    /// One line that [`Confinement::parse`] reads back: how an isolated command's init tells the
    /// engine what the kernel enforced on the command (`isolate.rs`).
    pub fn describe(&self) -> String {
        match self {
            Confinement::Enforced { abi } => format!("enforced {abi}"),
            Confinement::Partial { abi, missing } => format!("partial {abi} {}", missing.join("\t")),
            Confinement::Unavailable { reason } => format!("unavailable {reason}"),
        }
    }

    pub fn parse(line: &str) -> Confinement {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let abi = |s: &str| s.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
        match word {
            "enforced" => Confinement::Enforced { abi: abi(rest) },
            "partial" => Confinement::Partial {
                abi: abi(rest),
                missing: rest.split_once(' ').map(|(_, m)| m.split('\t').map(str::to_owned).collect()).unwrap_or_default(),
            },
            "unavailable" => Confinement::Unavailable { reason: rest.to_owned() },
            _ => Confinement::Unavailable { reason: format!("the command's confinement is not known ({line})") },
        }
    }
}

/// macOS's Seatbelt wrapper, always by its absolute path: a `sandbox-exec` earlier on `PATH` could be
/// anything (`seatbelt.rs` builds its command line).
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// Device files a shell and its tools write to: writing them changes no file on disk, and refusing
/// them breaks `2>/dev/null` and terminal handling.
pub const SHELL_WRITABLE: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"];

/// The Landlock ABI of the running kernel, or `None` off Linux and where Landlock is not built in or
/// not enabled at boot. Probed on every call (one system call): the answer is what the kernel says
/// now, not what the crate was built against.
pub fn landlock_abi() -> Option<u32> {
    imp::abi()
}

/// The directory each scope glob can write into: the glob's literal prefix, up to the first
/// component holding a glob metacharacter (`*`, `?`, `[`, `{`, or an escape). A pattern whose last
/// component is literal names a file (`owned_scope` globs match paths exactly, so `src/auth` matches
/// only `src/auth`), so it gives its parent. A glob that is absolute or climbs with `..` names nothing
/// inside the workspace and gives no directory. The result is deduplicated, and a directory beneath
/// another one in the list is dropped (the ancestor's grant covers it).
pub fn scope_dirs(root: &Path, globs: &[String]) -> Vec<PathBuf> {
    let mut prefixes: Vec<Vec<&str>> = Vec::new();
    for glob in globs {
        if glob.starts_with('/') {
            continue;
        }
        let parts: Vec<&str> = glob.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
        if parts.is_empty() || parts.contains(&"..") {
            continue;
        }
        let literal = parts.iter().position(|p| p.contains(['*', '?', '[', ']', '{', '}', '\\'])).unwrap_or(parts.len());
        // The last component is a name, not a directory, whether literal or not.
        prefixes.push(parts[..literal.min(parts.len() - 1)].to_vec());
    }
    prefixes.sort();
    prefixes.dedup();
    let mut kept: Vec<Vec<&str>> = Vec::new();
    for p in prefixes {
        // Sorted, so an ancestor always comes before its descendants.
        if !kept.iter().any(|k| p.starts_with(k)) {
            kept.push(p);
        }
    }
    kept.into_iter()
        .map(|parts| {
            let mut dir = root.to_path_buf();
            dir.extend(parts.iter().map(|p| Component::Normal(p.as_ref())));
            dir
        })
        .collect()
}

/// Whether this platform confines a command's writes: Linux with Landlock, and macOS (Seatbelt; a
/// Mac whose `sandbox-exec` is missing still answers yes, and `seatbelt::confined_argv` refuses the command).
pub fn can_confine() -> bool {
    imp::can_confine()
}

/// Spawns `command` confined to writing beneath `writable` (directories or single files) and the
/// [`SHELL_WRITABLE`] devices. A path in `writable` that does not exist is not granted (Landlock
/// grants open file descriptors; create it first if it must be writable). When Landlock is not
/// available, or the ruleset cannot be built, the command is spawned unconfined and the confinement
/// says why; only a failure to spawn the command at all is an `Err`.
pub fn spawn_confined(command: Command, writable: &[PathBuf]) -> std::io::Result<(Child, Confinement)> {
    imp::spawn_confined(command, writable)
}

/// Spawns `command` without confinement, reporting `reason` as why.
pub fn spawn_unconfined(mut command: Command, reason: &str) -> std::io::Result<(Child, Confinement)> {
    Ok((command.spawn()?, Confinement::Unavailable { reason: reason.to_owned() }))
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{Confinement, SHELL_WRITABLE};
    use landlock::{
        ABI, AccessFs, BitFlags, LandlockStatus, PathBeneath, PathFd, RestrictSelf, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    };
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command};

    /// The kernel's Landlock status, read without restricting anything: a `RestrictSelf` with no flag
    /// and no `no_new_privs` makes no restricting system call, it only reports the probed status.
    fn status() -> LandlockStatus {
        match RestrictSelf::default().no_new_privs(false).apply() {
            Ok(s) => s.landlock,
            Err(_) => LandlockStatus::NotImplemented,
        }
    }

    fn number(abi: ABI) -> u32 {
        // `ABI` is non-exhaustive; its `Display` is the number for every supported version.
        abi.to_string().parse().unwrap_or(0)
    }

    pub fn abi() -> Option<u32> {
        match status() {
            LandlockStatus::Available { effective_abi, kernel_abi } => {
                Some(kernel_abi.and_then(|k| u32::try_from(k).ok()).unwrap_or_else(|| number(effective_abi)))
            }
            LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => None,
        }
    }

    /// What the write-class rights of `abi` leave uncontrolled, as the kernel documents it.
    fn missing(abi: ABI) -> Vec<String> {
        let have = AccessFs::from_write(abi);
        let mut out = Vec::new();
        if !have.contains(AccessFs::Refer) {
            out.push("linking or renaming a file into another directory (ABI < 2 always refuses it, even inside the scope)".to_owned());
        }
        if !have.contains(AccessFs::Truncate) {
            out.push("truncating an existing file with truncate(2) (ABI < 3)".to_owned());
        }
        out
    }

    pub fn can_confine() -> bool {
        abi().is_some()
    }

    pub fn spawn_confined(command: Command, writable: &[PathBuf]) -> std::io::Result<(Child, Confinement)> {
        let abi = match status() {
            LandlockStatus::Available { effective_abi, .. } => effective_abi,
            LandlockStatus::NotEnabled => {
                return super::spawn_unconfined(command, "Landlock is built into this kernel but not enabled at boot");
            }
            LandlockStatus::NotImplemented => return super::spawn_unconfined(command, "this kernel has no Landlock support"),
        };
        let mut paths: Vec<PathBuf> = writable.to_vec();
        paths.extend(SHELL_WRITABLE.iter().map(PathBuf::from));
        // The restricted thread: restrict, spawn, end. The domain goes with the child; this thread's
        // end takes it away from the process.
        let helper = std::thread::Builder::new().name("chokepoint-landlock".into()).spawn(move || {
            let mut command = command;
            match restrict_this_thread(abi, &paths) {
                Ok(confinement) => Ok(command.spawn().map(|child| (child, confinement))),
                // Nothing was restricted (or only no_new_privs was set on this thread): the caller
                // spawns the command from its own thread instead.
                Err(reason) => Err(Box::new((command, reason))),
            }
        })?;
        match helper.join() {
            Ok(Ok(spawned)) => spawned,
            Ok(Err(fallback)) => {
                let (command, reason) = *fallback;
                super::spawn_unconfined(command, &format!("the Landlock ruleset could not be applied: {reason}"))
            }
            Err(_) => Err(std::io::Error::other("the confinement thread panicked")),
        }
    }

    fn restrict_this_thread(abi: ABI, paths: &[PathBuf]) -> Result<Confinement, String> {
        let access = AccessFs::from_write(abi);
        let mut ruleset = landlock::Ruleset::default().handle_access(access).and_then(|r| r.create()).map_err(|e| e.to_string())?;
        for path in paths {
            let Some(granted) = grant(path, access, abi) else { continue };
            ruleset = ruleset.add_rule(granted).map_err(|e| e.to_string())?;
        }
        let status = ruleset.restrict_self().map_err(|e| e.to_string())?;
        let mut missing = missing(abi);
        let abi = number(abi);
        Ok(match status.ruleset {
            RulesetStatus::FullyEnforced if missing.is_empty() => Confinement::Enforced { abi },
            RulesetStatus::FullyEnforced => Confinement::Partial { abi, missing },
            RulesetStatus::PartiallyEnforced => {
                missing.push("some requested rights are not supported by this kernel".to_owned());
                Confinement::Partial { abi, missing }
            }
            RulesetStatus::NotEnforced => return Err("the kernel enforced none of the requested rights".to_owned()),
        })
    }

    /// A rule granting the write rights beneath `path`: all of them for a directory, the ones that
    /// apply to a file otherwise. `None` for a path that cannot be opened (it does not exist).
    fn grant(path: &Path, access: BitFlags<AccessFs>, abi: ABI) -> Option<PathBeneath<PathFd>> {
        let meta = std::fs::metadata(path).ok()?;
        let fd = PathFd::new(path).ok()?;
        let rights = if meta.is_dir() { access } else { access & AccessFs::from_file(abi) };
        Some(PathBeneath::new(fd, rights))
    }
}

#[cfg(target_os = "macos")]
mod imp {
    use super::{Confinement, SANDBOX_EXEC};
    use std::path::PathBuf;
    use std::process::{Child, Command};

    pub fn abi() -> Option<u32> {
        None
    }

    pub fn can_confine() -> bool {
        true
    }

    /// The command is already wrapped (`seatbelt::confined_argv`): spawned as it is, and enforced only
    /// if its program is the wrapper (Seatbelt has no ABI numbers: 0).
    pub fn spawn_confined(mut command: Command, _writable: &[PathBuf]) -> std::io::Result<(Child, Confinement)> {
        if command.get_program() != SANDBOX_EXEC {
            return super::spawn_unconfined(
                command,
                "the command was not wrapped in /usr/bin/sandbox-exec, so Seatbelt does not confine it",
            );
        }
        Ok((command.spawn()?, Confinement::Enforced { abi: 0 }))
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod imp {
    use super::Confinement;
    use std::path::PathBuf;
    use std::process::{Child, Command};

    pub fn abi() -> Option<u32> {
        None
    }

    pub fn can_confine() -> bool {
        false
    }

    pub fn spawn_confined(command: Command, _writable: &[PathBuf]) -> std::io::Result<(Child, Confinement)> {
        super::spawn_unconfined(command, "this platform has neither Landlock nor Seatbelt")
    }
}

#[cfg(test)]
mod tests {
    use super::scope_dirs;
    use std::path::{Path, PathBuf};

    fn dirs(globs: &[&str]) -> Vec<PathBuf> {
        scope_dirs(Path::new("/ws"), &globs.iter().map(|g| (*g).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn a_recursive_glob_gives_its_literal_prefix() {
        assert_eq!(dirs(&["src/auth/**"]), [PathBuf::from("/ws/src/auth")]);
        assert_eq!(dirs(&["src/**/test.rs"]), [PathBuf::from("/ws/src")]);
        assert_eq!(dirs(&["./src/auth/**"]), [PathBuf::from("/ws/src/auth")]);
    }

    #[test]
    fn a_file_pattern_gives_its_parent() {
        assert_eq!(dirs(&["src/auth/*.ts"]), [PathBuf::from("/ws/src/auth")]);
        assert_eq!(dirs(&["src/auth/login.ts"]), [PathBuf::from("/ws/src/auth")]);
        assert_eq!(dirs(&["README.md"]), [PathBuf::from("/ws")]);
        // `src/auth` as a glob matches the path `src/auth` only, not what is inside it.
        assert_eq!(dirs(&["src/auth"]), [PathBuf::from("/ws/src")]);
    }

    #[test]
    fn metacharacters_stop_the_prefix() {
        assert_eq!(dirs(&["**"]), [PathBuf::from("/ws")]);
        assert_eq!(dirs(&["**/*.rs"]), [PathBuf::from("/ws")]);
        assert_eq!(dirs(&["src/{auth,users}/**"]), [PathBuf::from("/ws/src")]);
        assert_eq!(dirs(&["src/a?th/**"]), [PathBuf::from("/ws/src")]);
        assert_eq!(dirs(&["src/[ab]uth/**"]), [PathBuf::from("/ws/src")]);
        assert_eq!(dirs(&["src/\\*/x"]), [PathBuf::from("/ws/src")]);
    }

    #[test]
    fn nested_and_duplicate_directories_collapse_to_the_ancestor() {
        assert_eq!(dirs(&["src/auth/**", "src/**", "src/auth/x/*.rs", "src/auth/**"]), [PathBuf::from("/ws/src")]);
        assert_eq!(dirs(&["src/auth/**", "docs/auth/**"]), [PathBuf::from("/ws/docs/auth"), PathBuf::from("/ws/src/auth")]);
        // A sibling whose name extends another is not beneath it.
        assert_eq!(dirs(&["src/auth/**", "src/auth2/**"]), [PathBuf::from("/ws/src/auth"), PathBuf::from("/ws/src/auth2")]);
    }

    #[test]
    fn globs_outside_the_workspace_give_nothing() {
        assert!(dirs(&["/etc/**", "../other/**", "src/../../x/**", "", "/"]).is_empty());
    }
}

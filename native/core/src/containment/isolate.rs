//! Running a contained command in a world of its own (Linux): its own user, mount and PID namespaces,
//! in which the workspace is an overlay whose upper layer takes every write the command makes.
//!
//! Why: a comparison of the workspace before and after a command cannot tell the command's writes
//! from those of a person or another agent working meanwhile, so undoing what the comparison shows
//! destroys their work. Under the overlay, what the command wrote is exactly the upper layer
//! (`layer.rs` reads it); the real workspace is never written by the command, so nothing in it is
//! ever undone: the command's allowed changes are applied after it ends, its refused ones never land.
//! Others' writes during the command go to the real workspace (the overlay's lower layer) and stay.
//!
//! Who holds what (two processes of ours, both the `chokepoint` program, single-threaded, so they
//! may create user namespaces; the engine that starts them has threads and may not):
//! - the **supervisor** ([`supervise`], `chokepoint __isolate`) dies with the engine that started
//!   it (`PR_SET_PDEATHSIG`); it enters new user, mount and PID namespaces, mounts the overlay over
//!   the workspace, starts the init and waits for it. On SIGTERM it kills the init and waits for it,
//!   which returns only once every process of the namespace has ended: nothing the command started,
//!   detached or not, writes after the supervisor exits.
//! - the **init** ([`init`], `chokepoint __isolate-init`), PID 1 of the new PID namespace, dies with
//!   the supervisor; it mounts a `/proc` of its namespace (the host's would show other processes'
//!   working folders, a way back to the real workspace), enters a second user and mount namespace in which it has no power over the overlay
//!   (the mounts become locked, so the command cannot unmount the overlay to reach the workspace
//!   beneath) and spawns the command, Landlock-confined where the kernel has it, then reaps until the
//!   command ends. When PID 1 exits, the kernel kills the rest of the namespace: the command's whole
//!   tree, including descendants that left its process group or session.
//!
//! The command cannot kill the supervisor (it is outside its PID namespace) nor the init (a PID 1 is
//! immune to signals from inside its namespace). Killing the engine kills both, and the upper layer is
//! then never applied: a write that was not judged never lands.
//!
//! What it does not cover: a path that reaches the workspace's file system elsewhere (another mount
//! of the same device, a bind mount), sockets to processes outside (another agent's tools, a live
//! engine: those check who asks on their side), and files owned by another user in the workspace (the
//! overlay cannot copy them up: writing them fails in the command).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The environment variable carrying the [`Spec`] to the supervisor and the init; never passed on to
/// the command.
pub const SPEC_ENV: &str = "CHOKEPOINT_ISOLATE";
/// The supervisor's subcommand of the `chokepoint` program.
pub const SUPERVISOR_ARG: &str = "__isolate";
/// The init's subcommand.
pub const INIT_ARG: &str = "__isolate-init";

/// What the supervisor and the init need, from the engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// The workspace: the overlay's lower layer, and where it is mounted.
    pub root: PathBuf,
    /// The overlay's upper and work directories, on the workspace's file system (so applying a
    /// change is a rename) and beneath its runtime folder.
    pub upper: PathBuf,
    pub work: PathBuf,
    /// Where the supervisor says whether the command runs isolated, outside the workspace.
    pub status: PathBuf,
    /// The command's working folder (inside the workspace, so inside the overlay).
    pub cwd: PathBuf,
    /// What Landlock grants, when `landlock` is set.
    pub grant: Vec<PathBuf>,
    pub landlock: bool,
    /// The user and group outside, mapped to root in the first namespace and back in the second.
    pub uid: u32,
    pub gid: u32,
    /// The engine's process id: the supervisor refuses to run when its parent already changed.
    pub parent: u32,
}

/// What the supervisor and the init wrote in the status file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// Why it could not be isolated (nothing was started then).
    pub failed: Option<String>,
    /// The init's process id as the engine sees it.
    pub init_pid: Option<u32>,
    /// What Landlock enforced on the command, as the init saw it: `enforced N`, `partial N: …`,
    /// `unavailable: …`.
    pub confinement: Option<String>,
}

impl Status {
    pub fn read(path: &Path) -> Status {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut status = Status::default();
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("failed", why)) => status.failed = Some(why.to_owned()),
                Some(("init", pid)) => status.init_pid = pid.trim().parse().ok(),
                Some(("confinement", c)) => status.confinement = Some(c.to_owned()),
                _ => {}
            }
        }
        status
    }
}

fn note(status: &Path, line: &str) {
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).create(true).open(status) {
        let _ = writeln!(f, "{line}");
    }
}

/// Reads the spec from the environment (the supervisor and the init).
fn spec() -> Result<Spec, String> {
    let text = std::env::var(SPEC_ENV).map_err(|_| format!("{SPEC_ENV} is not set: this subcommand is started by the engine only"))?;
    serde_json::from_str(&text).map_err(|e| format!("{SPEC_ENV} is not a valid spec: {e}"))
}

/// Escapes a path for overlayfs' comma- and colon-separated mount options.
#[cfg(target_os = "linux")]
fn escape(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        if matches!(c, ',' | ':' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The exit code of a process that ended with `status`, as a shell reports it.
#[cfg(target_os = "linux")]
fn code(status: std::process::ExitStatus) -> i32 {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    status.code().unwrap_or(1)
}

/// The supervisor: `chokepoint __isolate -- <command…>`. `Ok` with the process's exit code (the
/// command's); `Err` when it could not isolate: the status file says why, nothing ran, and the
/// caller exits with [`NOT_ISOLATED`].
pub fn supervise(command: &[std::ffi::OsString]) -> Result<i32, String> {
    let spec = spec()?;
    imp::supervise(&spec, command).inspect_err(|e| note(&spec.status, &format!("failed {e}")))
}

/// The init: `chokepoint __isolate-init -- <command…>`, PID 1 of the command's namespace. `Ok` with
/// the command's exit code (127 when its program cannot be found, 126 when it cannot be started, as
/// a shell says, with the reason on stderr); `Err` when the namespace could not be prepared: the
/// status file says why, nothing ran, and the engine runs the command observed instead.
pub fn init(command: &[std::ffi::OsString]) -> Result<i32, String> {
    let spec = spec()?;
    imp::init(&spec, command).inspect_err(|e| note(&spec.status, &format!("failed {e}")))
}

/// The supervisor's exit code when the command could not be isolated (and did not run).
pub const NOT_ISOLATED: u8 = 125;

#[cfg(target_os = "linux")]
mod imp {
    use super::{INIT_ARG, SPEC_ENV, Spec, code, escape, note};
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    use nix::sys::signal::{SigSet, Signal};
    use nix::sys::signalfd::SignalFd;
    use std::ffi::OsString;
    use std::process::Command;

    fn map_ids(inside_uid: u32, outside_uid: u32, inside_gid: u32, outside_gid: u32) -> Result<(), String> {
        std::fs::write("/proc/self/setgroups", "deny").map_err(|e| format!("cannot write /proc/self/setgroups: {e}"))?;
        std::fs::write("/proc/self/uid_map", format!("{inside_uid} {outside_uid} 1"))
            .map_err(|e| format!("cannot map the user id: {e}"))?;
        std::fs::write("/proc/self/gid_map", format!("{inside_gid} {outside_gid} 1"))
            .map_err(|e| format!("cannot map the group id: {e}"))?;
        Ok(())
    }

    pub fn supervise(spec: &Spec, command: &[OsString]) -> Result<i32, String> {
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| format!("cannot tie this process to the engine: {e}"))?;
        if nix::unistd::getppid().as_raw() as u32 != spec.parent {
            return Err("the engine that started this command has ended".to_owned());
        }
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID)
            .map_err(|e| format!("cannot create user namespaces here ({e}); the kernel or a security policy forbids them"))?;
        map_ids(0, spec.uid, 0, spec.gid)?;
        mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
            .map_err(|e| format!("cannot make the mounts private: {e}"))?;
        let options = format!("lowerdir={},upperdir={},workdir={},userxattr", escape(&spec.root), escape(&spec.upper), escape(&spec.work));
        mount(Some("overlay"), &spec.root, Some("overlay"), MsFlags::empty(), Some(options.as_str()))
            .map_err(|e| format!("cannot mount an overlay over the workspace ({e}); the file system may not support it"))?;

        // Signals arrive through a descriptor, so the wait below sees the init's end and a request to
        // stop alike, without a handler (and without `unsafe`). The init starts with an empty mask.
        let mut mask = SigSet::empty();
        for s in [Signal::SIGCHLD, Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
            mask.add(s);
        }
        mask.thread_block().map_err(|e| format!("cannot block signals: {e}"))?;
        let signals = SignalFd::new(&mask).map_err(|e| format!("cannot read signals: {e}"))?;

        let mut init = Command::new("/proc/self/exe");
        init.arg(INIT_ARG).arg("--").args(command).current_dir("/");
        let mut child = init.spawn().map_err(|e| format!("cannot start the namespace's init: {e}"))?;
        note(&spec.status, &format!("init {}", child.id()));
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                return Ok(code(status));
            }
            match signals.read_signal() {
                Ok(Some(info)) if info.ssi_signo != Signal::SIGCHLD as u32 => {
                    // Asked to stop: the init's end takes the whole namespace with it, and the wait
                    // returns only once it has.
                    let _ = child.kill();
                    let status = child.wait().map_err(|e| e.to_string())?;
                    return Ok(code(status));
                }
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(format!("cannot read signals: {e}")),
            }
        }
    }

    pub fn init(spec: &Spec, command: &[OsString]) -> Result<i32, String> {
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| format!("cannot tie the init to its supervisor: {e}"))?;
        mount(Some("proc"), "/proc", Some("proc"), MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC, None::<&str>)
            .map_err(|e| format!("cannot mount /proc for the namespace: {e}"))?;
        let Some(program) = command.first() else { return Err("no command was given".to_owned()) };
        // A second user and mount namespace: the command keeps the user id it has outside and no
        // capability over the overlay's mount namespace, whose mounts are now locked beneath it.
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(|e| format!("cannot drop the namespace's powers: {e}"))?;
        map_ids(spec.uid, 0, spec.gid, 0)?;
        let mut cmd = Command::new(program);
        cmd.args(&command[1..]).current_dir(&spec.cwd).env_remove(SPEC_ENV);
        let spawned = if spec.landlock {
            crate::containment::sandbox::spawn_confined(cmd, &spec.grant)
        } else {
            crate::containment::sandbox::spawn_unconfined(cmd, "Landlock is turned off for this command")
        };
        let (mut child, confinement) = match spawned {
            Ok(s) => s,
            Err(e) => {
                // The command's own failure, not the namespace's: said as a shell says it.
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "chokepoint: {}: {e}", program.to_string_lossy());
                return Ok(if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 });
            }
        };
        note(&spec.status, &format!("confinement {}", confinement.describe()));
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        // PID 1 reaps the orphans of its namespace until the command itself ends.
        loop {
            match nix::sys::wait::waitpid(None::<nix::unistd::Pid>, None) {
                Ok(nix::sys::wait::WaitStatus::Exited(p, c)) if p == pid => return Ok(c),
                Ok(nix::sys::wait::WaitStatus::Signaled(p, s, _)) if p == pid => return Ok(128 + s as i32),
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return child.wait().map(code).map_err(|e| e.to_string()),
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Spec;
    use std::ffi::OsString;

    pub fn supervise(_spec: &Spec, _command: &[OsString]) -> Result<i32, String> {
        Err("a command runs in namespaces of its own only on Linux".to_owned())
    }

    pub fn init(_spec: &Spec, _command: &[OsString]) -> Result<i32, String> {
        Err("a command runs in namespaces of its own only on Linux".to_owned())
    }
}

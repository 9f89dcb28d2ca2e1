//! A process tree ended as one: a command hook's or a contained command's whole tree, grandchildren
//! that outlived their parent included, so nothing a command started outlives its timeout or its end.
//!
//! On Unix the command leads a process group of its own, killed with `killpg` (a process that calls
//! `setsid` leaves it; an isolated command's PID namespace covers that case, `containment::isolate`).
//! On Windows it runs in a Job Object (`chokepoint_win::Job`, where the few unsafe calls live): it is
//! started suspended, put in a job that forbids breaking away, and only then resumed, so it cannot
//! start anything outside the job; killing the job (or the engine dropping it) ends every process in it.
//! A process that cannot be put in its job is not run: the caller kills it and fails with the reason.

use std::io;

/// The tree of one command started from a command [`prepare`]d for it.
#[derive(Debug)]
pub struct Tree {
    #[cfg(unix)]
    group: Option<u32>,
    #[cfg(windows)]
    job: chokepoint_win::Job,
}

/// Sets `command` up to start a tree of its own: its own process group (Unix), or suspended until
/// [`Tree::adopt`] has put it in its job (Windows).
pub fn prepare(command: &mut std::process::Command) {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(command, 0);
    #[cfg(windows)]
    std::os::windows::process::CommandExt::creation_flags(command, chokepoint_win::CREATE_SUSPENDED);
    #[cfg(not(any(unix, windows)))]
    let _ = command;
}

/// [`prepare`] for tokio's command.
pub fn prepare_async(command: &mut tokio::process::Command) {
    #[cfg(unix)]
    command.process_group(0);
    #[cfg(windows)]
    command.creation_flags(chokepoint_win::CREATE_SUSPENDED);
    #[cfg(not(any(unix, windows)))]
    let _ = command;
}

impl Tree {
    /// The tree of the process `pid`, just spawned from a [`prepare`]d command and not yet waited
    /// for. On Windows it is put in a new job and resumed; on an error it is still suspended and the
    /// caller kills it (the error says the command did not run).
    pub fn adopt(pid: Option<u32>) -> io::Result<Tree> {
        #[cfg(windows)]
        {
            let pid = pid.ok_or_else(|| io::Error::other("the command ended before it was started"))?;
            let job =
                chokepoint_win::Job::new().map_err(|e| io::Error::other(format!("cannot create a Job Object for the command: {e}")))?;
            job.adopt(pid).map_err(|e| io::Error::other(format!("cannot put the command in its Job Object: {e}")))?;
            Ok(Tree { job })
        }
        #[cfg(unix)]
        {
            Ok(Tree { group: pid })
        }
        #[cfg(not(any(unix, windows)))]
        {
            let _ = pid;
            Ok(Tree {})
        }
    }

    /// Ends every process of the tree that is still running (none left is the common case).
    pub fn kill(&self) {
        #[cfg(unix)]
        if let Some(pid) = self.group.and_then(|p| i32::try_from(p).ok()) {
            // ESRCH (the group is already gone) is the common, expected case.
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
        #[cfg(windows)]
        {
            // Fails only on a handle that is not a job's, which ours always is; dropping the job
            // ends its processes too (KILL_ON_JOB_CLOSE).
            let _ = self.job.kill();
        }
    }
}

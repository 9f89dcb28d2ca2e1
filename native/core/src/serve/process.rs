//! What the kernel says about a local process: its parent, when it started, its terminal, and on
//! Linux its pid namespace, whether it runs with `no_new_privs`, its arguments and environment.
//! `deciders.rs` tells an agent's processes from a person's with it.
//!
//! A process is named by its pid *and* its start time: a pid is reused once its process is gone, the
//! pair is not (within one boot). A process's ancestry is walked by [`lineage_over`], a pure function
//! of a lookup by pid, so that the walk (a reused parent pid stops it, as does a loop) is tested on
//! every platform; only the lookup differs:
//! - **Linux**: `/proc/<pid>/stat` (start: field 22, clock ticks since boot; boot: `boot_id`).
//! - **macOS**: the kernel's process table, `sysctl(KERN_PROC_PID)` through `libproc` (safe code):
//!   parent, start (microseconds since the epoch), terminal and command name, for any user's
//!   process (`proc_pidinfo`'s `PROC_PIDTBSDINFO` says the same but only of one's own user's
//!   processes, which would stop the walk at the first `login` or `sshd`). The boot is named by the
//!   start of the kernel's own task (pid 0). No pid namespace, no `no_new_privs`; arguments and
//!   environment are not read (the callers say what that leaves unchecked).
//!
//! Elsewhere (Windows) every read answers `None`, and the callers say what that leaves unchecked. On
//! Windows that is by design: its process snapshot names each process's parent, but that parent is
//! whatever the creator chose (`PROC_THREAD_ATTRIBUTE_PARENT_PROCESS`), so a walk over it would only
//! say what an agent wanted it to (`deciders.rs`).

use std::path::PathBuf;

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    /// Clock ticks after boot at which it started.
    pub start: u64,
    /// The controlling terminal's device number (0: none).
    pub tty: u64,
}

impl Process {
    /// The process with this pid now, or `None` when there is none (or the platform does not say).
    pub fn read(pid: u32) -> Option<Process> {
        if pid == 0 {
            return None;
        }
        imp::read(pid)
    }

    /// `/proc/<pid>/stat` read.
    #[cfg(not(target_os = "macos"))]
    fn read_proc(pid: u32) -> Option<Process> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) is in parentheses and may hold spaces and parentheses itself:
        // the fields after it start after its last `)`.
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split(' ').collect();
        // `rest` starts at field 3 (state): field n is fields[n - 3].
        let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
        Some(Process { pid, ppid: u32::try_from(field(4)?).ok()?, start: field(22)?, tty: field(7)? })
    }

    /// Whether the process is still the one read: same pid, same start.
    pub fn alive(&self) -> bool {
        Process::read(self.pid).is_some_and(|now| now.start == self.start)
    }

    /// Its parent, when it is still the process that started this one (a parent never starts after
    /// its child: one that did took a dead parent's pid).
    pub fn parent(&self) -> Option<Process> {
        parent_over(self, Process::read)
    }

    /// This process and its ancestors, nearest first, up to (not including) pid 1.
    pub fn lineage(&self) -> Vec<Process> {
        lineage_over(self, Process::read)
    }

    /// The program's name (`/proc/<pid>/comm`; macOS: the kernel's `p_comm`, 16 bytes at most).
    pub fn name(&self) -> String {
        imp::name(self.pid)
    }

    /// Its arguments (`/proc/<pid>/cmdline`).
    pub fn args(&self) -> Vec<String> {
        let raw = std::fs::read(format!("/proc/{}/cmdline", self.pid)).unwrap_or_default();
        raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
    }

    /// Its controlling terminal as a path (`/dev/pts/3`, macOS `/dev/ttys003`), when it has one.
    pub fn terminal(&self) -> Option<String> {
        if self.tty == 0 {
            return None;
        }
        Some(if cfg!(target_os = "macos") { darwin_terminal(self.tty) } else { linux_terminal(self.tty) })
    }

    /// Whether it runs with `no_new_privs` (`NoNewPrivs:` of `/proc/<pid>/status`): set on every
    /// command Chokepoint contains with Landlock, inherited by everything it starts, and never unset.
    pub fn no_new_privs(&self) -> Option<bool> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let line = status.lines().find(|l| l.starts_with("NoNewPrivs:"))?;
        Some(line.split_whitespace().nth(1)? == "1")
    }

    /// Its pid namespace (the inode of `/proc/<pid>/ns/pid`).
    pub fn pid_namespace(&self) -> Option<u64> {
        namespace_of(format!("/proc/{}/ns/pid", self.pid).into())
    }

    /// Its environment's variables whose names `wanted` accepts, as `NAME=value`; empty when it cannot
    /// be read.
    pub fn environment(&self, wanted: impl Fn(&str, &str) -> bool) -> Vec<String> {
        let raw = std::fs::read(format!("/proc/{}/environ", self.pid)).unwrap_or_default();
        raw.split(|b| *b == 0)
            .filter_map(|pair| {
                let pair = String::from_utf8_lossy(pair);
                let (name, value) = pair.split_once('=')?;
                wanted(name, value).then(|| pair.clone().into_owned())
            })
            .collect()
    }
}

/// `child`'s parent as `read` finds it by pid, when it is still the process that started `child`
/// (a parent never starts after its child: one that did took a dead parent's pid).
pub fn parent_over(child: &Process, read: impl Fn(u32) -> Option<Process>) -> Option<Process> {
    if child.ppid == 0 || child.ppid == child.pid {
        return None;
    }
    read(child.ppid).filter(|parent| parent.start <= child.start)
}

/// `first` and its ancestors, nearest first, up to (not including) pid 1, each parent as `read`
/// finds it by pid ([`parent_over`]): the walk the decision rule stands on, the same on every
/// platform. It stops where a parent is gone or its pid was reused, at a pid met before (a table
/// read while it changed), and after 256 processes.
pub fn lineage_over(first: &Process, read: impl Fn(u32) -> Option<Process>) -> Vec<Process> {
    let mut out = vec![first.clone()];
    while out.len() < 256 {
        match out.last().and_then(|p| parent_over(p, &read)) {
            Some(parent) if parent.pid > 1 && !out.iter().any(|seen| seen.pid == parent.pid) => out.push(parent),
            _ => break,
        }
    }
    out
}

/// A Linux terminal's device number as its path: `/dev/pts/N`, `/dev/ttyN`, `/dev/ttySN`.
fn linux_terminal(tty: u64) -> String {
    let (major, minor) = ((tty >> 8) & 0xfff, (tty & 0xff) | ((tty >> 12) & 0xfff00));
    match major {
        136..=143 => format!("/dev/pts/{}", minor + (major - 136) * 256),
        4 if minor < 64 => format!("/dev/tty{minor}"),
        4 => format!("/dev/ttyS{}", minor - 64),
        _ => format!("terminal {major}:{minor}"),
    }
}

/// A macOS terminal's device number (`dev_t`: major in the top byte, minor below) as its path: a
/// pseudo-terminal's side a shell holds is major 16, `/dev/ttys` and three digits.
fn darwin_terminal(tty: u64) -> String {
    let (major, minor) = ((tty >> 24) & 0xff, tty & 0xff_ffff);
    match major {
        16 => format!("/dev/ttys{minor:03}"),
        _ => format!("terminal {major}:{minor}"),
    }
}

/// This process.
pub fn this() -> Option<Process> {
    Process::read(std::process::id())
}

/// This process's pid namespace.
pub fn own_pid_namespace() -> Option<u64> {
    namespace_of("/proc/self/ns/pid".into())
}

fn namespace_of(link: PathBuf) -> Option<u64> {
    let target = std::fs::read_link(link).ok()?;
    let target = target.to_str()?;
    target.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// This boot's id: start times count from a boot, and a pid is unique only within one.
pub fn boot_id() -> Option<String> {
    imp::boot_id()
}

#[cfg(not(target_os = "macos"))]
mod imp {
    use super::Process;

    pub fn read(pid: u32) -> Option<Process> {
        Process::read_proc(pid)
    }

    pub fn name(pid: u32) -> String {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).map(|n| n.trim_end().to_owned()).unwrap_or_default()
    }

    /// `/proc/sys/kernel/random/boot_id`.
    pub fn boot_id() -> Option<String> {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|b| b.trim().to_owned())
    }
}

#[cfg(target_os = "macos")]
mod imp {
    use super::Process;
    use libproc::libproc::kinfo::{KProcInfo, KinfoProc};

    /// `sysctl(KERN_PROC_PID)`: any user's process, pid 0 (the kernel's task) too.
    fn kinfo(pid: u32) -> Option<KinfoProc> {
        let info = libproc::libproc::proc_pid::kproc_info_raw(i32::try_from(pid).ok()?).ok()?;
        (u32::try_from(info.kp_proc.p_pid).ok()? == pid).then_some(info)
    }

    /// When the process started, in microseconds since the epoch (`p_starttime`, the first member
    /// of `kp_proc`'s union for a process read through sysctl).
    fn start(info: &KinfoProc) -> Option<u64> {
        let since = info.kp_proc.p_un;
        Some(u64::try_from(since.tv_sec).ok()? * 1_000_000 + u64::try_from(since.tv_usec).ok()?)
    }

    pub fn read(pid: u32) -> Option<Process> {
        let info = kinfo(pid)?;
        // `NODEV` (all bits set) is no terminal.
        let tty = match info.kp_eproc.e_tdev {
            -1 => 0,
            dev => u64::from(u32::from_ne_bytes(dev.to_ne_bytes())),
        };
        Some(Process { pid, ppid: u32::try_from(info.kp_eproc.e_ppid).ok()?, start: start(&info)?, tty })
    }

    pub fn name(pid: u32) -> String {
        kinfo(pid).map(|info| KProcInfo::from(&info).comm).unwrap_or_default()
    }

    /// The kernel's task started when the machine booted: its start names the boot.
    pub fn boot_id() -> Option<String> {
        let info = libproc::libproc::proc_pid::kproc_info_raw(0).ok()?;
        Some(format!("darwin-boot-{}", start(&info)?))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        qemu,
        ignore = "qemu-user runs posix_spawn's vfork as a fork, so `spawn` returns before the child has exec'd `sleep` and /proc still names it as its parent's thread; the same /proc reading is tested natively in the cargo layer"
    )]
    fn a_process_its_parent_and_a_child_read_back() {
        let me = this().unwrap();
        assert_eq!(me.pid, std::process::id());
        assert!(me.alive());
        let parent = me.parent().unwrap();
        assert_eq!(parent.pid, me.ppid);
        assert!(me.lineage().len() >= 2);
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let seen = Process::read(child.id()).unwrap();
        assert_eq!(seen.ppid, me.pid);
        assert!(seen.start >= me.start);
        assert_eq!(seen.lineage()[1], me);
        assert_eq!(seen.name(), "sleep");
        // The kernel fills `cmdline` in a moment after the exec that `spawn` waited for: until then
        // it reads empty (CI saw it once), so the arguments are read again for a while.
        let mut args = seen.args();
        for _ in 0..200 {
            if !args.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            args = seen.args();
        }
        assert_eq!(args, ["sleep", "5"]);
        assert_eq!(seen.pid_namespace(), own_pid_namespace());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!seen.alive(), "gone once reaped");
        assert!(boot_id().is_some_and(|b| b.len() == 36));
    }
}

/// The walk over a process table written here: the same rule on every platform, whatever the lookup.
#[cfg(test)]
mod walk_tests {
    use super::*;
    use std::collections::HashMap;

    fn p(pid: u32, ppid: u32, start: u64) -> Process {
        Process { pid, ppid, start, tty: 0 }
    }

    fn table(rows: &[Process]) -> impl Fn(u32) -> Option<Process> + use<> {
        let map: HashMap<u32, Process> = rows.iter().map(|r| (r.pid, r.clone())).collect();
        move |pid| map.get(&pid).cloned()
    }

    fn pids(lineage: &[Process]) -> Vec<u32> {
        lineage.iter().map(|p| p.pid).collect()
    }

    #[test]
    fn the_walk_goes_up_to_pid_1_nearest_first() {
        // launchd ← Terminal ← login ← zsh ← agent ← sh ← chokepoint
        let rows = [p(1, 0, 0), p(100, 1, 10), p(200, 100, 20), p(300, 200, 30), p(400, 300, 40), p(500, 400, 50), p(600, 500, 60)];
        let read = table(&rows);
        assert_eq!(pids(&lineage_over(&rows[6], &read)), [600, 500, 400, 300, 200, 100]);
        assert_eq!(parent_over(&rows[6], &read), Some(rows[5].clone()));
        assert_eq!(pids(&lineage_over(&rows[1], &read)), [100], "pid 1 is never part of a lineage");
    }

    #[test]
    fn a_parent_pid_taken_by_a_later_process_ends_the_walk() {
        // 700's parent died; its pid 400 went to a process started after 700.
        let rows = [p(1, 0, 0), p(300, 1, 30), p(400, 300, 90), p(700, 400, 70)];
        let read = table(&rows);
        assert_eq!(parent_over(&rows[3], &read), None);
        assert_eq!(pids(&lineage_over(&rows[3], &read)), [700]);
        // The same start counts as the parent (a start's resolution is coarse).
        let rows = [p(1, 0, 0), p(400, 1, 70), p(700, 400, 70)];
        assert_eq!(pids(&lineage_over(&rows[2], table(&rows))), [700, 400]);
    }

    #[test]
    fn a_gone_parent_a_loop_and_a_long_chain_end_the_walk() {
        let read = table(&[p(700, 400, 70)]);
        assert_eq!(pids(&lineage_over(&p(700, 400, 70), &read)), [700], "the parent is gone");
        assert_eq!(parent_over(&p(5, 5, 1), table(&[p(5, 5, 1)])), None, "its own parent");
        // A table read while it changed can show a loop: each pid is met once.
        let rows = [p(10, 20, 5), p(20, 10, 5)];
        assert_eq!(pids(&lineage_over(&rows[0], table(&rows))), [10, 20]);
        let chain: Vec<Process> = (2..1000).map(|pid| p(pid, pid - 1, u64::from(pid))).collect();
        assert_eq!(lineage_over(chain.last().unwrap(), table(&chain)).len(), 256);
    }

    #[test]
    fn a_terminal_is_named_as_each_kernel_numbers_it() {
        assert_eq!(linux_terminal((136 << 8) | 3), "/dev/pts/3");
        assert_eq!(linux_terminal((4 << 8) | 1), "/dev/tty1");
        assert_eq!(darwin_terminal((16 << 24) | 3), "/dev/ttys003");
        assert_eq!(darwin_terminal((16 << 24) | 112), "/dev/ttys112");
        assert_eq!(darwin_terminal(2 << 24), "terminal 2:0");
    }
}

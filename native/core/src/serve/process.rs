//! What the kernel says about a local process, read from `/proc` (Linux): its parent, when it
//! started, its terminal, its pid namespace, whether it runs with `no_new_privs`, its environment.
//! `deciders.rs` tells an agent's processes from a person's with it.
//!
//! A process is named by its pid *and* its start time (`/proc/<pid>/stat` field 22, clock ticks since
//! boot): a pid is reused once its process is gone, the pair is not (within one boot).
//!
//! Elsewhere than Linux there is no `/proc`: every read answers `None`, and the callers say what that
//! leaves unchecked.

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
    /// The process with this pid now, or `None` when there is none (or no `/proc`).
    pub fn read(pid: u32) -> Option<Process> {
        if pid == 0 {
            return None;
        }
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
        Process::read(self.ppid).filter(|parent| parent.start <= self.start)
    }

    /// This process and its ancestors, nearest first, up to (not including) pid 1.
    pub fn lineage(&self) -> Vec<Process> {
        let mut out = vec![self.clone()];
        while out.len() < 256 {
            match out.last().and_then(Process::parent) {
                Some(parent) if parent.pid > 1 => out.push(parent),
                _ => break,
            }
        }
        out
    }

    /// The program's name (`/proc/<pid>/comm`).
    pub fn name(&self) -> String {
        std::fs::read_to_string(format!("/proc/{}/comm", self.pid)).map(|n| n.trim_end().to_owned()).unwrap_or_default()
    }

    /// Its arguments (`/proc/<pid>/cmdline`).
    pub fn args(&self) -> Vec<String> {
        let raw = std::fs::read(format!("/proc/{}/cmdline", self.pid)).unwrap_or_default();
        raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
    }

    /// Its controlling terminal as a path (`/dev/pts/3`), when it has one.
    pub fn terminal(&self) -> Option<String> {
        if self.tty == 0 {
            return None;
        }
        let (major, minor) = ((self.tty >> 8) & 0xfff, (self.tty & 0xff) | ((self.tty >> 12) & 0xfff00));
        Some(match major {
            136..=143 => format!("/dev/pts/{}", minor + (major - 136) * 256),
            4 if minor < 64 => format!("/dev/tty{minor}"),
            4 => format!("/dev/ttyS{}", minor - 64),
            _ => format!("terminal {major}:{minor}"),
        })
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

/// This boot's id (`/proc/sys/kernel/random/boot_id`): start times count from a boot.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|b| b.trim().to_owned())
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

//! `chokepoint doctor`'s platform section: what this platform lacks of what Chokepoint uses, and what
//! each lack means for the gate, so a person on macOS or Windows knows what holds there and what does
//! not. A lack is said, never an error: the gate fails closed where it cannot do its part (a decision
//! from a terminal is refused where no person can be told from an agent's process), and observes where
//! it cannot prevent (a shell command's changes compared and reported).

use chokepoint_core::containment::sandbox;
use serde_json::{Value, json};

/// One thing this platform lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lack {
    pub what: &'static str,
    pub means: &'static str,
}

/// What this platform lacks, as this process finds it.
pub fn lacks() -> Vec<Lack> {
    let mut out = Vec::new();
    if !cfg!(target_os = "linux") {
        out.push(Lack {
            what: "isolation of shell commands (Linux namespaces over an overlay)",
            means: "a contained command runs observed: its changes are compared before and after and reported, never undone; one outside the scope is not prevented",
        });
    }
    if cfg!(target_os = "linux") && sandbox::landlock_abi().is_none() {
        out.push(Lack {
            what: "Landlock (this kernel has none, or it is off at boot)",
            means: "a write outside the scope is not refused as it happens; an isolated command's still never lands",
        });
    }
    if cfg!(target_os = "macos") && !std::path::Path::new(chokepoint_core::containment::seatbelt::SANDBOX_EXEC).is_file() {
        out.push(Lack {
            what: "/usr/bin/sandbox-exec (Seatbelt, which confines shell commands on macOS)",
            means: "a contained shell command is refused, since it cannot be confined to its scope; set `landlock: off` in hooks.yaml's gatekeeper section to run such commands observed (reported, never undone)",
        });
    }
    if !cfg!(any(unix, windows)) {
        out.push(Lack {
            what: "a live engine (it listens on a Unix socket or a Windows named pipe)",
            means: "each hook judges alone: slower, and an edit that breaks hooks.yaml denies every gate until it is fixed, where a live engine keeps the last good configuration",
        });
    }
    if cfg!(windows) {
        out.push(Lack {
            what: "the live engine's loopback HTTP endpoint (its token file cannot be made private to the user here yet)",
            means: "agents' hooks reach the live engine through `chokepoint hook` over its named pipe (the command hooks `chokepoint init` sets up); a hook set up by hand as Claude Code's `type: \"http\"` finds nothing listening, and its agent lets the call through",
        });
    }
    if chokepoint_core::serve::process::this().is_none() {
        out.push(Lack {
            what: "a chain of processes an agent cannot forge (who started a process: Windows lets a process name its child's parent)",
            means: "a person cannot be told from an agent's process, so a decision from a terminal (approvals, sessions revoke, intent approve) is refused: decide in VS Code",
        });
    }
    out
}

pub fn print(lacks: &[Lack]) {
    let platform = format!("{} {}", std::env::consts::OS, std::env::consts::ARCH);
    if lacks.is_empty() {
        println!("platform: {platform}: nothing Chokepoint uses is missing");
    }
    for lack in lacks {
        println!("platform: {platform} lacks {}: {}", lack.what, lack.means);
    }
}

pub fn json(lacks: &[Lack]) -> Value {
    let lacks: Vec<Value> = lacks.iter().map(|l| json!({ "what": l.what, "means": l.means })).collect();
    json!({ "os": std::env::consts::OS, "arch": std::env::consts::ARCH, "lacks": lacks })
}

#[cfg(test)]
mod tests {
    use super::lacks;

    #[test]
    fn this_platform_says_what_it_lacks() {
        let found = lacks();
        let lacks = |what: &str| found.iter().any(|l| l.what.contains(what));
        assert_eq!(lacks("isolation"), !cfg!(target_os = "linux"), "{found:?}");
        assert_eq!(lacks("a live engine"), !cfg!(any(unix, windows)), "{found:?}");
        assert_eq!(lacks("HTTP endpoint"), cfg!(windows), "{found:?}");
        // A Mac has both: Seatbelt's `sandbox-exec`, and its process table in place of `/proc`.
        assert_eq!(lacks("Seatbelt"), cfg!(target_os = "macos") && !std::path::Path::new("/usr/bin/sandbox-exec").is_file(), "{found:?}");
        assert_eq!(lacks("a chain of processes"), !cfg!(any(target_os = "linux", target_os = "macos")), "{found:?}");
        assert!(found.iter().all(|l| !l.means.is_empty()));
    }
}

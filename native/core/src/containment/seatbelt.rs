//! The macOS confinement of a contained command: a Seatbelt profile run by `/usr/bin/sandbox-exec`,
//! as Codex does, in the role Landlock plays on Linux (`sandbox.rs`): reads, processes and the network
//! stay as they are, and a write lands only beneath the granted folders and the shell's devices.
//!
//! **Quoting that cannot be broken out of.** No path is ever written into the profile's text. The
//! profile names its folders as parameters, `(param "W0")`, `(param "W1")`…, whose values travel as
//! separate `-D W0=<path>` arguments: a folder named `x")(allow file-write* (subpath "/` is one
//! parameter's value, never SBPL. Only the count of folders shapes the text.
//!
//! **One rule, whatever the order of rules.** The profile allows everything, then denies every write
//! that is *not* beneath a granted folder or one of the devices (`require-not` of `require-any`), so
//! what it allows does not depend on which of two matching rules Seatbelt would prefer.
//!
//! **Canonical folders.** Seatbelt compares the path the kernel resolved: `/tmp` and `/var` are
//! `/private/tmp` and `/private/var` there, so every folder is granted by its canonical path; one
//! that does not exist yet is its nearest existing ancestor's canonical path with the rest appended
//! (a `subpath` may name what does not exist yet, and it matches once created).
//!
//! Pure text and arguments, so that it is tested on every platform; `sandbox.rs` runs it on macOS.

use super::sandbox::SHELL_WRITABLE;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Always by its absolute path: a `sandbox-exec` earlier on `PATH` could be anything.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// The profile for `folders` granted folders: every write denied unless beneath one of
/// `(param "W0")`…`(param "W{folders-1}")` or one of [`SHELL_WRITABLE`]'s devices.
pub fn profile(folders: usize) -> String {
    let mut allowed: Vec<String> = SHELL_WRITABLE
        .iter()
        // `/dev/pts` is Linux's folder of terminals; macOS names them `/dev/ttys*`, each a literal.
        .filter(|d| **d != "/dev/pts")
        .map(|d| format!("      (literal \"{d}\")"))
        .collect();
    allowed.push("      (regex #\"^/dev/ttys[0-9]+$\")".to_owned());
    allowed.push("      (literal \"/dev/dtracehelper\")".to_owned());
    allowed.extend((0..folders).map(|i| format!("      (subpath (param \"W{i}\"))")));
    format!("(version 1)\n(allow default)\n(deny file-write*\n  (require-not\n    (require-any\n{}\n)))\n", allowed.join("\n"))
}

/// The arguments of [`SANDBOX_EXEC`] before the command's own program and arguments: the profile,
/// then each folder as a parameter, then `--`.
pub fn arguments(writable: &[PathBuf]) -> Vec<OsString> {
    let folders: Vec<PathBuf> = writable.iter().map(|p| canonical(p)).collect();
    let mut args: Vec<OsString> = vec!["-p".into(), profile(folders.len()).into()];
    for (i, folder) in folders.iter().enumerate() {
        let mut value = OsString::from(format!("W{i}="));
        value.push(folder.as_os_str());
        args.push("-D".into());
        args.push(value);
    }
    args.push("--".into());
    args
}

/// `path` as the kernel resolves it: its nearest existing ancestor made canonical (symlinks such as
/// `/tmp` → `/private/tmp` followed), then the part that does not exist yet, as it is.
pub fn canonical(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(found) = std::fs::canonicalize(existing) {
            let mut out = found;
            out.extend(rest.iter().rev());
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            // Nothing of it exists (a relative path, or `..` at the end): as given.
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(args: &[OsString]) -> Vec<String> {
        args.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "Seatbelt is macOS's and this test's folder a macOS path, which Windows reads from the current drive (`\\\\?\\Z:\\ws`)"
    )]
    fn a_folder_is_a_parameter_never_text_of_the_profile() {
        let hostile = PathBuf::from("/ws/x\")(allow file-write* (subpath \"/etc");
        let args = text(&arguments(std::slice::from_ref(&hostile)));
        assert_eq!(args[0], "-p");
        assert!(!args[1].contains("allow file-write"), "{}", args[1]);
        assert!(!args[1].contains("/ws"), "no path in the profile: {}", args[1]);
        assert_eq!(&args[2..], ["-D", &format!("W0={}", hostile.display()), "--"]);
    }

    #[test]
    fn the_profile_denies_every_write_but_beneath_its_parameters_and_the_devices() {
        let p = profile(2);
        assert!(p.starts_with("(version 1)\n(allow default)\n(deny file-write*\n  (require-not\n    (require-any\n"), "{p}");
        assert!(p.contains("(subpath (param \"W0\"))") && p.contains("(subpath (param \"W1\"))") && !p.contains("W2"), "{p}");
        assert!(p.contains("(literal \"/dev/null\")") && !p.contains("/dev/pts"), "{p}");
        // Balanced: the one deny rule closes where the profile ends.
        let (open, close) = (p.matches('(').count(), p.matches(')').count());
        assert_eq!(open, close, "{p}");
        assert_eq!(profile(0).matches("subpath").count(), 0);
    }

    #[test]
    fn a_folder_is_granted_by_its_canonical_path_and_a_missing_one_by_its_nearest_existing_ancestor() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let real = dir.path().join("real");
        std::fs::create_dir(&real).expect("a folder");
        // A link standing for macOS's `/tmp` → `/private/tmp`.
        let link = dir.path().join("tmp");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&real, &link).expect("a link");
        #[cfg(not(unix))]
        std::fs::create_dir(&link).expect("a folder");
        let real = std::fs::canonicalize(&real).expect("canonical");
        #[cfg(unix)]
        assert_eq!(canonical(&link.join("scope")), real.join("scope"));
        assert_eq!(canonical(&real.join("not/yet")), real.join("not/yet"));
        let with_equals = real.join("a=b");
        let args = text(&arguments(std::slice::from_ref(&with_equals)));
        assert_eq!(args[3], format!("W0={}", with_equals.display()), "the first `=` ends the name");
    }

    /// The profile as macOS's kernel enforces it: a write inside the granted folder lands, one outside
    /// is refused, `/dev/null` stays writable.
    #[test]
    #[cfg_attr(not(target_os = "macos"), ignore = "needs macOS's kernel and /usr/bin/sandbox-exec: Seatbelt exists nowhere else")]
    fn seatbelt_refuses_a_write_outside_the_granted_folder() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let (inside, outside) = (dir.path().join("inside"), dir.path().join("outside"));
        std::fs::create_dir(&inside).expect("a folder");
        std::fs::create_dir(&outside).expect("a folder");
        let status = std::process::Command::new(SANDBOX_EXEC)
            .args(arguments(std::slice::from_ref(&inside)))
            .args(["/bin/sh", "-c", "echo in > \"$1/a\"; echo out > \"$2/b\" 2>/dev/null; echo > /dev/null", "sh"])
            .arg(&inside)
            .arg(&outside)
            .status()
            .expect("sandbox-exec runs");
        assert!(status.success() || status.code().is_some());
        assert!(inside.join("a").exists(), "the write inside the scope landed");
        assert!(!outside.join("b").exists(), "the write outside the scope was refused");
    }
}

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
//! Pure text and arguments, so that it is tested on every platform: `contain.rs` wraps an observed
//! command's line with [`confined_argv`] on macOS, and `sandbox.rs` spawns it.

pub use super::sandbox::SANDBOX_EXEC;
use super::sandbox::SHELL_WRITABLE;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

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
    // `> /dev/stdout`, `2> /dev/stderr` and bash's `>(…)` open a descriptor the shell already holds
    // (`/dev/fd/N`, with no more access than that descriptor has): no file is created or changed.
    allowed.push("      (literal \"/dev/stdout\")".to_owned());
    allowed.push("      (literal \"/dev/stderr\")".to_owned());
    allowed.push("      (regex #\"^/dev/fd/[0-9]+$\")".to_owned());
    allowed.extend((0..folders).map(|i| format!("      (subpath (param \"W{i}\"))")));
    format!("(version 1)\n(allow default)\n(deny file-write*\n  (require-not\n    (require-any\n{}\n)))\n", allowed.join("\n"))
}

/// The `-D` parameters of the profile for `writable`: `W0`, `W1`… each a folder by its canonical path.
pub fn params(writable: &[PathBuf]) -> Vec<(String, OsString)> {
    writable.iter().enumerate().map(|(i, p)| (format!("W{i}"), canonical(p).into_os_string())).collect()
}

/// The whole command line that runs `program` with `args` under `profile` with `params`:
/// `/usr/bin/sandbox-exec -p <profile> -D K=V … -- <program> <args>…`, as Codex runs its commands.
/// Pure: what runs on a Mac is this list, and its tests run everywhere. `--` ends `sandbox-exec`'s own
/// options, so a program whose name starts with `-` is still the program. A parameter's name is ours
/// (`W0`…) and never holds `=`; its value may (the first `=` ends the name).
pub fn wrap(profile: &str, params: &[(String, OsString)], program: &OsStr, args: &[OsString]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = Vec::with_capacity(5 + 2 * params.len() + args.len());
    argv.extend([SANDBOX_EXEC.into(), "-p".into(), profile.into()]);
    for (name, value) in params {
        debug_assert!(!name.contains('='), "a parameter's name is ours and holds no `=`: {name}");
        let mut definition = OsString::from(format!("{name}="));
        definition.push(value);
        argv.extend(["-D".into(), definition]);
    }
    argv.push("--".into());
    argv.push(program.to_owned());
    argv.extend(args.iter().cloned());
    argv
}

/// The arguments of [`SANDBOX_EXEC`] before the command's own program and arguments: the profile,
/// then each folder as a parameter, then `--`.
pub fn arguments(writable: &[PathBuf]) -> Vec<OsString> {
    let params = params(writable);
    let mut argv = wrap(&profile(params.len()), &params, OsStr::new(""), &[]);
    argv.remove(0);
    argv.pop();
    argv
}

/// The command line (program first) that runs `argv` confined to writing beneath `writable`: on
/// macOS, `argv` wrapped in [`SANDBOX_EXEC`] ([`confine`]), or why it cannot be (the command must
/// then not run); elsewhere `argv` as it is, since Landlock (`sandbox.rs`) confines at the spawn.
pub fn confined_argv(writable: &[PathBuf], argv: &[OsString]) -> Result<Vec<OsString>, String> {
    if cfg!(target_os = "macos") { confine(writable, argv, Path::new(SANDBOX_EXEC)) } else { Ok(argv.to_vec()) }
}

/// `argv` (program first) as it runs confined to writing beneath `writable`: [`wrap`]ped, or why it
/// cannot be. Refused (never run unconfined in its place) when `argv` is empty or when
/// `sandbox_exec` is not a file: a Mac without `/usr/bin/sandbox-exec` cannot confine, and the
/// caller must not pretend it did.
pub fn confine(writable: &[PathBuf], argv: &[OsString], sandbox_exec: &Path) -> Result<Vec<OsString>, String> {
    let Some((program, args)) = argv.split_first() else { return Err("no command was given".to_owned()) };
    if !sandbox_exec.is_file() {
        return Err(format!(
            "{} is missing, so the command cannot be confined to its scope and is not run; restore it (it ships with macOS), or turn the confinement off for this command (`landlock: off`) to run it observed",
            sandbox_exec.display()
        ));
    }
    let params = params(writable);
    Ok(wrap(&profile(params.len()), &params, program, args))
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
        assert!(p.contains("(literal \"/dev/stdout\")") && p.contains("(regex #\"^/dev/fd/[0-9]+$\")"), "{p}");
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

    #[test]
    fn a_wrapped_command_runs_the_absolute_sandbox_exec_with_the_profile_its_folders_then_the_command_as_given() {
        let params = vec![("W0".to_owned(), OsString::from("/ws/src/auth")), ("W1".to_owned(), OsString::from("/private/tmp/x=y"))];
        let args: Vec<OsString> = vec!["-c".into(), "echo \"$0\" > out".into(), "--".into()];
        let argv = text(&wrap("(version 1)", &params, OsStr::new("-sh"), &args));
        assert_eq!(
            argv,
            [
                "/usr/bin/sandbox-exec",
                "-p",
                "(version 1)",
                "-D",
                "W0=/ws/src/auth",
                "-D",
                "W1=/private/tmp/x=y",
                "--",
                "-sh",
                "-c",
                "echo \"$0\" > out",
                "--"
            ],
            "sandbox-exec's options end at the first `--`; the program and its arguments follow untouched"
        );
        assert_eq!(text(&wrap("p", &[], OsStr::new("true"), &[])), ["/usr/bin/sandbox-exec", "-p", "p", "--", "true"]);
    }

    #[test]
    fn confining_a_command_wraps_it_and_a_missing_sandbox_exec_refuses_it() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let scope = std::fs::canonicalize(dir.path()).expect("canonical").join("src/auth");
        let argv: Vec<OsString> = vec!["sh".into(), "-c".into(), "echo x > a".into()];
        // A file standing for /usr/bin/sandbox-exec: only its presence is asked.
        let present = dir.path().join("sandbox-exec");
        std::fs::write(&present, "").expect("a file");
        let wrapped = text(&confine(std::slice::from_ref(&scope), &argv, &present).expect("wrapped"));
        assert_eq!(wrapped[0], SANDBOX_EXEC, "the wrapper by its absolute path, never from PATH");
        assert_eq!(wrapped[1..4], ["-p".to_owned(), profile(1), "-D".to_owned()]);
        assert_eq!(wrapped[4], format!("W0={}", scope.display()));
        assert_eq!(wrapped[5..], ["--", "sh", "-c", "echo x > a"]);

        let missing = confine(std::slice::from_ref(&scope), &argv, &dir.path().join("absent")).expect_err("refused");
        assert!(missing.contains("is missing") && missing.contains("not run") && missing.contains("landlock: off"), "{missing}");
        assert!(confine(&[], &[], &present).is_err(), "no command, nothing to run");
        if !cfg!(target_os = "macos") {
            assert_eq!(confined_argv(std::slice::from_ref(&scope), &argv), Ok(argv.clone()), "elsewhere Landlock confines at the spawn");
        }
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

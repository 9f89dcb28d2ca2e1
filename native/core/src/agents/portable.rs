//! How a committed agent setting finds `chokepoint` on whichever machine it runs: the shell guard
//! that `chokepoint init` writes in front of every hook and MCP server command, and the same lookup
//! in Rust for `chokepoint doctor`. Pure: no process is started here.
//!
//! An agent's project settings are shared through git, so they name no machine's absolute path.
//! The guard looks, in this order, at [`PROGRAM_VAR`] (a person's override for this machine, set by
//! an agent's local settings, `chokepoint init --local --program`), `chokepoint` on `PATH` (a user's
//! install, or the folder the VS Code extension prepends for its terminals and its own child
//! processes), and the per-user pointer [`POINTER`] under `$XDG_STATE_HOME` (then
//! `~/.local/state`), which the extension writes with the program it ships, so an agent started
//! outside VS Code finds it too.
//!
//! **Invariant: a guard that finds no program blocks.** An agent that cannot start a hook's command
//! lets the call through (exit 127 is a non-blocking error in Claude Code), so the guard never ends
//! that way: it exits 2 with the reason on stderr ([`crate::agents::reply::EXIT_BLOCK`], the one
//! form that blocks in every agent; `agents/reply.rs`), saying how to fix it. The guard is one line
//! of POSIX `sh` whose only variable parts are the arguments given by [`guarded`] (fixed words:
//! an agent id, an event name, a number), so no path or name on any machine can break its quoting.
//!
//! **On Windows an agent may run its hooks through PowerShell** (Copilot CLI takes a handler's
//! `powershell` command there, and its `bash` one elsewhere): [`guarded_powershell`] is the same
//! lookup, in the same order, with the same refusal, as one line of PowerShell.

use std::path::{Path, PathBuf};

/// The environment variable that names this machine's `chokepoint` program, before `PATH`.
pub const PROGRAM_VAR: &str = "CHOKEPOINT_PROGRAM";

/// The per-user pointer: a file under the state home holding the program's absolute path.
pub const POINTER: &str = "chokepoint/program";

/// What the guard says when it finds no program. Single-quoted in the guard: it holds no `'`.
pub const NOT_FOUND: &str = "Chokepoint blocked this call: no chokepoint program was found on this machine to judge it. \
Fix: put chokepoint on PATH (or open this workspace once in VS Code with the Chokepoint extension), \
or name it for this machine: chokepoint init --local --program /path/to/chokepoint (or set CHOKEPOINT_PROGRAM); then run chokepoint doctor.";

/// The command line that runs `chokepoint <args>` wherever it is found on this machine, and
/// blocks with [`NOT_FOUND`] when it is found nowhere. `args` are plain words (no quoting needed).
///
/// No `${…}` anywhere: Claude Code expands `${VAR}` and `${VAR:-default}` in `.mcp.json` (and
/// leaves `$VAR` alone), which would take the guard apart before a shell sees it. Its variables
/// have names no environment sets, since Gemini CLI puts a set `$VAR` into its settings' strings
/// when it reads them (for the others, the same value the shell would read); `$PATH` is read once,
/// inside double quotes, for the same reason.
///
/// No process either: the guard runs before every hook call, and a command substitution
/// (`$(command -v chokepoint)`) forks a shell, about 0.6 ms here, a fifth of a whole hook call. So
/// `PATH` is walked with the shell's own field splitting and the pointer read with `read`.
pub fn guarded(args: &str) -> String {
    debug_assert!(args.chars().all(|c| c.is_ascii_alphanumeric() || " -_".contains(c)), "plain words: {args}");
    format!(
        "{VAR}=\"${PROGRAM_VAR}\"; {DIRS}=\"$PATH\"; IFS=:; for {DIR} in ${DIRS}; do [ -n \"${VAR}\" ] && break; \
         [ -f \"${DIR}/chokepoint\" ] && [ -x \"${DIR}/chokepoint\" ] && {VAR}=\"${DIR}/chokepoint\"; done; unset IFS; \
         [ -n \"${VAR}\" ] || read -r {VAR} 2>/dev/null <\"$XDG_STATE_HOME/{POINTER}\" || [ -n \"${VAR}\" ] \
         || read -r {VAR} 2>/dev/null <\"$HOME/.local/state/{POINTER}\"; \
         [ -f \"${VAR}\" ] && [ -x \"${VAR}\" ] || {{ echo '{NOT_FOUND}' >&2; exit 2; }}; exec \"${VAR}\" {args}"
    )
}

/// [`guarded`] as one line of PowerShell (7, which Copilot CLI requires on Windows, and Windows
/// PowerShell 5.1): [`PROGRAM_VAR`], then `chokepoint.exe` on `PATH` (`Get-Command`, which walks it
/// as Windows does), then the pointer under `$env:XDG_STATE_HOME`, then `~\.local\state` (where the
/// extension writes it on every platform), and exit 2 with [`NOT_FOUND`] when none names a file.
///
/// - A state home is taken only when it is a full path: an unset `XDG_STATE_HOME` must not become
///   `\chokepoint\program`, a folder at the drive's root, which any user may create on Windows.
/// - The program is started with `&` and no pipeline input, so it reads the agent's JSON from the
///   standard input it inherits, unconverted; its exit code is PowerShell's (`exit $LASTEXITCODE`),
///   so its block (2) stays a block. Its answer is written as UTF-8, not the console's code page.
/// - As in [`guarded`], no `${…}` and no `` ` ``, and the only variable part is `args`, plain words.
pub fn guarded_powershell(args: &str) -> String {
    debug_assert!(args.chars().all(|c| c.is_ascii_alphanumeric() || " -_".contains(c)), "plain words: {args}");
    let pointer = POINTER.replace('/', "\\");
    format!(
        "[Console]::OutputEncoding = [Text.UTF8Encoding]::new($false); ${VAR} = $env:{PROGRAM_VAR}; \
         if (-not ${VAR}) {{ ${VAR} = Get-Command -Name 'chokepoint.exe' -CommandType Application -TotalCount 1 -ErrorAction SilentlyContinue | ForEach-Object Source }}; \
         foreach (${DIR} in @($env:XDG_STATE_HOME, (Join-Path $HOME '.local\\state'))) {{ \
         if (-not ${VAR} -and ${DIR} -match '^([A-Za-z]:[\\\\/]|[\\\\/][\\\\/])') {{ \
         ${FILE} = Join-Path ${DIR} '{pointer}'; \
         if (Test-Path -LiteralPath ${FILE} -PathType Leaf) {{ ${VAR} = Get-Content -LiteralPath ${FILE} -TotalCount 1 }} }} }}; \
         if (-not ${VAR} -or -not (Test-Path -LiteralPath ${VAR} -PathType Leaf)) {{ [Console]::Error.WriteLine('{NOT_FOUND}'); exit 2 }}; \
         & ${VAR} {args}; exit $LASTEXITCODE"
    )
}

/// The guard's shell variables: the program, `PATH` as read once, and the folder being looked in.
const VAR: &str = "chokepoint_bin";
const DIRS: &str = "chokepoint_path";
const DIR: &str = "chokepoint_dir";
/// The PowerShell guard's pointer file being looked at.
const FILE: &str = "chokepoint_pointer";

/// Whether `command` is a guard written by [`guarded`]: it finds the program itself, so it names no
/// path to check.
pub fn is_guarded(command: &str) -> bool {
    command.starts_with(&format!("{VAR}=\"${PROGRAM_VAR}\";")) && command.contains(&format!("exec \"${VAR}\" "))
}

/// Where the guard finds the program, given the environment it runs in (`var`): the first of
/// [`PROGRAM_VAR`], `PATH`, the pointer (under `$XDG_STATE_HOME`, then `~/.local/state`), with what
/// was looked at when none is there.
pub fn find_program(var: impl Fn(&str) -> Option<String>) -> Result<PathBuf, String> {
    let runnable = |p: &Path| executable(p).then(|| p.to_path_buf());
    if let Some(named) = var(PROGRAM_VAR).filter(|v| !v.is_empty()) {
        return runnable(Path::new(&named)).ok_or_else(|| format!("{PROGRAM_VAR} names `{named}`, which is not an executable file"));
    }
    let path = var("PATH").unwrap_or_default();
    let name = format!("chokepoint{}", std::env::consts::EXE_SUFFIX);
    if let Some(found) = std::env::split_paths(&path).map(|dir| dir.join(&name)).find_map(|p| runnable(&p)) {
        return Ok(found);
    }
    let homes = [var("XDG_STATE_HOME").map(PathBuf::from), var("HOME").map(|h| Path::new(&h).join(".local/state"))];
    let pointers: Vec<PathBuf> = homes.into_iter().flatten().filter(|h| h.is_absolute()).map(|h| h.join(POINTER)).collect();
    for pointer in &pointers {
        if let Ok(named) = std::fs::read_to_string(pointer) {
            let named = named.trim_end_matches(['\n', '\r']);
            return runnable(Path::new(named))
                .ok_or_else(|| format!("the pointer {} names `{named}`, which is not an executable file", pointer.display()));
        }
    }
    let pointers: Vec<String> = pointers.iter().map(|p| p.display().to_string()).collect();
    Err(format!("chokepoint is not on PATH, {PROGRAM_VAR} is not set, and no pointer is at {}", pointers.join(" nor ")))
}

/// Whether `path` is a file this user may run.
pub fn executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Runs a hook's guard through `sh` with only `env`.
    fn run(env: &[(&str, &str)]) -> std::process::Output {
        Command::new("sh")
            .arg("-c")
            .arg(guarded("hook --agent claude --deadline 25"))
            .env_clear()
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "runs the guard, a line of POSIX sh, through sh, which Windows has not (its agents get the PowerShell guard, tested beside it)"
    )]
    fn with_no_program_anywhere_the_guard_blocks_and_says_how_to_fix_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        let out = run(&[("PATH", "/usr/bin:/bin"), ("HOME", home)]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("chokepoint init --local --program") && err.contains("on PATH"), "{err}");
        assert!(
            find_program(|k| [("PATH", "/usr/bin:/bin"), ("HOME", home)].iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned()))
                .is_err()
        );
    }

    #[test]
    fn the_guard_has_nothing_an_agent_expands_in_its_settings() {
        let guard = guarded("mcp");
        assert!(!guard.contains("${") && !guard.contains('`'), "{guard}");
        assert!(is_guarded(&guard));
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "runs the guard, a line of POSIX sh, through sh, which Windows has not (its agents get the PowerShell guard, tested beside it)"
    )]
    fn the_guard_runs_the_program_it_finds_with_its_arguments() {
        let dir = tempfile::tempdir().unwrap();
        // A folder whose name a shell would split or unquote: the guard takes it whole.
        let bin = dir.path().join("b in's $x");
        std::fs::create_dir(&bin).unwrap();
        // A stand-in program that prints its arguments; found three ways, in the guard's order.
        let fake = bin.join("chokepoint");
        std::fs::write(&fake, "#!/bin/sh\necho \"ran $0 $*\"\n").unwrap();
        #[cfg(unix)]
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let home = dir.path().join("home");
        let (home_s, bin_s, fake_s) = (home.to_str().unwrap(), bin.to_str().unwrap(), fake.to_str().unwrap());
        let on_path = format!("{bin_s}:/usr/bin:/bin");
        let stdout = |env: &[(&str, &str)]| {
            let out = run(env);
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        assert_eq!(stdout(&[("PATH", &on_path), ("HOME", home_s)]), format!("ran {fake_s} hook --agent claude --deadline 25\n"));
        assert!(stdout(&[("PATH", "/usr/bin:/bin"), ("HOME", home_s), (PROGRAM_VAR, fake_s)]).starts_with(&format!("ran {fake_s} ")));
        std::fs::create_dir_all(home.join(".local/state/chokepoint")).unwrap();
        std::fs::write(home.join(".local/state").join(POINTER), format!("{fake_s}\n")).unwrap();
        assert!(stdout(&[("PATH", "/usr/bin:/bin"), ("HOME", home_s)]).starts_with(&format!("ran {fake_s} ")));
        // A pointer without its last newline (`read` says end of file, having read it).
        std::fs::write(home.join(".local/state").join(POINTER), fake_s).unwrap();
        assert_eq!(stdout(&[("PATH", "/usr/bin:/bin"), ("HOME", home_s)]), format!("ran {fake_s} hook --agent claude --deadline 25\n"));
        let env = [("PATH", "/usr/bin:/bin"), ("HOME", home_s)];
        assert_eq!(find_program(|k| env.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())).unwrap(), fake);
        assert!(is_guarded(&guarded("mcp")));
    }

    /// The PowerShell guard holds nothing an agent expands, and its quotes and braces pair up, so the
    /// one line parses: the part of it that can be checked without PowerShell.
    #[test]
    fn the_powershell_guard_is_one_line_of_balanced_powershell_with_nothing_expanded() {
        let guard = guarded_powershell("hook --agent copilot --event preToolUse --deadline 600");
        assert!(!guard.contains("${") && !guard.contains('`') && !guard.contains('\n'), "{guard}");
        assert!(!NOT_FOUND.contains('\''));
        assert_eq!(guard.matches('\'').count() % 2, 0, "{guard}");
        assert_eq!(guard.matches('{').count(), guard.matches('}').count(), "{guard}");
        assert_eq!(guard.matches('(').count(), guard.matches(')').count(), "{guard}");
        assert!(guard.contains(&format!("$env:{PROGRAM_VAR}")) && guard.contains("'chokepoint\\program'"), "{guard}");
        assert!(guard.contains(&format!("[Console]::Error.WriteLine('{NOT_FOUND}'); exit 2")), "{guard}");
        assert!(guard.ends_with("& $chokepoint_bin hook --agent copilot --event preToolUse --deadline 600; exit $LASTEXITCODE"), "{guard}");
    }

    /// Through PowerShell itself, with no program anywhere: it blocks and says how to fix it, as the
    /// `sh` guard does.
    #[test]
    #[cfg_attr(not(windows), ignore = "runs the guard through PowerShell, which Windows has and these Linux machines have not")]
    #[cfg_attr(wine, ignore = "runs the guard through PowerShell, which Wine has not")]
    fn with_no_program_anywhere_the_powershell_guard_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("powershell.exe")
            .args(["-NoProfile", "-NonInteractive", "-Command", &guarded_powershell("hook --agent copilot --deadline 25")])
            .env("PATH", r"C:\Windows\System32;C:\Windows\System32\WindowsPowerShell\v1.0")
            .env("HOME", dir.path())
            .env("USERPROFILE", dir.path())
            .env_remove(PROGRAM_VAR)
            .env_remove("XDG_STATE_HOME")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("chokepoint init --local --program"), "{out:?}");
    }
}

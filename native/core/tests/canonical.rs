//! The canonicaliser against a table of adversarial paths, and a property: no generated path that
//! really lands outside the workspace is ever judged inside it.

use chokepoint_core::scope::canonical::{Names, PathRefusal, Workspace};
use std::fs;

mod common;
use common::{Rng, real_location, symlink};

struct Fixture {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    ws: Workspace,
    outside: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let r = root.path();
    fs::create_dir_all(r.join("src/deep")).unwrap();
    fs::write(r.join("src/a.js"), "a").unwrap();
    fs::write(outside.path().join("secret"), "s").unwrap();
    symlink(r.join("src"), r.join("link_in")).unwrap();
    symlink(outside.path(), r.join("link_out")).unwrap();
    symlink(outside.path().join("not-yet"), r.join("dangling_out")).unwrap();
    symlink("src/new.js", r.join("dangling_in")).unwrap();
    fs::hard_link(outside.path().join("secret"), r.join("src/hard")).unwrap();
    let ws = Workspace::new(r).unwrap();
    Fixture { outside: fs::canonicalize(outside.path()).unwrap(), _dirs: (root, outside), ws }
}

fn check(f: &Fixture, raw: &str, expected: Result<&str, &str>) {
    let got = f.ws.canonicalize(raw);
    match (&got, expected) {
        (Ok(rel), Ok(want)) => assert_eq!(rel, want, "{raw:?}"),
        (Err(refusal), Err(kind)) => assert_eq!(refusal_kind(refusal), kind, "{raw:?}: {refusal}"),
        _ => panic!("{raw:?}: got {got:?}, expected {expected:?}"),
    }
}

fn refusal_kind(r: &PathRefusal) -> &'static str {
    match r {
        PathRefusal::Empty => "empty",
        PathRefusal::Nul => "nul",
        PathRefusal::Tilde => "tilde",
        PathRefusal::OutsideWorkspace { .. } => "outside",
        PathRefusal::NotUtf8 => "utf8",
        PathRefusal::Hardlinked { .. } => "hardlink",
        PathRefusal::UnknownBase { .. } => "base",
        PathRefusal::Windows(_) => "windows",
    }
}

/// Windows' spellings of one file, on its real file system (under Wine in `npm test -- platforms`):
/// each is judged as the canonical path, and what names a device or a stream is refused. The text
/// rules themselves are `scope::win_names`'s tests, on every platform.
#[cfg(windows)]
#[test]
fn windows_spellings_of_a_path_are_judged_as_its_canonical_form() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/auth")).unwrap();
    std::fs::write(dir.path().join("src/auth/x.ts"), "x").unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    let root = ws.root().to_str().unwrap().trim_start_matches(r"\\?\").to_owned();
    let spellings = [
        "src/auth/x.ts".to_owned(),
        r"src\auth\x.ts".to_owned(),
        "SRC/Auth/X.TS".to_owned(),
        "src/auth/x.ts.".to_owned(),
        "src/auth/x.ts ".to_owned(),
        "src/auth/../auth/x.ts".to_owned(),
        format!(r"{root}\src\auth\x.ts"),
        format!("{}/src/auth/x.ts", root.replace('\\', "/")),
        format!(r"\\?\{root}\src\auth\x.ts"),
        format!(r"{}\src\auth\x.ts", root.to_lowercase()),
    ];
    for spelling in &spellings {
        assert_eq!(ws.canonicalize(spelling).as_deref(), Ok("src/auth/x.ts"), "{spelling}");
    }
    for refused in ["src/auth/NUL", "src/auth/con.ts", "src/auth/x.ts:hidden", r"\\.\C:\x.ts", "C:x.ts"] {
        assert!(matches!(ws.canonicalize(refused), Err(PathRefusal::Windows(_))), "{refused}: {:?}", ws.canonicalize(refused));
    }
}

/// A relative path lands where the agent resolves it: under its working folder (`..` and symlinks
/// taken from there), at the root for our own callers, nowhere known without a base.
#[test]
#[cfg_attr(
    wine,
    ignore = "Wine makes a symbolic link a Unix one, which Windows' calls neither show as a link (no reparse point) nor resolve, so nothing under Wine can tell a path through it left the workspace; a real Windows does"
)]
fn relative_paths_are_resolved_from_the_agents_folder() {
    use chokepoint_core::PathBase;
    let f = fixture();
    let src = PathBase::Dir(f.ws.root().join("src"));
    assert_eq!(f.ws.canonicalize_from("deep/x.js", &src).unwrap(), "src/deep/x.js");
    assert_eq!(f.ws.canonicalize_from("../link_in/a.js", &src).unwrap(), "src/a.js");
    assert_eq!(f.ws.canonicalize_from("deep/x.js", &PathBase::Root).unwrap(), "deep/x.js");
    let absolute = f.ws.root().join("src/a.js");
    assert_eq!(f.ws.canonicalize_from(absolute.to_str().unwrap(), &PathBase::Unknown("no cwd".into())).unwrap(), "src/a.js");
    assert!(
        matches!(f.ws.canonicalize_from("a.js", &PathBase::Unknown("no cwd".into())), Err(PathRefusal::UnknownBase { why }) if why == "no cwd")
    );
    // An agent working outside the workspace writes outside it.
    let outside = PathBase::Dir(f.outside.clone());
    assert!(matches!(f.ws.canonicalize_from("src/a.js", &outside), Err(PathRefusal::OutsideWorkspace { .. })));
    assert!(matches!(f.ws.canonicalize_from("x", &PathBase::Dir("rel".into())), Err(PathRefusal::UnknownBase { .. })));
}

#[test]
#[cfg_attr(
    wine,
    ignore = "Wine makes a symbolic link a Unix one, which Windows' calls neither show as a link (no reparse point) nor resolve, so nothing under Wine can tell a path through it left the workspace; a real Windows does"
)]
fn adversarial_paths() {
    let f = fixture();
    let root = f.ws.root().to_str().unwrap().to_owned();
    let table: Vec<(String, Result<&str, &str>)> = vec![
        ("src/a.js".into(), Ok("src/a.js")),
        ("./src//a.js".into(), Ok("src/a.js")),
        ("src/./a.js".into(), Ok("src/a.js")),
        ("src/deep/../a.js".into(), Ok("src/a.js")),
        ("src/new/file.js".into(), Ok("src/new/file.js")),
        (".".into(), Ok("")),
        ("../outside".into(), Err("outside")),
        ("src/../../x".into(), Err("outside")),
        ("src/new/../../../x".into(), Err("outside")),
        (format!("{root}/src/a.js"), Ok("src/a.js")),
        (format!("{root}//src/../src/a.js"), Ok("src/a.js")),
        ("/etc/passwd".into(), Err("outside")),
        (format!("{}/secret", f.outside.display()), Err("outside")),
        ("~/.bashrc".into(), Err("tilde")),
        ("~root/x".into(), Err("tilde")),
        ("".into(), Err("empty")),
        ("src/a\0.js".into(), Err("nul")),
        // Symlinks: into the scope, out of it, a symlinked parent of a new file, dangling ones.
        ("link_in/a.js".into(), Ok("src/a.js")),
        ("link_out/secret".into(), Err("outside")),
        ("link_out/new.txt".into(), Err("outside")),
        ("link_in/../link_out/x".into(), Err("outside")),
        ("dangling_out".into(), Err("outside")),
        ("dangling_in".into(), Ok("src/new.js")),
        // A hard link to a file outside: writing it writes there too.
        ("src/hard".into(), Err("hardlink")),
        // Names that only look special stay names on this file system.
        ("src/a.js.".into(), Ok("src/a.js.")),
        ("src/...".into(), Ok("src/...")),
        ("SRC/a.js".into(), Ok("SRC/a.js")),
        ("ѕrc/a.js".into(), Ok("ѕrc/a.js")),
    ];
    for (raw, expected) in &table {
        check(&f, raw, *expected);
    }
}

#[test]
fn no_generated_path_that_lands_outside_is_judged_inside() {
    let f = fixture();
    let root = f.ws.root().to_path_buf();
    let segments = ["src", "deep", "..", ".", "", "a.js", "link_in", "link_out", "dangling_out", "dangling_in", "new", "secret", "hard"];
    let mut rng = Rng(0x9e3779b97f4a7c15);
    // Under Wine every file system call crosses to its server: a quarter of the paths (six minutes
    // for all of them) keeps the binary well inside the platforms layer's ten.
    for _ in 0..if cfg!(wine) { 5_000 } else { 20_000 } {
        let n = 1 + rng.next() % 6;
        let mut raw: Vec<&str> = (0..n).map(|_| rng.pick(&segments)).collect();
        let absolute = rng.next().is_multiple_of(4);
        let text = if absolute { format!("{}/{}", root.display(), raw.join("/")) } else { raw.join("/") };
        raw.clear();
        if let Ok(rel) = f.ws.canonicalize(&text) {
            // Where would a write really land? Walk the real file system the way open(2) does.
            let real = real_location(&root.join(&text));
            assert!(real.starts_with(&root), "{text:?} judged inside as {rel:?} but lands at {}", real.display());
            assert!(!rel.split('/').any(|c| c == ".." || c == "."), "{text:?} gave a non-canonical {rel:?}");
            assert_eq!(real, root.join(&rel).components().collect::<std::path::PathBuf>(), "{text:?}");
        }
    }
}

/// `é` as one code point (NFC) and as `e` with a combining accent (NFD): one name on a Mac's volume.
const NFC: &str = "caf\u{e9}";
const NFD: &str = "cafe\u{301}";

/// A Mac's file system laid out in a temporary folder: `private/tmp/ws` is the workspace, `tmp` a
/// symlink to `private/tmp` as `/tmp` is on macOS, names compared as APFS compares them (case and
/// Unicode normalisation ignored). Returns the folder standing for `/` and the workspace.
fn mac_layout() -> (tempfile::TempDir, std::path::PathBuf, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let slash = fs::canonicalize(dir.path()).unwrap();
    let ws = slash.join("private/tmp/ws");
    for file in ["src/auth/x.ts".to_owned(), format!("src/{NFC}/n.ts"), "lib/y.ts".to_owned()] {
        fs::create_dir_all(ws.join(&file).parent().unwrap()).unwrap();
        fs::write(ws.join(&file), "x").unwrap();
    }
    fs::create_dir_all(slash.join("private/tmp/other")).unwrap();
    symlink("private/tmp", slash.join("tmp")).unwrap();
    let names = Names { fold_case: true, normalize: true };
    (dir, slash, Workspace::with_names(fs::canonicalize(&ws).unwrap(), names))
}

/// Every spelling of a path is judged as its canonical form is: allowed inside the scope, denied
/// outside it, refused outside the workspace. `judge` is the scope under the workspace's rules.
fn judged_like_canonical(ws: &Workspace, table: &[(String, &str)], inside: &[&str], outside_ws: &[String]) {
    let names = ws.names();
    let globs: Vec<globset::GlobMatcher> =
        ["src/auth/**", &format!("src/{NFD}/**")].iter().map(|g| names.glob(g).unwrap().compile_matcher()).collect();
    let judge = |canonical: &str| globs.iter().any(|g| g.is_match(canonical));
    for (raw, canonical) in table {
        let got = ws.canonicalize(raw).unwrap_or_else(|e| panic!("{raw:?}: {e}"));
        let want = ws.canonicalize(canonical).unwrap();
        assert_eq!(got, want, "{raw:?} is the file {canonical:?}");
        assert_eq!(judge(&got), judge(&want), "{raw:?} is judged as {canonical:?}");
        assert_eq!(judge(&got), inside.contains(canonical), "{raw:?}: inside the scope iff {canonical:?} is");
    }
    for raw in outside_ws {
        assert!(
            matches!(ws.canonicalize(raw), Err(PathRefusal::OutsideWorkspace { .. })),
            "{raw:?} lands outside: {:?}",
            ws.canonicalize(raw)
        );
    }
}

/// The macOS adversarial set, judged on Linux through `Names` with macOS's rules and a `/tmp` that
/// is a symlink into `/private`: case, NFD against NFC, `/private/tmp` against `/tmp`, `..`, doubled
/// and trailing slashes. Every spelling is judged as its canonical form.
#[test]
#[cfg_attr(
    wine,
    ignore = "its `/tmp` is a symbolic link, which Wine makes a Unix one that Windows' calls do not resolve; macOS's rules are the Linux run's to test"
)]
fn macos_spellings_of_a_path_are_judged_as_its_canonical_form() {
    let (_dir, slash, ws) = mac_layout();
    let (private, tmp) = (slash.join("private/tmp/ws").display().to_string(), slash.join("tmp/ws").display().to_string());
    let upper = format!("{}/PRIVATE/TMP/WS", slash.display());
    let s = |x: &str| x.to_owned();
    let table: Vec<(String, &str)> = vec![
        // Case.
        (s("SRC/Auth/x.ts"), "src/auth/x.ts"),
        (s("src/AUTH/X.TS"), "src/auth/x.ts"),
        (s("Lib/Y.ts"), "lib/y.ts"),
        (s("SRC/AUTH/new.ts"), "src/auth/new.ts"),
        // NFD against NFC, with case too.
        (format!("src/{NFD}/n.ts"), "src/café/n.ts"),
        (format!("SRC/{}/N.TS", NFD.to_uppercase()), "src/café/n.ts"),
        (format!("src/{NFC}/new.ts"), "src/café/new.ts"),
        // `/private/tmp` against `/tmp`, and the root spelt in another case.
        (format!("{private}/src/auth/x.ts"), "src/auth/x.ts"),
        (format!("{tmp}/src/auth/x.ts"), "src/auth/x.ts"),
        (format!("{tmp}/SRC/auth/{NFD}.ts"), "src/auth/café.ts"),
        (format!("{tmp}/lib/y.ts"), "lib/y.ts"),
        (format!("{upper}/src/auth/x.ts"), "src/auth/x.ts"),
        (format!("{upper}/lib/y.ts"), "lib/y.ts"),
        // `..`, `.`, doubled and trailing slashes.
        (s("src/auth/../auth/x.ts"), "src/auth/x.ts"),
        (s("lib/../src/auth/x.ts"), "src/auth/x.ts"),
        (s("src/auth/../../lib/y.ts"), "lib/y.ts"),
        (s("./src//auth///x.ts"), "src/auth/x.ts"),
        (s("src/auth/"), "src/auth"),
        (s("src/auth/x.ts/"), "src/auth/x.ts"),
        (s("src/auth/new/"), "src/auth/new"),
        (s("SRC/Auth/../AUTH/./x.ts"), "src/auth/x.ts"),
        // `..` is taken physically: `/tmp/ws/..` is `/private/tmp`.
        (format!("{tmp}/../ws/src/auth/x.ts"), "src/auth/x.ts"),
        (format!("{private}/../../tmp/ws/lib/y.ts"), "lib/y.ts"),
        (s("src/../../ws/src/auth/x.ts"), "src/auth/x.ts"),
    ];
    let inside = ["src/auth/x.ts", "src/auth/new.ts", "src/café/n.ts", "src/café/new.ts", "src/auth/café.ts", "src/auth/new"];
    let outside_ws = vec![
        format!("{}/private/tmp/other/x.ts", slash.display()),
        format!("{}/tmp/other/x.ts", slash.display()),
        format!("{tmp}/../other/x.ts"),
        // Read as text, `/tmp/ws/../tmp/ws` is the workspace; on the disk it is `/private/tmp/tmp/ws`.
        format!("{tmp}/../tmp/ws/src/auth/x.ts"),
        s("../other/src/auth/x.ts"),
        s("src/../../ws2/src/auth/x.ts"),
        format!("{}/private/tmp/wsx/src/auth/x.ts", slash.display()),
    ];
    judged_like_canonical(&ws, &table, &inside, &outside_ws);
}

/// The same set on a real Mac: its `/tmp`, its volume's own rules (probed), its kernel's answers
/// (`O_NOFOLLOW_ANY`, `F_GETPATH`).
#[test]
#[cfg_attr(
    not(target_os = "macos"),
    ignore = "needs a Mac's /tmp (a symlink to /private/tmp) and a volume that ignores case and normalisation"
)]
fn macos_spellings_of_a_path_are_judged_as_its_canonical_form_on_a_mac() {
    let dir = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    assert!(root.starts_with("/private/tmp"), "{}", root.display());
    for file in ["src/auth/x.ts".to_owned(), format!("src/{NFC}/n.ts"), "lib/y.ts".to_owned()] {
        fs::create_dir_all(root.join(&file).parent().unwrap()).unwrap();
        fs::write(root.join(&file), "x").unwrap();
    }
    let ws = Workspace::new(&root).unwrap();
    assert_eq!(ws.names(), Names { fold_case: true, normalize: true }, "a Mac's default volume");
    let tmp = dir.path().display().to_string();
    let table: Vec<(String, &str)> = vec![
        ("SRC/Auth/x.ts".to_owned(), "src/auth/x.ts"),
        (format!("src/{NFD}/n.ts"), "src/café/n.ts"),
        (format!("{tmp}/src/auth/x.ts"), "src/auth/x.ts"),
        (format!("{}/SRC/auth/x.ts", root.display()), "src/auth/x.ts"),
        ("src/auth/../../lib/y.ts".to_owned(), "lib/y.ts"),
        ("src/auth/x.ts/".to_owned(), "src/auth/x.ts"),
    ];
    judged_like_canonical(
        &ws,
        &table,
        &["src/auth/x.ts", "src/café/n.ts"],
        &["/tmp/../etc/hosts".to_owned(), "/private/etc/hosts".to_owned()],
    );
}

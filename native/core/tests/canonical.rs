//! The canonicaliser against a table of adversarial paths, and a property: no generated path that
//! really lands outside the workspace is ever judged inside it.

use chokepoint_core::scope::canonical::{PathRefusal, Workspace};
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

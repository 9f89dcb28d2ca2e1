//! Fuzzes `Workspace::canonicalize` against a fixture workspace on the real file system and checks
//! what the gatekeeper relies on: it never panics, an accepted path is canonical, and where a write
//! to the raw path would really land is inside the workspace, at exactly the accepted path.
//!
//! The input is the raw path an agent names. Two tokens stand for absolute paths that are only known
//! at run time, so that the seeds (and the mutations of them) can name absolute paths into and next
//! to the workspace: `$ROOT` is the workspace root, `$OUTSIDE` a folder beside it.
//!
//! Run it with `npm run fuzz [-- SECONDS]` (stable Rust, no cargo-fuzz needed), or with cargo-fuzz:
//! `cargo fuzz run canonicalize -- -dict=fuzz/canonicalize.dict`.
#![no_main]

use chokepoint_core::scope::canonical::Workspace;
use libfuzzer_sys::fuzz_target;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

// One model of where a write really lands, shared with the integration tests.
#[path = "../../native/core/tests/common/mod.rs"]
mod common;
use common::real_location;

struct Fixture {
    ws: Workspace,
    root: PathBuf,
    outside: PathBuf,
    /// Whether this file system compares names without case, probed on the fixture itself (a `SRC`
    /// that was never created but can be opened), not taken from the canonicaliser under test.
    case_insensitive: bool,
}

/// Built once per process. It lives under the temporary folder (`TMPDIR`, which `scripts/fuzz.js`
/// points into `fuzz/target/` and clears) and is never removed by the process itself: libFuzzer ends
/// the process with `exit`, so no destructor would run.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("chokepoint-fuzz-{}", std::process::id()));
        // A folder left by an earlier process with the same id: start clean, or links would fail.
        let _ = fs::remove_dir_all(&base);
        let (r, o) = (base.join("ws"), base.join("outside"));
        fs::create_dir_all(r.join("src/deep")).unwrap();
        fs::create_dir_all(&o).unwrap();
        fs::write(r.join("src/a.js"), "a").unwrap();
        fs::write(o.join("secret"), "s").unwrap();
        // As tests/canonical.rs: links into and out of the workspace, dangling ones, a hard link.
        symlink(r.join("src"), r.join("link_in")).unwrap();
        symlink(&o, r.join("link_out")).unwrap();
        symlink(o.join("not-yet"), r.join("dangling_out")).unwrap();
        symlink("src/new.js", r.join("dangling_in")).unwrap();
        fs::hard_link(o.join("secret"), r.join("src/hard")).unwrap();
        // And a few more shapes: a relative link that climbs out, a dangling one that does, a link to
        // a link, a dangling link to a dangling link, a dangling link to a name that is not UTF-8, and
        // a link to the hard-linked file (the link is one file, what it leads to has two names).
        // (No link cycles: the shared model follows dangling links without a depth limit.)
        symlink("..", r.join("up")).unwrap();
        symlink("src/hard", r.join("to_hard")).unwrap();
        symlink("../outside/later", r.join("dangling_up")).unwrap();
        symlink("link_in", r.join("chain")).unwrap();
        symlink("dangling_out", r.join("dangling_chain")).unwrap();
        symlink(std::ffi::OsStr::from_bytes(b"src/\xff.js"), r.join("dangling_bytes")).unwrap();
        let ws = Workspace::new(&r).unwrap();
        let root = ws.root().to_path_buf();
        let case_insensitive = fs::metadata(root.join("SRC")).is_ok();
        Fixture { outside: fs::canonicalize(&o).unwrap(), root, ws, case_insensitive }
    })
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    // The core takes paths as `&str` (they arrive in JSON), so bytes that are not UTF-8 can never reach
    // it; replacing them, rather than skipping the input, keeps every mutation exercising the code.
    let text = String::from_utf8_lossy(data)
        .replace("$ROOT", &f.root.to_string_lossy())
        .replace("$OUTSIDE", &f.outside.to_string_lossy());
    let Ok(rel) = f.ws.canonicalize(&text) else { return };

    assert!(!rel.starts_with('/'), "{text:?} was accepted as the absolute {rel:?}");
    assert!(!rel.contains('\0'), "{text:?} was accepted as {rel:?}");
    if !rel.is_empty() {
        assert!(
            rel.split('/').all(|c| !c.is_empty() && c != "." && c != ".."),
            "{text:?} was accepted as the non-canonical {rel:?}"
        );
    }
    // Where would a write really land? Walk the file system the way open(2) does.
    let real = real_location(&f.root.join(&text));
    assert!(real.starts_with(&f.root), "{text:?} was accepted as {rel:?} but a write lands at {}", real.display());
    // A file with several names is written through all of them: accepting it would write elsewhere.
    if let Ok(meta) = fs::metadata(&real) {
        assert!(!meta.is_file() || meta.nlink() == 1, "{text:?} was accepted as {rel:?}, a file with {} names", meta.nlink());
    }
    let expected: PathBuf = f.root.join(&rel).components().collect();
    if f.case_insensitive {
        // The canonicaliser lower-cases on such a file system; the disk keeps the case it was given.
        assert_eq!(lower(&real), lower(&expected), "{text:?} was accepted as {rel:?}");
    } else {
        assert_eq!(real, expected, "{text:?} was accepted as {rel:?}");
    }
});

fn lower(p: &Path) -> String {
    p.to_string_lossy().to_lowercase()
}

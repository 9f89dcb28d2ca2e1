//! Helpers shared by the tests that judge paths against where writes really land.
#![allow(dead_code)] // each test binary uses its own subset

use std::fs;
use std::path::{Path, PathBuf};

/// A small deterministic generator (xorshift), so the property test needs no extra crate and every
/// failure reproduces.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// Where the kernel would create or open a path: existing parts resolved, a dangling final link
/// followed to its target.
pub fn real_location(path: &Path) -> PathBuf {
    let mut current = PathBuf::from("/");
    let parts: Vec<_> = path.components().collect();
    for (i, c) in parts.iter().enumerate() {
        match c {
            // Windows: the drive, then its root (`C:` and `\\`, or verbatim `\\?\C:`).
            std::path::Component::Prefix(prefix) => current = PathBuf::from(prefix.as_os_str()),
            std::path::Component::RootDir if cfg!(windows) => current.push(std::path::MAIN_SEPARATOR_STR),
            std::path::Component::RootDir | std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                current = fs::canonicalize(&current).unwrap_or(current.clone());
                current.pop();
            }
            std::path::Component::Normal(n) => {
                current.push(n);
                if let Ok(real) = fs::canonicalize(&current) {
                    current = real;
                } else if let Ok(target) = fs::read_link(&current) {
                    let parent = current.parent().unwrap().to_path_buf();
                    current = real_location(&parent.join(target));
                } else if i + 1 < parts.len() {
                    // A missing directory in the middle: the rest is created lexically.
                }
            }
        }
    }
    current
}

/// A symbolic link at `link` to `target`, as on Unix; Windows tells a folder's link from a file's,
/// so there it is a folder's when `target` (relative to the link's folder) is a folder now.
pub fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::symlink(target, link);
    #[cfg(windows)]
    {
        let (target, link) = (target.as_ref(), link.as_ref());
        if link.parent().unwrap_or(Path::new(".")).join(target).is_dir() {
            std::os::windows::fs::symlink_dir(target, link)
        } else {
            std::os::windows::fs::symlink_file(target, link)
        }
    }
}

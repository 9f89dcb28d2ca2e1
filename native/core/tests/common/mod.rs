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
            _ => {}
        }
    }
    current
}

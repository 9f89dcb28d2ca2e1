//! Tidy checks of the core's structure, in the style of rust-analyzer's `tidy` tests: they read the
//! sources, not the compiled crate.
//!
//! - **Layers depend only downwards.** Each folder of `src/` is a layer (`LAYERS`, in order, the same
//!   list as `lib.rs` and ARCHITECTURE.md); a file may name its own layer and the layers before it,
//!   never one after it. Inside the crate, code names the layer (`crate::scope::gatekeeper`), not a
//!   re-export of `lib.rs`, so that what a path depends on can be read off the path.
//! - **No import circles between files.** The files of the crate, with an edge for every path that
//!   names another file's module (or an item a `mod.rs` re-exports from one), form no cycle; nor do
//!   the files of the edges that call it (the CLI and the binding), read the same way.
//!
//! - **Each layer's map is whole.** A layer's `mod.rs` opens with what the layer holds, naming every
//!   file of its folder (`` `name.rs` ``), so the module docs are a map nothing is missing from.
//!
//! Test modules (`#[cfg(test)]` to the end of a file) and comments are not read: a test may use
//! anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A layer may use itself and the ones before it.
const LAYERS: &[&str] =
    &["base", "model", "budget", "ledger", "hooks", "containment", "scope", "approvals", "config", "engine", "agents", "serve"];

/// Items of the crate root a layer may name: defined there, not re-exported.
const ROOT_ITEMS: &[&str] = &["VERSION"];

struct Source {
    /// The module path of the file: `["scope", "gatekeeper"]` for `scope/gatekeeper.rs`, `["scope"]`
    /// for `scope/mod.rs`.
    module: Vec<String>,
    rel: String,
    /// The code lines (1-based number, text) with comments and test modules left out.
    lines: Vec<(usize, String)>,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `src/` of a sibling crate under `native/` (`cli`, `node`).
fn edge_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name).join("src")
}

fn sources() -> Vec<Source> {
    sources_of(&src())
}

/// The sources of the crate whose root file (`lib.rs` or `main.rs`) is in `root`.
fn sources_of(root: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            let mut module: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
            if module.last().is_some_and(|m| m == "mod" || m == "lib" || m == "main") {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let mut lines = Vec::new();
            for (i, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("#[cfg(test)]") {
                    break;
                }
                let code = match line.find("//") {
                    Some(at) => &line[..at],
                    None => line,
                };
                if !code.trim().is_empty() {
                    lines.push((i + 1, code.to_owned()));
                }
            }
            Source { module, rel, lines }
        })
        .collect()
}

/// Every crate-relative path a line names, made absolute: `crate::a::b` and `super::b` (from the
/// file's own module) as `["a", "b", ...]`.
fn paths_in(line: &str, module: &[String], is_mod_rs: bool) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = line.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !ident(bytes[i - 1]);
        // Bytes, not `&line[i..]`: `i` may fall inside a multi-byte character of a string literal.
        let rest = &bytes[i..];
        let (mut base, mut at) = if starts_word && rest.starts_with(b"crate::") {
            (Vec::new(), i + "crate::".len())
        } else if starts_word && rest.starts_with(b"super::") {
            // `super` of `a/b.rs` is `a`; of `a/mod.rs` (module `a`) it is the root.
            let mut base = module.to_vec();
            if !is_mod_rs || !base.is_empty() {
                base.pop();
            }
            (base, i + "super::".len())
        } else {
            i += 1;
            continue;
        };
        while line[at..].starts_with("super::") {
            base.pop();
            at += "super::".len();
        }
        // The segments that follow, up to the first that is not a plain name (`{`, `*`, a call).
        let mut path = base;
        loop {
            let end = at + line[at..].bytes().take_while(|&c| ident(c)).count();
            if end == at {
                break;
            }
            path.push(line[at..end].to_owned());
            if line[end..].starts_with("::") {
                at = end + 2;
            } else {
                at = end;
                break;
            }
        }
        // `crate::a::{b, c::d}`: each name of the group.
        if line[at..].starts_with('{') {
            let close = line[at..].find('}').map_or(line.len(), |c| at + c);
            for item in line[at + 1..close].split(',') {
                let mut p = path.clone();
                p.extend(item.trim().split("::").map(str::trim).filter(|s| !s.is_empty() && *s != "self").map(str::to_owned));
                found.push(p);
            }
        } else if !path.is_empty() {
            found.push(path);
        }
        i = at.max(i + 1);
    }
    found
}

fn rank(layer: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == layer)
}

#[test]
fn layers_depend_only_downwards() {
    let mut problems = Vec::new();
    for source in sources() {
        let Some(own) = source.module.first() else { continue }; // lib.rs: the crate's API
        let own_rank = rank(own).unwrap_or_else(|| {
            panic!(
                "src/{} is in no layer: put it in one of the layer folders {LAYERS:?} (or add a layer here, in lib.rs and ARCHITECTURE.md)",
                source.rel
            )
        });
        for (number, line) in &source.lines {
            for path in paths_in(line, &source.module, source.rel.ends_with("mod.rs")) {
                let Some(first) = path.first() else { continue };
                match rank(first) {
                    Some(r) if r > own_rank => problems.push(format!(
                        "src/{}:{number}: layer `{own}` uses `{}` of layer `{first}`, which is above it; move what it needs down to the \
                         layer that owns it (or this code up), so that layers depend only downwards",
                        source.rel,
                        path.join("::")
                    )),
                    Some(_) => {}
                    None if path.len() == 1 && ROOT_ITEMS.contains(&first.as_str()) => {}
                    None => problems.push(format!(
                        "src/{}:{number}: `crate::{}` goes through a re-export of lib.rs; name the layer it lives in \
                         (`crate::<layer>::<module>::...`)",
                        source.rel,
                        path.join("::")
                    )),
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} upward or unlayered paths:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn no_import_circle_between_files() {
    assert_no_circle(&sources(), "src/");
}

#[test]
fn no_import_circle_between_files_of_the_cli_and_the_binding() {
    for name in ["cli", "node"] {
        let sources = sources_of(&edge_src(name));
        assert!(sources.len() > 3, "native/{name}/src has {} files: is the path right?", sources.len());
        assert_no_circle(&sources, &format!("native/{name}/src/"));
    }
}

/// Fails naming each import circle between the files of `sources` (of the crate in `dir`).
fn assert_no_circle(sources: &[Source], dir: &str) {
    // Which file each module path is, and which file each item a mod.rs re-exports comes from.
    let files: BTreeMap<Vec<String>, String> = sources.iter().map(|s| (s.module.clone(), s.rel.clone())).collect();
    let mut reexports: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for source in sources.iter().filter(|s| s.rel.ends_with("mod.rs")) {
        // A `pub use` may span lines: read the file's code as statements.
        let code: String = source.lines.iter().map(|(_, l)| l.trim()).collect::<Vec<_>>().join(" ");
        for statement in code.split(';') {
            let Some(rest) = statement.trim_start().strip_prefix("pub use ") else { continue };
            let child = rest.split("::").next().unwrap_or_default().trim().to_owned();
            let mut child_module = source.module.clone();
            child_module.push(child);
            let Some(file) = files.get(&child_module) else { continue };
            let items = rest.find('{').map_or(rest.rsplit("::").next().unwrap_or_default(), |at| &rest[at + 1..]);
            for item in items.split([',', '}', ';']).map(str::trim).filter(|i| !i.is_empty()) {
                let mut key = source.module.clone();
                key.push(item.rsplit("::").next().unwrap().to_owned());
                reexports.insert(key, file.clone());
            }
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in sources.iter().filter(|s| !s.rel.ends_with("mod.rs") && s.rel != "lib.rs" && s.rel != "main.rs") {
        for (_, line) in &source.lines {
            for path in paths_in(line, &source.module, false) {
                // The longest prefix that is a file, else an item re-exported by a mod.rs.
                let target = (1..=path.len())
                    .rev()
                    .find_map(|n| files.get(&path[..n]).filter(|f| !f.ends_with("mod.rs")).cloned())
                    .or_else(|| (2..=path.len()).find_map(|n| reexports.get(&path[..n]).cloned()));
                if let Some(target) = target.filter(|t| *t != source.rel) {
                    edges.entry(source.rel.clone()).or_default().insert(target);
                }
            }
        }
    }
    // Depth-first search for a back edge; each circle is reported once, by its files.
    let mut circles = BTreeSet::new();
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        circles: &mut BTreeSet<Vec<String>>,
    ) {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut circle = stack[at..].to_vec();
            let start = circle.iter().enumerate().min_by_key(|(_, n)| n.as_str()).map(|(i, _)| i).unwrap();
            circle.rotate_left(start);
            circles.insert(circle);
            return;
        }
        if done.contains(node) {
            return;
        }
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, stack, done, circles);
        }
        stack.pop();
        done.insert(node.to_owned());
    }
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        visit(node, &edges, &mut Vec::new(), &mut done, &mut circles);
    }
    let report: Vec<String> = circles.iter().map(|c| format!("  {} -> {}", c.join(" -> "), c[0])).collect();
    assert!(
        circles.is_empty(),
        "{} import circles between files of {dir}; break each by moving the shared type to the file (or layer) that owns it:\n{}",
        circles.len(),
        report.join("\n")
    );
}

#[test]
fn each_layers_mod_rs_names_every_file_of_its_folder() {
    let mut missing = Vec::new();
    for layer in LAYERS {
        let dir = src().join(layer);
        let docs: String = std::fs::read_to_string(dir.join("mod.rs"))
            .unwrap()
            .lines()
            .filter(|l| l.trim_start().starts_with("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".rs") && name != "mod.rs")
            .collect();
        files.sort();
        assert!(!files.is_empty(), "src/{layer}/ has no files: is LAYERS right?");
        missing.extend(files.into_iter().filter(|f| !docs.contains(&format!("`{f}`"))).map(|f| format!("  src/{layer}/{f}")));
    }
    assert!(
        missing.is_empty(),
        "{} files are not named in their layer's mod.rs docs (say in a line what each holds):\n{}",
        missing.len(),
        missing.join("\n")
    );
}

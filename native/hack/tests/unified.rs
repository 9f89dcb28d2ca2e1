//! The addon and the CLI ask the same features of every dependency they share, so `npm start`
//! compiles each of those once (this crate's Cargo.toml says why). Fails naming the package and the
//! features to add to `native/hack/Cargo.toml`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Every package of `package`'s dependency tree (normal and build edges, as built for this machine)
/// with the union of the features it is built with.
fn features_of(package: &str) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--offline", "-p", package, "-e", "normal,build", "--prefix", "none", "-f", "{p} [{f}]"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree -p {package}: {}", String::from_utf8_lossy(&out.stderr));
    let mut packages: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).expect("utf-8").lines() {
        // `syn v2.0.119 [clone-impls,full] (*)`, `serde_derive v1.0.229 (proc-macro) [default]`
        let (Some(open), Some(close)) = (line.find('['), line.rfind(']')) else { continue };
        let mut words = line.split_whitespace();
        let id = format!("{} {}", words.next().unwrap_or_default(), words.next().unwrap_or_default());
        let features = line[open + 1..close].split(',').filter(|f| !f.is_empty()).map(str::to_owned);
        packages.entry(id).or_default().extend(features);
    }
    packages
}

#[test]
fn the_addon_and_the_cli_ask_the_same_features_of_what_they_share() {
    let addon = features_of("chokepoint-node");
    let cli = features_of("chokepoint-cli");
    assert!(addon.contains_key("tokio v1.54.1") || addon.keys().any(|k| k.starts_with("tokio ")), "the walk found {addon:?}");
    let differ: Vec<String> = addon
        .iter()
        .filter_map(|(id, features)| {
            let other = cli.get(id)?;
            let only: Vec<&String> = features.symmetric_difference(other).collect();
            (!only.is_empty() && !id.starts_with("chokepoint-")).then(|| format!("{id}: {only:?}"))
        })
        .collect();
    assert!(differ.is_empty(), "ask these features in native/hack/Cargo.toml, or each is compiled twice by `npm start`: {differ:#?}");
}

//! The figures a `harness = false` bench times itself (one sample per operation, so the p99 is that of
//! single operations): written as `target/bench-samples/<name>.json` = `{ name, baseline?, samples }`,
//! which `scripts/bench.js` reads beside criterion's.

use std::path::Path;

pub fn write(name: &str, baseline: Option<&str>, samples: &[u64]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-samples");
    std::fs::create_dir_all(&dir).expect("create target/bench-samples");
    let mut figure = serde_json::json!({ "name": name, "samples": samples });
    if let Some(baseline) = baseline {
        figure["baseline"] = baseline.into();
    }
    let text = serde_json::to_string(&figure).expect("a figure as JSON");
    std::fs::write(dir.join(format!("{name}.json")), text).expect("write a figure");
}

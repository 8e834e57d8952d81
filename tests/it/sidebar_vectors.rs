//! The sidebar layout parser against the app's shared vectors (read in
//! place) and this project's own 0.6.1 vectors (`test-vectors/`).

use crate::common;

use std::path::PathBuf;

use heeler::base::json::{self, Value};
use heeler::sidebar::config::{self, Diagnostic, Source};

/// Upstream cases whose expectation the spec's 0.6.1 rules overturn, with
/// the reason and the diagnostic the spec wants instead (`None` = valid).
///
/// The upstream file was written for 0.6.0. Every one of its 49 cases was
/// checked against the 0.6.1 rules (`letta`, `machine`, `rules`,
/// byte-order marks, re-parsing diagnosed snapshots): none of them uses
/// `letta`, `machine`, a `rules` key or a U+FEFF, and none asserts a
/// rejection the spec lifted, so this list is empty and all 49 run as
/// written. The re-parse rule is about caching, not parsing; it is tested
/// in `sidebar_refresh.rs`. A case added here must name an upstream case.
const SUPERSEDED: &[(&str, &str, Option<Diagnostic>)] = &[];

fn vectors_dir() -> PathBuf {
    std::env::var_os("HEELER_VECTORS_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/heeler-vectors"),
        PathBuf::from,
    )
}

fn load(path: &PathBuf) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(json::parse(&text).expect("vector file is JSON"))
}

fn source_of(snapshot: &Value) -> (i64, Source) {
    let source = snapshot.get("source").unwrap();
    (
        snapshot.get("generated_at").unwrap().as_i64().unwrap(),
        Source {
            path: source.get("path").unwrap().as_str().unwrap().to_owned(),
            found: source.get("found").unwrap().as_bool().unwrap(),
            mtime_ms: source.get("mtime_ms").unwrap().as_f64(),
        },
    )
}

/// Runs every case of one vector file; returns (valid, invalid) counts.
fn run_file(vectors: &Value, superseded: &[(&str, &str, Option<Diagnostic>)]) -> (usize, usize) {
    let mut counts = (0, 0);
    for (group, expect_valid) in [("valid", true), ("invalid", false)] {
        for case in vectors.get(group).unwrap().as_array().unwrap() {
            let name = case.get("name").unwrap().as_str().unwrap();
            let toml = case.get("toml").unwrap().as_str().unwrap();
            let expected = case.get("snapshot").unwrap();
            let (generated_at, source) = source_of(expected);
            let parsed = config::parse_config_str(toml);
            let actual = config::snapshot(generated_at, &source, &parsed);
            if let Some((_, reason, spec)) = superseded.iter().find(|(n, _, _)| *n == name) {
                println!("superseded: {name:?} ({reason})");
                assert_eq!(parsed.diagnostics, spec.iter().copied().collect::<Vec<_>>());
                continue;
            }
            assert_eq!(
                actual.to_json(),
                expected.to_json(),
                "{group} case {name:?}"
            );
            if expect_valid {
                assert!(parsed.diagnostics.is_empty(), "{name:?}");
                counts.0 += 1;
            } else {
                let error = case.get("error").unwrap().as_str().unwrap();
                let names: Vec<&str> = parsed.diagnostics.iter().map(|d| d.as_str()).collect();
                assert_eq!(names, [error], "{name:?}");
                assert_eq!(parsed.layout, config::Layout::default(), "{name:?}");
                counts.1 += 1;
            }
        }
    }
    counts
}

#[test]
fn upstream_sidebar_vectors() {
    let path = vectors_dir().join("sidebar-layout-v1.json");
    let Some(vectors) = load(&path) else {
        common::skip(&format!("upstream vectors not found at {}", path.display()));
        return;
    };
    let names: Vec<&str> = ["valid", "invalid"]
        .iter()
        .flat_map(|g| vectors.get(g).unwrap().as_array().unwrap())
        .map(|c| c.get("name").unwrap().as_str().unwrap())
        .collect();
    for (name, _, _) in SUPERSEDED {
        assert!(
            names.contains(name),
            "superseded case {name:?} not upstream"
        );
    }
    let (valid, invalid) = run_file(&vectors, SUPERSEDED);
    println!(
        "upstream {}: ran {valid} valid + {invalid} invalid vectors, {} superseded by 0.6.1",
        path.display(),
        SUPERSEDED.len()
    );
    assert_eq!(valid + invalid + SUPERSEDED.len(), names.len());
    assert!(valid + invalid > 0);
}

#[test]
fn own_sidebar_vectors() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("test-vectors/sidebar-layout-v1.json");
    let vectors = load(&path).expect("test-vectors/sidebar-layout-v1.json");
    let (valid, invalid) = run_file(&vectors, &[]);
    println!(
        "own {}: ran {valid} valid + {invalid} invalid vectors",
        path.display()
    );
    assert!(valid + invalid >= 25);
}

#[test]
fn own_vectors_write_byte_order_marks_as_escapes() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("test-vectors/sidebar-layout-v1.json");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        !text.contains('\u{feff}'),
        "a raw U+FEFF in the vector file"
    );
    assert!(text.contains("\\ufeff"));
}

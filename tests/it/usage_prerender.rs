//! Token members rendered ahead by the worker: a query in a rendered zone
//! reads no slots, and its answer equals the one rendered from the slots.
//! A query in another zone is answered from the slots and asks for that zone
//! to be rendered ahead by the next refresh.

use crate::common;
use crate::usage_fixture;

use std::fs;
use std::path::Path;
use std::process::Command;

use heeler::base::json::{self, Value};
use heeler::usage::report::Snapshot;
use usage_fixture::*;

fn heeler(home: &Path, state: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_heeler"))
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("TZ", "UTC")
        .env("HERDR_PLUGIN_STATE_DIR", state)
        .output()
        .unwrap();
    assert!(out.status.success());
    out
}

/// The answer without the members that move between two queries.
fn stable(out: &std::process::Output) -> Value {
    let mut v = json::parse(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("now");
    o.remove("refresh");
    o.remove("generated_at");
    v
}

#[test]
fn prerendered_answers_equal_answers_from_slots() {
    if !heeler::base::tz::zoneinfo_dir()
        .join("Asia/Shanghai")
        .exists()
    {
        common::skip("no zoneinfo for Asia/Shanghai");
        return;
    }
    let dir = temp_dir("usage-prerender");
    let (home, state) = (dir.join("home"), dir.join("state"));
    write_tree(&home);
    heeler(&home, &state, &["usage", "worker"]);
    let snapshot_path = state.join("usage/snapshot-v1.json");
    let text = fs::read_to_string(&snapshot_path).unwrap();
    assert!(text.contains(r#""rendered":[{"tz":"UTC""#));
    let query = |tz: &str| {
        heeler(
            &home,
            &state,
            &["usage", "query", "--refresh", "never", "--tz", tz],
        )
    };
    let ahead = stable(&query("UTC"));
    assert!(!state.join("usage/zones-wanted").exists());
    // The same snapshot without members rendered ahead: read from slots.
    let plain = Snapshot::parse(&text).unwrap().to_json();
    fs::write(&snapshot_path, plain).unwrap();
    let from_slots = stable(&query("UTC"));
    assert_eq!(ahead, from_slots);
    assert!(ahead.get("daily").unwrap().as_array().unwrap().len() == 30);
    // Another zone is remembered and rendered ahead by the next refresh.
    let shanghai_slots = stable(&query("Asia/Shanghai"));
    assert_eq!(
        fs::read_to_string(state.join("usage/zones-wanted")).unwrap(),
        "UTC\nAsia/Shanghai\n"
    );
    heeler(&home, &state, &["usage", "worker"]);
    let text = fs::read_to_string(&snapshot_path).unwrap();
    assert!(text.contains(r#"{"tz":"Asia/Shanghai""#));
    assert_eq!(stable(&query("Asia/Shanghai")), shanghai_slots);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_query_reads_the_slots_of_the_aggregate_state_the_snapshot_names() {
    let dir = temp_dir("usage-state-slots");
    let (home, state) = (dir.join("home"), dir.join("state"));
    write_tree(&home);
    heeler(&home, &state, &["usage", "worker"]);
    let snapshot_path = state.join("usage/snapshot-v1.json");
    // Without the members rendered ahead, the answer comes from the slots.
    let text = fs::read_to_string(&snapshot_path).unwrap();
    let plain = Snapshot::parse(&text).unwrap();
    assert!(plain.slots.is_empty(), "the snapshot file carries no slots");
    fs::write(&snapshot_path, plain.to_json()).unwrap();
    let query = || {
        let out = heeler(
            &home,
            &state,
            &["usage", "query", "--refresh", "never", "--tz", "UTC"],
        );
        json::parse(String::from_utf8_lossy(&out.stdout).trim()).unwrap()
    };
    let answer = query();
    let requests = |v: &Value| {
        v.get("windows")
            .and_then(|w| w.get("d30"))
            .and_then(|w| w.get("all"))
            .and_then(|t| t.get("requests"))
            .and_then(Value::as_i64)
            .unwrap()
    };
    assert!(requests(&answer) > 0);
    assert_eq!(answer.get("errors").unwrap().as_array().unwrap().len(), 0);
    // A snapshot naming another aggregate state (a refresh finished in
    // between) still answers from the state's slots, read once more.
    let other = Snapshot {
        aggregate: plain.aggregate ^ 1,
        ..plain.clone()
    };
    fs::write(&snapshot_path, other.to_json()).unwrap();
    assert_eq!(requests(&query()), requests(&answer));
    // Without the aggregate state there are no slots: reported, not zeros.
    for name in ["aggregate-v1.bin", "aggregate-v1.journal"] {
        let _ = fs::remove_file(state.join("usage").join(name));
    }
    fs::write(&snapshot_path, plain.to_json()).unwrap();
    let missing = query();
    let codes: Vec<&str> = missing
        .get("errors")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.get("code").and_then(Value::as_str))
        .collect();
    assert_eq!(codes, ["snapshot_unreadable"]);
    assert_eq!(requests(&missing), 0);
    fs::remove_dir_all(&dir).unwrap();
}

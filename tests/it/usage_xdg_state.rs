//! `heeler usage` finds its state where herdr's rule puts it when herdr did
//! not say: `$XDG_STATE_HOME/herdr/plugins/heeler/usage/`, even with an
//! empty `HOME` — never under `/`.

use crate::usage_fixture;

use std::fs;
use std::path::Path;
use std::process::Command;

use heeler::base::json::{self, Value};
use usage_fixture::*;

fn query(xdg_state: &Path, args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_heeler"))
        .args(["usage", "query"])
        .args(args)
        .env_clear()
        .env("HOME", "")
        .env("XDG_STATE_HOME", xdg_state)
        .env("PATH", "/usr/bin:/bin")
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "exactly one document");
    json::parse(text.trim()).unwrap()
}

#[test]
fn an_empty_home_with_xdg_state_home_uses_the_xdg_state_dir() {
    let dir = temp_dir("usage-xdg-state");
    let (home, xdg_state) = (dir.join("home"), dir.join("xdg-state"));
    let usage = xdg_state.join("herdr/plugins/heeler/usage");
    let root_state = Path::new("/.local/state/herdr");
    let root_state_existed = root_state.exists();
    write_tree(&home);
    // A worker told the plugin state dir explicitly fills the directory the
    // XDG rule names.
    let out = Command::new(env!("CARGO_BIN_EXE_heeler"))
        .args(["usage", "worker"])
        .env_clear()
        .env("HOME", &home)
        .env(
            "HERDR_PLUGIN_STATE_DIR",
            xdg_state.join("herdr/plugins/heeler"),
        )
        .env("PATH", "/usr/bin:/bin")
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snapshot =
        json::parse(&fs::read_to_string(usage.join("snapshot-v1.json")).unwrap()).unwrap();

    // The query finds that snapshot without HERDR_PLUGIN_STATE_DIR or HOME.
    let answer = query(&xdg_state, &["--refresh", "never"]);
    assert_eq!(answer.get("errors"), Some(&Value::Array(Vec::new())));
    assert_eq!(answer.get("generated_at"), snapshot.get("generated_at"));
    assert!(answer.get("generated_at").unwrap().as_i64().is_some());

    // What the query writes lands there too.
    query(&xdg_state, &["--refresh", "never", "--claude-limits", "on"]);
    assert!(usage.join("claude-limits.wanted").exists());
    if !root_state_existed {
        assert!(!root_state.exists(), "state written under /.local");
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_options_and_missing_values_still_get_one_v1_document() {
    let dir = temp_dir("usage-unknown-option");
    let xdg_state = dir.join("xdg-state");
    // An option a newer app sends, with its value, then a known one, then
    // a known one missing its value; no snapshot exists yet.
    let answer = query(
        &xdg_state,
        &[
            "--new-flag",
            "7",
            "--refresh",
            "never",
            "--zz-switch",
            "--tz",
        ],
    );
    assert_eq!(answer.get("v").and_then(Value::as_i64), Some(1));
    let codes: Vec<&str> = answer
        .get("errors")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .filter_map(|e| e.get("code").and_then(Value::as_str))
        .collect();
    assert_eq!(codes, ["bad_tz", "unknown_option", "unknown_option"]);
    // `--refresh never` was honoured: no worker, so nothing was written.
    assert!(
        !xdg_state
            .join("herdr/plugins/heeler/usage/worker.lock")
            .exists()
    );
    // Before any snapshot the coverage has its full shape.
    let coverage = answer.get("coverage").unwrap();
    assert_eq!(coverage.get("partial"), Some(&Value::Bool(true)));
    for agent in ["claude", "codex"] {
        let a = coverage.get(agent).unwrap();
        for key in [
            "roots",
            "files_seen",
            "files_in_window",
            "files_unreadable",
            "dirs_unreadable",
            "lines_malformed",
            "lines_oversized",
            "duplicates_dropped",
            "earliest",
            "latest",
        ] {
            assert!(a.get(key).is_some(), "{agent}.{key}");
        }
    }
}

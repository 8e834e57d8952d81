//! Limit probes against stand-in `codex` and `claude` executables (Python
//! scripts written by the tests) that speak the documented protocols:
//! Codex app-server JSON-RPC lines and Claude Code's stream-json control
//! requests. Also the query and worker commands end to end.

use crate::common;
use crate::usage_fixture;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use heeler::base::json::{self, Value};
use heeler::usage::limits::{ProbeEnv, probe_claude, probe_codex};
use usage_fixture::*;

fn python() -> bool {
    Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

const CODEX: &str = r#"#!/usr/bin/env python3
import json, sys, time
MODE = "__MODE__"
if sys.argv[1:] != ["app-server"]:
    sys.exit(2)
if MODE == "exit":
    sys.exit(1)
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if MODE == "hang":
        time.sleep(60)
    if method == "initialize":
        assert msg["params"]["clientInfo"]["name"] == "heeler"
        print(json.dumps({"id": msg["id"], "result": {"userAgent": "codex_cli_rs/0.160.1"}}), flush=True)
    elif method == "initialized":
        print(json.dumps({"method": "account/rateLimits/updated", "params": {}}), flush=True)
    elif method == "account/rateLimits/read":
        if MODE == "signed_out":
            print(json.dumps({"id": msg["id"], "error": {"code": -32600, "message": "codex account authentication required; run codex login"}}), flush=True)
            continue
        spark = {"limitId": "codex_spark", "primary": {"usedPercent": 99, "windowDurationMins": 300, "resetsAt": 1}}
        codex = {"limitId": "codex", "limitName": None, "planType": "pro",
                 "primary": {"usedPercent": 12, "windowDurationMins": 300, "resetsAt": 1795960800},
                 "secondary": {"usedPercent": 33, "windowDurationMins": 10080, "resetsAt": 1796400000},
                 "credits": {"hasCredits": True, "unlimited": False, "balance": "4.20"}}
        print(json.dumps({"id": msg["id"], "result": {"rateLimits": spark, "rateLimitsByLimitId": {"codex": codex, "codex_spark": spark}}}), flush=True)
"#;

const CLAUDE: &str = r#"#!/usr/bin/env python3
import json, os, sys
MODE = "__MODE__"
need = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--no-session-persistence"]
if any(a not in sys.argv for a in need) or "ANTHROPIC_API_KEY" in os.environ:
    sys.exit(2)
print(json.dumps({"type": "system", "subtype": "init", "session_id": "x"}), flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") != "control_request":
        continue
    rid = msg["request_id"]
    sub = msg["request"]["subtype"]
    if sub == "initialize":
        print(json.dumps({"type": "control_response", "response": {"subtype": "success", "request_id": rid, "response": {"commands": []}}}), flush=True)
    elif sub == "get_usage":
        assert msg["request"].get("skip_behaviors") is True
        if MODE == "unsupported":
            out = {"subtype": "error", "request_id": rid, "error": "Unsupported control request subtype: get_usage"}
        elif MODE == "signed_out":
            out = {"subtype": "error", "request_id": rid, "error": "Not logged in. Please run /login"}
        elif MODE == "no_plan":
            out = {"subtype": "success", "request_id": rid, "response": {"subscription_type": None, "rate_limits_available": False, "rate_limits": None}}
        else:
            out = {"subtype": "success", "request_id": rid, "response": {
                "session": {"total_cost_usd": 0}, "subscription_type": "max", "rate_limits_available": True,
                "rate_limits": {
                    "five_hour": {"utilization": 25, "resets_at": "2026-11-29T15:00:00.228639+00:00"},
                    "seven_day": {"utilization": 40.5, "resets_at": "2026-12-04T07:20:00+00:00"},
                    "seven_day_opus": None,
                    "model_scoped": [{"display_name": "Fable", "utilization": 37, "resets_at": "2026-12-04T07:20:00+00:00"}],
                    "extra_usage": {"is_enabled": False, "monthly_limit": None, "used_credits": None, "utilization": None, "currency": None}},
                "behaviors": None}}
        print(json.dumps({"type": "control_response", "response": out}), flush=True)
"#;

fn stand_in(dir: &Path, name: &str, script: &str, mode: &str) -> ProbeEnv {
    let bin = dir.join(format!("bin-{name}-{mode}"));
    fs::create_dir_all(&bin).unwrap();
    let path = bin.join(name);
    crate::support::write_executable(&path, script.replace("__MODE__", mode)).unwrap();
    let system_path = std::env::var("PATH").unwrap_or_default();
    ProbeEnv {
        path: Some(format!("{}:{system_path}", bin.display())),
        home: Some(dir.to_path_buf()),
    }
}

fn field<'a>(o: &'a heeler::base::json::Object, k: &str) -> &'a Value {
    o.get(k).unwrap_or(&Value::Null)
}

const T: Duration = Duration::from_secs(10);

#[test]
fn codex_app_server_probe() {
    if !python() {
        common::skip("python3 is not installed");
        return;
    }
    let dir = temp_dir("limits-codex");
    let ok = probe_codex(&stand_in(&dir, "codex", CODEX, "ok"), NOW, T);
    assert_eq!(field(&ok, "state").as_str(), Some("ok"), "{ok:?}");
    assert_eq!(field(&ok, "source").as_str(), Some("app_server"));
    assert_eq!(field(&ok, "plan").as_str(), Some("pro"));
    let windows = field(&ok, "windows").as_array().unwrap();
    assert_eq!(windows.len(), 2);
    assert_eq!(
        windows[1].get("window_minutes").unwrap().as_i64(),
        Some(10080)
    );
    assert_eq!(windows[0].get("used_percent").unwrap().as_f64(), Some(12.0));
    assert_eq!(
        field(&ok, "credits").get("balance").unwrap().as_str(),
        Some("4.20")
    );

    let out = probe_codex(&stand_in(&dir, "codex", CODEX, "signed_out"), NOW, T);
    assert_eq!(field(&out, "state").as_str(), Some("auth_required"));
    let out = probe_codex(&stand_in(&dir, "codex", CODEX, "exit"), NOW, T);
    assert_eq!(field(&out, "state").as_str(), Some("unsupported"));
    let started = Instant::now();
    let out = probe_codex(
        &stand_in(&dir, "codex", CODEX, "hang"),
        NOW,
        Duration::from_millis(800),
    );
    assert_eq!(field(&out, "state").as_str(), Some("error"));
    assert!(started.elapsed() < Duration::from_secs(5));
    let missing = ProbeEnv {
        path: Some(dir.join("nowhere").display().to_string()),
        home: None,
    };
    let out = probe_codex(&missing, NOW, T);
    assert_eq!(field(&out, "state").as_str(), Some("not_installed"));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn claude_get_usage_probe() {
    if !python() {
        common::skip("python3 is not installed");
        return;
    }
    let dir = temp_dir("limits-claude");
    let ok = probe_claude(&stand_in(&dir, "claude", CLAUDE, "ok"), NOW, T);
    assert_eq!(field(&ok, "state").as_str(), Some("ok"), "{ok:?}");
    assert_eq!(field(&ok, "plan").as_str(), Some("max"));
    let windows = field(&ok, "windows").as_array().unwrap();
    let ids: Vec<&str> = windows
        .iter()
        .map(|w| w.get("id").unwrap().as_str().unwrap())
        .collect();
    assert_eq!(ids, ["five_hour", "seven_day", "model:Fable"]);
    assert_eq!(
        windows[0].get("resets_at").unwrap().as_i64(),
        heeler::usage::time::parse_timestamp("2026-11-29T15:00:00Z")
    );
    assert_eq!(windows[1].get("used_percent").unwrap().as_f64(), Some(40.5));
    for (mode, state) in [
        ("unsupported", "unsupported"),
        ("signed_out", "auth_required"),
        ("no_plan", "no_plan"),
    ] {
        let out = probe_claude(&stand_in(&dir, "claude", CLAUDE, mode), NOW, T);
        assert_eq!(field(&out, "state").as_str(), Some(state), "{mode}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

fn heeler_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_heeler"))
}

fn query(home: &Path, state: &Path, args: &[&str]) -> Value {
    let out = Command::new(heeler_bin())
        .args(["usage", "query"])
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("HERDR_PLUGIN_STATE_DIR", state)
        .env("PATH", home.join("bin"))
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "exactly one document");
    json::parse(text.trim()).unwrap()
}

#[test]
fn query_and_worker_end_to_end() {
    if !python() {
        common::skip("python3 is not installed");
        return;
    }
    let home = temp_dir("usage-e2e");
    let state = home.join("state");
    write_tree(&home);
    let env = stand_in(&home, "codex", CODEX, "ok");
    // The runtime record carries the PATH with `codex` (the SSH session's
    // own PATH does not have it).
    let runtime = heeler::usage::runtime::record_value(
        Some(&heeler_bin()),
        &|k| match k {
            "PATH" => env.path.clone(),
            "HOME" => Some(home.display().to_string()),
            "HERDR_SOCKET_PATH" => Some("/tmp/herdr.sock".into()),
            _ => None,
        },
        NOW,
    );
    fs::create_dir_all(state.join("usage")).unwrap();
    fs::write(state.join("usage/runtime-v1.json"), runtime.to_json()).unwrap();

    // Nothing cached and refresh never: an empty, stale answer.
    let first = query(
        &home,
        &state,
        &["--refresh", "never", "--tz", "Mars/Olympus"],
    );
    assert_eq!(first.get("v").unwrap().as_i64(), Some(1));
    assert_eq!(
        first.get("refresh").unwrap().get("state").unwrap().as_str(),
        Some("stale")
    );
    assert_eq!(first.get("generated_at"), Some(&Value::Null));
    let errors = first.get("errors").unwrap().as_array().unwrap();
    assert_eq!(errors[0].get("code").unwrap().as_str(), Some("unknown_tz"));
    assert_eq!(
        first.get("runtime").unwrap().get("state").unwrap().as_str(),
        Some("ok")
    );

    // Auto: starts the detached worker and says so.
    let second = query(&home, &state, &["--claude-limits", "off"]);
    assert_eq!(
        second
            .get("refresh")
            .unwrap()
            .get("state")
            .unwrap()
            .as_str(),
        Some("running")
    );
    assert_eq!(
        second
            .get("refresh")
            .unwrap()
            .get("retry_after_ms")
            .unwrap()
            .as_i64(),
        Some(2000)
    );
    // The app re-queries until the refresh is done.
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        std::thread::sleep(Duration::from_millis(200));
        let answer = query(&home, &state, &["--refresh", "never"]);
        let st = answer
            .get("refresh")
            .unwrap()
            .get("state")
            .unwrap()
            .as_str()
            .map(str::to_owned);
        if st.as_deref() == Some("idle") {
            break answer;
        }
        assert!(Instant::now() < deadline, "worker did not finish: {st:?}");
    };
    assert!(done.get("generated_at").unwrap().as_i64().is_some());
    let claude = done
        .get("coverage")
        .unwrap()
        .get("claude")
        .unwrap()
        .get("files_seen")
        .unwrap()
        .as_i64();
    assert_eq!(claude, Some(4));
    let codex_limits = done.get("limits").unwrap().get("codex").unwrap();
    assert_eq!(
        codex_limits.get("source").unwrap().as_str(),
        Some("app_server")
    );
    assert_eq!(
        done.get("limits")
            .unwrap()
            .get("claude")
            .unwrap()
            .get("state")
            .unwrap()
            .as_str(),
        Some("disabled")
    );
    // A second worker run while nothing changed reuses every file.
    let out = Command::new(heeler_bin())
        .args(["usage", "worker"])
        .env("HOME", &home)
        .env("HERDR_PLUGIN_STATE_DIR", &state)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in [
        "snapshot-v1.json",
        "index-v1.bin",
        "status-v1.json",
        "limits-codex.json",
    ] {
        let mode = fs::metadata(state.join("usage").join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
    // Claude limits on: remembered for the worker, pending until probed.
    let on = query(
        &home,
        &state,
        &["--claude-limits", "on", "--refresh", "never"],
    );
    let claude_state = on
        .get("limits")
        .unwrap()
        .get("claude")
        .unwrap()
        .get("state")
        .unwrap()
        .as_str();
    assert!(matches!(
        claude_state,
        Some("pending" | "needs_herdr_session")
    ));
    assert!(state.join("usage/claude-limits.wanted").exists());
    fs::remove_dir_all(&home).unwrap();
}

#[test]
fn runtime_record_is_written_once_per_change() {
    let dir = temp_dir("usage-runtime");
    heeler::usage::runtime::record_runtime(&dir).unwrap();
    let path = dir.join("usage/runtime-v1.json");
    let record = json::parse(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(record.get("v").unwrap().as_i64(), Some(1));
    assert!(record.get("binary").unwrap().as_str().is_some());
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let state = heeler::usage::runtime::state_of(Some(&record));
    assert_eq!(state.get("state").unwrap().as_str(), Some("ok"));
    assert_eq!(
        heeler::usage::runtime::state_of(None)
            .get("state")
            .unwrap()
            .as_str(),
        Some("missing")
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// `heeler usage --limits` at a terminal: both probes run now (stand-ins
/// on the person's PATH), their readings are stored where the app's query
/// finds them and shown, and the app's Claude limits toggle is untouched.
#[test]
fn usage_limits_reads_both_agents_now() {
    if !python() {
        common::skip("python3 is not installed");
        return;
    }
    let home = temp_dir("usage-limits-now");
    let state = home.join("state");
    let codex = stand_in(&home, "codex", CODEX, "ok");
    let claude = stand_in(&home, "claude", CLAUDE, "ok");
    let path = format!(
        "{}:{}",
        home.join("bin-claude-ok").display(),
        codex.path.unwrap()
    );
    drop(claude);
    let out = Command::new(heeler_bin())
        .args(["usage", "--limits"])
        .env_clear()
        .env("HOME", &home)
        .env("HERDR_PLUGIN_STATE_DIR", &state)
        .env("PATH", path)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    let usage = heeler::usage::paths::UsageDir(state.join("usage"));
    for _ in 0..200 {
        if !heeler::usage::worker::is_running(&usage) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let stored = |agent: &str| {
        json::parse(&fs::read_to_string(state.join(format!("usage/limits-{agent}.json"))).unwrap())
            .unwrap()
    };
    let codex = stored("codex");
    assert_eq!(
        codex.get("state").unwrap().as_str(),
        Some("ok"),
        "{codex:?}"
    );
    // Each limit window is a bar row: its label, the bar, its use.
    let row = |label: &str, used: &str| {
        text.lines()
            .any(|l| l.starts_with(label) && l.contains(&format!("  {used} used")))
    };
    assert!(row("Codex 5h ", "12%"), "{text}");
    // macOS reads Claude's limits through herdr's session (no herdr here).
    if !cfg!(target_os = "macos") {
        let claude = stored("claude");
        assert_eq!(
            claude.get("state").unwrap().as_str(),
            Some("ok"),
            "{claude:?}"
        );
        assert!(row("Claude Code 5h ", "25%"), "{text}");
    }
    assert!(!state.join("usage/claude-limits.wanted").exists());
    fs::remove_dir_all(&home).unwrap();
}

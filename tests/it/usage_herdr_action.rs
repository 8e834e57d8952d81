//! The Claude limits trigger through herdr's session, against a stand-in
//! `herdr` executable (a shell script) that records how it was called and
//! answers like `herdr plugin action invoke` (one JSON line, exit 0; error
//! JSON on stderr, exit 1). Also end to end: a query on a Host whose Claude
//! sign-in needs herdr's session starts the worker, and the worker (not the
//! query) triggers the action once per back-off.

use crate::usage_fixture;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use heeler::base::json;
use heeler::usage::limits::herdr_action::{ACTION_ID, TriggerError, invoke};
use usage_fixture::*;

/// A stand-in herdr: appends "<args>|<HERDR_SOCKET_PATH>" to `calls`.
fn stand_in(dir: &Path, mode: &str) -> (PathBuf, PathBuf) {
    let calls = dir.join("calls.txt");
    let script = dir.join(format!("herdr-{mode}"));
    let body = match mode {
        "ok" => {
            r#"echo '{"id":"cli:plugin:action:invoke","result":{"type":"plugin_log","log":{"log_id":"plugin-log-1","plugin_id":"heeler","action_id":"usage-claude-limits","state":"running"}}}'"#
        }
        "disabled" => {
            r#"echo '{"error":{"code":"plugin_disabled","message":"plugin heeler is disabled"},"id":"cli:plugin:action:invoke"}' >&2; exit 1"#
        }
        // The script's child keeps the pipes open after the script is gone;
        // its pid is in `forks.pid`.
        "forks" => "sleep 30 &\necho $! > \"$(dirname \"$0\")/forks.pid\"\necho '{}'",
        _ => "exec sleep 30",
    };
    crate::support::write_executable(
        &script,
        format!(
            "#!/bin/sh\necho \"$*|$HERDR_SOCKET_PATH\" >> '{}'\n{body}\n",
            calls.display()
        ),
    )
    .unwrap();
    (script, calls)
}

fn calls(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn invoke_runs_the_action_through_the_recorded_herdr() {
    let dir = temp_dir("usage-herdr-invoke");
    let socket = dir.join("herdr.sock");
    let (ok, log) = stand_in(&dir, "ok");
    invoke(&ok, Some(&socket), Duration::from_secs(10)).unwrap();
    assert_eq!(
        calls(&log),
        vec![format!(
            "plugin action invoke {ACTION_ID}|{}",
            socket.display()
        )]
    );
    let (disabled, _) = stand_in(&dir, "disabled");
    match invoke(&disabled, None, Duration::from_secs(10)) {
        Err(TriggerError::Refused(text)) => {
            assert!(
                text.contains("exit 1") && text.contains("plugin_disabled"),
                "{text}"
            )
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let (hang, _) = stand_in(&dir, "hang");
    let started = Instant::now();
    assert!(matches!(
        invoke(&hang, None, Duration::from_millis(300)),
        Err(TriggerError::TimedOut)
    ));
    assert!(started.elapsed() < Duration::from_secs(20));
    let (forks, _) = stand_in(&dir, "forks");
    let started = Instant::now();
    let forked = invoke(&forks, None, Duration::from_secs(10));
    let elapsed = started.elapsed();
    if let Ok(pid) = fs::read_to_string(dir.join("forks.pid")) {
        let _ = Command::new("kill").arg(pid.trim()).status();
    }
    assert!(forked.is_ok(), "{forked:?}");
    assert!(
        elapsed < Duration::from_secs(5),
        "waited for the script's child"
    );
    assert!(matches!(
        invoke(&dir.join("missing"), None, Duration::from_secs(1)),
        Err(TriggerError::Spawn(_))
    ));
    fs::remove_dir_all(&dir).unwrap();
}

fn heeler(home: &Path, state: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_heeler"))
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("HERDR_PLUGIN_STATE_DIR", state)
        .env("HEELER_USAGE_CLAUDE_VIA_HERDR", "1")
        .output()
        .unwrap()
}

#[test]
fn the_worker_triggers_the_action_once_per_back_off() {
    let dir = temp_dir("usage-herdr-worker");
    let home = dir.join("home");
    let state = dir.join("state");
    fs::create_dir_all(state.join("usage")).unwrap();
    write_tree(&home);
    let socket = dir.join("herdr.sock");
    let (herdr, log) = stand_in(&dir, "ok");
    let record = format!(
        r#"{{"v":1,"recorded_at":1,"binary":null,"herdr_bin":{},"herdr_socket":{},"env":{{"HOME":{}}}}}"#,
        json::quote(&herdr.to_string_lossy()),
        json::quote(&socket.to_string_lossy()),
        json::quote(&home.to_string_lossy())
    );
    fs::write(state.join("usage/runtime-v1.json"), record).unwrap();

    // The query answers at once (needs_herdr_session) and starts the worker.
    let out = heeler(&home, &state, &["usage", "query", "--claude-limits", "on"]);
    let answer = json::parse(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let claude = answer.get("limits").unwrap().get("claude").unwrap();
    assert_eq!(
        claude.get("state").unwrap().as_str(),
        Some("needs_herdr_session")
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while calls(&log).is_empty() || !state.join("usage/claude-limits-trigger.json").exists() {
        assert!(Instant::now() < deadline, "the worker never triggered");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Wait for that worker to finish.
    while heeler::usage::worker::is_running(&heeler::usage::paths::UsageDir(state.join("usage"))) {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        calls(&log),
        vec![format!(
            "plugin action invoke {ACTION_ID}|{}",
            socket.display()
        )]
    );
    let trigger =
        json::parse(&fs::read_to_string(state.join("usage/claude-limits-trigger.json")).unwrap())
            .unwrap();
    assert_eq!(trigger.get("ok"), Some(&json::Value::Bool(true)));
    // Within the back-off another worker run does not trigger again.
    let out = heeler(&home, &state, &["usage", "worker"]);
    assert!(out.status.success());
    assert_eq!(calls(&log).len(), 1);
    // Without the toggle nothing is triggered.
    fs::remove_file(state.join("usage/claude-limits-trigger.json")).unwrap();
    fs::remove_file(state.join("usage/claude-limits.wanted")).unwrap();
    let out = heeler(&home, &state, &["usage", "worker"]);
    assert!(out.status.success());
    assert_eq!(calls(&log).len(), 1);
    fs::remove_dir_all(&dir).unwrap();
}

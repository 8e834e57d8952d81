//! `heeler pair-action` (and `heeler usage live-action`, the same opener)
//! against a loopback stand-in for herdr's socket, and
//! through a stand-in herdr CLI when no socket answers.

use crate::scratch;
use crate::support;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::process::Command;

fn scratch(name: &str) -> scratch::TempDir {
    scratch::TempDir::new(&format!("heeler-action-{name}"))
}

/// Whether process `pid` is still running 2 s from now (a SIGKILL takes
/// effect asynchronously; a zombie counts as gone).
fn outlives(pid: &str) -> bool {
    let running =
        || fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "));
    !pid.is_empty()
        && (0..100).all(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            running()
        })
}

fn heeler() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_heeler"));
    command
        .arg("pair-action")
        .env_remove("HERDR_SOCKET_PATH")
        .env_remove("HERDR_BIN_PATH")
        .env_remove("HERDR_PLUGIN_ID");
    command
}

/// Answers one request with `answer` and returns the request line.
fn stand_in(listener: UnixListener, answer: &'static str) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        (&stream).write_all(answer.as_bytes()).unwrap();
        line
    })
}

#[test]
fn opens_the_popup_through_the_socket() {
    let dir = scratch("socket");
    let path = dir.join("herdr.sock");
    let server = stand_in(
        UnixListener::bind(&path).unwrap(),
        "{\"id\":\"heeler:pair-action\",\"result\":{\"type\":\"ok\"}}\n",
    );
    let output = heeler()
        .env("HERDR_SOCKET_PATH", &path)
        .env("HERDR_PLUGIN_ID", "heeler-dev")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let request = server.join().unwrap();
    assert_eq!(
        request,
        "{\"id\":\"heeler:pair-action\",\"method\":\"plugin.pane.open\",\"params\":{\"plugin_id\":\"heeler-dev\",\"entrypoint\":\"pair\",\"env\":{}}}\n"
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// Answers one request per connection, in order, and returns the request
/// lines.
fn stand_in_for(
    listener: UnixListener,
    answers: &'static [&'static str],
) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        answers
            .iter()
            .map(|answer| {
                let (stream, _) = listener.accept().unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                (&stream).write_all(answer.as_bytes()).unwrap();
                line
            })
            .collect()
    })
}

#[test]
fn a_second_pair_while_a_popup_is_open_tells_the_user() {
    let dir = scratch("refused");
    let path = dir.join("herdr.sock");
    // herdr's answer to a second open (reference: herdr popups are a
    // session-modal singleton), then the notification's answer.
    let server = stand_in_for(
        UnixListener::bind(&path).unwrap(),
        &[
            "{\"id\":\"heeler:pair-action\",\"error\":{\"code\":\"plugin_pane_open_failed\",\"message\":\"popup already open\"}}\n",
            "{\"id\":\"heeler:pair-action:notice\",\"result\":{\"type\":\"ok\"}}\n",
        ],
    );
    let output = heeler().env("HERDR_SOCKET_PATH", &path).output().unwrap();
    let requests = server.join().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "herdr could not open the pairing popup: plugin_pane_open_failed: popup already open\n"
    );
    let notice = heeler::base::json::parse(requests[1].trim_end()).unwrap();
    assert_eq!(
        notice.get("method").and_then(|m| m.as_str()),
        Some("notification.show")
    );
    let params = notice.get("params").unwrap();
    assert_eq!(
        params.get("title").and_then(|t| t.as_str()),
        Some("Pairing is already open")
    );
    assert!(
        params
            .get("body")
            .and_then(|b| b.as_str())
            .is_some_and(|b| b.contains("press q there to close it")),
        "{notice:?}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn through_the_cli_a_second_pair_is_told_too() {
    let dir = scratch("cli-open");
    let calls = dir.join("calls");
    let herdr = dir.join("herdr");
    crate::support::write_executable(
        &herdr,
        format!(
            "#!/bin/sh\nprintf '%s|' \"$@\" >> '{calls}'\necho >> '{calls}'\nif [ \"$1\" = plugin ]; then echo 'error: plugin_pane_open_failed: popup already open' >&2; exit 1; fi\n",
            calls = calls.display()
        ),
    )
    .unwrap();
    let output = heeler().env("HERDR_BIN_PATH", &herdr).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let calls = fs::read_to_string(&calls).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(lines.len(), 2, "{calls}");
    assert!(
        lines[1].starts_with(
            "notification|show|Pairing is already open|--body|A popup is already open"
        ),
        "{calls}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn falls_back_to_the_cli_and_exits_with_its_status() {
    let dir = scratch("cli");
    let args_file = dir.join("args");
    let herdr = dir.join("herdr");
    crate::support::write_executable(
        &herdr,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nexit 7\n",
            args_file.display()
        ),
    )
    .unwrap();
    let output = heeler()
        .env("HERDR_SOCKET_PATH", dir.join("nobody-listens.sock"))
        .env("HERDR_BIN_PATH", &herdr)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(7));
    assert_eq!(
        fs::read_to_string(&args_file).unwrap(),
        "plugin\npane\nopen\n--plugin\nheeler\n--entrypoint\npair\n"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_hanging_herdr_cli_is_killed_at_its_deadline() {
    let dir = scratch("hang");
    let herdr = dir.join("herdr");
    let pid_file = dir.join("sleep.pid");
    crate::support::write_executable(
        &herdr,
        format!(
            "#!/bin/sh\nsleep 120 &\necho $! > '{}'\nwait\n",
            pid_file.display()
        ),
    )
    .unwrap();
    let (cap, ms) = support::short_deadlines();
    let output = heeler()
        .env("HERDR_SOCKET_PATH", dir.join("nobody-listens.sock"))
        .env("HERDR_BIN_PATH", &herdr)
        .env(cap, ms)
        .output()
        .unwrap();
    let pid = fs::read_to_string(&pid_file).unwrap_or_default();
    let alive = outlives(pid.trim());
    if alive {
        let _ = Command::new("kill").arg(pid.trim()).status();
    }
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "herdr plugin pane open timed out after 1 s\n"
    );
    assert!(!alive, "the herdr process group outlived the action");
}

#[test]
fn a_trickling_socket_is_cut_off_at_one_overall_deadline() {
    let dir = scratch("trickle");
    let path = dir.join("herdr.sock");
    let listener = UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        for _ in 0..300 {
            if stream.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    });
    let (cap, ms) = support::short_deadlines();
    let output = heeler()
        .env("HERDR_SOCKET_PATH", &path)
        .env(cap, ms)
        .output()
        .unwrap();
    fs::remove_dir_all(&dir).unwrap();
    // Read by read, the socket ends its line only by closing after 60 s
    // (no JSON then): an I/O error is the one overall deadline.
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).starts_with("herdr socket: "),
        "{output:?}"
    );
}

#[test]
fn a_missing_herdr_cli_says_so() {
    let output = heeler()
        .env("HERDR_BIN_PATH", "/nonexistent/herdr")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).starts_with("failed to run herdr: "),
        "{output:?}"
    );
}

/// `heeler usage live-action`, herdr's `heeler.usage`: the same opener for
/// the `usage` pane, its refusals told as the usage screen's.
fn usage_action() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_heeler"));
    command
        .args(["usage", "live-action"])
        .env_remove("HERDR_SOCKET_PATH")
        .env_remove("HERDR_BIN_PATH")
        .env_remove("HERDR_PLUGIN_ID");
    command
}

#[test]
fn the_usage_action_opens_the_usage_popup_and_tells_a_refusal() {
    let dir = scratch("usage-socket");
    let path = dir.join("herdr.sock");
    let server = stand_in(
        UnixListener::bind(&path).unwrap(),
        "{\"id\":\"heeler:usage-action\",\"result\":{\"type\":\"ok\"}}\n",
    );
    let output = usage_action()
        .env("HERDR_SOCKET_PATH", &path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        server.join().unwrap(),
        "{\"id\":\"heeler:usage-action\",\"method\":\"plugin.pane.open\",\"params\":{\"plugin_id\":\"heeler\",\"entrypoint\":\"usage\",\"env\":{}}}\n"
    );
    fs::remove_file(&path).unwrap();

    let server = stand_in_for(
        UnixListener::bind(&path).unwrap(),
        &[
            "{\"id\":\"heeler:usage-action\",\"error\":{\"code\":\"plugin_pane_open_failed\",\"message\":\"popup already open\"}}\n",
            "{\"id\":\"heeler:usage-action:notice\",\"result\":{\"type\":\"ok\"}}\n",
        ],
    );
    let output = usage_action()
        .env("HERDR_SOCKET_PATH", &path)
        .output()
        .unwrap();
    let requests = server.join().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "herdr could not open the usage popup: plugin_pane_open_failed: popup already open\n"
    );
    assert_eq!(
        requests[1],
        "{\"id\":\"heeler:usage-action:notice\",\"method\":\"notification.show\",\"params\":{\"title\":\"Usage is already open\",\"body\":\"A popup is already open in this herdr session (maybe the usage screen's own): press q there to close it, then run Usage again.\"}}\n"
    );

    let args_file = dir.join("args");
    let herdr = dir.join("herdr");
    crate::support::write_executable(
        &herdr,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nexit 0\n",
            args_file.display()
        ),
    )
    .unwrap();
    let output = usage_action()
        .env("HERDR_SOCKET_PATH", dir.join("nobody-listens.sock"))
        .env("HERDR_BIN_PATH", &herdr)
        .env("HERDR_PLUGIN_ID", "heeler-dev")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        fs::read_to_string(&args_file).unwrap(),
        "plugin\npane\nopen\n--plugin\nheeler-dev\n--entrypoint\nusage\n"
    );
    fs::remove_dir_all(&dir).unwrap();
}

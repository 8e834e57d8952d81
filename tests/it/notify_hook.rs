//! `heeler notify-hook` end to end: the real binary against loopback
//! stand-ins for herdr's socket and the Push Relay.

use crate::common;
use crate::support;

use heeler::base::json::{self, Value};
use heeler::wire::envelope::{NotificationKey, collapse_key};
use heeler::wire::notification::Notification;
use support::*;

const AGENT_BLOCKED: &str = r#"[{"pane_id":"w1:p1","workspace_id":"w1","tab_id":"w1:t1","agent":"claude","agent_status":"blocked","terminal_title":"⠋ Fix the bug","terminal_title_stripped":"Fix the bug","revision":3}]"#;
const WORKSPACES: &str = r#"[{"workspace_id":"w1","number":1,"label":"Heeler","focused":true}]"#;

fn blocked_host(name: &str) -> Fixture {
    let f = Fixture::new(name);
    f.herdr.set_agents(AGENT_BLOCKED);
    f.herdr.set_workspaces(WORKSPACES);
    f
}

fn marker(f: &Fixture, state_dir: &std::path::Path) -> Option<String> {
    let path = heeler::hooks::notify::marker_path(state_dir, "w1:p1");
    let _ = f;
    std::fs::read_to_string(path).ok()
}

#[test]
fn confirmed_blocked_sends_one_sealed_push_per_eligible_device() {
    let f = blocked_host("send");
    f.write_registration(&registration(&[
        entry("aaaa1111aaaa1111", KEY_A, r#""extra":{"keep":1}"#),
        entry("bbbb2222bbbb2222", KEY_B, ""),
        // Not eligible: flag off, bad env, bad key.
        r#"{"token":"c","env":"production","key":"AAEC","notify":{"blocked":true}}"#.into(),
        format!(
            r#"{{"token":"d","env":"production","key":"{KEY_A}","notify":{{"blocked":false}}}}"#
        ),
        format!(r#"{{"token":"e","env":"qa","key":"{KEY_A}","notify":{{"blocked":true}}}}"#),
    ]));
    let output = f.run("notify-hook", &event("w1:p1", "Blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let requests = f.relay.requests();
    assert_eq!(requests.len(), 2);
    for (request, (token, key)) in requests
        .iter()
        .zip([("aaaa1111aaaa1111", KEY_A), ("bbbb2222bbbb2222", KEY_B)])
    {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/push");
        assert_eq!(request.header("content-type"), Some("application/json"));
        let body = request.json();
        let keys: Vec<&str> = body.as_object().unwrap().iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["token", "env", "envelope", "collapse"]);
        assert_eq!(body.get("token").unwrap().as_str(), Some(token));
        let key = NotificationKey::from_base64url(key).unwrap();
        assert_eq!(
            body.get("collapse").unwrap().as_str().unwrap(),
            collapse_key(&key, "w1:p1")
        );
        let opened =
            Notification::open(&key, body.get("envelope").unwrap().as_str().unwrap()).unwrap();
        assert_eq!(opened.pane, "w1:p1");
        assert_eq!(opened.kind, "claude");
        assert_eq!(opened.status, "blocked");
        assert_eq!(opened.project.as_deref(), Some("Heeler"));
        assert_eq!(opened.title.as_deref(), Some("Fix the bug"));
    }
    assert_eq!(
        marker(&f, &f.state).as_deref(),
        Some(r#"{"pane":"w1:p1","last_notified_status":"blocked"}"#)
    );
    assert_eq!(f.herdr.methods(), ["agent.get", "workspace.get"]);
    let params: Vec<String> = f
        .herdr
        .state
        .lock()
        .unwrap()
        .requests
        .iter()
        .map(|(_, p)| p.to_json())
        .collect();
    assert_eq!(
        params,
        [r#"{"target":"w1:p1"}"#, r#"{"workspace_id":"w1"}"#]
    );
}

#[test]
fn envelope_decrypts_with_an_independent_aes_gcm() {
    if let Err(why) = python_crypto() {
        common::skip(&why);
        return;
    }
    let f = blocked_host("python");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    let body = f.relay.requests()[0].json();
    let envelope = body.get("envelope").unwrap().as_str().unwrap();
    let plaintext = python_open(KEY_A, "HERDR-NOTIFY:1", envelope);
    let value = json::parse(&plaintext).unwrap();
    let ts = value.get("ts").unwrap().as_i64().unwrap();
    assert_eq!(
        plaintext,
        format!(
            r#"{{"pane":"w1:p1","kind":"claude","status":"blocked","ts":{ts},"project":"Heeler","title":"Fix the bug"}}"#
        )
    );
    println!("python AESGCM opened the notification envelope");
}

#[test]
fn debounce_aborts_when_the_status_moved_on() {
    let f = blocked_host("moved");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    let output = f.run("notify-hook", &event("w1:p1", "done"));
    assert!(output.status.success());
    assert!(f.relay.requests().is_empty());
    assert_eq!(f.herdr.methods(), ["agent.get"]);
    assert_eq!(marker(&f, &f.state), None);
}

#[test]
fn a_gone_agent_clears_the_marker_and_sends_nothing() {
    let f = blocked_host("gone");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    let marker_path = heeler::hooks::notify::marker_path(&f.state, "w1:p9");
    std::fs::create_dir_all(marker_path.parent().unwrap()).unwrap();
    std::fs::write(
        &marker_path,
        r#"{"pane":"w1:p9","last_notified_status":"done"}"#,
    )
    .unwrap();
    let output = f.run("notify-hook", &event("w1:p9", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(f.relay.requests().is_empty());
    assert!(!marker_path.exists(), "marker cleared");
}

#[test]
fn dedupe_then_rearm_after_a_confirmed_other_status() {
    let f = blocked_host("dedupe");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    assert!(
        f.run("notify-hook", &event("w1:p1", "blocked"))
            .status
            .success()
    );
    assert_eq!(f.relay.requests().len(), 1);
    let calls = f.herdr.methods().len();

    // Same status again: cheap exit, no herdr call, no push.
    assert!(
        f.run("notify-hook", &event("w1:p1", "blocked"))
            .status
            .success()
    );
    assert_eq!(f.relay.requests().len(), 1);
    assert_eq!(f.herdr.methods().len(), calls);

    // A flap (event says working, herdr still says blocked) does not re-arm.
    assert!(
        f.run("notify-hook", &event("w1:p1", "working"))
            .status
            .success()
    );
    assert!(marker(&f, &f.state).is_some());

    // A confirmed working re-arms, and the next blocked notifies again.
    f.herdr
        .set_agents(&AGENT_BLOCKED.replace("\"blocked\"", "\"working\""));
    assert!(
        f.run("notify-hook", &event("w1:p1", "working"))
            .status
            .success()
    );
    assert_eq!(marker(&f, &f.state), None);
    f.herdr.set_agents(AGENT_BLOCKED);
    assert!(
        f.run("notify-hook", &event("w1:p1", "blocked"))
            .status
            .success()
    );
    assert_eq!(f.relay.requests().len(), 2);
}

#[test]
fn non_notifying_status_without_marker_and_no_devices_are_free() {
    let f = blocked_host("free");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    assert!(
        f.run("notify-hook", &event("w1:p1", "working"))
            .status
            .success()
    );
    f.write_registration(r#"{"v":1,"devices":[]}"#);
    assert!(
        f.run("notify-hook", &event("w1:p1", "blocked"))
            .status
            .success()
    );
    assert!(f.herdr.methods().is_empty());
    assert!(f.relay.requests().is_empty());
}

#[test]
fn alert_tokens_the_relay_refuses_are_skipped_with_a_log_line() {
    let f = blocked_host("badtoken");
    f.write_registration(&registration(&[
        entry("AAAA1111AAAA1111", KEY_A, ""),
        entry("bbbb2222bbbb2222", KEY_B, ""),
    ]));
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        "notify-hook: skipped the device with token AAAA1111…: not 16 to 200 lowercase hex digits, which the relay refuses\n"
    );
    let requests = f.relay.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].json().get("token").unwrap().as_str(),
        Some("bbbb2222bbbb2222")
    );
    assert!(marker(&f, &f.state).is_some());

    // With only a refused token there is nothing to send: no herdr call, no
    // push, just the line.
    let f = blocked_host("badtoken-only");
    f.write_registration(&registration(&[entry("not-a-hex-token!", KEY_A, "")]));
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).starts_with("notify-hook: skipped the device with token not-a-he…"));
    assert!(f.herdr.methods().is_empty());
    assert!(f.relay.requests().is_empty());
}

#[test]
fn a_5xx_is_retried_at_once_and_a_429_waits_for_its_retry_after() {
    let f = blocked_host("retry");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    f.relay.script([
        Reply::Status(500, r#"{"error":"x"}"#.into()),
        Reply::Limited(45),
    ]);
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = f.relay.requests();
    let statuses: Vec<u16> = requests.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [500, 429, 200]);
    // The 429's 45 relay seconds, on the minute heeler was told.
    let asked = f.relay.minute.mul_f64(45.0 / 60.0);
    assert!(requests[2].at - requests[1].at >= asked);
    assert!(marker(&f, &f.state).is_some());
    assert_eq!(f.failure_text(), "", "a 429 is no failure");
}

#[test]
fn a_5xx_after_three_attempts_is_kept_and_sent_when_the_relay_answers() {
    let f = blocked_host("giveup");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    let bad = Reply::Status(502, r#"{"error":"apns_unreachable"}"#.into());
    f.relay.script([bad.clone(), bad.clone(), bad]);
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    // The hook hands the event over and succeeds; the worker keeps the
    // alert through the relay's failures (the outbox) and says so once.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let log = f.failure_text();
    assert!(
        log.starts_with(
            "notify-hook: push for token aaaa1111… deferred: relay answered 502: {\"error\":\"apns_unreachable\"}; kept in the queue"
        ),
        "{log}"
    );
    assert_eq!(log.lines().count(), 1, "{log}");
    let statuses: Vec<u16> = f.relay.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [502, 502, 502, 200]);
    assert!(marker(&f, &f.state).is_some(), "delivered once it answered");
}

#[test]
fn other_4xx_are_final_and_413_is_not_degraded_for_alerts() {
    for status in [400, 413] {
        let f = blocked_host("final");
        f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
        f.relay
            .script([Reply::Status(status, r#"{"error":"bad_token"}"#.into())]);
        let output = f.run("notify-hook", &event("w1:p1", "blocked"));
        // The hook hands the event over and succeeds; the worker's failure
        // is the same line in the failure log.
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(stderr(&output), "");
        assert!(
            f.failure_text()
                .contains(&format!("relay answered {status}"))
        );
        assert_eq!(f.relay.requests().len(), 1, "status {status} not retried");
    }
}

#[test]
fn a_relay_echoing_the_request_does_not_put_the_token_into_the_log() {
    let f = blocked_host("echo");
    let token = "0123456789abcdef0123456789abcdef";
    f.write_registration(&registration(&[entry(token, KEY_A, "")]));
    f.relay.script([Reply::Status(
        400,
        format!(r#"{{"error":"bad_env","request":{{"token":"{token}","env":"x"}}}}"#),
    )]);
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    // The hook hands the event over and succeeds; the worker's failure
    // is the same line in the failure log.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    assert_eq!(
        f.failure_text(),
        "notify-hook: push for token 01234567… failed: relay answered 400: {\"error\":\"bad_env\",\"request\":{\"token\":\"[redacted]\",\"env\":\"x\"}}\n"
    );
}

#[test]
fn gone_token_is_pruned_from_every_session_keeping_everything_else() {
    let f = blocked_host("prune");
    let original = format!(
        r#"{{"v":1,"app":"keep-me","devices":[{},{},{},{}],"trailer":[1,2]}}"#,
        entry("dead0000dead0000", KEY_A, r#""unknown":{"z":1,"a":2}"#),
        entry("live1111live1111", KEY_B, r#""session":"other""#),
        entry("dead0000dead0000", KEY_B, r#""session":"other""#),
        "\"not an entry\"",
    );
    f.write_registration(&original);
    f.relay.script([Reply::Status(
        410,
        r#"{"reason":"Unregistered","timestamp":1}"#.into(),
    )]);
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        f.registration(),
        format!(
            r#"{{"v":1,"app":"keep-me","devices":[{},"not an entry"],"trailer":[1,2]}}"#,
            entry("live1111live1111", KEY_B, r#""session":"other""#)
        )
    );
    assert_eq!(marker(&f, &f.state), None, "no delivery, no marker");
    // The Host's pacing holds no push token at rest, and the pruned one's
    // hash (the first 16 bytes of its SHA-256) left it with the round.
    let digest = ring::digest::digest(&ring::digest::SHA256, b"dead0000dead0000");
    let key: String = digest.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(f.state.join("pacing"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let pacing = std::fs::read_to_string(&files[0]).unwrap();
    assert!(!pacing.contains("dead0000dead0000"), "{pacing}");
    assert!(!pacing.contains(&key), "{pacing}");
    assert!(pacing.contains(r#""tokens":{}"#), "{pacing}");
}

#[test]
fn a_hung_relay_times_out_and_the_retry_delivers() {
    let f = blocked_host("hang");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    f.relay.script([Reply::Hang]);
    // The stand-in holds the first request for 15 s: only the attempt's
    // deadline (capped at a second here) lets the second attempt go.
    let mut env = f.env(&event("w1:p1", "blocked"));
    env.push(short_deadlines());
    let output = run_hook("notify-hook", &env);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(f.relay.requests().len(), 2);
    assert_eq!(f.failure_text(), "");
    assert!(marker(&f, &f.state).is_some(), "the retry delivered");
}

#[test]
fn named_session_delivers_to_its_own_and_legacy_entries_with_its_own_markers() {
    let f = Fixture::with_socket("session", "herdr/sessions/work/herdr.sock");
    f.herdr.set_agents(AGENT_BLOCKED);
    f.write_registration(&registration(&[
        entry("aaaa0000aaaa0000", KEY_A, ""),
        entry("bbbb0000bbbb0000", KEY_A, r#""session":"work""#),
        entry("defa0000defa0000", KEY_A, r#""session":"""#),
        entry("cccc0000cccc0000", KEY_A, r#""session":"play""#),
    ]));
    assert!(
        f.run("notify-hook", &event("w1:p1", "blocked"))
            .status
            .success()
    );
    let tokens: Vec<String> = f
        .relay
        .requests()
        .iter()
        .map(|r| r.json().get("token").unwrap().as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tokens, ["aaaa0000aaaa0000", "bbbb0000bbbb0000"]);
    assert!(marker(&f, &f.state.join("sessions/work")).is_some());
    assert_eq!(
        marker(&f, &f.state),
        None,
        "default session's marker untouched"
    );
}

#[test]
fn unknown_session_delivers_to_legacy_only_and_no_entries_means_no_herdr_call() {
    let f = Fixture::with_socket("unknown", "custom/api.sock");
    f.herdr.set_agents(AGENT_BLOCKED);
    f.write_registration(&registration(&[
        entry("bbbb0000bbbb0000", KEY_A, r#""session":"work""#),
        entry("defa0000defa0000", KEY_A, r#""session":"""#),
    ]));
    assert!(
        f.run("notify-hook", &event("w1:p1", "blocked"))
            .status
            .success()
    );
    assert!(f.herdr.methods().is_empty());
    f.write_registration(&registration(&[entry("aaaa0000aaaa0000", KEY_A, "")]));
    assert!(
        f.run("notify-hook", &event("w1:p1", "blocked"))
            .status
            .success()
    );
    assert_eq!(f.relay.requests().len(), 1);
}

#[test]
fn missing_environment_fails_with_one_line_in_contract_order() {
    let f = blocked_host("env");
    let full = f.env(&event("w1:p1", "blocked"));
    for (missing, line) in [
        ("HERDR_PLUGIN_CONFIG_DIR", "HERDR_PLUGIN_CONFIG_DIR"),
        ("HERDR_PLUGIN_EVENT_JSON", "HERDR_PLUGIN_EVENT_JSON"),
        ("HERDR_PLUGIN_STATE_DIR", "HERDR_PLUGIN_STATE_DIR"),
        ("HERDR_BIN_PATH", "HERDR_BIN_PATH"),
    ] {
        let env: Vec<_> = full.iter().filter(|(k, _)| k != missing).cloned().collect();
        let output = run_hook("notify-hook", &env);
        assert_eq!(output.status.code(), Some(1));
        assert_eq!(
            stderr(&output),
            format!("notify-hook: {line} is not set; this script must run as a herdr event hook\n")
        );
    }
}

#[test]
fn garbage_events_fail_loudly_without_contacting_anything() {
    let f = blocked_host("garbage");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    for (event_json, line) in [
        ("{not json", "HERDR_PLUGIN_EVENT_JSON is not JSON"),
        (
            r#"{"data":{"agent_status":"blocked"}}"#,
            "event data.pane_id missing",
        ),
        (
            r#"{"data":{"pane_id":"w1:p1","agent_status":""}}"#,
            "event data.agent_status missing",
        ),
    ] {
        let output = f.run("notify-hook", event_json);
        assert_eq!(output.status.code(), Some(1));
        assert_eq!(stderr(&output), format!("notify-hook: {line}\n"));
    }
    assert!(f.herdr.methods().is_empty());
    assert!(f.relay.requests().is_empty());
}

#[test]
fn garbage_or_huge_registration_is_absent_and_never_rewritten() {
    let f = blocked_host("badreg");
    let huge = format!(
        r#"{{"v":1,"devices":[{}],"pad":"{}"}}"#,
        entry("aaaa1111aaaa1111", KEY_A, ""),
        "x".repeat(5 * 1024 * 1024)
    );
    for text in [
        "garbage".to_owned(),
        r#"{"v":2,"devices":[]}"#.to_owned(),
        r#"{"v":1,"devices":{}}"#.to_owned(),
        "[".repeat(10_000),
        huge,
    ] {
        f.write_registration(&text);
        let output = f.run("notify-hook", &event("w1:p1", "blocked"));
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(stderr(&output), "");
        assert!(f.registration() == text, "registration unchanged");
    }
    assert!(f.relay.requests().is_empty());
    assert!(f.herdr.methods().is_empty());
}

#[test]
fn garbage_settings_mean_defaults() {
    let f = blocked_host("badsettings");
    // Defaults would sleep 5 s and use the production relay; with a marker
    // already holding the status the hook must exit before either.
    let marker_path = heeler::hooks::notify::marker_path(&f.state, "w1:p1");
    std::fs::create_dir_all(marker_path.parent().unwrap()).unwrap();
    std::fs::write(
        &marker_path,
        r#"{"pane":"w1:p1","last_notified_status":"blocked"}"#,
    )
    .unwrap();
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    for text in ["{{{".to_owned(), "\u{0}".repeat(100_000)] {
        std::fs::write(f.config.join("notify.json"), text).unwrap();
        let output = f.run("notify-hook", &event("w1:p1", "blocked"));
        assert!(output.status.success());
        assert_eq!(stderr(&output), "");
    }
    let s = heeler::hooks::settings::load(&f.config);
    assert_eq!(s, heeler::hooks::settings::NotifySettings::default());
}

#[test]
fn unreachable_herdr_fails_the_recheck_with_one_line() {
    let f = blocked_host("unreachable");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    let mut env = f.env(&event("w1:p1", "blocked"));
    env.retain(|(k, _)| k != "HERDR_SOCKET_PATH");
    let output = run_hook("notify-hook", &env);
    // The hook hands the event over and succeeds; the worker's failure
    // is the same line in the failure log.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let line = f.failure_text();
    assert!(
        line.starts_with(
            "notify-hook: status re-check failed: herdr unreachable: cannot run /nonexistent/herdr"
        ),
        "{line}"
    );
    assert_eq!(line.lines().count(), 1);
    assert!(f.relay.requests().is_empty());
}

#[test]
fn the_herdr_binary_is_the_fallback_when_the_socket_is_unusable() {
    let f = blocked_host("binary");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    let bin = f.root.join("fake-herdr");
    let log = f.root.join("herdr-args.log");
    crate::support::write_executable(
        &bin,
        format!(
            r#"#!/bin/sh
echo "$@" >> '{log}'
case "$1 $2" in
  "agent get") echo '{{"id":"cli:agent:get","result":{{"type":"agent_info","agent":{{"pane_id":"w1:p1","workspace_id":"w1","agent_status":"blocked","terminal_title":"raw title"}}}}}}' ;;
  "workspace get") echo '{{"error":{{"code":"workspace_not_found","message":"nope"}}}}' >&2; exit 1 ;;
  *) exit 2 ;;
esac
"#,
            log = log.display()
        ),
    )
    .unwrap();
    let mut env = f.env(&event("w1:p1", "blocked"));
    for (k, v) in env.iter_mut() {
        if k == "HERDR_BIN_PATH" {
            *v = bin.display().to_string();
        }
        if k == "HERDR_SOCKET_PATH" {
            *v = f.root.join("herdr/missing.sock").display().to_string();
        }
    }
    let output = run_hook("notify-hook", &env);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "agent get w1:p1\nworkspace get w1\n"
    );
    let body = f.relay.requests()[0].json();
    let key = NotificationKey::from_base64url(KEY_A).unwrap();
    let opened = Notification::open(&key, body.get("envelope").unwrap().as_str().unwrap()).unwrap();
    assert_eq!(opened.title.as_deref(), Some("raw title"));
    assert_eq!(opened.project, None);
}

#[test]
fn a_loopback_relay_is_never_reached_through_a_proxy() {
    // A proxy would see the device token in cleartext on a plain-http
    // loopback relay; the push must go straight to the relay.
    let proxy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    proxy.set_nonblocking(true).unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let f = blocked_host("proxy");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    let mut env = f.env(&event("w1:p1", "blocked"));
    for name in [
        "ALL_PROXY",
        "all_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
    ] {
        env.push((name.into(), proxy_url.clone()));
    }
    let output = run_hook("notify-hook", &env);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(f.relay.requests().len(), 1);
    assert_eq!(
        proxy.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "the proxy was connected to"
    );
}

#[test]
fn plain_http_to_a_remote_relay_is_refused() {
    let f = blocked_host("plainhttp");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    f.write_settings(r#"{"relay_url":"http://relay.example"}"#);
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    // The hook hands the event over and succeeds; the worker's failure
    // is the same line in the failure log.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    assert_eq!(
        f.failure_text(),
        "notify-hook: relay_url uses plain http to relay.example; only loopback relays may skip https\n"
    );
    let _ = Value::Null;
}

#[test]
fn both_hooks_refresh_the_sidebar_snapshot_first_and_survive_its_failure() {
    let f = blocked_host("sidebar");
    f.write_registration(r#"{"v":1,"devices":[]}"#);
    for hook in ["notify-hook", "activity-hook"] {
        let _ = std::fs::remove_file(f.config.join("sidebar.json"));
        let output = f.run(hook, &event("w1:p1", "blocked"));
        assert!(output.status.success(), "{}", stderr(&output));
        assert!(
            f.config.join("sidebar.json").is_file(),
            "{hook} refreshed before its no-device exit"
        );
    }

    // A snapshot that cannot be written is one log line, and the alert still goes out.
    std::fs::remove_file(f.config.join("sidebar.json")).unwrap();
    std::fs::create_dir(f.config.join("sidebar.json")).unwrap();
    std::fs::write(f.config.join("sidebar.json/keep"), "x").unwrap();
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    let log = stderr(&output);
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(
        log.starts_with("sidebar-hook: snapshot refresh failed ("),
        "{log}"
    );
    assert_eq!(f.relay.requests().len(), 1);
}

#[test]
fn a_silent_herdr_socket_times_out_and_falls_back_to_the_binary() {
    let f = blocked_host("silent");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    // A socket that accepts and never answers.
    let silent = f.root.join("silent/herdr.sock");
    std::fs::create_dir_all(silent.parent().unwrap()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(&silent).unwrap();
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(4).collect();
        std::thread::sleep(std::time::Duration::from_secs(30));
        drop(held);
    });
    let mut env = f.env(&event("w1:p1", "blocked"));
    for (k, v) in env.iter_mut() {
        if k == "HERDR_SOCKET_PATH" {
            *v = silent.display().to_string();
        }
    }
    env.push(short_deadlines());
    let output = run_hook("notify-hook", &env);
    // The hook hands the event over and succeeds; the worker's failure
    // is the same line in the failure log. The socket holds every
    // connection for 30 s without a byte: a read error (not the end of the
    // stream) is its deadline.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let line = f.failure_text();
    assert!(
        line.starts_with("notify-hook: status re-check failed: herdr unreachable: socket read: "),
        "{line}"
    );
    assert!(line.contains("; cannot run /nonexistent/herdr"), "{line}");
    assert!(f.relay.requests().is_empty());
}

#[test]
fn a_trickling_herdr_socket_is_cut_off_at_one_overall_deadline() {
    let f = blocked_host("trickle");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    // A socket that answers one byte every 200 ms and never ends the line:
    // each read succeeds well inside any per-read timeout.
    let trickle = f.root.join("trickle/herdr.sock");
    std::fs::create_dir_all(trickle.parent().unwrap()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(&trickle).unwrap();
    std::thread::spawn(move || {
        use std::io::Write;
        for mut stream in listener.incoming().flatten().take(4) {
            std::thread::spawn(move || {
                for _ in 0..300 {
                    if stream.write_all(b" ").is_err() {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
            });
        }
    });
    let mut env = f.env(&event("w1:p1", "blocked"));
    for (k, v) in env.iter_mut() {
        if k == "HERDR_SOCKET_PATH" {
            *v = trickle.display().to_string();
        }
    }
    env.push(short_deadlines());
    let output = run_hook("notify-hook", &env);
    // The hook hands the event over and succeeds; the worker's failure
    // is the same line in the failure log. Read by read, the socket ends
    // its line only by closing after 60 s (no JSON then): a read error is
    // the one overall deadline.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let line = f.failure_text();
    assert!(
        line.starts_with("notify-hook: status re-check failed: herdr unreachable: socket read: "),
        "{line}"
    );
}

#[test]
fn a_hanging_herdr_binary_is_killed_at_its_deadline() {
    let f = blocked_host("hangbin");
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    let bin = f.root.join("hanging-herdr");
    let pid_file = f.root.join("sleep.pid");
    crate::support::write_executable(
        &bin,
        format!(
            "#!/bin/sh\nsleep 120 &\necho $! > '{}'\nwait\n",
            pid_file.display()
        ),
    )
    .unwrap();
    let mut env = f.env(&event("w1:p1", "blocked"));
    for (k, v) in env.iter_mut() {
        if k == "HERDR_BIN_PATH" {
            *v = bin.display().to_string();
        }
        if k == "HERDR_SOCKET_PATH" {
            *v = f.root.join("herdr/missing.sock").display().to_string();
        }
    }
    env.push(short_deadlines());
    let output = run_hook("notify-hook", &env);
    let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
    let pid = pid.trim();
    // A SIGKILL takes effect asynchronously; a zombie counts as gone.
    let running = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "))
    };
    let sleep_alive = !pid.is_empty()
        && (0..100).all(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            running()
        });
    if sleep_alive {
        let _ = std::process::Command::new("kill").arg(pid).status();
    }
    // The hook hands the event over and succeeds; the worker's failure
    // is the same line in the failure log.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let line = f.failure_text();
    assert!(
        line.starts_with("notify-hook: status re-check failed: herdr unreachable: "),
        "{line}"
    );
    assert!(line.contains(" timed out after 1 s"), "{line}");
    assert!(!sleep_alive, "the herdr process group outlived the hook");
}

#[test]
fn every_hook_run_records_the_runtime_for_usage_queries() {
    let f = blocked_host("runtime");
    let record = f.state.join("usage/runtime-v1.json");
    assert!(
        f.run("notify-hook", &event("w1:p1", "working"))
            .status
            .success()
    );
    let value = json::parse(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(value.get("v").and_then(Value::as_i64), Some(1));
    assert!(
        value
            .get("binary")
            .and_then(Value::as_str)
            .is_some_and(|b| b.ends_with("heeler"))
    );
    assert_eq!(
        value.get("herdr_socket").and_then(Value::as_str),
        Some(f.herdr.socket.to_str().unwrap())
    );
    // Unchanged runtime: the record is not rewritten on the next event.
    let before = std::fs::metadata(&record).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(
        f.run("notify-hook", &event("w1:p1", "working"))
            .status
            .success()
    );
    assert_eq!(
        std::fs::metadata(&record).unwrap().modified().unwrap(),
        before
    );
}

/// Puts `shape` at `path`: a link to a device, or a FIFO nobody writes.
fn plant(path: &std::path::Path, shape: &str) {
    let _ = std::fs::remove_file(path);
    if shape == "FIFO" {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo");
    } else {
        std::os::unix::fs::symlink(shape, path).unwrap();
    }
}

#[test]
fn config_files_that_are_devices_or_fifos_never_hold_the_hook() {
    // A FIFO at notify.json or notifications.json held the hook, and so one
    // of herdr's 32 command slots, until something wrote to it. Now each is
    // refused at once: the settings are the defaults, the registration is
    // absent, so the hook ends without a herdr call or a push.
    let f = blocked_host("devices");
    for name in ["notify.json", "notifications.json"] {
        for shape in ["/dev/zero", "/dev/urandom", "FIFO"] {
            // Removed first: writing settings into a FIFO would block.
            let _ = std::fs::remove_file(f.config.join("notify.json"));
            let _ = std::fs::remove_file(f.registration_path());
            f.write_settings("{}");
            plant(&f.config.join(name), shape);
            let output = common::output_within(
                &mut hook_command("notify-hook", &f.env(&event("w1:p1", "blocked"))),
                std::time::Duration::from_secs(60),
            );
            f.settle();
            assert!(output.status.success(), "{name} {shape}: {output:?}");
            assert_eq!(stderr(&output), "", "{name} {shape}");
            assert_eq!(f.failure_text(), "", "{name} {shape}");
        }
    }
    assert!(f.herdr.methods().is_empty());
    assert!(f.relay.requests().is_empty());
}

#[test]
fn a_flood_of_events_leaves_a_bounded_spool_and_every_panes_newest_event() {
    // 400 events within one debounce were 400 spool entries; only the
    // delay cap bounded them. Now the spool holds at most MAX_ENTRIES, the
    // superseded duplicates (an older event of the same pane and status)
    // go first, and each drop is a line in the failure log.
    use heeler::hooks::spool::{Job, MAX_ENTRIES, Queue};
    let f = blocked_host("flood");
    f.write_settings(r#"{"debounce_ms":60000}"#);
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    for i in 0..400 {
        let pane = format!("w1:p{}", i % 50);
        let output = hook_command("notify-hook", &f.env(&event(&pane, "blocked")))
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let queue = Queue::of(&session_state_dir(&f.env("")).unwrap());
    let listed = queue.list();
    assert_eq!(listed.len(), MAX_ENTRIES);
    let panes: std::collections::BTreeSet<String> = listed
        .iter()
        .filter_map(|l| queue.read(l))
        .filter_map(|entry| match entry.job {
            Job::Notify { event, .. } => Some(event.pane),
            Job::Activity { .. } => None,
        })
        .collect();
    assert_eq!(panes.len(), 50, "every pane's newest event is kept");
    let log = f.failure_text();
    assert_eq!(log.lines().count(), 400 - MAX_ENTRIES, "{log}");
    for line in log.lines() {
        assert!(
            line.starts_with(&format!(
                "notify-hook: the hook queue holds more than {MAX_ENTRIES} events; dropped "
            )) && line.ends_with(".json (superseded)"),
            "{line}"
        );
    }
    // Emptied, the spool lets the worker end now instead of in a minute.
    for listed in queue.list() {
        queue.take(&listed);
    }
    f.settle();
    assert!(f.relay.requests().is_empty());
}

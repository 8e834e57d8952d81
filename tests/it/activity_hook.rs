//! `heeler activity-hook` end to end: the real binary against loopback
//! stand-ins for herdr's socket and the Push Relay.

use crate::common;
use crate::support;

use heeler::base::json::{self, Value};
use heeler::wire::envelope::NotificationKey;
use heeler::wire::live_activity::Content;
use support::*;

const AGENTS: &str = r#"[
 {"pane_id":"w1:p1","workspace_id":"w1","tab_id":"w1:t1","agent":"claude","agent_status":"working","terminal_title_stripped":"Build it","name":"builder"},
 {"pane_id":"w1:p2","workspace_id":"w1","tab_id":"w1:t2","agent":"codex","agent_status":"blocked","terminal_title_stripped":"Approve?"},
 {"pane_id":"w1:p3","workspace_id":"w1","tab_id":"w1:t1","agent":"claude","agent_status":"idle"}
]"#;
const WORKSPACES: &str =
    r#"[{"workspace_id":"w1","number":1,"label":"Heeler"},{"workspace_id":"w2","label":""}]"#;
const TOKEN_A: &str = "0123456789abcdef0123";
const TOKEN_B: &str = "fedcba9876543210fedc";

fn activity_entry(alert: &str, key: &str, token: &str, live_extra: &str) -> String {
    entry(
        alert,
        key,
        &format!(
            r#""live_activity":{{"token":"{token}","started_at":1{live_extra}}},"unknown":[1]"#
        ),
    )
}

fn host(name: &str) -> Fixture {
    let f = Fixture::new(name);
    f.herdr.set_agents(AGENTS);
    f.herdr.set_workspaces(WORKSPACES);
    f
}

fn open(request: &Recorded, key: &str) -> Content {
    let key = NotificationKey::from_base64url(key).unwrap();
    let body = request.json();
    Content::open(&key, body.get("envelope").unwrap().as_str().unwrap()).unwrap()
}

fn panes(content: &Content) -> Vec<String> {
    content
        .agents
        .iter()
        .map(|a| a.pane.clone().unwrap())
        .collect()
}

fn last_state(dir: &std::path::Path) -> Value {
    json::parse(&std::fs::read_to_string(dir.join("activity/last-state.json")).unwrap()).unwrap()
}

#[test]
fn update_is_sealed_per_device_with_pins_counts_and_priority() {
    let f = host("update");
    f.write_registration(&registration(&[
        activity_entry(
            "alert-a",
            KEY_A,
            TOKEN_A,
            r#","pinned_pane_ids":["w1:p1","w9:p9"]"#,
        ),
        activity_entry("alert-b", KEY_B, TOKEN_B, r#","env":"sandbox""#),
        entry("no-live", KEY_A, ""),
    ]));
    let output = f.run("activity-hook", &event("w1:p2", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = f.relay.requests();
    assert_eq!(requests.len(), 2);
    let body = requests[0].json();
    let keys: Vec<&str> = body.as_object().unwrap().iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "kind",
            "token",
            "env",
            "event",
            "priority",
            "timestamp",
            "counts",
            "envelope",
            "stale_date"
        ]
    );
    assert_eq!(body.get("kind").unwrap().as_str(), Some("liveactivity"));
    assert_eq!(body.get("token").unwrap().as_str(), Some(TOKEN_A));
    assert_eq!(body.get("event").unwrap().as_str(), Some("update"));
    assert_eq!(body.get("priority").unwrap().as_i64(), Some(10));
    let timestamp = body.get("timestamp").unwrap().as_i64().unwrap();
    assert_eq!(
        body.get("stale_date").unwrap().as_i64(),
        Some(timestamp + 900)
    );
    assert_eq!(
        body.get("counts").unwrap().to_json(),
        r#"{"working":1,"blocked":1,"done":0}"#
    );
    assert_eq!(
        requests[1].json().get("env").unwrap().as_str(),
        Some("sandbox")
    );

    let a = open(&requests[0], KEY_A);
    assert_eq!(panes(&a), ["w1:p1", "w1:p2"], "pinned first");
    assert_eq!(a.agents[0].workspace.as_deref(), Some("Heeler"));
    assert_eq!(a.agents[0].name.as_deref(), Some("builder"));
    assert_eq!(a.agents[0].title.as_deref(), Some("Build it"));
    assert_eq!(a.agents[0].rows, None);
    let b = open(&requests[1], KEY_B);
    assert_eq!(panes(&b), ["w1:p2", "w1:p1"], "blocked first without pins");

    let state = last_state(&f.state);
    assert_eq!(
        state.get("statuses").unwrap().to_json(),
        r#"{"w1:p1":"working","w1:p2":"blocked"}"#
    );
    assert_eq!(state.get("ended"), Some(&Value::Bool(false)));
    assert_eq!(
        state.get("preferences").unwrap().as_str().unwrap().len(),
        64
    );

    // Same snapshot: nothing sent.
    assert!(
        f.run("activity-hook", &event("w1:p2", "blocked"))
            .status
            .success()
    );
    assert_eq!(f.relay.requests().len(), 2);

    // A change without a newly blocked pane goes at priority 5.
    f.herdr
        .set_agents(&AGENTS.replace(r#""working","terminal"#, r#""done","terminal"#));
    assert!(
        f.run("activity-hook", &event("w1:p1", "done"))
            .status
            .success()
    );
    let requests = f.relay.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        requests[2].json().get("priority").unwrap().as_i64(),
        Some(5)
    );

    // A preference change (new pins) re-sends an unchanged snapshot.
    f.write_registration(&registration(&[
        activity_entry("alert-a", KEY_A, TOKEN_A, r#","pinned_pane_ids":["w1:p2"]"#),
        activity_entry("alert-b", KEY_B, TOKEN_B, r#","env":"sandbox""#),
    ]));
    assert!(
        f.run("activity-hook", &event("w1:p1", "done"))
            .status
            .success()
    );
    assert_eq!(f.relay.requests().len(), 6);
}

#[test]
fn update_decrypts_with_an_independent_aes_gcm() {
    if let Err(why) = python_crypto() {
        common::skip(&why);
        return;
    }
    let f = host("python");
    f.write_registration(&registration(&[activity_entry("a", KEY_A, TOKEN_A, "")]));
    assert!(
        f.run("activity-hook", &event("w1:p2", "blocked"))
            .status
            .success()
    );
    let body = f.relay.requests()[0].json();
    let plaintext = python_open(
        KEY_A,
        "HERDR-ACTIVITY:1",
        body.get("envelope").unwrap().as_str().unwrap(),
    );
    let host = heeler::hooks::activity::short_host_name();
    assert_eq!(
        plaintext,
        format!(
            r#"{{"agents":[{{"kind":"codex","pane":"w1:p2","status":"blocked","title":"Approve?","workspace":"Heeler"}},{{"kind":"claude","name":"builder","pane":"w1:p1","status":"working","title":"Build it","workspace":"Heeler"}}],"host":{},"v":1}}"#,
            json::quote(&host)
        )
    );
    println!("python AESGCM opened the activity envelope");
}

#[test]
fn empty_inventory_ends_the_activity_once() {
    let f = host("end");
    f.herdr
        .set_agents(r#"[{"pane_id":"w1:p3","workspace_id":"w1","agent_status":"idle"}]"#);
    f.write_registration(&registration(&[activity_entry("a", KEY_A, TOKEN_A, "")]));
    assert!(
        f.run("activity-hook", &event("w1:p3", "idle"))
            .status
            .success()
    );
    let requests = f.relay.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json();
    assert_eq!(body.get("event").unwrap().as_str(), Some("end"));
    assert_eq!(body.get("priority").unwrap().as_i64(), Some(5));
    assert_eq!(
        body.get("dismissal_date").unwrap().as_i64(),
        body.get("timestamp").unwrap().as_i64()
    );
    assert!(body.get("stale_date").is_none());
    assert_eq!(
        body.get("counts").unwrap().to_json(),
        r#"{"working":0,"blocked":0,"done":0}"#
    );
    assert!(open(&requests[0], KEY_A).agents.is_empty());
    assert_eq!(last_state(&f.state).get("ended"), Some(&Value::Bool(true)));

    // Ended and an ineligible status: cheap exit, no herdr call at all.
    let calls = f.herdr.methods().len();
    assert!(
        f.run("activity-hook", &event("w1:p3", "idle"))
            .status
            .success()
    );
    assert_eq!(f.herdr.methods().len(), calls);
    // Ended, eligible status, still empty: no second end.
    assert!(
        f.run("activity-hook", &event("w1:p3", "working"))
            .status
            .success()
    );
    assert_eq!(f.relay.requests().len(), 1);
}

#[test]
fn overlapping_hooks_send_exactly_once() {
    let f = host("concurrent");
    f.write_settings(r#"{"activity_debounce_ms":1000}"#);
    f.write_registration(&registration(&[activity_entry("a", KEY_A, TOKEN_A, "")]));
    let children: Vec<_> = (0..6)
        .map(|_| f.spawn("activity-hook", &event("w1:p2", "blocked")))
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    }
    // The claims were handed to the session's worker; wait for it.
    f.settle();
    assert_eq!(f.relay.requests().len(), 1);
    assert_eq!(
        f.herdr
            .methods()
            .iter()
            .filter(|m| *m == "agent.list")
            .count(),
        1
    );
}

#[test]
fn gone_token_removes_only_live_activity() {
    let f = host("prune");
    let registration_text = format!(
        r#"{{"v":1,"devices":[{},{}],"x":{{"y":null}}}}"#,
        activity_entry("alert-a", KEY_A, TOKEN_A, r#","pinned_pane_ids":[]"#),
        activity_entry("alert-b", KEY_B, TOKEN_B, ""),
    );
    f.write_registration(&registration_text);
    f.relay
        .script([Reply::Status(410, r#"{"reason":"Unregistered"}"#.into())]);
    let output = f.run("activity-hook", &event("w1:p2", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        f.registration(),
        format!(
            r#"{{"v":1,"devices":[{},{}],"x":{{"y":null}}}}"#,
            entry("alert-a", KEY_A, r#""unknown":[1]"#),
            activity_entry("alert-b", KEY_B, TOKEN_B, ""),
        )
    );
}

#[test]
fn a_429_sends_the_whole_update_again_after_its_retry_after() {
    let f = host("limited");
    f.write_registration(&registration(&[
        activity_entry("alert-a", KEY_A, TOKEN_A, ""),
        activity_entry("alert-b", KEY_B, TOKEN_B, ""),
    ]));
    f.relay.script([Reply::ok(), Reply::Limited(40)]);
    let output = f.run("activity-hook", &event("w1:p2", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = f.relay.requests();
    let sent: Vec<(String, u16)> = requests
        .iter()
        .map(|r| {
            let token = r.json().get("token").unwrap().as_str().unwrap().to_owned();
            (token, r.status)
        })
        .collect();
    let to = |token: &str, status| (token.to_owned(), status);
    // Latest wins: the round is put back whole (last-state was not
    // written), so the phone that got it gets the same update again.
    assert_eq!(
        sent,
        [
            to(TOKEN_A, 200),
            to(TOKEN_B, 429),
            to(TOKEN_A, 200),
            to(TOKEN_B, 200)
        ]
    );
    let asked = f.relay.minute.mul_f64(40.0 / 60.0);
    assert!(
        requests[2].at - requests[1].at >= asked,
        "after its Retry-After"
    );
    assert_eq!(
        panes(&open(&requests[3], KEY_B)),
        panes(&open(&requests[1], KEY_B))
    );
    assert_eq!(
        last_state(&f.state).get("statuses").unwrap().to_json(),
        r#"{"w1:p1":"working","w1:p2":"blocked"}"#
    );
    assert_eq!(f.failure_text(), "", "a 429 is no failure");
}

#[test]
fn relay_origin_413_degrades_and_apns_413_is_final() {
    let f = host("degrade413");
    f.write_registration(&registration(&[activity_entry("a", KEY_A, TOKEN_A, "")]));
    f.relay.script([Reply::Status(
        413,
        r#"{"error":"payload_too_large"}"#.into(),
    )]);
    let output = f.run("activity-hook", &event("w1:p2", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = f.relay.requests();
    assert_eq!(requests.len(), 2);
    assert!(open(&requests[0], KEY_A).agents[0].title.is_some());
    let degraded = open(&requests[1], KEY_A);
    assert!(
        degraded
            .agents
            .iter()
            .all(|a| a.title.is_none() && a.name.is_none())
    );
    assert_eq!(degraded.agents[0].workspace.as_deref(), Some("Heeler"));

    let f = host("apns413");
    f.write_registration(&registration(&[activity_entry("a", KEY_A, TOKEN_A, "")]));
    f.relay
        .script([Reply::Status(413, r#"{"reason":"PayloadTooLarge"}"#.into())]);
    let output = f.run("activity-hook", &event("w1:p2", "blocked"));
    // The hook hands the event over and succeeds; the worker's failure is
    // the same line in the failure log.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    assert_eq!(
        f.failure_text(),
        "activity-hook: push for token 01234567… failed: relay answered 413: {\"reason\":\"PayloadTooLarge\"}\n"
    );
    assert_eq!(f.relay.requests().len(), 1);
    assert!(
        !f.state.join("activity/last-state.json").exists(),
        "no delivery, no last-state"
    );
}

#[test]
fn every_step_too_large_ends_in_payload_too_large() {
    let f = host("ladder413");
    f.write_registration(&registration(&[activity_entry("a", KEY_A, TOKEN_A, "")]));
    let too_large = Reply::Status(413, r#"{"error":"payload_too_large"}"#.into());
    f.relay.script(vec![too_large; 4]);
    let output = f.run("activity-hook", &event("w1:p2", "blocked"));
    // The hook hands the event over and succeeds; the worker's failure is
    // the same line in the failure log.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    assert_eq!(
        f.failure_text(),
        "activity-hook: push for token 01234567… failed: payload too large\n"
    );
    let requests = f.relay.requests();
    assert_eq!(requests.len(), 4);
    assert!(open(&requests[3], KEY_A).agents.is_empty());
}

#[test]
fn oversized_rows_are_pre_degraded_to_fit_the_budget() {
    let f = Fixture::new("budget");
    let long = "🦀".repeat(80);
    let agents: Vec<String> = (1..=6)
        .map(|i| {
            format!(
                r#"{{"pane_id":"w1:p{i}","workspace_id":"w1","agent":"claude","agent_status":"working","terminal_title":"{long}","tokens":{{"a":"{long}","b":"{long}"}}}}"#
            )
        })
        .collect();
    f.herdr.set_agents(&format!("[{}]", agents.join(",")));
    f.herdr.set_workspaces(WORKSPACES);
    let fields = [r#"{"token":"$a"}"#, r#"{"token":"$b"}"#]
        .repeat(8)
        .join(",");
    let layout = format!(r#","row_layout":{{"rows":[[{fields}],[{fields}],[{fields}]]}}"#);
    f.write_registration(&registration(&[activity_entry(
        "a", KEY_A, TOKEN_A, &layout,
    )]));
    let output = f.run("activity-hook", &event("w1:p1", "working"));
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = f.relay.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json();
    assert!(requests[0].body.len() <= 8192);
    let ct = json::parse(body.get("envelope").unwrap().as_str().unwrap()).unwrap();
    assert!(ct.get("ct").unwrap().as_str().unwrap().len() <= 2800);
    let content = open(&requests[0], KEY_A);
    assert_eq!(content.agents.len(), 5, "capped at five");
    assert!(
        content
            .agents
            .iter()
            .all(|a| a.rows.is_none() && a.title.is_none())
    );
    assert_eq!(
        body.get("counts").unwrap().to_json(),
        r#"{"working":6,"blocked":0,"done":0}"#
    );
}

#[test]
fn rows_render_with_tab_and_pane_context_fetched_once_per_workspace() {
    let f = host("rows");
    f.herdr.set_tabs_and_panes(
        r#"[{"tab_id":"w1:t1","workspace_id":"w1","label":"main"},{"tab_id":"w1:t2","workspace_id":"w1","label":"2"}]"#,
        r#"[{"pane_id":"w1:p2","workspace_id":"w1","tab_id":"w1:t2","label":"approvals"}]"#,
    );
    let layout = r##","row_layout":{"rows":[[{"token":"state_icon"},{"token":"tab","bold":true},{"token":"pane","fg":"#fff"}],[{"token":"status","dim":true},{"token":"host"}]],"row_gap":1}"##;
    let layout = format!(r#"{layout},"host_name":"  studio ""#);
    f.write_registration(&registration(&[activity_entry(
        "a", KEY_A, TOKEN_A, &layout,
    )]));
    let output = f.run("activity-hook", &event("w1:p2", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    let content = open(&f.relay.requests()[0], KEY_A);
    assert_eq!(
        content.agents[0].rows.as_ref().unwrap().to_json_sorted(),
        r##"[[{"bold":true,"text":"2"},{"text":" · "},{"fg":"#fff","text":"approvals"}],[{"dim":true,"text":"Blocked"},{"text":" · "},{"text":"studio"}]]"##
    );
    assert_eq!(
        content.agents[1].rows.as_ref().unwrap().to_json_sorted(),
        r#"[[{"bold":true,"text":"main"}],[{"dim":true,"text":"Working"},{"text":" · "},{"text":"studio"}]]"#
    );
    let methods = f.herdr.methods();
    assert_eq!(methods.iter().filter(|m| *m == "tab.list").count(), 1);
    assert_eq!(methods.iter().filter(|m| *m == "pane.list").count(), 1);
}

#[test]
fn sessions_keep_their_own_claims_and_last_state() {
    let f = Fixture::with_socket("session", "herdr/sessions/work/herdr.sock");
    f.herdr.set_agents(AGENTS);
    f.write_registration(&registration(&[
        activity_entry("a", KEY_A, TOKEN_A, ""),
        entry(
            "b",
            KEY_B,
            r#""session":"play","live_activity":{"token":"fedcba9876543210fedc"}"#,
        ),
    ]));
    assert!(
        f.run("activity-hook", &event("w1:p2", "blocked"))
            .status
            .success()
    );
    let requests = f.relay.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].json().get("token").unwrap().as_str(),
        Some(TOKEN_A)
    );
    let work = f.state.join("sessions/work");
    assert!(work.join("activity/claim.json").exists());
    assert!(work.join("activity/last-state.json").exists());
    assert!(
        !f.state.join("activity").exists(),
        "default session state untouched"
    );

    // A session with no activity entry makes no herdr call and no claim.
    let g = Fixture::with_socket("session2", "herdr/sessions/solo/herdr.sock");
    g.write_registration(&registration(&[entry(
        "b",
        KEY_B,
        r#""session":"play","live_activity":{"token":"fedcba9876543210fedc"}"#,
    )]));
    assert!(
        g.run("activity-hook", &event("w1:p2", "blocked"))
            .status
            .success()
    );
    assert!(g.herdr.methods().is_empty());
    assert!(!g.state.join("sessions").exists());
}

#[test]
fn no_live_activity_registration_is_a_free_no_op() {
    let f = host("none");
    f.write_registration(&registration(&[
        entry("a", KEY_A, ""),
        entry(
            "b",
            KEY_A,
            r#""live_activity":{"token":"NOT-HEX-TOKEN-123"}"#,
        ),
    ]));
    let output = f.run("activity-hook", &event("w1:p2", "blocked"));
    assert!(output.status.success());
    assert_eq!(stderr(&output), "");
    assert!(f.herdr.methods().is_empty());
    assert!(f.relay.requests().is_empty());
    assert!(!f.state.join("activity").exists());
}

#[test]
fn bad_input_is_one_line_or_a_silent_no_op() {
    let f = host("badinput");
    f.write_registration(&registration(&[activity_entry("a", KEY_A, TOKEN_A, "")]));
    let output = f.run("activity-hook", "[]");
    assert_eq!(
        stderr(&output),
        "activity-hook: event data.pane_id missing\n"
    );
    assert_eq!(output.status.code(), Some(1));
    let output = run_hook("activity-hook", &[]);
    assert_eq!(
        stderr(&output),
        "activity-hook: HERDR_PLUGIN_CONFIG_DIR is not set; this script must run as a herdr event hook\n"
    );
    for garbage in ["{\"v\":1,\"devices\":[", "\u{feff}{}"] {
        f.write_registration(garbage);
        let output = f.run("activity-hook", &event("w1:p2", "blocked"));
        assert!(output.status.success());
        assert_eq!(f.registration(), garbage);
    }
    assert!(f.relay.requests().is_empty());

    // herdr unreachable after the claim: one line.
    f.write_registration(&registration(&[activity_entry("a", KEY_A, TOKEN_A, "")]));
    let mut env = f.env(&event("w1:p2", "blocked"));
    env.retain(|(k, _)| k != "HERDR_SOCKET_PATH");
    let output = run_hook("activity-hook", &env);
    // The hook hands the event over and succeeds; the worker's failure is
    // the same line in the failure log.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let line = f.failure_text();
    assert!(
        line.starts_with("activity-hook: agent list failed: herdr unreachable: "),
        "{line}"
    );
    assert_eq!(line.lines().count(), 1);
}

#[test]
fn hook_output_matches_the_inventory_vectors() {
    let dir = std::env::var_os("HEELER_VECTORS_DIR").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/heeler-vectors"),
        std::path::PathBuf::from,
    );
    let Ok(text) = std::fs::read_to_string(dir.join("live-activity-content-v1.json")) else {
        common::skip(&format!(
            "live-activity-content-v1.json not found in {}",
            dir.display()
        ));
        return;
    };
    let vectors = json::parse(&text).unwrap();
    let mut checked = 0;
    for vector in vectors.get("valid").unwrap().as_array().unwrap() {
        let Some(inventory) = vector.get("inventory") else {
            continue;
        };
        let f = Fixture::new("vector");
        f.herdr.set_agents(&inventory.to_json());
        let key = vector.get("key").unwrap().as_str().unwrap();
        let pins = vector
            .get("pinned_pane_ids")
            .map_or("null".to_owned(), Value::to_json);
        f.write_registration(&registration(&[activity_entry(
            "a",
            key,
            TOKEN_A,
            &format!(r#","pinned_pane_ids":{pins}"#),
        )]));
        let output = f.run("activity-hook", &event("w1:p1", "working"));
        assert!(output.status.success(), "{}", stderr(&output));
        let body = f.relay.requests()[0].json();
        assert_eq!(body.get("counts"), vector.get("counts"));
        let plaintext = heeler::wire::envelope::open(
            heeler::wire::envelope::Domain::Activity,
            &NotificationKey::from_base64url(key).unwrap(),
            body.get("envelope").unwrap().as_str().unwrap(),
        )
        .unwrap();
        let mut expected = vector.get("payload").unwrap().clone();
        expected.as_object_mut().unwrap().insert(
            "host",
            Value::from(heeler::hooks::activity::short_host_name()),
        );
        assert_eq!(
            String::from_utf8(plaintext).unwrap(),
            expected.to_json_sorted()
        );
        checked += 1;
    }
    assert!(checked >= 2);
    println!(
        "{checked} inventory vectors reproduced through the hook (host name is this machine's)"
    );
}

#[test]
fn a_registration_that_is_a_device_or_a_fifo_never_holds_the_hook() {
    // A FIFO at notifications.json held the hook, and so one of herdr's 32
    // command slots, until something wrote to it; now it is refused at
    // once and counts as absent: no device, no herdr call, no push.
    let f = host("devices");
    let path = f.registration_path();
    for shape in ["/dev/zero", "/dev/urandom", "FIFO"] {
        let _ = std::fs::remove_file(&path);
        if shape == "FIFO" {
            let made = std::process::Command::new("mkfifo")
                .arg(&path)
                .status()
                .unwrap();
            assert!(made.success(), "mkfifo");
        } else {
            std::os::unix::fs::symlink(shape, &path).unwrap();
        }
        let output = common::output_within(
            &mut hook_command("activity-hook", &f.env(&event("w1:p2", "blocked"))),
            std::time::Duration::from_secs(60),
        );
        f.settle();
        assert!(output.status.success(), "{shape}: {output:?}");
        assert_eq!(stderr(&output), "", "{shape}");
        assert_eq!(f.failure_text(), "", "{shape}");
    }
    assert!(f.herdr.methods().is_empty());
    assert!(f.relay.requests().is_empty());
}

//! The smoke test every release binary passes where this machine can run it:
//! `--version`, `heeler accept` enrolling a Device Key against a state dir,
//! a notify hook with nothing to do, and one that delivers a sealed push to
//! the loopback relay stand-in, all with an empty environment (as `env -i`)
//! plus only what herdr or sshd would pass.
//!
//! By default it runs this build's binary. `.ci/static-check` runs it with
//! `HEELER_TEST_BINARY` set to each musl release binary from `cargo xtask
//! dist`, the aarch64 one with `HEELER_TEST_RUNNER=qemu-aarch64-static`
//! (`tests/it/common.rs`).

use crate::common;
use crate::support;

use std::io::Write;
use std::process::{Output, Stdio};

use heeler::pair::bootstrap_key::BootstrapKey;
use heeler::pair::ceremony::{self, CeremonyConfig};
use heeler::wire::envelope::NotificationKey;
use heeler::wire::notification::Notification;
use support::*;

const AGENT_BLOCKED: &str = r#"[{"pane_id":"w1:p1","workspace_id":"w1","tab_id":"w1:t1","agent":"claude","agent_status":"blocked","terminal_title":"Fix the bug","terminal_title_stripped":"Fix the bug","revision":3}]"#;
const WORKSPACES: &str = r#"[{"workspace_id":"w1","number":1,"label":"Heeler","focused":true}]"#;

fn run(args: &[&str], env: &[(String, String)], stdin: &str) -> Output {
    println!("running {} {args:?}", common::describe_under_test());
    let mut child = common::heeler_command()
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let output = child.wait_with_output().unwrap();
    println!(
        "status {:?}, stdout {:?}, stderr {:?}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn version_runs_with_an_empty_environment() {
    let output = run(&["--version"], &[], "");
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("heeler {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn accept_enrolls_a_device_key_and_refuses_an_unknown_pairing() {
    let dir = TempDir::new("smoke-accept");
    let home = dir.path.join("home");
    let state = dir.path.join("state");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let config = CeremonyConfig::new(&home, &state, &common::binary_under_test());
    let ceremony = ceremony::begin(&config).unwrap();
    let device_line = BootstrapKey::from_seed([7; 32]).unwrap().public_line();
    let env = [("HOME".to_owned(), home.display().to_string())];
    let state_arg = state.display().to_string();
    let output = run(
        &[
            "accept",
            "--state-dir",
            &state_arg,
            "--pairing-id",
            ceremony.pairing_id(),
        ],
        &env,
        &format!("{device_line} phone\n"),
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.starts_with("HERDR-ENROLL:OK:SHA256:"), "{stdout}");
    assert!(stdout.ends_with('\n') && stdout.lines().count() == 1);
    let authorized = std::fs::read_to_string(home.join(".ssh/authorized_keys")).unwrap();
    let key_body = device_line.split_whitespace().nth(1).unwrap();
    assert!(authorized.contains(key_body), "{authorized}");
    ceremony.end().unwrap();

    let output = run(
        &[
            "accept",
            "--state-dir",
            &state_arg,
            "--pairing-id",
            "000000000000",
        ],
        &env,
        "",
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(output.stdout, b"HERDR-ENROLL:ERR:unknown_pairing\n");
}

#[test]
fn a_notify_hook_without_a_registration_exits_quietly() {
    let f = Fixture::new("smoke-noop");
    f.herdr.set_agents(AGENT_BLOCKED);
    let output = run(&["notify-hook"], &f.env(&event("w1:p1", "blocked")), "");
    assert!(output.status.success());
    assert_eq!(stderr(&output), "");
    assert!(f.relay.requests().is_empty());
    assert!(
        f.herdr.methods().is_empty(),
        "a cheap exit asks herdr nothing"
    );
}

#[test]
fn a_notify_hook_delivers_a_sealed_push_to_the_relay() {
    let f = Fixture::new("smoke-deliver");
    f.herdr.set_agents(AGENT_BLOCKED);
    f.herdr.set_workspaces(WORKSPACES);
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    let env = f.env(&event("w1:p1", "blocked"));
    let output = run(&["notify-hook"], &env, "");
    assert!(output.status.success(), "{}", stderr(&output));
    // The session's hook worker delivers after the debounce; where no
    // worker can be started (qemu-user without binfmt_misc) the hook
    // delivered before it exited.
    settle_env(&env);
    // Only the fallback may be logged: the worker could not be started.
    let logged = f.failure_text();
    assert!(
        logged.is_empty()
            || logged.lines().all(|line| line
                .starts_with("notify-hook: cannot start the hook worker (")
                && line.ends_with("); the hook serves its queue")),
        "{logged}"
    );
    println!("hook failure log: {logged:?}");
    let requests = f.relay.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("POST", "/push")
    );
    let body = requests[0].json();
    assert_eq!(
        body.get("token").unwrap().as_str(),
        Some("aaaa1111aaaa1111")
    );
    let key = NotificationKey::from_base64url(KEY_A).unwrap();
    let opened = Notification::open(&key, body.get("envelope").unwrap().as_str().unwrap()).unwrap();
    assert_eq!(
        (opened.pane.as_str(), opened.status.as_str()),
        ("w1:p1", "blocked")
    );
    assert_eq!(opened.project.as_deref(), Some("Heeler"));
}

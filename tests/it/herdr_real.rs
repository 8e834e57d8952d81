//! Opt-in: both hooks inside a real, private, headless herdr (0.8 or newer).
//! `#[ignore]`d: set `HEELER_TEST_HERDR` to the herdr binary and run it with
//! `cargo test --test it herdr_real:: -- --ignored`. The recipe is in CONTRIBUTING.md, "Testing against a real
//! herdr".

use crate::common;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use heeler::base::json::{self, Value};
use heeler::wire::envelope::NotificationKey;
use heeler::wire::notification::Notification;
use support::*;

struct Herdr {
    bin: PathBuf,
    root: PathBuf,
    server: Option<Child>,
}

impl Herdr {
    fn command(&self) -> Command {
        let mut command = Command::new(&self.bin);
        command
            .env("XDG_CONFIG_HOME", self.root.join("xdg-config"))
            .env("XDG_STATE_HOME", self.root.join("xdg-state"))
            .env_remove("HERDR_SOCKET_PATH")
            .env_remove("HERDR_SESSION")
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        let output = self.command().args(args).output().unwrap();
        assert!(
            output.status.success(),
            "herdr {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }
}

impl Drop for Herdr {
    fn drop(&mut self) {
        let _ = self.command().args(["server", "stop"]).output();
        if let Some(mut server) = self.server.take() {
            std::thread::sleep(Duration::from_millis(300));
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

fn wait_for(what: &str, deadline: Duration, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn write_plugin(dir: &Path) {
    let heeler = env!("CARGO_BIN_EXE_heeler");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("herdr-plugin.toml"),
        format!(
            r#"id = "heeler"
name = "heeler"
version = "0.8.0"
min_herdr_version = "0.7.5"
platforms = ["linux", "macos"]

[[events]]
on = "pane.agent_status_changed"
command = [{heeler:?}, "notify-hook"]

[[events]]
on = "pane.agent_status_changed"
command = [{heeler:?}, "activity-hook"]
"#
        ),
    )
    .unwrap();
}

#[test]
#[ignore = "needs a herdr binary: set HEELER_TEST_HERDR, run with --ignored"]
fn both_hooks_run_inside_a_real_herdr() {
    let Some(bin) = std::env::var_os("HEELER_TEST_HERDR") else {
        common::skip("HEELER_TEST_HERDR not set");
        return;
    };
    let root = temp_dir("real");
    let mut herdr = Herdr {
        bin: PathBuf::from(bin),
        root: root.to_path_buf(),
        server: None,
    };
    let config_dir = PathBuf::from(
        String::from_utf8(herdr.run(&["plugin", "config-dir", "heeler"]).stdout)
            .unwrap()
            .trim(),
    );
    configure_real_herdr(&config_dir);
    let plugin = root.join("plugin");
    write_plugin(&plugin);
    herdr.run(&["plugin", "link", plugin.to_str().unwrap()]);

    let relay = RelayStandIn::start();
    std::fs::write(
        config_dir.join("notify.json"),
        format!(
            r#"{{"relay_url":"{}","debounce_ms":300,"activity_debounce_ms":0,"retry_delay_ms":10}}"#,
            relay.url
        ),
    )
    .unwrap();
    std::fs::write(
        config_dir.join("notifications.json"),
        registration(&[entry(
            "aaaa1111aaaa1111",
            KEY_A,
            r#""live_activity":{"token":"0123456789abcdef0123"}"#,
        )]),
    )
    .unwrap();

    let log = std::fs::File::create(root.join("server.log")).unwrap();
    herdr.server = Some(
        herdr
            .command()
            .arg("server")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    wait_for("the herdr server", Duration::from_secs(15), || {
        herdr
            .command()
            .args(["status", "server"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("running"))
    });
    let created = herdr.run(&[
        "workspace",
        "create",
        "--cwd",
        "/tmp",
        "--label",
        "e2e",
        "--focus",
    ]);
    let created = json::parse(String::from_utf8(created.stdout).unwrap().trim()).unwrap();
    let pane = created
        .get("result")
        .and_then(|r| r.get("root_pane"))
        .and_then(|p| p.get("pane_id"))
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    for state in ["working", "blocked"] {
        herdr.run(&[
            "pane",
            "report-agent",
            &pane,
            "--source",
            "test:e2e",
            "--agent",
            "claude",
            "--state",
            state,
        ]);
        std::thread::sleep(Duration::from_millis(500));
    }

    let key = NotificationKey::from_base64url(KEY_A).unwrap();
    wait_for("a blocked notification", Duration::from_secs(20), || {
        relay.requests().iter().any(|r| {
            let body = r.json();
            body.get("kind").is_none()
                && body
                    .get("envelope")
                    .and_then(Value::as_str)
                    .and_then(|e| Notification::open(&key, e).ok())
                    .is_some_and(|n| {
                        n.status == "blocked"
                            && n.pane == pane
                            && n.project.as_deref() == Some("e2e")
                    })
        })
    });
    assert!(
        relay
            .requests()
            .iter()
            .any(|r| r.json().get("kind").and_then(Value::as_str) == Some("liveactivity")),
        "the activity hook pushed too"
    );
    let logs = String::from_utf8(
        herdr
            .run(&[
                "plugin", "log", "list", "--plugin", "heeler", "--limit", "50",
            ])
            .stdout,
    )
    .unwrap();
    assert!(
        logs.contains("notify-hook") && logs.contains("activity-hook"),
        "{logs}"
    );
    println!("both hooks ran inside herdr and the relay stand-in got the notification");
}

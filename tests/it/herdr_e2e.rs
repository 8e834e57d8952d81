//! The whole plugin inside a real, private, headless herdr (the recipe is in
//! CONTRIBUTING.md, "Testing against a real herdr"):
//! link a plugin directory holding this manifest and the heeler binary, start
//! the server, and check that the startup hook wrote sidebar.json, that the
//! `pair` action opens the popup (its `heeler pair` process starts), that the
//! `usage` action opens the live usage popup (`heeler usage live`), and that
//! both agent-status hooks run and succeed according to `herdr plugin log list`.
//!
//! Opt-in (`#[ignore]`d): set HEELER_TEST_HERDR to a herdr (>= 0.7.5) binary
//! and run `cargo test --test it herdr_e2e:: -- --ignored`. The heeler
//! binary is HEELER_TEST_BINARY when set (e.g. the static build), else this
//! build's. The server never touches the network or the user's herdr: all of
//! HOME, XDG_CONFIG_HOME and XDG_STATE_HOME point into a temp directory.

use crate::common;
use crate::support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use heeler::base::json::{self, Value};

struct Herdr {
    binary: PathBuf,
    root: PathBuf,
    /// herdr's own config directory (`config/herdr`, or `config/herdr-dev`
    /// for a debug build of herdr), as herdr reports it.
    config_dir: PathBuf,
    server: Option<Child>,
}

impl Herdr {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_STATE_HOME", self.root.join("state"))
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        let output = self.command(args).output().unwrap();
        println!(
            "$ herdr {}\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    fn run_ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(output.status.success(), "herdr {args:?} failed");
        String::from_utf8(output.stdout).unwrap()
    }

    /// Every log record (an object with `command` and `status`) in
    /// `herdr plugin log list --plugin heeler`.
    fn log_records(&self) -> Vec<Value> {
        let output = self.run(&[
            "plugin", "log", "list", "--plugin", "heeler", "--limit", "200",
        ]);
        let text = String::from_utf8_lossy(&output.stdout);
        let Ok(value) = json::parse(text.trim()) else {
            return Vec::new();
        };
        let mut records = Vec::new();
        collect_records(&value, &mut records);
        records
    }
}

fn collect_records(value: &Value, out: &mut Vec<Value>) {
    match value {
        Value::Object(object) => {
            if object.get("command").is_some() && object.get("status").is_some() {
                out.push(value.clone());
            }
            for (_, member) in object.iter() {
                collect_records(member, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_records(item, out)),
        _ => {}
    }
}

fn record_mentions(record: &Value, word: &str) -> bool {
    record
        .get("command")
        .is_some_and(|c| c.to_json().contains(word))
}

impl Drop for Herdr {
    fn drop(&mut self) {
        let _ = self.command(&["server", "stop"]).output();
        if let Some(mut server) = self.server.take() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = server.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("timed out waiting for {what}");
}

/// The plugin directory herdr links: the manifest plus bin/heeler.
fn plugin_dir(root: &Path) -> PathBuf {
    let dir = root.join("plugin");
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in ["herdr-plugin.toml", "install.sh"] {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    let binary = std::env::var_os("HEELER_TEST_BINARY").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_heeler")),
        PathBuf::from,
    );
    crate::support::copy_executable(&binary, dir.join("bin/heeler")).unwrap();
    println!("heeler under test: {}", binary.display());
    dir
}

/// Whether a process runs `bin/heeler <args>` (a popup pane's command).
fn popup_process_running(args: &str) -> bool {
    let Ok(output) = Command::new("ps").args(["-A", "-o", "args="]).output() else {
        return false;
    };
    let command = format!("/bin/heeler {args}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .any(|line| line.trim() == format!(".{command}") || line.ends_with(&command))
}

fn close_popup(socket: &Path) {
    if let Ok(mut stream) = UnixStream::connect(socket) {
        let _ = stream.write_all(b"{\"id\":\"e2e\",\"method\":\"popup.close\",\"params\":{}}\n");
        let mut reply = String::new();
        let _ = stream.read_to_string(&mut reply);
        println!("popup.close: {reply}");
    }
}

#[test]
#[ignore = "needs a herdr binary: set HEELER_TEST_HERDR, run with --ignored"]
fn the_plugin_runs_inside_a_real_headless_herdr() {
    let Some(binary) = std::env::var_os("HEELER_TEST_HERDR") else {
        common::skip("HEELER_TEST_HERDR not set (path to a herdr >= 0.7.5 binary)");
        return;
    };
    // Removed when the test ends; dropped after `herdr`, which stops the
    // server first.
    let root = support::temp_dir("herdr-e2e");
    for dir in ["home", "config", "state"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    let plugin = plugin_dir(&root);
    let mut herdr = Herdr {
        binary: PathBuf::from(binary),
        root: root.to_path_buf(),
        config_dir: PathBuf::new(),
        server: None,
    };
    let plugin_config = PathBuf::from(
        herdr
            .run_ok(&["plugin", "config-dir", "heeler"])
            .trim_end_matches('\n'),
    );
    herdr.config_dir = support::configure_real_herdr(&plugin_config);
    herdr.run_ok(&["--version"]);
    herdr.run_ok(&["plugin", "link", plugin.to_str().unwrap()]);

    let log = std::fs::File::create(root.join("server.log")).unwrap();
    herdr.server = Some(
        herdr
            .command(&["server"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    wait_for("the herdr server", Duration::from_secs(20), || {
        let output = herdr.command(&["status", "server"]).output().unwrap();
        String::from_utf8_lossy(&output.stdout).contains("running")
    });

    // The startup hook writes sidebar.json into the plugin's config dir.
    let sidebar = plugin_config.join("sidebar.json");
    wait_for(
        "the startup hook's sidebar.json",
        Duration::from_secs(10),
        || sidebar.is_file(),
    );
    let snapshot = json::parse(&std::fs::read_to_string(&sidebar).unwrap()).unwrap();
    assert_eq!(snapshot.get("v").and_then(Value::as_i64), Some(1));

    let created = herdr.run_ok(&[
        "workspace",
        "create",
        "--cwd",
        "/tmp",
        "--label",
        "e2e",
        "--focus",
    ]);
    let pane = json::parse(created.trim())
        .unwrap()
        .get("result")
        .and_then(|r| r.get("root_pane"))
        .and_then(|p| p.get("pane_id"))
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();

    // The action opens the popup, whose command is `./bin/heeler pair`.
    herdr.run_ok(&["plugin", "action", "invoke", "heeler.pair"]);
    wait_for(
        "the pairing popup's process",
        Duration::from_secs(10),
        || popup_process_running("pair"),
    );
    close_popup(&herdr.config_dir.join("herdr.sock"));
    wait_for(
        "the pair action to succeed",
        Duration::from_secs(10),
        || {
            herdr.log_records().iter().any(|r| {
                record_mentions(r, "pair-action")
                    && r.get("status").and_then(Value::as_str) == Some("succeeded")
            })
        },
    );

    // `heeler.usage` opens the live usage screen the same way.
    herdr.run_ok(&["plugin", "action", "invoke", "heeler.usage"]);
    wait_for("the usage popup's process", Duration::from_secs(10), || {
        popup_process_running("usage live")
    });
    close_popup(&herdr.config_dir.join("herdr.sock"));
    wait_for(
        "the usage action to succeed",
        Duration::from_secs(10),
        || {
            herdr.log_records().iter().any(|r| {
                record_mentions(r, "live-action")
                    && r.get("status").and_then(Value::as_str) == Some("succeeded")
            })
        },
    );

    for state in ["working", "blocked", "idle"] {
        herdr.run_ok(&[
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
    }
    for hook in ["notify-hook", "activity-hook", "sidebar-hook"] {
        wait_for(hook, Duration::from_secs(30), || {
            let records = herdr.log_records();
            let runs: Vec<&Value> = records
                .iter()
                .filter(|r| record_mentions(r, hook))
                .collect();
            !runs.is_empty()
                && runs
                    .iter()
                    .all(|r| r.get("status").and_then(Value::as_str) != Some("running"))
        });
        let records = herdr.log_records();
        for record in records.iter().filter(|r| record_mentions(r, hook)) {
            assert_eq!(
                record.get("status").and_then(Value::as_str),
                Some("succeeded"),
                "{hook}: {}",
                record.to_json()
            );
        }
    }
}

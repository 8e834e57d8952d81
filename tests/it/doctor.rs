//! `heeler doctor --json` end to end in a temporary HOME: a loopback "SSH
//! server" whose banner we choose, a fake `herdr` on PATH, and plugin config
//! files holding tokens and keys that must never appear in the report.

use std::ffi::OsStr;
use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use heeler::base::json::{self, Value};

use crate::common;

const TOKEN: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
const SECRET_BLOB: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIBootstrapBlobThatMustNotLeak";

/// A loopback TCP server that greets every connection with `banner`.
fn banner_server(banner: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.write_all(banner.as_bytes());
        }
    });
    port
}

fn write_mode(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

struct Home {
    root: PathBuf,
}

impl Home {
    /// A Home whose fake herdr runs the default session and `work`, with
    /// heeler enabled in `work` only when `work_enabled`.
    fn new(name: &str, ssh_port: u16, work_enabled: bool) -> Home {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("doctor-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let home = root.join("home");
        let ssh = home.join(".ssh");
        let config = root.join("config");
        let bin = root.join("bin");
        for dir in [&ssh, &config, &bin] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o700)).unwrap();
        write_mode(
            &ssh.join("authorized_keys"),
            &format!(
                "ssh-ed25519 AAAAphone phone\nrestrict,command=\"x\" ssh-ed25519 {SECRET_BLOB} herdr-pairing:0a1b2c3d4e5f:exp:1000\n"
            ),
            0o600,
        );
        write_mode(
            &config.join("pair.json"),
            &format!("{{\"ssh_port\":{ssh_port}}}"),
            0o600,
        );
        write_mode(&config.join("notify.json"), "{\"debounce_ms\":5000}", 0o600);
        write_mode(
            &config.join("notifications.json"),
            &format!(
                r#"{{"v":1,"devices":[{{"token":"{TOKEN}","key":"{KEY}","env":"production","session":"","notify":{{"blocked":true}},"live_activity":{{"token":"{TOKEN}","env":"production"}}}},{{"token":"{TOKEN}","key":"{KEY}","env":"sandbox","session":"work","notify":{{"done":true}}}}]}}"#
            ),
            0o600,
        );
        let plugin_list = |enabled: bool| {
            r#"{"id":"cli:plugin","result":{"type":"plugin_list","plugins":[{"plugin_id":"heeler","name":"heeler","version":"VERSION","enabled":ENABLED,"source":{"kind":"local"}}]}}"#
                .replace("VERSION", env!("CARGO_PKG_VERSION"))
                .replace("ENABLED", if enabled { "true" } else { "false" })
        };
        let sessions = r#"{"sessions":[{"default":true,"name":"default","running":true},{"default":false,"name":"work","running":true}]}"#;
        write_mode(
            &bin.join("herdr"),
            &format!(
                "#!/bin/sh\ncase \"$*\" in\n\
                 --version) echo 'herdr 0.8.0' ;;\n\
                 'session list --json') echo '{sessions}' ;;\n\
                 '--session default plugin list --json') echo '{}' ;;\n\
                 '--session work plugin list --json') echo '{}' ;;\n\
                 *) echo \"unexpected: $*\" >&2; exit 2 ;;\nesac\n",
                plugin_list(true),
                plugin_list(work_enabled)
            ),
            0o755,
        );
        Home { root }
    }

    /// Runs `heeler doctor --json`; returns (exit code, parsed report, raw stdout).
    fn doctor(&self) -> (i32, Value, String) {
        self.doctor_with(&[])
    }

    fn doctor_with(&self, extra: &[&str]) -> (i32, Value, String) {
        let home = self.root.join("home");
        let config = self.root.join("config");
        self.doctor_in(
            extra,
            &[
                ("HOME", home.as_os_str()),
                ("HERDR_PLUGIN_CONFIG_DIR", config.as_os_str()),
            ],
        )
    }

    /// Runs `heeler doctor --json` with only PATH (the fake herdr first) and
    /// `env` set.
    fn doctor_in(&self, extra: &[&str], env: &[(&str, &OsStr)]) -> (i32, Value, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_heeler"))
            .args(["doctor", "--json"])
            .args(extra)
            .env_clear()
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", self.root.join("bin").display()),
            )
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let stdout = String::from_utf8(output.stdout).unwrap();
        println!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
        let report = json::parse(&stdout).expect("doctor --json prints one JSON object");
        (output.status.code().unwrap(), report, stdout)
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report
        .get("checks")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(id))
        .unwrap_or_else(|| panic!("no check {id}"))
}

fn status<'a>(report: &'a Value, id: &str) -> &'a str {
    check(report, id)
        .get("status")
        .and_then(Value::as_str)
        .unwrap()
}

fn summary<'a>(report: &'a Value, id: &str) -> &'a str {
    check(report, id)
        .get("summary")
        .and_then(Value::as_str)
        .unwrap()
}

fn assert_exit_matches_report(code: i32, report: &Value) {
    let checks = report.get("checks").and_then(Value::as_array).unwrap();
    let failed = checks
        .iter()
        .any(|c| c.get("status").and_then(Value::as_str) == Some("fail"));
    assert_eq!(report.get("ok").and_then(Value::as_bool), Some(!failed));
    assert_eq!(code, if failed { 1 } else { 0 });
    for c in checks {
        let status = c.get("status").and_then(Value::as_str).unwrap();
        assert!(["pass", "warn", "fail"].contains(&status));
        assert_eq!(c.get("fix").is_some(), status != "pass", "{c:?}");
    }
}

#[test]
fn doctor_names_tailscale_ssh_and_never_prints_secrets() {
    let port = banner_server("SSH-2.0-Tailscale\r\n");
    let home = Home::new("tailscale", port, false);
    let (code, report, stdout) = home.doctor();
    assert_exit_matches_report(code, &report);
    assert_eq!(code, 1, "Tailscale SSH on the advertised port is a failure");

    let ids: Vec<&str> = report
        .get("checks")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|c| c.get("id").and_then(Value::as_str).unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "binary",
            "binary_trust",
            "ssh_server",
            "host_keys",
            "ssh_modes",
            "bootstrap_lines",
            "herdr",
            "plugin",
            "pair_json",
            "notify_json",
            "notifications_json"
        ],
        "no relay check without --network"
    );
    assert_eq!(status(&report, "ssh_server"), "fail");
    assert!(summary(&report, "ssh_server").contains("Tailscale SSH answers on port"));
    assert_eq!(status(&report, "ssh_modes"), "pass");
    assert_eq!(status(&report, "bootstrap_lines"), "warn");
    assert!(summary(&report, "bootstrap_lines").starts_with("1 expired"));
    assert_eq!(status(&report, "herdr"), "pass");
    assert!(summary(&report, "herdr").ends_with("is 0.8.0"));
    // Asked per running session: enabled in the default one, not in work.
    assert_eq!(status(&report, "plugin"), "fail");
    assert!(summary(&report, "plugin").contains("enabled in the default session"));
    assert!(summary(&report, "plugin").contains("disabled in session work"));
    assert_eq!(
        check(&report, "plugin").get("fix").and_then(Value::as_str),
        Some("herdr --session work plugin enable heeler")
    );
    assert_eq!(
        summary(&report, "pair_json"),
        format!("pair.json is valid: SSH port {port}")
    );
    assert_eq!(status(&report, "notify_json"), "pass");
    assert_eq!(
        summary(&report, "notifications_json"),
        "notifications.json: default: 1 device(s), 1 with notifications, 1 with Live Activity; \
         session work: 1 device(s), 1 with notifications, 0 with Live Activity"
    );
    for secret in [TOKEN, KEY, SECRET_BLOB, "AAAAphone"] {
        assert!(!stdout.contains(secret), "the report leaked {secret}");
    }
}

#[test]
fn doctor_passes_openssh_and_exits_by_its_report() {
    let port = banner_server("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n");
    let home = Home::new("openssh", port, true);
    let (code, report, _) = home.doctor();
    assert_exit_matches_report(code, &report);
    assert_eq!(status(&report, "ssh_server"), "pass");
    assert!(summary(&report, "ssh_server").starts_with("OpenSSH_9.2p1"));
    // Everything this test controls passes or warns; only the machine's own
    // /etc/ssh host keys can still fail the run.
    for id in [
        "ssh_modes",
        "herdr",
        "plugin",
        "pair_json",
        "notify_json",
        "notifications_json",
    ] {
        assert_eq!(status(&report, id), "pass", "{id}");
    }
    // So can where this build sits: a checkout below a directory another
    // user owns is one `heeler pair` refuses to name in a forced command.
    let host_keys_fail = status(&report, "host_keys") == "fail";
    let binary_fail = status(&report, "binary_trust") == "fail";
    println!("host_keys: {}", summary(&report, "host_keys"));
    println!("binary_trust: {}", summary(&report, "binary_trust"));
    assert_eq!(code, i32::from(host_keys_fail || binary_fail));
}

/// A loopback stand-in for the Push Relay: answers every request like the
/// relay answers `GET /push` (405, `allow: POST`), and records request lines.
fn relay_server() -> (u16, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            loop {
                let mut header = String::new();
                match reader.read_line(&mut header) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if header.trim().is_empty() => break,
                    Ok(_) => {}
                }
            }
            let _ = sender.send(request_line.trim().to_owned());
            let body = "{\"error\":\"method_not_allowed\"}";
            let _ = write!(
                stream,
                "HTTP/1.1 405 Method Not Allowed\r\nallow: POST\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, receiver)
}

#[test]
fn doctor_network_asks_the_relay_with_a_get_only() {
    let port = banner_server("SSH-2.0-OpenSSH_9.2p1\r\n");
    let home = Home::new("relay", port, true);
    let (relay_port, requests) = relay_server();
    let relay = format!("http://127.0.0.1:{relay_port}/");
    write_mode(
        &home.root.join("config/notify.json"),
        &format!("{{\"relay_url\":\"{relay}\"}}"),
        0o600,
    );
    let (code, report, _) = home.doctor();
    assert_exit_matches_report(code, &report);
    assert!(
        report
            .get("checks")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .all(|c| c.get("id").and_then(Value::as_str) != Some("relay")),
        "no network check without --network"
    );
    assert!(requests.try_recv().is_err(), "no request without --network");

    let (code, report, _) = home.doctor_with(&["--network"]);
    assert_exit_matches_report(code, &report);
    assert_eq!(status(&report, "relay"), "pass");
    assert_eq!(
        summary(&report, "relay"),
        format!("http://127.0.0.1:{relay_port} is reachable (GET /push answered 405)")
    );
    // A plain-http relay_url is reported, but only as a warning.
    assert_eq!(status(&report, "notify_json"), "warn");
    let request = requests
        .recv_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    assert_eq!(request, "GET /push HTTP/1.1");
    assert!(requests.try_recv().is_err(), "exactly one request");
}

#[test]
fn doctor_reads_a_bom_pair_json_as_the_popup_does() {
    let port = banner_server("SSH-2.0-OpenSSH_9.2p1\r\n");
    let home = Home::new("bom", port, true);
    write_mode(
        &home.root.join("config/pair.json"),
        &format!("\u{feff}{{\"ssh_port\":{port}}}"),
        0o600,
    );
    let (code, report, _) = home.doctor();
    assert_exit_matches_report(code, &report);
    // The popup strips the BOM and advertises this port, so doctor probes it.
    assert_eq!(status(&report, "ssh_server"), "pass");
    assert_eq!(
        summary(&report, "ssh_server"),
        format!("OpenSSH_9.2p1 answers on 127.0.0.1:{port}")
    );
    assert_eq!(status(&report, "pair_json"), "pass");
    assert_eq!(
        summary(&report, "pair_json"),
        format!("pair.json is valid: SSH port {port}")
    );
}

#[test]
fn doctor_with_an_empty_home_reads_pair_json_under_xdg_config_home() {
    let port = banner_server("SSH-2.0-OpenSSH_9.2p1\r\n");
    let home = Home::new("xdg", port, true);
    // Only XDG_CONFIG_HOME names the config: pair.json with the banner's
    // port lives in herdr's plugin config directory below it.
    let xdg = home.root.join("xdg");
    let config = xdg.join("herdr/plugins/config/heeler");
    std::fs::create_dir_all(&config).unwrap();
    write_mode(
        &config.join("pair.json"),
        &format!("{{\"ssh_port\":{port}}}"),
        0o600,
    );
    let (code, report, _) = home.doctor_in(
        &[],
        &[
            ("HOME", OsStr::new("")),
            ("XDG_CONFIG_HOME", xdg.as_os_str()),
        ],
    );
    assert_exit_matches_report(code, &report);
    assert_eq!(
        summary(&report, "ssh_server"),
        format!("OpenSSH_9.2p1 answers on 127.0.0.1:{port}")
    );
    assert_eq!(
        summary(&report, "pair_json"),
        format!("pair.json is valid: SSH port {port}")
    );
    // An empty HOME falls back to the passwd home: the ~/.ssh checks run.
    let ids: Vec<&str> = report
        .get("checks")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|c| c.get("id").and_then(Value::as_str).unwrap())
        .collect();
    assert!(
        ids.contains(&"ssh_modes") && !ids.contains(&"home"),
        "{ids:?}"
    );
}

#[test]
fn doctor_shows_the_last_hook_failures_with_their_time() {
    let port = banner_server("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n");
    let home = Home::new("hook-failures", port, true);
    let state = home.root.join("home/.local/state/herdr/plugins/heeler");
    for n in 1..=4 {
        heeler::hooks::failure_log::append(
            &state,
            &format!("notify-hook: push for token a1b2c3d4… failed: relay answered 502: {n}"),
        )
        .unwrap();
    }
    let (code, report, stdout) = home.doctor();
    assert_exit_matches_report(code, &report);
    assert_eq!(status(&report, "hook_failures"), "warn");
    let text = summary(&report, "hook_failures");
    let log = state.join("hook-failures.log");
    assert!(
        text.starts_with(&format!("the last 3 in {}: ", log.display())),
        "{text}"
    );
    let shown: Vec<&str> = text.split(" | ").collect();
    assert_eq!(shown.len(), 3, "{text}");
    for (line, n) in shown.iter().zip(2..) {
        let (time, message) = line.rsplit_once(" notify-hook: ").unwrap();
        assert!(
            heeler::usage::time::parse_timestamp(&time[time.len() - 20..]).is_some(),
            "{time}"
        );
        assert_eq!(
            message,
            format!("push for token a1b2c3d4… failed: relay answered 502: {n}")
        );
    }
    assert!(!stdout.contains(TOKEN));
}

#[test]
fn doctor_reports_config_files_that_are_devices_or_fifos_without_reading_them() {
    // A pair.json linked to /dev/zero was read whole (gigabytes of memory)
    // and a FIFO at any config path blocked doctor for good.
    let home = Home::new("devices", banner_server("SSH-2.0-OpenSSH_9.2p1\r\n"), true);
    let config = home.root.join("config");
    for shape in ["/dev/zero", "/dev/urandom", "FIFO"] {
        for name in ["pair.json", "notify.json", "notifications.json"] {
            let path = config.join(name);
            let _ = std::fs::remove_file(&path);
            if shape == "FIFO" {
                let made = Command::new("mkfifo").arg(&path).status().unwrap();
                assert!(made.success(), "mkfifo");
            } else {
                std::os::unix::fs::symlink(shape, &path).unwrap();
            }
        }
        let output = common::output_within(
            Command::new(env!("CARGO_BIN_EXE_heeler"))
                .args(["doctor", "--json"])
                .env_clear()
                .env(
                    "PATH",
                    format!("{}:/usr/bin:/bin", home.root.join("bin").display()),
                )
                .env("HOME", home.root.join("home"))
                .env("HERDR_PLUGIN_CONFIG_DIR", &config),
            std::time::Duration::from_secs(60),
        );
        let report = json::parse(&String::from_utf8(output.stdout).unwrap()).unwrap();
        assert_exit_matches_report(output.status.code().unwrap(), &report);
        let unreadable = |name: &str| {
            format!(
                "{name} could not be read ({} is not a regular file)",
                config.join(name).display()
            )
        };
        assert_eq!(status(&report, "pair_json"), "fail", "{shape}");
        assert_eq!(summary(&report, "pair_json"), unreadable("pair.json"));
        assert_eq!(status(&report, "notify_json"), "warn", "{shape}");
        assert_eq!(
            summary(&report, "notify_json"),
            format!("{}; defaults are used", unreadable("notify.json"))
        );
        assert_eq!(status(&report, "notifications_json"), "fail", "{shape}");
        assert_eq!(
            summary(&report, "notifications_json"),
            unreadable("notifications.json")
        );
    }
}

//! Asks Tailscale whether it serves SSH on this machine's tailnet addresses,
//! so the checklist can warn before a Pairing Code sends the phone to
//! tailscaled on port 22, where Enrollment cannot run.
//!
//! Every probe only ever answers yes: no tailscale, a logged-out daemon, an
//! unexpected output shape or a timeout all mean "not serving", because a
//! false alarm on every pairing would cost more than the warning saves. The
//! parsing and the conflict rule are pure; `probe` runs the commands.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::base::json::{self, Value};

/// Each tailscale command gets this long before it counts as failed.
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_millis(800);

/// The programs tried in order, the first one exiting 0 wins.
pub(crate) const PROGRAMS: [&str; 3] = [
    "tailscale",
    "/Applications/Tailscale.app/Contents/MacOS/Tailscale",
    "/Applications/Tailscale.app/Contents/MacOS/tailscale",
];

/// What Tailscale said: serving SSH, and this node's own addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TailscaleSsh {
    pub enabled: bool,
    /// `Self.TailscaleIPs`, normalised (zone stripped, lowercase).
    pub owned: Vec<String>,
}

/// Whether an address might be a tailnet one: `100.64.0.0/10`, or Tailscale's
/// `fd7a:115c:a1e0` ULA prefix. Only a screen for whether asking is worth a
/// subprocess; the warning itself matches Tailscale's own list.
pub(crate) fn may_be_tailnet(address: &str) -> bool {
    let lower = address.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("fd7a:115c:a1e0") {
        return rest.is_empty() || !rest.starts_with(|c: char| c.is_ascii_alphanumeric());
    }
    let mut parts = lower.split('.');
    match (parts.next(), parts.next()) {
        (Some("100"), Some(second)) => second
            .parse::<u8>()
            .is_ok_and(|b| (64..=127).contains(&b) && lower.parse::<std::net::Ipv4Addr>().is_ok()),
        _ => false,
    }
}

/// Zone stripped, lowercase: how addresses are compared.
pub(crate) fn normalise(address: &str) -> String {
    address
        .split('%')
        .next()
        .unwrap_or(address)
        .to_ascii_lowercase()
}

/// Reads the two outputs (either may be missing) into an answer.
pub(crate) fn interpret(status_json: Option<&str>, prefs_json: Option<&str>) -> TailscaleSsh {
    let status = status_json.and_then(|text| json::parse(text).ok());
    let prefs = prefs_json.and_then(|text| json::parse(text).ok());
    let run_ssh = prefs
        .as_ref()
        .and_then(|p| p.get("RunSSH"))
        .and_then(Value::as_bool)
        == Some(true);
    let node = status.as_ref().and_then(|s| s.get("Self"));
    let host_keys = node
        .and_then(|n| n.get("sshHostKeys"))
        .and_then(Value::as_array)
        .is_some_and(|keys| !keys.is_empty());
    let enabled = run_ssh || host_keys;
    let owned = if enabled {
        node.and_then(|n| n.get("TailscaleIPs"))
            .and_then(Value::as_array)
            .map(|ips| {
                ips.iter()
                    .filter_map(Value::as_str)
                    .map(normalise)
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    TailscaleSsh { enabled, owned }
}

/// The selected addresses Tailscale SSH would answer on port 22. Empty
/// unless SSH is served and the advertised port is exactly 22.
pub(crate) fn conflict(answer: &TailscaleSsh, selected: &[&str], port: u16) -> Vec<String> {
    if !answer.enabled || port != 22 {
        return Vec::new();
    }
    selected
        .iter()
        .filter(|a| answer.owned.contains(&normalise(a)))
        .map(|a| (*a).to_owned())
        .collect()
}

/// The three warning lines for a conflict.
pub fn warning_lines(conflicting: &[String]) -> Vec<String> {
    if conflicting.is_empty() {
        return Vec::new();
    }
    vec![
        format!(
            "Tailscale SSH answers port 22 on {}.",
            conflicting.join(", ")
        ),
        "Pairing there reaches tailscaled, not OpenSSH, and cannot finish.".to_owned(),
        "Set ssh_port in pair.json to a port OpenSSH listens on.".to_owned(),
    ]
}

/// Asks Tailscale: `status --json`, then `debug prefs`.
pub fn probe() -> TailscaleSsh {
    let status = run_first(&["status", "--json"]);
    let prefs = run_first(&["debug", "prefs"]);
    interpret(status.as_deref(), prefs.as_deref())
}

/// The stdout of the first program that exits 0 within the timeout.
fn run_first(args: &[&str]) -> Option<String> {
    PROGRAMS
        .iter()
        .find_map(|program| run_with_timeout(program, args, COMMAND_TIMEOUT))
}

fn run_with_timeout(program: &str, args: &[&str], timeout: Duration) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stdout.read_to_end(&mut text);
        text
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let status = status?;
    if !status.success() {
        return None;
    }
    // The child exited; its stdout closes unless it left a grandchild
    // holding the pipe, which we do not wait for.
    let text = reader.join().ok()?;
    String::from_utf8(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tailnet_screen() {
        for a in [
            "100.64.0.1",
            "100.127.255.255",
            "100.101.1.2",
            "fd7a:115c:a1e0::1",
            "FD7A:115C:A1E0:ab::1",
        ] {
            assert!(may_be_tailnet(a), "{a}");
        }
        for a in [
            "100.63.0.1",
            "100.128.0.1",
            "10.0.0.1",
            "fd7a:115c:a1e01::1",
            "100.100.example.com",
            "fd00::1",
        ] {
            assert!(!may_be_tailnet(a), "{a}");
        }
    }

    #[test]
    fn run_ssh_in_prefs_enables_and_status_gives_addresses() {
        let status = r#"{"Self":{"TailscaleIPs":["100.101.1.2","FD7A:115C:A1E0::9"]}}"#;
        let answer = interpret(Some(status), Some(r#"{"RunSSH":true}"#));
        assert!(answer.enabled);
        assert_eq!(answer.owned, vec!["100.101.1.2", "fd7a:115c:a1e0::9"]);
    }

    #[test]
    fn host_keys_in_status_enable_too() {
        let status =
            r#"{"Self":{"sshHostKeys":["ssh-ed25519 AAAA"],"TailscaleIPs":["100.101.1.2"]}}"#;
        assert!(interpret(Some(status), None).enabled);
        let empty = r#"{"Self":{"sshHostKeys":[],"TailscaleIPs":["100.101.1.2"]}}"#;
        assert!(!interpret(Some(empty), Some(r#"{"RunSSH":false}"#)).enabled);
    }

    #[test]
    fn every_failure_means_not_serving() {
        for (status, prefs) in [
            (None, None),
            (Some("not json"), Some("nope")),
            (Some("[]"), Some(r#"{"RunSSH":"true"}"#)),
            (Some(r#"{"Self":null}"#), Some("[]")),
        ] {
            assert_eq!(interpret(status, prefs), TailscaleSsh::default());
        }
        let readable_prefs_only = interpret(None, Some(r#"{"RunSSH":true}"#));
        assert!(readable_prefs_only.enabled);
        assert!(conflict(&readable_prefs_only, &["100.101.1.2"], 22).is_empty());
    }

    #[test]
    fn conflict_needs_port_22_and_an_owned_selected_address() {
        let answer = TailscaleSsh {
            enabled: true,
            owned: vec!["100.101.1.2".into(), "fd7a:115c:a1e0::9".into()],
        };
        let selected = ["192.168.1.5", "100.101.1.2", "FD7A:115C:A1E0::9"];
        assert_eq!(
            conflict(&answer, &selected, 22),
            vec!["100.101.1.2", "FD7A:115C:A1E0::9"]
        );
        assert!(conflict(&answer, &selected, 2222).is_empty());
        assert!(conflict(&answer, &["100.64.0.1"], 22).is_empty());
        assert_eq!(
            warning_lines(&conflict(&answer, &selected, 22)),
            vec![
                "Tailscale SSH answers port 22 on 100.101.1.2, FD7A:115C:A1E0::9.",
                "Pairing there reaches tailscaled, not OpenSSH, and cannot finish.",
                "Set ssh_port in pair.json to a port OpenSSH listens on.",
            ]
        );
        assert!(warning_lines(&[]).is_empty());
    }

    #[test]
    fn missing_program_is_no_answer() {
        assert_eq!(
            run_with_timeout("/nonexistent/tailscale", &["status"], COMMAND_TIMEOUT),
            None
        );
    }

    #[test]
    fn slow_program_times_out() {
        // sleep would exit 0 with empty output; only the timeout gives None.
        let out = run_with_timeout("/bin/sleep", &["2"], Duration::from_millis(100));
        assert_eq!(out, None);
    }
}

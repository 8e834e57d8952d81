//! `heeler doctor [--json] [--network]`: one command that tells a user why
//! pairing or notifications do not work on this Host.
//!
//! Each check is a pure function from facts (file contents, a banner, a
//! command's output, path metadata) to a [`Check`]: pass, warn or fail, a
//! one-line summary, and for warn/fail a one-line fix. `probe.rs`
//! gathers the facts; [`run`] wires the two and prints the report. The exit
//! status is 0 when nothing failed.
//!
//! What the report never contains: device tokens, Notification Keys, seeds or
//! authorized_keys key blobs. Config files are summarised as counts.

mod probe;
pub mod static_binary;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::base::json::{self, Object, Value};
use crate::cli::DoctorArgs;
use crate::exit::Failure;

/// The oldest herdr with everything the manifest uses ([[startup]]).
pub const MIN_HERDR_VERSION: (u64, u64, u64) = (0, 7, 5);
/// Where the Push Relay lives unless notify.json says otherwise.
pub const DEFAULT_RELAY_URL: &str = "https://heeler-apns.bybee.dev";
const LEGACY_RELAY_URLS: &[&str] = &[
    "https://herdr-push-relay.69709991236.workers.dev",
    "https://herdr-apns.bybee.dev",
];
/// /etc/ssh host keys in the order the pairing popup picks them.
pub const HOST_KEY_FILES: &[&str] = &[
    "ssh_host_ed25519_key.pub",
    "ssh_host_ecdsa_key.pub",
    "ssh_host_rsa_key.pub",
];

/// Ordered from best to worst, so the worst of several is their `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Pass,
    Warn,
    Fail,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub id: &'static str,
    pub status: Status,
    pub summary: String,
    /// What to do; present for warn and fail.
    pub fix: Option<String>,
}

impl Check {
    pub fn pass(id: &'static str, summary: impl Into<String>) -> Check {
        Check {
            id,
            status: Status::Pass,
            summary: summary.into(),
            fix: None,
        }
    }

    pub fn warn(id: &'static str, summary: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            id,
            status: Status::Warn,
            summary: summary.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn fail(id: &'static str, summary: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            id,
            status: Status::Fail,
            summary: summary.into(),
            fix: Some(fix.into()),
        }
    }
}

/// A file as read: absent, unreadable (with the reason), or its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRead {
    Missing,
    Unreadable(String),
    Text(String),
}

// --- SSH server ----------------------------------------------------------------

/// The SSH port the Pairing Code advertises: pair.json's `ssh_port` when it is
/// an integer 1..65535, else 22 (the pairing popup's rule).
pub fn advertised_port(pair_json: &FileRead) -> u16 {
    let FileRead::Text(text) = pair_json else {
        return 22;
    };
    json::parse(text)
        .ok()
        .and_then(|value| value.get("ssh_port").and_then(Value::as_i64))
        .and_then(|port| u16::try_from(port).ok())
        .filter(|port| *port >= 1)
        .unwrap_or(22)
}

/// Classify what answered on 127.0.0.1:<port>: the first banner line, or why
/// none came.
pub fn check_ssh_server(port: u16, banner: &Result<String, String>) -> Check {
    const ID: &str = "ssh_server";
    let start_fix = format!(
        "start OpenSSH on port {port} (Linux: sudo systemctl enable --now ssh; macOS: System Settings > General > Sharing > Remote Login), or set ssh_port in pair.json to its port"
    );
    match banner {
        Err(reason) => Check::fail(
            ID,
            format!("no SSH server answers on 127.0.0.1:{port} ({reason})"),
            start_fix,
        ),
        Ok(line) if line.starts_with("SSH-2.0-Tailscale") => Check::fail(
            ID,
            format!(
                "Tailscale SSH answers on port {port}, not OpenSSH; enrollment needs OpenSSH's forced command"
            ),
            format!(
                "turn Tailscale SSH off (tailscale set --ssh=false) or run OpenSSH on another port and set ssh_port in pair.json (now {port})"
            ),
        ),
        Ok(line) if line.starts_with("SSH-2.0-OpenSSH") => {
            let software = line.trim_start_matches("SSH-2.0-");
            Check::pass(ID, format!("{software} answers on 127.0.0.1:{port}"))
        }
        Ok(line) if line.starts_with("SSH-") => Check::warn(
            ID,
            format!(
                "an SSH server that is not OpenSSH answers on port {port} ({})",
                printable(line)
            ),
            "pairing needs OpenSSH (authorized_keys forced commands); use OpenSSH or set ssh_port in pair.json to its port",
        ),
        Ok(line) => Check::fail(
            ID,
            format!(
                "port {port} answers, but not with SSH ({})",
                printable(line)
            ),
            start_fix,
        ),
    }
}

/// At most 60 printable ASCII characters of a peer's line, for the report.
fn printable(line: &str) -> String {
    line.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(60)
        .collect()
}

// --- host keys -----------------------------------------------------------------

/// The first readable /etc/ssh host key, parsed as the pairing popup does; its
/// SHA-256 fingerprint is what the Pairing Code pins.
pub fn check_host_keys(candidates: &[(PathBuf, FileRead)]) -> Check {
    const ID: &str = "host_keys";
    for (path, read) in candidates {
        let FileRead::Text(text) = read else {
            continue;
        };
        let mut words = text.split_whitespace();
        let (Some(kind), Some(blob)) = (words.next(), words.next()) else {
            return Check::fail(
                ID,
                format!("{} is not an OpenSSH public key", path.display()),
                "regenerate the host keys: sudo ssh-keygen -A",
            );
        };
        let decoded = crate::base::base64::decode_standard(blob);
        match decoded {
            Ok(bytes) if kind.starts_with("ssh-") || kind.starts_with("ecdsa-") => {
                let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
                let fingerprint = crate::base::base64::encode_standard_unpadded(digest.as_ref());
                return Check::pass(
                    ID,
                    format!("{} ({kind}) SHA256:{fingerprint}", path.display()),
                );
            }
            _ => {
                return Check::fail(
                    ID,
                    format!("{} is not an OpenSSH public key", path.display()),
                    "regenerate the host keys: sudo ssh-keygen -A",
                );
            }
        }
    }
    let unreadable: Vec<String> = candidates
        .iter()
        .filter_map(|(path, read)| match read {
            FileRead::Unreadable(why) => Some(format!("{}: {why}", path.display())),
            _ => None,
        })
        .collect();
    let summary = if unreadable.is_empty() {
        "no ssh_host_{ed25519,ecdsa,rsa}_key.pub under /etc/ssh".to_owned()
    } else {
        format!("no readable host key ({})", unreadable.join("; "))
    };
    Check::fail(ID, summary, "generate the host keys: sudo ssh-keygen -A")
}

// --- ~/.ssh modes ----------------------------------------------------------------

/// What sshd's StrictModes looks at for one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathFacts {
    pub path: PathBuf,
    /// None when the path does not exist.
    pub kind: Option<PathKind>,
    pub uid: u32,
    pub mode: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    File,
    Directory,
    Other,
}

/// sshd (StrictModes yes, the default) ignores authorized_keys when it, ~/.ssh
/// or the home directory is owned by someone other than the user or root, or
/// is writable by group or others.
pub fn check_ssh_modes(
    user_uid: u32,
    home: &PathFacts,
    ssh_dir: &PathFacts,
    authorized_keys: &PathFacts,
) -> Check {
    const ID: &str = "ssh_modes";
    let mut problems = Vec::new();
    let mut fixes = Vec::new();
    for (facts, want, chmod) in [
        (home, PathKind::Directory, "go-w"),
        (ssh_dir, PathKind::Directory, "700"),
        (authorized_keys, PathKind::File, "600"),
    ] {
        let Some(kind) = facts.kind else { continue };
        let shown = facts.path.display();
        if kind != want {
            problems.push(format!(
                "{shown} is not a {}",
                match want {
                    PathKind::Directory => "directory",
                    _ => "regular file",
                }
            ));
            fixes.push(format!("replace {shown}"));
            continue;
        }
        if facts.uid != user_uid && facts.uid != 0 {
            problems.push(format!("{shown} is owned by uid {}", facts.uid));
            fixes.push(format!("chown {user_uid} {shown}"));
        }
        if facts.mode & 0o022 != 0 {
            problems.push(format!(
                "{shown} is group/world-writable ({:04o})",
                facts.mode & 0o7777
            ));
            fixes.push(format!("chmod {chmod} {shown}"));
        }
    }
    if !problems.is_empty() {
        return Check::fail(
            ID,
            format!(
                "sshd's StrictModes would ignore authorized_keys: {}",
                problems.join("; ")
            ),
            fixes.join(" && "),
        );
    }
    match (ssh_dir.kind, authorized_keys.kind) {
        (None, _) => Check::pass(
            ID,
            format!(
                "{} does not exist yet; pairing creates it with mode 0700",
                ssh_dir.path.display()
            ),
        ),
        (Some(_), None) => Check::pass(
            ID,
            format!(
                "{} ({:04o}) is fine; authorized_keys does not exist yet",
                ssh_dir.path.display(),
                ssh_dir.mode & 0o7777
            ),
        ),
        (Some(_), Some(_)) => Check::pass(
            ID,
            format!(
                "{} ({:04o}) and authorized_keys ({:04o}) pass sshd's StrictModes",
                ssh_dir.path.display(),
                ssh_dir.mode & 0o7777,
                authorized_keys.mode & 0o7777
            ),
        ),
    }
}

// --- leftover bootstrap lines ---------------------------------------------------------

/// The pairing id and expiry of a line that ends with the Bootstrap Key marker
/// `herdr-pairing:<id>:exp:<unix>` (preceded by start of line or whitespace).
pub fn bootstrap_marker(line: &str) -> Option<(&str, u64)> {
    let start = line.rfind("herdr-pairing:")?;
    if start > 0 && !line[..start].ends_with([' ', '\t']) {
        return None;
    }
    let rest = &line[start + "herdr-pairing:".len()..];
    let (id, exp) = rest.split_once(":exp:")?;
    let id_ok = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let exp_ok = !exp.is_empty() && exp.chars().all(|c| c.is_ascii_digit());
    if !id_ok || !exp_ok {
        return None;
    }
    Some((id, exp.parse().ok()?))
}

pub fn check_bootstrap_lines(authorized_keys: &FileRead, now_unix: u64) -> Check {
    const ID: &str = "bootstrap_lines";
    let text = match authorized_keys {
        FileRead::Missing => return Check::pass(ID, "no authorized_keys, so no bootstrap lines"),
        FileRead::Unreadable(why) => {
            return Check::warn(
                ID,
                format!("authorized_keys could not be read ({why})"),
                "make ~/.ssh/authorized_keys readable by its owner",
            );
        }
        FileRead::Text(text) => text,
    };
    let (mut expired, mut live) = (0usize, 0usize);
    for line in text.split('\n') {
        if let Some((_, exp)) = bootstrap_marker(line) {
            if exp <= now_unix {
                expired += 1;
            } else {
                live += 1;
            }
        }
    }
    match (expired, live) {
        (0, 0) => Check::pass(ID, "no Bootstrap Key lines in authorized_keys"),
        (0, live) => Check::pass(
            ID,
            format!("{live} unexpired Bootstrap Key line(s): a pairing is in progress"),
        ),
        (expired, _) => Check::warn(
            ID,
            format!("{expired} expired Bootstrap Key line(s) left in authorized_keys"),
            "open the pairing popup once (herdr plugin action invoke heeler.pair), which sweeps them, or delete the lines ending in herdr-pairing:<id>:exp:<time>",
        ),
    }
}

// --- herdr --------------------------------------------------------------------------

/// `X.Y.Z` from `herdr --version` output such as `herdr 0.8.0`.
pub fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    text.split_whitespace().find_map(|word| {
        let word = word.trim_start_matches('v');
        let core = word.split(['-', '+']).next()?;
        let mut parts = core.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = parts.next()?.parse().ok()?;
        parts.next().is_none().then_some((major, minor, patch))
    })
}

pub fn check_herdr(found: Option<&Path>, version_output: &Result<String, String>) -> Check {
    const ID: &str = "herdr";
    let (a, b, c) = MIN_HERDR_VERSION;
    let Some(path) = found else {
        return Check::fail(
            ID,
            "herdr is not on PATH (and HERDR_BIN_PATH is not set)",
            format!("install herdr {a}.{b}.{c} or newer and put it on PATH"),
        );
    };
    let output = match version_output {
        Ok(output) => output,
        Err(why) => {
            return Check::fail(
                ID,
                format!("{} --version failed ({why})", path.display()),
                "reinstall herdr",
            );
        }
    };
    match parse_version(output) {
        Some(version) if version >= MIN_HERDR_VERSION => Check::pass(
            ID,
            format!(
                "{} is {}.{}.{}",
                path.display(),
                version.0,
                version.1,
                version.2
            ),
        ),
        Some(version) => Check::fail(
            ID,
            format!(
                "{} is {}.{}.{}; heeler needs {a}.{b}.{c} or newer",
                path.display(),
                version.0,
                version.1,
                version.2
            ),
            format!("update herdr to {a}.{b}.{c} or newer"),
        ),
        None => Check::warn(
            ID,
            format!(
                "{} printed no version ({})",
                path.display(),
                printable(output)
            ),
            "check that this is herdr: herdr --version",
        ),
    }
}

/// heeler's entry in `herdr plugin list --json`: installed, enabled, version.
pub fn check_plugin(
    list_output: &Result<String, String>,
    own_version: &str,
    session: &str,
) -> Check {
    const ID: &str = "plugin";
    let default = session.is_empty() || session == "default";
    let enable = if default {
        "herdr plugin enable heeler".to_owned()
    } else {
        format!("herdr --session {session} plugin enable heeler")
    };
    let where_ = if default {
        "the default session".to_owned()
    } else {
        format!("session {session}")
    };
    let text = match list_output {
        Ok(text) => text,
        Err(why) => {
            return Check::warn(
                ID,
                format!("could not list herdr plugins ({why})"),
                "run herdr plugin list --plugin heeler by hand (start herdr first if it needs a running session)",
            );
        }
    };
    let Ok(value) = json::parse(text) else {
        return Check::warn(
            ID,
            "herdr plugin list --json printed something that is not JSON",
            "run herdr plugin list --plugin heeler by hand",
        );
    };
    let plugins = value
        .get("result")
        .and_then(|r| r.get("plugins"))
        .or_else(|| value.get("plugins"))
        .and_then(Value::as_array)
        .unwrap_or_default();
    let Some(entry) = plugins
        .iter()
        .find(|p| p.get("plugin_id").and_then(Value::as_str) == Some("heeler"))
    else {
        return Check::fail(
            ID,
            "heeler is not installed in herdr",
            "herdr plugin install <owner>/<repo> --yes (or, in a checkout: sh install.sh --from-source && herdr plugin link .)",
        );
    };
    let installed_version = entry.get("version").and_then(Value::as_str).unwrap_or("?");
    let source = entry
        .get("source")
        .and_then(|s| s.get("kind"))
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    if entry.get("enabled").and_then(Value::as_bool) == Some(false) {
        return Check::fail(
            ID,
            format!("heeler {installed_version} ({source}) is installed but disabled in {where_}"),
            enable,
        );
    }
    if installed_version != own_version {
        return Check::warn(
            ID,
            format!(
                "herdr has heeler {installed_version} ({source}) but this binary is {own_version}"
            ),
            "reinstall the plugin so its manifest and binary match: herdr plugin install <owner>/<repo> --yes",
        );
    }
    Check::pass(
        ID,
        format!("heeler {installed_version} ({source}) is installed and enabled in {where_}"),
    )
}

/// The names of the running herdr sessions in `herdr session list --json`
/// (`default` for the default session).
pub fn running_sessions(session_list: &str) -> Vec<String> {
    let Ok(value) = json::parse(session_list) else {
        return Vec::new();
    };
    value
        .get("sessions")
        .and_then(Value::as_array)
        .unwrap_or_default()
        .iter()
        .filter(|s| s.get("running").and_then(Value::as_bool) == Some(true))
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .filter(|name| crate::herdr::session::is_valid_name(name))
        .map(str::to_owned)
        .collect()
}

/// The plugin in every running session (each session's `plugin list`): the
/// worst status wins; each session's summary and fix are kept.
pub fn check_plugin_sessions(
    lists: &[(String, Result<String, String>)],
    own_version: &str,
) -> Check {
    let mut checks: Vec<Check> = lists
        .iter()
        .map(|(session, list)| check_plugin(list, own_version, session))
        .collect();
    if checks.len() <= 1 {
        return checks.pop().unwrap_or_else(|| {
            check_plugin(&Err("no herdr session to ask".to_owned()), own_version, "")
        });
    }
    let worst = checks
        .iter()
        .map(|c| c.status)
        .max()
        .unwrap_or(Status::Pass);
    let summary = checks
        .iter()
        .map(|c| c.summary.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let mut fixes: Vec<&str> = checks.iter().filter_map(|c| c.fix.as_deref()).collect();
    fixes.dedup();
    Check {
        id: "plugin",
        status: worst,
        summary,
        fix: (!fixes.is_empty()).then(|| fixes.join("; ")),
    }
}

// --- config files ---------------------------------------------------------------------

pub fn check_pair_json(read: &FileRead) -> Check {
    const ID: &str = "pair_json";
    let text = match read {
        FileRead::Missing => return Check::pass(ID, "pair.json absent: SSH port 22"),
        FileRead::Unreadable(why) => {
            return Check::fail(
                ID,
                format!("pair.json could not be read ({why})"),
                "make pair.json readable, or delete it to use port 22",
            );
        }
        FileRead::Text(text) => text,
    };
    let Ok(value) = json::parse(text) else {
        return Check::fail(
            ID,
            "pair.json is not valid JSON",
            "fix pair.json, or delete it to use port 22",
        );
    };
    let Some(object) = value.as_object() else {
        return Check::fail(
            ID,
            "pair.json is not a JSON object",
            "make pair.json an object such as {\"ssh_port\": 22}",
        );
    };
    match object.get("ssh_port") {
        None => Check::pass(ID, "pair.json is valid: SSH port 22"),
        Some(port) => match port.as_i64().filter(|p| (1..=65535).contains(p)) {
            Some(port) => Check::pass(ID, format!("pair.json is valid: SSH port {port}")),
            None => Check::warn(
                ID,
                format!(
                    "pair.json ssh_port {} is not an integer 1..65535; port 22 is used",
                    port.to_json()
                ),
                "set ssh_port to the port OpenSSH listens on",
            ),
        },
    }
}

/// The relay URL notify.json selects (trimmed, trailing `/` dropped, legacy
/// and empty values mapped to the default).
pub fn relay_url(notify_json: &FileRead) -> String {
    let configured = match notify_json {
        FileRead::Text(text) => json::parse(text).ok().and_then(|v| {
            v.get("relay_url")
                .and_then(Value::as_str)
                .map(str::to_owned)
        }),
        _ => None,
    };
    let trimmed = configured
        .as_deref()
        .unwrap_or("")
        .trim()
        .trim_end_matches('/');
    if trimmed.is_empty() || LEGACY_RELAY_URLS.contains(&trimmed) {
        DEFAULT_RELAY_URL.to_owned()
    } else {
        trimmed.to_owned()
    }
}

pub fn check_notify_json(read: &FileRead) -> Check {
    const ID: &str = "notify_json";
    match read {
        FileRead::Missing => {
            Check::pass(ID, format!("notify.json absent: relay {DEFAULT_RELAY_URL}"))
        }
        FileRead::Unreadable(why) => Check::warn(
            ID,
            format!("notify.json could not be read ({why}); defaults are used"),
            "make notify.json readable or delete it",
        ),
        FileRead::Text(text) => match json::parse(text) {
            Ok(Value::Object(_)) => {
                let url = relay_url(read);
                if url.starts_with("https://") {
                    Check::pass(ID, format!("notify.json is valid: relay {url}"))
                } else {
                    Check::warn(
                        ID,
                        format!("notify.json relay_url {url} is not https"),
                        "set relay_url to an https:// URL or remove it to use the default",
                    )
                }
            }
            _ => Check::warn(
                ID,
                "notify.json is not a valid JSON object; defaults are used",
                "fix notify.json or delete it",
            ),
        },
    }
}

/// notifications.json (written by the app over SSH): device counts per
/// session, never tokens or keys.
pub fn check_notifications_json(read: &FileRead) -> Check {
    const ID: &str = "notifications_json";
    let fix_by_app = "in the Heeler app, turn Notifications for this Host off and on again; it rewrites the file";
    let text = match read {
        FileRead::Missing => {
            return Check::warn(
                ID,
                "notifications.json absent: no device receives notifications from this Host",
                "in the Heeler app, enable Notifications for this Host",
            );
        }
        FileRead::Unreadable(why) => {
            return Check::fail(
                ID,
                format!("notifications.json could not be read ({why})"),
                fix_by_app,
            );
        }
        FileRead::Text(text) => text,
    };
    let Ok(value) = json::parse(text) else {
        return Check::fail(ID, "notifications.json is not valid JSON", fix_by_app);
    };
    if value.get("v").and_then(Value::as_i64) != Some(1) {
        return Check::fail(
            ID,
            "notifications.json is not version 1 (\"v\": 1)",
            fix_by_app,
        );
    }
    let Some(devices) = value.get("devices").and_then(Value::as_array) else {
        return Check::fail(ID, "notifications.json has no devices array", fix_by_app);
    };
    // session label -> (devices, with notifications, with Live Activity)
    let mut sessions: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut malformed = 0usize;
    for device in devices {
        let token_ok = device
            .get("token")
            .and_then(Value::as_nonempty_str)
            .is_some();
        let key_ok = device
            .get("key")
            .and_then(Value::as_str)
            .and_then(|key| crate::base::base64::decode_url(key).ok())
            .is_some_and(|bytes| bytes.len() == 32);
        if device.as_object().is_none() || !token_ok || !key_ok {
            malformed += 1;
            continue;
        }
        let label = match device.get("session") {
            Some(Value::String(name)) if name.is_empty() => "default".to_owned(),
            Some(Value::String(name)) => format!("session {}", printable(name)),
            _ => "every session (legacy)".to_owned(),
        };
        let notify = device
            .get("notify")
            .and_then(Value::as_object)
            .is_some_and(|flags| flags.iter().any(|(_, on)| on.as_bool() == Some(true)));
        let activity = device
            .get("live_activity")
            .and_then(Value::as_object)
            .is_some();
        let counts = sessions.entry(label).or_default();
        counts.0 += 1;
        counts.1 += usize::from(notify);
        counts.2 += usize::from(activity);
    }
    let summary: Vec<String> = sessions
        .iter()
        .map(|(label, (all, notify, activity))| {
            format!("{label}: {all} device(s), {notify} with notifications, {activity} with Live Activity")
        })
        .collect();
    let summary = if summary.is_empty() {
        "no devices".to_owned()
    } else {
        summary.join("; ")
    };
    if malformed > 0 {
        return Check::warn(
            ID,
            format!(
                "notifications.json: {summary}; {malformed} malformed device entr(y/ies) skipped"
            ),
            fix_by_app,
        );
    }
    if sessions.is_empty() {
        return Check::warn(
            ID,
            "notifications.json has no devices",
            "in the Heeler app, enable Notifications for this Host",
        );
    }
    Check::pass(ID, format!("notifications.json: {summary}"))
}

// --- relay -------------------------------------------------------------------------------

/// The relay answers `GET /push` with 405 (it only takes POST): reachable,
/// without sending anything to a device.
pub fn check_relay(url: &str, status: &Result<u16, String>) -> Check {
    const ID: &str = "relay";
    match status {
        Ok(405) => Check::pass(ID, format!("{url} is reachable (GET /push answered 405)")),
        Ok(code) => Check::warn(
            ID,
            format!("{url}/push answered HTTP {code}, not the relay's 405"),
            "check relay_url in notify.json (remove it to use the default relay)",
        ),
        Err(why) => Check::fail(
            ID,
            format!("{url} is not reachable ({why})"),
            "check the network, DNS and any https_proxy; or relay_url in notify.json",
        ),
    }
}

// --- the binary ----------------------------------------------------------------------

pub fn check_binary(
    os: &str,
    path: &Path,
    has_interpreter: &Result<bool, String>,
    version: &str,
) -> Check {
    const ID: &str = "binary";
    let shown = path.display();
    if os != "linux" {
        return Check::pass(
            ID,
            format!(
                "heeler {version} at {shown} ({os} binaries link the system library dynamically by design)"
            ),
        );
    }
    match has_interpreter {
        Ok(false) => Check::pass(
            ID,
            format!("heeler {version} at {shown} is statically linked"),
        ),
        Ok(true) => Check::warn(
            ID,
            format!("heeler {version} at {shown} is dynamically linked (a development build?)"),
            "install the static release binary: sh install.sh in the plugin checkout",
        ),
        Err(why) => Check::warn(
            ID,
            format!("heeler {version} at {shown}: could not read its ELF headers ({why})"),
            "reinstall: sh install.sh in the plugin checkout",
        ),
    }
}

// --- the report --------------------------------------------------------------------------

pub fn any_failed(checks: &[Check]) -> bool {
    checks.iter().any(|c| c.status == Status::Fail)
}

pub fn render_text(checks: &[Check]) -> String {
    let mut out = String::new();
    for check in checks {
        out.push_str(&format!(
            "[{}] {}: {}\n",
            check.status.label().to_uppercase(),
            check.id,
            check.summary
        ));
        if let Some(fix) = &check.fix {
            out.push_str(&format!("       fix: {fix}\n"));
        }
    }
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    let warned = checks.iter().filter(|c| c.status == Status::Warn).count();
    out.push_str(&format!(
        "{} checks: {} passed, {warned} warned, {failed} failed\n",
        checks.len(),
        checks.len() - failed - warned
    ));
    out
}

pub fn render_json(checks: &[Check], version: &str) -> String {
    let list: Vec<Value> = checks
        .iter()
        .map(|check| {
            let mut object = Object::new()
                .with("id", check.id)
                .with("status", check.status.label())
                .with("summary", check.summary.as_str());
            if let Some(fix) = &check.fix {
                object.insert("fix", Value::from(fix.as_str()));
            }
            Value::Object(object)
        })
        .collect();
    Value::Object(
        Object::new()
            .with("version", version)
            .with("ok", !any_failed(checks))
            .with("checks", list),
    )
    .to_json()
}

// --- the command ------------------------------------------------------------------------

pub fn run(args: DoctorArgs) -> Result<(), Failure> {
    let version = env!("CARGO_PKG_VERSION");
    let facts = probe::Facts::gather(args.network);
    let mut checks = vec![
        check_binary(
            std::env::consts::OS,
            &facts.exe,
            &facts.exe_has_interpreter,
            version,
        ),
        check_ssh_server(facts.ssh_port, &facts.ssh_banner),
        check_host_keys(&facts.host_keys),
        check_ssh_modes(
            facts.uid,
            &facts.home,
            &facts.ssh_dir,
            &facts.authorized_keys_facts,
        ),
        check_bootstrap_lines(&facts.authorized_keys, facts.now_unix),
        check_herdr(facts.herdr.as_deref(), &facts.herdr_version),
        check_plugin_sessions(&facts.plugin_lists, version),
        check_pair_json(&facts.pair_json),
        check_notify_json(&facts.notify_json),
        check_notifications_json(&facts.notifications_json),
    ];
    if let Some(relay) = &facts.relay {
        checks.push(check_relay(&relay_url(&facts.notify_json), relay));
    }
    if args.json {
        println!("{}", render_json(&checks, version));
    } else {
        println!("heeler doctor (config: {})", facts.config_dir.display());
        print!("{}", render_text(&checks));
    }
    if any_failed(&checks) {
        Err(Failure::new(
            "heeler doctor: some checks failed (see fix: lines)",
            1,
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> FileRead {
        FileRead::Text(s.to_owned())
    }

    fn facts(path: &str, kind: Option<PathKind>, uid: u32, mode: u32) -> PathFacts {
        PathFacts {
            path: PathBuf::from(path),
            kind,
            uid,
            mode,
        }
    }

    #[test]
    fn advertised_port_follows_pair_json() {
        assert_eq!(advertised_port(&FileRead::Missing), 22);
        assert_eq!(advertised_port(&text("{\"ssh_port\":2222}")), 2222);
        assert_eq!(advertised_port(&text("{\"ssh_port\":2222.0}")), 2222);
        for bad in [
            "{\"ssh_port\":0}",
            "{\"ssh_port\":65536}",
            "{\"ssh_port\":\"22\"}",
            "[]",
            "{",
        ] {
            assert_eq!(advertised_port(&text(bad)), 22, "{bad}");
        }
    }

    #[test]
    fn ssh_banners_are_classified() {
        let openssh = check_ssh_server(22, &Ok("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3".into()));
        assert_eq!(openssh.status, Status::Pass);
        assert!(openssh.summary.contains("OpenSSH_9.2p1"));

        let tailscale = check_ssh_server(22, &Ok("SSH-2.0-Tailscale".into()));
        assert_eq!(tailscale.status, Status::Fail);
        assert!(tailscale.summary.contains("Tailscale SSH"));
        assert!(tailscale.fix.unwrap().contains("ssh_port"));

        let dropbear = check_ssh_server(2222, &Ok("SSH-2.0-dropbear_2022.83".into()));
        assert_eq!(dropbear.status, Status::Warn);

        let http = check_ssh_server(8080, &Ok("HTTP/1.1 400 Bad Request".into()));
        assert_eq!(http.status, Status::Fail);
        assert!(http.summary.contains("not with SSH"));

        let refused = check_ssh_server(22, &Err("connection refused".into()));
        assert_eq!(refused.status, Status::Fail);
        assert!(refused.fix.unwrap().contains("Remote Login"));
    }

    #[test]
    fn host_key_fingerprint_matches_ssh_keygen() {
        // `ssh-keygen -lf` of this key prints
        // 256 SHA256:HkyxQAhtVSGIP6RoalJXeBTOriq8IuHIOdMHkLDFRLY root@host (ED25519)
        let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHbwd/9sGXkY0u6tt8f3EOO9Ul5pvWW6bIdVyF2bl+sU root@host\n";
        let expected = "HkyxQAhtVSGIP6RoalJXeBTOriq8IuHIOdMHkLDFRLY";
        let check = check_host_keys(&[
            (
                PathBuf::from("/etc/ssh/ssh_host_ed25519_key.pub"),
                FileRead::Missing,
            ),
            (PathBuf::from("/etc/ssh/ssh_host_ecdsa_key.pub"), text(key)),
            (
                PathBuf::from("/etc/ssh/ssh_host_rsa_key.pub"),
                text("garbage"),
            ),
        ]);
        assert_eq!(check.status, Status::Pass);
        assert!(check.summary.contains("ssh_host_ecdsa_key.pub"));
        assert!(
            check.summary.ends_with(&format!("SHA256:{expected}")),
            "{}",
            check.summary
        );
    }

    #[test]
    fn host_keys_missing_or_garbage_fail_with_ssh_keygen_a() {
        let none = check_host_keys(&[
            (
                PathBuf::from("/etc/ssh/ssh_host_ed25519_key.pub"),
                FileRead::Missing,
            ),
            (
                PathBuf::from("/etc/ssh/ssh_host_rsa_key.pub"),
                FileRead::Unreadable("Permission denied".into()),
            ),
        ]);
        assert_eq!(none.status, Status::Fail);
        assert!(none.summary.contains("Permission denied"));
        assert!(none.fix.unwrap().contains("ssh-keygen -A"));
        // The first readable file wins, even when it is garbage (as the popup does).
        let garbage = check_host_keys(&[
            (
                PathBuf::from("/etc/ssh/ssh_host_ed25519_key.pub"),
                text("not-a-key AAAA"),
            ),
            (
                PathBuf::from("/etc/ssh/ssh_host_rsa_key.pub"),
                text("ssh-rsa AAAAB3NzaC1yc2E="),
            ),
        ]);
        assert_eq!(garbage.status, Status::Fail);
    }

    #[test]
    fn strict_modes_are_checked_on_home_ssh_and_authorized_keys() {
        let home = facts("/home/u", Some(PathKind::Directory), 1000, 0o40755);
        let ssh = facts("/home/u/.ssh", Some(PathKind::Directory), 1000, 0o40700);
        let keys = facts(
            "/home/u/.ssh/authorized_keys",
            Some(PathKind::File),
            1000,
            0o100600,
        );
        assert_eq!(
            check_ssh_modes(1000, &home, &ssh, &keys).status,
            Status::Pass
        );

        let root_owned_home = facts("/home/u", Some(PathKind::Directory), 0, 0o40755);
        assert_eq!(
            check_ssh_modes(1000, &root_owned_home, &ssh, &keys).status,
            Status::Pass
        );

        let writable_ssh = facts("/home/u/.ssh", Some(PathKind::Directory), 1000, 0o40775);
        let check = check_ssh_modes(1000, &home, &writable_ssh, &keys);
        assert_eq!(check.status, Status::Fail);
        assert!(check.fix.unwrap().contains("chmod 700 /home/u/.ssh"));

        let foreign_keys = facts(
            "/home/u/.ssh/authorized_keys",
            Some(PathKind::File),
            1001,
            0o100644,
        );
        let check = check_ssh_modes(1000, &home, &ssh, &foreign_keys);
        assert_eq!(check.status, Status::Fail);
        assert!(check.summary.contains("owned by uid 1001"));

        let world_writable_home = facts("/home/u", Some(PathKind::Directory), 1000, 0o40777);
        assert_eq!(
            check_ssh_modes(1000, &world_writable_home, &ssh, &keys).status,
            Status::Fail
        );

        let keys_dir = facts(
            "/home/u/.ssh/authorized_keys",
            Some(PathKind::Directory),
            1000,
            0o40700,
        );
        assert_eq!(
            check_ssh_modes(1000, &home, &ssh, &keys_dir).status,
            Status::Fail
        );

        let missing = facts("/home/u/.ssh", None, 0, 0);
        let missing_keys = facts("/home/u/.ssh/authorized_keys", None, 0, 0);
        let check = check_ssh_modes(1000, &home, &missing, &missing_keys);
        assert_eq!(check.status, Status::Pass);
        assert!(check.summary.contains("does not exist yet"));
    }

    #[test]
    fn bootstrap_markers_must_end_the_line() {
        assert_eq!(
            bootstrap_marker(
                "restrict,command=\"x\" ssh-ed25519 AAAA herdr-pairing:0a1b2c:exp:1700000000"
            ),
            Some(("0a1b2c", 1700000000))
        );
        assert_eq!(
            bootstrap_marker("herdr-pairing:a-b:exp:5"),
            Some(("a-b", 5))
        );
        assert_eq!(
            bootstrap_marker("ssh-ed25519 AAAA herdr-pairing:abc:exp:17\r"),
            None
        );
        assert_eq!(
            bootstrap_marker("ssh-ed25519 AAAA xherdr-pairing:abc:exp:17"),
            None
        );
        assert_eq!(
            bootstrap_marker("ssh-ed25519 AAAA herdr-pairing:abc:exp:17 more"),
            None
        );
        assert_eq!(
            bootstrap_marker("ssh-ed25519 AAAA herdr-pairing:a_c:exp:17"),
            None
        );
        assert_eq!(
            bootstrap_marker("ssh-ed25519 AAAA herdr-pairing::exp:17"),
            None
        );
        assert_eq!(bootstrap_marker("ssh-ed25519 AAAA user@host"), None);
    }

    #[test]
    fn leftover_bootstrap_lines_are_counted_never_shown() {
        let now = 1_800_000_000;
        let file = format!(
            "ssh-ed25519 AAAAsecretblob phone\nrestrict ssh-ed25519 AAAAold herdr-pairing:aa:exp:{}\nrestrict ssh-ed25519 AAAAold2 herdr-pairing:bb:exp:{now}\n",
            now - 500
        );
        let check = check_bootstrap_lines(&text(&file), now);
        assert_eq!(check.status, Status::Warn);
        assert!(check.summary.starts_with("2 expired"));
        assert!(!check.summary.contains("AAAA"));
        let live = format!("x ssh-ed25519 AAAA herdr-pairing:cc:exp:{}\n", now + 60);
        let check = check_bootstrap_lines(&text(&live), now);
        assert_eq!(check.status, Status::Pass);
        assert!(check.summary.contains("in progress"));
        assert_eq!(
            check_bootstrap_lines(&text("ssh-ed25519 AAAA me\n"), now).status,
            Status::Pass
        );
        assert_eq!(
            check_bootstrap_lines(&FileRead::Missing, now).status,
            Status::Pass
        );
    }

    #[test]
    fn herdr_must_be_found_and_new_enough() {
        let path = Path::new("/usr/local/bin/herdr");
        assert_eq!(parse_version("herdr 0.8.0\n"), Some((0, 8, 0)));
        assert_eq!(parse_version("herdr v0.10.2-dev"), Some((0, 10, 2)));
        assert_eq!(parse_version("herdr"), None);
        assert_eq!(
            check_herdr(Some(path), &Ok("herdr 0.7.5".into())).status,
            Status::Pass
        );
        assert_eq!(
            check_herdr(Some(path), &Ok("herdr 0.9.4".into())).status,
            Status::Pass
        );
        let old = check_herdr(Some(path), &Ok("herdr 0.7.4".into()));
        assert_eq!(old.status, Status::Fail);
        assert!(old.summary.contains("needs 0.7.5"));
        assert_eq!(check_herdr(None, &Err("x".into())).status, Status::Fail);
        assert_eq!(
            check_herdr(Some(path), &Err("exit status: 1".into())).status,
            Status::Fail
        );
        assert_eq!(
            check_herdr(Some(path), &Ok("what".into())).status,
            Status::Warn
        );
    }

    fn plugin_list(entry: &str) -> Result<String, String> {
        Ok(format!(
            "{{\"id\":\"cli:plugin\",\"result\":{{\"type\":\"plugin_list\",\"plugins\":[{{\"plugin_id\":\"other\",\"enabled\":true}}{entry}]}}}}"
        ))
    }

    #[test]
    fn the_plugin_must_be_installed_enabled_and_this_version() {
        let enabled = plugin_list(
            ",{\"plugin_id\":\"heeler\",\"version\":\"0.8.0\",\"enabled\":true,\"source\":{\"kind\":\"github\"}}",
        );
        let check = check_plugin(&enabled, "0.8.0", "");
        assert_eq!(check.status, Status::Pass, "{check:?}");
        assert!(check.summary.contains("default session"));

        let disabled =
            plugin_list(",{\"plugin_id\":\"heeler\",\"version\":\"0.8.0\",\"enabled\":false}");
        let check = check_plugin(&disabled, "0.8.0", "work");
        assert_eq!(check.status, Status::Fail);
        assert_eq!(
            check.fix.as_deref(),
            Some("herdr --session work plugin enable heeler")
        );

        let older =
            plugin_list(",{\"plugin_id\":\"heeler\",\"version\":\"0.6.0\",\"enabled\":true}");
        assert_eq!(check_plugin(&older, "0.8.0", "").status, Status::Warn);

        let absent = plugin_list("");
        assert_eq!(check_plugin(&absent, "0.8.0", "").status, Status::Fail);

        assert_eq!(
            check_plugin(&Err("no server".into()), "0.8.0", "").status,
            Status::Warn
        );
        assert_eq!(
            check_plugin(&Ok("nope".into()), "0.8.0", "").status,
            Status::Warn
        );
    }

    #[test]
    fn every_running_session_is_asked() {
        let sessions = r#"{"sessions":[{"default":true,"name":"default","running":true},{"default":false,"name":"work","running":true},{"default":false,"name":"old","running":false},{"name":"../x","running":true}]}"#;
        assert_eq!(running_sessions(sessions), ["default", "work"]);
        assert!(running_sessions("nope").is_empty());

        let enabled =
            plugin_list(",{\"plugin_id\":\"heeler\",\"version\":\"0.8.0\",\"enabled\":true}");
        let disabled =
            plugin_list(",{\"plugin_id\":\"heeler\",\"version\":\"0.8.0\",\"enabled\":false}");
        let both = check_plugin_sessions(
            &[
                ("default".to_owned(), enabled.clone()),
                ("work".to_owned(), disabled),
            ],
            "0.8.0",
        );
        assert_eq!(both.status, Status::Fail);
        assert!(both.summary.contains("enabled in the default session"));
        assert!(both.summary.contains("disabled in session work"));
        assert_eq!(
            both.fix.as_deref(),
            Some("herdr --session work plugin enable heeler")
        );

        let one = check_plugin_sessions(&[("default".to_owned(), enabled)], "0.8.0");
        assert_eq!(one.status, Status::Pass);
        assert_eq!(check_plugin_sessions(&[], "0.8.0").status, Status::Warn);
    }

    #[test]
    fn pair_json_rules() {
        assert_eq!(check_pair_json(&FileRead::Missing).status, Status::Pass);
        assert_eq!(
            check_pair_json(&text("{\"ssh_port\":2222}")).summary,
            "pair.json is valid: SSH port 2222"
        );
        assert_eq!(
            check_pair_json(&text("{\"ssh_port\":\"x\"}")).status,
            Status::Warn
        );
        assert_eq!(check_pair_json(&text("{oops")).status, Status::Fail);
        assert_eq!(check_pair_json(&text("[1]")).status, Status::Fail);
        assert_eq!(
            check_pair_json(&FileRead::Unreadable("EACCES".into())).status,
            Status::Fail
        );
    }

    #[test]
    fn notify_json_and_the_relay_url() {
        assert_eq!(relay_url(&FileRead::Missing), DEFAULT_RELAY_URL);
        assert_eq!(
            relay_url(&text("{\"relay_url\":\" https://relay.example/// \"}")),
            "https://relay.example"
        );
        assert_eq!(
            relay_url(&text("{\"relay_url\":\"https://herdr-apns.bybee.dev/\"}")),
            DEFAULT_RELAY_URL
        );
        assert_eq!(relay_url(&text("{\"relay_url\":\"\"}")), DEFAULT_RELAY_URL);
        assert_eq!(
            check_notify_json(&text("{\"debounce_ms\":10}")).status,
            Status::Pass
        );
        assert_eq!(
            check_notify_json(&text("{\"relay_url\":\"http://x\"}")).status,
            Status::Warn
        );
        assert_eq!(check_notify_json(&text("nope")).status, Status::Warn);
    }

    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
    const TOKEN: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90";

    #[test]
    fn notifications_json_is_counted_per_session_without_secrets() {
        let file = format!(
            r#"{{"v":1,"devices":[
            {{"token":"{TOKEN}","key":"{KEY}","env":"production","session":"","notify":{{"blocked":true}}}},
            {{"token":"{TOKEN}","key":"{KEY}","env":"production","session":"work","notify":{{"blocked":false}},"live_activity":{{"token":"{TOKEN}"}}}},
            {{"token":"{TOKEN}","key":"{KEY}","env":"sandbox","notify":{{"done":true}}}}
            ]}}"#
        );
        let check = check_notifications_json(&text(&file));
        assert_eq!(check.status, Status::Pass, "{check:?}");
        assert_eq!(
            check.summary,
            "notifications.json: default: 1 device(s), 1 with notifications, 0 with Live Activity; \
             every session (legacy): 1 device(s), 1 with notifications, 0 with Live Activity; \
             session work: 1 device(s), 0 with notifications, 1 with Live Activity"
        );
        assert!(!check.summary.contains(TOKEN) && !check.summary.contains(KEY));

        let malformed = format!(
            r#"{{"v":1,"devices":[{{"token":"","key":"{KEY}"}},{{"token":"{TOKEN}","key":"short"}},7]}}"#
        );
        let check = check_notifications_json(&text(&malformed));
        assert_eq!(check.status, Status::Warn);
        assert!(check.summary.contains("3 malformed"));
        assert!(!check.summary.contains(TOKEN));

        assert_eq!(
            check_notifications_json(&text("{\"v\":2,\"devices\":[]}")).status,
            Status::Fail
        );
        assert_eq!(
            check_notifications_json(&text("{\"v\":1}")).status,
            Status::Fail
        );
        assert_eq!(check_notifications_json(&text("{")).status, Status::Fail);
        assert_eq!(
            check_notifications_json(&text("{\"v\":1,\"devices\":[]}")).status,
            Status::Warn
        );
        assert_eq!(
            check_notifications_json(&FileRead::Missing).status,
            Status::Warn
        );
    }

    #[test]
    fn relay_reachability_is_a_405_to_get() {
        assert_eq!(check_relay("https://r", &Ok(405)).status, Status::Pass);
        assert_eq!(check_relay("https://r", &Ok(200)).status, Status::Warn);
        assert_eq!(
            check_relay("https://r", &Err("dns".into())).status,
            Status::Fail
        );
    }

    #[test]
    fn the_binary_must_be_static_on_linux() {
        let path = Path::new("/p/bin/heeler");
        assert_eq!(
            check_binary("linux", path, &Ok(false), "0.8.0").status,
            Status::Pass
        );
        assert_eq!(
            check_binary("linux", path, &Ok(true), "0.8.0").status,
            Status::Warn
        );
        assert_eq!(
            check_binary("linux", path, &Err("x".into()), "0.8.0").status,
            Status::Warn
        );
        assert_eq!(
            check_binary("macos", path, &Err("not an ELF file".into()), "0.8.0").status,
            Status::Pass
        );
    }

    #[test]
    fn reports_render_as_text_and_json_and_fail_only_on_fail() {
        let checks = vec![Check::pass("a", "fine"), Check::warn("b", "hmm", "do b")];
        assert!(!any_failed(&checks));
        let text = render_text(&checks);
        assert_eq!(
            text,
            "[PASS] a: fine\n[WARN] b: hmm\n       fix: do b\n2 checks: 1 passed, 1 warned, 0 failed\n"
        );
        let mut failing = checks.clone();
        failing.push(Check::fail("c", "bad \"x\"", "do c"));
        assert!(any_failed(&failing));
        assert_eq!(
            render_json(&failing, "0.8.0"),
            r#"{"version":"0.8.0","ok":false,"checks":[{"id":"a","status":"pass","summary":"fine"},{"id":"b","status":"warn","summary":"hmm","fix":"do b"},{"id":"c","status":"fail","summary":"bad \"x\"","fix":"do c"}]}"#
        );
    }
}

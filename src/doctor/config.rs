//! The plugin's config files and the Push Relay: pair.json (the advertised
//! SSH port), notify.json (the relay), notifications.json (the devices) and,
//! with `--network`, whether the relay answers.
//!
//! Invariants: doctor sees these files exactly as their owners do. pair.json
//! goes through `pair::config` (the popup's reader: its BOM rule, its port
//! rule, its warnings); the relay URL comes from `hooks::settings` (the
//! hooks' reader: trimming, legacy URLs, the size cap, the default relay).
//! notifications.json is summarised as counts, never tokens or keys.

use std::collections::BTreeMap;
use std::io;

use crate::base::json::{self, Value};
use crate::doctor::facts::{ConfigFacts, FileRead, PairJson};
use crate::doctor::report::{Check, printable};
use crate::hooks::registration;
use crate::hooks::relay::without_userinfo;
use crate::hooks::settings;
use crate::pair::config::{self as pair_config, PairConfig, PortFallback};

/// pair.json from the outcome of reading it, parsed by `pair::config`.
pub(crate) fn pair_json_of(read: io::Result<Vec<u8>>) -> PairJson {
    match read {
        Ok(bytes) => PairJson::Read(pair_config::from_contents(&bytes)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => PairJson::Missing,
        Err(error) => PairJson::Unreadable(error.to_string()),
    }
}

/// The SSH port the Pairing Code advertises: `pair::config`'s port, or its
/// default when there is no readable pair.json (or no config directory).
pub(crate) fn advertised_port(config: Option<&ConfigFacts>) -> u16 {
    match config.map(|c| &c.pair_json) {
        Some(PairJson::Read(pair)) => pair.ssh_port,
        _ => pair_config::DEFAULT_SSH_PORT,
    }
}

/// What the popup warns about besides the port (addresses, launcher), as
/// one summary tail and one fix; `None` when it warns about nothing else.
fn ignored_values(pair: &PairConfig) -> Option<(String, &'static str)> {
    let warnings: Vec<&str> = [&pair.addresses_warning, &pair.launcher_warning]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    (!warnings.is_empty()).then(|| {
        (
            warnings.join(" "),
            "fix or remove the ignored values in pair.json",
        )
    })
}

pub(crate) fn check_pair_json(pair_json: &PairJson) -> Check {
    const ID: &str = "pair_json";
    let pair = match pair_json {
        PairJson::Missing => return Check::pass(ID, "pair.json absent: SSH port 22"),
        PairJson::Unreadable(why) => {
            return Check::fail(
                ID,
                format!("pair.json could not be read ({why})"),
                "make pair.json readable, or delete it to use port 22",
            );
        }
        PairJson::Read(pair) => pair,
    };
    let ignored = ignored_values(pair);
    match &pair.port_fallback {
        Some(PortFallback::Unreadable(why)) => Check::fail(
            ID,
            format!("pair.json could not be read ({why})"),
            "make pair.json readable, or delete it to use port 22",
        ),
        Some(PortFallback::NotJson) => Check::fail(
            ID,
            "pair.json is not valid JSON",
            "fix pair.json, or delete it to use port 22",
        ),
        Some(PortFallback::NotObject) => Check::fail(
            ID,
            "pair.json is not a JSON object",
            "make pair.json an object such as {\"ssh_port\": 22}",
        ),
        Some(PortFallback::InvalidPort(value)) => {
            let summary =
                format!("pair.json ssh_port {value} is not an integer 1..65535; port 22 is used");
            let fix = "set ssh_port to the port OpenSSH listens on";
            match ignored {
                None => Check::warn(ID, summary, fix),
                Some((tail, more)) => {
                    Check::warn(ID, format!("{summary}; {tail}"), format!("{fix}; {more}"))
                }
            }
        }
        None => match ignored {
            None => Check::pass(
                ID,
                format!("pair.json is valid: SSH port {}", pair.ssh_port),
            ),
            Some((tail, fix)) => Check::warn(
                ID,
                format!("pair.json: SSH port {}; {tail}", pair.ssh_port),
                fix,
            ),
        },
    }
}

/// The relay URL the hooks use, from notify.json as doctor read it (the
/// default relay when there is no config directory).
pub fn relay_url(config: Option<&ConfigFacts>) -> String {
    let Some(config) = config else {
        return settings::NotifySettings::default().relay_url;
    };
    let text = match &config.notify_json {
        FileRead::Text(text) => Some(text.as_str()),
        FileRead::Missing | FileRead::Unreadable(_) => None,
    };
    settings::from_text(text, &config.dir).relay_url
}

/// notify.json as a file (readable, a JSON object) and the relay it selects.
pub(crate) fn check_notify_json(read: &FileRead, relay_url: &str) -> Check {
    const ID: &str = "notify_json";
    match read {
        FileRead::Missing => Check::pass(
            ID,
            format!("notify.json absent: relay {}", settings::DEFAULT_RELAY_URL),
        ),
        FileRead::Unreadable(why) => Check::warn(
            ID,
            format!("notify.json could not be read ({why}); defaults are used"),
            "make notify.json readable or delete it",
        ),
        FileRead::Text(text) => match json::parse(text) {
            Ok(Value::Object(_)) => {
                let relay_url = without_userinfo(relay_url);
                if relay_url.starts_with("https://") {
                    Check::pass(ID, format!("notify.json is valid: relay {relay_url}"))
                } else {
                    Check::warn(
                        ID,
                        format!("notify.json relay_url {relay_url} is not https"),
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
pub(crate) fn check_notifications_json(read: &FileRead) -> Check {
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
    if text.len() as u64 > registration::MAX_FILE_BYTES {
        return Check::fail(
            ID,
            "notifications.json is larger than 4 MiB: the hooks treat it as absent",
            fix_by_app,
        );
    }
    let Ok(value) = json::parse(text) else {
        return Check::fail(ID, "notifications.json is not valid JSON", fix_by_app);
    };
    if value.get("v").and_then(Value::as_f64) != Some(1.0) {
        return Check::fail(
            ID,
            "notifications.json is not version 1 (\"v\": 1)",
            fix_by_app,
        );
    }
    if !registration::is_v1(&value) {
        return Check::fail(ID, "notifications.json has no devices array", fix_by_app);
    }
    let devices = value
        .get("devices")
        .and_then(Value::as_array)
        .unwrap_or_default();
    let tally = Tally::of(devices);
    let summary = tally.summary();
    let mut skipped = Vec::new();
    if tally.malformed > 0 {
        let malformed = tally.malformed;
        skipped.push(format!("{malformed} malformed device entr(y/ies) skipped"));
    }
    if tally.refused > 0 {
        let refused = tally.refused;
        skipped.push(format!(
            "{refused} device entr(y/ies) skipped: the token is not a push token (16 to 200 lowercase hex digits)"
        ));
    }
    if !skipped.is_empty() {
        return Check::warn(
            ID,
            format!("notifications.json: {summary}; {}", skipped.join("; ")),
            fix_by_app,
        );
    }
    if tally.sessions.is_empty() {
        return Check::warn(
            ID,
            "notifications.json has no devices",
            "in the Heeler app, enable Notifications for this Host",
        );
    }
    Check::pass(ID, format!("notifications.json: {summary}"))
}

/// The device entries of notifications.json counted the way the hooks
/// read them.
#[derive(Default)]
struct Tally {
    /// Session label to (devices, with notifications, with Live Activity).
    sessions: BTreeMap<String, (usize, usize, usize)>,
    malformed: usize,
    /// Entries that want alerts but that the hooks skip for their token.
    refused: usize,
}

impl Tally {
    fn of(devices: &[Value]) -> Tally {
        let mut tally = Tally::default();
        for device in devices {
            if !registration::is_usable_entry(device) {
                tally.malformed += 1;
                continue;
            }
            let label = match device.get("session") {
                Some(Value::String(name)) if name.is_empty() => "default".to_owned(),
                Some(Value::String(name)) => format!("session {}", printable(name)),
                _ => "every session (legacy)".to_owned(),
            };
            let alerts = registration::entry_alerts(device);
            let notify = alerts == registration::EntryAlerts::On;
            tally.refused += usize::from(alerts == registration::EntryAlerts::RefusedToken);
            let activity = device
                .get("live_activity")
                .and_then(Value::as_object)
                .is_some();
            let counts = tally.sessions.entry(label).or_default();
            counts.0 += 1;
            counts.1 += usize::from(notify);
            counts.2 += usize::from(activity);
        }
        tally
    }

    /// Each session's counts, or "no devices".
    fn summary(&self) -> String {
        let summary: Vec<String> = self
            .sessions
            .iter()
            .map(|(label, (all, notify, activity))| {
                format!("{label}: {all} device(s), {notify} with notifications, {activity} with Live Activity")
            })
            .collect();
        if summary.is_empty() {
            "no devices".to_owned()
        } else {
            summary.join("; ")
        }
    }
}

// --- relay -------------------------------------------------------------------------------

/// The relay answers `GET /push` with 405 (it only takes POST): reachable,
/// without sending anything to a device.
/// The config and state directories: a failure naming each one a command
/// would refuse, and no check at all when every one is trusted.
pub(crate) fn check_dir_trust(untrusted: &[crate::base::dirs::Untrusted]) -> Option<Check> {
    let first = untrusted.first()?;
    let summary = untrusted
        .iter()
        .map(|u| u.summary())
        .collect::<Vec<_>>()
        .join("; ");
    Some(Check::fail(
        "dir_trust",
        format!("{summary}: heeler refuses to read state or config there"),
        first.fix(),
    ))
}

pub(crate) fn check_relay(url: &str, status: &Result<u16, String>) -> Check {
    const ID: &str = "relay";
    let url = without_userinfo(url);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::report::Status;
    use std::path::{Path, PathBuf};

    fn text(s: &str) -> FileRead {
        FileRead::Text(s.to_owned())
    }

    fn pair(bytes: &[u8]) -> PairJson {
        pair_json_of(Ok(bytes.to_vec()))
    }

    fn files(pair_json: PairJson, notify_json: FileRead) -> ConfigFacts {
        ConfigFacts {
            dir: PathBuf::from("/cfg"),
            pair_json,
            notify_json,
            notifications_json: FileRead::Missing,
        }
    }

    fn port_of(pair_json: PairJson) -> u16 {
        advertised_port(Some(&files(pair_json, FileRead::Missing)))
    }

    #[test]
    fn advertised_port_follows_pair_json() {
        assert_eq!(advertised_port(None), 22);
        assert_eq!(port_of(PairJson::Missing), 22);
        assert_eq!(port_of(PairJson::Unreadable("denied".into())), 22);
        assert_eq!(port_of(pair(b"{\"ssh_port\":2222}")), 2222);
        assert_eq!(port_of(pair(b"{\"ssh_port\":2222.0}")), 2222);
        for bad in [
            "{\"ssh_port\":0}",
            "{\"ssh_port\":65536}",
            "{\"ssh_port\":\"22\"}",
            "[]",
            "{",
        ] {
            assert_eq!(port_of(pair(bad.as_bytes())), 22, "{bad}");
        }
    }

    #[test]
    fn a_bom_pair_json_is_read_as_the_popup_reads_it() {
        let bytes = "\u{feff}{\"ssh_port\":2222}".as_bytes();
        let popup = pair_config::from_contents(bytes);
        assert_eq!(popup.ssh_port, 2222);
        assert_eq!(popup.port_warning, None);
        assert_eq!(port_of(pair(bytes)), popup.ssh_port);
        let check = check_pair_json(&pair(bytes));
        assert_eq!(check.status, Status::Pass);
        assert_eq!(check.summary, "pair.json is valid: SSH port 2222");
    }

    #[test]
    fn pair_json_rules() {
        assert_eq!(
            pair_json_of(Err(io::ErrorKind::NotFound.into())),
            PairJson::Missing
        );
        let denied = pair_json_of(Err(io::Error::from_raw_os_error(libc::EACCES)));
        assert!(matches!(denied, PairJson::Unreadable(_)), "{denied:?}");
        assert_eq!(check_pair_json(&denied).status, Status::Fail);

        let missing = check_pair_json(&PairJson::Missing);
        assert_eq!(missing.status, Status::Pass);
        assert_eq!(missing.summary, "pair.json absent: SSH port 22");
        assert_eq!(
            check_pair_json(&pair(b"{\"ssh_port\":2222}")).summary,
            "pair.json is valid: SSH port 2222"
        );
        assert_eq!(
            check_pair_json(&pair(b"{}")).summary,
            "pair.json is valid: SSH port 22"
        );
        let bad_port = check_pair_json(&pair(b"{\"ssh_port\":\"x\"}"));
        assert_eq!(bad_port.status, Status::Warn);
        assert_eq!(
            bad_port.summary,
            "pair.json ssh_port \"x\" is not an integer 1..65535; port 22 is used"
        );
        let not_json = check_pair_json(&pair(b"{oops"));
        assert_eq!(not_json.status, Status::Fail);
        assert_eq!(not_json.summary, "pair.json is not valid JSON");
        // Bytes that are not UTF-8 are not JSON either, as the popup says.
        assert_eq!(check_pair_json(&pair(b"\xff{}")).summary, not_json.summary);
        let array = check_pair_json(&pair(b"[1]"));
        assert_eq!(array.status, Status::Fail);
        assert_eq!(array.summary, "pair.json is not a JSON object");
    }

    #[test]
    fn pair_json_values_the_popup_ignores_are_a_warning() {
        let bytes = br#"{"ssh_port":2222,"addresses":"10.0.0.1"}"#;
        let popup = pair_config::from_contents(bytes);
        let popup_warning = popup.addresses_warning.clone().unwrap_or_default();
        let check = check_pair_json(&pair(bytes));
        assert_eq!(check.status, Status::Warn);
        assert_eq!(
            check.summary,
            format!("pair.json: SSH port 2222; {popup_warning}")
        );
        assert_eq!(
            check.fix.as_deref(),
            Some("fix or remove the ignored values in pair.json")
        );
        let both = check_pair_json(&pair(br#"{"ssh_port":0,"launcher":"relative"}"#));
        assert_eq!(both.status, Status::Warn);
        assert!(both.summary.starts_with("pair.json ssh_port 0 is not an integer 1..65535; port 22 is used; pair.json launcher \"relative\" "));
    }

    fn notify(text: &str) -> String {
        relay_url(Some(&files(
            PairJson::Missing,
            FileRead::Text(text.to_owned()),
        )))
    }

    #[test]
    fn notify_json_and_the_relay_url() {
        let default = settings::DEFAULT_RELAY_URL;
        assert_eq!(relay_url(None), default);
        assert_eq!(
            relay_url(Some(&files(PairJson::Missing, FileRead::Missing))),
            default
        );
        assert_eq!(
            relay_url(Some(&files(
                PairJson::Missing,
                FileRead::Unreadable("denied".into())
            ))),
            default
        );
        assert_eq!(
            notify("{\"relay_url\":\" https://relay.example/// \"}"),
            "https://relay.example"
        );
        assert_eq!(
            notify("{\"relay_url\":\"https://herdr-apns.bybee.dev/\"}"),
            default
        );
        assert_eq!(notify("{\"relay_url\":\"\"}"), default);
        assert_eq!(
            check_notify_json(&text("{\"debounce_ms\":10}"), default).summary,
            format!("notify.json is valid: relay {default}")
        );
        assert_eq!(
            check_notify_json(&FileRead::Missing, default).summary,
            format!("notify.json absent: relay {default}")
        );
        assert_eq!(
            check_notify_json(&text("{\"relay_url\":\"http://x\"}"), "http://x").status,
            Status::Warn
        );
        assert_eq!(
            check_notify_json(&text("nope"), default).status,
            Status::Warn
        );
    }

    #[test]
    fn a_feff_relay_url_is_the_relay_the_hooks_use() {
        // JavaScript's trim (the hooks' rule) strips U+FEFF like a space.
        for (raw, expected) in [
            ("\u{feff}", settings::DEFAULT_RELAY_URL),
            ("\u{feff}https://relay.example/", "https://relay.example"),
            (
                "\u{feff}https://herdr-apns.bybee.dev",
                settings::DEFAULT_RELAY_URL,
            ),
        ] {
            let text = Value::Object(json::Object::new().with("relay_url", raw)).to_json();
            let hooks = settings::from_value(&json::parse(&text).unwrap(), Path::new("/cfg"));
            assert_eq!(hooks.relay_url, expected, "{raw:?}");
            assert_eq!(notify(&text), hooks.relay_url, "{raw:?}");
            let check = check_notify_json(&FileRead::Text(text.clone()), &notify(&text));
            assert_eq!(check.status, Status::Pass, "{check:?}");
        }
    }

    #[test]
    fn an_oversized_notify_json_means_the_default_relay_as_for_the_hooks() {
        let padding = " ".repeat(settings::MAX_FILE_BYTES as usize);
        let text = format!("{{\"relay_url\":\"https://relay.example\"}}{padding}");
        assert_eq!(
            settings::from_text(Some(&text), Path::new("/cfg")).relay_url,
            settings::DEFAULT_RELAY_URL
        );
        assert_eq!(notify(&text), settings::DEFAULT_RELAY_URL);
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
    fn doctor_counts_the_devices_the_hooks_deliver_to() {
        // Legacy entries (no session) that differ only in what the hooks
        // accept: a key in Node's lenient form (standard alphabet, padded),
        // an unknown env, a 31-byte key, no env at all.
        let entries = [
            format!(
                r#"{{"token":"{TOKEN}","key":"{KEY}=","env":"production","notify":{{"blocked":true}}}}"#
            ),
            format!(
                r#"{{"token":"{TOKEN}","key":"{KEY}","env":"staging","notify":{{"blocked":true}}}}"#
            ),
            format!(
                r#"{{"token":"{TOKEN}","key":"{}","env":"sandbox","notify":{{"blocked":true}}}}"#,
                &KEY[..41]
            ),
            format!(r#"{{"token":"{TOKEN}","key":"{KEY}","notify":{{"blocked":true}}}}"#),
            format!(
                r#"{{"token":"{TOKEN}","key":"{KEY}","env":"sandbox","notify":{{"blocked":true}}}}"#
            ),
        ];
        let file = format!(r#"{{"v":1,"devices":[{}]}}"#, entries.join(","));
        let parsed = json::parse(&file).unwrap();
        let session = crate::herdr::session::from_socket_path(None);
        let delivered = registration::alert_devices(Some(&parsed), &session, "blocked").len();
        assert_eq!(
            delivered, 2,
            "the hooks deliver to the lenient key and the sandbox entry"
        );
        let check = check_notifications_json(&text(&file));
        assert!(
            check
                .summary
                .contains(&format!("every session (legacy): {delivered} device(s)")),
            "{check:?}"
        );
        assert!(
            check
                .summary
                .contains(&format!("{} malformed", entries.len() - delivered))
        );
        // A file the hooks treat as absent is not reported as valid.
        let huge = format!(
            r#"{{"v":1,"devices":[],"pad":"{}"}}"#,
            "x".repeat(4 * 1024 * 1024)
        );
        assert_eq!(registration::MAX_FILE_BYTES, 4 * 1024 * 1024);
        assert_eq!(check_notifications_json(&text(&huge)).status, Status::Fail);
        // `1.0` is version 1 to the hooks (JavaScript numbers), so to doctor too.
        assert_eq!(
            check_notifications_json(&text("{\"v\":1.0,\"devices\":[]}")).status,
            Status::Warn
        );
    }

    #[test]
    fn doctor_reports_the_entries_the_hooks_skip_for_their_token() {
        // Usable entries for the default session that the notify hook
        // sends to, or skips because the relay would refuse the token.
        let upper = TOKEN.to_uppercase();
        let entry = |token: &str, flags: &str| {
            format!(
                r#"{{"token":"{token}","key":"{KEY}","env":"production","session":"","notify":{{{flags}}}}}"#
            )
        };
        let entries = [
            entry(TOKEN, r#""blocked":true"#),
            entry(&upper, r#""blocked":true"#),
            entry("abc123", r#""blocked":true,"done":true"#),
            // Wants no alert, so its token is never sent and never refused.
            entry(&upper, r#""blocked":false"#),
        ];
        let file = format!(r#"{{"v":1,"devices":[{}]}}"#, entries.join(","));
        let parsed = json::parse(&file).unwrap();
        let session = crate::herdr::session::from_socket_path(None);
        let selection = registration::alert_selection(Some(&parsed), &session, "blocked");
        assert_eq!((selection.devices.len(), selection.refused.len()), (1, 2));
        let check = check_notifications_json(&text(&file));
        assert_eq!(check.status, Status::Warn, "{check:?}");
        assert_eq!(
            check.summary,
            format!(
                "notifications.json: default: 4 device(s), {} with notifications, 0 with Live Activity; \
                 {} device entr(y/ies) skipped: the token is not a push token (16 to 200 lowercase hex digits)",
                selection.devices.len(),
                selection.refused.len()
            )
        );
        assert!(!check.summary.contains(TOKEN) && !check.summary.contains(&upper));
        assert!(!check.summary.contains("abc123"));
    }

    #[test]
    fn the_relay_url_is_shown_without_its_userinfo() {
        let url = "https://user:s3cret@relay.example:8443/base";
        let shown = "https://relay.example:8443/base";
        let text = Value::Object(json::Object::new().with("relay_url", url)).to_json();
        let valid = check_notify_json(&FileRead::Text(text.clone()), url);
        let plain = check_notify_json(&FileRead::Text(text), "http://u:s3cret@x");
        let reachable = check_relay(url, &Ok(405));
        let odd = check_relay(url, &Ok(200));
        let unreachable = check_relay(url, &Err("dns".into()));
        for check in [valid, plain, reachable, odd, unreachable] {
            assert!(!check.summary.contains("s3cret"), "{check:?}");
            assert!(!check.summary.contains('@'), "{check:?}");
        }
        assert_eq!(
            check_relay(url, &Ok(405)).summary,
            format!("{shown} is reachable (GET /push answered 405)")
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
}

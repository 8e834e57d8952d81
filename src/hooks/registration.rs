//! `notifications.json` v1: the Notification Registration file the app
//! writes over SSH, read by both hooks and pruned by them on a 410 verdict.
//!
//! Reading is lenient per entry (a malformed entry is skipped, never fatal)
//! and fails closed (a missing notify flag means no alert). Rewrites keep the
//! parsed document, so every field and entry this plugin does not understand
//! survives in its original order; they happen under a lock file with a fresh
//! re-read, are atomic (temp + rename, mode kept), and are skipped entirely
//! when nothing would change. A `notifications.json` that is a symbolic link
//! (a dotfiles checkout, config management) stays one: the rewrite replaces
//! the file it points at, as `authorized_keys` is edited.

use std::path::{Path, PathBuf};

use crate::base::atomic_file::{self, LockFile, LockPolicy};
use crate::base::json::{self, Value};
use crate::herdr::session::Session;
use crate::hooks::relay;
use crate::hooks::row_layout::{self, RowLayout};
use crate::wire::envelope::NotificationKey;

/// Registration files larger than this are not the app's: treated as absent.
pub(crate) const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The file's path in the plugin config dir.
pub fn path_in(config_dir: &Path) -> PathBuf {
    config_dir.join("notifications.json")
}

/// The parsed file when it is a v1 document with a `devices` array; `None`
/// ("absent") for anything else, including unreadable or oversized files.
pub fn read(path: &Path) -> Option<Value> {
    let text = crate::base::state_file::read_config_text(path, MAX_FILE_BYTES)?;
    let value = json::parse(&text).ok()?;
    is_v1(&value).then_some(value)
}

/// Whether a parsed file is a v1 document with a `devices` array.
pub fn is_v1(value: &Value) -> bool {
    value.get("v").and_then(Value::as_f64) == Some(1.0)
        && value.get("devices").and_then(Value::as_array).is_some()
}

fn entries(file: &Value) -> &[Value] {
    file.get("devices")
        .and_then(Value::as_array)
        .unwrap_or_default()
}

fn valid_env(env: Option<&Value>) -> Option<&str> {
    env.and_then(Value::as_str)
        .filter(|e| matches!(*e, "production" | "sandbox"))
}

/// Whether an entry can receive anything at all: an object with a non-empty
/// `token`, a known `env` and a usable Notification Key. The hooks' device
/// lists (below) require exactly this before their own flags; doctor counts
/// the entries that fail it.
pub fn is_usable_entry(entry: &Value) -> bool {
    entry.as_object().is_some()
        && entry
            .get("token")
            .and_then(Value::as_nonempty_str)
            .is_some()
        && valid_env(entry.get("env")).is_some()
        && entry_key(entry).is_some()
}

/// The Notification Key of an entry. Node's base64url decoder was lenient
/// (it skipped characters outside the alphabet and stopped at `=`), so keys
/// the Node plugin accepted are accepted here too.
pub fn entry_key(entry: &Value) -> Option<NotificationKey> {
    let text = entry.get("key").and_then(Value::as_str)?;
    if let Ok(key) = NotificationKey::from_base64url(text) {
        return Some(key);
    }
    let bytes: [u8; 32] = decode_base64_lenient(text).try_into().ok()?;
    Some(NotificationKey::from_bytes(bytes))
}

/// Node's `Buffer.from(text, "base64url")`: both alphabets, other characters
/// skipped, decoding stops at `=`.
pub(crate) fn decode_base64_lenient(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let sextet = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            _ => continue,
        };
        acc = (acc << 6) | u32::from(sextet);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// A device that receives Agent Notifications for one status.
#[derive(Debug, Clone)]
pub struct AlertDevice {
    pub token: String,
    pub env: String,
    pub key: NotificationKey,
}

/// The alert devices of one hook, and the tokens of the entries skipped
/// because the relay would refuse them.
#[derive(Debug, Clone, Default)]
pub struct AlertSelection {
    pub devices: Vec<AlertDevice>,
    /// Tokens of entries that want this alert but are not 16 to 200
    /// lowercase hex digits: the relay answers 400 `bad_token` to them, so
    /// sending would fail every time and the pane would never be deduped.
    pub refused: Vec<String>,
}

/// The entries that get an alert for `flag` (`blocked`/`done`) from a hook
/// of `session`, in file order.
pub fn alert_devices(file: Option<&Value>, session: &Session, flag: &str) -> Vec<AlertDevice> {
    alert_selection(file, session, flag).devices
}

/// [`alert_devices`], plus the entries skipped for their token.
pub fn alert_selection(file: Option<&Value>, session: &Session, flag: &str) -> AlertSelection {
    let mut selection = AlertSelection::default();
    let Some(file) = file else {
        return selection;
    };
    for entry in entries(file) {
        let Some(device) = alert_device(entry, session, flag) else {
            continue;
        };
        if relay::is_push_token(&device.token) {
            selection.devices.push(device);
        } else {
            selection.refused.push(device.token);
        }
    }
    selection
}

/// The `notify` flags an alert is sent for (an Agent's Blocked and Done).
pub(crate) const ALERT_FLAGS: [&str; 2] = ["blocked", "done"];

/// How the notify hook treats one entry, whatever its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryAlerts {
    /// It wants no alert (or is unusable): nothing is sent.
    Off,
    /// It wants an alert, and its token is one the relay accepts.
    On,
    /// It wants an alert, but [`alert_selection`] skips it for its token.
    RefusedToken,
}

/// Whether the hooks alert `entry` for some flag of [`ALERT_FLAGS`], by
/// the same rules as [`alert_selection`] (so doctor cannot disagree).
pub fn entry_alerts(entry: &Value) -> EntryAlerts {
    let Some(device) = ALERT_FLAGS
        .iter()
        .find_map(|flag| alert_device_of(entry, flag))
    else {
        return EntryAlerts::Off;
    };
    if relay::is_push_token(&device.token) {
        EntryAlerts::On
    } else {
        EntryAlerts::RefusedToken
    }
}

/// An entry as an alert device for `flag` from a hook of `session`,
/// whatever its token's shape.
fn alert_device(entry: &Value, session: &Session, flag: &str) -> Option<AlertDevice> {
    if !session.delivers_to(entry) {
        return None;
    }
    alert_device_of(entry, flag)
}

/// An entry as an alert device for `flag`, whatever its session and its
/// token's shape.
fn alert_device_of(entry: &Value, flag: &str) -> Option<AlertDevice> {
    entry.as_object()?;
    let token = entry.get("token").and_then(Value::as_nonempty_str)?;
    let env = valid_env(entry.get("env"))?;
    let wanted = entry.get("notify").and_then(|n| n.get(flag)) == Some(&Value::Bool(true));
    if !wanted {
        return None;
    }
    Some(AlertDevice {
        token: token.to_owned(),
        env: env.to_owned(),
        key: entry_key(entry)?,
    })
}

/// A device that shows this Host's Live Activity.
#[derive(Debug, Clone)]
pub struct ActivityDevice {
    /// The activity push token (`live_activity.token`).
    pub token: String,
    pub env: String,
    pub key: NotificationKey,
    /// `live_activity.pinned_pane_ids`, raw.
    pub pins: Option<Value>,
    /// `live_activity.row_layout`, when present and valid.
    pub layout: Option<RowLayout>,
    /// `live_activity.host_name`, when a non-empty string.
    pub host_name: Option<String>,
}

/// A plausible activity token: the relay's token rule.
pub fn is_activity_token(token: &str) -> bool {
    relay::is_push_token(token)
}

/// The entries with a usable `live_activity` for a hook of `session`.
pub fn activity_devices(file: Option<&Value>, session: &Session) -> Vec<ActivityDevice> {
    let Some(file) = file else {
        return Vec::new();
    };
    entries(file)
        .iter()
        .filter_map(|entry| {
            entry.as_object()?;
            if !session.delivers_to(entry) {
                return None;
            }
            let live = entry.get("live_activity")?;
            live.as_object()?;
            let token = live
                .get("token")
                .and_then(Value::as_str)
                .filter(|t| is_activity_token(t))?;
            let env = valid_env(live.get("env")).or_else(|| valid_env(entry.get("env")))?;
            let key = entry_key(entry)?;
            Some(ActivityDevice {
                token: token.to_owned(),
                env: env.to_owned(),
                key,
                pins: live.get("pinned_pane_ids").cloned(),
                layout: live.get("row_layout").and_then(row_layout::parse_layout),
                host_name: live
                    .get("host_name")
                    .and_then(Value::as_nonempty_str)
                    .map(str::to_owned),
            })
        })
        .collect()
}

/// Removes every entry whose `token` is one of `tokens`, whatever its
/// session. Returns whether anything was removed.
pub fn remove_tokens(file: &mut Value, tokens: &[String]) -> bool {
    let Some(Value::Array(devices)) = file.as_object_mut().and_then(|o| o.get_mut("devices"))
    else {
        return false;
    };
    let before = devices.len();
    devices.retain(|entry| {
        !entry
            .get("token")
            .and_then(Value::as_str)
            .is_some_and(|t| tokens.iter().any(|p| p == t))
    });
    devices.len() != before
}

/// Deletes `live_activity` from every entry whose activity token is one of
/// `tokens`, keeping everything else. Returns whether anything changed.
pub fn remove_live_activities(file: &mut Value, tokens: &[String]) -> bool {
    let Some(Value::Array(devices)) = file.as_object_mut().and_then(|o| o.get_mut("devices"))
    else {
        return false;
    };
    let mut changed = false;
    for entry in devices.iter_mut() {
        let Some(object) = entry.as_object_mut() else {
            continue;
        };
        let matches = object
            .get("live_activity")
            .and_then(|l| l.get("token"))
            .and_then(Value::as_str)
            .is_some_and(|t| tokens.iter().any(|p| p == t));
        if matches {
            object.remove("live_activity");
            changed = true;
        }
    }
    changed
}

/// Why a prune could not be written.
#[derive(Debug)]
pub enum RewriteError {
    Lock(atomic_file::LockError),
    Write(PathBuf, std::io::Error),
}

impl std::fmt::Display for RewriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RewriteError::Lock(e) => write!(f, "cannot lock notifications.json: {e}"),
            RewriteError::Write(path, e) => write!(f, "cannot rewrite {}: {e}", path.display()),
        }
    }
}

impl std::error::Error for RewriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RewriteError::Lock(e) => Some(e),
            RewriteError::Write(_, e) => Some(e),
        }
    }
}

/// Re-reads the file under its lock, applies `edit`, and writes it back
/// (through a symbolic link, to the file it names) only when `edit`
/// reports a change. A file that is no longer a v1 document
/// is left alone. Returns whether the file was rewritten.
pub fn rewrite(path: &Path, edit: impl FnOnce(&mut Value) -> bool) -> Result<bool, RewriteError> {
    let lock_path = path.with_file_name("notifications.json.lock");
    let _lock =
        LockFile::acquire(&lock_path, LockPolicy::AUTHORIZED_KEYS).map_err(RewriteError::Lock)?;
    // A killed rewrite's temp copy holds the devices' Notification Keys:
    // swept under the lock, beside the file the link names.
    if let Ok(target) = atomic_file::resolve_links(path) {
        atomic_file::sweep_stale_temps(&target);
    }
    let Some(mut file) = read(path) else {
        return Ok(false);
    };
    if !edit(&mut file) {
        return Ok(false);
    }
    atomic_file::write_through_links(path, file.to_json().as_bytes(), 0o600)
        .map_err(|e| RewriteError::Write(path.to_path_buf(), e))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";

    fn file(devices: &str) -> Value {
        json::parse(&format!(r#"{{"v":1,"devices":[{devices}]}}"#)).unwrap()
    }

    #[test]
    fn alert_entries_are_filtered_one_by_one() {
        let f = file(&format!(
            r#"7,{{"token":"aaaaaaaaaaaaaaaa","env":"production","key":"{KEY}","notify":{{"blocked":true}}}},
               {{"token":"bbbbbbbbbbbbbbbb","env":"staging","key":"{KEY}","notify":{{"blocked":true}}}},
               {{"token":"cccccccccccccccc","env":"sandbox","key":"{KEY}","notify":{{"done":true}}}},
               {{"token":"dddddddddddddddd","env":"sandbox","key":"short","notify":{{"blocked":true}}}},
               {{"token":"eeeeeeeeeeeeeeee","env":"sandbox","key":"{KEY}","notify":{{"blocked":"yes"}}}},
               {{"token":"ffffffffffffffff","env":"sandbox","session":"w","key":"{KEY}","notify":{{"blocked":true}}}}"#
        ));
        let tokens = |session: Session| {
            alert_devices(Some(&f), &session, "blocked")
                .into_iter()
                .map(|d| d.token[..1].to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(tokens(Session::Default), ["a"]);
        assert_eq!(tokens(Session::Named("w".into())), ["a", "f"]);
        assert_eq!(tokens(Session::Unknown), ["a"]);
    }

    #[test]
    fn alert_tokens_the_relay_would_refuse_are_skipped_and_named() {
        // The relay's alert path refuses anything but 16 to 200 lowercase
        // hex digits with 400 bad_token.
        let good = "0123456789abcdef";
        let refused = [
            "short",
            "0123456789ABCDEF",
            "0123456789abcdeg",
            "0123456789abcde",
        ];
        let long = "a".repeat(201);
        let mut entries = vec![format!(
            r#"{{"token":"{good}","env":"production","key":"{KEY}","notify":{{"blocked":true}}}}"#
        )];
        for token in refused.iter().copied().chain([long.as_str()]) {
            entries.push(format!(
                r#"{{"token":"{token}","env":"production","key":"{KEY}","notify":{{"blocked":true}}}}"#
            ));
        }
        // Not wanted for this flag anyway: not named.
        entries.push(format!(
            r#"{{"token":"nope","env":"production","key":"{KEY}","notify":{{"done":true}}}}"#
        ));
        let f = file(&entries.join(","));
        let selection = alert_selection(Some(&f), &Session::Default, "blocked");
        let tokens: Vec<&str> = selection.devices.iter().map(|d| d.token.as_str()).collect();
        assert_eq!(tokens, [good]);
        let mut expected: Vec<String> = refused.iter().map(|t| (*t).to_owned()).collect();
        expected.push(long.clone());
        assert_eq!(selection.refused, expected);
        assert!(is_activity_token(&"a".repeat(200)));
        assert!(!is_activity_token(&long));
    }

    #[test]
    fn lenient_key_decoding_matches_node() {
        let padded = format!("{KEY}=");
        let spaced = format!(" {}\n{} ", &KEY[..10], &KEY[10..]);
        for text in [padded.as_str(), spaced.as_str()] {
            assert_eq!(decode_base64_lenient(text).len(), 32);
        }
        let entry = json::parse(&format!(r#"{{"key":"{spaced}"}}"#).replace('\n', "\\n")).unwrap();
        assert!(entry_key(&entry).is_some());
    }

    #[test]
    fn activity_entries_need_a_hex_token_and_may_override_env() {
        let f = file(&format!(
            r#"{{"token":"x","env":"bogus","key":"{KEY}","live_activity":{{"token":"00112233445566ff","env":"sandbox","host_name":""}}}},
               {{"token":"y","env":"production","key":"{KEY}","live_activity":{{"token":"00112233445566FF"}}}},
               {{"token":"z","env":"production","key":"{KEY}","live_activity":[]}}"#
        ));
        let devices = activity_devices(Some(&f), &Session::Default);
        assert_eq!(devices.len(), 1);
        assert_eq!(devices[0].env, "sandbox");
        assert_eq!(devices[0].host_name, None);
    }

    #[test]
    fn removals_keep_unknown_fields_in_order() {
        let mut f = json::parse(r#"{"v":1,"z":0,"devices":[{"token":"a","x":1},{"token":"b","live_activity":{"token":"t"},"q":[2]}],"after":true}"#).unwrap();
        assert!(!remove_tokens(&mut f, &["nope".into()]));
        assert!(remove_live_activities(&mut f, &["t".into()]));
        assert!(remove_tokens(&mut f, &["a".into()]));
        assert_eq!(
            f.to_json(),
            r#"{"v":1,"z":0,"devices":[{"token":"b","q":[2]}],"after":true}"#
        );
    }
}

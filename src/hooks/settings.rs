//! `notify.json`: the plugin-side settings of both event hooks (relay URL,
//! debounce and retry delays, an optional extra CA for a self-hosted relay).
//!
//! The file is optional and hand-edited, so reading never fails: an absent,
//! unreadable, oversized or invalid file means the defaults, and each field
//! falls back on its own. Legacy relay URLs map to the production relay.
//! Delays are capped at [`MAX_DELAY_MS`], so no setting keeps a hook
//! process alive for long.

use std::path::{Path, PathBuf};

use crate::base::json::{self, Value};

/// The file's name in the plugin config dir.
pub(crate) const FILE_NAME: &str = "notify.json";
/// The production Push Relay.
pub(crate) const DEFAULT_RELAY_URL: &str = "https://heeler-apns.bybee.dev";
/// Relay origins older plugins and apps wrote; both mean the default.
pub(crate) const LEGACY_RELAY_URLS: [&str; 2] = [
    "https://herdr-push-relay.69709991236.workers.dev",
    "https://herdr-apns.bybee.dev",
];
/// Larger files are not settings anyone wrote by hand: treated as `{}`.
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Longest debounce or retry delay honoured: a larger value means this.
pub(crate) const MAX_DELAY_MS: u64 = 60_000;

/// The effective settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifySettings {
    /// Base URL without trailing `/`.
    pub relay_url: String,
    pub debounce_ms: u64,
    pub activity_debounce_ms: u64,
    pub retry_delay_ms: u64,
    /// PEM file of extra trust anchors for the relay's TLS certificate.
    pub relay_ca_file: Option<PathBuf>,
}

impl Default for NotifySettings {
    fn default() -> NotifySettings {
        NotifySettings {
            relay_url: DEFAULT_RELAY_URL.to_owned(),
            debounce_ms: 5_000,
            activity_debounce_ms: 1_500,
            retry_delay_ms: 1_000,
            relay_ca_file: None,
        }
    }
}

/// JavaScript's `String.prototype.trim` set of characters.
fn is_js_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// The relay URL rule: trimmed, trailing `/` runs removed, empty or legacy
/// meaning the default.
pub fn normalize_relay_url(raw: &str) -> String {
    let url = raw.trim_matches(is_js_space).trim_end_matches('/');
    if url.is_empty() || LEGACY_RELAY_URLS.contains(&url) {
        DEFAULT_RELAY_URL.to_owned()
    } else {
        url.to_owned()
    }
}

/// Settings from the parsed file (any JSON value; non-objects mean `{}`).
pub fn from_value(value: &Value, config_dir: &Path) -> NotifySettings {
    let defaults = NotifySettings::default();
    let integer = |key: &str, default: u64| {
        value
            .get(key)
            .and_then(Value::as_i64)
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(default)
    };
    let delay = |key: &str, default: u64| integer(key, default).min(MAX_DELAY_MS);
    NotifySettings {
        relay_url: value
            .get("relay_url")
            .and_then(Value::as_str)
            .map(normalize_relay_url)
            .unwrap_or(defaults.relay_url),
        debounce_ms: delay("debounce_ms", defaults.debounce_ms),
        activity_debounce_ms: delay("activity_debounce_ms", defaults.activity_debounce_ms),
        retry_delay_ms: delay("retry_delay_ms", defaults.retry_delay_ms),
        relay_ca_file: value
            .get("relay_ca_file")
            .and_then(Value::as_str)
            .map(|s| s.trim_matches(is_js_space))
            .filter(|s| !s.is_empty())
            .map(|s| config_dir.join(s)),
    }
}

/// Reads `<config_dir>/notify.json`; never fails.
pub fn load(config_dir: &Path) -> NotifySettings {
    let path = config_dir.join(FILE_NAME);
    from_text(
        crate::base::state_file::read_config_text(&path, MAX_FILE_BYTES).as_deref(),
        config_dir,
    )
}

/// Settings from the file's text (`None` when it is absent or unreadable):
/// text over [`MAX_FILE_BYTES`] or not JSON means the defaults.
pub fn from_text(text: Option<&str>, config_dir: &Path) -> NotifySettings {
    let value = text
        .filter(|t| t.len() as u64 <= MAX_FILE_BYTES)
        .and_then(|t| json::parse(t).ok())
        .unwrap_or(Value::Null);
    from_value(&value, config_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(text: &str) -> NotifySettings {
        from_value(&json::parse(text).unwrap(), Path::new("/cfg"))
    }

    #[test]
    fn defaults_and_legacy_urls() {
        assert_eq!(settings("{}"), NotifySettings::default());
        assert_eq!(settings("[1]"), NotifySettings::default());
        for legacy in LEGACY_RELAY_URLS {
            let text = format!(r#"{{"relay_url":" {legacy}// "}}"#);
            assert_eq!(settings(&text).relay_url, DEFAULT_RELAY_URL);
        }
        assert_eq!(
            settings(r#"{"relay_url":"https://r.example/base///"}"#).relay_url,
            "https://r.example/base"
        );
        assert_eq!(
            settings(r#"{"relay_url":"   "}"#).relay_url,
            DEFAULT_RELAY_URL
        );
    }

    #[test]
    fn text_over_the_cap_or_not_json_means_the_defaults() {
        let dir = Path::new("/cfg");
        let custom = r#"{"relay_url":"https://r.example"}"#;
        assert_eq!(from_text(Some(custom), dir).relay_url, "https://r.example");
        assert_eq!(from_text(None, dir), NotifySettings::default());
        assert_eq!(from_text(Some("{nope"), dir), NotifySettings::default());
        let at_cap = format!(
            "{custom}{}",
            " ".repeat(MAX_FILE_BYTES as usize - custom.len())
        );
        assert_eq!(from_text(Some(&at_cap), dir).relay_url, "https://r.example");
        let over_cap = format!("{at_cap} ");
        assert_eq!(from_text(Some(&over_cap), dir), NotifySettings::default());
    }

    #[test]
    fn integers_fall_back_one_by_one() {
        let s = settings(
            r#"{"debounce_ms":0,"activity_debounce_ms":-1,"retry_delay_ms":2.5,"relay_ca_file":"ca.pem"}"#,
        );
        assert_eq!(s.debounce_ms, 0);
        assert_eq!(s.activity_debounce_ms, 1_500);
        assert_eq!(s.retry_delay_ms, 1_000);
        assert_eq!(s.relay_ca_file, Some(PathBuf::from("/cfg/ca.pem")));
        assert_eq!(settings(r#"{"debounce_ms":20.0}"#).debounce_ms, 20);
    }

    #[test]
    fn delays_are_capped_at_a_minute() {
        // A hook is a process herdr started; a delay of years would keep it
        // alive indefinitely.
        let s = settings(
            r#"{"debounce_ms":1e15,"activity_debounce_ms":60001,"retry_delay_ms":9007199254740991}"#,
        );
        assert_eq!(s.debounce_ms, MAX_DELAY_MS);
        assert_eq!(s.activity_debounce_ms, MAX_DELAY_MS);
        assert_eq!(s.retry_delay_ms, MAX_DELAY_MS);
        assert_eq!(MAX_DELAY_MS, 60_000);
        assert_eq!(settings(r#"{"debounce_ms":60000}"#).debounce_ms, 60_000);
    }
}

//! `pair.json` in the plugin config directory: the advertised SSH port, extra
//! addresses, and a launcher for a Pairing Code v2.
//!
//! Every value the popup cannot honour is named in the checklist rather than
//! quietly replaced: a Tailscale-SSH host that asked for port 2222 must see
//! why the code still says 22. Parsing is pure (`from_contents`); `read`
//! only adds the file access. The popup re-reads the port on every repaint,
//! and reads `addresses` and `launcher` once when it opens.

use std::io;
use std::path::Path;

use crate::base::json::{self, Value};
use crate::wire::pairing_code::is_safe_absolute_path;

pub(crate) const FILE_NAME: &str = "pair.json";
pub(crate) const DEFAULT_SSH_PORT: u16 = 22;

/// Everything pair.json says, with one warning per value it could not honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairConfig {
    /// The port to advertise: the file's `ssh_port`, or 22.
    pub ssh_port: u16,
    /// Why `ssh_port` fell back to 22 (also covers an unreadable file).
    pub(crate) port_warning: Option<String>,
    /// The same reason as a value, for callers that grade it (`heeler
    /// doctor`); `port_warning` is its [`PortFallback::warning`] text.
    pub(crate) port_fallback: Option<PortFallback>,
    /// `addresses`, listed first and pre-checked. Empty when absent/invalid.
    pub addresses: Vec<String>,
    pub(crate) addresses_warning: Option<String>,
    /// `launcher`: an absolute path to put in a v2 code.
    pub launcher: Option<String>,
    pub(crate) launcher_warning: Option<String>,
}

impl Default for PairConfig {
    fn default() -> Self {
        PairConfig {
            ssh_port: DEFAULT_SSH_PORT,
            port_warning: None,
            port_fallback: None,
            addresses: Vec::new(),
            addresses_warning: None,
            launcher: None,
            launcher_warning: None,
        }
    }
}

/// Why the advertised port is 22 although pair.json exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PortFallback {
    /// The file exists but could not be read: Node's error code (or the
    /// message).
    Unreadable(String),
    /// The bytes are not UTF-8 JSON.
    NotJson,
    NotObject,
    /// `ssh_port` is not an integer 1..65535: the value as JSON.
    InvalidPort(String),
}

impl PortFallback {
    /// The checklist sentence for this reason.
    pub fn warning(&self) -> String {
        match self {
            PortFallback::Unreadable(code) => format!("pair.json could not be read ({code})."),
            PortFallback::NotJson => "pair.json is not valid JSON.".to_owned(),
            PortFallback::NotObject => "pair.json is not a JSON object.".to_owned(),
            PortFallback::InvalidPort(value) => {
                format!("pair.json ssh_port {value} is not an integer 1..65535.")
            }
        }
    }

    /// The config with the default port, for this reason.
    fn into_config(self) -> PairConfig {
        PairConfig {
            port_warning: Some(self.warning()),
            port_fallback: Some(self),
            ..PairConfig::default()
        }
    }
}

impl PairConfig {
    /// The checklist lines for every warning, in a fixed order. The port one
    /// ends with what is advertised instead.
    pub fn warning_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(warning) = &self.port_warning {
            lines.push(format!("{warning} Advertising {}.", self.ssh_port));
        }
        lines.extend(self.addresses_warning.iter().cloned());
        lines.extend(self.launcher_warning.iter().cloned());
        lines
    }
}

/// The largest pair.json read; a longer one is unreadable.
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Reads `<config_dir>/pair.json`. No config dir, or no file: the defaults.
pub fn read(config_dir: Option<&Path>) -> PairConfig {
    match config_dir {
        None => PairConfig::default(),
        Some(dir) => from_read(read_bytes(dir)),
    }
}

/// The bytes of `<config_dir>/pair.json`, through the one bounded,
/// non-blocking config read (`state_file::read_config`): a link is
/// followed, but a FIFO, a device or a file over [`MAX_FILE_BYTES`] is an
/// error, never a hang or an unbounded read.
pub(crate) fn read_bytes(config_dir: &Path) -> io::Result<Vec<u8>> {
    crate::base::state_file::read_config(&config_dir.join(FILE_NAME), MAX_FILE_BYTES)
}

/// The config from the outcome of reading the file.
pub(crate) fn from_read(result: io::Result<Vec<u8>>) -> PairConfig {
    match result {
        Ok(bytes) => from_contents(&bytes),
        Err(error) if error.kind() == io::ErrorKind::NotFound => PairConfig::default(),
        Err(error) => PortFallback::Unreadable(error_code(&error)).into_config(),
    }
}

/// Node's `err.code` for the errors a read can plausibly hit, else the
/// message.
fn error_code(error: &io::Error) -> String {
    let name = match error.raw_os_error() {
        Some(libc::EACCES) => "EACCES",
        Some(libc::EPERM) => "EPERM",
        Some(libc::EISDIR) => "EISDIR",
        Some(libc::ENOTDIR) => "ENOTDIR",
        Some(libc::ELOOP) => "ELOOP",
        Some(libc::EIO) => "EIO",
        Some(libc::EMFILE) => "EMFILE",
        Some(libc::ENAMETOOLONG) => "ENAMETOOLONG",
        _ => return error.to_string(),
    };
    name.to_owned()
}

/// The config from the file's bytes.
pub fn from_contents(bytes: &[u8]) -> PairConfig {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return PortFallback::NotJson.into_config();
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Ok(value) = json::parse(text) else {
        return PortFallback::NotJson.into_config();
    };
    let Some(object) = value.as_object() else {
        return PortFallback::NotObject.into_config();
    };
    let mut config = PairConfig::default();
    if let Some(port) = object.get("ssh_port") {
        match port
            .as_i64()
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p >= 1)
        {
            Some(p) => config.ssh_port = p,
            None => {
                let fallback = PortFallback::InvalidPort(port.to_json());
                config.port_warning = Some(fallback.warning());
                config.port_fallback = Some(fallback);
            }
        }
    }
    if let Some(addresses) = object.get("addresses") {
        match valid_addresses(addresses) {
            Some(list) => config.addresses = list,
            None => {
                config.addresses_warning = Some(format!(
                    "pair.json addresses {} is not a list of non-empty strings without whitespace; ignored.",
                    clipped_json(addresses)
                ));
            }
        }
    }
    if let Some(launcher) = object.get("launcher") {
        match launcher.as_str().filter(|p| is_safe_absolute_path(p)) {
            Some(path) => config.launcher = Some(path.to_owned()),
            None => {
                config.launcher_warning = Some(format!(
                    "pair.json launcher {} is not an absolute path without ', \\ or control characters; ignored.",
                    clipped_json(launcher)
                ));
            }
        }
    }
    config
}

fn valid_addresses(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|item| {
            item.as_str()
                .filter(|s| !s.is_empty() && !s.chars().any(is_js_whitespace))
                .map(str::to_owned)
        })
        .collect()
}

/// JavaScript's `\s`.
fn is_js_whitespace(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// The JSON of a value, cut to a length that fits a checklist line.
fn clipped_json(value: &Value) -> String {
    const MAX_CHARS: usize = 60;
    let text = value.to_json();
    if text.chars().count() <= MAX_CHARS {
        text
    } else {
        let head: String = text.chars().take(MAX_CHARS - 1).collect();
        format!("{head}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port_of(text: &str) -> (u16, Option<String>) {
        let config = from_contents(text.as_bytes());
        (config.ssh_port, config.port_warning)
    }

    #[test]
    fn absent_file_or_field_means_22_without_warning() {
        let missing = from_read(Err(io::Error::from(io::ErrorKind::NotFound)));
        assert_eq!(missing, PairConfig::default());
        assert_eq!(port_of("{}"), (22, None));
        assert_eq!(port_of(r#"{"other":1}"#), (22, None));
        assert_eq!(read(None), PairConfig::default());
    }

    #[test]
    fn valid_ports() {
        assert_eq!(port_of(r#"{"ssh_port":2222}"#), (2222, None));
        assert_eq!(port_of(r#"{"ssh_port":22.0}"#), (22, None));
        assert_eq!(port_of(r#"{"ssh_port":65535}"#), (65535, None));
        assert_eq!(port_of(r#"{"ssh_port":1}"#), (1, None));
    }

    #[test]
    fn invalid_ports_name_the_value() {
        let warn = |v: &str| {
            Some(format!(
                "pair.json ssh_port {v} is not an integer 1..65535."
            ))
        };
        assert_eq!(port_of(r#"{"ssh_port":0}"#), (22, warn("0")));
        assert_eq!(port_of(r#"{"ssh_port":65536}"#), (22, warn("65536")));
        assert_eq!(port_of(r#"{"ssh_port":-5}"#), (22, warn("-5")));
        assert_eq!(port_of(r#"{"ssh_port":22.5}"#), (22, warn("22.5")));
        assert_eq!(port_of(r#"{"ssh_port":"2222"}"#), (22, warn("\"2222\"")));
        assert_eq!(port_of(r#"{"ssh_port":null}"#), (22, warn("null")));
        assert_eq!(port_of(r#"{"ssh_port":[2222]}"#), (22, warn("[2222]")));
    }

    #[test]
    fn file_level_problems() {
        assert_eq!(
            port_of("{nope"),
            (22, Some("pair.json is not valid JSON.".into()))
        );
        assert_eq!(
            port_of(""),
            (22, Some("pair.json is not valid JSON.".into()))
        );
        for text in ["null", "[]", "3", "\"x\""] {
            assert_eq!(
                port_of(text),
                (22, Some("pair.json is not a JSON object.".into())),
                "{text}"
            );
        }
        let unreadable = from_read(Err(io::Error::from_raw_os_error(libc::EACCES)));
        assert_eq!(
            unreadable.port_warning.as_deref(),
            Some("pair.json could not be read (EACCES).")
        );
        assert_eq!(
            unreadable.warning_lines(),
            vec!["pair.json could not be read (EACCES). Advertising 22.".to_string()]
        );
    }

    #[test]
    fn the_port_warning_is_the_text_of_its_reason() {
        let cases: [(&[u8], Option<PortFallback>); 6] = [
            (b"{}", None),
            (b"{\"ssh_port\":2222}", None),
            (b"{nope", Some(PortFallback::NotJson)),
            (b"\xff", Some(PortFallback::NotJson)),
            (b"[]", Some(PortFallback::NotObject)),
            (
                b"{\"ssh_port\":\"x\"}",
                Some(PortFallback::InvalidPort("\"x\"".to_owned())),
            ),
        ];
        for (bytes, fallback) in cases {
            let config = from_contents(bytes);
            assert_eq!(config.port_fallback, fallback, "{bytes:?}");
            assert_eq!(
                config.port_warning,
                config.port_fallback.as_ref().map(PortFallback::warning)
            );
        }
        let unreadable = from_read(Err(io::Error::from_raw_os_error(libc::EACCES)));
        assert_eq!(
            unreadable.port_fallback,
            Some(PortFallback::Unreadable("EACCES".to_owned()))
        );
    }

    #[test]
    fn addresses() {
        let config = from_contents(br#"{"addresses":["192.168.1.10","nas.example.com"]}"#);
        assert_eq!(config.addresses, vec!["192.168.1.10", "nas.example.com"]);
        assert_eq!(config.addresses_warning, None);
        for bad in [
            r#""1.2.3.4""#,
            r#"["a b"]"#,
            r#"[""]"#,
            r#"[1]"#,
            r#"["ok",null]"#,
        ] {
            let config = from_contents(format!(r#"{{"addresses":{bad}}}"#).as_bytes());
            assert!(config.addresses.is_empty(), "{bad}");
            assert_eq!(
                config.addresses_warning,
                Some(format!(
                    "pair.json addresses {bad} is not a list of non-empty strings without whitespace; ignored."
                ))
            );
        }
    }

    #[test]
    fn launcher() {
        let config = from_contents(br#"{"launcher":"/opt/app/herdr launcher"}"#);
        assert_eq!(config.launcher.as_deref(), Some("/opt/app/herdr launcher"));
        for bad in [
            r#""relative/x""#,
            r#""/it's""#,
            r#""/a\\b""#,
            r#""/a\nb""#,
            "7",
        ] {
            let config = from_contents(format!(r#"{{"launcher":{bad}}}"#).as_bytes());
            assert_eq!(config.launcher, None, "{bad}");
            assert!(
                config.launcher_warning.as_deref().is_some_and(|w| w
                    .starts_with("pair.json launcher ")
                    && w.ends_with("ignored.")),
                "{bad}"
            );
        }
    }

    #[test]
    fn warning_lines_in_order() {
        let config = from_contents(br#"{"ssh_port":"x","addresses":3,"launcher":"r"}"#);
        let lines = config.warning_lines();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[0],
            "pair.json ssh_port \"x\" is not an integer 1..65535. Advertising 22."
        );
        assert!(lines[1].starts_with("pair.json addresses 3 "));
        assert!(lines[2].starts_with("pair.json launcher \"r\" "));
    }

    #[test]
    fn long_values_are_clipped() {
        let long = "a b".repeat(40);
        let config = from_contents(format!(r#"{{"addresses":["{long}"]}}"#).as_bytes());
        let warning = config.addresses_warning.unwrap();
        assert!(warning.contains('…'));
        assert!(!warning.contains(&long));
    }
}

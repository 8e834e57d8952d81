//! Which herdr session a hook serves, and which registrations it delivers to.
//!
//! Every herdr session of one user runs our hooks with the same config and
//! state directories, so each hook derives its session from
//! `HERDR_SOCKET_PATH` and delivers only to its own entries (plus legacy
//! entries that carry no session). Pinned by `notification-session-v1.json`.

use crate::base::json::Value;

/// The session a hook process belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Session {
    /// herdr's default session (`""` on the wire).
    Default,
    /// A named session (`herdr --session <name>`).
    Named(String),
    /// A socket path of no known shape (a custom override): delivers to
    /// legacy entries only.
    Unknown,
}

/// herdr's session-name rule: 1 to 64 bytes of ASCII letters, digits, `.`,
/// `_` and `-`, and not `.` or `..`.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The session of a socket path (`None` = `HERDR_SOCKET_PATH` unset).
pub fn from_socket_path(socket_path: Option<&str>) -> Session {
    let path = match socket_path {
        None | Some("") => return Session::Default,
        Some(path) => path,
    };
    if let Some(name) = named_session_of(path) {
        return Session::Named(name.to_owned());
    }
    if path.ends_with("/herdr/herdr.sock") {
        return Session::Default;
    }
    Session::Unknown
}

/// `<name>` of a path ending in `/herdr/sessions/<name>/herdr.sock`, when it
/// is a valid session name.
pub(crate) fn named_session_of(path: &str) -> Option<&str> {
    let rest = path.strip_suffix("/herdr.sock")?;
    let (prefix, name) = rest.rsplit_once('/')?;
    (prefix.ends_with("/herdr/sessions") && is_valid_name(name)).then_some(name)
}

impl Session {
    /// The wire form: `""`, the name, or `None` for unknown.
    pub(crate) fn wire_name(&self) -> Option<&str> {
        match self {
            Session::Default => Some(""),
            Session::Named(name) => Some(name),
            Session::Unknown => None,
        }
    }

    /// The delivery rule: an entry without a string `session` is legacy and
    /// gets every session's deliveries; otherwise names must match exactly.
    pub fn delivers_to(&self, entry: &Value) -> bool {
        match entry.get("session").and_then(Value::as_str) {
            None => true,
            Some(entry_session) => self.wire_name() == Some(entry_session),
        }
    }

    /// The directory for this session's hook state: `sessions/<name>` under
    /// the plugin state dir for a named session, the state dir itself
    /// otherwise (the paths older plugins used).
    pub fn state_dir(&self, plugin_state_dir: &std::path::Path) -> std::path::PathBuf {
        match self {
            Session::Named(name) => plugin_state_dir.join("sessions").join(name),
            Session::Default | Session::Unknown => plugin_state_dir.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_shape_wins_over_default_suffix() {
        assert_eq!(
            from_socket_path(Some("/x/herdr/sessions/herdr/herdr.sock")),
            Session::Named("herdr".into())
        );
        assert_eq!(
            from_socket_path(Some("/herdr/herdr.sock")),
            Session::Default
        );
        assert_eq!(
            from_socket_path(Some("/x/herdr/sessions/a/b/herdr.sock")),
            Session::Unknown
        );
    }

    #[test]
    fn state_dir_is_scoped_for_named_sessions_only() {
        let base = std::path::Path::new("/s");
        assert_eq!(
            Session::Named("w".into()).state_dir(base),
            base.join("sessions/w")
        );
        assert_eq!(Session::Unknown.state_dir(base), base);
    }
}

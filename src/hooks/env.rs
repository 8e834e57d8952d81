//! The prologue both event hooks share: which herdr environment variables
//! they need, in which order they are checked, and how the event JSON is read.
//!
//! herdr runs `notify-hook` and `activity-hook` as fresh processes for every
//! `pane.agent_status_changed`; both must fail the same way on a broken
//! environment and read the event equally leniently (herdr's payload shape
//! carries no stability guarantee), so the rules live here once.
//!
//! The config dir says where to deliver and the state dir holds the markers
//! and the runtime record other commands act on, so a hook that finds
//! either one writable by another user ([`crate::base::dirs::trusted`])
//! stops right after the config dir is known, before it reads or writes
//! anything of theirs: one log line, nothing delivered, nothing recorded.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::base::dirs::{self, Untrusted};
use crate::base::json::{self, Value};
use crate::herdr::client::{Deadlines, HerdrClient};
use crate::herdr::session::{self, Session};

/// What a hook learns from its environment.
#[derive(Debug, Clone)]
pub struct HookEnv {
    /// `HERDR_PLUGIN_CONFIG_DIR`: notifications.json, notify.json.
    pub config_dir: PathBuf,
    /// `HERDR_PLUGIN_EVENT_JSON`, unparsed.
    pub event_json: String,
    /// The herdr session derived from `HERDR_SOCKET_PATH`.
    pub session: Session,
    /// `HERDR_PLUGIN_STATE_DIR`: the plugin's state dir (the failure log).
    pub plugin_state_dir: PathBuf,
    /// The session's own state directory (dedupe markers, claim, last-state,
    /// the hook queue).
    pub state_dir: PathBuf,
    /// `HERDR_BIN_PATH`: the fallback when the socket is unusable.
    pub herdr_bin: PathBuf,
    /// `HERDR_SOCKET_PATH`, when set and non-empty.
    pub socket_path: Option<PathBuf>,
}

impl HookEnv {
    /// The herdr client of this hook's session: its socket, then its
    /// binary, each call bounded by `deadlines`.
    pub fn herdr(&self, deadlines: Deadlines) -> HerdrClient {
        HerdrClient {
            socket: self.socket_path.clone(),
            bin: self.herdr_bin.clone(),
            deadlines,
        }
    }
}

/// A required variable is missing or empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingEnv(pub &'static str);

impl std::fmt::Display for MissingEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is not set; this script must run as a herdr event hook",
            self.0
        )
    }
}

impl std::error::Error for MissingEnv {}

fn required(
    lookup: &dyn Fn(&str) -> Option<OsString>,
    name: &'static str,
) -> Result<OsString, MissingEnv> {
    lookup(name)
        .filter(|v| !v.is_empty())
        .ok_or(MissingEnv(name))
}

/// Step 1 of both hooks: the config dir, checked before anything else.
pub fn config_dir(lookup: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf, MissingEnv> {
    required(lookup, "HERDR_PLUGIN_CONFIG_DIR").map(PathBuf::from)
}

/// Step 3: the rest of the environment, in the contract's order (event JSON,
/// session, state dir, herdr binary).
pub fn rest(
    config_dir: PathBuf,
    lookup: &dyn Fn(&str) -> Option<OsString>,
) -> Result<HookEnv, MissingEnv> {
    let event_json = required(lookup, "HERDR_PLUGIN_EVENT_JSON")?
        .to_string_lossy()
        .into_owned();
    let socket = lookup("HERDR_SOCKET_PATH").filter(|v| !v.is_empty());
    let session =
        session::from_socket_path(socket.as_ref().map(|s| s.to_string_lossy()).as_deref());
    let plugin_state_dir = PathBuf::from(required(lookup, "HERDR_PLUGIN_STATE_DIR")?);
    let herdr_bin = PathBuf::from(required(lookup, "HERDR_BIN_PATH")?);
    Ok(HookEnv {
        config_dir,
        event_json,
        state_dir: session.state_dir(&plugin_state_dir),
        plugin_state_dir,
        session,
        herdr_bin,
        socket_path: socket.map(PathBuf::from),
    })
}

/// The process environment as a lookup function.
pub(crate) fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// The fields of a `pane_agent_status_changed` event the hooks use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub pane: String,
    /// Lowercased.
    pub status: String,
    /// `data.agent`, the agent kind.
    pub kind: Option<String>,
    pub workspace_id: Option<String>,
    pub title: Option<String>,
}

/// Why the event JSON is unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventError {
    NotJson,
    PaneMissing,
    StatusMissing,
}

impl std::fmt::Display for EventError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EventError::NotJson => "HERDR_PLUGIN_EVENT_JSON is not JSON",
            EventError::PaneMissing => "event data.pane_id missing",
            EventError::StatusMissing => "event data.agent_status missing",
        })
    }
}

impl std::error::Error for EventError {}

/// Parses the event leniently: only `data.pane_id` and `data.agent_status`
/// are required; everything unrecognised is ignored.
pub fn parse_event(text: &str) -> Result<Event, EventError> {
    let value = json::parse(text).map_err(|_| EventError::NotJson)?;
    let data = value.get("data");
    let text_field = |key: &str| {
        data.and_then(|d| d.get(key))
            .and_then(Value::as_nonempty_str)
            .map(str::to_owned)
    };
    let pane = text_field("pane_id").ok_or(EventError::PaneMissing)?;
    let status = text_field("agent_status")
        .ok_or(EventError::StatusMissing)?
        .to_lowercase();
    Ok(Event {
        pane,
        status,
        kind: text_field("agent"),
        workspace_id: text_field("workspace_id"),
        title: text_field("title"),
    })
}

/// Why a hook stopped before doing anything of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    Env(MissingEnv),
    Event(EventError),
    Untrusted(Untrusted),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Env(e) => write!(f, "{e}"),
            StartError::Event(e) => write!(f, "{e}"),
            StartError::Untrusted(e) => write!(f, "not run: {e}"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Env(e) => Some(e),
            StartError::Event(e) => Some(e),
            StartError::Untrusted(e) => Some(e),
        }
    }
}

impl From<MissingEnv> for StartError {
    fn from(e: MissingEnv) -> StartError {
        StartError::Env(e)
    }
}

impl From<Untrusted> for StartError {
    fn from(e: Untrusted) -> StartError {
        StartError::Untrusted(e)
    }
}

impl From<EventError> for StartError {
    fn from(e: EventError) -> StartError {
        StartError::Event(e)
    }
}

/// The start both hooks share, in the contract's order: the config dir,
/// the trust of the config and state dirs, the sidebar snapshot refresh,
/// the runtime record for usage queries, the rest of the environment, and
/// the event.
pub fn start(lookup: &dyn Fn(&str) -> Option<OsString>) -> Result<(HookEnv, Event), StartError> {
    let config_dir = config_dir(lookup)?;
    trusted(&config_dir, lookup)?;
    refresh_sidebar_snapshot(&config_dir);
    crate::usage::runtime::record_for_hook(lookup);
    let env = rest(config_dir, lookup)?;
    dirs::trusted_tree(&env.state_dir, STATE_SUBDIRS)?;
    let event = parse_event(&env.event_json)?;
    Ok((env, event))
}

/// The directories of a session's state dir the hooks read.
const STATE_SUBDIRS: &[&str] = &["notify", "activity", "queue", "queue/spool"];

fn trusted(config_dir: &Path, lookup: &dyn Fn(&str) -> Option<OsString>) -> Result<(), Untrusted> {
    let state_dir = lookup("HERDR_PLUGIN_STATE_DIR").filter(|v| !v.is_empty());
    trusted_dirs(config_dir, state_dir.as_deref().map(Path::new))
}

/// Whether the config dir and, when known, the plugin state dir with the
/// subdirectories the hooks use are trusted (also `heeler doctor`'s check).
pub(crate) fn trusted_dirs(config_dir: &Path, state_dir: Option<&Path>) -> Result<(), Untrusted> {
    dirs::trusted(config_dir)?;
    match state_dir {
        Some(state_dir) => {
            dirs::trusted_tree(state_dir, &["usage", "sessions"])?;
            dirs::trusted_tree(state_dir, STATE_SUBDIRS)
        }
        None => Ok(()),
    }
}

/// The sidebar snapshot refresh (`sidebar/snapshot.rs`), first thing in both hooks.
/// A failure is one log line and never fails the hook.
pub(crate) fn refresh_sidebar_snapshot(config_dir: &Path) {
    crate::sidebar::snapshot::refresh_for_event(config_dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_is_parsed_leniently_and_status_lowercased() {
        let event = parse_event(r#"{"event":"x","data":{"pane_id":"wV:p1","agent_status":"Blocked","agent":"claude","title":"","extra":[1]}}"#).unwrap();
        assert_eq!(event.pane, "wV:p1");
        assert_eq!(event.status, "blocked");
        assert_eq!(event.kind.as_deref(), Some("claude"));
        assert_eq!(event.title, None);
        assert_eq!(event.workspace_id, None);
    }

    #[test]
    fn event_errors_are_typed_in_order() {
        assert_eq!(parse_event("nope"), Err(EventError::NotJson));
        assert_eq!(parse_event("[]"), Err(EventError::PaneMissing));
        assert_eq!(
            parse_event(r#"{"data":{"pane_id":"p","agent_status":7}}"#),
            Err(EventError::StatusMissing)
        );
    }

    #[test]
    fn missing_env_is_reported_in_contract_order() {
        let only_config = |name: &str| (name == "HERDR_PLUGIN_CONFIG_DIR").then(|| "/c".into());
        let config = config_dir(&only_config).unwrap();
        assert_eq!(
            rest(config, &only_config).unwrap_err().to_string(),
            "HERDR_PLUGIN_EVENT_JSON is not set; this script must run as a herdr event hook"
        );
        let none = |_: &str| None;
        assert_eq!(
            config_dir(&none),
            Err(MissingEnv("HERDR_PLUGIN_CONFIG_DIR"))
        );
    }

    #[test]
    fn an_untrusted_config_or_state_dir_stops_the_start() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = crate::base::scratch::ScratchDir::new("hook-env-trust");
        let config = scratch.path().join("config");
        let state = scratch.path().join("state");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::create_dir_all(state.join("notify")).unwrap();
        let chmod = |path: &Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        chmod(&config, 0o700);
        chmod(&state, 0o700);
        assert_eq!(trusted_dirs(&config, Some(&state)), Ok(()));
        chmod(&state.join("notify"), 0o777);
        let err = trusted_dirs(&config, Some(&state)).unwrap_err();
        assert_eq!(err.path, state.join("notify"));
        chmod(&state.join("notify"), 0o700);
        chmod(&config, 0o777);
        let lookup = |name: &str| match name {
            "HERDR_PLUGIN_CONFIG_DIR" => Some(config.clone().into_os_string()),
            "HERDR_PLUGIN_STATE_DIR" => Some(state.clone().into_os_string()),
            _ => None,
        };
        match start(&lookup) {
            Err(StartError::Untrusted(e)) => assert_eq!(e.path, config),
            other => panic!("{other:?}"),
        }
    }
}

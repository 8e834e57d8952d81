//! A plugin action that opens one of the plugin's popup panes: herdr
//! actions run headless, so the action asks herdr to open the popup
//! (`heeler pair-action` opens the pairing popup, `heeler usage
//! live-action` the live usage screen), each described by a [`Popup`].
//!
//! It sends `plugin.pane.open` over `HERDR_SOCKET_PATH` (documented and a
//! process spawn cheaper); when that socket cannot be reached it runs
//! `$HERDR_BIN_PATH plugin pane open --plugin <id> --entrypoint <pane>` and
//! exits with that command's status. Both ways are bounded: the socket's
//! answer line has one overall deadline, and the CLI runs through
//! `client::run_cli_within` (killed with its process group past its
//! deadline); what the CLI printed is passed on. The deadlines are herdr's
//! ([`client::Deadlines`]), received from the action's command.
//!
//! An action's output only reaches herdr's plugin log, so when herdr
//! refuses the popup (a second popup while one is open: herdr's popup is a
//! session-modal singleton) the action also shows a herdr notification
//! saying why ([`notice_for`]), the same way it reached herdr.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Instant;

use crate::base::json::{self, Object, Value};
use crate::base::process::RunError;
use crate::herdr::client::{self, Deadlines};

/// The plugin id when herdr does not say (`HERDR_PLUGIN_ID`).
pub(crate) const DEFAULT_PLUGIN_ID: &str = "heeler";

/// A popup an action opens, and how its refusals are told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Popup {
    /// The `[[panes]]` entry that runs the popup.
    pub entrypoint: &'static str,
    /// The id of the open request; its notice's is this plus `:notice`.
    pub request_id: &'static str,
    /// The popup as the notices name it ("Pairing", "Usage").
    pub name: &'static str,
    /// The action as the user runs it again ("Pair").
    pub action: &'static str,
    /// What to do about a popup already open (pairing's own, or another).
    pub already_open: &'static str,
}

/// Why the popup could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PopupActionError {
    /// herdr answered the request with an error.
    Refused {
        /// The popup's name ([`Popup::name`]).
        popup: &'static str,
        code: String,
        message: String,
    },
    /// herdr's answer was not a response line.
    BadResponse(String),
    /// The request reached the socket but no answer came.
    Io(String),
    /// The herdr CLI could not be started.
    Spawn(String),
    /// The herdr CLI exited unsuccessfully.
    Cli(u8),
    /// The herdr CLI did not end within its deadline (seconds).
    TimedOut(u64),
}

impl std::fmt::Display for PopupActionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PopupActionError::Refused {
                popup,
                code,
                message,
            } => write!(
                f,
                "herdr could not open the {} popup: {code}: {message}",
                popup.to_lowercase()
            ),
            PopupActionError::BadResponse(text) => {
                write!(f, "unexpected answer from herdr: {text}")
            }
            PopupActionError::Io(text) => write!(f, "herdr socket: {text}"),
            PopupActionError::Spawn(text) => write!(f, "failed to run herdr: {text}"),
            PopupActionError::Cli(status) => {
                write!(f, "herdr plugin pane open exited with status {status}")
            }
            PopupActionError::TimedOut(secs) => {
                write!(f, "herdr plugin pane open timed out after {secs} s")
            }
        }
    }
}

impl std::error::Error for PopupActionError {}

impl PopupActionError {
    /// The action's exit status: the herdr CLI's when it failed, else 1.
    pub(crate) fn status(&self) -> u8 {
        match self {
            PopupActionError::Cli(status) => *status,
            _ => 1,
        }
    }
}

/// A herdr notification telling the user why no popup opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notice {
    pub(crate) title: String,
    pub(crate) body: String,
}

/// What herdr says when its one popup is already open.
const ALREADY_OPEN: &str = "popup already open";

/// The notice for a refusal of `popup` (`code`, `message` as herdr sent
/// them).
pub(crate) fn notice_for(popup: &Popup, code: &str, message: &str) -> Notice {
    let (name, action) = (popup.name, popup.action);
    if message.contains(ALREADY_OPEN) {
        return Notice {
            title: format!("{name} is already open"),
            body: format!(
                "A popup is already open in this herdr session {}, then run {action} again.",
                popup.already_open
            ),
        };
    }
    if code == "ui_busy" {
        return Notice {
            title: format!("{name} could not open"),
            body: format!(
                "herdr is busy (Settings, copy mode or a dialog is open): close it, then run {action} again."
            ),
        };
    }
    Notice {
        title: format!("{name} could not open"),
        body: format!(
            "herdr refused the {} popup: {code}: {message}",
            name.to_lowercase()
        ),
    }
}

/// The `notification.show` request line for `notice` about `popup`.
pub(crate) fn notification_request(popup: &Popup, notice: &Notice) -> String {
    let params = Object::new()
        .with("title", notice.title.as_str())
        .with("body", notice.body.as_str());
    let request = Object::new()
        .with("id", format!("{}:notice", popup.request_id))
        .with("method", "notification.show")
        .with("params", params);
    let mut line = Value::Object(request).to_json();
    line.push('\n');
    line
}

/// Shows `notice` through herdr's socket (one request per connection);
/// best effort, bounded like the open request.
fn notify_through_socket(path: &str, popup: &Popup, notice: &Notice, deadlines: Deadlines) {
    let Ok(mut stream) = UnixStream::connect(path) else {
        return;
    };
    let deadline = Instant::now() + deadlines.exchange;
    if stream.set_write_timeout(Some(deadlines.exchange)).is_err()
        || stream
            .write_all(notification_request(popup, notice).as_bytes())
            .is_err()
    {
        return;
    }
    let _ = client::read_line_before(&mut stream, deadline);
}

/// Shows `notice` with `herdr notification show`; best effort.
fn notify_through_cli(herdr: &str, notice: &Notice, deadlines: Deadlines) {
    let _ = client::run_cli_within(
        Path::new(herdr),
        &[
            "notification",
            "show",
            &notice.title,
            "--body",
            &notice.body,
        ],
        deadlines.cli,
    );
}

/// The request line that opens `popup`.
pub(crate) fn open_request(popup: &Popup, plugin_id: &str) -> String {
    let params = Object::new()
        .with("plugin_id", plugin_id)
        .with("entrypoint", popup.entrypoint)
        .with("env", Object::new());
    let request = Object::new()
        .with("id", popup.request_id)
        .with("method", "plugin.pane.open")
        .with("params", params);
    let mut line = Value::Object(request).to_json();
    line.push('\n');
    line
}

/// Reads herdr's response line to opening `popup`: `Ok` for a result,
/// the error otherwise.
pub(crate) fn interpret_response(popup: &Popup, line: &str) -> Result<(), PopupActionError> {
    let value =
        json::parse(line.trim_end()).map_err(|_| PopupActionError::BadResponse(line.to_owned()))?;
    if value.get("result").is_some() {
        return Ok(());
    }
    let error = value
        .get("error")
        .ok_or_else(|| PopupActionError::BadResponse(line.trim_end().to_owned()))?;
    let field = |key| {
        error
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Err(PopupActionError::Refused {
        popup: popup.name,
        code: field("code"),
        message: field("message"),
    })
}

/// Opens the popup; `Err(None)` when the socket could not be reached at all
/// (the caller falls back to the CLI).
fn open_through_socket(
    path: &str,
    popup: &Popup,
    plugin_id: &str,
    deadlines: Deadlines,
) -> Result<(), Option<PopupActionError>> {
    let mut stream = UnixStream::connect(path).map_err(|_| None)?;
    let io = |e: std::io::Error| Some(PopupActionError::Io(e.to_string()));
    let deadline = Instant::now() + deadlines.exchange;
    stream
        .set_write_timeout(Some(deadlines.exchange))
        .map_err(io)?;
    stream
        .write_all(open_request(popup, plugin_id).as_bytes())
        .map_err(io)?;
    let line = client::read_line_before(&mut stream, deadline).map_err(io)?;
    interpret_response(popup, &String::from_utf8_lossy(&line)).map_err(Some)
}

fn open_through_cli(
    popup: &Popup,
    plugin_id: &str,
    deadlines: Deadlines,
) -> Result<(), PopupActionError> {
    let herdr = std::env::var("HERDR_BIN_PATH")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "herdr".to_owned());
    let herdr = herdr.as_str();
    let args = [
        "plugin",
        "pane",
        "open",
        "--plugin",
        plugin_id,
        "--entrypoint",
        popup.entrypoint,
    ];
    let finished =
        client::run_cli_within(Path::new(&herdr), &args, deadlines.cli).map_err(|e| match e {
            RunError::TimedOut(_) => PopupActionError::TimedOut(deadlines.cli.as_secs()),
            other => PopupActionError::Spawn(other.to_string()),
        });
    // What the CLI printed reaches herdr's log as it did when it ran with
    // our stdio; a timed-out CLI's output is not kept.
    let finished = finished?;
    let _ = std::io::stdout().lock().write_all(&finished.stdout);
    let _ = std::io::stderr().lock().write_all(&finished.stderr);
    let status = finished.status;
    if status.success() {
        return Ok(());
    }
    if String::from_utf8_lossy(&finished.stderr).contains(ALREADY_OPEN) {
        notify_through_cli(herdr, &notice_for(popup, "", ALREADY_OPEN), deadlines);
    }
    let code = status
        .code()
        .and_then(|c| u8::try_from(c).ok())
        .filter(|c| *c != 0)
        .unwrap_or(1);
    Err(PopupActionError::Cli(code))
}

/// The action: opens `popup` through herdr's socket, else its CLI, each
/// within `deadlines`.
pub(crate) fn open(popup: &Popup, deadlines: Deadlines) -> Result<(), PopupActionError> {
    let plugin_id = std::env::var("HERDR_PLUGIN_ID")
        .ok()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| DEFAULT_PLUGIN_ID.to_owned());
    if let Some(path) = std::env::var("HERDR_SOCKET_PATH")
        .ok()
        .filter(|p| !p.is_empty())
    {
        match open_through_socket(&path, popup, &plugin_id, deadlines) {
            Ok(()) => return Ok(()),
            Err(Some(error)) => {
                if let PopupActionError::Refused { code, message, .. } = &error {
                    let notice = notice_for(popup, code, message);
                    notify_through_socket(&path, popup, &notice, deadlines);
                }
                return Err(error);
            }
            Err(None) => {}
        }
    }
    open_through_cli(popup, &plugin_id, deadlines)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAIR: Popup = Popup {
        entrypoint: "pair",
        request_id: "heeler:pair-action",
        name: "Pairing",
        action: "Pair",
        already_open: "(maybe pairing's own): scan its code or press q there to close it",
    };

    #[test]
    fn request_shape() {
        assert_eq!(
            open_request(&PAIR, "heeler"),
            "{\"id\":\"heeler:pair-action\",\"method\":\"plugin.pane.open\",\"params\":{\"plugin_id\":\"heeler\",\"entrypoint\":\"pair\",\"env\":{}}}\n"
        );
    }

    #[test]
    fn responses() {
        assert_eq!(
            interpret_response(&PAIR, "{\"id\":\"x\",\"result\":{\"type\":\"ok\"}}\n"),
            Ok(())
        );
        assert_eq!(
            interpret_response(
                &PAIR,
                "{\"id\":\"x\",\"error\":{\"code\":\"plugin_pane_open_failed\",\"message\":\"popup already open\"}}"
            ),
            Err(PopupActionError::Refused {
                popup: "Pairing",
                code: "plugin_pane_open_failed".into(),
                message: "popup already open".into()
            })
        );
        assert!(matches!(
            interpret_response(&PAIR, ""),
            Err(PopupActionError::BadResponse(_))
        ));
        assert!(matches!(
            interpret_response(&PAIR, "{}"),
            Err(PopupActionError::BadResponse(_))
        ));
    }

    #[test]
    fn a_second_popup_is_told_not_silent() {
        // herdr's answer to a second open (its popup is a session singleton).
        let notice = notice_for(&PAIR, "plugin_pane_open_failed", "popup already open");
        assert_eq!(notice.title, "Pairing is already open");
        assert!(notice.body.contains("press q there to close it"));
        assert!(
            notice_for(&PAIR, "ui_busy", "settings open")
                .body
                .contains("herdr is busy")
        );
        let other = notice_for(&PAIR, "plugin_not_found", "no plugin heeler");
        assert_eq!(
            other.body,
            "herdr refused the pairing popup: plugin_not_found: no plugin heeler"
        );
        let line = notification_request(
            &PAIR,
            &Notice {
                title: "T".into(),
                body: "B \"q\"".into(),
            },
        );
        assert_eq!(
            line,
            "{\"id\":\"heeler:pair-action:notice\",\"method\":\"notification.show\",\"params\":{\"title\":\"T\",\"body\":\"B \\\"q\\\"\"}}\n"
        );
    }
}

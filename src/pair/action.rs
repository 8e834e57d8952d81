//! `heeler pair-action`: the `pair` action. herdr actions run headless, so
//! the action asks herdr to open the plugin's `pair` popup pane, where
//! `heeler pair` runs.
//!
//! It sends `plugin.pane.open` over `HERDR_SOCKET_PATH` (documented and a
//! process spawn cheaper); when that socket cannot be reached it runs
//! `$HERDR_BIN_PATH plugin pane open --plugin <id> --entrypoint pair` and
//! exits with that command's status. Both ways are bounded: the socket's
//! answer line has one overall deadline, and the CLI runs through
//! `herdr::client::run_cli_within` (killed with its process group past its
//! deadline); what the CLI printed is passed on. The deadlines are herdr's
//! ([`client::Deadlines`]), received from [`run`].
//!
//! An action's output only reaches herdr's plugin log, so when herdr
//! refuses the popup (a second `heeler.pair` while one is open: herdr's
//! popup is a session-modal singleton) the action also shows a herdr
//! notification saying why ([`notice_for`]), the same way it reached herdr.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Instant;

use crate::base::json::{self, Object, Value};
use crate::base::process::RunError;
use crate::exit::Failure;
use crate::herdr::client::{self, Deadlines};

/// The plugin id when herdr does not say (`HERDR_PLUGIN_ID`).
pub(crate) const DEFAULT_PLUGIN_ID: &str = "heeler";
/// The `[[panes]]` entry that runs the popup.
pub(crate) const ENTRYPOINT: &str = "pair";

/// Why the popup could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PairActionError {
    /// herdr answered the request with an error.
    Refused { code: String, message: String },
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

impl std::fmt::Display for PairActionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PairActionError::Refused { code, message } => {
                write!(
                    f,
                    "herdr could not open the pairing popup: {code}: {message}"
                )
            }
            PairActionError::BadResponse(text) => write!(f, "unexpected answer from herdr: {text}"),
            PairActionError::Io(text) => write!(f, "herdr socket: {text}"),
            PairActionError::Spawn(text) => write!(f, "failed to run herdr: {text}"),
            PairActionError::Cli(status) => {
                write!(f, "herdr plugin pane open exited with status {status}")
            }
            PairActionError::TimedOut(secs) => {
                write!(f, "herdr plugin pane open timed out after {secs} s")
            }
        }
    }
}

impl std::error::Error for PairActionError {}

impl From<PairActionError> for Failure {
    fn from(error: PairActionError) -> Failure {
        let status = match error {
            PairActionError::Cli(status) => status,
            _ => 1,
        };
        Failure::new(error.to_string(), status)
    }
}

/// A herdr notification telling the user why no popup opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notice {
    pub title: &'static str,
    pub body: String,
}

/// What herdr says when its one popup is already open.
const ALREADY_OPEN: &str = "popup already open";

/// The notice for a refusal (`code`, `message` as herdr sent them).
pub(crate) fn notice_for(code: &str, message: &str) -> Notice {
    if message.contains(ALREADY_OPEN) {
        return Notice {
            title: "Pairing is already open",
            body: "A popup is already open in this herdr session (maybe pairing's own): scan its code or press q there to close it, then run Pair again.".to_owned(),
        };
    }
    if code == "ui_busy" {
        return Notice {
            title: "Pairing could not open",
            body: "herdr is busy (Settings, copy mode or a dialog is open): close it, then run Pair again.".to_owned(),
        };
    }
    Notice {
        title: "Pairing could not open",
        body: format!("herdr refused the pairing popup: {code}: {message}"),
    }
}

/// The `notification.show` request line for `notice`.
pub(crate) fn notification_request(notice: &Notice) -> String {
    let params = Object::new()
        .with("title", notice.title)
        .with("body", notice.body.as_str());
    let request = Object::new()
        .with("id", "heeler:pair-action:notice")
        .with("method", "notification.show")
        .with("params", params);
    let mut line = Value::Object(request).to_json();
    line.push('\n');
    line
}

/// Shows `notice` through herdr's socket (one request per connection);
/// best effort, bounded like the open request.
fn notify_through_socket(path: &str, notice: &Notice, deadlines: Deadlines) {
    let Ok(mut stream) = UnixStream::connect(path) else {
        return;
    };
    let deadline = Instant::now() + deadlines.exchange;
    if stream.set_write_timeout(Some(deadlines.exchange)).is_err()
        || stream
            .write_all(notification_request(notice).as_bytes())
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
        &["notification", "show", notice.title, "--body", &notice.body],
        deadlines.cli,
    );
}

/// The request line for the popup.
pub(crate) fn open_request(plugin_id: &str) -> String {
    let params = Object::new()
        .with("plugin_id", plugin_id)
        .with("entrypoint", ENTRYPOINT)
        .with("env", Object::new());
    let request = Object::new()
        .with("id", "heeler:pair-action")
        .with("method", "plugin.pane.open")
        .with("params", params);
    let mut line = Value::Object(request).to_json();
    line.push('\n');
    line
}

/// Reads herdr's response line: `Ok` for a result, the error otherwise.
pub(crate) fn interpret_response(line: &str) -> Result<(), PairActionError> {
    let value =
        json::parse(line.trim_end()).map_err(|_| PairActionError::BadResponse(line.to_owned()))?;
    if value.get("result").is_some() {
        return Ok(());
    }
    let error = value
        .get("error")
        .ok_or_else(|| PairActionError::BadResponse(line.trim_end().to_owned()))?;
    let field = |key| {
        error
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Err(PairActionError::Refused {
        code: field("code"),
        message: field("message"),
    })
}

/// Opens the popup; `Err(None)` when the socket could not be reached at all
/// (the caller falls back to the CLI).
fn open_through_socket(
    path: &str,
    plugin_id: &str,
    deadlines: Deadlines,
) -> Result<(), Option<PairActionError>> {
    let mut stream = UnixStream::connect(path).map_err(|_| None)?;
    let io = |e: std::io::Error| Some(PairActionError::Io(e.to_string()));
    let deadline = Instant::now() + deadlines.exchange;
    stream
        .set_write_timeout(Some(deadlines.exchange))
        .map_err(io)?;
    stream
        .write_all(open_request(plugin_id).as_bytes())
        .map_err(io)?;
    let line = client::read_line_before(&mut stream, deadline).map_err(io)?;
    interpret_response(&String::from_utf8_lossy(&line)).map_err(Some)
}

fn open_through_cli(plugin_id: &str, deadlines: Deadlines) -> Result<(), PairActionError> {
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
        ENTRYPOINT,
    ];
    let finished =
        client::run_cli_within(Path::new(&herdr), &args, deadlines.cli).map_err(|e| match e {
            RunError::TimedOut(_) => PairActionError::TimedOut(deadlines.cli.as_secs()),
            other => PairActionError::Spawn(other.to_string()),
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
        notify_through_cli(herdr, &notice_for("", ALREADY_OPEN), deadlines);
    }
    let code = status
        .code()
        .and_then(|c| u8::try_from(c).ok())
        .filter(|c| *c != 0)
        .unwrap_or(1);
    Err(PairActionError::Cli(code))
}

pub fn run() -> Result<(), Failure> {
    let deadlines = Deadlines::capped(crate::base::clock::test_deadline_cap());
    let plugin_id = std::env::var("HERDR_PLUGIN_ID")
        .ok()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| DEFAULT_PLUGIN_ID.to_owned());
    if let Some(path) = std::env::var("HERDR_SOCKET_PATH")
        .ok()
        .filter(|p| !p.is_empty())
    {
        match open_through_socket(&path, &plugin_id, deadlines) {
            Ok(()) => return Ok(()),
            Err(Some(error)) => {
                if let PairActionError::Refused { code, message } = &error {
                    notify_through_socket(&path, &notice_for(code, message), deadlines);
                }
                return Err(error.into());
            }
            Err(None) => {}
        }
    }
    open_through_cli(&plugin_id, deadlines).map_err(Failure::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_shape() {
        assert_eq!(
            open_request("heeler"),
            "{\"id\":\"heeler:pair-action\",\"method\":\"plugin.pane.open\",\"params\":{\"plugin_id\":\"heeler\",\"entrypoint\":\"pair\",\"env\":{}}}\n"
        );
    }

    #[test]
    fn responses() {
        assert_eq!(
            interpret_response("{\"id\":\"x\",\"result\":{\"type\":\"ok\"}}\n"),
            Ok(())
        );
        assert_eq!(
            interpret_response(
                "{\"id\":\"x\",\"error\":{\"code\":\"plugin_pane_open_failed\",\"message\":\"popup already open\"}}"
            ),
            Err(PairActionError::Refused {
                code: "plugin_pane_open_failed".into(),
                message: "popup already open".into()
            })
        );
        assert!(matches!(
            interpret_response(""),
            Err(PairActionError::BadResponse(_))
        ));
        assert!(matches!(
            interpret_response("{}"),
            Err(PairActionError::BadResponse(_))
        ));
    }

    #[test]
    fn a_second_popup_is_told_not_silent() {
        // herdr's answer to a second open (its popup is a session singleton).
        let notice = notice_for("plugin_pane_open_failed", "popup already open");
        assert_eq!(notice.title, "Pairing is already open");
        assert!(notice.body.contains("press q there to close it"));
        assert!(
            notice_for("ui_busy", "settings open")
                .body
                .contains("herdr is busy")
        );
        let other = notice_for("plugin_not_found", "no plugin heeler");
        assert_eq!(
            other.body,
            "herdr refused the pairing popup: plugin_not_found: no plugin heeler"
        );
        let line = notification_request(&Notice {
            title: "T",
            body: "B \"q\"".into(),
        });
        assert_eq!(
            line,
            "{\"id\":\"heeler:pair-action:notice\",\"method\":\"notification.show\",\"params\":{\"title\":\"T\",\"body\":\"B \\\"q\\\"\"}}\n"
        );
    }
}

//! Asking herdr's session to run the `usage-claude-limits` action.
//!
//! On macOS Claude Code keeps its sign-in in the login keychain, which a
//! bare SSH session cannot unlock, so the Claude limits probe must run
//! inside herdr's session. The worker (never the query: it must answer at
//! once) asks the herdr server named in the runtime record to run the
//! plugin's action with `herdr plugin action invoke
//! heeler.usage-claude-limits` (`HERDR_SOCKET_PATH` set to the recorded
//! socket, so the CLI reaches that server). herdr answers at once and runs
//! the action in the background; the action (`heeler usage claude-limits`)
//! writes `limits-claude.json`, which later queries report. The invoke has
//! a timeout, and attempts are spaced (when is the schedule's,
//! [`crate::usage::limits::due`]) and recorded in `claude-limits-trigger.json`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::base::json::{Object, Value};
use crate::base::process::RunError;
use crate::herdr::client;
use crate::usage::paths::UsageDir;

/// The qualified id of the action (plugin id `heeler`).
pub const ACTION_ID: &str = "heeler.usage-claude-limits";
/// Longest an invoke may take (herdr answers at once; the CLI first pings).
pub(crate) const INVOKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest output kept from the CLI (its answer is one JSON line).
const MAX_OUTPUT: usize = 64 * 1024;

/// Why an invoke did not succeed.
#[derive(Debug)]
pub enum TriggerError {
    /// The runtime record names no herdr binary.
    NoLauncher,
    /// The binary could not be started.
    Spawn(std::io::Error),
    /// No answer within the timeout (the process was killed).
    TimedOut,
    /// herdr answered with an error (exit status and its error text).
    Refused(String),
}

impl std::fmt::Display for TriggerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TriggerError::NoLauncher => write!(f, "no herdr binary recorded"),
            TriggerError::Spawn(e) => write!(f, "cannot run herdr: {e}"),
            TriggerError::TimedOut => write!(f, "herdr did not answer in time"),
            TriggerError::Refused(text) => write!(f, "herdr refused: {text}"),
        }
    }
}

impl std::error::Error for TriggerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TriggerError::Spawn(e) => Some(e),
            TriggerError::NoLauncher | TriggerError::TimedOut | TriggerError::Refused(_) => None,
        }
    }
}

/// herdr's binary and socket from the runtime record.
pub fn launcher(runtime: Option<&Value>) -> Option<(PathBuf, Option<PathBuf>)> {
    let text = |k: &str| {
        runtime
            .and_then(|r| r.get(k))
            .and_then(Value::as_nonempty_str)
            .map(PathBuf::from)
    };
    Some((text("herdr_bin")?, text("herdr_socket")))
}

/// Runs `herdr plugin action invoke heeler.usage-claude-limits` through
/// `herdr::client::run_cli_command` (killed with its process group past
/// `timeout`).
pub fn invoke(bin: &Path, socket: Option<&Path>, timeout: Duration) -> Result<(), TriggerError> {
    let mut command = Command::new(bin);
    command.args(["plugin", "action", "invoke", ACTION_ID]);
    if let Some(socket) = socket {
        command.env("HERDR_SOCKET_PATH", socket);
    }
    let finished = client::run_cli_command(command, timeout).map_err(|e| match e {
        RunError::Spawn(e) => TriggerError::Spawn(e),
        RunError::TimedOut(_) | RunError::Wait(_) => TriggerError::TimedOut,
    })?;
    if finished.status.success() {
        return Ok(());
    }
    let text = |bytes: &[u8]| {
        let cut = &bytes[..bytes.len().min(MAX_OUTPUT)];
        String::from_utf8_lossy(cut).trim().to_string()
    };
    let (out, err) = (text(&finished.stdout), text(&finished.stderr));
    let code = finished
        .status
        .code()
        .map_or_else(|| "signal".to_string(), |c| c.to_string());
    let text = if err.is_empty() { out } else { err };
    Err(TriggerError::Refused(format!("exit {code}: {text}")))
}

/// The worker's step on a Host whose Claude sign-in needs herdr's session,
/// once the schedule says it is due: trigger the action and record the
/// attempt.
pub(crate) fn trigger_and_record(dir: &UsageDir, runtime: Option<&Value>, now: i64) {
    let result = match launcher(runtime) {
        Some((bin, socket)) => invoke(&bin, socket.as_deref(), INVOKE_TIMEOUT),
        None => Err(TriggerError::NoLauncher),
    };
    let error = match &result {
        Ok(()) => Value::Null,
        Err(e) => Value::from(e.to_string()),
    };
    let record = Object::new()
        .with("at", now)
        .with("ok", result.is_ok())
        .with("error", error);
    let _ = crate::base::atomic_file::write(
        &dir.claude_limits_trigger(),
        Value::Object(record).to_json().as_bytes(),
        0o600,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::json;

    #[test]
    fn launcher_comes_from_the_runtime_record() {
        let r = json::parse(r#"{"herdr_bin":"/opt/herdr","herdr_socket":"/s.sock"}"#).unwrap();
        assert_eq!(
            launcher(Some(&r)),
            Some((PathBuf::from("/opt/herdr"), Some(PathBuf::from("/s.sock"))))
        );
        let none = json::parse(r#"{"herdr_bin":null,"herdr_socket":"/s.sock"}"#).unwrap();
        assert_eq!(launcher(Some(&none)), None);
        assert_eq!(launcher(None), None);
    }
}

//! Asking herdr about agents, workspaces, tabs and panes.
//!
//! A hook first talks to `HERDR_SOCKET_PATH` directly (herdr's socket API:
//! one JSON request line per connection, one answer line), which costs a
//! millisecond where `herdr <cmd>` costs a process start and a protocol ping.
//! When the socket is unusable (absent, refused, timed out, garbled) it runs
//! `HERDR_BIN_PATH` with the equivalent CLI command instead. Every failure is
//! typed, because the hooks act differently on "agent gone" and on "herdr
//! unreachable". Each way has one overall deadline: the socket's answer line
//! must be complete within [`READ_TIMEOUT`] of the request, however slowly
//! it trickles in, and the CLI runs under [`CLI_TIMEOUT`] through
//! `base::process` (its process group killed past it, its output capped).
//! A client receives its deadlines ([`Deadlines`]) from its command's edge:
//! these by default, shorter in tests.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::base::json::{self, Object, Value};
use crate::base::process::{self, RunError};
use crate::herdr::answer::{self, Agent, Pane, Tab, Workspace};

/// Connecting to the socket.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The socket's whole exchange after the connect: request written and the
/// answer line read.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// One `herdr` CLI call, start to exit.
pub(crate) const CLI_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest answer line accepted from the socket.
const MAX_ANSWER_BYTES: u64 = 16 * 1024 * 1024;

/// How long a call waits on herdr; [`Deadlines::default`] is
/// [`CONNECT_TIMEOUT`], [`READ_TIMEOUT`] and [`CLI_TIMEOUT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Connecting to the socket.
    pub connect: Duration,
    /// The socket's whole exchange after the connect.
    pub exchange: Duration,
    /// One CLI call, start to exit.
    pub cli: Duration,
}

impl Default for Deadlines {
    fn default() -> Deadlines {
        Deadlines {
            connect: CONNECT_TIMEOUT,
            exchange: READ_TIMEOUT,
            cli: CLI_TIMEOUT,
        }
    }
}

impl Deadlines {
    /// The defaults, each at most `cap` (`base::clock::test_deadline_cap`).
    pub(crate) fn capped(cap: Option<Duration>) -> Deadlines {
        let at_most = |d: Duration| cap.map_or(d, |cap| d.min(cap));
        let d = Deadlines::default();
        Deadlines {
            connect: at_most(d.connect),
            exchange: at_most(d.exchange),
            cli: at_most(d.cli),
        }
    }
}

/// Why herdr gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HerdrError {
    /// herdr answered `agent_not_found`: the pane has no agent any more.
    AgentGone,
    /// herdr answered with an error: a non-zero CLI exit (`origin` is
    /// `exit <n>`, `text` its stderr or stdout) or a socket `error` object
    /// (`origin` is the error code, `text` its message).
    Refused { origin: String, text: String },
    /// Neither the socket nor the binary could be used.
    Unreachable(String),
    /// herdr answered, but not with the documented shape.
    Malformed(String),
}

impl HerdrError {
    /// The hooks' log wording: `<what> failed (exit 1): <stderr>`, or
    /// `<what> failed: <reason>` when herdr gave no answer.
    pub fn failed(&self, what: &str) -> String {
        match self {
            HerdrError::Refused { .. } => format!("{what} failed {self}"),
            _ => format!("{what} failed: {self}"),
        }
    }
}

impl std::fmt::Display for HerdrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HerdrError::AgentGone => f.write_str("agent not found"),
            HerdrError::Refused { origin, text } => write!(f, "({origin}): {text}"),
            HerdrError::Unreachable(why) => write!(f, "herdr unreachable: {why}"),
            HerdrError::Malformed(why) => write!(f, "unexpected herdr answer: {why}"),
        }
    }
}

impl std::error::Error for HerdrError {}

/// How to reach one herdr server.
#[derive(Debug, Clone)]
pub struct HerdrClient {
    pub socket: Option<PathBuf>,
    pub bin: PathBuf,
    pub deadlines: Deadlines,
}

/// A socket problem: the request may be retried through the binary.
#[derive(Debug)]
struct SocketUnusable(String);

/// Connects to the Unix socket at `path` within `timeout`: the one bounded
/// connect for every socket heeler asks (herdr's, herdr-core's). std has
/// no connect timeout for Unix sockets; a connect blocks only when the
/// listener's backlog is full, so a helper thread bounds it (and is left
/// to end with the connect).
pub(crate) fn connect_within(path: &Path, timeout: Duration) -> std::io::Result<UnixStream> {
    let (sender, receiver) = mpsc::channel();
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = sender.send(UnixStream::connect(path));
    });
    match receiver.recv_timeout(timeout) {
        Ok(connected) => connected,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "connect timed out",
        )),
    }
}

fn connect_with_timeout(path: &Path, timeout: Duration) -> Result<UnixStream, SocketUnusable> {
    connect_within(path, timeout).map_err(|e| match e.kind() {
        std::io::ErrorKind::TimedOut => SocketUnusable("connect timed out".to_owned()),
        _ => SocketUnusable(format!("connect: {e}")),
    })
}

fn request_line(method: &str, params: Object) -> String {
    let id = format!("heeler:{}:{method}", crate::base::clock::unix_millis());
    let mut line = Value::Object(
        Object::new()
            .with("id", id)
            .with("method", method)
            .with("params", params),
    )
    .to_json();
    line.push('\n');
    line
}

/// Reads up to the first newline (or EOF, or [`MAX_ANSWER_BYTES`]) before
/// `deadline`: every read may wait only for the time left, so a peer that
/// sends a byte at a time cannot stretch the call.
pub(crate) fn read_line_before(
    stream: &mut UnixStream,
    deadline: Instant,
) -> std::io::Result<Vec<u8>> {
    let timed_out = || std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer line in time");
    let mut line = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        stream.set_read_timeout(Some(left))?;
        let n = match stream.read(&mut buffer) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // The read's timeout (what was left of the deadline) passed.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(timed_out());
            }
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(line);
        }
        if let Some(end) = buffer[..n].iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&buffer[..end]);
            return Ok(line);
        }
        line.extend_from_slice(&buffer[..n]);
        if line.len() as u64 >= MAX_ANSWER_BYTES {
            return Ok(line);
        }
    }
}

fn socket_call(
    path: &Path,
    method: &str,
    params: Object,
    deadlines: Deadlines,
) -> Result<Value, SocketUnusable> {
    let fail = |what: &str, e: std::io::Error| SocketUnusable(format!("{what}: {e}"));
    let mut stream = connect_with_timeout(path, deadlines.connect)?;
    let deadline = Instant::now() + deadlines.exchange;
    stream
        .set_write_timeout(Some(deadlines.exchange))
        .map_err(|e| fail("socket setup", e))?;
    stream
        .write_all(request_line(method, params).as_bytes())
        .map_err(|e| fail("write", e))?;
    let line = read_line_before(&mut stream, deadline).map_err(|e| fail("read", e))?;
    let line = String::from_utf8_lossy(&line);
    json::parse(line.trim_end())
        .map_err(|_| SocketUnusable("answer is not JSON".to_owned()))
        .and_then(|v| {
            v.as_object()
                .is_some()
                .then_some(v)
                .ok_or_else(|| SocketUnusable("answer is not an object".to_owned()))
        })
}

fn error_of(answer: &Value) -> Option<(String, String)> {
    let error = answer.get("error")?;
    let text = |k| {
        error
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Some((text("code"), text("message")))
}

/// Runs `herdr <args>` under `deadline` (a [`Deadlines::cli`]), output
/// capped at [`MAX_ANSWER_BYTES`]: the one way this crate runs the herdr
/// CLI.
pub(crate) fn run_cli_within(
    bin: &Path,
    args: &[&str],
    deadline: Duration,
) -> Result<process::Finished, RunError> {
    let mut command = Command::new(bin);
    command.args(args);
    run_cli_command(command, deadline)
}

/// [`run_cli_within`] for a command the caller prepared (an environment
/// of its own, say).
pub(crate) fn run_cli_command(
    mut command: Command,
    deadline: Duration,
) -> Result<process::Finished, RunError> {
    let cap = usize::try_from(MAX_ANSWER_BYTES).unwrap_or(usize::MAX);
    process::run(&mut command, deadline, cap)
}

fn bin_call(bin: &Path, args: &[&str], deadline: Duration) -> Result<Value, HerdrError> {
    let output = run_cli_within(bin, args, deadline).map_err(|e| {
        HerdrError::Unreachable(match e {
            RunError::TimedOut(_) => format!(
                "{} {} timed out after {} s",
                bin.display(),
                args.join(" "),
                deadline.as_secs()
            ),
            other => format!("cannot run {}: {other}", bin.display()),
        })
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.success() {
        return json::parse(stdout.trim()).map_err(|_| {
            HerdrError::Malformed(format!("`herdr {}` printed no JSON", args.join(" ")))
        });
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    // herdr prints its error JSON on stderr (older builds on stdout).
    for text in [stderr.trim(), stdout.trim()] {
        if let Some((code, _)) = json::parse(text).ok().as_ref().and_then(error_of)
            && code == "agent_not_found"
        {
            return Err(HerdrError::AgentGone);
        }
    }
    let shown = if stderr.trim().is_empty() {
        stdout.trim()
    } else {
        stderr.trim()
    };
    let code = output
        .status
        .code()
        .map_or_else(|| "signal".to_owned(), |c| c.to_string());
    Err(HerdrError::Refused {
        origin: format!("exit {code}"),
        text: shown.to_owned(),
    })
}

impl HerdrClient {
    /// One call: the socket first, the binary when the socket is unusable.
    /// Returns the answer's `result` object.
    pub fn call(
        &self,
        method: &str,
        params: Object,
        cli_args: &[&str],
    ) -> Result<Value, HerdrError> {
        let answer = match self
            .socket
            .as_deref()
            .map(|s| socket_call(s, method, params, self.deadlines))
        {
            Some(Ok(answer)) => answer,
            Some(Err(SocketUnusable(why))) => bin_call(&self.bin, cli_args, self.deadlines.cli)
                .map_err(|e| match e {
                    HerdrError::Unreachable(bin) => {
                        HerdrError::Unreachable(format!("socket {why}; {bin}"))
                    }
                    other => other,
                })?,
            None => bin_call(&self.bin, cli_args, self.deadlines.cli)?,
        };
        if let Some((code, message)) = error_of(&answer) {
            return Err(if code == "agent_not_found" {
                HerdrError::AgentGone
            } else {
                HerdrError::Refused {
                    origin: code,
                    text: message,
                }
            });
        }
        answer
            .get("result")
            .filter(|r| r.as_object().is_some())
            .cloned()
            .ok_or_else(|| HerdrError::Malformed(format!("{method} answer has no result")))
    }

    /// `agent.get` / `herdr agent get <pane>`: the pane's AgentInfo.
    pub(crate) fn agent_get(&self, pane: &str) -> Result<Agent, HerdrError> {
        let result = self.call(
            "agent.get",
            Object::new().with("target", pane),
            &["agent", "get", pane],
        )?;
        let agent = result
            .get("agent")
            .filter(|a| a.as_object().is_some())
            .ok_or_else(|| HerdrError::Malformed("agent.get answer has no agent".to_owned()))?;
        Agent::from_value(agent)
            .map_err(|e| HerdrError::Malformed(format!("agent.get answer's agent: {e}")))
    }

    /// `agent.list` / `herdr agent list`: every agent of the session.
    pub fn agent_list(&self) -> Result<Vec<Agent>, HerdrError> {
        let items = self.list("agent.list", Object::new(), &["agent", "list"], "agents")?;
        Ok(answer::agents(&items))
    }

    /// `workspace.get` / `herdr workspace get <id>`: the workspace's label.
    pub(crate) fn workspace_label(&self, workspace_id: &str) -> Result<Option<String>, HerdrError> {
        let result = self.call(
            "workspace.get",
            Object::new().with("workspace_id", workspace_id),
            &["workspace", "get", workspace_id],
        )?;
        Ok(result
            .get("workspace")
            .and_then(|w| w.get("label"))
            .and_then(Value::as_nonempty_str)
            .map(str::to_owned))
    }

    /// `workspace.list` / `herdr workspace list`.
    pub fn workspace_list(&self) -> Result<Vec<Workspace>, HerdrError> {
        let items = self.list(
            "workspace.list",
            Object::new(),
            &["workspace", "list"],
            "workspaces",
        )?;
        Ok(answer::rows(&items, Workspace::from_value))
    }

    /// `tab.list` / `herdr tab list --workspace <id>`.
    pub fn tab_list(&self, workspace_id: &str) -> Result<Vec<Tab>, HerdrError> {
        let items = self.list(
            "tab.list",
            Object::new().with("workspace_id", workspace_id),
            &["tab", "list", "--workspace", workspace_id],
            "tabs",
        )?;
        Ok(answer::rows(&items, Tab::from_value))
    }

    /// `pane.list` / `herdr pane list --workspace <id>`.
    pub fn pane_list(&self, workspace_id: &str) -> Result<Vec<Pane>, HerdrError> {
        let items = self.list(
            "pane.list",
            Object::new().with("workspace_id", workspace_id),
            &["pane", "list", "--workspace", workspace_id],
            "panes",
        )?;
        Ok(answer::rows(&items, Pane::from_value))
    }

    fn list(
        &self,
        method: &str,
        params: Object,
        cli_args: &[&str],
        field: &str,
    ) -> Result<Vec<Value>, HerdrError> {
        match self.call(method, params, cli_args)?.get(field) {
            Some(Value::Array(items)) => Ok(items.clone()),
            _ => Err(HerdrError::Malformed(format!(
                "{method} answer has no {field} array"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_follow_the_socket_protocol() {
        let line = request_line("agent.get", Object::new().with("target", "w1:p1"));
        assert!(line.starts_with(r#"{"id":"heeler:"#));
        assert!(line.ends_with("\"params\":{\"target\":\"w1:p1\"}}\n"));
    }

    #[test]
    fn a_cap_shortens_each_deadline_and_no_cap_keeps_the_documented_ones() {
        // ARCHITECTURE.md: a 3 s connect, 5 s for the answer, 10 s for the CLI.
        let documented = Deadlines {
            connect: Duration::from_secs(3),
            exchange: Duration::from_secs(5),
            cli: Duration::from_secs(10),
        };
        assert_eq!(Deadlines::default(), documented);
        assert_eq!(Deadlines::capped(None), documented);
        let cap = Duration::from_millis(4_000);
        assert_eq!(
            Deadlines::capped(Some(cap)),
            Deadlines {
                connect: Duration::from_secs(3),
                exchange: cap,
                cli: cap,
            }
        );
    }

    #[test]
    fn missing_socket_falls_back_to_a_missing_binary_as_unreachable() {
        let client = HerdrClient {
            socket: Some(PathBuf::from("/nonexistent/heeler/herdr.sock")),
            bin: PathBuf::from("/nonexistent/heeler/herdr"),
            deadlines: Deadlines::default(),
        };
        assert!(matches!(
            client.agent_list(),
            Err(HerdrError::Unreachable(_))
        ));
    }
}

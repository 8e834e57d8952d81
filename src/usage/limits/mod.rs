//! Usage Limits: asking the installed `codex` and `claude` for the
//! account's windows, with a timeout on every child process.
//!
//! Codex answers `account/rateLimits/read` over `codex app-server` (JSON-RPC
//! lines on stdio); when that fails the newest `rate_limits` a rollout
//! recorded is reported instead. Claude Code answers the `get_usage`
//! control request of its stream-json mode (no model turn, no tokens, no
//! transcript). Neither we nor the app ever see their credentials. Results
//! go to `limits-<agent>.json`, which queries read; every failure is a state
//! (`not_installed`, `auth_required`, `unsupported`, `no_plan`, `error`,
//! `needs_herdr_session`), never a crash. `pi_herdr.rs` reads the other
//! source the views show: pi-herdr's `limits` document in herdr-core.

pub(crate) mod due;
pub mod herdr_action;
pub(crate) mod pi_herdr;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::base::atomic_file;
use crate::base::json::read_file as read_json;
use crate::base::json::{self, Object, Value};
use crate::usage::cache::Index;
use crate::usage::event::Agent;
use crate::usage::limits::due::ClaudeStep;
use crate::usage::paths::UsageDir;

/// Longest a probe may take, start to answer.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// [`PROBE_TIMEOUT`], shortened by the tests' deadline cap
/// (`base::clock::test_deadline_cap`): what every probe is given.
pub(crate) fn probe_timeout() -> Duration {
    crate::base::clock::test_deadline_cap().map_or(PROBE_TIMEOUT, |cap| cap.min(PROBE_TIMEOUT))
}

/// The environment a probe runs in: the runtime record's `PATH` and `HOME`
/// (a bare SSH session may have neither agent on its `PATH`).
#[derive(Debug, Clone, Default)]
pub struct ProbeEnv {
    pub path: Option<String>,
    pub home: Option<PathBuf>,
}

impl ProbeEnv {
    pub(crate) fn from_runtime(runtime: Option<&Value>) -> ProbeEnv {
        let var = |k: &str| crate::usage::runtime::env_var(runtime, k);
        ProbeEnv {
            path: var("PATH"),
            home: var("HOME").map(PathBuf::from),
        }
    }

    /// The first executable `name` on `PATH`.
    pub fn find(&self, name: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        self.path.as_deref()?.split(':').find_map(|dir| {
            if dir.is_empty() {
                return None;
            }
            let candidate = Path::new(dir).join(name);
            let meta = std::fs::metadata(&candidate).ok()?;
            (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(candidate)
        })
    }

    fn command(&self, exe: &Path) -> Command {
        let mut c = Command::new(exe);
        if let Some(path) = &self.path {
            c.env("PATH", path);
        }
        if let Some(home) = &self.home {
            c.env("HOME", home).current_dir(home);
        }
        c.env_remove("ANTHROPIC_API_KEY")
            .env_remove("CLAUDECODE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        c
    }
}

fn state(state: &str) -> Object {
    Object::new().with("state", state)
}

fn failure(code: &str, message: &str) -> Object {
    state(code).with("error", message)
}

/// The longest line read from a probe; the rest of a longer line is
/// skipped (Codex's and Claude Code's answers are a few kilobytes).
const MAX_LINE: usize = 1024 * 1024;

/// A child speaking JSON lines, read on a thread so every wait can time
/// out: one deadline for the whole conversation, fixed at the start, each
/// wait only for what is left of it. The child leads its own process
/// group, killed whole when the conversation ends, so nothing it started
/// keeps its pipes open; a line is read up to [`MAX_LINE`] bytes.
struct Conversation {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    deadline: Instant,
}

impl Conversation {
    fn start(mut command: Command, timeout: Duration) -> std::io::Result<Conversation> {
        use std::os::unix::process::CommandExt;
        let deadline = Instant::now() + timeout;
        let mut child = command.process_group(0).spawn()?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || json_lines(stdout, &tx));
        Ok(Conversation {
            child,
            stdin,
            lines: rx,
            deadline,
        })
    }

    fn send(&mut self, v: &Value) -> bool {
        let Some(stdin) = self.stdin.as_mut() else {
            return false;
        };
        let mut line = v.to_json();
        line.push('\n');
        stdin.write_all(line.as_bytes()).is_ok() && stdin.flush().is_ok()
    }

    /// The first line matching `wanted`; `Err(true)` on timeout, `Err(false)`
    /// when the child closed its output.
    fn wait_for(&mut self, wanted: impl Fn(&Value) -> bool) -> Result<Value, bool> {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if wanted(&v) => return Ok(v),
                Ok(_) => continue,
                Err(mpsc::RecvTimeoutError::Timeout) => return Err(true),
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(false),
            }
        }
    }
}

/// Sends each line of `from` that is JSON to `to`, each read up to
/// [`MAX_LINE`] bytes (a longer one is skipped to its end), until the end
/// of `from`, a read error or a receiver gone.
fn json_lines(from: impl std::io::Read, to: &mpsc::Sender<Value>) {
    use std::io::Read;
    let mut reader = BufReader::new(from);
    let mut line = Vec::new();
    let mut skipping = false;
    loop {
        line.clear();
        let cap = MAX_LINE as u64 + 1;
        match (&mut reader).take(cap).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        // A read that stops at the cap without a line end is part of a
        // line too long to keep: skipped, and so is the rest of it.
        let cut = line.len() > MAX_LINE && line.last() != Some(&b'\n');
        if std::mem::replace(&mut skipping, cut) || cut {
            continue;
        }
        let value = std::str::from_utf8(&line)
            .ok()
            .and_then(|text| json::parse(text.trim()).ok());
        if let Some(v) = value
            && to.send(v).is_err()
        {
            return;
        }
    }
}

impl Drop for Conversation {
    fn drop(&mut self) {
        self.stdin = None;
        crate::base::sys::kill_process_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn num(v: Option<&Value>) -> Value {
    v.and_then(Value::as_f64).map_or(Value::Null, Value::from)
}

fn int(v: Option<&Value>) -> Value {
    v.and_then(Value::as_i64).map_or(Value::Null, Value::from)
}

/// A v1 window object.
fn window(id: &str, minutes: Value, used: Value, resets_at: Value) -> Value {
    Value::Object(
        Object::new()
            .with("id", id)
            .with("window_minutes", minutes)
            .with("used_percent", used)
            .with("resets_at", resets_at),
    )
}

/// Codex's default limit group from an `account/rateLimits/read` result.
pub(crate) fn codex_from_app_server(result: &Value, fetched_at: i64) -> Object {
    let by_id = result
        .get("rateLimitsByLimitId")
        .and_then(|m| m.get("codex"));
    let single = result.get("rateLimits").filter(|r| {
        matches!(r.get("limitId"), None | Some(Value::Null))
            || r.get("limitId").and_then(Value::as_str) == Some("codex")
    });
    let Some(snapshot) = by_id.or(single).filter(|s| s.as_object().is_some()) else {
        return failure("no_plan", "no codex limit group");
    };
    let mut windows = Vec::new();
    for slot in ["primary", "secondary"] {
        if let Some(w) = snapshot.get(slot).filter(|w| w.as_object().is_some()) {
            windows.push(window(
                slot,
                int(w.get("windowDurationMins")),
                num(w.get("usedPercent")),
                int(w.get("resetsAt")),
            ));
        }
    }
    let credits = snapshot.get("credits").map(|c| {
        Value::Object(
            Object::new()
                .with(
                    "has_credits",
                    c.get("hasCredits")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                )
                .with(
                    "unlimited",
                    c.get("unlimited").and_then(Value::as_bool).unwrap_or(false),
                )
                .with(
                    "balance",
                    c.get("balance")
                        .and_then(Value::as_str)
                        .map_or(Value::Null, Value::from),
                ),
        )
    });
    state("ok")
        .with("source", "app_server")
        .with("fetched_at", fetched_at)
        .with(
            "plan",
            snapshot
                .get("planType")
                .and_then(Value::as_str)
                .map_or(Value::Null, Value::from),
        )
        .with("limit_id", "codex")
        .with("windows", Value::Array(windows))
        .with("credits", credits.unwrap_or(Value::Null))
        .with("error", Value::Null)
}

/// Codex limits from the newest `rate_limits` a rollout recorded
/// (snake_case; older builds wrote `resets_in_seconds`).
pub fn codex_from_rollout(rate_limits: &Value, observed_at: i64) -> Object {
    let mut windows = Vec::new();
    for slot in ["primary", "secondary"] {
        if let Some(w) = rate_limits.get(slot).filter(|w| w.as_object().is_some()) {
            let resets = w.get("resets_at").and_then(Value::as_i64).or_else(|| {
                w.get("resets_in_seconds")
                    .and_then(Value::as_i64)
                    .map(|s| observed_at + s)
            });
            windows.push(window(
                slot,
                int(w.get("window_minutes")),
                num(w.get("used_percent")),
                resets.map_or(Value::Null, Value::from),
            ));
        }
    }
    state("ok")
        .with("source", "rollout")
        .with("fetched_at", observed_at)
        .with(
            "plan",
            rate_limits
                .get("plan_type")
                .and_then(Value::as_str)
                .map_or(Value::Null, Value::from),
        )
        .with("limit_id", "codex")
        .with("windows", Value::Array(windows))
        .with("credits", Value::Null)
        .with("error", Value::Null)
}

fn looks_like_auth(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "auth",
        "login",
        "log in",
        "sign in",
        "signed out",
        "credential",
        "unauthorized",
    ]
    .iter()
    .any(|w| t.contains(w))
}

/// Asks `codex app-server` for the rate limits.
pub fn probe_codex(env: &ProbeEnv, now: i64, timeout: Duration) -> Object {
    let Some(exe) = env.find("codex") else {
        return state("not_installed");
    };
    let mut command = env.command(&exe);
    command.arg("app-server");
    let Ok(mut c) = Conversation::start(command, timeout) else {
        return failure("error", "codex app-server did not start");
    };
    let initialize = json::parse(&format!(
        r#"{{"id":1,"method":"initialize","params":{{"clientInfo":{{"name":"heeler","title":"Heeler","version":"{}"}}}}}}"#,
        env!("CARGO_PKG_VERSION")
    ));
    let Ok(initialize) = initialize else {
        return failure("error", "internal");
    };
    let by_id = |id: i64| move |v: &Value| v.get("id").and_then(Value::as_i64) == Some(id);
    if !c.send(&initialize) {
        return failure("error", "codex app-server closed its input");
    }
    match c.wait_for(by_id(1)) {
        Ok(v) if v.get("error").is_some() => {
            return failure("unsupported", "codex app-server refused initialize");
        }
        Ok(_) => {}
        Err(true) => return failure("error", "codex app-server timed out"),
        Err(false) => return failure("unsupported", "codex app-server exited"),
    }
    let initialized = Value::Object(Object::new().with("method", "initialized"));
    let read = Value::Object(
        Object::new()
            .with("id", 2u64)
            .with("method", "account/rateLimits/read"),
    );
    if !(c.send(&initialized) && c.send(&read)) {
        return failure("error", "codex app-server closed its input");
    }
    match c.wait_for(by_id(2)) {
        Ok(v) => {
            if let Some(err) = v.get("error") {
                let message = err.get("message").and_then(Value::as_str).unwrap_or("");
                if looks_like_auth(message) {
                    return failure("auth_required", "codex is signed out");
                }
                return failure("error", "codex refused account/rateLimits/read");
            }
            match v.get("result") {
                Some(result) => codex_from_app_server(result, now),
                None => failure("error", "codex answered without a result"),
            }
        }
        Err(true) => failure("error", "codex app-server timed out"),
        Err(false) => failure("unsupported", "codex app-server exited"),
    }
}

const CLAUDE_WINDOWS: &[(&str, u64)] = &[
    ("five_hour", 300),
    ("seven_day", 10_080),
    ("seven_day_opus", 10_080),
    ("seven_day_sonnet", 10_080),
    ("seven_day_oauth_apps", 10_080),
];

fn iso(v: Option<&Value>) -> Value {
    v.and_then(Value::as_str)
        .and_then(crate::usage::time::parse_timestamp)
        .map_or(Value::Null, Value::from)
}

/// Claude limits from a `get_usage` control response payload.
pub(crate) fn claude_from_get_usage(response: &Value, fetched_at: i64) -> Object {
    let plan = response
        .get("subscription_type")
        .and_then(Value::as_str)
        .map_or(Value::Null, Value::from);
    if response
        .get("rate_limits_available")
        .and_then(Value::as_bool)
        == Some(false)
    {
        return state("no_plan")
            .with("source", "get_usage")
            .with("fetched_at", fetched_at)
            .with("plan", plan);
    }
    let limits = response.get("rate_limits");
    let mut windows = Vec::new();
    for (id, minutes) in CLAUDE_WINDOWS {
        if let Some(w) = limits
            .and_then(|l| l.get(id))
            .filter(|w| w.as_object().is_some())
        {
            windows.push(window(
                id,
                Value::from(*minutes),
                num(w.get("utilization")),
                iso(w.get("resets_at")),
            ));
        }
    }
    for scoped in limits
        .and_then(|l| l.get("model_scoped"))
        .and_then(Value::as_array)
        .unwrap_or(&[])
    {
        let Some(name) = scoped.get("display_name").and_then(Value::as_nonempty_str) else {
            continue;
        };
        windows.push(window(
            &format!("model:{name}"),
            Value::from(10_080u64),
            num(scoped.get("utilization")),
            iso(scoped.get("resets_at")),
        ));
    }
    let extra = limits.and_then(|l| l.get("extra_usage")).map(|e| {
        Value::Object(
            Object::new()
                .with(
                    "enabled",
                    e.get("is_enabled")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                )
                .with("monthly_limit", num(e.get("monthly_limit")))
                .with("used_credits", num(e.get("used_credits")))
                .with(
                    "currency",
                    e.get("currency")
                        .and_then(Value::as_str)
                        .map_or(Value::Null, Value::from),
                ),
        )
    });
    state("ok")
        .with("source", "get_usage")
        .with("fetched_at", fetched_at)
        .with("plan", plan)
        .with("windows", Value::Array(windows))
        .with("extra_usage", extra.unwrap_or(Value::Null))
        .with("error", Value::Null)
}

/// Asks Claude Code for its plan limits through `get_usage`.
pub fn probe_claude(env: &ProbeEnv, now: i64, timeout: Duration) -> Object {
    let Some(exe) = env.find("claude") else {
        return state("not_installed");
    };
    let mut command = env.command(&exe);
    command.args([
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--no-session-persistence",
    ]);
    let Ok(mut c) = Conversation::start(command, timeout) else {
        return failure("error", "claude did not start");
    };
    let requests = [
        r#"{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize"}}"#,
        r#"{"type":"control_request","request_id":"usage-1","request":{"subtype":"get_usage","skip_behaviors":true}}"#,
    ];
    for r in requests {
        let Ok(v) = json::parse(r) else {
            return failure("error", "internal");
        };
        if !c.send(&v) {
            return failure("error", "claude closed its input");
        }
    }
    let answer = c.wait_for(|v| {
        v.get("type").and_then(Value::as_str) == Some("control_response")
            && v.get("response")
                .and_then(|r| r.get("request_id"))
                .and_then(Value::as_str)
                == Some("usage-1")
    });
    match answer {
        Ok(v) => {
            let response = v.get("response").cloned().unwrap_or(Value::Null);
            match response.get("subtype").and_then(Value::as_str) {
                Some("success") => match response.get("response") {
                    Some(payload) => claude_from_get_usage(payload, now),
                    None => failure("error", "claude answered without a payload"),
                },
                _ => {
                    let message = response.get("error").and_then(Value::as_str).unwrap_or("");
                    if looks_like_auth(message) {
                        failure("auth_required", "claude is signed out")
                    } else {
                        failure("unsupported", "this claude does not answer get_usage")
                    }
                }
            }
        }
        Err(true) => failure("error", "claude timed out"),
        Err(false) => failure("unsupported", "claude exited without answering get_usage"),
    }
}

/// Marks windows of rollout-observed limits whose reset time has passed
/// (`reset_since_observed: true`): their `used_percent` is stale.
pub(crate) fn mark_passed_resets(limits: &mut Value, now: i64) {
    if limits.get("source").and_then(Value::as_str) != Some("rollout") {
        return;
    }
    let Some(Value::Array(windows)) = limits.as_object_mut().and_then(|o| o.get_mut("windows"))
    else {
        return;
    };
    for w in windows {
        let passed = w
            .get("resets_at")
            .and_then(Value::as_i64)
            .is_some_and(|at| at <= now);
        if let Some(o) = w.as_object_mut() {
            o.insert("reset_since_observed", Value::from(passed));
        }
    }
}

/// Writes a limits file (the object plus when it was attempted).
pub fn store(dir: &UsageDir, agent: Agent, limits: &Object, attempted_at: i64) {
    let mut o = limits.clone();
    o.insert("attempted_at", Value::from(attempted_at));
    let _ = atomic_file::write(
        &dir.limits(agent),
        Value::Object(o).to_json().as_bytes(),
        0o600,
    );
}

/// Newest default-group `rate_limits` any cached rollout recorded.
pub fn newest_rollout_limits(index: &Index) -> Option<(Value, i64)> {
    index
        .files
        .values()
        .filter(|e| e.agent == Agent::Codex && !e.parse.codex.rate_limits.is_empty())
        .max_by_key(|e| e.parse.codex.rate_limits_ts)
        .and_then(|e| {
            Some((
                json::parse(&e.parse.codex.rate_limits).ok()?,
                e.parse.codex.rate_limits_ts,
            ))
        })
}

/// Whether this Host keeps Claude's sign-in where an SSH session cannot
/// reach it (the login keychain on macOS). `HEELER_USAGE_CLAUDE_VIA_HERDR=1`
/// chooses the herdr-session route elsewhere too (a desktop keyring on
/// Linux; the tests).
pub(crate) fn claude_needs_herdr_session() -> bool {
    cfg!(target_os = "macos")
        || std::env::var_os("HEELER_USAGE_CLAUDE_VIA_HERDR").is_some_and(|v| v == "1")
}

/// The worker's limits step: probe (or trigger) whatever
/// [`crate::usage::limits::due`] says is due.
pub(crate) fn refresh_due(dir: &UsageDir, runtime: Option<&Value>, index: &Index, now: i64) {
    let env = ProbeEnv::from_runtime(runtime);
    let codex_stored = read_json(&dir.limits(Agent::Codex));
    let claude_stored = read_json(&dir.limits(Agent::Claude));
    let trigger = read_json(&dir.claude_limits_trigger());
    let due = crate::usage::limits::due::due(
        crate::usage::limits::due::Stored {
            codex: codex_stored.as_ref(),
            claude: claude_stored.as_ref(),
            claude_trigger: trigger.as_ref(),
        },
        dir.claude_limits_wanted().exists(),
        claude_needs_herdr_session(),
        now,
    );
    if due.codex {
        let mut codex = probe_codex(&env, now, probe_timeout());
        if codex.get("state").and_then(Value::as_str) != Some("ok")
            && let Some((limits, at)) = newest_rollout_limits(index)
        {
            codex = codex_from_rollout(&limits, at);
        }
        store(dir, Agent::Codex, &codex, now);
    }
    match due.claude {
        ClaudeStep::Nothing => {}
        ClaudeStep::TriggerHerdrAction => {
            crate::usage::limits::herdr_action::trigger_and_record(dir, runtime, now);
        }
        ClaudeStep::Probe => {
            let claude = probe_claude(&env, now, probe_timeout());
            store(dir, Agent::Claude, &claude, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(input: &[u8]) -> Vec<String> {
        let (tx, rx) = mpsc::channel();
        json_lines(input, &tx);
        drop(tx);
        rx.iter().map(|v| v.to_json()).collect()
    }

    #[test]
    fn probe_lines_past_the_cap_are_skipped_whole() {
        let long = format!("[\"{}\"]", "x".repeat(MAX_LINE));
        let input = format!("{{\"a\":1}}\nnot json\n{long}\n[2]\n{long}{long}\n[3]");
        assert_eq!(lines_of(input.as_bytes()), ["{\"a\":1}", "[2]", "[3]"]);
        // A line of exactly the cap is kept.
        let at_cap = format!("\"{}\"\n", "y".repeat(MAX_LINE - 3));
        assert_eq!(at_cap.len(), MAX_LINE);
        assert_eq!(lines_of(at_cap.as_bytes()).len(), 1);
    }

    #[test]
    fn rollout_windows_past_their_reset_are_marked() {
        let raw = json::parse(
            r#"{"limit_id":"codex","primary":{"used_percent":80,"window_minutes":300,"resets_at":100},
                "secondary":{"used_percent":30,"window_minutes":10080,"resets_in_seconds":500},"plan_type":"plus"}"#,
        )
        .unwrap();
        let mut v = Value::Object(codex_from_rollout(&raw, 50));
        mark_passed_resets(&mut v, 200);
        let windows = v.get("windows").unwrap().as_array().unwrap();
        assert_eq!(
            windows[0].get("reset_since_observed"),
            Some(&Value::Bool(true))
        );
        // resets_in_seconds is relative to the observation time: 50 + 500.
        assert_eq!(windows[1].get("resets_at").unwrap().as_i64(), Some(550));
        assert_eq!(
            windows[1].get("reset_since_observed"),
            Some(&Value::Bool(false))
        );
        let mut live = Value::Object(state("ok").with("source", "app_server"));
        mark_passed_resets(&mut live, 200);
        assert_eq!(live.get("windows"), None);
    }
}

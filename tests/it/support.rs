//! Loopback stand-ins for the hook tests: a Push Relay (HTTP/1.1 on
//! 127.0.0.1 that records requests and answers from a script) and a herdr
//! server (its Unix-socket protocol: one JSON request line, one answer line),
//! plus a fixture that runs the real `heeler` binary as herdr would.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use heeler::base::json::{self, Object, Value};

/// The vector key (bytes 0..31) and a second key.
pub const KEY_A: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
pub const KEY_B: &str = "QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI";

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Writes `text` to `path` as a program (mode 0755) from a child process,
/// never from this one. A file this process held open for writing cannot
/// be run until every child that another test thread forked meanwhile has
/// exec'd (it inherits the descriptor until then): running it fails with
/// ETXTBSY, whoever runs it. Written by `sh`, the descriptor is never in
/// this process. The signature is `fs::write`'s.
pub fn write_executable(path: impl AsRef<Path>, text: impl AsRef<[u8]>) -> std::io::Result<()> {
    let mut child = Command::new("/bin/sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path.as_ref())
        .stdin(Stdio::piped())
        .spawn()?;
    let written = child
        .stdin
        .take()
        .map_or(Ok(()), |mut stdin| stdin.write_all(text.as_ref()));
    let status = child.wait()?;
    written?;
    match status.success() {
        true => Ok(()),
        false => Err(std::io::Error::other(format!(
            "writing {}: {status}",
            path.as_ref().display()
        ))),
    }
}

/// Copies the program `from` to `to` (mode 0755) from a child process, as
/// [`write_executable`] writes one. The signature is `fs::copy`'s, less
/// the byte count.
pub fn copy_executable(from: impl AsRef<Path>, to: impl AsRef<Path>) -> std::io::Result<()> {
    let status = Command::new("/bin/cp")
        .arg(from.as_ref())
        .arg(to.as_ref())
        .status()?;
    if !status.success() {
        return Err(std::io::Error::other(format!("cp: {status}")));
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(to.as_ref(), std::fs::Permissions::from_mode(0o755))
}

/// A fresh, empty directory under the system temp dir; removed when the
/// returned guard is dropped.
pub fn temp_dir(name: &str) -> TempDir {
    TempDir::new(name)
}

fn fresh_dir(name: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("hh-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh, empty directory under the system temp dir that is removed,
/// with everything in it, when the guard is dropped.
pub struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        TempDir {
            path: fresh_dir(name),
        }
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

// ---------------------------------------------------------------- relay

/// What the relay stand-in answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    Status(u16, String),
    /// The relay's rate limit: `429 {"error":"rate_limited"}` with
    /// `retry-after: <seconds>`.
    Limited(u64),
    /// Accept, read the request, and never answer (closes after 15 s).
    Hang,
    /// Answer one byte every 2 s for 60 s: in the status line and headers
    /// (`body: false`), or after the whole headers of a 502, in a body that
    /// claims 100 bytes (`body: true`).
    Drip {
        body: bool,
    },
}

/// A relay outage: until its end, every request is answered with a
/// status (and a `retry-after` when given), or no connection is accepted
/// at all (the listening socket is closed: connection refused).
#[derive(Debug, Clone)]
pub enum Outage {
    Status(u16, Option<String>),
    Refused,
}

impl Reply {
    pub fn ok() -> Reply {
        Reply::Status(200, r#"{"apnsId":"a1"}"#.into())
    }
}

/// One request the relay stand-in received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// When it arrived, on the stand-in's clock (since its start).
    pub at: Duration,
    /// The status it was answered (0 for a hang).
    pub status: u16,
}

impl Recorded {
    pub fn json(&self) -> Value {
        json::parse(&self.body).unwrap()
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The real relay's rate limits (relay/src/worker.js, contract section
/// i): fixed one-minute windows, 120 requests per client address (every
/// request counts, the rejected ones too) and 60 per device token, the
/// rest answered `429 {"error":"rate_limited"}` with a `retry-after` of
/// the seconds left in the window, 40 to 60. `minute` is the length of
/// the stand-in's minute, so that tests run minutes of relay time in
/// seconds; heeler is told the same length (`HEELER_RELAY_MINUTE_MS`).
#[derive(Debug, Clone, Copy)]
pub struct RateLimits {
    pub minute: Duration,
    pub per_token: usize,
    pub per_address: usize,
}

impl RateLimits {
    pub fn relay(minute: Duration) -> RateLimits {
        RateLimits {
            minute,
            per_token: 60,
            per_address: 120,
        }
    }
}

/// The counters of the current fixed window.
#[derive(Default)]
struct Windows {
    index: u128,
    address: usize,
    tokens: std::collections::HashMap<String, usize>,
}

struct RelayState {
    /// The outage, and when it ends.
    outage: Option<(Outage, std::time::Instant)>,
    script: VecDeque<Reply>,
    requests: Vec<Recorded>,
    started: std::time::Instant,
    limits: Option<RateLimits>,
    windows: Windows,
}

impl RelayState {
    /// The rate limit's answer to a request arriving `at` with `body`:
    /// `Some(retry-after seconds)` when it is over a limit.
    fn over_limit(&mut self, at: Duration, body: &str) -> Option<u64> {
        let limits = self.limits?;
        let minute = limits.minute.as_nanos().max(1);
        let index = at.as_nanos() / minute;
        if index != self.windows.index {
            self.windows = Windows {
                index,
                ..Windows::default()
            };
        }
        let left = minute - at.as_nanos() % minute;
        // Seconds of the stand-in's minute, rounded up, 40 to 60.
        let retry_after = ((left * 60).div_ceil(minute) as u64).clamp(40, 60);
        self.windows.address += 1;
        if self.windows.address > limits.per_address {
            return Some(retry_after);
        }
        let token = json::parse(body)
            .ok()
            .and_then(|v| v.get("token").and_then(Value::as_str).map(str::to_owned))?;
        let count = self.windows.tokens.entry(token).or_default();
        *count += 1;
        (*count > limits.per_token).then_some(retry_after)
    }
}

/// A Push Relay on 127.0.0.1: answers scripted replies in order, then 200;
/// with rate limits, a request over them is answered 429 first.
#[derive(Clone)]
pub struct RelayStandIn {
    pub url: String,
    state: Arc<Mutex<RelayState>>,
    /// The minute heeler is told to pace to.
    pub minute: Duration,
}

/// The minute heeler paces to against a stand-in without rate limits:
/// short, so that a burst over the relay's limits is paced in a second.
pub const PACING_MINUTE: Duration = Duration::from_millis(1_000);

fn read_http_request(stream: &mut std::net::TcpStream) -> Option<Recorded> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut parts = request_line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':')?;
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        method,
        path,
        headers,
        body: String::from_utf8(body).ok()?,
        at: Duration::ZERO,
        status: 0,
    })
}

impl RelayStandIn {
    /// A stand-in without rate limits; heeler paces to [`PACING_MINUTE`].
    pub fn start() -> RelayStandIn {
        RelayStandIn::start_with(None, PACING_MINUTE)
    }

    /// A stand-in with the relay's rate limits on its own minute.
    pub fn start_limited(limits: RateLimits) -> RelayStandIn {
        RelayStandIn::start_with(Some(limits), limits.minute)
    }

    fn start_with(limits: Option<RateLimits>, minute: Duration) -> RelayStandIn {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(RelayState {
            outage: None,
            script: VecDeque::new(),
            requests: Vec::new(),
            started: std::time::Instant::now(),
            limits,
            windows: Windows::default(),
        }));
        let shared = Arc::clone(&state);
        let address = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            // Polled, so that an outage can close the socket (refused) and
            // open it again on the same port when it ends.
            let mut listener = Some(listener);
            loop {
                let refusing = matches!(
                    &shared.lock().unwrap().outage,
                    Some((Outage::Refused, end)) if std::time::Instant::now() < *end
                );
                if refusing {
                    listener = None;
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                }
                if listener.is_none() {
                    let Ok(reopened) = TcpListener::bind(address) else {
                        std::thread::sleep(Duration::from_millis(2));
                        continue;
                    };
                    reopened.set_nonblocking(true).unwrap();
                    listener = Some(reopened);
                }
                let Some(open) = &listener else { continue };
                let mut stream = match open.accept() {
                    Ok((stream, _)) => stream,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(2));
                        continue;
                    }
                };
                let _ = stream.set_nonblocking(false);
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let Some(mut request) = read_http_request(&mut stream) else {
                        return;
                    };
                    let reply = {
                        let mut s = shared.lock().unwrap();
                        request.at = s.started.elapsed();
                        let outage = match &s.outage {
                            Some((Outage::Status(status, retry_after), end))
                                if std::time::Instant::now() < *end =>
                            {
                                Some((*status, retry_after.clone()))
                            }
                            _ => None,
                        };
                        let reply = match (outage, s.over_limit(request.at, &request.body)) {
                            (Some((status, retry_after)), _) => {
                                request.status = status;
                                s.requests.push(request);
                                drop(s);
                                let extra = retry_after
                                    .map(|v| format!("retry-after: {v}\r\n"))
                                    .unwrap_or_default();
                                let _ = stream.write_all(
                                    format!(
                                        "HTTP/1.1 {status} X\r\n{extra}content-length: 0\r\nconnection: close\r\n\r\n"
                                    )
                                    .as_bytes(),
                                );
                                return;
                            }
                            (None, Some(retry_after)) => Reply::Limited(retry_after),
                            (None, None) => s.script.pop_front().unwrap_or_else(Reply::ok),
                        };
                        request.status = match &reply {
                            Reply::Status(status, _) => *status,
                            Reply::Limited(_) => 429,
                            Reply::Hang | Reply::Drip { .. } => 0,
                        };
                        s.requests.push(request);
                        reply
                    };
                    let answer = |status: u16, extra: &str, body: &str| {
                        format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    };
                    match reply {
                        Reply::Hang => std::thread::sleep(Duration::from_secs(15)),
                        Reply::Drip { body } => {
                            let head = if body {
                                "HTTP/1.1 502 Bad Gateway\r\ncontent-length: 100\r\n\r\n"
                            } else {
                                ""
                            };
                            if stream.write_all(head.as_bytes()).is_err() {
                                return;
                            }
                            let drip = b"HTTP/1.1 200 OK\r\nx-drip: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
                            for i in 0..30 {
                                let byte = if body { b"x"[0] } else { drip[i % drip.len()] };
                                if stream.write_all(&[byte]).is_err() {
                                    return;
                                }
                                std::thread::sleep(Duration::from_secs(2));
                            }
                        }
                        Reply::Status(status, body) => {
                            let _ = stream.write_all(answer(status, "", &body).as_bytes());
                        }
                        Reply::Limited(seconds) => {
                            let extra = format!("retry-after: {seconds}\r\n");
                            let body = r#"{"error":"rate_limited"}"#;
                            let _ = stream.write_all(answer(429, &extra, body).as_bytes());
                        }
                    }
                });
            }
        });
        RelayStandIn { url, state, minute }
    }

    /// Starts an outage lasting `length` from now; returns its end on the
    /// stand-in's clock.
    pub fn outage(&self, outage: Outage, length: Duration) -> Duration {
        let mut s = self.state.lock().unwrap();
        let end = std::time::Instant::now() + length;
        s.outage = Some((outage, end));
        end - s.started
    }

    /// Queues replies for the next requests.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.state.lock().unwrap().script.extend(replies);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// The stand-in's clock: the time since it started.
    pub fn now(&self) -> Duration {
        self.state.lock().unwrap().started.elapsed()
    }
}

// ---------------------------------------------------------------- herdr

#[derive(Default)]
pub struct HerdrState {
    pub agents: Vec<Value>,
    pub workspaces: Vec<Value>,
    pub tabs: Vec<Value>,
    pub panes: Vec<Value>,
    /// (method, params) of every request.
    pub requests: Vec<(String, Value)>,
}

/// A herdr server stand-in on a Unix socket.
#[derive(Clone)]
pub struct HerdrStandIn {
    pub socket: PathBuf,
    pub state: Arc<Mutex<HerdrState>>,
}

fn answer(state: &HerdrState, method: &str, params: &Value) -> Object {
    let param = |k: &str| params.get(k).and_then(Value::as_str).map(str::to_owned);
    let in_workspace = |items: &[Value]| -> Vec<Value> {
        let ws = param("workspace_id");
        items
            .iter()
            .filter(|i| {
                ws.is_none() || i.get("workspace_id").and_then(Value::as_str) == ws.as_deref()
            })
            .cloned()
            .collect()
    };
    let error = |code: &str, message: String| {
        Object::new().with(
            "error",
            Object::new().with("code", code).with("message", message),
        )
    };
    let result = |kind: &str, key: &str, value: Value| {
        Object::new().with("result", Object::new().with("type", kind).with(key, value))
    };
    match method {
        "agent.get" => {
            let target = param("target").unwrap_or_default();
            match state
                .agents
                .iter()
                .find(|a| a.get("pane_id").and_then(Value::as_str) == Some(&target))
            {
                Some(agent) => result("agent_info", "agent", agent.clone()),
                None => error(
                    "agent_not_found",
                    format!("agent target {target} not found"),
                ),
            }
        }
        "agent.list" => result("agent_list", "agents", Value::Array(state.agents.clone())),
        "workspace.get" => {
            let id = param("workspace_id");
            match state
                .workspaces
                .iter()
                .find(|w| w.get("workspace_id").and_then(Value::as_str) == id.as_deref())
            {
                Some(w) => result("workspace_info", "workspace", w.clone()),
                None => error("workspace_not_found", "no such workspace".into()),
            }
        }
        "workspace.list" => result(
            "workspace_list",
            "workspaces",
            Value::Array(state.workspaces.clone()),
        ),
        "tab.list" => result("tab_list", "tabs", Value::Array(in_workspace(&state.tabs))),
        "pane.list" => result(
            "pane_list",
            "panes",
            Value::Array(in_workspace(&state.panes)),
        ),
        other => error("invalid_request", format!("unknown variant `{other}`")),
    }
}

impl HerdrStandIn {
    pub fn start(socket: &Path) -> HerdrStandIn {
        std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
        let listener = UnixListener::bind(socket).unwrap();
        let state = Arc::new(Mutex::new(HerdrState::default()));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut line = String::new();
                if BufReader::new(stream.try_clone().unwrap())
                    .read_line(&mut line)
                    .is_err()
                {
                    continue;
                }
                let request = json::parse(line.trim_end()).unwrap_or(Value::Null);
                let id = request.get("id").cloned().unwrap_or(Value::from(""));
                let method = request
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let params = request.get("params").cloned().unwrap_or(Value::Null);
                let mut body = {
                    let mut s = shared.lock().unwrap();
                    s.requests.push((method.clone(), params.clone()));
                    answer(&s, &method, &params)
                };
                let mut out = Object::new().with("id", id);
                for (k, v) in body.iter() {
                    out.insert(k, v.clone());
                }
                body = out;
                let _ = stream.write_all(format!("{}\n", Value::Object(body).to_json()).as_bytes());
            }
        });
        HerdrStandIn {
            socket: socket.to_path_buf(),
            state,
        }
    }

    pub fn set_agents(&self, agents: &str) {
        self.state.lock().unwrap().agents =
            json::parse(agents).unwrap().as_array().unwrap().to_vec();
    }

    pub fn set_workspaces(&self, workspaces: &str) {
        self.state.lock().unwrap().workspaces = json::parse(workspaces)
            .unwrap()
            .as_array()
            .unwrap()
            .to_vec();
    }

    pub fn set_tabs_and_panes(&self, tabs: &str, panes: &str) {
        let mut s = self.state.lock().unwrap();
        s.tabs = json::parse(tabs).unwrap().as_array().unwrap().to_vec();
        s.panes = json::parse(panes).unwrap().as_array().unwrap().to_vec();
    }

    pub fn methods(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap()
            .requests
            .iter()
            .map(|(m, _)| m.clone())
            .collect()
    }
}

// ---------------------------------------------------------------- fixture

/// One Host: plugin dirs, a herdr stand-in for one session, a relay stand-in.
/// Its root directory is removed when the fixture is dropped.
pub struct Fixture {
    pub root: PathBuf,
    pub config: PathBuf,
    pub state: PathBuf,
    pub herdr: HerdrStandIn,
    pub relay: RelayStandIn,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // A worker still serving this Host's queue (a test that failed
        // early) finishes first, within bounds, so nothing outlives the
        // fixture's directories.
        let _ = wait_idle(&session_state_dir(&self.env("")), Duration::from_secs(30));
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A `pane_agent_status_changed` event.
pub fn event(pane: &str, status: &str) -> String {
    format!(
        r#"{{"event":"pane_agent_status_changed","data":{{"type":"pane_agent_status_changed","pane_id":"{pane}","workspace_id":"w1","agent_status":"{status}","agent":"claude"}}}}"#
    )
}

impl Fixture {
    /// A default-session Host.
    pub fn new(name: &str) -> Fixture {
        Fixture::with_socket(name, "herdr/herdr.sock")
    }

    /// A Host whose herdr socket is at `relative` under the fixture root
    /// (e.g. `herdr/sessions/work/herdr.sock`).
    pub fn with_socket(name: &str, relative: &str) -> Fixture {
        Fixture::with_relay(name, relative, RelayStandIn::start())
    }

    /// A default-session Host whose relay has the relay's rate limits.
    pub fn rate_limited(name: &str, limits: RateLimits) -> Fixture {
        Fixture::with_relay(
            name,
            "herdr/herdr.sock",
            RelayStandIn::start_limited(limits),
        )
    }

    fn with_relay(name: &str, relative: &str, relay: RelayStandIn) -> Fixture {
        // The fixture removes its root when dropped.
        let root = fresh_dir(name);
        let config = root.join("config");
        let state = root.join("state");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        let herdr = HerdrStandIn::start(&root.join(relative));
        let fixture = Fixture {
            root,
            config,
            state,
            herdr,
            relay,
        };
        fixture.write_settings("{}");
        fixture
    }

    /// notify.json pointing at the relay stand-in, with zero delays and any
    /// extra members given as JSON object text (`{}` for none).
    pub fn write_settings(&self, extra: &str) {
        let mut settings = Object::new()
            .with("relay_url", self.relay.url.as_str())
            .with("debounce_ms", 0u64)
            .with("activity_debounce_ms", 0u64)
            .with("retry_delay_ms", 10u64);
        for (k, v) in json::parse(extra).unwrap().as_object().unwrap().iter() {
            settings.insert(k, v.clone());
        }
        std::fs::write(
            self.config.join("notify.json"),
            Value::Object(settings).to_json(),
        )
        .unwrap();
    }

    pub fn registration_path(&self) -> PathBuf {
        self.config.join("notifications.json")
    }

    pub fn write_registration(&self, text: &str) {
        std::fs::write(self.registration_path(), text).unwrap();
    }

    pub fn registration(&self) -> String {
        std::fs::read_to_string(self.registration_path()).unwrap()
    }

    /// The herdr environment of an event hook.
    pub fn env(&self, event_json: &str) -> Vec<(String, String)> {
        vec![
            (
                "HERDR_PLUGIN_CONFIG_DIR".into(),
                self.config.display().to_string(),
            ),
            (
                "HERDR_PLUGIN_STATE_DIR".into(),
                self.state.display().to_string(),
            ),
            ("HERDR_PLUGIN_EVENT_JSON".into(), event_json.into()),
            (
                "HERDR_SOCKET_PATH".into(),
                self.herdr.socket.display().to_string(),
            ),
            ("HERDR_BIN_PATH".into(), "/nonexistent/herdr".into()),
            (
                heeler::hooks::pacing::MINUTE_ENV.into(),
                self.relay.minute.as_millis().to_string(),
            ),
            // Every hook run waits for its worker to exit: a short linger.
            (
                heeler::hooks::worker::LINGER_ENV.into(),
                TEST_LINGER_MS.to_string(),
            ),
        ]
    }

    pub fn run(&self, hook: &str, event_json: &str) -> Output {
        run_hook(hook, &self.env(event_json))
    }

    /// Waits for this Host's hook worker (after [`Fixture::spawn`]ed hooks
    /// have exited).
    pub fn settle(&self) {
        settle_env(&self.env(""));
    }

    /// The messages of the hook failure log, oldest first, one per line
    /// with its newline (what the hooks once wrote to stderr).
    pub fn failure_text(&self) -> String {
        heeler::hooks::failure_log::read_last(&self.state, usize::MAX)
            .into_iter()
            .map(|logged| format!("{}\n", logged.message))
            .collect()
    }

    /// Empties the hook failure log.
    pub fn clear_failures(&self) {
        let log = heeler::hooks::failure_log::path_in(&self.state);
        let _ = std::fs::remove_file(heeler::hooks::failure_log::rotated_path(&log));
        let _ = std::fs::remove_file(log);
    }

    pub fn spawn(&self, hook: &str, event_json: &str) -> std::process::Child {
        hook_command(hook, &self.env(event_json)).spawn().unwrap()
    }
}

/// The hook worker's linger in the hook tests (`HEELER_TEST_LINGER_MS`):
/// each hook run waits for the worker to exit, which then takes 50 ms
/// instead of 250 once the spool is empty.
pub const TEST_LINGER_MS: u64 = 50;

/// The cap on heeler's deadlines (`HEELER_TEST_DEADLINE_MS`) in a test of
/// a party that hangs: a loopback stand-in that answers at all does so
/// well inside it, and waiting out a hung one costs a second instead of
/// the contract's ten.
pub const SHORT_DEADLINE_MS: u64 = 1_000;

/// The environment entry that caps heeler's deadlines at
/// [`SHORT_DEADLINE_MS`].
pub fn short_deadlines() -> (String, String) {
    (
        heeler::base::clock::TEST_DEADLINE_ENV.into(),
        SHORT_DEADLINE_MS.to_string(),
    )
}

pub fn hook_command(hook: &str, env: &[(String, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_heeler"));
    command
        .arg(hook)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `heeler <hook>` with exactly `env`, then waits until the session's
/// hook worker has finished what the hook handed it.
pub fn run_hook(hook: &str, env: &[(String, String)]) -> Output {
    let output = hook_command(hook, env).output().unwrap();
    settle_env(env);
    output
}

/// The session state dir the hooks of `env` use (`None` without a plugin
/// state dir).
pub fn session_state_dir(env: &[(String, String)]) -> Option<PathBuf> {
    let var = |name: &str| {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    let state = PathBuf::from(var("HERDR_PLUGIN_STATE_DIR")?);
    let session = heeler::herdr::session::from_socket_path(var("HERDR_SOCKET_PATH").as_deref());
    Some(session.state_dir(&state))
}

/// Waits until the queue of `state_dir` is idle: nothing queued, no worker.
/// Only call it when no hook of that session is still running.
pub fn wait_idle(state_dir: &Option<PathBuf>, limit: Duration) -> Result<(), String> {
    let Some(state_dir) = state_dir else {
        return Ok(());
    };
    let queue = heeler::hooks::spool::Queue::of(state_dir);
    let started = std::time::Instant::now();
    while !queue.is_idle() {
        if started.elapsed() > limit {
            return Err(format!(
                "the hook worker of {} did not finish",
                state_dir.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// [`wait_idle`] for the session of `env`, failing the test past 90 s.
pub fn settle_env(env: &[(String, String)]) {
    wait_idle(&session_state_dir(env), Duration::from_secs(90)).unwrap();
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A registration entry.
pub fn entry(token: &str, key: &str, extra: &str) -> String {
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(",{extra}")
    };
    format!(
        r#"{{"token":"{token}","env":"production","key":"{key}","notify":{{"blocked":true,"done":true}}{extra}}}"#
    )
}

pub fn registration(entries: &[String]) -> String {
    format!(r#"{{"v":1,"devices":[{}]}}"#, entries.join(","))
}

/// Python with `cryptography`, or why not.
pub fn python_crypto() -> Result<(), String> {
    let probe = Command::new("python3")
        .args(["-c", "import cryptography.hazmat.primitives.ciphers.aead"])
        .output();
    match probe {
        Err(e) => Err(format!("python3 not runnable: {e}")),
        Ok(o) if !o.status.success() => Err("python3 has no cryptography module".into()),
        Ok(_) => Ok(()),
    }
}

/// Opens an envelope with Python's `cryptography` AESGCM (an implementation
/// independent of ours) and returns the plaintext.
pub fn python_open(key: &str, aad: &str, envelope: &str) -> String {
    let script = r#"
import base64, json, sys
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
def d(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
key, aad, env = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.stdout.write(AESGCM(d(key)).decrypt(d(env["n"]), d(env["ct"]), aad.encode()).decode())
"#;
    let output = Command::new("python3")
        .args(["-c", script, key, aad, envelope])
        .output()
        .unwrap();
    assert!(output.status.success(), "python: {}", stderr(&output));
    String::from_utf8(output.stdout).unwrap()
}

/// The settings a real herdr under test runs with: no first-run screen and
/// no update or manifest check, so its server stays off the network.
pub const HERDR_TEST_CONFIG: &str =
    "onboarding = false\n\n[update]\nversion_check = false\nmanifest_check = false\n";

/// Writes [`HERDR_TEST_CONFIG`] as the `config.toml` of the herdr whose
/// `herdr plugin config-dir <id>` answered `plugin_config_dir`, and returns
/// that herdr's own config directory (where its socket is). herdr names the
/// directory after its build (`herdr`, or `herdr-dev` for a debug build), so
/// the tests take it from herdr rather than spell it: the answer is
/// `<herdr's config dir>/plugins/config/<id>`.
pub fn configure_real_herdr(plugin_config_dir: &Path) -> PathBuf {
    let herdr_dir = plugin_config_dir
        .ancestors()
        .nth(3)
        .expect("herdr plugin config-dir answers <config dir>/plugins/config/<id>")
        .to_path_buf();
    std::fs::write(herdr_dir.join("config.toml"), HERDR_TEST_CONFIG).unwrap();
    herdr_dir
}

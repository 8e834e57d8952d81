//! Every reader of something another process writes, against a writer
//! that sends one byte every 2 s and never finishes (issue 45): each
//! command ends within its documented bound (docs/security.md) with a
//! clear error. A drip stops itself after [`DRIP_FOR`], and each command
//! runs under a watchdog, so a hung reader fails the test instead of
//! holding it. Times are measured and printed (docs/security.md has them);
//! the one check on time is that a command ended before the drip did, two
//! minutes, far past every bound.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use heeler::base::clock::TEST_DEADLINE_ENV;
use heeler::base::json::{self, Value};

use crate::scratch::TempDir;

/// The interval between two bytes.
pub const DRIP_EVERY: Duration = Duration::from_secs(2);
/// How long a drip goes on before it ends itself.
pub const DRIP_FOR: Duration = Duration::from_secs(120);

/// How a watched command ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself.
    Exited(Output),
    /// The watchdog killed it.
    Killed,
}

/// Runs `command` (stdout and stderr piped), feeding its stdin from
/// `stdin` on a thread when given, and kills it past `watchdog`. Returns
/// how it ended and how long it ran.
pub fn run_watched(
    mut command: Command,
    stdin: Option<Box<dyn FnOnce(std::process::ChildStdin) + Send>>,
    watchdog: Duration,
) -> (Ended, Duration) {
    if stdin.is_some() {
        command.stdin(Stdio::piped());
    }
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let (Some(feed), Some(pipe)) = (stdin, child.stdin.take()) {
        std::thread::spawn(move || feed(pipe));
    }
    let readers = [
        drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
        drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
    ];
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let took = started.elapsed();
            let [stdout, stderr] = readers.map(|r| r.join().unwrap());
            return (
                Ended::Exited(Output {
                    status,
                    stdout,
                    stderr,
                }),
                took,
            );
        }
        if started.elapsed() > watchdog {
            kill(&mut child);
            return (Ended::Killed, started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn drain(pipe: Option<Box<dyn Read + Send>>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// A loopback stand-in that accepts every connection and drips into it;
/// it stops (and closes what it holds) when dropped or after
/// [`DRIP_FOR`].
pub struct DripServer {
    stop: Arc<AtomicBool>,
}

impl Drop for DripServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

impl DripServer {
    /// On 127.0.0.1; returns the server and its port.
    pub fn tcp() -> (DripServer, u16) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let server = DripServer::serve(move || listener.accept().map(|(s, _)| s));
        (server, port)
    }

    /// On the Unix socket `path`.
    pub fn unix(path: &Path) -> DripServer {
        let listener = UnixListener::bind(path).unwrap();
        listener.set_nonblocking(true).unwrap();
        DripServer::serve(move || listener.accept().map(|(s, _)| s))
    }

    fn serve<S: Write + Send + 'static>(
        mut accept: impl FnMut() -> std::io::Result<S> + Send + 'static,
    ) -> DripServer {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            while !stopped.load(Ordering::SeqCst) && started.elapsed() < DRIP_FOR {
                match accept() {
                    Ok(stream) => {
                        let stopped = stopped.clone();
                        std::thread::spawn(move || drip_until(stream, &stopped));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        DripServer { stop }
    }
}

/// Writes one byte every [`DRIP_EVERY`] to `to` until a write fails,
/// [`DRIP_FOR`] has passed or `stop` is set.
fn drip_until(mut to: impl Write, stop: &AtomicBool) {
    let started = Instant::now();
    while !stop.load(Ordering::SeqCst) && started.elapsed() < DRIP_FOR {
        if to.write_all(b"S").and_then(|()| to.flush()).is_err() {
            return;
        }
        let slept = Instant::now();
        while slept.elapsed() < DRIP_EVERY && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A stand-in program that prints one byte every 2 s, 60 times (its own
/// bound), whatever it is asked.
const DRIP_SCRIPT: &str =
    "#!/bin/sh\ni=0\nwhile [ $i -lt 60 ]; do printf S; sleep 2; i=$((i+1)); done\n";

/// Longer than any bound here; a command still running then has hung.
const WATCHDOG: Duration = Duration::from_secs(150);

/// The test cap where a reader's real bound is longer than these tests
/// should wait (`HEELER_TEST_DEADLINE_MS`): two drips and a half.
const CAP_MS: u64 = 5_000;

fn heeler(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_heeler"));
    command.args(args).env_clear().env("PATH", "/usr/bin:/bin");
    command
}

/// Runs `command` under the watchdog; its output when it exited by itself.
fn ended(command: Command, stdin: Option<Feed>, what: &str) -> (Output, Duration) {
    let (ended, took) = run_watched(command, stdin, WATCHDOG);
    let Ended::Exited(output) = ended else {
        panic!("{what}: still running after {WATCHDOG:?}");
    };
    // Not a timing check: a reader that waits for the writer to end
    // would take the drip's whole two minutes.
    assert!(took < DRIP_FOR, "{what}: waited the drip out ({took:?})");
    println!(
        "{what}: ended in {} ms ({:?}): {}{}",
        took.as_millis(),
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output, took)
}

type Feed = Box<dyn FnOnce(std::process::ChildStdin) + Send>;

/// Stdin that drips, as a [`run_watched`] feed.
fn dripping_stdin() -> Option<Feed> {
    Some(Box::new(|pipe| drip_until(pipe, &AtomicBool::new(false))))
}

/// A public host key for `pair` to pin (any key: the code is never used).
const HOST_KEY: &str = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBLcfUSSSNIBQAj/hJRedw91OfYBl8cH3TmBZbnAqRk3IF+DE3Qat5MuqssEA1NUWbqSSbGIRRcp0ckbz/p0pI18= root@host\n";

/// A home with `pair.json` advertising `port`, and the host key.
fn pairing_home(name: &str, port: u16) -> TempDir {
    let root = TempDir::new(&format!("drip-{name}"));
    for dir in ["home", "state", "config", "hostkeys"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join("hostkeys/ssh_host_ecdsa_key.pub"), HOST_KEY).unwrap();
    std::fs::write(
        root.join("config/pair.json"),
        format!("{{\"ssh_port\":{port}}}"),
    )
    .unwrap();
    root
}

fn in_home(mut command: Command, root: &Path) -> Command {
    command
        .env("HOME", root.join("home"))
        .env("HERDR_PLUGIN_STATE_DIR", root.join("state"))
        .env("HERDR_PLUGIN_CONFIG_DIR", root.join("config"))
        .env("HEELER_TEST_HOST_KEY_DIR", root.join("hostkeys"));
    command
}

#[test]
fn the_pairing_preflight_ends_at_its_5_s_deadline_under_a_drip() {
    let (_server, port) = DripServer::tcp();
    let root = pairing_home("preflight", port);
    let command = in_home(
        heeler(&["pair", "--no-ui", "--config-only", "--address", "127.0.0.1"]),
        &root,
    );
    let (output, took) = ended(command, None, "pair --no-ui preflight (bound 5 s)");
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "no code is printed");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with(&format!(
            "heeler pair: no SSH server answers on 127.0.0.1:{port} (no banner line within 5 s); fix: "
        )),
        "{stderr}"
    );
    assert!(took >= Duration::from_secs(4), "it read the drip: {took:?}");
}

#[test]
fn doctor_s_ssh_check_ends_at_its_5_s_deadline_under_a_drip() {
    let (_server, port) = DripServer::tcp();
    let root = pairing_home("doctor", port);
    let command = in_home(heeler(&["doctor", "--json"]), &root);
    let (output, _) = ended(command, None, "doctor ssh_server (bound 5 s)");
    let report = json::parse(&String::from_utf8(output.stdout).unwrap()).unwrap();
    let check = report
        .get("checks")
        .and_then(Value::as_array)
        .and_then(|checks| {
            checks
                .iter()
                .find(|c| c.get("id").and_then(Value::as_str) == Some("ssh_server"))
        })
        .expect("an ssh_server check");
    assert_eq!(check.get("status").and_then(Value::as_str), Some("fail"));
    let summary = check.get("summary").and_then(Value::as_str).unwrap();
    assert_eq!(
        summary,
        format!("no SSH server answers on 127.0.0.1:{port} (no banner line within 5 s)")
    );
}

#[test]
fn a_banner_line_longer_than_255_characters_is_refused_at_once() {
    // RFC 4253 4.2: the identification string is at most 255 characters
    // with its CR LF; this server sends 300 without a line end, and waits.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut long = b"SSH-2.0-".to_vec();
        long.resize(300, b'x');
        stream.write_all(&long).unwrap();
        // Held open until heeler closes its end (or 30 s).
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let _ = stream.read(&mut [0u8; 1]);
    });
    let root = pairing_home("long-banner", port);
    let command = in_home(
        heeler(&["pair", "--no-ui", "--config-only", "--address", "127.0.0.1"]),
        &root,
    );
    let (output, _) = ended(command, None, "pair --no-ui, a 300-byte banner line");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with(&format!(
            "heeler pair: no SSH server answers on 127.0.0.1:{port} (a line longer than RFC 4253's 255 characters); fix: "
        )),
        "{stderr}"
    );
    server.join().unwrap();
}

#[test]
fn the_herdr_socket_answer_ends_at_its_deadline_under_a_drip() {
    let dir = TempDir::new("drip-herdr-socket");
    let path = dir.join("herdr.sock");
    let _server = DripServer::unix(&path);
    let mut command = heeler(&["pair-action"]);
    command.env("HERDR_SOCKET_PATH", &path);
    let (output, _) = ended(
        command,
        None,
        "pair-action, herdr socket (bound 3 s connect + 5 s exchange)",
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr, "herdr socket: no answer line in time\n");
}

#[test]
fn the_herdr_cli_answer_ends_at_its_deadline_under_a_drip() {
    let dir = TempDir::new("drip-herdr-cli");
    let herdr = dir.join("herdr");
    crate::support::write_executable(&herdr, DRIP_SCRIPT).unwrap();
    let mut command = heeler(&["pair-action"]);
    command
        .env("HERDR_SOCKET_PATH", dir.join("nobody-listens.sock"))
        .env("HERDR_BIN_PATH", &herdr);
    let (output, _) = ended(command, None, "pair-action, herdr CLI (bound 10 s)");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "herdr plugin pane open timed out after 10 s\n"
    );
}

/// A home with one Claude Code message today, its usage cache built.
fn usage_home(name: &str) -> TempDir {
    let home = TempDir::new(&format!("drip-{name}"));
    let now = heeler::base::clock::unix_seconds();
    crate::usage_fixture::write(
        &home.join(".claude/projects/-home-dev-alpha/s.jsonl"),
        &(crate::usage_fixture::Claude {
            at: now - 60,
            ..Default::default()
        }
        .line()
            + "\n"),
    );
    let mut worker = heeler(&["usage", "worker"]);
    worker.env("HOME", &*home).env("TZ", "UTC");
    assert!(worker.output().unwrap().status.success());
    home
}

/// Waits (bounded) for a worker a view started to end.
fn settle(home: &Path) {
    let dir = heeler::usage::paths::UsageDir(home.join(".local/state/herdr/plugins/heeler/usage"));
    for _ in 0..400 {
        if !heeler::usage::worker::is_running(&dir) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_pi_herdr_document_is_given_up_at_its_deadline_under_a_drip() {
    let home = usage_home("pi-doc");
    let path = home.join("hc.sock");
    let _server = DripServer::unix(&path);
    let mut command = heeler(&["usage", "--json"]);
    command
        .env("HOME", &*home)
        .env("TZ", "UTC")
        .env("HC_TERMINAL_SOCKET", &path);
    let (output, _) = ended(
        command,
        None,
        "usage view, pi-herdr document (bound 200 ms)",
    );
    settle(&home);
    assert!(output.status.success(), "{output:?}");
    // The view is drawn from our own cache: the document adds nothing.
    let document = json::parse(&String::from_utf8(output.stdout).unwrap()).unwrap();
    let limits = document.get("limits").expect("limits");
    for agent in ["claude", "codex"] {
        let source = limits.get(agent).and_then(|l| l.get("source"));
        assert_eq!(source, None, "{agent}: {limits:?}");
    }
}

#[test]
fn the_statusline_s_stdin_is_read_until_its_deadline_under_a_drip() {
    let home = usage_home("statusline");
    let mut command = heeler(&["usage", "statusline"]);
    command.env("HOME", &*home).env("TZ", "UTC");
    let (output, _) = ended(
        command,
        dripping_stdin(),
        "usage statusline, stdin (bound 100 ms)",
    );
    settle(&home);
    assert!(output.status.success(), "{output:?}");
    let line = String::from_utf8(output.stdout).unwrap();
    // Not Claude Code's object: the line without a session part.
    assert!(line.contains(" today"), "{line}");
    assert!(!line.contains("session"), "{line}");
}

#[test]
fn accept_s_stdin_is_read_until_its_deadline_under_a_drip() {
    let root = TempDir::new("drip-accept");
    let state = root.join("state");
    std::fs::create_dir_all(state.join("pending")).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(
        state.join("pending"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let id = "0a1b2c3d4e5f";
    std::fs::write(
        state.join(format!("pending/{id}.json")),
        format!(
            "{{\"pairingId\":\"{id}\",\"expiresAt\":{},\"publicLine\":\"ssh-ed25519 AAAA\"}}\n",
            u32::MAX
        ),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("home")).unwrap();
    let mut command = heeler(&["accept", "--state-dir"]);
    command
        .arg(&state)
        .args(["--pairing-id", id])
        .env("HOME", root.join("home"))
        .env(TEST_DEADLINE_ENV, CAP_MS.to_string());
    let (output, _) = ended(
        command,
        dripping_stdin(),
        "accept, stdin (bound 30 s; capped at 5 s)",
    );
    // What came before the deadline is no Device Key line.
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(output.stdout, b"HERDR-ENROLL:ERR:invalid_key\n");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.starts_with("rejected Device Key line: "), "{stderr}");
    assert!(
        state.join(format!("pending/{id}.json")).exists(),
        "left for a retry"
    );
}

/// A `PATH` whose `claude` and `codex` drip.
fn dripping_agents(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["claude", "codex"] {
        crate::support::write_executable(bin.join(name), DRIP_SCRIPT).unwrap();
    }
    format!("{}:/usr/bin:/bin", bin.display())
}

#[test]
fn the_limits_probes_end_at_their_deadline_under_a_drip() {
    let home = usage_home("probes");
    let path = dripping_agents(&home);
    let mut command = heeler(&["usage", "--limits", "--json"]);
    command
        .env("HOME", &*home)
        .env("TZ", "UTC")
        .env("PATH", &path)
        .env(TEST_DEADLINE_ENV, CAP_MS.to_string());
    let (output, _) = ended(
        command,
        None,
        "usage --limits, codex then claude (bound 15 s each; capped at 5 s)",
    );
    settle(&home);
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("codex app-server timed out"), "{text}");
    assert!(text.contains("claude timed out"), "{text}");
}

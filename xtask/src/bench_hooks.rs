//! `cargo xtask bench-hooks`: CPU time and peak RSS of one `heeler
//! notify-hook` / `activity-hook` process, for the cheap no-op paths and for
//! a full delivery to a loopback relay (debounce 0).
//!
//! herdr starts both hooks on every agent status change, so their per-process
//! cost is the budget that matters (no-op < 2 ms CPU and < 4 MiB RSS; full
//! delivery < 10 ms CPU). CPU time is `wait4`'s user + system time of one
//! directly spawned hook process; peak RSS is GNU time's `%M` for a second,
//! identical run (a child's `ru_maxrss` starts at its spawner's high-water
//! mark, so only a tiny spawner like GNU time measures the hook itself).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use xshell::{Shell, cmd};

const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
/// CPU time of exactly one hook process: `wait4` on a child spawned directly
/// (no shell in between). Its `ru_maxrss` is useless here: a spawned child
/// inherits the spawning Python's high-water mark at exec.
const CPU_OF_ONE_RUN: &str = r#"
import os, sys
quiet = [(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)]
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], dict(os.environ), file_actions=quiet)
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime)
"#;
/// GNU time forks from a ~1 MiB process, so its `%M` is the hook's own peak.
const GNU_TIME: &str = "/usr/bin/time";
const AGENT: &str = r#"{"pane_id":"w1:p1","workspace_id":"w1","tab_id":"w1:t1","agent":"claude","agent_status":"blocked","terminal_title_stripped":"Fix the bug"}"#;

fn start_relay() -> Result<String, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let url = format!(
        "http://{}",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let Ok(clone) = stream.try_clone() else {
                continue;
            };
            let mut reader = BufReader::new(clone);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let answer = r#"{"apnsId":"bench"}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    Ok(url)
}

fn start_herdr(socket: &Path) -> Result<(), String> {
    let listener = UnixListener::bind(socket).map_err(|e| e.to_string())?;
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let Ok(clone) = stream.try_clone() else {
                continue;
            };
            let mut line = String::new();
            let _ = BufReader::new(clone).read_line(&mut line);
            let result = if line.contains(r#""method":"agent.get""#) {
                format!(r#"{{"type":"agent_info","agent":{AGENT}}}"#)
            } else if line.contains(r#""method":"agent.list""#) {
                format!(r#"{{"type":"agent_list","agents":[{AGENT}]}}"#)
            } else if line.contains(r#""method":"workspace.get""#) {
                r#"{"type":"workspace_info","workspace":{"workspace_id":"w1","label":"Heeler"}}"#
                    .to_owned()
            } else {
                r#"{"type":"workspace_list","workspaces":[{"workspace_id":"w1","label":"Heeler"}]}"#
                    .to_owned()
            };
            let _ = writeln!(stream, r#"{{"id":"x","result":{result}}}"#);
        }
    });
    Ok(())
}

struct Host {
    root: PathBuf,
    relay_url: String,
}

impl Host {
    fn config(&self) -> PathBuf {
        self.root.join("config")
    }
    fn state(&self) -> PathBuf {
        self.root.join("state")
    }
    fn socket(&self) -> PathBuf {
        self.root.join("herdr/herdr.sock")
    }

    fn write_registration(&self, with_activity: bool) -> Result<(), String> {
        let live = if with_activity {
            r#","live_activity":{"token":"0123456789abcdef0123"}"#
        } else {
            ""
        };
        let text = format!(
            r#"{{"v":1,"devices":[{{"token":"0123456789abcdef","env":"production","key":"{KEY}","notify":{{"blocked":true,"done":true}}{live}}}]}}"#
        );
        std::fs::write(self.config().join("notifications.json"), text).map_err(|e| e.to_string())
    }
}

/// One hook run's figures.
struct Sample {
    cpu_ms: f64,
    /// `None` when GNU time is not available.
    rss_kib: Option<f64>,
}

fn hook_env(host: &Host, status: &str) -> Vec<(&'static str, String)> {
    let event = format!(
        r#"{{"event":"pane_agent_status_changed","data":{{"type":"pane_agent_status_changed","pane_id":"w1:p1","workspace_id":"w1","agent_status":"{status}","agent":"claude"}}}}"#
    );
    vec![
        (
            "HERDR_PLUGIN_CONFIG_DIR",
            host.config().display().to_string(),
        ),
        ("HERDR_PLUGIN_STATE_DIR", host.state().display().to_string()),
        ("HERDR_PLUGIN_EVENT_JSON", event),
        ("HERDR_SOCKET_PATH", host.socket().display().to_string()),
        ("HERDR_BIN_PATH", "/nonexistent/herdr".to_owned()),
    ]
}

fn cpu_ms(heeler: &Path, hook: &str, env: &[(&str, String)]) -> Result<f64, String> {
    let output = Command::new("python3")
        .args(["-c", CPU_OF_ONE_RUN])
        .arg(heeler)
        .arg(hook)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    let line = String::from_utf8_lossy(&output.stdout);
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [code, cpu] = fields[..] else {
        return Err(format!(
            "unexpected measurement output: {line} {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    };
    if code != "0" {
        return Err(format!("{hook} exited {code}"));
    }
    Ok(cpu.parse::<f64>().map_err(|e| e.to_string())? * 1000.0)
}

fn peak_rss_kib(
    heeler: &Path,
    hook: &str,
    env: &[(&str, String)],
    report: &Path,
) -> Result<Option<f64>, String> {
    if !Path::new(GNU_TIME).exists() {
        return Ok(None);
    }
    let status = Command::new(GNU_TIME)
        .args(["-f", "%M", "-o"])
        .arg(report)
        .arg(heeler)
        .arg(hook)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {GNU_TIME}: {e}"))?;
    if !status.success() {
        return Err(format!("{hook} under {GNU_TIME} failed: {status}"));
    }
    let text = std::fs::read_to_string(report).map_err(|e| e.to_string())?;
    Ok(text
        .trim()
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok()))
}

fn measure(
    heeler: &Path,
    host: &Host,
    hook: &str,
    status: &str,
    before_each: &dyn Fn(),
    runs: usize,
) -> Result<Vec<Sample>, String> {
    let env = hook_env(host, status);
    let report = host.root.join("time.out");
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        before_each();
        let cpu_ms = cpu_ms(heeler, hook, &env)?;
        before_each();
        let rss_kib = peak_rss_kib(heeler, hook, &env, &report)?;
        samples.push(Sample { cpu_ms, rss_kib });
    }
    Ok(samples)
}

fn report(name: &str, samples: &[Sample], cpu_budget_ms: f64, rss_budget_mib: Option<f64>) {
    let mut cpu: Vec<f64> = samples.iter().map(|s| s.cpu_ms).collect();
    cpu.sort_by(f64::total_cmp);
    let median = cpu[cpu.len() / 2];
    let max = cpu[cpu.len() - 1];
    let rss = samples
        .iter()
        .map(|s| s.rss_kib)
        .collect::<Option<Vec<f64>>>()
        .map(|all| all.into_iter().fold(0.0, f64::max) / 1024.0);
    let verdict = |ok: bool| if ok { "ok" } else { "OVER" };
    let rss_budget = match (rss, rss_budget_mib) {
        (Some(rss), Some(budget)) => format!("< {budget} MiB {}", verdict(rss < budget)),
        _ => "-".to_owned(),
    };
    let rss = rss.map_or_else(|| "n/a".to_owned(), |r| format!("{r:.2}"));
    println!(
        "{name:<46} {:>4} {median:>8.2} {max:>8.2} {rss:>9}   < {cpu_budget_ms} ms {}  {rss_budget}",
        samples.len(),
        verdict(median < cpu_budget_ms),
    );
}

pub fn run(args: &[String]) -> Result<(), String> {
    let runs = match args {
        [] => 30,
        [flag, n] if flag == "--runs" => n.parse().map_err(|_| "--runs takes a number")?,
        _ => return Err("usage: cargo xtask bench-hooks [--runs N]".to_owned()),
    };
    let sh = Shell::new().map_err(|e| e.to_string())?;
    let root_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    sh.change_dir(&root_dir);
    cmd!(sh, "cargo build --release --bin heeler")
        .run()
        .map_err(|e| e.to_string())?;
    let heeler = root_dir.join("target/release/heeler");

    let root = std::env::temp_dir().join(format!("heeler-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for dir in ["config", "state", "herdr"] {
        std::fs::create_dir_all(root.join(dir)).map_err(|e| e.to_string())?;
    }
    let host = Host {
        relay_url: start_relay()?,
        root,
    };
    start_herdr(&host.socket())?;
    std::fs::write(
        host.config().join("notify.json"),
        format!(
            r#"{{"relay_url":"{}","debounce_ms":0,"activity_debounce_ms":0,"retry_delay_ms":0}}"#,
            host.relay_url
        ),
    )
    .map_err(|e| e.to_string())?;

    let marker = host.state().join("notify/dzE6cDE.json");
    let last_state = host.state().join("activity/last-state.json");
    let keep = || {};
    let clear_marker = || {
        let _ = std::fs::remove_file(&marker);
    };
    let clear_last_state = || {
        let _ = std::fs::remove_file(&last_state);
    };
    // (name, hook, event status, registers a Live Activity, before each run,
    // CPU budget ms, RSS budget MiB)
    type Scenario<'a> = (
        &'a str,
        &'a str,
        &'a str,
        bool,
        &'a dyn Fn(),
        f64,
        Option<f64>,
    );
    let scenarios: [Scenario; 6] = [
        (
            "(floor) heeler --version: process start only",
            "--version",
            "working",
            false,
            &keep,
            2.0,
            Some(4.0),
        ),
        (
            "(a) notify-hook no-op: working, not notified",
            "notify-hook",
            "working",
            false,
            &clear_marker,
            2.0,
            Some(4.0),
        ),
        (
            "(a) notify-hook no-op: blocked, already sent",
            "notify-hook",
            "blocked",
            false,
            &keep,
            2.0,
            Some(4.0),
        ),
        (
            "(a) activity-hook no-op: no live activity",
            "activity-hook",
            "working",
            false,
            &keep,
            2.0,
            Some(4.0),
        ),
        (
            "(b) notify-hook full delivery (loopback)",
            "notify-hook",
            "blocked",
            false,
            &clear_marker,
            10.0,
            None,
        ),
        (
            "(b) activity-hook full delivery (loopback)",
            "activity-hook",
            "blocked",
            true,
            &clear_last_state,
            10.0,
            None,
        ),
    ];

    println!(
        "{} (release), {runs} runs per row; CPU ms = user + sys; peak RSS in MiB",
        heeler.display()
    );
    println!(
        "{:<46} {:>4} {:>8} {:>8} {:>9}   budget",
        "scenario", "runs", "cpu med", "cpu max", "peak rss"
    );
    for (name, hook, status, with_activity, before_each, cpu_budget, rss_budget) in scenarios {
        host.write_registration(with_activity)?;
        if name.contains("already sent") {
            // One delivery first, so the marker holds the status.
            measure(&heeler, &host, hook, status, &clear_marker, 1)?;
        }
        let samples = measure(&heeler, &host, hook, status, before_each, runs)?;
        report(name, &samples, cpu_budget, rss_budget);
    }
    let _ = std::fs::remove_dir_all(&host.root);
    Ok(())
}

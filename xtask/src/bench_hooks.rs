//! `cargo xtask bench-hooks`: CPU time, wall time and peak RSS of one `heeler
//! notify-hook` / `activity-hook` process, for the cheap no-op paths, the
//! detach path (the event handed to the session's worker) and the delivery
//! path (the worker serving one event to a loopback relay, debounce 0), and
//! the total CPU of a 100-pane burst (every hook plus the worker).
//!
//! herdr starts both hooks on every agent status change and runs at most 32
//! plugin commands at once, so their per-process cost and how long each
//! holds herdr's slot are the budgets that matter (no-op < 2 ms CPU and
//! < 4 MiB RSS; detach < 4 ms CPU; delivery < 10 ms CPU). CPU time is
//! `wait4`'s user + system time of one
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
import os, sys, time
quiet = [(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)]
started = time.monotonic()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], dict(os.environ), file_actions=quiet)
_, status, usage = os.wait4(pid, 0)
wall = time.monotonic() - started
print(os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, wall)
"#;
/// A burst as herdr runs it: both hooks for panes 1..=N, at most 32 in
/// flight; prints the summed CPU and each hook's CPU and wall (seconds).
const BURST: &str = r#"
import json, os, sys, time
heeler, panes = sys.argv[1], int(sys.argv[2])
quiet = [(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
         (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)]
jobs = [(hook, i) for i in range(1, panes + 1) for hook in ("notify-hook", "activity-hook")]
running, cpu, walls, cpus, failed = {}, 0.0, [], [], 0
while jobs or running:
    while jobs and len(running) < 32:
        hook, i = jobs.pop(0)
        env = dict(os.environ)
        env["HERDR_PLUGIN_EVENT_JSON"] = json.dumps({"event": "pane_agent_status_changed", "data": {"type": "pane_agent_status_changed", "pane_id": "w1:p%d" % i, "workspace_id": "w1", "agent_status": "blocked", "agent": "claude"}})
        pid = os.posix_spawn(heeler, [heeler, hook], env, file_actions=quiet)
        running[pid] = time.monotonic()
    pid, status, usage = os.wait4(-1, 0)
    started = running.pop(pid)
    walls.append(time.monotonic() - started)
    cpus.append(usage.ru_utime + usage.ru_stime)
    failed += os.waitstatus_to_exitcode(status) != 0
print(failed, sum(cpus), " ".join("%f:%f" % pair for pair in zip(cpus, walls)))
"#;
/// GNU time forks from a ~1 MiB process, so its `%M` is the hook's own peak.
const GNU_TIME: &str = "/usr/bin/time";
/// Panes in the burst row.
const BURST_PANES: usize = 100;
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

fn start_herdr(socket: &Path, agents: String) -> Result<(), String> {
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
                format!(r#"{{"type":"agent_list","agents":{agents}}}"#)
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
    wall_ms: f64,
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
        // The loopback relay has no rate limit: a 1 ms relay minute keeps
        // the worker's pacing from spreading the burst over a minute, so
        // the figures stay the cost of serving it.
        (heeler::hooks::pacing::MINUTE_ENV, "1".to_owned()),
    ]
}

/// CPU and wall milliseconds of one run of `heeler <args>`.
fn cpu_ms(heeler: &Path, args: &[&str], env: &[(&str, String)]) -> Result<(f64, f64), String> {
    let output = Command::new("python3")
        .args(["-c", CPU_OF_ONE_RUN])
        .arg(heeler)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    let line = String::from_utf8_lossy(&output.stdout);
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [code, cpu, wall] = fields[..] else {
        return Err(format!(
            "unexpected measurement output: {line} {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    };
    if code != "0" {
        return Err(format!("{args:?} exited {code}"));
    }
    let ms = |text: &str| {
        text.parse::<f64>()
            .map(|s| s * 1000.0)
            .map_err(|e| e.to_string())
    };
    Ok((ms(cpu)?, ms(wall)?))
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
        let (cpu_ms, wall_ms) = cpu_ms(heeler, &[hook], &env)?;
        before_each();
        let rss_kib = peak_rss_kib(heeler, hook, &env, &report)?;
        samples.push(Sample {
            cpu_ms,
            wall_ms,
            rss_kib,
        });
    }
    wait_idle(host);
    Ok(samples)
}

/// The worker serving one queued event: the event is queued by a hook
/// while the bench holds the session's lock (so no worker starts), then
/// `heeler hook-worker` runs as our child and serves it. Its wall time
/// includes the gather wait and the linger before it exits.
fn measure_worker(
    heeler: &Path,
    host: &Host,
    before_each: &dyn Fn(),
    runs: usize,
) -> Result<Vec<Sample>, String> {
    let env = hook_env(host, "blocked");
    let queue = heeler::hooks::spool::Queue::of(&host.state());
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        before_each();
        {
            let _lock = queue
                .try_lock()
                .map_err(|e| e.to_string())?
                .ok_or("the session's worker is still running")?;
            cpu_ms(heeler, &["notify-hook"], &env)?;
        }
        let (cpu_ms, wall_ms) = cpu_ms(heeler, &["hook-worker"], &env)?;
        samples.push(Sample {
            cpu_ms,
            wall_ms,
            rss_kib: None,
        });
    }
    Ok(samples)
}

/// Waits until the session's worker has finished and left.
fn wait_idle(host: &Host) {
    let queue = heeler::hooks::spool::Queue::of(&host.state());
    let started = std::time::Instant::now();
    while !queue.is_idle() && started.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn report(name: &str, samples: &[Sample], cpu_budget_ms: f64, rss_budget_mib: Option<f64>) {
    let mut cpu: Vec<f64> = samples.iter().map(|s| s.cpu_ms).collect();
    cpu.sort_by(f64::total_cmp);
    let mut wall: Vec<f64> = samples.iter().map(|s| s.wall_ms).collect();
    wall.sort_by(f64::total_cmp);
    let median = percentile(&cpu, 0.5);
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
        "{name:<50} {:>4} {median:>8.2} {:>8.2} {:>8.2} {:>8.2} {rss:>9}   < {cpu_budget_ms} ms {}  {rss_budget}",
        samples.len(),
        percentile(&cpu, 0.99),
        percentile(&wall, 0.5),
        percentile(&wall, 0.99),
        verdict(median < cpu_budget_ms),
    );
}

/// The 100-pane burst: every hook's CPU and wall, and the worker's CPU for
/// serving all of it.
fn burst(heeler: &Path, host: &Host, panes: usize) -> Result<(), String> {
    host.write_registration(true)?;
    let _ = std::fs::remove_dir_all(host.state().join("notify"));
    let _ = std::fs::remove_dir_all(host.state().join("activity"));
    let env = hook_env(host, "blocked");
    let queue = heeler::hooks::spool::Queue::of(&host.state());
    let output = {
        // Held through the burst, so the events queue up for one worker
        // measured below; each hook's probe finds the lock held.
        let _lock = queue
            .try_lock()
            .map_err(|e| e.to_string())?
            .ok_or("the session's worker is still running")?;
        Command::new("python3")
            .args(["-c", BURST])
            .arg(heeler)
            .arg(panes.to_string())
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .map_err(|e| format!("cannot run python3: {e}"))?
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let mut fields = text.split_whitespace();
    let failed = fields.next().unwrap_or("?");
    let hooks_cpu: f64 = fields
        .next()
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| format!("unexpected burst output: {text}"))?;
    let samples: Vec<Sample> = fields
        .filter_map(|pair| {
            let (cpu, wall) = pair.split_once(':')?;
            Some(Sample {
                cpu_ms: cpu.parse::<f64>().ok()? * 1000.0,
                wall_ms: wall.parse::<f64>().ok()? * 1000.0,
                rss_kib: None,
            })
        })
        .collect();
    if failed != "0" {
        return Err(format!("{failed} hooks of the burst failed"));
    }
    let queued = queue.list().len();
    let (worker_cpu, worker_wall) = cpu_ms(heeler, &["hook-worker"], &env)?;
    report(
        &format!("(c) burst: each of {} hooks", samples.len()),
        &samples,
        4.0,
        None,
    );
    println!(
        "(c) burst of {panes} panes: {} hook processes {:.1} ms CPU + one worker {worker_cpu:.1} ms CPU \
         ({queued} events, {worker_wall:.0} ms wall) = {:.1} ms CPU in all",
        samples.len(),
        hooks_cpu * 1000.0,
        hooks_cpu * 1000.0 + worker_cpu
    );
    Ok(())
}

/// What a scenario clears before each run, so that every run takes the
/// same path.
#[derive(Clone, Copy)]
enum Before {
    Keep,
    /// The notify dedupe marker, so the event is not already sent.
    ClearMarker,
    /// The Live Activity's last state, so the round is not a no-op.
    ClearLastState,
}

/// One row of the hook table.
struct Scenario {
    name: &'static str,
    hook: &'static str,
    /// The event's status.
    status: &'static str,
    /// Whether the device registers a Live Activity.
    with_activity: bool,
    before: Before,
    cpu_budget_ms: f64,
    rss_budget_mib: Option<f64>,
}

const SCENARIOS: [Scenario; 6] = [
    Scenario {
        name: "(floor) heeler --version: process start only",
        hook: "--version",
        status: "working",
        with_activity: false,
        before: Before::Keep,
        cpu_budget_ms: 2.0,
        rss_budget_mib: Some(4.0),
    },
    Scenario {
        name: "(a) notify-hook no-op: working, not notified",
        hook: "notify-hook",
        status: "working",
        with_activity: false,
        before: Before::ClearMarker,
        cpu_budget_ms: 2.0,
        rss_budget_mib: Some(4.0),
    },
    Scenario {
        name: "(a) notify-hook no-op: blocked, already sent",
        hook: "notify-hook",
        status: "blocked",
        with_activity: false,
        before: Before::Keep,
        cpu_budget_ms: 2.0,
        rss_budget_mib: Some(4.0),
    },
    Scenario {
        name: "(a) activity-hook no-op: no live activity",
        hook: "activity-hook",
        status: "working",
        with_activity: false,
        before: Before::Keep,
        cpu_budget_ms: 2.0,
        rss_budget_mib: Some(4.0),
    },
    Scenario {
        name: "(b) notify-hook detach: queued, worker started",
        hook: "notify-hook",
        status: "blocked",
        with_activity: false,
        before: Before::ClearMarker,
        cpu_budget_ms: 4.0,
        rss_budget_mib: None,
    },
    Scenario {
        name: "(b) activity-hook detach: queued, worker started",
        hook: "activity-hook",
        status: "blocked",
        with_activity: true,
        before: Before::ClearLastState,
        cpu_budget_ms: 4.0,
        rss_budget_mib: None,
    },
];

/// Waits for the session's worker to leave, then clears what `before`
/// names.
fn prepare(host: &Host, before: Before) {
    let file = match before {
        Before::Keep => return,
        Before::ClearMarker => host.state().join("notify/dzE6cDE.json"),
        Before::ClearLastState => host.state().join("activity/last-state.json"),
    };
    wait_idle(host);
    let _ = std::fs::remove_file(file);
}

/// The number of runs per row the arguments ask for.
fn parse_runs(args: &[String]) -> Result<usize, String> {
    match args {
        [] => Ok(30),
        [flag, n] if flag == "--runs" => n.parse().map_err(|_| "--runs takes a number".to_owned()),
        _ => Err("usage: cargo xtask bench-hooks [--runs N]".to_owned()),
    }
}

/// A fresh host under the temp directory: a loopback relay, a herdr
/// stand-in with `BURST_PANES` agents, and the notify settings.
fn set_up_host() -> Result<Host, String> {
    let root = std::env::temp_dir().join(format!("heeler-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for dir in ["config", "state", "herdr"] {
        std::fs::create_dir_all(root.join(dir)).map_err(|e| e.to_string())?;
    }
    let host = Host {
        relay_url: start_relay()?,
        root,
    };
    let agents: Vec<String> = (1..=BURST_PANES)
        .map(|i| AGENT.replace("w1:p1", &format!("w1:p{i}")))
        .collect();
    start_herdr(&host.socket(), format!("[{}]", agents.join(",")))?;
    std::fs::write(
        host.config().join("notify.json"),
        format!(
            r#"{{"relay_url":"{}","debounce_ms":0,"activity_debounce_ms":0,"retry_delay_ms":0}}"#,
            host.relay_url
        ),
    )
    .map_err(|e| e.to_string())?;
    Ok(host)
}

pub fn run(args: &[String]) -> Result<(), String> {
    let runs = parse_runs(args)?;
    let sh = Shell::new().map_err(|e| e.to_string())?;
    let root_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    sh.change_dir(&root_dir);
    cmd!(sh, "cargo build --release --bin heeler")
        .run()
        .map_err(|e| e.to_string())?;
    let heeler = root_dir.join("target/release/heeler");
    let host = set_up_host()?;
    let clear_marker = || prepare(&host, Before::ClearMarker);

    println!(
        "{} (release), {runs} runs per row; CPU ms = user + sys; peak RSS in MiB",
        heeler.display()
    );
    println!(
        "{:<50} {:>4} {:>8} {:>8} {:>8} {:>8} {:>9}   budget",
        "scenario", "runs", "cpu p50", "cpu p99", "wall p50", "wall p99", "peak rss"
    );
    for s in &SCENARIOS {
        host.write_registration(s.with_activity)?;
        if s.name.contains("already sent") {
            // One delivery first, so the marker holds the status.
            measure(&heeler, &host, s.hook, s.status, &clear_marker, 1)?;
        }
        let before_each = || prepare(&host, s.before);
        let samples = measure(&heeler, &host, s.hook, s.status, &before_each, runs)?;
        report(s.name, &samples, s.cpu_budget_ms, s.rss_budget_mib);
    }
    host.write_registration(false)?;
    let samples = measure_worker(&heeler, &host, &clear_marker, runs)?;
    report(
        "(d) hook-worker: one notify delivery (loopback)",
        &samples,
        10.0,
        None,
    );
    wait_idle(&host);
    burst(&heeler, &host, BURST_PANES)?;
    let _ = std::fs::remove_dir_all(&host.root);
    Ok(())
}

//! The session hook worker end to end: the real binary against loopback
//! stand-ins for herdr's socket and the Push Relay. The hooks must give
//! herdr's command slot back at once, keep none of herdr's descriptors, and
//! still deliver every alert and Live Activity update exactly once, also
//! when a worker is killed.

use crate::support;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use heeler::base::json::Value;
use heeler::hooks::spool::Queue;
use heeler::wire::envelope::NotificationKey;
use heeler::wire::notification::Notification;
use support::*;

const LIVE_TOKEN: &str = "0123456789abcdef0123";
const TOKEN_A: &str = "aaaa0000aaaa0000";
const TOKEN_B: &str = "bbbb0000bbbb0000";

fn blocked_agents(panes: usize) -> String {
    let agents: Vec<String> = (1..=panes)
        .map(|i| {
            format!(
                r#"{{"pane_id":"w1:p{i}","workspace_id":"w1","agent":"claude","agent_status":"blocked","terminal_title_stripped":"task {i}"}}"#
            )
        })
        .collect();
    format!("[{}]", agents.join(","))
}

fn host(name: &str, panes: usize) -> Fixture {
    let f = Fixture::new(name);
    f.herdr.set_agents(&blocked_agents(panes));
    f.herdr
        .set_workspaces(r#"[{"workspace_id":"w1","number":1,"label":"Heeler"}]"#);
    f
}

/// The pids of the hook workers serving the fixture's plugin state dir
/// (read from `/proc`: their command line and environment).
fn worker_pids(state: &Path) -> Vec<u32> {
    let wanted = format!("HERDR_PLUGIN_STATE_DIR={}", state.display());
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if args.get(1) != Some(&&b"hook-worker"[..]) {
            return None;
        }
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        environ
            .split(|b| *b == 0)
            .any(|var| var == wanted.as_bytes())
            .then_some(pid)
    })
    .collect()
}

/// The descriptors a process holds, by number, with what they name.
fn fds_of(pid: u32) -> Vec<(String, PathBuf)> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            Some((
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_link(e.path()).ok()?,
            ))
        })
        .collect()
}

/// Waits until the worker `pid` holds its session's lock (`/proc/locks`
/// lists its `flock`; it takes none other while it waits).
fn wait_for_lock(pid: u32) {
    wait_for("the worker's lock", Duration::from_secs(10), || {
        std::fs::read_to_string("/proc/locks")
            .unwrap_or_default()
            .lines()
            .any(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                fields.get(1) == Some(&"FLOCK") && fields.get(4) == Some(&pid.to_string().as_str())
            })
    });
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn kill(pid: u32) {
    let status = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // Gone, or a zombie waiting for its reaper.
    wait_for("the killed worker", Duration::from_secs(10), || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |stat| stat.contains(") Z "))
    });
}

/// The alert pushes as (token, pane) pairs, opened with the device keys.
fn alerts(f: &Fixture) -> Vec<(String, String)> {
    f.relay
        .requests()
        .iter()
        .map(Recorded::json)
        .filter(|body| body.get("kind").is_none())
        .map(|body| {
            let token = body.get("token").unwrap().as_str().unwrap().to_owned();
            let key = if token == TOKEN_B { KEY_B } else { KEY_A };
            let key = NotificationKey::from_base64url(key).unwrap();
            let opened =
                Notification::open(&key, body.get("envelope").unwrap().as_str().unwrap()).unwrap();
            (token, opened.pane)
        })
        .collect()
}

fn live_activity_pushes(f: &Fixture) -> usize {
    f.relay
        .requests()
        .iter()
        .filter(|r| r.json().get("kind").and_then(Value::as_str) == Some("liveactivity"))
        .count()
}

fn marker_is_valid(f: &Fixture, pane: &str, status: &str) -> bool {
    let path = heeler::hooks::notify::marker_path(&f.state, pane);
    std::fs::read_to_string(path).ok().as_deref()
        == Some(format!(r#"{{"pane":"{pane}","last_notified_status":"{status}"}}"#).as_str())
}

#[test]
fn the_hook_returns_before_its_debounce_and_keeps_no_descriptor_of_herdr() {
    let f = host("slot", 1);
    f.write_settings(r#"{"debounce_ms":1500}"#);
    f.write_registration(&registration(&[entry(TOKEN_A, KEY_A, "")]));
    // As herdr might: the hook's stdout pipe is also open as descriptor 7,
    // not close-on-exec, so a child that keeps it holds the pipe open.
    let mut command = Command::new("sh");
    command
        .args(["-c", r#"exec "$0" notify-hook 7>&1"#])
        .arg(env!("CARGO_BIN_EXE_heeler"))
        .env_clear()
        .envs(f.env(&event("w1:p1", "blocked")))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut out = Vec::new();
    // EOF comes only when no process holds the pipe's write end.
    stdout.read_to_end(&mut out).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    assert!(
        f.relay.requests().is_empty(),
        "the hook waited for its debounce inside herdr's slot"
    );
    assert!(f.herdr.methods().is_empty(), "the re-check came early");

    // The worker waits for the debounce with nothing of herdr's open.
    let pids = worker_pids(&f.state);
    assert_eq!(pids.len(), 1, "one worker: {pids:?}");
    // The worker closes what it inherited first, then takes its lock.
    wait_for_lock(pids[0]);
    let fds = fds_of(pids[0]);
    for (_, target) in &fds {
        let text = target.display().to_string();
        assert!(
            text == "/dev/null" || text.starts_with(&f.root.display().to_string()),
            "the worker holds {text}: {fds:?}"
        );
    }
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pids[0])).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
    assert_eq!(fields[3], pids[0].to_string(), "its own session (setsid)");

    f.settle();
    assert_eq!(alerts(&f), [(TOKEN_A.to_owned(), "w1:p1".to_owned())]);
    assert_eq!(f.herdr.methods(), ["agent.get", "workspace.get"]);
    // The lock is released just before the worker's last look and exit.
    wait_for("the worker to exit", Duration::from_secs(10), || {
        worker_pids(&f.state).is_empty()
    });
}

#[test]
fn a_burst_of_100_panes_delivers_every_alert_and_one_live_activity_exactly_once() {
    const PANES: usize = 100;
    let f = host("burst", PANES);
    f.write_settings(r#"{"debounce_ms":400,"activity_debounce_ms":400}"#);
    f.write_registration(&registration(&[
        entry(
            TOKEN_A,
            KEY_A,
            &format!(r#""live_activity":{{"token":"{LIVE_TOKEN}","started_at":1}}"#),
        ),
        entry(TOKEN_B, KEY_B, ""),
    ]));
    // herdr runs at most 32 plugin commands at once.
    let mut running = std::collections::VecDeque::new();
    let mut slowest = Duration::ZERO;
    for i in 1..=PANES {
        for hook in ["notify-hook", "activity-hook"] {
            if running.len() == 32 {
                let (started, child): (Instant, std::process::Child) = running.pop_front().unwrap();
                let output = child.wait_with_output().unwrap();
                slowest = slowest.max(started.elapsed());
                assert!(output.status.success(), "{}", stderr(&output));
            }
            running.push_back((
                Instant::now(),
                f.spawn(hook, &event(&format!("w1:p{i}"), "blocked")),
            ));
        }
    }
    for (started, child) in running {
        let output = child.wait_with_output().unwrap();
        slowest = slowest.max(started.elapsed());
        assert!(output.status.success(), "{}", stderr(&output));
    }
    f.settle();

    let mut expected: Vec<(String, String)> = (1..=PANES)
        .flat_map(|i| [TOKEN_A, TOKEN_B].map(|token| (token.to_owned(), format!("w1:p{i}"))))
        .collect();
    expected.sort();
    let mut got = alerts(&f);
    got.sort();
    assert_eq!(got, expected, "every alert exactly once");
    assert_eq!(live_activity_pushes(&f), 1, "one Live Activity update");
    for i in 1..=PANES {
        assert!(marker_is_valid(&f, &format!("w1:p{i}"), "blocked"));
    }
    let mut calls: BTreeMap<String, usize> = BTreeMap::new();
    for method in f.herdr.methods() {
        *calls.entry(method).or_default() += 1;
    }
    let rechecks = calls.get("agent.get").copied().unwrap_or(0)
        + calls.get("agent.list").copied().unwrap_or(0);
    println!(
        "{PANES} panes: herdr calls {calls:?}, {} relay requests, slowest hook {slowest:?}",
        f.relay.requests().len()
    );
    assert!(rechecks < PANES, "the re-checks were batched: {calls:?}");
    assert_eq!(f.failure_text(), "");
}

#[test]
fn a_killed_worker_loses_at_most_the_event_in_hand_and_the_next_hook_serves_the_rest() {
    let f = host("kill", 4);
    f.write_settings(r#"{"debounce_ms":300}"#);
    let registration_text = registration(&[entry(TOKEN_A, KEY_A, r#""keep":[1]"#)]);
    f.write_registration(&registration_text);
    // The first push hangs, so the worker is killed in the middle of it.
    f.relay.script([Reply::Hang]);
    for pane in ["w1:p1", "w1:p2", "w1:p3"] {
        let output = hook_command("notify-hook", &f.env(&event(pane, "blocked")))
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    }
    wait_for("the first push", Duration::from_secs(20), || {
        !f.relay.requests().is_empty()
    });
    let pids = worker_pids(&f.state);
    assert_eq!(pids.len(), 1, "{pids:?}");
    kill(pids[0]);

    // The two events not yet in hand are still queued, nothing is torn.
    let queue = Queue::of(&f.state);
    assert_eq!(queue.list().len(), 2);
    assert!(queue.list().iter().all(|l| queue.read(l).is_some()));
    assert_eq!(f.registration(), registration_text);
    let notify_dir = f.state.join("notify");
    for entry in std::fs::read_dir(&notify_dir).into_iter().flatten() {
        let entry = entry.unwrap();
        let text = std::fs::read_to_string(entry.path()).unwrap();
        assert!(heeler::base::json::parse(&text).is_ok(), "{text}");
    }

    // The next hook's worker serves them with its own event.
    let output = f.run("notify-hook", &event("w1:p4", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    let mut panes: Vec<String> = alerts(&f).into_iter().map(|(_, pane)| pane).collect();
    panes.sort();
    assert_eq!(panes, ["w1:p1", "w1:p2", "w1:p3", "w1:p4"], "one push each");
    assert!(
        !marker_is_valid(&f, "w1:p1", "blocked"),
        "the event in hand"
    );
    for pane in ["w1:p2", "w1:p3", "w1:p4"] {
        assert!(marker_is_valid(&f, pane, "blocked"), "{pane}");
    }
    assert_eq!(f.registration(), registration_text);
}

#[test]
fn a_second_worker_finds_the_lock_held_and_exits() {
    let f = host("second", 1);
    f.write_settings(r#"{"debounce_ms":800}"#);
    f.write_registration(&registration(&[entry(TOKEN_A, KEY_A, "")]));
    let output = hook_command("notify-hook", &f.env(&event("w1:p1", "blocked")))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let pids = worker_pids(&f.state);
    assert_eq!(pids.len(), 1);
    wait_for_lock(pids[0]);
    let second = hook_command("hook-worker", &f.env("")).output().unwrap();
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(
        f.relay.requests().is_empty(),
        "the second worker served nothing"
    );
    f.settle();
    assert_eq!(alerts(&f).len(), 1);
}

#[test]
fn a_queue_never_serves_another_sessions_event() {
    let f = host("sessions", 1);
    f.write_registration(&registration(&[entry(TOKEN_A, KEY_A, "")]));
    // An entry naming the `work` session, put into the default session's
    // spool by hand (no hook would).
    let work_socket = f.root.join("herdr/sessions/work/herdr.sock");
    let entry = heeler::hooks::spool::Entry {
        due_ms: 0,
        origin: heeler::hooks::spool::Origin {
            config_dir: f.config.clone(),
            plugin_state_dir: f.state.clone(),
            socket: Some(work_socket),
            herdr_bin: PathBuf::from("/nonexistent/herdr"),
        },
        job: heeler::hooks::spool::Job::Notify {
            event: heeler::hooks::env::Event {
                pane: "w1:p1".into(),
                status: "blocked".into(),
                kind: None,
                workspace_id: None,
                title: None,
            },
            ts: 1,
            only: Vec::new(),
        },
    };
    let queue = Queue::of(&f.state);
    queue.enqueue(&entry).unwrap();
    let output = run_hook("hook-worker", &f.env(""));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(queue.list().is_empty());
    assert!(f.relay.requests().is_empty());
    assert!(f.herdr.methods().is_empty());
    let log = f.failure_text();
    assert!(
        log.starts_with("hook-worker: dropped ") && log.ends_with(": queued for another session\n"),
        "{log}"
    );
}

#[test]
fn two_hooks_for_the_same_pane_send_once() {
    let f = host("twice", 1);
    f.write_settings(r#"{"debounce_ms":300}"#);
    f.write_registration(&registration(&[entry(TOKEN_A, KEY_A, "")]));
    let children: Vec<_> = (0..2)
        .map(|_| f.spawn("notify-hook", &event("w1:p1", "blocked")))
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    }
    f.settle();
    assert_eq!(alerts(&f), [(TOKEN_A.to_owned(), "w1:p1".to_owned())]);
    assert!(marker_is_valid(&f, "w1:p1", "blocked"));
}

// ------------------------------------------------------------ rate limits

/// The stand-in's minute in the rate-limit tests: a relay second is 50 ms,
/// unless `HEELER_TEST_RELAY_MINUTE_MS` sets it (60000 measures the real
/// relay's timing, in minutes of wall time).
fn limited_minute() -> Duration {
    std::env::var("HEELER_TEST_RELAY_MINUTE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_millis(3_000), Duration::from_millis)
}

/// `d` in seconds of the relay minute `minute`.
fn relay_seconds(d: Duration, minute: Duration) -> f64 {
    d.as_secs_f64() * 60.0 / minute.as_secs_f64()
}

/// The most of `times` (sorted) in any span shorter than `window`: the
/// relay's fixed windows lie inside such spans.
fn busiest(times: &[Duration], window: Duration) -> usize {
    let mut best = 0;
    let mut start = 0;
    for end in 0..times.len() {
        while times[end] - times[start] >= window {
            start += 1;
        }
        best = best.max(end + 1 - start);
    }
    best
}

/// The accepted alerts heeler sent (after the first `skip` requests) as
/// (arrival on the stand-in's clock, pane), in arrival order.
fn accepted_alerts(f: &Fixture, skip: usize) -> Vec<(Duration, String)> {
    let key = NotificationKey::from_base64url(KEY_A).unwrap();
    f.relay
        .requests()
        .iter()
        .skip(skip)
        .filter(|r| r.status == 200 && r.json().get("kind").is_none())
        .map(|r| {
            let envelope = r
                .json()
                .get("envelope")
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned();
            (r.at, Notification::open(&key, &envelope).unwrap().pane)
        })
        .collect()
}

/// A Host of `panes` blocked agents in workspace w1 behind a relay
/// stand-in with the real relay's limits on a `minute`-long minute.
fn paced_host(name: &str, minute: Duration, panes: usize) -> Fixture {
    let f = Fixture::rate_limited(name, RateLimits::relay(minute));
    f.herdr.set_agents(&blocked_agents(panes));
    f.herdr
        .set_workspaces(r#"[{"workspace_id":"w1","number":1,"label":"Heeler"}]"#);
    f
}

/// Runs the notify hook for pane `w1:p<i>` turning Blocked, to its end.
fn block(f: &Fixture, i: usize) {
    let output = hook_command(
        "notify-hook",
        &f.env(&event(&format!("w1:p{i}"), "blocked")),
    )
    .output()
    .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
}

/// `count` agents block at once for one phone behind a relay with the
/// real relay's limits: every alert arrives, once, in the order of the
/// events, never more than 60 in a relay minute and none rejected.
/// Returns the relay seconds from the last event to the last alert.
fn blocked_burst_to_one_device(name: &str, count: usize) -> f64 {
    let minute = limited_minute();
    let f = paced_host(name, minute, count);
    f.write_registration(&registration(&[entry(TOKEN_A, KEY_A, "")]));
    // One event after the other, so that their order is known.
    for i in 1..=count {
        block(&f, i);
    }
    let last_event = f.relay.now();
    // Four relay minutes of pacing at most, whatever the minute's length.
    let limit = (minute * 5).max(Duration::from_secs(90));
    wait_idle(&session_state_dir(&f.env("")), limit).unwrap();

    let requests = f.relay.requests();
    let rejected = requests.iter().filter(|r| r.status == 429).count();
    let accepted = accepted_alerts(&f, 0);
    let panes: Vec<&str> = accepted.iter().map(|(_, pane)| pane.as_str()).collect();
    let expected: Vec<String> = (1..=count).map(|i| format!("w1:p{i}")).collect();
    assert_eq!(
        panes, expected,
        "every alert once, in the order of the events"
    );
    assert_eq!(rejected, 0, "the burst was spread, not rejected");
    let times: Vec<Duration> = accepted.iter().map(|(at, _)| *at).collect();
    let most = busiest(&times, minute);
    assert!(most <= 60, "{most} alerts in one relay minute");
    assert_eq!(f.failure_text(), "", "nothing lost, nothing failed");
    let last_alert = times.last().copied().unwrap();
    let late = relay_seconds(last_alert.saturating_sub(last_event), minute);
    let spread = relay_seconds(last_alert - times[0], minute);
    println!(
        "{count} Blocked alerts to one device: the last alert {late:.1} relay s after the last event \
         ({spread:.1} relay s after the first alert; busiest relay minute {most}; \
         relay minute = {} ms here)",
        minute.as_millis()
    );
    late
}

#[test]
fn seventy_blocked_alerts_to_one_device_are_paced_and_all_delivered_in_order() {
    blocked_burst_to_one_device("burst70", 70);
}

#[test]
fn two_hundred_blocked_alerts_to_one_device_are_paced_and_all_delivered_in_order() {
    blocked_burst_to_one_device("burst200", 200);
}

/// A worker exits a moment after its last event; the next hook's worker
/// paces on from what the last one sent, since the relay's window outlives
/// both. 60 alerts fill one device's relay minute, the worker exits, and
/// the 61st waits for the next window instead of drawing a 429.
#[test]
fn a_new_worker_paces_on_from_the_alerts_the_last_one_sent() {
    // A longer minute: the first 60 and the worker's exit fit in its first
    // window on a loaded machine too.
    let minute = Duration::from_millis(6_000);
    let f = paced_host("restart", minute, 61);
    f.write_registration(&registration(&[entry(TOKEN_A, KEY_A, "")]));
    let state_dir = session_state_dir(&f.env(""));
    for i in 1..=60 {
        block(&f, i);
    }
    let limit = (minute * 5).max(Duration::from_secs(90));
    wait_idle(&state_dir, limit).unwrap();
    assert_eq!(accepted_alerts(&f, 0).len(), 60, "the first worker sent 60");
    let exited = f.relay.now();
    block(&f, 61);
    wait_idle(&state_dir, limit).unwrap();

    let requests = f.relay.requests();
    let statuses: Vec<u16> = requests.iter().map(|r| r.status).collect();
    assert!(
        statuses.iter().all(|s| *s == 200),
        "none rejected: {statuses:?}"
    );
    let accepted = accepted_alerts(&f, 0);
    let panes: Vec<&str> = accepted.iter().map(|(_, pane)| pane.as_str()).collect();
    let expected: Vec<String> = (1..=61).map(|i| format!("w1:p{i}")).collect();
    assert_eq!(panes, expected, "every alert once, in order");
    let times: Vec<Duration> = accepted.iter().map(|(at, _)| *at).collect();
    assert!(busiest(&times, minute) <= 60, "the device's limit held");
    println!(
        "a new worker {:.1} relay s into the window sent the 61st alert {:.1} relay s after the first",
        relay_seconds(exited, minute),
        relay_seconds(times[60] - times[0], minute)
    );
}

/// POSTs an alert body for `token` to the stand-in, as another Host of
/// the same phone would: it spends the token's budget.
fn spend(url: &str, token: &str) -> u16 {
    use std::io::Write;
    let address = url.strip_prefix("http://").unwrap();
    let body = format!(r#"{{"token":"{token}","env":"production","envelope":"x"}}"#);
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST /push HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap()
}

#[test]
fn a_429_puts_the_alerts_back_until_retry_after_while_the_live_activity_goes_on() {
    // A longer minute: the whole test happens inside the first window.
    let minute = Duration::from_millis(6_000);
    let f = paced_host("limited", minute, 3);
    f.write_registration(&registration(&[entry(
        TOKEN_A,
        KEY_A,
        &format!(r#""live_activity":{{"token":"{LIVE_TOKEN}","started_at":1}}"#),
    )]));
    // The phone's other Host spent this window's budget of the token.
    for _ in 0..60 {
        assert_eq!(spend(&f.relay.url, TOKEN_A), 200);
    }
    let spent = f.relay.requests().len();
    for i in 1..=3 {
        block(&f, i);
    }
    let output = hook_command("activity-hook", &f.env(&event("w1:p3", "blocked")))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    f.settle();

    let ours: Vec<Recorded> = f.relay.requests().split_off(spent);
    let rejected: Vec<&Recorded> = ours.iter().filter(|r| r.status == 429).collect();
    assert_eq!(
        rejected.len(),
        1,
        "one 429, then the alerts wait instead of spending the address budget: {:?}",
        ours.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    let retry_after: u64 = {
        // The stand-in's answer: the seconds left in its window, 40 to 60.
        let at = relay_seconds(rejected[0].at, minute);
        (60.0 - at).ceil().clamp(40.0, 60.0) as u64
    };
    let accepted = accepted_alerts(&f, spent);
    let panes: Vec<&str> = accepted.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(
        panes,
        ["w1:p1", "w1:p2", "w1:p3"],
        "all delivered, in order, once"
    );
    let waited = relay_seconds(accepted[0].0 - rejected[0].at, minute);
    assert!(
        waited >= retry_after as f64 - 0.5,
        "the alert waited {waited:.1} relay s of the {retry_after} asked"
    );
    let live: Vec<&Recorded> = ours
        .iter()
        .filter(|r| r.json().get("kind").and_then(Value::as_str) == Some("liveactivity"))
        .collect();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].status, 200);
    assert!(
        live[0].at < accepted[0].0,
        "the Live Activity update did not wait for the alerts"
    );
    assert_eq!(
        f.failure_text(),
        "",
        "a 429 is not a failure: nothing is lost"
    );
    println!(
        "a 429 asked {retry_after} relay s; the first alert was re-sent {waited:.1} relay s later"
    );
}

#[test]
fn a_queue_of_alerts_to_two_phones_never_holds_back_the_live_activity() {
    // 100 agents block for two phones: 200 alerts, more than the 120 a
    // minute the relay takes from one address. Then the Live Activity
    // changes: its update goes out at once, inside the address budget the
    // alerts leave it.
    const PANES: usize = 100;
    let minute = limited_minute();
    let f = paced_host("starve", minute, PANES);
    f.write_registration(&registration(&[
        entry(
            TOKEN_A,
            KEY_A,
            &format!(r#""live_activity":{{"token":"{LIVE_TOKEN}","started_at":1}}"#),
        ),
        entry(TOKEN_B, KEY_B, ""),
    ]));
    for i in 1..=PANES {
        block(&f, i);
    }
    let output = hook_command("activity-hook", &f.env(&event("w1:p100", "blocked")))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let limit = (minute * 5).max(Duration::from_secs(90));
    wait_idle(&session_state_dir(&f.env("")), limit).unwrap();

    let requests = f.relay.requests();
    let statuses: Vec<u16> = requests.iter().map(|r| r.status).collect();
    assert!(
        statuses.iter().all(|s| *s == 200),
        "none rejected: {statuses:?}"
    );
    let all: Vec<Duration> = requests.iter().map(|r| r.at).collect();
    assert!(busiest(&all, minute) <= 120, "the address budget held");
    let expected: Vec<String> = (1..=PANES).map(|i| format!("w1:p{i}")).collect();
    let alerts = alerts(&f);
    for token in [TOKEN_A, TOKEN_B] {
        let panes: Vec<String> = alerts
            .iter()
            .filter(|(t, _)| t == token)
            .map(|(_, pane)| pane.clone())
            .collect();
        assert_eq!(panes, expected, "{token}: every alert once, in order");
        let times: Vec<Duration> = requests
            .iter()
            .filter(|r| r.json().get("token").and_then(Value::as_str) == Some(token))
            .map(|r| r.at)
            .collect();
        assert!(busiest(&times, minute) <= 60, "{token} over its limit");
    }
    let live: Vec<&Recorded> = requests
        .iter()
        .filter(|r| r.json().get("kind").and_then(Value::as_str) == Some("liveactivity"))
        .collect();
    assert_eq!(live.len(), 1, "one Live Activity update");
    let last_alert = requests
        .iter()
        .filter(|r| r.json().get("kind").is_none())
        .map(|r| r.at)
        .max()
        .unwrap();
    let behind = requests
        .iter()
        .filter(|r| r.json().get("kind").is_none() && r.at > live[0].at)
        .count();
    assert!(
        live[0].at < last_alert,
        "the update did not wait for the queue of alerts"
    );
    assert_eq!(f.failure_text(), "");
    println!(
        "two phones, {PANES} agents: the Live Activity update went out ahead of {behind} queued alerts"
    );
}

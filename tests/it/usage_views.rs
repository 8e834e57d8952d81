//! The views for people on real caches: the usage fixture's known totals
//! rendered at 80 and 160 columns (tables written by hand from the
//! fixture's records and the bundled per-token prices), and the real
//! binary on a scratch home (the empty-home line, a JSON document).

use crate::usage_fixture;

use std::path::Path;
use std::process::Command;

use heeler::base::json::{self, Value};
use heeler::base::tz::Zone;
use heeler::usage::aggregate::incremental::State;
use heeler::usage::cache::Index;
use heeler::usage::pricing::PriceTable;
use heeler::usage::time::parse_date;
use heeler::usage::views::data::{Data, Request};
use heeler::usage::views::picture::Glyphs;
use heeler::usage::views::render::{self, Format, View};
use heeler::usage::views::table::Style;
use heeler::usage::worker::{self, Roots};
use usage_fixture::*;

/// A scratch directory removed on drop (also when a test panics).
struct Scratch(TempDir);

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch(temp_dir(name))
    }
}

fn fixture_data(home: &Path) -> Data {
    write_tree(home);
    let roots = Roots::resolve(home, &|_| None);
    let prices = PriceTable::bundled().unwrap();
    let mut index = Index::default();
    let result = worker::scan(&mut index, &roots, &prices, NOW, None);
    let state = State::full(&index, &prices, worker::window_start(NOW));
    // Per session: every view reads those (the session view needs them).
    Data {
        slots: state.detailed.sessions.into_iter().collect(),
        zone: Zone::utc(),
        now: NOW,
        generated_at: Some(NOW),
        refresh: "idle",
        coverage: result.snapshot.coverage,
        limits: Vec::new(),
    }
}

fn daily(data: &Data, width: usize) -> Vec<String> {
    let today = parse_date("2026-11-29").unwrap();
    let req = Request::new(
        Some("2026-11-21"),
        Some("2026-11-26"),
        Some("claude"),
        None,
        false,
        today,
    )
    .unwrap();
    let style = Style {
        width,
        color: false,
        glyphs: Glyphs::Unicode,
    };
    render::render(data, &req, View::Period(render_day()), Format::Text(style))
        .lines()
        .map(str::to_string)
        .collect()
}

fn render_day() -> heeler::usage::views::data::Period {
    heeler::usage::views::data::Period::Day
}

/// msg_b1 (2026-11-21, Opus 4.6: 1,000 input at $5/M, 100 output at
/// $25/M, 5,000 1-hour cache writes at $10/M: $0.0575) and msg_c1
/// (2026-11-26, an unknown model: 10 tokens, unpriced: no cost shown,
/// the total marked as partial, the model named).
#[test]
fn fixture_daily_at_160_and_80_columns() {
    let home = Scratch::new("views-fixture");
    let data = fixture_data(&home.0);
    let title = "Daily usage, 2026-11-21 to 2026-11-26 (UTC), claude only; as of 12:00";
    let note = "No price for claude-unreleased-9: 1 request (10 tokens) is not in the costs.";
    assert_eq!(
        daily(&data, 160),
        [
            title.to_string(),
            "Date        Models               Input  Output  Cache write  Cache read  Total    Cost"
                .into(),
            // The day with a cost fills its bar; the unpriced day has none.
            format!(
                "2026-11-21  claude-opus-4-6      1,000     100        5,000           0  6,100   $0.06  {}",
                "█".repeat(10)
            ),
            format!(
                "2026-11-26  claude-unreleased-9      5       5            0           0     10       —  {}",
                "░".repeat(10)
            ),
            "─".repeat(98),
            "Total                            1,005     105        5,000           0  6,110  $0.06+"
                .into(),
            note.into(),
        ]
    );
    assert_eq!(
        daily(&data, 80),
        [
            title.to_string(),
            "Date        Models               Input  Output  Cache read  Total    Cost".into(),
            "2026-11-21  claude-opus-4-6      1,000     100           0  6,100   $0.06".into(),
            "2026-11-26  claude-unreleased-9      5       5           0     10       —".into(),
            "─".repeat(73),
            "Total                            1,005     105           0  6,110  $0.06+".into(),
            "Hidden to fit 80 columns: Cache write, Cost bar.".into(),
            note.into(),
        ]
    );
}

/// Every Claude record of the fixture names session `s`: one row of its
/// six requests over 30 days, in the fixture's three directories; each
/// Codex rollout is a row of its own thread, and the rows add up to the
/// model view's totals.
#[test]
fn fixture_sessions_are_claude_session_ids_and_codex_threads() {
    let home = Scratch::new("views-fixture-sessions");
    let data = fixture_data(&home.0);
    let today = parse_date("2026-11-29").unwrap();
    let req = Request::new(None, None, None, None, false, today).unwrap();
    let doc = |view| json::parse(render::render(&data, &req, view, Format::Json).trim_end());
    let sessions = doc(View::Session).unwrap();
    let rows = sessions.get("rows").and_then(Value::as_array).unwrap();
    let of = |agent: &str| -> Vec<&Value> {
        rows.iter()
            .filter(|r| r.get("agent").and_then(Value::as_str) == Some(agent))
            .collect()
    };
    let requests = |r: &Value| {
        r.get("totals")
            .and_then(|t| t.get("requests"))
            .and_then(Value::as_i64)
    };
    let claude = of("claude");
    assert_eq!(claude.len(), 1);
    assert_eq!(claude[0].get("session").and_then(Value::as_str), Some("s"));
    assert_eq!(requests(claude[0]), Some(6));
    let mut dirs: Vec<&str> = claude[0]
        .get("directories")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    dirs.sort();
    assert_eq!(
        dirs,
        ["/home/dev/alpha", "/home/dev/beta", "/home/dev/gamma"]
    );
    let codex = of("codex");
    let mut threads: Vec<&str> = codex
        .iter()
        .map(|r| r.get("session").and_then(Value::as_str).unwrap())
        .collect();
    threads.sort();
    threads.dedup();
    assert!(!codex.is_empty());
    assert_eq!(threads.len(), codex.len(), "one row per thread");
    let models = doc(View::Models).unwrap();
    assert_eq!(sessions.get("totals"), models.get("totals"));
}

/// The fixture's Claude totals over 30 days (tests/it/usage.rs counts them:
/// six requests, 218 output tokens) come out of the JSON document too.
#[test]
fn fixture_models_document_sums_to_the_known_totals() {
    let home = Scratch::new("views-fixture-json");
    let data = fixture_data(&home.0);
    let today = parse_date("2026-11-29").unwrap();
    let req = Request::new(None, None, Some("claude"), None, false, today).unwrap();
    let doc =
        json::parse(render::render(&data, &req, View::Models, Format::Json).trim_end()).unwrap();
    let totals = doc.get("totals").unwrap();
    assert_eq!(totals.get("requests").and_then(Value::as_i64), Some(6));
    assert_eq!(
        totals.get("output").and_then(Value::as_i64),
        Some(50 + 20 + 3 + 40 + 100 + 5)
    );
    assert_eq!(
        totals.get("cache_write_1h").and_then(Value::as_i64),
        Some(200 + 5000)
    );
}

/// Runs the built binary with `args` in the home `home` (a clean
/// environment, UTC), for the usage tests' views.
pub(crate) fn heeler(home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_heeler"))
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("TZ", "UTC")
        .output()
        .unwrap()
}

/// Waits for a background worker a view started to finish, so the
/// scratch home can be removed.
pub(crate) fn settle(home: &Path) {
    let dir = heeler::usage::paths::UsageDir(home.join(".local/state/herdr/plugins/heeler/usage"));
    for _ in 0..200 {
        if !worker::is_running(&dir) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Where each agent keeps its transcripts by default, below the home.
const DEFAULT_ROOTS: &[&str] = &[
    ".claude",
    ".codex",
    ".pi/agent",
    ".gemini",
    ".qwen",
    ".local/share/amp",
    ".factory",
    ".kimi",
    ".copilot",
    ".cline/data/sessions",
    ".local/share/opencode",
    ".local/share/kilo",
    ".local/share/devin/cli",
    ".hermes",
];

#[test]
fn an_empty_home_names_the_roots_searched() {
    let home = Scratch::new("views-empty");
    let worker = heeler(&home.0, &["usage", "worker"]);
    assert!(worker.status.success(), "{worker:?}");
    let out = heeler(&home.0, &["usage"]);
    settle(&home.0);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("No transcripts found. Searched "), "{text}");
    // Each agent's default place, as its own docs (and issue 43's table)
    // give it, is named.
    for root in DEFAULT_ROOTS {
        let path = home.0.join(root).display().to_string();
        assert!(text.contains(&path), "{root} is not named: {text}");
    }
    assert!(
        text.contains("Set CLAUDE_CONFIG_DIR, CODEX_HOME, PI_CODING_AGENT_DIR,")
            && text.contains(" to point at others"),
        "{text}"
    );
    assert!(!text.contains('\x1b'), "no colour off a terminal: {text:?}");
}

#[test]
fn the_binary_prints_a_view_document_and_rejects_bad_options() {
    let home = Scratch::new("views-binary");
    // Two requests an hour ago, whatever the clock says.
    let now = heeler::base::clock::unix_seconds();
    let lines: String = (0..2)
        .map(|i| {
            Claude {
                at: now - 3600 + i * 60,
                msg: ["m1", "m2"][i as usize],
                req: ["r1", "r2"][i as usize],
                output: 7,
                ..Claude::default()
            }
            .line()
                + "\n"
        })
        .collect();
    write(
        &home.0.join(".claude/projects/-home-dev-alpha/s.jsonl"),
        &lines,
    );
    assert!(heeler(&home.0, &["usage", "worker"]).status.success());
    let out = heeler(&home.0, &["usage", "daily", "--json", "--agent", "claude"]);
    settle(&home.0);
    assert!(out.status.success(), "{out:?}");
    let doc = json::parse(String::from_utf8(out.stdout).unwrap().trim_end()).unwrap();
    assert_eq!(doc.get("view").and_then(Value::as_str), Some("daily"));
    let totals = doc.get("totals").unwrap();
    assert_eq!(totals.get("requests").and_then(Value::as_i64), Some(2));
    assert_eq!(totals.get("output").and_then(Value::as_i64), Some(14));
    // The statusline reads recent-v1.json; without it, the whole state:
    // the same line either way.
    let recent = home
        .0
        .join(".local/state/herdr/plugins/heeler/usage/recent-v1.json");
    assert!(recent.exists());
    let fast = heeler(&home.0, &["usage", "statusline"]);
    settle(&home.0);
    std::fs::remove_file(&recent).unwrap();
    let slow = heeler(&home.0, &["usage", "statusline"]);
    settle(&home.0);
    assert_eq!(
        String::from_utf8_lossy(&fast.stdout),
        String::from_utf8_lossy(&slow.stdout)
    );
    assert!(String::from_utf8_lossy(&fast.stdout).contains(" today"));
    let bad = heeler(&home.0, &["usage", "daily", "--since", "someday"]);
    settle(&home.0);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--since"));
    let bad = heeler(&home.0, &["usage", "blocks", "--tz", "Nowhere/Zone"]);
    settle(&home.0);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a time zone on this Host"));
    // ccusage's `--timezone` is `--tz`.
    let bad = heeler(&home.0, &["usage", "blocks", "--timezone", "Nowhere/Zone"]);
    settle(&home.0);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a time zone on this Host"));
    // Piped, `COLUMNS` sets the width: at 60 the session table hides
    // columns and says so, and no line is wider; without it, 100.
    let at = |columns: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_heeler"));
        command
            .args(["usage", "session", "--timezone", "UTC"])
            .env_clear()
            .env("HOME", &home.0)
            .env("PATH", "/usr/bin:/bin");
        if let Some(c) = columns {
            command.env("COLUMNS", c);
        }
        let out = command.output().unwrap();
        settle(&home.0);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let narrow = at(Some("60"));
    assert!(narrow.contains("Hidden to fit 60 columns"), "{narrow}");
    // The title names the dates and is not fitted; every other line is.
    for line in narrow.lines().skip(1) {
        assert!(line.chars().count() <= 60, "{line:?} in\n{narrow}");
    }
    let default = at(None);
    assert!(!default.contains("Hidden to fit 60"), "{default}");
    assert!(default.lines().skip(1).all(|l| l.chars().count() <= 100));
}

/// Writes one Claude record `days` days before the fixture's now, in a
/// file last written then.
fn old_session(home: &Path, days: i64, msg: &str, output: u64) {
    let at = NOW - days * DAY;
    let path = home.join(format!(".claude/projects/-home-dev-old/{msg}.jsonl"));
    let line = Claude {
        at,
        msg,
        req: msg,
        cwd: "/home/dev/old",
        output,
        ..Claude::default()
    }
    .line();
    write(&path, &(line + "\n"));
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs((at + 60) as u64);
    std::fs::File::options()
        .append(true)
        .open(&path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

/// The fixture scanned keeping `retention` days: the snapshot (what the
/// app's query reads) and the whole aggregate.
fn scan_keeping(home: &Path, retention: i64) -> (worker::ScanResult, State) {
    let roots = Roots::resolve(home, &|_| None);
    let prices = PriceTable::bundled().unwrap();
    let mut index = Index::default();
    let mut state = None;
    let options = worker::ScanOptions {
        threads: 2,
        retention_days: retention,
        ..worker::ScanOptions::new(&prices, NOW)
    };
    let result = worker::scan_with_state(
        &mut index,
        &mut state,
        &roots,
        worker::discover(&roots),
        &options,
    );
    (result, state.unwrap())
}

/// Records 45 and 100 days old: 90 days of history keep the first, not
/// the second; the app's query answers exactly what a 30-day cache gives.
#[test]
fn ninety_days_of_history_show_45_days_back_and_leave_the_query_as_it_was() {
    let home = Scratch::new("views-history");
    write_tree(&home.0);
    old_session(&home.0, 45, "msg_45", 45);
    old_session(&home.0, 100, "msg_100", 100);
    let (window, window_state) = scan_keeping(&home.0, 30);
    let (kept, kept_state) = scan_keeping(&home.0, 90);
    // The snapshot and the query's token members are the 30-day ones.
    let mut snapshot = kept.snapshot.clone();
    snapshot.aggregate = window.snapshot.aggregate;
    assert_eq!(snapshot, window.snapshot);
    let parts = |state: &State| {
        let slots = heeler::usage::aggregate::flatten(&state.detailed).slots;
        heeler::usage::report::token_parts(&slots, &Zone::utc(), NOW)
    };
    assert_eq!(parts(&kept_state), parts(&window_state));
    // The views read the whole history.
    let data = Data {
        slots: kept_state.detailed.sessions.into_iter().collect(),
        zone: Zone::utc(),
        now: NOW,
        generated_at: Some(NOW),
        refresh: "idle",
        coverage: kept.snapshot.coverage,
        limits: Vec::new(),
    };
    let today = parse_date("2026-11-29").unwrap();
    // 90 days up to 2026-11-29 start on 2026-09-01.
    let req = Request::new(
        Some("2026-09-01"),
        None,
        None,
        Some("/home/dev/old"),
        false,
        today,
    )
    .unwrap();
    assert_eq!(req.check_history(90, today), Ok(()));
    let doc = json::parse(
        render::render(&data, &req, View::Period(render_day()), Format::Json).trim_end(),
    )
    .unwrap();
    let rows: Vec<(String, i64)> = doc
        .get("rows")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.get("period").and_then(Value::as_str).unwrap().to_string(),
                r.get("totals")
                    .and_then(|t| t.get("output"))
                    .and_then(Value::as_i64)
                    .unwrap(),
            )
        })
        .collect();
    // 2026-11-29 minus 45 days.
    assert_eq!(rows, [("2026-10-15".to_string(), 45)]);
    // 100 days back is before the history: a clear refusal, not an
    // empty table.
    let old = Request::new(Some("2026-08-21"), None, None, None, false, today).unwrap();
    let refused = old.check_history(90, today).unwrap_err().0;
    assert!(
        refused.starts_with(
            "--since 2026-08-21 is before the history kept (90 days, from 2026-09-01)"
        ),
        "{refused}"
    );
    // Even asked for, the 100-day record is not kept.
    assert!(
        data.slots.iter().all(|(key, _)| key.0 >= NOW - 92 * DAY),
        "nothing older than the history"
    );
}

#[test]
fn the_binary_refuses_a_since_before_the_history_and_a_bad_usage_toml() {
    let home = Scratch::new("views-history-binary");
    let config = home.0.join(".config/herdr/plugins/config/heeler");
    assert!(heeler(&home.0, &["usage", "worker"]).status.success());
    let bad = heeler(&home.0, &["usage", "daily", "--since", "2000-01-01"]);
    settle(&home.0);
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("--since 2000-01-01 is before the history kept (90 days, from ")
            && stderr.contains("set retention_days in usage.toml (up to 365)"),
        "{stderr}"
    );
    write(&config.join("usage.toml"), "retention_days = 400\n");
    let bad = heeler(&home.0, &["usage", "daily"]);
    settle(&home.0);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains(
            "usage.toml: retention_days must be a whole number of days from 30 to 365, not 400"
        ),
        "{bad:?}"
    );
}

/// The app's document is summed per (slot, agent, model, directory) as it
/// always was: the state's slots are its per-session sums with every
/// session merged away, and the document's token members from the state
/// are byte-identical to those from those merged sums, for the
/// fixture's Claude and Codex files and a second session in one of its
/// slots (`tests/it/usage.rs` checks the whole
/// document against the app's vector).
#[test]
fn the_app_document_does_not_depend_on_sessions() {
    use heeler::usage::aggregate::{Detailed, SlotAcc, flatten};
    let home = Scratch::new("views-fixture-v1");
    write_tree(&home.0);
    // A parallel session beside msg_a1: its slot, model and directory.
    let parallel = Claude {
        at: NOW - 2 * HOUR + 300,
        msg: "msg_p1",
        req: "req_p1",
        input: 3,
        read: 700,
        ..Claude::default()
    }
    .line()
    .replace(r#""sessionId":"s""#, r#""sessionId":"s9""#);
    write(
        &home.0.join(".claude/projects/-home-dev-alpha/s9.jsonl"),
        &lines(&[parallel]),
    );
    let roots = Roots::resolve(&home.0, &|_| None);
    let prices = PriceTable::bundled().unwrap();
    let mut index = Index::default();
    worker::scan(&mut index, &roots, &prices, NOW, None);
    let state = State::full(&index, &prices, worker::window_start(NOW));
    let sessions: std::collections::BTreeSet<_> = state
        .detailed
        .sessions
        .keys()
        .map(|k| k.4.clone())
        .collect();
    assert!(sessions.len() > 2, "{sessions:?}");
    let mut merged = Detailed::default();
    for (k, acc) in &state.detailed.sessions {
        let key = (k.0, k.1, k.2.clone(), k.3.clone(), "".into());
        merged
            .slots
            .entry(key)
            .or_insert_with(SlotAcc::default)
            .merge(acc);
    }
    assert!(merged.slots.len() < state.detailed.sessions.len());
    assert_eq!(merged.slots, state.detailed.slots);
    let parts = |d: &Detailed| {
        let slots = flatten(d).slots;
        Value::Object(heeler::usage::report::token_parts(
            &slots,
            &Zone::utc(),
            NOW,
        ))
        .to_json()
    };
    assert_eq!(parts(&state.detailed), parts(&merged));
}

/// Claude Code runs the statusline with its session object on stdin: the
/// line then starts with the session's cost (`cost.total_cost_usd`); an
/// empty stdin, text that is not the object, and a pipe nobody writes to
/// or closes all give the line without it, the last within the read's
/// bound (the child is waited for, so a read without a bound would hang
/// the test, not pass it).
#[test]
fn the_statusline_shows_claude_code_s_session_cost_from_stdin() {
    use std::io::Write;
    use std::process::Stdio;
    let home = Scratch::new("views-statusline-stdin");
    let now = heeler::base::clock::unix_seconds();
    write(
        &home.0.join(".claude/projects/-home-dev-alpha/s.jsonl"),
        &(Claude {
            at: now - 60,
            ..Claude::default()
        }
        .line()
            + "\n"),
    );
    assert!(heeler(&home.0, &["usage", "worker"]).status.success());
    let run = |stdin: Option<&[u8]>| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_heeler"))
            .args(["usage", "statusline"])
            .env_clear()
            .env("HOME", &home.0)
            .env("PATH", "/usr/bin:/bin")
            .env("TZ", "UTC")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = child.stdin.take().unwrap();
        if let Some(bytes) = stdin {
            pipe.write_all(bytes).unwrap();
            drop(pipe);
            let out = child.wait_with_output().unwrap();
            settle(&home.0);
            return String::from_utf8(out.stdout).unwrap();
        }
        // Kept open and silent until the child has answered.
        let out = child.wait_with_output().unwrap();
        drop(pipe);
        settle(&home.0);
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = run(Some(b""));
    assert!(plain.contains(" today"), "{plain}");
    let object = br#"{"session_id":"abc123","model":{"id":"claude-opus-4-1","display_name":"Opus"},"cost":{"total_cost_usd":0.4219,"total_duration_ms":45000}}"#;
    assert_eq!(run(Some(object)), format!("$0.42 session · {plain}"));
    assert_eq!(run(Some(b"hello")), plain);
    assert_eq!(run(None), plain);
}

/// Off a terminal the summary and `daily` draw their pictures in block
/// characters on a UTF-8 locale and in ASCII under `NO_COLOR` or the C
/// locale; JSON and CSV have none.
#[test]
fn pictures_follow_the_locale_and_no_color_and_stay_out_of_json_and_csv() {
    let home = Scratch::new("views-pictures");
    let now = heeler::base::clock::unix_seconds();
    write(
        &home.0.join(".claude/projects/-home-dev-alpha/s.jsonl"),
        &(Claude {
            at: now - 60,
            output: 40_000,
            ..Claude::default()
        }
        .line()
            + "\n"),
    );
    assert!(heeler(&home.0, &["usage", "worker"]).status.success());
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let out = Command::new(env!("CARGO_BIN_EXE_heeler"))
            .args(args)
            .env_clear()
            .env("HOME", &home.0)
            .env("PATH", "/usr/bin:/bin")
            .env("TZ", "UTC")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        settle(&home.0);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let blocks = |t: &str| t.contains('█');
    // One request of $1.00 (40,000 output tokens at $25/M): the day's bar
    // is full, the sparkline's last day the tallest.
    let utf8 = [("LANG", "C.UTF-8")];
    let summary = run(&["usage"], &utf8);
    assert!(summary.contains("Cost, 30 days  "), "{summary}");
    assert!(blocks(&summary), "{summary}");
    let daily = run(&["usage", "daily"], &utf8);
    assert!(
        daily.contains(&format!("$1.00  {}", "█".repeat(10))),
        "{daily}"
    );
    for env in [
        &[("LANG", "C.UTF-8"), ("NO_COLOR", "1")][..],
        &[("LANG", "C")],
    ] {
        let daily = run(&["usage", "daily"], env);
        assert!(
            daily.contains(&format!("$1.00  {}", "#".repeat(10))),
            "{daily}"
        );
        assert!(!blocks(&daily) && !blocks(&run(&["usage"], env)), "{daily}");
    }
    for args in [
        &["usage", "--json"][..],
        &["usage", "daily", "--json"],
        &["usage", "daily", "--csv"],
    ] {
        let text = run(args, &utf8);
        assert!(!blocks(&text) && !text.contains("##"), "{text}");
    }
}

/// pi session lines as pi's `SessionManager` writes them (badlogic/pi-mono,
/// `packages/coding-agent/src/core/session-manager.ts`: a `SessionHeader`
/// first, then `SessionMessageEntry`s; the message an `AssistantMessage`
/// of `packages/ai/src/types.ts` with its `Usage`).
fn pi_header(id: &str, at: i64, parent: &str) -> String {
    let parent = match parent {
        "" => String::new(),
        p => format!(r#","parentSession":"{p}""#),
    };
    format!(
        r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{}","cwd":"/home/dev/pi-proj"{parent}}}"#,
        ts(at)
    )
}

fn pi_assistant(id: &str, at: i64, model: &str, [input, output, read, write]: [u64; 4]) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":null,"timestamp":"{}","message":{{"role":"assistant","content":[{{"type":"text","text":"done"}}],"api":"anthropic-messages","provider":"anthropic","model":"{model}","usage":{{"input":{input},"output":{output},"cacheRead":{read},"cacheWrite":{write},"totalTokens":{},"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":{}}}}}"#,
        ts(at),
        input + output + read + write,
        at * 1000
    )
}

#[test]
fn pi_sessions_show_in_the_views_priced_and_stay_out_of_the_app_s_query() {
    let home = Scratch::new("views-pi");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let start = now - 2 * 3_600;
    let sessions = home.0.join(".pi/agent/sessions/--home-dev-pi-proj--");
    let sonnet = [1_000, 2_000, 10_000, 4_000];
    write(
        &sessions.join("a_s1.jsonl"),
        &lines(&[
            pi_header("s1", start, ""),
            pi_assistant("a1", start + 60, "claude-sonnet-4-5", sonnet),
            pi_assistant("a2", start + 120, "gpt-5", [2_000, 500, 0, 0]),
            pi_assistant("a3", start + 180, "pi-mystery-1", [100, 10, 0, 0]),
        ]),
    );
    // A fork of s1 (`forkFrom`): its header names the parent, then the
    // parent's `a1` as it was, then its own response.
    write(
        &sessions.join("b_s2.jsonl"),
        &lines(&[
            pi_header("s2", start + 600, "/home/dev/.pi/agent/sessions/a_s1.jsonl"),
            pi_assistant("a1", start + 60, "claude-sonnet-4-5", sonnet),
            pi_assistant("b1", start + 660, "gpt-5", [300, 100, 0, 0]),
        ]),
    );
    let worker = heeler(&home.0, &["usage", "worker"]);
    assert!(worker.status.success(), "{worker:?}");
    let out = heeler(&home.0, &["usage", "models", "--agent", "pi", "--json"]);
    settle(&home.0);
    assert!(out.status.success(), "{out:?}");
    let doc = json::parse(String::from_utf8(out.stdout).unwrap().trim_end()).unwrap();
    let totals = doc.get("totals").unwrap();
    let int = |k: &str| totals.get(k).and_then(Value::as_i64);
    // By hand: four responses (the fork's copy of a1 is s1's), input
    // 1,000 + 2,000 + 100 + 300, output 2,000 + 500 + 10 + 100.
    assert_eq!(int("requests"), Some(4));
    assert_eq!(int("input"), Some(3_400));
    assert_eq!(int("output"), Some(2_610));
    assert_eq!(int("cache_read"), Some(10_000));
    assert_eq!(int("cache_write_5m"), Some(4_000));
    // The bundled table's rates per token: Sonnet 4.5 input $3e-6, output
    // $15e-6, cache reads $0.3e-6, 5-minute writes $3.75e-6 (0.003 + 0.03
    // + 0.003 + 0.015 = 0.051); GPT-5 input $1.25e-6, output $10e-6
    // (0.0025 + 0.005 = 0.0075, and 0.000375 + 0.001 = 0.001375).
    let cost = totals.get("cost_usd").and_then(Value::as_f64).unwrap();
    assert!((cost - 0.059_875).abs() < 1e-9, "{cost}");
    assert_eq!(int("unpriced_requests"), Some(1));
    let unpriced = doc.get("unpriced_models").unwrap().to_json();
    assert!(
        unpriced.contains(r#""agent":"pi","model":"pi-mystery-1""#),
        "{unpriced}"
    );

    // The views' coverage names pi, where it was read and what it read;
    // the app's agents stay first, as the app's document has them.
    let summary = heeler(&home.0, &["usage", "--json"]);
    settle(&home.0);
    let summary = json::parse(String::from_utf8(summary.stdout).unwrap().trim_end()).unwrap();
    let coverage = summary.get("coverage").unwrap();
    let pi = coverage.get("pi").unwrap();
    let root = home.0.join(".pi/agent").display().to_string();
    assert_eq!(pi.get("roots").unwrap().to_json(), format!("[\"{root}\"]"));
    assert_eq!(pi.get("files_seen").and_then(Value::as_i64), Some(2));
    let keys: Vec<&str> = match coverage {
        Value::Object(o) => o.iter().map(|(k, _)| k).collect(),
        _ => panic!("{coverage:?}"),
    };
    assert_eq!(keys, ["claude", "codex", "partial", "pi"]);
    let text = heeler(&home.0, &["usage"]);
    settle(&home.0);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("pi 2 files"), "{text}");

    // The app's document names Claude Code and Codex only.
    let query = heeler(&home.0, &["usage", "query"]);
    settle(&home.0);
    let text = String::from_utf8(query.stdout).unwrap();
    assert!(text.contains(r#""claude""#), "{text}");
    for absent in [
        "pi-mystery-1",
        "gpt-5",
        "claude-sonnet-4-5",
        "pi-proj",
        r#""pi""#,
    ] {
        assert!(!text.contains(absent), "{absent} in the query: {text}");
    }
}

/// An Amp assistant message with its `usage` (the field names tokscale,
/// ccusage and agentsview read): [input, output, cache read, cache write].
fn amp_assistant(id: u64, at: i64, model: &str, [input, output, read, write]: [u64; 4]) -> String {
    format!(
        r#"{{"role":"assistant","messageId":{id},"content":[{{"type":"text","text":"done"}}],"state":{{"type":"complete","stopReason":"end_turn"}},"usage":{{"model":"{model}","maxInputTokens":168000,"inputTokens":{input},"outputTokens":{output},"cacheCreationInputTokens":{write},"cacheReadInputTokens":{read},"totalInputTokens":{},"timestamp":"{}"}}}}"#,
        input + read + write,
        ts(at)
    )
}

/// An Amp thread document: `created` in Unix ms, messages, ledger events.
fn amp_thread(id: &str, created: i64, messages: &[String], events: &[String]) -> String {
    format!(
        r#"{{"v":12,"id":"{id}","created":{},"title":"t","messages":[{}],"usageLedger":{{"events":[{}]}},"env":{{"initial":{{"trees":[{{"uri":"file:///home/dev/amp-proj"}}]}}}}}}"#,
        created * 1000,
        messages.join(","),
        events.join(",")
    )
}

#[test]
fn amp_threads_show_in_the_views_merged_priced_and_a_fork_counted_once() {
    let home = Scratch::new("views-amp");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let start = now - 2 * 3_600;
    let threads = home.0.join(".local/share/amp/threads");
    let user =
        r#"{"role":"user","messageId":1,"content":[{"type":"text","text":"hi"}]}"#.to_string();
    let sonnet = [1_000, 2_000, 10_000, 4_000];
    // The ledger's event for message 2 writes input and output only: the
    // call takes its message's cache counts.
    let event = format!(
        r#"{{"id":"e1","timestamp":"{}","model":"claude-sonnet-4-5","credits":2.5,"tokens":{{"input":1000,"output":2000}},"operationType":"inference","fromMessageId":1,"toMessageId":2}}"#,
        ts(start + 60)
    );
    write(
        &threads.join("T-a.json"),
        &amp_thread(
            "T-a",
            start,
            &[
                user.clone(),
                amp_assistant(2, start + 60, "claude-sonnet-4-5", sonnet),
                amp_assistant(4, start + 120, "gpt-5", [2_000, 500, 0, 0]),
                amp_assistant(6, start + 180, "amp-mystery-1", [100, 10, 0, 0]),
            ],
            &[event],
        ),
    );
    // A fork of T-a created ten minutes in: the copy of message 2 (stamped
    // before the fork) is T-a's; its own call counts.
    write(
        &threads.join("T-b.json"),
        &amp_thread(
            "T-b",
            start + 600,
            &[
                user,
                amp_assistant(2, start + 60, "claude-sonnet-4-5", sonnet),
                amp_assistant(4, start + 660, "gpt-5", [300, 100, 0, 0]),
            ],
            &[],
        ),
    );
    let worker = heeler(&home.0, &["usage", "worker"]);
    assert!(worker.status.success(), "{worker:?}");
    let out = heeler(&home.0, &["usage", "models", "--agent", "amp", "--json"]);
    settle(&home.0);
    assert!(out.status.success(), "{out:?}");
    let doc = json::parse(String::from_utf8(out.stdout).unwrap().trim_end()).unwrap();
    let totals = doc.get("totals").unwrap();
    let int = |k: &str| totals.get(k).and_then(Value::as_i64);
    // By hand: four calls (the event and message 2 are one; the fork's
    // copy is T-a's), input 1,000 + 2,000 + 100 + 300, output 2,000 + 500
    // + 10 + 100, cache reads 10,000, cache writes 4,000.
    assert_eq!(int("requests"), Some(4));
    assert_eq!(int("input"), Some(3_400));
    assert_eq!(int("output"), Some(2_610));
    assert_eq!(int("cache_read"), Some(10_000));
    assert_eq!(int("cache_write_5m"), Some(4_000));
    // The bundled table's rates per token: Sonnet 4.5 input $3e-6, output
    // $15e-6, cache reads $0.3e-6, 5-minute writes $3.75e-6 (0.003 + 0.03
    // + 0.003 + 0.015 = 0.051); GPT-5 input $1.25e-6, output $10e-6
    // (0.0025 + 0.005 = 0.0075, and 0.000375 + 0.001 = 0.001375): 0.059875.
    let cost = totals.get("cost_usd").and_then(Value::as_f64).unwrap();
    assert!((cost - 0.059_875).abs() < 1e-9, "{cost}");
    assert_eq!(int("unpriced_requests"), Some(1));
    let unpriced = doc.get("unpriced_models").unwrap().to_json();
    assert!(
        unpriced.contains(r#""agent":"amp","model":"amp-mystery-1""#),
        "{unpriced}"
    );
    // Each thread is a session of its own, named by its file.
    let out = heeler(&home.0, &["usage", "session", "--agent", "amp", "--json"]);
    settle(&home.0);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(r#""session":"T-a""#), "{text}");
    assert!(text.contains(r#""session":"T-b""#), "{text}");
    let query = heeler(&home.0, &["usage", "query"]);
    settle(&home.0);
    let text = String::from_utf8(query.stdout).unwrap();
    assert!(!text.contains("amp-mystery-1"), "{text}");
}

#[test]
fn droid_sessions_show_in_the_views_as_one_call_each_priced() {
    let home = Scratch::new("views-droid");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let sessions = home.0.join(".factory/sessions/-home-dev-droid-proj");
    write(
        &sessions.join("s1.settings.json"),
        &format!(
            r#"{{"model":"claude-sonnet-4-5-20250929","reasoningEffort":"high","providerLock":"anthropic","providerLockTimestamp":"{}","tokenUsage":{{"inputTokens":1000,"outputTokens":1500,"cacheCreationTokens":4000,"cacheReadTokens":10000,"thinkingTokens":500}}}}"#,
            ts(now - 3_600)
        ),
    );
    // The transcript beside it carries no usage and is not read.
    write(&sessions.join("s1.jsonl"), "{\"type\":\"message\"}\n");
    write(
        &sessions.join("s2.settings.json"),
        &format!(
            r#"{{"model":"custom:GLM-4.6-[Z.AI]-0","providerLockTimestamp":"{}","tokenUsage":{{"inputTokens":700,"outputTokens":70,"cacheCreationTokens":0,"cacheReadTokens":0,"thinkingTokens":0}}}}"#,
            ts(now - 1_800)
        ),
    );
    let worker = heeler(&home.0, &["usage", "worker"]);
    assert!(worker.status.success(), "{worker:?}");
    let out = heeler(&home.0, &["usage", "models", "--agent", "droid", "--json"]);
    settle(&home.0);
    assert!(out.status.success(), "{out:?}");
    let doc = json::parse(String::from_utf8(out.stdout).unwrap().trim_end()).unwrap();
    let totals = doc.get("totals").unwrap();
    let int = |k: &str| totals.get(k).and_then(Value::as_i64);
    // By hand: two sessions, one call each; input 1,000 + 700; output
    // 1,500 + 500 thinking + 70 = 2,070 (500 reasoning).
    assert_eq!(int("requests"), Some(2));
    assert_eq!(int("input"), Some(1_700));
    assert_eq!(int("output"), Some(2_070));
    assert_eq!(int("reasoning"), Some(500));
    assert_eq!(int("cache_read"), Some(10_000));
    assert_eq!(int("cache_write_5m"), Some(4_000));
    // Sonnet 4.5 (the dated id is the table's): 1,000 × 3e-6 + 2,000 ×
    // 15e-6 + 10,000 × 0.3e-6 + 4,000 × 3.75e-6 = 0.003 + 0.03 + 0.003 +
    // 0.015 = 0.051; the custom model is unpriced.
    let cost = totals.get("cost_usd").and_then(Value::as_f64).unwrap();
    assert!((cost - 0.051).abs() < 1e-9, "{cost}");
    assert_eq!(int("unpriced_requests"), Some(1));
    let unpriced = doc.get("unpriced_models").unwrap().to_json();
    assert!(
        unpriced.contains(r#""agent":"droid","model":"custom:GLM-4.6-[Z.AI]-0""#),
        "{unpriced}"
    );
    let summary = heeler(&home.0, &["usage", "--json"]);
    settle(&home.0);
    let summary = json::parse(String::from_utf8(summary.stdout).unwrap().trim_end()).unwrap();
    let droid = summary.get("coverage").unwrap().get("droid").unwrap();
    assert_eq!(droid.get("files_seen").and_then(Value::as_i64), Some(2));
}

/// An opencode database as opencode 1.x makes it (`migration/*`: the
/// `message` table of `session/session.sql.ts`), in WAL mode, with
/// `rows` of (message id, session id, data).
fn opencode_db(path: &Path, rows: &[(&str, &str, String)]) -> rusqlite::Connection {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT NOT NULL);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
             time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
         CREATE INDEX message_session_idx ON message (session_id);",
    )
    .unwrap();
    for (id, session, data) in rows {
        opencode_insert(&conn, id, session, data);
    }
    conn
}

fn opencode_insert(conn: &rusqlite::Connection, id: &str, session: &str, data: &str) {
    conn.execute(
        "INSERT INTO message VALUES (?1, ?2, 0, 0, ?3)",
        rusqlite::params![id, session, data],
    )
    .unwrap();
}

/// An assistant message's `data` as opencode writes it (`MessageV2.Assistant`
/// without `id` and `sessionID`), created at Unix second `at`.
fn opencode_assistant(at: i64, provider: &str, model: &str, tokens: &str) -> String {
    format!(
        r#"{{"parentID":"msg_u","role":"assistant","mode":"build","agent":"build","path":{{"cwd":"/home/dev/oc-proj","root":"/home/dev/oc-proj"}},"cost":0,"tokens":{tokens},"modelID":"{model}","providerID":"{provider}","time":{{"created":{},"completed":{}}},"finish":"stop"}}"#,
        at * 1000 + 250,
        at * 1000 + 900
    )
}

fn views_totals(home: &Path, agent: &str) -> Value {
    let out = heeler(home, &["usage", "models", "--agent", agent, "--json"]);
    settle(home);
    assert!(out.status.success(), "{out:?}");
    json::parse(String::from_utf8(out.stdout).unwrap().trim_end()).unwrap()
}

#[test]
fn opencode_and_kilo_databases_show_in_the_views_priced_and_follow_the_wal() {
    let home = Scratch::new("views-opencode");
    let start = heeler::base::clock::unix_seconds() - 2 * 3_600;
    let tokens = |i: u64, o: u64, r: u64, cr: u64, cw: u64, total: Option<u64>| {
        let total = total
            .map(|t| format!(r#""total":{t},"#))
            .unwrap_or_default();
        format!(
            r#"{{{total}"input":{i},"output":{o},"reasoning":{r},"cache":{{"read":{cr},"write":{cw}}}}}"#
        )
    };
    let m1 = opencode_assistant(
        start + 60,
        "anthropic",
        "claude-sonnet-4-5",
        &tokens(1_000, 2_000, 0, 10_000, 4_000, None),
    );
    // AI SDK 6: output 400 without its reasoning 100 (total 2,000 + 400 +
    // 100 = 2,500): 500 output tokens billed.
    let m2 = opencode_assistant(
        start + 120,
        "openai",
        "gpt-5",
        &tokens(2_000, 400, 100, 0, 0, Some(2_500)),
    );
    let m3 = opencode_assistant(
        start + 180,
        "local",
        "oc-mystery-1",
        &tokens(100, 10, 0, 0, 0, None),
    );
    let user = format!(
        r#"{{"role":"user","time":{{"created":{}}},"agent":"build","model":{{"providerID":"openai","modelID":"gpt-5"}}}}"#,
        start * 1000
    );
    let m4 = opencode_assistant(
        start + 660,
        "openai",
        "gpt-5",
        &tokens(300, 100, 0, 0, 0, None),
    );
    let db = home.0.join(".local/share/opencode/opencode.db");
    // ses_2 is a fork of ses_1 (`Session.fork`): a copy of m1's data under
    // a new id, then a call of its own.
    let writer = opencode_db(
        &db,
        &[
            ("msg_u", "ses_1", user),
            ("msg_1", "ses_1", m1.clone()),
            ("msg_2", "ses_1", m2),
            ("msg_3", "ses_1", m3),
            ("msg_9", "ses_2", m1),
            ("msg_4", "ses_2", m4),
        ],
    );
    let kilo = home.0.join(".local/share/kilo/kilo.db");
    let kilo_writer = opencode_db(
        &kilo,
        &[(
            "msg_k",
            "ses_k",
            opencode_assistant(
                start + 30,
                "anthropic",
                "claude-sonnet-4-5",
                &tokens(100, 10, 0, 0, 0, None),
            ),
        )],
    );
    // A log, a JSON storage file and a WAL file are not databases.
    write(
        &home
            .0
            .join(".local/share/opencode/storage/message/ses_1/msg_1.json"),
        "{}",
    );
    let worker = heeler(&home.0, &["usage", "worker"]);
    assert!(worker.status.success(), "{worker:?}");
    let doc = views_totals(&home.0, "opencode");
    let totals = doc.get("totals").unwrap();
    let int = |t: &Value, k: &str| t.get(k).and_then(Value::as_i64);
    // By hand: four calls (the fork's copy of m1 is m1), input 1,000 +
    // 2,000 + 100 + 300, output 2,000 + 500 + 10 + 100.
    assert_eq!(int(totals, "requests"), Some(4));
    assert_eq!(int(totals, "input"), Some(3_400));
    assert_eq!(int(totals, "output"), Some(2_610));
    assert_eq!(int(totals, "cache_read"), Some(10_000));
    assert_eq!(int(totals, "cache_write_5m"), Some(4_000));
    // The bundled table's rates per token: Sonnet 4.5 input $3e-6, output
    // $15e-6, cache reads $0.3e-6, 5-minute writes $3.75e-6 (0.003 + 0.03
    // + 0.003 + 0.015 = 0.051); GPT-5 input $1.25e-6, output $10e-6
    // (0.0025 + 0.005 = 0.0075, and 0.000375 + 0.001 = 0.001375).
    let cost = totals.get("cost_usd").and_then(Value::as_f64).unwrap();
    assert!((cost - 0.059_875).abs() < 1e-9, "{cost}");
    assert_eq!(int(totals, "unpriced_requests"), Some(1));
    let unpriced = doc.get("unpriced_models").unwrap().to_json();
    assert!(
        unpriced.contains(r#""agent":"opencode","model":"oc-mystery-1""#),
        "{unpriced}"
    );
    // Kilo's one call: 100 × $3e-6 + 10 × $15e-6 = $0.00045.
    let doc = views_totals(&home.0, "kilo");
    let totals = doc.get("totals").unwrap();
    assert_eq!(int(totals, "requests"), Some(1));
    let cost = totals.get("cost_usd").and_then(Value::as_f64).unwrap();
    assert!((cost - 0.000_45).abs() < 1e-12, "{cost}");

    // A call committed while opencode runs lands in the WAL only (the
    // writer is still open, nothing is checkpointed): the next refresh
    // reads it. 50 × $1.25e-6 + 5 × $10e-6 = $0.0001125.
    let mtime = || std::fs::metadata(&db).unwrap().modified().unwrap();
    let before = mtime();
    writer
        .execute_batch("PRAGMA wal_autocheckpoint = 0")
        .unwrap();
    let m5 = opencode_assistant(
        start + 700,
        "openai",
        "gpt-5",
        &tokens(50, 5, 0, 0, 0, None),
    );
    opencode_insert(&writer, "msg_5", "ses_2", &m5);
    assert_eq!(mtime(), before, "the commit went to the WAL");
    let worker = heeler(&home.0, &["usage", "worker"]);
    assert!(worker.status.success(), "{worker:?}");
    let doc = views_totals(&home.0, "opencode");
    let totals = doc.get("totals").unwrap();
    assert_eq!(int(totals, "requests"), Some(5));
    assert_eq!(int(totals, "input"), Some(3_450));
    let cost = totals.get("cost_usd").and_then(Value::as_f64).unwrap();
    // (The document rounds to the micro-dollar.)
    assert!((cost - 0.059_987_5).abs() <= 5.1e-7, "{cost}");

    // The coverage names both, with the database each read.
    let summary = heeler(&home.0, &["usage", "--json"]);
    settle(&home.0);
    let summary = json::parse(String::from_utf8(summary.stdout).unwrap().trim_end()).unwrap();
    let coverage = summary.get("coverage").unwrap();
    for agent in ["opencode", "kilo"] {
        let c = coverage
            .get(agent)
            .unwrap_or_else(|| panic!("{agent}: {coverage:?}"));
        assert_eq!(
            c.get("files_seen").and_then(Value::as_i64),
            Some(1),
            "{agent}"
        );
        assert_eq!(
            c.get("files_unreadable").and_then(Value::as_i64),
            Some(0),
            "{agent}"
        );
    }
    drop((writer, kilo_writer));
}

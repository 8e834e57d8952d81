//! Usage end to end on fixture trees written by the tests: transcript quirks,
//! the per-file cache, time zones, the v1 vector, the query command and the
//! limit probes against stand-in `claude`/`codex` executables.

use crate::common;
use crate::usage_fixture;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use heeler::base::json::{self, Object, Value};
use heeler::base::tz::Zone;
use heeler::usage::cache::Index;
use heeler::usage::pricing::PriceTable;
use heeler::usage::report::{self, Envelope};
use heeler::usage::worker::{self, Roots};
use usage_fixture::*;

fn zoneinfo() -> Option<PathBuf> {
    let dir = heeler::base::tz::zoneinfo_dir();
    dir.join("Asia/Shanghai").exists().then_some(dir)
}

fn scan_fixture(home: &Path) -> (Index, heeler::usage::worker::ScanResult) {
    let roots = Roots::resolve(home, &|_| None);
    let mut index = Index::default();
    let result = worker::scan(
        &mut index,
        &roots,
        &PriceTable::bundled().unwrap(),
        NOW,
        None,
    );
    (index, result)
}

fn envelope(index: &Index) -> Envelope {
    let (limits, at) = heeler::usage::limits::newest_rollout_limits(index).unwrap();
    Envelope {
        now: NOW,
        refresh: json::parse(
            r#"{"state":"idle","started_at":1795953590,"last_success_at":1795953590,"last_error":null,"retry_after_ms":null}"#,
        )
        .unwrap(),
        runtime: json::parse(r#"{"state":"ok","recorded_at":1795950000}"#).unwrap(),
        pricing: PriceTable::bundled().unwrap().meta,
        limits: Value::Object(
            Object::new()
                .with("claude", json::parse(r#"{"state":"disabled"}"#).unwrap())
                .with(
                    "codex",
                    Value::Object(heeler::usage::limits::codex_from_rollout(&limits, at)),
                ),
        ),
        errors: Vec::new(),
    }
}

fn path_of<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| v.get(k).unwrap_or(&Value::Null))
}

fn n(v: &Value, path: &[&str]) -> i64 {
    path_of(v, path)
        .as_i64()
        .unwrap_or_else(|| panic!("{path:?}"))
}

fn render_utc(result: &heeler::usage::worker::ScanResult, index: &Index) -> Value {
    report::render(Some(&result.snapshot), &Zone::utc(), &envelope(index))
}

#[test]
fn claude_quirks_are_counted_once() {
    let home = temp_dir("usage-claude");
    write_tree(&home);
    let (index, result) = scan_fixture(&home);
    let answer = render_utc(&result, &index);
    let c = &["windows", "d30", "claude"];
    // Kept: msg_a1 (largest block: output 50), msg_a2 once, msg_a3, msg_s1
    // (own sidechain message), msg_b1, msg_c1. Dropped: the smaller a1
    // block, the a1 sidechain replay, the resumed a2 copy. msg_b0 is 40
    // days old.
    assert_eq!(n(&answer, &[c[0], c[1], c[2], "requests"]), 6);
    assert_eq!(
        n(&answer, &[c[0], c[1], c[2], "output"]),
        50 + 20 + 3 + 40 + 100 + 5
    );
    assert_eq!(
        n(&answer, &[c[0], c[1], c[2], "cache_write_1h"]),
        200 + 5000
    );
    assert_eq!(n(&answer, &[c[0], c[1], c[2], "cache_write_5m"]), 100 + 40);
    assert_eq!(n(&answer, &[c[0], c[1], c[2], "cache_read"]), 1000 + 400);
    // The unknown model stays unpriced (fast-mode Opus 4.6 is priced).
    assert_eq!(n(&answer, &[c[0], c[1], c[2], "unpriced_requests"]), 1);
    assert_eq!(n(&answer, &[c[0], c[1], c[2], "unpriced_tokens"]), 10);
    assert_eq!(n(&answer, &["coverage", "claude", "duplicates_dropped"]), 3);
    assert_eq!(n(&answer, &["coverage", "claude", "lines_malformed"]), 1);
    assert_eq!(n(&answer, &["coverage", "claude", "files_seen"]), 4);
    // msg_b1 is 8 days old: in d30, not in d7.
    assert_eq!(n(&answer, &["windows", "d7", "claude", "requests"]), 5);
    let roots = path_of(&answer, &["coverage", "claude", "roots"])
        .as_array()
        .unwrap();
    assert_eq!(roots.len(), 2);
    // Cost: recompute msg_a1 from the bundled table's opus-4-6 rates.
    let table = PriceTable::bundled().unwrap();
    let a1 = table
        .cost(
            heeler::usage::event::Agent::Claude,
            "claude-opus-4-6",
            "standard",
            0,
            &heeler::usage::event::Tokens {
                input: 10,
                cache_read: 1000,
                cache_write_5m: 100,
                cache_write_1h: 200,
                output: 50,
                reasoning: 0,
            },
        )
        .unwrap();
    let models = path_of(&answer, &["models"]).as_array().unwrap();
    let opus = models
        .iter()
        .find(|m| m.get("model").and_then(Value::as_str) == Some("claude-opus-4-6"))
        .unwrap();
    assert_eq!(opus.get("priced").and_then(Value::as_bool), Some(true));
    let opus_cost = path_of(opus, &["totals", "cost_usd"]).as_f64().unwrap();
    // msg_a3, fast mode: 6 × (7 × $5 + 3 × $25) per million = $0.00066.
    let a3 = 6.0 * (7.0 * 5e-6 + 3.0 * 25e-6);
    let b1 = table
        .cost(
            heeler::usage::event::Agent::Claude,
            "claude-opus-4-6",
            "standard",
            0,
            &heeler::usage::event::Tokens {
                input: 1000,
                cache_write_1h: 5000,
                output: 100,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(
        (opus_cost - (a1 + b1 + a3)).abs() < 2e-6,
        "{opus_cost} {a1} {b1} {a3}"
    );
    fs::remove_dir_all(&home).unwrap();
}

#[test]
fn codex_quirks_are_counted_once() {
    let home = temp_dir("usage-codex");
    write_tree(&home);
    let (index, result) = scan_fixture(&home);
    let answer = render_utc(&result, &index);
    let x = |k: &str| n(&answer, &["windows", "d30", "codex", k]);
    // t1: totals 3000/2000/300 (re-emit ignored). t2 (fork): +500/300/50.
    // t3 (subagent, burst skipped): 1200-900 / 300-100 / 120-90. t4: records
    // resp_1 + resp_2 once. t5 (zst archive): 2000/1000/200. t6: 100/0/10.
    let input = 3000 + 500 + 300 + (500 + 700) + 2000 + 100;
    let cached = 2000 + 300 + 200 + (100 + 500) + 1000;
    let output = 300 + 50 + 30 + (50 + 70) + 200 + 10;
    assert_eq!(x("input") + x("cache_read"), input);
    assert_eq!(x("cache_read"), cached);
    assert_eq!(x("output"), output);
    assert_eq!(x("reasoning"), 100 + 20 + 10 + 5 + 50);
    assert_eq!(x("requests"), 2 + 1 + 1 + 2 + 1 + 1);
    let cov = |k: &str| n(&answer, &["coverage", "codex", k]);
    assert_eq!(cov("files_seen"), 7);
    assert_eq!(cov("files_compressed"), 2);
    assert_eq!(cov("files_compressed_skipped"), 1);
    assert_eq!(cov("forks_unresolved"), 0);
    // Directories: the fork's turn ran in /home/dev/delta.
    let top = path_of(&answer, &["directories", "top"])
        .as_array()
        .unwrap();
    let delta = top
        .iter()
        .find(|d| d.get("path").and_then(Value::as_str) == Some("/home/dev/delta"))
        .unwrap();
    assert_eq!(n(delta, &["totals", "output"]), 50);
    // Limits fall back to the newest rollout rate_limits.
    assert_eq!(
        path_of(&answer, &["limits", "codex", "source"]).as_str(),
        Some("rollout")
    );
    let windows = path_of(&answer, &["limits", "codex", "windows"])
        .as_array()
        .unwrap();
    assert_eq!(windows.len(), 2);
    assert_eq!(n(&windows[0], &["window_minutes"]), 300);
    fs::remove_dir_all(&home).unwrap();
}

#[test]
fn fixture_tree_matches_the_v1_vector() {
    let Some(zoneinfo) = zoneinfo() else {
        common::skip("no zoneinfo (install tzdata)");
        return;
    };
    let home = temp_dir("usage-vector");
    write_tree(&home);
    let (index, result) = scan_fixture(&home);
    let zone = Zone::load("Asia/Shanghai", &zoneinfo).unwrap();
    let answer = report::render(Some(&result.snapshot), &zone, &envelope(&index));
    let text = answer
        .to_json()
        .replace(&home.to_string_lossy().into_owned(), "/FIXTURE-HOME");
    let vector = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-vectors/usage-v1.json");
    let pretty = pretty_print(&json::parse(&text).unwrap(), 0);
    if std::env::var_os("UPDATE_USAGE_VECTOR").is_some() {
        fs::write(&vector, format!("{pretty}\n")).unwrap();
        println!("updated {}", vector.display());
    }
    let expected = fs::read_to_string(&vector).expect("test-vectors/usage-v1.json");
    let expected = json::parse(&expected).unwrap();
    assert_eq!(
        pretty_print(&expected, 0),
        pretty,
        "usage-v1 vector differs; review and rerun with UPDATE_USAGE_VECTOR=1"
    );
    assert_eq!(answer.get("v").and_then(Value::as_i64), Some(1));
    assert_eq!(path_of(&answer, &["daily"]).as_array().unwrap().len(), 30);
    println!("usage-v1 vector: {} bytes compared", pretty.len());
    fs::remove_dir_all(&home).unwrap();
}

/// Two-space indented JSON (the vector is meant for human review).
fn pretty_print(v: &Value, depth: usize) -> String {
    let pad = "  ".repeat(depth + 1);
    let end = "  ".repeat(depth);
    match v {
        Value::Object(o) if !o.is_empty() => {
            let items: Vec<String> = o
                .iter()
                .map(|(k, v)| format!("{pad}{}: {}", json::quote(k), pretty_print(v, depth + 1)))
                .collect();
            format!("{{\n{}\n{end}}}", items.join(",\n"))
        }
        Value::Array(a) if !a.is_empty() => {
            let items: Vec<String> = a
                .iter()
                .map(|v| format!("{pad}{}", pretty_print(v, depth + 1)))
                .collect();
            format!("[\n{}\n{end}]", items.join(",\n"))
        }
        other => other.to_json(),
    }
}

fn claude_file(home: &Path) -> PathBuf {
    home.join(".claude/projects/-home-dev-alpha/live.jsonl")
}

fn one(at: i64, msg: &str, output: u64) -> String {
    Claude {
        at,
        msg,
        req: msg,
        output,
        ..Claude::default()
    }
    .line()
        + "\n"
}

fn claude_output(index: &Index) -> u64 {
    let files: Vec<heeler::usage::aggregate::FileRef> = index
        .files
        .values()
        .map(|e| heeler::usage::aggregate::FileRef {
            agent: e.agent,
            parse: &e.parse,
        })
        .collect();
    let agg = heeler::usage::aggregate::aggregate(
        &files,
        &PriceTable::bundled().unwrap(),
        NOW - worker::WINDOW_SECONDS,
    );
    agg.slots.iter().map(|s| s.totals.tokens.output).sum()
}

fn refresh(index: &mut Index, home: &Path) -> heeler::usage::cache::RefreshStats {
    let roots = Roots::resolve(home, &|_| None);
    let candidates = worker::discover(&roots).candidates;
    heeler::usage::cache::refresh(
        index,
        &candidates,
        (NOW - worker::WINDOW_SECONDS) * 1_000_000_000,
        None,
    )
}

#[test]
fn cache_follows_append_rewrite_truncation_touch_and_deletion() {
    let home = temp_dir("usage-cache");
    let file = claude_file(&home);
    write(&file, &one(NOW - HOUR, "m1", 10));
    let mut index = Index::default();
    let s = refresh(&mut index, &home);
    assert_eq!((s.reparsed, s.appended, s.reused), (1, 0, 0));
    assert_eq!(claude_output(&index), 10);

    // Unchanged: reused without reading.
    let s = refresh(&mut index, &home);
    assert_eq!(
        (s.reparsed, s.appended, s.reused, s.bytes_read),
        (0, 0, 1, 0)
    );

    // Append, including a torn line that completes later.
    let mut text = fs::read_to_string(&file).unwrap();
    let line2 = one(NOW - HOUR + 60, "m2", 20);
    let (head, tail) = line2.split_at(40);
    text.push_str(head);
    fs::write(&file, &text).unwrap();
    let s = refresh(&mut index, &home);
    assert_eq!(s.appended, 1);
    assert_eq!(claude_output(&index), 10);
    text.push_str(tail);
    fs::write(&file, &text).unwrap();
    let s = refresh(&mut index, &home);
    assert_eq!(s.appended, 1);
    assert_eq!(s.bytes_read, line2.len() as u64);
    assert_eq!(claude_output(&index), 30);

    // Same size, times moved: it may have been rewritten in place (past
    // its head), so it is read again; the totals stay.
    let f = fs::File::options().write(true).open(&file).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    drop(f);
    let s = refresh(&mut index, &home);
    assert_eq!((s.reparsed, s.appended, s.reused), (1, 0, 0));
    assert_eq!(claude_output(&index), 30);

    // Rewrite with a different head (same size or not): reparsed.
    let rewritten = one(NOW - HOUR, "m9", 7) + &one(NOW - HOUR + 60, "m2", 20);
    fs::write(&file, &rewritten).unwrap();
    let s = refresh(&mut index, &home);
    assert_eq!(s.reparsed, 1);
    assert_eq!(claude_output(&index), 27);

    // Truncation (Claude removing its tail): reparsed, rows shrink.
    fs::write(&file, one(NOW - HOUR, "m9", 7)).unwrap();
    let s = refresh(&mut index, &home);
    assert_eq!(s.reparsed, 1);
    assert_eq!(claude_output(&index), 7);

    // The index survives a round trip through its file format.
    let bytes = index.to_bytes();
    assert_eq!(Index::from_bytes(&bytes), index);
    assert_eq!(
        Index::from_bytes(&bytes[..bytes.len() - 3]),
        Index::default()
    );
    assert_eq!(Index::from_bytes(b"garbage"), Index::default());

    // A file older than the window is dropped without being read.
    let f = fs::File::options().write(true).open(&file).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs((NOW - 40 * DAY) as u64))
        .unwrap();
    drop(f);
    let s = refresh(&mut index, &home);
    assert_eq!((s.skipped_old, s.dropped, s.bytes_read), (1, 1, 0));
    assert!(index.files.is_empty());

    // Deletion drops the entry.
    write(&file, &one(NOW - HOUR, "m1", 10));
    refresh(&mut index, &home);
    assert_eq!(index.files.len(), 1);
    fs::remove_file(&file).unwrap();
    let s = refresh(&mut index, &home);
    assert_eq!(s.dropped, 1);
    assert!(index.files.is_empty());
    fs::remove_dir_all(&home).unwrap();
}

#[test]
fn codex_append_resumes_with_parser_state() {
    let home = temp_dir("usage-codex-append");
    let file = home.join(".codex/sessions/2026/11/29/rollout-2026-11-29T08-00-00-tz.jsonl");
    write(
        &file,
        &lines(&[
            session_meta(NOW - 4 * HOUR, "tz", ""),
            turn_context(NOW - 4 * HOUR, "gpt-5.5", "/home/dev/alpha"),
            token_count(NOW - 4 * HOUR + 10, [100, 0, 10, 0], [100, 0, 10, 0], ""),
        ]),
    );
    let mut index = Index::default();
    refresh(&mut index, &home);
    let mut text = fs::read_to_string(&file).unwrap();
    text.push_str(&lines(&[
        token_count(NOW - 3 * HOUR, [100, 0, 10, 0], [100, 0, 10, 0], ""),
        token_count(NOW - 2 * HOUR, [300, 0, 30, 0], [200, 0, 20, 0], ""),
    ]));
    fs::write(&file, text).unwrap();
    let s = refresh(&mut index, &home);
    assert_eq!(s.appended, 1);
    let entry = index.files.values().next().unwrap();
    // The model from the first pass applies to lines read in the second.
    assert_eq!(entry.parse.string(entry.parse.events[2].model), "gpt-5.5");
    let counted = heeler::usage::parse::codex::requests(&entry.parse, None);
    let total: u64 = counted.requests.iter().map(|r| r.tokens.total()).sum();
    assert_eq!(total, 330);
    fs::remove_dir_all(&home).unwrap();
}

#[test]
fn archives_made_by_the_real_zstd_decode() {
    let Ok(status) = std::process::Command::new("zstd").arg("--version").output() else {
        common::skip("zstd is not installed");
        return;
    };
    assert!(status.status.success());
    let home = temp_dir("usage-zstd-cli");
    let archived = home.join(".codex/archived_sessions");
    let plain = archived.join("rollout-2026-11-20T08-00-00-tq.jsonl");
    write(
        &plain,
        &lines(&[
            session_meta(NOW - 2 * DAY, "tq", ""),
            turn_context(NOW - 2 * DAY, "gpt-5", "/home/dev/alpha"),
            token_count(NOW - 2 * DAY, [4000, 0, 400, 0], [4000, 0, 400, 0], ""),
        ]),
    );
    let ok = std::process::Command::new("zstd")
        .args(["-q", "-19", "--rm"])
        .arg(&plain)
        .status()
        .unwrap();
    assert!(ok.success());
    let (index, result) = scan_fixture(&home);
    let entry = index.files.values().next().unwrap();
    assert!(entry.compressed && !entry.unreadable);
    let out: u64 = result
        .snapshot
        .slots
        .iter()
        .map(|s| s.totals.tokens.output)
        .sum();
    assert_eq!(out, 400);
    fs::remove_dir_all(&home).unwrap();
}

#[test]
fn zone_offsets_agree_with_the_c_library() {
    let Some(zoneinfo) = zoneinfo() else {
        common::skip("no zoneinfo (install tzdata)");
        return;
    };
    let zones = [
        "America/New_York",
        "Europe/Berlin",
        "Australia/Sydney",
        "Asia/Kathmandu",
        "America/Sao_Paulo",
        "Pacific/Chatham",
        "Asia/Shanghai",
    ];
    let mut checked = 0;
    for name in zones {
        let zone = Zone::load(name, &zoneinfo).unwrap();
        let instants: Vec<i64> = (0..40)
            .map(|i| NOW - 3 * 365 * DAY + i * 97 * DAY / 3)
            .collect();
        let args: Vec<String> = instants.iter().map(|t| format!("@{t}")).collect();
        for (t, arg) in instants.iter().zip(args) {
            let out = std::process::Command::new("date")
                .env("TZ", name)
                .args(["-d", &arg, "+%z"])
                .output()
                .unwrap();
            let z = String::from_utf8(out.stdout).unwrap();
            let z = z.trim();
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let h: i32 = z[1..3].parse().unwrap();
            let m: i32 = z[3..5].parse().unwrap();
            assert_eq!(
                zone.offset_at(*t),
                sign * (h * 3600 + m * 60),
                "{name} at {t}"
            );
            checked += 1;
        }
    }
    println!("checked {checked} offsets against date(1)");
}

#[test]
fn dst_days_have_23_and_25_hours() {
    let Some(zoneinfo) = zoneinfo() else {
        common::skip("no zoneinfo (install tzdata)");
        return;
    };
    let home = temp_dir("usage-dst");
    // One request per UTC hour from 2026-10-30 to 2026-11-03 (New York
    // leaves DST on 2026-11-01).
    let start = heeler::usage::time::parse_timestamp("2026-10-30T00:00:00Z").unwrap();
    let mut text = String::new();
    for h in 0..(5 * 24) {
        text.push_str(&one(start + h * HOUR, &format!("m{h}"), 1));
    }
    write(&claude_file(&home), &text);
    let mut index = Index::default();
    let roots = Roots::resolve(&home, &|_| None);
    let now = heeler::usage::time::parse_timestamp("2026-11-05T12:00:00Z").unwrap();
    let result = worker::scan(
        &mut index,
        &roots,
        &PriceTable::bundled().unwrap(),
        now,
        None,
    );
    let zone = Zone::load("America/New_York", &zoneinfo).unwrap();
    let mut env = envelope_without_limits();
    env.now = now;
    let answer = report::render(Some(&result.snapshot), &zone, &env);
    let daily = path_of(&answer, &["daily"]).as_array().unwrap();
    let day = |date: &str| {
        let d = daily
            .iter()
            .find(|d| d.get("date").and_then(Value::as_str) == Some(date))
            .unwrap();
        n(d, &["claude", "requests"])
    };
    assert_eq!(day("2026-10-31"), 24);
    assert_eq!(day("2026-11-01"), 25);
    assert_eq!(day("2026-11-02"), 24);
    // Europe/Berlin springs forward on 2026-03-29: a 23-hour day.
    let berlin = Zone::load("Europe/Berlin", &zoneinfo).unwrap();
    let d = heeler::usage::time::days_from_civil(2026, 3, 29);
    let hours = (-48..72)
        .map(|h| d * DAY + h * HOUR)
        .filter(|&t| berlin.local_day(t) == d)
        .count();
    assert_eq!(hours, 23);
    fs::remove_dir_all(&home).unwrap();
}

fn envelope_without_limits() -> Envelope {
    Envelope {
        now: NOW,
        refresh: Value::Null,
        runtime: Value::Null,
        pricing: PriceTable::bundled().unwrap().meta,
        limits: Value::Null,
        errors: Vec::new(),
    }
}

#[test]
fn an_unchanged_tree_reuses_the_previous_snapshot() {
    let home = temp_dir("usage-unchanged");
    write_tree(&home);
    let (index, first) = scan_fixture(&home);
    // Every event kind survives the index's compact encoding.
    let bytes = index.to_bytes();
    assert_eq!(Index::from_bytes(&bytes), index);
    // The worker's path: the index saved by its store and loaded lazily
    // (events left in the events file), nothing changed.
    let state = temp_dir("usage-unchanged-state");
    let store = heeler::usage::store::index::Store::in_dir(&state);
    let mut saved = index.clone();
    store
        .save(
            &mut saved,
            &[],
            heeler::usage::store::index::Loaded::default(),
        )
        .unwrap();
    let (mut lazy, _) = store.load();
    assert!(lazy.files.values().all(|e| !e.is_loaded()));
    assert_eq!(lazy.to_bytes(), bytes, "stored entries read back unchanged");
    lazy.materialize();
    assert_eq!(lazy.to_bytes(), bytes);
    let (mut index, _) = store.load();
    let roots = Roots::resolve(&home, &|_| None);
    let prices = PriceTable::bundled().unwrap();
    let second = worker::scan(&mut index, &roots, &prices, NOW + 60, None);
    assert!(!second.stats.changed());
    assert_eq!(second.snapshot.generated_at, NOW + 60);
    assert_eq!(second.snapshot.slots, first.snapshot.slots);
    // A change re-aggregates.
    let file = home.join(".claude/projects/-home-dev-alpha/s1/subagents/agent-x.jsonl");
    let mut text = fs::read_to_string(&file).unwrap();
    text.push_str(&one(NOW - 60, "msg_new", 1));
    fs::write(&file, text).unwrap();
    let third = worker::scan(&mut index, &roots, &prices, NOW + 120, None);
    assert!(third.stats.changed());
    let requests = |s: &heeler::usage::report::Snapshot| -> u64 {
        s.slots.iter().map(|x| x.totals.requests).sum()
    };
    assert_eq!(requests(&third.snapshot), requests(&first.snapshot) + 1);
    fs::remove_dir_all(&home).unwrap();
    fs::remove_dir_all(&state).unwrap();
}

#[test]
fn a_cold_backfill_out_of_time_is_partial_and_resumes() {
    let home = temp_dir("usage-partial");
    write_tree(&home);
    let roots = Roots::resolve(&home, &|_| None);
    let prices = PriceTable::bundled().unwrap();
    let mut index = Index::default();
    let expired = std::time::Instant::now();
    std::thread::sleep(Duration::from_millis(2));
    let first = worker::scan(&mut index, &roots, &prices, NOW, Some(expired));
    assert!(first.stats.partial && first.snapshot.partial);
    assert!(first.snapshot.slots.is_empty());
    assert_eq!(
        path_of(&first.snapshot.coverage, &["partial"]).as_bool(),
        Some(true)
    );
    // The next run (within budget) finishes the backfill; a partial snapshot
    // is never reused as-is.
    let second = worker::scan(&mut index, &roots, &prices, NOW, None);
    assert!(!second.snapshot.partial);
    let (_, complete) = scan_fixture(&home);
    assert_eq!(second.snapshot.slots, complete.snapshot.slots);
    fs::remove_dir_all(&home).unwrap();
}

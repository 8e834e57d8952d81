//! Golden tables: a hand-built cache of three slots (whose totals are
//! summed by hand below) rendered at 80 and 160 columns.
use super::*;
use crate::base::json;
use crate::usage::event::Tokens;
use crate::usage::time::{parse_date, parse_timestamp};

fn at(text: &str) -> i64 {
    parse_timestamp(text).unwrap()
}

const NOW: &str = "2026-11-29T12:00:00Z";

#[allow(clippy::too_many_arguments)]
fn slot(
    slot: &str,
    agent: Agent,
    (model, cwd, session): (&str, &str, &str),
    requests: u64,
    (first, last): (&str, &str),
    tokens: Tokens,
    cents: u64,
) -> (SlotKey, SlotAcc) {
    (
        (at(slot), agent, model.into(), cwd.into(), session.into()),
        SlotAcc {
            requests,
            tokens,
            cost_pico: cents * 10_000_000_000,
            first_ts: at(first),
            last_ts: at(last),
            ..SlotAcc::default()
        },
    )
}

/// The Codex thread of slot A.
const THREAD: &str = "0199e6a0-5c3b-7d21-9a4e-3f0c2b7d9e11";
/// The Claude session of slots B and C.
const SESSION: &str = "5b1f7c2e-8d4a-4e6b-9c3d-2a7e1f0b6d48";

/// A: Codex gpt-5.5 in /home/dev/beta on 11-28 (123,000 tokens, 1,200
/// of its 3,000 output reasoning, $0.75); B: Claude Opus in
/// /home/dev/alpha at 10:00 (1,013,000 tokens, $1.25); C: Claude Opus
/// in /home/dev/alpha/web at 11:30 (1,000 tokens, $0.50), the same
/// session as B.
fn data() -> Data {
    let t = |input, output, cache_read, cache_write_1h| Tokens {
        input,
        output,
        cache_read,
        cache_write_1h,
        ..Tokens::default()
    };
    let codex = Tokens {
        reasoning: 1_200,
        ..t(20_000, 3_000, 100_000, 0)
    };
    Data {
        slots: vec![
            slot(
                "2026-11-28T09:00:00Z",
                Agent::Codex,
                ("gpt-5.5", "/home/dev/beta", THREAD),
                1,
                ("2026-11-28T09:00:00Z", "2026-11-28T09:00:00Z"),
                codex,
                75,
            ),
            slot(
                "2026-11-29T10:00:00Z",
                Agent::Claude,
                ("claude-opus-4-6", "/home/dev/alpha", SESSION),
                2,
                ("2026-11-29T10:01:00Z", "2026-11-29T10:14:00Z"),
                t(1_000, 2_000, 1_000_000, 10_000),
                125,
            ),
            slot(
                "2026-11-29T11:30:00Z",
                Agent::Claude,
                ("claude-opus-4-6", "/home/dev/alpha/web", SESSION),
                1,
                ("2026-11-29T11:31:00Z", "2026-11-29T11:31:00Z"),
                t(500, 500, 0, 0),
                50,
            ),
        ],
        zone: crate::base::tz::Zone::utc(),
        now: at(NOW),
        generated_at: Some(at(NOW)),
        refresh: "idle",
        coverage: json::parse(
            r#"{"claude":{"files_seen":2},"codex":{"files_seen":1,"files_compressed":0},"partial":false}"#,
        )
        .unwrap(),
        limits: vec![
            (Agent::Claude, json::parse(r#"{"state":"disabled"}"#).unwrap()),
            (
                Agent::Codex,
                json::parse(&format!(
                    r#"{{"state":"ok","windows":[{{"id":"primary","window_minutes":300,"used_percent":12.5,"resets_at":{}}},{{"id":"secondary","window_minutes":10080,"used_percent":33,"resets_at":{}}}]}}"#,
                    at("2026-11-29T14:30:00Z"),
                    at("2026-12-02T12:00:00Z")
                ))
                .unwrap(),
            ),
        ],
    }
}

fn request() -> Request {
    let today = parse_date("2026-11-29").unwrap();
    Request::new(None, None, None, None, false, today).unwrap()
}

fn text(view: View, width: usize) -> Vec<String> {
    let format = Format::Text(Style {
        width,
        color: false,
        glyphs: crate::usage::views::picture::Glyphs::Unicode,
    });
    render(&data(), &request(), view, format)
        .lines()
        .map(str::to_string)
        .collect()
}

fn rule(n: usize) -> String {
    "─".repeat(n)
}

#[test]
fn daily_at_160_columns() {
    assert_eq!(
        text(View::Period(Period::Day), 160),
        [
            "Daily usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Date        Models            Input  Output  Cache write  Cache read      Total   Cost".to_string(),
            // Each day's cost against the costliest's in a 10-cell bar:
            // $0.75 / $1.75 of 80 eighths is 34.3, so 34 (4 cells and 2
            // eighths); 11-29 is the costliest.
            format!("2026-11-28  gpt-5.5          20,000   3,000            0     100,000    123,000  $0.75  {}▎{}", "█".repeat(4), "░".repeat(5)),
            format!("2026-11-29  claude-opus-4-6   1,500   2,500       10,000   1,000,000  1,014,000  $1.75  {}", "█".repeat(10)),
            rule(98),
            "Total                        21,500   5,500       10,000   1,100,000  1,137,000  $2.50".to_string(),
        ]
    );
}

#[test]
fn daily_at_80_columns_drops_the_cache_writes() {
    assert_eq!(
        text(View::Period(Period::Day), 80),
        [
            "Daily usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Date        Models            Input  Output  Cache read      Total   Cost".to_string(),
            "2026-11-28  gpt-5.5          20,000   3,000     100,000    123,000  $0.75".to_string(),
            "2026-11-29  claude-opus-4-6   1,500   2,500   1,000,000  1,014,000  $1.75".to_string(),
            rule(73),
            "Total                        21,500   5,500   1,100,000  1,137,000  $2.50".to_string(),
            "Hidden to fit 80 columns: Cache write, Cost bar.".to_string(),
        ]
    );
}

#[test]
fn ascii_glyphs_draw_the_daily_bars_in_whole_cells() {
    let format = Format::Text(Style {
        width: 160,
        color: false,
        glyphs: crate::usage::views::picture::Glyphs::Ascii,
    });
    let text = render(&data(), &request(), View::Period(Period::Day), format);
    let lines: Vec<&str> = text.lines().collect();
    // $0.75 / $1.75 of 10 cells is 4.3, so 4.
    assert!(lines[2].ends_with("$0.75  ####......"), "{text}");
    assert!(lines[3].ends_with("$1.75  ##########"), "{text}");
}

#[test]
fn weekly_at_160_columns() {
    assert_eq!(
        text(View::Period(Period::Week), 160),
        [
            "Weekly usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Week of     Models                     Input  Output  Cache write  Cache read      Total   Cost".to_string(),
            "2026-11-23  claude-opus-4-6, gpt-5.5  21,500   5,500       10,000   1,100,000  1,137,000  $2.50".to_string(),
            rule(95),
            "Total                                 21,500   5,500       10,000   1,100,000  1,137,000  $2.50".to_string(),
        ]
    );
}

#[test]
fn weekly_at_80_columns() {
    assert_eq!(
        text(View::Period(Period::Week), 80),
        [
            "Weekly usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Week of     Models                   Input  Output  Cache read      Total   Cost"
                .to_string(),
            "2026-11-23  claude-opus-4-6, gpt-…  21,500   5,500   1,100,000  1,137,000  $2.50"
                .to_string(),
            rule(80),
            "Total                               21,500   5,500   1,100,000  1,137,000  $2.50"
                .to_string(),
            "Hidden to fit 80 columns: Cache write.".to_string(),
        ]
    );
}

#[test]
fn monthly_at_160_columns() {
    assert_eq!(
        text(View::Period(Period::Month), 160),
        [
            "Monthly usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Month    Models                     Input  Output  Cache write  Cache read      Total   Cost".to_string(),
            "2026-11  claude-opus-4-6, gpt-5.5  21,500   5,500       10,000   1,100,000  1,137,000  $2.50".to_string(),
            rule(92),
            "Total                              21,500   5,500       10,000   1,100,000  1,137,000  $2.50".to_string(),
        ]
    );
}

#[test]
fn monthly_at_80_columns() {
    assert_eq!(
        text(View::Period(Period::Month), 80),
        [
            "Monthly usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Month    Models                     Input  Output  Cache read      Total   Cost"
                .to_string(),
            "2026-11  claude-opus-4-6, gpt-5.5  21,500   5,500   1,100,000  1,137,000  $2.50"
                .to_string(),
            rule(79),
            "Total                              21,500   5,500   1,100,000  1,137,000  $2.50"
                .to_string(),
            "Hidden to fit 80 columns: Cache write.".to_string(),
        ]
    );
}

#[test]
fn models_at_160_columns() {
    assert_eq!(
        text(View::Models, 160),
        [
            "Model usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Agent   Model             Input  Output  Cache write  Cache read      Total   Cost"
                .to_string(),
            "claude  claude-opus-4-6   1,500   2,500       10,000   1,000,000  1,014,000  $1.75"
                .to_string(),
            "codex   gpt-5.5          20,000   3,000            0     100,000    123,000  $0.75"
                .to_string(),
            rule(82),
            "Total                    21,500   5,500       10,000   1,100,000  1,137,000  $2.50"
                .to_string(),
        ]
    );
}

#[test]
fn models_at_80_columns() {
    assert_eq!(
        text(View::Models, 80),
        [
            "Model usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Agent   Model             Input  Output  Cache read      Total   Cost".to_string(),
            "claude  claude-opus-4-6   1,500   2,500   1,000,000  1,014,000  $1.75".to_string(),
            "codex   gpt-5.5          20,000   3,000     100,000    123,000  $0.75".to_string(),
            rule(69),
            "Total                    21,500   5,500   1,100,000  1,137,000  $2.50".to_string(),
            "Hidden to fit 80 columns: Cache write.".to_string(),
        ]
    );
}

#[test]
fn dirs_at_160_columns() {
    assert_eq!(
        text(View::Dirs, 160),
        [
            "Directory usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Directory            Agents   Input  Output  Cache write  Cache read      Total   Cost".to_string(),
            "/home/dev/alpha      claude   1,000   2,000       10,000   1,000,000  1,013,000  $1.25".to_string(),
            "/home/dev/beta       codex   20,000   3,000            0     100,000    123,000  $0.75".to_string(),
            "/home/dev/alpha/web  claude     500     500            0           0      1,000  $0.50".to_string(),
            rule(86),
            "Total                        21,500   5,500       10,000   1,100,000  1,137,000  $2.50".to_string(),
        ]
    );
}

#[test]
fn dirs_at_80_columns() {
    assert_eq!(
        text(View::Dirs, 80),
        [
            "Directory usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Directory            Agents   Input  Output  Cache read      Total   Cost".to_string(),
            "/home/dev/alpha      claude   1,000   2,000   1,000,000  1,013,000  $1.25".to_string(),
            "/home/dev/beta       codex   20,000   3,000     100,000    123,000  $0.75".to_string(),
            "/home/dev/alpha/web  claude     500     500           0      1,000  $0.50".to_string(),
            rule(73),
            "Total                        21,500   5,500   1,100,000  1,137,000  $2.50".to_string(),
            "Hidden to fit 80 columns: Cache write.".to_string(),
        ]
    );
}

#[test]
fn session_at_160_columns() {
    // B and C are one session (two directories, the one with more
    // tokens first): 1,000 + 500 input, 2,000 + 500 output, 10,000
    // written, 1,000,000 read, $1.25 + $0.50, from 10:01 to 11:31.
    assert_eq!(
        text(View::Session, 160),
        [
            "Session usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Last active       Session    Agent   Started           Directory                      Models            Input  Output  Cache write  Cache read      Total   Cost".to_string(),
            "2026-11-29 11:31  …1f0b6d48  claude  2026-11-29 10:01  /home/dev/alpha, /home/dev/a…  claude-opus-4-6   1,500   2,500       10,000   1,000,000  1,014,000  $1.75".to_string(),
            "2026-11-28 09:00  …2b7d9e11  codex   2026-11-28 09:00  /home/dev/beta                 gpt-5.5          20,000   3,000            0     100,000    123,000  $0.75".to_string(),
            rule(160),
            "Total                                                                                                  21,500   5,500       10,000   1,100,000  1,137,000  $2.50".to_string(),
        ]
    );
}

#[test]
fn session_at_80_columns_says_which_columns_it_hid() {
    assert_eq!(
        text(View::Session, 80),
        [
            "Session usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Last active       Session    Agent   Directory                      Total   Cost"
                .to_string(),
            "2026-11-29 11:31  …1f0b6d48  claude  /home/dev/alpha, /home/d…  1,014,000  $1.75"
                .to_string(),
            "2026-11-28 09:00  …2b7d9e11  codex   /home/dev/beta               123,000  $0.75"
                .to_string(),
            rule(80),
            "Total                                                           1,137,000  $2.50"
                .to_string(),
            // The note is 82 characters: wrapped at its last space within 80.
            "Hidden to fit 80 columns: Started, Models, Input, Output, Cache write, Cache"
                .to_string(),
            "read.".to_string(),
        ]
    );
}

/// The summary's pictures of `data()`, worked out by hand: Codex's 5h
/// window at 12.5% fills 20 of a 20-cell bar's 160 eighths (two cells and
/// a half, shown as 13%), its 7d window at 33% 52.8, so 53 (six cells and
/// five eighths). The sparkline's 30 days run from 10-31: $0.75 on 11-28
/// (0.75 / 1.75 of 8 heights is 3.4, so the 4th) and $1.75 on 11-29 (the
/// tallest). Labels are padded to "Cost, 30 days" (13 characters).
fn summary_pictures() -> [String; 3] {
    let bar = |full: usize, part: &str, track: usize| {
        format!("{}{part}{}", "█".repeat(full), "░".repeat(track))
    };
    [
        format!(
            "Codex 5h       {}  13% used, resets 14:30 (in 2h 30m)",
            bar(2, "▌", 17)
        ),
        format!(
            "Codex 7d       {}  33% used, resets 2026-12-02 12:00 (in 3d 0h)",
            bar(6, "▋", 13)
        ),
        format!(
            "Cost, 30 days  {}▄█  $2.50 in all, $1.75 on the costliest day",
            " ".repeat(28)
        ),
    ]
}

#[test]
fn summary_at_160_columns() {
    assert_eq!(
        text(View::Summary, 160),
        [
            "Usage in UTC; as of 12:00".to_string(),
            "Agent        Today     tokens  7 days     tokens  30 days     tokens".to_string(),
            "Claude Code  $1.75  1,014,000   $1.75  1,014,000    $1.75  1,014,000".to_string(),
            "Codex        $0.00          0   $0.75    123,000    $0.75    123,000".to_string(),
            rule(68),
            "All          $1.75  1,014,000   $2.50  1,137,000    $2.50  1,137,000".to_string(),
            summary_pictures()[0].clone(),
            summary_pictures()[1].clone(),
            summary_pictures()[2].clone(),
            "Coverage: Claude Code 2 files, Codex 1 file.".to_string(),
        ]
    );
}

#[test]
fn summary_at_80_columns_wraps_its_rows_under_their_pictures() {
    // The 7d row is 15 + 20 + 2 + 46 = 83 characters and the sparkline's
    // 15 + 30 + 2 + 40 = 87: each is broken at its last space within 80
    // and goes on under its picture (the labels' 13 characters and 2).
    let under = " ".repeat(15);
    let seven = &summary_pictures()[1];
    let spark = &summary_pictures()[2];
    let lines = text(View::Summary, 80);
    assert_eq!(
        lines,
        [
            "Usage in UTC; as of 12:00".to_string(),
            "Agent        Today     tokens  7 days     tokens  30 days     tokens".to_string(),
            "Claude Code  $1.75  1,014,000   $1.75  1,014,000    $1.75  1,014,000".to_string(),
            "Codex        $0.00          0   $0.75    123,000    $0.75    123,000".to_string(),
            rule(68),
            "All          $1.75  1,014,000   $2.50  1,137,000    $2.50  1,137,000".to_string(),
            summary_pictures()[0].clone(),
            seven.strip_suffix(" 0h)").unwrap().to_string(),
            format!("{under}0h)"),
            spark.strip_suffix(" costliest day").unwrap().to_string(),
            format!("{under}costliest day"),
            "Coverage: Claude Code 2 files, Codex 1 file.".to_string(),
        ]
    );
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:#?}");
}

#[test]
fn blocks_at_160_columns() {
    assert_eq!(
        text(View::Blocks, 160),
        [
            "5-hour block usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Block start       Agent   Status               Requests      Total   Cost  Burn/h".to_string(),
            "2026-11-28 09:00  codex   ended                       1    123,000  $0.75".to_string(),
            "2026-11-29 10:00  claude  active, 3h 00m left         3  1,014,000  $1.75   $1.17".to_string(),
            "Active claude block 10:00–15:00: 1,014,000 tokens, $1.75; burning $1.17/h, projected $5.25 and 3,042,000 tokens at 15:00.".to_string(),
        ]
    );
}

#[test]
fn blocks_at_80_columns_drop_the_request_count() {
    assert_eq!(
        text(View::Blocks, 80),
        [
            "5-hour block usage, 2026-10-31 to 2026-11-29 (UTC); as of 12:00".to_string(),
            "Block start       Agent   Status                   Total   Cost  Burn/h".to_string(),
            "2026-11-28 09:00  codex   ended                  123,000  $0.75".to_string(),
            "2026-11-29 10:00  claude  active, 3h 00m left  1,014,000  $1.75   $1.17".to_string(),
            "Hidden to fit 80 columns: Requests.".to_string(),
            "Active claude block 10:00–15:00: 1,014,000 tokens, $1.75; burning $1.17/h, projected $5.25 and 3,042,000 tokens at 15:00.".to_string(),
        ]
    );
}

#[test]
fn statusline_is_today_burn_rate_and_tightest_limit() {
    assert_eq!(
        text(View::Statusline, 80),
        ["$1.75 today · $1.17/h · codex 7d 33%"]
    );
}

#[test]
fn a_cold_statusline_says_scanning_not_zero_dollars() {
    // Before the first refresh has written a cache there is nothing to
    // sum: no "$0.00 today".
    let mut cold = data();
    cold.slots.clear();
    cold.generated_at = None;
    assert_eq!(statusline(&cold, &request()), "usage: scanning…");
}

fn doc(view: View, req: &Request, data: &Data) -> Value {
    json::parse(render(data, req, view, Format::Json).trim_end()).unwrap()
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().iter().map(|(k, _)| k).collect()
}

const TOTALS: [&str; 11] = [
    "requests",
    "input",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "output",
    "reasoning",
    "total",
    "cost_usd",
    "unpriced_tokens",
    "unpriced_requests",
];

const HEADER: [&str; 10] = [
    "v",
    "view",
    "now",
    "generated_at",
    "tz",
    "refresh",
    "since",
    "until",
    "agent",
    "dir",
];

#[test]
fn every_json_document_is_versioned_and_names_its_view() {
    for view in [
        View::Summary,
        View::Period(Period::Day),
        View::Period(Period::Week),
        View::Period(Period::Month),
        View::Session,
        View::Blocks,
        View::Models,
        View::Dirs,
    ] {
        let d = doc(view, &request(), &data());
        assert_eq!(&keys(&d)[..10], HEADER, "{view:?}");
        assert_eq!(d.get("v").and_then(Value::as_i64), Some(1));
        assert_eq!(d.get("view").and_then(Value::as_str), Some(view.name()));
    }
}

#[test]
fn the_daily_document_has_rows_with_totals() {
    let d = doc(View::Period(Period::Day), &request(), &data());
    assert_eq!(keys(&d)[10..], ["rows", "totals", "unpriced_models"]);
    assert_eq!(d.get("unpriced_models"), Some(&Value::Array(Vec::new())));
    let rows = d.get("rows").unwrap().as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(keys(&rows[1]), ["period", "models", "totals"]);
    let t = rows[1].get("totals").unwrap();
    assert_eq!(keys(t), TOTALS);
    assert_eq!(t.get("total").and_then(Value::as_i64), Some(1_014_000));
    assert_eq!(t.get("cost_usd").and_then(Value::as_f64), Some(1.75));
    assert_eq!(t.get("requests").and_then(Value::as_i64), Some(3));
    let all = d.get("totals").unwrap();
    assert_eq!(all.get("total").and_then(Value::as_i64), Some(1_137_000));
    // --breakdown adds each row's models.
    let req = Request {
        breakdown: true,
        ..request()
    };
    let d = doc(View::Period(Period::Day), &req, &data());
    let rows = d.get("rows").unwrap().as_array().unwrap();
    let models = rows[0].get("models").unwrap().as_array().unwrap();
    assert_eq!(keys(&models[0]), ["agent", "model", "totals"]);
}

#[test]
fn the_summary_document_has_windows_limits_and_coverage() {
    let d = doc(View::Summary, &request(), &data());
    assert_eq!(
        keys(&d)[10..],
        ["windows", "limits", "coverage", "unpriced_models"]
    );
    let w = d.get("windows").unwrap();
    assert_eq!(keys(w), ["today", "d7", "d30"]);
    let total = |w: &str, a: &str| {
        d.get("windows")
            .and_then(|x| x.get(w))
            .and_then(|x| x.get(a))
            .and_then(|x| x.get("total"))
            .and_then(Value::as_i64)
    };
    assert_eq!(total("today", "claude"), Some(1_014_000));
    assert_eq!(total("today", "codex"), Some(0));
    assert_eq!(total("d7", "all"), Some(1_137_000));
    assert_eq!(keys(d.get("limits").unwrap()), ["claude", "codex"]);
}

#[test]
fn csv_has_one_header_and_raw_numbers() {
    let csv = render(&data(), &request(), View::Period(Period::Day), Format::Csv);
    assert_eq!(
        csv,
        "period,models,requests,input,output,reasoning,cache_write_5m,cache_write_1h,cache_read,total,cost_usd,unpriced_requests,unpriced_tokens\r\n\
         2026-11-28,gpt-5.5,1,20000,3000,1200,0,0,100000,123000,0.75,0,0\r\n\
         2026-11-29,claude-opus-4-6,3,1500,2500,0,0,10000,1000000,1014000,1.75,0,0\r\n"
    );
    let req = Request {
        breakdown: true,
        ..request()
    };
    let csv = render(&data(), &req, View::Dirs, Format::Csv);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("directory,agents,agent,model,requests,"));
    assert!(lines[1].starts_with("/home/dev/alpha,claude,claude,claude-opus-4-6,2,1000,"));
    let csv = render(&data(), &request(), View::Blocks, Format::Csv);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[2].starts_with("claude,2026-11-29T10:00:00Z,2026-11-29T15:00:00Z,true,3,"));
    assert!(lines[2].ends_with(",1.75,0,0,1.166667"));
}

#[test]
fn a_known_five_hour_limit_gives_the_projected_percentage() {
    let mut data = data();
    data.limits[0].1 = json::parse(
        r#"{"state":"ok","windows":[{"id":"five_hour","window_minutes":300,"used_percent":20,"resets_at":null}]}"#,
    )
    .unwrap();
    let d = doc(View::Blocks, &request(), &data);
    let blocks = d.get("blocks").unwrap().as_array().unwrap();
    let active = &blocks[1];
    assert_eq!(active.get("active"), Some(&Value::Bool(true)));
    // $1.75 now, $1.75/1.5 h over the 3 h left: $5.25, three times
    // the cost so far, so 20% becomes 60%.
    assert_eq!(
        active.get("projected_cost_usd").and_then(Value::as_f64),
        Some(5.25)
    );
    assert_eq!(
        active.get("projected_percent").and_then(Value::as_f64),
        Some(60.0)
    );
    assert_eq!(
        active.get("projected_tokens").and_then(Value::as_i64),
        Some(3_042_000)
    );
    assert_eq!(blocks[0].get("projected_percent"), Some(&Value::Null));
    let lines = render(
        &data,
        &request(),
        View::Blocks,
        Format::Text(Style {
            width: 160,
            color: false,
            glyphs: crate::usage::views::picture::Glyphs::Unicode,
        }),
    );
    assert!(
        lines.contains("; 5h limit 20% used, projected 60%."),
        "{lines}"
    );
    let line = statusline(&data, &request());
    assert_eq!(line, "$1.75 today · $1.17/h · codex 7d 33%");
}

#[test]
fn agent_and_directory_filters_apply_to_every_row() {
    let today = parse_date("2026-11-29").unwrap();
    let req = Request::new(
        None,
        None,
        Some("claude"),
        Some("/home/dev/alpha"),
        false,
        today,
    )
    .unwrap();
    let d = doc(View::Dirs, &req, &data());
    let rows = d.get("rows").unwrap().as_array().unwrap();
    let dirs: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.get("directory").and_then(Value::as_str))
        .collect();
    assert_eq!(dirs, ["/home/dev/alpha", "/home/dev/alpha/web"]);
    let req = Request::new(
        Some("2026-11-28"),
        Some("2026-11-28"),
        None,
        None,
        false,
        today,
    )
    .unwrap();
    let d = doc(View::Models, &req, &data());
    assert_eq!(
        d.get("totals")
            .and_then(|t| t.get("total"))
            .and_then(Value::as_i64),
        Some(123_000)
    );
}

#[test]
fn the_output_column_is_output_and_the_columns_add_up_to_total() {
    // A Codex call of output 100, 40 of it reasoning: Output 100, and
    // 10 + 100 + 5 + 20 = 135 = Total.
    let acc = SlotAcc {
        requests: 1,
        tokens: Tokens {
            input: 10,
            output: 100,
            reasoning: 40,
            cache_write_5m: 5,
            cache_read: 20,
            ..Tokens::default()
        },
        cost_pico: 10_000_000_000,
        ..SlotAcc::default()
    };
    assert_eq!(
        token_cells(&acc),
        ["10", "100", "5", "20", "135", "$0.01"].map(String::from)
    );
    // Every row of every table at full width adds up the same way.
    let number = |c: &str| c.replace(',', "").parse::<u64>().unwrap();
    for view in [
        View::Period(Period::Day),
        View::Period(Period::Week),
        View::Period(Period::Month),
        View::Session,
        View::Models,
        View::Dirs,
    ] {
        let lines = text(view, 400);
        for line in lines.iter().skip(2).filter(|l| !l.starts_with('─')) {
            // The daily view's last cell is its cost bar.
            let is_bar = |c: &str| c.chars().all(|ch| "█▉▊▋▌▍▎▏░".contains(ch));
            let cells: Vec<&str> = line.split_whitespace().filter(|c| !is_bar(c)).collect();
            let n = cells.len();
            let parts: u64 = cells[n - 6..n - 2].iter().map(|c| number(c)).sum();
            assert_eq!(parts, number(cells[n - 2]), "{view:?}: {line}");
        }
    }
}

/// The fixture with two more requests in slot C's directory on 11-29:
/// one of a model without a price (`mystery-1`, 700 tokens) and, in a
/// slot of its own, one of another (`mystery-2`, 300 tokens) beside
/// a priced request ($0.25, 100 tokens).
fn data_with_unpriced() -> Data {
    let mut data = data();
    let tokens = |input| Tokens {
        input,
        ..Tokens::default()
    };
    let (model, cwd) = ("mystery-1", "/home/dev/alpha/web");
    let mut none = slot(
        "2026-11-29T11:45:00Z",
        Agent::Claude,
        (model, cwd, SESSION),
        1,
        ("2026-11-29T11:46:00Z", "2026-11-29T11:46:00Z"),
        tokens(700),
        0,
    );
    none.1.unpriced_requests = 1;
    none.1.unpriced_tokens = 700;
    let mut some = slot(
        "2026-11-29T11:45:00Z",
        Agent::Claude,
        ("mystery-2", cwd, SESSION),
        2,
        ("2026-11-29T11:47:00Z", "2026-11-29T11:48:00Z"),
        tokens(400),
        25,
    );
    some.1.unpriced_requests = 1;
    some.1.unpriced_tokens = 300;
    data.slots.extend([none, some]);
    data
}

#[test]
fn unpriced_models_are_named_and_never_shown_as_free() {
    let data = data_with_unpriced();
    let style = Format::Text(Style {
        width: 160,
        color: false,
        glyphs: crate::usage::views::picture::Glyphs::Unicode,
    });
    let models = render(&data, &request(), View::Models, style);
    let lines: Vec<&str> = models.lines().collect();
    // Costs: Opus $1.75; mystery-2 $0.25 of its priced request only;
    // mystery-1 none at all; the total, $2.75, is a lower bound.
    let cost = |model: &str| {
        let mut rows = lines.iter().skip(2);
        let line = rows
            .find(|l| l.starts_with(model) || l.contains(&format!(" {model} ")))
            .unwrap();
        line.split_whitespace().last().unwrap().to_string()
    };
    assert_eq!(cost("claude-opus-4-6"), "$1.75");
    assert_eq!(cost("mystery-2"), "$0.25+");
    assert_eq!(cost("mystery-1"), "—");
    assert_eq!(cost("Total"), "$2.75+");
    assert_eq!(
        lines.last().copied(),
        Some("No price for mystery-1, mystery-2: 2 requests (1,000 tokens) are not in the costs.")
    );
    // The day's row and the statusline say the same: 1,000 + 500 +
    // 700 + 400 input, 1,014,000 + 1,100 tokens, $1.75 + $0.25 and
    // more; over 10:01 to 11:48 (107 minutes), $1.12 an hour.
    let daily = render(&data, &request(), View::Period(Period::Day), style);
    assert!(
        daily.contains("  2,600   2,500       10,000   1,000,000  1,015,100  $2.00+"),
        "{daily}"
    );
    assert_eq!(
        statusline(&data, &request()),
        "$2.00+ today · $1.12/h · codex 7d 33%"
    );
    // A script finds the models by name in every document.
    for view in [View::Summary, View::Models, View::Blocks, View::Session] {
        let d = doc(view, &request(), &data);
        let list = d.get("unpriced_models").and_then(Value::as_array).unwrap();
        let named: Vec<(&str, &str, i64, i64)> = list
            .iter()
            .map(|m| {
                let n = |k: &str| m.get(k).and_then(Value::as_i64).unwrap();
                let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap();
                (
                    s("agent"),
                    s("model"),
                    n("unpriced_requests"),
                    n("unpriced_tokens"),
                )
            })
            .collect();
        assert_eq!(
            named,
            [
                ("claude", "mystery-1", 1, 700),
                ("claude", "mystery-2", 1, 300)
            ],
            "{view:?}"
        );
    }
    // Without them, nothing is said.
    assert!(!text(View::Models, 160).iter().any(|l| l.contains("price")));
}

/// Two sessions in one slot, model and directory (`s-1` at 10:05 and
/// 10:10, `s-2` at 10:07), `s-1` again the next day, and a request
/// whose transcript names no session.
fn two_sessions() -> Data {
    let tokens = |input| Tokens {
        input,
        ..Tokens::default()
    };
    let (opus, dir) = ("claude-opus-4-6", "/w");
    let mut data = data();
    data.slots = vec![
        slot(
            "2026-11-28T10:00:00Z",
            Agent::Claude,
            (opus, dir, "s-1"),
            2,
            ("2026-11-28T10:05:00Z", "2026-11-28T10:10:00Z"),
            tokens(100),
            10,
        ),
        slot(
            "2026-11-28T10:00:00Z",
            Agent::Claude,
            (opus, dir, "s-2"),
            1,
            ("2026-11-28T10:07:00Z", "2026-11-28T10:07:00Z"),
            tokens(20),
            2,
        ),
        slot(
            "2026-11-28T10:00:00Z",
            Agent::Claude,
            (opus, "/old", ""),
            1,
            ("2026-11-28T10:01:00Z", "2026-11-28T10:01:00Z"),
            tokens(3),
            1,
        ),
        slot(
            "2026-11-29T09:00:00Z",
            Agent::Claude,
            (opus, dir, "s-1"),
            1,
            ("2026-11-29T09:01:00Z", "2026-11-29T09:01:00Z"),
            tokens(4000),
            40,
        ),
    ];
    data
}

#[test]
fn sessions_are_rows_of_their_own_and_dates_filter_them_like_any_view() {
    let data = two_sessions();
    let rows = |req: &Request| {
        let d = doc(View::Session, req, &data);
        d.get("rows")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|r| {
                let session = r.get("session").and_then(Value::as_str).unwrap_or("-");
                let dir = r.get("directory").and_then(Value::as_str).unwrap();
                let totals = r.get("totals").unwrap();
                let n = |k: &str| totals.get(k).and_then(Value::as_i64).unwrap();
                (
                    session.to_string(),
                    dir.to_string(),
                    n("requests"),
                    n("input"),
                )
            })
            .collect::<Vec<_>>()
    };
    let row = |s: &str, d: &str, requests, input| (s.to_string(), d.to_string(), requests, input);
    // The latest first: s-1 (10:10 and the next day), s-2, then the
    // request without a session, in its directory.
    assert_eq!(
        rows(&request()),
        [
            row("s-1", "/w", 3, 4100),
            row("s-2", "/w", 1, 20),
            row("-", "/old", 1, 3)
        ]
    );
    // --since the second day: only s-1's request of that day.
    let today = parse_date("2026-11-29").unwrap();
    let since = Request::new(Some("2026-11-29"), None, None, None, false, today).unwrap();
    assert_eq!(rows(&since), [row("s-1", "/w", 1, 4000)]);
    // --until the first day: s-1 without its second day.
    let until = Request::new(None, Some("2026-11-28"), None, None, false, today).unwrap();
    assert_eq!(rows(&until)[0], row("s-1", "/w", 2, 100));
    // The directory view still has one row for /w, all sessions summed.
    let d = doc(View::Dirs, &request(), &data);
    let first = &d.get("rows").and_then(Value::as_array).unwrap()[0];
    assert_eq!(first.get("directory").and_then(Value::as_str), Some("/w"));
    let input = first.get("totals").and_then(|t| t.get("input"));
    assert_eq!(input.and_then(Value::as_i64), Some(4120));
    // The table names a session by the end of its id; CSV whole.
    let style = Format::Text(Style {
        width: 200,
        color: false,
        glyphs: crate::usage::views::picture::Glyphs::Unicode,
    });
    let table = render(&data, &request(), View::Session, style);
    assert!(table.lines().nth(4).unwrap().contains("  —  "), "{table}");
    let csv = render(&data, &request(), View::Session, Format::Csv);
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with("2026-11-29 09:01,s-1,claude,")
    );
    let full = render(
        &super::tests::data(),
        &request(),
        View::Session,
        Format::Csv,
    );
    assert!(full.contains(&format!(",{SESSION},claude,")), "{full}");
    assert_eq!(short_session(SESSION), "…1f0b6d48");
}

#[test]
fn the_session_table_lists_the_latest_fifty_and_totals_them_all() {
    // 60 sessions, session n with n + 1 input tokens at 10:00 + n
    // minutes: the table lists sessions 59 down to 10, the total counts
    // every token (1 + 2 + … + 60 = 1,830) and says 10 are not
    // listed; --all, JSON and CSV list all 60.
    let mut data = data();
    data.slots = (0..60u64)
        .map(|n| {
            let minute = format!("2026-11-28T10:{:02}:00Z", n);
            slot(
                "2026-11-28T10:00:00Z",
                Agent::Claude,
                ("claude-opus-4-6", "/w", &format!("s-{n:02}")),
                1,
                (&minute, &minute),
                Tokens {
                    input: n + 1,
                    ..Tokens::default()
                },
                1,
            )
        })
        .collect();
    data.slots.sort_by(|a, b| a.0.cmp(&b.0));
    let style = Format::Text(Style {
        width: 250,
        color: false,
        glyphs: crate::usage::views::picture::Glyphs::Unicode,
    });
    let table = render(&data, &request(), View::Session, style);
    let listed: Vec<&str> = table.lines().filter(|l| l.contains(" s-")).collect();
    assert_eq!(listed.len(), 50, "{table}");
    assert!(listed[0].contains(" s-59 ") && listed[49].contains(" s-10 "));
    let total = table.lines().find(|l| l.starts_with("Total")).unwrap();
    assert!(total.contains("1,830"), "{total}");
    assert!(
        table.contains("10 earlier sessions are in the total but not listed: --all lists them."),
        "{table}"
    );
    let all = Request {
        all: true,
        ..request()
    };
    let every = render(&data, &all, View::Session, style);
    assert_eq!(every.lines().filter(|l| l.contains(" s-")).count(), 60);
    assert!(!every.contains("not listed"));
    let csv = render(&data, &request(), View::Session, Format::Csv);
    assert_eq!(csv.lines().count(), 61);
    let rows = doc(View::Session, &request(), &data);
    assert_eq!(
        rows.get("rows")
            .and_then(Value::as_array)
            .map(<[Value]>::len),
        Some(60)
    );
}

//! The live screen as lines, a pure function of the cache's data, the
//! request, the window's size and the tab shown: the head (today, 7 and 30
//! days per agent with cost, the active blocks, the limit bars, the
//! 30-day sparkline, coverage), the tab line, the tab's table (the daily,
//! models or dirs view as `heeler usage` prints it, fitted to the rows
//! left) and the keys on the last row. A window smaller than the head
//! needs gets a message saying the size it needs.

use crate::usage::event::Agent;
use crate::usage::views::data::{Data, Period, Request, window_sums};
use crate::usage::views::picture::Glyphs;
use crate::usage::views::render::panels::{self, Row};
use crate::usage::views::render::{self, Format, View, agents_of_request, cost_cell, freshness};
use crate::usage::views::table::{Column, RowKind, Style, Table, cut};

/// The table below the head: `Tab` cycles them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tab {
    Daily,
    Models,
    Dirs,
}

impl Tab {
    /// The tab `Tab` moves to.
    pub(crate) fn next(self) -> Tab {
        match self {
            Tab::Daily => Tab::Models,
            Tab::Models => Tab::Dirs,
            Tab::Dirs => Tab::Daily,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Tab::Daily => "Daily",
            Tab::Models => "Models",
            Tab::Dirs => "Dirs",
        }
    }

    fn view(self) -> View {
        match self {
            Tab::Daily => View::Period(Period::Day),
            Tab::Models => View::Models,
            Tab::Dirs => View::Dirs,
        }
    }
}

/// The narrowest window the screen is laid out for.
pub(crate) const MIN_COLUMNS: usize = 60;
/// The fewest rows of the tab's table shown.
pub(crate) const MIN_TAB_ROWS: usize = 3;
/// The keys, on the last row.
pub(crate) const KEYS: &str = "q close · Tab daily/models/dirs · r refresh";
/// The lines of a daily table besides its days: the title, the header,
/// the rule, the total and a note.
const DAILY_OVERHEAD: usize = 5;

/// The screen for a window of `(rows, columns)`: exactly `rows` lines, none
/// longer than `columns` characters (pure).
pub(crate) fn frame(
    data: &Data,
    req: &Request,
    (rows, columns): (usize, usize),
    tab: Tab,
    glyphs: Glyphs,
) -> Vec<String> {
    let head = head(data, req, columns, glyphs);
    let needed = head.len() + 1 + MIN_TAB_ROWS + 1;
    if columns < MIN_COLUMNS || rows < needed {
        return too_small((columns.max(MIN_COLUMNS), needed), (rows, columns));
    }
    let budget = rows - head.len() - 2;
    let mut lines = head;
    lines.push(tab_line(tab));
    let body = tab_lines(data, req, tab, (columns, budget), glyphs);
    let shown = body.len();
    lines.extend(body);
    lines.extend(std::iter::repeat_n(String::new(), budget - shown));
    lines.push(KEYS.to_string());
    lines.into_iter().map(|l| cut(&l, columns)).collect()
}

/// Everything above the tab line.
pub(crate) fn head(data: &Data, req: &Request, columns: usize, glyphs: Glyphs) -> Vec<String> {
    let agents = agents_of_request(req);
    let mut lines = vec![format!("Usage in {}; {}", data.zone.name, freshness(data))];
    lines.extend(cost_table(data, req, &agents).lines(Style {
        width: columns,
        color: false,
        glyphs,
    }));
    let mut rows: Vec<Row> = panels::active_blocks(data, req)
        .iter()
        .map(|b| panels::block_row(data, b, glyphs))
        .collect();
    if rows.is_empty() {
        lines.push("No active 5-hour block.".into());
    }
    let (limits, states) = panels::limit_rows(data, &agents, glyphs);
    rows.extend(limits);
    rows.push(panels::spark_row(data, req, glyphs));
    lines.extend(panels::lay_out(&rows));
    lines.extend(states);
    lines.push(render::coverage_line(data));
    lines
}

/// Cost today, in 7 and in 30 days per agent, and over all of them.
fn cost_table(data: &Data, req: &Request, agents: &[Agent]) -> Table {
    let sums = window_sums(data, req, agents);
    let mut table = Table {
        columns: vec![
            Column::text("Agent", 0),
            Column::number("Today", 0),
            Column::number("7 days", 0),
            Column::number("30 days", 0),
        ],
        rows: Vec::new(),
    };
    for (i, windows) in sums.iter().enumerate() {
        let (kind, name) = match agents.get(i) {
            Some(agent) => (RowKind::Plain, agent.title()),
            None if agents.len() > 1 => (RowKind::Total, "All"),
            None => continue,
        };
        let mut cells = vec![name.to_string()];
        cells.extend(windows.iter().map(cost_cell));
        table.rows.push((kind, cells));
    }
    table
}

/// `[Daily]  Models  Dirs`, the tab shown in brackets.
fn tab_line(tab: Tab) -> String {
    [Tab::Daily, Tab::Models, Tab::Dirs]
        .iter()
        .map(|&t| {
            if t == tab {
                format!("[{}]", t.title())
            } else {
                format!(" {} ", t.title())
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end()
        .to_string()
}

/// The tab's view as `heeler usage` prints it (plain text), at most
/// `budget` lines: the daily table asks for as many days as fit (30 at
/// most); a longer table is cut, its last line saying how many more.
fn tab_lines(
    data: &Data,
    req: &Request,
    tab: Tab,
    (columns, budget): (usize, usize),
    glyphs: Glyphs,
) -> Vec<String> {
    let today = data.zone.local_day(data.now);
    let days = budget.saturating_sub(DAILY_OVERHEAD).clamp(1, 30) as i64;
    let req = Request {
        since: match tab {
            Tab::Daily => today - (days - 1),
            Tab::Models | Tab::Dirs => today - 29,
        },
        until: today,
        breakdown: false,
        ..req.clone()
    };
    let style = Style {
        width: columns,
        color: false,
        glyphs,
    };
    let text = render::render(data, &req, tab.view(), Format::Text(style));
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.len() > budget {
        let more = lines.len() - (budget - 1);
        lines.truncate(budget - 1);
        lines.push(format!(
            "… {more} more lines; enlarge the window to see them"
        ));
    }
    lines
}

/// The message of a window smaller than the screen needs, wrapped to it.
pub(crate) fn too_small(
    (columns, rows): (usize, usize),
    (have_rows, have_columns): (usize, usize),
) -> Vec<String> {
    let text = format!("Window too small: needs {columns}×{rows}. Enlarge it, or press q to quit.");
    let width = have_columns.max(1);
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(cut(word, width)),
        }
    }
    lines.truncate(have_rows.max(1));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::json;
    use crate::base::tz::Zone;
    use crate::usage::aggregate::{SlotAcc, SlotKey};
    use crate::usage::time::parse_timestamp;

    fn at(text: &str) -> i64 {
        parse_timestamp(text).unwrap()
    }

    /// One slot of `agent` in /w with `requests` from `first` to `last`
    /// costing `cents` in all.
    fn slot(
        agent: Agent,
        first: &str,
        last: &str,
        requests: u64,
        cents: u64,
    ) -> (SlotKey, SlotAcc) {
        let first = at(first);
        (
            (
                first - first % 900,
                agent,
                "m".into(),
                "/w".into(),
                "s".into(),
            ),
            SlotAcc {
                requests,
                cost_pico: cents * 10_000_000_000,
                first_ts: first,
                last_ts: at(last),
                ..SlotAcc::default()
            },
        )
    }

    /// Now is 2026-11-29 12:00 UTC. Claude: $1.00 at 10:00 and $2.00 at
    /// 11:30 today (one block, 10:00 to 15:00), $4.00 on 11-24. Codex:
    /// $0.50 on 11-28 at 20:00 (its block ended at 01:00), $10.00 on 11-09.
    /// Claude's limits: 5h 40% resetting at 15:00, 7d 25% resetting on
    /// 12-01 at 16:00; Codex's are pending.
    fn data() -> Data {
        let now = at("2026-11-29T12:00:00Z");
        let claude = json::parse(&format!(
            r#"{{"state":"ok","windows":[{{"id":"five_hour","window_minutes":300,"used_percent":40,"resets_at":{}}},{{"id":"seven_day","window_minutes":10080,"used_percent":25,"resets_at":{}}}]}}"#,
            now + 3 * 3600,
            now + 2 * 86_400 + 4 * 3600
        ))
        .unwrap();
        let mut slots = vec![
            slot(
                Agent::Codex,
                "2026-11-09T08:00:00Z",
                "2026-11-09T08:00:00Z",
                1,
                1000,
            ),
            slot(
                Agent::Claude,
                "2026-11-24T08:00:00Z",
                "2026-11-24T08:00:00Z",
                1,
                400,
            ),
            slot(
                Agent::Codex,
                "2026-11-28T20:00:00Z",
                "2026-11-28T20:00:00Z",
                1,
                50,
            ),
            slot(
                Agent::Claude,
                "2026-11-29T10:00:00Z",
                "2026-11-29T10:00:00Z",
                1,
                100,
            ),
            slot(
                Agent::Claude,
                "2026-11-29T11:30:00Z",
                "2026-11-29T11:30:00Z",
                1,
                200,
            ),
        ];
        slots.sort_by(|a, b| a.0.cmp(&b.0));
        Data {
            slots,
            zone: Zone::utc(),
            now,
            generated_at: Some(now),
            refresh: "idle",
            coverage: json::Value::Null,
            limits: vec![
                (Agent::Claude, claude),
                (Agent::Codex, json::parse(r#"{"state":"pending"}"#).unwrap()),
            ],
        }
    }

    fn request(data: &Data) -> Request {
        Request::new(None, None, None, None, false, data.zone.local_day(data.now)).unwrap()
    }

    /// The head worked out from `data()`'s slots: Claude $3.00 today, $7.00
    /// in 7 and 30 days; Codex $0.00, $0.50 (11-28), $10.50; all $3.00,
    /// $7.50, $17.50. The block is 2 of its 5 hours gone (8 of 20 cells),
    /// burning $3.00 over the 1.5 hours from 10:00 to 11:30 ($2.00/h), so
    /// $3.00 + 3 h × $2.00 = $9.00 at 15:00; the 5h limit's 40% grows with
    /// the cost to 40 × 9 / 3 = 120%. 25% of 20 cells is 5. The sparkline's
    /// 30 days start on 10-31: $10.00 on day 9 (the tallest), $4.00 on day
    /// 24 (4/10 of 8 heights is 3.2, so the 4th), $0.50 on day 28 (0.4, the
    /// 1st), $3.00 on day 29 (2.4, the 3rd).
    fn expected_head() -> Vec<String> {
        let spark = format!("{}█{}▄   ▁▃", " ".repeat(9), " ".repeat(14));
        vec![
            "Usage in UTC; as of 12:00".to_string(),
            "Agent        Today  7 days  30 days".into(),
            "Claude Code  $3.00   $7.00    $7.00".into(),
            "Codex        $0.00   $0.50   $10.50".into(),
            "─".repeat(35),
            "All          $3.00   $7.50   $17.50".into(),
            format!(
                "Claude Code block  {}{}  10:00–15:00, 3h 00m left",
                "█".repeat(8),
                "░".repeat(12)
            ),
            format!(
                "{}$3.00 so far, $2.00/h, projected $9.00 at 15:00; 5h limit 40% used, projected 120%",
                " ".repeat(19)
            ),
            format!(
                "Claude Code 5h     {}{}  40% used, resets 15:00 (in 3h 00m)",
                "█".repeat(8),
                "░".repeat(12)
            ),
            format!(
                "Claude Code 7d     {}{}  25% used, resets 2026-12-01 16:00 (in 2d 4h)",
                "█".repeat(5),
                "░".repeat(15)
            ),
            format!("Cost, 30 days      {spark}  $17.50 in all, $10.00 on the costliest day"),
            "Limits, Codex: pending".into(),
            "Coverage: Claude Code 0 files, Codex 0 files.".into(),
        ]
    }

    #[test]
    fn the_head_shows_costs_the_block_the_limits_and_the_sparkline() {
        let data = data();
        assert_eq!(
            head(&data, &request(&data), 120, Glyphs::Unicode),
            expected_head()
        );
    }

    #[test]
    fn a_frame_fills_the_window_with_the_tab_s_view_and_the_keys_last() {
        let data = data();
        let req = request(&data);
        let lines = frame(&data, &req, (40, 120), Tab::Daily, Glyphs::Unicode);
        assert_eq!(lines.len(), 40);
        let head = expected_head();
        assert_eq!(lines[..head.len()], head[..]);
        assert_eq!(lines[head.len()], "[Daily]  Models   Dirs");
        assert_eq!(lines[39], KEYS);
        // 40 rows less the head's 13, the tab line and the keys leave 25
        // for the table: its title, header, rule, total and a note take 5,
        // so 20 days fit, from 11-10 (11-09's Codex day is left out).
        let today = data.zone.local_day(data.now);
        let daily = Request {
            since: today - 19,
            ..req.clone()
        };
        let style = Style {
            width: 120,
            color: false,
            glyphs: Glyphs::Unicode,
        };
        let table = render::render(
            &data,
            &daily,
            View::Period(Period::Day),
            Format::Text(style),
        );
        let table: Vec<&str> = table.lines().collect();
        assert!(
            table[0].starts_with("Daily usage, 2026-11-10 to 2026-11-29"),
            "{table:?}"
        );
        let body: Vec<&str> = lines[head.len() + 1..39]
            .iter()
            .map(String::as_str)
            .collect();
        assert_eq!(body[..table.len()], table[..]);
        assert!(body[table.len()..].iter().all(|l| l.is_empty()));

        let models = frame(&data, &req, (40, 120), Tab::Models, Glyphs::Unicode);
        assert_eq!(models[head.len()], " Daily  [Models]  Dirs");
        assert!(models[head.len() + 1].starts_with("Model usage, 2026-10-31 to 2026-11-29"));
    }

    #[test]
    fn a_table_longer_than_the_rows_left_is_cut_and_says_how_much() {
        let data = data();
        let req = request(&data);
        // 13 head rows, the tab line and the keys leave 4 of 19 for the
        // models table (title, header, Claude's and Codex's model, rule,
        // total: 6), so 3 show and the 4th says 3 more.
        let lines = frame(&data, &req, (19, 120), Tab::Models, Glyphs::Unicode);
        assert_eq!(lines.len(), 19);
        assert_eq!(lines[17], "… 3 more lines; enlarge the window to see them");
    }

    #[test]
    fn a_narrow_window_cuts_every_line_to_its_width() {
        let data = data();
        let lines = frame(&data, &request(&data), (30, 60), Tab::Dirs, Glyphs::Unicode);
        assert_eq!(lines.len(), 30);
        assert!(lines.iter().all(|l| l.chars().count() <= 60), "{lines:#?}");
        assert_eq!(
            lines[7],
            format!(
                "{}$3.00 so far, $2.00/h, projected $9.00 a…",
                " ".repeat(19)
            )
        );
    }

    #[test]
    fn a_window_too_small_says_the_size_it_needs() {
        let data = data();
        let req = request(&data);
        // The head's 13 rows, the tab line, 3 table rows and the keys.
        assert_eq!(
            frame(&data, &req, (17, 100), Tab::Daily, Glyphs::Unicode),
            ["Window too small: needs 100×18. Enlarge it, or press q to quit."]
        );
        assert_eq!(
            frame(&data, &req, (40, 59), Tab::Daily, Glyphs::Unicode),
            [
                "Window too small: needs 60×18. Enlarge it, or press q to",
                "quit."
            ]
        );
        assert_eq!(
            frame(&data, &req, (2, 20), Tab::Daily, Glyphs::Unicode),
            ["Window too small:", "needs 60×18. Enlarge"]
        );
        assert_eq!(
            frame(&data, &req, (18, 60), Tab::Daily, Glyphs::Unicode).len(),
            18
        );
    }

    #[test]
    fn ascii_glyphs_draw_the_same_pictures_in_ascii() {
        let data = data();
        let lines = head(&data, &request(&data), 120, Glyphs::Ascii);
        assert_eq!(
            lines[6],
            format!(
                "Claude Code block  {}{}  10:00–15:00, 3h 00m left",
                "#".repeat(8),
                ".".repeat(12)
            )
        );
        assert_eq!(
            lines[9],
            format!(
                "Claude Code 7d     {}{}  25% used, resets 2026-12-01 16:00 (in 2d 4h)",
                "#".repeat(5),
                ".".repeat(15)
            )
        );
        let spark = format!("{}#{}-   .:", " ".repeat(9), " ".repeat(14));
        assert!(
            lines[10].starts_with(&format!("Cost, 30 days      {spark}  ")),
            "{}",
            lines[10]
        );
    }

    #[test]
    fn without_data_the_screen_says_so_and_still_lays_out() {
        let mut data = data();
        data.slots.clear();
        data.limits.clear();
        data.generated_at = None;
        data.refresh = "running";
        let lines = head(&data, &request(&data), 80, Glyphs::Unicode);
        assert_eq!(lines[0], "Usage in UTC; no data yet, refreshing");
        assert!(lines.contains(&"No active 5-hour block.".to_string()));
        assert_eq!(
            lines.last().map(String::as_str),
            Some("Coverage: nothing scanned yet; the first refresh is running.")
        );
        let spark = lines
            .iter()
            .find(|l| l.starts_with("Cost, 30 days"))
            .unwrap();
        assert_eq!(
            spark,
            &format!(
                "Cost, 30 days  {}  $0.00 in all, $0.00 on the costliest day",
                " ".repeat(30)
            )
        );
    }
}

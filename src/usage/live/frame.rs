//! The live screen as lines, a pure function of the cache's data, the
//! request, the window's size, the tab shown and whether to colour: the
//! warnings first, then today's, 7 and 30 days' cost per agent, the active
//! blocks, the limit bars, the 30-day sparkline, coverage, the tab line,
//! the tab's table (the daily, models or dirs view as `heeler usage`
//! prints it, fitted to the rows left) and the keys on the last row.
//!
//! The window decides what is shown, not whether: each part has a
//! priority and the least important parts are left out until the rest
//! fits (`lay_out`), so 80×24 inside herdr's popup (77×22 inside) shows
//! what matters first: the warnings, today's cost, the block and the
//! tightest limit with its projection and reset. Warnings, the block's and
//! the limits' texts are wrapped, never cut. Only a window below
//! [`MIN_COLUMNS`]×[`MIN_ROWS`] gets the "too small" message, naming its
//! real size.

use crate::usage::event::Agent;
use crate::usage::views::data::{Data, Period, Request, selected, window_sums};
use crate::usage::views::picture::{self, Glyphs};
use crate::usage::views::render::panels::{self, Row, Tone};
use crate::usage::views::render::{
    self, Format, View, agents_of_request, cost_cell, freshness, total_cost_cell,
};
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
pub(crate) const MIN_COLUMNS: usize = 40;
/// The fewest rows the screen is laid out for: today's cost (a title, two
/// agents and all), a warning and the keys.
pub(crate) const MIN_ROWS: usize = 8;
/// The fewest rows of the tab's table shown (with the tab line above).
pub(crate) const MIN_TAB_ROWS: usize = 5;
/// The keys, on the last row.
pub(crate) const KEYS: &str = "q close · Tab daily/models/dirs · r refresh";
/// The keys where [`KEYS`] does not fit.
const KEYS_SHORT: &str = "q close · Tab next table · r refresh";
/// The lines of a daily table besides its days: the title, the header,
/// the rule, the total and a note.
const DAILY_OVERHEAD: usize = 5;
/// A bar's width where the window is narrower than [`WIDE`].
const NARROW_BAR: usize = 10;
/// The width from which bars are drawn [`panels::BAR`] cells wide.
const WIDE: usize = 100;

/// SGR sequences of the screen's colours.
const BOLD: &str = "\x1b[1m";
const ALARM: &str = "\x1b[1;31m";
const CAUTION: &str = "\x1b[33m";
const CALM: &str = "\x1b[32m";
const NEUTRAL: &str = "\x1b[36m";
const ACTIVE_TAB: &str = "\x1b[1;7m";
const RESET: &str = "\x1b[0m";

/// One line of the screen: its text and the colours of character ranges
/// (start, end, SGR), drawn only where colour is on.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Line {
    pub(crate) text: String,
    spans: Vec<(usize, usize, &'static str)>,
}

impl Line {
    fn plain(text: impl Into<String>) -> Line {
        Line {
            text: text.into(),
            spans: Vec::new(),
        }
    }

    /// The whole line in `sgr`.
    fn styled(text: impl Into<String>, sgr: &'static str) -> Line {
        let text = text.into();
        let end = text.chars().count();
        Line {
            text,
            spans: vec![(0, end, sgr)],
        }
    }

    /// The line cut to `width` characters, with its colours when `color`.
    fn draw(&self, width: usize, color: bool) -> String {
        let text = cut(&self.text, width);
        if !color || self.spans.is_empty() {
            return text;
        }
        let mut out = String::with_capacity(text.len() + 16 * self.spans.len());
        let mut open = false;
        for (i, c) in text.chars().enumerate() {
            if let Some((_, _, sgr)) = self.spans.iter().find(|(start, _, _)| *start == i) {
                out.push_str(sgr);
                open = true;
            }
            out.push(c);
            if open && self.spans.iter().any(|(_, end, _)| *end == i + 1) {
                out.push_str(RESET);
                open = false;
            }
        }
        // A span the cut ended early: its colour must not run on.
        if open {
            out.push_str(RESET);
        }
        out
    }
}

/// A part of the screen and how much it matters (0 most: never left out).
struct Part {
    priority: u8,
    lines: Vec<Line>,
}

/// The tab's table: how much it matters against the parts.
const TAB_PRIORITY: u8 = 4;

/// The screen for a window of `(rows, columns)`: exactly `rows` lines, none
/// wider than `columns` characters (pure; `color` adds SGR sequences,
/// which take no columns).
pub(crate) fn frame(
    data: &Data,
    req: &Request,
    (rows, columns): (usize, usize),
    tab: Tab,
    glyphs: Glyphs,
    color: bool,
) -> Vec<String> {
    if columns < MIN_COLUMNS || rows < MIN_ROWS {
        return too_small((rows, columns));
    }
    let parts = parts(data, req, columns, glyphs);
    let (kept, tab_rows) = lay_out(&parts, rows - 1);
    let mut lines: Vec<Line> = Vec::with_capacity(rows);
    for (part, keep) in parts.iter().zip(&kept) {
        if *keep {
            lines.extend(part.lines.iter().cloned());
        }
    }
    if let Some(budget) = tab_rows {
        lines.push(tab_line(tab));
        lines.extend(
            tab_lines(data, req, tab, (columns, budget - 1), glyphs)
                .into_iter()
                .map(Line::plain),
        );
    }
    lines.truncate(rows - 1);
    lines.resize(rows - 1, Line::default());
    let keys = if columns >= KEYS.chars().count() {
        KEYS
    } else {
        KEYS_SHORT
    };
    lines.push(Line::plain(keys));
    lines.iter().map(|l| l.draw(columns, color)).collect()
}

/// Which parts fit in `rows` (the keys' row left out), dropping the least
/// important first (the later of equals first), and the rows the tab's
/// table gets (all that are left, its tab line included), when it fits.
fn lay_out(parts: &[Part], rows: usize) -> (Vec<bool>, Option<usize>) {
    let mut kept = vec![true; parts.len()];
    let mut tab = true;
    let used = |kept: &[bool], tab: bool| {
        parts
            .iter()
            .zip(kept)
            .filter(|(_, k)| **k)
            .map(|(p, _)| p.lines.len())
            .sum::<usize>()
            + if tab { 1 + MIN_TAB_ROWS } else { 0 }
    };
    while used(&kept, tab) > rows {
        let least = parts
            .iter()
            .enumerate()
            .filter(|(i, p)| kept[*i] && p.priority > 0)
            .max_by_key(|(i, p)| (p.priority, *i))
            .map(|(i, p)| (i, p.priority));
        match least {
            Some((_, priority)) if tab && TAB_PRIORITY >= priority => tab = false,
            Some((i, _)) => kept[i] = false,
            None if tab => tab = false,
            None => break,
        }
    }
    let left = rows.saturating_sub(used(&kept, false));
    (kept, tab.then_some(left))
}

/// Every part the screen can show, in the order shown.
fn parts(data: &Data, req: &Request, columns: usize, glyphs: Glyphs) -> Vec<Part> {
    let mut parts = head_parts(data, req, columns, glyphs);
    parts.extend(picture_parts(data, req, columns, glyphs));
    parts.push(Part {
        priority: 7,
        lines: vec![Line::plain(render::coverage_line(data))],
    });
    parts
}

/// The title, the warnings and the cost table.
fn head_parts(data: &Data, req: &Request, columns: usize, glyphs: Glyphs) -> Vec<Part> {
    let agents = agents_of_request(data, req);
    let mut parts = Vec::new();
    let mut part = |priority: u8, lines: Vec<Line>| parts.push(Part { priority, lines });
    part(
        2,
        vec![Line::styled(
            format!("Usage in {}; {}", data.zone.name, freshness(data)),
            BOLD,
        )],
    );
    for warning in panels::warnings(data, req, &agents) {
        part(
            0,
            wrap(&glue_countdowns(&warning), columns, 0)
                .into_iter()
                .map(|l| Line::styled(l, ALARM))
                .collect(),
        );
    }
    if data.generated_at.is_none() {
        part(
            0,
            vec![Line::plain(
                "Cost today, 7 and 30 days: scanning… (the first refresh is running)",
            )],
        );
    } else {
        let table = cost_table(data, req, &agents).lines(Style {
            width: columns,
            color: false,
            glyphs,
        });
        for line in table {
            // The rule above the total is decoration.
            let priority = if line.starts_with('─') { 6 } else { 0 };
            part(priority, vec![Line::plain(line)]);
        }
    }
    parts
}

/// The blocks, the limits, the sparkline and the limits' states.
fn picture_parts(data: &Data, req: &Request, columns: usize, glyphs: Glyphs) -> Vec<Part> {
    let agents = agents_of_request(data, req);
    let mut parts = Vec::new();
    let mut part = |priority: u8, lines: Vec<Line>| parts.push(Part { priority, lines });
    let blocks: Vec<Row> = panels::active_blocks(data, req)
        .iter()
        .map(|b| panels::block_row(data, b, glyphs))
        .collect();
    let (limits, states) = panels::limit_rows(data, &agents, glyphs);
    let spark = panels::spark_row(data, req, glyphs);
    let label_width = blocks
        .iter()
        .chain(&limits)
        .chain(std::iter::once(&spark))
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(0);
    let bar = if columns >= WIDE {
        panels::BAR
    } else {
        NARROW_BAR
    };
    let draw = |row: &Row| row_lines(row, label_width, columns, (bar, glyphs));
    if blocks.is_empty() && data.generated_at.is_some() {
        part(3, vec![Line::plain("No active 5-hour block.")]);
    }
    for row in &blocks {
        part(1, draw(row));
    }
    // The tightest limit matters as much as the block; the others less.
    let tightest = limits
        .iter()
        .enumerate()
        .max_by(|a, b| {
            let share = |r: &Row| r.share.unwrap_or(0.0);
            share(a.1).total_cmp(&share(b.1))
        })
        .map(|(i, _)| i);
    for (i, row) in limits.iter().enumerate() {
        part(if Some(i) == tightest { 1 } else { 3 }, draw(row));
    }
    if data.generated_at.is_some() && columns >= label_width + 2 + spark.picture.chars().count() {
        part(5, draw(&spark));
    }
    for state in states {
        part(6, vec![Line::plain(state)]);
    }
    parts
}

/// A picture row as lines: `label  picture  text`, the label padded to
/// `label_width`, the bar drawn `bar` cells wide, and the text and the
/// lines under it wrapped (never cut) to `columns`, continued under the
/// picture (or two columns in, when that leaves too little room).
fn row_lines(
    row: &Row,
    label_width: usize,
    columns: usize,
    (bar, glyphs): (usize, Glyphs),
) -> Vec<Line> {
    let picture = match row.share {
        Some(share) => picture::bar(share, bar, glyphs),
        None => row.picture.clone(),
    };
    let picture_width = picture.chars().count();
    let mut indent = label_width + 2;
    if columns < indent + 24 {
        indent = 2;
    }
    let pad = label_width.saturating_sub(row.label.chars().count());
    let start = format!("{}{}  {}  ", row.label, " ".repeat(pad), picture);
    let at = label_width + 2;
    let sgr = match row.tone {
        Tone::Neutral => NEUTRAL,
        Tone::Calm => CALM,
        Tone::Caution => CAUTION,
        Tone::Alarm => ALARM,
    };
    let first_room = columns.saturating_sub(start.chars().count());
    let mut lines = Vec::new();
    let mut text = wrap(&glue_countdowns(&row.text), columns - indent, first_room).into_iter();
    let first = match text.next() {
        Some(t) if first_room > 0 => format!("{start}{t}"),
        Some(t) => {
            lines.push(start.trim_end().to_string());
            format!("{}{t}", " ".repeat(indent))
        }
        None => start.trim_end().to_string(),
    };
    lines.push(first);
    lines.extend(text.map(|t| format!("{}{t}", " ".repeat(indent))));
    let mut out: Vec<Line> = lines
        .into_iter()
        .map(|t| Line::plain(t.trim_end()))
        .collect();
    if let Some(first) = out.first_mut() {
        first.spans.push((at, at + picture_width, sgr));
    }
    for under in &row.under {
        for t in wrap(&glue_countdowns(under), columns - indent, columns - indent) {
            let line = format!("{}{t}", " ".repeat(indent));
            out.push(if row.tone == Tone::Alarm {
                Line::styled(line, ALARM)
            } else {
                Line::plain(line)
            });
        }
    }
    out
}

/// A no-break space: [`wrap`] never breaks a line there.
const GLUE: char = '\u{a0}';

/// `text` with the spaces of a countdown (`(in 3h 00m)`, `2d 4h`) made
/// no-break, so a wrapped line never splits one.
fn glue_countdowns(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        let unit_before =
            i >= 2 && matches!(chars[i - 1], 'h' | 'd') && chars[i - 2].is_ascii_digit();
        let digit_after = chars.get(i + 1).is_some_and(char::is_ascii_digit);
        let after_in = i >= 3 && chars[i - 3..i] == ['(', 'i', 'n'];
        if c == ' ' && ((unit_before && digit_after) || after_in) {
            out.push(GLUE);
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` in lines of at most `width` characters (the first at most
/// `first`, when that is not zero), broken at spaces (not at [`GLUE`],
/// which comes out as a space); a word longer than a line is split.
/// Nothing is left out.
pub(crate) fn wrap(text: &str, width: usize, first: usize) -> Vec<String> {
    wrap_words(text, width, first)
        .into_iter()
        .map(|line| line.replace(GLUE, " "))
        .collect()
}

fn wrap_words(text: &str, width: usize, first: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut room = if first > 0 { first } else { width };
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let have = line.chars().count();
            let need = if have == 0 {
                word.len()
            } else {
                have + 1 + word.len()
            };
            if need <= room {
                if have > 0 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if have > 0 {
                lines.push(std::mem::take(&mut line));
                room = width;
                continue;
            }
            // A word longer than the line: split it.
            let rest = word.split_off(room.min(word.len()));
            line.extend(word.iter());
            lines.push(std::mem::take(&mut line));
            room = width;
            word = rest;
            if word.is_empty() {
                break;
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Cost today, in 7 and in 30 days per agent, and over all of them (the
/// total the sum of the parts as shown).
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
        cells.extend(windows.iter().enumerate().map(|(w, acc)| match kind {
            RowKind::Total => {
                let parts: Vec<_> = sums[..agents.len()].iter().map(|p| p[w]).collect();
                total_cost_cell(&parts, acc)
            }
            _ => cost_cell(acc),
        }));
        table.rows.push((kind, cells));
    }
    table
}

/// `[Daily]  Models  Dirs`, the tab shown in brackets (and reversed where
/// colour is on).
fn tab_line(tab: Tab) -> Line {
    let mut text = String::new();
    let mut spans = Vec::new();
    for (i, &t) in [Tab::Daily, Tab::Models, Tab::Dirs].iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        let at = text.chars().count();
        if t == tab {
            text.push_str(&format!("[{}]", t.title()));
            spans.push((at, at + t.title().len() + 2, ACTIVE_TAB));
        } else {
            text.push_str(&format!(" {} ", t.title()));
        }
    }
    Line {
        text: text.trim_end().to_string(),
        spans,
    }
}

/// The days of the last 30 with usage, oldest first.
fn days_with_usage(data: &Data, req: &Request) -> Vec<i64> {
    let today = data.zone.local_day(data.now);
    let req = Request {
        since: today - 29,
        until: today,
        ..req.clone()
    };
    let mut days: Vec<i64> = selected(data, &req)
        .iter()
        .map(|(day, _, _)| *day)
        .collect();
    days.sort_unstable();
    days.dedup();
    days
}

/// The tab's view as `heeler usage` prints it (plain text), at most
/// `budget` lines: the daily table starts as far back as its days with
/// usage fill the rows (30 days at most; a day without usage takes no
/// row); a longer table is cut, its last line saying how many more.
fn tab_lines(
    data: &Data,
    req: &Request,
    tab: Tab,
    (columns, budget): (usize, usize),
    glyphs: Glyphs,
) -> Vec<String> {
    if data.generated_at.is_none() {
        return vec![cut(
            "Scanning: the tables fill in when the first refresh ends.",
            columns,
        )];
    }
    let today = data.zone.local_day(data.now);
    let room = budget.saturating_sub(DAILY_OVERHEAD).max(1);
    let since = match tab {
        Tab::Daily => {
            let days = days_with_usage(data, req);
            match days.len().checked_sub(room) {
                Some(skip) if skip > 0 => days[skip],
                _ => today - 29,
            }
        }
        Tab::Models | Tab::Dirs => today - 29,
    };
    let req = Request {
        since,
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
        lines.truncate(budget.saturating_sub(1));
        lines.push(format!(
            "… {more} more lines; enlarge the window to see them"
        ));
    }
    lines
}

/// The message of a window below the screen's minimum, naming both sizes,
/// wrapped to it.
pub(crate) fn too_small((have_rows, have_columns): (usize, usize)) -> Vec<String> {
    let text = format!(
        "This window is {have_columns}×{have_rows}; the usage screen needs at least \
         {MIN_COLUMNS}×{MIN_ROWS}. Enlarge it, or press q to quit."
    );
    let mut lines = wrap(&text, have_columns.max(1), 0);
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

    /// Now is 2026-11-29 12:00 UTC. Claude: $1.00 at 10:00, $0.50 at 10:45
    /// and $1.50 at 11:30 today (one block, 10:00 to 15:00, three requests
    /// over 90 minutes: it has a burn rate), $4.00 on 11-24. Codex:
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
                "2026-11-29T10:45:00Z",
                "2026-11-29T10:45:00Z",
                1,
                50,
            ),
            slot(
                Agent::Claude,
                "2026-11-29T11:30:00Z",
                "2026-11-29T11:30:00Z",
                1,
                150,
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

    /// The screen worked out from `data()`'s slots at 120 columns: Claude
    /// $3.00 today, $7.00 in 7 and 30 days; Codex $0.00, $0.50 (11-28),
    /// $10.50; all $3.00, $7.50, $17.50. The block is 2 of its 5 hours gone
    /// (8 of 20 cells), burning $3.00 over the 1.5 hours from 10:00 to 11:30
    /// ($2.00/h), so $3.00 + 3 h × $2.00 = $9.00 at 15:00; the 5h limit's
    /// 40% grows with the cost to 40 × 9 / 3 = 120%: a warning, second
    /// only to the title. 25% of 20 cells is 5. The sparkline's 30 days
    /// start on 10-31: $10.00 on day 9 (the tallest), $4.00 on day 24 (4/10
    /// of 8 heights is 3.2, so the 4th), $0.50 on day 28 (0.4, the 1st),
    /// $3.00 on day 29 (2.4, the 3rd).
    fn expected_head() -> Vec<String> {
        let spark = format!("{}█{}▄   ▁▃", " ".repeat(9), " ".repeat(14));
        vec![
            "Usage in UTC; as of 12:00".to_string(),
            "Claude Code 5h limit projected 120% by 15:00 (40% used now)".into(),
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

    /// Whether `line` holds a character no view may draw (an ESC, a C1
    /// control, a bidi override), checked by code point.
    fn active(line: &str) -> bool {
        line.chars().any(|c| {
            let n = c as u32;
            n < 0x20 || (0x7f..=0x9f).contains(&n) || (0x202a..=0x202e).contains(&n)
        })
    }

    #[test]
    fn a_wide_window_shows_everything_warning_first_then_the_tab_and_keys() {
        let data = data();
        let req = request(&data);
        let lines = frame(&data, &req, (40, 120), Tab::Daily, Glyphs::Unicode, false);
        assert_eq!(lines.len(), 40);
        let head = expected_head();
        assert_eq!(lines[..head.len()], head[..]);
        assert_eq!(lines[head.len()], "[Daily]  Models   Dirs");
        assert_eq!(lines[39], KEYS);
        // 40 rows less the head's 14, the tab line and the keys leave 24
        // for the table. Its days with usage (11-09, 11-24, 11-28, 11-29)
        // all fit, so it starts 30 days back and shows no blank day.
        let table: Vec<&str> = lines[head.len() + 1..39]
            .iter()
            .map(String::as_str)
            .collect();
        assert!(
            table[0].starts_with("Daily usage, 2026-10-31 to 2026-11-29"),
            "{table:?}"
        );
        let days = table.iter().filter(|l| l.starts_with("2026-")).count();
        assert_eq!(days, 4, "{table:#?}");

        let models = frame(&data, &req, (40, 120), Tab::Models, Glyphs::Unicode, false);
        assert_eq!(models[head.len()], " Daily  [Models]  Dirs");
        assert!(models[head.len() + 1].starts_with("Model usage, 2026-10-31 to 2026-11-29"));
    }

    #[test]
    fn the_daily_tab_starts_at_the_earliest_day_with_usage_that_fits() {
        let data = data();
        let req = request(&data);
        // 14 head lines, the tab line and the keys leave 7 of 23 for the
        // table: 5 of them its title, header, rule, total and a note, so
        // the two latest days with usage, from 11-28.
        let lines = frame(&data, &req, (23, 120), Tab::Daily, Glyphs::Unicode, false);
        let title = lines.iter().find(|l| l.starts_with("Daily usage")).unwrap();
        assert!(
            title.starts_with("Daily usage, 2026-11-28 to 2026-11-29"),
            "{lines:#?}"
        );
        let days: Vec<&String> = lines.iter().filter(|l| l.starts_with("2026-")).collect();
        assert_eq!(days.len(), 2, "{lines:#?}");
    }

    /// The sizes people have: herdr's popup in an 80×24 terminal (77×22
    /// inside), 80×24 itself and 60×20. What matters first is whole: the
    /// warning, today's cost, the block with its projection and the
    /// tightest limit with its reset.
    #[test]
    fn the_popup_s_sizes_show_what_matters_first_uncut() {
        let data = data();
        let req = request(&data);
        for (rows, columns) in [(22, 77), (24, 80), (20, 60)] {
            let lines = frame(
                &data,
                &req,
                (rows, columns),
                Tab::Daily,
                Glyphs::Unicode,
                false,
            );
            let screen = lines.join("\n");
            assert_eq!(lines.len(), rows, "{screen}");
            assert!(
                lines.iter().all(|l| l.chars().count() <= columns),
                "{screen}"
            );
            assert_eq!(lines[rows - 1], KEYS);
            assert!(
                lines.contains(
                    &"Claude Code 5h limit projected 120% by 15:00 (40% used now)".into()
                ),
                "{columns}×{rows}\n{screen}"
            );
            assert!(
                lines.contains(&"Claude Code  $3.00   $7.00    $7.00".into()),
                "{screen}"
            );
            let flat = screen.split_whitespace().collect::<Vec<_>>().join(" ");
            for whole in [
                "10:00–15:00, 3h 00m left",
                "$3.00 so far, $2.00/h, projected $9.00 at 15:00; 5h limit 40% used, projected 120%",
                "40% used, resets 15:00 (in 3h 00m)",
            ] {
                assert!(flat.contains(whole), "{columns}×{rows}: {whole}\n{screen}");
            }
            // Nothing of the head is cut: only the table may say it was.
            for line in &lines {
                assert!(
                    !line.ends_with('…') || line.starts_with('…'),
                    "{columns}×{rows}: {line}\n{screen}"
                );
            }
        }
        // 77×22 still has room for every part and a table.
        let popup = frame(&data, &req, (22, 77), Tab::Daily, Glyphs::Unicode, false);
        assert!(
            popup.contains(&"[Daily]  Models   Dirs".to_string()),
            "{popup:#?}"
        );
        assert!(
            popup.iter().any(|l| l.starts_with("Claude Code 7d")),
            "{popup:#?}"
        );
    }

    #[test]
    fn a_table_longer_than_the_rows_left_is_cut_and_says_how_much() {
        let data = data();
        let req = request(&data);
        // 14 head rows, the tab line and the keys leave 4 of 20, less than
        // the table's 5: coverage (the least important part) makes way,
        // so the models table (title, header, Claude's and Codex's model,
        // rule, total: 6) gets 5 rows: 4 show and the 5th says 2 more.
        let lines = frame(&data, &req, (20, 120), Tab::Models, Glyphs::Unicode, false);
        assert_eq!(lines.len(), 20);
        assert!(
            !lines.iter().any(|l| l.starts_with("Coverage")),
            "{lines:#?}"
        );
        assert_eq!(lines[18], "… 2 more lines; enlarge the window to see them");
    }

    #[test]
    fn below_the_minimum_the_message_names_the_window_s_size() {
        let data = data();
        let req = request(&data);
        assert_eq!(
            frame(&data, &req, (7, 100), Tab::Daily, Glyphs::Unicode, false),
            [
                "This window is 100×7; the usage screen needs at least 40×8. Enlarge it, or press q to quit."
            ]
        );
        assert_eq!(
            frame(&data, &req, (2, 20), Tab::Daily, Glyphs::Unicode, false),
            ["This window is 39×2;", "the usage screen"].map(|l| l.replace("39", "20"))
        );
        for size in [(8, 40), (10, 40), (8, 100)] {
            let lines = frame(&data, &req, size, Tab::Daily, Glyphs::Unicode, false);
            assert_eq!(lines.len(), size.0, "{lines:#?}");
            let keys = if size.1 >= 43 { KEYS } else { KEYS_SHORT };
            assert_eq!(lines[size.0 - 1], keys);
            // The warning and today's cost before anything else.
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with("Claude Code 5h limit projected"))
            );
            assert!(
                lines.iter().any(|l| l.starts_with("Claude Code  $3.00")),
                "{lines:#?}"
            );
        }
    }

    #[test]
    fn colour_marks_the_warning_the_bars_and_the_active_tab_and_no_color_none() {
        let data = data();
        let req = request(&data);
        let plain = frame(&data, &req, (40, 120), Tab::Models, Glyphs::Unicode, false);
        assert!(plain.iter().all(|l| !l.contains('\x1b')));
        let color = frame(&data, &req, (40, 120), Tab::Models, Glyphs::Unicode, true);
        assert_eq!(
            color[1],
            format!("{ALARM}Claude Code 5h limit projected 120% by 15:00 (40% used now){RESET}")
        );
        assert_eq!(
            color[14],
            format!(" Daily  {ACTIVE_TAB}[Models]{RESET}  Dirs")
        );
        // The block's bar in alarm (its projection passes the limit), the
        // 5h limit's in green (40%), the 7d's too (25%).
        assert!(color[7].starts_with(&format!("Claude Code block  {ALARM}{}", "█".repeat(8))));
        assert!(
            color[9].contains(&format!("{CALM}{}", "█".repeat(8))),
            "{:?}",
            color[9]
        );
        // Without the SGR sequences the lines are the plain ones.
        let stripped: Vec<String> = color
            .iter()
            .map(|l| {
                [ALARM, CALM, CAUTION, NEUTRAL, ACTIVE_TAB, BOLD, RESET]
                    .iter()
                    .fold(l.clone(), |l, sgr| l.replace(sgr, ""))
            })
            .collect();
        assert_eq!(stripped, plain);
    }

    #[test]
    fn ascii_glyphs_draw_the_same_pictures_in_ascii() {
        let data = data();
        let lines = frame(
            &data,
            &request(&data),
            (40, 120),
            Tab::Daily,
            Glyphs::Ascii,
            false,
        );
        assert_eq!(
            lines[7],
            format!(
                "Claude Code block  {}{}  10:00–15:00, 3h 00m left",
                "#".repeat(8),
                ".".repeat(12)
            )
        );
        assert_eq!(
            lines[10],
            format!(
                "Claude Code 7d     {}{}  25% used, resets 2026-12-01 16:00 (in 2d 4h)",
                "#".repeat(5),
                ".".repeat(15)
            )
        );
        let spark = format!("{}#{}-   .:", " ".repeat(9), " ".repeat(14));
        assert!(
            lines[11].starts_with(&format!("Cost, 30 days      {spark}  ")),
            "{}",
            lines[11]
        );
    }

    #[test]
    fn without_data_the_screen_says_scanning_not_zero_dollars() {
        let mut data = data();
        data.slots.clear();
        data.limits.clear();
        data.generated_at = None;
        data.refresh = "running";
        let lines = frame(
            &data,
            &request(&data),
            (24, 80),
            Tab::Daily,
            Glyphs::Unicode,
            false,
        );
        assert_eq!(lines[0], "Usage in UTC; no data yet, refreshing");
        assert_eq!(
            lines[1],
            "Cost today, 7 and 30 days: scanning… (the first refresh is running)"
        );
        assert!(!lines.iter().any(|l| l.contains("$0.00")), "{lines:#?}");
        assert!(
            lines.contains(&"Coverage: nothing scanned yet; the first refresh is running.".into())
        );
    }

    #[test]
    fn tiny_parts_add_up_as_shown() {
        // Claude $0.004 and Codex $0.004 today: each is less than a cent
        // (not $0.00), and the total is their exact sum, $0.008: $0.01.
        let mut data = data();
        data.slots = vec![
            (
                (
                    at("2026-11-29T11:00:00Z"),
                    Agent::Claude,
                    "m".into(),
                    "/w".into(),
                    "".into(),
                ),
                SlotAcc {
                    requests: 1,
                    cost_pico: 4_000_000_000,
                    first_ts: at("2026-11-29T11:00:00Z"),
                    last_ts: at("2026-11-29T11:00:00Z"),
                    ..SlotAcc::default()
                },
            ),
            (
                (
                    at("2026-11-29T11:00:00Z"),
                    Agent::Codex,
                    "m".into(),
                    "/w".into(),
                    "".into(),
                ),
                SlotAcc {
                    requests: 1,
                    cost_pico: 4_000_000_000,
                    first_ts: at("2026-11-29T11:00:00Z"),
                    last_ts: at("2026-11-29T11:00:00Z"),
                    ..SlotAcc::default()
                },
            ),
        ];
        let lines = frame(
            &data,
            &request(&data),
            (40, 120),
            Tab::Daily,
            Glyphs::Unicode,
            false,
        );
        assert!(
            lines.contains(&"Claude Code  <$0.01  <$0.01   <$0.01".into()),
            "{lines:#?}"
        );
        assert!(
            lines.contains(&"All           $0.01   $0.01    $0.01".into()),
            "{lines:#?}"
        );
    }

    #[test]
    fn a_total_is_the_sum_of_its_parts_as_shown() {
        // $0.006 + $0.006: each shows $0.01, so the total shows $0.02 (the
        // exact $0.012 would round to $0.01).
        let part = |cost_pico: u64| SlotAcc {
            requests: 1,
            cost_pico,
            ..SlotAcc::default()
        };
        let sum = |a: SlotAcc, b: SlotAcc| {
            let mut all = a;
            all.add_counts(&b);
            render::total_cost_cell(&[a, b], &all)
        };
        assert_eq!(sum(part(6_000_000_000), part(6_000_000_000)), "$0.02");
        // $1.004 + $2.004 show $1.00 and $2.00: $3.00 (not $3.01).
        assert_eq!(
            sum(part(1_004_000_000_000), part(2_004_000_000_000)),
            "$3.00"
        );
        // A part under a cent: the exact sum, rounded.
        assert_eq!(sum(part(4_000_000_000), part(2_004_000_000_000)), "$2.01");
        assert_eq!(render::total_cost_cell(&[], &SlotAcc::default()), "$0.00");
    }

    #[test]
    fn hostile_model_names_and_directories_are_drawn_inert() {
        let mut data = data();
        let hostile = "\x1b]52;c;aGk=\x07\x1b[2J\u{9b}31m\u{202e}evil\n";
        data.slots = crate::usage::views::inert_slots(
            data.slots
                .into_iter()
                .map(|((slot, agent, _, _, _), acc)| {
                    (
                        (
                            slot,
                            agent,
                            hostile.into(),
                            format!("/w/{hostile}").into(),
                            hostile.into(),
                        ),
                        acc,
                    )
                })
                .collect(),
        );
        for tab in [Tab::Daily, Tab::Models, Tab::Dirs] {
            for color in [false, true] {
                let lines = frame(
                    &data,
                    &request(&data),
                    (60, 160),
                    tab,
                    Glyphs::Unicode,
                    color,
                );
                for line in &lines {
                    let text = [ALARM, CALM, CAUTION, NEUTRAL, ACTIVE_TAB, BOLD, RESET]
                        .iter()
                        .fold(line.clone(), |l, sgr| l.replace(sgr, ""));
                    assert!(!active(&text), "{tab:?}: {line:?}");
                }
                if tab != Tab::Daily {
                    assert!(
                        lines.iter().any(|l| l.contains("\u{fffd}]52;c;aGk=")),
                        "{lines:#?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_coloured_span_cut_short_still_ends_its_colour() {
        let line = Line::styled("warning text", ALARM);
        assert_eq!(line.draw(7, true), format!("{ALARM}warnin…{RESET}"));
        assert_eq!(line.draw(40, true), format!("{ALARM}warning text{RESET}"));
        assert_eq!(line.draw(7, false), "warnin…");
    }

    #[test]
    fn a_countdown_is_never_split_by_a_wrap() {
        let text = "50% used, resets 2026-12-01 16:00 (in 2d 4h)";
        let glued = glue_countdowns(text);
        assert_eq!(
            glued,
            "50% used, resets 2026-12-01 16:00 (in\u{a0}2d\u{a0}4h)"
        );
        assert_eq!(
            wrap(&glued, 30, 0),
            ["50% used, resets 2026-12-01", "16:00 (in 2d 4h)"]
        );
        assert_eq!(
            wrap(&glue_countdowns("resets 19:47 (in 3h 00m)"), 18, 0),
            ["resets 19:47", "(in 3h 00m)"]
        );
        // A 5h label is not a countdown: "5h limit" may break.
        assert_eq!(glue_countdowns("5h limit 50% used"), "5h limit 50% used");
    }

    #[test]
    fn wrap_breaks_at_spaces_splits_long_words_and_loses_nothing() {
        assert_eq!(wrap("a bb ccc", 4, 0), ["a bb", "ccc"]);
        assert_eq!(wrap("a bb ccc", 4, 1), ["a", "bb", "ccc"]);
        assert_eq!(wrap("abcdefghij", 4, 0), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4, 0), [""]);
        // Oracle: the words joined again are the text.
        let text = "5h limit 42% used, projected 146% by 15:00 (in 2h 07m)";
        for width in 1..60 {
            for line in wrap(text, width, 0) {
                assert!(line.chars().count() <= width, "{width}: {line}");
            }
            if width >= 9 {
                assert_eq!(wrap(text, width, 0).join(" "), text, "{width}");
            }
        }
    }
}

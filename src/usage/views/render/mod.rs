//! Every view as a pure function: the cache's [`Data`], the [`Request`]
//! and the output's [`Format`] in, the text to print out. Tables go through
//! `table.rs`, so each view only says which columns and rows it has; the
//! JSON document of a view is versioned (`v`) and names its view.

use std::collections::BTreeMap;

use crate::base::json::{Object, Value};
use crate::usage::aggregate::{SlotAcc, SlotKey, Text, round_usd};
use crate::usage::event::Agent;
use crate::usage::time::{format_date, format_timestamp};
use crate::usage::views::blocks::{self, Block};
use crate::usage::views::data::{
    Data, Period, Request, SESSION_ROWS, period_label, period_start, selected, sum_by, window_sums,
};
use crate::usage::views::picture;
use crate::usage::views::table::{self, Column, RowKind, Style, Table, dollars, group};

mod block_view;
mod limits;
pub(crate) mod panels;
mod session;
mod statusline;
mod summary;
mod tables;
#[cfg(test)]
mod tests;

use block_view::blocks_view;
pub(crate) use limits::{five_hour_limit, percent, windows};
use session::sessions;
#[cfg(test)]
use session::short_session;
pub use statusline::statusline;
pub(crate) use statusline::statusline_for;
pub(crate) use summary::coverage_line;
use summary::summary;

/// Schema version of every view's JSON document.
pub const VERSION: u64 = 1;

/// A view of the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Summary,
    Period(Period),
    Session,
    Blocks,
    Models,
    Dirs,
    Statusline,
}

impl View {
    pub fn name(self) -> &'static str {
        match self {
            View::Summary => "summary",
            View::Period(Period::Day) => "daily",
            View::Period(Period::Week) => "weekly",
            View::Period(Period::Month) => "monthly",
            View::Session => "session",
            View::Blocks => "blocks",
            View::Models => "models",
            View::Dirs => "dirs",
            View::Statusline => "statusline",
        }
    }
}

/// How the view is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text(Style),
    Json,
    Csv,
}

/// A row of a tabular view: its label cells, its sums, and (for
/// `--breakdown`) its sums per (agent, model).
struct Row {
    labels: Vec<String>,
    /// The label cells of CSV, when they differ from the table's.
    csv: Option<Vec<String>>,
    json: Object,
    acc: SlotAcc,
    models: BTreeMap<(Agent, Text), SlotAcc>,
}

/// The width of the daily view's cost bars, in cells.
pub(crate) const DAILY_BAR: usize = 10;

/// The token columns every tabular view ends with.
fn token_columns() -> Vec<Column> {
    vec![
        Column::number("Input", 4),
        Column::number("Output", 5),
        Column::number("Cache write", 1),
        Column::number("Cache read", 2),
        Column::number("Total", 6),
        Column::number("Cost", 0),
    ]
}

/// The token cells of a row. Output is `output` alone: reasoning is a
/// part of it (`usage::event::Tokens`), so Input + Output + the cache
/// columns add up to Total.
fn token_cells(acc: &SlotAcc) -> Vec<String> {
    let t = &acc.tokens;
    vec![
        group(t.input),
        group(t.output),
        group(t.cache_write_5m + t.cache_write_1h),
        group(t.cache_read),
        group(t.total()),
        cost_cell(acc),
    ]
}

/// A cost as a table shows it: dollars when every request was priced;
/// `—` when none was (a model without a price is not free); the priced
/// part with a `+` when only some were (the true cost is higher).
pub(crate) fn cost_cell(acc: &SlotAcc) -> String {
    if acc.unpriced_requests == 0 {
        dollars(acc.totals().cost_usd)
    } else if acc.unpriced_requests >= acc.requests {
        UNPRICED.to_string()
    } else {
        format!("{}+", dollars(acc.totals().cost_usd))
    }
}

/// The cost cell of a total over `parts` (`all` is their sum): the sum of
/// the parts' cents as their cells show them, so a column adds up as
/// printed (`$0.01` + `$0.01` is `$0.02` even when the exact sum rounds to
/// `$0.01`). When a part shows `<$0.01` there is no sum to match, and the
/// total is the exact sum rounded (`<$0.01` + `<$0.01` may be `$0.01`,
/// never the `$0.00` + `$0.00` = `$0.01` of before). `—` and `+` as
/// [`cost_cell`] marks them.
pub(crate) fn total_cost_cell(parts: &[SlotAcc], all: &SlotAcc) -> String {
    if all.requests > 0 && all.unpriced_requests >= all.requests {
        return UNPRICED.to_string();
    }
    let shown = |p: &SlotAcc| table::cents(p.totals().cost_usd);
    let tiny = parts.iter().any(|p| shown(p) == 0 && p.cost_pico > 0);
    let mut text = if tiny {
        dollars(all.totals().cost_usd)
    } else {
        table::cents_text(parts.iter().map(shown).sum())
    };
    if all.unpriced_requests > 0 {
        text.push('+');
    }
    text
}

/// What a block without a burn rate yet says after its cost
/// (`blocks::BURN_MIN_REQUESTS` over `blocks::BURN_MIN_SECONDS`).
pub(crate) const NO_RATE_YET: &str = "; no burn rate before 3 requests over 10 min";

/// The cost cell of requests none of which has a price.
const UNPRICED: &str = "—";

/// The models without a price among the slots shown, with their sums
/// (every model with an unpriced request; only its unpriced counts
/// matter to the warning and the document).
type Unpriced = BTreeMap<(Agent, Text), SlotAcc>;

fn unpriced_of<'a>(slots: impl Iterator<Item = (&'a SlotKey, &'a SlotAcc)>) -> Unpriced {
    let mut out = Unpriced::new();
    for (k, acc) in slots.filter(|(_, acc)| acc.unpriced_requests > 0) {
        out.entry((k.1, k.2.clone())).or_default().merge(acc);
    }
    out
}

/// The `unpriced_models` member of every document with totals: one
/// object per model without a price, with its unpriced requests and
/// tokens (a script can name them without reading each row).
fn unpriced_value(unpriced: &Unpriced) -> Value {
    Value::Array(
        unpriced
            .iter()
            .map(|((agent, model), acc)| {
                Value::Object(
                    Object::new()
                        .with("agent", agent.name())
                        .with("model", &**model)
                        .with("unpriced_requests", acc.unpriced_requests)
                        .with("unpriced_tokens", acc.unpriced_tokens),
                )
            })
            .collect(),
    )
}

const CSV_TOKENS: [&str; 11] = [
    "requests",
    "input",
    "output",
    "reasoning",
    "cache_write_5m",
    "cache_write_1h",
    "cache_read",
    "total",
    "cost_usd",
    "unpriced_requests",
    "unpriced_tokens",
];

fn csv_cells(acc: &SlotAcc) -> Vec<String> {
    let t = acc.totals();
    let k = &t.tokens;
    vec![
        t.requests.to_string(),
        k.input.to_string(),
        k.output.to_string(),
        k.reasoning.to_string(),
        k.cache_write_5m.to_string(),
        k.cache_write_1h.to_string(),
        k.cache_read.to_string(),
        k.total().to_string(),
        Value::from(round_usd(t.cost_usd)).to_json(),
        t.unpriced_requests.to_string(),
        t.unpriced_tokens.to_string(),
    ]
}

/// What every view is asked: the cache, the request, the format.
type Asked<'a> = (&'a Data, &'a Request, Format);

/// The slots a request picked, with their local day (`data::selected`).
pub(super) type Picked<'a, 'd> = &'a [(i64, &'d SlotKey, &'d SlotAcc)];

/// A table view's label columns: as the table heads them, and as CSV
/// names them.
type Labels<'a> = (&'a [Column], &'a [&'static str]);

/// A table view's text, CSV or JSON from its label columns and rows
/// (`unpriced`: the models without a price among them).
fn tabular(
    (data, req, format): Asked,
    view: View,
    labels: Labels,
    listed: Listed,
    unpriced: &Unpriced,
) -> String {
    let mut all = listed.all;
    for r in &listed.rows {
        all.add_counts(&r.acc);
    }
    match format {
        Format::Json => {
            let list = listed
                .rows
                .iter()
                .map(|r| {
                    let mut o = r.json.clone().with("totals", r.acc.totals().to_value());
                    if req.breakdown {
                        o = o.with("models", models_value(&r.models));
                    }
                    Value::Object(o)
                })
                .collect();
            let doc = header(data, req, view)
                .with("rows", Value::Array(list))
                .with("totals", all.totals().to_value())
                .with("unpriced_models", unpriced_value(unpriced));
            Value::Object(doc).to_json() + "\n"
        }
        Format::Csv => csv_table(req, labels.1, &listed.rows),
        Format::Text(style) => {
            let t = text_table(
                req,
                view,
                labels.0,
                &listed.rows,
                (&all, &listed.all),
                style,
            );
            let mut lines = vec![title(data, req, view)];
            lines.extend(t.lines(style));
            let mut under = notes(&all, unpriced);
            if listed.left_out > 0 {
                under.push(format!(
                    "{} earlier sessions are in the total but not listed: --all lists them.",
                    table::group(listed.left_out as u64)
                ));
            }
            // The notes fit the width the table was fitted to.
            for note in under {
                lines.extend(table::wrap(&note, style.width, 0));
            }
            lines.join("\n") + "\n"
        }
    }
}

/// The CSV of a table view: a line per row, or per row and model with
/// `--breakdown`.
fn csv_table(req: &Request, names: &[&'static str], rows: &[Row]) -> String {
    let mut head: Vec<&str> = names.to_vec();
    if req.breakdown {
        head.extend(["agent", "model"]);
    }
    head.extend(CSV_TOKENS);
    let mut lines = Vec::new();
    for r in rows {
        let cells = r.csv.clone().unwrap_or_else(|| r.labels.clone());
        if req.breakdown {
            for ((agent, model), acc) in &r.models {
                let mut c = cells.clone();
                c.extend([agent.name().to_string(), model.to_string()]);
                c.extend(csv_cells(acc));
                lines.push(c);
            }
        } else {
            let mut c = cells;
            c.extend(csv_cells(&r.acc));
            lines.push(c);
        }
    }
    table::csv(&head, &lines)
}

/// The table of a table view: its rows (with `--breakdown`, a line per
/// model under each), the daily view's cost bars, and the total `all`,
/// whose cost is the sum of the rows' shown cents and the rows left out
/// (`left_out`), so the column adds up as printed.
fn text_table(
    req: &Request,
    view: View,
    labels: &[Column],
    rows: &[Row],
    (all, left_out): (&SlotAcc, &SlotAcc),
    style: Style,
) -> Table {
    let mut columns = labels.to_vec();
    columns.extend(token_columns());
    // The daily view ends each day with a bar of its cost against the
    // costliest day's (left out to fit before Cache read).
    let bars = view == View::Period(Period::Day);
    if bars {
        columns.push(Column::text("", 2).named("Cost bar"));
    }
    let top = rows.iter().map(|r| r.acc.cost_pico).max().unwrap_or(0);
    let bar = |acc: &SlotAcc| {
        let share = if top == 0 {
            0.0
        } else {
            acc.cost_pico as f64 / top as f64
        };
        picture::bar(share, DAILY_BAR, style.glyphs)
    };
    let mut t = Table {
        columns,
        rows: Vec::new(),
    };
    let blank = vec![String::new(); labels.len()];
    // A breakdown line names its model in the flexible column.
    let detail_at = labels.iter().position(|c| c.flexible).unwrap_or(0);
    for r in rows {
        let mut cells = r.labels.clone();
        cells.extend(token_cells(&r.acc));
        if bars {
            cells.push(bar(&r.acc));
        }
        t.rows.push((RowKind::Plain, cells));
        if req.breakdown {
            for ((agent, model), acc) in &r.models {
                let mut cells = blank.clone();
                cells[detail_at] = format!("└ {} {model}", agent.name());
                cells.extend(token_cells(acc));
                t.rows.push((RowKind::Detail, cells));
            }
        }
    }
    let mut cells = blank;
    cells[0] = "Total".into();
    cells.extend(token_cells(all));
    let mut parts: Vec<SlotAcc> = rows.iter().map(|r| r.acc).collect();
    parts.push(*left_out);
    if let Some(cost) = cells.last_mut() {
        *cost = total_cost_cell(&parts, all);
    }
    t.rows.push((RowKind::Total, cells));
    t
}

/// The rows a table lists, and how many more it leaves out (their sums
/// in `all`, where the listed rows' are added: the total counts both).
struct Listed {
    rows: Vec<Row>,
    left_out: usize,
    all: SlotAcc,
}

impl FromIterator<Row> for Listed {
    fn from_iter<I: IntoIterator<Item = Row>>(rows: I) -> Listed {
        Listed::from(rows.into_iter().collect::<Vec<Row>>())
    }
}

impl From<Vec<Row>> for Listed {
    fn from(rows: Vec<Row>) -> Listed {
        Listed {
            rows,
            left_out: 0,
            all: SlotAcc::default(),
        }
    }
}

fn models_value(models: &BTreeMap<(Agent, Text), SlotAcc>) -> Value {
    Value::Array(
        models
            .iter()
            .map(|((agent, model), acc)| {
                Value::Object(
                    Object::new()
                        .with("agent", agent.name())
                        .with("model", &**model)
                        .with("totals", acc.totals().to_value()),
                )
            })
            .collect(),
    )
}

/// The members every view's document starts with.
fn header(data: &Data, req: &Request, view: View) -> Object {
    Object::new()
        .with("v", VERSION)
        .with("view", view.name())
        .with("now", data.now)
        .with(
            "generated_at",
            data.generated_at.map_or(Value::Null, Value::from),
        )
        .with("tz", data.zone.name.as_str())
        .with("refresh", data.refresh)
        .with("since", format_date(req.since))
        .with("until", format_date(req.until))
        .with("agent", req.agent.map_or(Value::Null, |a| a.name().into()))
        .with("dir", req.dir.as_deref().map_or(Value::Null, Value::from))
}

/// The line above a table: what it covers and how fresh it is.
fn title(data: &Data, req: &Request, view: View) -> String {
    let mut what = format!(
        "{} usage, {} to {} ({})",
        match view {
            View::Period(Period::Day) => "Daily",
            View::Period(Period::Week) => "Weekly",
            View::Period(Period::Month) => "Monthly",
            View::Session => "Session",
            View::Blocks => "5-hour block",
            View::Models => "Model",
            View::Dirs => "Directory",
            View::Summary | View::Statusline => "",
        },
        format_date(req.since),
        format_date(req.until),
        data.zone.name
    );
    if let Some(agent) = req.agent {
        what.push_str(&format!(", {} only", agent.name()));
    }
    if let Some(dir) = &req.dir {
        what.push_str(&format!(", under {dir}"));
    }
    what.push_str(&format!("; {}", freshness(data)));
    what
}

/// "as of 11:58, refreshing" and the like.
pub(crate) fn freshness(data: &Data) -> String {
    let at = match data.generated_at {
        Some(at) => format!("as of {}", local_time(data, at)),
        None => "no data yet".into(),
    };
    match data.refresh {
        "running" => format!("{at}, refreshing"),
        "failed" => format!("{at}, the last refresh failed"),
        "stale" => format!("{at}, stale"),
        _ => at,
    }
}

/// The warning under a table whose requests include models without a
/// price: which models, and how much is missing from the costs.
fn notes(all: &SlotAcc, unpriced: &Unpriced) -> Vec<String> {
    if all.unpriced_requests == 0 {
        return Vec::new();
    }
    let n = all.unpriced_requests;
    let mut names: Vec<&str> = unpriced.keys().map(|(_, m)| &**m).collect();
    names.dedup();
    vec![format!(
        "No price for {}: {} request{} ({} tokens) {} not in the costs.",
        names.join(", "),
        group(n),
        if n == 1 { "" } else { "s" },
        group(all.unpriced_tokens),
        if n == 1 { "is" } else { "are" }
    )]
}

/// `YYYY-MM-DD hh:mm` in the view's zone.
pub(crate) fn local_minute(data: &Data, unix: i64) -> String {
    let local = format_timestamp(unix + i64::from(data.zone.offset_at(unix)));
    format!("{} {}", &local[..10], &local[11..16])
}

/// `hh:mm` in the view's zone, with the date when it is not today.
pub(crate) fn local_time(data: &Data, unix: i64) -> String {
    let full = local_minute(data, unix);
    if data.zone.local_day(unix) == data.zone.local_day(data.now) {
        full[11..].to_string()
    } else {
        full
    }
}

/// `2h 05m`.
pub(crate) fn duration(seconds: i64) -> String {
    let m = seconds.max(0) / 60;
    if m >= 60 * 24 {
        format!("{}d {}h", m / (60 * 24), m / 60 % 24)
    } else {
        format!("{}h {:02}m", m / 60, m % 60)
    }
}

/// A row's sums and its sums per (agent, model).
type Grouped = (SlotAcc, BTreeMap<(Agent, Text), SlotAcc>);

fn rows_by<K: Ord + Clone>(
    picked: &[(i64, &crate::usage::aggregate::SlotKey, &SlotAcc)],
    key: impl Fn(i64, &crate::usage::aggregate::SlotKey) -> K,
) -> BTreeMap<K, Grouped> {
    let mut out: BTreeMap<K, Grouped> = BTreeMap::new();
    for (day, k, acc) in picked {
        let e = out.entry(key(*day, k)).or_default();
        e.0.merge(acc);
        e.1.entry((k.1, k.2.clone())).or_default().merge(acc);
    }
    out
}

fn sorted_rows(rows: &mut [Row], by: impl Fn(&Row, &Row) -> std::cmp::Ordering) {
    rows.sort_by(by);
}

fn by_cost(a: &SlotAcc, b: &SlotAcc) -> std::cmp::Ordering {
    b.cost_pico
        .cmp(&a.cost_pico)
        .then(b.tokens.total().cmp(&a.tokens.total()))
}

/// The agents a request shows: the one asked for, or every agent shown
/// always ([`Agent::always_shown`]) and every other one with usage in the
/// data.
pub(crate) fn agents_of_request(data: &Data, req: &Request) -> Vec<Agent> {
    match req.agent {
        Some(a) => vec![a],
        None => crate::usage::agents::ALL
            .into_iter()
            .filter(|&a| a.always_shown() || data.slots.iter().any(|(k, _)| k.1 == a))
            .collect(),
    }
}

/// The text of `view` (pure).
pub fn render(data: &Data, req: &Request, view: View, format: Format) -> String {
    let picked = selected(data, req);
    let unpriced = unpriced_of(picked.iter().map(|(_, k, acc)| (*k, *acc)));
    let asked = (data, req, format);
    match view {
        View::Summary => summary(data, req, format),
        View::Statusline => statusline(data, req) + "\n",
        View::Blocks => blocks_view(data, req, &picked, &unpriced, format),
        View::Period(p) => tables::period_view(asked, p, &picked, &unpriced),
        View::Session => sessions(data, req, &picked, &unpriced, format),
        View::Models => tables::models_view(asked, &picked, &unpriced),
        View::Dirs => tables::dirs_view(asked, &picked, &unpriced),
    }
}

fn agents_of(models: &BTreeMap<(Agent, Text), SlotAcc>) -> Vec<&'static str> {
    let mut agents: Vec<&'static str> = models.keys().map(|(a, _)| a.name()).collect();
    agents.dedup();
    agents
}

fn model_names(models: &BTreeMap<(Agent, Text), SlotAcc>) -> String {
    let mut names: Vec<&str> = models.keys().map(|(_, m)| &**m).collect();
    names.dedup();
    names.join(", ")
}

fn models_names_value(models: &BTreeMap<(Agent, Text), SlotAcc>) -> Value {
    let mut names: Vec<&str> = models.keys().map(|(_, m)| &**m).collect();
    names.dedup();
    Value::Array(names.into_iter().map(Value::from).collect())
}

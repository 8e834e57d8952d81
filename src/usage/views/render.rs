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
    Data, Period, Request, SESSION_ROWS, period_label, period_start, selected, sum_by,
};
use crate::usage::views::table::{self, Column, RowKind, Style, Table, dollars, group};

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
fn cost_cell(acc: &SlotAcc) -> String {
    if acc.unpriced_requests == 0 {
        dollars(acc.totals().cost_usd)
    } else if acc.unpriced_requests >= acc.requests {
        UNPRICED.to_string()
    } else {
        format!("{}+", dollars(acc.totals().cost_usd))
    }
}

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

/// A table view's text, CSV or JSON from its label columns and rows
/// (`unpriced`: the models without a price among them).
fn tabular(
    data: &Data,
    req: &Request,
    view: View,
    labels: (&[Column], &[&'static str]),
    listed: Listed,
    unpriced: &Unpriced,
    format: Format,
) -> String {
    let Listed {
        rows,
        left_out,
        mut all,
    } = listed;
    for r in &rows {
        all.add_counts(&r.acc);
    }
    match format {
        Format::Json => {
            let list = rows
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
        Format::Csv => {
            let mut head: Vec<&str> = labels.1.to_vec();
            if req.breakdown {
                head.extend(["agent", "model"]);
            }
            head.extend(CSV_TOKENS);
            let mut lines = Vec::new();
            for r in &rows {
                let mut cells = r.csv.clone().unwrap_or_else(|| r.labels.clone());
                if req.breakdown {
                    for ((agent, model), acc) in &r.models {
                        let mut c = cells.clone();
                        c.extend([agent.name().to_string(), model.to_string()]);
                        c.extend(csv_cells(acc));
                        lines.push(c);
                    }
                } else {
                    cells.extend(csv_cells(&r.acc));
                    lines.push(cells);
                }
            }
            table::csv(&head, &lines)
        }
        Format::Text(style) => {
            let mut columns = labels.0.to_vec();
            columns.extend(token_columns());
            let mut t = Table {
                columns,
                rows: Vec::new(),
            };
            let blank = vec![String::new(); labels.0.len()];
            // A breakdown line names its model in the flexible column.
            let detail_at = labels.0.iter().position(|c| c.flexible).unwrap_or(0);
            for r in &rows {
                let mut cells = r.labels.clone();
                cells.extend(token_cells(&r.acc));
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
            cells.extend(token_cells(&all));
            t.rows.push((RowKind::Total, cells));
            let mut lines = vec![title(data, req, view)];
            lines.extend(t.lines(style));
            lines.extend(notes(&all, unpriced));
            if left_out > 0 {
                lines.push(format!(
                    "{} earlier sessions are in the total but not listed: --all lists them.",
                    table::group(left_out as u64)
                ));
            }
            lines.join("\n") + "\n"
        }
    }
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
fn freshness(data: &Data) -> String {
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
fn local_time(data: &Data, unix: i64) -> String {
    let full = local_minute(data, unix);
    if data.zone.local_day(unix) == data.zone.local_day(data.now) {
        full[11..].to_string()
    } else {
        full
    }
}

/// `2h 05m`.
fn duration(seconds: i64) -> String {
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

/// The text of `view` (pure).
pub fn render(data: &Data, req: &Request, view: View, format: Format) -> String {
    let picked = selected(data, req);
    let unpriced = unpriced_of(picked.iter().map(|(_, k, acc)| (*k, *acc)));
    match view {
        View::Summary => summary(data, req, format),
        View::Statusline => statusline(data, req) + "\n",
        View::Blocks => blocks_view(data, req, &picked, &unpriced, format),
        View::Period(p) => {
            let rows = rows_by(&picked, |day, _| period_start(p, day))
                .into_iter()
                .map(|(start, (acc, models))| Row {
                    labels: vec![period_label(p, start), model_names(&models)],
                    csv: None,
                    json: Object::new()
                        .with("period", period_label(p, start))
                        .with("models", models_names_value(&models)),
                    acc,
                    models,
                })
                .collect();
            let head = match p {
                Period::Day => "Date",
                Period::Week => "Week of",
                Period::Month => "Month",
            };
            let columns = [Column::text(head, 0), Column::flexible("Models", 3)];
            tabular(
                data,
                req,
                view,
                (&columns, &["period", "models"]),
                rows,
                &unpriced,
                format,
            )
        }
        View::Session => sessions(data, req, &picked, &unpriced, format),
        View::Models => {
            let mut rows: Vec<Row> = rows_by(&picked, |_, k| (k.1, k.2.clone()))
                .into_iter()
                .map(|((agent, model), (acc, _))| Row {
                    labels: vec![agent.name().into(), model.to_string()],
                    csv: None,
                    json: Object::new()
                        .with("agent", agent.name())
                        .with("model", &*model)
                        .with("priced", acc.unpriced_requests == 0),
                    acc,
                    models: BTreeMap::new(),
                })
                .collect();
            sorted_rows(&mut rows, |a, b| {
                by_cost(&a.acc, &b.acc).then(a.labels.cmp(&b.labels))
            });
            let columns = [Column::text("Agent", 0), Column::flexible("Model", 0)];
            let req = Request {
                breakdown: false,
                ..req.clone()
            };
            tabular(
                data,
                &req,
                view,
                (&columns, &["agent", "model"]),
                rows.into(),
                &unpriced,
                format,
            )
        }
        View::Dirs => {
            let mut rows: Vec<Row> = rows_by(&picked, |_, k| k.3.clone())
                .into_iter()
                .map(|(cwd, (acc, models))| {
                    let agents = agents_of(&models);
                    Row {
                        labels: vec![cwd.to_string(), agents.join(", ")],
                        csv: None,
                        json: Object::new().with("directory", &*cwd).with(
                            "agents",
                            Value::Array(agents.iter().map(|a| Value::from(*a)).collect()),
                        ),
                        acc,
                        models,
                    }
                })
                .collect();
            sorted_rows(&mut rows, |a, b| {
                b.acc
                    .tokens
                    .total()
                    .cmp(&a.acc.tokens.total())
                    .then(by_cost(&a.acc, &b.acc))
                    .then(a.labels.cmp(&b.labels))
            });
            let columns = [Column::flexible("Directory", 0), Column::text("Agents", 3)];
            tabular(
                data,
                req,
                view,
                (&columns, &["directory", "agents"]),
                rows.into(),
                &unpriced,
                format,
            )
        }
    }
}

/// The `session` view: one row per session (a Claude `sessionId`, a Codex
/// thread), with its directories, models, first and last request and
/// sums, the latest first. Requests whose transcript names no session
/// are grouped per agent and directory instead. The table shows a
/// session id's last eight characters (random in both UUID versions the
/// agents write); CSV and JSON have it whole.
fn sessions(
    data: &Data,
    req: &Request,
    picked: &[(i64, &SlotKey, &SlotAcc)],
    unpriced: &Unpriced,
    format: Format,
) -> String {
    // A session (or, for requests whose transcript names none, an agent
    // and directory).
    type Key = (Agent, Text, Option<Text>);
    let key_of = |k: &SlotKey| -> Key { (k.1, k.4.clone(), k.4.is_empty().then(|| k.3.clone())) };
    // First pass over the slots: each session's sums, which order the
    // rows (a busy Host has thousands of sessions a month).
    let mut sums: crate::usage::aggregate::FastHashMap<Key, SlotAcc> = Default::default();
    for (_, k, acc) in picked {
        sums.entry(key_of(k)).or_default().merge(acc);
    }
    let mut groups: Vec<(Key, SlotAcc)> = sums.into_iter().collect();
    // The latest first; then by session id, agent and directory (a
    // group's key), a total order.
    let order = |(a, sa): &(Key, SlotAcc), (b, sb): &(Key, SlotAcc)| {
        sb.last_ts
            .cmp(&sa.last_ts)
            .then_with(|| a.1.cmp(&b.1))
            .then(a.0.cmp(&b.0))
            .then_with(|| a.2.cmp(&b.2))
    };
    // The table lists the latest; the rest are summed into its total.
    let listed = match format {
        Format::Text(_) if !req.all => groups.len().min(SESSION_ROWS),
        _ => groups.len(),
    };
    if listed > 0 && listed < groups.len() {
        groups.select_nth_unstable_by(listed - 1, order);
    }
    let not_listed = groups.split_off(listed);
    groups.sort_unstable_by(order);
    let mut rest = SlotAcc::default();
    for (_, acc) in &not_listed {
        rest.add_counts(acc);
    }
    let left_out = not_listed.len();
    // Second pass, for the sessions listed only: sums per model and
    // tokens per directory.
    let at: crate::usage::aggregate::FastHashMap<&Key, usize> = groups
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k, i))
        .collect();
    type Detail = (BTreeMap<(Agent, Text), SlotAcc>, BTreeMap<Text, u64>);
    let mut details: Vec<Detail> = vec![Default::default(); groups.len()];
    for (_, k, acc) in picked {
        if let Some(&i) = at.get(&key_of(k)) {
            let (models, dirs) = &mut details[i];
            models.entry((k.1, k.2.clone())).or_default().merge(acc);
            *dirs.entry(k.3.clone()).or_default() += acc.tokens.total();
        }
    }
    drop(at);
    let rows: Vec<Row> = groups
        .into_iter()
        .zip(details)
        .map(|((key, acc), (models, dirs))| {
            let (agent, session, _) = &key;
            let mut by_tokens: Vec<(&Text, &u64)> = dirs.iter().collect();
            by_tokens.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let paths: Vec<&str> = by_tokens.iter().map(|(d, _)| &***d).collect();
            let id = if session.is_empty() {
                Value::Null
            } else {
                Value::from(&**session)
            };
            let (last, first) = (
                local_minute(data, acc.last_ts),
                local_minute(data, acc.first_ts),
            );
            let labels = |session: String| {
                vec![
                    last.clone(),
                    session,
                    agent.name().into(),
                    first.clone(),
                    paths.join(", "),
                    model_names(&models),
                ]
            };
            Row {
                labels: labels(short_session(session)),
                csv: Some(labels(session.to_string())),
                json: Object::new()
                    .with("session", id)
                    .with("agent", agent.name())
                    .with("directory", paths.first().copied().unwrap_or(""))
                    .with(
                        "directories",
                        Value::Array(paths.iter().map(|p| Value::from(*p)).collect()),
                    )
                    .with("models", models_names_value(&models))
                    .with("first_at", acc.first_ts)
                    .with("last_at", acc.last_ts),
                acc,
                models,
            }
        })
        .collect();
    let columns = [
        Column::text("Last active", 0),
        Column::text("Session", 0),
        // Which agent matters more here than a token split.
        Column::text("Agent", 7),
        Column::text("Started", 1),
        Column::flexible("Directory", 0),
        Column::text("Models", 1),
    ];
    let names = [
        "last_active",
        "session",
        "agent",
        "started",
        "directory",
        "models",
    ];
    tabular(
        data,
        req,
        View::Session,
        (&columns, &names),
        Listed {
            rows,
            left_out,
            all: rest,
        },
        unpriced,
        format,
    )
}

/// A session id as the table shows it: `…` and its last eight
/// characters, or `—` for none.
fn short_session(id: &str) -> String {
    let n = id.chars().count();
    match n {
        0 => "—".to_string(),
        1..=9 => id.to_string(),
        _ => std::iter::once('…').chain(id.chars().skip(n - 8)).collect(),
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

/// The 5-hour limit window of `agent`'s stored limits: (used percent,
/// resets at), when the limits are current.
fn five_hour_limit(data: &Data, agent: Agent) -> Option<(f64, Option<i64>)> {
    let (_, v) = data.limits.iter().find(|(a, _)| *a == agent)?;
    windows(v)
        .into_iter()
        .find(|w| w.minutes == Some(300))
        .map(|w| (w.used, w.resets_at))
}

/// One window of a limits document.
struct Window {
    label: String,
    minutes: Option<i64>,
    used: f64,
    resets_at: Option<i64>,
}

/// The current windows of a limits document (none unless its state is
/// `ok`; a window whose reset passed since it was observed is left out).
fn windows(v: &Value) -> Vec<Window> {
    if v.get("state").and_then(Value::as_str) != Some("ok") {
        return Vec::new();
    }
    let Some(list) = v.get("windows").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter(|w| w.get("reset_since_observed") != Some(&Value::Bool(true)))
        .filter_map(|w| {
            let used = w.get("used_percent").and_then(Value::as_f64)?;
            let minutes = w.get("window_minutes").and_then(Value::as_i64);
            let id = w.get("id").and_then(Value::as_str).unwrap_or("");
            let label = match minutes {
                Some(300) => "5h".to_string(),
                Some(10_080) if id.contains("sonnet") => "7d sonnet".to_string(),
                Some(10_080) if id.contains("opus") => "7d opus".to_string(),
                Some(10_080) => "7d".to_string(),
                Some(m) if m % 1440 == 0 => format!("{}d", m / 1440),
                Some(m) if m % 60 == 0 => format!("{}h", m / 60),
                Some(m) => format!("{m}m"),
                None => id.to_string(),
            };
            Some(Window {
                label,
                minutes,
                used,
                resets_at: w.get("resets_at").and_then(Value::as_i64),
            })
        })
        .collect()
}

fn percent(p: f64) -> String {
    format!("{}%", p.round() as i64)
}

fn blocks_view(
    data: &Data,
    req: &Request,
    picked: &[(i64, &SlotKey, &SlotAcc)],
    unpriced: &Unpriced,
    format: Format,
) -> String {
    let per_agent = sum_by(picked.iter().map(|(_, k, acc)| ((k.0, k.1), **acc)));
    let list = blocks::blocks(
        per_agent
            .iter()
            .map(|((slot, agent), acc)| (*slot, *agent, acc)),
    );
    let projection = |b: &Block| {
        let active = b.active(data.now);
        let projected = if active { b.projected(data.now) } else { None };
        let limit = if active {
            five_hour_limit(data, b.agent)
        } else {
            None
        };
        let pct = match (projected, limit) {
            (Some((cost, _)), Some((used, _))) => {
                blocks::projected_percent(used, b.acc.totals().cost_usd, cost)
            }
            _ => None,
        };
        (active, projected, limit, pct)
    };
    match format {
        Format::Json => {
            let rows = list
                .iter()
                .map(|b| {
                    let (active, projected, limit, pct) = projection(b);
                    let num = |v: Option<f64>| v.map_or(Value::Null, |v| Value::from(round_usd(v)));
                    Value::Object(
                        Object::new()
                            .with("agent", b.agent.name())
                            .with("start", b.start)
                            .with("end", b.end)
                            .with("first_at", b.acc.first_ts)
                            .with("last_at", b.acc.last_ts)
                            .with("active", active)
                            .with("totals", b.acc.totals().to_value())
                            .with("burn_usd_per_hour", num(b.burn_per_hour()))
                            .with(
                                "burn_tokens_per_hour",
                                b.tokens_per_hour()
                                    .map_or(Value::Null, |t| Value::from(t.round() as u64)),
                            )
                            .with("projected_cost_usd", num(projected.map(|p| p.0)))
                            .with(
                                "projected_tokens",
                                projected.map_or(Value::Null, |p| Value::from(p.1.round() as u64)),
                            )
                            .with("limit_used_percent", num(limit.map(|l| l.0)))
                            .with("projected_percent", num(pct)),
                    )
                })
                .collect();
            Value::Object(
                header(data, req, View::Blocks)
                    .with("blocks", Value::Array(rows))
                    .with("unpriced_models", unpriced_value(unpriced)),
            )
            .to_json()
                + "\n"
        }
        Format::Csv => {
            let mut head = vec!["agent", "start", "end", "active"];
            head.extend(CSV_TOKENS);
            head.push("burn_usd_per_hour");
            let rows: Vec<Vec<String>> = list
                .iter()
                .map(|b| {
                    let mut cells = vec![
                        b.agent.name().to_string(),
                        format_timestamp(b.start),
                        format_timestamp(b.end),
                        b.active(data.now).to_string(),
                    ];
                    cells.extend(csv_cells(&b.acc));
                    cells.push(
                        b.burn_per_hour()
                            .map(|r| Value::from(round_usd(r)).to_json())
                            .unwrap_or_default(),
                    );
                    cells
                })
                .collect();
            table::csv(&head, &rows)
        }
        Format::Text(style) => {
            let mut columns = vec![
                Column::text("Block start", 0),
                Column::text("Agent", 3),
                Column::text("Status", 4),
                Column::number("Requests", 1),
            ];
            columns.extend([
                Column::number("Total", 6),
                Column::number("Cost", 0),
                Column::number("Burn/h", 3),
            ]);
            let mut t = Table {
                columns,
                rows: Vec::new(),
            };
            for b in &list {
                let status = if b.active(data.now) {
                    format!("active, {} left", duration(b.end - data.now))
                } else {
                    "ended".to_string()
                };
                t.rows.push((
                    RowKind::Plain,
                    vec![
                        local_minute(data, b.start),
                        b.agent.name().into(),
                        status,
                        group(b.acc.requests),
                        group(b.acc.tokens.total()),
                        cost_cell(&b.acc),
                        b.burn_per_hour().map(dollars).unwrap_or_default(),
                    ],
                ));
            }
            let mut lines = vec![title(data, req, View::Blocks)];
            if list.is_empty() {
                lines.push("No requests in this range.".into());
            } else {
                lines.extend(t.lines(style));
            }
            let mut all = SlotAcc::default();
            for b in &list {
                all.merge(&b.acc);
            }
            lines.extend(notes(&all, unpriced));
            for b in list.iter().filter(|b| b.active(data.now)) {
                let (_, projected, limit, pct) = projection(b);
                let t = b.acc.totals();
                let mut line = format!(
                    "Active {} block {}–{}: {} tokens, {}",
                    b.agent.name(),
                    local_time(data, b.start),
                    local_time(data, b.end),
                    group(t.tokens.total()),
                    cost_cell(&b.acc),
                );
                match (b.burn_per_hour(), projected) {
                    (Some(rate), Some((cost, tokens))) => line.push_str(&format!(
                        "; burning {}/h, projected {} and {} tokens at {}",
                        dollars(rate),
                        dollars(cost),
                        group(tokens.round() as u64),
                        local_time(data, b.end)
                    )),
                    _ => line.push_str("; one request so far, no burn rate yet"),
                }
                if let (Some((used, _)), Some(p)) = (limit, pct) {
                    line.push_str(&format!(
                        "; 5h limit {} used, projected {}",
                        percent(used),
                        percent(p)
                    ));
                }
                lines.push(line + ".");
            }
            lines.join("\n") + "\n"
        }
    }
}

/// The summary: today, 7 and 30 days per agent, the limits, coverage.
fn summary(data: &Data, req: &Request, format: Format) -> String {
    let today = data.zone.local_day(data.now);
    let req = Request {
        since: today - 29,
        until: today,
        ..req.clone()
    };
    let picked = selected(data, &req);
    let unpriced = unpriced_of(picked.iter().map(|(_, k, acc)| (*k, *acc)));
    let agents: Vec<Agent> = match req.agent {
        Some(a) => vec![a],
        None => vec![Agent::Claude, Agent::Codex],
    };
    // [agent][window]: today, 7 days, 30 days.
    let mut sums = vec![[SlotAcc::default(); 3]; agents.len() + 1];
    for (day, k, acc) in &picked {
        let Some(i) = agents.iter().position(|a| *a == k.1) else {
            continue;
        };
        for (w, days) in [1, 7, 30].iter().enumerate() {
            if *day > today - days {
                sums[i][w].merge(acc);
                sums[agents.len()][w].merge(acc);
            }
        }
    }
    let names: Vec<&str> = agents
        .iter()
        .map(|a| a.name())
        .chain(std::iter::once("all"))
        .collect();
    match format {
        Format::Json => {
            let mut windows = Object::new();
            for (w, key) in ["today", "d7", "d30"].iter().enumerate() {
                let mut o = Object::new();
                for (i, name) in names.iter().enumerate() {
                    o = o.with(name, sums[i][w].totals().to_value());
                }
                windows = windows.with(key, Value::Object(o));
            }
            let mut limits = Object::new();
            for (a, v) in &data.limits {
                limits = limits.with(a.name(), v.clone());
            }
            Value::Object(
                header(data, &req, View::Summary)
                    .with("windows", Value::Object(windows))
                    .with("limits", Value::Object(limits))
                    .with("coverage", data.coverage.clone())
                    .with("unpriced_models", unpriced_value(&unpriced)),
            )
            .to_json()
                + "\n"
        }
        Format::Csv => {
            let mut head = vec!["agent", "window"];
            head.extend(CSV_TOKENS);
            let mut rows = Vec::new();
            for (i, name) in names.iter().enumerate() {
                for (w, key) in ["today", "d7", "d30"].iter().enumerate() {
                    let mut cells = vec![name.to_string(), key.to_string()];
                    cells.extend(csv_cells(&sums[i][w]));
                    rows.push(cells);
                }
            }
            table::csv(&head, &rows)
        }
        Format::Text(style) => {
            let mut t = Table {
                columns: vec![
                    Column::text("Agent", 0),
                    Column::number("Today", 0),
                    Column::number("tokens", 3).named("tokens today"),
                    Column::number("7 days", 0),
                    Column::number("tokens", 2).named("7-day tokens"),
                    Column::number("30 days", 0),
                    Column::number("tokens", 1).named("30-day tokens"),
                ],
                rows: Vec::new(),
            };
            for (i, name) in names.iter().enumerate() {
                let kind = if i == agents.len() {
                    if agents.len() == 1 {
                        continue;
                    }
                    RowKind::Total
                } else {
                    RowKind::Plain
                };
                let mut cells = vec![match *name {
                    "claude" => "Claude Code".to_string(),
                    "codex" => "Codex".to_string(),
                    _ => "All".to_string(),
                }];
                for window in &sums[i] {
                    cells.push(cost_cell(window));
                    cells.push(group(window.tokens.total()));
                }
                t.rows.push((kind, cells));
            }
            let mut lines = vec![format!("Usage in {}; {}", data.zone.name, freshness(data))];
            lines.extend(t.lines(style));
            let mut all = SlotAcc::default();
            for windows in &sums[..agents.len()] {
                all.merge(&windows[2]);
            }
            lines.extend(notes(&all, &unpriced));
            lines.extend(limit_lines(data, &agents));
            lines.push(coverage_line(data));
            lines.join("\n") + "\n"
        }
    }
}

/// One line per limit window, or the limits' state when there are none.
fn limit_lines(data: &Data, agents: &[Agent]) -> Vec<String> {
    let mut out = Vec::new();
    for (agent, v) in data.limits.iter().filter(|(a, _)| agents.contains(a)) {
        let state = v.get("state").and_then(Value::as_str).unwrap_or("unknown");
        let ws = windows(v);
        let name = match agent {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
        };
        if ws.is_empty() {
            if state != "disabled" {
                out.push(format!("Limits, {name}: {}", state.replace('_', " ")));
            }
            continue;
        }
        let parts: Vec<String> = ws
            .iter()
            .map(|w| {
                let resets = match w.resets_at {
                    Some(at) if at > data.now => format!(
                        ", resets {} (in {})",
                        local_time(data, at),
                        duration(at - data.now)
                    ),
                    _ => String::new(),
                };
                format!("{} {} used{resets}", w.label, percent(w.used))
            })
            .collect();
        out.push(format!("Limits, {name}: {}", parts.join("; ")));
    }
    out
}

fn count(v: &Value, agent: &str, key: &str) -> u64 {
    v.get(agent)
        .and_then(|a| a.get(key))
        .and_then(Value::as_i64)
        .map(|n| n.max(0) as u64)
        .unwrap_or(0)
}

/// Coverage in one line: the files read per agent, what was skipped.
pub(crate) fn coverage_line(data: &Data) -> String {
    let c = &data.coverage;
    if data.generated_at.is_none() {
        return "Coverage: nothing scanned yet; the first refresh is running.".into();
    }
    let files = |agent: &str| {
        let n = count(c, agent, "files_seen");
        format!("{n} file{}", if n == 1 { "" } else { "s" })
    };
    let mut line = format!(
        "Coverage: Claude Code {}, Codex {}",
        files("claude"),
        files("codex")
    );
    let archives = count(c, "codex", "files_compressed");
    if archives > 0 {
        line.push_str(&format!(" ({} archived)", group(archives)));
    }
    let skipped: u64 = ["claude", "codex"]
        .iter()
        .map(|a| {
            count(c, a, "files_unreadable")
                + count(c, a, "lines_malformed")
                + count(c, a, "lines_oversized")
                + count(c, a, "dirs_unreadable")
        })
        .sum::<u64>()
        + count(c, "codex", "files_compressed_skipped");
    if skipped > 0 {
        line.push_str(&format!(
            "; {} unreadable files or lines skipped",
            group(skipped)
        ));
    }
    if c.get("partial") == Some(&Value::Bool(true)) {
        line.push_str("; partial, a refresh continues the backfill");
    }
    line + "."
}

/// The statusline: today's cost, the active block's burn rate, the
/// tightest limit.
pub fn statusline(data: &Data, req: &Request) -> String {
    let today = data.zone.local_day(data.now);
    let req = Request {
        since: today,
        until: today,
        ..req.clone()
    };
    let picked = selected(data, &req);
    let mut all = SlotAcc::default();
    for (_, _, acc) in &picked {
        all.merge(acc);
    }
    let mut parts = vec![format!("{} today", cost_cell(&all))];
    // The active block may have started yesterday: look back 5 hours.
    let recent: Vec<_> = data
        .slots
        .iter()
        .filter(|(k, acc)| {
            acc.requests > 0 && k.0 >= data.now - 2 * blocks::BLOCK && req.wants(k.1, &k.3)
        })
        .collect();
    let per_agent = sum_by(recent.iter().map(|(k, acc)| ((k.0, k.1), *acc)));
    let list = blocks::blocks(
        per_agent
            .iter()
            .map(|((slot, agent), acc)| (*slot, *agent, acc)),
    );
    if let Some(rate) = list
        .iter()
        .filter(|b| b.active(data.now))
        .filter_map(Block::burn_per_hour)
        .max_by(f64::total_cmp)
    {
        parts.push(format!("{}/h", dollars(rate)));
    }
    let tightest = data
        .limits
        .iter()
        .filter(|(a, _)| req.agent.is_none_or(|x| x == *a))
        .flat_map(|(a, v)| windows(v).into_iter().map(move |w| (*a, w)))
        .max_by(|x, y| x.1.used.total_cmp(&y.1.used));
    if let Some((agent, w)) = tightest {
        parts.push(format!("{} {} {}", agent.name(), w.label, percent(w.used)));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
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
                "2026-11-28  gpt-5.5          20,000   3,000            0     100,000    123,000  $0.75".to_string(),
                "2026-11-29  claude-opus-4-6   1,500   2,500       10,000   1,000,000  1,014,000  $1.75".to_string(),
                rule(86),
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
                "Date        Models            Input  Output  Cache read      Total   Cost"
                    .to_string(),
                "2026-11-28  gpt-5.5          20,000   3,000     100,000    123,000  $0.75"
                    .to_string(),
                "2026-11-29  claude-opus-4-6   1,500   2,500   1,000,000  1,014,000  $1.75"
                    .to_string(),
                rule(73),
                "Total                        21,500   5,500   1,100,000  1,137,000  $2.50"
                    .to_string(),
                "Hidden to fit 80 columns: Cache write.".to_string(),
            ]
        );
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
                "Agent   Model             Input  Output  Cache write  Cache read      Total   Cost".to_string(),
                "claude  claude-opus-4-6   1,500   2,500       10,000   1,000,000  1,014,000  $1.75".to_string(),
                "codex   gpt-5.5          20,000   3,000            0     100,000    123,000  $0.75".to_string(),
                rule(82),
                "Total                    21,500   5,500       10,000   1,100,000  1,137,000  $2.50".to_string(),
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
                "Directory            Agents   Input  Output  Cache read      Total   Cost"
                    .to_string(),
                "/home/dev/alpha      claude   1,000   2,000   1,000,000  1,013,000  $1.25"
                    .to_string(),
                "/home/dev/beta       codex   20,000   3,000     100,000    123,000  $0.75"
                    .to_string(),
                "/home/dev/alpha/web  claude     500     500           0      1,000  $0.50"
                    .to_string(),
                rule(73),
                "Total                        21,500   5,500   1,100,000  1,137,000  $2.50"
                    .to_string(),
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
                "Hidden to fit 80 columns: Started, Models, Input, Output, Cache write, Cache read."
                    .to_string(),
            ]
        );
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
                "Limits, Codex: 5h 13% used, resets 14:30 (in 2h 30m); 7d 33% used, resets 2026-12-02 12:00 (in 3d 0h)".to_string(),
                "Coverage: Claude Code 2 files, Codex 1 file.".to_string(),
            ]
        );
    }

    #[test]
    fn summary_at_80_columns_fits_as_it_is() {
        assert_eq!(
            text(View::Summary, 80),
            [
                "Usage in UTC; as of 12:00".to_string(),
                "Agent        Today     tokens  7 days     tokens  30 days     tokens".to_string(),
                "Claude Code  $1.75  1,014,000   $1.75  1,014,000    $1.75  1,014,000".to_string(),
                "Codex        $0.00          0   $0.75    123,000    $0.75    123,000".to_string(),
                rule(68),
                "All          $1.75  1,014,000   $2.50  1,137,000    $2.50  1,137,000".to_string(),
                "Limits, Codex: 5h 13% used, resets 14:30 (in 2h 30m); 7d 33% used, resets 2026-12-02 12:00 (in 3d 0h)".to_string(),
                "Coverage: Claude Code 2 files, Codex 1 file.".to_string(),
            ]
        );
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
                let cells: Vec<&str> = line.split_whitespace().collect();
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
            Some(
                "No price for mystery-1, mystery-2: 2 requests (1,000 tokens) are not in the costs."
            )
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
        let row =
            |s: &str, d: &str, requests, input| (s.to_string(), d.to_string(), requests, input);
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
        });
        let table = render(&data, &request(), View::Session, style);
        let listed: Vec<&str> = table.lines().filter(|l| l.contains(" s-")).collect();
        assert_eq!(listed.len(), 50, "{table}");
        assert!(listed[0].contains(" s-59 ") && listed[49].contains(" s-10 "));
        let total = table.lines().find(|l| l.starts_with("Total")).unwrap();
        assert!(total.contains("1,830"), "{total}");
        assert!(
            table
                .contains("10 earlier sessions are in the total but not listed: --all lists them."),
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
}

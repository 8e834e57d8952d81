//! The summary (`heeler usage`): today, 7 and 30 days per agent, the
//! limits as bars, the 30 days' cost as a sparkline, and what was read.

use super::*;
use crate::usage::agents::ALL;

/// The summary: today, 7 and 30 days per agent, the limits, coverage.
/// Sums per agent (and all) and window: today, 7 days, 30 days.
type WindowSums = Vec<[SlotAcc; 3]>;

/// The summary: today, 7 and 30 days per agent, the limits and coverage.
pub(super) fn summary(data: &Data, req: &Request, format: Format) -> String {
    let today = data.zone.local_day(data.now);
    let req = Request {
        since: today - 29,
        until: today,
        ..req.clone()
    };
    let picked = selected(data, &req);
    let unpriced = unpriced_of(picked.iter().map(|(_, k, acc)| (*k, *acc)));
    let agents = agents_of_request(data, &req);
    let sums = window_sums(data, &req, &agents);
    let names: Vec<&str> = agents
        .iter()
        .map(|a| a.name())
        .chain(std::iter::once("all"))
        .collect();
    match format {
        Format::Json => summary_json(data, &req, &names, &sums, &unpriced),
        Format::Csv => summary_csv(&names, &sums),
        Format::Text(style) => summary_text(data, &req, &agents, &sums, &unpriced, style),
    }
}

fn summary_json(
    data: &Data,
    req: &Request,
    names: &[&str],
    sums: &WindowSums,
    unpriced: &Unpriced,
) -> String {
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
        header(data, req, View::Summary)
            .with("windows", Value::Object(windows))
            .with("limits", Value::Object(limits))
            .with("coverage", data.coverage.clone())
            .with("unpriced_models", unpriced_value(unpriced)),
    )
    .to_json()
        + "\n"
}

fn summary_csv(names: &[&str], sums: &WindowSums) -> String {
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

fn summary_text(
    data: &Data,
    req: &Request,
    agents: &[Agent],
    sums: &WindowSums,
    unpriced: &Unpriced,
    style: Style,
) -> String {
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
    // A row per agent, then all of them when there are two.
    for (i, windows) in sums.iter().enumerate() {
        let (kind, name) = match agents.get(i) {
            Some(agent) => (RowKind::Plain, agent.title()),
            None if agents.len() == 1 => continue,
            None => (RowKind::Total, "All"),
        };
        let mut cells = vec![name.to_string()];
        for (w, window) in windows.iter().enumerate() {
            cells.push(match kind {
                RowKind::Total => {
                    let parts: Vec<SlotAcc> = sums[..agents.len()].iter().map(|p| p[w]).collect();
                    total_cost_cell(&parts, window)
                }
                _ => cost_cell(window),
            });
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
    let fitted = |text: &str, indent: usize| table::wrap(text, style.width, indent);
    lines.extend(notes(&all, unpriced).iter().flat_map(|n| fitted(n, 0)));
    // Each limit window as a bar, the 30 days' cost as a sparkline; a row
    // wider than the table's width goes on under its picture.
    let (mut rows, states) = panels::limit_rows(data, agents, style.glyphs);
    rows.push(panels::spark_row(data, req, style.glyphs));
    let labels = rows.iter().map(|r| r.label.chars().count()).max();
    let indent = labels.unwrap_or(0) + 2;
    lines.extend(
        panels::lay_out(&rows)
            .iter()
            .flat_map(|l| fitted(l, indent)),
    );
    lines.extend(states.iter().flat_map(|s| fitted(s, 0)));
    lines.extend(fitted(&coverage_line(data), 0));
    lines.join("\n") + "\n"
}

pub(super) fn count(v: &Value, agent: &str, key: &str) -> u64 {
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
    // The snapshot's coverage is the app's document's: the agents it has.
    let per_agent: Vec<String> = ALL
        .iter()
        .filter(|a| a.always_shown() || c.get(a.name()).is_some())
        .map(|a| format!("{} {}", a.title(), files(a.name())))
        .collect();
    let mut line = format!("Coverage: {}", per_agent.join(", "));
    let archives = count(c, "codex", "files_compressed");
    if archives > 0 {
        line.push_str(&format!(" ({} archived)", group(archives)));
    }
    let skipped: u64 = ALL
        .iter()
        .map(|a| a.name())
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

//! The picture rows of usage: each limit window as a bar with its reset
//! countdown, each agent's active 5-hour block as a bar of its time gone
//! with its burn rate and projection, and the last 30 days' cost as a
//! sparkline. The live screen shows them all and the summary some; both
//! build them here, so a row reads the same in both. Rows are laid out in
//! three columns (label, picture, text) by [`lay_out`], the labels padded
//! to the longest so the pictures line up.

use super::*;
use crate::usage::views::data::daily_costs;
use crate::usage::views::picture::{self, Glyphs};

/// A bar's width in cells.
pub(crate) const BAR: usize = 20;
/// The days a cost sparkline shows, today included (one cell each).
pub(crate) const SPARK_DAYS: i64 = 30;

/// One picture row: a label, the picture, the text after it, and lines
/// under it (indented to the picture's column).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub(crate) label: String,
    pub(crate) picture: String,
    pub(crate) text: String,
    pub(crate) under: Vec<String>,
}

/// Rows as lines: `label  picture  text`, every label padded to the
/// longest, the lines under a row indented to its picture.
pub(crate) fn lay_out(rows: &[Row]) -> Vec<String> {
    let width = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = Vec::new();
    for row in rows {
        let pad = width - row.label.chars().count();
        out.push(
            format!(
                "{}{}  {}  {}",
                row.label,
                " ".repeat(pad),
                row.picture,
                row.text
            )
            .trim_end()
            .to_string(),
        );
        for line in &row.under {
            out.push(format!("{}{line}", " ".repeat(width + 2)));
        }
    }
    out
}

/// A limit window's bar row per current window of `agents`' limits, and,
/// for an agent with no current window whose limits are not turned off,
/// a line saying their state (`Limits, Claude Code: pending`).
pub(crate) fn limit_rows(data: &Data, agents: &[Agent], glyphs: Glyphs) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut states = Vec::new();
    for (agent, v) in data.limits.iter().filter(|(a, _)| agents.contains(a)) {
        let ws = windows(v);
        if ws.is_empty() {
            let state = v.get("state").and_then(Value::as_str).unwrap_or("unknown");
            if state != "disabled" {
                states.push(format!(
                    "Limits, {}: {}",
                    agent.title(),
                    state.replace('_', " ")
                ));
            }
            continue;
        }
        for w in ws {
            let resets = match w.resets_at {
                Some(at) if at > data.now => format!(
                    ", resets {} (in {})",
                    local_time(data, at),
                    duration(at - data.now)
                ),
                _ => String::new(),
            };
            rows.push(Row {
                label: format!("{} {}", agent.title(), w.label),
                picture: picture::bar(w.used / 100.0, BAR, glyphs),
                text: format!("{} used{resets}", percent(w.used)),
                under: Vec::new(),
            });
        }
    }
    (rows, states)
}

/// The active 5-hour blocks of the request's agents at `data.now`, in
/// agent order: the block's slots are the last 10 hours' (a block that is
/// still active began at most 5 hours ago, after a gap of at most 5).
pub(crate) fn active_blocks(data: &Data, req: &Request) -> Vec<Block> {
    let recent = data.slots.iter().filter(|(k, acc)| {
        acc.requests > 0 && k.0 >= data.now - 2 * blocks::BLOCK && req.wants(k.1, &k.3)
    });
    let per_agent = sum_by(recent.map(|(k, acc)| ((k.0, k.1), *acc)));
    let mut list: Vec<Block> = blocks::blocks(
        per_agent
            .iter()
            .map(|((slot, agent), acc)| (*slot, *agent, acc)),
    )
    .into_iter()
    .filter(|b| b.active(data.now))
    .collect();
    list.sort_by_key(|b| b.agent);
    list
}

/// An active block's row: the bar of its 5 hours gone, the time gone and
/// left, and under it the cost so far, the burn rate and the projection
/// at its end, against the agent's 5-hour limit when that is known.
pub(crate) fn block_row(data: &Data, block: &Block, glyphs: Glyphs) -> Row {
    let gone = (data.now - block.start).clamp(0, blocks::BLOCK);
    let mut detail = format!("{} so far", cost_cell(&block.acc));
    match (block.burn_per_hour(), block.projected(data.now)) {
        (Some(rate), Some((cost, _))) => {
            detail.push_str(&format!(
                ", {}/h, projected {} at {}",
                dollars(rate),
                dollars(cost),
                local_time(data, block.end)
            ));
            let limit = five_hour_limit(data, block.agent);
            let pct = limit.and_then(|(used, _)| {
                blocks::projected_percent(used, block.acc.totals().cost_usd, cost)
            });
            if let (Some((used, _)), Some(p)) = (limit, pct) {
                detail.push_str(&format!(
                    "; 5h limit {} used, projected {}",
                    percent(used),
                    percent(p)
                ));
            }
        }
        _ => detail.push_str("; one request so far, no burn rate yet"),
    }
    Row {
        label: format!("{} block", block.agent.title()),
        picture: picture::bar(gone as f64 / blocks::BLOCK as f64, BAR, glyphs),
        text: format!(
            "{}–{}, {} left",
            local_time(data, block.start),
            local_time(data, block.end),
            duration(block.end - data.now)
        ),
        under: vec![detail],
    }
}

/// The last [`SPARK_DAYS`] days' cost per day as a sparkline, with the
/// total and the costliest day.
pub(crate) fn spark_row(data: &Data, req: &Request, glyphs: Glyphs) -> Row {
    let costs = daily_costs(data, req, SPARK_DAYS);
    let total: f64 = costs.iter().sum();
    let top = costs.iter().copied().fold(0.0, f64::max);
    Row {
        label: format!("Cost, {SPARK_DAYS} days"),
        picture: picture::sparkline(&costs, glyphs),
        text: format!(
            "{} in all, {} on the costliest day",
            dollars(total),
            dollars(top)
        ),
        under: Vec::new(),
    }
}

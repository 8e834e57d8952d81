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
    /// The bar's fraction, so a narrower screen can draw it shorter (none
    /// for the sparkline).
    pub(crate) share: Option<f64>,
    /// How the picture is coloured where colour is on.
    pub(crate) tone: Tone,
}

/// What a row's picture says, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    /// Time or cost: no judgement.
    Neutral,
    /// A limit below [`CAUTION_PERCENT`].
    Calm,
    /// A limit at or above [`CAUTION_PERCENT`].
    Caution,
    /// Above [`WARN_PERCENT`], or a projection past the limit.
    Alarm,
}

/// A limit used beyond this is drawn in caution.
pub(crate) const CAUTION_PERCENT: f64 = 50.0;
/// A limit used beyond this, or a projection beyond 100%, is a warning.
pub(crate) const WARN_PERCENT: f64 = 80.0;

/// The tone of a limit used `used` percent.
fn limit_tone(used: f64) -> Tone {
    if used > WARN_PERCENT {
        Tone::Alarm
    } else if used >= CAUTION_PERCENT {
        Tone::Caution
    } else {
        Tone::Calm
    }
}

/// The warnings that must never be cut, most urgent first: an active
/// block whose projection passes its 5-hour limit, then every limit
/// window used beyond [`WARN_PERCENT`]. Each is one sentence the screen
/// wraps, never truncates.
pub(crate) fn warnings(data: &Data, req: &Request, agents: &[Agent]) -> Vec<String> {
    let mut out = Vec::new();
    for block in active_blocks(data, req) {
        if let Some((used, p)) = block_limit_projection(data, &block)
            && p > 100.0
        {
            out.push(format!(
                "{} 5h limit projected {} by {} ({} used now)",
                block.agent.title(),
                percent(p),
                local_time(data, block.end),
                percent(used)
            ));
        }
    }
    for (agent, v) in data.limits.iter().filter(|(a, _)| agents.contains(a)) {
        for w in windows(v).into_iter().filter(|w| w.used > WARN_PERCENT) {
            let resets = match w.resets_at {
                Some(at) if at > data.now => format!(
                    ", resets {} (in {})",
                    local_time(data, at),
                    duration(at - data.now)
                ),
                _ => String::new(),
            };
            out.push(format!(
                "{} {} limit {} used{resets}",
                agent.title(),
                w.label,
                percent(w.used)
            ));
        }
    }
    out
}

/// An active block's 5-hour limit: (used now, projected at the block's
/// end), when the limit and a burn rate are known.
pub(crate) fn block_limit_projection(data: &Data, block: &Block) -> Option<(f64, f64)> {
    let (cost, _) = block.projected(data.now)?;
    let (used, _) = five_hour_limit(data, block.agent)?;
    let p = blocks::projected_percent(used, block.acc.totals().cost_usd, cost)?;
    Some((used, p))
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
                    crate::base::terminal::inert(&state.replace('_', " "))
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
                share: Some(w.used / 100.0),
                tone: limit_tone(w.used),
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
        _ => detail.push_str(NO_RATE_YET),
    }
    let share = gone as f64 / blocks::BLOCK as f64;
    let over = block_limit_projection(data, block).is_some_and(|(_, p)| p > 100.0);
    Row {
        label: format!("{} block", block.agent.title()),
        picture: picture::bar(share, BAR, glyphs),
        text: format!(
            "{}–{}, {} left",
            local_time(data, block.start),
            local_time(data, block.end),
            duration(block.end - data.now)
        ),
        under: vec![detail],
        share: Some(share),
        tone: if over { Tone::Alarm } else { Tone::Neutral },
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
        share: None,
        tone: Tone::Neutral,
    }
}

//! `heeler usage statusline`: one short line for a status bar.

use super::*;
use crate::usage::views::claude_status::{Session, session_part};

/// What the statusline says before the first refresh has written a cache.
pub(crate) const SCANNING: &str = "usage: scanning…";

/// The statusline: today's cost, the active block's burn rate, the
/// tightest limit.
pub fn statusline(data: &Data, req: &Request) -> String {
    statusline_for(data, req, None)
}

/// The statusline, starting with Claude Code's session cost when Claude
/// Code gave it (`claude_status`).
pub(crate) fn statusline_for(data: &Data, req: &Request, session: Option<&Session>) -> String {
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
    let mut parts: Vec<String> = session.map(session_part).into_iter().collect();
    if data.generated_at.is_none() {
        // Before the first refresh there is nothing to sum: not $0.00.
        parts.push(SCANNING.to_string());
        return parts.join(" · ");
    }
    parts.push(format!("{} today", cost_cell(&all)));
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

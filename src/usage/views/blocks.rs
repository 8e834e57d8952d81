//! 5-hour blocks, the windows Anthropic's plan limits count in, grouped
//! the way ccusage documents them: a block starts at its first request's
//! hour (UTC, floored), lasts 5 hours, and a request after the block's end
//! or more than 5 hours after the previous request starts the next one.
//! The active block's burn rate is its cost per hour between its first and
//! last request; its projection adds that rate over the time left. Both
//! wait until the block has [`BURN_MIN_REQUESTS`] requests over at least
//! [`BURN_MIN_SECONDS`]: two requests seconds apart are not a rate (they
//! projected dollars an hour from cents), and claude-monitor likewise
//! waits for a block's first minutes before it projects.
//!
//! Blocks are built from 15-minute slots with their first and last request
//! times, which is exact: a block's start and end are whole hours, so a
//! slot never straddles one, and a gap longer than 5 hours can only fall
//! between slots. A request at exactly the end instant opens the next block
//! (the window is half-open), where ccusage still counts it in the ending
//! one: Anthropic's help pages say the session limit resets five hours after
//! the session starts and show that instant as the reset time, so a request
//! made at it is made with the new allowance.

use crate::usage::aggregate::SlotAcc;
use crate::usage::event::Agent;

/// A block's length.
pub const BLOCK: i64 = 5 * 3600;

/// The fewest requests a block has before it has a burn rate.
pub const BURN_MIN_REQUESTS: u64 = 3;
/// The shortest span (first to last request) a block has before it has a
/// burn rate: 10 minutes.
pub const BURN_MIN_SECONDS: i64 = 10 * 60;

/// One block of one agent's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub agent: Agent,
    pub start: i64,
    /// `start` + 5 hours.
    pub end: i64,
    /// Sums, with the first and last request's times.
    pub acc: SlotAcc,
}

impl Block {
    /// Whether the block is still running at `now`.
    pub(crate) fn active(&self, now: i64) -> bool {
        now < self.end && now - self.acc.last_ts < BLOCK
    }

    /// The span a rate is measured over (first to last request), once the
    /// block has enough requests and minutes to have one.
    fn rate_span(&self) -> Option<f64> {
        let span = self.acc.last_ts - self.acc.first_ts;
        (self.acc.requests >= BURN_MIN_REQUESTS && span >= BURN_MIN_SECONDS).then_some(span as f64)
    }

    /// Dollars per hour between the first and last request; `None` before
    /// [`BURN_MIN_REQUESTS`] requests over [`BURN_MIN_SECONDS`].
    pub(crate) fn burn_per_hour(&self) -> Option<f64> {
        let span = self.rate_span()?;
        Some(self.acc.totals().cost_usd * 3600.0 / span)
    }

    /// Tokens per hour, on the same span and rule.
    pub(crate) fn tokens_per_hour(&self) -> Option<f64> {
        let span = self.rate_span()?;
        Some(self.acc.tokens.total() as f64 * 3600.0 / span)
    }

    /// The projected (cost, tokens) at the block's end when the burn rate
    /// holds from `now` on.
    pub(crate) fn projected(&self, now: i64) -> Option<(f64, f64)> {
        let left = (self.end - now).max(0) as f64 / 3600.0;
        let t = self.acc.totals();
        Some((
            t.cost_usd + self.burn_per_hour()? * left,
            t.tokens.total() as f64 + self.tokens_per_hour()? * left,
        ))
    }
}

/// Blocks of `slots` (one agent's or several agents', each agent's blocks
/// apart), each agent's in time order; `slots` must be in time order.
pub fn blocks<'a>(slots: impl Iterator<Item = (i64, Agent, &'a SlotAcc)>) -> Vec<Block> {
    let mut open: Vec<Block> = Vec::new();
    let mut out: Vec<Block> = Vec::new();
    for (_, agent, acc) in slots {
        if acc.requests == 0 {
            continue;
        }
        let current = open.iter_mut().find(|b| b.agent == agent);
        match current {
            Some(b) if acc.first_ts < b.end && acc.first_ts - b.acc.last_ts <= BLOCK => {
                b.acc.merge(acc);
            }
            Some(b) => {
                out.push(*b);
                *b = new_block(agent, acc);
            }
            None => open.push(new_block(agent, acc)),
        }
    }
    out.extend(open);
    out.sort_by_key(|b| (b.start, b.agent));
    out
}

fn new_block(agent: Agent, acc: &SlotAcc) -> Block {
    let start = acc.first_ts.div_euclid(3600) * 3600;
    Block {
        agent,
        start,
        end: start + BLOCK,
        acc: *acc,
    }
}

/// The projected share of a 5-hour limit at the block's end: the used
/// percentage grows with the block's cost (`used` now, `cost` now,
/// `projected` cost at the end).
pub(crate) fn projected_percent(used: f64, cost: f64, projected: f64) -> Option<f64> {
    (cost > 0.0).then(|| used * projected / cost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::time::parse_timestamp;

    fn at(text: &str) -> i64 {
        parse_timestamp(text).unwrap()
    }

    /// A slot of one request at `ts` costing `cents`.
    fn slot(ts: i64, cents: u64) -> (i64, Agent, SlotAcc) {
        let acc = SlotAcc {
            requests: 1,
            cost_pico: cents * 10_000_000_000,
            first_ts: ts,
            last_ts: ts,
            tokens: crate::usage::event::Tokens {
                output: 100,
                ..Default::default()
            },
            ..SlotAcc::default()
        };
        (ts - ts.rem_euclid(900), Agent::Claude, acc)
    }

    fn of(list: &[(i64, Agent, SlotAcc)]) -> Vec<Block> {
        blocks(list.iter().map(|(s, a, acc)| (*s, *a, acc)))
    }

    #[test]
    fn a_block_starts_on_the_hour_and_lasts_five_hours() {
        let b = of(&[
            slot(at("2026-11-29T07:42:10Z"), 10),
            slot(at("2026-11-29T11:59:59Z"), 10),
            // 12:00 is the first block's end: a new block at 12:00.
            slot(at("2026-11-29T12:00:00Z"), 10),
        ]);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].start, at("2026-11-29T07:00:00Z"));
        assert_eq!(b[0].end, at("2026-11-29T12:00:00Z"));
        assert_eq!(b[0].acc.requests, 2);
        assert_eq!(b[1].start, at("2026-11-29T12:00:00Z"));
    }

    #[test]
    fn a_request_at_exactly_start_plus_five_hours_opens_the_next_block() {
        // 07:00:00 opens [07:00, 12:00); 11:59:59 is in it; 12:00:00 is the
        // limit's reset instant, the first second of [12:00, 17:00).
        let b = of(&[
            slot(at("2026-11-29T07:00:00Z"), 10),
            slot(at("2026-11-29T11:59:59Z"), 20),
            slot(at("2026-11-29T12:00:00Z"), 40),
        ]);
        let spans: Vec<(i64, i64, u64, u64)> = b
            .iter()
            .map(|b| (b.start, b.end, b.acc.requests, b.acc.cost_pico))
            .collect();
        let cents = 10_000_000_000;
        assert_eq!(
            spans,
            [
                (
                    at("2026-11-29T07:00:00Z"),
                    at("2026-11-29T12:00:00Z"),
                    2,
                    30 * cents
                ),
                (
                    at("2026-11-29T12:00:00Z"),
                    at("2026-11-29T17:00:00Z"),
                    1,
                    40 * cents
                ),
            ]
        );
        // The first block is over at 12:00:00 (no longer active).
        assert!(b[0].active(at("2026-11-29T11:59:59Z")));
        assert!(!b[0].active(at("2026-11-29T12:00:00Z")));
    }

    #[test]
    fn a_gap_is_not_a_block_and_the_next_request_starts_one() {
        let b = of(&[
            slot(at("2026-11-29T01:10:00Z"), 10),
            slot(at("2026-11-29T09:30:00Z"), 10),
        ]);
        assert_eq!(b.len(), 2);
        assert_eq!(b[1].start, at("2026-11-29T09:00:00Z"));
    }

    #[test]
    fn a_block_spans_midnight_in_one_piece() {
        let b = of(&[
            slot(at("2026-11-28T22:20:00Z"), 10),
            slot(at("2026-11-29T01:40:00Z"), 30),
        ]);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].start, at("2026-11-28T22:00:00Z"));
        assert_eq!(b[0].end, at("2026-11-29T03:00:00Z"));
        assert_eq!(b[0].acc.cost_pico, 40 * 10_000_000_000);
    }

    #[test]
    fn blocks_are_utc_hours_across_a_dst_change() {
        // Europe/Paris leaves summer time at 2026-10-25T01:00Z: the block
        // is 5 real hours from a whole UTC hour regardless.
        let b = of(&[
            slot(at("2026-10-25T00:30:00Z"), 10),
            slot(at("2026-10-25T04:59:00Z"), 10),
        ]);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].end - b[0].start, BLOCK);
    }

    #[test]
    fn burn_rate_and_projection() {
        let b = of(&[
            slot(at("2026-11-29T10:00:00Z"), 100),
            slot(at("2026-11-29T10:30:00Z"), 50),
            slot(at("2026-11-29T11:00:00Z"), 50),
        ]);
        let now = at("2026-11-29T12:00:00Z");
        assert!(b[0].active(now));
        // $2 over one hour: $2/h, 3 hours left: $8 at the end.
        assert_eq!(b[0].burn_per_hour(), Some(2.0));
        let (cost, tokens) = b[0].projected(now).unwrap();
        assert!((cost - 8.0).abs() < 1e-9);
        // 300 tokens an hour likewise: 300 + 900.
        assert!((tokens - 1200.0).abs() < 1e-9);
        assert_eq!(projected_percent(20.0, 2.0, 8.0), Some(80.0));
        assert!(!b[0].active(at("2026-11-29T15:00:00Z")));
    }

    #[test]
    fn no_burn_rate_before_three_requests_over_ten_minutes() {
        // The case: two requests 2 s apart.
        let two = of(&[
            slot(at("2026-11-29T10:00:00Z"), 1),
            slot(at("2026-11-29T10:00:02Z"), 1),
        ]);
        assert_eq!(two[0].burn_per_hour(), None);
        assert_eq!(two[0].projected(at("2026-11-29T10:01:00Z")), None);
        // Three requests, but 9 min 59 s apart.
        let quick = of(&[
            slot(at("2026-11-29T10:00:00Z"), 1),
            slot(at("2026-11-29T10:05:00Z"), 1),
            slot(at("2026-11-29T10:09:59Z"), 1),
        ]);
        assert_eq!(quick[0].burn_per_hour(), None);
        // Three requests over exactly 10 minutes: 3 cents per 1/6 hour.
        let enough = of(&[
            slot(at("2026-11-29T10:00:00Z"), 1),
            slot(at("2026-11-29T10:05:00Z"), 1),
            slot(at("2026-11-29T10:10:00Z"), 1),
        ]);
        let rate = enough[0].burn_per_hour().unwrap();
        assert!((rate - 0.18).abs() < 1e-9, "{rate}");
    }

    #[test]
    fn agents_have_blocks_of_their_own() {
        let mut codex = slot(at("2026-11-29T10:30:00Z"), 10);
        codex.1 = Agent::Codex;
        let b = of(&[
            slot(at("2026-11-29T10:00:00Z"), 10),
            codex,
            slot(at("2026-11-29T10:45:00Z"), 10),
        ]);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].acc.requests, 2);
        assert_eq!(b[1].agent, Agent::Codex);
    }
}

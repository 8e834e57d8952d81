//! What every view reads, as plain values, and the one filter and grouping
//! of slots they share: a view is a pure function of a [`Data`] and a
//! [`Request`], so it is tested without files or a terminal.

use std::collections::BTreeMap;

use crate::base::json::Value;
use crate::base::tz::Zone;
use crate::usage::aggregate::{SlotAcc, SlotKey};
use crate::usage::event::Agent;
use crate::usage::time::{civil_from_days, days_from_civil, format_date, parse_date};

/// The cache as the views see it.
#[derive(Debug, Clone)]
pub struct Data {
    /// The aggregate's slots, in time order (exact sums and spans): per
    /// session for the session view, which groups by it; summed over
    /// sessions for the others, which group it away (`views::read_slots`).
    pub slots: Vec<(SlotKey, SlotAcc)>,
    pub zone: Zone,
    pub now: i64,
    /// When the snapshot was made; `None` before the first refresh.
    pub generated_at: Option<i64>,
    /// The answer's `refresh.state` (`idle`, `running`, `stale`, `failed`).
    pub refresh: &'static str,
    /// The snapshot's `coverage` member (`Null` before the first refresh).
    pub coverage: Value,
    /// `limits.claude` and `limits.codex`, as the query reports them.
    pub limits: Vec<(Agent, Value)>,
}

/// Rows of a period view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Day,
    /// Weeks starting on Monday.
    Week,
    Month,
}

/// Which rows a view shows, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// First and last local day shown (inclusive).
    pub since: i64,
    pub until: i64,
    pub agent: Option<Agent>,
    /// A directory; its subdirectories count too.
    pub dir: Option<String>,
    pub breakdown: bool,
    /// List every session: the session view's table lists the latest
    /// [`SESSION_ROWS`] unless asked (JSON and CSV always list all).
    pub all: bool,
}

/// Sessions the session view's table lists by default, the latest first:
/// a Host of many agents has thousands a month, which no one reads as a
/// table (the total still counts them all, and says how many are not
/// listed).
pub const SESSION_ROWS: usize = 50;

/// Why the options cannot be used (a usage error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadOption(pub String);

/// Days a view shows by default, today included.
pub(crate) const DEFAULT_DAYS: i64 = 30;

/// `YYYY-MM-DD` or `YYYYMMDD` (ccusage's form).
pub(crate) fn parse_day(text: &str) -> Option<i64> {
    if text.len() == 8 && text.bytes().all(|b| b.is_ascii_digit()) {
        return parse_date(&format!("{}-{}-{}", &text[..4], &text[4..6], &text[6..]));
    }
    parse_date(text)
}

impl Request {
    /// Validates the options against `today` (a local day number).
    pub fn new(
        since: Option<&str>,
        until: Option<&str>,
        agent: Option<&str>,
        dir: Option<&str>,
        breakdown: bool,
        today: i64,
    ) -> Result<Request, BadOption> {
        let day = |flag: &str, text: Option<&str>, default: i64| match text {
            None => Ok(default),
            Some(t) => parse_day(t)
                .ok_or_else(|| BadOption(format!("{flag} must be YYYY-MM-DD or YYYYMMDD: {t:?}"))),
        };
        let until = day("--until", until, today)?;
        let since = day("--since", since, until - (DEFAULT_DAYS - 1))?;
        if since > until {
            return Err(BadOption("--since is after --until".into()));
        }
        let agent = match agent {
            None => None,
            Some(name) => Some(Agent::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = crate::usage::agents::ALL.map(Agent::name).into();
                let (last, rest) = names.split_last().unwrap_or((&"", &[]));
                BadOption(format!(
                    "--agent must be {} or {last}: {name:?}",
                    rest.join(", ")
                ))
            })?),
        };
        let dir = dir.map(|d| match d.trim_end_matches('/') {
            "" => "/".to_string(),
            d => d.to_string(),
        });
        Ok(Request {
            since,
            until,
            agent,
            dir,
            breakdown,
            all: false,
        })
    }

    /// Refuses a `--since` older than the history the cache keeps
    /// (`retention_days` days up to `today`, `usage.toml`): those days
    /// would show as empty, which reads as no usage.
    pub fn check_history(&self, retention_days: i64, today: i64) -> Result<(), BadOption> {
        let first = today - (retention_days - 1);
        if self.since >= first {
            return Ok(());
        }
        let max = crate::usage::config::MAX_RETENTION_DAYS;
        let more = if retention_days < max {
            format!("; set retention_days in usage.toml (up to {max}) to keep more")
        } else {
            String::new()
        };
        Err(BadOption(format!(
            "--since {} is before the history kept ({retention_days} days, from {}){more}",
            format_date(self.since),
            format_date(first),
        )))
    }

    /// Whether a slot's agent and directory are asked for.
    pub fn wants(&self, agent: Agent, cwd: &str) -> bool {
        self.agent.is_none_or(|a| a == agent) && self.dir.as_deref().is_none_or(|d| under(cwd, d))
    }
}

/// Whether `path` is `dir` or below it.
pub fn under(path: &str, dir: &str) -> bool {
    dir == "/"
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The slots a request asks for with their local day, in time order (a
/// slot's local day is looked up once per slot time).
pub(crate) fn selected<'d>(data: &'d Data, req: &Request) -> Vec<(i64, &'d SlotKey, &'d SlotAcc)> {
    let mut last: Option<(i64, i64)> = None;
    let mut out = Vec::new();
    for (key, acc) in &data.slots {
        if acc.requests == 0 || !req.wants(key.1, &key.3) {
            continue;
        }
        let day = match last {
            Some((slot, day)) if slot == key.0 => day,
            _ => {
                let day = data.zone.local_day(key.0);
                last = Some((key.0, day));
                day
            }
        };
        if (req.since..=req.until).contains(&day) {
            out.push((day, key, acc));
        }
    }
    out
}

/// The first day of the period holding local day `day`.
pub(crate) fn period_start(period: Period, day: i64) -> i64 {
    match period {
        Period::Day => day,
        // Day 0 (1970-01-01) was a Thursday.
        Period::Week => day - (day + 3).rem_euclid(7),
        Period::Month => {
            let (y, m, _) = civil_from_days(day);
            days_from_civil(y, m, 1)
        }
    }
}

/// A period's label: the day, the week's Monday, or `YYYY-MM`.
pub(crate) fn period_label(period: Period, start: i64) -> String {
    match period {
        Period::Day | Period::Week => format_date(start),
        Period::Month => format_date(start)[..7].to_string(),
    }
}

/// Sums by any key, in key order.
pub(crate) fn sum_by<K: Ord>(items: impl Iterator<Item = (K, SlotAcc)>) -> BTreeMap<K, SlotAcc> {
    let mut out: BTreeMap<K, SlotAcc> = BTreeMap::new();
    for (k, acc) in items {
        let e = out.entry(k).or_default();
        e.merge(&acc);
    }
    out
}

/// The summary's windows, in days up to today: today, 7 days, 30 days.
pub(crate) const WINDOWS: [i64; 3] = [1, 7, 30];

/// The sums of the summary's windows ([`WINDOWS`]) per agent of `agents`,
/// then over them all (the last entry): `out[agent][window]`. A window of
/// `n` days holds the local days after `today - n`; the request's agent
/// and directory filter applies, its days do not.
pub(crate) fn window_sums(data: &Data, req: &Request, agents: &[Agent]) -> Vec<[SlotAcc; 3]> {
    let today = data.zone.local_day(data.now);
    let req = Request {
        since: today - (DEFAULT_DAYS - 1),
        until: today,
        ..req.clone()
    };
    let mut sums = vec![[SlotAcc::default(); 3]; agents.len() + 1];
    for (day, k, acc) in selected(data, &req) {
        let Some(i) = agents.iter().position(|a| *a == k.1) else {
            continue;
        };
        for (w, days) in WINDOWS.iter().enumerate() {
            if day > today - days {
                sums[i][w].merge(acc);
                sums[agents.len()][w].merge(acc);
            }
        }
    }
    sums
}

/// The cost of each of the `days` local days up to today, oldest first,
/// in dollars (the request's agent and directory filter applies).
pub(crate) fn daily_costs(data: &Data, req: &Request, days: i64) -> Vec<f64> {
    let today = data.zone.local_day(data.now);
    let first = today - (days - 1);
    let req = Request {
        since: first,
        until: today,
        ..req.clone()
    };
    let mut pico = vec![0u64; days.max(0) as usize];
    for (day, _, acc) in selected(data, &req) {
        if let Some(cell) = usize::try_from(day - first)
            .ok()
            .and_then(|i| pico.get_mut(i))
        {
            *cell = cell.saturating_add(acc.cost_pico);
        }
    }
    pico.into_iter().map(|p| p as f64 / 1e12).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weeks_start_on_monday_and_months_on_the_first() {
        // 2026-11-29 is a Sunday; its week began on Monday 2026-11-23.
        let sunday = parse_date("2026-11-29").unwrap();
        assert_eq!(
            format_date(period_start(Period::Week, sunday)),
            "2026-11-23"
        );
        let monday = parse_date("2026-11-23").unwrap();
        assert_eq!(period_start(Period::Week, monday), monday);
        assert_eq!(period_label(Period::Month, sunday), "2026-11");
        assert_eq!(
            format_date(period_start(Period::Month, sunday)),
            "2026-11-01"
        );
    }

    #[test]
    fn options_are_validated() {
        let today = parse_date("2026-11-29").unwrap();
        let r = Request::new(None, None, None, None, false, today).unwrap();
        assert_eq!(
            (format_date(r.since), r.until),
            ("2026-10-31".into(), today)
        );
        let r = Request::new(
            Some("20261101"),
            Some("2026-11-02"),
            Some("codex"),
            Some("/a/"),
            true,
            today,
        )
        .unwrap();
        assert_eq!(format_date(r.since), "2026-11-01");
        assert_eq!(r.agent, Some(Agent::Codex));
        assert_eq!(r.dir.as_deref(), Some("/a"));
        assert!(Request::new(Some("2026-12-01"), None, None, None, false, today).is_err());
        assert!(Request::new(Some("yesterday"), None, None, None, false, today).is_err());
        assert!(Request::new(None, None, Some("no-such-agent"), None, false, today).is_err());
    }

    #[test]
    fn a_since_before_the_history_kept_is_refused_with_the_way_out() {
        let today = parse_date("2026-11-29").unwrap();
        let since = |s: &str| Request::new(Some(s), None, None, None, false, today).unwrap();
        // 90 days up to 2026-11-29 start on 2026-09-01.
        assert_eq!(since("2026-09-01").check_history(90, today), Ok(()));
        assert_eq!(
            since("2026-08-31").check_history(90, today),
            Err(BadOption(
                "--since 2026-08-31 is before the history kept (90 days, from 2026-09-01); \
                 set retention_days in usage.toml (up to 365) to keep more"
                    .into()
            ))
        );
        assert_eq!(
            since("2025-01-01").check_history(365, today),
            Err(BadOption(
                "--since 2025-01-01 is before the history kept (365 days, from 2025-11-30)".into()
            ))
        );
    }

    #[test]
    fn a_directory_holds_its_subdirectories_only() {
        assert!(under("/home/dev/alpha", "/home/dev"));
        assert!(under("/home/dev", "/home/dev"));
        assert!(!under("/home/devx", "/home/dev"));
        assert!(under("/anything", "/"));
    }
}

//! The cached snapshot and the JSON v1 answer built from it.
//!
//! The worker stores priced totals in 15-minute UTC slots
//! ([`Snapshot`], `snapshot-v1.json`); a query turns them into the v1
//! document for *its* zone and *its* now (today / 7-day / 30-day windows, 30
//! zero-filled days, models, top directories) in a few milliseconds, so the
//! answer is correct in any zone and on any day without rescanning.

use std::collections::BTreeMap;

use crate::json::{self, Object, Value};
use crate::usage_aggregate::{SlotTotals, Totals};
use crate::usage_pricing::SourceMeta;
use crate::usage_row::{Agent, Tokens};
use crate::usage_time::format_date;
use crate::usage_tz::Zone;

/// Schema version of the query answer and the snapshot file.
pub const VERSION: u64 = 1;
/// Days in the longest window.
pub const DAYS: i64 = 30;
/// Directories listed by name.
pub const TOP_DIRECTORIES: usize = 10;

/// What the worker leaves for queries.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub generated_at: i64,
    /// The worker stopped at its budget; another run continues the backfill.
    pub partial: bool,
    pub pricing: SourceMeta,
    pub coverage: Value,
    pub slots: Vec<SlotTotals>,
}

fn totals_row(t: &Totals) -> Value {
    let k = &t.tokens;
    Value::Array(vec![
        t.requests.into(),
        k.input.into(),
        k.cache_read.into(),
        k.cache_write_5m.into(),
        k.cache_write_1h.into(),
        k.output.into(),
        k.reasoning.into(),
        t.cost_usd.into(),
        t.unpriced_tokens.into(),
        t.unpriced_requests.into(),
    ])
}

fn totals_from_row(v: &[Value]) -> Option<Totals> {
    let n = |i: usize| {
        v.get(i)
            .and_then(Value::as_i64)
            .and_then(|n| u64::try_from(n).ok())
    };
    Some(Totals {
        requests: n(0)?,
        tokens: Tokens {
            input: n(1)?,
            cache_read: n(2)?,
            cache_write_5m: n(3)?,
            cache_write_1h: n(4)?,
            output: n(5)?,
            reasoning: n(6)?,
        },
        cost_usd: v.get(7)?.as_f64()?,
        unpriced_tokens: n(8)?,
        unpriced_requests: n(9)?,
    })
}

impl Snapshot {
    /// `snapshot-v1.json`: strings interned, one compact row per slot.
    pub fn to_json(&self) -> String {
        fn index(s: &str, strings: &mut Vec<String>) -> u64 {
            match strings.iter().position(|x| x == s) {
                Some(i) => i as u64,
                None => {
                    strings.push(s.to_string());
                    (strings.len() - 1) as u64
                }
            }
        }
        let mut owned: Vec<String> = Vec::new();
        let mut rows = Vec::with_capacity(self.slots.len());
        for s in &self.slots {
            let model = index(&s.model, &mut owned);
            let cwd = index(&s.cwd, &mut owned);
            rows.push(Value::Array(vec![
                s.slot.into(),
                s.agent.name().into(),
                model.into(),
                cwd.into(),
                totals_row(&s.totals),
            ]));
        }
        let p = &self.pricing;
        Value::Object(
            Object::new()
                .with("v", VERSION)
                .with("generated_at", self.generated_at)
                .with("partial", self.partial)
                .with(
                    "pricing",
                    Value::Object(
                        Object::new()
                            .with("source", p.source.as_str())
                            .with("version", p.version.as_str())
                            .with("date", p.date.as_str())
                            .with("source_url", p.source_url.as_str())
                            .with("sha256", p.source_sha256.as_str())
                            .with("license", p.license.as_str()),
                    ),
                )
                .with("coverage", self.coverage.clone())
                .with(
                    "strings",
                    Value::Array(owned.iter().map(|s| Value::from(s.as_str())).collect()),
                )
                .with("slots", Value::Array(rows)),
        )
        .to_json()
    }

    /// Reads `snapshot-v1.json`; `None` if it is not one.
    pub fn parse(text: &str) -> Option<Snapshot> {
        let v = json::parse(text).ok()?;
        if v.get("v")?.as_i64()? != VERSION as i64 {
            return None;
        }
        let strings: Vec<&str> = v
            .get("strings")?
            .as_array()?
            .iter()
            .map(|s| s.as_str())
            .collect::<Option<_>>()?;
        let mut slots = Vec::new();
        for row in v.get("slots")?.as_array()? {
            let row = row.as_array()?;
            let agent = match row.get(1)?.as_str()? {
                "claude" => Agent::Claude,
                "codex" => Agent::Codex,
                _ => return None,
            };
            let s = |i: usize| -> Option<String> {
                let n = usize::try_from(row.get(i)?.as_i64()?).ok()?;
                strings.get(n).map(|s| s.to_string())
            };
            slots.push(SlotTotals {
                slot: row.first()?.as_i64()?,
                agent,
                model: s(2)?,
                cwd: s(3)?,
                totals: totals_from_row(row.get(4)?.as_array()?)?,
            });
        }
        let p = v.get("pricing")?;
        let ps = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some(Snapshot {
            generated_at: v.get("generated_at")?.as_i64()?,
            partial: v.get("partial").and_then(Value::as_bool).unwrap_or(false),
            pricing: SourceMeta {
                source: ps("source"),
                version: ps("version"),
                date: ps("date"),
                source_url: ps("source_url"),
                source_sha256: ps("sha256"),
                license: ps("license"),
            },
            coverage: v.get("coverage")?.clone(),
            slots,
        })
    }
}

/// The pricing object of an answer.
pub fn pricing_value(p: &SourceMeta) -> Value {
    Value::Object(
        Object::new()
            .with("source", p.source.as_str())
            .with("version", p.version.as_str())
            .with("date", p.date.as_str())
            .with("source_url", p.source_url.as_str())
            .with("sha256", p.source_sha256.as_str())
            .with("license", p.license.as_str()),
    )
}

/// Everything a v1 answer says besides the token totals.
#[derive(Debug, Clone)]
pub struct Envelope {
    pub now: i64,
    pub refresh: Value,
    pub runtime: Value,
    pub pricing: SourceMeta,
    pub limits: Value,
    pub errors: Vec<Value>,
}

#[derive(Default, Clone, Copy)]
struct ByAgent {
    claude: Totals,
    codex: Totals,
}

impl ByAgent {
    fn add(&mut self, agent: Agent, t: &Totals) {
        match agent {
            Agent::Claude => self.claude.add(t),
            Agent::Codex => self.codex.add(t),
        }
    }
    fn all(&self) -> Totals {
        let mut all = self.claude;
        all.add(&self.codex);
        all
    }
}

fn by_total_then_cost(a: &Totals, b: &Totals) -> std::cmp::Ordering {
    b.tokens
        .total()
        .cmp(&a.tokens.total())
        .then(b.cost_usd.total_cmp(&a.cost_usd))
}

/// Builds the v1 answer.
pub fn render(snapshot: Option<&Snapshot>, zone: &Zone, env: &Envelope) -> Value {
    let today = zone.local_day(env.now);
    let first = today - (DAYS - 1);
    let mut days = vec![ByAgent::default(); DAYS as usize];
    let mut models: BTreeMap<(Agent, &str), Totals> = BTreeMap::new();
    let mut dirs: BTreeMap<&str, (Totals, bool, bool)> = BTreeMap::new();
    for s in snapshot.map(|s| s.slots.as_slice()).unwrap_or(&[]) {
        let day = zone.local_day(s.slot);
        if day < first || day > today {
            continue;
        }
        days[(day - first) as usize].add(s.agent, &s.totals);
        models
            .entry((s.agent, &s.model))
            .or_default()
            .add(&s.totals);
        let d = dirs.entry(s.cwd.as_str()).or_default();
        d.0.add(&s.totals);
        match s.agent {
            Agent::Claude => d.1 = true,
            Agent::Codex => d.2 = true,
        }
    }
    let window = |n: i64| {
        let mut sum = ByAgent::default();
        for d in &days[(DAYS - n) as usize..] {
            sum.add(Agent::Claude, &d.claude);
            sum.add(Agent::Codex, &d.codex);
        }
        Value::Object(
            Object::new()
                .with("start", format_date(today - (n - 1)))
                .with("end", format_date(today))
                .with("all", sum.all().to_value())
                .with("claude", sum.claude.to_value())
                .with("codex", sum.codex.to_value()),
        )
    };
    let windows = Object::new()
        .with("today", window(1))
        .with("d7", window(7))
        .with("d30", window(DAYS));
    let daily: Vec<Value> = days
        .iter()
        .enumerate()
        .map(|(i, d)| {
            Value::Object(
                Object::new()
                    .with("date", format_date(first + i as i64))
                    .with("claude", d.claude.to_value())
                    .with("codex", d.codex.to_value()),
            )
        })
        .collect();
    let mut model_list: Vec<((Agent, &str), Totals)> = models.into_iter().collect();
    model_list.sort_by(|a, b| {
        b.1.cost_usd
            .total_cmp(&a.1.cost_usd)
            .then(b.1.tokens.total().cmp(&a.1.tokens.total()))
            .then(a.0.cmp(&b.0))
    });
    let models: Vec<Value> = model_list
        .iter()
        .map(|((agent, model), t)| {
            Value::Object(
                Object::new()
                    .with("agent", agent.name())
                    .with("model", *model)
                    .with("priced", t.unpriced_requests == 0)
                    .with("totals", t.to_value()),
            )
        })
        .collect();
    let mut dir_list: Vec<(&str, (Totals, bool, bool))> = dirs.into_iter().collect();
    dir_list.sort_by(|a, b| by_total_then_cost(&a.1.0, &b.1.0).then(a.0.cmp(b.0)));
    let mut other = Totals::default();
    let mut top = Vec::new();
    for (i, (path, (t, claude, codex))) in dir_list.iter().enumerate() {
        if i >= TOP_DIRECTORIES {
            other.add(t);
            continue;
        }
        let mut agents = Vec::new();
        if *claude {
            agents.push(Value::from("claude"));
        }
        if *codex {
            agents.push(Value::from("codex"));
        }
        top.push(Value::Object(
            Object::new()
                .with("path", *path)
                .with("agents", Value::Array(agents))
                .with("totals", t.to_value()),
        ));
    }
    let coverage = snapshot
        .map(|s| s.coverage.clone())
        .unwrap_or(Value::Object(Object::new()));
    Value::Object(
        Object::new()
            .with("v", VERSION)
            .with("now", env.now)
            .with(
                "generated_at",
                snapshot.map_or(Value::Null, |s| Value::from(s.generated_at)),
            )
            .with("tz", zone.name.as_str())
            .with("refresh", env.refresh.clone())
            .with("runtime", env.runtime.clone())
            .with("pricing", pricing_value(&env.pricing))
            .with("windows", Value::Object(windows))
            .with("daily", Value::Array(daily))
            .with("models", Value::Array(models))
            .with(
                "directories",
                Value::Object(
                    Object::new()
                        .with("top", Value::Array(top))
                        .with("other", other.to_value()),
                ),
            )
            .with("coverage", coverage)
            .with("limits", env.limits.clone())
            .with("errors", Value::Array(env.errors.clone())),
    )
}

/// An entry of `errors`: a stable code and a human sentence.
pub fn error(code: &str, message: &str) -> Value {
    Value::Object(Object::new().with("code", code).with("message", message))
}

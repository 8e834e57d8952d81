//! The cached snapshot and the JSON v1 answer built from it.
//!
//! The worker keeps priced totals in 15-minute UTC slots (in the aggregate
//! state, `usage::store::state`) and a [`Snapshot`] header beside them
//! (`snapshot-v1.json`, with answers rendered ahead for the zones queries
//! use); a query turns the slots into the v1 document for *its* zone and
//! *its* now (today / 7-day / 30-day windows, 30 zero-filled days, models,
//! top directories) in a few milliseconds, so the answer is correct in any
//! zone and on any day without rescanning.

use crate::base::json::{self, Object, Value};
use crate::base::tz::Zone;
use crate::usage::aggregate::{SlotTotals, Text, Totals};
use crate::usage::event::Agent;
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::pricing::SourceMeta;
use crate::usage::time::format_date;

type HashMap<K, V> = crate::usage::aggregate::FastHashMap<K, V>;

/// Schema version of the query answer and the snapshot file.
pub const VERSION: u64 = 1;
/// Days in the longest window.
pub const DAYS: i64 = 30;
/// Directories listed by name.
pub(crate) const TOP_DIRECTORIES: usize = 10;

/// What the worker leaves for queries.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub generated_at: i64,
    /// The worker stopped at its budget; another run continues the backfill.
    pub partial: bool,
    pub pricing: SourceMeta,
    pub coverage: Value,
    /// The fingerprint of the aggregate state (`aggregate-v1.bin`) that
    /// holds these slots: the file carries no slots, a query for a zone
    /// not rendered ahead reads them from that state.
    pub aggregate: u64,
    /// In memory only.
    pub slots: Vec<SlotTotals>,
}

impl Snapshot {
    /// `snapshot-v1.json`: the header, and the aggregate state holding the
    /// slots named by its fingerprint.
    pub fn to_json(&self) -> String {
        self.to_json_with(&[])
    }

    /// [`Snapshot::to_json`] plus token members rendered ahead for some
    /// (zone, local day) pairs, so a query in one of them reads no slots.
    pub(crate) fn to_json_with(&self, rendered: &[Rendered]) -> String {
        Value::Object(
            Object::new()
                .with("v", VERSION)
                .with("generated_at", self.generated_at)
                .with("partial", self.partial)
                .with("pricing", pricing_value(&self.pricing))
                .with("coverage", self.coverage.clone())
                .with("aggregate", format!("{:016x}", self.aggregate))
                .with(
                    "rendered",
                    Value::Array(
                        rendered
                            .iter()
                            .map(|r| {
                                Value::Object(
                                    Object::new()
                                        .with("tz", r.tz.as_str())
                                        .with("day", r.day)
                                        .with("parts", Value::Object(r.parts.clone())),
                                )
                            })
                            .collect(),
                    ),
                ),
        )
        .to_json()
    }

    /// Reads `snapshot-v1.json` (without slots: see [`Snapshot::aggregate`]);
    /// `None` if it is not one.
    pub fn parse(text: &str) -> Option<Snapshot> {
        let file = SnapshotFile::read(text, None)?;
        let aggregate = file.aggregate?;
        if aggregate.len() != 16 {
            return None;
        }
        Some(Snapshot {
            generated_at: file.generated_at,
            partial: file.partial,
            pricing: file.pricing,
            coverage: file.coverage,
            aggregate: u64::from_str_radix(&aggregate, 16).ok()?,
            slots: Vec::new(),
        })
    }
}

/// The members of `snapshot-v1.json`, picked without a full parse: of
/// the members rendered ahead, only the entry of the zone and day looked
/// for (if any) is parsed, in the same pass.
struct SnapshotFile {
    generated_at: i64,
    partial: bool,
    pricing: SourceMeta,
    coverage: Value,
    aggregate: Option<String>,
    /// The parts rendered for the zone and day asked for; `None` when
    /// none was asked for or the file has none.
    parts: Option<Object>,
}

impl SnapshotFile {
    /// The file's members, and the parts rendered for `wanted` (a zone
    /// and a local day) when given.
    fn read(text: &str, wanted: Option<(&str, i64)>) -> Option<SnapshotFile> {
        let mut c = Cursor::new(text.as_bytes());
        let (mut version, mut generated_at, mut partial) = (None, None, false);
        let (mut pricing, mut coverage, mut aggregate, mut parts) = (None, None, None, None);
        c.object(|key, c| {
            match key {
                b"v" => version = c.count()?,
                b"generated_at" => generated_at = c.count()?,
                b"partial" => partial = c.bool()? == Some(true),
                b"pricing" => pricing = Some(c.raw()?),
                b"coverage" => coverage = Some(c.raw()?),
                b"aggregate" => aggregate = c.string()?,
                b"rendered" => c.array(|c| {
                    let raw = c.raw()?;
                    if let (None, Some(wanted)) = (&parts, wanted) {
                        parts = rendered_parts(raw, wanted)?;
                    }
                    Some(())
                })?,
                _ => c.skip()?,
            }
            Some(())
        })?;
        if version != Some(VERSION) || !c.at_end() {
            return None;
        }
        Some(SnapshotFile {
            generated_at: i64::try_from(generated_at?).ok()?,
            partial,
            pricing: pricing_from(pricing?)?,
            coverage: json::parse(std::str::from_utf8(coverage?).ok()?).ok()?,
            aggregate: aggregate.map(|a| a.into_owned()),
            parts,
        })
    }
}

/// The parts of one entry of `rendered` when it is for `wanted` (a zone
/// and a local day): `Some(None)` when it is another's, `None` when it
/// does not parse. The parts are moved out of the parsed entry, not
/// copied.
fn rendered_parts(raw: &[u8], (tz, day): (&str, i64)) -> Option<Option<Object>> {
    let Value::Object(mut entry) = json::parse(std::str::from_utf8(raw).ok()?).ok()? else {
        return Some(None);
    };
    if entry.get("tz").and_then(Value::as_str) != Some(tz)
        || entry.get("day").and_then(Value::as_i64) != Some(day)
    {
        return Some(None);
    }
    match entry.remove("parts") {
        Some(Value::Object(parts)) => Some(Some(parts)),
        _ => Some(None),
    }
}

fn pricing_from(raw: &[u8]) -> Option<SourceMeta> {
    let p = json::parse(std::str::from_utf8(raw).ok()?).ok()?;
    let ps = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Some(SourceMeta {
        source: ps("source"),
        version: ps("version"),
        date: ps("date"),
        source_url: ps("source_url"),
        source_sha256: ps("sha256"),
        license: ps("license"),
    })
}

/// Token members rendered ahead for one zone and local day.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rendered {
    pub tz: String,
    pub day: i64,
    pub parts: Object,
}

/// A snapshot read for one zone and day without its slots.
#[derive(Debug, Clone, PartialEq)]
pub struct Prerendered {
    pub generated_at: i64,
    pub partial: bool,
    pub pricing: SourceMeta,
    pub coverage: Value,
    pub parts: Object,
}

impl Prerendered {
    /// Reads `snapshot-v1.json` when it holds members rendered for `tz` on
    /// local day `day`; `None` otherwise (read the slots then).
    pub fn read(text: &str, tz: &str, day: i64) -> Option<Prerendered> {
        let file = SnapshotFile::read(text, Some((tz, day)))?;
        Some(Prerendered {
            generated_at: file.generated_at,
            partial: file.partial,
            pricing: file.pricing,
            coverage: file.coverage,
            parts: file.parts?,
        })
    }
}

/// The pricing object of an answer.
pub(crate) fn pricing_value(p: &SourceMeta) -> Value {
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
            _ => {}
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
    let parts = token_parts(
        snapshot.map(|s| s.slots.as_slice()).unwrap_or(&[]),
        zone,
        env.now,
    );
    let header = snapshot.map(|s| (s.generated_at, s.coverage.clone()));
    assemble(header, parts, zone, env)
}

/// Sums by (kind, name) for tens of thousands of slots and a few dozen
/// names. Slots share their names' allocations (a state's string table),
/// so a slot finds its sum by its name's address, a word to hash; only a
/// new address is looked up by the text. A name held in two allocations
/// still has one sum, and every sum adds its slots in their order.
struct SumsByName<'s, K, V> {
    by_address: HashMap<(K, usize), usize>,
    by_name: HashMap<(K, &'s str), usize>,
    sums: Vec<((K, &'s str), V)>,
}

impl<K, V> Default for SumsByName<'_, K, V> {
    fn default() -> Self {
        SumsByName {
            by_address: HashMap::default(),
            by_name: HashMap::default(),
            sums: Vec::new(),
        }
    }
}

impl<'s, K: Copy + Eq + std::hash::Hash, V: Default> SumsByName<'s, K, V> {
    fn entry(&mut self, kind: K, name: &'s Text) -> &mut V {
        let address = std::sync::Arc::as_ptr(name).cast::<u8>() as usize;
        let at = *self.by_address.entry((kind, address)).or_insert_with(|| {
            *self.by_name.entry((kind, name)).or_insert_with(|| {
                self.sums.push(((kind, name), V::default()));
                self.sums.len() - 1
            })
        });
        &mut self.sums[at].1
    }
}

/// The token members of an answer (`windows`, `daily`, `models`,
/// `directories`), which depend only on the slots, the zone and the local
/// day of `now`: the worker renders them ahead for the zones queries use.
pub fn token_parts(slots: &[SlotTotals], zone: &Zone, now: i64) -> Object {
    let today = zone.local_day(now);
    let first = today - (DAYS - 1);
    let sums = WindowSums::of(slots, zone, first, today);
    let window = |n: i64| {
        let mut sum = ByAgent::default();
        for d in &sums.days[(DAYS - n) as usize..] {
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
    let daily: Vec<Value> = sums
        .days
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
    Object::new()
        .with("windows", Value::Object(windows))
        .with("daily", Value::Array(daily))
        .with("models", models_value(sums.models.sums))
        .with("directories", directories_value(sums.dirs.sums))
}

/// The slots of the last [`DAYS`] local days summed by day, by (agent,
/// model) and by directory (with the agents seen there).
struct WindowSums<'s> {
    days: Vec<ByAgent>,
    models: SumsByName<'s, Agent, Totals>,
    dirs: SumsByName<'s, (), DirSum>,
}

impl<'s> WindowSums<'s> {
    /// Sums the slots of local days `first..=today`.
    fn of(slots: &'s [SlotTotals], zone: &Zone, first: i64, today: i64) -> WindowSums<'s> {
        let mut sums = WindowSums {
            days: vec![ByAgent::default(); DAYS as usize],
            models: SumsByName::default(),
            dirs: SumsByName::default(),
        };
        // Tens of thousands of slots, a few dozen models and directories:
        // the sums go to hash maps (sorted by the renderers), and slots
        // sharing a time (they come in time order) share one zone lookup.
        let mut last: Option<(i64, i64)> = None;
        for s in slots {
            // The app's document names Claude Code and Codex in its own
            // fields; other agents are for the views only.
            if !matches!(s.agent, Agent::Claude | Agent::Codex) {
                continue;
            }
            let day = match last {
                Some((slot, day)) if slot == s.slot => day,
                _ => {
                    let day = zone.local_day(s.slot);
                    last = Some((s.slot, day));
                    day
                }
            };
            if day < first || day > today {
                continue;
            }
            sums.days[(day - first) as usize].add(s.agent, &s.totals);
            sums.models.entry(s.agent, &s.model).add(&s.totals);
            let d = sums.dirs.entry((), &s.cwd);
            d.0.add(&s.totals);
            match s.agent {
                Agent::Claude => d.1 = true,
                Agent::Codex => d.2 = true,
                _ => {}
            }
        }
        sums
    }
}

/// A directory's totals and whether Claude and Codex were seen there.
type DirSum = (Totals, bool, bool);

/// The `models` member: each (agent, model), costliest first.
fn models_value(mut list: Vec<((Agent, &str), Totals)>) -> Value {
    list.sort_by(|a, b| {
        b.1.cost_usd
            .total_cmp(&a.1.cost_usd)
            .then(b.1.tokens.total().cmp(&a.1.tokens.total()))
            .then(a.0.cmp(&b.0))
    });
    let models: Vec<Value> = list
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
    Value::Array(models)
}

/// The `directories` member: the [`TOP_DIRECTORIES`] largest with the
/// agents seen in each, and the rest summed as `other`.
fn directories_value(mut list: Vec<(((), &str), DirSum)>) -> Value {
    list.sort_by(|a, b| by_total_then_cost(&a.1.0, &b.1.0).then(a.0.1.cmp(b.0.1)));
    let mut other = Totals::default();
    let mut top = Vec::new();
    for (i, (((), path), (t, claude, codex))) in list.iter().enumerate() {
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
    Value::Object(
        Object::new()
            .with("top", Value::Array(top))
            .with("other", other.to_value()),
    )
}

/// The whole answer from the snapshot's `generated_at` and coverage (when
/// there is a snapshot) and the token members of [`token_parts`].
pub(crate) fn assemble(
    header: Option<(i64, Value)>,
    parts: Object,
    zone: &Zone,
    env: &Envelope,
) -> Value {
    let (generated_at, coverage) = match header {
        Some((at, coverage)) => (Value::from(at), app_coverage(coverage)),
        // Before the first snapshot nothing is covered yet: the same shape,
        // empty, and partial.
        None => (Value::Null, empty_coverage()),
    };
    let mut out = Object::new()
        .with("v", VERSION)
        .with("now", env.now)
        .with("generated_at", generated_at)
        .with("tz", zone.name.as_str())
        .with("refresh", env.refresh.clone())
        .with("runtime", env.runtime.clone())
        .with("pricing", pricing_value(&env.pricing));
    let mut parts = parts;
    for key in ["windows", "daily", "models", "directories"] {
        out.insert(key, parts.remove(key).unwrap_or(Value::Null));
    }
    Value::Object(
        out.with("coverage", coverage)
            .with("limits", env.limits.clone())
            .with("errors", Value::Array(env.errors.clone())),
    )
}

/// What one agent's transcripts covered: the counts of the answer's
/// `coverage.claude` and `coverage.codex` members.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentCoverage {
    pub roots: Vec<String>,
    pub files_seen: u64,
    pub files_in_window: u64,
    /// Codex only: archives read, and archives that could not be.
    pub files_compressed: u64,
    pub files_compressed_skipped: u64,
    pub files_unreadable: u64,
    /// Directories under the roots that could not be listed.
    pub dirs_unreadable: u64,
    pub lines_malformed: u64,
    /// Lines over the reader's cap, skipped unread.
    pub lines_oversized: u64,
    pub duplicates_dropped: u64,
    /// Codex only.
    pub forks_unresolved: u64,
    /// The first and last request counted.
    pub span: Option<(i64, i64)>,
}

impl AgentCoverage {
    fn to_value(&self, agent: Agent) -> Value {
        let codex = agent == Agent::Codex;
        let roots = self.roots.iter().map(|r| Value::from(r.as_str())).collect();
        let mut o = Object::new()
            .with("roots", Value::Array(roots))
            .with("files_seen", self.files_seen)
            .with("files_in_window", self.files_in_window);
        if codex {
            o = o
                .with("files_compressed", self.files_compressed)
                .with("files_compressed_skipped", self.files_compressed_skipped);
        }
        o = o
            .with("files_unreadable", self.files_unreadable)
            .with("dirs_unreadable", self.dirs_unreadable)
            .with("lines_malformed", self.lines_malformed)
            .with("lines_oversized", self.lines_oversized)
            .with("duplicates_dropped", self.duplicates_dropped);
        if codex {
            o = o.with("forks_unresolved", self.forks_unresolved);
        }
        let (first, last) = match self.span {
            Some((first, last)) => (Value::from(first), Value::from(last)),
            None => (Value::Null, Value::Null),
        };
        Value::Object(o.with("earliest", first).with("latest", last))
    }
}

/// The snapshot's `coverage` member: the app's agents (Claude Code and
/// Codex, always), `partial` (totals that do not yet cover every file),
/// then every other agent that was found (the views' coverage; the app's
/// document keeps only its own members, [`app_coverage`]).
pub fn coverage(agents: &[(Agent, AgentCoverage)], partial: bool) -> Value {
    let mut o = Object::new();
    let app = |a: &Agent| matches!(a, Agent::Claude | Agent::Codex);
    for (agent, c) in agents.iter().filter(|(a, _)| app(a)) {
        o.insert(agent.name(), c.to_value(*agent));
    }
    o.insert("partial", Value::Bool(partial));
    for (agent, c) in agents.iter().filter(|(a, _)| !app(a)) {
        o.insert(agent.name(), c.to_value(*agent));
    }
    Value::Object(o)
}

/// The coverage before the first snapshot: the app's agents, nothing
/// covered yet, partial.
pub(crate) fn empty_coverage() -> Value {
    let none = AgentCoverage::default();
    coverage(&[(Agent::Claude, none.clone()), (Agent::Codex, none)], true)
}

/// The `coverage` of the app's document: `claude`, `codex` and `partial`,
/// as the app has always read it (docs/usage.md, JSON v1); the other
/// agents' members are the views'.
pub(crate) fn app_coverage(coverage: Value) -> Value {
    match coverage {
        Value::Object(mut o) => {
            let mut app = Object::new();
            for key in ["claude", "codex", "partial"] {
                if let Some(v) = o.remove(key) {
                    app.insert(key, v);
                }
            }
            Value::Object(app)
        }
        other => other,
    }
}

/// An entry of `errors`: a stable code and a human sentence.
pub fn error(code: &str, message: &str) -> Value {
    Value::Object(Object::new().with("code", code).with("message", message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Snapshot {
        Snapshot {
            generated_at: 1_795_953_600,
            partial: true,
            pricing: SourceMeta {
                source: "litellm".into(),
                version: "1".into(),
                date: "2026-11-20".into(),
                source_url: "u".into(),
                source_sha256: "ab".into(),
                license: "MIT".into(),
            },
            coverage: json::parse(r#"{"claude":{"files_seen":3,"roots":["/p \"q\" é"]}}"#).unwrap(),
            aggregate: 0xfedc_ba98_7654_3210,
            slots: Vec::new(),
        }
    }

    #[test]
    fn another_agent_leaves_the_app_s_token_parts_as_they_are() {
        // The app's document names Claude Code and Codex in its own
        // fields; a pi slot (another model, a directory of its own and one
        // Claude Code also used) must change none of its bytes.
        let now = 1_796_378_405;
        let slot = now - now % 900;
        let totals = |requests: u64, cost_usd: f64| Totals {
            requests,
            tokens: crate::usage::event::Tokens {
                input: 10 * requests,
                output: 5 * requests,
                ..Default::default()
            },
            cost_usd,
            unpriced_tokens: 0,
            unpriced_requests: 0,
        };
        let row = |agent, model: &str, cwd: &str, t| SlotTotals {
            slot,
            agent,
            model: Text::from(model),
            cwd: Text::from(cwd),
            totals: t,
        };
        let apps = vec![
            row(Agent::Claude, "claude-sonnet-4-5", "/a", totals(2, 0.5)),
            row(Agent::Codex, "gpt-5", "/b", totals(1, 0.25)),
        ];
        let mut with_pi = apps.clone();
        with_pi.push(row(Agent::Pi, "gemini-2.5-pro", "/p", totals(3, 1.0)));
        with_pi.push(row(Agent::Pi, "claude-sonnet-4-5", "/a", totals(1, 0.125)));
        let zone = Zone::utc();
        let text = |slots: &[SlotTotals]| Value::Object(token_parts(slots, &zone, now)).to_json();
        assert_eq!(text(&with_pi), text(&apps));
    }

    #[test]
    fn snapshot_round_trips_without_slots() {
        let s = snapshot();
        assert_eq!(Snapshot::parse(&s.to_json()), Some(s.clone()));
        let with_slots = Snapshot {
            slots: vec![SlotTotals {
                slot: 1_795_950_000,
                agent: Agent::Claude,
                model: "claude-opus-4-6".into(),
                cwd: "/p".into(),
                totals: Totals::default(),
            }],
            ..s.clone()
        };
        assert_eq!(with_slots.to_json(), s.to_json(), "slots stay in the state");
    }

    #[test]
    fn damaged_snapshots_are_refused() {
        let text = snapshot().to_json();
        assert_eq!(Snapshot::parse(&text[..text.len() - 2]), None);
        assert_eq!(Snapshot::parse(&text.replace("\"v\":1", "\"v\":2")), None);
        assert_eq!(
            Snapshot::parse(&text.replace("fedcba9876543210", "fedcba987654321")),
            None
        );
        assert_eq!(
            Snapshot::parse(&text.replace("\"aggregate\"", "\"other\"")),
            None
        );
        assert_eq!(Snapshot::parse(""), None);
    }
}

//! From parsed files to priced, deduplicated totals in 15-minute UTC slots.
//!
//! Dedupe is global (resumed sessions and sidechains repeat records across
//! files): Claude keeps one record per (`message.id`, `requestId`), the one
//! with the largest total, then drops sidechain replays of a message the
//! main chain already has; Codex applies its per-file counting rule
//! (`codex::requests`, with fork parents resolved across files) and
//! keeps the first request per key. Slots are 15 minutes because every real
//! UTC offset is a multiple of 15 minutes, so a query can re-bucket the same
//! slots into the local days of any zone without rescanning.

pub mod incremental;

use std::collections::BTreeMap;

/// The aggregation's maps hash with FxHash (`rustc-hash`): their keys are
/// hashes already, or short strings; SipHash's flood protection buys
/// nothing here and costs a third of a full aggregation.
pub(crate) type FastHashMap<K, V> = rustc_hash::FxHashMap<K, V>;
type HashMap<K, V> = FastHashMap<K, V>;
type HashSet<K> = rustc_hash::FxHashSet<K>;

use crate::base::json::{Object, Value};
use crate::usage::event::{Agent, Event, EventKind, FileParse, Tokens, flags, message_tokens};
use crate::usage::parse::codex;
use crate::usage::pricing::{ModelPrice, PriceTable};

/// Slot length in seconds.
pub const SLOT: i64 = 900;

/// Sums of requests.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    pub requests: u64,
    pub tokens: Tokens,
    pub cost_usd: f64,
    pub unpriced_tokens: u64,
    pub unpriced_requests: u64,
}

impl Totals {
    pub fn add(&mut self, other: &Totals) {
        self.requests += other.requests;
        self.tokens.add(&other.tokens);
        self.cost_usd += other.cost_usd;
        self.unpriced_tokens += other.unpriced_tokens;
        self.unpriced_requests += other.unpriced_requests;
    }

    /// The v1 totals object.
    pub fn to_value(&self) -> Value {
        let t = &self.tokens;
        Value::Object(
            Object::new()
                .with("requests", self.requests)
                .with("input", t.input)
                .with("cache_read", t.cache_read)
                .with("cache_write_5m", t.cache_write_5m)
                .with("cache_write_1h", t.cache_write_1h)
                .with("output", t.output)
                .with("reasoning", t.reasoning)
                .with("total", t.total())
                .with("cost_usd", round_usd(self.cost_usd))
                .with("unpriced_tokens", self.unpriced_tokens)
                .with("unpriced_requests", self.unpriced_requests),
        )
    }
}

/// Costs are reported to a millionth of a dollar (stable output, no float
/// noise like `0.30000000000000004`).
pub(crate) fn round_usd(cost: f64) -> f64 {
    (cost * 1e6).round() / 1e6
}

/// Totals of one (slot, agent, model, directory).
#[derive(Debug, Clone, PartialEq)]
pub struct SlotTotals {
    pub slot: i64,
    pub agent: Agent,
    pub model: Text,
    pub cwd: Text,
    pub totals: Totals,
}

/// A file as aggregation sees it.
#[derive(Debug, Clone, Copy)]
pub struct FileRef<'a> {
    pub agent: Agent,
    pub parse: &'a FileParse,
}

/// What aggregation found besides the slots.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Aggregate {
    pub slots: Vec<SlotTotals>,
    pub(crate) duplicates_claude: u64,
    pub(crate) duplicates_codex: u64,
    pub forks_unresolved: u64,
    /// Earliest/latest counted request per agent (by [`Agent::index`]; UTC
    /// seconds), 0 if none.
    pub(crate) spans: [(i64, i64); crate::usage::agents::ALL.len()],
}

impl Aggregate {
    /// `agent`'s earliest and latest counted request (0 if none).
    pub(crate) fn span(&self, agent: Agent) -> (i64, i64) {
        self.spans[agent.index()]
    }

    /// `agent`'s dropped duplicates (each agent's dedupe rule is its own,
    /// in this module).
    pub(crate) fn duplicates(&self, agent: Agent) -> u64 {
        match agent {
            Agent::Claude => self.duplicates_claude,
            Agent::Codex => self.duplicates_codex,
            // pi's and the shared contract's duplicates are per file and
            // not kept in the state (`message_count`).
            _ => 0,
        }
    }
}

struct Request<'a> {
    agent: Agent,
    ts: i64,
    model: &'a str,
    cwd: &'a str,
    session: &'a str,
    tier: &'a str,
    bits: u8,
    tokens: Tokens,
    /// Web searches the request's server tools ran (priced per search,
    /// never counted as tokens).
    web_searches: u64,
}

/// The slot sums of requests added one by one. A file's requests come in
/// order and mostly share their slot, model and directory (the same
/// interned strings): a run of them is summed here, and the map (which
/// hashes the strings) is touched once a run.
struct SlotSums<'p, 'a> {
    prices: &'p PriceTable,
    since: i64,
    slots: HashMap<SlotOf<'a>, SlotAcc>,
    lookups: HashMap<&'a str, Option<&'p ModelPrice>>,
    run: Option<(SlotOf<'a>, SlotAcc)>,
    price: Option<(&'a str, Option<&'p ModelPrice>)>,
}

/// A [`SlotKey`] with borrowed names, while summing.
type SlotOf<'a> = (i64, Agent, &'a str, &'a str, &'a str);

impl<'p, 'a> SlotSums<'p, 'a> {
    fn new(prices: &'p PriceTable, since: i64) -> Self {
        SlotSums {
            prices,
            since,
            slots: HashMap::default(),
            lookups: HashMap::default(),
            run: None,
            price: None,
        }
    }

    /// Counts `r` unless it is before the window.
    fn add(&mut self, r: Request<'a>) {
        if r.ts < self.since {
            return;
        }
        let model_price = match self.price {
            Some((model, p)) if std::ptr::eq(model, r.model) => p,
            _ => {
                let prices = self.prices;
                let p = *self
                    .lookups
                    .entry(r.model)
                    .or_insert_with(|| prices.lookup(r.model));
                self.price = Some((r.model, p));
                p
            }
        };
        let cost = model_price.and_then(|p| {
            crate::usage::pricing::cost_with(p, r.agent, r.tier, r.bits, &r.tokens, r.web_searches)
        });
        let key = (
            r.ts.div_euclid(SLOT) * SLOT,
            r.agent,
            r.model,
            r.cwd,
            r.session,
        );
        let same = |a: &SlotOf, b: &SlotOf| {
            a.0 == b.0
                && a.1 == b.1
                && std::ptr::eq(a.2, b.2)
                && std::ptr::eq(a.3, b.3)
                && std::ptr::eq(a.4, b.4)
        };
        match &mut self.run {
            Some((k, acc)) if same(k, &key) => acc.add_request(r.ts, &r.tokens, cost),
            _ => {
                let mut acc = SlotAcc::default();
                acc.add_request(r.ts, &r.tokens, cost);
                if let Some((k, done)) = self.run.replace((key, acc)) {
                    self.slots.entry(k).or_default().merge(&done);
                }
            }
        }
    }

    fn finish(mut self) -> HashMap<SlotOf<'a>, SlotAcc> {
        if let Some((k, done)) = self.run.take() {
            self.slots.entry(k).or_default().merge(&done);
        }
        self.slots
    }
}

/// A Claude record's tokens (its sixth counter, web searches, is not a
/// token count: see `EventKind::Claude`).
fn claude_tokens(t: [u64; 6]) -> Tokens {
    Tokens {
        input: t[0],
        cache_read: t[1],
        cache_write_5m: t[2],
        cache_write_1h: t[3],
        output: t[4],
        reasoning: 0,
    }
}

/// One (slot, agent, model, directory, session) being summed: exact
/// integers (cost in picodollars) so totals can be subtracted and re-added
/// without drift, plus the first and last counted request (coverage
/// spans).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlotAcc {
    pub requests: u64,
    pub tokens: Tokens,
    pub(crate) cost_pico: u64,
    pub unpriced_tokens: u64,
    pub unpriced_requests: u64,
    pub(crate) first_ts: i64,
    pub(crate) last_ts: i64,
}

impl SlotAcc {
    fn add_request(&mut self, ts: i64, tokens: &Tokens, cost: Option<f64>) {
        if self.requests == 0 || ts < self.first_ts {
            self.first_ts = ts;
        }
        if self.requests == 0 || ts > self.last_ts {
            self.last_ts = ts;
        }
        self.requests += 1;
        self.tokens.add(tokens);
        match cost {
            Some(c) => self.cost_pico += to_pico(c),
            None => {
                self.unpriced_requests += 1;
                self.unpriced_tokens += tokens.total();
            }
        }
    }

    /// Sums `o` into this slot, its span too.
    pub fn merge(&mut self, o: &SlotAcc) {
        if o.requests == 0 {
            return;
        }
        if self.requests == 0 {
            *self = *o;
            return;
        }
        self.first_ts = self.first_ts.min(o.first_ts);
        self.last_ts = self.last_ts.max(o.last_ts);
        self.add_counts(o);
    }

    /// Sums everything but the span (callers decide the span).
    pub(crate) fn add_counts(&mut self, o: &SlotAcc) {
        self.requests += o.requests;
        self.tokens.add(&o.tokens);
        self.cost_pico += o.cost_pico;
        self.unpriced_tokens += o.unpriced_tokens;
        self.unpriced_requests += o.unpriced_requests;
    }

    /// Removes `o`'s counts; `None` if `o` was never added (state mismatch).
    pub(crate) fn sub_counts(&mut self, o: &SlotAcc) -> Option<()> {
        let t = &mut self.tokens;
        let u = &o.tokens;
        self.requests = self.requests.checked_sub(o.requests)?;
        t.input = t.input.checked_sub(u.input)?;
        t.cache_read = t.cache_read.checked_sub(u.cache_read)?;
        t.cache_write_5m = t.cache_write_5m.checked_sub(u.cache_write_5m)?;
        t.cache_write_1h = t.cache_write_1h.checked_sub(u.cache_write_1h)?;
        t.output = t.output.checked_sub(u.output)?;
        t.reasoning = t.reasoning.checked_sub(u.reasoning)?;
        self.cost_pico = self.cost_pico.checked_sub(o.cost_pico)?;
        self.unpriced_tokens = self.unpriced_tokens.checked_sub(o.unpriced_tokens)?;
        self.unpriced_requests = self.unpriced_requests.checked_sub(o.unpriced_requests)?;
        Some(())
    }

    pub fn totals(&self) -> Totals {
        Totals {
            requests: self.requests,
            tokens: self.tokens,
            cost_usd: self.cost_pico as f64 / 1e12,
            unpriced_tokens: self.unpriced_tokens,
            unpriced_requests: self.unpriced_requests,
        }
    }
}

/// A request's cost in picodollars (exact integer sums; reports round to
/// a millionth of a dollar, far above this resolution).
fn to_pico(cost: f64) -> u64 {
    (cost.max(0.0) * 1e12).round() as u64
}

/// Slot identity: (slot start, agent, model, directory, session). The
/// session is a Claude record's `sessionId` or a Codex rollout's thread id
/// (empty when the transcript names none). It is filled only in
/// [`Detailed::sessions`], which the `session` view reads; the slots every
/// other view and the app's document read are summed over sessions (the
/// session empty), so a busy Host's thousands of sessions do not multiply
/// what they decode.
pub(crate) type SlotKey = (i64, Agent, Text, Text, Text);

/// A model, directory or session in a slot key: shared, so the thousands
/// of slots that name one hold it once and copying a key (decoding the
/// state, flattening it) allocates nothing.
pub type Text = std::sync::Arc<str>;

/// What aggregation computes, before it is flattened into an [`Aggregate`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Detailed {
    /// Sums per (slot, agent, model, directory), sessions summed (the
    /// key's session is empty).
    pub slots: BTreeMap<SlotKey, SlotAcc>,
    /// The same sums per session too: every slot's sum is its sessions'
    /// (exact integers), each kept up to date by the same incremental
    /// replace.
    pub sessions: BTreeMap<SlotKey, SlotAcc>,
    pub(crate) duplicates_claude: u64,
    pub(crate) duplicates_codex: u64,
    pub forks_unresolved: u64,
    /// The same three counters by the file each is charged to, indexed by
    /// [`Counter`] (the file
    /// whose record was dropped, or the fork that found no parent): by
    /// position in the files aggregated, which the aggregate state re-keys
    /// by owner (`usage::store::owners::owner_of`). The cache keeps files
    /// older than the app's window; coverage counts only the window's.
    pub(crate) by_file: BTreeMap<u64, [u64; 3]>,
}

impl Detailed {
    /// Charges `n` to `counter` of file `file`, and to its total.
    fn charge(&mut self, file: usize, counter: Counter, n: u64) {
        if n == 0 {
            return;
        }
        match counter {
            Counter::ClaudeDuplicate => self.duplicates_claude += n,
            Counter::CodexDuplicate => self.duplicates_codex += n,
            Counter::ForkUnresolved => self.forks_unresolved += n,
        }
        self.by_file.entry(file as u64).or_default()[counter as usize] += n;
    }

    /// [`Detailed::charge`] for every file of `charges` (by position).
    fn charge_files(&mut self, charges: &[[u64; 3]]) {
        for (file, counts) in charges.iter().enumerate() {
            for counter in Counter::ALL {
                self.charge(file, counter, counts[counter as usize]);
            }
        }
    }

    /// [`Detailed::by_file`] re-keyed: position `i` becomes `key(i)`.
    pub(crate) fn rekey_files(&mut self, key: impl Fn(usize) -> u64) {
        let by_file = std::mem::take(&mut self.by_file);
        for (i, counts) in by_file {
            let entry = self.by_file.entry(key(i as usize)).or_default();
            for (e, c) in entry.iter_mut().zip(counts) {
                *e += c;
            }
        }
    }

    /// The three counters summed over the files `files` names (by the
    /// keys of [`Detailed::by_file`]).
    pub(crate) fn counters_of(&self, files: impl Iterator<Item = u64>) -> [u64; 3] {
        let mut sum = [0u64; 3];
        for f in files {
            if let Some(c) = self.by_file.get(&f) {
                for (s, c) in sum.iter_mut().zip(c) {
                    *s += c;
                }
            }
        }
        sum
    }
}

/// The counters aggregation keeps besides the sums, each a total of
/// [`Detailed`] and a place in a file's row of [`Detailed::by_file`] (the
/// place is the discriminant: the aggregate state stores the rows in this
/// order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    /// A Claude record dropped for another with its (message.id,
    /// requestId), or a sidechain replay of a main-chain message.
    ClaudeDuplicate = 0,
    /// A Codex request counted already, in its file or another.
    CodexDuplicate = 1,
    /// A Codex fork whose parent rollout was not found.
    ForkUnresolved = 2,
}

impl Counter {
    /// Every counter, in row order.
    pub(crate) const ALL: [Counter; 3] = [
        Counter::ClaudeDuplicate,
        Counter::CodexDuplicate,
        Counter::ForkUnresolved,
    ];
}

/// Tags of the identifiers through which files interact during
/// aggregation (see [`Detailed`] and `usage::aggregate::incremental`).
pub mod tag {
    pub(crate) const CLAUDE_KEY: u64 = 1;
    pub(crate) const CLAUDE_GROUP: u64 = 2;
    pub(crate) const CODEX_KEY: u64 = 3;
    pub(crate) const CODEX_THREAD: u64 = 4;
    pub(crate) const CODEX_PARENT: u64 = 5;
}

/// A tagged identifier (never 0). `id` is already a hash: a multiply-
/// xorshift mix with the tag is enough (this runs for every request).
pub(crate) fn tagged(tag: u64, id: u64) -> u64 {
    let h = (id ^ tag.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    match h ^ (h >> 31) {
        0 => 1,
        h => h,
    }
}

/// The hash of a Codex thread id.
pub(crate) fn thread_hash(id: &str) -> u64 {
    crate::usage::event::fnv1a(&[id.as_bytes()])
}

/// Finds a Codex fork parent's parse by thread id.
pub(crate) type ParentLookup<'p, 'a> = &'p dyn Fn(&str) -> Option<&'a FileParse>;

/// Whether a file can be the parent rollout its thread id resolves to: a
/// Codex rollout with a thread id that is not a revert of its own thread
/// (the first such file, in file order, is the one).
pub(crate) fn is_parent_candidate(agent: Agent, parse: &FileParse) -> bool {
    agent == Agent::Codex && !parse.codex.thread_id.is_empty() && !parse.codex.continues_itself()
}

/// Deduplicates, prices and slots every request at or after `since`.
pub fn aggregate(files: &[FileRef], prices: &PriceTable, since: i64) -> Aggregate {
    flatten(&aggregate_detailed(files, prices, since, None, None))
}

/// Turns detailed sums into the snapshot's slots and coverage spans.
pub fn flatten(d: &Detailed) -> Aggregate {
    flatten_since(d, i64::MIN)
}

/// The first key at or after slot start `since`.
pub(crate) fn slots_from(since: i64) -> SlotKey {
    let none = Text::from("");
    (since, Agent::Claude, none.clone(), none.clone(), none)
}

/// [`flatten`] of the slots at or after `since` only (the spans too; the
/// counters are `d`'s totals): each (slot, agent, model, directory) has
/// one sum, as the app's document always had.
pub fn flatten_since(d: &Detailed, since: i64) -> Aggregate {
    let mut out = flat_counters(d);
    for (key, acc) in d.slots.range(slots_from(since)..) {
        flatten_into(&mut out, key, acc);
    }
    out
}

/// An [`Aggregate`] with `d`'s counters and no slots yet, for
/// [`flatten_into`] to fill.
pub(crate) fn flat_counters(d: &Detailed) -> Aggregate {
    Aggregate {
        duplicates_claude: d.duplicates_claude,
        duplicates_codex: d.duplicates_codex,
        forks_unresolved: d.forks_unresolved,
        ..Aggregate::default()
    }
}

/// Adds one slot of [`Detailed::slots`] (they come in key order) to
/// `out`: its totals and its agent's span; a slot without requests is
/// left out.
pub(crate) fn flatten_into(out: &mut Aggregate, key: &SlotKey, acc: &SlotAcc) {
    if acc.requests == 0 {
        return;
    }
    let span = &mut out.spans[key.1.index()];
    if span.0 == 0 || acc.first_ts < span.0 {
        span.0 = acc.first_ts;
    }
    span.1 = span.1.max(acc.last_ts);
    out.slots.push(SlotTotals {
        slot: key.0,
        agent: key.1,
        model: key.2.clone(),
        cwd: key.3.clone(),
        totals: acc.totals(),
    });
}

/// The slots of `sessions` summed over sessions (exact integers, spans
/// widened): keys are in order, so one slot's sessions are next to each
/// other.
pub fn sum_sessions(sessions: &BTreeMap<SlotKey, SlotAcc>) -> BTreeMap<SlotKey, SlotAcc> {
    let mut out: Vec<(SlotKey, SlotAcc)> = Vec::new();
    let none = Text::from("");
    for (key, acc) in sessions {
        match out.last_mut() {
            Some((k, sum)) if k.0 == key.0 && k.1 == key.1 && k.2 == key.2 && k.3 == key.3 => {
                sum.merge(acc);
            }
            _ => {
                let summed = (key.0, key.1, key.2.clone(), key.3.clone(), none.clone());
                out.push((summed, *acc));
            }
        }
    }
    out.into_iter().collect()
}

/// Every (tagged identifier, index into `files`) through which the Claude
/// files of `files` can affect each other's results: each record's dedupe
/// key and message id. With [`aggregate_detailed`]'s Codex identifiers,
/// what the owners table is built from.
pub(crate) fn claude_ids(files: &[FileRef], ids: &mut Vec<(u64, usize)>) {
    for (fi, f) in files.iter().enumerate() {
        if f.agent != Agent::Claude {
            continue;
        }
        // Claude Code writes a record per content block, one after the
        // other with the same ids: a repeat of the previous record's is
        // not listed again (the table lists each pair once anyway).
        let mut previous = (0, 0);
        let records = f.parse.events.iter();
        for e in records.filter(|e| e.kind == EventKind::Claude) {
            if e.key != 0 && e.key != previous.0 {
                ids.push((tagged(tag::CLAUDE_KEY, e.key), fi));
            }
            if e.group != 0 && e.group != previous.1 {
                ids.push((tagged(tag::CLAUDE_GROUP, e.group), fi));
            }
            previous = (e.key, e.group);
        }
    }
}

/// [`aggregate`] with its sums kept exact. `parent` resolves Codex fork
/// parents (default: the first of `files` with that thread id); `ids`, when
/// given, receives every (tagged identifier, index into `files`) through
/// which Codex files can affect each other's results ([`claude_ids`] lists
/// the Claude files' identifiers).
pub(crate) fn aggregate_detailed<'a>(
    files: &[FileRef<'a>],
    prices: &PriceTable,
    since: i64,
    parent: Option<ParentLookup<'_, 'a>>,
    ids: Option<&mut Vec<(u64, usize)>>,
) -> Detailed {
    let mut out = Detailed::default();
    // Counters by file position, charged to `out` at the end.
    let mut charges = Charges(vec![[0u64; 3]; files.len()]);
    // Every counted request is summed into its slot as it is found (Claude's
    // in file order, then Codex's), not listed first: a cold rebuild counts
    // hundreds of thousands.
    let mut sums = SlotSums::new(prices, since);
    let kept = claude_best_records(files, &mut charges);
    claude_count(files, kept, &mut charges, &mut sums);
    codex_count(files, parent, ids, &mut charges, &mut sums);
    pi_count(files, &mut sums);
    message_count(files, &mut sums);
    out.charge_files(&charges.0);
    out.sessions = sums
        .finish()
        .into_iter()
        .map(|((slot, agent, model, cwd, session), acc)| {
            let names = (Text::from(model), Text::from(cwd), Text::from(session));
            ((slot, agent, names.0, names.1, names.2), acc)
        })
        .collect();
    out.slots = sum_sessions(&out.sessions);
    out
}

/// The counters of an aggregation by file position, before they are
/// charged to [`Detailed`].
struct Charges(Vec<[u64; 3]>);

impl Charges {
    fn add(&mut self, file: usize, counter: Counter, n: u64) {
        self.0[file][counter as usize] += n;
    }
}

/// Whether Claude record `new` beats `old` for its (message.id,
/// requestId): a larger total, or the same total with its speed recorded
/// where `old` has none.
fn better(new: &Event, old: &Event) -> bool {
    let (new_total, old_total) = (claude_tokens(new.t).total(), claude_tokens(old.t).total());
    new_total > old_total
        || (new_total == old_total
            && new.flags & flags::HAS_SPEED != 0
            && old.flags & flags::HAS_SPEED == 0)
}

/// The Claude records kept, as (file, event) positions in file order: the
/// best record per (message.id, requestId), the first of those with the
/// largest total ([`better`]), and every record without a key. Every other
/// record is a duplicate, charged to its file. That best does not depend
/// on how the records are grouped, so a run of consecutive records with one
/// key (a message's content blocks) is reduced first, and only its best
/// meets the map.
fn claude_best_records(files: &[FileRef], charges: &mut Charges) -> Vec<(usize, usize)> {
    let claude_events: usize = files
        .iter()
        .filter(|f| f.agent == Agent::Claude)
        .map(|f| f.parse.events.len())
        .sum();
    let mut best: HashMap<u64, (usize, usize)> =
        HashMap::with_capacity_and_hasher(claude_events, Default::default());
    let mut kept: Vec<(usize, usize)> = Vec::new();
    // A run's best record meets the map: the file of the record it beats,
    // or its own when it loses, has the duplicate.
    let mut meet = |key: u64, fi: usize, ei: usize, charges: &mut Charges| {
        let Some(slot) = best.get_mut(&key) else {
            best.insert(key, (fi, ei));
            return;
        };
        let old = &files[slot.0].parse.events[slot.1];
        let dropped = if better(&files[fi].parse.events[ei], old) {
            std::mem::replace(slot, (fi, ei)).0
        } else {
            fi
        };
        charges.add(dropped, Counter::ClaudeDuplicate, 1);
    };
    for (fi, f) in files.iter().enumerate() {
        if f.agent != Agent::Claude {
            continue;
        }
        let events = &f.parse.events;
        // The key of the run under way and its best record so far.
        let mut run: Option<(u64, usize)> = None;
        for (ei, e) in events.iter().enumerate() {
            if e.kind != EventKind::Claude {
                continue;
            }
            if e.key == 0 {
                kept.push((fi, ei));
                continue;
            }
            match run {
                Some((key, at)) if key == e.key => {
                    if better(e, &events[at]) {
                        run = Some((key, ei));
                    }
                    // Both records are this file's: so is the duplicate.
                    charges.add(fi, Counter::ClaudeDuplicate, 1);
                }
                _ => {
                    if let Some((key, at)) = run.replace((e.key, ei)) {
                        meet(key, fi, at, charges);
                    }
                }
            }
        }
        if let Some((key, at)) = run {
            meet(key, fi, at, charges);
        }
    }
    // One sort puts the kept records back in file order (the records
    // without a key are already in it; positions are distinct).
    kept.extend(best.into_values());
    kept.sort_unstable();
    kept
}

/// Sums the kept Claude records, but for sidechain replays: a message the
/// main chain has is not counted again (a duplicate of its file).
fn claude_count<'a>(
    files: &[FileRef<'a>],
    kept: Vec<(usize, usize)>,
    charges: &mut Charges,
    sums: &mut SlotSums<'_, 'a>,
) {
    // The set is built on the side that is usually the smaller: the
    // sidechains' messages, then those the main chain has too.
    let event = |&(fi, ei): &(usize, usize)| &files[fi].parse.events[ei];
    let side = |e: &Event| e.flags & flags::SIDECHAIN != 0;
    let mut replayed: HashMap<u64, bool> = kept
        .iter()
        .map(event)
        .filter(|e| e.group != 0 && side(e))
        .map(|e| (e.group, false))
        .collect();
    if !replayed.is_empty() {
        for e in kept.iter().map(event).filter(|e| !side(e)) {
            if let Some(on_main) = replayed.get_mut(&e.group) {
                *on_main = true;
            }
        }
    }
    for (fi, ei) in kept {
        let fp = files[fi].parse;
        let e = &fp.events[ei];
        if side(e) && replayed.get(&e.group) == Some(&true) {
            charges.add(fi, Counter::ClaudeDuplicate, 1);
            continue;
        }
        sums.add(Request {
            agent: Agent::Claude,
            ts: e.ts,
            model: fp.string(e.model),
            cwd: fp.string(e.cwd),
            session: fp.string(e.session),
            tier: fp.string(e.tier),
            bits: e.flags,
            tokens: claude_tokens(e.t),
            web_searches: e.t[5],
        });
    }
}

/// Sums the Codex files' requests: each file's counting rule
/// (`codex::requests`, with its fork parent resolved by `parent` or else
/// among `files`), then the first request per key across files.
fn codex_count<'a>(
    files: &[FileRef<'a>],
    parent: Option<ParentLookup<'_, 'a>>,
    mut ids: Option<&mut Vec<(u64, usize)>>,
    charges: &mut Charges,
    sums: &mut SlotSums<'_, 'a>,
) {
    let mut threads: HashMap<&str, usize> = HashMap::default();
    for (fi, f) in files.iter().enumerate() {
        if is_parent_candidate(f.agent, f.parse) {
            threads
                .entry(f.parse.codex.thread_id.as_str())
                .or_insert(fi);
        }
    }
    let mut seen: HashSet<u64> = HashSet::default();
    for (fi, f) in files.iter().enumerate() {
        if f.agent != Agent::Codex {
            continue;
        }
        let meta = &f.parse.codex;
        if let Some(ids) = ids.as_deref_mut() {
            if !meta.thread_id.is_empty() {
                ids.push((tagged(tag::CODEX_THREAD, thread_hash(&meta.thread_id)), fi));
            }
            if !meta.parent().is_empty() {
                ids.push((tagged(tag::CODEX_PARENT, thread_hash(meta.parent())), fi));
            }
        }
        let found = match (meta.parent(), parent) {
            ("", _) => None,
            (id, Some(lookup)) => lookup(id),
            (id, None) => threads.get(id).map(|&p| files[p].parse),
        };
        if found.is_none() && !meta.parent().is_empty() {
            charges.add(fi, Counter::ForkUnresolved, 1);
        }
        let counted = codex::requests(f.parse, found);
        charges.add(fi, Counter::CodexDuplicate, counted.duplicates);
        for r in counted.requests {
            if let Some(ids) = ids.as_deref_mut() {
                ids.push((tagged(tag::CODEX_KEY, r.key), fi));
            }
            if !seen.insert(r.key) {
                charges.add(fi, Counter::CodexDuplicate, 1);
                continue;
            }
            let model = match f.parse.string(r.model) {
                "" => "unknown",
                m => m,
            };
            sums.add(Request {
                agent: Agent::Codex,
                ts: r.ts,
                model,
                cwd: f.parse.string(r.cwd),
                session: &meta.thread_id,
                tier: f.parse.string(r.tier),
                bits: 0,
                tokens: r.tokens,
                web_searches: 0,
            });
        }
    }
}

/// Sums the pi files' requests: every assistant message its parser kept
/// (a fork's copied history is left out there), each file on its own.
fn pi_count<'a>(files: &[FileRef<'a>], sums: &mut SlotSums<'_, 'a>) {
    for f in files.iter().filter(|f| f.agent == Agent::Pi) {
        let fp = f.parse;
        for e in fp.events.iter().filter(|e| e.kind == EventKind::Pi) {
            sums.add(Request {
                agent: Agent::Pi,
                ts: e.ts,
                model: fp.string(e.model),
                cwd: fp.string(e.cwd),
                session: &fp.codex.thread_id,
                tier: "",
                bits: 0,
                tokens: claude_tokens(e.t),
                web_searches: 0,
            });
        }
    }
}

/// Sums the requests of every agent on the shared contract
/// ([`EventKind::Message`]), each file on its own: calls of one file with
/// the same id count once, the one with the largest total (the first of
/// those), since an agent that writes a call while it streams writes it
/// again, grown; a call without an id always counts.
fn message_count<'a>(files: &[FileRef<'a>], sums: &mut SlotSums<'_, 'a>) {
    let mut best: HashMap<u64, usize> = HashMap::default();
    for f in files {
        let fp = f.parse;
        best.clear();
        let messages = fp.events.iter().enumerate();
        for (i, e) in messages.filter(|(_, e)| e.kind == EventKind::Message && e.key != 0) {
            let total = |at: usize| message_tokens(fp.events[at].t).total();
            best.entry(e.key)
                .and_modify(|kept| {
                    if message_tokens(e.t).total() > total(*kept) {
                        *kept = i;
                    }
                })
                .or_insert(i);
        }
        for (i, e) in fp.events.iter().enumerate() {
            if e.kind != EventKind::Message || (e.key != 0 && best.get(&e.key) != Some(&i)) {
                continue;
            }
            let session = match fp.string(e.session) {
                "" => fp.codex.thread_id.as_str(),
                s => s,
            };
            sums.add(Request {
                agent: f.agent,
                ts: e.ts,
                model: match fp.string(e.model) {
                    "" => "unknown",
                    m => m,
                },
                cwd: fp.string(e.cwd),
                session,
                tier: "",
                bits: 0,
                tokens: message_tokens(e.t),
                web_searches: 0,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude(lines: &[String]) -> FileParse {
        let mut fp = FileParse::default();
        for l in lines {
            crate::usage::parse::claude::parse_line(&mut fp, l.as_bytes());
        }
        fp
    }

    fn rec(msg: &str, req: &str, side: bool, output: u64, read: u64) -> String {
        format!(
            r#"{{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","isSidechain":{side},"cwd":"/p","requestId":"{req}","message":{{"id":"{msg}","model":"claude-opus-4-6","usage":{{"input_tokens":1,"output_tokens":{output},"cache_read_input_tokens":{read}}}}}}}"#
        )
    }

    fn table() -> PriceTable {
        PriceTable::bundled().unwrap()
    }

    #[test]
    fn a_files_counters_are_in_the_state_order_claude_codex_forks() {
        // The aggregate state stores a file's row as these three numbers in
        // this order (`usage::store::state`), as it stores the totals.
        let dup = claude(&[rec("m1", "r1", false, 1, 10), rec("m1", "r1", false, 9, 10)]);
        let mut fork = FileParse::default();
        fork.codex.thread_id = "child".into();
        fork.codex.forked_from = "a-parent-not-on-hand".into();
        let files = [
            FileRef {
                agent: Agent::Claude,
                parse: &dup,
            },
            FileRef {
                agent: Agent::Codex,
                parse: &fork,
            },
        ];
        let d = aggregate_detailed(&files, &table(), 0, None, None);
        assert_eq!(d.by_file.get(&0), Some(&[1, 0, 0]));
        assert_eq!(d.by_file.get(&1), Some(&[0, 0, 1]));
        let totals = [d.duplicates_claude, d.duplicates_codex, d.forks_unresolved];
        assert_eq!(totals, [1, 0, 1]);
    }

    /// A file of model calls on the shared contract: (id, output) each, at
    /// 10:00 UTC on 2026-12-04, input 10 each.
    fn messages(session: &str, calls: &[(&str, u64)]) -> FileParse {
        let mut fp = FileParse::default();
        fp.codex.thread_id = session.into();
        for (id, output) in calls {
            fp.push_message(&crate::usage::event::Message {
                ts: 1_764_842_400,
                model: "gpt-5",
                cwd: "/p",
                session: "",
                id: id.as_bytes(),
                tokens: Tokens {
                    input: 10,
                    output: *output,
                    ..Tokens::default()
                },
            });
        }
        fp
    }

    #[test]
    fn a_files_calls_with_one_id_count_once_and_files_never_meet() {
        // "m1" written three times as it streamed (5, 50, 20 output): the
        // largest counts; "" (no id) twice: both count. The same id in
        // another file is another call.
        let a = messages(
            "s-a",
            &[("m1", 5), ("m1", 50), ("", 1), ("", 1), ("m1", 20)],
        );
        let b = messages("s-b", &[("m1", 7)]);
        let files = [
            FileRef {
                agent: Agent::Pi,
                parse: &a,
            },
            FileRef {
                agent: Agent::Pi,
                parse: &b,
            },
        ];
        let agg = aggregate_detailed(&files, &table(), 0, None, None);
        let mut by_session = BTreeMap::new();
        for ((_, _, _, _, session), acc) in &agg.sessions {
            let t = acc.totals();
            by_session.insert(
                session.to_string(),
                (t.requests, t.tokens.input, t.tokens.output),
            );
        }
        // By hand: s-a = 3 calls, input 30, output 50 + 1 + 1; s-b = 1 call.
        assert_eq!(by_session["s-a"], (3, 30, 52));
        assert_eq!(by_session["s-b"], (1, 10, 7));
    }

    #[test]
    fn claude_keeps_the_largest_block_record_once_across_files() {
        let a = claude(&[rec("m1", "r1", false, 1, 10), rec("m1", "r1", false, 9, 10)]);
        let b = claude(&[rec("m1", "r1", false, 5, 10), rec("m2", "r2", false, 2, 0)]);
        let files = [
            FileRef {
                agent: Agent::Claude,
                parse: &a,
            },
            FileRef {
                agent: Agent::Claude,
                parse: &b,
            },
        ];
        let agg = aggregate(&files, &table(), 0);
        let mut t = Totals::default();
        for s in &agg.slots {
            t.add(&s.totals);
        }
        assert_eq!(t.requests, 2);
        assert_eq!(t.tokens.output, 9 + 2);
        assert_eq!(t.tokens.cache_read, 10);
        assert_eq!(agg.duplicates_claude, 2);
        assert!(t.cost_usd > 0.0);
        assert_eq!(t.unpriced_requests, 0);
    }

    #[test]
    fn web_searches_are_priced_per_search_and_never_counted_as_tokens() {
        // Sonnet 4.5: 1,000 input and 100 output tokens at $3 and $15 per
        // million = $0.0045, plus 3 searches at Anthropic's $10 per 1,000.
        // The same request on a model without a search price is unpriced.
        let line = |id: &str, model: &str| {
            format!(
                r#"{{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","cwd":"/p","requestId":"r{id}","message":{{"id":"m{id}","model":"{model}","usage":{{"input_tokens":1000,"output_tokens":100,"server_tool_use":{{"web_search_requests":3}}}}}}}}"#
            )
        };
        let fp = claude(&[
            line("1", "claude-sonnet-4-5"),
            line("2", "claude-3-opus-20240229"),
        ]);
        let agg = aggregate(
            &[FileRef {
                agent: Agent::Claude,
                parse: &fp,
            }],
            &table(),
            0,
        );
        let mut t = Totals::default();
        for s in &agg.slots {
            t.add(&s.totals);
        }
        assert_eq!(t.requests, 2);
        assert_eq!(t.tokens.total(), 2 * 1_100);
        assert_eq!(t.unpriced_requests, 1);
        assert_eq!(t.unpriced_tokens, 1_100);
        assert!(
            (t.cost_usd - (0.0045 + 0.03)).abs() < 1e-12,
            "{}",
            t.cost_usd
        );
    }

    #[test]
    fn the_best_record_of_a_key_is_the_same_however_its_records_are_grouped() {
        // Records of three keys spread over four files, in runs and
        // interleaved, with equal totals and the speed flag; the expected
        // result is worked out here by the rule itself: per key, the first
        // record (in file order) of the largest (total, has speed); every
        // other record is a duplicate of its own file.
        let mut n = 7u64;
        let mut next = |m: u64| {
            n = n
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (n >> 33) % m
        };
        let mut files: Vec<Vec<(u64, u64, bool)>> = Vec::new();
        for _ in 0..4 {
            let mut records = Vec::new();
            for _ in 0..12 {
                let key = next(3);
                // A run: the same key again, half the time.
                let repeat = if next(2) == 0 { 2 } else { 1 };
                for _ in 0..repeat {
                    records.push((key, 1 + next(3), next(3) == 0));
                }
            }
            files.push(records);
        }
        let line = |key: u64, output: u64, fast: bool| {
            let speed = if fast { r#","speed":"fast""# } else { "" };
            format!(
                r#"{{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","cwd":"/p","requestId":"r{key}","message":{{"id":"m{key}","model":"claude-opus-4-6","usage":{{"input_tokens":1,"output_tokens":{output}{speed}}}}}}}"#
            )
        };
        let parsed: Vec<FileParse> = files
            .iter()
            .map(|records| {
                claude(
                    &records
                        .iter()
                        .map(|r| line(r.0, r.1, r.2))
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let refs: Vec<FileRef> = parsed
            .iter()
            .map(|parse| FileRef {
                agent: Agent::Claude,
                parse,
            })
            .collect();
        let got = aggregate_detailed(&refs, &table(), 0, None, None);
        let mut best: BTreeMap<u64, (u64, bool, usize)> = BTreeMap::new();
        let mut counts = [0u64; 4];
        for (fi, records) in files.iter().enumerate() {
            for &(key, output, fast) in records {
                counts[fi] += 1;
                match best.get(&key) {
                    Some(&(o, f, _)) if (output, fast) <= (o, f) => {}
                    _ => {
                        best.insert(key, (output, fast, fi));
                    }
                }
            }
        }
        let mut duplicates = counts;
        for &(_, _, fi) in best.values() {
            duplicates[fi] -= 1;
        }
        let output: u64 = got.slots.values().map(|s| s.tokens.output).sum();
        assert_eq!(output, best.values().map(|b| b.0).sum::<u64>());
        let requests: u64 = got.slots.values().map(|s| s.requests).sum();
        assert_eq!(requests, best.len() as u64);
        for (fi, want) in duplicates.iter().enumerate() {
            let charged = got
                .by_file
                .get(&(fi as u64))
                .map_or(0, |c| c[Counter::ClaudeDuplicate as usize]);
            assert_eq!(charged, *want, "file {fi}");
        }
        assert_eq!(got.duplicates_claude, duplicates.iter().sum::<u64>());
    }

    #[test]
    fn sidechain_replays_are_dropped_but_own_sidechain_messages_count() {
        let main = claude(&[rec("m1", "r1", false, 4, 100)]);
        let side = claude(&[rec("m1", "r9", true, 4, 100), rec("m7", "r7", true, 3, 0)]);
        let files = [
            FileRef {
                agent: Agent::Claude,
                parse: &side,
            },
            FileRef {
                agent: Agent::Claude,
                parse: &main,
            },
        ];
        let agg = aggregate(&files, &table(), 0);
        let requests: u64 = agg.slots.iter().map(|s| s.totals.requests).sum();
        let output: u64 = agg.slots.iter().map(|s| s.totals.tokens.output).sum();
        assert_eq!(requests, 2);
        assert_eq!(output, 7);
        assert_eq!(agg.duplicates_claude, 1);
    }

    #[test]
    fn unknown_models_are_unpriced_and_the_window_applies() {
        let mut fp = claude(&[rec("m1", "r1", false, 4, 0)]);
        fp.strings[fp.events[0].model as usize] = "claude-mystery-9".into();
        let old =
            claude(&[rec("m0", "r0", false, 4, 0)
                .replace("2026-11-29T10:00:00Z", "2026-10-01T10:00:00Z")]);
        let files = [
            FileRef {
                agent: Agent::Claude,
                parse: &fp,
            },
            FileRef {
                agent: Agent::Claude,
                parse: &old,
            },
        ];
        let since = crate::usage::time::parse_timestamp("2026-11-01T00:00:00Z").unwrap();
        let agg = aggregate(&files, &table(), since);
        assert_eq!(agg.slots.len(), 1);
        let t = agg.slots[0].totals;
        assert_eq!(t.unpriced_requests, 1);
        assert_eq!(t.unpriced_tokens, 5);
        assert_eq!(t.cost_usd, 0.0);
        assert_eq!(agg.slots[0].slot % SLOT, 0);
    }

    #[test]
    fn slots_are_per_session_and_flatten_sums_them_exactly() {
        // Two sessions of one model and directory in one slot, and a
        // Codex rollout: its session is its thread id.
        let line = |msg: &str, session: &str, output: u64| {
            rec(msg, msg, false, output, 0).replace(
                r#""cwd":"/p","#,
                &format!(r#""cwd":"/p","sessionId":"{session}","#),
            )
        };
        let a = claude(&[
            line("m1", "s-1", 4),
            line("m2", "s-2", 6),
            line("m3", "s-1", 1),
        ]);
        let mut x = FileParse::default();
        for l in [
            r#"{"timestamp":"2026-11-29T10:00:00Z","type":"session_meta","payload":{"id":"thread-9","cwd":"/p"}}"#,
            r#"{"timestamp":"2026-11-29T10:00:00Z","type":"turn_context","payload":{"cwd":"/p","model":"gpt-5.5"}}"#,
            r#"{"timestamp":"2026-11-29T10:00:01Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2,"reasoning_output_tokens":0,"total_tokens":12},"last_token_usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2,"reasoning_output_tokens":0,"total_tokens":12}}}}"#,
        ] {
            codex::parse_line(&mut x, l.as_bytes());
        }
        let files = [
            FileRef {
                agent: Agent::Claude,
                parse: &a,
            },
            FileRef {
                agent: Agent::Codex,
                parse: &x,
            },
        ];
        let d = aggregate_detailed(&files, &table(), 0, None, None);
        let keyed: Vec<(&str, &str, u64, u64)> = d
            .sessions
            .iter()
            .map(|(k, acc)| (&*k.2, &*k.4, acc.requests, acc.tokens.output))
            .collect();
        assert_eq!(
            keyed,
            [
                ("claude-opus-4-6", "s-1", 2, 5),
                ("claude-opus-4-6", "s-2", 1, 6),
                ("gpt-5.5", "thread-9", 1, 2),
            ]
        );
        // The slots, and so the flattened aggregate, have the two Claude
        // sessions as one slot: counts and picodollars summed as integers,
        // the span from either.
        assert_eq!(d.slots.len(), 2);
        assert!(d.slots.keys().all(|k| k.4.is_empty()));
        let flat = flatten(&d);
        assert_eq!(flat.slots.len(), 2);
        let mut sum = SlotAcc::default();
        for (k, acc) in &d.sessions {
            if k.1 == Agent::Claude {
                sum.merge(acc);
            }
        }
        assert_eq!(d.slots.values().next(), Some(&sum));
        assert_eq!(flat.slots[0].totals, sum.totals());
        assert_eq!(flat.slots[0].totals.requests, 3);
        assert_eq!(&*flat.slots[1].model, "gpt-5.5");
    }
}

//! Incremental aggregation: a refresh in which a few files changed updates
//! the previous totals instead of re-aggregating every cached event.
//!
//! Aggregation is global only through a few identifiers: Claude dedupe keys
//! (`message.id`, `requestId`) and message ids (sidechain replays), Codex
//! request keys, thread ids and fork parents. The state kept beside the
//! index (`aggregate-v1.bin`) holds the exact sums per slot (integers, cost
//! in picodollars) and a sorted table of those identifiers with the file
//! that owns each (or "shared" when several files have it). A changed file
//! whose old and new identifiers are owned by no other file contributes
//! independently of every other file, so its old contribution is
//! subtracted and its new one added — exactly what a from-scratch
//! aggregation gives. Anything else (a shared key, a fork parent that
//! changed, a span that cannot be recomputed, a state that does not match
//! the index) falls back to the full aggregation, which rebuilds the state.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use crate::usage_aggregate::{
    self, Detailed, FileRef, ParentLookup, SlotAcc, SlotKey, tag, tagged, thread_hash,
};
use crate::usage_cache::{Change, FileEntry, Index};
use crate::usage_owners::{Owners, owner_of};
use crate::usage_pricing::PriceTable;
use crate::usage_row::{Agent, FileParse, Tokens};

const MAGIC: &[u8; 4] = b"HUAG";
/// Bump when the state layout or the aggregation rules change.
pub const STATE_VERSION: u32 = 1;
/// More changed files than this: aggregate from scratch (cheaper than many
/// isolated passes, and a cold scan changes everything anyway).
pub const MAX_CHANGES: usize = 64;

/// The aggregate kept beside the index.
#[derive(Debug)]
pub struct State {
    /// [`Index::fingerprint`] of the index this state aggregates.
    pub fingerprint: u64,
    /// Requests before this (UTC seconds, slot-aligned) are not counted.
    pub since: i64,
    /// The price table's source hash.
    pub pricing: String,
    pub detailed: Detailed,
    /// Who owns each identifier files can share.
    pub owners: Owners,
}

fn parent_in<'a>(index: &'a Index) -> impl Fn(&str) -> Option<&'a FileParse> {
    move |thread: &str| {
        index
            .files
            .values()
            .find(|e| e.agent == Agent::Codex && e.parse.codex.thread_id == thread)
            .map(|e| &e.parse)
    }
}

impl State {
    /// Aggregates every file of `index` from scratch.
    pub fn full(index: &Index, prices: &PriceTable, since: i64) -> State {
        let keys: Vec<&String> = index.files.keys().collect();
        let files: Vec<FileRef> = index
            .files
            .values()
            .map(|e| FileRef {
                agent: e.agent,
                parse: &e.parse,
            })
            .collect();
        let mut ids = Vec::new();
        let detailed =
            usage_aggregate::aggregate_detailed(&files, prices, since, None, Some(&mut ids));
        let owners = Owners::new(
            ids.into_iter()
                .map(|(id, fi)| (id, owner_of(keys[fi])))
                .collect(),
        );
        State {
            fingerprint: index.fingerprint(),
            since,
            pricing: prices.meta.source_sha256.clone(),
            detailed,
            owners,
        }
    }

    /// Brings the state from the index it was built for to `index` (after
    /// a refresh that made `changes`). `false` when that cannot be done
    /// exactly; the state must then be rebuilt with [`State::full`].
    /// `before` is the fingerprint of the index as loaded.
    pub fn apply(
        &mut self,
        before: u64,
        index: &mut Index,
        changes: &mut [Change],
        prices: &PriceTable,
        since: i64,
    ) -> bool {
        if self.fingerprint != before
            || self.pricing != prices.meta.source_sha256
            || since < self.since
            || changes.len() > MAX_CHANGES
        {
            return false;
        }
        // Decode what the contributions need: the old entries, and fork
        // parents (their events set a fork's baseline).
        for c in changes.iter_mut() {
            if let Some(old) = c.old.as_mut()
                && !old.materialize()
            {
                return false;
            }
        }
        let mut parents: Vec<String> = Vec::new();
        for c in changes.iter() {
            let new = index.files.get(&c.key);
            for e in c.old.iter().chain(new) {
                if !e.parse.codex.forked_from.is_empty() {
                    parents.push(e.parse.codex.forked_from.clone());
                }
            }
        }
        if !parents.is_empty() {
            for e in index.files.values_mut() {
                if e.agent == Agent::Codex
                    && parents.contains(&e.parse.codex.thread_id)
                    && !e.materialize()
                {
                    return false;
                }
            }
        }
        let index: &Index = index;
        let lookup = parent_in(index);
        let d = &self.detailed;
        let mut pending = Pending {
            counters: [d.duplicates_claude, d.duplicates_codex, d.forks_unresolved],
            slots: BTreeMap::new(),
        };
        let mut parts = Vec::with_capacity(changes.len());
        for c in changes.iter() {
            let old = contribution(c.old.as_ref(), prices, since, &lookup);
            let new = contribution(index.files.get(&c.key), prices, since, &lookup);
            // A fork whose parent is this file depends on it.
            let parent_ids: Vec<u64> = c
                .old
                .iter()
                .chain(index.files.get(&c.key))
                .map(|e| &e.parse.codex.thread_id)
                .filter(|t| !t.is_empty())
                .map(|t| tagged(tag::CODEX_PARENT, thread_hash(t)))
                .collect();
            parts.push((c, owner_of(&c.key), old, new, parent_ids));
        }
        let wanted: Vec<u64> = parts
            .iter()
            .flat_map(|(_, _, old, new, parents)| old.ids.iter().chain(&new.ids).chain(parents))
            .copied()
            .collect();
        let Ok(owners) = self.owners.resolve(&wanted) else {
            return false;
        };
        // Identifiers each changed file claims (two changed files must not
        // share one either).
        let mut claimed: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
        for (_, owner, old, new, _) in &parts {
            for &id in old.ids.iter().chain(&new.ids) {
                if owners.get(&id).is_some_and(|o| o != owner)
                    || *claimed.entry(id).or_insert(*owner) != *owner
                {
                    return false;
                }
            }
        }
        for (_, _, old, new, parents) in &parts {
            if parents
                .iter()
                .any(|p| owners.contains_key(p) || claimed.contains_key(p))
            {
                return false;
            }
            if self
                .replace(&mut pending, &old.detailed, &new.detailed)
                .is_none()
            {
                return false;
            }
        }
        let d = &mut self.detailed;
        [d.duplicates_claude, d.duplicates_codex, d.forks_unresolved] = pending.counters;
        for (key, acc) in pending.slots {
            match acc {
                Some(acc) => {
                    d.slots.insert(key, acc);
                }
                None => {
                    d.slots.remove(&key);
                }
            }
        }
        self.prune(since);
        for (_, owner, old, new, _) in &parts {
            for &id in &old.ids {
                self.owners.remove(id);
            }
            for &id in &new.ids {
                self.owners.set(id, *owner);
            }
        }
        self.fingerprint = index.fingerprint();
        true
    }

    /// Subtracts `old` and adds `new` (one file's contributions) into
    /// `pending` (changes over this state, committed only when every file
    /// succeeded); `None` when the result cannot be known exactly.
    fn replace(&self, pending: &mut Pending, old: &Detailed, new: &Detailed) -> Option<()> {
        for (i, (o, n)) in [
            (old.duplicates_claude, new.duplicates_claude),
            (old.duplicates_codex, new.duplicates_codex),
            (old.forks_unresolved, new.forks_unresolved),
        ]
        .into_iter()
        .enumerate()
        {
            pending.counters[i] = pending.counters[i].checked_sub(o)? + n;
        }
        for key in old.slots.keys().chain(new.slots.keys()) {
            let (o, n) = (old.slots.get(key), new.slots.get(key));
            let current = match pending.slots.get(key) {
                Some(overlay) => *overlay,
                None => self.detailed.slots.get(key).copied(),
            };
            let merged = match (current, o) {
                (None, Some(_)) => return None,
                (cur, None) => combine(cur, n),
                (Some(cur), Some(o)) => {
                    let mut rest = cur;
                    rest.sub_counts(o)?;
                    if rest.requests == 0 {
                        n.copied()
                    } else {
                        // The others' span is known unless `o` held an end.
                        let first_known = o.first_ts > cur.first_ts
                            || n.is_some_and(|n| n.first_ts <= o.first_ts);
                        let last_known =
                            o.last_ts < cur.last_ts || n.is_some_and(|n| n.last_ts >= o.last_ts);
                        if !first_known || !last_known {
                            return None;
                        }
                        combine(Some(rest), n)
                    }
                }
            };
            pending
                .slots
                .insert(key.clone(), merged.filter(|acc| acc.requests > 0));
        }
        Some(())
    }

    fn prune(&mut self, since: i64) {
        self.detailed.slots.retain(|k, _| k.0 >= since);
        self.since = since;
    }
}

/// Changes over a [`State`] not committed yet: the three counters and
/// the slots touched (`None`: removed).
struct Pending {
    counters: [u64; 3],
    slots: BTreeMap<SlotKey, Option<SlotAcc>>,
}

/// `a` plus `b`, spans widened (a's span stands for what remains of it).
fn combine(a: Option<SlotAcc>, b: Option<&SlotAcc>) -> Option<SlotAcc> {
    match (a, b) {
        (a, None) => a,
        (None, Some(b)) => Some(*b),
        (Some(mut a), Some(b)) => {
            a.add_counts(b);
            a.first_ts = a.first_ts.min(b.first_ts);
            a.last_ts = a.last_ts.max(b.last_ts);
            Some(a)
        }
    }
}

struct Contribution {
    detailed: Detailed,
    ids: Vec<u64>,
}

/// One file's results aggregated alone.
fn contribution<'a>(
    entry: Option<&'a FileEntry>,
    prices: &PriceTable,
    since: i64,
    lookup: ParentLookup<'_, 'a>,
) -> Contribution {
    let Some(e) = entry else {
        return Contribution {
            detailed: Detailed::default(),
            ids: Vec::new(),
        };
    };
    let files = [FileRef {
        agent: e.agent,
        parse: &e.parse,
    }];
    let mut ids = Vec::new();
    let detailed =
        usage_aggregate::aggregate_detailed(&files, prices, since, Some(lookup), Some(&mut ids));
    let mut ids: Vec<u64> = ids.into_iter().map(|(id, _)| id).collect();
    ids.sort_unstable();
    ids.dedup();
    Contribution { detailed, ids }
}

// ---- binary layout --------------------------------------------------------

fn put_u64(o: &mut Vec<u8>, v: u64) {
    o.extend(v.to_le_bytes());
}

fn put_str(o: &mut Vec<u8>, s: &str) {
    put_u64(o, s.len() as u64);
    o.extend(s.as_bytes());
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(self.u64()? as i64)
    }
    fn count(&mut self, item: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n.checked_mul(item)? <= self.b.len() - self.at).then_some(n)
    }
    fn str(&mut self) -> Option<String> {
        let n = self.count(1)?;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

impl State {
    /// Writes the state to `path` (`aggregate-v1.bin`), and the owners
    /// table beside it when it is new or has outgrown its delta. A cache:
    /// atomic, not `fsync`ed.
    pub fn save(&mut self, path: &Path) -> io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        self.owners.save(dir)?;
        let bytes = self
            .to_bytes()
            .ok_or_else(|| io::Error::other("owners table not saved"))?;
        crate::atomic_file::write_unsynced(path, &bytes, 0o600)
    }

    /// Reads the state at `path`; `None` when it or the owners table it
    /// names is missing, corrupt or of another layout.
    pub fn load(path: &Path) -> Option<State> {
        let bytes = std::fs::read(path).ok()?;
        State::from_bytes(&bytes, path.parent().unwrap_or(Path::new(".")))
    }

    fn to_bytes(&self) -> Option<Vec<u8>> {
        let mut o = Vec::with_capacity(1 << 20);
        o.extend(MAGIC);
        o.extend(STATE_VERSION.to_le_bytes());
        put_u64(&mut o, self.fingerprint);
        put_u64(&mut o, self.since as u64);
        put_str(&mut o, &self.pricing);
        let d = &self.detailed;
        for n in [d.duplicates_claude, d.duplicates_codex, d.forks_unresolved] {
            put_u64(&mut o, n);
        }
        let mut strings: BTreeMap<&str, u64> = BTreeMap::new();
        for (_, _, model, cwd) in d.slots.keys() {
            for s in [model, cwd] {
                let n = strings.len() as u64;
                strings.entry(s.as_str()).or_insert(n);
            }
        }
        let mut ordered: Vec<(&str, u64)> = strings.iter().map(|(s, n)| (*s, *n)).collect();
        ordered.sort_by_key(|&(_, n)| n);
        put_u64(&mut o, ordered.len() as u64);
        for (s, _) in &ordered {
            put_str(&mut o, s);
        }
        put_u64(&mut o, d.slots.len() as u64);
        for ((slot, agent, model, cwd), a) in &d.slots {
            let t = &a.tokens;
            put_u64(&mut o, *slot as u64);
            put_u64(&mut o, u64::from(*agent == Agent::Codex));
            put_u64(&mut o, strings[model.as_str()]);
            put_u64(&mut o, strings[cwd.as_str()]);
            for n in [
                a.requests,
                t.input,
                t.cache_read,
                t.cache_write_5m,
                t.cache_write_1h,
                t.output,
                t.reasoning,
                a.cost_pico,
                a.unpriced_tokens,
                a.unpriced_requests,
                a.first_ts as u64,
                a.last_ts as u64,
            ] {
                put_u64(&mut o, n);
            }
        }
        self.owners.encode_ref(&mut o)?;
        Some(o)
    }

    fn from_bytes(bytes: &[u8], dir: &Path) -> Option<State> {
        let mut r = Reader { b: bytes, at: 0 };
        if r.take(4)? != MAGIC || u32::from_le_bytes(r.take(4)?.try_into().ok()?) != STATE_VERSION {
            return None;
        }
        let fingerprint = r.u64()?;
        let since = r.i64()?;
        let pricing = r.str()?;
        let mut d = Detailed {
            duplicates_claude: r.u64()?,
            duplicates_codex: r.u64()?,
            forks_unresolved: r.u64()?,
            ..Detailed::default()
        };
        let ns = r.count(8)?;
        let strings: Vec<String> = (0..ns).map(|_| r.str()).collect::<Option<_>>()?;
        let nslots = r.count(16 * 8)?;
        for _ in 0..nslots {
            let slot = r.i64()?;
            let agent = match r.u64()? {
                0 => Agent::Claude,
                1 => Agent::Codex,
                _ => return None,
            };
            let model = strings.get(usize::try_from(r.u64()?).ok()?)?.clone();
            let cwd = strings.get(usize::try_from(r.u64()?).ok()?)?.clone();
            let mut n = [0u64; 12];
            for x in &mut n {
                *x = r.u64()?;
            }
            d.slots.insert(
                (slot, agent, model, cwd),
                SlotAcc {
                    requests: n[0],
                    tokens: Tokens {
                        input: n[1],
                        cache_read: n[2],
                        cache_write_5m: n[3],
                        cache_write_1h: n[4],
                        output: n[5],
                        reasoning: n[6],
                    },
                    cost_pico: n[7],
                    unpriced_tokens: n[8],
                    unpriced_requests: n[9],
                    first_ts: n[10] as i64,
                    last_ts: n[11] as i64,
                },
            );
        }
        let mut at = r.at;
        let owners = Owners::decode_ref(bytes, &mut at, dir)?;
        if at != bytes.len() {
            return None;
        }
        Some(State {
            fingerprint,
            since,
            pricing,
            detailed: d,
            owners,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_refuses_damage() {
        let dir = std::env::temp_dir().join(format!("heeler-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("aggregate-v1.bin");
        let mut d = Detailed {
            duplicates_claude: 3,
            ..Detailed::default()
        };
        d.slots.insert(
            (900, Agent::Codex, "gpt-5".into(), "/p".into()),
            SlotAcc {
                requests: 2,
                cost_pico: 7,
                first_ts: 901,
                last_ts: 1700,
                ..SlotAcc::default()
            },
        );
        let mut s = State {
            fingerprint: 9,
            since: 0,
            pricing: "ab".into(),
            detailed: d,
            owners: Owners::new(vec![(1, 2), (3, 4), (3, 5)]),
        };
        s.owners.remove(1);
        s.save(&path).unwrap();
        s.owners.set(7, 8);
        s.save(&path).unwrap();
        let back = State::load(&path).unwrap();
        assert_eq!(
            (back.fingerprint, back.since, &back.pricing, &back.detailed),
            (s.fingerprint, s.since, &s.pricing, &s.detailed)
        );
        assert_eq!(
            back.owners.rows().unwrap(),
            vec![(3, crate::usage_owners::SHARED), (7, 8)]
        );
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(State::load(&path).is_none());
        std::fs::write(&path, b"HUAG").unwrap();
        assert!(State::load(&path).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Incremental aggregation: a refresh in which a few files changed updates
//! the previous totals instead of re-aggregating every cached event.
//!
//! Aggregation is global only through a few identifiers: Claude dedupe keys
//! (`message.id`, `requestId`) and message ids (sidechain replays), Codex
//! request keys, thread ids and fork parents. The state kept beside the
//! index (`usage::store::state`) holds the exact sums per slot (integers,
//! cost in picodollars) and a table of those identifiers with the file
//! that owns each, or "shared" when several files have it (`usage::store::owners`). A changed file
//! whose old and new identifiers are owned by no other file contributes
//! independently of every other file, so its old contribution is
//! subtracted and its new one added — exactly what a from-scratch
//! aggregation gives. Anything else (a shared key, a fork parent that
//! changed, a span that cannot be recomputed, a state that does not match
//! the index) falls back to the full aggregation, which rebuilds the state.

use std::collections::{BTreeMap, BTreeSet};

use crate::usage::aggregate::{
    self, Detailed, FileRef, ParentLookup, SlotAcc, SlotKey, tag, tagged, thread_hash,
};
use crate::usage::cache::{Change, FileEntry, Index};
use crate::usage::event::{Agent, FileParse};
use crate::usage::pricing::PriceTable;
use crate::usage::store::journal::Origin;
use crate::usage::store::owners::{self, Owners, owner_of};
use crate::usage::store::rows::LazyTable;

/// More changed files than this: aggregate from scratch (cheaper than many
/// isolated passes, and a cold scan changes everything anyway).
pub(crate) const MAX_CHANGES: usize = 64;

/// The aggregate kept beside the index.
#[derive(Debug)]
pub struct State {
    /// [`Index::fingerprint`] of the index this state aggregates.
    pub fingerprint: u64,
    /// Requests before this (UTC seconds, slot-aligned) are not counted.
    pub since: i64,
    /// The price table it was priced with ([`PriceTable::identity`]).
    pub pricing: String,
    pub detailed: Detailed,
    /// Who owns each identifier files can share.
    pub owners: Owners,
    /// What changed since the state was loaded (what the state store
    /// journals); `None` for a state built from scratch (a new base).
    pub changed: Option<Changed>,
    /// Where the state was loaded from (to append to its journal).
    pub origin: Option<Origin>,
    /// [`Detailed::slots`] not decoded yet (a state loaded by the
    /// worker): `detailed.slots` is empty and this is the table.
    pub lazy_slots: Option<LazyTable>,
    /// [`Detailed::sessions`] likewise.
    pub lazy_sessions: Option<LazyTable>,
}

/// Slots and owner identifiers changed since a state was loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changed {
    pub slots: BTreeSet<SlotKey>,
    /// Keys of [`Detailed::sessions`].
    pub sessions: BTreeSet<SlotKey>,
    pub owners: BTreeSet<u64>,
    /// Files (owner ids) whose counters in [`Detailed::by_file`] changed.
    pub files: BTreeSet<u64>,
}

fn parent_in<'a>(index: &'a Index) -> impl Fn(&str) -> Option<&'a FileParse> {
    move |thread: &str| {
        index
            .files
            .values()
            .find(|e| {
                aggregate::is_parent_candidate(e.agent, &e.parse)
                    && e.parse.codex.thread_id == thread
            })
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
        let file_owners: Vec<u64> = keys.iter().map(|k| owner_of(k)).collect();
        let owned = |ids: Vec<(u64, usize)>| -> Vec<(u64, u64)> {
            ids.into_iter()
                .map(|(id, fi)| (id, file_owners[fi]))
                .collect()
        };
        // The Claude identifiers (most of the owners table: two a record)
        // are listed and sorted on a thread of their own while this one
        // sums the requests.
        let claude_table = || {
            let mut ids = Vec::new();
            aggregate::claude_ids(&files, &mut ids);
            owners::sorted(owned(ids))
        };
        let (mut detailed, owners) = std::thread::scope(|scope| {
            let claude = scope.spawn(claude_table);
            let mut ids = Vec::new();
            let detailed =
                aggregate::aggregate_detailed(&files, prices, since, None, Some(&mut ids));
            let claude = claude.join().unwrap_or_else(|_| claude_table());
            (detailed, Owners::from_sorted(claude, owned(ids)))
        });
        detailed.rekey_files(|fi| file_owners.get(fi).copied().unwrap_or(0));
        State {
            fingerprint: index.fingerprint(),
            since,
            pricing: prices.identity().to_string(),
            detailed,
            owners,
            changed: None,
            origin: None,
            lazy_slots: None,
            lazy_sessions: None,
        }
    }

    /// The sums of slot `key` (summed over sessions), decoded or not.
    pub fn slot(&self, key: &SlotKey) -> Option<SlotAcc> {
        sums_in(&self.lazy_slots, &self.detailed.slots, key)
    }

    /// The per-session sums of `key`, decoded or not.
    pub fn session(&self, key: &SlotKey) -> Option<SlotAcc> {
        sums_in(&self.lazy_sessions, &self.detailed.sessions, key)
    }

    /// Sets (`Some`) or removes (`None`) the sums of slot `key`.
    pub fn set_slot(&mut self, key: SlotKey, acc: Option<SlotAcc>) {
        set_in(&mut self.lazy_slots, &mut self.detailed.slots, key, acc);
    }

    /// Sets (`Some`) or removes (`None`) the per-session sums of `key`.
    pub fn set_session(&mut self, key: SlotKey, acc: Option<SlotAcc>) {
        set_in(
            &mut self.lazy_sessions,
            &mut self.detailed.sessions,
            key,
            acc,
        );
    }

    /// Decodes [`Detailed::slots`] and [`Detailed::sessions`] where they
    /// are not yet (before a new base is written, which holds them all);
    /// `false` when part of a table could not be read or was damaged (the
    /// state is then not whole: it must be rebuilt, not saved).
    #[must_use]
    pub fn decode_tables(&mut self) -> bool {
        let d = &mut self.detailed;
        for (lazy, table) in [
            (&mut self.lazy_slots, &mut d.slots),
            (&mut self.lazy_sessions, &mut d.sessions),
        ] {
            match lazy.take().map(LazyTable::decode) {
                Some(Some(decoded)) => *table = decoded,
                Some(None) => return false,
                None => {}
            }
        }
        true
    }

    /// Whether an undecoded table met a block that could not be read or
    /// was damaged: answers taken from it may be wrong.
    pub fn damaged(&self) -> bool {
        [&self.lazy_slots, &self.lazy_sessions]
            .into_iter()
            .flatten()
            .any(LazyTable::damaged)
    }

    /// Reads the slots from slot `from` on in one go, when they are not
    /// decoded (what [`State::visit_slots_from`] then visits); `None` when
    /// they cannot be read or are damaged.
    pub fn read_slots_from(&mut self, from: i64) -> Option<()> {
        match &mut self.lazy_slots {
            Some(lazy) => lazy.read_from(from),
            None => Some(()),
        }
    }

    /// Calls `visit` with each slot at or after slot `from` in key order
    /// (decoded or not); `None` when a block of them cannot be read or is
    /// damaged.
    pub fn visit_slots_from(
        &self,
        from: i64,
        mut visit: impl FnMut(&SlotKey, &SlotAcc),
    ) -> Option<()> {
        match &self.lazy_slots {
            Some(lazy) => lazy.visit_from(from, visit),
            None => {
                for (key, acc) in self.detailed.slots.range(aggregate::slots_from(from)..) {
                    visit(key, acc);
                }
                Some(())
            }
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
            || self.pricing != prices.identity()
            || since < self.since
            || changes.len() > MAX_CHANGES
            || !materialize(index, changes)
        {
            return false;
        }
        let index: &Index = index;
        let lookup = parent_in(index);
        let parts: Vec<Part> = changes
            .iter()
            .map(|c| Part::of(c, index, prices, since, &lookup))
            .collect();
        let wanted: Vec<u64> = parts
            .iter()
            .flat_map(|p| p.old.ids.iter().chain(&p.new.ids).chain(&p.parent_ids))
            .copied()
            .collect();
        let Ok(owners) = self.owners.resolve(&wanted) else {
            return false;
        };
        if !independent(&owners, &parts) {
            return false;
        }
        let d = &self.detailed;
        let mut pending = Pending {
            counters: [d.duplicates_claude, d.duplicates_codex, d.forks_unresolved],
            slots: BTreeMap::new(),
            sessions: BTreeMap::new(),
            files: BTreeMap::new(),
        };
        for p in &parts {
            if self
                .replace(&mut pending, &p.old.detailed, &p.new.detailed)
                .is_none()
            {
                return false;
            }
        }
        self.commit(pending, &parts, since);
        self.fingerprint = index.fingerprint();
        // A block of a table that could not be read may have hidden a row
        // from a lookup or from the history-start trim.
        !self.damaged()
    }

    /// Writes `pending` (every changed file's replacement, all exact) into
    /// the state, with the changed files' identifiers in the owners table.
    fn commit(&mut self, pending: Pending, parts: &[Part], since: i64) {
        let d = &mut self.detailed;
        [d.duplicates_claude, d.duplicates_codex, d.forks_unresolved] = pending.counters;
        if let Some(changed) = &mut self.changed {
            changed.slots.extend(pending.slots.keys().cloned());
            changed.sessions.extend(pending.sessions.keys().cloned());
            changed.files.extend(pending.files.keys().copied());
        }
        for (file, counts) in pending.files {
            match counts {
                Some(counts) => {
                    d.by_file.insert(file, counts);
                }
                None => {
                    d.by_file.remove(&file);
                }
            }
        }
        for (key, acc) in pending.slots {
            self.set_slot(key, acc);
        }
        for (key, acc) in pending.sessions {
            self.set_session(key, acc);
        }
        self.prune(since);
        for p in parts {
            for &id in &p.old.ids {
                self.owners.remove(id);
            }
            for &id in &p.new.ids {
                self.owners.set(id, p.owner);
            }
            if let Some(changed) = &mut self.changed {
                changed.owners.extend(p.old.ids.iter().chain(&p.new.ids));
            }
        }
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
        // A changed file shares no identifier with another (checked by
        // the caller), so every counter charged to it is its own. Each
        // file and slot is visited once: one both sides name has its old
        // part subtracted and its new part added in one step (visiting it
        // once per side would apply the difference twice).
        let files: BTreeSet<u64> = old
            .by_file
            .keys()
            .chain(new.by_file.keys())
            .copied()
            .collect();
        for file in &files {
            let current = match pending.files.get(file) {
                Some(overlay) => *overlay,
                None => self.detailed.by_file.get(file).copied(),
            };
            let (o, n) = (old.by_file.get(file), new.by_file.get(file));
            let mut counts = current.unwrap_or_default();
            for i in 0..3 {
                counts[i] = counts[i].checked_sub(o.map_or(0, |o| o[i]))? + n.map_or(0, |n| n[i]);
            }
            pending
                .files
                .insert(*file, (counts != [0; 3]).then_some(counts));
        }
        let slots = |key: &SlotKey| self.slot(key);
        replace_sums(slots, &mut pending.slots, &old.slots, &new.slots)?;
        let sessions = |key: &SlotKey| self.session(key);
        replace_sums(
            sessions,
            &mut pending.sessions,
            &old.sessions,
            &new.sessions,
        )
    }

    fn prune(&mut self, since: i64) {
        let d = &mut self.detailed;
        let (mut gone, mut gone_sessions) = (BTreeSet::new(), BTreeSet::new());
        for (map, gone) in [
            (&mut d.slots, &mut gone),
            (&mut d.sessions, &mut gone_sessions),
        ] {
            // Keys are in time order: what is before `since` is a prefix.
            let kept = map.split_off(&aggregate::slots_from(since));
            gone.extend(std::mem::replace(map, kept).into_keys());
        }
        for (lazy, gone) in [
            (&mut self.lazy_slots, &mut gone),
            (&mut self.lazy_sessions, &mut gone_sessions),
        ] {
            if let Some(lazy) = lazy {
                for key in lazy.keys_before(since) {
                    lazy.set(key.clone(), None);
                    gone.insert(key);
                }
            }
        }
        if let Some(changed) = &mut self.changed {
            changed.slots.extend(gone);
            changed.sessions.extend(gone_sessions);
        }
        self.since = since;
    }
}

/// Subtracts `old` and adds `new` (one file's sums, per slot) over
/// `current` into `pending`; `None` when the result cannot be known
/// exactly (a span whose end was `old`'s and is not `new`'s).
fn replace_sums(
    current: impl Fn(&SlotKey) -> Option<SlotAcc>,
    pending: &mut BTreeMap<SlotKey, Option<SlotAcc>>,
    old: &BTreeMap<SlotKey, SlotAcc>,
    new: &BTreeMap<SlotKey, SlotAcc>,
) -> Option<()> {
    let keys: BTreeSet<&SlotKey> = old.keys().chain(new.keys()).collect();
    for key in keys {
        let (o, n) = (old.get(key), new.get(key));
        let now = match pending.get(key) {
            Some(overlay) => *overlay,
            None => current(key),
        };
        let merged = match (now, o) {
            (None, Some(_)) => return None,
            (cur, None) => combine(cur, n),
            (Some(cur), Some(o)) => {
                let mut rest = cur;
                rest.sub_counts(o)?;
                if rest.requests == 0 {
                    n.copied()
                } else {
                    // The others' span is known unless `o` held an end.
                    let first_known =
                        o.first_ts > cur.first_ts || n.is_some_and(|n| n.first_ts <= o.first_ts);
                    let last_known =
                        o.last_ts < cur.last_ts || n.is_some_and(|n| n.last_ts >= o.last_ts);
                    if !first_known || !last_known {
                        return None;
                    }
                    combine(Some(rest), n)
                }
            }
        };
        pending.insert(key.clone(), merged.filter(|acc| acc.requests > 0));
    }
    Some(())
}

/// Decodes what the changed files' contributions need: their old
/// entries, and the fork parents they name (a parent's events set a fork's
/// baseline). `false` when one cannot be decoded.
fn materialize(index: &mut Index, changes: &mut [Change]) -> bool {
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
            if !e.parse.codex.parent().is_empty() {
                parents.push(e.parse.codex.parent().to_string());
            }
        }
    }
    if parents.is_empty() {
        return true;
    }
    index.files.values_mut().all(|e| {
        e.agent != Agent::Codex || !parents.contains(&e.parse.codex.thread_id) || e.materialize()
    })
}

/// One changed file: its owner id, its contributions before and after,
/// and the fork-parent identifiers of its thread ids (a fork whose parent
/// is this file depends on it).
struct Part {
    owner: u64,
    old: Contribution,
    new: Contribution,
    parent_ids: Vec<u64>,
}

impl Part {
    fn of<'a>(
        c: &'a Change,
        index: &'a Index,
        prices: &PriceTable,
        since: i64,
        lookup: ParentLookup<'_, 'a>,
    ) -> Part {
        let owner = owner_of(&c.key);
        let new_entry = index.files.get(&c.key);
        let parent_ids = c
            .old
            .iter()
            .chain(new_entry)
            .map(|e| &e.parse.codex.thread_id)
            .filter(|t| !t.is_empty())
            .map(|t| tagged(tag::CODEX_PARENT, thread_hash(t)))
            .collect();
        Part {
            owner,
            old: contribution(c.old.as_ref(), owner, prices, since, lookup),
            new: contribution(new_entry, owner, prices, since, lookup),
            parent_ids,
        }
    }
}

/// Whether the changed files contribute independently of every other
/// file: each identifier they have is owned by no other file (`owners`
/// holds the owners of those the table knows) nor claimed by two changed
/// files, and no file's thread is a fork parent anyone names.
fn independent(owners: &std::collections::HashMap<u64, u64>, parts: &[Part]) -> bool {
    let mut claimed: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for p in parts {
        for &id in p.old.ids.iter().chain(&p.new.ids) {
            if owners.get(&id).is_some_and(|&o| o != p.owner)
                || *claimed.entry(id).or_insert(p.owner) != p.owner
            {
                return false;
            }
        }
    }
    !parts.iter().any(|p| {
        p.parent_ids
            .iter()
            .any(|id| owners.contains_key(id) || claimed.contains_key(id))
    })
}

/// Changes over a [`State`] not committed yet: the three counters and
/// the slots and sessions touched (`None`: removed).
struct Pending {
    counters: [u64; 3],
    slots: BTreeMap<SlotKey, Option<SlotAcc>>,
    sessions: BTreeMap<SlotKey, Option<SlotAcc>>,
    files: BTreeMap<u64, Option<[u64; 3]>>,
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

/// One file's results aggregated alone (its counters charged to `owner`).
fn contribution<'a>(
    entry: Option<&'a FileEntry>,
    owner: u64,
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
    aggregate::claude_ids(&files, &mut ids);
    let mut detailed =
        aggregate::aggregate_detailed(&files, prices, since, Some(lookup), Some(&mut ids));
    detailed.rekey_files(|_| owner);
    let mut ids: Vec<u64> = ids.into_iter().map(|(id, _)| id).collect();
    ids.sort_unstable();
    ids.dedup();
    Contribution { detailed, ids }
}

/// The sums of `key` in a table, undecoded (`lazy`) or decoded (`map`).
fn sums_in(
    lazy: &Option<LazyTable>,
    map: &BTreeMap<SlotKey, SlotAcc>,
    key: &SlotKey,
) -> Option<SlotAcc> {
    match lazy {
        Some(lazy) => lazy.get(key),
        None => map.get(key).copied(),
    }
}

/// Sets (`Some`) or removes (`None`) the sums of `key` in a table,
/// undecoded (`lazy`) or decoded (`map`).
fn set_in(
    lazy: &mut Option<LazyTable>,
    map: &mut BTreeMap<SlotKey, SlotAcc>,
    key: SlotKey,
    acc: Option<SlotAcc>,
) {
    match (lazy, acc) {
        (Some(lazy), acc) => lazy.set(key, acc),
        (None, Some(acc)) => {
            map.insert(key, acc);
        }
        (None, None) => {
            map.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn part(owner: u64, old: &[u64], new: &[u64], parent_ids: &[u64]) -> Part {
        let contribution = |ids: &[u64]| Contribution {
            detailed: Detailed::default(),
            ids: ids.to_vec(),
        };
        Part {
            owner,
            old: contribution(old),
            new: contribution(new),
            parent_ids: parent_ids.to_vec(),
        }
    }

    #[test]
    fn changed_files_are_independent_only_when_they_share_no_identifier() {
        let (a, b) = (10, 20);
        let owners = |pairs: &[(u64, u64)]| pairs.iter().copied().collect::<HashMap<u64, u64>>();
        // Its own identifiers, old and new, some already its own.
        assert!(independent(
            &owners(&[(1, a)]),
            &[part(a, &[1], &[1, 2], &[])]
        ));
        // One another file owns.
        assert!(!independent(&owners(&[(1, b)]), &[part(a, &[], &[1], &[])]));
        // One two changed files both have.
        let both = [part(a, &[], &[3], &[]), part(b, &[3], &[], &[])];
        assert!(!independent(&owners(&[]), &both));
        // A thread another file names as its fork parent, or a changed one does.
        assert!(!independent(
            &owners(&[(7, b)]),
            &[part(a, &[], &[1], &[7])]
        ));
        let forked = [part(a, &[], &[1], &[]), part(b, &[], &[8], &[1])];
        assert!(!independent(&owners(&[]), &forked));
        // Two changed files with identifiers of their own.
        let apart = [part(a, &[1], &[2], &[5]), part(b, &[3], &[4], &[6])];
        assert!(independent(&owners(&[]), &apart));
    }
}

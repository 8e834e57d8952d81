//! One table of sums as the aggregate state's base stores it (a section):
//! the strings its rows name, then fixed-size rows in key order. Owns the
//! row format for the state (`state.rs`) and for `recent-v1.json`'s
//! numbers, and reads a section without decoding it ([`LazyTable`]).
//!
//! Invariants: rows are written in key order and read back in it; a
//! lazily read table answers every lookup as the decoded table would.

use std::collections::BTreeMap;

use crate::base::bytes::Reader;
use crate::usage::aggregate::{SlotAcc, SlotKey, Text};
use crate::usage::event::{Agent, Tokens};

/// Bytes of one slot row of a base: slot, agent, model, directory and
/// session string numbers, then the twelve numbers of its sums.
pub(super) const ROW: usize = 17 * 8;

pub(super) fn put_u64(o: &mut Vec<u8>, v: u64) {
    o.extend(v.to_le_bytes());
}

pub(super) fn put_str(o: &mut Vec<u8>, s: &str) {
    put_u64(o, s.len() as u64);
    o.extend(s.as_bytes());
}

/// A slot's sums as the state writes them: requests, the six token
/// counts, picodollars, unpriced tokens and requests, then the first and
/// last request's time (what `recent-v1.json` writes too).
pub(crate) fn acc_numbers(a: &SlotAcc) -> [u64; 12] {
    let t = &a.tokens;
    [
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
    ]
}

/// The sums [`acc_numbers`] wrote.
pub(crate) fn acc_from(n: [u64; 12]) -> SlotAcc {
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
    }
}

pub(super) fn agent_code(agent: Agent) -> u64 {
    u64::from(agent == Agent::Codex)
}

pub(super) fn agent_from(code: u64) -> Option<Agent> {
    match code {
        0 => Some(Agent::Claude),
        1 => Some(Agent::Codex),
        _ => None,
    }
}

/// [`read_str`] straight into a [`Text`] (one allocation, not two).
pub(super) fn read_text(r: &mut Reader) -> Option<Text> {
    let n = r.count64(1)?;
    std::str::from_utf8(r.take(n)?).ok().map(Text::from)
}

pub(super) fn read_numbers(r: &mut Reader) -> Option<[u64; 12]> {
    let mut n = [0u64; 12];
    for x in &mut n {
        *x = r.u64()?;
    }
    Some(n)
}

/// One table's section: the strings its rows name, then the rows (slot,
/// agent, model, directory and session as string numbers, then the
/// twelve numbers of the sums), in key order. The slots name a few
/// hundred strings; the sessions thousands more, which a view of the
/// slots never decodes.
pub(super) fn encode_rows<'a>(table: &'a BTreeMap<SlotKey, SlotAcc>) -> Vec<u8> {
    let mut index: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    let mut strings: Vec<&str> = Vec::new();
    let mut intern = |s: &'a Text| -> u64 {
        let s: &'a str = s;
        *index.entry(s).or_insert_with(|| {
            strings.push(s);
            strings.len() as u64 - 1
        })
    };
    let rows: Vec<[u64; 5]> = table
        .keys()
        .map(|(slot, agent, model, cwd, session)| {
            let (model, cwd) = (intern(model), intern(cwd));
            [
                *slot as u64,
                agent_code(*agent),
                model,
                cwd,
                intern(session),
            ]
        })
        .collect();
    let mut o = Vec::with_capacity(16 + strings.len() * 24 + table.len() * ROW + 8);
    put_u64(&mut o, strings.len() as u64);
    for s in &strings {
        put_str(&mut o, s);
    }
    put_u64(&mut o, table.len() as u64);
    for (key, acc) in rows.iter().zip(table.values()) {
        for n in key.iter().chain(&acc_numbers(acc)) {
            put_u64(&mut o, *n);
        }
    }
    o
}

/// One table's rows of a base ([`encode_rows`]): those at or after slot
/// `from`.
pub(super) fn decode_rows(r: &mut Reader, from: i64) -> Option<BTreeMap<SlotKey, SlotAcc>> {
    let ns = r.count64(8)?;
    let strings: Vec<Text> = (0..ns).map(|_| read_text(r)).collect::<Option<_>>()?;
    let nslots = r.count64(ROW)?;
    let rows = r.take(nslots.checked_mul(ROW)?)?;
    let slot_of = |i: usize| Reader::new(rows.get(i * ROW..)?).i64();
    let (mut first, mut end) = (0, nslots);
    while first < end {
        let mid = first + (end - first) / 2;
        if slot_of(mid)? < from {
            first = mid + 1;
        } else {
            end = mid;
        }
    }
    let mut row = Reader::new(rows.get(first * ROW..)?);
    let mut slots = Vec::with_capacity(nslots - first);
    for _ in first..nslots {
        let slot = row.i64()?;
        let agent = agent_from(row.u64()?)?;
        let mut text = || strings.get(usize::try_from(row.u64()?).ok()?).cloned();
        let (model, cwd, session) = (text()?, text()?, text()?);
        let key = (slot, agent, model, cwd, session);
        slots.push((key, acc_from(read_numbers(&mut row)?)));
    }
    // Written in key order (the seal vouches for it): the map sorts
    // and bulk-builds them in one pass each.
    Some(slots.into_iter().collect())
}

/// A table of sums as a base's section holds it, undecoded (checked
/// whole), and the changes over it, the journal's and this run's (`None`:
/// removed). The worker loads the per-session sums so: a refresh after an
/// append looks up and changes a few keys, so the thousands of sessions of
/// a busy Host are decoded only to write a new base. A view reads its
/// table so too, then decodes its rows in order into a list
/// ([`LazyTable::rows_from`]), with no map built in between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LazyTable {
    /// The section's bytes without its seal.
    body: Vec<u8>,
    /// The section's strings, one after the other (checked UTF-8 once),
    /// and where each lies in it.
    text: String,
    strings: Vec<std::ops::Range<usize>>,
    /// Where the fixed-size rows start, and how many there are.
    rows_at: usize,
    rows: usize,
    changes: BTreeMap<SlotKey, Option<SlotAcc>>,
}

/// A row's key with borrowed names, ordered as [`SlotKey`] is.
type RowKey<'a> = (i64, Agent, &'a str, &'a str, &'a str);

impl LazyTable {
    /// A section's body ([`encode_rows`]); `None` unless its strings are
    /// UTF-8 and its rows fill it. The rows are in key order as written
    /// (the section's seal vouches for them), so a lookup by bisection
    /// finds what a decode would.
    pub(super) fn new(body: Vec<u8>) -> Option<LazyTable> {
        let mut r = Reader::new(&body);
        let ns = r.count64(8)?;
        let mut text = String::new();
        let mut strings = Vec::with_capacity(ns);
        for _ in 0..ns {
            let n = r.count64(1)?;
            let start = text.len();
            text.push_str(std::str::from_utf8(r.take(n)?).ok()?);
            strings.push(start..text.len());
        }
        let rows = r.count64(ROW)?;
        let rows_at = body.len() - r.remaining();
        r.take(rows.checked_mul(ROW)?)?;
        if !r.at_end() {
            return None;
        }
        Some(LazyTable {
            body,
            text,
            strings,
            rows_at,
            rows,
            changes: BTreeMap::new(),
        })
    }

    fn string(&self, n: u64) -> Option<&str> {
        self.text
            .get(self.strings.get(usize::try_from(n).ok()?)?.clone())
    }

    fn row(&self, i: usize) -> Option<Reader<'_>> {
        Some(Reader::new(self.body.get(self.rows_at + i * ROW..)?))
    }

    fn row_key(&self, i: usize) -> Option<RowKey<'_>> {
        let mut r = self.row(i)?;
        let slot = r.i64()?;
        let agent = agent_from(r.u64()?)?;
        Some((
            slot,
            agent,
            self.string(r.u64()?)?,
            self.string(r.u64()?)?,
            self.string(r.u64()?)?,
        ))
    }

    fn row_acc(&self, i: usize) -> Option<SlotAcc> {
        let mut r = self.row(i)?;
        r.take(5 * 8)?;
        Some(acc_from(read_numbers(&mut r)?))
    }

    /// The first row at or after `key` (bisection).
    fn position(&self, key: RowKey) -> usize {
        let (mut first, mut end) = (0, self.rows);
        while first < end {
            let mid = first + (end - first) / 2;
            if self.row_key(mid).is_some_and(|k| k < key) {
                first = mid + 1;
            } else {
                end = mid;
            }
        }
        first
    }

    /// The sums of `key` now.
    pub fn get(&self, key: &SlotKey) -> Option<SlotAcc> {
        if let Some(change) = self.changes.get(key) {
            return *change;
        }
        let wanted = (key.0, key.1, &*key.2, &*key.3, &*key.4);
        let at = self.position(wanted);
        match self.row_key(at) {
            Some(k) if k == wanted => self.row_acc(at),
            _ => None,
        }
    }

    /// Sets (`Some`) or removes (`None`) the sums of `key`.
    pub fn set(&mut self, key: SlotKey, acc: Option<SlotAcc>) {
        self.changes.insert(key, acc);
    }

    /// Every key before slot `since` that is there now.
    pub fn keys_before(&self, since: i64) -> Vec<SlotKey> {
        let end = self.position((since, Agent::Claude, "", "", ""));
        let mut keys: std::collections::BTreeSet<SlotKey> = (0..end)
            .filter_map(|i| self.row_key(i))
            .map(|(slot, agent, model, cwd, session)| {
                (slot, agent, model.into(), cwd.into(), session.into())
            })
            .filter(|k| !matches!(self.changes.get(k), Some(None)))
            .collect();
        let changed = self
            .changes
            .range(..crate::usage::aggregate::slots_from(since));
        keys.extend(changed.filter(|(_, v)| v.is_some()).map(|(k, _)| k.clone()));
        keys.into_iter().collect()
    }

    /// The rows at or after slot `from`, in key order, changes applied.
    pub fn rows_from(&self, from: i64) -> Vec<(SlotKey, SlotAcc)> {
        let names: Vec<Text> = (0..self.strings.len())
            .map(|i| Text::from(self.string(i as u64).unwrap_or_default()))
            .collect();
        let text = |r: &mut Reader| names.get(usize::try_from(r.u64()?).ok()?).cloned();
        let first = self.position((from, Agent::Claude, "", "", ""));
        let mut changes = self
            .changes
            .range(crate::usage::aggregate::slots_from(from)..)
            .peekable();
        let mut out = Vec::with_capacity(self.rows - first + self.changes.len());
        for i in first..self.rows {
            let Some(mut r) = self.row(i) else { break };
            let (Some(slot), Some(agent)) = (r.i64(), r.u64().and_then(agent_from)) else {
                break;
            };
            let (Some(model), Some(cwd), Some(session)) =
                (text(&mut r), text(&mut r), text(&mut r))
            else {
                break;
            };
            let Some(numbers) = read_numbers(&mut r) else {
                break;
            };
            let key = (slot, agent, model, cwd, session);
            // The changes before this row are new keys; one at it
            // replaces (or removes) it.
            while let Some((k, change)) = changes.next_if(|(k, _)| **k < key) {
                if let Some(acc) = change {
                    out.push((k.clone(), *acc));
                }
            }
            match changes.next_if(|(k, _)| **k == key) {
                Some((_, Some(acc))) => out.push((key, *acc)),
                Some((_, None)) => {}
                None => out.push((key, acc_from(numbers))),
            }
        }
        out.extend(changes.filter_map(|(k, change)| Some((k.clone(), (*change)?))));
        out
    }

    /// The whole table, decoded.
    pub fn decode(&self) -> BTreeMap<SlotKey, SlotAcc> {
        self.rows_from(i64::MIN).into_iter().collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A slot's sums with `requests` requests (the state's tests too).
    pub(crate) fn acc(requests: u64) -> SlotAcc {
        SlotAcc {
            requests,
            cost_pico: 7,
            first_ts: 901,
            last_ts: 1700,
            ..SlotAcc::default()
        }
    }

    #[test]
    fn lazy_sessions_answer_as_the_decoded_table_through_random_changes() {
        // Oracle: a BTreeMap given the same changes. Keys over a few slots,
        // models, directories and sessions, so lookups hit and miss.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let random_key = |next: &mut dyn FnMut(u64) -> u64| -> SlotKey {
            let agent = [Agent::Claude, Agent::Codex][next(2) as usize];
            let model = ["", "gpt-5", "claude-opus-4-6"][next(3) as usize];
            let session = format!("s-{}", next(5));
            (
                900 * next(8) as i64,
                agent,
                model.into(),
                format!("/p{}", next(3)).into(),
                session.into(),
            )
        };
        for round in 0..20 {
            let mut oracle: BTreeMap<SlotKey, SlotAcc> = BTreeMap::new();
            for _ in 0..next(60) {
                oracle.insert(random_key(&mut next), acc(1 + next(9)));
            }
            let mut lazy = LazyTable::new(encode_rows(&oracle)).unwrap();
            for step in 0..80 {
                let key = random_key(&mut next);
                match next(4) {
                    0 => {
                        let a = acc(1 + next(9));
                        lazy.set(key.clone(), Some(a));
                        oracle.insert(key, a);
                    }
                    1 => {
                        lazy.set(key.clone(), None);
                        oracle.remove(&key);
                    }
                    2 => {
                        let since = 900 * next(9) as i64;
                        let want: Vec<SlotKey> = oracle
                            .range(..crate::usage::aggregate::slots_from(since))
                            .map(|(k, _)| k.clone())
                            .collect();
                        assert_eq!(lazy.keys_before(since), want, "round {round} step {step}");
                    }
                    _ => assert_eq!(lazy.get(&key), oracle.get(&key).copied()),
                }
            }
            assert_eq!(lazy.decode(), oracle, "round {round}");
        }
    }
}

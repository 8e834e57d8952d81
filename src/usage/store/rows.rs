//! One table of sums as the aggregate state's base stores it (a section):
//! a sealed head (the strings its rows name, and a fence and a hash per
//! block of rows), then fixed-size rows in key order. Owns the row format
//! for the state (`state.rs`) and for `recent-v1.json`'s numbers, and
//! reads a section without decoding it ([`LazyTable`]), block by block.
//!
//! Invariants: rows are written in key order and read back in it; no row
//! is used before its block matched its hash; a lazily read table answers
//! every lookup as the decoded table would, or says it is damaged.

use std::cell::{Cell, OnceCell};
use std::collections::BTreeMap;
use std::fs::File;

use crate::base::bytes::Reader;
use crate::usage::aggregate::{SlotAcc, SlotKey, Text};
use crate::usage::event::{Agent, Tokens, hash_words, seal, unseal};

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
    u64::from(agent.code())
}

pub(super) fn agent_from(code: u64) -> Option<Agent> {
    Agent::from_code(code)
}

pub(super) fn read_numbers(r: &mut Reader) -> Option<[u64; 12]> {
    let mut n = [0u64; 12];
    for x in &mut n {
        *x = r.u64()?;
    }
    Some(n)
}

/// Rows a block holds. A table read from a file is checked block by
/// block, so a lookup reads and checks the one block its key falls in
/// (the last block may be shorter).
pub(super) const BLOCK: usize = 256;

/// Key words of a row: slot, agent, model, directory and session.
const KEY_WORDS: usize = 5;

/// One table's section, checked in parts so that a reader reads only the
/// rows it needs: the length of its head, then the head — the strings
/// the rows name, the row count and, per block of [`BLOCK`] rows, the key
/// words of its first row (the fence) and the [`hash_words`] of its rows,
/// sealed — then the rows (slot, agent, model, directory and session as
/// string numbers, then the twelve numbers of the sums), in key order.
/// The slots name a few hundred strings; the sessions thousands more,
/// which a view of the slots never reads.
///
/// [`hash_words`]: crate::usage::event::hash_words
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
    let mut rows = Vec::with_capacity(table.len() * ROW);
    for ((slot, agent, model, cwd, session), acc) in table {
        let (model, cwd) = (intern(model), intern(cwd));
        let key = [
            *slot as u64,
            agent_code(*agent),
            model,
            cwd,
            intern(session),
        ];
        for n in key.iter().chain(&acc_numbers(acc)) {
            put_u64(&mut rows, *n);
        }
    }
    let blocks = table.len().div_ceil(BLOCK);
    let mut head = Vec::with_capacity(24 + strings.len() * 24 + blocks * (KEY_WORDS + 1) * 8);
    put_u64(&mut head, strings.len() as u64);
    for s in &strings {
        put_str(&mut head, s);
    }
    put_u64(&mut head, table.len() as u64);
    for block in rows.chunks(BLOCK * ROW) {
        head.extend(&block[..KEY_WORDS * 8]);
        put_u64(&mut head, hash_words(block));
    }
    seal(&mut head);
    let mut o = Vec::with_capacity(8 + head.len() + rows.len());
    put_u64(&mut o, head.len() as u64);
    o.extend(head);
    o.extend(rows);
    o
}

/// A section's head ([`encode_rows`]), checked.
#[derive(Debug)]
struct Head {
    /// The section's strings, one after the other (checked UTF-8 once),
    /// and where each lies in it.
    text: String,
    strings: Vec<std::ops::Range<usize>>,
    rows: usize,
    /// Per block, its first row's key words and the hash of its rows.
    fences: Vec<([u64; KEY_WORDS], u64)>,
}

/// Where a section's rows start, given its first eight bytes (the head's
/// length); `None` when the section cannot hold that head.
fn rows_start(first: &[u8], section_len: u64) -> Option<u64> {
    let head = Reader::new(first).u64()?;
    let start = head.checked_add(8)?;
    (start <= section_len).then_some(start)
}

impl Head {
    /// The head of a section whose rows are `rows_len` bytes; `None`
    /// unless its seal matches, its strings are UTF-8 and its row count
    /// fills `rows_len` exactly.
    fn read(sealed: &[u8], rows_len: u64) -> Option<Head> {
        let body = unseal(sealed)?;
        let mut r = Reader::new(body);
        let ns = r.count64(8)?;
        let mut text = String::with_capacity(body.len());
        let mut strings = Vec::with_capacity(ns);
        for _ in 0..ns {
            let n = r.count64(1)?;
            let start = text.len();
            text.push_str(std::str::from_utf8(r.take(n)?).ok()?);
            strings.push(start..text.len());
        }
        let rows = usize::try_from(r.u64()?).ok()?;
        if u64::try_from(rows.checked_mul(ROW)?).ok()? != rows_len {
            return None;
        }
        let blocks = rows.div_ceil(BLOCK);
        let mut fences = Vec::with_capacity(blocks.min(r.remaining() / ((KEY_WORDS + 1) * 8)));
        for _ in 0..blocks {
            let mut key = [0u64; KEY_WORDS];
            for word in &mut key {
                *word = r.u64()?;
            }
            fences.push((key, r.u64()?));
        }
        r.at_end().then_some(Head {
            text,
            strings,
            rows,
            fences,
        })
    }
}

/// A table of sums as a base's section holds it, undecoded, and the
/// changes over it, the journal's and this run's (`None`: removed). The
/// worker loads the per-session sums so: a refresh after an append looks
/// up and changes a few keys, so of the thousands of sessions of a busy
/// Host it reads the head and the blocks those keys fall in, and the
/// rest only to write a new base. A view reads the blocks from the first
/// slot it shows ([`LazyTable::read_from`]), then decodes its rows in
/// order into a list ([`LazyTable::rows_from`]), with no map built in
/// between.
///
/// Every block is checked against its hash before a row of it is used. A
/// block that cannot be read or does not match marks the table damaged
/// ([`LazyTable::damaged`]): its answers are then not to be trusted, and
/// the aggregate is rebuilt.
#[derive(Debug)]
pub struct LazyTable {
    head: Head,
    /// The file and the offset of the first row, for the blocks not yet
    /// read (`None`: every block is in `tail`).
    file: Option<(File, u64)>,
    /// Blocks `tail_first..` in one buffer, checked.
    tail_first: usize,
    tail: Vec<u8>,
    /// Blocks before `tail_first`, each read and checked when first
    /// wanted (`None`: unreadable or damaged).
    blocks: Vec<OnceCell<Option<Vec<u8>>>>,
    damaged: Cell<bool>,
    changes: BTreeMap<SlotKey, Option<SlotAcc>>,
}

/// A row's key with borrowed names, ordered as [`SlotKey`] is.
type RowKey<'a> = (i64, Agent, &'a str, &'a str, &'a str);

/// The least key of slot `from`.
fn first_of(from: i64) -> RowKey<'static> {
    (from, Agent::Claude, "", "", "")
}

impl LazyTable {
    /// The table a base's section (`range` of `file`) holds, none of its
    /// rows read yet; `None` unless its head is whole and checks.
    pub(super) fn open(file: &File, range: std::ops::Range<u64>) -> Option<LazyTable> {
        use std::os::unix::fs::FileExt;
        let section_len = range.end.checked_sub(range.start)?;
        let mut first = [0u8; 8];
        file.read_exact_at(&mut first, range.start).ok()?;
        let start = rows_start(&first, section_len)?;
        let mut sealed = vec![0; usize::try_from(start - 8).ok()?];
        file.read_exact_at(&mut sealed, range.start + 8).ok()?;
        let head = Head::read(&sealed, section_len - start)?;
        let blocks = head.fences.len();
        Some(LazyTable {
            file: Some((file.try_clone().ok()?, range.start + start)),
            tail_first: blocks,
            tail: Vec::new(),
            blocks: (0..blocks).map(|_| OnceCell::new()).collect(),
            damaged: Cell::new(false),
            changes: BTreeMap::new(),
            head,
        })
    }

    /// The table a section's bytes hold, every block checked; `None` when
    /// one does not.
    pub(super) fn from_bytes(section: &[u8]) -> Option<LazyTable> {
        let start = usize::try_from(rows_start(section, section.len() as u64)?).ok()?;
        let rows = section.get(start..)?;
        let head = Head::read(section.get(8..start)?, rows.len() as u64)?;
        let table = LazyTable {
            file: None,
            tail_first: 0,
            tail: rows.to_vec(),
            blocks: Vec::new(),
            damaged: Cell::new(false),
            changes: BTreeMap::new(),
            head,
        };
        table.tail_checks(0).then_some(table)
    }

    /// Whether every block of the tail matches its hash.
    fn tail_checks(&self, first: usize) -> bool {
        let fences = self.head.fences.get(first..).unwrap_or_default();
        self.tail
            .chunks(BLOCK * ROW)
            .zip(fences)
            .all(|(block, (_, hash))| hash_words(block) == *hash)
    }

    /// Reads the blocks that hold slot `from` and every later one in one
    /// read, checked: what a view of the slots from `from` decodes.
    /// `None` when they cannot be read or one is damaged.
    pub fn read_from(&mut self, from: i64) -> Option<()> {
        use std::os::unix::fs::FileExt;
        let first = self.block_of(first_of(from));
        if first >= self.tail_first {
            return Some(());
        }
        let (file, at) = self.file.as_ref()?;
        let start = first * BLOCK * ROW;
        let mut tail = vec![0; self.head.rows * ROW - start];
        file.read_exact_at(&mut tail, at + start as u64).ok()?;
        self.tail = tail;
        self.tail_first = first;
        self.blocks.truncate(first);
        self.tail_checks(first).then_some(())
    }

    /// Whether a block read on demand was unreadable or damaged: the
    /// answers given since may be wrong.
    pub fn damaged(&self) -> bool {
        self.damaged.get()
    }

    fn string(&self, n: u64) -> Option<&str> {
        let head = &self.head;
        head.text
            .get(head.strings.get(usize::try_from(n).ok()?)?.clone())
    }

    fn key_of(&self, words: &[u64; KEY_WORDS]) -> Option<RowKey<'_>> {
        Some((
            words[0] as i64,
            agent_from(words[1])?,
            self.string(words[2])?,
            self.string(words[3])?,
            self.string(words[4])?,
        ))
    }

    /// Block `b`'s rows, checked (read now if not yet).
    fn block(&self, b: usize) -> Option<&[u8]> {
        use std::os::unix::fs::FileExt;
        if b >= self.tail_first {
            let start = (b - self.tail_first) * BLOCK * ROW;
            return self
                .tail
                .get(start..(start + BLOCK * ROW).min(self.tail.len()));
        }
        let read = || {
            let (file, at) = self.file.as_ref()?;
            let rows = BLOCK.min(self.head.rows - b * BLOCK);
            let mut bytes = vec![0; rows * ROW];
            file.read_exact_at(&mut bytes, at + (b * BLOCK * ROW) as u64)
                .ok()?;
            (hash_words(&bytes) == self.head.fences.get(b)?.1).then_some(bytes)
        };
        let block = self.blocks.get(b)?.get_or_init(read).as_deref();
        if block.is_none() {
            self.damaged.set(true);
        }
        block
    }

    fn row(&self, i: usize) -> Option<Reader<'_>> {
        let block = self.block(i / BLOCK)?;
        Some(Reader::new(block.get(i % BLOCK * ROW..)?))
    }

    fn row_key(&self, i: usize) -> Option<RowKey<'_>> {
        let mut r = self.row(i)?;
        let mut words = [0u64; KEY_WORDS];
        for word in &mut words {
            *word = r.u64()?;
        }
        self.key_of(&words)
    }

    fn row_acc(&self, i: usize) -> Option<SlotAcc> {
        let mut r = self.row(i)?;
        r.take(KEY_WORDS * 8)?;
        Some(acc_from(read_numbers(&mut r)?))
    }

    /// The block that holds the first row at or after `key` if any row
    /// before it is in a block at all: the last whose fence is before
    /// `key` (bisection over the fences; no rows read).
    fn block_of(&self, key: RowKey) -> usize {
        let before = self
            .head
            .fences
            .partition_point(|(words, _)| self.key_of(words).is_some_and(|k| k < key));
        before.saturating_sub(1)
    }

    /// The first row at or after `key`: its block by the fences, then
    /// bisection in that block.
    fn position(&self, key: RowKey) -> usize {
        let block = self.block_of(key);
        let (mut first, mut end) = (block * BLOCK, ((block + 1) * BLOCK).min(self.head.rows));
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
        let end = self.position(first_of(since));
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

    /// The rows at or after slot `from`, in key order, changes applied;
    /// `None` when a block they need is unreadable or damaged.
    pub fn rows_from(&self, from: i64) -> Option<Vec<(SlotKey, SlotAcc)>> {
        let first = self.position(first_of(from));
        let mut out = Vec::with_capacity(self.head.rows - first + self.changes.len());
        self.visit_from(from, |key, acc| out.push((key.clone(), *acc)))?;
        Some(out)
    }

    /// Calls `visit` with each row at or after slot `from`, in key order,
    /// changes applied; `None` when a block they need is unreadable or
    /// damaged (`visit` may have seen some rows by then).
    pub fn visit_from(&self, from: i64, mut visit: impl FnMut(&SlotKey, &SlotAcc)) -> Option<()> {
        let names: Vec<Text> = (0..self.head.strings.len())
            .map(|i| self.string(i as u64).map(Text::from))
            .collect::<Option<_>>()?;
        let text = |r: &mut Reader| names.get(usize::try_from(r.u64()?).ok()?).cloned();
        let first = self.position(first_of(from));
        let mut changes = self
            .changes
            .range(crate::usage::aggregate::slots_from(from)..)
            .peekable();
        for i in first..self.head.rows {
            let mut r = self.row(i)?;
            let (slot, agent) = (r.i64()?, agent_from(r.u64()?)?);
            let key = (slot, agent, text(&mut r)?, text(&mut r)?, text(&mut r)?);
            let numbers = read_numbers(&mut r)?;
            // The changes before this row are new keys; one at it
            // replaces (or removes) it.
            while let Some((k, change)) = changes.next_if(|(k, _)| **k < key) {
                if let Some(acc) = change {
                    visit(k, acc);
                }
            }
            match changes.next_if(|(k, _)| **k == key) {
                Some((_, Some(acc))) => visit(&key, acc),
                Some((_, None)) => {}
                None => visit(&key, &acc_from(numbers)),
            }
        }
        for (key, change) in changes {
            if let Some(acc) = change {
                visit(key, acc);
            }
        }
        (!self.damaged()).then_some(())
    }

    /// The whole table, decoded; `None` when a block is unreadable or
    /// damaged.
    pub fn decode(mut self) -> Option<BTreeMap<SlotKey, SlotAcc>> {
        self.read_from(i64::MIN)?;
        Some(self.rows_from(i64::MIN)?.into_iter().collect())
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

    /// A xorshift generator: `next(n)` is below `n`.
    fn generator(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    /// A key over a few slots, models, directories and sessions (720 in
    /// all), so lookups hit and miss and a table can span blocks.
    fn random_key(next: &mut dyn FnMut(u64) -> u64) -> SlotKey {
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
    }

    /// `bytes` written to a file in `dir` (after eight bytes of something
    /// else, so the section does not start the file), opened as a table
    /// read block by block.
    fn opened(dir: &crate::base::scratch::ScratchDir, bytes: &[u8]) -> Option<LazyTable> {
        let path = dir.join("table");
        let mut file = b"elsewhre".to_vec();
        file.extend(bytes);
        std::fs::write(&path, &file).unwrap();
        LazyTable::open(&File::open(&path).unwrap(), 8..file.len() as u64)
    }

    #[test]
    fn lazy_tables_answer_as_the_decoded_table_through_random_changes() {
        // Oracle: a BTreeMap given the same changes. Each table is read
        // three ways: from its bytes, from a file block by block as the
        // worker does, and from a file from a slot on as a view does.
        let dir = crate::base::scratch::ScratchDir::new("lazy-table");
        let mut next = generator(0x9e37_79b9_7f4a_7c15);
        for round in 0..24 {
            let mut oracle: BTreeMap<SlotKey, SlotAcc> = BTreeMap::new();
            let size = [60, 700][round % 2];
            for _ in 0..next(size) {
                oracle.insert(random_key(&mut next), acc(1 + next(9)));
            }
            let bytes = encode_rows(&oracle);
            let mut lazy = match round % 3 {
                0 => LazyTable::from_bytes(&bytes).unwrap(),
                1 => opened(&dir, &bytes).unwrap(),
                _ => {
                    let mut table = opened(&dir, &bytes).unwrap();
                    table.read_from(900 * next(9) as i64).unwrap();
                    table
                }
            };
            for step in 0..80 {
                let key = random_key(&mut next);
                match next(5) {
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
                    3 => {
                        let from = 900 * next(9) as i64;
                        let want: Vec<(SlotKey, SlotAcc)> = oracle
                            .range(crate::usage::aggregate::slots_from(from)..)
                            .map(|(k, v)| (k.clone(), *v))
                            .collect();
                        assert_eq!(
                            lazy.rows_from(from),
                            Some(want),
                            "round {round} step {step}"
                        );
                    }
                    _ => assert_eq!(lazy.get(&key), oracle.get(&key).copied()),
                }
            }
            assert!(!lazy.damaged());
            assert_eq!(lazy.decode(), Some(oracle), "round {round}");
        }
    }

    #[test]
    fn a_damaged_block_is_never_answered_from() {
        // Three blocks; one byte of the second block's sums flipped.
        let dir = crate::base::scratch::ScratchDir::new("lazy-damage");
        let keys: Vec<SlotKey> = (0..BLOCK as i64 * 5 / 2)
            .map(|i| (900 * i, Agent::Claude, "m".into(), "/p".into(), "s".into()))
            .collect();
        let table: BTreeMap<SlotKey, SlotAcc> = keys.iter().map(|k| (k.clone(), acc(2))).collect();
        let mut bytes = encode_rows(&table);
        let rows_at = bytes.len() - table.len() * ROW;
        bytes[rows_at + (BLOCK + 3) * ROW + KEY_WORDS * 8] ^= 1;
        assert!(LazyTable::from_bytes(&bytes).is_none());
        let lazy = opened(&dir, &bytes).unwrap();
        // The first block checks; the second does not.
        assert_eq!(lazy.get(&keys[5]), Some(acc(2)));
        assert!(!lazy.damaged());
        assert_eq!(lazy.get(&keys[BLOCK + 3]), None);
        assert!(lazy.damaged());
        assert_eq!(lazy.rows_from(0), None);
        assert_eq!(lazy.decode(), None);
        // A view from the third block on never reads the second.
        let mut view = opened(&dir, &bytes).unwrap();
        let third = 900 * (2 * BLOCK as i64 + 1);
        assert_eq!(view.read_from(third), Some(()));
        assert_eq!(view.rows_from(third).map(|r| r.len()), Some(BLOCK / 2 - 1));
        // A head that does not match its seal opens nothing.
        let mut head = encode_rows(&table);
        head[12] ^= 1;
        assert!(opened(&dir, &head).is_none());
    }
}

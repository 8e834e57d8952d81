//! Keeps the incremental aggregate ([`State`]) on disk so that a refresh
//! that touched a few slots writes those slots, not the tens of thousands a
//! busy Host has: a base plus a journal of changed slots and owner entries,
//! beside the owners table (`usage::store::owners`); the layout is
//! described in `usage::store`.
//!
//! Invariants: a journal record is applied only when it decodes whole; a
//! journal is appended to only while it fully extends the base it names;
//! the owners table a base names is written before the base. Queries read
//! the slots from here for a zone the worker did not render ahead
//! ([`StateStore::load_slots`]), without the owners table.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::base::bytes::Reader;
use crate::usage::aggregate::incremental::{Changed, State};
use crate::usage::aggregate::{Detailed, SlotAcc, SlotKey, Text};
use crate::usage::event::{seal, unseal};
use crate::usage::paths;
use crate::usage::store::MAX_FILE_BYTES;
use crate::usage::store::journal::{self, Origin};
use crate::usage::store::owners::{Owners, OwnersRef};
use crate::usage::store::rows::{
    LazyTable, acc_from, acc_numbers, agent_code, agent_from, encode_rows, put_str, put_u64,
    read_numbers,
};

const MAGIC: &[u8; 4] = b"HUAG";
const JOURNAL_MAGIC: &[u8; 4] = b"HUAJ";
/// Bump when the layout or the aggregation rules change (5: the slots
/// summed over sessions, the per-session sums beside them, and owner
/// hashes word-at-a-time, `owners::owner_of`; 6: each table checked block
/// by block, `rows::encode_rows`).
pub(crate) const STATE_VERSION: u32 = 6;
/// The journal may always grow to this many bytes.
pub(crate) const MIN_JOURNAL: u64 = 256 << 10;

/// The files of the aggregate state.
#[derive(Debug, Clone)]
pub struct StateStore {
    pub base: PathBuf,
    pub journal: PathBuf,
    /// The journal may always grow to this many bytes before a new base.
    pub min_journal: u64,
}

fn journal_header(meta: &fs::Metadata) -> Vec<u8> {
    journal::header(JOURNAL_MAGIC, meta, &[u64::from(STATE_VERSION)])
}

/// Which sums a read decodes: a view reads one table, the worker both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tables {
    Both,
    /// [`Detailed::slots`] only.
    Slots,
    /// [`Detailed::sessions`] only (the `session` view).
    Sessions,
}

impl Tables {
    fn slots(self) -> bool {
        self != Tables::Sessions
    }

    fn sessions(self) -> bool {
        self != Tables::Slots
    }
}

/// What a base or journal holds besides the owners table.
struct Parts {
    fingerprint: u64,
    since: i64,
    pricing: String,
    detailed: Detailed,
    /// The tables left undecoded (the slots, the sessions), as
    /// [`Undecoded`] asked.
    lazy: [Option<LazyTable>; 2],
    owners: OwnersRef,
}

/// Which tables a read leaves undecoded (the slots, the sessions): the
/// worker both, a view the table it shows.
type Undecoded = [bool; 2];

impl StateStore {
    /// The state in `dir` (`aggregate-v1.bin`, `aggregate-v1.journal`).
    pub fn in_dir(dir: &Path) -> StateStore {
        StateStore {
            base: dir.join(paths::AGGREGATE),
            journal: dir.join(paths::AGGREGATE_JOURNAL),
            min_journal: MIN_JOURNAL,
        }
    }

    fn dir(&self) -> &Path {
        self.base.parent().unwrap_or(Path::new("."))
    }

    /// The base and journal as loaded, slots before `from` and the tables
    /// not wanted left out.
    fn read(&self, from: i64, tables: Tables) -> Option<(Parts, Origin)> {
        self.read_lazily(from, tables, [false; 2])
    }

    /// [`StateStore::read`], the tables `lazy` names left undecoded.
    fn read_lazily(&self, from: i64, tables: Tables, lazy: Undecoded) -> Option<(Parts, Origin)> {
        use std::os::unix::fs::FileExt;
        let (file, meta) = crate::base::state_file::open(&self.base).ok()?;
        let mut header = [0u8; HEADER];
        file.read_exact_at(&mut header, 0).ok()?;
        let ranges = layout(&header, meta.len())?;
        let wanted = tables.sections();
        let mut read: [Vec<u8>; SECTIONS] = Default::default();
        let mut opened: [Option<LazyTable>; 2] = [None, None];
        for (i, range) in ranges.into_iter().enumerate().filter(|(i, _)| wanted[*i]) {
            match table_of(i) {
                // A table checks itself block by block: only its head is
                // read now.
                Some(t) => opened[t] = Some(LazyTable::open(&file, range)?),
                None => {
                    read[i] = vec![0; usize::try_from(range.end - range.start).ok()?];
                    file.read_exact_at(&mut read[i], range.start).ok()?;
                }
            }
        }
        let sections =
            std::array::from_fn(|i| (wanted[i] && table_of(i).is_none()).then_some(&read[i][..]));
        let mut parts = decode_base(sections, opened, from, lazy)?;
        let mut origin = Origin {
            base_len: meta.len(),
            journal_len: 0,
            journal_valid: false,
            header: journal_header(&meta),
        };
        let Ok((journal, _)) = crate::base::state_file::read(&self.journal, MAX_FILE_BYTES) else {
            return Some((parts, origin));
        };
        origin.journal_len = journal.len() as u64;
        let (records, whole) = journal::records(&journal, &origin.header);
        let applied = replay(&mut parts, &records, from, tables);
        origin.journal_valid = whole && applied == records.len();
        Some((parts, origin))
    }

    /// The state with its owners table; `None` when missing or damaged.
    pub fn load(&self) -> Option<State> {
        let (parts, origin) = self.read_lazily(i64::MIN, Tables::Both, [true; 2])?;
        let [lazy_slots, lazy_sessions] = parts.lazy;
        let owners = Owners::open(parts.owners, self.dir()).ok()?;
        Some(State {
            fingerprint: parts.fingerprint,
            since: parts.since,
            pricing: parts.pricing,
            detailed: parts.detailed,
            lazy_slots,
            lazy_sessions,
            owners,
            changed: Some(Changed::default()),
            origin: Some(origin),
        })
    }

    /// The slots and fingerprint only (what a query needs).
    pub fn load_slots(&self) -> Option<(u64, Detailed)> {
        self.load_slots_from(i64::MIN)
    }

    /// [`StateStore::load_slots`] of the slots at or after `from` (UTC
    /// seconds) only: a view of the last weeks decodes those, not the
    /// whole history. The counters are the whole state's.
    pub fn load_slots_from(&self, from: i64) -> Option<(u64, Detailed)> {
        self.load_from(from, Tables::Slots)
    }

    /// The rows of one table (`Tables::Slots` or `Tables::Sessions`) at
    /// or after slot `from`, in key order, with the fingerprint: what a
    /// view reads, decoded straight into a list.
    pub fn rows_from(&self, from: i64, table: Tables) -> Option<(u64, Vec<(SlotKey, SlotAcc)>)> {
        let sessions = table == Tables::Sessions;
        let (parts, _) = self.read_lazily(from, table, [!sessions, sessions])?;
        let [slots, sessions] = parts.lazy;
        let rows = match slots.or(sessions) {
            Some(mut t) => {
                t.read_from(from)?;
                t.rows_from(from)?
            }
            None => Vec::new(),
        };
        Some((parts.fingerprint, rows))
    }

    /// [`StateStore::load_slots_from`] of the tables `tables` names.
    pub fn load_from(&self, from: i64, tables: Tables) -> Option<(u64, Detailed)> {
        let (parts, _) = self.read(from, tables)?;
        Some((parts.fingerprint, parts.detailed))
    }

    /// Persists `state`: the changes since it was loaded appended to the
    /// journal when that is possible and small, else a new base.
    pub fn save(&self, state: &mut State) -> io::Result<()> {
        let new_generation = state.owners.save(self.dir())?;
        let payload = match (&state.origin, &state.changed) {
            (Some(origin), Some(changed))
                if !new_generation
                    && origin.extendable()
                    && fs::metadata(&self.base)
                        .is_ok_and(|m| journal_header(&m) == origin.header) =>
            {
                Some(encode_record(state, changed))
            }
            _ => None,
        };
        if let (Some(payload), Some(origin)) = (payload, &mut state.origin) {
            let limit = (origin.base_len / 4).max(self.min_journal);
            if origin.journal_len + 12 + payload.len() as u64 <= limit {
                let mut out = Vec::with_capacity(payload.len() + 12);
                journal::frame(&payload, &mut out);
                let header = (origin.journal_len == 0).then(|| origin.header.clone());
                journal::append(&self.journal, header.as_deref(), &out)?;
                if let Some(header) = header {
                    origin.journal_len += header.len() as u64;
                }
                origin.journal_len += out.len() as u64;
                origin.journal_valid = true;
                state.changed = Some(Changed::default());
                return Ok(());
            }
        }
        if !state.decode_tables() {
            return Err(io::Error::other("aggregate tables damaged"));
        }
        let bytes = encode_base(state).ok_or_else(|| io::Error::other("owners table not saved"))?;
        crate::base::atomic_file::write_unsynced(&self.base, &bytes, 0o600)?;
        match fs::remove_file(&self.journal) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        state.owners.remove_other_generations(self.dir());
        state.origin = Some(Origin {
            base_len: bytes.len() as u64,
            journal_len: 0,
            journal_valid: true,
            header: journal_header(&fs::metadata(&self.base)?),
        });
        state.changed = Some(Changed::default());
        Ok(())
    }
}

// ---- layout ---------------------------------------------------------------

/// A string as the state writes it: a `u64` length, then UTF-8.
fn read_str(r: &mut Reader) -> Option<String> {
    let n = r.count64(1)?;
    r.utf8(n)
}

fn read_owners(r: &mut Reader) -> Option<Vec<(u64, u64)>> {
    let n = r.count64(16)?;
    (0..n).map(|_| Some((r.u64()?, r.u64()?))).collect()
}

/// `(file, [three counters])` rows, in file order.
fn read_file_counters(r: &mut Reader) -> Option<Vec<(u64, [u64; 3])>> {
    let n = r.count64(32)?;
    let rows: Vec<(u64, [u64; 3])> = (0..n)
        .map(|_| Some((r.u64()?, [r.u64()?, r.u64()?, r.u64()?])))
        .collect::<Option<_>>()?;
    rows.windows(2).all(|w| w[0].0 < w[1].0).then_some(rows)
}

/// The base's sections, in file order: meta (fingerprint, history start,
/// price table, the three counters and the strings the rows name), the
/// counters per file, the slots, the sessions, and the reference to the
/// owners table. Each is sealed on its own, so a view reads and checks
/// only those it decodes: a few megabytes of per-session sums are not
/// read to show a day's totals.
const SECTIONS: usize = 5;

/// Magic, version, each section's length, and the header's seal.
const HEADER: usize = 4 + 4 + SECTIONS * 8 + 8;

/// Which of the two tables section `i` holds (0 the slots, 1 the
/// sessions); `None` for the other sections, each sealed whole. A table
/// checks itself block by block (`rows::encode_rows`).
fn table_of(i: usize) -> Option<usize> {
    match i {
        2 => Some(0),
        3 => Some(1),
        _ => None,
    }
}

impl Tables {
    /// The sections a read of these tables decodes.
    fn sections(self) -> [bool; SECTIONS] {
        let both = self == Tables::Both;
        [true, both, self.slots(), self.sessions(), both]
    }
}

fn encode_base(state: &State) -> Option<Vec<u8>> {
    let owners = state.owners.reference()?;
    let d = &state.detailed;
    let mut meta = Vec::with_capacity(256);
    put_u64(&mut meta, state.fingerprint);
    put_u64(&mut meta, state.since as u64);
    put_str(&mut meta, &state.pricing);
    for n in [d.duplicates_claude, d.duplicates_codex, d.forks_unresolved] {
        put_u64(&mut meta, n);
    }
    let mut files = Vec::with_capacity(8 + d.by_file.len() * 32);
    put_u64(&mut files, d.by_file.len() as u64);
    for (file, counts) in &d.by_file {
        put_u64(&mut files, *file);
        for n in counts {
            put_u64(&mut files, *n);
        }
    }
    let (slots, sessions) = (encode_rows(&d.slots), encode_rows(&d.sessions));
    let mut reference = Vec::with_capacity(24 + owners.delta.len() * 16);
    for n in [owners.generation, owners.count] {
        put_u64(&mut reference, n);
    }
    put_u64(&mut reference, owners.delta.len() as u64);
    for (id, owner) in &owners.delta {
        put_u64(&mut reference, *id);
        put_u64(&mut reference, *owner);
    }
    let mut sections = [meta, files, slots, sessions, reference];
    let total: usize = sections.iter().map(|s| s.len() + 8).sum();
    let mut o = Vec::with_capacity(HEADER + total);
    o.extend(MAGIC);
    o.extend(STATE_VERSION.to_le_bytes());
    for (i, section) in sections.iter_mut().enumerate() {
        if table_of(i).is_none() {
            seal(section);
        }
        put_u64(&mut o, section.len() as u64);
    }
    seal(&mut o);
    for section in &sections {
        o.extend(section);
    }
    Some(o)
}

/// Where each section of a base lies, from its header; `None` for
/// another version or a damaged header, or when the lengths do not add
/// up to `len`, the base's length.
fn layout(header: &[u8], len: u64) -> Option<[std::ops::Range<u64>; SECTIONS]> {
    let body = unseal(header.get(..HEADER)?)?;
    let mut r = Reader::new(body);
    if r.take(4)? != MAGIC || r.u32()? != STATE_VERSION {
        return None;
    }
    let mut at = HEADER as u64;
    let mut ranges: [std::ops::Range<u64>; SECTIONS] = Default::default();
    for range in &mut ranges {
        let n = r.u64()?;
        *range = at..at.checked_add(n)?;
        at = range.end;
    }
    (at == len).then_some(ranges)
}

/// The fingerprint and sums that a base's bytes and the journal record
/// payloads after it decode to, and how many records applied: what
/// [`StateStore::load`] reads, without the files. `None` for a damaged
/// base.
pub fn decode(base: &[u8], records: &[&[u8]]) -> Option<(u64, Detailed, usize)> {
    let mut parts = decode_bytes(base, i64::MIN, Tables::Both)?;
    let applied = replay(&mut parts, records, i64::MIN, Tables::Both);
    Some((parts.fingerprint, parts.detailed, applied))
}

/// Applies `records` in order up to the first damaged one (their slots
/// before `from` and the tables not wanted left out); how many applied.
fn replay(parts: &mut Parts, records: &[&[u8]], from: i64, tables: Tables) -> usize {
    records
        .iter()
        .take_while(|payload| apply_record(parts, payload, from, tables).is_some())
        .count()
}

/// A whole base in memory, decoded as [`decode_base`] does.
fn decode_bytes(bytes: &[u8], from: i64, tables: Tables) -> Option<Parts> {
    let ranges = layout(bytes, bytes.len() as u64)?;
    let wanted = tables.sections();
    let mut sections: [Option<&[u8]>; SECTIONS] = [None; SECTIONS];
    let mut opened: [Option<LazyTable>; 2] = [None, None];
    for (i, range) in ranges.into_iter().enumerate().filter(|(i, _)| wanted[*i]) {
        let range = usize::try_from(range.start).ok()?..usize::try_from(range.end).ok()?;
        let section = bytes.get(range)?;
        match table_of(i) {
            Some(t) => opened[t] = Some(LazyTable::from_bytes(section)?),
            None => sections[i] = Some(section),
        }
    }
    decode_base(sections, opened, from, [false; 2])
}

/// A base's sections as read (`None`: not read, as `tables` wants, or a
/// table), each with its seal, and its tables as opened (`None`: not
/// wanted). A table is decoded from slot `from` (its blocks before are
/// not read), or left undecoded when `lazy` says so.
fn decode_base(
    sections: [Option<&[u8]>; SECTIONS],
    tables: [Option<LazyTable>; 2],
    from: i64,
    lazy: Undecoded,
) -> Option<Parts> {
    let [meta, files, _, _, reference] = sections.map(|s| s.map(unseal));
    let mut r = Reader::new(meta??);
    let fingerprint = r.u64()?;
    let since = r.i64()?;
    let pricing = read_str(&mut r)?;
    let mut detailed = Detailed {
        duplicates_claude: r.u64()?,
        duplicates_codex: r.u64()?,
        forks_unresolved: r.u64()?,
        ..Detailed::default()
    };
    if !r.at_end() {
        return None;
    }
    if let Some(files) = files {
        let mut r = Reader::new(files?);
        detailed.by_file = read_file_counters(&mut r)?.into_iter().collect();
        r.at_end().then_some(())?;
    }
    let mut undecoded: [Option<LazyTable>; 2] = [None, None];
    let decoded = [&mut detailed.slots, &mut detailed.sessions];
    for (((table, opened), lazy), undecoded) in decoded
        .into_iter()
        .zip(tables)
        .zip(lazy)
        .zip(&mut undecoded)
    {
        match opened {
            Some(opened) if lazy => *undecoded = Some(opened),
            Some(mut opened) => {
                opened.read_from(from)?;
                *table = opened.rows_from(from)?.into_iter().collect();
            }
            None => {}
        }
    }
    let mut owners = OwnersRef::default();
    if let Some(reference) = reference {
        let mut r = Reader::new(reference?);
        owners.generation = r.u64()?;
        owners.count = r.u64()?;
        owners.delta = read_owners(&mut r)?.into_iter().collect();
        r.at_end().then_some(())?;
    }
    Some(Parts {
        fingerprint,
        since,
        pricing,
        detailed,
        lazy: undecoded,
        owners,
    })
}

fn encode_record(state: &State, changed: &Changed) -> Vec<u8> {
    let d = &state.detailed;
    let mut o = Vec::with_capacity(64 + changed.slots.len() * 160 + changed.owners.len() * 16);
    put_u64(&mut o, state.fingerprint);
    put_u64(&mut o, state.since as u64);
    for n in [d.duplicates_claude, d.duplicates_codex, d.forks_unresolved] {
        put_u64(&mut o, n);
    }
    // A file's counters, all zero when it has none left.
    put_u64(&mut o, changed.files.len() as u64);
    for file in &changed.files {
        put_u64(&mut o, *file);
        for n in d.by_file.get(file).copied().unwrap_or_default() {
            put_u64(&mut o, n);
        }
    }
    for (keys, per_session) in [(&changed.slots, false), (&changed.sessions, true)] {
        put_u64(&mut o, keys.len() as u64);
        for key in keys {
            let (slot, agent, model, cwd, session) = key;
            put_u64(&mut o, *slot as u64);
            put_u64(&mut o, agent_code(*agent));
            put_str(&mut o, model);
            put_str(&mut o, cwd);
            put_str(&mut o, session);
            let acc = match per_session {
                true => state.session(key),
                false => state.slot(key),
            };
            match acc {
                Some(acc) => {
                    put_u64(&mut o, 1);
                    for n in acc_numbers(&acc) {
                        put_u64(&mut o, n);
                    }
                }
                None => put_u64(&mut o, 0),
            }
        }
    }
    let owners: Vec<(u64, u64)> = changed
        .owners
        .iter()
        .filter_map(|&id| Some((id, state.owners.delta_entry(id)?)))
        .collect();
    put_u64(&mut o, owners.len() as u64);
    for (id, value) in owners {
        put_u64(&mut o, id);
        put_u64(&mut o, value);
    }
    o
}

/// A journal record's changed keys of one table, with their sums
/// (`None`: removed).
fn read_changed(r: &mut Reader) -> Option<Vec<(SlotKey, Option<SlotAcc>)>> {
    let n = r.count64(8 * 6)?;
    let mut slots: Vec<(SlotKey, Option<SlotAcc>)> = Vec::with_capacity(n);
    for _ in 0..n {
        let slot = r.i64()?;
        let agent = agent_from(r.u64()?)?;
        let key = (
            slot,
            agent,
            Text::from(read_str(r)?),
            Text::from(read_str(r)?),
            Text::from(read_str(r)?),
        );
        let acc = match r.u64()? {
            1 => Some(acc_from(read_numbers(r)?)),
            0 => None,
            _ => return None,
        };
        slots.push((key, acc));
    }
    Some(slots)
}

fn apply_record(parts: &mut Parts, payload: &[u8], from: i64, tables: Tables) -> Option<()> {
    let mut r = Reader::new(payload);
    let fingerprint = r.u64()?;
    let since = r.i64()?;
    let counters = [r.u64()?, r.u64()?, r.u64()?];
    let files = read_file_counters(&mut r)?;
    let slots = read_changed(&mut r)?;
    let sessions = read_changed(&mut r)?;
    let owners = read_owners(&mut r)?;
    if !r.at_end() {
        return None;
    }
    // Validated whole: now applied.
    parts.fingerprint = fingerprint;
    parts.since = since;
    let d = &mut parts.detailed;
    [d.duplicates_claude, d.duplicates_codex, d.forks_unresolved] = counters;
    // Only the worker's read has the counters per file (`Tables::sections`).
    for (file, counts) in files.into_iter().filter(|_| tables == Tables::Both) {
        if counts == [0; 3] {
            d.by_file.remove(&file);
        } else {
            d.by_file.insert(file, counts);
        }
    }
    let d = &mut parts.detailed;
    for (((wanted, table), changed), lazy) in [
        (tables.slots(), &mut d.slots),
        (tables.sessions(), &mut d.sessions),
    ]
    .into_iter()
    .zip([slots, sessions])
    .zip(&mut parts.lazy)
    {
        if !wanted {
            continue;
        }
        let changed = changed.into_iter().filter(|(key, _)| key.0 >= from);
        match lazy {
            Some(undecoded) => {
                for (key, acc) in changed {
                    undecoded.set(key, acc);
                }
            }
            None => {
                for (key, acc) in changed {
                    match acc {
                        Some(acc) => table.insert(key, acc),
                        None => table.remove(&key),
                    };
                }
            }
        }
    }
    parts.owners.delta.extend(owners);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::Agent;
    use crate::usage::store::owners::SHARED;
    use std::collections::BTreeMap;

    use crate::base::scratch::ScratchDir as Scratch;
    use crate::usage::store::rows::tests::acc;

    fn key(slot: i64) -> SlotKey {
        (
            slot,
            Agent::Codex,
            "gpt-5".into(),
            "/p".into(),
            "t-1".into(),
        )
    }

    /// A state built from scratch: two slots, owners 1→2 and 3 shared.
    fn fresh_state() -> State {
        let mut d = Detailed {
            duplicates_claude: 3,
            ..Detailed::default()
        };
        d.by_file.insert(2, [3, 0, 0]);
        d.slots.insert(key(900), acc(2));
        d.slots.insert(key(1800), acc(1));
        d.sessions.insert(key(900), acc(2));
        State {
            fingerprint: 9,
            since: 0,
            pricing: "ab".into(),
            detailed: d,
            owners: Owners::new(vec![(1, 2), (3, 4), (3, 5)]),
            changed: None,
            origin: None,
            lazy_slots: None,
            lazy_sessions: None,
        }
    }

    /// The state in `store` with its sessions decoded (what a loaded
    /// state compares as).
    fn decoded(store: &StateStore) -> State {
        let mut state = store.load().unwrap();
        assert!(state.decode_tables());
        state
    }

    /// `state` with slot `slot` set to `acc(requests)` and owner `id`
    /// recorded as `owner`, both marked changed.
    fn change(state: &mut State, slot: i64, requests: u64, id: u64, owner: u64) {
        state.set_slot(key(slot), Some(acc(requests)));
        state.set_session(key(slot), Some(acc(requests)));
        state.owners.set(id, owner);
        state.fingerprint += 1;
        let changed = state.changed.get_or_insert_with(Changed::default);
        changed.slots.insert(key(slot));
        changed.sessions.insert(key(slot));
        changed.owners.insert(id);
        // The owner's file was charged a Codex duplicate.
        state.detailed.duplicates_codex += 1;
        state.detailed.by_file.entry(owner).or_default()[1] += 1;
        changed.files.insert(owner);
    }

    fn files_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn state_round_trips_through_base_and_journal_and_refuses_damage() {
        let dir = Scratch::new("round-trip");
        let store = StateStore::in_dir(&dir.0);
        let mut s = fresh_state();
        s.owners.remove(1);
        store.save(&mut s).unwrap();
        let base = fs::read(&store.base).unwrap();
        // A loaded state journals what changed: slots and owners.
        let mut s = store.load().unwrap();
        s.owners.set(7, 8);
        s.set_slot(key(2700), Some(acc(4)));
        s.set_slot(key(900), None);
        // Loaded lazily: the tables are changed undecoded.
        assert!(s.lazy_slots.is_some() && s.detailed.slots.is_empty());
        assert!(s.lazy_sessions.is_some() && s.detailed.sessions.is_empty());
        assert_eq!(s.slot(&key(1800)), Some(acc(1)));
        assert_eq!(s.session(&key(900)), Some(acc(2)));
        s.set_session(key(2700), Some(acc(3)));
        s.fingerprint = 10;
        let changed = s.changed.as_mut().unwrap();
        changed.owners.insert(7);
        changed.slots.extend([key(2700), key(900)]);
        changed.sessions.insert(key(2700));
        store.save(&mut s).unwrap();
        assert_eq!(fs::read(&store.base).unwrap(), base);
        assert!(store.journal.exists());
        let back = decoded(&store);
        assert!(s.decode_tables());
        assert_eq!(
            (back.fingerprint, back.since, &back.pricing, &back.detailed),
            (s.fingerprint, s.since, &s.pricing, &s.detailed)
        );
        assert_eq!(back.owners.rows().unwrap(), vec![(3, SHARED), (7, 8)]);
        // A view reads one table of the two, base and journal alike, and
        // not the counters per file (the worker's coverage needs them).
        let slots_only = Detailed {
            sessions: BTreeMap::new(),
            by_file: BTreeMap::new(),
            ..s.detailed.clone()
        };
        assert_eq!(store.load_slots().unwrap(), (10, slots_only));
        let sessions_only = Detailed {
            slots: BTreeMap::new(),
            by_file: BTreeMap::new(),
            ..s.detailed.clone()
        };
        assert_eq!(
            store.load_from(i64::MIN, Tables::Sessions).unwrap(),
            (10, sessions_only)
        );
        assert_eq!(s.detailed.sessions.len(), 2);
        // A torn journal record is ignored: the state looks as before.
        let journal = fs::read(&store.journal).unwrap();
        fs::write(&store.journal, &journal[..journal.len() - 1]).unwrap();
        assert_eq!(store.load().unwrap().fingerprint, 9);
        // A damaged block of the sessions is found when first read: the
        // worker's state loads (their head checks), answers from that
        // block are refused (`State::apply` then fails, and the worker
        // rebuilds), and no new base is made from it.
        let _ = fs::remove_file(&store.journal);
        let lengths: Vec<usize> = (0..4)
            .map(|i| u64::from_le_bytes(base[8 + 8 * i..16 + 8 * i].try_into().unwrap()) as usize)
            .collect();
        let mut damaged = base.clone();
        damaged[HEADER + lengths.iter().sum::<usize>() - 1] ^= 1;
        fs::write(&store.base, &damaged).unwrap();
        let mut s = store.load().unwrap();
        assert_eq!(s.session(&key(900)), None);
        assert!(s.lazy_sessions.as_ref().unwrap().damaged());
        // A new base would need every session: it is not written.
        s.changed = None;
        assert!(store.save(&mut s).is_err());
        assert_eq!(fs::read(&store.base).unwrap(), damaged);
        assert!(store.load_from(i64::MIN, Tables::Sessions).is_none());
        assert!(store.load_slots().is_some());
        // A damaged base is refused.
        fs::write(&store.base, &base[..base.len() - 1]).unwrap();
        assert!(store.load().is_none());
        fs::write(&store.base, b"HUAG").unwrap();
        assert!(store.load().is_none());
    }

    #[test]
    fn every_appended_record_is_replayed_in_order() {
        let dir = Scratch::new("replay");
        let store = StateStore::in_dir(&dir.0);
        store.save(&mut fresh_state()).unwrap();
        let mut s = store.load().unwrap();
        change(&mut s, 2700, 4, 7, 8);
        store.save(&mut s).unwrap();
        let one = fs::metadata(&store.journal).unwrap().len();
        // The same state object appends again (it knows where it stands).
        change(&mut s, 2700, 5, 7, 9);
        change(&mut s, 3600, 1, 11, 12);
        store.save(&mut s).unwrap();
        assert!(fs::metadata(&store.journal).unwrap().len() > one);
        let back = decoded(&store);
        assert_eq!(back.fingerprint, 12);
        assert!(s.decode_tables());
        assert_eq!(back.detailed, s.detailed);
        assert_eq!(back.detailed.slots.get(&key(2700)), Some(&acc(5)));
        assert_eq!(
            back.owners.rows().unwrap(),
            vec![(1, 2), (3, SHARED), (7, 9), (11, 12)]
        );
        // A damaged middle byte ends the replay at the first record.
        let mut journal = fs::read(&store.journal).unwrap();
        let last = journal.len() - 3;
        journal[last] ^= 0x40;
        fs::write(&store.journal, &journal).unwrap();
        let partial = store.load().unwrap();
        assert_eq!(partial.fingerprint, 10);
        assert_eq!(partial.slot(&key(2700)), Some(acc(4)));
        assert_eq!(partial.slot(&key(3600)), None);
    }

    #[test]
    fn a_damaged_journal_is_never_appended_to_but_replaced_by_a_new_base() {
        let dir = Scratch::new("no-append-after-damage");
        let store = StateStore::in_dir(&dir.0);
        store.save(&mut fresh_state()).unwrap();
        let mut s = store.load().unwrap();
        change(&mut s, 2700, 4, 7, 8);
        store.save(&mut s).unwrap();
        let journal = fs::read(&store.journal).unwrap();
        fs::write(&store.journal, &journal[..journal.len() - 2]).unwrap();
        let mut s = store.load().unwrap();
        assert_eq!(s.fingerprint, 9);
        change(&mut s, 3600, 1, 11, 12);
        store.save(&mut s).unwrap();
        // Appending after the torn record would hide the new one.
        assert!(!store.journal.exists());
        let back = decoded(&store);
        assert_eq!(back.fingerprint, 10);
        assert!(s.decode_tables());
        assert_eq!(back.detailed, s.detailed);
    }

    #[test]
    fn a_journal_past_its_share_of_the_base_becomes_a_new_base() {
        let dir = Scratch::new("outgrown");
        let mut store = StateStore::in_dir(&dir.0);
        // No floor: the journal may hold a quarter of the base.
        store.min_journal = 0;
        store.save(&mut fresh_state()).unwrap();
        let base = fs::read(&store.base).unwrap();
        let mut s = store.load().unwrap();
        for slot in 0..40 {
            change(&mut s, 3600 + slot * 900, 1, 100 + slot as u64, 5);
        }
        // The record (40 slots of at least 40 bytes) is over a quarter of
        // the base (2 slots, about 0.5 KB).
        store.save(&mut s).unwrap();
        assert!(!store.journal.exists());
        assert_ne!(fs::read(&store.base).unwrap(), base);
        let back = decoded(&store);
        assert!(s.decode_tables());
        assert_eq!(back.detailed, s.detailed);
        assert_eq!(back.fingerprint, s.fingerprint);
    }

    #[test]
    fn a_new_owners_generation_is_written_before_the_base_that_names_it() {
        let dir = Scratch::new("generation");
        let store = StateStore::in_dir(&dir.0);
        store.save(&mut fresh_state()).unwrap();
        let first = files_in(&dir.0);
        assert_eq!(first.len(), 2, "{first:?}");
        let mut s = store.load().unwrap();
        // Any delta makes a new generation.
        s.owners.min_delta = 0;
        change(&mut s, 2700, 4, 7, 8);
        store.save(&mut s).unwrap();
        let after = files_in(&dir.0);
        // The new base names the new table; the old table is gone.
        assert_eq!(after.len(), 2, "{after:?}");
        assert!(after.contains(&"aggregate-v1.bin".to_string()));
        let old_table = first.iter().find(|n| n.starts_with("owners-v1."));
        let new_table = after.iter().find(|n| n.starts_with("owners-v1."));
        assert!(old_table.is_some() && new_table.is_some() && old_table != new_table);
        let back = decoded(&store);
        assert_eq!(
            back.owners.rows().unwrap(),
            vec![(1, 2), (3, SHARED), (7, 8)]
        );
        // A base whose owners table is missing is refused.
        for name in &after {
            if name.starts_with("owners-v1.") {
                fs::remove_file(dir.0.join(name)).unwrap();
            }
        }
        assert!(store.load().is_none());
        assert!(store.load_slots().is_some(), "queries need no owners table");
    }

    #[test]
    fn a_journal_of_another_base_is_ignored() {
        let dir = Scratch::new("foreign-journal");
        let store = StateStore::in_dir(&dir.0);
        store.save(&mut fresh_state()).unwrap();
        let mut s = store.load().unwrap();
        change(&mut s, 2700, 4, 7, 8);
        store.save(&mut s).unwrap();
        let journal = fs::read(&store.journal).unwrap();
        // A new base (a state rebuilt from scratch) removes the journal;
        // one put back names the old base and is not replayed.
        let mut rebuilt = fresh_state();
        rebuilt.fingerprint = 50;
        store.save(&mut rebuilt).unwrap();
        assert!(!store.journal.exists());
        fs::write(&store.journal, &journal).unwrap();
        let back = decoded(&store);
        assert_eq!(back.fingerprint, 50);
        assert_eq!(back.detailed.slots.get(&key(2700)), None);
    }

    #[test]
    fn slots_from_a_time_on_are_the_whole_state_s_from_that_time() {
        let dir = Scratch::new("slots-from");
        let store = StateStore::in_dir(&dir.0);
        let mut s = fresh_state();
        for slot in 3..40 {
            s.detailed.slots.insert(key(slot * 900), acc(slot as u64));
        }
        store.save(&mut s).unwrap();
        // A journal record past the base: a new slot, one changed, one
        // removed, on either side of `from`.
        let mut s = store.load().unwrap();
        change(&mut s, 45 * 900, 1, 7, 8);
        change(&mut s, 4 * 900, 9, 7, 8);
        s.set_slot(key(30 * 900), None);
        s.changed.as_mut().unwrap().slots.insert(key(30 * 900));
        store.save(&mut s).unwrap();
        assert!(store.journal.exists());
        let (_, all) = store.load_from(i64::MIN, Tables::Both).unwrap();
        assert!(s.decode_tables());
        assert_eq!(all, s.detailed);
        for from in [
            i64::MIN,
            0,
            900,
            901,
            4 * 900,
            20 * 900,
            39 * 900,
            45 * 900,
            46 * 900,
        ] {
            let (fingerprint, part) = store.load_slots_from(from).unwrap();
            assert_eq!(fingerprint, s.fingerprint);
            let want: Vec<_> = all
                .slots
                .range(crate::usage::aggregate::slots_from(from)..)
                .collect();
            assert_eq!(part.slots.iter().collect::<Vec<_>>(), want, "from {from}");
            assert!(part.by_file.is_empty());
            // A view's list is the same rows, in the same order.
            let (_, rows) = store.rows_from(from, Tables::Slots).unwrap();
            assert_eq!(rows.iter().map(|(k, a)| (k, a)).collect::<Vec<_>>(), want);
            let (_, part) = store.load_from(from, Tables::Sessions).unwrap();
            let want: Vec<_> = all
                .sessions
                .range(crate::usage::aggregate::slots_from(from)..)
                .collect();
            assert_eq!(
                part.sessions.iter().collect::<Vec<_>>(),
                want,
                "from {from}"
            );
            assert!(part.slots.is_empty());
            let (_, rows) = store.rows_from(from, Tables::Sessions).unwrap();
            assert_eq!(rows.iter().map(|(k, a)| (k, a)).collect::<Vec<_>>(), want);
        }
    }

    #[test]
    fn every_truncation_and_every_damaged_byte_of_a_base_is_refused() {
        let dir = Scratch::new("truncations");
        let store = StateStore::in_dir(&dir.0);
        store.save(&mut fresh_state()).unwrap();
        let bytes = fs::read(&store.base).unwrap();
        let mut longer = bytes.clone();
        longer.push(0);
        for tables in [Tables::Both, Tables::Slots, Tables::Sessions] {
            assert!(decode_bytes(&bytes, i64::MIN, tables).is_some());
            for cut in 0..bytes.len() {
                let partial = &bytes[..cut];
                assert!(
                    decode_bytes(partial, i64::MIN, tables).is_none(),
                    "cut at {cut}"
                );
                assert!(
                    decode_bytes(partial, 1800, tables).is_none(),
                    "cut at {cut}"
                );
            }
            assert!(decode_bytes(&longer, i64::MIN, tables).is_none());
        }
        // A changed byte anywhere fails the seal of its section: the
        // worker, which reads every section, refuses it (and rebuilds).
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x20;
            assert!(
                decode_bytes(&damaged, i64::MIN, Tables::Both).is_none(),
                "byte {at}"
            );
        }
    }
}

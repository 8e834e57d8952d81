//! Where the incremental aggregate ([`State`]) lives on disk, laid out so a
//! refresh that touched a few slots writes those slots, not the tens of
//! thousands a busy Host has.
//!
//! - `aggregate-v1.bin`, the base (replaced atomically): fingerprint,
//!   window start, price-table hash, counters, every slot (strings
//!   interned) and the reference to the owners table (its generation,
//!   size and delta; see `usage::store::owners`);
//! - `aggregate-v1.journal`, append-only: a header naming the base it
//!   extends (device, inode, size, mtime, layout version), then records
//!   `[u32 length][u64 FNV-1a][payload]`, each the new fingerprint, window
//!   start and counters plus the slots and owner entries that changed. A
//!   torn or damaged record ends the replay (the state then looks older,
//!   its fingerprint no longer matches the index, and it is rebuilt).
//!
//! Once the journal outgrows a quarter of the base (and [`MIN_JOURNAL`]),
//! or the owners table gets a new generation, the next save writes a new
//! base and removes the journal. Queries read the slots from here for a
//! zone the worker did not render ahead ([`StateStore::load_slots`]),
//! without the owners table. A cache: atomic, not `fsync`ed.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::usage::aggregate::incremental::{Changed, State};
use crate::usage::aggregate::{Detailed, SlotAcc, SlotKey};
use crate::usage::event::{Agent, Tokens, seal, unseal};
use crate::usage::store::journal;
use crate::usage::store::owners::{Owners, OwnersRef};

const MAGIC: &[u8; 4] = b"HUAG";
const JOURNAL_MAGIC: &[u8; 4] = b"HUAJ";
/// Bump when the layout or the aggregation rules change.
pub const STATE_VERSION: u32 = 2;
/// The journal may always grow to this many bytes.
pub const MIN_JOURNAL: u64 = 256 << 10;

/// The files of the aggregate state.
#[derive(Debug, Clone)]
pub struct StateStore {
    pub base: PathBuf,
    pub journal: PathBuf,
    /// The journal may always grow to this many bytes before a new base.
    pub min_journal: u64,
}

/// Where a loaded state came from, needed to append to its journal.
#[derive(Debug, Clone)]
pub struct Origin {
    base_len: u64,
    journal_len: u64,
    /// The journal fully extends the base (append to it).
    journal_valid: bool,
    header: Vec<u8>,
}

fn journal_header(meta: &fs::Metadata) -> Vec<u8> {
    journal::header(JOURNAL_MAGIC, meta, &[u64::from(STATE_VERSION)])
}

/// What a base or journal holds besides the owners table.
struct Parts {
    fingerprint: u64,
    since: i64,
    pricing: String,
    detailed: Detailed,
    owners: OwnersRef,
}

impl StateStore {
    /// The state in `dir` (`aggregate-v1.bin`, `aggregate-v1.journal`).
    pub fn in_dir(dir: &Path) -> StateStore {
        StateStore {
            base: dir.join("aggregate-v1.bin"),
            journal: dir.join("aggregate-v1.journal"),
            min_journal: MIN_JOURNAL,
        }
    }

    fn dir(&self) -> &Path {
        self.base.parent().unwrap_or(Path::new("."))
    }

    fn read(&self) -> Option<(Parts, Origin)> {
        let mut file = File::open(&self.base).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        let meta = file.metadata().ok()?;
        let mut parts = decode_base(unseal(&bytes)?)?;
        let mut origin = Origin {
            base_len: bytes.len() as u64,
            journal_len: 0,
            journal_valid: false,
            header: journal_header(&meta),
        };
        let Ok(journal) = fs::read(&self.journal) else {
            return Some((parts, origin));
        };
        origin.journal_len = journal.len() as u64;
        let (records, whole) = journal::records(&journal, &origin.header);
        let mut applied = 0;
        for payload in &records {
            if apply_record(&mut parts, payload).is_none() {
                break;
            }
            applied += 1;
        }
        origin.journal_valid = whole && applied == records.len();
        Some((parts, origin))
    }

    /// The state with its owners table; `None` when missing or damaged.
    pub fn load(&self) -> Option<State> {
        let (parts, origin) = self.read()?;
        let owners = Owners::open(parts.owners, self.dir()).ok()?;
        Some(State {
            fingerprint: parts.fingerprint,
            since: parts.since,
            pricing: parts.pricing,
            detailed: parts.detailed,
            owners,
            changed: Some(Changed::default()),
            origin: Some(origin),
        })
    }

    /// The slots and fingerprint only (what a query needs).
    pub fn load_slots(&self) -> Option<(u64, Detailed)> {
        let (parts, _) = self.read()?;
        Some((parts.fingerprint, parts.detailed))
    }

    /// Persists `state`: the changes since it was loaded appended to the
    /// journal when that is possible and small, else a new base.
    pub fn save(&self, state: &mut State) -> io::Result<()> {
        let new_generation = state.owners.save(self.dir())?;
        let payload = match (&state.origin, &state.changed) {
            (Some(origin), Some(changed))
                if !new_generation
                    && (origin.journal_valid || origin.journal_len == 0)
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

fn put_u64(o: &mut Vec<u8>, v: u64) {
    o.extend(v.to_le_bytes());
}

fn put_str(o: &mut Vec<u8>, s: &str) {
    put_u64(o, s.len() as u64);
    o.extend(s.as_bytes());
}

fn acc_numbers(a: &SlotAcc) -> [u64; 12] {
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

fn acc_from(n: [u64; 12]) -> SlotAcc {
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

fn agent_code(agent: Agent) -> u64 {
    u64::from(agent == Agent::Codex)
}

fn agent_from(code: u64) -> Option<Agent> {
    match code {
        0 => Some(Agent::Claude),
        1 => Some(Agent::Codex),
        _ => None,
    }
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
    fn numbers(&mut self) -> Option<[u64; 12]> {
        let mut n = [0u64; 12];
        for x in &mut n {
            *x = self.u64()?;
        }
        Some(n)
    }
    fn owners(&mut self) -> Option<Vec<(u64, u64)>> {
        let n = self.count(16)?;
        (0..n).map(|_| Some((self.u64()?, self.u64()?))).collect()
    }
}

fn encode_base<'a>(state: &'a State) -> Option<Vec<u8>> {
    let owners = state.owners.reference()?;
    let d = &state.detailed;
    let mut o = Vec::with_capacity(256 + d.slots.len() * 128 + owners.delta.len() * 16);
    o.extend(MAGIC);
    o.extend(STATE_VERSION.to_le_bytes());
    put_u64(&mut o, state.fingerprint);
    put_u64(&mut o, state.since as u64);
    put_str(&mut o, &state.pricing);
    for n in [d.duplicates_claude, d.duplicates_codex, d.forks_unresolved] {
        put_u64(&mut o, n);
    }
    let mut index: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    let mut strings: Vec<&str> = Vec::new();
    let mut intern = |s: &'a str| -> u64 {
        *index.entry(s).or_insert_with(|| {
            strings.push(s);
            strings.len() as u64 - 1
        })
    };
    let rows: Vec<[u64; 4]> = d
        .slots
        .keys()
        .map(|(slot, agent, model, cwd)| {
            [
                *slot as u64,
                agent_code(*agent),
                intern(model.as_str()),
                intern(cwd.as_str()),
            ]
        })
        .collect();
    put_u64(&mut o, strings.len() as u64);
    for s in &strings {
        put_str(&mut o, s);
    }
    put_u64(&mut o, rows.len() as u64);
    for (row, acc) in rows.iter().zip(d.slots.values()) {
        for n in row.iter().chain(&acc_numbers(acc)) {
            put_u64(&mut o, *n);
        }
    }
    for n in [owners.generation, owners.count] {
        put_u64(&mut o, n);
    }
    put_u64(&mut o, owners.delta.len() as u64);
    for (id, owner) in &owners.delta {
        put_u64(&mut o, *id);
        put_u64(&mut o, *owner);
    }
    seal(&mut o);
    Some(o)
}

fn decode_base(bytes: &[u8]) -> Option<Parts> {
    let mut r = Reader { b: bytes, at: 0 };
    if r.take(4)? != MAGIC || u32::from_le_bytes(r.take(4)?.try_into().ok()?) != STATE_VERSION {
        return None;
    }
    let fingerprint = r.u64()?;
    let since = r.i64()?;
    let pricing = r.str()?;
    let mut detailed = Detailed {
        duplicates_claude: r.u64()?,
        duplicates_codex: r.u64()?,
        forks_unresolved: r.u64()?,
        ..Detailed::default()
    };
    let ns = r.count(8)?;
    let strings: Vec<String> = (0..ns).map(|_| r.str()).collect::<Option<_>>()?;
    let nslots = r.count(16 * 8)?;
    let mut slots = Vec::with_capacity(nslots);
    for _ in 0..nslots {
        let slot = r.i64()?;
        let agent = agent_from(r.u64()?)?;
        let model = strings.get(usize::try_from(r.u64()?).ok()?)?.clone();
        let cwd = strings.get(usize::try_from(r.u64()?).ok()?)?.clone();
        slots.push(((slot, agent, model, cwd), acc_from(r.numbers()?)));
    }
    // Written in key order: bulk-built.
    if !slots.windows(2).all(|w| w[0].0 < w[1].0) {
        return None;
    }
    detailed.slots = slots.into_iter().collect();
    let generation = r.u64()?;
    let count = r.u64()?;
    let delta = r.owners()?;
    if r.at != bytes.len() {
        return None;
    }
    Some(Parts {
        fingerprint,
        since,
        pricing,
        detailed,
        owners: OwnersRef {
            generation,
            count,
            delta: delta.into_iter().collect(),
        },
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
    put_u64(&mut o, changed.slots.len() as u64);
    for key in &changed.slots {
        let (slot, agent, model, cwd) = key;
        put_u64(&mut o, *slot as u64);
        put_u64(&mut o, agent_code(*agent));
        put_str(&mut o, model);
        put_str(&mut o, cwd);
        match d.slots.get(key) {
            Some(acc) => {
                put_u64(&mut o, 1);
                for n in acc_numbers(acc) {
                    put_u64(&mut o, n);
                }
            }
            None => put_u64(&mut o, 0),
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

fn apply_record(parts: &mut Parts, payload: &[u8]) -> Option<()> {
    let mut r = Reader { b: payload, at: 0 };
    let fingerprint = r.u64()?;
    let since = r.i64()?;
    let counters = [r.u64()?, r.u64()?, r.u64()?];
    let n = r.count(8 * 5)?;
    let mut slots: Vec<(SlotKey, Option<SlotAcc>)> = Vec::with_capacity(n);
    for _ in 0..n {
        let slot = r.i64()?;
        let agent = agent_from(r.u64()?)?;
        let key = (slot, agent, r.str()?, r.str()?);
        let acc = match r.u64()? {
            1 => Some(acc_from(r.numbers()?)),
            0 => None,
            _ => return None,
        };
        slots.push((key, acc));
    }
    let owners = r.owners()?;
    if r.at != payload.len() {
        return None;
    }
    // Validated whole: now applied.
    parts.fingerprint = fingerprint;
    parts.since = since;
    let d = &mut parts.detailed;
    [d.duplicates_claude, d.duplicates_codex, d.forks_unresolved] = counters;
    for (key, acc) in slots {
        match acc {
            Some(acc) => d.slots.insert(key, acc),
            None => d.slots.remove(&key),
        };
    }
    parts.owners.delta.extend(owners);
    Some(())
}

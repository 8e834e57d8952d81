//! The identifiers through which transcripts affect each other's totals
//! (Claude dedupe keys and message ids, Codex request keys, thread ids and
//! fork parents) and the file that owns each — the table that lets a
//! refresh prove a changed file independent of every other, without
//! reading or rewriting the whole table (hundreds of thousands of entries
//! on a busy Host) each time.
//!
//! A base file `owners-v1.<gen>.bin` holds the table sorted by identifier
//! in blocks of [`BLOCK`] records, with each block's first identifier (its
//! fence) up front: a lookup reads the fences once and then one block.
//! Changes since the base are a small delta that the aggregate state
//! stores (`usage::aggregate::incremental`); once the delta outgrows an eighth of the
//! base, the next save merges both into a new generation. The base is a
//! cache like the rest of the usage state: written atomically, checked by
//! magic, generation and length, not `fsync`ed.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::usage::event::hash_words;
use crate::usage::paths;
use crate::usage::store::new_generation;

/// Owner of an identifier several files have.
pub(crate) const SHARED: u64 = u64::MAX;
/// A delta entry that removes an identifier (no owner hash is 0).
const REMOVED: u64 = 0;
const MAGIC: &[u8; 4] = b"HUAO";
const VERSION: u32 = 3;
/// Records per block.
const BLOCK: usize = 256;
/// The delta may grow to this share of the base (and at least
/// [`MIN_DELTA`] entries) before a new base is written.
const DELTA_SHARE: usize = 8;
const MIN_DELTA: usize = 1 << 14;

/// What the aggregate state stores of an owners table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnersRef {
    pub generation: u64,
    pub count: u64,
    /// Identifier → owner, or 0 when removed since the base.
    pub delta: BTreeMap<u64, u64>,
}

/// The table: a base (in memory until first saved, then a file) plus the
/// changes since.
#[derive(Debug)]
pub struct Owners {
    base: Base,
    delta: BTreeMap<u64, u64>,
    /// The delta may always hold this many entries before a new base
    /// (0: a new base whenever there is a delta).
    pub min_delta: usize,
}

#[derive(Debug)]
enum Base {
    Memory(Vec<(u64, u64)>),
    File(BaseFile),
}

#[derive(Debug)]
struct BaseFile {
    generation: u64,
    file: File,
    count: u64,
    fences: Vec<u64>,
    sums: Vec<u64>,
    /// Where the records start.
    records_at: u64,
}

/// The owner hash of a file (never [`SHARED`] or 0). Every refresh hashes
/// every indexed path (the coverage counters are summed by owner), so it
/// is the word-at-a-time [`hash_words`], tagged, not a byte-wise hash; the
/// aggregate state stores these hashes, so a change here bumps its
/// version (`state::STATE_VERSION`).
pub(crate) fn owner_of(path: &str) -> u64 {
    const PATH: u64 = 0x7061_7468_6f77_6e72;
    match hash_words(path.as_bytes()) ^ PATH {
        SHARED | 0 => 1,
        h => h,
    }
}

/// `ids` (identifier, owner) as a table: sorted, one row per identifier,
/// [`SHARED`] where several owners have it.
pub fn build(ids: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    collapse(sorted(ids))
}

/// `ids` sorted and without repeats: a part of a table [`Owners::from_sorted`]
/// completes (sorted on another thread).
pub fn sorted(mut ids: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The table of sorted, distinct `ids`: one row per identifier.
fn collapse(ids: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ids.len());
    for (id, owner) in ids {
        match out.last_mut() {
            Some(last) if last.0 == id => last.1 = SHARED,
            _ => out.push((id, owner)),
        }
    }
    out
}

impl Owners {
    /// A table built from every file's identifiers.
    pub fn new(ids: Vec<(u64, u64)>) -> Owners {
        Owners::in_memory(build(ids))
    }

    /// [`Owners::new`] of the identifiers `part` ([`sorted`]) and `more`.
    pub(crate) fn from_sorted(mut part: Vec<(u64, u64)>, more: Vec<(u64, u64)>) -> Owners {
        // The stable sort finds `part`'s run and merges the rest into it.
        part.extend(more);
        part.sort();
        part.dedup();
        Owners::in_memory(collapse(part))
    }

    fn in_memory(table: Vec<(u64, u64)>) -> Owners {
        Owners {
            base: Base::Memory(table),
            delta: BTreeMap::new(),
            min_delta: MIN_DELTA,
        }
    }

    /// The owners of those of `ids` that anyone owns.
    pub fn resolve(&self, ids: &[u64]) -> io::Result<HashMap<u64, u64>> {
        let mut out = HashMap::with_capacity(ids.len());
        let mut wanted: Vec<u64> = Vec::with_capacity(ids.len());
        for &id in ids {
            match self.delta.get(&id) {
                Some(&REMOVED) => {}
                Some(&owner) => {
                    out.insert(id, owner);
                }
                None => wanted.push(id),
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        match &self.base {
            Base::Memory(table) => {
                for id in wanted {
                    if let Ok(i) = table.binary_search_by_key(&id, |r| r.0) {
                        out.insert(id, table[i].1);
                    }
                }
            }
            Base::File(base) => {
                let mut block: Option<(usize, Vec<(u64, u64)>)> = None;
                for id in wanted {
                    let Some(b) = base.fences.partition_point(|&f| f <= id).checked_sub(1) else {
                        continue;
                    };
                    if block.as_ref().is_none_or(|(n, _)| *n != b) {
                        block = Some((b, base.block(b)?));
                    }
                    if let Some((_, rows)) = &block
                        && let Ok(i) = rows.binary_search_by_key(&id, |r| r.0)
                    {
                        out.insert(id, rows[i].1);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Records that no file owns `id` any more.
    pub fn remove(&mut self, id: u64) {
        self.delta.insert(id, REMOVED);
    }

    /// Records `owner` as `id`'s owner.
    pub fn set(&mut self, id: u64, owner: u64) {
        self.delta.insert(id, owner);
    }

    /// Writes a new base when the table is new or its delta has grown, in
    /// `dir`. Returns whether it wrote one; the previous generation stays
    /// until [`Owners::remove_other_generations`] (once the state naming
    /// the new one is written).
    pub fn save(&mut self, dir: &Path) -> io::Result<bool> {
        let table = match &self.base {
            // A table just built (a cold scan's half a million rows) is
            // encoded as it is.
            Base::Memory(table) if self.delta.is_empty() => Cow::Borrowed(table.as_slice()),
            Base::Memory(table) => Cow::Owned(merge(table.iter().copied(), &self.delta)),
            Base::File(base) => {
                let limit = match self.min_delta {
                    0 => 0,
                    min => (base.count as usize / DELTA_SHARE).max(min),
                };
                if self.delta.len() <= limit {
                    return Ok(false);
                }
                Cow::Owned(merge(base.all()?.into_iter(), &self.delta))
            }
        };
        let previous = match &self.base {
            Base::File(base) => base.generation,
            Base::Memory(_) => 0,
        };
        let generation = new_generation(previous);
        let path = dir.join(paths::owners_table(generation));
        crate::base::atomic_file::write_unsynced(&path, &encode(generation, &table), 0o600)?;
        let count = table.len() as u64;
        drop(table);
        self.base = Base::File(BaseFile::open(&path, generation, count)?);
        self.delta.clear();
        Ok(true)
    }

    /// What the aggregate state stores of the table: generation, size and
    /// delta. `None` while the base is in memory only (save first).
    pub fn reference(&self) -> Option<OwnersRef> {
        let Base::File(base) = &self.base else {
            return None;
        };
        Some(OwnersRef {
            generation: base.generation,
            count: base.count,
            delta: self.delta.clone(),
        })
    }

    /// The table a stored reference names, in `dir`.
    pub fn open(reference: OwnersRef, dir: &Path) -> io::Result<Owners> {
        let path = dir.join(paths::owners_table(reference.generation));
        Ok(Owners {
            base: Base::File(BaseFile::open(
                &path,
                reference.generation,
                reference.count,
            )?),
            delta: reference.delta,
            min_delta: MIN_DELTA,
        })
    }

    /// Removes the tables of `dir` other than this one's.
    pub(crate) fn remove_other_generations(&self, dir: &Path) {
        if let Base::File(base) = &self.base {
            remove_other_generations(dir, base.generation);
        }
    }

    /// The raw delta entry of `id` (an owner, or 0 for removed).
    pub(crate) fn delta_entry(&self, id: u64) -> Option<u64> {
        self.delta.get(&id).copied()
    }

    /// Every (identifier, owner) row, sorted (for tests and diagnostics).
    pub fn rows(&self) -> io::Result<Vec<(u64, u64)>> {
        Ok(match &self.base {
            Base::Memory(table) => merge(table.iter().copied(), &self.delta),
            Base::File(base) => merge(base.all()?.into_iter(), &self.delta),
        })
    }
}

/// `base` with `delta` applied.
fn merge(base: impl Iterator<Item = (u64, u64)>, delta: &BTreeMap<u64, u64>) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(delta.len());
    let mut changes = delta.iter().peekable();
    for (id, owner) in base {
        while let Some((&d, &o)) = changes.next_if(|(d, _)| **d < id) {
            if o != REMOVED {
                out.push((d, o));
            }
        }
        match changes.next_if(|(d, _)| **d == id) {
            Some((_, &REMOVED)) => {}
            Some((_, &o)) => out.push((id, o)),
            None => out.push((id, owner)),
        }
    }
    out.extend(
        changes
            .filter(|(_, o)| **o != REMOVED)
            .map(|(d, o)| (*d, *o)),
    );
    out
}

fn header_len(blocks: usize) -> u64 {
    (4 + 4 + 8 + 8 + 16 * blocks + 8) as u64
}

fn encode(generation: u64, table: &[(u64, u64)]) -> Vec<u8> {
    let blocks = table.len().div_ceil(BLOCK);
    let header = header_len(blocks) as usize;
    // The rows go after the header, which holds their blocks' checksums:
    // written first, at their place, then summed where they lie.
    let mut out = vec![0u8; header];
    out.reserve(table.len() * 16);
    for (id, owner) in table {
        out.extend(id.to_le_bytes());
        out.extend(owner.to_le_bytes());
    }
    let mut head = Vec::with_capacity(header);
    head.extend(MAGIC);
    head.extend(VERSION.to_le_bytes());
    head.extend(generation.to_le_bytes());
    head.extend((table.len() as u64).to_le_bytes());
    // Per block: its first identifier (the fence) and a checksum, so a
    // lookup reads and verifies one block.
    for (chunk, rows) in table.chunks(BLOCK).zip(out[header..].chunks(BLOCK * 16)) {
        head.extend(chunk[0].0.to_le_bytes());
        head.extend(hash_words(rows).to_le_bytes());
    }
    // The header is sealed too: a damaged fence would send a lookup to
    // the wrong (intact) block.
    crate::usage::event::seal(&mut head);
    out[..header].copy_from_slice(&head);
    out
}

fn rows_from(bytes: &[u8]) -> Vec<(u64, u64)> {
    bytes
        .chunks_exact(16)
        .map(|c| {
            let (id, owner) = c.split_at(8);
            (
                u64::from_le_bytes(id.try_into().unwrap_or_default()),
                u64::from_le_bytes(owner.try_into().unwrap_or_default()),
            )
        })
        .collect()
}

impl BaseFile {
    fn open(path: &Path, generation: u64, count: u64) -> io::Result<BaseFile> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "owners table damaged");
        let (mut file, _) = crate::base::state_file::open(path)?;
        let mut head = [0u8; 24];
        file.read_exact(&mut head)?;
        let stored_count = u64::from_le_bytes(head[16..24].try_into().map_err(|_| bad())?);
        if &head[..4] != MAGIC
            || head[4..8] != VERSION.to_le_bytes()
            || head[8..16] != generation.to_le_bytes()
            || stored_count != count
        {
            return Err(bad());
        }
        let blocks = usize::try_from(count.div_ceil(BLOCK as u64)).map_err(|_| bad())?;
        let records_at = header_len(blocks);
        let expected = records_at
            .checked_add(count.checked_mul(16).ok_or_else(bad)?)
            .ok_or_else(bad)?;
        if file.metadata()?.len() != expected {
            return Err(bad());
        }
        let mut header = head.to_vec();
        header.resize(records_at as usize, 0);
        file.read_exact(&mut header[24..])?;
        let raw = crate::usage::event::unseal(&header)
            .map(|h| &h[24..])
            .ok_or_else(bad)?;
        let word = |c: &[u8]| u64::from_le_bytes(c.try_into().unwrap_or_default());
        let (fences, sums) = raw
            .chunks_exact(16)
            .map(|c| (word(&c[..8]), word(&c[8..])))
            .unzip();
        Ok(BaseFile {
            generation,
            file,
            count,
            fences,
            sums,
            records_at,
        })
    }

    /// Block `b`'s rows, verified against its fence and checksum.
    fn block(&self, b: usize) -> io::Result<Vec<(u64, u64)>> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "owners block damaged");
        let first = (b * BLOCK) as u64;
        let n = (self.count - first).min(BLOCK as u64) as usize;
        let mut raw = vec![0u8; n * 16];
        self.file
            .read_exact_at(&mut raw, self.records_at + first * 16)?;
        let rows = rows_from(&raw);
        let sorted = rows.windows(2).all(|w| w[0].0 < w[1].0);
        if Some(hash_words(&raw)) != self.sums.get(b).copied()
            || rows.first().map(|r| r.0) != self.fences.get(b).copied()
            || !sorted
        {
            return Err(bad());
        }
        Ok(rows)
    }

    fn all(&self) -> io::Result<Vec<(u64, u64)>> {
        let mut rows = Vec::with_capacity(self.count as usize);
        for b in 0..self.fences.len() {
            rows.extend(self.block(b)?);
        }
        Ok(rows)
    }
}

fn remove_other_generations(dir: &Path, keep: u64) {
    let keep = paths::owners_table(keep);
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if paths::is_owners_table(&name) && name != keep {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_marks_ids_of_two_files_shared() {
        assert_eq!(
            build(vec![(4, 1), (4, 1), (2, 1), (4, 2)]),
            vec![(2, 1), (4, SHARED)]
        );
    }

    #[test]
    fn a_table_completed_from_a_sorted_part_is_the_table_of_all() {
        // Identifiers repeated within a part, shared across the parts, and
        // each part's own; in every split of one list into two.
        let ids: Vec<(u64, u64)> = vec![
            (7, 1),
            (3, 2),
            (7, 1),
            (9, 3),
            (3, 1),
            (1, 4),
            (9, 3),
            (12, 5),
            (7, 6),
        ];
        let table = |o: Owners| match o.base {
            Base::Memory(rows) => rows,
            Base::File(_) => panic!("built in memory"),
        };
        // By the rule: one row per identifier, shared when two files have it.
        let want = vec![(1, 4), (3, SHARED), (7, SHARED), (9, 3), (12, 5)];
        assert_eq!(table(Owners::new(ids.clone())), want);
        for cut in 0..=ids.len() {
            let (part, more) = ids.split_at(cut);
            let got = table(Owners::from_sorted(sorted(part.to_vec()), more.to_vec()));
            assert_eq!(got, want, "split at {cut}");
        }
    }

    #[test]
    fn delta_merges_over_the_base() {
        let mut delta = BTreeMap::new();
        delta.insert(1, REMOVED);
        delta.insert(2, 20);
        delta.insert(5, 50);
        delta.insert(9, 90);
        let merged = merge([(1, 10), (3, 30), (5, 51)].into_iter(), &delta);
        assert_eq!(merged, vec![(2, 20), (3, 30), (5, 50), (9, 90)]);
    }
}

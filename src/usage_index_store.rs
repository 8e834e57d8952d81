//! Where the per-file cache lives on disk: a base file plus an append-only
//! journal, so a refresh that changed a few files writes those entries, not
//! the whole index (tens of MB on a busy Host).
//!
//! `index-v1.bin` is the base (replaced atomically). `index-v1.journal`
//! starts with a header naming the base it extends (device, inode, size,
//! mtime and the layout/parser versions) and holds records `[u32 length]
//! [u64 FNV-1a of the payload][payload]`, each an entry or a tombstone. On
//! load the valid records are replayed over the base; a torn or damaged
//! record ends the replay, and a journal of another base is ignored (the
//! index then simply looks older, and the files are reparsed or the
//! aggregate rebuilt as for any change). Once the journal outgrows a
//! quarter of the base, the next save writes a new base and removes it.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

use crate::usage_cache::{self, Index};
use crate::usage_row::fnv1a;

const MAGIC: &[u8; 4] = b"HUIJ";
/// The journal may grow to this share of the base (and at least
/// [`MIN_JOURNAL`]) before the base is rewritten.
const JOURNAL_SHARE: u64 = 4;
const MIN_JOURNAL: u64 = 1 << 20;

/// The two files of an index.
#[derive(Debug, Clone)]
pub struct Store {
    pub base: PathBuf,
    pub journal: PathBuf,
}

/// What [`Store::load`] found, needed to append later.
#[derive(Debug, Clone, Copy, Default)]
pub struct Loaded {
    /// The journal extends the loaded base (append to it).
    journal_valid: bool,
    base_len: u64,
    journal_len: u64,
}

fn header(meta: &fs::Metadata) -> Vec<u8> {
    let mut h = Vec::with_capacity(64);
    h.extend(MAGIC);
    for n in [
        meta.dev(),
        meta.ino(),
        meta.size(),
        (meta.mtime() as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(meta.mtime_nsec() as u64),
        u64::from(usage_cache::INDEX_VERSION),
        u64::from(usage_cache::CLAUDE_PARSER_VERSION),
        u64::from(usage_cache::CODEX_PARSER_VERSION),
    ] {
        h.extend(n.to_le_bytes());
    }
    h
}

impl Store {
    /// Reads the base (lazily) and replays the journal over it.
    pub fn load(&self) -> (Index, Loaded) {
        let Ok(mut file) = File::open(&self.base) else {
            return (Index::default(), Loaded::default());
        };
        let mut bytes = Vec::new();
        let meta = match (
            io::Read::read_to_end(&mut file, &mut bytes),
            file.metadata(),
        ) {
            (Ok(_), Ok(meta)) => meta,
            _ => return (Index::default(), Loaded::default()),
        };
        let mut index = Index::from_bytes_lazy(&bytes);
        let mut loaded = Loaded {
            journal_valid: false,
            base_len: bytes.len() as u64,
            journal_len: 0,
        };
        drop(bytes);
        let Ok(journal) = fs::read(&self.journal) else {
            return (index, loaded);
        };
        loaded.journal_len = journal.len() as u64;
        let head = header(&meta);
        if !journal.starts_with(&head) {
            return (index, loaded);
        }
        let mut at = head.len();
        while let Some(payload) = record(&journal, at) {
            if !index.apply_journal_record(payload) {
                break;
            }
            at += 12 + payload.len();
        }
        loaded.journal_valid = at == journal.len();
        (index, loaded)
    }

    /// Persists `index` after a refresh that changed the entries `keys`
    /// (present: written; absent: a tombstone): appended to the journal
    /// when it extends the base and stays small, else a new base.
    pub fn save(&self, index: &Index, keys: &[&str], loaded: Loaded) -> io::Result<()> {
        let mut records = Vec::new();
        for key in keys {
            let payload = index.journal_record(key);
            records.extend((payload.len() as u32).to_le_bytes());
            records.extend(fnv1a(&[&payload]).to_le_bytes());
            records.extend(payload);
        }
        let limit = (loaded.base_len / JOURNAL_SHARE).max(MIN_JOURNAL);
        let journal_fits = loaded.journal_len + records.len() as u64 <= limit;
        // A journal that does not fully extend the base is never appended
        // to (its valid records are in `index`; a new base keeps them).
        let appendable = loaded.journal_valid || loaded.journal_len == 0;
        if loaded.base_len > 0 && appendable && journal_fits && fs::metadata(&self.base).is_ok() {
            if records.is_empty() {
                return Ok(());
            }
            let fresh = loaded.journal_len == 0;
            let mut file = OpenOptions::new()
                .create(true)
                .write(true)
                .append(!fresh)
                .truncate(fresh)
                .mode(0o600)
                .open(&self.journal)?;
            if fresh {
                file.write_all(&header(&fs::metadata(&self.base)?))?;
            }
            file.write_all(&records)?;
            return file.sync_all();
        }
        crate::atomic_file::write(&self.base, &index.to_bytes(), 0o600)?;
        match fs::remove_file(&self.journal) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// The payload of the record at `at`, if complete and intact.
fn record(journal: &[u8], at: usize) -> Option<&[u8]> {
    let len = u32::from_le_bytes(journal.get(at..at + 4)?.try_into().ok()?) as usize;
    let sum = u64::from_le_bytes(journal.get(at + 4..at + 12)?.try_into().ok()?);
    let payload = journal.get(at + 12..(at + 12).checked_add(len)?)?;
    (fnv1a(&[payload]) == sum).then_some(payload)
}

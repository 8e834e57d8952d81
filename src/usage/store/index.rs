//! Keeps the per-file index (`usage::cache::Index`) on disk so that a
//! refresh in which a few transcripts changed writes little more than those
//! entries: a base, an append-only events file and a journal (their layout,
//! checksums and compaction order are described in `usage::store`).
//!
//! Invariants: a load never trusts what it reads (a damaged base is an
//! empty index, a damaged journal record ends the replay, a damaged events
//! segment makes its entry unloadable, so it is reparsed); a save either
//! appends to the events file and the journal of the loaded base, or
//! compacts, and compaction writes the new events file before the base that
//! names it and removes the old files only after both.

use std::fs::{self, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::bytes::Reader;
use crate::base::state_file;
use crate::usage::event::{hash_words, seal, unseal};
use crate::usage::paths;
use crate::usage::store::codec::{self, Record};
use crate::usage::store::entry::{EventsFile, FileEntry, Index, Segment};
use crate::usage::store::journal::{self, Origin};
use crate::usage::store::{MAX_FILE_BYTES, new_generation};

const JOURNAL_MAGIC: &[u8; 4] = b"HUIJ";
/// The journal may grow to this share of the base (and at least
/// [`MIN_JOURNAL`]) before the base is rewritten.
const JOURNAL_SHARE: u64 = 4;
const MIN_JOURNAL: u64 = 1 << 20;
/// Dead bytes tolerated in an events file before compaction (besides as
/// many as are live).
const MIN_DEAD: u64 = 8 << 20;
/// Segments of one entry before they are merged into one.
const MAX_SEGMENTS: usize = 32;

/// The files of an index, and when to compact them.
#[derive(Debug, Clone)]
pub struct Store {
    pub base: PathBuf,
    pub journal: PathBuf,
    /// The journal may always grow to this many bytes.
    pub min_journal: u64,
    /// The events file may always hold this many dead bytes.
    pub min_dead: u64,
}

/// The events file a loaded index points into.
#[derive(Debug, Clone)]
struct Events {
    id: u64,
    file: EventsFile,
}

/// What [`Store::load`] found, needed to append later.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// Where the base and the journal stood.
    origin: Origin,
    events: Option<Events>,
}

/// What a [`Store::write`] changed on disk that the entries must record.
#[derive(Debug, Default)]
#[must_use = "the entries must adopt what was written"]
pub struct Written {
    /// Entries and where their events now are.
    stored: Vec<(String, Vec<Segment>)>,
    /// Entries whose events could not be read (dropped from the index).
    lost: Vec<String>,
    /// The new events file of a compaction (for entries not loaded yet).
    events: Option<EventsFile>,
}

impl Written {
    /// Records in `index` (the index that was written) where its entries'
    /// events now are.
    pub(crate) fn adopt(self, index: &mut Index) {
        for path in &self.lost {
            index.files.remove(path);
        }
        for (path, stored) in self.stored {
            if let Some(e) = index.files.get_mut(&path) {
                e.stored = stored;
                if let (Some(file), true) = (&self.events, e.pending.is_some()) {
                    e.pending = Some(file.clone());
                }
            }
        }
    }
}

fn journal_header(meta: &fs::Metadata) -> Vec<u8> {
    journal::header(JOURNAL_MAGIC, meta, &codec::versions())
}

impl Store {
    /// The index in `dir` (`index-v1.bin`, `index-v1.journal`, events files).
    pub fn in_dir(dir: &Path) -> Store {
        Store {
            base: dir.join(paths::INDEX),
            journal: dir.join(paths::INDEX_JOURNAL),
            min_journal: MIN_JOURNAL,
            min_dead: MIN_DEAD,
        }
    }

    /// The events file of id `id`.
    fn events_path(&self, id: u64) -> PathBuf {
        let stem = self
            .base
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.base.with_file_name(format!("{stem}.{id:016x}.events"))
    }

    fn open_events(&self, id: u64) -> Option<Events> {
        let (mut file, _) = state_file::open_with(
            OpenOptions::new().read(true).write(true),
            &self.events_path(id),
        )
        .ok()?;
        let mut head = [0u8; 12];
        file.read_exact(&mut head).ok()?;
        (head[..] == codec::events_header(id)[..]).then(|| Events {
            id,
            file: EventsFile(Arc::new(file)),
        })
    }

    /// Reads the base and replays the journal over it; events stay in the
    /// events file until an entry is materialized.
    pub fn load(&self) -> (Index, Loaded) {
        let empty = || (Index::default(), Loaded::default());
        let Ok((bytes, meta)) = state_file::read(&self.base, MAX_FILE_BYTES) else {
            return empty();
        };
        let Some((index, events)) = unseal(&bytes).and_then(|body| {
            let mut opened = None;
            let index = decode_base(body, |id| {
                let events = self.open_events(id)?;
                let file = events.file.clone();
                opened = Some(events);
                Some(file)
            })?;
            Some((index, opened?))
        }) else {
            return empty();
        };
        let mut index = index;
        let mut loaded = Loaded {
            origin: Origin {
                base_len: bytes.len() as u64,
                journal_len: 0,
                journal_valid: false,
                header: journal_header(&meta),
            },
            events: Some(events.clone()),
        };
        let Ok((journal, _)) = state_file::read(&self.journal, MAX_FILE_BYTES) else {
            return (index, loaded);
        };
        loaded.origin.journal_len = journal.len() as u64;
        let (records, whole) = journal::records(&journal, &loaded.origin.header);
        let mut applied = 0;
        for payload in &records {
            if !apply_record(&mut index, payload, &events.file) {
                break;
            }
            applied += 1;
        }
        loaded.origin.journal_valid = whole && applied == records.len();
        (index, loaded)
    }

    /// Persists `index` after a refresh that changed the entries `keys`
    /// (present: written; absent: a tombstone): new events appended to the
    /// events file and the entries to the journal when the base can be
    /// extended, else a compaction. Entries' segment lists are updated.
    pub fn save(&self, index: &mut Index, keys: &[&str], loaded: Loaded) -> io::Result<()> {
        let written = self.write(index, keys, loaded)?;
        written.adopt(index);
        Ok(())
    }

    /// The file half of [`Store::save`]: writes what `index` needs on disk
    /// without changing it (so it can run beside work that reads the
    /// index), and returns what the entries must then record
    /// ([`Written::adopt`]).
    pub fn write(&self, index: &Index, keys: &[&str], loaded: Loaded) -> io::Result<Written> {
        let origin = &loaded.origin;
        let appendable =
            origin.base_len > 0 && origin.extendable() && fs::metadata(&self.base).is_ok();
        if let (true, Some(events)) = (appendable, &loaded.events) {
            let end = events.file.0.metadata()?.len();
            // Plan on copies: nothing changes unless the append is taken.
            let mut blob = Vec::new();
            let mut planned: Vec<(&str, Option<FileEntry>)> = Vec::with_capacity(keys.len());
            for key in keys {
                let entry = index.files.get(*key).map(|e| {
                    let mut e = e.clone();
                    plan_segments(&mut e, end, &mut blob);
                    e
                });
                planned.push((key, entry));
            }
            let mut records = Vec::new();
            for (key, entry) in &planned {
                journal::frame(&codec::record_payload(key, entry.as_ref()), &mut records);
            }
            let limit = (origin.base_len / JOURNAL_SHARE).max(self.min_journal);
            let journal_fits = origin.journal_len + records.len() as u64 <= limit;
            let live: u64 = index
                .files
                .values()
                .flat_map(|e| &e.stored)
                .map(|s| u64::from(s.len))
                .sum::<u64>()
                + blob.len() as u64;
            let dead = (end + blob.len() as u64).saturating_sub(live);
            if journal_fits && dead <= live.max(self.min_dead) {
                if records.is_empty() {
                    return Ok(Written::default());
                }
                events.file.0.write_all_at(&blob, end)?;
                let header = match origin.journal_len {
                    0 => Some(journal_header(&fs::metadata(&self.base)?)),
                    _ => None,
                };
                journal::append(&self.journal, header.as_deref(), &records)?;
                let stored = planned
                    .into_iter()
                    .filter_map(|(key, entry)| Some((key.to_string(), entry?.stored)))
                    .collect();
                return Ok(Written {
                    stored,
                    ..Written::default()
                });
            }
        }
        self.compact(index, loaded.events.as_ref().map(|e| e.id))
    }

    /// Writes a new events file and base for `index` and removes the
    /// journal and the old events file.
    fn compact(&self, index: &Index, old: Option<u64>) -> io::Result<Written> {
        let id = new_generation(old.unwrap_or(0));
        let mut blob = codec::events_header(id);
        let mut out = codec::header(index.files.len());
        out.extend(id.to_le_bytes());
        let mut written = Written::default();
        let encode = |parse: &crate::usage::event::FileParse| {
            (
                codec::encode_events(&parse.events, &parse.lasts),
                parse.events.len() as u32,
            )
        };
        for (path, e) in &index.files {
            // One segment per entry: copied as is, or re-encoded.
            let copied = match (&e.pending, e.stored.as_slice()) {
                (Some(file), [one]) => Some(file.read(*one).map(|raw| (raw, one.count))),
                _ => None,
            };
            let raw = match copied {
                Some(copy) => copy,
                None if e.is_loaded() => Some(encode(&e.parse)),
                None => {
                    let mut loaded = e.clone();
                    loaded.materialize().then(|| encode(&loaded.parse))
                }
            };
            // An entry whose events cannot be read is dropped (reparsed next).
            let Some((raw, count)) = raw else {
                written.lost.push(path.clone());
                continue;
            };
            let mut stored = Vec::new();
            if count > 0 {
                stored.push(Segment {
                    offset: blob.len() as u64,
                    len: raw.len() as u32,
                    count,
                    sum: hash_words(&raw),
                });
                blob.extend(raw);
            }
            codec::write_entry_stored(&mut out, path, e, &stored);
            written.stored.push((path.clone(), stored));
        }
        let count_fix = codec::header(written.stored.len());
        out[..count_fix.len()].copy_from_slice(&count_fix);
        seal(&mut out);
        let events_path = self.events_path(id);
        crate::base::atomic_file::write_unsynced(&events_path, &blob, 0o600)?;
        written.events = Some(EventsFile(Arc::new(state_file::open(&events_path)?.0)));
        crate::base::atomic_file::write_unsynced(&self.base, &out, 0o600)?;
        match fs::remove_file(&self.journal) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        self.remove_other_events(id);
        Ok(written)
    }

    /// Removes events files other than `keep` (an older compaction's).
    fn remove_other_events(&self, keep: u64) {
        let dir = self.base.parent().unwrap_or(Path::new("."));
        let keep = self.events_path(keep);
        let stem = self
            .base
            .file_stem()
            .map(|s| format!("{}.", s.to_string_lossy()))
            .unwrap_or_default();
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&stem) && name.ends_with(".events") && entry.path() != keep {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// Decides which of `e`'s events go to the events file (appended to
/// `blob`, which will start at `end`): only those after its stored ones
/// when the stored ones are a prefix of its events, else all of them.
fn plan_segments(e: &mut FileEntry, end: u64, blob: &mut Vec<u8>) {
    if !e.is_loaded() {
        return;
    }
    let stored = e.stored_count() as usize;
    let events = &e.parse.events;
    let from = if stored > 0 && stored <= events.len() && e.stored.len() < MAX_SEGMENTS {
        stored
    } else {
        e.stored.clear();
        0
    };
    if from == events.len() {
        return;
    }
    let raw = codec::encode_events(&events[from..], &e.parse.lasts);
    e.stored.push(Segment {
        offset: end + blob.len() as u64,
        len: raw.len() as u32,
        count: (events.len() - from) as u32,
        sum: hash_words(&raw),
    });
    blob.extend(raw);
}

/// Decodes a base's body (its bytes without the seal): the entries, which
/// point into the events file `open` returns for the id the base names.
/// `None` when anything is damaged or the body is not consumed exactly.
pub fn decode_base(bytes: &[u8], open: impl FnOnce(u64) -> Option<EventsFile>) -> Option<Index> {
    let mut r = Reader::new(bytes);
    let header = codec::read_header(&mut r)?;
    let file = open(r.u64()?)?;
    // Entries are stored sorted: collected, the map is bulk-built.
    let mut entries = Vec::with_capacity(header.count);
    for _ in 0..header.count {
        let (path, e) = codec::read_entry(&mut r, &file)?;
        if header.keeps(e.agent) {
            entries.push((path, e));
        }
    }
    let index = Index {
        files: entries.into_iter().collect(),
    };
    r.at_end().then_some(index)
}

/// Replays one journal record over `index`; `false` (and `index`
/// unchanged) when the record is damaged.
pub fn apply_record(index: &mut Index, payload: &[u8], file: &EventsFile) -> bool {
    match codec::read_record(payload, file) {
        Some(Record::Entry(path, e)) => {
            index.files.insert(path, *e);
        }
        Some(Record::Tombstone(path)) => {
            index.files.remove(&path);
        }
        None => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::{Agent, Event, EventKind, FileParse};

    use crate::base::scratch::ScratchDir as Scratch;

    /// The events files in a scratch dir, sorted.
    fn events_files(dir: &Scratch) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "events"))
            .collect();
        out.sort();
        out
    }

    fn event(ts: i64) -> Event {
        Event {
            kind: EventKind::Claude,
            ts,
            model: 1,
            cwd: 0,
            tier: 0,
            session: 1,
            flags: 0,
            key: ts as u64,
            group: 3,
            t: [ts as u64, 2, 3, 4, 5, 0],
            last_at: 0,
        }
    }

    fn entry(ino: u64, events: &[i64]) -> FileEntry {
        FileEntry {
            agent: Agent::Claude,
            compressed: false,
            dev: 1,
            ino,
            size: 100 * events.len() as u64,
            mtime_ns: 5,
            ctime_ns: 5,
            head_len: 10,
            head_hash: 11,
            offset: 100 * events.len() as u64,
            oversized: 0,
            unreadable: false,
            parse: FileParse {
                strings: vec![String::new(), "claude-x".into()],
                events: events.iter().map(|&ts| event(ts)).collect(),
                ..FileParse::default()
            },
            stored: Vec::new(),
            pending: None,
        }
    }

    fn two_files() -> Index {
        let mut index = Index::default();
        index.files.insert("/a".into(), entry(1, &[10, 20]));
        index.files.insert("/b".into(), entry(2, &[]));
        index
    }

    /// `index` saved fresh in `dir` and loaded back.
    fn saved(store: &Store, mut index: Index) -> (Index, Loaded) {
        store.save(&mut index, &[], Loaded::default()).unwrap();
        store.load()
    }

    #[test]
    fn a_first_save_compacts_and_loads_back_lazily() {
        let dir = Scratch::new("first");
        let store = Store::in_dir(&dir.0);
        let index = two_files();
        let (back, loaded) = saved(&store, index.clone());
        assert!(store.base.exists() && !store.journal.exists());
        assert_eq!(events_files(&dir).len(), 1);
        assert!(loaded.origin.extendable());
        // Loaded lazily: events stay in the events file until wanted.
        let a = &back.files["/a"];
        assert!(!a.is_loaded() && a.parse.events.is_empty());
        assert_eq!((a.stored.len(), a.stored_count()), (1, 2));
        assert!(back.files["/b"].stored.is_empty());
        assert_eq!(back.to_bytes(), index.to_bytes());
        let mut all = back.clone();
        all.materialize();
        assert_eq!(all.files["/a"].parse.events, index.files["/a"].parse.events);
    }

    #[test]
    fn a_change_appends_to_the_events_file_and_the_journal() {
        let dir = Scratch::new("append");
        let store = Store::in_dir(&dir.0);
        let (mut index, loaded) = saved(&store, two_files());
        let base = fs::read(&store.base).unwrap();
        let events = events_files(&dir);
        let events_len = fs::metadata(&events[0]).unwrap().len();
        // `/a` grew by one event, `/b` vanished, `/c` is new.
        let a = index.files.get_mut("/a").unwrap();
        assert!(a.materialize());
        a.parse.events.push(event(30));
        index.files.remove("/b");
        index.files.insert("/c".into(), entry(3, &[40]));
        store.save(&mut index, &["/a", "/b", "/c"], loaded).unwrap();
        assert_eq!(fs::read(&store.base).unwrap(), base, "the base is kept");
        assert!(store.journal.exists());
        assert_eq!(events_files(&dir), events, "the same events file");
        assert!(fs::metadata(&events[0]).unwrap().len() > events_len);
        // Only the new event was appended, as a second segment.
        assert_eq!(index.files["/a"].stored.len(), 2);
        let (back, loaded) = store.load();
        assert!(loaded.origin.journal_valid);
        assert_eq!(back.to_bytes(), index.to_bytes());
        assert_eq!(back.files.keys().collect::<Vec<_>>(), ["/a", "/c"]);
    }

    #[test]
    fn a_torn_journal_replays_its_intact_records_and_is_not_appended_to() {
        let dir = Scratch::new("torn");
        let store = Store::in_dir(&dir.0);
        let (mut index, loaded) = saved(&store, two_files());
        index.files.insert("/c".into(), entry(3, &[40]));
        store.save(&mut index, &["/c"], loaded).unwrap();
        let (mut index, loaded) = store.load();
        index.files.insert("/d".into(), entry(4, &[50]));
        store.save(&mut index, &["/d"], loaded).unwrap();
        let journal = fs::read(&store.journal).unwrap();
        fs::write(&store.journal, &journal[..journal.len() - 1]).unwrap();
        let (mut back, loaded) = store.load();
        assert_eq!(back.files.keys().collect::<Vec<_>>(), ["/a", "/b", "/c"]);
        assert!(!loaded.origin.journal_valid);
        // The next save compacts instead of appending after the tear.
        back.files.insert("/e".into(), entry(5, &[60]));
        store.save(&mut back, &["/e"], loaded).unwrap();
        assert!(!store.journal.exists());
        let (again, _) = store.load();
        assert_eq!(again.to_bytes(), back.to_bytes());
    }

    #[test]
    fn an_outgrown_journal_compacts_into_a_new_events_file_and_base() {
        let dir = Scratch::new("outgrown");
        let mut store = Store::in_dir(&dir.0);
        // No floor: the journal may hold a quarter of the base only.
        store.min_journal = 0;
        let (mut index, loaded) = saved(&store, two_files());
        let old_events = events_files(&dir);
        let old_journal = {
            // A journal of the old base, as a crash before its removal
            // would leave it.
            let mut copy = index.clone();
            copy.files.insert("/z".into(), entry(9, &[1]));
            let header = journal_header(&fs::metadata(&store.base).unwrap());
            let mut records = Vec::new();
            journal::frame(
                &codec::record_payload("/z", copy.files.get("/z")),
                &mut records,
            );
            let mut bytes = header;
            bytes.extend(records);
            bytes
        };
        let a = index.files.get_mut("/a").unwrap();
        assert!(a.materialize());
        a.parse.events.extend([event(30), event(31), event(32)]);
        index.files.insert("/c".into(), entry(3, &[40, 41, 42]));
        store.save(&mut index, &["/a", "/c"], loaded).unwrap();
        assert!(!store.journal.exists());
        let new_events = events_files(&dir);
        assert_eq!(new_events.len(), 1, "the old events file is removed");
        assert_ne!(new_events, old_events);
        assert!(index.files.values().all(|e| e.stored.len() <= 1));
        let (back, _) = store.load();
        assert_eq!(back.to_bytes(), index.to_bytes());
        // The old base's journal, put back, is not replayed over the new.
        fs::write(&store.journal, &old_journal).unwrap();
        let (back, loaded) = store.load();
        assert!(!back.files.contains_key("/z"));
        assert!(!loaded.origin.journal_valid);
    }

    #[test]
    fn dead_bytes_past_the_live_ones_compact() {
        let dir = Scratch::new("dead");
        let mut store = Store::in_dir(&dir.0);
        store.min_dead = 0;
        let (mut index, loaded) = saved(&store, two_files());
        let old_events = events_files(&dir);
        // `/a` reparsed: a fresh entry with other events of the same size,
        // so its old segment is dead and outweighs what is live.
        index.files.insert("/a".into(), entry(1, &[11, 21]));
        store.save(&mut index, &["/a"], loaded).unwrap();
        assert!(!store.journal.exists());
        assert_ne!(events_files(&dir), old_events);
        let (back, _) = store.load();
        assert_eq!(back.to_bytes(), index.to_bytes());
    }

    #[test]
    fn a_write_leaves_the_index_alone_until_it_is_adopted() {
        // A compaction of lazily loaded entries, one of them in two
        // segments: `write` only reads the index (it runs beside the
        // aggregation), and adopting what it wrote gives what `save` gives.
        let dir = Scratch::new("write-adopt");
        let mut store = Store::in_dir(&dir.0);
        let (mut index, loaded) = saved(&store, two_files());
        let a = index.files.get_mut("/a").unwrap();
        assert!(a.materialize());
        a.parse.events.push(event(30));
        store.save(&mut index, &["/a"], loaded).unwrap();
        let (lazy, loaded) = store.load();
        assert_eq!(lazy.files["/a"].stored.len(), 2);
        assert!(!lazy.files["/a"].is_loaded());
        store.min_journal = 0;
        let before = lazy.clone();
        let written = store.write(&lazy, &[], loaded).unwrap();
        assert_eq!(lazy, before, "write changes nothing in the index");
        assert!(!store.journal.exists(), "it compacted");
        let mut adopted = lazy;
        written.adopt(&mut adopted);
        let a = &adopted.files["/a"];
        assert!(!a.is_loaded(), "still lazy, in the new events file");
        assert_eq!((a.stored.len(), a.stored_count()), (1, 3));
        assert_eq!(adopted.to_bytes(), before.to_bytes());
        let (back, _) = store.load();
        assert_eq!(back.to_bytes(), before.to_bytes());
        let mut all = back;
        all.materialize();
        assert_eq!(all.files["/a"].parse.events.len(), 3);
    }

    #[test]
    fn damaged_files_are_refused() {
        let dir = Scratch::new("damage");
        let store = Store::in_dir(&dir.0);
        let index = two_files();
        saved(&store, index.clone());
        let base = fs::read(&store.base).unwrap();
        let events = events_files(&dir).remove(0);
        let events_bytes = fs::read(&events).unwrap();
        // A flipped byte in the events: that entry cannot be loaded and
        // drops out (to be reparsed); the others stay.
        let mut flipped = events_bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        fs::write(&events, &flipped).unwrap();
        let (mut back, _) = store.load();
        assert_eq!(back.files.len(), 2);
        back.materialize();
        assert_eq!(back.files.keys().collect::<Vec<_>>(), ["/b"]);
        // A damaged events header, a missing events file, a truncated or
        // flipped base: nothing is loaded.
        let mut header = events_bytes.clone();
        header[5] ^= 1;
        fs::write(&events, &header).unwrap();
        assert!(store.load().0.files.is_empty());
        fs::remove_file(&events).unwrap();
        assert!(store.load().0.files.is_empty());
        fs::write(&events, &events_bytes).unwrap();
        assert_eq!(store.load().0.files.len(), 2);
        for cut in [0, 8, base.len() / 2, base.len() - 1] {
            fs::write(&store.base, &base[..cut]).unwrap();
            assert!(store.load().0.files.is_empty(), "cut at {cut}");
        }
        let mut flipped = base.clone();
        flipped[30] ^= 0x10;
        fs::write(&store.base, &flipped).unwrap();
        assert!(store.load().0.files.is_empty());
    }
}

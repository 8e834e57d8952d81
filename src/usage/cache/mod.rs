//! The per-file cache that makes a warm refresh cost a `stat` per file.
//!
//! Each transcript's entry remembers its identity (device, inode), size,
//! mtime, a hash of its head, the offset after the last complete line, and
//! everything its lines contributed (events plus resumable parser state).
//! On refresh: unchanged → reused; grown with the same head → read from the
//! offset only; touched (same size and head) → reused; shrunk, replaced or
//! rewritten → reparsed; vanished or older than the window → dropped
//! without opening. Compressed archives are cold: decoded once, reused by
//! identity. How the index is stored is `usage::store::index`'s concern; the
//! entry encodings live here.

use std::collections::BTreeMap;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::usage::event::{Agent, CodexMeta, Event, EventKind, FileParse, fnv1a, hash_words};
use crate::usage::parse::scan;

/// Bump when the index layout changes (everything is reparsed).
pub const INDEX_VERSION: u32 = 4;
/// Bump when Claude/Codex line parsing changes (that agent is reparsed).
pub const CLAUDE_PARSER_VERSION: u32 = 1;
pub const CODEX_PARSER_VERSION: u32 = 1;
/// Bytes of a file's head hashed to detect replacement.
pub const HEAD_BYTES: usize = 4096;

const MAGIC: &[u8; 4] = b"HUIX";

/// One transcript's cached state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    pub agent: Agent,
    pub compressed: bool,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub head_len: u32,
    pub head_hash: u64,
    /// Resume offset (plain files): bytes of complete lines parsed.
    pub offset: u64,
    /// Lines skipped for length.
    pub oversized: u64,
    /// The last read failed (open/read/decode error).
    pub unreadable: bool,
    pub parse: FileParse,
    /// Where the index store keeps this entry's events: segments of its
    /// events file, oldest first (a refresh that appended to the transcript
    /// adds one). Empty for an entry never stored.
    pub stored: Vec<Segment>,
    /// The events file while `parse.events` is not loaded yet (lazy load):
    /// `parse.events` is empty until [`FileEntry::materialize`].
    pub(crate) pending: Option<EventsFile>,
}

/// A run of encoded events in an index events file: a self-contained
/// stream (timestamps delta-coded from zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub offset: u64,
    pub len: u32,
    pub count: u32,
    /// [`hash_words`] of the bytes: a damaged events file is never read
    /// as events.
    pub sum: u64,
}

/// An open events file, shared by the entries that point into it.
#[derive(Debug, Clone)]
pub struct EventsFile(pub std::sync::Arc<File>);

impl PartialEq for EventsFile {
    fn eq(&self, other: &EventsFile) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for EventsFile {}

impl EventsFile {
    /// The bytes of `segment`.
    pub fn read(&self, segment: Segment) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        // A damaged reference must not make us allocate what is not there.
        let end = segment.offset.checked_add(u64::from(segment.len))?;
        if end > self.0.metadata().ok()?.len() {
            return None;
        }
        let mut raw = vec![0u8; segment.len as usize];
        self.0.read_exact_at(&mut raw, segment.offset).ok()?;
        (hash_words(&raw) == segment.sum).then_some(raw)
    }
}

impl FileEntry {
    /// Loads lazily stored events; `false` when they are unreadable or
    /// corrupt (the entry must then be reparsed).
    pub fn materialize(&mut self) -> bool {
        let Some(file) = self.pending.take() else {
            return true;
        };
        let mut events = Vec::with_capacity(self.stored_count() as usize);
        for segment in &self.stored {
            match file
                .read(*segment)
                .and_then(|raw| decode_events(&raw, segment.count, self.parse.strings.len()))
            {
                Some(part) => events.extend(part),
                None => return false,
            }
        }
        self.parse.events = events;
        true
    }

    /// Events the stored segments hold.
    pub fn stored_count(&self) -> u64 {
        self.stored.iter().map(|s| u64::from(s.count)).sum()
    }

    /// Whether `parse.events` is loaded (else only `stored` has them).
    pub fn is_loaded(&self) -> bool {
        self.pending.is_none()
    }
}

/// All cached files, keyed by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    pub files: BTreeMap<String, FileEntry>,
}

/// A file found by discovery.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub path: PathBuf,
    pub agent: Agent,
    pub compressed: bool,
    /// Its metadata when discovery already read it (else `stat`ed here).
    pub meta: Option<Metadata>,
}

impl RefreshStats {
    /// Whether the index differs from what was loaded.
    pub fn changed(&self) -> bool {
        self.appended + self.reparsed + self.dropped + self.touched > 0
    }
}

/// What one refresh did (for coverage and the benchmark).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefreshStats {
    pub reused: u64,
    pub appended: u64,
    pub reparsed: u64,
    pub dropped: u64,
    pub skipped_old: u64,
    pub bytes_read: u64,
    /// Files whose mtime alone moved (reused, index updated).
    pub touched: u64,
    /// Stopped at the deadline with files left to read.
    pub partial: bool,
}

fn mtime_ns(meta: &Metadata) -> i64 {
    meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec()
}

fn head(path: &Path) -> io::Result<(u32, u64)> {
    let mut buf = vec![0u8; HEAD_BYTES];
    let mut file = File::open(path)?;
    let mut n = 0;
    while n < buf.len() {
        let read = file.read(&mut buf[n..])?;
        if read == 0 {
            break;
        }
        n += read;
    }
    Ok((n as u32, fnv1a(&[&buf[..n]])))
}

fn head_of_len(path: &Path, len: u32) -> io::Result<u64> {
    let mut buf = vec![0u8; len as usize];
    File::open(path)?.read_exact(&mut buf)?;
    Ok(fnv1a(&[&buf]))
}

fn parse_into(entry: &mut FileEntry, path: &Path) -> io::Result<u64> {
    let agent = entry.agent;
    let parse = &mut entry.parse;
    let on_line = |line: &[u8]| match agent {
        Agent::Claude => crate::usage::parse::claude::parse_line(parse, line),
        Agent::Codex => crate::usage::parse::codex::parse_line(parse, line),
    };
    let pass = if entry.compressed {
        scan::read_zstd(path, on_line)?
    } else {
        scan::read_plain(path, entry.offset, on_line)?
    };
    entry.offset += pass.consumed;
    entry.oversized += pass.oversized;
    Ok(pass.consumed)
}

fn fresh_entry(c: &Candidate, meta: &Metadata) -> FileEntry {
    FileEntry {
        agent: c.agent,
        compressed: c.compressed,
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        mtime_ns: mtime_ns(meta),
        head_len: 0,
        head_hash: 0,
        offset: 0,
        oversized: 0,
        unreadable: false,
        parse: FileParse::default(),
        stored: Vec::new(),
        pending: None,
    }
}

enum Plan {
    Reuse,
    Touch,
    Append,
    Reparse,
}

fn plan(old: &FileEntry, c: &Candidate, meta: &Metadata, path: &Path) -> Plan {
    let same_file = old.dev == meta.dev() && old.ino == meta.ino() && old.agent == c.agent;
    if same_file && old.size == meta.size() && old.mtime_ns == mtime_ns(meta) {
        return Plan::Reuse;
    }
    if !same_file || old.compressed || old.unreadable || meta.size() < old.size {
        return Plan::Reparse;
    }
    let head_same = head_of_len(path, old.head_len).ok() == Some(old.head_hash);
    match (head_same, meta.size() == old.size) {
        (false, _) => Plan::Reparse,
        (true, true) => Plan::Touch,
        (true, false) => Plan::Append,
    }
}

/// A file whose events may differ from the loaded index: its path (the
/// index key) and its previous entry (`None` for a new file). The new entry
/// is the index's (absent for a dropped file).
#[derive(Debug, Clone)]
pub struct Change {
    pub key: String,
    pub old: Option<FileEntry>,
}

/// Brings `index` up to date with `candidates`: files whose mtime is before
/// `window_start_ns` are dropped without being opened; work stops (leaving
/// the rest for the next run) once `deadline` passes.
pub fn refresh(
    index: &mut Index,
    candidates: &[Candidate],
    window_start_ns: i64,
    deadline: Option<Instant>,
) -> RefreshStats {
    refresh_tracked(
        index,
        candidates,
        window_start_ns,
        deadline,
        &mut Changes::default(),
    )
}

/// Entries a refresh changed.
#[derive(Debug, Default)]
pub struct Changes {
    /// Files whose events may differ (for incremental aggregation).
    pub files: Vec<Change>,
    /// Files whose entry changed but not their events (mtime only).
    pub touched: Vec<String>,
}

impl Changes {
    /// Every changed index key.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.files.iter().map(|c| c.key.clone()).collect();
        keys.extend(self.touched.iter().cloned());
        keys
    }
}

/// [`refresh`], also listing what changed in `changes`.
pub fn refresh_tracked(
    index: &mut Index,
    candidates: &[Candidate],
    window_start_ns: i64,
    deadline: Option<Instant>,
    changes: &mut Changes,
) -> RefreshStats {
    let mut stats = RefreshStats::default();
    // Candidates and entries are both in path order: one merge pass, with
    // unchanged entries left where they are (thousands of them; moving or
    // rehashing them would cost more than the rest of a quiet refresh).
    let mut wanted: Vec<(String, &Candidate)> = candidates
        .iter()
        .map(|c| (c.path.to_string_lossy().into_owned(), c))
        .collect();
    wanted.sort_by(|a, b| a.0.cmp(&b.0));
    wanted.dedup_by(|a, b| a.0 == b.0);
    let mut gone: Vec<String> = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    let mut entries = index.files.iter_mut().peekable();
    for (key, c) in wanted {
        while let Some((k, _)) = entries.next_if(|(k, _)| k.as_str() < key.as_str()) {
            gone.push(k.clone());
        }
        let existing = entries
            .next_if(|(k, _)| k.as_str() == key.as_str())
            .map(|(_, e)| e);
        let meta = match &c.meta {
            Some(meta) => meta.clone(),
            None => match std::fs::metadata(&c.path) {
                Ok(meta) => meta,
                Err(_) => {
                    if existing.is_some() {
                        gone.push(key);
                    }
                    continue;
                }
            },
        };
        if mtime_ns(&meta) < window_start_ns {
            stats.skipped_old += 1;
            if existing.is_some() {
                gone.push(key);
            }
            continue;
        }
        let Some(old) = existing else {
            stats.reparsed += 1;
            jobs.push(Job {
                key,
                path: c.path.clone(),
                entry: fresh_entry(c, &meta),
                meta,
                old: None,
                reparse: true,
            });
            continue;
        };
        let mut action = plan(old, c, &meta, &c.path);
        // Resuming needs the file's events loaded (lazy index load).
        if matches!(action, Plan::Append) && !old.materialize() {
            action = Plan::Reparse;
        }
        match action {
            Plan::Reuse => stats.reused += 1,
            Plan::Touch => {
                stats.reused += 1;
                stats.touched += 1;
                old.mtime_ns = mtime_ns(&meta);
                changes.touched.push(key);
            }
            Plan::Append => {
                stats.appended += 1;
                jobs.push(Job {
                    key,
                    path: c.path.clone(),
                    meta,
                    entry: old.clone(),
                    old: Some(old.clone()),
                    reparse: false,
                });
            }
            Plan::Reparse => {
                stats.reparsed += 1;
                jobs.push(Job {
                    key,
                    path: c.path.clone(),
                    entry: fresh_entry(c, &meta),
                    meta,
                    old: Some(old.clone()),
                    reparse: true,
                });
            }
        }
    }
    gone.extend(entries.map(|(k, _)| k.clone()));
    gone.sort();
    stats.dropped = gone.len() as u64;
    for key in gone {
        let old = index.files.remove(&key);
        changes.files.push(Change { key, old });
    }
    // Parse changed files on every core, biggest first, in interleaved shares.
    jobs.sort_by_key(|j| std::cmp::Reverse(j.meta.size()));
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 4)
        .min(jobs.len().max(1));
    let mut shares: Vec<Vec<Job>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, job) in jobs.into_iter().enumerate() {
        shares[i % threads].push(job);
    }
    let results: Vec<JobsDone> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .into_iter()
            .map(|share| scope.spawn(move || run_jobs(share, deadline)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for (entries, bytes, partial) in results {
        stats.bytes_read += bytes;
        stats.partial |= partial;
        for (key, entry, done) in entries {
            // A job that ran replaces the entry; one cut off by the
            // deadline leaves it as it was.
            if let Some(old) = done {
                match entry {
                    Some(entry) => index.files.insert(key.clone(), entry),
                    None => index.files.remove(&key),
                };
                changes.files.push(Change { key, old });
            }
        }
    }
    stats
}

/// Entries a thread produced (with the previous entry when the job ran),
/// bytes it read, whether it ran out of time.
type JobsDone = (
    Vec<(String, Option<FileEntry>, Option<Option<FileEntry>>)>,
    u64,
    bool,
);

struct Job {
    key: String,
    path: PathBuf,
    meta: Metadata,
    entry: FileEntry,
    old: Option<FileEntry>,
    reparse: bool,
}

fn run_jobs(jobs: Vec<Job>, deadline: Option<Instant>) -> JobsDone {
    let mut out = Vec::with_capacity(jobs.len());
    let (mut bytes, mut partial) = (0, false);
    for job in jobs {
        if deadline.is_some_and(|d| Instant::now() > d) {
            // Out of time: keep whatever we had for this file.
            partial = true;
            out.push((job.key, job.old, None));
            continue;
        }
        let Job {
            key,
            path,
            meta,
            mut entry,
            reparse,
            old,
        } = job;
        let result = (|| -> io::Result<u64> {
            if reparse {
                let (len, hash) = head(&path)?;
                entry.head_len = len;
                entry.head_hash = hash;
            }
            parse_into(&mut entry, &path)
        })();
        entry.size = meta.size();
        entry.mtime_ns = mtime_ns(&meta);
        entry.dev = meta.dev();
        entry.ino = meta.ino();
        match result {
            Ok(read) => {
                bytes += read;
                entry.unreadable = false;
            }
            Err(_) => {
                entry.unreadable = true;
                entry.parse = FileParse::default();
                entry.stored.clear();
                entry.offset = 0;
            }
        }
        out.push((key, Some(entry), Some(old)));
    }
    (out, bytes, partial)
}

// ---- binary layout --------------------------------------------------------

struct Out(Vec<u8>);

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn has_key(kind: EventKind) -> bool {
    matches!(kind, EventKind::Claude | EventKind::CodexRecord)
}

fn has_last(kind: EventKind) -> bool {
    matches!(kind, EventKind::CodexTotals | EventKind::CodexLast)
}

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend(v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend(v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend(v.to_le_bytes());
    }
    /// LEB128 unsigned varint.
    fn var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend(s.as_bytes());
    }
}

struct In<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> In<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn var(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    fn str(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
    fn count(&mut self, min_item: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        // Refuse counts the remaining bytes cannot hold (corrupt input).
        (n.checked_mul(min_item)? <= self.b.len() - self.at).then_some(n)
    }
}

impl Index {
    /// The index as one self-contained byte string (events inline): what
    /// two indexes are compared by, whatever their storage.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut o = Out(Vec::with_capacity(1 << 16));
        o.0.extend(MAGIC);
        o.u32(INDEX_VERSION);
        o.u32(CLAUDE_PARSER_VERSION);
        o.u32(CODEX_PARSER_VERSION);
        o.u32(self.files.len() as u32);
        for (path, e) in &self.files {
            encode_meta(&mut o, path, e);
            let mut loaded = e.clone();
            let events = if loaded.materialize() {
                loaded.parse.events
            } else {
                Vec::new()
            };
            let raw = encode_events(&events);
            o.u32(events.len() as u32);
            o.u32(raw.len() as u32);
            o.0.extend_from_slice(&raw);
        }
        o.0
    }

    /// Reads [`Index::to_bytes`]; corrupt or another layout → empty.
    pub fn from_bytes(bytes: &[u8]) -> Index {
        let decode = || -> Option<Index> {
            let mut r = In { b: bytes, at: 0 };
            let n = read_header(&mut r)?;
            let mut files = BTreeMap::new();
            for _ in 0..n.count {
                let (path, mut e) = decode_meta(&mut r)?;
                let count = r.u32()?;
                let len = r.u32()? as usize;
                e.parse.events = decode_events(r.take(len)?, count, e.parse.strings.len())?;
                if n.keeps(e.agent) {
                    files.insert(path, e);
                }
            }
            (r.at == bytes.len()).then_some(Index { files })
        };
        decode().unwrap_or_default()
    }

    /// Loads every lazily stored entry, dropping unreadable ones.
    pub fn materialize(&mut self) {
        self.files.retain(|_, e| e.materialize());
    }
}

/// What an index header says.
pub struct Header {
    pub count: usize,
    claude_ok: bool,
    codex_ok: bool,
}

impl Header {
    /// Whether entries of `agent` were parsed by the current parser.
    pub fn keeps(&self, agent: Agent) -> bool {
        match agent {
            Agent::Claude => self.claude_ok,
            Agent::Codex => self.codex_ok,
        }
    }
}

fn read_header(r: &mut In) -> Option<Header> {
    if r.take(4)? != MAGIC || r.u32()? != INDEX_VERSION {
        return None;
    }
    let claude_ok = r.u32()? == CLAUDE_PARSER_VERSION;
    let codex_ok = r.u32()? == CODEX_PARSER_VERSION;
    Some(Header {
        count: r.count(16)?,
        claude_ok,
        codex_ok,
    })
}

/// The layout the index store writes: entries with segment references
/// into an events file instead of inline events.
pub mod stored {
    use super::*;

    /// The base file's header for `count` entries.
    pub fn header(count: usize) -> Vec<u8> {
        let mut o = Out(Vec::with_capacity(20));
        o.0.extend(MAGIC);
        o.u32(INDEX_VERSION);
        o.u32(CLAUDE_PARSER_VERSION);
        o.u32(CODEX_PARSER_VERSION);
        o.u32(count as u32);
        o.0
    }

    /// One entry (metadata and segment list).
    pub fn entry(out: &mut Vec<u8>, path: &str, e: &FileEntry) {
        let mut o = Out(std::mem::take(out));
        encode_meta(&mut o, path, e);
        o.u32(e.stored.len() as u32);
        for s in &e.stored {
            o.u64(s.offset);
            o.u32(s.len);
            o.u32(s.count);
            o.u64(s.sum);
        }
        *out = o.0;
    }

    /// A reader over stored bytes.
    pub struct Reader<'a>(In<'a>);

    impl<'a> Reader<'a> {
        pub fn new(bytes: &'a [u8]) -> Reader<'a> {
            Reader(In { b: bytes, at: 0 })
        }
        pub fn header(&mut self) -> Option<Header> {
            read_header(&mut self.0)
        }
        pub fn u8(&mut self) -> Option<u8> {
            self.0.u8()
        }
        pub fn str(&mut self) -> Option<String> {
            self.0.str()
        }
        pub fn u64(&mut self) -> Option<u64> {
            self.0.u64()
        }
        pub fn at_end(&self) -> bool {
            self.0.at == self.0.b.len()
        }
        /// One entry, its events left in `file` until materialized.
        pub fn entry(&mut self, file: &EventsFile) -> Option<(String, FileEntry)> {
            let r = &mut self.0;
            let (path, mut e) = decode_meta(r)?;
            let n = r.count(24)?;
            for _ in 0..n {
                e.stored.push(Segment {
                    offset: r.u64()?,
                    len: r.u32()?,
                    count: r.u32()?,
                    sum: r.u64()?,
                });
            }
            e.pending = Some(file.clone());
            Some((path, e))
        }
    }

    /// `events` in the events file's encoding.
    pub fn events(events: &[Event]) -> Vec<u8> {
        encode_events(events)
    }
}

fn encode_meta(o: &mut Out, path: &str, e: &FileEntry) {
    o.str(path);
    o.u8(match e.agent {
        Agent::Claude => 0,
        Agent::Codex => 1,
    });
    o.u8(u8::from(e.compressed) | (u8::from(e.unreadable) << 1));
    o.u64(e.dev);
    o.u64(e.ino);
    o.u64(e.size);
    o.i64(e.mtime_ns);
    o.u32(e.head_len);
    o.u64(e.head_hash);
    o.u64(e.offset);
    o.u64(e.oversized);
    let p = &e.parse;
    o.u64(p.malformed);
    o.u32(p.strings.len() as u32);
    for s in &p.strings {
        o.str(s);
    }
    let m = &p.codex;
    o.str(&m.thread_id);
    o.str(&m.forked_from);
    o.u8(u8::from(m.subagent));
    o.i64(m.meta_ts);
    o.u32(m.model);
    o.u32(m.cwd);
    o.u32(m.tier);
    o.str(&m.rate_limits);
    o.i64(m.rate_limits_ts);
}

fn decode_meta(r: &mut In) -> Option<(String, FileEntry)> {
    let path = r.str()?;
    let agent = match r.u8()? {
        0 => Agent::Claude,
        1 => Agent::Codex,
        _ => return None,
    };
    let bits = r.u8()?;
    let mut e = FileEntry {
        agent,
        compressed: bits & 1 != 0,
        unreadable: bits & 2 != 0,
        dev: r.u64()?,
        ino: r.u64()?,
        size: r.u64()?,
        mtime_ns: r.i64()?,
        head_len: r.u32()?,
        head_hash: r.u64()?,
        offset: r.u64()?,
        oversized: r.u64()?,
        parse: FileParse::default(),
        stored: Vec::new(),
        pending: None,
    };
    e.parse.malformed = r.u64()?;
    let ns = r.count(4)?;
    e.parse.strings = (0..ns).map(|_| r.str()).collect::<Option<_>>()?;
    if e.parse.strings.first().map(String::as_str) != Some("") {
        return None;
    }
    e.parse.codex = CodexMeta {
        thread_id: r.str()?,
        forked_from: r.str()?,
        subagent: r.u8()? != 0,
        meta_ts: r.i64()?,
        model: r.u32()?,
        cwd: r.u32()?,
        tier: r.u32()?,
        rate_limits: r.str()?,
        rate_limits_ts: r.i64()?,
    };
    Some((path, e))
}

fn encode_events(events: &[Event]) -> Vec<u8> {
    let mut o = Out(Vec::with_capacity(events.len() * 40));
    let mut prev_ts = 0i64;
    for ev in events {
        // Compact: varints, timestamps as deltas, hashes and the `last`
        // counters only where the kind has them.
        o.u8(ev.kind.code());
        o.var(zigzag(ev.ts.wrapping_sub(prev_ts)));
        prev_ts = ev.ts;
        o.var(u64::from(ev.model));
        o.var(u64::from(ev.cwd));
        o.var(u64::from(ev.tier));
        o.u8(ev.flags);
        if has_key(ev.kind) {
            o.u64(ev.key);
        }
        if ev.kind == EventKind::Claude {
            o.u64(ev.group);
        }
        for n in ev.t {
            o.var(n);
        }
        if has_last(ev.kind) {
            for n in ev.last {
                o.var(n);
            }
        }
    }
    o.0
}

fn decode_events(raw: &[u8], count: u32, strings: usize) -> Option<Vec<Event>> {
    let mut r = In { b: raw, at: 0 };
    let count = count as usize;
    if count.checked_mul(12)? > raw.len() {
        return None;
    }
    let mut events = Vec::with_capacity(count);
    let mut prev_ts = 0i64;
    for _ in 0..count {
        let kind = EventKind::from_code(r.u8()?)?;
        let ts = prev_ts.wrapping_add(unzigzag(r.var()?));
        prev_ts = ts;
        let index = |v: u64| u32::try_from(v).ok().filter(|&i| (i as usize) < strings);
        let (model, cwd, tier) = (index(r.var()?)?, index(r.var()?)?, index(r.var()?)?);
        let flags = r.u8()?;
        let key = if has_key(kind) { r.u64()? } else { 0 };
        let group = if kind == EventKind::Claude {
            r.u64()?
        } else {
            0
        };
        let mut t = [0u64; 6];
        for n in &mut t {
            *n = r.var()?;
        }
        let mut last = [0u64; 6];
        if has_last(kind) {
            for n in &mut last {
                *n = r.var()?;
            }
        }
        events.push(Event {
            kind,
            ts,
            model,
            cwd,
            tier,
            flags,
            key,
            group,
            t,
            last,
        });
    }
    (r.at == raw.len()).then_some(events)
}

impl Index {
    /// A hash of every entry's identity and extent: what an aggregate kept
    /// beside the index (`usage::aggregate::incremental`) must match to be reused.
    pub fn fingerprint(&self) -> u64 {
        // Word at a time (thousands of entries, every refresh): a stable
        // multiply-xorshift mix, not a byte-wise hash of a serialisation.
        fn mix(h: u64, v: u64) -> u64 {
            let h = (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            h ^ (h >> 29)
        }
        let mut h = 0x6865_656c_6572_0001_u64;
        for (path, e) in &self.files {
            let bytes = path.as_bytes();
            h = mix(h, bytes.len() as u64);
            for chunk in bytes.chunks(8) {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                h = mix(h, u64::from_le_bytes(word));
            }
            for n in [
                u64::from(e.agent == Agent::Codex) | (u64::from(e.unreadable) << 1),
                e.dev,
                e.ino,
                e.size,
                e.mtime_ns as u64,
                e.head_hash,
                e.offset,
            ] {
                h = mix(h, n);
            }
        }
        h
    }
}

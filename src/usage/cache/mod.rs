//! The per-file cache that makes a warm refresh cost a `stat` per file.
//!
//! Each transcript's entry remembers its identity (device, inode), size,
//! mtime, a hash of its head, the offset after the last complete line, and
//! everything its lines contributed (events plus resumable parser state).
//! What a refresh does with each file — reuse, touch, append from the
//! offset, reparse, drop — is decided by [`plan::decide`] from values (the
//! rules are listed there); [`refresh_tracked`] is the loop that gathers
//! those values (`stat`, the head hash, the stored events), performs the
//! plans and parses the changed files on every core (work-stealing, biggest
//! first, merged in path order).
//!
//! The entries themselves ([`FileEntry`], [`Index`]) are the store's
//! (`usage::store::entry`, re-exported here), with their encodings and the
//! loading of stored events; the refresh only decides and parses.

pub mod plan;

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use crate::base::bytes::{byte_order, same_bytes};
use crate::base::sqlite;
use crate::usage::agents::Form;
use crate::usage::event::{Agent, Event, FileParse, fnv1a};
use crate::usage::parse::scan;
pub(crate) use crate::usage::store::entry::FileEntry;
pub use crate::usage::store::entry::{EventsFile, Index};
use plan::{Decision, Events, Facts, Head, Known, Plan, Stat};

/// Bytes of a file's head hashed to detect replacement.
pub(crate) const HEAD_BYTES: usize = 4096;

/// A file found by discovery.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub path: PathBuf,
    pub agent: Agent,
    pub compressed: bool,
    /// Its metadata when discovery already read it (else `stat`ed here).
    pub stat: Option<Stat>,
}

impl RefreshStats {
    /// Whether the index differs from what was loaded.
    pub fn changed(&self) -> bool {
        self.appended + self.reparsed + self.dropped > 0
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
    /// Stopped at the deadline with files left to read.
    pub partial: bool,
}

/// A modification or change time in nanoseconds, from its seconds and
/// nanoseconds.
fn time_ns(sec: i64, nsec: i64) -> i64 {
    sec.saturating_mul(1_000_000_000) + nsec
}

impl From<crate::base::sys::FileStat> for Stat {
    fn from(s: crate::base::sys::FileStat) -> Stat {
        Stat {
            dev: s.dev,
            ino: s.ino,
            size: s.size,
            mtime_ns: time_ns(s.mtime_sec, s.mtime_nsec),
            ctime_ns: time_ns(s.ctime_sec, s.ctime_nsec),
        }
    }
}

/// A database's stat as the refresh compares it: its `-wal` file's
/// size added to its own, and the later of their mtimes, with the WAL's
/// own mtime in place of the ctime (a commit appends to the WAL and
/// leaves the database file alone, a checkpoint writes the database).
pub(crate) fn with_wal(db: Stat, path: &Path) -> Stat {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    match std::fs::metadata(&wal) {
        Ok(meta) => {
            let wal = stat_of(&meta);
            Stat {
                size: db.size.saturating_add(wal.size),
                mtime_ns: db.mtime_ns.max(wal.mtime_ns),
                ctime_ns: wal.mtime_ns,
                ..db
            }
        }
        Err(_) => Stat { ctime_ns: 0, ..db },
    }
}

fn stat_of(meta: &Metadata) -> Stat {
    Stat {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        mtime_ns: time_ns(meta.mtime(), meta.mtime_nsec()),
        ctime_ns: time_ns(meta.ctime(), meta.ctime_nsec()),
    }
}

/// What the refresh decision needs of an entry.
fn known(e: &FileEntry) -> Known {
    Known {
        agent: e.agent,
        whole: e.compressed || e.agent.form() != Form::Lines,
        unreadable: e.unreadable,
        stat: Stat {
            dev: e.dev,
            ino: e.ino,
            size: e.size,
            mtime_ns: e.mtime_ns,
            ctime_ns: e.ctime_ns,
        },
        head_len: e.head_len,
        head_hash: e.head_hash,
    }
}

/// The length and hash of the first [`HEAD_BYTES`] of the file (or all of
/// a shorter one): what a later refresh compares to detect replacement.
/// Read at its offset, so the file can be read from the start after.
fn head(file: &File) -> io::Result<(u32, u64)> {
    let mut buf = [0u8; HEAD_BYTES];
    let mut n = 0;
    while n < buf.len() {
        let read = match file.read_at(&mut buf[n..], n as u64) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            read => read?,
        };
        if read == 0 {
            break;
        }
        n += read;
    }
    Ok((n as u32, fnv1a(&[&buf[..n]])))
}

/// The hash of the file's first `len` bytes now, as the decision wants it.
fn head_of_len(path: &Path, len: u32) -> Head {
    let mut buf = vec![0u8; len as usize];
    match File::open(path).and_then(|mut f| f.read_exact(&mut buf)) {
        Ok(()) => Head::Hash(fnv1a(&[&buf])),
        Err(_) => Head::Unreadable,
    }
}

/// The parser of `agent`'s lines, into `parse` (one closure type for every
/// read, so the line loop is compiled once).
fn line_parser(agent: Agent, parse: &mut FileParse) -> impl FnMut(&[u8]) + '_ {
    move |line: &[u8]| agent.parse_line(parse, line)
}

/// Runs `parse` on `entry` with `events`, a vector the thread keeps from
/// file to file, standing in for the entry's events, then gives the entry
/// an exact copy. A file's events grown in their own vector cost a chain of
/// reallocations, each a copy into fresh pages; this way each file's
/// events are allocated and copied once (a cold scan's page faults went
/// from 53,000 to 47,000).
fn gathering_events<T>(
    entry: &mut FileEntry,
    events: &mut Vec<Event>,
    parse: impl FnOnce(&mut FileEntry) -> T,
) -> T {
    events.clear();
    events.extend_from_slice(&entry.parse.events);
    std::mem::swap(events, &mut entry.parse.events);
    let out = parse(entry);
    std::mem::swap(events, &mut entry.parse.events);
    entry.parse.events.clear();
    entry.parse.events.extend_from_slice(events);
    out
}

fn parse_into(entry: &mut FileEntry, path: &Path, buffers: &mut scan::Buffers) -> io::Result<u64> {
    if !entry.compressed && scan::continues_a_counted_line(path, entry.offset)? {
        // The last line was counted without its newline, and what was
        // written after it is more of that line, not its end: the line is
        // no longer the object counted (`JSON.parse` refuses it), so the
        // file is read again from its start, as a rebuild reads it. The
        // events vector is kept (it is the thread's, see
        // `gathering_events`).
        let mut events = std::mem::take(&mut entry.parse.events);
        events.clear();
        entry.parse = FileParse::default();
        entry.parse.events = events;
        entry.stored.clear();
        entry.pending = None;
        entry.oversized = 0;
        return parse_fresh(entry, path, buffers);
    }
    let on_line = line_parser(entry.agent, &mut entry.parse);
    let pass = if entry.compressed {
        scan::read_zstd(path, buffers, on_line)?
    } else {
        scan::read_plain(path, entry.offset, buffers, on_line)?
    };
    entry.offset += pass.consumed;
    entry.oversized += pass.oversized;
    Ok(pass.consumed)
}

/// Parses a whole file into a fresh `entry` after recording its [`head`],
/// through one open of the file.
fn parse_fresh(entry: &mut FileEntry, path: &Path, buffers: &mut scan::Buffers) -> io::Result<u64> {
    let file = File::open(path)?;
    (entry.head_len, entry.head_hash) = head(&file)?;
    if entry.agent.begins() {
        // The time of the file read, not of the stat that chose it.
        let meta = file.metadata()?;
        let mtime_ns = time_ns(meta.mtime(), meta.mtime_nsec());
        entry.agent.begin(&mut entry.parse, path, mtime_ns);
    }
    if entry.agent.form() == Form::Database {
        let read = entry.agent.read_whole(&mut entry.parse, path);
        let read = read.map_err(|e| {
            let kind = match e {
                sqlite::Error::Busy => io::ErrorKind::WouldBlock,
                sqlite::Error::TimedOut | sqlite::Error::Refused(_) => io::ErrorKind::InvalidData,
            };
            io::Error::new(kind, e.to_string())
        })?;
        entry.offset = file.metadata()?.len();
        entry.oversized = 0;
        return Ok(read);
    }
    if entry.agent.form() == Form::Document {
        let (agent, parse) = (entry.agent, &mut entry.parse);
        let pass = scan::read_document(file, scan::MAX_DOCUMENT, buffers, |bytes| {
            agent.parse_document(parse, bytes)
        })?;
        entry.offset = pass.consumed;
        entry.oversized = pass.oversized;
        return Ok(pass.consumed);
    }
    let on_line = line_parser(entry.agent, &mut entry.parse);
    let pass = if entry.compressed {
        scan::zstd_lines(file, buffers, on_line)?
    } else {
        scan::for_each_line(file, buffers, on_line)?
    };
    entry.offset = pass.consumed;
    entry.oversized = pass.oversized;
    Ok(pass.consumed)
}

/// Lines of the file over the reader's cap: those skipped, and an
/// unterminated tail already at the cap (left unconsumed like any torn
/// line, it can only become an oversized one).
pub fn lines_oversized(e: &FileEntry) -> u64 {
    let tail = e.size.saturating_sub(e.offset);
    let whole = e.compressed || e.agent.form() != Form::Lines;
    let torn = !whole && !e.unreadable && tail >= scan::MAX_LINE as u64;
    e.oversized + u64::from(torn)
}

fn fresh_entry(c: &Candidate, now: Stat) -> FileEntry {
    FileEntry {
        agent: c.agent,
        compressed: c.compressed,
        dev: now.dev,
        ino: now.ino,
        size: now.size,
        mtime_ns: now.mtime_ns,
        ctime_ns: now.ctime_ns,
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

/// The plan for candidate `c`, whose entry is `existing`: asks
/// [`plan::decide`] and gathers each fact it asks for (the head hash, the
/// entry's stored events, loaded into the entry) until it decides.
fn plan_for(
    c: &Candidate,
    mut existing: Option<&mut FileEntry>,
    now: Option<Stat>,
    window_start_ns: i64,
) -> Plan {
    let old = existing.as_deref().map(known);
    let mut facts = Facts::stated(c.agent, now);
    loop {
        match plan::decide(old.as_ref(), &facts, window_start_ns) {
            Decision::Do(plan) => return plan,
            Decision::ReadHead { len } => facts.head = head_of_len(&c.path, len),
            Decision::LoadEvents => {
                let loaded = existing.as_deref_mut().is_some_and(|e| e.materialize());
                facts.events = if loaded {
                    Events::Loaded
                } else {
                    Events::Unreadable
                };
            }
        }
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
pub(crate) struct Changes {
    /// Files whose events may differ (for incremental aggregation).
    pub files: Vec<Change>,
}

impl Changes {
    /// Every changed index key.
    pub fn keys(&self) -> Vec<String> {
        self.files.iter().map(|c| c.key.clone()).collect()
    }
}

/// [`refresh`], also listing what changed in `changes`.
pub(crate) fn refresh_tracked(
    index: &mut Index,
    candidates: &[Candidate],
    window_start_ns: i64,
    deadline: Option<Instant>,
    changes: &mut Changes,
) -> RefreshStats {
    let options = RefreshOptions {
        since_ns: window_start_ns,
        first_since_ns: window_start_ns,
        deadline,
        threads: default_threads(),
    };
    refresh_threads(index, candidates, &options, changes)
}

/// How [`refresh_threads`] reads the candidates.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RefreshOptions {
    /// Files last modified before this (Unix nanoseconds) are too old.
    pub since_ns: i64,
    /// The files modified since this (the app's window, when more history
    /// is kept) are parsed before the older ones, so a deadline leaves
    /// history for the next run first.
    pub first_since_ns: i64,
    /// When parsing stops (the refresh is then partial).
    pub deadline: Option<Instant>,
    /// Parsing threads (the result is the same for any count; tests
    /// compare them).
    pub threads: usize,
}

/// [`refresh_tracked`] as `options` say.
pub(crate) fn refresh_threads(
    index: &mut Index,
    candidates: &[Candidate],
    options: &RefreshOptions,
    changes: &mut Changes,
) -> RefreshStats {
    let Sweep {
        mut stats,
        mut gone,
        jobs,
    } = Sweep::of(index, candidates, options.since_ns);
    gone.sort();
    stats.dropped = gone.len() as u64;
    for key in gone {
        let old = index.files.remove(&key);
        changes.files.push(Change { key, old });
    }
    let ran = parse_jobs(
        jobs,
        options.threads,
        options.deadline,
        options.first_since_ns,
    );
    stats.bytes_read += ran.bytes;
    stats.partial |= ran.partial;
    for (key, entry, old) in ran.done {
        match entry {
            Some(entry) => index.files.insert(key.clone(), entry),
            None => index.files.remove(&key),
        };
        changes.files.push(Change { key, old });
    }
    stats
}

/// What a refresh does to the index before parsing: the entries to drop
/// (in no order) and the files to parse, with the counts so far.
#[derive(Default)]
struct Sweep {
    stats: RefreshStats,
    gone: Vec<String>,
    jobs: Vec<Job>,
}

impl Sweep {
    /// Plans every candidate against its entry, if any.
    fn of(index: &mut Index, candidates: &[Candidate], window_start_ns: i64) -> Sweep {
        let mut sweep = Sweep::default();
        // Candidates and entries are both in path order: one merge pass,
        // with unchanged entries left where they are (thousands of them;
        // moving or rehashing them would cost more than the rest of a
        // quiet refresh).
        let mut entries = index.files.iter_mut().peekable();
        for (key, c) in sorted_keys(candidates) {
            // One comparison of each entry with the key: before it, gone;
            // equal, its entry.
            let mut existing = None;
            while let Some((k, _)) = entries.peek() {
                match byte_order(k.as_bytes(), key.as_bytes()) {
                    std::cmp::Ordering::Less => {
                        if let Some((k, _)) = entries.next() {
                            sweep.gone.push(k.clone());
                        }
                    }
                    std::cmp::Ordering::Equal => {
                        existing = entries.next().map(|(_, e)| e);
                        break;
                    }
                    std::cmp::Ordering::Greater => break,
                }
            }
            let now = c
                .stat
                .or_else(|| std::fs::metadata(&c.path).ok().as_ref().map(stat_of));
            let now = match c.agent.form() {
                Form::Database => now.map(|s| with_wal(s, &c.path)),
                _ => now,
            };
            let plan = plan_for(c, existing.as_deref_mut(), now, window_start_ns);
            sweep.take(plan, key, c, existing, now);
        }
        sweep.gone.extend(entries.map(|(k, _)| k.clone()));
        sweep
    }

    /// Records what `plan` says for candidate `c` (`key`), its entry
    /// `existing` and its stat `now`.
    fn take(
        &mut self,
        plan: Plan,
        key: std::borrow::Cow<str>,
        c: &Candidate,
        existing: Option<&mut FileEntry>,
        now: Option<Stat>,
    ) {
        match (plan, existing, now) {
            (Plan::Ignore, ..) => {}
            (Plan::TooOld, existing, _) => {
                self.stats.skipped_old += 1;
                if existing.is_some() {
                    self.gone.push(key.into_owned());
                }
            }
            (Plan::Reuse, ..) => self.stats.reused += 1,
            (Plan::Append, Some(old), Some(now)) => {
                self.stats.appended += 1;
                self.jobs.push(Job {
                    key: key.into_owned(),
                    path: c.path.clone(),
                    now,
                    entry: old.clone(),
                    old: Some(old.clone()),
                    reparse: false,
                });
            }
            (Plan::Parse, None, Some(now)) => {
                self.stats.reparsed += 1;
                self.jobs.push(Job::fresh(key.into_owned(), c, now, None));
            }
            (Plan::Reparse, Some(old), Some(now)) => {
                self.stats.reparsed += 1;
                self.jobs
                    .push(Job::fresh(key.into_owned(), c, now, Some(old.clone())));
            }
            // `Plan::Drop` (a vanished file), and any plan without the
            // entry or the stat it acts on, which the decision never makes.
            (_, existing, _) => {
                if existing.is_some() {
                    self.gone.push(key.into_owned());
                }
            }
        }
    }
}

/// The candidates in path order, once each, by their keys: borrowed from
/// the paths (a UTF-8 path is its key), so a quiet refresh allocates none
/// of its thousands.
fn sorted_keys(candidates: &[Candidate]) -> Vec<(std::borrow::Cow<'_, str>, &Candidate)> {
    let mut wanted: Vec<(std::borrow::Cow<str>, &Candidate)> = candidates
        .iter()
        .map(|c| match c.path.to_str() {
            // The plain check: a path that is not UTF-8 is rare, and the
            // lossy conversion checks much more slowly.
            Some(key) => (std::borrow::Cow::Borrowed(key), c),
            None => (c.path.to_string_lossy(), c),
        })
        .collect();
    wanted.sort_by(|a, b| byte_order(a.0.as_bytes(), b.0.as_bytes()));
    wanted.dedup_by(|a, b| same_bytes(a.0.as_bytes(), b.0.as_bytes()));
    wanted
}

/// Parsing threads for a refresh on this machine: every core, up to four
/// (each holds a line buffer; see `scan::LONG_LINE`).
pub(crate) fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 4)
}

/// What the parsing threads produced, in job order whatever thread ran
/// what: the entries of the jobs that ran (with each previous entry),
/// bytes read, whether the deadline cut any job off.
#[derive(Default)]
struct Parsed {
    done: Vec<(String, Option<FileEntry>, Option<FileEntry>)>,
    bytes: u64,
    partial: bool,
}

/// Where a job goes in the order the threads take them: files modified
/// since `first_since_ns` before older ones (a deadline then cuts history,
/// not the app's window), and within each the biggest file first (so a
/// thread that drew a big file does not hold the others up), then by key.
fn job_rank(
    key: &str,
    size: u64,
    mtime_ns: i64,
    first_since_ns: i64,
) -> (bool, std::cmp::Reverse<u64>, &str) {
    (mtime_ns < first_since_ns, std::cmp::Reverse(size), key)
}

/// Runs `jobs` on `threads` threads in [`job_rank`] order: each thread
/// takes the next job when it finishes one, and the results are put back
/// in path order, so the merge is the same for any thread count and any
/// timing.
fn parse_jobs(
    jobs: Vec<Job>,
    threads: usize,
    deadline: Option<Instant>,
    first_since_ns: i64,
) -> Parsed {
    // Jobs are large (an entry each): they are put in order by index and
    // moved once. Each job's place in path order is where its result goes.
    let mut by_path: Vec<usize> = (0..jobs.len()).collect();
    by_path.sort_by(|&a, &b| jobs[a].key.cmp(&jobs[b].key));
    let mut place = vec![0; jobs.len()];
    for (p, &j) in by_path.iter().enumerate() {
        place[j] = p;
    }
    let mut by_rank = by_path;
    by_rank.sort_by(|&a, &b| {
        let (a, b) = (&jobs[a], &jobs[b]);
        job_rank(&a.key, a.now.size, a.now.mtime_ns, first_since_ns).cmp(&job_rank(
            &b.key,
            b.now.size,
            b.now.mtime_ns,
            first_since_ns,
        ))
    });
    let count = jobs.len();
    let mut jobs: Vec<Option<Job>> = jobs.into_iter().map(Some).collect();
    let threads = threads.clamp(1, count.max(1));
    let slots: Vec<Mutex<Option<(usize, Job)>>> = by_rank
        .iter()
        .map(|&j| Mutex::new(jobs[j].take().map(|job| (place[j], job))))
        .collect();
    let next = AtomicUsize::new(0);
    let take = || {
        let i = next.fetch_add(1, Ordering::Relaxed);
        slots
            .get(i)
            .and_then(|slot| slot.lock().unwrap_or_else(PoisonError::into_inner).take())
    };
    let results: Vec<JobsDone> = if threads == 1 {
        vec![run_jobs(std::iter::from_fn(take), deadline)]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| scope.spawn(|| run_jobs(std::iter::from_fn(take), deadline)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        })
    };
    let mut parsed = Parsed::default();
    let mut in_place: Vec<Option<Ran>> = (0..count).map(|_| None).collect();
    for (entries, bytes, partial) in results {
        parsed.bytes += bytes;
        parsed.partial |= partial;
        for (place, ran) in entries {
            if let Some(slot) = in_place.get_mut(place) {
                *slot = Some(ran);
            }
        }
    }
    // A job that ran replaces the entry; one cut off by the deadline
    // leaves it as it was.
    parsed.done = in_place
        .into_iter()
        .flatten()
        .filter_map(|(key, entry, done)| done.map(|old| (key, entry, old)))
        .collect();
    parsed
}

/// Entries a thread produced (with the previous entry when the job ran),
/// bytes it read, whether it ran out of time.
type JobsDone = (Vec<(usize, Ran)>, u64, bool);

/// A job's key, its entry after the job, and the previous entry when the
/// job ran (`None` when the deadline cut it off).
type Ran = (String, Option<FileEntry>, Option<Option<FileEntry>>);

/// A file to read: from its entry's offset (`reparse` false) or from the
/// start into a fresh entry.
struct Job {
    key: String,
    path: PathBuf,
    /// What `stat` said when the plan was made (recorded in the entry).
    now: Stat,
    entry: FileEntry,
    old: Option<FileEntry>,
    reparse: bool,
}

impl Job {
    /// A job parsing `c` from the start into a fresh entry.
    fn fresh(key: String, c: &Candidate, now: Stat, old: Option<FileEntry>) -> Job {
        Job {
            key,
            path: c.path.clone(),
            entry: fresh_entry(c, now),
            now,
            old,
            reparse: true,
        }
    }
}

/// Runs the jobs `jobs` hands out, each with its place in the merge.
fn run_jobs(jobs: impl Iterator<Item = (usize, Job)>, deadline: Option<Instant>) -> JobsDone {
    let mut out = Vec::new();
    // One set of read buffers for every file this thread parses.
    let mut buffers = scan::Buffers::new();
    let mut events = Vec::new();
    let (mut bytes, mut partial) = (0, false);
    for (place, job) in jobs {
        if deadline.is_some_and(|d| Instant::now() > d) {
            // Out of time: keep whatever we had for this file.
            partial = true;
            out.push((place, (job.key, job.old, None)));
            continue;
        }
        let Job {
            key,
            path,
            now,
            mut entry,
            reparse,
            old,
        } = job;
        let result = gathering_events(&mut entry, &mut events, |entry| {
            if reparse {
                parse_fresh(entry, &path, &mut buffers)
            } else {
                parse_into(entry, &path, &mut buffers)
            }
        });
        if result
            .as_ref()
            .is_err_and(|e| e.kind() == io::ErrorKind::WouldBlock)
        {
            // A database its writer held locked: kept as it was, and read
            // on a later refresh (the entry's stat is the old one).
            partial = true;
            out.push((place, (key, old, None)));
            continue;
        }
        entry.size = now.size;
        entry.mtime_ns = now.mtime_ns;
        entry.ctime_ns = now.ctime_ns;
        entry.dev = now.dev;
        entry.ino = now.ino;
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
        out.push((place, (key, Some(entry), Some(old))));
    }
    (out, bytes, partial)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_window_s_files_are_parsed_before_older_history_biggest_first() {
        // (key, size, mtime in ns); the window starts at 1,000.
        let jobs = [
            ("a-old-big", 900, 10),
            ("b-new-small", 5, 2_000),
            ("c-old-small", 1, 20),
            ("d-new-big", 50, 1_000),
            ("e-new-big", 50, 3_000),
        ];
        let order = |since: i64| {
            let mut order = jobs.to_vec();
            order.sort_by(|a, b| {
                job_rank(a.0, a.1, a.2, since).cmp(&job_rank(b.0, b.1, b.2, since))
            });
            order.iter().map(|j| j.0).collect::<Vec<&str>>()
        };
        assert_eq!(
            order(1_000),
            [
                "d-new-big",
                "e-new-big",
                "b-new-small",
                "a-old-big",
                "c-old-small"
            ]
        );
        // With the window at the history's start, the order is by size.
        assert_eq!(
            order(0),
            [
                "a-old-big",
                "d-new-big",
                "e-new-big",
                "b-new-small",
                "c-old-small"
            ]
        );
    }

    #[test]
    fn a_fresh_parse_records_the_head_of_the_file() {
        let dir = crate::base::scratch::ScratchDir::new("cache-head");
        let line = r#"{"type":"assistant","message":{"content":"words"}}"#;
        let text = |n: usize| format!("{line}\n").repeat(n);
        let packed = |t: &str| {
            ruzstd::encoding::compress_to_vec(
                t.as_bytes(),
                ruzstd::encoding::CompressionLevel::Fastest,
            )
        };
        let cases: Vec<(&str, bool, Vec<u8>)> = vec![
            ("empty.jsonl", false, Vec::new()),
            ("small.jsonl", false, text(3).into_bytes()),
            ("torn.jsonl", false, [text(2).as_bytes(), b"{\"ty"].concat()),
            ("large.jsonl", false, text(500).into_bytes()),
            ("small.jsonl.zst", true, packed(&text(3))),
            ("large.jsonl.zst", true, packed(&text(5000))),
            (
                "bad.jsonl.zst",
                true,
                b"\x28\xb5\x2f\xfdnot really zstd".to_vec(),
            ),
            ("worse.jsonl.zst", true, vec![7u8; 9000]),
        ];
        for (name, compressed, bytes) in cases {
            let path = dir.join(name);
            std::fs::write(&path, &bytes).unwrap();
            let c = Candidate {
                path: path.clone(),
                agent: Agent::Claude,
                compressed,
                stat: None,
            };
            let stat = Stat {
                dev: 1,
                ino: 2,
                size: bytes.len() as u64,
                mtime_ns: 0,
                ctime_ns: 0,
            };
            let mut e = fresh_entry(&c, stat);
            let parsed = parse_fresh(&mut e, &path, &mut scan::Buffers::new());
            // The file's first 4 KiB (or all of it), whatever the parse did.
            let first = &bytes[..bytes.len().min(HEAD_BYTES)];
            let want = (first.len() as u32, fnv1a(&[first]));
            assert_eq!((e.head_len, e.head_hash), want, "{name}");
            let lines = bytes.len() > 20 && !name.starts_with("bad") && !name.starts_with("worse");
            assert_eq!(
                parsed.is_ok(),
                !name.starts_with("bad") && !name.starts_with("worse"),
                "{name}"
            );
            if lines && !compressed {
                assert_eq!(
                    e.offset as usize,
                    bytes.len() - usize::from(name == "torn.jsonl") * 4
                );
            }
        }
        assert!(
            parse_fresh(
                &mut fresh_entry(
                    &Candidate {
                        path: dir.join("missing"),
                        agent: Agent::Codex,
                        compressed: false,
                        stat: None,
                    },
                    Stat {
                        dev: 0,
                        ino: 0,
                        size: 0,
                        mtime_ns: 0,
                        ctime_ns: 0
                    }
                ),
                &dir.join("missing"),
                &mut scan::Buffers::new()
            )
            .is_err()
        );
    }

    #[test]
    fn an_unterminated_tail_at_the_cap_is_an_oversized_line() {
        let c = Candidate {
            path: PathBuf::from("/x.jsonl"),
            agent: Agent::Codex,
            compressed: false,
            stat: None,
        };
        let stat = Stat {
            dev: 1,
            ino: 2,
            size: 0,
            mtime_ns: 0,
            ctime_ns: 0,
        };
        let mut e = fresh_entry(&c, stat);
        let cap = scan::MAX_LINE as u64;
        (e.size, e.offset, e.oversized) = (10 + cap - 1, 10, 2);
        assert_eq!(lines_oversized(&e), 2, "a torn line under the cap");
        e.size = 10 + cap;
        assert_eq!(lines_oversized(&e), 3, "a torn line at the cap");
        e.unreadable = true;
        assert_eq!(lines_oversized(&e), 2, "an unreadable file has no tail");
        e.unreadable = false;
        e.compressed = true;
        assert_eq!(lines_oversized(&e), 2, "archives count decoded bytes");
    }
}

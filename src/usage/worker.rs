//! `heeler usage worker`: the background refresh a query starts.
//!
//! One instance at a time (`flock` on `worker.lock`), it finds transcripts
//! (`usage::discover`, while this thread loads the cache), brings the
//! per-file cache up to date ([`refresh_index`]), writes the index
//! (`usage::store::index`) on one thread while the other updates the
//! aggregate incrementally or rebuilds it ([`summarize`]) and writes it
//! (`usage::store::state`), and then `snapshot-v1.json`, probes
//! limits when due, records its status and exits. A cold backfill stops at
//! a time budget, persists its progress and marks the snapshot partial so
//! the next query starts another run.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::base::atomic_file;
use crate::base::json::{self, Object, Value};
use crate::base::tz::{self, Zone};
use crate::usage::aggregate;
use crate::usage::aggregate::incremental::State;
use crate::usage::cache::{self, Index};
use crate::usage::event::Agent;
use crate::usage::paths::{self, UsageDir};
use crate::usage::pricing::PriceTable;
use crate::usage::report::{self, AgentCoverage, Snapshot};
use crate::usage::store::index::Store;
use crate::usage::store::state::StateStore;

pub(crate) use crate::usage::discover::Discovery;
pub use crate::usage::discover::{Roots, discover};

/// How far back transcripts matter: 30 days plus margins for the widest
/// zone offsets and for a snapshot that ages before the next refresh.
pub const WINDOW_SECONDS: i64 = 32 * 86_400;

/// The outcome of one scan (also used by the benchmark).
#[derive(Debug, Clone)]
pub struct ScanResult {
    pub snapshot: Snapshot,
    pub stats: cache::RefreshStats,
    /// Whether the previous aggregate was reused or updated rather than
    /// rebuilt from every cached event.
    pub incremental: bool,
    /// Index keys whose entries changed (what the index journal records).
    pub changed_keys: Vec<String>,
}

fn root_list(roots: &[PathBuf]) -> Vec<String> {
    roots
        .iter()
        .map(|r| r.to_string_lossy().into_owned())
        .collect()
}

/// Refreshes `index` from `roots` and aggregates a snapshot at `now`
/// (from scratch: no incremental state).
pub fn scan(
    index: &mut Index,
    roots: &Roots,
    prices: &PriceTable,
    now: i64,
    deadline: Option<Instant>,
) -> ScanResult {
    let found = discover(roots);
    let options = ScanOptions {
        deadline,
        ..ScanOptions::new(prices, now)
    };
    scan_with_state(index, &mut None, roots, found, &options)
}

/// The first slot of the window at `now` (slot-aligned, so a slot is in
/// the window exactly when its requests are).
pub fn window_start(now: i64) -> i64 {
    (now - WINDOW_SECONDS).div_euclid(aggregate::SLOT) * aggregate::SLOT
}

/// The days of [`WINDOW_SECONDS`] the app's query answers.
pub const WINDOW_DAYS: i64 = crate::usage::report::DAYS;

/// The first slot the cache keeps at `now` for `retention_days` of
/// history (`usage.toml`): the same margins as [`window_start`], so 30
/// days of retention is the app's window exactly.
pub fn history_start(now: i64, retention_days: i64) -> i64 {
    let extra = retention_days.max(WINDOW_DAYS) - WINDOW_DAYS;
    window_start(now) - extra * 86_400
}

/// How a scan runs besides what it scans: the prices, the time, when a
/// cold backfill stops, the parsing threads and the history kept.
#[derive(Debug, Clone, Copy)]
pub struct ScanOptions<'a> {
    pub prices: &'a PriceTable,
    pub now: i64,
    /// When a cold backfill stops and persists its progress.
    pub deadline: Option<Instant>,
    /// Parsing threads (any count gives the same result; tests compare one
    /// with several).
    pub threads: usize,
    /// Days of history kept in the index and the aggregate
    /// ([`history_start`]); the snapshot (what the app's query reads) still
    /// covers the app's window only: its coverage counts the files and
    /// slots of [`window_start`] on, whatever the retention.
    pub retention_days: i64,
}

impl<'a> ScanOptions<'a> {
    /// A scan at `now` priced by `prices`, with no deadline, this machine's
    /// parsing threads and the app's window of history.
    pub fn new(prices: &'a PriceTable, now: i64) -> Self {
        ScanOptions {
            prices,
            now,
            deadline: None,
            threads: cache::default_threads(),
            retention_days: WINDOW_DAYS,
        }
    }
}

/// [`scan`] over `found` (what [`discover`] found under `roots`) that
/// updates `state` (the aggregate kept beside the index) incrementally
/// when it matches `index`, and rebuilds it otherwise (a refresh that
/// found nothing new applies no change: as cheap as reusing the last
/// snapshot, and its slots come out right for the new window).
pub fn scan_with_state(
    index: &mut Index,
    state: &mut Option<State>,
    roots: &Roots,
    found: Discovery,
    options: &ScanOptions,
) -> ScanResult {
    let loaded = state.as_ref().map(|_| index.fingerprint());
    let refreshed = refresh_index(index, state, loaded, &found, options);
    summarize(index, state, refreshed, roots, &found, options.prices)
}

/// What [`refresh_index`] did, for [`summarize`] to finish.
#[derive(Debug)]
pub(crate) struct Refreshed {
    pub stats: cache::RefreshStats,
    /// Whether `state` was brought up to date incrementally (else
    /// [`summarize`] rebuilds it from the index).
    pub incremental: bool,
    /// Index keys whose entries changed (what the index journal records).
    pub changed_keys: Vec<String>,
    now: i64,
    since: i64,
    window: i64,
}

/// The first half of [`scan_with_state`], the one that changes the index:
/// brings `index` up to date with `found` and `state` with the index when
/// that can be done incrementally (every entry is loaded otherwise, so
/// that [`summarize`], which only reads the index, can rebuild the state
/// while the index is written). `loaded` is the index's fingerprint as it
/// was loaded, when there is a state (worked out while the transcripts
/// are walked).
pub(crate) fn refresh_index(
    index: &mut Index,
    state: &mut Option<State>,
    loaded: Option<u64>,
    found: &Discovery,
    options: &ScanOptions,
) -> Refreshed {
    let now = options.now;
    let since = history_start(now, options.retention_days);
    let window = window_start(now);
    let candidates = &found.candidates;
    let trace = Trace::new();
    let refresh = cache::RefreshOptions {
        since_ns: since.saturating_mul(1_000_000_000),
        first_since_ns: window.saturating_mul(1_000_000_000),
        deadline: options.deadline,
        threads: options.threads,
    };
    let mut changes = cache::Changes::default();
    let mut stats = cache::refresh_threads(index, candidates, &refresh, &mut changes);
    trace.mark("  stat and read changed files");
    let incremental = match (state.as_mut(), loaded) {
        (Some(s), Some(before)) => {
            s.apply(before, index, &mut changes.files, options.prices, since)
        }
        _ => false,
    };
    let mut changed_keys = changes.keys();
    drop(changes);
    if !incremental {
        // An entry whose stored events cannot be read (a damaged events
        // file) is dropped and its file read again now, as a new one.
        let before: Vec<String> = index.files.keys().cloned().collect();
        index.materialize();
        if index.files.len() < before.len() {
            changed_keys.extend(before.into_iter().filter(|k| !index.files.contains_key(k)));
            let mut again = cache::Changes::default();
            let more = cache::refresh_threads(index, candidates, &refresh, &mut again);
            stats.reparsed += more.reparsed;
            stats.bytes_read += more.bytes_read;
            stats.partial |= more.partial;
            changed_keys.extend(again.keys());
            index.materialize();
        }
    }
    trace.mark("  update the aggregate, or load every entry");
    Refreshed {
        stats,
        incremental,
        changed_keys,
        now,
        since,
        window,
    }
}

/// The second half of [`scan_with_state`], which only reads the index:
/// rebuilds `state` from it unless [`refresh_index`] updated it, and sums
/// the app's window into the snapshot with its coverage.
pub(crate) fn summarize(
    index: &Index,
    state: &mut Option<State>,
    refreshed: Refreshed,
    roots: &Roots,
    found: &Discovery,
    prices: &PriceTable,
) -> ScanResult {
    let (stats, window) = (refreshed.stats, refreshed.window);
    let trace = Trace::new();
    if !refreshed.incremental {
        *state = Some(State::full(index, prices, refreshed.since));
    }
    trace.mark("  aggregate");
    let mut agg = flatten_window(state, index, prices, refreshed.since, window);
    let empty = aggregate::Detailed::default();
    let detailed = state.as_ref().map_or(&empty, |s| &s.detailed);
    // The files in the app's window: what a cache of that window alone
    // would index.
    let window_ns = window.saturating_mul(1_000_000_000);
    [
        agg.duplicates_claude,
        agg.duplicates_codex,
        agg.forks_unresolved,
    ] = detailed.counters_of(
        index
            .files
            .iter()
            .filter(|(_, e)| e.mtime_ns >= window_ns)
            .map(|(k, _)| crate::usage::store::owners::owner_of(k)),
    );
    let coverage = coverage_of(index, &agg, roots, found, window_ns, stats.partial);
    trace.mark("  flatten and coverage");
    ScanResult {
        snapshot: Snapshot {
            generated_at: refreshed.now,
            partial: stats.partial,
            pricing: prices.meta.clone(),
            coverage,
            aggregate: state.as_ref().map_or(0, |s| s.fingerprint),
            slots: agg.slots,
        },
        stats,
        incremental: refreshed.incremental,
        changed_keys: refreshed.changed_keys,
    }
}

/// The state's slots in the app's window (from `window` on), flattened;
/// slots the state left undecoded are read from the window's first block
/// on, not decoded into a map. A state whose slots cannot be read (a
/// damaged block) is rebuilt from `index` first.
fn flatten_window(
    state: &mut Option<State>,
    index: &Index,
    prices: &PriceTable,
    since: i64,
    window: i64,
) -> aggregate::Aggregate {
    if let Some(s) = state.as_mut() {
        let mut agg = aggregate::flat_counters(&s.detailed);
        let read = s.read_slots_from(window).and_then(|()| {
            s.visit_slots_from(window, |key, acc| {
                aggregate::flatten_into(&mut agg, key, acc);
            })
        });
        if read.is_some() {
            return agg;
        }
        *state = Some(State::full(index, prices, since));
    }
    let empty = aggregate::Detailed::default();
    aggregate::flatten_since(state.as_ref().map_or(&empty, |s| &s.detailed), window)
}

/// The snapshot's coverage: for each agent, what was searched and read
/// of the files in the app's window (modified at `window_ns` or later),
/// with the counters and spans of `agg`.
fn coverage_of(
    index: &Index,
    agg: &aggregate::Aggregate,
    roots: &Roots,
    found: &Discovery,
    window_ns: i64,
    partial: bool,
) -> Value {
    let candidates = &found.candidates;
    let in_window = |e: &&cache::FileEntry| e.mtime_ns >= window_ns;
    let seen = |agent: Agent| candidates.iter().filter(|c| c.agent == agent).count() as u64;
    let entries = |agent: Agent| {
        index
            .files
            .values()
            .filter(move |e| e.agent == agent)
            .filter(in_window)
    };
    let unreadable = |agent: Agent, compressed: bool| {
        entries(agent)
            .filter(|e| e.unreadable && e.compressed == compressed)
            .count() as u64
    };
    let of = |agent: Agent, roots: &[PathBuf], duplicates: u64, span: (i64, i64)| AgentCoverage {
        roots: root_list(roots),
        files_seen: seen(agent),
        files_in_window: entries(agent).count() as u64,
        files_compressed: entries(agent).filter(|e| e.compressed).count() as u64,
        files_compressed_skipped: unreadable(agent, true),
        files_unreadable: unreadable(agent, false),
        dirs_unreadable: found.dirs_unreadable(agent),
        lines_malformed: entries(agent).map(|e| e.parse.malformed).sum(),
        lines_oversized: entries(agent).map(cache::lines_oversized).sum(),
        duplicates_dropped: duplicates,
        forks_unresolved: 0,
        span: (span.0 != 0).then_some(span),
    };
    // Claude Code and Codex always (the app's document names them); every
    // other agent when one of its roots exists.
    let covered: Vec<(Agent, AgentCoverage)> = crate::usage::agents::ALL
        .into_iter()
        .filter(|&a| a.always_shown() || !roots.of(a).is_empty())
        .map(|a| {
            let c = of(a, roots.of(a), agg.duplicates(a), agg.span(a));
            let forks_unresolved = if a == Agent::Codex {
                agg.forks_unresolved
            } else {
                0
            };
            let c = AgentCoverage {
                forks_unresolved,
                ..c
            };
            (a, c)
        })
        .collect();
    report::coverage(&covered, partial)
}

/// Why the worker failed (recorded in the status file).
#[derive(Debug)]
pub enum WorkerError {
    Io(&'static str, io::Error),
    Pricing,
}

impl std::fmt::Display for WorkerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerError::Io(what, e) => write!(f, "{what}: {e}"),
            WorkerError::Pricing => write!(f, "the bundled price table does not load"),
        }
    }
}

impl std::error::Error for WorkerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorkerError::Io(_, e) => Some(e),
            WorkerError::Pricing => None,
        }
    }
}

/// Opens the lock file and takes the lock; `None` when another worker
/// holds it.
pub(crate) fn take_lock(dir: &UsageDir) -> io::Result<Option<File>> {
    let file = open_private(
        OpenOptions::new().create(true).truncate(false).write(true),
        &dir.lock(),
    )?;
    for _ in 0..5 {
        if crate::base::sys::try_lock_exclusive(&file)? {
            return Ok(Some(file));
        }
        // A query may be testing the lock this very moment.
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(None)
}

/// Opens a file of the usage dir as 0600, whatever the umask, tightening
/// one an earlier version left readable to others (the log names paths and
/// errors, the lock is nobody else's business).
fn open_private(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let (file, _) = crate::base::state_file::open_with(options.mode(0o600), path)?;
    if file.metadata()?.permissions().mode() & 0o777 != 0o600 {
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// Whether a worker holds the lock right now.
pub fn is_running(dir: &UsageDir) -> bool {
    let Ok((file, _)) =
        crate::base::state_file::open_with(OpenOptions::new().write(true), &dir.lock())
    else {
        return false;
    };
    matches!(crate::base::sys::try_lock_exclusive(&file), Ok(false))
}

// Unsynced like the cache: a crash can only leave an older status, and two
// `fsync`s for each write would cost a refresh more than its status is worth.
fn write_status(dir: &UsageDir, status: &Object) -> io::Result<()> {
    atomic_file::write_unsynced(
        &dir.status(),
        Value::Object(status.clone()).to_json().as_bytes(),
        0o600,
    )
}

/// The worker's time budget when `HEELER_USAGE_BUDGET_MS` is unset or not
/// a number of milliseconds.
pub(crate) const DEFAULT_BUDGET: Duration = Duration::from_secs(20);

/// The worker's time budget from the value of `HEELER_USAGE_BUDGET_MS`.
pub(crate) fn budget_from(value: Option<&str>) -> Duration {
    value
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_BUDGET)
}

/// The worker's time budget in this process's environment.
fn budget() -> Duration {
    budget_from(std::env::var("HEELER_USAGE_BUDGET_MS").ok().as_deref())
}

/// The status record as a run starts: the previous record (whatever it
/// was) with this run's start.
pub(crate) fn status_at_start(previous: Option<&Value>, started_at: i64) -> Object {
    let mut status = previous
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    status.insert("started_at", Value::from(started_at));
    status
}

/// The status record as a run ends: a success clears `last_error` and
/// moves `last_success_at` to the run's start; a failure records its
/// error and keeps the last success.
pub(crate) fn status_at_finish(
    mut status: Object,
    started_at: i64,
    finished_at: i64,
    outcome: Result<(), String>,
) -> Object {
    status.insert("finished_at", Value::from(finished_at));
    match outcome {
        Ok(()) => {
            status.insert("last_success_at", Value::from(started_at));
            status.insert("last_error", Value::Null);
        }
        Err(error) => {
            status.insert("last_error", Value::from(error));
        }
    }
    status
}

/// Runs one refresh. Returns `Ok(false)` when another worker is running.
pub(crate) fn run_once(dir: &UsageDir) -> Result<bool, WorkerError> {
    atomic_file::create_dir_all(&dir.0, 0o700).map_err(|e| WorkerError::Io("usage dir", e))?;
    let Some(_lock) = take_lock(dir).map_err(|e| WorkerError::Io(paths::LOCK, e))? else {
        return Ok(false);
    };
    let started = crate::base::clock::unix_seconds();
    let status = status_at_start(json::read_file(&dir.status()).as_ref(), started);
    let _ = write_status(dir, &status);
    let result = refresh_with_lock(dir, started);
    let status = status_at_finish(
        status,
        started,
        crate::base::clock::unix_seconds(),
        result.as_ref().map(|_| ()).map_err(ToString::to_string),
    );
    let _ = write_status(dir, &status);
    result.map(|()| true)
}

/// Which cache files a refresh writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Persist {
    pub index: bool,
    pub aggregate: bool,
}

/// The index is written when a file changed or there was no index yet. A
/// rebuilt aggregate is kept even when no file changed (it was missing or
/// stale), so the next change can be incremental.
pub(crate) fn persist_plan(files_changed: bool, had_index: bool, incremental: bool) -> Persist {
    let index = files_changed || !had_index;
    Persist {
        index,
        aggregate: index || !incremental,
    }
}

fn refresh_with_lock(dir: &UsageDir, now: i64) -> Result<(), WorkerError> {
    let prices = PriceTable::bundled().map_err(|_| WorkerError::Pricing)?;
    let runtime = crate::usage::runtime::read(dir);
    let roots = Roots::from_env(runtime.as_ref());
    // A setting the views cannot use is theirs to report: the worker
    // keeps the default, so the app's answers go on.
    let retention = match crate::usage::config::from_env() {
        Ok(config) => config.retention_days,
        Err(e) => {
            eprintln!(
                "{e}; keeping {} days",
                crate::usage::config::DEFAULT_RETENTION_DAYS
            );
            crate::usage::config::DEFAULT_RETENTION_DAYS
        }
    };
    let pass = Pass {
        roots: &roots,
        prices: &prices,
        retention_days: retention,
        now,
        deadline: Some(Instant::now() + budget()),
    };
    let refreshed = refresh_cache(dir, &pass)?;
    let trace = Trace::new();
    crate::usage::limits::refresh_due(dir, runtime.as_ref(), &refreshed.index, now);
    trace.mark("limits");
    if trace.on {
        let result = &refreshed.result;
        eprintln!("{:?} incremental: {}", result.stats, result.incremental);
    }
    // The process ends right after this: freeing tens of thousands of
    // entries and slots one by one would only delay the exit.
    std::mem::forget(refreshed);
    Ok(())
}

/// What one refresh of the cache works from besides the cache itself.
#[derive(Debug, Clone, Copy)]
pub struct Pass<'a> {
    pub roots: &'a Roots,
    pub prices: &'a PriceTable,
    /// Days of history kept (`usage.toml`).
    pub retention_days: i64,
    pub now: i64,
    /// When a cold backfill stops and persists its progress.
    pub deadline: Option<Instant>,
}

/// The cache as one refresh left it.
#[derive(Debug)]
pub struct CacheRefresh {
    pub result: ScanResult,
    pub index: Index,
    pub state: Option<State>,
}

/// One refresh of the cache in `dir`, exactly as `heeler usage worker`
/// does it under its lock (the limits aside): loads the index and the
/// aggregate state, brings them up to date with the transcripts, writes
/// them, the snapshot and the recent slots. Tests drive this function to
/// check the worker's own path.
pub fn refresh_cache(dir: &UsageDir, pass: &Pass) -> Result<CacheRefresh, WorkerError> {
    let (roots, prices, now) = (pass.roots, pass.prices, pass.now);
    let trace = Trace::new();
    let Start {
        candidates,
        mut index,
        loaded,
        mut state,
        fingerprint,
    } = Start::load(dir, roots, &trace);
    let store = Store::in_dir(&dir.0);
    let had_base = dir.index().exists();
    let options = ScanOptions {
        deadline: pass.deadline,
        retention_days: pass.retention_days,
        ..ScanOptions::new(prices, now)
    };
    let refreshed = refresh_index(&mut index, &mut state, fingerprint, &candidates, &options);
    trace.mark("refresh the index");
    let persist = persist_plan(refreshed.stats.changed(), had_base, refreshed.incremental);
    let keys: Vec<String> = match persist.index {
        true => refreshed.changed_keys.clone(),
        false => Vec::new(),
    };
    // The index is written on one thread while the other aggregates it
    // (from scratch after a cold scan: the longest step after the parse)
    // and then writes the aggregate. The state names the index it sums
    // (its fingerprint): if only one of them is written, the next refresh
    // rebuilds the state.
    let (result, written, saved_state) = std::thread::scope(|scope| {
        let index = &index;
        let writer = scope.spawn(move || {
            if !persist.index {
                return Ok(None);
            }
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            store.write(index, &keys, loaded).map(Some)
        });
        let result = summarize(index, &mut state, refreshed, roots, &candidates, prices);
        trace.mark("aggregate (beside the index write)");
        let saved_state = match &mut state {
            Some(state) if persist.aggregate => StateStore::in_dir(&dir.0).save(state),
            _ => Ok(()),
        };
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the index writer panicked")));
        (result, written, saved_state)
    });
    let saved_index = written.map(|w| {
        if let Some(w) = w {
            w.adopt(&mut index);
        }
    });
    saved_index.map_err(|e| WorkerError::Io(paths::INDEX, e))?;
    saved_state.map_err(|e| WorkerError::Io(paths::AGGREGATE, e))?;
    trace.mark("write index and aggregate state");
    publish(dir, state.as_ref(), &result, now, &trace)?;
    // Best effort: without it the live screen only sees new spend when the
    // cache's age starts a refresh.
    let active = crate::usage::live::watch::encode(
        &candidates.candidates,
        now,
        crate::usage::live::watch::seen,
    );
    let _ = atomic_file::write_unsynced(&dir.active(), active.as_bytes(), 0o600);
    Ok(CacheRefresh {
        result,
        index,
        state,
    })
}

/// The transcripts found and the cache as a refresh loads it.
struct Start {
    candidates: Discovery,
    index: Index,
    loaded: crate::usage::store::index::Loaded,
    state: Option<State>,
    /// The index's fingerprint as loaded, when there is a state.
    fingerprint: Option<u64>,
}

impl Start {
    /// Walks the transcript trees on a thread of its own (it waits on the
    /// kernel) while this one loads the cache (work for the other core).
    fn load(dir: &UsageDir, roots: &Roots, trace: &Trace) -> Start {
        std::thread::scope(|scope| {
            let walker = scope.spawn(|| discover(roots));
            let (index, loaded) = Store::in_dir(&dir.0).load();
            trace.mark("load index");
            let state = StateStore::in_dir(&dir.0).load();
            let fingerprint = state.as_ref().map(|_| index.fingerprint());
            trace.mark("load aggregate state");
            let candidates = walker.join().unwrap_or_else(|_| discover(roots));
            trace.mark("discover (in parallel)");
            Start {
                candidates,
                index,
                loaded,
                state,
                fingerprint,
            }
        })
    }
}

/// Writes what queries read of a refresh: the recent slots, then the
/// snapshot with its token members rendered ahead.
fn publish(
    dir: &UsageDir,
    state: Option<&State>,
    result: &ScanResult,
    now: i64,
    trace: &Trace,
) -> Result<(), WorkerError> {
    let rendered = render_ahead(dir, &result.snapshot, now);
    let text = result.snapshot.to_json_with(&rendered);
    trace.mark("render snapshot");
    // Written before the snapshot it belongs to (best effort: without it
    // the statusline reads the whole state).
    let mut rows = Vec::new();
    let recent = state.and_then(|state| {
        state.visit_slots_from(now - crate::usage::views::recent::SPAN, |key, acc| {
            rows.push((key.clone(), *acc));
        })
    });
    if recent.is_some() {
        let recent = crate::usage::views::recent::encode(
            result.snapshot.generated_at,
            now,
            rows.iter().map(|(key, acc)| (key, acc)),
        );
        let _ = atomic_file::write_unsynced(&dir.recent(), recent.as_bytes(), 0o600);
    }
    atomic_file::write_unsynced(&dir.snapshot(), text.as_bytes(), 0o600)
        .map_err(|e| WorkerError::Io(paths::SNAPSHOT, e))?;
    trace.mark("write snapshot");
    Ok(())
}

/// Most zones rendered ahead (the Host's plus those queries asked for).
pub(crate) const ZONES_AHEAD: usize = 4;

/// Remembers that a query asked for `zone` (rendered ahead from the next
/// refresh on); the newest [`ZONES_AHEAD`] names are kept.
pub(crate) fn want_zone(dir: &UsageDir, zone: &str) {
    let text = read_zones_wanted(dir);
    let Some(wanted) = zones_wanted_after(&text, zone) else {
        return;
    };
    let _ = atomic_file::create_dir_all(&dir.0, 0o700)
        .and_then(|()| atomic_file::write(&dir.zones_wanted(), wanted.as_bytes(), 0o600));
}

/// What `zones-wanted` holds; empty when it is missing or not a regular
/// file of at most [`ZONES_WANTED_MAX`] bytes.
fn read_zones_wanted(dir: &UsageDir) -> String {
    crate::base::state_file::read_text(&dir.zones_wanted(), ZONES_WANTED_MAX).unwrap_or_default()
}

/// The longest `zones-wanted` read: [`ZONES_AHEAD`] zone names fit many
/// times over.
const ZONES_WANTED_MAX: u64 = 4 * 1024;

/// The `zones-wanted` file after a query asked for `zone`, given what it
/// held (`text`): `None` when `zone` is already listed, else the names
/// with `zone` appended, the oldest dropped past [`ZONES_AHEAD`].
pub(crate) fn zones_wanted_after(text: &str, zone: &str) -> Option<String> {
    if text.lines().any(|l| l == zone) {
        return None;
    }
    let mut names: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    names.push(zone);
    let keep = &names[names.len().saturating_sub(ZONES_AHEAD)..];
    Some(keep.join("\n") + "\n")
}

/// The zones rendered ahead: the Host's first, then the first
/// [`ZONES_AHEAD`] lines of `zones-wanted` that name another zone `load`
/// finds.
pub(crate) fn zones_to_render(
    host: Zone,
    wanted: &str,
    load: impl Fn(&str) -> Option<Zone>,
) -> Vec<Zone> {
    let mut zones = vec![host];
    for name in wanted.lines().take(ZONES_AHEAD) {
        if zones.iter().any(|z| z.name == name) {
            continue;
        }
        if let Some(zone) = load(name) {
            zones.push(zone);
        }
    }
    zones
}

/// Token members for the Host's zone and the wanted zones, on their local
/// day at `now`.
fn render_ahead(
    dir: &UsageDir,
    snapshot: &Snapshot,
    now: i64,
) -> Vec<crate::usage::report::Rendered> {
    let zoneinfo = tz::zoneinfo_dir();
    let host = tz::process_host_zone();
    let wanted = read_zones_wanted(dir);
    zones_to_render(host, &wanted, |name| Zone::load(name, &zoneinfo).ok())
        .iter()
        .map(|zone| crate::usage::report::Rendered {
            tz: zone.name.clone(),
            day: zone.local_day(now),
            parts: crate::usage::report::token_parts(&snapshot.slots, zone, now),
        })
        .collect()
}

/// Starts `heeler usage worker` detached, stdio to `worker.log` (kept under
/// 1 MiB by starting over).
pub fn spawn(dir: &UsageDir, exe: &Path) -> io::Result<()> {
    atomic_file::create_dir_all(&dir.0, 0o700)?;
    let log_path = dir.log();
    let too_big = fs::metadata(&log_path).is_ok_and(|m| log_starts_over(m.len()));
    let log = open_private(
        OpenOptions::new()
            .create(true)
            .append(!too_big)
            .write(true)
            .truncate(too_big),
        &log_path,
    )?;
    let mut command = std::process::Command::new(exe);
    command
        .args(["usage", "worker"])
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    crate::base::sys::detach_on_spawn(&mut command);
    command.spawn().map(|_| ())
}

/// Longest `worker.log` is appended to; past it the next worker starts it
/// over.
pub(crate) const LOG_LIMIT: u64 = 1 << 20;

/// Whether a log of `len` bytes is started over rather than appended to.
pub(crate) fn log_starts_over(len: u64) -> bool {
    len > LOG_LIMIT
}

/// Phase timings on stderr (the worker log) when `HEELER_USAGE_TRACE` is set.
struct Trace {
    on: bool,
    last: std::cell::Cell<Instant>,
}

impl Trace {
    fn new() -> Trace {
        Trace {
            on: std::env::var_os("HEELER_USAGE_TRACE").is_some(),
            last: std::cell::Cell::new(Instant::now()),
        }
    }
    fn mark(&self, what: &str) {
        if self.on {
            let now = Instant::now();
            eprintln!(
                "{what}: {:.1} ms",
                (now - self.last.get()).as_secs_f64() * 1000.0
            );
            self.last.set(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scratch::ScratchDir;
    use std::os::unix::fs::PermissionsExt;

    const DAY: i64 = 86_400;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn the_lock_and_the_log_are_private_files() {
        let scratch = ScratchDir::new("worker-modes");
        let dir = UsageDir(scratch.join("usage"));
        fs::create_dir_all(&dir.0).unwrap();
        drop(take_lock(&dir).unwrap());
        assert_eq!(mode(&dir.lock()), 0o600);
        // Files an earlier version left world-readable are tightened too.
        fs::set_permissions(dir.lock(), fs::Permissions::from_mode(0o644)).unwrap();
        drop(take_lock(&dir).unwrap());
        assert_eq!(mode(&dir.lock()), 0o600);
        spawn(&dir, Path::new("/bin/true")).unwrap();
        assert_eq!(mode(&dir.log()), 0o600);
        fs::set_permissions(dir.log(), fs::Permissions::from_mode(0o644)).unwrap();
        spawn(&dir, Path::new("/bin/true")).unwrap();
        assert_eq!(mode(&dir.log()), 0o600);
    }
    /// A slot boundary (a multiple of 15 minutes).
    const NOW: i64 = 1_795_953_600;

    #[test]
    fn the_window_starts_32_days_back_on_a_15_minute_boundary() {
        assert_eq!(window_start(NOW), NOW - 32 * DAY);
        assert_eq!(window_start(NOW + 899), NOW - 32 * DAY);
        assert_eq!(window_start(NOW + 900), NOW - 32 * DAY + 900);
        // Before the epoch the boundary is still the one at or below.
        assert_eq!(window_start(100), -32 * DAY);
        assert_eq!(window_start(-100), -32 * DAY - 900);
    }

    #[test]
    fn the_history_starts_retention_days_and_the_margins_back() {
        assert_eq!(history_start(NOW, 30), window_start(NOW));
        assert_eq!(history_start(NOW, 90), NOW - 92 * DAY);
        assert_eq!(history_start(NOW + 899, 365), NOW - 367 * DAY);
        // Never shorter than the app's window.
        assert_eq!(history_start(NOW, 7), window_start(NOW));
    }

    fn object(text: &str) -> Object {
        json::parse(text).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn a_run_start_keeps_the_previous_record() {
        let previous = Value::Object(object(
            r#"{"started_at":1,"finished_at":2,"last_success_at":1,"last_error":"boom"}"#,
        ));
        assert_eq!(
            status_at_start(Some(&previous), 10),
            object(r#"{"started_at":10,"finished_at":2,"last_success_at":1,"last_error":"boom"}"#)
        );
        assert_eq!(status_at_start(None, 10), object(r#"{"started_at":10}"#));
        let not_an_object = Value::from("damaged");
        assert_eq!(
            status_at_start(Some(&not_an_object), 10),
            object(r#"{"started_at":10}"#)
        );
    }

    #[test]
    fn a_success_clears_the_error_and_a_failure_keeps_the_last_success() {
        let started = object(r#"{"started_at":10,"last_success_at":1,"last_error":"boom"}"#);
        assert_eq!(
            status_at_finish(started.clone(), 10, 12, Ok(())),
            object(r#"{"started_at":10,"last_success_at":10,"last_error":null,"finished_at":12}"#)
        );
        assert_eq!(
            status_at_finish(started, 10, 12, Err("usage dir: denied".into())),
            object(
                r#"{"started_at":10,"last_success_at":1,"last_error":"usage dir: denied","finished_at":12}"#
            )
        );
        let first = status_at_finish(object(r#"{"started_at":10}"#), 10, 11, Err("x".into()));
        assert_eq!(first.get("last_success_at"), None);
    }

    #[test]
    fn the_budget_is_milliseconds_else_20_seconds() {
        assert_eq!(budget_from(None), Duration::from_secs(20));
        assert_eq!(budget_from(Some("1500")), Duration::from_millis(1500));
        assert_eq!(budget_from(Some("0")), Duration::ZERO);
        for bad in ["", "abc", "-5", "1.5", " 10"] {
            assert_eq!(budget_from(Some(bad)), Duration::from_secs(20), "{bad:?}");
        }
    }

    #[test]
    fn zones_wanted_keeps_the_newest_four_names_once_each() {
        assert_eq!(zones_wanted_after("", "UTC").as_deref(), Some("UTC\n"));
        assert_eq!(zones_wanted_after("UTC\n", "UTC"), None);
        assert_eq!(
            zones_wanted_after("UTC\n\nAsia/Tokyo\n", "Europe/Paris").as_deref(),
            Some("UTC\nAsia/Tokyo\nEurope/Paris\n")
        );
        assert_eq!(
            zones_wanted_after("A/a\nB/b\nC/c\nD/d\n", "E/e").as_deref(),
            Some("B/b\nC/c\nD/d\nE/e\n")
        );
        assert_eq!(zones_wanted_after("A/a\nB/b\nC/c\nD/d\n", "C/c"), None);
    }

    fn zone(name: &str) -> Zone {
        let mut zone = Zone::utc();
        zone.name = name.into();
        zone
    }

    #[test]
    fn the_host_zone_comes_first_then_the_loadable_wanted_ones() {
        let load = |name: &str| (name != "No/Such").then(|| zone(name));
        let names = |wanted: &str| -> Vec<String> {
            zones_to_render(zone("UTC"), wanted, load)
                .into_iter()
                .map(|z| z.name)
                .collect()
        };
        assert_eq!(names(""), ["UTC"]);
        assert_eq!(
            names("Asia/Tokyo\nUTC\nNo/Such\nEurope/Paris\n"),
            ["UTC", "Asia/Tokyo", "Europe/Paris"]
        );
        // Only the first four lines count.
        assert_eq!(
            names("A/a\nB/b\nC/c\nD/d\nE/e\n"),
            ["UTC", "A/a", "B/b", "C/c", "D/d"]
        );
    }

    #[test]
    fn what_a_refresh_persists() {
        let plan = |changed, had_index, incremental| {
            let p = persist_plan(changed, had_index, incremental);
            (p.index, p.aggregate)
        };
        // Nothing changed, the aggregate updated in place: nothing to write.
        assert_eq!(plan(false, true, true), (false, false));
        // Nothing changed but the aggregate was rebuilt: keep it.
        assert_eq!(plan(false, true, false), (false, true));
        assert_eq!(plan(true, true, true), (true, true));
        assert_eq!(plan(false, false, true), (true, true));
        assert_eq!(plan(true, false, false), (true, true));
    }

    #[test]
    fn the_log_starts_over_past_one_mebibyte() {
        assert!(!log_starts_over(0));
        assert!(!log_starts_over(1 << 20));
        assert!(log_starts_over((1 << 20) + 1));
    }
}

//! `heeler usage query`: the SSH entry point that always answers at once.
//!
//! It reads the snapshot, the limits files and the worker's status, renders
//! the v1 document for the requested zone, and starts a detached worker
//! when anything is stale — never scanning or probing itself, so it answers
//! within milliseconds. Every problem becomes an entry of `errors` inside
//! the document; the command itself always succeeds, even without a home
//! directory (`no_home`: nothing to read, nothing written, no worker).
//!
//! Three steps, so that the decision is testable without files:
//! 1. [`Inputs::read`] gathers what the state files held, whether a worker
//!    runs, the zone and the time, as values;
//! 2. [`decide`] (pure) turns the options and inputs into a [`Decision`]:
//!    the refresh state, the limits and errors to report, and the
//!    [`Effects`] to perform (the `claude-limits.wanted` toggle file, a
//!    zone to render ahead, a worker to start and why);
//! 3. [`answer`] performs the effects, folds their outcome into the
//!    decision ([`Decision::spawn_failed`]) and [`render`]s the document.

use std::path::{Path, PathBuf};

use crate::base::dirs::NoHome;
use crate::base::json::read_file as read_json;
use crate::base::json::{Object, Value};
use crate::base::tz::{self, TzError, Zone};
use crate::usage::event::Agent;
use crate::usage::limits::due::{self, ClaudeStep};
use crate::usage::paths::UsageDir;
use crate::usage::pricing::{PriceTable, SourceMeta};
use crate::usage::report::{self, Envelope, Prerendered, Snapshot};
use crate::usage::worker;

/// A snapshot older than this is refreshed.
pub(crate) const SNAPSHOT_TTL: i64 = 60;
/// How soon the app should ask again while a refresh runs.
pub(crate) const RETRY_AFTER_MS: u64 = 2000;

/// `--refresh`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshMode {
    Auto,
    Force,
    Never,
}

impl RefreshMode {
    pub fn parse(text: &str) -> Option<RefreshMode> {
        match text {
            "auto" => Some(RefreshMode::Auto),
            "force" => Some(RefreshMode::Force),
            "never" => Some(RefreshMode::Never),
            _ => None,
        }
    }
}

/// The query's options, already validated.
#[derive(Debug, Clone)]
pub struct Options {
    pub tz: Option<String>,
    pub(crate) claude_limits: bool,
    pub refresh: RefreshMode,
}

/// Everything outside the options a query depends on.
#[derive(Debug, Clone)]
pub struct Context {
    /// The Usage state dir; `Err` when no home directory can be found.
    pub dir: Result<UsageDir, NoHome>,
    pub now: i64,
    pub zoneinfo: PathBuf,
    pub(crate) tz_env: Option<String>,
    pub(crate) localtime: PathBuf,
    /// The binary to start as the worker; `None` never starts one.
    pub(crate) exe: Option<PathBuf>,
}

impl Context {
    /// This process's context. Never fails: a missing home is reported in
    /// the answer.
    pub fn from_env() -> Context {
        Context {
            dir: UsageDir::from_env(),
            now: crate::base::clock::unix_seconds(),
            zoneinfo: tz::zoneinfo_dir(),
            tz_env: std::env::var("TZ").ok(),
            localtime: PathBuf::from(tz::LOCALTIME),
            exe: std::env::current_exe().ok(),
        }
    }
}

/// What `snapshot-v1.json` held for the query's zone and local day.
#[derive(Debug, Clone, PartialEq)]
pub enum SnapshotRead {
    /// No snapshot file (yet).
    Missing,
    /// Token members the worker rendered ahead for this zone and day.
    Ahead(Prerendered),
    /// The snapshot header with the slots of its aggregate state.
    Slots(Snapshot),
    /// A snapshot file that does not parse, or whose slots cannot be read.
    Unreadable,
}

impl SnapshotRead {
    /// `generated_at`, `partial` and the pricing of whatever was read.
    fn header(&self) -> Option<(i64, bool, &SourceMeta)> {
        match self {
            SnapshotRead::Ahead(a) => Some((a.generated_at, a.partial, &a.pricing)),
            SnapshotRead::Slots(s) => Some((s.generated_at, s.partial, &s.pricing)),
            SnapshotRead::Missing | SnapshotRead::Unreadable => None,
        }
    }
}

/// The Usage state files a query reads, as values (`None`: no such file or
/// not JSON), and whether a worker holds the lock.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub snapshot: SnapshotRead,
    pub status: Option<Value>,
    pub runtime: Option<Value>,
    pub(crate) limits_claude: Option<Value>,
    pub(crate) limits_codex: Option<Value>,
    pub(crate) claude_limits_trigger: Option<Value>,
    pub(crate) claude_limits_wanted: bool,
    pub(crate) worker_running: bool,
    /// Why the state dir is not trusted ([`UsageDir::trusted`]); then
    /// nothing else was read from it.
    pub untrusted: Option<String>,
}

impl Stored {
    /// A state dir with nothing in it.
    pub fn empty() -> Stored {
        Stored {
            snapshot: SnapshotRead::Missing,
            status: None,
            runtime: None,
            limits_claude: None,
            limits_codex: None,
            claude_limits_trigger: None,
            claude_limits_wanted: false,
            worker_running: false,
            untrusted: None,
        }
    }
}

/// Everything a query's answer depends on, gathered before any decision.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub now: i64,
    /// The zone answered in (the Host's when `--tz` cannot be used).
    pub zone: Zone,
    /// Why `--tz` could not be used.
    pub(crate) zone_error: Option<TzError>,
    /// The state files; `Err` when there is no home and so no state dir.
    pub stored: Result<Stored, NoHome>,
    /// Whether a worker binary is known (`Context::exe`).
    pub(crate) can_spawn: bool,
    /// [`crate::usage::limits::claude_needs_herdr_session`].
    pub(crate) claude_needs_herdr_session: bool,
}

impl Inputs {
    /// Reads the zone, the state files and the lock (no writes).
    pub fn read(options: &Options, ctx: &Context) -> Inputs {
        let host = || tz::host_zone(ctx.tz_env.as_deref(), &ctx.localtime, &ctx.zoneinfo);
        let (zone, zone_error) = match &options.tz {
            None => (host(), None),
            Some(name) => match Zone::load(name, &ctx.zoneinfo) {
                Ok(zone) => (zone, None),
                Err(e) => (host(), Some(e)),
            },
        };
        let stored = match &ctx.dir {
            Ok(dir) => Ok(read_stored(dir, &zone, ctx.now)),
            Err(e) => Err(e.clone()),
        };
        Inputs {
            now: ctx.now,
            zone,
            zone_error,
            stored,
            can_spawn: ctx.exe.is_some(),
            claude_needs_herdr_session: crate::usage::limits::claude_needs_herdr_session(),
        }
    }
}

/// The snapshot's text, read as heeler's state is (`base::state_file`):
/// `None` when it is missing, not a regular file or over the cap.
fn read_snapshot_text(dir: &UsageDir) -> Option<String> {
    crate::base::state_file::read_text(&dir.snapshot(), crate::base::state_file::MAX_BYTES)
}

/// The snapshot for `zone` on its local day at `now`: rendered ahead when
/// the worker did, else with its slots.
fn read_snapshot(dir: &UsageDir, zone: &Zone, now: i64) -> SnapshotRead {
    let Some(text) = read_snapshot_text(dir) else {
        return SnapshotRead::Missing;
    };
    if let Some(ahead) = Prerendered::read(&text, &zone.name, zone.local_day(now)) {
        return SnapshotRead::Ahead(ahead);
    }
    match with_slots(dir, Snapshot::parse(&text), now) {
        Some(snapshot) => SnapshotRead::Slots(snapshot),
        None => SnapshotRead::Unreadable,
    }
}

/// `snapshot` with its slots, read from the aggregate state it names. The
/// worker writes the state before the snapshot, so a state newer than the
/// snapshot read means a refresh finished meanwhile: the snapshot is read
/// again (once; after that the newer slots are used as they are). Only
/// the slots of the app's window at `now` are read: the state keeps the
/// views' longer history too (`usage.toml`), which the answer never shows.
fn with_slots(dir: &UsageDir, snapshot: Option<Snapshot>, now: i64) -> Option<Snapshot> {
    let mut snapshot = snapshot?;
    let store = crate::usage::store::state::StateStore::in_dir(&dir.0);
    let (fingerprint, detailed) = store.load_slots_from(crate::usage::worker::window_start(now))?;
    if fingerprint != snapshot.aggregate
        && let Some(again) = read_snapshot_text(dir).and_then(|t| Snapshot::parse(&t))
    {
        snapshot = again;
    }
    snapshot.slots = crate::usage::aggregate::flatten(&detailed).slots;
    Some(snapshot)
}

fn read_stored(dir: &UsageDir, zone: &Zone, now: i64) -> Stored {
    // Another user may have planted anything there (a runtime record with
    // their PATH, a FIFO at a cache file): read nothing.
    if let Err(untrusted) = dir.trusted() {
        return Stored {
            untrusted: Some(untrusted.to_string()),
            ..Stored::empty()
        };
    }
    Stored {
        snapshot: read_snapshot(dir, zone, now),
        status: read_json(&dir.status()),
        runtime: crate::usage::runtime::read(dir),
        limits_claude: read_json(&dir.limits(Agent::Claude)),
        limits_codex: read_json(&dir.limits(Agent::Codex)),
        claude_limits_trigger: read_json(&dir.claude_limits_trigger()),
        claude_limits_wanted: dir.claude_limits_wanted().exists(),
        worker_running: worker::is_running(dir),
        untrusted: None,
    }
}

/// `refresh.state` of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshState {
    Idle,
    Running,
    Stale,
    Failed,
}

impl RefreshState {
    pub fn name(self) -> &'static str {
        match self {
            RefreshState::Idle => "idle",
            RefreshState::Running => "running",
            RefreshState::Stale => "stale",
            RefreshState::Failed => "failed",
        }
    }
}

/// Why a worker is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnReason {
    /// `--refresh force`.
    Forced,
    /// The snapshot is missing, unreadable, partial or older than
    /// [`SNAPSHOT_TTL`].
    SnapshotStale,
    /// A limits probe (or the herdr action's trigger) is due.
    LimitsDue,
}

/// Why no worker is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// There is no state dir to refresh.
    NoHome,
    /// The state dir is not trusted ([`UsageDir::trusted`]).
    Untrusted,
    /// A worker holds the lock already.
    AlreadyRunning,
    /// `--refresh never`.
    RefreshNever,
    /// The snapshot is fresh and no limits are due.
    NothingDue,
    /// No worker binary is known.
    NoExecutable,
}

/// Whether the query starts a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worker {
    Spawn(SpawnReason),
    Skip(SkipReason),
}

/// What to do with `claude-limits.wanted` (the device's toggle, which the
/// worker reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WantedFile {
    Create,
    Remove,
    Leave,
}

/// The effects a query performs, in this order (the worker must find the
/// toggle file and the wanted zone once it starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Effects {
    /// A zone to add to `zones-wanted` (answered from the slots, so render
    /// it ahead next time).
    pub(crate) want_zone: Option<String>,
    pub(crate) claude_limits_wanted: WantedFile,
    pub worker: Worker,
}

/// What a query answers and does, decided from its [`Inputs`].
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub(crate) effects: Effects,
    /// The refresh state reported (assuming a planned worker starts; see
    /// [`Decision::spawn_failed`]).
    pub state: RefreshState,
    /// `started_at`, `last_success_at` and `last_error` of the status file.
    pub started_at: Value,
    pub last_success_at: Value,
    pub last_error: Value,
    pub runtime: Value,
    pub pricing: SourceMeta,
    /// `limits.claude` and `limits.codex`.
    pub(crate) claude_limits: Value,
    pub codex_limits: Value,
    pub errors: Vec<Value>,
}

impl Decision {
    /// Folds a worker that did not start into the answer.
    pub(crate) fn spawn_failed(&mut self) {
        self.state = RefreshState::Failed;
        self.errors.push(report::error(
            "worker_spawn_failed",
            "could not start the background refresh",
        ));
    }

    /// The `refresh` member of the answer.
    pub fn refresh(&self) -> Value {
        Value::Object(
            Object::new()
                .with("state", self.state.name())
                .with("started_at", self.started_at.clone())
                .with("last_success_at", self.last_success_at.clone())
                .with("last_error", self.last_error.clone())
                .with(
                    "retry_after_ms",
                    if self.state == RefreshState::Running {
                        Value::from(RETRY_AFTER_MS)
                    } else {
                        Value::Null
                    },
                ),
        )
    }
}

fn zone_error(e: &TzError) -> Value {
    let message = match e {
        TzError::BadName => "--tz is not an IANA zone name; using the Host's zone",
        TzError::Unknown => "--tz names no zone on this Host; using the Host's zone",
        TzError::Corrupt => "the zone's file is unreadable; using the Host's zone",
    };
    report::error(e.code(), message)
}

fn limits_state(state: &str) -> Value {
    Value::Object(Object::new().with("state", state))
}

/// A stored limits file as reported (without when it was attempted).
fn reported_limits(stored: Option<&Value>) -> Option<Value> {
    let mut v = stored?.clone();
    v.as_object_mut()?.remove("attempted_at");
    Some(v)
}

/// Decides the answer and the effects of a query (pure).
pub(crate) fn decide(options: &Options, inputs: &Inputs) -> Decision {
    let now = inputs.now;
    let mut errors = Vec::new();
    if let Some(e) = &inputs.zone_error {
        errors.push(zone_error(e));
    }
    let empty = Stored::empty();
    let stored = match &inputs.stored {
        Ok(stored) => stored,
        Err(no_home) => {
            errors.push(report::error("no_home", &no_home.to_string()));
            &empty
        }
    };
    if let Some(untrusted) = &stored.untrusted {
        errors.push(report::error("untrusted_state_dir", untrusted));
    }
    // No state dir, or one that is not trusted: nothing is written there
    // and no worker starts.
    let have_dir = inputs.stored.is_ok() && stored.untrusted.is_none();
    let want_zone = match &stored.snapshot {
        SnapshotRead::Slots(_) => Some(inputs.zone.name.clone()),
        SnapshotRead::Unreadable => {
            errors.push(report::error(
                "snapshot_unreadable",
                "the cached snapshot is unreadable; a refresh replaces it",
            ));
            None
        }
        SnapshotRead::Missing | SnapshotRead::Ahead(_) => None,
    };
    let header = stored.snapshot.header();

    let (claude_limits, claude_limits_wanted) = claude_limits(options, inputs, stored, have_dir);
    let mut codex_limits =
        reported_limits(stored.limits_codex.as_ref()).unwrap_or_else(|| limits_state("pending"));
    crate::usage::limits::mark_passed_resets(&mut codex_limits, now);
    let stale = match header {
        None => true,
        Some((generated_at, partial, _)) => partial || now - generated_at >= SNAPSHOT_TTL,
    };
    let worker = worker(options, inputs, stored, have_dir, stale);
    let status_field = |k: &str| {
        stored
            .status
            .as_ref()
            .and_then(|s| s.get(k))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let last_error = status_field("last_error");
    let state = match worker {
        Worker::Spawn(_) | Worker::Skip(SkipReason::AlreadyRunning) => RefreshState::Running,
        Worker::Skip(SkipReason::NoExecutable) => RefreshState::Stale,
        Worker::Skip(_) if stale => RefreshState::Stale,
        Worker::Skip(_) if last_error != Value::Null => RefreshState::Failed,
        Worker::Skip(_) => RefreshState::Idle,
    };
    let pricing = match header {
        Some((_, _, pricing)) => pricing.clone(),
        None => PriceTable::bundled().map(|t| t.meta).unwrap_or_default(),
    };
    Decision {
        effects: Effects {
            want_zone,
            claude_limits_wanted,
            worker,
        },
        state,
        started_at: status_field("started_at"),
        last_success_at: status_field("last_success_at"),
        last_error,
        runtime: crate::usage::runtime::state_of(stored.runtime.as_ref()),
        pricing,
        claude_limits,
        codex_limits,
        errors,
    }
}

/// Whether a worker starts, and why (not).
fn worker(
    options: &Options,
    inputs: &Inputs,
    stored: &Stored,
    have_dir: bool,
    stale: bool,
) -> Worker {
    if stored.untrusted.is_some() {
        Worker::Skip(SkipReason::Untrusted)
    } else if !have_dir {
        Worker::Skip(SkipReason::NoHome)
    } else if stored.worker_running {
        Worker::Skip(SkipReason::AlreadyRunning)
    } else if options.refresh == RefreshMode::Never {
        Worker::Skip(SkipReason::RefreshNever)
    } else if options.refresh == RefreshMode::Force {
        spawn_if(inputs.can_spawn, SpawnReason::Forced)
    } else if stale {
        spawn_if(inputs.can_spawn, SpawnReason::SnapshotStale)
    } else if limits_due(options, inputs, stored) {
        spawn_if(inputs.can_spawn, SpawnReason::LimitsDue)
    } else {
        Worker::Skip(SkipReason::NothingDue)
    }
}

/// The Claude limits to show and what to do with the toggle file: the
/// limits follow the device's toggle.
fn claude_limits(
    options: &Options,
    inputs: &Inputs,
    stored: &Stored,
    have_dir: bool,
) -> (Value, WantedFile) {
    if options.claude_limits {
        let shown = reported_limits(stored.limits_claude.as_ref()).unwrap_or_else(|| {
            limits_state(if inputs.claude_needs_herdr_session {
                "needs_herdr_session"
            } else {
                "pending"
            })
        });
        let file = if have_dir && !stored.claude_limits_wanted {
            WantedFile::Create
        } else {
            WantedFile::Leave
        };
        (shown, file)
    } else {
        let file = if stored.claude_limits_wanted {
            WantedFile::Remove
        } else {
            WantedFile::Leave
        };
        (limits_state("disabled"), file)
    }
}

/// Whether a limits read is due that the worker can make.
fn limits_due(options: &Options, inputs: &Inputs, stored: &Stored) -> bool {
    let limits = due::due(
        due::Stored {
            codex: stored.limits_codex.as_ref(),
            claude: stored.limits_claude.as_ref(),
            claude_trigger: stored.claude_limits_trigger.as_ref(),
        },
        options.claude_limits,
        inputs.claude_needs_herdr_session,
        inputs.now,
    );
    limits.codex
        || match limits.claude {
            ClaudeStep::Nothing => false,
            ClaudeStep::Probe => true,
            // The worker asks herdr's session to run the action, which
            // needs the herdr binary the runtime record names.
            ClaudeStep::TriggerHerdrAction => {
                crate::usage::limits::herdr_action::launcher(stored.runtime.as_ref()).is_some()
            }
        }
}

fn spawn_if(can_spawn: bool, reason: SpawnReason) -> Worker {
    if can_spawn {
        Worker::Spawn(reason)
    } else {
        Worker::Skip(SkipReason::NoExecutable)
    }
}

/// The v1 document of a decision (pure).
pub fn render(decision: &Decision, snapshot: SnapshotRead, zone: &Zone, now: i64) -> Value {
    let env = Envelope {
        now,
        refresh: decision.refresh(),
        runtime: decision.runtime.clone(),
        pricing: decision.pricing.clone(),
        limits: Value::Object(
            Object::new()
                .with("claude", decision.claude_limits.clone())
                .with("codex", decision.codex_limits.clone()),
        ),
        errors: decision.errors.clone(),
    };
    match snapshot {
        SnapshotRead::Ahead(a) => {
            report::assemble(Some((a.generated_at, a.coverage)), a.parts, zone, &env)
        }
        SnapshotRead::Slots(s) => report::render(Some(&s), zone, &env),
        SnapshotRead::Missing | SnapshotRead::Unreadable => report::render(None, zone, &env),
    }
}

/// Performs `effects` in `dir`; `false` when a planned worker did not
/// start. The toggle file and the wanted zone are best effort: a query
/// never fails on them.
fn perform(effects: &Effects, dir: &UsageDir, exe: Option<&Path>) -> bool {
    if let Some(zone) = &effects.want_zone {
        worker::want_zone(dir, zone);
    }
    let wanted = dir.claude_limits_wanted();
    match effects.claude_limits_wanted {
        WantedFile::Create => {
            let _ = crate::base::atomic_file::create_dir_all(&dir.0, 0o700)
                .and_then(|()| crate::base::atomic_file::write(&wanted, b"", 0o600));
        }
        WantedFile::Remove => {
            let _ = std::fs::remove_file(&wanted);
        }
        WantedFile::Leave => {}
    }
    match (effects.worker, exe) {
        (Worker::Spawn(_), Some(exe)) => worker::spawn(dir, exe).is_ok(),
        (Worker::Spawn(_), None) => false,
        (Worker::Skip(_), _) => true,
    }
}

/// Reads, decides and performs the effects (starting a worker when
/// needed): the one refresh rule, which the views for people
/// (`usage::views`) share with the query.
pub fn refresh(options: &Options, ctx: &Context) -> (Inputs, Decision) {
    let inputs = Inputs::read(options, ctx);
    let mut decision = decide(options, &inputs);
    if let Ok(dir) = &ctx.dir
        && !perform(&decision.effects, dir, ctx.exe.as_deref())
    {
        decision.spawn_failed();
    }
    (inputs, decision)
}

/// Builds the answer: [`refresh`], then renders.
pub fn answer(options: &Options, ctx: &Context) -> Value {
    let (inputs, decision) = refresh(options, ctx);
    let snapshot = match inputs.stored {
        Ok(stored) => stored.snapshot,
        Err(_) => SnapshotRead::Missing,
    };
    render(&decision, snapshot, &inputs.zone, inputs.now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::json;

    const NOW: i64 = 1_795_953_600;
    const MINUTE: i64 = 60;

    fn v(text: &str) -> Value {
        json::parse(text).unwrap()
    }

    fn meta(version: &str) -> SourceMeta {
        SourceMeta {
            source: "litellm".into(),
            version: version.into(),
            ..SourceMeta::default()
        }
    }

    /// A snapshot read with its slots, generated `age` seconds ago.
    fn slots(age: i64, partial: bool) -> SnapshotRead {
        SnapshotRead::Slots(Snapshot {
            generated_at: NOW - age,
            partial,
            pricing: meta("snapshot"),
            coverage: v(r#"{"partial":false}"#),
            aggregate: 0,
            slots: Vec::new(),
        })
    }

    fn ahead(age: i64) -> SnapshotRead {
        SnapshotRead::Ahead(Prerendered {
            generated_at: NOW - age,
            partial: false,
            pricing: meta("ahead"),
            coverage: v(r#"{"partial":false}"#),
            parts: Object::new(),
        })
    }

    /// Limits attempted `ago` seconds before now, in `state`.
    fn limits(state: &str, ago: i64) -> Option<Value> {
        Some(v(&format!(
            r#"{{"state":"{state}","fetched_at":1,"attempted_at":{}}}"#,
            NOW - ago
        )))
    }

    /// A state dir with a fresh snapshot and fresh Codex limits: nothing due.
    fn quiet() -> Stored {
        Stored {
            snapshot: slots(10, false),
            limits_codex: limits("ok", MINUTE),
            ..Stored::empty()
        }
    }

    fn inputs(stored: Stored) -> Inputs {
        Inputs {
            now: NOW,
            zone: Zone::utc(),
            zone_error: None,
            stored: Ok(stored),
            can_spawn: true,
            claude_needs_herdr_session: false,
        }
    }

    fn options(refresh: RefreshMode, claude_limits: bool) -> Options {
        Options {
            tz: None,
            claude_limits,
            refresh,
        }
    }

    fn auto() -> Options {
        options(RefreshMode::Auto, false)
    }

    fn codes(decision: &Decision) -> Vec<&str> {
        decision
            .errors
            .iter()
            .filter_map(|e| e.get("code").and_then(Value::as_str))
            .collect()
    }

    fn retry_after(decision: &Decision) -> Value {
        decision.refresh().get("retry_after_ms").cloned().unwrap()
    }

    #[test]
    fn a_fresh_snapshot_with_nothing_due_is_idle_and_starts_nothing() {
        let d = decide(&auto(), &inputs(quiet()));
        assert_eq!(d.state, RefreshState::Idle);
        assert_eq!(d.effects.worker, Worker::Skip(SkipReason::NothingDue));
        assert_eq!(retry_after(&d), Value::Null);
        assert!(d.errors.is_empty());
        assert_eq!(d.pricing, meta("snapshot"));
    }

    #[test]
    fn a_snapshot_older_than_a_minute_starts_a_worker() {
        let at = |age| {
            decide(
                &auto(),
                &inputs(Stored {
                    snapshot: slots(age, false),
                    ..quiet()
                }),
            )
        };
        let old = at(2 * MINUTE);
        assert_eq!(
            old.effects.worker,
            Worker::Spawn(SpawnReason::SnapshotStale)
        );
        assert_eq!(old.state, RefreshState::Running);
        assert_eq!(retry_after(&old), Value::from(2000u64));
        assert_eq!(at(30).effects.worker, Worker::Skip(SkipReason::NothingDue));
    }

    #[test]
    fn a_partial_snapshot_is_stale_however_new() {
        let d = decide(
            &auto(),
            &inputs(Stored {
                snapshot: slots(0, true),
                ..quiet()
            }),
        );
        assert_eq!(d.effects.worker, Worker::Spawn(SpawnReason::SnapshotStale));
    }

    #[test]
    fn no_snapshot_yet_is_stale_and_reports_the_bundled_prices() {
        let missing = || Stored {
            snapshot: SnapshotRead::Missing,
            ..quiet()
        };
        let d = decide(&auto(), &inputs(missing()));
        assert_eq!(d.effects.worker, Worker::Spawn(SpawnReason::SnapshotStale));
        assert_eq!(d.state, RefreshState::Running);
        assert_eq!(d.pricing, PriceTable::bundled().unwrap().meta);
        assert_eq!(d.effects.want_zone, None);
        let never = decide(&options(RefreshMode::Never, false), &inputs(missing()));
        assert_eq!(never.state, RefreshState::Stale);
        assert_eq!(never.effects.worker, Worker::Skip(SkipReason::RefreshNever));
        assert!(never.errors.is_empty());
    }

    #[test]
    fn an_unreadable_snapshot_is_an_error_and_stale() {
        let d = decide(
            &auto(),
            &inputs(Stored {
                snapshot: SnapshotRead::Unreadable,
                ..quiet()
            }),
        );
        assert_eq!(codes(&d), ["snapshot_unreadable"]);
        assert_eq!(d.effects.worker, Worker::Spawn(SpawnReason::SnapshotStale));
        assert_eq!(d.effects.want_zone, None);
    }

    #[test]
    fn a_zone_answered_from_the_slots_is_wanted_ahead_next_time() {
        let from_slots = decide(&auto(), &inputs(quiet()));
        assert_eq!(from_slots.effects.want_zone.as_deref(), Some("UTC"));
        let rendered = decide(
            &auto(),
            &inputs(Stored {
                snapshot: ahead(10),
                ..quiet()
            }),
        );
        assert_eq!(rendered.effects.want_zone, None);
        assert_eq!(rendered.state, RefreshState::Idle);
        assert_eq!(rendered.pricing, meta("ahead"));
    }

    #[test]
    fn a_running_worker_is_reported_and_never_doubled() {
        for refresh in [RefreshMode::Auto, RefreshMode::Force, RefreshMode::Never] {
            let d = decide(
                &options(refresh, false),
                &inputs(Stored {
                    snapshot: SnapshotRead::Missing,
                    worker_running: true,
                    ..quiet()
                }),
            );
            assert_eq!(d.state, RefreshState::Running, "{refresh:?}");
            assert_eq!(d.effects.worker, Worker::Skip(SkipReason::AlreadyRunning));
            assert_eq!(retry_after(&d), Value::from(2000u64));
        }
    }

    #[test]
    fn force_starts_a_worker_for_a_fresh_snapshot() {
        let d = decide(&options(RefreshMode::Force, false), &inputs(quiet()));
        assert_eq!(d.effects.worker, Worker::Spawn(SpawnReason::Forced));
        assert_eq!(d.state, RefreshState::Running);
    }

    #[test]
    fn never_starts_no_worker_even_when_limits_are_due() {
        let d = decide(
            &options(RefreshMode::Never, false),
            &inputs(Stored {
                limits_codex: None,
                ..quiet()
            }),
        );
        assert_eq!(d.effects.worker, Worker::Skip(SkipReason::RefreshNever));
        assert_eq!(d.state, RefreshState::Idle);
    }

    #[test]
    fn without_a_worker_binary_a_wanted_refresh_is_stale() {
        let no_binary = |stored| Inputs {
            can_spawn: false,
            ..inputs(stored)
        };
        let old = decide(
            &auto(),
            &no_binary(Stored {
                snapshot: slots(2 * MINUTE, false),
                ..quiet()
            }),
        );
        assert_eq!(old.effects.worker, Worker::Skip(SkipReason::NoExecutable));
        assert_eq!(old.state, RefreshState::Stale);
        let limits_due = decide(
            &auto(),
            &no_binary(Stored {
                limits_codex: None,
                ..quiet()
            }),
        );
        assert_eq!(limits_due.state, RefreshState::Stale);
        let nothing_due = decide(&auto(), &no_binary(quiet()));
        assert_eq!(nothing_due.state, RefreshState::Idle);
    }

    #[test]
    fn the_last_run_failing_shows_while_no_refresh_runs() {
        let status = Some(v(
            r#"{"started_at":100,"finished_at":101,"last_success_at":50,"last_error":"usage dir: denied"}"#,
        ));
        let idle = decide(
            &auto(),
            &inputs(Stored {
                status: status.clone(),
                ..quiet()
            }),
        );
        assert_eq!(idle.state, RefreshState::Failed);
        assert_eq!(
            idle.refresh(),
            v(
                r#"{"state":"failed","started_at":100,"last_success_at":50,"last_error":"usage dir: denied","retry_after_ms":null}"#
            )
        );
        let running = decide(
            &auto(),
            &inputs(Stored {
                status: status.clone(),
                worker_running: true,
                ..quiet()
            }),
        );
        assert_eq!(running.state, RefreshState::Running);
        let stale = decide(
            &options(RefreshMode::Never, false),
            &inputs(Stored {
                status,
                snapshot: slots(2 * MINUTE, false),
                ..quiet()
            }),
        );
        assert_eq!(stale.state, RefreshState::Stale);
        let ok = decide(
            &auto(),
            &inputs(Stored {
                status: Some(v(
                    r#"{"started_at":100,"last_success_at":100,"last_error":null}"#,
                )),
                ..quiet()
            }),
        );
        assert_eq!(ok.state, RefreshState::Idle);
    }

    #[test]
    fn a_worker_that_does_not_start_fails_the_refresh() {
        let mut d = decide(
            &auto(),
            &inputs(Stored {
                snapshot: SnapshotRead::Missing,
                ..quiet()
            }),
        );
        d.spawn_failed();
        assert_eq!(d.state, RefreshState::Failed);
        assert_eq!(codes(&d), ["worker_spawn_failed"]);
        assert_eq!(retry_after(&d), Value::Null);
    }

    #[test]
    fn the_claude_toggle_file_follows_the_option() {
        let with_file = |exists| Stored {
            claude_limits_wanted: exists,
            ..quiet()
        };
        let file = |on, exists| {
            decide(&options(RefreshMode::Auto, on), &inputs(with_file(exists)))
                .effects
                .claude_limits_wanted
        };
        assert_eq!(file(true, false), WantedFile::Create);
        assert_eq!(file(true, true), WantedFile::Leave);
        assert_eq!(file(false, true), WantedFile::Remove);
        assert_eq!(file(false, false), WantedFile::Leave);
    }

    #[test]
    fn claude_limits_are_disabled_pending_or_stored() {
        let stored = Stored {
            limits_claude: limits("ok", MINUTE),
            ..quiet()
        };
        let off = decide(&auto(), &inputs(stored.clone()));
        assert_eq!(off.claude_limits, v(r#"{"state":"disabled"}"#));
        let on = decide(&options(RefreshMode::Auto, true), &inputs(stored));
        assert_eq!(on.claude_limits, v(r#"{"state":"ok","fetched_at":1}"#));
        let none = decide(&options(RefreshMode::Auto, true), &inputs(quiet()));
        assert_eq!(none.claude_limits, v(r#"{"state":"pending"}"#));
        let macos = decide(
            &options(RefreshMode::Auto, true),
            &Inputs {
                claude_needs_herdr_session: true,
                ..inputs(quiet())
            },
        );
        assert_eq!(macos.claude_limits, v(r#"{"state":"needs_herdr_session"}"#));
    }

    #[test]
    fn codex_limits_are_pending_or_stored_with_passed_resets_marked() {
        assert_eq!(
            decide(
                &auto(),
                &inputs(Stored {
                    limits_codex: None,
                    ..quiet()
                })
            )
            .codex_limits,
            v(r#"{"state":"pending"}"#)
        );
        let rollout = v(&format!(
            r#"{{"state":"ok","source":"rollout","windows":[{{"id":"primary","resets_at":{}}},{{"id":"secondary","resets_at":{}}}],"attempted_at":{}}}"#,
            NOW - 1,
            NOW + 1,
            NOW - MINUTE
        ));
        let d = decide(
            &auto(),
            &inputs(Stored {
                limits_codex: Some(rollout),
                ..quiet()
            }),
        );
        assert_eq!(
            d.codex_limits,
            v(&format!(
                r#"{{"state":"ok","source":"rollout","windows":[{{"id":"primary","resets_at":{},"reset_since_observed":true}},{{"id":"secondary","resets_at":{},"reset_since_observed":false}}]}}"#,
                NOW - 1,
                NOW + 1
            ))
        );
    }

    fn worker_for(options: &Options, stored: Stored, herdr: bool) -> Worker {
        decide(
            options,
            &Inputs {
                claude_needs_herdr_session: herdr,
                ..inputs(stored)
            },
        )
        .effects
        .worker
    }

    #[test]
    fn due_codex_limits_start_a_worker() {
        let codex = |stored| {
            worker_for(
                &auto(),
                Stored {
                    limits_codex: stored,
                    ..quiet()
                },
                false,
            )
        };
        let due = Worker::Spawn(SpawnReason::LimitsDue);
        let idle = Worker::Skip(SkipReason::NothingDue);
        assert_eq!(codex(None), due);
        // Five minutes after a success, fifteen after an error.
        assert_eq!(codex(limits("ok", 4 * MINUTE)), idle);
        assert_eq!(codex(limits("ok", 6 * MINUTE)), due);
        assert_eq!(codex(limits("error", 10 * MINUTE)), idle);
        assert_eq!(codex(limits("error", 20 * MINUTE)), due);
    }

    #[test]
    fn due_claude_limits_start_a_worker_only_when_the_toggle_is_on() {
        let claude = |on| {
            worker_for(
                &options(RefreshMode::Auto, on),
                Stored {
                    limits_claude: limits("ok", 10 * MINUTE),
                    ..quiet()
                },
                false,
            )
        };
        assert_eq!(claude(true), Worker::Spawn(SpawnReason::LimitsDue));
        assert_eq!(claude(false), Worker::Skip(SkipReason::NothingDue));
    }

    #[test]
    fn on_a_herdr_session_host_the_trigger_needs_a_launcher_and_is_spaced() {
        let runtime = Some(v(
            r#"{"v":1,"recorded_at":1,"binary":"/b/heeler","herdr_bin":"/b/herdr","herdr_socket":"/s.sock","env":{}}"#,
        ));
        let trigger = |ago: i64| {
            Some(v(&format!(
                r#"{{"at":{},"ok":true,"error":null}}"#,
                NOW - ago
            )))
        };
        let on = options(RefreshMode::Auto, true);
        let case = |runtime: &Option<Value>, claude, last_trigger| {
            worker_for(
                &on,
                Stored {
                    runtime: runtime.clone(),
                    limits_claude: claude,
                    claude_limits_trigger: last_trigger,
                    ..quiet()
                },
                true,
            )
        };
        let due = Worker::Spawn(SpawnReason::LimitsDue);
        let idle = Worker::Skip(SkipReason::NothingDue);
        assert_eq!(case(&runtime, None, None), due);
        assert_eq!(case(&None, None, None), idle, "no herdr binary recorded");
        assert_eq!(case(&runtime, None, trigger(2 * MINUTE)), idle);
        assert_eq!(case(&runtime, None, trigger(6 * MINUTE)), due);
        assert_eq!(
            case(&runtime, limits("ok", 10 * MINUTE), trigger(6 * MINUTE)),
            due
        );
        assert_eq!(case(&runtime, limits("ok", MINUTE), None), idle);
        let off = worker_for(&auto(), Stored { runtime, ..quiet() }, true);
        assert_eq!(off, idle);
    }

    #[test]
    fn without_a_home_the_answer_says_so_and_does_nothing() {
        for refresh in [RefreshMode::Auto, RefreshMode::Force, RefreshMode::Never] {
            let d = decide(
                &options(refresh, true),
                &Inputs {
                    stored: Err(NoHome),
                    ..inputs(quiet())
                },
            );
            assert_eq!(
                d.errors,
                [report::error("no_home", &NoHome.to_string())],
                "{refresh:?}"
            );
            assert_eq!(
                d.effects,
                Effects {
                    want_zone: None,
                    claude_limits_wanted: WantedFile::Leave,
                    worker: Worker::Skip(SkipReason::NoHome),
                }
            );
            assert_eq!(d.state, RefreshState::Stale);
            assert_eq!(d.runtime, v(r#"{"state":"missing"}"#));
            assert_eq!(d.codex_limits, v(r#"{"state":"pending"}"#));
            let answer = render(&d, SnapshotRead::Missing, &Zone::utc(), NOW);
            assert_eq!(answer.get("generated_at"), Some(&Value::Null));
            // The documented shape, empty: nothing is covered yet.
            let empty = r#""files_unreadable":0,"dirs_unreadable":0,"lines_malformed":0,"lines_oversized":0,"duplicates_dropped":0"#;
            let coverage = format!(
                r#"{{"claude":{{"roots":[],"files_seen":0,"files_in_window":0,{empty},"earliest":null,"latest":null}},"codex":{{"roots":[],"files_seen":0,"files_in_window":0,"files_compressed":0,"files_compressed_skipped":0,{empty},"forks_unresolved":0,"earliest":null,"latest":null}},"partial":true}}"#
            );
            assert_eq!(answer.get("coverage"), Some(&v(&coverage)));
        }
    }

    #[test]
    fn a_bad_zone_is_the_first_error() {
        let d = decide(
            &auto(),
            &Inputs {
                zone_error: Some(TzError::Unknown),
                stored: Ok(Stored {
                    snapshot: SnapshotRead::Unreadable,
                    ..quiet()
                }),
                ..inputs(quiet())
            },
        );
        assert_eq!(codes(&d), ["unknown_tz", "snapshot_unreadable"]);
        let no_home = decide(
            &auto(),
            &Inputs {
                zone_error: Some(TzError::BadName),
                stored: Err(NoHome),
                ..inputs(quiet())
            },
        );
        assert_eq!(codes(&no_home), ["bad_tz", "no_home"]);
    }

    #[test]
    fn the_answer_carries_the_decision() {
        let d = decide(
            &options(RefreshMode::Auto, true),
            &inputs(Stored {
                snapshot: slots(2 * MINUTE, false),
                ..quiet()
            }),
        );
        let answer = render(&d, slots(2 * MINUTE, false), &Zone::utc(), NOW);
        assert_eq!(answer.get("now"), Some(&Value::from(NOW)));
        assert_eq!(answer.get("generated_at"), Some(&Value::from(NOW - 120)));
        assert_eq!(answer.get("tz").and_then(Value::as_str), Some("UTC"));
        assert_eq!(
            answer.get("refresh"),
            Some(&v(
                r#"{"state":"running","started_at":null,"last_success_at":null,"last_error":null,"retry_after_ms":2000}"#
            ))
        );
        assert_eq!(answer.get("runtime"), Some(&v(r#"{"state":"missing"}"#)));
        assert_eq!(
            answer.get("limits"),
            Some(&v(
                r#"{"claude":{"state":"pending"},"codex":{"state":"ok","fetched_at":1}}"#
            ))
        );
        assert_eq!(answer.get("coverage"), Some(&v(r#"{"partial":false}"#)));
        assert_eq!(answer.get("errors"), Some(&v("[]")));
    }

    #[test]
    fn an_untrusted_state_dir_is_an_error_and_starts_and_writes_nothing() {
        let untrusted = Stored {
            untrusted: Some(
                "/s is writable by group or others (mode 0777); run `chmod go-w /s`".into(),
            ),
            ..Stored::empty()
        };
        for options in [auto(), options(RefreshMode::Force, true)] {
            let d = decide(&options, &inputs(untrusted.clone()));
            assert_eq!(codes(&d), ["untrusted_state_dir"]);
            assert_eq!(
                d.errors[0].get("message").and_then(Value::as_str),
                Some("/s is writable by group or others (mode 0777); run `chmod go-w /s`")
            );
            assert_eq!(d.effects.worker, Worker::Skip(SkipReason::Untrusted));
            assert_eq!(d.effects.claude_limits_wanted, WantedFile::Leave);
            assert_eq!(d.effects.want_zone, None);
            assert_eq!(d.state, RefreshState::Stale);
            assert_eq!(d.runtime, v(r#"{"state":"missing"}"#));
        }
    }
}

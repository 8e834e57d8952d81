//! `heeler hook-worker`: the detached process that serves one session's
//! hook queue (`spool.rs`), so that no event hook sleeps inside herdr's
//! command slot.
//!
//! A hook starts it with its own environment (minus the event), in a new
//! session (`setsid` before `exec`), stdio on `/dev/null`; the worker first
//! closes every other descriptor it inherited, so herdr never waits on a
//! pipe or socket the worker keeps. Re-executing our own binary rather
//! than forking the hook keeps the worker a fresh single-threaded process
//! (no state, lock or buffer copied from the hook) and leaves herdr's slot
//! after one `fork`+`exec`. The hook does not wait for it: when the hook
//! exits the worker is re-parented, as a double fork would leave it.
//!
//! The loop: take the session's lock (another worker holds it: exit), then
//! until the spool has stayed empty for [`LINGER`]: sleep until the
//! earliest entry is due plus [`GATHER`] (or a held entry's slot), and
//! serve every due entry as one batch ([`next_step`] decides; pure). A batch is grouped by the hooks'
//! environments; each group re-checks its panes with one `agent list`
//! (`agent get` when one notify event is alone, as the hook did), shares
//! one relay client and one workspace label lookup per workspace, and runs
//! each event's rest of the hook (`notify::finish`, `activity::finish`)
//! with the spec's semantics: the per-pane re-check, the per-session dedupe
//! marker, the latest-wins claim. After releasing the lock it looks at the
//! spool once more and serves again if an entry arrived meanwhile.
//!
//! The relay's rate limits (`pacing.rs`): before a batch's rounds the
//! worker asks the pacer's plan which entries may be sent now, device by
//! device; the others stay in the spool, untouched and in their place, held
//! in memory until the slot the plan gave, and are planned again with every
//! batch, so the alerts to one device keep the order of their events while
//! another device's go on. The queue is an outbox: a round that leaves
//! devices owed (a 429, an outage after the push's attempts, a device that
//! had to wait) puts its event back under its own name ([`put_back`]), owed
//! only to those devices, until their time; it is dropped only by its
//! re-check or [`MAX_AGE_MS`] after the event. The worker lingers only once
//! the spool is empty, so it outlives every held entry; the pacer is the
//! Host's, one per relay, shared with every session's worker through a
//! locked file (`delivery::Relays::sync`).
//!
//! `hook-worker` itself is a supervisor: it runs `hook-worker --serve` and
//! starts it again when it is killed with entries left ([`after_worker`]);
//! an entry the killed worker had in hand is put back by the next one
//! (`Queue::recover`).
//!
//! When the hook cannot start a worker at all (the system refuses the
//! spawn, or refuses to run this binary again: qemu-user without
//! binfmt_misc answers `ENOEXEC`), [`notify_hook`] and [`activity_hook`]
//! serve the queue in the hook's own process, as the hooks did before
//! there was a worker: the event is late for herdr's slot, never lost.
//!
//! Failures cannot reach herdr's plugin log any more; each is one line in
//! the failure log (`failure_log.rs`), worded as the hook's stderr line was.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::base::json::Value;
use crate::cli::{ActivityHookArgs, HookWorkerArgs, NotifyHookArgs};
use crate::exit::Failure;
use crate::herdr::answer::Agent;
use crate::herdr::client::{self, HerdrClient, HerdrError};
use crate::herdr::session;
use crate::hooks::delivery::{self, Deferral, Deferred, Relays};
use crate::hooks::pacing::{self, Ask, Class, Limits, Slot};
use crate::hooks::settings::NotifySettings;
use crate::hooks::spool::{self, Entry, Job, Listed, Origin, Queue};
use crate::hooks::{activity, env, failure_log, notify, registration, relay, settings};

/// How long past the earliest due time the worker waits, so that the events
/// of one burst are served by one batch.
pub(crate) const GATHER: Duration = Duration::from_millis(50);

/// How long an empty spool is watched before the worker exits.
pub(crate) const LINGER: Duration = Duration::from_millis(250);

/// The environment variable that shortens [`LINGER`] (tests only;
/// milliseconds, 0 to 250): a test waits for the worker to exit after each
/// of its hooks.
pub const LINGER_ENV: &str = "HEELER_TEST_LINGER_MS";

/// The longest sleep between two looks at the spool.
pub(crate) const POLL: Duration = Duration::from_millis(25);

/// How long a worker waits on others: each relay attempt and each herdr
/// call, and an empty spool for another hook's event before it exits.
/// The defaults are the contract's 10 s attempt
/// ([`relay::ATTEMPT_TIMEOUT`]), herdr's client's and [`LINGER`];
/// [`serve_here`] caps the first two at the tests'
/// `HEELER_TEST_DEADLINE_MS` and takes the linger from [`LINGER_ENV`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadlines {
    pub(crate) relay_attempt: Duration,
    pub(crate) herdr: client::Deadlines,
    pub(crate) linger: Duration,
}

impl Default for Deadlines {
    fn default() -> Deadlines {
        Deadlines::capped(None)
    }
}

impl Deadlines {
    /// The defaults, each at most `cap`.
    pub(crate) fn capped(cap: Option<Duration>) -> Deadlines {
        Deadlines {
            relay_attempt: cap.map_or(relay::ATTEMPT_TIMEOUT, |cap| {
                relay::ATTEMPT_TIMEOUT.min(cap)
            }),
            herdr: client::Deadlines::capped(cap),
            linger: LINGER,
        }
    }

    /// These deadlines with the linger a value of [`LINGER_ENV`] sets:
    /// unset or unusable keeps [`LINGER`], and it is never longer.
    pub(crate) fn with_linger_of(self, value: Option<&std::ffi::OsStr>) -> Deadlines {
        let linger = value
            .and_then(|v| v.to_str())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(LINGER, |ms| LINGER.min(Duration::from_millis(ms)));
        Deadlines { linger, ..self }
    }
}

/// What the worker does next, from the listed entries (earliest due
/// first) and the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing is queued.
    Empty,
    /// Nothing to serve for this long.
    Wait(Duration),
    /// Serve the first this many entries (all due; those the pacing holds
    /// back are planned again with the rest, so their order holds).
    Serve(usize),
}

/// One listed entry as the schedule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Due {
    /// The due time its name carries.
    pub due_ms: u64,
    /// When the pacing's last plan held it back, the time it gave.
    pub(crate) held_until: Option<u64>,
}

/// The schedule: wait until the earliest entry is due plus `gather` (or,
/// for an entry the pacing held back, until the time it gave), then serve
/// every entry due by now.
pub(crate) fn next_step(entries: &[Due], now_ms: u64, gather: Duration) -> Step {
    let gather = gather.as_millis() as u64;
    let Some(start) = entries
        .iter()
        .map(|e| match e.held_until {
            Some(until) => until.max(e.due_ms),
            None => e.due_ms.saturating_add(gather),
        })
        .min()
    else {
        return Step::Empty;
    };
    if now_ms < start {
        return Step::Wait(Duration::from_millis(start - now_ms));
    }
    Step::Serve(entries.iter().take_while(|e| e.due_ms <= now_ms).count())
}

/// `heeler notify-hook`: the hook, then the queue served here when no
/// worker could be started.
pub fn notify_hook(_args: NotifyHookArgs) -> Result<(), Failure> {
    match notify::run_with(&env::process_env) {
        Err(notify::NotifyError::NoWorker(e)) => serve_in_hook("notify-hook", &e),
        result => result.map_err(|e| Failure::new(format!("notify-hook: {e}"), 1)),
    }
}

/// `heeler activity-hook`: the hook, then the queue served here when no
/// worker could be started.
pub fn activity_hook(_args: ActivityHookArgs) -> Result<(), Failure> {
    match activity::run_with(&env::process_env) {
        Err(activity::ActivityError::NoWorker(e)) => serve_in_hook("activity-hook", &e),
        result => result.map_err(|e| Failure::new(format!("activity-hook: {e}"), 1)),
    }
}

/// The worker's work in the hook's own process, after the hook queued its
/// event but could not start a worker; the reason is logged once.
fn serve_in_hook(hook: &str, error: &std::io::Error) -> Result<(), Failure> {
    if let Some(dir) = env::process_env("HERDR_PLUGIN_STATE_DIR").filter(|v| !v.is_empty()) {
        let line =
            format!("{hook}: cannot start the hook worker ({error}); the hook serves its queue");
        log(Path::new(&dir), &line);
    }
    serve_here()
}

/// The CLI entry point: `hook-worker` supervises, `hook-worker --serve`
/// serves.
pub fn run(args: HookWorkerArgs) -> Result<(), Failure> {
    // First, before anything here owns a descriptor.
    crate::base::sys::close_inherited_fds();
    if args.serve {
        serve_here()
    } else {
        supervise()
    }
}

/// The pause before a killed worker is started again.
pub(crate) const RESTART_PAUSE: Duration = Duration::from_millis(100);

/// Worker runs in a row that each ended within a second before the
/// supervisor stops starting them (a worker that cannot run at all): the
/// entries then wait for the next hook run.
pub(crate) const QUICK_ENDS_MAX: u32 = 5;

/// What the supervisor does once its worker has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterWorker {
    /// Nothing is left for it: exit.
    Exit,
    /// Start the worker again (after [`RESTART_PAUSE`]).
    Restart,
}

/// The supervisor's decision (pure): `entries_left` whether the spool
/// still holds an entry, `lock_free` whether no other process holds the
/// session's lock, `killed` whether the worker ended by a signal, `code`
/// its exit code otherwise, `quick_ends` the runs in a row (this one
/// included) that ended within a second.
pub(crate) fn after_worker(
    entries_left: bool,
    lock_free: bool,
    killed: bool,
    code: Option<i32>,
    quick_ends: u32,
) -> AfterWorker {
    let refused = !killed && code != Some(0);
    if !entries_left || !lock_free || refused || quick_ends >= QUICK_ENDS_MAX {
        // Another holder of the lock serves (or starts a worker after its
        // probe); a worker that refused to run (an untrusted state dir)
        // would refuse again.
        return AfterWorker::Exit;
    }
    AfterWorker::Restart
}

/// `hook-worker`: runs `hook-worker --serve` and starts it again when it
/// ends with entries left and no other worker (killed by the OOM killer
/// or a user while it held alerts), so that a held alert goes by its due
/// time without waiting for the next agent event. A supervisor that
/// cannot start a worker serves in its own process.
fn supervise() -> Result<(), Failure> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let Some((queue, log_dir)) = session_queue() else {
        return serve_here();
    };
    let mut quick_ends = 0;
    loop {
        let started = Instant::now();
        let exe = match spool::own_executable() {
            Ok(exe) => exe,
            Err(_) => return serve_here(),
        };
        let status = std::process::Command::new(exe)
            .args(["hook-worker", "--serve"])
            .arg0("heeler")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        let Ok(status) = status else {
            return serve_here();
        };
        quick_ends = if started.elapsed() < Duration::from_secs(1) {
            quick_ends + 1
        } else {
            0
        };
        // The hand-off rule of a probe: the spool is looked at after the
        // lock is released, so an entry a hook wrote while this probe held
        // the lock (and so started no worker) is seen here.
        let lock_free = queue.lock_is_free();
        let left = queue.list().len();
        match after_worker(
            left > 0,
            lock_free,
            status.signal().is_some(),
            status.code(),
            quick_ends,
        ) {
            AfterWorker::Exit => {
                if left > 0 && lock_free && quick_ends >= QUICK_ENDS_MAX {
                    log(
                        &log_dir,
                        &format!(
                            "hook-worker: the worker ended {quick_ends} times in a row within a second; \
                             {left} queued events wait for the next hook"
                        ),
                    );
                }
                return Ok(());
            }
            AfterWorker::Restart => {
                if let Some(signal) = status.signal() {
                    log(
                        &log_dir,
                        &format!(
                            "hook-worker: the worker was ended by signal {signal} with {left} queued events; started again"
                        ),
                    );
                }
                std::thread::sleep(RESTART_PAUSE);
            }
        }
    }
}

/// This process's session queue and the plugin state dir, from the hook
/// environment; `None` without a plugin state dir.
fn session_queue() -> Option<(Queue, PathBuf)> {
    let plugin_state_dir = env::process_env("HERDR_PLUGIN_STATE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)?;
    let socket = env::process_env("HERDR_SOCKET_PATH").filter(|v| !v.is_empty());
    let session =
        session::from_socket_path(socket.as_ref().map(|s| s.to_string_lossy()).as_deref());
    Some((
        Queue::of(&session.state_dir(&plugin_state_dir)),
        plugin_state_dir,
    ))
}

/// Serves this process's session queue (from the hook environment) until
/// it is idle.
fn serve_here() -> Result<(), Failure> {
    let fail = |why: &str| Failure::new(format!("hook-worker: {why}"), 1);
    let plugin_state_dir = env::process_env("HERDR_PLUGIN_STATE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| fail("HERDR_PLUGIN_STATE_DIR is not set"))?;
    let socket = env::process_env("HERDR_SOCKET_PATH").filter(|v| !v.is_empty());
    let session =
        session::from_socket_path(socket.as_ref().map(|s| s.to_string_lossy()).as_deref());
    let state_dir = session.state_dir(&plugin_state_dir);
    if let Err(e) = crate::base::dirs::trusted_tree(&state_dir, &["queue", "queue/spool"]) {
        let line = format!("hook-worker: not run: {e}");
        log(&plugin_state_dir, &line);
        return Err(fail(&format!("not run: {e}")));
    }
    let limits = Limits::from_env(env::process_env(pacing::MINUTE_ENV).as_deref());
    let deadlines = Deadlines::capped(crate::base::clock::test_deadline_cap())
        .with_linger_of(env::process_env(LINGER_ENV).as_deref());
    let herdr_bin = herdr_bin(
        env::process_env("HERDR_BIN_PATH").filter(|v| !v.is_empty()),
        &plugin_state_dir,
    );
    serve_queue(
        &Queue::of(&state_dir),
        &plugin_state_dir,
        &herdr_bin,
        limits,
        deadlines,
    )
    .map_err(|e| fail(&format!("queue lock: {e}")))
}

/// The herdr binary the worker may fall back on: the `HERDR_BIN_PATH`
/// herdr gave the hook that started it (never a path read from the
/// queue), when it passes the trust rule of heeler's own binary
/// ([`crate::base::dirs::trusted_binary`]). A file there that fails it is
/// not run (an empty path, which no spawn runs), with a line; a path with
/// no file is kept, and fails as it would have.
fn herdr_bin(value: Option<std::ffi::OsString>, log_dir: &Path) -> PathBuf {
    let Some(path) = value.map(PathBuf::from) else {
        return PathBuf::new();
    };
    if std::fs::symlink_metadata(&path).is_err() {
        return path;
    }
    match crate::base::dirs::trusted_binary(&path) {
        Ok(()) => path,
        Err(e) => {
            log(
                log_dir,
                &format!("hook-worker: not running herdr's CLI from HERDR_BIN_PATH: {e}"),
            );
            PathBuf::new()
        }
    }
}

/// The hand-off loop around [`serve`]: one worker at a time, and nothing
/// queued before the last look is left behind.
pub(crate) fn serve_queue(
    queue: &Queue,
    log_dir: &Path,
    herdr_bin: &Path,
    limits: Limits,
    deadlines: Deadlines,
) -> std::io::Result<()> {
    let mut relays = Relays::new(limits, deadlines.relay_attempt);
    loop {
        let Some(lock) = queue.try_lock()? else {
            return Ok(());
        };
        queue.sweep_temps();
        let recovered = queue.recover();
        if recovered > 0 {
            log(
                log_dir,
                &format!(
                    "hook-worker: put back {recovered} queued events a killed worker had in hand"
                ),
            );
        }
        // An older version's per-session pacing kept push tokens: gone
        // (the Host's shared pacing keeps their hashes).
        crate::base::atomic_file::sweep_stale_temps(&queue.pacing_path());
        let _ = std::fs::remove_file(queue.pacing_path());
        serve(queue, log_dir, herdr_bin, &mut relays, deadlines);
        drop(lock);
        if queue.list().is_empty() {
            return Ok(());
        }
    }
}

/// The entries the pacing held back, by path: read once, planned again
/// with every batch, sent when their slot comes. They stay in the spool
/// untouched, so a kill loses none of them.
type Held = HashMap<PathBuf, (Entry, u64)>;

/// Serves the spool until it has stayed empty for the deadlines' linger.
fn serve(
    queue: &Queue,
    log_dir: &Path,
    herdr_bin: &Path,
    relays: &mut Relays,
    deadlines: Deadlines,
) {
    let mut empty_since: Option<Instant> = None;
    let mut held = Held::new();
    loop {
        let listed = queue.list();
        let present: std::collections::HashSet<&Path> =
            listed.iter().map(|l| l.path.as_path()).collect();
        held.retain(|path, _| present.contains(path.as_path()));
        let dues: Vec<Due> = listed
            .iter()
            .map(|l| Due {
                due_ms: l.due_ms,
                held_until: held.get(&l.path).map(|(_, until)| *until),
            })
            .collect();
        match next_step(&dues, crate::base::clock::unix_millis(), GATHER) {
            Step::Empty => {
                if empty_since.get_or_insert_with(Instant::now).elapsed() >= deadlines.linger {
                    return;
                }
                std::thread::sleep(POLL);
            }
            Step::Wait(wait) => {
                empty_since = None;
                std::thread::sleep(wait.min(POLL));
            }
            Step::Serve(count) => {
                empty_since = None;
                serve_batch(
                    queue,
                    &listed[..count],
                    log_dir,
                    herdr_bin,
                    relays,
                    &mut held,
                    deadlines,
                );
                relays.sync(log_dir, |_| ());
            }
        }
    }
}

fn log(log_dir: &Path, line: &str) {
    // Nowhere is left to report a failure to log.
    let _ = failure_log::append(log_dir, line);
}

fn entry_name(listed: &Listed) -> String {
    listed
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads the due entries and serves them per hook environment, in due
/// order. Damaged entries and entries of another session are dropped with
/// a line.
fn serve_batch(
    queue: &Queue,
    due: &[Listed],
    log_dir: &Path,
    herdr_bin: &Path,
    relays: &mut Relays,
    held: &mut Held,
    deadlines: Deadlines,
) {
    let mut groups: Vec<(Origin, Vec<(&Listed, Entry)>)> = Vec::new();
    for listed in due {
        let entry = match held.remove(&listed.path) {
            Some((entry, _)) => Some(entry),
            None => queue.read(listed),
        };
        match entry {
            Some(entry) if spool::belongs_to(&entry.origin, &queue.state_dir) => {
                match groups
                    .iter_mut()
                    .find(|(origin, _)| *origin == entry.origin)
                {
                    Some((_, entries)) => entries.push((listed, entry)),
                    None => groups.push((entry.origin.clone(), vec![(listed, entry)])),
                }
            }
            Some(_) => {
                if queue.take(listed) {
                    log(
                        log_dir,
                        &format!(
                            "hook-worker: dropped {}: queued for another session",
                            entry_name(listed)
                        ),
                    );
                }
            }
            None => {
                if queue.take(listed) {
                    log(
                        log_dir,
                        &format!("hook-worker: dropped {}: damaged", entry_name(listed)),
                    );
                }
            }
        }
    }
    for (origin, entries) in groups {
        let env = origin.hook_env(herdr_bin);
        serve_group(queue, &env, entries, log_dir, relays, held, deadlines);
    }
}

/// The devices (by push token) an entry's round would push to, and its
/// class, from the registration file: what the pacing plans with. A
/// status that does not notify pushes nothing.
pub(crate) fn ask_of(job: &Job, file: Option<&Value>, env: &env::HookEnv) -> Ask {
    match job {
        Job::Notify { event, only, .. } => Ask {
            class: Class::Alert,
            tokens: notify::notify_flag(&event.status)
                .map(|flag| notify::alert_devices(file, env, flag, only))
                .unwrap_or_default()
                .into_iter()
                .map(|d| d.token)
                .collect(),
        },
        Job::Activity { .. } => Ask {
            class: Class::Activity,
            tokens: registration::activity_devices(file, &env.session)
                .into_iter()
                .map(|d| d.token)
                .collect(),
        },
    }
}

/// What becomes of an entry whose round left devices owed (the relay's
/// rate limit, an outage, or a device that had to wait).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PutBack {
    /// Back in the spool, held until then; an alert owed to some devices
    /// only names them.
    Requeue(Job, u64),
    /// Stale: queued longer than [`MAX_AGE_MS`] ago.
    Drop,
}

/// The longest an event is kept in the outbox, from when its hook queued
/// it: two hours, so that an outage of an hour loses nothing, while a
/// relay that still refuses after that is broken and the worker must not
/// outlive it. Before that, an alert goes stale only by its re-check (a
/// pane no longer in the status it announces is not alerted), made before
/// each try.
pub(crate) const MAX_AGE_MS: u64 = 2 * 3_600_000;

/// The decision after a round that still owes its event to `owed` (token,
/// time it may be tried again) of the `asked` tokens: held until the first
/// of those times (then planned again, device by device); an alert is owed
/// only to those devices when others got it (every device owed: the event
/// as it was).
pub(crate) fn put_back(
    job: &Job,
    asked: &[String],
    owed: &[(String, u64)],
    queued_ms: u64,
    now_ms: u64,
) -> PutBack {
    if now_ms.saturating_sub(queued_ms) > MAX_AGE_MS {
        return PutBack::Drop;
    }
    let due = owed.iter().map(|(_, at)| *at).min().unwrap_or(now_ms);
    let job = match job {
        Job::Notify { event, ts, .. }
            if !asked.iter().all(|t| owed.iter().any(|(o, _)| o == t)) =>
        {
            Job::Notify {
                event: event.clone(),
                ts: *ts,
                only: owed.iter().map(|(t, _)| t.clone()).collect(),
            }
        }
        other => other.clone(),
    };
    PutBack::Requeue(job, due)
}

/// When the hook queued an entry's event (Unix milliseconds), for
/// [`MAX_AGE_MS`].
fn queued_at_ms(job: &Job) -> u64 {
    match job {
        Job::Notify { ts, .. } => u64::try_from(*ts).unwrap_or(0).saturating_mul(1_000),
        Job::Activity { claimed_at_ms, .. } => *claimed_at_ms,
    }
}

/// Serves the due entries of one hook environment: the pacing's plan
/// first (entries it holds back stay in the spool, held until the time it
/// gives), then each entry's rest of the hook; a round the relay
/// rate-limited is put back, held until its `Retry-After`.
fn serve_group(
    queue: &Queue,
    env: &env::HookEnv,
    entries: Vec<(&Listed, Entry)>,
    log_dir: &Path,
    relays: &mut Relays,
    held: &mut Held,
    deadlines: Deadlines,
) {
    if let Err(e) = crate::base::dirs::trusted(&env.config_dir) {
        for (listed, entry) in &entries {
            if queue.take(listed) {
                log(log_dir, &format!("{}: not run: {e}", entry.job.hook_name()));
            }
        }
        return;
    }
    let settings = settings::load(&env.config_dir);
    let herdr = env.herdr(deadlines.herdr);
    relays.share(&env.plugin_state_dir, &settings.relay_url);
    let kept = drop_superseded(queue, env, entries);
    let ready = pace(kept, env, relays, held, log_dir);
    let mut group = Group {
        env,
        herdr: &herdr,
        settings: &settings,
        one_list: one_agent_list(ready.iter().map(|(_, entry, _)| &entry.job)),
        inventory: None,
        labels: HashMap::new(),
    };
    // The tokens of the entries held back below, with their times: a later
    // entry for one of them waits behind it.
    let mut behind: HashMap<String, u64> = HashMap::new();
    for (listed, entry, ask) in ready {
        // A 429 or an outage earlier in this batch may hold this ask back
        // after all; each device is planned on its own, so one phone's
        // backlog never holds another's alert.
        let split = plan_and_reserve(relays, log_dir, &entry.job, &ask, &behind);
        let now = crate::base::clock::unix_millis();
        if split.now.is_empty() && !ask.tokens.is_empty() {
            for (token, until) in &split.later {
                behind.insert(token.clone(), *until);
            }
            let until = split.later.iter().map(|(_, at)| *at).min().unwrap_or(now);
            held.insert(listed.path.clone(), (entry, until));
            continue;
        }
        // Claimed before acting: a kill from here on leaves the claim for
        // the next worker to put back.
        let Some(claimed) = queue.claim(listed) else {
            continue;
        };
        let (job, check_marker) = narrowed(&entry.job, &split);
        let (deferred, result) = group.finish(&job, check_marker, relays);
        if let Err(message) = result {
            log(log_dir, &format!("{}: {message}", entry.job.hook_name()));
        }
        relays.pacer_mut().clear_reservations();
        let owed = owed_tokens(relays, &deferred, &split.later, log_dir, &entry.job);
        // What the round told the pacing (its requests, a 429, an outage,
        // a 410's forgotten token) reaches the Host's file now.
        relays.sync(log_dir, |_| ());
        if owed.is_empty() {
            queue.release(&claimed);
            continue;
        }
        for (token, until) in &owed {
            behind.insert(token.clone(), *until);
        }
        put_back_entry(queue, listed, entry, &ask, &owed, log_dir, held);
        queue.release(&claimed);
    }
}

/// [`split_ask`] and a reservation of the requests it lets go now, in one
/// turn at the Host's pacing, so that no other session's worker plans
/// into the same slots.
fn plan_and_reserve(
    relays: &mut Relays,
    log_dir: &Path,
    job: &Job,
    ask: &Ask,
    behind: &HashMap<String, u64>,
) -> Split {
    relays.sync(log_dir, |pacer| {
        let now = crate::base::clock::unix_millis();
        let split = split_ask(pacer, job, ask, behind, now);
        for token in &split.now {
            pacer.reserve(token, now);
        }
        split
    })
}

/// An ask split by device: the tokens that may go now, and the others with
/// the time each may go. A Live Activity ask is not split (its devices see
/// one state): it goes whole or waits for the last of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Split {
    pub(crate) now: Vec<String>,
    pub(crate) later: Vec<(String, u64)>,
}

/// Plans each of `ask`'s tokens on its own at `now`, behind the entries
/// held earlier in the batch for the same token (`behind`).
pub(crate) fn split_ask(
    pacer: &pacing::Pacer,
    job: &Job,
    ask: &Ask,
    behind: &HashMap<String, u64>,
    now: u64,
) -> Split {
    let when = |tokens: &[String]| {
        let planned = match pacer
            .plan(
                &[Ask {
                    class: ask.class,
                    tokens: tokens.to_vec(),
                }],
                now,
            )
            .first()
        {
            Some(Slot::At(until)) => *until,
            _ => now,
        };
        held_until(planned, tokens, behind)
    };
    let mut split = Split {
        now: Vec::new(),
        later: Vec::new(),
    };
    if matches!(job, Job::Activity { .. }) {
        let at = when(&ask.tokens);
        if at > now {
            split.later = ask.tokens.iter().map(|t| (t.clone(), at)).collect();
        } else {
            split.now = ask.tokens.clone();
        }
        return split;
    }
    for token in &ask.tokens {
        let at = when(std::slice::from_ref(token));
        if at > now {
            split.later.push((token.clone(), at));
        } else {
            split.now.push(token.clone());
        }
    }
    split
}

/// The job a round runs now: an alert some of whose devices must wait goes
/// to the others only. The marker check stays the event's own: whether it
/// is still owed to every device (`only` empty), returned second.
pub(crate) fn narrowed(job: &Job, split: &Split) -> (Job, bool) {
    match job {
        Job::Notify { event, ts, only } => (
            Job::Notify {
                event: event.clone(),
                ts: *ts,
                only: if split.later.is_empty() {
                    only.clone()
                } else {
                    split.now.clone()
                },
            },
            only.is_empty(),
        ),
        other => (other.clone(), false),
    }
}

/// The devices a round still owes its event, each with the time it may be
/// tried again: those it deferred (a 429 blocks the token until its
/// `Retry-After`; an outage holds the relay for its backoff, told to the
/// pacer by the push) and those that waited (`later`). The first outage of
/// a run is one log line, not one per try.
fn owed_tokens(
    relays: &mut Relays,
    deferred: &[Deferred],
    later: &[(String, u64)],
    log_dir: &Path,
    job: &Job,
) -> Vec<(String, u64)> {
    let now = crate::base::clock::unix_millis();
    let limits = relays.pacer().limits();
    let mut owed: Vec<(String, u64)> = later.to_vec();
    for d in deferred {
        let until = match &d.why {
            Deferral::RateLimited(ms) => {
                let wait = limits.scaled_ms(*ms);
                relays.pacer_mut().rate_limited(&d.token, now, wait);
                now.saturating_add(wait)
            }
            Deferral::Unavailable(message, _) => {
                let until = relays.pacer().down_until().max(now);
                if relays.pacer().failures() == 1 {
                    log(
                        log_dir,
                        &format!(
                            "{}: push for token {}… deferred: {message}; kept in the queue, tried again from {} ms on",
                            job.hook_name(),
                            delivery::token_prefix(&d.token),
                            until.saturating_sub(now)
                        ),
                    );
                }
                until
            }
        };
        owed.push((d.token.clone(), until));
    }
    owed
}

/// Puts an entry whose round left devices owed back under its own name
/// (so it keeps its place), held until the first of their times; a stale
/// one ([`MAX_AGE_MS`]) is dropped with a line.
fn put_back_entry(
    queue: &Queue,
    listed: &Listed,
    entry: Entry,
    ask: &Ask,
    owed: &[(String, u64)],
    log_dir: &Path,
    held: &mut Held,
) {
    let now = crate::base::clock::unix_millis();
    match put_back(&entry.job, &ask.tokens, owed, queued_at_ms(&entry.job), now) {
        PutBack::Requeue(job, until) => {
            let entry = Entry { job, ..entry };
            match queue.restore(listed, &entry) {
                Ok(()) => {
                    held.insert(listed.path.clone(), (entry, until));
                }
                Err(e) => log(
                    log_dir,
                    &format!(
                        "{}: cannot put {} back in the queue: {e}",
                        entry.job.hook_name(),
                        entry_name(listed)
                    ),
                ),
            }
        }
        PutBack::Drop => log(
            log_dir,
            &format!(
                "{}: dropped {}: still undelivered {} hours after the event (the relay refused or was unreachable at every try)",
                entry.job.hook_name(),
                entry_name(listed),
                MAX_AGE_MS / 3_600_000
            ),
        ),
    }
}

/// The entries whose claims did not lose to a newer one; the others are
/// taken from the spool before any herdr call.
fn drop_superseded<'a>(
    queue: &Queue,
    env: &env::HookEnv,
    entries: Vec<(&'a Listed, Entry)>,
) -> Vec<(&'a Listed, Entry)> {
    let mut kept = Vec::with_capacity(entries.len());
    for (listed, entry) in entries {
        match entry.job {
            Job::Activity { pid, claimed_at_ms }
                if activity::claim_superseded(&env.state_dir, pid, claimed_at_ms) =>
            {
                queue.take(listed);
            }
            _ => kept.push((listed, entry)),
        }
    }
    kept
}

/// The entries the pacing's plan lets go now, each with its ask; what it
/// holds back waits in the spool, held until the slot the plan gave.
fn pace<'a>(
    kept: Vec<(&'a Listed, Entry)>,
    env: &env::HookEnv,
    relays: &mut Relays,
    held: &mut Held,
    log_dir: &Path,
) -> Vec<(&'a Listed, Entry, Ask)> {
    let file = registration::read(&registration::path_in(&env.config_dir));
    let asks: Vec<Ask> = kept
        .iter()
        .map(|(_, entry)| ask_of(&entry.job, file.as_ref(), env))
        .collect();
    // An alert's devices are planned one by one: one phone's backlog never
    // holds the event for another.
    let mut flat: Vec<Ask> = Vec::with_capacity(asks.len());
    let mut owner: Vec<usize> = Vec::with_capacity(asks.len());
    for (index, ((_, entry), ask)) in kept.iter().zip(&asks).enumerate() {
        if matches!(entry.job, Job::Activity { .. }) || ask.tokens.len() < 2 {
            flat.push(ask.clone());
            owner.push(index);
        } else {
            for token in &ask.tokens {
                flat.push(Ask {
                    class: ask.class,
                    tokens: vec![token.clone()],
                });
                owner.push(index);
            }
        }
    }
    let mut slots: Vec<Option<u64>> = vec![None; asks.len()];
    let mut any_now = vec![false; asks.len()];
    let planned = relays.sync(log_dir, |pacer| {
        pacer.plan(&flat, crate::base::clock::unix_millis())
    });
    for (index, slot) in owner.into_iter().zip(planned) {
        match slot {
            Slot::Now => any_now[index] = true,
            Slot::At(until) => {
                let first = slots[index].get_or_insert(until);
                *first = (*first).min(until);
            }
        }
    }
    let mut ready = Vec::with_capacity(kept.len());
    for (index, ((listed, entry), ask)) in kept.into_iter().zip(asks).enumerate() {
        match slots[index] {
            Some(until) if !any_now[index] => {
                held.insert(listed.path.clone(), (entry, until));
            }
            _ => ready.push((listed, entry, ask)),
        }
    }
    ready
}

/// Whether a group's rounds share one `agent list` rather than each
/// asking `agent get`: unless one notify event is alone, as the hook did.
fn one_agent_list<'a>(jobs: impl Iterator<Item = &'a Job>) -> bool {
    let (mut notify, mut all) = (0, 0);
    for job in jobs {
        all += 1;
        if matches!(job, Job::Notify { .. }) {
            notify += 1;
        }
    }
    notify >= 2 || notify < all
}

/// When an ask may go: its planned slot, or later while an entry held
/// back earlier in the batch for one of its tokens still waits (`behind`
/// maps a token to that entry's time).
fn held_until(planned: u64, tokens: &[String], behind: &HashMap<String, u64>) -> u64 {
    tokens
        .iter()
        .filter_map(|t| behind.get(t))
        .fold(planned, |at, floor| at.max(*floor))
}

/// What one group's rounds share: the hooks' environment, one herdr
/// client, the settings, one agent inventory (asked at most once) and one
/// workspace label lookup.
struct Group<'a> {
    env: &'a env::HookEnv,
    herdr: &'a HerdrClient,
    settings: &'a NotifySettings,
    /// Whether notify rounds read the shared inventory ([`one_agent_list`]).
    one_list: bool,
    inventory: Option<Result<Vec<Agent>, HerdrError>>,
    labels: HashMap<String, Option<String>>,
}

impl Group<'_> {
    /// Runs one job's rest of the hook: the devices the relay turned away
    /// (429) and the failure, worded for the log.
    fn finish(
        &mut self,
        job: &Job,
        check_marker: bool,
        relays: &mut Relays,
    ) -> (Vec<Deferred>, Result<(), String>) {
        let herdr = self.herdr;
        match job {
            Job::Notify { event, ts, only } => {
                let current = if self.one_list {
                    self.inventory
                        .get_or_insert_with(|| herdr.agent_list())
                        .clone()
                        .and_then(|agents| agent_of(&agents, &event.pane))
                } else {
                    herdr.agent_get(&event.pane)
                };
                let mut round = notify::Round {
                    env: self.env,
                    herdr,
                    settings: self.settings,
                    relays,
                    labels: &mut self.labels,
                };
                let (limited, result) =
                    notify::finish(&mut round, event, *ts, only, check_marker, current);
                (limited, result.map_err(|e| e.to_string()))
            }
            Job::Activity { .. } => {
                let inventory = &mut self.inventory;
                let (limited, result) =
                    activity::finish(self.env, herdr, self.settings, relays, || {
                        inventory.get_or_insert_with(|| herdr.agent_list()).clone()
                    });
                (limited, result.map_err(|e| e.to_string()))
            }
        }
    }
}

/// A pane's agent in one `agent list`: absent means gone, as `agent get`'s
/// `agent_not_found`.
pub(crate) fn agent_of(agents: &[Agent], pane: &str) -> Result<Agent, HerdrError> {
    agents
        .iter()
        .find(|a| a.pane_id == pane)
        .cloned()
        .ok_or(HerdrError::AgentGone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notify_job(pane: &str) -> Job {
        Job::Notify {
            event: env::Event {
                pane: pane.to_string(),
                status: "done".to_string(),
                kind: None,
                workspace_id: None,
                title: None,
            },
            ts: 1,
            only: Vec::new(),
        }
    }

    #[test]
    fn a_lone_notify_event_asks_agent_get_and_any_other_group_one_agent_list() {
        let activity = Job::Activity {
            pid: 7,
            claimed_at_ms: 1,
        };
        let (a, b) = (notify_job("p1"), notify_job("p2"));
        assert!(!one_agent_list([&a].into_iter()));
        assert!(one_agent_list([&a, &b].into_iter()));
        assert!(one_agent_list([&a, &activity].into_iter()));
        assert!(one_agent_list([&activity].into_iter()));
        assert!(!one_agent_list(std::iter::empty()));
    }

    #[test]
    fn an_ask_waits_behind_the_latest_held_entry_of_any_of_its_tokens() {
        let behind: HashMap<String, u64> = [("t1".to_string(), 500), ("t2".to_string(), 900)]
            .into_iter()
            .collect();
        let tokens = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(held_until(100, &tokens(&[]), &behind), 100);
        assert_eq!(held_until(100, &tokens(&["t3"]), &behind), 100);
        assert_eq!(held_until(100, &tokens(&["t1"]), &behind), 500);
        assert_eq!(held_until(100, &tokens(&["t1", "t2"]), &behind), 900);
        assert_eq!(held_until(1_000, &tokens(&["t1", "t2"]), &behind), 1_000);
    }

    #[test]
    fn the_deadlines_are_the_contracts_unless_a_test_caps_them() {
        // The contracts: a relay attempt's timeout is 10 000 ms.
        let ten_seconds = Duration::from_millis(10_000);
        assert_eq!(Deadlines::default().relay_attempt, ten_seconds);
        assert_eq!(Deadlines::default().herdr, client::Deadlines::default());
        let second = Duration::from_millis(1_000);
        let capped = Deadlines::capped(Some(second));
        assert_eq!(capped.relay_attempt, second);
        assert_eq!(capped.herdr, client::Deadlines::capped(Some(second)));
        let long = Deadlines::capped(Some(Duration::from_secs(3_600)));
        assert_eq!(long, Deadlines::default(), "a cap never lengthens one");
    }

    #[test]
    fn only_a_number_of_milliseconds_shortens_the_linger() {
        let linger = |v: Option<&str>| {
            Deadlines::default()
                .with_linger_of(v.map(std::ffi::OsStr::new))
                .linger
        };
        assert_eq!(linger(None), Duration::from_millis(250));
        assert_eq!(linger(Some("50")), Duration::from_millis(50));
        assert_eq!(linger(Some("0")), Duration::ZERO);
        assert_eq!(linger(Some("9999")), Duration::from_millis(250));
        for unusable in ["", "-1", "fast"] {
            assert_eq!(linger(Some(unusable)), Duration::from_millis(250));
        }
    }

    fn due(due_ms: u64) -> Due {
        Due {
            due_ms,
            held_until: None,
        }
    }

    #[test]
    fn the_schedule_waits_for_the_earliest_plus_the_gather_then_serves_what_is_due() {
        let gather = Duration::from_millis(50);
        assert_eq!(next_step(&[], 1_000, gather), Step::Empty);
        assert_eq!(
            next_step(&[due(1_000), due(1_020)], 990, gather),
            Step::Wait(Duration::from_millis(60))
        );
        assert_eq!(
            next_step(&[due(1_000), due(1_020)], 1_049, gather),
            Step::Wait(Duration::from_millis(1))
        );
        assert_eq!(
            next_step(&[due(1_000), due(1_020), due(1_060)], 1_050, gather),
            Step::Serve(2)
        );
        // Never before an entry's own due time.
        assert_eq!(
            next_step(&[due(1_000), due(5_000)], 1_100, gather),
            Step::Serve(1)
        );
        assert_eq!(
            next_step(&[due(u64::MAX)], 0, gather),
            Step::Wait(Duration::from_millis(u64::MAX))
        );
    }

    #[test]
    fn entries_the_pacing_held_back_wait_for_their_slot_and_are_served_with_the_rest() {
        let gather = Duration::from_millis(50);
        let held = |due_ms, until| Due {
            due_ms,
            held_until: Some(until),
        };
        // Held until 9 000: nothing to do before then.
        assert_eq!(
            next_step(&[held(1_000, 9_000), held(1_001, 9_500)], 2_000, gather),
            Step::Wait(Duration::from_millis(7_000))
        );
        // At the slot (no gather), every due entry is planned again.
        assert_eq!(
            next_step(&[held(1_000, 9_000), held(1_001, 9_500)], 9_000, gather),
            Step::Serve(2)
        );
        // A new entry is served after its gather, with the held ones.
        assert_eq!(
            next_step(&[held(1_000, 9_000), due(3_000)], 3_050, gather),
            Step::Serve(2)
        );
        assert_eq!(
            next_step(&[held(1_000, 9_000), due(3_000)], 3_010, gather),
            Step::Wait(Duration::from_millis(40))
        );
    }

    fn blocked(only: &[&str]) -> Job {
        Job::Notify {
            event: env::Event {
                pane: "w1:p1".into(),
                status: "blocked".into(),
                kind: None,
                workspace_id: None,
                title: None,
            },
            ts: 1_000,
            only: only.iter().map(|t| (*t).to_owned()).collect(),
        }
    }

    #[test]
    fn an_owed_round_is_put_back_until_its_first_devices_time() {
        let asked = ["a".to_owned(), "b".to_owned()];
        let now = 1_000_000 + 5_000;
        // Every device owed: the event as it was, back at the first time.
        assert_eq!(
            put_back(
                &blocked(&[]),
                &asked,
                &[("a".into(), now + 40_000), ("b".into(), now + 55_000)],
                1_000_000,
                now
            ),
            PutBack::Requeue(blocked(&[]), now + 40_000)
        );
        // One got it: only the other is still owed the alert.
        assert_eq!(
            put_back(
                &blocked(&[]),
                &asked,
                &[("b".into(), now + 45_000)],
                1_000_000,
                now
            ),
            PutBack::Requeue(blocked(&["b"]), now + 45_000)
        );
        // A Live Activity round is always put back whole.
        let activity = Job::Activity {
            pid: 7,
            claimed_at_ms: 1_000_000,
        };
        assert_eq!(
            put_back(&activity, &asked, &[("b".into(), now + 1)], 1_000_000, now),
            PutBack::Requeue(activity.clone(), now + 1)
        );
        // Two hours after the event, it is stale.
        assert_eq!(MAX_AGE_MS, 7_200_000);
        assert_eq!(
            put_back(
                &blocked(&[]),
                &asked,
                &[("a".into(), 1)],
                1_000_000,
                1_000_000 + MAX_AGE_MS + 1
            ),
            PutBack::Drop
        );
        assert_eq!(queued_at_ms(&blocked(&[])), 1_000_000);
        assert_eq!(queued_at_ms(&activity), 1_000_000);
    }

    #[test]
    fn each_device_of_an_alert_goes_on_its_own_and_a_live_activity_whole() {
        let limits = pacing::Limits::relay(60_000);
        let mut pacer = pacing::Pacer::new(limits);
        // Phone A is backlogged (429 until 41 000); B is not.
        pacer.rate_limited("a", 1_000, 40_000);
        let ask = Ask {
            class: Class::Alert,
            tokens: vec!["a".into(), "b".into()],
        };
        let none = HashMap::new();
        let split = split_ask(&pacer, &blocked(&[]), &ask, &none, 2_000);
        assert_eq!(
            split,
            Split {
                now: vec!["b".into()],
                later: vec![("a".into(), 41_000)],
            }
        );
        // B's round checks the marker as the event's own, and goes to B only.
        assert_eq!(narrowed(&blocked(&[]), &split), (blocked(&["b"]), true));
        // An earlier held entry for B holds this one behind it.
        let behind: HashMap<String, u64> = [("b".to_string(), 9_000)].into_iter().collect();
        let split = split_ask(&pacer, &blocked(&[]), &ask, &behind, 2_000);
        assert!(split.now.is_empty());
        assert_eq!(split.later, vec![("a".into(), 41_000), ("b".into(), 9_000)]);
        // Nothing waits: the job as it was.
        let free = split_ask(&pacer, &blocked(&["b"]), &ask, &none, 41_000);
        assert!(free.later.is_empty());
        assert_eq!(narrowed(&blocked(&["b"]), &free), (blocked(&["b"]), false));
        // A Live Activity ask goes whole or waits for its last device.
        let activity = Job::Activity {
            pid: 7,
            claimed_at_ms: 1,
        };
        let live = Ask {
            class: Class::Activity,
            tokens: vec!["a".into(), "c".into()],
        };
        let split = split_ask(&pacer, &activity, &live, &none, 2_000);
        assert!(split.now.is_empty());
        assert_eq!(
            split.later,
            vec![("a".into(), 41_000), ("c".into(), 41_000)]
        );
    }

    #[test]
    fn a_worker_killed_with_entries_left_is_started_again_and_nothing_else() {
        use AfterWorker::{Exit, Restart};
        // (entries left, lock free, killed, exit code, quick ends)
        assert_eq!(after_worker(true, true, true, None, 1), Restart);
        assert_eq!(after_worker(true, true, false, Some(0), 0), Restart);
        assert_eq!(after_worker(false, true, true, None, 1), Exit, "all sent");
        assert_eq!(
            after_worker(true, false, true, None, 1),
            Exit,
            "another serves"
        );
        assert_eq!(after_worker(true, true, false, Some(1), 1), Exit, "refused");
        assert_eq!(after_worker(true, true, true, None, 4), Restart);
        assert_eq!(
            after_worker(true, true, true, None, 5),
            Exit,
            "a crash loop"
        );
    }

    #[test]
    fn a_pane_missing_from_the_list_is_gone() {
        let agents = crate::base::json::parse(
            r#"[{"pane_id":"w1:p1","agent_status":"blocked"},{"pane_id":"w1:p2"}]"#,
        )
        .unwrap();
        let agents = crate::herdr::answer::agents(agents.as_array().unwrap());
        assert_eq!(
            agent_of(&agents, "w1:p1").unwrap().agent_status.as_deref(),
            Some("blocked")
        );
        assert_eq!(agent_of(&agents, "w1:p9"), Err(HerdrError::AgentGone));
    }
}

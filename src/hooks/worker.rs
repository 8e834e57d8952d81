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
//! worker asks the pacer's plan which entries may be sent now; the others
//! stay in the spool, untouched and in their place, held in memory until
//! the slot the plan gave, and are planned again with every batch, so the
//! alerts to one device keep the order of their events. A round the relay
//! answers 429 puts its event back under its own name ([`put_back`]),
//! held until the `Retry-After`, owed only to the devices turned away. The
//! worker lingers only once the spool is empty, so it outlives every held
//! entry; the pacer outlives the worker: it is saved after every batch and
//! restored by the next worker of the session.
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
use crate::hooks::delivery::{RateLimited, Relays};
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

/// The CLI entry point.
pub fn run(_args: HookWorkerArgs) -> Result<(), Failure> {
    // First, before anything here owns a descriptor.
    crate::base::sys::close_inherited_fds();
    serve_here()
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
    serve_queue(&Queue::of(&state_dir), &plugin_state_dir, limits, deadlines)
        .map_err(|e| fail(&format!("queue lock: {e}")))
}

/// The hand-off loop around [`serve`]: one worker at a time, and nothing
/// queued before the last look is left behind.
pub(crate) fn serve_queue(
    queue: &Queue,
    log_dir: &Path,
    limits: Limits,
    deadlines: Deadlines,
) -> std::io::Result<()> {
    let mut relays = Relays::new(limits, deadlines.relay_attempt);
    loop {
        let Some(lock) = queue.try_lock()? else {
            return Ok(());
        };
        queue.sweep_temps();
        crate::base::atomic_file::sweep_stale_temps(&queue.pacing_path());
        restore_pacing(queue, &mut relays);
        serve(queue, log_dir, &mut relays, deadlines);
        drop(lock);
        if queue.list().is_empty() {
            return Ok(());
        }
    }
}

/// Paces on from what the session's previous worker sent (its saved
/// pacing; none or unreadable: a fresh pacer, which the relay's 429s then
/// correct). The relay's windows outlive a worker that exits a moment
/// after its last event.
fn restore_pacing(queue: &Queue, relays: &mut Relays) {
    if let Some(saved) = crate::base::json::read_file(&queue.pacing_path()) {
        let limits = relays.pacer().limits();
        let now = crate::base::clock::unix_millis();
        *relays.pacer_mut() = pacing::Pacer::restore(limits, &saved, now);
    }
}

/// Saves the pacing after a batch, for the session's next worker; a save
/// that fails costs at most a 429 later, and says so in the failure log.
fn save_pacing(queue: &Queue, log_dir: &Path, relays: &Relays) {
    let text = relays.pacer().to_json().to_json();
    let path = queue.pacing_path();
    if let Err(e) = crate::base::atomic_file::write_unsynced(&path, text.as_bytes(), 0o600) {
        log(
            log_dir,
            &format!("hook-worker: cannot save {}: {e}", path.display()),
        );
    }
}

/// The entries the pacing held back, by path: read once, planned again
/// with every batch, sent when their slot comes. They stay in the spool
/// untouched, so a kill loses none of them.
type Held = HashMap<PathBuf, (Entry, u64)>;

/// Serves the spool until it has stayed empty for the deadlines' linger.
fn serve(queue: &Queue, log_dir: &Path, relays: &mut Relays, deadlines: Deadlines) {
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
                    relays,
                    &mut held,
                    deadlines,
                );
                save_pacing(queue, log_dir, relays);
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
        serve_group(queue, &origin, entries, log_dir, relays, held, deadlines);
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

/// What becomes of an entry whose round the relay's rate limit turned
/// (partly) away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PutBack {
    /// Back in the spool, held until then; an alert owed to some devices
    /// only names them.
    Requeue(Job, u64),
    /// Stale: queued longer than [`MAX_AGE_MS`] ago.
    Drop,
}

/// The longest an event is kept re-queued by rate limits, from when its
/// hook queued it: a relay that still refuses after an hour is not paced
/// but broken, and the worker must not outlive it.
pub(crate) const MAX_AGE_MS: u64 = 3_600_000;

/// The decision after a round the relay's rate limit turned away for
/// `limited` (token, Retry-After in milliseconds) of the `asked` tokens:
/// due after the longest Retry-After; an alert is owed only to the turned
/// away devices when others got it (all turned away: the event as it was).
pub(crate) fn put_back(
    job: &Job,
    asked: &[String],
    limited: &[(String, u64)],
    queued_ms: u64,
    now_ms: u64,
) -> PutBack {
    if now_ms.saturating_sub(queued_ms) > MAX_AGE_MS {
        return PutBack::Drop;
    }
    let wait = limited.iter().map(|(_, ms)| *ms).max().unwrap_or(0);
    let due = now_ms.saturating_add(wait);
    let job = match job {
        Job::Notify { event, ts, .. }
            if !asked.iter().all(|t| limited.iter().any(|(l, _)| l == t)) =>
        {
            Job::Notify {
                event: event.clone(),
                ts: *ts,
                only: limited.iter().map(|(t, _)| t.clone()).collect(),
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
    origin: &Origin,
    entries: Vec<(&Listed, Entry)>,
    log_dir: &Path,
    relays: &mut Relays,
    held: &mut Held,
    deadlines: Deadlines,
) {
    let env = origin.hook_env();
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
    let kept = drop_superseded(queue, &env, entries);
    let ready = pace(kept, &env, relays, held);
    let mut group = Group {
        env: &env,
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
        // A 429 earlier in this batch may hold this ask back after all.
        let now = crate::base::clock::unix_millis();
        let slot = relays.pacer().plan(std::slice::from_ref(&ask), now);
        let planned = match slot.first() {
            Some(Slot::At(until)) => *until,
            _ => now,
        };
        let until = held_until(planned, &ask.tokens, &behind);
        if until > now {
            for token in &ask.tokens {
                behind.insert(token.clone(), until);
            }
            held.insert(listed.path.clone(), (entry, until));
            continue;
        }
        // Taken before acting: a kill from here on loses this event only.
        if !queue.take(listed) {
            continue;
        }
        let (limited, result) = group.finish(&entry.job, relays);
        if let Err(message) = result {
            log(log_dir, &format!("{}: {message}", entry.job.hook_name()));
        }
        if !limited.is_empty() {
            rate_limited(queue, listed, entry, &ask, &limited, log_dir, relays, held);
        }
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
    relays: &Relays,
    held: &mut Held,
) -> Vec<(&'a Listed, Entry, Ask)> {
    let file = registration::read(&registration::path_in(&env.config_dir));
    let asks: Vec<Ask> = kept
        .iter()
        .map(|(_, entry)| ask_of(&entry.job, file.as_ref(), env))
        .collect();
    let slots = relays
        .pacer()
        .plan(&asks, crate::base::clock::unix_millis());
    let mut ready = Vec::with_capacity(kept.len());
    for (((listed, entry), ask), slot) in kept.into_iter().zip(asks).zip(slots) {
        match slot {
            Slot::Now => ready.push((listed, entry, ask)),
            Slot::At(until) => {
                held.insert(listed.path.clone(), (entry, until));
            }
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
    fn finish(&mut self, job: &Job, relays: &mut Relays) -> (Vec<RateLimited>, Result<(), String>) {
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
                let (limited, result) = notify::finish(&mut round, event, *ts, only, current);
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

/// Tells the pacer about a round's 429s and puts the entry back under
/// its own name (so it keeps its place), held until its `Retry-After`.
#[allow(clippy::too_many_arguments)]
fn rate_limited(
    queue: &Queue,
    listed: &Listed,
    entry: Entry,
    ask: &Ask,
    limited: &[RateLimited],
    log_dir: &Path,
    relays: &mut Relays,
    held: &mut Held,
) {
    let now = crate::base::clock::unix_millis();
    let limits = relays.pacer().limits();
    let waits: Vec<(String, u64)> = limited
        .iter()
        .map(|l| (l.token.clone(), limits.seconds_ms(l.retry_after_s)))
        .collect();
    for (token, wait) in &waits {
        relays
            .pacer_mut()
            .rate_limited(ask.class, token, now, *wait);
    }
    match put_back(
        &entry.job,
        &ask.tokens,
        &waits,
        queued_at_ms(&entry.job),
        now,
    ) {
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
                "{}: dropped {}: the relay still answers 429 rate_limited an hour after the event",
                entry.job.hook_name(),
                entry_name(listed)
            ),
        ),
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
    fn a_rate_limited_round_is_put_back_after_its_longest_retry_after() {
        let asked = ["a".to_owned(), "b".to_owned()];
        let now = 1_000_000 + 5_000;
        // Every device turned away: the event as it was.
        assert_eq!(
            put_back(
                &blocked(&[]),
                &asked,
                &[("a".into(), 40_000), ("b".into(), 55_000)],
                1_000_000,
                now
            ),
            PutBack::Requeue(blocked(&[]), now + 55_000)
        );
        // One got it: only the other is still owed the alert.
        assert_eq!(
            put_back(
                &blocked(&[]),
                &asked,
                &[("b".into(), 45_000)],
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
            put_back(&activity, &asked, &[("b".into(), 1)], 1_000_000, now),
            PutBack::Requeue(activity.clone(), now + 1)
        );
        // An hour after the event, it is stale.
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

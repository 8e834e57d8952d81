//! The per-session hook queue: `<session state>/queue/` holds `worker.lock`
//! (the `flock` of the one worker serving the session) and `spool/`, one
//! file per event a hook handed over.
//!
//! herdr runs at most 32 plugin commands at once and drops the rest, so an
//! event hook must not sleep through its debounce inside herdr's slot. It
//! makes its cheap decisions, writes one entry here and makes sure a worker
//! runs ([`ensure_worker`]); the worker (`worker.rs`) sleeps, re-checks and
//! delivers. This file owns the entry format, its file names, the lock and
//! the hand-off rule, so that the hook and the worker cannot disagree.
//!
//! Invariants:
//! - An entry is written whole (temp file and rename, 0600) or not at all;
//!   its name starts with its due time, so the worker schedules from a
//!   directory listing and reads only the entries that are due.
//! - An entry is dropped by unlinking it ([`Queue::take`]) and acted on by
//!   claiming it, a rename to `<name>.inhand` ([`Queue::claim`]): only the
//!   process whose unlink or rename succeeded owns it, so no two act on
//!   one event. A worker killed while acting leaves its claim, which the
//!   next worker puts back ([`Queue::recover`]): a kill loses nothing; at
//!   worst the event in hand is acted on again, and its dedupe marker
//!   stops a second alert unless the kill fell between the relay's answer
//!   and the marker's write.
//! - The hand-off loses nothing: every holder of the lock either serves
//!   the spool after taking it (a worker) or starts a worker after
//!   releasing it (a hook's probe), and a worker, after releasing the lock,
//!   looks at the spool once more and serves again when it finds an entry.
//!   So an entry written at any moment is seen by a worker that scans after
//!   the write.
//! - The spool holds at most [`MAX_ENTRIES`] entries, also under many
//!   concurrent hooks (they trim one at a time, each counting after its
//!   own write): a hook that finds more drops the excess ([`trim_plan`],
//!   pure), superseded duplicates first (an older event of the same hook
//!   environment for the same pane, status and devices, or an older
//!   activity claim, which the newer one makes moot), then the oldest of
//!   the least [`Worth`]: Live Activity updates, then Done alerts, then
//!   status changes, and a Blocked alert only when nothing else is left.
//!   Each drop is named, with its reason, in the failure log. The
//!   outbox (`worker.rs`) keeps entries for minutes while the relay paces
//!   or is down, so "oldest first" would drop exactly the Blocked alerts
//!   next in line.
//! - An entry carries the environment of the hook that wrote it (config
//!   dir, plugin state dir, herdr socket): it is delivered as that hook
//!   would have, and only when it belongs to this queue's session state
//!   dir ([`belongs_to`]). It carries data, never a program to run: the
//!   worker runs herdr's CLI from its own environment (the one herdr gave
//!   the hook that started it), checked like heeler's binary; the
//!   `herdr_bin` of an older version's entry is ignored.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::base::atomic_file;
use crate::base::json::{self, Object, Value};
use crate::herdr::session;
use crate::hooks::env::{Event, HookEnv};

/// The suffix of an entry a worker acts on ([`Queue::claim`]).
const IN_HAND: &str = ".inhand";

/// The largest entry read back.
const MAX_ENTRY_BYTES: u64 = 64 * 1024;

/// Dropped entries named per log line: a name and its reason take at most
/// 70 characters, so a line stays within the failure log's 1,000.
const DROPS_PER_LINE: usize = 12;

/// The longest a hook waits for another's trim ([`Queue::trim`]).
const TRIM_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The most entries one session's spool holds: past it the excess is
/// dropped by worth ([`trim_plan`]). At 64 KiB an entry at most,
/// the spool stays under 16 MiB, and a worker's listing stays small.
pub const MAX_ENTRIES: usize = 256;

/// The queue of one session state dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queue {
    /// The session state dir (`HookEnv::state_dir`).
    pub state_dir: PathBuf,
}

/// What a queued event asks the worker to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// The notify hook's debounce, re-check and alert; `ts` is the event
    /// time taken before the debounce (the alert's `ts`); `only` names the
    /// devices (by token) still owed the alert after the relay's rate limit
    /// turned them away (empty: every device, as the hook queued it).
    Notify {
        event: Event,
        ts: i64,
        only: Vec<String>,
    },
    /// The activity hook's latest-wins claim, to check at the deadline.
    Activity { pid: u32, claimed_at_ms: u64 },
}

impl Job {
    /// The hook whose work the job is, as its log lines are prefixed.
    pub(crate) fn hook_name(&self) -> &'static str {
        match self {
            Job::Notify { .. } => "notify-hook",
            Job::Activity { .. } => "activity-hook",
        }
    }
}

/// The environment of the hook that queued an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub config_dir: PathBuf,
    pub plugin_state_dir: PathBuf,
    pub socket: Option<PathBuf>,
}

impl Origin {
    /// The origin of a hook's environment.
    pub fn of(env: &HookEnv) -> Origin {
        Origin {
            config_dir: env.config_dir.clone(),
            plugin_state_dir: env.plugin_state_dir.clone(),
            socket: env.socket_path.clone(),
        }
    }

    /// The session the hook served.
    pub fn session(&self) -> session::Session {
        session::from_socket_path(self.socket.as_deref().and_then(Path::to_str))
    }

    /// The hook environment the worker acts in (no event of its own),
    /// running herdr's CLI from `herdr_bin` (the worker's own, checked).
    pub fn hook_env(&self, herdr_bin: &Path) -> HookEnv {
        let session = self.session();
        HookEnv {
            config_dir: self.config_dir.clone(),
            event_json: String::new(),
            state_dir: session.state_dir(&self.plugin_state_dir),
            plugin_state_dir: self.plugin_state_dir.clone(),
            session,
            herdr_bin: herdr_bin.to_path_buf(),
            socket_path: self.socket.clone(),
        }
    }
}

/// One queued event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// When the debounce ends (Unix milliseconds).
    pub due_ms: u64,
    pub origin: Origin,
    pub job: Job,
}

fn path_text(path: &Path) -> io::Result<&str> {
    path.to_str().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not UTF-8", path.display()),
        )
    })
}

fn optional(text: &Option<String>) -> Value {
    text.as_deref().map_or(Value::Null, Value::from)
}

impl Entry {
    /// The entry's file content, keys in a fixed order.
    pub(crate) fn to_value(&self) -> io::Result<Value> {
        let origin = &self.origin;
        let socket = match &origin.socket {
            Some(socket) => Value::from(path_text(socket)?),
            None => Value::Null,
        };
        let mut object = Object::new()
            .with("v", 1u64)
            .with("due_ms", self.due_ms)
            .with("config_dir", path_text(&origin.config_dir)?)
            .with("plugin_state_dir", path_text(&origin.plugin_state_dir)?)
            .with("socket", socket);
        match &self.job {
            Job::Notify { event, ts, only } => {
                object.insert("job", Value::from("notify"));
                object.insert(
                    "event",
                    Value::Object(
                        Object::new()
                            .with("pane", event.pane.as_str())
                            .with("status", event.status.as_str())
                            .with("kind", optional(&event.kind))
                            .with("workspace_id", optional(&event.workspace_id))
                            .with("title", optional(&event.title)),
                    ),
                );
                object.insert("ts", Value::from(*ts));
                if !only.is_empty() {
                    object.insert(
                        "only",
                        Value::Array(only.iter().map(|t| Value::from(t.as_str())).collect()),
                    );
                }
            }
            Job::Activity { pid, claimed_at_ms } => {
                object.insert("job", Value::from("activity"));
                object.insert("pid", Value::from(u64::from(*pid)));
                object.insert("claimed_at_ms", Value::from(*claimed_at_ms));
            }
        }
        Ok(Value::Object(object))
    }

    /// Reads an entry back; anything not written by [`Entry::to_value`] is
    /// `None`.
    pub fn from_value(value: &Value) -> Option<Entry> {
        if value.get("v")?.as_i64()? != 1 {
            return None;
        }
        let text = |v: &Value, key: &str| v.get(key)?.as_str().map(str::to_owned);
        let optional_text = |v: &Value, key: &str| match v.get(key)? {
            Value::Null => Some(None),
            other => other.as_str().map(|s| Some(s.to_owned())),
        };
        let number = |key: &str| {
            value
                .get(key)?
                .as_i64()
                .filter(|n| *n >= 0)
                .map(|n| n as u64)
        };
        let origin = Origin {
            config_dir: PathBuf::from(text(value, "config_dir")?),
            plugin_state_dir: PathBuf::from(text(value, "plugin_state_dir")?),
            socket: optional_text(value, "socket")?.map(PathBuf::from),
        };
        let job = match value.get("job")?.as_str()? {
            "notify" => {
                let event = value.get("event")?;
                Job::Notify {
                    event: Event {
                        pane: text(event, "pane").filter(|p| !p.is_empty())?,
                        status: text(event, "status").filter(|s| !s.is_empty())?,
                        kind: optional_text(event, "kind")?,
                        workspace_id: optional_text(event, "workspace_id")?,
                        title: optional_text(event, "title")?,
                    },
                    ts: value.get("ts")?.as_i64()?,
                    only: match value.get("only") {
                        None => Vec::new(),
                        Some(list) => list
                            .as_array()?
                            .iter()
                            .map(|t| t.as_str().map(str::to_owned))
                            .collect::<Option<Vec<String>>>()?,
                    },
                }
            }
            "activity" => Job::Activity {
                pid: u32::try_from(number("pid")?).ok()?,
                claimed_at_ms: number("claimed_at_ms")?,
            },
            _ => return None,
        };
        Some(Entry {
            due_ms: number("due_ms")?,
            origin,
            job,
        })
    }
}

/// The file name of an entry due at `due_ms`, written by process `pid` at
/// `unique` (its nanosecond clock): sorting names sorts by due time.
pub(crate) fn entry_name(due_ms: u64, unique: u64, pid: u32) -> String {
    format!("{due_ms:015}-{unique:020}-{pid}.json")
}

/// The due time and the write time (the writer's nanosecond clock) of an
/// entry's file name; `None` for any other name (temp files, strays).
fn name_times(name: &str) -> Option<(u64, u64)> {
    let stem = name.strip_suffix(".json")?;
    let mut parts = stem.split('-');
    let due = parts.next()?;
    let unique = parts.next()?;
    let pid = parts.next()?;
    let digits = |s: &str, len: Option<usize>| {
        !s.is_empty()
            && s.bytes().all(|b| b.is_ascii_digit())
            && len.is_none_or(|len| s.len() == len)
    };
    if parts.next().is_some()
        || !digits(due, Some(15))
        || !digits(unique, Some(20))
        || !digits(pid, None)
    {
        return None;
    }
    Some((due.parse().ok()?, unique.parse().ok()?))
}

/// The due time an entry's file name starts with; `None` for any other
/// name (temp files, strays).
pub(crate) fn due_of_name(name: &str) -> Option<u64> {
    name_times(name).map(|(due, _)| due)
}

/// What makes an older entry moot when a newer one with the same key is
/// queued: the same hook environment and, for a notify event, the same
/// pane, status and devices (the newer one re-checks the pane later), or,
/// for an activity claim, nothing more (the newest claim wins anyway).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DuplicateKey {
    origin: Origin,
    event: Option<(String, String, Vec<String>)>,
}

/// What an entry is worth keeping when the spool is full, least first:
/// a Live Activity update (the next one carries the whole state), a Done
/// alert, a status change that re-arms a pane's alerts, a Blocked alert
/// (an agent waits for its user: the alert the product exists for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Worth {
    Activity,
    Done,
    Rearm,
    Blocked,
}

impl Worth {
    fn name(self) -> &'static str {
        match self {
            Worth::Activity => "live activity update",
            Worth::Done => "done alert",
            Worth::Rearm => "status change",
            Worth::Blocked => "blocked alert",
        }
    }
}

impl Entry {
    /// The entry's [`DuplicateKey`].
    pub(crate) fn duplicate_key(&self) -> DuplicateKey {
        DuplicateKey {
            origin: self.origin.clone(),
            event: match &self.job {
                Job::Notify { event, only, .. } => {
                    let mut devices = only.clone();
                    devices.sort();
                    Some((event.pane.clone(), event.status.clone(), devices))
                }
                Job::Activity { .. } => None,
            },
        }
    }

    /// The entry's [`Worth`].
    pub(crate) fn worth(&self) -> Worth {
        match &self.job {
            Job::Activity { .. } => Worth::Activity,
            Job::Notify { event, .. } => match event.status.as_str() {
                "blocked" => Worth::Blocked,
                "done" => Worth::Done,
                _ => Worth::Rearm,
            },
        }
    }
}

/// Why [`trim_plan`] drops an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// A newer entry has the same [`DuplicateKey`].
    Superseded,
    /// The oldest of the least [`Worth`] left, once no superseded entry
    /// is (`None`: an entry that could not be read).
    Least(Option<Worth>),
}

/// Which entries to drop so that at most `bound` remain (pure). `keys` are
/// the entries' duplicate keys and worth, oldest written first (`None` for
/// an entry that could not be read, which nothing supersedes and which
/// goes first of the rest). Superseded entries go first, oldest first;
/// then the oldest of the least worth: never a Blocked alert while
/// anything else is left to drop. Returns indices into `keys` with the
/// reason, in that order.
pub(crate) fn trim_plan<K: PartialEq>(
    keys: &[Option<(K, Worth)>],
    bound: usize,
) -> Vec<(usize, Dropped)> {
    let mut excess = keys.len().saturating_sub(bound);
    let mut plan = Vec::with_capacity(excess);
    let superseded = |i: usize| {
        keys[i].as_ref().is_some_and(|(key, _)| {
            keys[i + 1..]
                .iter()
                .any(|k| k.as_ref().is_some_and(|(k, _)| k == key))
        })
    };
    for i in 0..keys.len() {
        if excess == 0 {
            return plan;
        }
        if superseded(i) {
            plan.push((i, Dropped::Superseded));
            excess -= 1;
        }
    }
    let worth = |i: usize| keys[i].as_ref().map(|(_, w)| *w);
    let mut rest: Vec<usize> = (0..keys.len())
        .filter(|i| !plan.iter().any(|(dropped, _)| dropped == i))
        .collect();
    // Stable: the oldest first within each worth.
    rest.sort_by_key(|i| worth(*i));
    for i in rest.into_iter().take(excess) {
        plan.push((i, Dropped::Least(worth(i))));
    }
    plan
}

/// Whether an entry of `origin` may be served from the queue of
/// `state_dir`: its own session's state dir must be this one.
pub(crate) fn belongs_to(origin: &Origin, state_dir: &Path) -> bool {
    origin.session().state_dir(&origin.plugin_state_dir) == state_dir
}

/// An entry in the spool, by name and due time (not yet read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub path: PathBuf,
    pub due_ms: u64,
}

impl Queue {
    pub fn of(state_dir: &Path) -> Queue {
        Queue {
            state_dir: state_dir.to_path_buf(),
        }
    }

    pub fn dir(&self) -> PathBuf {
        self.state_dir.join("queue")
    }

    pub(crate) fn lock_path(&self) -> PathBuf {
        self.dir().join("worker.lock")
    }

    /// Where an older version's worker left its pacing (with push tokens
    /// in it); a worker removes it (the Host's pacing is shared now,
    /// `delivery::pacing_file`).
    pub(crate) fn pacing_path(&self) -> PathBuf {
        self.dir().join("pacing.json")
    }

    pub(crate) fn spool_dir(&self) -> PathBuf {
        self.dir().join("spool")
    }

    /// Writes `entry` into the spool.
    pub fn enqueue(&self, entry: &Entry) -> io::Result<PathBuf> {
        let spool = self.spool_dir();
        atomic_file::create_dir_all(&spool, 0o700)?;
        let path = spool.join(entry_name(
            entry.due_ms,
            crate::base::clock::unix_nanos(),
            std::process::id(),
        ));
        // Unsynced: an entry lives for a debounce, and one lost to a power
        // cut is an event a crash would have lost anyway.
        atomic_file::write_unsynced(&path, entry.to_value()?.to_json().as_bytes(), 0o600)?;
        Ok(path)
    }

    /// Puts an entry this process took back in the spool under its old
    /// name, so that it keeps its place in the queue (its due time and the
    /// order it was first queued in); its content may differ (a rate-limited
    /// alert then names the devices still owed it).
    pub(crate) fn restore(&self, listed: &Listed, entry: &Entry) -> io::Result<()> {
        atomic_file::create_dir_all(&self.spool_dir(), 0o700)?;
        atomic_file::write_unsynced(&listed.path, entry.to_value()?.to_json().as_bytes(), 0o600)
    }

    /// The entries in the spool, earliest due first (a missing spool is
    /// empty).
    pub fn list(&self) -> Vec<Listed> {
        let Ok(dir) = std::fs::read_dir(self.spool_dir()) else {
            return Vec::new();
        };
        let mut listed: Vec<Listed> = dir
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let due_ms = due_of_name(entry.file_name().to_str()?)?;
                Some(Listed {
                    path: entry.path(),
                    due_ms,
                })
            })
            .collect();
        listed.sort_by(|a, b| (a.due_ms, &a.path).cmp(&(b.due_ms, &b.path)));
        listed
    }

    /// Whether the spool holds an entry (stops at the first).
    pub(crate) fn has_entries(&self) -> bool {
        std::fs::read_dir(self.spool_dir()).is_ok_and(|mut dir| {
            dir.any(|entry| {
                entry
                    .ok()
                    .and_then(|e| e.file_name().to_str().and_then(due_of_name))
                    .is_some()
            })
        })
    }

    /// Removes the temp files of entry writes whose writer died (a hook
    /// killed mid-write); returns how many. Every entry name has exactly
    /// one writer, so a temp file whose pid is gone is a leftover.
    pub(crate) fn sweep_temps(&self) -> usize {
        let spool = self.spool_dir();
        let Ok(dir) = std::fs::read_dir(&spool) else {
            return 0;
        };
        let targets: std::collections::BTreeSet<String> = dir
            .filter_map(|entry| {
                let name = entry.ok()?.file_name().to_str()?.to_owned();
                let (target, _) = name.split_once(".tmp-")?;
                due_of_name(target).map(|_| target.to_owned())
            })
            .collect();
        targets
            .iter()
            .map(|target| atomic_file::sweep_stale_temps(&spool.join(target)))
            .sum()
    }

    /// Reads a listed entry; `None` when it is gone or damaged.
    pub fn read(&self, listed: &Listed) -> Option<Entry> {
        let text = crate::base::state_file::read_text(&listed.path, MAX_ENTRY_BYTES)?;
        Entry::from_value(&json::parse(&text).ok()?)
    }

    /// Takes an entry: `true` when this process removed it and so owns it.
    pub fn take(&self, listed: &Listed) -> bool {
        std::fs::remove_file(&listed.path).is_ok()
    }

    /// Claims an entry to act on: renamed to `<name>.inhand`, so that only
    /// this process acts on it (the rename of a gone entry fails), and a
    /// worker killed while acting leaves it for the next one to put back
    /// ([`Queue::recover`]). [`Queue::release`] ends the claim.
    pub(crate) fn claim(&self, listed: &Listed) -> Option<PathBuf> {
        let mut name = listed.path.as_os_str().to_owned();
        name.push(IN_HAND);
        let claimed = PathBuf::from(name);
        std::fs::rename(&listed.path, &claimed)
            .ok()
            .map(|()| claimed)
    }

    /// Ends a claim: the entry was acted on (and, when owed, put back under
    /// its name first).
    pub(crate) fn release(&self, claimed: &Path) {
        // A claim left behind is put back by the next worker: at worst the
        // event is acted on again, and its dedupe marker stops a second
        // alert.
        let _ = std::fs::remove_file(claimed);
    }

    /// How many entries a worker has in hand ([`Queue::claim`]).
    fn in_hand(&self) -> usize {
        std::fs::read_dir(self.spool_dir()).map_or(0, |dir| {
            dir.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_suffix(IN_HAND))
                        .and_then(due_of_name)
                        .is_some()
                })
                .count()
        })
    }

    /// Puts back the entries a killed worker had in hand, under their
    /// names (only the lock holder calls it, so every claim left is an
    /// orphan); a claim whose entry was already put back is removed.
    /// Returns how many came back.
    pub(crate) fn recover(&self) -> usize {
        let spool = self.spool_dir();
        let Ok(dir) = std::fs::read_dir(&spool) else {
            return 0;
        };
        let mut back = 0;
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(IN_HAND)) else {
                continue;
            };
            if due_of_name(stem).is_none() {
                continue;
            }
            let target = spool.join(stem);
            if target.exists() {
                let _ = std::fs::remove_file(entry.path());
            } else if std::fs::rename(entry.path(), &target).is_ok() {
                back += 1;
            }
        }
        back
    }

    /// Drops entries past `bound` as [`trim_plan`] says, each taken
    /// ([`Queue::take`]) so that only one process drops it; the log lines
    /// naming every dropped entry and why (none when nothing was dropped). The entries are read only when the spool is over `bound`.
    /// Hooks trim one at a time (`queue/trim.lock`), each counting the
    /// spool after its own write, so that concurrent hooks leave at most
    /// `bound` entries, not `bound` plus the overlap of their plans.
    pub fn trim(&self, bound: usize) -> Vec<String> {
        let _lock = self.trim_lock();
        self.trim_unlocked(bound)
    }

    /// Takes `queue/trim.lock`, waiting up to [`TRIM_LOCK_WAIT`] (a trim
    /// takes milliseconds); `None` when it could not (the trim goes on
    /// without it: a bound overshot by a few entries, never a hook stuck).
    fn trim_lock(&self) -> Option<File> {
        let started = std::time::Instant::now();
        atomic_file::create_dir_all(&self.dir(), 0o700).ok()?;
        let file = crate::base::sys::open_append_private(&self.dir().join("trim.lock")).ok()?;
        loop {
            match crate::base::sys::try_lock_exclusive(&file) {
                Ok(true) => return Some(file),
                Ok(false) if started.elapsed() < TRIM_LOCK_WAIT => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                _ => return None,
            }
        }
    }

    fn trim_unlocked(&self, bound: usize) -> Vec<String> {
        let mut listed = self.list();
        if listed.len() < bound {
            return Vec::new();
        }
        // An entry a worker has in hand keeps its place: it comes back
        // when its round leaves devices owed.
        let bound = bound.saturating_sub(self.in_hand());
        if listed.len() <= bound {
            return Vec::new();
        }
        // Oldest written first: the write time is the name's second part.
        let written = |l: &Listed| {
            l.path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(name_times)
                .map(|(_, written)| written)
        };
        listed.sort_by_key(|l| (written(l), l.path.clone()));
        let keys: Vec<Option<(DuplicateKey, Worth)>> = listed
            .iter()
            .map(|l| self.read(l).map(|e| (e.duplicate_key(), e.worth())))
            .collect();
        let dropped: Vec<String> = trim_plan(&keys, bound)
            .into_iter()
            .filter(|(i, _)| self.take(&listed[*i]))
            .map(|(i, why)| {
                let name = listed[i].path.file_name().unwrap_or_default();
                let why = match why {
                    Dropped::Superseded => "superseded",
                    Dropped::Least(Some(worth)) => worth.name(),
                    Dropped::Least(None) => "unreadable",
                };
                format!("{} ({why})", name.to_string_lossy())
            })
            .collect();
        // Lines short enough for the failure log, so that every drop is
        // named whole.
        dropped
            .chunks(DROPS_PER_LINE)
            .map(|names| {
                format!(
                    "the hook queue holds more than {bound} events; dropped {}",
                    names.join(", ")
                )
            })
            .collect()
    }

    fn open_lock(&self) -> io::Result<File> {
        atomic_file::create_dir_all(&self.dir(), 0o700)?;
        crate::base::sys::open_append_private(&self.lock_path())
    }

    /// Takes the worker lock without waiting; `None` when another process
    /// holds it. The lock is held until the file is dropped.
    pub fn try_lock(&self) -> io::Result<Option<File>> {
        let file = self.open_lock()?;
        Ok(crate::base::sys::try_lock_exclusive(&file)?.then_some(file))
    }

    /// Whether no process holds the worker lock, probed without creating
    /// anything (a missing lock file is free): the supervisor's look after
    /// its worker ended, which must not bring back a removed state dir.
    pub(crate) fn lock_is_free(&self) -> bool {
        match std::fs::OpenOptions::new()
            .append(true)
            .open(self.lock_path())
        {
            Err(_) => true,
            Ok(file) => matches!(crate::base::sys::try_lock_exclusive(&file), Ok(true)),
        }
    }

    /// Whether nothing is queued and no worker holds the lock: every event
    /// handed over so far is finished. For tests and benchmarks: it probes
    /// the lock, so it must not race with a hook still running.
    pub fn is_idle(&self) -> bool {
        if !self.list().is_empty() {
            return false;
        }
        match std::fs::OpenOptions::new()
            .append(true)
            .open(self.lock_path())
        {
            Err(_) => true,
            Ok(file) => !matches!(crate::base::sys::try_lock_exclusive(&file), Ok(false)),
        }
    }
}

/// The program the worker is started from: this very binary, also when an
/// install renamed a new one over its path.
pub(crate) fn own_executable() -> io::Result<PathBuf> {
    let proc_exe = Path::new("/proc/self/exe");
    if proc_exe.exists() {
        return Ok(proc_exe.to_path_buf());
    }
    std::env::current_exe()
}

/// Why an event could not be left with a worker.
#[derive(Debug)]
pub(crate) enum HandOverError {
    /// The event could not be queued, or the worker lock not probed.
    Queue(io::Error),
    /// The event is queued, but no worker process could be started: the
    /// system refused the spawn (no process slots) or refused to run this
    /// binary again (qemu-user without binfmt_misc answers `ENOEXEC`). The
    /// caller serves the queue in its own process instead.
    NoWorker(io::Error),
}

impl std::fmt::Display for HandOverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandOverError::Queue(e) => write!(f, "cannot hand the event to the hook worker: {e}"),
            HandOverError::NoWorker(e) => write!(f, "cannot start the hook worker: {e}"),
        }
    }
}

impl std::error::Error for HandOverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HandOverError::Queue(e) | HandOverError::NoWorker(e) => Some(e),
        }
    }
}

/// Makes sure a worker serves `queue` after an entry was written: when no
/// process holds the lock, starts `heeler hook-worker` detached (its own
/// session, stdio on `/dev/null`, no descriptor of ours or herdr's, the
/// lock released before the spawn). When the lock is held, its holder is a
/// worker that scans again before it exits, or a probe like this one that
/// starts a worker after it.
pub(crate) fn ensure_worker(queue: &Queue) -> Result<(), HandOverError> {
    match queue.try_lock().map_err(HandOverError::Queue)? {
        None => return Ok(()),
        Some(probe) => drop(probe),
    }
    use std::os::unix::process::CommandExt;
    let mut command =
        std::process::Command::new(own_executable().map_err(HandOverError::NoWorker)?);
    // The supervisor, which runs the worker and starts it again if it is
    // killed with entries left.
    command
        .arg("hook-worker")
        .arg0("heeler")
        .env_remove("HERDR_PLUGIN_EVENT_JSON")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    crate::base::sys::detach_on_spawn(&mut command);
    command.spawn().map(|_| ()).map_err(HandOverError::NoWorker)
}

/// Makes sure no queued entry is left without a worker (one killed with
/// entries held, by the OOM killer or a user): when the session's spool
/// holds an entry and no process holds the lock, starts a worker. Every
/// event hook's cheap exits and the startup hook call it; when nothing is
/// queued it costs one directory read.
pub(crate) fn ensure_served(state_dir: &Path) -> Result<(), HandOverError> {
    let queue = Queue::of(state_dir);
    if !queue.has_entries() {
        return Ok(());
    }
    ensure_worker(&queue)
}

/// What both event hooks do once they know an event is worth the
/// debounce: queue it in their session's spool, due at `due_ms`, and make
/// sure a worker serves it.
pub(crate) fn hand_over(env: &HookEnv, due_ms: u64, job: Job) -> Result<(), HandOverError> {
    let queue = Queue::of(&env.state_dir);
    let hook = job.hook_name();
    queue
        .enqueue(&Entry {
            due_ms,
            origin: Origin::of(env),
            job,
        })
        .map_err(HandOverError::Queue)?;
    for line in queue.trim(MAX_ENTRIES) {
        // Nowhere is left to report a failure to log.
        let _ =
            crate::hooks::failure_log::append(&env.plugin_state_dir, &format!("{hook}: {line}"));
    }
    ensure_worker(&queue)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scratch::ScratchDir;

    fn origin(root: &Path, socket: Option<&str>) -> Origin {
        Origin {
            config_dir: root.join("config"),
            plugin_state_dir: root.join("state"),
            socket: socket.map(PathBuf::from),
        }
    }

    fn notify_entry(root: &Path, due_ms: u64) -> Entry {
        Entry {
            due_ms,
            origin: origin(root, Some("/run/herdr/sessions/work/herdr.sock")),
            job: Job::Notify {
                event: Event {
                    pane: "w1:p1".into(),
                    status: "blocked".into(),
                    kind: Some("claude".into()),
                    workspace_id: None,
                    title: Some("Fix \"it\"".into()),
                },
                ts: 1_700_000_000,
                only: Vec::new(),
            },
        }
    }

    #[test]
    fn entries_round_trip_and_refuse_anything_else() {
        let root = Path::new("/r");
        let notify = notify_entry(root, 5);
        let value = notify.to_value().unwrap();
        assert_eq!(Entry::from_value(&value), Some(notify.clone()));
        assert!(
            !value.to_json().contains("only"),
            "a hook's entry is as before"
        );
        assert!(
            !value.to_json().contains("herdr_bin"),
            "an entry names no program"
        );
        // An older version's entry, with the herdr binary it named: read,
        // the path ignored.
        let mut old = value.to_json();
        old.insert_str(
            old.find(r#","job""#).unwrap(),
            r#","herdr_bin":"/tmp/evil""#,
        );
        assert_eq!(
            Entry::from_value(&json::parse(&old).unwrap()),
            Some(notify.clone())
        );
        let mut remainder = notify;
        if let Job::Notify { only, .. } = &mut remainder.job {
            *only = vec!["aaaa0000aaaa0000".into(), "bbbb0000bbbb0000".into()];
        }
        let value = remainder.to_value().unwrap();
        assert!(
            value
                .to_json()
                .contains(r#""only":["aaaa0000aaaa0000","bbbb0000bbbb0000"]"#)
        );
        assert_eq!(Entry::from_value(&value), Some(remainder));
        let activity = Entry {
            due_ms: 7,
            origin: origin(root, None),
            job: Job::Activity {
                pid: 42,
                claimed_at_ms: 3,
            },
        };
        assert_eq!(
            Entry::from_value(&activity.to_value().unwrap()),
            Some(activity)
        );
        for text in [
            "{}",
            r#"{"v":2}"#,
            r#"{"v":1,"due_ms":-1,"config_dir":"c","plugin_state_dir":"s","socket":null,"herdr_bin":"b","job":"activity","pid":1,"claimed_at_ms":1}"#,
            r#"{"v":1,"due_ms":1,"config_dir":"c","plugin_state_dir":"s","socket":null,"herdr_bin":"b","job":"other"}"#,
            r#"{"v":1,"due_ms":1,"config_dir":"c","plugin_state_dir":"s","socket":null,"herdr_bin":"b","job":"notify","event":{"pane":"","status":"x"},"ts":1}"#,
            r#"{"v":1,"due_ms":1,"config_dir":"c","plugin_state_dir":"s","socket":null,"herdr_bin":"b","job":"notify","event":{"pane":"p","status":"x","kind":null,"workspace_id":null,"title":null},"ts":1,"only":[1]}"#,
        ] {
            assert_eq!(
                Entry::from_value(&json::parse(text).unwrap()),
                None,
                "{text}"
            );
        }
    }

    #[test]
    fn a_restored_entry_keeps_its_place_in_the_queue() {
        let dir = ScratchDir::new("spool-restore");
        let queue = Queue::of(dir.path());
        queue.enqueue(&notify_entry(dir.path(), 10)).unwrap();
        queue.enqueue(&notify_entry(dir.path(), 10)).unwrap();
        let listed = queue.list();
        assert_eq!(listed.len(), 2);
        assert!(queue.take(&listed[0]));
        let mut owed = notify_entry(dir.path(), 10);
        if let Job::Notify { only, .. } = &mut owed.job {
            *only = vec!["aaaa0000aaaa0000".into()];
        }
        queue.restore(&listed[0], &owed).unwrap();
        assert_eq!(queue.list(), listed, "the same names, in the same order");
        assert_eq!(queue.read(&listed[0]), Some(owed));
    }

    #[test]
    fn names_sort_by_due_time_and_strays_are_not_entries() {
        let name = entry_name(1_700_000_000_123, 9, 77);
        assert_eq!(name, "001700000000123-00000000000000000009-77.json");
        assert_eq!(due_of_name(&name), Some(1_700_000_000_123));
        assert!(entry_name(99, 1, 1) < entry_name(100, 0, 0));
        for stray in [
            "001700000000123-00000000000000000009-77.json.tmp-5-0",
            "1-2-3.json",
            "001700000000123-00000000000000000009-77-1.json",
            "001700000000123-0000000000000000000x-77.json",
            "notes.txt",
        ] {
            assert_eq!(due_of_name(stray), None, "{stray}");
        }
    }

    #[test]
    fn an_entry_belongs_only_to_its_own_session_state_dir() {
        let root = Path::new("/r");
        let work = origin(root, Some("/run/herdr/sessions/work/herdr.sock"));
        assert!(belongs_to(&work, &root.join("state/sessions/work")));
        assert!(!belongs_to(&work, &root.join("state")));
        assert!(!belongs_to(&work, &root.join("state/sessions/play")));
        let default = origin(root, Some("/run/herdr/herdr.sock"));
        assert!(belongs_to(&default, &root.join("state")));
    }

    #[test]
    fn the_spool_lists_by_due_time_and_an_entry_is_taken_once() {
        let dir = ScratchDir::new("spool");
        let queue = Queue::of(dir.path());
        assert!(queue.list().is_empty());
        assert!(queue.is_idle());
        queue.enqueue(&notify_entry(dir.path(), 20)).unwrap();
        queue.enqueue(&notify_entry(dir.path(), 10)).unwrap();
        std::fs::write(queue.spool_dir().join("stray.json"), "{}").unwrap();
        let listed = queue.list();
        assert_eq!(
            listed.iter().map(|l| l.due_ms).collect::<Vec<_>>(),
            [10, 20]
        );
        assert!(!queue.is_idle());
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(&listed[0].path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(queue.read(&listed[0]), Some(notify_entry(dir.path(), 10)));
        assert!(queue.take(&listed[0]));
        assert!(!queue.take(&listed[0]), "taken once");
        assert_eq!(queue.read(&listed[0]), None);
    }

    #[test]
    fn temp_files_of_dead_writers_are_swept_and_entries_kept() {
        let dir = ScratchDir::new("spool-sweep");
        let queue = Queue::of(dir.path());
        let entry = queue.enqueue(&notify_entry(dir.path(), 10)).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let name = entry.file_name().unwrap().to_str().unwrap().to_owned();
        let leftover = queue.spool_dir().join(format!("{name}.tmp-{dead}-0"));
        let live = queue
            .spool_dir()
            .join(format!("{name}.tmp-{}-1", std::process::id()));
        std::fs::write(&leftover, "{").unwrap();
        std::fs::write(&live, "{").unwrap();
        assert_eq!(queue.sweep_temps(), 1);
        assert!(!leftover.exists());
        assert!(live.exists(), "a writer still running keeps its temp file");
        assert!(entry.exists());
        assert_eq!(queue.list().len(), 1);
    }

    #[test]
    fn the_trim_drops_superseded_duplicates_first_then_the_least_worth() {
        use Worth::{Activity, Blocked, Done, Rearm};
        // Keys oldest first; `None` is an unreadable entry.
        let keys = [
            Some(('a', Blocked)),
            Some(('b', Blocked)),
            Some(('a', Blocked)),
            None,
            Some(('c', Done)),
            Some(('a', Blocked)),
            Some(('d', Activity)),
            Some(('e', Rearm)),
        ];
        assert_eq!(trim_plan(&keys, 8), []);
        assert_eq!(trim_plan(&keys, 9), []);
        assert_eq!(trim_plan(&keys, 7), [(0, Dropped::Superseded)]);
        assert_eq!(
            trim_plan(&keys, 6),
            [(0, Dropped::Superseded), (2, Dropped::Superseded)]
        );
        // No superseded entry left: the unreadable, then the update, the
        // Done alert, the status change, and only then the Blocked alerts,
        // oldest first.
        assert_eq!(
            trim_plan(&keys, 0),
            [
                (0, Dropped::Superseded),
                (2, Dropped::Superseded),
                (3, Dropped::Least(None)),
                (6, Dropped::Least(Some(Activity))),
                (4, Dropped::Least(Some(Done))),
                (7, Dropped::Least(Some(Rearm))),
                (1, Dropped::Least(Some(Blocked))),
                (5, Dropped::Least(Some(Blocked))),
            ]
        );
        assert_eq!(trim_plan::<char>(&[], 0), []);
    }

    #[test]
    fn the_trim_plan_matches_an_oracle_on_random_spools() {
        // The oracle: repeatedly drop the oldest entry whose key a newer
        // one shares, else the oldest of the least worth (unreadable
        // least), until `bound` remain.
        let worths = [Worth::Activity, Worth::Done, Worth::Rearm, Worth::Blocked];
        let mut rng = crate::base::test_rng::Rng(0x5b001);
        for case in 0..2_000 {
            let len = rng.below(12) as usize;
            let keys: Vec<Option<(u64, Worth)>> = (0..len)
                .map(|_| {
                    (!rng.one_in(5)).then(|| {
                        let key = rng.below(4);
                        (key, worths[(key as usize + rng.below(2) as usize) % 4])
                    })
                })
                .collect();
            let bound = rng.below(14) as usize;
            let mut alive: Vec<usize> = (0..len).collect();
            let mut expected = Vec::new();
            let rank = |i: usize| keys[i].map_or(0, |(_, w)| w as usize + 1);
            while alive.len() > bound {
                let superseded = alive.iter().position(|&i| {
                    keys[i].is_some()
                        && alive
                            .iter()
                            .any(|&j| j > i && keys[j].map(|k| k.0) == keys[i].map(|k| k.0))
                });
                let (at, why) = match superseded {
                    Some(at) => (at, Dropped::Superseded),
                    None => {
                        let least = alive.iter().map(|&i| rank(i)).min().unwrap_or(0);
                        let at = alive.iter().position(|&i| rank(i) == least).unwrap();
                        (at, Dropped::Least(keys[alive[at]].map(|(_, w)| w)))
                    }
                };
                expected.push((alive.remove(at), why));
            }
            assert_eq!(
                trim_plan(&keys, bound),
                expected,
                "case {case}: trim_plan(&{keys:?}, {bound})"
            );
        }
    }

    #[test]
    fn events_past_the_bound_leave_the_bound_and_every_panes_newest() {
        // Each trim reads every entry, so the work grows with the bound
        // squared: a bound of 32 by default, the spool's own (256, with 400
        // events over 50 panes and 300 fresh ones) under `HEELER_DEEP=1`.
        let (bound, events, panes, fresh) = if crate::base::depth::deep() {
            (MAX_ENTRIES as u64, 400, 50, 300)
        } else {
            (32, 50, 8, 40)
        };
        let dir = ScratchDir::new("spool-bound");
        let queue = Queue::of(dir.path());
        let mut lines = Vec::new();
        for i in 0..events {
            let mut entry = notify_entry(dir.path(), 1_000 + i);
            if let Job::Notify { event, .. } = &mut entry.job {
                event.pane = format!("w1:p{}", i % panes);
            }
            queue.enqueue(&entry).unwrap();
            lines.extend(queue.trim(bound as usize));
        }
        let listed = queue.list();
        assert_eq!(listed.len() as u64, bound);
        // Only superseded duplicates went: the newest event of each pane is
        // still queued, and so are the last `bound` written.
        let dues: Vec<u64> = listed.iter().map(|l| l.due_ms).collect();
        assert_eq!(
            dues,
            (1_000 + events - bound..1_000 + events).collect::<Vec<u64>>()
        );
        assert_eq!(lines.len() as u64, events - bound, "one line per trim");
        let head = format!("the hook queue holds more than {bound} events; dropped ");
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with(&head) && l.ends_with(".json (superseded)")),
            "{lines:?}"
        );
        // Past the duplicates, the oldest go.
        let mut other = notify_entry(dir.path(), 5_000);
        if let Job::Notify { event, .. } = &mut other.job {
            event.pane = "w1:p99".into();
        }
        queue.enqueue(&other).unwrap();
        let line = queue.trim(bound as usize).concat();
        assert!(line.ends_with(" (superseded)"), "{line}");
        for i in 0..fresh {
            let mut entry = notify_entry(dir.path(), 6_000 + i);
            if let Job::Notify { event, .. } = &mut entry.job {
                event.pane = format!("w2:p{i}");
            }
            queue.enqueue(&entry).unwrap();
            queue.trim(bound as usize);
        }
        let dues: Vec<u64> = queue.list().iter().map(|l| l.due_ms).collect();
        assert_eq!(
            dues,
            (6_000 + fresh - bound..6_000 + fresh).collect::<Vec<u64>>()
        );
    }

    #[test]
    fn the_bound_holds_under_64_concurrent_hooks() {
        // A full spool, then 64 hooks at once each write an event for a
        // pane of its own and trim, as `hand_over` does: the spool ends at
        // the bound exactly, and what went is what the plan says (the
        // test's own count: 64 over, none superseded, all of one worth).
        let bound = if crate::base::depth::deep() {
            MAX_ENTRIES
        } else {
            64
        };
        let dir = ScratchDir::new("spool-concurrent");
        let queue = Queue::of(dir.path());
        for i in 0..bound {
            let mut entry = notify_entry(dir.path(), 1_000 + i as u64);
            if let Job::Notify { event, .. } = &mut entry.job {
                event.pane = format!("w1:p{i}");
            }
            queue.enqueue(&entry).unwrap();
        }
        let start = std::sync::Barrier::new(64);
        let lines: Vec<Vec<String>> = std::thread::scope(|scope| {
            let hooks: Vec<_> = (0..64)
                .map(|h| {
                    let (queue, start, root) = (&queue, &start, dir.path());
                    scope.spawn(move || {
                        let mut entry = notify_entry(root, 9_000 + h);
                        if let Job::Notify { event, .. } = &mut entry.job {
                            event.pane = format!("w2:p{h}");
                        }
                        start.wait();
                        queue.enqueue(&entry).unwrap();
                        queue.trim(bound)
                    })
                })
                .collect();
            hooks.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(queue.list().len(), bound);
        let dropped: usize = lines
            .iter()
            .flatten()
            .map(|line| line.matches(" (blocked alert)").count())
            .sum();
        assert_eq!(dropped, 64, "{lines:?}");
    }

    #[test]
    fn a_claim_left_by_a_killed_worker_is_put_back_once() {
        let dir = ScratchDir::new("spool-claim");
        let queue = Queue::of(dir.path());
        queue.enqueue(&notify_entry(dir.path(), 10)).unwrap();
        queue.enqueue(&notify_entry(dir.path(), 20)).unwrap();
        let listed = queue.list();
        let claimed = queue.claim(&listed[0]).unwrap();
        assert!(queue.claim(&listed[0]).is_none(), "claimed once");
        assert!(!queue.take(&listed[0]), "nor dropped under its claim");
        assert_eq!(queue.list(), listed[1..], "not listed while in hand");
        assert!(queue.has_entries());
        // The entry in hand keeps its place under the bound.
        assert_eq!(queue.in_hand(), 1);
        assert!(queue.trim(2).is_empty());
        assert_eq!(queue.trim(1).len(), 1, "the other one goes");
        assert!(queue.list().is_empty());
        queue.enqueue(&notify_entry(dir.path(), 20)).unwrap();
        let listed = vec![listed[0].clone(), queue.list()[0].clone()];
        // The worker is killed: the next one puts it back, in its place.
        assert_eq!(queue.recover(), 1);
        assert_eq!(queue.list(), listed);
        assert_eq!(queue.read(&listed[0]), Some(notify_entry(dir.path(), 10)));
        assert!(!claimed.exists());
        // Put back by its round before the kill: the claim just goes.
        let claimed = queue.claim(&listed[0]).unwrap();
        queue
            .restore(&listed[0], &notify_entry(dir.path(), 10))
            .unwrap();
        assert_eq!(queue.recover(), 0);
        assert!(!claimed.exists());
        assert_eq!(queue.list(), listed);
        // Released: gone for good.
        let claimed = queue.claim(&listed[1]).unwrap();
        queue.release(&claimed);
        assert_eq!(queue.recover(), 0);
        assert_eq!(queue.list(), listed[..1]);
    }

    #[test]
    fn one_lock_holder_at_a_time() {
        let dir = ScratchDir::new("spool-lock");
        let queue = Queue::of(dir.path());
        let held = queue.try_lock().unwrap();
        assert!(held.is_some());
        assert!(queue.try_lock().unwrap().is_none());
        assert!(!queue.is_idle(), "a holder is a running worker");
        drop(held);
        assert!(queue.try_lock().unwrap().is_some());
    }
}

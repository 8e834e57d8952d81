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
//! earliest entry is due plus [`GATHER`], and serve every due entry as one
//! batch ([`next_step`] decides; pure). A batch is grouped by the hooks'
//! environments; each group re-checks its panes with one `agent list`
//! (`agent get` when one notify event is alone, as the hook did), shares
//! one relay client and one workspace label lookup per workspace, and runs
//! each event's rest of the hook (`notify::finish`, `activity::finish`)
//! with the spec's semantics: the per-pane re-check, the per-session dedupe
//! marker, the latest-wins claim. After releasing the lock it looks at the
//! spool once more and serves again if an entry arrived meanwhile.
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
use crate::herdr::client::HerdrError;
use crate::herdr::session;
use crate::hooks::delivery::Relays;
use crate::hooks::spool::{self, Entry, Job, Listed, Origin, Queue};
use crate::hooks::{activity, env, failure_log, notify, settings};

/// How long past the earliest due time the worker waits, so that the events
/// of one burst are served by one batch.
pub const GATHER: Duration = Duration::from_millis(50);

/// How long an empty spool is watched before the worker exits.
pub const LINGER: Duration = Duration::from_millis(250);

/// The longest sleep between two looks at the spool.
pub const POLL: Duration = Duration::from_millis(25);

/// What the worker does next, from the due times of the listed entries
/// (earliest first) and the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing is queued.
    Empty,
    /// Nothing to serve for this long.
    Wait(Duration),
    /// Serve the first this many entries (all due).
    Serve(usize),
}

/// The schedule: wait until the earliest entry is due plus `gather`, then
/// serve every entry due by now.
pub fn next_step(dues: &[u64], now_ms: u64, gather: Duration) -> Step {
    let Some(first) = dues.first() else {
        return Step::Empty;
    };
    let start = first.saturating_add(gather.as_millis() as u64);
    if now_ms < start {
        return Step::Wait(Duration::from_millis(start - now_ms));
    }
    Step::Serve(dues.iter().take_while(|due| **due <= now_ms).count())
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
    serve_queue(&Queue::of(&state_dir), &plugin_state_dir)
        .map_err(|e| fail(&format!("queue lock: {e}")))
}

/// The hand-off loop around [`serve`]: one worker at a time, and nothing
/// queued before the last look is left behind.
pub fn serve_queue(queue: &Queue, log_dir: &Path) -> std::io::Result<()> {
    let mut relays = Relays::default();
    loop {
        let Some(lock) = queue.try_lock()? else {
            return Ok(());
        };
        queue.sweep_temps();
        serve(queue, log_dir, &mut relays);
        drop(lock);
        if queue.list().is_empty() {
            return Ok(());
        }
    }
}

/// Serves the spool until it has stayed empty for [`LINGER`].
fn serve(queue: &Queue, log_dir: &Path, relays: &mut Relays) {
    let mut empty_since: Option<Instant> = None;
    loop {
        let listed = queue.list();
        let dues: Vec<u64> = listed.iter().map(|l| l.due_ms).collect();
        match next_step(&dues, crate::base::clock::unix_millis(), GATHER) {
            Step::Empty => {
                if empty_since.get_or_insert_with(Instant::now).elapsed() >= LINGER {
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
                serve_batch(queue, &listed[..count], log_dir, relays);
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
fn serve_batch(queue: &Queue, due: &[Listed], log_dir: &Path, relays: &mut Relays) {
    let mut groups: Vec<(Origin, Vec<(&Listed, Entry)>)> = Vec::new();
    for listed in due {
        match queue.read(listed) {
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
        serve_group(queue, &origin, entries, log_dir, relays);
    }
}

/// Serves the due entries of one hook environment.
fn serve_group(
    queue: &Queue,
    origin: &Origin,
    entries: Vec<(&Listed, Entry)>,
    log_dir: &Path,
    relays: &mut Relays,
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
    let herdr = env.herdr();
    // Claims that lost to a newer one are dropped before any herdr call.
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
    let notify_count = kept
        .iter()
        .filter(|(_, e)| matches!(e.job, Job::Notify { .. }))
        .count();
    let one_list = notify_count >= 2 || notify_count < kept.len();
    let mut inventory: Option<Result<Vec<Value>, HerdrError>> = None;
    let mut labels = HashMap::new();
    for (listed, entry) in kept {
        // Taken before acting: a kill from here on loses this event only.
        if !queue.take(listed) {
            continue;
        }
        let result = match &entry.job {
            Job::Notify { event, ts } => {
                let current = if one_list {
                    inventory
                        .get_or_insert_with(|| herdr.agent_list())
                        .clone()
                        .and_then(|agents| agent_of(&agents, &event.pane))
                } else {
                    herdr.agent_get(&event.pane)
                };
                let mut round = notify::Round {
                    env: &env,
                    herdr: &herdr,
                    settings: &settings,
                    relays,
                    labels: &mut labels,
                };
                notify::finish(&mut round, event, *ts, current).map_err(|e| e.to_string())
            }
            Job::Activity { .. } => activity::finish(&env, &herdr, &settings, relays, || {
                inventory.get_or_insert_with(|| herdr.agent_list()).clone()
            })
            .map_err(|e| e.to_string()),
        };
        if let Err(message) = result {
            log(log_dir, &format!("{}: {message}", entry.job.hook_name()));
        }
    }
}

/// A pane's agent in one `agent list`: absent means gone, as `agent get`'s
/// `agent_not_found`.
pub fn agent_of(agents: &[Value], pane: &str) -> Result<Value, HerdrError> {
    agents
        .iter()
        .find(|a| a.get("pane_id").and_then(Value::as_str) == Some(pane))
        .cloned()
        .ok_or(HerdrError::AgentGone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_waits_for_the_earliest_plus_the_gather_then_serves_what_is_due() {
        let gather = Duration::from_millis(50);
        assert_eq!(next_step(&[], 1_000, gather), Step::Empty);
        assert_eq!(
            next_step(&[1_000, 1_020], 990, gather),
            Step::Wait(Duration::from_millis(60))
        );
        assert_eq!(
            next_step(&[1_000, 1_020], 1_049, gather),
            Step::Wait(Duration::from_millis(1))
        );
        assert_eq!(
            next_step(&[1_000, 1_020, 1_060], 1_050, gather),
            Step::Serve(2)
        );
        // Never before an entry's own due time.
        assert_eq!(next_step(&[1_000, 5_000], 1_100, gather), Step::Serve(1));
        assert_eq!(
            next_step(&[u64::MAX], 0, gather),
            Step::Wait(Duration::from_millis(u64::MAX))
        );
    }

    #[test]
    fn a_pane_missing_from_the_list_is_gone() {
        let agents = crate::base::json::parse(
            r#"[{"pane_id":"w1:p1","agent_status":"blocked"},{"pane_id":"w1:p2"}]"#,
        )
        .unwrap();
        let agents = agents.as_array().unwrap();
        assert_eq!(
            agent_of(agents, "w1:p1")
                .unwrap()
                .get("agent_status")
                .and_then(Value::as_str),
            Some("blocked")
        );
        assert_eq!(agent_of(agents, "w1:p9"), Err(HerdrError::AgentGone));
    }
}

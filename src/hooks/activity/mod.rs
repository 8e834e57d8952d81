//! `heeler activity-hook`: keeps each registered device's Live Activity in
//! step with the Host's eligible agents (working, blocked, done).
//!
//! Bursts of status changes start many overlapping hook processes; each
//! writes a latest-wins claim and hands its event to the session's worker
//! (`spool.rs`), which after the debounce sends for the one claim still
//! newest ([`finish`]) and drops the others; an unchanged snapshot
//! sends nothing, and a Host with no Live Activity registration exits before
//! any sleep or herdr call. Each device gets its own sealed content (its pins
//! and row layout), kept under the push size budget by a degradation ladder.
//!
//! `run_with` is the hook's part: the cheap exits, the claim, the hand-over.
//! `finish` is the worker's thin loop: it gathers (registration,
//! last-state, `agent list`, the row context), asks `plan` what to do, and
//! hands the payloads to `hooks::delivery`. `claim` owns the latest-wins claim and
//! `budget` the request body and its size ladder.

pub mod budget;
pub mod claim;
pub mod plan;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::base::json;
use crate::herdr::answer::Agent;
use crate::herdr::client::{HerdrClient, HerdrError};
use crate::hooks::activity::budget::{push_body, seal_within_budget, step_after_too_large};
use crate::hooks::activity::claim::{read_claim, superseded, write_claim};
use crate::hooks::activity::plan::{
    ContextNeeds, Decision, LastState, Payload, decide, worth_claiming,
};
use crate::hooks::delivery::{
    self, Deferred, DeliveryError, RecordWhen, Registration, Relays, StateRecord,
};
use crate::hooks::env::{self, HookEnv, StartError};
use crate::hooks::pacing::Pacer;
use crate::hooks::registration;
use crate::hooks::relay::{Outcome, RelayClient};
use crate::hooks::row_layout::{self, RowContext};
use crate::hooks::settings::{self, NotifySettings};
use crate::hooks::spool::{self, Job};
use crate::wire::display_text::for_display;

/// Why the hook failed (each is one `activity-hook: …` line).
#[derive(Debug)]
pub enum ActivityError {
    Start(StartError),
    /// The claim file could not be written (the message names it).
    Claim(String),
    AgentList(HerdrError),
    Delivery(DeliveryError),
    /// The event could not be handed to the session's worker.
    Queue(std::io::Error),
    /// The event is queued but no worker could be started; the caller
    /// serves the queue itself (`worker::event_hook`).
    NoWorker(std::io::Error),
}

impl std::fmt::Display for ActivityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ActivityError::Start(e) => write!(f, "{e}"),
            ActivityError::Claim(message) => f.write_str(message),
            ActivityError::AgentList(HerdrError::Malformed(_)) => {
                f.write_str("agent list returned no agents array")
            }
            ActivityError::AgentList(e) => f.write_str(&e.failed("agent list")),
            ActivityError::Delivery(e) => write!(f, "{e}"),
            ActivityError::Queue(e) => write!(f, "cannot hand the event to the hook worker: {e}"),
            ActivityError::NoWorker(e) => write!(f, "cannot start the hook worker: {e}"),
        }
    }
}

impl std::error::Error for ActivityError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ActivityError::Start(e) => Some(e),
            ActivityError::Claim(_) => None,
            ActivityError::AgentList(e) => Some(e),
            ActivityError::Delivery(e) => Some(e),
            ActivityError::Queue(e) | ActivityError::NoWorker(e) => Some(e),
        }
    }
}

impl From<spool::HandOverError> for ActivityError {
    fn from(e: spool::HandOverError) -> ActivityError {
        match e {
            spool::HandOverError::Queue(e) => ActivityError::Queue(e),
            spool::HandOverError::NoWorker(e) => ActivityError::NoWorker(e),
        }
    }
}

impl From<StartError> for ActivityError {
    fn from(e: StartError) -> ActivityError {
        ActivityError::Start(e)
    }
}

/// Reads `activity/last-state.json`; missing or corrupt means none.
pub(crate) fn read_last_state(path: &Path) -> LastState {
    crate::base::state_file::read_text(path, 1024 * 1024)
        .and_then(|t| json::parse(&t).ok())
        .map_or_else(LastState::default, |value| LastState::from_value(&value))
}

/// The first DNS label of the host name, display-trimmed ("" when unknown).
pub fn short_host_name() -> String {
    crate::base::sys::hostname()
        .and_then(|h| h.split('.').next().and_then(for_display))
        .unwrap_or_default()
}

/// Pushes one payload, re-sealing one ladder step further after each
/// relay-origin 413; every request is counted in `pacer`.
fn push_with_ladder(
    relay: &RelayClient,
    pacer: &mut Pacer,
    payload: &Payload<'_>,
) -> Result<Outcome, ring::error::Unspecified> {
    let (device, frame) = (payload.device, &payload.frame);
    let mut step = 0;
    loop {
        let (sealed_step, sealed) = seal_within_budget(device, frame, &payload.content, step)?;
        let body = push_body(device, frame, &sealed);
        match delivery::push_paced(relay, pacer, &device.token, &body) {
            Outcome::TooLarge(_) => match step_after_too_large(sealed_step) {
                Some(next) => step = next,
                None => return Ok(Outcome::Failed("payload too large".to_owned())),
            },
            other => return Ok(other),
        }
    }
}

/// Performs the lookups `needs` names; every failure only leaves its part
/// of the context empty.
fn fetch_context(herdr: &HerdrClient, needs: &ContextNeeds, context: &mut RowContext) {
    if needs.workspace_labels {
        context.workspace_labels = workspace_labels(herdr);
    }
    for workspace in &needs.workspaces {
        if needs.tabs
            && let Ok(tabs) = herdr.tab_list(workspace)
        {
            row_layout::add_tabs(context, workspace, &tabs);
        }
        if needs.panes
            && let Ok(panes) = herdr.pane_list(workspace)
        {
            row_layout::add_panes(context, workspace, &panes);
        }
    }
}

fn workspace_labels(herdr: &HerdrClient) -> HashMap<String, String> {
    let Ok(workspaces) = herdr.workspace_list() else {
        return HashMap::new();
    };
    workspaces
        .into_iter()
        .filter_map(|w| Some((w.workspace_id, w.label.filter(|l| !l.is_empty())?)))
        .collect()
}

/// The session's activity state directory (claim and last-state).
fn activity_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("activity")
}

/// The hook, with its environment given as a lookup function.
pub fn run_with(lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Result<(), ActivityError> {
    let (env, event) = env::start(lookup)?;
    let registration_path = registration::path_in(&env.config_dir);
    let devices_now = || {
        let file = registration::read(&registration_path);
        registration::activity_devices(file.as_ref(), &env.session)
    };
    // The devices come first, so a Host without a Live Activity reads no
    // activity state at all.
    let has_devices = !devices_now().is_empty();
    let dir = activity_dir(&env.state_dir);
    let last_state_path = dir.join("last-state.json");
    let last = if has_devices {
        read_last_state(&last_state_path)
    } else {
        LastState::default()
    };
    if !worth_claiming(has_devices, &last, &event.status) {
        return spool::ensure_served(&env.state_dir).map_err(ActivityError::from);
    }
    let settings = settings::load(&env.config_dir);

    // Latest wins: claim now; the worker steps aside for a newer claim at
    // the end of the debounce.
    let claim_path = claim_path(&env.state_dir);
    let pid = std::process::id();
    let claimed_at_ms = write_claim(&claim_path, pid)
        .map_err(|e| ActivityError::Claim(format!("cannot write {}: {e}", claim_path.display())))?;
    let due_ms = crate::base::clock::unix_millis().saturating_add(settings.activity_debounce_ms);
    spool::hand_over(&env, due_ms, Job::Activity { pid, claimed_at_ms })
        .map_err(ActivityError::from)
}

/// `activity/claim.json` of a session state dir.
pub(crate) fn claim_path(state_dir: &Path) -> PathBuf {
    activity_dir(state_dir).join("claim.json")
}

/// Whether the claim `(pid, claimed_at_ms)` lost to a newer one: the worker
/// drops such an entry without any herdr call.
pub(crate) fn claim_superseded(state_dir: &Path, pid: u32, claimed_at_ms: u64) -> bool {
    read_claim(&claim_path(state_dir)).is_some_and(|stored| superseded(&stored, pid, claimed_at_ms))
}

/// The rest of the hook, in the worker after the debounce of a claim that
/// still wins: the devices, `agent list` (`inventory`, shared by the
/// worker's batch), the plan, the row context and the round. Returns the
/// devices the relay's rate limit turned away (then last-state is not
/// written, so the event put back decides and sends again), with the
/// round's result.
pub fn finish(
    env: &HookEnv,
    herdr: &HerdrClient,
    settings: &NotifySettings,
    relays: &mut Relays,
    inventory: impl FnOnce() -> Result<Vec<Agent>, HerdrError>,
) -> (Vec<Deferred>, Result<(), ActivityError>) {
    match plan_round(env, herdr, inventory) {
        Ok(Some(round)) => deliver_round(env, settings, relays, &round),
        Ok(None) => (Vec::new(), Ok(())),
        Err(e) => (Vec::new(), Err(e)),
    }
}

/// What one activity round sends: the payloads' inputs.
struct ActivityRound {
    devices: Vec<registration::ActivityDevice>,
    inventory: Vec<Agent>,
    plan: plan::Plan,
    context: RowContext,
}

/// The devices, the inventory, the plan and the row context; `None` when
/// nothing is sent.
fn plan_round(
    env: &HookEnv,
    herdr: &HerdrClient,
    inventory: impl FnOnce() -> Result<Vec<Agent>, HerdrError>,
) -> Result<Option<ActivityRound>, ActivityError> {
    let registration_path = registration::path_in(&env.config_dir);
    let file = registration::read(&registration_path);
    let devices = registration::activity_devices(file.as_ref(), &env.session);
    if devices.is_empty() {
        return Ok(None);
    }
    let last_state_path = activity_dir(&env.state_dir).join("last-state.json");
    let last = read_last_state(&last_state_path);
    let inventory = inventory().map_err(ActivityError::AgentList)?;
    let Decision::Send(plan) = decide(&inventory, &devices, &last) else {
        return Ok(None);
    };
    let mut context = RowContext {
        host: short_host_name(),
        ..RowContext::default()
    };
    fetch_context(
        herdr,
        &plan.context_needs(&devices, &inventory),
        &mut context,
    );
    Ok(Some(ActivityRound {
        devices,
        inventory,
        plan,
        context,
    }))
}

/// The round of a plan: one paced push per device.
fn deliver_round(
    env: &HookEnv,
    settings: &NotifySettings,
    relays: &mut Relays,
    round: &ActivityRound,
) -> (Vec<Deferred>, Result<(), ActivityError>) {
    let registration_path = registration::path_in(&env.config_dir);
    let last_state_path = activity_dir(&env.state_dir).join("last-state.json");
    let timestamp = crate::base::clock::unix_seconds();
    let ActivityRound {
        devices,
        inventory,
        plan,
        context,
    } = round;
    let payloads = plan.payloads(devices, inventory, context, timestamp);
    let (relay, pacer) = relays.client_and_pacer(settings);
    let done = delivery::deliver_with(
        relay,
        &payloads,
        |relay, payload| push_with_ladder(relay, pacer, payload),
        Registration {
            path: &registration_path,
            prune: registration::remove_live_activities,
        },
        RecordWhen::NoneDeferred,
        || StateRecord {
            path: last_state_path.clone(),
            value: plan.last_state(crate::base::clock::unix_millis()),
        },
    );
    (done.deferred, done.result.map_err(ActivityError::Delivery))
}

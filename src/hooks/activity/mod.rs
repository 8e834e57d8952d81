//! `heeler activity-hook`: keeps each registered device's Live Activity in
//! step with the Host's eligible agents (working, blocked, done).
//!
//! Bursts of status changes start many overlapping hook processes; a
//! latest-wins claim makes exactly one of them send, an unchanged snapshot
//! sends nothing, and a Host with no Live Activity registration exits before
//! any sleep or herdr call. Each device gets its own sealed content (its pins
//! and row layout), kept under the push size budget by a degradation ladder.
//!
//! `run_with` is the thin loop: it gathers (registration, last-state, the
//! claim, `agent list`, the row context), asks `plan` what to do, and hands
//! the payloads to `hooks::delivery`. `claim` owns the latest-wins claim and
//! `budget` the request body and its size ladder.

pub mod budget;
pub mod claim;
pub mod plan;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::json;
use crate::cli::ActivityHookArgs;
use crate::exit::Failure;
use crate::herdr::client::{HerdrClient, HerdrError};
use crate::hooks::activity::budget::{push_body, seal_within_budget, step_after_too_large};
use crate::hooks::activity::claim::{read_claim, superseded, write_claim};
use crate::hooks::activity::plan::{
    ContextNeeds, Decision, LastState, Payload, decide, worth_claiming,
};
use crate::hooks::delivery::{self, DeliveryError, Registration, StateRecord};
use crate::hooks::env::{self, StartError};
use crate::hooks::registration;
use crate::hooks::relay::{Outcome, RelayClient};
use crate::hooks::row_layout::{self, RowContext};
use crate::hooks::settings;
use crate::wire::display_text::for_display;

/// Why the hook failed (each is one `activity-hook: …` line).
#[derive(Debug)]
pub enum ActivityError {
    Start(StartError),
    /// The claim file could not be written (the message names it).
    Claim(String),
    AgentList(HerdrError),
    Delivery(DeliveryError),
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
        }
    }
}

impl From<StartError> for ActivityError {
    fn from(e: StartError) -> ActivityError {
        ActivityError::Start(e)
    }
}

/// The CLI entry point.
pub fn run(_args: ActivityHookArgs) -> Result<(), Failure> {
    run_with(&env::process_env).map_err(|e| Failure::new(format!("activity-hook: {e}"), 1))
}

/// Reads `activity/last-state.json`; missing or corrupt means none.
pub fn read_last_state(path: &Path) -> LastState {
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
/// relay-origin 413.
fn push_with_ladder(
    relay: &RelayClient,
    payload: &Payload<'_>,
) -> Result<Outcome, ring::error::Unspecified> {
    let (device, frame) = (payload.device, &payload.frame);
    let mut step = 0;
    loop {
        let (sealed_step, sealed) = seal_within_budget(device, frame, &payload.content, step)?;
        match relay.push(&push_body(device, frame, &sealed)) {
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
        .iter()
        .filter_map(|w| {
            Some((
                w.get("workspace_id")?.as_nonempty_str()?.to_owned(),
                w.get("label")?.as_nonempty_str()?.to_owned(),
            ))
        })
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
        return Ok(());
    }
    let settings = settings::load(&env.config_dir);

    // Latest wins: claim, sleep, and step aside for a newer claim.
    let claim_path = dir.join("claim.json");
    let pid = std::process::id();
    let claimed_at_ms = write_claim(&claim_path, pid)
        .map_err(|e| ActivityError::Claim(format!("cannot write {}: {e}", claim_path.display())))?;
    std::thread::sleep(Duration::from_millis(settings.activity_debounce_ms));
    if read_claim(&claim_path).is_some_and(|stored| superseded(&stored, pid, claimed_at_ms)) {
        return Ok(());
    }

    let devices = devices_now();
    if devices.is_empty() {
        return Ok(());
    }
    let herdr = env.herdr();
    let inventory = herdr.agent_list().map_err(ActivityError::AgentList)?;
    let Decision::Send(plan) = decide(&inventory, &devices, &last) else {
        return Ok(());
    };
    let mut context = RowContext {
        host: short_host_name(),
        ..RowContext::default()
    };
    fetch_context(
        &herdr,
        &plan.context_needs(&devices, &inventory),
        &mut context,
    );
    let timestamp = crate::base::clock::unix_seconds();
    let payloads = plan.payloads(&devices, &inventory, &context, timestamp);
    delivery::deliver(
        &settings,
        &payloads,
        push_with_ladder,
        Registration {
            path: &registration_path,
            prune: registration::remove_live_activities,
        },
        || StateRecord {
            path: last_state_path.clone(),
            value: plan.last_state(crate::base::clock::unix_millis()),
        },
    )
    .map_err(ActivityError::Delivery)
}

//! `heeler notify-hook`: one Agent Notification per confirmed Blocked/Done
//! transition, sealed per device and pushed through the relay.
//!
//! herdr runs this on every `pane.agent_status_changed`, so nearly every run
//! must end in a cheap no-op decided from the environment and two small
//! files, before any sleep, socket or TLS setup. A transition worth telling
//! is handed to the session's worker (`spool.rs`, `worker.rs`), so the hook
//! returns herdr's command slot at once; the worker runs [`finish`] after
//! the debounce: the re-check through herdr, the per-session dedupe marker
//! and the delivery round.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::base::base64;
use crate::base::json::{self, Object, Value};
use crate::herdr::answer::{Agent, nonempty};
use crate::herdr::client::{HerdrClient, HerdrError};
use crate::hooks::delivery::{
    self, Deferred, DeliveryError, RecordWhen, Registration, Relays, StateRecord,
};
use crate::hooks::env::{self, Event, HookEnv, StartError};
use crate::hooks::registration::{self, AlertDevice};
use crate::hooks::settings::{self, NotifySettings};
use crate::hooks::spool::{self, Job};
use crate::wire::envelope::{self, collapse_key};
use crate::wire::notification::Notification;

/// Why the hook failed (each is one `notify-hook: …` line).
#[derive(Debug)]
pub enum NotifyError {
    Start(StartError),
    Recheck(HerdrError),
    RecheckNoStatus,
    Delivery(DeliveryError),
    /// The event could not be handed to the session's worker.
    Queue(std::io::Error),
    /// The event is queued but no worker could be started; the caller
    /// serves the queue itself (`worker::event_hook`).
    NoWorker(std::io::Error),
}

impl std::fmt::Display for NotifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotifyError::Start(e) => write!(f, "{e}"),
            NotifyError::Recheck(e) => f.write_str(&e.failed("status re-check")),
            NotifyError::RecheckNoStatus => f.write_str("status re-check returned no agent_status"),
            NotifyError::Delivery(e) => write!(f, "{e}"),
            NotifyError::Queue(e) => write!(f, "cannot hand the event to the hook worker: {e}"),
            NotifyError::NoWorker(e) => write!(f, "cannot start the hook worker: {e}"),
        }
    }
}

impl std::error::Error for NotifyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NotifyError::Start(e) => Some(e),
            NotifyError::Recheck(e) => Some(e),
            NotifyError::RecheckNoStatus => None,
            NotifyError::Delivery(e) => Some(e),
            NotifyError::Queue(e) | NotifyError::NoWorker(e) => Some(e),
        }
    }
}

impl From<spool::HandOverError> for NotifyError {
    fn from(e: spool::HandOverError) -> NotifyError {
        match e {
            spool::HandOverError::Queue(e) => NotifyError::Queue(e),
            spool::HandOverError::NoWorker(e) => NotifyError::NoWorker(e),
        }
    }
}

impl From<StartError> for NotifyError {
    fn from(e: StartError) -> NotifyError {
        NotifyError::Start(e)
    }
}

/// The notify flag of a status: only Blocked and Done notify.
pub(crate) fn notify_flag(status: &str) -> Option<&'static str> {
    match status {
        "blocked" => Some("blocked"),
        "done" => Some("done"),
        _ => None,
    }
}

/// `<state>/notify/<base64url(pane)>.json`.
pub fn marker_path(state_dir: &Path, pane: &str) -> PathBuf {
    state_dir
        .join("notify")
        .join(format!("{}.json", base64::encode_url(pane.as_bytes())))
}

/// The last notified status of a pane; missing or corrupt means none.
pub(crate) fn read_marker(path: &Path) -> Option<String> {
    let text = crate::base::state_file::read_text(path, 64 * 1024)?;
    json::parse(&text)
        .ok()?
        .get("last_notified_status")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The dedupe marker's content, keys in contract order.
pub(crate) fn marker_value(pane: &str, status: &str) -> Value {
    Value::Object(
        Object::new()
            .with("pane", pane)
            .with("last_notified_status", status),
    )
}

fn clear_marker(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// The cheap exits, decided before any sleep or herdr call: a notifying
/// status is worth a debounce unless the marker already holds it or no
/// device wants its flag (`has_devices` is asked only then); any other
/// status only when a marker is left to re-arm.
pub(crate) fn worth_debouncing(
    status: &str,
    marker: Option<&str>,
    has_devices: impl FnOnce(&'static str) -> bool,
) -> bool {
    match notify_flag(status) {
        Some(flag) => marker != Some(status) && has_devices(flag),
        None => marker.is_some(),
    }
}

/// What the re-check after the debounce says about the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recheck {
    /// The pane's status moved on: this event is stale.
    MovedOn,
    /// A non-notifying status held: the pane is re-armed.
    Rearm,
    /// A notifying status held: notify for this flag.
    Notify(&'static str),
}

/// Compares the event's status with the pane's current one.
pub(crate) fn recheck(event_status: &str, current_status: &str) -> Recheck {
    if current_status != event_status {
        return Recheck::MovedOn;
    }
    match notify_flag(event_status) {
        Some(flag) => Recheck::Notify(flag),
        None => Recheck::Rearm,
    }
}

/// The log line for an entry skipped because the relay would refuse its
/// token; the token's prefix is escaped, since the file is not ours.
pub(crate) fn refused_token_line(token: &str) -> String {
    format!(
        "notify-hook: skipped the device with token {}…: not 16 to 200 lowercase hex digits, which the relay refuses",
        delivery::token_prefix(token).escape_debug()
    )
}

fn log_line(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The push body of one alert, keys in contract order.
pub(crate) fn push_body(device: &AlertDevice, envelope: &str, collapse: &str) -> String {
    Value::Object(
        Object::new()
            .with("token", device.token.as_str())
            .with("env", device.env.as_str())
            .with("envelope", envelope)
            .with("collapse", collapse),
    )
    .to_json()
}

/// The workspace whose label names the project: the re-check's, else the
/// event's.
pub(crate) fn project_workspace(event: &Event, current: &Agent) -> Option<String> {
    nonempty(&current.workspace_id)
        .map(str::to_owned)
        .or(event.workspace_id.clone())
}

/// The alert for a confirmed event: the kind from the event, else the
/// re-check, else `unknown`; the title from the re-check's stripped or raw
/// terminal title, else the event's.
pub fn notification(
    event: &Event,
    current: &Agent,
    project: Option<String>,
    ts: i64,
) -> Notification {
    Notification {
        pane: event.pane.clone(),
        kind: event
            .kind
            .clone()
            .or_else(|| nonempty(&current.agent).map(str::to_owned))
            .unwrap_or_else(|| "unknown".to_owned()),
        status: event.status.clone(),
        ts,
        project,
        title: nonempty(&current.terminal_title_stripped)
            .or(nonempty(&current.terminal_title))
            .map(str::to_owned)
            .or(event.title.clone()),
    }
}

/// The hook, with its environment given as a lookup function.
pub fn run_with(lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Result<(), NotifyError> {
    let (env, event) = env::start(lookup)?;
    let ts = crate::base::clock::unix_seconds();
    let settings = settings::load(&env.config_dir);
    let marker = marker_path(&env.state_dir, &event.pane);
    let registration_path = registration::path_in(&env.config_dir);
    let select = |flag: &str| {
        let file = registration::read(&registration_path);
        registration::alert_selection(file.as_ref(), &env.session, flag)
    };

    // The refused entries are named once per event, when the devices are
    // first looked at.
    let has_devices = |flag: &'static str| {
        let selection = select(flag);
        for token in &selection.refused {
            log_line(&refused_token_line(token));
        }
        !selection.devices.is_empty()
    };
    if !worth_debouncing(&event.status, read_marker(&marker).as_deref(), has_devices) {
        return spool::ensure_served(&env.state_dir).map_err(NotifyError::from);
    }

    let due_ms = crate::base::clock::unix_millis().saturating_add(settings.debounce_ms);
    let job = Job::Notify {
        event,
        ts,
        only: Vec::new(),
    };
    spool::hand_over(&env, due_ms, job).map_err(NotifyError::from)
}

/// What the worker shares between the events of one batch: the herdr
/// client, the settings, the relay clients and the workspace labels
/// already asked for.
pub struct Round<'a> {
    pub env: &'a HookEnv,
    pub herdr: &'a HerdrClient,
    pub settings: &'a NotifySettings,
    pub relays: &'a mut Relays,
    pub labels: &'a mut HashMap<String, Option<String>>,
}

/// The tokens of the devices an alert goes to: the devices that enabled
/// its flag, in file order, and when `only` names some, only those.
pub fn alert_devices(
    file: Option<&Value>,
    env: &HookEnv,
    flag: &str,
    only: &[String],
) -> Vec<AlertDevice> {
    let mut devices = registration::alert_selection(file, &env.session, flag).devices;
    if !only.is_empty() {
        devices.retain(|d| only.contains(&d.token));
    }
    devices
}

/// The rest of the hook, in the worker after the debounce: `current` is the
/// re-check's answer for the event's pane (`agent get`, or its entry in one
/// `agent list`); then the marker, the devices, the alert and the round.
/// `only` (empty: every device) names the devices this round sends to;
/// `check_marker` is false for the devices an earlier round of the event
/// still owes (its own round wrote the marker). Returns the devices to
/// try again later (the relay's rate limit, an outage), with the round's
/// result.
pub fn finish(
    round: &mut Round<'_>,
    event: &Event,
    ts: i64,
    only: &[String],
    check_marker: bool,
    current: Result<Agent, HerdrError>,
) -> (Vec<Deferred>, Result<(), NotifyError>) {
    match prepare(round, event, only, check_marker, current) {
        Ok(Some(devices)) => deliver_alert(round, event, ts, &devices),
        Ok(None) => (Vec::new(), Ok(())),
        Err(e) => (Vec::new(), Err(e)),
    }
}

/// The re-check, the marker and the devices: `None` when nothing is sent.
fn prepare(
    round: &mut Round<'_>,
    event: &Event,
    only: &[String],
    check_marker: bool,
    current: Result<Agent, HerdrError>,
) -> Result<Option<(Vec<AlertDevice>, Agent)>, NotifyError> {
    let env = round.env;
    let marker = marker_path(&env.state_dir, &event.pane);
    let current = match current {
        Ok(agent) => agent,
        Err(HerdrError::AgentGone) => {
            clear_marker(&marker);
            return Ok(None);
        }
        Err(e) => return Err(NotifyError::Recheck(e)),
    };
    let current_status = current
        .agent_status
        .as_deref()
        .ok_or(NotifyError::RecheckNoStatus)?
        .to_lowercase();
    let flag = match recheck(&event.status, &current_status) {
        Recheck::MovedOn => return Ok(None),
        Recheck::Rearm => {
            clear_marker(&marker);
            return Ok(None);
        }
        Recheck::Notify(flag) => flag,
    };
    // An earlier event of this pane may have been delivered meanwhile.
    if check_marker && read_marker(&marker).as_deref() == Some(event.status.as_str()) {
        return Ok(None);
    }
    let file = registration::read(&registration::path_in(&env.config_dir));
    let devices = alert_devices(file.as_ref(), env, flag, only);
    if devices.is_empty() {
        return Ok(None);
    }
    Ok(Some((devices, current)))
}

/// The alert's round: sealed per device, each request paced.
fn deliver_alert(
    round: &mut Round<'_>,
    event: &Event,
    ts: i64,
    (devices, current): &(Vec<AlertDevice>, Agent),
) -> (Vec<Deferred>, Result<(), NotifyError>) {
    let env = round.env;
    let marker = marker_path(&env.state_dir, &event.pane);
    let registration_path = registration::path_in(&env.config_dir);
    let project = project_workspace(event, current).and_then(|id| {
        let herdr = round.herdr;
        round
            .labels
            .entry(id)
            .or_insert_with_key(|id| herdr.workspace_label(id).ok().flatten())
            .clone()
    });
    let alert = notification(event, current, project, ts);
    let (relay, pacer) = round.relays.client_and_pacer(round.settings);
    let done = delivery::deliver_with(
        relay,
        devices,
        |relay, device| {
            let sealed = alert.seal(&device.key, envelope::random_nonce()?);
            let collapse = collapse_key(&device.key, &event.pane);
            let body = push_body(device, &sealed, &collapse);
            Ok(delivery::push_paced(relay, pacer, &device.token, &body))
        },
        Registration {
            path: &registration_path,
            prune: registration::remove_tokens,
        },
        RecordWhen::AnyDelivered,
        || StateRecord {
            path: marker.clone(),
            value: marker_value(&event.pane, &event.status),
        },
    );
    (done.deferred, done.result.map_err(NotifyError::Delivery))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_names_are_base64url_of_the_pane() {
        assert_eq!(
            marker_path(Path::new("/s"), "wV:p1"),
            PathBuf::from("/s/notify/d1Y6cDE.json")
        );
    }

    #[test]
    fn only_blocked_and_done_notify() {
        assert_eq!(notify_flag("blocked"), Some("blocked"));
        assert_eq!(notify_flag("done"), Some("done"));
        assert_eq!(notify_flag("working"), None);
        assert_eq!(notify_flag("idle"), None);
        // Doctor counts an entry's alerts by these flags.
        for flag in registration::ALERT_FLAGS {
            assert_eq!(notify_flag(flag), Some(flag));
        }
    }

    #[test]
    fn cheap_exits_follow_the_marker_and_the_devices() {
        let some_devices = |_: &str| true;
        let no_devices = |_: &str| false;
        // A notifying status the marker already holds: no sleep, devices not asked.
        assert!(!worth_debouncing(
            "blocked",
            Some("blocked"),
            |_| unreachable!()
        ));
        // A notifying status with no device for its flag.
        assert!(!worth_debouncing("done", Some("blocked"), no_devices));
        assert!(worth_debouncing("done", Some("blocked"), some_devices));
        assert!(worth_debouncing("blocked", None, some_devices));
        // The flag asked for is the status's own.
        assert!(worth_debouncing("done", None, |flag| flag == "done"));
        // A non-notifying status matters only when a marker is left to re-arm.
        assert!(!worth_debouncing("working", None, |_| unreachable!()));
        assert!(worth_debouncing("idle", Some("done"), |_| unreachable!()));
    }

    #[test]
    fn the_recheck_aborts_rearms_or_notifies() {
        assert_eq!(recheck("blocked", "working"), Recheck::MovedOn);
        assert_eq!(recheck("working", "idle"), Recheck::MovedOn);
        assert_eq!(recheck("working", "working"), Recheck::Rearm);
        assert_eq!(recheck("blocked", "blocked"), Recheck::Notify("blocked"));
        assert_eq!(recheck("done", "done"), Recheck::Notify("done"));
    }

    #[test]
    fn the_alert_prefers_the_event_kind_and_the_stripped_recheck_title() {
        let event = Event {
            pane: "wV:p1".into(),
            status: "blocked".into(),
            kind: None,
            workspace_id: Some("wE".into()),
            title: Some("event title".into()),
        };
        let agent = |text: &str| Agent::from_value(&json::parse(text).unwrap()).unwrap();
        let current = agent(
            r#"{"pane_id":"wV:p1","agent":"codex","workspace_id":"wR","terminal_title":"⠋ raw","terminal_title_stripped":"stripped"}"#,
        );
        assert_eq!(project_workspace(&event, &current).as_deref(), Some("wR"));
        let alert = notification(&event, &current, Some("Heeler".into()), 1_700_000_000);
        assert_eq!(alert.kind, "codex");
        assert_eq!(alert.title.as_deref(), Some("stripped"));
        assert_eq!(alert.project.as_deref(), Some("Heeler"));
        assert_eq!(alert.ts, 1_700_000_000);

        let bare =
            agent(r#"{"pane_id":"wV:p1","terminal_title_stripped":"","terminal_title":"raw"}"#);
        assert_eq!(project_workspace(&event, &bare).as_deref(), Some("wE"));
        assert_eq!(notification(&event, &bare, None, 1).kind, "unknown");
        assert_eq!(
            notification(&event, &bare, None, 1).title.as_deref(),
            Some("raw")
        );
        let nothing = agent(r#"{"pane_id":"wV:p1"}"#);
        let claude = Event {
            kind: Some("claude".into()),
            ..event
        };
        let alert = notification(&claude, &nothing, None, 1);
        assert_eq!(alert.kind, "claude");
        assert_eq!(alert.title.as_deref(), Some("event title"));
    }

    #[test]
    fn the_marker_holds_the_pane_then_the_status() {
        assert_eq!(
            marker_value("wV:p1", "done").to_json(),
            r#"{"pane":"wV:p1","last_notified_status":"done"}"#
        );
    }
}

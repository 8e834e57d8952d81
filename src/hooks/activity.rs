//! `heeler activity-hook`: keeps each registered device's Live Activity in
//! step with the Host's eligible agents (working, blocked, done).
//!
//! Bursts of status changes start many overlapping hook processes; a
//! latest-wins claim makes exactly one of them send, an unchanged snapshot
//! sends nothing, and a Host with no Live Activity registration exits before
//! any sleep or herdr call. Each device gets its own sealed content (its pins
//! and row layout), kept under the push size budget by a degradation ladder.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ring::digest::{SHA256, digest};

use crate::base::atomic_file::{self, LockFile, LockPolicy};
use crate::base::json::{self, Object, Value};
use crate::cli::ActivityHookArgs;
use crate::exit::Failure;
use crate::herdr::client::{HerdrClient, HerdrError};
use crate::hooks::delivery::{self, DeliveryError, Registration, StateRecord, write_state_file};
use crate::hooks::env::{self, StartError};
use crate::hooks::registration::{self, ActivityDevice};
use crate::hooks::relay::{Outcome, RelayClient};
use crate::hooks::row_layout::{self, RowContext};
use crate::hooks::settings::{self, read_capped};
use crate::wire::display_text::for_display;
use crate::wire::envelope;
use crate::wire::live_activity::{self, BuildContext, Content, Counts, js_string_cmp};

/// Seconds after `timestamp` an update goes stale.
pub const STALE_AFTER_S: i64 = 900;
/// Longest `ct` string.
pub const MAX_CT_CHARS: usize = 2_800;
/// Longest projected APNs body.
pub const MAX_APNS_BYTES: usize = 4_096;
/// Longest relay request body.
pub const MAX_RELAY_BODY_BYTES: usize = 8_192;
/// The last degradation step: `agents: []`.
pub const LAST_STEP: u8 = 3;

/// The priority of an update that shows a newly blocked agent.
pub const PRIORITY_NEWLY_BLOCKED: u8 = 10;
/// The priority of every other update and of an end.
pub const PRIORITY_ROUTINE: u8 = 5;

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

fn is_eligible_status(status: &str) -> bool {
    live_activity::status_rank(status).is_some()
}

/// `activity/last-state.json` as far as the hook reads it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct LastState {
    pub statuses: Option<HashMap<String, String>>,
    pub preferences: Option<String>,
    pub ended: bool,
}

pub fn read_last_state(path: &Path) -> LastState {
    let Some(value) = read_capped(path, 1024 * 1024).and_then(|t| json::parse(&t).ok()) else {
        return LastState::default();
    };
    LastState {
        statuses: value.get("statuses").and_then(Value::as_object).map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.to_owned(), v.as_str()?.to_owned())))
                .collect()
        }),
        preferences: value
            .get("preferences")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ended: value.get("ended") == Some(&Value::Bool(true)),
    }
}

/// Whether a claim read back after the debounce belongs to a newer hook.
pub fn superseded(stored: &Value, pid: u32, claimed_at_ms: u64) -> bool {
    let Some(stored_at) = stored.get("claimed_at_ms").and_then(Value::as_f64) else {
        return false;
    };
    let ours = claimed_at_ms as f64;
    stored_at > ours
        || (stored_at == ours && stored.get("pid").and_then(Value::as_f64) != Some(f64::from(pid)))
}

/// How long a hook waits for another's claim write.
const CLAIM_LOCK: LockPolicy = LockPolicy {
    deadline: Duration::from_millis(2_000),
    stale_after: Duration::from_millis(5_000),
    retry_every: Duration::from_millis(2),
};

/// Writes our claim and returns its time. Claims are written one at a time
/// under a lock and each is later than the one it replaces, so the file
/// always holds the newest claim and exactly one overlapping hook finds its
/// own claim after the debounce.
pub fn write_claim(path: &Path, pid: u32) -> std::io::Result<u64> {
    if let Some(dir) = path.parent() {
        atomic_file::create_dir_all(dir, 0o700)?;
    }
    let _lock = LockFile::acquire(&path.with_file_name("claim.lock"), CLAIM_LOCK).ok();
    let previous = read_capped(path, 64 * 1024)
        .and_then(|t| json::parse(&t).ok())
        .and_then(|v| v.get("claimed_at_ms").and_then(Value::as_f64))
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map_or(0, |ms| ms as u64);
    let now = crate::base::clock::unix_millis();
    // Never behind a claim that is at most a second ahead of our clock.
    let claimed_at_ms = if previous >= now && previous - now < 1_000 {
        previous + 1
    } else {
        now
    };
    let claim = Value::Object(
        Object::new()
            .with("pid", u64::from(pid))
            .with("claimed_at_ms", claimed_at_ms),
    );
    write_state_file(path, &claim)?;
    Ok(claimed_at_ms)
}

/// The device-preferences hash: SHA-256 hex of the devices' token, env,
/// pins, parsed layout and host name, sorted by token.
pub fn preferences_hash(devices: &[ActivityDevice]) -> String {
    let mut sorted: Vec<&ActivityDevice> = devices.iter().collect();
    sorted.sort_by(|a, b| js_string_cmp(&a.token, &b.token));
    let items = sorted
        .iter()
        .map(|d| {
            let mut item = Object::new()
                .with("token", d.token.as_str())
                .with("env", d.env.as_str());
            if let Some(pins) = &d.pins {
                item.insert("pins", pins.clone());
            }
            item.insert(
                "layout",
                d.layout.as_ref().map_or(Value::Null, |l| l.to_wire()),
            );
            item.insert(
                "host",
                d.host_name.as_deref().map_or(Value::Null, Value::from),
            );
            Value::Object(item)
        })
        .collect::<Vec<_>>();
    let hash = digest(&SHA256, Value::Array(items).to_json().as_bytes());
    hash.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// `update` or `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivityEvent {
    Update,
    End,
}

impl ActivityEvent {
    fn wire(self) -> &'static str {
        match self {
            ActivityEvent::Update => "update",
            ActivityEvent::End => "end",
        }
    }
}

/// What is the same for every device of one run.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub event: ActivityEvent,
    pub priority: u8,
    pub timestamp: i64,
    pub counts: Counts,
}

impl Frame {
    fn date_key_and_value(&self) -> (&'static str, &'static str, i64) {
        match self.event {
            ActivityEvent::Update => ("stale_date", "stale-date", self.timestamp + STALE_AFTER_S),
            ActivityEvent::End => ("dismissal_date", "dismissal-date", self.timestamp),
        }
    }
}

/// The relay body of one Live Activity push, keys in contract order.
pub fn push_body(device: &ActivityDevice, frame: &Frame, envelope: &str) -> String {
    let (date_key, _, date) = frame.date_key_and_value();
    Value::Object(
        Object::new()
            .with("kind", "liveactivity")
            .with("token", device.token.as_str())
            .with("env", device.env.as_str())
            .with("event", frame.event.wire())
            .with("priority", u64::from(frame.priority))
            .with("timestamp", frame.timestamp)
            .with("counts", frame.counts.to_wire())
            .with("envelope", envelope)
            .with(date_key, date),
    )
    .to_json()
}

/// The APNs body the relay would build, as the size budget projects it.
pub fn projected_apns_body(frame: &Frame, envelope: &str) -> String {
    let (_, apns_key, date) = frame.date_key_and_value();
    format!(
        r#"{{"aps":{{"timestamp":{},"event":{},"content-state":{{"counts":{},"envelope":{envelope}}},{}:{date}}}}}"#,
        frame.timestamp,
        json::quote(frame.event.wire()),
        Value::Object(frame.counts.to_wire()).to_json(),
        json::quote(apns_key),
    )
}

/// Whether a sealed envelope fits every budget.
pub fn fits_budget(device: &ActivityDevice, frame: &Frame, envelope: &str) -> bool {
    let ct_len = json::parse(envelope)
        .ok()
        .and_then(|v| v.get("ct").and_then(Value::as_str).map(str::len))
        .unwrap_or(usize::MAX);
    ct_len <= MAX_CT_CHARS
        && projected_apns_body(frame, envelope).len() <= MAX_APNS_BYTES
        && push_body(device, frame, envelope).len() <= MAX_RELAY_BODY_BYTES
}

/// The content at a degradation step: 1 drops titles and names, 2 also
/// rows, 3 every agent.
pub fn degrade(content: &Content, step: u8) -> Content {
    let mut content = content.clone();
    if step >= LAST_STEP {
        content.agents.clear();
        return content;
    }
    for agent in &mut content.agents {
        if step >= 1 {
            agent.title = None;
            agent.name = None;
        }
        if step >= 2 {
            agent.rows = None;
        }
    }
    content
}

/// Seals `content` at the first step from `from` that fits the budget (the
/// last step is taken whether it fits or not).
pub fn seal_within_budget(
    device: &ActivityDevice,
    frame: &Frame,
    content: &Content,
    from: u8,
) -> Result<(u8, String), ring::error::Unspecified> {
    let mut step = from;
    loop {
        let sealed = degrade(content, step).seal(&device.key, envelope::random_nonce()?);
        if step >= LAST_STEP || fits_budget(device, frame, &sealed) {
            return Ok((step, sealed));
        }
        step += 1;
    }
}

/// The first DNS label of the host name, display-trimmed ("" when unknown).
pub fn short_host_name() -> String {
    crate::base::sys::hostname()
        .and_then(|h| h.split('.').next().and_then(for_display))
        .unwrap_or_default()
}

/// The step to re-seal at after the relay refused an envelope sealed at
/// `step` as too large; `None` once even the last step was refused.
pub fn step_after_too_large(step: u8) -> Option<u8> {
    (step < LAST_STEP).then_some(step + 1)
}

/// Whether an event is worth a claim and a debounce: some device shows the
/// activity, and an ended activity restarts only for an eligible status.
pub fn worth_claiming(has_devices: bool, last: &LastState, event_status: &str) -> bool {
    has_devices && (!last.ended || is_eligible_status(event_status))
}

/// Newly blocked (some pane is blocked now and was not in the previous
/// statuses, absent ones counting as none) is urgent; anything else is
/// routine.
pub fn priority(statuses: &[(String, String)], previous: Option<&HashMap<String, String>>) -> u8 {
    let was_blocked =
        |pane: &str| previous.and_then(|p| p.get(pane)).map(String::as_str) == Some("blocked");
    if statuses
        .iter()
        .any(|(pane, status)| status == "blocked" && !was_blocked(pane))
    {
        PRIORITY_NEWLY_BLOCKED
    } else {
        PRIORITY_ROUTINE
    }
}

/// What the hook does with the snapshot it gathered after the debounce.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The statuses and the device preferences equal last-state.
    Unchanged,
    /// No eligible agent, and the activity has already ended.
    AlreadyEnded,
    /// Push to every device.
    Send(Plan),
}

/// One push round: the event and priority are the same for every device.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub event: ActivityEvent,
    pub priority: u8,
    /// The eligible `(pane, status)` pairs, recorded in last-state.
    pub statuses: Vec<(String, String)>,
    /// The device-preferences hash, recorded in last-state.
    pub preferences: String,
}

/// Decides the round from the agent inventory, the devices and last-state:
/// an unchanged snapshot sends nothing, an empty one ends the activity
/// (once), anything else updates it.
pub fn decide(inventory: &[Value], devices: &[ActivityDevice], last: &LastState) -> Decision {
    let statuses = live_activity::eligible_statuses(inventory);
    let status_map: HashMap<String, String> = statuses.iter().cloned().collect();
    let preferences = preferences_hash(devices);
    if last.statuses.as_ref() == Some(&status_map)
        && last.preferences.as_deref() == Some(preferences.as_str())
    {
        return Decision::Unchanged;
    }
    if statuses.is_empty() && last.ended {
        return Decision::AlreadyEnded;
    }
    Decision::Send(Plan {
        event: if statuses.is_empty() {
            ActivityEvent::End
        } else {
            ActivityEvent::Update
        },
        priority: priority(&statuses, last.statuses.as_ref()),
        statuses,
        preferences,
    })
}

/// The herdr lookups a plan's content needs beyond the inventory.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ContextNeeds {
    /// `workspace list`, for the workspace labels.
    pub workspace_labels: bool,
    /// `tab list` per workspace, for a layout's `tab` token.
    pub tabs: bool,
    /// `pane list` per workspace, for a layout's `pane` token.
    pub panes: bool,
    /// The eligible agents' workspaces, sorted, when tabs or panes are needed.
    pub workspaces: Vec<String>,
}

/// One device's push: the frame and the content to seal for it.
#[derive(Debug, Clone)]
pub struct Payload<'a> {
    pub device: &'a ActivityDevice,
    pub frame: Frame,
    pub content: Content,
}

impl delivery::PushTarget for Payload<'_> {
    fn push_token(&self) -> &str {
        &self.device.token
    }
}

impl Plan {
    /// An end shows no agent, so it needs nothing; an update needs the
    /// labels, and tabs or panes only when some device's layout uses them.
    pub fn context_needs(&self, devices: &[ActivityDevice], inventory: &[Value]) -> ContextNeeds {
        if self.event == ActivityEvent::End {
            return ContextNeeds::default();
        }
        let layouts = || devices.iter().filter_map(|d| d.layout.as_ref());
        let tabs = layouts().any(|l| l.uses("tab"));
        let panes = layouts().any(|l| l.uses("pane"));
        let mut workspaces = Vec::new();
        if tabs || panes {
            let eligible: HashSet<&str> = inventory
                .iter()
                .filter(|a| {
                    a.get("agent_status")
                        .and_then(Value::as_str)
                        .is_some_and(|s| is_eligible_status(&s.to_lowercase()))
                })
                .filter_map(|a| a.get("workspace_id").and_then(Value::as_nonempty_str))
                .collect();
            workspaces = eligible.into_iter().map(str::to_owned).collect();
            workspaces.sort_unstable();
        }
        ContextNeeds {
            workspace_labels: true,
            tabs,
            panes,
            workspaces,
        }
    }

    /// Each device's payload, in device order: an end carries zero counts
    /// and no agents; an update the device's pins and rows.
    pub fn payloads<'a>(
        &self,
        devices: &'a [ActivityDevice],
        inventory: &[Value],
        context: &RowContext,
        timestamp: i64,
    ) -> Vec<Payload<'a>> {
        devices
            .iter()
            .map(|device| {
                let (counts, content) = match self.event {
                    ActivityEvent::End => (
                        Counts::default(),
                        Content {
                            agents: Vec::new(),
                            host: context.host.clone(),
                        },
                    ),
                    ActivityEvent::Update => {
                        let render = |agent: &Value| {
                            device.layout.as_ref().map(|layout| {
                                row_layout::render(
                                    layout,
                                    agent,
                                    context,
                                    device.host_name.as_deref(),
                                )
                            })
                        };
                        live_activity::build(
                            inventory,
                            &BuildContext {
                                host: &context.host,
                                pins: device.pins.as_ref(),
                                workspace_labels: &context.workspace_labels,
                                rows: &render,
                            },
                        )
                    }
                };
                Payload {
                    device,
                    frame: Frame {
                        event: self.event,
                        priority: self.priority,
                        timestamp,
                        counts,
                    },
                    content,
                }
            })
            .collect()
    }

    /// The last-state a delivered round records, keys in contract order.
    pub fn last_state(&self, sent_at_ms: u64) -> Value {
        let mut statuses = Object::new();
        for (pane, status) in &self.statuses {
            statuses.insert(pane.as_str(), Value::from(status.as_str()));
        }
        Value::Object(
            Object::new()
                .with("sent_at_ms", sent_at_ms)
                .with("statuses", statuses)
                .with("preferences", self.preferences.as_str())
                .with("ended", self.event == ActivityEvent::End),
        )
    }
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
        if needs.tabs {
            if let Ok(tabs) = herdr.tab_list(workspace) {
                row_layout::add_tabs(context, workspace, &tabs);
            }
        }
        if needs.panes {
            if let Ok(panes) = herdr.pane_list(workspace) {
                row_layout::add_panes(context, workspace, &panes);
            }
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
    let stored = read_capped(&claim_path, 64 * 1024).and_then(|t| json::parse(&t).ok());
    if stored.is_some_and(|s| superseded(&s, pid, claimed_at_ms)) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::envelope::NotificationKey;
    use crate::wire::live_activity::AgentEntry;

    fn device() -> ActivityDevice {
        ActivityDevice {
            token: "00112233445566778899".into(),
            env: "production".into(),
            key: NotificationKey::from_bytes([7; 32]),
            pins: None,
            layout: None,
            host_name: None,
        }
    }

    fn frame(event: ActivityEvent) -> Frame {
        Frame {
            event,
            priority: 10,
            timestamp: 1_760_000_000,
            counts: Counts {
                working: 1,
                blocked: 2,
                done: 0,
            },
        }
    }

    #[test]
    fn relay_body_keys_are_in_contract_order() {
        assert_eq!(
            push_body(&device(), &frame(ActivityEvent::Update), "{\"v\":1}"),
            r#"{"kind":"liveactivity","token":"00112233445566778899","env":"production","event":"update","priority":10,"timestamp":1760000000,"counts":{"working":1,"blocked":2,"done":0},"envelope":"{\"v\":1}","stale_date":1760000900}"#
        );
        assert!(
            push_body(&device(), &frame(ActivityEvent::End), "e")
                .ends_with(r#""envelope":"e","dismissal_date":1760000000}"#)
        );
        assert_eq!(
            projected_apns_body(&frame(ActivityEvent::End), r#"{"v":1}"#),
            r#"{"aps":{"timestamp":1760000000,"event":"end","content-state":{"counts":{"working":1,"blocked":2,"done":0},"envelope":{"v":1}},"dismissal-date":1760000000}}"#
        );
    }

    #[test]
    fn ladder_drops_titles_then_rows_then_agents() {
        let entry = AgentEntry {
            kind: Some("claude".into()),
            name: Some("n".into()),
            pane: Some("p".into()),
            rows: Some(Value::Array(vec![])),
            status: "working".into(),
            title: Some("t".into()),
            workspace: Some("w".into()),
        };
        let content = Content {
            agents: vec![entry],
            host: "h".into(),
        };
        assert_eq!(
            degrade(&content, 1).canonical_json(),
            r#"{"agents":[{"kind":"claude","pane":"p","rows":[],"status":"working","workspace":"w"}],"host":"h","v":1}"#
        );
        assert_eq!(
            degrade(&content, 2).canonical_json(),
            r#"{"agents":[{"kind":"claude","pane":"p","status":"working","workspace":"w"}],"host":"h","v":1}"#
        );
        assert_eq!(
            degrade(&content, 3).canonical_json(),
            r#"{"agents":[],"host":"h","v":1}"#
        );
    }

    #[test]
    fn claims_supersede_by_time_then_pid() {
        let stored = json::parse(r#"{"pid":5,"claimed_at_ms":100}"#).unwrap();
        assert!(superseded(&stored, 4, 99));
        assert!(superseded(&stored, 4, 100));
        assert!(!superseded(&stored, 5, 100));
        assert!(!superseded(&stored, 4, 101));
        assert!(!superseded(&json::parse("{}").unwrap(), 4, 1));
    }

    #[test]
    fn preferences_hash_is_order_independent() {
        let mut a = device();
        let mut b = device();
        b.token = "ffff0000ffff0000".into();
        let one = preferences_hash(&[a.clone(), b.clone()]);
        assert_eq!(one, preferences_hash(&[b.clone(), a.clone()]));
        a.pins = Some(Value::Array(vec![Value::from("w1:p1")]));
        assert_ne!(one, preferences_hash(&[a, b]));
        assert_eq!(one.len(), 64);
    }

    fn agent(pane: &str, status: &str) -> Value {
        json::parse(&format!(
            r#"{{"pane_id":"{pane}","workspace_id":"w1","agent":"claude","agent_status":"{status}","terminal_title":"t {pane}"}}"#
        ))
        .unwrap()
    }

    fn statuses(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(p, s)| ((*p).to_owned(), (*s).to_owned()))
            .collect()
    }

    fn last(pairs: Option<&[(&str, &str)]>, preferences: Option<String>, ended: bool) -> LastState {
        LastState {
            statuses: pairs.map(statuses),
            preferences,
            ended,
        }
    }

    fn sent(decision: Decision) -> Plan {
        match decision {
            Decision::Send(plan) => plan,
            other => panic!("expected a push, got {other:?}"),
        }
    }

    #[test]
    fn only_devices_and_a_live_or_restarting_activity_are_worth_a_claim() {
        let fresh = LastState::default();
        let ended = last(Some(&[]), None, true);
        assert!(!worth_claiming(false, &fresh, "blocked"));
        assert!(worth_claiming(true, &fresh, "idle"));
        assert!(!worth_claiming(true, &ended, "idle"));
        assert!(!worth_claiming(true, &ended, "unknown"));
        for status in ["working", "blocked", "done"] {
            assert!(worth_claiming(true, &ended, status));
        }
    }

    #[test]
    fn a_first_activity_is_an_update_urgent_only_when_something_is_blocked() {
        let devices = [device()];
        let working = sent(decide(
            &[agent("w1:p1", "working")],
            &devices,
            &LastState::default(),
        ));
        assert_eq!(working.event, ActivityEvent::Update);
        assert_eq!(working.priority, 5);
        let blocked = sent(decide(
            &[agent("w1:p1", "working"), agent("w1:p2", "blocked")],
            &devices,
            &LastState::default(),
        ));
        assert_eq!(blocked.event, ActivityEvent::Update);
        assert_eq!(blocked.priority, 10);
    }

    #[test]
    fn later_updates_are_urgent_only_for_a_newly_blocked_pane() {
        let devices = [device()];
        let preferences = Some(preferences_hash(&devices));
        let was = last(Some(&[("w1:p1", "blocked")]), preferences.clone(), false);
        // Still blocked, another pane starts working: routine.
        let still = sent(decide(
            &[agent("w1:p1", "blocked"), agent("w1:p2", "working")],
            &devices,
            &was,
        ));
        assert_eq!((still.event, still.priority), (ActivityEvent::Update, 5));
        // A second pane becomes blocked: urgent.
        let second = sent(decide(
            &[agent("w1:p1", "blocked"), agent("w1:p2", "blocked")],
            &devices,
            &was,
        ));
        assert_eq!(second.priority, 10);
        // Working becomes blocked: urgent; blocked becomes done: routine.
        let working = last(Some(&[("w1:p1", "working")]), preferences, false);
        assert_eq!(
            sent(decide(&[agent("w1:p1", "blocked")], &devices, &working)).priority,
            10
        );
        assert_eq!(
            sent(decide(&[agent("w1:p1", "done")], &devices, &was)).priority,
            5
        );
        // Case-insensitive statuses count as what they say.
        assert_eq!(
            sent(decide(&[agent("w1:p1", "Blocked")], &devices, &working)).priority,
            10
        );
    }

    #[test]
    fn an_unchanged_snapshot_sends_nothing_unless_the_preferences_moved() {
        let devices = [device()];
        let inventory = [agent("w1:p1", "working"), agent("w1:p2", "idle")];
        let same = last(
            Some(&[("w1:p1", "working")]),
            Some(preferences_hash(&devices)),
            false,
        );
        assert_eq!(decide(&inventory, &devices, &same), Decision::Unchanged);
        // A state written before preferences existed re-sends once.
        let legacy = last(Some(&[("w1:p1", "working")]), None, false);
        assert_eq!(sent(decide(&inventory, &devices, &legacy)).priority, 5);
        // A new pin is a new preference.
        let mut pinned = device();
        pinned.pins = Some(Value::Array(vec![Value::from("w1:p1")]));
        assert!(matches!(
            decide(&inventory, &[pinned], &same),
            Decision::Send(_)
        ));
        // A status change is a change, even with equal preferences.
        let done = [agent("w1:p1", "done")];
        assert!(matches!(decide(&done, &devices, &same), Decision::Send(_)));
    }

    #[test]
    fn no_eligible_agent_ends_the_activity_once() {
        let devices = [device()];
        let idle = [agent("w1:p1", "idle"), agent("w1:p2", "unknown")];
        let running = last(Some(&[("w1:p1", "blocked")]), None, false);
        let end = sent(decide(&idle, &devices, &running));
        assert_eq!(end.event, ActivityEvent::End);
        assert_eq!(end.priority, 5);
        assert!(end.statuses.is_empty());
        let ended = last(Some(&[]), None, true);
        assert_eq!(decide(&idle, &devices, &ended), Decision::AlreadyEnded);
        assert_eq!(decide(&[], &devices, &ended), Decision::AlreadyEnded);
        // An ended activity restarts with the next eligible agent.
        let restart = sent(decide(&[agent("w1:p1", "working")], &devices, &ended));
        assert_eq!(restart.event, ActivityEvent::Update);
    }

    #[test]
    fn an_end_carries_zero_counts_and_no_agents_for_every_device() {
        let devices = [device(), device()];
        let plan = Plan {
            event: ActivityEvent::End,
            priority: 5,
            statuses: Vec::new(),
            preferences: "p".into(),
        };
        assert_eq!(plan.context_needs(&devices, &[]), ContextNeeds::default());
        let context = RowContext {
            host: "mac".into(),
            ..RowContext::default()
        };
        let payloads = plan.payloads(&devices, &[agent("w1:p1", "idle")], &context, 1_760_000_000);
        assert_eq!(payloads.len(), 2);
        for payload in &payloads {
            assert_eq!(payload.frame.counts, Counts::default());
            assert_eq!(payload.frame.timestamp, 1_760_000_000);
            assert_eq!(
                payload.content.canonical_json(),
                r#"{"agents":[],"host":"mac","v":1}"#
            );
            assert!(
                push_body(payload.device, &payload.frame, "e")
                    .ends_with(r#""counts":{"working":0,"blocked":0,"done":0},"envelope":"e","dismissal_date":1760000000}"#)
            );
        }
    }

    #[test]
    fn an_update_counts_every_eligible_agent_and_fetches_only_used_context() {
        let inventory: Vec<Value> = (1..=7)
            .map(|n| {
                agent(
                    &format!("w1:p{n}"),
                    if n == 3 { "blocked" } else { "working" },
                )
            })
            .chain([agent("w1:p8", "done"), agent("w1:p9", "idle")])
            .collect();
        let plan = sent(decide(&inventory, &[device()], &LastState::default()));
        let plain = plan.context_needs(&[device()], &inventory);
        assert_eq!(
            plain,
            ContextNeeds {
                workspace_labels: true,
                ..ContextNeeds::default()
            }
        );
        let mut tabbed = device();
        tabbed.layout =
            row_layout::parse_layout(&json::parse(r#"{"rows":[[{"token":"tab"}]]}"#).unwrap());
        let needs = plan.context_needs(&[device(), tabbed], &inventory);
        assert!(needs.tabs && !needs.panes);
        assert_eq!(needs.workspaces, ["w1"]);

        let devices = [device()];
        let payloads = plan.payloads(&devices, &inventory, &RowContext::default(), 1);
        let frame = payloads[0].frame;
        assert_eq!(
            (
                frame.counts.working,
                frame.counts.blocked,
                frame.counts.done
            ),
            (6, 1, 1)
        );
        // The content is capped at five agents, the blocked one first.
        assert_eq!(payloads[0].content.agents.len(), 5);
        assert_eq!(payloads[0].content.agents[0].pane.as_deref(), Some("w1:p3"));
        assert_eq!(frame.priority, 10);
    }

    #[test]
    fn last_state_records_statuses_preferences_and_whether_it_ended() {
        let plan = Plan {
            event: ActivityEvent::Update,
            priority: 10,
            statuses: vec![
                ("w1:p2".into(), "blocked".into()),
                ("w1:p1".into(), "working".into()),
            ],
            preferences: "abc".into(),
        };
        assert_eq!(
            plan.last_state(1_760_000_000_123).to_json(),
            r#"{"sent_at_ms":1760000000123,"statuses":{"w1:p2":"blocked","w1:p1":"working"},"preferences":"abc","ended":false}"#
        );
        let read_back = Plan {
            event: ActivityEvent::End,
            statuses: Vec::new(),
            ..plan
        };
        assert!(
            read_back
                .last_state(1)
                .to_json()
                .ends_with(r#""ended":true}"#)
        );
    }

    #[test]
    fn a_relay_413_moves_one_step_down_the_ladder_until_the_last() {
        assert_eq!(step_after_too_large(0), Some(1));
        assert_eq!(step_after_too_large(1), Some(2));
        assert_eq!(step_after_too_large(2), Some(3));
        assert_eq!(step_after_too_large(3), None);
    }

    fn entry(title: Option<String>, rows: Option<Value>) -> AgentEntry {
        AgentEntry {
            kind: Some("claude".into()),
            name: None,
            pane: Some("w1:p1".into()),
            rows,
            status: "working".into(),
            title,
            workspace: None,
        }
    }

    fn sealed_step(content: &Content) -> u8 {
        let frame = frame(ActivityEvent::Update);
        seal_within_budget(&device(), &frame, content, 0).unwrap().0
    }

    #[test]
    fn the_budget_pre_degrades_to_the_first_step_that_fits() {
        let small = Content {
            agents: vec![entry(Some("t".into()), None)],
            host: "h".into(),
        };
        assert_eq!(sealed_step(&small), 0);
        // Five 500-byte titles are ~2.5 KB of plaintext, over the 2800-character
        // ciphertext budget (about 2.1 KB of plaintext); without titles it fits.
        let titled = Content {
            agents: vec![entry(Some("x".repeat(500)), None); 5],
            host: "h".into(),
        };
        assert_eq!(sealed_step(&titled), 1);
        // Rows too large for the budget go at step 2.
        let rows = json::parse(&format!(r#"[[{{"text":"{}"}}]]"#, "r".repeat(500))).unwrap();
        let rowed = Content {
            agents: vec![entry(None, Some(rows)); 5],
            host: "h".into(),
        };
        assert_eq!(sealed_step(&rowed), 2);
        // A host name alone over budget still ends at the last step.
        let huge_host = Content {
            agents: vec![entry(None, None)],
            host: "h".repeat(5_000),
        };
        assert_eq!(sealed_step(&huge_host), LAST_STEP);
    }
}

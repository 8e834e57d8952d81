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
use crate::hooks::env::{self, EventError, MissingEnv};
use crate::hooks::notify::token_prefix;
use crate::hooks::registration::{self, ActivityDevice};
use crate::hooks::relay::{Outcome, RelayClient, RelayConfigError};
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

/// Why the hook failed (each is one `activity-hook: …` line).
#[derive(Debug)]
pub enum ActivityError {
    Env(MissingEnv),
    Event(EventError),
    AgentList(HerdrError),
    Relay(RelayConfigError),
    Nonce,
    /// Per-device failures, joined with `; `.
    Deliveries(Vec<String>),
}

impl std::fmt::Display for ActivityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ActivityError::Env(e) => write!(f, "{e}"),
            ActivityError::Event(e) => write!(f, "{e}"),
            ActivityError::AgentList(HerdrError::Malformed(_)) => {
                f.write_str("agent list returned no agents array")
            }
            ActivityError::AgentList(e) => f.write_str(&e.failed("agent list")),
            ActivityError::Relay(e) => write!(f, "{e}"),
            ActivityError::Nonce => f.write_str("no randomness for a nonce"),
            ActivityError::Deliveries(failures) => f.write_str(&failures.join("; ")),
        }
    }
}

impl From<MissingEnv> for ActivityError {
    fn from(e: MissingEnv) -> ActivityError {
        ActivityError::Env(e)
    }
}

impl From<EventError> for ActivityError {
    fn from(e: EventError) -> ActivityError {
        ActivityError::Event(e)
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

fn write_state_file(path: &Path, value: &Value) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        atomic_file::create_dir_all(dir, 0o700)?;
    }
    atomic_file::write(path, value.to_json().as_bytes(), 0o600)
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

fn device_outcome(
    relay: &RelayClient,
    device: &ActivityDevice,
    frame: &Frame,
    content: &Content,
) -> Result<Outcome, ActivityError> {
    let mut step = 0;
    loop {
        let (sealed_step, sealed) =
            seal_within_budget(device, frame, content, step).map_err(|_| ActivityError::Nonce)?;
        match relay.push(&push_body(device, frame, &sealed)) {
            Outcome::TooLarge(_) if sealed_step < LAST_STEP => step = sealed_step + 1,
            Outcome::TooLarge(_) => return Ok(Outcome::Failed("payload too large".to_owned())),
            other => return Ok(other),
        }
    }
}

fn fetch_row_context(
    herdr: &HerdrClient,
    devices: &[ActivityDevice],
    inventory: &[Value],
    context: &mut RowContext,
) {
    let layouts = || devices.iter().filter_map(|d| d.layout.as_ref());
    let needs_tabs = layouts().any(|l| l.uses("tab"));
    let needs_panes = layouts().any(|l| l.uses("pane"));
    if !needs_tabs && !needs_panes {
        return;
    }
    let eligible: HashSet<&str> = inventory
        .iter()
        .filter(|a| {
            a.get("agent_status")
                .and_then(Value::as_str)
                .is_some_and(|s| is_eligible_status(&s.to_lowercase()))
        })
        .filter_map(|a| a.get("workspace_id").and_then(Value::as_nonempty_str))
        .collect();
    let mut workspaces: Vec<&str> = eligible.into_iter().collect();
    workspaces.sort_unstable();
    for workspace in workspaces {
        if needs_tabs {
            if let Ok(tabs) = herdr.tab_list(workspace) {
                row_layout::add_tabs(context, workspace, &tabs);
            }
        }
        if needs_panes {
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

/// Paths of the session's activity state.
fn activity_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("activity")
}

/// The hook, with its environment given as a lookup function.
pub fn run_with(lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Result<(), ActivityError> {
    let config_dir = env::config_dir(lookup)?;
    env::refresh_sidebar_snapshot(&config_dir);
    crate::usage::runtime::record_for_hook(lookup);
    let env = env::rest(config_dir, lookup)?;
    let event = env::parse_event(&env.event_json)?;
    let registration_path = registration::path_in(&env.config_dir);
    let file = registration::read(&registration_path);
    if registration::activity_devices(file.as_ref(), &env.session).is_empty() {
        return Ok(());
    }
    let dir = activity_dir(&env.state_dir);
    let last_state_path = dir.join("last-state.json");
    let last = read_last_state(&last_state_path);
    if last.ended && !is_eligible_status(&event.status) {
        return Ok(());
    }
    let settings = settings::load(&env.config_dir);

    // Latest wins: claim, sleep, and step aside for a newer claim.
    let claim_path = dir.join("claim.json");
    let pid = std::process::id();
    let claimed_at_ms = write_claim(&claim_path, pid).map_err(|e| {
        ActivityError::Deliveries(vec![format!("cannot write {}: {e}", claim_path.display())])
    })?;
    std::thread::sleep(Duration::from_millis(settings.activity_debounce_ms));
    let stored = read_capped(&claim_path, 64 * 1024).and_then(|t| json::parse(&t).ok());
    if stored.is_some_and(|s| superseded(&s, pid, claimed_at_ms)) {
        return Ok(());
    }

    let file = registration::read(&registration_path);
    let devices = registration::activity_devices(file.as_ref(), &env.session);
    if devices.is_empty() {
        return Ok(());
    }
    let herdr = HerdrClient {
        socket: env.socket_path.clone(),
        bin: env.herdr_bin.clone(),
    };
    let inventory = herdr.agent_list().map_err(ActivityError::AgentList)?;
    let statuses = live_activity::eligible_statuses(&inventory);
    let status_map: HashMap<String, String> = statuses.iter().cloned().collect();
    let preferences = preferences_hash(&devices);
    if last.statuses.as_ref() == Some(&status_map)
        && last.preferences.as_deref() == Some(preferences.as_str())
    {
        return Ok(());
    }
    let empty = statuses.is_empty();
    if empty && last.ended {
        return Ok(());
    }

    let mut context = RowContext {
        host: short_host_name(),
        ..RowContext::default()
    };
    if !empty {
        context.workspace_labels = workspace_labels(&herdr);
        fetch_row_context(&herdr, &devices, &inventory, &mut context);
    }
    let previous = last.statuses.unwrap_or_default();
    let newly_blocked = statuses.iter().any(|(pane, s)| {
        s == "blocked" && previous.get(pane).map(String::as_str) != Some("blocked")
    });
    let timestamp = crate::base::clock::unix_seconds();
    let relay = RelayClient::new(
        &settings.relay_url,
        settings.relay_ca_file.as_deref(),
        Duration::from_millis(settings.retry_delay_ms),
    )
    .map_err(ActivityError::Relay)?;

    let (mut delivered, mut pruned, mut failures) = (0usize, Vec::new(), Vec::new());
    for device in &devices {
        let render = |agent: &Value| {
            device.layout.as_ref().map(|layout| {
                row_layout::render(layout, agent, &context, device.host_name.as_deref())
            })
        };
        let (counts, content) = if empty {
            (
                Counts::default(),
                Content {
                    agents: Vec::new(),
                    host: context.host.clone(),
                },
            )
        } else {
            live_activity::build(
                &inventory,
                &BuildContext {
                    host: &context.host,
                    pins: device.pins.as_ref(),
                    workspace_labels: &context.workspace_labels,
                    rows: &render,
                },
            )
        };
        let frame = Frame {
            event: if empty {
                ActivityEvent::End
            } else {
                ActivityEvent::Update
            },
            priority: if newly_blocked { 10 } else { 5 },
            timestamp,
            counts,
        };
        match device_outcome(&relay, device, &frame, &content)? {
            Outcome::Delivered => delivered += 1,
            Outcome::Gone => pruned.push(device.token.clone()),
            Outcome::TooLarge(last) | Outcome::Failed(last) => failures.push(format!(
                "push for token {}… failed: {last}",
                token_prefix(&device.token)
            )),
        }
    }
    if !pruned.is_empty() {
        if let Err(e) = registration::rewrite(&registration_path, |f| {
            registration::remove_live_activities(f, &pruned)
        }) {
            failures.push(e.to_string());
        }
    }
    if delivered > 0 {
        let mut status_object = Object::new();
        for (pane, status) in &statuses {
            status_object.insert(pane.as_str(), Value::from(status.as_str()));
        }
        let state = Value::Object(
            Object::new()
                .with("sent_at_ms", crate::base::clock::unix_millis())
                .with("statuses", status_object)
                .with("preferences", preferences)
                .with("ended", empty),
        );
        if let Err(e) = write_state_file(&last_state_path, &state) {
            failures.push(format!("cannot write {}: {e}", last_state_path.display()));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(ActivityError::Deliveries(failures))
    }
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
}

//! `heeler notify-hook`: one Agent Notification per confirmed Blocked/Done
//! transition, sealed per device and pushed through the relay.
//!
//! herdr runs this on every `pane.agent_status_changed`, so nearly every run
//! must end in a cheap no-op decided from the environment and two small
//! files, before any sleep, socket or TLS setup. Only a transition worth
//! telling survives the debounce, the re-check through herdr and the
//! per-session dedupe marker.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::atomic_file;
use crate::base::base64;
use crate::base::json::{self, Object, Value};
use crate::cli::NotifyHookArgs;
use crate::exit::Failure;
use crate::herdr::client::{HerdrClient, HerdrError};
use crate::hooks::env::{self, EventError, MissingEnv};
use crate::hooks::registration::{self, AlertDevice};
use crate::hooks::relay::{Outcome, RelayClient, RelayConfigError};
use crate::hooks::settings;
use crate::wire::envelope::{self, collapse_key};
use crate::wire::notification::Notification;

/// Why the hook failed (each is one `notify-hook: …` line).
#[derive(Debug)]
pub enum NotifyError {
    Env(MissingEnv),
    Event(EventError),
    Recheck(HerdrError),
    RecheckNoStatus,
    Relay(RelayConfigError),
    Nonce,
    /// Per-device failures, joined with `; `.
    Deliveries(Vec<String>),
}

impl std::fmt::Display for NotifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotifyError::Env(e) => write!(f, "{e}"),
            NotifyError::Event(e) => write!(f, "{e}"),
            NotifyError::Recheck(e) => f.write_str(&e.failed("status re-check")),
            NotifyError::RecheckNoStatus => f.write_str("status re-check returned no agent_status"),
            NotifyError::Relay(e) => write!(f, "{e}"),
            NotifyError::Nonce => f.write_str("no randomness for a nonce"),
            NotifyError::Deliveries(failures) => f.write_str(&failures.join("; ")),
        }
    }
}

impl From<MissingEnv> for NotifyError {
    fn from(e: MissingEnv) -> NotifyError {
        NotifyError::Env(e)
    }
}

impl From<EventError> for NotifyError {
    fn from(e: EventError) -> NotifyError {
        NotifyError::Event(e)
    }
}

/// The CLI entry point.
pub fn run(_args: NotifyHookArgs) -> Result<(), Failure> {
    run_with(&env::process_env).map_err(|e| Failure::new(format!("notify-hook: {e}"), 1))
}

/// The notify flag of a status: only Blocked and Done notify.
pub fn notify_flag(status: &str) -> Option<&'static str> {
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
pub fn read_marker(path: &Path) -> Option<String> {
    let text = settings::read_capped(path, 64 * 1024)?;
    json::parse(&text)
        .ok()?
        .get("last_notified_status")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn write_marker(path: &Path, pane: &str, status: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        atomic_file::create_dir_all(dir, 0o700)?;
    }
    let body = Value::Object(
        Object::new()
            .with("pane", pane)
            .with("last_notified_status", status),
    )
    .to_json();
    atomic_file::write(path, body.as_bytes(), 0o600)
}

fn clear_marker(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// The relay body of one alert, keys in contract order.
pub fn push_body(device: &AlertDevice, envelope: &str, collapse: &str) -> String {
    Value::Object(
        Object::new()
            .with("token", device.token.as_str())
            .with("env", device.env.as_str())
            .with("envelope", envelope)
            .with("collapse", collapse),
    )
    .to_json()
}

/// The first 8 characters of a token, for log lines.
pub fn token_prefix(token: &str) -> String {
    token.chars().take(8).collect()
}

fn text_of(agent: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| agent.get(k).and_then(Value::as_nonempty_str))
        .map(str::to_owned)
}

/// The hook, with its environment given as a lookup function.
pub fn run_with(lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Result<(), NotifyError> {
    let config_dir = env::config_dir(lookup)?;
    env::refresh_sidebar_snapshot(&config_dir);
    crate::usage::runtime::record_for_hook(lookup);
    let env = env::rest(config_dir, lookup)?;
    let event = env::parse_event(&env.event_json)?;
    let ts = crate::base::clock::unix_seconds();
    let settings = settings::load(&env.config_dir);
    let flag = notify_flag(&event.status);
    let marker = marker_path(&env.state_dir, &event.pane);
    let registration_path = registration::path_in(&env.config_dir);

    // Cheap exits: nothing slept, nothing asked.
    match flag {
        Some(flag) => {
            if read_marker(&marker).as_deref() == Some(event.status.as_str()) {
                return Ok(());
            }
            let file = registration::read(&registration_path);
            if registration::alert_devices(file.as_ref(), &env.session, flag).is_empty() {
                return Ok(());
            }
        }
        None => {
            if read_marker(&marker).is_none() {
                return Ok(());
            }
        }
    }

    std::thread::sleep(Duration::from_millis(settings.debounce_ms));
    let herdr = HerdrClient {
        socket: env.socket_path.clone(),
        bin: env.herdr_bin.clone(),
    };
    let current = match herdr.agent_get(&event.pane) {
        Ok(agent) => agent,
        Err(HerdrError::AgentGone) => {
            clear_marker(&marker);
            return Ok(());
        }
        Err(e) => return Err(NotifyError::Recheck(e)),
    };
    let status = current
        .get("agent_status")
        .and_then(Value::as_str)
        .ok_or(NotifyError::RecheckNoStatus)?
        .to_lowercase();
    if status != event.status {
        return Ok(());
    }
    let Some(flag) = flag else {
        // A confirmed non-notifying status re-arms the pane.
        clear_marker(&marker);
        return Ok(());
    };
    if read_marker(&marker).as_deref() == Some(status.as_str()) {
        return Ok(());
    }
    let file = registration::read(&registration_path);
    let devices = registration::alert_devices(file.as_ref(), &env.session, flag);
    if devices.is_empty() {
        return Ok(());
    }

    let workspace_id = text_of(&current, &["workspace_id"]).or(event.workspace_id.clone());
    let project = workspace_id.and_then(|id| herdr.workspace_label(&id).ok().flatten());
    let notification = Notification {
        pane: event.pane.clone(),
        kind: event
            .kind
            .clone()
            .or_else(|| text_of(&current, &["agent"]))
            .unwrap_or_else(|| "unknown".to_owned()),
        status: event.status.clone(),
        ts,
        project,
        title: text_of(&current, &["terminal_title_stripped", "terminal_title"])
            .or(event.title.clone()),
    };

    let relay = RelayClient::new(
        &settings.relay_url,
        settings.relay_ca_file.as_deref(),
        Duration::from_millis(settings.retry_delay_ms),
    )
    .map_err(NotifyError::Relay)?;
    let (mut delivered, mut pruned, mut failures) = (0usize, Vec::new(), Vec::new());
    for device in &devices {
        let nonce = envelope::random_nonce().map_err(|_| NotifyError::Nonce)?;
        let sealed = notification.seal(&device.key, nonce);
        let body = push_body(device, &sealed, &collapse_key(&device.key, &event.pane));
        match relay.push(&body) {
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
            registration::remove_tokens(f, &pruned)
        }) {
            failures.push(e.to_string());
        }
    }
    if delivered > 0 {
        if let Err(e) = write_marker(&marker, &event.pane, &event.status) {
            failures.push(format!("cannot write {}: {e}", marker.display()));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(NotifyError::Deliveries(failures))
    }
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
    }
}

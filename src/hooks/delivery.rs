//! The delivery round both event hooks end with: one relay push per device,
//! the verdicts counted, 410 tokens pruned from the registration, the hook's
//! state file written once something was delivered, and the failures joined
//! into the hook's one log line.
//!
//! The notify hook and the activity hook differ in what they seal and which
//! registration edit a 410 calls for, never in how a round is run, so the
//! round lives here once. Its invariants: devices are pushed in file order;
//! a missing nonce stops the round before any prune or state write; the
//! prune runs before the state write; the state is written only after at
//! least one delivery (and, when the caller asks, only when no device was
//! rate limited); a device the relay's rate limit turned away (429) is
//! not a failure but handed back to the caller, who puts the event back
//! in the spool; every other failure becomes one
//! `push for token <8 chars>… failed: …` (or write) message, in that order.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::atomic_file;
use crate::base::json::Value;
use crate::hooks::pacing::{self, Limits, Pacer};
use crate::hooks::registration::{self, ActivityDevice, AlertDevice};
use crate::hooks::relay::{self, Outcome, RelayClient, RelayConfigError};
use crate::hooks::settings::NotifySettings;

/// A registered device as a delivery round sees it: the push token the
/// relay forwards, the one a 410 prunes.
pub trait PushTarget {
    fn push_token(&self) -> &str;
}

impl PushTarget for AlertDevice {
    fn push_token(&self) -> &str {
        &self.token
    }
}

impl PushTarget for ActivityDevice {
    fn push_token(&self) -> &str {
        &self.token
    }
}

/// The first 8 characters of a token, for log lines.
pub(crate) fn token_prefix(token: &str) -> String {
    token.chars().take(8).collect()
}

/// Why a delivery round failed.
#[derive(Debug)]
pub enum DeliveryError {
    /// No relay client for the configured URL or CA file.
    Relay(RelayConfigError),
    /// The system had no randomness for an envelope nonce.
    Nonce,
    /// Per-device and write failures, joined with `; `.
    Failures(Vec<String>),
}

impl std::fmt::Display for DeliveryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeliveryError::Relay(e) => write!(f, "{e}"),
            DeliveryError::Nonce => f.write_str("no randomness for a nonce"),
            DeliveryError::Failures(failures) => f.write_str(&failures.join("; ")),
        }
    }
}

impl std::error::Error for DeliveryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DeliveryError::Relay(e) => Some(e),
            DeliveryError::Nonce | DeliveryError::Failures(_) => None,
        }
    }
}

/// What the devices of one round came to.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub delivered: usize,
    /// Tokens the relay answered 410 for, in device order.
    pub gone: Vec<String>,
    /// One message per device that was not delivered.
    pub failures: Vec<String>,
    /// The devices the relay's rate limit turned away, in device order.
    pub rate_limited: Vec<RateLimited>,
}

/// A device the relay's rate limit turned away: its token and the seconds
/// the answer's `Retry-After` asked for (bounded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimited {
    pub token: String,
    pub(crate) retry_after_s: u64,
}

/// When a round writes its state record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordWhen {
    /// After at least one delivery (the notify marker: the event's
    /// remaining devices are put back on their own).
    AnyDelivered,
    /// After at least one delivery with no device rate limited (the Live
    /// Activity's last-state: the event is put back whole and compared
    /// with the state again).
    NoneRateLimited,
}

/// What a round came to: the devices to put back, and the round's result.
#[derive(Debug)]
pub struct RoundResult {
    pub rate_limited: Vec<RateLimited>,
    pub result: Result<(), DeliveryError>,
}

impl RoundResult {
    fn failed(error: DeliveryError) -> RoundResult {
        RoundResult {
            rate_limited: Vec::new(),
            result: Err(error),
        }
    }
}

impl Tally {
    /// Counts one device's outcome.
    pub fn count(&mut self, token: &str, outcome: Outcome) {
        match outcome {
            Outcome::Delivered => self.delivered += 1,
            Outcome::Gone => self.gone.push(token.to_owned()),
            Outcome::RateLimited(_, retry_after_s) => self.rate_limited.push(RateLimited {
                token: token.to_owned(),
                retry_after_s,
            }),
            Outcome::TooLarge(last) | Outcome::Failed(last) => self.failures.push(format!(
                "push for token {}… failed: {last}",
                token_prefix(token)
            )),
        }
    }
}

/// A state file a hook records after a round that delivered something.
#[derive(Debug, Clone, PartialEq)]
pub struct StateRecord {
    pub path: PathBuf,
    pub value: Value,
}

/// How a round treats the registration file.
#[derive(Debug, Clone, Copy)]
pub struct Registration<'a> {
    /// `notifications.json`.
    pub path: &'a Path,
    /// The edit a 410 calls for, given the gone tokens; returns whether it
    /// changed anything.
    pub prune: fn(&mut Value, &[String]) -> bool,
}

/// The relay client for the settings' URL, CA file and retry delay, each
/// attempt ending at `attempt`.
pub(crate) fn relay_client(
    settings: &NotifySettings,
    attempt: Duration,
) -> Result<RelayClient, RelayConfigError> {
    RelayClient::new(
        &settings.relay_url,
        settings.relay_ca_file.as_deref(),
        Duration::from_millis(settings.retry_delay_ms),
        attempt,
    )
}

/// The relay clients of a worker's lifetime: one per relay URL, CA file
/// and retry delay, so that the rounds of many events share one client
/// (and its pooled connection); and the pacing of every request they make.
pub struct Relays {
    cached: Option<(RelayKey, Result<RelayClient, RelayConfigError>)>,
    pacer: Pacer,
    /// Each attempt's deadline.
    attempt: Duration,
}

type RelayKey = (String, Option<PathBuf>, u64);

impl Default for Relays {
    fn default() -> Relays {
        Relays::new(
            Limits::relay(pacing::RELAY_MINUTE_MS),
            relay::ATTEMPT_TIMEOUT,
        )
    }
}

impl Relays {
    /// No client yet, pacing to `limits`; each attempt of the clients
    /// ends at `attempt`.
    pub fn new(limits: Limits, attempt: Duration) -> Relays {
        Relays {
            cached: None,
            pacer: Pacer::new(limits),
            attempt,
        }
    }

    fn refresh(&mut self, settings: &NotifySettings) {
        let key = (
            settings.relay_url.clone(),
            settings.relay_ca_file.clone(),
            settings.retry_delay_ms,
        );
        if self
            .cached
            .as_ref()
            .is_none_or(|(cached, _)| *cached != key)
        {
            let client = relay_client(settings, self.attempt);
            self.cached = Some((key, client));
        }
    }

    /// The client for `settings`, built on first use.
    pub fn client(&mut self, settings: &NotifySettings) -> Result<&RelayClient, RelayConfigError> {
        self.client_and_pacer(settings).0
    }

    /// The client for `settings` and the pacer, which counts each request
    /// the client makes.
    pub(crate) fn client_and_pacer(
        &mut self,
        settings: &NotifySettings,
    ) -> (Result<&RelayClient, RelayConfigError>, &mut Pacer) {
        self.refresh(settings);
        let Relays { cached, pacer, .. } = self;
        let client = match cached {
            Some((_, Ok(client))) => Ok(&*client),
            Some((_, Err(e))) => Err(e.clone()),
            None => Err(RelayConfigError::BadUrl(settings.relay_url.clone())),
        };
        (client, pacer)
    }

    pub(crate) fn pacer(&self) -> &Pacer {
        &self.pacer
    }

    pub(crate) fn pacer_mut(&mut self) -> &mut Pacer {
        &mut self.pacer
    }
}

/// Pushes `body` for `token`, counting each request in `pacer` at the
/// clock's time.
pub(crate) fn push_paced(
    relay: &RelayClient,
    pacer: &mut Pacer,
    token: &str,
    body: &str,
) -> Outcome {
    relay.push_counted(body, || {
        pacer.record(token, crate::base::clock::unix_millis());
    })
}

/// Runs one round: `push` seals and sends to one device (its retries and
/// size ladder are its own), then the gone tokens are pruned and, when at
/// least one device was delivered (see [`RecordWhen`]), `record` is
/// written.
pub fn deliver<D: PushTarget>(
    settings: &NotifySettings,
    devices: &[D],
    push: impl FnMut(&RelayClient, &D) -> Result<Outcome, ring::error::Unspecified>,
    registration: Registration<'_>,
    record_when: RecordWhen,
    record: impl FnOnce() -> StateRecord,
) -> RoundResult {
    let relay = relay_client(settings, relay::ATTEMPT_TIMEOUT);
    deliver_with(
        relay.as_ref().map_err(Clone::clone),
        devices,
        push,
        registration,
        record_when,
        record,
    )
}

/// [`deliver`] through a given relay client (or the reason there is none).
pub(crate) fn deliver_with<D: PushTarget>(
    relay: Result<&RelayClient, RelayConfigError>,
    devices: &[D],
    mut push: impl FnMut(&RelayClient, &D) -> Result<Outcome, ring::error::Unspecified>,
    registration: Registration<'_>,
    record_when: RecordWhen,
    record: impl FnOnce() -> StateRecord,
) -> RoundResult {
    let relay = match relay {
        Ok(relay) => relay,
        Err(e) => return RoundResult::failed(DeliveryError::Relay(e)),
    };
    let mut tally = Tally::default();
    for device in devices {
        match push(relay, device) {
            Ok(outcome) => tally.count(device.push_token(), outcome),
            Err(_) => return RoundResult::failed(DeliveryError::Nonce),
        }
    }
    let Tally {
        delivered,
        gone,
        mut failures,
        rate_limited,
    } = tally;
    if !gone.is_empty()
        && let Err(e) = registration::rewrite(registration.path, |f| (registration.prune)(f, &gone))
    {
        failures.push(e.to_string());
    }
    let record_now = match record_when {
        RecordWhen::AnyDelivered => delivered > 0,
        RecordWhen::NoneRateLimited => delivered > 0 && rate_limited.is_empty(),
    };
    if record_now {
        let StateRecord { path, value } = record();
        if let Err(e) = write_state_file(&path, &value) {
            failures.push(format!("cannot write {}: {e}", path.display()));
        }
    }
    RoundResult {
        rate_limited,
        result: if failures.is_empty() {
            Ok(())
        } else {
            Err(DeliveryError::Failures(failures))
        },
    }
}

/// Writes one of the hooks' state files (dedupe marker, claim, last-state):
/// the directory made private, the file replaced atomically, owner-only.
pub(crate) fn write_state_file(path: &Path, value: &Value) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        atomic_file::create_dir_all(dir, 0o700)?;
    }
    atomic_file::write(path, value.to_json().as_bytes(), 0o600)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::json::{self, Object};
    use crate::wire::envelope::NotificationKey;

    #[test]
    fn token_prefixes_are_eight_characters() {
        assert_eq!(token_prefix("0123456789abcdef"), "01234567");
        assert_eq!(token_prefix("abc"), "abc");
        assert_eq!(token_prefix("ééééééééé"), "éééééééé");
    }

    #[test]
    fn a_tally_counts_deliveries_collects_gone_tokens_and_names_failures() {
        let mut tally = Tally::default();
        tally.count("aaaaaaaa1111", Outcome::Delivered);
        tally.count("bbbbbbbb2222", Outcome::Gone);
        tally.count(
            "cccccccc3333",
            Outcome::Failed("relay answered 400: {\"error\":\"bad_token\"}".into()),
        );
        tally.count(
            "dddddddd4444",
            Outcome::TooLarge("relay answered 413: x".into()),
        );
        tally.count("eeeeeeee5555", Outcome::Delivered);
        tally.count(
            "ffffffff6666",
            Outcome::RateLimited("relay answered 429".into(), 45),
        );
        assert_eq!(
            tally,
            Tally {
                delivered: 2,
                gone: vec!["bbbbbbbb2222".into()],
                failures: vec![
                    "push for token cccccccc… failed: relay answered 400: {\"error\":\"bad_token\"}"
                        .into(),
                    "push for token dddddddd… failed: relay answered 413: x".into(),
                ],
                rate_limited: vec![RateLimited {
                    token: "ffffffff6666".into(),
                    retry_after_s: 45
                }],
            }
        );
    }

    use crate::base::scratch::ScratchDir as TempDir;

    fn device(token: &str) -> AlertDevice {
        AlertDevice {
            token: token.into(),
            env: "production".into(),
            key: NotificationKey::from_bytes([1; 32]),
        }
    }

    fn loopback_settings() -> NotifySettings {
        NotifySettings {
            relay_url: "http://127.0.0.1:9".into(),
            ..NotifySettings::default()
        }
    }

    fn run_round(dir: &Path, outcomes: Vec<Outcome>) -> Result<(), DeliveryError> {
        run_round_recording(dir, outcomes, RecordWhen::AnyDelivered).result
    }

    fn run_round_recording(
        dir: &Path,
        outcomes: Vec<Outcome>,
        record_when: RecordWhen,
    ) -> RoundResult {
        let registration_path = dir.join("notifications.json");
        let devices = [device("gone-token"), device("kept-token")];
        let mut outcomes = outcomes.into_iter();
        deliver(
            &loopback_settings(),
            &devices,
            |_, _| Ok(outcomes.next().unwrap()),
            Registration {
                path: &registration_path,
                prune: registration::remove_tokens,
            },
            record_when,
            || StateRecord {
                path: dir.join("state/marker.json"),
                value: Value::Object(Object::new().with("recorded", true)),
            },
        )
    }

    #[test]
    fn a_round_prunes_gone_tokens_and_records_only_after_a_delivery() {
        let dir = TempDir::new("round");
        let registration_path = dir.0.join("notifications.json");
        let registration_text =
            r#"{"v":1,"devices":[{"token":"gone-token","x":1},{"token":"kept-token"}]}"#;
        std::fs::write(&registration_path, registration_text).unwrap();

        assert!(run_round(&dir.0, vec![Outcome::Gone, Outcome::Failed("down".into())]).is_err());
        assert_eq!(
            std::fs::read_to_string(&registration_path).unwrap(),
            r#"{"v":1,"devices":[{"token":"kept-token"}]}"#
        );
        assert!(!dir.0.join("state/marker.json").exists());

        let failed_then_delivered = run_round(
            &dir.0,
            vec![Outcome::Failed("down".into()), Outcome::Delivered],
        );
        assert_eq!(
            failed_then_delivered.unwrap_err().to_string(),
            "push for token gone-tok… failed: down"
        );
        let marker = std::fs::read_to_string(dir.0.join("state/marker.json")).unwrap();
        assert_eq!(
            json::parse(&marker).unwrap().get("recorded"),
            Some(&Value::Bool(true))
        );
    }

    #[test]
    fn a_rate_limited_device_is_handed_back_and_holds_back_a_whole_round_record() {
        let dir = TempDir::new("limited");
        let registration_path = dir.0.join("notifications.json");
        let text = r#"{"v":1,"devices":[{"token":"gone-token"},{"token":"kept-token"}]}"#;
        std::fs::write(&registration_path, text).unwrap();
        let limited = || Outcome::RateLimited("relay answered 429".into(), 50);
        let marker = dir.0.join("state/marker.json");
        // The Live Activity's last-state waits for every device.
        let round = run_round_recording(
            &dir.0,
            vec![Outcome::Delivered, limited()],
            RecordWhen::NoneRateLimited,
        );
        assert!(round.result.is_ok(), "a 429 is not a failure line");
        assert_eq!(
            round.rate_limited,
            vec![RateLimited {
                token: "kept-token".into(),
                retry_after_s: 50
            }]
        );
        assert!(!marker.exists());
        // The alert marker records the delivered device's alert.
        let round = run_round_recording(
            &dir.0,
            vec![Outcome::Delivered, limited()],
            RecordWhen::AnyDelivered,
        );
        assert_eq!(round.rate_limited.len(), 1);
        assert!(marker.exists());
    }

    #[test]
    fn a_missing_nonce_stops_the_round_before_any_prune() {
        let dir = TempDir::new("nonce");
        let registration_path = dir.0.join("notifications.json");
        let text = r#"{"v":1,"devices":[{"token":"gone-token"}]}"#;
        std::fs::write(&registration_path, text).unwrap();
        let devices = [device("gone-token"), device("kept-token")];
        let mut first = true;
        let result = deliver(
            &loopback_settings(),
            &devices,
            |_, _| {
                if std::mem::take(&mut first) {
                    Ok(Outcome::Gone)
                } else {
                    Err(ring::error::Unspecified)
                }
            },
            Registration {
                path: &registration_path,
                prune: registration::remove_tokens,
            },
            RecordWhen::AnyDelivered,
            || unreachable!("nothing was delivered"),
        );
        assert!(matches!(result.result, Err(DeliveryError::Nonce)));
        assert_eq!(std::fs::read_to_string(&registration_path).unwrap(), text);
    }
}

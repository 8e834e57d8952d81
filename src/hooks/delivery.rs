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
//! deferred); a device the relay's rate limit turned away (429) or could
//! not be reached now (no answer, a 5xx: [`Outcome::Unavailable`]) is not
//! a failure but handed back to the caller, who puts the event back in
//! the spool (the outbox); every permanent failure becomes one
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
    /// The devices to try again later, in device order.
    pub deferred: Vec<Deferred>,
}

/// A device the round may reach later: its token and why it was not now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deferred {
    pub token: String,
    pub(crate) why: Deferral,
}

/// Why a device was deferred.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deferral {
    /// The relay's rate limit (429): its `Retry-After` in milliseconds
    /// (bounded).
    RateLimited(u64),
    /// No answer or a 5xx after every attempt: the last failure, and the
    /// 5xx's `Retry-After` in milliseconds (bounded) when it named one.
    Unavailable(String, Option<u64>),
}

/// When a round writes its state record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordWhen {
    /// After at least one delivery (the notify marker: the event's
    /// remaining devices are put back on their own).
    AnyDelivered,
    /// After at least one delivery with no device deferred (the Live
    /// Activity's last-state: the event is put back whole and compared
    /// with the state again).
    NoneDeferred,
}

/// What a round came to: the devices to put back, and the round's result.
#[derive(Debug)]
pub struct RoundResult {
    pub deferred: Vec<Deferred>,
    pub result: Result<(), DeliveryError>,
}

impl RoundResult {
    fn failed(error: DeliveryError) -> RoundResult {
        RoundResult {
            deferred: Vec::new(),
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
            Outcome::RateLimited(_, retry_after_ms) => self.deferred.push(Deferred {
                token: token.to_owned(),
                why: Deferral::RateLimited(retry_after_ms),
            }),
            Outcome::Unavailable(last, retry_after_ms) => self.deferred.push(Deferred {
                token: token.to_owned(),
                why: Deferral::Unavailable(last, retry_after_ms),
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
/// (and its pooled connection); and the pacing of every request they make,
/// shared with the Host's other workers through a locked file
/// ([`Relays::sync`]).
pub struct Relays {
    cached: Option<(RelayKey, Result<RelayClient, RelayConfigError>)>,
    pacer: Pacer,
    /// Each attempt's deadline.
    attempt: Duration,
    /// The Host's pacing file of the relay in use ([`pacing_file`]), once
    /// [`Relays::share`] named it.
    shared: Option<PathBuf>,
    /// A save of the shared pacing failed and was logged (once a run).
    save_failed: bool,
}

/// The Host's pacing of one relay, shared by every session's worker:
/// `pacing/<hash of the relay URL>.json` in the plugin state dir, with its
/// lock beside it (`….json.lock`). The relay limits one client address,
/// whichever session sends.
pub(crate) fn pacing_file(plugin_state_dir: &Path, relay_url: &str) -> PathBuf {
    plugin_state_dir
        .join("pacing")
        .join(format!("{}.json", pacing::token_key(relay_url)))
}

/// The longest a worker waits for another's turn at the shared pacing
/// (each holds it for a read and a write); past it, it paces on from what
/// it knows, which costs a 429 at worst.
const PACING_LOCK_WAIT: Duration = Duration::from_secs(2);

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
            shared: None,
            save_failed: false,
        }
    }

    /// Paces with every worker of the Host sending to `relay_url`, through
    /// [`pacing_file`] in `plugin_state_dir`, from the next
    /// [`Relays::sync`] on.
    pub(crate) fn share(&mut self, plugin_state_dir: &Path, relay_url: &str) {
        let path = pacing_file(plugin_state_dir, relay_url);
        if self.shared.as_ref() != Some(&path) {
            atomic_file::sweep_stale_temps(&path);
            self.pacer.share();
            self.shared = Some(path);
        }
    }

    /// Runs `f` on the Host's pacing: under the file's lock, this worker's
    /// changes since its last sync are replayed onto what the file holds,
    /// `f` plans (and reserves) on the result, and the file is written
    /// back; without a shared file, on this worker's own pacer. A failed
    /// save is one line in `log_dir`'s failure log per run.
    pub(crate) fn sync<R>(&mut self, log_dir: &Path, f: impl FnOnce(&mut Pacer) -> R) -> R {
        let Some(path) = self.shared.clone() else {
            return f(&mut self.pacer);
        };
        let _lock = lock_beside(&path);
        let now = crate::base::clock::unix_millis();
        let saved = crate::base::json::read_file(&path);
        self.pacer.rebase(saved.as_ref(), now);
        let result = f(&mut self.pacer);
        let text = self.pacer.to_json().to_json();
        let written = path
            .parent()
            .map_or(Ok(()), |dir| atomic_file::create_dir_all(dir, 0o700))
            .and_then(|()| atomic_file::write_unsynced(&path, text.as_bytes(), 0o600));
        match written {
            Ok(()) => self.pacer.mark_saved(),
            Err(e) if !self.save_failed => {
                self.save_failed = true;
                // Nowhere is left to report a failure to log.
                let _ = crate::hooks::failure_log::append(
                    log_dir,
                    &format!(
                        "hook-worker: cannot save {} (pacing goes on in memory): {e}",
                        path.display()
                    ),
                );
            }
            Err(_) => {}
        }
        result
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

/// Takes the lock file beside `path` (`<path>.lock`), waiting up to
/// [`PACING_LOCK_WAIT`]; `None` when it could not.
fn lock_beside(path: &Path) -> Option<std::fs::File> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    if let Some(dir) = path.parent() {
        atomic_file::create_dir_all(dir, 0o700).ok()?;
    }
    let file = crate::base::sys::open_append_private(Path::new(&name)).ok()?;
    let started = std::time::Instant::now();
    loop {
        match crate::base::sys::try_lock_exclusive(&file) {
            Ok(true) => return Some(file),
            Ok(false) if started.elapsed() < PACING_LOCK_WAIT => {
                std::thread::sleep(Duration::from_millis(1));
            }
            _ => return None,
        }
    }
}

/// Pushes `body` for `token`, counting each request in `pacer` at the
/// clock's time, and telling it how the relay answered: an outage holds
/// every push to the relay for its backoff, any answer ends it, a 410
/// forgets the token.
pub(crate) fn push_paced(
    relay: &RelayClient,
    pacer: &mut Pacer,
    token: &str,
    body: &str,
) -> Outcome {
    let outcome = relay.push_counted(body, || {
        pacer.record(token, crate::base::clock::unix_millis());
    });
    let now = crate::base::clock::unix_millis();
    match &outcome {
        Outcome::Unavailable(_, retry_after_ms) => {
            pacer.unavailable(now, *retry_after_ms);
        }
        Outcome::Gone => {
            pacer.answered();
            pacer.forget_token(token);
        }
        _ => pacer.answered(),
    }
    outcome
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
        deferred,
    } = tally;
    if !gone.is_empty()
        && let Err(e) = registration::rewrite(registration.path, |f| (registration.prune)(f, &gone))
    {
        failures.push(e.to_string());
    }
    let record_now = match record_when {
        RecordWhen::AnyDelivered => delivered > 0,
        RecordWhen::NoneDeferred => delivered > 0 && deferred.is_empty(),
    };
    if record_now {
        let StateRecord { path, value } = record();
        if let Err(e) = write_state_file(&path, &value) {
            failures.push(format!("cannot write {}: {e}", path.display()));
        }
    }
    RoundResult {
        deferred,
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
            Outcome::RateLimited("relay answered 429".into(), 45_000),
        );
        tally.count(
            "77777777aaaa",
            Outcome::Unavailable("relay answered 503: ".into(), Some(2_500)),
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
                deferred: vec![
                    Deferred {
                        token: "ffffffff6666".into(),
                        why: Deferral::RateLimited(45_000),
                    },
                    Deferred {
                        token: "77777777aaaa".into(),
                        why: Deferral::Unavailable("relay answered 503: ".into(), Some(2_500)),
                    }
                ],
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
        let limited = || Outcome::RateLimited("relay answered 429".into(), 50_000);
        let marker = dir.0.join("state/marker.json");
        // The Live Activity's last-state waits for every device.
        let round = run_round_recording(
            &dir.0,
            vec![Outcome::Delivered, limited()],
            RecordWhen::NoneDeferred,
        );
        assert!(round.result.is_ok(), "a 429 is not a failure line");
        assert_eq!(
            round.deferred,
            vec![Deferred {
                token: "kept-token".into(),
                why: Deferral::RateLimited(50_000),
            }]
        );
        assert!(!marker.exists());
        // The alert marker records the delivered device's alert.
        let round = run_round_recording(
            &dir.0,
            vec![Outcome::Delivered, limited()],
            RecordWhen::AnyDelivered,
        );
        assert_eq!(round.deferred.len(), 1);
        assert!(marker.exists());
    }

    #[test]
    fn workers_share_the_hosts_pacing_and_a_blocked_save_is_one_line() {
        let dir = TempDir::new("shared-pacing");
        let limits = Limits::relay(60_000);
        let relay = "https://relay.example";
        let (mut a, mut b) = (
            Relays::new(limits, Duration::from_secs(1)),
            Relays::new(limits, Duration::from_secs(1)),
        );
        a.share(&dir.0, relay);
        b.share(&dir.0, relay);
        let now = crate::base::clock::unix_millis();
        // A spends the token's minute; B, another session's worker, sees it.
        a.sync(&dir.0, |p| {
            (0..60).for_each(|_| p.record("aaaa0000aaaa0000", now))
        });
        let ask = pacing::Ask {
            class: pacing::Class::Alert,
            tokens: vec!["aaaa0000aaaa0000".into()],
        };
        let slot = b.sync(&dir.0, |p| p.plan(std::slice::from_ref(&ask), now));
        assert!(matches!(slot[0], pacing::Slot::At(_)), "{slot:?}");
        let text = std::fs::read_to_string(pacing_file(&dir.0, relay)).unwrap();
        assert!(!text.contains("aaaa0000aaaa0000"), "no token at rest");
        // A directory where the file should be: pacing goes on in memory,
        // and the failure is one line however many saves fail.
        let other = "https://other.example";
        std::fs::create_dir_all(pacing_file(&dir.0, other)).unwrap();
        let mut c = Relays::new(limits, Duration::from_secs(1));
        c.share(&dir.0, other);
        for _ in 0..5 {
            c.sync(&dir.0, |p| p.record("bbbb0000bbbb0000", now));
        }
        let lines = crate::hooks::failure_log::read_last(&dir.0, usize::MAX);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].message.starts_with("hook-worker: cannot save "));
        assert_eq!(
            c.sync(&dir.0, |p| p.plan(
                &[pacing::Ask {
                    class: pacing::Class::Alert,
                    tokens: vec!["bbbb0000bbbb0000".into()],
                }],
                now
            )),
            vec![pacing::Slot::Now],
            "5 of 60 in memory"
        );
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

//! The pacing of relay requests: how many pushes the worker may send now,
//! and when the rest may go, within the Push Relay's published limits.
//!
//! The relay allows 60 requests a minute per device token and 120 per
//! client address (rejected requests count too), in fixed one-minute
//! windows, and answers the rest `429 {"error":"rate_limited"}` with a
//! `Retry-After`. A burst (70 agents blocking at once for one phone) must
//! be spread over the minutes rather than rejected, and a queue of alerts
//! must never hold back the Live Activity, whose updates share the
//! per-address budget. This module decides; the worker (`worker.rs`)
//! performs: [`Pacer::plan`] takes the pacer's state, the asks of one batch
//! and the clock, and answers for each ask "now" or "at this time"; the
//! worker sends the first kind, puts the others back in the spool due at
//! their time, and tells the pacer every request it made and every 429.
//!
//! Invariants:
//! - Sliding windows of [`Limits::window_ms`] (the relay's minute plus a
//!   margin for the request's travel) never hold more than the relay's
//!   limits: any fixed window of the relay's lies inside one of them, so
//!   paced requests are never rejected by a relay this Host alone talks
//!   to. The relay counts the Host's address, whichever herdr session
//!   sends, and its window outlives a worker that exits a moment after its
//!   last event, so there is one pacer per Host and relay: a small file
//!   (`pacing/<hash of the relay URL>.json` in the plugin state dir,
//!   `delivery::Relays::sync`) that every session's worker reads, changes
//!   and writes back under its lock. A worker keeps a journal of its
//!   changes since it last saved ([`Pacer::rebase`] replays it onto what
//!   the others saved meanwhile) and plans and reserves its next request
//!   in one turn ([`Pacer::reserve`]), so no two workers plan into one
//!   slot.
//! - Live Activity asks are planned before alerts, and alerts leave
//!   [`ACTIVITY_RESERVE`] requests of the per-address budget to them.
//! - The asks of one token are planned in the order given (never an
//!   earlier time for a later ask), so alerts to one device keep the order
//!   of their events.
//! - A 429 blocks its token until its `Retry-After`, and nothing else: one
//!   phone's backlog never holds another phone's alert, and a Live
//!   Activity 429 never holds an alert (nor the reverse). Should the relay
//!   have counted the address, each other token costs one 429 at most.
//! - An outage (no answer, a 5xx after every attempt: [`Pacer::unavailable`])
//!   holds every push to the relay until its backoff ends: 1, 2, 4, 8,
//!   then every [`BACKOFF_MAX_SECONDS`] relay seconds, or the 5xx's
//!   `Retry-After` (at most two minutes); the first answer ends it. So a
//!   relay that comes back is tried again within 10 s, by one push, and
//!   the held entries follow.
//! - The state is bounded: requests older than a window and blocks that
//!   have ended are forgotten; a token the relay answered 410 for is
//!   forgotten at once ([`Pacer::forget_token`]).
//! - Tokens are kept by a hash ([`token_key`]), never as they are: the
//!   saved pacing holds no push token.
//!
//! Tests shrink the relay's minute (`HEELER_RELAY_MINUTE_MS`, read once by
//! the worker into [`Limits`]), so that minutes of pacing take seconds;
//! every duration here is in that minute's units.

use std::collections::{HashMap, VecDeque};

use crate::base::json::{Object, Value};

/// The relay's minute in milliseconds.
pub(crate) const RELAY_MINUTE_MS: u64 = 60_000;
/// The relay's per-token limit per minute (`RATE_LIMIT_TOKEN_PER_MIN`).
pub(crate) const PER_TOKEN_PER_MINUTE: usize = 60;
/// The relay's per-address limit per minute (`RATE_LIMIT_IP_PER_MIN`).
pub(crate) const PER_ADDRESS_PER_MINUTE: usize = 120;
/// Requests of the per-address budget alerts leave to Live Activity.
pub(crate) const ACTIVITY_RESERVE: usize = 10;
/// Relay seconds added to the window, for a request's travel time.
pub(crate) const MARGIN_SECONDS: u64 = 2;
/// The least margin in milliseconds, whatever the minute: a request's
/// travel (a process start, a loaded machine) does not shrink with a
/// test's shorter minute. The relay's own minute's margin is above it.
pub(crate) const MARGIN_FLOOR_MS: u64 = 250;
/// The longest backoff after an outage, in relay seconds: a relay that
/// comes back is tried again within this.
pub(crate) const BACKOFF_MAX_SECONDS: u64 = 10;
/// The environment variable that shrinks the relay's minute (tests only;
/// milliseconds, 1 to 60000).
pub const MINUTE_ENV: &str = "HEELER_RELAY_MINUTE_MS";

/// The limits the worker paces to, on one time scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The relay's minute in milliseconds (60000 unless a test shrinks it).
    pub(crate) minute_ms: u64,
    /// The sliding window counted: the minute plus [`MARGIN_SECONDS`] (at
    /// least [`MARGIN_FLOOR_MS`]).
    pub(crate) window_ms: u64,
    pub per_token: usize,
    pub(crate) per_relay: usize,
    pub(crate) activity_reserve: usize,
}

impl Limits {
    /// The relay's published limits with its minute `minute_ms` long
    /// (clamped to 1..=60000).
    pub fn relay(minute_ms: u64) -> Limits {
        let minute_ms = minute_ms.clamp(1, RELAY_MINUTE_MS);
        Limits {
            minute_ms,
            window_ms: minute_ms
                + Limits::seconds_of(minute_ms, MARGIN_SECONDS).max(MARGIN_FLOOR_MS),
            per_token: PER_TOKEN_PER_MINUTE,
            per_relay: PER_ADDRESS_PER_MINUTE,
            activity_reserve: ACTIVITY_RESERVE,
        }
    }

    /// The limits for the value of [`MINUTE_ENV`]: unset or unusable means
    /// the relay's real minute.
    pub fn from_env(value: Option<&std::ffi::OsStr>) -> Limits {
        let minute = value
            .and_then(|v| v.to_str())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|ms| *ms >= 1)
            .unwrap_or(RELAY_MINUTE_MS);
        Limits::relay(minute)
    }

    fn seconds_of(minute_ms: u64, seconds: u64) -> u64 {
        seconds.saturating_mul(minute_ms) / 60
    }

    /// `seconds` relay seconds in milliseconds of this scale.
    pub(crate) fn seconds_ms(&self, seconds: u64) -> u64 {
        Limits::seconds_of(self.minute_ms, seconds)
    }

    /// `ms` relay milliseconds (a `Retry-After`) on this scale.
    pub(crate) fn scaled_ms(&self, ms: u64) -> u64 {
        ms.saturating_mul(self.minute_ms) / RELAY_MINUTE_MS
    }

    /// The backoff after the `failures`th outage in a row: 1, 2, 4, 8,
    /// then [`BACKOFF_MAX_SECONDS`] relay seconds.
    pub(crate) fn backoff_ms(&self, failures: u32) -> u64 {
        let seconds = 1u64 << failures.saturating_sub(1).min(4);
        self.seconds_ms(seconds.min(BACKOFF_MAX_SECONDS))
    }

    /// How many requests an ask of `class` may find in the relay's window.
    fn relay_cap(&self, class: Class) -> usize {
        match class {
            Class::Activity => self.per_relay,
            Class::Alert => self.per_relay.saturating_sub(self.activity_reserve),
        }
    }
}

/// What a push carries: Live Activity updates go first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Activity,
    Alert,
}

/// One event's pushes: one request per token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ask {
    pub class: Class,
    pub tokens: Vec<String>,
}

/// When an ask may be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    Now,
    /// Not before this time (Unix milliseconds).
    At(u64),
}

/// The requests this process sent in the last window, the blocks the
/// relay's 429s asked for, and the outage backoff. Tokens are kept by
/// their [`token_key`].
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    limits: Limits,
    /// Send times of every request, sorted.
    relay: VecDeque<u64>,
    /// Send times per token key, sorted.
    tokens: HashMap<String, VecDeque<u64>>,
    /// A token key's 429 block ends.
    token_blocked: HashMap<String, u64>,
    /// The outage's backoff ends: nothing is sent to the relay before.
    down_until: u64,
    /// Outages in a row (no answer since).
    failures: u32,
    /// The changes since the pacer was last saved to the Host's shared
    /// file (`None`: not shared), replayed onto what other workers saved
    /// meanwhile ([`Pacer::rebase`]).
    journal: Option<Vec<Change>>,
    /// Token keys whose next request was counted ahead, with the time
    /// counted ([`Pacer::reserve`]).
    reserved: Vec<(String, u64)>,
}

/// One change to a pacer, as [`Pacer::rebase`] replays it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    Record(String, u64),
    /// A reserved request counted at `.1` was sent at `.2`.
    Move(String, u64, u64),
    RateLimited(String, u64, u64),
    Unavailable(u64, Option<u64>),
    Answered,
    Forget(String),
}

/// How the pacing keeps a push token: the first 16 bytes of its SHA-256,
/// in hex. A push token at rest is one more copy to guard; its hash paces
/// as well.
pub(crate) fn token_key(token: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    digest.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn insert_sorted(times: &mut VecDeque<u64>, at: u64) {
    let index = times.partition_point(|t| *t <= at);
    times.insert(index, at);
}

/// The earliest time `k` more requests fit under `cap` in a sliding
/// `window` holding `times` (sorted, none later than the answer).
fn fits_at(times: &VecDeque<u64>, k: usize, cap: usize, window: u64, now: u64) -> u64 {
    let room = cap.saturating_sub(k.min(cap));
    let n = times.len();
    if n <= room {
        return now;
    }
    times
        .get(n - room - 1)
        .map_or(now, |t| t.saturating_add(window))
        .max(now)
}

impl Pacer {
    pub fn new(limits: Limits) -> Pacer {
        Pacer {
            limits,
            relay: VecDeque::new(),
            tokens: HashMap::new(),
            token_blocked: HashMap::new(),
            down_until: 0,
            failures: 0,
            journal: None,
            reserved: Vec::new(),
        }
    }

    /// Keeps a journal of changes from now on: the pacer is shared with
    /// other workers through a file ([`Pacer::rebase`]).
    pub fn share(&mut self) {
        self.journal.get_or_insert_with(Vec::new);
    }

    fn note(&mut self, change: Change) {
        if let Some(journal) = &mut self.journal {
            journal.push(change);
        }
    }

    /// This pacer's changes since its last save, replayed onto `saved`
    /// (what the Host's workers saved last, read at `now`): the pacer to
    /// plan with and save next. Its journal starts empty again.
    pub fn rebase(&mut self, saved: Option<&Value>, now: u64) {
        let journal = self.journal.take().unwrap_or_default();
        let mut base = match saved {
            Some(saved) => Pacer::restore(self.limits, saved, now),
            None => {
                let mut same = self.clone();
                same.journal = None;
                same
            }
        };
        if saved.is_some() {
            for change in journal {
                match change {
                    Change::Record(key, at) => base.record_key(key, at),
                    Change::Move(key, from, to) => base.move_key(key, from, to),
                    Change::RateLimited(key, at, wait) => base.block_key(key, at, wait),
                    Change::Unavailable(at, after) => {
                        base.unavailable(at, after);
                    }
                    Change::Answered => base.answered(),
                    Change::Forget(key) => base.forget_key(&key),
                }
            }
        }
        base.reserved = std::mem::take(&mut self.reserved);
        base.journal = Some(Vec::new());
        *self = base;
    }

    /// Counts the next request to `token` at `now` ahead of sending it, so
    /// that no other worker plans into its slot; the request's own count
    /// ([`Pacer::record`]) is then skipped once.
    pub fn reserve(&mut self, token: &str, now: u64) {
        let key = token_key(token);
        self.record_key(key.clone(), now);
        self.reserved.push((key, now));
    }

    /// The pacer was saved: its journal starts again.
    pub fn mark_saved(&mut self) {
        if let Some(journal) = &mut self.journal {
            journal.clear();
        }
    }

    /// Drops reservations whose request was not made (the round sent
    /// nothing): they stay counted, which costs a slot, never a 429.
    pub fn clear_reservations(&mut self) {
        self.reserved.clear();
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Forgets requests that left the window and blocks that ended.
    fn forget(&mut self, now: u64) {
        self.token_blocked.retain(|_, until| *until > now);
        // The window is `(now - window, now]`: nothing has left it before
        // a whole window has passed.
        let Some(horizon) = now.checked_sub(self.limits.window_ms) else {
            return;
        };
        let old = |times: &mut VecDeque<u64>| {
            while times.front().is_some_and(|t| *t <= horizon) {
                times.pop_front();
            }
        };
        old(&mut self.relay);
        for times in self.tokens.values_mut() {
            old(times);
        }
        self.tokens.retain(|_, times| !times.is_empty());
    }

    /// Counts one request to `token` sent at `now`; a reserved one is
    /// moved from its reserved time to `now`, when it really goes (the
    /// relay counts its arrival, so the count stays as late as the send).
    pub fn record(&mut self, token: &str, now: u64) {
        let key = token_key(token);
        if let Some(at) = self.reserved.iter().position(|(k, _)| *k == key) {
            let (key, from) = self.reserved.swap_remove(at);
            self.move_key(key, from, now);
            return;
        }
        self.record_key(key, now);
    }

    fn move_key(&mut self, key: String, from: u64, to: u64) {
        let unrecord = |times: &mut VecDeque<u64>| {
            if let Some(at) = times.iter().position(|t| *t == from) {
                times.remove(at);
            }
        };
        unrecord(&mut self.relay);
        if let Some(times) = self.tokens.get_mut(&key) {
            unrecord(times);
        }
        self.forget(to);
        insert_sorted(&mut self.relay, to);
        insert_sorted(self.tokens.entry(key.clone()).or_default(), to);
        self.note(Change::Move(key, from, to));
    }

    fn record_key(&mut self, key: String, now: u64) {
        self.forget(now);
        insert_sorted(&mut self.relay, now);
        insert_sorted(self.tokens.entry(key.clone()).or_default(), now);
        self.note(Change::Record(key, now));
    }

    /// A 429 for a push to `token` at `now`, asking to wait
    /// `retry_after_ms` (on this pacer's scale): that token waits, no other.
    pub fn rate_limited(&mut self, token: &str, now: u64, retry_after_ms: u64) {
        self.block_key(token_key(token), now, retry_after_ms);
    }

    fn block_key(&mut self, key: String, now: u64, retry_after_ms: u64) {
        self.forget(now);
        let until = now.saturating_add(retry_after_ms);
        let blocked = self.token_blocked.entry(key.clone()).or_default();
        *blocked = (*blocked).max(until);
        self.note(Change::RateLimited(key, now, retry_after_ms));
    }

    /// A push at `now` that every attempt failed to get an answer for
    /// (or got a 5xx): nothing goes to the relay until the backoff ends, or
    /// the 5xx's `Retry-After` (relay milliseconds, bounded) when it named
    /// one. Returns the end.
    pub fn unavailable(&mut self, now: u64, retry_after_ms: Option<u64>) -> u64 {
        self.failures = self.failures.saturating_add(1);
        let wait = retry_after_ms.map_or_else(
            || self.limits.backoff_ms(self.failures),
            |ms| self.limits.scaled_ms(ms),
        );
        self.down_until = self.down_until.max(now.saturating_add(wait));
        self.note(Change::Unavailable(now, retry_after_ms));
        self.down_until
    }

    /// The relay answered: the outage, if any, is over.
    pub fn answered(&mut self) {
        self.failures = 0;
        self.down_until = 0;
        self.note(Change::Answered);
    }

    /// Forgets `token` (the relay answered 410: it is pruned).
    pub fn forget_token(&mut self, token: &str) {
        self.forget_key(&token_key(token));
    }

    fn forget_key(&mut self, key: &str) {
        self.tokens.remove(key);
        self.token_blocked.remove(key);
        self.note(Change::Forget(key.to_owned()));
    }

    /// Outages in a row (0: the relay answered last).
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// When the outage's backoff ends (0: no outage).
    pub fn down_until(&self) -> u64 {
        self.down_until
    }

    /// The earliest time an ask may be sent, from the requests recorded
    /// (per token including planned ones; for the relay only sent ones).
    fn ready_at(&self, ask: &Ask, now: u64) -> u64 {
        if ask.tokens.is_empty() {
            // Nothing to send (a re-arm, no device): never held back.
            return now;
        }
        let limits = &self.limits;
        let mut at = now.max(self.down_until);
        at = at.max(fits_at(
            &self.relay,
            ask.tokens.len(),
            limits.relay_cap(ask.class),
            limits.window_ms,
            now,
        ));
        for token in &ask.tokens {
            let repeats = ask.tokens.iter().filter(|t| *t == token).count();
            let key = token_key(token);
            if let Some(until) = self.token_blocked.get(&key) {
                at = at.max(*until);
            }
            if let Some(times) = self.tokens.get(&key) {
                at = at.max(fits_at(
                    times,
                    repeats,
                    limits.per_token,
                    limits.window_ms,
                    now,
                ));
            }
        }
        at
    }

    /// The plan of one batch: for each ask (in the order given) whether it
    /// may be sent now or from when. Live Activity asks are planned first;
    /// the asks sent now are counted as sent at `now`, and each later ask
    /// holds its token's slot, so the next ask of that token comes after.
    pub fn plan(&self, asks: &[Ask], now: u64) -> Vec<Slot> {
        let mut sim = self.clone();
        sim.forget(now);
        let mut slots = vec![Slot::Now; asks.len()];
        let mut floor: HashMap<&str, u64> = HashMap::new();
        let order = (0..asks.len())
            .filter(|i| asks[*i].class == Class::Activity)
            .chain((0..asks.len()).filter(|i| asks[*i].class == Class::Alert));
        for index in order {
            let ask = &asks[index];
            let at = ask
                .tokens
                .iter()
                .filter_map(|t| floor.get(t.as_str()))
                .fold(sim.ready_at(ask, now), |at, f| at.max(*f));
            if at <= now {
                for token in &ask.tokens {
                    sim.record(token, now);
                }
            } else {
                slots[index] = Slot::At(at);
                for token in &ask.tokens {
                    insert_sorted(sim.tokens.entry(token_key(token)).or_default(), at);
                    floor.insert(token, at);
                }
            }
        }
        slots
    }
}

/// The most request times a saved pacer may hold: a window's requests at
/// the relay's per-address limit four times over (rejected requests count
/// too). Anything beyond is a damaged file, and the times read last go.
const SAVED_TIMES_MAX: usize = 4 * PER_ADDRESS_PER_MINUTE;

impl Pacer {
    /// The pacer as the workers save it (the Host's pacing file), so that the
    /// next worker of the session paces on from it: the relay's windows
    /// outlive a worker that lingers a moment after its last event.
    /// `{"tokens":{key:[sent ms…]},"blocked":{key:until ms},
    /// "down_until":ms,"failures":n}`, each key a [`token_key`]; the
    /// relay's list is the tokens' lists merged.
    pub(crate) fn to_json(&self) -> Value {
        let times = |list: &VecDeque<u64>| -> Value {
            Value::Array(list.iter().map(|t| Value::from(*t)).collect())
        };
        let mut tokens: Vec<(&String, &VecDeque<u64>)> = self.tokens.iter().collect();
        tokens.sort();
        let mut blocked: Vec<(&String, &u64)> = self.token_blocked.iter().collect();
        blocked.sort();
        Value::Object(
            Object::new()
                .with(
                    "tokens",
                    tokens
                        .into_iter()
                        .fold(Object::new(), |o, (token, list)| o.with(token, times(list))),
                )
                .with(
                    "blocked",
                    blocked
                        .into_iter()
                        .fold(Object::new(), |o, (token, until)| o.with(token, *until)),
                )
                .with("down_until", self.down_until)
                .with("failures", u64::from(self.failures)),
        )
    }

    /// A pacer on `limits` from what [`Pacer::to_json`] saved, as of `now`
    /// (pure). What the window has left and blocks that ended are
    /// forgotten; a time more than a window ahead (a clock set back) is
    /// taken as `now`, and no block outlasts a window from `now` (the
    /// relay's `Retry-After` is at most a minute); keys that are not a
    /// [`token_key`] (a file of an older version, which kept tokens) are
    /// dropped; a damaged or foreign
    /// value gives what of it is well-formed, at most [`SAVED_TIMES_MAX`]
    /// times.
    pub(crate) fn restore(limits: Limits, saved: &Value, now: u64) -> Pacer {
        let mut pacer = Pacer::new(limits);
        let ms = |v: &Value| v.as_i64().and_then(|n| u64::try_from(n).ok());
        let latest = now.saturating_add(limits.window_ms);
        let mut kept = 0;
        let tokens = saved.get("tokens").and_then(Value::as_object);
        for (token, list) in tokens.into_iter().flat_map(Object::iter) {
            if !is_token_key(token) {
                continue;
            }
            for at in list.as_array().unwrap_or_default().iter().filter_map(ms) {
                if kept == SAVED_TIMES_MAX {
                    break;
                }
                let at = if at > latest { now } else { at };
                insert_sorted(&mut pacer.relay, at);
                insert_sorted(pacer.tokens.entry(token.to_owned()).or_default(), at);
                kept += 1;
            }
        }
        let blocked = saved.get("blocked").and_then(Value::as_object);
        for (token, until) in blocked
            .into_iter()
            .flat_map(Object::iter)
            .filter(|(token, _)| is_token_key(token))
            .take(SAVED_TIMES_MAX)
        {
            if let Some(until) = ms(until) {
                pacer
                    .token_blocked
                    .insert(token.to_owned(), until.min(latest));
            }
        }
        pacer.down_until = saved
            .get("down_until")
            .and_then(ms)
            .unwrap_or(0)
            .min(latest);
        pacer.failures = saved
            .get("failures")
            .and_then(ms)
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
        pacer.forget(now);
        pacer
    }
}

/// Whether a saved key is a [`token_key`]: 32 lowercase hex digits.
fn is_token_key(key: &str) -> bool {
    key.len() == 32 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: u64 = 60_000;

    fn alert(token: &str) -> Ask {
        Ask {
            class: Class::Alert,
            tokens: vec![token.to_owned()],
        }
    }

    fn activity(token: &str) -> Ask {
        Ask {
            class: Class::Activity,
            tokens: vec![token.to_owned()],
        }
    }

    fn pacer() -> Pacer {
        Pacer::new(Limits::relay(MINUTE))
    }

    #[test]
    fn the_limits_are_the_relays_on_the_given_minute() {
        let real = Limits::from_env(None);
        assert_eq!(real, Limits::relay(60_000));
        assert_eq!(real.window_ms, 62_000);
        assert_eq!((real.per_token, real.per_relay), (60, 120));
        assert_eq!(real.seconds_ms(45), 45_000);
        let scaled = Limits::from_env(Some(std::ffi::OsStr::new("3000")));
        // A 3 s minute's 2 "seconds" (100 ms) are below the floor.
        assert_eq!(scaled.window_ms, 3_250);
        assert_eq!(scaled.seconds_ms(40), 2_000);
        for unusable in ["", "0", "x", "-1"] {
            assert_eq!(Limits::from_env(Some(std::ffi::OsStr::new(unusable))), real);
        }
        assert_eq!(Limits::from_env(Some(std::ffi::OsStr::new("999999"))), real);
    }

    #[test]
    fn seventy_alerts_to_one_device_send_sixty_now_and_ten_a_window_later() {
        let asks: Vec<Ask> = (0..70).map(|_| alert("t1")).collect();
        let slots = pacer().plan(&asks, 1_000);
        assert!(slots[..60].iter().all(|s| *s == Slot::Now));
        assert!(slots[60..].iter().all(|s| *s == Slot::At(1_000 + 62_000)));
        // 200: 60 now, then 60 per window after.
        let asks: Vec<Ask> = (0..200).map(|_| alert("t1")).collect();
        let slots = pacer().plan(&asks, 0);
        let at = |i: usize| slots[i];
        assert_eq!(at(59), Slot::Now);
        assert_eq!(at(60), Slot::At(62_000));
        assert_eq!(at(119), Slot::At(62_000));
        assert_eq!(at(120), Slot::At(124_000));
        assert_eq!(at(199), Slot::At(186_000));
    }

    #[test]
    fn sent_requests_hold_their_slot_for_a_window() {
        let mut pacer = pacer();
        for i in 0..60 {
            pacer.record("t1", 1_000 + i * 100);
        }
        assert_eq!(pacer.plan(&[alert("t1")], 10_000), vec![Slot::At(63_000)]);
        assert_eq!(pacer.plan(&[alert("t1")], 63_000), vec![Slot::Now]);
        // Another device is not held back by this one's budget.
        assert_eq!(pacer.plan(&[alert("t2")], 10_000), vec![Slot::Now]);
        // The relay's window: 110 alerts leave 10 for Live Activity, which
        // goes first and so takes one more of the window's requests.
        for i in 0..50 {
            pacer.record("t2", 2_000 + i);
        }
        assert_eq!(pacer.plan(&[alert("t3")], 10_000), vec![Slot::At(63_000)]);
        assert_eq!(
            pacer.plan(&[alert("t3"), activity("live")], 10_000),
            vec![Slot::At(63_100), Slot::Now]
        );
    }

    #[test]
    fn live_activity_goes_first_whatever_the_queue_of_alerts() {
        let mut asks: Vec<Ask> = (0..115).map(|i| alert(["t1", "t2"][i % 2])).collect();
        asks.push(activity("live"));
        let slots = pacer().plan(&asks, 0);
        assert_eq!(slots[115], Slot::Now);
        let now = slots.iter().filter(|s| **s == Slot::Now).count();
        // Alerts stop at 110 requests in the window, the update included.
        assert_eq!(now, 110, "109 alerts and the update");
    }

    #[test]
    fn a_429_blocks_its_token_only_until_its_retry_after() {
        let mut pacer = pacer();
        pacer.rate_limited("t1", 5_000, 45_000);
        assert_eq!(pacer.plan(&[alert("t1")], 6_000), vec![Slot::At(50_000)]);
        // Another phone's alert and the Live Activity are not held.
        assert_eq!(pacer.plan(&[alert("t2")], 6_000), vec![Slot::Now]);
        assert_eq!(pacer.plan(&[activity("live")], 6_000), vec![Slot::Now]);
        assert_eq!(pacer.plan(&[alert("t1")], 50_000), vec![Slot::Now]);
        // A Live Activity 429 holds no alert.
        pacer.rate_limited("live", 60_000, 40_000);
        assert_eq!(
            pacer.plan(&[activity("live")], 61_000),
            vec![Slot::At(100_000)]
        );
        assert_eq!(pacer.plan(&[alert("t9")], 61_000), vec![Slot::Now]);
        // Ended blocks are forgotten.
        pacer.forget(100_000);
        assert!(pacer.token_blocked.is_empty());
    }

    #[test]
    fn an_outage_holds_the_relay_for_a_backoff_that_grows_to_ten_seconds() {
        let mut pacer = pacer();
        // 1, 2, 4, 8, 10, 10 s: each from the failure's time.
        let mut now = 1_000_000;
        for wait in [1_000, 2_000, 4_000, 8_000, 10_000, 10_000] {
            assert_eq!(pacer.unavailable(now, None), now + wait);
            assert_eq!(pacer.plan(&[alert("t1")], now), vec![Slot::At(now + wait)]);
            assert_eq!(
                pacer.plan(&[activity("live")], now + wait - 1),
                vec![Slot::At(now + wait)]
            );
            now += wait;
        }
        assert_eq!(pacer.plan(&[alert("t1")], now), vec![Slot::Now]);
        // A 5xx's Retry-After is the wait instead.
        assert_eq!(pacer.unavailable(now, Some(30_000)), now + 30_000);
        // Any answer ends the outage and its count.
        pacer.answered();
        assert_eq!(pacer.plan(&[alert("t1")], now + 1), vec![Slot::Now]);
        assert_eq!(pacer.unavailable(now, None), now + 1_000);
        // On a test's shorter minute the backoff shrinks with it.
        let mut short = Pacer::new(Limits::relay(3_000));
        assert_eq!(short.unavailable(0, None), 50);
        assert_eq!(short.unavailable(0, Some(40_000)), 2_000);
    }

    #[test]
    fn tokens_are_kept_by_hash_and_a_pruned_one_is_forgotten_at_once() {
        let token = "aaaa0000aaaa0000";
        // `printf aaaa0000aaaa0000 | sha256sum`, first 16 bytes.
        assert_eq!(token_key(token), "d58b2e55e31ad4e493a79efdca498a54");
        let mut pacer = pacer();
        pacer.record(token, 1_000);
        pacer.rate_limited(token, 1_000, 40_000);
        pacer.record("bbbb0000bbbb0000", 1_000);
        let saved = pacer.to_json().to_json();
        assert!(!saved.contains(token), "{saved}");
        assert!(saved.contains(&token_key(token)), "{saved}");
        pacer.forget_token(token);
        let saved = pacer.to_json().to_json();
        assert!(!saved.contains(&token_key(token)), "{saved}");
        assert_eq!(pacer.plan(&[alert(token)], 1_001), vec![Slot::Now]);
        // An older file's raw tokens are not restored.
        let old =
            crate::base::json::parse(&format!(r#"{{"tokens":{{"{token}":[1000]}}}}"#)).unwrap();
        assert!(
            Pacer::restore(pacer.limits(), &old, 1_001)
                .tokens
                .is_empty()
        );
    }

    /// As `Relays::sync` does with the Host's file: `pacer`'s changes
    /// replayed onto `file`, then saved to it.
    fn sync(pacer: &mut Pacer, file: &mut Option<Value>, now: u64) {
        pacer.rebase(file.as_ref(), now);
        *file = Some(crate::base::json::parse(&pacer.to_json().to_json()).unwrap());
        pacer.mark_saved();
    }

    #[test]
    fn workers_sharing_a_file_pace_as_one_pacer() {
        // Random records, 429s, outages and answers by three workers, each
        // syncing at random; the oracle is one pacer that saw them all.
        // After every sync the syncing worker plans as the oracle does.
        for seed in 1..=25u64 {
            let limits = Limits::relay(MINUTE);
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let mut oracle = Pacer::new(limits);
            let mut workers: Vec<Pacer> = (0..3)
                .map(|_| {
                    let mut p = Pacer::new(limits);
                    p.share();
                    p
                })
                .collect();
            let mut file: Option<Value> = None;
            let mut now = 1_000_000;
            for worker in &mut workers {
                sync(worker, &mut file, now);
            }
            for step in 0..200 {
                now += rng.below(500);
                let w = rng.below(3) as usize;
                let token = ["t1", "t2", "t3"][rng.below(3) as usize];
                // A worker acts on a stale view half the time: its change
                // is replayed onto what the others saved meanwhile.
                if rng.below(2) == 0 {
                    sync(&mut workers[w], &mut file, now);
                }
                match rng.below(20) {
                    0 => {
                        workers[w].rate_limited(token, now, 30_000);
                        oracle.rate_limited(token, now, 30_000);
                    }
                    1 => {
                        workers[w].unavailable(now, None);
                        oracle.unavailable(now, None);
                    }
                    2 => {
                        workers[w].answered();
                        oracle.answered();
                    }
                    _ => {
                        workers[w].reserve(token, now);
                        oracle.record(token, now);
                        // The request's own count is the reservation.
                        workers[w].record(token, now);
                    }
                }
                sync(&mut workers[w], &mut file, now);
                let asks = [alert("t1"), alert("t2"), alert("t3"), activity("t3")];
                assert_eq!(
                    workers[w].plan(&asks, now),
                    oracle.plan(&asks, now),
                    "seed {seed} step {step}"
                );
            }
        }
    }

    #[test]
    fn an_ask_without_devices_is_never_held_back() {
        let mut pacer = pacer();
        pacer.rate_limited("live", 0, 50_000);
        let nothing = Ask {
            class: Class::Alert,
            tokens: Vec::new(),
        };
        assert_eq!(pacer.plan(&[nothing], 1), vec![Slot::Now]);
    }

    #[test]
    fn an_event_for_two_devices_waits_for_both() {
        let mut pacer = pacer();
        for i in 0..60 {
            pacer.record("t2", i);
        }
        let both = Ask {
            class: Class::Alert,
            tokens: vec!["t1".into(), "t2".into()],
        };
        assert_eq!(pacer.plan(&[both], 100), vec![Slot::At(62_000)]);
    }

    // The unit tests' one seeded source, so a failing seed replays.
    use crate::base::test_rng::Rng;

    /// The largest number of `times` (sorted) in any window
    /// `(t - window, t]`: the relay's fixed windows lie inside these.
    fn busiest(times: &[u64], window: u64) -> usize {
        let mut best = 0;
        let mut start = 0;
        for end in 0..times.len() {
            while times[end] - times[start] >= window {
                start += 1;
            }
            best = best.max(end + 1 - start);
        }
        best
    }

    #[test]
    fn random_bursts_are_all_sent_in_order_within_every_window() {
        random_bursts(false);
    }

    /// The same bursts served by workers that exit and start again at
    /// random rounds, each new one restoring what the last one saved.
    #[test]
    fn random_bursts_across_worker_restarts_stay_within_every_window() {
        random_bursts(true);
    }

    /// As a new worker does: what `pacer` saved, as text, restored at `now`.
    fn restarted(pacer: &Pacer, now: u64) -> Pacer {
        let saved = crate::base::json::parse(&pacer.to_json().to_json()).unwrap();
        Pacer::restore(pacer.limits(), &saved, now)
    }

    fn random_bursts(restarts: bool) {
        for seed in 1..=40u64 {
            let limits = Limits::relay(MINUTE);
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            // (arrival, id, ask)
            let mut queue: Vec<(u64, usize, Ask)> = Vec::new();
            let mut id = 0;
            let mut clock = 0u64;
            for _ in 0..rng.below(6) + 1 {
                clock += rng.below(90_000);
                for _ in 0..rng.below(150) + 1 {
                    let ask = if rng.below(10) == 0 {
                        activity("live")
                    } else {
                        alert(["t1", "t2", "t3"][rng.below(3) as usize])
                    };
                    queue.push((clock, id, ask));
                    id += 1;
                }
            }
            let total = queue.len();
            let mut pacer = Pacer::new(limits);
            let mut sent: Vec<(u64, usize, Ask)> = Vec::new();
            let mut now = 0;
            let mut rounds = 0;
            while !queue.is_empty() {
                rounds += 1;
                assert!(rounds < 100_000, "seed {seed}: no progress");
                now = now.max(queue.iter().map(|(due, ..)| *due).min().unwrap_or(now));
                if restarts && rng.below(3) == 0 {
                    pacer = restarted(&pacer, now);
                }
                queue.sort_by_key(|(due, id, _)| (*due, *id));
                let due: Vec<(u64, usize, Ask)> =
                    queue.iter().filter(|(d, ..)| *d <= now).cloned().collect();
                queue.retain(|(d, ..)| *d > now);
                let asks: Vec<Ask> = due.iter().map(|(_, _, a)| a.clone()).collect();
                for ((_, id, ask), slot) in due.into_iter().zip(pacer.plan(&asks, now)) {
                    match slot {
                        Slot::Now => {
                            for token in &ask.tokens {
                                pacer.record(token, now);
                            }
                            sent.push((now, id, ask));
                        }
                        Slot::At(at) => {
                            assert!(at > now, "seed {seed}");
                            queue.push((at, id, ask));
                        }
                    }
                }
            }
            assert_eq!(sent.len(), total, "seed {seed}: every ask sent");
            let all: Vec<u64> = sent.iter().map(|(t, ..)| *t).collect();
            assert!(busiest(&all, limits.window_ms) <= 120, "seed {seed}");
            let alerts: Vec<u64> = sent
                .iter()
                .filter(|(_, _, a)| a.class == Class::Alert)
                .map(|(t, ..)| *t)
                .collect();
            assert!(busiest(&alerts, limits.window_ms) <= 110, "seed {seed}");
            for token in ["t1", "t2", "t3", "live"] {
                let mine: Vec<&(u64, usize, Ask)> = sent
                    .iter()
                    .filter(|(_, _, a)| a.tokens[0] == token)
                    .collect();
                let times: Vec<u64> = mine.iter().map(|(t, ..)| *t).collect();
                assert!(
                    busiest(&times, limits.window_ms) <= 60,
                    "seed {seed}: {token} over its limit"
                );
                let ids: Vec<usize> = mine.iter().map(|(_, id, _)| *id).collect();
                if token != "live" {
                    let mut sorted = ids.clone();
                    sorted.sort_unstable();
                    assert_eq!(ids, sorted, "seed {seed}: {token} out of order");
                }
            }
        }
    }

    #[test]
    fn a_restored_pacer_plans_as_the_one_that_saved_it() {
        for seed in 1..=200u64 {
            let limits = Limits::relay(MINUTE);
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let tokens = ["t1", "t2", "t3", "live"];
            let mut pacer = Pacer::new(limits);
            let mut now = 1_000_000;
            for _ in 0..rng.below(300) {
                now += rng.below(2_000);
                let token = tokens[rng.below(4) as usize];
                if rng.below(40) == 0 {
                    let class = if token == "live" {
                        Class::Activity
                    } else {
                        Class::Alert
                    };
                    if rng.below(2) == 0 {
                        pacer.rate_limited(token, now, rng.below(60_000));
                    } else {
                        pacer.unavailable(
                            now,
                            Some(rng.below(60_000)).filter(|_| class == Class::Alert),
                        );
                    }
                } else {
                    pacer.record(token, now);
                }
            }
            let later = now + rng.below(70_000);
            let asks: Vec<Ask> = (0..rng.below(80) + 1)
                .map(|_| match tokens[rng.below(4) as usize] {
                    "live" => activity("live"),
                    token => alert(token),
                })
                .collect();
            assert_eq!(
                restarted(&pacer, later).plan(&asks, later),
                pacer.plan(&asks, later),
                "seed {seed}"
            );
        }
    }

    #[test]
    fn a_damaged_save_restores_what_is_well_formed_and_bounded() {
        let limits = Limits::relay(MINUTE);
        let now = 10_000_000;
        let fresh = |text: &str| {
            let saved = crate::base::json::parse(text).unwrap();
            Pacer::restore(limits, &saved, now).plan(&[alert("t1")], now)
        };
        for text in [
            "null",
            "[]",
            r#"{"tokens":7}"#,
            r#"{"tokens":{"t1":"x"}}"#,
            r#"{"tokens":{"t1":[-5,"x",null,1.5e300]}}"#,
            r#"{"blocked":{"t1":-1},"down_until":"soon"}"#,
        ] {
            assert_eq!(fresh(text), vec![Slot::Now], "{text}");
        }
        // A block never outlasts a window from now.
        let far = format!(r#"{{"down_until":{}}}"#, now * 1000);
        assert_eq!(
            fresh(&far),
            vec![Slot::At(now + limits.window_ms)],
            "a block far ahead is cut to a window"
        );
        // Far more times than a window can hold keep at most the bound.
        let many: Vec<String> = (0..10_000).map(|i| (now - i).to_string()).collect();
        let text = format!(
            r#"{{"tokens":{{"{}":[{}]}}}}"#,
            token_key("t1"),
            many.join(",")
        );
        let saved = crate::base::json::parse(&text).unwrap();
        let restored = Pacer::restore(limits, &saved, now);
        assert_eq!(restored.relay.len(), SAVED_TIMES_MAX);
    }
}

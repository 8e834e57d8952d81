//! The commands herdr runs on its events: Agent Notifications, Live
//! Activity, and the startup hook.
//!
//! - `env.rs`: the shared prologue: required environment in contract
//!   order, the lenient event parse, the sidebar-refresh call site.
//! - `settings.rs`: `notify.json` (relay URL and its legacy mapping, delays,
//!   `relay_ca_file`), the default relay; never fails.
//! - `registration.rs`: `notifications.json` v1: alert and activity devices
//!   (lenient per entry, fail closed), 410 prunes under a lock, rewritten
//!   only on change with unknown fields kept in order.
//! - `relay.rs`: the Push Relay client (rustls, loopback-only plain HTTP, no
//!   redirects, 3 attempts, a 429 ended with its `Retry-After`) and the
//!   verdicts.
//! - `row_layout.rs`: the Live Activity `row_layout` and its row spans.
//! - `delivery.rs`: the delivery round both event hooks end with (one push
//!   per device, verdicts, 410 prunes, the state file, the log line).
//! - `notify.rs`: the notify hook: cheap exits and the hand-over; after the
//!   debounce (in the worker) the re-check, dedupe and alert.
//! - `activity/`: the Live Activity hook: claim, plan, size ladder.
//! - `pacing.rs`: the pure scheduler that keeps relay requests within the
//!   relay's rate limits (per token, per address), Live Activity first.
//! - `spool.rs`: the per-session queue (`queue/worker.lock`,
//!   `queue/spool/`): the entry format, take-once, the lock and the
//!   hand-off rule, and the start of a detached worker.
//! - `worker.rs`: `heeler hook-worker`, the one worker per session: the
//!   schedule, the batches (one `agent list`, one relay client), the kill
//!   and hand-off guarantees.
//! - `failure_log.rs`: the bounded, redacted failure log the worker writes
//!   and `heeler doctor` reads.
//! - `startup.rs`: `heeler sidebar-hook`, the `[[startup]]` command.
//!
//! Architecture invariants: a hook runs as a fresh process per agent status
//! change, so the cheap exits (no registration, a dedupe marker) come before
//! any herdr query, parse or TLS handshake, and a hook never sleeps: the
//! debounce and everything after it run in the session's detached worker,
//! so herdr's command slot is free after the hand-over. A hook never fails herdr for a
//! side task (sidebar, usage runtime record): those are one log line.
//! `notifications.json` is never truncated or reordered.

pub mod activity;
pub mod delivery;
pub mod env;
pub mod failure_log;
pub mod notify;
pub mod pacing;
pub mod registration;
pub mod relay;
pub mod row_layout;
pub mod settings;
pub mod spool;
pub mod startup;
pub mod worker;

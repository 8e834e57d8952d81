//! The wire formats the Heeler app reads, byte for byte, and `heeler wire`,
//! the interop tool over them.
//!
//! - `pairing_code.rs`: `HERDR-PAIR:1`/`2` encode, v1 decode, the v2 rules.
//! - `envelope.rs`: the `{v,kid,n,ct}` AES-256-GCM envelope, its two AAD
//!   domains, key ids and per-pane collapse keys.
//! - `notification.rs`: the Agent Notification plaintext.
//! - `live_activity.rs`: the Live Activity content and its builder from
//!   herdr's agent inventory (eligibility, pins, rank, cap).
//! - `display_text.rs`: the 80-code-point trim and the grapheme cut.
//! - `command.rs`: `heeler wire …`.
//!
//! Architecture invariants: pure functions over bytes and values (no file,
//! socket or clock), so the app's vectors test every rule. One payload has
//! one byte string: encoders write the canonical form and decoders accept
//! only it. Secrets never reach `Debug` output.

pub mod command;
pub(crate) mod display_text;
pub mod envelope;
pub mod live_activity;
pub mod notification;
pub mod pairing_code;

//! The wire formats the Heeler app reads, byte for byte, and `heeler wire`.

pub mod command;
pub mod display_text;
pub mod envelope;
pub mod live_activity;
pub mod notification;
pub mod pairing_code;

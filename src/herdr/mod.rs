//! herdr itself: its socket API (with the CLI as fallback) and its session rules.

pub mod client;
pub mod session;

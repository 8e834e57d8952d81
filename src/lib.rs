//! The heeler library: every capability of the `heeler` binary, one module
//! per concept. The binary (`main.rs`) only dispatches; tests and benchmarks
//! call these modules directly. See ARCHITECTURE.md for the map.

pub mod accept;
pub mod atomic_file;
pub mod authorized_keys;
pub mod base64;
pub mod bootstrap_key;
pub mod ceremony;
pub mod cli;
pub mod device_key;
pub mod display_text;
pub mod envelope;
pub mod exit;
pub mod host_key;
pub mod json;
pub mod live_activity;
pub mod notification;
pub mod pair;
pub mod pairing_code;
pub mod pairing_state;
pub mod session;
pub mod sidebar;
pub mod sidebar_config;
mod sys;
pub mod toml_1_0;
pub mod wire;

// The pairing popup (issue 4).
pub mod addresses;
pub mod checklist;
pub mod clipboard;
pub mod herdr_endpoint;
pub mod pair_action;
pub mod pair_config;
pub mod popup;
pub mod popup_keys;
pub mod popup_screen;
pub mod popup_terminal;
pub mod qr;
pub mod tailscale_probe;

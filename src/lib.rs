//! The heeler library: every capability of the `heeler` binary, one module
//! per concept. The binary (`main.rs`) only dispatches; tests and benchmarks
//! call these modules directly. See ARCHITECTURE.md for the map.

pub mod accept;
pub mod activity_hook;
pub mod activity_rows;
pub mod atomic_file;
pub mod authorized_keys;
pub mod base64;
pub mod bootstrap_key;
pub mod ceremony;
pub mod cli;
pub mod device_key;
pub mod display_text;
pub mod doctor;
mod doctor_probe;
pub mod envelope;
pub mod exit;
pub mod herdr_client;
pub mod hook_env;
pub mod host_key;
pub mod json;
pub mod live_activity;
pub mod notification;
pub mod notify_hook;
pub mod notify_settings;
pub mod pair;
pub mod pairing_code;
pub mod pairing_state;
pub mod registration;
pub mod relay;
pub mod session;
pub mod sidebar;
pub mod sidebar_config;
pub mod static_binary;
mod sys;
pub mod toml_1_0;
pub mod usage_aggregate;
pub mod usage_cache;
pub mod usage_claude;
pub mod usage_cmd;
pub mod usage_codex;
pub mod usage_jsonpick;
pub mod usage_limits;
pub mod usage_pricing;
pub mod usage_query;
pub mod usage_report;
pub mod usage_row;
pub mod usage_runtime;
pub mod usage_scan;
pub mod usage_time;
pub mod usage_tz;
pub mod usage_worker;
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

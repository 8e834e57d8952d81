//! The heeler library: every capability of the `heeler` binary, one module
//! per concept. The binary (`main.rs`) only dispatches; tests and benchmarks
//! call these modules directly. See ARCHITECTURE.md for the map.

pub mod atomic_file;
pub mod base64;
pub mod cli;
pub mod display_text;
pub mod envelope;
pub mod exit;
pub mod json;
pub mod live_activity;
pub mod notification;
pub mod pairing_code;
pub mod session;
mod sys;
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

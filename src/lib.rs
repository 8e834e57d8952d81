//! The heeler library: every capability of the `heeler` binary, one folder
//! per area. The binary (`main.rs`) only dispatches; tests and benchmarks
//! call these modules directly. ARCHITECTURE.md is the map, and
//! `tests/it/tidy.rs` keeps the layering between folders a DAG.

pub mod base;
pub mod cli;
pub mod doctor;
pub mod exit;
pub mod herdr;
pub mod hooks;
pub mod link;
pub mod pair;
pub mod sidebar;
pub mod usage;
pub mod wire;

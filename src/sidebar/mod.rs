//! The sidebar layout snapshot the app reads.

pub mod config;
pub mod snapshot;
pub mod toml_1_0;

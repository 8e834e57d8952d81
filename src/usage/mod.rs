//! Usage: Claude Code and Codex tokens, cost and limits.

pub mod aggregate;
pub mod cache;
pub mod command;
pub mod discover;
pub mod event;
pub mod limits;
pub mod parse;
pub mod paths;
pub mod pricing;
pub mod query;
pub mod report;
pub mod runtime;
pub mod store;
pub mod time;
pub mod tz;
pub mod worker;

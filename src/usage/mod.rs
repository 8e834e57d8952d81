//! Usage: Claude Code and Codex tokens, cost and limits, answered over SSH
//! in milliseconds from a cache a background worker keeps.
//!
//! - `command.rs`: `heeler usage …` arguments and dispatch.
//! - `config.rs`: `usage.toml` (how many days of history the cache keeps
//!   for the views).
//! - `query.rs`: the instant answer: reads the state files as values, decides
//!   (purely) the v1 JSON and a plan of effects, then performs the plan
//!   (the Claude toggle file, a zone to render ahead, starting the worker).
//! - `worker.rs`: the single-instance refresh: lock, discovery, the per-file
//!   cache, the aggregate, the stores, the snapshot, the limit probes.
//! - `agents/`: the agent contract (roots, transcript names, the line
//!   parser, what it cannot count) and the registry of agents every stage
//!   goes through.
//! - `discover.rs`: the directory walk from the agents' roots.
//! - `paths.rs`: the name of every file of Usage state.
//! - `event.rs`: the cached event and token types every stage shares.
//! - `parse/`: transcripts to events (Claude Code, Codex).
//! - `cache/`: the per-file cache and the refresh plan per file.
//! - `store/`: the cache on disk (its format's one home).
//! - `aggregate/`: global dedupe, pricing, 15-minute slots, kept
//!   incrementally.
//! - `limits/`: the subscription limit probes, when they are due, and the
//!   macOS trigger.
//! - `report.rs`: the snapshot file and the v1 rendering.
//! - `pricing.rs`: the bundled price table and request pricing.
//! - `time.rs`: timestamps and civil dates (the zones are `base::tz`).
//! - `runtime.rs`: the runtime record the hooks write for `heeler usage`.
//! - `live/`: the live screen (`heeler usage live`, herdr's `heeler.usage`
//!   popup): the summary, blocks, limit bars and a sparkline, kept fresh.
//! - `views/`: the views for people (`heeler usage`, `daily`, `blocks`,
//!   `statusline`, …): tables, CSV and JSON from the same cache.
//!
//! Architecture invariants: a query never scans a transcript and never
//! fails (its problems are in `errors`); only the worker writes the cache,
//! one at a time. Everything cached is derived: checksummed, replaced
//! atomically, and a damaged entry is reparsed, never trusted. Sums are
//! exact integers (tokens, picodollars), so an incremental refresh equals a
//! scan from scratch; rounding happens only when an answer is rendered.

pub mod agents;
pub mod aggregate;
pub mod cache;
pub mod command;
pub mod config;
pub mod discover;
pub mod event;
pub mod limits;
pub mod live;
pub mod parse;
pub mod paths;
pub mod pricing;
pub mod query;
pub mod report;
pub mod runtime;
pub mod store;
pub mod time;
pub mod views;
pub mod worker;

//! Transcripts to usage events, one line at a time, without building a JSON
//! tree of a large line.
//!
//! - `scan.rs`: complete lines from an offset, plain or zstd (a last line
//!   that is a whole JSON object is complete without its newline).
//! - `jsonpick.rs`: allocation-free picking of the members a parser needs.
//! - `claude.rs`: Claude Code roots and per-line extraction.
//! - `codex.rs`: Codex roots, per-line extraction and the counting rule
//!   (records, each new response's last usage, inherited history skipped).
//! - `pi.rs`: pi and Oh My Pi session files (a fork's copied history
//!   skipped).
//! - `gemini.rs`: Gemini CLI session files, a `.json` document or a
//!   `.jsonl` log read whole (a resumed legacy session's copy skipped),
//!   and the GenAI usage counts Qwen Code shares.
//! - `qwen.rs`: Qwen Code chat files (a `/branch` copy's records
//!   skipped).
//! - `amp.rs`: Amp thread documents (the usage ledger merged with the
//!   messages' usage).
//! - `droid.rs`: Droid session settings (a session's running totals).
//! - `cline.rs`: Cline's session documents (a seeded session's copied
//!   history skipped).
//! - `kimi.rs`: Kimi CLI wire files (each step's `StatusUpdate`).
//! - `copilot.rs`: Copilot CLI's OpenTelemetry export (each chat span).
//! - `opencode.rs`: opencode's and Kilo's `message` rows (a fork's copies
//!   of a call count once).
//! - `devin.rs`: Devin for Terminal's `message_nodes` rows (a retry counts
//!   once).
//! - `hermes.rs`: Hermes Agent's session and per-model totals.
//! - `differential.rs` (tests only): re-serialised real-shaped lines give
//!   the same events through the fast readers and the exact JSON parser,
//!   and mutated ones are refused exactly when `JSON.parse` refuses them.
//!
//! Architecture invariants: parsers are pure over bytes and a resumable
//! parser state, so a file can be read again from its last complete line;
//! a malformed line (one the spec's `JSON.parse` refuses) is counted and
//! skipped, never fatal.

pub mod amp;
pub mod claude;
pub mod cline;
pub mod codex;
pub mod copilot;
pub mod devin;
#[cfg(test)]
mod differential;
pub mod droid;
pub mod gemini;
pub mod hermes;
pub(crate) mod jsonpick;
pub mod kimi;
pub mod opencode;
pub mod pi;
pub mod qwen;
pub mod scan;

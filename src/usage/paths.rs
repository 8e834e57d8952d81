//! The names of every file of Usage state, in one place.
//!
//! All Usage state lives in one directory, `usage/` under the plugin's
//! state dir; its location follows the one rule in [`crate::base::dirs`],
//! and so does whether it is trusted ([`UsageDir::trusted`]).

use std::path::PathBuf;

use crate::base::dirs::{self, NoHome, Untrusted};
use crate::usage::event::Agent;

/// The index's base file (`usage::store::index`).
pub(crate) const INDEX: &str = "index-v1.bin";
/// The index's journal, appended to between rewrites of [`INDEX`].
pub(crate) const INDEX_JOURNAL: &str = "index-v1.journal";
/// The aggregate state's base file (`usage::store::state`).
pub(crate) const AGGREGATE: &str = "aggregate-v1.bin";
/// The aggregate state's journal.
pub(crate) const AGGREGATE_JOURNAL: &str = "aggregate-v1.journal";
/// The snapshot the views read.
pub(crate) const SNAPSHOT: &str = "snapshot-v1.json";
/// The usage worker's lock.
pub(crate) const LOCK: &str = "worker.lock";
/// What the hooks record of herdr's environment (`usage::runtime`).
pub(crate) const RUNTIME: &str = "runtime-v1.json";
/// The prefix and suffix of an owners table's name, around its generation
/// (`usage::store::owners`).
const OWNERS: (&str, &str) = ("owners-v1.", ".bin");

/// The owners table of generation `generation`: `owners-v1.<16 hex>.bin`.
pub(crate) fn owners_table(generation: u64) -> String {
    format!("{}{generation:016x}{}", OWNERS.0, OWNERS.1)
}

/// Whether `name` is an owners table's name, of any generation.
pub(crate) fn is_owners_table(name: &str) -> bool {
    name.starts_with(OWNERS.0) && name.ends_with(OWNERS.1)
}

/// Files and directories of Usage state.
#[derive(Debug, Clone)]
pub struct UsageDir(pub PathBuf);

impl UsageDir {
    /// `usage/` under the plugin's state dir ([`dirs::Env::plugin_state_dir`]).
    pub fn resolve(env: &dirs::Env) -> Result<UsageDir, NoHome> {
        Ok(UsageDir::in_state_dir(&env.plugin_state_dir()?))
    }

    /// `usage/` under the plugin state dir `state_dir`.
    pub(crate) fn in_state_dir(state_dir: &std::path::Path) -> UsageDir {
        UsageDir(state_dir.join("usage"))
    }

    /// [`UsageDir::resolve`] in this process's environment.
    pub fn from_env() -> Result<UsageDir, NoHome> {
        UsageDir::resolve(&dirs::Env::process())
    }

    /// Whether the plugin's state dir and `usage/` below it are trusted
    /// ([`dirs::trusted`]).
    pub fn trusted(&self) -> Result<(), Untrusted> {
        if let Some(state_dir) = self.0.parent() {
            dirs::trusted(state_dir)?;
        }
        dirs::trusted(&self.0)
    }

    pub fn snapshot(&self) -> PathBuf {
        self.0.join(SNAPSHOT)
    }
    pub fn index(&self) -> PathBuf {
        self.0.join(INDEX)
    }
    pub fn lock(&self) -> PathBuf {
        self.0.join(LOCK)
    }
    pub fn log(&self) -> PathBuf {
        self.0.join("worker.log")
    }
    pub fn status(&self) -> PathBuf {
        self.0.join("status-v1.json")
    }
    pub fn runtime(&self) -> PathBuf {
        self.0.join(RUNTIME)
    }
    pub fn limits(&self, agent: Agent) -> PathBuf {
        self.0.join(format!("limits-{}.json", agent.name()))
    }
    pub(crate) fn claude_limits_trigger(&self) -> PathBuf {
        self.0.join("claude-limits-trigger.json")
    }
    pub(crate) fn zones_wanted(&self) -> PathBuf {
        self.0.join("zones-wanted")
    }
    pub(crate) fn claude_limits_wanted(&self) -> PathBuf {
        self.0.join("claude-limits.wanted")
    }
    /// The last two days of slots, for the statusline
    /// (`usage::views::recent`).
    pub fn recent(&self) -> PathBuf {
        self.0.join("recent-v1.json")
    }
    /// The transcripts written to lately, which the live screen watches
    /// (`usage::live::watch`).
    pub fn active(&self) -> PathBuf {
        self.0.join("active-v1.json")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_tables_are_named_by_their_generation_in_sixteen_hex_digits() {
        assert_eq!(owners_table(0x1f), "owners-v1.000000000000001f.bin");
        assert!(is_owners_table(&owners_table(u64::MAX)));
        assert!(is_owners_table("owners-v1.0000000000000000.bin"));
        assert!(!is_owners_table("owners-v1.0000000000000000.bin.tmp"));
        assert!(!is_owners_table(INDEX));
        assert!(!is_owners_table(AGGREGATE));
    }
}

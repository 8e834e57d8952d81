//! The names of every file of Usage state, in one place.
//!
//! All Usage state lives in one directory, `usage/` under the plugin's
//! state dir; its location follows the one rule in [`crate::base::dirs`],
//! and so does whether it is trusted ([`UsageDir::trusted`]).

use std::path::PathBuf;

use crate::base::dirs::{self, NoHome, Untrusted};
use crate::usage::event::Agent;

/// Files and directories of Usage state.
#[derive(Debug, Clone)]
pub struct UsageDir(pub PathBuf);

impl UsageDir {
    /// `usage/` under the plugin's state dir ([`dirs::Env::plugin_state_dir`]).
    pub fn resolve(env: &dirs::Env) -> Result<UsageDir, NoHome> {
        Ok(UsageDir(env.plugin_state_dir()?.join("usage")))
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
        self.0.join("snapshot-v1.json")
    }
    pub fn index(&self) -> PathBuf {
        self.0.join("index-v1.bin")
    }
    pub fn aggregate(&self) -> PathBuf {
        self.0.join("aggregate-v1.bin")
    }
    pub fn index_journal(&self) -> PathBuf {
        self.0.join("index-v1.journal")
    }
    pub fn lock(&self) -> PathBuf {
        self.0.join("worker.lock")
    }
    pub fn log(&self) -> PathBuf {
        self.0.join("worker.log")
    }
    pub fn status(&self) -> PathBuf {
        self.0.join("status-v1.json")
    }
    pub fn runtime(&self) -> PathBuf {
        self.0.join("runtime-v1.json")
    }
    pub fn limits(&self, agent: Agent) -> PathBuf {
        self.0.join(format!("limits-{}.json", agent.name()))
    }
    pub fn claude_limits_trigger(&self) -> PathBuf {
        self.0.join("claude-limits-trigger.json")
    }
    pub fn zones_wanted(&self) -> PathBuf {
        self.0.join("zones-wanted")
    }
    pub fn claude_limits_wanted(&self) -> PathBuf {
        self.0.join("claude-limits.wanted")
    }
    /// The last two days of slots, for the statusline
    /// (`usage::views::recent`).
    pub fn recent(&self) -> PathBuf {
        self.0.join("recent-v1.json")
    }
}

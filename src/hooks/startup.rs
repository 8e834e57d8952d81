//! `heeler sidebar-hook`: the manifest's `[[startup]]` command, run once
//! each time herdr starts the plugin.
//!
//! herdr (re)starting is the moment to record its runtime for `heeler
//! usage` (which runs later from a bare SSH session) and to export the
//! sidebar layout before any event hook runs.

use std::path::Path;

use crate::cli::SidebarHookArgs;
use crate::exit::Failure;
use crate::sidebar::snapshot;

/// The command: record the runtime, then refresh `sidebar.json`.
pub fn run(_args: SidebarHookArgs) -> Result<(), Failure> {
    let config_dir = std::env::var_os("HERDR_PLUGIN_CONFIG_DIR")
        .filter(|dir| !dir.is_empty())
        .ok_or_else(|| Failure::new("sidebar-hook: HERDR_PLUGIN_CONFIG_DIR is not set", 1))?;
    crate::usage::runtime::record_for_hook(&|name| std::env::var_os(name));
    snapshot::refresh_from_process_env(Path::new(&config_dir))
        .map(|_| ())
        .map_err(|error| Failure::new(format!("sidebar-hook: {}", error.code()), 1))
}

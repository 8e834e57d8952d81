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

/// The command: record the runtime, make sure the session's queued
/// events have a worker, then refresh `sidebar.json`.
pub fn run(_args: SidebarHookArgs) -> Result<(), Failure> {
    let config_dir = std::env::var_os("HERDR_PLUGIN_CONFIG_DIR")
        .filter(|dir| !dir.is_empty())
        .ok_or_else(|| Failure::new("sidebar-hook: HERDR_PLUGIN_CONFIG_DIR is not set", 1))?;
    crate::usage::runtime::record_for_hook(&|name| std::env::var_os(name));
    serve_leftovers();
    snapshot::refresh_from_process_env(Path::new(&config_dir))
        .map(|_| ())
        .map_err(|error| Failure::new(format!("sidebar-hook: {}", error.code()), 1))
}

/// Events a killed worker left queued (herdr restarting is often the
/// moment after such a kill) get a worker now: the session's spool is
/// looked at once, in a trusted state dir only. Nothing here fails the
/// hook; a failure is one line in the failure log.
fn serve_leftovers() {
    let Some(plugin_state_dir) = std::env::var_os("HERDR_PLUGIN_STATE_DIR")
        .filter(|dir| !dir.is_empty())
        .map(std::path::PathBuf::from)
    else {
        return;
    };
    let socket = std::env::var_os("HERDR_SOCKET_PATH").filter(|v| !v.is_empty());
    let session = crate::herdr::session::from_socket_path(
        socket.as_ref().map(|s| s.to_string_lossy()).as_deref(),
    );
    let state_dir = session.state_dir(&plugin_state_dir);
    let result = crate::base::dirs::trusted_tree(&state_dir, &["queue", "queue/spool"])
        .map_err(|e| e.to_string())
        .and_then(|()| crate::hooks::spool::ensure_served(&state_dir).map_err(|e| e.to_string()));
    if let Err(e) = result {
        // Nowhere is left to report a failure to log.
        let _ = crate::hooks::failure_log::append(&plugin_state_dir, &format!("sidebar-hook: {e}"));
    }
}

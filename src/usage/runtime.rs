//! The runtime record: how a bare SSH session finds what herdr's session has.
//!
//! Queries arrive over SSH with a minimal environment; `claude`/`codex` may
//! not be on that `PATH` and `CLAUDE_CONFIG_DIR`/`CODEX_HOME` may be unset.
//! herdr's hooks run with the server's environment, so they record it here
//! (`usage/runtime-v1.json`): this binary's path, herdr's binary and socket,
//! and the variables that locate the agents and their transcripts. Nothing
//! secret is recorded.
//!
//! The record's `PATH` decides which `codex` and `claude` the worker runs,
//! so it is only read ([`read`]) when the state dir, `usage/` and the file
//! itself are trusted ([`crate::base::dirs::verdict`]): a record another
//! user could have written is no record.

use std::io;
use std::path::Path;

use crate::base::atomic_file;
use crate::base::dirs;
use crate::base::json::{self, Object, Value};
use crate::base::state_file;
use crate::usage::paths::UsageDir;

/// Variables copied from the environment into the record: `PATH`, `HOME`
/// and every variable an agent's roots read ([`crate::usage::event::Agent::env_vars`]),
/// each once (opencode and Kilo both read `XDG_DATA_HOME`).
pub(crate) fn recorded_vars() -> impl Iterator<Item = &'static str> {
    let mut all: Vec<&'static str> = Vec::new();
    let vars = crate::usage::agents::ALL
        .into_iter()
        .flat_map(|a| a.env_vars().iter().copied());
    for v in ["PATH", "HOME"].into_iter().chain(vars) {
        if !all.contains(&v) {
            all.push(v);
        }
    }
    all.into_iter()
}

/// Builds the record from explicit values (pure; tests use it directly).
pub fn record_value(
    binary: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    recorded_at: i64,
) -> Value {
    let text = |v: Option<String>| v.map_or(Value::Null, Value::from);
    let mut vars = Object::new();
    for k in recorded_vars() {
        if vars.get(k).is_some() {
            continue;
        }
        if let Some(v) = env(k).filter(|v| !v.is_empty()) {
            vars.insert(k, Value::from(v));
        }
    }
    Value::Object(
        Object::new()
            .with("v", 1u64)
            .with("recorded_at", recorded_at)
            .with(
                "binary",
                text(binary.map(|b| b.to_string_lossy().into_owned())),
            )
            .with("herdr_bin", text(env("HERDR_BIN_PATH")))
            .with("herdr_socket", text(env("HERDR_SOCKET_PATH")))
            .with("env", Value::Object(vars)),
    )
}

/// Writes `<state_dir>/usage/runtime-v1.json` from this process's
/// environment (called by the hooks, which run in herdr's environment).
pub fn record_runtime(state_dir: &Path) -> io::Result<()> {
    let dir = UsageDir::in_state_dir(state_dir);
    atomic_file::create_dir_all(&dir.0, 0o700)?;
    let exe = std::env::current_exe().ok();
    let value = record_value(
        exe.as_deref(),
        &|k| std::env::var(k).ok(),
        crate::base::clock::unix_seconds(),
    );
    let path = dir.runtime();
    // Unchanged (apart from the time): leave the file alone.
    if let Some(old) = json::read_file(&path) {
        let strip = |v: &Value| {
            let mut o = v.as_object().cloned().unwrap_or_default();
            o.remove("recorded_at");
            o
        };
        if strip(&old) == strip(&value) {
            return Ok(());
        }
    }
    atomic_file::write(&path, value.to_json().as_bytes(), 0o600)
}

/// The runtime record of `dir`: `None` when it is missing or not JSON, or
/// when it or a directory above it (the state dir, `usage/`) is not
/// trusted.
pub fn read(dir: &UsageDir) -> Option<Value> {
    use std::os::unix::fs::MetadataExt;
    dir.trusted().ok()?;
    let (bytes, meta) = state_file::read(&dir.runtime(), state_file::MAX_BYTES).ok()?;
    dirs::verdict_for_me(meta.uid(), meta.gid(), meta.mode()).ok()?;
    json::parse(std::str::from_utf8(&bytes).ok()?).ok()
}

/// `key` of the environment the runtime record saw (herdr's), else of this
/// process; empty values count as unset.
pub(crate) fn env_var(record: Option<&Value>, key: &str) -> Option<String> {
    record
        .and_then(|r| r.get("env"))
        .and_then(|e| e.get(key))
        .and_then(Value::as_nonempty_str)
        .map(str::to_string)
        .or_else(|| std::env::var(key).ok().filter(|v| !v.is_empty()))
}

/// The `runtime` object of a query answer.
pub fn state_of(record: Option<&Value>) -> Value {
    match record.filter(|r| r.get("v").and_then(Value::as_i64) == Some(1)) {
        Some(r) => Value::Object(Object::new().with("state", "ok").with(
            "recorded_at",
            r.get("recorded_at").cloned().unwrap_or(Value::Null),
        )),
        None => Value::Object(Object::new().with("state", "missing")),
    }
}

/// Records the runtime (this binary, herdr's binary and socket, PATH, HOME)
/// for `heeler usage`, which runs later from a bare SSH session. Written
/// only when it changed; a failure is one log line and never fails the hook.
pub(crate) fn record_for_hook(lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>) {
    let Some(state_dir) = lookup("HERDR_PLUGIN_STATE_DIR").filter(|d| !d.is_empty()) else {
        return;
    };
    if let Err(error) = record_runtime(Path::new(&state_dir)) {
        eprintln!("usage: runtime record not written ({error})");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::base::scratch::ScratchDir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_runtime_record_carries_home_path_and_every_agent_variable() {
        let recorded: Vec<&str> = recorded_vars().collect();
        // The record heeler has always written, in its order, then the
        // variable of each agent added since.
        assert_eq!(
            recorded,
            [
                "PATH",
                "HOME",
                "CLAUDE_CONFIG_DIR",
                "XDG_CONFIG_HOME",
                "CODEX_HOME",
                "PI_CODING_AGENT_DIR",
                "OMP_CODING_AGENT_DIR",
                "XDG_DATA_HOME",
                "GEMINI_CLI_HOME",
                "QWEN_RUNTIME_DIR",
                "QWEN_HOME",
                "KIMI_SHARE_DIR",
                "COPILOT_HOME",
                "COPILOT_OTEL_FILE_EXPORTER_PATH",
                "CLINE_SESSION_DATA_DIR",
                "CLINE_DATA_DIR",
                "CLINE_DIR",
                "HERMES_HOME"
            ]
        );
    }

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_record_is_read_only_from_a_trusted_dir_and_file() {
        let scratch = ScratchDir::new("runtime-trust");
        let state = scratch.path().join("state");
        let dir = UsageDir(state.join("usage"));
        std::fs::create_dir_all(&dir.0).unwrap();
        std::fs::write(dir.runtime(), r#"{"v":1,"env":{"PATH":"/x"}}"#).unwrap();
        chmod(&state, 0o700);
        chmod(&dir.0, 0o700);
        chmod(&dir.runtime(), 0o600);
        let path_of = |record: Option<Value>| {
            record.and_then(|r| r.get("env")?.get("PATH")?.as_str().map(str::to_owned))
        };
        assert_eq!(path_of(read(&dir)).as_deref(), Some("/x"));
        chmod(&dir.runtime(), 0o666);
        assert_eq!(read(&dir), None, "a file others may write");
        chmod(&dir.runtime(), 0o600);
        chmod(&dir.0, 0o777);
        assert_eq!(read(&dir), None, "a usage dir others may write");
        chmod(&dir.0, 0o700);
        chmod(&state, 0o777);
        assert_eq!(read(&dir), None, "a state dir others may write");
        chmod(&state, 0o700);
        let target = scratch.path().join("elsewhere.json");
        std::fs::rename(dir.runtime(), &target).unwrap();
        std::os::unix::fs::symlink(&target, dir.runtime()).unwrap();
        assert_eq!(read(&dir), None, "a link");
    }
}

//! The effects behind `heeler doctor`: read files and path metadata, read an
//! SSH banner over loopback TCP (`pair::preflight::read_banner`, the read
//! pairing does too), run `herdr` with a timeout, and (only with
//! `--network`) ask the Push Relay for `GET /push`. Everything it learns goes
//! into [`Facts`]; the decisions are in the check files.
//!
//! Invariants: the home and config directories come from `base::dirs` (the
//! rule every command uses); when it cannot name them, nothing under them
//! is probed, so no path is ever resolved against the current directory.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::dirs;
use crate::base::process::RunError;
use crate::doctor::facts::{
    ConfigFacts, Facts, FileRead, HomeFacts, PairingFacts, PathFacts, PathKind,
};
use crate::doctor::{binary, config, herdr, ssh};
use crate::pair::authorized_keys;

const HERDR_TIMEOUT: Duration = Duration::from_secs(5);
const RELAY_TIMEOUT: Duration = Duration::from_secs(10);

/// Gathers every fact once, from this process's environment.
pub fn gather(network: bool) -> Facts {
    let env = dirs::Env::process();
    let home = env.home().map(|home| home_facts(&home));
    let config = env.plugin_config_dir().map(|dir| config_facts(&dir));
    let ssh_port = config::advertised_port(config.as_ref().ok());
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("heeler"));
    let exe_has_interpreter = std::fs::read(&exe)
        .map_err(|e| e.to_string())
        .and_then(|bytes| binary::has_interpreter(&bytes).map_err(|e| e.to_string()));
    let herdr = find_herdr();
    let (herdr_version, plugin_lists) = match &herdr {
        Some(path) => (
            run_with_timeout(path, &["--version"], HERDR_TIMEOUT),
            plugin_lists(path),
        ),
        None => (
            Err("herdr not found".to_owned()),
            vec![(String::new(), Err("herdr not found".to_owned()))],
        ),
    };
    let relay = network.then(|| relay_status(&config::relay_url(config.as_ref().ok())));
    let hook_failures = env.plugin_state_dir().ok().map(|dir| {
        (
            crate::hooks::failure_log::path_in(&dir),
            crate::hooks::failure_log::read_last(&dir, HOOK_FAILURES_SHOWN),
        )
    });
    let exe_trust = dirs::trusted_binary(&exe);
    Facts {
        exe,
        exe_has_interpreter,
        exe_trust,
        ssh_port,
        ssh_banner: crate::pair::preflight::read_banner(ssh_port),
        ssh_service: crate::doctor::facts::SshService::of(
            std::env::consts::OS,
            ["/etc/os-release", "/usr/lib/os-release"]
                .iter()
                .find_map(|path| {
                    crate::base::state_file::read_config_text(std::path::Path::new(path), 64 * 1024)
                })
                .as_deref(),
            std::path::Path::new("/run/systemd/system").is_dir(),
            std::path::Path::new("/run/openrc").is_dir()
                || std::path::Path::new("/sbin/openrc-run").exists(),
        ),
        host_keys: ssh::host_key_paths()
            .into_iter()
            .map(|path| {
                let read = read_file(&path);
                (path, read)
            })
            .collect(),
        uid: crate::base::sys::effective_uid(),
        home,
        now_unix: crate::base::clock::unix_seconds().max(0) as u64,
        herdr,
        herdr_version,
        plugin_lists,
        untrusted_dirs: untrusted_dirs(&env),
        config,
        relay,
        hook_failures,
        pairings: env.plugin_state_dir().ok().map(|state_dir| PairingFacts {
            pending: crate::pair::state::StateDir::new(&state_dir).pending_ids(MAX_PENDING_LISTED),
            state_dir,
        }),
    }
}

/// How many pending records doctor lists (a ceremony lives 2 minutes, so
/// more than a handful is already a fault).
const MAX_PENDING_LISTED: usize = 1024;

/// How many of the last hook failures the report shows.
const HOOK_FAILURES_SHOWN: usize = 3;

/// The config and state directories that pairing, `accept`, the hooks or
/// `heeler usage` would refuse, each asked of the module that reads it.
fn untrusted_dirs(env: &dirs::Env) -> Vec<dirs::Untrusted> {
    let config_dir = env.plugin_config_dir().ok();
    let state_dir = env.plugin_state_dir().ok();
    let mut found = Vec::new();
    if let Some(config_dir) = &config_dir {
        found.extend(crate::hooks::env::trusted_dirs(config_dir, state_dir.as_deref()).err());
    }
    if let Some(state_dir) = &state_dir {
        found.extend(crate::pair::state::StateDir::new(state_dir).trusted().err());
        found.extend(
            crate::usage::paths::UsageDir(state_dir.join("usage"))
                .trusted()
                .err(),
        );
    }
    let mut unique: Vec<dirs::Untrusted> = Vec::new();
    for untrusted in found {
        if !unique.iter().any(|u| u.path == untrusted.path) {
            unique.push(untrusted);
        }
    }
    unique
}

/// The home directory, `~/.ssh` and authorized_keys, where pairing puts them.
fn home_facts(home: &Path) -> HomeFacts {
    let location = authorized_keys::Location::for_home(home);
    HomeFacts {
        home: path_facts(home),
        ssh_dir: path_facts(&location.ssh_dir),
        authorized_keys_facts: path_facts(&location.file),
        authorized_keys: read_file(&location.file),
    }
}

/// The plugin config files.
fn config_facts(dir: &Path) -> ConfigFacts {
    ConfigFacts {
        dir: dir.to_path_buf(),
        pair_json: config::pair_json_of(crate::pair::config::read_bytes(dir)),
        notify_json: read_file(&dir.join(crate::hooks::settings::FILE_NAME)),
        notifications_json: read_file(&crate::hooks::registration::path_in(dir)),
    }
}

/// Asks every running session for its plugin list; when none runs (or the
/// session list fails), asks once without `--session` (works offline).
fn plugin_lists(herdr: &Path) -> Vec<(String, Result<String, String>)> {
    let sessions = run_with_timeout(herdr, &["session", "list", "--json"], HERDR_TIMEOUT)
        .map(|text| herdr::running_sessions(&text))
        .unwrap_or_default();
    if sessions.is_empty() {
        let current = std::env::var("HERDR_SESSION").unwrap_or_default();
        let list = run_with_timeout(herdr, &["plugin", "list", "--json"], HERDR_TIMEOUT);
        return vec![(current, list)];
    }
    sessions
        .into_iter()
        .map(|name| {
            let list = run_with_timeout(
                herdr,
                &["--session", &name, "plugin", "list", "--json"],
                HERDR_TIMEOUT,
            );
            (name, list)
        })
        .collect()
}

/// A file doctor shows or checks (config, host keys, authorized_keys),
/// through the one bounded, non-blocking config read: a FIFO or a device
/// there is reported as unreadable, never waited on or read whole.
pub(crate) fn read_file(path: &Path) -> FileRead {
    match crate::base::state_file::read_config(path, crate::base::state_file::MAX_BYTES) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => FileRead::Text(text),
            Err(_) => FileRead::Unreadable("not UTF-8".to_owned()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileRead::Missing,
        Err(e) => FileRead::Unreadable(e.to_string()),
    }
}

pub(crate) fn path_facts(path: &Path) -> PathFacts {
    match std::fs::metadata(path) {
        Ok(meta) => PathFacts {
            path: path.to_path_buf(),
            kind: Some(if meta.is_dir() {
                PathKind::Directory
            } else if meta.is_file() {
                PathKind::File
            } else {
                PathKind::Other
            }),
            uid: meta.uid(),
            mode: meta.mode(),
        },
        Err(_) => PathFacts {
            path: path.to_path_buf(),
            kind: None,
            uid: 0,
            mode: 0,
        },
    }
}

/// `HERDR_BIN_PATH` (set for plugin processes), else `herdr` on PATH.
fn find_herdr() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HERDR_BIN_PATH").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Some(path);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("herdr"))
        .find(|candidate| {
            std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
        })
}

/// Runs herdr with stdin closed; its stdout on success, else the first
/// line of stderr (or the exit status). Killed, with its process group,
/// after `timeout` (`herdr::client::run_cli_within`, the one way herdr's CLI
/// is run).
pub(crate) fn run_with_timeout(
    program: &Path,
    args: &[&str],
    timeout: Duration,
) -> Result<String, String> {
    let finished =
        crate::herdr::client::run_cli_within(program, args, timeout).map_err(|e| match e {
            RunError::TimedOut(_) => format!("timed out after {} s", timeout.as_secs()),
            other => other.to_string(),
        })?;
    let out = String::from_utf8_lossy(&finished.stdout).into_owned();
    let err = String::from_utf8_lossy(&finished.stderr);
    match finished.status {
        status if status.success() => Ok(out),
        status => Err(err
            .lines()
            .find(|line| !line.trim().is_empty())
            .map_or_else(|| status.to_string(), |line| line.trim().to_owned())),
    }
}

/// The HTTP status of `GET <relay>/push` (the relay answers 405 to GET).
fn relay_status(relay_url: &str) -> Result<u16, String> {
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(RELAY_TIMEOUT))
        .http_status_as_error(false)
        .build();
    let agent = ureq::Agent::new_with_config(config);
    agent
        .get(format!("{relay_url}/push"))
        .call()
        .map(|response| response.status().as_u16())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scratch::ScratchDir;

    #[test]
    fn a_hanging_herdr_is_given_up_on_at_the_timeout_with_its_children() {
        let scratch = ScratchDir::new("doctor-hang");
        let herdr = scratch.join("herdr");
        let (pid_file, done) = (scratch.join("child.pid"), scratch.join("done"));
        // The child of the script keeps the output pipes open: killing the
        // script alone would leave doctor waiting for them, until the child
        // ends and says so.
        let script = format!(
            "#!/bin/sh\n(sleep 60; echo > '{}') &\necho $! > '{}'\nwait\n",
            done.display(),
            pid_file.display()
        );
        std::fs::write(&herdr, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&herdr, std::fs::Permissions::from_mode(0o755)).unwrap();
        let result = run_with_timeout(&herdr, &["--version"], Duration::from_millis(300));
        assert_eq!(result, Err("timed out after 0 s".to_owned()));
        assert!(!done.exists(), "doctor waited for the child to end");
        // A SIGKILL takes effect asynchronously; a zombie counts as gone.
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let running = || {
            std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
                .is_ok_and(|stat| !stat.contains(") Z "))
        };
        let gone = (0..500).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            !running()
        });
        assert!(gone, "the child outlived the timeout");
    }

    #[test]
    fn stdout_on_success_else_the_first_stderr_line() {
        let ok = Path::new("/bin/echo");
        assert_eq!(
            run_with_timeout(ok, &["herdr 0.8.0"], HERDR_TIMEOUT),
            Ok("herdr 0.8.0\n".to_owned())
        );
        let sh = Path::new("/bin/sh");
        assert_eq!(
            run_with_timeout(sh, &["-c", "echo; echo ' bad ' >&2; exit 2"], HERDR_TIMEOUT),
            Err("bad".to_owned())
        );
        assert_eq!(
            run_with_timeout(sh, &["-c", "exit 3"], HERDR_TIMEOUT),
            Err("exit status: 3".to_owned())
        );
    }
}

//! `heeler doctor [--json] [--network]`: one command that tells a user why
//! pairing or notifications do not work on this Host.
//!
//! Code map:
//! - `facts.rs`: the facts every check reads, as plain values (types only).
//! - `probe.rs`: the effects (files, path metadata, the loopback SSH banner,
//!   `herdr`, the relay GET) that fill [`facts::Facts`].
//! - `report.rs`: [`report::Check`] and [`report::Status`], the text and
//!   JSON renderings.
//! - `binary.rs`: is this the static release binary (ELF `PT_INTERP`).
//! - `ssh.rs`: the SSH server, host keys, StrictModes, leftover Bootstrap
//!   Key lines.
//! - `herdr.rs`: the herdr version, the plugin in every running session.
//! - `config.rs`: pair.json, notify.json, notifications.json, the trust of
//!   the config and state dirs, the relay.
//! - `hooks.rs`: the last failures of the hook worker, from its log.
//! - this file: [`run`] (gather, decide, render) and [`decide`], the fixed
//!   order of the checks.
//!
//! Invariants:
//! - Each check is a pure function from facts to a [`report::Check`]: pass,
//!   warn or fail, a one-line summary, and for warn/fail a one-line fix. Only
//!   `probe.rs` has effects; the exit status is 0 when nothing failed.
//! - Doctor states no rule of its own about another module's files: it calls
//!   the owner (`pair::config`, `pair::host_key`, `pair::authorized_keys`,
//!   `hooks::settings`, `hooks::failure_log`, `base::dirs`), so it can never disagree with what
//!   pairing and the hooks actually do.
//! - The report never contains device tokens, Notification Keys, seeds or
//!   authorized_keys key blobs. Config files are summarised as counts.
//! - The check files import `facts.rs` and `report.rs`, never this file or
//!   `probe.rs`, so the module graph has no cycle.

pub mod binary;
pub mod config;
pub(crate) mod facts;
pub mod herdr;
pub mod hooks;
pub mod probe;
pub mod report;
pub mod ssh;

use crate::base::dirs::NoHome;
use crate::cli::DoctorArgs;
use crate::exit::Failure;
use facts::Facts;
use report::Check;

/// The checks, in report order, for the facts gathered on `os` by heeler
/// `version`. The relay check is there only when the relay was asked.
pub(crate) fn decide(facts: &Facts, os: &str, version: &str) -> Vec<Check> {
    let home = facts.home.as_ref();
    let config = facts.config.as_ref();
    let mut checks = vec![
        binary::check_binary(os, &facts.exe, &facts.exe_has_interpreter, version),
        binary::check_binary_trust(&facts.exe, &facts.exe_trust),
        ssh::check_ssh_server(facts.ssh_port, &facts.ssh_banner, facts.ssh_service),
        ssh::check_host_keys(&facts.host_keys),
    ];
    match home {
        Ok(home) => {
            checks.push(ssh::check_ssh_modes(
                facts.uid,
                &home.home,
                &home.ssh_dir,
                &home.authorized_keys_facts,
            ));
            checks.push(ssh::check_bootstrap_lines(
                &home.authorized_keys,
                facts.now_unix,
                facts.pairings.as_ref(),
            ));
        }
        Err(no_home) => checks.push(check_home(no_home, config.is_err())),
    }
    checks.push(herdr::check_herdr(
        facts.herdr.as_deref(),
        &facts.herdr_version,
    ));
    checks.push(herdr::check_plugin_sessions(&facts.plugin_lists, version));
    if let Ok(files) = config {
        checks.push(config::check_pair_json(&files.pair_json));
        checks.push(config::check_notify_json(
            &files.notify_json,
            &config::relay_url(Some(files)),
        ));
        checks.push(config::check_notifications_json(&files.notifications_json));
    }
    checks.extend(config::check_dir_trust(&facts.untrusted_dirs));
    if let Some((log, last)) = &facts.hook_failures {
        checks.extend(hooks::check_hook_failures(log, last));
    }
    if let Some(relay) = &facts.relay {
        checks.push(config::check_relay(&config::relay_url(config.ok()), relay));
    }
    checks
}

/// No home directory: the checks under it (and under the config directory,
/// when that derives from it too) cannot run, and saying so is a failure.
fn check_home(no_home: &NoHome, config_skipped: bool) -> Check {
    let skipped = if config_skipped {
        "~/.ssh, authorized_keys and the plugin config files were not checked"
    } else {
        "~/.ssh and authorized_keys were not checked"
    };
    Check::fail(
        "home",
        format!("{no_home}; {skipped}"),
        "set HOME to your home directory",
    )
}

pub fn run(args: DoctorArgs) -> Result<(), Failure> {
    let version = env!("CARGO_PKG_VERSION");
    let facts = probe::gather(args.network);
    let checks = decide(&facts, std::env::consts::OS, version);
    let output = if args.json {
        format!("{}\n", report::render_json(&checks, version))
    } else {
        let dir = match &facts.config {
            Ok(files) => files.dir.display().to_string(),
            Err(_) => "unknown".to_owned(),
        };
        format!(
            "heeler doctor (config: {dir})\n{}",
            report::render_text(&checks)
        )
    };
    crate::exit::write_stdout(&output)?;
    if report::any_failed(&checks) {
        Err(Failure::new(
            "heeler doctor: some checks failed (see fix: lines)",
            1,
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::facts::{ConfigFacts, FileRead, HomeFacts, PairJson, PathFacts, PathKind};
    use crate::doctor::report::Status;
    use std::path::PathBuf;

    fn path_facts(path: &str, kind: PathKind, mode: u32) -> PathFacts {
        PathFacts {
            path: PathBuf::from(path),
            kind: Some(kind),
            uid: 1000,
            mode,
        }
    }

    fn home() -> HomeFacts {
        HomeFacts {
            home: path_facts("/home/u", PathKind::Directory, 0o40755),
            ssh_dir: path_facts("/home/u/.ssh", PathKind::Directory, 0o40700),
            authorized_keys_facts: path_facts(
                "/home/u/.ssh/authorized_keys",
                PathKind::File,
                0o100600,
            ),
            authorized_keys: FileRead::Text("ssh-ed25519 AAAA phone\n".to_owned()),
        }
    }

    fn config() -> ConfigFacts {
        ConfigFacts {
            dir: PathBuf::from("/cfg/heeler"),
            pair_json: PairJson::Missing,
            notify_json: FileRead::Missing,
            notifications_json: FileRead::Missing,
        }
    }

    fn facts(home: Result<HomeFacts, NoHome>, config: Result<ConfigFacts, NoHome>) -> Facts {
        Facts {
            exe: PathBuf::from("/p/bin/heeler"),
            exe_has_interpreter: Ok(false),
            exe_trust: Ok(()),
            ssh_port: 22,
            ssh_banner: Ok("SSH-2.0-OpenSSH_9.6".to_owned()),
            ssh_service: facts::SshService::Unknown,
            host_keys: Vec::new(),
            uid: 1000,
            home,
            now_unix: 1_800_000_000,
            herdr: None,
            herdr_version: Err("herdr not found".to_owned()),
            plugin_lists: Vec::new(),
            untrusted_dirs: Vec::new(),
            config,
            relay: None,
            hook_failures: None,
            pairings: None,
        }
    }

    fn ids(checks: &[Check]) -> Vec<&str> {
        checks.iter().map(|c| c.id).collect()
    }

    #[test]
    fn the_checks_come_in_a_fixed_order() {
        let checks = decide(&facts(Ok(home()), Ok(config())), "linux", "0.8.0");
        assert_eq!(
            ids(&checks),
            [
                "binary",
                "binary_trust",
                "ssh_server",
                "host_keys",
                "ssh_modes",
                "bootstrap_lines",
                "herdr",
                "plugin",
                "pair_json",
                "notify_json",
                "notifications_json"
            ]
        );
        let mut asked = facts(Ok(home()), Ok(config()));
        asked.relay = Some(Ok(405));
        let checks = decide(&asked, "linux", "0.8.0");
        let relay = checks.last().cloned();
        assert_eq!(relay.as_ref().map(|c| c.id), Some("relay"));
        assert!(
            relay.is_some_and(|c| c.summary.starts_with("https://heeler-apns.bybee.dev ")),
            "{checks:?}"
        );
    }

    #[test]
    fn an_untrusted_dir_is_a_failing_check_before_the_relay() {
        use crate::base::dirs::{Problem, Untrusted};
        let mut untrusted = facts(Ok(home()), Ok(config()));
        untrusted.relay = Some(Ok(405));
        untrusted.untrusted_dirs = vec![
            Untrusted {
                path: PathBuf::from("/s"),
                problem: Problem::Writable { mode: 0o777 },
            },
            Untrusted {
                path: PathBuf::from("/c"),
                problem: Problem::Owner {
                    owner: 7,
                    euid: 1000,
                },
            },
        ];
        let checks = decide(&untrusted, "linux", "0.8.0");
        let n = checks.len();
        assert_eq!(ids(&checks)[n - 2..], ["dir_trust", "relay"]);
        let check = &checks[n - 2];
        assert_eq!(check.status, Status::Fail);
        assert_eq!(
            check.summary,
            "/s is writable by group or others (mode 0777); \
             /c is owned by uid 7, not by uid 1000 running heeler: \
             heeler refuses to read state or config there"
        );
        assert_eq!(check.fix.as_deref(), Some("run `chmod go-w /s`"));
    }

    /// Every path a check names, read off its summary and fix.
    fn named_paths(checks: &[Check]) -> Vec<String> {
        checks
            .iter()
            .flat_map(|c| [c.summary.as_str(), c.fix.as_deref().unwrap_or("")])
            .flat_map(str::split_whitespace)
            .filter(|word| word.contains(".ssh") || word.contains("authorized_keys"))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn without_a_home_one_check_fails_and_nothing_under_it_is_checked() {
        let checks = decide(&facts(Err(NoHome), Err(NoHome)), "linux", "0.8.0");
        assert_eq!(
            ids(&checks),
            [
                "binary",
                "binary_trust",
                "ssh_server",
                "host_keys",
                "home",
                "herdr",
                "plugin"
            ]
        );
        let home = &checks[4];
        assert_eq!(home.status, Status::Fail);
        assert!(
            home.summary
                .starts_with("cannot determine the home directory"),
            "{home:?}"
        );
        assert!(
            home.summary
                .contains("plugin config files were not checked")
        );
        assert_eq!(home.fix.as_deref(), Some("set HOME to your home directory"));
        // No check looked at a relative .ssh or authorized_keys: the only
        // mention is the home check's own "~/.ssh".
        assert_eq!(
            named_paths(&checks),
            ["~/.ssh,", "authorized_keys"],
            "{checks:?}"
        );
        assert!(report::any_failed(&checks));
    }

    #[test]
    fn a_config_dir_without_a_home_is_still_checked() {
        // XDG_CONFIG_HOME (or HERDR_PLUGIN_CONFIG_DIR) names the config
        // directory even when no home directory is known.
        let checks = decide(&facts(Err(NoHome), Ok(config())), "linux", "0.8.0");
        assert_eq!(
            ids(&checks),
            [
                "binary",
                "binary_trust",
                "ssh_server",
                "host_keys",
                "home",
                "herdr",
                "plugin",
                "pair_json",
                "notify_json",
                "notifications_json"
            ]
        );
        assert!(
            checks[4]
                .summary
                .ends_with("~/.ssh and authorized_keys were not checked")
        );
    }
}

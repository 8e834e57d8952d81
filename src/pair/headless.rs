//! `heeler pair --no-ui`: the pairing ceremony without the popup, for
//! headless servers and scripts.
//!
//! Prints the Pairing Code as the only stdout line, then waits: when a
//! device enrolls it prints `enrolled SHA256:… [<label>]` and exits 0 (or,
//! when the Device Key was already authorized and the ceremony added
//! nothing, `already authorized SHA256:… [<label>]`, exit 0); when
//! the code expires it cleans up and exits 1; SIGINT, SIGTERM and SIGHUP
//! remove the bootstrap line before exiting (128 + signal). Whatever ends
//! the wait, the ceremony's locked end reads `authorized_keys`, and a
//! Device Key this ceremony enrolled that is there is printed, also on a
//! signal (then with the signal's status); an enrolled record whose key is
//! not there (an `accept` killed between the two) is never reported
//! ([`exit_of`], pure, decides the exit). Progress and hints go to stderr.
//! `--config-only` prints a code without a Bootstrap Key and exits at once,
//! with or without `--no-ui`. Before any code, the SSH preflight
//! (`pair::preflight`) must pass unless `--no-ssh-check`.
//!
//! Test-only environment (never set these in production):
//! `HEELER_TEST_PAIRING_TTL_SECONDS` sets the Bootstrap Key's TTL, and
//! `HEELER_TEST_HOST_KEY_DIR` replaces `/etc/ssh` as the host key directory;
//! in debug builds, `HEELER_TEST_PAUSE` stops at a named step
//! ([`ceremony::pause_point`]). Release builds narrow the first two to
//! what weakens nothing, because `.ci/static-check` runs the sshd
//! enrollment tests (short codes) and the popup benchmark against release
//! binaries ([`test_ttl`], [`host_key_dir_choice`], both pure): a TTL may
//! only be shorter than the standard one (a longer one is refused), and
//! the host key directory is only a fallback for a machine whose
//! `/etc/ssh` holds no host key, so it can never re-pin a real Host's key.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::base::dirs;
use crate::base::sys;
use crate::cli::PairArgs;
use crate::exit::Failure;
use crate::pair::addresses;
use crate::pair::ceremony::{self, CeremonyConfig};
use crate::pair::config;
use crate::pair::host_key;
use crate::pair::preflight;
use crate::wire::pairing_code::{self, Payload};

/// How often the wait loop looks for an enrollment or a signal.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// Test-only: overrides the Bootstrap Key TTL (seconds).
pub(crate) const TEST_TTL_ENV: &str = "HEELER_TEST_PAIRING_TTL_SECONDS";
/// Test-only: overrides the host key directory.
pub(crate) const TEST_HOST_KEY_DIR_ENV: &str = "HEELER_TEST_HOST_KEY_DIR";

/// Whether the test-only variables are honoured in full: in debug builds,
/// which the integration tests run (see the module doc).
const FULL_TEST_ENV: bool = cfg!(debug_assertions);

/// The TTL `HEELER_TEST_PAIRING_TTL_SECONDS` (`value`) asks for (pure):
/// `None` when unset or not a number; a positive TTL (at least 1 s); with
/// `full` false (release builds) only a TTL up to the standard one, and an
/// error naming the variable for a longer one.
pub(crate) fn test_ttl(value: Option<&str>, full: bool) -> Result<Option<i64>, String> {
    let Some(ttl) = value.and_then(|v| v.trim().parse::<i64>().ok()) else {
        return Ok(None);
    };
    let ttl = ttl.max(1);
    if !full && ttl > ceremony::PAIRING_TTL_SECONDS {
        return Err(format!(
            "{TEST_TTL_ENV}={ttl} is refused: release builds only shorten the {} s Pairing Code lifetime",
            ceremony::PAIRING_TTL_SECONDS
        ));
    }
    Ok(Some(ttl))
}

/// The TTL override of this process's environment ([`test_ttl`]).
pub(crate) fn ttl_override() -> Result<Option<i64>, String> {
    test_ttl(std::env::var(TEST_TTL_ENV).ok().as_deref(), FULL_TEST_ENV)
}

/// The host key directory (pure): `HEELER_TEST_HOST_KEY_DIR` (`var`) in
/// full (debug builds), otherwise only when `/etc/ssh` holds no host key
/// (`default_has_key` false); else `/etc/ssh`.
pub(crate) fn host_key_dir_choice(
    var: Option<PathBuf>,
    default_has_key: bool,
    full: bool,
) -> PathBuf {
    match var {
        Some(dir) if full || !default_has_key => dir,
        _ => PathBuf::from(host_key::DEFAULT_DIR),
    }
}

/// The host key directory of this process ([`host_key_dir_choice`]).
pub(crate) fn host_key_dir() -> PathBuf {
    let var = env_path(TEST_HOST_KEY_DIR_ENV);
    // The default is looked at only when the variable would replace it.
    let default_has_key = var.is_some()
        && !FULL_TEST_ENV
        && !matches!(
            host_key::find(std::path::Path::new(host_key::DEFAULT_DIR)),
            Ok(None)
        );
    host_key_dir_choice(var, default_has_key, FULL_TEST_ENV)
}

fn fail(line: impl Into<String>) -> Failure {
    Failure::new(format!("heeler pair: {}", line.into()), 1)
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Writes one stdout line; a closed stdout is not worth a panic.
fn print_line(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

fn note(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The command (`heeler pair --no-ui`, and `heeler pair --config-only`,
/// which needs no popup; otherwise `main` runs the popup instead).
pub fn run(args: PairArgs) -> Result<(), Failure> {
    if let Some(problem) = addresses::command_line_problem(&args.address) {
        return Err(fail(problem));
    }
    let dirs = dirs::Env::process();
    let home = dirs.home().map_err(|e| fail(e.to_string()))?;
    let config_dir = dirs.plugin_config_dir().map_err(|e| fail(e.to_string()))?;
    let state_dir = dirs.plugin_state_dir().map_err(|e| fail(e.to_string()))?;
    let host_key_dir = host_key_dir();
    let host_key = host_key::find(&host_key_dir)
        .map_err(|e| fail(e.to_string()))?
        .ok_or_else(|| {
            fail(format!(
                "no SSH host key found under {}; run `sudo ssh-keygen -A`",
                host_key_dir.display()
            ))
        })?;
    let user =
        host_key::username().map_err(|e| fail(format!("cannot determine the user name: {e}")))?;
    let config = config::read(Some(&config_dir));
    for warning in config.warning_lines() {
        note(&warning);
    }
    let port = config.ssh_port;
    let addrs = if args.address.is_empty() {
        pre_checked_addresses(&config.addresses)?
    } else {
        args.address.clone()
    };
    let payload = Payload {
        addrs,
        port,
        user,
        fp: host_key.fingerprint,
        bootstrap: None,
    };
    // The forced command runs this binary for the phone: refuse to name one
    // another user could replace (sshd's StrictModes rule, base::dirs).
    // Checked first: no fix elsewhere makes such a ceremony safe. A code
    // without a Bootstrap Key names no binary.
    let exe = ceremony::current_exe().map_err(|e| fail(e.to_string()))?;
    if !args.config_only {
        crate::base::dirs::trusted_binary(&exe).map_err(|e| fail(e.to_string()))?;
    }
    if !args.no_ssh_check {
        preflight(port)?;
    }
    if args.config_only {
        let code = pairing_code::encode_v1(&payload)
            .map_err(|e| fail(format!("invalid Pairing Code: {e}")))?;
        print_line(&code);
        return Ok(());
    }

    let state_dir = std::path::absolute(state_dir).map_err(|e| fail(e.to_string()))?;
    let config = CeremonyConfig::new(&home, &state_dir, &exe);
    pair(config, payload)
}

/// The popup's pre-checked candidates: pair.json `addresses` (`listed`),
/// else the best likely address of the primary interface.
fn pre_checked_addresses(listed: &[String]) -> Result<Vec<String>, Failure> {
    let interfaces: Vec<addresses::InterfaceAddress> = sys::interface_addresses()
        .map_err(|e| fail(format!("cannot list network interfaces: {e}")))?
        .into_iter()
        .map(Into::into)
        .collect();
    let checked: Vec<String> =
        addresses::candidates(&interfaces, addresses::primary_interface(), listed)
            .into_iter()
            .filter(|c| c.pre_checked)
            .map(|c| c.address)
            .collect();
    if checked.is_empty() {
        return Err(fail(
            "No routable network address found. Connect to a LAN or VPN and retry, or pass --address.",
        ));
    }
    Ok(checked)
}

/// Opens a ceremony, prints its Pairing Code (`payload` with the
/// ceremony's Bootstrap Key) and waits for it to end.
fn pair(mut config: CeremonyConfig, mut payload: Payload) -> Result<(), Failure> {
    if let Some(ttl) = ttl_override().map_err(fail)? {
        config.ttl_seconds = ttl;
    }
    sys::catch_termination_signals().map_err(|e| fail(format!("cannot catch signals: {e}")))?;
    ceremony::sweep(
        &config.home,
        &config.state_dir,
        crate::base::clock::unix_seconds(),
    )
    .map_err(|e| fail(format!("sweep failed: {e}")))?;
    let ceremony =
        ceremony::begin(&config).map_err(|e| fail(format!("Could not start pairing: {e}")))?;
    payload.bootstrap = Some(ceremony.bootstrap());
    let code = match pairing_code::encode_v1(&payload) {
        Ok(code) => code,
        Err(e) => {
            let _ = ceremony.end();
            return Err(fail(format!("invalid Pairing Code: {e}")));
        }
    };
    print_line(&code);
    note(&format!(
        "{} on port {}, host key {}; code valid for {} s, single use",
        payload.user, payload.port, payload.fp, config.ttl_seconds
    ));
    wait(&ceremony)
}

/// Doctor's SSH server check on the advertised port, before any code is
/// printed: a failure is exit 1 with its reason and fix on one line.
fn preflight(port: u16) -> Result<(), Failure> {
    match preflight::verdict(&preflight::check(port)) {
        preflight::Verdict::Proceed => Ok(()),
        preflight::Verdict::ProceedWithWarning(line) => {
            note(&line);
            Ok(())
        }
        preflight::Verdict::Refuse(reason) => Err(fail(preflight::refusal_line(&reason))),
    }
}

/// The stdout line of a finished ceremony: `enrolled …` when it appended
/// the Device Key, `already authorized …` when the key was there already.
pub(crate) fn outcome_line(enrolled: &ceremony::Enrolled) -> String {
    let what = if enrolled.appended {
        "enrolled"
    } else {
        "already authorized"
    };
    match &enrolled.comment {
        Some(comment) => format!("{what} {} {comment}", enrolled.fingerprint),
        None => format!("{what} {}", enrolled.fingerprint),
    }
}

/// What ended the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// A poll saw an enrollment.
    Enrolled,
    /// The TTL ran out.
    Expired,
    /// A termination signal arrived.
    Signal(i32),
}

/// How `pair --no-ui` exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exit {
    /// The stdout line (an enrollment).
    pub stdout: Option<String>,
    /// The stderr lines.
    pub stderr: Vec<String>,
    /// The exit status.
    pub status: u8,
}

/// The pure exit of a ceremony from what ended it and what its locked end
/// ([`ceremony::Ceremony::end`]) found in the key file: an enrollment is
/// printed whatever ended the wait (a signal keeps its 128 + signal
/// status, and says the key stays); nothing enrolled is the expiry's exit
/// 1 or the signal's status.
pub(crate) fn exit_of(trigger: Trigger, ended: Result<Option<ceremony::Enrolled>, String>) -> Exit {
    match ended {
        Ok(Some(enrolled)) => {
            let mut stderr = Vec::new();
            if !enrolled.appended {
                stderr.push(
                    "This Device Key was already authorized; nothing was added to authorized_keys."
                        .to_owned(),
                );
            }
            let status = match trigger {
                Trigger::Signal(signal) => {
                    stderr.push(format!(
                        "heeler pair: stopped by signal {signal}; the Bootstrap Key was removed; the Device Key above enrolled and stays in authorized_keys"
                    ));
                    crate::exit::signal_status(signal)
                }
                Trigger::Enrolled | Trigger::Expired => 0,
            };
            Exit {
                stdout: Some(outcome_line(&enrolled)),
                stderr,
                status,
            }
        }
        Ok(None) => {
            let (line, status) = match trigger {
                Trigger::Signal(signal) => (
                    format!(
                        "heeler pair: stopped by signal {signal}; the Bootstrap Key was removed"
                    ),
                    crate::exit::signal_status(signal),
                ),
                Trigger::Expired => (
                    "heeler pair: Pairing Code expired; the Bootstrap Key was removed".to_owned(),
                    1,
                ),
                Trigger::Enrolled => (
                    "heeler pair: the enrolled Device Key is no longer in authorized_keys; the Bootstrap Key was removed".to_owned(),
                    1,
                ),
            };
            Exit {
                stdout: None,
                stderr: vec![line],
                status,
            }
        }
        Err(error) => {
            let (line, status) = match trigger {
                Trigger::Signal(signal) => (
                    format!("heeler pair: stopped by signal {signal}; cleanup failed: {error}"),
                    crate::exit::signal_status(signal),
                ),
                Trigger::Expired => (format!("heeler pair: expiry failed: {error}"), 1),
                Trigger::Enrolled => (
                    format!("heeler pair: cannot confirm the enrollment: {error}"),
                    1,
                ),
            };
            Exit {
                stdout: None,
                stderr: vec![line],
                status,
            }
        }
    }
}

/// Polls until an enrollment, the expiry or a signal, then ends the
/// ceremony under the lock and exits with what the key file holds.
fn wait(ceremony: &ceremony::Ceremony) -> Result<(), Failure> {
    let trigger = loop {
        if let Some(signal) = sys::termination_signal() {
            break Trigger::Signal(signal);
        }
        if ceremony.poll_enrolled().is_some() {
            break Trigger::Enrolled;
        }
        if crate::base::clock::unix_seconds() >= ceremony.expires_at() {
            break Trigger::Expired;
        }
        ceremony::pause_point("poll");
        std::thread::sleep(POLL_INTERVAL);
    };
    // A signal that arrives now changes nothing: the end reports whatever
    // enrolled.
    let exit = exit_of(trigger, ceremony.end().map_err(|e| e.to_string()));
    if let Some(line) = &exit.stdout {
        print_line(line);
    }
    let mut stderr = exit.stderr;
    let last = stderr.pop();
    for line in stderr {
        note(&line);
    }
    match (last, exit.status) {
        (None, 0) => Ok(()),
        (Some(line), 0) => {
            note(&line);
            Ok(())
        }
        (last, status) => Err(Failure::new(last.unwrap_or_default(), status)),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn release_builds_take_the_test_ttl_only_to_shorten_it() {
        for full in [true, false] {
            assert_eq!(test_ttl(None, full), Ok(None));
            assert_eq!(test_ttl(Some("x"), full), Ok(None));
            assert_eq!(test_ttl(Some("2"), full), Ok(Some(2)));
            assert_eq!(test_ttl(Some("0"), full), Ok(Some(1)));
            assert_eq!(test_ttl(Some("120"), full), Ok(Some(120)));
        }
        assert_eq!(test_ttl(Some("86400"), true), Ok(Some(86_400)));
        assert_eq!(
            test_ttl(Some("86400"), false),
            Err(
                "HEELER_TEST_PAIRING_TTL_SECONDS=86400 is refused: release builds only shorten the 120 s Pairing Code lifetime"
                    .to_owned()
            )
        );
    }

    #[test]
    fn release_builds_never_let_the_test_host_key_dir_re_pin_a_real_host() {
        let dir = || Some(PathBuf::from("/tmp/keys"));
        let etc = PathBuf::from("/etc/ssh");
        // Debug builds (the integration tests): the variable wins.
        assert_eq!(
            host_key_dir_choice(dir(), true, true),
            PathBuf::from("/tmp/keys")
        );
        // Release builds: only where /etc/ssh holds no host key at all.
        assert_eq!(host_key_dir_choice(dir(), true, false), etc);
        assert_eq!(
            host_key_dir_choice(dir(), false, false),
            PathBuf::from("/tmp/keys")
        );
        assert_eq!(host_key_dir_choice(None, false, false), etc);
        assert_eq!(host_key_dir_choice(None, true, true), etc);
        // This build is the one the tests run: debug, honouring them.
        assert_eq!(FULL_TEST_ENV, cfg!(debug_assertions));
    }
    use super::*;

    fn enrolled(appended: bool) -> ceremony::Enrolled {
        ceremony::Enrolled {
            pairing_id: "p".into(),
            expires_at: 0,
            fingerprint: "SHA256:f".into(),
            line: "ssh-ed25519 AAAA phone".into(),
            comment: Some("phone".into()),
            appended,
        }
    }

    #[test]
    fn an_enrollment_is_reported_whatever_ended_the_wait() {
        for trigger in [Trigger::Enrolled, Trigger::Expired, Trigger::Signal(15)] {
            let exit = exit_of(trigger, Ok(Some(enrolled(true))));
            assert_eq!(exit.stdout.as_deref(), Some("enrolled SHA256:f phone"));
            let status = if trigger == Trigger::Signal(15) {
                143
            } else {
                0
            };
            assert_eq!(exit.status, status, "{trigger:?}");
        }
        let stopped = exit_of(Trigger::Signal(2), Ok(Some(enrolled(true))));
        assert_eq!(
            stopped.stderr,
            [
                "heeler pair: stopped by signal 2; the Bootstrap Key was removed; the Device Key above enrolled and stays in authorized_keys"
            ]
        );
        let known = exit_of(Trigger::Enrolled, Ok(Some(enrolled(false))));
        assert_eq!(
            known.stdout.as_deref(),
            Some("already authorized SHA256:f phone")
        );
        assert_eq!(
            known.stderr,
            ["This Device Key was already authorized; nothing was added to authorized_keys."]
        );
    }

    #[test]
    fn nothing_enrolled_is_the_expiry_or_the_signal() {
        let signal = exit_of(Trigger::Signal(15), Ok(None));
        assert_eq!(
            (signal.stdout, signal.stderr, signal.status),
            (
                None,
                vec!["heeler pair: stopped by signal 15; the Bootstrap Key was removed".to_owned()],
                143
            )
        );
        let expired = exit_of(Trigger::Expired, Ok(None));
        assert_eq!(expired.status, 1);
        assert_eq!(
            expired.stderr,
            ["heeler pair: Pairing Code expired; the Bootstrap Key was removed"]
        );
        let vanished = exit_of(Trigger::Enrolled, Ok(None));
        assert_eq!((vanished.stdout, vanished.status), (None, 1));
        let failed = exit_of(Trigger::Signal(1), Err("lock timeout".into()));
        assert_eq!(failed.status, 129);
        assert_eq!(
            failed.stderr,
            ["heeler pair: stopped by signal 1; cleanup failed: lock timeout"]
        );
        assert_eq!(exit_of(Trigger::Expired, Err("x".into())).status, 1);
    }

    #[test]
    fn the_outcome_line_tells_an_addition_from_a_key_already_there() {
        let enrolled = |appended, comment: Option<&str>| ceremony::Enrolled {
            pairing_id: "p".into(),
            expires_at: 0,
            fingerprint: "SHA256:f".into(),
            line: "ssh-ed25519 AAAA".into(),
            comment: comment.map(Into::into),
            appended,
        };
        assert_eq!(
            outcome_line(&enrolled(true, Some("iPhone 15"))),
            "enrolled SHA256:f iPhone 15"
        );
        assert_eq!(outcome_line(&enrolled(true, None)), "enrolled SHA256:f");
        assert_eq!(
            outcome_line(&enrolled(false, Some("iPhone"))),
            "already authorized SHA256:f iPhone"
        );
        assert_eq!(
            outcome_line(&enrolled(false, None)),
            "already authorized SHA256:f"
        );
    }
}

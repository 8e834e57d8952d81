//! `heeler pair`: the pairing popup. The user confirms which addresses go
//! into the Pairing Code, scans the QR with the Heeler app, and sees the
//! Device Key that enrolled (and can revoke it).
//!
//! herdr runs it in a popup pane; it also runs in any terminal, using
//! herdr's default directories. Every decision is pure and lives elsewhere:
//! what an input does to the popup in `machine`, the screens in `screen`,
//! the checklist in `checklist`, and the addresses, pair.json, endpoint and
//! Tailscale rules in their `pair` modules. This module is the thin loop
//! that gathers the inputs (keys, ticks, background answers), feeds them to
//! the machine and performs the effects it returns on the ceremony, the
//! terminal, the clipboard and the clock. Whatever way it ends, the active
//! Bootstrap Key is removed and the terminal restored, and a device the
//! ceremony's end finds enrolled is shown (a key on the QR screen) or
//! printed after the terminal is restored (a signal), never dropped.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use crate::base::keys;
use crate::base::sys;
use crate::base::terminal::{self, PopupTerminal};
use crate::base::tz;
use crate::cli::PairArgs;
use crate::exit::Failure;
use crate::pair::addresses::{self, Candidate, InterfaceAddress};
use crate::pair::ceremony::{self, Ceremony, CeremonyConfig};
use crate::pair::config::{self, PairConfig};
use crate::pair::endpoint::{self, HerdrEnv, Plan};
use crate::pair::headless;
use crate::pair::host_key;
use crate::pair::popup::checklist::Checklist;
use crate::pair::popup::clipboard;
use crate::pair::popup::machine::{
    Effect, EndpointStatus, Input, Phase, Popup, QrState, SshStatus,
};
use crate::pair::popup::qr::Qr;
use crate::pair::popup::screen::{self, ChecklistNotes, Hint, QrDetails};
use crate::pair::preflight;
use crate::pair::tailscale::{self, TailscaleSsh};
use crate::wire::pairing_code::{self, Endpoint, Payload};

/// How long the loop waits for a key before it looks at the clock, the
/// enrolled file, signals and the terminal size again. Enrollment shows
/// within this (well under the 0.5 s the popup promises).
const TICK: Duration = Duration::from_millis(100);
/// What a launcher test that vanished without an answer reads as.
const LAUNCHER_TEST_STOPPED: &str = "The launcher test stopped unexpectedly.";

/// Everything gathered once when the popup opens.
struct Setup {
    home: PathBuf,
    state_dir: PathBuf,
    config_dir: PathBuf,
    machine: String,
    user: String,
    fingerprint: String,
    /// pair.json as read at open (addresses, launcher and their warnings).
    opened_config: PairConfig,
    ttl_override: Option<i64>,
}

/// How the loop ends.
enum Ending {
    /// Exit 0.
    Close,
    /// A termination signal: exit 128 + the signal, like `pair --no-ui`.
    Signal(i32),
    /// Exit 1 with the fatal screen's message.
    Fail(Vec<String>),
}

/// The open popup: the machine's state and the effects' handles.
struct Session {
    setup: Setup,
    terminal: PopupTerminal,
    popup: Popup,
    /// The Tailscale probe's answer, until it arrives.
    tailscale: Option<Receiver<TailscaleSsh>>,
    /// The first SSH preflight's result, until it arrives.
    ssh: Option<Receiver<preflight::Finding>>,
    /// The launcher test's outcome, until it arrives.
    launcher: Option<Receiver<Result<Endpoint, String>>>,
    ceremony: Option<Ceremony>,
    /// A repaint was asked for and not yet done.
    dirty: bool,
}

fn fatal_failure(message: &[String]) -> Failure {
    let first = message.first().map(String::as_str).unwrap_or_default();
    Failure::new(format!("heeler pair: Pairing cannot start: {first}"), 1)
}

/// The command: `heeler pair` without `--no-ui`.
pub fn run(args: PairArgs) -> Result<(), Failure> {
    if !terminal::is_terminal() {
        return Err(Failure::new(
            "heeler pair must run inside a terminal pane (or use heeler pair --no-ui)",
            1,
        ));
    }
    let terminal = PopupTerminal::enter()
        .map_err(|e| Failure::new(format!("heeler pair: cannot set up the terminal: {e}"), 1))?;
    sys::catch_termination_signals()
        .map_err(|e| Failure::new(format!("heeler pair: cannot catch signals: {e}"), 1))?;
    let keys = terminal::key_reader();
    let (setup, candidates) = match gather(&args.address) {
        Ok(found) => found,
        Err(message) => return run_fatal(terminal, &message, &keys),
    };
    let plan = endpoint::plan(
        &HerdrEnv::from_process(setup.home.clone(), plugin_id().as_str()),
        setup.opened_config.launcher.as_deref(),
    );
    let (endpoint, launcher) = start_endpoint(plan, &setup.home);
    let may_be_tailnet = candidates
        .iter()
        .any(|c| tailscale::may_be_tailnet(&c.address));
    let mut popup = Popup::new(Checklist::new(candidates), endpoint, PopupTerminal::size());
    let mut ssh = None;
    if !args.no_ssh_check {
        // Shown on the checklist as soon as it answers; Enter checks again.
        popup.ssh = SshStatus::Checking;
        let port = config::read(Some(&setup.config_dir)).ssh_port;
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(preflight::check(port));
        });
        ssh = Some(receiver);
    }
    let mut session = Session {
        setup,
        terminal,
        popup,
        tailscale: None,
        ssh,
        launcher,
        ceremony: None,
        dirty: false,
    };
    session.repaint();
    if may_be_tailnet {
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(tailscale::probe());
        });
        session.tailscale = Some(receiver);
    }
    let ending = session.run_loop(&keys);
    let unshown = session.close();
    finish(ending, unshown)
}

fn plugin_id() -> String {
    std::env::var("HERDR_PLUGIN_ID")
        .ok()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| crate::base::dirs::PLUGIN_ID.to_owned())
}

/// A fatal screen before anything started: wait for a key, exit 1.
fn run_fatal(
    mut terminal: PopupTerminal,
    message: &[String],
    keys: &Receiver<Vec<u8>>,
) -> Result<(), Failure> {
    let _ = terminal.paint(&screen::fit(
        &screen::Screen::fixed(screen::fatal(message)),
        PopupTerminal::size(),
    ));
    loop {
        if sys::termination_signal().is_some() {
            break;
        }
        match keys.recv_timeout(TICK) {
            Ok(_) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
    drop(terminal);
    Err(fatal_failure(message))
}

/// Host key, user, addresses, directories: everything the checklist needs.
/// A problem is the fatal screen's message.
fn gather(command_line: &[String]) -> Result<(Setup, Vec<Candidate>), Vec<String>> {
    if let Some(problem) = addresses::command_line_problem(command_line) {
        return Err(vec![problem]);
    }
    let dirs = crate::base::dirs::Env::process();
    let no_home = |_| vec!["Cannot determine the home directory.".to_owned()];
    let home = dirs.home().map_err(no_home)?;
    let state_dir = dirs.plugin_state_dir().map_err(no_home)?;
    let config_dir = dirs.plugin_config_dir().map_err(no_home)?;
    let state_dir = std::path::absolute(state_dir)
        .map_err(|e| vec![format!("Cannot resolve the plugin state directory: {e}")])?;
    let host_key_dir = headless::host_key_dir();
    let host_key = host_key::find(&host_key_dir)
        .map_err(|e| vec![e.to_string()])?
        .ok_or_else(|| screen::no_host_key_message(&host_key_dir.to_string_lossy()))?;
    let user =
        host_key::username().map_err(|e| vec![format!("Cannot determine the user name: {e}")])?;
    let opened_config = config::read(Some(&config_dir));
    let interfaces: Vec<InterfaceAddress> = sys::interface_addresses()
        .unwrap_or_default()
        .into_iter()
        .map(InterfaceAddress::from)
        .collect();
    let candidates = addresses::candidates_with_command_line(
        &interfaces,
        addresses::primary_interface(),
        command_line,
        &opened_config.addresses,
    );
    if candidates.is_empty() {
        return Err(vec![screen::NO_ADDRESS.to_owned()]);
    }
    // A killed popup's line dies with its TTL; sweep it now. A failure here
    // shows up again, with its reason, when the ceremony starts.
    let _ = ceremony::sweep(&home, &state_dir, crate::base::clock::unix_seconds());
    let ttl_override = headless::ttl_override().map_err(|e| vec![e])?;
    Ok((
        Setup {
            home,
            state_dir,
            config_dir,
            machine: sys::hostname().unwrap_or_else(|| "this machine".to_owned()),
            user,
            fingerprint: host_key.fingerprint,
            opened_config,
            ttl_override,
        },
        candidates,
    ))
}

/// Starts testing a v2 launcher in the background (it may take 5 s); the
/// receiver brings its outcome.
fn start_endpoint(
    plan: Plan,
    home: &Path,
) -> (EndpointStatus, Option<Receiver<Result<Endpoint, String>>>) {
    match plan {
        Plan::V1 => (EndpointStatus::V1(None), None),
        Plan::V1Warning(warning) => (EndpointStatus::V1(Some(warning)), None),
        Plan::Refused(why) => (EndpointStatus::Refused(why), None),
        Plan::V2 {
            sock,
            config_dir,
            launcher,
        } => {
            let line = format!("Endpoint {sock} via {}", launcher.path());
            let (sender, result) = mpsc::channel();
            let home = home.to_path_buf();
            let id = plugin_id();
            std::thread::spawn(move || {
                let outcome = endpoint::prepare(&sock, &config_dir, &launcher, &id, &home);
                let _ = sender.send(outcome);
            });
            (EndpointStatus::Testing { line }, Some(result))
        }
    }
}

/// `HH:MM:SS` of an instant in the Host's zone.
fn local_time(unix: i64) -> String {
    let (h, m, s) = tz::process_host_zone().time_of_day(unix);
    format!("{h:02}:{m:02}:{s:02}")
}

/// The checklist's lines about the endpoint.
fn endpoint_lines(status: &EndpointStatus) -> Vec<String> {
    match status {
        EndpointStatus::V1(None) => Vec::new(),
        EndpointStatus::V1(Some(warning)) => vec![screen::bold(warning)],
        EndpointStatus::Testing { line } => vec![format!("{line} (testing the launcher…)")],
        EndpointStatus::Ready(endpoint) => vec![endpoint::endpoint_line(endpoint)],
        EndpointStatus::Refused(why) => vec![screen::bold(why)],
    }
}

impl Session {
    fn notes(&self) -> ChecklistNotes {
        let current = config::read(Some(&self.setup.config_dir));
        let mut warnings = Vec::new();
        if let Some(warning) = &current.port_warning {
            warnings.push(format!("{warning} Advertising {}.", current.ssh_port));
        }
        warnings.extend(self.setup.opened_config.addresses_warning.iter().cloned());
        warnings.extend(self.setup.opened_config.launcher_warning.iter().cloned());
        let selected = self.popup.list.selected();
        let selected: Vec<&str> = selected.iter().map(String::as_str).collect();
        let conflict = tailscale::conflict(&self.popup.tailscale, &selected, current.ssh_port);
        let ssh = match &self.popup.ssh {
            SshStatus::Skipped => Vec::new(),
            SshStatus::Checking => vec![screen::ssh_checking_row(current.ssh_port)],
            SshStatus::Checked(check) => {
                screen::ssh_rows(check.level, &check.summary, check.fix.as_deref())
            }
        };
        ChecklistNotes {
            ssh,
            machine: self.setup.machine.clone(),
            port: current.ssh_port,
            warnings,
            tailscale: tailscale::warning_lines(&conflict),
            endpoint: endpoint_lines(&self.popup.endpoint),
            message: self.popup.message.clone(),
        }
    }

    /// The screen of the current phase. A phase that waits for an effect
    /// shows the screen it came from (the outcome normally arrives before
    /// the next paint).
    fn lines(&self) -> Vec<String> {
        let size = self.popup.size;
        let fixed = |lines| screen::fit(&screen::Screen::fixed(lines), size);
        match &self.popup.phase {
            Phase::Fatal(message) => fixed(screen::fatal(message)),
            Phase::Select
            | Phase::CheckingSsh(_)
            | Phase::AwaitingLauncher(_)
            | Phase::Starting => {
                screen::fit(&screen::checklist(&self.popup.list, &self.notes()), size)
            }
            Phase::Qr(state) | Phase::Expiring(state) | Phase::Cancelling(state) => {
                let hint = if state.copied_until.is_some() {
                    Hint::Copied
                } else {
                    Hint::Scan
                };
                screen::qr_screen(
                    &state.qr,
                    &state.code,
                    &state.details,
                    hint,
                    state.show_code,
                    self.popup.size,
                )
            }
            Phase::Expired => fixed(screen::expired()),
            Phase::Enrolled(enrolled) | Phase::Revoking(enrolled) if enrolled.appended => {
                fixed(screen::enrolled(
                    &self.setup.machine,
                    &enrolled.fingerprint,
                    enrolled.comment.as_deref(),
                ))
            }
            Phase::Enrolled(enrolled) | Phase::Revoking(enrolled) => {
                fixed(screen::already_authorized(
                    &self.setup.machine,
                    &enrolled.fingerprint,
                    enrolled.comment.as_deref(),
                ))
            }
            Phase::Revoked(fingerprint) => fixed(screen::revoked(fingerprint)),
            Phase::RevokeFailed(error) => fixed(screen::revoke_failed(error)),
        }
    }

    fn repaint(&mut self) {
        self.dirty = false;
        let lines = self.lines();
        // A terminal that went away is noticed by the key reader.
        let _ = self.terminal.paint(&lines);
    }

    /// Paints once if any effect since the last paint asked for it.
    fn flush(&mut self) {
        if self.dirty {
            self.repaint();
        }
    }

    fn run_loop(&mut self, keys: &Receiver<Vec<u8>>) -> Ending {
        loop {
            if let Some(signal) = sys::termination_signal() {
                break Ending::Signal(signal);
            }
            match keys.recv_timeout(TICK) {
                Ok(bytes) => {
                    for key in keys::decode(&bytes) {
                        if let Some(ending) = self.feed(Input::Key(key)) {
                            return ending;
                        }
                        self.flush();
                    }
                    // Keys typed while a revoke or an expiry ran are dropped.
                    while keys.try_recv().is_ok() {}
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break Ending::Close,
            }
            if let Some(ending) = self.tick() {
                break ending;
            }
        }
    }

    /// Everything that changes without a key: background answers, the
    /// clock and the terminal size; one paint at the end if needed.
    fn tick(&mut self) -> Option<Ending> {
        let mut inputs = Vec::new();
        if let Some(receiver) = &self.tailscale {
            match receiver.try_recv() {
                Ok(answer) => {
                    inputs.push(Input::TailscaleAnswered(answer));
                    self.tailscale = None;
                }
                Err(TryRecvError::Disconnected) => self.tailscale = None,
                Err(TryRecvError::Empty) => {}
            }
        }
        if let Some(receiver) = &self.ssh {
            match receiver.try_recv() {
                Ok(check) => {
                    inputs.push(Input::SshChecked(check));
                    self.ssh = None;
                }
                Err(TryRecvError::Disconnected) => self.ssh = None,
                Err(TryRecvError::Empty) => {}
            }
        }
        if let Some(receiver) = &self.launcher {
            let outcome = match receiver.try_recv() {
                Ok(outcome) => Some(outcome),
                Err(TryRecvError::Disconnected) => Some(Err(LAUNCHER_TEST_STOPPED.to_owned())),
                Err(TryRecvError::Empty) => None,
            };
            if let Some(outcome) = outcome {
                inputs.push(Input::LauncherTested(outcome));
                self.launcher = None;
            }
        }
        inputs.push(Input::Tick {
            now: Instant::now(),
            size: PopupTerminal::size(),
        });
        for input in inputs {
            if let Some(ending) = self.feed(input) {
                return Some(ending);
            }
        }
        self.flush();
        None
    }

    /// Steps the machine with `input`, performs the effects, and feeds each
    /// effect's outcome back before anything else. A paint is only noted;
    /// the caller flushes it.
    fn feed(&mut self, input: Input) -> Option<Ending> {
        let mut inputs = VecDeque::from([input]);
        while let Some(input) = inputs.pop_front() {
            for effect in self.popup.step(input) {
                match effect {
                    Effect::Repaint => self.dirty = true,
                    Effect::Close => return Some(Ending::Close),
                    Effect::Fail(message) => return Some(Ending::Fail(message)),
                    Effect::CheckSsh => {
                        self.flush();
                        // A newer answer than the one still on its way.
                        self.ssh = None;
                        let port = config::read(Some(&self.setup.config_dir)).ssh_port;
                        inputs.push_back(Input::SshChecked(preflight::check(port)));
                    }
                    Effect::AwaitLauncher => {
                        self.flush();
                        inputs.push_back(Input::LauncherTested(self.await_launcher()));
                    }
                    Effect::StartCeremony {
                        addresses,
                        endpoint,
                    } => {
                        let started = self.start_ceremony(addresses, endpoint);
                        inputs.push_back(Input::CeremonyStarted(started));
                    }
                    Effect::PollEnrollment => {
                        if let Some(ceremony) = &self.ceremony {
                            let enrolled = ceremony.poll_enrolled();
                            inputs.push_back(Input::EnrollmentPolled {
                                enrolled,
                                unix: crate::base::clock::unix_seconds(),
                            });
                        }
                    }
                    Effect::ExpireCeremony => {
                        let outcome = match &self.ceremony {
                            Some(ceremony) => ceremony.end().map_err(|e| e.to_string()),
                            None => Ok(None),
                        };
                        inputs.push_back(Input::CeremonyExpired(outcome));
                    }
                    Effect::EndCeremony => {
                        // Only after an end that found nothing enrolled.
                        let _ = self.end_ceremony();
                    }
                    Effect::CopyCode(code) => {
                        let copied = clipboard::copy_with_pbcopy(&code);
                        inputs.push_back(Input::CodeCopied {
                            copied,
                            now: Instant::now(),
                        });
                    }
                    Effect::SendToTerminal(text) => {
                        let _ = self.terminal.send(&text);
                    }
                    Effect::RevokeDevice(enrolled) => {
                        let outcome = ceremony::revoke_device(&self.setup.home, &enrolled)
                            .map(|_| ())
                            .map_err(|e| e.to_string());
                        inputs.push_back(Input::DeviceRevoked(outcome));
                    }
                }
            }
        }
        None
    }

    /// Blocks until the launcher test answers.
    fn await_launcher(&mut self) -> Result<Endpoint, String> {
        let stopped = || Err(LAUNCHER_TEST_STOPPED.to_owned());
        match self.launcher.take() {
            Some(receiver) => receiver.recv().unwrap_or_else(|_| stopped()),
            None => stopped(),
        }
    }

    /// Mints a Bootstrap Key (ending any running ceremony first) and builds
    /// its QR screen; an error is the fatal screen's message.
    fn start_ceremony(
        &mut self,
        addresses: Vec<String>,
        endpoint: Option<Endpoint>,
    ) -> Result<Box<QrState>, Vec<String>> {
        self.end_ceremony();
        let port = config::read(Some(&self.setup.config_dir)).ssh_port;
        let exe =
            ceremony::current_exe().map_err(|e| vec![format!("Could not start pairing: {e}")])?;
        // The forced command runs this binary for the phone: refuse to name
        // one another user could replace (sshd's StrictModes rule).
        crate::base::dirs::trusted_binary(&exe)
            .map_err(|e| vec![format!("Could not start pairing: {e}")])?;
        let mut config = CeremonyConfig::new(&self.setup.home, &self.setup.state_dir, &exe);
        if let Some(ttl) = self.setup.ttl_override {
            config.ttl_seconds = ttl;
        }
        let ceremony =
            ceremony::begin(&config).map_err(|e| vec![format!("Could not start pairing: {e}")])?;
        let payload = Payload {
            addrs: addresses.clone(),
            port,
            user: self.setup.user.clone(),
            fp: self.setup.fingerprint.clone(),
            bootstrap: Some(ceremony.bootstrap()),
        };
        let encoded = match &endpoint {
            Some(endpoint) => pairing_code::encode_v2(&payload, endpoint),
            None => pairing_code::encode_v1(&payload),
        };
        let expires_at = ceremony.expires_at();
        self.ceremony = Some(ceremony);
        let code = match encoded {
            Ok(code) => code,
            Err(e) => {
                self.end_ceremony();
                return Err(vec![format!(
                    "Could not start pairing: the Pairing Code is invalid ({e})"
                )]);
            }
        };
        let Ok(qr) = Qr::encode(&code) else {
            self.end_ceremony();
            return Err(vec![
                "Could not start pairing: the Pairing Code is too long for a QR.".to_owned(),
            ]);
        };
        let details = QrDetails {
            user: payload.user,
            port,
            fingerprint: payload.fp,
            addresses,
            valid_until: local_time(expires_at),
            endpoint: endpoint.as_ref().map(endpoint::endpoint_line),
        };
        Ok(Box::new(QrState::new(code, qr, details, expires_at)))
    }

    /// Ends the running ceremony, if any, and returns the device the key
    /// file shows it enrolled, if the popup has not shown it.
    fn end_ceremony(&mut self) -> Option<ceremony::Enrolled> {
        let ceremony = self.ceremony.take()?;
        // Idempotent; a failure leaves a line that dies with its TTL and
        // is swept at the next start.
        let enrolled = ceremony.end().ok().flatten()?;
        let shown = matches!(
            self.popup.phase,
            Phase::Enrolled(_) | Phase::Revoking(_) | Phase::Revoked(_) | Phase::RevokeFailed(_)
        );
        (!shown).then_some(enrolled)
    }

    /// Removes the Bootstrap Key and restores the terminal (when `self`
    /// drops); returns an enrollment the popup had not shown (a signal or
    /// a closed terminal ended it right after the device enrolled).
    fn close(mut self) -> Option<ceremony::Enrolled> {
        self.end_ceremony()
    }
}

/// The popup's exit. An enrollment the popup could not show is printed
/// (the key file holds it, so it is never left unreported), as
/// `pair --no-ui` prints it.
fn finish(ending: Ending, unshown: Option<ceremony::Enrolled>) -> Result<(), Failure> {
    if let Some(enrolled) = &unshown {
        let line = headless::outcome_line(enrolled);
        let mut stdout = std::io::stdout().lock();
        let _ = std::io::Write::write_all(&mut stdout, format!("{line}\n").as_bytes());
        let _ = std::io::Write::flush(&mut stdout);
    }
    let kept = if unshown.is_some() {
        "; the Device Key above enrolled and stays in authorized_keys"
    } else {
        ""
    };
    match ending {
        Ending::Close => {
            if unshown.is_some() {
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr().lock(),
                    format!("heeler pair: closed{kept}\n").as_bytes(),
                );
            }
            Ok(())
        }
        Ending::Signal(signal) => Err(Failure::new(
            format!("heeler pair: stopped by signal {signal}{kept}"),
            crate::exit::signal_status(signal),
        )),
        Ending::Fail(message) => Err(fatal_failure(&message)),
    }
}

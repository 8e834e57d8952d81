//! `heeler pair`: the pairing popup. The user confirms which addresses go
//! into the Pairing Code, scans the QR with the Heeler app, and sees the
//! Device Key that enrolled (and can revoke it).
//!
//! herdr runs it in a popup pane; it also runs in any terminal, using
//! herdr's default directories. Decisions live in pure modules (addresses,
//! pair_config, checklist, popup_screen, qr, herdr_endpoint,
//! tailscale_probe); this module is the loop that ties them to the ceremony,
//! the terminal, the clock and the signals. Whatever way it ends, the active
//! Bootstrap Key is removed and the terminal restored.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use crate::base::sys;
use crate::cli::PairArgs;
use crate::exit::Failure;
use crate::pair::addresses::{self, Candidate, InterfaceAddress};
use crate::pair::ceremony::{self, Ceremony, CeremonyConfig, Enrolled};
use crate::pair::config::{self, PairConfig};
use crate::pair::endpoint::{self, HerdrEnv, Plan};
use crate::pair::headless;
use crate::pair::host_key;
use crate::pair::popup::checklist::{self, Checklist};
use crate::pair::popup::clipboard;
use crate::pair::popup::keys::{self, Key};
use crate::pair::popup::qr::Qr;
use crate::pair::popup::screen::{self, ChecklistNotes, Hint, QrDetails};
use crate::pair::popup::terminal::{self, PopupTerminal};
use crate::pair::tailscale::{self, TailscaleSsh};
use crate::wire::pairing_code::{self, Endpoint, Payload};

/// How long the loop waits for a key before it looks at the clock, the
/// enrolled file, signals and the terminal size again. Enrollment shows
/// within this (well under the 0.5 s the popup promises).
const TICK: Duration = Duration::from_millis(100);
/// How long the `copied` hint stays.
const COPIED_HINT: Duration = Duration::from_millis(1500);

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

/// Where the v2 endpoint stands.
enum EndpointState {
    /// The user's own herdr: v1, maybe with a warning line.
    V1(Option<String>),
    /// The launcher is being tested.
    Testing {
        line: String,
        result: Receiver<Result<Endpoint, String>>,
    },
    Ready(Endpoint),
    /// No code can be offered; the reason.
    Refused(String),
}

impl EndpointState {
    fn lines(&self) -> Vec<String> {
        match self {
            EndpointState::V1(None) => Vec::new(),
            EndpointState::V1(Some(warning)) => vec![screen::bold(warning)],
            EndpointState::Testing { line, .. } => vec![format!("{line} (testing the launcher…)")],
            EndpointState::Ready(endpoint) => vec![endpoint::endpoint_line(endpoint)],
            EndpointState::Refused(why) => vec![screen::bold(why)],
        }
    }
}

/// The QR screen's state.
struct QrState {
    code: String,
    qr: Qr,
    details: QrDetails,
    copied_until: Option<Instant>,
    show_code: bool,
}

enum Phase {
    Fatal(Vec<String>),
    Select,
    Qr(Box<QrState>),
    Expired,
    Enrolled(Enrolled),
    Revoked(String),
    RevokeFailed(String),
}

/// What the loop does after a key.
enum Next {
    Stay,
    Close,
    Fail,
}

struct Popup {
    setup: Setup,
    terminal: PopupTerminal,
    list: Checklist,
    message: Option<String>,
    endpoint: EndpointState,
    tailscale: Option<Receiver<TailscaleSsh>>,
    tailscale_answer: TailscaleSsh,
    confirmed: Vec<String>,
    ceremony: Option<Ceremony>,
    phase: Phase,
    size: (usize, usize),
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
    let endpoint = start_endpoint(plan, &setup.home);
    let may_be_tailnet = candidates
        .iter()
        .any(|c| tailscale::may_be_tailnet(&c.address));
    let mut popup = Popup {
        setup,
        terminal,
        list: Checklist::new(candidates),
        message: None,
        endpoint,
        tailscale: None,
        tailscale_answer: TailscaleSsh::default(),
        confirmed: Vec::new(),
        ceremony: None,
        phase: Phase::Select,
        size: PopupTerminal::size(),
    };
    popup.repaint();
    if may_be_tailnet {
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(tailscale::probe());
        });
        popup.tailscale = Some(receiver);
    }
    let result = popup.run_loop(&keys);
    popup.close();
    result
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
    let _ = terminal.paint(&screen::fatal(message));
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
    if let Some(bad) = command_line
        .iter()
        .find(|a| a.is_empty() || a.chars().any(char::is_whitespace))
    {
        return Err(vec![format!(
            "--address {bad:?} is not an address without whitespace."
        )]);
    }
    let dirs = crate::base::dirs::Env::process();
    let no_home = |_| vec!["Cannot determine the home directory.".to_owned()];
    let home = dirs.home().map_err(no_home)?;
    let state_dir = dirs.plugin_state_dir().map_err(no_home)?;
    let config_dir = dirs.plugin_config_dir().map_err(no_home)?;
    let state_dir = std::path::absolute(state_dir)
        .map_err(|e| vec![format!("Cannot resolve the plugin state directory: {e}")])?;
    let host_key_dir = std::env::var_os(headless::TEST_HOST_KEY_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(host_key::DEFAULT_DIR));
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
    let ttl_override = std::env::var(headless::TEST_TTL_ENV)
        .ok()
        .and_then(|t| t.parse::<i64>().ok())
        .map(|t| t.max(1));
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

/// Starts testing a v2 launcher in the background (it may take 5 s).
fn start_endpoint(plan: Plan, home: &Path) -> EndpointState {
    match plan {
        Plan::V1 => EndpointState::V1(None),
        Plan::V1Warning(warning) => EndpointState::V1(Some(warning)),
        Plan::Refused(why) => EndpointState::Refused(why),
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
            EndpointState::Testing { line, result }
        }
    }
}

fn local_time(unix: i64) -> String {
    match sys::local_time_of_day(unix) {
        Some((h, m, s)) => format!("{h:02}:{m:02}:{s:02}"),
        None => format!("unix time {unix}"),
    }
}

impl Popup {
    fn notes(&self) -> ChecklistNotes {
        let current = config::read(Some(&self.setup.config_dir));
        let mut warnings = Vec::new();
        if let Some(warning) = &current.port_warning {
            warnings.push(format!("{warning} Advertising {}.", current.ssh_port));
        }
        warnings.extend(self.setup.opened_config.addresses_warning.iter().cloned());
        warnings.extend(self.setup.opened_config.launcher_warning.iter().cloned());
        let selected = self.list.selected();
        let selected: Vec<&str> = selected.iter().map(String::as_str).collect();
        let conflict = tailscale::conflict(&self.tailscale_answer, &selected, current.ssh_port);
        ChecklistNotes {
            machine: self.setup.machine.clone(),
            port: current.ssh_port,
            warnings,
            tailscale: tailscale::warning_lines(&conflict),
            endpoint: self.endpoint.lines(),
            message: self.message.clone(),
        }
    }

    fn lines(&self) -> Vec<String> {
        match &self.phase {
            Phase::Fatal(message) => screen::fatal(message),
            Phase::Select => screen::checklist(&self.list, &self.notes()),
            Phase::Qr(state) => {
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
                    self.size,
                )
            }
            Phase::Expired => screen::expired(),
            Phase::Enrolled(enrolled) => screen::enrolled(
                &self.setup.machine,
                &enrolled.fingerprint,
                enrolled.comment.as_deref(),
            ),
            Phase::Revoked(fingerprint) => screen::revoked(fingerprint),
            Phase::RevokeFailed(error) => screen::revoke_failed(error),
        }
    }

    fn repaint(&mut self) {
        let lines = self.lines();
        // A terminal that went away is noticed by the key reader.
        let _ = self.terminal.paint(&lines);
    }

    fn run_loop(&mut self, keys: &Receiver<Vec<u8>>) -> Result<(), Failure> {
        loop {
            if sys::termination_signal().is_some() {
                return Ok(());
            }
            match keys.recv_timeout(TICK) {
                Ok(bytes) => {
                    for key in keys::decode(&bytes) {
                        match self.handle_key(key) {
                            Next::Stay => {}
                            Next::Close => return Ok(()),
                            Next::Fail => {
                                let message = match &self.phase {
                                    Phase::Fatal(message) => message.clone(),
                                    _ => Vec::new(),
                                };
                                return Err(fatal_failure(&message));
                            }
                        }
                    }
                    // Keys typed while a revoke or an expiry ran are dropped.
                    while keys.try_recv().is_ok() {}
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            self.tick();
        }
    }

    /// Everything that changes without a key.
    fn tick(&mut self) {
        let mut dirty = false;
        let size = PopupTerminal::size();
        if size != self.size {
            self.size = size;
            dirty = true;
        }
        if let Some(receiver) = &self.tailscale {
            match receiver.try_recv() {
                Ok(answer) => {
                    self.tailscale_answer = answer;
                    self.tailscale = None;
                    dirty |= matches!(self.phase, Phase::Select);
                }
                Err(TryRecvError::Disconnected) => self.tailscale = None,
                Err(TryRecvError::Empty) => {}
            }
        }
        if let EndpointState::Testing { result, .. } = &self.endpoint {
            let outcome = match result.try_recv() {
                Ok(outcome) => Some(outcome),
                Err(TryRecvError::Disconnected) => {
                    Some(Err("The launcher test stopped unexpectedly.".to_owned()))
                }
                Err(TryRecvError::Empty) => None,
            };
            if let Some(outcome) = outcome {
                self.endpoint = match outcome {
                    Ok(endpoint) => EndpointState::Ready(endpoint),
                    Err(why) => EndpointState::Refused(why),
                };
                dirty |= matches!(self.phase, Phase::Select);
            }
        }
        if let Phase::Qr(state) = &mut self.phase {
            if state
                .copied_until
                .is_some_and(|until| Instant::now() >= until)
            {
                state.copied_until = None;
                dirty = true;
            }
            if let Some(ceremony) = &self.ceremony {
                if let Some(enrolled) = ceremony.poll_enrolled() {
                    self.phase = Phase::Enrolled(enrolled);
                    dirty = true;
                } else if crate::base::clock::unix_seconds() >= ceremony.expires_at() {
                    self.phase = match ceremony.expire() {
                        Ok(Some(enrolled)) => Phase::Enrolled(enrolled),
                        Ok(None) => Phase::Expired,
                        Err(e) => Phase::Fatal(vec![format!("Could not expire the code: {e}")]),
                    };
                    if matches!(self.phase, Phase::Expired) {
                        self.end_ceremony();
                    }
                    dirty = true;
                }
            }
        }
        if dirty {
            self.repaint();
        }
    }

    fn handle_key(&mut self, key: Key) -> Next {
        if matches!(self.phase, Phase::Fatal(_)) {
            return Next::Fail;
        }
        if matches!(key, Key::Char('q') | Key::Escape | Key::CtrlC) {
            return Next::Close;
        }
        match &mut self.phase {
            Phase::Fatal(_) => Next::Fail,
            Phase::Select => {
                match self.list.handle(key) {
                    checklist::Outcome::Ignored => return Next::Stay,
                    checklist::Outcome::Changed => self.message = None,
                    checklist::Outcome::NothingSelected => {
                        self.message = Some(screen::SELECT_AT_LEAST_ONE.to_owned());
                    }
                    checklist::Outcome::Confirmed(addresses) => {
                        self.message = None;
                        self.confirm(addresses);
                    }
                }
                self.repaint();
                Next::Stay
            }
            Phase::Qr(state) => {
                if key != Key::Char('c') {
                    return Next::Close;
                }
                if clipboard::copy_with_pbcopy(&state.code) {
                    state.copied_until = Some(Instant::now() + COPIED_HINT);
                    state.show_code = false;
                } else {
                    state.show_code = true;
                    let request = clipboard::osc52(&state.code);
                    let _ = self.terminal.send(&request);
                }
                self.repaint();
                Next::Stay
            }
            Phase::Expired => {
                if key != Key::Enter {
                    return Next::Close;
                }
                let addresses = self.confirmed.clone();
                self.start_ceremony(addresses);
                self.repaint();
                Next::Stay
            }
            Phase::Enrolled(enrolled) => {
                if key != Key::Char('r') {
                    return Next::Close;
                }
                self.phase = match ceremony::revoke_device(&self.setup.home, enrolled) {
                    Ok(_) => Phase::Revoked(enrolled.fingerprint.clone()),
                    Err(e) => Phase::RevokeFailed(e.to_string()),
                };
                self.repaint();
                Next::Stay
            }
            Phase::Revoked(_) | Phase::RevokeFailed(_) => Next::Close,
        }
    }

    /// Enter on the checklist: a code, unless this herdr cannot have one.
    fn confirm(&mut self, addresses: Vec<String>) {
        if let EndpointState::Testing { .. } = &self.endpoint {
            self.message = Some("Testing the launcher…".to_owned());
            self.repaint();
            if let EndpointState::Testing { result, .. } = &self.endpoint {
                let outcome = result
                    .recv()
                    .unwrap_or_else(|_| Err("The launcher test stopped unexpectedly.".to_owned()));
                self.endpoint = match outcome {
                    Ok(endpoint) => EndpointState::Ready(endpoint),
                    Err(why) => EndpointState::Refused(why),
                };
            }
            self.message = None;
        }
        if let EndpointState::Refused(_) = &self.endpoint {
            self.message =
                Some("No Pairing Code can be offered for this herdr (see above).".to_owned());
            return;
        }
        self.confirmed = addresses.clone();
        self.start_ceremony(addresses);
    }

    /// Mints a Bootstrap Key and shows its QR (or the fatal screen).
    fn start_ceremony(&mut self, addresses: Vec<String>) {
        self.end_ceremony();
        let port = config::read(Some(&self.setup.config_dir)).ssh_port;
        let exe = match ceremony::current_exe() {
            Ok(exe) => exe,
            Err(e) => {
                self.phase = Phase::Fatal(vec![format!("Could not start pairing: {e}")]);
                return;
            }
        };
        let mut config = CeremonyConfig::new(&self.setup.home, &self.setup.state_dir, &exe);
        if let Some(ttl) = self.setup.ttl_override {
            config.ttl_seconds = ttl;
        }
        let ceremony = match ceremony::begin(&config) {
            Ok(ceremony) => ceremony,
            Err(e) => {
                self.phase = Phase::Fatal(vec![format!("Could not start pairing: {e}")]);
                return;
            }
        };
        let payload = Payload {
            addrs: addresses.clone(),
            port,
            user: self.setup.user.clone(),
            fp: self.setup.fingerprint.clone(),
            bootstrap: Some(ceremony.bootstrap()),
        };
        let endpoint = match &self.endpoint {
            EndpointState::Ready(endpoint) => Some(endpoint.clone()),
            _ => None,
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
                self.phase = Phase::Fatal(vec![format!(
                    "Could not start pairing: the Pairing Code is invalid ({e})"
                )]);
                return;
            }
        };
        let Ok(qr) = Qr::encode(&code) else {
            self.end_ceremony();
            self.phase = Phase::Fatal(vec![
                "Could not start pairing: the Pairing Code is too long for a QR.".to_owned(),
            ]);
            return;
        };
        self.phase = Phase::Qr(Box::new(QrState {
            details: QrDetails {
                user: payload.user,
                port,
                fingerprint: payload.fp,
                addresses,
                valid_until: local_time(expires_at),
                endpoint: endpoint.as_ref().map(endpoint::endpoint_line),
            },
            code,
            qr,
            copied_until: None,
            show_code: false,
        }));
    }

    fn end_ceremony(&mut self) {
        if let Some(ceremony) = self.ceremony.take() {
            // Idempotent; a failure leaves a line that dies with its TTL and
            // is swept at the next start.
            let _ = ceremony.end();
        }
    }

    /// Removes the Bootstrap Key; the terminal is restored when `self` drops.
    fn close(mut self) {
        self.end_ceremony();
    }
}

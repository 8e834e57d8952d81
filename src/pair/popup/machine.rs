//! The pairing popup's phase machine: what a key, a tick of the clock or
//! the result of an effect does to the popup, as a pure decision.
//!
//! [`Popup::step`] takes one [`Input`] and returns the [`Effect`]s the event
//! loop performs (paint, copy, revoke, start/expire/end the ceremony, close).
//! The machine never touches the terminal, the files, the clock or the
//! ceremony: time arrives inside the inputs, and every effect with an
//! outcome (a ceremony that started, a copy, a revoke, an expiry, an
//! enrollment poll) comes back as another input.
//!
//! Invariants:
//! - The loop feeds an effect's outcome back before any other input. While
//!   a ceremony start, a launcher test, a revoke or an expiry is in flight
//!   the phase says so, and keys are ignored there (the popup contract:
//!   keys are ignored while a revoke or an expiry runs).
//! - On the fatal screen any key fails the popup (exit 1); everywhere else
//!   `q`, escape and Ctrl-C close it. Closing always ends the ceremony
//!   (the loop's job); it never revokes an enrolled Device Key.
//! - `Qr` is entered only with a running ceremony, so the QR screen is the
//!   only phase that polls for an enrollment and watches the expiry.
//! - An enrollment seen by the poll wins over the expiry; an enrollment
//!   found by the locked expiry itself also wins (the device enrolled at
//!   the last moment).

use std::time::{Duration, Instant};

use crate::pair::ceremony::Enrolled;
use crate::pair::popup::checklist::{self, Checklist};
use crate::pair::popup::clipboard;
use crate::pair::popup::keys::Key;
use crate::pair::popup::qr::Qr;
use crate::pair::popup::screen::{self, QrDetails};
use crate::pair::tailscale::TailscaleSsh;
use crate::wire::pairing_code::Endpoint;

/// How long the `copied` hint stays.
pub const COPIED_HINT: Duration = Duration::from_millis(1500);
/// The checklist message while Enter waits for the launcher test.
pub const TESTING_THE_LAUNCHER: &str = "Testing the launcher…";
/// The checklist message when this herdr cannot have a Pairing Code.
pub const NO_CODE_FOR_THIS_HERDR: &str =
    "No Pairing Code can be offered for this herdr (see above).";

/// Where the Pairing Code v2 endpoint stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointStatus {
    /// The user's own herdr: a v1 code, maybe with a warning line.
    V1(Option<String>),
    /// The launcher is being tested; `line` names socket and launcher.
    Testing { line: String },
    /// The launcher passed: a v2 code with this endpoint.
    Ready(Endpoint),
    /// No code can be offered; the reason.
    Refused(String),
}

impl EndpointStatus {
    /// A finished launcher test as a status.
    fn settled(outcome: Result<Endpoint, String>) -> EndpointStatus {
        match outcome {
            Ok(endpoint) => EndpointStatus::Ready(endpoint),
            Err(why) => EndpointStatus::Refused(why),
        }
    }

    /// The endpoint a new Pairing Code carries (`None`: a v1 code).
    fn for_code(&self) -> Option<Endpoint> {
        match self {
            EndpointStatus::Ready(endpoint) => Some(endpoint.clone()),
            _ => None,
        }
    }
}

/// The QR screen: the code, its QR and what it says under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QrState {
    pub code: String,
    pub qr: Qr,
    pub details: QrDetails,
    /// The ceremony's expiry (unix seconds).
    pub expires_at: i64,
    /// Until when the hint reads `copied`.
    pub copied_until: Option<Instant>,
    /// Whether the exact code is printed (a copy that reached no clipboard).
    pub show_code: bool,
}

impl QrState {
    /// A fresh QR screen: the scan hint, the code not printed.
    pub fn new(code: String, qr: Qr, details: QrDetails, expires_at: i64) -> QrState {
        QrState {
            code,
            qr,
            details,
            expires_at,
            copied_until: None,
            show_code: false,
        }
    }
}

/// The popup's phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Pairing cannot go on; the message.
    Fatal(Vec<String>),
    /// The address checklist.
    Select,
    /// Enter confirmed these addresses; the launcher test is awaited.
    AwaitingLauncher(Vec<String>),
    /// A ceremony is being started.
    Starting,
    /// The QR of a running ceremony.
    Qr(Box<QrState>),
    /// The TTL ran out; the locked expiry runs.
    Expiring(Box<QrState>),
    /// The code expired and the Bootstrap Key was removed.
    Expired,
    /// A device enrolled.
    Enrolled(Enrolled),
    /// The enrolled Device Key is being revoked.
    Revoking(Enrolled),
    /// The Device Key with this fingerprint was revoked.
    Revoked(String),
    /// The revoke failed; the error.
    RevokeFailed(String),
}

/// What happens to the popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A key the user pressed.
    Key(Key),
    /// A tick of the loop: the monotonic clock and the terminal's size.
    Tick { now: Instant, size: (usize, usize) },
    /// Tailscale answered whether it serves SSH.
    TailscaleAnswered(TailscaleSsh),
    /// The launcher test finished (the endpoint, or why no code).
    LauncherTested(Result<Endpoint, String>),
    /// The outcome of [`Effect::StartCeremony`]: the QR screen, or the
    /// fatal screen's message.
    CeremonyStarted(Result<Box<QrState>, Vec<String>>),
    /// The outcome of [`Effect::PollEnrollment`], with the wall clock
    /// (unix seconds) read right after the poll.
    EnrollmentPolled {
        enrolled: Option<Enrolled>,
        unix: i64,
    },
    /// The outcome of [`Effect::ExpireCeremony`]: a device that enrolled at
    /// the last moment, none, or the error.
    CeremonyExpired(Result<Option<Enrolled>, String>),
    /// The outcome of [`Effect::CopyCode`]: whether a clipboard took the
    /// code, at `now`.
    CodeCopied { copied: bool, now: Instant },
    /// The outcome of [`Effect::RevokeDevice`].
    DeviceRevoked(Result<(), String>),
}

/// What the event loop does, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Paint the current state (the loop paints at most once per input
    /// batch, after the other effects).
    Repaint,
    /// Close the popup (exit 0); the loop ends the ceremony.
    Close,
    /// Fail the popup with the fatal screen's message (exit 1).
    Fail(Vec<String>),
    /// Wait for the launcher test; answer [`Input::LauncherTested`]. The
    /// screen is painted first, so the user sees what is awaited.
    AwaitLauncher,
    /// End any running ceremony, start a new one for these addresses with
    /// this endpoint (`None`: a v1 code); answer [`Input::CeremonyStarted`].
    StartCeremony {
        addresses: Vec<String>,
        endpoint: Option<Endpoint>,
    },
    /// Look for an enrollment; answer [`Input::EnrollmentPolled`].
    PollEnrollment,
    /// Run the ceremony's locked expiry; answer [`Input::CeremonyExpired`].
    ExpireCeremony,
    /// Remove the Bootstrap Key and the ceremony's state.
    EndCeremony,
    /// Copy the code to a clipboard; answer [`Input::CodeCopied`].
    CopyCode(String),
    /// Write these bytes to the terminal (an OSC 52 clipboard request).
    SendToTerminal(String),
    /// Remove this Device Key; answer [`Input::DeviceRevoked`].
    RevokeDevice(Enrolled),
}

/// The popup's state: the phase and everything its screens show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Popup {
    pub phase: Phase,
    pub list: Checklist,
    /// The checklist's transient message.
    pub message: Option<String>,
    pub endpoint: EndpointStatus,
    pub tailscale: TailscaleSsh,
    /// The addresses of the last confirmed checklist (a fresh code after
    /// expiry uses them again).
    pub confirmed: Vec<String>,
    /// The terminal's `(rows, columns)` at the last paint.
    pub size: (usize, usize),
}

fn is_quit(key: Key) -> bool {
    matches!(key, Key::Char('q') | Key::Escape | Key::CtrlC)
}

impl Popup {
    /// The checklist, before any key.
    pub fn new(list: Checklist, endpoint: EndpointStatus, size: (usize, usize)) -> Popup {
        Popup {
            phase: Phase::Select,
            list,
            message: None,
            endpoint,
            tailscale: TailscaleSsh::default(),
            confirmed: Vec::new(),
            size,
        }
    }

    /// Whether the current phase waits for an effect's outcome.
    fn in_flight(&self) -> bool {
        matches!(
            self.phase,
            Phase::AwaitingLauncher(_) | Phase::Starting | Phase::Expiring(_) | Phase::Revoking(_)
        )
    }

    /// One input: the state changes in place; the effects are returned.
    pub fn step(&mut self, input: Input) -> Vec<Effect> {
        match input {
            Input::Key(key) => self.key(key),
            Input::Tick { now, size } => self.tick(now, size),
            Input::TailscaleAnswered(answer) => {
                self.tailscale = answer;
                self.repaint_if_select()
            }
            Input::LauncherTested(outcome) => self.launcher_tested(outcome),
            Input::CeremonyStarted(outcome) => self.ceremony_started(outcome),
            Input::EnrollmentPolled { enrolled, unix } => self.enrollment_polled(enrolled, unix),
            Input::CeremonyExpired(outcome) => self.ceremony_expired(outcome),
            Input::CodeCopied { copied, now } => self.code_copied(copied, now),
            Input::DeviceRevoked(outcome) => self.device_revoked(outcome),
        }
    }

    fn repaint_if_select(&self) -> Vec<Effect> {
        if matches!(self.phase, Phase::Select) {
            vec![Effect::Repaint]
        } else {
            Vec::new()
        }
    }

    fn key(&mut self, key: Key) -> Vec<Effect> {
        if let Phase::Fatal(message) = &self.phase {
            return vec![Effect::Fail(message.clone())];
        }
        if self.in_flight() {
            return Vec::new();
        }
        if is_quit(key) {
            return vec![Effect::Close];
        }
        match &self.phase {
            Phase::Select => self.checklist_key(key),
            Phase::Qr(state) if key == Key::Char('c') => vec![Effect::CopyCode(state.code.clone())],
            Phase::Expired if key == Key::Enter => {
                let addresses = self.confirmed.clone();
                self.start(addresses)
            }
            Phase::Enrolled(enrolled) if key == Key::Char('r') => {
                let enrolled = enrolled.clone();
                self.phase = Phase::Revoking(enrolled.clone());
                vec![Effect::RevokeDevice(enrolled)]
            }
            _ => vec![Effect::Close],
        }
    }

    fn checklist_key(&mut self, key: Key) -> Vec<Effect> {
        match self.list.handle(key) {
            checklist::Outcome::Ignored => Vec::new(),
            checklist::Outcome::Changed => {
                self.message = None;
                vec![Effect::Repaint]
            }
            checklist::Outcome::NothingSelected => {
                self.message = Some(screen::SELECT_AT_LEAST_ONE.to_owned());
                vec![Effect::Repaint]
            }
            checklist::Outcome::Confirmed(addresses) => {
                self.message = None;
                if let EndpointStatus::Testing { .. } = self.endpoint {
                    self.message = Some(TESTING_THE_LAUNCHER.to_owned());
                    self.phase = Phase::AwaitingLauncher(addresses);
                    return vec![Effect::Repaint, Effect::AwaitLauncher];
                }
                self.confirm(addresses)
            }
        }
    }

    /// Confirmed addresses with a settled endpoint: a code, unless this
    /// herdr cannot have one.
    fn confirm(&mut self, addresses: Vec<String>) -> Vec<Effect> {
        if let EndpointStatus::Refused(_) = self.endpoint {
            self.phase = Phase::Select;
            self.message = Some(NO_CODE_FOR_THIS_HERDR.to_owned());
            return vec![Effect::Repaint];
        }
        self.confirmed = addresses.clone();
        self.start(addresses)
    }

    fn start(&mut self, addresses: Vec<String>) -> Vec<Effect> {
        self.phase = Phase::Starting;
        vec![Effect::StartCeremony {
            addresses,
            endpoint: self.endpoint.for_code(),
        }]
    }

    fn launcher_tested(&mut self, outcome: Result<Endpoint, String>) -> Vec<Effect> {
        self.endpoint = EndpointStatus::settled(outcome);
        match std::mem::replace(&mut self.phase, Phase::Select) {
            Phase::AwaitingLauncher(addresses) => {
                self.message = None;
                self.confirm(addresses)
            }
            other => {
                self.phase = other;
                self.repaint_if_select()
            }
        }
    }

    fn ceremony_started(&mut self, outcome: Result<Box<QrState>, Vec<String>>) -> Vec<Effect> {
        if !matches!(self.phase, Phase::Starting) {
            return Vec::new();
        }
        self.phase = match outcome {
            Ok(state) => Phase::Qr(state),
            Err(message) => Phase::Fatal(message),
        };
        vec![Effect::Repaint]
    }

    fn tick(&mut self, now: Instant, size: (usize, usize)) -> Vec<Effect> {
        let mut effects = Vec::new();
        if size != self.size {
            self.size = size;
            effects.push(Effect::Repaint);
        }
        if let Phase::Qr(state) = &mut self.phase {
            if state.copied_until.is_some_and(|until| now >= until) {
                state.copied_until = None;
                effects.push(Effect::Repaint);
            }
            effects.push(Effect::PollEnrollment);
        }
        effects
    }

    fn enrollment_polled(&mut self, enrolled: Option<Enrolled>, unix: i64) -> Vec<Effect> {
        let state = match std::mem::replace(&mut self.phase, Phase::Starting) {
            Phase::Qr(state) => state,
            other => {
                self.phase = other;
                return Vec::new();
            }
        };
        if let Some(enrolled) = enrolled {
            self.phase = Phase::Enrolled(enrolled);
            return vec![Effect::Repaint];
        }
        if unix < state.expires_at {
            self.phase = Phase::Qr(state);
            return Vec::new();
        }
        self.phase = Phase::Expiring(state);
        vec![Effect::ExpireCeremony]
    }

    fn ceremony_expired(&mut self, outcome: Result<Option<Enrolled>, String>) -> Vec<Effect> {
        if !matches!(self.phase, Phase::Expiring(_)) {
            return Vec::new();
        }
        match outcome {
            Ok(Some(enrolled)) => {
                self.phase = Phase::Enrolled(enrolled);
                vec![Effect::Repaint]
            }
            Ok(None) => {
                self.phase = Phase::Expired;
                vec![Effect::EndCeremony, Effect::Repaint]
            }
            Err(error) => {
                self.phase = Phase::Fatal(vec![format!("Could not expire the code: {error}")]);
                vec![Effect::Repaint]
            }
        }
    }

    fn code_copied(&mut self, copied: bool, now: Instant) -> Vec<Effect> {
        let Phase::Qr(state) = &mut self.phase else {
            return Vec::new();
        };
        if copied {
            state.copied_until = Some(now + COPIED_HINT);
            state.show_code = false;
            vec![Effect::Repaint]
        } else {
            state.show_code = true;
            vec![
                Effect::SendToTerminal(clipboard::osc52(&state.code)),
                Effect::Repaint,
            ]
        }
    }

    fn device_revoked(&mut self, outcome: Result<(), String>) -> Vec<Effect> {
        let Phase::Revoking(enrolled) = &self.phase else {
            return Vec::new();
        };
        self.phase = match outcome {
            Ok(()) => Phase::Revoked(enrolled.fingerprint.clone()),
            Err(error) => Phase::RevokeFailed(error),
        };
        vec![Effect::Repaint]
    }
}

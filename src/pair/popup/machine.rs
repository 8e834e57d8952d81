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
//!   an SSH check, a ceremony start, a launcher test, a revoke or an expiry
//!   is in flight
//!   the phase says so, and keys are ignored there (the popup contract:
//!   keys are ignored while a revoke or an expiry runs).
//! - On the fatal screen any key fails the popup (exit 1); everywhere else
//!   `q`, escape and Ctrl-C close it. Closing always ends the ceremony
//!   (the loop's job); it never revokes an enrolled Device Key. On the QR
//!   screen every key but `c` closes, after ending the ceremony under the
//!   lock (`Cancelling`): a device that enrolled since the last poll is
//!   shown, not closed over.
//! - Unless `--no-ssh-check`, Enter on the checklist runs the SSH preflight
//!   (`pair::preflight`) first, and no ceremony starts when it fails.
//! - `Qr` is entered only with a running ceremony, so the QR screen is the
//!   only phase that polls for an enrollment and watches the expiry.
//! - An enrollment seen by the poll wins over the expiry; an enrollment
//!   found by the locked expiry itself also wins (the device enrolled at
//!   the last moment).
//! - `r` revokes only a Device Key line the ceremony appended; when the key
//!   was already authorized the screen offers no revoke and `r` closes like
//!   any other key.

use std::time::{Duration, Instant};

use crate::base::keys::Key;
use crate::pair::ceremony::Enrolled;
use crate::pair::popup::checklist::{self, Checklist};
use crate::pair::popup::clipboard;
use crate::pair::popup::qr::Qr;
use crate::pair::popup::screen::{self, QrDetails};
use crate::pair::preflight::{self, Finding, Verdict};
use crate::pair::tailscale::TailscaleSsh;
use crate::wire::pairing_code::Endpoint;

/// How long the `copied` hint stays.
pub(crate) const COPIED_HINT: Duration = Duration::from_millis(1500);
/// The checklist message while Enter waits for the launcher test.
pub(crate) const TESTING_THE_LAUNCHER: &str = "Testing the launcher…";
/// The checklist message when this herdr cannot have a Pairing Code.
pub(crate) const NO_CODE_FOR_THIS_HERDR: &str =
    "No Pairing Code can be offered for this herdr (see above).";

/// The checklist message when Enter waits for the SSH preflight.
pub(crate) const CHECKING_SSH: &str = "Checking the SSH server…";
/// The checklist message when the SSH preflight refused a code.
pub(crate) const NO_CODE_WITHOUT_SSH: &str =
    "No Pairing Code until OpenSSH answers (see the SSH server row).";

/// Where the SSH preflight (`pair::preflight`, doctor's check) stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SshStatus {
    /// `--no-ssh-check`: no preflight.
    Skipped,
    /// The first check is running.
    Checking,
    /// The last check's result.
    Checked(Finding),
}

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
    pub(crate) details: QrDetails,
    /// The ceremony's expiry (unix seconds).
    pub expires_at: i64,
    /// Until when the hint reads `copied`.
    pub(crate) copied_until: Option<Instant>,
    /// Whether the exact code is printed (a copy that reached no clipboard).
    pub(crate) show_code: bool,
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
pub(crate) enum Phase {
    /// Pairing cannot go on; the message.
    Fatal(Vec<String>),
    /// The address checklist.
    Select,
    /// Enter confirmed these addresses; the SSH preflight is awaited.
    CheckingSsh(Vec<String>),
    /// Enter confirmed these addresses; the launcher test is awaited.
    AwaitingLauncher(Vec<String>),
    /// A ceremony is being started.
    Starting,
    /// The QR of a running ceremony.
    Qr(Box<QrState>),
    /// The TTL ran out; the locked end of the ceremony runs.
    Expiring(Box<QrState>),
    /// The user quit the QR screen; the locked end of the ceremony runs,
    /// and shows an enrollment it finds instead of closing.
    Cancelling(Box<QrState>),
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
    /// The SSH preflight's result (the background one at open, or the
    /// outcome of [`Effect::CheckSsh`]).
    SshChecked(Finding),
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
    /// the last moment (the key file holds its key), none, or the error.
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
    /// Run the SSH preflight on the advertised port; answer
    /// [`Input::SshChecked`]. The screen is painted first.
    CheckSsh,
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
    /// End the ceremony under the lock (its bootstrap line, its state) and
    /// say what the key file holds; answer [`Input::CeremonyExpired`].
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
    pub(crate) phase: Phase,
    pub list: Checklist,
    /// The checklist's transient message.
    pub message: Option<String>,
    pub endpoint: EndpointStatus,
    pub tailscale: TailscaleSsh,
    pub ssh: SshStatus,
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
            ssh: SshStatus::Skipped,
            confirmed: Vec::new(),
            size,
        }
    }

    /// Whether the current phase waits for an effect's outcome.
    fn in_flight(&self) -> bool {
        matches!(
            self.phase,
            Phase::CheckingSsh(_)
                | Phase::AwaitingLauncher(_)
                | Phase::Starting
                | Phase::Expiring(_)
                | Phase::Cancelling(_)
                | Phase::Revoking(_)
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
            Input::SshChecked(check) => self.ssh_checked(check),
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
        // Every key but `c` closes the QR screen. A device may have
        // enrolled since the last poll: the locked end says, and an
        // enrollment is shown instead of closing.
        if let Phase::Qr(state) = &self.phase
            && key != Key::Char('c')
        {
            self.phase = Phase::Cancelling(state.clone());
            return vec![Effect::ExpireCeremony];
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
            Phase::Enrolled(enrolled) if key == Key::Char('r') && enrolled.appended => {
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
                if self.ssh != SshStatus::Skipped {
                    // Checked again at each Enter: the user may have just
                    // started sshd after reading the row.
                    self.message = Some(CHECKING_SSH.to_owned());
                    self.phase = Phase::CheckingSsh(addresses);
                    return vec![Effect::Repaint, Effect::CheckSsh];
                }
                self.confirmed_with_ssh(addresses)
            }
        }
    }

    /// Addresses confirmed and the SSH preflight passed (or skipped): on to
    /// the launcher test, or the code.
    fn confirmed_with_ssh(&mut self, addresses: Vec<String>) -> Vec<Effect> {
        if let EndpointStatus::Testing { .. } = self.endpoint {
            self.message = Some(TESTING_THE_LAUNCHER.to_owned());
            self.phase = Phase::AwaitingLauncher(addresses);
            return vec![Effect::Repaint, Effect::AwaitLauncher];
        }
        self.confirm(addresses)
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

    fn ssh_checked(&mut self, check: Finding) -> Vec<Effect> {
        let refused = matches!(preflight::verdict(&check), Verdict::Refuse(_));
        self.ssh = SshStatus::Checked(check);
        match std::mem::replace(&mut self.phase, Phase::Select) {
            Phase::CheckingSsh(addresses) => {
                self.message = None;
                if refused {
                    self.message = Some(NO_CODE_WITHOUT_SSH.to_owned());
                    return vec![Effect::Repaint];
                }
                self.confirmed_with_ssh(addresses)
            }
            other => {
                self.phase = other;
                self.repaint_if_select()
            }
        }
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
        if let Phase::Cancelling(_) = self.phase {
            return match outcome {
                Ok(Some(enrolled)) => {
                    self.phase = Phase::Enrolled(enrolled);
                    vec![Effect::Repaint]
                }
                Ok(None) | Err(_) => vec![Effect::Close],
            };
        }
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

#[cfg(test)]
mod tests {
    //! Expected transitions follow the popup's keys and screens as the spec
    //! (the pairing popup checklist and QR paragraphs) and the contract's
    //! popup section (c.4 Keys, c.7 Copy) describe them.

    use super::*;
    use crate::pair::addresses::{Candidate, Origin};

    const CODE: &str = "HERDR-PAIR:1:abc";
    const EXPIRES_AT: i64 = 1_000_120;

    fn row(address: &str, pre_checked: bool) -> Candidate {
        Candidate {
            address: address.into(),
            origin: Origin::Interface("eth0".into()),
            pre_checked,
        }
    }

    /// The checklist of two rows, the first pre-checked, for a v1 herdr.
    fn popup() -> Popup {
        Popup::new(
            Checklist::new(vec![row("10.0.0.1", true), row("10.0.0.2", false)]),
            EndpointStatus::V1(None),
            (40, 100),
        )
    }

    fn endpoint() -> Endpoint {
        Endpoint {
            sock: "/run/herdr/api.sock".into(),
            herdr: "/home/u/.config/h2/launcher".into(),
        }
    }

    fn qr_state() -> Box<QrState> {
        let details = QrDetails {
            user: "u".into(),
            port: 22,
            fingerprint: "SHA256:host".into(),
            addresses: vec!["10.0.0.1".into()],
            valid_until: "12:00:00".into(),
            endpoint: None,
        };
        let qr = Qr::encode(CODE).expect("a short code fits a QR");
        Box::new(QrState::new(CODE.into(), qr, details, EXPIRES_AT))
    }

    fn enrolled() -> Enrolled {
        Enrolled {
            pairing_id: "p1".into(),
            expires_at: EXPIRES_AT,
            fingerprint: "SHA256:device".into(),
            line: "ssh-ed25519 AAAA phone".into(),
            comment: Some("phone".into()),
            appended: true,
        }
    }

    /// The popup on the QR screen of a ceremony confirmed for 10.0.0.1.
    fn on_qr() -> Popup {
        let mut popup = popup();
        popup.step(Input::Key(Key::Enter));
        popup.step(Input::CeremonyStarted(Ok(qr_state())));
        assert!(matches!(popup.phase, Phase::Qr(_)));
        popup
    }

    fn in_phase(phase: Phase) -> Popup {
        let mut popup = popup();
        popup.phase = phase;
        popup
    }

    fn start_for(addresses: &[&str], endpoint: Option<Endpoint>) -> Vec<Effect> {
        vec![Effect::StartCeremony {
            addresses: addresses.iter().map(|a| (*a).to_owned()).collect(),
            endpoint,
        }]
    }

    fn qr_of(popup: &Popup) -> &QrState {
        match &popup.phase {
            Phase::Qr(state) => state,
            other => panic!("not on the QR screen: {other:?}"),
        }
    }

    const QUIT_KEYS: [Key; 3] = [Key::Char('q'), Key::Escape, Key::CtrlC];

    #[test]
    fn quit_keys_close_every_screen_but_the_fatal_one() {
        let screens = [
            Phase::Select,
            Phase::Expired,
            Phase::Enrolled(enrolled()),
            Phase::Revoked("SHA256:device".into()),
            Phase::RevokeFailed("locked".into()),
        ];
        for phase in screens {
            for key in QUIT_KEYS {
                let mut popup = in_phase(phase.clone());
                assert_eq!(
                    popup.step(Input::Key(key)),
                    vec![Effect::Close],
                    "{phase:?}"
                );
            }
        }
    }

    #[test]
    fn quitting_the_qr_screen_ends_the_ceremony_and_shows_what_enrolled() {
        for key in QUIT_KEYS.into_iter().chain([Key::Enter, Key::Char('x')]) {
            // Nothing enrolled (or the end failed): the popup closes.
            for outcome in [Ok(None), Err("lock timeout".to_owned())] {
                let mut popup = in_phase(Phase::Qr(qr_state()));
                assert_eq!(popup.step(Input::Key(key)), vec![Effect::ExpireCeremony]);
                assert!(matches!(popup.phase, Phase::Cancelling(_)));
                assert_eq!(popup.step(Input::Key(Key::Enter)), vec![], "in flight");
                assert_eq!(
                    popup.step(Input::CeremonyExpired(outcome)),
                    vec![Effect::Close]
                );
            }
            // A device enrolled since the last poll: its screen, not a close.
            let mut popup = in_phase(Phase::Qr(qr_state()));
            popup.step(Input::Key(key));
            assert_eq!(
                popup.step(Input::CeremonyExpired(Ok(Some(enrolled())))),
                vec![Effect::Repaint]
            );
            assert_eq!(popup.phase, Phase::Enrolled(enrolled()));
        }
    }

    #[test]
    fn q_on_the_success_screen_closes_without_revoking() {
        let mut popup = in_phase(Phase::Enrolled(enrolled()));
        assert_eq!(popup.step(Input::Key(Key::Char('q'))), vec![Effect::Close]);
        assert_eq!(popup.phase, Phase::Enrolled(enrolled()));
    }

    #[test]
    fn any_key_on_the_fatal_screen_fails_with_its_message() {
        let message = vec!["Could not start pairing: lock timeout".to_owned()];
        for key in [Key::Char('q'), Key::Enter, Key::Char('x'), Key::Other] {
            let mut popup = in_phase(Phase::Fatal(message.clone()));
            assert_eq!(
                popup.step(Input::Key(key)),
                vec![Effect::Fail(message.clone())]
            );
        }
    }

    #[test]
    fn keys_are_ignored_while_an_effect_is_in_flight() {
        let phases = [
            Phase::AwaitingLauncher(vec!["10.0.0.1".into()]),
            Phase::Starting,
            Phase::Expiring(qr_state()),
            Phase::Cancelling(qr_state()),
            Phase::Revoking(enrolled()),
        ];
        for phase in phases {
            for key in [Key::Char('q'), Key::Enter, Key::Char('r'), Key::Char('c')] {
                let mut popup = in_phase(phase.clone());
                assert_eq!(popup.step(Input::Key(key)), Vec::new(), "{phase:?}");
                assert_eq!(popup.phase, phase);
            }
        }
    }

    #[test]
    fn checklist_keys_move_toggle_and_repaint() {
        let mut popup = popup();
        assert_eq!(popup.step(Input::Key(Key::Down)), vec![Effect::Repaint]);
        assert_eq!(popup.list.cursor, 1);
        assert_eq!(
            popup.step(Input::Key(Key::Char('j'))),
            vec![Effect::Repaint]
        );
        assert_eq!(popup.list.cursor, 1, "clamped at the last row");
        assert_eq!(popup.step(Input::Key(Key::Space)), vec![Effect::Repaint]);
        assert_eq!(popup.list.selected(), vec!["10.0.0.1", "10.0.0.2"]);
        assert_eq!(
            popup.step(Input::Key(Key::Char('a'))),
            vec![Effect::Repaint]
        );
        assert_eq!(
            popup.list.selected(),
            Vec::<String>::new(),
            "all were checked"
        );
        assert_eq!(
            popup.step(Input::Key(Key::Char('k'))),
            vec![Effect::Repaint]
        );
        assert_eq!(popup.step(Input::Key(Key::Up)), vec![Effect::Repaint]);
        assert_eq!(popup.list.cursor, 0, "clamped at the first row");
        assert_eq!(popup.phase, Phase::Select);
    }

    #[test]
    fn other_checklist_keys_are_ignored_without_a_repaint() {
        let mut popup = popup();
        for key in [Key::Char('x'), Key::Char('c'), Key::Char('r'), Key::Other] {
            assert_eq!(popup.step(Input::Key(key)), Vec::new());
        }
        assert_eq!(popup, self::popup());
    }

    #[test]
    fn enter_with_nothing_checked_asks_for_an_address_until_the_next_change() {
        let mut popup = popup();
        popup.step(Input::Key(Key::Space));
        assert_eq!(popup.step(Input::Key(Key::Enter)), vec![Effect::Repaint]);
        assert_eq!(popup.phase, Phase::Select);
        assert_eq!(
            popup.message.as_deref(),
            Some("Select at least one address.")
        );
        popup.step(Input::Key(Key::Space));
        assert_eq!(popup.message, None);
    }

    #[test]
    fn enter_starts_pairing_with_the_checked_addresses() {
        let mut popup = popup();
        popup.step(Input::Key(Key::Down));
        popup.step(Input::Key(Key::Space));
        assert_eq!(
            popup.step(Input::Key(Key::Enter)),
            start_for(&["10.0.0.1", "10.0.0.2"], None)
        );
        assert_eq!(popup.phase, Phase::Starting);
        assert_eq!(popup.confirmed, vec!["10.0.0.1", "10.0.0.2"]);
        assert_eq!(
            popup.step(Input::CeremonyStarted(Ok(qr_state()))),
            vec![Effect::Repaint]
        );
        assert_eq!(popup.phase, Phase::Qr(qr_state()));
    }

    #[test]
    fn a_ready_endpoint_goes_into_the_code() {
        let mut popup = popup();
        popup.endpoint = EndpointStatus::Ready(endpoint());
        assert_eq!(
            popup.step(Input::Key(Key::Enter)),
            start_for(&["10.0.0.1"], Some(endpoint()))
        );
    }

    #[test]
    fn a_refused_endpoint_offers_no_code() {
        let mut popup = popup();
        popup.endpoint = EndpointStatus::Refused("The state home is shared.".into());
        assert_eq!(popup.step(Input::Key(Key::Enter)), vec![Effect::Repaint]);
        assert_eq!(popup.phase, Phase::Select);
        assert_eq!(
            popup.message.as_deref(),
            Some("No Pairing Code can be offered for this herdr (see above).")
        );
        assert!(popup.confirmed.is_empty());
    }

    #[test]
    fn enter_during_the_launcher_test_waits_for_it_then_pairs_v2() {
        let mut popup = popup();
        popup.endpoint = EndpointStatus::Testing {
            line: "Endpoint s via l".into(),
        };
        assert_eq!(
            popup.step(Input::Key(Key::Enter)),
            vec![Effect::Repaint, Effect::AwaitLauncher]
        );
        assert_eq!(popup.message.as_deref(), Some("Testing the launcher…"));
        assert_eq!(
            popup.step(Input::LauncherTested(Ok(endpoint()))),
            start_for(&["10.0.0.1"], Some(endpoint()))
        );
        assert_eq!(popup.message, None);
        assert_eq!(popup.endpoint, EndpointStatus::Ready(endpoint()));
        assert_eq!(popup.phase, Phase::Starting);
    }

    #[test]
    fn a_launcher_test_that_fails_after_enter_offers_no_code() {
        let mut popup = popup();
        popup.endpoint = EndpointStatus::Testing { line: "E".into() };
        popup.step(Input::Key(Key::Enter));
        assert_eq!(
            popup.step(Input::LauncherTested(Err("stderr was not empty".into()))),
            vec![Effect::Repaint]
        );
        assert_eq!(
            popup.endpoint,
            EndpointStatus::Refused("stderr was not empty".into())
        );
        assert_eq!(popup.phase, Phase::Select);
        assert_eq!(
            popup.message.as_deref(),
            Some("No Pairing Code can be offered for this herdr (see above).")
        );
    }

    #[test]
    fn background_answers_repaint_only_the_checklist() {
        let serving = TailscaleSsh {
            enabled: true,
            ..TailscaleSsh::default()
        };
        let mut popup = popup();
        assert_eq!(
            popup.step(Input::TailscaleAnswered(serving.clone())),
            vec![Effect::Repaint]
        );
        assert_eq!(popup.tailscale, serving);
        popup.endpoint = EndpointStatus::Testing { line: "E".into() };
        assert_eq!(
            popup.step(Input::LauncherTested(Ok(endpoint()))),
            vec![Effect::Repaint]
        );

        let mut popup = on_qr();
        assert_eq!(popup.step(Input::TailscaleAnswered(serving)), Vec::new());
        assert_eq!(
            popup.step(Input::LauncherTested(Err("late".into()))),
            Vec::new()
        );
        assert!(matches!(popup.phase, Phase::Qr(_)));
    }

    #[test]
    fn a_ceremony_that_cannot_start_is_fatal_and_any_key_then_fails() {
        let mut popup = popup();
        popup.step(Input::Key(Key::Enter));
        let message = vec!["Could not start pairing: lock timeout".to_owned()];
        assert_eq!(
            popup.step(Input::CeremonyStarted(Err(message.clone()))),
            vec![Effect::Repaint]
        );
        assert_eq!(popup.phase, Phase::Fatal(message.clone()));
        assert_eq!(
            popup.step(Input::Key(Key::Char('q'))),
            vec![Effect::Fail(message)]
        );
    }

    #[test]
    fn c_copies_the_exact_code_and_any_other_key_closes_the_qr() {
        let mut popup = on_qr();
        assert_eq!(
            popup.step(Input::Key(Key::Char('c'))),
            vec![Effect::CopyCode(CODE.into())]
        );
        for key in [
            Key::Char('C'),
            Key::Enter,
            Key::Space,
            Key::Char('r'),
            Key::Other,
        ] {
            // The close goes through the locked end of the ceremony.
            let mut popup = on_qr();
            assert_eq!(
                popup.step(Input::Key(key)),
                vec![Effect::ExpireCeremony],
                "{key:?}"
            );
            assert_eq!(
                popup.step(Input::CeremonyExpired(Ok(None))),
                vec![Effect::Close],
                "{key:?}"
            );
        }
    }

    #[test]
    fn a_copy_shows_copied_for_1500_ms() {
        let start = Instant::now();
        let mut popup = on_qr();
        popup.step(Input::Key(Key::Char('c')));
        assert_eq!(
            popup.step(Input::CodeCopied {
                copied: true,
                now: start
            }),
            vec![Effect::Repaint]
        );
        assert_eq!(
            qr_of(&popup).copied_until,
            Some(start + Duration::from_millis(1500))
        );
        assert!(!qr_of(&popup).show_code);
        let tick = |at: u64| Input::Tick {
            now: start + Duration::from_millis(at),
            size: (40, 100),
        };
        assert_eq!(popup.step(tick(1499)), vec![Effect::PollEnrollment]);
        assert!(qr_of(&popup).copied_until.is_some());
        assert_eq!(
            popup.step(tick(1500)),
            vec![Effect::Repaint, Effect::PollEnrollment]
        );
        assert_eq!(qr_of(&popup).copied_until, None, "back to the scan hint");
    }

    #[test]
    fn a_copy_that_reaches_no_clipboard_shows_the_code() {
        let mut popup = on_qr();
        popup.step(Input::Key(Key::Char('c')));
        let effects = popup.step(Input::CodeCopied {
            copied: false,
            now: Instant::now(),
        });
        // OSC 52 with the code's standard base64 (`printf %s CODE | base64`).
        assert_eq!(
            effects,
            vec![
                Effect::SendToTerminal("\x1b]52;c;SEVSRFItUEFJUjoxOmFiYw==\x07".into()),
                Effect::Repaint
            ]
        );
        assert!(qr_of(&popup).show_code);
        assert_eq!(qr_of(&popup).copied_until, None);
    }

    #[test]
    fn a_resize_repaints_every_screen_and_the_same_size_does_not() {
        let now = Instant::now();
        let phases = [
            Phase::Select,
            Phase::Expired,
            Phase::Enrolled(enrolled()),
            Phase::Fatal(vec!["x".into()]),
        ];
        for phase in phases {
            let mut popup = in_phase(phase.clone());
            let same = Input::Tick {
                now,
                size: (40, 100),
            };
            assert_eq!(popup.step(same), Vec::new(), "{phase:?}");
            let resized = Input::Tick {
                now,
                size: (20, 60),
            };
            assert_eq!(popup.step(resized), vec![Effect::Repaint], "{phase:?}");
            assert_eq!(popup.size, (20, 60));
        }
        let mut popup = on_qr();
        let resized = Input::Tick {
            now,
            size: (10, 30),
        };
        assert_eq!(
            popup.step(resized),
            vec![Effect::Repaint, Effect::PollEnrollment]
        );
    }

    #[test]
    fn only_the_qr_screen_polls_for_an_enrollment() {
        let tick = Input::Tick {
            now: Instant::now(),
            size: (40, 100),
        };
        assert_eq!(on_qr().step(tick.clone()), vec![Effect::PollEnrollment]);
        for phase in [
            Phase::Select,
            Phase::Expired,
            Phase::Enrolled(enrolled()),
            Phase::Expiring(qr_state()),
        ] {
            assert_eq!(
                in_phase(phase.clone()).step(tick.clone()),
                Vec::new(),
                "{phase:?}"
            );
        }
    }

    #[test]
    fn an_enrollment_replaces_the_qr_with_the_success_screen() {
        let mut popup = on_qr();
        let polled = Input::EnrollmentPolled {
            enrolled: Some(enrolled()),
            unix: EXPIRES_AT - 60,
        };
        assert_eq!(popup.step(polled), vec![Effect::Repaint]);
        assert_eq!(popup.phase, Phase::Enrolled(enrolled()));
    }

    #[test]
    fn nothing_happens_before_the_ttl_runs_out() {
        let mut popup = on_qr();
        let polled = Input::EnrollmentPolled {
            enrolled: None,
            unix: EXPIRES_AT - 1,
        };
        assert_eq!(popup.step(polled), Vec::new());
        assert_eq!(popup.phase, Phase::Qr(qr_state()));
    }

    #[test]
    fn at_the_ttl_the_locked_expiry_runs_then_the_expired_screen() {
        let mut popup = on_qr();
        let polled = Input::EnrollmentPolled {
            enrolled: None,
            unix: EXPIRES_AT,
        };
        assert_eq!(popup.step(polled), vec![Effect::ExpireCeremony]);
        assert_eq!(popup.phase, Phase::Expiring(qr_state()));
        assert_eq!(
            popup.step(Input::CeremonyExpired(Ok(None))),
            vec![Effect::EndCeremony, Effect::Repaint]
        );
        assert_eq!(popup.phase, Phase::Expired);
    }

    #[test]
    fn an_enrollment_seen_at_the_last_poll_wins_over_the_expiry() {
        let mut popup = on_qr();
        let polled = Input::EnrollmentPolled {
            enrolled: Some(enrolled()),
            unix: EXPIRES_AT + 1,
        };
        assert_eq!(popup.step(polled), vec![Effect::Repaint]);
        assert_eq!(popup.phase, Phase::Enrolled(enrolled()));
    }

    #[test]
    fn an_enrollment_found_by_the_expiry_shows_the_success_screen() {
        let mut popup = on_qr();
        popup.step(Input::EnrollmentPolled {
            enrolled: None,
            unix: EXPIRES_AT,
        });
        assert_eq!(
            popup.step(Input::CeremonyExpired(Ok(Some(enrolled())))),
            vec![Effect::Repaint],
            "the ceremony is not ended: the success screen drives the revoke"
        );
        assert_eq!(popup.phase, Phase::Enrolled(enrolled()));
    }

    #[test]
    fn an_expiry_that_fails_is_fatal() {
        let mut popup = on_qr();
        popup.step(Input::EnrollmentPolled {
            enrolled: None,
            unix: EXPIRES_AT,
        });
        assert_eq!(
            popup.step(Input::CeremonyExpired(Err("lock timeout".into()))),
            vec![Effect::Repaint]
        );
        assert_eq!(
            popup.phase,
            Phase::Fatal(vec!["Could not expire the code: lock timeout".into()])
        );
    }

    #[test]
    fn enter_after_expiry_starts_a_fresh_code_with_the_same_addresses() {
        let mut popup = popup();
        popup.step(Input::Key(Key::Down));
        popup.step(Input::Key(Key::Space));
        popup.step(Input::Key(Key::Enter));
        popup.step(Input::CeremonyStarted(Ok(qr_state())));
        popup.step(Input::EnrollmentPolled {
            enrolled: None,
            unix: EXPIRES_AT,
        });
        popup.step(Input::CeremonyExpired(Ok(None)));
        // The checklist changing afterwards does not change the fresh code.
        popup.list.checked = vec![false, false];
        assert_eq!(
            popup.step(Input::Key(Key::Enter)),
            start_for(&["10.0.0.1", "10.0.0.2"], None)
        );
        assert_eq!(popup.phase, Phase::Starting);
        for key in [Key::Char('r'), Key::Space, Key::Char('c')] {
            assert_eq!(
                in_phase(Phase::Expired).step(Input::Key(key)),
                vec![Effect::Close]
            );
        }
    }

    #[test]
    fn r_after_an_enrollment_revokes_that_device() {
        let mut popup = in_phase(Phase::Enrolled(enrolled()));
        assert_eq!(
            popup.step(Input::Key(Key::Char('r'))),
            vec![Effect::RevokeDevice(enrolled())]
        );
        assert_eq!(popup.phase, Phase::Revoking(enrolled()));
        assert_eq!(
            popup.step(Input::DeviceRevoked(Ok(()))),
            vec![Effect::Repaint]
        );
        assert_eq!(popup.phase, Phase::Revoked("SHA256:device".into()));
        for key in [Key::Char('r'), Key::Enter, Key::Other] {
            let mut done = in_phase(popup.phase.clone());
            assert_eq!(done.step(Input::Key(key)), vec![Effect::Close]);
        }
    }

    #[test]
    fn r_never_revokes_a_key_the_ceremony_did_not_add() {
        let known = Enrolled {
            appended: false,
            ..enrolled()
        };
        for key in [Key::Char('r'), Key::Enter, Key::Char('q')] {
            let mut popup = in_phase(Phase::Enrolled(known.clone()));
            assert_eq!(popup.step(Input::Key(key)), vec![Effect::Close], "{key:?}");
            assert_eq!(popup.phase, Phase::Enrolled(known.clone()));
        }
    }

    #[test]
    fn a_revoke_that_fails_says_why_and_any_key_closes() {
        let mut popup = in_phase(Phase::Enrolled(enrolled()));
        popup.step(Input::Key(Key::Char('r')));
        assert_eq!(
            popup.step(Input::DeviceRevoked(Err("lock timeout".into()))),
            vec![Effect::Repaint]
        );
        assert_eq!(popup.phase, Phase::RevokeFailed("lock timeout".into()));
        assert_eq!(popup.step(Input::Key(Key::Char('r'))), vec![Effect::Close]);
    }

    #[test]
    fn other_keys_close_the_success_screen_keeping_the_device() {
        for key in [Key::Enter, Key::Char('R'), Key::Space, Key::Other] {
            let mut popup = in_phase(Phase::Enrolled(enrolled()));
            assert_eq!(popup.step(Input::Key(key)), vec![Effect::Close], "{key:?}");
        }
    }

    #[test]
    fn outcomes_for_another_phase_change_nothing() {
        let stray = [
            Input::CeremonyStarted(Ok(qr_state())),
            Input::EnrollmentPolled {
                enrolled: Some(enrolled()),
                unix: EXPIRES_AT,
            },
            Input::CeremonyExpired(Ok(None)),
            Input::CodeCopied {
                copied: true,
                now: Instant::now(),
            },
            Input::DeviceRevoked(Ok(())),
        ];
        for input in stray {
            let mut popup = in_phase(Phase::Expired);
            assert_eq!(popup.step(input.clone()), Vec::new(), "{input:?}");
            assert_eq!(popup.phase, Phase::Expired);
        }
    }

    fn ssh_pass() -> Finding {
        preflight::classify(22, &Ok("SSH-2.0-OpenSSH_9.6".into()))
    }

    fn ssh_fail() -> Finding {
        preflight::classify(22, &Err("connection refused".into()))
    }

    /// The popup with the preflight on, its first check answered.
    fn checked(first: Finding) -> Popup {
        let mut popup = popup();
        popup.ssh = SshStatus::Checking;
        assert_eq!(
            popup.step(Input::SshChecked(first.clone())),
            vec![Effect::Repaint]
        );
        assert_eq!(popup.ssh, SshStatus::Checked(first));
        popup
    }

    #[test]
    fn enter_checks_ssh_again_and_a_failure_shows_no_code() {
        let mut popup = checked(ssh_pass());
        assert_eq!(
            popup.step(Input::Key(Key::Enter)),
            vec![Effect::Repaint, Effect::CheckSsh]
        );
        assert_eq!(popup.message.as_deref(), Some(CHECKING_SSH));
        assert_eq!(popup.step(Input::Key(Key::Enter)), Vec::new(), "in flight");
        assert_eq!(
            popup.step(Input::SshChecked(ssh_fail())),
            vec![Effect::Repaint]
        );
        assert_eq!(popup.phase, Phase::Select);
        assert_eq!(popup.message.as_deref(), Some(NO_CODE_WITHOUT_SSH));
        assert_eq!(popup.ssh, SshStatus::Checked(ssh_fail()));
        assert!(popup.confirmed.is_empty());
    }

    #[test]
    fn a_passing_check_at_enter_starts_the_ceremony() {
        let mut popup = checked(ssh_fail());
        popup.step(Input::Key(Key::Enter));
        assert_eq!(
            popup.step(Input::SshChecked(ssh_pass())),
            start_for(&["10.0.0.1"], None)
        );
        assert_eq!(popup.message, None);
        // A warning (not OpenSSH) goes on as well.
        let mut popup = checked(ssh_pass());
        popup.step(Input::Key(Key::Enter));
        let other = preflight::classify(22, &Ok("SSH-2.0-dropbear_2022.83".into()));
        assert_eq!(
            popup.step(Input::SshChecked(other)),
            start_for(&["10.0.0.1"], None)
        );
    }

    #[test]
    fn the_launcher_test_follows_a_passing_ssh_check() {
        let mut popup = checked(ssh_pass());
        popup.endpoint = EndpointStatus::Testing {
            line: "Endpoint".into(),
        };
        popup.step(Input::Key(Key::Enter));
        assert_eq!(
            popup.step(Input::SshChecked(ssh_pass())),
            vec![Effect::Repaint, Effect::AwaitLauncher]
        );
        assert_eq!(
            popup.step(Input::LauncherTested(Ok(endpoint()))),
            start_for(&["10.0.0.1"], Some(endpoint()))
        );
    }

    #[test]
    fn a_late_ssh_answer_only_updates_the_row() {
        let mut popup = on_qr();
        popup.ssh = SshStatus::Checking;
        assert_eq!(popup.step(Input::SshChecked(ssh_fail())), Vec::new());
        assert!(matches!(popup.phase, Phase::Qr(_)));
        // Skipped (--no-ssh-check): Enter starts at once.
        let mut popup = popup_skipping_ssh();
        assert_eq!(
            popup.step(Input::Key(Key::Enter)),
            start_for(&["10.0.0.1"], None)
        );
    }

    fn popup_skipping_ssh() -> Popup {
        let popup = popup();
        assert_eq!(popup.ssh, SshStatus::Skipped);
        popup
    }
}

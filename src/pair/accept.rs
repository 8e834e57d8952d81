//! `heeler accept`: the Enrollment entrypoint sshd runs as the Bootstrap
//! Key's forced command.
//!
//! The app writes its Device Key public line on stdin; we answer with
//! exactly one stdout line, `HERDR-ENROLL:OK:<SHA256:…>` (exit 0) or
//! `HERDR-ENROLL:ERR:<unknown_pairing|expired|invalid_key|no_input>`
//! (exit 1), with a human-readable detail on stderr. The enrollment itself
//! (record `enrolled/`, append the Device Key, drop the bootstrap line,
//! drop `pending/`, in that order, so that the key file is the truth: see
//! `enroll`) happens inside the authorized_keys lock, so it is single
//! use even against a concurrent `accept` or a racing expiry. The
//! Bootstrap Key itself (this ceremony's, any other bootstrap line's, or
//! any of the recent ceremonies' the state dir remembers in
//! `bootstrap-keys.json`) is refused as a Device Key (`invalid_key`): its
//! seed is in a Pairing Code, so it would log in forever. A Device Key
//! that is already authorized (any line with its blob, options or not) is
//! not appended again; the answer is still OK and the record says
//! `appended: false`, so the starter offers no revoke for a line it did not
//! add.
//!
//! A refused pairing (no pending file, or expired) loses what is left of
//! its bootstrap line and pending file, never its enrolled record: whoever
//! holds the Bootstrap Key can open more sessions on the connection that
//! enrolled (sshd checks authorized_keys once per connection, not per
//! session), and each must leave the starter's report intact. Such a
//! session answers `unknown_pairing` (detail: already used).
//!
//! sshd runs us with a minimal environment and no PATH: nothing here looks
//! anything up on PATH. `HOME` comes from the environment; when it is
//! missing (only under `env -i`, sshd always sets it) we deliberately use
//! the passwd home of the effective uid instead of refusing, which the Node
//! plugin did.
//!
//! An internal failure that fits none of the protocol's codes (the lock
//! timed out, the disk is full) prints no protocol line — like the Node
//! plugin's uncaught exception — only the detail on stderr, exit 1. A
//! state dir another user can write to is such a failure: its pending
//! record is not read (see `state.rs`).

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::base::dirs;
use crate::base::sys;
use crate::cli::AcceptArgs;
use crate::pair::authorized_keys::{self, Location};
use crate::pair::ceremony;
use crate::pair::device_key::{self, DeviceKey, DeviceKeyError};
use crate::pair::state::{EnrolledRecord, StateDir};

/// Stop reading stdin after this many characters without a newline.
pub(crate) const MAX_INPUT_CHARS: usize = 4096;
/// Stop waiting for stdin after this long.
pub(crate) const INPUT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why an enrollment was refused; [`AcceptError::code`] is the wire code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcceptError {
    MissingArguments,
    NoPendingPairing(String),
    AlreadyUsed(String),
    Expired(String),
    NoInput,
    InvalidKey(device_key::DeviceKeyError),
    /// Not a protocol answer: nothing goes to stdout.
    Internal(String),
}

impl AcceptError {
    /// The `HERDR-ENROLL:ERR:` code, or `None` for internal failures.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            AcceptError::MissingArguments
            | AcceptError::NoPendingPairing(_)
            | AcceptError::AlreadyUsed(_) => Some("unknown_pairing"),
            AcceptError::Expired(_) => Some("expired"),
            AcceptError::NoInput => Some("no_input"),
            AcceptError::InvalidKey(_) => Some("invalid_key"),
            AcceptError::Internal(_) => None,
        }
    }

    /// The stderr detail: the error's text.
    pub fn detail(&self) -> String {
        self.to_string()
    }
}

impl std::fmt::Display for AcceptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcceptError::MissingArguments => {
                f.write_str("accept requires --state-dir, --pairing-id, and HOME")
            }
            AcceptError::NoPendingPairing(id) => write!(f, "no pending pairing {id}"),
            AcceptError::AlreadyUsed(id) => write!(f, "pairing {id} was already used"),
            AcceptError::Expired(id) => {
                write!(f, "pairing {id} expired; regenerate the Pairing Code")
            }
            AcceptError::NoInput => f.write_str("expected a Device Key public line on stdin"),
            AcceptError::InvalidKey(reason) => write!(f, "rejected Device Key line: {reason}"),
            AcceptError::Internal(message) => write!(f, "enrollment failed: {message}"),
        }
    }
}

impl std::error::Error for AcceptError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AcceptError::InvalidKey(e) => Some(e),
            _ => None,
        }
    }
}

/// What `accept` works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub state_dir: Option<PathBuf>,
    pub pairing_id: Option<String>,
    pub home: Option<PathBuf>,
}

impl Request {
    /// The request of a command line, with the home `dirs` resolves (no
    /// home at all is a missing argument, reported by [`accept`]).
    pub fn new(args: AcceptArgs, dirs: &dirs::Env) -> Request {
        Request {
            state_dir: args.state_dir.map(PathBuf::from),
            pairing_id: args.pairing_id,
            home: dirs.home().ok(),
        }
    }
}

/// The command: reads stdin, prints the protocol line, returns the status.
pub fn run(args: AcceptArgs) -> ExitCode {
    let request = Request::new(args, &dirs::Env::process());
    // One deadline for the whole line (the contract's 30 s), shortened
    // only by the tests' cap.
    let timeout =
        crate::base::clock::test_deadline_cap().map_or(INPUT_TIMEOUT, |cap| cap.min(INPUT_TIMEOUT));
    let outcome = accept(
        &request,
        std::io::stdin(),
        timeout,
        &crate::base::clock::unix_seconds,
    );
    let (stdout_line, stderr_line, status) = match outcome {
        Ok(key) => (
            Some(format!("HERDR-ENROLL:OK:{}", key.fingerprint)),
            format!("enrolled Device Key {}", key.fingerprint),
            ExitCode::SUCCESS,
        ),
        Err(error) => (
            error.code().map(|code| format!("HERDR-ENROLL:ERR:{code}")),
            error.detail(),
            ExitCode::FAILURE,
        ),
    };
    // Write errors (the client went away) are ignored: never panic here.
    if let Some(line) = stdout_line {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
    }
    let _ = writeln!(std::io::stderr().lock(), "{stderr_line}");
    status
}

/// The whole enrollment, with stdin, its timeout and the clock injected.
pub fn accept(
    request: &Request,
    stdin: impl Read + AsFd,
    timeout: Duration,
    now: &dyn Fn() -> i64,
) -> Result<DeviceKey, AcceptError> {
    let (Some(state_dir), Some(pairing_id), Some(home)) =
        (&request.state_dir, &request.pairing_id, &request.home)
    else {
        return Err(AcceptError::MissingArguments);
    };
    if !authorized_keys::is_valid_pairing_id(pairing_id) {
        return Err(AcceptError::NoPendingPairing(pairing_id.clone()));
    }
    let state = StateDir::new(state_dir);
    state
        .trusted()
        .map_err(|e| AcceptError::Internal(e.to_string()))?;
    let location = Location::for_home(home);
    // A refusal drops what is left of the bootstrap, never the enrolled
    // record: that is the starter's report of an enrollment that happened.
    let Some(pending) = state.read_pending(pairing_id) else {
        let _ = ceremony::drop_bootstrap(&location, &state, pairing_id);
        if state.read_enrolled(pairing_id).is_some() {
            return Err(AcceptError::AlreadyUsed(pairing_id.clone()));
        }
        return Err(AcceptError::NoPendingPairing(pairing_id.clone()));
    };
    if now() > pending.expires_at {
        let _ = ceremony::drop_bootstrap(&location, &state, pairing_id);
        return Err(AcceptError::Expired(pairing_id.clone()));
    }
    let key = submitted_key(&read_submission(stdin, timeout))?;
    // The Pairing Code prints this key's seed: as a Device Key it would
    // let anyone who saw the code log in for good.
    if authorized_keys::key_blob_of(pending.public_line.as_bytes())
        == Some(key.blob_base64.as_bytes())
    {
        return Err(AcceptError::InvalidKey(DeviceKeyError::BootstrapKey));
    }
    // Nor any earlier ceremony's, even one whose line is gone: its seed
    // was printed too.
    if state.bootstrap_history().contains(&key.fingerprint) {
        return Err(AcceptError::InvalidKey(DeviceKeyError::BootstrapKey));
    }
    ceremony::pause_point("accept");
    enroll(&location, &state, pairing_id, pending.expires_at, &key, now)?;
    Ok(key)
}

/// Whether a Bootstrap Key line among `lines` (one with a
/// `herdr-pairing:` marker, of any ceremony) carries `blob`.
fn is_bootstrap_blob(lines: &[Vec<u8>], blob: &str) -> bool {
    lines.iter().any(|line| {
        authorized_keys::marker_of(line).is_some()
            && authorized_keys::key_blob_of(line) == Some(blob.as_bytes())
    })
}

/// The locked step: single use, expiry re-checked, Device Key appended
/// once. The writes go in the order that keeps the key file the truth
/// (see `ceremony.rs`): the enrolled record first (what is about to be
/// done), then the Device Key line (one append), then the bootstrap line's
/// removal and the pending file's. Killed after the record, the ceremony
/// finds a record without its key and reports nothing; killed after the
/// key, it finds both and reports the enrollment, and this pairing stays
/// used: a later `accept` finds the record's key present and refuses.
fn enroll(
    location: &Location,
    state: &StateDir,
    pairing_id: &str,
    expires_at: i64,
    key: &DeviceKey,
    now: &dyn Fn() -> i64,
) -> Result<(), AcceptError> {
    let internal = |e: &dyn std::fmt::Display| AcceptError::Internal(e.to_string());
    let locked = authorized_keys::Locked::acquire(location).map_err(|e| internal(&e))?;
    if !state.pending_exists(pairing_id) {
        return Err(AcceptError::AlreadyUsed(pairing_id.to_owned()));
    }
    let lines = locked.read().map_err(|e| internal(&e))?;
    let drop_bootstrap = |locked: &authorized_keys::Locked| {
        locked
            .rewrite(|lines| authorized_keys::remove_pairing(lines, pairing_id))
            .map_err(|e| internal(&e))?;
        state.remove_pending(pairing_id).map_err(|e| internal(&e))
    };
    let earlier = state.read_enrolled(pairing_id);
    if let ceremony::Verdict::Enrolled(_) =
        ceremony::judge(earlier.as_ref(), &lines, ceremony::Moment::Settled)
    {
        // An earlier accept got its key in and was killed before its
        // cleanup: the pairing is used.
        drop_bootstrap(&locked)?;
        return Err(AcceptError::AlreadyUsed(pairing_id.to_owned()));
    }
    if now() > expires_at {
        drop_bootstrap(&locked)?;
        return Err(AcceptError::Expired(pairing_id.to_owned()));
    }
    if is_bootstrap_blob(&lines, &key.blob_base64) {
        return Err(AcceptError::InvalidKey(DeviceKeyError::BootstrapKey));
    }
    let appended = !authorized_keys::has_blob(&lines, &key.blob_base64);
    state
        .write_enrolled(&EnrolledRecord {
            pairing_id: pairing_id.to_owned(),
            expires_at,
            fingerprint: key.fingerprint.clone(),
            line: key.line.clone(),
            appended: Some(appended),
        })
        .map_err(|e| internal(&e))?;
    ceremony::pause_point("record");
    if appended && let Err(e) = locked.append(&key.line) {
        let _ = state.remove_enrolled(pairing_id);
        return Err(internal(&e));
    }
    ceremony::pause_point("key");
    // The Device Key is in: the enrollment happened, so it is answered OK
    // even if this cleanup fails (the ceremony's end removes the line
    // again, and the record keeps the pairing single-use meanwhile).
    let _ = drop_bootstrap(&locked);
    Ok(())
}

/// The Device Key a submission (what [`read_submission`] returned) names:
/// blank is [`AcceptError::NoInput`], anything else must be a valid key.
pub fn submitted_key(submitted: &str) -> Result<DeviceKey, AcceptError> {
    if submitted.trim().is_empty() {
        return Err(AcceptError::NoInput);
    }
    device_key::parse(submitted).map_err(AcceptError::InvalidKey)
}

/// Reads stdin until the first newline, [`MAX_INPUT_CHARS`] characters,
/// EOF, an error, or `timeout`, whichever comes first, and returns the text
/// before the first newline. Each read is preceded by `poll`, so a silent
/// client cannot hold us past the deadline.
pub fn read_submission(mut input: impl Read + AsFd, timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        if bytes.contains(&b'\n') {
            break;
        }
        if String::from_utf8_lossy(&bytes).encode_utf16().count() >= MAX_INPUT_CHARS {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match sys::wait_readable(input.as_fd(), left) {
            Ok(true) => {}
            Ok(false) | Err(_) => break,
        }
        match input.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    text.split('\n').next().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pair::bootstrap_key::BootstrapKey;
    use crate::pair::ceremony::CeremonyConfig;
    use std::path::Path;

    /// A socket that yields `bytes` and then EOF.
    fn piped(bytes: &[u8]) -> std::os::unix::net::UnixStream {
        let (mut writer, reader) = std::os::unix::net::UnixStream::pair().unwrap();
        writer.write_all(bytes).unwrap();
        writer.shutdown(std::net::Shutdown::Write).unwrap();
        reader
    }

    fn setup(name: &str) -> (crate::base::scratch::ScratchDir, CeremonyConfig) {
        let root = crate::base::scratch::ScratchDir::new(&format!("accept-{name}"));
        std::fs::create_dir_all(root.join("home")).unwrap();
        let config = CeremonyConfig::new(&root.join("home"), &root.join("state"), Path::new("/h"));
        (root, config)
    }

    fn request(config: &CeremonyConfig, id: &str) -> Request {
        Request {
            state_dir: Some(config.state_dir.clone()),
            pairing_id: Some(id.into()),
            home: Some(config.home.clone()),
        }
    }

    fn device_line() -> String {
        format!(
            "{} iPhone",
            BootstrapKey::from_seed([3; 32]).unwrap().public_line()
        )
    }

    fn submit(
        config: &CeremonyConfig,
        id: &str,
        input: &str,
        now: i64,
    ) -> Result<DeviceKey, AcceptError> {
        let input = piped(input.as_bytes());
        accept(
            &request(config, id),
            input,
            Duration::from_secs(5),
            &move || now,
        )
    }

    fn authorized(config: &CeremonyConfig) -> String {
        std::fs::read_to_string(config.home.join(".ssh/authorized_keys")).unwrap_or_default()
    }

    #[test]
    fn enrolls_once_after_bad_submissions() {
        let (_scratch, config) = setup("once");
        let ceremony = ceremony::begin_at(&config, 1000).unwrap();
        let id = ceremony.pairing_id().to_owned();
        assert_eq!(
            submit(&config, &id, "", 1001).unwrap_err().code(),
            Some("no_input")
        );
        assert_eq!(
            submit(&config, &id, "  \n", 1001).unwrap_err().code(),
            Some("no_input")
        );
        assert_eq!(
            submit(&config, &id, "ssh-rsa AAAA\n", 1001)
                .unwrap_err()
                .code(),
            Some("invalid_key")
        );
        assert!(
            authorized(&config).contains(&id),
            "bad input keeps the line"
        );
        let key = submit(&config, &id, &format!("{}\nignored", device_line()), 1120).unwrap();
        assert_eq!(authorized(&config), format!("{}\n", device_line()));
        assert_eq!(
            ceremony.poll_enrolled().unwrap().fingerprint,
            key.fingerprint
        );
        assert_eq!(
            submit(&config, &id, &device_line(), 1001)
                .unwrap_err()
                .code(),
            Some("unknown_pairing")
        );
    }

    #[test]
    fn expiry_unknown_and_idempotent_reenrollment() {
        let (_scratch, config) = setup("expiry");
        let ceremony = ceremony::begin_at(&config, 1000).unwrap();
        let id = ceremony.pairing_id().to_owned();
        assert_eq!(
            submit(&config, &id, &device_line(), 1121)
                .unwrap_err()
                .code(),
            Some("expired")
        );
        assert_eq!(authorized(&config), "");
        assert_eq!(
            submit(&config, &id, &device_line(), 1000)
                .unwrap_err()
                .code(),
            Some("unknown_pairing")
        );
        assert_eq!(
            submit(&config, "../x", &device_line(), 1000)
                .unwrap_err()
                .code(),
            Some("unknown_pairing")
        );
        let missing = Request {
            home: None,
            ..request(&config, &id)
        };
        assert_eq!(
            accept(&missing, piped(b""), Duration::from_secs(1), &|| 0).unwrap_err(),
            AcceptError::MissingArguments
        );
        // Already authorized: OK, and the key is not duplicated.
        std::fs::write(
            config.home.join(".ssh/authorized_keys"),
            format!("{}\n", device_line()),
        )
        .unwrap();
        let again = ceremony::begin_at(&config, 1000).unwrap();
        submit(&config, again.pairing_id(), &device_line(), 1000).unwrap();
        assert_eq!(authorized(&config), format!("{}\n", device_line()));
    }

    #[test]
    fn a_later_session_keeps_the_enrollment_it_cannot_repeat() {
        let (_scratch, config) = setup("later");
        let ceremony = ceremony::begin_at(&config, 1000).unwrap();
        let id = ceremony.pairing_id().to_owned();
        let key = submit(&config, &id, &device_line(), 1001).unwrap();
        // A second session on the same connection: no pending file any more.
        let again = submit(&config, &id, &device_line(), 1002).unwrap_err();
        assert_eq!(again.code(), Some("unknown_pairing"));
        assert_eq!(again, AcceptError::AlreadyUsed(id.clone()));
        let enrolled = ceremony.poll_enrolled().expect("the record survives");
        assert_eq!(enrolled.fingerprint, key.fingerprint);
        assert!(enrolled.appended);
        assert_eq!(authorized(&config), format!("{}\n", device_line()));
        // Even past the expiry, with a pending file left behind by a crash.
        let state = StateDir::new(&config.state_dir);
        state
            .write_pending(&crate::pair::state::Pending {
                pairing_id: id.clone(),
                expires_at: 1120,
                public_line: ceremony.public_line(),
            })
            .unwrap();
        let late = submit(&config, &id, &device_line(), 1121).unwrap_err();
        assert_eq!(late.code(), Some("expired"));
        assert!(!state.pending_exists(&id));
        assert_eq!(
            ceremony.poll_enrolled().map(|e| e.fingerprint),
            Some(key.fingerprint)
        );
    }

    #[test]
    fn an_already_authorized_key_is_recorded_as_not_appended() {
        let (_scratch, config) = setup("known");
        let mine = format!("from=\"10.0.0.0/8\",no-pty {} mine", device_line());
        std::fs::create_dir_all(config.home.join(".ssh")).unwrap();
        std::fs::write(
            config.home.join(".ssh/authorized_keys"),
            format!("{mine}\n"),
        )
        .unwrap();
        let ceremony = ceremony::begin_at(&config, 1000).unwrap();
        let key = submit(&config, ceremony.pairing_id(), &device_line(), 1001).unwrap();
        assert_eq!(authorized(&config), format!("{mine}\n"), "nothing added");
        let enrolled = ceremony.poll_enrolled().unwrap();
        assert_eq!(enrolled.fingerprint, key.fingerprint);
        assert!(!enrolled.appended);
        assert!(!ceremony::revoke_device(&config.home, &enrolled).unwrap());
        assert_eq!(authorized(&config), format!("{mine}\n"), "revoke keeps it");
    }

    #[test]
    fn a_bootstrap_key_is_refused_as_a_device_key() {
        let (_scratch, config) = setup("bootkey");
        let other = ceremony::begin_at(&config, 1000).unwrap();
        let ceremony = ceremony::begin_at(&config, 1000).unwrap();
        let id = ceremony.pairing_id().to_owned();
        for (public_line, whose) in [
            (ceremony.public_line(), "this ceremony's"),
            (other.public_line(), "another ceremony's"),
        ] {
            let error = submit(&config, &id, &format!("{public_line} phone\n"), 1001).unwrap_err();
            assert_eq!(error.code(), Some("invalid_key"), "{whose}");
            assert_eq!(
                error.detail(),
                "rejected Device Key line: key is a Bootstrap Key, not a Device Key"
            );
        }
        assert!(
            authorized(&config).contains(&id),
            "a refusal keeps the line"
        );
        assert!(ceremony.poll_enrolled().is_none());
        submit(&config, &id, &device_line(), 1001).unwrap();
        assert_eq!(ceremony.end().unwrap().map(|e| e.line), Some(device_line()));
    }

    #[test]
    fn a_record_without_its_key_does_not_use_the_pairing_and_one_with_it_does() {
        let (_scratch, config) = setup("stale");
        let ceremony = ceremony::begin_at(&config, 1000).unwrap();
        let id = ceremony.pairing_id().to_owned();
        let state = StateDir::new(&config.state_dir);
        // What an accept killed between its record and its key line left.
        let stale = EnrolledRecord {
            pairing_id: id.clone(),
            expires_at: 1120,
            fingerprint: "SHA256:killed".into(),
            line: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKilledKilledKilledKilledKilledKilledKill killed".into(),
            appended: Some(true),
        };
        state.write_enrolled(&stale).unwrap();
        assert!(ceremony.poll_enrolled().is_none(), "no key, no enrollment");
        let key = submit(&config, &id, &device_line(), 1001).unwrap();
        assert_eq!(
            state.read_enrolled(&id).unwrap().fingerprint,
            key.fingerprint
        );
        // What an accept killed after its key line left: the pending file
        // and the bootstrap line are back, but the pairing is used.
        state
            .write_pending(&crate::pair::state::Pending {
                pairing_id: id.clone(),
                expires_at: 1120,
                public_line: ceremony.public_line(),
            })
            .unwrap();
        let other = format!(
            "{} other",
            BootstrapKey::from_seed([4; 32]).unwrap().public_line()
        );
        let again = submit(&config, &id, &other, 1002).unwrap_err();
        assert_eq!(again, AcceptError::AlreadyUsed(id.clone()));
        assert!(!state.pending_exists(&id));
        assert_eq!(authorized(&config), format!("{}\n", device_line()));
        assert_eq!(
            ceremony.end().unwrap().map(|e| e.fingerprint),
            Some(key.fingerprint)
        );
    }

    #[test]
    fn the_home_is_home_else_the_passwd_home_else_missing() {
        let args = || AcceptArgs {
            state_dir: Some("/s".into()),
            pairing_id: Some("p".into()),
        };
        let home_of = |home: Option<&str>, passwd: Option<&str>| {
            let var = move |name: &str| (name == "HOME").then(|| home.map(Into::into)).flatten();
            let passwd_home = move || passwd.map(PathBuf::from);
            let dirs = dirs::Env {
                var: &var,
                passwd_home: &passwd_home,
            };
            Request::new(args(), &dirs).home
        };
        assert_eq!(home_of(Some("/h"), Some("/pw")), Some("/h".into()));
        assert_eq!(home_of(Some(""), Some("/pw")), Some("/pw".into()));
        assert_eq!(home_of(None, Some("/pw")), Some("/pw".into()));
        assert_eq!(home_of(Some(""), None), None);
        let request = Request::new(args(), &dirs::Env::process());
        assert_eq!(request.state_dir, Some("/s".into()));
        assert_eq!(request.pairing_id.as_deref(), Some("p"));
    }

    #[test]
    fn reads_are_bounded() {
        let long = "x".repeat(10_000);
        let read = read_submission(piped(long.as_bytes()), Duration::from_secs(5));
        assert!(read.len() >= MAX_INPUT_CHARS && read.len() <= MAX_INPUT_CHARS + 4096);
        // A line that arrives in pieces, the stream staying open.
        let (mut writer, reader) = std::os::unix::net::UnixStream::pair().unwrap();
        let slow = std::thread::spawn(move || {
            writer.write_all(b"ssh-ed25519 ").unwrap();
            std::thread::sleep(Duration::from_millis(50));
            writer.write_all(b"AAAA label\nmore").unwrap();
            writer
        });
        assert_eq!(
            read_submission(reader, Duration::from_secs(5)),
            "ssh-ed25519 AAAA label"
        );
        drop(slow.join().unwrap());
        let (_keep, pipe) = std::os::unix::net::UnixStream::pair().unwrap();
        let started = Instant::now();
        assert_eq!(read_submission(pipe, Duration::from_millis(100)), "");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

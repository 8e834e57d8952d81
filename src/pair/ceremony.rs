//! The pairing ceremony, server side: mint a Bootstrap Key, authorize it for
//! exactly one forced command, wait for the app to enroll its Device Key
//! through that command (`heeler accept`), then clean up.
//!
//! This is the API both front ends use — the popup (`heeler pair`) and the
//! headless `heeler pair --no-ui`:
//!
//! ```no_run
//! # use heeler::pair::ceremony::{self, CeremonyConfig};
//! # use heeler::base::clock::unix_seconds;
//! # fn demo(home: &std::path::Path, state: &std::path::Path) -> Result<(), ceremony::CeremonyError> {
//! let config = CeremonyConfig::new(home, state, &ceremony::current_exe()?);
//! ceremony::sweep(home, state, unix_seconds())?;          // once at start-up
//! let ceremony = ceremony::begin(&config)?;               // pending file + bootstrap line
//! let bootstrap = ceremony.bootstrap();                   // seed + exp for the Pairing Code
//! # let _ = bootstrap;
//! loop {
//!     let seen = ceremony.poll_enrolled().is_some();      // every ≤ 400 ms
//!     if seen || unix_seconds() >= ceremony.expires_at() /* or a signal, a cancel */ {
//!         match ceremony.end()? {                         // locked: what the key file holds
//!             Some(enrolled) => println!("{} {:?}", enrolled.fingerprint, enrolled.comment),
//!             None => { /* nothing enrolled: the line is gone */ }
//!         }
//!         // optionally: ceremony::revoke_device(home, &enrolled)?;
//!         break;
//!     }
//! #   break;
//! }
//! # Ok(()) }
//! ```
//!
//! * [`begin`] writes `pending/<id>.json` first, then appends the restricted
//!   bootstrap line (removing the pending file again if the append fails).
//! * The key file is the truth. `heeler accept` writes `enrolled/<id>.json`
//!   (the record of what it is about to do) before it appends the Device
//!   Key line, then removes the bootstrap line and `pending/`; a record
//!   whose key is not in `authorized_keys` is an enrollment that did not
//!   happen (an `accept` killed between the two writes), and [`judge`], the
//!   pure decision every reader of a record goes through, never reports
//!   it. A poll ([`Ceremony::poll_enrolled`]) reads the record and the key
//!   file without the lock, so a record whose key is still missing there
//!   means "not yet".
//! * [`Ceremony::end`] is the one way out, whatever ends the ceremony: an
//!   enrollment seen by the poll, the expiry, a cancel, a signal. Inside the
//!   authorized_keys lock, the lock `heeler accept` enrolls under, it reads
//!   the record and the key file, removes the bootstrap line, the pending
//!   and the enrolled file, and returns the Device Key this ceremony
//!   enrolled if the key file holds it. An enrollment is therefore never
//!   lost to a racing expiry or signal, and never reported without its key:
//!   either accept finished its key line before `end` took the lock, or it
//!   finds no pending file afterwards and refuses. Calling it again is
//!   harmless (it returns `None`). It never touches an enrolled Device Key
//!   line — revoking one is [`revoke_device`].
//! * `heeler accept` refusing a pairing (no pending file, or expired) calls
//!   [`drop_bootstrap`], never [`Ceremony::end`]: the enrolled record
//!   belongs to the ceremony's starter, and a second session on the
//!   connection that enrolled (sshd does not re-check authorized_keys per
//!   session) must not hide that enrollment from the popup or `pair --no-ui`.
//! * [`revoke_device`] removes only the exact line the ceremony appended,
//!   and nothing when the ceremony appended none (the Device Key was
//!   already authorized, or the record does not say): revoke never removes
//!   a line heeler did not add, such as the user's own `from=`-restricted
//!   line for the same key.
//! * [`sweep`] drops expired bootstrap lines (any ceremony, e.g. of a killed
//!   popup) and finished state files.
//! * [`pause_point`] (debug builds only) lets a test stop a process at a
//!   named step, so killing or cancelling there is deterministic.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::pair::authorized_keys::{self, EditError, Location};
use crate::pair::bootstrap_key::{BootstrapKey, RandomUnavailable};
use crate::pair::state::{EnrolledRecord, Pending, StateDir, StateError};
use crate::wire::pairing_code::Bootstrap;

/// How long a Bootstrap Key is valid.
pub(crate) const PAIRING_TTL_SECONDS: i64 = 120;

/// What a ceremony needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CeremonyConfig {
    /// The plugin state dir (`HERDR_PLUGIN_STATE_DIR`); absolute.
    pub state_dir: PathBuf,
    /// The home whose `.ssh/authorized_keys` is edited.
    pub home: PathBuf,
    /// This binary, by absolute path: the forced command runs it.
    pub(crate) heeler_exe: PathBuf,
    /// Bootstrap Key lifetime; [`PAIRING_TTL_SECONDS`] outside tests.
    pub(crate) ttl_seconds: i64,
    /// Whether the bootstrap line carries `expiry-time="…Z"`, so sshd
    /// itself refuses the key after its expiry ([`sshd_reads_utc_expiry`]).
    pub(crate) sshd_expiry: bool,
}

impl CeremonyConfig {
    /// A config with the standard TTL, asking this machine's sshd whether
    /// it reads a UTC `expiry-time`.
    pub fn new(home: &Path, state_dir: &Path, heeler_exe: &Path) -> CeremonyConfig {
        CeremonyConfig {
            state_dir: state_dir.to_path_buf(),
            home: home.to_path_buf(),
            heeler_exe: heeler_exe.to_path_buf(),
            ttl_seconds: PAIRING_TTL_SECONDS,
            sshd_expiry: sshd_reads_utc_expiry(),
        }
    }
}

/// The sshd whose version decides whether a bootstrap line carries
/// `expiry-time` (the path Debian, Ubuntu, Fedora and macOS install it at).
const SSHD: &str = "/usr/sbin/sshd";

/// The first OpenSSH release whose `expiry-time` takes a `Z` (UTC) suffix
/// (9.1; `expiry-time` itself is 7.7's). An older sshd reads the suffix as
/// a malformed option and refuses the whole line, so the line carries no
/// `expiry-time` for it.
const OPENSSH_UTC_EXPIRY: (u32, u32) = (9, 1);

/// `(major, minor)` of the first `OpenSSH_<major>.<minor>` in `text` (what
/// `sshd -V` prints, or its usage text on releases without `-V`, which
/// starts with the same version line).
pub(crate) fn openssh_version(text: &str) -> Option<(u32, u32)> {
    let rest = &text[text.find("OpenSSH_")? + "OpenSSH_".len()..];
    let (major, rest) = rest.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Whether `sshd -V` names an OpenSSH that reads `expiry-time="…Z"`
/// ([`OPENSSH_UTC_EXPIRY`]); `false` when there is no such sshd or it does
/// not answer within a second (heeler's own expiry checks still hold).
pub(crate) fn sshd_reads_utc_expiry() -> bool {
    let mut command = std::process::Command::new(SSHD);
    command.arg("-V").env_clear();
    let Ok(done) = crate::base::process::run(&mut command, std::time::Duration::from_secs(1), 4096)
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&done.stderr);
    openssh_version(&text).is_some_and(|version| version >= OPENSSH_UTC_EXPIRY)
}

/// The `expiry-time="YYYYMMDDHHMMSSZ"` option (sshd(8), AUTHORIZED_KEYS
/// FILE FORMAT) for unix second `expires_at`, in UTC. sshd refuses the key
/// once the time is past, as `accept` refuses a pairing whose `expiresAt`
/// is past.
pub(crate) fn expiry_time_option(expires_at: i64) -> String {
    let (year, month, day) = crate::base::tz::civil_from_days(expires_at.div_euclid(86_400));
    let second = expires_at.rem_euclid(86_400);
    format!(
        "expiry-time=\"{year:04}{month:02}{day:02}{:02}{:02}{:02}Z\"",
        second / 3600,
        second % 3600 / 60,
        second % 60
    )
}

/// Why a ceremony step failed.
#[derive(Debug)]
pub enum CeremonyError {
    /// A path that would break the forced command's quoting.
    UnsafePath {
        what: &'static str,
        path: PathBuf,
    },
    /// A path that must be absolute is not.
    RelativePath {
        what: &'static str,
        path: PathBuf,
    },
    /// The path of this executable could not be determined.
    CurrentExe(std::io::Error),
    Random(RandomUnavailable),
    State(StateError),
    AuthorizedKeys(EditError),
    /// The state dir is not trusted ([`StateDir::trusted`]).
    Untrusted(crate::base::dirs::Untrusted),
}

impl fmt::Display for CeremonyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CeremonyError::UnsafePath { what, path } => write!(
                f,
                "{what} must not contain quotes or newlines: {}",
                path.display()
            ),
            CeremonyError::RelativePath { what, path } => {
                write!(f, "{what} must be an absolute path: {}", path.display())
            }
            CeremonyError::CurrentExe(e) => write!(f, "cannot locate the heeler binary: {e}"),
            CeremonyError::Random(e) => write!(f, "{e}"),
            CeremonyError::State(e) => write!(f, "{e}"),
            CeremonyError::AuthorizedKeys(e) => write!(f, "{e}"),
            CeremonyError::Untrusted(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CeremonyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CeremonyError::UnsafePath { .. } | CeremonyError::RelativePath { .. } => None,
            CeremonyError::CurrentExe(e) => Some(e),
            CeremonyError::Random(e) => Some(e),
            CeremonyError::State(e) => Some(e),
            CeremonyError::AuthorizedKeys(e) => Some(e),
            CeremonyError::Untrusted(e) => Some(e),
        }
    }
}

impl From<StateError> for CeremonyError {
    fn from(e: StateError) -> Self {
        CeremonyError::State(e)
    }
}

impl From<EditError> for CeremonyError {
    fn from(e: EditError) -> Self {
        CeremonyError::AuthorizedKeys(e)
    }
}

impl From<RandomUnavailable> for CeremonyError {
    fn from(e: RandomUnavailable) -> Self {
        CeremonyError::Random(e)
    }
}

/// The absolute path of the running binary, for the forced command.
pub fn current_exe() -> Result<PathBuf, CeremonyError> {
    let exe = std::env::current_exe().map_err(CeremonyError::CurrentExe)?;
    Ok(exe.canonicalize().unwrap_or(exe))
}

fn quotable(what: &'static str, path: &Path) -> Result<String, CeremonyError> {
    let unsafe_path = || CeremonyError::UnsafePath {
        what,
        path: path.to_path_buf(),
    };
    let text = path.to_str().ok_or_else(unsafe_path)?;
    if text.contains(['\'', '"', '\n', '\r']) {
        return Err(unsafe_path());
    }
    if !path.is_absolute() {
        return Err(CeremonyError::RelativePath {
            what,
            path: path.to_path_buf(),
        });
    }
    Ok(text.to_owned())
}

/// The forced command:
/// `'<heeler>' accept --state-dir '<state>' --pairing-id <id>`.
pub(crate) fn forced_command(
    heeler_exe: &Path,
    state_dir: &Path,
    pairing_id: &str,
) -> Result<String, CeremonyError> {
    let exe = quotable("heeler binary path", heeler_exe)?;
    let state = quotable("plugin state dir", state_dir)?;
    Ok(format!(
        "'{exe}' accept --state-dir '{state}' --pairing-id {pairing_id}"
    ))
}

/// The restricted authorized_keys line:
/// `restrict,command="<cmd>"[,expiry-time="<UTC>Z"] <public line>
/// herdr-pairing:<id>:exp:<unix>` (the `expiry-time` when `sshd_expiry`).
pub(crate) fn bootstrap_line(
    command: &str,
    public_line: &str,
    pairing_id: &str,
    expires_at: i64,
    sshd_expiry: bool,
) -> String {
    let expiry = if sshd_expiry {
        format!(",{}", expiry_time_option(expires_at))
    } else {
        String::new()
    };
    format!(
        "restrict,command=\"{command}\"{expiry} {public_line} {}{pairing_id}:exp:{expires_at}",
        authorized_keys::MARKER_PREFIX
    )
}

/// A device that enrolled during a ceremony.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enrolled {
    pub pairing_id: String,
    pub expires_at: i64,
    /// `SHA256:…` of the Device Key.
    pub fingerprint: String,
    /// The Device Key line as written to authorized_keys.
    pub line: String,
    /// The line's comment (the device's label), if any.
    pub comment: Option<String>,
    /// Whether this ceremony appended `line` to authorized_keys. `false`
    /// when the Device Key was already authorized (nothing was added, so
    /// there is nothing to revoke) or the record does not say.
    pub appended: bool,
}

impl From<EnrolledRecord> for Enrolled {
    fn from(record: EnrolledRecord) -> Self {
        Enrolled {
            comment: crate::pair::device_key::comment_of_line(&record.line),
            pairing_id: record.pairing_id,
            expires_at: record.expires_at,
            fingerprint: record.fingerprint,
            line: record.line,
            appended: record.appended == Some(true),
        }
    }
}

/// When a record is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Moment {
    /// A poll, without the lock: an `accept` may be between its record
    /// and its key line.
    Poll,
    /// Under the authorized_keys lock (the end of a ceremony, whatever
    /// ended it, or `accept` itself): no other `accept` is in flight, so
    /// what the files say is final.
    Settled,
}

/// What a ceremony's record and the key file say together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing yet (a poll only).
    Waiting,
    /// The key file holds the Device Key this ceremony enrolled.
    Enrolled(Enrolled),
    /// Nothing of this ceremony is in the key file; a record, if any, is
    /// an `accept` that died before its key line.
    NothingEnrolled,
}

/// The one decision on an enrollment: the key file is the truth. A record
/// that says this ceremony appended its line counts only while that exact
/// line is in `lines`; a record that says the key was already there (or,
/// the Node plugin's, does not say) counts while a line with its key blob
/// is. Otherwise a poll keeps waiting and a settled look finds nothing.
pub(crate) fn judge(record: Option<&EnrolledRecord>, lines: &[Vec<u8>], moment: Moment) -> Verdict {
    let nothing = match moment {
        Moment::Poll => Verdict::Waiting,
        Moment::Settled => Verdict::NothingEnrolled,
    };
    let Some(record) = record else {
        return nothing;
    };
    let present = if record.appended == Some(true) {
        lines.iter().any(|l| l.as_slice() == record.line.as_bytes())
    } else {
        authorized_keys::key_blob_of(record.line.as_bytes()).is_some_and(|blob| {
            lines
                .iter()
                .any(|l| authorized_keys::key_blob_of(l) == Some(blob))
        })
    };
    if present {
        Verdict::Enrolled(record.clone().into())
    } else {
        nothing
    }
}

/// Test-only (debug builds): `HEELER_TEST_PAUSE=<step>:<file>` stops this
/// process the first time it reaches `step`: it creates `<file>` and waits
/// until the test removes it (at most a minute), so a test can kill or
/// signal it exactly there. The steps: `accept` (a submission read, the
/// lock not yet taken), `record` (the enrolled record written, the key line
/// not yet), `key` (the key line written, the bootstrap line not yet
/// removed), `poll` (`pair --no-ui` after a poll that found nothing).
/// Release builds compile it to nothing: no environment can pause them.
pub(crate) fn pause_point(step: &str) {
    #[cfg(debug_assertions)]
    {
        use std::sync::atomic::{AtomicBool, Ordering};
        static PAUSED: AtomicBool = AtomicBool::new(false);
        let Ok(spec) = std::env::var("HEELER_TEST_PAUSE") else {
            return;
        };
        let Some((wanted, file)) = spec.split_once(':') else {
            return;
        };
        if wanted != step || PAUSED.swap(true, Ordering::SeqCst) {
            return;
        }
        let file = Path::new(file);
        if std::fs::write(file, std::process::id().to_string()).is_err() {
            return;
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while file.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    #[cfg(not(debug_assertions))]
    let _ = step;
}

/// One running ceremony. `Debug` never shows the seed.
#[derive(Debug)]
pub struct Ceremony {
    pairing_id: String,
    expires_at: i64,
    key: BootstrapKey,
    location: Location,
    state: StateDir,
}

/// Starts a ceremony now. See the module doc for the sequence.
pub fn begin(config: &CeremonyConfig) -> Result<Ceremony, CeremonyError> {
    begin_at(config, crate::base::clock::unix_seconds())
}

/// [`begin`] at a given clock reading (tests).
pub(crate) fn begin_at(config: &CeremonyConfig, now: i64) -> Result<Ceremony, CeremonyError> {
    let state = StateDir::new(&config.state_dir);
    state.trusted().map_err(CeremonyError::Untrusted)?;
    let key = BootstrapKey::generate()?;
    let pairing_id = crate::pair::bootstrap_key::new_pairing_id()?;
    let expires_at = now.saturating_add(config.ttl_seconds);
    let command = forced_command(&config.heeler_exe, &config.state_dir, &pairing_id)?;
    let line = bootstrap_line(
        &command,
        &key.public_line(),
        &pairing_id,
        expires_at,
        config.sshd_expiry,
    );
    let fingerprint = crate::pair::device_key::parse(&key.public_line())
        .map_err(|e| {
            CeremonyError::State(StateError {
                path: config.state_dir.clone(),
                error: std::io::Error::other(format!("bootstrap key: {e}")),
            })
        })?
        .fingerprint;
    state.write_pending(&Pending {
        pairing_id: pairing_id.clone(),
        expires_at,
        public_line: key.public_line(),
    })?;
    let location = Location::for_home(&config.home);
    if let Err(e) = authorize(&location, &state, &config.state_dir, &fingerprint, &line) {
        let _ = state.remove_pending(&pairing_id);
        return Err(e);
    }
    Ok(Ceremony {
        pairing_id,
        expires_at,
        key,
        location,
        state,
    })
}

/// The locked half of [`begin`]: removes the bootstrap lines of this state
/// dir whose ceremony is gone ([`authorized_keys::remove_orphans`]: an
/// editor wrote one back after its ceremony removed it), remembers the
/// Bootstrap Key's fingerprint so no later `accept` takes it as a Device
/// Key, then appends its line.
fn authorize(
    location: &Location,
    state: &StateDir,
    state_dir: &Path,
    fingerprint: &str,
    line: &str,
) -> Result<(), CeremonyError> {
    use std::os::unix::ffi::OsStrExt;
    let locked = authorized_keys::Locked::acquire(location)?;
    if location.file.exists() {
        locked.rewrite(|lines| {
            authorized_keys::remove_orphans(lines, state_dir.as_os_str().as_bytes(), |id| {
                state.pending_exists(id)
            })
        })?;
    }
    state.remember_bootstrap(fingerprint)?;
    locked.append(line)?;
    Ok(())
}

impl Ceremony {
    /// The 12-hex pairing id.
    pub fn pairing_id(&self) -> &str {
        &self.pairing_id
    }

    /// Unix seconds when the Bootstrap Key stops working.
    pub fn expires_at(&self) -> i64 {
        self.expires_at
    }

    /// The raw Bootstrap Key seed (secret: only for the Pairing Code).
    pub fn seed(&self) -> &[u8; 32] {
        self.key.seed()
    }

    /// `ssh-ed25519 <blob>` of the Bootstrap Key.
    pub fn public_line(&self) -> String {
        self.key.public_line()
    }

    /// The `seed`/`exp` pair a Pairing Code carries.
    pub fn bootstrap(&self) -> Bootstrap {
        Bootstrap {
            seed: *self.key.seed(),
            expires_at: self.expires_at,
        }
    }

    /// The enrolled device, once `heeler accept` has recorded one and
    /// its key line is in `authorized_keys` (see [`judge`]). Without the
    /// lock: a hint to call [`Ceremony::end`], which decides.
    pub fn poll_enrolled(&self) -> Option<Enrolled> {
        let record = self.state.read_enrolled(&self.pairing_id)?;
        let lines = match std::fs::read(&self.location.file) {
            Ok(contents) => authorized_keys::split_lines(&contents),
            Err(_) => Vec::new(),
        };
        match judge(Some(&record), &lines, Moment::Poll) {
            Verdict::Enrolled(enrolled) => Some(enrolled),
            Verdict::Waiting | Verdict::NothingEnrolled => None,
        }
    }

    /// Ends the ceremony, whatever ended it (an enrollment, the expiry, a
    /// cancel, a signal): first removes the pending record, without the
    /// lock, so from then on every `accept` refuses the code even if the
    /// lock cannot be had; then, under the authorized_keys lock, judges the
    /// record against the key file ([`judge`], settled), removes the
    /// bootstrap line and the enrolled file, and returns the Device Key
    /// this ceremony enrolled if the key file holds it (an `accept` past
    /// its pending check under the lock finishes first). Idempotent: a
    /// second call finds no record and returns `None`.
    pub fn end(&self) -> Result<Option<Enrolled>, CeremonyError> {
        let pending_removed = self.state.remove_pending(&self.pairing_id);
        let locked = authorized_keys::Locked::acquire(&self.location)?;
        let record = self.state.read_enrolled(&self.pairing_id);
        let lines = locked.read()?;
        let verdict = judge(record.as_ref(), &lines, Moment::Settled);
        locked.rewrite(|lines| authorized_keys::remove_pairing(lines, &self.pairing_id))?;
        pending_removed?;
        self.state.remove_enrolled(&self.pairing_id)?;
        Ok(match verdict {
            Verdict::Enrolled(enrolled) => Some(enrolled),
            Verdict::Waiting | Verdict::NothingEnrolled => None,
        })
    }
}

/// Removes a pairing's bootstrap line and pending file, keeping its
/// enrolled record: what `heeler accept` does to a pairing it refuses.
/// Idempotent.
pub(crate) fn drop_bootstrap(
    location: &Location,
    state: &StateDir,
    pairing_id: &str,
) -> Result<(), CeremonyError> {
    if location.file.exists() {
        authorized_keys::edit(location, |lines| {
            authorized_keys::remove_pairing(lines, pairing_id)
        })?;
    }
    state.remove_pending(pairing_id)?;
    Ok(())
}

/// Removes the Device Key line this ceremony appended: that exact line,
/// byte for byte, and no other line with the same key. Does nothing when
/// the ceremony appended no line. Returns whether a line was removed.
pub fn revoke_device(home: &Path, enrolled: &Enrolled) -> Result<bool, CeremonyError> {
    if !enrolled.appended {
        return Ok(false);
    }
    let location = Location::for_home(home);
    Ok(authorized_keys::edit(&location, |lines| {
        authorized_keys::remove_line(lines, enrolled.line.as_bytes())
    })?)
}

/// The start-up sweep: expired bootstrap lines (`exp <= now`), then
/// finished state files.
pub fn sweep(home: &Path, state_dir: &Path, now: i64) -> Result<(), CeremonyError> {
    let location = Location::for_home(home);
    if location.file.exists() {
        authorized_keys::edit(&location, |lines| {
            authorized_keys::sweep_expired(lines, now)
        })?;
    }
    StateDir::new(state_dir).sweep(now);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(name: &str) -> (crate::base::scratch::ScratchDir, CeremonyConfig) {
        let root = crate::base::scratch::ScratchDir::new(&format!("ceremony-{name}"));
        std::fs::create_dir_all(root.join("home")).unwrap();
        let mut config = CeremonyConfig::new(
            &root.join("home"),
            &root.join("state"),
            Path::new("/usr/local/bin/heeler"),
        );
        config.sshd_expiry = false;
        (root, config)
    }

    fn authorized(config: &CeremonyConfig) -> String {
        std::fs::read_to_string(config.home.join(".ssh/authorized_keys")).unwrap_or_default()
    }

    #[test]
    fn forced_command_quotes_and_refuses() {
        assert_eq!(
            forced_command(Path::new("/a b/heeler"), Path::new("/s t"), "0a1b").unwrap(),
            "'/a b/heeler' accept --state-dir '/s t' --pairing-id 0a1b"
        );
        for bad in ["/it's", "/a\"b", "/a\nb", "/a\rb"] {
            let err = forced_command(Path::new(bad), Path::new("/s"), "x").unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("heeler binary path must not contain quotes or newlines: {bad}")
            );
            assert!(forced_command(Path::new("/h"), Path::new(bad), "x").is_err());
        }
        assert!(matches!(
            forced_command(Path::new("heeler"), Path::new("/s"), "x"),
            Err(CeremonyError::RelativePath { .. })
        ));
    }

    #[test]
    fn begin_writes_pending_then_line_and_end_is_idempotent() {
        let (_scratch, config) = setup("begin");
        std::fs::create_dir_all(config.home.join(".ssh")).unwrap();
        std::fs::write(
            config.home.join(".ssh/authorized_keys"),
            "ssh-rsa AAAAmine me",
        )
        .unwrap();
        let ceremony = begin_at(&config, 1000).unwrap();
        assert_eq!(ceremony.expires_at(), 1120);
        assert!(!format!("{ceremony:?}").contains(&format!("{:?}", ceremony.seed())));
        let expected_line = format!(
            "restrict,command=\"'/usr/local/bin/heeler' accept --state-dir '{}' --pairing-id {id}\" {} herdr-pairing:{id}:exp:1120",
            config.state_dir.display(),
            ceremony.public_line(),
            id = ceremony.pairing_id()
        );
        assert_eq!(
            authorized(&config),
            format!("ssh-rsa AAAAmine me\n{expected_line}\n")
        );
        let state = StateDir::new(&config.state_dir);
        assert_eq!(
            state
                .read_pending(ceremony.pairing_id())
                .unwrap()
                .public_line,
            ceremony.public_line()
        );
        assert_eq!(ceremony.poll_enrolled(), None);
        ceremony.end().unwrap();
        ceremony.end().unwrap();
        assert_eq!(authorized(&config), "ssh-rsa AAAAmine me\n");
        assert!(!state.pending_exists(ceremony.pairing_id()));
        // For an sshd that reads it, the line says when sshd must stop:
        // unix 1120 is 1970-01-01 00:18:40 UTC.
        let with_expiry = CeremonyConfig {
            sshd_expiry: true,
            ..config.clone()
        };
        let ceremony = begin_at(&with_expiry, 1000).unwrap();
        assert_eq!(
            authorized(&config),
            format!(
                "ssh-rsa AAAAmine me\nrestrict,command=\"'/usr/local/bin/heeler' accept --state-dir '{}' --pairing-id {id}\",expiry-time=\"19700101001840Z\" {} herdr-pairing:{id}:exp:1120\n",
                config.state_dir.display(),
                ceremony.public_line(),
                id = ceremony.pairing_id()
            )
        );
        ceremony.end().unwrap();
    }

    #[test]
    fn expiry_times_are_utc_civil_times() {
        // Independent values: `date -u -d @<t> +%Y%m%d%H%M%S`.
        assert_eq!(expiry_time_option(0), "expiry-time=\"19700101000000Z\"");
        assert_eq!(
            expiry_time_option(951_782_400),
            "expiry-time=\"20000229000000Z\""
        );
        assert_eq!(
            expiry_time_option(1_764_806_400 + 86_399),
            "expiry-time=\"20251204235959Z\""
        );
    }

    #[test]
    fn only_an_openssh_from_9_1_gets_a_utc_expiry() {
        let reads = |text: &str| openssh_version(text).is_some_and(|v| v >= OPENSSH_UTC_EXPIRY);
        assert_eq!(
            openssh_version("OpenSSH_9.2p1 Debian-2+deb12u3, OpenSSL 3.0.15"),
            Some((9, 2))
        );
        assert!(reads("OpenSSH_9.1, LibreSSL 3.3.6"));
        assert!(reads("OpenSSH_10.0p2, OpenSSL 3.5.0"));
        // Older releases print their usage, led by the version line.
        assert!(!reads(
            "unknown option -- V\nOpenSSH_8.4p1 Debian-5, OpenSSL 1.1.1n\nusage: sshd"
        ));
        assert!(!reads("OpenSSH_9.0p1"));
        assert!(!reads("Dropbear v2022.83"));
        assert!(!reads(""));
    }

    #[test]
    fn a_ceremony_remembers_its_key_and_removes_lines_whose_ceremony_is_gone() {
        let (_scratch, config) = setup("history");
        let state = StateDir::new(&config.state_dir);
        let first = begin_at(&config, 1000).unwrap();
        let fingerprint = |c: &Ceremony| {
            crate::pair::device_key::parse(&c.public_line())
                .unwrap()
                .fingerprint
        };
        assert_eq!(state.bootstrap_history(), vec![fingerprint(&first)]);
        // An editor writes the first line back after the ceremony ended.
        let line = authorized(&config);
        first.end().unwrap();
        std::fs::write(config.home.join(".ssh/authorized_keys"), &line).unwrap();
        let second = begin_at(&config, 1000).unwrap();
        assert!(!authorized(&config).contains(first.pairing_id()), "swept");
        assert!(authorized(&config).contains(second.pairing_id()));
        assert_eq!(
            state.bootstrap_history(),
            vec![fingerprint(&first), fingerprint(&second)]
        );
        // A live ceremony's line stays when the next one starts.
        let third = begin_at(&config, 1000).unwrap();
        assert!(authorized(&config).contains(second.pairing_id()));
        third.end().unwrap();
        second.end().unwrap();
    }

    #[test]
    fn end_reports_an_enrollment_only_when_the_key_file_holds_it() {
        let (_scratch, config) = setup("end");
        let state = StateDir::new(&config.state_dir);
        let location = Location::for_home(&config.home);
        let dev = "ssh-ed25519 AAAAdev iPhone";
        // A record without its key line (an accept killed between them):
        // the poll waits, the end reports nothing and clears the record.
        let ceremony = begin_at(&config, 1000).unwrap();
        let record = EnrolledRecord {
            pairing_id: ceremony.pairing_id().into(),
            expires_at: 1120,
            fingerprint: "SHA256:f".into(),
            line: dev.into(),
            appended: Some(true),
        };
        state.write_enrolled(&record).unwrap();
        assert_eq!(ceremony.poll_enrolled(), None);
        assert_eq!(ceremony.end().unwrap(), None);
        assert_eq!(authorized(&config), "");
        assert!(state.read_enrolled(ceremony.pairing_id()).is_none());
        assert!(!state.pending_exists(ceremony.pairing_id()));
        // The record and its key line: reported by the poll and the end,
        // the key kept, everything else gone; a second end finds nothing.
        let ceremony = begin_at(&config, 1000).unwrap();
        let record = EnrolledRecord {
            pairing_id: ceremony.pairing_id().into(),
            ..record
        };
        state.write_enrolled(&record).unwrap();
        authorized_keys::add_line(&location, dev).unwrap();
        let polled = ceremony.poll_enrolled().unwrap();
        assert_eq!(polled.comment.as_deref(), Some("iPhone"));
        assert_eq!(ceremony.end().unwrap(), Some(polled));
        assert_eq!(authorized(&config), format!("{dev}\n"));
        assert!(state.read_enrolled(ceremony.pairing_id()).is_none());
        assert_eq!(ceremony.end().unwrap(), None);
        assert_eq!(authorized(&config), format!("{dev}\n"));
    }

    fn record(line: &str, appended: Option<bool>) -> EnrolledRecord {
        EnrolledRecord {
            pairing_id: "p".into(),
            expires_at: 0,
            fingerprint: "SHA256:f".into(),
            line: line.into(),
            appended,
        }
    }

    #[test]
    fn judge_believes_the_key_file() {
        let ours = "ssh-ed25519 AAAAdev phone";
        let file = |text: &str| authorized_keys::split_lines(text.as_bytes());
        let with_ours = file(&format!("ssh-rsa AAAAmine me\n{ours}\n"));
        let restricted = file("from=\"10.0.0.0/8\" ssh-ed25519 AAAAdev mine\n");
        let without = file("ssh-rsa AAAAmine me\n");
        let enrolled = |r: &EnrolledRecord| Verdict::Enrolled(r.clone().into());
        for moment in [Moment::Poll, Moment::Settled] {
            let nothing = if moment == Moment::Poll {
                Verdict::Waiting
            } else {
                Verdict::NothingEnrolled
            };
            // No record: nothing, whatever the file holds.
            assert_eq!(judge(None, &with_ours, moment), nothing);
            // Appended: only the exact line counts.
            let appended = record(ours, Some(true));
            assert_eq!(
                judge(Some(&appended), &with_ours, moment),
                enrolled(&appended)
            );
            assert_eq!(judge(Some(&appended), &without, moment), nothing);
            assert_eq!(judge(Some(&appended), &restricted, moment), nothing);
            // Already there (or a record that does not say): any line with
            // the key's blob counts.
            for unsaid in [Some(false), None] {
                let known = record(ours, unsaid);
                assert_eq!(judge(Some(&known), &restricted, moment), enrolled(&known));
                assert_eq!(judge(Some(&known), &with_ours, moment), enrolled(&known));
                assert_eq!(judge(Some(&known), &without, moment), nothing);
            }
            // A record whose line has no key blob never counts.
            assert_eq!(judge(Some(&record("", None)), &[vec![]], moment), nothing);
        }
    }

    /// The judge against an independent oracle over random files and
    /// records: a line "holds" the record's key when it is byte-equal
    /// (appended) or has the same second word after an optional options
    /// word (otherwise); seeded, so a failure prints its seed.
    #[test]
    fn judge_agrees_with_a_plain_oracle_on_random_files() {
        let seed = 0x5eed_0030_u64;
        let mut rng = crate::base::test_rng::Rng(seed);
        let keys = ["AAAAone", "AAAAtwo", "AAAAthree"];
        for round in 0..2000 {
            let key = keys[rng.below(3) as usize];
            let line = format!("ssh-ed25519 {key} phone");
            let appended = [Some(true), Some(false), None][rng.below(3) as usize];
            let mut lines = Vec::new();
            for _ in 0..rng.below(5) {
                let other = keys[rng.below(3) as usize];
                let shape = match rng.below(4) {
                    0 => format!("ssh-ed25519 {other} phone"),
                    1 => format!("no-pty ssh-ed25519 {other} x"),
                    2 => format!("ssh-ed25519 {other}"),
                    _ => "# a comment".to_owned(),
                };
                lines.push(shape.into_bytes());
            }
            let holds = lines.iter().any(|l| {
                if appended == Some(true) {
                    l.as_slice() == line.as_bytes()
                } else {
                    let words: Vec<&[u8]> = l.split(|b| *b == b' ').collect();
                    let blob = if words[0].starts_with(b"ssh-") {
                        words.get(1)
                    } else {
                        words.get(2)
                    };
                    !l.starts_with(b"#") && blob == Some(&key.as_bytes())
                }
            });
            let r = record(&line, appended);
            let settled = judge(Some(&r), &lines, Moment::Settled);
            let expected = if holds {
                Verdict::Enrolled(r.clone().into())
            } else {
                Verdict::NothingEnrolled
            };
            assert_eq!(
                settled,
                expected,
                "seed {seed} round {round}: record {r:?}, lines {:?}",
                lines
                    .iter()
                    .map(|l| String::from_utf8_lossy(l).into_owned())
                    .collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn sweep_and_revoke() {
        let (_scratch, config) = setup("sweep");
        let old = begin_at(&config, 1000).unwrap();
        let new = begin_at(&config, 2000).unwrap();
        let dev = "ssh-ed25519 AAAAdev phone";
        authorized_keys::add_line(&Location::for_home(&config.home), dev).unwrap();
        sweep(&config.home, &config.state_dir, 1120).unwrap();
        let text = authorized(&config);
        assert!(!text.contains(old.pairing_id()));
        assert!(text.contains(new.pairing_id()));
        let state = StateDir::new(&config.state_dir);
        assert!(!state.pending_exists(old.pairing_id()));
        assert!(state.pending_exists(new.pairing_id()));
        let enrolled = Enrolled::from(EnrolledRecord {
            pairing_id: "x".into(),
            expires_at: 0,
            fingerprint: "f".into(),
            line: dev.into(),
            appended: Some(true),
        });
        assert!(revoke_device(&config.home, &enrolled).unwrap());
        assert!(!revoke_device(&config.home, &enrolled).unwrap());
        assert!(!authorized(&config).contains("AAAAdev"));
    }

    #[test]
    fn revoke_removes_only_the_line_the_ceremony_appended() {
        let (_scratch, config) = setup("exact");
        let ours = "ssh-ed25519 AAAAdev phone";
        let theirs = "from=\"10.0.0.0/8\" ssh-ed25519 AAAAdev phone";
        let bare = "ssh-ed25519 AAAAdev";
        let file = format!("{theirs}\n{ours}\n{bare}\n");
        std::fs::create_dir_all(config.home.join(".ssh")).unwrap();
        std::fs::write(config.home.join(".ssh/authorized_keys"), &file).unwrap();
        let record = |appended| EnrolledRecord {
            pairing_id: "x".into(),
            expires_at: 0,
            fingerprint: "f".into(),
            line: ours.into(),
            appended,
        };
        for unproven in [None, Some(false)] {
            let enrolled = Enrolled::from(record(unproven));
            assert!(!enrolled.appended, "{unproven:?}");
            assert!(!revoke_device(&config.home, &enrolled).unwrap());
            assert_eq!(authorized(&config), file, "{unproven:?} touches nothing");
        }
        assert!(revoke_device(&config.home, &Enrolled::from(record(Some(true)))).unwrap());
        assert_eq!(authorized(&config), format!("{theirs}\n{bare}\n"));
    }
}

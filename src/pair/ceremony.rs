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
//!     if let Some(enrolled) = ceremony.poll_enrolled() {  // every ≤ 400 ms
//!         println!("{} {:?}", enrolled.fingerprint, enrolled.comment);
//!         // optionally: ceremony::revoke_device(home, &enrolled)?;
//!         break;
//!     }
//!     if unix_seconds() >= ceremony.expires_at() {
//!         match ceremony.expire()? {                      // locked: never races accept
//!             Some(enrolled) => { /* enrolled at the last moment */ let _ = enrolled; }
//!             None => { /* expired: the line is gone */ }
//!         }
//!         break;
//!     }
//! #   break;
//! }
//! ceremony.end()?;                                        // idempotent; also on signals
//! # Ok(()) }
//! ```
//!
//! * [`begin`] writes `pending/<id>.json` first, then appends the restricted
//!   bootstrap line (removing the pending file again if the append fails).
//! * [`Ceremony::expire`] runs inside the authorized_keys lock, the same lock
//!   `heeler accept` enrolls under: if an enrolled record exists it is
//!   returned and nothing is touched; otherwise the pending file and the
//!   bootstrap line go. An enrollment is therefore never lost to a racing
//!   expiry: either accept saw the pending file and the record exists, or it
//!   did not and it answered `unknown_pairing`/`expired`.
//! * [`Ceremony::end`] removes the bootstrap line, the pending and the
//!   enrolled file; calling it again is harmless. It never touches an
//!   enrolled Device Key line — revoking one is [`revoke_device`].
//! * `heeler accept` refusing a pairing (no pending file, or expired) calls
//!   [`drop_bootstrap`], never [`end_pairing`]: the enrolled record belongs
//!   to the ceremony's starter, and a second session on the connection that
//!   enrolled (sshd does not re-check authorized_keys per session) must not
//!   hide that enrollment from the popup or `pair --no-ui`.
//! * [`revoke_device`] removes only the exact line the ceremony appended,
//!   and nothing when the ceremony appended none (the Device Key was
//!   already authorized, or the record does not say): revoke never removes
//!   a line heeler did not add, such as the user's own `from=`-restricted
//!   line for the same key.
//! * [`sweep`] drops expired bootstrap lines (any ceremony, e.g. of a killed
//!   popup) and finished state files.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::pair::authorized_keys::{self, EditError, Location};
use crate::pair::bootstrap_key::{BootstrapKey, RandomUnavailable};
use crate::pair::state::{EnrolledRecord, Pending, StateDir, StateError};
use crate::wire::pairing_code::Bootstrap;

/// How long a Bootstrap Key is valid.
pub const PAIRING_TTL_SECONDS: i64 = 120;

/// What a ceremony needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CeremonyConfig {
    /// The plugin state dir (`HERDR_PLUGIN_STATE_DIR`); absolute.
    pub state_dir: PathBuf,
    /// The home whose `.ssh/authorized_keys` is edited.
    pub home: PathBuf,
    /// This binary, by absolute path: the forced command runs it.
    pub heeler_exe: PathBuf,
    /// Bootstrap Key lifetime; [`PAIRING_TTL_SECONDS`] outside tests.
    pub ttl_seconds: i64,
}

impl CeremonyConfig {
    /// A config with the standard TTL.
    pub fn new(home: &Path, state_dir: &Path, heeler_exe: &Path) -> CeremonyConfig {
        CeremonyConfig {
            state_dir: state_dir.to_path_buf(),
            home: home.to_path_buf(),
            heeler_exe: heeler_exe.to_path_buf(),
            ttl_seconds: PAIRING_TTL_SECONDS,
        }
    }
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

impl std::error::Error for CeremonyError {}

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
pub fn forced_command(
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
/// `restrict,command="<cmd>" <public line> herdr-pairing:<id>:exp:<unix>`.
pub fn bootstrap_line(
    command: &str,
    public_line: &str,
    pairing_id: &str,
    expires_at: i64,
) -> String {
    format!(
        "restrict,command=\"{command}\" {public_line} {}{pairing_id}:exp:{expires_at}",
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
pub fn begin_at(config: &CeremonyConfig, now: i64) -> Result<Ceremony, CeremonyError> {
    let state = StateDir::new(&config.state_dir);
    state.trusted().map_err(CeremonyError::Untrusted)?;
    let key = BootstrapKey::generate()?;
    let pairing_id = crate::pair::bootstrap_key::new_pairing_id()?;
    let expires_at = now.saturating_add(config.ttl_seconds);
    let command = forced_command(&config.heeler_exe, &config.state_dir, &pairing_id)?;
    let line = bootstrap_line(&command, &key.public_line(), &pairing_id, expires_at);
    state.write_pending(&Pending {
        pairing_id: pairing_id.clone(),
        expires_at,
        public_line: key.public_line(),
    })?;
    let location = Location::for_home(&config.home);
    if let Err(e) = authorized_keys::add_line(&location, &line) {
        let _ = state.remove_pending(&pairing_id);
        return Err(e.into());
    }
    Ok(Ceremony {
        pairing_id,
        expires_at,
        key,
        location,
        state,
    })
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

    /// The enrolled device, once `heeler accept` has recorded one.
    pub fn poll_enrolled(&self) -> Option<Enrolled> {
        self.state
            .read_enrolled(&self.pairing_id)
            .map(Enrolled::from)
    }

    /// Ends the TTL: under the authorized_keys lock, returns the enrolled
    /// device if one made it in time (touching nothing), otherwise removes
    /// the pending file and the bootstrap line and returns `None`.
    pub fn expire(&self) -> Result<Option<Enrolled>, CeremonyError> {
        let locked = authorized_keys::Locked::acquire(&self.location)?;
        if let Some(record) = self.state.read_enrolled(&self.pairing_id) {
            return Ok(Some(record.into()));
        }
        self.state.remove_pending(&self.pairing_id)?;
        locked.rewrite(|lines| authorized_keys::remove_pairing(lines, &self.pairing_id))?;
        Ok(None)
    }

    /// Removes the bootstrap line, the pending and the enrolled file.
    /// Idempotent.
    pub fn end(&self) -> Result<(), CeremonyError> {
        end_pairing(&self.location, &self.state, &self.pairing_id)
    }
}

/// The idempotent end of a ceremony by id: the bootstrap line, the pending
/// and the enrolled file.
pub fn end_pairing(
    location: &Location,
    state: &StateDir,
    pairing_id: &str,
) -> Result<(), CeremonyError> {
    drop_bootstrap(location, state, pairing_id)?;
    state.remove_enrolled(pairing_id)?;
    Ok(())
}

/// Removes a pairing's bootstrap line and pending file, keeping its
/// enrolled record: what `heeler accept` does to a pairing it refuses.
/// Idempotent.
pub fn drop_bootstrap(
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
        let config = CeremonyConfig::new(
            &root.join("home"),
            &root.join("state"),
            Path::new("/usr/local/bin/heeler"),
        );
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
    }

    #[test]
    fn expire_returns_a_racing_enrollment_untouched() {
        let (_scratch, config) = setup("expire");
        let ceremony = begin_at(&config, 1000).unwrap();
        let state = StateDir::new(&config.state_dir);
        let record = EnrolledRecord {
            pairing_id: ceremony.pairing_id().into(),
            expires_at: 1120,
            fingerprint: "SHA256:f".into(),
            line: "ssh-ed25519 AAAAdev iPhone".into(),
            appended: Some(true),
        };
        state.write_enrolled(&record).unwrap();
        let before = authorized(&config);
        let enrolled = ceremony.expire().unwrap().unwrap();
        assert_eq!(enrolled.comment.as_deref(), Some("iPhone"));
        assert_eq!(authorized(&config), before);
        state.remove_enrolled(ceremony.pairing_id()).unwrap();
        assert_eq!(ceremony.expire().unwrap(), None);
        assert_eq!(authorized(&config), "");
        assert!(!state.pending_exists(ceremony.pairing_id()));
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

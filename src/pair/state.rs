//! The ceremony's state files under `HERDR_PLUGIN_STATE_DIR`, shared by the
//! process that starts a ceremony (popup or `heeler pair`) and the forced
//! command sshd runs (`heeler accept`).
//!
//! * `pending/<id>.json` — `{"pairingId","expiresAt","publicLine"}`: a
//!   ceremony is open; `accept` refuses any id without one.
//! * `enrolled/<id>.json` —
//!   `{"pairingId","expiresAt","fingerprint","line","appended"}`: a device
//!   enrolled; the starter polls for it. `appended` says whether this
//!   ceremony added `line` to authorized_keys (`false`: the key was already
//!   authorized, so nothing was added).
//!
//! Directories are 0700, files 0600, each file compact JSON plus `\n` with
//! the keys in exactly that order. The first four keys are the Node
//! plugin's files, so a plugin upgrade mid-ceremony still works: readers
//! ignore members they do not know, and `appended` is a trailing addition.
//! A record without a boolean `appended` (written by the Node plugin or an
//! older heeler) reads as `None`: it cannot prove that the ceremony added
//! the line, and revoke must never remove a line heeler did not add, so
//! the ceremony treats it as not appended.
//!
//! * `bootstrap-keys.json` — `{"v":1,"fingerprints":["SHA256:…",…]}`: the
//!   Bootstrap Keys of the last [`BOOTSTRAP_HISTORY`] ceremonies, oldest
//!   first, so `accept` refuses any of them as a Device Key (each one's seed
//!   was printed in a Pairing Code). Written atomically and synced under
//!   the authorized_keys lock before its line is appended; a missing or
//!   unreadable file is an empty history (a Bootstrap Key line still in
//!   the file is refused by its marker anyway).
//!
//! These records decide what `accept` authorizes, so they are read only
//! from a trusted state dir ([`StateDir::trusted`], the rule of
//! [`crate::base::dirs::trusted`]) and through [`json::read_file`], which
//! refuses a link or a FIFO at a record's path instead of blocking on it.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::base::atomic_file;
use crate::base::dirs::{self, Untrusted};
use crate::base::json::{self, Object, Value};

/// How long an enrolled record outlives its ceremony's expiry, and an
/// unreadable state file its mtime (plus the TTL), before a sweep removes it.
pub(crate) const SWEEP_GRACE_SECONDS: i64 = 120;

/// How many recent Bootstrap Keys `bootstrap-keys.json` remembers: far
/// more than can still be live (a code lives 2 minutes), few enough that
/// the file stays a few kilobytes.
pub(crate) const BOOTSTRAP_HISTORY: usize = 64;

/// An open ceremony.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub pairing_id: String,
    pub expires_at: i64,
    pub public_line: String,
}

/// A finished Enrollment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrolledRecord {
    pub pairing_id: String,
    pub expires_at: i64,
    pub fingerprint: String,
    pub line: String,
    /// Whether this ceremony appended `line`; `None` when the record does
    /// not say (see the module doc).
    pub appended: Option<bool>,
}

/// A state file could not be written or removed.
#[derive(Debug)]
pub struct StateError {
    pub path: PathBuf,
    pub error: io::Error,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.error)
    }
}

impl std::error::Error for StateError {}

/// The two state directories of one plugin state dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDir {
    pub root: PathBuf,
}

impl StateDir {
    pub fn new(root: &Path) -> StateDir {
        StateDir {
            root: root.to_path_buf(),
        }
    }

    /// Whether the state dir and its `pending/` and `enrolled/` are
    /// trusted ([`dirs::trusted`]): checked before a ceremony starts or an
    /// enrollment reads its pending record.
    pub fn trusted(&self) -> Result<(), Untrusted> {
        dirs::trusted_tree(&self.root, &["pending", "enrolled"])
    }

    pub(crate) fn pending_dir(&self) -> PathBuf {
        self.root.join("pending")
    }

    pub(crate) fn enrolled_dir(&self) -> PathBuf {
        self.root.join("enrolled")
    }

    pub(crate) fn pending_path(&self, pairing_id: &str) -> PathBuf {
        self.pending_dir().join(format!("{pairing_id}.json"))
    }

    pub(crate) fn enrolled_path(&self, pairing_id: &str) -> PathBuf {
        self.enrolled_dir().join(format!("{pairing_id}.json"))
    }

    pub fn write_pending(&self, pending: &Pending) -> Result<(), StateError> {
        write_record(&self.pending_path(&pending.pairing_id), &pending.to_json())
    }

    pub(crate) fn write_enrolled(&self, record: &EnrolledRecord) -> Result<(), StateError> {
        write_record(&self.enrolled_path(&record.pairing_id), &record.to_json())
    }

    /// The pending record, `None` when missing or unreadable.
    pub(crate) fn read_pending(&self, pairing_id: &str) -> Option<Pending> {
        Pending::from_json(&json::read_file(&self.pending_path(pairing_id))?)
    }

    /// The enrolled record, `None` when missing or unreadable.
    pub fn read_enrolled(&self, pairing_id: &str) -> Option<EnrolledRecord> {
        EnrolledRecord::from_json(&json::read_file(&self.enrolled_path(pairing_id))?)
    }

    /// The pairing ids with a pending record (`pending/<id>.json` names
    /// that are valid ids), at most `cap` of them; empty when the
    /// directory is missing or unreadable.
    pub(crate) fn pending_ids(&self, cap: usize) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.pending_dir()) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let id = name.strip_suffix(".json")?;
                crate::pair::authorized_keys::is_valid_pairing_id(id).then(|| id.to_owned())
            })
            .take(cap)
            .collect()
    }

    pub(crate) fn pending_exists(&self, pairing_id: &str) -> bool {
        self.pending_path(pairing_id).exists()
    }

    pub(crate) fn remove_pending(&self, pairing_id: &str) -> Result<(), StateError> {
        remove_if_present(&self.pending_path(pairing_id))
    }

    pub(crate) fn remove_enrolled(&self, pairing_id: &str) -> Result<(), StateError> {
        remove_if_present(&self.enrolled_path(pairing_id))
    }

    fn bootstrap_history_path(&self) -> PathBuf {
        self.root.join("bootstrap-keys.json")
    }

    /// The fingerprints of recent Bootstrap Keys, oldest first; empty when
    /// the file is missing or unreadable.
    pub(crate) fn bootstrap_history(&self) -> Vec<String> {
        json::read_file(&self.bootstrap_history_path())
            .as_ref()
            .and_then(|v| v.get("fingerprints"))
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Adds `fingerprint` to the history (see the module doc), keeping the
    /// newest [`BOOTSTRAP_HISTORY`]. Call it under the authorized_keys lock,
    /// which serialises the ceremonies that write it.
    pub(crate) fn remember_bootstrap(&self, fingerprint: &str) -> Result<(), StateError> {
        let path = self.bootstrap_history_path();
        let fail = |error| StateError {
            path: path.clone(),
            error,
        };
        let fingerprints = with_remembered(self.bootstrap_history(), fingerprint);
        atomic_file::create_dir_all(&self.root, 0o700).map_err(fail)?;
        let list = Value::Array(fingerprints.into_iter().map(Value::from).collect());
        let mut text =
            Value::Object(Object::new().with("v", 1_u32).with("fingerprints", list)).to_json();
        text.push('\n');
        atomic_file::write(&path, text.as_bytes(), 0o600).map_err(fail)
    }

    /// Removes finished state: leftover temp files of killed writers
    /// ([`atomic_file::sweep_stale_temps_in`]), pending records whose
    /// `expiresAt <= now`, enrolled records whose `expiresAt + 120 <= now`,
    /// and unreadable files once `mtime + 240 <= now`. Missing directories are fine;
    /// per-file failures are skipped (the next sweep retries).
    pub fn sweep(&self, now: i64) {
        // Temp files of a killed writer first, by `atomic_file`'s rule (its
        // pid is gone, or it is older than any write): an enrolled one
        // holds a Device Key line that must not linger.
        for dir in [self.pending_dir(), self.enrolled_dir()] {
            atomic_file::sweep_stale_temps_in(&dir);
        }
        sweep_dir(&self.pending_dir(), now, |v| {
            Pending::from_json(v).map(|p| p.expires_at)
        });
        sweep_dir(&self.enrolled_dir(), now, |v| {
            EnrolledRecord::from_json(v).map(|r| r.expires_at.saturating_add(SWEEP_GRACE_SECONDS))
        });
    }
}

/// `history` with `fingerprint` added as the newest (moved there if it
/// was already listed), cut to the newest [`BOOTSTRAP_HISTORY`] (pure).
pub(crate) fn with_remembered(mut history: Vec<String>, fingerprint: &str) -> Vec<String> {
    history.retain(|f| f != fingerprint);
    history.push(fingerprint.to_owned());
    let excess = history.len().saturating_sub(BOOTSTRAP_HISTORY);
    history.drain(..excess);
    history
}

fn sweep_dir(dir: &Path, now: i64, deadline_of: impl Fn(&Value) -> Option<i64>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let deadline = match json::read_file(&path).as_ref().and_then(&deadline_of) {
            Some(deadline) => deadline,
            None => match mtime_seconds(&path) {
                Some(mtime) => mtime.saturating_add(2 * SWEEP_GRACE_SECONDS),
                None => continue, // vanished meanwhile
            },
        };
        if deadline <= now {
            let _ = remove_if_present(&path);
        }
    }
}

fn mtime_seconds(path: &Path) -> Option<i64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    crate::base::clock::seconds_of(modified)
}

fn write_record(path: &Path, object: &Object) -> Result<(), StateError> {
    let fail = |error| StateError {
        path: path.to_path_buf(),
        error,
    };
    if let Some(dir) = path.parent() {
        atomic_file::create_dir_all(dir, 0o700).map_err(fail)?;
    }
    let mut text = Value::Object(object.clone()).to_json();
    text.push('\n');
    // Ephemeral state: atomic, not durable (see atomic_file::write_unsynced).
    atomic_file::write_unsynced(path, text.as_bytes(), 0o600).map_err(fail)
}

fn remove_if_present(path: &Path) -> Result<(), StateError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(StateError {
            path: path.to_path_buf(),
            error,
        }),
    }
}

fn string_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl Pending {
    pub fn to_json(&self) -> Object {
        Object::new()
            .with("pairingId", self.pairing_id.as_str())
            .with("expiresAt", self.expires_at)
            .with("publicLine", self.public_line.as_str())
    }

    pub(crate) fn from_json(value: &Value) -> Option<Pending> {
        Some(Pending {
            pairing_id: string_field(value, "pairingId")?,
            expires_at: value.get("expiresAt")?.as_i64()?,
            public_line: string_field(value, "publicLine")?,
        })
    }
}

impl EnrolledRecord {
    pub fn to_json(&self) -> Object {
        let object = Object::new()
            .with("pairingId", self.pairing_id.as_str())
            .with("expiresAt", self.expires_at)
            .with("fingerprint", self.fingerprint.as_str())
            .with("line", self.line.as_str());
        match self.appended {
            Some(appended) => object.with("appended", appended),
            None => object,
        }
    }

    pub(crate) fn from_json(value: &Value) -> Option<EnrolledRecord> {
        Some(EnrolledRecord {
            pairing_id: string_field(value, "pairingId")?,
            expires_at: value.get("expiresAt")?.as_i64()?,
            fingerprint: string_field(value, "fingerprint")?,
            line: string_field(value, "line")?,
            appended: value.get("appended").and_then(Value::as_bool),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn state(name: &str) -> StateDir {
        let root = std::env::temp_dir().join(format!(
            "heeler-pairing-state-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        StateDir::new(&root)
    }

    #[test]
    fn records_have_contract_bytes_and_modes() {
        let state = state("bytes");
        let pending = Pending {
            pairing_id: "0a1b2c3d4e5f".into(),
            expires_at: 1_753_305_600,
            public_line: "ssh-ed25519 AAAA".into(),
        };
        state.write_pending(&pending).unwrap();
        let path = state.pending_path("0a1b2c3d4e5f");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"pairingId\":\"0a1b2c3d4e5f\",\"expiresAt\":1753305600,\"publicLine\":\"ssh-ed25519 AAAA\"}\n"
        );
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&state.pending_dir()), 0o700);
        assert_eq!(state.read_pending("0a1b2c3d4e5f"), Some(pending));
        let record = EnrolledRecord {
            pairing_id: "0a1b2c3d4e5f".into(),
            expires_at: 5,
            fingerprint: "SHA256:x".into(),
            line: "ssh-ed25519 BBBB phone".into(),
            appended: Some(true),
        };
        state.write_enrolled(&record).unwrap();
        let enrolled_path = state.enrolled_path("0a1b2c3d4e5f");
        assert_eq!(
            std::fs::read_to_string(&enrolled_path).unwrap(),
            "{\"pairingId\":\"0a1b2c3d4e5f\",\"expiresAt\":5,\"fingerprint\":\"SHA256:x\",\"line\":\"ssh-ed25519 BBBB phone\",\"appended\":true}\n"
        );
        assert_eq!(state.read_enrolled("0a1b2c3d4e5f"), Some(record.clone()));
        let not_appended = EnrolledRecord {
            appended: Some(false),
            ..record.clone()
        };
        state.write_enrolled(&not_appended).unwrap();
        assert!(
            std::fs::read_to_string(&enrolled_path)
                .unwrap()
                .ends_with(",\"appended\":false}\n")
        );
        assert_eq!(state.read_enrolled("0a1b2c3d4e5f"), Some(not_appended));
        // The Node plugin's record, and one whose member is not a boolean,
        // do not say: None.
        let node = "{\"pairingId\":\"0a1b2c3d4e5f\",\"expiresAt\":5,\"fingerprint\":\"SHA256:x\",\"line\":\"ssh-ed25519 BBBB phone\"}\n";
        let unsaid = EnrolledRecord {
            appended: None,
            ..record.clone()
        };
        std::fs::write(&enrolled_path, node).unwrap();
        assert_eq!(state.read_enrolled("0a1b2c3d4e5f"), Some(unsaid.clone()));
        std::fs::write(&enrolled_path, node.replace('}', ",\"appended\":1}")).unwrap();
        assert_eq!(state.read_enrolled("0a1b2c3d4e5f"), Some(unsaid.clone()));
        state.write_enrolled(&unsaid).unwrap();
        assert_eq!(std::fs::read_to_string(&enrolled_path).unwrap(), node);
        state.remove_pending("0a1b2c3d4e5f").unwrap();
        state.remove_pending("0a1b2c3d4e5f").unwrap();
        assert!(!state.pending_exists("0a1b2c3d4e5f"));
        std::fs::remove_dir_all(&state.root).unwrap();
    }

    #[test]
    fn the_bootstrap_history_keeps_the_newest_and_is_atomic_json() {
        let history: Vec<String> = (0..BOOTSTRAP_HISTORY)
            .map(|i| format!("SHA256:{i}"))
            .collect();
        let next = with_remembered(history.clone(), "SHA256:new");
        assert_eq!(next.len(), BOOTSTRAP_HISTORY);
        assert_eq!(next.first().map(String::as_str), Some("SHA256:1"));
        assert_eq!(next.last().map(String::as_str), Some("SHA256:new"));
        // A repeat moves to the newest place instead of doubling.
        let again = with_remembered(vec!["a".into(), "b".into()], "a");
        assert_eq!(again, vec!["b".to_owned(), "a".to_owned()]);

        let state = state("history");
        assert_eq!(state.bootstrap_history(), Vec::<String>::new());
        state.remember_bootstrap("SHA256:x").unwrap();
        state.remember_bootstrap("SHA256:y").unwrap();
        let path = state.root.join("bootstrap-keys.json");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"v\":1,\"fingerprints\":[\"SHA256:x\",\"SHA256:y\"]}\n"
        );
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(state.bootstrap_history(), Vec::<String>::new());
        let _ = std::fs::remove_dir_all(&state.root);
    }

    #[test]
    fn sweep_removes_only_finished_state() {
        let state = state("sweep");
        state.sweep(0); // missing directories are fine
        let pending = |id: &str, exp| Pending {
            pairing_id: id.into(),
            expires_at: exp,
            public_line: "l".into(),
        };
        state.write_pending(&pending("old", 100)).unwrap();
        state.write_pending(&pending("new", 101)).unwrap();
        let enrolled = EnrolledRecord {
            pairing_id: "done".into(),
            expires_at: 0,
            fingerprint: "f".into(),
            line: "l".into(),
            appended: Some(true),
        };
        state.write_enrolled(&enrolled).unwrap();
        std::fs::write(state.pending_dir().join("junk.json"), "{").unwrap();
        state.sweep(100);
        assert!(!state.pending_exists("old"));
        assert!(state.pending_exists("new"));
        assert!(
            state.read_enrolled("done").is_some(),
            "enrolled grace 120 s"
        );
        assert!(
            state.pending_dir().join("junk.json").exists(),
            "junk keeps 240 s"
        );
        state.sweep(120);
        assert!(state.read_enrolled("done").is_none());
        let far = mtime_seconds(&state.pending_dir().join("junk.json")).unwrap() + 240;
        state.sweep(far);
        assert!(!state.pending_dir().join("junk.json").exists());
        std::fs::remove_dir_all(&state.root).unwrap();
    }
}

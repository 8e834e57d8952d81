//! The host key pin and the SSH username that go into a Pairing Code.
//!
//! The app pins the Host's key instead of showing a trust-on-first-use
//! prompt, so the fingerprint must be exactly what `ssh-keygen -lf` prints
//! for the key sshd serves: `SHA256:` + unpadded standard base64 of the
//! SHA-256 of the key blob. The username is the passwd entry of the
//! effective uid (not `$USER`), the account sshd will log the phone into.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::base::base64;
use crate::base::sys;

/// Where OpenSSH keeps its host keys.
pub(crate) const DEFAULT_DIR: &str = "/etc/ssh";

/// The host key files, in the order the first readable one wins.
pub(crate) const FILE_NAMES: [&str; 3] = [
    "ssh_host_ed25519_key.pub",
    "ssh_host_ecdsa_key.pub",
    "ssh_host_rsa_key.pub",
];

/// The pinned host key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostKey {
    pub path: PathBuf,
    /// The key type word, e.g. `ssh-ed25519`.
    pub key_type: String,
    /// `SHA256:<43 chars>`, as `ssh-keygen -lf` prints it.
    pub fingerprint: String,
}

/// Why the host key could not be read.
#[derive(Debug)]
pub enum HostKeyError {
    /// The first readable file does not hold an OpenSSH public key line.
    Malformed(PathBuf),
}

impl fmt::Display for HostKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostKeyError::Malformed(path) => {
                write!(f, "{} is not an OpenSSH public key", path.display())
            }
        }
    }
}

impl std::error::Error for HostKeyError {}

/// `SHA256:` + unpadded standard base64 of SHA-256(blob).
pub fn fingerprint(blob: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, blob);
    format!(
        "SHA256:{}",
        base64::encode_standard_unpadded(digest.as_ref())
    )
}

/// Parses a public key file's text (`<type> <base64 blob> [comment]`) into
/// its type and blob. The type must start with `ssh-` or `ecdsa-`.
pub(crate) fn parse_public_line(text: &str) -> Option<(String, Vec<u8>)> {
    let mut words = text.split_whitespace();
    let key_type = words.next()?;
    let blob = words.next()?;
    if !(key_type.starts_with("ssh-") || key_type.starts_with("ecdsa-")) {
        return None;
    }
    let blob = base64::decode_standard(blob).ok()?;
    if blob.is_empty() {
        return None;
    }
    Some((key_type.to_owned(), blob))
}

/// The first readable host key under `dir`. `Ok(None)` when none of
/// [`FILE_NAMES`] can be read; garbage in the first readable file is an
/// error rather than a silent fall-through to the next one.
pub fn find(dir: &Path) -> Result<Option<HostKey>, HostKeyError> {
    for name in FILE_NAMES {
        let path = dir.join(name);
        // Bounded and non-blocking, like every file heeler reads: a public
        // key line is well under 64 KiB.
        let Ok(bytes) = crate::base::state_file::read_config(&path, 64 * 1024) else {
            continue;
        };
        let parsed = std::str::from_utf8(&bytes).ok().and_then(parse_public_line);
        let Some((key_type, blob)) = parsed else {
            return Err(HostKeyError::Malformed(path));
        };
        return Ok(Some(HostKey {
            path,
            key_type,
            fingerprint: fingerprint(&blob),
        }));
    }
    Ok(None)
}

/// The user name of the effective uid, from the passwd database.
pub fn username() -> io::Result<String> {
    let uid = sys::effective_uid();
    sys::passwd_entry(uid)?.map(|e| e.name).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no passwd entry for uid {uid}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_matches_openssh_format() {
        // Expected value printed by `ssh-keygen -lf` for this line.
        let line =
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
        let (key_type, blob) = parse_public_line(line).unwrap();
        assert_eq!(key_type, "ssh-ed25519");
        assert_eq!(
            fingerprint(&blob),
            "SHA256:tAXFyTXI8xtDaujAEcwJslAYc9/6FKcUkd2Lw0xDhPo"
        );
    }

    #[test]
    fn rejects_non_key_types() {
        assert!(parse_public_line("restrict ssh-ed25519 AAAA").is_none());
        assert!(parse_public_line("ssh-ed25519 !!!").is_none());
        assert!(parse_public_line("").is_none());
    }

    #[test]
    fn first_readable_wins_and_garbage_is_an_error() {
        let scratch = crate::base::scratch::ScratchDir::new("hostkey");
        let dir = scratch.path();
        assert!(find(dir).unwrap().is_none());
        let rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7 x";
        std::fs::write(dir.join("ssh_host_rsa_key.pub"), rsa).unwrap();
        assert_eq!(find(dir).unwrap().unwrap().key_type, "ssh-rsa");
        std::fs::write(dir.join("ssh_host_ecdsa_key.pub"), "garbage").unwrap();
        assert!(find(dir).is_err());
    }

    #[test]
    fn username_comes_from_passwd() {
        let name = username().unwrap();
        assert!(!name.is_empty());
    }
}

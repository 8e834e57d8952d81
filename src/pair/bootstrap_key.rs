//! The Bootstrap Key: a fresh Ed25519 key per pairing ceremony.
//!
//! Its raw 32-byte seed rides in the Pairing Code; its public half goes into
//! `authorized_keys` behind a forced command. The public line here is
//! byte-for-byte what `ssh-keygen -y` prints for the same private key, so
//! the line sshd matches is the key the app derives from the seed.

use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{Ed25519KeyPair, KeyPair};

use crate::base::base64;

/// The OpenSSH key type of every Bootstrap and Device Key.
pub(crate) const KEY_TYPE: &str = "ssh-ed25519";

/// A Bootstrap Key. The seed is secret: `Debug` redacts it.
#[derive(Clone, PartialEq, Eq)]
pub struct BootstrapKey {
    seed: [u8; 32],
    public: [u8; 32],
}

impl std::fmt::Debug for BootstrapKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BootstrapKey")
            .field("seed", &"<secret>")
            .field("public_line", &self.public_line())
            .finish()
    }
}

/// The system random source failed (no entropy available).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomUnavailable;

impl std::fmt::Display for RandomUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the system random source failed")
    }
}

impl std::error::Error for RandomUnavailable {}

impl BootstrapKey {
    /// A new key from a fresh random seed.
    pub fn generate() -> Result<BootstrapKey, RandomUnavailable> {
        let mut seed = [0u8; 32];
        SystemRandom::new()
            .fill(&mut seed)
            .map_err(|_| RandomUnavailable)?;
        BootstrapKey::from_seed(seed)
    }

    /// The key of a given seed (every 32-byte string is a valid seed).
    pub fn from_seed(seed: [u8; 32]) -> Result<BootstrapKey, RandomUnavailable> {
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).map_err(|_| RandomUnavailable)?;
        let mut public = [0u8; 32];
        public.copy_from_slice(pair.public_key().as_ref());
        Ok(BootstrapKey { seed, public })
    }

    /// The raw seed (secret; only the Pairing Code may carry it).
    pub fn seed(&self) -> &[u8; 32] {
        &self.seed
    }

    /// The SSH wire blob: `string("ssh-ed25519") || string(public key)`.
    pub fn blob(&self) -> Vec<u8> {
        ed25519_blob(&self.public)
    }

    /// `ssh-ed25519 <standard padded base64 blob>`, as `ssh-keygen -y`.
    pub fn public_line(&self) -> String {
        format!("{KEY_TYPE} {}", base64::encode_standard(&self.blob()))
    }
}

/// The SSH wire encoding of an Ed25519 public key.
pub fn ed25519_blob(public: &[u8; 32]) -> Vec<u8> {
    let mut blob = Vec::with_capacity(51);
    for part in [KEY_TYPE.as_bytes(), public.as_slice()] {
        blob.extend_from_slice(&(part.len() as u32).to_be_bytes());
        blob.extend_from_slice(part);
    }
    blob
}

/// A new pairing id: 6 random bytes as 12 lowercase hex characters.
pub(crate) fn new_pairing_id() -> Result<String, RandomUnavailable> {
    let mut bytes = [0u8; 6];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| RandomUnavailable)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fresh_and_redacted() {
        let a = BootstrapKey::generate().unwrap();
        let b = BootstrapKey::generate().unwrap();
        assert_ne!(a.seed(), b.seed());
        assert!(
            a.public_line()
                .starts_with("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI")
        );
        assert_eq!(a.blob().len(), 51);
        let debug = format!("{a:?}");
        assert!(debug.contains("<secret>"));
        assert!(!debug.contains(&format!("{:?}", a.seed())));
    }

    #[test]
    fn pairing_ids_are_12_lowercase_hex() {
        let id = new_pairing_id().unwrap();
        assert_eq!(id.len(), 12);
        assert!(id.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')));
        assert_ne!(id, new_pairing_id().unwrap());
    }
}

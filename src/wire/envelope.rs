//! The sealed envelope `{"v":1,"kid":…,"n":…,"ct":…}` shared by Agent
//! Notifications (AAD `HERDR-NOTIFY:1`) and Live Activity content (AAD
//! `HERDR-ACTIVITY:1`): AES-256-GCM under the device's Notification Key.
//!
//! The AAD separates the two domains, so a notification ciphertext can never
//! be replayed as activity content. Plaintext rules live with each payload
//! (`notification`, `live_activity`); this module only frames and seals bytes.

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::digest::{SHA256, digest};
use ring::rand::{SecureRandom, SystemRandom};

use crate::base::base64;
use crate::base::json::{Object, Value};

pub(crate) const NONCE_LEN: usize = 12;
pub(crate) const TAG_LEN: usize = 16;

/// The domain an envelope belongs to; its AAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    Notification,
    Activity,
}

impl Domain {
    fn aad(self) -> &'static [u8] {
        match self {
            Domain::Notification => b"HERDR-NOTIFY:1",
            Domain::Activity => b"HERDR-ACTIVITY:1",
        }
    }
}

/// A 32-byte Notification Key. Secret: its `Debug` hides the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct NotificationKey([u8; 32]);

impl std::fmt::Debug for NotificationKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NotificationKey(kid {})", self.kid())
    }
}

/// Why a key string is not a Notification Key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadKey;

impl NotificationKey {
    /// Parses the unpadded base64url form; exactly 32 bytes.
    pub fn from_base64url(text: &str) -> Result<NotificationKey, BadKey> {
        let bytes = base64::decode_url(text).map_err(|_| BadKey)?;
        Ok(NotificationKey(bytes.try_into().map_err(|_| BadKey)?))
    }

    pub fn from_bytes(bytes: [u8; 32]) -> NotificationKey {
        NotificationKey(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Key id: unpadded base64url of the first 8 bytes of SHA-256(key).
    pub fn kid(&self) -> String {
        base64::encode_url(&digest(&SHA256, &self.0).as_ref()[..8])
    }
}

/// Why an envelope did not open; `code()` is the wire name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    BadEnvelope,
    UnsupportedVersion,
    DecryptFailed,
    BadPayload,
}

impl OpenError {
    pub fn code(self) -> &'static str {
        match self {
            OpenError::BadEnvelope => "bad_envelope",
            OpenError::UnsupportedVersion => "unsupported_version",
            OpenError::DecryptFailed => "decrypt_failed",
            OpenError::BadPayload => "bad_payload",
        }
    }
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

impl std::error::Error for OpenError {}

/// Twelve fresh random bytes.
pub(crate) fn random_nonce() -> Result<[u8; NONCE_LEN], ring::error::Unspecified> {
    let mut nonce = [0u8; NONCE_LEN];
    SystemRandom::new().fill(&mut nonce)?;
    Ok(nonce)
}

fn cipher(key: &NotificationKey) -> LessSafeKey {
    // AES-256 takes any 32-byte key, so construction cannot fail.
    match UnboundKey::new(&AES_256_GCM, key.as_bytes()) {
        Ok(unbound) => LessSafeKey::new(unbound),
        Err(_) => unreachable!("AES-256-GCM accepts every 32-byte key"),
    }
}

/// Seals `plaintext` and frames it as canonical envelope JSON.
pub fn seal(
    domain: Domain,
    key: &NotificationKey,
    nonce: [u8; NONCE_LEN],
    plaintext: &[u8],
) -> String {
    let mut buffer = plaintext.to_vec();
    let sealed = cipher(key).seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::from(domain.aad()),
        &mut buffer,
    );
    if sealed.is_err() {
        unreachable!("AES-GCM sealing fails only for plaintexts over 64 GiB");
    }
    Value::Object(
        Object::new()
            .with("v", 1u64)
            .with("kid", key.kid())
            .with("n", base64::encode_url(&nonce))
            .with("ct", base64::encode_url(&buffer)),
    )
    .to_json()
}

/// Opens an envelope string to its plaintext bytes (not yet validated).
pub fn open(domain: Domain, key: &NotificationKey, envelope: &str) -> Result<Vec<u8>, OpenError> {
    let value = crate::base::json::parse(envelope).map_err(|_| OpenError::BadEnvelope)?;
    let object = value.as_object().ok_or(OpenError::BadEnvelope)?;
    let version = object
        .get("v")
        .and_then(Value::as_i64)
        .ok_or(OpenError::BadEnvelope)?;
    if version != 1 {
        return Err(OpenError::UnsupportedVersion);
    }
    let field = |name| {
        object
            .get(name)
            .and_then(Value::as_str)
            .ok_or(OpenError::BadEnvelope)
    };
    if field("kid")?.is_empty() {
        return Err(OpenError::BadEnvelope);
    }
    let nonce = base64::decode_url(field("n")?).map_err(|_| OpenError::BadEnvelope)?;
    let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| OpenError::BadEnvelope)?;
    let mut ciphertext = base64::decode_url(field("ct")?).map_err(|_| OpenError::BadEnvelope)?;
    if ciphertext.len() < TAG_LEN {
        return Err(OpenError::BadEnvelope);
    }
    let plaintext = cipher(key)
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(domain.aad()),
            &mut ciphertext,
        )
        .map_err(|_| OpenError::DecryptFailed)?;
    Ok(plaintext.to_vec())
}

/// The per-pane collapse key: the first 16 bytes of
/// SHA-256(key ‖ `HERDR-NOTIFY-COLLAPSE:` ‖ pane), unpadded base64url.
/// Opaque to the relay, stable per pane, so newer alerts replace older ones.
pub fn collapse_key(key: &NotificationKey, pane: &str) -> String {
    let mut input = Vec::with_capacity(32 + 22 + pane.len());
    input.extend_from_slice(key.as_bytes());
    input.extend_from_slice(b"HERDR-NOTIFY-COLLAPSE:");
    input.extend_from_slice(pane.as_bytes());
    base64::encode_url(&digest(&SHA256, &input).as_ref()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> NotificationKey {
        NotificationKey::from_bytes(core::array::from_fn(|i| i as u8))
    }

    #[test]
    fn kid_matches_vector_key() {
        assert_eq!(key().kid(), "Yw3NKWbEM2Y");
        assert_eq!(format!("{:?}", key()), "NotificationKey(kid Yw3NKWbEM2Y)");
    }

    #[test]
    fn domains_are_separated() {
        let sealed = seal(Domain::Notification, &key(), [1; 12], b"{}");
        assert_eq!(open(Domain::Notification, &key(), &sealed).unwrap(), b"{}");
        assert_eq!(
            open(Domain::Activity, &key(), &sealed),
            Err(OpenError::DecryptFailed)
        );
    }

    #[test]
    fn collapse_key_is_22_chars_and_per_pane() {
        let a = collapse_key(&key(), "wV:p1");
        assert_eq!(a.len(), 22);
        assert_ne!(a, collapse_key(&key(), "wV:p2"));
    }
}

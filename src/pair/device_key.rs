//! Validating the Device Key public line the app submits during Enrollment.
//!
//! The line arrives from the network through sshd, so it is hostile input:
//! only a bare `ssh-ed25519 <blob> [comment]` line is accepted (no options
//! prefix that could smuggle a `command=` into authorized_keys), the blob
//! must decode to exactly an Ed25519 key, and the comment must be printable
//! ASCII. What gets written is the canonical re-encoding, never the input.
//! A comment ending in a Bootstrap Key marker (`herdr-pairing:<id>:exp:<n>`)
//! is refused too: cleanup and the sweep find bootstrap lines by that marker
//! alone, so such a device line would be enrolled and then deleted.

use std::fmt;

use crate::base::base64;
use crate::pair::authorized_keys;
use crate::pair::bootstrap_key::KEY_TYPE;
use crate::pair::host_key;

/// Longest accepted submission, in UTF-16 code units before trimming (as
/// the Node plugin counted).
pub(crate) const MAX_LINE_CHARS: usize = 1024;

/// A validated Device Key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceKey {
    /// `ssh-ed25519 <canonical base64>[ <comment>]`.
    pub line: String,
    /// The canonical standard base64 of the blob (the line's second word).
    pub(crate) blob_base64: String,
    /// `SHA256:…` of the blob.
    pub fingerprint: String,
    /// The comment (label), when there is one.
    pub comment: Option<String>,
}

/// Why a submission is not a Device Key; the text goes to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKeyError {
    TooLong,
    Empty,
    MultipleLines,
    NotEd25519,
    BadBase64,
    BadBlob,
    BadComment,
    MarkerComment,
    /// The key of a Bootstrap Key line (of this ceremony or another): its
    /// seed is printed in every Pairing Code, so it must never log in for
    /// good.
    BootstrapKey,
}

impl fmt::Display for DeviceKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceKeyError::TooLong => "line is longer than 1024 characters",
            DeviceKeyError::Empty => "line is empty",
            DeviceKeyError::MultipleLines => "line contains a line break",
            DeviceKeyError::NotEd25519 => "key type must be ssh-ed25519",
            DeviceKeyError::BadBase64 => "key blob is not base64",
            DeviceKeyError::BadBlob => "key blob is not an Ed25519 public key",
            DeviceKeyError::BadComment => "comment must be printable ASCII",
            DeviceKeyError::MarkerComment => {
                "comment must not end with a herdr-pairing: Bootstrap Key marker"
            }
            DeviceKeyError::BootstrapKey => "key is a Bootstrap Key, not a Device Key",
        })
    }
}

impl std::error::Error for DeviceKeyError {}

/// JavaScript's `String.prototype.trim` white space.
fn is_js_whitespace(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// Validates a submitted line and returns its canonical form.
pub fn parse(submitted: &str) -> Result<DeviceKey, DeviceKeyError> {
    if submitted.encode_utf16().count() > MAX_LINE_CHARS {
        return Err(DeviceKeyError::TooLong);
    }
    let line = submitted.trim_matches(is_js_whitespace);
    if line.is_empty() {
        return Err(DeviceKeyError::Empty);
    }
    if line.contains(['\n', '\r']) {
        return Err(DeviceKeyError::MultipleLines);
    }
    let mut words = line.splitn(3, ' ');
    let key_type = words.next().unwrap_or_default();
    let blob_text = words.next().unwrap_or_default();
    let comment = words.next().unwrap_or_default();
    if key_type != KEY_TYPE {
        return Err(DeviceKeyError::NotEd25519);
    }
    let blob = base64::decode_standard(blob_text).map_err(|_| DeviceKeyError::BadBase64)?;
    if blob_text.is_empty() {
        return Err(DeviceKeyError::BadBase64);
    }
    let public = ed25519_public_of(&blob).ok_or(DeviceKeyError::BadBlob)?;
    if !comment.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
        return Err(DeviceKeyError::BadComment);
    }
    let blob_base64 = base64::encode_standard(&crate::pair::bootstrap_key::ed25519_blob(&public));
    let line = if comment.is_empty() {
        format!("{KEY_TYPE} {blob_base64}")
    } else {
        format!("{KEY_TYPE} {blob_base64} {comment}")
    };
    if authorized_keys::marker_of(line.as_bytes()).is_some() {
        return Err(DeviceKeyError::MarkerComment);
    }
    Ok(DeviceKey {
        line,
        fingerprint: host_key::fingerprint(&blob),
        blob_base64,
        comment: (!comment.is_empty()).then(|| comment.to_owned()),
    })
}

/// The 32-byte key of an SSH Ed25519 blob with nothing left over.
fn ed25519_public_of(blob: &[u8]) -> Option<[u8; 32]> {
    let (key_type, rest) = ssh_string(blob)?;
    let (public, rest) = ssh_string(rest)?;
    if key_type != KEY_TYPE.as_bytes() || !rest.is_empty() {
        return None;
    }
    public.try_into().ok()
}

/// One SSH wire `string`: a big-endian u32 length, then that many bytes.
fn ssh_string(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (length, rest) = bytes.split_first_chunk::<4>()?;
    let length = usize::try_from(u32::from_be_bytes(*length)).ok()?;
    (rest.len() >= length).then(|| rest.split_at(length))
}

/// The comment (label) of a device line: the words after type and blob.
pub fn comment_of_line(line: &str) -> Option<String> {
    let comment = line.splitn(3, ' ').nth(2)?.trim();
    (!comment.is_empty()).then(|| comment.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pair::bootstrap_key::BootstrapKey;

    fn key_line() -> String {
        BootstrapKey::from_seed([9; 32]).unwrap().public_line()
    }

    #[test]
    fn accepts_and_canonicalises() {
        let key = parse(&format!("  {} iPhone (Ada)  \n", key_line())).unwrap();
        assert_eq!(key.line, format!("{} iPhone (Ada)", key_line()));
        assert_eq!(key.comment.as_deref(), Some("iPhone (Ada)"));
        assert!(key.fingerprint.starts_with("SHA256:"));
        let bare = parse(&key_line()).unwrap();
        assert_eq!(bare.line, key_line());
        assert_eq!(bare.comment, None);
        assert_eq!(bare.blob_base64, key_line()[12..]);
        assert_eq!(comment_of_line(&key.line).as_deref(), Some("iPhone (Ada)"));
        assert_eq!(comment_of_line(&bare.line), None);
        // The marker prefix elsewhere than as the last word marks nothing.
        for comment in ["herdr-pairing:ab12:exp:1 old", "herdr-pairing:notes"] {
            let key = parse(&format!("{} {comment}", key_line())).unwrap();
            assert_eq!(key.comment.as_deref(), Some(comment));
        }
    }

    #[test]
    fn rejects_everything_else() {
        let good = key_line();
        let blob = &good[12..];
        let cases = [
            (String::new(), DeviceKeyError::Empty),
            ("   ".into(), DeviceKeyError::Empty),
            (
                format!("{good} {}", "x".repeat(1024)),
                DeviceKeyError::TooLong,
            ),
            (
                format!("{good}\nssh-ed25519 {blob}"),
                DeviceKeyError::MultipleLines,
            ),
            (format!("{good} a\rb"), DeviceKeyError::MultipleLines),
            (format!("restrict {good}"), DeviceKeyError::NotEd25519),
            (format!("ssh-rsa {blob}"), DeviceKeyError::NotEd25519),
            (format!("ssh-ed25519  {blob}"), DeviceKeyError::BadBase64),
            ("ssh-ed25519".into(), DeviceKeyError::BadBase64),
            ("ssh-ed25519 AAAA!".into(), DeviceKeyError::BadBase64),
            (
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5".into(),
                DeviceKeyError::BadBlob,
            ),
            (format!("{good} caf\u{e9}"), DeviceKeyError::BadComment),
            (format!("{good} tab\there"), DeviceKeyError::BadComment),
            // A comment that reads as a Bootstrap Key marker would make the
            // device line look like a bootstrap line, which cleanup removes.
            (
                format!("{good} herdr-pairing:ab12:exp:1"),
                DeviceKeyError::MarkerComment,
            ),
            (
                format!("{good} iPhone herdr-pairing:x-Y9:exp:99999999999"),
                DeviceKeyError::MarkerComment,
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(parse(&input), Err(expected), "{input:?}");
        }
        // A blob with trailing bytes, and an RSA-typed blob under the ed25519 word.
        let mut long = crate::pair::bootstrap_key::ed25519_blob(&[1; 32]);
        long.push(0);
        let text = format!("ssh-ed25519 {}", base64::encode_standard(&long));
        assert_eq!(parse(&text), Err(DeviceKeyError::BadBlob));
    }

    #[test]
    fn never_panics_on_random_or_mutated_input() {
        let good = key_line().into_bytes();
        let mut rng = crate::base::test_rng::Rng(0x2545_f491_4f6c_dd1d);
        let mut next = move || rng.next();
        for round in 0..5_000 {
            let mut bytes = if round % 2 == 0 {
                good.clone()
            } else {
                (0..next() % 200).map(|_| next() as u8).collect()
            };
            for _ in 0..(next() % 4) {
                if bytes.is_empty() {
                    break;
                }
                let at = (next() as usize) % bytes.len();
                bytes[at] = next() as u8;
            }
            let text = String::from_utf8_lossy(&bytes);
            if let Ok(key) = parse(&text) {
                // Whatever is accepted re-validates to itself.
                assert_eq!(parse(&key.line), Ok(key.clone()));
            }
        }
    }

    #[test]
    fn never_panics_on_odd_input() {
        for input in [
            "\u{0}",
            "ssh-ed25519 \u{fffd}",
            "ssh-ed25519 AAAAAAAA",
            "ssh-ed25519 ////",
        ] {
            assert!(parse(input).is_err());
        }
    }
}

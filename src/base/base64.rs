//! Base64 in the two alphabets the wire formats use, with the strictness the
//! Heeler app's vectors demand.
//!
//! * unpadded base64url (RFC 4648 §5) for seeds, keys, nonces and ciphertexts:
//!   only `A-Z a-z 0-9 - _`, no `=`, and a length that is not `1 mod 4`;
//! * padded standard base64 for OpenSSH key blobs, and the unpadded standard
//!   form OpenSSH prints in `SHA256:` fingerprints.
//!
//! Decoders also reject non-zero trailing bits, so every accepted string is
//! the one canonical encoding of its bytes.

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Why a string is not valid base64 of the expected form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError;

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not valid base64")
    }
}

impl std::error::Error for DecodeError {}

fn encode_with(alphabet: &[u8; 64], bytes: &[u8], pad: bool) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..4 {
            if i < chars {
                out.push(char::from(alphabet[((n >> (18 - 6 * i)) & 63) as usize]));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

fn value_of(alphabet: &[u8; 64], c: u8) -> Option<u32> {
    alphabet.iter().position(|&a| a == c).map(|p| p as u32)
}

fn decode_with(alphabet: &[u8; 64], text: &str) -> Result<Vec<u8>, DecodeError> {
    let bytes = text.as_bytes();
    if bytes.len() % 4 == 1 {
        return Err(DecodeError);
    }
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value_of(alphabet, c).ok_or(DecodeError)? << (18 - 6 * i);
        }
        let produced = chunk.len() - 1;
        let all = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        // Bits below the last whole byte must be zero (canonical form).
        if produced < 3 && all[produced] != 0 {
            return Err(DecodeError);
        }
        out.extend_from_slice(&all[..produced]);
    }
    Ok(out)
}

/// Unpadded base64url.
pub fn encode_url(bytes: &[u8]) -> String {
    encode_with(URL_SAFE, bytes, false)
}

/// Strict unpadded base64url: no padding, no foreign characters.
pub fn decode_url(text: &str) -> Result<Vec<u8>, DecodeError> {
    decode_with(URL_SAFE, text)
}

/// Standard alphabet, padded (OpenSSH key blobs).
pub fn encode_standard(bytes: &[u8]) -> String {
    encode_with(STANDARD, bytes, true)
}

/// Standard alphabet without padding (OpenSSH `SHA256:` fingerprints).
pub(crate) fn encode_standard_unpadded(bytes: &[u8]) -> String {
    encode_with(STANDARD, bytes, false)
}

/// Standard alphabet with optional correct padding (`{0,2}` `=` making the
/// length a multiple of four), as OpenSSH writes key blobs.
pub(crate) fn decode_standard(text: &str) -> Result<Vec<u8>, DecodeError> {
    let trimmed = text.trim_end_matches('=');
    let pad = text.len() - trimmed.len();
    if pad > 2 || (pad > 0 && !text.len().is_multiple_of(4)) {
        return Err(DecodeError);
    }
    decode_with(STANDARD, trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_vectors_round_trip() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(encode_standard(plain.as_bytes()), encoded);
            assert_eq!(decode_standard(encoded).unwrap(), plain.as_bytes());
            let unpadded = encoded.trim_end_matches('=');
            assert_eq!(encode_url(plain.as_bytes()), unpadded);
            assert_eq!(decode_url(unpadded).unwrap(), plain.as_bytes());
        }
    }

    #[test]
    fn url_decoder_is_strict() {
        assert!(decode_url("Zg==").is_err(), "padding");
        assert!(decode_url("Z").is_err(), "length 1 mod 4");
        assert!(decode_url("Zh").is_err(), "non-zero trailing bits");
        assert!(decode_url("a+b/").is_err(), "standard alphabet");
        assert_eq!(decode_url("-_-_").unwrap(), vec![0xfb, 0xff, 0xbf]);
    }

    #[test]
    fn standard_decoder_checks_padding() {
        assert!(decode_standard("Zg=").is_err());
        assert!(decode_standard("Zg===").is_err());
        assert!(decode_standard("Zm9v=").is_err());
        assert_eq!(decode_standard("Zg").unwrap(), b"f");
    }
}

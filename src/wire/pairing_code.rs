//! The Pairing Code: `HERDR-PAIR:<version>:<base64url(JSON)>`, the string the
//! QR carries to the Heeler app.
//!
//! v1 is what the plugin emits for a herdr in `~/.config/herdr` and the only
//! version it decodes; v2 adds the `sock`/`herdr` endpoint of a herdr that
//! lives elsewhere and is only ever encoded here (the app decodes it).
//! Encoders write the one canonical form: keys in table order, no whitespace.

use crate::base::base64;
use crate::base::json::{self, Object, Value};
use crate::herdr::session;

pub(crate) const PREFIX: &str = "HERDR-PAIR:";
/// Longest `sock` in a v2 code, in UTF-8 bytes: its `-client` sibling must
/// still fit macOS `sun_path`.
pub(crate) const MAX_SOCK_BYTES: usize = 96;

/// Why a Pairing Code or payload was rejected; `code()` is the wire name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairingCodeError {
    BadPrefix,
    UnsupportedVersion,
    BadEncoding,
    BadPayload,
}

impl PairingCodeError {
    pub fn code(self) -> &'static str {
        match self {
            PairingCodeError::BadPrefix => "bad_prefix",
            PairingCodeError::UnsupportedVersion => "unsupported_version",
            PairingCodeError::BadEncoding => "bad_encoding",
            PairingCodeError::BadPayload => "bad_payload",
        }
    }
}

impl std::fmt::Display for PairingCodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

impl std::error::Error for PairingCodeError {}

/// The one-time Bootstrap Key a code may carry.
#[derive(Clone, PartialEq, Eq)]
pub struct Bootstrap {
    /// Raw Ed25519 seed. Secret: never printed except inside the code.
    pub seed: [u8; 32],
    /// Unix seconds.
    pub expires_at: i64,
}

impl std::fmt::Debug for Bootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bootstrap")
            .field("seed", &"<secret>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// A v2 herdr endpoint: the API socket and the launcher that runs its herdr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub sock: String,
    pub herdr: String,
}

/// The payload of a Pairing Code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    pub addrs: Vec<String>,
    pub port: u16,
    pub user: String,
    pub fp: String,
    pub bootstrap: Option<Bootstrap>,
}

/// Encodes a v1 code. Validates first: an invalid payload is `BadPayload`.
pub fn encode_v1(payload: &Payload) -> Result<String, PairingCodeError> {
    validate(payload)?;
    Ok(frame(1, &wire_object(payload, None)))
}

/// Encodes a v2 code for a herdr outside `~/.config/herdr`.
pub(crate) fn encode_v2(
    payload: &Payload,
    endpoint: &Endpoint,
) -> Result<String, PairingCodeError> {
    validate(payload)?;
    validate_endpoint(endpoint)?;
    Ok(frame(2, &wire_object(payload, Some(endpoint))))
}

fn frame(version: u32, object: &Object) -> String {
    let body = Value::Object(object.clone()).to_json();
    format!("{PREFIX}{version}:{}", base64::encode_url(body.as_bytes()))
}

/// The payload as wire JSON, keys in canonical order.
pub(crate) fn wire_object(payload: &Payload, endpoint: Option<&Endpoint>) -> Object {
    let addrs = payload
        .addrs
        .iter()
        .map(|a| Value::from(a.as_str()))
        .collect::<Vec<_>>();
    let mut object = Object::new()
        .with("addrs", addrs)
        .with("port", u64::from(payload.port))
        .with("user", payload.user.as_str())
        .with("fp", payload.fp.as_str());
    if let Some(endpoint) = endpoint {
        object = object
            .with("sock", endpoint.sock.as_str())
            .with("herdr", endpoint.herdr.as_str());
    }
    if let Some(bootstrap) = &payload.bootstrap {
        object = object
            .with("seed", base64::encode_url(&bootstrap.seed))
            .with("exp", bootstrap.expires_at);
    }
    object
}

/// Decodes a v1 code (v2 and anything else is `UnsupportedVersion`).
pub fn decode(code: &str) -> Result<Payload, PairingCodeError> {
    let rest = code
        .strip_prefix(PREFIX)
        .ok_or(PairingCodeError::BadPrefix)?;
    let (version, body) = rest.split_once(':').ok_or(PairingCodeError::BadPrefix)?;
    if version != "1" {
        return Err(PairingCodeError::UnsupportedVersion);
    }
    if body.is_empty() {
        return Err(PairingCodeError::BadEncoding);
    }
    let bytes = base64::decode_url(body).map_err(|_| PairingCodeError::BadEncoding)?;
    let text = String::from_utf8(bytes).map_err(|_| PairingCodeError::BadEncoding)?;
    let value = json::parse(&text).map_err(|_| PairingCodeError::BadEncoding)?;
    payload_from_wire(&value)
}

/// Reads and validates a wire payload object (unknown keys ignored).
pub fn payload_from_wire(value: &Value) -> Result<Payload, PairingCodeError> {
    let bad = PairingCodeError::BadPayload;
    let object = value.as_object().ok_or(bad)?;
    let addrs = object
        .get("addrs")
        .and_then(Value::as_array)
        .ok_or(bad)?
        .iter()
        .map(|a| a.as_str().map(str::to_owned).ok_or(bad))
        .collect::<Result<Vec<_>, _>>()?;
    let port = object
        .get("port")
        .and_then(Value::as_i64)
        .and_then(|p| u16::try_from(p).ok())
        .ok_or(bad)?;
    let user = object
        .get("user")
        .and_then(Value::as_str)
        .ok_or(bad)?
        .to_owned();
    let fp = object
        .get("fp")
        .and_then(Value::as_str)
        .ok_or(bad)?
        .to_owned();
    let bootstrap = match (object.get("seed"), object.get("exp")) {
        (None, None) => None,
        (Some(seed), Some(exp)) => {
            let seed = seed
                .as_str()
                .and_then(|s| base64::decode_url(s).ok())
                .ok_or(bad)?;
            let seed: [u8; 32] = seed.try_into().map_err(|_| bad)?;
            let expires_at = exp.as_i64().ok_or(bad)?;
            Some(Bootstrap { seed, expires_at })
        }
        _ => return Err(bad),
    };
    let payload = Payload {
        addrs,
        port,
        user,
        fp,
        bootstrap,
    };
    validate(&payload)?;
    Ok(payload)
}

/// Reads the v2 endpoint fields of a wire payload object.
pub fn endpoint_from_wire(value: &Value) -> Result<Endpoint, PairingCodeError> {
    let field = |key| {
        value
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(PairingCodeError::BadPayload)
    };
    let endpoint = Endpoint {
        sock: field("sock")?,
        herdr: field("herdr")?,
    };
    validate_endpoint(&endpoint)?;
    Ok(endpoint)
}

/// White space as JavaScript's `\s` sees it.
fn has_whitespace(text: &str) -> bool {
    text.chars().any(|c| c.is_whitespace() || c == '\u{feff}')
}

/// `SHA256:` plus 43 characters of unpadded standard base64, as OpenSSH prints.
pub(crate) fn is_openssh_fingerprint(fp: &str) -> bool {
    fp.strip_prefix("SHA256:").is_some_and(|b| {
        b.len() == 43
            && b.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/')
    })
}

/// Whether a code may carry `address`: non-empty, without white space.
pub(crate) fn is_valid_address(address: &str) -> bool {
    !address.is_empty() && !has_whitespace(address)
}

fn validate(payload: &Payload) -> Result<(), PairingCodeError> {
    let ok = !payload.addrs.is_empty()
        && payload.addrs.iter().all(|a| is_valid_address(a))
        && payload.port >= 1
        && !payload.user.is_empty()
        && !has_whitespace(&payload.user)
        && is_openssh_fingerprint(&payload.fp)
        && payload.bootstrap.as_ref().is_none_or(|b| b.expires_at > 0);
    if ok {
        Ok(())
    } else {
        Err(PairingCodeError::BadPayload)
    }
}

/// An absolute path without `'`, `\` or ASCII control characters: safe to
/// single-quote in the app's launcher command.
pub(crate) fn is_safe_absolute_path(path: &str) -> bool {
    path.starts_with('/')
        && !path
            .chars()
            .any(|c| c == '\'' || c == '\\' || (c as u32) < 0x20 || c == '\u{7f}')
}

/// The v2 rules for `sock` and `herdr`.
pub(crate) fn validate_endpoint(endpoint: &Endpoint) -> Result<(), PairingCodeError> {
    let sock = &endpoint.sock;
    let sock_layout =
        sock.ends_with("/herdr/herdr.sock") || session::named_session_of(sock).is_some();
    let ok = is_safe_absolute_path(sock)
        && is_safe_absolute_path(&endpoint.herdr)
        && sock_layout
        && sock.len() <= MAX_SOCK_BYTES;
    if ok {
        Ok(())
    } else {
        Err(PairingCodeError::BadPayload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Payload {
        Payload {
            addrs: vec!["192.168.1.42".into()],
            port: 22,
            user: "ada".into(),
            fp: "SHA256:6+jncNdibsG2cqvfoLApGrO8CvIwAEMzsB+IilOs8tg".into(),
            bootstrap: Some(Bootstrap {
                seed: [7; 32],
                expires_at: 1_753_305_600,
            }),
        }
    }

    #[test]
    fn v1_round_trips() {
        let code = encode_v1(&sample()).unwrap();
        assert!(code.starts_with("HERDR-PAIR:1:"));
        assert_eq!(decode(&code).unwrap(), sample());
    }

    #[test]
    fn v2_is_encoded_but_not_decoded() {
        let endpoint = Endpoint {
            sock: "/srv/app/herdr/herdr.sock".into(),
            herdr: "/srv/app/launcher".into(),
        };
        let code = encode_v2(&sample(), &endpoint).unwrap();
        assert_eq!(decode(&code), Err(PairingCodeError::UnsupportedVersion));
    }

    #[test]
    fn seed_is_not_in_debug_output() {
        assert!(!format!("{:?}", sample()).contains("7, 7"));
    }

    #[test]
    fn endpoint_rules() {
        let ok = |sock: &str| {
            validate_endpoint(&Endpoint {
                sock: sock.into(),
                herdr: "/bin/h".into(),
            })
            .is_ok()
        };
        assert!(ok("/a b/herdr/herdr.sock"));
        assert!(ok("/x/herdr/sessions/work/herdr.sock"));
        assert!(!ok("/x/herdr/sessions/../herdr.sock"));
        assert!(!ok("x/herdr/herdr.sock"));
        assert!(!ok("/it's/herdr/herdr.sock"));
        assert!(!ok(&format!("/{}/herdr/herdr.sock", "a".repeat(80))));
    }
}

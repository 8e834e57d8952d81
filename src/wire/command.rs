//! `heeler wire …`: the interop tool the app's developers and our scripts use
//! to check wire formats against the app. Its interface is a contract: keep
//! it stable.
//!
//! Rejections print `error: <code>` on stderr, nothing on stdout, exit 1.

use std::collections::HashMap;
use std::io::Read;

use crate::base::json::{self, Value};
use crate::cli::{
    ActivityCommand, BuildArgs, PairingCommand, SealArgs, SealCommand, WireArgs, WireCommand,
};
use crate::exit::Failure;
use crate::herdr::answer;
use crate::herdr::session;
use crate::wire::envelope::{self, NotificationKey, OpenError};
use crate::wire::live_activity::{self, BuildContext, Content};
use crate::wire::notification::Notification;
use crate::wire::pairing_code::{self, PairingCodeError};

/// Why a `wire` command failed; `code()` is what it prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    Pairing(PairingCodeError),
    Open(OpenError),
    /// `--key` is not 32 bytes of unpadded base64url.
    BadKey,
    /// `--nonce` is not 12 bytes of unpadded base64url.
    BadNonce,
    /// `--pins` is not JSON.
    BadPins,
    /// Standard input could not be read.
    Stdin,
    /// The system random generator failed.
    Random,
}

impl WireError {
    pub fn code(self) -> &'static str {
        match self {
            WireError::Pairing(e) => e.code(),
            WireError::Open(e) => e.code(),
            WireError::BadKey => "bad_key",
            WireError::BadNonce => "bad_nonce",
            WireError::BadPins => "bad_pins",
            WireError::Stdin => "stdin_unreadable",
            WireError::Random => "random_unavailable",
        }
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

impl std::error::Error for WireError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WireError::Pairing(e) => Some(e),
            WireError::Open(e) => Some(e),
            _ => None,
        }
    }
}

impl From<WireError> for Failure {
    fn from(error: WireError) -> Failure {
        Failure::new(format!("error: {error}"), 1)
    }
}

pub fn run(args: WireArgs) -> Result<(), Failure> {
    let output = dispatch(args.command)?;
    crate::exit::write_stdout(&format!("{output}\n"))
}

/// Runs one wire command and returns its stdout line.
fn dispatch(command: WireCommand) -> Result<String, WireError> {
    match command {
        WireCommand::Pairing(p) => pairing(p.command),
        WireCommand::Notify(n) => notify(n.command),
        WireCommand::Activity(a) => activity(a.command),
        WireCommand::Session(s) => Ok(
            match session::from_socket_path(s.socket_path.as_deref()).wire_name() {
                Some(name) => json::quote(name),
                None => "null".to_owned(),
            },
        ),
        WireCommand::Kid(k) => Ok(parse_key(&k.key)?.kid()),
        WireCommand::Collapse(c) => Ok(envelope::collapse_key(&parse_key(&c.key)?, &c.pane)),
    }
}

/// `wire pairing decode|encode`: a Pairing Code's payload as the wire
/// object, or the code of the wire object on stdin.
fn pairing(command: PairingCommand) -> Result<String, WireError> {
    match command {
        PairingCommand::Decode(d) => {
            let payload = pairing_code::decode(&d.code).map_err(WireError::Pairing)?;
            Ok(Value::Object(pairing_code::wire_object(&payload, None)).to_json())
        }
        PairingCommand::Encode(e) => {
            let bad = WireError::Pairing(PairingCodeError::BadPayload);
            let value = json::parse(&read_stdin()?).map_err(|_| bad)?;
            let payload = pairing_code::payload_from_wire(&value).map_err(WireError::Pairing)?;
            if e.v2 {
                let endpoint =
                    pairing_code::endpoint_from_wire(&value).map_err(WireError::Pairing)?;
                pairing_code::encode_v2(&payload, &endpoint).map_err(WireError::Pairing)
            } else {
                pairing_code::encode_v1(&payload).map_err(WireError::Pairing)
            }
        }
    }
}

/// `wire notify seal|open`: a notification sealed from the plaintext on
/// stdin, or the plaintext of the envelope on stdin.
fn notify(command: SealCommand) -> Result<String, WireError> {
    match command {
        SealCommand::Seal(s) => {
            let (key, nonce) = seal_inputs(&s)?;
            let value = parse_plaintext(&read_stdin()?)?;
            let notification = Notification::from_wire(&value).map_err(WireError::Open)?;
            Ok(notification.seal(&key, nonce))
        }
        SealCommand::Open(o) => {
            let key = parse_key(&o.key)?;
            let notification = Notification::open(&key, &read_stdin()?).map_err(WireError::Open)?;
            Ok(Value::Object(notification.to_wire()).to_json())
        }
    }
}

/// `wire activity seal|open|build`: a Live Activity content sealed,
/// opened, or built from the agent inventory on stdin.
fn activity(command: ActivityCommand) -> Result<String, WireError> {
    match command {
        ActivityCommand::Seal(s) => {
            let (key, nonce) = seal_inputs(&s)?;
            let value = parse_plaintext(&read_stdin()?)?;
            let content = Content::from_wire(&value).map_err(WireError::Open)?;
            Ok(content.seal(&key, nonce))
        }
        ActivityCommand::Open(o) => {
            let key = parse_key(&o.key)?;
            let content = Content::open(&key, &read_stdin()?).map_err(WireError::Open)?;
            Ok(content.canonical_json())
        }
        ActivityCommand::Build(b) => build_activity(&b),
    }
}

/// `wire activity build`: the content and counts built from the agent
/// inventory on stdin (an `agent list` answer or its `agents` array).
fn build_activity(b: &BuildArgs) -> Result<String, WireError> {
    let pins = match &b.pins {
        Some(text) => Some(json::parse(text).map_err(|_| WireError::BadPins)?),
        None => None,
    };
    let inventory = parse_plaintext(&read_stdin()?)?;
    let agents = answer::agents(
        inventory
            .get("agents")
            .unwrap_or(&inventory)
            .as_array()
            .unwrap_or(&[]),
    );
    let labels = HashMap::new();
    let context = BuildContext {
        host: &b.host,
        pins: pins.as_ref(),
        workspace_labels: &labels,
        rows: &|_| None,
    };
    let (counts, content) = live_activity::build(&agents, &context);
    let mut object = content.to_wire();
    if let Some(o) = object.as_object_mut() {
        o.insert("counts", Value::Object(counts.to_wire()));
    }
    Ok(object.to_json_sorted())
}

fn read_stdin() -> Result<String, WireError> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|_| WireError::Stdin)?;
    Ok(text)
}

fn parse_plaintext(text: &str) -> Result<Value, WireError> {
    json::parse(text).map_err(|_| WireError::Open(OpenError::BadPayload))
}

fn parse_key(text: &str) -> Result<NotificationKey, WireError> {
    NotificationKey::from_base64url(text).map_err(|_| WireError::BadKey)
}

fn seal_inputs(args: &SealArgs) -> Result<(NotificationKey, [u8; envelope::NONCE_LEN]), WireError> {
    let key = parse_key(&args.key)?;
    let nonce = match &args.nonce {
        Some(text) => crate::base::base64::decode_url(text)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or(WireError::BadNonce)?,
        None => envelope::random_nonce().map_err(|_| WireError::Random)?,
    };
    Ok((key, nonce))
}

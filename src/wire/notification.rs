//! The Agent Notification plaintext: `{pane, kind, status, ts, project?,
//! title?}`, sealed under `HERDR-NOTIFY:1`.
//!
//! Keys go out in table order; empty optional fields are omitted; project and
//! title are trimmed for display before sealing. Opening validates exactly
//! what the app's service extension validates.

use crate::base::json::{self, Object, Value};
use crate::wire::display_text::for_display;
use crate::wire::envelope::{self, Domain, NotificationKey, OpenError};

/// Longest `project`/`title` a decoder accepts, in UTF-16 code units.
pub(crate) const MAX_DISPLAY_UNITS: usize = 256;

/// What the hook tells the phone about one Agent Status transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub pane: String,
    pub kind: String,
    pub status: String,
    /// Unix seconds of the transition.
    pub ts: i64,
    pub project: Option<String>,
    pub title: Option<String>,
}

impl Notification {
    /// Reads the wire plaintext object. `None`, `""` and absent optional
    /// fields are the same; anything else malformed is `BadPayload`.
    pub(crate) fn from_wire(value: &Value) -> Result<Notification, OpenError> {
        let bad = OpenError::BadPayload;
        let object = value.as_object().ok_or(bad)?;
        let required = |key| {
            object
                .get(key)
                .and_then(Value::as_nonempty_str)
                .map(str::to_owned)
                .ok_or(bad)
        };
        let optional = |key| match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.encode_utf16().count() > MAX_DISPLAY_UNITS => Err(bad),
            Some(Value::String(s)) => Ok((!s.is_empty()).then(|| s.clone())),
            Some(_) => Err(bad),
        };
        let ts = object
            .get("ts")
            .and_then(Value::as_i64)
            .filter(|ts| *ts > 0)
            .ok_or(bad)?;
        Ok(Notification {
            pane: required("pane")?,
            kind: required("kind")?,
            status: required("status")?,
            ts,
            project: optional("project")?,
            title: optional("title")?,
        })
    }

    /// The display-trimmed copy the hook seals.
    pub fn trimmed_for_display(&self) -> Notification {
        Notification {
            project: self.project.as_deref().and_then(for_display),
            title: self.title.as_deref().and_then(for_display),
            ..self.clone()
        }
    }

    /// Canonical plaintext: table order, empty optionals omitted.
    pub(crate) fn to_wire(&self) -> Object {
        let mut object = Object::new()
            .with("pane", self.pane.as_str())
            .with("kind", self.kind.as_str())
            .with("status", self.status.as_str())
            .with("ts", self.ts);
        for (key, field) in [("project", &self.project), ("title", &self.title)] {
            if let Some(text) = field.as_deref().filter(|t| !t.is_empty()) {
                object.insert(key, Value::from(text));
            }
        }
        object
    }

    /// Seals the display-trimmed plaintext into an envelope.
    pub fn seal(&self, key: &NotificationKey, nonce: [u8; envelope::NONCE_LEN]) -> String {
        let plaintext = Value::Object(self.trimmed_for_display().to_wire()).to_json();
        envelope::seal(Domain::Notification, key, nonce, plaintext.as_bytes())
    }

    /// Opens and validates an envelope.
    pub fn open(key: &NotificationKey, envelope_text: &str) -> Result<Notification, OpenError> {
        let plaintext = envelope::open(Domain::Notification, key, envelope_text)?;
        let text = String::from_utf8(plaintext).map_err(|_| OpenError::BadPayload)?;
        let value = json::parse(&text).map_err(|_| OpenError::BadPayload)?;
        Notification::from_wire(&value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Notification {
        Notification {
            pane: "wV:p1".into(),
            kind: "claude".into(),
            status: "blocked".into(),
            ts: 1_753_305_600,
            project: Some(String::new()),
            title: None,
        }
    }

    #[test]
    fn empty_optionals_are_omitted() {
        assert_eq!(
            Value::Object(sample().to_wire()).to_json(),
            r#"{"pane":"wV:p1","kind":"claude","status":"blocked","ts":1753305600}"#
        );
    }

    #[test]
    fn seal_trims_long_titles() {
        let key = NotificationKey::from_bytes([9; 32]);
        let long = Notification {
            title: Some("t".repeat(300)),
            ..sample()
        };
        let opened = Notification::open(&key, &long.seal(&key, [0; 12])).unwrap();
        assert_eq!(opened.title.map(|t| t.chars().count()), Some(80));
        assert_eq!(opened.project, None);
    }
}

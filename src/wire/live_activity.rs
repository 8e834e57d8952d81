//! The Live Activity content: the per-Host agent list sealed under
//! `HERDR-ACTIVITY:1` and carried in the activity's content-state.
//!
//! The plaintext is canonical sorted-key JSON (`{"agents":[…],"host":…,"v":1}`).
//! [`build`] turns herdr's `agent list` inventory into that content with the
//! contract's rules: only working/blocked/done agents, pinned panes first,
//! then blocked < done < working, then pane id; five at most, while the counts
//! cover every eligible agent.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::base::json::{self, Object, Value};
use crate::herdr::answer::{Agent, nonempty};
use crate::wire::display_text::for_display;
use crate::wire::envelope::{self, Domain, NotificationKey, OpenError};

/// Agents shown at most; counts still cover all of them.
pub(crate) const MAX_AGENTS: usize = 5;

/// One agent row of the content.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentEntry {
    pub kind: Option<String>,
    pub name: Option<String>,
    pub pane: Option<String>,
    /// Up to three rows of styled spans (already rendered), when the device
    /// registered a row layout.
    pub rows: Option<Value>,
    pub status: String,
    pub title: Option<String>,
    pub workspace: Option<String>,
}

/// The decrypted content of one Live Activity update.
#[derive(Debug, Clone, PartialEq)]
pub struct Content {
    pub agents: Vec<AgentEntry>,
    pub host: String,
}

/// How many eligible agents are in each status (over the full inventory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub working: u64,
    pub blocked: u64,
    pub done: u64,
}

impl Counts {
    pub(crate) fn to_wire(self) -> Object {
        Object::new()
            .with("working", self.working)
            .with("blocked", self.blocked)
            .with("done", self.done)
    }
}

/// The statuses a Live Activity shows, in display rank order.
pub(crate) fn status_rank(status: &str) -> Option<u8> {
    match status {
        "blocked" => Some(0),
        "done" => Some(1),
        "working" => Some(2),
        _ => None,
    }
}

impl AgentEntry {
    fn from_wire(value: &Value) -> Result<AgentEntry, OpenError> {
        let object = value.as_object().ok_or(OpenError::BadPayload)?;
        let text = |key| object.get(key).and_then(Value::as_str).map(str::to_owned);
        Ok(AgentEntry {
            kind: text("kind"),
            name: text("name"),
            pane: text("pane"),
            rows: object.get("rows").and_then(normalize_rows),
            status: object
                .get("status")
                .and_then(Value::as_nonempty_str)
                .ok_or(OpenError::BadPayload)?
                .to_owned(),
            title: text("title"),
            workspace: text("workspace"),
        })
    }

    fn to_wire(&self) -> Object {
        let text = |field: &Option<String>| field.as_deref().map(Value::from);
        let fields = [
            ("kind", text(&self.kind)),
            ("name", text(&self.name)),
            ("pane", text(&self.pane)),
            ("rows", self.rows.clone()),
            ("status", Some(Value::from(self.status.as_str()))),
            ("title", text(&self.title)),
            ("workspace", text(&self.workspace)),
        ];
        let mut object = Object::new();
        for (key, value) in fields {
            if let Some(value) = value {
                object.insert(key, value);
            }
        }
        object
    }
}

/// Rows as the app reads them: arrays of spans `{bold?, dim?, fg?, text}`,
/// unknown span keys dropped and keys in canonical order. Anything of another
/// shape is treated as absent, as the app ignores an undecodable `rows`.
pub(crate) fn normalize_rows(rows: &Value) -> Option<Value> {
    let normalize_span = |span: &Value| -> Option<Value> {
        let span = span.as_object()?;
        let mut out = Object::new();
        for key in ["bold", "dim"] {
            match span.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Bool(b)) => out.insert(key, Value::Bool(*b)),
                Some(_) => return None,
            }
        }
        match span.get("fg") {
            None | Some(Value::Null) => {}
            Some(Value::String(fg)) => out.insert("fg", Value::from(fg.as_str())),
            Some(_) => return None,
        }
        out.insert("text", Value::from(span.get("text")?.as_str()?));
        Some(Value::Object(out))
    };
    let rows = rows
        .as_array()?
        .iter()
        .map(|row| {
            row.as_array()?
                .iter()
                .map(normalize_span)
                .collect::<Option<Vec<_>>>()
                .map(Value::Array)
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Value::Array(rows))
}

impl Content {
    /// Reads and validates a content object the way the app does.
    pub(crate) fn from_wire(value: &Value) -> Result<Content, OpenError> {
        let bad = OpenError::BadPayload;
        let object = value.as_object().ok_or(bad)?;
        if object.get("v").and_then(Value::as_i64) != Some(1) {
            return Err(bad);
        }
        let host = object
            .get("host")
            .and_then(Value::as_nonempty_str)
            .ok_or(bad)?
            .to_owned();
        let agents = object.get("agents").and_then(Value::as_array).ok_or(bad)?;
        let agents = agents
            .iter()
            .map(AgentEntry::from_wire)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Content { agents, host })
    }

    pub(crate) fn to_wire(&self) -> Value {
        let agents = self
            .agents
            .iter()
            .map(|a| Value::Object(a.to_wire()))
            .collect::<Vec<_>>();
        Value::Object(
            Object::new()
                .with("agents", agents)
                .with("host", self.host.as_str())
                .with("v", 1u64),
        )
    }

    /// The canonical plaintext: compact, keys sorted at every level.
    pub fn canonical_json(&self) -> String {
        self.to_wire().to_json_sorted()
    }

    pub fn seal(&self, key: &NotificationKey, nonce: [u8; envelope::NONCE_LEN]) -> String {
        envelope::seal(
            Domain::Activity,
            key,
            nonce,
            self.canonical_json().as_bytes(),
        )
    }

    pub fn open(key: &NotificationKey, envelope_text: &str) -> Result<Content, OpenError> {
        let plaintext = envelope::open(Domain::Activity, key, envelope_text)?;
        let text = String::from_utf8(plaintext).map_err(|_| OpenError::BadPayload)?;
        let value = json::parse(&text).map_err(|_| OpenError::BadPayload)?;
        Content::from_wire(&value)
    }
}

/// One eligible agent of herdr's inventory.
struct Eligible<'a> {
    agent: &'a Agent,
    pane: &'a str,
    status: String,
}

/// The eligible `{pane_id: status}` map of an `agent list` inventory.
pub(crate) fn eligible_statuses(inventory: &[Agent]) -> Vec<(String, String)> {
    eligible(inventory)
        .into_iter()
        .map(|e| (e.pane.to_owned(), e.status))
        .collect()
}

fn eligible(inventory: &[Agent]) -> Vec<Eligible<'_>> {
    inventory
        .iter()
        .filter_map(|agent| {
            let status = agent.agent_status.as_deref()?.to_lowercase();
            status_rank(&status)?;
            Some(Eligible {
                agent,
                pane: &agent.pane_id,
                status,
            })
        })
        .collect()
}

/// A device's pins: a list of strings, most recently pinned first. Anything
/// else (missing, null, non-array, any non-string entry) means no pins.
pub(crate) fn parse_pins(pins: Option<&Value>) -> Vec<&str> {
    let Some(items) = pins.and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .map(Value::as_str)
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}

/// JavaScript's default string order (UTF-16 code units).
pub(crate) fn js_string_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Inputs of [`build`] besides the inventory.
pub struct BuildContext<'a> {
    /// Short host name, already display-trimmed ("" when unknown).
    pub host: &'a str,
    /// The device's raw `pinned_pane_ids`.
    pub pins: Option<&'a Value>,
    /// Workspace id → label.
    pub workspace_labels: &'a HashMap<String, String>,
    /// Renders an agent's rows for this device, when it has a row layout.
    pub rows: &'a dyn Fn(&Agent) -> Option<Value>,
}

/// Builds the counts and content of one device's update from `agent list`.
pub fn build(inventory: &[Agent], context: &BuildContext<'_>) -> (Counts, Content) {
    let mut agents = eligible(inventory);
    let mut counts = Counts::default();
    for agent in &agents {
        match agent.status.as_str() {
            "working" => counts.working += 1,
            "blocked" => counts.blocked += 1,
            _ => counts.done += 1,
        }
    }
    let pins = parse_pins(context.pins);
    let pin_index = |pane: &str| pins.iter().position(|p| *p == pane);
    agents.sort_by(|a, b| {
        let by_pin = match (pin_index(a.pane), pin_index(b.pane)) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        by_pin
            .then(status_rank(&a.status).cmp(&status_rank(&b.status)))
            .then(js_string_cmp(a.pane, b.pane))
    });
    agents.truncate(MAX_AGENTS);
    let entries = agents
        .iter()
        .map(|e| AgentEntry {
            kind: Some(nonempty(&e.agent.agent).unwrap_or("unknown").to_owned()),
            name: nonempty(&e.agent.display_agent)
                .or(nonempty(&e.agent.name))
                .and_then(for_display),
            pane: Some(e.pane.to_owned()),
            rows: (context.rows)(e.agent),
            status: e.status.clone(),
            title: nonempty(&e.agent.terminal_title_stripped)
                .or(nonempty(&e.agent.terminal_title))
                .and_then(for_display),
            workspace: nonempty(&e.agent.workspace_id)
                .and_then(|id| context.workspace_labels.get(id))
                .and_then(|label| for_display(label)),
        })
        .collect();
    (
        counts,
        Content {
            agents: entries,
            host: context.host.to_owned(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::herdr::answer::agents;

    #[test]
    fn ineligible_and_malformed_agents_are_skipped_and_counted_out() {
        let inventory = json::parse(r#"[{"pane_id":"a","agent_status":"IDLE"},{"pane_id":"","agent_status":"done"},{"pane_id":"b","agent_status":"Blocked"},7]"#).unwrap();
        let labels = HashMap::new();
        let context = BuildContext {
            host: "h",
            pins: None,
            workspace_labels: &labels,
            rows: &|_| None,
        };
        let (counts, content) = build(&agents(inventory.as_array().unwrap()), &context);
        assert_eq!(
            counts,
            Counts {
                working: 0,
                blocked: 1,
                done: 0
            }
        );
        assert_eq!(
            content.canonical_json(),
            r#"{"agents":[{"kind":"unknown","pane":"b","status":"blocked"}],"host":"h","v":1}"#
        );
    }

    #[test]
    fn a_non_string_pin_disables_all_pins() {
        let pins = json::parse(r#"["a",1]"#).unwrap();
        assert!(parse_pins(Some(&pins)).is_empty());
    }
}

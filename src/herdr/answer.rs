//! herdr's answers as types: the agents, tabs, panes and workspaces heeler
//! reads, parsed once here so that no caller names herdr's JSON fields.
//!
//! The shapes are herdr's AgentInfo, TabInfo, PaneInfo and WorkspaceInfo
//! (`agent list`/`agent get`, `tab list`, `pane list`, `workspace list`);
//! only the fields heeler uses are kept. A row's identity is required: a
//! row without it (or not an object) is refused with a [`RowError`], and a
//! list drops such rows, as herdr's own clients do ("empty rows are
//! dropped"). Every other field is optional: absent or not a string reads
//! as `None`, and a string is kept as herdr sent it, empty or not, because
//! the callers tell an empty title from a missing one.

use std::collections::HashMap;

use crate::base::json::Value;

/// Why one row of a herdr answer cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowError {
    /// The row is not a JSON object.
    NotAnObject,
    /// A required field is absent or empty.
    Missing(&'static str),
    /// A required field is not a string.
    Mistyped(&'static str),
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowError::NotAnObject => f.write_str("not an object"),
            RowError::Missing(field) => write!(f, "no {field}"),
            RowError::Mistyped(field) => write!(f, "{field} is not a string"),
        }
    }
}

impl std::error::Error for RowError {}

/// An agent (herdr's AgentInfo), from `agent list` or `agent get`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Agent {
    /// Its pane: the identity, never empty.
    pub pane_id: String,
    /// `idle`, `working`, `blocked`, `done` or `unknown`, in herdr's case.
    pub agent_status: Option<String>,
    pub workspace_id: Option<String>,
    pub tab_id: Option<String>,
    /// The agent kind (`claude`, `codex`, …).
    pub agent: Option<String>,
    pub display_agent: Option<String>,
    pub name: Option<String>,
    /// The title a plugin reported for the pane.
    pub title: Option<String>,
    pub terminal_title: Option<String>,
    pub terminal_title_stripped: Option<String>,
    pub cwd: Option<String>,
    /// The plugin-reported tokens whose values are strings.
    pub tokens: HashMap<String, String>,
}

/// A tab (herdr's TabInfo), from `tab list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tab {
    /// The identity, never empty.
    pub tab_id: String,
    pub workspace_id: String,
    pub label: Option<String>,
}

/// A pane (herdr's PaneInfo), from `pane list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pane {
    /// The identity, never empty.
    pub pane_id: String,
    pub workspace_id: String,
    pub tab_id: Option<String>,
    pub label: Option<String>,
}

/// A workspace (herdr's WorkspaceInfo), from `workspace list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The identity, never empty.
    pub workspace_id: String,
    pub label: Option<String>,
}

/// `text` when it is not empty.
pub(crate) fn nonempty(text: &Option<String>) -> Option<&str> {
    text.as_deref().filter(|t| !t.is_empty())
}

/// An optional string field: absent or not a string is `None`.
fn text(row: &Value, field: &str) -> Option<String> {
    row.get(field).and_then(Value::as_str).map(str::to_owned)
}

/// A required string field, empty allowed when `may_be_empty`.
fn required(row: &Value, field: &'static str, may_be_empty: bool) -> Result<String, RowError> {
    match row.get(field) {
        None => Err(RowError::Missing(field)),
        Some(value) => match value.as_str() {
            None => Err(RowError::Mistyped(field)),
            Some("") if !may_be_empty => Err(RowError::Missing(field)),
            Some(text) => Ok(text.to_owned()),
        },
    }
}

fn object(row: &Value) -> Result<&Value, RowError> {
    row.as_object().map(|_| row).ok_or(RowError::NotAnObject)
}

impl Agent {
    pub fn from_value(row: &Value) -> Result<Agent, RowError> {
        let row = object(row)?;
        let tokens = row
            .get("tokens")
            .and_then(Value::as_object)
            .map(|tokens| {
                tokens
                    .iter()
                    .filter_map(|(name, value)| Some((name.to_owned(), value.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Agent {
            pane_id: required(row, "pane_id", false)?,
            agent_status: text(row, "agent_status"),
            workspace_id: text(row, "workspace_id"),
            tab_id: text(row, "tab_id"),
            agent: text(row, "agent"),
            display_agent: text(row, "display_agent"),
            name: text(row, "name"),
            title: text(row, "title"),
            terminal_title: text(row, "terminal_title"),
            terminal_title_stripped: text(row, "terminal_title_stripped"),
            cwd: text(row, "cwd"),
            tokens,
        })
    }
}

impl Tab {
    pub fn from_value(row: &Value) -> Result<Tab, RowError> {
        let row = object(row)?;
        Ok(Tab {
            tab_id: required(row, "tab_id", false)?,
            workspace_id: required(row, "workspace_id", true)?,
            label: text(row, "label"),
        })
    }
}

impl Pane {
    pub fn from_value(row: &Value) -> Result<Pane, RowError> {
        let row = object(row)?;
        Ok(Pane {
            pane_id: required(row, "pane_id", false)?,
            workspace_id: required(row, "workspace_id", true)?,
            tab_id: text(row, "tab_id"),
            label: text(row, "label"),
        })
    }
}

impl Workspace {
    pub fn from_value(row: &Value) -> Result<Workspace, RowError> {
        let row = object(row)?;
        Ok(Workspace {
            workspace_id: required(row, "workspace_id", false)?,
            label: text(row, "label"),
        })
    }
}

/// The usable rows of a list answer, in order; the others are dropped.
pub fn rows<T>(items: &[Value], parse: fn(&Value) -> Result<T, RowError>) -> Vec<T> {
    items.iter().filter_map(|row| parse(row).ok()).collect()
}

/// The agents of an `agent list` answer's `agents` array.
pub fn agents(items: &[Value]) -> Vec<Agent> {
    rows(items, Agent::from_value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::json;

    fn parse(text: &str) -> Value {
        json::parse(text).unwrap()
    }

    #[test]
    fn an_agent_info_row_keeps_the_fields_heeler_reads() {
        // herdr.md §5's tested `agent list` row, with the optional fields
        // herdr also sends.
        let row = parse(
            r#"{"agent":"claude","agent_status":"working","cwd":"/tmp","focused":true,"foreground_cwd":"/tmp","pane_id":"w1:p1","revision":0,"state_change_seq":1,"tab_id":"w1:t1","terminal_id":"term_661718154bffe1","workspace_id":"w1","name":"builder","display_agent":"Claude X","title":"Refactor","terminal_title":"⠋ Fix","terminal_title_stripped":"Fix","tokens":{"note":"n","count":3}}"#,
        );
        let agent = Agent::from_value(&row).unwrap();
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            agent,
            Agent {
                pane_id: "w1:p1".into(),
                agent_status: some("working"),
                workspace_id: some("w1"),
                tab_id: some("w1:t1"),
                agent: some("claude"),
                display_agent: some("Claude X"),
                name: some("builder"),
                title: some("Refactor"),
                terminal_title: some("⠋ Fix"),
                terminal_title_stripped: some("Fix"),
                cwd: some("/tmp"),
                tokens: HashMap::from([("note".to_owned(), "n".to_owned())]),
            }
        );
    }

    #[test]
    fn optional_fields_read_as_none_when_absent_or_not_strings_and_keep_empty_strings() {
        let agent = Agent::from_value(&parse(r#"{"pane_id":"w1:p2","agent_status":7,"title":""}"#))
            .unwrap();
        assert_eq!(agent.agent_status, None);
        assert_eq!(agent.title.as_deref(), Some(""));
        assert_eq!(nonempty(&agent.title), None);
        assert_eq!(agent.agent, None);
        assert!(agent.tokens.is_empty());
    }

    #[test]
    fn a_row_without_its_identity_is_refused_with_the_field_named() {
        assert_eq!(Agent::from_value(&parse("7")), Err(RowError::NotAnObject));
        assert_eq!(
            Agent::from_value(&parse(r#"{"agent_status":"done"}"#)),
            Err(RowError::Missing("pane_id"))
        );
        assert_eq!(
            Agent::from_value(&parse(r#"{"pane_id":""}"#)),
            Err(RowError::Missing("pane_id"))
        );
        assert_eq!(
            Agent::from_value(&parse(r#"{"pane_id":1}"#)),
            Err(RowError::Mistyped("pane_id"))
        );
        assert_eq!(
            Tab::from_value(&parse(r#"{"tab_id":"w1:t1"}"#)),
            Err(RowError::Missing("workspace_id"))
        );
        assert_eq!(
            Pane::from_value(&parse(r#"{"pane_id":"w1:p1","workspace_id":null}"#)),
            Err(RowError::Mistyped("workspace_id"))
        );
        assert_eq!(
            Workspace::from_value(&parse(r#"{"label":"e2e"}"#)),
            Err(RowError::Missing("workspace_id"))
        );
        assert_eq!(RowError::Missing("pane_id").to_string(), "no pane_id");
    }

    #[test]
    fn a_list_drops_the_rows_it_cannot_use() {
        let items = parse(
            r#"[{"pane_id":"a","agent_status":"IDLE"},{"pane_id":"","agent_status":"done"},7,{"pane_id":"b"}]"#,
        );
        let panes: Vec<String> = agents(items.as_array().unwrap())
            .into_iter()
            .map(|a| a.pane_id)
            .collect();
        assert_eq!(panes, ["a", "b"]);
    }

    #[test]
    fn tab_pane_and_workspace_rows_follow_herdr_md() {
        // herdr.md §5: WorkspaceInfo, and PaneInfo's fields; TabInfo as
        // `tab list` sends it.
        let workspace = parse(
            r#"{"workspace_id":"w1","number":1,"label":"e2e","focused":true,"pane_count":1,"tab_count":1,"active_tab_id":"w1:t1","agent_status":"working"}"#,
        );
        assert_eq!(
            Workspace::from_value(&workspace),
            Ok(Workspace {
                workspace_id: "w1".into(),
                label: Some("e2e".into()),
            })
        );
        let pane = parse(
            r#"{"pane_id":"w1:p1","terminal_id":"term_1","workspace_id":"w1","tab_id":"w1:t1","focused":true,"cwd":"/tmp","label":"approvals","agent_status":"unknown","revision":0}"#,
        );
        assert_eq!(
            Pane::from_value(&pane),
            Ok(Pane {
                pane_id: "w1:p1".into(),
                workspace_id: "w1".into(),
                tab_id: Some("w1:t1".into()),
                label: Some("approvals".into()),
            })
        );
        let tab = parse(r#"{"tab_id":"w1:t1","workspace_id":"w1","number":1,"label":"1"}"#);
        assert_eq!(
            Tab::from_value(&tab),
            Ok(Tab {
                tab_id: "w1:t1".into(),
                workspace_id: "w1".into(),
                label: Some("1".into()),
            })
        );
    }
}

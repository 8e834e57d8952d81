//! Live Activity rows: a device's `live_activity.row_layout` (up to three rows
//! of herdr-sidebar-style tokens) rendered into styled text spans per agent.
//!
//! The app draws the spans verbatim, so the rendering rules are wire rules:
//! which value each token takes, the ` · ` separator between kept spans, an
//! 80-grapheme cut with no ellipsis, and the span key order. A layout that
//! breaks any rule is ignored as a whole (no `rows` at all).

use std::collections::HashMap;

use crate::base::json::{Object, Value};
use crate::herdr::answer::{Agent, Pane, Tab, nonempty};
use crate::sidebar::config::{is_color, is_custom_token};
use crate::wire::display_text::first_graphemes;

/// Rows a layout may have.
pub(crate) const MAX_ROWS: usize = 3;
/// Fields a row may have.
pub(crate) const MAX_FIELDS: usize = 16;
/// Graphemes kept per span.
pub(crate) const SPAN_GRAPHEMES: usize = 80;
/// The separator span's text.
pub(crate) const SEPARATOR: &str = " · ";

const BUILTINS: [&str; 11] = [
    "state_icon",
    "state_text",
    "workspace",
    "tab",
    "pane",
    "agent",
    "terminal_title",
    "terminal_title_stripped",
    "host",
    "status",
    "directory",
];

/// One field of a row: a token and its optional style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub token: String,
    pub fg: Option<String>,
    pub bold: Option<bool>,
    pub dim: Option<bool>,
}

/// A valid row layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowLayout {
    pub rows: Vec<Vec<Field>>,
}

fn parse_field(value: &Value) -> Option<Field> {
    value.as_object()?;
    let token = value.get("token").and_then(Value::as_str)?;
    if !BUILTINS.contains(&token) && !is_custom_token(token) {
        return None;
    }
    let present = |key| value.get(key).filter(|v| !matches!(v, Value::Null));
    let fg = match present("fg") {
        None => None,
        Some(v) => Some(v.as_str().filter(|c| is_color(c))?.to_owned()),
    };
    let flag = |key| match present(key) {
        None => Ok(None),
        Some(v) => v.as_bool().map(Some).ok_or(()),
    };
    Some(Field {
        token: token.to_owned(),
        fg,
        bold: flag("bold").ok()?,
        dim: flag("dim").ok()?,
    })
}

/// Parses `row_layout`; `None` when it breaks any rule.
pub fn parse_layout(value: &Value) -> Option<RowLayout> {
    value.as_object()?;
    let rows = value.get("rows")?.as_array()?;
    if rows.len() > MAX_ROWS {
        return None;
    }
    let rows = rows
        .iter()
        .map(|row| {
            let fields = row.as_array()?;
            if fields.len() > MAX_FIELDS {
                return None;
            }
            fields.iter().map(parse_field).collect::<Option<Vec<_>>>()
        })
        .collect::<Option<Vec<_>>>()?;
    Some(RowLayout { rows })
}

impl RowLayout {
    /// The parsed layout as JSON (`{"rows":[[{"token",fg?,bold?,dim?}]]}`),
    /// the form hashed into the preferences.
    pub(crate) fn to_wire(&self) -> Value {
        let rows = self
            .rows
            .iter()
            .map(|row| {
                Value::Array(
                    row.iter()
                        .map(|f| {
                            let mut o = Object::new().with("token", f.token.as_str());
                            if let Some(fg) = &f.fg {
                                o.insert("fg", Value::from(fg.as_str()));
                            }
                            if let Some(b) = f.bold {
                                o.insert("bold", Value::Bool(b));
                            }
                            if let Some(d) = f.dim {
                                o.insert("dim", Value::Bool(d));
                            }
                            Value::Object(o)
                        })
                        .collect(),
                )
            })
            .collect::<Vec<_>>();
        Value::Object(Object::new().with("rows", rows))
    }

    /// Whether any field uses `token`.
    pub fn uses(&self, token: &str) -> bool {
        self.rows.iter().flatten().any(|f| f.token == token)
    }
}

/// A tab as the `tab` token sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabInfo {
    pub workspace_id: String,
    pub label: Option<String>,
    /// 1-based position within its workspace.
    pub position: usize,
    /// Tabs in that workspace.
    pub count: usize,
}

/// A pane as the `pane` token sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneInfo {
    pub workspace_id: String,
    pub tab_id: Option<String>,
    pub label: Option<String>,
}

/// Everything besides the agent itself that token values come from.
#[derive(Debug, Default)]
pub struct RowContext {
    pub workspace_labels: HashMap<String, String>,
    pub tabs: HashMap<String, TabInfo>,
    pub panes: HashMap<String, PaneInfo>,
    /// The short host name.
    pub host: String,
}

/// Adds one workspace's `tab list` answer: entries of that workspace,
/// de-duplicated by `tab_id` (first position, last value).
pub fn add_tabs(context: &mut RowContext, workspace_id: &str, tabs: &[Tab]) {
    let mut order: Vec<(String, Option<String>)> = Vec::new();
    for tab in tabs {
        if tab.workspace_id != workspace_id {
            continue;
        }
        let label = tab.label.clone();
        match order.iter_mut().find(|(i, _)| *i == tab.tab_id) {
            Some(slot) => slot.1 = label,
            None => order.push((tab.tab_id.clone(), label)),
        }
    }
    let count = order.len();
    for (index, (id, label)) in order.into_iter().enumerate() {
        context.tabs.insert(
            id,
            TabInfo {
                workspace_id: workspace_id.to_owned(),
                label,
                position: index + 1,
                count,
            },
        );
    }
}

/// Adds one workspace's `pane list` answer (same filtering as tabs).
pub fn add_panes(context: &mut RowContext, workspace_id: &str, panes: &[Pane]) {
    for pane in panes {
        if pane.workspace_id != workspace_id {
            continue;
        }
        context.panes.insert(
            pane.pane_id.clone(),
            PaneInfo {
                workspace_id: workspace_id.to_owned(),
                tab_id: pane.tab_id.clone(),
                label: pane.label.clone(),
            },
        );
    }
}

const ACTIVITY_GLYPHS: [char; 10] = ['·', '✢', '✳', '✶', '✻', '✽', '◐', '◓', '◑', '◒'];

/// A raw terminal title with one leading activity glyph (braille spinner or
/// one of herdr's status glyphs) removed when a space or the end follows it.
pub(crate) fn strip_activity_glyph(title: &str) -> String {
    let mut chars = title.chars();
    let stripped = match chars.next() {
        Some(c) if ('\u{2800}'..='\u{28ff}').contains(&c) || ACTIVITY_GLYPHS.contains(&c) => {
            let rest = chars.as_str();
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                rest
            } else {
                title
            }
        }
        _ => title,
    };
    stripped.trim().to_owned()
}

/// The value of `token` for one agent.
pub(crate) fn token_value(
    token: &str,
    agent: &Agent,
    context: &RowContext,
    host_name: Option<&str>,
) -> Option<String> {
    let workspace_id = agent.workspace_id.as_deref();
    let tab_id = agent.tab_id.as_deref();
    match token {
        "workspace" => workspace_id
            .and_then(|id| context.workspace_labels.get(id))
            .cloned(),
        "tab" => {
            let tab = context.tabs.get(tab_id?)?;
            if Some(tab.workspace_id.as_str()) != workspace_id {
                return None;
            }
            let label = tab.label.clone()?;
            (tab.count > 1 || label != tab.position.to_string()).then_some(label)
        }
        "pane" => match &agent.title {
            Some(title) => Some(title.clone()),
            None => {
                let pane = context.panes.get(&agent.pane_id)?;
                (Some(pane.workspace_id.as_str()) == workspace_id
                    && pane.tab_id.as_deref() == tab_id)
                    .then(|| pane.label.clone())?
            }
        },
        "agent" => Some(
            nonempty(&agent.display_agent)
                .or(nonempty(&agent.name))
                .or(agent.agent.as_deref())
                .unwrap_or("unknown")
                .to_owned(),
        ),
        "terminal_title" => agent.terminal_title.clone(),
        "terminal_title_stripped" => match &agent.terminal_title_stripped {
            Some(stripped) => Some(stripped.clone()),
            None => agent.terminal_title.as_deref().map(strip_activity_glyph),
        },
        "host" => Some(
            host_name
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .unwrap_or(&context.host)
                .to_owned(),
        ),
        "status" => {
            let status = agent.agent_status.as_deref()?.to_lowercase();
            let mut chars = status.chars();
            let first = chars.next()?;
            Some(first.to_uppercase().chain(chars).collect())
        }
        "directory" => agent.cwd.as_deref().map(|c| c.trim().to_owned()),
        "state_icon" | "state_text" => None,
        custom => {
            let name = custom.strip_prefix('$')?;
            agent.tokens.get(name).cloned()
        }
    }
}

/// Renders one agent's rows: spans with the field's styles, separators
/// between kept spans, empty rows dropped.
pub fn render(
    layout: &RowLayout,
    agent: &Agent,
    context: &RowContext,
    host_name: Option<&str>,
) -> Value {
    let rows = layout
        .rows
        .iter()
        .filter_map(|row| {
            let mut spans: Vec<Value> = Vec::new();
            for field in row {
                let Some(text) = token_value(&field.token, agent, context, host_name)
                    .filter(|t| !t.trim().is_empty())
                else {
                    continue;
                };
                if !spans.is_empty() {
                    spans.push(Value::Object(Object::new().with("text", SEPARATOR)));
                }
                let mut span = Object::new();
                if let Some(bold) = field.bold {
                    span.insert("bold", Value::Bool(bold));
                }
                if let Some(dim) = field.dim {
                    span.insert("dim", Value::Bool(dim));
                }
                if let Some(fg) = &field.fg {
                    span.insert("fg", Value::from(fg.as_str()));
                }
                span.insert("text", Value::from(first_graphemes(&text, SPAN_GRAPHEMES)));
                spans.push(Value::Object(span));
            }
            (!spans.is_empty()).then_some(Value::Array(spans))
        })
        .collect::<Vec<_>>();
    Value::Array(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::json;

    fn layout(text: &str) -> Option<RowLayout> {
        parse_layout(&json::parse(text).unwrap())
    }

    #[test]
    fn layout_rules() {
        assert!(layout(r#"{"rows":[]}"#).is_some());
        assert!(
            layout(r#"{"rows":[[{"token":"$x","fg":null,"bold":true}]],"row_gap":3}"#).is_some()
        );
        for bad in [
            r#"{"rows":[[],[],[],[]]}"#,
            r#"{"rows":[[{"token":"machine"}]]}"#,
            r#"{"rows":[[{"token":"$"}]]}"#,
            r#"{"rows":[[{"token":"agent","fg":"red"}]]}"#,
            r#"{"rows":[[{"token":"agent","dim":1}]]}"#,
            r#"{"rows":[["agent"]]}"#,
            r#"{"rows":{}}"#,
        ] {
            assert!(layout(bad).is_none(), "{bad}");
        }
    }

    fn agent_of(text: &str) -> Agent {
        Agent::from_value(&json::parse(text).unwrap()).unwrap()
    }

    fn tabs_of(list: &Value) -> Vec<Tab> {
        crate::herdr::answer::rows(list.as_array().unwrap(), Tab::from_value)
    }

    #[test]
    fn glyph_is_stripped_only_at_a_boundary() {
        assert_eq!(strip_activity_glyph("⠋ Working "), "Working");
        assert_eq!(strip_activity_glyph("✳"), "");
        assert_eq!(strip_activity_glyph("✳Claude"), "✳Claude");
    }

    #[test]
    fn tab_label_hidden_when_it_is_just_the_position() {
        let mut context = RowContext::default();
        let tabs = json::parse(r#"[{"tab_id":"w1:t1","workspace_id":"w1","label":"1"}]"#).unwrap();
        add_tabs(&mut context, "w1", &tabs_of(&tabs));
        let agent = agent_of(r#"{"pane_id":"w1:p1","workspace_id":"w1","tab_id":"w1:t1"}"#);
        assert_eq!(token_value("tab", &agent, &context, None), None);
        let tabs = json::parse(r#"[{"tab_id":"w1:t1","workspace_id":"w1","label":"1"},{"tab_id":"w1:t2","workspace_id":"w1","label":"2"}]"#).unwrap();
        add_tabs(&mut context, "w1", &tabs_of(&tabs));
        assert_eq!(
            token_value("tab", &agent, &context, None).as_deref(),
            Some("1")
        );
    }

    #[test]
    fn spans_are_separated_styled_and_cut_without_ellipsis() {
        let l = layout(
            r##"{"rows":[[{"token":"agent","bold":true},{"token":"state_icon"},{"token":"$t","fg":"#abc"}],[{"token":"$missing"}]]}"##,
        )
        .unwrap();
        let long = "界".repeat(90);
        let agent = agent_of(&format!(
            r#"{{"pane_id":"w1:p1","agent":"codex","tokens":{{"t":"{long}"}}}}"#
        ));
        let rows = render(&l, &agent, &RowContext::default(), None);
        assert_eq!(
            rows.to_json(),
            format!(
                r##"[[{{"bold":true,"text":"codex"}},{{"text":" · "}},{{"fg":"#abc","text":"{}"}}]]"##,
                "界".repeat(80)
            )
        );
    }
}

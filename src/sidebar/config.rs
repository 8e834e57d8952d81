//! herdr's sidebar agent layout, read from `config.toml` and turned into the
//! `sidebar.json` snapshot the Heeler app reads over SSH.
//!
//! Why a module of its own: the snapshot must contain a layout herdr itself
//! would accept, or nothing. Everything here is pure (bytes in, snapshot
//! out), so the whole grammar (spec "Sidebar layout snapshot (v1)", plugin
//! 0.6.1) is tested without touching a file. Any violation reverts the
//! *whole* layout and sort to the snapshot defaults with one diagnostic; no
//! raw config value or parser message ever reaches the snapshot.
//!
//! TOML is parsed with the `toml` crate's span-keeping document parser
//! ([`DeTable`]) rather than `toml::Table`: without the `preserve_order`
//! feature a `Table` sorts its keys, while `rows_by_agent` must be exported
//! in the order the user wrote it. Key spans give that order back.

use std::borrow::Cow;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::base::json::{Object, Value};
use crate::sidebar::toml_1_0;

/// The snapshot format version.
pub(crate) const SNAPSHOT_VERSION: u64 = 1;

/// herdr's built-in agent tokens (herdr 0.9.x; `machine` since 0.9.0).
pub const BUILTIN_TOKENS: [&str; 9] = [
    "state_icon",
    "state_text",
    "machine",
    "workspace",
    "tab",
    "pane",
    "agent",
    "terminal_title",
    "terminal_title_stripped",
];

/// The canonical agent ids `rows_by_agent` accepts (verified against herdr
/// v0.9.4). Aliases and case variations are invalid.
pub const AGENT_IDS: [&str; 24] = [
    "pi",
    "claude",
    "codex",
    "gemini",
    "cursor",
    "devin",
    "agy",
    "cline",
    "omp",
    "mastracode",
    "opencode",
    "copilot",
    "kimi",
    "kiro",
    "droid",
    "amp",
    "grok",
    "hermes",
    "kilo",
    "qodercli",
    "qwen",
    "letta",
    "maki",
    "muse",
];

/// At most this many rows in a layout, tokens in a row, and rules on a token.
pub(crate) const MAX_ROWS: usize = 16;
pub(crate) const MAX_TOKENS_PER_ROW: usize = 16;
pub(crate) const MAX_RULES: usize = 16;

const TOKEN_KEYS: [&str; 5] = ["token", "fg", "bold", "dim", "rules"];
const RULE_KEYS: [&str; 10] = [
    "equals",
    "contains",
    "starts_with",
    "gt",
    "lt",
    "ignore_case",
    "fg",
    "bold",
    "dim",
    "hide",
];
const BOM: char = '\u{feff}';

/// Why a snapshot carries the defaults instead of the user's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Diagnostic {
    ParseError,
    InvalidToken,
    InvalidSchema,
    ReadError,
}

impl Diagnostic {
    pub const ALL: [Diagnostic; 4] = [
        Diagnostic::ParseError,
        Diagnostic::InvalidToken,
        Diagnostic::InvalidSchema,
        Diagnostic::ReadError,
    ];

    /// The snapshot's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Diagnostic::ParseError => "parse_error",
            Diagnostic::InvalidToken => "invalid_token",
            Diagnostic::InvalidSchema => "invalid_schema",
            Diagnostic::ReadError => "read_error",
        }
    }

    /// The diagnostic a snapshot string names, if any.
    #[cfg(test)]
    pub(crate) fn from_name(name: &str) -> Option<Diagnostic> {
        Diagnostic::ALL.into_iter().find(|d| d.as_str() == name)
    }
}

/// `ui.agent_panel_sort`; the input alias `workspaces` is [`Sort::Spaces`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    Spaces,
    Priority,
}

impl Sort {
    pub fn as_str(self) -> &'static str {
        match self {
            Sort::Spaces => "spaces",
            Sort::Priority => "priority",
        }
    }
}

/// A numeric rule threshold, exported as the JSON number it was written as.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Threshold {
    Integer(i64),
    Float(f64),
}

impl Threshold {
    fn to_value(self) -> Value {
        match self {
            Threshold::Integer(n) => Value::from(n),
            Threshold::Float(f) => Value::from(f),
        }
    }
}

/// A rule's single condition on the token's text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Condition {
    Equals(String),
    Contains(String),
    StartsWith(String),
    Gt(Threshold),
    Lt(Threshold),
}

impl Condition {
    fn is_text(&self) -> bool {
        matches!(
            self,
            Condition::Equals(_) | Condition::Contains(_) | Condition::StartsWith(_)
        )
    }
}

/// One entry of a styled token's `rules`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub(crate) condition: Condition,
    pub ignore_case: Option<bool>,
    pub fg: Option<String>,
    pub bold: Option<bool>,
    pub dim: Option<bool>,
    pub hide: Option<bool>,
}

/// One token of a row, with the style fields the user gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub name: String,
    pub fg: Option<String>,
    pub bold: Option<bool>,
    pub dim: Option<bool>,
    pub rules: Vec<Rule>,
}

impl Token {
    /// A plain token without style.
    pub fn plain(name: &str) -> Token {
        Token {
            name: name.to_owned(),
            fg: None,
            bold: None,
            dim: None,
            rules: Vec::new(),
        }
    }
}

/// Rows of tokens: a whole layout.
pub(crate) type Rows = Vec<Vec<Token>>;

/// The exported subset of herdr's config.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub agent_panel_sort: Sort,
    pub row_gap: u16,
    pub rows: Rows,
    /// Canonical agent id → replacement rows, in the order written.
    pub rows_by_agent: Vec<(String, Rows)>,
}

impl Default for Layout {
    /// The snapshot defaults (not herdr 0.9's: those put `machine` after
    /// `state_icon`, which Heeler does not render).
    fn default() -> Layout {
        Layout {
            agent_panel_sort: Sort::Spaces,
            row_gap: 0,
            rows: vec![
                vec![
                    Token::plain("state_icon"),
                    Token::plain("workspace"),
                    Token::plain("tab"),
                ],
                vec![Token::plain("agent")],
            ],
            rows_by_agent: Vec::new(),
        }
    }
}

/// A layout and its diagnostics: with any diagnostic, the layout is
/// [`Layout::default`].
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub layout: Layout,
    pub diagnostics: Vec<Diagnostic>,
}

impl Parsed {
    /// The defaults with one diagnostic (or none).
    pub fn fallback(diagnostic: Option<Diagnostic>) -> Parsed {
        Parsed {
            layout: Layout::default(),
            diagnostics: diagnostic.into_iter().collect(),
        }
    }
}

/// Where the layout came from, as the snapshot's `source` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub path: String,
    pub found: bool,
    /// Node's `mtimeMs` (fractional milliseconds); `None` when not statted.
    pub mtime_ms: Option<f64>,
}

/// Parses the raw bytes of a config file. Text that is not UTF-8 is not
/// TOML, so it is a `parse_error` (herdr cannot read it either).
pub fn parse_config(bytes: &[u8]) -> Parsed {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_config_str(text),
        Err(_) => Parsed::fallback(Some(Diagnostic::ParseError)),
    }
}

/// Parses config text and validates the exported subset.
pub fn parse_config_str(text: &str) -> Parsed {
    let text = text.strip_prefix(BOM).unwrap_or(text);
    let mut text = Cow::Borrowed(text);
    // Each retry removes one U+FEFF, so this ends.
    let document = loop {
        match DeTable::parse(&text) {
            Ok(document) => break document,
            Err(error) => {
                let Some(at) = error
                    .span()
                    .and_then(|span| line_start_bom_at(&text, span.start))
                else {
                    return Parsed::fallback(Some(Diagnostic::ParseError));
                };
                let mut owned = text.into_owned();
                owned.replace_range(at..at + BOM.len_utf8(), "");
                text = Cow::Owned(owned);
            }
        }
    };
    let root = document.get_ref();
    // herdr reads TOML 1.0 and rejects the whole file otherwise.
    if !numbers_representable(root) || toml_1_0::uses_toml_1_1(&text, root) {
        return Parsed::fallback(Some(Diagnostic::ParseError));
    }
    match validate(root) {
        Ok(layout) => Parsed {
            layout,
            diagnostics: Vec::new(),
        },
        Err(reject) => Parsed::fallback(Some(reject.diagnostic())),
    }
}

/// The byte offset of a U+FEFF that starts a line and that a parser error
/// at `error_at` points at (the error starts on it or right after it).
fn line_start_bom_at(text: &str, error_at: usize) -> Option<usize> {
    let bom_len = BOM.len_utf8();
    let candidates = [Some(error_at), error_at.checked_sub(bom_len)];
    candidates.into_iter().flatten().find(|&at| {
        text.get(at..).is_some_and(|rest| rest.starts_with(BOM))
            && (at == 0 || text.as_bytes().get(at - 1) == Some(&b'\n'))
    })
}

/// TOML integers must fit `i64` and floats must not overflow; the document
/// parser keeps their text, so check every one as `toml::Table` would.
fn numbers_representable(root: &DeTable<'_>) -> bool {
    let mut pending: Vec<&DeValue<'_>> = root.values().map(Spanned::get_ref).collect();
    while let Some(value) = pending.pop() {
        match value {
            DeValue::Integer(n) => {
                if i64::from_str_radix(n.as_str(), n.radix()).is_err() {
                    return false;
                }
            }
            DeValue::Float(f) => {
                if parse_float(f.as_str()).is_none() {
                    return false;
                }
            }
            DeValue::Array(items) => pending.extend(items.iter().map(Spanned::get_ref)),
            DeValue::Table(table) => pending.extend(table.values().map(Spanned::get_ref)),
            DeValue::String(_) | DeValue::Boolean(_) | DeValue::Datetime(_) => {}
        }
    }
    true
}

/// A TOML float's value; `None` when a finite literal overflows.
fn parse_float(text: &str) -> Option<f64> {
    let value: f64 = text.parse().ok()?;
    (!value.is_infinite() || text.contains("inf")).then_some(value)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reject {
    Token,
    Schema,
}

impl Reject {
    fn diagnostic(self) -> Diagnostic {
        match self {
            Reject::Token => Diagnostic::InvalidToken,
            Reject::Schema => Diagnostic::InvalidSchema,
        }
    }
}

type Checked<T> = Result<T, Reject>;

fn lookup<'a, 'i>(table: &'a DeTable<'i>, key: &str) -> Option<&'a DeValue<'i>> {
    table.get(key).map(Spanned::get_ref)
}

fn as_table<'a, 'i>(value: Option<&'a DeValue<'i>>) -> Checked<Option<&'a DeTable<'i>>> {
    match value {
        None => Ok(None),
        Some(DeValue::Table(table)) => Ok(Some(table)),
        Some(_) => Err(Reject::Schema),
    }
}

/// A table's entries in the order they were written.
fn entries_in_order<'a, 'i>(table: &'a DeTable<'i>) -> Vec<(&'a str, &'a DeValue<'i>)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    entries
        .into_iter()
        .map(|(key, value)| (key.get_ref().as_ref(), value.get_ref()))
        .collect()
}

fn validate(root: &DeTable<'_>) -> Checked<Layout> {
    let empty = DeTable::new();
    let ui = as_table(lookup(root, "ui"))?.unwrap_or(&empty);
    let sidebar = as_table(lookup(ui, "sidebar"))?.unwrap_or(&empty);
    let agents = as_table(lookup(sidebar, "agents"))?.unwrap_or(&empty);
    let agent_panel_sort = match lookup(ui, "agent_panel_sort") {
        None => Sort::Spaces,
        Some(DeValue::String(sort)) => match sort.as_ref() {
            "spaces" | "workspaces" => Sort::Spaces,
            "priority" => Sort::Priority,
            _ => return Err(Reject::Schema),
        },
        Some(_) => return Err(Reject::Schema),
    };
    let mut layout = Layout {
        agent_panel_sort,
        ..Layout::default()
    };
    if let Some(gap) = lookup(agents, "row_gap") {
        layout.row_gap = match gap {
            DeValue::Integer(n) => i64::from_str_radix(n.as_str(), n.radix())
                .ok()
                .and_then(|n| u16::try_from(n).ok())
                .ok_or(Reject::Schema)?,
            _ => return Err(Reject::Schema),
        };
    }
    if let Some(rows) = lookup(agents, "rows") {
        layout.rows = validate_rows(rows)?;
    }
    if let Some(by_agent) = as_table(lookup(agents, "rows_by_agent"))? {
        for (id, rows) in entries_in_order(by_agent) {
            if !AGENT_IDS.contains(&id) {
                return Err(Reject::Schema);
            }
            layout
                .rows_by_agent
                .push((id.to_owned(), validate_rows(rows)?));
        }
    }
    Ok(layout)
}

fn validate_rows(value: &DeValue<'_>) -> Checked<Rows> {
    let DeValue::Array(rows) = value else {
        return Err(Reject::Schema);
    };
    if rows.len() > MAX_ROWS {
        return Err(Reject::Schema);
    }
    rows.iter()
        .map(|row| {
            let DeValue::Array(tokens) = row.get_ref() else {
                return Err(Reject::Schema);
            };
            if tokens.len() > MAX_TOKENS_PER_ROW {
                return Err(Reject::Schema);
            }
            tokens.iter().map(|t| validate_token(t.get_ref())).collect()
        })
        .collect()
}

fn is_token_name(name: &str) -> bool {
    BUILTIN_TOKENS.contains(&name) || is_custom_token(name)
}

/// A custom token: `$` and 1 to 32 ASCII letters, digits, `_` or `-`. The
/// sidebar's grammar, which Live Activity row layouts share
/// (`hooks::row_layout`).
pub fn is_custom_token(token: &str) -> bool {
    token.strip_prefix('$').is_some_and(|custom| {
        (1..=32).contains(&custom.len())
            && custom
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

/// `#RGB` or `#RRGGBB`, hex digits in either case: the sidebar's colour,
/// which Live Activity row layouts share.
pub fn is_color(text: &str) -> bool {
    text.strip_prefix('#').is_some_and(|hex| {
        (hex.len() == 3 || hex.len() == 6) && hex.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

fn optional_color(table: &DeTable<'_>, key: &str) -> Checked<Option<String>> {
    match lookup(table, key) {
        None => Ok(None),
        Some(DeValue::String(text)) if is_color(text) => Ok(Some(text.to_string())),
        Some(_) => Err(Reject::Schema),
    }
}

fn optional_bool(table: &DeTable<'_>, key: &str) -> Checked<Option<bool>> {
    match lookup(table, key) {
        None => Ok(None),
        Some(DeValue::Boolean(flag)) => Ok(Some(*flag)),
        Some(_) => Err(Reject::Schema),
    }
}

fn validate_token(value: &DeValue<'_>) -> Checked<Token> {
    let table = match value {
        DeValue::String(name) => {
            return if is_token_name(name) {
                Ok(Token::plain(name))
            } else {
                Err(Reject::Token)
            };
        }
        DeValue::Table(table) => table,
        _ => return Err(Reject::Schema),
    };
    if table
        .keys()
        .any(|key| !TOKEN_KEYS.contains(&key.get_ref().as_ref()))
    {
        return Err(Reject::Schema);
    }
    let name = match lookup(table, "token") {
        Some(DeValue::String(name)) if is_token_name(name) => name.to_string(),
        _ => return Err(Reject::Token),
    };
    let fg = optional_color(table, "fg")?;
    let bold = optional_bool(table, "bold")?;
    let dim = optional_bool(table, "dim")?;
    let rules = match lookup(table, "rules") {
        None => Vec::new(),
        Some(DeValue::Array(rules)) if rules.len() <= MAX_RULES => rules
            .iter()
            .map(|rule| validate_rule(rule.get_ref()))
            .collect::<Checked<Vec<Rule>>>()?,
        Some(_) => return Err(Reject::Schema),
    };
    // Rules match a token's text; state_icon has none.
    if name == "state_icon" && !rules.is_empty() {
        return Err(Reject::Schema);
    }
    Ok(Token {
        name,
        fg,
        bold,
        dim,
        rules,
    })
}

fn threshold(value: &DeValue<'_>) -> Checked<Threshold> {
    match value {
        DeValue::Integer(n) => i64::from_str_radix(n.as_str(), n.radix())
            .map(Threshold::Integer)
            .map_err(|_| Reject::Schema),
        DeValue::Float(f) => match parse_float(f.as_str()) {
            Some(f) if f.is_finite() => Ok(Threshold::Float(f)),
            _ => Err(Reject::Schema),
        },
        _ => Err(Reject::Schema),
    }
}

fn text(value: &DeValue<'_>) -> Checked<String> {
    match value {
        DeValue::String(text) => Ok(text.to_string()),
        _ => Err(Reject::Schema),
    }
}

fn validate_rule(value: &DeValue<'_>) -> Checked<Rule> {
    let DeValue::Table(table) = value else {
        return Err(Reject::Schema);
    };
    if table
        .keys()
        .any(|key| !RULE_KEYS.contains(&key.get_ref().as_ref()))
    {
        return Err(Reject::Schema);
    }
    let mut conditions = Vec::with_capacity(1);
    if let Some(v) = lookup(table, "equals") {
        conditions.push(Condition::Equals(text(v)?));
    }
    if let Some(v) = lookup(table, "contains") {
        conditions.push(Condition::Contains(text(v)?));
    }
    if let Some(v) = lookup(table, "starts_with") {
        conditions.push(Condition::StartsWith(text(v)?));
    }
    if let Some(v) = lookup(table, "gt") {
        conditions.push(Condition::Gt(threshold(v)?));
    }
    if let Some(v) = lookup(table, "lt") {
        conditions.push(Condition::Lt(threshold(v)?));
    }
    let condition = match <[Condition; 1]>::try_from(conditions) {
        Ok([condition]) => condition,
        Err(_) => return Err(Reject::Schema),
    };
    let ignore_case = optional_bool(table, "ignore_case")?;
    if ignore_case.is_some() && !condition.is_text() {
        return Err(Reject::Schema);
    }
    Ok(Rule {
        condition,
        ignore_case,
        fg: optional_color(table, "fg")?,
        bold: optional_bool(table, "bold")?,
        dim: optional_bool(table, "dim")?,
        hide: optional_bool(table, "hide")?,
    })
}

fn rule_to_value(rule: &Rule) -> Value {
    let mut out = Object::new();
    match &rule.condition {
        Condition::Equals(s) => out.insert("equals", Value::from(s.as_str())),
        Condition::Contains(s) => out.insert("contains", Value::from(s.as_str())),
        Condition::StartsWith(s) => out.insert("starts_with", Value::from(s.as_str())),
        Condition::Gt(t) => out.insert("gt", t.to_value()),
        Condition::Lt(t) => out.insert("lt", t.to_value()),
    }
    if let Some(flag) = rule.ignore_case {
        out.insert("ignore_case", Value::from(flag));
    }
    if let Some(fg) = &rule.fg {
        out.insert("fg", Value::from(fg.as_str()));
    }
    for (key, flag) in [("bold", rule.bold), ("dim", rule.dim), ("hide", rule.hide)] {
        if let Some(flag) = flag {
            out.insert(key, Value::from(flag));
        }
    }
    Value::Object(out)
}

fn token_to_value(token: &Token) -> Value {
    let mut out = Object::new().with("token", token.name.as_str());
    if let Some(fg) = &token.fg {
        out.insert("fg", Value::from(fg.as_str()));
    }
    for (key, flag) in [("bold", token.bold), ("dim", token.dim)] {
        if let Some(flag) = flag {
            out.insert(key, Value::from(flag));
        }
    }
    if !token.rules.is_empty() {
        out.insert(
            "rules",
            Value::Array(token.rules.iter().map(rule_to_value).collect()),
        );
    }
    Value::Object(out)
}

fn rows_to_value(rows: &Rows) -> Value {
    Value::Array(
        rows.iter()
            .map(|row| Value::Array(row.iter().map(token_to_value).collect()))
            .collect(),
    )
}

/// The full snapshot, keys in the contract's order.
pub fn snapshot(generated_at: i64, source: &Source, parsed: &Parsed) -> Value {
    let layout = &parsed.layout;
    let mut by_agent = Object::new();
    for (id, rows) in &layout.rows_by_agent {
        by_agent.insert(id.as_str(), rows_to_value(rows));
    }
    let agents = Object::new()
        .with("row_gap", u64::from(layout.row_gap))
        .with("rows", rows_to_value(&layout.rows))
        .with("rows_by_agent", by_agent);
    let source = Object::new()
        .with("path", source.path.as_str())
        .with("found", source.found)
        .with("mtime_ms", source.mtime_ms.map_or(Value::Null, Value::from));
    Value::Object(
        Object::new()
            .with("v", SNAPSHOT_VERSION)
            .with("generated_at", generated_at)
            .with("source", source)
            .with("agent_panel_sort", layout.agent_panel_sort.as_str())
            .with("sidebar", Object::new().with("agents", agents))
            .with(
                "diagnostics",
                Value::Array(
                    parsed
                        .diagnostics
                        .iter()
                        .map(|d| Value::from(d.as_str()))
                        .collect(),
                ),
            ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_is_not_utf8_is_a_parse_error() {
        let parsed = parse_config(b"[ui]\nagent_panel_sort = \"prio\xffrity\"\n");
        assert_eq!(parsed.diagnostics, [Diagnostic::ParseError]);
        assert_eq!(parsed.layout, Layout::default());
    }

    #[test]
    fn bom_is_removed_only_at_a_line_start_the_error_points_at() {
        let text = "a = 1\n\u{feff}b = 2\n";
        assert_eq!(line_start_bom_at(text, 6), Some(6));
        assert_eq!(line_start_bom_at(text, 9), Some(6));
        assert_eq!(line_start_bom_at(text, 10), None);
        assert_eq!(line_start_bom_at(text, 2), None);
        assert_eq!(line_start_bom_at("x = \u{feff}1", 4), None);
        assert_eq!(line_start_bom_at("\u{feff}x", 0), Some(0));
    }

    #[test]
    fn diagnostic_names_round_trip() {
        for diagnostic in Diagnostic::ALL {
            assert_eq!(Diagnostic::from_name(diagnostic.as_str()), Some(diagnostic));
        }
        assert_eq!(Diagnostic::from_name("write_error"), None);
    }

    #[test]
    fn token_names_follow_the_custom_grammar() {
        assert!(is_token_name("machine"));
        assert!(is_token_name("$a-b_C9"));
        assert!(!is_token_name("$"));
        assert!(!is_token_name(&format!("${}", "a".repeat(33))));
        assert!(!is_token_name("$pin\n"));
        assert!(!is_token_name("$é"));
        assert!(is_color("#aBc") && is_color("#A1b2C3"));
        assert!(!is_color("#abcd") && !is_color("abc") && !is_color("#fff\n"));
    }
}

//! Property test: random TOML-ish input never panics the sidebar parser and
//! always yields a valid snapshot (v 1, known diagnostics only, defaults
//! whenever there is a diagnostic, every exported token within the grammar).

use crate::fuzz_support;
use fuzz_support::Rng;

use heeler::base::json::{self, Value};
use heeler::sidebar::config::{self, AGENT_IDS, BUILTIN_TOKENS, Layout, Source};

/// Pieces that hit the grammar's corners, mixed with noise.
const FRAGMENTS: &[&str] = &[
    "[ui]\n",
    "[ui.sidebar]\n",
    "[ui.sidebar.agents]\n",
    "[ui.sidebar.agents.rows_by_agent]\n",
    "[[ui]]\n",
    "agent_panel_sort = ",
    "\"priority\"",
    "\"workspaces\"",
    "\"spaces\"",
    "row_gap = ",
    "rows = ",
    "rows_by_agent = ",
    "claude = ",
    "letta = ",
    "Claude = ",
    "ui = ",
    "sidebar = ",
    "agents = ",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    "{ token = ",
    "token = ",
    "\"agent\"",
    "\"machine\"",
    "\"state_icon\"",
    "\"$pin\"",
    "\"$\"",
    "\"bogus\"",
    "fg = ",
    "\"#abc\"",
    "\"#AbCdEf\"",
    "\"#ggg\"",
    "bold = ",
    "dim = ",
    "hide = ",
    "true",
    "false",
    "rules = ",
    "equals = ",
    "contains = ",
    "starts_with = ",
    "gt = ",
    "lt = ",
    "ignore_case = ",
    "80",
    "80.5",
    "-1",
    "65535",
    "65536",
    "0x10",
    "1e999",
    "99999999999999999999",
    "nan",
    "inf",
    "1979-05-27",
    "07:32:00",
    ", ",
    ",",
    " = ",
    "=",
    "\n",
    "\r\n",
    " ",
    "\t",
    "#",
    "# comment\n",
    "\"",
    "'",
    "'''",
    "\"\"\"",
    "\\",
    "\\u00e9",
    "\\e",
    "\u{feff}",
    "\u{feff}",
    "é",
    "😀",
    ".",
    "a.b",
    "x",
];

fn random_input(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let pieces = rng.below(40);
    for _ in 0..pieces {
        match rng.below(20) {
            0 => out.push(rng.next() as u8),
            1 => out.extend_from_slice(&rng.next().to_le_bytes()[..rng.below(8)]),
            _ => out.extend_from_slice(FRAGMENTS[rng.below(FRAGMENTS.len())].as_bytes()),
        }
    }
    out
}

/// A structured valid-looking layout, then mutated, to reach deep paths.
fn structured_input(rng: &mut Rng) -> Vec<u8> {
    let mut text = String::from(
        "[ui]\nagent_panel_sort = \"priority\"\n[ui.sidebar.agents]\nrow_gap = 2\nrows = [",
    );
    for _ in 0..rng.below(4) {
        text.push('[');
        for _ in 0..rng.below(4) {
            let token = BUILTIN_TOKENS[rng.below(BUILTIN_TOKENS.len())];
            match rng.below(3) {
                0 => text.push_str(&format!("\"{token}\", ")),
                1 => text.push_str(&format!("{{ token = \"{token}\", fg = \"#fff\" }}, ")),
                _ => text.push_str(&format!(
                    "{{ token = \"{token}\", rules = [{{ equals = \"x\", ignore_case = true }}, {{ gt = 1.5 }}] }}, "
                )),
            }
        }
        text.push_str("], ");
    }
    text.push_str("]\n[ui.sidebar.agents.rows_by_agent]\n");
    text.push_str(&format!(
        "{} = [[\"agent\"]]\n",
        AGENT_IDS[rng.below(AGENT_IDS.len())]
    ));
    let mut bytes = text.into_bytes();
    for _ in 0..rng.below(4) {
        if bytes.is_empty() {
            break;
        }
        let at = rng.below(bytes.len());
        match rng.below(3) {
            0 => {
                bytes.remove(at);
            }
            1 => {
                let fragment = FRAGMENTS[rng.below(FRAGMENTS.len())].as_bytes();
                bytes.splice(at..at, fragment.iter().copied());
            }
            _ => bytes[at] = rng.next() as u8,
        }
    }
    bytes
}

fn token_ok(token: &Value) -> bool {
    let Some(name) = token.get("token").and_then(Value::as_str) else {
        return false;
    };
    let custom = name.strip_prefix('$').is_some_and(|c| {
        (1..=32).contains(&c.len())
            && c.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    });
    let keys_ok = token
        .as_object()
        .unwrap()
        .iter()
        .all(|(k, _)| ["token", "fg", "bold", "dim", "rules"].contains(&k));
    let rules_ok = token.get("rules").is_none_or(|rules| {
        let rules = rules.as_array().unwrap();
        !rules.is_empty() && rules.len() <= 16 && name != "state_icon"
    });
    (BUILTIN_TOKENS.contains(&name) || custom) && keys_ok && rules_ok
}

fn rows_ok(rows: &Value) -> bool {
    let Some(rows) = rows.as_array() else {
        return false;
    };
    rows.len() <= 16
        && rows.iter().all(|row| {
            row.as_array()
                .is_some_and(|tokens| tokens.len() <= 16 && tokens.iter().all(token_ok))
        })
}

fn check(input: &[u8]) {
    let parsed = config::parse_config(input);
    let source = Source {
        path: "/p".to_owned(),
        found: true,
        mtime_ms: Some(1.5),
    };
    let snapshot = config::snapshot(1, &source, &parsed);
    let text = snapshot.to_json();
    let reparsed = json::parse(&text).expect("snapshot is JSON");
    assert_eq!(reparsed.get("v").and_then(Value::as_i64), Some(1));
    let diagnostics = reparsed.get("diagnostics").unwrap().as_array().unwrap();
    assert!(diagnostics.len() <= 1);
    for d in diagnostics {
        assert!(
            ["parse_error", "invalid_token", "invalid_schema"].contains(&d.as_str().unwrap()),
            "{d:?}"
        );
    }
    if !diagnostics.is_empty() {
        assert_eq!(parsed.layout, Layout::default(), "input {input:?}");
    }
    let sort = reparsed.get("agent_panel_sort").unwrap().as_str().unwrap();
    assert!(["spaces", "priority"].contains(&sort));
    let agents = reparsed.get("sidebar").unwrap().get("agents").unwrap();
    let gap = agents.get("row_gap").unwrap().as_i64().unwrap();
    assert!((0..=65535).contains(&gap));
    assert!(rows_ok(agents.get("rows").unwrap()), "input {input:?}");
    for (id, rows) in agents
        .get("rows_by_agent")
        .unwrap()
        .as_object()
        .unwrap()
        .iter()
    {
        assert!(AGENT_IDS.contains(&id));
        assert!(rows_ok(rows));
    }
}

#[test]
fn random_toml_never_panics_and_yields_valid_snapshots() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut clean, mut diagnosed) = (0usize, 0usize);
    let total = 12_000;
    for i in 0..total {
        let input = if i % 2 == 0 {
            random_input(&mut rng)
        } else {
            structured_input(&mut rng)
        };
        check(&input);
        if config::parse_config(&input).diagnostics.is_empty() {
            clean += 1;
        } else {
            diagnosed += 1;
        }
    }
    println!("fuzz: {total} inputs, {clean} clean, {diagnosed} with a diagnostic");
    assert!(clean > 0 && diagnosed > 0, "both outcomes reached");
}

//! Telling TOML 1.0 from the TOML 1.1 additions, after a successful parse.
//!
//! Why: herdr 0.9.4 reads its config as TOML 1.0 and rejects the whole file
//! when it uses 1.1-only syntax, while the `toml` crate (1.2, "spec-1.1.0")
//! accepts it. Exporting a layout herdr itself ignores would show the app a
//! sidebar the user never sees, so such a file is a `parse_error` here too.
//! TOML 1.1 added exactly four things, all detected:
//!
//! - a newline (or a comment) directly inside an inline table;
//! - a trailing comma in an inline table;
//! - the `\e` and `\xHH` escapes in basic strings and quoted keys;
//! - times and date-times without seconds.
//!
//! The scan runs only on text the TOML 1.1 parser accepted, so it needs to
//! follow strings, comments and brackets, not to validate anything.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// Whether a document that parsed as TOML 1.1 uses syntax TOML 1.0 lacks.
pub fn uses_toml_1_1(text: &str, document: &DeTable<'_>) -> bool {
    has_time_without_seconds(document) || scan_text(text)
}

fn has_time_without_seconds(document: &DeTable<'_>) -> bool {
    let mut pending: Vec<&DeValue<'_>> = document.values().map(Spanned::get_ref).collect();
    while let Some(value) = pending.pop() {
        match value {
            DeValue::Datetime(datetime)
                if datetime.time.is_some_and(|time| time.second.is_none()) =>
            {
                return true;
            }
            DeValue::Array(items) => pending.extend(items.iter().map(Spanned::get_ref)),
            DeValue::Table(table) => pending.extend(table.values().map(Spanned::get_ref)),
            _ => {}
        }
    }
    false
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Bracket {
    InlineTable,
    Array,
}

/// The length of the run of `quote` bytes starting at `at`.
fn run_of(bytes: &[u8], at: usize, quote: u8) -> usize {
    bytes[at..].iter().take_while(|&&b| b == quote).count()
}

/// Scans the escapes of a basic string starting after its opening quote(s);
/// returns where the string ends (after its closing quotes) and whether it
/// used a 1.1-only escape.
fn basic_string(bytes: &[u8], mut at: usize, multi_line: bool) -> (usize, bool) {
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => {
                if matches!(bytes.get(at + 1), Some(b'e' | b'x')) {
                    return (at, true);
                }
                at += 2;
            }
            b'"' if multi_line => {
                let run = run_of(bytes, at, b'"');
                at += run;
                if run >= 3 {
                    return (at, false);
                }
            }
            b'"' => return (at + 1, false),
            _ => at += 1,
        }
    }
    (at, false)
}

/// Skips a literal string starting after its opening quote(s).
fn literal_string(bytes: &[u8], mut at: usize, multi_line: bool) -> usize {
    while at < bytes.len() {
        if bytes[at] == b'\'' {
            if !multi_line {
                return at + 1;
            }
            let run = run_of(bytes, at, b'\'');
            at += run;
            if run >= 3 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    at
}

fn scan_text(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut open: Vec<Bracket> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let in_inline_table = open.last() == Some(&Bracket::InlineTable);
        match bytes[at] {
            b'#' => {
                if in_inline_table {
                    return true;
                }
                at = bytes[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |newline| at + newline);
                continue;
            }
            b'"' => {
                let multi_line = run_of(bytes, at, b'"') >= 3;
                let start = at + if multi_line { 3 } else { 1 };
                let (end, escape_1_1) = basic_string(bytes, start, multi_line);
                if escape_1_1 {
                    return true;
                }
                at = end;
                continue;
            }
            b'\'' => {
                let multi_line = run_of(bytes, at, b'\'') >= 3;
                let start = at + if multi_line { 3 } else { 1 };
                at = literal_string(bytes, start, multi_line);
                continue;
            }
            b'{' => open.push(Bracket::InlineTable),
            b'[' => open.push(Bracket::Array),
            b'}' | b']' => {
                open.pop();
            }
            b'\n' if in_inline_table => return true,
            b',' if in_inline_table => {
                let next = bytes[at + 1..].iter().find(|&&b| b != b' ' && b != b'\t');
                if next == Some(&b'}') {
                    return true;
                }
            }
            _ => {}
        }
        at += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(text: &str) -> bool {
        let document = DeTable::parse(text).expect("valid TOML 1.1");
        uses_toml_1_1(text, document.get_ref())
    }

    #[test]
    fn toml_1_1_additions_are_detected() {
        for text in [
            "x = {a=1,}\n",
            "x = { a = 1 , }\n",
            "x = {a=1,\nb=2}\n",
            "x = {\n}\n",
            "x = {a=1 # c\n}\n",
            "x = \"\\e\"\n",
            "x = \"\\x41\"\n",
            "x = \"\"\"a\n\\x41\"\"\"\n",
            "\"k\\e\" = 1\n",
            "x = 1979-05-27T07:32\n",
            "x = 07:32\n",
            "x = [{a = 1,}]\n",
            "x = [[{b = {c = 1,\n}}]]\n",
        ] {
            assert!(verdict(text), "{text:?}");
        }
    }

    #[test]
    fn toml_1_0_documents_pass() {
        for text in [
            "",
            "x = {a=1, b=2}\n",
            "x = {a=[1,\n2]}\n",
            "x = {a=\"\"\"x\ny\"\"\"}\n",
            "x = [1,\n2,\n]\n",
            "x = \"\\\\e \\\\x41 \\\" \\u0041 \\U00000041\"\n",
            "x = 'C:\\x\\e'\n",
            "x = '''\n\\e\n'''\n",
            "x = \"\"\"a\"\"\"\"\"\n",
            "# {a=1,\n[t]\nx = 1979-05-27T07:32:00Z\ny = 07:32:00\nz = 1979-05-27\n",
            "[[a.b]]\nx = { y = [ { z = 1 } ] }\n",
            "\"k{,}\" = \"{a=1,}\"\n",
            "x = \"\"\"\\\n  continued\"\"\"\n",
        ] {
            assert!(!verdict(text), "{text:?}");
        }
    }
}

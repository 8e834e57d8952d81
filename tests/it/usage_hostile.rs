//! Hostile strings from a transcript in every view for people: a model
//! name, a directory (a repository can be cloned into such a path) and a
//! session id carrying an OSC 52 clipboard write, an OSC 0 title, CSI
//! sequences, 8-bit C1 controls, DEL and bidi overrides. The real binary
//! over a scratch home: every text and CSV view, the statusline and the
//! warnings under the tables hold none of those characters (each shows as
//! U+FFFD), and the JSON documents keep the exact strings, escaped.
//! The live screen's share is in usage_live_screen.rs.

use crate::usage_fixture::{Claude, temp_dir, write};

use std::path::Path;
use std::process::Command;

use heeler::base::json::{self, Value};

const HEELER: &str = env!("CARGO_BIN_EXE_heeler");

/// The controls, as JSON escapes (the parsed strings hold them raw).
const EVIL_JSON: &str =
    r"\u001b]52;c;cHduZWQ=\u0007\u001b]0;pwned\u0007\u001b[2J\u009b31m\u0085\u007f\u202e\u2066evil";
/// The same, as the parsed string.
const EVIL: &str = "\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{85}\u{7f}\u{202e}\u{2066}evil";

/// Whether `text` holds a character no view may print, by code point
/// (the Unicode categories, not heeler's list): C0 but newline, DEL, C1,
/// and the bidi embeddings, overrides and isolates.
fn active(text: &str) -> Option<char> {
    text.chars().find(|&c| {
        let n = c as u32;
        (n < 0x20 && c != '\n')
            || (0x7f..=0x9f).contains(&n)
            || (0x202a..=0x202e).contains(&n)
            || (0x2066..=0x2069).contains(&n)
    })
}

fn run(home: &Path, args: &[&str]) -> String {
    let output = Command::new(HEELER)
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("TZ", "UTC")
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap();
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn every_view_prints_hostile_transcript_strings_inert_and_json_keeps_them() {
    let scratch = temp_dir("usage-hostile");
    let home = scratch.join("home");
    let now = heeler::base::clock::unix_seconds();
    let model = format!("claude-opus-4-6{EVIL_JSON}");
    let cwd = format!("/home/dev/{EVIL_JSON}");
    let mut text = String::new();
    for (n, at) in [now - 1800, now - 1200, now - 600].into_iter().enumerate() {
        let (msg, req) = (format!("m{n}"), format!("r{n}"));
        // One priced request and two of the hostile model (no price: the
        // warning under each table names it).
        let model = if n == 0 { "claude-opus-4-6" } else { &model };
        let line = Claude {
            at,
            msg: &msg,
            req: &req,
            model,
            cwd: &cwd,
            input: 1000,
            output: 100,
            ..Claude::default()
        }
        .line()
        .replace(
            r#""sessionId":"s""#,
            &format!(r#""sessionId":"s{EVIL_JSON}""#),
        );
        text.push_str(&line);
        text.push('\n');
    }
    write(&home.join(".claude/projects/-home-dev-evil/s.jsonl"), &text);
    run(&home, &["usage", "worker"]);

    let views: &[&[&str]] = &[
        &["usage"],
        &["usage", "daily"],
        &["usage", "daily", "--breakdown"],
        &["usage", "weekly"],
        &["usage", "monthly"],
        &["usage", "session"],
        &["usage", "blocks"],
        &["usage", "models"],
        &["usage", "dirs"],
        &["usage", "statusline"],
        &["usage", "daily", "--csv"],
        &["usage", "session", "--csv"],
        &["usage", "models", "--csv"],
        &["usage", "dirs", "--csv"],
    ];
    let mut shown = 0;
    for args in views {
        // CSV ends its records in CRLF (RFC 4180): that CR is the format's.
        let out = run(&home, args).replace("\r\n", "\n");
        assert_eq!(active(&out), None, "{args:?}:\n{out}");
        if out.contains("\u{fffd}]52;c;cHduZWQ=") {
            shown += 1;
        }
    }
    // The tables, breakdowns, warnings and CSV that name the model, the
    // directory or the session show the replacement (9 of the 14).
    assert!(shown >= 9, "only {shown} views showed the inert string");

    // JSON keeps the exact strings for scripts (escaped by the encoder).
    for (args, key) in [
        (&["usage", "models", "--json"][..], "model"),
        (&["usage", "dirs", "--json"][..], "directory"),
    ] {
        let out = run(&home, args);
        assert_eq!(active(&out), None, "{args:?}:\n{out}");
        let doc = json::parse(&out).unwrap();
        let rows = doc.get("rows").and_then(Value::as_array).unwrap();
        let found = rows.iter().any(|r| {
            r.get(key)
                .and_then(Value::as_str)
                .is_some_and(|v| v.ends_with(EVIL))
        });
        assert!(found, "{args:?}: {out}");
    }
}

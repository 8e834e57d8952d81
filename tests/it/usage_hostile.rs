//! Hostile strings from a transcript in every view for people: a model
//! name, a directory (a repository can be cloned into such a path) and a
//! session id carrying an OSC 52 clipboard write, an OSC 0 title, CSI
//! sequences, 8-bit C1 controls, DEL and bidi overrides. The real binary
//! over a scratch home: every text and CSV view, the statusline and the
//! warnings under the tables hold none of those characters (each shows as
//! U+FFFD), and the JSON documents keep the exact strings, escaped.
//! The live screen's share is in usage_live_screen.rs. Hostile SQLite
//! files where opencode's and Kilo's databases go (garbage, a truncated
//! database, one its writer holds locked) are refused or left for later,
//! within the reader's bounds and without a panic.

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

/// An opencode-shaped database at `path` with `n` assistant messages of
/// 10 input tokens each, in `mode` (`WAL` or `DELETE`); the writer's
/// connection is returned open.
fn opencode_db(path: &Path, n: usize, mode: &str) -> rusqlite::Connection {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = {mode};
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
             time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);"
    ))
    .unwrap();
    let at = heeler::base::clock::unix_seconds() * 1000 - 3_600_000;
    conn.execute_batch("BEGIN").unwrap();
    for i in 0..n {
        let data = format!(
            r#"{{"role":"assistant","modelID":"gpt-5","providerID":"openai","path":{{"cwd":"/p"}},"time":{{"created":{}}},"tokens":{{"input":10,"output":1,"reasoning":0,"cache":{{"read":0,"write":0}}}},"cost":0}}"#,
            at + i as i64
        );
        conn.execute(
            "INSERT INTO message VALUES (?1, 's', 0, 0, ?2)",
            rusqlite::params![format!("msg_{i}"), data],
        )
        .unwrap();
    }
    conn.execute_batch("COMMIT").unwrap();
    conn
}

fn coverage_of(home: &Path, agent: &str) -> (i64, i64) {
    let doc = json::parse(run(home, &["usage", "--json"]).trim_end()).unwrap();
    let c = doc.get("coverage").and_then(|c| c.get(agent)).cloned();
    let n = |k: &str| {
        c.as_ref()
            .and_then(|c| c.get(k))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    (n("files_seen"), n("files_unreadable"))
}

fn requests_of(home: &Path, agent: &str) -> i64 {
    let doc = json::parse(run(home, &["usage", "models", "--agent", agent, "--json"]).trim_end())
        .unwrap();
    doc.get("totals")
        .and_then(|t| t.get("requests"))
        .and_then(Value::as_i64)
        .unwrap()
}

#[test]
fn garbage_and_truncated_databases_are_refused_quickly_and_named_unreadable() {
    let home = temp_dir("hostile-sqlite");
    let opencode = home.join(".local/share/opencode/opencode.db");
    std::fs::create_dir_all(opencode.parent().unwrap()).unwrap();
    // Garbage, and an SQLite header over garbage.
    std::fs::write(&opencode, vec![0xa5; 200_000]).unwrap();
    let mut header = b"SQLite format 3\0".to_vec();
    header.resize(100_000, 0xff);
    std::fs::write(home.join(".local/share/opencode/opencode-dev.db"), header).unwrap();
    // A real database, checkpointed, then cut in half.
    let kilo = home.join(".local/share/kilo/kilo.db");
    drop(opencode_db(&kilo, 3_000, "DELETE"));
    let bytes = std::fs::read(&kilo).unwrap();
    std::fs::write(&kilo, &bytes[..bytes.len() / 2]).unwrap();
    let start = std::time::Instant::now();
    run(&home, &["usage", "worker"]);
    assert_eq!(coverage_of(&home, "opencode"), (2, 2));
    assert_eq!(coverage_of(&home, "kilo"), (1, 1));
    assert_eq!(requests_of(&home, "opencode"), 0);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_database_its_writer_holds_locked_is_left_for_a_later_refresh() {
    let home = temp_dir("hostile-sqlite-lock");
    let path = home.join(".local/share/opencode/opencode.db");
    let writer = opencode_db(&path, 2, "DELETE");
    writer.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let start = std::time::Instant::now();
    run(&home, &["usage", "worker"]);
    // The read waited 100 ms and gave up: nothing counted, nothing
    // marked unreadable, the worker did not wait on the writer.
    assert!(
        start.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(requests_of(&home, "opencode"), 0);
    writer.execute_batch("COMMIT").unwrap();
    run(&home, &["usage", "worker"]);
    assert_eq!(requests_of(&home, "opencode"), 2);
    assert_eq!(coverage_of(&home, "opencode"), (1, 0));

    // In WAL mode a writer mid-transaction holds no reader up: the
    // committed rows are read while it writes more.
    let wal = home.join(".local/share/kilo/kilo.db");
    let writer = opencode_db(&wal, 3, "WAL");
    writer
        .execute_batch("BEGIN IMMEDIATE; DELETE FROM message")
        .unwrap();
    run(&home, &["usage", "worker"]);
    assert_eq!(requests_of(&home, "kilo"), 3);
    writer.execute_batch("ROLLBACK").unwrap();
}

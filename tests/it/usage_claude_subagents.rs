//! Claude Code subagent usage, counted exactly once: a subagent's assistant
//! messages are in its own file (`<session>/subagents/agent-*.jsonl`, which
//! may be missing) and, nested, in the `progress` lines of the session that
//! ran it. Each shape's true totals are written down by hand (the sum of
//! the distinct messages), never taken from a run.

use crate::usage_fixture;

use std::path::Path;

use heeler::base::json::Value;
use heeler::base::tz::Zone;
use heeler::usage::cache::Index;
use heeler::usage::pricing::PriceTable;
use heeler::usage::report::{self, Envelope};
use heeler::usage::worker::{self, Roots};
use usage_fixture::{Claude, HOUR, NOW, lines, ts, user_line, write};

const MAIN: &str = ".claude/projects/-home-dev-alpha/s1.jsonl";
const SUBAGENT: &str = ".claude/projects/-home-dev-alpha/s1/subagents/agent-a7.jsonl";

/// The session's own message.
fn main_message() -> Claude<'static> {
    Claude {
        at: NOW - 3 * HOUR,
        msg: "msg_main",
        req: "req_main",
        read: 1000,
        ..Claude::default()
    }
}

/// The subagent's two messages, as its own file records them: the first
/// in two content blocks that repeat its usage.
fn subagent_messages() -> Vec<Claude<'static>> {
    let first = Claude {
        at: NOW - 3 * HOUR + 60,
        msg: "msg_sub1",
        req: "req_sub1",
        model: "claude-haiku-4-5",
        sidechain: true,
        input: 20,
        read: 300,
        output: 40,
        ..Claude::default()
    };
    let second = Claude {
        at: NOW - 3 * HOUR + 120,
        msg: "msg_sub2",
        req: "req_sub2",
        model: "claude-haiku-4-5",
        sidechain: true,
        input: 5,
        read: 600,
        write: 100,
        output: 80,
        ..Claude::default()
    };
    vec![
        Claude {
            at: first.at,
            ..first
        },
        first,
        second,
    ]
}

/// A `progress` line as Claude Code writes it while a subagent runs: the
/// subagent's record nested as `data.message`, without the members the
/// session line already has (its directory among them).
fn progress(record: &Claude) -> String {
    let nested = record
        .line()
        .replacen(r#""cwd":"/home/dev/alpha","#, "", 1)
        .replacen(r#""userType":"external","#, "", 1);
    format!(
        r#"{{"parentUuid":"u-msg_main","isSidechain":false,"userType":"external","cwd":"/home/dev/alpha","sessionId":"s1","version":"2.1.300","gitBranch":"main","type":"progress","data":{{"message":{nested},"normalizedMessages":[],"type":"agent_progress","prompt":"find the usage","agentId":"a7"}},"toolUseID":"agent_msg_1","parentToolUseID":"toolu_1","uuid":"p-{}","timestamp":"{}"}}"#,
        record.msg,
        ts(record.at + 1)
    )
}

/// The session's file: a prompt, its own message, the Task tool running
/// the subagent (with progress lines when `with_progress`).
fn main_file(with_progress: bool) -> String {
    let mut body = vec![user_line(NOW - 3 * HOUR - 10), main_message().line()];
    if with_progress {
        body.extend(subagent_messages().iter().map(progress));
    }
    lines(&body)
}

fn subagent_file() -> String {
    lines(
        &subagent_messages()
            .iter()
            .map(Claude::line)
            .collect::<Vec<_>>(),
    )
}

/// Claude totals of the 30-day window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Truth {
    requests: i64,
    input: i64,
    cache_read: i64,
    cache_write_5m: i64,
    output: i64,
}

/// The session's message and the subagent's two, each once:
/// input 10 + 20 + 5, cache reads 1000 + 300 + 600, writes 100, output
/// 10 + 40 + 80.
const TRUTH: Truth = Truth {
    requests: 3,
    input: 35,
    cache_read: 1900,
    cache_write_5m: 100,
    output: 130,
};

/// A fake `$HOME`, removed on drop (also when a test panics).
struct Home(usage_fixture::TempDir);

impl Home {
    fn new(name: &str, files: &[(&str, String)]) -> Home {
        let home = Home(usage_fixture::temp_dir(name));
        for (path, text) in files {
            write(&home.0.join(path), text);
        }
        home
    }
}

/// The Claude totals object of the query's answer for the tree under `home`.
fn claude_d30(home: &Path) -> Value {
    let roots = Roots::resolve(home, &|_| None);
    let prices = PriceTable::bundled().unwrap();
    let result = worker::scan(&mut Index::default(), &roots, &prices, NOW, None);
    let envelope = Envelope {
        now: NOW,
        refresh: Value::Null,
        runtime: Value::Null,
        pricing: prices.meta,
        limits: Value::Null,
        errors: Vec::new(),
    };
    let answer = report::render(Some(&result.snapshot), &Zone::utc(), &envelope);
    ["windows", "d30", "claude"]
        .iter()
        .fold(&answer, |v, k| v.get(k).unwrap_or(&Value::Null))
        .clone()
}

fn truth_of(d30: &Value) -> Truth {
    let n = |k: &str| d30.get(k).and_then(Value::as_i64).unwrap_or(-1);
    Truth {
        requests: n("requests"),
        input: n("input"),
        cache_read: n("cache_read"),
        cache_write_5m: n("cache_write_5m"),
        output: n("output"),
    }
}

#[test]
fn subagent_usage_counts_once_with_or_without_its_own_file() {
    let shapes = [
        (
            "progress lines, subagent file missing",
            vec![(MAIN, main_file(true))],
        ),
        (
            "progress lines and the subagent file",
            vec![(MAIN, main_file(true)), (SUBAGENT, subagent_file())],
        ),
        (
            "the subagent file alone (no progress lines)",
            vec![(MAIN, main_file(false)), (SUBAGENT, subagent_file())],
        ),
    ];
    let mut answers = Vec::new();
    for (i, (name, files)) in shapes.iter().enumerate() {
        let home = Home::new(&format!("usage-claude-subagents-{i}"), files);
        let d30 = claude_d30(&home.0);
        assert_eq!(truth_of(&d30), TRUTH, "{name}: {d30:?}");
        answers.push(d30);
    }
    // Whichever copy is read, the answer is the same, cost included.
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[1], answers[2]);
}

#[test]
fn a_session_without_subagents_is_unchanged() {
    let home = Home::new("usage-claude-no-subagents", &[(MAIN, main_file(false))]);
    assert_eq!(
        truth_of(&claude_d30(&home.0)),
        Truth {
            requests: 1,
            input: 10,
            cache_read: 1000,
            cache_write_5m: 0,
            output: 10,
        }
    );
}

/// `text` without its `requestId` members, as Claude Code writes a
/// session behind a gateway.
fn without_request_ids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(r#","requestId":""#) {
        out.push_str(&rest[..at]);
        let value = &rest[at + r#","requestId":""#.len()..];
        rest = &value[value.find('"').unwrap() + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn subagent_usage_without_request_ids_counts_once() {
    // Every record keyed by its message id alone: the content blocks, the
    // progress copies and the subagent file's copies still count once.
    let shapes = [
        vec![(MAIN, main_file(true))],
        vec![(MAIN, main_file(true)), (SUBAGENT, subagent_file())],
        vec![(MAIN, main_file(false)), (SUBAGENT, subagent_file())],
    ];
    for (i, files) in shapes.iter().enumerate() {
        let files: Vec<(&str, String)> = files
            .iter()
            .map(|(path, text)| (*path, without_request_ids(text)))
            .collect();
        assert!(files.iter().all(|(_, t)| !t.contains("requestId")));
        let home = Home::new(&format!("usage-claude-subagents-no-req-{i}"), &files);
        let d30 = claude_d30(&home.0);
        assert_eq!(truth_of(&d30), TRUTH, "shape {i}: {d30:?}");
    }
}

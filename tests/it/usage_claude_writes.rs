//! Claude Code's transcripts as real users' files have them and the other
//! fixtures did not: responses without a `requestId` (behind gateways and
//! on some subagent paths), a session whose last line has no newline, a
//! project directory that is a symbolic link. Each case's totals are worked
//! out by hand in the test (the distinct messages, summed), never taken
//! from a run.

use crate::usage_fixture;

use std::fs;
use std::io::Write;
use std::path::Path;

use heeler::base::json::Value;
use heeler::base::tz::Zone;
use heeler::usage::cache::Index;
use heeler::usage::pricing::PriceTable;
use heeler::usage::report::{self, Envelope};
use heeler::usage::worker::{self, Roots};
use usage_fixture::{Claude, HOUR, NOW, temp_dir, user_line, write};

const FILE: &str = ".claude/projects/-home-dev-alpha/s1.jsonl";

/// (requests, input, output) of the 30-day Claude window after a refresh
/// of `index` (empty: a cold scan; else the cache's incremental path).
fn totals(index: &mut Index, home: &Path) -> (i64, i64, i64) {
    let roots = Roots::resolve(home, &|_| None);
    let prices = PriceTable::bundled().unwrap();
    let result = worker::scan(index, &roots, &prices, NOW, None);
    let envelope = Envelope {
        now: NOW,
        refresh: Value::Null,
        runtime: Value::Null,
        pricing: prices.meta,
        limits: Value::Null,
        errors: Vec::new(),
    };
    let answer = report::render(Some(&result.snapshot), &Zone::utc(), &envelope);
    let d30 = ["windows", "d30", "claude"]
        .iter()
        .fold(&answer, |v, k| v.get(k).unwrap_or(&Value::Null));
    let n = |k: &str| d30.get(k).and_then(Value::as_i64).unwrap_or(-1);
    (n("requests"), n("input"), n("output"))
}

fn cold(home: &Path) -> (i64, i64, i64) {
    totals(&mut Index::default(), home)
}

/// A record of message `msg` (request `req`, "" for none) with `output`.
fn record(at: i64, msg: &str, req: &str, output: u64) -> String {
    Claude {
        at,
        msg,
        req,
        input: 10,
        output,
        ..Claude::default()
    }
    .line()
}

fn append(path: &Path, text: &str) {
    let mut f = fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn a_response_without_a_request_id_counts_once_in_every_path() {
    let at = NOW - 2 * HOUR;
    // The case: two content blocks of one response, no request
    // id, output 10 then 1,000 → one request, output 1,000 (input 10).
    let home = temp_dir("usage-claude-no-request-id");
    let blocks = [
        record(at, "msg_x", "", 10),
        record(at + 1, "msg_x", "", 1000),
    ];
    write(&home.join(FILE), &(blocks.join("\n") + "\n"));
    assert_eq!(cold(&home), (1, 10, 1000), "content blocks");

    // The same message with a request id is another key (ccusage's
    // `${message.id}:${requestId}`): one request more, output 7.
    append(
        &home.join(FILE),
        &(record(at + 2, "msg_x", "req_x", 7) + "\n"),
    );
    assert_eq!(cold(&home), (2, 20, 1007), "with and without a request id");

    // A resumed session's file repeats the record: still once.
    let resumed = ".claude/projects/-home-dev-alpha/s2.jsonl";
    write(&home.join(resumed), &(blocks[1].clone() + "\n"));
    assert_eq!(cold(&home), (2, 20, 1007), "across files");

    // Incremental: the first block cached alone (output 10), then the
    // final one appended (output 1,000): one request, the final block's.
    let home = temp_dir("usage-claude-no-request-id-append");
    write(&home.join(FILE), &(blocks[0].clone() + "\n"));
    let mut index = Index::default();
    assert_eq!(totals(&mut index, &home), (1, 10, 10), "first block");
    append(&home.join(FILE), &(blocks[1].clone() + "\n"));
    assert_eq!(totals(&mut index, &home), (1, 10, 1000), "appended block");
    // And a different message without a request id is a request of its
    // own: input 10 + 10, output 1,000 + 5.
    append(&home.join(FILE), &(record(at + 9, "msg_y", "", 5) + "\n"));
    assert_eq!(totals(&mut index, &home), (2, 20, 1005), "another message");
    assert_eq!(cold(&home), (2, 20, 1005), "the same from scratch");
}

#[test]
fn a_last_line_without_its_newline_counts_once() {
    let at = NOW - 2 * HOUR;
    let home = temp_dir("usage-claude-no-newline");
    let path = home.join(FILE);
    let (a, b, c) = (
        record(at, "msg_a", "req_a", 100),
        record(at + 1, "msg_b", "req_b", 20),
        record(at + 2, "msg_c", "req_c", 3),
    );
    // A session that ended without its newline: both lines count
    // (outputs 100 + 20), from scratch and through the cache.
    write(&path, &format!("{}\n{a}\n{b}", user_line(at - 5)));
    assert_eq!(cold(&home), (2, 20, 120), "cold");
    let mut index = Index::default();
    assert_eq!(totals(&mut index, &home), (2, 20, 120), "cached");
    // Its newline arrives later: still once.
    append(&path, "\n");
    assert_eq!(totals(&mut index, &home), (2, 20, 120), "newline later");
    // A torn line waits for its end (half of it is no object), then counts.
    append(&path, &c[..c.len() / 2]);
    assert_eq!(totals(&mut index, &home), (2, 20, 120), "torn");
    append(&path, &c[c.len() / 2..]);
    assert_eq!(totals(&mut index, &home), (3, 30, 123), "completed");
    assert_eq!(cold(&home), (3, 30, 123), "completed, from scratch");
    // A whole object whose line then goes on is not that object: the line
    // `{c}{d}` is malformed (as `JSON.parse` says), so c stops counting,
    // exactly as a scan from scratch finds.
    let d = record(at + 3, "msg_d", "req_d", 4000);
    append(&path, &format!("{d}\n"));
    assert_eq!(totals(&mut index, &home), (2, 20, 120), "continued");
    assert_eq!(cold(&home), (2, 20, 120), "continued, from scratch");
}

#[test]
fn a_linked_project_directory_counts_once() {
    let at = NOW - 2 * HOUR;
    let home = temp_dir("usage-claude-linked");
    // `~/.claude/projects/<p>` moved to another disk and linked back,
    // linked twice, with a link back to `projects` inside it (a loop), and
    // a transcript linked from elsewhere.
    let disk = home.join("disk/-home-dev-alpha");
    write(
        &disk.join("s1.jsonl"),
        &format!("{}\n", record(at, "msg_a", "req_a", 100)),
    );
    write(
        &home.join("disk/lone.jsonl"),
        &format!("{}\n", record(at, "msg_b", "req_b", 20)),
    );
    let projects = home.join(".claude/projects");
    fs::create_dir_all(projects.join("-home-dev-beta")).unwrap();
    std::os::unix::fs::symlink(&disk, projects.join("-home-dev-alpha")).unwrap();
    std::os::unix::fs::symlink(&disk, projects.join("-home-dev-alpha-again")).unwrap();
    std::os::unix::fs::symlink(&projects, disk.join("loop")).unwrap();
    std::os::unix::fs::symlink(
        home.join("disk/lone.jsonl"),
        projects.join("-home-dev-beta/lone.jsonl"),
    )
    .unwrap();
    // msg_a (output 100) once though reached by two links, msg_b (20).
    assert_eq!(cold(&home), (2, 20, 120));
    let roots = Roots::resolve(&home, &|_| None);
    assert_eq!(worker::discover(&roots).candidates.len(), 2);
}

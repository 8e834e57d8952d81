//! Codex accounting on every rollout shape of the corrected counting rules
//! (`../shared/reference/codex-accounting.md`): a generator writes each
//! shape, and each shape's true totals are written down by hand from the
//! rules (the sum of the genuinely new responses), never taken from a run.

use crate::usage_fixture;

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use heeler::base::json::Value;
use heeler::base::tz::Zone;
use heeler::usage::cache::Index;
use heeler::usage::pricing::PriceTable;
use heeler::usage::report::{self, Envelope};
use heeler::usage::worker::{self, Roots};
use usage_fixture::{DAY, HOUR, NOW, lines, session_meta, ts, turn_context, write, zstd};

/// A usage object: (`[input, cached, output, reasoning]`, `total_tokens`).
type Usage = ([u64; 4], u64);

/// A response's usage with `total_tokens` = input + output.
fn u(input: u64, cached: u64, output: u64) -> Usage {
    ([input, cached, output, 0], input + output)
}

fn usage_json((c, total): Usage) -> String {
    format!(
        r#"{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":{},"total_tokens":{total}}}"#,
        c[0], c[1], c[2], c[3]
    )
}

/// A `token_count` event; either usage may be absent (older builds wrote
/// only the totals).
fn count(at: i64, total: Option<Usage>, last: Option<Usage>) -> String {
    let mut info = Vec::new();
    if let Some(t) = total {
        info.push(format!(r#""total_token_usage":{}"#, usage_json(t)));
    }
    if let Some(l) = last {
        info.push(format!(r#""last_token_usage":{}"#, usage_json(l)));
    }
    info.push(r#""model_context_window":258400"#.to_string());
    format!(
        r#"{{"timestamp":"{}","type":"event_msg","payload":{{"type":"token_count","info":{{{}}},"rate_limits":null}}}}"#,
        ts(at),
        info.join(",")
    )
}

/// A normal response: the totals after it and its own usage.
fn response(at: i64, total: Usage, last: Usage) -> String {
    count(at, Some(total), Some(last))
}

/// What a query must report for the Codex totals of the 30-day window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Truth {
    requests: i64,
    /// Input including cached input (Codex's `input_tokens`).
    input: i64,
    cached: i64,
    output: i64,
    forks_unresolved: i64,
}

impl Truth {
    fn add(self, o: Truth) -> Truth {
        Truth {
            requests: self.requests + o.requests,
            input: self.input + o.input,
            cached: self.cached + o.cached,
            output: self.output + o.output,
            forks_unresolved: self.forks_unresolved + o.forks_unresolved,
        }
    }
}

/// One file of a shape: path under `$HOME`, bytes, and an mtime when not now.
struct File {
    path: String,
    bytes: Vec<u8>,
    mtime: Option<i64>,
}

fn rollout(name: &str, body: &[String]) -> File {
    File {
        path: format!(".codex/sessions/2026/11/29/rollout-2026-11-29T08-00-00-{name}.jsonl"),
        bytes: lines(body).into_bytes(),
        mtime: None,
    }
}

struct Shape {
    name: &'static str,
    files: Vec<File>,
    truth: Truth,
}

const MODEL: &str = "gpt-5.5";

fn meta(at: i64, id: &str, extra: &str) -> [String; 2] {
    [
        session_meta(at, id, extra),
        turn_context(at, MODEL, "/home/dev/alpha"),
    ]
}

/// A parent of two turns: 1000/0/100 on line 2 and 2000/0/200 on line 3,
/// so its history up to the first turn ends before ordinal 3.
fn two_turns(base: i64, id: &str) -> File {
    let [m, c] = meta(base, id, "");
    rollout(
        id,
        &[
            m,
            c,
            response(base + 10, u(1000, 0, 100), u(1000, 0, 100)),
            response(base + 60, u(3000, 0, 300), u(2000, 0, 200)),
        ],
    )
}

/// The two turns of [`two_turns`].
const TWO_TURNS: Truth = Truth {
    requests: 2,
    input: 3000,
    cached: 0,
    output: 300,
    forks_unresolved: 0,
};

fn by_reference(parent: &str, end: u64) -> String {
    format!(
        r#","forked_from_id":"{parent}","forked_from_ordinal_exclusive":{end},"history_base":{{"thread_id":"{parent}","end_ordinal_exclusive":{end},"end_byte_offset":1200}}"#
    )
}

/// Every shape of `codex-accounting.md`, each at its own time (so no two
/// shapes share a dedupe key when written into one tree).
fn shapes() -> Vec<Shape> {
    let base = |k: i64| NOW - 3 * DAY + k * HOUR;
    let mut out = Vec::new();

    // Re-emitted totals: the repeat of the first response counts 0.
    let b = base(0);
    let [m, c] = meta(b, "s-reemit", "");
    let reemit_body = vec![
        m,
        c,
        response(b + 10, u(1000, 600, 100), u(1000, 600, 100)),
        response(b + 11, u(1000, 600, 100), u(1000, 600, 100)),
        response(b + 60, u(3000, 2000, 300), u(2000, 1400, 200)),
    ];
    out.push(Shape {
        name: "re-emitted totals",
        files: vec![rollout("s-reemit", &reemit_body)],
        truth: Truth {
            requests: 2,
            input: 3000,
            cached: 2000,
            output: 300,
            forks_unresolved: 0,
        },
    });

    // Context window full: the totals become {total_tokens: window}, and
    // the responses after it append to that.
    let b = base(1);
    let [m, c] = meta(b, "s-full", "");
    out.push(Shape {
        name: "context window full, then more responses",
        files: vec![rollout(
            "s-full",
            &[
                m,
                c,
                response(b + 10, u(1000, 0, 100), u(1000, 0, 100)),
                count(
                    b + 20,
                    Some(([0; 4], 258_400)),
                    Some(([0; 4], 258_400 - 1100)),
                ),
                response(b + 30, ([200, 50, 20, 0], 258_400 + 220), u(200, 50, 20)),
                response(b + 40, ([500, 150, 50, 0], 258_400 + 550), u(300, 100, 30)),
            ],
        )],
        truth: Truth {
            requests: 3,
            input: 1000 + 200 + 300,
            cached: 150,
            output: 100 + 20 + 30,
            forks_unresolved: 0,
        },
    });

    // A fork by reference after both turns: it holds only its own record.
    let b = base(2);
    let [m, c] = meta(b + 600, "s-ref", &by_reference("s-ref-p", 4));
    let child = rollout(
        "s-ref",
        &[m, c, response(b + 700, u(3500, 100, 350), u(500, 100, 50))],
    );
    let own = Truth {
        requests: 1,
        input: 500,
        cached: 100,
        output: 50,
        forks_unresolved: 0,
    };
    out.push(Shape {
        name: "fork by reference, parent present",
        files: vec![two_turns(b, "s-ref-p"), child],
        truth: TWO_TURNS.add(own),
    });

    // The same fork with its parent deleted: its own response still counts.
    let b = base(3);
    let [m, c] = meta(b + 600, "s-orphan", &by_reference("s-orphan-p", 4));
    out.push(Shape {
        name: "fork by reference, parent deleted",
        files: vec![rollout(
            "s-orphan",
            &[m, c, response(b + 700, u(3500, 100, 350), u(500, 100, 50))],
        )],
        truth: Truth {
            forks_unresolved: 1,
            ..own
        },
    });

    // Forks from the first turn, made after the second: they continue from
    // 1000/0/100. One has `last_token_usage`, one has only totals.
    let b = base(4);
    let [m, c] = meta(b + 600, "s-early", &by_reference("s-early-p", 3));
    let with_last = rollout(
        "s-early",
        &[
            m,
            c,
            response(b + 700, u(1400, 0, 140), u(400, 0, 40)),
            response(b + 701, u(1400, 0, 140), u(400, 0, 40)),
        ],
    );
    let [m, c] = meta(b + 800, "s-early-t", &by_reference("s-early-p", 3));
    let totals_only = rollout(
        "s-early-t",
        &[m, c, count(b + 900, Some(u(1600, 0, 160)), None)],
    );
    out.push(Shape {
        name: "fork from an earlier turn",
        files: vec![two_turns(b, "s-early-p"), with_last, totals_only],
        truth: TWO_TURNS.add(Truth {
            requests: 2,
            input: 400 + 600,
            cached: 0,
            output: 40 + 60,
            forks_unresolved: 0,
        }),
    });

    // An old-style fork: the parent's token_count lines copied into the
    // child, stamped at fork time, then its own response.
    let b = base(5);
    let fork_at = b + 600;
    let [m, c] = meta(fork_at, "s-copy", r#","forked_from_id":"s-copy-p""#);
    out.push(Shape {
        name: "old-style fork copying its parent's lines",
        files: vec![
            two_turns(b, "s-copy-p"),
            rollout(
                "s-copy",
                &[
                    m,
                    c,
                    response(fork_at, u(1000, 0, 100), u(1000, 0, 100)),
                    response(fork_at, u(3000, 0, 300), u(2000, 0, 200)),
                    response(fork_at + 60, u(3300, 0, 330), u(300, 0, 30)),
                ],
            ),
        ],
        truth: TWO_TURNS.add(Truth {
            requests: 1,
            input: 300,
            cached: 0,
            output: 30,
            forks_unresolved: 0,
        }),
    });

    // A subagent: its first second replays the parent's totals.
    let b = base(6);
    let [m, c] = meta(
        b,
        "s-sub",
        r#","source":{"subagent":{"thread_spawn":{"parent_thread_id":"s-sub-p","depth":1}}}"#,
    );
    out.push(Shape {
        name: "subagent with a replay burst",
        files: vec![rollout(
            "s-sub",
            &[
                m,
                c,
                response(b, u(800, 0, 80), u(800, 0, 80)),
                response(b, u(900, 100, 90), u(100, 100, 10)),
                response(b + 120, u(1200, 300, 120), u(300, 200, 30)),
            ],
        )],
        truth: Truth {
            requests: 1,
            input: 300,
            cached: 200,
            output: 30,
            forks_unresolved: 0,
        },
    });

    // A compressed archive.
    let b = base(7);
    let [m, c] = meta(b, "s-zst", "");
    out.push(Shape {
        name: ".jsonl.zst archive",
        files: vec![File {
            path: ".codex/archived_sessions/rollout-2026-11-26T07-00-00-s-zst.jsonl.zst".into(),
            bytes: zstd(&lines(&[
                m,
                c,
                response(b + 10, u(2000, 1000, 200), u(2000, 1000, 200)),
                response(b + 11, u(2000, 1000, 200), u(2000, 1000, 200)),
                response(b + 60, u(2500, 1200, 250), u(500, 200, 50)),
            ])),
            mtime: None,
        }],
        truth: Truth {
            requests: 2,
            input: 2500,
            cached: 1200,
            output: 250,
            forks_unresolved: 0,
        },
    });

    // Spaced JSON: the re-emit shape with spaces after every `:` and `,`
    // of the structure, at its own time.
    let shift = |line: &str| line.replace(&ts(base(0) + 10), &ts(base(8) + 10));
    let spaced: Vec<String> = reemit_body
        .iter()
        .map(|l| {
            shift(l)
                .replace(&ts(base(0) + 11), &ts(base(8) + 11))
                .replace(&ts(base(0) + 60), &ts(base(8) + 60))
                .replace("s-reemit", "s-spaced")
                .replace("\":", "\": ")
                .replace(",\"", ", \"")
        })
        .collect();
    assert!(spaced[2].contains(r#""type": "event_msg""#));
    out.push(Shape {
        name: "spaced JSON",
        files: vec![rollout("s-spaced", &spaced)],
        truth: Truth {
            requests: 2,
            input: 3000,
            cached: 2000,
            output: 300,
            forks_unresolved: 0,
        },
    });

    // Totals only (no last_token_usage): deltas of distinct totals, a
    // re-emit counting 0 and a reset (window full) counting from there.
    let b = base(9);
    let [m, c] = meta(b, "s-totals", "");
    out.push(Shape {
        name: "totals only",
        files: vec![rollout(
            "s-totals",
            &[
                m,
                c,
                count(b + 10, Some(u(1000, 600, 100)), None),
                count(b + 11, Some(u(1000, 600, 100)), None),
                count(b + 60, Some(u(3000, 2000, 300)), None),
                count(b + 70, Some(([0; 4], 258_400)), None),
                count(b + 80, Some(([200, 50, 20, 0], 258_620)), None),
            ],
        )],
        truth: Truth {
            requests: 3,
            input: 3000 + 200,
            cached: 2000 + 50,
            output: 300 + 20,
            forks_unresolved: 0,
        },
    });

    // A fork of a session older than the window: 5.2 M inherited tokens
    // that must not be billed; its own response is 150 tokens.
    let old = NOW - 40 * DAY;
    let [pm, pc] = meta(old, "s-aged-p", "");
    let parent = File {
        path: ".codex/sessions/2026/10/20/rollout-2026-10-20T12-00-00-s-aged-p.jsonl".into(),
        bytes: lines(&[
            pm,
            pc,
            response(
                old + 10,
                u(5_000_000, 4_000_000, 200_000),
                u(5_000_000, 4_000_000, 200_000),
            ),
        ])
        .into_bytes(),
        mtime: Some(old + 10),
    };
    let b = base(10);
    let [m, c] = meta(b, "s-aged", &by_reference("s-aged-p", 3));
    out.push(Shape {
        name: "fork whose parent is older than the window",
        files: vec![
            parent,
            rollout(
                "s-aged",
                &[
                    m,
                    c,
                    response(b + 10, u(5_000_100, 4_000_000, 200_050), u(100, 0, 50)),
                ],
            ),
        ],
        truth: Truth {
            requests: 1,
            input: 100,
            cached: 0,
            output: 50,
            forks_unresolved: 1,
        },
    });

    // A revert: a new rollout of the same thread that continues the base
    // rollout's totals from its first turn (ordinal 3).
    let b = base(11);
    let [m, c] = meta(
        b + 600,
        "s-revert",
        r#","history_base":{"thread_id":"s-revert","end_ordinal_exclusive":3,"end_byte_offset":900}"#,
    );
    out.push(Shape {
        name: "revert file",
        files: vec![
            two_turns(b, "s-revert"),
            File {
                path: ".codex/sessions/2026/11/29/rollout-2026-11-29T09-00-00-s-revert_rv1.jsonl"
                    .into(),
                bytes: lines(&[m, c, response(b + 700, u(1500, 0, 150), u(500, 0, 50))])
                    .into_bytes(),
                mtime: None,
            },
        ],
        truth: TWO_TURNS.add(Truth {
            requests: 1,
            input: 500,
            cached: 0,
            output: 50,
            forks_unresolved: 0,
        }),
    });
    out
}

/// A fake `$HOME`, removed on drop (also when a test panics).
struct Home(usage_fixture::TempDir);

impl Home {
    fn new(name: &str) -> Home {
        Home(usage_fixture::temp_dir(name))
    }
}

fn write_files(home: &Path, files: &[File]) {
    for f in files {
        let path = home.join(&f.path);
        write(&path, "");
        fs::write(&path, &f.bytes).unwrap();
        if let Some(at) = f.mtime {
            let file = fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(at as u64))
                .unwrap();
        }
    }
}

/// What the query reports for the tree under `home`.
fn query(home: &Path) -> Truth {
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
    let n = |path: &[&str]| {
        path.iter()
            .fold(&answer, |v, k| v.get(k).unwrap_or(&Value::Null))
            .as_i64()
            .unwrap_or_else(|| panic!("{path:?}"))
    };
    let x = |k: &str| n(&["windows", "d30", "codex", k]);
    Truth {
        requests: x("requests"),
        input: x("input") + x("cache_read"),
        cached: x("cache_read"),
        output: x("output"),
        forks_unresolved: n(&["coverage", "codex", "forks_unresolved"]),
    }
}

#[test]
fn every_codex_shape_reports_its_true_totals() {
    let mut wrong = Vec::new();
    for (i, shape) in shapes().iter().enumerate() {
        let home = Home::new(&format!("usage-codex-shape-{i}"));
        write_files(&home.0, &shape.files);
        let got = query(&home.0);
        if got != shape.truth {
            wrong.push(format!("{}: {got:?}, want {:?}", shape.name, shape.truth));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn all_codex_shapes_in_one_tree_add_up() {
    let home = Home::new("usage-codex-shapes");
    let shapes = shapes();
    let mut truth = Truth::default();
    for shape in &shapes {
        write_files(&home.0, &shape.files);
        truth = truth.add(shape.truth);
    }
    assert_eq!(query(&home.0), truth);
}

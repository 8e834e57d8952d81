//! Incremental aggregation equals a from-scratch scan: random sequences of
//! appends, rewrites, truncations, deletions, new files, forks and window
//! moves on a fixture tree, each followed by an incremental refresh (index
//! and aggregate state round-tripped through their files, as the worker
//! does) and a scan from an empty cache; the snapshots must be identical.

use crate::usage_fixture;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use heeler::usage::aggregate::incremental::State;
use heeler::usage::cache::Index;
use heeler::usage::pricing::PriceTable;
use heeler::usage::store::index::Store;
use heeler::usage::store::state::StateStore;
use heeler::usage::worker::{self, Roots, ScanResult};
use usage_fixture::*;

use crate::common::Xorshift as Rng;
use crate::depth;

fn claude_path(home: &Path, n: u64) -> PathBuf {
    home.join(format!(".claude/projects/-home-dev-p{}/s{n}.jsonl", n % 3))
}

fn codex_path(home: &Path, n: u64) -> PathBuf {
    home.join(format!(
        ".codex/sessions/2026/11/29/rollout-2026-11-29T08-00-0{n}-x{n}.jsonl"
    ))
}

fn pi_path(home: &Path, n: u64) -> PathBuf {
    home.join(format!(
        ".pi/agent/sessions/--home-dev-delta--/2026-11-29T08-00-0{n}-000Z_p{n}.jsonl"
    ))
}

/// One pi assistant message as pi's `SessionManager` writes it (a
/// `SessionMessageEntry` with an `AssistantMessage` and its `Usage`).
fn pi_message(rng: &mut Rng, at: i64) -> String {
    let models = ["claude-sonnet-4-5", "gpt-5", "pi-mystery-1"];
    format!(
        r#"{{"type":"message","id":"{:08x}","parentId":null,"timestamp":"{}","message":{{"role":"assistant","content":[],"provider":"p","model":"{}","usage":{{"input":{},"output":{},"cacheRead":{},"cacheWrite":{},"totalTokens":0,"cost":{{"total":0}}}},"stopReason":"stop","timestamp":0}}}}"#,
        rng.next() as u32,
        ts(at),
        models[rng.below(3) as usize],
        1 + rng.below(500),
        rng.below(300),
        rng.below(2_000),
        rng.below(200),
    )
}

/// A pi session file: its header, then messages; a fork (`forkFrom`)
/// names its parent and starts with copied messages older than its
/// header, which count in the parent only.
fn pi_text(rng: &mut Rng, now: i64, n: u64) -> String {
    let start = now - 3 * HOUR - rng.below(HOUR as u64) as i64;
    let fork = n != 0 && rng.below(2) == 0;
    let parent = if fork {
        r#","parentSession":"/home/dev/.pi/agent/sessions/p0.jsonl""#
    } else {
        ""
    };
    let mut list = vec![format!(
        r#"{{"type":"session","version":3,"id":"p{n}","timestamp":"{}","cwd":"/home/dev/delta"{parent}}}"#,
        ts(start)
    )];
    if fork {
        for k in 0..2 {
            list.push(pi_message(rng, start - HOUR + k * 60));
        }
    }
    for k in 0..1 + rng.below(3) as i64 {
        list.push(pi_message(rng, start + 60 + k * 60));
    }
    lines(&list)
}

fn amp_path(home: &Path, n: u64) -> PathBuf {
    home.join(format!(".local/share/amp/threads/T-{n}.json"))
}

/// An Amp assistant message with its `usage` at `at` (no time: `None`).
fn amp_message(rng: &mut Rng, id: u64, at: Option<i64>) -> String {
    let models = ["claude-sonnet-4-5", "gpt-5", "amp-mystery-1"];
    let at = at.map_or(String::new(), |at| format!(r#","timestamp":"{}""#, ts(at)));
    format!(
        r#"{{"role":"assistant","messageId":{id},"content":[{{"type":"text","text":"ok"}}],"usage":{{"model":"{}","inputTokens":{},"outputTokens":{},"cacheReadInputTokens":{},"cacheCreationInputTokens":{}{at}}}}}"#,
        models[rng.below(3) as usize],
        1 + rng.below(500),
        rng.below(300),
        rng.below(2_000),
        rng.below(200),
    )
}

/// An Amp thread document: messages, some without a time, ledger events
/// for some of them (input and output only, linked by `toMessageId`),
/// and for a fork, copied messages stamped before its `created`; one
/// document in eight torn (as a read in the middle of a rewrite sees it).
fn amp_text(rng: &mut Rng, now: i64, n: u64) -> String {
    let created = now - 3 * HOUR - rng.below(HOUR as u64) as i64;
    let mut messages = Vec::new();
    if n != 0 && rng.below(2) == 0 {
        messages.push(amp_message(rng, 1, Some(created - HOUR)));
    }
    let mut events = Vec::new();
    for k in 0..1 + rng.below(4) {
        let at = (rng.below(4) != 0).then_some(created + 60 * (k as i64 + 1));
        messages.push(amp_message(rng, 2 + k, at));
        if rng.below(2) == 0 {
            events.push(format!(
                r#"{{"timestamp":"{}","model":"claude-sonnet-4-5","tokens":{{"input":{},"output":{}}},"toMessageId":{}}}"#,
                ts(created + 60 * (k as i64 + 1)),
                rng.below(400),
                rng.below(100),
                2 + k
            ));
        }
    }
    let doc = format!(
        r#"{{"v":1,"id":"T-{n}","created":{},"messages":[{}],"usageLedger":{{"events":[{}]}}}}"#,
        created * 1000,
        messages.join(","),
        events.join(",")
    );
    if rng.below(8) == 0 {
        return doc[..doc.len() / 2].to_string();
    }
    doc
}

fn droid_path(home: &Path, n: u64) -> PathBuf {
    home.join(format!(
        ".factory/sessions/-home-dev-delta/s{n}.settings.json"
    ))
}

/// A Droid session's settings: its running totals, with a provider lock
/// time or none (then the file's mtime dates it).
fn droid_text(rng: &mut Rng, now: i64) -> String {
    let models = [
        "claude-sonnet-4-5-20250929",
        "gpt-5",
        "custom:GLM-4.6-[Z.AI]-0",
    ];
    let lock = match rng.below(2) {
        0 => String::new(),
        _ => format!(r#","providerLockTimestamp":"{}""#, ts(now - 2 * HOUR)),
    };
    format!(
        r#"{{"model":"{}"{lock},"tokenUsage":{{"inputTokens":{},"outputTokens":{},"cacheCreationTokens":{},"cacheReadTokens":{},"thinkingTokens":{}}}}}"#,
        models[rng.below(3) as usize],
        rng.below(5_000),
        rng.below(2_000),
        rng.below(3_000),
        rng.below(20_000),
        rng.below(500),
    )
}

/// Amp and Droid, one step in three: a rewritten (maybe forked or torn)
/// thread or settings document, or a deleted one.
fn document_step(rng: &mut Rng, home: &Path, now: i64) -> &'static str {
    let n = rng.below(3);
    match rng.below(9) {
        0 | 1 => {
            write(&amp_path(home, n), &amp_text(rng, now, n));
            " + rewrite amp"
        }
        2 => {
            let _ = fs::remove_file(amp_path(home, n));
            " + delete amp"
        }
        3 | 4 => {
            write(&droid_path(home, n), &droid_text(rng, now));
            " + rewrite droid"
        }
        5 => {
            let _ = fs::remove_file(droid_path(home, n));
            " + delete droid"
        }
        _ => "",
    }
}

/// Cline session `n`: created at a fixed time before the run (its id
/// `<epoch ms>_c<n>`, as `createSessionId` makes it), its document in
/// `<sessions>/<id>/<id>.messages.json`.
fn cline_id(n: u64) -> (String, i64) {
    let created = NOW - 4 * HOUR - n as i64 * 60;
    (format!("{}_c{n}", created * 1000), created)
}

fn cline_path(home: &Path, n: u64) -> PathBuf {
    let (id, _) = cline_id(n);
    home.join(format!(".cline/data/sessions/{id}/{id}.messages.json"))
}

/// One assistant message as the Cline SDK persists it (`metrics` the
/// request's usage, `inputTokens` the whole prompt), at `at` seconds.
fn cline_message(rng: &mut Rng, at: i64) -> String {
    let models = ["claude-sonnet-4-6", "gpt-5", "cline-mystery-1"];
    let (read, write) = (rng.below(2_000), rng.below(200));
    format!(
        r#"{{"id":"msg_{:08x}","role":"assistant","content":[{{"type":"text","text":"ok"}}],"ts":{},"modelInfo":{{"id":"{}","provider":"p"}},"metrics":{{"inputTokens":{},"outputTokens":{},"cacheReadTokens":{read},"cacheWriteTokens":{write},"cost":0.01}}}}"#,
        rng.next() as u32,
        at * 1000 + rng.below(1000) as i64,
        models[rng.below(3) as usize],
        1 + rng.below(500) + read + write,
        rng.below(300),
    )
}

/// The whole document of Cline session `n` holding `messages`.
fn cline_document(n: u64, messages: &[String]) -> String {
    let (id, _) = cline_id(n);
    format!(
        "{{\n  \"version\": 1,\n  \"updated_at\": \"{}\",\n  \"agent\": \"lead\",\n  \"sessionId\": \"{id}\",\n  \"messages\": [\n    {}\n  ]\n}}\n",
        ts(NOW),
        messages.join(",\n    ")
    )
}

/// One Cline step: the document of a session rewritten with one more
/// message, rewritten as a fork (copies stamped before its creation, then
/// its own), torn mid-write, or deleted.
fn cline_step(rng: &mut Rng, home: &Path, now: i64, docs: &mut [Vec<String>; 3]) -> &'static str {
    let n = rng.below(3);
    let path = cline_path(home, n);
    let (_, created) = cline_id(n);
    let messages = &mut docs[n as usize];
    match rng.below(12) {
        0 | 1 => {
            messages.push(cline_message(rng, now - 30));
            write(&path, &cline_document(n, messages));
            " + grow cline"
        }
        2 => {
            messages.clear();
            for k in 0..2 {
                messages.push(cline_message(rng, created - HOUR + k * 60));
            }
            messages.push(cline_message(rng, created + 60));
            write(&path, &cline_document(n, messages));
            " + fork cline"
        }
        3 => {
            let text = cline_document(n, messages);
            write(&path, &text[..text.len() / 2]);
            " + tear cline"
        }
        4 => {
            let _ = fs::remove_file(&path);
            messages.clear();
            " + delete cline"
        }
        _ => "",
    }
}

/// Days of history the cache keeps in a run (`usage.toml`'s
/// `retention_days`; 30 is the app's window alone).
const WINDOW: i64 = 30;

fn claude_lines(rng: &mut Rng, now: i64, count: u64, retention: i64) -> String {
    let mut out = String::new();
    for _ in 0..count {
        // A small shared pool of ids (cross-file duplicates, sidechain
        // replays) and mostly unique ones (independent files).
        let id = if rng.below(6) == 0 {
            format!("shared{}", rng.below(4))
        } else {
            format!("m{}", rng.next())
        };
        let models = ["claude-opus-4-6", "claude-sonnet-4-5", "claude-mystery-9"];
        let line = Claude {
            // Some records near the history's start, so window moves
            // matter; with a longer history, some on either side of the
            // app's window.
            at: if rng.below(5) == 0 {
                now - (retention + 2) * DAY + rng.below(6 * HOUR as u64) as i64
            } else if retention > WINDOW && rng.below(3) == 0 {
                now - 28 * DAY - rng.below(8 * DAY as u64) as i64
            } else {
                now - rng.below(10 * DAY as u64) as i64
            },
            msg: &id,
            req: &id,
            model: models[rng.below(3) as usize],
            cwd: ["/home/dev/alpha", "/home/dev/beta"][rng.below(2) as usize],
            sidechain: rng.below(5) == 0,
            input: rng.below(50),
            output: 1 + rng.below(500),
            read: rng.below(3) * 1000,
            split: (rng.below(3) == 0).then(|| (rng.below(100), rng.below(100))),
            write: rng.below(2) * 40,
            speed: (rng.below(4) == 0).then_some("fast"),
        }
        .line();
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A Codex rollout: meta (maybe a fork of `x0`), context, rising totals.
fn codex_text(rng: &mut Rng, now: i64, n: u64, turns: u64) -> String {
    let fork = if n != 0 && rng.below(3) == 0 {
        r#","forked_from_id":"x0""#
    } else {
        ""
    };
    let start = now - 5 * HOUR - rng.below(HOUR as u64) as i64;
    let mut list = vec![
        session_meta(start, &format!("x{n}"), fork),
        turn_context(start + 1, "gpt-5.5", "/home/dev/gamma"),
    ];
    let mut total = [0u64; 4];
    for t in 0..turns {
        let last = [100 + rng.below(900), rng.below(100), 10 + rng.below(90), 0];
        for i in 0..4 {
            total[i] += last[i];
        }
        list.push(token_count(start + 10 + t as i64 * 60, total, last, ""));
    }
    lines(&list)
}

fn opencode_path(home: &Path) -> PathBuf {
    home.join(".local/share/opencode/opencode.db")
}

/// One assistant message's `data` as opencode writes it
/// (`MessageV2.Assistant` without `id` and `sessionID`), with or without
/// AI SDK 6's `total`.
fn opencode_message(rng: &mut Rng, at: i64) -> String {
    let models = ["claude-sonnet-4-5", "gpt-5", "oc-mystery-1"];
    let (input, output, reasoning) = (1 + rng.below(500), rng.below(300), rng.below(50));
    let total = match rng.below(2) {
        0 => format!(r#""total":{},"#, input + output + reasoning),
        _ => String::new(),
    };
    format!(
        r#"{{"role":"assistant","modelID":"{}","providerID":"p","path":{{"cwd":"/home/dev/oc","root":"/"}},"time":{{"created":{}}},"cost":0,"tokens":{{{total}"input":{input},"output":{output},"reasoning":{reasoning},"cache":{{"read":{},"write":{}}}}}}}"#,
        models[rng.below(3) as usize],
        at * 1000 + rng.below(1000) as i64,
        rng.below(2_000),
        rng.below(200),
    )
}

/// One random step on opencode's database, held open by its writer as a
/// running opencode holds it (WAL mode, commits in the WAL until a
/// checkpoint): a new message, a fork's copy of one, a deleted one, a
/// checkpoint, or the database removed. Returns what it did.
fn opencode_step(
    rng: &mut Rng,
    home: &Path,
    db: &mut Option<rusqlite::Connection>,
    now: i64,
    next: &mut u64,
) -> &'static str {
    let path = opencode_path(home);
    let step = rng.below(14);
    if step >= 7 {
        return "";
    }
    let conn = db.get_or_insert_with(|| {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE IF NOT EXISTS message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
                 time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);",
        )
        .unwrap();
        conn
    });
    *next += 1;
    let id = format!("msg_{:06}", *next);
    let insert = |session: String, data: String| {
        conn.execute(
            "INSERT INTO message VALUES (?1, ?2, 0, 0, ?3)",
            rusqlite::params![id, session, data],
        )
        .unwrap();
    };
    match step {
        0..=2 => {
            insert(
                format!("ses_{}", rng.below(3)),
                opencode_message(rng, now - 60),
            );
            " + opencode message"
        }
        3 => {
            let data: Option<String> = conn
                .query_row("SELECT data FROM message ORDER BY id LIMIT 1", [], |r| {
                    r.get(0)
                })
                .ok();
            if let Some(data) = data {
                insert(format!("ses_fork{}", *next), data);
            }
            " + opencode fork"
        }
        4 => {
            conn.execute(
                "DELETE FROM message WHERE id = (SELECT id FROM message ORDER BY id DESC LIMIT 1)",
                [],
            )
            .unwrap();
            " + opencode delete message"
        }
        5 => {
            conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                .unwrap();
            " + opencode checkpoint"
        }
        _ => {
            *db = None;
            for tail in ["", "-wal", "-shm"] {
                let mut p = path.clone().into_os_string();
                p.push(tail);
                let _ = fs::remove_file(p);
            }
            " + opencode removed"
        }
    }
}

fn append(path: &Path, text: &str) {
    fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

fn fresh_into(index: &mut Index, home: &Path, now: i64, retention: i64) -> ScanResult {
    let roots = Roots::resolve(home, &|_| None);
    let prices = PriceTable::bundled().unwrap();
    let options = worker::ScanOptions {
        threads: 2,
        retention_days: retention,
        ..worker::ScanOptions::new(&prices, now)
    };
    worker::scan_with_state(index, &mut None, &roots, worker::discover(&roots), &options)
}

/// Sets a file's modification time to `at` (UTC seconds).
fn age(path: &Path, at: i64) {
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(at as u64);
    fs::File::options()
        .append(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

fn run(seed: u64, retention: i64) -> (u64, u64) {
    let home = temp_dir(&format!("usage-incremental-{seed}"));
    let prices = PriceTable::bundled().unwrap();
    let mut rng = Rng(seed);
    let mut now = NOW;
    for n in 0..4 {
        write(
            &claude_path(&home, n),
            &claude_lines(&mut rng, now, 6, retention),
        );
    }
    for n in 0..3 {
        write(&codex_path(&home, n), &codex_text(&mut rng, now, n, 4));
    }
    for n in 0..2 {
        write(&pi_path(&home, n), &pi_text(&mut rng, now, n));
    }
    for n in 0..2 {
        write(&amp_path(&home, n), &amp_text(&mut rng, now, n));
        write(&droid_path(&home, n), &droid_text(&mut rng, now));
    }
    let mut cline: [Vec<String>; 3] = Default::default();
    for n in 0..2 {
        let (_, created) = cline_id(n);
        cline[n as usize] = vec![cline_message(&mut rng, created + 30)];
        write(
            &cline_path(&home, n),
            &cline_document(n, &cline[n as usize]),
        );
    }
    let (mut opencode, mut opencode_ids) = (None, 0);
    // opencode's data directory exists before the roots are resolved (as
    // the worker resolves them once).
    fs::create_dir_all(opencode_path(&home).parent().unwrap()).unwrap();
    let roots = Roots::resolve(&home, &|_| None);
    let state_dir = temp_dir(&format!("usage-incremental-state-{seed}"));
    // Odd seeds compact at every chance (tiny journal and dead-byte
    // allowances), even ones append to the journal and events file.
    let mut store = Store::in_dir(&state_dir);
    let mut state_store = StateStore::in_dir(&state_dir);
    if seed % 2 == 1 {
        store.min_journal = 0;
        store.min_dead = 0;
        state_store.min_journal = 0;
    }
    let (mut incremental, mut steps) = (0, 0);
    for step in 0..40 {
        // pi, one step in three: an appended message, a rewritten (maybe
        // forked) session or a deleted one.
        let pi = match rng.below(9) {
            0 | 1 => {
                let path = pi_path(&home, rng.below(3));
                if path.exists() {
                    append(&path, &format!("{}\n", pi_message(&mut rng, now - 60)));
                }
                " + append pi"
            }
            2 => {
                let n = rng.below(3);
                write(&pi_path(&home, n), &pi_text(&mut rng, now, n));
                " + rewrite pi"
            }
            3 => {
                let _ = fs::remove_file(pi_path(&home, rng.below(3)));
                " + delete pi"
            }
            _ => "",
        };
        let documents = document_step(&mut rng, &home, now);
        let cline = cline_step(&mut rng, &home, now, &mut cline);
        let oc = opencode_step(&mut rng, &home, &mut opencode, now, &mut opencode_ids);
        let pi = format!("{pi}{oc}");
        let n = rng.below(6);
        // Ageing a file (out of the app's window, in the history) only
        // when the cache keeps more than the window.
        let op = rng.below(if retention > WINDOW { 10 } else { 9 });
        let what = match op {
            0..=2 => {
                let path = claude_path(&home, n);
                if path.exists() {
                    let count = 1 + rng.below(3);
                    append(&path, &claude_lines(&mut rng, now, count, retention));
                } else {
                    write(&path, &claude_lines(&mut rng, now, 3, retention));
                }
                "append claude"
            }
            3 => {
                let path = codex_path(&home, n % 4);
                let turns = 1 + rng.below(5);
                write(&path, &codex_text(&mut rng, now, n % 4, turns));
                "rewrite codex"
            }
            4 => {
                write(
                    &claude_path(&home, n),
                    &claude_lines(&mut rng, now, 4, retention),
                );
                "rewrite claude"
            }
            5 => {
                let path = claude_path(&home, n);
                if let Ok(text) = fs::read_to_string(&path) {
                    // Cut at a line end, or in the middle of a line (torn).
                    let cut = text.len() * rng.below(4) as usize / 4;
                    fs::write(&path, &text[..cut]).unwrap();
                }
                "truncate claude"
            }
            6 => {
                let _ = fs::remove_file(claude_path(&home, n));
                if rng.below(3) == 0 {
                    let _ = fs::remove_file(codex_path(&home, n % 4));
                }
                "delete"
            }
            7 => {
                let path = codex_path(&home, n % 4);
                if path.exists() {
                    let last = [200, 10, 20, 5];
                    let big = [1_000_000, 10, 2000, 5];
                    append(&path, &token_count(now - 60, big, last, ""));
                }
                "append codex"
            }
            9 => {
                let path = claude_path(&home, n);
                if path.exists() {
                    age(&path, now - (32 + rng.below(20) as i64) * DAY);
                }
                "age claude"
            }
            _ => {
                now += (1 + rng.below(4) as i64) * HOUR;
                "advance now"
            }
        };
        let (mut index, loaded) = store.load();
        let mut state = state_store.load();
        let options = worker::ScanOptions {
            threads: 2,
            retention_days: retention,
            ..worker::ScanOptions::new(&prices, now)
        };
        let result = worker::scan_with_state(
            &mut index,
            &mut state,
            &roots,
            worker::discover(&roots),
            &options,
        );
        let keys: Vec<&str> = result.changed_keys.iter().map(String::as_str).collect();
        store.save(&mut index, &keys, loaded).unwrap();
        assert_eq!(
            store.load().0.to_bytes(),
            index.to_bytes(),
            "seed {seed} step {step}: the stored index differs"
        );
        let state = state.as_mut().unwrap();
        if seed % 2 == 1 {
            state.owners.min_delta = 0;
        }
        state_store.save(state).unwrap();
        // The identifier table kept incrementally (base file plus delta,
        // compacted at every chance for odd seeds) is the one a full
        // aggregation builds.
        let mut scratch = Index::default();
        let mut expected = fresh_into(&mut scratch, &home, now, retention);
        scratch.materialize();
        // The aggregate's id names the index it was built from (entry
        // identities, not contents): only the contents must agree.
        expected.snapshot.aggregate = result.snapshot.aggregate;
        // What a query reads back: the stored state's slots.
        let (stored_id, stored) = state_store
            .load_from(i64::MIN, heeler::usage::store::state::Tables::Both)
            .unwrap();
        assert_eq!(stored_id, result.snapshot.aggregate);
        let window = worker::window_start(now);
        assert_eq!(
            heeler::usage::aggregate::flatten_since(&stored, window).slots,
            result.snapshot.slots,
            "seed {seed} step {step} ({what}{pi}{documents}{cline}): stored slots differ"
        );
        let rebuilt = State::full(&scratch, &prices, worker::history_start(now, retention));
        // The whole history (slots before the app's window, the counters
        // by file) is what a full aggregation gives.
        assert_eq!(
            stored, rebuilt.detailed,
            "seed {seed} step {step} ({what}{pi}{documents}{cline}): the stored history differs"
        );
        assert_eq!(
            state_store.load().unwrap().owners.rows().unwrap(),
            rebuilt.owners.rows().unwrap(),
            "seed {seed} step {step} ({what}{pi}{documents}{cline}): identifier owners differ"
        );
        assert_eq!(
            result.snapshot, expected.snapshot,
            "seed {seed} step {step} ({what}{pi}{documents}{cline}): incremental != from scratch"
        );
        steps += 1;
        incremental += u64::from(result.incremental);
    }
    let _ = fs::remove_dir_all(&home);
    let _ = fs::remove_dir_all(&state_dir);
    (incremental, steps)
}

#[test]
fn incremental_refresh_equals_a_scan_from_scratch() {
    let (mut incremental, mut steps) = (0, 0);
    // Two seeds of each kind by default, every seed under `HEELER_DEEP=1`.
    let seeds = [1, 7, 42, 1234, 99_991, 31_337];
    for &seed in &seeds[..depth::rounds(2, seeds.len())] {
        let (i, s) = run(seed, WINDOW);
        incremental += i;
        steps += s;
    }
    // A longer history (`retention_days = 90`): files and records older
    // than the app's window are kept, and the snapshot stays the window's.
    let seeds = [5, 77, 2024];
    for &seed in &seeds[..depth::rounds(2, seeds.len())] {
        let (i, s) = run(seed, 90);
        incremental += i;
        steps += s;
    }
    println!("{incremental} of {steps} refreshes were incremental");
    // The test must exercise the incremental path, not only the fallback.
    assert!(
        incremental * 3 >= steps,
        "only {incremental} of {steps} refreshes were incremental"
    );
}

#[test]
fn the_index_journal_survives_tears_and_foreign_bases() {
    let home = temp_dir("usage-journal");
    let dir = temp_dir("usage-journal-state");
    let store = Store::in_dir(&dir);
    let roots = |home: &Path| Roots::resolve(home, &|_| None);
    write_tree(&home);
    let scan = |index: &mut Index| {
        worker::scan_with_state(
            index,
            &mut None,
            &roots(&home),
            worker::discover(&roots(&home)),
            &worker::ScanOptions::new(&PriceTable::bundled().unwrap(), NOW),
        )
    };
    let (mut index, loaded) = store.load();
    let r = scan(&mut index);
    store.save(&mut index, &[], loaded).unwrap();
    assert!(!store.journal.exists());
    let base = index.to_bytes();
    let base_file = fs::read(&store.base).unwrap();
    // An append goes to the journal; the base is not rewritten.
    let live = home.join(".claude/projects/-home-dev-beta/s2.jsonl");
    let extra = Claude {
        msg: "journal",
        req: "journal",
        ..Claude::default()
    }
    .line();
    let mut f = fs::OpenOptions::new().append(true).open(&live).unwrap();
    writeln!(f, "{extra}").unwrap();
    drop(f);
    let (mut index, loaded) = store.load();
    let r2 = scan(&mut index);
    assert!(!r2.changed_keys.is_empty());
    let keys: Vec<&str> = r2.changed_keys.iter().map(String::as_str).collect();
    store.save(&mut index, &keys, loaded).unwrap();
    assert!(store.journal.exists());
    assert_eq!(fs::read(&store.base).unwrap(), base_file);
    // Only the appended line's events went to the events file: the entry
    // now has two segments.
    let key = live.to_string_lossy().into_owned();
    assert_eq!(store.load().0.files[&key].stored.len(), 2);
    let after = index.to_bytes();
    assert_eq!(store.load().0.to_bytes(), after);
    // A torn last record is ignored: the index looks as before the append.
    let journal = fs::read(&store.journal).unwrap();
    fs::write(&store.journal, &journal[..journal.len() - 3]).unwrap();
    assert_eq!(store.load().0.to_bytes(), base);
    // ... and the next save writes a new base instead of appending.
    let (mut index, loaded) = store.load();
    scan(&mut index);
    store.save(&mut index, &[], loaded).unwrap();
    assert!(!store.journal.exists());
    assert_eq!(store.load().0.to_bytes(), after);
    // A journal written for another base is ignored.
    fs::write(&store.journal, &journal).unwrap();
    assert_eq!(store.load().0.to_bytes(), after);
    drop(r);
    fs::remove_dir_all(&home).unwrap();
    fs::remove_dir_all(&dir).unwrap();
}

/// Damaged cache files (a disk error, a user's editor, a torn write) are
/// never trusted and never crash the worker: every load either refuses
/// them or yields something a refresh then corrects, and the snapshot after
/// that refresh is the one a scan from scratch gives.
#[test]
fn damaged_cache_files_are_refused_or_repaired_never_trusted() {
    let home = temp_dir("usage-damage");
    let dir = temp_dir("usage-damage-state");
    let prices = PriceTable::bundled().unwrap();
    let mut rng = Rng(0xdead_beef);
    for n in 0..4 {
        write(
            &claude_path(&home, n),
            &claude_lines(&mut rng, NOW, 6, WINDOW),
        );
    }
    for n in 0..2 {
        write(&codex_path(&home, n), &codex_text(&mut rng, NOW, n, 4));
    }
    // Roots are the directories that exist.
    let roots = Roots::resolve(&home, &|_| None);
    let refresh = |store: &Store, states: &StateStore| {
        let (mut index, loaded) = store.load();
        let mut state = states.load();
        let result = worker::scan_with_state(
            &mut index,
            &mut state,
            &roots,
            worker::discover(&roots),
            &worker::ScanOptions::new(&prices, NOW),
        );
        let keys: Vec<&str> = result.changed_keys.iter().map(String::as_str).collect();
        store.save(&mut index, &keys, loaded).unwrap();
        states.save(state.as_mut().unwrap()).unwrap();
        result
    };
    let expected = fresh_into(&mut Index::default(), &home, NOW, WINDOW).snapshot;
    let (mut damaged, mut rounds) = (0, 0);
    // Appends below stay at NOW, so the expected totals move with them.
    for round in 0..60u64 {
        let store = Store::in_dir(&dir);
        let states = StateStore::in_dir(&dir);
        refresh(&store, &states);
        // An append so that journals and segments exist too.
        append(
            &claude_path(&home, round % 4),
            &claude_lines(&mut rng, NOW, 1, WINDOW),
        );
        refresh(&store, &states);
        // The cache's files (the snapshot is rewritten by every refresh).
        let mut files: Vec<PathBuf> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                ["index-v1", "aggregate-v1", "owners-v1"]
                    .iter()
                    .any(|prefix| name.starts_with(prefix))
            })
            .collect();
        files.sort();
        let victim = &files[rng.below(files.len() as u64) as usize];
        let mut bytes = fs::read(victim).unwrap();
        if bytes.is_empty() {
            continue;
        }
        match rng.below(3) {
            0 => {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] ^= 1 << rng.below(8);
            }
            1 => bytes.truncate(rng.below(bytes.len() as u64) as usize),
            _ => {
                let at = rng.below(bytes.len() as u64) as usize;
                let len = (bytes.len() - at).min(8);
                bytes[at..at + len].fill(0xff);
            }
        }
        fs::write(victim, &bytes).unwrap();
        damaged += 1;
        // Loading whatever is left must not panic, materialising included.
        let (mut index, _) = store.load();
        index.materialize();
        let _ = states.load_slots();
        // One refresh later the totals are exactly a fresh scan's.
        let full = refresh(&store, &states);
        let result = full.snapshot;
        let want = fresh_into(&mut Index::default(), &home, NOW, WINDOW).snapshot;
        assert_eq!(
            result.slots, want.slots,
            "round {round}: {victim:?} {:?} {}",
            full.stats, full.incremental
        );
        assert_eq!(result.coverage, want.coverage, "round {round}: {victim:?}");
        rounds += 1;
    }
    assert!(expected.slots.len() > 3);
    println!("{damaged} damaged cache files over {rounds} rounds, all repaired");
    let _ = fs::remove_dir_all(&home);
    let _ = fs::remove_dir_all(&dir);
}

//! `cargo xtask bench-usage --agents`: the cold scan and the warm views of
//! every agent heeler reads, against the Claude Code + Codex corpus that
//! `bench-usage` times.
//!
//! Three kinds of home are generated (deterministically, under
//! `target/bench-usage/agents/`): the Claude Code + Codex corpus at
//! `--scale` (0.2 by default: 1,000 and 400 files); one home per other
//! agent, holding only that agent's files, about a tenth of that corpus's
//! bytes each, in the agent's own layout and field names (as its tests'
//! fixtures write them); and a home with all of them together. Each round
//! cold-scans every home once (`heeler usage worker`, empty cache),
//! interleaved so every home sees the same load; the medians are printed
//! as CPU per MB and as the ratio to the Claude Code + Codex corpus's CPU
//! per MB (the issue's budget: no worse). Then the warm views (`usage
//! query`, the summary, `daily`, `statusline`) are timed on the
//! Claude Code + Codex home and on the home with every agent, interleaved,
//! 21 runs each, medians and their ratio. Figures only: nothing is
//! asserted.

use std::fs;
use std::path::{Path, PathBuf};

use crate::bench_usage::{
    Rng, Run, generate, heeler, measure, median, ms, ratio, secs, set_mtime, time, ts, unix_now,
};

/// One generated file: its path below the home, its bytes, its mtime. A
/// `.db` file's text is the SQL that makes the database.
struct File {
    path: PathBuf,
    text: String,
    mtime: i64,
}

/// An agent's generator: files of about `bytes` in all, spread over the
/// last 30 days before `now`.
type Generator = fn(&mut Rng, i64, u64) -> Vec<File>;

/// The other agents, each with its generator.
const AGENTS: &[(&str, Generator)] = &[("pi", pi), ("devin", devin), ("hermes", hermes)];

/// Spreads sessions of `per_session` calls over 30 days until `bytes` are
/// written: `session(i, start)` returns a session's file.
fn sessions(now: i64, bytes: u64, mut session: impl FnMut(usize, i64) -> File) -> Vec<File> {
    let mut files = Vec::new();
    let mut written = 0;
    let span = 30 * 86_400 - 3_600;
    let mut i = 0;
    while written < bytes {
        // Starts stride through the span (a prime step, so they spread).
        let start = now - span + ((i as i64 * 7_919) % span);
        let f = session(i, start);
        written += f.text.len() as u64;
        files.push(f);
        i += 1;
    }
    files
}

/// pi: `sessions/--<cwd>--/<time>_<id>.jsonl`, a `SessionHeader` then
/// `SessionMessageEntry`s (badlogic/pi-mono `session-manager.ts`), the
/// assistant's `Usage` of `packages/ai/src/types.ts`.
fn pi(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    sessions(now, bytes, |i, start| {
        let cwd = format!("/home/bench/project-{:02}", i % 40);
        let mut text = format!(
            r#"{{"type":"session","version":3,"id":"pi-{i}","timestamp":"{}","cwd":"{cwd}"}}"#,
            ts(start)
        );
        text.push('\n');
        let mut at = start;
        for n in 0..(20 + rng.below(30)) {
            at += 30;
            let user = rng.text(300);
            text.push_str(&format!(
                r#"{{"type":"message","id":"u{i}-{n}","parentId":null,"timestamp":"{}","message":{{"role":"user","content":[{{"type":"text","text":"{user}"}}],"timestamp":{}}}}}"#,
                ts(at),
                at * 1000
            ));
            text.push('\n');
            let (input, output, read, write) = (
                rng.below(500) + 1,
                rng.below(2_000) + 1,
                rng.below(60_000),
                rng.below(3_000),
            );
            let answer = rng.text(400);
            text.push_str(&format!(
                r#"{{"type":"message","id":"a{i}-{n}","parentId":"u{i}-{n}","timestamp":"{}","message":{{"role":"assistant","content":[{{"type":"text","text":"{answer}"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":{input},"output":{output},"cacheRead":{read},"cacheWrite":{write},"totalTokens":{},"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":{}}}}}"#,
                ts(at + 10),
                input + output + read + write,
                (at + 10) * 1000
            ));
            text.push('\n');
        }
        File {
            path: PathBuf::from(format!(
                ".pi/agent/sessions/--home-bench-project-{:02}--/{}_pi-{i}.jsonl",
                i % 40,
                ts(start).replace(':', "-")
            )),
            text,
            mtime: at + 10,
        }
    })
}

/// `text` as an SQL string literal.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Devin for Terminal: `~/.local/share/devin/cli/sessions.db`, its
/// `sessions` and `message_nodes` tables (as tokscale's and codeburn's
/// readers show them): per session a user prompt, then assistant messages
/// with metrics and tool results, each a node.
fn devin(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    let mut sql = String::from(
        "PRAGMA journal_mode = WAL; BEGIN;
         CREATE TABLE sessions (id TEXT PRIMARY KEY, working_directory TEXT NOT NULL,
             backend_type TEXT NOT NULL, model TEXT NOT NULL, agent_mode TEXT NOT NULL,
             created_at INTEGER NOT NULL, last_activity_at INTEGER NOT NULL);
         CREATE TABLE message_nodes (row_id INTEGER PRIMARY KEY AUTOINCREMENT,
             session_id TEXT NOT NULL, node_id INTEGER NOT NULL, parent_node_id INTEGER,
             chat_message TEXT NOT NULL, created_at INTEGER NOT NULL, metadata TEXT);\n",
    );
    let mut last = now;
    let files = sessions(now, bytes, |i, start| {
        let mut text = format!(
            "INSERT INTO sessions VALUES ('dv-{i}', '/home/bench/project-{:02}', 'windsurf', 'adaptive', 'normal', {start}, {start});\n",
            i % 40
        );
        let mut at = start;
        let node = |text: &mut String, at: i64, n: u64, chat: &str| {
            text.push_str(&format!(
                "INSERT INTO message_nodes (session_id, node_id, parent_node_id, chat_message, created_at) VALUES ('dv-{i}', {n}, {}, {}, {at});\n",
                n.saturating_sub(1),
                quoted(chat)
            ));
        };
        let prompt = rng.text(300);
        node(
            &mut text,
            at,
            0,
            &format!(
                r#"{{"role":"user","content":"{prompt}","metadata":{{"is_user_input":true}}}}"#
            ),
        );
        for n in 0..(20 + rng.below(30)) {
            at += 30;
            let (input, output, read, write) = (
                rng.below(500) + 1,
                rng.below(2_000) + 1,
                rng.below(60_000),
                rng.below(3_000),
            );
            let answer = rng.text(400);
            let chat = format!(
                r#"{{"role":"assistant","content":"{answer}","tool_calls":[{{"id":"t{n}","name":"exec","arguments":"{{}}"}}],"metadata":{{"num_tokens":{output},"generation_model":"claude-sonnet-4-5","request_id":"req-{i}-{n}","metrics":{{"input_tokens":{input},"output_tokens":{output},"cache_read_tokens":{read},"cache_creation_tokens":{write},"total_time_ms":2000}}}}}}"#
            );
            node(&mut text, at, 2 * n + 1, &chat);
            let result = rng.text(600);
            node(
                &mut text,
                at + 5,
                2 * n + 2,
                &format!(r#"{{"role":"tool","tool_call_id":"t{n}","content":"{result}"}}"#),
            );
        }
        last = last.max(at);
        File {
            path: PathBuf::new(),
            text,
            mtime: at,
        }
    });
    for f in files {
        sql.push_str(&f.text);
    }
    sql.push_str("COMMIT;");
    vec![File {
        path: PathBuf::from(".local/share/devin/cli/sessions.db"),
        text: sql,
        mtime: last,
    }]
}

/// Hermes Agent: `~/.hermes/state.db`, its `sessions` totals, its
/// `session_model_usage` rows (the main loop's and a title generation's)
/// and its `messages`, which hold nearly all of its bytes
/// (NousResearch/hermes-agent `hermes_state*.py`).
fn hermes(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    let mut sql = String::from(
        "PRAGMA journal_mode = WAL; BEGIN;
         CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT,
             billing_provider TEXT, started_at REAL NOT NULL, message_count INTEGER DEFAULT 0,
             input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
             cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
             reasoning_tokens INTEGER DEFAULT 0, cwd TEXT);
         CREATE TABLE session_model_usage (session_id TEXT NOT NULL, model TEXT NOT NULL,
             billing_provider TEXT NOT NULL DEFAULT '', task TEXT NOT NULL DEFAULT '',
             input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
             cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
             reasoning_tokens INTEGER DEFAULT 0, PRIMARY KEY (session_id, model, billing_provider, task));
         CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
             role TEXT NOT NULL, content TEXT, timestamp REAL NOT NULL);\n",
    );
    let mut last = now;
    let files = sessions(now, bytes, |i, start| {
        let mut text = String::new();
        let mut at = start;
        let mut t = [0u64; 4];
        for _ in 0..(20 + rng.below(30)) {
            at += 30;
            for (k, n) in [500, 2_000, 60_000, 3_000].iter().enumerate() {
                t[k] += rng.below(*n);
            }
            for (role, len) in [("user", 300), ("assistant", 400), ("tool", 600)] {
                text.push_str(&format!(
                    "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('h-{i}', '{role}', {}, {at});\n",
                    quoted(&rng.text(len))
                ));
            }
        }
        let [input, output, read, write] = t;
        text.push_str(&format!(
            "INSERT INTO sessions VALUES ('h-{i}', 'cli', 'claude-sonnet-4-5', 'anthropic', {start}.5, 60, {input}, {output}, {read}, {write}, 0, '/home/bench/project-{:02}');
             INSERT INTO session_model_usage VALUES ('h-{i}', 'claude-sonnet-4-5', 'anthropic', '', {input}, {output}, {read}, {write}, 0);
             INSERT INTO session_model_usage VALUES ('h-{i}', 'claude-haiku-4-5', 'anthropic', 'title_generation', 200, 12, 0, 0, 0);\n",
            i % 40
        ));
        last = last.max(at);
        File {
            path: PathBuf::new(),
            text,
            mtime: at,
        }
    });
    for f in files {
        sql.push_str(&f.text);
    }
    sql.push_str("COMMIT;");
    vec![File {
        path: PathBuf::from(".hermes/state.db"),
        text: sql,
        mtime: last,
    }]
}

/// Writes `files` under `home`; returns their bytes.
fn write_all(home: &Path, files: &[File]) -> Result<u64, String> {
    let io = |e: std::io::Error| e.to_string();
    let mut bytes = 0;
    for f in files {
        let path = home.join(&f.path);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(io)?;
        }
        if path.extension().is_some_and(|e| e == "db") {
            let _ = fs::remove_file(&path);
            let db = rusqlite::Connection::open(&path).map_err(|e| e.to_string())?;
            db.execute_batch(&f.text).map_err(|e| e.to_string())?;
            db.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                .map_err(|e| e.to_string())?;
        } else {
            fs::write(&path, &f.text).map_err(io)?;
        }
        set_mtime(&path, f.mtime).map_err(io)?;
        bytes += fs::metadata(&path).map_err(io)?.len();
    }
    Ok(bytes)
}

/// A home to scan: its name, where it is, its bytes.
struct Home {
    name: String,
    dir: PathBuf,
    bytes: u64,
}

pub fn run(bin: &Path, work: &Path, scale: f64, rounds: usize) -> Result<(), String> {
    let now = unix_now()?;
    let _ = fs::remove_dir_all(work);
    let claude_files = ((5000.0 * scale) as usize).max(1);
    let codex_files = ((2000.0 * scale) as usize).max(1);
    let cc = work.join("claude-codex");
    let corpus = generate(&cc, claude_files, codex_files, now)?;
    let all = work.join("all");
    generate(&all, claude_files, codex_files, now)?;
    let mut homes = vec![Home {
        name: "Claude Code + Codex".into(),
        dir: cc.clone(),
        bytes: corpus.bytes,
    }];
    let mut all_bytes = corpus.bytes;
    for (i, (name, generator)) in AGENTS.iter().enumerate() {
        let files = generator(
            &mut Rng(0x5151_aaaa_0000 + i as u64),
            now,
            corpus.bytes / 10,
        );
        let dir = work.join(name);
        let bytes = write_all(&dir, &files)?;
        all_bytes += write_all(&all, &files)?;
        homes.push(Home {
            name: (*name).into(),
            dir,
            bytes,
        });
    }
    homes.push(Home {
        name: "every agent".into(),
        dir: all.clone(),
        bytes: all_bytes,
    });
    // A home with no transcript: the process's fixed cost, taken off each
    // scan's CPU before it is divided by the bytes.
    let empty = work.join("empty");
    fs::create_dir_all(&empty).map_err(|e| e.to_string())?;
    homes.push(Home {
        name: "nothing (fixed cost)".into(),
        dir: empty,
        bytes: 0,
    });
    println!(
        "homes: Claude Code + Codex {:.0} MB; each other agent about a tenth of it; all {:.0} MB",
        corpus.bytes as f64 / 1e6,
        all_bytes as f64 / 1e6
    );
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); homes.len()];
    for _ in 0..rounds {
        for (h, home) in homes.iter().enumerate() {
            let state = work.join("state").join(h.to_string());
            let _ = fs::remove_dir_all(&state);
            runs[h].push(measure(heeler(
                bin,
                &home.dir,
                &state,
                &["usage", "worker"],
            ))?);
        }
    }
    let fixed = runs.last().map(|r| secs(median(r).cpu)).unwrap_or(0.0);
    let per_mb =
        |run: &Run, bytes: u64| (secs(run.cpu) - fixed) * 1e3 / (bytes.max(1) as f64 / 1e6);
    let base = per_mb(&median(&runs[0]), homes[0].bytes);
    println!(
        "cold scan of a home with nothing: {:.1} ms CPU (taken off the others before dividing)",
        fixed * 1e3
    );
    for (home, runs) in homes.iter().zip(&runs).filter(|(h, _)| h.bytes > 0) {
        let m = median(runs);
        println!(
            "cold scan {:<22} {:>7.1} MB  {:>7.3} s CPU  {:>6.2} ms CPU/MB  {:>5.2}x the Claude Code + Codex CPU/MB   (median of {rounds})",
            home.name,
            home.bytes as f64 / 1e6,
            secs(m.cpu),
            per_mb(&m, home.bytes),
            per_mb(&m, home.bytes) / base
        );
    }
    let (cc_state, all_state) = (work.join("state/warm-cc"), work.join("state/warm-all"));
    time(heeler(bin, &cc, &cc_state, &["usage", "worker"]))?;
    time(heeler(bin, &all, &all_state, &["usage", "worker"]))?;
    let views: [&[&str]; 4] = [
        &["usage", "query", "--refresh", "never"],
        &["usage"],
        &["usage", "daily"],
        &["usage", "statusline"],
    ];
    for args in views {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..21 {
            theirs.push(time(heeler(bin, &cc, &cc_state, args))?);
            ours.push(time(heeler(bin, &all, &all_state, args))?);
        }
        ours.sort();
        theirs.sort();
        println!(
            "warm {:<32} every agent {:>9}, Claude Code + Codex {:>9}: {:.2}x   (medians of 21)",
            format!("heeler {}:", args.join(" ")),
            ms(ours[10]),
            ms(theirs[10]),
            ratio(ours[10], theirs[10])
        );
    }
    Ok(())
}

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

/// One generated file: its path below the home, its bytes, its mtime.
struct File {
    path: PathBuf,
    text: Vec<u8>,
    mtime: i64,
}

/// An agent's generator: files of about `bytes` in all, spread over the
/// last 30 days before `now`.
type Generator = fn(&mut Rng, i64, u64) -> Vec<File>;

/// The other agents, each with its generator.
const AGENTS: &[(&str, Generator)] = &[("pi", pi), ("opencode", opencode), ("kilo", kilo)];

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
            text: text.into_bytes(),
            mtime: at + 10,
        }
    })
}

/// opencode: `.local/share/opencode/opencode.db`, its `session`, `message`
/// and `part` tables as opencode's migrations make them
/// (`packages/opencode/src/session/session.sql.ts`): per session, user
/// and assistant messages (`MessageV2.User`, `MessageV2.Assistant`, in
/// `data` without `id` and `sessionID`), each with its text, reasoning,
/// tool and step parts, which make most of a real database's bytes.
fn opencode(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    database(rng, now, bytes, ".local/share/opencode/opencode.db")
}

/// Kilo's CLI: the same tables in `.local/share/kilo/kilo.db`.
fn kilo(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    database(rng, now, bytes, ".local/share/kilo/kilo.db")
}

/// An opencode-shaped database of about `bytes`, as one file (built in
/// WAL mode, then checkpointed and switched back so it is one file).
fn database(rng: &mut Rng, now: i64, bytes: u64, path: &str) -> Vec<File> {
    let scratch = std::env::temp_dir().join(format!(
        "heeler-bench-{}-{}.db",
        std::process::id(),
        path.len()
    ));
    let _ = fs::remove_file(&scratch);
    let built = build_database(rng, now, bytes, &scratch);
    let text = built.and_then(|()| fs::read(&scratch).map_err(|e| e.to_string()));
    let _ = fs::remove_file(&scratch);
    match text {
        Ok(text) => vec![File {
            path: PathBuf::from(path),
            text,
            mtime: now - 60,
        }],
        Err(e) => {
            eprintln!("bench: the {path} database could not be built: {e}");
            Vec::new()
        }
    }
}

fn build_database(rng: &mut Rng, now: i64, bytes: u64, path: &Path) -> Result<(), String> {
    let e = |e: rusqlite::Error| e.to_string();
    let db = rusqlite::Connection::open(path).map_err(e)?;
    db.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT NOT NULL, title TEXT NOT NULL,
             time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
             time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
         CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
             time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
         CREATE INDEX part_message_id_id_idx ON part (message_id, id);
         BEGIN;",
    )
    .map_err(e)?;
    let span = 30 * 86_400 - 3_600;
    let (mut written, mut i) = (0u64, 0i64);
    while written < bytes {
        let start = now - span + ((i * 7_919) % span);
        written += insert_session(&db, rng, i, start)?;
        i += 1;
    }
    db.execute_batch("COMMIT; PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;")
        .map_err(e)
}

/// Session `i`, started at Unix second `start`, with its messages and
/// parts; returns the bytes of `data` written.
fn insert_session(
    db: &rusqlite::Connection,
    rng: &mut Rng,
    i: i64,
    start: i64,
) -> Result<u64, String> {
    let e = |e: rusqlite::Error| e.to_string();
    let mut written = 0u64;
    let session = format!("ses_{i:06}");
    let cwd = format!("/home/bench/project-{:02}", i % 40);
    db.execute(
        "INSERT INTO session VALUES (?1, ?2, 'bench', ?3, ?3)",
        rusqlite::params![session, cwd, start * 1000],
    )
    .map_err(e)?;
    let mut at = start * 1000;
    for n in 0..(20 + rng.below(30)) {
        at += 30_000;
        let user = format!(
            r#"{{"role":"user","time":{{"created":{at}}},"agent":"build","model":{{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}}}"#
        );
        let (input, output, read, write) = (
            rng.below(500) + 1,
            rng.below(2_000) + 1,
            rng.below(60_000),
            rng.below(3_000),
        );
        let assistant = format!(
            r#"{{"parentID":"msg_{i}_{n}_u","role":"assistant","mode":"build","agent":"build","path":{{"cwd":"{cwd}","root":"{cwd}"}},"cost":0.01,"tokens":{{"total":{},"input":{input},"output":{output},"reasoning":0,"cache":{{"read":{read},"write":{write}}}}},"modelID":"claude-sonnet-4-5","providerID":"anthropic","time":{{"created":{},"completed":{}}},"finish":"tool-calls"}}"#,
            input + output + read + write,
            at + 1_000,
            at + 9_000
        );
        let parts = [
            format!(r#"{{"type":"text","text":"{}"}}"#, rng.text(300)),
            format!(
                r#"{{"type":"step-start","snapshot":"{:040x}"}}"#,
                rng.below(u64::MAX)
            ),
            format!(
                r#"{{"type":"tool","callID":"call_{i}_{n}","tool":"read","state":{{"status":"completed","input":{{"filePath":"{cwd}/src/lib.rs"}},"output":"{}","title":"src/lib.rs","metadata":{{}},"time":{{"start":{at},"end":{at}}}}}}}"#,
                rng.text(1_200)
            ),
            format!(r#"{{"type":"text","text":"{}"}}"#, rng.text(400)),
        ];
        for (id, data) in [
            (format!("msg_{i}_{n}_u"), user),
            (format!("msg_{i}_{n}_a"), assistant),
        ] {
            written += data.len() as u64;
            db.execute(
                "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
                rusqlite::params![id, session, at, data],
            )
            .map_err(e)?;
        }
        for (k, data) in parts.iter().enumerate() {
            written += data.len() as u64;
            db.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![
                    format!("prt_{i}_{n}_{k}"),
                    format!("msg_{i}_{n}_a"),
                    session,
                    at,
                    data
                ],
            )
            .map_err(e)?;
        }
    }
    Ok(written)
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
        fs::write(&path, &f.text).map_err(io)?;
        set_mtime(&path, f.mtime).map_err(io)?;
        bytes += f.text.len() as u64;
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

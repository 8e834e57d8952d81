//! Kimi CLI's and Copilot CLI's files under random steps: appended lines
//! (some torn, completed by a later step), rewrites, deletions, a Kimi
//! `/fork` (its copied lines and `state.json`), a Copilot export file a
//! variable names; after each step an incremental refresh (index and
//! aggregate state round-tripped through their files, as the worker does)
//! must equal a scan from an empty cache.

use crate::usage_fixture;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use heeler::usage::aggregate::incremental::State;
use heeler::usage::cache::Index;
use heeler::usage::event::Agent;
use heeler::usage::pricing::PriceTable;
use heeler::usage::store::index::Store;
use heeler::usage::store::state::StateStore;
use heeler::usage::worker::{self, Roots};
use usage_fixture::*;

use crate::common::Xorshift as Rng;
use crate::depth;

fn kimi_path(home: &Path, n: u64) -> PathBuf {
    let sub = if n == 3 { "/subagents/a-3" } else { "" };
    home.join(format!(
        ".kimi/sessions/3f2b6c1d/s-{}{sub}/wire.jsonl",
        n % 3
    ))
}

fn copilot_path(home: &Path, n: u64) -> PathBuf {
    match n {
        2 => home.join("exports/cli.jsonl"),
        n => home.join(format!(".copilot/otel/copilot-otel-{n}.jsonl")),
    }
}

/// One Kimi step's `StatusUpdate`, or (one in five) a subagent's event.
fn kimi_line(rng: &mut Rng, at: i64) -> String {
    let (other, output, read, creation) = (
        1 + rng.below(900),
        rng.below(300),
        rng.below(4) * 1_000,
        rng.below(2) * 64,
    );
    let usage = format!(
        r#""token_usage": {{"input_other": {other}, "output": {output}, "input_cache_read": {read}, "input_cache_creation": {creation}}}, "message_id": "m{}""#,
        rng.next() as u32
    );
    if rng.below(5) == 0 {
        let who = ["\"task_tool_call_id\": \"t\"", "\"agent_id\": \"a-3\""][rng.below(2) as usize];
        return format!(
            r#"{{"timestamp": {at}.5, "message": {{"type": "SubagentEvent", "payload": {{{who}, "event": {{"type": "StatusUpdate", "payload": {{{usage}}}}}}}}}}}"#
        );
    }
    format!(
        r#"{{"timestamp": {at}.25, "message": {{"type": "StatusUpdate", "payload": {{"context_usage": 0.1, {usage}}}}}}}"#
    )
}

/// One Copilot chat span (span ids from a small pool: a re-export).
fn copilot_line(rng: &mut Rng, at: i64) -> String {
    let models = ["claude-haiku-4.5", "gpt-5", "copilot-mystery-1"];
    let (read, creation) = (rng.below(3) * 500, rng.below(2) * 100);
    let input = read + creation + rng.below(400);
    format!(
        r#"{{"type":"span","name":"chat","traceId":"t{}","spanId":"s{}","startTime":[{},0],"endTime":[{at},5],"attributes":{{"gen_ai.operation.name":"chat","gen_ai.conversation.id":"c{}","gen_ai.response.model":"{}","gen_ai.usage.input_tokens":{input},"gen_ai.usage.output_tokens":{},"gen_ai.usage.cache_read.input_tokens":{read},"gen_ai.usage.cache_creation.input_tokens":{creation}}}}}"#,
        rng.below(3),
        rng.below(12),
        at - 2,
        rng.below(2),
        models[rng.below(3) as usize],
        rng.below(200),
    )
}

fn text_of(rng: &mut Rng, now: i64, count: u64, line: fn(&mut Rng, i64) -> String) -> String {
    let start = now - 3 * HOUR - rng.below(HOUR as u64) as i64;
    let list: Vec<String> = (0..count)
        .map(|k| line(rng, start + k as i64 * 60))
        .collect();
    lines(&list)
}

fn append(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).unwrap();
    }
    fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

/// A `/fork` of session 0 into a new session (`fork_session`): its
/// complete lines copied, then the fork's `state.json` with its title and
/// the copy's time.
fn fork(home: &Path, now: i64, k: u64) {
    let Ok(text) = fs::read_to_string(kimi_path(home, 0)) else {
        return;
    };
    let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let wire = home.join(format!(".kimi/sessions/3f2b6c1d/f-{k}/wire.jsonl"));
    write(&wire, complete);
    let title = r#""custom_title": "Fork: Untitled""#;
    let state = format!("{{{title}, \"wire_mtime\": {}.9}}", now - 30);
    write(&wire.with_file_name("state.json"), &state);
    // The fork's own step, later.
    append(
        &wire,
        &format!("{}\n", kimi_line(&mut Rng(k + 1), now - 10)),
    );
}

/// One random step on the files; what it did.
fn step(rng: &mut Rng, home: &Path, now: i64, k: u64) -> &'static str {
    let n = rng.below(4);
    match rng.below(8) {
        0 | 1 => {
            append(
                &kimi_path(home, n),
                &format!("{}\n", kimi_line(rng, now - 60)),
            );
            "append kimi"
        }
        2 => {
            // Half a line: torn until a later append completes it.
            let line = kimi_line(rng, now - 50);
            let (a, b) = line.split_at(line.len() / 2);
            append(&kimi_path(home, n), a);
            append(&kimi_path(home, n), if rng.below(2) == 0 { "" } else { b });
            "append kimi, maybe torn"
        }
        3 => {
            write(&kimi_path(home, n), &text_of(rng, now, 3, kimi_line));
            "rewrite kimi"
        }
        4 => {
            fork(home, now, k);
            "fork kimi"
        }
        5 => {
            let path = copilot_path(home, n % 3);
            append(&path, &format!("{}\n", copilot_line(rng, now - 40)));
            "append copilot"
        }
        6 => {
            let path = copilot_path(home, n % 3);
            let line = copilot_line(rng, now - 30);
            append(&path, &line[..line.len() * rng.below(4) as usize / 3]);
            "append copilot, maybe torn"
        }
        _ => {
            let _ = fs::remove_file(kimi_path(home, n));
            let _ = fs::remove_file(copilot_path(home, rng.below(3)));
            "delete"
        }
    }
}

fn run(seed: u64) -> (u64, u64) {
    // Calls seen by a scan from scratch, per agent: the steps must count.
    let mut calls = [0usize; 2];
    let home = temp_dir(&format!("usage-incremental-kimicop-{seed}"));
    let prices = PriceTable::bundled().unwrap();
    let mut rng = Rng(seed);
    let now = NOW;
    for n in 0..2 {
        write(&kimi_path(&home, n), &text_of(&mut rng, now, 3, kimi_line));
        write(
            &copilot_path(&home, n),
            &text_of(&mut rng, now, 3, copilot_line),
        );
    }
    let export = copilot_path(&home, 2).display().to_string();
    let var = move |k: &str| (k == "COPILOT_OTEL_FILE_EXPORTER_PATH").then(|| export.clone());
    let state_dir = temp_dir(&format!("usage-incremental-kimicop-state-{seed}"));
    let mut store = Store::in_dir(&state_dir);
    let mut state_store = StateStore::in_dir(&state_dir);
    if seed % 2 == 1 {
        store.min_journal = 0;
        store.min_dead = 0;
        state_store.min_journal = 0;
    }
    let (mut incremental, mut steps) = (0, 0);
    for k in 0..40 {
        let what = step(&mut rng, &home, now, k);
        // The export file is a root only once it exists.
        let roots = Roots::resolve(&home, &var);
        let (mut index, loaded) = store.load();
        let mut state = state_store.load();
        let options = worker::ScanOptions {
            threads: 2,
            ..worker::ScanOptions::new(&prices, now)
        };
        let found = worker::discover(&roots);
        let result = worker::scan_with_state(&mut index, &mut state, &roots, found, &options);
        let keys: Vec<&str> = result.changed_keys.iter().map(String::as_str).collect();
        store.save(&mut index, &keys, loaded).unwrap();
        let state = state.as_mut().unwrap();
        state_store.save(state).unwrap();
        let mut scratch = Index::default();
        let mut expected = worker::scan_with_state(
            &mut scratch,
            &mut None,
            &roots,
            worker::discover(&roots),
            &options,
        );
        scratch.materialize();
        for e in scratch.files.values() {
            let agent = [Agent::Kimi, Agent::Copilot]
                .iter()
                .position(|a| *a == e.agent);
            if let Some(i) = agent {
                calls[i] += e.parse.events.len();
            }
        }
        expected.snapshot.aggregate = result.snapshot.aggregate;
        let (_, stored) = state_store
            .load_from(i64::MIN, heeler::usage::store::state::Tables::Both)
            .unwrap();
        let rebuilt = State::full(&scratch, &prices, worker::history_start(now, 30));
        assert_eq!(
            stored, rebuilt.detailed,
            "seed {seed} step {k} ({what}): the stored history differs"
        );
        assert_eq!(
            result.snapshot, expected.snapshot,
            "seed {seed} step {k} ({what}): incremental != from scratch"
        );
        steps += 1;
        incremental += u64::from(result.incremental);
    }
    let _ = fs::remove_dir_all(&home);
    let _ = fs::remove_dir_all(&state_dir);
    assert!(calls.iter().all(|&n| n > 0), "seed {seed}: calls {calls:?}");
    (incremental, steps)
}

#[test]
fn kimi_and_copilot_refreshes_equal_a_scan_from_scratch() {
    let (mut incremental, mut steps) = (0, 0);
    let seeds = [3, 8, 77, 4_242];
    for &seed in &seeds[..depth::rounds(2, seeds.len())] {
        let (i, s) = run(seed);
        incremental += i;
        steps += s;
    }
    println!("{incremental} of {steps} refreshes were incremental");
    assert!(
        incremental * 3 >= steps,
        "only {incremental} of {steps} refreshes were incremental"
    );
}

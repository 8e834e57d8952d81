//! Gemini CLI and Qwen Code end to end: session files as their writers
//! make them (google-gemini/gemini-cli and QwenLM/qwen-code,
//! `packages/core/src/services/chatRecordingService.ts`) in a scratch
//! home, the built binary's views (totals and prices by hand, unpriced
//! models named), and random sequences of appends, rewrites, resumes,
//! branches and deletions whose incremental refresh must equal a scan
//! from scratch after every step.

use crate::usage_fixture;
use crate::usage_views::{heeler, settle};

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use heeler::base::json::{self, Value};
use heeler::usage::aggregate::incremental::State;
use heeler::usage::cache::Index;
use heeler::usage::pricing::PriceTable;
use heeler::usage::store::index::Store;
use heeler::usage::store::state::StateStore;
use heeler::usage::worker::{self, Roots, ScanResult};
use usage_fixture::*;

use crate::common::Xorshift as Rng;
use crate::depth;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The `models` view's JSON document for one agent, after a worker run.
fn models(home: &Path, agent: &str) -> Value {
    let worker = heeler(home, &["usage", "worker"]);
    assert!(worker.status.success(), "{worker:?}");
    let out = heeler(home, &["usage", "models", "--agent", agent, "--json"]);
    settle(home);
    assert!(out.status.success(), "{out:?}");
    json::parse(String::from_utf8(out.stdout).unwrap().trim_end()).unwrap()
}

/// The summary's coverage of `agent`, and what the app's query says.
fn coverage_and_query(home: &Path, agent: &str) -> (Value, String) {
    let summary = heeler(home, &["usage", "--json"]);
    settle(home);
    let summary = json::parse(String::from_utf8(summary.stdout).unwrap().trim_end()).unwrap();
    let coverage = summary.get("coverage").unwrap().get(agent).unwrap().clone();
    let query = heeler(home, &["usage", "query"]);
    settle(home);
    (coverage, String::from_utf8(query.stdout).unwrap())
}

/// A Gemini CLI message record (`newMessage`, its `tokens` a
/// `TokensSummary` from `recordMessageTokens`): [input, output, cached,
/// thoughts, tool].
fn gemini_message(id: &str, at: &str, model: &str, t: [u64; 5]) -> String {
    let [input, output, cached, thoughts, tool] = t;
    format!(
        r#"{{"id":"{id}","timestamp":"{at}","type":"gemini","content":[{{"text":"done"}}],"thoughts":[],"tokens":{{"input":{input},"output":{output},"cached":{cached},"thoughts":{thoughts},"tool":{tool},"total":{}}},"model":"{model}"}}"#,
        input + output + thoughts + tool
    )
}

/// A `.jsonl` log's first line (`initialize`'s `initialMetadata`).
fn gemini_meta(session: &str, start: &str, updated: &str, kind: &str) -> String {
    format!(
        r#"{{"sessionId":"{session}","projectHash":"3f9a1c2b","startTime":"{start}","lastUpdated":"{updated}","kind":"{kind}"}}"#
    )
}

/// A legacy `.json` session (`JSON.stringify(conversation, null, 2)`).
fn gemini_legacy(session: &str, start: &str, updated: &str, messages: &[String]) -> String {
    format!(
        "{{\n  \"sessionId\": \"{session}\",\n  \"projectHash\": \"3f9a1c2b\",\n  \"startTime\": \"{start}\",\n  \"lastUpdated\": \"{updated}\",\n  \"messages\": [\n    {}\n  ]\n}}",
        messages.join(",\n    ")
    )
}

#[test]
fn gemini_sessions_show_in_the_views_unpriced_and_counted_once() {
    let home = temp_dir("views-gemini");
    let start = now() - 3 * HOUR;
    // The project registry's directory, its `.project_root` the path.
    let chats = home.join(".gemini/tmp/gproj/chats");
    write(
        &home.join(".gemini/tmp/gproj/.project_root"),
        "/home/dev/gproj",
    );
    let m1 = gemini_message(
        "m1",
        &ts(start + 5),
        "gemini-2.5-pro",
        [10_000, 800, 8_000, 200, 0],
    );
    let m2 = gemini_message(
        "m2",
        &ts(start + 540),
        "gemini-2.5-pro",
        [12_000, 100, 0, 0, 0],
    );
    let updated = ts(start + 600);
    // A legacy session, then its resume: the `.json` kept, its metadata
    // and messages copied into the `.jsonl`, then a new response.
    write(
        &chats.join("session-2026-12-04T10-00-aaaa1111.json"),
        &gemini_legacy("g-1", &ts(start), &updated, &[m1.clone(), m2.clone()]),
    );
    write(
        &chats.join("session-2026-12-04T10-00-aaaa1111.jsonl"),
        &lines(&[
            gemini_meta("g-1", &ts(start), &updated, "main"),
            m1,
            m2,
            r#"{"$set":{"sessionId":"g-1"}}"#.into(),
            gemini_message("m3", &ts(start + HOUR), "gemini-2.5-pro", [500, 5, 0, 0, 0]),
        ]),
    );
    // A session written since the JSONL migration: a response appended
    // before its tokens arrive, then again with them.
    let at = ts(start + 2 * HOUR);
    write(
        &chats.join("session-2026-12-04T12-00-bbbb2222.jsonl"),
        &lines(&[
            gemini_meta(
                "g-2",
                &ts(start + 2 * HOUR - 60),
                &ts(start + 2 * HOUR - 60),
                "main",
            ),
            format!(
                r#"{{"id":"m4","timestamp":"{at}","type":"gemini","content":[],"tokens":null,"model":"gemini-2.5-flash"}}"#
            ),
            gemini_message("m4", &at, "gemini-2.5-flash", [3_000, 70, 0, 30, 20]),
        ]),
    );
    // A subagent's own file, under its parent's id.
    write(
        &chats.join("g-2/g-2-explorer-1.jsonl"),
        &lines(&[
            gemini_meta(
                "g-2-explorer-1",
                &ts(start + 2 * HOUR),
                &ts(start + 2 * HOUR),
                "subagent",
            ),
            gemini_message(
                "s1",
                &ts(start + 2 * HOUR + 30),
                "gemini-2.5-flash",
                [1_000, 10, 0, 0, 0],
            ),
        ]),
    );
    // The activity log is not a session, whatever it holds.
    write(
        &home.join(".gemini/tmp/gproj/logs/session-0f6e2c1a-5b1d-4c1e-9d35-2a7c3e1f9b10.jsonl"),
        &lines(&[gemini_message(
            "x1",
            &ts(start + 10),
            "gemini-2.5-pro",
            [9_999, 9, 0, 0, 0],
        )]),
    );

    let doc = models(&home, "gemini");
    let totals = doc.get("totals").unwrap();
    let int = |k: &str| totals.get(k).and_then(Value::as_i64);
    // By hand: m1 input 10,000 - 8,000 = 2,000, output 800 + 200 = 1,000;
    // m2 12,000 and 100; m3 500 and 5 (the `.jsonl`'s m1 and m2 are the
    // resume's copy); m4 3,000 + 20 tool-use = 3,020 and 70 + 30 = 100;
    // the subagent's 1,000 and 10. Five calls, input 18,520, output
    // 1,215, cache reads 8,000.
    assert_eq!(int("requests"), Some(5));
    assert_eq!(int("input"), Some(18_520));
    assert_eq!(int("output"), Some(1_215));
    assert_eq!(int("cache_read"), Some(8_000));
    assert_eq!(int("cache_write_5m"), Some(0));
    // The bundled table has no Gemini model: every call unpriced and
    // named, none priced at $0.
    assert_eq!(int("unpriced_requests"), Some(5));
    let cost = totals
        .get("cost_usd")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    assert_eq!(cost, 0.0);
    let unpriced = doc.get("unpriced_models").unwrap().to_json();
    for model in ["gemini-2.5-pro", "gemini-2.5-flash"] {
        assert!(
            unpriced.contains(&format!(r#""agent":"gemini","model":"{model}""#)),
            "{unpriced}"
        );
    }

    // Every call in the project's directory.
    let dirs = heeler(&home, &["usage", "dirs", "--agent", "gemini", "--json"]);
    settle(&home);
    let dirs = String::from_utf8(dirs.stdout).unwrap();
    assert!(dirs.contains("/home/dev/gproj"), "{dirs}");

    let (coverage, query) = coverage_and_query(&home, "gemini");
    let root = home.join(".gemini").display().to_string();
    assert_eq!(
        coverage.get("roots").unwrap().to_json(),
        format!("[\"{root}\"]")
    );
    assert_eq!(coverage.get("files_seen").and_then(Value::as_i64), Some(4));
    for absent in ["gemini-2.5", "gproj", r#""gemini""#] {
        assert!(!query.contains(absent), "{absent} in the query: {query}");
    }
}

/// A Qwen Code assistant record (`recordAssistantTurn`), its
/// `usageMetadata` as `convertOpenAIResponseToLlm` makes it from an
/// OpenAI-compatible usage: [prompt, completion, cached, reasoning].
fn qwen_assistant(uuid: &str, session: &str, at: i64, model: &str, u: [u64; 4]) -> String {
    let [prompt, completion, cached, reasoning] = u;
    format!(
        r#"{{"uuid":"{uuid}","parentUuid":null,"sessionId":"{session}","timestamp":"{}","type":"assistant","cwd":"/home/dev/qproj","version":"0.9.0","model":"{model}","message":{{"role":"model","parts":[{{"text":"done"}}]}},"usageMetadata":{{"promptTokenCount":{prompt},"candidatesTokenCount":{completion},"totalTokenCount":{},"cachedContentTokenCount":{cached},"thoughtsTokenCount":{reasoning}}}}}"#,
        ts(at),
        prompt + completion
    )
}

/// The record `/branch` writes for a parent's: `forkedFrom` added.
fn branched(record: &str, parent: &str, uuid: &str) -> String {
    record.replacen(
        r#""uuid""#,
        &format!(r#""forkedFrom":{{"sessionId":"{parent}","messageUuid":"{uuid}"}},"uuid""#),
        1,
    )
}

#[test]
fn qwen_sessions_show_in_the_views_priced_where_the_table_has_the_model() {
    let home = temp_dir("views-qwen");
    let start = now() - 3 * HOUR;
    let chats = home.join(".qwen/projects/-home-dev-qproj/chats");
    let a1 = qwen_assistant(
        "a1",
        "q-1",
        start + 60,
        "qwen3-coder-plus",
        [12_000, 900, 10_000, 300],
    );
    write(
        &chats.join("q-1.jsonl"),
        &lines(&[
            format!(
                r#"{{"uuid":"u1","parentUuid":null,"sessionId":"q-1","timestamp":"{}","type":"user","cwd":"/home/dev/qproj","version":"0.9.0","message":{{"role":"user","parts":[{{"text":"go"}}]}}}}"#,
                ts(start)
            ),
            a1.clone(),
            qwen_assistant("a2", "q-1", start + 120, "gpt-5", [2_000, 500, 1_000, 100]),
            format!(
                r#"{{"uuid":"t1","parentUuid":"a2","sessionId":"q-1","timestamp":"{}","type":"system","subtype":"ui_telemetry","cwd":"/home/dev/qproj","version":"0.9.0","systemPayload":{{"uiEvent":{{"event.name":"qwen-code.api_response","input_token_count":2000}}}}}}"#,
                ts(start + 120)
            ),
        ]),
    );
    // `/branch` of q-1: its records copied with `forkedFrom`, then its own.
    write(
        &chats.join("q-2.jsonl"),
        &lines(&[
            branched(&a1.replace("\"q-1\"", "\"q-2\""), "q-1", "a1"),
            qwen_assistant("b1", "q-2", start + 600, "gpt-5", [300, 100, 0, 0]),
        ]),
    );

    let doc = models(&home, "qwen");
    let totals = doc.get("totals").unwrap();
    let int = |k: &str| totals.get(k).and_then(Value::as_i64);
    // By hand: a1 input 12,000 - 10,000 = 2,000, output 900 (its 300
    // reasoning inside); a2 1,000, cache reads 1,000, output 500; b1 300
    // and 100 (the branch's a1 is q-1's). Three calls, input 3,300,
    // cache reads 11,000, output 1,500.
    assert_eq!(int("requests"), Some(3));
    assert_eq!(int("input"), Some(3_300));
    assert_eq!(int("cache_read"), Some(11_000));
    assert_eq!(int("output"), Some(1_500));
    // GPT-5 in the bundled table: input $1.25e-6, cache reads $1.25e-7,
    // output $1e-5 a token: a2 0.00125 + 0.000125 + 0.005 = 0.006375,
    // b1 0.000375 + 0.001 = 0.001375; 0.00775 in all. qwen3-coder-plus
    // is not in the table: unpriced and named.
    let cost = totals.get("cost_usd").and_then(Value::as_f64).unwrap();
    assert!((cost - 0.007_75).abs() < 1e-9, "{cost}");
    assert_eq!(int("unpriced_requests"), Some(1));
    let unpriced = doc.get("unpriced_models").unwrap().to_json();
    assert!(
        unpriced.contains(r#""agent":"qwen","model":"qwen3-coder-plus""#),
        "{unpriced}"
    );

    let (coverage, query) = coverage_and_query(&home, "qwen");
    let root = home.join(".qwen").display().to_string();
    assert_eq!(
        coverage.get("roots").unwrap().to_json(),
        format!("[\"{root}\"]")
    );
    assert_eq!(coverage.get("files_seen").and_then(Value::as_i64), Some(2));
    for absent in ["qwen3-coder-plus", "qproj", r#""qwen""#] {
        assert!(!query.contains(absent), "{absent} in the query: {query}");
    }
}

fn gemini_path(home: &Path, n: u64, ext: &str) -> PathBuf {
    home.join(format!(
        ".gemini/tmp/3f9a1c2b/chats/session-2026-11-29T08-0{n}-g000000{n}.{ext}"
    ))
}

fn qwen_path(home: &Path, n: u64) -> PathBuf {
    home.join(format!(".qwen/projects/-home-dev-qproj/chats/q-{n}.jsonl"))
}

/// A random Gemini message of session `n` (ids from a small pool, so a
/// message is re-appended as the writer does when it changes).
fn gemini_random(rng: &mut Rng, n: u64, at: i64) -> String {
    let models = ["gemini-2.5-pro", "gemini-2.5-flash"];
    gemini_message(
        &format!("g{n}m{}", rng.below(6)),
        &ts(at),
        models[rng.below(2) as usize],
        [
            1 + rng.below(900),
            rng.below(90),
            rng.below(2) * 100,
            rng.below(20),
            rng.below(3),
        ],
    )
}

fn qwen_random(rng: &mut Rng, n: u64, at: i64) -> String {
    let models = ["qwen3-coder-plus", "gpt-5"];
    qwen_assistant(
        &format!("q{n}a{:08x}", rng.next() as u32),
        &format!("q-{n}"),
        at,
        models[rng.below(2) as usize],
        [
            1 + rng.below(900),
            rng.below(90),
            rng.below(2) * 50,
            rng.below(10),
        ],
    )
}

fn append(path: &Path, text: &str) {
    fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

/// One random change to the Gemini files: a message appended to a log, a
/// legacy document rewritten grown, a legacy session resumed into a log
/// (its copy), or a file deleted.
fn gemini_step(rng: &mut Rng, home: &Path, now: i64) -> &'static str {
    let n = rng.below(3);
    let (json, log) = (gemini_path(home, n, "json"), gemini_path(home, n, "jsonl"));
    let start = now - 5 * HOUR;
    match rng.below(5) {
        0 | 1 if log.exists() => {
            let at = now - 60 - rng.below(600) as i64;
            append(&log, &format!("{}\n", gemini_random(rng, n, at)));
            "append gemini"
        }
        0..=2 => {
            let count = 1 + rng.below(4) as i64;
            let messages: Vec<String> = (0..count)
                .map(|k| gemini_random(rng, n, start + k * 60))
                .collect();
            write(
                &json,
                &gemini_legacy(&format!("g-{n}"), &ts(start), &ts(start + HOUR), &messages),
            );
            "rewrite gemini"
        }
        3 => {
            // `initialize` with the `.json`: its metadata and messages
            // into the `.jsonl`, appended to whatever is there.
            let mut list = vec![gemini_meta(
                &format!("g-{n}"),
                &ts(start),
                &ts(start + HOUR),
                "main",
            )];
            for k in 0..2 {
                list.push(gemini_random(rng, n, start + k * 60));
            }
            list.push(gemini_random(rng, n, now - 30));
            if log.exists() {
                append(&log, &lines(&list));
            } else {
                write(&log, &lines(&list));
            }
            "resume gemini"
        }
        _ => {
            let _ = fs::remove_file(if rng.below(2) == 0 { json } else { log });
            "delete gemini"
        }
    }
}

/// One random change to the Qwen files: a record appended (sometimes
/// torn, completed by a later step), a branch of q-0 written, or a file
/// deleted.
fn qwen_step(
    rng: &mut Rng,
    home: &Path,
    now: i64,
    torn: &mut Option<(PathBuf, String)>,
) -> &'static str {
    if let Some((path, rest)) = torn.take() {
        if path.exists() {
            append(&path, &rest);
        }
        return "complete qwen";
    }
    let n = rng.below(3);
    let path = qwen_path(home, n);
    match rng.below(5) {
        0 | 1 => {
            let line = format!("{}\n", qwen_random(rng, n, now - 60));
            if !path.exists() {
                write(&path, &line);
            } else if rng.below(3) == 0 {
                let cut = line.len() / 2;
                append(&path, &line[..cut]);
                *torn = Some((path, line[cut..].to_string()));
            } else {
                append(&path, &line);
            }
            "append qwen"
        }
        2 | 3 if n != 0 => {
            // `/branch` of q-0: its assistant records with `forkedFrom`.
            let parent = fs::read_to_string(qwen_path(home, 0)).unwrap_or_default();
            let mut list: Vec<String> = parent
                .lines()
                .filter(|l| l.ends_with('}'))
                .map(|l| branched(l, "q-0", "copied"))
                .collect();
            list.push(qwen_random(rng, n, now - 30));
            write(&path, &lines(&list));
            "branch qwen"
        }
        _ => {
            let _ = fs::remove_file(&path);
            "delete qwen"
        }
    }
}

fn fresh_into(index: &mut Index, home: &Path, now: i64) -> ScanResult {
    let roots = Roots::resolve(home, &|_| None);
    let prices = PriceTable::bundled().unwrap();
    let options = worker::ScanOptions {
        threads: 2,
        ..worker::ScanOptions::new(&prices, now)
    };
    worker::scan_with_state(index, &mut None, &roots, worker::discover(&roots), &options)
}

fn run(seed: u64) -> (u64, u64) {
    let home = temp_dir(&format!("usage-gemini-qwen-{seed}"));
    let state_dir = temp_dir(&format!("usage-gemini-qwen-state-{seed}"));
    let prices = PriceTable::bundled().unwrap();
    let mut rng = Rng(seed);
    let mut now = NOW;
    fs::create_dir_all(home.join(".gemini/tmp")).unwrap();
    fs::create_dir_all(home.join(".qwen/projects")).unwrap();
    let roots = Roots::resolve(&home, &|_| None);
    let store = Store::in_dir(&state_dir);
    let state_store = StateStore::in_dir(&state_dir);
    let mut torn = None;
    let (mut incremental, mut steps, mut counted) = (0, 0, 0);
    for step in 0..30 {
        let what = match rng.below(5) {
            0 | 1 => gemini_step(&mut rng, &home, now),
            2 | 3 => qwen_step(&mut rng, &home, now, &mut torn),
            _ => {
                now += HOUR;
                "advance now"
            }
        };
        let (mut index, loaded) = store.load();
        let mut state = state_store.load();
        let options = worker::ScanOptions {
            threads: 2,
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
        state_store.save(state.as_mut().unwrap()).unwrap();
        let mut scratch = Index::default();
        let mut expected = fresh_into(&mut scratch, &home, now);
        scratch.materialize();
        expected.snapshot.aggregate = result.snapshot.aggregate;
        assert_eq!(
            result.snapshot, expected.snapshot,
            "seed {seed} step {step} ({what}): incremental != from scratch"
        );
        let (_, stored) = state_store
            .load_from(i64::MIN, heeler::usage::store::state::Tables::Both)
            .unwrap();
        let rebuilt = State::full(&scratch, &prices, worker::history_start(now, 30));
        assert_eq!(
            stored, rebuilt.detailed,
            "seed {seed} step {step} ({what}): the stored history differs"
        );
        steps += 1;
        incremental += u64::from(result.incremental);
        counted += u64::from(!result.snapshot.slots.is_empty());
    }
    // The sequence must count calls, not only compare empty snapshots.
    assert!(
        counted * 2 >= steps,
        "seed {seed}: {counted} of {steps} steps counted calls"
    );
    (incremental, steps)
}

#[test]
fn gemini_and_qwen_refreshes_equal_a_scan_from_scratch() {
    let (mut incremental, mut steps) = (0, 0);
    let seeds = [3, 11, 4_242, 65_537];
    for &seed in &seeds[..depth::rounds(2, seeds.len())] {
        let (i, s) = run(seed);
        incremental += i;
        steps += s;
    }
    println!("{incremental} of {steps} refreshes were incremental");
    assert!(
        incremental * 3 >= steps,
        "only {incremental} of {steps} were incremental"
    );
}

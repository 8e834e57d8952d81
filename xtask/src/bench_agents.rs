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
const AGENTS: &[(&str, Generator)] = &[
    ("pi", pi),
    ("opencode", opencode),
    ("gemini", gemini),
    ("qwen", qwen),
    ("amp", amp),
    ("droid", droid),
    ("kimi", kimi),
    ("copilot", copilot),
    ("kilo", kilo),
    ("cline", cline),
    ("devin", devin),
    ("hermes", hermes),
];

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

/// One Gemini CLI message record (`ChatRecordingService.newMessage`):
/// a user's, or a response's with its `TokensSummary` (`None`: appended
/// before its tokens arrive).
fn gemini_record(rng: &mut Rng, id: &str, at: i64, tokens: Option<[u64; 4]>) -> String {
    let Some([input, output, cached, thoughts]) = tokens else {
        let user = rng.text(300);
        return format!(
            r#"{{"id":"{id}","timestamp":"{}","type":"user","content":[{{"text":"{user}"}}]}}"#,
            ts(at)
        );
    };
    let answer = rng.text(400);
    format!(
        r#"{{"id":"{id}","timestamp":"{}","type":"gemini","content":[{{"text":"{answer}"}}],"thoughts":[{{"subject":"Plan","description":"{}","timestamp":"{}"}}],"tokens":{{"input":{input},"output":{output},"cached":{cached},"thoughts":{thoughts},"tool":0,"total":{}}},"model":"gemini-2.5-pro"}}"#,
        ts(at),
        rng.text(80),
        ts(at),
        input + output + thoughts
    )
}

/// Gemini CLI: `.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`
/// (google-gemini/gemini-cli `chatRecordingService.ts`): a metadata line,
/// then records appended, each response twice (before and after its
/// tokens) and `$set` updates; every fourth session a legacy `.json`
/// document of the same messages; each project's `.project_root`.
fn gemini(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    // Each project's `.project_root` (its registry's ownership marker).
    let roots = (0..40).map(|p| File {
        path: PathBuf::from(format!(".gemini/tmp/project-{p:02}/.project_root")),
        text: format!("/home/bench/project-{p:02}").into_bytes(),
        mtime: now - 30 * 86_400,
    });
    let mut files: Vec<File> = roots.collect();
    files.extend(sessions(now, bytes, |i, start| {
        let mut records = Vec::new();
        let mut at = start;
        for n in 0..(20 + rng.below(30)) {
            at += 30;
            records.push(gemini_record(rng, &format!("u{i}-{n}"), at, None));
            let tokens = [
                rng.below(60_000) + 500,
                rng.below(2_000) + 1,
                rng.below(40_000),
                rng.below(500),
            ];
            let id = format!("m{i}-{n}");
            if i % 4 != 0 {
                let bare = gemini_record(rng, &id, at + 10, Some(tokens));
                let (head, _) = bare.split_at(bare.find(r#""tokens""#).unwrap_or(0));
                records.push(format!(r#"{head}"tokens":null,"model":"gemini-2.5-pro"}}"#));
            }
            records.push(gemini_record(rng, &id, at + 10, Some(tokens)));
            if i % 4 != 0 {
                records.push(format!(r#"{{"$set":{{"lastUpdated":"{}"}}}}"#, ts(at + 10)));
            }
        }
        let (first, last) = (ts(start), ts(at + 10));
        let (ext, text) = if i % 4 == 0 {
            let doc = format!(
                "{{\n  \"sessionId\": \"g-{i}\",\n  \"projectHash\": \"{:064x}\",\n  \"startTime\": \"{first}\",\n  \"lastUpdated\": \"{last}\",\n  \"messages\": [\n    {}\n  ]\n}}",
                i % 40,
                records.join(",\n    ")
            );
            ("json", doc)
        } else {
            let meta = format!(
                r#"{{"sessionId":"g-{i}","projectHash":"{:064x}","startTime":"{first}","lastUpdated":"{first}","kind":"main"}}"#,
                i % 40
            );
            ("jsonl", format!("{meta}\n{}\n", records.join("\n")))
        };
        let minute = &ts(start)[..16];
        File {
            path: PathBuf::from(format!(
                ".gemini/tmp/project-{:02}/chats/session-{}-{i:08x}.{ext}",
                i % 40,
                minute.replace(':', "-")
            )),
            text: text.into_bytes(),
            mtime: at + 10,
        }
    }));
    files
}

/// Qwen Code: `.qwen/projects/<cwd>/chats/<sessionId>.jsonl`
/// (QwenLM/qwen-code `chatRecordingService.ts`): `ChatRecord`s appended,
/// a user record, an assistant record with `usageMetadata`, a tool result
/// and a `ui_telemetry` system record per turn.
fn qwen(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    sessions(now, bytes, |i, start| {
        let cwd = format!("/home/bench/project-{:02}", i % 40);
        let base = |uuid: &str, at: i64, kind: &str| {
            format!(
                r#""uuid":"{uuid}","parentUuid":null,"sessionId":"q-{i}","timestamp":"{}","type":"{kind}","cwd":"{cwd}","version":"0.9.0","gitBranch":"main""#,
                ts(at)
            )
        };
        let mut text = String::new();
        let mut at = start;
        for n in 0..(20 + rng.below(30)) {
            at += 30;
            let user = rng.text(300);
            let line = format!(
                r#"{{{},"message":{{"role":"user","parts":[{{"text":"{user}"}}]}}}}"#,
                base(&format!("u{i}-{n}"), at, "user")
            );
            text.push_str(&line);
            text.push('\n');
            let (prompt, completion) = (rng.below(60_000) + 500, rng.below(2_000) + 1);
            let (cached, reasoning) = (rng.below(prompt), rng.below(completion));
            let answer = rng.text(400);
            text.push_str(&format!(
                r#"{{{},"model":"qwen3-coder-plus","message":{{"role":"model","parts":[{{"text":"{answer}"}}]}},"usageMetadata":{{"promptTokenCount":{prompt},"candidatesTokenCount":{completion},"totalTokenCount":{},"cachedContentTokenCount":{cached},"thoughtsTokenCount":{reasoning}}},"contextWindowSize":131072}}"#,
                base(&format!("a{i}-{n}"), at + 10, "assistant"),
                prompt + completion
            ));
            text.push('\n');
            let output = rng.text(200);
            text.push_str(&format!(
                r#"{{{},"message":{{"role":"user","parts":[{{"functionResponse":{{"id":"c{n}","name":"read_file","response":{{"output":"{output}"}}}}}}]}},"toolCallResult":{{"callId":"c{n}","status":"success"}}}}"#,
                base(&format!("t{i}-{n}"), at + 12, "tool_result")
            ));
            text.push('\n');
            text.push_str(&format!(
                r#"{{{},"subtype":"ui_telemetry","systemPayload":{{"uiEvent":{{"event.name":"qwen-code.api_response","input_token_count":{prompt}}}}}}}"#,
                base(&format!("s{i}-{n}"), at + 12, "system")
            ));
            text.push('\n');
        }
        File {
            path: PathBuf::from(format!(
                ".qwen/projects/-home-bench-project-{:02}/chats/q-{i}.jsonl",
                i % 40
            )),
            text: text.into_bytes(),
            mtime: at + 12,
        }
    })
}

/// Amp: `.local/share/amp/threads/T-<id>.json`, one document per thread
/// (the field names tokscale's, ccusage's and agentsview's readers use):
/// user turns, assistant turns with thinking, text and a tool call, tool
/// results, each assistant turn's `usage`, and a usage ledger event per
/// assistant turn linked by `toMessageId`.
fn amp(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    sessions(now, bytes, |i, start| {
        let (mut messages, mut events) = (Vec::new(), Vec::new());
        let mut at = start;
        for n in 0..(20 + rng.below(30)) {
            at += 30;
            let (user, result) = (rng.text(300), rng.text(800));
            messages.push(format!(
                r#"{{"role":"user","messageId":{},"content":[{{"type":"text","text":"{user}"}}],"meta":{{"sentAt":{}}}}}"#,
                3 * n,
                at * 1000
            ));
            let (input, output, read, write) = (
                rng.below(500) + 1,
                rng.below(2_000) + 1,
                rng.below(60_000),
                rng.below(3_000),
            );
            let (thinking, answer) = (rng.text(200), rng.text(400));
            messages.push(format!(
                r#"{{"role":"assistant","messageId":{},"content":[{{"type":"thinking","thinking":"{thinking}","signature":"sig"}},{{"type":"text","text":"{answer}"}},{{"type":"tool_use","id":"toolu_{i}_{n}","name":"Bash","input":{{"cmd":"cargo test"}}}}],"state":{{"type":"complete","stopReason":"tool_use"}},"usage":{{"model":"claude-sonnet-4-5","maxInputTokens":168000,"inputTokens":{input},"outputTokens":{output},"cacheCreationInputTokens":{write},"cacheReadInputTokens":{read},"totalInputTokens":{},"timestamp":"{}"}}}}"#,
                3 * n + 1,
                input + read + write,
                ts(at + 10)
            ));
            messages.push(format!(
                r#"{{"role":"user","messageId":{},"content":[{{"type":"tool_result","toolUseID":"toolu_{i}_{n}","run":{{"status":"done","result":{{"output":"{result}","exitCode":0}}}}}}]}}"#,
                3 * n + 2
            ));
            events.push(format!(
                r#"{{"id":"ev-{i}-{n}","timestamp":"{}","model":"claude-sonnet-4-5","credits":0.5,"tokens":{{"input":{input},"output":{output}}},"operationType":"inference","fromMessageId":{},"toMessageId":{}}}"#,
                ts(at + 10),
                3 * n,
                3 * n + 1
            ));
        }
        let text = format!(
            r#"{{"v":{},"id":"T-bench-{i}","created":{},"title":"bench","messages":[{}],"agentMode":"smart","env":{{"initial":{{"trees":[{{"displayName":"project-{:02}","uri":"file:///home/bench/project-{:02}"}}]}}}},"usageLedger":{{"events":[{}]}}}}"#,
            events.len() * 7,
            start * 1000,
            messages.join(","),
            i % 40,
            i % 40,
            events.join(",")
        );
        File {
            path: PathBuf::from(format!(".local/share/amp/threads/T-bench-{i}.json")),
            text: text.into_bytes(),
            mtime: at + 10,
        }
    })
}

/// Droid: `.factory/sessions/<cwd>/<id>.settings.json` (the session's
/// running `tokenUsage`, the only file read) beside its `<id>.jsonl`
/// transcript (listed, never read), the field names tokscale's and
/// ccusage's readers use. The home's bytes count both, as they are on
/// disk.
fn droid(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    let mut files = Vec::new();
    let mut transcripts = sessions(now, bytes, |i, start| {
        let mut text = String::new();
        let turns = 20 + rng.below(30);
        for n in 0..turns {
            let (user, answer) = (rng.text(300), rng.text(1_200));
            text.push_str(&format!(
                r#"{{"type":"message","id":"u{i}-{n}","timestamp":"{}","message":{{"role":"user","content":[{{"type":"text","text":"{user}"}}]}}}}"#,
                ts(start + 60 * n as i64)
            ));
            text.push('\n');
            text.push_str(&format!(
                r#"{{"type":"message","id":"a{i}-{n}","timestamp":"{}","message":{{"role":"assistant","content":[{{"type":"text","text":"{answer}"}}]}}}}"#,
                ts(start + 60 * n as i64 + 20)
            ));
            text.push('\n');
        }
        let end = start + 60 * turns as i64;
        let dir = format!(".factory/sessions/-home-bench-project-{:02}", i % 40);
        files.push(File {
            path: PathBuf::from(format!("{dir}/droid-{i}.settings.json")),
            text: format!(
                r#"{{"assistantActiveTimeMs":{},"model":"claude-sonnet-4-5-20250929","reasoningEffort":"medium","autonomyMode":"auto-low","providerLock":"anthropic","providerLockTimestamp":"{}","tokenUsage":{{"inputTokens":{},"outputTokens":{},"cacheCreationTokens":{},"cacheReadTokens":{},"thinkingTokens":{}}}}}"#,
                rng.below(600_000),
                ts(start),
                rng.below(50_000) + 1,
                rng.below(40_000),
                rng.below(60_000),
                rng.below(2_000_000),
                rng.below(8_000)
            ).into_bytes(),
            mtime: end,
        });
        File {
            path: PathBuf::from(format!("{dir}/droid-{i}.jsonl")),
            text: text.into_bytes(),
            mtime: end,
        }
    });
    files.append(&mut transcripts);
    files
}

/// Kimi CLI: `.kimi/sessions/<work-dir md5>/<session>/wire.jsonl`, the
/// records `WireFile.append_record` writes (`json.dumps`, MoonshotAI/
/// kimi-cli `wire/file.py`): per step a `StepBegin`, streamed `TextPart`s,
/// a `ToolCall` and its `ToolResult`, and the `StatusUpdate` with kosong's
/// `TokenUsage`.
fn kimi(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    sessions(now, bytes, |i, start| {
        let mut text = String::from("{\"type\": \"metadata\", \"protocol_version\": \"1.10\"}\n");
        let record = |at: i64, kind: &str, payload: &str| {
            format!(
                "{{\"timestamp\": {at}.{:03}, \"message\": {{\"type\": \"{kind}\", \"payload\": {{{payload}}}}}}}\n",
                at % 1000
            )
        };
        let mut at = start;
        let prompt = rng.text(200);
        text.push_str(&record(
            at,
            "TurnBegin",
            &format!("\"user_input\": \"{prompt}\""),
        ));
        for n in 0..(20 + rng.below(30)) {
            at += 30;
            text.push_str(&record(at, "StepBegin", &format!("\"n\": {}", n + 1)));
            for _ in 0..4 {
                let part = rng.text(100);
                text.push_str(&record(
                    at,
                    "TextPart",
                    &format!("\"type\": \"text\", \"text\": \"{part}\""),
                ));
            }
            let call = format!(
                "\"type\": \"function\", \"id\": \"tool_{i}_{n}\", \"function\": {{\"name\": \"Shell\", \"arguments\": \"{{}}\"}}"
            );
            text.push_str(&record(at, "ToolCall", &call));
            let (other, output, read, creation) = (
                rng.below(800) + 1,
                rng.below(2_000) + 1,
                rng.below(60_000),
                0,
            );
            text.push_str(&record(at + 5, "StatusUpdate", &format!("\"context_usage\": 0.21, \"context_tokens\": 55000, \"max_context_tokens\": 262144, \"token_usage\": {{\"input_other\": {other}, \"output\": {output}, \"input_cache_read\": {read}, \"input_cache_creation\": {creation}}}, \"message_id\": \"chatcmpl-{i}-{n}\", \"plan_mode\": false, \"mcp_status\": null")));
            let result = rng.text(300);
            text.push_str(&record(at + 6, "ToolResult", &format!("\"tool_call_id\": \"tool_{i}_{n}\", \"return_value\": {{\"is_error\": false, \"output\": \"{result}\", \"message\": \"\", \"display\": []}}")));
        }
        text.push_str(&record(at + 10, "TurnEnd", ""));
        File {
            path: PathBuf::from(format!(
                ".kimi/sessions/{:032x}/kimi-{i:06}/wire.jsonl",
                i % 40
            )),
            text: text.into_bytes(),
            mtime: at + 10,
        }
    })
}

/// Copilot CLI: `.copilot/otel/*.jsonl`, its OpenTelemetry file export:
/// per turn an `invoke_agent` span, `chat` spans with the GenAI usage
/// attributes, `execute_tool` spans, and the cumulative metrics it
/// re-exports on a timer.
fn copilot(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    sessions(now, bytes, |i, start| {
        let mut text = String::new();
        let mut at = start;
        let scope = r#""instrumentationScope":{"name":"github.copilot","version":"1.0.80"},"resource":{"attributes":{"service.name":"github-copilot","service.version":"1.0.80"}}"#;
        for n in 0..(20 + rng.below(30)) {
            at += 30;
            let (trace, conv) = (
                format!("{:032x}", (i as u64) << 16 | n),
                format!("conv-{i}"),
            );
            for k in 0..2 {
                let (read, creation) = (rng.below(60_000), rng.below(3_000));
                let input = read + creation + rng.below(800) + 1;
                text.push_str(&format!(
                    r#"{{"type":"span","name":"chat claude-sonnet-4.5","traceId":"{trace}","spanId":"{:016x}","parentSpanId":"{:016x}","kind":2,"startTime":[{at},106000000],"endTime":[{},288000000],"status":{{"code":0}},"events":[],{scope},"attributes":{{"gen_ai.conversation.id":"{conv}","gen_ai.operation.name":"chat","gen_ai.provider.name":"github","gen_ai.request.model":"auto","gen_ai.response.model":"claude-sonnet-4.5","gen_ai.response.id":"msg_{i}_{n}_{k}","gen_ai.usage.input_tokens":{input},"gen_ai.usage.output_tokens":{},"gen_ai.usage.cache_read.input_tokens":{read},"gen_ai.usage.cache_creation.input_tokens":{creation}}}}}"#,
                    n * 4 + k + 1,
                    n * 4,
                    at + 3,
                    rng.below(2_000) + 1
                ));
                text.push('\n');
                text.push_str(&format!(
                    r#"{{"type":"span","name":"execute_tool view","traceId":"{trace}","spanId":"{:016x}","parentSpanId":"{:016x}","kind":0,"startTime":[{},0],"endTime":[{},0],"status":{{"code":0}},"events":[],{scope},"attributes":{{"gen_ai.conversation.id":"{conv}","gen_ai.operation.name":"execute_tool","gen_ai.tool.name":"view","gen_ai.tool.call.id":"toolu_{}","gen_ai.tool.type":"function"}}}}"#,
                    n * 4 + k + 3,
                    n * 4,
                    at + 4,
                    at + 5,
                    rng.text(24)
                ));
                text.push('\n');
            }
            text.push_str(&format!(
                r#"{{"type":"span","name":"invoke_agent","traceId":"{trace}","spanId":"{:016x}","kind":0,"startTime":[{at},0],"endTime":[{},0],"status":{{"code":0}},{scope},"attributes":{{"gen_ai.conversation.id":"{conv}","gen_ai.operation.name":"invoke_agent","gen_ai.request.model":"auto","gen_ai.usage.input_tokens":{},"gen_ai.usage.output_tokens":{}}}}}"#,
                n * 4,
                at + 9,
                rng.below(100_000),
                rng.below(4_000)
            ));
            text.push('\n');
            text.push_str(&format!(
                r#"{{"type":"metric","name":"github.copilot.tool.call.count","description":"Number of tool invocations by tool name and outcome.","unit":"{{call}}","dataPoints":[{{"attributes":{{"gen_ai.tool.name":"view","success":true}},"startTime":[{start},0],"endTime":[{at},0],"value":{}}}]}}"#,
                n + 1
            ));
            text.push('\n');
        }
        File {
            path: PathBuf::from(format!(".copilot/otel/copilot-otel-{i:06}.jsonl")),
            text: text.into_bytes(),
            mtime: at + 10,
        }
    })
}

/// Cline: `.cline/data/sessions/<id>/<id>.messages.json`, one document
/// (`buildMessagesFilePayload` in cline/cline `sdk/packages/core/src/
/// services/session-data.ts`, pretty-printed as `JSON.stringify(payload,
/// null, 2)`), each assistant message with its request's `metrics`; the
/// manifest `<id>.json` beside it.
fn cline(rng: &mut Rng, now: i64, bytes: u64) -> Vec<File> {
    let mut manifests = Vec::new();
    let mut files = sessions(now, bytes, |i, start| {
        let id = format!("{}_b{i:04}", start * 1000);
        let cwd = format!("/home/bench/project-{:02}", i % 40);
        manifests.push(File {
            path: PathBuf::from(format!(".cline/data/sessions/{id}/{id}.json")),
            text: format!(
                r#"{{"version":1,"session_id":"{id}","source":"cli","pid":1,"started_at":"{}","status":"completed","interactive":true,"provider":"anthropic","model":"claude-sonnet-4-6","cwd":"{cwd}","workspace_root":"{cwd}","enable_tools":true,"enable_spawn":true,"enable_teams":false}}"#,
                ts(start)
            ).into_bytes(),
            mtime: start,
        });
        let mut messages = Vec::new();
        let mut at = start;
        for n in 0..(20 + rng.below(30)) {
            at += 30;
            let user = rng.text(300);
            messages.push(format!(
                "{{\n      \"id\": \"u{i}-{n}\",\n      \"role\": \"user\",\n      \"content\": [\n        {{\n          \"type\": \"text\",\n          \"text\": \"{user}\"\n        }}\n      ]\n    }}"
            ));
            let (read, write) = (rng.below(60_000), rng.below(3_000));
            let (input, output) = (rng.below(500) + 1 + read + write, rng.below(2_000) + 1);
            let answer = rng.text(400);
            messages.push(format!(
                "{{\n      \"id\": \"a{i}-{n}\",\n      \"role\": \"assistant\",\n      \"content\": [\n        {{\n          \"type\": \"text\",\n          \"text\": \"{answer}\"\n        }}\n      ],\n      \"ts\": {},\n      \"modelInfo\": {{\n        \"id\": \"claude-sonnet-4-6\",\n        \"provider\": \"anthropic\"\n      }},\n      \"metrics\": {{\n        \"inputTokens\": {input},\n        \"outputTokens\": {output},\n        \"cacheReadTokens\": {read},\n        \"cacheWriteTokens\": {write},\n        \"cost\": 0.01\n      }}\n    }}",
                (at + 10) * 1000
            ));
        }
        let text = format!(
            "{{\n  \"version\": 1,\n  \"updated_at\": \"{}\",\n  \"agent\": \"lead\",\n  \"sessionId\": \"{id}\",\n  \"origin\": {{\n    \"source\": \"cli\",\n    \"mode\": \"user\",\n    \"sessionId\": \"{id}\"\n  }},\n  \"messages\": [\n    {}\n  ]\n}}\n",
            ts(at + 10),
            messages.join(",\n    ")
        );
        File {
            path: PathBuf::from(format!(".cline/data/sessions/{id}/{id}.messages.json")),
            text: text.into_bytes(),
            mtime: at + 10,
        }
    });
    files.append(&mut manifests);
    files
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
            text: text.into_bytes(),
            mtime: at,
        }
    });
    for f in files {
        sql.push_str(&String::from_utf8_lossy(&f.text));
    }
    sql.push_str("COMMIT;");
    database_of_sql(".local/share/devin/cli/sessions.db", &sql, last)
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
            text: text.into_bytes(),
            mtime: at,
        }
    });
    for f in files {
        sql.push_str(&String::from_utf8_lossy(&f.text));
    }
    sql.push_str("COMMIT;");
    database_of_sql(".hermes/state.db", &sql, last)
}

/// The database at `path` that `sql` makes, as one file (its WAL
/// checkpointed into it), written at Unix second `mtime`.
fn database_of_sql(path: &str, sql: &str, mtime: i64) -> Vec<File> {
    let scratch = std::env::temp_dir().join(format!(
        "heeler-bench-sql-{}-{}.db",
        std::process::id(),
        path.len()
    ));
    let build = || -> Result<Vec<u8>, String> {
        let e = |e: rusqlite::Error| e.to_string();
        let db = rusqlite::Connection::open(&scratch).map_err(e)?;
        db.execute_batch(sql).map_err(e)?;
        db.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;")
            .map_err(e)?;
        drop(db);
        fs::read(&scratch).map_err(|e| e.to_string())
    };
    let _ = fs::remove_file(&scratch);
    let built = build();
    let _ = fs::remove_file(&scratch);
    match built {
        Ok(text) => vec![File {
            path: PathBuf::from(path),
            text,
            mtime,
        }],
        Err(e) => {
            eprintln!("bench: the {path} database could not be built: {e}");
            Vec::new()
        }
    }
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
    let homes = homes(work, scale, now)?;
    cold_scans(bin, work, &homes, rounds)?;
    warm_views(bin, work, &homes[0].dir, &work.join("all"))
}

/// Writes the homes the cold scans read: Claude Code + Codex, each other
/// agent (about a tenth of it), every agent together, and an empty one
/// (the process's fixed cost), in that order.
fn homes(work: &Path, scale: f64, now: i64) -> Result<Vec<Home>, String> {
    let claude_files = ((5000.0 * scale) as usize).max(1);
    let codex_files = ((2000.0 * scale) as usize).max(1);
    let cc = work.join("claude-codex");
    let corpus = generate(&cc, claude_files, codex_files, now)?;
    let all = work.join("all");
    generate(&all, claude_files, codex_files, now)?;
    let mut homes = vec![Home {
        name: "Claude Code + Codex".into(),
        dir: cc,
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
        dir: all,
        bytes: all_bytes,
    });
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
    Ok(homes)
}

/// Times a cold scan of each home, `rounds` times, and prints each one's
/// CPU per MB against Claude Code + Codex's, the empty home's fixed cost
/// taken off first.
fn cold_scans(bin: &Path, work: &Path, homes: &[Home], rounds: usize) -> Result<(), String> {
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
    Ok(())
}

/// Times the warm views of the home of every agent against those of
/// Claude Code + Codex alone, each after one scan.
fn warm_views(bin: &Path, work: &Path, cc: &Path, all: &Path) -> Result<(), String> {
    let (cc_state, all_state) = (work.join("state/warm-cc"), work.join("state/warm-all"));
    time(heeler(bin, cc, &cc_state, &["usage", "worker"]))?;
    time(heeler(bin, all, &all_state, &["usage", "worker"]))?;
    let views: [&[&str]; 4] = [
        &["usage", "query", "--refresh", "never"],
        &["usage"],
        &["usage", "daily"],
        &["usage", "statusline"],
    ];
    for args in views {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..21 {
            theirs.push(time(heeler(bin, cc, &cc_state, args))?);
            ours.push(time(heeler(bin, all, &all_state, args))?);
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

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
    text: String,
    mtime: i64,
}

/// An agent's generator: files of about `bytes` in all, spread over the
/// last 30 days before `now`.
type Generator = fn(&mut Rng, i64, u64) -> Vec<File>;

/// The other agents, each with its generator.
const AGENTS: &[(&str, Generator)] = &[("pi", pi), ("kimi", kimi), ("copilot", copilot)];

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
            text,
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
            text,
            mtime: at + 10,
        }
    })
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

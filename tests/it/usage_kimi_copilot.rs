//! Kimi CLI and Copilot CLI end to end: their files in a scratch home (and
//! a Copilot export file a variable names), the real binary's views, the
//! totals and prices worked out by hand from the files and the bundled
//! table.

use crate::usage_fixture::{TempDir, lines, temp_dir, write};
use crate::usage_views::settle;

use std::path::Path;
use std::process::Command;

use heeler::base::json::{self, Value};

fn heeler(home: &Path, vars: &[(&str, &Path)], args: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_heeler"));
    command
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("TZ", "UTC");
    for (k, v) in vars {
        command.env(k, v);
    }
    command.output().unwrap()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The `models` view's JSON document for one agent.
fn models(home: &TempDir, vars: &[(&str, &Path)], agent: &str) -> Value {
    let worker = heeler(home, vars, &["usage", "worker"]);
    assert!(worker.status.success(), "{worker:?}");
    let out = heeler(home, vars, &["usage", "models", "--agent", agent, "--json"]);
    settle(home);
    assert!(out.status.success(), "{out:?}");
    json::parse(String::from_utf8(out.stdout).unwrap().trim_end()).unwrap()
}

/// A Kimi wire record as `WireFile.append_record` writes it.
fn kimi_status(ts: i64, id: &str, u: [u64; 4]) -> String {
    let [other, output, read, creation] = u;
    format!(
        r#"{{"timestamp": {ts}.25, "message": {{"type": "StatusUpdate", "payload": {{"context_usage": 0.05, "token_usage": {{"input_other": {other}, "output": {output}, "input_cache_read": {read}, "input_cache_creation": {creation}}}, "message_id": "{id}", "plan_mode": false}}}}}}"#
    )
}

fn kimi_subagent(ts: i64, agent_id: &str, u: [u64; 4]) -> String {
    let [other, output, read, creation] = u;
    let who = if agent_id.is_empty() {
        r#""task_tool_call_id": "t1""#.to_string()
    } else {
        format!(
            r#""parent_tool_call_id": "t2", "agent_id": "{agent_id}", "subagent_type": "coder""#
        )
    };
    format!(
        r#"{{"timestamp": {ts}.5, "message": {{"type": "SubagentEvent", "payload": {{{who}, "event": {{"type": "StatusUpdate", "payload": {{"token_usage": {{"input_other": {other}, "output": {output}, "input_cache_read": {read}, "input_cache_creation": {creation}}}, "message_id": "sub-{ts}"}}}}}}}}}}"#
    )
}

#[test]
fn kimi_sessions_show_in_the_views_as_the_unknown_model_unpriced() {
    let home = temp_dir("views-kimi");
    let start = now() - 2 * 3_600;
    let sessions = home.join(".kimi/sessions/3f2b6c1d9e8a7b6c5d4e3f2a1b0c9d8e");
    let header = r#"{"type": "metadata", "protocol_version": "1.10"}"#.to_string();
    let s1 = [
        header.clone(),
        kimi_status(start + 60, "chatcmpl-1", [1_200, 340, 8_000, 0]),
        kimi_status(start + 120, "chatcmpl-2", [60, 90, 9_100, 512]),
        // Forwarded from the subagent `a-1`, whose own file counts it.
        kimi_subagent(start + 130, "a-1", [10, 20, 30, 0]),
        // An older Kimi's `Task` subagent: only here.
        kimi_subagent(start + 140, "", [7, 5, 0, 3]),
    ];
    write(&sessions.join("s-1/wire.jsonl"), &lines(&s1));
    write(
        &sessions.join("s-1/subagents/a-1/wire.jsonl"),
        &lines(&[
            header.clone(),
            kimi_status(start + 130, "sub-a", [10, 20, 30, 0]),
        ]),
    );
    // `/fork` of s-1: its lines copied, `state.json` titled and timed,
    // then a step of its own.
    let mut s2 = s1.to_vec();
    s2.push(kimi_status(start + 360, "chatcmpl-3", [4, 6, 0, 0]));
    write(&sessions.join("s-2/wire.jsonl"), &lines(&s2));
    write(
        &sessions.join("s-2/state.json"),
        &format!(
            "{{\n  \"version\": 1,\n  \"custom_title\": \"Fork: Untitled\",\n  \"title_generated\": true,\n  \"wire_mtime\": {}.75\n}}",
            start + 300
        ),
    );
    let doc = models(&home, &[], "kimi");
    let totals = doc.get("totals").unwrap();
    let int = |k: &str| totals.get(k).and_then(Value::as_i64);
    // By hand: s-1's two steps and its old subagent's, a-1's one, the
    // fork's own one: 5 calls. Input 1,200 + 60 + 7 + 10 + 4 = 1,281;
    // output 340 + 90 + 5 + 20 + 6 = 461; cache reads 8,000 + 9,100 + 30
    // = 17,130; cache writes 512 + 3 = 515.
    assert_eq!(int("requests"), Some(5));
    assert_eq!(int("input"), Some(1_281));
    assert_eq!(int("output"), Some(461));
    assert_eq!(int("cache_read"), Some(17_130));
    assert_eq!(int("cache_write_5m"), Some(515));
    // The wire names no model: every call unpriced, none priced at $0.
    assert_eq!(int("unpriced_requests"), Some(5));
    let unpriced = doc.get("unpriced_models").unwrap().to_json();
    assert!(
        unpriced.contains(r#""agent":"kimi","model":"unknown""#),
        "{unpriced}"
    );
    let summary = heeler(&home, &[], &["usage", "--json"]);
    settle(&home);
    let summary = json::parse(String::from_utf8(summary.stdout).unwrap().trim_end()).unwrap();
    let kimi = summary.get("coverage").unwrap().get("kimi").unwrap();
    assert_eq!(kimi.get("files_seen").and_then(Value::as_i64), Some(3));
}

/// A chat span as Copilot CLI's file exporter writes it.
fn copilot_chat(trace: &str, span: &str, end: i64, model: &str, u: [u64; 5]) -> String {
    let [input, output, read, creation, reasoning] = u;
    format!(
        r#"{{"type":"span","name":"chat {model}","traceId":"{trace}","spanId":"{span}","parentSpanId":"7e9078e03f3636b6","kind":2,"startTime":[{start},106000000],"endTime":[{end},288000000],"status":{{"code":0}},"attributes":{{"gen_ai.conversation.id":"conv-{trace}","gen_ai.operation.name":"chat","gen_ai.provider.name":"github","gen_ai.request.model":"auto","gen_ai.response.model":"{model}","gen_ai.usage.input_tokens":{input},"gen_ai.usage.output_tokens":{output},"gen_ai.usage.cache_read.input_tokens":{read},"gen_ai.usage.cache_creation.input_tokens":{creation},"gen_ai.usage.reasoning.output_tokens":{reasoning}}}}}"#,
        start = end - 3
    )
}

#[test]
fn copilot_exports_show_in_the_views_priced_by_the_model_that_answered() {
    let home = temp_dir("views-copilot");
    let start = now() - 2 * 3_600;
    let haiku = copilot_chat(
        "t1",
        "s1",
        start + 60,
        "claude-haiku-4.5",
        [19_335, 114, 8_888, 10_437, 0],
    );
    let agent = format!(
        r#"{{"type":"span","name":"invoke_agent","traceId":"t1","spanId":"7e9078e03f3636b6","kind":0,"startTime":[{start},0],"endTime":[{},0],"attributes":{{"gen_ai.operation.name":"invoke_agent","gen_ai.usage.input_tokens":21335,"gen_ai.usage.output_tokens":414}}}}"#,
        start + 70
    );
    write(
        &home.join(".copilot/otel/copilot-otel-1.jsonl"),
        &lines(&[
            haiku.clone(),
            copilot_chat("t1", "s2", start + 65, "gpt-5", [2_000, 300, 1_500, 0, 120]),
            agent,
            r#"{"type":"metric","name":"gen_ai.client.token.usage","dataPoints":[{"attributes":{"gen_ai.operation.name":"chat"},"value":19335}]}"#.into(),
            // Exported twice: one span.
            haiku,
        ]),
    );
    let file = home.join("exports/cli.jsonl");
    write(
        &file,
        &lines(&[copilot_chat(
            "t9",
            "s9",
            start + 90,
            "copilot-mystery-1",
            [100, 10, 0, 0, 0],
        )]),
    );
    let vars = [("COPILOT_OTEL_FILE_EXPORTER_PATH", file.as_path())];
    let doc = models(&home, &vars, "copilot");
    let totals = doc.get("totals").unwrap();
    let int = |k: &str| totals.get(k).and_then(Value::as_i64);
    // By hand: three spans. Input (19,335 - 8,888 - 10,437) + (2,000 -
    // 1,500) + 100 = 10 + 500 + 100 = 610; output 114 + 300 + 10 = 424;
    // cache reads 8,888 + 1,500 = 10,388; writes 10,437.
    assert_eq!(int("requests"), Some(3));
    assert_eq!(int("input"), Some(610));
    assert_eq!(int("output"), Some(424));
    assert_eq!(int("cache_read"), Some(10_388));
    assert_eq!(int("cache_write_5m"), Some(10_437));
    // The bundled table per token: Haiku 4.5 input $1e-6, output $5e-6,
    // reads $0.1e-6, 5-minute writes $1.25e-6: 0.00001 + 0.00057 +
    // 0.0008888 + 0.01304625 = 0.01451505; GPT-5 input $1.25e-6, reads
    // $0.125e-6, output $10e-6: 0.000625 + 0.0001875 + 0.003 = 0.0038125.
    // 0.01832755 in all, which the document writes to the millionth.
    let cost = totals.get("cost_usd").and_then(Value::as_f64).unwrap();
    assert!((cost - 0.018_328).abs() < 1e-9, "{cost}");
    assert_eq!(int("unpriced_requests"), Some(1));
    let unpriced = doc.get("unpriced_models").unwrap().to_json();
    assert!(
        unpriced.contains(r#""agent":"copilot","model":"copilot-mystery-1""#),
        "{unpriced}"
    );
    let summary = heeler(&home, &vars, &["usage", "--json"]);
    settle(&home);
    let summary = json::parse(String::from_utf8(summary.stdout).unwrap().trim_end()).unwrap();
    let copilot = summary.get("coverage").unwrap().get("copilot").unwrap();
    assert_eq!(copilot.get("files_seen").and_then(Value::as_i64), Some(2));
}

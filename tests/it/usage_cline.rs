//! Cline end to end: session documents as the Cline SDK writes them
//! (cline/cline `sdk/packages/core/src/services/session-data.ts`
//! `buildMessagesFilePayload`, rewritten whole after each turn) in a
//! scratch home, read by the real binary's views: totals and prices by
//! hand, an unknown model named unpriced, a fork's copied history counted
//! once, and a rewritten document counting its new call once.

use crate::usage_fixture::{temp_dir, ts, write};
use crate::usage_views::{heeler, settle};

use std::path::Path;

use heeler::base::json::{self, Value};

/// An assistant message with its request's `metrics` ([inputTokens, the
/// whole prompt; outputTokens; cacheReadTokens; cacheWriteTokens]).
fn assistant(id: &str, at: i64, model: &str, [input, output, read, write]: [u64; 4]) -> String {
    format!(
        r#"{{
      "id": "{id}",
      "role": "assistant",
      "content": [{{ "type": "text", "text": "done" }}],
      "ts": {},
      "modelInfo": {{ "id": "{model}", "provider": "cline" }},
      "metrics": {{ "inputTokens": {input}, "outputTokens": {output}, "cacheReadTokens": {read}, "cacheWriteTokens": {write}, "cost": 0.5 }}
    }}"#,
        at * 1000 + 250
    )
}

fn user(id: &str) -> String {
    format!(
        r#"{{ "id": "{id}", "role": "user", "content": [{{ "type": "text", "text": "go" }}] }}"#
    )
}

/// Session `id`'s directory: its manifest (`<id>.json`, with its `cwd`)
/// and its messages document.
fn session(sessions: &Path, id: &str, at: i64, messages: &[String]) {
    let dir = sessions.join(id);
    write(
        &dir.join(format!("{id}.json")),
        &format!(
            r#"{{"version":1,"session_id":"{id}","source":"cli","pid":7,"started_at":"{}","status":"running","interactive":true,"provider":"cline","model":"m","cwd":"/home/dev/cline-proj","workspace_root":"/home/dev/cline-proj","enable_tools":true,"enable_spawn":true,"enable_teams":false}}"#,
            ts(at)
        ),
    );
    write(
        &dir.join(format!("{id}.messages.json")),
        &format!(
            "{{\n  \"version\": 1,\n  \"updated_at\": \"{}\",\n  \"agent\": \"lead\",\n  \"sessionId\": \"{id}\",\n  \"origin\": {{ \"source\": \"cli\", \"mode\": \"user\", \"sessionId\": \"{id}\" }},\n  \"messages\": [\n    {}\n  ]\n}}\n",
            ts(at),
            messages.join(",\n    ")
        ),
    );
}

fn totals(home: &Path) -> Value {
    let out = heeler(home, &["usage", "models", "--agent", "cline", "--json"]);
    settle(home);
    assert!(out.status.success(), "{out:?}");
    json::parse(String::from_utf8(out.stdout).unwrap().trim_end()).unwrap()
}

#[test]
fn cline_sessions_show_in_the_views_priced_and_a_rewrite_counts_once() {
    let home = temp_dir("views-cline");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let start = now - 2 * 3_600;
    let sessions = home.join(".cline/data/sessions");
    // Session ids as `createSessionId` makes them: creation ms, `_`, random.
    let (a, b) = (
        format!("{}_aaaaa", start * 1000),
        format!("{}_bbbbb", (start + 600) * 1000),
    );
    let a1 = assistant(
        "a1",
        start + 60,
        "claude-sonnet-4-6",
        [13_000, 2_000, 10_000, 2_000],
    );
    let mut first = vec![
        user("u1"),
        a1.clone(),
        user("u2"),
        assistant("a2", start + 120, "gpt-5", [2_500, 500, 500, 0]),
        assistant("a3", start + 180, "cline-mystery-1", [100, 10, 0, 0]),
    ];
    session(&sessions, &a, start, &first);
    // A fork of `a` made 10 minutes in: `a1` as it was, then its own call
    // (a model id as Cline's own provider names it).
    session(
        &sessions,
        &b,
        start + 600,
        &[
            user("u1"),
            a1,
            user("u3"),
            assistant(
                "b1",
                start + 660,
                "anthropic/claude-sonnet-4.6",
                [1_300, 100, 1_000, 0],
            ),
        ],
    );
    let worker = heeler(&home, &["usage", "worker"]);
    assert!(worker.status.success(), "{worker:?}");
    let doc = totals(&home);
    let t = doc.get("totals").unwrap();
    let int = |t: &Value, k: &str| t.get(k).and_then(Value::as_i64);
    // By hand: four calls (the fork's copy of a1 is a's); input
    // (13,000 - 10,000 - 2,000) + (2,500 - 500) + 100 + (1,300 - 1,000) =
    // 1,000 + 2,000 + 100 + 300 = 3,400; output 2,000 + 500 + 10 + 100 =
    // 2,610; cache reads 10,000 + 500 + 1,000 = 11,500; writes 2,000.
    assert_eq!(int(t, "requests"), Some(4));
    assert_eq!(int(t, "input"), Some(3_400));
    assert_eq!(int(t, "output"), Some(2_610));
    assert_eq!(int(t, "cache_read"), Some(11_500));
    assert_eq!(int(t, "cache_write_5m"), Some(2_000));
    // The bundled table per token: Sonnet 4.6 input $3e-6, output $15e-6,
    // cache reads $0.3e-6, 5-minute writes $3.75e-6: a1 0.003 + 0.03 +
    // 0.003 + 0.0075 = 0.0435, b1 0.0009 + 0.0015 + 0.0003 = 0.0027;
    // GPT-5 input $1.25e-6, output $10e-6, reads $0.125e-6: a2 0.0025 +
    // 0.005 + 0.0000625 = 0.0075625. Sum 0.0537625 (Cline's own `cost`,
    // 0.5 a call, is not used).
    let cost = t.get("cost_usd").and_then(Value::as_f64).unwrap();
    // The JSON writes dollars to 6 decimals.
    assert!((cost - 0.053_762_5).abs() <= 5.1e-7, "{cost}");
    assert_eq!(int(t, "unpriced_requests"), Some(1));
    let unpriced = doc.get("unpriced_models").unwrap().to_json();
    assert!(
        unpriced.contains(r#""agent":"cline","model":"cline-mystery-1""#),
        "{unpriced}"
    );

    // The directory is the manifests' `cwd`.
    let dirs = heeler(&home, &["usage", "dirs", "--agent", "cline", "--json"]);
    settle(&home);
    let dirs = String::from_utf8(dirs.stdout).unwrap();
    assert!(dirs.contains("/home/dev/cline-proj"), "{dirs}");

    // The next turn rewrites `a`'s whole document with one more call
    // (GPT-5: input 1,200 - 1,000 = 200, reads 1,000, output 50): it
    // counts once, the earlier calls stay counted once.
    first.push(user("u4"));
    first.push(assistant("a4", start + 900, "gpt-5", [1_200, 50, 1_000, 0]));
    session(&sessions, &a, start, &first);
    let worker = heeler(&home, &["usage", "worker"]);
    assert!(worker.status.success(), "{worker:?}");
    let doc = totals(&home);
    let t = doc.get("totals").unwrap();
    assert_eq!(int(t, "requests"), Some(5));
    assert_eq!(int(t, "input"), Some(3_600));
    assert_eq!(int(t, "output"), Some(2_660));
    assert_eq!(int(t, "cache_read"), Some(12_500));
    // 0.0537625 + 200 x 1.25e-6 + 50 x 10e-6 + 1,000 x 0.125e-6 =
    // 0.0537625 + 0.00025 + 0.0005 + 0.000125 = 0.0546375.
    let cost = t.get("cost_usd").and_then(Value::as_f64).unwrap();
    assert!((cost - 0.054_637_5).abs() <= 5.1e-7, "{cost}");

    // The coverage names Cline and its sessions directory; the app's
    // document does not.
    let summary = heeler(&home, &["usage", "--json"]);
    settle(&home);
    let summary = json::parse(String::from_utf8(summary.stdout).unwrap().trim_end()).unwrap();
    let cline = summary.get("coverage").unwrap().get("cline").unwrap();
    let root = sessions.display().to_string();
    assert_eq!(
        cline.get("roots").unwrap().to_json(),
        format!("[\"{root}\"]")
    );
    assert_eq!(cline.get("files_seen").and_then(Value::as_i64), Some(2));
    let query = heeler(&home, &["usage", "query"]);
    settle(&home);
    let text = String::from_utf8(query.stdout).unwrap();
    for absent in ["cline-mystery-1", "gpt-5", "cline-proj", r#""cline""#] {
        assert!(!text.contains(absent), "{absent} in the query: {text}");
    }
}

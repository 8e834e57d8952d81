//! Cline session documents to model calls.
//!
//! Cline's CLI (3.x, `apps/cli`) and its VS Code extension both run the
//! Cline SDK (cline/cline at 21cb8d2525bcedf1f4b6890b27a74a14fe7451e4,
//! `sdk/packages/core`), which keeps each session's transcript in
//! `<sessions>/<sessionId>/<sessionId>.messages.json` (a subagent's or a
//! team task's in its root session's directory, `<agentId>.messages.json`:
//! `services/session-artifacts.ts`). `SessionManifestStore.
//! persistSessionMessages` (`session/stores/session-manifest-store.ts`)
//! rewrites it whole with `writeFileSync` after each turn: one JSON document
//! `{"version":1,"updated_at","agent","sessionId","origin","messages":[…]}`
//! (`buildMessagesFilePayload` in `services/session-data.ts`, contract in
//! `docs/messages-contract-v1.md`).
//!
//! Each assistant message is one model call: `AgentRuntime.
//! generateAssistantMessage` (`sdk/packages/agents/src/agent-runtime.ts`)
//! stamps it with `metrics`, the usage delta of that one request
//! (`usageDelta`), and `modelInfo {id, provider}`; `ts` is its creation time
//! in epoch milliseconds (`agentMessageToMessageWithMetadata` in
//! `runtime/config/agent-message-codec.ts`), and `id` a stable id. A turn
//! without per-request metrics gets the run's total on its last assistant
//! message instead (`withLatestAssistantTurnMetadata`): still counted once.
//! The SDK normalises provider usage so that `metrics.inputTokens` is the
//! whole prompt, cache reads and writes included (`getCurrentContextSize`
//! in `services/usage.ts`), so the uncached input is `inputTokens -
//! cacheReadTokens - cacheWriteTokens`; `outputTokens` is all output
//! (reasoning included, its own count is not persisted:
//! `agentMetricsToMetrics`). Cline's own `cost` is not used: the bundled
//! table prices every call.
//!
//! A fork (`forkCurrentSession` in `apps/cli/src/runtime/interactive/
//! session-runtime.ts`), a checkpoint restore or a mode-switch restart
//! starts a new session seeded with the old one's messages, unchanged (ids,
//! `ts`, `metrics`): a session's id is `<Date.now()>_<nanoid>`
//! (`createSessionId` in `sdk/packages/shared/src/session/index.ts`), so an
//! assistant message stamped before the session was created is a copy its
//! source file counts, and is skipped. A subagent's session id
//! (`<rootId>__<agentId>`, `session/models/session-graph.ts`) starts with its
//! root's, which is older than any of its own calls.
//!
//! The document names no directory: the session's manifest beside it,
//! `<id>/<id>.json` (`SessionManifestSchema` in `session/models/
//! session-manifest.ts`, written at the session's start), has its `cwd`,
//! read by [`begin`] before each parse.

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use crate::usage::event::{FileParse, Message, Tokens};
use crate::usage::parse::jsonpick::Cursor;

/// The bytes of a manifest read at most: its `cwd` comes before its
/// long members (`prompt`, `metadata`), in `SessionManifestSchema`'s order.
const MANIFEST_HEAD: usize = 16 * 1024;

/// Starts the parse of the document at `path`: the `cwd` of its session's
/// manifest (`<dir>/<dir name>.json`, a subagent's document sharing its
/// root's), when there is one.
pub fn begin(fp: &mut FileParse, path: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let Some(dir) = path.parent() else { return };
    let Some(name) = dir.file_name() else { return };
    let mut manifest = dir.join(name).into_os_string();
    manifest.push(".json");
    // Non-blocking, so a FIFO put there is not waited on.
    let Ok(mut file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&manifest)
    else {
        return;
    };
    let mut head = [0u8; MANIFEST_HEAD];
    let mut len = 0;
    while len < head.len() {
        match file.read(&mut head[len..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => len += n,
        }
    }
    if let Some(cwd) = manifest_cwd(&head[..len]) {
        fp.codex.cwd = fp.intern_utf8(&cwd);
    }
}

/// A manifest's `cwd`: the string member `cwd` of the JSON object it
/// starts with, read up to where its head ends or stops being JSON.
fn manifest_cwd(head: &[u8]) -> Option<Vec<u8>> {
    let mut cwd = None;
    let mut c = Cursor::new(head);
    let _ = c.object(|key, c| {
        match key {
            b"cwd" => cwd = c.text()?,
            _ => c.skip()?,
        }
        Some(())
    });
    cwd.map(Cow::into_owned)
}

/// Parses one whole `*.messages.json` document into a fresh `fp`: every
/// assistant message with usage is one call, unless the session was
/// seeded with it; a document `JSON.parse` refuses counts nothing and is
/// malformed.
pub fn parse_document(fp: &mut FileParse, bytes: &[u8]) {
    let mut doc = Doc::default();
    let mut c = Cursor::new(bytes);
    if pick_document(&mut c, &mut doc).is_none() || !c.at_end() {
        fp.malformed += 1;
        return;
    }
    let session = String::from_utf8_lossy(doc.session.as_deref().unwrap_or_default()).into_owned();
    let created_ms = created_ms(session.as_bytes());
    let fallback_ts = doc
        .updated_at
        .as_deref()
        .and_then(crate::usage::time::timestamp_of)
        .unwrap_or(0);
    fp.codex.thread_id = session;
    let cwd = fp.string(fp.codex.cwd).to_owned();
    for call in &doc.calls {
        if let (Some(created), Some(ts)) = (created_ms, call.ts_ms)
            && ts < created
        {
            continue;
        }
        push(fp, call, &cwd, fallback_ts);
    }
}

/// Hands one call to `fp` in the shared contract's tokens.
fn push(fp: &mut FileParse, call: &Call, cwd: &str, fallback_ts: i64) {
    let m = &call.metrics;
    let tokens = Tokens {
        input: m
            .input
            .saturating_sub(m.cache_read)
            .saturating_sub(m.cache_write),
        cache_read: m.cache_read,
        cache_write_5m: m.cache_write,
        cache_write_1h: 0,
        output: m.output,
        reasoning: m.reasoning.min(m.output),
    };
    if tokens.total() == 0 {
        return;
    }
    let ts = call.ts_ms.map_or(fallback_ts, |ms| {
        i64::try_from(ms / 1000).unwrap_or(i64::MAX)
    });
    let model = String::from_utf8_lossy(call.model.as_deref().unwrap_or_default());
    fp.push_message(&Message {
        ts,
        model: &model,
        cwd,
        session: "",
        id: call.id.as_deref().unwrap_or_default(),
        tokens,
    });
}

/// When a session was created, in epoch milliseconds: the digits its id
/// starts with, before the `_` (`createSessionId`); `None` for an id
/// made otherwise (then nothing is taken for a copy).
fn created_ms(session: &[u8]) -> Option<u64> {
    let digits = session.iter().take_while(|b| b.is_ascii_digit()).count();
    // Epoch milliseconds since 2001 have 13 digits, until the year 2286.
    if digits != 13 || session.get(digits) != Some(&b'_') {
        return None;
    }
    std::str::from_utf8(&session[..digits]).ok()?.parse().ok()
}

/// The members of the document that Usage reads.
#[derive(Default)]
struct Doc<'a> {
    session: Option<Cow<'a, [u8]>>,
    updated_at: Option<Cow<'a, [u8]>>,
    calls: Vec<Call<'a>>,
}

/// One assistant message with `metrics`.
#[derive(Default)]
struct Call<'a> {
    id: Option<Cow<'a, [u8]>>,
    ts_ms: Option<u64>,
    model: Option<Cow<'a, [u8]>>,
    metrics: Metrics,
}

/// A message's `metrics`, as the SDK writes them.
#[derive(Default)]
struct Metrics {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    reasoning: u64,
}

fn pick_document<'a>(c: &mut Cursor<'a>, doc: &mut Doc<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"sessionId" => doc.session = c.text()?,
            b"updated_at" => doc.updated_at = c.bytes()?,
            b"messages" if c.raw_is_array() => c.array(|c| {
                if !c.raw_is_object() {
                    return c.skip();
                }
                let mut call = Call::default();
                let (mut assistant, mut has_metrics) = (false, false);
                pick_message(c, &mut call, &mut assistant, &mut has_metrics)?;
                if assistant && has_metrics {
                    doc.calls.push(call);
                }
                Some(())
            })?,
            _ => c.skip()?,
        }
        Some(())
    })
}

fn pick_message<'a>(
    c: &mut Cursor<'a>,
    call: &mut Call<'a>,
    assistant: &mut bool,
    has_metrics: &mut bool,
) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"id" => call.id = c.bytes()?,
            b"role" => *assistant = c.bytes()?.as_deref() == Some(b"assistant"),
            b"ts" => call.ts_ms = c.count()?,
            b"modelInfo" if c.raw_is_object() => c.object(|key, c| {
                match key {
                    b"id" => call.model = c.text()?,
                    _ => c.skip()?,
                }
                Some(())
            })?,
            b"metrics" if c.raw_is_object() => {
                *has_metrics = true;
                pick_metrics(c, &mut call.metrics)?;
            }
            _ => c.skip()?,
        }
        Some(())
    })
}

fn pick_metrics(c: &mut Cursor, m: &mut Metrics) -> Option<()> {
    c.object(|key, c| {
        let slot = match key {
            b"inputTokens" => &mut m.input,
            b"outputTokens" => &mut m.output,
            b"cacheReadTokens" => &mut m.cache_read,
            b"cacheWriteTokens" => &mut m.cache_write,
            b"reasoningTokenCount" => &mut m.reasoning,
            _ => return c.skip(),
        };
        *slot = c.count()?.unwrap_or(0);
        Some(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::{EventKind, message_tokens};

    /// An assistant message as the SDK persists it (`StoredMessageWithMetadata`
    /// after `withLatestAssistantTurnMetadata`): the field names are the
    /// writer's; `u` is [inputTokens, outputTokens, cacheReadTokens,
    /// cacheWriteTokens].
    fn assistant(id: &str, ts: u64, model: &str, u: [u64; 4]) -> String {
        let [input, output, read, write] = u;
        format!(
            r#"{{
      "id": "{id}",
      "role": "assistant",
      "content": [{{ "type": "text", "text": "done" }}],
      "ts": {ts},
      "modelInfo": {{ "id": "{model}", "provider": "anthropic", "family": "claude-sonnet-4" }},
      "metrics": {{ "inputTokens": {input}, "outputTokens": {output}, "cacheReadTokens": {read}, "cacheWriteTokens": {write}, "cost": 0.13 }}
    }}"#
        )
    }
    /// An earlier assistant message of a turn: `modelInfo`, no `metrics`.
    fn assistant_without_metrics(id: &str, ts: u64) -> String {
        format!(
            r#"{{ "id": "{id}", "role": "assistant", "ts": {ts}, "modelInfo": {{ "id": "claude-sonnet-4-6", "provider": "anthropic" }}, "content": [{{ "type": "tool_use", "id": "t1", "name": "read_files", "input": {{ "path": "/p/README.md" }} }}] }}"#
        )
    }
    fn user(id: &str) -> String {
        format!(
            r#"{{ "id": "{id}", "role": "user", "content": [{{ "type": "tool_result", "tool_use_id": "t1", "content": "inputTokens", "is_error": false }}] }}"#
        )
    }
    /// The document `buildMessagesFilePayload` writes, pretty-printed as
    /// `JSON.stringify(payload, null, 2)` writes it.
    fn document(session: &str, messages: &[String]) -> String {
        format!(
            "{{\n  \"version\": 1,\n  \"updated_at\": \"2026-12-04T10:00:00.000Z\",\n  \"agent\": \"lead\",\n  \"sessionId\": \"{session}\",\n  \"origin\": {{ \"source\": \"cli\", \"mode\": \"user\", \"sessionId\": \"{session}\" }},\n  \"messages\": [\n    {}\n  ],\n  \"system_prompt\": \"You are Cline\"\n}}\n",
            messages.join(",\n    ")
        )
    }
    fn parse(doc: &str) -> FileParse {
        let mut fp = FileParse::default();
        parse_document(&mut fp, doc.as_bytes());
        fp
    }
    fn sums(fp: &FileParse) -> [u64; 5] {
        let sum = |i: usize| fp.events.iter().map(|e| e.t[i]).sum::<u64>();
        [sum(0), sum(1), sum(2), sum(4), fp.events.len() as u64]
    }

    // 1784094053271 ms: the session's creation (`createSessionId`).
    const SESSION: &str = "1784094053271_p8pzo";

    #[test]
    fn each_assistant_message_with_metrics_is_one_call() {
        let fp = parse(&document(
            SESSION,
            &[
                user("u1"),
                assistant_without_metrics("a0", 1_784_094_055_000),
                user("u2"),
                assistant(
                    "a1",
                    1_784_094_060_000,
                    "claude-sonnet-4-6",
                    [1_200, 300, 800, 100],
                ),
                assistant("a2", 1_784_094_070_500, "gpt-5", [5_000, 50, 4_000, 0]),
                // A request that produced nothing billed: no call.
                assistant("a3", 1_784_094_080_000, "gpt-5", [0, 0, 0, 0]),
            ],
        ));
        assert_eq!(fp.malformed, 0);
        // By hand: input (1,200 - 800 - 100) + (5,000 - 4,000 - 0) = 300 +
        // 1,000 = 1,300; cache reads 800 + 4,000 = 4,800; cache writes 100;
        // output 300 + 50 = 350; two calls.
        assert_eq!(sums(&fp), [1_300, 4_800, 100, 350, 2]);
        let e = fp.events[0];
        assert_eq!(e.kind, EventKind::Message);
        assert_eq!(fp.string(e.model), "claude-sonnet-4-6");
        assert_eq!(fp.string(fp.events[1].model), "gpt-5");
        // Epoch milliseconds to seconds, truncated.
        assert_eq!(e.ts, 1_784_094_060);
        assert_eq!(fp.events[1].ts, 1_784_094_070);
        assert_eq!(fp.codex.thread_id, SESSION);
        assert_eq!(e.session, 0, "the file's session");
        assert_ne!(e.key, fp.events[1].key, "each call keeps its id");
        assert_eq!(message_tokens(e.t).reasoning, 0);
    }

    #[test]
    fn a_seeded_session_skips_the_history_it_copied() {
        // A fork made at 1784100000000 ms of the session above: its messages
        // as they were (ids, `ts`, `metrics`), then the fork's own call.
        let fp = parse(&document(
            "1784100000000_f0rk1",
            &[
                user("u1"),
                assistant(
                    "a1",
                    1_784_094_060_000,
                    "claude-sonnet-4-6",
                    [1_200, 300, 800, 100],
                ),
                user("u3"),
                assistant(
                    "a9",
                    1_784_100_004_000,
                    "claude-sonnet-4-6",
                    [900, 20, 700, 0],
                ),
            ],
        ));
        // By hand: only a9: input 900 - 700 = 200, reads 700, output 20.
        assert_eq!(sums(&fp), [200, 700, 0, 20, 1]);
        // A subagent's session id starts with its root's: its own calls,
        // all after the root was created, count.
        let sub = parse(&document(
            &format!("{SESSION}__planner"),
            &[assistant(
                "s1",
                1_784_094_100_000,
                "claude-sonnet-4-6",
                [10, 5, 0, 0],
            )],
        ));
        assert_eq!(sums(&sub), [10, 0, 0, 5, 1]);
        // An id made otherwise tells no creation time: nothing is skipped.
        let custom = parse(&document(
            "my-session",
            &[assistant("c1", 1_000, "m", [10, 5, 0, 0])],
        ));
        assert_eq!(sums(&custom), [10, 0, 0, 5, 1]);
    }

    #[test]
    fn a_rewritten_document_is_its_calls_once() {
        // After each turn the writer rewrites the whole document with every
        // message so far: the grown document holds the first call once and
        // the new one.
        let first = assistant(
            "a1",
            1_784_094_060_000,
            "claude-sonnet-4-6",
            [1_200, 300, 800, 100],
        );
        let second = assistant(
            "a2",
            1_784_094_090_000,
            "claude-sonnet-4-6",
            [2_000, 40, 1_900, 0],
        );
        let before = parse(&document(SESSION, &[user("u1"), first.clone()]));
        let after = parse(&document(SESSION, &[user("u1"), first, user("u2"), second]));
        assert_eq!(sums(&before), [300, 800, 100, 300, 1]);
        // By hand: 300 + (2,000 - 1,900) = 400 input, 800 + 1,900 = 2,700
        // reads, 100 writes, 300 + 40 = 340 output.
        assert_eq!(sums(&after), [400, 2_700, 100, 340, 2]);
        assert_eq!(after.events[0], before.events[0]);
    }

    #[test]
    fn input_below_its_cache_parts_saturates_and_a_missing_ts_takes_the_document_s() {
        let doc = document(
            SESSION,
            &[r#"{ "id": "a1", "role": "assistant", "modelInfo": { "id": "m", "provider": "p" }, "metrics": { "inputTokens": 5, "outputTokens": 7, "cacheReadTokens": 9, "cacheWriteTokens": 1, "reasoningTokenCount": 3 }, "content": [] }"#.to_string()],
        );
        let fp = parse(&doc);
        // Input 5 - 9 - 1 saturates at 0; output 7 of which 3 reasoning.
        assert_eq!(sums(&fp), [0, 9, 1, 7, 1]);
        assert_eq!(message_tokens(fp.events[0].t).reasoning, 3);
        // `updated_at` 2026-12-04T10:00:00Z: 20,791 days after 1970-01-01.
        assert_eq!(fp.events[0].ts, 20_791 * 86_400 + 10 * 3_600);
    }

    #[test]
    fn a_torn_or_refused_document_counts_nothing() {
        let whole = document(
            SESSION,
            &[assistant("a1", 1_784_094_060_000, "m", [3, 2, 0, 0])],
        );
        // `writeFileSync` is not atomic: a reader can see half a document.
        let torn = parse(&whole[..whole.len() / 2]);
        assert!(torn.events.is_empty());
        assert_eq!(torn.malformed, 1);
        let trailing = parse(&format!("{whole}{{}}"));
        assert_eq!((trailing.events.len(), trailing.malformed), (0, 1));
        // Shapes `JSON.parse` reads: nothing to count, nothing malformed.
        for doc in [
            r#"{"messages":null}"#,
            r#"{"messages":[1,"x",null,{"role":"assistant","metrics":null}]}"#,
            r#"{"sessionId":7,"messages":[{"role":"user","metrics":{"inputTokens":9}}]}"#,
            "[]",
        ] {
            let fp = parse(doc);
            assert!(fp.events.is_empty(), "{doc}");
            assert_eq!(fp.malformed, u64::from(doc == "[]"), "{doc}");
        }
    }

    #[test]
    fn the_directory_is_the_manifest_s_cwd() {
        let dir = crate::base::scratch::ScratchDir::new("cline-manifest");
        let session = dir.path().join(SESSION);
        std::fs::create_dir_all(&session).unwrap();
        let doc = session.join(format!("{SESSION}.messages.json"));
        let sub = session.join("planner.messages.json");
        let body = document(
            SESSION,
            &[assistant("a1", 1_784_094_060_000, "m", [3, 2, 0, 0])],
        );
        let read = |path: &Path| {
            let mut fp = FileParse::default();
            begin(&mut fp, path);
            parse_document(&mut fp, body.as_bytes());
            fp.string(fp.events[0].cwd).to_owned()
        };
        assert_eq!(read(&doc), "", "no manifest");
        // The manifest as `SessionManifestSchema` has it (fields trimmed).
        std::fs::write(
            session.join(format!("{SESSION}.json")),
            format!(r#"{{"version":1,"session_id":"{SESSION}","source":"cli","pid":1,"started_at":"2026-07-15T05:40:53.271Z","status":"running","interactive":true,"provider":"anthropic","model":"m","cwd":"/home/u/proj","workspace_root":"/home/u/proj","enable_tools":true,"enable_spawn":true,"enable_teams":false}}"#),
        )
        .unwrap();
        assert_eq!(read(&doc), "/home/u/proj");
        assert_eq!(read(&sub), "/home/u/proj", "a subagent's, its root's");
        // A manifest cut after its `cwd` (torn, or longer than the head
        // read) still tells it; one cut in it does not.
        std::fs::write(
            session.join(format!("{SESSION}.json")),
            r#"{"version":1,"cwd":"/home/u/p2","prompt":"long"#,
        )
        .unwrap();
        assert_eq!(read(&doc), "/home/u/p2");
        std::fs::write(session.join(format!("{SESSION}.json")), "{\"cwd\":\"/ho").unwrap();
        assert_eq!(read(&doc), "", "a torn manifest");
        // A FIFO in its place is not waited on.
        std::fs::remove_file(session.join(format!("{SESSION}.json"))).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(session.join(format!("{SESSION}.json")))
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(read(&doc), "", "a FIFO");
    }

    #[test]
    fn the_creation_time_is_the_13_digits_an_id_starts_with() {
        assert_eq!(created_ms(b"1784094053271_p8pzo"), Some(1_784_094_053_271));
        assert_eq!(
            created_ms(b"1784094053271_p8pzo__teamtask__a__b"),
            Some(1_784_094_053_271)
        );
        assert_eq!(created_ms(b"178409405327_p8pzo"), None);
        assert_eq!(created_ms(b"1784094053271"), None);
        assert_eq!(created_ms(b"hubreq_1784094053271_x"), None);
        assert_eq!(created_ms(b""), None);
    }
}

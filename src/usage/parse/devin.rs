//! Devin for Terminal's (Cognition's Devin CLI) message nodes to model calls.
//!
//! Devin's CLI is closed source: this reader follows what its database
//! holds, as other public readers of it describe it (junhoyeo/tokscale
//! `crates/tokscale-core/src/sessions/devin.rs` @01a88460 and
//! getagentseal/codeburn `docs/providers/devin.md` @5b18a0c3), not its
//! writer. The CLI keeps its sessions in the SQLite database
//! `sessions.db` (in `devin/cli` below the XDG data directory): a
//! `sessions` table (`id`, `working_directory`, `model`, …) and a
//! `message_nodes` table, one row per message of a session's tree
//! (`row_id`, `session_id`, `node_id`, `parent_node_id`, `created_at` in
//! Unix seconds, and `chat_message`, the message as JSON).
//!
//! An assistant message (`role` `"assistant"`) is one model call: its
//! `metadata` has `generation_model`, `request_id`, `created_at` (the
//! call's time; the row's is when the node was stored) and `metrics`
//! `{input_tokens, output_tokens, cache_read_tokens,
//! cache_creation_tokens}`. `input_tokens` is taken as the prompt tokens
//! without the cached ones (codeburn reports it so; tokscale reads it so,
//! as Anthropic's usage has it); the cache counts may be null; no
//! reasoning count is kept. A retried request is stored as a sibling node
//! with the same `request_id` and the same metrics, so a call's id is its
//! session and request id (the row's id when it has none): a retry counts
//! once. The model is `generation_model`, else the session's `model`
//! unless that is the routing mode `adaptive` or a `MODEL_` placeholder
//! (then the call's model is unknown and it is shown unpriced).

use std::path::Path;

use crate::base::sqlite;
use crate::usage::event::{FileParse, Message, Tokens};
use crate::usage::parse::jsonpick::Cursor;

/// The rows read: every message node, with its session's model and
/// directory. Which are an assistant's is decided here, not by SQL: a
/// node without the word is passed over by a vectorised search (SQLite's
/// `instr` compares at every byte, twice the cost of the whole read), and
/// [`parse_node`] reads the rest, so one malformed message counts as
/// malformed instead of failing the read (`json_extract` would).
pub(crate) const QUERY: &str = "SELECT m.row_id, m.session_id, m.created_at, m.chat_message, \
     s.model, s.working_directory FROM message_nodes m LEFT JOIN sessions s ON s.id = m.session_id";

/// Message nodes read from one database at most; past it the rest are
/// left out and counted malformed.
pub(crate) const MAX_NODES: u64 = 4_000_000;

/// One `message_nodes` row as [`QUERY`] reads it (numbers as decimal
/// text, NULL as empty).
#[derive(Debug, Clone, Copy, Default)]
pub struct Node<'a> {
    pub row_id: &'a [u8],
    pub session: &'a [u8],
    /// The row's `created_at` (Unix seconds).
    pub created_at: &'a [u8],
    pub chat_message: &'a [u8],
    /// The session's `model` (may be a routing mode).
    pub session_model: &'a [u8],
    pub cwd: &'a [u8],
}

/// Reads every assistant message of the database at `path` into `fp`.
/// Returns the bytes of message JSON read.
pub(crate) fn read_db(fp: &mut FileParse, path: &Path) -> Result<u64, sqlite::Error> {
    let mut bytes = 0u64;
    let mut rows = 0u64;
    sqlite::for_each_row(
        path,
        QUERY,
        |[row_id, session, created_at, chat, model, cwd]| {
            rows += 1;
            if rows > MAX_NODES {
                fp.malformed += 1;
                return false;
            }
            bytes += chat.len() as u64;
            if memchr::memmem::find(chat, b"assistant").is_none() {
                return true;
            }
            let node = Node {
                row_id,
                session,
                created_at,
                chat_message: chat,
                session_model: model,
                cwd,
            };
            parse_node(fp, &node);
            true
        },
    )?;
    Ok(bytes)
}

/// What a message's JSON tells of its call.
#[derive(Default)]
struct Fields<'a> {
    assistant: bool,
    model: Option<std::borrow::Cow<'a, [u8]>>,
    request_id: Option<std::borrow::Cow<'a, [u8]>>,
    created_at: Option<i64>,
    metrics: bool,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

fn pick<'a>(c: &mut Cursor<'a>, f: &mut Fields<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"role" => f.assistant = c.bytes()?.as_deref() == Some(b"assistant"),
            b"metadata" if c.raw_is_object() => metadata(c, f)?,
            _ => c.skip()?,
        }
        Some(())
    })
}

fn metadata<'a>(c: &mut Cursor<'a>, f: &mut Fields<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"generation_model" => f.model = c.text()?,
            b"request_id" => f.request_id = c.text()?,
            b"created_at" => f.created_at = time_of(c.raw()?),
            b"metrics" if c.raw_is_object() => {
                f.metrics = true;
                c.object(|key, c| {
                    match key {
                        b"input_tokens" => f.input = c.count()?.unwrap_or(0),
                        b"output_tokens" => f.output = c.count()?.unwrap_or(0),
                        b"cache_read_tokens" => f.cache_read = c.count()?.unwrap_or(0),
                        b"cache_creation_tokens" => f.cache_write = c.count()?.unwrap_or(0),
                        _ => c.skip()?,
                    }
                    Some(())
                })?
            }
            _ => c.skip()?,
        }
        Some(())
    })
}

/// Unix seconds of a time as a JSON value: a number of seconds, or of
/// milliseconds when it is past 10^10 (the year 2286 in seconds), or an
/// RFC 3339 string.
fn time_of(raw: &[u8]) -> Option<i64> {
    if let Some(text) = raw.strip_prefix(b"\"").and_then(|r| r.strip_suffix(b"\"")) {
        return crate::usage::time::timestamp_of(text);
    }
    seconds_of(raw)
}

/// Unix seconds of a number's decimal text (seconds, or milliseconds past
/// 10^10); `None` for anything else or a time before 1970 or past 9999.
fn seconds_of(text: &[u8]) -> Option<i64> {
    let x: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    if !x.is_finite() || x < 0.0 {
        return None;
    }
    let secs = if x >= 1e10 { x / 1000.0 } else { x };
    // 253,402,300,800 is 10000-01-01T00:00:00Z.
    (secs < 253_402_300_800.0).then_some(secs as i64)
}

/// The model a session's `model` names, or "" for a routing mode
/// (`adaptive`) or a placeholder (`MODEL_…`), which name none.
fn session_model(model: &[u8]) -> &[u8] {
    if model.eq_ignore_ascii_case(b"adaptive") || model.starts_with(b"MODEL_") {
        &[]
    } else {
        model
    }
}

/// Parses one message node into `fp`: an assistant message with metrics
/// is one model call. A candidate whose JSON is not an object is counted
/// malformed.
pub fn parse_node(fp: &mut FileParse, node: &Node) {
    let mut f = Fields::default();
    let mut c = Cursor::new(node.chat_message);
    if pick(&mut c, &mut f).is_none() || !c.at_end() {
        fp.malformed += 1;
        return;
    }
    if !f.assistant || !f.metrics {
        return;
    }
    let tokens = Tokens {
        input: f.input,
        cache_read: f.cache_read,
        cache_write_5m: f.cache_write,
        cache_write_1h: 0,
        output: f.output,
        reasoning: 0,
    };
    if tokens.total() == 0 {
        return;
    }
    let Some(ts) = f.created_at.or_else(|| seconds_of(node.created_at)) else {
        return;
    };
    let model = match f.model.as_deref() {
        Some(m) if !m.is_empty() => m,
        _ => session_model(node.session_model),
    };
    // A retry repeats its request id (see the module's doc).
    let id: Vec<u8> = match f.request_id.as_deref() {
        Some(r) if !r.is_empty() => [node.session, b"\0r", r].concat(),
        _ => [b"\0n".as_slice(), node.row_id].concat(),
    };
    fp.push_message(&Message {
        ts,
        model: &String::from_utf8_lossy(model),
        cwd: &String::from_utf8_lossy(node.cwd),
        session: &String::from_utf8_lossy(node.session),
        id: &id,
        tokens,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::{EventKind, message_tokens};

    /// An assistant message's `chat_message` as the CLI writes it.
    fn assistant(model: &str, request: &str, metrics: &str) -> String {
        format!(
            r#"{{"role":"assistant","content":"done","tool_calls":[{{"id":"t1","name":"exec","arguments":"{{}}"}}],"metadata":{{"num_tokens":147,"generation_model":"{model}","request_id":"{request}","metrics":{metrics}}}}}"#
        )
    }

    fn node<'a>(row: &'a str, chat: &'a str, session_model: &'a str) -> Node<'a> {
        Node {
            row_id: row.as_bytes(),
            session: b"sess-1",
            created_at: b"1764800000",
            chat_message: chat.as_bytes(),
            session_model: session_model.as_bytes(),
            cwd: b"/home/u/proj",
        }
    }

    fn calls(fp: &FileParse) -> Vec<(i64, String, Tokens, u64)> {
        fp.events
            .iter()
            .filter(|e| e.kind == EventKind::Message)
            .map(|e| {
                (
                    e.ts,
                    fp.string(e.model).to_owned(),
                    message_tokens(e.t),
                    e.key,
                )
            })
            .collect()
    }

    #[test]
    fn an_assistant_message_is_one_call_with_its_metrics() {
        let mut fp = FileParse::default();
        let chat = assistant(
            "claude-sonnet-4-5",
            "req_1",
            r#"{"input_tokens":31134,"output_tokens":147,"cache_read_tokens":8,"cache_creation_tokens":null,"total_time_ms":2846}"#,
        );
        parse_node(&mut fp, &node("1", &chat, "adaptive"));
        let user =
            r#"{"role":"user","content":"assistant, please","metadata":{"is_user_input":true}}"#;
        parse_node(&mut fp, &node("2", user, "adaptive"));
        let got = calls(&fp);
        assert_eq!(got.len(), 1);
        // No call time in the metadata: the row's 1,764,800,000.
        assert_eq!(got[0].0, 1_764_800_000);
        assert_eq!(got[0].1, "claude-sonnet-4-5");
        let t = got[0].2;
        assert_eq!(
            (
                t.input,
                t.cache_read,
                t.cache_write_5m,
                t.output,
                t.reasoning
            ),
            (31134, 8, 0, 147, 0)
        );
        let e = fp.events[0];
        assert_eq!(fp.string(e.session), "sess-1");
        assert_eq!(fp.string(e.cwd), "/home/u/proj");
        assert_eq!(fp.malformed, 0);
    }

    #[test]
    fn the_call_time_and_model_fall_back_as_the_module_says() {
        // metadata.created_at as seconds, milliseconds and RFC 3339.
        for (at, ts) in [
            ("1764800100", 1_764_800_100),
            ("1764800100500", 1_764_800_100),
            ("1764800100.25", 1_764_800_100),
            (r#""2025-12-03T22:15:00Z""#, 1_764_800_100),
        ] {
            let chat = format!(
                r#"{{"role":"assistant","metadata":{{"created_at":{at},"metrics":{{"input_tokens":1,"output_tokens":1}}}}}}"#
            );
            let mut fp = FileParse::default();
            parse_node(&mut fp, &node("1", &chat, "kimi-k2"));
            let got = calls(&fp);
            assert_eq!(got[0].0, ts, "{at}");
            // No generation_model: the session's.
            assert_eq!(got[0].1, "kimi-k2");
        }
        // A session's routing mode names no model: unknown (unpriced).
        let chat =
            r#"{"role":"assistant","metadata":{"metrics":{"input_tokens":1,"output_tokens":1}}}"#;
        for mode in ["adaptive", "MODEL_SWE_1_5", ""] {
            let mut fp = FileParse::default();
            parse_node(&mut fp, &node("1", chat, mode));
            assert_eq!(calls(&fp)[0].1, "", "{mode}");
        }
    }

    #[test]
    fn a_retry_has_its_request_s_key_and_nodes_without_one_their_row_s() {
        let metrics = r#"{"input_tokens":10,"output_tokens":5}"#;
        let first = assistant("m", "req_a", metrics);
        let other = assistant("m", "req_b", metrics);
        let bare =
            r#"{"role":"assistant","metadata":{"metrics":{"input_tokens":10,"output_tokens":5}}}"#;
        let mut fp = FileParse::default();
        parse_node(&mut fp, &node("1", &first, ""));
        parse_node(&mut fp, &node("2", &first, ""));
        parse_node(&mut fp, &node("3", &other, ""));
        parse_node(&mut fp, &node("4", bare, ""));
        parse_node(&mut fp, &node("5", bare, ""));
        let keys: Vec<u64> = calls(&fp).iter().map(|c| c.3).collect();
        assert_eq!(keys.len(), 5);
        assert_eq!(keys[0], keys[1]);
        assert_ne!(keys[0], keys[2]);
        assert_ne!(keys[3], keys[4]);
        assert!(keys.iter().all(|&k| k != 0));
    }

    #[test]
    fn messages_without_metrics_or_tokens_and_bad_json_count_nothing() {
        let mut fp = FileParse::default();
        let no_metrics = r#"{"role":"assistant","metadata":{"num_tokens":147}}"#;
        let zero =
            r#"{"role":"assistant","metadata":{"metrics":{"input_tokens":0,"output_tokens":0}}}"#;
        let negative =
            r#"{"role":"assistant","metadata":{"metrics":{"input_tokens":-5,"output_tokens":-1}}}"#;
        for chat in [no_metrics, zero, negative] {
            parse_node(&mut fp, &node("1", chat, "m"));
        }
        assert!(fp.events.is_empty());
        assert_eq!(fp.malformed, 0);
        for bad in ["", "[]", "{\"role\":", "{} {}", "assistant"] {
            parse_node(&mut fp, &node("1", bad, "m"));
        }
        assert_eq!(fp.malformed, 5);
        assert!(fp.events.is_empty());
    }

    /// A `sessions.db` with the CLI's two tables and `nodes` of (session,
    /// row time, chat message).
    fn db(path: &Path, nodes: &[(&str, i64, &str)]) {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE sessions (id TEXT PRIMARY KEY, working_directory TEXT NOT NULL,
                 backend_type TEXT NOT NULL, model TEXT NOT NULL, agent_mode TEXT NOT NULL,
                 created_at INTEGER NOT NULL, last_activity_at INTEGER NOT NULL);
             INSERT INTO sessions VALUES ('a', '/w/a', 'windsurf', 'adaptive', 'normal', 1, 1);
             INSERT INTO sessions VALUES ('b', '/w/b', 'windsurf', 'gpt-5', 'normal', 1, 1);
             CREATE TABLE message_nodes (row_id INTEGER PRIMARY KEY AUTOINCREMENT,
                 session_id TEXT NOT NULL, node_id INTEGER NOT NULL, parent_node_id INTEGER,
                 chat_message TEXT NOT NULL, created_at INTEGER NOT NULL, metadata TEXT);",
        )
        .unwrap();
        for (session, at, chat) in nodes {
            conn.execute(
                "INSERT INTO message_nodes (session_id, node_id, chat_message, created_at) \
                 VALUES (?1, 1, ?2, ?3)",
                rusqlite::params![session, chat, at],
            )
            .unwrap();
        }
    }

    #[test]
    fn a_database_s_assistant_nodes_are_its_calls_with_their_session_s_facts() {
        let scratch = crate::base::scratch::ScratchDir::new("devin-db");
        let path = scratch.path().join("sessions.db");
        let a = assistant(
            "claude-sonnet-4-5",
            "r1",
            r#"{"input_tokens":100,"output_tokens":20,"cache_read_tokens":500,"cache_creation_tokens":30}"#,
        );
        let b =
            r#"{"role":"assistant","metadata":{"metrics":{"input_tokens":7,"output_tokens":3}}}"#;
        let user = r#"{"role":"user","content":"hi"}"#;
        db(
            &path,
            &[
                ("a", 10, &a),
                ("a", 11, &a),
                ("a", 12, user),
                ("b", 20, b),
                ("b", 21, "{\"assistant\":"),
            ],
        );
        let mut fp = FileParse::default();
        let bytes = read_db(&mut fp, &path).unwrap();
        // Every node's message is read: a, a, the user's, b and the
        // broken node, 2 × a.len() + user.len() + b.len() + 13 bytes.
        assert_eq!(bytes, (2 * a.len() + user.len() + b.len() + 13) as u64);
        assert_eq!(fp.malformed, 1);
        let got = calls(&fp);
        assert_eq!(got.len(), 3);
        // The retry has its request's key; sums over the distinct calls:
        // input 100 + 7, output 20 + 3, cache 500 read and 30 written.
        assert_eq!(got[0].3, got[1].3);
        let (t, b) = (got[0].2, got[2].2);
        assert_eq!((t.input + b.input, t.output + b.output), (107, 23));
        assert_eq!((t.cache_read, t.cache_write_5m), (500, 30));
        // b's model is its session's, its time the row's, its directory
        // the session's.
        assert_eq!((got[2].0, got[2].1.as_str()), (20, "gpt-5"));
        assert_eq!(fp.string(fp.events[2].cwd), "/w/b");
    }

    #[test]
    fn garbage_or_a_database_of_another_schema_is_refused() {
        let scratch = crate::base::scratch::ScratchDir::new("devin-hostile");
        let garbage = scratch.path().join("garbage.db");
        std::fs::write(&garbage, vec![0x5a; 8192]).unwrap();
        let other = scratch.path().join("other.db");
        rusqlite::Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE message_nodes (x TEXT); INSERT INTO message_nodes VALUES ('assistant');")
            .unwrap();
        for path in [&garbage, &other] {
            let mut fp = FileParse::default();
            let got = read_db(&mut fp, path);
            assert!(
                matches!(got, Err(sqlite::Error::Refused(_))),
                "{path:?}: {got:?}"
            );
            assert!(fp.events.is_empty());
        }
    }
}

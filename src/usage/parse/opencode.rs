//! opencode's (and Kilo's) messages to model calls.
//!
//! opencode (anomalyco/opencode, formerly sst/opencode) keeps its sessions
//! in a SQLite database, `opencode.db` in its data directory
//! (`packages/opencode/src/storage/db.ts`, `Database.Path`), opened in WAL
//! mode. Its `message` table (`session/session.sql.ts`, `MessageTable`) has
//! one row per message: `id`, `session_id`, `time_created`,
//! `time_updated` and `data`, the message as JSON without its `id` and
//! `sessionID` (`MessageV2.Info` in `session/message-v2.ts`). An assistant
//! message's data has `role` `"assistant"`, `time.created` (Unix ms),
//! `modelID`, `providerID`, `path.cwd`, `cost` and `tokens` `{total?,
//! input, output, reasoning, cache {read, write}}`.
//!
//! One assistant message is one model call: the prompt loop
//! (`session/prompt.ts`) makes a new message for each step, and the stream
//! runs one step (`session/llm.ts` sets no `stopWhen`). At each
//! `finish-step` the processor (`session/processor.ts`) sets the message's
//! `tokens` to that step's usage (`Session.getUsage`), so a message retried
//! after an error keeps the tokens of the call that finished. `getUsage`
//! stores `input` without the cached tokens, `cache.read`, `cache.write`;
//! under AI SDK 6 it stores `output` without the reasoning tokens and
//! `total` as the provider's total (`output + reasoning` is what was
//! billed), and before it `output` with them and no total or one without
//! reasoning. So output is `output + reasoning` exactly when `total` says
//! the reasoning is not in it ([`billed_output`]).
//!
//! A fork (`Session.fork`) copies a session's messages into a new session
//! with new ids and the same data (`{...msg.info}`): the copy of a call has
//! the original's `time.created`, model and tokens. All sessions are in the
//! one database, so a call's id here is those fields, not the message's
//! id: a fork's copies count once with their original, or once when the
//! original was deleted.
//!
//! Kilo's CLI (Kilo-Org/kilocode, `packages/opencode`) is opencode's fork
//! and writes the same tables to its own `kilo.db`.

use std::path::Path;

use crate::base::sqlite;
use crate::usage::event::{FileParse, Message, Tokens, fnv1a};
use crate::usage::parse::jsonpick::Cursor;

/// The rows read: every message (a user message's data is small).
pub(crate) const QUERY: &str = "SELECT session_id, data FROM message";

/// Messages read from one database at most (a heavy user has a few
/// hundred thousand); past it the rest are left out and counted malformed.
pub(crate) const MAX_MESSAGES: u64 = 4_000_000;

/// Reads every message of the database at `path` into `fp`. Returns the
/// bytes of message data read.
pub(crate) fn read_db(fp: &mut FileParse, path: &Path) -> Result<u64, sqlite::Error> {
    let mut bytes = 0u64;
    let mut rows = 0u64;
    sqlite::for_each_row(path, QUERY, |[session, data]| {
        rows += 1;
        if rows > MAX_MESSAGES {
            fp.malformed += 1;
            return false;
        }
        bytes += data.len() as u64;
        parse_message(fp, session, data);
        true
    })?;
    Ok(bytes)
}

/// What a message's data tells of its call.
#[derive(Default)]
struct Fields<'a> {
    assistant: bool,
    created_ms: Option<u64>,
    model: Option<std::borrow::Cow<'a, [u8]>>,
    provider: &'a [u8],
    cwd: Option<std::borrow::Cow<'a, [u8]>>,
    tokens: &'a [u8],
    cost: &'a [u8],
    input: u64,
    output: u64,
    reasoning: u64,
    total: Option<u64>,
    cache_read: u64,
    cache_write: u64,
}

fn pick<'a>(c: &mut Cursor<'a>, f: &mut Fields<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"role" => f.assistant = c.bytes()?.as_deref() == Some(b"assistant"),
            b"time" if c.raw_is_object() => c.object(|key, c| {
                match key {
                    b"created" => f.created_ms = c.count()?,
                    _ => c.skip()?,
                }
                Some(())
            })?,
            b"modelID" => f.model = c.text()?,
            b"providerID" => f.provider = c.raw()?,
            b"path" if c.raw_is_object() => c.object(|key, c| {
                match key {
                    b"cwd" => f.cwd = c.text()?,
                    _ => c.skip()?,
                }
                Some(())
            })?,
            b"cost" => f.cost = c.raw()?,
            b"tokens" if c.raw_is_object() => {
                let mut inner = *c;
                tokens(&mut inner, f)?;
                f.tokens = c.raw()?;
            }
            _ => c.skip()?,
        }
        Some(())
    })
}

fn tokens<'a>(c: &mut Cursor<'a>, f: &mut Fields<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"input" => f.input = c.count()?.unwrap_or(0),
            b"output" => f.output = c.count()?.unwrap_or(0),
            b"reasoning" => f.reasoning = c.count()?.unwrap_or(0),
            b"total" => f.total = c.count()?,
            b"cache" if c.raw_is_object() => c.object(|key, c| {
                match key {
                    b"read" => f.cache_read = c.count()?.unwrap_or(0),
                    b"write" => f.cache_write = c.count()?.unwrap_or(0),
                    _ => c.skip()?,
                }
                Some(())
            })?,
            _ => c.skip()?,
        }
        Some(())
    })
}

/// The output tokens billed: `output` plus `reasoning` when the message's
/// `total` counts the reasoning besides `output` (AI SDK 6's opencode
/// stores `output` without it), else `output` (which then includes it).
fn billed_output(f: &Fields) -> u64 {
    let without = f
        .input
        .saturating_add(f.cache_read)
        .saturating_add(f.cache_write)
        .saturating_add(f.output);
    match f.total {
        Some(total) if f.reasoning > 0 && total == without.saturating_add(f.reasoning) => {
            f.output.saturating_add(f.reasoning)
        }
        _ => f.output,
    }
}

/// Parses one message row (its `session_id` and `data`) into `fp`: an
/// assistant message with tokens is one model call. Data that is not a
/// JSON object is counted malformed.
pub fn parse_message(fp: &mut FileParse, session: &[u8], data: &[u8]) {
    let mut f = Fields::default();
    let mut c = Cursor::new(data);
    if pick(&mut c, &mut f).is_none() || !c.at_end() {
        fp.malformed += 1;
        return;
    }
    if !f.assistant {
        return;
    }
    let Some(created_ms) = f.created_ms else {
        return;
    };
    let output = billed_output(&f);
    let tokens = Tokens {
        input: f.input,
        cache_read: f.cache_read,
        cache_write_5m: f.cache_write,
        cache_write_1h: 0,
        output,
        reasoning: f.reasoning.min(output),
    };
    if tokens.total() == 0 {
        return;
    }
    let model = f.model.as_deref().unwrap_or_default();
    let created = created_ms.to_string();
    // The call as its fork copies have it too (see the module's doc).
    let key = fnv1a(&[created.as_bytes(), f.provider, model, f.tokens, f.cost]).to_le_bytes();
    let session = String::from_utf8_lossy(session);
    fp.push_message(&Message {
        ts: (created_ms / 1000) as i64,
        model: &String::from_utf8_lossy(model),
        cwd: &String::from_utf8_lossy(f.cwd.as_deref().unwrap_or_default()),
        session: &session,
        id: &key,
        tokens,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::{EventKind, message_tokens};

    /// An assistant message's data as opencode writes it (`JSON.stringify`
    /// of `MessageV2.Assistant` without `id` and `sessionID`).
    fn assistant(created: u64, model: &str, tokens: &str) -> String {
        format!(
            r#"{{"parentID":"msg_u1","role":"assistant","mode":"build","agent":"build","path":{{"cwd":"/home/u/proj","root":"/home/u/proj"}},"cost":0.0123,"tokens":{tokens},"modelID":"{model}","providerID":"anthropic","time":{{"created":{created},"completed":{}}},"finish":"tool-calls"}}"#,
            created + 900
        )
    }

    fn calls(fp: &FileParse) -> Vec<(i64, String, Tokens)> {
        fp.events
            .iter()
            .filter(|e| e.kind == EventKind::Message)
            .map(|e| (e.ts, fp.string(e.model).to_owned(), message_tokens(e.t)))
            .collect()
    }

    #[test]
    fn an_assistant_message_is_one_call_with_opencode_s_token_buckets() {
        let mut fp = FileParse::default();
        let data = assistant(
            1_764_800_000_500,
            "claude-sonnet-4-5",
            r#"{"input":12,"output":300,"reasoning":0,"cache":{"read":4000,"write":500}}"#,
        );
        parse_message(&mut fp, b"ses_1", data.as_bytes());
        // A user message counts nothing.
        let user = r#"{"role":"user","time":{"created":1764800000000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}"#;
        parse_message(&mut fp, b"ses_1", user.as_bytes());
        let got = calls(&fp);
        assert_eq!(got.len(), 1);
        // 1,764,800,000,500 ms is second 1,764,800,000.
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
            (12, 4000, 500, 300, 0)
        );
        let e = fp.events[0];
        assert_eq!(fp.string(e.session), "ses_1");
        assert_eq!(fp.string(e.cwd), "/home/u/proj");
        assert_eq!(fp.malformed, 0);
    }

    #[test]
    fn reasoning_is_added_to_output_only_when_the_total_says_it_is_apart() {
        // AI SDK 6: output 200 without reasoning 50; total = 100 + 0 + 0 +
        // 200 + 50 = 350, so 250 output tokens were billed.
        let apart =
            r#"{"total":350,"input":100,"output":200,"reasoning":50,"cache":{"read":0,"write":0}}"#;
        // Before: output 200 with its reasoning 50; total = 100 + 200 = 300.
        let within =
            r#"{"total":300,"input":100,"output":200,"reasoning":50,"cache":{"read":0,"write":0}}"#;
        // No total (older still): output includes reasoning.
        let bare = r#"{"input":100,"output":200,"reasoning":50,"cache":{"read":0,"write":0}}"#;
        for (tokens, output) in [(apart, 250), (within, 200), (bare, 200)] {
            let mut fp = FileParse::default();
            let data = assistant(1_000_000, "gpt-5", tokens);
            parse_message(&mut fp, b"s", data.as_bytes());
            let t = calls(&fp)[0].2;
            assert_eq!(
                (t.input, t.output, t.reasoning),
                (100, output, 50),
                "{tokens}"
            );
        }
    }

    #[test]
    fn a_fork_s_copy_of_a_call_has_the_call_s_key_and_other_calls_do_not() {
        let tokens = r#"{"input":1,"output":2,"reasoning":0,"cache":{"read":3,"write":4}}"#;
        let data = assistant(5_000, "m", tokens);
        let other = assistant(5_001, "m", tokens);
        let mut fp = FileParse::default();
        parse_message(&mut fp, b"ses_a", data.as_bytes());
        parse_message(&mut fp, b"ses_fork", data.as_bytes());
        parse_message(&mut fp, b"ses_a", other.as_bytes());
        let keys: Vec<u64> = fp.events.iter().map(|e| e.key).collect();
        assert_eq!(keys[0], keys[1]);
        assert_ne!(keys[0], keys[2]);
        assert!(keys.iter().all(|&k| k != 0));
    }

    #[test]
    fn messages_without_tokens_or_time_and_bad_data_count_nothing() {
        let mut fp = FileParse::default();
        let zero = assistant(
            1,
            "m",
            r#"{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}"#,
        );
        parse_message(&mut fp, b"s", zero.as_bytes());
        let no_time = r#"{"role":"assistant","modelID":"m","tokens":{"input":5,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}}"#;
        parse_message(&mut fp, b"s", no_time.as_bytes());
        assert!(fp.events.is_empty());
        assert_eq!(fp.malformed, 0);
        for bad in [&b""[..], b"[]", b"{\"role\":", b"{} {}", b"\xff"] {
            parse_message(&mut fp, b"s", bad);
        }
        assert_eq!(fp.malformed, 5);
        assert!(fp.events.is_empty());
    }

    #[test]
    fn a_database_s_message_rows_are_read_whole_with_hand_totals() {
        let scratch = crate::base::scratch::ScratchDir::new("opencode-read-db");
        let path = scratch.path().join("opencode.db");
        let db = rusqlite::Connection::open(&path).unwrap();
        db.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
                 time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);",
        )
        .unwrap();
        let t = |i: u64, o: u64| {
            format!(r#"{{"input":{i},"output":{o},"reasoning":0,"cache":{{"read":7,"write":3}}}}"#)
        };
        let rows = [
            (
                "m1",
                "s1",
                assistant(1_000_000, "claude-sonnet-4-5", &t(10, 20)),
            ),
            ("m2", "s1", assistant(1_060_000, "gpt-5", &t(30, 40))),
            (
                "m3",
                "s1",
                r#"{"role":"user","time":{"created":1}}"#.to_owned(),
            ),
            ("m4", "s2", "not json".to_owned()),
            // A fork's copy of m1.
            (
                "m5",
                "s2",
                assistant(1_000_000, "claude-sonnet-4-5", &t(10, 20)),
            ),
        ];
        for (id, session, data) in &rows {
            db.execute(
                "INSERT INTO message VALUES (?1, ?2, 0, 0, ?3)",
                rusqlite::params![id, session, data],
            )
            .unwrap();
        }
        let mut fp = FileParse::default();
        let bytes = read_db(&mut fp, &path).unwrap();
        assert_eq!(bytes, rows.iter().map(|r| r.2.len() as u64).sum::<u64>());
        // Three events (m1, m2 and m5; m5 has m1's key, so the aggregate
        // counts two calls), input 10 + 30 + 10, output 20 + 40 + 20,
        // cache reads 3 × 7, writes 3 × 3.
        let got = calls(&fp);
        assert_eq!(got.len(), 3);
        let sum = |f: fn(&Tokens) -> u64| got.iter().map(|c| f(&c.2)).sum::<u64>();
        assert_eq!(sum(|t| t.input), 50);
        assert_eq!(sum(|t| t.output), 80);
        assert_eq!(sum(|t| t.cache_read), 21);
        assert_eq!(sum(|t| t.cache_write_5m), 9);
        assert_eq!(fp.events[0].key, fp.events[2].key);
        assert_eq!(fp.malformed, 1);
        // A file that is not a database is refused, not read.
        std::fs::write(scratch.path().join("x.db"), b"{}").unwrap();
        let got = read_db(&mut FileParse::default(), &scratch.path().join("x.db"));
        assert!(matches!(got, Err(sqlite::Error::Refused(_))), "{got:?}");
    }
}

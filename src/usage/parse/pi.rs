//! pi (and Oh My Pi) session files to usage events.
//!
//! pi's writer is `SessionManager` in `packages/coding-agent/src/core/
//! session-manager.ts` (badlogic/pi-mono): one JSON object a line, the
//! first the header `{"type":"session","version":3,"id","timestamp",
//! "cwd","parentSession"?}` (`SessionHeader`), then entries with `type`,
//! `id`, `parentId` and an ISO `timestamp` (`SessionEntryBase`). An
//! assistant message is a `{"type":"message","message":{...}}` entry
//! (`SessionMessageEntry`) whose message (`AssistantMessage` in
//! `packages/ai/src/types.ts`) has `role` `"assistant"`, `provider`,
//! `model` and `usage` `{input, output, cacheRead, cacheWrite,
//! totalTokens, cost{…}}` (`Usage`): one entry per response, appended
//! once at `message_end` (`agent-session.ts`), a retried response as a
//! new entry. A branch kept in the same file (`/tree`) leaves the
//! abandoned entries in it: they were billed and count.
//!
//! Forks copy history: `createBranchedSession` and `forkFrom` write a
//! new file whose header has `parentSession` and the fork's `timestamp`,
//! then the parent's entries unchanged (their own, older timestamps). So
//! in a file whose header names a parent, an assistant entry stamped at or
//! before the header is inherited and skipped; its parent file counts it.
//!
//! The file's resumable state (the header's id, cwd, parent and time, the
//! lines read) is kept in `FileParse::codex`, the per-file state the cache
//! stores, so an append is read without the header.

use std::borrow::Cow;

use crate::usage::event::{Event, EventKind, FileParse};
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::parse::scan::trim;

/// Parses one complete line of a pi session file into `fp`.
pub fn parse_line(fp: &mut FileParse, line: &[u8]) {
    let line = trim(line);
    if line.is_empty() {
        return;
    }
    let first = fp.codex.lines == 0;
    fp.codex.lines += 1;
    if line[0] != b'{' || line[line.len() - 1] != b'}' {
        fp.malformed += 1;
        return;
    }
    if !first && !crate::usage::parse::claude::may_hold_usage(line) {
        return;
    }
    let mut f = Fields::default();
    let mut c = Cursor::new(line);
    if pick(&mut c, &mut f).is_none() || !c.at_end() {
        fp.malformed += 1;
        return;
    }
    match f.kind.as_deref() {
        Some(b"session") if first => header(fp, &f),
        Some(b"message") => {
            if let Some(event) = event_of(fp, &f) {
                fp.events.push(event);
            }
        }
        _ => {}
    }
}

/// The members of a line that Usage reads.
#[derive(Default)]
struct Fields<'a> {
    kind: Option<Cow<'a, [u8]>>,
    timestamp: Option<Cow<'a, [u8]>>,
    // The header's.
    id: Option<Cow<'a, [u8]>>,
    cwd: Option<Cow<'a, [u8]>>,
    parent: Option<Cow<'a, [u8]>>,
    // An assistant message's.
    role: Option<Cow<'a, [u8]>>,
    model: Option<Cow<'a, [u8]>>,
    has_usage: bool,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

fn pick<'a>(c: &mut Cursor<'a>, f: &mut Fields<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"type" => f.kind = c.bytes()?,
            b"timestamp" => f.timestamp = c.bytes()?,
            b"id" => f.id = c.text()?,
            b"cwd" => f.cwd = c.text()?,
            b"parentSession" => f.parent = c.text()?,
            b"message" if c.raw_is_object() => c.object(|key, c| {
                match key {
                    b"role" => f.role = c.bytes()?,
                    b"model" => f.model = c.text()?,
                    b"usage" if c.raw_is_object() => {
                        f.has_usage = true;
                        c.object(|key, c| {
                            match key {
                                b"input" => f.input = c.count()?.unwrap_or(0),
                                b"output" => f.output = c.count()?.unwrap_or(0),
                                b"cacheRead" => f.cache_read = c.count()?.unwrap_or(0),
                                b"cacheWrite" => f.cache_write = c.count()?.unwrap_or(0),
                                _ => c.skip()?,
                            }
                            Some(())
                        })?
                    }
                    _ => c.skip()?,
                }
                Some(())
            })?,
            _ => c.skip()?,
        }
        Some(())
    })
}

/// The header: the session's id, directory, parent and time.
fn header(fp: &mut FileParse, f: &Fields) {
    fp.codex.thread_id = String::from_utf8_lossy(f.id.as_deref().unwrap_or(b"")).into_owned();
    fp.codex.cwd = fp.intern_utf8(f.cwd.as_deref().unwrap_or(b""));
    fp.codex.forked_from = String::from_utf8_lossy(f.parent.as_deref().unwrap_or(b"")).into_owned();
    fp.codex.meta_ts = f
        .timestamp
        .as_deref()
        .and_then(crate::usage::time::timestamp_of)
        .unwrap_or(0);
}

/// An assistant message's event: its tokens in Claude's order (input,
/// cache reads, cache writes, -, output, -), unless it is inherited.
fn event_of(fp: &mut FileParse, f: &Fields) -> Option<Event> {
    if f.role.as_deref() != Some(b"assistant") || !f.has_usage {
        return None;
    }
    let ts = crate::usage::time::timestamp_of(f.timestamp.as_deref()?)?;
    if !fp.codex.forked_from.is_empty() && ts <= fp.codex.meta_ts {
        return None;
    }
    let model = f.model.as_deref().filter(|m| !m.is_empty())?;
    let t = [f.input, f.cache_read, f.cache_write, 0, f.output, 0];
    if t.iter().all(|&n| n == 0) {
        return None;
    }
    Some(Event {
        kind: EventKind::Pi,
        ts,
        model: fp.intern_utf8(model),
        cwd: fp.codex.cwd,
        tier: 0,
        // The session is the file's (`FileParse::codex.thread_id`, the
        // header's `id`), as a Codex rollout's thread is.
        session: 0,
        flags: 0,
        key: 0,
        group: 0,
        t,
        last_at: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as pi's `SessionManager` writes them (`JSON.stringify` of a
    /// `SessionHeader`, then `SessionMessageEntry`s whose message is an
    /// `AssistantMessage` with `Usage`): the field names are the writer's.
    fn header_line(id: &str, ts: &str, parent: Option<&str>) -> String {
        let parent = parent.map_or(String::new(), |p| format!(r#","parentSession":"{p}""#));
        format!(
            r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{ts}","cwd":"/home/u/proj"{parent}}}"#
        )
    }
    fn assistant(id: &str, ts: &str, model: &str, u: [u64; 4]) -> String {
        let [input, output, read, write] = u;
        let total = input + output + read + write;
        format!(
            r#"{{"type":"message","id":"{id}","parentId":null,"timestamp":"{ts}","message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],"api":"anthropic-messages","provider":"anthropic","model":"{model}","usage":{{"input":{input},"output":{output},"cacheRead":{read},"cacheWrite":{write},"totalTokens":{total},"cost":{{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.3}}}},"stopReason":"stop","timestamp":1764800000000}}}}"#
        )
    }
    fn user(ts: &str) -> String {
        format!(
            r#"{{"type":"message","id":"u1","parentId":null,"timestamp":"{ts}","message":{{"role":"user","content":"count the usage","timestamp":1764800000000}}}}"#
        )
    }

    fn parse(lines: &[String]) -> FileParse {
        let mut fp = FileParse::default();
        for l in lines {
            parse_line(&mut fp, l.as_bytes());
        }
        fp
    }

    #[test]
    fn each_assistant_message_is_one_event_with_its_usage() {
        let fp = parse(&[
            header_line("s-1", "2026-12-04T10:00:00.000Z", None),
            user("2026-12-04T10:00:01.000Z"),
            assistant(
                "a1",
                "2026-12-04T10:00:05.000Z",
                "claude-sonnet-4-5",
                [3, 120, 0, 2_000],
            ),
            assistant(
                "a2",
                "2026-12-04T10:00:09.000Z",
                "claude-sonnet-4-5",
                [5, 80, 2_000, 0],
            ),
            // A retried response after an error: a new entry, counted.
            assistant("a3", "2026-12-04T10:01:00.000Z", "gpt-5", [7, 0, 0, 0]),
        ]);
        assert_eq!(fp.malformed, 0);
        assert_eq!(fp.events.len(), 3);
        // By hand: input 3+5+7 = 15, output 120+80 = 200, cache reads
        // 2,000, cache writes 2,000.
        let sum = |i: usize| fp.events.iter().map(|e| e.t[i]).sum::<u64>();
        assert_eq!(
            [sum(0), sum(1), sum(2), sum(3), sum(4)],
            [15, 2_000, 2_000, 0, 200]
        );
        let e = fp.events[0];
        assert_eq!(e.kind, EventKind::Pi);
        assert_eq!(fp.string(e.model), "claude-sonnet-4-5");
        assert_eq!(fp.string(e.cwd), "/home/u/proj");
        assert_eq!(fp.codex.thread_id, "s-1");
        // 2026-12-04T10:00:05Z: 20,791 days after 1970-01-01 (Python's
        // `datetime(2026, 12, 4, 10, 0, 5, tzinfo=utc).timestamp()`).
        assert_eq!(e.ts, 20_791 * 86_400 + 10 * 3_600 + 5);
    }

    #[test]
    fn a_fork_skips_the_history_it_copied() {
        // `forkFrom` / `createBranchedSession`: the header with
        // `parentSession` and the fork's time, then the parent's entries
        // as they were, then the fork's own.
        let fp = parse(&[
            header_line("s-2", "2026-12-04T11:00:00.000Z", Some("/s/parent.jsonl")),
            assistant(
                "a1",
                "2026-12-04T10:00:05.000Z",
                "claude-sonnet-4-5",
                [3, 120, 0, 2_000],
            ),
            assistant(
                "a4",
                "2026-12-04T11:00:30.000Z",
                "claude-sonnet-4-5",
                [9, 40, 0, 0],
            ),
        ]);
        assert_eq!(fp.events.len(), 1);
        assert_eq!(fp.events[0].t, [9, 0, 0, 0, 40, 0]);
    }

    #[test]
    fn an_append_is_read_with_the_state_of_the_lines_before() {
        let lines = [
            header_line("s-3", "2026-12-04T11:00:00.000Z", Some("/s/parent.jsonl")),
            assistant("a1", "2026-12-04T10:59:00.000Z", "m", [1, 1, 0, 0]),
            assistant("a2", "2026-12-04T11:00:30.000Z", "m", [2, 2, 0, 0]),
        ];
        let whole = parse(&lines);
        let mut fp = parse(&lines[..2]);
        let kept = fp.clone();
        parse_line(&mut fp, lines[2].as_bytes());
        assert_eq!(fp, whole);
        assert!(kept.events.is_empty());
    }

    #[test]
    fn other_lines_count_nothing_and_broken_ones_are_malformed() {
        let fp = parse(&[
            header_line("s-4", "2026-12-04T10:00:00.000Z", None),
            r#"{"type":"model_change","id":"m1","parentId":null,"timestamp":"2026-12-04T10:00:00.000Z","provider":"openai","modelId":"gpt-5"}"#.into(),
            r#"{"type":"compaction","id":"c1","parentId":null,"timestamp":"2026-12-04T10:00:00.000Z","summary":"usage","firstKeptEntryId":"a1","tokensBefore":5000}"#.into(),
            // An aborted response with no tokens.
            assistant("a0", "2026-12-04T10:00:02.000Z", "m", [0, 0, 0, 0]),
            r#"{"type":"message","message":{"role":"assistant","usage":{"input":1}"#.into(),
            "not json".into(),
        ]);
        assert!(fp.events.is_empty());
        assert_eq!(fp.malformed, 2);
    }
}

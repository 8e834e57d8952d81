//! Kimi CLI session wire files to model calls.
//!
//! Kimi's writer (MoonshotAI/kimi-cli at 4a550eff, protocol 1.10) records
//! every message of a session's wire in `wire.jsonl` (`WireFile` in
//! `src/kimi_cli/wire/file.py`): appended only, one `json.dumps` object a
//! line, the first `{"type": "metadata", "protocol_version"}`, then
//! `{"timestamp": <Unix seconds, a float>, "message": {"type", "payload"}}`
//! (`WireMessageRecord`, `WireMessageEnvelope` in `wire/types.py`). A model
//! call is the `StatusUpdate` that `KimiSoul._step` (`soul/kimisoul.py`)
//! sends once a step's response is complete, retries done: its payload's
//! `token_usage` is kosong's `TokenUsage` (`packages/kosong/src/kosong/
//! chat_provider/__init__.py`) `{input_other, output, input_cache_read,
//! input_cache_creation}`, `input_other` the uncached input and `output`
//! all of it, and its `message_id` the response's id. Other
//! `StatusUpdate`s (plan mode, MCP status, `/compact`) carry no
//! `token_usage`.
//!
//! Subagents: since protocol 1.6 (`subagents/runner.py`) a subagent writes
//! its own `subagents/<agent_id>/wire.jsonl` in the session's directory,
//! which counts its calls, and a foreground one's messages are also
//! forwarded into the parent's wire as `SubagentEvent`s naming its
//! `agent_id`: those are skipped. Before, a subagent (the `Task` tool) had
//! no file of its own, and its `SubagentEvent` (`task_tool_call_id`, no
//! `agent_id`) is the only record of its calls: those count.
//!
//! The wire names no model (it is the session's configuration), so every
//! call is the unknown model, unpriced. The session id is the file's
//! directory, and a fork's copied history is known from its `state.json`
//! (`agents::kimi`): both are kept in `FileParse::codex` (`thread_id`;
//! `forked_from` and `meta_ts`, the fork's time in milliseconds) so an
//! append is read with them.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use crate::usage::event::{FileParse, Message, Tokens};
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::parse::scan::trim;

/// Parses one complete line of a Kimi wire file into `fp`.
pub fn parse_line(fp: &mut FileParse, line: &[u8]) {
    let line = trim(line);
    if line.is_empty() || !may_hold_usage(line) {
        return;
    }
    if line[0] != b'{' || line[line.len() - 1] != b'}' {
        fp.malformed += 1;
        return;
    }
    let mut record = Record::default();
    let mut c = Cursor::new(line);
    if pick_record(&mut c, &mut record).is_none() || !c.at_end() {
        fp.malformed += 1;
        return;
    }
    let step = match record.top.kind.as_deref() {
        Some(b"StatusUpdate") => &record.top.status,
        Some(b"SubagentEvent") if !record.top.agent_id && record.inner_kind() => &record.top.inner,
        _ => return,
    };
    let Some(ms) = record.ms else {
        return;
    };
    push(fp, step, ms);
}

/// Whether a line may hold a step's usage: `"token_usage"` literally, or
/// spelled with `\u` escapes (which only a line holding `\u` can).
fn may_hold_usage(line: &[u8]) -> bool {
    static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"token_usage\""));
    static ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
    USAGE.find(line).is_some() || ESCAPE.find(line).is_some()
}

/// One step's usage, as a `StatusUpdate` payload has it.
#[derive(Default)]
struct Step<'a> {
    has_usage: bool,
    /// `[input_other, output, input_cache_read, input_cache_creation]`.
    t: [u64; 4],
    message_id: Option<Cow<'a, [u8]>>,
}

/// A wire record's envelope: its type, its payload's usage, and for a
/// `SubagentEvent` whether it names its `agent_id` and the event it wraps.
#[derive(Default)]
struct Envelope<'a> {
    kind: Option<Cow<'a, [u8]>>,
    status: Step<'a>,
    agent_id: bool,
    inner_kind: Option<Cow<'a, [u8]>>,
    inner: Step<'a>,
}

#[derive(Default)]
struct Record<'a> {
    /// The record's time in Unix milliseconds.
    ms: Option<i64>,
    top: Envelope<'a>,
}

impl Record<'_> {
    fn inner_kind(&self) -> bool {
        self.top.inner_kind.as_deref() == Some(b"StatusUpdate")
    }
}

fn pick_record<'a>(c: &mut Cursor<'a>, r: &mut Record<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"timestamp" => r.ms = unix_ms(c.raw()?),
            // A member named twice is its last value, as `JSON.parse`
            // reads it: what an earlier one set is dropped.
            b"message" => {
                r.top = Envelope::default();
                if c.raw_is_object() {
                    pick_envelope(c, &mut r.top)?
                } else {
                    c.skip()?
                }
            }
            _ => c.skip()?,
        }
        Some(())
    })
}

fn pick_envelope<'a>(c: &mut Cursor<'a>, e: &mut Envelope<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"type" => e.kind = c.bytes()?,
            b"payload" => {
                (e.status, e.agent_id) = (Step::default(), false);
                (e.inner_kind, e.inner) = (None, Step::default());
                if !c.raw_is_object() {
                    return c.skip();
                }
                c.object(|key, c| match key {
                    b"agent_id" => c.bytes().map(|id| e.agent_id = id.is_some()),
                    b"event" => pick_event(c, e),
                    _ => pick_step_member(key, c, &mut e.status),
                })?
            }
            _ => c.skip()?,
        }
        Some(())
    })
}

/// A `SubagentEvent`'s `event`: the envelope of the message it wraps.
fn pick_event<'a>(c: &mut Cursor<'a>, e: &mut Envelope<'a>) -> Option<()> {
    (e.inner_kind, e.inner) = (None, Step::default());
    if !c.raw_is_object() {
        return c.skip();
    }
    c.object(|key, c| {
        match key {
            b"type" => e.inner_kind = c.bytes()?,
            b"payload" => {
                e.inner = Step::default();
                if !c.raw_is_object() {
                    return c.skip();
                }
                c.object(|key, c| pick_step_member(key, c, &mut e.inner))?
            }
            _ => c.skip()?,
        }
        Some(())
    })
}

fn pick_step_member<'a>(key: &[u8], c: &mut Cursor<'a>, s: &mut Step<'a>) -> Option<()> {
    match key {
        b"message_id" => s.message_id = c.text()?,
        b"token_usage" => {
            (s.has_usage, s.t) = (c.raw_is_object(), [0; 4]);
            if !s.has_usage {
                return c.skip();
            }
            c.object(|key, c| {
                let slot = match key {
                    b"input_other" => 0,
                    b"output" => 1,
                    b"input_cache_read" => 2,
                    b"input_cache_creation" => 3,
                    _ => return c.skip(),
                };
                s.t[slot] = token_count(c.raw()?);
                Some(())
            })?
        }
        _ => c.skip()?,
    }
    Some(())
}

/// Hands one step to `fp` unless it is history a fork copied (stamped at
/// or before the fork) or counts nothing.
fn push(fp: &mut FileParse, step: &Step, ms: i64) {
    if !step.has_usage || step.t.iter().all(|&n| n == 0) {
        return;
    }
    if !fp.codex.forked_from.is_empty() && ms <= fp.codex.meta_ts {
        return;
    }
    let [input, output, cache_read, cache_write] = step.t;
    fp.push_message(&Message {
        ts: ms.div_euclid(1_000),
        model: "",
        cwd: "",
        session: "",
        id: step.message_id.as_deref().unwrap_or_default(),
        tokens: Tokens {
            input,
            cache_read,
            cache_write_5m: cache_write,
            cache_write_1h: 0,
            output,
            reasoning: 0,
        },
    });
}

/// A token count: a JSON number that is a whole non-negative count, as
/// large as a `u64` holds (more saturates); anything else (a fraction, a
/// negative, not a number) is 0.
pub(crate) fn token_count(raw: &[u8]) -> u64 {
    let raw = match raw {
        [b'"', digits @ .., b'"'] => digits,
        raw => raw,
    };
    if !raw.is_empty() && raw.iter().all(u8::is_ascii_digit) {
        return raw.iter().fold(0u64, |n, d| {
            n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
        });
    }
    match std::str::from_utf8(raw)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
    {
        // `as` saturates a float beyond the range.
        Some(f) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 => f as u64,
        _ => 0,
    }
}

/// Unix milliseconds of a time in Unix seconds (a JSON number, fractions
/// kept to the millisecond), or `None` for what is not one (negative, not
/// finite, past the year 9999).
pub(crate) fn unix_ms(raw: &[u8]) -> Option<i64> {
    let seconds: f64 = std::str::from_utf8(raw).ok()?.parse().ok()?;
    (seconds.is_finite() && (0.0..=253_402_300_799.0).contains(&seconds))
        .then(|| (seconds * 1_000.0).floor() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::{EventKind, message_tokens};

    /// A record as `WireFile.append_record` writes it: `json.dumps` with
    /// its default separators (a space after `:` and `,`).
    fn status(ts: &str, id: &str, u: [u64; 4]) -> String {
        let [other, output, read, creation] = u;
        format!(
            r#"{{"timestamp": {ts}, "message": {{"type": "StatusUpdate", "payload": {{"context_usage": 0.0312, "context_tokens": 8192, "max_context_tokens": 262144, "token_usage": {{"input_other": {other}, "output": {output}, "input_cache_read": {read}, "input_cache_creation": {creation}}}, "message_id": "{id}", "plan_mode": false, "mcp_status": null}}}}}}"#
        )
    }
    fn subagent_event(ts: &str, agent_id: Option<&str>, id: &str, u: [u64; 4]) -> String {
        let [other, output, read, creation] = u;
        let who = match agent_id {
            Some(a) => format!(
                r#""parent_tool_call_id": "tool_1", "agent_id": "{a}", "subagent_type": "coder""#
            ),
            None => r#""task_tool_call_id": "tool_1""#.to_string(),
        };
        format!(
            r#"{{"timestamp": {ts}, "message": {{"type": "SubagentEvent", "payload": {{{who}, "event": {{"type": "StatusUpdate", "payload": {{"context_usage": null, "token_usage": {{"input_other": {other}, "output": {output}, "input_cache_read": {read}, "input_cache_creation": {creation}}}, "message_id": "{id}"}}}}}}}}}}"#
        )
    }
    const HEADER: &str = r#"{"type": "metadata", "protocol_version": "1.10"}"#;
    const TURN: &str = r#"{"timestamp": 1764842400.5, "message": {"type": "TurnBegin", "payload": {"user_input": "count the token_usage"}}}"#;
    const PLAN: &str = r#"{"timestamp": 1764842401.0, "message": {"type": "StatusUpdate", "payload": {"context_usage": null, "token_usage": null, "message_id": null, "plan_mode": true}}}"#;

    fn parse(lines: &[String]) -> FileParse {
        let mut fp = FileParse::default();
        for l in lines {
            parse_line(&mut fp, l.as_bytes());
        }
        fp
    }

    fn sums(fp: &FileParse) -> [u64; 6] {
        let mut s = [0u64; 6];
        for e in &fp.events {
            assert_eq!(e.kind, EventKind::Message);
            for (a, b) in s.iter_mut().zip(e.t) {
                *a += b;
            }
        }
        s
    }

    #[test]
    fn each_step_s_status_update_is_one_call() {
        let fp = parse(&[
            HEADER.into(),
            TURN.into(),
            status("1764842405.25", "chatcmpl-1", [1_200, 340, 8_000, 0]),
            PLAN.into(),
            status("1764842409.75", "chatcmpl-2", [60, 90, 9_100, 512]),
        ]);
        assert_eq!(fp.malformed, 0);
        assert_eq!(fp.events.len(), 2);
        // By hand: input 1,200 + 60 = 1,260; cache reads 8,000 + 9,100 =
        // 17,100; cache writes 512; output 340 + 90 = 430.
        assert_eq!(sums(&fp), [1_260, 17_100, 512, 0, 430, 0]);
        let e = fp.events[0];
        // 1764842405.25 s, to the second.
        assert_eq!(e.ts, 1_764_842_405);
        assert_eq!(fp.string(e.model), "");
        assert_eq!(e.key, crate::usage::event::fnv1a(&[b"chatcmpl-1"]));
        let t = message_tokens(e.t);
        assert_eq!(t.total(), 1_200 + 340 + 8_000);
    }

    #[test]
    fn subagent_calls_count_once_whichever_writer() {
        let fp = parse(&[
            // A subagent with its own wire file (protocol 1.6 on): its
            // calls are counted there, not here.
            subagent_event("1764842410", Some("a1b2"), "sub-1", [10, 20, 30, 0]),
            // A `Task` subagent of an older Kimi: only here.
            subagent_event("1764842411", None, "sub-2", [7, 5, 0, 3]),
        ]);
        assert_eq!(fp.events.len(), 1);
        assert_eq!(fp.events[0].t, [7, 0, 3, 0, 5, 0]);
    }

    #[test]
    fn a_fork_skips_the_history_it_copied() {
        let mut fp = FileParse::default();
        // `agents::kimi::Kimi::begin` read the fork's `state.json`:
        // `wire_mtime` 1764842420.5.
        fp.codex.forked_from = "Fork".into();
        fp.codex.meta_ts = 1_764_842_420_500;
        for l in [
            status("1764842405.25", "chatcmpl-1", [1_200, 340, 8_000, 0]),
            status("1764842420.5", "chatcmpl-2", [1, 1, 0, 0]),
            status("1764842460.0", "chatcmpl-3", [4, 6, 0, 0]),
        ] {
            parse_line(&mut fp, l.as_bytes());
        }
        assert_eq!(fp.events.len(), 1);
        assert_eq!(fp.events[0].t, [4, 0, 0, 0, 6, 0]);
    }

    #[test]
    fn hostile_numbers_saturate_or_count_nothing() {
        let huge = "123456789012345678901234567890";
        let line = format!(
            r#"{{"timestamp": 1764842405, "message": {{"type": "StatusUpdate", "payload": {{"token_usage": {{"input_other": {huge}, "output": -5, "input_cache_read": 1.5, "input_cache_creation": 2e3}}}}}}}}"#
        );
        let fp = parse(&[line]);
        assert_eq!(fp.events.len(), 1);
        assert_eq!(fp.events[0].t, [u64::MAX, 0, 2_000, 0, 0, 0]);
        for ts in ["-1", "1e300", "\"1764842405\"", "null"] {
            let fp = parse(&[status(ts, "x", [1, 1, 1, 1])]);
            assert!(fp.events.is_empty(), "{ts}");
            assert_eq!(fp.malformed, 0);
        }
    }

    #[test]
    fn torn_and_broken_lines_are_malformed_and_count_nothing() {
        let whole = status("1764842405", "chatcmpl-1", [1, 2, 3, 4]);
        let fp = parse(&[
            whole[..whole.len() - 3].to_string(),
            format!("{whole},"),
            "{\"token_usage\"}".into(),
            // Lines that cannot hold usage are not read at all.
            "not json".into(),
        ]);
        assert!(fp.events.is_empty());
        assert_eq!(fp.malformed, 3);
    }

    #[test]
    fn a_member_named_twice_is_its_last_value() {
        // `JSON.parse` keeps the last: usage then null is no usage.
        let fp = parse(&[
            r#"{"timestamp": 1764842405, "message": {"type": "StatusUpdate", "payload": {"token_usage": {"input_other": 9, "output": 9}, "token_usage": null}}}"#.into(),
            r#"{"timestamp": 1764842405, "message": {"type": "StatusUpdate", "payload": {"token_usage": {"output": 9}}}, "message": {"type": "TurnEnd", "payload": {"token_usage": {"output": 1}}}}"#.into(),
            r#"{"timestamp": 1764842405, "message": {"type": "StatusUpdate", "payload": {"token_usage": {"output": 9, "output": 2}}}}"#.into(),
        ]);
        assert_eq!(fp.malformed, 0);
        assert_eq!(fp.events.len(), 1);
        assert_eq!(fp.events[0].t, [0, 0, 0, 0, 2, 0]);
    }

    #[test]
    fn an_append_is_read_with_the_state_of_the_lines_before() {
        let lines = [
            HEADER.to_string(),
            status("1764842405", "chatcmpl-1", [1, 2, 3, 4]),
            status("1764842406", "chatcmpl-2", [5, 6, 7, 8]),
        ];
        let whole = parse(&lines);
        let mut fp = parse(&lines[..2]);
        parse_line(&mut fp, lines[2].as_bytes());
        assert_eq!(fp, whole);
    }
}

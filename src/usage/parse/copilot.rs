//! GitHub Copilot CLI's OpenTelemetry file export to model calls.
//!
//! Copilot CLI is closed source; its format is what its documentation
//! (docs.github.com, "OpenTelemetry monitoring": `COPILOT_OTEL_ENABLED`,
//! `COPILOT_OTEL_EXPORTER_TYPE=file`, `COPILOT_OTEL_FILE_EXPORTER_PATH`,
//! spans after the OTel GenAI semantic conventions) and the exports its
//! users read (tokscale's `sessions/copilot.rs`; a Copilot 1.0.80
//! export's shape) show. The exporter appends one JSON object a line, a
//! span, a metric or a log record: a span is
//! `{"type": "span", "name", "traceId", "spanId", "parentSpanId", "kind",
//! "startTime": [s, ns], "endTime": [s, ns], "status", "attributes": {…}}`
//! (VS Code's Copilot Chat writes the same span without `type`). A model
//! call is a span whose `gen_ai.operation.name` is `chat`; its attributes
//! carry `gen_ai.request.model` (`auto` when Copilot picks) and
//! `gen_ai.response.model` (the model that answered), the conversation
//! (`gen_ai.conversation.id`) and the usage: `gen_ai.usage.input_tokens`
//! (all the prompt, cache reads and writes included, as the conventions
//! ask), `output_tokens` (reasoning included), `cache_read.input_tokens`,
//! `cache_creation.input_tokens` (or `cache_write.input_tokens`) and
//! `reasoning.output_tokens` (or `reasoning_tokens`). The `invoke_agent`
//! span above them sums its turn's calls and is not counted, nor are
//! `execute_tool` spans or the cumulative metrics.
//!
//! A span's id is `traceId:spanId`: one exported twice in a file counts
//! once (`aggregate::message_count`). Its time is its end (the response's),
//! else its start: an `[s, ns]` pair, or Unix nanoseconds as a number or a
//! string (`…UnixNano`, OTLP's spelling). A conversation without its id is
//! the file's (its stem, `agents::copilot`).

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use crate::usage::event::{FileParse, Message, Tokens};
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::parse::kimi::token_count;
use crate::usage::parse::scan::trim;

/// Parses one complete line of a Copilot OTel export into `fp`.
pub fn parse_line(fp: &mut FileParse, line: &[u8]) {
    let line = trim(line);
    if line.is_empty() || !may_hold_usage(line) {
        return;
    }
    if line[0] != b'{' || line[line.len() - 1] != b'}' {
        fp.malformed += 1;
        return;
    }
    let mut span = Span::default();
    let mut c = Cursor::new(line);
    if pick_span(&mut c, &mut span).is_none() || !c.at_end() {
        fp.malformed += 1;
        return;
    }
    if !matches!(span.kind.as_deref(), None | Some(b"span"))
        || span.operation.as_deref() != Some(b"chat")
    {
        return;
    }
    let Some(ns) = span.end.or(span.start) else {
        return;
    };
    push(fp, &span, ns);
}

/// Whether a line may be a chat span with usage: `"chat"` and
/// `gen_ai.usage.` literally, or spelled with `\u` escapes (which only a
/// line holding `\u` can).
fn may_hold_usage(line: &[u8]) -> bool {
    static CHAT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"chat\""));
    static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"gen_ai.usage."));
    static ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
    (CHAT.find(line).is_some() && USAGE.find(line).is_some()) || ESCAPE.find(line).is_some()
}

/// The members of a span that Usage reads.
#[derive(Default)]
struct Span<'a> {
    kind: Option<Cow<'a, [u8]>>,
    trace_id: Option<Cow<'a, [u8]>>,
    span_id: Option<Cow<'a, [u8]>>,
    /// Unix nanoseconds.
    start: Option<i64>,
    end: Option<i64>,
    operation: Option<Cow<'a, [u8]>>,
    request_model: Option<Cow<'a, [u8]>>,
    response_model: Option<Cow<'a, [u8]>>,
    conversation: Option<Cow<'a, [u8]>>,
    /// `[input, output, cache read, cache creation, cache write,
    /// reasoning, reasoning tokens]`: two spellings of the writes and of
    /// the reasoning, the larger taken (one is absent or the same).
    t: [u64; 7],
}

fn pick_span<'a>(c: &mut Cursor<'a>, s: &mut Span<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"type" => s.kind = c.bytes()?,
            b"traceId" => s.trace_id = c.text()?,
            b"spanId" => s.span_id = c.text()?,
            b"startTime" => s.start = time_ns(c, false)?,
            b"endTime" => s.end = time_ns(c, false)?,
            b"startTimeUnixNano" => s.start = time_ns(c, true)?,
            b"endTimeUnixNano" => s.end = time_ns(c, true)?,
            // A member named twice is its last value, as `JSON.parse`
            // reads it: what an earlier one set is dropped.
            b"attributes" => {
                (s.operation, s.request_model, s.response_model) = (None, None, None);
                (s.conversation, s.t) = (None, [0; 7]);
                if c.raw_is_object() {
                    c.object(|key, c| pick_attribute(key, c, s))?
                } else {
                    c.skip()?
                }
            }
            _ => c.skip()?,
        }
        Some(())
    })
}

fn pick_attribute<'a>(key: &[u8], c: &mut Cursor<'a>, s: &mut Span<'a>) -> Option<()> {
    let slot = match key {
        b"gen_ai.operation.name" => return c.bytes().map(|v| s.operation = v),
        b"gen_ai.request.model" => return c.text().map(|v| s.request_model = v),
        b"gen_ai.response.model" => return c.text().map(|v| s.response_model = v),
        b"gen_ai.conversation.id" => return c.text().map(|v| s.conversation = v),
        b"gen_ai.usage.input_tokens" => 0,
        b"gen_ai.usage.output_tokens" => 1,
        b"gen_ai.usage.cache_read.input_tokens" => 2,
        b"gen_ai.usage.cache_creation.input_tokens" => 3,
        b"gen_ai.usage.cache_write.input_tokens" => 4,
        b"gen_ai.usage.reasoning.output_tokens" => 5,
        b"gen_ai.usage.reasoning_tokens" => 6,
        _ => return c.skip(),
    };
    s.t[slot] = token_count(c.raw()?);
    Some(())
}

/// A span's time in Unix nanoseconds: OTel JS's `[seconds, nanoseconds]`,
/// or a number or numeric string of nanoseconds (`nanos`, OTLP's
/// `…UnixNano`) or, when unnamed, of the unit its size says. `Some(None)`
/// for anything else; `None` for malformed JSON.
fn time_ns(c: &mut Cursor, nanos: bool) -> Option<Option<i64>> {
    let raw = c.raw()?;
    if raw.first() == Some(&b'[') {
        let mut parts = [0u64; 2];
        let mut n = 0;
        Cursor::new(raw).array(|c| {
            if let Some(slot) = parts.get_mut(n) {
                *slot = token_count(c.raw()?);
            } else {
                c.skip()?;
            }
            n += 1;
            Some(())
        })?;
        let ns = i128::from(parts[0]) * 1_000_000_000 + i128::from(parts[1]);
        return Some((n == 2).then(|| i64::try_from(ns).ok()).flatten());
    }
    let n = token_count(raw);
    if n == 0 || n == u64::MAX {
        return Some(None);
    }
    let scale: u64 = match n {
        _ if nanos => 1,
        100_000_000_000_000_000.. => 1,
        100_000_000_000_000.. => 1_000,
        100_000_000_000.. => 1_000_000,
        _ => 1_000_000_000,
    };
    Some(i64::try_from(u128::from(n) * u128::from(scale)).ok())
}

/// Hands one chat span to `fp`, its input without the cache's share.
fn push(fp: &mut FileParse, s: &Span, ns: i64) {
    let [
        input,
        output,
        cache_read,
        creation,
        write,
        reasoning,
        reasoning_tokens,
    ] = s.t;
    let (cache_write, reasoning) = (creation.max(write), reasoning.max(reasoning_tokens));
    if s.t.iter().all(|&n| n == 0) {
        return;
    }
    let model = [&s.response_model, &s.request_model]
        .into_iter()
        .flatten()
        .find(|m| !m.is_empty())
        .map_or(&b""[..], |m| &m[..]);
    let mut id = Vec::new();
    if let (Some(trace), Some(span)) = (&s.trace_id, &s.span_id) {
        id.extend_from_slice(trace);
        id.push(b':');
        id.extend_from_slice(span);
    }
    fp.push_message(&Message {
        ts: ns.div_euclid(1_000_000_000),
        model: &String::from_utf8_lossy(model),
        cwd: "",
        session: &String::from_utf8_lossy(s.conversation.as_deref().unwrap_or_default()),
        id: &id,
        tokens: Tokens {
            input: input.saturating_sub(cache_read).saturating_sub(cache_write),
            cache_read,
            cache_write_5m: cache_write,
            cache_write_1h: 0,
            output,
            reasoning: reasoning.min(output),
        },
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::{EventKind, fnv1a};

    /// A chat span as Copilot CLI 1.0.80's file exporter writes it.
    fn chat(span: &str, end: u64, model: &str, u: [u64; 5]) -> String {
        let [input, output, read, creation, reasoning] = u;
        format!(
            r#"{{"type":"span","name":"chat {model}","traceId":"df38867ce6c93fdf67144d8c3fa91c22","spanId":"{span}","parentSpanId":"7e9078e03f3636b6","kind":2,"startTime":[{start},106000000],"endTime":[{end},288000000],"status":{{"code":0}},"attributes":{{"gen_ai.conversation.id":"71b459ce-5312-4161-80d1-a22ee666fbad","gen_ai.operation.name":"chat","gen_ai.provider.name":"github","gen_ai.request.model":"auto","gen_ai.response.model":"{model}","gen_ai.response.id":"msg_{span}","gen_ai.usage.input_tokens":{input},"gen_ai.usage.output_tokens":{output},"gen_ai.usage.cache_read.input_tokens":{read},"gen_ai.usage.cache_creation.input_tokens":{creation},"gen_ai.usage.reasoning.output_tokens":{reasoning}}},"events":[],"instrumentationScope":{{"name":"github.copilot","version":"1.0.80"}}}}"#,
            start = end - 3
        )
    }
    /// The turn's `invoke_agent` span, summing its calls, and a tool's.
    const AGENT: &str = r#"{"type":"span","name":"invoke_agent","traceId":"df38867ce6c93fdf67144d8c3fa91c22","spanId":"7e9078e03f3636b6","kind":0,"startTime":[1786784359,44000000],"endTime":[1786784364,878000000],"status":{"code":0},"attributes":{"gen_ai.conversation.id":"71b459ce-5312-4161-80d1-a22ee666fbad","gen_ai.operation.name":"invoke_agent","gen_ai.request.model":"auto","gen_ai.usage.input_tokens":38828,"gen_ai.usage.output_tokens":182}}"#;
    const TOOL: &str = r#"{"type":"span","name":"execute_tool view","traceId":"df38867ce6c93fdf67144d8c3fa91c22","spanId":"a53c1e279f1c540b","kind":0,"startTime":[1786784362,215000000],"endTime":[1786784363,249000000],"attributes":{"gen_ai.operation.name":"execute_tool","gen_ai.tool.name":"view","gen_ai.usage.input_tokens":1}}"#;
    const METRIC: &str = r#"{"type":"metric","name":"gen_ai.client.token.usage","dataPoints":[{"attributes":{"gen_ai.operation.name":"chat","gen_ai.token.type":"input"},"value":19335}]}"#;

    fn parse(lines: &[String]) -> FileParse {
        let mut fp = FileParse::default();
        for l in lines {
            parse_line(&mut fp, l.as_bytes());
        }
        fp
    }

    #[test]
    fn each_chat_span_is_one_call_its_input_without_the_cache() {
        let fp = parse(&[
            AGENT.into(),
            chat(
                "abb62df0759af32a",
                1786784362,
                "claude-haiku-4.5",
                [19_335, 114, 8_888, 10_437, 0],
            ),
            TOOL.into(),
            chat(
                "cfae55c7738180e5",
                1786784364,
                "gpt-5",
                [2_000, 300, 1_500, 0, 120],
            ),
            METRIC.into(),
        ]);
        assert_eq!(fp.malformed, 0);
        assert_eq!(fp.events.len(), 2);
        // By hand: input (19,335 - 8,888 - 10,437) + (2,000 - 1,500) = 10
        // + 500 = 510; cache reads 8,888 + 1,500 = 10,388; writes 10,437;
        // output 114 + 300 = 414, of it reasoning 120.
        let sum = |i: usize| fp.events.iter().map(|e| e.t[i]).sum::<u64>();
        assert_eq!(
            [sum(0), sum(1), sum(2), sum(3), sum(4), sum(5)],
            [510, 10_388, 10_437, 0, 414, 120]
        );
        let e = fp.events[0];
        assert_eq!(e.kind, EventKind::Message);
        assert_eq!(fp.string(e.model), "claude-haiku-4.5");
        assert_eq!(fp.string(e.session), "71b459ce-5312-4161-80d1-a22ee666fbad");
        // The end: [1786784362, 288000000].
        assert_eq!(e.ts, 1_786_784_362);
        assert_eq!(
            e.key,
            fnv1a(&[b"df38867ce6c93fdf67144d8c3fa91c22:abb62df0759af32a"])
        );
    }

    #[test]
    fn times_are_pairs_or_nanoseconds_as_numbers_or_strings() {
        let span = |time: &str| {
            format!(
                r#"{{"traceId":"t","spanId":"s","name":"chat m",{time},"attributes":{{"gen_ai.operation.name":"chat","gen_ai.response.model":"m","gen_ai.usage.input_tokens":5,"gen_ai.usage.output_tokens":1}}}}"#
            )
        };
        for (time, ts) in [
            (r#""startTime":[1786784362,999999999]"#, 1_786_784_362),
            (r#""endTimeUnixNano":"1786784364500000000""#, 1_786_784_364),
            (r#""startTimeUnixNano":1786784365000000000"#, 1_786_784_365),
            (r#""endTime":1786784366123"#, 1_786_784_366),
        ] {
            let fp = parse(&[span(time)]);
            assert_eq!(fp.events.len(), 1, "{time}");
            assert_eq!(fp.events[0].ts, ts, "{time}");
            assert_eq!(fp.events[0].t, [5, 0, 0, 0, 1, 0]);
        }
        // No time, or one out of range: no call.
        for time in [
            r#""x":1"#,
            r#""endTime":[99999999999999999999,0]"#,
            r#""endTime":[1]"#,
            r#""endTime":-5"#,
        ] {
            assert!(parse(&[span(time)]).events.is_empty(), "{time}");
        }
    }

    #[test]
    fn hostile_counts_saturate_and_strings_count() {
        let line = r#"{"type":"span","traceId":"t","spanId":"s","endTime":[1786784362,0],"attributes":{"gen_ai.operation.name":"chat","gen_ai.usage.input_tokens":"700","gen_ai.usage.output_tokens":123456789012345678901234567890,"gen_ai.usage.cache_read.input_tokens":900,"gen_ai.usage.reasoning_tokens":-3}}"#;
        let fp = parse(&[line.into()]);
        assert_eq!(fp.events.len(), 1);
        // Input 700 less 900 read: 0, not a wrap; the model unknown.
        assert_eq!(fp.events[0].t, [0, 900, 0, 0, u64::MAX, 0]);
        assert_eq!(fp.string(fp.events[0].model), "");
    }

    #[test]
    fn a_member_named_twice_is_its_last_value() {
        // `JSON.parse` keeps the last `attributes` and the last count.
        let fp = parse(&[
            r#"{"traceId":"t","spanId":"s","endTime":[1786784362,0],"attributes":{"gen_ai.operation.name":"chat","gen_ai.usage.input_tokens":9},"attributes":{"gen_ai.operation.name":"execute_tool","gen_ai.usage.input_tokens":1}}"#.into(),
            r#"{"traceId":"t","spanId":"u","endTime":[1786784362,0],"attributes":{"gen_ai.operation.name":"chat","gen_ai.usage.output_tokens":9,"gen_ai.usage.output_tokens":3,"gen_ai.usage.cache_write.input_tokens":4}}"#.into(),
        ]);
        assert_eq!(fp.malformed, 0);
        assert_eq!(fp.events.len(), 1);
        assert_eq!(fp.events[0].t, [0, 0, 4, 0, 3, 0]);
    }

    #[test]
    fn torn_lines_are_malformed_and_an_append_reads_on() {
        let a = chat("a1", 1786784362, "gpt-5", [10, 1, 0, 0, 0]);
        let b = chat("b2", 1786784363, "gpt-5", [20, 2, 0, 0, 0]);
        let fp = parse(&[a[..a.len() - 10].to_string(), b.clone()]);
        assert_eq!(fp.malformed, 1);
        assert_eq!(fp.events.len(), 1);
        let whole = parse(&[a.clone(), b.clone()]);
        let mut fp = parse(std::slice::from_ref(&a));
        parse_line(&mut fp, b.as_bytes());
        assert_eq!(fp, whole);
    }
}

//! Gemini CLI session files to usage events, and the GenAI usage counts
//! that Gemini CLI and Qwen Code (its fork) both record.
//!
//! Gemini CLI's writer is `ChatRecordingService` in
//! `packages/core/src/services/chatRecordingService.ts`, its types in
//! `chatRecordingTypes.ts` (google-gemini/gemini-cli, commit 5411f113c).
//! A session is a file under `<home>/.gemini/tmp/<project>/chats/`: a main
//! session's is `session-<YYYY-MM-DDTHH-MM>-<id8>`, a subagent's is
//! `<parent id>/<session id>.jsonl`. Two forms:
//!
//! - Before commit f744913584 ("migrate chat recording to JSONL"), a
//!   `.json` document rewritten whole (`JSON.stringify(conversation, null,
//!   2)`): `{sessionId, projectHash, startTime, lastUpdated, messages}`,
//!   `lastUpdated` set at every write, so no message is newer. A resume
//!   rewrote the same file.
//! - Since, a `.jsonl` log: a first line of metadata (`sessionId`,
//!   `projectHash`, `startTime`, `lastUpdated`, …), then records appended
//!   (`appendRecord`): a message record whole each time it changes
//!   (`pushMessage`: the same `id` again once its tokens or tool calls
//!   arrive), `{"$set": …}` metadata updates (`$set.messages` a checkpoint
//!   of messages already appended) and `{"$rewindTo": id}` (the rewound
//!   messages were billed and still count).
//!
//! A model response is a message of `type` `"gemini"` with `model` and
//! `tokens` (`TokensSummary`: `input` = `promptTokenCount`, `output` =
//! `candidatesTokenCount`, `cached`, `thoughts`, `tool` =
//! `toolUsePromptTokenCount`, `total`), set once from the successful
//! attempt's usage (`recordMessageTokens`; a failed attempt's usage is not
//! recorded). Calls of one file with the same id count once
//! (`aggregate::message_count`).
//!
//! Resuming a legacy `.json` session writes `<same name>.jsonl` with the
//! `.json`'s metadata (its `lastUpdated`) and every message copied, and
//! leaves the `.json` in place: in a `.jsonl`, a message stamped at or
//! before its first line's `lastUpdated` is such a copy and is skipped (a
//! new session's first line is written before any message). Both are
//! `new Date().toISOString()`, compared to the millisecond.
//!
//! The file is a [`Form::Document`](crate::usage::agents::Form) for the
//! cache (both forms share the agent): re-read whole when it changes.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use crate::usage::event::{FileParse, Message, Tokens};
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::parse::scan::trim;

/// A GenAI `usageMetadata`'s counts (`GenerateContentResponseUsageMetadata`
/// of `@google/genai`), under either spelling the writers use.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GenAiUsage {
    /// `promptTokenCount`: the whole prompt, cached part included.
    pub prompt: u64,
    /// `candidatesTokenCount`.
    pub candidates: u64,
    /// `cachedContentTokenCount`: the prompt's cached part.
    pub cached: u64,
    /// `thoughtsTokenCount`.
    pub thoughts: u64,
    /// `toolUsePromptTokenCount`: tool-use prompts, not in `prompt`.
    pub tool: u64,
    /// `totalTokenCount` (0 when absent).
    pub total: u64,
}

impl GenAiUsage {
    /// The counts as [`Tokens`]: `input` the prompt's uncached part plus the
    /// tool-use prompts, `cache_read` the cached part, `output` candidates
    /// and thoughts, `reasoning` the thoughts. The Gemini API counts
    /// thoughts apart from candidates (its total is prompt + candidates +
    /// thoughts + tool-use prompts); an OpenAI-compatible provider
    /// converted to these names (Qwen Code's `convertOpenAIResponseToLlm`)
    /// counts them inside (its total is prompt + candidates). The record's
    /// own total tells which; without one, `thoughts_apart` decides.
    pub(crate) fn tokens(&self, thoughts_apart: bool) -> Tokens {
        let apart = if self.thoughts == 0 {
            true
        } else if self.total != 0 {
            let sum = self.prompt.saturating_add(self.candidates);
            self.total >= sum.saturating_add(self.thoughts)
        } else {
            thoughts_apart
        };
        let output = if apart {
            self.candidates.saturating_add(self.thoughts)
        } else {
            self.candidates.max(self.thoughts)
        };
        let cache_read = self.cached.min(self.prompt);
        Tokens {
            input: (self.prompt - cache_read).saturating_add(self.tool),
            cache_read,
            output,
            reasoning: self.thoughts.min(output),
            ..Tokens::default()
        }
    }

    /// Reads a usage object's members: `@google/genai`'s names, or the
    /// `TokensSummary` names (`input`, `output`, `cached`, `thoughts`,
    /// `tool`, `total`) Gemini CLI and early Qwen Code write.
    pub(crate) fn pick(c: &mut Cursor<'_>) -> Option<GenAiUsage> {
        let mut u = GenAiUsage::default();
        c.object(|key, c| {
            let slot = match key {
                b"promptTokenCount" | b"input" => &mut u.prompt,
                b"candidatesTokenCount" | b"output" => &mut u.candidates,
                b"cachedContentTokenCount" | b"cached" => &mut u.cached,
                b"thoughtsTokenCount" | b"thoughts" => &mut u.thoughts,
                b"toolUsePromptTokenCount" | b"tool" => &mut u.tool,
                b"totalTokenCount" | b"total" => &mut u.total,
                _ => return c.skip(),
            };
            *slot = c.count()?.unwrap_or(0);
            Some(())
        })?;
        Some(u)
    }
}

/// Milliseconds since the epoch of an ISO-8601 time (`toISOString`'s
/// `2026-12-04T10:00:05.123Z`; a fraction's first three digits).
pub(crate) fn millis_of(b: &[u8]) -> Option<i64> {
    let seconds = crate::usage::time::timestamp_of(b)?;
    let mut ms = 0;
    if let Some(&b'.') = b.get(19) {
        let fraction = b.get(20..).unwrap_or_default();
        let digits = fraction.iter().take_while(|d| d.is_ascii_digit());
        for (i, d) in digits.chain(std::iter::repeat(&b'0')).take(3).enumerate() {
            ms += i64::from(d - b'0') * [100, 10, 1][i];
        }
    }
    seconds.checked_mul(1000)?.checked_add(ms)
}

/// The members of a record (a metadata line, a message, or a legacy
/// document) that Usage reads.
#[derive(Default)]
struct Record<'a> {
    session: Option<Cow<'a, [u8]>>,
    last_updated: Option<Cow<'a, [u8]>>,
    id: Option<Cow<'a, [u8]>>,
    kind: Option<Cow<'a, [u8]>>,
    timestamp: Option<Cow<'a, [u8]>>,
    model: Option<Cow<'a, [u8]>>,
    usage: Option<GenAiUsage>,
    /// A legacy document's messages (read only when asked for).
    messages: Vec<Record<'a>>,
}

/// Reads one record at `c`; with `nested`, also the `messages` array of a
/// legacy document (whose elements are read without theirs).
fn pick<'a>(c: &mut Cursor<'a>, nested: bool) -> Option<Record<'a>> {
    let mut r = Record::default();
    c.object(|key, c| {
        match key {
            b"sessionId" => r.session = c.text()?,
            b"lastUpdated" => r.last_updated = c.bytes()?,
            b"id" => r.id = c.bytes()?,
            b"type" => r.kind = c.bytes()?,
            b"timestamp" => r.timestamp = c.bytes()?,
            b"model" => r.model = c.text()?,
            b"tokens" if c.raw_is_object() => r.usage = Some(GenAiUsage::pick(c)?),
            b"messages" if nested && c.raw_is_array() => c.array(|c| {
                if c.raw_is_object() {
                    r.messages.push(pick(c, false)?);
                    Some(())
                } else {
                    c.skip()
                }
            })?,
            _ => c.skip()?,
        }
        Some(())
    })?;
    Some(r)
}

/// Parses a whole Gemini CLI session file (either form) into `fp`.
pub fn parse_document(fp: &mut FileParse, bytes: &[u8]) {
    let mut c = Cursor::new(bytes);
    if c.raw_is_object()
        && let Some(doc) = pick(&mut c, true)
        && c.at_end()
        && doc.id.is_none()
    {
        // One JSON value, not a message: a legacy document (or a log of
        // its metadata line only).
        set_session(fp, &doc);
        let cwd = fp.string(fp.codex.cwd).to_owned();
        for m in &doc.messages {
            push(fp, m, i64::MIN, &cwd);
        }
        return;
    }
    parse_lines(fp, bytes);
}

/// Whether a log line past the first may be a message with tokens (a key
/// spelled with escapes included).
fn may_hold_tokens(line: &[u8]) -> bool {
    static TOKENS: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"tokens\""));
    static ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
    TOKENS.find(line).is_some() || ESCAPE.find(line).is_some()
}

/// The `.jsonl` form: the first record's metadata, then every message
/// newer than its `lastUpdated`.
fn parse_lines(fp: &mut FileParse, bytes: &[u8]) {
    let cwd = fp.string(fp.codex.cwd).to_owned();
    let mut first = true;
    let mut copied_until = i64::MIN;
    let mut rest = bytes;
    while !rest.is_empty() {
        let (raw, next, whole) = match memchr::memchr(b'\n', rest) {
            Some(at) => (&rest[..at], &rest[at + 1..], true),
            None => (rest, &rest[rest.len()..], false),
        };
        rest = next;
        let line = trim(raw);
        if line.is_empty() || (!first && !may_hold_tokens(line)) {
            continue;
        }
        let mut c = Cursor::new(line);
        let record = pick(&mut c, false).filter(|_| c.at_end());
        let was_first = std::mem::replace(&mut first, false);
        let Some(r) = record else {
            // A last line still being written is not malformed yet.
            fp.malformed += u64::from(whole);
            continue;
        };
        if was_first && r.id.is_none() {
            set_session(fp, &r);
            copied_until = r
                .last_updated
                .as_deref()
                .and_then(millis_of)
                .unwrap_or(i64::MIN);
            continue;
        }
        push(fp, &r, copied_until, &cwd);
    }
}

fn set_session(fp: &mut FileParse, r: &Record) {
    let id = r.session.as_deref().unwrap_or(b"");
    fp.codex.thread_id = String::from_utf8_lossy(id).into_owned();
}

/// A model response's call in `cwd` (the project's, when `begin` found
/// it), unless it is a copy (stamped at or before `copied_until`) or
/// carries no tokens.
fn push(fp: &mut FileParse, m: &Record, copied_until: i64, cwd: &str) {
    if m.kind.as_deref() != Some(b"gemini") {
        return;
    }
    let (Some(usage), Some(at)) = (m.usage, m.timestamp.as_deref().and_then(millis_of)) else {
        return;
    };
    if at <= copied_until {
        return;
    }
    // Gemini CLI talks to the Gemini API only: thoughts apart.
    let tokens = usage.tokens(true);
    if tokens.total() == 0 {
        return;
    }
    let model = String::from_utf8_lossy(m.model.as_deref().unwrap_or(b""));
    fp.push_message(&Message {
        ts: at.div_euclid(1000),
        model: &model,
        cwd,
        session: "",
        id: m.id.as_deref().unwrap_or(b""),
        tokens,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::{EventKind, message_tokens};

    /// A message record as `ChatRecordingService.newMessage` and
    /// `recordMessageTokens` make it (`tokens` a `TokensSummary`).
    fn gemini(id: &str, ts: &str, model: &str, t: [u64; 5]) -> String {
        let [input, output, cached, thoughts, tool] = t;
        let total = input + output + thoughts + tool;
        format!(
            r#"{{"id":"{id}","timestamp":"{ts}","type":"gemini","content":[{{"text":"done"}}],"thoughts":[],"tokens":{{"input":{input},"output":{output},"cached":{cached},"thoughts":{thoughts},"tool":{tool},"total":{total}}},"model":"{model}"}}"#
        )
    }
    fn user(id: &str, ts: &str) -> String {
        format!(
            r#"{{"id":"{id}","timestamp":"{ts}","type":"user","content":[{{"text":"count"}}]}}"#
        )
    }
    fn meta(start: &str, updated: &str) -> String {
        format!(
            r#"{{"sessionId":"g-1","projectHash":"ab12","startTime":"{start}","lastUpdated":"{updated}","kind":"main"}}"#
        )
    }
    fn parse(text: &str) -> FileParse {
        let mut fp = FileParse::default();
        parse_document(&mut fp, text.as_bytes());
        fp
    }
    /// [calls, input, cache read, output, reasoning] of a parse, each id
    /// once (its largest, as `aggregate::message_count` keeps it).
    fn sums(fp: &FileParse) -> [u64; 5] {
        let mut best: std::collections::HashMap<u64, Tokens> = Default::default();
        let mut loose = Vec::new();
        for e in fp.events.iter().filter(|e| e.kind == EventKind::Message) {
            let t = message_tokens(e.t);
            match e.key {
                0 => loose.push(t),
                k => {
                    let kept = best.entry(k).or_default();
                    if t.total() > kept.total() {
                        *kept = t;
                    }
                }
            }
        }
        let all: Vec<Tokens> = best.into_values().chain(loose).collect();
        let s = |f: fn(&Tokens) -> u64| all.iter().map(f).sum::<u64>();
        [
            all.len() as u64,
            s(|t| t.input),
            s(|t| t.cache_read),
            s(|t| t.output),
            s(|t| t.reasoning),
        ]
    }

    #[test]
    fn a_log_counts_each_response_once_with_its_tokens() {
        let text = [
            meta("2026-12-04T10:00:00.000Z", "2026-12-04T10:00:00.000Z"),
            user("u1", "2026-12-04T10:00:01.000Z"),
            // Appended first without tokens, then again with them
            // (`recordMessageTokens` re-pushes the same message).
            r#"{"id":"m1","timestamp":"2026-12-04T10:00:03.000Z","type":"gemini","content":[],"tokens":null,"model":"gemini-2.5-pro"}"#.into(),
            gemini("m1", "2026-12-04T10:00:03.000Z", "gemini-2.5-pro", [1_200, 300, 1_000, 50, 0]),
            r#"{"$set":{"lastUpdated":"2026-12-04T10:00:04.000Z"}}"#.into(),
            gemini("m2", "2026-12-04T10:00:09.000Z", "gemini-2.5-flash", [2_500, 40, 0, 0, 30]),
            r#"{"$rewindTo":"m2"}"#.into(),
            // The same message again, grown by a tool call: one call.
            gemini("m2", "2026-12-04T10:00:09.000Z", "gemini-2.5-flash", [2_500, 40, 0, 0, 30]),
        ]
        .join("\n");
        let fp = parse(&(text + "\n"));
        assert_eq!(fp.malformed, 0);
        assert_eq!(fp.codex.thread_id, "g-1");
        // By hand: m1 input 1,200 - 1,000 cached = 200, output 300 + 50
        // thoughts = 350; m2 input 2,500 + 30 tool-use = 2,530, output 40.
        // Calls 2, input 2,730, cache reads 1,000, output 390, reasoning 50.
        assert_eq!(sums(&fp), [2, 2_730, 1_000, 390, 50]);
        let e = fp.events.iter().find(|e| e.t[0] == 200).unwrap();
        assert_eq!(fp.string(e.model), "gemini-2.5-pro");
        // 2026-12-04T10:00:03Z: 20,791 days after 1970-01-01.
        assert_eq!(e.ts, 20_791 * 86_400 + 10 * 3_600 + 3);
    }

    #[test]
    fn a_legacy_document_counts_its_messages() {
        let doc = format!(
            "{{\n  \"sessionId\": \"g-0\",\n  \"projectHash\": \"ab12\",\n  \"startTime\": \"2026-12-03T09:00:00.000Z\",\n  \"lastUpdated\": \"2026-12-03T09:10:00.000Z\",\n  \"messages\": [\n    {},\n    {},\n    {}\n  ]\n}}",
            user("u1", "2026-12-03T09:00:01.000Z"),
            gemini(
                "m1",
                "2026-12-03T09:00:05.000Z",
                "gemini-2.5-pro",
                [10_000, 800, 8_000, 200, 0]
            ),
            gemini(
                "m2",
                "2026-12-03T09:09:00.000Z",
                "gemini-2.5-pro",
                [12_000, 100, 0, 0, 0]
            ),
        );
        let fp = parse(&doc);
        assert_eq!(fp.codex.thread_id, "g-0");
        // By hand: input 2,000 + 12,000 = 14,000, cache reads 8,000,
        // output 1,000 + 100 = 1,100, reasoning 200.
        assert_eq!(sums(&fp), [2, 14_000, 8_000, 1_100, 200]);
    }

    #[test]
    fn a_resumed_legacy_session_s_copy_is_skipped() {
        // `initialize` with a `.json`: the metadata (its `lastUpdated`),
        // the messages copied, `$set` of the session id, then new ones.
        let text = [
            meta("2026-12-03T09:00:00.000Z", "2026-12-03T09:10:00.000Z"),
            gemini(
                "m1",
                "2026-12-03T09:00:05.000Z",
                "gemini-2.5-pro",
                [10_000, 800, 8_000, 200, 0],
            ),
            gemini(
                "m2",
                "2026-12-03T09:10:00.000Z",
                "gemini-2.5-pro",
                [12_000, 100, 0, 0, 0],
            ),
            r#"{"$set":{"sessionId":"g-1"}}"#.into(),
            gemini(
                "m3",
                "2026-12-04T08:00:00.001Z",
                "gemini-2.5-pro",
                [500, 5, 0, 0, 0],
            ),
        ]
        .join("\n");
        let fp = parse(&text);
        // Only m3: input 500, output 5.
        assert_eq!(sums(&fp), [1, 500, 0, 5, 0]);
    }

    #[test]
    fn a_torn_last_line_waits_and_broken_lines_are_malformed() {
        let good = gemini("m1", "2026-12-04T10:00:03.000Z", "m", [10, 1, 0, 0, 0]);
        let text = format!(
            "{}\n{{\"tokens\":1,\n{good}\n{}",
            meta("2026-12-04T10:00:00.000Z", "2026-12-04T10:00:00.000Z"),
            &good[..good.len() / 2]
        );
        let fp = parse(&text);
        assert_eq!(fp.malformed, 1);
        assert_eq!(sums(&fp), [1, 10, 0, 1, 0]);
        // A log of one message (no metadata line) counts it.
        assert_eq!(sums(&parse(&good)), [1, 10, 0, 1, 0]);
        assert!(parse("").events.is_empty());
        assert!(parse("[1,2]").events.is_empty());
    }

    #[test]
    fn thoughts_are_apart_or_inside_as_the_total_tells() {
        let u = |prompt, candidates, cached, thoughts, total| GenAiUsage {
            prompt,
            candidates,
            cached,
            thoughts,
            tool: 0,
            total,
        };
        // Gemini API: total 100 + 20 + 5 = 125, output 20 + 5.
        let t = u(100, 20, 40, 5, 125).tokens(false);
        assert_eq!(
            [t.input, t.cache_read, t.output, t.reasoning],
            [60, 40, 25, 5]
        );
        // OpenAI converted: total 100 + 20, the 5 inside the 20.
        let t = u(100, 20, 40, 5, 120).tokens(true);
        assert_eq!(
            [t.input, t.cache_read, t.output, t.reasoning],
            [60, 40, 20, 5]
        );
        // No total: the caller's default; a cached count over the prompt
        // is capped at it.
        assert_eq!(u(10, 20, 90, 5, 0).tokens(true).output, 25);
        assert_eq!(u(10, 20, 90, 5, 0).tokens(false).output, 20);
        assert_eq!(u(10, 20, 90, 5, 0).tokens(false).input, 0);
    }

    #[test]
    fn millis_read_the_iso_fraction() {
        let s = 20_791 * 86_400_000;
        assert_eq!(millis_of(b"2026-12-04T00:00:00.123Z"), Some(s + 123));
        assert_eq!(millis_of(b"2026-12-04T00:00:00.5Z"), Some(s + 500));
        assert_eq!(millis_of(b"2026-12-04T00:00:00Z"), Some(s));
        assert_eq!(millis_of(b"2026-12-04"), None);
    }
}

//! Qwen Code chat files to usage events.
//!
//! Qwen Code (QwenLM/qwen-code, a fork of Gemini CLI) records a session
//! with `ChatRecordingService` in
//! `packages/core/src/services/chatRecordingService.ts` (commit
//! 015346f1d5): one `ChatRecord` a line, appended only (`jsonl.writeLine`),
//! to `<runtime dir>/projects/<sanitized cwd>/chats/<sessionId>.jsonl`
//! (`Storage.getProjectDir` in `packages/core/src/config/storage.ts`).
//! Every record has `uuid`, `parentUuid`, `sessionId`, an ISO `timestamp`,
//! `type` (`user`, `assistant`, `tool_result`, `system`) and `cwd`. A model
//! response is one `assistant` record (`recordAssistantTurn`) with `model`
//! and `usageMetadata`: the response's `GenerateContentResponseUsageMetadata`
//! (`promptTokenCount`, `candidatesTokenCount`, `cachedContentTokenCount`,
//! `thoughtsTokenCount`, `totalTokenCount`; earlier versions wrote Gemini
//! CLI's `TokensSummary` names, `input`, `output`, `cached`, …), counted as
//! `parse::gemini::GenAiUsage` reads it. A rewind re-roots the record tree
//! and leaves the abandoned records in the file: they were billed and
//! count. `system` records (a `ui_telemetry` replay of the same response's
//! usage among them) count nothing.
//!
//! `/branch` writes a new session file whose records are the parent's,
//! each with its `uuid` kept and `forkedFrom: {sessionId, messageUuid}`
//! added: a record with `forkedFrom` is a copy, counted in its parent's
//! file only.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use crate::usage::event::{FileParse, Message};
use crate::usage::parse::gemini::GenAiUsage;
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::parse::scan::trim;

/// Parses one complete line of a Qwen Code chat file into `fp`.
pub fn parse_line(fp: &mut FileParse, line: &[u8]) {
    let line = trim(line);
    if line.is_empty() {
        return;
    }
    if line[0] != b'{' || line[line.len() - 1] != b'}' {
        fp.malformed += 1;
        return;
    }
    if !may_hold_usage(line) {
        return;
    }
    let mut f = Fields::default();
    let mut c = Cursor::new(line);
    if pick(&mut c, &mut f).is_none() || !c.at_end() {
        fp.malformed += 1;
        return;
    }
    if f.kind.as_deref() != Some(b"assistant") || f.forked {
        return;
    }
    let (Some(usage), Some(ts)) = (
        f.usage,
        f.timestamp
            .as_deref()
            .and_then(crate::usage::time::timestamp_of),
    ) else {
        return;
    };
    // Without a total, an OpenAI-compatible provider's (Qwen Code's
    // usual): thoughts inside the candidates.
    let tokens = usage.tokens(false);
    if tokens.total() == 0 {
        return;
    }
    let text =
        |b: &Option<Cow<[u8]>>| String::from_utf8_lossy(b.as_deref().unwrap_or(b"")).into_owned();
    fp.push_message(&Message {
        ts,
        model: &text(&f.model),
        cwd: &text(&f.cwd),
        session: &text(&f.session),
        id: f.uuid.as_deref().unwrap_or(b""),
        tokens,
    });
}

/// Whether a line may be an assistant record with usage (a key spelled
/// with escapes included): the others are skipped unread.
fn may_hold_usage(line: &[u8]) -> bool {
    static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usageMetadata\""));
    static ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
    USAGE.find(line).is_some() || ESCAPE.find(line).is_some()
}

/// The members of a record that Usage reads.
#[derive(Default)]
struct Fields<'a> {
    kind: Option<Cow<'a, [u8]>>,
    timestamp: Option<Cow<'a, [u8]>>,
    uuid: Option<Cow<'a, [u8]>>,
    session: Option<Cow<'a, [u8]>>,
    cwd: Option<Cow<'a, [u8]>>,
    model: Option<Cow<'a, [u8]>>,
    usage: Option<GenAiUsage>,
    forked: bool,
}

fn pick<'a>(c: &mut Cursor<'a>, f: &mut Fields<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"type" => f.kind = c.bytes()?,
            b"timestamp" => f.timestamp = c.bytes()?,
            b"uuid" => f.uuid = c.bytes()?,
            b"sessionId" => f.session = c.text()?,
            b"cwd" => f.cwd = c.text()?,
            b"model" => f.model = c.text()?,
            b"usageMetadata" if c.raw_is_object() => f.usage = Some(GenAiUsage::pick(c)?),
            b"forkedFrom" => {
                f.forked = c.raw_is_object();
                c.skip()?;
            }
            _ => c.skip()?,
        }
        Some(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::{EventKind, message_tokens};

    /// An assistant record as `recordAssistantTurn` appends it (the base
    /// fields of `createBaseRecord`, then `model` and `usageMetadata`).
    fn assistant(uuid: &str, ts: &str, model: &str, usage: &str) -> String {
        format!(
            r#"{{"uuid":"{uuid}","parentUuid":"u0","sessionId":"q-1","timestamp":"{ts}","type":"assistant","cwd":"/home/u/qproj","version":"0.9.0","gitBranch":"main","model":"{model}","message":{{"role":"model","parts":[{{"text":"done"}}]}},"usageMetadata":{usage},"contextWindowSize":131072}}"#
        )
    }
    /// `usageMetadata` as `convertOpenAIResponseToLlm` makes it: the
    /// prompt with its cached part, the completion with its reasoning.
    fn openai(prompt: u64, completion: u64, cached: u64, reasoning: u64) -> String {
        format!(
            r#"{{"promptTokenCount":{prompt},"candidatesTokenCount":{completion},"totalTokenCount":{},"cachedContentTokenCount":{cached},"thoughtsTokenCount":{reasoning}}}"#,
            prompt + completion
        )
    }
    fn parse(lines: &[String]) -> FileParse {
        let mut fp = FileParse::default();
        for l in lines {
            parse_line(&mut fp, l.as_bytes());
        }
        fp
    }
    fn sum(fp: &FileParse, i: usize) -> u64 {
        fp.events
            .iter()
            .map(|e| message_tokens(e.t))
            .map(|t| [t.input, t.cache_read, t.output, t.reasoning][i])
            .sum()
    }

    #[test]
    fn each_assistant_record_is_one_call_with_its_usage() {
        let fp = parse(&[
            r#"{"uuid":"u0","parentUuid":null,"sessionId":"q-1","timestamp":"2026-12-04T10:00:00.000Z","type":"user","cwd":"/home/u/qproj","version":"0.9.0","message":{"role":"user","parts":[{"text":"go"}]}}"#.into(),
            assistant("a1", "2026-12-04T10:00:05.000Z", "qwen3-coder-plus", &openai(12_000, 900, 10_000, 300)),
            // Gemini's own counts: thoughts apart (total 5,000 + 60 + 40).
            assistant(
                "a2",
                "2026-12-04T10:00:09.000Z",
                "gemini-2.5-pro",
                r#"{"promptTokenCount":5000,"candidatesTokenCount":60,"thoughtsTokenCount":40,"totalTokenCount":5100}"#,
            ),
            // An early version's `TokensSummary` names.
            assistant(
                "a3",
                "2026-12-04T10:01:00.000Z",
                "qwen3-coder-plus",
                r#"{"input":700,"output":20,"cached":0,"thoughts":0,"tool":0,"total":720}"#,
            ),
            // The same response replayed for the UI counts nothing.
            r#"{"uuid":"s1","parentUuid":"a3","sessionId":"q-1","timestamp":"2026-12-04T10:01:00.000Z","type":"system","subtype":"ui_telemetry","cwd":"/home/u/qproj","version":"0.9.0","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_response","usageMetadata":{"promptTokenCount":700}}}}"#.into(),
        ]);
        assert_eq!(fp.malformed, 0);
        assert_eq!(fp.events.len(), 3);
        // By hand: input (12,000 - 10,000) + 5,000 + 700 = 7,700; cache
        // reads 10,000; output 900 (its 300 reasoning inside) + 60 + 40
        // + 20 = 1,020; reasoning 300 + 40 = 340.
        assert_eq!(
            [sum(&fp, 0), sum(&fp, 1), sum(&fp, 2), sum(&fp, 3)],
            [7_700, 10_000, 1_020, 340]
        );
        let e = fp.events[0];
        assert_eq!(e.kind, EventKind::Message);
        assert_eq!(fp.string(e.model), "qwen3-coder-plus");
        assert_eq!(fp.string(e.cwd), "/home/u/qproj");
        assert_eq!(fp.string(e.session), "q-1");
        assert_eq!(e.ts, 20_791 * 86_400 + 10 * 3_600 + 5);
    }

    #[test]
    fn a_branch_s_copied_records_are_skipped() {
        // `/branch`: each parent record with its uuid and `forkedFrom`.
        let copy = assistant(
            "a1",
            "2026-12-04T10:00:05.000Z",
            "qwen3-coder-plus",
            &openai(100, 10, 0, 0),
        )
        .replace(
            r#""contextWindowSize""#,
            r#""forkedFrom":{"sessionId":"q-0","messageUuid":"a1"},"contextWindowSize""#,
        );
        let own = assistant(
            "b1",
            "2026-12-04T11:00:00.000Z",
            "qwen3-coder-plus",
            &openai(40, 4, 0, 0),
        );
        let fp = parse(&[copy, own]);
        assert_eq!(fp.events.len(), 1);
        assert_eq!(message_tokens(fp.events[0].t).output, 4);
    }

    #[test]
    fn broken_lines_are_malformed_and_others_count_nothing() {
        let fp = parse(&[
            "not json".into(),
            r#"{"type":"assistant","usageMetadata":{"promptTokenCount":1}"#.into(),
            r#"{"type":"assistant","usageMetadata":{"promptTokenCount":1},}"#.into(),
            // No timestamp, no tokens: nothing to count.
            r#"{"type":"assistant","usageMetadata":{"promptTokenCount":1}}"#.into(),
            assistant("a0", "2026-12-04T10:00:05.000Z", "m", &openai(0, 0, 0, 0)),
        ]);
        assert!(fp.events.is_empty());
        assert_eq!(fp.malformed, 3);
    }
}

//! Amp thread documents to model calls.
//!
//! Amp (Sourcegraph's `ampcode`) is closed source, so its format is read
//! from the public readers that agree on it: tokscale's
//! `crates/tokscale-core/src/sessions/amp.rs` (junhoyeo/tokscale at
//! 3ccca4033344f1245f61e58d927b57b42f97bab6), ccusage's
//! `rust/crates/ccusage/src/adapter/amp/parser.rs` (ryoppippi/ccusage at
//! 5816e640e8824986f33427203da164b01394a161) and agentsview's
//! `internal/parser/amp.go` (kenn-io/agentsview). A thread is one JSON
//! document, `threads/T-<uuid>.json`, that Amp rewrites whole:
//! `{"v", "id", "created" (Unix ms), "messages": [...], "usageLedger":
//! {"events": [...]}, ...}`. Usage is written twice over:
//!
//! - `usageLedger.events[]`: `{"id", "timestamp", "model", "credits",
//!   "tokens": {"input", "output", "cacheReadInputTokens"?,
//!   "cacheCreationInputTokens"?}, "operationType", "fromMessageId",
//!   "toMessageId"}`, one per inference;
//! - `messages[].usage` of an assistant message: `{"model", "inputTokens",
//!   "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens",
//!   "totalInputTokens", "timestamp"}`, where `inputTokens` is the uncached
//!   prompt (`totalInputTokens` is the sum of the three prompt buckets).
//!
//! The two are merged by tokscale's rule: with no ledger event, every
//! message's usage is a call; otherwise every ledger event is a call, and
//! each assistant message in order is matched to the first unmatched event
//! (searching on from the last match, then from the start) whose
//! `toMessageId` is its `messageId`, else whose model and four token counts
//! equal its own; a matched pair is one call with the event's tokens and
//! model (and the event's time, else the message's), and an unmatched
//! message is a call of its own. One refinement, ccusage's: an event that
//! does not write a cache count takes its message's, since ccusage reads
//! the ledger's `tokens` as input and output only.
//!
//! A forked thread's copied history: a call stamped before the thread's
//! own `created` cannot be the thread's (a thread's calls follow its
//! creation), so it is taken as copied from its parent, which counts it.
//! Amp's fork format is not published; this rule rests on the times alone.
//!
//! A call's time is its own, else the thread's `created`, else the file's
//! mtime (`begin`). Everything else in a thread (the message text, tool
//! output, file contents) is skipped unread, by `jsonpick`'s skipping.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use crate::usage::event::{FileParse, Message, Tokens};
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::time::timestamp_of;

/// Starts a fresh parse of the thread at `path`: its id is the file stem
/// (`T-<uuid>`), its fallback time the file's mtime.
pub fn begin(fp: &mut FileParse, path: &Path, mtime_ns: i64) {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    fp.codex.thread_id = stem.unwrap_or_default();
    fp.codex.meta_ts = mtime_ns.div_euclid(1_000_000_000);
}

/// One usage record, the ledger's or a message's.
#[derive(Default)]
struct Usage<'a> {
    model: Option<Cow<'a, [u8]>>,
    /// Its own time (Unix seconds), when it has one.
    ts: Option<i64>,
    /// input, output, cache reads, cache writes.
    t: [u64; 4],
    /// Whether the record wrote its cache reads and cache writes.
    cache_written: [bool; 2],
    /// A ledger event's `toMessageId`, a message's `messageId` (0: none).
    link: u64,
    /// A message's role is `assistant` (always true for an event).
    assistant: bool,
}

impl Usage<'_> {
    fn model(&self) -> &[u8] {
        self.model.as_deref().unwrap_or_default()
    }
}

/// What a thread holds that Usage reads.
#[derive(Default)]
struct Thread<'a> {
    created_ms: Option<u64>,
    events: Vec<Usage<'a>>,
    messages: Vec<Usage<'a>>,
}

/// Parses a whole thread document into `fp` (after [`begin`]).
pub fn parse_document(fp: &mut FileParse, bytes: &[u8]) {
    let mut thread = Thread::default();
    let mut c = Cursor::new(bytes);
    if pick_thread(&mut c, &mut thread).is_none() || !c.at_end() {
        fp.malformed += 1;
        return;
    }
    let fallback = match thread.created_ms {
        Some(ms) => i64::try_from(ms / 1000).unwrap_or(i64::MAX),
        None => fp.codex.meta_ts,
    };
    // A call stamped before the thread was created is a fork's copy.
    let created = thread
        .created_ms
        .map_or(i64::MIN, |ms| i64::try_from(ms / 1000).unwrap_or(i64::MAX));
    for call in merge(&thread.events, &thread.messages) {
        if call.ts.is_some_and(|ts| ts < created) || call.t.iter().all(|&n| n == 0) {
            continue;
        }
        let [input, output, cache_read, cache_write] = call.t;
        fp.push_message(&Message {
            ts: call.ts.unwrap_or(fallback),
            model: std::str::from_utf8(call.model).unwrap_or_default(),
            cwd: "",
            session: "",
            id: b"",
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
}

fn pick_thread<'a>(c: &mut Cursor<'a>, th: &mut Thread<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"created" => th.created_ms = c.count()?,
            b"messages" if c.raw_is_array() => c.array(|c| {
                let mut u = Usage::default();
                pick_message(c, &mut u)?;
                if u.assistant && u.model.as_deref().is_some_and(|m| !m.is_empty()) {
                    th.messages.push(u);
                }
                Some(())
            })?,
            b"usageLedger" if c.raw_is_object() => c.object(|key, c| match key {
                b"events" if c.raw_is_array() => c.array(|c| {
                    let mut u = Usage {
                        assistant: true,
                        ..Usage::default()
                    };
                    pick_event(c, &mut u)?;
                    if u.model.as_deref().is_some_and(|m| !m.is_empty()) {
                        th.events.push(u);
                    }
                    Some(())
                }),
                _ => c.skip(),
            })?,
            _ => c.skip()?,
        }
        Some(())
    })
}

/// One element of `messages`: its role, `messageId` and `usage`; its
/// content (nearly all of a thread's bytes) skipped.
fn pick_message<'a>(c: &mut Cursor<'a>, u: &mut Usage<'a>) -> Option<()> {
    if !c.raw_is_object() {
        return c.skip();
    }
    c.object(|key, c| {
        match key {
            b"role" => u.assistant = c.bytes()?.as_deref() == Some(b"assistant"),
            b"messageId" => u.link = c.count()?.unwrap_or(0),
            b"usage" if c.raw_is_object() => c.object(|key, c| {
                match key {
                    b"model" => u.model = c.text()?,
                    b"timestamp" => u.ts = c.bytes()?.as_deref().and_then(timestamp_of),
                    b"inputTokens" => u.t[0] = c.count()?.unwrap_or(0),
                    b"outputTokens" => u.t[1] = c.count()?.unwrap_or(0),
                    b"cacheReadInputTokens" => u.t[2] = c.count()?.unwrap_or(0),
                    b"cacheCreationInputTokens" => u.t[3] = c.count()?.unwrap_or(0),
                    _ => c.skip()?,
                }
                Some(())
            })?,
            _ => c.skip()?,
        }
        Some(())
    })
}

/// One element of `usageLedger.events`.
fn pick_event<'a>(c: &mut Cursor<'a>, u: &mut Usage<'a>) -> Option<()> {
    if !c.raw_is_object() {
        return c.skip();
    }
    c.object(|key, c| {
        match key {
            b"model" => u.model = c.text()?,
            b"timestamp" => u.ts = c.bytes()?.as_deref().and_then(timestamp_of),
            b"toMessageId" => u.link = c.count()?.unwrap_or(0),
            b"tokens" if c.raw_is_object() => c.object(|key, c| {
                match key {
                    b"input" => u.t[0] = c.count()?.unwrap_or(0),
                    b"output" => u.t[1] = c.count()?.unwrap_or(0),
                    b"cacheReadInputTokens" => {
                        u.t[2] = c.count()?.unwrap_or(0);
                        u.cache_written[0] = true;
                    }
                    b"cacheCreationInputTokens" => {
                        u.t[3] = c.count()?.unwrap_or(0);
                        u.cache_written[1] = true;
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

/// One model call of the merged thread.
struct Call<'b> {
    model: &'b [u8],
    ts: Option<i64>,
    t: [u64; 4],
}

/// The first index of `set` at or after `start`, else its first.
fn first_from(set: Option<&BTreeSet<usize>>, start: usize) -> Option<usize> {
    let set = set?;
    set.range(start..)
        .next()
        .or_else(|| set.iter().next())
        .copied()
}

/// The calls of a thread: its ledger events merged with its messages'
/// usage by tokscale's rule (see the module doc), in the ledger's order,
/// then the messages no event matched. Each lookup is a set's (no scan of
/// the ledger per message), so a hostile thread stays linearithmic.
fn merge<'b>(events: &'b [Usage<'_>], messages: &'b [Usage<'_>]) -> Vec<Call<'b>> {
    let own = |u: &'b Usage<'_>| Call {
        model: u.model(),
        ts: u.ts,
        t: u.t,
    };
    if events.is_empty() {
        return messages.iter().map(own).collect();
    }
    let mut by_link: HashMap<u64, BTreeSet<usize>> = HashMap::new();
    let mut by_usage: HashMap<(&[u8], [u64; 4]), BTreeSet<usize>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        if e.link > 0 {
            by_link.entry(e.link).or_default().insert(i);
        }
        by_usage.entry((e.model(), e.t)).or_default().insert(i);
    }
    let mut matched: Vec<Option<&Usage>> = vec![None; events.len()];
    let mut unmatched = Vec::new();
    let mut start = 0;
    for m in messages {
        let by_id = (m.link > 0)
            .then(|| first_from(by_link.get(&m.link), start))
            .flatten();
        let Some(i) = by_id.or_else(|| first_from(by_usage.get(&(m.model(), m.t)), start)) else {
            unmatched.push(own(m));
            continue;
        };
        let e = &events[i];
        if let Some(set) = by_link.get_mut(&e.link) {
            set.remove(&i);
        }
        if let Some(set) = by_usage.get_mut(&(e.model(), e.t)) {
            set.remove(&i);
        }
        matched[i] = Some(m);
        start = i + 1;
    }
    let mut calls: Vec<Call> = events
        .iter()
        .zip(matched)
        .map(|(e, m)| paired(e, m))
        .collect();
    calls.extend(unmatched);
    calls
}

/// A ledger event as a call, with its matched message's time and cache
/// counts where the event has none.
fn paired<'b>(e: &'b Usage<'_>, m: Option<&'b Usage<'_>>) -> Call<'b> {
    let mut t = e.t;
    if let Some(m) = m {
        for (k, written) in e.cache_written.iter().enumerate() {
            if !written {
                t[2 + k] = m.t[2 + k];
            }
        }
    }
    Call {
        model: e.model(),
        ts: e.ts.or(m.and_then(|m| m.ts)),
        t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::message_tokens;

    /// A thread as Amp writes it (the field names the readers above agree
    /// on): the message text is there to be skipped.
    fn thread(created: u64, events: &[String], messages: &[String]) -> String {
        format!(
            r#"{{"v":42,"id":"T-1","created":{created},"title":"count","env":{{"initial":{{"trees":[{{"uri":"file:///home/u/proj"}}]}}}},"messages":[{}],"usageLedger":{{"events":[{}]}},"relationships":[]}}"#,
            messages.join(","),
            events.join(",")
        )
    }
    fn user(id: u64) -> String {
        format!(
            r#"{{"role":"user","messageId":{id},"content":[{{"type":"text","text":"explain \"usage\"\n"}}],"meta":{{"sentAt":1764842400000}}}}"#
        )
    }
    /// An assistant message: usage [input, output, cache read, cache write].
    fn assistant(id: u64, model: &str, ts: &str, u: [u64; 4]) -> String {
        let [i, o, r, w] = u;
        format!(
            r#"{{"role":"assistant","messageId":{id},"content":[{{"type":"thinking","thinking":"…"}},{{"type":"text","text":"done"}},{{"type":"tool_use","id":"t1","name":"Bash","input":{{"cmd":"ls"}}}}],"state":{{"type":"complete","stopReason":"end_turn"}},"usage":{{"model":"{model}","maxInputTokens":168000,"inputTokens":{i},"outputTokens":{o},"cacheCreationInputTokens":{w},"cacheReadInputTokens":{r},"totalInputTokens":{},"timestamp":"{ts}"}}}}"#,
            i + r + w
        )
    }
    /// A ledger event with input and output only (as ccusage reads them).
    fn event(to: u64, model: &str, ts: &str, input: u64, output: u64) -> String {
        format!(
            r#"{{"id":"e-{to}","timestamp":"{ts}","model":"{model}","credits":1.5,"tokens":{{"input":{input},"output":{output}}},"operationType":"inference","fromMessageId":{},"toMessageId":{to}}}"#,
            to.saturating_sub(1)
        )
    }

    fn parse(doc: &str) -> FileParse {
        let mut fp = FileParse::default();
        begin(
            &mut fp,
            Path::new("/a/threads/T-1.json"),
            1_764_900_000_000_000_000,
        );
        parse_document(&mut fp, doc.as_bytes());
        fp
    }
    /// The calls' summed [calls, input, output, cache read, cache write].
    fn totals(fp: &FileParse) -> [u64; 5] {
        let mut s = [0; 5];
        for e in &fp.events {
            let t = message_tokens(e.t);
            let add = [1, t.input, t.output, t.cache_read, t.cache_write_5m];
            for (a, b) in s.iter_mut().zip(add) {
                *a += b;
            }
        }
        s
    }

    // 2026-12-04T10:00:00Z in Unix ms: 20,791 days after 1970-01-01.
    const CREATED: u64 = (20_791 * 86_400 + 36_000) * 1000;

    #[test]
    fn messages_alone_are_the_calls_when_there_is_no_ledger() {
        let fp = parse(&thread(
            CREATED,
            &[],
            &[
                user(0),
                assistant(
                    1,
                    "claude-sonnet-4-5",
                    "2026-12-04T10:00:05.000Z",
                    [10, 178, 11_372, 986],
                ),
                user(2),
                assistant(
                    3,
                    "claude-sonnet-4-5",
                    "2026-12-04T10:01:00.000Z",
                    [5, 42, 12_000, 0],
                ),
            ],
        ));
        assert_eq!(fp.malformed, 0);
        // By hand: 2 calls; input 10+5 = 15; output 178+42 = 220; cache
        // reads 11,372+12,000 = 23,372; cache writes 986.
        assert_eq!(totals(&fp), [2, 15, 220, 23_372, 986]);
        assert_eq!(fp.codex.thread_id, "T-1");
        assert_eq!(fp.events[0].ts, (20_791 * 86_400 + 36_005));
        assert_eq!(fp.string(fp.events[0].model), "claude-sonnet-4-5");
    }

    #[test]
    fn ledger_events_take_their_message_s_cache_counts_and_extra_messages_count() {
        let fp = parse(&thread(
            CREATED,
            &[
                // Message 3 is linked by toMessageId though listed second.
                event(3, "claude-sonnet-4-5", "2026-12-04T10:01:00.000Z", 5, 42),
                event(1, "claude-sonnet-4-5", "2026-12-04T10:00:05.000Z", 10, 178),
                // An event no message matches (a sub-agent's call): counts.
                event(0, "claude-haiku-4-5", "2026-12-04T10:00:30.000Z", 700, 30),
            ],
            &[
                assistant(
                    1,
                    "claude-sonnet-4-5",
                    "2026-12-04T10:00:05.000Z",
                    [10, 178, 11_372, 986],
                ),
                assistant(
                    3,
                    "claude-sonnet-4-5",
                    "2026-12-04T10:01:00.000Z",
                    [5, 42, 12_000, 0],
                ),
                // A message no event covers: a call of its own.
                assistant(
                    5,
                    "claude-sonnet-4-5",
                    "2026-12-04T10:02:00.000Z",
                    [2, 9, 300, 40],
                ),
            ],
        ));
        // By hand: 4 calls (3 events + message 5). Input 5+10+700+2 = 717;
        // output 42+178+30+9 = 259; cache reads 12,000 (message 3, event
        // 1st) + 11,372 (message 1) + 0 + 300 = 23,672; cache writes 0 +
        // 986 + 0 + 40 = 1,026.
        assert_eq!(totals(&fp), [4, 717, 259, 23_672, 1_026]);
    }

    #[test]
    fn a_message_without_a_link_matches_an_event_with_its_model_and_counts() {
        let e = r#"{"timestamp":"2026-12-04T10:00:05.000Z","model":"gpt-5","tokens":{"input":20,"output":5,"cacheReadInputTokens":0,"cacheCreationInputTokens":0}}"#;
        let m =
            r#"{"role":"assistant","usage":{"model":"gpt-5","inputTokens":20,"outputTokens":5}}"#;
        let fp = parse(&thread(CREATED, &[e.into()], &[m.into(), m.into()]));
        // The first message pairs with the event (same model and counts);
        // the second is a call of its own, timed by `created`: 2 calls of
        // 20 in and 5 out.
        assert_eq!(totals(&fp), [2, 40, 10, 0, 0]);
        assert_eq!(fp.events[1].ts, (CREATED / 1000) as i64);
    }

    #[test]
    fn a_fork_skips_the_calls_it_copied_from_its_parent() {
        // Created at 11:00; the first two calls are the parent's, copied.
        let created = CREATED + 3_600_000;
        let fp = parse(&thread(
            created,
            &[],
            &[
                assistant(
                    1,
                    "claude-sonnet-4-5",
                    "2026-12-04T10:00:05.000Z",
                    [10, 178, 11_372, 986],
                ),
                assistant(
                    3,
                    "claude-sonnet-4-5",
                    "2026-12-04T10:01:00.000Z",
                    [5, 42, 12_000, 0],
                ),
                assistant(
                    5,
                    "claude-sonnet-4-5",
                    "2026-12-04T11:00:00.500Z",
                    [2, 9, 300, 40],
                ),
            ],
        ));
        assert_eq!(totals(&fp), [1, 2, 9, 300, 40]);
    }

    #[test]
    fn no_time_falls_back_to_the_file_mtime_and_empty_calls_are_dropped() {
        let doc = r#"{"id":"T-1","messages":[{"role":"assistant","usage":{"model":"m","inputTokens":3}},{"role":"assistant","usage":{"model":"m"}},{"role":"assistant","usage":{"inputTokens":9}},"odd",7]}"#;
        let fp = parse(doc);
        // One call: the empty one and the one without a model are dropped.
        assert_eq!(totals(&fp), [1, 3, 0, 0, 0]);
        assert_eq!(fp.events[0].ts, 1_764_900_000);
    }

    #[test]
    fn a_torn_or_broken_document_is_malformed_and_counts_nothing() {
        let doc = thread(
            CREATED,
            &[],
            &[assistant(1, "m", "2026-12-04T10:00:05.000Z", [1, 1, 1, 1])],
        );
        let fp = parse(&doc[..doc.len() - 3]);
        assert_eq!((fp.events.len(), fp.malformed), (0, 1));
        let fp = parse(&format!("{doc} x"));
        assert_eq!((fp.events.len(), fp.malformed), (0, 1));
    }
}

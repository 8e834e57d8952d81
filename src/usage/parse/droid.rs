//! Droid session settings to one model-call total per session.
//!
//! Droid (Factory's `droid` CLI) is closed source, so its format is read
//! from the public readers that agree on it: tokscale's
//! `crates/tokscale-core/src/sessions/droid.rs` (junhoyeo/tokscale at
//! 15c1d0c289eb16cbe51a0e174bc7ae46333c8b34) and ccusage's
//! `rust/crates/ccusage/src/adapter/droid/parser.rs` (ryoppippi/ccusage at
//! 5816e640e8824986f33427203da164b01394a161). Each session has, beside its
//! `<id>.jsonl` transcript, a `<id>.settings.json` document that Droid
//! rewrites whole: `{"model", "providerLock", "providerLockTimestamp",
//! "tokenUsage": {"inputTokens", "outputTokens", "cacheCreationTokens",
//! "cacheReadTokens", "thinkingTokens"}, ...}`, the session's running
//! totals. The transcript carries no usage.
//!
//! So a session is one call: its totals, at `providerLockTimestamp`, else
//! at the file's mtime (ccusage's rule; `begin`). Both readers count the
//! five counters as disjoint buckets: `inputTokens` without the cache reads
//! (they are priced apart), `thinkingTokens` beside `outputTokens` (ccusage
//! prices output as their sum; tokscale adds reasoning to the total), so
//! the call's output is output plus thinking, thinking its reasoning part.
//! The model is kept as Droid writes it (`custom:…` names a user's own
//! endpoint and stays unpriced); a session without one is unpriced too.

use std::borrow::Cow;
use std::path::Path;

use crate::usage::event::{FileParse, Message, Tokens};
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::time::timestamp_of;

/// The suffix of a session's settings file.
pub const SETTINGS: &str = ".settings.json";

/// Starts a fresh parse of the settings at `path`: the session id is the
/// file name without `.settings.json`, the fallback time its mtime.
pub fn begin(fp: &mut FileParse, path: &Path, mtime_ns: i64) {
    let name = path.file_name().map(|s| s.to_string_lossy().into_owned());
    let name = name.unwrap_or_default();
    fp.codex.thread_id = name.strip_suffix(SETTINGS).unwrap_or(&name).to_owned();
    fp.codex.meta_ts = mtime_ns.div_euclid(1_000_000_000);
}

#[derive(Default)]
struct Settings<'a> {
    model: Option<Cow<'a, [u8]>>,
    ts: Option<i64>,
    /// input, output, cache writes, cache reads, thinking.
    t: [u64; 5],
}

/// Parses a whole settings document into `fp` (after [`begin`]).
pub fn parse_document(fp: &mut FileParse, bytes: &[u8]) {
    let mut s = Settings::default();
    let mut c = Cursor::new(bytes);
    if pick(&mut c, &mut s).is_none() || !c.at_end() {
        fp.malformed += 1;
        return;
    }
    let [input, output, cache_write, cache_read, thinking] = s.t;
    if s.t.iter().all(|&n| n == 0) {
        return;
    }
    let model = s.model.as_deref().unwrap_or_default();
    fp.push_message(&Message {
        ts: s.ts.unwrap_or(fp.codex.meta_ts),
        model: std::str::from_utf8(model).unwrap_or_default(),
        cwd: "",
        session: "",
        id: b"",
        tokens: Tokens {
            input,
            cache_read,
            cache_write_5m: cache_write,
            cache_write_1h: 0,
            output: output.saturating_add(thinking),
            reasoning: thinking,
        },
    });
}

fn pick<'a>(c: &mut Cursor<'a>, s: &mut Settings<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"model" => s.model = c.text()?,
            b"providerLockTimestamp" => s.ts = c.bytes()?.as_deref().and_then(timestamp_of),
            b"tokenUsage" if c.raw_is_object() => c.object(|key, c| {
                let at = match key {
                    b"inputTokens" => 0,
                    b"outputTokens" => 1,
                    b"cacheCreationTokens" => 2,
                    b"cacheReadTokens" => 3,
                    b"thinkingTokens" => 4,
                    _ => return c.skip(),
                };
                s.t[at] = c.count()?.unwrap_or(0);
                Some(())
            })?,
            _ => c.skip()?,
        }
        Some(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::message_tokens;

    fn parse(doc: &str) -> FileParse {
        let mut fp = FileParse::default();
        let path = Path::new("/h/.factory/sessions/-home-u-proj/5b1d.settings.json");
        begin(&mut fp, path, 1_764_900_000_123_000_000);
        parse_document(&mut fp, doc.as_bytes());
        fp
    }

    #[test]
    fn a_session_s_totals_are_one_call_with_thinking_in_its_output() {
        let fp = parse(
            r#"{"assistantActiveTimeMs":1200,"model":"claude-sonnet-4-5-20250929","reasoningEffort":"medium","autonomyMode":"auto-low","providerLock":"anthropic","providerLockTimestamp":"2026-12-04T10:00:00.000Z","tokenUsage":{"inputTokens":1234,"outputTokens":567,"cacheCreationTokens":89,"cacheReadTokens":12000,"thinkingTokens":34}}"#,
        );
        assert_eq!((fp.events.len(), fp.malformed), (1, 0));
        let e = fp.events[0];
        let t = message_tokens(e.t);
        // By hand: input 1,234; output 567 + 34 thinking = 601 (34 of it
        // reasoning); cache reads 12,000; cache writes 89.
        assert_eq!(
            [
                t.input,
                t.output,
                t.reasoning,
                t.cache_read,
                t.cache_write_5m
            ],
            [1_234, 601, 34, 12_000, 89]
        );
        assert_eq!(fp.string(e.model), "claude-sonnet-4-5-20250929");
        assert_eq!(fp.codex.thread_id, "5b1d");
        assert_eq!(e.ts, 20_791 * 86_400 + 36_000);
    }

    #[test]
    fn without_a_lock_time_the_mtime_dates_it_and_empty_sessions_count_nothing() {
        let fp = parse(
            r#"{"model":"custom:GLM-4.6-[Z.AI]-0","tokenUsage":{"inputTokens":10,"outputTokens":20}}"#,
        );
        assert_eq!(fp.events[0].ts, 1_764_900_000);
        assert_eq!(fp.string(fp.events[0].model), "custom:GLM-4.6-[Z.AI]-0");
        let fp = parse(r#"{"model":"gpt-5","tokenUsage":{"inputTokens":0}}"#);
        assert!(fp.events.is_empty());
        let fp = parse(r#"{"model":"gpt-5"}"#);
        assert!(fp.events.is_empty());
        let fp = parse(r#"{"model":"gpt-5","tokenUsage":{"inputTokens":1"#);
        assert_eq!((fp.events.len(), fp.malformed), (0, 1));
    }
}

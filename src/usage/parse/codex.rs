//! Codex rollouts: where they live, what each line contributes, and the
//! counting rule that turns re-emitted cumulative totals into requests.
//!
//! Codex re-emits `token_count` events with unchanged cumulative totals,
//! replaces its totals when the context window is full, and forked or
//! subagent rollouts replay or reference their parent's history, so
//! neither summing every `last_token_usage` nor differencing the totals is
//! right alone. The parser keeps the facts per line (resumable: the latest
//! model/cwd/tier and the line count live in [`CodexMeta`]); the rule in
//! [`requests`] turns one file's events into counted requests:
//! per-response `token_usage_record`s when the file has them, else each
//! new response's `last_token_usage` (or its totals' increase), after the
//! history inherited from the parent rollout is skipped.

use std::path::{Path, PathBuf};

use std::borrow::Cow;

use crate::usage::event::{CodexMeta, Event, EventKind, FileParse, Tokens, fnv1a};
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::parse::scan::trim;

/// Codex homes (comma-separated `CODEX_HOME`, else `~/.codex`) and, in
/// each, the directories holding rollouts.
pub fn roots(codex_home: Option<&str>, home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for h in homes(codex_home, home) {
        if (h.join("sessions").is_dir() || h.join("archived_sessions").is_dir())
            && !out.contains(&h)
        {
            out.push(h);
        }
    }
    out
}

/// Every Codex home [`roots`] looks at, whether it exists or not (what a
/// person is told was searched).
pub(crate) fn homes(codex_home: Option<&str>, home: &Path) -> Vec<PathBuf> {
    match codex_home.filter(|h| !h.trim().is_empty()) {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .collect(),
        None => vec![home.join(".codex")],
    }
}

/// Whether a file name is a rollout (`rollout-*.jsonl` or `.jsonl.zst`).
pub(crate) fn is_rollout_name(name: &str) -> bool {
    name.starts_with("rollout-") && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst"))
}

/// Whether a line can contribute: its envelope `type` and, for an
/// `event_msg`, its payload's `type` decide. Both are read as members (any
/// order, spacing or escaping), stopping as soon as the answer is known:
/// rollouts put them first, so a megabyte `response_item` costs a few dozen
/// bytes. `None`: the line broke before the answer was known.
///
/// A repeated member name is the one liberty taken: the first `type`
/// decides here, the last one in a full parse (RFC 8259 leaves repeated
/// names to the reader; Codex never writes them).
fn wanted(line: &[u8]) -> Option<bool> {
    let mut answer = None;
    let mut event_msg = false;
    let mut payload: Option<&[u8]> = None;
    let walked = Cursor::new(line).object(|key, c| {
        match key {
            // Compared with ASCII names: read as bytes, since a string
            // that is not UTF-8 equals none of them either way.
            b"type" => {
                answer = match c.bytes()?.as_deref() {
                    Some(b"session_meta" | b"turn_context" | b"token_usage_record") => Some(true),
                    Some(b"event_msg") => match payload {
                        Some(raw) => Some(event_wanted(&mut Cursor::new(raw))?),
                        None => {
                            event_msg = true;
                            None
                        }
                    },
                    _ => Some(false),
                };
            }
            b"payload" if event_msg => answer = Some(event_wanted(c)?),
            b"payload" => payload = Some(c.raw()?),
            _ => c.skip()?,
        }
        // Stopping the walk early is how an answer leaves it.
        if answer.is_some() { None } else { Some(()) }
    });
    answer.or(walked.map(|()| false))
}

/// Whether an `event_msg` payload is one Usage reads (`token_count`,
/// `thread_settings_applied`), from its `type` member. A payload that is
/// not an object is wanted: [`apply`] counts it as malformed.
fn event_wanted(c: &mut Cursor) -> Option<bool> {
    if !c.raw_is_object() {
        return Some(true);
    }
    let mut answer = None;
    let walked = c.object(|key, c| {
        if key != b"type" {
            return c.skip();
        }
        let kind = c.bytes()?;
        answer = Some(matches!(
            kind.as_deref(),
            Some(b"token_count" | b"thread_settings_applied")
        ));
        None
    });
    answer.or(walked.map(|()| false))
}

/// A usage object in Codex order, or `None` when the value is not an object.
fn counters(c: &mut Cursor) -> Option<Option<[u64; 6]>> {
    if !c.raw_is_object() {
        c.skip()?;
        return Some(None);
    }
    let mut out = [0u64; 6];
    c.object(|key, c| {
        let slot = match key {
            b"input_tokens" => 0,
            b"cached_input_tokens" => 1,
            b"cache_write_input_tokens" => 2,
            b"output_tokens" => 3,
            b"reasoning_output_tokens" => 4,
            b"total_tokens" => 5,
            _ => return c.skip(),
        };
        out[slot] = c.count()?.unwrap_or(0);
        Some(())
    })?;
    Some(Some(out))
}

/// Parses one complete line of a rollout into `fp`.
pub fn parse_line(fp: &mut FileParse, line: &[u8]) {
    let line = trim(line);
    if line.is_empty() {
        return;
    }
    let index = fp.codex.lines;
    fp.codex.lines += 1;
    if line[0] != b'{' || line[line.len() - 1] != b'}' {
        fp.malformed += 1;
        return;
    }
    match wanted(line) {
        Some(false) => {}
        Some(true) if apply(fp, line, index).is_some() => {}
        _ => fp.malformed += 1,
    }
}

type Text<'a> = Option<Cow<'a, str>>;

/// A string member only compared with ASCII names or parsed as ASCII (a
/// line's and a payload's `type`, a line's `timestamp`): its bytes,
/// unchecked, since bytes that are not UTF-8 match none of them either way.
type Bytes<'a> = Option<Cow<'a, [u8]>>;

/// Payload members Usage reads, across all line types.
#[derive(Default)]
struct Payload<'a> {
    kind: Bytes<'a>,
    id: Text<'a>,
    timestamp: Text<'a>,
    cwd: Text<'a>,
    model: Text<'a>,
    forked_from: Text<'a>,
    fork_ordinal: Option<u64>,
    base_thread: Text<'a>,
    base_ordinal: Option<u64>,
    spawn_parent: bool,
    service_tier: Text<'a>,
    settings_tier: Text<'a>,
    settings_model: Text<'a>,
    has_info: bool,
    total: Option<[u64; 6]>,
    last: Option<[u64; 6]>,
    rate_limits: Option<&'a [u8]>,
    /// The `limit_id` of `rate_limits`, read in the same walk.
    limit_id: Text<'a>,
    response_id: Text<'a>,
    usage: Option<[u64; 6]>,
}

fn pick_source(c: &mut Cursor, p: &mut Payload) -> Option<()> {
    // source: {"subagent":{"thread_spawn":{"parent_thread_id":…}}} or a string.
    if !c.raw_is_object() {
        return c.skip();
    }
    c.object(|key, c| {
        if key != b"subagent" || !c.raw_is_object() {
            return c.skip();
        }
        c.object(|key, c| {
            if key != b"thread_spawn" || !c.raw_is_object() {
                return c.skip();
            }
            c.object(|key, c| {
                if key == b"parent_thread_id" {
                    p.spawn_parent = c.string()?.is_some_and(|s| !s.is_empty());
                    return Some(());
                }
                c.skip()
            })
        })
    })
}

/// The payload object at `c`, read where it lies in the line into `p`
/// (a fresh one: filled in place, as it is large and read for every
/// wanted line).
fn pick_payload<'a>(c: &mut Cursor<'a>, p: &mut Payload<'a>) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"type" => p.kind = c.bytes()?,
            b"id" => p.id = c.string()?,
            b"timestamp" => p.timestamp = c.string()?,
            b"cwd" => p.cwd = c.string()?,
            b"model" => p.model = c.string()?,
            b"forked_from_id" => p.forked_from = c.string()?,
            b"forked_from_ordinal_exclusive" => p.fork_ordinal = c.count()?,
            b"history_base" if c.raw_is_object() => c.object(|key, c| {
                match key {
                    b"thread_id" => p.base_thread = c.string()?,
                    b"end_ordinal_exclusive" => p.base_ordinal = c.count()?,
                    _ => c.skip()?,
                }
                Some(())
            })?,
            b"source" => pick_source(c, p)?,
            b"service_tier" => p.service_tier = c.string()?,
            b"response_id" => p.response_id = c.string()?,
            b"usage" => p.usage = counters(c)?,
            b"thread_settings" if c.raw_is_object() => c.object(|key, c| {
                match key {
                    b"service_tier" => p.settings_tier = c.string()?,
                    b"model" => p.settings_model = c.string()?,
                    _ => c.skip()?,
                }
                Some(())
            })?,
            b"info" if c.raw_is_object() => {
                p.has_info = true;
                c.object(|key, c| {
                    match key {
                        b"total_token_usage" => p.total = counters(c)?,
                        b"last_token_usage" => p.last = counters(c)?,
                        _ => c.skip()?,
                    }
                    Some(())
                })?
            }
            b"rate_limits" if c.raw_is_object() => {
                let mut id = None;
                p.rate_limits = Some(c.raw_object(|key, c| {
                    if key == b"limit_id" {
                        id = c.string()?;
                        return Some(());
                    }
                    c.skip()
                })?);
                p.limit_id = id;
            }
            _ => c.skip()?,
        }
        Some(())
    })
}

/// The envelope members of one line: what [`record`] reads.
struct Line<'a, 'p> {
    timestamp: Bytes<'a>,
    kind: Bytes<'a>,
    /// The envelope `ordinal` (paginated rollouts), else the line number.
    ordinal: u64,
    payload: Option<&'p Payload<'a>>,
}

fn apply(fp: &mut FileParse, line: &[u8], index: u64) -> Option<()> {
    let (mut timestamp, mut kind): (Bytes, Bytes) = (None, None);
    // The last `payload` member counts: read in the one walk of the line,
    // or, when it is not an object Usage can read, skipped and remembered
    // as unreadable (so an earlier broken one does not decide the line).
    // `picked`: whether a `payload` member was seen, and whether the last
    // one was read.
    let mut payload = Payload::default();
    let mut picked: Option<bool> = None;
    let mut ordinal = None;
    let mut c = Cursor::new(line);
    c.object(|key, c| {
        match key {
            b"timestamp" => timestamp = c.bytes()?,
            b"type" => kind = c.bytes()?,
            b"ordinal" => ordinal = c.count()?,
            b"payload" => {
                if picked.is_some() {
                    payload = Payload::default();
                }
                let mut probe = *c;
                picked = Some(match pick_payload(&mut probe, &mut payload) {
                    Some(()) => {
                        *c = probe;
                        true
                    }
                    None => {
                        c.skip()?;
                        false
                    }
                });
            }
            _ => c.skip()?,
        }
        Some(())
    })?;
    if !c.at_end() {
        return None;
    }
    let payload = match picked {
        Some(true) => Some(&payload),
        Some(false) => return None,
        None => None,
    };
    record(
        fp,
        Line {
            timestamp,
            kind,
            ordinal: ordinal.unwrap_or(index),
            payload,
        },
    )
}

/// What one picked line contributes to `fp`.
fn record(fp: &mut FileParse, line: Line<'_, '_>) -> Option<()> {
    let ts = line
        .timestamp
        .as_deref()
        .and_then(crate::usage::time::timestamp_of);
    let Some(p) = line.payload else {
        return Some(());
    };
    match line.kind.as_deref() {
        Some(b"session_meta") => session_meta(fp, p, ts),
        Some(b"turn_context") => {
            if let Some(model) = nonempty(&p.model) {
                fp.codex.model = fp.intern(&model);
            }
            if let Some(cwd) = nonempty(&p.cwd) {
                fp.codex.cwd = fp.intern(&cwd);
            }
        }
        Some(b"event_msg") => match p.kind.as_deref() {
            Some(b"thread_settings_applied") => {
                if let Some(tier) = nonempty(&p.settings_tier).or_else(|| nonempty(&p.service_tier))
                {
                    fp.codex.tier = fp.intern(&tier);
                }
                if let Some(model) = nonempty(&p.settings_model)
                    && fp.codex.model == 0
                {
                    fp.codex.model = fp.intern(&model);
                }
            }
            Some(b"token_count") => {
                if let Some(ts) = ts {
                    token_count(fp, p, ts, line.ordinal);
                }
            }
            _ => {}
        },
        Some(b"token_usage_record") => {
            let (Some(ts), Some(usage)) = (ts, p.usage) else {
                return Some(());
            };
            let key = nonempty(&p.response_id)
                .map(|id| fnv1a(&[b"codex-response", id.as_bytes()]))
                .unwrap_or(0);
            fp.events.push(Event {
                kind: EventKind::CodexRecord,
                ts,
                model: fp.codex.model,
                cwd: fp.codex.cwd,
                tier: fp.codex.tier,
                session: 0,
                flags: 0,
                key,
                group: line.ordinal,
                t: usage,
                last_at: 0,
            });
        }
        _ => {}
    }
    Some(())
}

/// The non-empty text of a member, owned.
fn nonempty(t: &Text) -> Option<String> {
    t.as_deref().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// What a `session_meta` line sets: the first one is the rollout's own
/// (later ones are a parent's, replayed).
fn session_meta(fp: &mut FileParse, p: &Payload, ts: Option<i64>) {
    if !fp.codex.thread_id.is_empty() {
        return;
    }
    fp.codex.thread_id = nonempty(&p.id).unwrap_or_default();
    fp.codex.meta_ts = p
        .timestamp
        .as_deref()
        .and_then(crate::usage::time::parse_timestamp)
        .or(ts)
        .unwrap_or(0);
    fp.codex.subagent = p.spawn_parent;
    fp.codex.forked_from = nonempty(&p.forked_from).unwrap_or_default();
    fp.codex.history_base = nonempty(&p.base_thread).unwrap_or_default();
    fp.codex.fork_ordinal = p.base_ordinal.or(p.fork_ordinal).unwrap_or(0);
    if let Some(cwd) = nonempty(&p.cwd)
        && fp.codex.cwd == 0
    {
        fp.codex.cwd = fp.intern(&cwd);
    }
}

/// What a `token_count` event stamped `ts` adds: the newest rate limits of
/// the default group, and its totals or last usage as an event.
fn token_count(fp: &mut FileParse, p: &Payload, ts: i64, ordinal: u64) {
    if let Some(raw) = p.rate_limits {
        let id = p.limit_id.as_deref();
        if (id.is_none() || id == Some("codex")) && ts >= fp.codex.rate_limits_ts {
            // Every token_count line has one: the text is copied into the
            // string's own buffer.
            match std::str::from_utf8(raw) {
                Ok(text) => {
                    fp.codex.rate_limits.clear();
                    fp.codex.rate_limits.push_str(text);
                }
                Err(_) => {
                    fp.codex.rate_limits = String::from_utf8_lossy(raw).into_owned();
                }
            }
            fp.codex.rate_limits_ts = ts;
        }
    }
    if !p.has_info {
        return;
    }
    let (kind, t, last) = match (p.total, p.last) {
        (Some(t), l) => (EventKind::CodexTotals, t, l.unwrap_or([0; 6])),
        (None, Some(l)) => (EventKind::CodexLast, [0; 6], l),
        (None, None) => return,
    };
    let last_at = fp.add_last(last);
    fp.events.push(Event {
        kind,
        ts,
        model: fp.codex.model,
        cwd: fp.codex.cwd,
        tier: fp.codex.tier,
        session: 0,
        flags: 0,
        key: 0,
        group: ordinal,
        t,
        last_at,
    });
}

/// One counted Codex request (a delta or a record), before pricing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub ts: i64,
    pub model: u32,
    pub cwd: u32,
    pub tier: u32,
    pub tokens: Tokens,
    /// Global dedupe key: `response_id`, else (ts, model, counters).
    pub key: u64,
}

/// Codex counters (inclusive semantics) to disjoint Claude-style buckets.
pub(crate) fn normalise(c: [u64; 6]) -> Tokens {
    let [input, cached, write, output, reasoning, _] = c;
    let cached = cached.min(input);
    let write = write.min(input - cached);
    Tokens {
        input: input - cached - write,
        cache_read: cached,
        cache_write_5m: write,
        cache_write_1h: 0,
        output,
        reasoning: reasoning.min(output),
    }
}

/// What a rollout inherits from the one it continues: the parent's
/// cumulative totals where the inherited history ends, and every total up
/// to there (what a copied history replays), sorted.
struct Inherited {
    last: Option<[u64; 6]>,
    totals: Vec<[u64; 6]>,
}

/// The part of `parent` that `child` inherits: its records before the
/// child's `history_base` ordinal, or, for a fork that names none, those
/// stamped at or before the fork's creation.
fn inherited(parent: &FileParse, child: &CodexMeta) -> Inherited {
    let within = |e: &Event| match child.fork_ordinal {
        0 => e.ts <= child.meta_ts,
        end => e.group < end,
    };
    let mut last = None;
    let mut totals = Vec::new();
    for e in &parent.events {
        if e.kind == EventKind::CodexTotals && within(e) {
            last = Some(e.t);
            totals.push(e.t);
        }
    }
    totals.sort_unstable();
    totals.dedup();
    Inherited { last, totals }
}

/// Outcome of [`requests`] for one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counted {
    pub requests: Vec<Request>,
    /// Events that contributed nothing (re-emitted totals, replays).
    pub duplicates: u64,
}

/// Applies the counting rule to one file. `parent` is the rollout it
/// continues (`CodexMeta::parent`), when that is on hand.
///
/// A rollout that continues another (a fork, a revert, a subagent) first
/// skips its start-of-file replay: events whose totals the parent had
/// before the fork point, or, without the parent, events stamped before
/// the file was created and a burst of events in its first second. Then
/// each `token_count` whose totals equal the previous event's is a re-emit
/// and counts 0; any other counts its `last_token_usage`, or, without one,
/// the component-wise increase of the totals over the previous event's (a
/// drop, as when a full context window replaces the totals, is a reset,
/// and the next event counts from there). Without the parent a totals-only
/// continuation cannot tell inherited from new: its first event only sets
/// the baseline, so an inherited history is never billed as new usage.
pub fn requests(fp: &FileParse, parent: Option<&FileParse>) -> Counted {
    let mut out = Counted::default();
    if fp.events.iter().any(|e| e.kind == EventKind::CodexRecord) {
        for e in &fp.events {
            match e.kind {
                EventKind::CodexRecord => push(&mut out, fp, e, e.t, e.key),
                _ => out.duplicates += 1,
            }
        }
        return out;
    }
    let meta = &fp.codex;
    let continued = !meta.parent().is_empty() || meta.subagent;
    let inherited = parent.map(|p| inherited(p, meta));
    // The previous event's totals (`None`: unknown).
    let mut previous = inherited.as_ref().and_then(|i| i.last);
    let burst = match (&inherited, continued) {
        (None, true) => replay_burst(fp),
        _ => None,
    };
    let mut replaying = continued;
    for e in &fp.events {
        if replaying {
            let replayed = e.ts < meta.meta_ts
                || match &inherited {
                    Some(i) => {
                        e.kind == EventKind::CodexTotals && i.totals.binary_search(&e.t).is_ok()
                    }
                    None => Some(e.ts) == burst,
                };
            if replayed {
                if e.kind == EventKind::CodexTotals {
                    previous = Some(e.t);
                }
                out.duplicates += 1;
                continue;
            }
            replaying = false;
        }
        match e.kind {
            EventKind::CodexTotals => {
                let before = previous.replace(e.t);
                if before == Some(e.t) {
                    out.duplicates += 1;
                    continue;
                }
                let last = fp.last(e);
                let counted = match before {
                    _ if last != [0; 6] => last,
                    Some(p) => std::array::from_fn(|i| e.t[i].saturating_sub(p[i])),
                    None if continued => {
                        out.duplicates += 1;
                        continue;
                    }
                    None => e.t,
                };
                push(&mut out, fp, e, counted, 0);
            }
            EventKind::CodexLast => push(&mut out, fp, e, fp.last(e), 0),
            _ => out.duplicates += 1,
        }
    }
    out
}

/// Counts `c`, event `e`'s usage, as a request keyed `key` (0: keyed by
/// its time, model and counters), or as a duplicate when it has no tokens.
fn push(out: &mut Counted, fp: &FileParse, e: &Event, c: [u64; 6], key: u64) {
    let tokens = normalise(c);
    if tokens.total() == 0 {
        out.duplicates += 1;
        return;
    }
    let key = if key != 0 {
        key
    } else {
        let mut bytes = Vec::with_capacity(64);
        bytes.extend(e.ts.to_le_bytes());
        for n in c {
            bytes.extend(n.to_le_bytes());
        }
        fnv1a(&[b"codex-delta", fp.string(e.model).as_bytes(), &bytes])
    };
    out.requests.push(Request {
        ts: e.ts,
        model: e.model,
        cwd: e.cwd,
        tier: e.tier,
        tokens,
        key,
    });
}

/// The second of a continuation's replay burst when its parent is not on
/// hand: the first totals events sharing one second, when there are at
/// least two.
fn replay_burst(fp: &FileParse) -> Option<i64> {
    let mut totals = fp
        .events
        .iter()
        .filter(|e| e.kind == EventKind::CodexTotals);
    match (totals.next(), totals.next()) {
        (Some(a), Some(b)) if a.ts == b.ts => Some(a.ts),
        _ => None,
    }
}

/// The same line read by the crate's exact JSON parser instead of the
/// prefilter and the member picker: the oracle of the differential test
/// (`usage::parse::differential`). Only the reading differs; what a line
/// contributes is [`record`]'s either way.
#[cfg(test)]
pub(super) fn parse_line_exact(fp: &mut FileParse, line: &[u8]) {
    use crate::base::json::{self, Number, Object, Value};
    let line = trim(line);
    if line.is_empty() {
        return;
    }
    let index = fp.codex.lines;
    fp.codex.lines += 1;
    let value = std::str::from_utf8(line)
        .ok()
        .and_then(|t| json::parse(t).ok());
    let Some(Value::Object(top)) = value else {
        fp.malformed += 1;
        return;
    };
    fn text(v: Option<&Value>) -> Text<'_> {
        v.and_then(Value::as_str).map(Cow::Borrowed)
    }
    fn bytes(v: Option<&Value>) -> Bytes<'_> {
        v.and_then(Value::as_str)
            .map(|s| Cow::Borrowed(s.as_bytes()))
    }
    fn object(v: Option<&Value>) -> Option<&Object> {
        v.and_then(Value::as_object)
    }
    fn number(v: Option<&Value>) -> Option<u64> {
        match v {
            Some(Value::Number(Number::Unsigned(n))) => Some(*n),
            // `-0`: an integer, and not below 0, to JavaScript.
            Some(Value::Number(Number::Signed(0))) => Some(0),
            Some(Value::Number(Number::Float(f)))
                if f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e18 =>
            {
                Some(*f as u64)
            }
            _ => None,
        }
    }
    fn count(v: Option<&Value>) -> u64 {
        number(v).unwrap_or(0)
    }
    fn counters(v: Option<&Value>) -> Option<[u64; 6]> {
        object(v).map(|o| {
            [
                "input_tokens",
                "cached_input_tokens",
                "cache_write_input_tokens",
                "output_tokens",
                "reasoning_output_tokens",
                "total_tokens",
            ]
            .map(|k| count(o.get(k)))
        })
    }
    let kind = bytes(top.get("type"));
    let wanted = matches!(
        kind.as_deref(),
        Some(b"session_meta" | b"turn_context" | b"token_usage_record" | b"event_msg")
    );
    let (payload, rate_limits, limit_id) = match top.get("payload") {
        None => (None, None, None),
        Some(Value::Object(p)) => {
            let limits = object(p.get("rate_limits"));
            (
                Some(p),
                limits.map(|r| Value::Object(r.clone()).to_json()),
                limits.and_then(|r| text(r.get("limit_id"))),
            )
        }
        Some(_) => {
            if wanted {
                fp.malformed += 1;
            }
            return;
        }
    };
    let payload = payload.map(|p| {
        let settings = object(p.get("thread_settings"));
        let info = object(p.get("info"));
        let base = object(p.get("history_base"));
        let spawn = object(p.get("source"))
            .and_then(|s| object(s.get("subagent")))
            .and_then(|s| object(s.get("thread_spawn")));
        Payload {
            kind: bytes(p.get("type")),
            id: text(p.get("id")),
            timestamp: text(p.get("timestamp")),
            cwd: text(p.get("cwd")),
            model: text(p.get("model")),
            forked_from: text(p.get("forked_from_id")),
            fork_ordinal: number(p.get("forked_from_ordinal_exclusive")),
            base_thread: base.and_then(|b| text(b.get("thread_id"))),
            base_ordinal: base.and_then(|b| number(b.get("end_ordinal_exclusive"))),
            spawn_parent: spawn
                .and_then(|s| s.get("parent_thread_id"))
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty()),
            service_tier: text(p.get("service_tier")),
            settings_tier: settings.and_then(|s| text(s.get("service_tier"))),
            settings_model: settings.and_then(|s| text(s.get("model"))),
            has_info: info.is_some(),
            total: info.and_then(|i| counters(i.get("total_token_usage"))),
            last: info.and_then(|i| counters(i.get("last_token_usage"))),
            rate_limits: rate_limits.as_deref().map(str::as_bytes),
            limit_id,
            response_id: text(p.get("response_id")),
            usage: counters(p.get("usage")),
        }
    });
    let line = Line {
        timestamp: bytes(top.get("timestamp")),
        kind,
        ordinal: number(top.get("ordinal")).unwrap_or(index),
        payload: payload.as_ref(),
    };
    if record(fp, line).is_none() {
        fp.malformed += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tc(ts: &str, total: [u64; 3], last: [u64; 3]) -> String {
        format!(
            r#"{{"timestamp":"{ts}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":0,"total_tokens":{}}},"last_token_usage":{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":0,"total_tokens":{}}}}},"rate_limits":null}}}}"#,
            total[0],
            total[1],
            total[2],
            total[0] + total[2],
            last[0],
            last[1],
            last[2],
            last[0] + last[2]
        )
    }

    fn parse(lines: &[String]) -> FileParse {
        let mut fp = FileParse::default();
        for l in lines {
            parse_line(&mut fp, l.as_bytes());
        }
        fp
    }

    const META: &str = r#"{"timestamp":"2026-11-29T09:00:00Z","type":"session_meta","payload":{"id":"t1","cwd":"/meta","timestamp":"2026-11-29T09:00:00Z"}}"#;
    const CTX: &str = r#"{"timestamp":"2026-11-29T09:00:01Z","type":"turn_context","payload":{"model":"gpt-5.5","cwd":"/work"}}"#;

    #[test]
    fn re_emitted_totals_count_once() {
        let fp = parse(&[
            META.into(),
            CTX.into(),
            tc("2026-11-29T10:00:00Z", [100, 40, 10], [100, 40, 10]),
            tc("2026-11-29T10:00:01Z", [100, 40, 10], [100, 40, 10]),
            tc("2026-11-29T10:01:00Z", [250, 140, 30], [150, 100, 20]),
        ]);
        let counted = requests(&fp, None);
        assert_eq!(counted.requests.len(), 2);
        assert_eq!(counted.duplicates, 1);
        let sum = counted.requests.iter().fold(Tokens::default(), |mut a, r| {
            a.add(&r.tokens);
            a
        });
        assert_eq!(sum.input + sum.cache_read, 250);
        assert_eq!(sum.cache_read, 140);
        assert_eq!(sum.output, 30);
        assert_eq!(fp.string(counted.requests[0].model), "gpt-5.5");
        assert_eq!(fp.string(counted.requests[0].cwd), "/work");
        assert_eq!(fp.codex.thread_id, "t1");
    }

    fn total(counted: &Counted) -> u64 {
        counted.requests.iter().map(|r| r.tokens.total()).sum()
    }

    fn without_last(fp: &FileParse) -> FileParse {
        let mut bare = fp.clone();
        for e in &mut bare.events {
            e.last_at = 0;
        }
        bare.lasts.clear();
        bare
    }

    fn fork_meta(id: &str, at: &str, extra: &str) -> String {
        format!(
            r#"{{"timestamp":"{at}","type":"session_meta","payload":{{"id":"{id}","timestamp":"{at}","cwd":"/c"{extra}}}}}"#
        )
    }

    /// A parent with two turns: 100+10 on line 2, then 200+20 on line 3.
    fn two_turn_parent() -> FileParse {
        parse(&[
            META.into(),
            CTX.into(),
            tc("2026-11-29T10:00:00Z", [100, 0, 10], [100, 0, 10]),
            tc("2026-11-29T10:05:00Z", [300, 0, 30], [200, 0, 20]),
        ])
    }

    #[test]
    fn a_copied_fork_skips_what_its_parent_had() {
        let parent = two_turn_parent();
        let fp = parse(&[
            fork_meta("child", "2026-11-29T11:00:00Z", r#","forked_from_id":"t1""#),
            tc("2026-11-29T11:00:00Z", [100, 0, 10], [100, 0, 10]),
            tc("2026-11-29T11:00:00Z", [300, 0, 30], [200, 0, 20]),
            tc("2026-11-29T11:05:00Z", [350, 10, 35], [50, 10, 5]),
        ]);
        assert_eq!(fp.codex.forked_from, "t1");
        assert_eq!(fp.codex.parent(), "t1");
        let counted = requests(&fp, Some(&parent));
        assert_eq!(counted.requests.len(), 1);
        assert_eq!(counted.requests[0].tokens.input, 40);
        assert_eq!(counted.requests[0].tokens.cache_read, 10);
        assert_eq!(counted.requests[0].tokens.output, 5);
        assert_eq!(counted.duplicates, 2);
    }

    #[test]
    fn a_fork_from_an_earlier_turn_continues_from_that_turn() {
        // Forked before line 3 (after the first turn), after the second: the
        // fork's totals continue from 100+10, not from 300+30.
        let parent = two_turn_parent();
        assert_eq!(parent.events[1].group, 3);
        let fp = parse(&[
            fork_meta(
                "child",
                "2026-11-29T11:00:00Z",
                r#","forked_from_id":"t1","forked_from_ordinal_exclusive":3,"history_base":{"thread_id":"t1","end_ordinal_exclusive":3,"end_byte_offset":400}"#,
            ),
            tc("2026-11-29T11:05:00Z", [250, 0, 25], [150, 0, 15]),
            tc("2026-11-29T11:06:00Z", [250, 0, 25], [150, 0, 15]),
        ]);
        assert_eq!(fp.codex.fork_ordinal, 3);
        assert_eq!(fp.codex.history_base, "t1");
        assert_eq!(total(&requests(&fp, Some(&parent))), 165);
        // Totals only: the increase over the parent's totals at the fork point.
        assert_eq!(total(&requests(&without_last(&fp), Some(&parent))), 165);
    }

    #[test]
    fn envelope_ordinals_win_over_line_numbers() {
        let fp = parse(&[
            tc("2026-11-29T10:00:00Z", [100, 0, 10], [100, 0, 10]).replacen(
                '{',
                r#"{"ordinal":41,"#,
                1,
            ),
            tc("2026-11-29T10:01:00Z", [200, 0, 20], [100, 0, 10]),
        ]);
        assert_eq!(fp.events[0].group, 41);
        assert_eq!(fp.events[1].group, 1);
        assert_eq!(fp.codex.lines, 2);
    }

    #[test]
    fn a_fork_whose_parent_is_missing_counts_only_its_own_responses() {
        // The inherited 5 M tokens are never billed: only `last` is.
        let fp = parse(&[
            fork_meta(
                "child",
                "2026-11-29T11:00:00Z",
                r#","forked_from_id":"old","history_base":{"thread_id":"old","end_ordinal_exclusive":90,"end_byte_offset":9000}"#,
            ),
            CTX.into(),
            tc(
                "2026-11-29T11:05:00Z",
                [5_000_100, 4_000_000, 200_050],
                [100, 0, 50],
            ),
        ]);
        assert_eq!(total(&requests(&fp, None)), 150);
        // Totals only, parent unknown: the first event only sets the baseline.
        assert_eq!(total(&requests(&without_last(&fp), None)), 0);
    }

    #[test]
    fn records_win_over_totals() {
        let fp = parse(&[
            CTX.into(),
            tc("2026-11-29T10:00:00Z", [100, 0, 10], [100, 0, 10]),
            r#"{"timestamp":"2026-11-29T10:00:00Z","type":"token_usage_record","payload":{"response_id":"resp_1","usage":{"input_tokens":100,"cached_input_tokens":20,"output_tokens":10,"reasoning_output_tokens":4,"total_tokens":110}}}"#.into(),
            r#"{"timestamp":"2026-11-29T10:00:00Z","type":"compacted","payload":{"latest_token_usage_record":{"response_id":"resp_0","usage":{"input_tokens":999}}}}"#.into(),
        ]);
        let counted = requests(&fp, None);
        assert_eq!(counted.requests.len(), 1);
        assert_eq!(counted.requests[0].tokens.reasoning, 4);
        assert_eq!(counted.requests[0].tokens.input, 80);
        assert_eq!(
            counted.requests[0].key,
            fnv1a(&[b"codex-response", b"resp_1"])
        );
    }

    #[test]
    fn a_full_context_window_resets_the_totals_and_later_responses_count() {
        // Upstream: the totals become {total_tokens: window}, `last` the
        // rest of the window; later responses append to the replaced totals.
        let full = r#"{"timestamp":"2026-11-29T10:00:05Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0,"total_tokens":258400},"last_token_usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0,"total_tokens":257300}}}}"#;
        let after = |at: &str, total: [u64; 3], last: [u64; 3]| {
            tc(at, total, last).replacen(
                &format!(r#""total_tokens":{}}},"last"#, total[0] + total[2]),
                &format!(
                    r#""total_tokens":{}}},"last"#,
                    258_400 + total[0] + total[2]
                ),
                1,
            )
        };
        let fp = parse(&[
            CTX.into(),
            tc("2026-11-29T10:00:00Z", [1000, 0, 100], [1000, 0, 100]),
            full.into(),
            after("2026-11-29T10:00:09Z", [200, 0, 20], [200, 0, 20]),
            after("2026-11-29T10:00:12Z", [300, 0, 30], [100, 0, 10]),
        ]);
        assert_eq!(total(&requests(&fp, None)), 1100 + 220 + 110);
        assert_eq!(total(&requests(&without_last(&fp), None)), 1100 + 220 + 110);
        // A fork of Codex that leaves the totals and fills only `last`.
        let untouched = full.replace(
            r#""total_token_usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0,"total_tokens":258400}"#,
            r#""total_token_usage":{"input_tokens":1000,"cached_input_tokens":0,"output_tokens":100,"reasoning_output_tokens":0,"total_tokens":1100}"#,
        );
        let fp = parse(&[
            CTX.into(),
            tc("2026-11-29T10:00:00Z", [1000, 0, 100], [1000, 0, 100]),
            untouched,
            tc("2026-11-29T10:00:09Z", [1200, 0, 120], [200, 0, 20]),
        ]);
        assert_eq!(total(&requests(&fp, None)), 1100 + 220);
    }

    #[test]
    fn unresolved_subagent_skips_the_replay_burst() {
        let fp = parse(&[
            r#"{"timestamp":"2026-11-29T10:00:00Z","type":"session_meta","payload":{"id":"sub","source":{"subagent":{"thread_spawn":{"parent_thread_id":"t1"}}}}}"#.into(),
            CTX.into(),
            tc("2026-11-29T10:00:00Z", [100, 0, 10], [100, 0, 10]),
            tc("2026-11-29T10:00:00Z", [250, 0, 30], [150, 0, 20]),
            tc("2026-11-29T10:02:00Z", [300, 0, 35], [50, 0, 5]),
        ]);
        assert!(fp.codex.subagent);
        let counted = requests(&fp, None);
        assert_eq!(counted.requests.len(), 1);
        assert_eq!(counted.requests[0].tokens.total(), 55);
    }

    #[test]
    fn spaced_reordered_and_escaped_lines_count_like_compact_ones() {
        let compact = tc("2026-11-29T10:00:00Z", [100, 40, 10], [100, 40, 10]);
        let spaced = compact.replace("\":", "\": ").replace(",\"", ", \"");
        let payload_first = format!(
            r#"{{"payload":{},"type":"event_msg","timestamp":"2026-11-29T10:00:00Z"}}"#,
            &compact[compact.find(r#"{"type":"token_count""#).unwrap()..compact.len() - 1]
        );
        let escaped = compact
            .replace(r#""type":"event_msg""#, r#""t\u0079pe":"event\u005fmsg""#)
            .replace(r#""type":"token_count""#, r#""type":"token\u005fcount""#);
        let want = parse(&[compact]);
        assert_eq!(want.events.len(), 1);
        for line in [spaced, payload_first, escaped] {
            let got = parse(std::slice::from_ref(&line));
            assert_eq!(got, want, "{line}");
        }
    }

    #[test]
    fn the_last_payload_member_decides() {
        let line = tc("2026-11-29T10:00:00Z", [100, 40, 10], [100, 40, 10]);
        let want = parse(std::slice::from_ref(&line));
        assert_eq!(want.events.len(), 1);
        // An earlier payload that is no object, or an object that is not
        // one Usage can read (a lone surrogate, which `JSON.parse` reads
        // and a Rust string cannot hold), is replaced by the last one.
        for first in [
            r#""text""#,
            "[1,2]",
            r#"{"type":"token_count","cwd":"\ud800"}"#,
        ] {
            let twice = line.replacen(
                r#""payload":"#,
                &format!(r#""payload":{first},"payload":"#),
                1,
            );
            assert_eq!(parse(std::slice::from_ref(&twice)), want, "{twice}");
        }
        // One that `JSON.parse` refuses refuses the line.
        let broken = line.replacen(
            r#""payload":"#,
            r#""payload":{"type":"token_count","info":{"x" 1}},"payload":"#,
            1,
        );
        let got = parse(&[broken]);
        assert_eq!((got.events.len(), got.malformed), (0, 1));
        // The last one not an object: a payload Usage cannot read.
        let last = format!(r#"{},"payload":7}}"#, &line[..line.len() - 1]);
        let got = parse(&[last]);
        assert_eq!((got.events.len(), got.malformed), (0, 1));
    }

    #[test]
    fn a_line_broken_before_its_type_is_malformed() {
        let fp = parse(&[
            r#"{"timestamp":"2026-11-29T10:00:03Z", broken, "type":"event_msg"}"#.into(),
            r#"{"timestamp":"2026-11-29T10:00:03Z","type":"response_item", broken}"#.into(),
        ]);
        assert_eq!(fp.malformed, 1);
    }

    #[test]
    fn tier_rate_limits_and_malformed() {
        let fp = parse(&[
            r#"{"timestamp":"2026-11-29T10:00:00Z","type":"event_msg","payload":{"type":"thread_settings_applied","thread_settings":{"service_tier":"priority","model":"gpt-5.4"}}}"#.into(),
            r#"{"timestamp":"2026-11-29T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"limit_id":"codex","primary":{"used_percent":12.0,"window_minutes":300,"resets_at":1764470000}}}}"#.into(),
            r#"{"timestamp":"2026-11-29T10:00:03Z","type":"event_msg","payload":{"type":"token_count", broken"#.into(),
            r#"{"timestamp":"2026-11-29T10:00:03Z","type":"response_item","payload":{}}"#.into(),
        ]);
        assert_eq!(fp.string(fp.codex.tier), "priority");
        assert_eq!(fp.string(fp.codex.model), "gpt-5.4");
        assert!(fp.codex.rate_limits.contains("\"used_percent\":12"));
        assert_eq!(fp.malformed, 1);
    }

    #[test]
    fn the_newest_limits_of_the_default_group_are_kept() {
        let limits = |at: &str, id: &str, used: u32| {
            format!(
                r#"{{"timestamp":"2026-11-29T10:00:{at}Z","type":"event_msg","payload":{{"type":"token_count","info":null,"rate_limits":{{{id}"primary":{{"used_percent":{used}.0}}}}}}}}"#
            )
        };
        let kept = |lines: &[String]| {
            let fp = parse(lines);
            assert_eq!(fp.malformed, 0);
            fp.codex.rate_limits
        };
        let codex = limits("02", r#""limit_id":"codex","#, 12);
        // Another group's limits are not the default's.
        let other = limits("04", r#""limit_id":"other","#, 50);
        assert!(kept(&[codex.clone(), other.clone()]).contains(":12.0"));
        // Limits that name no group are the default's; so is an id spelled
        // with escapes, read after the member before it.
        let unnamed = limits("05", "", 70);
        assert!(kept(&[codex.clone(), other.clone(), unnamed.clone()]).contains(":70.0"));
        let escaped = limits("06", r#""x":[1,{"y":"}"}],"limit_id":"\u0063odex","#, 80);
        assert!(kept(&[codex.clone(), unnamed.clone(), escaped.clone()]).contains(":80.0"));
        // An older line does not replace newer limits.
        assert!(kept(&[escaped, codex]).contains(":80.0"));
    }
}

//! The unit of Token Usage: what one transcript line contributes, as the
//! parsers emit it and the per-file cache stores it.
//!
//! Both agents' parsers produce [`Event`]s into a [`FileParse`] (strings
//! interned per file so a cached file is compact); aggregation later turns
//! events into priced requests. Keeping events (not costs) in the cache is
//! what lets a new price table re-aggregate without rereading transcripts.

/// Which agent wrote a transcript (`usage::agents` is its registry: its
/// names, codes and sources).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Agent {
    Claude,
    Codex,
    Pi,
    Opencode,
    Gemini,
    Qwen,
    Amp,
    Droid,
    Kimi,
    Copilot,
    Kilo,
    Cline,
    Devin,
    Hermes,
}

/// What kind of line an [`Event`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A Claude assistant record; `t` = [input, cache_read, cache_write_5m,
    /// cache_write_1h, output, web_search_requests]: the last is
    /// `usage.server_tool_use.web_search_requests`, a count of searches
    /// priced per search and never added to the token totals.
    Claude,
    /// A Codex `token_count` with cumulative totals; `t` = total and its
    /// last counters ([`FileParse::last`]) = last usage (all zero when
    /// absent), both in Codex order [input,
    /// cached_input, cache_write_input, output, reasoning_output, total].
    CodexTotals,
    /// A Codex `token_count` with only `last_token_usage`; its last
    /// counters hold it.
    CodexLast,
    /// A Codex `token_usage_record`; `t` = usage in Codex order, `key` =
    /// hash of `response_id`.
    CodexRecord,
    /// A pi assistant message; `t` as [`EventKind::Claude`]'s (no 1-hour
    /// writes or web searches).
    Pi,
    /// One model call of an agent on the shared contract, made only by
    /// [`FileParse::push_message`]: `t` = [input, cache_read, cache_write,
    /// 0, output, reasoning] in [`Tokens`]' semantics, `key` the hash of the
    /// agent's id of the call (0 = none), `session` its session id (0 = the
    /// file's, `CodexMeta::thread_id`).
    Message,
}

impl EventKind {
    pub fn code(self) -> u8 {
        match self {
            EventKind::Claude => 0,
            EventKind::CodexTotals => 1,
            EventKind::CodexLast => 2,
            EventKind::CodexRecord => 3,
            EventKind::Pi => 4,
            EventKind::Message => 5,
        }
    }
    pub(crate) fn from_code(code: u8) -> Option<EventKind> {
        Some(match code {
            0 => EventKind::Claude,
            1 => EventKind::CodexTotals,
            2 => EventKind::CodexLast,
            3 => EventKind::CodexRecord,
            4 => EventKind::Pi,
            5 => EventKind::Message,
            _ => return None,
        })
    }
}

/// Flag bits of an [`Event`].
pub mod flags {
    pub(crate) const SIDECHAIN: u8 = 1;
    pub(crate) const FAST: u8 = 2;
    pub(crate) const GEO_US: u8 = 4;
    pub(crate) const HAS_SPEED: u8 = 8;
}

/// One usage-bearing line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    /// UTC Unix seconds.
    pub ts: i64,
    /// Indices into [`FileParse::strings`]; 0 is "none".
    pub model: u32,
    pub cwd: u32,
    pub tier: u32,
    /// Claude: the record's `sessionId` (an index like the three above).
    /// Codex: 0, its session being its file's (`CodexMeta::thread_id`).
    pub session: u32,
    pub flags: u8,
    /// Dedupe key hash (0 = none). Claude: (`message.id`, `requestId`).
    pub key: u64,
    /// Claude: hash of `message.id` alone (sidechain replay rule). Codex:
    /// the line's ordinal (its envelope `ordinal`, else its 0-based line
    /// number), where a fork's `history_base` cuts its parent.
    pub group: u64,
    pub t: [u64; 6],
    /// Where its second set of counters is: 0 when they are all zero (every
    /// Claude record), else one past their index in [`FileParse::lasts`]
    /// ([`FileParse::last`] reads them). Kept beside the events, not in
    /// each: a cold scan holds every event in memory, and two thirds of
    /// them (Claude's) would carry 48 zero bytes.
    pub(crate) last_at: u32,
}

/// Appends `last` to `lasts` and returns where an event finds it (see
/// [`Event::last_at`]): 0 for all zero, the previous set's place when they
/// are the same (Codex writes each `token_count` twice), else the new one.
/// The one rule for the parsers and for the cache's decoding, so a file's
/// decoded events and its parse agree.
pub(crate) fn add_last(lasts: &mut Vec<[u64; 6]>, last: [u64; 6]) -> u32 {
    if last == [0; 6] {
        return 0;
    }
    if lasts.last() != Some(&last) {
        lasts.push(last);
    }
    u32::try_from(lasts.len()).unwrap_or(u32::MAX)
}

/// The counters `last_at` points at in `lasts` (all zero for 0 or a place
/// past the end).
pub(crate) fn last_in(lasts: &[[u64; 6]], last_at: u32) -> [u64; 6] {
    match (last_at as usize).checked_sub(1) {
        Some(i) => lasts.get(i).copied().unwrap_or([0; 6]),
        None => [0; 6],
    }
}

/// Codex per-file facts and resumable parser state. A pi session file
/// keeps its header here too (`thread_id` its `id`, `forked_from` its
/// `parentSession`, `meta_ts` its time, `cwd` its directory, `lines` the
/// lines read), so an append is read without the header (`parse::pi`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodexMeta {
    /// `session_meta.payload.id` of the first `session_meta`.
    pub thread_id: String,
    /// `forked_from_id` (or `parent_thread_id` of a fork).
    pub(crate) forked_from: String,
    /// `history_base.thread_id`: the rollout whose first records this one
    /// continues (a fork's parent, or the same thread for a revert).
    pub history_base: String,
    /// Where the inherited history ends: `history_base.end_ordinal_exclusive`,
    /// else `forked_from_ordinal_exclusive`; 0 when neither is given.
    pub(crate) fork_ordinal: u64,
    /// Non-empty lines read so far (the ordinal of a line without one).
    pub lines: u64,
    /// Whether the file is a spawned subagent's rollout.
    pub subagent: bool,
    /// Timestamp of the first `session_meta` (the fork point).
    pub(crate) meta_ts: i64,
    /// Latest model, cwd and service tier seen (string indices).
    pub model: u32,
    pub cwd: u32,
    pub tier: u32,
    /// Newest `rate_limits` of the default group, as compact JSON, and when.
    pub rate_limits: String,
    pub(crate) rate_limits_ts: i64,
}

impl CodexMeta {
    /// The thread whose rollout this one continues (`history_base`, else
    /// `forked_from_id`); empty for a rollout that starts from nothing.
    pub fn parent(&self) -> &str {
        if self.history_base.is_empty() {
            &self.forked_from
        } else {
            &self.history_base
        }
    }

    /// Whether this rollout continues another rollout of its own thread (a
    /// revert): such a file is never the parent another file resolves to.
    pub(crate) fn continues_itself(&self) -> bool {
        !self.history_base.is_empty() && self.history_base == self.thread_id
    }
}

/// Everything one file contributed so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileParse {
    /// Interned strings; index 0 is always "".
    pub strings: Vec<String>,
    pub events: Vec<Event>,
    /// The events' non-zero last counters ([`Event::last_at`]).
    pub lasts: Vec<[u64; 6]>,
    pub codex: CodexMeta,
    /// Candidate lines that were not valid JSON records.
    pub malformed: u64,
}

impl Default for FileParse {
    fn default() -> FileParse {
        FileParse {
            strings: vec![String::new()],
            events: Vec::new(),
            lasts: Vec::new(),
            codex: CodexMeta::default(),
            malformed: 0,
        }
    }
}

impl FileParse {
    /// The index of `s`, adding it if new (linear: a file has few distinct
    /// models and directories).
    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        self.intern_utf8(s.as_bytes())
    }

    /// [`FileParse::intern`] of text already checked as UTF-8 (by
    /// `jsonpick::Cursor::text`), compared as bytes: only a new string is
    /// made a `String`.
    pub(crate) fn intern_utf8(&mut self, s: &[u8]) -> u32 {
        if s.is_empty() {
            return 0;
        }
        // The newest string first: a database's calls come session by
        // session, each session's id the last string added (a scan of a
        // database's hundreds of session ids per call was most of its read).
        if self.strings.last().is_some_and(|x| x.as_bytes() == s) {
            return (self.strings.len() - 1) as u32;
        }
        if let Some(i) = self.strings.iter().position(|x| x.as_bytes() == s) {
            return i as u32;
        }
        // Lossless for UTF-8, the only text this is given.
        self.strings.push(String::from_utf8_lossy(s).into_owned());
        (self.strings.len() - 1) as u32
    }

    /// `e`'s last counters (all zero for a Claude record).
    pub fn last(&self, e: &Event) -> [u64; 6] {
        last_in(&self.lasts, e.last_at)
    }

    /// Stores `last` for an event of this file: see [`add_last`].
    pub(crate) fn add_last(&mut self, last: [u64; 6]) -> u32 {
        add_last(&mut self.lasts, last)
    }

    pub fn string(&self, index: u32) -> &str {
        self.strings
            .get(index as usize)
            .map(String::as_str)
            .unwrap_or("")
    }
}

/// One model call as an agent's parser hands it to [`FileParse::push_message`]:
/// the shared contract of every agent after Claude Code, Codex and pi.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Message<'a> {
    /// UTC Unix seconds of the call.
    pub ts: i64,
    /// The model as the agent writes it ("" = unknown, shown unpriced).
    pub model: &'a str,
    /// The project directory, when the file tells it.
    pub cwd: &'a str,
    /// The session id ("" = the file's own, `CodexMeta::thread_id`).
    pub session: &'a str,
    /// The agent's id of the call (empty = none): calls of one file with
    /// the same id count once (`aggregate::message_count`).
    pub id: &'a [u8],
    /// Normalised by the parser: `input` uncached prompt tokens only,
    /// `cache_write_5m` every cache write (`cache_write_1h` 0), `output`
    /// all billed output with reasoning, `reasoning` its part of it.
    pub tokens: Tokens,
}

impl FileParse {
    /// Adds one model call ([`Message`]) as an [`EventKind::Message`].
    pub(crate) fn push_message(&mut self, m: &Message) {
        let t = &m.tokens;
        let event = Event {
            kind: EventKind::Message,
            ts: m.ts,
            model: self.intern(m.model),
            cwd: self.intern(m.cwd),
            tier: 0,
            session: self.intern(m.session),
            flags: 0,
            key: if m.id.is_empty() { 0 } else { fnv1a(&[m.id]) },
            group: 0,
            t: [
                t.input,
                t.cache_read,
                t.cache_write_5m.saturating_add(t.cache_write_1h),
                0,
                t.output,
                t.reasoning,
            ],
            last_at: 0,
        };
        self.events.push(event);
    }
}

/// The [`Tokens`] of an [`EventKind::Message`] event.
pub(crate) fn message_tokens(t: [u64; 6]) -> Tokens {
    Tokens {
        input: t[0],
        cache_read: t[1],
        cache_write_5m: t[2],
        cache_write_1h: t[3],
        output: t[4],
        reasoning: t[5],
    }
}

/// Token buckets normalised to Claude semantics (all disjoint except
/// `reasoning`, an informational subset of `output`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub cache_read: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub output: u64,
    pub reasoning: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write_5m)
            .saturating_add(self.cache_write_1h)
            .saturating_add(self.output)
    }
    /// Tokens of the prompt (for long-context thresholds).
    pub fn prompt(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write_5m)
            .saturating_add(self.cache_write_1h)
    }
    pub fn add(&mut self, other: &Tokens) {
        self.input = self.input.saturating_add(other.input);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write_5m = self.cache_write_5m.saturating_add(other.cache_write_5m);
        self.cache_write_1h = self.cache_write_1h.saturating_add(other.cache_write_1h);
        self.output = self.output.saturating_add(other.output);
        self.reasoning = self.reasoning.saturating_add(other.reasoning);
    }
}

/// A stable word-at-a-time checksum of cache bytes (megabytes per refresh:
/// a byte-wise hash would cost more than the rest of reading them). Four
/// independent lanes over 32-byte blocks, so the multiplications overlap
/// instead of waiting on each other, then folded with the tail. Every
/// cache file's format depends on it: a change bumps their versions.
pub(crate) fn hash_words(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let step = |h: u64, word: &[u8]| {
        let mut w = [0u8; 8];
        w[..word.len()].copy_from_slice(word);
        (h.rotate_left(23) ^ u64::from_le_bytes(w)).wrapping_mul(K)
    };
    let seed = 0x6865_656c_6572_6373 ^ bytes.len() as u64;
    let mut lanes = [
        seed,
        seed ^ K,
        seed.rotate_left(16),
        seed.rotate_left(48) ^ K,
    ];
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        let block: &[u8; 32] = block.try_into().unwrap_or(&[0; 32]);
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&block[i * 8..i * 8 + 8]);
            u64::from_le_bytes(w)
        };
        lanes = [
            (lanes[0].rotate_left(23) ^ word(0)).wrapping_mul(K),
            (lanes[1].rotate_left(23) ^ word(1)).wrapping_mul(K),
            (lanes[2].rotate_left(23) ^ word(2)).wrapping_mul(K),
            (lanes[3].rotate_left(23) ^ word(3)).wrapping_mul(K),
        ];
    }
    let mut h = lanes[0];
    for lane in &lanes[1..] {
        h = (h.rotate_left(23) ^ lane).wrapping_mul(K);
    }
    for word in blocks.remainder().chunks(8) {
        h = step(h, word);
    }
    h = step(h, &[]);
    h ^ (h >> 32)
}

/// Appends the [`hash_words`] of `bytes` to them.
pub fn seal(bytes: &mut Vec<u8>) {
    let sum = hash_words(bytes);
    bytes.extend(sum.to_le_bytes());
}

/// `bytes` without their trailing [`seal`], if it matches.
pub(crate) fn unseal(bytes: &[u8]) -> Option<&[u8]> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    (hash_words(body).to_le_bytes() == *sum).then_some(body)
}

/// FNV-1a 64: the stable hash of dedupe keys and file heads (stored in the
/// cache, so it must not change between runs the way `DefaultHasher` may).
/// Parts are separated by a 0xff byte (never in UTF-8 text); the hash is
/// never 0 (which means "none" where it is stored).
pub(crate) fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h = FNV_OFFSET;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            h = fnv_bytes(h, &[0xff]);
        }
        h = fnv_bytes(h, part);
    }
    fnv_finish(h)
}

/// [`fnv1a`] of `[a]` and of `[a, b]`, reading `a` once (a Claude
/// record's message id alone and with its request id).
pub(crate) fn fnv1a_and_pair(a: &[u8], b: &[u8]) -> (u64, u64) {
    let h = fnv_bytes(FNV_OFFSET, a);
    (
        fnv_finish(h),
        fnv_finish(fnv_bytes(fnv_bytes(h, &[0xff]), b)),
    )
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv_bytes(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn fnv_finish(h: u64) -> u64 {
    if h == 0 { 1 } else { h }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_is_the_published_fnv_1a_64() {
        // Vectors from the FNV reference (Fowler, Noll, Vo: test suite).
        assert_eq!(fnv1a(&[b""]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(&[b"a"]), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(&[b"foobar"]), 0x8594_4171_f739_67e8);
        // Parts are joined by a 0xff byte.
        assert_eq!(fnv1a(&[b"foo", b"bar"]), fnv1a(&[b"foo\xffbar"]));
    }

    #[test]
    fn the_pair_hash_is_the_hash_of_each_part_list() {
        for (a, b) in [
            (&b""[..], &b""[..]),
            (b"msg_01", b"req_01"),
            (b"a", b""),
            (b"", b"z"),
        ] {
            assert_eq!(fnv1a_and_pair(a, b), (fnv1a(&[a]), fnv1a(&[a, b])));
        }
    }
}

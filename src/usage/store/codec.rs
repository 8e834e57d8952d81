//! The byte encodings of the per-file cache: the index header, an entry's
//! metadata and segment list, the event streams of the events file, the
//! index journal's records, and the self-contained form of a whole index
//! ([`Index::to_bytes`]) that tests compare indexes by.
//!
//! Decoding never trusts the input: every length and count is checked
//! against the bytes that remain (`base::bytes`), string indexes against
//! the entry's string table, and an event stream must fill its segment
//! exactly. Anything else is `None`, and the caller treats the entry (or
//! the file) as absent. The entry types are `usage::store::entry`'s; their
//! methods that read stored events ([`FileEntry::materialize`],
//! [`EventsFile::read`]) live here, beside the encoding they decode.

use std::collections::BTreeMap;

use crate::base::bytes::Reader;
use crate::usage::agents;
use crate::usage::event::{
    Agent, CodexMeta, Event, EventKind, FileParse, add_last, hash_words, last_in,
};
use crate::usage::store::entry::{EventsFile, FileEntry, Index, Segment};

/// Bump when the index layout changes (everything is reparsed).
/// 8: the header names a third agent's parser version (pi). 9: and
/// every agent after it (issue 43: one full reparse after the upgrade).
pub(crate) const INDEX_VERSION: u32 = 9;

const MAGIC: &[u8; 4] = b"HUIX";
const EVENTS_MAGIC: &[u8; 4] = b"HUIE";
/// The least an entry's metadata takes (for checking an entry count).
const MIN_ENTRY: usize = 16;
/// Bytes of one segment reference.
const SEGMENT_BYTES: usize = 24;
/// The least one encoded event takes (for checking an event count).
const MIN_EVENT: usize = 12;

/// The versions an index journal's header repeats: a journal written by
/// another layout or parser is ignored.
/// The layout version, then each agent's parser version
/// ([`Agent::parser_version`]) in [`agents::ALL`]'s order.
pub fn versions() -> Vec<u64> {
    std::iter::once(INDEX_VERSION)
        .chain(agents::ALL.map(Agent::parser_version))
        .map(u64::from)
        .collect()
}

/// The header of the events file of id `id` (magic and id).
pub(crate) fn events_header(id: u64) -> Vec<u8> {
    let mut h = EVENTS_MAGIC.to_vec();
    h.extend(id.to_le_bytes());
    h
}

/// Little-endian writes, the counterpart of [`Reader`].
struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend(v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend(v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend(v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend(s.as_bytes());
    }
}

/// A string as the index writes it: a `u32` length, then UTF-8.
pub(crate) fn read_str(r: &mut Reader) -> Option<String> {
    let n = usize::try_from(r.u32()?).ok()?;
    r.utf8(n)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn has_key(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::Claude | EventKind::CodexRecord | EventKind::Message
    )
}

/// Whether an event of `kind` names its own session (a Claude record's
/// `sessionId`; a model call's session when it is not its file's).
fn has_session(kind: EventKind) -> bool {
    matches!(kind, EventKind::Claude | EventKind::Message)
}

fn has_last(kind: EventKind) -> bool {
    matches!(kind, EventKind::CodexTotals | EventKind::CodexLast)
}

/// What an index header says.
pub(crate) struct Header {
    pub count: usize,
    /// Per agent (by [`Agent::index`]): whether its entries were parsed
    /// by its current parser.
    parsed_now: [bool; agents::ALL.len()],
}

impl Header {
    /// Whether entries of `agent` were parsed by the current parser (the
    /// others are left out of the index, so their files are parsed anew).
    pub fn keeps(&self, agent: Agent) -> bool {
        self.parsed_now[agent.index()]
    }
}

/// The index header for `count` entries (magic, layout and parser
/// versions, count).
pub fn header(count: usize) -> Vec<u8> {
    let mut o = Out(Vec::with_capacity(20));
    o.0.extend(MAGIC);
    o.u32(INDEX_VERSION);
    for agent in agents::ALL {
        o.u32(agent.parser_version());
    }
    o.u32(count as u32);
    o.0
}

/// Reads [`header`]; `None` for another magic or layout version.
pub(crate) fn read_header(r: &mut Reader) -> Option<Header> {
    if r.take(4)? != MAGIC || r.u32()? != INDEX_VERSION {
        return None;
    }
    let mut parsed_now = [false; agents::ALL.len()];
    for agent in agents::ALL {
        parsed_now[agent.index()] = r.u32()? == agent.parser_version();
    }
    Some(Header {
        count: r.count32(MIN_ENTRY)?,
        parsed_now,
    })
}

/// Appends one stored entry (metadata and segment list) to `out`.
pub(crate) fn write_entry(out: &mut Vec<u8>, path: &str, e: &FileEntry) {
    write_entry_stored(out, path, e, &e.stored);
}

/// [`write_entry`] with `stored` for the entry's segment list.
pub(crate) fn write_entry_stored(out: &mut Vec<u8>, path: &str, e: &FileEntry, stored: &[Segment]) {
    let mut o = Out(std::mem::take(out));
    encode_meta(&mut o, path, e);
    o.u32(stored.len() as u32);
    for s in stored {
        o.u64(s.offset);
        o.u32(s.len);
        o.u32(s.count);
        o.u64(s.sum);
    }
    *out = o.0;
}

/// Reads one stored entry, its events left in `file` until materialized.
pub(crate) fn read_entry(r: &mut Reader, file: &EventsFile) -> Option<(String, FileEntry)> {
    let (path, mut e) = decode_meta(r)?;
    let n = r.count32(SEGMENT_BYTES)?;
    e.stored.reserve_exact(n);
    for _ in 0..n {
        e.stored.push(Segment {
            offset: r.u64()?,
            len: r.u32()?,
            count: r.u32()?,
            sum: r.u64()?,
        });
    }
    e.pending = Some(file.clone());
    Some((path, e))
}

/// An index journal record: an entry written, or a path removed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Record {
    Entry(String, Box<FileEntry>),
    Tombstone(String),
}

/// The journal payload for `key`: its entry, or a tombstone when absent.
pub(crate) fn record_payload(key: &str, entry: Option<&FileEntry>) -> Vec<u8> {
    let mut out = Vec::new();
    match entry {
        Some(e) => {
            out.push(1);
            write_entry(&mut out, key, e);
        }
        None => {
            let mut o = Out(out);
            o.u8(0);
            o.str(key);
            out = o.0;
        }
    }
    out
}

/// Reads [`record_payload`] (entries pointing into `file`); `None` when
/// damaged or not consumed exactly.
pub(crate) fn read_record(payload: &[u8], file: &EventsFile) -> Option<Record> {
    let mut r = Reader::new(payload);
    let record = match r.u8()? {
        1 => read_entry(&mut r, file).map(|(path, e)| Record::Entry(path, Box::new(e)))?,
        0 => Record::Tombstone(read_str(&mut r)?),
        _ => return None,
    };
    r.at_end().then_some(record)
}

fn encode_meta(o: &mut Out, path: &str, e: &FileEntry) {
    o.str(path);
    o.u8(e.agent.code());
    o.u8(u8::from(e.compressed) | (u8::from(e.unreadable) << 1));
    o.u64(e.dev);
    o.u64(e.ino);
    o.u64(e.size);
    o.i64(e.mtime_ns);
    o.i64(e.ctime_ns);
    o.u32(e.head_len);
    o.u64(e.head_hash);
    o.u64(e.offset);
    o.u64(e.oversized);
    let p = &e.parse;
    o.u64(p.malformed);
    o.u32(p.strings.len() as u32);
    for s in &p.strings {
        o.str(s);
    }
    let m = &p.codex;
    o.str(&m.thread_id);
    o.str(&m.forked_from);
    o.str(&m.history_base);
    o.u64(m.fork_ordinal);
    o.u64(m.lines);
    o.u8(u8::from(m.subagent));
    o.i64(m.meta_ts);
    o.u32(m.model);
    o.u32(m.cwd);
    o.u32(m.tier);
    o.str(&m.rate_limits);
    o.i64(m.rate_limits_ts);
}

fn decode_meta(r: &mut Reader) -> Option<(String, FileEntry)> {
    let path = read_str(r)?;
    let agent = Agent::from_code(u64::from(r.u8()?))?;
    let bits = r.u8()?;
    let mut e = FileEntry {
        agent,
        compressed: bits & 1 != 0,
        unreadable: bits & 2 != 0,
        dev: r.u64()?,
        ino: r.u64()?,
        size: r.u64()?,
        mtime_ns: r.i64()?,
        ctime_ns: r.i64()?,
        head_len: r.u32()?,
        head_hash: r.u64()?,
        offset: r.u64()?,
        oversized: r.u64()?,
        parse: FileParse {
            malformed: r.u64()?,
            strings: Vec::new(),
            events: Vec::new(),
            lasts: Vec::new(),
            codex: CodexMeta::default(),
        },
        stored: Vec::new(),
        pending: None,
    };
    // Sized first: thousands of entries load on every refresh.
    let ns = r.count32(4)?;
    e.parse.strings.reserve_exact(ns);
    for _ in 0..ns {
        e.parse.strings.push(read_str(r)?);
    }
    // Index 0 is the empty string every event may name.
    if e.parse.strings.first().map(String::as_str) != Some("") {
        return None;
    }
    e.parse.codex = CodexMeta {
        thread_id: read_str(r)?,
        forked_from: read_str(r)?,
        history_base: read_str(r)?,
        fork_ordinal: r.u64()?,
        lines: r.u64()?,
        subagent: r.u8()? != 0,
        meta_ts: r.i64()?,
        model: r.u32()?,
        cwd: r.u32()?,
        tier: r.u32()?,
        rate_limits: read_str(r)?,
        rate_limits_ts: r.i64()?,
    };
    Some((path, e))
}

/// `events`, whose last counters are in `lasts` ([`Event::last_at`]), as
/// one event stream (timestamps delta-coded from zero).
pub fn encode_events(events: &[Event], lasts: &[[u64; 6]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(events.len() * 40);
    let mut prev_ts = 0i64;
    for ev in events {
        // Compact: varints, timestamps as deltas, hashes and the `last`
        // counters only where the kind has them. Each event is put
        // together on the stack and appended at once (hundreds of
        // thousands after a cold scan; a push per byte costs twice as much).
        let mut o = EventBytes::default();
        o.u8(ev.kind.code());
        o.var(zigzag(ev.ts.wrapping_sub(prev_ts)));
        prev_ts = ev.ts;
        o.var(u64::from(ev.model));
        o.var(u64::from(ev.cwd));
        o.var(u64::from(ev.tier));
        if has_session(ev.kind) {
            o.var(u64::from(ev.session));
        }
        o.u8(ev.flags);
        if has_key(ev.kind) {
            o.u64(ev.key);
        }
        if ev.kind == EventKind::Claude {
            o.u64(ev.group);
        } else {
            o.var(ev.group);
        }
        for n in ev.t {
            o.var(n);
        }
        if has_last(ev.kind) {
            for n in last_in(lasts, ev.last_at) {
                o.var(n);
            }
        }
        out.extend_from_slice(o.bytes());
    }
    out
}

/// One encoded event: at most 1 + 10 + 4 × 5 + 1 + 8 + 10 + 12 × 10 =
/// 170 bytes (kind, time delta, four string indexes (the session's for
/// Claude records and model calls only), flags, key, group, the twelve
/// counters).
struct EventBytes {
    buf: [u8; EventBytes::MAX],
    len: usize,
}

impl Default for EventBytes {
    fn default() -> EventBytes {
        EventBytes {
            buf: [0; EventBytes::MAX],
            len: 0,
        }
    }
}

// Inlined: the release build optimises for size, and a call per field
// would cost more than the field.
impl EventBytes {
    /// The bound above, rounded up to a multiple of eight.
    const MAX: usize = 176;

    #[inline(always)]
    fn u8(&mut self, v: u8) {
        self.buf[self.len] = v;
        self.len += 1;
    }
    #[inline(always)]
    fn u64(&mut self, v: u64) {
        self.buf[self.len..self.len + 8].copy_from_slice(&v.to_le_bytes());
        self.len += 8;
    }
    /// LEB128 unsigned varint.
    #[inline(always)]
    fn var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.u8(v as u8);
    }
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Reads exactly `count` events filling `raw`, whose string indexes are
/// below `strings`, adding their last counters to `lasts` (by
/// [`add_last`], as the parsers do; left as they were when `raw` does not
/// decode).
pub fn decode_events(
    raw: &[u8],
    count: u32,
    strings: usize,
    lasts: &mut Vec<[u64; 6]>,
) -> Option<Vec<Event>> {
    let before = lasts.len();
    let events = decode_into(raw, count, strings, lasts);
    if events.is_none() {
        lasts.truncate(before);
    }
    events
}

fn decode_into(
    raw: &[u8],
    count: u32,
    strings: usize,
    lasts: &mut Vec<[u64; 6]>,
) -> Option<Vec<Event>> {
    let mut r = Reader::new(raw);
    let count = count as usize;
    if count.checked_mul(MIN_EVENT)? > raw.len() {
        return None;
    }
    let mut events = Vec::with_capacity(count);
    let mut prev_ts = 0i64;
    for _ in 0..count {
        let kind = EventKind::from_code(r.u8()?)?;
        let ts = prev_ts.wrapping_add(unzigzag(r.varint()?));
        prev_ts = ts;
        let index = |v: u64| u32::try_from(v).ok().filter(|&i| (i as usize) < strings);
        let (model, cwd, tier) = (
            index(r.varint()?)?,
            index(r.varint()?)?,
            index(r.varint()?)?,
        );
        let session = if has_session(kind) {
            index(r.varint()?)?
        } else {
            0
        };
        let flags = r.u8()?;
        let key = if has_key(kind) { r.u64()? } else { 0 };
        let group = if kind == EventKind::Claude {
            r.u64()?
        } else {
            r.varint()?
        };
        let mut t = [0u64; 6];
        for n in &mut t {
            *n = r.varint()?;
        }
        let mut last = [0u64; 6];
        if has_last(kind) {
            for n in &mut last {
                *n = r.varint()?;
            }
        }
        let last_at = add_last(lasts, last);
        events.push(Event {
            kind,
            ts,
            model,
            cwd,
            tier,
            session,
            flags,
            key,
            group,
            t,
            last_at,
        });
    }
    r.at_end().then_some(events)
}

impl EventsFile {
    /// The bytes of `segment`, if they are all there and match its sum.
    pub fn read(&self, segment: Segment) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        // A damaged reference must not make us allocate what is not there.
        let end = segment.offset.checked_add(u64::from(segment.len))?;
        if end > self.0.metadata().ok()?.len() {
            return None;
        }
        let mut raw = vec![0u8; segment.len as usize];
        self.0.read_exact_at(&mut raw, segment.offset).ok()?;
        (hash_words(&raw) == segment.sum).then_some(raw)
    }
}

impl FileEntry {
    /// Loads lazily stored events; `false` when they are unreadable or
    /// corrupt (the entry must then be reparsed).
    pub fn materialize(&mut self) -> bool {
        let Some(file) = self.pending.take() else {
            return true;
        };
        // No reservation from the stored counts: they are read from the
        // index, and only a segment that decodes proves its count.
        let mut events = Vec::new();
        let lasts_before = self.parse.lasts.len();
        for segment in &self.stored {
            match file.read(*segment).and_then(|raw| {
                decode_events(
                    &raw,
                    segment.count,
                    self.parse.strings.len(),
                    &mut self.parse.lasts,
                )
            }) {
                Some(part) => events.extend(part),
                None => {
                    self.parse.lasts.truncate(lasts_before);
                    return false;
                }
            }
        }
        self.parse.events = events;
        true
    }
}

impl Index {
    /// The index as one self-contained byte string (events inline): what
    /// two indexes are compared by, whatever their storage.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut o = Out(header(self.files.len()));
        o.0.reserve(1 << 16);
        for (path, e) in &self.files {
            encode_meta(&mut o, path, e);
            let mut loaded = e.clone();
            let events = if loaded.materialize() {
                loaded.parse.events
            } else {
                Vec::new()
            };
            let raw = encode_events(&events, &loaded.parse.lasts);
            o.u32(events.len() as u32);
            o.u32(raw.len() as u32);
            o.0.extend_from_slice(&raw);
        }
        o.0
    }

    /// Reads [`Index::to_bytes`]; corrupt or another layout → empty.
    pub fn from_bytes(bytes: &[u8]) -> Index {
        let decode = || -> Option<Index> {
            let mut r = Reader::new(bytes);
            let n = read_header(&mut r)?;
            let mut files = BTreeMap::new();
            for _ in 0..n.count {
                let (path, mut e) = decode_meta(&mut r)?;
                let count = r.u32()?;
                let len = usize::try_from(r.u32()?).ok()?;
                e.parse.events = decode_events(
                    r.take(len)?,
                    count,
                    e.parse.strings.len(),
                    &mut e.parse.lasts,
                )?;
                if n.keeps(e.agent) {
                    files.insert(path, e);
                }
            }
            r.at_end().then_some(Index { files })
        };
        decode().unwrap_or_default()
    }

    /// Loads every lazily stored entry, dropping unreadable ones.
    pub fn materialize(&mut self) {
        self.files.retain(|_, e| e.materialize());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(agent: Agent) -> FileEntry {
        let parse = FileParse {
            strings: vec![String::new(), "claude-x".into()],
            codex: CodexMeta {
                thread_id: "t-1".into(),
                ..CodexMeta::default()
            },
            ..FileParse::default()
        };
        FileEntry {
            agent,
            compressed: false,
            dev: 1,
            ino: 2,
            size: 300,
            mtime_ns: 4_000,
            ctime_ns: 4_000,
            head_len: 300,
            head_hash: 5,
            offset: 290,
            oversized: 0,
            unreadable: false,
            parse,
            stored: Vec::new(),
            pending: None,
        }
    }

    #[test]
    fn a_damaged_event_count_reserves_nothing_it_cannot_read() {
        // Found by the usage_index fuzz target: a segment claiming 2^32
        // events made materialize reserve hundreds of GB and abort.
        let dir = crate::base::scratch::ScratchDir::new("codec-count");
        let path = dir.join("events");
        std::fs::write(&path, [0u8; 16]).unwrap();
        let file = EventsFile(std::sync::Arc::new(std::fs::File::open(&path).unwrap()));
        let mut e = entry(Agent::Claude);
        e.stored.push(Segment {
            offset: 0,
            len: 16,
            count: u32::MAX,
            sum: hash_words(&[0u8; 16]),
        });
        e.pending = Some(file);
        assert!(!e.materialize());
    }

    /// Every event kind.
    const KINDS: [EventKind; 6] = [
        EventKind::Claude,
        EventKind::CodexTotals,
        EventKind::CodexLast,
        EventKind::CodexRecord,
        EventKind::Pi,
        EventKind::Message,
    ];

    /// An event and its last counters (an event alone points into its
    /// file's table of them): what the event streams are compared by.
    type Full = (Event, [u64; 6]);

    /// An event carrying every field, whatever its kind.
    fn full_event(kind: EventKind, ts: i64) -> Full {
        let e = Event {
            kind,
            ts,
            model: 1,
            cwd: 0,
            tier: 0,
            session: 1,
            flags: 2,
            key: 0xdead_beef,
            group: 7,
            t: [1, 2, 3, 300, 5, 6],
            last_at: 0,
        };
        (e, [9; 6])
    }

    /// An event with only the fields its kind has (the others zero): every
    /// event has a group (a Claude message hash, a Codex ordinal), a Claude
    /// or Codex record a key, Codex totals and last-usage events the
    /// `last` counters.
    fn event(kind: EventKind, ts: i64) -> Full {
        own_fields(full_event(kind, ts))
    }

    /// `e` with the fields its kind does not have set to zero.
    fn own_fields((e, last): Full) -> Full {
        let key = if has_key(e.kind) { e.key } else { 0 };
        let session = if has_session(e.kind) { e.session } else { 0 };
        let last = if has_last(e.kind) { last } else { [0; 6] };
        (Event { key, session, ..e }, last)
    }

    /// `full` as events and their table of last counters, as a parser
    /// makes them.
    fn split(full: &[Full]) -> (Vec<Event>, Vec<[u64; 6]>) {
        let mut lasts = Vec::new();
        let events = full
            .iter()
            .map(|&(e, last)| Event {
                last_at: add_last(&mut lasts, last),
                ..e
            })
            .collect();
        (events, lasts)
    }

    /// Encodes `full` (its last counters through the table).
    fn encode_full(full: &[Full]) -> Vec<u8> {
        let (events, lasts) = split(full);
        encode_events(&events, &lasts)
    }

    /// Decodes a stream into events with their last counters (and checks
    /// that it added nothing to the table it was given when it fails).
    fn decode_full(raw: &[u8], count: u32, strings: usize) -> Option<Vec<Full>> {
        let mut lasts = vec![[7; 6]];
        let Some(events) = decode_events(raw, count, strings, &mut lasts) else {
            assert_eq!(lasts, [[7; 6]], "a stream that fails adds nothing");
            return None;
        };
        Some(
            events
                .iter()
                .map(|e| (Event { last_at: 0, ..*e }, last_in(&lasts, e.last_at)))
                .collect(),
        )
    }

    #[test]
    fn varints_and_zigzag_follow_their_definitions() {
        // Zigzag maps 0, -1, 1, -2 to 0, 1, 2, 3.
        assert_eq!([0, -1, 1, -2].map(zigzag), [0, 1, 2, 3]);
        for v in [0, -1, 1, i64::MIN, i64::MAX, -123_456] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        // LEB128: 300 is 0b10_0101100, low seven bits first.
        let mut o = EventBytes::default();
        o.var(300);
        o.var(u64::MAX);
        assert_eq!(o.bytes()[..2], [0xac, 0x02]);
        assert_eq!(o.bytes()[2..], [[0xff; 9].as_slice(), &[0x01]].concat());
    }

    #[test]
    fn events_round_trip_and_keep_only_the_fields_of_their_kind() {
        // Timestamps going back and forth: deltas of both signs.
        let events: Vec<Full> = KINDS
            .iter()
            .zip([
                1_700_000_000,
                1_699_999_000,
                1_700_000_500,
                -5,
                7,
                1_700_000_000,
            ])
            .map(|(kind, ts)| event(*kind, ts))
            .collect();
        let raw = encode_full(&events);
        assert_eq!(decode_full(&raw, 6, 2), Some(events.clone()));
        // Fields a kind does not have are not stored.
        let full: Vec<Full> = KINDS.iter().map(|k| full_event(*k, 1)).collect();
        let back = decode_full(&encode_full(&full), 6, 2).unwrap();
        let only_own: Vec<Full> = KINDS.iter().map(|k| event(*k, 1)).collect();
        assert_eq!(back, only_own);
    }

    #[test]
    fn the_largest_events_of_every_kind_round_trip() {
        // Every varint at its longest: what an event's bytes must hold.
        let largest: Vec<Full> = KINDS
            .iter()
            .enumerate()
            .map(|(n, &kind)| {
                let e = Event {
                    ts: if n % 2 == 0 { i64::MIN } else { i64::MAX },
                    model: u32::MAX,
                    cwd: u32::MAX,
                    tier: u32::MAX,
                    session: u32::MAX,
                    flags: u8::MAX,
                    key: u64::MAX,
                    group: u64::MAX,
                    t: [u64::MAX; 6],
                    ..full_event(kind, 0).0
                };
                own_fields((e, [u64::MAX; 6]))
            })
            .collect();
        let raw = encode_full(&largest);
        let strings = u32::MAX as usize + 1;
        assert_eq!(decode_full(&raw, 6, strings), Some(largest));
    }

    #[test]
    fn damaged_event_streams_are_refused() {
        let raw = encode_full(&[event(EventKind::Claude, 5)]);
        // One byte short, one byte over, a wrong count, a count the bytes
        // cannot hold, a string index past the table.
        assert_eq!(decode_full(&raw[..raw.len() - 1], 1, 2), None);
        let mut longer = raw.clone();
        longer.push(0);
        assert_eq!(decode_full(&longer, 1, 2), None);
        assert_eq!(decode_full(&raw, 2, 2), None);
        assert_eq!(decode_full(&raw, u32::MAX, 2), None);
        assert_eq!(decode_full(&raw, 1, 1), None);
        assert_eq!(decode_full(&[0xff; 20], 1, 2), None);
        // A stream whose last counters decode before it fails adds none.
        let totals = encode_full(&[event(EventKind::CodexTotals, 5)]);
        assert_eq!(decode_full(&totals[..totals.len() - 1], 1, 2), None);
        let mut two = totals.clone();
        two.extend_from_slice(&raw[..raw.len() - 1]);
        assert_eq!(decode_full(&two, 2, 2), None);
    }

    #[test]
    fn an_index_round_trips_and_truncation_empties_it() {
        let mut index = Index::default();
        let mut claude = entry(Agent::Claude);
        claude.parse.events = vec![event(EventKind::Claude, 10).0];
        index.files.insert("/a.jsonl".into(), claude);
        index.files.insert("/b.jsonl".into(), entry(Agent::Codex));
        let bytes = index.to_bytes();
        assert_eq!(&bytes[..4], b"HUIX");
        assert_eq!(Index::from_bytes(&bytes), index);
        for cut in [0, 4, 20, bytes.len() / 2, bytes.len() - 1] {
            assert_eq!(Index::from_bytes(&bytes[..cut]), Index::default());
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(Index::from_bytes(&longer), Index::default());
    }

    #[test]
    fn entries_of_another_parser_version_are_left_out() {
        let mut index = Index::default();
        index.files.insert("/a".into(), entry(Agent::Claude));
        index.files.insert("/b".into(), entry(Agent::Codex));
        let mut bytes = index.to_bytes();
        // The Codex parser version follows magic, layout and Claude parser.
        bytes[12..16].copy_from_slice(&(Agent::Codex.parser_version() + 1).to_le_bytes());
        let back = Index::from_bytes(&bytes);
        assert_eq!(back.files.keys().collect::<Vec<_>>(), ["/a"]);
        // Another layout version keeps nothing.
        bytes[4..8].copy_from_slice(&(INDEX_VERSION + 1).to_le_bytes());
        assert_eq!(Index::from_bytes(&bytes), Index::default());
    }

    #[test]
    fn an_entry_needs_the_empty_string_first() {
        let mut index = Index::default();
        let mut e = entry(Agent::Claude);
        e.parse.strings = vec!["x".into()];
        index.files.insert("/a".into(), e);
        assert_eq!(Index::from_bytes(&index.to_bytes()), Index::default());
    }

    #[test]
    fn records_round_trip_and_refuse_trailing_or_unknown_bytes() {
        let file = match std::fs::File::open("/dev/null") {
            Ok(f) => EventsFile(std::sync::Arc::new(f)),
            Err(e) => panic!("open /dev/null: {e}"),
        };
        let mut e = entry(Agent::Codex);
        e.stored.push(Segment {
            offset: 12,
            len: 30,
            count: 2,
            sum: 99,
        });
        let payload = record_payload("/x", Some(&e));
        let mut expected = e.clone();
        expected.pending = Some(file.clone());
        assert_eq!(
            read_record(&payload, &file),
            Some(Record::Entry("/x".into(), Box::new(expected)))
        );
        let tombstone = record_payload("/gone", None);
        // Kind 0, then the path as a u32 length and its bytes.
        assert_eq!(tombstone, b"\0\x05\0\0\0/gone");
        assert_eq!(
            read_record(&tombstone, &file),
            Some(Record::Tombstone("/gone".into()))
        );
        let mut longer = tombstone.clone();
        longer.push(0);
        assert_eq!(read_record(&longer, &file), None);
        assert_eq!(read_record(&payload[..payload.len() - 1], &file), None);
        assert_eq!(read_record(b"\x02", &file), None);
        assert_eq!(read_record(b"", &file), None);
    }
}

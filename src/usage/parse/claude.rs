//! Claude Code transcripts: where they live and what one line contributes.
//!
//! Claude Code writes one assistant record per content block, repeating the
//! response's `usage` on each, and sidechains may replay parent messages;
//! this module only extracts facts per line (dedupe is global, in
//! `usage::aggregate`). Directories come from the record's `cwd`, never from
//! the lossy project key.
//!
//! A subagent's assistant messages are written twice: to its own file
//! (`<session>/subagents/agent-*.jsonl`, which may be missing) and, nested
//! as `data.message`, in a `progress` line of the file that ran it. Both
//! copies give the same event (the nested record's own timestamp, message
//! id, request id and usage, flagged as a sidechain like the subagent's own
//! records), so the global (`message.id`, `requestId`) dedupe counts the
//! message once whether one copy exists or both.

use std::path::{Path, PathBuf};

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use crate::usage::event::{Event, EventKind, FileParse, flags, fnv1a, fnv1a_and_pair};
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::parse::scan::trim;

/// Claude Code roots that exist and hold `projects/`: every entry of a
/// comma-separated `CLAUDE_CONFIG_DIR`, then `~/.claude`, then
/// `$XDG_CONFIG_HOME/claude` (default `~/.config/claude`). Duplicates removed.
pub fn roots(config_dir: Option<&str>, home: &Path, xdg_config: Option<&str>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for c in candidates(config_dir, home, xdg_config) {
        let canonical = std::fs::canonicalize(&c).unwrap_or(c.clone());
        if canonical.join("projects").is_dir()
            && !roots
                .iter()
                .any(|r| std::fs::canonicalize(r).unwrap_or(r.clone()) == canonical)
        {
            roots.push(c);
        }
    }
    roots
}

/// Every directory [`roots`] looks at, in its order, whether it exists or
/// not (what a person is told was searched).
pub fn candidates(config_dir: Option<&str>, home: &Path, xdg_config: Option<&str>) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dirs) = config_dir {
        candidates.extend(
            dirs.split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
        );
    }
    candidates.push(home.join(".claude"));
    match xdg_config.filter(|x| !x.is_empty()) {
        Some(xdg) => candidates.push(Path::new(xdg).join("claude")),
        None => candidates.push(home.join(".config").join("claude")),
    }
    candidates
}

/// Parses one complete line of a Claude Code transcript into `fp`.
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
    // Filled in place: the records are large, and this runs for every
    // assistant line.
    let (mut top, mut nested) = (Fields::default(), None);
    if pick(line, &mut top, &mut nested).is_none() {
        fp.malformed += 1;
        return;
    }
    if let Some(event) = event_of(fp, &top, nested.as_ref()) {
        fp.events.push(event);
    }
}

/// Whether `line` may hold the JSON strings `"usage"` and `"assistant"`:
/// literally, or spelled with `\u` escapes, which only a line holding `\u`
/// can. A line without them holds no such member name or value, so
/// skipping it loses nothing a full parse would find. Most lines are
/// skipped here after a vectorised search or two, their bodies unparsed
/// (the benchmark's exact-scan floor picks its Claude lines with it too).
pub fn may_hold_usage(line: &[u8]) -> bool {
    static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usage\""));
    static ASSISTANT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"assistant\""));
    static ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
    let literal = USAGE.find(line).is_some() && ASSISTANT.find(line).is_some();
    literal || ESCAPE.find(line).is_some()
}

/// The members of a record that Usage reads (an assistant record, or the
/// record a `progress` line nests as `data.message`).
#[derive(Default)]
struct Fields<'a> {
    // Compared with ASCII, or parsed as ASCII: bytes, unchecked.
    kind: Option<Cow<'a, [u8]>>,
    timestamp: Option<Cow<'a, [u8]>>,
    // The rest are text (`Cursor::text`: checked as UTF-8, kept as bytes).
    cwd: Option<Cow<'a, [u8]>>,
    session: Option<Cow<'a, [u8]>>,
    request_id: Option<Cow<'a, [u8]>>,
    sidechain: bool,
    message_id: Option<Cow<'a, [u8]>>,
    model: Option<Cow<'a, [u8]>>,
    has_usage: bool,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    split: Option<(u64, u64)>,
    web_searches: u64,
    tier: Option<Cow<'a, [u8]>>,
    speed: Option<Cow<'a, [u8]>>,
    geo: Option<Cow<'a, [u8]>>,
}

/// Reads the line's record into `top` and, when it has a `data.message`
/// object, the record nested there into `nested`.
fn pick<'a>(line: &'a [u8], top: &mut Fields<'a>, nested: &mut Option<Fields<'a>>) -> Option<()> {
    let mut c = Cursor::new(line);
    pick_record(&mut c, top, Some(nested))?;
    c.at_end().then_some(())
}

/// Reads the record at `c` into `f`; `nested` (the top level only) receives
/// the record at `data.message`.
fn pick_record<'a>(
    c: &mut Cursor<'a>,
    f: &mut Fields<'a>,
    mut nested: Option<&mut Option<Fields<'a>>>,
) -> Option<()> {
    c.object(|key, c| {
        match key {
            b"type" => f.kind = c.bytes()?,
            b"timestamp" => f.timestamp = c.bytes()?,
            b"cwd" => f.cwd = c.text()?,
            b"sessionId" => f.session = c.text()?,
            b"requestId" => f.request_id = c.text()?,
            b"isSidechain" => f.sidechain = c.bool()? == Some(true),
            b"message" if !c.raw_is_object() => c.skip()?,
            b"message" => c.object(|key, c| {
                match key {
                    b"id" => f.message_id = c.text()?,
                    b"model" => f.model = c.text()?,
                    b"usage" => {
                        f.has_usage = true;
                        return pick_usage(c, f);
                    }
                    _ => c.skip()?,
                }
                Some(())
            })?,
            b"data" if c.raw_is_object() => match nested.as_deref_mut() {
                Some(slot) => c.object(|key, c| {
                    if key != b"message" || !c.raw_is_object() {
                        return c.skip();
                    }
                    let mut record = Fields::default();
                    pick_record(c, &mut record, None)?;
                    *slot = Some(record);
                    Some(())
                })?,
                None => c.skip()?,
            },
            _ => c.skip()?,
        }
        Some(())
    })
}

fn pick_usage<'a>(c: &mut Cursor<'a>, f: &mut Fields<'a>) -> Option<()> {
    if c.raw_is_object() {
        c.object(|key, c| {
            match key {
                b"input_tokens" => f.input = c.count()?.unwrap_or(0),
                b"output_tokens" => f.output = c.count()?.unwrap_or(0),
                b"cache_read_input_tokens" => f.cache_read = c.count()?.unwrap_or(0),
                b"cache_creation_input_tokens" => f.cache_write = c.count()?.unwrap_or(0),
                b"service_tier" => f.tier = c.text()?,
                b"speed" => f.speed = c.text()?,
                b"inference_geo" => f.geo = c.text()?,
                b"cache_creation" if c.raw_is_object() => {
                    let (mut five, mut hour) = (0, 0);
                    c.object(|key, c| {
                        match key {
                            b"ephemeral_5m_input_tokens" => five = c.count()?.unwrap_or(0),
                            b"ephemeral_1h_input_tokens" => hour = c.count()?.unwrap_or(0),
                            _ => c.skip()?,
                        }
                        Some(())
                    })?;
                    f.split = Some((five, hour));
                }
                b"server_tool_use" if c.raw_is_object() => c.object(|key, c| {
                    match key {
                        b"web_search_requests" => f.web_searches = c.count()?.unwrap_or(0),
                        _ => c.skip()?,
                    }
                    Some(())
                })?,
                _ => c.skip()?,
            }
            Some(())
        })
    } else {
        f.has_usage = false;
        c.skip()
    }
}

/// What a line contributes: an assistant record's usage, or the usage of the
/// subagent's assistant record a `progress` line nests (a sidechain record,
/// in the directory and session of the line when it names none of its own).
fn event_of(fp: &mut FileParse, top: &Fields, nested: Option<&Fields>) -> Option<Event> {
    match top.kind.as_deref() {
        Some(b"assistant") => record_event(fp, top, (top.cwd(), top.session()), false),
        Some(b"progress") => {
            let n = nested.filter(|n| n.kind.as_deref() == Some(b"assistant"))?;
            let place = (n.cwd().or(top.cwd()), n.session().or(top.session()));
            record_event(fp, n, place, true)
        }
        _ => None,
    }
}

impl Fields<'_> {
    fn cwd(&self) -> Option<&[u8]> {
        self.cwd.as_deref()
    }
    fn session(&self) -> Option<&[u8]> {
        self.session.as_deref()
    }
}

/// The event of record `f` (its directory and session id in `place`).
fn record_event(
    fp: &mut FileParse,
    f: &Fields,
    place: (Option<&[u8]>, Option<&[u8]>),
    sidechain: bool,
) -> Option<Event> {
    let (cwd, session) = place;
    if !f.has_usage {
        return None;
    }
    let ts = crate::usage::time::timestamp_of(f.timestamp.as_deref()?)?;
    let model = f.model.as_deref().filter(|m| !m.is_empty())?;
    if model == b"<synthetic>" {
        return None;
    }
    let (input, output, cache_read, cache_write) = (f.input, f.output, f.cache_read, f.cache_write);
    let (mut write_5m, mut write_1h) = (cache_write, 0);
    if let Some((five, hour)) = f.split {
        write_1h = hour.min(cache_write.max(five + hour));
        write_5m = cache_write.max(five + hour) - write_1h;
    }
    let t = [
        input,
        cache_read,
        write_5m,
        write_1h,
        output,
        f.web_searches,
    ];
    if t.iter().all(|&n| n == 0) {
        return None;
    }
    let mut bits = 0;
    if f.sidechain || sidechain {
        bits |= flags::SIDECHAIN;
    }
    match f.speed.as_deref() {
        Some(b"fast") => bits |= flags::FAST | flags::HAS_SPEED,
        Some(_) => bits |= flags::HAS_SPEED,
        None => {}
    }
    if f.geo.as_deref() == Some(b"us") {
        bits |= flags::GEO_US;
    }
    let message_id = f.message_id.as_deref().filter(|s| !s.is_empty());
    let request_id = f.request_id.as_deref().filter(|s| !s.is_empty());
    // The dedupe key: the hash of `message.id` and `requestId` (parts
    // separated by a 0xff byte), or of `message.id` alone when the record
    // has no request id (behind gateways and on some subagent paths), so
    // the content blocks of such a response count once too. The two key
    // spaces cannot meet: the text hashed for a message id alone holds no
    // 0xff byte (it is UTF-8), the text hashed for a pair always does. So
    // one message id with and without a request id is two keys, as in
    // ccusage (`${message.id}:${requestId}`). A record without a message id
    // has no key (0): every such record counts.
    let (key, group) = match (message_id, request_id) {
        (Some(m), Some(r)) => {
            let (group, key) = fnv1a_and_pair(m, r);
            (key, group)
        }
        (Some(m), None) => {
            let group = fnv1a(&[m]);
            (group, group)
        }
        _ => (0, 0),
    };
    Some(Event {
        kind: EventKind::Claude,
        ts,
        model: fp.intern_utf8(model),
        cwd: fp.intern_utf8(cwd.unwrap_or(b"")),
        tier: fp.intern_utf8(f.tier.as_deref().unwrap_or(b"")),
        session: fp.intern_utf8(session.unwrap_or(b"")),
        flags: bits,
        key,
        group,
        t,
        last_at: 0,
    })
}

/// The same line read by the crate's exact JSON parser instead of the
/// prefilter and the member picker: the oracle of the differential test
/// (`usage::parse::differential`). Only the reading differs; what a line
/// contributes is [`event_of`]'s either way.
#[cfg(test)]
pub(super) fn parse_line_exact(fp: &mut FileParse, line: &[u8]) {
    use crate::base::json::{self, Number, Object, Value};
    // A string member's bytes: the exact parser has already checked the
    // whole line as UTF-8, so `Cursor::bytes` and `Cursor::text` read alike.
    fn text(v: Option<&Value>) -> Option<Cow<'_, [u8]>> {
        v.and_then(Value::as_str)
            .map(|s| Cow::Borrowed(s.as_bytes()))
    }
    fn object(v: Option<&Value>) -> Option<&Object> {
        v.and_then(Value::as_object)
    }
    fn count(v: Option<&Value>) -> u64 {
        match v {
            Some(Value::Number(Number::Unsigned(n))) => *n,
            // `-0`: an integer, and not below 0, to JavaScript.
            Some(Value::Number(Number::Signed(0))) => 0,
            Some(Value::Number(Number::Float(f)))
                if f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e18 =>
            {
                *f as u64
            }
            _ => 0,
        }
    }
    let line = trim(line);
    if line.is_empty() {
        return;
    }
    let value = std::str::from_utf8(line)
        .ok()
        .and_then(|t| json::parse(t).ok());
    let Some(Value::Object(top)) = value else {
        fp.malformed += 1;
        return;
    };
    fn fields_of(record: &Object) -> Fields<'_> {
        let message = object(record.get("message"));
        let usage = message.and_then(|m| object(m.get("usage")));
        let split = usage
            .and_then(|u| object(u.get("cache_creation")))
            .map(|s| {
                (
                    count(s.get("ephemeral_5m_input_tokens")),
                    count(s.get("ephemeral_1h_input_tokens")),
                )
            });
        let of_usage = |k: &str| count(usage.and_then(|u| u.get(k)));
        let server_tools = usage.and_then(|u| object(u.get("server_tool_use")));
        Fields {
            kind: text(record.get("type")),
            timestamp: text(record.get("timestamp")),
            cwd: text(record.get("cwd")),
            session: text(record.get("sessionId")),
            request_id: text(record.get("requestId")),
            sidechain: record.get("isSidechain").and_then(Value::as_bool) == Some(true),
            message_id: message.and_then(|m| text(m.get("id"))),
            model: message.and_then(|m| text(m.get("model"))),
            has_usage: usage.is_some(),
            input: of_usage("input_tokens"),
            output: of_usage("output_tokens"),
            cache_read: of_usage("cache_read_input_tokens"),
            cache_write: of_usage("cache_creation_input_tokens"),
            split,
            web_searches: count(server_tools.and_then(|s| s.get("web_search_requests"))),
            tier: usage.and_then(|u| text(u.get("service_tier"))),
            speed: usage.and_then(|u| text(u.get("speed"))),
            geo: usage.and_then(|u| text(u.get("inference_geo"))),
        }
    }
    let nested = object(object(top.get("data")).and_then(|d| d.get("message"))).map(fields_of);
    if let Some(event) = event_of(fp, &fields_of(&top), nested.as_ref()) {
        fp.events.push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lines: &[&str]) -> FileParse {
        let mut fp = FileParse::default();
        for l in lines {
            parse_line(&mut fp, l.as_bytes());
        }
        fp
    }

    #[test]
    fn extracts_usage_with_the_one_hour_split() {
        let fp = parse(&[
            r#"{"type":"assistant","timestamp":"2026-11-29T10:00:00.000Z","cwd":"/p","requestId":"req_1","message":{"id":"msg_1","model":"claude-opus-4-6","usage":{"input_tokens":3,"output_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":50,"cache_creation":{"ephemeral_5m_input_tokens":20,"ephemeral_1h_input_tokens":30},"service_tier":"standard","speed":"fast","inference_geo":"us"}}}"#,
        ]);
        let e = &fp.events[0];
        assert_eq!(e.t, [3, 100, 20, 30, 10, 0]);
        assert_eq!(fp.string(e.model), "claude-opus-4-6");
        assert_eq!(fp.string(e.cwd), "/p");
        assert_eq!(fp.string(e.tier), "standard");
        assert_eq!(fp.string(e.session), "");
        assert_eq!(e.flags, flags::FAST | flags::HAS_SPEED | flags::GEO_US);
        assert_ne!(e.key, 0);
    }

    #[test]
    fn web_searches_are_the_sixth_counter() {
        let fp = parse(&[
            r#"{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","message":{"model":"m","usage":{"input_tokens":1,"output_tokens":2,"server_tool_use":{"web_fetch_requests":5,"web_search_requests":3}}}}"#,
            r#"{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","message":{"model":"m","usage":{"server_tool_use":{"web_search_requests":2},"input_tokens":0}}}"#,
            r#"{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","message":{"model":"m","usage":{"input_tokens":1,"server_tool_use":7}}}"#,
            r#"{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","message":{"model":"m","usage":{"input_tokens":1,"server_tool_use":{"web_search_requests":null}}}}"#,
        ]);
        let t: Vec<[u64; 6]> = fp.events.iter().map(|e| e.t).collect();
        // Fetches are free (their content is billed as input tokens); a
        // record with searches and no tokens still bills its searches.
        assert_eq!(
            t,
            [
                [1, 0, 0, 0, 2, 3],
                [0, 0, 0, 0, 0, 2],
                [1, 0, 0, 0, 0, 0],
                [1, 0, 0, 0, 0, 0]
            ]
        );
    }

    #[test]
    fn writes_without_a_split_are_five_minute_writes() {
        let fp = parse(&[
            r#"{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","message":{"model":"m","usage":{"input_tokens":1,"cache_creation_input_tokens":7}}}"#,
        ]);
        assert_eq!(fp.events[0].t, [1, 0, 7, 0, 0, 0]);
        assert_eq!(fp.events[0].key, 0);
    }

    #[test]
    fn escaped_member_names_and_values_are_read() {
        let plain = r#"{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","message":{"model":"m","usage":{"input_tokens":1,"output_tokens":2}}}"#;
        let escaped = plain
            .replace(r#""usage""#, r#""us\u0061ge""#)
            .replace(r#""assistant""#, r#""\u0061ssistant""#);
        let spaced = plain.replace("\":", "\" : ").replace(",\"", " ,\t\"");
        let want = parse(&[plain]);
        assert_eq!(want.events.len(), 1);
        assert_eq!(parse(&[&escaped]), want, "{escaped}");
        assert_eq!(parse(&[&spaced]), want, "{spaced}");
    }

    #[test]
    fn other_lines_skipped_and_malformed_counted() {
        let fp = parse(&[
            r#"{"type":"user","message":{"content":"usage assistant"}}"#,
            r#"{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","message":{"model":"<synthetic>","usage":{"input_tokens":0}}}"#,
            r#"{"type":"assistant","usage": oops}"#,
            "not json at all",
            "",
            r#"{"type":"assistant","timestamp":"bad","message":{"model":"m","usage":{"input_tokens":1}}}"#,
        ]);
        assert!(fp.events.is_empty());
        assert_eq!(fp.malformed, 2);
    }

    /// A subagent's assistant record as its own file has it, and the
    /// `progress` line of the session that ran it, nesting the same record.
    const SUBAGENT_RECORD: &str = r#"{"parentUuid":"a0","isSidechain":true,"userType":"external","cwd":"/p","sessionId":"s","version":"2.1.300","agentId":"a7","type":"assistant","message":{"id":"msg_s1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"found it"}],"stop_reason":null,"usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":300,"output_tokens":2,"service_tier":"standard"}},"requestId":"req_s1","uuid":"u9","timestamp":"2026-11-29T10:00:01.000Z"}"#;
    const PROGRESS_LINE: &str = r#"{"parentUuid":"p0","isSidechain":false,"userType":"external","cwd":"/p","sessionId":"s","version":"2.1.300","gitBranch":"main","type":"progress","data":{"message":{"type":"assistant","message":{"id":"msg_s1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"found it"}],"stop_reason":null,"usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":300,"output_tokens":2,"service_tier":"standard"}},"requestId":"req_s1","uuid":"u9","timestamp":"2026-11-29T10:00:01.000Z"},"normalizedMessages":[],"type":"agent_progress","prompt":"look for usage","agentId":"a7"},"toolUseID":"agent_msg_1","parentToolUseID":"toolu_1","uuid":"p1","timestamp":"2026-11-29T10:00:01.500Z"}"#;

    #[test]
    fn a_progress_line_gives_the_event_of_the_subagent_record_it_nests() {
        let fp = parse(&[PROGRESS_LINE]);
        assert_eq!(fp.events.len(), 1);
        let e = &fp.events[0];
        // The nested record's time (10:00:01), not the progress line's.
        assert_eq!(e.ts, 1_795_946_401);
        assert_eq!(e.t, [20, 300, 0, 0, 2, 0]);
        assert_eq!(fp.string(e.model), "claude-haiku-4-5");
        assert_eq!(fp.string(e.cwd), "/p");
        // The session that ran the subagent (the nested record names none).
        assert_eq!(fp.string(e.session), "s");
        assert_eq!(e.flags, flags::SIDECHAIN);
        assert_eq!(e.key, fnv1a(&[b"msg_s1", b"req_s1"]));
        assert_eq!(e.group, fnv1a(&[b"msg_s1"]));
        // The same event as the subagent file's own copy, so the global
        // dedupe keeps one of the two.
        assert_eq!(fp, parse(&[SUBAGENT_RECORD]));
    }

    #[test]
    fn a_progress_line_without_its_own_directory_takes_the_lines() {
        let line = r#"{"type":"progress","cwd":"/main","data":{"message":{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","requestId":"r","message":{"id":"m","model":"claude-haiku-4-5","usage":{"input_tokens":1}}}}}"#;
        let fp = parse(&[
            line,
            &line.replace(
                r#""type":"assistant","#,
                r#""type":"assistant","cwd":"/sub","#,
            ),
        ]);
        assert_eq!(fp.string(fp.events[0].cwd), "/main");
        assert_eq!(fp.string(fp.events[1].cwd), "/sub");
    }

    #[test]
    fn the_session_is_the_record_s_or_else_its_progress_line_s() {
        let line = r#"{"type":"progress","sessionId":"outer","data":{"message":{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","requestId":"r","message":{"id":"m","model":"claude-haiku-4-5","usage":{"input_tokens":1}}}}}"#;
        let own = line.replace(
            r#""type":"assistant","#,
            r#""type":"assistant","sessionId":"inner","#,
        );
        let record = r#"{"type":"assistant","sessionId":"7f3c\u002d9","timestamp":"2026-11-29T10:00:00Z","message":{"model":"m","usage":{"input_tokens":1}}}"#;
        let fp = parse(&[line, &own, record]);
        let sessions: Vec<&str> = fp.events.iter().map(|e| fp.string(e.session)).collect();
        assert_eq!(sessions, ["outer", "inner", "7f3c-9"]);
    }

    #[test]
    fn progress_lines_without_an_assistant_record_give_nothing() {
        let fp = parse(&[
            // A nested tool result (a user record), whose tool output
            // mentions usage.
            r#"{"type":"progress","data":{"message":{"type":"user","timestamp":"2026-11-29T10:00:00Z","message":{"role":"user","content":"assistant"},"toolUseResult":{"usage":{"input_tokens":5}}},"type":"agent_progress"}}"#,
            r#"{"type":"progress","data":{"type":"bash_progress","output":"\"usage\" \"assistant\""},"timestamp":"2026-11-29T10:00:00Z"}"#,
            r#"{"type":"progress","data":{"message":"assistant usage","type":"agent_progress"}}"#,
            // Only a progress line's nested record counts, not an
            // assistant record's `data`.
            r#"{"type":"assistant","data":{"message":{"type":"assistant","timestamp":"2026-11-29T10:00:00Z","message":{"model":"m","usage":{"input_tokens":1}}}}}"#,
        ]);
        assert!(fp.events.is_empty(), "{:?}", fp.events);
        assert_eq!(fp.malformed, 0);
    }

    #[test]
    fn roots_are_found_once() {
        let dir = crate::base::scratch::ScratchDir::new("claude-roots");
        let home = dir.join("home");
        std::fs::create_dir_all(home.join(".claude/projects")).unwrap();
        std::fs::create_dir_all(home.join(".config/claude/projects")).unwrap();
        std::fs::create_dir_all(dir.join("custom/projects")).unwrap();
        let custom = dir.join("custom");
        let both = format!("{},{}", custom.display(), home.join(".claude").display());
        let found = roots(Some(&both), &home, None);
        assert_eq!(
            found,
            vec![custom, home.join(".claude"), home.join(".config/claude")]
        );
    }
}

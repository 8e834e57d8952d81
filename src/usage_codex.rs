//! Codex rollouts: where they live, what each line contributes, and the
//! counting rule that turns re-emitted cumulative totals into requests.
//!
//! Codex re-emits `token_count` events with unchanged cumulative totals and
//! forked/subagent rollouts replay their parent's history, so summing
//! `last_token_usage` double counts. The parser keeps the facts per line
//! (resumable: the latest model/cwd/tier live in [`CodexMeta`]); the rule
//! in [`requests`] turns one file's events into counted deltas: per-response
//! `token_usage_record`s when the file has them, else positive deltas of
//! the cumulative totals over a never-lowered watermark that starts at the
//! fork parent's totals.

use std::path::{Path, PathBuf};

use crate::json::{self, Object, Value};
use crate::usage_row::{Event, EventKind, FileParse, Tokens, fnv1a};
use crate::usage_scan::{find, trim};

/// Codex homes (comma-separated `CODEX_HOME`, else `~/.codex`) and, in
/// each, the directories holding rollouts.
pub fn roots(codex_home: Option<&str>, home: &Path) -> Vec<PathBuf> {
    let homes: Vec<PathBuf> = match codex_home.filter(|h| !h.trim().is_empty()) {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .collect(),
        None => vec![home.join(".codex")],
    };
    let mut out = Vec::new();
    for h in homes {
        if (h.join("sessions").is_dir() || h.join("archived_sessions").is_dir())
            && !out.contains(&h)
        {
            out.push(h);
        }
    }
    out
}

/// Whether a file name is a rollout (`rollout-*.jsonl` or `.jsonl.zst`).
pub fn is_rollout_name(name: &str) -> bool {
    name.starts_with("rollout-") && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst"))
}

fn top_type(line: &[u8]) -> Option<&[u8]> {
    // The envelope's own "type" precedes "payload" (first ~99 bytes).
    let window = &line[..line.len().min(512)];
    let at = find(window, b"\"type\":\"")? + 8;
    let end = window[at..].iter().position(|&b| b == b'"')?;
    Some(&window[at..at + end])
}

fn counters(v: Option<&Value>) -> Option<[u64; 6]> {
    let o = v?.as_object()?;
    let n = |k: &str| {
        o.get(k)
            .and_then(Value::as_i64)
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0)
    };
    Some([
        n("input_tokens"),
        n("cached_input_tokens"),
        n("cache_write_input_tokens"),
        n("output_tokens"),
        n("reasoning_output_tokens"),
        n("total_tokens"),
    ])
}

/// Parses one complete line of a rollout into `fp`.
pub fn parse_line(fp: &mut FileParse, line: &[u8]) {
    let line = trim(line);
    if line.is_empty() {
        return;
    }
    if line[0] != b'{' || line[line.len() - 1] != b'}' {
        fp.malformed += 1;
        return;
    }
    let Some(kind) = top_type(line) else {
        return;
    };
    let wanted = match kind {
        b"session_meta" | b"turn_context" | b"token_usage_record" => true,
        b"event_msg" => {
            let head = &line[..line.len().min(512)];
            find(head, b"\"token_count\"").is_some()
                || find(head, b"\"thread_settings_applied\"").is_some()
        }
        _ => false,
    };
    if !wanted {
        return;
    }
    let Some(record) = std::str::from_utf8(line)
        .ok()
        .and_then(|text| json::parse(text).ok())
    else {
        fp.malformed += 1;
        return;
    };
    apply(fp, &record);
}

fn apply(fp: &mut FileParse, record: &Value) {
    let ts = record
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(crate::usage_time::parse_timestamp);
    let Some(payload) = record.get("payload").and_then(Value::as_object) else {
        return;
    };
    let str_of = |o: &Object, k: &str| o.get(k).and_then(Value::as_nonempty_str).map(str::to_owned);
    match record.get("type").and_then(Value::as_str) {
        Some("session_meta") => {
            if !fp.codex.thread_id.is_empty() {
                return; // Later session_meta lines are a parent's, replayed.
            }
            fp.codex.thread_id = str_of(payload, "id").unwrap_or_default();
            fp.codex.meta_ts = payload
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(crate::usage_time::parse_timestamp)
                .or(ts)
                .unwrap_or(0);
            let spawn_parent = payload
                .get("source")
                .and_then(|s| s.get("subagent"))
                .and_then(|s| s.get("thread_spawn"))
                .and_then(|s| s.get("parent_thread_id"))
                .and_then(Value::as_nonempty_str);
            fp.codex.subagent = spawn_parent.is_some();
            fp.codex.forked_from = str_of(payload, "forked_from_id").unwrap_or_default();
            if let Some(cwd) = str_of(payload, "cwd")
                && fp.codex.cwd == 0
            {
                fp.codex.cwd = fp.intern(&cwd);
            }
        }
        Some("turn_context") => {
            if let Some(model) = str_of(payload, "model") {
                fp.codex.model = fp.intern(&model);
            }
            if let Some(cwd) = str_of(payload, "cwd") {
                fp.codex.cwd = fp.intern(&cwd);
            }
        }
        Some("event_msg") => match payload.get("type").and_then(Value::as_str) {
            Some("thread_settings_applied") => {
                let settings = payload.get("thread_settings").and_then(Value::as_object);
                let tier = settings
                    .and_then(|s| str_of(s, "service_tier"))
                    .or_else(|| str_of(payload, "service_tier"));
                if let Some(tier) = tier {
                    fp.codex.tier = fp.intern(&tier);
                }
                if let Some(model) = settings.and_then(|s| str_of(s, "model"))
                    && fp.codex.model == 0
                {
                    fp.codex.model = fp.intern(&model);
                }
            }
            Some("token_count") => {
                let Some(ts) = ts else { return };
                if let Some(limits) = payload.get("rate_limits").and_then(Value::as_object) {
                    let id = limits.get("limit_id").and_then(Value::as_str);
                    if (id.is_none() || id == Some("codex")) && ts >= fp.codex.rate_limits_ts {
                        fp.codex.rate_limits = Value::Object(limits.clone()).to_json();
                        fp.codex.rate_limits_ts = ts;
                    }
                }
                let Some(info) = payload.get("info").and_then(Value::as_object) else {
                    return;
                };
                let total = counters(info.get("total_token_usage"));
                let last = counters(info.get("last_token_usage"));
                let (kind, t, last) = match (total, last) {
                    (Some(t), l) => (EventKind::CodexTotals, t, l.unwrap_or([0; 6])),
                    (None, Some(l)) => (EventKind::CodexLast, [0; 6], l),
                    (None, None) => return,
                };
                fp.events.push(Event {
                    kind,
                    ts,
                    model: fp.codex.model,
                    cwd: fp.codex.cwd,
                    tier: fp.codex.tier,
                    flags: 0,
                    key: 0,
                    group: 0,
                    t,
                    last,
                });
            }
            _ => {}
        },
        Some("token_usage_record") => {
            let (Some(ts), Some(usage)) = (ts, counters(payload.get("usage"))) else {
                return;
            };
            let key = payload
                .get("response_id")
                .and_then(Value::as_nonempty_str)
                .map(|id| fnv1a(&[b"codex-response", id.as_bytes()]))
                .unwrap_or(0);
            fp.events.push(Event {
                kind: EventKind::CodexRecord,
                ts,
                model: fp.codex.model,
                cwd: fp.codex.cwd,
                tier: fp.codex.tier,
                flags: 0,
                key,
                group: 0,
                t: usage,
                last: [0; 6],
            });
        }
        _ => {}
    }
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
pub fn normalise(c: [u64; 6]) -> Tokens {
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

fn max6(a: [u64; 6], b: [u64; 6]) -> [u64; 6] {
    std::array::from_fn(|i| a[i].max(b[i]))
}

/// The highest cumulative totals of `fp` observed at or before `at`.
pub fn totals_at(fp: &FileParse, at: i64) -> [u64; 6] {
    fp.events
        .iter()
        .filter(|e| e.kind == EventKind::CodexTotals && e.ts <= at)
        .fold([0; 6], |acc, e| max6(acc, e.t))
}

/// Outcome of [`requests`] for one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counted {
    pub requests: Vec<Request>,
    /// Events that contributed nothing (re-emitted totals, replays).
    pub duplicates: u64,
}

/// Applies the counting rule to one file. `baseline` is the fork parent's
/// cumulative totals at the fork point (`None` when there is no parent or
/// it could not be found).
pub fn requests(fp: &FileParse, baseline: Option<[u64; 6]>) -> Counted {
    let mut out = Counted::default();
    let push = |out: &mut Counted, e: &Event, c: [u64; 6], key: u64| {
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
    };
    if fp.events.iter().any(|e| e.kind == EventKind::CodexRecord) {
        for e in &fp.events {
            match e.kind {
                EventKind::CodexRecord => push(&mut out, e, e.t, e.key),
                _ => out.duplicates += 1,
            }
        }
        return out;
    }
    let mut watermark = baseline.unwrap_or([0; 6]);
    let mut skip_burst_second = None;
    if baseline.is_none() && (fp.codex.subagent || !fp.codex.forked_from.is_empty()) {
        // Replay burst: the first token_count events sharing one second carry
        // the parent's totals; they set the baseline and are not counted.
        let totals: Vec<&Event> = fp
            .events
            .iter()
            .filter(|e| e.kind == EventKind::CodexTotals)
            .collect();
        if totals.len() >= 2 && totals[0].ts == totals[1].ts {
            skip_burst_second = Some(totals[0].ts);
        }
    }
    let mut interleaved = false;
    let mut saw_totals = false;
    for e in &fp.events {
        match e.kind {
            EventKind::CodexTotals => {
                saw_totals = true;
                if Some(e.ts) == skip_burst_second {
                    watermark = max6(watermark, e.t);
                    out.duplicates += 1;
                    continue;
                }
                skip_burst_second = None;
                if (0..6).any(|i| e.t[i] < watermark[i]) {
                    interleaved = true;
                }
                let mut delta: [u64; 6] =
                    std::array::from_fn(|i| e.t[i].saturating_sub(watermark[i]));
                if interleaved && e.last.iter().any(|&n| n > 0) {
                    delta = std::array::from_fn(|i| delta[i].min(e.last[i]));
                }
                watermark = max6(watermark, e.t);
                push(&mut out, e, delta, 0);
            }
            EventKind::CodexLast if !saw_totals => push(&mut out, e, e.last, 0),
            _ => out.duplicates += 1,
        }
    }
    out
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

    #[test]
    fn fork_starts_from_parent_totals() {
        let fp = parse(&[
            r#"{"timestamp":"2026-11-29T11:00:00Z","type":"session_meta","payload":{"id":"child","forked_from_id":"t1","cwd":"/c"}}"#.into(),
            tc("2026-11-29T10:01:00Z", [250, 140, 30], [150, 100, 20]),
            tc("2026-11-29T11:05:00Z", [300, 150, 35], [50, 10, 5]),
        ]);
        assert_eq!(fp.codex.forked_from, "t1");
        let counted = requests(&fp, Some([250, 140, 0, 30, 0, 280]));
        assert_eq!(counted.requests.len(), 1);
        assert_eq!(counted.requests[0].tokens.input, 40);
        assert_eq!(counted.requests[0].tokens.cache_read, 10);
        assert_eq!(counted.requests[0].tokens.output, 5);
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
    fn interleaved_lineages_never_exceed_the_maximum() {
        let fp = parse(&[
            CTX.into(),
            tc("2026-11-29T10:00:00Z", [1000, 0, 100], [1000, 0, 100]),
            tc("2026-11-29T10:00:05Z", [200, 0, 20], [200, 0, 20]),
            tc("2026-11-29T10:00:09Z", [1100, 0, 110], [100, 0, 10]),
        ]);
        let counted = requests(&fp, None);
        let total: u64 = counted.requests.iter().map(|r| r.tokens.total()).sum();
        assert_eq!(total, 1210);
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
}

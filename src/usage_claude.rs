//! Claude Code transcripts: where they live and what one line contributes.
//!
//! Claude Code writes one assistant record per content block, repeating the
//! response's `usage` on each, and sidechains may replay parent messages;
//! this module only extracts facts per line (dedupe is global, in
//! `usage_aggregate`). Directories come from the record's `cwd`, never from
//! the lossy project key.

use std::path::{Path, PathBuf};

use crate::json::{self, Value};
use crate::usage_row::{Event, EventKind, FileParse, flags, fnv1a};
use crate::usage_scan::{find, trim};

/// Claude Code roots that exist and hold `projects/`: every entry of a
/// comma-separated `CLAUDE_CONFIG_DIR`, then `~/.claude`, then
/// `$XDG_CONFIG_HOME/claude` (default `~/.config/claude`). Duplicates removed.
pub fn roots(config_dir: Option<&str>, home: &Path, xdg_config: Option<&str>) -> Vec<PathBuf> {
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
    let mut roots: Vec<PathBuf> = Vec::new();
    for c in candidates {
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
    if find(line, b"\"usage\"").is_none() || find(line, b"\"assistant\"").is_none() {
        return;
    }
    let Some(record) = std::str::from_utf8(line)
        .ok()
        .and_then(|text| json::parse(text).ok())
    else {
        fp.malformed += 1;
        return;
    };
    if let Some(event) = event_of(fp, &record) {
        fp.events.push(event);
    }
}

fn count(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_i64)
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0)
}

fn event_of(fp: &mut FileParse, record: &Value) -> Option<Event> {
    if record.get("type")?.as_str()? != "assistant" {
        return None;
    }
    let message = record.get("message")?;
    let usage = message.get("usage")?.as_object()?;
    let ts = crate::usage_time::parse_timestamp(record.get("timestamp")?.as_str()?)?;
    let model = message.get("model").and_then(Value::as_nonempty_str)?;
    if model == "<synthetic>" {
        return None;
    }
    let input = count(usage.get("input_tokens"));
    let output = count(usage.get("output_tokens"));
    let cache_read = count(usage.get("cache_read_input_tokens"));
    let cache_write = count(usage.get("cache_creation_input_tokens"));
    let (mut write_5m, mut write_1h) = (cache_write, 0);
    if let Some(split) = usage.get("cache_creation").and_then(Value::as_object) {
        let five = count(split.get("ephemeral_5m_input_tokens"));
        let hour = count(split.get("ephemeral_1h_input_tokens"));
        write_1h = hour.min(cache_write.max(five + hour));
        write_5m = cache_write.max(five + hour) - write_1h;
    }
    let t = [input, cache_read, write_5m, write_1h, output, 0];
    if t.iter().all(|&n| n == 0) {
        return None;
    }
    let mut bits = 0;
    if record.get("isSidechain").and_then(Value::as_bool) == Some(true) {
        bits |= flags::SIDECHAIN;
    }
    match usage.get("speed").and_then(Value::as_str) {
        Some("fast") => bits |= flags::FAST | flags::HAS_SPEED,
        Some(_) => bits |= flags::HAS_SPEED,
        None => {}
    }
    if usage.get("inference_geo").and_then(Value::as_str) == Some("us") {
        bits |= flags::GEO_US;
    }
    let message_id = message.get("id").and_then(Value::as_nonempty_str);
    let request_id = record.get("requestId").and_then(Value::as_nonempty_str);
    let (key, group) = match (message_id, request_id) {
        (Some(m), Some(r)) => (fnv1a(&[m.as_bytes(), r.as_bytes()]), fnv1a(&[m.as_bytes()])),
        (Some(m), None) => (0, fnv1a(&[m.as_bytes()])),
        _ => (0, 0),
    };
    let tier = usage
        .get("service_tier")
        .and_then(Value::as_nonempty_str)
        .unwrap_or("");
    let cwd = record
        .get("cwd")
        .and_then(Value::as_nonempty_str)
        .unwrap_or("");
    Some(Event {
        kind: EventKind::Claude,
        ts,
        model: fp.intern(model),
        cwd: fp.intern(cwd),
        tier: fp.intern(tier),
        flags: bits,
        key,
        group,
        t,
        last: [0; 6],
    })
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
        assert_eq!(e.flags, flags::FAST | flags::HAS_SPEED | flags::GEO_US);
        assert_ne!(e.key, 0);
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

    #[test]
    fn roots_are_found_once() {
        let dir = std::env::temp_dir().join(format!("heeler-claude-roots-{}", std::process::id()));
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
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

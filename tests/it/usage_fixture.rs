//! A deterministic fixture tree of Claude Code and Codex transcripts with
//! every format quirk Usage must handle, written fresh by each test.

use std::fs;
use std::path::Path;

use heeler::usage::time::format_timestamp;

/// The fixture's "now": 2026-11-29T12:00:00Z.
pub const NOW: i64 = 1_795_953_600;
pub const HOUR: i64 = 3600;
pub const DAY: i64 = 86_400;

pub use crate::scratch::TempDir;

/// A fresh, empty directory under the system temp dir, removed with
/// everything in it when the guard is dropped (also when a test panics).
pub fn temp_dir(name: &str) -> TempDir {
    TempDir::new(&format!("heeler-{name}"))
}

pub fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

pub fn ts(unix: i64) -> String {
    format_timestamp(unix).replace('Z', ".000Z")
}

/// One Claude assistant record.
pub struct Claude<'a> {
    pub at: i64,
    pub msg: &'a str,
    pub req: &'a str,
    pub model: &'a str,
    pub cwd: &'a str,
    pub sidechain: bool,
    pub input: u64,
    pub output: u64,
    pub read: u64,
    /// (5m, 1h) split, or None for an unsplit `cache_creation_input_tokens`.
    pub split: Option<(u64, u64)>,
    pub write: u64,
    pub speed: Option<&'a str>,
}

impl Default for Claude<'_> {
    fn default() -> Self {
        Claude {
            at: NOW - HOUR,
            msg: "msg_0",
            req: "req_0",
            model: "claude-opus-4-6",
            cwd: "/home/dev/alpha",
            sidechain: false,
            input: 10,
            output: 10,
            read: 0,
            split: None,
            write: 0,
            speed: None,
        }
    }
}

impl Claude<'_> {
    pub fn line(&self) -> String {
        let (write, split) = match self.split {
            Some((five, hour)) => (
                five + hour,
                format!(
                    r#","cache_creation":{{"ephemeral_5m_input_tokens":{five},"ephemeral_1h_input_tokens":{hour}}}"#
                ),
            ),
            None => (self.write, String::new()),
        };
        // An empty `req` leaves `requestId` out, as Claude Code does behind
        // gateways and on some subagent paths.
        let request = match self.req {
            "" => String::new(),
            req => format!(r#","requestId":"{req}""#),
        };
        let speed = self
            .speed
            .map(|s| format!(r#","speed":"{s}""#))
            .unwrap_or_default();
        format!(
            r#"{{"parentUuid":null,"isSidechain":{},"userType":"external","cwd":"{}","sessionId":"s","version":"2.1.300","type":"assistant","message":{{"id":"{}","type":"message","role":"assistant","model":"{}","content":[{{"type":"text","text":"hello usage"}}],"stop_reason":null,"usage":{{"input_tokens":{},"cache_creation_input_tokens":{write},"cache_read_input_tokens":{},"output_tokens":{},"service_tier":"standard"{split}{speed}}}}}{request},"uuid":"u-{}","timestamp":"{}"}}"#,
            self.sidechain,
            self.cwd,
            self.msg,
            self.model,
            self.input,
            self.read,
            self.output,
            self.msg,
            ts(self.at)
        )
    }
}

pub fn user_line(at: i64) -> String {
    format!(
        r#"{{"type":"user","message":{{"role":"user","content":"please check usage"}},"cwd":"/home/dev/alpha","timestamp":"{}"}}"#,
        ts(at)
    )
}

pub fn session_meta(at: i64, id: &str, extra: &str) -> String {
    format!(
        r#"{{"timestamp":"{}","type":"session_meta","payload":{{"id":"{id}","timestamp":"{}","cwd":"/home/dev/alpha","originator":"codex_cli_rs","cli_version":"0.160.1"{extra}}}}}"#,
        ts(at),
        ts(at)
    )
}

pub fn turn_context(at: i64, model: &str, cwd: &str) -> String {
    format!(
        r#"{{"timestamp":"{}","type":"turn_context","payload":{{"cwd":"{cwd}","model":"{model}","effort":"medium"}}}}"#,
        ts(at)
    )
}

pub fn tier(at: i64, tier: &str) -> String {
    format!(
        r#"{{"timestamp":"{}","type":"event_msg","payload":{{"type":"thread_settings_applied","thread_settings":{{"service_tier":"{tier}"}}}}}}"#,
        ts(at)
    )
}

/// `[input, cached, output, reasoning]`
pub fn token_count(at: i64, total: [u64; 4], last: [u64; 4], limits: &str) -> String {
    let usage = |u: [u64; 4]| {
        format!(
            r#"{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":{},"total_tokens":{}}}"#,
            u[0],
            u[1],
            u[2],
            u[3],
            u[0] + u[2]
        )
    };
    let limits = if limits.is_empty() { "null" } else { limits };
    format!(
        r#"{{"timestamp":"{}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{},"last_token_usage":{},"model_context_window":258400}},"rate_limits":{limits}}}}}"#,
        ts(at),
        usage(total),
        usage(last)
    )
}

pub fn usage_record(at: i64, response: &str, u: [u64; 4]) -> String {
    format!(
        r#"{{"timestamp":"{}","type":"token_usage_record","payload":{{"thread_id":"t4","turn_id":"turn","response_id":"{response}","usage":{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":{},"total_tokens":{}}}}}}}"#,
        ts(at),
        u[0],
        u[1],
        u[2],
        u[3],
        u[0] + u[2]
    )
}

pub fn lines(list: &[String]) -> String {
    let mut s = list.join("\n");
    s.push('\n');
    s
}

pub fn zstd(text: &str) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(text.as_bytes(), ruzstd::encoding::CompressionLevel::Fastest)
}

/// Writes the whole fixture under `home` (a fake `$HOME`).
pub fn write_tree(home: &Path) {
    let alpha = home.join(".claude/projects/-home-dev-alpha");
    // s1: duplicate content-block records (largest wins), an unsplit write,
    // a fast-mode request (6x for Opus 4.6), a malformed line and a
    // torn last line.
    let mut s1 = lines(&[
        user_line(NOW - 3 * HOUR),
        Claude {
            at: NOW - 2 * HOUR,
            msg: "msg_a1",
            req: "req_a1",
            input: 10,
            output: 5,
            read: 1000,
            split: Some((100, 200)),
            ..Claude::default()
        }
        .line(),
        Claude {
            at: NOW - 2 * HOUR,
            msg: "msg_a1",
            req: "req_a1",
            input: 10,
            output: 50,
            read: 1000,
            split: Some((100, 200)),
            ..Claude::default()
        }
        .line(),
        Claude {
            at: NOW - DAY,
            msg: "msg_a2",
            req: "req_a2",
            model: "claude-sonnet-4-5-20250929",
            input: 100,
            output: 20,
            write: 40,
            ..Claude::default()
        }
        .line(),
        r#"{"type":"assistant","message":{"usage":{"input_tokens":}}}"#.to_string(),
        Claude {
            at: NOW - 30 * 60,
            msg: "msg_a3",
            req: "req_a3",
            input: 7,
            output: 3,
            speed: Some("fast"),
            ..Claude::default()
        }
        .line(),
    ]);
    s1.push_str(r#"{"type":"assistant","message":{"id":"msg_torn","usage":{"inp"#);
    write(&alpha.join("s1.jsonl"), &s1);
    // A subagent transcript: sidechain messages with their own ids count.
    write(
        &alpha.join("s1/subagents/agent-x.jsonl"),
        &lines(&[Claude {
            at: NOW - 90 * 60,
            msg: "msg_s1",
            req: "req_s1",
            model: "claude-haiku-4-5",
            sidechain: true,
            input: 4,
            output: 40,
            read: 400,
            ..Claude::default()
        }
        .line()]),
    );
    // s2: a sidechain replay of msg_a1 (new requestId), a resumed copy of
    // msg_a2, a request 8 days ago and one outside the window.
    write(
        &home.join(".claude/projects/-home-dev-beta/s2.jsonl"),
        &lines(&[
            Claude {
                at: NOW - 2 * HOUR + 60,
                msg: "msg_a1",
                req: "req_b9",
                sidechain: true,
                input: 10,
                output: 50,
                read: 1000,
                ..Claude::default()
            }
            .line(),
            Claude {
                at: NOW - DAY,
                msg: "msg_a2",
                req: "req_a2",
                model: "claude-sonnet-4-5-20250929",
                input: 100,
                output: 20,
                write: 40,
                ..Claude::default()
            }
            .line(),
            Claude {
                at: NOW - 8 * DAY,
                msg: "msg_b1",
                req: "req_b1",
                cwd: "/home/dev/beta",
                input: 1000,
                output: 100,
                split: Some((0, 5000)),
                ..Claude::default()
            }
            .line(),
            Claude {
                at: NOW - 40 * DAY,
                msg: "msg_b0",
                req: "req_b0",
                cwd: "/home/dev/beta",
                input: 99_999,
                ..Claude::default()
            }
            .line(),
        ]),
    );
    // A second root (~/.config/claude) with an unknown model.
    write(
        &home.join(".config/claude/projects/-home-dev-gamma/s3.jsonl"),
        &lines(&[Claude {
            at: NOW - 3 * DAY,
            msg: "msg_c1",
            req: "req_c1",
            model: "claude-unreleased-9",
            cwd: "/home/dev/gamma",
            input: 5,
            output: 5,
            ..Claude::default()
        }
        .line()]),
    );

    let day = home.join(".codex/sessions/2026/11/29");
    let limits = r#"{"limit_id":"codex","limit_name":null,"primary":{"used_percent":12.5,"window_minutes":300,"resets_at":1795960800},"secondary":{"used_percent":33.0,"window_minutes":10080,"resets_at":1796400000},"credits":null,"plan_type":"plus"}"#;
    // t1: re-emitted totals count once.
    write(
        &day.join("rollout-2026-11-29T08-00-00-t1.jsonl"),
        &lines(&[
            session_meta(NOW - 4 * HOUR, "t1", ""),
            turn_context(NOW - 4 * HOUR, "gpt-5.5", "/home/dev/alpha"),
            token_count(
                NOW - 4 * HOUR + 10,
                [1000, 600, 100, 40],
                [1000, 600, 100, 40],
                "",
            ),
            token_count(
                NOW - 4 * HOUR + 11,
                [1000, 600, 100, 40],
                [1000, 600, 100, 40],
                "",
            ),
            token_count(
                NOW - 3 * HOUR,
                [3000, 2000, 300, 100],
                [2000, 1400, 200, 60],
                limits,
            ),
        ]),
    );
    // t2: a fork of t1 replaying its history, then its own turn.
    write(
        &day.join("rollout-2026-11-29T09-30-00-t2.jsonl"),
        &lines(&[
            session_meta(NOW - 3 * HOUR + 1800, "t2", r#","forked_from_id":"t1""#),
            turn_context(NOW - 3 * HOUR + 1800, "gpt-5.5", "/home/dev/delta"),
            token_count(
                NOW - 4 * HOUR + 10,
                [1000, 600, 100, 40],
                [1000, 600, 100, 40],
                "",
            ),
            token_count(
                NOW - 3 * HOUR,
                [3000, 2000, 300, 100],
                [2000, 1400, 200, 60],
                "",
            ),
            token_count(
                NOW - 2 * HOUR,
                [3500, 2300, 350, 120],
                [500, 300, 50, 20],
                "",
            ),
        ]),
    );
    // t3: a subagent whose parent is not on disk: the replay burst is skipped.
    write(
        &day.join("rollout-2026-11-29T10-00-00-t3.jsonl"),
        &lines(&[
            session_meta(
                NOW - 2 * HOUR,
                "t3",
                r#","source":{"subagent":{"thread_spawn":{"parent_thread_id":"t-gone","depth":1}}}"#,
            ),
            session_meta(NOW - 5 * HOUR, "t-gone", ""),
            turn_context(NOW - 2 * HOUR, "gpt-5.5", "/home/dev/alpha"),
            token_count(NOW - 2 * HOUR, [800, 0, 80, 0], [800, 0, 80, 0], ""),
            token_count(NOW - 2 * HOUR, [900, 100, 90, 0], [100, 100, 10, 0], ""),
            token_count(NOW - HOUR, [1200, 300, 120, 10], [300, 200, 30, 10], ""),
        ]),
    );
    // t4: token_usage_record lines win over totals; a priority tier.
    write(
        &day.join("rollout-2026-11-29T11-00-00-t4.jsonl"),
        &lines(&[
            session_meta(NOW - HOUR, "t4", ""),
            turn_context(NOW - HOUR, "gpt-5.3-codex", "/home/dev/beta"),
            tier(NOW - HOUR, "priority"),
            token_count(NOW - HOUR + 5, [500, 100, 50, 5], [500, 100, 50, 5], ""),
            usage_record(NOW - HOUR + 5, "resp_1", [500, 100, 50, 5]),
            usage_record(NOW - HOUR + 50, "resp_2", [700, 500, 70, 0]),
            usage_record(NOW - HOUR + 50, "resp_2", [700, 500, 70, 0]),
            format!(
                r#"{{"timestamp":"{}","type":"compacted","payload":{{"message":"","latest_token_usage_record":{{"response_id":"resp_0","usage":{{"input_tokens":99999}}}}}}}}"#,
                ts(NOW - HOUR + 60)
            ),
        ]),
    );
    // A materialised archive: the plain file wins over its .zst sibling.
    let t6 = lines(&[
        session_meta(NOW - 6 * HOUR, "t6", ""),
        turn_context(NOW - 6 * HOUR, "gpt-5.5", "/home/dev/alpha"),
        token_count(NOW - 6 * HOUR + 5, [100, 0, 10, 0], [100, 0, 10, 0], ""),
    ]);
    write(&day.join("rollout-2026-11-29T06-00-00-t6.jsonl"), &t6);
    fs::write(
        day.join("rollout-2026-11-29T06-00-00-t6.jsonl.zst"),
        zstd(&t6),
    )
    .unwrap();
    // A compressed archive from nine days ago, and a corrupt one.
    let archived = home.join(".codex/archived_sessions");
    fs::create_dir_all(&archived).unwrap();
    fs::write(
        archived.join("rollout-2026-11-20T08-00-00-t5.jsonl.zst"),
        zstd(&lines(&[
            session_meta(NOW - 9 * DAY, "t5", ""),
            turn_context(NOW - 9 * DAY, "gpt-5", "/home/dev/alpha"),
            token_count(
                NOW - 9 * DAY + 60,
                [2000, 1000, 200, 50],
                [2000, 1000, 200, 50],
                "",
            ),
        ])),
    )
    .unwrap();
    fs::write(
        archived.join("rollout-2026-11-21T08-00-00-t7.jsonl.zst"),
        b"\x28\xb5\x2f\xfdnot really zstd",
    )
    .unwrap();
}

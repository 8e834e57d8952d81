//! The proof that the fast line readers lose nothing: real-shaped Claude
//! Code and Codex lines, re-serialised with random white space, member
//! order, string escapes and number spellings, must give exactly what the
//! crate's exact JSON parser (`base::json`) gives for them, through each
//! parser's `parse_line_exact` oracle, and exactly what the compact
//! original gives.
//!
//! The prefilters (`codex::wanted`, `claude::may_hold`) may skip a line
//! only when a full parse would find nothing in it either; a line they
//! drop wrongly shows up here as a missing event.

use std::fmt::Write as _;

use crate::base::json::{self, Number, Value};
use crate::base::test_rng::Rng;
use crate::usage::event::FileParse;
use crate::usage::parse::{claude, codex};

/// Text as transcripts carry it: words the prefilters look for, quotes,
/// backslashes, control characters, non-ASCII and astral characters.
fn text(rng: &mut Rng) -> String {
    const PARTS: &[&str] = &[
        "the usage of",
        "assistant",
        "\"type\":\"token_count\"",
        "{\"type\":\"event_msg\"}",
        "token_count",
        " \\u0074 ",
        "C:\\path\\",
        "line\nbreak\ttab",
        "\u{1b}[31mred\u{1b}[0m",
        "héllo 中文",
        "😀",
        "/usr/bin",
        "plain words here",
        "}]{[",
    ];
    let mut out = String::new();
    for _ in 0..rng.below(6) {
        out.push_str(rng.pick(PARTS));
        out.push(' ');
    }
    out
}

fn stamp(rng: &mut Rng) -> String {
    format!(
        "2026-11-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        20 + rng.below(9),
        rng.below(24),
        rng.below(60),
        rng.below(60),
        rng.below(1000)
    )
}

fn counters(rng: &mut Rng) -> String {
    let input = rng.below(200_000);
    let cached = rng.below(input + 1);
    let output = rng.below(5_000);
    let reasoning = rng.below(output + 1);
    let write = if rng.one_in(3) {
        format!(r#","cache_write_input_tokens":{}"#, rng.below(100))
    } else {
        String::new()
    };
    format!(
        r#"{{"input_tokens":{input},"cached_input_tokens":{cached}{write},"output_tokens":{output},"reasoning_output_tokens":{reasoning},"total_tokens":{}}}"#,
        input + output
    )
}

/// One Codex rollout as Codex writes it (compact), every line shape Usage
/// reads or must skip.
fn codex_file(rng: &mut Rng) -> Vec<String> {
    let mut lines = Vec::new();
    let source = match rng.below(3) {
        0 => r#""cli""#.to_owned(),
        1 => r#"{"subagent":{"thread_spawn":{"parent_thread_id":"t0","depth":1}}}"#.to_owned(),
        _ => r#"{"subagent":"review"}"#.to_owned(),
    };
    let fork = match rng.below(4) {
        0 => r#""forked_from_id":"t0","#.to_owned(),
        1 => format!(
            r#""forked_from_id":"t0","forked_from_ordinal_exclusive":{n},"history_base":{{"thread_id":"t{}","end_ordinal_exclusive":{n},"end_byte_offset":9000}},"#,
            rng.below(2),
            n = rng.below(40),
        ),
        _ => String::new(),
    };
    lines.push(format!(
        r#"{{"timestamp":"{}","type":"session_meta","payload":{{"id":"t{}",{fork}"timestamp":"{}","cwd":"/home/dev/{}","originator":"codex_cli_rs","cli_version":"0.50.0","source":{source},"base_instructions":{{"text":{}}},"git":{{"commit_hash":"abc","branch":"main"}}}}}}"#,
        stamp(rng),
        rng.below(1000),
        stamp(rng),
        rng.below(5),
        json::quote(&text(rng)),
    ));
    for _ in 0..rng.below(12) {
        let ts = stamp(rng);
        let line = match rng.below(10) {
            0 => format!(
                r#"{{"timestamp":"{ts}","type":"turn_context","payload":{{"cwd":"/w/{}","approval_policy":"on-request","sandbox_policy":{{"type":"workspace-write","network_access":false}},"model":"{}","effort":"medium","summary":"auto"}}}}"#,
                rng.below(4),
                rng.pick(&["gpt-5.5", "gpt-5.4-codex", "o3"]),
            ),
            1 => format!(
                r#"{{"timestamp":"{ts}","type":"event_msg","payload":{{"type":"thread_settings_applied","thread_settings":{{"service_tier":"{}","model":"gpt-5.4"}}}}}}"#,
                rng.pick(&["priority", "flex", ""]),
            ),
            2 => format!(
                r#"{{"timestamp":"{ts}","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":{}}}]}}}}"#,
                json::quote(&text(rng)),
            ),
            3 => format!(
                r#"{{"timestamp":"{ts}","type":"event_msg","payload":{{"type":"{}","message":{}}}}}"#,
                rng.pick(&["agent_message", "user_message", "exec_command_end"]),
                json::quote(&text(rng)),
            ),
            4 => format!(
                r#"{{"timestamp":"{ts}","type":"token_usage_record","payload":{{"response_id":"resp_{}","usage":{}}}}}"#,
                rng.below(50),
                counters(rng),
            ),
            5 => format!(
                r#"{{"timestamp":"{ts}","type":"compacted","payload":{{"message":"","latest_token_usage_record":{{"response_id":"resp_0","usage":{}}}}}}}"#,
                counters(rng),
            ),
            6 => format!(
                r#"{{"timestamp":"{ts}","type":"response_item","payload":{{"type":"function_call_output","call_id":"c1","output":{}}}}}"#,
                json::quote(&format!(
                    r#"{{"type":"event_msg","payload":{{"type":"token_count"}}}} {}"#,
                    text(rng)
                )),
            ),
            _ => {
                let info = match rng.below(4) {
                    0 => "null".to_owned(),
                    1 => format!(r#"{{"last_token_usage":{}}}"#, counters(rng)),
                    _ => format!(
                        r#"{{"total_token_usage":{},"last_token_usage":{},"model_context_window":272000}}"#,
                        counters(rng),
                        counters(rng)
                    ),
                };
                let limits = match rng.below(3) {
                    0 => "null".to_owned(),
                    _ => format!(
                        r#"{{"limit_id":"{}","primary":{{"used_percent":{}.5,"window_minutes":300,"resets_at":{}}},"secondary":null,"credits":null}}"#,
                        rng.pick(&["codex", "codex", "other"]),
                        rng.below(100),
                        1_795_000_000 + rng.below(100_000),
                    ),
                };
                format!(
                    r#"{{"timestamp":"{ts}","type":"event_msg","payload":{{"type":"token_count","info":{info},"rate_limits":{limits}}}}}"#
                )
            }
        };
        // Paginated rollouts carry an envelope ordinal on every line.
        let line = if rng.one_in(4) {
            line.replacen('{', &format!(r#"{{"ordinal":{},"#, rng.below(100)), 1)
        } else {
            line
        };
        lines.push(line);
    }
    lines
}

/// One Claude Code transcript as Claude Code writes it (compact).
fn claude_file(rng: &mut Rng) -> Vec<String> {
    let mut lines = Vec::new();
    for _ in 0..rng.below(12) {
        let ts = stamp(rng);
        let cwd = format!("/home/dev/{}", rng.below(5));
        let line = match rng.below(8) {
            0 => format!(
                r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"{cwd}","sessionId":"s1","version":"2.0.0","gitBranch":"main","type":"user","message":{{"role":"user","content":{}}},"uuid":"u1","timestamp":"{ts}"}}"#,
                json::quote(&text(rng)),
            ),
            1 => format!(
                r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"t1","type":"tool_result","content":{}}}]}},"toolUseResult":{{"usage":{{"input_tokens":5}}}},"timestamp":"{ts}"}}"#,
                json::quote(&text(rng)),
            ),
            2 => format!(
                r#"{{"type":"summary","summary":{},"leafUuid":"u2"}}"#,
                json::quote(&text(rng)),
            ),
            // A subagent's progress: its assistant record (usually without
            // a directory of its own) or a tool result, nested.
            3 | 4 => {
                let nested = if rng.one_in(3) {
                    format!(
                        r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"t2","type":"tool_result","content":{}}}]}},"toolUseResult":{{"usage":{{"input_tokens":7}}}},"uuid":"u4","timestamp":"{ts}"}}"#,
                        json::quote(&text(rng)),
                    )
                } else {
                    let record = claude_assistant(rng, &ts, &cwd);
                    if rng.one_in(2) {
                        record.replacen(&format!(r#""cwd":"{cwd}","#), "", 1)
                    } else {
                        record
                    }
                };
                format!(
                    r#"{{"parentUuid":"u1","isSidechain":false,"userType":"external","cwd":"{cwd}","sessionId":"s1","version":"2.0.0","type":"progress","data":{{"message":{nested},"normalizedMessages":[],"type":"agent_progress","prompt":{},"agentId":"a1"}},"toolUseID":"agent_msg_1","parentToolUseID":"toolu_1","uuid":"u3","timestamp":"{}"}}"#,
                    json::quote(&text(rng)),
                    stamp(rng),
                )
            }
            _ => claude_assistant(rng, &ts, &cwd),
        };
        lines.push(line);
    }
    lines
}

/// One Claude Code assistant record.
fn claude_assistant(rng: &mut Rng, ts: &str, cwd: &str) -> String {
    let split = if rng.one_in(2) {
        format!(
            r#","cache_creation":{{"ephemeral_5m_input_tokens":{},"ephemeral_1h_input_tokens":{}}}"#,
            rng.below(300),
            rng.below(300)
        )
    } else {
        String::new()
    };
    let extra = match rng.below(4) {
        0 => r#","speed":"fast","inference_geo":"us""#,
        1 => r#","speed":"standard""#,
        2 => r#","server_tool_use":{"web_search_requests":2,"web_fetch_requests":1}"#,
        _ => "",
    };
    let usage = if rng.one_in(8) {
        "null".to_owned()
    } else {
        format!(
            r#"{{"input_tokens":{},"cache_creation_input_tokens":{},"cache_read_input_tokens":{},"output_tokens":{},"service_tier":"standard"{split}{extra}}}"#,
            rng.below(100),
            rng.below(1000),
            rng.below(100_000),
            rng.below(4000)
        )
    };
    format!(
        r#"{{"parentUuid":"u1","isSidechain":{},"userType":"external","cwd":"{cwd}","sessionId":"s1","version":"2.0.0","message":{{"id":"msg_{}","type":"message","role":"assistant","model":"{}","content":[{{"type":"text","text":{}}}],"stop_reason":null,"usage":{usage}}},"requestId":"req_{}","type":"assistant","uuid":"u2","timestamp":"{ts}"}}"#,
        rng.one_in(4),
        rng.below(20),
        rng.pick(&["claude-opus-4-6", "claude-sonnet-4-5", "<synthetic>"]),
        json::quote(&text(rng)),
        rng.below(20),
    )
}

/// White space JSON allows inside a line (a newline would end it).
fn space(rng: &mut Rng, out: &mut String) {
    if rng.one_in(4) {
        for _ in 0..=rng.below(3) {
            out.push([' ', '\t', '\r'][rng.below(3) as usize]);
        }
    }
}

fn write_string(rng: &mut Rng, out: &mut String, s: &str) {
    // Half the strings keep the compact spelling (the fast readers' common
    // case); the others escape what they must in random forms and one
    // character in eight besides.
    if rng.one_in(2) {
        json::write_string(out, s);
        return;
    }
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str(if rng.one_in(3) { "\\u0022" } else { "\\\"" }),
            '\\' => out.push_str(if rng.one_in(3) { "\\u005C" } else { "\\\\" }),
            '\n' if rng.one_in(2) => out.push_str("\\n"),
            '\t' if rng.one_in(2) => out.push_str("\\t"),
            '/' if rng.one_in(2) => out.push_str("\\/"),
            c if (c as u32) < 0x20 || rng.one_in(8) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    if rng.one_in(2) {
                        let _ = write!(out, "\\u{unit:04x}");
                    } else {
                        let _ = write!(out, "\\u{unit:04X}");
                    }
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_number(rng: &mut Rng, out: &mut String, n: Number) {
    match n {
        // Integral spellings of the same count (JSON does not tell 12
        // from 12.0; JavaScript readers do not either).
        Number::Unsigned(n) if n < 1 << 53 => {
            let _ = match rng.below(5) {
                0 => write!(out, "{n}.0"),
                1 => write!(out, "{n}e0"),
                2 if n > 0 => write!(out, "{n}0E-1"),
                3 => write!(out, "{n}.000e+0"),
                _ => write!(out, "{n}"),
            };
        }
        Number::Unsigned(n) => {
            let _ = write!(out, "{n}");
        }
        Number::Signed(n) => {
            let _ = write!(out, "{n}");
        }
        Number::Float(f) => out.push_str(&json::format_js_number(f)),
    }
}

/// `value` as one line, with random white space, member order, string
/// escapes and integral number spellings.
fn reserialise(rng: &mut Rng, value: &Value, out: &mut String) {
    space(rng, out);
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(rng, out, *n),
        Value::String(s) => write_string(rng, out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reserialise(rng, item, out);
            }
            space(rng, out);
            out.push(']');
        }
        Value::Object(o) => {
            let mut members: Vec<(&str, &Value)> = o.iter().collect();
            for i in (1..members.len()).rev() {
                members.swap(i, rng.below(i as u64 + 1) as usize);
            }
            out.push('{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(rng, out);
                write_string(rng, out, k);
                space(rng, out);
                out.push(':');
                reserialise(rng, v, out);
            }
            space(rng, out);
            out.push('}');
        }
    }
    space(rng, out);
}

/// `fp` with its stored `rate_limits` in one spelling (the member picker
/// keeps the line's own text and member order, the oracle prints the
/// parsed value).
fn normalised(mut fp: FileParse) -> FileParse {
    if let Ok(v) = json::parse(&fp.codex.rate_limits) {
        fp.codex.rate_limits = v.to_json_sorted();
    }
    fp
}

type Reader = fn(&mut FileParse, &[u8]);
type Writer = fn(&mut Rng) -> Vec<String>;

/// Runs `files` re-serialised lines of each agent through the fast reader
/// and the oracle; returns how many lines were compared and how many
/// events they gave.
fn differential(seed: u64, files: usize) -> (usize, usize) {
    let mut rng = Rng(seed);
    let agents: [(Writer, Reader, Reader); 2] = [
        (codex_file, codex::parse_line, codex::parse_line_exact),
        (claude_file, claude::parse_line, claude::parse_line_exact),
    ];
    let (mut lines, mut events) = (0, 0);
    let mut out = String::new();
    for n in 0..files {
        let (file, fast, exact) = agents[n % 2];
        let compact = file(&mut rng);
        let (mut want, mut got, mut oracle) = Default::default();
        let mut shown = Vec::new();
        for line in &compact {
            let value = json::parse(line).unwrap_or_else(|e| panic!("{e:?}: {line}"));
            out.clear();
            reserialise(&mut rng, &value, &mut out);
            fast(&mut want, line.as_bytes());
            fast(&mut got, out.as_bytes());
            exact(&mut oracle, out.as_bytes());
            shown.push(out.clone());
        }
        lines += compact.len();
        events += want.events.len();
        let (want, got, oracle) = (normalised(want), normalised(got), normalised(oracle));
        assert_eq!(got, oracle, "seed {seed} file {n}:\n{shown:#?}");
        assert_eq!(got, want, "seed {seed} file {n}:\n{shown:#?}");
        assert_eq!(got.malformed, 0, "seed {seed} file {n}");
    }
    (lines, events)
}

#[test]
fn the_fast_readers_agree_with_the_exact_parser_on_re_serialised_lines() {
    let (lines, events) = differential(0x5eed_0001, 19_000);
    assert!(lines >= 100_000, "{lines} lines");
    assert!(events >= lines / 5, "{events} events in {lines} lines");
}

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
    // Behind gateways and on some subagent paths Claude Code leaves the
    // request id out (or writes it empty); rarely the message id too.
    let request = match rng.below(6) {
        0 => String::new(),
        1 => r#","requestId":"""#.to_owned(),
        _ => format!(r#","requestId":"req_{}""#, rng.below(20)),
    };
    let id = match rng.below(12) {
        0 => String::new(),
        _ => format!(r#""id":"msg_{}","#, rng.below(20)),
    };
    format!(
        r#"{{"parentUuid":"u1","isSidechain":{},"userType":"external","cwd":"{cwd}","sessionId":"s1","version":"2.0.0","message":{{{id}"type":"message","role":"assistant","model":"{}","content":[{{"type":"text","text":{}}}],"stop_reason":null,"usage":{usage}}}{request},"type":"assistant","uuid":"u2","timestamp":"{ts}"}}"#,
        rng.one_in(4),
        rng.pick(&["claude-opus-4-6", "claude-sonnet-4-5", "<synthetic>"]),
        json::quote(&text(rng)),
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
    // About 10,000 lines by default, 100,000 under `HEELER_DEEP=1`.
    let files = crate::base::depth::rounds(2_000, 19_000);
    let (lines, events) = differential(0x5eed_0001, files);
    assert!(lines >= files * 5, "{lines} lines");
    assert!(events >= lines / 5, "{events} events in {lines} lines");
}

// Malformed lines: the fast readers refuse what `JSON.parse` refuses.
//
// The spec's reader decodes a transcript as UTF-8 (a byte that is not
// becomes U+FFFD), splits it into lines and gives each to `JSON.parse`; a
// line it refuses counts nothing. Real-shaped lines are mutated the ways
// a torn write, a buggy writer or a hand edit breaks them (or keeps them
// whole), and each reader's decision is checked against an independent
// model of `JSON.parse`: serde_json reading the line as a `RawValue`,
// which checks the syntax only and so reads as `JSON.parse` does the three
// things a serde_json `Value` refuses (a lone surrogate escape, nesting
// deeper than 128, a number beyond `f64`'s range), after the same UTF-8
// decoding. `the_json_model_is_node_s_json_parse` checks that model
// against Node's own `JSON.parse` on the same kind of lines. A line both
// read is then read as the exact parser reads it (the values picked).
//
// Not generated: an escaped lone surrogate in a string heeler reads or a
// key of an object it walks (`JSON.parse` reads it; a Rust string cannot
// hold it, so heeler counts that line as malformed), and a raw newline
// (which ends the line, for the spec's reader as for heeler's).

/// Whether `JSON.parse` reads `line`, as the spec's reader gives it the
/// line (decoded as UTF-8, U+FFFD for what is not): serde_json's syntax
/// check, the value never built.
fn json_parse_accepts(line: &[u8]) -> bool {
    let text = String::from_utf8_lossy(line);
    serde_json::from_str::<&serde_json::value::RawValue>(&text).is_ok()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Token {
    Punct,
    Str,
    Num,
    Lit,
    Other,
}

/// A lenient lexer (any bytes): each token's range and kind.
fn tokens(b: &[u8]) -> Vec<(usize, usize, Token)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let kind = match b[i] {
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'{' | b'}' | b'[' | b']' | b',' | b':' => {
                i += 1;
                Token::Punct
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                Token::Str
            }
            b'-' | b'0'..=b'9' => {
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                Token::Num
            }
            b'a'..=b'z' | b'A'..=b'Z' => {
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    i += 1;
                }
                Token::Lit
            }
            _ => {
                i += 1;
                Token::Other
            }
        };
        out.push((start, i, kind));
    }
    out
}

fn pick_bytes<'a>(rng: &mut Rng, items: &[&'a [u8]]) -> &'a [u8] {
    items[rng.below(items.len() as u64) as usize]
}

/// A random token of `kind` (any token when the line has none of it).
fn token_of(rng: &mut Rng, line: &[u8], kind: Token) -> Option<(usize, usize)> {
    let all = tokens(line);
    let of: Vec<_> = all.iter().filter(|t| t.2 == kind).collect();
    let (s, e, _) = match (of.is_empty(), all.is_empty()) {
        (false, _) => *of[rng.below(of.len() as u64) as usize],
        (true, false) => all[rng.below(all.len() as u64) as usize],
        (true, true) => return None,
    };
    Some((s, e))
}

/// A place between two tokens (or at either end).
fn boundary(rng: &mut Rng, line: &[u8]) -> usize {
    let all = tokens(line);
    if all.is_empty() || rng.one_in(8) {
        return rng.below(line.len() as u64 + 1) as usize;
    }
    let (s, e, _) = all[rng.below(all.len() as u64) as usize];
    if rng.one_in(2) { s } else { e }
}

/// A place inside a string (after its opening quote, before its end).
fn inside_string(rng: &mut Rng, line: &[u8]) -> usize {
    match token_of(rng, line, Token::Str) {
        Some((s, e)) if e > s + 1 => s + 1 + rng.below((e - s - 1) as u64) as usize,
        Some((s, _)) => s,
        None => 0,
    }
}

/// One mutation of `line`: most break it as `JSON.parse` sees it, some
/// keep it whole (a valid escape, white space, an integral spelling).
fn mutate(rng: &mut Rng, line: &mut Vec<u8>) {
    match rng.below(16) {
        // Structure: a punctuation byte deleted, inserted, doubled or
        // replaced; a trailing comma; adjacent tokens swapped.
        0 => {
            if let Some((s, e)) = token_of(rng, line, Token::Punct) {
                line.drain(s..e);
            }
        }
        1 => {
            let at = boundary(rng, line);
            let b = pick_bytes(
                rng,
                &[b",", b":", b"{", b"}", b"[", b"]", b"\"", b",,", b"::"],
            );
            line.splice(at..at, b.iter().copied());
        }
        2 => {
            let closers: Vec<_> = tokens(line)
                .into_iter()
                .filter(|t| t.2 == Token::Punct && matches!(line[t.0], b'}' | b']'))
                .collect();
            if !closers.is_empty() {
                let at = closers[rng.below(closers.len() as u64) as usize].0;
                line.insert(at, b',');
            }
        }
        3 => {
            if let Some((s, e)) = token_of(rng, line, Token::Punct) {
                let b = pick_bytes(rng, &[b",", b":", b"{", b"}", b"[", b"]", b";", b"="]);
                line.splice(s..e, b.iter().copied());
            }
        }
        4 => {
            let all = tokens(line);
            if all.len() >= 2 {
                let k = rng.below(all.len() as u64 - 1) as usize;
                let ((a, b, _), (c, d, _)) = (all[k], all[k + 1]);
                let swapped = [&line[c..d], &line[b..c], &line[a..b]].concat();
                line.splice(a..d, swapped);
            }
        }
        // Numbers: the spellings JSON forbids, and some it allows.
        5 => {
            if let Some((s, e)) = token_of(rng, line, Token::Num) {
                let n = line[s..e].to_vec();
                let new: Vec<u8> = match rng.below(4) {
                    0 => [pick_bytes(rng, &[b"0", b"+", b".", b"-", b"00", b"--"]), &n].concat(),
                    1 => [
                        &n[..],
                        pick_bytes(
                            rng,
                            &[b".", b"e", b"e+", b"E-", b".0", b"e0", b"0", b"x", b"."],
                        ),
                    ]
                    .concat(),
                    _ => pick_bytes(
                        rng,
                        &[
                            b"-",
                            b".5",
                            b"01.5",
                            b"1e",
                            b"1.",
                            b"+1",
                            b"0x1F",
                            b"1_000",
                            b"Infinity",
                            b"-Infinity",
                            b"NaN",
                            b"1.2.3",
                            b"-0",
                            b"1e400",
                            b"-1e-400",
                            b"0.0",
                            b"1E+2",
                            b"012",
                            b"1.e3",
                            b"-.5",
                            b"0e",
                        ],
                    )
                    .to_vec(),
                };
                line.splice(s..e, new);
            }
        }
        // Literals misspelt, or swapped for another.
        6 => {
            if let Some((s, e)) = token_of(rng, line, Token::Lit) {
                let lit = line[s..e].to_vec();
                let new: Vec<u8> = match rng.below(3) {
                    0 if lit.len() > 1 => lit[..lit.len() - 1].to_vec(),
                    1 => [&lit[..], b"e"].concat(),
                    _ => pick_bytes(
                        rng,
                        &[
                            b"True",
                            b"NULL",
                            b"nil",
                            b"undefined",
                            b"tru",
                            b"nul",
                            b"fals",
                            b"true",
                            b"false",
                            b"null",
                        ],
                    )
                    .to_vec(),
                };
                line.splice(s..e, new);
            }
        }
        // A raw control byte in a string (never a newline, which ends the
        // line).
        7 => {
            let at = inside_string(rng, line);
            let mut c = rng.below(0x20) as u8;
            if c == b'\n' {
                c = 0x7f; // Allowed raw in a string.
            }
            line.insert(at, c);
        }
        // Escapes, bad and good.
        8 => {
            let at = inside_string(rng, line);
            let e = pick_bytes(
                rng,
                &[
                    b"\\x41",
                    b"\\u12",
                    b"\\u12G4",
                    b"\\U0041",
                    b"\\'",
                    b"\\a",
                    b"\\ ",
                    b"\\0",
                    b"\\u{41}",
                    b"\\",
                    b"\\n",
                    b"\\u00e9",
                    b"\\/",
                    b"\\\"",
                    b"\\\\",
                    b"\\uD83D\\uDE00",
                    b"\\t",
                    b"\\b\\f\\r",
                ],
            );
            line.splice(at..at, e.iter().copied());
        }
        // Torn: cut anywhere, sometimes closed again.
        9 => {
            let at = rng.below(line.len() as u64 + 1) as usize;
            line.truncate(at);
            if rng.one_in(2) {
                line.push(b'}');
            }
        }
        // Garbage before or after the value.
        10 => {
            let g = pick_bytes(
                rng,
                &[
                    b"x",
                    b"}",
                    b"{}",
                    b" 1",
                    b",",
                    b"\x0c",
                    b"\x0b",
                    b" ",
                    b"\r",
                    b"\t",
                    b"\xc2\xa0",
                    b"\xef\xbb\xbf",
                    b"\x00",
                    b"]",
                    b"\"\"",
                ],
            );
            if rng.one_in(2) {
                line.extend_from_slice(g);
            } else {
                line.splice(0..0, g.iter().copied());
            }
        }
        // White space JSON has and has not, between tokens.
        11 => {
            let at = boundary(rng, line);
            let w = pick_bytes(
                rng,
                &[
                    b" ",
                    b"\t",
                    b"\r",
                    b" \t\r ",
                    b"\x0b",
                    b"\x0c",
                    b"\xc2\xa0",
                    b"\xef\xbb\xbf",
                    b"\xe2\x80\xa8",
                    b"\xff",
                    b"\x00",
                ],
            );
            line.splice(at..at, w.iter().copied());
        }
        // Bytes that are not UTF-8 in a string (U+FFFD to the spec's
        // reader, so the line stays whole).
        12 => {
            let at = inside_string(rng, line);
            let b = pick_bytes(
                rng,
                &[
                    b"\xff",
                    b"\xc3",
                    b"\xe2\x80",
                    b"\xed\xa0\x80",
                    b"\xf4\x90\x80\x80",
                    b"\x80\x80",
                ],
            );
            line.splice(at..at, b.iter().copied());
        }
        // A key unquoted or single-quoted; a value removed.
        13 => {
            let all = tokens(line);
            let keys: Vec<_> = all
                .windows(2)
                .filter(|w| w[0].2 == Token::Str && w[1].2 == Token::Punct && line[w[1].0] == b':')
                .map(|w| w[0])
                .collect();
            if !keys.is_empty() {
                let (s, e, _) = keys[rng.below(keys.len() as u64) as usize];
                if e > s + 1 {
                    let body = line[s + 1..e - 1].to_vec();
                    let new = match rng.below(2) {
                        0 => body,
                        _ => [&b"'"[..], &body, b"'"].concat(),
                    };
                    line.splice(s..e, new);
                }
            }
        }
        14 => {
            let kind = *rng_pick_kind(rng);
            if let Some((s, e)) = token_of(rng, line, kind) {
                line.drain(s..e);
            }
        }
        // A value wrapped: in an array (whole), or half-open.
        _ => {
            let kind = *rng_pick_kind(rng);
            if let Some((s, e)) = token_of(rng, line, kind) {
                let (open, close): (&[u8], &[u8]) = match rng.below(4) {
                    0 => (b"[", b""),
                    1 => (b"{", b"}"),
                    _ => (b"[ ", b" ]"),
                };
                line.splice(e..e, close.iter().copied());
                line.splice(s..s, open.iter().copied());
            }
        }
    }
}

fn rng_pick_kind(rng: &mut Rng) -> &'static Token {
    const KINDS: [Token; 3] = [Token::Str, Token::Num, Token::Lit];
    &KINDS[rng.below(3) as usize]
}

/// What the spec's reader does with a line `JSON.parse` refuses: nothing,
/// but a Codex rollout's lines are numbered all the same (the ordinal of a
/// line without one).
fn codex_refused(fp: &mut FileParse, line: &[u8]) {
    if !crate::usage::parse::scan::trim(line).is_empty() {
        fp.codex.lines += 1;
    }
}

fn claude_refused(_: &mut FileParse, _: &[u8]) {}

/// One agent's readers: its writer, fast reader, exact reader and what a
/// refused line does.
struct Agent {
    name: &'static str,
    file: Writer,
    fast: Reader,
    exact: Reader,
    refused: Reader,
}

const AGENTS: [Agent; 2] = [
    Agent {
        name: "codex",
        file: codex_file,
        fast: codex::parse_line,
        exact: codex::parse_line_exact,
        refused: codex_refused,
    },
    Agent {
        name: "claude",
        file: claude_file,
        fast: claude::parse_line,
        exact: claude::parse_line_exact,
        refused: claude_refused,
    },
];

/// Reads `line` after `before` with the fast reader and with the oracle:
/// when `accepted` (what `JSON.parse` decides), the exact reader on the
/// line as the spec's reader decodes it, and the same malformed count;
/// else nothing but the line's number, and at most one malformed line (a
/// line the prefilters skip is not counted). The fast reader's state after
/// it, or what differs.
fn check_line(
    agent: &Agent,
    before: &FileParse,
    line: &[u8],
    accepted: bool,
) -> Result<FileParse, String> {
    let mut got = before.clone();
    (agent.fast)(&mut got, line);
    let counted = got.malformed - before.malformed;
    let mut want = before.clone();
    if accepted {
        (agent.exact)(&mut want, String::from_utf8_lossy(line).as_bytes());
    } else {
        (agent.refused)(&mut want, line);
        want.malformed += counted.min(1);
    }
    let (g, w) = (normalised(got.clone()), normalised(want));
    if g == w {
        return Ok(got);
    }
    let verdict = if accepted { "reads" } else { "refuses" };
    Err(format!(
        "JSON.parse {verdict} it; fast reader: {g:?}\noracle: {w:?}"
    ))
}

/// The shortest line (bytes removed while the check still fails) that
/// `check_line` fails after `before`, with the validator's decision for
/// each candidate.
fn minimal(
    agent: &Agent,
    before: &FileParse,
    line: &[u8],
    accepts: &dyn Fn(&[u8]) -> bool,
) -> Vec<u8> {
    let fails = |l: &[u8]| check_line(agent, before, l, accepts(l)).is_err();
    let mut line = line.to_vec();
    let mut chunk = line.len().next_power_of_two();
    while chunk > 0 {
        let mut at = 0;
        while at < line.len() {
            let end = (at + chunk).min(line.len());
            let shorter = [&line[..at], &line[end..]].concat();
            if fails(&shorter) {
                line = shorter;
            } else {
                at += chunk;
            }
        }
        chunk /= 2;
    }
    line
}

/// Mutated lines of `files` real-shaped files, alternately Codex and
/// Claude: each line mutated one to three times with probability one
/// half (so a file's later lines are read after broken ones), each file's
/// lines in order. Calls `each(agent, file, lines)`.
fn mutated_files(seed: u64, files: usize, mut each: impl FnMut(&Agent, usize, Vec<Vec<u8>>)) {
    let mut rng = Rng(seed);
    for n in 0..files {
        let agent = &AGENTS[n % 2];
        let lines = (agent.file)(&mut rng)
            .into_iter()
            .map(|l| {
                let mut line = l.into_bytes();
                if rng.one_in(2) {
                    let original = line.clone();
                    for _ in 0..=rng.below(3) {
                        mutate(&mut rng, &mut line);
                    }
                    // A raw newline ends a line: never inside one.
                    line.retain(|&b| b != b'\n');
                    // Nor a lone surrogate (a pair split by a mutation).
                    if has_lone_surrogate(&line) {
                        line = original;
                    }
                }
                line
            })
            .collect();
        each(agent, n, lines);
    }
}

/// Whether a string of `line` holds an escaped UTF-16 surrogate that is
/// not half of a pair (`\ud800`, or a `\udc00` on its own).
fn has_lone_surrogate(line: &[u8]) -> bool {
    let unit = |at: usize| {
        let hex = line.get(at..at + 6)?;
        let text = std::str::from_utf8(hex.get(2..)?).ok()?;
        (hex.starts_with(b"\\u")).then(|| u16::from_str_radix(text, 16).ok())?
    };
    let (mut i, mut in_string) = (0, false);
    while i < line.len() {
        match (line[i], in_string) {
            (b'"', _) => in_string = !in_string,
            (b'\\', true) => {
                match unit(i) {
                    Some(0xd800..=0xdbff) => {
                        if !matches!(unit(i + 6), Some(0xdc00..=0xdfff)) {
                            return true;
                        }
                        i += 6;
                    }
                    Some(0xdc00..=0xdfff) => return true,
                    _ => {}
                }
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// Runs the check over `files` mutated files; returns (lines, refused).
fn malformed_differential(seed: u64, files: usize) -> (usize, usize) {
    let (mut lines, mut refused) = (0, 0);
    mutated_files(seed, files, |agent, n, file| {
        let mut fp = FileParse::default();
        for line in &file {
            let accepted = json_parse_accepts(line);
            lines += 1;
            refused += usize::from(!accepted);
            match check_line(agent, &fp, line, accepted) {
                Ok(next) => fp = next,
                Err(_) => {
                    let small = minimal(agent, &fp, line, &json_parse_accepts);
                    let why = check_line(agent, &fp, &small, json_parse_accepts(&small))
                        .err()
                        .unwrap_or_default();
                    panic!(
                        "seed {seed:#x} file {n} ({}): minimal line {:?}\n(whole line {:?})\n{why}",
                        agent.name,
                        String::from_utf8_lossy(&small),
                        String::from_utf8_lossy(line),
                    );
                }
            }
        }
    });
    (lines, refused)
}

/// Rounds of the malformed-line check: `default_files` (a second or less
/// by default, more under `HEELER_DEEP=1`), or `HEELER_JSON_FILES=<files>`
/// (and `HEELER_JSON_SEED=<n>` for another seed).
fn rounds_from_env(default_files: usize) -> (u64, usize) {
    let seed = std::env::var("HEELER_JSON_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0029);
    let files = std::env::var("HEELER_JSON_FILES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_files);
    (seed, files)
}

#[test]
fn the_fast_readers_refuse_what_json_parse_refuses() {
    let (seed, files) = rounds_from_env(crate::base::depth::rounds(2_000, 7_000));
    let (lines, refused) = malformed_differential(seed, files);
    println!("malformed lines: seed {seed:#x}, {files} files, {lines} lines, {refused} refused");
    assert!(refused >= lines / 5, "{refused} of {lines} refused");
    assert!(
        lines - refused >= lines / 3,
        "{} of {lines} read",
        lines - refused
    );
}

/// `JSON.parse` reading what the spec's reader gives it: stdin decoded as
/// UTF-8 (U+FFFD for what is not), split at `\n`, one verdict per line.
const NODE_JSON_PARSE: &str = "const c=[];process.stdin.on('data',d=>c.push(d));\
process.stdin.on('end',()=>process.stdout.write(Buffer.concat(c).toString('utf8')\
.split('\\n').map(l=>{try{JSON.parse(l);return '1'}catch(e){return '0'}}).join('')));";

/// Node's `JSON.parse` verdict on each of `lines` (none holds a `\n`), or
/// `None` when there is no `node` to run.
fn node_json_parse(lines: &[&[u8]]) -> Option<Vec<bool>> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = match Command::new("node")
        .args(["-e", NODE_JSON_PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("node: {e}"),
    };
    let input = lines.join(&b'\n');
    let mut stdin = child.stdin.take().expect("piped stdin");
    // Node reads as it goes, and writes only after its input ends.
    stdin.write_all(&input).expect("node's stdin");
    drop(stdin);
    let out = child.wait_with_output().expect("node ran");
    assert!(out.status.success(), "node failed: {:?}", out.status);
    let verdicts: Vec<bool> = out.stdout.iter().map(|&b| b == b'1').collect();
    assert_eq!(verdicts.len(), lines.len(), "one verdict per line");
    Some(verdicts)
}

/// The model of `JSON.parse` above is Node's own on the same kind of
/// mutated lines, and so are the fast readers' decisions (checked line by
/// line with Node's verdicts). Node is needed: without it the test says
/// SKIPPED, and fails under `HEELER_REQUIRE_ALL=1` or `CI=true`.
#[test]
fn the_json_model_is_node_s_json_parse() {
    let (seed, files) = rounds_from_env(crate::base::depth::rounds(1_000, 3_000));
    let mut all = Vec::new();
    mutated_files(seed ^ 0x6e6f_6465, files, |_, n, lines| {
        all.push((n, lines))
    });
    let flat: Vec<&[u8]> = all
        .iter()
        .flat_map(|(_, lines)| lines.iter().map(Vec::as_slice))
        .collect();
    let Some(node) = node_json_parse(&flat) else {
        let required = ["HEELER_REQUIRE_ALL", "CI"]
            .iter()
            .any(|v| std::env::var(v).is_ok_and(|v| v == "1" || v == "true"));
        assert!(
            !required,
            "HEELER_REQUIRE_ALL=1 or CI=true, so this test may not be skipped: no node on PATH"
        );
        println!("SKIPPED: no node on PATH to run JSON.parse");
        return;
    };
    let mut verdicts = node.into_iter();
    let (mut lines, mut refused) = (0, 0);
    for (n, file) in &all {
        let agent = &AGENTS[n % 2];
        let mut fp = FileParse::default();
        for line in file {
            let accepted = verdicts.next().expect("a verdict per line");
            let shown = String::from_utf8_lossy(line);
            assert_eq!(
                json_parse_accepts(line),
                accepted,
                "seed {seed:#x} file {n}: the model and Node's JSON.parse differ on {shown:?}"
            );
            fp = check_line(agent, &fp, line, accepted)
                .unwrap_or_else(|why| panic!("seed {seed:#x} file {n}: {shown:?}\n{why}"));
            lines += 1;
            refused += usize::from(!accepted);
        }
    }
    println!("JSON.parse (node): seed {seed:#x}, {files} files, {lines} lines, {refused} refused");
    assert!(refused >= lines / 5, "{refused} of {lines} refused");
}

//! `recent-v1.json`: the aggregate's slots of the last two days, summed
//! over models, directories and sessions (one row per slot and agent), which the
//! worker writes beside each snapshot so the statusline (run by shell
//! prompts and status bars, many times a minute) reads a few kilobytes
//! instead of decoding the whole aggregate state. The statusline needs no
//! more: today's cost, the blocks' burn rate and the limits; with
//! `--dir` it reads the state. Derived, replaced atomically, and tied to
//! its snapshot by `generated_at`: a file that does not match, is of
//! another version, or does not parse, is ignored and the full state read.

use crate::usage::aggregate::{SlotAcc, SlotKey, Text};
use crate::usage::event::Agent;
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::store::rows::{acc_from, acc_numbers};

/// The sums of a slot the file writes as decimal strings: the state's
/// numbers without the two times, which are written as numbers.
const COUNTS: usize = 10;

/// Schema version of the file (2: rows summed over models and
/// directories, which are written empty).
pub const VERSION: i64 = 2;
/// How far back the file holds slots: a local day in any zone (up to 26
/// hours) plus a 5-hour block before it, rounded up.
pub(crate) const SPAN: i64 = 2 * 86_400;

/// The file's text: the slots from `now - SPAN` on, summed per slot and
/// agent (pure).
pub fn encode<'a>(
    generated_at: i64,
    now: i64,
    slots: impl Iterator<Item = (&'a SlotKey, &'a SlotAcc)>,
) -> String {
    let mut summed: std::collections::BTreeMap<(i64, Agent), SlotAcc> = Default::default();
    for ((slot, agent, ..), acc) in slots.filter(|(k, acc)| k.0 >= now - SPAN && acc.requests > 0) {
        summed.entry((*slot, *agent)).or_default().merge(acc);
    }
    // Written straight into the text (the worker writes it on every
    // refresh): the same bytes as the generic writer's, which a test
    // holds it to.
    use std::fmt::Write;
    let mut out = String::with_capacity(64 + summed.len() * 200);
    let _ = write!(
        out,
        r#"{{"v":{VERSION},"generated_at":{generated_at},"slots":["#
    );
    for (i, ((slot, agent), a)) in summed.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, r#"[{slot},"{}","","",["#, agent.name());
        for (j, n) in acc_numbers(a)[..COUNTS].iter().enumerate() {
            let comma = if j > 0 { "," } else { "" };
            let _ = write!(out, r#"{comma}"{n}""#);
        }
        let _ = write!(out, "],{},{}]", a.first_ts, a.last_ts);
    }
    out.push_str("]}");
    out
}

/// The slots of a file written for the snapshot of `generated_at`; `None`
/// when it is another snapshot's, or not such a file. Read in one pass
/// with the transcripts' cursor, no JSON tree built (the statusline runs
/// many times a minute, and this file is most of what it reads).
pub fn decode(text: &str, generated_at: i64) -> Option<Vec<(SlotKey, SlotAcc)>> {
    let mut c = Cursor::new(text.as_bytes());
    let (mut version, mut at, mut slots) = (None, None, None);
    c.object(|key, c| {
        match key {
            b"v" => version = Some(integer(c)?),
            b"generated_at" => at = Some(integer(c)?),
            b"slots" => slots = Some(read_slots(c)?),
            _ => c.skip()?,
        }
        Some(())
    })?;
    if !c.at_end() || version != Some(VERSION) || at != Some(generated_at) {
        return None;
    }
    let mut out = slots?;
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Some(out)
}

/// An integer as the writer writes it (digits, a sign before them).
fn integer(c: &mut Cursor) -> Option<i64> {
    std::str::from_utf8(c.raw()?).ok()?.parse().ok()
}

/// The `slots` array: rows of slot, agent, model, directory, the counts
/// (decimal strings) and the first and last request's time.
fn read_slots(c: &mut Cursor) -> Option<Vec<(SlotKey, SlotAcc)>> {
    let empty = Text::from("");
    let text = |s: std::borrow::Cow<str>| match s.is_empty() {
        true => empty.clone(),
        false => Text::from(&*s),
    };
    let mut out = Vec::new();
    c.array(|c| {
        let (mut slot, mut agent, mut names) = (None, None, Vec::with_capacity(2));
        let (mut n, mut counts, mut fields) = ([0u64; 12], 0, 0);
        c.array(|c| {
            match fields {
                0 => slot = Some(integer(c)?),
                1 => agent = Some(Agent::from_name(&c.string()??)?),
                2 | 3 => names.push(text(c.string()??)),
                4 => c.array(|c| {
                    let count = c.string()??.parse().ok()?;
                    *n.get_mut(counts).filter(|_| counts < COUNTS)? = count;
                    counts += 1;
                    Some(())
                })?,
                5 | 6 => n[COUNTS + fields - 5] = integer(c)? as u64,
                _ => return None,
            }
            fields += 1;
            Some(())
        })?;
        let [model, cwd] = <[Text; 2]>::try_from(names).ok()?;
        if fields != 7 || counts != COUNTS {
            return None;
        }
        out.push(((slot?, agent?, model, cwd, empty.clone()), acc_from(n)));
        Some(())
    })?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::json::{Object, Value};

    /// [`encode`] as the generic JSON writer writes it: the oracle.
    fn encode_generic(generated_at: i64, summed: &[((i64, Agent), SlotAcc)]) -> String {
        let list = summed
            .iter()
            .map(|((slot, agent), a)| {
                Value::Array(vec![
                    Value::from(*slot),
                    Value::from(agent.name()),
                    Value::from(""),
                    Value::from(""),
                    Value::Array(
                        acc_numbers(a)[..COUNTS]
                            .iter()
                            .map(|n| Value::from(n.to_string()))
                            .collect(),
                    ),
                    Value::from(a.first_ts),
                    Value::from(a.last_ts),
                ])
            })
            .collect();
        Value::Object(
            Object::new()
                .with("v", VERSION)
                .with("generated_at", generated_at)
                .with("slots", Value::Array(list)),
        )
        .to_json()
    }

    /// The file read with the generic JSON parser into a tree: the
    /// oracle [`decode`] is held to.
    fn decode_generic(text: &str, generated_at: i64) -> Option<Vec<(SlotKey, SlotAcc)>> {
        let v = crate::base::json::parse(text).ok()?;
        if v.get("v")?.as_i64()? != VERSION || v.get("generated_at")?.as_i64()? != generated_at {
            return None;
        }
        let mut out = Vec::new();
        for s in v.get("slots")?.as_array()? {
            let s = s.as_array()?;
            let [slot, agent, model, cwd, counts, first, last] = s else {
                return None;
            };
            let agent = Agent::from_name(agent.as_str()?)?;
            let counts = counts.as_array()?;
            if counts.len() != COUNTS {
                return None;
            }
            let mut n = [0u64; 12];
            for (n, c) in n.iter_mut().zip(counts) {
                *n = c.as_str()?.parse().ok()?;
            }
            n[COUNTS] = first.as_i64()? as u64;
            n[COUNTS + 1] = last.as_i64()? as u64;
            out.push((
                (
                    slot.as_i64()?,
                    agent,
                    Text::from(model.as_str()?),
                    Text::from(cwd.as_str()?),
                    Text::from(""),
                ),
                acc_from(n),
            ));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Some(out)
    }

    #[test]
    fn the_cursor_reads_what_the_generic_parser_reads() {
        // Random files and every one-byte change to a small one: both
        // readers agree on the slots or both refuse.
        let now = 1_795_953_600;
        let acc = |n: u64| SlotAcc {
            requests: n,
            cost_pico: n * 7,
            unpriced_tokens: n % 3,
            first_ts: now - 800,
            last_ts: now - 10,
            ..SlotAcc::default()
        };
        let keys: Vec<SlotKey> = (0..30)
            .map(|i| {
                let agent = [Agent::Claude, Agent::Codex][i % 2];
                (
                    now - 900 * (i as i64 / 2 + 1),
                    agent,
                    "m".into(),
                    "/d".into(),
                    "s".into(),
                )
            })
            .collect();
        let accs: Vec<SlotAcc> = (0..30).map(|i| acc(i + 1)).collect();
        let text = encode(now, now, keys.iter().zip(&accs));
        assert_eq!(decode(&text, now), decode_generic(&text, now));
        assert_eq!(decode(&text, now).map(|d| d.len()), Some(30));
        let small = encode(now, now, keys.iter().zip(&accs).take(1));
        let bytes = small.as_bytes();
        for i in 0..bytes.len() {
            for b in [b' ', b'"', b'0', b'9', b',', b']', b'}', b'-', b'x'] {
                let mut changed = bytes.to_vec();
                changed[i] = b;
                let Ok(changed) = String::from_utf8(changed) else {
                    continue;
                };
                assert_eq!(
                    decode(&changed, now),
                    decode_generic(&changed, now),
                    "{changed}"
                );
            }
        }
    }

    #[test]
    fn the_text_is_the_generic_writer_s_byte_for_byte() {
        let now = 1_764_400_000;
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % m
        };
        for rows in [0, 1, 5, 40] {
            let mut slots: Vec<(SlotKey, SlotAcc)> = Vec::new();
            for r in 0..rows {
                let agent = if next(2) == 0 {
                    Agent::Claude
                } else {
                    Agent::Codex
                };
                let slot = now - 900 * (r as i64 + 1);
                let acc = SlotAcc {
                    requests: 1 + next(50),
                    cost_pico: next(u64::MAX / 2),
                    unpriced_tokens: next(3),
                    first_ts: slot + next(900) as i64,
                    last_ts: slot + 899,
                    ..SlotAcc::default()
                };
                slots.push(((slot, agent, "m".into(), "/d".into(), "".into()), acc));
            }
            slots.sort_by(|a, b| a.0.cmp(&b.0));
            let mut summed: std::collections::BTreeMap<(i64, Agent), SlotAcc> = Default::default();
            for (k, acc) in &slots {
                summed.entry((k.0, k.1)).or_default().merge(acc);
            }
            let summed: Vec<_> = summed.into_iter().collect();
            let text = encode(now - 5, now, slots.iter().map(|(k, a)| (k, a)));
            assert_eq!(text, encode_generic(now - 5, &summed));
            assert_eq!(decode(&text, now - 5).map(|d| d.len()), Some(summed.len()));
        }
    }
    use crate::usage::event::Tokens;

    #[test]
    fn recent_slots_round_trip_and_a_stale_file_is_ignored() {
        let now = 1_795_953_600;
        let acc = SlotAcc {
            requests: 2,
            tokens: Tokens {
                input: 1,
                cache_read: 2,
                cache_write_5m: 3,
                cache_write_1h: 4,
                output: 5,
                reasoning: 6,
            },
            cost_pico: u64::MAX,
            unpriced_tokens: 7,
            unpriced_requests: 8,
            first_ts: now - 100,
            last_ts: now - 50,
        };
        let new: SlotKey = (
            now - 900,
            Agent::Codex,
            "gpt-5.5".into(),
            "/a \"b\"".into(),
            "t".into(),
        );
        let old: SlotKey = (
            now - SPAN - 900,
            Agent::Claude,
            "m".into(),
            "/c".into(),
            "s".into(),
        );
        let text = encode(now, now, [(&old, &acc), (&new, &acc)].into_iter());
        let summed: SlotKey = (now - 900, Agent::Codex, "".into(), "".into(), "".into());
        assert_eq!(decode(&text, now), Some(vec![(summed, acc)]));
        assert_eq!(decode(&text, now + 1), None);
        assert_eq!(decode(&text[..text.len() - 1], now), None);
        // The file's text, written by hand: counts as decimal strings in
        // the state's order, the times as numbers.
        assert_eq!(
            text,
            format!(
                r#"{{"v":2,"generated_at":{now},"slots":[[{},"codex","","",["2","1","2","3","4","5","6","18446744073709551615","7","8"],{},{}]]}}"#,
                now - 900,
                now - 100,
                now - 50
            )
        );
        // Nine counts, or one that is not a number, is not such a file.
        let short = text.replace(r#","8"]"#, "]");
        assert_eq!(decode(&short, now), None);
        assert_eq!(decode(&text.replace(r#""7""#, r#""x""#), now), None);
        // A file of the first version (one row per model and directory)
        // is another file.
        assert_eq!(decode(&text.replace(r#"{"v":2,"#, r#"{"v":1,"#), now), None);
    }

    #[test]
    fn rows_are_summed_per_slot_and_agent_over_models_and_directories() {
        let now = 1_795_953_600;
        let acc = |requests: u64, first_ts: i64, last_ts: i64| SlotAcc {
            requests,
            tokens: Tokens {
                input: 10 * requests,
                output: requests,
                ..Tokens::default()
            },
            cost_pico: 1_000 * requests,
            first_ts,
            last_ts,
            ..SlotAcc::default()
        };
        let slot = now - 1_800;
        let key = |agent, model: &str, cwd: &str| -> SlotKey {
            (slot, agent, model.into(), cwd.into(), "".into())
        };
        let rows = [
            (
                key(Agent::Claude, "opus", "/a"),
                acc(2, slot + 60, slot + 120),
            ),
            (
                key(Agent::Claude, "sonnet", "/b"),
                acc(3, slot + 30, slot + 90),
            ),
            (key(Agent::Codex, "gpt", "/a"), acc(1, slot + 10, slot + 10)),
        ];
        let text = encode(now, now, rows.iter().map(|(k, a)| (k, a)));
        // Claude: 2 + 3 requests, 50 input, 5 output, 5,000 pico-dollars,
        // from the first request of either row to the last.
        assert_eq!(
            decode(&text, now),
            Some(vec![
                (key(Agent::Claude, "", ""), acc(5, slot + 30, slot + 120)),
                (key(Agent::Codex, "", ""), acc(1, slot + 10, slot + 10)),
            ])
        );
    }
}

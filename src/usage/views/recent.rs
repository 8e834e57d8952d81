//! `recent-v1.json`: the aggregate's slots of the last two days, which the
//! worker writes beside each snapshot so the statusline (run by shell
//! prompts and status bars, many times a minute) reads a few kilobytes
//! instead of decoding the whole aggregate state. Derived, replaced
//! atomically, and tied to its snapshot by `generated_at`: a file that
//! does not match, or does not parse, is ignored and the full state read.

use crate::base::json::{self, Object, Value};
use crate::usage::aggregate::{SlotAcc, SlotKey};
use crate::usage::event::Agent;
use crate::usage::store::state::{acc_from, acc_numbers};

/// The sums of a slot the file writes as decimal strings: the state's
/// numbers without the two times, which are written as numbers.
const COUNTS: usize = 10;

/// Schema version of the file.
pub const VERSION: i64 = 1;
/// How far back the file holds slots: a local day in any zone (up to 26
/// hours) plus a 5-hour block before it, rounded up.
pub const SPAN: i64 = 2 * 86_400;

/// The file's text: the slots from `now - SPAN` on (pure).
pub fn encode<'a>(
    generated_at: i64,
    now: i64,
    slots: impl Iterator<Item = (&'a SlotKey, &'a SlotAcc)>,
) -> String {
    let list = slots
        .filter(|(k, acc)| k.0 >= now - SPAN && acc.requests > 0)
        .map(|((slot, agent, model, cwd), a)| {
            Value::Array(vec![
                Value::from(*slot),
                Value::from(agent.name()),
                Value::from(model.as_str()),
                Value::from(cwd.as_str()),
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

/// The slots of a file written for the snapshot of `generated_at`; `None`
/// when it is another snapshot's, or not such a file.
pub fn decode(text: &str, generated_at: i64) -> Option<Vec<(SlotKey, SlotAcc)>> {
    let v = json::parse(text).ok()?;
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
                model.as_str()?.to_string(),
                cwd.as_str()?.to_string(),
            ),
            acc_from(n),
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let new: SlotKey = (now - 900, Agent::Codex, "gpt-5.5".into(), "/a \"b\"".into());
        let old: SlotKey = (now - SPAN - 900, Agent::Claude, "m".into(), "/c".into());
        let text = encode(now, now, [(&old, &acc), (&new, &acc)].into_iter());
        assert_eq!(decode(&text, now), Some(vec![(new, acc)]));
        assert_eq!(decode(&text, now + 1), None);
        assert_eq!(decode(&text[..text.len() - 1], now), None);
        // The file's text, written by hand: counts as decimal strings in
        // the state's order, the times as numbers.
        assert_eq!(
            text,
            format!(
                r#"{{"v":1,"generated_at":{now},"slots":[[{},"codex","gpt-5.5","/a \"b\"",["2","1","2","3","4","5","6","18446744073709551615","7","8"],{},{}]]}}"#,
                now - 900,
                now - 100,
                now - 50
            )
        );
        // Nine counts, or one that is not a number, is not such a file.
        let short = text.replace(r#","8"]"#, "]");
        assert_eq!(decode(&short, now), None);
        assert_eq!(decode(&text.replace(r#""7""#, r#""x""#), now), None);
    }
}

//! `recent-v1.json`: the aggregate's slots of the last two days, which the
//! worker writes beside each snapshot so the statusline (run by shell
//! prompts and status bars, many times a minute) reads a few kilobytes
//! instead of decoding the whole aggregate state. Derived, replaced
//! atomically, and tied to its snapshot by `generated_at`: a file that
//! does not match, or does not parse, is ignored and the full state read.

use crate::base::json::{self, Object, Value};
use crate::usage::aggregate::{SlotAcc, SlotKey};
use crate::usage::event::{Agent, Tokens};

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
            let t = &a.tokens;
            Value::Array(vec![
                Value::from(*slot),
                Value::from(agent.name()),
                Value::from(model.as_str()),
                Value::from(cwd.as_str()),
                Value::Array(
                    [
                        a.requests,
                        t.input,
                        t.cache_read,
                        t.cache_write_5m,
                        t.cache_write_1h,
                        t.output,
                        t.reasoning,
                        a.cost_pico,
                        a.unpriced_tokens,
                        a.unpriced_requests,
                    ]
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
        let agent = match agent.as_str()? {
            "claude" => Agent::Claude,
            "codex" => Agent::Codex,
            _ => return None,
        };
        let n: Vec<u64> = counts
            .as_array()?
            .iter()
            .map(|c| c.as_str().and_then(|c| c.parse().ok()))
            .collect::<Option<_>>()?;
        let [
            requests,
            input,
            cache_read,
            w5,
            w1h,
            output,
            reasoning,
            cost,
            ut,
            ur,
        ] = n[..]
        else {
            return None;
        };
        out.push((
            (
                slot.as_i64()?,
                agent,
                model.as_str()?.to_string(),
                cwd.as_str()?.to_string(),
            ),
            SlotAcc {
                requests,
                tokens: Tokens {
                    input,
                    cache_read,
                    cache_write_5m: w5,
                    cache_write_1h: w1h,
                    output,
                    reasoning,
                },
                cost_pico: cost,
                unpriced_tokens: ut,
                unpriced_requests: ur,
                first_ts: first.as_i64()?,
                last_ts: last.as_i64()?,
            },
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}

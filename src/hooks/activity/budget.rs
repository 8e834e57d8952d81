//! The Live Activity push request and its size budget: the relay body, the
//! APNs body the relay would build from it, and the degradation ladder that
//! keeps a device's sealed content inside every limit.
//!
//! A step only ever removes detail (titles and names, then rows, then every
//! agent); the counts are never degraded, so the widget always shows them.

use crate::base::json::{self, Object, Value};
use crate::hooks::activity::plan::Frame;
use crate::hooks::registration::ActivityDevice;
use crate::hooks::relay;
use crate::wire::envelope;
use crate::wire::live_activity::{Content, Counts};

/// Longest `ct` string.
pub(crate) const MAX_CT_CHARS: usize = 2_800;
/// Longest projected APNs body.
pub(crate) const MAX_APNS_BYTES: usize = 4_096;
/// Longest relay request body.
pub(crate) const MAX_RELAY_BODY_BYTES: usize = 8_192;
/// The last degradation step: `agents: []`.
pub(crate) const LAST_STEP: u8 = 3;

/// The counts as the relay accepts them: each clamped to its bound, so a
/// Host with more than 999 agents in one status shows 999 rather than
/// having every push refused.
fn relay_counts(counts: Counts) -> Object {
    let clamp = |n: u64| n.min(relay::MAX_COUNT);
    Counts {
        working: clamp(counts.working),
        blocked: clamp(counts.blocked),
        done: clamp(counts.done),
    }
    .to_wire()
}

/// The relay body of one Live Activity push, keys in contract order.
pub(crate) fn push_body(device: &ActivityDevice, frame: &Frame, envelope: &str) -> String {
    let (date_key, _, date) = frame.date_key_and_value();
    Value::Object(
        Object::new()
            .with("kind", "liveactivity")
            .with("token", device.token.as_str())
            .with("env", device.env.as_str())
            .with("event", frame.event.wire())
            .with("priority", u64::from(frame.priority))
            .with("timestamp", frame.timestamp)
            .with("counts", relay_counts(frame.counts))
            .with("envelope", envelope)
            .with(date_key, date),
    )
    .to_json()
}

/// The APNs body the relay would build, as the size budget projects it.
pub(crate) fn projected_apns_body(frame: &Frame, envelope: &str) -> String {
    let (_, apns_key, date) = frame.date_key_and_value();
    format!(
        r#"{{"aps":{{"timestamp":{},"event":{},"content-state":{{"counts":{},"envelope":{envelope}}},{}:{date}}}}}"#,
        frame.timestamp,
        json::quote(frame.event.wire()),
        Value::Object(relay_counts(frame.counts)).to_json(),
        json::quote(apns_key),
    )
}

/// Whether a sealed envelope fits every budget.
pub(crate) fn fits_budget(device: &ActivityDevice, frame: &Frame, envelope: &str) -> bool {
    let ct_len = json::parse(envelope)
        .ok()
        .and_then(|v| v.get("ct").and_then(Value::as_str).map(str::len))
        .unwrap_or(usize::MAX);
    ct_len <= MAX_CT_CHARS
        && projected_apns_body(frame, envelope).len() <= MAX_APNS_BYTES
        && push_body(device, frame, envelope).len() <= MAX_RELAY_BODY_BYTES
}

/// The content at a degradation step: 1 drops titles and names, 2 also
/// rows, 3 every agent.
pub(crate) fn degrade(content: &Content, step: u8) -> Content {
    let mut content = content.clone();
    if step >= LAST_STEP {
        content.agents.clear();
        return content;
    }
    for agent in &mut content.agents {
        if step >= 1 {
            agent.title = None;
            agent.name = None;
        }
        if step >= 2 {
            agent.rows = None;
        }
    }
    content
}

/// Seals `content` at the first step from `from` that fits the budget (the
/// last step is taken whether it fits or not).
pub(crate) fn seal_within_budget(
    device: &ActivityDevice,
    frame: &Frame,
    content: &Content,
    from: u8,
) -> Result<(u8, String), ring::error::Unspecified> {
    let mut step = from;
    loop {
        let sealed = degrade(content, step).seal(&device.key, envelope::random_nonce()?);
        if step >= LAST_STEP || fits_budget(device, frame, &sealed) {
            return Ok((step, sealed));
        }
        step += 1;
    }
}

/// The step to re-seal at after the relay refused an envelope sealed at
/// `step` as too large; `None` once even the last step was refused.
pub(crate) fn step_after_too_large(step: u8) -> Option<u8> {
    (step < LAST_STEP).then_some(step + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::activity::plan::ActivityEvent;
    use crate::wire::envelope::NotificationKey;
    use crate::wire::live_activity::AgentEntry;

    fn device() -> ActivityDevice {
        ActivityDevice {
            token: "00112233445566778899".into(),
            env: "production".into(),
            key: NotificationKey::from_bytes([7; 32]),
            pins: None,
            layout: None,
            host_name: None,
        }
    }

    fn frame(event: ActivityEvent) -> Frame {
        Frame {
            event,
            priority: 10,
            timestamp: 1_760_000_000,
            counts: Counts {
                working: 1,
                blocked: 2,
                done: 0,
            },
        }
    }

    #[test]
    fn relay_body_keys_are_in_contract_order() {
        assert_eq!(
            push_body(&device(), &frame(ActivityEvent::Update), "{\"v\":1}"),
            r#"{"kind":"liveactivity","token":"00112233445566778899","env":"production","event":"update","priority":10,"timestamp":1760000000,"counts":{"working":1,"blocked":2,"done":0},"envelope":"{\"v\":1}","stale_date":1760000900}"#
        );
        assert!(
            push_body(&device(), &frame(ActivityEvent::End), "e")
                .ends_with(r#""envelope":"e","dismissal_date":1760000000}"#)
        );
        assert_eq!(
            projected_apns_body(&frame(ActivityEvent::End), r#"{"v":1}"#),
            r#"{"aps":{"timestamp":1760000000,"event":"end","content-state":{"counts":{"working":1,"blocked":2,"done":0},"envelope":{"v":1}},"dismissal-date":1760000000}}"#
        );
    }

    #[test]
    fn counts_above_the_relay_bound_are_clamped_in_both_bodies() {
        // The relay refuses a count above 999 with 400 bad_counts.
        let mut frame = frame(ActivityEvent::Update);
        frame.counts = Counts {
            working: 1_000,
            blocked: 5_000,
            done: 999,
        };
        let counts = r#""counts":{"working":999,"blocked":999,"done":999}"#;
        assert!(push_body(&device(), &frame, "e").contains(counts));
        assert!(projected_apns_body(&frame, "{}").contains(counts));
    }

    #[test]
    fn ladder_drops_titles_then_rows_then_agents() {
        let entry = AgentEntry {
            kind: Some("claude".into()),
            name: Some("n".into()),
            pane: Some("p".into()),
            rows: Some(Value::Array(vec![])),
            status: "working".into(),
            title: Some("t".into()),
            workspace: Some("w".into()),
        };
        let content = Content {
            agents: vec![entry],
            host: "h".into(),
        };
        assert_eq!(
            degrade(&content, 1).canonical_json(),
            r#"{"agents":[{"kind":"claude","pane":"p","rows":[],"status":"working","workspace":"w"}],"host":"h","v":1}"#
        );
        assert_eq!(
            degrade(&content, 2).canonical_json(),
            r#"{"agents":[{"kind":"claude","pane":"p","status":"working","workspace":"w"}],"host":"h","v":1}"#
        );
        assert_eq!(
            degrade(&content, 3).canonical_json(),
            r#"{"agents":[],"host":"h","v":1}"#
        );
    }

    #[test]
    fn a_relay_413_moves_one_step_down_the_ladder_until_the_last() {
        assert_eq!(step_after_too_large(0), Some(1));
        assert_eq!(step_after_too_large(1), Some(2));
        assert_eq!(step_after_too_large(2), Some(3));
        assert_eq!(step_after_too_large(3), None);
    }

    fn entry(title: Option<String>, rows: Option<Value>) -> AgentEntry {
        AgentEntry {
            kind: Some("claude".into()),
            name: None,
            pane: Some("w1:p1".into()),
            rows,
            status: "working".into(),
            title,
            workspace: None,
        }
    }

    fn sealed_step(content: &Content) -> u8 {
        let frame = frame(ActivityEvent::Update);
        seal_within_budget(&device(), &frame, content, 0).unwrap().0
    }

    #[test]
    fn the_budget_pre_degrades_to_the_first_step_that_fits() {
        let small = Content {
            agents: vec![entry(Some("t".into()), None)],
            host: "h".into(),
        };
        assert_eq!(sealed_step(&small), 0);
        // Five 500-byte titles are ~2.5 KB of plaintext, over the 2800-character
        // ciphertext budget (about 2.1 KB of plaintext); without titles it fits.
        let titled = Content {
            agents: vec![entry(Some("x".repeat(500)), None); 5],
            host: "h".into(),
        };
        assert_eq!(sealed_step(&titled), 1);
        // Rows too large for the budget go at step 2.
        let rows = json::parse(&format!(r#"[[{{"text":"{}"}}]]"#, "r".repeat(500))).unwrap();
        let rowed = Content {
            agents: vec![entry(None, Some(rows)); 5],
            host: "h".into(),
        };
        assert_eq!(sealed_step(&rowed), 2);
        // A host name alone over budget still ends at the last step.
        let huge_host = Content {
            agents: vec![entry(None, None)],
            host: "h".repeat(5_000),
        };
        assert_eq!(sealed_step(&huge_host), LAST_STEP);
    }
}

//! The activity hook's decision, with no I/O: from the agent inventory, the
//! devices and last-state to a plan (end or update, priority 10 or 5, what
//! to record), and from a plan and the fetched row context to each device's
//! frame and content.
//!
//! The event and the priority are decided once per round, never per device:
//! every device of a Host sees the same transition.

use std::collections::{HashMap, HashSet};

use ring::digest::{SHA256, digest};

use crate::base::json::{Object, Value};
use crate::herdr::answer::{Agent, nonempty};
use crate::hooks::delivery::PushTarget;
use crate::hooks::registration::ActivityDevice;
use crate::hooks::row_layout::{self, RowContext};
use crate::wire::live_activity::{self, BuildContext, Content, Counts, js_string_cmp};

/// Seconds after `timestamp` an update goes stale.
pub(crate) const STALE_AFTER_S: i64 = 900;

/// The priority of an update that shows a newly blocked agent.
pub(crate) const PRIORITY_NEWLY_BLOCKED: u8 = 10;
/// The priority of every other update and of an end.
pub(crate) const PRIORITY_ROUTINE: u8 = 5;

fn is_eligible_status(status: &str) -> bool {
    live_activity::status_rank(status).is_some()
}

/// `activity/last-state.json` as far as the hook reads it.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct LastState {
    pub statuses: Option<HashMap<String, String>>,
    pub preferences: Option<String>,
    pub ended: bool,
}

impl LastState {
    /// The fields the hook reads; anything malformed counts as absent.
    pub fn from_value(value: &Value) -> LastState {
        LastState {
            statuses: value.get("statuses").and_then(Value::as_object).map(|o| {
                o.iter()
                    .filter_map(|(k, v)| Some((k.to_owned(), v.as_str()?.to_owned())))
                    .collect()
            }),
            preferences: value
                .get("preferences")
                .and_then(Value::as_str)
                .map(str::to_owned),
            ended: value.get("ended") == Some(&Value::Bool(true)),
        }
    }
}

/// The device-preferences hash: SHA-256 hex of the devices' token, env,
/// pins, parsed layout and host name, sorted by token.
pub(crate) fn preferences_hash(devices: &[ActivityDevice]) -> String {
    let mut sorted: Vec<&ActivityDevice> = devices.iter().collect();
    sorted.sort_by(|a, b| js_string_cmp(&a.token, &b.token));
    let items = sorted
        .iter()
        .map(|d| {
            let mut item = Object::new()
                .with("token", d.token.as_str())
                .with("env", d.env.as_str());
            if let Some(pins) = &d.pins {
                item.insert("pins", pins.clone());
            }
            item.insert(
                "layout",
                d.layout.as_ref().map_or(Value::Null, |l| l.to_wire()),
            );
            item.insert(
                "host",
                d.host_name.as_deref().map_or(Value::Null, Value::from),
            );
            Value::Object(item)
        })
        .collect::<Vec<_>>();
    let hash = digest(&SHA256, Value::Array(items).to_json().as_bytes());
    hash.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// `update` or `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivityEvent {
    Update,
    End,
}

impl ActivityEvent {
    /// The `event` value on the wire.
    pub fn wire(self) -> &'static str {
        match self {
            ActivityEvent::Update => "update",
            ActivityEvent::End => "end",
        }
    }
}

/// What is the same for every device of one run.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub event: ActivityEvent,
    pub priority: u8,
    pub timestamp: i64,
    pub counts: Counts,
}

impl Frame {
    /// The date an event carries: the relay key, the APNs key and the
    /// value (stale after 900 s for an update, dismissed at once for an end).
    pub(crate) fn date_key_and_value(&self) -> (&'static str, &'static str, i64) {
        match self.event {
            ActivityEvent::Update => ("stale_date", "stale-date", self.timestamp + STALE_AFTER_S),
            ActivityEvent::End => ("dismissal_date", "dismissal-date", self.timestamp),
        }
    }
}

/// Whether an event is worth a claim and a debounce: some device shows the
/// activity, and an ended activity restarts only for an eligible status.
pub(crate) fn worth_claiming(has_devices: bool, last: &LastState, event_status: &str) -> bool {
    has_devices && (!last.ended || is_eligible_status(event_status))
}

/// Newly blocked (some pane is blocked now and was not in the previous
/// statuses, absent ones counting as none) is urgent; anything else is
/// routine.
pub fn priority(statuses: &[(String, String)], previous: Option<&HashMap<String, String>>) -> u8 {
    let was_blocked =
        |pane: &str| previous.and_then(|p| p.get(pane)).map(String::as_str) == Some("blocked");
    if statuses
        .iter()
        .any(|(pane, status)| status == "blocked" && !was_blocked(pane))
    {
        PRIORITY_NEWLY_BLOCKED
    } else {
        PRIORITY_ROUTINE
    }
}

/// What the hook does with the snapshot it gathered after the debounce.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// The statuses and the device preferences equal last-state.
    Unchanged,
    /// No eligible agent, and the activity has already ended.
    AlreadyEnded,
    /// Push to every device.
    Send(Plan),
}

/// One push round: the event and priority are the same for every device.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub event: ActivityEvent,
    pub priority: u8,
    /// The eligible `(pane, status)` pairs, recorded in last-state.
    pub statuses: Vec<(String, String)>,
    /// The device-preferences hash, recorded in last-state.
    pub preferences: String,
}

/// Decides the round from the agent inventory, the devices and last-state:
/// an unchanged snapshot sends nothing, an empty one ends the activity
/// (once), anything else updates it.
pub(crate) fn decide(
    inventory: &[Agent],
    devices: &[ActivityDevice],
    last: &LastState,
) -> Decision {
    let statuses = live_activity::eligible_statuses(inventory);
    let status_map: HashMap<String, String> = statuses.iter().cloned().collect();
    let preferences = preferences_hash(devices);
    if last.statuses.as_ref() == Some(&status_map)
        && last.preferences.as_deref() == Some(preferences.as_str())
    {
        return Decision::Unchanged;
    }
    if statuses.is_empty() && last.ended {
        return Decision::AlreadyEnded;
    }
    Decision::Send(Plan {
        event: if statuses.is_empty() {
            ActivityEvent::End
        } else {
            ActivityEvent::Update
        },
        priority: priority(&statuses, last.statuses.as_ref()),
        statuses,
        preferences,
    })
}

/// The herdr lookups a plan's content needs beyond the inventory.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ContextNeeds {
    /// `workspace list`, for the workspace labels.
    pub workspace_labels: bool,
    /// `tab list` per workspace, for a layout's `tab` token.
    pub tabs: bool,
    /// `pane list` per workspace, for a layout's `pane` token.
    pub panes: bool,
    /// The eligible agents' workspaces, sorted, when tabs or panes are needed.
    pub workspaces: Vec<String>,
}

/// One device's push: the frame and the content to seal for it.
#[derive(Debug, Clone)]
pub struct Payload<'a> {
    pub device: &'a ActivityDevice,
    pub frame: Frame,
    pub content: Content,
}

impl PushTarget for Payload<'_> {
    fn push_token(&self) -> &str {
        &self.device.token
    }
}

impl Plan {
    /// An end shows no agent, so it needs nothing; an update needs the
    /// labels, and tabs or panes only when some device's layout uses them.
    pub(crate) fn context_needs(
        &self,
        devices: &[ActivityDevice],
        inventory: &[Agent],
    ) -> ContextNeeds {
        if self.event == ActivityEvent::End {
            return ContextNeeds::default();
        }
        let layouts = || devices.iter().filter_map(|d| d.layout.as_ref());
        let tabs = layouts().any(|l| l.uses("tab"));
        let panes = layouts().any(|l| l.uses("pane"));
        let mut workspaces = Vec::new();
        if tabs || panes {
            let eligible: HashSet<&str> = inventory
                .iter()
                .filter(|a| {
                    a.agent_status
                        .as_deref()
                        .is_some_and(|s| is_eligible_status(&s.to_lowercase()))
                })
                .filter_map(|a| nonempty(&a.workspace_id))
                .collect();
            workspaces = eligible.into_iter().map(str::to_owned).collect();
            workspaces.sort_unstable();
        }
        ContextNeeds {
            workspace_labels: true,
            tabs,
            panes,
            workspaces,
        }
    }

    /// Each device's payload, in device order: an end carries zero counts
    /// and no agents; an update the device's pins and rows.
    pub(crate) fn payloads<'a>(
        &self,
        devices: &'a [ActivityDevice],
        inventory: &[Agent],
        context: &RowContext,
        timestamp: i64,
    ) -> Vec<Payload<'a>> {
        devices
            .iter()
            .map(|device| {
                let (counts, content) = match self.event {
                    ActivityEvent::End => (
                        Counts::default(),
                        Content {
                            agents: Vec::new(),
                            host: context.host.clone(),
                        },
                    ),
                    ActivityEvent::Update => {
                        let render = |agent: &Agent| {
                            device.layout.as_ref().map(|layout| {
                                row_layout::render(
                                    layout,
                                    agent,
                                    context,
                                    device.host_name.as_deref(),
                                )
                            })
                        };
                        live_activity::build(
                            inventory,
                            &BuildContext {
                                host: &context.host,
                                pins: device.pins.as_ref(),
                                workspace_labels: &context.workspace_labels,
                                rows: &render,
                            },
                        )
                    }
                };
                Payload {
                    device,
                    frame: Frame {
                        event: self.event,
                        priority: self.priority,
                        timestamp,
                        counts,
                    },
                    content,
                }
            })
            .collect()
    }

    /// The last-state a delivered round records, keys in contract order.
    pub fn last_state(&self, sent_at_ms: u64) -> Value {
        let mut statuses = Object::new();
        for (pane, status) in &self.statuses {
            statuses.insert(pane.as_str(), Value::from(status.as_str()));
        }
        Value::Object(
            Object::new()
                .with("sent_at_ms", sent_at_ms)
                .with("statuses", statuses)
                .with("preferences", self.preferences.as_str())
                .with("ended", self.event == ActivityEvent::End),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::json;
    use crate::wire::envelope::NotificationKey;

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

    #[test]
    fn preferences_hash_is_order_independent() {
        let mut a = device();
        let mut b = device();
        b.token = "ffff0000ffff0000".into();
        let one = preferences_hash(&[a.clone(), b.clone()]);
        assert_eq!(one, preferences_hash(&[b.clone(), a.clone()]));
        a.pins = Some(Value::Array(vec![Value::from("w1:p1")]));
        assert_ne!(one, preferences_hash(&[a, b]));
        assert_eq!(one.len(), 64);
    }

    fn agent(pane: &str, status: &str) -> Agent {
        Agent::from_value(&json::parse(&format!(
            r#"{{"pane_id":"{pane}","workspace_id":"w1","agent":"claude","agent_status":"{status}","terminal_title":"t {pane}"}}"#
        )).unwrap())
        .unwrap()
    }

    fn statuses(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(p, s)| ((*p).to_owned(), (*s).to_owned()))
            .collect()
    }

    fn last(pairs: Option<&[(&str, &str)]>, preferences: Option<String>, ended: bool) -> LastState {
        LastState {
            statuses: pairs.map(statuses),
            preferences,
            ended,
        }
    }

    fn sent(decision: Decision) -> Plan {
        match decision {
            Decision::Send(plan) => plan,
            other => panic!("expected a push, got {other:?}"),
        }
    }

    #[test]
    fn only_devices_and_a_live_or_restarting_activity_are_worth_a_claim() {
        let fresh = LastState::default();
        let ended = last(Some(&[]), None, true);
        assert!(!worth_claiming(false, &fresh, "blocked"));
        assert!(worth_claiming(true, &fresh, "idle"));
        assert!(!worth_claiming(true, &ended, "idle"));
        assert!(!worth_claiming(true, &ended, "unknown"));
        for status in ["working", "blocked", "done"] {
            assert!(worth_claiming(true, &ended, status));
        }
    }

    #[test]
    fn a_first_activity_is_an_update_urgent_only_when_something_is_blocked() {
        let devices = [device()];
        let working = sent(decide(
            &[agent("w1:p1", "working")],
            &devices,
            &LastState::default(),
        ));
        assert_eq!(working.event, ActivityEvent::Update);
        assert_eq!(working.priority, 5);
        let blocked = sent(decide(
            &[agent("w1:p1", "working"), agent("w1:p2", "blocked")],
            &devices,
            &LastState::default(),
        ));
        assert_eq!(blocked.event, ActivityEvent::Update);
        assert_eq!(blocked.priority, 10);
    }

    #[test]
    fn later_updates_are_urgent_only_for_a_newly_blocked_pane() {
        let devices = [device()];
        let preferences = Some(preferences_hash(&devices));
        let was = last(Some(&[("w1:p1", "blocked")]), preferences.clone(), false);
        // Still blocked, another pane starts working: routine.
        let still = sent(decide(
            &[agent("w1:p1", "blocked"), agent("w1:p2", "working")],
            &devices,
            &was,
        ));
        assert_eq!((still.event, still.priority), (ActivityEvent::Update, 5));
        // A second pane becomes blocked: urgent.
        let second = sent(decide(
            &[agent("w1:p1", "blocked"), agent("w1:p2", "blocked")],
            &devices,
            &was,
        ));
        assert_eq!(second.priority, 10);
        // Working becomes blocked: urgent; blocked becomes done: routine.
        let working = last(Some(&[("w1:p1", "working")]), preferences, false);
        assert_eq!(
            sent(decide(&[agent("w1:p1", "blocked")], &devices, &working)).priority,
            10
        );
        assert_eq!(
            sent(decide(&[agent("w1:p1", "done")], &devices, &was)).priority,
            5
        );
        // Case-insensitive statuses count as what they say.
        assert_eq!(
            sent(decide(&[agent("w1:p1", "Blocked")], &devices, &working)).priority,
            10
        );
    }

    #[test]
    fn an_unchanged_snapshot_sends_nothing_unless_the_preferences_moved() {
        let devices = [device()];
        let inventory = [agent("w1:p1", "working"), agent("w1:p2", "idle")];
        let same = last(
            Some(&[("w1:p1", "working")]),
            Some(preferences_hash(&devices)),
            false,
        );
        assert_eq!(decide(&inventory, &devices, &same), Decision::Unchanged);
        // A state written before preferences existed re-sends once.
        let legacy = last(Some(&[("w1:p1", "working")]), None, false);
        assert_eq!(sent(decide(&inventory, &devices, &legacy)).priority, 5);
        // A new pin is a new preference.
        let mut pinned = device();
        pinned.pins = Some(Value::Array(vec![Value::from("w1:p1")]));
        assert!(matches!(
            decide(&inventory, &[pinned], &same),
            Decision::Send(_)
        ));
        // A status change is a change, even with equal preferences.
        let done = [agent("w1:p1", "done")];
        assert!(matches!(decide(&done, &devices, &same), Decision::Send(_)));
    }

    #[test]
    fn no_eligible_agent_ends_the_activity_once() {
        let devices = [device()];
        let idle = [agent("w1:p1", "idle"), agent("w1:p2", "unknown")];
        let running = last(Some(&[("w1:p1", "blocked")]), None, false);
        let end = sent(decide(&idle, &devices, &running));
        assert_eq!(end.event, ActivityEvent::End);
        assert_eq!(end.priority, 5);
        assert!(end.statuses.is_empty());
        let ended = last(Some(&[]), None, true);
        assert_eq!(decide(&idle, &devices, &ended), Decision::AlreadyEnded);
        assert_eq!(decide(&[], &devices, &ended), Decision::AlreadyEnded);
        // An ended activity restarts with the next eligible agent.
        let restart = sent(decide(&[agent("w1:p1", "working")], &devices, &ended));
        assert_eq!(restart.event, ActivityEvent::Update);
    }

    #[test]
    fn an_end_carries_zero_counts_and_no_agents_for_every_device() {
        let devices = [device(), device()];
        let plan = Plan {
            event: ActivityEvent::End,
            priority: 5,
            statuses: Vec::new(),
            preferences: "p".into(),
        };
        assert_eq!(plan.context_needs(&devices, &[]), ContextNeeds::default());
        let context = RowContext {
            host: "mac".into(),
            ..RowContext::default()
        };
        let payloads = plan.payloads(&devices, &[agent("w1:p1", "idle")], &context, 1_760_000_000);
        assert_eq!(payloads.len(), 2);
        for payload in &payloads {
            assert_eq!(payload.frame.counts, Counts::default());
            assert_eq!(payload.frame.timestamp, 1_760_000_000);
            assert_eq!(
                payload.content.canonical_json(),
                r#"{"agents":[],"host":"mac","v":1}"#
            );
            assert_eq!(
                payload.frame.date_key_and_value(),
                ("dismissal_date", "dismissal-date", 1_760_000_000)
            );
        }
    }

    #[test]
    fn an_update_counts_every_eligible_agent_and_fetches_only_used_context() {
        let inventory: Vec<Agent> = (1..=7)
            .map(|n| {
                agent(
                    &format!("w1:p{n}"),
                    if n == 3 { "blocked" } else { "working" },
                )
            })
            .chain([agent("w1:p8", "done"), agent("w1:p9", "idle")])
            .collect();
        let plan = sent(decide(&inventory, &[device()], &LastState::default()));
        let plain = plan.context_needs(&[device()], &inventory);
        assert_eq!(
            plain,
            ContextNeeds {
                workspace_labels: true,
                ..ContextNeeds::default()
            }
        );
        let mut tabbed = device();
        tabbed.layout =
            row_layout::parse_layout(&json::parse(r#"{"rows":[[{"token":"tab"}]]}"#).unwrap());
        let needs = plan.context_needs(&[device(), tabbed], &inventory);
        assert!(needs.tabs && !needs.panes);
        assert_eq!(needs.workspaces, ["w1"]);

        let devices = [device()];
        let payloads = plan.payloads(&devices, &inventory, &RowContext::default(), 1);
        let frame = payloads[0].frame;
        assert_eq!(
            (
                frame.counts.working,
                frame.counts.blocked,
                frame.counts.done
            ),
            (6, 1, 1)
        );
        // The content is capped at five agents, the blocked one first.
        assert_eq!(payloads[0].content.agents.len(), 5);
        assert_eq!(payloads[0].content.agents[0].pane.as_deref(), Some("w1:p3"));
        assert_eq!(frame.priority, 10);
    }

    #[test]
    fn last_state_records_statuses_preferences_and_whether_it_ended() {
        let plan = Plan {
            event: ActivityEvent::Update,
            priority: 10,
            statuses: vec![
                ("w1:p2".into(), "blocked".into()),
                ("w1:p1".into(), "working".into()),
            ],
            preferences: "abc".into(),
        };
        assert_eq!(
            plan.last_state(1_760_000_000_123).to_json(),
            r#"{"sent_at_ms":1760000000123,"statuses":{"w1:p2":"blocked","w1:p1":"working"},"preferences":"abc","ended":false}"#
        );
        let read_back = Plan {
            event: ActivityEvent::End,
            statuses: Vec::new(),
            ..plan
        };
        assert!(
            read_back
                .last_state(1)
                .to_json()
                .ends_with(r#""ended":true}"#)
        );
    }

    #[test]
    fn last_state_reads_what_it_can_and_ignores_the_rest() {
        let read = |text: &str| LastState::from_value(&json::parse(text).unwrap());
        assert_eq!(
            read(r#"{"sent_at_ms":1,"statuses":{"w1:p1":"working","w1:p2":7},"ended":true}"#),
            last(Some(&[("w1:p1", "working")]), None, true)
        );
        assert_eq!(
            read(r#"{"statuses":[],"preferences":"ab","ended":"true"}"#),
            last(None, Some("ab".into()), false)
        );
        assert_eq!(read("[]"), LastState::default());
    }
}

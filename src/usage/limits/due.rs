//! When stored limits are due: the one schedule for probing and triggering.
//!
//! The query (deciding whether a worker run is worth starting) and the
//! worker (deciding what to probe) ask the same question of the same
//! files, so the answer lives here, pure over the files' values. The
//! probes themselves are in [`crate::usage::limits`], the herdr trigger in
//! [`crate::usage::limits::herdr_action`]; both read this schedule and
//! neither is read by it.
//!
//! Invariants:
//! - A missing limits file is always due; a stored `ok` is due after
//!   [`TTL`], any other state after [`ERROR_BACKOFF`].
//! - Claude limits are due only while the device's toggle wants them.
//!   Where the sign-in needs herdr's session the step is a trigger of the
//!   herdr action, spaced by [`RETRIGGER_AFTER`], never a probe from here.

use crate::base::json::Value;

/// Limits are re-read after this many seconds.
pub const TTL: i64 = 300;
/// After an error, wait this long before asking again.
pub(crate) const ERROR_BACKOFF: i64 = 900;
/// Seconds between two triggers of the herdr action while no fresh limits
/// arrived.
pub(crate) const RETRIGGER_AFTER: i64 = TTL;

/// Whether a stored limits file is due for another probe.
pub(crate) fn is_due(stored: Option<&Value>, now: i64) -> bool {
    let Some(stored) = stored else { return true };
    let attempted = stored
        .get("attempted_at")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let ok = stored.get("state").and_then(Value::as_str) == Some("ok");
    now - attempted >= if ok { TTL } else { ERROR_BACKOFF }
}

/// Whether to trigger the herdr action now: the stored Claude limits are
/// due and the last trigger (if any) is older than [`RETRIGGER_AFTER`].
pub(crate) fn trigger_is_due(trigger: Option<&Value>, limits: Option<&Value>, now: i64) -> bool {
    let last = trigger
        .and_then(|t| t.get("at"))
        .and_then(Value::as_i64)
        .unwrap_or(i64::MIN / 2);
    is_due(limits, now) && now - last >= RETRIGGER_AFTER
}

/// What to do about Claude's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClaudeStep {
    /// Not wanted, or not due yet.
    Nothing,
    /// Ask `claude` directly.
    Probe,
    /// Ask herdr's session to run the `usage-claude-limits` action.
    TriggerHerdrAction,
}

/// The limits steps due at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Due {
    pub codex: bool,
    pub claude: ClaudeStep,
}

/// The stored files the schedule reads, as values (`None`: no such file or
/// not JSON).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Stored<'a> {
    pub codex: Option<&'a Value>,
    pub claude: Option<&'a Value>,
    pub(crate) claude_trigger: Option<&'a Value>,
}

/// The steps due at `now`: Codex whenever its file is due; Claude only when
/// `claude_wanted`, by trigger when `claude_needs_herdr_session`, else by
/// probe.
pub(crate) fn due(
    stored: Stored<'_>,
    claude_wanted: bool,
    claude_needs_herdr_session: bool,
    now: i64,
) -> Due {
    let claude = if !claude_wanted {
        ClaudeStep::Nothing
    } else if claude_needs_herdr_session {
        if trigger_is_due(stored.claude_trigger, stored.claude, now) {
            ClaudeStep::TriggerHerdrAction
        } else {
            ClaudeStep::Nothing
        }
    } else if is_due(stored.claude, now) {
        ClaudeStep::Probe
    } else {
        ClaudeStep::Nothing
    };
    Due {
        codex: is_due(stored.codex, now),
        claude,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::json;

    fn v(text: &str) -> Value {
        json::parse(text).unwrap()
    }

    #[test]
    fn due_after_ttl_or_error_backoff() {
        let ok = v(r#"{"state":"ok","attempted_at":1000}"#);
        assert!(!is_due(Some(&ok), 1000 + TTL - 1));
        assert!(is_due(Some(&ok), 1000 + TTL));
        let err = v(r#"{"state":"error","attempted_at":1000}"#);
        assert!(!is_due(Some(&err), 1000 + TTL));
        assert!(is_due(Some(&err), 1000 + ERROR_BACKOFF));
        assert!(is_due(None, 0));
    }

    #[test]
    fn trigger_due_only_when_limits_are_and_the_last_trigger_is_old() {
        let fresh = v(r#"{"state":"ok","attempted_at":1000}"#);
        let recent = v(r#"{"at":1000,"ok":true,"error":null}"#);
        assert!(trigger_is_due(None, None, 1000));
        assert!(!trigger_is_due(None, Some(&fresh), 1010));
        assert!(!trigger_is_due(
            Some(&recent),
            None,
            1000 + RETRIGGER_AFTER - 1
        ));
        assert!(trigger_is_due(Some(&recent), None, 1000 + RETRIGGER_AFTER));
    }

    #[test]
    fn claude_is_due_only_while_wanted_and_by_the_route_the_host_needs() {
        let old = v(r#"{"state":"ok","attempted_at":0}"#);
        let fresh = v(r#"{"state":"ok","attempted_at":10000}"#);
        let recent_trigger = v(r#"{"at":9990,"ok":true,"error":null}"#);
        let stored = |claude, claude_trigger| Stored {
            codex: Some(&fresh),
            claude,
            claude_trigger,
        };
        let claude = |s: Stored<'_>, wanted, herdr| due(s, wanted, herdr, 10_000).claude;
        assert_eq!(
            claude(stored(None, None), false, false),
            ClaudeStep::Nothing
        );
        assert_eq!(claude(stored(None, None), false, true), ClaudeStep::Nothing);
        assert_eq!(claude(stored(None, None), true, false), ClaudeStep::Probe);
        assert_eq!(
            claude(stored(Some(&old), None), true, true),
            ClaudeStep::TriggerHerdrAction
        );
        assert_eq!(
            claude(stored(Some(&old), Some(&recent_trigger)), true, true),
            ClaudeStep::Nothing,
            "a trigger less than five minutes ago is not repeated"
        );
        assert_eq!(
            claude(stored(Some(&fresh), None), true, false),
            ClaudeStep::Nothing
        );
        assert_eq!(
            claude(stored(Some(&fresh), None), true, true),
            ClaudeStep::Nothing
        );
    }

    #[test]
    fn codex_is_due_regardless_of_the_claude_toggle() {
        let old = v(r#"{"state":"ok","attempted_at":0}"#);
        let fresh = v(r#"{"state":"ok","attempted_at":10000}"#);
        let with_codex = |codex| Stored {
            codex,
            ..Stored::default()
        };
        assert!(due(with_codex(None), false, false, 10_000).codex);
        assert!(due(with_codex(Some(&old)), false, false, 10_000).codex);
        assert!(!due(with_codex(Some(&fresh)), true, true, 10_000).codex);
    }
}

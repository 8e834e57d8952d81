//! The hooks' own record of what their detached worker failed at: the
//! last lines of the failure log (`hooks::failure_log`), with their time.
//!
//! The worker's failures reach no herdr plugin log, so doctor is where a
//! user sees them. The check appears only when something was logged: a
//! clean log adds no line to the report.

use std::path::Path;

use crate::doctor::report::Check;
use crate::hooks::failure_log::Logged;

/// The longest message shown per failure, in characters.
const SHOWN_CHARS: usize = 160;

/// The `hook_failures` warning for the last failures of `log` (oldest
/// first), or no check when none was logged.
pub(crate) fn check_hook_failures(log: &Path, last: &[Logged]) -> Option<Check> {
    if last.is_empty() {
        return None;
    }
    let shown: Vec<String> = last
        .iter()
        .map(|logged| {
            let message: String = logged.message.chars().take(SHOWN_CHARS).collect();
            format!("{} {message}", logged.time)
        })
        .collect();
    Some(Check::warn(
        "hook_failures",
        format!(
            "the last {} in {}: {}",
            last.len(),
            log.display(),
            shown.join(" | ")
        ),
        format!(
            "fix what the lines name (notify.json, the relay, herdr); the full log is {} (and .1 before it)",
            log.display()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::report::Status;

    #[test]
    fn failures_are_shown_with_their_time_and_a_clean_log_adds_nothing() {
        let log = Path::new("/s/hook-failures.log");
        assert_eq!(check_hook_failures(log, &[]), None);
        let last = [
            Logged {
                time: "2027-01-15T08:00:00Z".into(),
                message: "notify-hook: push for token aaaa1111… failed: relay answered 502: x"
                    .into(),
            },
            Logged {
                time: "2027-01-15T08:00:05Z".into(),
                message: "y".repeat(500),
            },
        ];
        let check = check_hook_failures(log, &last).unwrap();
        assert_eq!(check.id, "hook_failures");
        assert_eq!(check.status, Status::Warn);
        assert_eq!(
            check.summary,
            format!(
                "the last 2 in /s/hook-failures.log: 2027-01-15T08:00:00Z notify-hook: push for \
                 token aaaa1111… failed: relay answered 502: x | 2027-01-15T08:00:05Z {}",
                "y".repeat(SHOWN_CHARS)
            )
        );
        assert!(check.fix.unwrap().contains("/s/hook-failures.log"));
    }
}

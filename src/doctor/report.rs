//! The doctor's report: one [`Check`] per line, and its two renderings
//! (the text a user reads, the `--json` object a script reads).
//!
//! Invariants: a check that passes has no fix and every warn or fail has
//! one (the constructors enforce it); the run fails exactly when some check
//! has [`Status::Fail`]; nothing here adds or drops a check.

use crate::base::json::{Object, Value};

/// Ordered from best to worst, so the worst of several is their `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Pass,
    Warn,
    Fail,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    pub id: &'static str,
    pub status: Status,
    pub summary: String,
    /// What to do; present for warn and fail.
    pub fix: Option<String>,
}

impl Check {
    pub fn pass(id: &'static str, summary: impl Into<String>) -> Check {
        Check {
            id,
            status: Status::Pass,
            summary: summary.into(),
            fix: None,
        }
    }

    pub fn warn(id: &'static str, summary: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            id,
            status: Status::Warn,
            summary: summary.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn fail(id: &'static str, summary: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            id,
            status: Status::Fail,
            summary: summary.into(),
            fix: Some(fix.into()),
        }
    }
}

pub(crate) use crate::base::bytes::printable;
use crate::base::terminal::inert;

pub(crate) fn any_failed(checks: &[Check]) -> bool {
    checks.iter().any(|c| c.status == Status::Fail)
}

pub(crate) fn render_text(checks: &[Check]) -> String {
    let mut out = String::new();
    for check in checks {
        // A summary can quote a path or a file's value: inert, as every
        // view draws outside text (`base::terminal::inert`).
        out.push_str(&format!(
            "[{}] {}: {}\n",
            check.status.label().to_uppercase(),
            check.id,
            inert(&check.summary)
        ));
        if let Some(fix) = &check.fix {
            out.push_str(&format!("       fix: {}\n", inert(fix)));
        }
    }
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    let warned = checks.iter().filter(|c| c.status == Status::Warn).count();
    out.push_str(&format!(
        "{} checks: {} passed, {warned} warned, {failed} failed\n",
        checks.len(),
        checks.len() - failed - warned
    ));
    out
}

pub(crate) fn render_json(checks: &[Check], version: &str) -> String {
    let list: Vec<Value> = checks
        .iter()
        .map(|check| {
            let mut object = Object::new()
                .with("id", check.id)
                .with("status", check.status.label())
                .with("summary", check.summary.as_str());
            if let Some(fix) = &check.fix {
                object.insert("fix", Value::from(fix.as_str()));
            }
            Value::Object(object)
        })
        .collect();
    let json = Value::Object(
        Object::new()
            .with("version", version)
            .with("ok", !any_failed(checks))
            .with("checks", list),
    )
    .to_json();
    // Exact strings, but no DEL, C1 or bidi control left raw for a terminal.
    crate::base::terminal::inert_json(&json).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_render_as_text_and_json_and_fail_only_on_fail() {
        let checks = vec![Check::pass("a", "fine"), Check::warn("b", "hmm", "do b")];
        assert!(!any_failed(&checks));
        let text = render_text(&checks);
        assert_eq!(
            text,
            "[PASS] a: fine\n[WARN] b: hmm\n       fix: do b\n2 checks: 1 passed, 1 warned, 0 failed\n"
        );
        let mut failing = checks.clone();
        failing.push(Check::fail("c", "bad \"x\"", "do c"));
        assert!(any_failed(&failing));
        assert_eq!(
            render_json(&failing, "0.8.0"),
            r#"{"version":"0.8.0","ok":false,"checks":[{"id":"a","status":"pass","summary":"fine"},{"id":"b","status":"warn","summary":"hmm","fix":"do b"},{"id":"c","status":"fail","summary":"bad \"x\"","fix":"do c"}]}"#
        );
    }

    #[test]
    fn a_hostile_path_in_a_summary_or_fix_is_drawn_inert() {
        // A state dir under a directory named with an OSC 52 write and a
        // bidi override (a path doctor quotes).
        let path = "/home/dev/\u{1b}]52;c;eA==\u{7}\u{9b}2J\u{202e}x";
        let checks = vec![Check::fail(
            "state-dir",
            format!("{path} is writable by group or others"),
            format!("chmod go-w {path}"),
        )];
        let text = render_text(&checks);
        assert_eq!(
            text,
            "[FAIL] state-dir: /home/dev/\u{fffd}]52;c;eA==\u{fffd}\u{fffd}2J\u{fffd}x is writable by group or others\n       fix: chmod go-w /home/dev/\u{fffd}]52;c;eA==\u{fffd}\u{fffd}2J\u{fffd}x\n1 checks: 0 passed, 0 warned, 1 failed\n"
        );
        // JSON: every control escaped, the exact string kept.
        let json = render_json(&checks, "0.8.0");
        assert!(json.is_ascii(), "{json}");
        let doc = crate::base::json::parse(&json).unwrap();
        let summary = doc.get("checks").and_then(Value::as_array).unwrap()[0]
            .get("summary")
            .and_then(Value::as_str)
            .map(str::to_string);
        assert_eq!(
            summary,
            Some(format!("{path} is writable by group or others"))
        );
    }

    #[test]
    fn printable_drops_control_bytes_and_stops_at_60() {
        assert_eq!(printable("SSH-2.0-x\r\n\u{1b}[31m"), "SSH-2.0-x[31m");
        assert_eq!(printable(&"a".repeat(100)).len(), 60);
        assert_eq!(printable("caf\u{e9}"), "caf");
    }
}

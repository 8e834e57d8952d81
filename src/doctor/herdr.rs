//! herdr itself and heeler inside it: is a new enough herdr on PATH, and is
//! the plugin installed, enabled and this binary's version in every running
//! session.
//!
//! Invariants: herdr's own answers (`--version`, `session list --json`,
//! `plugin list --json`) are parsed here and nowhere else in doctor; a
//! session name is used only when `herdr::session` calls it valid.

use std::path::Path;

use crate::base::json::{self, Value};
use crate::doctor::report::{Check, Status, printable};

/// The oldest herdr with everything the manifest uses ([[startup]]).
pub(crate) const MIN_HERDR_VERSION: (u64, u64, u64) = (0, 7, 5);

/// `X.Y.Z` from `herdr --version` output such as `herdr 0.8.0`.
pub fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    text.split_whitespace().find_map(|word| {
        let word = word.trim_start_matches('v');
        let core = word.split(['-', '+']).next()?;
        let mut parts = core.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = parts.next()?.parse().ok()?;
        parts.next().is_none().then_some((major, minor, patch))
    })
}

/// Where herdr comes from: its project's releases.
pub(crate) const HERDR_RELEASES: &str = "https://github.com/herdrdev/herdr/releases";

pub(crate) fn check_herdr(found: Option<&Path>, version_output: &Result<String, String>) -> Check {
    const ID: &str = "herdr";
    let (a, b, c) = MIN_HERDR_VERSION;
    let Some(path) = found else {
        return Check::fail(
            ID,
            "herdr is not on PATH (and HERDR_BIN_PATH is not set)",
            format!(
                "install herdr {a}.{b}.{c} or newer from {HERDR_RELEASES} (a binary per platform, herdr-<os>-<arch>) and put it on PATH"
            ),
        );
    };
    let output = match version_output {
        Ok(output) => output,
        Err(why) => {
            return Check::fail(
                ID,
                format!("{} --version failed ({why})", path.display()),
                "reinstall herdr",
            );
        }
    };
    match parse_version(output) {
        Some(version) if version >= MIN_HERDR_VERSION => Check::pass(
            ID,
            format!(
                "{} is {}.{}.{}",
                path.display(),
                version.0,
                version.1,
                version.2
            ),
        ),
        Some(version) => Check::fail(
            ID,
            format!(
                "{} is {}.{}.{}; heeler needs {a}.{b}.{c} or newer",
                path.display(),
                version.0,
                version.1,
                version.2
            ),
            format!("update herdr to {a}.{b}.{c} or newer"),
        ),
        None => Check::warn(
            ID,
            format!(
                "{} printed no version ({})",
                path.display(),
                printable(output)
            ),
            "check that this is herdr: herdr --version",
        ),
    }
}

/// heeler's entry in `herdr plugin list --json`: installed, enabled, version.
pub(crate) fn check_plugin(
    list_output: &Result<String, String>,
    own_version: &str,
    session: &str,
) -> Check {
    const ID: &str = "plugin";
    let default = session.is_empty() || session == "default";
    let enable = if default {
        "herdr plugin enable heeler".to_owned()
    } else {
        format!("herdr --session {session} plugin enable heeler")
    };
    let where_ = if default {
        "the default session".to_owned()
    } else {
        format!("session {session}")
    };
    let text = match list_output {
        Ok(text) => text,
        Err(why) => {
            return Check::warn(
                ID,
                format!("could not list herdr plugins ({why})"),
                "run herdr plugin list --plugin heeler by hand (start herdr first if it needs a running session)",
            );
        }
    };
    let Ok(value) = json::parse(text) else {
        return Check::warn(
            ID,
            "herdr plugin list --json printed something that is not JSON",
            "run herdr plugin list --plugin heeler by hand",
        );
    };
    let plugins = value
        .get("result")
        .and_then(|r| r.get("plugins"))
        .or_else(|| value.get("plugins"))
        .and_then(Value::as_array)
        .unwrap_or_default();
    let Some(entry) = plugins
        .iter()
        .find(|p| p.get("plugin_id").and_then(Value::as_str) == Some("heeler"))
    else {
        return Check::fail(
            ID,
            "heeler is not installed in herdr",
            "herdr plugin install <owner>/<repo> --yes (or, in a checkout: sh install.sh --from-source && herdr plugin link .)",
        );
    };
    let installed_version = entry.get("version").and_then(Value::as_str).unwrap_or("?");
    let source = entry
        .get("source")
        .and_then(|s| s.get("kind"))
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    if entry.get("enabled").and_then(Value::as_bool) == Some(false) {
        return Check::fail(
            ID,
            format!("heeler {installed_version} ({source}) is installed but disabled in {where_}"),
            enable,
        );
    }
    if installed_version != own_version {
        return Check::warn(
            ID,
            format!(
                "herdr has heeler {installed_version} ({source}) but this binary is {own_version}"
            ),
            "reinstall the plugin so its manifest and binary match: herdr plugin install <owner>/<repo> --yes",
        );
    }
    Check::pass(
        ID,
        format!("heeler {installed_version} ({source}) is installed and enabled in {where_}"),
    )
}

/// The names of the running herdr sessions in `herdr session list --json`
/// (`default` for the default session).
pub(crate) fn running_sessions(session_list: &str) -> Vec<String> {
    let Ok(value) = json::parse(session_list) else {
        return Vec::new();
    };
    value
        .get("sessions")
        .and_then(Value::as_array)
        .unwrap_or_default()
        .iter()
        .filter(|s| s.get("running").and_then(Value::as_bool) == Some(true))
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .filter(|name| crate::herdr::session::is_valid_name(name))
        .map(str::to_owned)
        .collect()
}

/// The plugin in every running session (each session's `plugin list`): the
/// worst status wins; each session's summary and fix are kept.
pub(crate) fn check_plugin_sessions(
    lists: &[(String, Result<String, String>)],
    own_version: &str,
) -> Check {
    let mut checks: Vec<Check> = lists
        .iter()
        .map(|(session, list)| check_plugin(list, own_version, session))
        .collect();
    if checks.len() <= 1 {
        return checks.pop().unwrap_or_else(|| {
            check_plugin(&Err("no herdr session to ask".to_owned()), own_version, "")
        });
    }
    let worst = checks
        .iter()
        .map(|c| c.status)
        .max()
        .unwrap_or(Status::Pass);
    let summary = checks
        .iter()
        .map(|c| c.summary.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let mut fixes: Vec<&str> = checks.iter().filter_map(|c| c.fix.as_deref()).collect();
    fixes.dedup();
    Check {
        id: "plugin",
        status: worst,
        summary,
        fix: (!fixes.is_empty()).then(|| fixes.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn herdr_must_be_found_and_new_enough() {
        let path = Path::new("/usr/local/bin/herdr");
        assert_eq!(parse_version("herdr 0.8.0\n"), Some((0, 8, 0)));
        assert_eq!(parse_version("herdr v0.10.2-dev"), Some((0, 10, 2)));
        assert_eq!(parse_version("herdr"), None);
        assert_eq!(
            check_herdr(Some(path), &Ok("herdr 0.7.5".into())).status,
            Status::Pass
        );
        assert_eq!(
            check_herdr(Some(path), &Ok("herdr 0.9.4".into())).status,
            Status::Pass
        );
        let old = check_herdr(Some(path), &Ok("herdr 0.7.4".into()));
        assert_eq!(old.status, Status::Fail);
        assert!(old.summary.contains("needs 0.7.5"));
        assert_eq!(check_herdr(None, &Err("x".into())).status, Status::Fail);
        assert_eq!(
            check_herdr(Some(path), &Err("exit status: 1".into())).status,
            Status::Fail
        );
        assert_eq!(
            check_herdr(Some(path), &Ok("what".into())).status,
            Status::Warn
        );
    }

    fn plugin_list(entry: &str) -> Result<String, String> {
        Ok(format!(
            "{{\"id\":\"cli:plugin\",\"result\":{{\"type\":\"plugin_list\",\"plugins\":[{{\"plugin_id\":\"other\",\"enabled\":true}}{entry}]}}}}"
        ))
    }

    #[test]
    fn the_plugin_must_be_installed_enabled_and_this_version() {
        let enabled = plugin_list(
            ",{\"plugin_id\":\"heeler\",\"version\":\"0.8.0\",\"enabled\":true,\"source\":{\"kind\":\"github\"}}",
        );
        let check = check_plugin(&enabled, "0.8.0", "");
        assert_eq!(check.status, Status::Pass, "{check:?}");
        assert!(check.summary.contains("default session"));

        let disabled =
            plugin_list(",{\"plugin_id\":\"heeler\",\"version\":\"0.8.0\",\"enabled\":false}");
        let check = check_plugin(&disabled, "0.8.0", "work");
        assert_eq!(check.status, Status::Fail);
        assert_eq!(
            check.fix.as_deref(),
            Some("herdr --session work plugin enable heeler")
        );

        let older =
            plugin_list(",{\"plugin_id\":\"heeler\",\"version\":\"0.6.0\",\"enabled\":true}");
        assert_eq!(check_plugin(&older, "0.8.0", "").status, Status::Warn);

        let absent = plugin_list("");
        assert_eq!(check_plugin(&absent, "0.8.0", "").status, Status::Fail);

        assert_eq!(
            check_plugin(&Err("no server".into()), "0.8.0", "").status,
            Status::Warn
        );
        assert_eq!(
            check_plugin(&Ok("nope".into()), "0.8.0", "").status,
            Status::Warn
        );
    }

    #[test]
    fn every_running_session_is_asked() {
        let sessions = r#"{"sessions":[{"default":true,"name":"default","running":true},{"default":false,"name":"work","running":true},{"default":false,"name":"old","running":false},{"name":"../x","running":true}]}"#;
        assert_eq!(running_sessions(sessions), ["default", "work"]);
        assert!(running_sessions("nope").is_empty());

        let enabled =
            plugin_list(",{\"plugin_id\":\"heeler\",\"version\":\"0.8.0\",\"enabled\":true}");
        let disabled =
            plugin_list(",{\"plugin_id\":\"heeler\",\"version\":\"0.8.0\",\"enabled\":false}");
        let both = check_plugin_sessions(
            &[
                ("default".to_owned(), enabled.clone()),
                ("work".to_owned(), disabled),
            ],
            "0.8.0",
        );
        assert_eq!(both.status, Status::Fail);
        assert!(both.summary.contains("enabled in the default session"));
        assert!(both.summary.contains("disabled in session work"));
        assert_eq!(
            both.fix.as_deref(),
            Some("herdr --session work plugin enable heeler")
        );

        let one = check_plugin_sessions(&[("default".to_owned(), enabled)], "0.8.0");
        assert_eq!(one.status, Status::Pass);
        assert_eq!(check_plugin_sessions(&[], "0.8.0").status, Status::Warn);
    }
}

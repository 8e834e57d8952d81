//! The command line's habits, run on the real binary: the help lists what a
//! person runs and hides the plumbing (which still runs), `-h` and `-V`,
//! short flags, "did you mean", options that would do nothing refused, and
//! every usage error one line on stderr with exit 2.

use crate::usage_fixture;

use std::path::Path;
use std::process::Command;

use heeler::base::json::{self, Value};
use usage_fixture::temp_dir;

/// Runs heeler with an empty environment but `HOME` (a scratch home).
fn heeler_in(home: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_heeler"))
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("TZ", "UTC")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Runs heeler where nothing it could write matters (help, errors).
fn heeler(args: &[&str]) -> (i32, String, String) {
    heeler_in(Path::new("/nonexistent"), args)
}

/// The names a help text lists under "Commands:" (two spaces in; wrapped
/// descriptions are further in).
fn commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// What herdr's manifest, sshd's forced command and the app run.
const PLUMBING: [&str; 8] = [
    "accept",
    "notify-hook",
    "activity-hook",
    "hook-worker",
    "sidebar-hook",
    "pair-action",
    "usage",
    "wire",
];

#[test]
fn the_help_lists_what_a_person_runs_and_plumbing_has_its_own() {
    let (status, help, err) = heeler(&["--help"]);
    assert_eq!((status, err.as_str()), (0, ""));
    assert_eq!(
        commands(&help),
        ["pair", "usage", "doctor", "link"],
        "{help}"
    );
    assert!(help.contains("help plumbing"), "{help}");
    assert!(help.contains("Examples:"), "{help}");
    let (status, plumbing, _) = heeler(&["help", "plumbing"]);
    assert_eq!(status, 0);
    assert_eq!(commands(&plumbing), PLUMBING, "{plumbing}");
    let (_, usage_plumbing, _) = heeler(&["help", "plumbing", "usage"]);
    assert_eq!(
        commands(&usage_plumbing),
        ["query", "worker", "claude-limits", "live-action"]
    );
    // `heeler usage --help` lists the views only.
    let (_, usage, _) = heeler(&["usage", "--help"]);
    assert_eq!(
        commands(&usage),
        [
            "daily",
            "weekly",
            "monthly",
            "session",
            "blocks",
            "models",
            "dirs",
            "statusline",
            "live"
        ]
    );
    // The live screen needs a terminal; --watch takes none of the one-shot
    // summary's output options.
    let (status, out, err) = heeler(&["usage", "live"]);
    assert_eq!((status, out.as_str()), (1, ""));
    assert!(
        err.contains("heeler usage live must run in a terminal"),
        "{err}"
    );
    let (status, _, err) = heeler(&["usage", "--watch", "--json"]);
    assert_eq!(status, 2);
    assert!(err.contains("--watch is the live screen"), "{err}");
}

#[test]
fn dash_h_is_help_and_dash_v_is_the_version() {
    for path in [
        &[][..],
        &["pair"],
        &["usage"],
        &["usage", "daily"],
        &["doctor"],
    ] {
        let long = heeler(&[path, &["--help"]].concat());
        let short = heeler(&[path, &["-h"]].concat());
        let word = heeler(&[path, &["help"]].concat());
        assert_eq!(long.0, 0, "{path:?}");
        assert_eq!(long, short, "{path:?}");
        assert_eq!(long, word, "{path:?}");
    }
    let version = format!("heeler {}\n", env!("CARGO_PKG_VERSION"));
    for flag in ["-V", "--version"] {
        assert_eq!(heeler(&[flag]), (0, version.clone(), String::new()));
    }
}

#[test]
fn every_view_s_help_has_examples_and_the_short_flags() {
    for view in [
        "daily",
        "weekly",
        "monthly",
        "session",
        "blocks",
        "models",
        "dirs",
        "statusline",
    ] {
        let (status, help, _) = heeler(&["usage", view, "--help"]);
        assert_eq!(status, 0);
        assert!(help.contains("Examples:"), "{view}: {help}");
        assert!(help.contains("-a, --agent"), "{view}: {help}");
        assert!(help.contains("-z, --tz"), "{view}: {help}");
        if view != "statusline" {
            for flag in ["-s, --since", "-u, --until", "-j, --json"] {
                assert!(help.contains(flag), "{view}: {flag}: {help}");
            }
        }
    }
}

#[test]
fn a_mistyped_name_gets_the_nearest_one() {
    for (args, line) in [
        (
            &["usage", "dayly"][..],
            "heeler usage: Unrecognized argument: dayly (did you mean daily?); see heeler usage --help\n",
        ),
        (
            &["usage", "daily", "--jsn"],
            "heeler usage daily: Unrecognized argument: --jsn (did you mean --json?); see heeler usage daily --help\n",
        ),
        (
            &["dcotor"],
            "heeler: Unrecognized argument: dcotor (did you mean doctor?); see heeler --help\n",
        ),
        (
            &["usage", "montly", "-j"],
            "heeler usage: Unrecognized argument: montly (did you mean monthly?); see heeler usage --help\n",
        ),
        // The plumbing's list is its own help.
        (
            &["help", "plumbing", "acept"],
            "heeler: Unrecognized argument: acept (did you mean accept?); see heeler help plumbing\n",
        ),
        // Nothing near: no suggestion.
        (
            &["usage", "zzz"],
            "heeler usage: Unrecognized argument: zzz; see heeler usage --help\n",
        ),
    ] {
        assert_eq!(
            heeler(args),
            (2, String::new(), line.to_string()),
            "{args:?}"
        );
    }
}

#[test]
fn options_that_would_do_nothing_are_refused() {
    for args in [
        &["usage", "statusline", "--json"][..],
        &["usage", "statusline", "--csv"],
        &["usage", "statusline", "--since", "2026-11-01"],
        &["usage", "statusline", "--until", "2026-11-01"],
        &["usage", "statusline", "--breakdown"],
        &["usage", "blocks", "--breakdown"],
        &["usage", "blocks", "-b"],
    ] {
        let (status, out, err) = heeler(args);
        assert_eq!((status, out.as_str()), (2, ""), "{args:?}");
        assert!(err.contains("Unrecognized argument"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    // The summary's options before a view's name.
    let (status, _, err) = heeler(&["usage", "--json", "daily"]);
    assert_eq!(status, 2);
    assert_eq!(
        err,
        "heeler usage: a view's options go after its name (heeler usage daily --json); see heeler usage --help\n"
    );
}

#[test]
fn every_usage_error_is_one_line_and_exit_2() {
    for args in [
        &["--bogus"][..],
        &["-x"],
        &["usage", "daily", "--since"],
        &["usage", "--agent"],
        &["doctor", "--bogus"],
        &["pair", "--address"],
        &["wire", "kid"],
        &["wire", "pairing", "decode"],
        &["help", "plumbing", "bogus"],
        &["usage", "worker", "--bogus"],
    ] {
        let (status, out, err) = heeler(args);
        assert_eq!((status, out.as_str()), (2, ""), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("heeler"), "{args:?}: {err}");
        let err = err.trim_end();
        assert!(
            err.ends_with("--help") || err.ends_with("see heeler help plumbing"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn the_plumbing_runs_as_before() {
    let home = temp_dir("cli-plumbing");
    // The app's query reads its own arguments: an unknown option is an
    // error inside the document, and the answer is still exit 0.
    let (status, out, _) = heeler_in(
        &home,
        &[
            "usage",
            "query",
            "--refresh",
            "never",
            "--from-the-future",
            "1",
        ],
    );
    assert_eq!(status, 0);
    let doc = json::parse(out.trim()).unwrap();
    assert_eq!(doc.get("v").and_then(Value::as_i64), Some(1));
    let codes: Vec<&str> = doc
        .get("errors")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .filter_map(|e| e.get("code").and_then(Value::as_str))
        .collect();
    assert!(codes.contains(&"unknown_option"), "{out}");
    // The hidden commands answer --help too.
    for name in ["accept", "notify-hook", "hook-worker", "sidebar-hook"] {
        let (status, help, _) = heeler(&[name, "--help"]);
        assert_eq!(status, 0, "{name}");
        assert!(help.starts_with(&format!("Usage: heeler {name}")), "{help}");
    }
    // A short flag runs a view: the daily JSON document of an empty home.
    let (status, _, _) = heeler_in(&home, &["usage", "worker"]);
    assert_eq!(status, 0);
    let (status, out, err) = heeler_in(
        &home,
        &["usage", "daily", "-j", "-z", "UTC", "-a", "claude"],
    );
    assert_eq!(status, 0, "{err}");
    let doc = json::parse(out.trim()).unwrap();
    assert_eq!(doc.get("view").and_then(Value::as_str), Some("daily"));
    settle(&home);
}

/// Waits for a background worker a view started to finish, so the
/// scratch home can be removed.
fn settle(home: &Path) {
    let dir = heeler::usage::paths::UsageDir(home.join(".local/state/herdr/plugins/heeler/usage"));
    for _ in 0..200 {
        if !heeler::usage::worker::is_running(&dir) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

//! The `heeler wire` command line itself: argument errors, random nonces and
//! the process contract (nothing on stdout on failure, exit statuses).

use std::io::Write;
use std::process::{Command, Stdio};

const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
const PLAINTEXT: &str = r#"{"pane":"wV:p1","kind":"claude","status":"blocked","ts":1753305600}"#;

fn heeler(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_heeler"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that rejects its arguments exits without reading stdin: a
    // broken pipe here is expected, the exit status is what counts.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn random_nonces_differ_and_both_open() {
    let (_, first, _) = heeler(&["wire", "notify", "seal", "--key", KEY], PLAINTEXT);
    let (_, second, _) = heeler(&["wire", "notify", "seal", "--key", KEY], PLAINTEXT);
    assert_ne!(first, second, "a fresh nonce per envelope");
    for envelope in [first, second] {
        let (status, opened, _) = heeler(&["wire", "notify", "open", "--key", KEY], &envelope);
        assert_eq!((status, opened.trim_end()), (0, PLAINTEXT));
    }
}

#[test]
fn bad_arguments_are_typed_errors() {
    let cases: [(&[&str], &str, &str); 6] = [
        (&["wire", "kid", "--key", "AAEC"], "", "error: bad_key\n"),
        (
            &["wire", "notify", "seal", "--key", KEY, "--nonce", "AAAA"],
            PLAINTEXT,
            "error: bad_nonce\n",
        ),
        (
            &["wire", "notify", "seal", "--key", KEY],
            "{\"pane\":\"p\"}",
            "error: bad_payload\n",
        ),
        (
            &["wire", "notify", "seal", "--key", KEY],
            "not json",
            "error: bad_payload\n",
        ),
        (
            &[
                "wire", "activity", "build", "--host", "h", "--pins", "[oops",
            ],
            "[]",
            "error: bad_pins\n",
        ),
        (&["wire", "pairing", "encode"], "{}", "error: bad_payload\n"),
    ];
    for (args, stdin, expected) in cases {
        let (status, stdout, stderr) = heeler(args, stdin);
        assert_eq!(
            (status, stdout.as_str(), stderr.as_str()),
            (1, "", expected),
            "{args:?}"
        );
    }
}

#[test]
fn no_command_is_a_usage_error_and_version_prints() {
    let (status, stdout, stderr) = heeler(&[], "");
    assert_eq!((status, stdout.as_str()), (2, ""));
    assert!(stderr.contains("no command"), "{stderr}");
    let (status, stdout, _) = heeler(&["--version"], "");
    assert_eq!((status, stdout.as_str()), (0, "heeler 0.8.0\n"));
}

#[test]
fn every_usage_error_exits_2_like_no_command() {
    // One line: the command, argh's message, where the help is.
    let cases: &[(&[&str], &str)] = &[
        (
            &["--bogus"],
            "heeler: Unrecognized argument: --bogus; see heeler --help\n",
        ),
        (
            &["bogus"],
            "heeler: Unrecognized argument: bogus; see heeler --help\n",
        ),
        (
            &["pair", "--address"],
            "heeler pair: No value provided for option '--address'; see heeler pair --help\n",
        ),
        (
            &["wire", "kid"],
            "heeler wire kid: Required options not provided: --key; see heeler wire kid --help\n",
        ),
        (
            &["accept", "--bogus"],
            "heeler accept: Unrecognized argument: --bogus; see heeler accept --help\n",
        ),
    ];
    for (args, message) in cases {
        let (status, stdout, stderr) = heeler(args, "");
        assert_eq!(
            (status, stdout.as_str(), stderr.as_str()),
            (2, "", *message),
            "{args:?}"
        );
    }
    // Asking for help is no error: stdout, exit 0.
    let (status, stdout, stderr) = heeler(&["--help"], "");
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert!(stdout.starts_with("Usage: heeler"), "{stdout}");
}

#[test]
fn session_without_argument_is_the_default_session() {
    assert_eq!(heeler(&["wire", "session"], "").1, "\"\"\n");
    assert_eq!(
        heeler(&["wire", "session", "/tmp/custom.sock"], "").1,
        "null\n"
    );
}

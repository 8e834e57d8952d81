//! Commands whose stdout is a pipe nobody reads any more (`heeler … | head`,
//! `| true`) end as they would have with the output read: a broken pipe is
//! not a failure, and never an abort.

use crate::support;

use std::process::{Command, Stdio};

use support::TempDir;

/// Runs `heeler args` in a HOME of its own with stdout a pipe whose reading
/// end is already closed (or, with `closed == false`, an ordinary pipe).
fn status(args: &[&str], closed: bool) -> Option<i32> {
    let home = TempDir::new("closed-stdout");
    let mut command = Command::new(env!("CARGO_BIN_EXE_heeler"));
    command
        .args(args)
        .env_clear()
        .env("HOME", &home.path)
        .env("PATH", "")
        .env("HERDR_BIN_PATH", "/nonexistent/herdr")
        .env("HERDR_PLUGIN_CONFIG_DIR", home.path.join("config"))
        .env("HERDR_PLUGIN_STATE_DIR", home.path.join("state"))
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    if closed {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        command.stdout(writer);
    } else {
        command.stdout(Stdio::piped());
    }
    command.output().unwrap().status.code()
}

#[test]
fn a_closed_stdout_is_the_same_exit_status_as_a_read_one() {
    for args in [
        &["--version"][..],
        &["wire", "session"],
        &["doctor"],
        &["doctor", "--json"],
    ] {
        let read = status(args, false);
        assert!(read.is_some(), "{args:?} ended by a signal");
        assert_eq!(
            status(args, true),
            read,
            "heeler {args:?} into a closed pipe"
        );
    }
}

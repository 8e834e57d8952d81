//! Usage state that is not a regular file (issue 46): a FIFO or a link to
//! `/dev/zero` in place of each file under `usage/` must leave
//! `heeler usage statusline` and `heeler usage query` (the app's SSH
//! command) answering, degraded rather than hung, and must not be read
//! until memory runs out. Each command runs under a watchdog that kills it
//! past a minute, so a hang fails the test instead of holding it.

use crate::drip::{Ended, run_watched};
use crate::usage_fixture::*;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Longer than any of these commands takes on a working cache, far
/// shorter than a hang.
const WATCHDOG: Duration = Duration::from_secs(60);

fn heeler(home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_heeler"));
    command
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn usage_dir(home: &Path) -> std::path::PathBuf {
    home.join(".local/state/herdr/plugins/heeler/usage")
}

/// Waits (a bounded time) for a worker a command started to end, so the
/// next injection and the scratch home's removal see no writer.
fn settle(home: &Path) {
    let dir = heeler::usage::paths::UsageDir(usage_dir(home));
    for _ in 0..400 {
        if !heeler::usage::worker::is_running(&dir) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("a usage worker was still running after 20 s");
}

/// What is planted in place of a state file.
#[derive(Debug, Clone, Copy)]
enum Plant {
    Fifo,
    DevZero,
}

fn plant(path: &Path, what: Plant) {
    let _ = std::fs::remove_file(path);
    match what {
        Plant::Fifo => {
            let status = Command::new("mkfifo").arg(path).status().unwrap();
            assert!(status.success(), "mkfifo {path:?}");
        }
        Plant::DevZero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
    }
}

#[test]
fn usage_state_files_that_are_fifos_or_dev_zero_never_hold_statusline_or_query() {
    let home = temp_dir("usage-state-plant");
    let now = heeler::base::clock::unix_seconds();
    write(
        &home.join(".claude/projects/-home-dev-alpha/s.jsonl"),
        &(Claude {
            at: now - 60,
            ..Claude::default()
        }
        .line()
            + "\n"),
    );
    let worker = heeler(&home, &["usage", "worker"]).output().unwrap();
    assert!(worker.status.success(), "{worker:?}");
    // The limits and the zones a query asked for exist only after a
    // query or a probe: write them as heeler does.
    let dir = usage_dir(&home);
    let query = heeler(&home, &["usage", "query", "--tz", "Europe/Paris"])
        .output()
        .unwrap();
    assert!(query.status.success(), "{query:?}");
    settle(&home);
    for name in ["limits-claude.json", "limits-codex.json"] {
        write(
            &dir.join(name),
            r#"{"state":"error","error":"x","attempted_at":1}"#,
        );
    }
    write(&dir.join("claude-limits-trigger.json"), r#"{"at":1}"#);
    write(&dir.join("claude-limits.wanted"), "");
    write(&dir.join("runtime-v1.json"), r#"{"v":1}"#);
    write(&dir.join("worker.log"), "");
    let names = || {
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".kept"))
            .collect();
        names.sort();
        names
    };
    let first = names();
    for expected in [
        "recent-v1.json",
        "snapshot-v1.json",
        "aggregate-v1.bin",
        "index-v1.bin",
        "zones-wanted",
        "worker.lock",
    ] {
        assert!(first.iter().any(|n| n == expected), "{expected}: {first:?}");
    }
    let mut slowest = (Duration::ZERO, String::new());
    let mut tried = 0;
    // Every file there, and those a worker writes meanwhile (a new
    // owners table or events file), each in turn.
    let mut done = std::collections::BTreeSet::new();
    while let Some(name) = names().into_iter().find(|n| !done.contains(n)) {
        assert!(done.len() < 64, "files keep appearing: {done:?}");
        done.insert(name.clone());
        let path = dir.join(&name);
        let kept = dir.join(format!("{name}.kept"));
        // A worker a command started may have replaced or removed a file
        // (an events file after a compaction, a consumed request).
        if std::fs::rename(&path, &kept).is_err() {
            println!("{name}: gone before its turn");
            continue;
        }
        tried += 1;
        for what in [Plant::Fifo, Plant::DevZero] {
            plant(&path, what);
            for args in [&["usage", "statusline"][..], &["usage", "query"]] {
                let (ended, took) = run_watched(heeler(&home, args), None, WATCHDOG);
                let case = format!("{args:?} with {name} a {what:?}");
                let Ended::Exited(output) = ended else {
                    panic!("{case}: still running after {WATCHDOG:?}");
                };
                assert!(output.status.success(), "{case}: {output:?}");
                assert!(!output.stdout.is_empty(), "{case}: no answer");
                println!("{case}: {} ms", took.as_millis());
                if took > slowest.0 {
                    slowest = (took, case);
                }
                settle(&home);
            }
        }
        let _ = std::fs::remove_file(&path);
        std::fs::rename(&kept, &path).unwrap();
    }
    assert!(tried >= 6, "only {tried} files planted");
    println!(
        "slowest answer with a planted file: {} ms ({})",
        slowest.0.as_millis(),
        slowest.1
    );
}

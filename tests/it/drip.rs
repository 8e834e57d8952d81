//! Every reader of something another process writes, against a writer
//! that sends one byte every 2 s and never finishes (issue 45): each
//! command ends within its documented bound (docs/security.md) with a
//! clear error. A drip stops itself after [`DRIP_FOR`], so a reader that
//! waited it out would still end, late, and fail the test; each command
//! also runs under a watchdog. Times are measured and printed, never
//! asserted against a clock (the bounds are the commands' own).

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How a watched command ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself.
    Exited(Output),
    /// The watchdog killed it.
    Killed,
}

/// Runs `command` (stdout and stderr piped), feeding its stdin from
/// `stdin` on a thread when given, and kills it past `watchdog`. Returns
/// how it ended and how long it ran.
pub fn run_watched(
    mut command: Command,
    stdin: Option<Box<dyn FnOnce(std::process::ChildStdin) + Send>>,
    watchdog: Duration,
) -> (Ended, Duration) {
    if stdin.is_some() {
        command.stdin(Stdio::piped());
    }
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let (Some(feed), Some(pipe)) = (stdin, child.stdin.take()) {
        std::thread::spawn(move || feed(pipe));
    }
    let readers = [
        drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
        drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
    ];
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let took = started.elapsed();
            let [stdout, stderr] = readers.map(|r| r.join().unwrap());
            return (
                Ended::Exited(Output {
                    status,
                    stdout,
                    stderr,
                }),
                took,
            );
        }
        if started.elapsed() > watchdog {
            kill(&mut child);
            return (Ended::Killed, started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn drain(pipe: Option<Box<dyn Read + Send>>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

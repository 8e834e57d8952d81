//! Running another program with one overall deadline: the one way heeler
//! runs `herdr` (and the other short helper commands that take no input).
//!
//! Why one place: a plugin process that waits on a child with no bound
//! hangs with it (a stuck `HERDR_BIN_PATH` held both hooks, the pair action
//! and doctor), a child that writes without end fills our memory, and a
//! child killed alone leaves its own children holding the output pipes open.
//! So the child runs as the leader of its own process group; its stdout and
//! stderr are read together in this thread up to a cap each (the rest is
//! read and dropped, so the child never blocks on a full pipe); and when the
//! deadline passes the whole group is killed and the child reaped. Output a
//! descendant keeps writing after the child exited is not waited for.

use std::io::{self, Read};
use std::os::fd::AsFd;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::base::sys;

/// What a child that ended within its deadline left.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    /// At most the cap given to [`run`].
    pub stdout: Vec<u8>,
    /// At most the cap given to [`run`].
    pub stderr: Vec<u8>,
}

/// Why a child gave no result.
#[derive(Debug)]
pub enum RunError {
    /// It could not be started.
    Spawn(io::Error),
    /// The deadline passed; its process group was killed.
    TimedOut(Duration),
    /// Waiting for it or reading its output failed; it was killed.
    Wait(io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "{e}"),
            RunError::TimedOut(after) => write!(f, "timed out after {} ms", after.as_millis()),
            RunError::Wait(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Spawn(e) | RunError::Wait(e) => Some(e),
            RunError::TimedOut(_) => None,
        }
    }
}

/// How long one wait for output lasts before the child's exit is checked.
const EXIT_CHECK: Duration = Duration::from_millis(20);

/// Runs `command` with stdin closed and stdout and stderr captured (each
/// kept up to `max_output` bytes), in its own process group. Past
/// `deadline` the group is killed and the result is [`RunError::TimedOut`].
pub fn run(
    command: &mut Command,
    deadline: Duration,
    max_output: usize,
) -> Result<Finished, RunError> {
    use std::os::unix::process::CommandExt;
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(RunError::Spawn)?;
    let outcome = collect(&mut child, started + deadline, max_output);
    match outcome {
        Ok(Some(finished)) => Ok(finished),
        Ok(None) => {
            stop(&mut child);
            Err(RunError::TimedOut(deadline))
        }
        Err(e) => {
            stop(&mut child);
            Err(RunError::Wait(e))
        }
    }
}

/// Kills the child's process group and reaps the child.
fn stop(child: &mut Child) {
    sys::kill_process_group(child.id());
    let _ = child.kill();
    let _ = child.wait();
}

/// One captured stream: open until EOF, its bytes up to the cap.
struct Stream<R> {
    pipe: Option<R>,
    kept: Vec<u8>,
}

impl<R: Read + AsFd> Stream<R> {
    fn new(pipe: Option<R>) -> Stream<R> {
        Stream {
            pipe,
            kept: Vec::new(),
        }
    }

    /// Reads what is there (the pipe was reported readable, so this does
    /// not block); closes the stream at EOF.
    fn read_some(&mut self, max_output: usize) -> io::Result<()> {
        let Some(pipe) = self.pipe.as_mut() else {
            return Ok(());
        };
        let mut buffer = [0u8; 8192];
        match pipe.read(&mut buffer) {
            Ok(0) => self.pipe = None,
            Ok(n) => {
                let room = max_output.saturating_sub(self.kept.len());
                self.kept.extend_from_slice(&buffer[..n.min(room)]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

/// Reads both pipes until the child has exited and its output is drained;
/// `Ok(None)` when `until` passes first.
fn collect(child: &mut Child, until: Instant, max_output: usize) -> io::Result<Option<Finished>> {
    let mut out = Stream::new(child.stdout.take());
    let mut err = Stream::new(child.stderr.take());
    let mut exited: Option<ExitStatus> = None;
    loop {
        if exited.is_none() {
            exited = child.try_wait()?;
        }
        let now = Instant::now();
        let drained = out.pipe.is_none() && err.pipe.is_none();
        match exited {
            // Exited (and reaped): past the deadline its output is as good
            // as drained.
            Some(status) if drained || now >= until => {
                return Ok(Some(Finished {
                    status,
                    stdout: out.kept,
                    stderr: err.kept,
                }));
            }
            None if now >= until => return Ok(None),
            _ => {}
        }
        // Once the child has exited, only what is already in the pipes is
        // read: a descendant holding them open is not waited for.
        let wait = if exited.is_some() {
            Duration::ZERO
        } else {
            (until - now).min(EXIT_CHECK)
        };
        let ready = {
            let mut fds = Vec::with_capacity(2);
            if let Some(pipe) = &out.pipe {
                fds.push(pipe.as_fd());
            }
            if let Some(pipe) = &err.pipe {
                fds.push(pipe.as_fd());
            }
            sys::poll_readable(&fds, wait)?
        };
        let mut ready = ready.into_iter();
        let out_ready = out.pipe.is_some() && ready.next() == Some(true);
        let err_ready = err.pipe.is_some() && ready.next() == Some(true);
        if out_ready {
            out.read_some(max_output)?;
        }
        if err_ready {
            err.read_some(max_output)?;
        }
        if exited.is_some() && !out_ready && !err_ready {
            // Drained: whatever is left open belongs to a descendant.
            out.pipe = None;
            err.pipe = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scratch::ScratchDir;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("/bin/sh");
        command.args(["-c", script]);
        command
    }

    #[test]
    fn output_and_status_of_a_child_that_ends() {
        let done = run(
            &mut sh("echo out; echo err >&2; exit 3"),
            Duration::from_secs(10),
            1024,
        )
        .unwrap();
        assert_eq!(done.status.code(), Some(3));
        assert_eq!(done.stdout, b"out\n");
        assert_eq!(done.stderr, b"err\n");
    }

    #[test]
    fn output_is_capped_and_the_child_is_not_blocked_by_it() {
        let done = run(
            &mut sh("head -c 1000000 /dev/zero; echo tail >&2"),
            Duration::from_secs(10),
            1000,
        )
        .unwrap();
        assert!(done.status.success());
        assert_eq!(done.stdout.len(), 1000);
        assert_eq!(done.stderr, b"tail\n");
    }

    fn alive(pid: &str) -> bool {
        // A zombie waiting for its new parent to reap it is gone too.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(") ")
                .next()
                .is_some_and(|s| !s.starts_with('Z'))
        })
    }

    #[test]
    fn a_hanging_child_and_its_children_are_killed_at_the_deadline() {
        let scratch = ScratchDir::new("process-hang");
        let pid_file = scratch.join("pid");
        let script = format!("sleep 60 & echo $! > '{}'; wait", pid_file.display());
        let started = Instant::now();
        let result = run(&mut sh(&script), Duration::from_millis(500), 1024);
        assert!(matches!(result, Err(RunError::TimedOut(_))), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let pid = pid.trim();
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            !alive(pid)
        });
        assert!(gone, "the grandchild {pid} outlived the deadline");
    }

    #[test]
    fn a_descendant_holding_the_pipes_is_not_waited_for() {
        let scratch = ScratchDir::new("process-descendant");
        let pid_file = scratch.join("pid");
        let script = format!("sleep 30 & echo $! > '{}'; echo done", pid_file.display());
        let started = Instant::now();
        let done = run(&mut sh(&script), Duration::from_secs(20), 1024).unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(done.stdout, b"done\n");
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let _ = Command::new("kill").arg(pid.trim()).status();
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let result = run(
            &mut Command::new("/nonexistent/heeler-x"),
            Duration::from_secs(1),
            1,
        );
        assert!(matches!(result, Err(RunError::Spawn(_))));
    }
}

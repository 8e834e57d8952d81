//! How a command ends: the one line it prints on stderr and the exit status.
//!
//! Each command has its own typed error enum; converting it into a
//! [`Failure`] is where its wording and exit status are decided, so `main`
//! stays a thin dispatcher.
//!
//! A command's output goes through [`write_stdout`] too, so a reader that
//! went away (`heeler doctor | head -1`) ends the command as success, as in
//! other command-line tools, instead of a panic on the broken pipe.

use std::io::Write;

/// A command's failure: one line for stderr and the process exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub line: String,
    pub status: u8,
}

impl Failure {
    pub fn new(line: impl Into<String>, status: u8) -> Failure {
        Failure {
            line: line.into(),
            status,
        }
    }
}

/// The exit status of a command a termination signal ended (after its
/// cleanup): 128 + the signal, as a shell reports a process the signal
/// killed.
pub fn signal_status(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(1)
}

/// Writes `text` to stdout and flushes it. A broken pipe is success: the
/// reader has all it wanted. Any other write error is a failure.
pub fn write_stdout(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::new(
            format!("heeler: cannot write to stdout: {e}"),
            1,
        )),
    }
}

/// Writes a failure's line to stderr; a closed stderr loses the line, never
/// the exit status.
pub fn write_stderr_line(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

//! How a command ends: the one line it prints on stderr and the exit status.
//!
//! Each command has its own typed error enum; converting it into a
//! [`Failure`] is where its wording and exit status are decided, so `main`
//! stays a thin dispatcher.

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

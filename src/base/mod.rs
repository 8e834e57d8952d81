//! Foundations every area shares, and the only code that talks to the
//! operating system below `std`.
//!
//! - `atomic_file.rs`: every file heeler rewrites (temp file, sync, rename,
//!   exact modes, through symbolic links, the sweep of leftover temp files;
//!   for a file others write without our lock, the checked replace that
//!   keeps their writes and whole-line `O_APPEND` appends) and the
//!   `LockFile` (an `O_EXCL` lock file held under `flock`) around
//!   read-modify-write cycles.
//! - `json.rs`: the insertion-ordered JSON value, an exact parser and a
//!   printer byte-identical to `JSON.stringify`.
//! - `base64.rs`: strict unpadded base64url and OpenSSH's standard base64.
//! - `clock.rs`: the one wall clock (Unix seconds, milliseconds, nanoseconds).
//! - `dirs.rs`: the one rule for the home directory, the XDG base dirs and
//!   the plugin's config and state directories.
//! - `state_file.rs`: the one safe read of a state file (no link, no
//!   FIFO, a regular file read up to a cap).
//! - `process.rs`: running a program with one overall deadline, its process
//!   group killed past it, its output read up to a cap.
//! - `tz.rs`: the one local-time mechanism: time zones from the system's
//!   TZif files and POSIX `TZ` rules, the Host's zone, the civil day
//!   numbers.
//! - `terminal.rs`: a full-screen terminal program's terminal (raw mode,
//!   the alternate screen, the cursor hidden, all put back on every way
//!   out) and its key reader thread; `keys.rs`: the keys such a program
//!   reacts to, decoded from raw terminal bytes.
//! - `sqlite.rs`: the one way heeler reads another program's SQLite
//!   database: read-only, never waiting on its writer, within a deadline
//!   and a heap limit.
//! - `sys.rs`: every `unsafe` block of the crate, each with a `// SAFETY:`.
//! - For unit tests only: `scratch.rs` (scratch directories),
//!   `test_rng.rs` (the one seeded random source) and `depth.rs` (the
//!   in-test random loops' round counts, deep under `HEELER_DEEP=1`).
//!
//! Architecture invariants: `base` imports nothing else from the crate, so
//! every other area may use it. It knows no wire format, no herdr concept and
//! no command: only bytes, files, time, directories and the OS.

pub mod atomic_file;
pub mod base64;
pub mod bytes;
pub mod clock;
#[cfg(test)]
pub(crate) mod depth;
pub mod dirs;
pub mod json;
pub mod keys;
pub mod process;
#[cfg(test)]
pub(crate) mod scratch;
pub(crate) mod sqlite;
pub(crate) mod state_file;
pub(crate) mod sys;
pub(crate) mod terminal;
#[cfg(test)]
pub(crate) mod test_rng;
pub mod tz;

pub use sys::disable_core_dumps;

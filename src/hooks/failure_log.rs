//! The hook failure log: `<HERDR_PLUGIN_STATE_DIR>/hook-failures.log`.
//!
//! The event hooks hand their slow work (debounce, re-check, delivery) to a
//! detached worker (`worker.rs`), whose stderr reaches no herdr plugin log.
//! What the worker fails at is appended here instead, one line per failure,
//! `<UTC time> <line>`, so that `heeler doctor` and a user can see it.
//!
//! The log is bounded: past [`CAP_BYTES`] the file is renamed to
//! `hook-failures.log.1` (replacing the previous one) and started over, so
//! at most two capped files exist; the check and the rotation are made
//! under a lock on the log, as workers of several sessions log at once. Both are 0600 and never written through
//! a symbolic link. Every line passes through the relay client's token
//! redaction first (hex runs of push-token length), and the lines written
//! here name tokens only by their 8-character prefix, so no key, token or
//! seed is ever logged.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::hooks::relay::redact_tokens;

/// The size past which the log is rotated.
pub(crate) const CAP_BYTES: u64 = 64 * 1024;

/// The longest line kept, in characters; longer ones are cut.
pub(crate) const MAX_LINE_CHARS: usize = 1_000;

/// `<plugin state dir>/hook-failures.log`.
pub fn path_in(plugin_state_dir: &Path) -> PathBuf {
    plugin_state_dir.join("hook-failures.log")
}

/// The rotated log beside `log`.
pub fn rotated_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().unwrap_or_default().to_os_string();
    name.push(".1");
    log.with_file_name(name)
}

/// One logged line as written: the time, a space, the redacted message on
/// one line (control characters become spaces), cut to [`MAX_LINE_CHARS`].
pub(crate) fn format_line(unix_seconds: i64, message: &str) -> String {
    let one_line: String = redact_tokens(message)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_LINE_CHARS)
        .collect();
    format!(
        "{} {}\n",
        crate::usage::time::format_timestamp(unix_seconds),
        one_line
    )
}

/// Whether a log of `len` bytes is rotated before `line_len` more are added.
pub(crate) fn rotates(len: u64, line_len: u64) -> bool {
    len > 0 && len + line_len > CAP_BYTES
}

/// How long an appender waits for another one's lock before it writes
/// without rotating (a line is never dropped for a lock).
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// Appends `message` to the log in `plugin_state_dir`; a failure to log is
/// returned for the caller to drop (there is nowhere left to report it).
///
/// Several workers log at once, so the size check, the rotation and the
/// write happen under an exclusive `flock` on the open log. A writer that
/// gets the lock checks first that its descriptor is still the file at the
/// path: if another writer rotated it meanwhile, it opens the new file, so
/// a rotation never moves a just-started log over the rotated one.
pub fn append(plugin_state_dir: &Path, message: &str) -> std::io::Result<()> {
    let log = path_in(plugin_state_dir);
    let line = format_line(crate::base::clock::unix_seconds(), message);
    crate::base::atomic_file::create_dir_all(plugin_state_dir, 0o700)?;
    // One open to rotate, one to write the fresh file, and spares for
    // rotations by others in between.
    for _ in 0..4 {
        let mut file = crate::base::sys::open_append_private(&log)?;
        if !lock_within(&file, LOCK_WAIT) {
            return file.write_all(line.as_bytes());
        }
        if !is_file_at(&file, &log) {
            continue;
        }
        if rotates(file.metadata()?.len(), line.len() as u64) {
            std::fs::rename(&log, rotated_path(&log))?;
            continue;
        }
        return file.write_all(line.as_bytes());
    }
    crate::base::sys::open_append_private(&log)?.write_all(line.as_bytes())
}

/// Takes an exclusive lock on `file` within `wait`; whether it was taken.
fn lock_within(file: &std::fs::File, wait: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + wait;
    loop {
        match crate::base::sys::try_lock_exclusive(file) {
            Ok(true) => return true,
            Ok(false) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            _ => return false,
        }
    }
}

/// Whether the open `file` is still the file at `path` (not rotated away).
fn is_file_at(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(at_path)) => open.dev() == at_path.dev() && open.ino() == at_path.ino(),
        _ => false,
    }
}

/// One failure read back: its time as written and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    pub time: String,
    pub message: String,
}

/// Splits one log line into its time and message.
pub fn parse_line(line: &str) -> Option<Logged> {
    let (time, message) = line.split_once(' ')?;
    (time.len() == 20 && time.ends_with('Z')).then(|| Logged {
        time: time.to_owned(),
        message: message.to_owned(),
    })
}

/// The last `n` failures of the log in `plugin_state_dir` (the rotated file
/// first), oldest first; a missing or unreadable log has none.
pub fn read_last(plugin_state_dir: &Path, n: usize) -> Vec<Logged> {
    let log = path_in(plugin_state_dir);
    let mut lines = Vec::new();
    for path in [rotated_path(&log), log] {
        if let Some(text) = crate::base::state_file::read_text(&path, 2 * CAP_BYTES) {
            lines.extend(text.lines().filter_map(parse_line));
        }
    }
    let skip = lines.len().saturating_sub(n);
    lines.split_off(skip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scratch::ScratchDir;

    #[test]
    fn a_line_is_timed_redacted_and_kept_on_one_line() {
        assert_eq!(
            format_line(
                1_800_000_000,
                "push for token 01234567… failed: {\"token\":\"0123456789abcdef0123\"}\nnext"
            ),
            "2027-01-15T08:00:00Z push for token 01234567… failed: {\"token\":\"[redacted]\"} next\n"
        );
        let long = "x".repeat(5_000);
        assert_eq!(
            format_line(0, &long).len(),
            "1970-01-01T00:00:00Z ".len() + MAX_LINE_CHARS + 1
        );
        assert_eq!(
            parse_line("2027-01-15T08:00:00Z notify-hook: x y"),
            Some(Logged {
                time: "2027-01-15T08:00:00Z".into(),
                message: "notify-hook: x y".into()
            })
        );
        assert_eq!(parse_line("garbage line"), None);
    }

    #[test]
    fn the_log_is_private_capped_and_rotated_once() {
        use std::os::unix::fs::PermissionsExt;
        let dir = ScratchDir::new("failure-log");
        let line = "activity-hook: ".to_owned() + &"y".repeat(900);
        for _ in 0..200 {
            append(dir.path(), &line).unwrap();
        }
        let log = path_in(dir.path());
        let rotated = rotated_path(&log);
        for path in [&log, &rotated] {
            let meta = std::fs::metadata(path).unwrap();
            assert!(
                meta.len() <= CAP_BYTES,
                "{} is {}",
                path.display(),
                meta.len()
            );
            assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        }
        assert!(!log.with_file_name("hook-failures.log.2").exists());
        let last = read_last(dir.path(), 3);
        assert_eq!(last.len(), 3);
        assert!(last.iter().all(|l| l.message == line));
        assert!(read_last(&dir.path().join("none"), 3).is_empty());
    }

    #[test]
    fn the_log_is_never_written_through_a_link() {
        let dir = ScratchDir::new("failure-log-link");
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "").unwrap();
        std::os::unix::fs::symlink(&target, path_in(dir.path())).unwrap();
        assert!(append(dir.path(), "notify-hook: x").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "");
    }

    #[test]
    fn concurrent_appenders_keep_the_cap_and_the_rotated_file() {
        // Workers of several sessions log at once. Each line is checked
        // against the cap and a full log is rotated while the log is locked,
        // so the log never passes the cap, and a rotation never replaces the
        // rotated file with a log another writer has just started.
        let dir = ScratchDir::new("failure-log-concurrent");
        let line = "notify-hook: ".to_owned() + &"z".repeat(2_000);
        let written = "2027-01-15T08:00:00Z ".len() + MAX_LINE_CHARS + 1;
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..150 {
                        append(dir.path(), &line).unwrap();
                    }
                });
            }
        });
        let log = path_in(dir.path());
        let rotated = std::fs::metadata(rotated_path(&log)).unwrap().len();
        let current = std::fs::metadata(&log).unwrap().len();
        assert!(current <= CAP_BYTES, "the log is {current} bytes");
        assert!(rotated <= CAP_BYTES, "the rotated log is {rotated} bytes");
        // A file is rotated only when the next line does not fit.
        assert!(
            rotated + written as u64 > CAP_BYTES,
            "the rotated log holds only {rotated} bytes"
        );
        for path in [rotated_path(&log), log] {
            let text = std::fs::read_to_string(path).unwrap();
            assert!(text.lines().all(|l| l.len() + 1 == written));
        }
    }
}

//! The latest-wins claim of the activity hook (`activity/claim.json`):
//! overlapping hook processes each write a claim, sleep, and only the one
//! whose claim is still the newest goes on to send.

use std::path::Path;
use std::time::Duration;

use crate::base::atomic_file::{self, LockFile, LockPolicy};
use crate::base::json::{self, Object, Value};
use crate::hooks::delivery::write_state_file;

/// The stored claim; missing or corrupt means none (and is never superseded).
pub(crate) fn read_claim(path: &Path) -> Option<Value> {
    crate::base::state_file::read_text(path, 64 * 1024).and_then(|t| json::parse(&t).ok())
}

/// Whether a claim read back after the debounce belongs to a newer hook.
pub fn superseded(stored: &Value, pid: u32, claimed_at_ms: u64) -> bool {
    let Some(stored_at) = stored.get("claimed_at_ms").and_then(Value::as_f64) else {
        return false;
    };
    let ours = claimed_at_ms as f64;
    stored_at > ours
        || (stored_at == ours && stored.get("pid").and_then(Value::as_f64) != Some(f64::from(pid)))
}

/// How long a hook waits for another's claim write.
const CLAIM_LOCK: LockPolicy = LockPolicy {
    deadline: Duration::from_millis(2_000),
    stale_after: Duration::from_millis(5_000),
    retry_every: Duration::from_millis(2),
};

/// Writes our claim and returns its time. Claims are written one at a time
/// under a lock and each is later than the one it replaces, so the file
/// always holds the newest claim and exactly one overlapping hook finds its
/// own claim after the debounce.
pub(crate) fn write_claim(path: &Path, pid: u32) -> std::io::Result<u64> {
    if let Some(dir) = path.parent() {
        atomic_file::create_dir_all(dir, 0o700)?;
    }
    let _lock = LockFile::acquire(&path.with_file_name("claim.lock"), CLAIM_LOCK).ok();
    let previous = read_claim(path)
        .and_then(|v| v.get("claimed_at_ms").and_then(Value::as_f64))
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map_or(0, |ms| ms as u64);
    let now = crate::base::clock::unix_millis();
    // Never behind a claim that is at most a second ahead of our clock.
    let claimed_at_ms = if previous >= now && previous - now < 1_000 {
        previous + 1
    } else {
        now
    };
    let claim = Value::Object(
        Object::new()
            .with("pid", u64::from(pid))
            .with("claimed_at_ms", claimed_at_ms),
    );
    write_state_file(path, &claim)?;
    Ok(claimed_at_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_supersede_by_time_then_pid() {
        let stored = json::parse(r#"{"pid":5,"claimed_at_ms":100}"#).unwrap();
        assert!(superseded(&stored, 4, 99));
        assert!(superseded(&stored, 4, 100));
        assert!(!superseded(&stored, 5, 100));
        assert!(!superseded(&stored, 4, 101));
        assert!(!superseded(&json::parse("{}").unwrap(), 4, 1));
    }
}

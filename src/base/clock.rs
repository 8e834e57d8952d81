//! The wall clock, read in one place.
//!
//! Every "now" heeler needs is a whole number of Unix seconds, milliseconds
//! or nanoseconds. A clock set before 1970 reads as 0 and one past the
//! representable range saturates, so no caller handles a clock error.
//! Decisions take the time as a value; only effect loops call these.
//!
//! It also reads the one test-only override of time: the cap on the
//! deadlines heeler waits out on other parties ([`TEST_DEADLINE_ENV`]).

use std::ffi::OsStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The environment variable that shortens every deadline heeler waits out
/// on another party (herdr's socket and CLI, the relay's attempt, the
/// Device Key line `accept` reads, the usage limits probes), for
/// tests only: milliseconds, 1 or more. A command reads it at its edge
/// ([`test_deadline_cap`]) and caps the deadlines it hands down at it, so
/// that a test of a hung party waits a second, not the contract's ten.
pub const TEST_DEADLINE_ENV: &str = "HEELER_TEST_DEADLINE_MS";

/// The cap [`TEST_DEADLINE_ENV`] sets in this process's environment.
pub(crate) fn test_deadline_cap() -> Option<Duration> {
    deadline_cap_of(std::env::var_os(TEST_DEADLINE_ENV).as_deref())
}

/// The cap a value of [`TEST_DEADLINE_ENV`] sets: unset, or anything but a
/// positive whole number of milliseconds, sets none.
pub(crate) fn deadline_cap_of(value: Option<&OsStr>) -> Option<Duration> {
    value
        .and_then(OsStr::to_str)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms >= 1)
        .map(Duration::from_millis)
}

fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
}

/// Whole Unix seconds now (`Math.floor(Date.now() / 1000)`).
pub fn unix_seconds() -> i64 {
    i64::try_from(since_epoch().as_secs()).unwrap_or(i64::MAX)
}

/// Unix milliseconds now (`Date.now()`).
pub(crate) fn unix_millis() -> u64 {
    u64::try_from(since_epoch().as_millis()).unwrap_or(u64::MAX)
}

/// Unix nanoseconds now, for ids that must differ between two calls.
pub(crate) fn unix_nanos() -> u64 {
    u64::try_from(since_epoch().as_nanos()).unwrap_or(u64::MAX)
}

/// Whole Unix seconds of a file time (modification time), `None` before 1970.
pub(crate) fn seconds_of(time: SystemTime) -> Option<i64> {
    let since = time.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(since.as_secs()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_units_read_the_same_instant() {
        let seconds = unix_seconds();
        let millis = unix_millis();
        let nanos = unix_nanos();
        // Read in order within a few seconds of each other.
        assert!(seconds > 1_600_000_000);
        assert!((millis / 1000) as i64 - seconds <= 2);
        assert!(nanos / 1_000_000 >= millis);
    }

    #[test]
    fn only_a_positive_number_of_milliseconds_caps_the_deadlines() {
        let cap = |v: &str| deadline_cap_of(Some(OsStr::new(v)));
        assert_eq!(deadline_cap_of(None), None);
        assert_eq!(cap("1000"), Some(Duration::from_millis(1000)));
        assert_eq!(cap(" 7 "), Some(Duration::from_millis(7)));
        for unusable in ["", "0", "-5", "1.5", "1s", "soon"] {
            assert_eq!(cap(unusable), None, "{unusable:?}");
        }
    }

    #[test]
    fn file_times_before_1970_have_no_seconds() {
        let before = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(seconds_of(before), None);
        assert_eq!(seconds_of(UNIX_EPOCH + Duration::from_secs(7)), Some(7));
    }
}

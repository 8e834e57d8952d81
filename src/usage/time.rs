//! Calendar arithmetic for Usage: ISO-8601 timestamps to Unix seconds and
//! Unix days to civil dates, without a date-time crate.
//!
//! Transcripts stamp every record in UTC (`2026-11-29T10:00:00.123Z`, some
//! writers with an explicit offset); Usage buckets them into local days, so
//! all we need is exact proleptic-Gregorian conversion both ways (the day
//! numbers' is `base::tz`'s, which the zone rules need too).

pub(crate) use crate::base::tz::civil_from_days;
pub use crate::base::tz::days_from_civil;

/// `YYYY-MM-DD` of a day number.
pub fn format_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Parses `YYYY-MM-DD` into a day number.
pub fn parse_date(text: &str) -> Option<i64> {
    date_of(text.as_bytes())
}

/// [`parse_date`] of bytes (anything but ASCII is refused).
fn date_of(b: &[u8]) -> Option<i64> {
    match *b {
        [y0, y1, y2, y3, b'-', m0, m1, b'-', d0, d1] => {
            let year = two_digits(y0, y1)? * 100 + two_digits(y2, y3)?;
            let (month, day) = (two_digits(m0, m1)? as u32, two_digits(d0, d1)? as u32);
            valid_date(year, month, day).then(|| days_from_civil(year, month, day))
        }
        _ => None,
    }
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

fn valid_date(year: i64, month: u32, day: u32) -> bool {
    (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month)
}

/// The number two ASCII digits spell. Fields of a fixed width are read
/// this way: every Claude and Codex usage line has a timestamp.
fn two_digits(tens: u8, ones: u8) -> Option<i64> {
    let (tens, ones) = (tens.wrapping_sub(b'0'), ones.wrapping_sub(b'0'));
    (tens < 10 && ones < 10).then(|| i64::from(tens * 10 + ones))
}

/// Parses an RFC 3339 / ISO-8601 timestamp (`2026-11-29T10:00:00.123Z`,
/// `…+08:00`, fraction optional) into whole Unix seconds (fraction dropped).
pub fn parse_timestamp(text: &str) -> Option<i64> {
    timestamp_of(text.as_bytes())
}

/// [`parse_timestamp`] of bytes: every byte of the format is ASCII, so
/// bytes that are not UTF-8 are refused like any other wrong byte (what a
/// parser that has not checked the text can rely on).
pub(crate) fn timestamp_of(b: &[u8]) -> Option<i64> {
    let (Some(date), Some(&[b'T' | b't' | b' ', h0, h1, b':', m0, m1, b':', s0, s1])) =
        (b.get(..10), b.get(10..19))
    else {
        return None;
    };
    let days = date_of(date)?;
    let hour = two_digits(h0, h1)?;
    let minute = two_digits(m0, m1)?;
    let second = two_digits(s0, s1)?;
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &b[19..];
    if let [b'.', fraction @ ..] = rest {
        let digits = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    let offset = match *rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h0, h1, b':', m0, m1] => {
            let hours = two_digits(h0, h1)?;
            let minutes = two_digits(m0, m1)?;
            if hours > 23 || minutes > 59 {
                return None;
            }
            let seconds = hours * 3600 + minutes * 60;
            if sign == b'-' { -seconds } else { seconds }
        }
        _ => return None,
    };
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Formats Unix seconds as `YYYY-MM-DDThh:mm:ssZ`.
pub fn format_timestamp(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        format_date(days),
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip_over_four_centuries() {
        for days in (-200_000..200_000).step_by(37) {
            let (y, m, d) = civil_from_days(days);
            assert!(valid_date(y, m, d));
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(format_date(days_from_civil(2024, 2, 29)), "2024-02-29");
    }

    #[test]
    fn timestamps_in_every_written_form() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_timestamp("2026-11-29T10:00:00.123Z"),
            Some(1_795_946_400)
        );
        assert_eq!(
            parse_timestamp("2026-11-29T18:00:00.5+08:00"),
            Some(1_795_946_400)
        );
        assert_eq!(
            parse_timestamp("2026-11-29T05:00:00-05:00"),
            Some(1_795_946_400)
        );
        assert_eq!(format_timestamp(1_795_946_400), "2026-11-29T10:00:00Z");
        for bad in [
            "",
            "2026-11-29",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-11-29T10:00:00",
            "2026-11-29T10:00:00.Z",
            "2026-11-29T25:00:00Z",
            "2026-11-29T10:00:00+0800",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_digit_of_a_timestamp_must_be_a_digit() {
        let good = "2026-11-29T18:00:00.5+08:00";
        assert_eq!(parse_timestamp(good), Some(1_795_946_400));
        for (at, c) in good.bytes().enumerate() {
            if !c.is_ascii_digit() {
                continue;
            }
            for wrong in [b'/', b':', b'a', b' ', 0x80] {
                let mut bad = good.as_bytes().to_vec();
                bad[at] = wrong;
                assert_eq!(timestamp_of(&bad), None, "{at}: {wrong:#x}");
            }
        }
        assert_eq!(parse_date("2026-11-29"), Some(1_795_946_400 / 86_400));
        assert_eq!(parse_date("2026-11-2x"), None);
        assert_eq!(parse_date("2026-11-290"), None);
    }
}

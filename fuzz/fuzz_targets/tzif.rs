//! The TZif reader against jiff: where both accept a file they give the
//! same UTC offset at every instant tried (around 0, the file's own
//! integers read as times, and each of those ±1 s). The POSIX footer
//! parser is also run alone on the input.
#![no_main]
use heeler::base::tz::{PosixTz, Zone};
use libfuzzer_sys::fuzz_target;

/// Instants to compare at: fixed ones plus every 4- and 8-byte big-endian
/// integer in the file (transition times are stored so), each ±1 s.
fn instants(data: &[u8]) -> Vec<i64> {
    let mut out = vec![0, -1, 1, 1_700_000_000, -2_208_988_800, 4_102_444_800];
    for w in data.windows(4).step_by(4).take(64) {
        out.push(i64::from(i32::from_be_bytes([w[0], w[1], w[2], w[3]])));
    }
    for w in data.windows(8).take(256) {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        out.push(i64::from_be_bytes(b));
    }
    let near: Vec<i64> = out
        .iter()
        .flat_map(|&t| [t.saturating_sub(1), t, t.saturating_add(1)])
        .collect();
    // jiff's range: years -9999 to 9999.
    near.into_iter()
        .filter(|t| (-377_705_116_800..=253_402_207_199).contains(t))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = PosixTz::parse(text);
    }
    let ours = Zone::from_tzif("Fuzz/Zone", data);
    let theirs = jiff::tz::TimeZone::tzif("Fuzz/Zone", data);
    if let (Ok(zone), Ok(tz)) = (&ours, &theirs) {
        if same_month_rule(data) {
            return;
        }
        for t in instants(data) {
            let Ok(ts) = jiff::Timestamp::from_second(t) else {
                continue;
            };
            let expected = tz.to_offset(ts);
            // jiff evaluates a POSIX rule in the instant's UTC year: where
            // that is not its local year, a rule in force at New Year gets
            // the previous year's answer (glibc agrees with us:
            // `TZ=AEST-10AEDT,0,M4.1.0/3 date -d @-1` says AEDT, jiff +10).
            // Such instants are not compared.
            let utc_year = ts.to_zoned(jiff::tz::TimeZone::UTC).year();
            let local = |offset: i32| {
                jiff::tz::Offset::from_seconds(offset)
                    .ok()
                    .map(|o| ts.to_zoned(jiff::tz::TimeZone::fixed(o)).year())
            };
            let ours = zone.offset_at(t);
            if local(ours) != Some(utc_year) || local(expected.seconds()) != Some(utc_year) {
                continue;
            }
            assert_eq!(ours, expected.seconds(), "offset at {t}");
            let _ = zone.local_day(t);
        }
    }
});

/// Whether the footer's POSIX rule starts and ends DST in the same month
/// (`AEST-10AEDT,M1.1.0,M1.1.0/1`, or `AEST-05AEDT,M1.1.0,0` with a day of
/// the year). When the end comes first, DST spans the turn of the year as
/// glibc reads it (`TZ='AEST-10AEDT,M1.1.0,M1.1.0/1' date -d @1699999999
/// +%z` prints +1100, as we do) and jiff reads +1000. Such zones are not
/// compared. The footer need not be the file's last line (bytes may follow
/// it), so every line is looked at.
fn same_month_rule(data: &[u8]) -> bool {
    String::from_utf8_lossy(data).split('\n').any(|line| {
        let months: Vec<u32> = line.split(',').skip(1).filter_map(month_of_rule).collect();
        months.len() == 2 && months[0] == months[1]
    })
}

/// The month (1 to 12) a POSIX rule date falls in, in a year without a
/// leap day: `Mm.w.d`, `Jn` (1 to 365, February 29 never counted) or `n`
/// (0 to 365, counted from 0); any `/time` after it is ignored.
fn month_of_rule(rule: &str) -> Option<u32> {
    let date = rule.split('/').next()?;
    let day_of_year = if let Some(m) = date.strip_prefix('M') {
        return m.split('.').next()?.parse().ok();
    } else if let Some(julian) = date.strip_prefix('J') {
        julian.parse::<u32>().ok()?.checked_sub(1)?
    } else {
        date.parse::<u32>().ok()?
    };
    const DAYS: [u32; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let mut left = day_of_year;
    for (month, days) in (1..).zip(DAYS) {
        if left < days {
            return Some(month);
        }
        left -= days;
    }
    Some(12)
}

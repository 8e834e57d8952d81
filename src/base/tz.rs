//! Time zones: a small TZif (RFC 8536) reader and POSIX TZ rule evaluator
//! over the system's zoneinfo, and the civil calendar they need. It is the
//! one local-time mechanism: Usage's days and the pairing popup's clock.
//!
//! Token Usage buckets requests into the *local* days of the zone the app
//! names (`--tz Asia/Shanghai`), the Host's zone by default. A day is
//! whatever the zone says it is: 23 or 25 hours across a DST change, never a
//! fixed 24-hour slice shifted by today's offset. Reading the system's
//! `/usr/share/zoneinfo` keeps us current with tzdata without bundling it.
//! Slim TZif files stop listing transitions once a POSIX rule (the footer)
//! describes the future, so the footer is evaluated too.

use std::path::{Path, PathBuf};

/// The Host's zone file when `TZ` names none.
pub(crate) const LOCALTIME: &str = "/etc/localtime";

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `(year, month, day)` of a day number since 1970-01-01.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A zone: its name as reported and the rules to find its UTC offset.
#[derive(Debug, Clone, PartialEq)]
pub struct Zone {
    pub name: String,
    transitions: Vec<(i64, usize)>,
    types: Vec<i32>,
    /// Offset before the first transition (RFC 8536: local time type 0).
    initial: i32,
    footer: Option<PosixTz>,
}

/// Why a zone cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TzError {
    /// The name is not a plausible IANA name (e.g. contains `..`).
    BadName,
    /// No such zone in the zoneinfo directory.
    Unknown,
    /// The file is not valid TZif.
    Corrupt,
}

impl TzError {
    pub fn code(&self) -> &'static str {
        match self {
            TzError::BadName => "bad_tz",
            TzError::Unknown => "unknown_tz",
            TzError::Corrupt => "corrupt_tz",
        }
    }
}

impl std::fmt::Display for TzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TzError::BadName => "not an IANA zone name",
            TzError::Unknown => "no such zone on this Host",
            TzError::Corrupt => "the zone's file is not valid TZif",
        })
    }
}

impl std::error::Error for TzError {}

impl Zone {
    /// Coordinated Universal Time.
    pub fn utc() -> Zone {
        Zone {
            name: "UTC".into(),
            transitions: Vec::new(),
            types: vec![0],
            initial: 0,
            footer: None,
        }
    }

    /// Seconds east of UTC in effect at `unix` seconds.
    pub fn offset_at(&self, unix: i64) -> i32 {
        let idx = self.transitions.partition_point(|(at, _)| *at <= unix);
        if idx == 0 {
            if self.transitions.is_empty()
                && let Some(rule) = &self.footer
            {
                return rule.offset_at(unix);
            }
            return self.initial;
        }
        if idx == self.transitions.len()
            && let Some(rule) = &self.footer
        {
            return rule.offset_at(unix);
        }
        let (_, ty) = self.transitions[idx - 1];
        self.types.get(ty).copied().unwrap_or(self.initial)
    }

    /// The local day number (days since 1970-01-01 in this zone) of an instant.
    pub fn local_day(&self, unix: i64) -> i64 {
        (unix + i64::from(self.offset_at(unix))).div_euclid(86_400)
    }

    /// The local wall-clock time `(hour, minute, second)` of an instant.
    pub(crate) fn time_of_day(&self, unix: i64) -> (u32, u32, u32) {
        let second = (unix + i64::from(self.offset_at(unix))).rem_euclid(86_400);
        // In 0..86_400, so each part fits.
        let part = |n: i64| u32::try_from(n).unwrap_or(0);
        (
            part(second / 3600),
            part(second / 60 % 60),
            part(second % 60),
        )
    }

    /// Parses TZif bytes (v1, v2 or v3).
    pub fn from_tzif(name: &str, bytes: &[u8]) -> Result<Zone, TzError> {
        parse_tzif(name, bytes)
    }

    /// Loads a named zone from `zoneinfo_dir` (normally `/usr/share/zoneinfo`).
    pub fn load(name: &str, zoneinfo_dir: &Path) -> Result<Zone, TzError> {
        if name == "UTC" || name == "Etc/UTC" {
            if let Ok(bytes) = std::fs::read(zoneinfo_dir.join(name)) {
                return Zone::from_tzif(name, &bytes);
            }
            return Ok(Zone {
                name: name.into(),
                ..Zone::utc()
            });
        }
        if !is_valid_name(name) {
            return Err(TzError::BadName);
        }
        let bytes = std::fs::read(zoneinfo_dir.join(name)).map_err(|_| TzError::Unknown)?;
        Zone::from_tzif(name, &bytes)
    }
}

/// IANA names: `Area/Location`, letters, digits, `_`, `-`, `+`, no `..`.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('/')
        && name.split('/').all(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+'))
        })
}

/// The zoneinfo directory: `TZDIR` or `/usr/share/zoneinfo`.
pub fn zoneinfo_dir() -> PathBuf {
    std::env::var_os("TZDIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/zoneinfo"))
}

/// This process's Host zone: [`host_zone`] of its `TZ`, [`LOCALTIME`] and
/// [`zoneinfo_dir`].
pub(crate) fn process_host_zone() -> Zone {
    host_zone(
        std::env::var("TZ").ok().as_deref(),
        Path::new(LOCALTIME),
        &zoneinfo_dir(),
    )
}

/// The Host's zone: `TZ` (`:Name`, `Name`, or an absolute TZif path), else
/// `/etc/localtime` (named by its symlink target when it is one), else UTC.
pub(crate) fn host_zone(tz_env: Option<&str>, localtime: &Path, zoneinfo: &Path) -> Zone {
    if let Some(tz) = tz_env.map(|t| t.strip_prefix(':').unwrap_or(t))
        && !tz.is_empty()
    {
        if tz.starts_with('/') {
            if let Ok(bytes) = std::fs::read(tz)
                && let Ok(zone) = Zone::from_tzif(&name_from_path(Path::new(tz)), &bytes)
            {
                return zone;
            }
        } else if let Ok(zone) = Zone::load(tz, zoneinfo) {
            return zone;
        } else if let Some(rule) = PosixTz::parse(tz) {
            return Zone {
                name: tz.into(),
                transitions: Vec::new(),
                types: vec![rule.std_offset],
                initial: rule.std_offset,
                footer: Some(rule),
            };
        }
    }
    match std::fs::read(localtime) {
        Ok(bytes) => {
            let name = std::fs::read_link(localtime)
                .map(|target| name_from_path(&target))
                .unwrap_or_else(|_| "localtime".into());
            Zone::from_tzif(&name, &bytes).unwrap_or_else(|_| Zone::utc())
        }
        Err(_) => Zone::utc(),
    }
}

fn name_from_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    match text.find("zoneinfo/") {
        Some(at) => text[at + "zoneinfo/".len()..].to_string(),
        None => text.into_owned(),
    }
}

/// The TZif reads: every truncation is [`TzError::Corrupt`].
struct Reader<'a>(crate::base::bytes::Reader<'a>);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], TzError> {
        self.0.take(n).ok_or(TzError::Corrupt)
    }
    /// A big-endian signed 32-bit integer.
    fn be32(&mut self) -> Result<i64, TzError> {
        self.0.i32_be().map(i64::from).ok_or(TzError::Corrupt)
    }
    /// A transition time: 32-bit in a version 1 block, 64-bit after.
    fn time(&mut self, wide: bool) -> Result<i64, TzError> {
        match wide {
            true => self.0.i64_be().ok_or(TzError::Corrupt),
            false => self.be32(),
        }
    }
}

struct Header {
    version: u8,
    isutcnt: usize,
    isstdcnt: usize,
    leapcnt: usize,
    timecnt: usize,
    typecnt: usize,
    charcnt: usize,
}

/// Reads a header and refuses one whose data block (with `time_size`-byte
/// times) is longer than the bytes left, so no count read from the file can
/// reserve more memory than the file itself takes.
fn header(r: &mut Reader, time_size: usize) -> Result<Header, TzError> {
    if r.take(4)? != b"TZif" {
        return Err(TzError::Corrupt);
    }
    let version = r.take(1)?[0];
    if !matches!(version, 0 | b'2' | b'3' | b'4') {
        return Err(TzError::Corrupt);
    }
    r.take(15)?;
    let mut counts = [0usize; 6];
    for c in &mut counts {
        *c = usize::try_from(r.be32()?).map_err(|_| TzError::Corrupt)?;
    }
    let h = Header {
        version,
        isutcnt: counts[0],
        isstdcnt: counts[1],
        leapcnt: counts[2],
        timecnt: counts[3],
        typecnt: counts[4],
        charcnt: counts[5],
    };
    match h.block_len(time_size) {
        Some(len) if len <= r.0.remaining() => Ok(h),
        _ => Err(TzError::Corrupt),
    }
}

impl Header {
    /// The length of the data block after this header, `None` on overflow.
    fn block_len(&self, time_size: usize) -> Option<usize> {
        let parts = [
            self.timecnt.checked_mul(time_size + 1)?,
            self.typecnt.checked_mul(6)?,
            self.charcnt,
            self.leapcnt.checked_mul(time_size + 4)?,
            self.isstdcnt,
            self.isutcnt,
        ];
        parts.into_iter().try_fold(0usize, usize::checked_add)
    }
}

fn parse_tzif(name: &str, bytes: &[u8]) -> Result<Zone, TzError> {
    let mut r = Reader(crate::base::bytes::Reader::new(bytes));
    let mut h = header(&mut r, 4)?;
    let mut time_size = 4;
    if h.version >= b'2' {
        // Skip the v1 block; the v2 block has 64-bit times.
        r.take(h.block_len(4).ok_or(TzError::Corrupt)?)?;
        let version = h.version;
        h = header(&mut r, 8)?;
        if h.version != version {
            return Err(TzError::Corrupt);
        }
        time_size = 8;
    }
    if h.typecnt == 0 {
        return Err(TzError::Corrupt);
    }
    let mut times = Vec::with_capacity(h.timecnt);
    for _ in 0..h.timecnt {
        times.push(r.time(time_size == 8)?);
    }
    // RFC 8536: transition times are in strictly ascending order (the
    // lookup is a binary search).
    if !times.windows(2).all(|w| w[0] < w[1]) {
        return Err(TzError::Corrupt);
    }
    let indices = r.take(h.timecnt)?.to_vec();
    let mut types = Vec::with_capacity(h.typecnt);
    for _ in 0..h.typecnt {
        let offset = i32::try_from(r.be32()?).map_err(|_| TzError::Corrupt)?;
        r.take(2)?;
        types.push(offset);
    }
    r.take(h.charcnt + h.leapcnt * (time_size + 4) + h.isstdcnt + h.isutcnt)?;
    let mut transitions = Vec::with_capacity(times.len());
    for (at, ty) in times.into_iter().zip(indices) {
        let ty = usize::from(ty);
        if ty >= types.len() {
            return Err(TzError::Corrupt);
        }
        transitions.push((at, ty));
    }
    let footer = if h.version >= b'2' {
        // The footer is the line after the data: only its bytes must be
        // text (a TZif reader ignores what follows it).
        let rest = r.0.rest().strip_prefix(b"\n").unwrap_or_default();
        let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
        std::str::from_utf8(line).ok().and_then(PosixTz::parse)
    } else {
        None
    };
    Ok(Zone {
        name: name.into(),
        transitions,
        initial: types[0],
        types,
        footer,
    })
}

/// The largest hours of a POSIX offset (POSIX: 0 to 24).
const MAX_OFFSET_HOURS: i32 = 24;
/// The largest hours of a rule's time of day (RFC 8536 3.3.1: -167 to 167).
const MAX_RULE_HOURS: i32 = 167;

/// A POSIX TZ rule (`CET-1CEST,M3.5.0,M10.5.0/3`): the footer of a TZif file.
#[derive(Debug, Clone, PartialEq)]
pub struct PosixTz {
    std_offset: i32,
    dst: Option<DstRule>,
}

#[derive(Debug, Clone, PartialEq)]
struct DstRule {
    offset: i32,
    start: (RuleDay, i32),
    end: (RuleDay, i32),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum RuleDay {
    /// `Jn`: day 1..=365, February 29 never counted.
    Julian1(u32),
    /// `n`: day 0..=365, February 29 counted.
    Julian0(u32),
    /// `Mm.w.d`: weekday d of week w (5 = last) of month m.
    Month(u32, u32, u32),
}

impl PosixTz {
    /// Parses a POSIX TZ string; `None` when it is not one we can evaluate.
    pub fn parse(text: &str) -> Option<PosixTz> {
        let mut p = Cursor {
            b: text.as_bytes(),
            at: 0,
        };
        p.name()?;
        let std_offset = -p.offset(MAX_OFFSET_HOURS)?;
        if p.done() {
            return Some(PosixTz {
                std_offset,
                dst: None,
            });
        }
        p.name()?;
        let dst_offset = if p.peek() != Some(b',') && !p.done() {
            -p.offset(MAX_OFFSET_HOURS)?
        } else {
            std_offset + 3600
        };
        let (start, end) = if p.done() {
            (
                (RuleDay::Month(3, 2, 0), 7200),
                (RuleDay::Month(11, 1, 0), 7200),
            )
        } else {
            p.expect(b',')?;
            let start = p.rule()?;
            p.expect(b',')?;
            let end = p.rule()?;
            (start, end)
        };
        if !p.done() {
            return None;
        }
        Some(PosixTz {
            std_offset,
            dst: Some(DstRule {
                offset: dst_offset,
                start,
                end,
            }),
        })
    }

    fn offset_at(&self, unix: i64) -> i32 {
        let Some(dst) = &self.dst else {
            return self.std_offset;
        };
        let year = civil_from_days((unix + i64::from(self.std_offset)).div_euclid(86_400)).0;
        // Check the neighbouring years too so instants near New Year are right.
        let mut in_dst = false;
        for y in [year - 1, year, year + 1] {
            let start = rule_instant(y, dst.start, self.std_offset);
            let end = rule_instant(y, dst.end, dst.offset);
            if start < end {
                if unix >= start && unix < end {
                    in_dst = true;
                }
            } else if start > end && y == year {
                // Southern hemisphere: DST spans New Year. (A rule that
                // starts and ends at the same instant has no DST, as glibc
                // reads it.)
                in_dst = !(unix >= end && unix < start);
            }
        }
        if in_dst { dst.offset } else { self.std_offset }
    }
}

fn rule_instant(year: i64, (day, time): (RuleDay, i32), offset: i32) -> i64 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let jan1 = days_from_civil(year, 1, 1);
    let days = match day {
        RuleDay::Julian1(n) => {
            let n = i64::from(n);
            jan1 + n - 1 + i64::from(leap && n >= 60)
        }
        RuleDay::Julian0(n) => jan1 + i64::from(n),
        RuleDay::Month(m, w, d) => {
            let first = days_from_civil(year, m, 1);
            // 1970-01-01 was a Thursday (weekday 4).
            let first_wd = (first + 4).rem_euclid(7);
            let mut day = first + (i64::from(d) - first_wd).rem_euclid(7) + 7 * (i64::from(w) - 1);
            let next_month = if m == 12 {
                days_from_civil(year + 1, 1, 1)
            } else {
                days_from_civil(year, m + 1, 1)
            };
            while day >= next_month {
                day -= 7;
            }
            day
        }
    };
    days * 86_400 + i64::from(time) - i64::from(offset)
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }
    fn done(&self) -> bool {
        self.at >= self.b.len()
    }
    fn expect(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.at += 1)
    }
    fn name(&mut self) -> Option<()> {
        let start = self.at;
        if self.peek() == Some(b'<') {
            while self.peek()? != b'>' {
                self.at += 1;
            }
            self.at += 1;
            return (self.at - start >= 5).then_some(());
        }
        while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            self.at += 1;
        }
        (self.at - start >= 3).then_some(())
    }
    fn number(&mut self) -> Option<i32> {
        let start = self.at;
        let mut n: i32 = 0;
        while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
            n = n.checked_mul(10)?.checked_add(i32::from(c - b'0'))?;
            self.at += 1;
        }
        (self.at > start).then_some(n)
    }
    /// A number no greater than `max`.
    fn number_upto(&mut self, max: i32) -> Option<i32> {
        self.number().filter(|&n| n <= max)
    }
    /// `[+-]hh[:mm[:ss]]` in seconds (POSIX sign: positive is west), hours
    /// at most `max_hours` (24 for an offset, as POSIX; 167 for a rule's
    /// time of day, as RFC 8536), minutes and seconds below 60.
    fn offset(&mut self, max_hours: i32) -> Option<i32> {
        let sign = match self.peek() {
            Some(b'-') => {
                self.at += 1;
                -1
            }
            Some(b'+') => {
                self.at += 1;
                1
            }
            _ => 1,
        };
        let mut seconds = self.number_upto(max_hours)? * 3600;
        if self.peek() == Some(b':') {
            self.at += 1;
            seconds += self.number_upto(59)? * 60;
            if self.peek() == Some(b':') {
                self.at += 1;
                seconds += self.number_upto(59)?;
            }
        }
        Some(sign * seconds)
    }
    fn rule(&mut self) -> Option<(RuleDay, i32)> {
        let day = match self.peek()? {
            b'J' => {
                self.at += 1;
                RuleDay::Julian1(
                    u32::try_from(self.number()?)
                        .ok()
                        .filter(|n| (1..=365).contains(n))?,
                )
            }
            b'M' => {
                self.at += 1;
                let m = u32::try_from(self.number()?).ok()?;
                self.expect(b'.')?;
                let w = u32::try_from(self.number()?).ok()?;
                self.expect(b'.')?;
                let d = u32::try_from(self.number()?).ok()?;
                if !(1..=12).contains(&m) || !(1..=5).contains(&w) || d > 6 {
                    return None;
                }
                RuleDay::Month(m, w, d)
            }
            _ => RuleDay::Julian0(u32::try_from(self.number_upto(365)?).ok()?),
        };
        let time = if self.peek() == Some(b'/') {
            self.at += 1;
            self.offset(MAX_RULE_HOURS)?
        } else {
            7200
        };
        Some((day, time))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_of_day_is_the_wall_clock_of_the_zone() {
        let nowhere = Path::new("/nonexistent/heeler/zoneinfo");
        let utc = Zone::utc();
        assert_eq!(utc.time_of_day(0), (0, 0, 0));
        assert_eq!(utc.time_of_day(-1), (23, 59, 59));
        assert_eq!(utc.time_of_day(86_400 + 3_723), (1, 2, 3));
        // POSIX: `IST-5:30` is 5 h 30 min east of UTC, all year.
        let india = host_zone(Some("IST-5:30"), nowhere, nowhere);
        assert_eq!(india.time_of_day(0), (5, 30, 0));
        assert_eq!(india.time_of_day(-19_800 - 1), (23, 59, 59));
        // Central Europe: UTC+1, UTC+2 from the last Sunday of March to the
        // last Sunday of October; 12:00 UTC is 13:00 in January, 14:00 in July.
        let cet = host_zone(Some("CET-1CEST,M3.5.0,M10.5.0/3"), nowhere, nowhere);
        let noon = |y, m, d| days_from_civil(y, m, d) * 86_400 + 12 * 3600;
        assert_eq!(cet.time_of_day(noon(2026, 1, 15)), (13, 0, 0));
        assert_eq!(cet.time_of_day(noon(2026, 7, 15)), (14, 0, 0));
    }

    #[test]
    fn posix_offsets_out_of_range_are_refused_not_overflowed() {
        // Found by the tzif fuzz target: the minutes overflowed an i32.
        assert_eq!(PosixTz::parse("HgiZTz5:222222222"), None);
        assert_eq!(PosixTz::parse("AAA1:99999999"), None);
        assert_eq!(PosixTz::parse("AAA1:60"), None);
        assert_eq!(PosixTz::parse("AAA1:00:60"), None);
        assert_eq!(PosixTz::parse("AAA25"), None);
        assert_eq!(PosixTz::parse("AAA-24BBB-25"), None);
        assert!(PosixTz::parse("AAA24:59:59").is_some());
        // RFC 8536 3.3.1: a rule's time of day runs from -167 to 167 hours.
        assert!(PosixTz::parse("AAA-1BBB,M3.5.0/167,M10.5.0/-167").is_some());
        assert_eq!(PosixTz::parse("AAA-1BBB,M3.5.0/168,M10.5.0"), None);
        // Julian days: `Jn` is 1 to 365, `n` is 0 to 365.
        assert!(PosixTz::parse("AAA-1BBB,J1,J365").is_some());
        assert_eq!(PosixTz::parse("AAA-1BBB,J0,J365"), None);
        assert_eq!(PosixTz::parse("AAA-1BBB,J1,J366"), None);
        assert!(PosixTz::parse("AAA-1BBB,0,365").is_some());
        assert_eq!(PosixTz::parse("AAA-1BBB,0,366"), None);
    }

    #[test]
    fn a_rule_that_starts_as_it_ends_has_no_dst() {
        // Found by the tzif fuzz target against jiff; glibc agrees
        // (`TZ=AEST-10AEDT,M4.1.0,M4.1.0/3 date -d @0` says AEST): both
        // ends fall on the same instant, so DST is never in effect.
        let rule = PosixTz::parse("AEST-10AEDT,M4.1.0,M4.1.0/3").unwrap();
        for t in [0, 10_000_000, 20_000_000, 1_700_000_000] {
            assert_eq!(rule.offset_at(t), 36_000, "at {t}");
        }
    }

    #[test]
    fn posix_rules_for_both_hemispheres() {
        let berlin = PosixTz::parse("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        // 2026-03-29 01:00 UTC: clocks go 02:00 -> 03:00 local.
        let change = days_from_civil(2026, 3, 29) * 86_400 + 3600;
        assert_eq!(berlin.offset_at(change - 1), 3600);
        assert_eq!(berlin.offset_at(change), 7200);
        let back = days_from_civil(2026, 10, 25) * 86_400 + 3600;
        assert_eq!(berlin.offset_at(back - 1), 7200);
        assert_eq!(berlin.offset_at(back), 3600);
        let sydney = PosixTz::parse("AEST-10AEDT,M10.1.0,M4.1.0/3").unwrap();
        assert_eq!(
            sydney.offset_at(days_from_civil(2026, 1, 15) * 86_400),
            39600
        );
        assert_eq!(
            sydney.offset_at(days_from_civil(2026, 7, 15) * 86_400),
            36000
        );
        let fixed = PosixTz::parse("<+0545>-5:45").unwrap();
        assert_eq!(fixed.offset_at(0), 20700);
        assert_eq!(PosixTz::parse("nonsense,"), None);
    }

    #[test]
    fn names_are_checked() {
        assert!(is_valid_name("America/Argentina/Buenos_Aires"));
        assert!(is_valid_name("Etc/GMT+5"));
        for bad in ["", "/etc/passwd", "../x", "a//b", "Europe/../../etc", "a b"] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    /// A 44-byte TZif file: the header alone, with `timecnt` as given.
    fn bare_header(version: u8, timecnt: i32) -> Vec<u8> {
        let mut bytes = b"TZif".to_vec();
        bytes.push(version);
        bytes.extend([0u8; 15]);
        for count in [0, 0, 0, timecnt, 1, 0] {
            bytes.extend(i32::to_be_bytes(count));
        }
        bytes
    }

    #[test]
    fn counts_the_file_cannot_hold_are_refused_before_any_allocation() {
        for version in [0, b'2'] {
            let bytes = bare_header(version, i32::MAX);
            assert_eq!(bytes.len(), 44);
            // The header itself is refused: nothing is reserved for the
            // 2^31 transitions it claims.
            let mut r = Reader(crate::base::bytes::Reader::new(&bytes));
            assert!(header(&mut r, 4).is_err(), "version {version}");
            assert_eq!(Zone::from_tzif("x", &bytes), Err(TzError::Corrupt));
        }
        // The same header with the one type it claims is a valid zone.
        let mut bytes = bare_header(0, 0);
        bytes.extend([0, 0, 0x0e, 0x10, 0, 0]);
        assert_eq!(Zone::from_tzif("x", &bytes).unwrap().offset_at(0), 3600);
    }

    #[test]
    fn transitions_out_of_order_are_corrupt() {
        // Found by the tzif fuzz target against jiff: an unsorted table
        // made the binary search answer from the wrong transition.
        let file = |times: [i32; 2]| {
            let mut bytes = bare_header(0, 2);
            for t in times {
                bytes.extend(t.to_be_bytes());
            }
            bytes.extend([0, 0]);
            bytes.extend([0, 0, 0x0e, 0x10, 0, 0]);
            bytes
        };
        assert!(Zone::from_tzif("x", &file([50, 100])).is_ok());
        assert_eq!(
            Zone::from_tzif("x", &file([100, 50])),
            Err(TzError::Corrupt)
        );
        assert_eq!(Zone::from_tzif("x", &file([50, 50])), Err(TzError::Corrupt));
    }

    #[test]
    fn a_second_header_of_another_version_is_corrupt() {
        // Found by the tzif fuzz target against jiff: a `TZif2` file whose
        // 64-bit header said `1` lost its footer. RFC 8536: both headers
        // carry the same version.
        let file = |second: u8| {
            let mut bytes = bare_header(b'2', 0);
            bytes.extend([0, 0, 0x0e, 0x10, 0, 0]);
            bytes.extend(bare_header(second, 0));
            bytes.extend([0, 0, 0x0e, 0x10, 0, 0]);
            bytes.extend(b"\n<+01>-1\n");
            bytes
        };
        assert!(Zone::from_tzif("x", &file(b'2')).is_ok());
        assert_eq!(Zone::from_tzif("x", &file(b'1')), Err(TzError::Corrupt));
        assert_eq!(Zone::from_tzif("x", &file(b'3')), Err(TzError::Corrupt));
        // The same fuzz target: a version byte of `1`, which no RFC
        // defines (0, `2`, `3` and, RFC 9636, `4` are the versions).
        let mut v1 = bare_header(b'1', 0);
        v1.extend([0, 0, 0x0e, 0x10, 0, 0]);
        assert_eq!(Zone::from_tzif("x", &v1), Err(TzError::Corrupt));
        let mut v4 = bare_header(b'4', 0);
        v4.extend([0, 0, 0x0e, 0x10, 0, 0]);
        v4.extend(bare_header(b'4', 0));
        v4.extend([0, 0, 0x0e, 0x10, 0, 0]);
        v4.extend(b"\n<+01>-1\n");
        assert!(Zone::from_tzif("x", &v4).is_ok());
    }

    #[test]
    fn bytes_after_the_footer_line_do_not_hide_it() {
        // Found by the tzif fuzz target against jiff: bytes after the
        // footer's newline that were not UTF-8 dropped the footer.
        let mut bytes = bare_header(b'2', 0);
        bytes.extend([0, 0, 0x8c, 0xa0, 0, 0]);
        bytes.extend(bare_header(b'2', 0));
        bytes.extend([0, 0, 0x8c, 0xa0, 0, 0]);
        bytes.extend(b"\nAEST-10AEDT,M10.1.0,M4.1.0/3\n\x05\xcf\xff\xff");
        let zone = Zone::from_tzif("x", &bytes).unwrap();
        // 1970-01-01 09:59:59 in Sydney is summer time.
        assert_eq!(zone.offset_at(-1), 39_600);
    }

    #[test]
    fn garbage_is_corrupt_not_a_panic() {
        assert_eq!(Zone::from_tzif("x", b"TZif2"), Err(TzError::Corrupt));
        assert_eq!(Zone::from_tzif("x", b"nope"), Err(TzError::Corrupt));
        let mut bytes = b"TZif2".to_vec();
        bytes.extend([0u8; 15]);
        bytes.extend([0xffu8; 24]);
        assert_eq!(Zone::from_tzif("x", &bytes), Err(TzError::Corrupt));
    }
}

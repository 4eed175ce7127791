//! UTC timestamps for log lines, and the times `--since` accepts (ages, dates, Unix ms), on
//! `jiff`'s calendar arithmetic.

use std::time::Duration;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;

/// `2026-12-01T17:00:01.123Z` for Unix milliseconds (always three fractional digits, so log
/// lines line up and sort as text).
pub fn utc(unix_ms: u64) -> String {
    let ts = i64::try_from(unix_ms)
        .ok()
        .and_then(|ms| Timestamp::from_millisecond(ms).ok())
        .unwrap_or(Timestamp::UNIX_EPOCH);
    ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Why a time given on the command line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot read the time {0:?}: give an age (`90s`, `15m`, `2h`, `7d`), a date \
     (`2026-12-01`, `2026-12-01T17:00:00Z`) or Unix milliseconds"
)]
pub struct TimeError(pub String);

/// Unix milliseconds for a time on the command line: an age before `now_ms` (`15m`, `2h`,
/// `7d`), a UTC date or date-time (`2026-12-01`, `2026-12-01T17:00:00Z`), or Unix
/// milliseconds.
pub fn parse_time(text: &str, now_ms: u64) -> Result<u64, TimeError> {
    let bad = || TimeError(text.to_owned());
    let t = text.trim();
    if let Some(age) = parse_age(t) {
        return Ok(now_ms.saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX)));
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map_err(|_| bad());
    }
    // A date-time without an offset is read as UTC, like one ending in `Z`.
    let civil = match t.strip_suffix('Z') {
        Some(clock) => clock.parse::<DateTime>(),
        None => t.parse::<DateTime>(),
    }
    .or_else(|_| {
        t.parse::<Date>()
            .map(|d| d.to_datetime(jiff::civil::Time::midnight()))
    })
    .map_err(|_| bad())?;
    let ms = civil
        .to_zoned(TimeZone::UTC)
        .map_err(|_| bad())?
        .timestamp()
        .as_millisecond();
    u64::try_from(ms).map_err(|_| bad())
}

/// `90s`, `15m`, `2h`, `7d` as a duration: one number and one unit, days of 24 hours.
fn parse_age(t: &str) -> Option<Duration> {
    let unit = t.chars().last()?;
    let n: u64 = t[..t.len() - unit.len_utf8()].parse().ok()?;
    let secs = match unit {
        's' => n,
        'm' => n.checked_mul(60)?,
        'h' => n.checked_mul(3600)?,
        'd' => n.checked_mul(86_400)?,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(1_796_144_401_123), "2026-12-01T17:00:01.123Z");
        assert_eq!(
            parse_time("2026-12-01T17:00:01Z", 0).unwrap(),
            1_796_144_401_000
        );
        assert_eq!(parse_time("2026-12-01", 0).unwrap(), 1_796_083_200_000);
        assert_eq!(
            parse_time("2h", 10_000_000).unwrap(),
            10_000_000 - 7_200_000
        );
        assert_eq!(parse_time("1700000000000", 0).unwrap(), 1_700_000_000_000);
        for bad in ["", "yesterday", "2026-13-01", "2026-12-01T25:00", "5w"] {
            assert!(parse_time(bad, 0).is_err(), "{bad}");
        }
        assert_eq!(
            parse_time("2026-12-01T17:00:01", 0).unwrap(),
            1_796_144_401_000,
            "no offset reads as UTC"
        );
        assert_eq!(parse_time("2024-02-29", 0).unwrap(), 1_709_164_800_000);
        assert!(parse_time("2023-02-29", 0).is_err(), "no such day");
        assert_eq!(
            utc(u64::MAX),
            utc(0),
            "out of range: the epoch, never a panic"
        );
    }
}

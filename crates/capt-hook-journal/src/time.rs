//! UTC timestamps without a date library: formatting for log lines and parsing for `--since`.

use std::time::Duration;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (`civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `2026-12-01T17:00:01.123Z` for Unix milliseconds.
pub fn utc(unix_ms: u64) -> String {
    let secs = (unix_ms / 1000) as i64;
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_ms % 1000
    )
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
        return Ok(now_ms.saturating_sub(age.as_millis() as u64));
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map_err(|_| bad());
    }
    let (date, clock) = match t.split_once(['T', ' ']) {
        Some((d, c)) => (d, Some(c.trim_end_matches('Z'))),
        None => (t, None),
    };
    let mut parts = date.splitn(3, '-');
    let (Some(y), Some(m), Some(d)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let (y, m, d): (i64, u32, u32) = (
        y.parse().map_err(|_| bad())?,
        m.parse().map_err(|_| bad())?,
        d.parse().map_err(|_| bad())?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || y < 1970 {
        return Err(bad());
    }
    let mut secs = days_from_civil(y, m, d) * 86_400;
    if let Some(clock) = clock {
        let mut f = clock.splitn(3, ':');
        let h: i64 = f.next().ok_or_else(bad)?.parse().map_err(|_| bad())?;
        let mi: i64 = f.next().unwrap_or("0").parse().map_err(|_| bad())?;
        let s: f64 = f.next().unwrap_or("0").parse().map_err(|_| bad())?;
        if !(0..24).contains(&h) || !(0..60).contains(&mi) || !(0.0..61.0).contains(&s) {
            return Err(bad());
        }
        secs += h * 3600 + mi * 60 + s as i64;
    }
    u64::try_from(secs * 1000).map_err(|_| bad())
}

/// `90s`, `15m`, `2h`, `7d` as a duration.
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
        for days in [-1, 0, 59, 60, 365, 20_000, 50_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}

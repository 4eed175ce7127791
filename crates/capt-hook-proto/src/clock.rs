//! Time on the wire: deadlines travel as Unix milliseconds, since the processes share no clock
//! but the system's. One owner for turning them into and out of `Instant`s.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Unix milliseconds now (0 if the clock is before 1970).
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Unix milliseconds at `at`, a future or past instant.
pub fn unix_ms_at(at: Instant) -> u64 {
    let now = Instant::now();
    let base = now_unix_ms();
    if at >= now {
        base + (at - now).as_millis() as u64
    } else {
        base.saturating_sub((now - at).as_millis() as u64)
    }
}

/// Unix milliseconds `d` from now.
pub fn unix_ms_in(d: Duration) -> u64 {
    now_unix_ms() + d.as_millis() as u64
}

/// The instant of a Unix-millisecond deadline, or `None` when it has already passed.
pub fn instant_of(unix_ms: u64) -> Option<Instant> {
    let now = now_unix_ms();
    (unix_ms > now).then(|| Instant::now() + Duration::from_millis(unix_ms - now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_round_trip() {
        let at = Instant::now() + Duration::from_secs(5);
        let back = instant_of(unix_ms_at(at)).unwrap();
        let skew = if back > at { back - at } else { at - back };
        assert!(skew < Duration::from_millis(50), "{skew:?}");
        assert_eq!(instant_of(now_unix_ms().saturating_sub(1)), None);
        assert!(unix_ms_in(Duration::from_secs(1)) > now_unix_ms());
    }
}

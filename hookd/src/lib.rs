//! `capt-hookd`: the per-user host. One socket per user; one warm worker per project key;
//! events multiplexed to workers over framed pipes.

pub mod cli;
mod conns;
pub mod ctl;
pub mod env;
mod files;
mod framing;
mod pool;
mod records;
pub mod server;
mod worker;

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Unix milliseconds now.
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Unix milliseconds at a future (or past) instant.
pub fn unix_ms_at(at: Instant) -> u64 {
    let now = Instant::now();
    let base = now_unix_ms();
    if at >= now {
        base + (at - now).as_millis() as u64
    } else {
        base.saturating_sub((now - at).as_millis() as u64)
    }
}

/// Sends `tracing` output to the host log.
pub fn init_logging(log: &std::fs::File) {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env(env::CAPT_HOOKD_LOG).unwrap_or_else(|_| EnvFilter::new("info"));
    if let Ok(file) = log.try_clone() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(file))
            .try_init();
    }
}

//! Every environment variable `capt-hookd` reads, declared once.

/// Seconds a worker may sit idle before it is retired (default 1800).
pub const CAPT_HOOKD_IDLE_SECS: &str = "CAPT_HOOKD_IDLE_SECS";
/// Path of the worker binary to run (default: `capt-hook-worker` beside `capt-hookd`).
pub const CAPT_HOOKD_WORKER: &str = "CAPT_HOOKD_WORKER";
/// A `tracing` filter for the host log (default `info`).
pub const CAPT_HOOKD_LOG: &str = "CAPT_HOOKD_LOG";
/// Most workers kept at once (default 16); starting one more retires the least recently used
/// idle worker, and when every worker is busy the event is refused as busy.
pub const CAPT_HOOKD_MAX_WORKERS: &str = "CAPT_HOOKD_MAX_WORKERS";
/// `PATH` for workers; when unset they get `/usr/bin:/bin:/usr/sbin:/sbin`.
pub const PATH: &str = "PATH";

/// The idle retirement period.
pub fn idle() -> std::time::Duration {
    let secs = std::env::var(CAPT_HOOKD_IDLE_SECS)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(1800.0);
    std::time::Duration::from_secs_f64(secs)
}

/// The worker cap (at least 1).
pub fn max_workers() -> usize {
    std::env::var(CAPT_HOOKD_MAX_WORKERS)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(16)
}

/// The worker binary.
pub fn worker_exe() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os(CAPT_HOOKD_WORKER).filter(|p| !p.is_empty()) {
        return p.into();
    }
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("capt-hook-worker")))
        .unwrap_or_else(|| "capt-hook-worker".into())
}

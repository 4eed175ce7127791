//! The environment variables `capt-hookd` reads. Their names, defaults and docs are owned by
//! `capt_hook_proto::env`; the parsing lives here, next to its one user.

pub use capt_hook_proto::env::{
    CAPT_HOOKD_IDLE_SECS, CAPT_HOOKD_LOG, CAPT_HOOKD_MAX_WORKERS, CAPT_HOOKD_PRESSURE_CPU,
    CAPT_HOOKD_PRESSURE_RSS_MB, CAPT_HOOKD_PRESSURE_SAMPLE_MS, CAPT_HOOKD_PRESSURE_SECS,
    CAPT_HOOKD_WORKER, PATH,
};

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

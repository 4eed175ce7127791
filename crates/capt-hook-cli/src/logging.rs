//! Logs go to `<log dir>/capt-hook.log`, never to stdout (stdout is the envelope). The file is
//! opened only when something is logged, so a quiet run touches no file.

use std::path::PathBuf;

fn log_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var(capt_hook_core::env::CAPTAIN_HOOK_LOG_DIR)
        && !d.is_empty()
    {
        return Some(PathBuf::from(d));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/captain-hook/logs"))
}

/// Installs the file logger (level from `CAPT_HOOK_LOG`, default `warn`).
pub fn init() {
    let Some(dir) = log_dir() else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env(capt_hook_core::env::CAPT_HOOK_LOG)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let writer = move || -> Box<dyn std::io::Write> {
        let open = std::fs::create_dir_all(&dir).and_then(|_| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("capt-hook.log"))
        });
        match open {
            Ok(f) => Box::new(f),
            Err(_) => Box::new(std::io::sink()),
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(writer)
        .try_init();
}

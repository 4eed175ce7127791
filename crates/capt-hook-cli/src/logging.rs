//! Logs go to `<log dir>/capt-hook.log`, never to stdout (stdout is the envelope). The file is
//! opened only when something is logged, so a quiet run touches no file.

/// Installs the file logger (level from `CAPT_HOOK_LOG`, default `warn`).
pub fn init() {
    // The host's log directory (`CAPTAIN_HOOK_LOG_DIR`, else the host state directory), as
    // documented: one place to look for every log.
    let dir = capt_hook_proto::paths::log_dir();
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

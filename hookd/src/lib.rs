//! `capt-hookd`: the per-user host. One socket per user; one warm worker per project key;
//! events multiplexed to workers over framed pipes.

pub mod cli;
mod conns;
pub use conns::SHED_GRACE;
pub mod ctl;
pub mod env;
mod files;
mod framing;
mod pool;
mod records;
mod rust;
pub mod server;
mod worker;

pub use capt_hook_proto::clock::{now_unix_ms, unix_ms_at};

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

//! `capt-hookd`: the per-user host. One socket per user; one warm worker per project key;
//! events multiplexed to workers over framed pipes.

pub mod cli;
mod conns;
pub use conns::SHED_GRACE;
pub mod ctl;
pub mod env;
mod files;
mod framing;
mod logfile;
mod pool;
pub mod pressure;
mod records;
mod rust;
pub mod server;
pub mod update;
mod worker;

pub use capt_hook_proto::clock::{now_unix_ms, unix_ms_at};

/// Sends `tracing` output to the host log.
pub fn init_logging(log: &std::sync::Arc<logfile::HostLog>) {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env(env::CAPT_HOOKD_LOG).unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(logfile::Writer(std::sync::Arc::clone(log)))
        .try_init();
}

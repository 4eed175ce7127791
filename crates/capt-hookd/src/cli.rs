//! The command line: `capt-hookd serve | version | status | restart-workers | shutdown`.
//! Exit codes are decided here: 0 success, 1 a failed operation, 2 bad usage.

use std::process::ExitCode;
use std::time::Duration;

use capt_hook_proto::{BUILD, HostReply, Op};

use crate::ctl;

const USAGE: &str =
    "usage: capt-hookd serve [--prestart ROOT] | version | status | restart-workers | shutdown";

/// Runs `capt-hookd` with its arguments (without the program name).
pub fn main(args: &[String]) -> ExitCode {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["serve"] => serve(None),
        ["serve", "--prestart", root] => serve(Some(root)),
        ["version" | "--version"] => {
            println!("{}", version());
            ExitCode::SUCCESS
        }
        ["status"] => control(Op::Status, Duration::from_secs(3)),
        ["restart-workers"] => control(Op::RestartWorkers, Duration::from_secs(10)),
        ["shutdown"] => control(Op::Shutdown, Duration::from_secs(5)),
        [] => {
            eprintln!("{USAGE}");
            ExitCode::from(1)
        }
        [cmd, ..] => {
            eprintln!("capt-hookd: unknown command {cmd:?}\n{USAGE}");
            ExitCode::from(1)
        }
    }
}

fn serve(prestart: Option<&str>) -> ExitCode {
    match crate::server::serve(prestart) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("capt-hookd: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// This binary's schema, build and protocol; the running host's build and pid when one
/// answers (never starting one), so a half-finished upgrade shows; and a newer release when
/// the last update check found one.
fn version() -> serde_json::Value {
    let host = match ctl::request(Op::Version, Duration::from_secs(2)) {
        Ok(HostReply::Version {
            protocol,
            build,
            pid,
        }) => serde_json::json!({ "build": build, "protocol": protocol, "pid": pid }),
        _ => serde_json::Value::Null,
    };
    let mut v = serde_json::json!({
        "schema": 1,
        "build": BUILD,
        "protocol": capt_hook_proto::PROTOCOL,
        "host": host,
    });
    let updater = crate::update::Updater::new(&capt_hook_proto::paths::state_dir());
    if let Some(latest) = updater.latest() {
        v["update_available"] = latest.into();
    }
    if let Some(why) = updater.refused() {
        v["update_refused"] = why.into();
    }
    v
}

/// Runs a control op against the running host; never starts one.
fn control(op: Op, budget: Duration) -> ExitCode {
    let shutdown = op == Op::Shutdown;
    match ctl::request(op, budget) {
        Ok(HostReply::Status(status)) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&status).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Ok(HostReply::Done) if shutdown => {
            if ctl::wait_for_exit(Duration::from_secs(40)) {
                println!("host stopped");
                ExitCode::SUCCESS
            } else {
                eprintln!("capt-hookd: the host did not exit within 40s");
                ExitCode::from(1)
            }
        }
        Ok(HostReply::Done) => ExitCode::SUCCESS,
        Ok(HostReply::Refused { reason, .. }) => {
            eprintln!("capt-hookd: the host refused: {reason}");
            ExitCode::from(1)
        }
        Ok(other) => {
            eprintln!("capt-hookd: unexpected reply {other:?}");
            ExitCode::from(1)
        }
        Err(e) if shutdown && is_absent(&e) => {
            println!("no host is running");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "capt-hookd: no host answered at {}: {e}",
                capt_hook_proto::paths::socket_path().display()
            );
            ExitCode::from(1)
        }
    }
}

fn is_absent(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
    )
}

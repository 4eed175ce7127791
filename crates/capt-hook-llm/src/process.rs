//! Running a judge's program: prompt on stdin, output collected, the whole process group killed
//! at the deadline so a stuck CLI (or the tools it started) never outlives the call.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::{CallError, CallErrorKind, FailureRecord, MIN_CALL_TIME, TAIL_CHARS, tail, time_left};

/// What a finished program left.
pub(crate) struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// The failure record of a run of `argv` with `prompt`.
pub(crate) fn record(backend: &str, argv: &[String], prompt: &str) -> FailureRecord {
    FailureRecord {
        backend: backend.to_owned(),
        argv: argv.to_vec(),
        exit_code: None,
        stderr_tail: String::new(),
        prompt_tail: tail(prompt, TAIL_CHARS),
    }
}

/// Runs `argv[0]` with the rest as arguments, `stdin` written to it, until it exits or
/// `deadline` passes. `env` is added to the inherited environment.
pub(crate) fn run(
    backend: &'static str,
    argv: &[String],
    stdin: &str,
    cwd: Option<&std::path::Path>,
    env: &[(&str, &str)],
    deadline: Instant,
    prompt: &str,
) -> Result<Finished, CallError> {
    let fail = |kind: CallErrorKind, rec: FailureRecord| CallError {
        backend,
        kind,
        record: Box::new(rec),
    };
    let rec = record(backend, argv, prompt);
    let Some(budget) = time_left(deadline, MIN_CALL_TIME) else {
        return Err(fail(CallErrorKind::NoTime, rec));
    };
    let Some((program, args)) = argv.split_first() else {
        return Err(fail(
            CallErrorKind::NotConfigured("an empty command".into()),
            rec,
        ));
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so a timeout kills whatever the judge started too.
        .process_group(0);
    if let Some(dir) = cwd.filter(|d| d.is_dir()) {
        cmd.current_dir(dir);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = spawn(&mut cmd).map_err(|e| {
        fail(
            CallErrorKind::Spawn {
                program: program.clone(),
                reason: e.to_string(),
            },
            rec.clone(),
        )
    })?;
    let pid = child.id();
    // Writing and reading on their own threads: a program that fills one pipe while we block
    // on another would otherwise deadlock until the deadline.
    let input = stdin.to_owned();
    let writer = child.stdin.take().map(|mut w| {
        std::thread::spawn(move || {
            // A program that exits without reading its input is judged by its exit status.
            let _ = w.write_all(input.as_bytes());
        })
    });
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        pipe.map(|mut r| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = r.read_to_end(&mut buf);
                String::from_utf8_lossy(&buf).into_owned()
            })
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => break None,
            Err(_) => break None,
        }
    };
    let Some(status) = status else {
        kill_group(pid);
        let _ = child.kill();
        let _ = child.wait();
        let stderr = err.and_then(|h| h.join().ok()).unwrap_or_default();
        let mut rec = rec;
        rec.stderr_tail = tail(&stderr, TAIL_CHARS);
        return Err(fail(CallErrorKind::Timeout(budget), rec));
    };
    // The program is gone; a grandchild holding the pipes open is killed with the group so
    // the readers finish.
    kill_group(pid);
    if let Some(w) = writer {
        let _ = w.join();
    }
    let stdout = out.and_then(|h| h.join().ok()).unwrap_or_default();
    let stderr = err.and_then(|h| h.join().ok()).unwrap_or_default();
    Ok(Finished {
        status,
        stdout,
        stderr,
    })
}

/// Starts `cmd`, retrying briefly while the executable is busy (ETXTBSY: a script written a
/// moment ago whose descriptor another thread's fork still holds).
fn spawn(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    const ETXTBSY: i32 = 26;
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(ETXTBSY) && tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// Sends SIGKILL to the process group led by `pid` (ours: it was started as a group leader).
fn kill_group(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// The error for a program that exited unsuccessfully.
pub(crate) fn exit_error(
    backend: &'static str,
    argv: &[String],
    prompt: &str,
    done: &Finished,
) -> CallError {
    let mut rec = record(backend, argv, prompt);
    rec.exit_code = done.status.code();
    rec.stderr_tail = tail(
        if done.stderr.trim().is_empty() {
            &done.stdout
        } else {
            &done.stderr
        },
        TAIL_CHARS,
    );
    CallError {
        backend,
        kind: CallErrorKind::Exit(done.status.to_string()),
        record: Box::new(rec),
    }
}

/// The error for output that is not a verdict.
pub(crate) fn bad_output(
    backend: &'static str,
    argv: &[String],
    prompt: &str,
    done: &Finished,
    why: impl std::fmt::Display,
) -> CallError {
    let mut rec = record(backend, argv, prompt);
    rec.exit_code = done.status.code();
    rec.stderr_tail = tail(&format!("{}\n{}", done.stderr, done.stdout), TAIL_CHARS);
    CallError {
        backend,
        kind: CallErrorKind::BadOutput(why.to_string()),
        record: Box::new(rec),
    }
}

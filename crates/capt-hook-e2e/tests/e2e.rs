//! End-to-end: real `hook`, `capt-hookd` and worker processes in a temp user. No test asserts a
//! duration; waits are synchronization with a generous bound.

// A test fails by panicking: unwrap and expect are how it says what broke.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

// The host's HTTP socket, as the plugin's hooks module uses it.
#[path = "e2e/mod_socket.rs"]
mod mod_socket;

// Builds a real Rust hook project against the SDK (a second compile of the SDK's
// dependencies, minutes on a cold machine): CI runs it with `--features rust-project`.
#[cfg(feature = "rust-project")]
#[path = "e2e/rust_hooks.rs"]
mod rust_hooks;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;

use capt_hook_proto::serde_json::Value;
use capt_hook_proto::{
    EventRequest, HostReply, HostRequest, MAX_FRAME, Op, Refusal, decode, encode, read_frame,
    write_frame,
};
use rustix::process::Signal;
use support::*;

const ASK_MARK: &str = "capt-hook could not check this call";

/// Every example payload Claude Code's reference publishes goes through the real client, host
/// and worker with exit 0; a warning on every event reaches the output (but where the reference
/// gives it no place: PermissionRequest's dialog, WorktreeCreate's path); an event name this
/// build does not know is a no-op.
#[test]
fn every_reference_payload_through_the_host() {
    let env = Env::new();
    let hooks = "[[hook]]\nkind = \"hook\"\nmessage = \"seen-by-captain-hook\"\nskip_planning_agents = false\nevents = [";
    let names: Vec<String> = capt_hook_core_names();
    let hooks = format!("{hooks}{}]\n", names.join(", "));
    let root = env.project("payloads", &hooks);
    // The repository's copy of the reference (`tests/fixtures/`); a missing folder fails.
    let dir = fixtures().join("reference/claude-code/payloads");
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reference payloads missing at {}: {e}", dir.display()));
    let mut seen = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if !file.contains(".input.") {
            continue;
        }
        let mut v: Value =
            capt_hook_proto::serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
                .unwrap();
        let event = v["hook_event_name"].as_str().unwrap_or("").to_owned();
        v["cwd"] = root.display().to_string().into();
        let out = env.hook(&event, v.to_string().as_bytes(), &[]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", stderr(&out));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let continuation = v["stop_hook_active"] == true;
        if event == "PreSkillShellCommand" {
            // The reference's skill command is `git stash`: the builtin pack's stash guard
            // refuses it through the host, as it would a Bash call, and the deny wins.
            let v: Value = capt_hook_proto::serde_json::from_str(&stdout)
                .unwrap_or_else(|e| panic!("{file}: {e}: {stdout:?}"));
            assert_eq!(
                v["hookSpecificOutput"]["permissionDecision"], "deny",
                "{file}: {v}"
            );
        } else if !matches!(event.as_str(), "PermissionRequest" | "WorktreeCreate") && !continuation
        {
            assert!(
                stdout.contains("seen-by-captain-hook"),
                "{file}: the warning was dropped: {stdout:?}"
            );
        }
        seen += 1;
    }
    assert!(seen >= 34, "only {seen} payloads");
    let future = format!(
        "{{\"session_id\":\"s\",\"cwd\":{:?}}}",
        root.display().to_string()
    );
    let out = env.hook("SomeFutureEvent", future.as_bytes(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
}

/// The repository's copy of the external spec files (`tests/fixtures/` at the
/// workspace root).
fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// The event names hook files accept, from the engine's own table.
fn capt_hook_core_names() -> Vec<String> {
    capt_hook_core::EventKind::ALL
        .iter()
        .map(|e| format!("\"{}\"", e.name()))
        .collect()
}

/// Claude Code before 2.1.139 drops exec form's `args` and runs the plugin's `bin/hook` bare:
/// the client then takes the event from the payload, so the guard still holds; with neither
/// an argument nor `hook_event_name` it says how to call it (exit 1, never 2).
#[test]
fn a_bare_client_reads_the_event_from_the_payload() {
    use std::io::Write;
    let env = Env::new();
    let root = env.project("p", HOOKS);
    let bare = |payload: &[u8]| {
        let mut child = env
            .cmd("hook")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(payload).unwrap();
        child.wait_with_output().unwrap()
    };
    let out = bare(&bash(&root, "git stash pop"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(decision(&json_out(&out)), Some("deny"));
    let out = bare(br#"{"session_id": "e2e", "cwd": "/"}"#);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("hook_event_name"), "{}", stderr(&out));
}

/// The host's control commands are the user's: sent as a Bash tool call through the real
/// client and host, `capt-hookd shutdown` is denied by the mandatory `host` pack, even with the
/// project's config.toml naming it; the same command from the user's shell stops the host.
#[test]
fn host_control_from_a_tool_call_is_denied_and_from_the_shell_works() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    std::fs::write(
        root.join(".claude/hooks/config.toml"),
        "[packs]\ndisable = [\"host\"]\n",
    )
    .unwrap();
    let out = env.hook("PreToolUse", &bash(&root, "capt-hookd shutdown"), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let answer = json_out(&out);
    assert_eq!(decision(&answer), Some("deny"), "{answer}");
    assert!(
        answer.to_string().contains("their own terminal"),
        "{answer}"
    );
    assert!(env.status().is_some(), "the host still runs");

    let shell = env.cmd("capt-hookd").arg("shutdown").output().unwrap();
    assert_eq!(shell.status.code(), Some(0), "{}", stderr(&shell));
    env.wait_until("the host stopped", || env.status().is_none());
}

/// The host serves control operations (shutdown, restart-workers) only to the `capt-hookd` or
/// `capt-hook` installed beside it: a copy of `capt-hookd` elsewhere, or any other program of
/// the same user speaking the socket (this test binary), is refused with the reason and the
/// way to do it; the host keeps running; the installed binary still stops it. Status is not a
/// control operation.
#[test]
fn control_from_a_binary_that_is_not_the_installed_one_is_refused() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    let out = env.hook("PreToolUse", &bash(&root, "git stash"), &[]);
    assert_eq!(decision(&json_out(&out)), Some("deny"), "{}", stderr(&out));
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let copy = elsewhere.join("capt-hookd");
    std::fs::copy(env.bin.join("capt-hookd"), &copy).unwrap();
    for op in ["shutdown", "restart-workers"] {
        let out = env.program(&copy).arg(op).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{op}: {}", stderr(&out));
        let why = stderr(&out);
        assert!(
            why.contains("served only to the installed capt-hookd or capt-hook")
                && why.contains(&copy.display().to_string())
                && why.contains("in your own terminal"),
            "{op}: {why}"
        );
    }
    // A program of the user's that speaks the socket itself.
    let mut stream = UnixStream::connect(env.run_dir().join("capt-hookd.sock")).unwrap();
    let reply = exchange(
        &mut stream,
        HostRequest::new(std::process::id(), Op::Shutdown),
    );
    let me = std::fs::read_link("/proc/self/exe").unwrap();
    match reply {
        HostReply::Refused {
            code: Refusal::Untrusted,
            reason,
        } => assert!(reason.contains(&me.display().to_string()), "{reason}"),
        other => panic!("a shutdown from the test binary was not refused: {other:?}"),
    }
    let status = env.status().expect("the host still runs");
    assert_eq!(
        status["workers"].as_array().map(Vec::len),
        Some(1),
        "restart-workers was refused too: {status}"
    );
    let down = env.cmd("capt-hookd").arg("shutdown").output().unwrap();
    assert_eq!(down.status.code(), Some(0), "{}", stderr(&down));
    env.wait_until("the host stopped", || env.status().is_none());
}

/// Policy through the real client, host and worker: the session's `CAPT_HOOK_POLICY_DIR` and
/// `CAPT_HOOK_POLICY_KEY` reach the worker; a signed pack's guard denies, and the same pack with
/// one byte changed makes a guarded call ask, naming the altered file.
#[test]
fn an_altered_policy_pack_asks_through_the_host_naming_the_file() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../capt-hook-packs/tests/fixtures/policy");
    let policy = env.dir.path().join("policy");
    let pack = policy.join("org");
    std::fs::create_dir_all(pack.join("hooks")).unwrap();
    for rel in [
        "pack.toml",
        "hooks/guard.toml",
        "SHA256SUMS",
        "SHA256SUMS.minisig",
    ] {
        std::fs::copy(fixtures.join("org").join(rel), pack.join(rel)).unwrap();
    }
    let key = fixtures.join("trusted.pub");
    let vars = [
        ("CAPT_HOOK_POLICY_DIR", policy.to_str().unwrap()),
        ("CAPT_HOOK_POLICY_KEY", key.to_str().unwrap()),
    ];
    let out = env.hook("PreToolUse", &bash(&root, "terraform apply"), &vars);
    let answer = json_out(&out);
    assert_eq!(decision(&answer), Some("deny"), "{answer}");
    assert!(
        answer.to_string().contains("organisation policy"),
        "{answer}"
    );

    let guard = pack.join("hooks/guard.toml");
    let text = std::fs::read_to_string(&guard).unwrap();
    std::fs::write(&guard, text.replacen("apply", "applz", 1)).unwrap();
    // The worker reloads when a watched file changes.
    env.wait_until("the altered pack asks", || {
        let out = env.hook("PreToolUse", &bash(&root, "ls"), &vars);
        let answer = json_out(&out);
        decision(&answer) == Some("ask") && answer.to_string().contains("hooks/guard.toml")
    });
}

#[test]
fn first_event_starts_the_host_and_later_ones_reuse_it() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    assert!(env.status().is_none(), "status must not start a host");
    assert!(
        !env.run_dir().exists(),
        "status must not create the socket dir"
    );

    let out = env.hook("PreToolUse", &bash(&root, "git stash pop"), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(decision(&json_out(&out)), Some("deny"));

    let out = env.hook("Stop", &stop(&root), &[]);
    assert_eq!(json_out(&out)["decision"], "block");
    let out = env.hook("PreToolUse", &bash(&root, "ls"), &[]);
    assert_eq!(json_out(&out), Value::Null);

    let status = env.status().expect("host answers");
    let workers = status["workers"].as_array().expect("workers");
    assert_eq!(workers.len(), 1, "{status}");
    assert_eq!(workers[0]["served"], 3);
    assert_eq!(workers[0]["outstanding"], 0);
    assert_eq!(
        workers[0]["root"],
        root.canonicalize().unwrap().display().to_string()
    );

    // Modes: directory 0700, socket 0600.
    let dir_mode = std::fs::metadata(env.run_dir())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    let sock_mode = std::fs::metadata(env.run_dir().join("capt-hookd.sock"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!((dir_mode, sock_mode), (0o700, 0o600));
    let log = env
        .dir
        .path()
        .join("home/.cache/captain-hook/host-v1/capt-hookd.log");
    assert!(
        std::fs::read_to_string(log)
            .unwrap()
            .contains("worker started")
    );
}

#[test]
fn async_twin_exits_at_once() {
    let env = Env::new();
    let out = env
        .cmd("hook")
        .args(["run", "Stop", "--async"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(env.status().is_none(), "--async must not start a host");
}

#[test]
fn killed_host_is_replaced_by_the_next_event() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    env.hook("Stop", &stop(&root), &[]);
    let old = env.status().unwrap()["pid"].as_u64().unwrap() as u32;
    signal(old, Signal::KILL);
    env.wait_until("old host gone", || env.status().is_none());

    // The socket file is stale now; the next event must start a fresh host anyway.
    assert!(env.run_dir().join("capt-hookd.sock").exists());
    let out = env.hook("PreToolUse", &bash(&root, "git stash"), &[]);
    assert_eq!(decision(&json_out(&out)), Some("deny"), "{}", stderr(&out));
    let new = env.status().unwrap()["pid"].as_u64().unwrap() as u32;
    assert_ne!(old, new);
}

#[test]
fn worker_killed_mid_event() {
    let env = Env::with(&[
        ("CAPT_HOOKD_WORKER", Env::fake_worker()),
        ("FAKE_WORKER_MODE", "hang"),
    ]);
    let root = env.project("p", HOOKS);

    // Mandatory (names pkill): the host fails, the client evaluates locally with the real
    // worker, and the real verdict (git stash is blocked) comes back.
    let child = env.spawn_hook("PreToolUse", &bash(&root, "pkill -f x; git stash"), &[]);
    env.wait_until("event in flight", || {
        env.status()
            .is_some_and(|s| s["workers"][0]["outstanding"] == 1)
    });
    for pid in env.worker_pids() {
        signal(pid, Signal::KILL);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(decision(&json_out(&out)), Some("deny"), "{}", stderr(&out));

    // Not mandatory: one line on stderr, exit 1.
    let child = env.spawn_hook("Stop", &stop(&root), &[]);
    env.wait_until("event in flight", || {
        env.status().is_some_and(|s| {
            s["workers"]
                .as_array()
                .is_some_and(|w| w.iter().any(|w| w["outstanding"] == 1))
        })
    });
    for pid in env.worker_pids() {
        signal(pid, Signal::KILL);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn guarded_event_without_any_evaluator_asks_the_user() {
    let env = Env::with(&[
        ("CAPT_HOOKD_WORKER", Env::fake_worker()),
        ("FAKE_WORKER_MODE", "garbage"),
    ]);
    let root = env.project("p", HOOKS);
    // No local evaluator either.
    std::fs::remove_file(env.bin.join("capt-hook-worker")).unwrap();

    let out = env.hook("PreToolUse", &bash(&root, "kill 1"), &[]);
    assert_eq!(out.status.code(), Some(0));
    let v = json_out(&out);
    assert_eq!(decision(&v), Some("ask"), "{v}");
    let why = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        why.contains("transport-error") && why.contains("dependency-unavailable"),
        "{why}"
    );
    assert!(stderr(&out).contains("could not check"), "{}", stderr(&out));

    let out = env.hook("PermissionRequest", &bash(&root, "kill 1"), &[]);
    let v = json_out(&out);
    assert!(
        v["systemMessage"].as_str().unwrap().contains(ASK_MARK),
        "{v}"
    );
    assert_eq!(v.as_object().unwrap().len(), 1);

    // The broken worker was retired, not kept.
    let out = env.hook("Stop", &stop(&root), &[]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn deadline_passing() {
    let env = Env::with(&[
        ("CAPT_HOOKD_WORKER", Env::fake_worker()),
        ("FAKE_WORKER_MODE", "hang"),
    ]);
    let root = env.project("p", HOOKS);
    let quick = [("CAPT_HOOK_CLIENT_TIMEOUT", "1")];

    let out = env.hook("Stop", &stop(&root), &quick);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("deadline"), "{}", stderr(&out));

    // Mandatory: retried once, then evaluated locally by the real worker, which gets a third
    // of the deadline: in a debug build on a loaded machine, loading every builtin pack can
    // take longer than a third of one second.
    let out = env.hook(
        "PreToolUse",
        &bash(&root, "pkill x; git stash"),
        &[("CAPT_HOOK_CLIENT_TIMEOUT", "4")],
    );
    assert_eq!(decision(&json_out(&out)), Some("deny"), "{}", stderr(&out));

    // A deadline already in the past is refused before dispatch.
    let mut stream = UnixStream::connect(env.run_dir().join("capt-hookd.sock")).unwrap();
    let mut req = event_request(&root);
    req.deadline_unix_ms = 1;
    let reply = exchange(&mut stream, HostRequest::event(std::process::id(), req));
    assert!(
        matches!(
            reply,
            HostReply::Refused {
                code: Refusal::DeadlinePassed,
                ..
            }
        ),
        "{reply:?}"
    );
}

#[test]
fn many_concurrent_clients_each_get_one_answer() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    env.hook("Stop", &stop(&root), &[]);
    let payload = bash(&root, "git stash list");
    let answers: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..80)
            .map(|_| s.spawn(|| env.hook("PreToolUse", &payload, &[])))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for out in &answers {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        assert_eq!(decision(&json_out(out)), Some("deny"));
    }
    let status = env.status().unwrap();
    assert_eq!(status["workers"][0]["served"], 81, "{status}");
}

#[test]
fn malformed_and_oversized_stdin() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    let root_var = [("CLAUDE_PROJECT_DIR", root.to_str().unwrap())];

    // A guarded call whose payload cannot be read asks the user, with or without a root to
    // send it to; it is never refused with exit 1.
    let asks = |out: &std::process::Output| {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        let v = json_out(out);
        assert_eq!(decision(&v), Some("ask"), "{v}");
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let out = env.hook("PreToolUse", b"{not json", &root_var);
    assert!(stderr(&out).contains("Malformed stdin"), "{}", stderr(&out));
    assert!(asks(&out).contains("could not read"));

    let out = env.hook("PreToolUse", b"{not json", &[]);
    assert!(asks(&out).contains("bad-input"));

    let out = env.hook("PreToolUse", b"\xff\xfe", &root_var);
    assert!(asks(&out).contains("could not read"));

    let big = vec![b' '; capt_hook_proto::MAX_EVENT_INPUT + 1];
    let out = env.hook("PreToolUse", &big, &root_var);
    assert!(stderr(&out).contains("exceeds"), "{}", stderr(&out));
    asks(&out);

    // An event that decides nothing keeps exit 1 for what it cannot send.
    let out = env.hook("Stop", &big, &root_var);
    assert_eq!(out.status.code(), Some(1));

    let out = env.hook("NoSuchEvent", &stop(&root), &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "an event a newer Claude Code sends is a no-op, never an error"
    );
    assert!(out.stdout.is_empty());
    assert_eq!(
        env.cmd("hook").arg("run").output().unwrap().status.code(),
        Some(1)
    );
}

#[test]
fn foreign_pid_and_bad_frames_are_refused() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    env.hook("Stop", &stop(&root), &[]);
    let socket = env.run_dir().join("capt-hookd.sock");

    let mut stream = UnixStream::connect(&socket).unwrap();
    let reply = exchange(
        &mut stream,
        HostRequest::event(std::process::id() + 1, event_request(&root)),
    );
    assert!(
        matches!(
            reply,
            HostReply::Refused {
                code: Refusal::Untrusted,
                ..
            }
        ),
        "{reply:?}"
    );

    let mut stream = UnixStream::connect(&socket).unwrap();
    write_frame(&mut stream, b"{\"protocol\":1}").unwrap();
    let reply: HostReply = decode(&read_frame(&mut stream, MAX_FRAME).unwrap().unwrap()).unwrap();
    assert!(matches!(
        reply,
        HostReply::Refused {
            code: Refusal::BadRequest,
            ..
        }
    ));

    // An oversized length prefix is refused without the host reading (or allocating) it.
    let mut stream = UnixStream::connect(&socket).unwrap();
    std::io::Write::write_all(&mut stream, &u32::MAX.to_be_bytes()).unwrap();
    let reply: HostReply = decode(&read_frame(&mut stream, MAX_FRAME).unwrap().unwrap()).unwrap();
    assert!(matches!(
        reply,
        HostReply::Refused {
            code: Refusal::BadRequest,
            ..
        }
    ));

    let mut req = HostRequest::event(std::process::id(), event_request(&root));
    req.build = "0.0.0-elsewhere".into();
    let mut stream = UnixStream::connect(&socket).unwrap();
    let reply = exchange(&mut stream, req);
    assert!(matches!(
        reply,
        HostReply::Refused {
            code: Refusal::BuildMismatch,
            ..
        }
    ));
    assert!(env.status().is_some(), "the host survives bad clients");
}

#[test]
#[cfg_attr(
    not(feature = "root-tests"),
    ignore = "needs root to run a client as another uid: run as root with --features root-tests (CI does)"
)]
fn foreign_uid_is_refused() {
    assert!(
        rustix::process::geteuid().is_root(),
        "the root-tests feature needs root: it runs a client as another uid"
    );
    let env = Env::new();
    let root = env.project("p", HOOKS);
    env.hook("Stop", &stop(&root), &[]);
    // Open the way to the socket, so only the peer-credential check stands between.
    for p in [
        env.dir.path().to_path_buf(),
        env.dir.path().join("run"),
        env.dir.path().join("projects"),
        root.clone(),
    ] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(env.run_dir(), std::fs::Permissions::from_mode(0o711)).unwrap();
    std::fs::set_permissions(
        env.run_dir().join("capt-hookd.sock"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    // The build tree may sit under a 0700 directory (CI clones into `mktemp -d`): run a copy
    // from the opened test directory, so uid 65534 can execute it wherever the build is.
    let hook = env.dir.path().join("e2e-hook");
    std::fs::copy(env!("CARGO_BIN_EXE_e2e-hook"), &hook).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = std::process::Command::new(&hook);
    std::os::unix::process::CommandExt::uid(&mut cmd, 65534);
    let out = cmd
        .args(["run", "Stop"])
        .env("XDG_RUNTIME_DIR", env.dir.path().join("run"))
        .env("HOME", env.dir.path().join("nobody"))
        .stdin(std::fs::File::open(write_tmp(&env, &stop(&root))).unwrap())
        .output()
        .expect("uid 65534 runs the client copy");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // The client refuses a host of another uid before it sends anything (the host's own check
    // of its peer's uid stands behind that).
    assert!(
        stderr(&out).contains("it runs as uid 0, not as this user (uid 65534)"),
        "{}",
        stderr(&out)
    );
}

/// A process on the socket that is not the installed `capt-hookd` (here the same host binary
/// copied elsewhere) is refused before the event is sent: a guarded event is answered by local
/// evaluation with the reason on stderr, an unguarded one fails naming both executables; once
/// it is gone, the next event starts the installed host.
#[test]
fn a_host_run_from_another_binary_is_refused() {
    use std::io::BufRead;
    let env = Env::new();
    let root = env.project("p", HOOKS);
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let copy = elsewhere.join("capt-hookd");
    std::fs::copy(env.bin.join("capt-hookd"), &copy).unwrap();
    let mut impostor = env
        .program(&copy)
        .arg("serve")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufReader::new(impostor.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert!(ready.starts_with("ready"), "{ready:?}");

    let guarded = env.hook("PreToolUse", &bash(&root, "git stash"), &[]);
    assert_eq!(
        decision(&json_out(&guarded)),
        Some("deny"),
        "{}",
        stderr(&guarded)
    );
    let why = stderr(&guarded);
    assert!(why.contains("refused the host"), "{why}");
    assert!(why.contains(&copy.display().to_string()), "{why}");
    let unguarded = env.hook("Stop", &stop(&root), &[]);
    assert_eq!(unguarded.status.code(), Some(1), "{}", stderr(&unguarded));
    let why = stderr(&unguarded);
    assert!(
        why.contains("not the installed") && why.contains(&env.bin.display().to_string()),
        "{why}"
    );
    let status = env.status().unwrap();
    assert_eq!(
        status["workers"].as_array().map(Vec::len),
        Some(0),
        "no event reached the impostor: {status}"
    );

    // The impostor (a copy of the host) serves control operations only to the binaries
    // beside it, as the installed host does: the installed `capt-hookd shutdown` is refused,
    // the copy's own is served.
    let refused = env.cmd("capt-hookd").arg("shutdown").output().unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let down = env.program(&copy).arg("shutdown").output().unwrap();
    assert_eq!(down.status.code(), Some(0), "{}", stderr(&down));
    let _ = impostor.wait();
    let out = env.hook("PreToolUse", &bash(&root, "git stash"), &[]);
    assert_eq!(decision(&json_out(&out)), Some("deny"), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("refused the host"),
        "{}",
        stderr(&out)
    );
    let _ = env.cmd("capt-hookd").arg("shutdown").output();
}

/// A host started with `--prestart ROOT` (as a client that finds no host starts it) has that
/// root's worker running before any event arrives, and the first event uses it.
#[test]
fn a_prestarted_host_runs_the_roots_worker_before_its_first_event() {
    use std::io::BufRead;
    let env = Env::new();
    let root = env.project("p", HOOKS);
    let mut host = env
        .cmd("capt-hookd")
        .args(["serve", "--prestart"])
        .arg(&root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufReader::new(host.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert!(ready.starts_with("ready"), "{ready:?}");
    let canonical = root.canonicalize().unwrap();
    env.wait_until("the root's worker runs with no event sent", || {
        env.status().is_some_and(|s| {
            s["workers"][0]["root"] == canonical.to_str().unwrap() && s["workers"][0]["served"] == 0
        })
    });
    let out = env.hook("PreToolUse", &bash(&root, "git stash"), &[]);
    assert_eq!(decision(&json_out(&out)), Some("deny"), "{}", stderr(&out));
    let status = env.status().unwrap();
    let workers = status["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 1, "{status}");
    assert_eq!(
        workers[0]["generation"], 1,
        "the event used the prestarted worker"
    );
    assert_eq!(workers[0]["served"], 1);
    let _ = env.cmd("capt-hookd").arg("shutdown").output();
    let _ = host.wait();
}

#[test]
fn status_idle_and_under_load() {
    let env = Env::with(&[
        ("CAPT_HOOKD_WORKER", Env::fake_worker()),
        ("FAKE_WORKER_MODE", "hang"),
    ]);
    let root = env.project("p", HOOKS);
    let quick = [("CAPT_HOOK_CLIENT_TIMEOUT", "30")];
    let children: Vec<_> = (0..3)
        .map(|_| env.spawn_hook("Stop", &stop(&root), &quick))
        .collect();
    env.wait_until("three events in flight", || {
        env.status()
            .is_some_and(|s| s["in_flight"] == 3 && s["workers"][0]["outstanding"] == 3)
    });
    let status = env.status().unwrap();
    assert_eq!(status["workers"].as_array().unwrap().len(), 1);
    for key in [
        "key",
        "root",
        "pid",
        "generation",
        "outstanding",
        "served",
        "started_at_unix_ms",
    ] {
        assert!(
            status["workers"][0].get(key).is_some(),
            "status lacks {key}: {status}"
        );
    }
    // restart-workers fails the stuck events and leaves an idle host with no workers.
    let out = env
        .cmd("capt-hookd")
        .arg("restart-workers")
        .output()
        .unwrap();
    assert!(out.status.success());
    for child in children {
        assert_eq!(child.wait_with_output().unwrap().status.code(), Some(1));
    }
    let status = env.status().unwrap();
    assert_eq!(status["in_flight"], 0);
    assert_eq!(status["workers"].as_array().unwrap().len(), 0, "{status}");
}

#[test]
fn shutdown_answers_events_in_flight() {
    let env = Env::with(&[
        ("CAPT_HOOKD_WORKER", Env::fake_worker()),
        ("FAKE_WORKER_MODE", "slow"),
    ]);
    let root = env.project("p", HOOKS);
    let children: Vec<_> = (0..5)
        .map(|i| {
            let payload = if i % 2 == 0 {
                stop(&root)
            } else {
                bash(&root, "pkill x")
            };
            let event = if i % 2 == 0 { "Stop" } else { "PreToolUse" };
            env.spawn_hook(event, &payload, &[])
        })
        .collect();
    env.wait_until("five events in flight", || {
        env.status().is_some_and(|s| s["in_flight"] == 5)
    });
    let out = env.cmd("capt-hookd").arg("shutdown").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v = json_out(&out);
        // The host's answer, or (for the guarded events the draining host could not finish)
        // the local evaluation's: `pkill x` matches no hook, so nothing to say.
        assert!(v["slow"] == true || v == Value::Null, "{v}");
    }
    assert!(env.status().is_none());
    assert!(!env.run_dir().join("capt-hookd.sock").exists());
}

/// The client decides whether a guarded answer stands from the reply's typed decision, never
/// from the envelope's text: an incomplete check that approves is replaced by the client's ask
/// (no-verdict) even when its text reads "deny", and one that denies stands as it is.
#[test]
fn the_typed_decision_decides_what_stands() {
    for (decision, stands) in [("allow", false), ("deny", true)] {
        let env = Env::with(&[
            ("CAPT_HOOKD_WORKER", Env::fake_worker()),
            ("FAKE_WORKER_MODE", "typed"),
            ("FAKE_WORKER_DECISION", decision),
        ]);
        let root = env.project("p", HOOKS);
        let out = env.hook("PreToolUse", &bash(&root, "ls"), &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v = json_out(&out);
        assert_eq!(v["fake"] == true, stands, "{decision}: {v}");
        if !stands {
            assert_eq!(
                v["hookSpecificOutput"]["permissionDecision"], "ask",
                "{decision}: {v}"
            );
            assert!(v.to_string().contains("no-verdict"), "{v}");
        }
    }
}

/// A variable that is not UTF-8, anywhere in the environment, does not take the client down:
/// the event is answered as without it.
#[test]
fn a_variable_that_is_not_utf8_is_skipped() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let root = env.project("p", HOOKS);
    let mut child = env
        .cmd("hook")
        .args(["run", "PreToolUse"])
        .env(
            std::ffi::OsStr::from_bytes(b"LANGUAGE_\xff"),
            std::ffi::OsStr::from_bytes(b"\xfe"),
        )
        .env("CLAUDE_X", std::ffi::OsStr::from_bytes(b"\xfe"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, &bash(&root, "git stash")).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(decision(&json_out(&out)), Some("deny"));
}

/// A host that stops cleanly leaves no worker recorded, so the next one starts without a
/// leftover to check and a record file to rewrite. The exits' own saves ran on the blocking
/// pool, and the stopping runtime dropped about half of them unrun.
#[test]
fn a_clean_stop_leaves_no_worker_recorded() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    let records = env
        .dir
        .path()
        .join("home/.cache/captain-hook/host-v1/workers.json");
    for round in 0..5 {
        let out = env.hook("PreToolUse", &bash(&root, "git stash list"), &[]);
        assert!(json_out(&out).to_string().contains("use jj shelve"));
        let host = env.status().expect("host answers")["pid"].as_u64().unwrap();
        let text = std::fs::read_to_string(&records).unwrap_or_default();
        let down = env.cmd("capt-hookd").arg("shutdown").output().unwrap();
        assert!(down.status.success(), "{}", stderr(&down));
        env.wait_until("the host exits", || {
            !std::path::Path::new(&format!("/proc/{host}")).exists()
        });
        let text_after = std::fs::read_to_string(&records).unwrap();
        assert_eq!(
            text_after, "[]",
            "round {round}: recorded while running {text}, after the stop {text_after}"
        );
    }
}

/// The next worker of a project reads what the last one learned parsing its patterns, and
/// guards the same: the project's deny and the builtin pack's (look-around) deny both hold.
#[test]
fn a_worker_started_from_pattern_facts_guards_the_same() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    let facts = env
        .dir
        .path()
        .join("home/.cache/captain-hook/host-v1/patterns");
    for round in 0..2 {
        let out = env.hook("PreToolUse", &bash(&root, "git stash list"), &[]);
        assert!(
            json_out(&out).to_string().contains("use jj shelve"),
            "round {round}: {}",
            json_out(&out)
        );
        let out = env.hook("PreToolUse", &bash(&root, "find ~ -name x"), &[]);
        assert!(
            json_out(&out).to_string().contains("rg"),
            "round {round}: {}",
            json_out(&out)
        );
        let out = env.hook("PreToolUse", &bash(&root, "cargo test"), &[]);
        assert_eq!(json_out(&out), Value::Null, "round {round}");
        let out = env
            .cmd("capt-hookd")
            .arg("restart-workers")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        env.wait_until("the pattern facts are written", || {
            std::fs::read_dir(&facts).is_ok_and(|d| d.count() == 1)
        });
    }
}

#[test]
fn edited_hook_files_are_reloaded() {
    let env = Env::new();
    // `git stash list` is blocked by the project's hook alone (the builtin stash guard allows
    // it), so emptying the file must let it through.
    let root = env.project("p", HOOKS);
    let out = env.hook("PreToolUse", &bash(&root, "git stash list"), &[]);
    assert!(json_out(&out).to_string().contains("use jj shelve"));
    write_hooks(
        &root,
        &HOOKS.replace("use jj shelve", "shelve it with jj, please"),
    );
    let out = env.hook("PreToolUse", &bash(&root, "git stash list"), &[]);
    assert!(
        json_out(&out)
            .to_string()
            .contains("shelve it with jj, please"),
        "{}",
        json_out(&out)
    );
    write_hooks(&root, "");
    let out = env.hook("PreToolUse", &bash(&root, "git stash list"), &[]);
    assert_eq!(json_out(&out), Value::Null);
    let pids = env.worker_pids();
    assert_eq!(pids.len(), 1, "reloaded in place, not by a new worker");
}

#[test]
fn temp_dir_roots_do_not_keep_a_worker() {
    let env = Env::new();
    let root = env.host_tmp().join("scratch");
    write_hooks(&root, HOOKS);
    let out = env.hook("PreToolUse", &bash(&root, "git stash"), &[]);
    assert_eq!(decision(&json_out(&out)), Some("deny"));
    env.wait_until("temp-root worker retired", || env.worker_pids().is_empty());
}

#[test]
fn workers_are_keyed_by_semantic_env_only() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    env.hook("Stop", &stop(&root), &[("CLAUDE_CODE_SESSION_ID", "a")]);
    env.hook("Stop", &stop(&root), &[("CLAUDE_CODE_SESSION_ID", "b")]);
    assert_eq!(env.worker_pids().len(), 1);
    env.hook("Stop", &stop(&root), &[("HOOKS_FLAVOR", "x")]);
    assert_eq!(env.worker_pids().len(), 2);
}

#[test]
fn plugin_shim_without_a_client() {
    assert!(
        std::process::Command::new("python3")
            .arg("-c")
            .arg("pass")
            .output()
            .is_ok_and(|o| o.status.success()),
        "the plugin's no-client path needs python3 (install it: .ci/run does)"
    );
    let env = Env::new();
    std::fs::remove_dir_all(&env.bin).unwrap();
    let shim = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugin/bin/hook");
    let root = env.project("p", HOOKS);
    let run = |event: &str, payload: &[u8]| {
        let mut cmd = env.cmd("hook");
        let mut shim_cmd = std::process::Command::new(&shim);
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => shim_cmd.env(k, v),
                None => shim_cmd.env_remove(k),
            };
        }
        let _ = &mut cmd;
        shim_cmd
            .args(["run", event])
            .stdin(std::fs::File::open(write_tmp(&env, payload)).unwrap())
            .output()
            .unwrap()
    };
    let out = run("Stop", &stop(&root));
    assert_eq!(out.status.code(), Some(0));
    assert!(
        json_out(&out)["systemMessage"]
            .as_str()
            .unwrap()
            .contains("not installed")
    );
    let out = run("Stop", &stop(&root));
    assert_eq!(
        json_out(&out),
        Value::Null,
        "only the session's first event carries the note"
    );
    // The project's hooks cannot run: Claude Code's own permission prompt decides, with why.
    for command in ["pkill node", "git status"] {
        let out = run("PreToolUse", &bash(&root, command));
        assert_eq!(out.status.code(), Some(0));
        let v = json_out(&out);
        assert_eq!(decision(&v), Some("ask"), "{command}: {v}");
        assert!(
            v["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .contains("not installed"),
            "{v}"
        );
    }
    let out = run("PermissionRequest", &bash(&root, "git status"));
    assert!(
        json_out(&out)["systemMessage"]
            .as_str()
            .unwrap()
            .contains("not installed")
    );
    // A skill's shell command cannot wait for a prompt: it does not run, and the reason says why.
    let out = run("PreSkillShellCommand", &bash(&root, "git status"));
    assert_eq!(out.status.code(), Some(0));
    let v = json_out(&out);
    assert_eq!(decision(&v), Some("deny"), "{v}");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("not installed") && reason.contains("cannot wait"),
        "{reason}"
    );
    // A project without hook files: only a call that may end sessions is held back.
    let bare = env.project("bare", "");
    std::fs::remove_dir_all(bare.join(".claude/hooks")).unwrap();
    let out = run("PreToolUse", &bash(&bare, "git status"));
    assert_eq!(json_out(&out), Value::Null);
    let out = run("PreToolUse", &bash(&bare, "pkill node"));
    assert_eq!(decision(&json_out(&out)), Some("ask"));
}

fn event_request(root: &std::path::Path) -> EventRequest {
    EventRequest {
        schema: 1,
        event: "Stop".into(),
        root: root.display().to_string(),
        cwd: root.display().to_string(),
        env: Default::default(),
        payload_raw: String::from_utf8(stop(root)).unwrap(),
        client_pid: std::process::id(),
        client_ppid: 1,
        deadline_unix_ms: 0,
        notice_epoch: None,
        notices: Vec::new(),
        classic: false,
        agent: None,
        request_id: None,
    }
}

fn exchange(stream: &mut UnixStream, req: HostRequest) -> HostReply {
    write_frame(stream, &encode(&req)).unwrap();
    decode(&read_frame(stream, MAX_FRAME).unwrap().expect("a reply")).unwrap()
}

fn write_tmp(env: &Env, body: &[u8]) -> std::path::PathBuf {
    let path = env.dir.path().join(format!("stdin-{}", body.len()));
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn version_and_usage() {
    let env = Env::new();
    let out = env.cmd("capt-hookd").arg("version").output().unwrap();
    let v: Value = capt_hook_proto::serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["build"], capt_hook_proto::BUILD);
    assert_eq!(v["protocol"], capt_hook_proto::PROTOCOL);
    assert_eq!(
        v["host"],
        Value::Null,
        "no host runs, and version starts none: {v}"
    );
    assert!(env.status().is_none());
    let root = env.project("version", HOOKS);
    env.hook("PreToolUse", &bash(&root, "ls"), &[]);
    let out = env.cmd("capt-hookd").arg("--version").output().unwrap();
    let v: Value = capt_hook_proto::serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["host"]["build"], capt_hook_proto::BUILD, "{v}");
    assert_eq!(v["host"]["pid"], env.status().unwrap()["pid"]);
    assert!(v.get("update_available").is_none(), "{v}");
    assert_eq!(
        env.cmd("capt-hookd").output().unwrap().status.code(),
        Some(1)
    );
    assert_eq!(
        env.cmd("capt-hookd")
            .arg("bogus")
            .output()
            .unwrap()
            .status
            .code(),
        Some(1)
    );
    let _ = Op::Version;
}

#[test]
fn idle_workers_are_retired() {
    let env = Env::with(&[("CAPT_HOOKD_IDLE_SECS", "0.3")]);
    let root = env.project("p", HOOKS);
    let out = env.hook("Stop", &stop(&root), &[]);
    assert_eq!(json_out(&out)["decision"], "block");
    env.wait_until("idle worker retired", || env.worker_pids().is_empty());
    assert!(env.status().is_some(), "the host stays");
    let out = env.hook("Stop", &stop(&root), &[]);
    assert_eq!(
        json_out(&out)["decision"],
        "block",
        "the next event starts a fresh worker"
    );
}

// ---------------------------------------------------------------------------------------------
// Guarded calls under faults (issue 9): a PreToolUse the host cannot answer, whose payload is
// hard to read, or whose hook files do not all load, ends visibly — the local verdict, or an
// ask naming what failed — and never in silence or exit 1.
// ---------------------------------------------------------------------------------------------

/// The PreToolUse answer of a finished client, checked to be a visible one (exit 0, JSON).
fn guarded_answer(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    let v = json_out(out);
    assert!(v.is_object(), "a guarded call must not end in silence: {v}");
    v
}

#[test]
fn guard_host_killed_mid_event_falls_back_to_the_local_verdict() {
    let env = Env::with(&[
        ("CAPT_HOOKD_WORKER", Env::fake_worker()),
        ("FAKE_WORKER_MODE", "hang"),
    ]);
    let root = env.project("p", HOOKS);
    // No guard words: this event is not "mandatory", and still gets a verdict.
    let child = env.spawn_hook("PreToolUse", &bash(&root, "git stash"), &[]);
    env.wait_until("event in flight", || {
        env.status().is_some_and(|s| s["in_flight"] == 1)
    });
    let host = env.status().unwrap()["pid"].as_u64().unwrap() as u32;
    signal(host, Signal::KILL);
    let out = child.wait_with_output().unwrap();
    assert_eq!(decision(&guarded_answer(&out)), Some("deny"));
}

#[test]
fn guard_host_stopped_falls_back_within_one_deadline() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    env.hook("Stop", &stop(&root), &[]);
    let host = env.status().unwrap()["pid"].as_u64().unwrap() as u32;
    signal(host, Signal::STOP);
    // Resume the host whatever happens, so the harness can shut it down.
    struct Cont(u32);
    impl Drop for Cont {
        fn drop(&mut self) {
            signal(self.0, Signal::CONT);
        }
    }
    let _cont = Cont(host);

    let quick = [("CAPT_HOOK_CLIENT_TIMEOUT", "3")];
    let started = std::time::Instant::now();
    let out = env.hook("PreToolUse", &bash(&root, "git stash"), &quick);
    let took = started.elapsed();
    assert_eq!(decision(&guarded_answer(&out)), Some("deny"));
    // One deadline for host, retries and local evaluation together (the old client could take
    // three timeouts); the bound is loose on purpose, it only separates one from three.
    assert!(took < std::time::Duration::from_secs(7), "took {took:?}");

    // With the stopped host's accept backlog full, `connect` itself would wait: it too is
    // bounded by the deadline.
    let backlog = fill_backlog(&env.run_dir().join("capt-hookd.sock"));
    assert!(!backlog.is_empty());
    let started = std::time::Instant::now();
    let out = env.hook("PreToolUse", &bash(&root, "git stash"), &quick);
    let took = started.elapsed();
    assert_eq!(decision(&guarded_answer(&out)), Some("deny"));
    assert!(took < std::time::Duration::from_secs(7), "took {took:?}");
}

/// Connects to `socket` until the listener's backlog is full (a connect that would wait), and
/// keeps the connections open.
fn fill_backlog(socket: &std::path::Path) -> Vec<rustix::fd::OwnedFd> {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType, sockopt};
    let addr = SocketAddrUnix::new(socket).unwrap();
    let mut held = Vec::new();
    for _ in 0..20_000 {
        let fd = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        let wait = std::time::Duration::from_millis(20);
        sockopt::set_socket_timeout(&fd, sockopt::Timeout::Send, Some(wait)).unwrap();
        match rustix::net::connect(&fd, &addr) {
            Ok(()) => held.push(fd),
            Err(rustix::io::Errno::AGAIN) => return held,
            Err(e) => panic!("connect: {e}"),
        }
    }
    panic!("the backlog never filled ({} connections)", held.len());
}

#[test]
fn guard_worker_killed_or_wedged_gets_the_local_verdict() {
    let env = Env::with(&[
        ("CAPT_HOOKD_WORKER", Env::fake_worker()),
        ("FAKE_WORKER_MODE", "hang"),
    ]);
    let root = env.project("p", HOOKS);

    // Killed mid-event (not a mandatory event: no guard words).
    let child = env.spawn_hook("PreToolUse", &bash(&root, "git stash"), &[]);
    env.wait_until("event in flight", || {
        env.status()
            .is_some_and(|s| s["workers"][0]["outstanding"] == 1)
    });
    for pid in env.worker_pids() {
        signal(pid, Signal::KILL);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(decision(&guarded_answer(&out)), Some("deny"));

    // Wedged: the worker never answers; the host times out and the client evaluates locally.
    let quick = [("CAPT_HOOK_CLIENT_TIMEOUT", "2")];
    let out = env.hook("PreToolUse", &bash(&root, "git stash"), &quick);
    assert_eq!(decision(&guarded_answer(&out)), Some("deny"));
    // A harmless call gets the local "nothing to say", not an error.
    let out = env.hook("PreToolUse", &bash(&root, "ls"), &quick);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json_out(&out), Value::Null);
}

#[test]
fn guard_local_evaluator_wedged_too_asks_in_time() {
    let env = Env::with(&[
        ("CAPT_HOOKD_WORKER", Env::fake_worker()),
        ("FAKE_WORKER_MODE", "hang"),
    ]);
    let root = env.project("p", HOOKS);
    // The local evaluator hangs as well (a script that never answers).
    let fake = env.bin.join("capt-hook-worker");
    std::fs::write(&fake, "#!/bin/sh\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env.hook(
        "PreToolUse",
        &bash(&root, "git stash"),
        &[("CAPT_HOOK_CLIENT_TIMEOUT", "1.5")],
    );
    let v = guarded_answer(&out);
    assert_eq!(decision(&v), Some("ask"), "{v}");
    let why = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        why.contains("transport-timeout") && why.contains("local evaluation"),
        "{why}"
    );
}

/// A guarded event the host's worker is still running when the client stops waiting for the
/// host is not run a second time by the client's local evaluation: the worker claimed it, so
/// its hooks' side effects (here a judge call) happen once, and the call is left to the user
/// saying why. The claim is gone once the client is done.
#[test]
fn an_event_the_hosts_worker_runs_is_not_evaluated_again_locally() {
    let env = Env::new();
    let root = env.project(
        "claimed",
        r#"
[[hook]]
kind = "llm_gate"
label = "pushes"
events = "PreToolUse"
only_if = [{ runs = ["git", "push"] }]
prompt = "Is this push risky?"
message = "Risky push."
backend = "command"
"#,
    );
    std::fs::write(
        root.join(".claude/hooks/config.toml"),
        "[packs]\ndisable = [\"general\", \"fixes\", \"performance\"]\n",
    )
    .unwrap();
    let calls = env.dir.path().join("judge-calls");
    let judge = env.dir.path().join("slow-judge");
    std::fs::write(
        &judge,
        format!(
            "#!/bin/sh\ncat > /dev/null\necho call >> '{}'\nsleep 1\necho '{{\"block\": false, \"reasoning\": \"fine\"}}'\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&judge, std::fs::Permissions::from_mode(0o755)).unwrap();
    let judge = judge.display().to_string();
    let vars = [
        ("CAPT_HOOK_LLM_COMMAND", judge.as_str()),
        ("CAPT_HOOK_CLIENT_TIMEOUT", "9"),
    ];
    let count = || {
        std::fs::read_to_string(&calls)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let child = env.spawn_hook("PreToolUse", &bash(&root, "git push"), &vars);
    // The host's worker is asking its judge: it has the event. Stopped there, it cannot answer
    // the host in time, and the client evaluates locally.
    env.wait_until("the host's worker calls its judge", || count() == 1);
    let workers = env.worker_pids();
    assert!(!workers.is_empty());
    for &pid in &workers {
        signal(pid, Signal::STOP);
    }
    let out = child.wait_with_output().unwrap();
    for &pid in &workers {
        signal(pid, Signal::CONT);
    }
    // The local evaluation ended before the client answered: a judge call of its own (the
    // script's first line) would be counted by now.
    assert_eq!(count(), 1, "the judge was asked twice");
    let v = guarded_answer(&out);
    assert_eq!(decision(&v), Some("ask"), "{v}");
    let why = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        why.contains("already running this event") && why.contains("the host's worker"),
        "{why}"
    );
    // The claim stays only if the client finished before the host's own deadline (a sweep
    // removes it later); it is the host worker's.
    let claims = || -> Vec<String> {
        std::fs::read_dir(env.run_dir().join("claims"))
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect()
    };
    let left = claims();
    assert!(
        left.len() <= 1 && left.iter().all(|c| c.contains("the host's worker")),
        "{left:?}"
    );

    // An event the host answers runs once and leaves no claim of its own.
    let out = env.hook("PreToolUse", &bash(&root, "git push"), &vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(count(), 2);
    assert_eq!(claims().len(), left.len());
}

#[test]
fn guard_unreadable_and_lenient_payloads() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    let root_var = [("CLAUDE_PROJECT_DIR", root.to_str().unwrap())];

    // What Claude Code's runtime can write is read: a BOM, a lone surrogate, trailing bytes,
    // nesting far past 128 levels in another field.
    let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
    let text = format!(
        "\u{feff}{{\"session_id\":\"e2e\",\"cwd\":{cwd:?},\"tool_name\":\"Bash\",\
         \"tool_input\":{{\"command\":\"git stash \\ud800\",\"deep\":{deep}}}}}\n{{}}",
        cwd = root.to_str().unwrap()
    );
    let out = env.hook("PreToolUse", text.as_bytes(), &[]);
    assert_eq!(decision(&guarded_answer(&out)), Some("deny"));

    // A bad client setting does not cost a guarded call its check.
    let bad = [("CAPT_HOOK_CLIENT_TIMEOUT", "0")];
    let out = env.hook("PreToolUse", &bash(&root, "git stash"), &bad);
    assert_eq!(decision(&guarded_answer(&out)), Some("deny"));
    assert!(
        stderr(&out).contains("must be positive"),
        "{}",
        stderr(&out)
    );
    assert_eq!(env.hook("Stop", &stop(&root), &bad).status.code(), Some(1));

    // Truly unreadable: the user is asked, and told why.
    let out = env.hook("PreToolUse", br#"{"tool_name":"Bash","tool_in"#, &root_var);
    let v = guarded_answer(&out);
    assert_eq!(decision(&v), Some("ask"));
    assert!(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("could not read this PreToolUse payload"),
        "{v}"
    );
    let out = env.hook(
        "PermissionRequest",
        br#"{"tool_name":"Bash","tool_in"#,
        &root_var,
    );
    assert!(
        guarded_answer(&out)["systemMessage"]
            .as_str()
            .unwrap()
            .contains("could not read")
    );
}

#[test]
fn guard_hook_file_that_fails_to_load_asks_and_tells_the_user_once() {
    let env = Env::new();
    let root = env.project("p", HOOKS);
    let broken = root.join(".claude/hooks/broken.toml");
    std::fs::write(
        &broken,
        "[[hook]]\nkind = \"block_command\"\nargv = [\"rm\",\n",
    )
    .unwrap();

    // The first event of the session carries the notice, whatever the event.
    let out = env.hook("Stop", &stop(&root), &[]);
    let v = json_out(&out);
    assert_eq!(v["decision"], "block", "the loaded file still serves: {v}");
    let notice = v["systemMessage"].as_str().expect("load errors notice");
    assert!(notice.contains("broken.toml:3:"), "{notice}");

    // A call the broken file might have denied is left to the user, with file:line:col.
    // (Not a recursive delete: the safety pack denies that itself, and a deny still wins.)
    let out = env.hook("PreToolUse", &bash(&root, "rm build.log"), &[]);
    let v = guarded_answer(&out);
    assert_eq!(decision(&v), Some("ask"), "{v}");
    assert!(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("broken.toml:3:"),
        "{v}"
    );
    assert!(
        v.get("systemMessage").is_none(),
        "told once per session: {v}"
    );
    // A deny from a file that loaded still stands.
    let out = env.hook("PreToolUse", &bash(&root, "git stash"), &[]);
    assert_eq!(decision(&guarded_answer(&out)), Some("deny"));

    // Locally evaluated (no host can be started), the same answer.
    let down = env.cmd("capt-hookd").arg("shutdown").output().unwrap();
    assert!(down.status.success(), "{}", stderr(&down));
    std::fs::remove_file(env.bin.join("capt-hookd")).unwrap();
    let out = env.hook("PreToolUse", &bash(&root, "ls"), &[]);
    let v = guarded_answer(&out);
    assert_eq!(decision(&v), Some("ask"), "{v}");
    assert!(v.to_string().contains("broken.toml:3:"), "{v}");
}

// =============================================================================================
// Bounded resources and state that is never silently lost (issue 9): connection cap and
// shedding, stall timeouts, the frame memory budget, the worker cap, no-follow host files,
// private state and conservative fire counters. Real host, real workers, real socket.
// =============================================================================================

mod bounded {
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixStream;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::support::*;
    use capt_hook_proto::serde_json::Value;

    /// Lets this test process hold a thousand sockets.
    fn raise_fd_limit() {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let mut lim = getrlimit(Resource::Nofile);
        lim.current = lim.maximum;
        let _ = setrlimit(Resource::Nofile, lim);
    }

    fn host_pid(env: &Env) -> u32 {
        env.status().expect("host answers")["pid"].as_u64().unwrap() as u32
    }

    /// A field of `/proc/<pid>/status` in KiB (`VmRSS`, `VmHWM`).
    fn proc_kib(pid: u32, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
    }

    /// Events answered by the live worker of `root` (0 without one).
    fn served(env: &Env, root: &Path) -> u64 {
        let root = root.canonicalize().unwrap().display().to_string();
        env.status().map_or(0, |s| {
            s["workers"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|w| w["root"] == root.as_str())
                .map(|w| w["served"].as_u64().unwrap())
                .sum()
        })
    }

    /// Runs one guarded event and checks that the host (not the client's local fallback)
    /// answered it; returns how long the client took.
    fn event_answered_by_host(env: &Env, root: &Path) -> Duration {
        let before = served(env, root);
        let t = Instant::now();
        let out = env.hook(
            "PreToolUse",
            &bash(root, "git stash"),
            &[("CAPT_HOOK_CLIENT_TIMEOUT", "5")],
        );
        let took = t.elapsed();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(decision(&json_out(&out)), Some("deny"), "{}", stderr(&out));
        assert_eq!(
            served(env, root),
            before + 1,
            "the host did not serve the event"
        );
        took
    }

    fn socket(env: &Env) -> PathBuf {
        env.run_dir().join("capt-hookd.sock")
    }

    /// The stream was closed by the host: a read sees the end (or a reset).
    fn closed_by_host(s: &mut UnixStream) -> bool {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf) {
                Ok(0) => return true,
                // A refusal frame before the close is fine; keep reading to the end.
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }

    /// Sends the header of a 60 MiB frame and 59 MiB of its body, then holds the connection.
    fn hold_partial_frame(path: &Path, body: &[u8]) -> UnixStream {
        let mut s = UnixStream::connect(path).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut framed = (60u32 << 20).to_be_bytes().to_vec();
        framed.extend_from_slice(body);
        // Over the budget the host refuses and closes: the write then fails, as it should.
        let _ = s.write_all(&framed);
        s
    }

    /// 1,000 idle connections and 8 partial 60 MiB frames at once: events are still answered
    /// by the host, its memory stays bounded, the abusers are dropped after the stall timeout,
    /// and shutdown still works.
    #[test]
    fn idle_connections_and_partial_frames_neither_delay_events_nor_grow_the_host() {
        raise_fd_limit();
        let env = Env::new();
        let root = env.project("p", HOOKS);
        let warm = event_answered_by_host(&env, &root);
        let pid = host_pid(&env);
        let rss_idle = proc_kib(pid, "VmRSS");

        let path = socket(&env);
        let mut idle: Vec<UnixStream> = (0..1000)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        let body = Arc::new(vec![b' '; 59 << 20]);
        let mut partial: Vec<UnixStream> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let (path, body) = (&path, Arc::clone(&body));
                    s.spawn(move || hold_partial_frame(path, &body))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let rss_held = proc_kib(pid, "VmRSS");
        let latency = event_answered_by_host(&env, &root);
        let rss_after = proc_kib(pid, "VmRSS");
        let hwm = proc_kib(pid, "VmHWM");
        let status = env.status().unwrap();
        eprintln!(
            "MEASURE host RSS idle {rss_idle} KiB; with 1000 idle connections and 8 partial \
             60 MiB frames held: {rss_held} KiB, {rss_after} KiB after an event, peak {hwm} KiB; \
             event latency {latency:?} (warm, no load: {warm:?}); status: connections {}, \
             frame_bytes {}",
            status["connections"], status["frame_bytes"]
        );
        // The budget admits one maximal frame plus a reserve: far below 8 × 60 MiB.
        assert!(
            hwm < 200 * 1024,
            "host peaked at {hwm} KiB holding partial frames"
        );
        assert!(
            status["frame_bytes"].as_u64().unwrap() <= 100 << 20,
            "{status}"
        );

        // 1,100 idle connections: the cap sheds the oldest idle ones, the event gets through.
        // Connections younger than the shedding grace are never shed, so the first thousand
        // must be older than that first (on a fast machine the test gets here sooner).
        std::thread::sleep(capt_hookd::SHED_GRACE + std::time::Duration::from_millis(100));
        idle.extend((0..100).map(|_| UnixStream::connect(&path).unwrap()));
        let latency_1100 = event_answered_by_host(&env, &root);
        eprintln!("MEASURE event latency with 1100 idle connections: {latency_1100:?}");
        assert!(
            env.status().unwrap()["connections"].as_u64().unwrap() <= 1024,
            "the connection cap holds"
        );

        // Nothing more arrives: every abuser is dropped after the stall timeout.
        assert!(
            closed_by_host(&mut idle[999]),
            "an idle connection stayed open"
        );
        for s in &mut partial {
            assert!(closed_by_host(s), "a stalled partial frame stayed open");
        }
        // Only the status request itself is left: its connection and its small frame.
        env.wait_until("connections dropped", || {
            env.status().is_some_and(|s| {
                s["connections"] == 1 && s["frame_bytes"].as_u64().is_some_and(|b| b < 1024)
            })
        });
        // Shutdown works with connections held open (the accept loop never waits for a slot).
        let more: Vec<UnixStream> = (0..1100)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        let out = env.cmd("capt-hookd").arg("shutdown").output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(env.status().is_none(), "the host is gone");
        drop((idle, partial, more));
    }

    /// Every connection slot serving an event (1,024 events stuck on a hung worker): an event
    /// past the cap is refused as busy at once, status still answers through the control lane,
    /// and shutdown still works.
    #[test]
    fn a_saturated_host_still_answers_control_requests() {
        raise_fd_limit();
        let env = Env::with(&[
            ("CAPT_HOOKD_WORKER", Env::fake_worker()),
            ("FAKE_WORKER_MODE", "hang"),
        ]);
        let root = env.project("p", HOOKS);
        env.hook("Stop", &stop(&root), &[("CAPT_HOOK_CLIENT_TIMEOUT", "1")]);
        let path = socket(&env);
        let until = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
            + 20_000;
        let send_event = || {
            let mut s = UnixStream::connect(&path).unwrap();
            let mut req = super::event_request(&root);
            req.deadline_unix_ms = until;
            capt_hook_proto::write_frame(
                &mut s,
                &capt_hook_proto::encode(&capt_hook_proto::HostRequest::event(
                    std::process::id(),
                    req,
                )),
            )
            .unwrap();
            s
        };
        let mut stuck: Vec<UnixStream> = (0..1024).map(|_| send_event()).collect();
        // A host slowed down by other tests may shed a few events it had not read yet to let
        // the status requests in: top up until every slot is serving.
        let mut last = 0;
        env.wait_until("every slot serving", || {
            let in_flight = env.status().unwrap()["in_flight"].as_u64().unwrap();
            if in_flight < 1024 && in_flight == last {
                stuck.push(send_event());
            }
            last = in_flight;
            in_flight >= 1024
        });
        let status = env.status().expect("status answers on a saturated host");
        assert!(status["connections"].as_u64().unwrap() > 1024, "{status}");

        let mut late = send_event();
        let reply: capt_hook_proto::HostReply = capt_hook_proto::decode(
            &capt_hook_proto::read_frame(&mut late, capt_hook_proto::MAX_FRAME)
                .unwrap()
                .unwrap(),
        )
        .unwrap();
        assert!(
            matches!(
                reply,
                capt_hook_proto::HostReply::Refused {
                    code: capt_hook_proto::Refusal::Busy,
                    ..
                }
            ),
            "{reply:?}"
        );
        let out = env.cmd("capt-hookd").arg("shutdown").output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(env.status().is_none());
        drop(stuck);
    }

    /// A connection that sends half a header and stops is closed after the stall timeout, not
    /// held for the whole request period.
    #[test]
    fn a_stalled_header_is_closed() {
        let env = Env::new();
        let root = env.project("p", HOOKS);
        event_answered_by_host(&env, &root);
        let mut s = UnixStream::connect(socket(&env)).unwrap();
        s.write_all(&[0, 0]).unwrap();
        let t = Instant::now();
        assert!(closed_by_host(&mut s));
        eprintln!("MEASURE stalled header closed after {:?}", t.elapsed());
    }

    /// The worker processes whose parent is `host`.
    fn worker_processes(host: u32) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                    let Some(close) = stat.rfind(')') else {
                        return false;
                    };
                    let comm_is_worker = stat[..close].contains("capt-hook-worke");
                    let ppid = stat[close + 2..].split(' ').nth(1);
                    comm_is_worker && ppid == Some(&host.to_string()[..])
                })
            })
            .count()
    }

    fn worker_roots(env: &Env) -> Vec<String> {
        let mut roots: Vec<String> = env.status().unwrap()["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["root"].as_str().unwrap().to_owned())
            .collect();
        roots.sort();
        roots
    }

    /// At the cap a new root retires the least recently used idle worker, and many roots never
    /// make more workers than the cap.
    #[test]
    fn worker_cap_retires_the_least_recently_used() {
        let env = Env::with(&[("CAPT_HOOKD_MAX_WORKERS", "3")]);
        let roots: Vec<PathBuf> = (0..12)
            .map(|i| env.project(&format!("r{i:02}"), HOOKS))
            .collect();
        let canon = |i: usize| roots[i].canonicalize().unwrap().display().to_string();
        for i in [0, 1, 2, 0] {
            event_answered_by_host(&env, &roots[i]);
        }
        assert_eq!(worker_roots(&env), vec![canon(0), canon(1), canon(2)]);
        // r01 is now the least recently used.
        event_answered_by_host(&env, &roots[3]);
        assert_eq!(worker_roots(&env), vec![canon(0), canon(2), canon(3)]);

        let host = host_pid(&env);
        for root in &roots {
            event_answered_by_host(&env, root);
            assert!(worker_roots(&env).len() <= 3);
        }
        env.wait_until("retired workers reaped", || worker_processes(host) <= 3);
        eprintln!(
            "MEASURE 12 roots with CAPT_HOOKD_MAX_WORKERS=3: {} worker processes",
            worker_processes(host)
        );
    }

    /// At the cap with every worker busy, an event for another project is refused as busy at
    /// once (the client then evaluates it itself) instead of starting one worker too many.
    #[test]
    fn worker_cap_with_every_worker_busy_refuses_as_busy() {
        let env = Env::with(&[
            ("CAPT_HOOKD_WORKER", Env::fake_worker()),
            ("FAKE_WORKER_MODE", "hang"),
            ("CAPT_HOOKD_MAX_WORKERS", "1"),
        ]);
        let (a, b) = (env.project("a", HOOKS), env.project("b", HOOKS));
        let busy = env.spawn_hook("Stop", &stop(&a), &[("CAPT_HOOK_CLIENT_TIMEOUT", "20")]);
        env.wait_until("the one worker is busy", || {
            env.status()
                .is_some_and(|s| s["workers"][0]["outstanding"] == 1)
        });
        let mut s = UnixStream::connect(socket(&env)).unwrap();
        let req = capt_hook_proto::HostRequest::event(std::process::id(), super::event_request(&b));
        capt_hook_proto::write_frame(&mut s, &capt_hook_proto::encode(&req)).unwrap();
        let reply: capt_hook_proto::HostReply = capt_hook_proto::decode(
            &capt_hook_proto::read_frame(&mut s, capt_hook_proto::MAX_FRAME)
                .unwrap()
                .unwrap(),
        )
        .unwrap();
        match reply {
            capt_hook_proto::HostReply::Refused {
                code: capt_hook_proto::Refusal::Busy,
                reason,
            } => assert!(reason.contains("CAPT_HOOKD_MAX_WORKERS"), "{reason}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(env.worker_pids().len(), 1);
        let out = env
            .cmd("capt-hookd")
            .arg("restart-workers")
            .output()
            .unwrap();
        assert!(out.status.success());
        let _ = busy.wait_with_output();
    }

    /// A symlink planted where the host log goes is moved aside, not written through.
    #[test]
    fn symlinked_log_is_not_followed() {
        let env = Env::new();
        let root = env.project("p", HOOKS);
        let state = env.dir.path().join("home/.cache/captain-hook/host-v1");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        let victim = env.dir.path().join("victim.txt");
        std::fs::write(&victim, "precious\n").unwrap();
        let log = state.join("capt-hookd.log");
        std::os::unix::fs::symlink(&victim, &log).unwrap();

        event_answered_by_host(&env, &root);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        let meta = std::fs::symlink_metadata(&log).unwrap();
        assert!(
            meta.file_type().is_file(),
            "the log is a fresh regular file"
        );
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("moved it aside"), "{text}");
        let moved: Vec<_> = std::fs::read_dir(&state)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("capt-hookd.log.moved-")
            })
            .collect();
        assert_eq!(moved.len(), 1);
        assert!(moved[0].file_type().unwrap().is_symlink());
    }

    /// The host log has one place per user: the host state directory, whatever
    /// `CAPTAIN_HOOK_LOG_DIR` the client that started the host had (that directory is the
    /// session's, for its workers' logs).
    #[test]
    fn the_host_log_stays_in_the_host_state_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let session_logs = tmp.path().join("logs");
        let env = Env::with(&[("CAPTAIN_HOOK_LOG_DIR", session_logs.to_str().unwrap())]);
        let root = env.project("p", HOOKS);
        event_answered_by_host(&env, &root);
        let log = env
            .dir
            .path()
            .join("home/.cache/captain-hook/host-v1/capt-hookd.log");
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("worker started"), "{text}");
        assert!(!session_logs.join("capt-hookd.log").exists());
    }

    const NUDGE: &str = r#"
[[hook]]
kind = "nudge"
name = "tests"
message = "consider running the tests"
"#;

    fn nudged(out: &std::process::Output) -> bool {
        String::from_utf8_lossy(&out.stdout).contains("consider running the tests")
    }

    fn find(dir: &Path, name: &str, found: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                find(&p, name, found);
            } else if e.file_name().to_string_lossy().starts_with(name) {
                found.push(p);
            }
        }
    }

    /// A nudge (max_fires 1) fires once; a corrupted counter does not make it fire again, the
    /// corrupt file is kept as `.bak`, and the state the worker creates is private.
    #[test]
    fn corrupt_counter_keeps_max_fires_and_state_is_private() {
        let env = Env::new();
        let root = env.project("p", NUDGE);
        let payload = bash(&root, "ls");
        let first = env.hook("PreToolUse", &payload, &[]);
        assert!(nudged(&first), "{}", String::from_utf8_lossy(&first.stdout));
        assert!(!nudged(&env.hook("PreToolUse", &payload, &[])));

        let state = env.dir.path().join("home/.claude/state");
        let mut counters = Vec::new();
        find(&state, "hook_state.json", &mut counters);
        counters.retain(|p| p.extension().is_some_and(|e| e == "json"));
        assert_eq!(counters.len(), 1, "{counters:?}");
        std::fs::write(&counters[0], "{\"fire_count\": 0,,,").unwrap();

        let third = env.hook("PreToolUse", &payload, &[]);
        assert_eq!(third.status.code(), Some(0));
        assert!(
            !nudged(&third),
            "a corrupt counter let the nudge fire twice"
        );
        let mut baks = Vec::new();
        find(&state, "hook_state.json.bak.", &mut baks);
        assert_eq!(baks.len(), 1);
        assert_eq!(
            std::fs::read_to_string(&baks[0]).unwrap(),
            "{\"fire_count\": 0,,,"
        );

        // Every directory and file the worker created under the state root is private.
        let mut dir = counters[0].parent().unwrap();
        while dir != state {
            let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", dir.display());
            dir = dir.parent().unwrap();
        }
        let mode = std::fs::metadata(&counters[0])
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let v: Value =
            capt_hook_proto::serde_json::from_str(&std::fs::read_to_string(&counters[0]).unwrap())
                .unwrap();
        assert_eq!(v["fire_count"], 1, "the counter was rebuilt as spent");
    }
}

/// LLM hooks' judge calls reach the operator surface: each event's log line carries its judge
/// calls (latency, cost, failure), `capt-hook logs --judge` shows every call and the failure
/// record (argv, exit code, stderr tail), and each call is a row of the ledger tied to the
/// decision it led to. The judges are fake CLIs run by the real worker.
#[test]
fn judge_calls_and_failures_reach_logs_and_decisions() {
    let env = Env::new();
    let root = env.project(
        "judged",
        r#"
[[hook]]
kind = "llm_gate"
label = "closing"
prompt = "Did the agent stop early?"
message = "Keep going: {reasoning}"
backend = "claude"
agent = false

[[hook]]
kind = "llm_gate"
label = "pushes"
events = "PreToolUse"
only_if = [{ runs = ["git", "push"] }]
prompt = "Is this push risky?"
message = "Risky push."
backend = "command"
on_incomplete = "The push check could not run; try again."
"#,
    );
    std::fs::write(
        root.join(".claude/hooks/config.toml"),
        "[packs]\ndisable = [\"general\", \"fixes\", \"performance\"]\n",
    )
    .unwrap();
    let fake = |name: &str, body: &str| {
        let path = env.dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\ncat > /dev/null\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    };
    let claude = fake(
        "fake-claude",
        r#"echo '{"type":"result","is_error":false,"structured_output":{"block":true,"reasoning":"tests not run"},"total_cost_usd":0.0042}'"#,
    );
    let broken = fake("broken-judge", "echo 'auth expired' >&2; exit 3");
    let vars = [
        ("CAPT_HOOK_CLAUDE_BIN", claude.as_str()),
        ("CAPT_HOOK_LLM_COMMAND", broken.as_str()),
    ];
    let out = env.hook("Stop", &stop(&root), &vars);
    assert_eq!(json_out(&out)["decision"], "block", "{}", stderr(&out));
    let out = env.hook("PreToolUse", &bash(&root, "git push"), &vars);
    assert_eq!(decision(&json_out(&out)), Some("deny"), "{}", stderr(&out));

    let json_lines = |args: &[&str]| -> Vec<Value> {
        let out = env.capt_hook(args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| capt_hook_proto::serde_json::from_str(l).unwrap())
            .collect()
    };
    env.wait_until("two log lines", || {
        json_lines(&["logs", "--session", "e2e", "--json"]).len() == 2
    });
    let lines = json_lines(&["logs", "--session", "e2e", "--json"]);
    let judged = &lines[0]["judge"][0];
    assert_eq!(judged["backend"], "claude", "{}", lines[0]);
    assert_eq!(judged["model"], "haiku");
    assert_eq!(judged["cost_usd"], 0.0042);
    assert!(judged["latency_ms"].as_u64().is_some());
    let failed = &lines[1]["judge"][0];
    assert_eq!(failed["ok"], false, "{}", lines[1]);
    assert!(
        failed["error"].as_str().unwrap().contains("exit"),
        "{failed}"
    );
    let text =
        String::from_utf8_lossy(&env.capt_hook(&["logs", "--session", "e2e"]).stdout).into_owned();
    assert!(
        text.contains("claude/haiku") && text.contains("$0.0042"),
        "{text}"
    );
    assert!(text.contains("FAILED after"), "{text}");

    // Every call and the failure's record, across sessions.
    let records = json_lines(&["logs", "--judge", "--json"]);
    assert_eq!(records.len(), 3, "{records:?}");
    let failure = records.iter().find(|r| r["record"] == "failure").unwrap();
    assert_eq!(failure["exit_code"], 3);
    assert_eq!(failure["session"], "e2e");
    assert!(
        failure["stderr_tail"]
            .as_str()
            .unwrap()
            .contains("auth expired")
    );
    assert!(
        failure["argv"].to_string().contains("broken-judge"),
        "{failure}"
    );
    let text = String::from_utf8_lossy(&env.capt_hook(&["logs", "--judge"]).stdout).into_owned();
    assert!(
        text.contains("judge FAILURE") && text.contains("auth expired"),
        "{text}"
    );
    assert!(json_lines(&["logs", "--judge", "--json", "--session", "other"]).is_empty());

    // The ledger: each decision row carries the calls behind it; all calls list on their own.
    env.wait_until("two decisions", || {
        json_lines(&["decisions", "--json"]).len() == 2
    });
    let rows = json_lines(&["decisions", "--json"]);
    assert_eq!(rows[0]["event"], "Stop");
    assert_eq!(rows[0]["judge"][0]["cost_usd"], 0.0042, "{}", rows[0]);
    assert_eq!(rows[1]["judge"][0]["ok"], false, "{}", rows[1]);
    let calls = json_lines(&["decisions", "--judge", "--json"]);
    assert_eq!(calls.len(), 2, "{calls:?}");
    let table = String::from_utf8_lossy(&env.capt_hook(&["decisions"]).stdout).into_owned();
    assert!(table.contains("(judge claude/haiku"), "{table}");
}

/// The journal: every event the host answers gets a line in its session's log, and every
/// verdict a hook delivered a row in the decision ledger, both written after the reply;
/// `capt-hook logs` and `capt-hook decisions` show them.
#[test]
fn logs_and_decisions_show_what_the_host_answered() {
    let env = Env::new();
    let root = env.project("journal", HOOKS);
    // The project's own verdicts only: the builtin stash guard would deliver a second one.
    std::fs::write(
        root.join(".claude/hooks/config.toml"),
        "[packs]\ndisable = [\"general\"]\n",
    )
    .unwrap();
    let out = env.hook("PreToolUse", &bash(&root, "git stash pop"), &[]);
    assert_eq!(decision(&json_out(&out)), Some("deny"), "{}", stderr(&out));
    let out = env.hook("PreToolUse", &bash(&root, "ls -la"), &[]);
    assert_eq!(json_out(&out), Value::Null);
    let out = env.hook("Stop", &stop(&root), &[]);
    assert_eq!(json_out(&out)["decision"], "block");

    let json_lines = |args: &[&str]| -> Vec<Value> {
        let out = env.capt_hook(args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| capt_hook_proto::serde_json::from_str(l).unwrap())
            .collect()
    };
    env.wait_until("three log lines", || {
        json_lines(&["logs", "--session", "e2e", "--json"]).len() == 3
    });
    let lines = json_lines(&["logs", "--session", "e2e", "--json"]);
    assert_eq!(lines[0]["event"], "PreToolUse");
    assert_eq!(lines[0]["subject"], "git stash pop");
    assert_eq!(lines[0]["verdict"], "block");
    assert_eq!(lines[0]["fired"][0]["action"], "block");
    assert_eq!(lines[1]["subject"], "ls -la");
    assert!(lines[1].get("verdict").is_none(), "{}", lines[1]);
    assert_eq!(lines[2]["event"], "Stop");
    assert!(lines.iter().all(|l| l["elapsed_ms"].as_f64().is_some()));

    // People get one readable line per event; the newest session is the default.
    let human = env.capt_hook(&["logs"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("PreToolUse Bash \"git stash pop\" -> block"),
        "{text}"
    );
    let tail = env.capt_hook(&["logs", "--tail", "1"]);
    assert!(String::from_utf8_lossy(&tail.stdout).starts_with(|c: char| c.is_ascii_digit()));
    assert_eq!(String::from_utf8_lossy(&tail.stdout).lines().count(), 1);
    let none = env.capt_hook(&["logs", "--session", "no-such-session"]);
    assert_eq!(none.status.code(), Some(0));
    assert!(
        stderr(&none).contains("No log file at"),
        "{}",
        stderr(&none)
    );

    // Two verdicts were delivered (the deny and the Stop block); the quiet `ls` left no row.
    let rows = json_lines(&["decisions", "--json"]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["event"], "PreToolUse");
    assert_eq!(rows[0]["action"], "block");
    assert_eq!(rows[0]["tool_name"], "Bash");
    assert_eq!(rows[0]["event_uuid"], "toolu_1");
    assert!(
        rows[0]["source_file"]
            .as_str()
            .unwrap()
            .contains("hooks.toml")
    );
    assert_eq!(rows[1]["event"], "Stop");
    let stop_action = rows[1]["action"].as_str().unwrap().to_owned();
    let stash_hook = rows[0]["hook"].as_str().unwrap().to_owned();
    assert_eq!(
        json_lines(&["decisions", "--json", "--hook", &stash_hook]).len(),
        1
    );
    let blocks = json_lines(&[
        "decisions",
        "--json",
        "--session",
        "e2e",
        "--action",
        "block",
    ]);
    assert_eq!(
        blocks.len(),
        1 + usize::from(stop_action == "block"),
        "{blocks:?}"
    );
    assert_eq!(
        json_lines(&["decisions", "--json", "--event", "Stop"]).len(),
        1
    );
    assert_eq!(
        json_lines(&["decisions", "--json", "--since", "1h"]).len(),
        2
    );
    assert!(json_lines(&["decisions", "--json", "--until", "2000-01-01"]).is_empty());
    assert!(json_lines(&["decisions", "--json", "--session", "other"]).is_empty());
    let table = env.capt_hook(&["decisions", "--session", "e2e"]);
    assert!(
        String::from_utf8_lossy(&table.stdout).contains(&stash_hook),
        "{}",
        String::from_utf8_lossy(&table.stdout)
    );
    let bad = env.capt_hook(&["decisions", "--since", "yesterday"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("--since"), "{}", stderr(&bad));

    // A project in the temp dir gets no warm worker: it is retired (SIGTERM) right after its
    // answer, and writes its journal before going.
    let scratch = env.host_tmp().join("scratch");
    write_hooks(&scratch, HOOKS);
    let payload = capt_hook_proto::serde_json::json!({
        "session_id": "scratch", "cwd": scratch, "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "git stash"}, "tool_use_id": "toolu_s",
    });
    let out = env.hook("PreToolUse", payload.to_string().as_bytes(), &[]);
    assert_eq!(decision(&json_out(&out)), Some("deny"));
    env.wait_until("the retired worker's log line", || {
        json_lines(&["logs", "--session", "scratch", "--json"]).len() == 1
    });
    // Its own deny and the builtin stash guard's (packs are on in this project).
    env.wait_until("the retired worker's decisions", || {
        json_lines(&["decisions", "--json", "--session", "scratch"]).len() == 2
    });

    // The ledger locked for longer than a retired worker has: its rows wait in its spool, and
    // the next writer (here, the next temp-dir worker) commits them once the lock is gone.
    let db = env.dir.path().join("home/.claude/state/hooks/decisions.db");
    let blocker = rusqlite::Connection::open(&db).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let stash_in = |session: &str| {
        capt_hook_proto::serde_json::json!({
            "session_id": session, "cwd": scratch, "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "git stash"}, "tool_use_id": "toolu_l",
        })
        .to_string()
    };
    let out = env.hook("PreToolUse", stash_in("locked").as_bytes(), &[]);
    assert_eq!(decision(&json_out(&out)), Some("deny"));
    let host = env.status().unwrap()["pid"].as_u64().unwrap();
    let workers_of_host = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                    stat.rfind(')').is_some_and(|close| {
                        stat[..close].contains("capt-hook-worke")
                            && stat[close + 2..].split(' ').nth(1) == Some(&host.to_string()[..])
                    })
                })
            })
            .count()
    };
    // Only the journal project's warm worker is left: the temp-dir one ended, lock or not.
    env.wait_until("the retired worker's exit", || workers_of_host() == 1);
    assert!(json_lines(&["decisions", "--json", "--session", "locked"]).is_empty());
    blocker.execute_batch("COMMIT").unwrap();
    drop(blocker);
    let out = env.hook("PreToolUse", stash_in("after-lock").as_bytes(), &[]);
    assert_eq!(decision(&json_out(&out)), Some("deny"));
    env.wait_until("the spooled decisions", || {
        json_lines(&["decisions", "--json", "--session", "locked"]).len() == 2
    });

    // --follow prints lines as the worker writes them.
    let mut follow = env
        .cmd("capt-hook")
        .args(["logs", "--session", "e2e", "--follow", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = std::io::BufReader::new(follow.stdout.take().unwrap());
    let mut seen = Vec::new();
    for _ in 0..3 {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
        seen.push(line);
    }
    env.hook("PreToolUse", &bash(&root, "echo followed"), &[]);
    let mut line = String::new();
    std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
    let _ = follow.kill();
    let _ = follow.wait();
    assert!(line.contains("echo followed"), "{line:?}");
}

/// A stand-in for Claude Code: a shell that runs `hook` for the test (so the host sees it as
/// the session's agent) and starts busy children, driven line by line over its stdin.
struct Agent {
    child: std::process::Child,
    lines: std::io::BufReader<std::process::ChildStdout>,
    dir: std::path::PathBuf,
    n: usize,
}

impl Agent {
    const SCRIPT: &str = r#"
while read cmd a b; do
  case $cmd in
    hook) "$HOOK" run PreToolUse < "$a" > "$b" 2>&1; echo done ;;
    busy) sh -c 'while :; do :; done' & echo $! ;;
  esac
done
"#;

    fn start(env: &Env, name: &str) -> Agent {
        let dir = env.dir.path().join(format!("agent-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = env
            .program("sh")
            .args(["-c", Agent::SCRIPT])
            .env("HOOK", env.bin.join("hook"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let lines = std::io::BufReader::new(child.stdout.take().unwrap());
        Agent {
            child,
            lines,
            dir,
            n: 0,
        }
    }

    fn say(&mut self, line: &str) -> String {
        use std::io::{BufRead, Write};
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        self.lines.read_line(&mut answer).unwrap();
        answer.trim().to_owned()
    }

    /// Runs one PreToolUse event through `hook` as the agent's child; its output.
    fn hook(&mut self, payload: &[u8]) -> String {
        self.n += 1;
        let input = self.dir.join(format!("in{}", self.n));
        let output = self.dir.join(format!("out{}", self.n));
        std::fs::write(&input, payload).unwrap();
        assert_eq!(
            self.say(&format!("hook {} {}", input.display(), output.display())),
            "done"
        );
        std::fs::read_to_string(&output).unwrap()
    }

    /// Starts a child that spins on one core until killed; its pid.
    fn busy(&mut self) -> u32 {
        self.say("busy").parse().unwrap()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// ResourcePressure end to end: a child of the session's agent that stays busy past the window
/// makes the host send ResourcePressure to the session's worker, whose hook warns; the warning
/// arrives on the session's next tool event, once. A short burst fires nothing.
#[test]
fn resource_pressure_fires_for_a_busy_child_and_not_for_a_burst() {
    let env = Env::with(&[
        ("CAPT_HOOKD_PRESSURE_SAMPLE_MS", "200"),
        ("CAPT_HOOKD_PRESSURE_SECS", "1.5"),
        // Low, so a loaded test machine (two cores, many tests) cannot starve the busy child
        // below it; a burst shorter than the window stays quiet at any threshold.
        ("CAPT_HOOKD_PRESSURE_CPU", "5"),
    ]);
    let root = env.project(
        "pressure",
        "[[hook]]\nkind = \"hook\"\nevents = \"ResourcePressure\"\nmessage = \"a process of this session is running away\"\n",
    );
    let payload = |session: &str, command: &str| {
        capt_hook_proto::serde_json::json!({
            "session_id": session, "transcript_path": "/dev/null", "cwd": root,
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_use_id": "toolu_p",
        })
        .to_string()
        .into_bytes()
    };
    let session_events = |session: &str| -> Vec<String> {
        let out = env.capt_hook(&["logs", "--session", session, "--json"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let v: Value = capt_hook_proto::serde_json::from_str(l).unwrap();
                v["event"].as_str().unwrap_or("").to_owned()
            })
            .collect()
    };

    // A burst shorter than the window: nothing fires.
    let mut calm = Agent::start(&env, "calm");
    assert_eq!(calm.hook(&payload("calm", "ls")).trim(), "");
    let burst = calm.busy();
    std::thread::sleep(std::time::Duration::from_millis(600));
    signal(burst, Signal::KILL);
    std::thread::sleep(std::time::Duration::from_secs(3));
    let out = calm.hook(&payload("calm", "ls"));
    assert!(!out.contains("running away"), "{out}");
    assert!(
        !session_events("calm")
            .iter()
            .any(|e| e == "ResourcePressure"),
        "{:?}",
        session_events("calm")
    );

    // A child that keeps spinning: the host sends ResourcePressure and the hook warns.
    let mut agent = Agent::start(&env, "busy");
    assert_eq!(agent.hook(&payload("busy", "make")).trim(), "");
    let spinner = agent.busy();
    env.wait_until("ResourcePressure reached the session's worker", || {
        session_events("busy")
            .iter()
            .any(|e| e == "ResourcePressure")
    });
    signal(spinner, Signal::KILL);
    // The worker that took the notice is retired before the session's next tool event: the
    // notice waits in the session's state, and the fresh worker delivers it.
    let pid_of_worker = || env.status().unwrap()["workers"][0]["pid"].as_u64();
    let took_it = pid_of_worker().expect("the session's worker");
    let restart = env
        .cmd("capt-hookd")
        .arg("restart-workers")
        .output()
        .unwrap();
    assert!(restart.status.success(), "{}", stderr(&restart));
    assert!(
        env.status().unwrap()["workers"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let out = agent.hook(&payload("busy", "ls"));
    assert_ne!(pid_of_worker(), Some(took_it), "a new worker answered");
    let v: Value =
        capt_hook_proto::serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let notice = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        notice.contains("a process of this session is running away"),
        "{v}"
    );
    assert!(notice.contains(&format!("pid {spinner}")), "{v}");
    assert!(notice.contains("% CPU"), "{v}");
    assert!(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(|c| c.contains("running away")),
        "the agent is told too: {v}"
    );
    // Delivered once.
    let again = agent.hook(&payload("busy", "ls"));
    assert!(!again.contains("running away"), "{again}");
    // The worker that just found no notice for the session is not asked to look again until
    // the host has evaluated another ResourcePressure event; then it looks, without a restart.
    let pressures = || {
        session_events("busy")
            .iter()
            .filter(|e| *e == "ResourcePressure")
            .count()
    };
    let seen = pressures();
    let same_worker = pid_of_worker();
    let spinner = agent.busy();
    env.wait_until("a second ResourcePressure", || pressures() > seen);
    signal(spinner, Signal::KILL);
    let out = agent.hook(&payload("busy", "ls"));
    assert_eq!(pid_of_worker(), same_worker, "the same worker answered");
    assert!(out.contains(&format!("pid {spinner}")), "{out}");
    // The ResourcePressure line names the hook that warned.
    let log = env.capt_hook(&["logs", "--session", "busy"]);
    assert!(
        String::from_utf8_lossy(&log.stdout).contains("ResourcePressure -> warn"),
        "{}",
        String::from_utf8_lossy(&log.stdout)
    );
}

/// With no project hooks at all, the builtin performance pack answers ResourcePressure: a
/// child of the session's agent that keeps a core busy is reported on the next tool call.
#[test]
fn the_performance_pack_warns_of_a_runaway_child_with_no_project_hooks() {
    let env = Env::with(&[
        ("CAPT_HOOKD_PRESSURE_SAMPLE_MS", "200"),
        ("CAPT_HOOKD_PRESSURE_SECS", "1.5"),
        // Low, so a loaded test machine cannot starve the busy child below it.
        ("CAPT_HOOKD_PRESSURE_CPU", "5"),
    ]);
    let root = env.dir.path().join("projects").join("bare");
    std::fs::create_dir_all(&root).unwrap();
    assert!(!root.join(".claude").exists(), "the project has no hooks");
    let payload = |command: &str| {
        capt_hook_proto::serde_json::json!({
            "session_id": "bare", "transcript_path": "/dev/null", "cwd": root,
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_use_id": "toolu_b",
        })
        .to_string()
        .into_bytes()
    };
    let pressed = || {
        let out = env.capt_hook(&["logs", "--session", "bare", "--json"]);
        String::from_utf8_lossy(&out.stdout).lines().any(|l| {
            capt_hook_proto::serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["event"] == "ResourcePressure")
        })
    };
    let mut agent = Agent::start(&env, "bare");
    assert_eq!(agent.hook(&payload("ls")).trim(), "");
    let spinner = agent.busy();
    env.wait_until("ResourcePressure reached the session's worker", pressed);
    signal(spinner, Signal::KILL);
    let out = agent.hook(&payload("ls"));
    let v: Value =
        capt_hook_proto::serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let notice = v["systemMessage"].as_str().unwrap_or_default();
    assert!(notice.contains("stop it by its pid"), "{v}");
    assert!(notice.contains(&format!("pid {spinner}")), "{v}");
    // The ResourcePressure line names the pack hook that warned.
    let log = env.capt_hook(&["logs", "--session", "bare"]);
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("ResourcePressure -> warn"), "{log}");
}

/// With no project hooks, the performance pack goes on past the warning: a child that keeps
/// pressing through the judge stage, rated disposable by the project's judge (a command judge
/// here), gets SIGTERM, and the next tool call says so.
#[test]
fn the_performance_pack_stops_a_runaway_child_its_judge_rates_disposable() {
    let env0 = tempfile::tempdir().unwrap();
    let judge = env0.path().join("judge");
    std::fs::write(
        &judge,
        "#!/bin/sh\ncat > /dev/null\necho '{\"disposable\": true, \"reasoning\": \"a busy loop nobody waits for\"}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&judge, std::fs::Permissions::from_mode(0o755)).unwrap();
    let judge = judge.display().to_string();
    let env = Env::with(&[
        ("CAPT_HOOKD_PRESSURE_SAMPLE_MS", "200"),
        ("CAPT_HOOKD_PRESSURE_SECS", "1.5"),
        ("CAPT_HOOKD_PRESSURE_CPU", "5"),
        ("CAPT_HOOK_LLM_BACKEND", "command"),
        ("CAPT_HOOK_LLM_COMMAND", judge.as_str()),
    ]);
    let root = env.dir.path().join("projects").join("runaway");
    std::fs::create_dir_all(&root).unwrap();
    let payload = |command: &str| {
        capt_hook_proto::serde_json::json!({
            "session_id": "runaway", "transcript_path": "/dev/null", "cwd": root,
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_use_id": "toolu_r",
        })
        .to_string()
        .into_bytes()
    };
    let mut agent = Agent::start(&env, "runaway");
    assert_eq!(agent.hook(&payload("ls")).trim(), "");
    let spinner = agent.busy();
    // Stopped: gone, or a zombie its shell has not reaped yet.
    let running = || {
        std::fs::read_to_string(format!("/proc/{spinner}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
    };
    env.wait_until("the runaway child was stopped", || !running());
    let mut notices = String::new();
    env.wait_until("the next tool call says the child was stopped", || {
        let out = agent.hook(&payload("ls"));
        if let Ok(v) = capt_hook_proto::serde_json::from_str::<Value>(out.trim()) {
            notices.push_str(v["systemMessage"].as_str().unwrap_or_default());
        }
        notices.contains("SIGTERM")
    });
    assert!(notices.contains(&format!("pid {spinner}")), "{notices}");
    assert!(
        notices.contains("a busy loop nobody waits for"),
        "{notices}"
    );
}

/// A release server on localhost: serves the files of a release directory (as `cargo xtask
/// release` writes it) and counts the checks (requests for `SHA256SUMS`).
struct ReleaseServer {
    port: u16,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    _dir: tempfile::TempDir,
}

impl ReleaseServer {
    /// A release of `version` signed with the repository's test key; `alter` changes the
    /// manifest after signing.
    fn start(version: &str, alter: bool) -> ReleaseServer {
        use std::io::{BufRead, Write};
        let dir = tempfile::tempdir().unwrap();
        let key =
            capt_hook_sign::SigningKey::from_file(&fixtures().join("release-key/test.key"), None)
                .unwrap();
        let manifest = format!("{{\"name\":\"captain-hook\",\"version\":\"{version}\"}}\n");
        let sums = capt_hook_sign::sums([("manifest.json", manifest.as_bytes())]);
        let signature = key.sign(sums.as_bytes(), "e2e release").unwrap();
        let served = if alter {
            manifest.replace(version, "99.9.9")
        } else {
            manifest
        };
        std::fs::write(dir.path().join("manifest.json"), served).unwrap();
        std::fs::write(dir.path().join("SHA256SUMS"), &sums).unwrap();
        std::fs::write(dir.path().join("SHA256SUMS.minisig"), signature).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&hits);
        let root = dir.path().to_path_buf();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                let _ = reader.read_line(&mut request);
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) <= 2 {
                        break;
                    }
                }
                let path = request.split(' ').nth(1).unwrap_or("");
                let name = path.strip_prefix("/release/").unwrap_or("");
                if name == "SHA256SUMS" {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                let body = if name.contains('/') {
                    None
                } else {
                    std::fs::read(root.join(name)).ok()
                };
                let _ = match body {
                    Some(body) => write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .and_then(|()| stream.write_all(&body)),
                    None => write!(
                        stream,
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    ),
                };
            }
        });
        ReleaseServer {
            port,
            hits,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/release", self.port)
    }

    fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The trusted release key, as `CAPT_HOOK_RELEASE_PUBKEY` names it.
fn release_pubkey() -> String {
    fixtures()
        .join("release-key/test.pub")
        .display()
        .to_string()
}

/// A user whose host checks `server`'s release with the trusted test key, with `more` variables.
fn release_env(server: &ReleaseServer, more: &[(&str, &str)]) -> Env {
    let (url, key) = (server.url(), release_pubkey());
    let mut vars = vec![
        ("CAPT_HOOK_UPDATE_URL", url.as_str()),
        ("CAPT_HOOK_RELEASE_PUBKEY", key.as_str()),
    ];
    vars.extend_from_slice(more);
    Env::with(&vars)
}

/// The release check: after a SessionStart the host reads the signed release once per
/// interval, detached, and verifies it with the trusted key; a newer release is told once, on a
/// later SessionStart, beside what the hooks said, naming the command that upgrades.
/// `HOOKS_UPDATE_ENABLED=false` turns it off, and so do Claude Code's
/// `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` and `DISABLE_AUTOUPDATER`.
#[test]
fn update_check_after_session_start_tells_of_a_newer_release_once() {
    let server = ReleaseServer::start("99.0.0", false);
    let (url, key) = (server.url(), release_pubkey());
    let env = release_env(&server, &[]);
    let root = env.project(
        "update",
        "[[hook]]\nkind = \"hook\"\nevents = \"SessionStart\"\nmessage = \"session context\"\n",
    );
    let start = |vars: &[(&str, &str)]| {
        let payload = capt_hook_proto::serde_json::json!({
            "session_id": "u", "cwd": root, "hook_event_name": "SessionStart", "source": "startup",
        });
        let out = env.hook("SessionStart", payload.to_string().as_bytes(), vars);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        json_out(&out)
    };
    let record = env
        .dir
        .path()
        .join("home/.cache/captain-hook/host-v1/update.json");

    let first = start(&[]);
    // The general pack's deferred-tools nudge follows the project's context on a first start.
    let context = first["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(context.starts_with("session context"), "{first}");
    assert!(!first.to_string().contains("99.0.0"), "{first}");
    env.wait_until("the release check ran", || {
        server.hits() == 1
            && std::fs::read_to_string(&record).is_ok_and(|r| r.contains("\"latest\":\"99.0.0\""))
    });

    let second = start(&[]);
    let notice = second["systemMessage"].as_str().unwrap_or_default();
    assert!(
        notice.contains("captain-hook 99.0.0 is available"),
        "{second}"
    );
    let installed = env
        .dir
        .path()
        .join("home/.local/share/captain-hook/install.sh");
    assert!(
        notice.contains(&format!("sh {} --pubkey {key} {url}", installed.display())),
        "the notice names the command that upgrades: {second}"
    );
    assert_eq!(
        second["hookSpecificOutput"]["additionalContext"], "session context",
        "the hooks' answer is untouched"
    );
    // The host records who was told off its serving thread, so a new host does not tell again.
    env.wait_until("the record says the release was told", || {
        std::fs::read_to_string(&record).is_ok_and(|r| r.contains("\"notified\":\"99.0.0\""))
    });
    let third = start(&[]);
    assert!(!third.to_string().contains("99.0.0"), "told once: {third}");
    let version = env.cmd("capt-hookd").arg("version").output().unwrap();
    let v: Value = capt_hook_proto::serde_json::from_slice(&version.stdout).unwrap();
    assert_eq!(v["update_available"], "99.0.0", "{v}");
    assert_eq!(server.hits(), 1, "at most once per interval");

    // Off: no request, even with no interval to wait. The enabled start after it is the only
    // one the server sees.
    let quiet = ReleaseServer::start("99.0.0", false);
    let off = release_env(&quiet, &[("HOOKS_UPDATE_INTERVAL_MINUTES", "0")]);
    let root = off.project("update-off", HOOKS);
    let payload = capt_hook_proto::serde_json::json!({
        "session_id": "u", "cwd": root, "hook_event_name": "SessionStart", "source": "startup",
    })
    .to_string();
    // Off by our switch, and by each of Claude Code's (any value, `0` included, as Claude
    // Code reads them).
    for vars in [
        [("HOOKS_UPDATE_ENABLED", "false")],
        [("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")],
        [("DISABLE_AUTOUPDATER", "0")],
    ] {
        let out = off.hook("SessionStart", payload.as_bytes(), &vars);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let out = off.hook("SessionStart", payload.as_bytes(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    off.wait_until("the enabled start checked", || quiet.hits() >= 1);
    let _ = off.cmd("capt-hookd").arg("shutdown").output();
    assert_eq!(quiet.hits(), 1, "a start with the check off made a request");
}

/// A release whose manifest was changed after signing is never trusted: no newer version is
/// recorded, the next session is told the check refused it (naming the file), and
/// `capt-hookd version` reports it. Without a trusted key the host makes no request at all.
#[test]
fn an_altered_release_is_reported_never_trusted() {
    let server = ReleaseServer::start("99.0.0", true);
    let env = release_env(&server, &[]);
    let root = env.project("update-altered", HOOKS);
    let payload = capt_hook_proto::serde_json::json!({
        "session_id": "u", "cwd": root, "hook_event_name": "SessionStart", "source": "startup",
    })
    .to_string();
    let record = env
        .dir
        .path()
        .join("home/.cache/captain-hook/host-v1/update.json");
    let out = env.hook("SessionStart", payload.as_bytes(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    env.wait_until("the release check refused the release", || {
        std::fs::read_to_string(&record).is_ok_and(|r| r.contains("\"refused\""))
    });
    let out = env.hook("SessionStart", payload.as_bytes(), &[]);
    let told = json_out(&out);
    let notice = told["systemMessage"].as_str().unwrap_or_default();
    assert!(
        notice.contains("did not trust") && notice.contains("/release/manifest.json was changed"),
        "{told}"
    );
    assert!(!notice.contains("99.9.9 is available"), "{told}");
    let version = env.cmd("capt-hookd").arg("version").output().unwrap();
    let v: Value = capt_hook_proto::serde_json::from_slice(&version.stdout).unwrap();
    assert!(v.get("update_available").is_none(), "{v}");
    assert!(
        v["update_refused"]
            .as_str()
            .is_some_and(|r| r.contains("was changed")),
        "{v}"
    );
    let _ = env.cmd("capt-hookd").arg("shutdown").output();

    // No trusted key (none set, none installed): no request.
    let keyless = ReleaseServer::start("99.0.0", false);
    let keyless_url = keyless.url();
    let env = Env::with(&[("CAPT_HOOK_UPDATE_URL", keyless_url.as_str())]);
    let root = env.project("update-keyless", HOOKS);
    let payload = capt_hook_proto::serde_json::json!({
        "session_id": "u", "cwd": root, "hook_event_name": "SessionStart", "source": "startup",
    })
    .to_string();
    let record = env
        .dir
        .path()
        .join("home/.cache/captain-hook/host-v1/update.json");
    let out = env.hook("SessionStart", payload.as_bytes(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    env.wait_until("the check gave up for want of a key", || {
        std::fs::read_to_string(&record).is_ok_and(|r| r.contains("no trusted release key"))
    });
    let _ = env.cmd("capt-hookd").arg("shutdown").output();
    assert_eq!(
        keyless.hits(),
        0,
        "a check without a trusted key made a request"
    );
}

/// The whole host, workers included, makes no network request in a session run with Claude
/// Code's `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`: every `socket` and `connect` of the host's
/// process tree
/// is traced (strace) through a session's events, and none reaches an internet address. The
/// same host without the variable, and a release to check, does connect (to the loopback
/// release server), so the trace would see a request if one were made. Needs strace: behind the
/// `host-audit` feature, which CI turns on.
#[cfg(feature = "host-audit")]
#[test]
fn no_network_request_with_nonessential_traffic_off() {
    use std::io::BufRead;
    let server = ReleaseServer::start("99.0.0", false);
    let url = server.url();
    let env = release_env(&server, &[("HOOKS_UPDATE_INTERVAL_MINUTES", "0")]);
    let root = env.project("quiet", HOOKS);
    let event = |name: &str, extra: Value| {
        let mut v = capt_hook_proto::serde_json::json!({
            "session_id": "quiet", "cwd": root, "hook_event_name": name,
            "transcript_path": root.join("t.jsonl"),
        });
        if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
            v.extend(extra);
        }
        v.to_string()
    };
    // Runs a traced host through `events` (with `vars` on each), then stops it: the trace.
    let traced = |tag: &str, vars: &[(&str, &str)], events: &[(&str, String)], wait: &dyn Fn()| {
        let trace = env.dir.path().join(format!("connects-{tag}.txt"));
        let mut host = env
            .program("strace")
            .args(["-f", "-qq", "-e", "trace=socket,connect", "-o"])
            .arg(&trace)
            .arg(env.bin.join("capt-hookd"))
            .arg("serve")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("strace runs the host (apt install strace: .ci/run installs it)");
        let mut ready = String::new();
        std::io::BufReader::new(host.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        if !ready.starts_with("ready") {
            let out = host.wait_with_output().unwrap();
            panic!(
                "the traced host did not start: {ready:?} {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for (name, payload) in events {
            let out = env.hook(name, payload.as_bytes(), vars);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        }
        wait();
        let down = env.cmd("capt-hookd").arg("shutdown").output().unwrap();
        assert_eq!(down.status.code(), Some(0), "{}", stderr(&down));
        let _ = host.wait();
        std::fs::read_to_string(&trace).unwrap()
    };
    let internet = |trace: &str| -> Vec<String> {
        trace
            .lines()
            .filter(|l| l.contains("AF_INET"))
            .map(str::to_owned)
            .collect()
    };
    let session = [
        (
            "SessionStart",
            event(
                "SessionStart",
                capt_hook_proto::serde_json::json!({"source": "startup"}),
            ),
        ),
        (
            "UserPromptSubmit",
            event(
                "UserPromptSubmit",
                capt_hook_proto::serde_json::json!({"prompt": "tidy up"}),
            ),
        ),
        (
            "PreToolUse",
            String::from_utf8(bash(&root, "git stash")).unwrap(),
        ),
        ("PreToolUse", String::from_utf8(bash(&root, "ls")).unwrap()),
        ("Stop", String::from_utf8(stop(&root)).unwrap()),
        (
            "SessionEnd",
            event(
                "SessionEnd",
                capt_hook_proto::serde_json::json!({"reason": "exit"}),
            ),
        ),
    ];
    let quiet = traced(
        "quiet",
        &[("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")],
        &session,
        &|| std::thread::sleep(std::time::Duration::from_millis(300)),
    );
    // The trace holds the host's own sockets and more than one process (the worker).
    let pids: std::collections::BTreeSet<&str> = quiet
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        quiet.contains("socket(AF_UNIX") && pids.len() >= 2,
        "the trace follows the host and its workers: {quiet}"
    );
    assert_eq!(internet(&quiet), Vec::<String>::new(), "network requests");
    assert_eq!(server.hits(), 0);

    let checked = traced("control", &[], &session[..1], &|| {
        env.wait_until("the release check ran", || server.hits() >= 1);
    });
    let port = format!(
        "htons({})",
        url.split(':').nth(2).unwrap().split('/').next().unwrap()
    );
    assert!(
        internet(&checked).iter().any(|l| l.contains(&port)),
        "the trace sees the release check's request: {checked}"
    );
}

/// The host log is kept to `CAPT_HOOK_LOG_MAX_BYTES`: a host starting on a larger one moves it
/// to `capt-hookd.log.1` and starts it afresh; workers' stderr lands in the fresh one.
#[test]
fn a_large_host_log_is_rotated() {
    let env = Env::with(&[("CAPT_HOOK_LOG_MAX_BYTES", "65536")]);
    let dir = env.dir.path().join("home/.cache/captain-hook/host-v1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let log = dir.join("capt-hookd.log");
    let old = "an old line\n".repeat(10_000);
    std::fs::write(&log, &old).unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).unwrap();
    let root = env.project("rotate", HOOKS);
    // A ledger path that cannot exist (under a regular file): the worker says so on stderr,
    // which reaches the log through the host.
    let blocked = env.dir.path().join("not-a-dir");
    std::fs::write(&blocked, "").unwrap();
    let db = blocked.join("decisions.db");
    let vars = [("CAPT_HOOK_DECISIONS_DB", db.to_str().unwrap())];
    // A deny, so there is a row to record.
    let out = env.hook("PreToolUse", &bash(&root, "git stash"), &vars);
    assert_eq!(decision(&json_out(&out)), Some("deny"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(dir.join("capt-hookd.log.1")).unwrap(),
        old
    );
    env.wait_until("the worker's stderr in the host log", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("decisions wait in"))
    });
    let fresh = std::fs::read_to_string(&log).unwrap();
    assert!(
        fresh.len() < 65536 && fresh.contains("host ready"),
        "{fresh}"
    );
    // Whole lines: the worker's arrive between the host's, never inside one.
    assert!(
        fresh.lines().all(|l| l.starts_with("capt-hook")
            || [" INFO ", " WARN ", " ERROR "]
                .iter()
                .any(|level| l.contains(level))),
        "{fresh}"
    );
}

/// Writes `text` at `path`, creating its directory.
fn put(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Installs a plugin `id` at `<env>/plugins/<name>` with `files`, enabled in the user's Claude
/// Code settings and listed in the install roster, as `claude plugin install` leaves them.
fn install_plugin(env: &Env, id: &str, files: &[(&str, &str)]) {
    install_plugin_in(env, &env.dir.path().join("home/.claude"), id, files);
}

/// [`install_plugin`] with Claude Code's configuration directory at `claude_dir`.
fn install_plugin_in(env: &Env, claude_dir: &std::path::Path, id: &str, files: &[(&str, &str)]) {
    let name = id.split('@').next().unwrap();
    let dir = env.dir.path().join("plugins").join(name);
    put(
        &dir.join(".claude-plugin/plugin.json"),
        &format!(r#"{{"name": "{name}"}}"#),
    );
    for (path, text) in files {
        put(&dir.join(path), text);
    }
    let settings = claude_dir.join("settings.json");
    let roster = claude_dir.join("plugins/installed_plugins.json");
    let read = |p: &std::path::Path, empty: Value| -> Value {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| capt_hook_proto::serde_json::from_str(&t).ok())
            .unwrap_or(empty)
    };
    let mut s = read(
        &settings,
        capt_hook_proto::serde_json::json!({"enabledPlugins": {}}),
    );
    s["enabledPlugins"][id] = true.into();
    put(&settings, &s.to_string());
    let mut r = read(
        &roster,
        capt_hook_proto::serde_json::json!({"version": 2, "plugins": {}}),
    );
    r["plugins"][id] = capt_hook_proto::serde_json::json!([{"scope": "user", "installPath": dir}]);
    put(&roster, &r.to_string());
}

/// A PreToolUse Bash payload of session `session`.
fn bash_in(root: &std::path::Path, session: &str, command: &str) -> Vec<u8> {
    let mut v: Value = capt_hook_proto::serde_json::from_slice(&bash(root, command)).unwrap();
    v["session_id"] = session.into();
    v.to_string().into_bytes()
}

/// A fresh install with no project hooks runs the builtin packs; a project turns one hook off;
/// a pack from an enabled plugin loads; a broken one is told to the session once.
#[test]
fn packs_through_the_host() {
    let env = Env::new();
    let root = env.dir.path().join("projects/bare");
    std::fs::create_dir_all(&root).unwrap();

    for cmd in ["pkill node", "git stash pop"] {
        let out = env.hook("PreToolUse", &bash(&root, cmd), &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(decision(&json_out(&out)), Some("deny"), "{cmd}");
    }
    let out = env.hook("PreToolUse", &bash(&root, "find ~ -name x"), &[]);
    let v = json_out(&out);
    assert_eq!(decision(&v), Some("allow"), "{v}");
    assert_eq!(
        v["hookSpecificOutput"]["updatedInput"]["command"],
        "rg --files ~ --glob x"
    );

    // The project turns the pkill hook off; the worker reloads on the config change.
    put(
        &root.join(".claude/hooks/config.toml"),
        "[hooks]\ndisable = [\"general/commands:block_command_pkill\"]\n",
    );
    let out = env.hook("PreToolUse", &bash(&root, "pkill node"), &[]);
    assert_eq!(json_out(&out), Value::Null, "{}", stderr(&out));
    let out = env.hook("PreToolUse", &bash(&root, "git stash pop"), &[]);
    assert_eq!(decision(&json_out(&out)), Some("deny"));

    install_plugin(
        &env,
        "acme@tools",
        &[
            ("capt-hook/pack.toml", "description = \"deploy rules\"\n"),
            (
                "capt-hook/hooks/deploy.toml",
                "[[hook]]\nkind = \"block_command\"\nargv = [\"make\", \"deploy\"]\nreason = \"deploys go through CI\"\n",
            ),
        ],
    );
    let out = env.hook("PreToolUse", &bash(&root, "make deploy"), &[]);
    let v = json_out(&out);
    assert_eq!(decision(&v), Some("deny"), "{v}");
    assert!(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("deploys go through CI")
    );

    install_plugin(
        &env,
        "broken@tools",
        &[("capt-hook/pack.toml", "description = \"no hooks dir\"\n")],
    );
    let first = json_out(&env.hook("PreToolUse", &bash_in(&root, "s-broken", "ls"), &[]));
    let notice = first["systemMessage"].as_str().unwrap_or_default();
    assert!(notice.contains("plugins/broken/capt-hook"), "{first}");
    let second = json_out(&env.hook("PreToolUse", &bash_in(&root, "s-broken", "ls"), &[]));
    assert!(
        second.get("systemMessage").is_none(),
        "told once per session: {second}"
    );
    // The working packs still decide.
    let out = env.hook(
        "PreToolUse",
        &bash_in(&root, "s-broken", "make deploy"),
        &[],
    );
    assert_eq!(decision(&json_out(&out)), Some("deny"));

    // Claude Code run with CLAUDE_CONFIG_DIR: its settings and roster there decide which plugin
    // packs load (and such a session gets a worker of its own).
    let config = env.dir.path().join("claude-config");
    install_plugin_in(
        &env,
        &config,
        "ship@tools",
        &[
            ("capt-hook/pack.toml", "description = \"release rules\"\n"),
            (
                "capt-hook/hooks/release.toml",
                "[[hook]]\nkind = \"block_command\"\nargv = [\"make\", \"release\"]\nreason = \"releases are tagged by CI\"\n",
            ),
        ],
    );
    let elsewhere = [("CLAUDE_CONFIG_DIR", config.to_str().unwrap())];
    let out = env.hook("PreToolUse", &bash(&root, "make release"), &elsewhere);
    let v = json_out(&out);
    assert_eq!(decision(&v), Some("deny"), "{v} {}", stderr(&out));
    assert!(v.to_string().contains("releases are tagged by CI"), "{v}");
    // The default directory's plugins are not this session's.
    let out = env.hook("PreToolUse", &bash(&root, "make deploy"), &elsewhere);
    assert_eq!(json_out(&out), Value::Null, "{}", stderr(&out));
    // Nor is the other directory's plugin a default session's (whose broken plugin pack still
    // leaves the call to the user).
    let v = json_out(&env.hook("PreToolUse", &bash(&root, "make release"), &[]));
    assert_ne!(decision(&v), Some("deny"), "{v}");
    assert!(!v.to_string().contains("releases are tagged"), "{v}");
}

/// Permission tickets through a real client, host and worker: the transcript the worker reads
/// decides whether a chat post is allowed, the minted ticket lives in the project's store under
/// the state root, covers later posts at its channel in its session tree (a subagent of the
/// session included, another session not) for its ttl, and a corrupted store denies naming
/// itself and is moved aside.
mod tickets {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    const HOOKS: &str = r#"
[[hook]]
kind = "tickets"
only_if = [{ tool = "mcp__chat__post_message" }]
ticket = "chat.post"
place = { channel = "/channel" }
reach = "place"
ttl = 3
window = 3
deny = "Ask the user whether to post to this channel."
rules = [{ name = "asked", user_said = { pattern = "\\bpost\\b", names = ["channel"] } }]
"#;

    fn post(root: &Path, transcript: &Path, channel: &str, text: &str) -> Vec<u8> {
        post_as(root, transcript, None, channel, text)
    }

    /// A post by the session's subagent `agent` when given: Claude Code sends the session's
    /// id and transcript with the subagent's `agent_id`.
    fn post_as(
        root: &Path,
        transcript: &Path,
        agent: Option<&str>,
        channel: &str,
        text: &str,
    ) -> Vec<u8> {
        let mut v = capt_hook_proto::serde_json::json!({
            "session_id": transcript.file_stem().unwrap().to_string_lossy(),
            "transcript_path": transcript, "cwd": root,
            "hook_event_name": "PreToolUse", "tool_name": "mcp__chat__post_message",
            "tool_input": {"channel": channel, "text": text}, "tool_use_id": "toolu_1",
        });
        if let Some(agent) = agent {
            v["agent_id"] = agent.into();
            v["agent_type"] = "general-purpose".into();
        }
        v.to_string().into_bytes()
    }

    fn say(transcript: &Path, text: &str) {
        use std::io::Write;
        let line = capt_hook_proto::serde_json::json!(
            {"type": "user", "message": {"role": "user", "content": text}}
        );
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(transcript)
            .unwrap();
        writeln!(f, "{line}").unwrap();
    }

    fn stores(state: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(state.join("hooks/tickets"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect()
    }

    fn reason(v: &Value) -> String {
        let h = &v["hookSpecificOutput"];
        h["permissionDecisionReason"]
            .as_str()
            .or_else(|| h["additionalContext"].as_str())
            .unwrap_or("")
            .to_owned()
    }

    #[test]
    fn asked_allowed_covered_expired_and_corrupt() {
        let env = Env::new();
        let root = env.project("p", HOOKS);
        let state = env.dir.path().join("home/.claude/state");
        let a = env.dir.path().join("session-a.jsonl");
        let b = env.dir.path().join("session-b.jsonl");
        say(&a, "hi, how is the deploy going?");
        say(&b, "thanks");

        // Nobody asked for a post: denied with the deny text, nothing minted.
        let out = env.hook("PreToolUse", &post(&root, &a, "deploys", "done"), &[]);
        let v = json_out(&out);
        assert_eq!(decision(&v), Some("deny"), "{v} {}", stderr(&out));
        assert_eq!(reason(&v), "Ask the user whether to post to this channel.");
        let minted_files = |state: &Path| -> Vec<PathBuf> {
            stores(state)
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect()
        };
        assert!(minted_files(&state).is_empty(), "{:?}", stores(&state));

        // The user asks: allowed, and the ticket records their words.
        say(&a, "please post the summary to #deploys");
        let out = env.hook("PreToolUse", &post(&root, &a, "deploys", "done"), &[]);
        let v = json_out(&out);
        let minted = Instant::now();
        assert_eq!(decision(&v), Some("allow"), "{v} {}", stderr(&out));
        let files = minted_files(&state);
        assert_eq!(files.len(), 1, "{files:?}");
        let store: Value =
            capt_hook_proto::serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap())
                .unwrap();
        let ticket = &store["tickets"][0];
        assert_eq!(ticket["kind"], "chat.post");
        assert_eq!(ticket["place"]["channel"], "deploys");
        assert_eq!(ticket["reach"], "place");
        assert_eq!(
            ticket["evidence"][0]["text"],
            "please post the summary to #deploys"
        );
        let id = ticket["id"].as_str().unwrap().to_owned();
        assert!(reason(&v).contains(&id), "{v}");

        // The words leave the window (3 messages); the ticket still covers the channel, for
        // a subagent of the session too ...
        for line in ["thanks", "looks good", "what next?"] {
            say(&a, line);
        }
        let out = env.hook(
            "PreToolUse",
            &post_as(&root, &a, Some("agent-1"), "deploys", "rollback"),
            &[],
        );
        let v = json_out(&out);
        assert_eq!(decision(&v), Some("allow"), "{v}");
        assert!(reason(&v).contains(&id), "{v}");
        // ... but not another channel ...
        let out = env.hook("PreToolUse", &post(&root, &a, "general", "rollback"), &[]);
        assert_eq!(decision(&json_out(&out)), Some("deny"));
        // ... nor another session of the project: tickets belong to the tree that minted them.
        let out = env.hook("PreToolUse", &post(&root, &b, "deploys", "rollback"), &[]);
        assert_eq!(decision(&json_out(&out)), Some("deny"));

        // After the ttl the ticket covers nothing.
        let left = Duration::from_millis(3200).saturating_sub(minted.elapsed());
        std::thread::sleep(left);
        let out = env.hook("PreToolUse", &post(&root, &a, "deploys", "rollback"), &[]);
        let v = json_out(&out);
        assert_eq!(decision(&v), Some("deny"), "{v}");

        // A corrupted store denies, naming the file, and is moved aside.
        std::fs::write(&files[0], "{\"tickets\": [oops").unwrap();
        let out = env.hook("PreToolUse", &post(&root, &a, "deploys", "done"), &[]);
        let v = json_out(&out);
        assert_eq!(decision(&v), Some("deny"), "{v}");
        let r = reason(&v);
        assert!(
            r.starts_with("Ask the user whether to post to this channel."),
            "{r}"
        );
        assert!(r.contains(&files[0].display().to_string()), "{r}");
        let baks: Vec<PathBuf> = stores(&state)
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(".json.bak."))
            .collect();
        assert_eq!(baks.len(), 1, "{baks:?}");
        assert_eq!(
            std::fs::read_to_string(&baks[0]).unwrap(),
            "{\"tickets\": [oops"
        );
        // The next post starts from a clean store and mints again from the user's words.
        say(&a, "post the rollback note to #deploys");
        let out = env.hook("PreToolUse", &post(&root, &a, "deploys", "done"), &[]);
        assert_eq!(decision(&json_out(&out)), Some("allow"));
    }
}

/// A session's state directory names its transcript at SessionStart; once that transcript is
/// deleted, the next session start through the host (any session's) removes the directory,
/// however young it is.
#[test]
fn a_sessions_state_goes_with_its_transcript() {
    let env = Env::new();
    let root = env.project(
        "sweep",
        "[[hook]]\nkind = \"hook\"\nevents = \"SessionStart\"\nmessage = \"hi\"\n",
    );
    let transcripts = env.dir.path().join("home/.claude/projects/-sweep");
    std::fs::create_dir_all(&transcripts).unwrap();
    let sessions = env.dir.path().join("home/.claude/state/hooks/sessions");
    let start = |sid: &str| {
        let transcript = transcripts.join(format!("{sid}.jsonl"));
        std::fs::write(&transcript, "").unwrap();
        let payload = capt_hook_proto::serde_json::json!({
            "session_id": sid, "cwd": root, "hook_event_name": "SessionStart",
            "source": "startup", "transcript_path": transcript,
        });
        let out = env.hook("SessionStart", payload.to_string().as_bytes(), &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    };
    start("first");
    assert!(sessions.join("first/.transcript").is_file());
    std::fs::remove_file(transcripts.join("first.jsonl")).unwrap();
    start("second");
    assert!(
        !sessions.join("first").exists(),
        "the session whose transcript was deleted kept its state"
    );
    assert!(sessions.join("second/.transcript").is_file());
}

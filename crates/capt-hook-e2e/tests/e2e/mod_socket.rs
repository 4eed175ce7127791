//! The host's HTTP socket, as our hooks module (a mod inside Claude Code) uses it: `hook
//! mod-init` starts the host and names the socket, events posted there get the module's result,
//! and an answer the module cannot say is given to the command hook without the hooks running
//! again.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use capt_hook_proto::serde_json::{self, Value, json};

use crate::support::*;

/// `POST` of `body` to `path` on the socket: the status and the JSON body.
fn post(socket: &Path, method_path: &str, body: &str) -> (u16, Value) {
    let mut s = UnixStream::connect(socket).expect("connect to the HTTP socket");
    write!(
        s,
        "{method_path} HTTP/1.1\r\nHost: captain-hook\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a reply head");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// `hook mod-init` in the project: the socket and the request variables it prints.
fn mod_init(env: &Env, root: &Path) -> (PathBuf, Value) {
    let out = env
        .cmd("hook")
        .arg("mod-init")
        .env("CLAUDE_PROJECT_DIR", root)
        .env("CLAUDE_PLUGIN_ROOT", "/plugin")
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        PathBuf::from(v["socket"].as_str().unwrap()),
        v["env"].clone(),
    )
}

#[test]
fn mod_init_starts_the_host_and_names_its_http_socket() {
    let env = Env::new();
    let root = env.project("modinit", HOOKS);
    assert!(env.status().is_none(), "no host before");
    let (socket, vars) = mod_init(&env, &root);
    assert!(env.status().is_some(), "mod-init started the host");
    assert_eq!(socket, env.run_dir().join("capt-hookd-http.sock"));
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the socket is the user's alone");
    // The command hook's request variables, and only those.
    assert_eq!(vars["CLAUDE_PROJECT_DIR"], root.display().to_string());
    assert_eq!(vars["CLAUDE_PLUGIN_ROOT"], "/plugin");
    assert!(vars.get("PATH").is_none(), "{vars}");
}

#[test]
fn events_posted_by_the_module_get_its_results() {
    let env = Env::new();
    let root = env.project("modpost", HOOKS);
    let (socket, vars) = mod_init(&env, &root);
    let cwd = root.display().to_string();
    // classic.PreToolUse's envelope, with the session fields the module remembers.
    let stash = json!({
        "event": "PreToolUse",
        "input": {"tool": "Bash", "tool_use_id": "toolu_1", "command": "git stash"},
        "base": {"session_id": "mod-s1", "cwd": cwd},
        "env": vars,
    });
    let (status, reply) = post(&socket, "POST /v1/event", &stash.to_string());
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["decision"], "deny");
    assert_eq!(reply["pass"], false);
    let deny = reply["result"]["deny"].as_str().unwrap();
    assert!(deny.contains("use jj shelve"), "{reply}");
    // The envelope the command path would print, for the same answer.
    assert!(reply["stdout"].as_str().unwrap().contains("use jj shelve"));
    let ls = json!({
        "event": "PreToolUse",
        "input": {"tool": "Bash", "tool_use_id": "toolu_2", "command": "ls"},
        "base": {"session_id": "mod-s1", "cwd": cwd},
        "env": vars,
    });
    let (_, reply) = post(&socket, "POST /v1/event", &ls.to_string());
    assert_eq!(reply["result"], json!({}), "no verdict: {reply}");
    let stop = json!({
        "event": "Stop",
        "input": {"hook_event_name": "Stop", "session_id": "mod-s1", "cwd": cwd,
                  "stop_hook_active": false},
        "env": vars,
    });
    let (_, reply) = post(&socket, "POST /v1/event", &stop.to_string());
    assert_eq!(reply["result"]["block"], "run the tests first", "{reply}");
    // What the socket refuses, each with a reason.
    let (status, reply) = post(&socket, "GET /v1/event", "");
    assert_eq!(status, 405, "{reply}");
    let (status, reply) = post(&socket, "POST /v1/event", "{\"event\": 1}");
    assert_eq!(status, 400);
    assert!(
        reply["error"].as_str().unwrap().contains("ModRequest"),
        "{reply}"
    );
    let envelope_without_id =
        json!({"event": "PreToolUse", "input": {"tool": "Bash"}, "env": vars});
    let (status, reply) = post(&socket, "POST /v1/event", &envelope_without_id.to_string());
    assert_eq!(status, 400);
    assert!(
        reply["error"].as_str().unwrap().contains("tool_use_id"),
        "{reply}"
    );
}

/// A hook file that does not load is told once per session, in a `systemMessage`, which no
/// module result carries: the module passes the event on, and the command hook's request gets
/// the answer the host kept. Had the hooks run again, the notice (already told) would be gone.
#[test]
fn what_the_module_cannot_say_reaches_the_command_hook_once() {
    let env = Env::new();
    let root = env.project("modpass", HOOKS);
    std::fs::write(root.join(".claude/hooks/broken.toml"), "[[hook]\n").unwrap();
    let (socket, vars) = mod_init(&env, &root);
    let payload = json!({"hook_event_name": "Stop", "session_id": "mod-s2",
                         "cwd": root.display().to_string(), "stop_hook_active": false});
    let posted = json!({"event": "Stop", "input": payload, "env": vars});
    let (status, reply) = post(&socket, "POST /v1/event", &posted.to_string());
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["pass"], true, "{reply}");
    assert_eq!(reply["unsaid"], json!(["systemMessage"]));
    let project = root.display().to_string();
    let vars = [("CLAUDE_PROJECT_DIR", project.as_str())];
    let out = env.hook("Stop", payload.to_string().as_bytes(), &vars);
    let told = json_out(&out);
    assert!(
        told["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("did not load")),
        "the command hook did not get the kept answer: {told}"
    );
    assert_eq!(told["decision"], "block");
    // Given once: the next Stop runs the hooks, and the session was told already.
    let again = json_out(&env.hook("Stop", payload.to_string().as_bytes(), &vars));
    assert_eq!(again["decision"], "block");
    assert!(again.get("systemMessage").is_none(), "{again}");
}

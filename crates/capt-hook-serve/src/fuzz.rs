//! Bounded fuzz loops on stable Rust for the two inputs others control: payload bytes (Claude
//! Code, or whatever sits between) and hook files (the user). Each loop mutates seeds with a
//! seeded generator for a fixed time (`CAPT_HOOK_FUZZ_SECS`, default 3; the seed is printed and
//! `CAPT_HOOK_FUZZ_SEED` replays it) and asserts no panic, no hang (every input answers within
//! [`PER_INPUT`]) and the fail-closed rule: a guarded event always gets an answer, and one whose
//! payload cannot be read asks the user.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capt_hook_core::{EventContext, EventKind};
use capt_hook_proto::payload::{self, MAX_DEPTH};
use serde_json::Value;

use crate::project::Project;
use capt_hook_core::Event;
use capt_hook_engine::dispatch::DispatchOptions;
use capt_hook_engine::{Dispatcher, Registry};
use capt_hook_toml::loader::load_str;

/// Longer than any input may take; a slower one counts as a hang.
const PER_INPUT: Duration = Duration::from_secs(2);

fn budget() -> Duration {
    let secs = std::env::var("CAPT_HOOK_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(3.0);
    Duration::from_secs_f64(secs)
}

fn rng(target: &str) -> fastrand::Rng {
    let seed = std::env::var("CAPT_HOOK_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("fuzz {target}: seed {seed} (CAPT_HOOK_FUZZ_SEED replays it)");
    fastrand::Rng::with_seed(seed)
}

/// Runs `check` on generated inputs until the budget is spent; returns how many ran.
fn run_for(target: &str, mut check: impl FnMut(&mut fastrand::Rng)) {
    let mut rng = rng(target);
    let started = Instant::now();
    let mut inputs = 0u64;
    while started.elapsed() < budget() {
        let one = Instant::now();
        check(&mut rng);
        let took = one.elapsed();
        assert!(took < PER_INPUT, "{target}: one input took {took:?}");
        inputs += 1;
    }
    eprintln!(
        "fuzz {target}: {inputs} inputs in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Applies one to four random edits drawn from `tokens` and a few structural moves.
fn mutate(rng: &mut fastrand::Rng, base: &[u8], tokens: &[&str]) -> Vec<u8> {
    let mut out = base.to_vec();
    for _ in 0..rng.usize(1..=4) {
        let at = rng.usize(..=out.len());
        match rng.u8(..8) {
            0 if !out.is_empty() => {
                let i = rng.usize(..out.len());
                out[i] = rng.u8(..);
            }
            1 | 2 => {
                let t = tokens[rng.usize(..tokens.len())].as_bytes();
                out.splice(at..at, t.iter().copied());
            }
            3 => out.truncate(at),
            4 if at < out.len() => {
                let end = rng.usize(at..=out.len().min(at + 64));
                let piece = out[at..end].to_vec();
                out.splice(at..at, piece);
            }
            5 if at < out.len() => {
                let end = rng.usize(at..=out.len());
                out.drain(at..end);
            }
            6 => {
                let n = rng.usize(1..3000);
                let (open, close) = if rng.bool() {
                    ("[", "]")
                } else {
                    ("{\"k\":", "}")
                };
                let mut deep = open.repeat(n).into_bytes();
                deep.extend_from_slice(b"1");
                if rng.bool() {
                    deep.extend_from_slice(close.repeat(n).as_bytes());
                }
                out.splice(at..at, deep);
            }
            _ => out.splice(at..at, "\u{feff}".bytes()).for_each(drop),
        }
    }
    out
}

/// The deepest nesting of arrays and objects, walked without recursion.
fn depth(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 1)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(items) => {
                deepest = deepest.max(d);
                stack.extend(items.iter().map(|i| (i, d + 1)));
            }
            Value::Object(map) => {
                deepest = deepest.max(d);
                stack.extend(map.values().map(|i| (i, d + 1)));
            }
            _ => {}
        }
    }
    deepest
}

const PAYLOAD_SEEDS: &[&str] = &[
    r#"{"session_id":"s","transcript_path":"/dev/null","cwd":"/tmp","hook_event_name":"PreToolUse","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"git stash && echo 'x'","description":"d"},"tool_use_id":"t"}"#,
    r#"{"session_id":"s","cwd":"/tmp","tool_name":"Edit","tool_input":{"file_path":"/tmp/a.py","old_string":"a","new_string":"b\ud83d\ude00"}}"#,
    r#"{"session_id":"s","cwd":"/tmp","tool_name":"mcp__x__y","tool_input":{"opts":{"cmd":["rm","-rf","/"],"n":[1,2,{"a":null}]}}}"#,
    r#"{"tool_name":"Bash","tool_input":{"command":"ls"},"permission_suggestions":[{"type":"addRules"}]}"#,
];

const JSON_TOKENS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    "\"",
    "\\",
    "\\ud800",
    "\\udfff",
    "\\ud83d\\ude00",
    "\\u00",
    ",",
    ":",
    "null",
    "\u{feff}",
    "\u{fffd}",
    "1e999",
    "-0.0e-9",
    "\n",
    "\"tool_name\":\"Bash\",",
    "\"command\":\"git stash\",",
    "}{\"a\":1}",
    " trailing",
];

/// Hooks that answer every guarded call (an approval) and deny `git stash`: with them, every
/// readable guarded payload has an answer, so a missing one is a silent pass.
const ANSWERING: &str = r#"
[[hook]]
kind = "block_command"
argv = ["git", "stash"]
reason = "no stash"

[[hook]]
kind = "approve"
label = "everything else"
"#;

fn answering_project() -> Project {
    let mut registry = Registry::new();
    load_str(ANSWERING, "fuzz", &mut registry).expect("the fuzz hooks load");
    Project::from_registry(Path::new("/nonexistent-fuzz-root"), registry)
}

#[test]
fn fuzz_payloads_read_leniently_and_fail_closed() {
    let project = answering_project();
    let opts = DispatchOptions::default();
    let (mut readable, mut unreadable) = (0u64, 0u64);
    run_for("payload", |rng| {
        let seed = PAYLOAD_SEEDS[rng.usize(..PAYLOAD_SEEDS.len())].as_bytes();
        let input = mutate(rng, seed, JSON_TOKENS);
        let event = if rng.bool() {
            "PreToolUse"
        } else {
            "PermissionRequest"
        };
        let parsed = payload::parse(&input);
        // Whatever a strict reader accepts, the lenient one reads the same.
        if let Ok(strict @ Value::Object(_)) = serde_json::from_slice::<Value>(&input) {
            assert_eq!(parsed.as_ref().ok(), Some(&Some(strict)));
        }
        let eval = project.evaluate(event, &input, opts);
        let what = String::from_utf8_lossy(&input);
        match &parsed {
            Ok(None) => assert_eq!(eval.stdout, None),
            Ok(Some(v)) => {
                readable += 1;
                assert!(v.is_object());
                assert!(depth(v) <= MAX_DEPTH, "too deep a value from {what:.200}");
                assert!(
                    eval.stdout.is_some(),
                    "{event} answered nothing: {what:.200}"
                );
            }
            Err(_) => {
                unreadable += 1;
                let out = eval.stdout.as_deref().unwrap_or_default();
                let v: Value = serde_json::from_str(out).expect("one JSON answer");
                let asks = v["hookSpecificOutput"]["permissionDecision"] == "ask"
                    || (event == "PermissionRequest" && v["systemMessage"].is_string());
                assert!(asks, "unreadable {event} payload did not ask: {out}");
            }
        }
    });
    eprintln!("fuzz payload: {readable} readable, {unreadable} unreadable");
    assert!(
        readable > 0 && unreadable > 0,
        "the mutations explore both sides"
    );
}

/// A random JSON value; strings may hold U+0001, which the writer below turns into a lone
/// surrogate escape.
fn value(rng: &mut fastrand::Rng, depth: usize) -> Value {
    let leaf = depth == 0 || rng.u8(..4) == 0;
    match rng.u8(..if leaf { 4 } else { 6 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.bool()),
        2 => Value::from(rng.i64(..)),
        3 => {
            let pool = ['a', 'é', '😀', '"', '\\', '\n', '\u{1}', ' ', '$', '('];
            Value::String(
                (0..rng.usize(..12))
                    .map(|_| pool[rng.usize(..pool.len())])
                    .collect(),
            )
        }
        4 => Value::Array((0..rng.usize(..4)).map(|_| value(rng, depth - 1)).collect()),
        _ => Value::Object(
            (0..rng.usize(..4))
                .map(|i| (format!("k{i}"), value(rng, depth - 1)))
                .collect(),
        ),
    }
}

/// `v` as Claude Code's runtime might write it: lone surrogates where the strings hold U+0001,
/// sometimes a byte-order mark, sometimes bytes after the object.
fn as_claude_writes(rng: &mut fastrand::Rng, v: &Value) -> String {
    let mut text = v.to_string().replace("\\u0001", "\\ud800");
    if rng.bool() {
        text.insert(0, '\u{feff}');
    }
    if rng.bool() {
        text.push_str("\n{\"next\":1}");
    }
    text
}

/// What the reader must make of it: each lone surrogate read as U+FFFD.
fn as_read(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace('\u{1}', "\u{fffd}")),
        Value::Array(items) => Value::Array(items.iter().map(as_read).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), as_read(v))).collect())
        }
        other => other.clone(),
    }
}

#[test]
fn fuzz_payloads_written_by_claude_code_read_back() {
    run_for("payload-structured", |rng| {
        let mut payload = serde_json::Map::new();
        payload.insert("tool_name".into(), "Bash".into());
        payload.insert("tool_input".into(), value(rng, 8));
        let v = Value::Object(payload);
        let text = as_claude_writes(rng, &v);
        let read = payload::parse(text.as_bytes())
            .unwrap_or_else(|e| panic!("{e}: {text:.300}"))
            .expect("an object");
        assert_eq!(read, as_read(&v), "{text:.300}");
    });
}

const TOML_SEEDS: &[&str] = &[
    ANSWERING,
    r#"
[[hook]]
kind = "warn_command"
pattern = 'git\s+push(?!-)'
message = "careful"
only_if = [{ tool = "Bash" }, { command = "origin" }]
skip_if = [{ file = "*.md" }]

  [[hook.test]]
  input = { command = "git push origin" }
  expect = "warn"
"#,
    r#"
[[hook]]
kind = "nudge"
message = "try again differently"
signals = { patterns = [{ pattern = "retry", weight = 2 }], threshold = 2, window = 5 }

[[hook]]
kind = "rewrite_command"
pattern = '^npm (.*)'
replace = 'pnpm $1'
max_fires = 3
"#,
    r#"
[[hook]]
kind = "hook"
events = ["Stop", "SubagentStop"]
message = "run the tests"
block = true
mandatory = false
"#,
];

const TOML_TOKENS: &[&str] = &[
    "[[hook]]\n",
    "[",
    "]",
    "=",
    "\"",
    "'",
    "'''",
    "\"\"\"",
    "\n",
    "{",
    "}",
    ",",
    "#",
    "\\",
    "kind = \"deny\"\n",
    "kind = \"approve\"\n",
    "reason = \"x\"\n",
    "argv = []\n",
    "argv = [\"a|b\", \"*\"]\n",
    "events = \"Stop\"\n",
    "events = \"PreToolUse\"\n",
    "mandatory = true\n",
    "async = true\n",
    "max_fires = -1\n",
    "max_fires = 0\n",
    "pattern = '('\n",
    "only_if = [{ command = \"(\" }]\n",
    "[[hook.test]]\n",
    "\u{0}",
    "\u{feff}",
    "é",
];

#[test]
fn fuzz_hook_files_load_or_fail_with_a_location() {
    let evt = Arc::new(
        Event::new(
            EventKind::PreToolUse,
            serde_json::json!({"tool_name": "Bash", "tool_input": {"command": "git push origin main"}}),
            EventContext::default(),
        )
        .expect("a fixed event"),
    );
    let (mut loaded, mut refused) = (0u64, 0u64);
    run_for("hook-toml", |rng| {
        let seed = TOML_SEEDS[rng.usize(..TOML_SEEDS.len())].as_bytes();
        let bytes = mutate(rng, seed, TOML_TOKENS);
        let text = String::from_utf8_lossy(&bytes);
        let mut registry = Registry::new();
        match load_str(&text, "fuzz", &mut registry) {
            Ok(()) => {
                loaded += 1;
                // Whatever loads, dispatches.
                let d = Dispatcher::new(Arc::new(registry), None);
                let _ = d.dispatch(&evt, DispatchOptions::default());
            }
            Err(errors) => {
                refused += 1;
                assert!(!errors.is_empty());
                for e in &errors {
                    assert!(e.line >= 1 && e.column >= 1, "unlocated: {e}");
                    assert!(!e.message.is_empty(), "no message: {e}");
                }
            }
        }
    });
    eprintln!("fuzz hook-toml: {loaded} loaded, {refused} refused");
    assert!(
        loaded > 0 && refused > 0,
        "the mutations explore both sides"
    );
}

#[test]
fn fuzz_broken_hook_files_never_let_a_guarded_call_pass_silently() {
    let dir = tempfile::tempdir().expect("temp dir");
    let hooks = dir.path().join("hooks");
    std::fs::create_dir_all(&hooks).expect("hooks dir");
    let payload = br#"{"tool_name":"Bash","tool_input":{"command":"ls"}}"#;
    run_for("broken-file-fail-closed", |rng| {
        let seed = TOML_SEEDS[rng.usize(..TOML_SEEDS.len())].as_bytes();
        std::fs::write(hooks.join("a.toml"), mutate(rng, seed, TOML_TOKENS)).expect("write");
        let project = Project::load(dir.path(), &hooks);
        for event in ["PreToolUse", "PermissionRequest"] {
            let eval = project.evaluate(event, payload, DispatchOptions::default());
            if project.errors().is_empty() {
                continue;
            }
            let out = eval
                .stdout
                .expect("a broken file never leaves a guarded call silent");
            assert!(
                !out.contains("\"allow\""),
                "approved with a file that did not load: {out}"
            );
            assert!(out.contains("a.toml"), "the answer names the file: {out}");
        }
    });
}

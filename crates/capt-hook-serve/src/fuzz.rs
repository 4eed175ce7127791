//! Property tests (proptest) for the two inputs others control: payload bytes (Claude Code,
//! or whatever sits between) and hook files (the user). Each property mutates seed inputs with
//! shrinkable edits and asserts no panic, no hang (every input answers within [`PER_INPUT`]) and
//! the fail-closed rule: a guarded event always gets an answer, and one whose payload cannot be
//! read asks the user.
//!
//! The runs are reproducible as every property test's are ([`capt_hook_proto::fuzz::config`]:
//! a fixed seed, failures persisted under `proptest-regressions/`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capt_hook_core::{EventContext, EventKind};
use capt_hook_proto::fuzz::config;
use capt_hook_proto::payload::{self, MAX_DEPTH};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use serde_json::Value;

use crate::project::Project;
use capt_hook_core::Event;
use capt_hook_engine::dispatch::DispatchOptions;
use capt_hook_engine::{Dispatcher, Registry};
use capt_hook_toml::loader::load_str;

/// Longer than any input may take; a slower one counts as a hang.
const PER_INPUT: Duration = Duration::from_secs(2);

/// Fails the case when one input took longer than [`PER_INPUT`].
fn in_time<T>(what: &str, run: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    let started = Instant::now();
    let out = run();
    let took = started.elapsed();
    prop_assert!(took < PER_INPUT, "{what}: one input took {took:?}");
    Ok(out)
}

/// One edit of an input; positions are fractions of its length at the time, so an edit list
/// shrinks to fewer and smaller edits.
#[derive(Debug, Clone)]
enum Edit {
    /// Overwrite one byte.
    Byte(Index, u8),
    /// Insert a token of the target's list.
    Token(Index, Index),
    /// Cut the rest.
    Truncate(Index),
    /// Repeat up to 64 bytes in place.
    Duplicate(Index, usize),
    /// Remove up to 64 bytes.
    Delete(Index, usize),
    /// Insert `n` opening brackets (arrays or objects), closed or not, around a `1`.
    Deep {
        at: Index,
        n: usize,
        array: bool,
        closed: bool,
    },
    /// Insert a byte-order mark.
    Bom(Index),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        1 => (any::<Index>(), any::<u8>()).prop_map(|(at, b)| Edit::Byte(at, b)),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(at, t)| Edit::Token(at, t)),
        1 => any::<Index>().prop_map(Edit::Truncate),
        1 => (any::<Index>(), 1usize..64).prop_map(|(at, n)| Edit::Duplicate(at, n)),
        1 => (any::<Index>(), 1usize..64).prop_map(|(at, n)| Edit::Delete(at, n)),
        1 => (any::<Index>(), 1usize..3000, any::<bool>(), any::<bool>())
            .prop_map(|(at, n, array, closed)| Edit::Deep { at, n, array, closed }),
        1 => any::<Index>().prop_map(Edit::Bom),
    ];
    proptest::collection::vec(edit, 1..=4)
}

/// `base` with `edits` applied in order, tokens drawn from `tokens`.
fn apply(base: &[u8], edits: &[Edit], tokens: &[&str]) -> Vec<u8> {
    let mut out = base.to_vec();
    for e in edits {
        // An insertion point: 0..=len, never empty.
        let point = |at: &Index, len: usize| at.index(len + 1);
        match e {
            Edit::Byte(at, b) if !out.is_empty() => {
                let i = at.index(out.len());
                out[i] = *b;
            }
            Edit::Byte(..) => {}
            Edit::Token(at, t) => {
                let at = point(at, out.len());
                let token = tokens[t.index(tokens.len())].as_bytes();
                out.splice(at..at, token.iter().copied());
            }
            Edit::Truncate(at) => out.truncate(point(at, out.len())),
            Edit::Duplicate(at, n) => {
                let at = point(at, out.len());
                let end = (at + n).min(out.len());
                let piece = out[at..end].to_vec();
                out.splice(at..at, piece);
            }
            Edit::Delete(at, n) => {
                let at = point(at, out.len());
                let end = (at + n).min(out.len());
                out.drain(at..end);
            }
            Edit::Deep {
                at,
                n,
                array,
                closed,
            } => {
                let at = point(at, out.len());
                let (open, close) = if *array { ("[", "]") } else { ("{\"k\":", "}") };
                let mut deep = open.repeat(*n).into_bytes();
                deep.extend_from_slice(b"1");
                if *closed {
                    deep.extend_from_slice(close.repeat(*n).as_bytes());
                }
                out.splice(at..at, deep);
            }
            Edit::Bom(at) => {
                let at = point(at, out.len());
                out.splice(at..at, "\u{feff}".bytes());
            }
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

proptest! {
    #![proptest_config(config(1500))]

    #[test]
    fn fuzz_payloads_read_leniently_and_fail_closed(
        seed in proptest::sample::select(PAYLOAD_SEEDS),
        edits in edits(),
        permission in any::<bool>(),
    ) {
        let project = answering_project();
        let input = apply(seed.as_bytes(), &edits, JSON_TOKENS);
        let event = if permission { "PermissionRequest" } else { "PreToolUse" };
        let parsed = payload::parse(&input);
        // Whatever a strict reader accepts, the lenient one reads the same.
        if let Ok(strict @ Value::Object(_)) = serde_json::from_slice::<Value>(&input) {
            prop_assert_eq!(parsed.as_ref().ok(), Some(&Some(strict)));
        }
        let eval = in_time("payload", || {
            project.evaluate(event, &input, DispatchOptions::default())
        })?;
        let what = String::from_utf8_lossy(&input);
        match &parsed {
            Ok(None) => prop_assert_eq!(eval.stdout, None),
            Ok(Some(v)) => {
                prop_assert!(v.is_object());
                prop_assert!(depth(v) <= MAX_DEPTH, "too deep a value from {:.200}", what);
                prop_assert!(eval.stdout.is_some(), "{} answered nothing: {:.200}", event, what);
            }
            Err(_) => {
                let out = eval.stdout.as_deref().unwrap_or_default();
                let v: Value = serde_json::from_str(out).expect("one JSON answer");
                let asks = v["hookSpecificOutput"]["permissionDecision"] == "ask"
                    || (event == "PermissionRequest" && v["systemMessage"].is_string());
                prop_assert!(asks, "unreadable {} payload did not ask: {}", event, out);
            }
        }
    }
}

/// The edits reach both sides of the reader: seeds that stay readable and ones that break.
#[test]
fn the_payload_edits_explore_both_sides() {
    let mut runner = proptest::test_runner::TestRunner::new(config(200));
    let (mut readable, mut unreadable) = (0, 0);
    for _ in 0..200 {
        let seed = proptest::sample::select(PAYLOAD_SEEDS)
            .new_tree(&mut runner)
            .expect("a seed")
            .current();
        let e = edits().new_tree(&mut runner).expect("edits").current();
        match payload::parse(&apply(seed.as_bytes(), &e, JSON_TOKENS)) {
            Ok(Some(_)) => readable += 1,
            Err(_) => unreadable += 1,
            Ok(None) => {}
        }
    }
    assert!(
        readable > 0 && unreadable > 0,
        "{readable} readable, {unreadable} unreadable"
    );
}

/// A JSON value; strings may hold U+0001, which the writer below turns into a lone surrogate
/// escape.
fn json_value() -> impl Strategy<Value = Value> {
    const POOL: &[char] = &['a', 'é', '😀', '"', '\\', '\n', '\u{1}', ' ', '$', '('];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        proptest::collection::vec(proptest::sample::select(POOL), 0..12)
            .prop_map(|c| Value::String(c.into_iter().collect())),
    ];
    leaf.prop_recursive(8, 64, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(inner, 0..4).prop_map(|items| {
                Value::Object(
                    items
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| (format!("k{i}"), v))
                        .collect(),
                )
            }),
        ]
    })
}

/// `v` as Claude Code's runtime might write it: lone surrogates where the strings hold U+0001,
/// sometimes a byte-order mark, sometimes bytes after the object.
fn as_claude_writes(v: &Value, bom: bool, trailing: bool) -> String {
    let mut text = v.to_string().replace("\\u0001", "\\ud800");
    if bom {
        text.insert(0, '\u{feff}');
    }
    if trailing {
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

proptest! {
    #![proptest_config(config(1500))]

    #[test]
    fn fuzz_payloads_written_by_claude_code_read_back(
        input in json_value(),
        bom in any::<bool>(),
        trailing in any::<bool>(),
    ) {
        let mut payload = serde_json::Map::new();
        payload.insert("tool_name".into(), "Bash".into());
        payload.insert("tool_input".into(), input);
        let v = Value::Object(payload);
        let text = as_claude_writes(&v, bom, trailing);
        let read = in_time("payload-structured", || payload::parse(text.as_bytes()))?;
        match read {
            Ok(Some(read)) => prop_assert_eq!(read, as_read(&v), "{:.300}", text),
            other => prop_assert!(false, "{:?}: {:.300}", other, text),
        }
    }
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

proptest! {
    #![proptest_config(config(800))]

    #[test]
    fn fuzz_hook_files_load_or_fail_with_a_location(
        seed in proptest::sample::select(TOML_SEEDS),
        edits in edits(),
    ) {
        let evt = Arc::new(
            Event::new(
                EventKind::PreToolUse,
                serde_json::json!({"tool_name": "Bash", "tool_input": {"command": "git push origin main"}}),
                EventContext::default(),
            )
            .expect("a fixed event"),
        );
        let bytes = apply(seed.as_bytes(), &edits, TOML_TOKENS);
        let text = String::from_utf8_lossy(&bytes);
        let mut registry = Registry::new();
        let loaded = in_time("hook-toml", || load_str(&text, "fuzz", &mut registry))?;
        match loaded {
            Ok(()) => {
                // Whatever loads, dispatches.
                let d = Dispatcher::new(Arc::new(registry), None);
                in_time("hook-toml dispatch", || d.dispatch(&evt, DispatchOptions::default()))?;
            }
            Err(errors) => {
                prop_assert!(!errors.is_empty());
                for e in &errors {
                    prop_assert!(e.line >= 1 && e.column >= 1, "unlocated: {}", e);
                    prop_assert!(!e.message.is_empty(), "no message: {}", e);
                }
            }
        }
    }

    #[test]
    fn fuzz_broken_hook_files_never_let_a_guarded_call_pass_silently(
        seed in proptest::sample::select(TOML_SEEDS),
        edits in edits(),
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let hooks = dir.path().join("hooks");
        std::fs::create_dir_all(&hooks).expect("hooks dir");
        let payload = br#"{"tool_name":"Bash","tool_input":{"command":"ls"}}"#;
        std::fs::write(hooks.join("a.toml"), apply(seed.as_bytes(), &edits, TOML_TOKENS))
            .expect("write");
        let project = in_time("broken-file load", || Project::load(dir.path(), &hooks))?;
        if !project.errors().is_empty() {
            for event in ["PreToolUse", "PermissionRequest"] {
                let eval = in_time("broken-file evaluate", || {
                    project.evaluate(event, payload, DispatchOptions::default())
                })?;
                let out = eval
                    .stdout
                    .expect("a broken file never leaves a guarded call silent");
                prop_assert!(
                    !out.contains("\"allow\""),
                    "approved with a file that did not load: {}",
                    out
                );
                prop_assert!(out.contains("a.toml"), "the answer names the file: {}", out);
            }
        }
    }
}

/// The edits reach both sides of the loader: files that still load and ones that break.
#[test]
fn the_hook_file_edits_explore_both_sides() {
    let mut runner = proptest::test_runner::TestRunner::new(config(200));
    let (mut loaded, mut refused) = (0, 0);
    for _ in 0..200 {
        let seed = proptest::sample::select(TOML_SEEDS)
            .new_tree(&mut runner)
            .expect("a seed")
            .current();
        let e = edits().new_tree(&mut runner).expect("edits").current();
        let text = String::from_utf8_lossy(&apply(seed.as_bytes(), &e, TOML_TOKENS)).into_owned();
        match load_str(&text, "fuzz", &mut Registry::new()) {
            Ok(()) => loaded += 1,
            Err(_) => refused += 1,
        }
    }
    assert!(
        loaded > 0 && refused > 0,
        "{loaded} loaded, {refused} refused"
    );
}

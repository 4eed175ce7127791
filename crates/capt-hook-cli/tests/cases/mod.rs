//! The behaviour cases as snapshot tests of the envelope.
//!
//! Plays every case of `tests/fixtures/conformance/{engine,session,code}.jsonl` (the repository's
//! copy of the external behaviour cases; `tests/fixtures/README.md` says where they come from)
//! and of `tests/cases/*.jsonl` (our own) the way the external case runner does (CI runs it in
//! `.ci/run`); nothing here reads outside the repository: a fresh project root holding the case's hooks in
//! `.claude/hooks/case.toml` and its `files`, `${ROOT}` substituted, each step sent to the built
//! `capt-hook run <Event>` with the runner's environment. Each step is checked against the case's
//! own `expect` exactly as the runner checks it, and every step's event, exit code and stdout are
//! recorded in one insta snapshot per case, `snapshots/cli__cases__<file>__<id>.snap`, with the
//! root written as `${ROOT}`. A changed answer fails here first; review it with
//! `cargo insta review`.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Project, bin, text, workspace};

/// How long one step may take before the runner gives up on the case.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn engine() {
    play_files(&[fixture("engine.jsonl")]);
}

#[test]
fn session() {
    play_files(&[fixture("session.jsonl")]);
}

#[test]
fn code() {
    play_files(&[fixture("code.jsonl")]);
}

/// Our own cases, every `tests/cases/*.jsonl`.
#[test]
fn ours() {
    let dir = workspace().join("tests/cases");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no case file in {}", dir.display());
    play_files(&files);
}

fn fixture(name: &str) -> PathBuf {
    workspace().join("tests/fixtures/conformance").join(name)
}

/// `ticket 2321ad947c02` as `ticket ${ID}`: an id hashes the time and process that minted it, so
/// the snapshot of a case that mints one would change on every run.
fn redact_ticket_ids(text: &str) -> String {
    const MARK: &str = "ticket ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        let (before, after) = rest.split_at(at + MARK.len());
        out.push_str(before);
        let id_len = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        let bounded = after
            .as_bytes()
            .get(id_len)
            .is_none_or(|b| !b.is_ascii_alphanumeric());
        if id_len == 12 && bounded {
            out.push_str("${ID}");
            rest = &after[id_len..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn ticket_ids_are_redacted() {
    assert_eq!(
        redact_ticket_ids("ticket 2321ad947c02 (x) covers; ticket 2321ad947c0 and ticket abc"),
        "ticket ${ID} (x) covers; ticket 2321ad947c0 and ticket abc"
    );
}

/// Plays every case of `files`, then fails naming each case that broke and why.
fn play_files(files: &[PathBuf]) {
    let mut failures = Vec::new();
    let mut played = 0;
    let mut ids = HashSet::new();
    for file in files {
        let source = std::fs::read_to_string(file).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (the behaviour cases are part of the repository: see tests/fixtures/README.md)",
                file.display()
            )
        });
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        for (number, line) in source.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let case = python_loads(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), number + 1));
            let id = case["id"].as_str().expect("a case has a string id");
            let about = case["about"].as_str().unwrap_or("");
            played += 1;
            if !ids.insert((stem.clone(), id.to_owned())) {
                failures.push(format!("FAIL {stem} {id}: a second case with this id"));
                continue;
            }
            let (mut problems, steps) = play(&case);
            if let Some(mismatch) = snapshot(&stem, id, about, &steps) {
                problems.push(mismatch);
            }
            if !problems.is_empty() {
                failures.push(format!(
                    "FAIL {stem} {id}: {about}\n{}",
                    problems
                        .iter()
                        .map(|p| format!("       {p}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                ));
            }
        }
    }
    assert!(played > 0, "no case in {files:?}");
    assert!(
        failures.is_empty(),
        "{} of {played} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Asserts the case's snapshot; a mismatch (insta prints its diff) comes back as a problem so
/// that the other cases still run.
fn snapshot(stem: &str, id: &str, about: &str, steps: &Value) -> Option<String> {
    let name = format!("{stem}__{id}");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_description(about);
    settings.set_omit_expression(true);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        settings.bind(|| insta::assert_json_snapshot!(name.as_str(), steps));
    }));
    outcome.err().map(|_| {
        format!("snapshot {name} is new or changed (the diff is above; `cargo insta review`)")
    })
}

/// Runs the case's steps in one fresh root; returns the problems found and the recorded steps.
fn play(case: &Value) -> (Vec<String>, Value) {
    let dir = tempfile::Builder::new()
        .prefix("capt-hook-case-")
        .tempdir()
        .unwrap();
    let project = Project { dir };
    let root = project.root().canonicalize().unwrap();
    let root_text = root.to_str().expect("a UTF-8 temporary directory");
    let hooks = root.join(".claude/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let toml = case["hooks"].as_str().unwrap_or("");
    std::fs::write(hooks.join("case.toml"), toml.replace("${ROOT}", root_text)).unwrap();
    write_files(&root, &substitute(&case["files"], root_text));
    std::fs::create_dir_all(root.join("home")).unwrap();

    // The runner's environment: its own minus every variable of ours or Claude Code's.
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            !["CLAUDE_", "CAPTAIN_HOOK_", "CAPT_HOOK_", "HOOKS_"]
                .iter()
                .any(|p| k.starts_with(p))
        })
        .collect();
    let mut set = |key: &str, value: String| {
        env.retain(|(k, _)| k != key);
        env.push((key.into(), value.into()));
    };
    set("HOME", format!("{root_text}/home"));
    set("CLAUDE_PROJECT_DIR", root_text.to_owned());
    set("CAPTAIN_HOOK_STATE_DIR", format!("{root_text}/state"));
    if let Value::Object(extra) = substitute(&case["env"], root_text) {
        for (key, value) in extra {
            set(&key, python_str(&value));
        }
    }

    let mut problems = Vec::new();
    let mut recorded = Vec::new();
    for (index, step) in case["steps"].as_array().unwrap().iter().enumerate() {
        let event = step["event"].as_str().unwrap();
        let payload = substitute(&step["payload"], root_text);
        let stdin = match &payload {
            Value::String(s) => s.clone(),
            other => python_dumps(other),
        };
        let Some((code, stdout, stderr)) = run(&root, event, &env, stdin) else {
            problems.push(format!("step {index}: no answer in 30 s"));
            break;
        };
        let mut found = check_step(&step["expect"], code, &stdout);
        // What `run --verbose` adds, here only to a step that failed.
        if !found.is_empty() && !stderr.trim().is_empty() {
            let stderr: String = stderr.trim().chars().take(400).collect();
            found.push(format!("stderr: {stderr}"));
        }
        problems.extend(found.into_iter().map(|p| format!("step {index}: {p}")));
        let shown = redact_ticket_ids(&stdout.trim().replace(root_text, "${ROOT}"));
        let stdout = if shown.is_empty() {
            Value::Null
        } else {
            python_loads(&shown).unwrap_or(Value::String(shown))
        };
        recorded.push(json!({"event": event, "exit_code": code, "stdout": stdout}));
    }
    (problems, Value::Array(recorded))
}

/// `capt-hook run <event>` in `root` with exactly `env`: the exit code (minus the signal for a
/// killed child, as Python reports it), stdout and stderr, or None after [`STEP_TIMEOUT`].
/// [`Project::run_env`] would add to the test's own environment and wait without a limit; the
/// runner replaces its environment and gives up after 30 s.
fn run(
    root: &Path,
    event: &str,
    env: &[(OsString, OsString)],
    stdin: String,
) -> Option<(i32, String, String)> {
    let mut child = Command::new(bin())
        .args(["run", event])
        .current_dir(root)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // A child that exits early closes its stdin; that is not our failure.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(stdin.as_bytes());
    });
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > STEP_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let _ = writer.join();
    let out = stdout.join().unwrap();
    let err = stderr.join().unwrap();
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        -status.signal().unwrap_or(0)
    });
    Some((code, text(&out), text(&err)))
}

/// The runner's `check_step`: the exit code, then `stdout` (null: nothing or `{}`; text: equal
/// after trimming; JSON: equal as Python compares), then each `stdout_contains` pointer's value,
/// as Python's `str()`, holding its substring.
fn check_step(expect: &Value, code: i32, stdout: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let want_code = expect.get("exit_code").map_or(Some(0), Value::as_i64);
    if want_code != Some(i64::from(code)) {
        problems.push(format!(
            "exit code {code}, expected {}",
            expect.get("exit_code").unwrap_or(&json!(0))
        ));
    }
    let out = stdout.trim();
    if let Some(want) = expect.get("stdout") {
        match want {
            Value::Null => {
                if !out.is_empty() && out != "{}" {
                    problems.push(format!("expected no output, got {out:?}"));
                }
            }
            Value::String(want) => {
                if out != want.trim() {
                    problems.push(format!("expected text {want:?}, got {out:?}"));
                }
            }
            want => {
                let got = if out.is_empty() {
                    Value::Null
                } else {
                    python_loads(out).unwrap_or_else(|e| {
                        problems.push(format!("stdout is not JSON ({e}): {out:?}"));
                        Value::Null
                    })
                };
                if !python_eq(&got, want) {
                    problems.push(format!("expected {want}, got {out:?}"));
                }
            }
        }
    }
    if let Some(Value::Object(contains)) = expect.get("stdout_contains") {
        for (path, needle) in contains {
            let found = python_loads(out).and_then(|doc| pointer(&doc, path));
            match (found, needle) {
                (Err(e), _) => problems.push(format!("{path}: {e}")),
                (Ok(_), needle) if !needle.is_string() => {
                    problems.push(format!(
                        "{path}: 'in <string>' requires string as left operand"
                    ));
                }
                (Ok(value), Value::String(needle)) => {
                    if !python_str(&value).contains(needle.as_str()) {
                        problems.push(format!("{path} = {value} lacks {needle:?}"));
                    }
                }
                (Ok(_), _) => unreachable!(),
            }
        }
    }
    problems
}

/// The runner's JSON pointer: empty parts skipped, `~1` and `~0` unescaped, list parts indexes.
fn pointer(doc: &Value, path: &str) -> Result<Value, String> {
    let mut doc = doc;
    for part in path.split('/').filter(|p| !p.is_empty()) {
        let part = part.replace("~1", "/").replace("~0", "~");
        doc = match doc {
            Value::Array(items) => {
                let index: i64 = part
                    .parse()
                    .map_err(|_| format!("invalid index {part:?}"))?;
                let at = if index < 0 {
                    items.len() as i64 + index
                } else {
                    index
                };
                usize::try_from(at)
                    .ok()
                    .and_then(|i| items.get(i))
                    .ok_or("list index out of range")?
            }
            Value::Object(map) => map.get(&part).ok_or_else(|| format!("'{part}'"))?,
            other => return Err(format!("{other} is not subscriptable by {part:?}")),
        };
    }
    Ok(doc.clone())
}

/// `${ROOT}` replaced in every string of `value` (not in object keys, as the runner does).
fn substitute(value: &Value, root: &str) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace("${ROOT}", root)),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, root)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, root)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The case's `files`: text as is, a list as JSON Lines, an object as JSON.
fn write_files(root: &Path, files: &Value) {
    let Value::Object(files) = files else { return };
    for (rel, content) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let body = match content {
            Value::Array(lines) => lines.iter().map(|l| python_dumps(l) + "\n").collect(),
            Value::Object(_) => python_dumps(content),
            other => python_str(other),
        };
        std::fs::write(path, body).unwrap();
    }
}

/// Where [`python_loads`] keeps a lone UTF-16 surrogate (`"\ud800"`), which Python reads and
/// a Rust string cannot hold: U+F0000 + (surrogate - U+D800), in a private use plane.
const LONE_SURROGATES: std::ops::RangeInclusive<char> = '\u{f0000}'..='\u{f07ff}';

/// JSON as Python's `json.loads` reads it, where `serde_json` would not: nesting deeper than
/// 128 and lone surrogates (kept as [`LONE_SURROGATES`]). Not NaN or Infinity, which no case uses.
fn python_loads(text: &str) -> Result<Value, String> {
    let mut reader = Reader { text, at: 0 };
    let value = reader.value()?;
    reader.space();
    match reader.at == text.len() {
        true => Ok(value),
        false => Err(format!("Extra data: char {}", reader.at)),
    }
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what}: char {}", self.at))
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += usize::from(found);
        found
    }

    fn value(&mut self) -> Result<Value, String> {
        self.space();
        let rest = &self.text[self.at..];
        for (word, value) in [
            ("true", json!(true)),
            ("false", json!(false)),
            ("null", Value::Null),
        ] {
            if rest.starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut map = serde_json::Map::new();
                self.space();
                if self.eat(b'}') {
                    return Ok(Value::Object(map));
                }
                loop {
                    self.space();
                    if self.peek() != Some(b'"') {
                        return self.fail("Expecting property name enclosed in double quotes");
                    }
                    let key = self.string()?;
                    self.space();
                    if !self.eat(b':') {
                        return self.fail("Expecting ':' delimiter");
                    }
                    let value = self.value()?;
                    map.insert(key, value);
                    self.space();
                    if self.eat(b'}') {
                        return Ok(Value::Object(map));
                    }
                    if !self.eat(b',') {
                        return self.fail("Expecting ',' delimiter");
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.space();
                if self.eat(b']') {
                    return Ok(Value::Array(items));
                }
                loop {
                    items.push(self.value()?);
                    self.space();
                    if self.eat(b']') {
                        return Ok(Value::Array(items));
                    }
                    if !self.eat(b',') {
                        return self.fail("Expecting ',' delimiter");
                    }
                }
            }
            Some(b'"') => self.string().map(Value::String),
            Some(b'-' | b'0'..=b'9') => {
                let len = rest
                    .find(|c: char| !matches!(c, '-' | '+' | '.' | 'e' | 'E' | '0'..='9'))
                    .unwrap_or(rest.len());
                self.at += len;
                match serde_json::from_str(&rest[..len]) {
                    Ok(Value::Number(n)) => Ok(Value::Number(n)),
                    _ => self.fail("Expecting value"),
                }
            }
            _ => self.fail("Expecting value"),
        }
    }

    /// A string from its opening quote; control characters are refused, as Python's strict mode.
    fn string(&mut self) -> Result<String, String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.at..];
            let plain = rest
                .find(|c: char| c == '"' || c == '\\' || c < ' ')
                .ok_or("Unterminated string")?;
            out.push_str(&rest[..plain]);
            self.at += plain;
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let escaped = self.peek().ok_or("Unterminated string")?;
                    self.at += 1;
                    out.push(match escaped {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode()?,
                        _ => return self.fail("Invalid \\escape"),
                    });
                }
                _ => return self.fail("Invalid control character"),
            }
        }
    }

    /// The code point of a `\uXXXX` escape (its `\u` read), joined with a following low
    /// surrogate; a lone surrogate becomes its [`LONE_SURROGATES`] stand-in.
    fn unicode(&mut self) -> Result<char, String> {
        let hex = |reader: &mut Self| -> Result<u32, String> {
            let digits = reader.text.get(reader.at..reader.at + 4).unwrap_or("");
            match u32::from_str_radix(digits, 16) {
                Ok(unit) if digits.len() == 4 && !digits.starts_with('+') => {
                    reader.at += 4;
                    Ok(unit)
                }
                _ => reader.fail("Invalid \\uXXXX escape"),
            }
        };
        let unit = hex(self)?;
        if (0xd800..0xdc00).contains(&unit) && self.text[self.at..].starts_with("\\u") {
            let back = self.at;
            self.at += 2;
            let low = hex(self)?;
            if (0xdc00..0xe000).contains(&low) {
                let code = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                return Ok(char::from_u32(code).unwrap());
            }
            self.at = back;
        }
        Ok(char::from_u32(unit).unwrap_or_else(|| {
            char::from_u32(*LONE_SURROGATES.start() as u32 + unit - 0xd800).unwrap()
        }))
    }
}

/// JSON as Python's `json.dumps` writes it by default: `", "` and `": "` separators, every
/// character outside ASCII escaped, so that what the binary reads is what the runner sends.
fn python_dumps(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => python_number(n),
        Value::String(s) => {
            let mut out = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
                    ' '..='~' => out.push(c),
                    c if LONE_SURROGATES.contains(&c) => {
                        let unit = 0xd800 + (c as u32 - *LONE_SURROGATES.start() as u32);
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                    c => {
                        let mut units = [0u16; 2];
                        for unit in c.encode_utf16(&mut units) {
                            out.push_str(&format!("\\u{unit:04x}"));
                        }
                    }
                }
            }
            out.push('"');
            out
        }
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(python_dumps)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!(
                    "{}: {}",
                    python_dumps(&Value::String(k.clone())),
                    python_dumps(v)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A number as Python's `repr`: integers as they are; floats shortest, with `.0` when whole and
/// an exponent (`1e-05`, `1e+16`) below 1e-4 or from 1e16.
fn python_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap();
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    if (-4..16).contains(&exp) {
        let plain = format!("{f}");
        if plain.contains('.') {
            plain
        } else {
            plain + ".0"
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// Python's `str()` of a decoded JSON value: strings as they are, `True`/`False`/`None`,
/// containers as their `repr`.
fn python_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => python_repr(other),
    }
}

fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => python_number(n),
        Value::String(s) => {
            let quote = if s.contains('\'') && !s.contains('"') {
                '"'
            } else {
                '\''
            };
            let mut out = String::from(quote);
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if c == quote => {
                        out.push('\\');
                        out.push(c);
                    }
                    c if LONE_SURROGATES.contains(&c) => {
                        let unit = 0xd800 + (c as u32 - *LONE_SURROGATES.start() as u32);
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                    c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                        out.push_str(&format!("\\x{:02x}", c as u32));
                    }
                    c => out.push(c),
                }
            }
            out.push(quote);
            out
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(python_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!(
                    "{}: {}",
                    python_repr(&Value::String(k.clone())),
                    python_repr(v)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Python's `==` over decoded JSON: numbers (and booleans, which are 0 and 1) by value, objects
/// whatever their key order.
fn python_eq(a: &Value, b: &Value) -> bool {
    let numeric = |v: &Value| match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.as_i64().is_some() && y.as_i64().is_some() => {
            x.as_i64() == y.as_i64()
        }
        (Value::Number(x), Value::Number(y)) if x.as_u64().is_some() && y.as_u64().is_some() => {
            x.as_u64() == y.as_u64()
        }
        (Value::Bool(_) | Value::Number(_), Value::Bool(_) | Value::Number(_)) => {
            numeric(a) == numeric(b)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| python_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| python_eq(v, w)))
        }
        _ => a == b,
    }
}

/// The helpers mirror Python where the cases could tell them apart.
#[test]
fn the_runner_helpers_write_and_compare_as_python_does() {
    let v = json!({"a": [1, 2.5, true, null], "é": "x\"\n😀"});
    assert_eq!(
        python_dumps(&v),
        r#"{"a": [1, 2.5, true, null], "\u00e9": "x\"\n\ud83d\ude00"}"#
    );
    for (f, py) in [
        (0.02, "0.02"),
        (2.0, "2.0"),
        (1e-5, "1e-05"),
        (1e16, "1e+16"),
    ] {
        assert_eq!(python_number(&serde_json::Number::from_f64(f).unwrap()), py);
    }
    assert_eq!(python_str(&json!(true)), "True");
    assert_eq!(python_str(&json!({"k": ["it's"]})), r#"{'k': ["it's"]}"#);
    assert!(python_eq(
        &json!({"a": 1, "b": true}),
        &json!({"b": 1, "a": 1.0})
    ));
    assert!(!python_eq(&json!("1"), &json!(1)));
    let deep = format!(
        "{}\"\\ud800 \\ud83d\\ude00\"{}",
        "[".repeat(300),
        "]".repeat(300)
    );
    let read = python_loads(&deep).unwrap();
    assert_eq!(python_dumps(&read), deep);
    assert_eq!(python_str(&json!(["\u{f0000}"])), r"['\ud800']");
    assert!(python_loads("[1] x").is_err() && python_loads("\"a\tb\"").is_err());
    assert_eq!(
        pointer(&json!({"a/b": [0, {"c": 7}]}), "/a~1b/1/c"),
        Ok(json!(7))
    );
}

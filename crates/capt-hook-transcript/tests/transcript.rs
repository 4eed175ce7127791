//! Transcripts on disk: conformance-shaped sessions with subagents, the incremental cache, and
//! the cost of reading big files.
//!
//! The measurements print (run with `--nocapture`, ideally `--release`); they assert behaviour,
//! never timings. The 50 MB read runs in a child process (this binary re-executed with
//! `CAPT_HOOK_TRANSCRIPT_TEST_CHILD` set) so its peak RSS is its own.

// A test fails by panicking: unwrap and expect are how it says what broke.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capt_hook_transcript::{
    CommandMatcher, DEFAULT_WAITING_TOOLS, LazyTranscript, Scope, ToolCall, Transcript,
    TranscriptCache, split_argvs,
};
use serde_json::{Value, json};

const CHILD: &str = "CAPT_HOOK_TRANSCRIPT_TEST_CHILD";
const FILE: &str = "CAPT_HOOK_TRANSCRIPT_TEST_FILE";

fn envelope(mut v: Value, n: usize, sidechain: bool) -> Value {
    v["uuid"] = json!(format!("00000000-0000-0000-0000-{n:012}"));
    v["sessionId"] = json!("sess");
    v["timestamp"] = json!("2026-07-20T10:00:00.000Z");
    v["isSidechain"] = json!(sidechain);
    v
}

fn prompt(text: &str) -> Value {
    json!({"type": "user", "message": {"role": "user", "content": text}})
}

fn text(text: &str) -> Value {
    json!({"type": "assistant", "message": {"role": "assistant", "model": "m", "content": [{"type": "text", "text": text}]}})
}

fn tool(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "assistant", "message": {"role": "assistant", "model": "m", "content": [
        {"type": "tool_use", "id": id, "name": name, "input": input}]}})
}

fn output(id: &str, content: &str, tool_use_result: Value) -> Value {
    json!({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": id, "content": content}]}, "toolUseResult": tool_use_result})
}

fn write_jsonl(path: &Path, lines: &[Value], sidechain: bool) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::File::create(path).unwrap();
    for (i, l) in lines.iter().enumerate() {
        writeln!(f, "{}", envelope(l.clone(), i, sidechain)).unwrap();
    }
}

/// A session where the main agent reads, a subagent edits and reads, like conformance CS29/CS30.
fn session_with_subagent(dir: &Path) -> PathBuf {
    let main = dir.join("sess.jsonl");
    write_jsonl(
        &main,
        &[
            prompt("Add an email field to the user API."),
            tool("r1", "Read", json!({"file_path": "/repo/README.md"})),
            output("r1", "# repo", json!({"type": "text"})),
            tool(
                "a1",
                "Agent",
                json!({"prompt": "Add `email`.", "subagent_type": "coder"}),
            ),
            output(
                "a1",
                "Added.",
                json!({"status": "completed", "agentId": "f0ae"}),
            ),
            text("The worker added the email field."),
            prompt("Now the docs."),
            tool("g1", "Grep", json!({"pattern": "x", "path": "/repo/docs"})),
            output("g1", "none", json!({})),
        ],
        false,
    );
    write_jsonl(
        &dir.join("sess/subagents/agent-f0ae.jsonl"),
        &[
            prompt("Add `email`."),
            tool(
                "s1",
                "Edit",
                json!({"file_path": "/repo/app/api/users.py", "old_string": "a", "new_string": "b"}),
            ),
            output("s1", "ok", json!({})),
            tool("s2", "Read", json!({"file_path": "/repo/docs/style.md"})),
            output("s2", "# Style", json!({})),
            tool("s3", "Bash", json!({"command": "cd app && sudo pytest -q"})),
            output("s3", "1 passed", json!({})),
            text("Added email."),
        ],
        true,
    );
    // Ignored: AppleDouble files and other extensions.
    std::fs::write(dir.join("sess/subagents/._agent-f0ae.jsonl"), "junk").unwrap();
    std::fs::write(dir.join("sess/subagents/notes.txt"), "junk").unwrap();
    main
}

#[test]
fn conditions_see_subagents_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let t = Transcript::load(session_with_subagent(dir.path())).unwrap();
    assert_eq!(t.subagents().len(), 1);
    assert_eq!(t.subagents()[0].agent_id(), "f0ae");
    let s = t.session();
    // touched_file: main agent only.
    assert!(!s.has_edit_to("**/api/*.py"));
    // read_file and ran_command include sidechains.
    assert!(s.with_subagents().has_read("**/docs/*.md"));
    assert!(!s.has_read("**/docs/*.md"));
    assert!(s.with_subagents().has_command(&["pytest"]));
    assert!(!s.has_command(&["pytest"]));
    // A turn-scoped window reads only the subagents it launched.
    assert_eq!(t.scope(Scope::Turn).user_text(), "Now the docs.");
    assert!(
        !t.scope(Scope::Turn)
            .with_subagents()
            .has_command(&["pytest"])
    );
    let first_turn = s.turns()[0].window();
    assert!(first_turn.with_subagents().has_command(&["pytest"]));
    assert_eq!(
        first_turn.with_subagents().tool_calls().main_only().count(),
        2
    );
    // The subagent's own transcript is one turn; its calls pair with its results.
    let sub = t.subagent("f0ae").unwrap().transcript();
    assert_eq!(sub.turn_count(), 1);
    assert_eq!(
        sub.tool_calls()
            .named("Bash")
            .first()
            .unwrap()
            .result()
            .unwrap()
            .content(),
        "1 passed"
    );
}

#[test]
fn lazy_transcripts_read_on_first_use_only() {
    let dir = tempfile::tempdir().unwrap();
    let lazy = LazyTranscript::new(Some(dir.path().join("missing.jsonl")));
    assert!(!lazy.is_loaded());
    assert!(lazy.get().is_empty());
    assert!(lazy.error().unwrap().to_string().contains("missing.jsonl"));
    assert!(LazyTranscript::new(None).get().is_empty());
    assert!(LazyTranscript::new(None).error().is_none());
    let ready = LazyTranscript::ready(Transcript::from_jsonl(
        r#"{"type":"user","message":{"content":"x"}}"#,
    ));
    assert_eq!(ready.get().len(), 1);
}

/// A matcher that splits each command line once and keeps the split on the call, the way the
/// engine's shell-parser matcher is meant to.
fn memo_matcher() -> Arc<dyn CommandMatcher> {
    Arc::new(|call: &ToolCall, argv: &[&str]| {
        let parsed = call.memo(|c| split_argvs(c.command().unwrap_or("")));
        parsed
            .iter()
            .any(|words| words.len() >= argv.len() && words.iter().zip(argv).all(|(a, b)| a == b))
    })
}

#[test]
fn the_cache_reads_only_appended_lines_and_notices_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    write_jsonl(
        &path,
        &[prompt("go"), tool("b1", "Bash", json!({"command": "ls"}))],
        false,
    );
    let cache = TranscriptCache::new(Some(memo_matcher()), 4);
    let first = cache.load(&path).unwrap();
    assert_eq!(first.len(), 2);
    assert!(!first.session().has_command(&["pytest"]));
    drop(first);

    // Append a finished line and half of the next one (a write in progress).
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "{}", envelope(output("b1", "a b", json!({})), 9, false)).unwrap();
    let next = envelope(
        tool("b2", "Bash", json!({"command": "pytest -q"})),
        10,
        false,
    )
    .to_string();
    let (head, tail) = next.split_at(next.len() / 2);
    write!(f, "{head}").unwrap();
    f.flush().unwrap();
    let second = cache.load(&path).unwrap();
    assert_eq!(second.len(), 3);
    assert_eq!(second.skipped_lines(), 0);
    // The first call's memo survived the incremental read.
    assert!(
        matches!(second.calls()[0].memo(|_| Vec::<Vec<String>>::new()), capt_hook_transcript::Memo::Cached(v) if v[0] == ["ls"])
    );
    writeln!(f, "{tail}").unwrap();
    let third = cache.load(&path).unwrap();
    assert_eq!(third.len(), 4);
    assert!(third.session().has_command(&["pytest"]));
    // The older snapshot still sees what it saw.
    assert_eq!(second.len(), 3);

    // A rewritten file (same size or not) is read from scratch.
    write_jsonl(&path, &[prompt("other session")], false);
    let fresh = cache.load(&path).unwrap();
    assert_eq!(fresh.len(), 1);
    assert_eq!(fresh.current_turn().user_text(), "other session");
    std::fs::remove_file(&path).unwrap();
    assert!(cache.load(&path).is_err());
    assert!(cache.len() <= 4);
}

#[test]
fn the_cache_keeps_at_most_its_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let cache = TranscriptCache::new(None, 2);
    for i in 0..5 {
        let p = dir.path().join(format!("{i}.jsonl"));
        write_jsonl(&p, &[prompt("x")], false);
        cache.load(&p).unwrap();
    }
    assert_eq!(cache.len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Measurements.

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// Writes a realistic transcript of at least `target` bytes: prompts, thinking, Bash with long
/// outputs, Reads of big files, Edits whose results carry `originalFile`, progress lines,
/// pasted images. Returns (bytes, lines).
fn generate(path: &Path, target: u64, entries_cap: usize) -> (u64, usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut written = 0u64;
    let mut n = 0usize;
    let file_body: String = (0..120)
        .map(|i| format!("    line_{i} = compute({i})  # comment\n"))
        .collect();
    let bash_out: String = (0..60)
        .map(|i| format!("tests/test_mod_{i}.py::test_case PASSED\n"))
        .collect();
    let image = "iVBORw0KGgo".repeat(20_000);
    let emit = |v: Value, f: &mut std::io::BufWriter<std::fs::File>, n: &mut usize| {
        let line = envelope(v, *n, false).to_string();
        writeln!(f, "{line}").unwrap();
        *n += 1;
        line.len() as u64 + 1
    };
    let mut turn = 0;
    while written < target && n < entries_cap {
        turn += 1;
        written += emit(
            prompt(&format!(
                "Turn {turn}: refactor module {turn} and run the tests"
            )),
            &mut f,
            &mut n,
        );
        if turn % 100 == 0 {
            let img = json!({"type": "user", "message": {"content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}},
                {"type": "text", "text": "see screenshot"}]}});
            written += emit(img, &mut f, &mut n);
        }
        written += emit(
            json!({"type": "assistant", "message": {"model": "m", "content": [
                {"type": "thinking", "thinking": "Let me look at the module first and then edit it carefully."},
                {"type": "text", "text": "I'll read the module."}]}}),
            &mut f,
            &mut n,
        );
        let id = format!("toolu_r{turn}");
        written += emit(
            tool(
                &id,
                "Read",
                json!({"file_path": format!("/repo/src/mod_{turn}.py")}),
            ),
            &mut f,
            &mut n,
        );
        written += emit(
            output(
                &id,
                &file_body,
                json!({"type": "text", "file": {"content": file_body}}),
            ),
            &mut f,
            &mut n,
        );
        let id = format!("toolu_e{turn}");
        let target_file = if turn % 3 == 0 {
            format!("/repo/tests/test_mod_{turn}.py")
        } else {
            format!("/repo/src/mod_{turn}.py")
        };
        written += emit(
            tool(
                &id,
                "Edit",
                json!({"file_path": target_file, "old_string": &file_body[..600], "new_string": &file_body[..700]}),
            ),
            &mut f,
            &mut n,
        );
        written += emit(
            output(
                &id,
                "The file has been updated.",
                json!({"filePath": target_file, "originalFile": file_body, "structuredPatch": []}),
            ),
            &mut f,
            &mut n,
        );
        written += emit(
            json!({"type": "progress", "data": {"type": "hook_progress", "hookName": "PostToolUse"}}),
            &mut f,
            &mut n,
        );
        let id = format!("toolu_b{turn}");
        let cmd = if turn % 2 == 0 {
            "cd /repo && uv run ruff check src/"
        } else {
            "FOO=1 timeout 60 make lint | tee /tmp/log"
        };
        written += emit(
            tool(
                &id,
                "Bash",
                json!({"command": cmd, "description": "Run checks"}),
            ),
            &mut f,
            &mut n,
        );
        written += emit(
            output(&id, &bash_out, json!({"stdout": bash_out, "stderr": ""})),
            &mut f,
            &mut n,
        );
        written += emit(text("Done with this module."), &mut f, &mut n);
    }
    f.flush().unwrap();
    (written, n)
}

#[test]
#[ignore = "entry point of the child processes other tests start"]
fn child() {
    let Ok(mode) = std::env::var(CHILD) else {
        return;
    };
    let path = PathBuf::from(std::env::var(FILE).unwrap());
    match mode.as_str() {
        "big" => {
            let before = status_kb("VmRSS:");
            let started = Instant::now();
            let lazy = TranscriptCache::default().lazy(Some(path.clone()));
            let t = lazy.get();
            let parsed = started.elapsed();
            let q = Instant::now();
            let tests_edited = t.tool_calls().named("Edit").touching("test_*.py").count();
            let ran = t.session().with_subagents().has_command(&["pytest"]);
            let waiting = t.waiting(DEFAULT_WAITING_TOOLS).is_waiting();
            let prose = t.session().prose_text().len();
            let said = t
                .scope(Scope::Session)
                .prompts()
                .filter(|p| p.contains("refactor"))
                .count();
            let queried = q.elapsed();
            println!(
                "MEASURE 50MB: {} entries, {} calls; parse {parsed:?}, queries {queried:?} \
                 (edits to tests {tests_edited}, ran pytest {ran}, waiting {waiting}, prose {prose} B, \
                 prompts {said}); RSS before {before} kB, VmHWM {} kB",
                t.len(),
                t.calls().len(),
                status_kb("VmHWM:")
            );
            assert!(tests_edited > 0 && !ran && !waiting && said > 0);
        }
        other => panic!("unknown child mode {other}"),
    }
}

#[test]
fn a_50_mb_transcript_is_read_in_one_streaming_pass() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let (bytes, lines) = generate(&path, 50 * 1024 * 1024, usize::MAX);
    assert!(bytes >= 50 * 1024 * 1024);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
            "--quiet",
        ])
        .env(CHILD, "big")
        .env(FILE, &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("MEASURE"))
        .unwrap_or("no measurement");
    println!("{} MB in {lines} lines. {line}", bytes / (1024 * 1024));
}

#[test]
fn cost_of_ran_command_on_10000_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let (_, lines) = generate(&path, u64::MAX, 10_000);
    let cache = TranscriptCache::new(Some(memo_matcher()), 8);
    let time = |f: &dyn Fn() -> bool| {
        let t0 = Instant::now();
        let r = f();
        (t0.elapsed(), r)
    };

    // First event of a worker: read the file, split every command once.
    let (first, ran) = time(&|| {
        cache
            .lazy(Some(path.clone()))
            .get()
            .session()
            .has_command(&["pytest"])
    });
    assert!(!ran);
    // The same event asking again: parsed lines and split commands are reused.
    let lazy = cache.lazy(Some(path.clone()));
    let t = lazy.get();
    let (again, _) = time(&|| t.session().has_command(&["pytest"]));
    // Next event: four lines were appended; only those are read.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for (i, v) in [
        prompt("and now pytest"),
        tool("toolu_last", "Bash", json!({"command": "sudo pytest -x"})),
        output("toolu_last", "ok", json!({})),
        text("ok"),
    ]
    .into_iter()
    .enumerate()
    {
        writeln!(f, "{}", envelope(v, lines + i, false)).unwrap();
    }
    drop(f);
    drop(lazy);
    let (next, ran) = time(&|| {
        cache
            .lazy(Some(path.clone()))
            .get()
            .session()
            .has_command(&["pytest"])
    });
    assert!(ran);
    // Without the cache: every event reads and splits everything.
    let (uncached, _) = time(&|| {
        LazyTranscript::new(Some(path.clone()))
            .get()
            .session()
            .has_command(&["pytest"])
    });
    let bash = Transcript::load(&path)
        .unwrap()
        .tool_calls()
        .named("Bash")
        .count();
    println!(
        "MEASURE ran_command over {} entries ({bash} Bash calls): first event {first:?}, same event again {again:?}, \
         next event after 4 appended lines {next:?}, uncached event {uncached:?}",
        lines + 4
    );
    assert!(again <= first + Duration::from_millis(50));
}

//! Every fixture payload, read as Claude Code's and answered with each kind of verdict our engine
//! gives, snapshotted per agent; plus the rules that must hold whatever the snapshots say.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use capt_hook_agents::{Agent, Answer, Normalised, Verdict, normalise, passes_through, render};
use capt_hook_core::envelope::typed::verdict;
use capt_hook_core::envelope::{Output, Unchecked, envelope};
use capt_hook_core::{EventKind, HookResult};
use serde_json::{Map, Value, json};

fn fixtures(agent: Agent) -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(agent.name());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let stem = p.file_stem().unwrap().to_str().unwrap().to_owned();
            let text = std::fs::read_to_string(&p).unwrap();
            (stem, serde_json::from_str(&text).unwrap())
        })
        .collect()
}

fn event_of(stem: &str) -> &str {
    stem.split("--").next().unwrap()
}

/// What the engine prints for `out` (what Claude Code gets as it stands).
fn printed(out: Option<&Output>) -> Answer {
    match out {
        None => Answer::default(),
        Some(Output::Exit2(reason)) => Answer {
            stderr: reason.clone(),
            exit: 2,
            ..Answer::default()
        },
        Some(o) => Answer {
            stdout: o.render(),
            ..Answer::default()
        },
    }
}

/// One answer of ours: as printed for Claude Code, and as the typed verdict the other agents'
/// answers are rendered from.
#[derive(Clone)]
struct Said {
    printed: Answer,
    verdict: Verdict,
}

/// Our engine's answer of each kind to `payload`, as capt-hook-core's envelope gives it (the ask
/// on the events where the client's last resort asks too).
fn ours(kind: EventKind, payload: &Value) -> Vec<(&'static str, Said)> {
    let answer = |out: Option<Output>| Said {
        printed: printed(out.as_ref()),
        verdict: verdict(kind, out.as_ref()),
    };
    let mut rewritten: Map<String, Value> = payload["tool_input"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if rewritten.contains_key("command") {
        rewritten.insert(
            "command".into(),
            "git stash push --include-untracked".into(),
        );
    } else if rewritten.contains_key("content") {
        rewritten.insert("content".into(), "RATE = 0.25\n".into());
    } else {
        rewritten.insert("new_string".into(), "return math.fsum(items)".into());
    }
    let mut out = vec![
        (
            "block",
            answer(envelope(
                kind,
                Some(&HookResult::block(
                    "git stash hides work; commit it on a branch",
                )),
            )),
        ),
        (
            "warn",
            answer(envelope(
                kind,
                Some(&HookResult::warn("this touches shared state")),
            )),
        ),
        ("allow", answer(envelope(kind, Some(&HookResult::allow())))),
        (
            "rewrite",
            answer(envelope(kind, Some(&HookResult::rewrite(rewritten, None)))),
        ),
        (
            "notice",
            answer(envelope(
                kind,
                Some(&HookResult::allow().with_system_message("capt-hook 0.2 is out")),
            )),
        ),
        (
            "failed",
            Said {
                printed: Answer {
                    stderr: "worker crashed\n".into(),
                    exit: 1,
                    ..Answer::default()
                },
                verdict: Verdict::failed(
                    kind,
                    "capt-hook could not check this call (exit 1): worker crashed".into(),
                ),
            },
        ),
    ];
    let why = "capt-hook could not check this call";
    if capt_hook_proto::failure::last_resort(kind.name(), why).is_some() {
        out.push(("ask", answer(Unchecked::because(why).output(kind))));
    }
    out
}

fn shown(a: &Answer) -> Value {
    let stdout =
        serde_json::from_str::<Value>(&a.stdout).unwrap_or(Value::String(a.stdout.clone()));
    json!({"stdout": stdout, "stderr": a.stderr, "exit": a.exit})
}

fn rendered(n: &Normalised) -> Value {
    let Some(kind) = n.ours else {
        return Value::Null;
    };
    let first = n.payloads.first().cloned().unwrap_or(Value::Null);
    let mut all = Map::new();
    for (name, a) in ours(kind, &first) {
        let r = if passes_through(n, n.payloads.len()) {
            a.printed
        } else {
            render(n, &vec![a.verdict; n.payloads.len()]).unwrap()
        };
        all.insert(name.into(), shown(&r));
    }
    Value::Object(all)
}

fn snapshot_agent(agent: Agent) {
    for (stem, payload) in fixtures(agent) {
        let n = normalise(agent, Some(event_of(&stem)), &payload)
            .unwrap_or_else(|e| panic!("{}/{stem}: {e}", agent.name()));
        let value = json!({
            "event": n.event,
            "ours": n.ours.map(EventKind::name),
            "tool": n.tool,
            "payloads": n.payloads,
            "answers": rendered(&n),
        });
        insta::assert_json_snapshot!(format!("{}__{stem}", agent.name()), value);
    }
}

#[test]
fn claude() {
    snapshot_agent(Agent::Claude);
}

#[test]
fn codex() {
    snapshot_agent(Agent::Codex);
}

#[test]
fn factory() {
    snapshot_agent(Agent::Factory);
}

#[test]
fn gemini() {
    snapshot_agent(Agent::Gemini);
}

#[test]
fn cursor() {
    snapshot_agent(Agent::Cursor);
}

#[test]
fn copilot() {
    snapshot_agent(Agent::Copilot);
}

/// Claude Code gets our answer byte for byte (the worker sends the printed envelope); no
/// other agent does.
#[test]
fn claude_answers_pass_through() {
    for (stem, payload) in fixtures(Agent::Claude) {
        let n = normalise(Agent::Claude, Some(event_of(&stem)), &payload).unwrap();
        assert_eq!(
            n.payloads,
            vec![payload.clone()],
            "{stem}: the payload is kept"
        );
        assert!(passes_through(&n, 1), "{stem}");
    }
    for agent in [Agent::Codex, Agent::Gemini, Agent::Factory] {
        for (stem, payload) in fixtures(agent) {
            let n = normalise(agent, Some(event_of(&stem)), &payload).unwrap();
            assert!(!passes_through(&n, 1), "{stem}");
        }
    }
}

/// The fields Codex 0.169 accepts in an answer, per event (its output schemas refuse any
/// other, and a refused answer lets the call run): top level, then `hookSpecificOutput`.
fn codex_accepts(event: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match event {
        "PreToolUse" => (
            &["hookSpecificOutput", "systemMessage"],
            &[
                "hookEventName",
                "permissionDecision",
                "permissionDecisionReason",
                "updatedInput",
                "additionalContext",
            ],
        ),
        "PermissionRequest" => (
            &["hookSpecificOutput", "systemMessage"],
            &["hookEventName", "decision"],
        ),
        "PostToolUse" | "UserPromptSubmit" => (
            &[
                "decision",
                "reason",
                "hookSpecificOutput",
                "systemMessage",
                "continue",
                "stopReason",
            ],
            &["hookEventName", "additionalContext"],
        ),
        "SessionStart" | "SubagentStart" => (
            &[
                "hookSpecificOutput",
                "systemMessage",
                "continue",
                "stopReason",
            ],
            &["hookEventName", "additionalContext"],
        ),
        "Stop" | "SubagentStop" => (
            &[
                "decision",
                "reason",
                "systemMessage",
                "continue",
                "stopReason",
            ],
            &[],
        ),
        _ => (&["systemMessage", "continue", "stopReason"], &[]),
    }
}

#[test]
fn codex_is_only_sent_fields_it_accepts() {
    for (stem, payload) in fixtures(Agent::Codex) {
        let event = event_of(&stem);
        let n = normalise(Agent::Codex, Some(event), &payload).unwrap();
        let (top, inner) = codex_accepts(event);
        for (verdict, a) in ours(n.ours.unwrap(), &n.payloads[0]) {
            let r = render(&n, &vec![a.verdict; n.payloads.len()]).unwrap();
            assert_eq!(r.exit, 0, "{stem} {verdict}");
            if r.stdout.is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(&r.stdout).unwrap();
            for k in v.as_object().unwrap().keys() {
                assert!(top.contains(&k.as_str()), "{stem} {verdict}: `{k}` in {v}");
            }
            if let Some(h) = v.get("hookSpecificOutput") {
                for k in h.as_object().unwrap().keys() {
                    assert!(
                        inner.contains(&k.as_str()),
                        "{stem} {verdict}: `{k}` in {v}"
                    );
                }
                assert_eq!(h["hookEventName"], event, "{stem} {verdict}");
                // Codex refuses an ask, and an allow without updatedInput.
                let d = h.get("permissionDecision").and_then(Value::as_str);
                assert_ne!(d, Some("ask"), "{stem} {verdict}");
                if d == Some("allow") {
                    assert!(h.get("updatedInput").is_some(), "{stem} {verdict}");
                }
                if d == Some("deny") {
                    let reason = h["permissionDecisionReason"].as_str().unwrap();
                    assert!(!reason.trim().is_empty(), "{stem} {verdict}");
                }
            }
            if v.get("decision").is_some() {
                assert_eq!(v["decision"], "block");
                assert!(!v["reason"].as_str().unwrap().trim().is_empty());
            }
        }
    }
}

fn decide(agent: Agent, stem: &str, verdict: &str) -> Value {
    let payload = fixtures(agent)
        .into_iter()
        .find(|(s, _)| s == stem)
        .unwrap()
        .1;
    let n = normalise(agent, Some(event_of(stem)), &payload).unwrap();
    let (_, a) = ours(n.ours.unwrap(), &n.payloads[0])
        .into_iter()
        .find(|(v, _)| *v == verdict)
        .unwrap();
    let r = render(&n, &vec![a.verdict; n.payloads.len()]).unwrap();
    serde_json::from_str(&r.stdout).unwrap_or(Value::Null)
}

/// A deny stays a deny; an ask without ask becomes a deny; a rewrite the agent cannot apply is
/// refused naming the command to run instead.
#[test]
fn what_an_agent_cannot_express_fails_closed() {
    let codex_ask = decide(Agent::Codex, "PreToolUse--bash", "ask");
    assert_eq!(
        codex_ask["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    let patch = decide(Agent::Codex, "PreToolUse--apply_patch", "rewrite");
    assert_eq!(patch["hookSpecificOutput"]["permissionDecision"], "deny");
    let bash = decide(Agent::Codex, "PreToolUse--bash", "rewrite");
    assert_eq!(
        bash["hookSpecificOutput"]["updatedInput"]["command"],
        "git stash push --include-untracked"
    );
    assert_eq!(
        decide(Agent::Codex, "PreToolUse--bash", "allow"),
        Value::Null
    );

    let gemini = decide(Agent::Gemini, "BeforeTool--run_shell_command", "block");
    assert_eq!(
        gemini["decision"], "deny",
        "Gemini reads its own shape only"
    );
    let gemini_stop = decide(Agent::Gemini, "AfterAgent", "block");
    assert_eq!(gemini_stop["decision"], "deny");

    let copilot = decide(Agent::Copilot, "preToolUse--bash", "rewrite");
    assert_eq!(copilot["permissionDecision"], "deny");
    let reason = copilot["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.ends_with("run this instead: git stash push --include-untracked"),
        "{reason}"
    );
    let copilot_failed = decide(Agent::Copilot, "preToolUse--bash", "failed");
    assert_eq!(
        copilot_failed["permissionDecision"], "deny",
        "a failed check never passes"
    );

    let cursor = decide(Agent::Cursor, "beforeShellExecution", "ask");
    assert_eq!(cursor["permission"], "ask");
    let cursor_stop = decide(Agent::Cursor, "stop", "block");
    assert!(cursor_stop["followup_message"].is_string());
}

/// A Codex fixture (by its file stem), read by the adapter.
fn codex_fixture(stem: &str) -> Normalised {
    let payload = fixtures(Agent::Codex)
        .into_iter()
        .find(|(s, _)| s == stem)
        .unwrap()
        .1;
    normalise(Agent::Codex, None, &payload).unwrap()
}

/// The tool of each Claude Code payload an event became, in order.
fn tool_names(n: &Normalised) -> Vec<&str> {
    n.payloads
        .iter()
        .map(|p| p["tool_name"].as_str().unwrap())
        .collect()
}

/// Codex 0.169 applies a shell command that is `apply_patch <<'EOF'` itself, and sends its hooks
/// that call as `Bash`: it is checked as the command and as the files its patch writes, so a
/// rule on edited files refuses it as it refuses the `apply_patch` tool's call.
#[test]
fn a_patch_run_through_codexs_shell_is_checked_as_a_patch_too() {
    let n = codex_fixture("PreToolUse--bash_apply_patch");
    let tools = tool_names(&n);
    assert_eq!(tools, ["Bash", "Write"]);
    assert_eq!(
        n.payloads[1]["tool_input"],
        json!({"file_path": "/home/dev/shop/src/report.py",
            "content": "def report(total):\n    print(total)\n"})
    );
    let out = envelope(
        EventKind::PreToolUse,
        Some(&HookResult::block("no print() in library code")),
    );
    let block = verdict(EventKind::PreToolUse, out.as_ref());
    let r = render(&n, &[Verdict::default(), block]).unwrap();
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecisionReason"],
        "no print() in library code"
    );

    // Through `exec_command`, after a `cd`: the paths are the directory's.
    let cd = json!({"cwd": "/home/dev/shop", "turn_id": "3", "tool_name": "exec_command",
        "tool_input": {"cmd": "cd pkg && apply_patch <<'EOF'\n*** Begin Patch\n\
            *** Delete File: old.py\n*** End Patch\nEOF\n"}});
    let n = normalise(Agent::Codex, Some("PreToolUse"), &cd).unwrap();
    assert_eq!(n.payloads.len(), 2);
    assert_eq!(n.payloads[1]["tool_input"]["command"], "rm -- old.py");
    // A broken patch there is an error naming it, as for the tool (fail closed).
    let broken = json!({"cwd": "/w", "tool_name": "Bash",
        "tool_input": {"command": "apply_patch <<'EOF'\noops\nEOF\n"}});
    let e = normalise(Agent::Codex, Some("PreToolUse"), &broken).unwrap_err();
    assert!(e.to_string().contains("apply_patch line 1"), "{e}");
    // Any other command is one Bash call, as before.
    let plain = json!({"cwd": "/w", "tool_name": "Bash",
        "tool_input": {"command": "grep -n apply_patch notes.txt"}});
    assert_eq!(
        normalise(Agent::Codex, Some("PreToolUse"), &plain)
            .unwrap()
            .payloads
            .len(),
        1
    );
}

/// One refused file refuses the whole patch.
#[test]
fn a_patch_is_as_strict_as_its_strictest_file() {
    let n = codex_fixture("PreToolUse--apply_patch");
    let tools = tool_names(&n);
    assert_eq!(tools, ["Edit", "Write", "Bash"]);
    assert_eq!(
        n.payloads[0]["tool_input"]["file_path"],
        "/home/dev/shop/src/cart.py"
    );
    let out = envelope(
        EventKind::PreToolUse,
        Some(&HookResult::block("notes are kept")),
    );
    let block = verdict(EventKind::PreToolUse, out.as_ref());
    let r = render(&n, &[Verdict::default(), Verdict::default(), block]).unwrap();
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecisionReason"],
        "notes are kept"
    );
}

/// `docs/agents.md` is the matrix the tables generate. `CAPT_HOOK_BLESS=1` rewrites it.
#[test]
fn docs_agents_md_is_generated_from_the_tables() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/agents.md");
    let want = capt_hook_agents::matrix::markdown() + "\n";
    if std::env::var_os("CAPT_HOOK_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/agents.md differs from the adapter tables; run `CAPT_HOOK_BLESS=1 cargo test -p \
         capt-hook-agents` and review the diff"
    );
}

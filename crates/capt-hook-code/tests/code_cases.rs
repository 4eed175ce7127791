//! The code-aware cases of `conformance/code.jsonl`, played against this crate's API the
//! way the hook kinds are meant to use it (the file guards are emulated here in a few lines),
//! plus the lint timing probe.
//!
//! The cases are read from the repository's copy, `tests/fixtures/conformance/code.jsonl`
//! (`tests/fixtures/README.md` says where it comes from); a missing file fails the case test.

// A test fails by panicking: unwrap and expect are how it says what broke.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Instant;

use capt_hook_code::{
    AnyLangPattern, CodePattern, CommandRewrite, Lang, StyleRule, changed_lines, check_style,
    diff_lint, format_style_report, format_violations, is_structural, lint_pattern, lint_regex,
    rewrite_code,
};
use serde_json::Value;

const ROOT: &str = "/project";

/// The repository's copy of the external spec files (`tests/fixtures/`).
fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn cases_file() -> Option<PathBuf> {
    let path = fixtures().join("conformance/code.jsonl");
    path.exists().then_some(path)
}

/// What one hook produced for one step.
#[derive(Debug, PartialEq)]
enum Outcome {
    Warn(String),
    Block(String),
    Rewrite {
        field: &'static str,
        text: String,
    },
    /// `stdout_contains`: the rewritten field holds this text.
    RewriteContains {
        field: &'static str,
        text: String,
    },
}

impl Outcome {
    fn accepts(&self, got: &Outcome) -> bool {
        match (self, got) {
            (
                Outcome::RewriteContains { field, text },
                Outcome::Rewrite {
                    field: got_field,
                    text: got_text,
                },
            ) => field == got_field && got_text.contains(text.as_str()),
            _ => self == got,
        }
    }
}

fn is_test_file(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    base.contains(".test.")
        || base.contains(".spec.")
        || base.ends_with("_test.go")
        || base.ends_with("_test.py")
        || (base.starts_with("test_") && base.ends_with(".py"))
}

fn str_of<'a>(v: &'a toml::Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(toml::Value::as_str)
}

/// The post-edit file and its pre-edit text, rebuilt as a PostToolUse hook sees them.
fn images(tool: &str, input: &Value, files: &Value) -> (String, String) {
    let path = input["file_path"].as_str().unwrap_or("");
    let rel = path.strip_prefix(&format!("{ROOT}/")).unwrap_or(path);
    let post = files[rel].as_str().map(str::to_owned).unwrap_or_else(|| {
        input["content"]
            .as_str()
            .or(input["new_string"].as_str())
            .unwrap_or("")
            .to_owned()
    });
    let pre = match tool {
        "Edit" => {
            let old = input["old_string"].as_str().unwrap_or("");
            let new = input["new_string"].as_str().unwrap_or("");
            if old.is_empty() {
                String::new()
            } else {
                post.replacen(new, old, 1)
            }
        }
        _ => String::new(),
    };
    (pre, post)
}

fn run_hook(hook: &toml::Value, event: &str, payload: &Value, files: &Value) -> Option<Outcome> {
    let kind = str_of(hook, "kind")?;
    let tool = payload["tool_name"].as_str().unwrap_or("");
    let input = &payload["tool_input"];
    let path = input["file_path"].as_str().unwrap_or("");
    let block = hook.get("block").and_then(toml::Value::as_bool) == Some(true);
    let verdict = |text: String| {
        if block {
            Outcome::Block(text)
        } else {
            Outcome::Warn(text)
        }
    };
    match kind {
        "lint" | "diff_lint" => {
            if event != "PostToolUse" || !matches!(tool, "Edit" | "Write") {
                return None;
            }
            let lang = Lang::from_id(str_of(hook, "lang").unwrap_or("py")).unwrap();
            if Lang::from_path(path) != Some(lang) || is_test_file(path) {
                return None;
            }
            let (pre, post) = images(tool, input, files);
            if let Some(trigger) = str_of(hook, "trigger")
                && !post.contains(trigger)
            {
                return None;
            }
            let changed = (tool == "Edit").then(|| changed_lines(&pre, &post));
            let found = if kind == "diff_lint" {
                let p = CodePattern::new(str_of(hook, "pattern")?, lang).unwrap();
                diff_lint(&p, &pre, &post)
            } else if let Some(regex) = str_of(hook, "regex") {
                let re = capt_hook_core::Pattern::new(regex, capt_hook_core::Mode::Plain).unwrap();
                lint_regex(&re, &post, changed.as_deref())
            } else {
                let p = CodePattern::new(str_of(hook, "pattern")?, lang).unwrap();
                lint_pattern(&p, &post, changed.as_deref())
            };
            if found.is_empty() {
                return None;
            }
            let sep = str_of(hook, "sep").unwrap_or(", ");
            let max = hook
                .get("max_shown")
                .and_then(toml::Value::as_integer)
                .unwrap_or(5);
            let list = format_violations(&found, sep, max as usize);
            Some(verdict(
                str_of(hook, "message")?.replace("{violations}", &list),
            ))
        }
        "styleguide" => {
            if event != "PostToolUse" || !matches!(tool, "Edit" | "Write") || is_test_file(path) {
                return None;
            }
            let rules: Vec<StyleRule> = hook
                .get("rules")?
                .as_array()?
                .iter()
                .map(|r| {
                    let lang = Lang::from_id(str_of(r, "lang").unwrap_or("py")).unwrap();
                    StyleRule::pattern(
                        str_of(r, "name").unwrap(),
                        CodePattern::new(str_of(r, "pattern").unwrap(), lang).unwrap(),
                        str_of(r, "message").unwrap(),
                        r.get("diff").and_then(toml::Value::as_bool) == Some(true),
                    )
                })
                .collect();
            let lang = Lang::from_path(path)?;
            let (pre, post) = images(tool, input, files);
            let changed = (tool == "Edit").then(|| changed_lines(&pre, &post));
            let found = check_style(&rules, lang, path, &pre, &post, changed.as_deref());
            let max = hook
                .get("max_shown")
                .and_then(toml::Value::as_integer)
                .unwrap_or(5);
            format_style_report(&found, max as usize).map(verdict)
        }
        "rewrite_code" => {
            if event != "PreToolUse" {
                return None;
            }
            let project_only =
                hook.get("project_only").and_then(toml::Value::as_bool) != Some(false);
            if project_only && !path.starts_with(&format!("{ROOT}/")) {
                return None;
            }
            let lang = match str_of(hook, "lang") {
                Some(id) => Lang::from_id(id).unwrap(),
                None => Lang::from_path(path)?,
            };
            let p = CodePattern::new(str_of(hook, "pattern")?, lang).unwrap();
            let (field, text) = match tool {
                "Edit" => ("new_string", input["new_string"].as_str()?),
                "Write" => ("content", input["content"].as_str()?),
                _ => return None,
            };
            let text = rewrite_code(&p, str_of(hook, "replace")?, text)?;
            Some(Outcome::Rewrite { field, text })
        }
        "rewrite_command" => {
            let pattern = str_of(hook, "pattern")?;
            if event != "PreToolUse" || tool != "Bash" || !is_structural(pattern) {
                return None;
            }
            let rewrite = CommandRewrite::new(pattern, str_of(hook, "replace")?).unwrap();
            let text = rewrite.rewrite(input["command"].as_str()?)?;
            Some(Outcome::Rewrite {
                field: "command",
                text,
            })
        }
        "hook" => {
            // Only hooks guarded by the `pattern` condition belong to this crate.
            let cond = hook
                .get("only_if")?
                .as_array()?
                .iter()
                .find_map(|c| c.get("pattern"))?;
            let (source, lang) = match cond {
                toml::Value::String(s) => (s.as_str(), None),
                t => (str_of(t, "pattern")?, str_of(t, "lang")),
            };
            let lang = match lang {
                Some(id) => Lang::from_id(id).unwrap(),
                None => Lang::from_path(path)?,
            };
            let content = input["content"].as_str().or(input["new_string"].as_str())?;
            let any = AnyLangPattern::new(source).unwrap();
            capt_hook_code::matches(any.for_lang(lang)?, content)
                .then(|| verdict(str_of(hook, "message").unwrap().to_owned()))
        }
        _ => None,
    }
}

/// The outcome a step's expectation describes, or `None` for no output; `Err` when the step
/// checks something this crate does not produce.
fn expected(expect: &Value) -> Result<Option<Outcome>, ()> {
    let hso = |v: &Value, key: &str| v.pointer(&format!("/hookSpecificOutput/{key}")).cloned();
    if let Some(stdout) = expect.get("stdout") {
        if stdout.is_null() {
            return Ok(None);
        }
        if let Some(input) = hso(stdout, "updatedInput") {
            for field in ["command", "new_string", "content"] {
                if let Some(text) = input[field].as_str() {
                    return Ok(Some(Outcome::Rewrite {
                        field,
                        text: text.to_owned(),
                    }));
                }
            }
        }
        if hso(stdout, "permissionDecision")
            .as_ref()
            .and_then(Value::as_str)
            == Some("deny")
        {
            let reason = hso(stdout, "permissionDecisionReason").ok_or(())?;
            return Ok(Some(Outcome::Block(reason.as_str().ok_or(())?.to_owned())));
        }
        let context = hso(stdout, "additionalContext").ok_or(())?;
        return Ok(Some(Outcome::Warn(context.as_str().ok_or(())?.to_owned())));
    }
    let contains = expect.get("stdout_contains").ok_or(())?;
    for field in ["command", "new_string", "content"] {
        let key = format!("/hookSpecificOutput/updatedInput/{field}");
        if let Some(text) = contains.get(&key).and_then(Value::as_str) {
            return Ok(Some(Outcome::RewriteContains {
                field,
                text: text.to_owned(),
            }));
        }
    }
    Err(())
}

#[test]
fn code_jsonl_cases_hold_at_the_library_level() {
    let path = cases_file().expect(
        "tests/fixtures/conformance/code.jsonl is missing: the behaviour cases are part of the \
         spec",
    );
    let text = std::fs::read_to_string(path).unwrap();
    let (mut checked, mut failures) = (0, Vec::new());
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let line = line.replace("${ROOT}", ROOT);
        let case: Value = serde_json::from_str(&line).unwrap();
        let id = case["id"].as_str().unwrap();
        let hooks: toml::Value = toml::from_str(case["hooks"].as_str().unwrap()).unwrap();
        let Some(hooks) = hooks.get("hook").and_then(toml::Value::as_array) else {
            continue;
        };
        let files = case.get("files").cloned().unwrap_or(Value::Null);
        for (n, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            let Ok(want) = expected(&step["expect"]) else {
                continue;
            };
            let event = step["event"].as_str().unwrap();
            let got: Vec<Outcome> = hooks
                .iter()
                .filter_map(|h| run_hook(h, event, &step["payload"], &files))
                .collect();
            let relevant = hooks.iter().any(|h| {
                matches!(
                    str_of(h, "kind"),
                    Some("lint" | "diff_lint" | "styleguide" | "rewrite_code" | "rewrite_command")
                ) || h
                    .get("only_if")
                    .and_then(toml::Value::as_array)
                    .is_some_and(|c| c.iter().any(|c| c.get("pattern").is_some()))
            });
            if !relevant {
                continue;
            }
            checked += 1;
            let ok = match (&want, got.as_slice()) {
                (None, []) => true,
                (Some(w), [g]) => w.accepts(g),
                _ => false,
            };
            if !ok {
                failures.push(format!("{id} step {}: want {want:?}, got {got:?}", n + 1));
            }
        }
    }
    assert!(checked >= 40, "only {checked} steps were checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{checked} code.jsonl steps hold");
}

/// A 2,000-line TypeScript module with a `console.log` every 25 lines.
fn typescript_module() -> String {
    let mut s = String::from("import { api } from \"./api\";\n\n");
    let mut i = 0;
    while s.lines().count() < 2000 {
        s.push_str(&format!(
            "export async function load{i}(id: string): Promise<number> {{\n  const res = await api.get(`/items/${{id}}/{i}`);\n  if (!res.ok) {{\n    throw new Error(\"failed {i}\");\n  }}\n"
        ));
        if i % 5 == 0 {
            s.push_str("  console.log(\"loaded\", id, res.status);\n");
        }
        s.push_str("  return res.json() as Promise<number>;\n}\n\n");
        i += 1;
    }
    s
}

#[test]
#[ignore = "benchmark: run with --ignored --release --nocapture"]
fn lint_timing_on_a_2000_line_typescript_file() {
    let src = typescript_module();
    let lines = src.lines().count();
    // First call: compiling the pattern loads the grammar, linting creates this thread's parser.
    let t0 = Instant::now();
    let pattern = CodePattern::new("console.log($$$)", Lang::TypeScript).unwrap();
    let compiled = t0.elapsed();
    let t1 = Instant::now();
    let first = lint_pattern(&pattern, &src, None);
    let first_lint = t1.elapsed();
    let runs = 50;
    let t2 = Instant::now();
    for _ in 0..runs {
        assert_eq!(lint_pattern(&pattern, &src, None).len(), first.len());
    }
    let later = t2.elapsed() / runs;
    let t4 = Instant::now();
    let parsed = capt_hook_code::ParsedCode::parse(Lang::TypeScript, &src).unwrap();
    let parse_only = t4.elapsed();
    let t5 = Instant::now();
    assert_eq!(parsed.find(&pattern).len(), first.len());
    let find_only = t5.elapsed();
    let pre = src.replacen("console.log(\"loaded\", id, res.status);", "", 1);
    let t3 = Instant::now();
    let changed = changed_lines(&pre, &src);
    let on_edit = lint_pattern(&pattern, &src, Some(&changed));
    let edit_lint = t3.elapsed();
    assert_eq!(on_edit.len(), 1);
    println!(
        "{lines} lines, {} bytes, {} matches: first call {:?} (pattern compile + grammar load {compiled:?}, lint {first_lint:?}); later calls {later:?} each (parse {parse_only:?} + match {find_only:?}); changed_lines + lint of an Edit {edit_lint:?}",
        src.len(),
        first.len(),
        compiled + first_lint,
    );
}

//! "Primitives": each primitive's example, in Rust. The LLM-judged primitives (`llm_gate`,
//! `llm_nudge`, `llm_approve`, `prompt_check`, `Confirm`) are in `llm.rs`; `README.md` says where
//! `Tickets` lives.

use captain_hook::code::{
    self, Change, CodePattern, Lang, LangPattern, LintCheck, LintOptions, ParsedCode, StyleRule,
    Violation, matchers as m,
};
use captain_hook::core::{Mode, Pattern};
use captain_hook::session::{NudgeOptions, SignalWindow, Signals, gate, nudge};
use captain_hook::{
    CommandMatch, DefError, Event, Expect, Input, Registry, approve, block_command, cond, deny,
    rewrite_command, rewrite_command_to, warn_command,
};

use crate::lines::{bash, edit, said};

const STEM: &str = "primitives";

/// Whether the session ran a test suite (the gate example's `has_tests`).
pub fn has_tests(evt: &Event) -> bool {
    let calls = evt.transcript().tool_calls();
    calls.runs(&["pytest"]) || calls.runs(&["cargo", "test"])
}

/// String-mode lint: every line that calls `print(`.
pub fn find_prints(content: &str) -> Vec<String> {
    content
        .lines()
        .filter(|line| line.contains("print("))
        .map(|line| line.trim().to_owned())
        .collect()
}

/// Every node of the parsed file, parents before children.
fn nodes(code: &ParsedCode) -> Vec<captain_hook::code::Node<'_>> {
    let mut out = Vec::new();
    let mut stack = vec![code.ts_root()];
    while let Some(node) = stack.pop() {
        out.push(node);
        let mut cursor = node.walk();
        let children: Vec<_> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

/// A violation at `node`: its first line of text, and its 1-based line.
fn at(code: &ParsedCode, node: captain_hook::code::Node<'_>) -> Violation {
    let text = &code.text()[node.byte_range()];
    Violation::new(
        node.start_position().row + 1,
        text.lines().next().unwrap_or_default().trim(),
    )
}

/// Tree-mode lint: parameters whose default is a list, dict or set literal (shared between
/// calls).
pub fn mutable_defaults(code: &ParsedCode) -> Vec<Violation> {
    nodes(code)
        .into_iter()
        .filter(|n| matches!(n.kind(), "default_parameter" | "typed_default_parameter"))
        .filter(|n| {
            n.child_by_field_name("value")
                .is_some_and(|v| matches!(v.kind(), "list" | "dictionary" | "set"))
        })
        .map(|n| at(code, n))
        .collect()
}

/// The `# type: ignore` comments of a file, by text.
fn type_ignores(code: &ParsedCode) -> Vec<Violation> {
    nodes(code)
        .into_iter()
        .filter(|n| n.kind() == "comment")
        .filter(|n| code.text()[n.byte_range()].contains("type: ignore"))
        .map(|n| at(code, n))
        .collect()
}

/// Tree-mode diff lint: `# type: ignore` comments the edit adds (one already there, even moved,
/// does not count).
pub fn new_type_ignores(before: &ParsedCode, after: &ParsedCode) -> Vec<Violation> {
    let old: Vec<String> = type_ignores(before)
        .into_iter()
        .map(|v| v.snippet)
        .collect();
    type_ignores(after)
        .into_iter()
        .filter(|v| !old.contains(&v.snippet))
        .collect()
}

/// `NoBareExcept`: an `except:` that names no exception.
pub fn bare_excepts(change: &Change<'_>) -> Vec<Violation> {
    let code = change.tree();
    nodes(code)
        .into_iter()
        .filter(|n| n.kind() == "except_clause")
        .filter(|n| {
            let mut cursor = n.walk();
            n.named_children(&mut cursor)
                .all(|c| matches!(c.kind(), "block" | "comment"))
        })
        .map(|n| at(code, n))
        .collect()
}

/// `NoSqlInjection`: `.execute(...)` called with an f-string.
pub fn sql_from_fstrings(change: &Change<'_>) -> Vec<Violation> {
    let code = change.tree();
    nodes(code)
        .into_iter()
        .filter(|n| n.kind() == "call")
        .filter(|n| {
            let callee = n.child_by_field_name("function");
            let is_execute = callee.is_some_and(|f| {
                f.kind() == "attribute" && code.text()[f.byte_range()].ends_with(".execute")
            });
            let first = n
                .child_by_field_name("arguments")
                .and_then(|a| a.named_child(0));
            let fstring = first.is_some_and(|a| {
                let text = &code.text()[a.byte_range()];
                a.kind() == "string" && text.starts_with(['f', 'F'])
            });
            is_execute && fstring
        })
        .map(|n| at(code, n))
        .collect()
}

fn python(pattern: &str) -> Result<CodePattern, DefError> {
    CodePattern::new(pattern, Lang::Python).map_err(|e| DefError::new("pattern", e.to_string()))
}

fn write(file: &str, content: &str) -> Input {
    Input::new().tool("Write").file(file).content(content)
}

/// Registers the page's examples.
pub fn register(reg: &mut Registry) -> Result<(), DefError> {
    gates_and_nudges(reg)?;
    lints(reg)?;
    commands(reg)?;
    permissions(reg)?;
    style(reg)?;
    Ok(())
}

fn gates_and_nudges(reg: &mut Registry) -> Result<(), DefError> {
    // gate(): blocks Stop until the session ran its tests.
    reg.add(
        STEM,
        gate("Run tests before committing")
            .when(|evt| !has_tests(evt))
            .name("tests before commit")
            .test(
                Input::new().transcript(vec![edit("e1", "src/app.py"), said("Done.")]),
                Expect::block().matching("Run tests"),
            )
            .test(
                Input::new().transcript(vec![
                    edit("e1", "src/app.py"),
                    bash("b1", "pytest -q"),
                    said("Done."),
                ]),
                Expect::allow(),
            ),
    )?;

    // nudge(): a reminder once Python files were touched.
    reg.add(
        STEM,
        nudge(NudgeOptions::new("Remember to run tests"))?
            .only_if(cond::touched_file(&["**/*.py"]))
            .name("remember tests")
            .test(
                Input::command("git commit -m wip").transcript(vec![edit("e1", "pkg/mod.py")]),
                Expect::warn(),
            )
            .test(
                Input::command("git commit -m wip").transcript(vec![edit("e1", "README.md")]),
                Expect::allow(),
            ),
    )?;

    // nudge() with signals: the agent's own prose keeps saying "retry".
    let retry =
        Pattern::new("retry", Mode::Plain).map_err(|e| DefError::new("signals", e.to_string()))?;
    let mut stop_retrying = NudgeOptions::new("Stop retrying");
    stop_retrying.signals = Some(Signals {
        patterns: vec![(retry, 2)],
        threshold: 2,
        window: SignalWindow::Last(5),
        include_user: false,
    });
    reg.add(
        STEM,
        nudge(stop_retrying)?
            .name("stop retrying")
            .test(
                Input::command("make").transcript(vec![said(
                    "That failed; let me retry with a longer timeout.",
                )]),
                Expect::warn().matching("^Stop retrying$"),
            )
            .test(
                Input::command("make").transcript(vec![said("Build passed.")]),
                Expect::allow(),
            ),
    )?;
    Ok(())
}

fn lints(reg: &mut Registry) -> Result<(), DefError> {
    // lint(), string mode.
    reg.add(
        STEM,
        code::lint(
            LintCheck::text(find_prints),
            LintOptions::new(Lang::Python, "Remove print statements: {violations}"),
        )
        .name("find prints")
        .test(
            write("app.py", "x = 1\nprint(x)\n"),
            Expect::warn().matching(r"^Remove print statements: print\(x\)$"),
        )
        .test(write("app.py", "x = 1\n"), Expect::allow())
        .test(write("app.ts", "print(x)\n"), Expect::allow()),
    )?;

    // lint(), ast-grep mode over TypeScript.
    reg.add(
        STEM,
        code::lint(
            LintCheck::Pattern(
                CodePattern::new("console.log($$$)", Lang::TypeScript)
                    .map_err(|e| DefError::new("pattern", e.to_string()))?,
            ),
            LintOptions::new(Lang::TypeScript, "Drop console.log: {violations}"),
        )
        .name("console log")
        .test(
            write("src/app.ts", "const a = 1;\nconsole.log(a);\n"),
            Expect::warn().matching(r"console\.log\(a\) \(line 2\)"),
        )
        .test(write("src/app.ts", "const a = 1;\n"), Expect::allow()),
    )?;

    // lint(), tree mode: a callback over the parsed file.
    reg.add(
        STEM,
        code::lint(
            LintCheck::tree(mutable_defaults),
            LintOptions::new(
                Lang::Python,
                "Mutable default arguments are shared between calls: {violations}",
            ),
        )
        .name("mutable defaults")
        .test(
            write("lib.py", "def add(item, into=[]):\n    into.append(item)\n"),
            Expect::warn().matching(r"def add\(item, into=\[\]\)|into=\[\] \(line 1\)"),
        )
        .test(
            write("lib.py", "def add(item, into=None):\n    pass\n"),
            Expect::allow(),
        )
        // Only lines the edit changed are reported: the old default on line 1 stays quiet.
        .test(
            Input::new()
                .tool("Edit")
                .file("lib.py")
                .old("def add(item, into=[]):\n    pass")
                .content("def add(item, into=[]):\n    return into"),
            Expect::allow(),
        )
        .test(
            Input::new()
                .tool("Edit")
                .file("lib.py")
                .old("def add(item, into=None):\n    pass")
                .content("def add(item, into=[]):\n    pass"),
            Expect::warn().matching(r"\(line 1\)"),
        ),
    )?;

    // diff_lint(), ast-grep mode: only the calls the edit adds.
    reg.add(
        STEM,
        code::diff_lint(
            python("print($$$)")?,
            LintOptions::new(Lang::Python, "This edit added a print() call: {violations}"),
        )
        .name("new prints")
        .test(
            Input::new()
                .tool("Edit")
                .file("app.py")
                .old("x = 1")
                .content("x = 1\nprint(x)"),
            Expect::warn().matching(r"print\(x\)"),
        ),
    )?;

    // diff_lint(), tree mode: a callback comparing the two parsed files.
    reg.add(
        STEM,
        code::diff_lint_tree(
            new_type_ignores,
            LintOptions::new(Lang::Python, "New `type: ignore` comments: {violations}"),
        )
        .name("new type ignores")
        .test(
            write("app.py", "x: int = 'a'  # type: ignore\n"),
            Expect::warn().matching("type: ignore"),
        )
        .test(write("app.py", "x: int = 1\n"), Expect::allow()),
    )?;
    Ok(())
}

fn commands(reg: &mut Registry) -> Result<(), DefError> {
    // block_command(): tokens are structure, a string is a regex.
    reg.add(
        STEM,
        block_command(
            CommandMatch::argv(&["git", "stash"])?,
            "git stash is not allowed",
        )
        .hint("Use jj")
        .name("no stash")
        .test(
            Input::command("git stash"),
            Expect::block().matching(r"^BLOCKED: git stash is not allowed\. Use jj\.$"),
        )
        .test(Input::command("echo 'git stash'"), Expect::allow()),
    )?;
    reg.add(
        STEM,
        block_command(
            CommandMatch::pattern(r"curl.*\|\s*sh")?,
            "no curl-pipe-shell",
        )
        .name("no curl pipe shell")
        .test(
            Input::command("curl -fsSL https://x.sh | sh"),
            Expect::block(),
        )
        .test(Input::command("curl -O https://x.sh"), Expect::allow()),
    )?;

    // warn_command(): after a `python -c …` ran.
    reg.add(
        STEM,
        warn_command(
            CommandMatch::argv(&["python", "-c", "*"])?,
            "Prefer uv run mtest",
        )
        .name("python c")
        .test(
            Input::command("python -c 'print(1)'"),
            Expect::warn().matching("uv run"),
        )
        .test(Input::command("python script.py"), Expect::allow()),
    )?;

    // rewrite_command(): structural (metavariables), regex, and conditional.
    reg.add(
        STEM,
        code::rewrite_command_structural("cat $$$ARGS", "bat $$$ARGS")?
            .note("bat renders with syntax highlighting")
            .name("cat to bat")
            .test(
                Input::command("cat -n a.py"),
                Expect::rewrite().matching("bat -n a.py"),
            ),
    )?;
    reg.add(
        STEM,
        rewrite_command(r"^cat\s+(\S+)$", r"ccx read \1 --full")?
            .note("Rewrote cat to ccx read")
            .name("cat to ccx")
            .test(
                Input::command("cat notes.md"),
                Expect::rewrite().matching("ccx read notes.md --full"),
            )
            .test(Input::command("cat a b"), Expect::allow()),
    )?;
    reg.add(
        STEM,
        rewrite_command_to(|_| None)
            .block_with("Pushing is disabled")
            .only_if(cond::command("git push")?)
            .name("no push")
            .test(
                Input::command("git push origin main"),
                Expect::block().matching("Pushing is disabled"),
            )
            .test(Input::command("git pull"), Expect::allow()),
    )?;

    // rewrite_code(): edited code rewritten before it is written.
    reg.add(
        STEM,
        code::rewrite_code(
            LangPattern::new("os.system($CMD)", None)?,
            "subprocess.run([$CMD], check=True)".into(),
            Some("Use subprocess.run".into()),
            true,
        )
        .name("no os system")
        .test(
            write("tools/run.py", "os.system(cmd)\n"),
            Expect::rewrite().field("content", "subprocess.run([cmd], check=True)"),
        )
        .test(
            write("tools/run.py", "subprocess.run([cmd])\n"),
            Expect::allow(),
        ),
    )?;
    Ok(())
}

fn permissions(reg: &mut Registry) -> Result<(), DefError> {
    // approve(): teammates' Bash calls when prompts are skipped, except `rm`.
    reg.add(
        STEM,
        approve("teammate bash under skip-permissions")
            .only_if(cond::tool(&["Bash"]))
            .only_if(cond::from_subagent(true))
            .only_if(cond::skip_permissions(true))
            .skip_if(cond::tool_input("command", r"\brm\b")?)
            .test(
                Input::command("ls").agent_id("t1").skip_permissions(true),
                Expect::allow_explicit(),
            )
            .test(
                Input::command("rm -rf build")
                    .agent_id("t1")
                    .skip_permissions(true),
                Expect::ask(),
            )
            .test(Input::command("ls").skip_permissions(true), Expect::ask()),
    )?;

    // deny(): force pushes from subagents (`--force-with-lease` stays allowed).
    reg.add(
        STEM,
        deny("No force pushes from subagents")
            .only_if(cond::from_subagent(true))
            .only_if(cond::runs(&["git", "push"])?)
            .only_if(cond::command(r"--force\b(?!-)")?)
            .test(
                Input::command("git push --force origin main").agent_id("t1"),
                Expect::block(),
            )
            .test(
                Input::command("git push --force-with-lease").agent_id("t1"),
                Expect::allow(),
            )
            .test(Input::command("git push --force"), Expect::allow()),
    )?;
    Ok(())
}

fn style(reg: &mut Registry) -> Result<(), DefError> {
    let no_print = StyleRule::pattern(
        "NoPrint",
        python("print($$$)")?,
        "No print(): {violations}",
        false,
    );
    let no_bare_except = StyleRule::custom(
        "NoBareExcept",
        Lang::Python,
        "Name the exception you expect: {violations}",
        false,
        bare_excepts,
    );
    // styleguide(NoPrint, NoBareExcept)
    reg.add(
        STEM,
        code::styleguide(vec![no_print, no_bare_except], false, 5)
            .name("basics")
            .test(
                write("app.py", "try:\n    run()\nexcept:\n    print('failed')\n"),
                Expect::warn().matching(
                    r"(?s)No print\(\): print\('failed'\) \(line 4\).*except: \(line 3\)",
                ),
            )
            .test(
                write("app.py", "try:\n    run()\nexcept OSError:\n    log()\n"),
                Expect::allow(),
            )
            .test(write("tests/test_app.py", "print(1)\n"), Expect::allow()),
    )?;

    // styleguide(NoSqlInjection, block=True, only_if=[FilePath("api/**/*.py")])
    let no_sql_injection = StyleRule::custom(
        "NoSqlInjection",
        Lang::Python,
        "Pass query parameters instead of formatting SQL: {violations}",
        false,
        sql_from_fstrings,
    );
    reg.add(
        STEM,
        code::styleguide(vec![no_sql_injection], true, 5)
            .only_if(cond::file_path(&["api/**/*.py"]))
            .name("sql")
            .test(
                write(
                    "api/v1/users.py",
                    "cur.execute(f\"SELECT * FROM u WHERE id={uid}\")\n",
                ),
                Expect::block().matching("query parameters"),
            )
            .test(
                write(
                    "api/v1/users.py",
                    "cur.execute(\"SELECT * FROM u WHERE id=?\", (uid,))\n",
                ),
                Expect::allow(),
            )
            .test(
                write("scripts/users.py", "cur.execute(f\"SELECT {x}\")\n"),
                Expect::allow(),
            ),
    )?;

    // Matchers, StyleDiffRule and the ast-grep rule builders.
    // The seeds' declarative rules: a matcher, and a matcher refined (the seeds' `where`).
    let no_nested_imports = StyleRule::matcher(
        "NoNestedImports",
        Lang::Python,
        m::imports() & m::child_of(m::control_flow()) & !m::under(m::type_checking()),
        "Lazy imports belong at the top of the function body: {violations}",
        false,
    )
    .map_err(|e| DefError::new("match", e.to_string()))?;
    let no_new_wildcard_import = StyleRule::matcher(
        "NoNewWildcardImport",
        Lang::Python,
        m::imports().refine(|n| n.text().trim_end().ends_with("import *")),
        "Wildcard import added by this edit: {violations}",
        true,
    )
    .map_err(|e| DefError::new("match", e.to_string()))?;
    let no_new_wildcard = StyleRule::pattern(
        "NoNewWildcard",
        python("from $M import *")?,
        "No `import *`",
        true,
    );
    reg.add(
        STEM,
        code::styleguide(
            vec![no_nested_imports, no_new_wildcard_import, no_new_wildcard],
            false,
            5,
        )
        .name("imports")
        .test(
            write(
                "app.py",
                "def f(x):\n    if x:\n        import json\n    return x\n",
            ),
            Expect::warn().matching(r"import json \(line 3\)"),
        )
        .test(
            write(
                "app.py",
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import json\n",
            ),
            Expect::allow(),
        )
        .test(
            Input::new()
                .tool("Edit")
                .file("app.py")
                .old("import os")
                .content("import os\nfrom os.path import *"),
            Expect::warn().matching(r"(?s)Wildcard import added.*No `import \*`"),
        ),
    )?;
    Ok(())
}

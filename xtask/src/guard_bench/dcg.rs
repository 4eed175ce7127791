//! dcg's corpus, in the three forms its crate publishes:
//!
//! * `tests/corpus/**/*.toml`: `[[case]]` tables with `command` and `expected` (or the
//!   canonical file's `expected_decision`); cases scoped by `dialects` to shells other than a
//!   POSIX one, and raw hook-JSON inputs, are not command lines for Bash and are skipped;
//! * `tests/e2e/fixtures/commands/*.txt`: one command a line, `dangerous.txt` denied and
//!   `safe.txt` allowed, the others prefixed `BLOCK:`/`ALLOW:`/`WARN:` (a heredoc spans the
//!   lines up to its delimiter, or is written on one line with `\n`);
//! * the packs' unit tests in `src/packs/**/*.rs`: calls of its assertion helpers with a literal
//!   command (`assert_blocks(&pack, "…", …)`, `assert_allows`, …), read with `syn`. A pack's
//!   medium- and low-severity patterns only warn or log, so those cases are `warn`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use syn::visit::Visit;

use super::corpus::{Case, Extracted, PeerVerdict};
use super::fetch::{files, read, relative};

/// Every case of the unpacked crate at `top`.
pub fn extract(top: &Path) -> anyhow::Result<Extracted> {
    let mut all = Extracted::default();
    for file in files(&top.join("tests/corpus"), "toml")? {
        let text = read(&file)?;
        if file.ends_with(STALE_CORPUS) {
            // Its own header says its verdicts date from before the packs for these commands
            // existed ("currently allowed - no pack yet"); dcg denies them now.
            let n = toml_cases(&text, "")?.cases.len();
            *all.skipped
                .entry(format!(
                    "{STALE_CORPUS}, verdicts from before dcg had the packs"
                ))
                .or_default() += n;
            continue;
        }
        all.extend(
            toml_cases(&text, &relative(top, &file))
                .with_context(|| format!("reading {}", file.display()))?,
        );
    }
    for file in files(&top.join("tests/e2e/fixtures/commands"), "txt")? {
        let text = read(&file)?;
        let name = relative(top, &file);
        let default = match file.file_stem().and_then(|s| s.to_str()) {
            Some("dangerous") => Some(PeerVerdict::Deny),
            Some("safe") => Some(PeerVerdict::Allow),
            _ => None,
        };
        all.extend(txt_cases(&text, &name, default));
    }
    let packs = top.join("src/packs");
    for file in files(&packs, "rs")? {
        let text = read(&file)?;
        let mut cases = rust_cases(&text, &relative(top, &file))
            .with_context(|| format!("reading {}", file.display()))?;
        let pack = file
            .strip_prefix(&packs)
            .ok()
            .and_then(|p| p.components().next())
            .and_then(|c| c.as_os_str().to_str());
        if let Some(pack) = pack.filter(|p| NOT_MEASURED.contains(p)) {
            let why = format!(
                "from {pack}, a pack of policy beyond destructiveness or for cmd/PowerShell"
            );
            *cases.skipped.entry(why).or_default() += cases.cases.len();
            cases.cases.clear();
        }
        all.extend(cases);
    }
    Ok(all)
}

/// dcg's packs whose tests are not the peer's answer on destructive Bash commands:
/// `strict_git` is an opt-in stricter git policy (it denies lease-guarded pushes and rebases,
/// which dcg's default git pack allows), `windows` reads cmd and PowerShell lines, and
/// `careful_company_running_windows` is an opt-in data-egress preset for Windows machines.
const NOT_MEASURED: [&str; 3] = ["strict_git", "windows", "careful_company_running_windows"];

/// A corpus file recording what dcg answered before it had packs for the commands it lists.
const STALE_CORPUS: &str = "tests/corpus/edge_cases/future_packs.toml";

/// The `[[case]]` tables of one corpus file.
pub fn toml_cases(text: &str, name: &str) -> anyhow::Result<Extracted> {
    let doc: toml::Table = toml::from_str(text).context("not TOML")?;
    let mut out = Extracted::default();
    let cases = match doc.get("case") {
        Some(toml::Value::Array(cases)) => cases,
        Some(_) => anyhow::bail!("`case` is not an array of tables"),
        None => return Ok(out),
    };
    for (i, case) in cases.iter().enumerate() {
        let Some(case) = case.as_table() else {
            anyhow::bail!("case {} is not a table", i + 1);
        };
        let label = case
            .get("id")
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .unwrap_or_else(|| format!("case {}", i + 1));
        if case.get("input_kind").and_then(|v| v.as_str()) == Some("hook_json") {
            out.skip("a raw hook payload, not a command line");
            continue;
        }
        if let Some(dialects) = case.get("dialects").and_then(|v| v.as_array())
            && !dialects.iter().any(|d| d.as_str() == Some("posix"))
        {
            out.skip("scoped to a non-POSIX shell");
            continue;
        }
        let Some(command) = case.get("command").and_then(|v| v.as_str()) else {
            anyhow::bail!("{label} has no string `command`");
        };
        let word = case
            .get("expected")
            .or_else(|| case.get("expected_decision"))
            .and_then(|v| v.as_str());
        let Some(expected) = word.and_then(PeerVerdict::parse) else {
            anyhow::bail!("{label} has no known `expected` verdict ({word:?})");
        };
        out.cases
            .push(Case::new(command, expected, format!("{name}: {label}")));
    }
    Ok(out)
}

/// The commands of one fixture file; `default` is the verdict of a line without a prefix.
pub fn txt_cases(text: &str, name: &str, default: Option<PeerVerdict>) -> Extracted {
    let mut out = Extracted::default();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let (verdict, command) = match line.split_once(':') {
            Some((word, rest)) if word.chars().all(|c| c.is_ascii_uppercase()) => {
                (PeerVerdict::parse(word), rest)
            }
            _ => (default, line),
        };
        let Some(verdict) = verdict else {
            out.skip("a fixture line without a verdict");
            continue;
        };
        let mut command = command.trim().to_owned();
        if command.contains("\\n") {
            // One-line form of a heredoc.
            command = command.replace("\\n", "\n");
        } else if let Some(delimiter) = heredoc_delimiter(&command) {
            for (_, next) in lines.by_ref() {
                command.push('\n');
                command.push_str(next);
                if next.trim() == delimiter {
                    break;
                }
            }
        }
        out.cases
            .push(Case::new(command, verdict, format!("{name}:{}", i + 1)));
    }
    out
}

/// The delimiter of a heredoc the line opens (`<<EOF`, `<<'EOF'`, `<<-"EOF"`), not of a
/// here-string (`<<<`).
fn heredoc_delimiter(line: &str) -> Option<String> {
    let at = line.find("<<")?;
    let rest = &line[at + 2..];
    if rest.starts_with('<') {
        return None;
    }
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim_start();
    let word: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace() && !";|&)".contains(*c))
        .filter(|c| !"'\"".contains(*c))
        .collect();
    (!word.is_empty()).then_some(word)
}

/// dcg's assertion helpers: what the peer does with the command each one names (the helper's
/// second argument).
fn helper_verdict(name: &str) -> Option<PeerVerdict> {
    Some(match name {
        "assert_blocks" | "assert_blocks_with_pattern" | "assert_blocks_reachably" => {
            PeerVerdict::Deny
        }
        "assert_allows" | "assert_allows_reachably" | "assert_safe_pattern_matches" => {
            PeerVerdict::Allow
        }
        // Decided by the severity argument.
        "assert_blocks_with_severity" => PeerVerdict::Deny,
        _ => return None,
    })
}

/// The literal commands of a pack's tests.
pub fn rust_cases(text: &str, name: &str) -> anyhow::Result<Extracted> {
    let file = syn::parse_file(text).context("not Rust that syn parses")?;
    let mut visitor = Calls {
        name,
        out: Extracted::default(),
        tables: BTreeMap::new(),
        loops: Vec::new(),
    };
    visitor.visit_file(&file);
    Ok(visitor.out)
}

struct Calls<'a> {
    name: &'a str,
    out: Extracted,
    /// Literal tables bound by `let NAME = [...]` in the function being read: rows of
    /// columns (a plain string is a row of one column).
    tables: BTreeMap<String, Vec<Vec<Option<String>>>>,
    /// Loop variables bound to a table's column (`for (command, _) in [...]`), innermost last.
    loops: Vec<(String, Vec<String>)>,
}

impl Calls<'_> {
    /// The commands an argument stands for: a literal, or a loop variable over literals.
    fn commands(&self, expr: &syn::Expr) -> Option<Vec<String>> {
        if let Some(s) = string_of(expr) {
            return Some(vec![s]);
        }
        let name = ident_of(expr)?;
        self.loops
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, values)| values.clone())
    }

    /// The rows a loop iterates: a literal table, or one a `let` bound.
    fn rows_of(&self, expr: &syn::Expr) -> Option<Vec<Vec<Option<String>>>> {
        let expr = strip_iter(expr);
        table_of(expr).or_else(|| self.tables.get(&ident_of(expr)?).cloned())
    }
}

impl<'ast> Visit<'ast> for Calls<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let saved = std::mem::take(&mut self.tables);
        syn::visit::visit_item_fn(self, f);
        self.tables = saved;
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        syn::visit::visit_local(self, local);
        if let (syn::Pat::Ident(name), Some(init)) = (strip_type(&local.pat), &local.init)
            && let Some(rows) = table_of(strip_iter(&init.expr))
        {
            self.tables.insert(name.ident.to_string(), rows);
        }
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        syn::visit::visit_expr(self, &f.expr);
        let mut bound = 0;
        if let Some(rows) = self.rows_of(&f.expr) {
            let columns: Vec<(usize, String)> = match &*f.pat {
                syn::Pat::Ident(name) => vec![(0, name.ident.to_string())],
                syn::Pat::Tuple(t) => t
                    .elems
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| match p {
                        syn::Pat::Ident(name) => Some((i, name.ident.to_string())),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            for (i, name) in columns {
                let values: Option<Vec<String>> =
                    rows.iter().map(|r| r.get(i).cloned().flatten()).collect();
                if let Some(values) = values {
                    self.loops.push((name, values));
                    bound += 1;
                }
            }
        }
        self.visit_block(&f.body);
        self.loops.truncate(self.loops.len() - bound);
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        syn::visit::visit_expr_call(self, call);
        let syn::Expr::Path(path) = &*call.func else {
            return;
        };
        let Some(helper) = path.path.segments.last().map(|s| s.ident.to_string()) else {
            return;
        };
        let batch = match helper.as_str() {
            "test_batch_blocks" => Some(PeerVerdict::Deny),
            "test_batch_allows" => Some(PeerVerdict::Allow),
            _ => None,
        };
        let args: Vec<&syn::Expr> = call.args.iter().collect();
        let source = format!("{}: {helper}", self.name);
        if let Some(verdict) = batch {
            match args.get(1).map(|a| strings_of(a)) {
                Some(Some(commands)) => {
                    for command in commands {
                        self.out
                            .cases
                            .push(Case::new(command, verdict, source.clone()));
                    }
                }
                _ => self.out.skip("a test helper given a computed command"),
            }
            return;
        }
        // `assert_no_match` says only that the pack under test has no rule for the command,
        // often because another pack owns it (the filesystem pack's test that `dd of=/dev/sda`
        // is not its business): not dcg's verdict.
        if helper == "assert_no_match" {
            self.out
                .skip("a pack's assert_no_match (another pack may own the command)");
            return;
        }
        let Some(mut verdict) = helper_verdict(&helper) else {
            return;
        };
        if helper == "assert_blocks_with_severity" {
            match args.get(2).map(|a| severity_of(a)) {
                Some(Some(v)) => verdict = v,
                _ => {
                    self.out.skip("a severity the bench cannot read");
                    return;
                }
            }
        }
        match args.get(1).and_then(|a| self.commands(a)) {
            Some(commands) => {
                for command in commands {
                    self.out
                        .cases
                        .push(Case::new(command, verdict, source.clone()));
                }
            }
            None => self.out.skip("a test helper given a computed command"),
        }
    }
}

/// `x.iter()`, `x.into_iter()`, `&x` and `x` alike.
fn strip_iter(expr: &syn::Expr) -> &syn::Expr {
    match expr {
        syn::Expr::MethodCall(m) if m.method == "iter" || m.method == "into_iter" => {
            strip_iter(&m.receiver)
        }
        syn::Expr::Reference(r) => strip_iter(&r.expr),
        syn::Expr::Paren(p) => strip_iter(&p.expr),
        _ => expr,
    }
}

/// `let name: T = …` as `let name = …`.
fn strip_type(pat: &syn::Pat) -> &syn::Pat {
    match pat {
        syn::Pat::Type(t) => &t.pat,
        other => other,
    }
}

fn ident_of(expr: &syn::Expr) -> Option<String> {
    match strip_iter(expr) {
        syn::Expr::Path(p) if p.path.segments.len() == 1 => {
            Some(p.path.segments[0].ident.to_string())
        }
        _ => None,
    }
}

/// The rows of a literal array: each element a string (one column) or a tuple of columns.
fn table_of(expr: &syn::Expr) -> Option<Vec<Vec<Option<String>>>> {
    let syn::Expr::Array(a) = expr else {
        return None;
    };
    let rows: Vec<Vec<Option<String>>> = a
        .elems
        .iter()
        .map(|e| match e {
            syn::Expr::Tuple(t) => t.elems.iter().map(string_of).collect(),
            other => vec![string_of(other)],
        })
        .collect();
    // A table of no string at all is not one the bench reads.
    rows.iter()
        .any(|r| r.iter().any(Option::is_some))
        .then_some(rows)
}

/// The string a literal (or a reference to one) holds.
fn string_of(expr: &syn::Expr) -> Option<String> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        syn::Expr::Reference(r) => string_of(&r.expr),
        syn::Expr::Paren(p) => string_of(&p.expr),
        _ => None,
    }
}

/// The strings of a literal array or slice (`&["a", "b"]`, `vec![…]` is not read).
fn strings_of(expr: &syn::Expr) -> Option<Vec<String>> {
    match expr {
        syn::Expr::Reference(r) => strings_of(&r.expr),
        syn::Expr::Array(a) => a.elems.iter().map(string_of).collect(),
        _ => None,
    }
}

/// `Severity::Critical`/`High` deny; `Medium` and `Low` only warn or log.
fn severity_of(expr: &syn::Expr) -> Option<PeerVerdict> {
    let syn::Expr::Path(p) = expr else {
        return None;
    };
    match p.path.segments.last()?.ident.to_string().as_str() {
        "Critical" | "High" => Some(PeerVerdict::Deny),
        "Medium" | "Low" => Some(PeerVerdict::Warn),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Sample lines in dcg's formats, written for these tests.
    #[test]
    fn toml_corpus_cases() {
        let text = r#"
[[case]]
description = "wipes the tree"
command = "git clean -fdx"
expected = "deny"

[[case]]
id = "log.read"
command = "git log -1"
expected_decision = "allow"

[[case]]
command = "Remove-Item -Recurse C:\\x"
expected = "deny"
dialects = ["ps"]

[[case]]
id = "raw"
input_kind = "hook_json"
raw_input = "{}"
expected_decision = "allow"
"#;
        let e = toml_cases(text, "t.toml").expect("reads");
        let got: Vec<_> = e
            .cases
            .iter()
            .map(|c| (c.command.as_str(), c.expected, c.source.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("git clean -fdx", PeerVerdict::Deny, "t.toml: case 1"),
                ("git log -1", PeerVerdict::Allow, "t.toml: log.read"),
            ]
        );
        assert_eq!(e.skipped.values().sum::<usize>(), 2);
    }

    #[test]
    fn toml_case_without_a_verdict_is_an_error_naming_it() {
        let err = toml_cases(
            "[[case]]\nid = \"x\"\ncommand = \"ls\"\nexpected = \"maybe\"\n",
            "t",
        )
        .expect_err("unknown verdict")
        .to_string();
        assert!(err.contains('x') && err.contains("maybe"), "{err}");
    }

    #[test]
    fn fixture_lines_and_heredocs() {
        let text = "# comment\nBLOCK:rm -rf /\nALLOW:python3 <<EOF\nprint(1)\nEOF\nWARN:x\nBLOCK:node <<EOF\\nfoo()\\nEOF\n";
        let e = txt_cases(text, "f.txt", None);
        let got: Vec<_> = e
            .cases
            .iter()
            .map(|c| (c.command.as_str(), c.expected))
            .collect();
        assert_eq!(
            got,
            vec![
                ("rm -rf /", PeerVerdict::Deny),
                ("python3 <<EOF\nprint(1)\nEOF", PeerVerdict::Allow),
                ("x", PeerVerdict::Warn),
                ("node <<EOF\nfoo()\nEOF", PeerVerdict::Deny),
            ]
        );
        assert_eq!(e.cases[1].source, "f.txt:3");
        let plain = txt_cases("git status\n", "safe.txt", Some(PeerVerdict::Allow));
        assert_eq!(plain.cases[0].expected, PeerVerdict::Allow);
        assert_eq!(plain.cases[0].command, "git status");
    }

    #[test]
    fn pack_test_calls() {
        let text = r##"
#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn t() {
        let pack = create_pack();
        assert_blocks(&pack, "docker system prune -a", "prune");
        assert_blocks_with_pattern(
            &pack,
            r#"psql -c "DROP TABLE x""#,
            "drop-table",
        );
        assert_blocks_with_severity(&pack, "terraform plan -destroy", Severity::Medium);
        assert_blocks_with_severity(&pack, "terraform destroy", Severity::Critical);
        assert_allows(&pack, "docker ps");
        assert_no_match(&pack, "ls");
        test_batch_blocks(&pack, &["a b", "c d"], "r");
        for cmd in ["x"] { assert_allows(&pack, cmd); }
        let checks = [("y z", "p1"), ("w", "p2")];
        for (command, pattern) in checks.iter() {
            assert_blocks_with_pattern(&pack, command, pattern);
        }
        let made = format!("{}", 1);
        assert_allows(&pack, &made);
        not_a_helper(&pack, "ignored");
    }
}
"##;
        let e = rust_cases(text, "p.rs").expect("parses");
        let got: Vec<_> = e
            .cases
            .iter()
            .map(|c| (c.command.as_str(), c.expected))
            .collect();
        assert_eq!(
            got,
            vec![
                ("docker system prune -a", PeerVerdict::Deny),
                ("psql -c \"DROP TABLE x\"", PeerVerdict::Deny),
                ("terraform plan -destroy", PeerVerdict::Warn),
                ("terraform destroy", PeerVerdict::Deny),
                ("docker ps", PeerVerdict::Allow),
                ("a b", PeerVerdict::Deny),
                ("c d", PeerVerdict::Deny),
                ("x", PeerVerdict::Allow),
                ("y z", PeerVerdict::Deny),
                ("w", PeerVerdict::Deny),
            ]
        );
        assert_eq!(e.cases[0].source, "p.rs: assert_blocks");
        assert_eq!(e.skipped["a test helper given a computed command"], 1);
        assert_eq!(
            e.skipped["a pack's assert_no_match (another pack may own the command)"], 1,
            "a pack's no-match is not dcg's verdict"
        );
    }
}

//! Structural rewrites: code (`rewrite_code`) and Bash command lines (`rewrite_command`).

use std::collections::BTreeSet;

use ast_grep_core::replacer::Replacer;
use ast_grep_core::source::Edit;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_core::{NodeMatch, Pattern};

use crate::pattern::{CodePattern, ParsedCode};
use crate::{CodeError, Lang};

/// A metavariable reference found in a pattern or template.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MetaRef {
    /// Byte range of the whole reference, `$`s included.
    start: usize,
    end: usize,
    /// The name, or `None` for the anonymous `$$$`.
    name: Option<String>,
    multi: bool,
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_uppercase() || c == b'_'
}

fn is_name_char(c: u8) -> bool {
    is_name_start(c) || c.is_ascii_digit()
}

/// Finds `$NAME`, `$$NAME`, `$$$NAME` and bare `$$$` the way ast-grep reads them: a run of more
/// than three `$` keeps the extra ones as text, and a `$` preceded by `\` is a regex escape,
/// not a metavariable.
fn meta_refs(text: &str) -> Vec<MetaRef> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' || (i > 0 && b[i - 1] == b'\\') {
            i += 1;
            continue;
        }
        let run_start = i;
        while i < b.len() && b[i] == b'$' {
            i += 1;
        }
        let run = i - run_start;
        let name_end = b[i..]
            .iter()
            .position(|c| !is_name_char(*c))
            .map_or(b.len(), |p| i + p);
        let has_name = i < b.len() && is_name_start(b[i]);
        let (start, multi) = if run >= 3 {
            (i - 3, true)
        } else {
            (run_start, false)
        };
        if has_name {
            out.push(MetaRef {
                start,
                end: name_end,
                name: Some(text[i..name_end].to_owned()),
                multi,
            });
            i = name_end;
        } else if multi {
            out.push(MetaRef {
                start,
                end: i,
                name: None,
                multi: true,
            });
        }
    }
    out
}

/// Whether `pattern` carries an ast-grep metavariable (`$NAME`, `$$$NAME` or `$$$`), which
/// makes a `rewrite_command` pattern structural rather than a regex.
pub fn is_structural(pattern: &str) -> bool {
    !meta_refs(pattern).is_empty()
}

/// A fix template, rendered per match: captured metavariables are substituted by ast-grep
/// (with its re-indentation of multi-line captures); every `$NAME` the pattern never captured
/// stays as written, so a shell's `$HOME` survives.
#[derive(Debug, Clone)]
struct Fix {
    template: String,
    /// Names the pattern captures; every other `$NAME` in the template is literal text.
    captured: BTreeSet<String>,
    /// Drop a `$$$NAME` that bound nothing together with the whitespace beside it, so a
    /// command does not end up with doubled or trailing spaces.
    tidy_empty: bool,
}

impl Fix {
    fn new(template: &str, pattern: &CodePattern, tidy_empty: bool) -> Fix {
        Fix {
            template: template.to_owned(),
            captured: pattern.captured().map(str::to_owned).collect(),
            tidy_empty,
        }
    }

    fn is_captured(&self, r: &MetaRef) -> bool {
        r.name.as_ref().is_some_and(|n| self.captured.contains(n))
    }

    /// A replacer for one document. ast-grep's templates have no escape for `$`, so the `$` of
    /// each literal reference is swapped for a character found nowhere in the document or the
    /// template, and swapped back once ast-grep rendered the match.
    fn replacer(&self, source: &str) -> Rendered<'_> {
        let sentinel = ('\u{E000}'..='\u{F8FF}')
            .find(|c| !source.contains(*c) && !self.template.contains(*c))
            .unwrap_or('\u{F8FF}');
        Rendered {
            fix: self,
            sentinel,
            whole: self.protect(&self.template, sentinel),
        }
    }

    /// `template` with the `$` of every uncaptured reference replaced by `sentinel`.
    fn protect(&self, template: &str, sentinel: char) -> String {
        let mut out = String::with_capacity(template.len() + 8);
        let mut last = 0;
        for r in meta_refs(template).iter().filter(|r| !self.is_captured(r)) {
            out.push_str(&template[last..r.start]);
            out.extend(
                template[r.start..r.end]
                    .chars()
                    .map(|c| if c == '$' { sentinel } else { c }),
            );
            last = r.end;
        }
        out.push_str(&template[last..]);
        out
    }
}

/// A [`Fix`] ready for one document.
struct Rendered<'f> {
    fix: &'f Fix,
    sentinel: char,
    /// The template with literal references protected.
    whole: String,
}

impl Replacer<StrDoc<Lang>> for Rendered<'_> {
    fn generate_replacement(&self, nm: &NodeMatch<'_, StrDoc<Lang>>) -> Vec<u8> {
        let reduced;
        let template = if self.fix.tidy_empty {
            let empty: Vec<(usize, usize)> = meta_refs(&self.fix.template)
                .into_iter()
                .filter(|r| r.multi && self.fix.is_captured(r))
                .filter(|r| {
                    r.name
                        .as_ref()
                        .is_some_and(|n| nm.get_env().get_multiple_matches(n).is_empty())
                })
                .map(|r| (r.start, r.end))
                .collect();
            if empty.is_empty() {
                &self.whole
            } else {
                reduced = self
                    .fix
                    .protect(&remove_spans(&self.fix.template, &empty), self.sentinel);
                &reduced
            }
        } else {
            &self.whole
        };
        let bytes = template.as_str().generate_replacement(nm);
        let text = String::from_utf8_lossy(&bytes);
        if text.contains(self.sentinel) {
            text.replace(self.sentinel, "$").into_bytes()
        } else {
            bytes
        }
    }
}

/// The edits (byte position, deleted length, inserted text) of every outermost match.
///
/// Code edits end where the pattern's last node matched (ast-grep's rule, which keeps a `;`
/// the pattern did not mention); command edits replace the whole matched command, so a
/// single `$F` drops the arguments after it, as the original did.
fn edits(
    parsed: &ParsedCode,
    pattern: &CodePattern,
    fix: &Fix,
    whole_node: bool,
) -> Vec<Edit<String>> {
    parsed.with_stack_for(pattern, Vec::new, || {
        let replacer = fix.replacer(parsed.text());
        let root = parsed.grep().root();
        if !whole_node {
            return root.replace_all(pattern.inner(), &replacer);
        }
        let mut out: Vec<Edit<String>> = Vec::new();
        let mut covered_until = 0;
        // `find_all` walks in document pre-order, so an outer match comes before those inside it.
        for nm in root.find_all(pattern.inner()) {
            let range = nm.range();
            if !out.is_empty() && range.start < covered_until {
                continue;
            }
            covered_until = range.end;
            out.push(nm.replace_by(&replacer));
        }
        out
    })
}

/// Applies non-overlapping edits to `text`.
fn apply(text: &str, mut edits: Vec<Edit<String>>) -> String {
    edits.sort_by_key(|e| e.position);
    let mut out = Vec::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut cursor = 0;
    for e in edits {
        out.extend_from_slice(&bytes[cursor..e.position]);
        out.extend_from_slice(&e.inserted_text);
        cursor = e.position + e.deleted_length;
    }
    out.extend_from_slice(&bytes[cursor..]);
    // Edits cut at node boundaries and insert UTF-8 text, so this never actually replaces.
    String::from_utf8_lossy(&out).into_owned()
}

/// Rewrites every match of `pattern` in `text` with the fix template `replace` (`$X` and
/// `$$$X` are the pattern's captures). `None` when nothing matched or the text is unchanged,
/// so a rewrite that already happened is not done again.
pub fn rewrite_code(pattern: &CodePattern, replace: &str, text: &str) -> Option<String> {
    let parsed = ParsedCode::parse(pattern.lang(), text).ok()?;
    let fix = Fix::new(replace, pattern, false);
    let found = edits(&parsed, pattern, &fix, false);
    if found.is_empty() {
        return None;
    }
    let out = apply(text, found);
    (out != text).then_some(out)
}

/// The most `$$$` metavariables whose zero-argument forms are tried (2^n pattern variants).
const MAX_DROPPABLE: usize = 4;

/// A structural rewrite of Bash command lines, compiled once.
#[derive(Debug, Clone)]
pub struct CommandRewrite {
    pattern: String,
    replace: String,
    /// The pattern as written first, then its forms with some `$$$X` left out, each with the
    /// template to use for it.
    variants: Vec<(CodePattern, Fix)>,
}

impl CommandRewrite {
    /// Compiles `pattern` over tree-sitter-bash with the fix template `replace`.
    pub fn new(pattern: &str, replace: &str) -> Result<CommandRewrite, CodeError> {
        let full = CodePattern::new(pattern, Lang::Bash)?;
        let mut variants = vec![(full.clone(), Fix::new(replace, &full, true))];
        let droppable: Vec<MetaRef> = meta_refs(pattern).into_iter().filter(|r| r.multi).collect();
        if !droppable.is_empty() && droppable.len() <= MAX_DROPPABLE {
            let root_kind = full.root_kind();
            let mut masks: Vec<u32> = (1..(1u32 << droppable.len())).collect();
            // Fewer dropped first: prefer the form closest to what the author wrote.
            masks.sort_by_key(|m| m.count_ones());
            for mask in masks {
                let dropped: Vec<&MetaRef> = droppable
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask & (1 << i) != 0)
                    .map(|(_, r)| r)
                    .collect();
                let spans: Vec<(usize, usize)> = dropped.iter().map(|r| (r.start, r.end)).collect();
                let names: BTreeSet<&str> =
                    dropped.iter().filter_map(|r| r.name.as_deref()).collect();
                let reduced = remove_spans(pattern, &spans);
                let template_spans: Vec<(usize, usize)> = meta_refs(replace)
                    .into_iter()
                    .filter(|r| r.multi && r.name.as_deref().is_some_and(|n| names.contains(n)))
                    .map(|r| (r.start, r.end))
                    .collect();
                let reduced_template = remove_spans(replace, &template_spans);
                if let Some(p) = zero_form(&reduced, root_kind.as_deref()) {
                    let fix = Fix::new(&reduced_template, &p, true);
                    variants.push((p, fix));
                }
            }
        }
        Ok(CommandRewrite {
            pattern: pattern.to_owned(),
            replace: replace.to_owned(),
            variants,
        })
    }

    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The replacement template as written.
    pub fn replacement(&self) -> &str {
        &self.replace
    }

    /// Rewrites every matching command in `command` (in pipelines, lists, subshells and `$(…)`
    /// too), leaving the rest of the line byte for byte. `None` when nothing changed.
    pub fn rewrite(&self, command: &str) -> Option<String> {
        let parsed = ParsedCode::parse(Lang::Bash, command).ok()?;
        let mut taken: Vec<Edit<String>> = Vec::new();
        for (pattern, fix) in &self.variants {
            for edit in edits(&parsed, pattern, fix, true) {
                let (start, end) = (edit.position, edit.position + edit.deleted_length);
                let overlaps = taken.iter().any(|t| {
                    let (ts, te) = (t.position, t.position + t.deleted_length);
                    start < te && ts < end
                });
                if !overlaps {
                    taken.push(edit);
                }
            }
        }
        if taken.is_empty() {
            return None;
        }
        let out = apply(command, taken);
        (out != command).then_some(out)
    }
}

/// Compiles a pattern with some `$$$X` removed, rooted at the same node kind as the full
/// pattern: `cat` alone would otherwise be a bare word and match `cat` anywhere, arguments
/// included.
fn zero_form(source: &str, root_kind: Option<&str>) -> Option<CodePattern> {
    if source.trim().is_empty() {
        return None;
    }
    let plain = CodePattern::new(source, Lang::Bash).ok()?;
    match root_kind {
        Some(kind) if plain.root_kind().as_deref() != Some(kind) => {
            let contextual =
                std::panic::catch_unwind(|| Pattern::contextual(source, kind, Lang::Bash))
                    .ok()?
                    .ok()?;
            Some(plain.with_inner(contextual))
        }
        _ => Some(plain),
    }
}

/// Removes each span and one run of whitespace beside it (before it if any, else after), so
/// `cat $$$ARGS` becomes `cat` and `bat $$$ARGS -n` becomes `bat -n`.
fn remove_spans(text: &str, spans: &[(usize, usize)]) -> String {
    let b = text.as_bytes();
    let mut cuts: Vec<(usize, usize)> = spans
        .iter()
        .map(|&(mut s, mut e)| {
            let before = b[..s]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
            if before > 0 {
                s -= before;
            } else {
                e += b[e..]
                    .iter()
                    .take_while(|c| c.is_ascii_whitespace())
                    .count();
            }
            (s, e)
        })
        .collect();
    cuts.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    for (s, e) in cuts {
        let s = s.max(cursor);
        out.push_str(&text[cursor..s]);
        cursor = cursor.max(e);
    }
    out.push_str(&text[cursor..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(pattern: &str, replace: &str, line: &str) -> Option<String> {
        CommandRewrite::new(pattern, replace).unwrap().rewrite(line)
    }

    #[test]
    fn structural_detection() {
        assert!(is_structural("cat $$$ARGS"));
        assert!(is_structural("cat $F"));
        assert!(is_structural("rm $$$"));
        assert!(is_structural("x $_"));
        assert!(!is_structural(r"^cat\s+(\S+)$"));
        assert!(!is_structural(r"echo \$HOME"));
        assert!(!is_structural("costs $5"));
        assert!(!is_structural("echo $home"));
    }

    #[test]
    fn meta_refs_follow_ast_grep() {
        let refs = meta_refs("a $X $$$ARGS $$$ $$$$Y $1");
        let got: Vec<(&str, Option<&str>, bool)> = refs
            .iter()
            .map(|r| {
                (
                    &"a $X $$$ARGS $$$ $$$$Y $1"[r.start..r.end],
                    r.name.as_deref(),
                    r.multi,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("$X", Some("X"), false),
                ("$$$ARGS", Some("ARGS"), true),
                ("$$$", None, true),
                ("$$$Y", Some("Y"), true),
            ]
        );
    }

    #[test]
    fn command_rewrites_from_the_cases() {
        // W04, W06, W07.
        assert_eq!(
            cmd("cat $$$ARGS", "bat $$$ARGS", "cat -n foo.txt").as_deref(),
            Some("bat -n foo.txt")
        );
        assert_eq!(cmd("cat $$$ARGS", "bat $$$ARGS", "ls -la"), None);
        assert_eq!(
            cmd("cat $$$A", "bat $$$A && echo $HOME", "cat foo.txt").as_deref(),
            Some("bat foo.txt && echo $HOME")
        );
        assert_eq!(
            cmd("cat $F", "bat $F", "cat -n foo.txt").as_deref(),
            Some("bat -n")
        );
        // CA29: every command of a list, extra template text kept.
        let r = CommandRewrite::new("cat $$$ARGS", "bat --paging=never $$$ARGS").unwrap();
        assert_eq!(
            r.rewrite("cat src/main.rs && cat Cargo.toml").as_deref(),
            Some("bat --paging=never src/main.rs && bat --paging=never Cargo.toml")
        );
        assert_eq!(
            r.rewrite("cat -n src/lib.rs; cat README.md").as_deref(),
            Some("bat --paging=never -n src/lib.rs; bat --paging=never README.md")
        );
        // CA30: pipelines, substitutions, subshells; the rest of the line untouched.
        let r = CommandRewrite::new("cat $$$ARGS", "bat $$$ARGS").unwrap();
        for (line, want) in [
            (
                "cat server.log | grep -i error | tail -n 20",
                "bat server.log | grep -i error | tail -n 20",
            ),
            (
                "wc -l $(cat changed_files.txt)",
                "wc -l $(bat changed_files.txt)",
            ),
            (
                "(cd web && cat package.json) | jq .scripts",
                "(cd web && bat package.json) | jq .scripts",
            ),
            (
                "cat a.txt 'b c.txt' | grep x && cat -n f",
                "bat a.txt 'b c.txt' | grep x && bat -n f",
            ),
            // CA32: a bare cat takes the zero-argument form.
            (
                "git show HEAD:README.md | cat",
                "git show HEAD:README.md | bat",
            ),
            ("cat", "bat"),
            ("cat x; cat", "bat x; bat"),
        ] {
            assert_eq!(r.rewrite(line).as_deref(), Some(want), "{line}");
        }
        // CA31: cat as an argument, in a string, or another program.
        for line in [
            "grep -rn cat docs/",
            "echo \"run cat README.md to see the docs\"",
            "git log --format=%s | tac",
            "",
        ] {
            assert_eq!(r.rewrite(line), None, "{line}");
        }
    }

    #[test]
    fn zero_argument_forms_in_the_middle() {
        let r = CommandRewrite::new(
            "git push $$$A --force $$$B",
            "git push $$$A --force-with-lease $$$B",
        )
        .unwrap();
        assert_eq!(
            r.rewrite("git push origin --force main").as_deref(),
            Some("git push origin --force-with-lease main")
        );
        assert_eq!(
            r.rewrite("git push --force").as_deref(),
            Some("git push --force-with-lease")
        );
        assert_eq!(r.rewrite("git push origin main"), None);
    }

    #[test]
    fn bad_command_patterns_are_errors() {
        assert!(CommandRewrite::new("cat )", "bat").is_err());
        assert!(CommandRewrite::new("", "bat").is_err());
    }

    #[test]
    fn code_rewrites_in_each_language() {
        let py = CodePattern::new("os.system($CMD)", Lang::Python).unwrap();
        let tpl = "subprocess.run([$CMD], check=True)";
        assert_eq!(
            rewrite_code(&py, tpl, "os.system(\"ls\")\n").as_deref(),
            Some("subprocess.run([\"ls\"], check=True)\n")
        );
        assert_eq!(rewrite_code(&py, tpl, "x = 1\n"), None);
        // Idempotent: the rewritten text does not match again.
        assert_eq!(
            rewrite_code(&py, tpl, "subprocess.run([\"ls\"], check=True)\n"),
            None
        );
        let tpl2 = "subprocess.run($CMD, shell=True, check=True)";
        assert_eq!(
            rewrite_code(&py, tpl2, "import os\n\nos.system(\"rm -rf build/\")\n").as_deref(),
            Some("import os\n\nsubprocess.run(\"rm -rf build/\", shell=True, check=True)\n")
        );

        let ts = CodePattern::new("console.log($$$ARGS)", Lang::TypeScript).unwrap();
        let src = "for (const id of ids) {\n    console.log(\"syncing\", id);\n}\nconsole.log(\"synced\", count, \"accounts\");\n";
        assert_eq!(
            rewrite_code(&ts, "logger.debug($$$ARGS)", src).as_deref(),
            Some(
                "for (const id of ids) {\n    logger.debug(\"syncing\", id);\n}\nlogger.debug(\"synced\", count, \"accounts\");\n"
            )
        );

        let tsx = CodePattern::new("<img $$$ATTRS />", Lang::Tsx).unwrap();
        assert_eq!(
            rewrite_code(
                &tsx,
                "<Image $$$ATTRS />",
                "const a = <img src={s} alt={n} />;\n"
            )
            .as_deref(),
            Some("const a = <Image src={s} alt={n} />;\n")
        );

        let js = CodePattern::new("var $A = $B", Lang::JavaScript).unwrap();
        assert_eq!(
            rewrite_code(&js, "let $A = $B", "var a = 1; var b = f(2);\n").as_deref(),
            Some("let a = 1; let b = f(2);\n")
        );

        let rs = CodePattern::new("$X.unwrap()", Lang::Rust).unwrap();
        assert_eq!(
            rewrite_code(&rs, "$X?", "fn f() -> R { let a = g().unwrap(); Ok(a) }\n").as_deref(),
            Some("fn f() -> R { let a = g()?; Ok(a) }\n")
        );

        let go = CodePattern::new("fmt.Println($$$A)", Lang::Go).unwrap();
        assert_eq!(
            rewrite_code(
                &go,
                "log.Println($$$A)",
                "package m\n\nfunc f() {\n\tfmt.Println(\"a\", b)\n}\n"
            )
            .as_deref(),
            Some("package m\n\nfunc f() {\n\tlog.Println(\"a\", b)\n}\n")
        );

        let sh = CodePattern::new("echo $$$A", Lang::Bash).unwrap();
        assert_eq!(
            rewrite_code(&sh, "printf '%s\\n' $$$A", "echo hi there\n").as_deref(),
            Some("printf '%s\\n' hi there\n")
        );
    }

    #[test]
    fn uncaptured_template_variables_stay_literal_in_code() {
        // `$` is an identifier character in JS: `$el` and `$QUERY` are kept as written.
        let js = CodePattern::new("find($A)", Lang::JavaScript).unwrap();
        assert_eq!(
            rewrite_code(&js, "$QUERY($A).first()", "find(x);\n").as_deref(),
            Some("$QUERY(x).first();\n")
        );
    }

    #[test]
    fn multi_line_captures_keep_their_shape() {
        let py = CodePattern::new("os.system($CMD)", Lang::Python).unwrap();
        let src = "def f():\n    os.system(\n        \"ls\"\n        \" -l\"\n    )\n";
        let out = rewrite_code(&py, "subprocess.run($CMD, shell=True)", src).unwrap();
        // ast-grep re-indents a multi-line capture to the indentation of the line it lands on.
        assert_eq!(
            out,
            "def f():\n    subprocess.run(\"ls\"\n    \" -l\", shell=True)\n"
        );
    }

    #[test]
    fn remove_spans_takes_one_side_of_whitespace() {
        assert_eq!(remove_spans("cat $$$ARGS", &[(4, 11)]), "cat");
        assert_eq!(remove_spans("$$$A cat", &[(0, 4)]), "cat");
        assert_eq!(
            remove_spans("a $$$A --force $$$B", &[(2, 6), (15, 19)]),
            "a --force"
        );
    }
}

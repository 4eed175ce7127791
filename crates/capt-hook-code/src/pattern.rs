//! Compiled ast-grep patterns and parsed source text.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use ast_grep_core::matcher::PatternNode;
use ast_grep_core::meta_var::MetaVariable;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_core::{AstGrep, Language, Pattern};

use crate::{CodeError, Lang};

/// An ast-grep pattern compiled for one language, checked when it is built.
#[derive(Clone)]
pub struct CodePattern {
    source: String,
    lang: Lang,
    pattern: Pattern,
    captured: BTreeSet<String>,
    /// A metavariable used twice (`$A == $A`): matching then compares whole subtrees, which
    /// ast-grep does recursively, so deep input needs a deep stack.
    compares: bool,
}

impl fmt::Debug for CodePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CodePattern({}: {:?})", self.lang, self.source)
    }
}

impl CodePattern {
    /// Compiles `source` for `lang`; a pattern that does not parse is an error, never a panic.
    pub fn new(source: &str, lang: Lang) -> Result<CodePattern, CodeError> {
        let fail = |reason: String| CodeError::Pattern {
            pattern: source.to_owned(),
            lang,
            reason,
        };
        if source.trim().is_empty() {
            return Err(fail("the pattern is empty".into()));
        }
        // ast-grep converts a pattern recursively; a stack overflow would abort the process,
        // which no unwind guard can catch, so absurdly deep patterns are refused up front.
        if pattern_depth(source, lang) > MAX_PATTERN_DEPTH {
            return Err(fail(format!(
                "the pattern nests more than {MAX_PATTERN_DEPTH} levels deep"
            )));
        }
        // When ast-grep refuses a pattern that also fails to parse, the parse error says more
        // ("near `)`") than "multiple AST nodes".
        let mut pattern =
            compile(source, lang).map_err(|e| syntax_error(source, lang).map_or(e, fail))?;
        // The pattern's own parse may contain `ERROR` around the node it keeps (Rust reads a
        // bare `return $X` that way) and `MISSING` tokens (Go and Rust fragments have no
        // `package` or `;`); both are fine. An error inside the kept node is not: it would
        // match nothing, silently.
        if pattern.has_error() || contains_error(&pattern.node) {
            let reason = syntax_error(source, lang).unwrap_or_else(|| "syntax error".into());
            return Err(fail(reason));
        }
        if lang == Lang::Go && root_kind(&pattern, lang).as_deref() == Some(GO_CONVERSION) {
            // Outside a function body tree-sitter-go reads `pkg.F(x)` as a type conversion, so
            // `fmt.Println($$$)` would never match a call; re-read it inside a body, where the
            // same text is a call expression.
            let context = format!("func _() {{\n{source}\n}}");
            if let Ok(Ok(call)) = catch_unwind(AssertUnwindSafe(|| {
                Pattern::contextual(&context, "call_expression", lang)
            })) {
                pattern = call;
            }
        }
        let captured = pattern
            .defined_vars()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let compares = repeats_a_metavariable(&pattern.node);
        Ok(CodePattern {
            source: source.to_owned(),
            lang,
            pattern,
            captured,
            compares,
        })
    }

    /// Compiles `source` for the language named by `lang_id` (`py`, `ts`, …).
    pub fn with_lang_id(source: &str, lang_id: &str) -> Result<CodePattern, CodeError> {
        let lang =
            Lang::from_id(lang_id).ok_or_else(|| CodeError::UnknownLanguage(lang_id.to_owned()))?;
        CodePattern::new(source, lang)
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The language the pattern was compiled for.
    pub fn lang(&self) -> Lang {
        self.lang
    }

    /// Names of the metavariables the pattern captures (`$A` and `$$$ARGS` give `A`, `ARGS`;
    /// `$_` and a bare `$$$` capture nothing).
    pub fn captured(&self) -> impl Iterator<Item = &str> {
        self.captured.iter().map(String::as_str)
    }

    pub(crate) fn inner(&self) -> &Pattern {
        &self.pattern
    }

    /// The same pattern text with another compiled form (a contextual re-read).
    pub(crate) fn with_inner(mut self, pattern: Pattern) -> CodePattern {
        self.captured = pattern
            .defined_vars()
            .into_iter()
            .map(str::to_owned)
            .collect();
        self.compares = repeats_a_metavariable(&pattern.node);
        self.pattern = pattern;
        self
    }

    /// The grammar node kind the pattern matches at its root (`call`, `command`, …).
    pub(crate) fn root_kind(&self) -> Option<String> {
        root_kind(&self.pattern, self.lang)
    }
}

const GO_CONVERSION: &str = "type_conversion_expression";

/// Deepest syntax tree accepted for a pattern; real patterns stay well under a hundred.
const MAX_PATTERN_DEPTH: usize = 512;

fn pattern_depth(source: &str, lang: Lang) -> usize {
    let processed = lang.pre_process_pattern(source);
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(&lang.grammar()).is_err() {
        return 0;
    }
    parser
        .parse(processed.as_bytes(), None)
        .map_or(0, |tree| tree_depth(tree.root_node()))
}

/// The deepest nesting below `root`, walked with a cursor (no recursion).
fn tree_depth(root: tree_sitter::Node<'_>) -> usize {
    let mut cursor = root.walk();
    let (mut depth, mut max) = (0usize, 0usize);
    loop {
        if cursor.goto_first_child() {
            depth += 1;
            max = max.max(depth);
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if depth == 0 || !cursor.goto_parent() {
                return max;
            }
            depth -= 1;
        }
    }
}

fn compile(source: &str, lang: Lang) -> Result<Pattern, CodeError> {
    let refused = |reason: String| CodeError::Pattern {
        pattern: source.to_owned(),
        lang,
        reason,
    };
    // `Pattern::try_new` reports bad input as an error; the unwind guard is for any panic left
    // inside ast-grep, so a hostile pattern can never take the worker down.
    let built = catch_unwind(AssertUnwindSafe(|| Pattern::try_new(source, lang)))
        .map_err(|_| refused("ast-grep could not compile the pattern".to_owned()))?;
    // Messages quote the pre-processed text; show the author's `$` again.
    built.map_err(|e| refused(e.to_string().replace(lang.expando_char(), "$")))
}

fn repeats_a_metavariable(node: &PatternNode) -> bool {
    fn walk<'p>(node: &'p PatternNode, seen: &mut BTreeSet<&'p str>) -> bool {
        match node {
            PatternNode::MetaVar { meta_var } => match meta_var {
                MetaVariable::Capture(name, _) | MetaVariable::MultiCapture(name) => {
                    !seen.insert(name.as_str())
                }
                MetaVariable::Dropped(_) | MetaVariable::Multiple => false,
            },
            PatternNode::Terminal { .. } => false,
            PatternNode::Internal { children, .. } => children.iter().any(|c| walk(c, seen)),
        }
    }
    walk(node, &mut BTreeSet::new())
}

/// tree-sitter's kind id for `ERROR` nodes.
const ERROR_KIND: u16 = u16::MAX;

fn contains_error(node: &PatternNode) -> bool {
    match node {
        PatternNode::MetaVar { .. } => false,
        PatternNode::Terminal { kind_id, .. } => *kind_id == ERROR_KIND,
        PatternNode::Internal { kind_id, children } => {
            *kind_id == ERROR_KIND || children.iter().any(contains_error)
        }
    }
}

/// Where the pattern's own parse first went wrong, for the error message.
fn syntax_error(source: &str, lang: Lang) -> Option<String> {
    let processed = lang.pre_process_pattern(source);
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&lang.grammar()).ok()?;
    let tree = parser.parse(processed.as_bytes(), None)?;
    let root = tree.root_node();
    if !root.has_error() {
        return None;
    }
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() {
            let text = node.utf8_text(processed.as_bytes()).unwrap_or("");
            let text = text.replace(lang.expando_char(), "$");
            let first = text.lines().next().unwrap_or("").trim();
            let col = node.start_position().column + 1;
            return Some(if first.is_empty() {
                format!("syntax error at column {col}")
            } else {
                format!("syntax error at column {col} near `{first}`")
            });
        }
        // Only descend into subtrees that contain an error, so the walk stays short.
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return None;
            }
        }
    }
}

fn root_kind(pattern: &Pattern, lang: Lang) -> Option<String> {
    let id = match &pattern.node {
        PatternNode::Internal { kind_id, .. } | PatternNode::Terminal { kind_id, .. } => *kind_id,
        PatternNode::MetaVar { .. } => return None,
    };
    lang.grammar().node_kind_for_id(id).map(str::to_owned)
}

/// A pattern given without a language (the `pattern` condition), compiled lazily for the
/// language of each file it meets.
#[derive(Debug, Clone)]
pub struct AnyLangPattern {
    source: String,
    compiled: [OnceLock<Option<CodePattern>>; Lang::ALL.len()],
}

impl AnyLangPattern {
    /// Accepts `source` when it compiles in at least one supported language.
    pub fn new(source: &str) -> Result<AnyLangPattern, CodeError> {
        let any = AnyLangPattern {
            source: source.to_owned(),
            compiled: [const { OnceLock::new() }; Lang::ALL.len()],
        };
        let mut reasons = Vec::new();
        // Checking Python first finds the usual answer at once; the rest load only on failure.
        for lang in Lang::ALL {
            match CodePattern::new(source, lang) {
                Ok(p) => {
                    let _ = any.compiled[lang as usize].set(Some(p));
                    return Ok(any);
                }
                Err(e) => {
                    let _ = any.compiled[lang as usize].set(None);
                    reasons.push(e.to_string());
                }
            }
        }
        Err(CodeError::NoLanguage {
            pattern: source.to_owned(),
            reasons: reasons.join("; "),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The pattern compiled for `lang`, or `None` when it does not parse in that language.
    pub fn for_lang(&self, lang: Lang) -> Option<&CodePattern> {
        self.compiled[lang as usize]
            .get_or_init(|| CodePattern::new(&self.source, lang).ok())
            .as_ref()
    }
}

/// One structural match in a parsed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// 1-based line where the match starts.
    pub line: usize,
    /// 1-based line where the match ends.
    pub end_line: usize,
    /// Byte range of the match in the text.
    pub bytes: Range<usize>,
    /// The matched source text.
    pub text: String,
    /// `$NAME` captures, by name.
    pub single: BTreeMap<String, String>,
    /// `$$$NAME` captures, by name: named nodes only, so separators such as Python's `,` are
    /// left out.
    pub multi: BTreeMap<String, Vec<String>>,
}

impl Match {
    /// The first line of the matched text, trimmed: how a violation names the match.
    pub fn snippet(&self) -> &str {
        self.text.lines().next().unwrap_or("").trim()
    }

    /// The matched text with every run of whitespace collapsed to one space, so moved or
    /// re-indented code compares equal.
    pub fn normalized(&self) -> String {
        normalize_ws(&self.text)
    }
}

pub(crate) fn normalize_ws(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A text parsed once with one grammar, to run any number of patterns over it.
pub struct ParsedCode {
    lang: Lang,
    root: AstGrep<StrDoc<Lang>>,
    /// Nesting depth of the tree, measured on demand.
    depth: OnceLock<usize>,
}

/// Trees up to this deep are matched on the caller's stack whatever the pattern.
const INLINE_DEPTH: usize = 512;
/// Stack reserved per level of nesting for a subtree comparison (generous for debug builds).
const STACK_PER_LEVEL: usize = 4 << 10;
/// Beyond this depth a comparing pattern is not run at all (it would need gigabytes of stack).
const MAX_COMPARE_DEPTH: usize = 200_000;

impl fmt::Debug for ParsedCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ParsedCode({}, {} bytes)", self.lang, self.text().len())
    }
}

impl ParsedCode {
    /// Parses `text`; tree-sitter recovers from syntax errors, so this only fails when no parser
    /// could be set up at all.
    pub fn parse(lang: Lang, text: &str) -> Result<ParsedCode, CodeError> {
        let root =
            AstGrep::try_new(text, lang).map_err(|reason| CodeError::Parse { lang, reason })?;
        Ok(ParsedCode {
            lang,
            root,
            depth: OnceLock::new(),
        })
    }

    /// The language the text was parsed as.
    pub fn lang(&self) -> Lang {
        self.lang
    }

    /// The parsed text.
    pub fn text(&self) -> &str {
        self.root.get_text()
    }

    /// Whether tree-sitter had to recover from a syntax error anywhere in the text.
    pub fn has_syntax_error(&self) -> bool {
        self.ts_root().has_error()
    }

    /// The tree-sitter root node, for checks written as code over the tree.
    pub fn ts_root(&self) -> tree_sitter::Node<'_> {
        self.root.root().get_inner_node()
    }

    /// Every match of `pattern` in document order, nested matches included. A pattern compiled
    /// for another language matches nothing.
    pub fn find(&self, pattern: &CodePattern) -> Vec<Match> {
        self.find_where(pattern, |_, _| true)
    }

    /// The matches whose 1-based line span passes `keep`; the others are never copied out.
    pub(crate) fn find_where(
        &self,
        pattern: &CodePattern,
        keep: impl Fn(usize, usize) -> bool + Sync,
    ) -> Vec<Match> {
        if pattern.lang() != self.lang {
            return Vec::new();
        }
        self.with_stack_for(pattern, Vec::new, || self.collect(pattern, &keep))
    }

    fn collect(&self, pattern: &CodePattern, keep: &impl Fn(usize, usize) -> bool) -> Vec<Match> {
        let root = self.root.root();
        root.find_all(pattern.inner())
            .filter_map(|m| {
                let (line, end_line) = (m.start_pos().line() + 1, m.end_pos().line() + 1);
                if !keep(line, end_line) {
                    return None;
                }
                let env = m.get_env();
                let mut single = BTreeMap::new();
                let mut multi = BTreeMap::new();
                for name in pattern.captured() {
                    if let Some(node) = env.get_match(name) {
                        single.insert(name.to_owned(), node.text().into_owned());
                    } else {
                        let nodes = env.get_multiple_matches(name);
                        if !nodes.is_empty() {
                            let named = nodes
                                .iter()
                                .filter(|n| n.is_named())
                                .map(|n| n.text().into_owned())
                                .collect();
                            multi.insert(name.to_owned(), named);
                        }
                    }
                }
                Some(Match {
                    line,
                    end_line,
                    bytes: m.range(),
                    text: m.text().into_owned(),
                    single,
                    multi,
                })
            })
            .collect()
    }

    /// Runs `work` (a match of `pattern` over this tree) where it cannot overflow the stack: on
    /// the caller's thread normally, on a helper thread with a stack sized to the tree when the
    /// pattern compares subtrees and the tree is deep, and not at all (`fallback`) when even
    /// that would be unreasonable.
    pub(crate) fn with_stack_for<R: Send>(
        &self,
        pattern: &CodePattern,
        fallback: impl FnOnce() -> R,
        work: impl FnOnce() -> R + Send,
    ) -> R {
        if !pattern.compares {
            return work();
        }
        let depth = self.depth();
        if depth <= INLINE_DEPTH {
            return work();
        }
        if depth > MAX_COMPARE_DEPTH {
            return fallback();
        }
        let stack = depth * STACK_PER_LEVEL + (1 << 20);
        let ran = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("capt-hook-code-deep".into())
                .stack_size(stack)
                .spawn_scoped(scope, work)
                .ok()
                .and_then(|handle| handle.join().ok())
        });
        ran.unwrap_or_else(fallback)
    }

    /// The deepest nesting of the tree, walked once without recursion.
    fn depth(&self) -> usize {
        *self.depth.get_or_init(|| tree_depth(self.ts_root()))
    }

    /// Whether `pattern` matches anywhere (stops at the first match).
    pub fn contains(&self, pattern: &CodePattern) -> bool {
        pattern.lang() == self.lang
            && self.with_stack_for(
                pattern,
                || false,
                || self.root.root().find(pattern.inner()).is_some(),
            )
    }

    pub(crate) fn grep(&self) -> &AstGrep<StrDoc<Lang>> {
        &self.root
    }
}

/// Whether `pattern` matches anywhere in `text` (the `pattern` condition).
pub fn matches(pattern: &CodePattern, text: &str) -> bool {
    ParsedCode::parse(pattern.lang(), text).is_ok_and(|p| p.contains(pattern))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lang: Lang, pattern: &str, src: &str) -> Vec<(usize, String)> {
        let p = CodePattern::new(pattern, lang).unwrap();
        let parsed = ParsedCode::parse(lang, src).unwrap();
        parsed
            .find(&p)
            .into_iter()
            .map(|m| (m.line, m.text))
            .collect()
    }

    #[test]
    fn finds_calls_in_every_language() {
        let py = "print('a', x)\n# print(b)\ns = 'print(c)'\nprint()\nlogger.print(1)\n";
        assert_eq!(
            texts(Lang::Python, "print($$$)", py),
            vec![(1, "print('a', x)".into()), (4, "print()".into())]
        );
        let ts = "const a: number = 1;\nconsole.log(a);\nconsole.error(a);\n";
        assert_eq!(
            texts(Lang::TypeScript, "console.log($$$)", ts),
            vec![(2, "console.log(a)".into())]
        );
        let tsx = "const x = <div>\n  <img\n    src={a}\n  />\n</div>;\n";
        assert_eq!(
            texts(Lang::Tsx, "<img $$$ATTRS />", tsx),
            vec![(2, "<img\n    src={a}\n  />".into())]
        );
        let js = "// eval(a)\nconst s = \"eval(b)\";\neval(c);\nconst j = <b>{eval(d)}</b>;\n";
        assert_eq!(
            texts(Lang::JavaScript, "eval($$$)", js),
            vec![(3, "eval(c)".into()), (4, "eval(d)".into())]
        );
        let rs = "fn f() {\n    let a = b().unwrap();\n    c.unwrap_or(1);\n}\n";
        assert_eq!(
            texts(Lang::Rust, "$X.unwrap()", rs),
            vec![(2, "b().unwrap()".into())]
        );
        let go = "package m\n\nfunc f() {\n\tpanic(err)\n}\n";
        assert_eq!(
            texts(Lang::Go, "panic($$$)", go),
            vec![(4, "panic(err)".into())]
        );
        let sh = "cat a | grep cat\necho cat\n";
        assert_eq!(
            texts(Lang::Bash, "cat $$$ARGS", sh),
            vec![(1, "cat a".into())]
        );
    }

    /// Java joins the languages: a call pattern matches inside a method, `$` captures work,
    /// and the lookups by id and by file extension find it.
    #[test]
    fn java_patterns_match_calls_in_methods() {
        let java =
            "class A {\n  void f() {\n    System.out.println(x);\n    log.info(y);\n  }\n}\n";
        assert_eq!(
            texts(Lang::Java, "System.out.println($$$)", java),
            vec![(3, "System.out.println(x)".into())]
        );
        assert_eq!(
            texts(Lang::Java, "$L.info($A)", java),
            vec![(4, "log.info(y)".into())]
        );
        assert_eq!(Lang::from_id("java"), Some(Lang::Java));
        assert_eq!(Lang::from_path("src/Main.java"), Some(Lang::Java));
    }

    #[test]
    fn go_qualified_calls_match_although_they_parse_as_conversions() {
        let go = "package m\n\nimport \"fmt\"\n\nfunc f() {\n\tfmt.Println(\"a\", 1)\n\tfmt.Println(x)\n\tfmt.Printf(x)\n}\n";
        assert_eq!(
            texts(Lang::Go, "fmt.Println($$$)", go),
            vec![
                (6, "fmt.Println(\"a\", 1)".into()),
                (7, "fmt.Println(x)".into())
            ]
        );
        assert_eq!(
            texts(Lang::Go, "fmt.Println($A)", go),
            vec![(7, "fmt.Println(x)".into())]
        );
    }

    #[test]
    fn python_multi_captures_leave_out_separators() {
        let p = CodePattern::new("print($$$ARGS)", Lang::Python).unwrap();
        let parsed = ParsedCode::parse(Lang::Python, "print('a', x, *rest)\n").unwrap();
        let found = parsed.find(&p);
        assert_eq!(found[0].multi["ARGS"], vec!["'a'", "x", "*rest"]);
        let single = CodePattern::new("os.system($CMD)", Lang::Python).unwrap();
        let parsed = ParsedCode::parse(Lang::Python, "os.system(\"ls -l\")").unwrap();
        assert_eq!(parsed.find(&single)[0].single["CMD"], "\"ls -l\"");
        assert_eq!(single.captured().collect::<Vec<_>>(), vec!["CMD"]);
    }

    #[test]
    fn bash_dollar_upper_is_always_a_metavariable() {
        // Documented pitfall: `$HOME` in a bash pattern captures any argument.
        let got = texts(Lang::Bash, "rm -rf $HOME", "rm -rf /\nrm -rf \"$HOME\"\n");
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn bad_patterns_are_errors_that_say_why() {
        let cases = [
            (Lang::Python, "print(", "syntax error"),
            (Lang::Python, "foo(a b)", "near `b`"),
            (Lang::Python, "", "empty"),
            (Lang::Python, "   ", "empty"),
            (Lang::Python, "a = 1\nb = 2", "Multiple AST nodes"),
            (Lang::Python, "$$$ARGS", "multi meta variable"),
            (Lang::TypeScript, "console.log(", "syntax error"),
            (Lang::Tsx, "<img", "syntax error"),
            (Lang::JavaScript, "eval(}", "syntax error"),
            (Lang::Rust, "fn (", "syntax error"),
            (Lang::Go, "func {", "syntax error"),
            (Lang::Bash, "cat )", "near `)`"),
            (Lang::Bash, "cat \"unterminated", "syntax error"),
        ];
        for (lang, src, want) in cases {
            let err = CodePattern::new(src, lang).unwrap_err().to_string();
            assert!(err.contains(want), "{lang} {src:?}: {err}");
            assert!(err.contains(&format!("invalid {lang} pattern")), "{err}");
        }
        let deep = format!("f({}1{})", "(".repeat(5000), ")".repeat(5000));
        let err = CodePattern::new(&deep, Lang::Python)
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 512 levels"));
        let chain = format!("a{}", ".b".repeat(5000));
        let err = CodePattern::new(&chain, Lang::TypeScript)
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 512 levels"));
        let err = CodePattern::with_lang_id("x", "cobol").unwrap_err();
        assert_eq!(err, CodeError::UnknownLanguage("cobol".into()));
    }

    #[test]
    fn statement_patterns_compile_and_match() {
        let go = "package m\nfunc f() {\n\tx := g(1)\n\tdefer h()\n\treturn x\n}\n";
        assert_eq!(
            texts(Lang::Go, "$A := $B", go),
            vec![(3, "x := g(1)".into())]
        );
        assert_eq!(
            texts(Lang::Go, "defer $F()", go),
            vec![(4, "defer h()".into())]
        );
        let rs = "fn f() -> u8 {\n    let a = b.unwrap();\n    return a;\n}\n";
        assert_eq!(
            texts(Lang::Rust, "return $X", rs),
            vec![(3, "return a".into())]
        );
        assert_eq!(
            texts(Lang::Rust, "let $A = $B.unwrap();", rs),
            vec![(2, "let a = b.unwrap();".into())]
        );
        let py = "async def f():\n    x = await g()\n    return x\n";
        assert_eq!(
            texts(Lang::Python, "await $X", py),
            vec![(2, "await g()".into())]
        );
        let ts = "const a = b as any;\n";
        assert_eq!(
            texts(Lang::TypeScript, "$A as any", ts),
            vec![(1, "b as any".into())]
        );
        let sh = "if [ -f x ]; then echo y; fi\n";
        assert_eq!(texts(Lang::Bash, "if [ $A ]; then $$$B; fi", sh).len(), 1);
    }

    #[test]
    fn patterns_are_shareable_across_threads() {
        fn check<T: Send + Sync>() {}
        check::<CodePattern>();
        check::<AnyLangPattern>();
        check::<crate::CommandRewrite>();
        check::<crate::StyleRule>();
    }

    #[test]
    fn any_lang_pattern_compiles_per_file_language() {
        let p = AnyLangPattern::new("eval($$$)").unwrap();
        for (lang, src) in [
            (
                Lang::JavaScript,
                "export function run(code) {\n  return eval(code);\n}\n",
            ),
            (
                Lang::TypeScript,
                "export function run(code: string): unknown {\n  return eval(code);\n}\n",
            ),
            (Lang::Python, "def calc(expr):\n    return eval(expr)\n"),
        ] {
            assert!(matches(p.for_lang(lang).unwrap(), src), "{lang}");
        }
        let safe = "// never call eval(code) here\nexport const NOTE = \"eval(x) is banned\";\n";
        assert!(!matches(p.for_lang(Lang::JavaScript).unwrap(), safe));
        assert!(AnyLangPattern::new("((((").is_err());
    }

    #[test]
    fn a_pattern_for_another_language_matches_nothing() {
        let p = CodePattern::new("print($$$)", Lang::Python).unwrap();
        let parsed = ParsedCode::parse(Lang::JavaScript, "print(1)").unwrap();
        assert!(parsed.find(&p).is_empty());
        assert!(!parsed.contains(&p));
    }
}

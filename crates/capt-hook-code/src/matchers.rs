//! Structural matchers for style rules: a small boolean algebra over the nodes of a parsed file.
//!
//! A [`Matcher`] tests one node of a tree-sitter tree, knowing where the node sits. Leaves say
//! what a node is: a grammar kind ([`kind`]), a category every grammar table names (the presets:
//! [`imports`], [`control_flow`], [`function`], …), a call of a bare name ([`calls`]), a keyword
//! argument ([`kwarg`]), a name reference ([`reference`]), a bound name ([`named`]) or the node's
//! text ([`text`]). Structural forms look around it: [`under`] (some ancestor), [`child_of`] (the
//! parent, seen through blocks), [`following`] (a later statement of the same body) and
//! [`annotated`] (the owner of a type annotation). `&`, `|` and `!` combine them.
//!
//! The same value comes from the Rust functions here and from the text hook files write
//! ([`Matcher::parse`]): `imports & child_of(control_flow) & ~under(type_checking)`.
//!
//! Node kinds belong to a grammar, so every leaf reads the language's [`Grammar`] row: one table
//! says, per language, which kinds make up each category and which nodes are only wrappers.
//! Python's row is complete (the seeds' matchers are Python's); the other languages have the
//! categories their grammars have, and [`Matcher::check`] refuses a matcher that means nothing in
//! the rule's language before any file is read.

use std::fmt;
use std::ops::{BitAnd, BitOr, Not};
use std::sync::Arc;

use capt_hook_core::{Mode, Pattern};
use tree_sitter::Node;

use crate::Lang;
use crate::lint::Violation;
use crate::pattern::{ParsedCode, normalize_ws};

/// A composable, immutable node matcher; cheap to clone.
#[derive(Clone)]
pub struct Matcher {
    expr: Arc<Expr>,
}

/// A refinement written as Rust code: the escape hatch for what no leaf says.
pub type Refinement = Arc<dyn Fn(&StyleNode<'_>) -> bool + Send + Sync>;

enum Expr {
    Kind(Vec<String>),
    Preset(Preset),
    Calls(String),
    Kwarg(String),
    Ref(String),
    Named(Pattern),
    Text(Pattern),
    Annotated(Option<Matcher>),
    Under(Matcher),
    ChildOf(Matcher),
    Following(Matcher),
    And(Matcher, Matcher),
    Or(Matcher, Matcher),
    Not(Matcher),
    Refine(Matcher, Refinement),
}

/// The named categories: kind sets read from the grammar table, and Python's predicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preset {
    Module,
    Class,
    Function,
    Imports,
    Call,
    Assignment,
    ControlFlow,
    TypeChecking,
    FutureAnnotations,
    ForwardRef,
}

impl Preset {
    fn name(self) -> &'static str {
        match self {
            Preset::Module => "module",
            Preset::Class => "class",
            Preset::Function => "function",
            Preset::Imports => "imports",
            Preset::Call => "call",
            Preset::Assignment => "assignment",
            Preset::ControlFlow => "control_flow",
            Preset::TypeChecking => "type_checking",
            Preset::FutureAnnotations => "future_annotations",
            Preset::ForwardRef => "forward_ref",
        }
    }
}

/// One language's row: which node kinds make up each category, and how its trees nest.
pub struct Grammar {
    module: &'static [&'static str],
    class: &'static [&'static str],
    function: &'static [&'static str],
    imports: &'static [&'static str],
    call: &'static [&'static str],
    assignment: &'static [&'static str],
    control_flow: &'static [&'static str],
    /// Nodes the parent relation looks through: the block between an `if` and its statements,
    /// the statement wrapping an expression. Without this, "the parent of an import" would
    /// always be a block.
    wrappers: &'static [&'static str],
    /// Nodes whose named children are a body of statements (for [`following`]).
    bodies: &'static [&'static str],
    /// Kinds of a bare name.
    identifiers: &'static [&'static str],
    /// The field of a call node that holds its callee.
    callee: &'static str,
    /// Kinds of a keyword argument (`f(x=1)`), whose `name` field is the keyword.
    keyword_arguments: &'static [&'static str],
    /// Kinds that bind a name, with the field that holds it (a parameter, a declaration).
    binders: &'static [(&'static str, &'static str)],
    /// Kinds that own a type annotation, with the field that holds it.
    annotation_owners: &'static [(&'static str, &'static str)],
    /// Wrappers around an annotation's expression (Python's `type`, TypeScript's
    /// `type_annotation`): the expression inside is what an inner matcher tests.
    annotation_wrappers: &'static [&'static str],
}

const PYTHON: Grammar = Grammar {
    module: &["module"],
    class: &["class_definition"],
    function: &["function_definition"],
    imports: &[
        "import_statement",
        "import_from_statement",
        "future_import_statement",
    ],
    call: &["call"],
    assignment: &["assignment"],
    control_flow: &[
        "if_statement",
        "elif_clause",
        "for_statement",
        "while_statement",
        "with_statement",
        "try_statement",
        "except_clause",
    ],
    wrappers: &[
        "block",
        "expression_statement",
        "else_clause",
        "finally_clause",
        "decorated_definition",
    ],
    bodies: &["module", "block"],
    identifiers: &["identifier"],
    callee: "function",
    keyword_arguments: &["keyword_argument"],
    binders: &[
        ("class_definition", "name"),
        ("function_definition", "name"),
        ("assignment", "left"),
        ("default_parameter", "name"),
        ("typed_default_parameter", "name"),
    ],
    annotation_owners: &[
        ("typed_parameter", "type"),
        ("typed_default_parameter", "type"),
        ("function_definition", "return_type"),
        ("assignment", "type"),
    ],
    annotation_wrappers: &["type"],
};

const JAVASCRIPT: Grammar = Grammar {
    module: &["program"],
    class: &["class_declaration", "class"],
    function: &[
        "function_declaration",
        "function_expression",
        "arrow_function",
        "method_definition",
        "generator_function_declaration",
    ],
    imports: &["import_statement"],
    call: &["call_expression"],
    assignment: &["variable_declarator", "assignment_expression"],
    control_flow: &[
        "if_statement",
        "for_statement",
        "for_in_statement",
        "while_statement",
        "do_statement",
        "try_statement",
        "catch_clause",
        "switch_statement",
    ],
    wrappers: &[
        "statement_block",
        "expression_statement",
        "else_clause",
        "finally_clause",
        "export_statement",
        "lexical_declaration",
        "variable_declaration",
    ],
    bodies: &["program", "statement_block"],
    identifiers: &["identifier"],
    callee: "function",
    keyword_arguments: &[],
    binders: &[
        ("class_declaration", "name"),
        ("function_declaration", "name"),
        ("generator_function_declaration", "name"),
        ("method_definition", "name"),
        ("variable_declarator", "name"),
    ],
    annotation_owners: &[],
    annotation_wrappers: &[],
};

const TYPESCRIPT: Grammar = Grammar {
    class: &["class_declaration", "class", "interface_declaration"],
    imports: &["import_statement"],
    binders: &[
        ("class_declaration", "name"),
        ("interface_declaration", "name"),
        ("function_declaration", "name"),
        ("generator_function_declaration", "name"),
        ("method_definition", "name"),
        ("variable_declarator", "name"),
        ("required_parameter", "pattern"),
        ("optional_parameter", "pattern"),
    ],
    annotation_owners: &[
        ("required_parameter", "type"),
        ("optional_parameter", "type"),
        ("variable_declarator", "type"),
        ("function_declaration", "return_type"),
        ("method_definition", "return_type"),
        ("arrow_function", "return_type"),
    ],
    annotation_wrappers: &["type_annotation"],
    identifiers: &["identifier", "type_identifier"],
    ..JAVASCRIPT
};

const RUST: Grammar = Grammar {
    module: &["source_file"],
    class: &["struct_item", "enum_item", "trait_item", "impl_item"],
    function: &["function_item", "closure_expression"],
    imports: &["use_declaration"],
    call: &["call_expression"],
    assignment: &["let_declaration", "assignment_expression"],
    control_flow: &[
        "if_expression",
        "for_expression",
        "while_expression",
        "loop_expression",
        "match_expression",
    ],
    wrappers: &[
        "block",
        "expression_statement",
        "declaration_list",
        "else_clause",
    ],
    bodies: &["source_file", "block", "declaration_list"],
    identifiers: &["identifier", "type_identifier"],
    callee: "function",
    keyword_arguments: &[],
    binders: &[
        ("struct_item", "name"),
        ("enum_item", "name"),
        ("trait_item", "name"),
        ("function_item", "name"),
        ("let_declaration", "pattern"),
        ("parameter", "pattern"),
    ],
    annotation_owners: &[
        ("parameter", "type"),
        ("let_declaration", "type"),
        ("function_item", "return_type"),
    ],
    annotation_wrappers: &[],
};

const GO: Grammar = Grammar {
    module: &["source_file"],
    class: &["type_declaration"],
    function: &["function_declaration", "method_declaration", "func_literal"],
    imports: &["import_declaration"],
    call: &["call_expression"],
    assignment: &[
        "short_var_declaration",
        "assignment_statement",
        "var_declaration",
    ],
    control_flow: &[
        "if_statement",
        "for_statement",
        "expression_switch_statement",
        "type_switch_statement",
        "select_statement",
    ],
    wrappers: &["block", "statement_list", "expression_statement"],
    bodies: &["source_file", "block", "statement_list"],
    identifiers: &["identifier", "type_identifier"],
    callee: "function",
    keyword_arguments: &[],
    binders: &[
        ("function_declaration", "name"),
        ("method_declaration", "name"),
        ("parameter_declaration", "name"),
    ],
    annotation_owners: &[
        ("parameter_declaration", "type"),
        ("function_declaration", "result"),
        ("method_declaration", "result"),
    ],
    annotation_wrappers: &[],
};

const JAVA: Grammar = Grammar {
    module: &["program"],
    class: &[
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
    ],
    function: &[
        "method_declaration",
        "constructor_declaration",
        "lambda_expression",
    ],
    imports: &["import_declaration"],
    call: &["method_invocation"],
    assignment: &["variable_declarator", "assignment_expression"],
    control_flow: &[
        "if_statement",
        "for_statement",
        "enhanced_for_statement",
        "while_statement",
        "do_statement",
        "try_statement",
        "catch_clause",
        "switch_expression",
    ],
    wrappers: &[
        "block",
        "class_body",
        "expression_statement",
        "local_variable_declaration",
        "field_declaration",
    ],
    bodies: &["program", "block", "class_body"],
    identifiers: &["identifier", "type_identifier"],
    callee: "name",
    keyword_arguments: &[],
    binders: &[
        ("class_declaration", "name"),
        ("interface_declaration", "name"),
        ("enum_declaration", "name"),
        ("record_declaration", "name"),
        ("method_declaration", "name"),
        ("constructor_declaration", "name"),
        ("variable_declarator", "name"),
        ("formal_parameter", "name"),
    ],
    annotation_owners: &[("formal_parameter", "type"), ("method_declaration", "type")],
    annotation_wrappers: &[],
};

const BASH: Grammar = Grammar {
    module: &["program"],
    class: &[],
    function: &["function_definition"],
    imports: &[],
    call: &["command"],
    assignment: &["variable_assignment"],
    control_flow: &[
        "if_statement",
        "elif_clause",
        "for_statement",
        "c_style_for_statement",
        "while_statement",
        "case_statement",
    ],
    wrappers: &["compound_statement", "do_group", "else_clause"],
    bodies: &["program", "compound_statement", "do_group"],
    identifiers: &["command_name", "variable_name"],
    callee: "name",
    keyword_arguments: &[],
    binders: &[
        ("function_definition", "name"),
        ("variable_assignment", "name"),
    ],
    annotation_owners: &[],
    annotation_wrappers: &[],
};

impl Grammar {
    /// The row of `lang`.
    pub fn of(lang: Lang) -> &'static Grammar {
        match lang {
            Lang::Python => &PYTHON,
            Lang::TypeScript | Lang::Tsx => &TYPESCRIPT,
            Lang::JavaScript => &JAVASCRIPT,
            Lang::Rust => &RUST,
            Lang::Go => &GO,
            Lang::Java => &JAVA,
            Lang::Bash => &BASH,
        }
    }

    fn category(&self, preset: Preset) -> &'static [&'static str] {
        match preset {
            Preset::Module => self.module,
            Preset::Class => self.class,
            Preset::Function => self.function,
            Preset::Imports => self.imports,
            Preset::Call => self.call,
            Preset::Assignment => self.assignment,
            Preset::ControlFlow => self.control_flow,
            Preset::TypeChecking | Preset::FutureAnnotations | Preset::ForwardRef => &[],
        }
    }

    /// Every node kind the row names, for the test that keeps the table true to the grammars.
    pub fn named_kinds(&self) -> impl Iterator<Item = &'static str> + '_ {
        [
            self.module,
            self.class,
            self.function,
            self.imports,
            self.call,
            self.assignment,
            self.control_flow,
            self.wrappers,
            self.bodies,
            self.identifiers,
            self.keyword_arguments,
            self.annotation_wrappers,
        ]
        .into_iter()
        .flatten()
        .copied()
        .chain(self.binders.iter().map(|(k, _)| *k))
        .chain(self.annotation_owners.iter().map(|(k, _)| *k))
    }
}

/// A matched node with the text it came from, as refinements and labels see it.
#[derive(Clone, Copy)]
pub struct StyleNode<'t> {
    node: Node<'t>,
    source: &'t str,
    lang: Lang,
}

impl<'t> StyleNode<'t> {
    /// The node's grammar kind (`import_statement`).
    pub fn kind(&self) -> &'t str {
        self.node.kind()
    }

    /// The node's source text.
    pub fn text(&self) -> &'t str {
        self.source.get(self.node.byte_range()).unwrap_or_default()
    }

    /// The 1-based line the node starts on.
    pub fn line(&self) -> usize {
        self.node.start_position().row + 1
    }

    /// The child in `field` (`name`, `function`, …), if the node has one.
    pub fn field(&self, field: &str) -> Option<StyleNode<'t>> {
        self.node
            .child_by_field_name(field)
            .map(|node| self.with(node))
    }

    /// The name the node binds (a class, function, assignment or parameter), if it binds one.
    pub fn name(&self) -> Option<&'t str> {
        bound_name(*self)
    }

    /// The tree-sitter node, for checks no method here covers.
    pub fn ts_node(&self) -> Node<'t> {
        self.node
    }

    fn with(&self, node: Node<'t>) -> StyleNode<'t> {
        StyleNode { node, ..*self }
    }

    fn grammar(&self) -> &'static Grammar {
        Grammar::of(self.lang)
    }

    /// The parent, seen through wrappers (a block, an expression statement).
    fn parent(&self) -> Option<StyleNode<'t>> {
        let wrappers = self.grammar().wrappers;
        let mut up = self.node.parent();
        while let Some(p) = up {
            if !wrappers.contains(&p.kind()) {
                return Some(self.with(p));
            }
            up = p.parent();
        }
        None
    }

    /// What a violation shows by default: the bound name, else the first line of the text.
    fn describe(&self) -> String {
        match self.name() {
            Some(name) => name.to_owned(),
            None => self
                .text()
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned(),
        }
    }
}

/// The name `node` binds, read through the grammar's binder table; a bare parameter name (an
/// identifier directly in a parameter list) binds itself.
fn bound_name<'t>(n: StyleNode<'t>) -> Option<&'t str> {
    let g = n.grammar();
    if let Some((_, field)) = g.binders.iter().find(|(k, _)| *k == n.kind()) {
        let target = n.field(field)?;
        return g
            .identifiers
            .contains(&target.kind())
            .then(|| target.text());
    }
    // Python's `def f(x: int)`: the typed parameter's name is its first (unnamed-field) child.
    if n.kind() == "typed_parameter" {
        let first = n.node.named_child(0)?;
        return (first.kind() == "identifier").then(|| n.with(first).text());
    }
    let in_parameters = n
        .node
        .parent()
        .is_some_and(|p| matches!(p.kind(), "parameters" | "lambda_parameters"));
    (in_parameters && g.identifiers.contains(&n.kind())).then(|| n.text())
}

/// Why a matcher's text or its use in a language is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MatcherError {
    /// The text does not parse; `column` is 1-based, in characters.
    #[error("column {column}: {message}")]
    Syntax {
        /// Where in the text.
        column: usize,
        /// What was expected or found.
        message: String,
    },
    /// A regex argument that does not compile.
    #[error("{0}")]
    Regex(String),
    /// A leaf the language's grammar has nothing for.
    #[error("`{matcher}` means nothing in {lang}: {why}")]
    NotInLanguage {
        /// The leaf, as written.
        matcher: String,
        /// The rule's language.
        lang: Lang,
        /// What is missing.
        why: String,
    },
}

/// The leaves and structural forms, by the names the text form uses (the presets follow).
const FUNCTIONS: [&str; 10] = [
    "kind",
    "calls",
    "kwarg",
    "ref",
    "named",
    "text",
    "annotated",
    "under",
    "child_of",
    "following",
];

/// The named matchers the text form knows, each with what it stands for.
fn preset(name: &str) -> Option<Matcher> {
    Some(match name {
        "module" => Matcher::preset(Preset::Module),
        "class" | "cls" => Matcher::preset(Preset::Class),
        "function" | "func" => Matcher::preset(Preset::Function),
        "definition" => definition(),
        "imports" => imports(),
        "call" => Matcher::preset(Preset::Call),
        "assignment" => assignment(),
        "control_flow" => control_flow(),
        "type_checking" => type_checking(),
        "future_annotations" => future_annotations(),
        "forward_ref" => forward_ref(),
        "private" => private(),
        "dunder" => dunder(),
        "constant" => constant(),
        "annotated" => annotated(None),
        _ => return None,
    })
}

const PRESETS: [&str; 14] = [
    "module",
    "class",
    "function",
    "definition",
    "imports",
    "call",
    "assignment",
    "control_flow",
    "type_checking",
    "future_annotations",
    "forward_ref",
    "private",
    "dunder",
    "constant",
];

impl Matcher {
    fn new(expr: Expr) -> Matcher {
        Matcher {
            expr: Arc::new(expr),
        }
    }

    fn preset(p: Preset) -> Matcher {
        Matcher::new(Expr::Preset(p))
    }

    /// Reads the text form: presets by name (`imports`), functions (`calls("zip")`,
    /// `under(type_checking)`), `&`, `|`, `~` (or `!`) and parentheses; `&` binds tighter than
    /// `|`. Strings take double or single quotes.
    pub fn parse(text: &str) -> Result<Matcher, MatcherError> {
        let mut p = Parser {
            chars: text.char_indices().collect(),
            at: 0,
        };
        let m = p.or()?;
        p.skip_space();
        match p.peek() {
            None => Ok(m),
            Some(c) => Err(p.error(format!("unexpected `{c}` after a complete matcher"))),
        }
    }

    /// Refines with a Rust predicate: the seeds' `where`, for what no leaf can say.
    pub fn refine(
        self,
        predicate: impl Fn(&StyleNode<'_>) -> bool + Send + Sync + 'static,
    ) -> Matcher {
        Matcher::new(Expr::Refine(self, Arc::new(predicate)))
    }

    /// Refuses a matcher with a leaf `lang`'s grammar has nothing for (a kind it does not have,
    /// `imports` in Bash, `kwarg` outside Python), so a rule fails when its file is loaded, not
    /// by never firing.
    pub fn check(&self, lang: Lang) -> Result<(), MatcherError> {
        let g = Grammar::of(lang);
        let refuse = |why: String| {
            Err(MatcherError::NotInLanguage {
                matcher: self.to_string(),
                lang,
                why,
            })
        };
        match &*self.expr {
            Expr::Kind(kinds) => {
                let grammar = lang.grammar();
                match kinds
                    .iter()
                    .find(|k| grammar.id_for_node_kind(k, true) == 0)
                {
                    Some(k) => refuse(format!("the grammar has no node kind `{k}`")),
                    None => Ok(()),
                }
            }
            Expr::Preset(
                p @ (Preset::TypeChecking | Preset::FutureAnnotations | Preset::ForwardRef),
            ) => {
                if lang == Lang::Python {
                    Ok(())
                } else {
                    refuse(format!("`{}` is a Python construct", p.name()))
                }
            }
            Expr::Preset(p) => {
                if g.category(*p).is_empty() {
                    refuse(format!("the language has no `{}`", p.name()))
                } else {
                    Ok(())
                }
            }
            Expr::Kwarg(_) if g.keyword_arguments.is_empty() => {
                refuse("the language has no keyword arguments".into())
            }
            Expr::Annotated(_) if g.annotation_owners.is_empty() => {
                refuse("the language has no type annotations".into())
            }
            Expr::Calls(_) | Expr::Kwarg(_) | Expr::Ref(_) | Expr::Named(_) | Expr::Text(_) => {
                Ok(())
            }
            Expr::Annotated(inner) => inner.as_ref().map_or(Ok(()), |m| m.check(lang)),
            Expr::Under(m) | Expr::ChildOf(m) | Expr::Following(m) | Expr::Not(m) => m.check(lang),
            Expr::Refine(m, _) => m.check(lang),
            Expr::And(a, b) | Expr::Or(a, b) => a.check(lang).and_then(|()| b.check(lang)),
        }
    }

    /// Whether `node` matches.
    pub fn test(&self, node: &StyleNode<'_>) -> bool {
        let g = node.grammar();
        match &*self.expr {
            Expr::Kind(kinds) => kinds.iter().any(|k| k == node.kind()),
            Expr::Preset(Preset::TypeChecking) => is_type_checking(node),
            Expr::Preset(Preset::FutureAnnotations) => has_future_annotations(node),
            Expr::Preset(Preset::ForwardRef) => is_forward_ref(node),
            Expr::Preset(p) => g.category(*p).contains(&node.kind()),
            Expr::Calls(name) => {
                g.call.contains(&node.kind())
                    && node.field(g.callee).is_some_and(|callee| {
                        g.identifiers.contains(&callee.kind()) && callee.text() == name
                    })
                    // Java's `a.f()` names `f` in the same field as a bare `f()`.
                    && node.field("object").is_none()
            }
            Expr::Kwarg(name) => {
                g.call.contains(&node.kind())
                    && node.field("arguments").is_some_and(|args| {
                        let mut cursor = args.node.walk();
                        args.node.named_children(&mut cursor).any(|a| {
                            g.keyword_arguments.contains(&a.kind())
                                && args.with(a).field("name").is_some_and(|k| k.text() == name)
                        })
                    })
            }
            Expr::Ref(name) => {
                g.identifiers.contains(&node.kind())
                    && node.text() == name
                    && !is_binding_site(node)
            }
            Expr::Named(rx) => node.name().is_some_and(|n| rx.is_match(n)),
            Expr::Text(rx) => rx.is_match(node.text()),
            Expr::Annotated(inner) => annotation_of(node).is_some_and(|ann| {
                !is_variadic(node) && inner.as_ref().is_none_or(|m| m.test(&ann))
            }),
            Expr::Under(m) => {
                let mut up = node.node.parent();
                while let Some(p) = up {
                    if m.test(&node.with(p)) {
                        return true;
                    }
                    up = p.parent();
                }
                false
            }
            Expr::ChildOf(m) => node.parent().is_some_and(|p| m.test(&p)),
            Expr::Following(boundary) => follows(node, boundary),
            Expr::And(a, b) => a.test(node) && b.test(node),
            Expr::Or(a, b) => a.test(node) || b.test(node),
            Expr::Not(m) => !m.test(node),
            Expr::Refine(m, f) => m.test(node) && f(node),
        }
    }

    /// Every matching node of `code`, in document order.
    pub fn over<'t>(&self, code: &'t ParsedCode) -> Vec<StyleNode<'t>> {
        let (source, lang) = (code.text(), code.lang());
        let mut found = Vec::new();
        // A cursor walk: no recursion, whatever the file's nesting depth.
        let mut cursor = code.ts_root().walk();
        'walk: loop {
            let node = cursor.node();
            if node.is_named() {
                let n = StyleNode { node, source, lang };
                if self.test(&n) {
                    found.push(n);
                }
            }
            if cursor.goto_first_child() {
                continue;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    break 'walk;
                }
            }
        }
        found
    }

    /// Whether any node of `code` matches.
    pub fn exists(&self, code: &ParsedCode) -> bool {
        !self.over(code).is_empty()
    }

    /// A violation per match, at its line: labelled `label`, else by the node's bound name or
    /// its first line.
    pub fn violations(&self, code: &ParsedCode, label: Option<&str>) -> Vec<Violation> {
        self.over(code)
            .iter()
            .map(|n| violation(n, label))
            .collect()
    }

    /// The violations of matches in `post` whose text (whitespace-normalised) no match in `pre`
    /// had: what the edit introduced.
    pub fn diff(&self, pre: &ParsedCode, post: &ParsedCode, label: Option<&str>) -> Vec<Violation> {
        let before: std::collections::HashSet<String> = self
            .over(pre)
            .iter()
            .map(|n| normalize_ws(n.text()))
            .collect();
        self.over(post)
            .iter()
            .filter(|n| !before.contains(&normalize_ws(n.text())))
            .map(|n| violation(n, label))
            .collect()
    }
}

fn violation(n: &StyleNode<'_>, label: Option<&str>) -> Violation {
    Violation::new(n.line(), label.map_or_else(|| n.describe(), str::to_owned))
}

/// Whether an identifier is where a name is bound, imported or a member named, not a reference
/// to it.
fn is_binding_site(n: &StyleNode<'_>) -> bool {
    let Some(parent) = n.node.parent() else {
        return false;
    };
    let mut up = Some(parent);
    while let Some(p) = up {
        if n.grammar().imports.contains(&p.kind()) {
            return true;
        }
        up = p.parent();
    }
    ["name", "attribute", "property", "field"]
        .iter()
        .any(|f| parent.child_by_field_name(f) == Some(n.node))
        && !n.grammar().call.contains(&parent.kind())
        || bound_name(*n).is_some()
}

/// The annotation `n` owns, unwrapped to its expression.
fn annotation_of<'t>(n: &StyleNode<'t>) -> Option<StyleNode<'t>> {
    let g = n.grammar();
    let (_, field) = g.annotation_owners.iter().find(|(k, _)| *k == n.kind())?;
    let ann = n.field(field)?;
    if g.annotation_wrappers.contains(&ann.kind()) {
        ann.node.named_child(0).map(|inner| n.with(inner))
    } else {
        Some(ann)
    }
}

/// `*args: int` and `**kw: str`: annotated, but not what a rule about annotations means.
fn is_variadic(n: &StyleNode<'_>) -> bool {
    n.kind() == "typed_parameter"
        && n.node
            .named_child(0)
            .is_some_and(|c| matches!(c.kind(), "list_splat_pattern" | "dictionary_splat_pattern"))
}

/// Whether `n` is a statement of a body that comes after the first statement of that body
/// matching `boundary`.
fn follows(n: &StyleNode<'_>, boundary: &Matcher) -> bool {
    let g = n.grammar();
    // The statement holding `n` (an assignment sits in an expression statement).
    let mut stmt = n.node;
    let container = loop {
        let Some(p) = stmt.parent() else {
            return false;
        };
        if g.bodies.contains(&p.kind()) {
            break p;
        }
        if p.kind() != "expression_statement" {
            return false;
        }
        stmt = p;
    };
    let mut cursor = container.walk();
    let mut past_boundary = false;
    for sibling in container.named_children(&mut cursor) {
        if sibling == stmt {
            return past_boundary;
        }
        let s = n.with(sibling);
        let inner = (sibling.kind() == "expression_statement")
            .then(|| sibling.named_child(0))
            .flatten()
            .map(|c| n.with(c));
        if boundary.test(&s) || inner.is_some_and(|i| boundary.test(&i)) {
            past_boundary = true;
        }
    }
    false
}

/// `if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`.
fn is_type_checking(n: &StyleNode<'_>) -> bool {
    if n.kind() != "if_statement" {
        return false;
    }
    let Some(test) = n.field("condition") else {
        return false;
    };
    match test.kind() {
        "identifier" => test.text() == "TYPE_CHECKING",
        "attribute" => {
            test.field("object").is_some_and(|o| o.text() == "typing")
                && test
                    .field("attribute")
                    .is_some_and(|a| a.text() == "TYPE_CHECKING")
        }
        _ => false,
    }
}

/// A module that starts with `from __future__ import annotations`.
fn has_future_annotations(n: &StyleNode<'_>) -> bool {
    if n.kind() != "module" {
        return false;
    }
    let mut cursor = n.node.walk();
    n.node.named_children(&mut cursor).any(|stmt| {
        stmt.kind() == "future_import_statement" && {
            let mut c = stmt.walk();
            stmt.named_children(&mut c)
                .any(|name| n.with(name).text() == "annotations")
        }
    })
}

/// A string inside a type annotation that names a type (`x: "Foo"`), not a `Literal[...]`
/// value nor `Annotated[...]`'s metadata.
fn is_forward_ref(n: &StyleNode<'_>) -> bool {
    if n.kind() != "string" {
        return false;
    }
    let mut in_annotation = false;
    // The element of the innermost generic the walk is inside (`type_parameter`'s child).
    let mut element: Option<Node<'_>> = None;
    let mut child = n.node;
    while let Some(p) = child.parent() {
        match p.kind() {
            // Every annotation, and every element of a generic inside one, is a `type` node.
            "type" => in_annotation = true,
            "type_parameter" => element = Some(child),
            "generic_type" | "subscript" => {
                let (elements, on_path) = if p.kind() == "subscript" {
                    (
                        p.named_children(&mut p.walk()).skip(1).collect(),
                        Some(child),
                    )
                } else {
                    let params = p
                        .named_children(&mut p.walk())
                        .find(|c| c.kind() == "type_parameter");
                    let elements: Vec<Node<'_>> = params
                        .map(|t| t.named_children(&mut t.walk()).collect())
                        .unwrap_or_default();
                    (elements, element)
                };
                let head = p
                    .named_child(0)
                    .map(|h| n.with(h).text().rsplit('.').next().unwrap_or_default());
                match head {
                    Some("Literal") => return false,
                    // Only Annotated's first element is a type.
                    Some("Annotated") if elements.first().copied() != on_path => return false,
                    _ => {}
                }
                element = None;
            }
            _ => {}
        }
        child = p;
    }
    in_annotation
}

impl BitAnd for Matcher {
    type Output = Matcher;
    fn bitand(self, rhs: Matcher) -> Matcher {
        Matcher::new(Expr::And(self, rhs))
    }
}

impl BitOr for Matcher {
    type Output = Matcher;
    fn bitor(self, rhs: Matcher) -> Matcher {
        Matcher::new(Expr::Or(self, rhs))
    }
}

impl Not for Matcher {
    type Output = Matcher;
    fn not(self) -> Matcher {
        Matcher::new(Expr::Not(self))
    }
}

/// The text form, fully parenthesised where precedence needs it: what identifies a rule and
/// what errors quote.
impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quoted = |s: &str| format!("{s:?}");
        match &*self.expr {
            Expr::Kind(kinds) => write!(
                f,
                "kind({})",
                kinds
                    .iter()
                    .map(|k| quoted(k))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Expr::Preset(p) => f.write_str(p.name()),
            Expr::Calls(n) => write!(f, "calls({})", quoted(n)),
            Expr::Kwarg(n) => write!(f, "kwarg({})", quoted(n)),
            Expr::Ref(n) => write!(f, "ref({})", quoted(n)),
            Expr::Named(rx) => write!(f, "named({})", quoted(rx.as_str())),
            Expr::Text(rx) => write!(f, "text({})", quoted(rx.as_str())),
            Expr::Annotated(None) => f.write_str("annotated"),
            Expr::Annotated(Some(m)) => write!(f, "annotated({m})"),
            Expr::Under(m) => write!(f, "under({m})"),
            Expr::ChildOf(m) => write!(f, "child_of({m})"),
            Expr::Following(m) => write!(f, "following({m})"),
            Expr::And(a, b) => write!(f, "({a} & {b})"),
            Expr::Or(a, b) => write!(f, "({a} | {b})"),
            Expr::Not(m) => write!(f, "~{m}"),
            Expr::Refine(m, _) => write!(f, "{m}.refine(..)"),
        }
    }
}

impl fmt::Debug for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Matcher({self})")
    }
}

/// Any of these grammar kinds: the primitive for a category the presets do not name.
pub fn kind<S: Into<String>>(kinds: impl IntoIterator<Item = S>) -> Matcher {
    Matcher::new(Expr::Kind(kinds.into_iter().map(Into::into).collect()))
}

/// A call of the bare name `name` (`calls("zip")`; `obj.zip()` is not one).
pub fn calls(name: &str) -> Matcher {
    Matcher::new(Expr::Calls(name.to_owned()))
}

/// A call passing the keyword argument `name` (Python; combine with [`calls`]).
pub fn kwarg(name: &str) -> Matcher {
    Matcher::new(Expr::Kwarg(name.to_owned()))
}

/// A reference to the bare name `name` (`reference("Any")` in `x: Any`); where a name is
/// bound or a member named does not count. The text form calls it `ref`.
pub fn reference(name: &str) -> Matcher {
    Matcher::new(Expr::Ref(name.to_owned()))
}

/// A class, function, assignment or parameter whose bound name the regex finds.
pub fn named(pattern: &str) -> Result<Matcher, MatcherError> {
    Ok(Matcher::new(Expr::Named(regex(pattern)?)))
}

/// A node whose source text the regex finds: the text form's refinement.
pub fn text(pattern: &str) -> Result<Matcher, MatcherError> {
    Ok(Matcher::new(Expr::Text(regex(pattern)?)))
}

fn regex(pattern: &str) -> Result<Pattern, MatcherError> {
    Pattern::new(pattern, Mode::Plain).map_err(|e| MatcherError::Regex(e.to_string()))
}

/// The owner of a type annotation (an annotated parameter, variable or function return;
/// `*args` and `**kwargs` excluded); with `inner`, its annotation must match it too.
pub fn annotated(inner: Option<Matcher>) -> Matcher {
    Matcher::new(Expr::Annotated(inner))
}

/// A node with some ancestor matching `other` (`!under(..)`: not inside).
pub fn under(other: Matcher) -> Matcher {
    Matcher::new(Expr::Under(other))
}

/// A node whose parent (seen through blocks and statement wrappers) matches `other`.
pub fn child_of(other: Matcher) -> Matcher {
    Matcher::new(Expr::ChildOf(other))
}

/// A statement of a body that comes after the body's first statement matching `boundary`.
pub fn following(boundary: Matcher) -> Matcher {
    Matcher::new(Expr::Following(boundary))
}

/// The whole file.
pub fn module() -> Matcher {
    Matcher::preset(Preset::Module)
}

/// A class (or the language's nearest thing: a struct, an interface, a type declaration).
pub fn class() -> Matcher {
    Matcher::preset(Preset::Class)
}

/// A function or method definition.
pub fn function() -> Matcher {
    Matcher::preset(Preset::Function)
}

/// A class or a function.
pub fn definition() -> Matcher {
    class() | function()
}

/// An import statement.
pub fn imports() -> Matcher {
    Matcher::preset(Preset::Imports)
}

/// Any call.
pub fn call() -> Matcher {
    Matcher::preset(Preset::Call)
}

/// An assignment (annotated ones included).
pub fn assignment() -> Matcher {
    Matcher::preset(Preset::Assignment)
}

/// A branch, loop, `with`, `try` or exception handler.
pub fn control_flow() -> Matcher {
    Matcher::preset(Preset::ControlFlow)
}

/// Python's `if TYPE_CHECKING:` block.
pub fn type_checking() -> Matcher {
    Matcher::preset(Preset::TypeChecking)
}

/// A Python module with `from __future__ import annotations`.
pub fn future_annotations() -> Matcher {
    Matcher::preset(Preset::FutureAnnotations)
}

/// A string in a Python annotation that names a type (`x: "Foo"`).
pub fn forward_ref() -> Matcher {
    Matcher::preset(Preset::ForwardRef)
}

/// A private name (`_x`, not `__x__`).
pub fn private() -> Matcher {
    named_const(r"^_(?!_)")
}

/// A dunder name (`__init__`).
pub fn dunder() -> Matcher {
    named_const(r"^__\w+__$")
}

/// A constant's name (`MAX`, `_LIMIT_2`).
pub fn constant() -> Matcher {
    named_const(r"^_?[A-Z][A-Z0-9_]*$")
}

fn named_const(pattern: &str) -> Matcher {
    match Pattern::new(pattern, Mode::Plain) {
        Ok(rx) => Matcher::new(Expr::Named(rx)),
        // The three patterns above are constants that compile (a test checks each); a name
        // never matches an empty kind list, so a broken one would only never fire.
        Err(_) => kind(Vec::<String>::new()),
    }
}

/// A recursive-descent reader of the text form.
struct Parser {
    chars: Vec<(usize, char)>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).map(|(_, c)| *c)
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    fn error(&self, message: String) -> MatcherError {
        MatcherError::Syntax {
            column: self.at + 1,
            message,
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), MatcherError> {
        if self.eat(c) {
            return Ok(());
        }
        let found = self
            .peek()
            .map_or_else(|| "the end".to_owned(), |f| format!("`{f}`"));
        Err(self.error(format!("expected `{c}`, found {found}")))
    }

    fn or(&mut self) -> Result<Matcher, MatcherError> {
        let mut m = self.and()?;
        while self.eat('|') {
            m = m | self.and()?;
        }
        Ok(m)
    }

    fn and(&mut self) -> Result<Matcher, MatcherError> {
        let mut m = self.unary()?;
        while self.eat('&') {
            m = m & self.unary()?;
        }
        Ok(m)
    }

    fn unary(&mut self) -> Result<Matcher, MatcherError> {
        if self.eat('~') || self.eat('!') {
            return Ok(!self.unary()?);
        }
        if self.eat('(') {
            let m = self.or()?;
            self.expect(')')?;
            return Ok(m);
        }
        self.call()
    }

    fn ident(&mut self) -> Option<String> {
        self.skip_space();
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.at += 1;
        }
        (self.at > start).then(|| self.chars[start..self.at].iter().map(|(_, c)| c).collect())
    }

    fn string(&mut self) -> Result<String, MatcherError> {
        self.skip_space();
        let Some(quote) = self.peek().filter(|c| matches!(c, '"' | '\'')) else {
            return Err(self.error("expected a quoted string".into()));
        };
        let open = self.at;
        self.at += 1;
        let mut out = String::new();
        while let Some(c) = self.peek() {
            self.at += 1;
            match c {
                '\\' => match self.peek() {
                    // Only the quote and the backslash are escapes: a regex keeps its own `\d`.
                    Some(next) if next == quote || next == '\\' => {
                        out.push(next);
                        self.at += 1;
                    }
                    _ => out.push('\\'),
                },
                c if c == quote => return Ok(out),
                c => out.push(c),
            }
        }
        self.at = open;
        Err(self.error("unterminated string".into()))
    }

    fn call(&mut self) -> Result<Matcher, MatcherError> {
        let start = self.at;
        let Some(name) = self.ident() else {
            let found = self
                .peek()
                .map_or_else(|| "the end".to_owned(), |f| format!("`{f}`"));
            return Err(self.error(format!("expected a matcher, found {found}")));
        };
        self.skip_space();
        if self.peek() != Some('(') {
            return preset(&name).ok_or_else(|| {
                self.at = start;
                self.skip_space();
                let hint = if FUNCTIONS.contains(&name.as_str()) {
                    format!("`{name}` takes arguments: `{name}(…)`")
                } else {
                    format!(
                        "unknown matcher `{name}` (known: {}; functions: {})",
                        PRESETS.join(", "),
                        FUNCTIONS.join(", ")
                    )
                };
                self.error(hint)
            });
        }
        self.at += 1;
        let m = match name.as_str() {
            "kind" => {
                let mut kinds = vec![self.string()?];
                while self.eat(',') {
                    kinds.push(self.string()?);
                }
                kind(kinds)
            }
            "calls" => calls(&self.string()?),
            "kwarg" => kwarg(&self.string()?),
            "ref" => reference(&self.string()?),
            "named" | "text" => {
                let at = self.at;
                let s = self.string()?;
                let built = if name == "named" { named(&s) } else { text(&s) };
                built.map_err(|e| match e {
                    MatcherError::Regex(m) => MatcherError::Syntax {
                        column: at + 1,
                        message: m,
                    },
                    other => other,
                })?
            }
            "annotated" => {
                self.skip_space();
                if self.peek() == Some(')') {
                    annotated(None)
                } else {
                    annotated(Some(self.or()?))
                }
            }
            "under" => under(self.or()?),
            "child_of" => child_of(self.or()?),
            "following" => following(self.or()?),
            other => {
                self.at = start;
                self.skip_space();
                let hint = if PRESETS.contains(&other) {
                    format!("`{other}` takes no arguments")
                } else {
                    format!(
                        "unknown function `{other}` (known: {})",
                        FUNCTIONS.join(", ")
                    )
                };
                return Err(self.error(hint));
            }
        };
        self.expect(')')?;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(src: &str) -> ParsedCode {
        ParsedCode::parse(Lang::Python, src).unwrap()
    }

    fn lines(m: &Matcher, src: &str) -> Vec<usize> {
        m.violations(&py(src), None)
            .iter()
            .map(|v| v.line)
            .collect()
    }

    fn parsed(text: &str) -> Matcher {
        Matcher::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// The seeds' NoNestedImports matcher, in both forms.
    #[test]
    fn nested_imports_outside_type_checking() {
        let src = "import os\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import json\n\ndef f(x):\n    if x:\n        import re\n    import sys\n    for i in x:\n        from a import b\n    return x\n";
        let built = imports() & child_of(control_flow()) & !under(type_checking());
        let text = parsed("imports & child_of(control_flow) & ~under(type_checking)");
        assert_eq!(lines(&built, src), vec![8, 11]);
        assert_eq!(lines(&text, src), vec![8, 11]);
        assert_eq!(built.to_string(), text.to_string());
    }

    #[test]
    fn calls_and_keyword_arguments() {
        let src = "zip(a, b)\nzip(a, b, strict=True)\nobj.zip(a)\nprint(x)\n";
        assert_eq!(lines(&calls("zip"), src), vec![1, 2]);
        assert_eq!(lines(&(calls("zip") & !kwarg("strict")), src), vec![1]);
        assert_eq!(
            lines(&parsed("calls('zip') & kwarg(\"strict\")"), src),
            vec![2]
        );
    }

    #[test]
    fn names_and_references() {
        let src = "from typing import Any\nMAX = 3\n_hidden = 1\nclass _Pool:\n    def __init__(self, _x: Any, *args: Any) -> int:\n        y: Any = 1\n";
        assert_eq!(lines(&constant(), src), vec![2]);
        assert_eq!(lines(&private(), src), vec![3, 4, 5]);
        assert_eq!(lines(&dunder(), src), vec![5]);
        // `Any` is referenced in three annotations; the import that names it is no reference.
        let anys = lines(&reference("Any"), src);
        assert_eq!(anys, vec![5, 5, 6], "{anys:?}");
        // Annotation owners whose annotation is `Any`, *args excluded.
        let owners = annotated(Some(reference("Any")));
        let found: Vec<String> = owners
            .violations(&py(src), None)
            .into_iter()
            .map(|v| v.snippet)
            .collect();
        assert_eq!(found, vec!["_x", "y"]);
        assert_eq!(lines(&parsed("annotated"), src), vec![5, 5, 6]);
    }

    #[test]
    fn following_a_boundary() {
        let src = "import a\nx = 1\nimport b\ndef f():\n    pass\nimport c\n";
        let late = imports() & following(assignment() | function());
        assert_eq!(lines(&late, src), vec![3, 6]);
    }

    #[test]
    fn forward_references_and_future_annotations() {
        let src = "from __future__ import annotations\nfrom typing import Literal, Annotated\ndef f(a: \"Foo\", b: Literal[\"x\"], c: Annotated[\"Bar\", \"meta\"]) -> \"Baz\":\n    s = \"not a type\"\n";
        let refs: Vec<String> = forward_ref()
            .violations(&py(src), None)
            .into_iter()
            .map(|v| v.snippet)
            .collect();
        assert_eq!(refs, vec!["\"Foo\"", "\"Bar\"", "\"Baz\""]);
        assert!(future_annotations().exists(&py(src)));
        assert!(!future_annotations().exists(&py("import os\n")));
    }

    #[test]
    fn diff_reports_only_what_the_edit_added() {
        let pre = py("from a import *\nimport os\n");
        let post = py("from a import *\nimport os\nfrom b import *\n");
        let wildcard = imports() & text(r"import \*").unwrap();
        let added: Vec<usize> = wildcard
            .diff(&pre, &post, None)
            .iter()
            .map(|v| v.line)
            .collect();
        assert_eq!(added, vec![3]);
        let labelled = wildcard.diff(&pre, &post, Some("wildcard"));
        assert_eq!(labelled[0].snippet, "wildcard");
    }

    #[test]
    fn refinements_are_rust_predicates() {
        let long_names = function().refine(|n| n.name().is_some_and(|s| s.len() > 3));
        assert_eq!(
            lines(&long_names, "def f():\n    pass\ndef longer():\n    pass\n"),
            vec![3]
        );
    }

    #[test]
    fn precedence_and_parentheses() {
        let src = "import a\nx = 1\nf()\n";
        assert_eq!(
            lines(&parsed("imports | assignment & ref('x')"), src),
            vec![1]
        );
        assert_eq!(
            lines(&parsed("(imports | assignment) & ~imports"), src),
            vec![2]
        );
        assert_eq!(lines(&parsed("kind('call')"), src), vec![3]);
    }

    #[test]
    fn text_form_errors_say_where() {
        for (text, column, says) in [
            ("imports & nope", 11, "unknown matcher `nope`"),
            ("imports &", 10, "expected a matcher"),
            ("under(imports", 14, "expected `)`"),
            ("calls(zip)", 7, "expected a quoted string"),
            ("calls('zip", 7, "unterminated string"),
            ("imports()", 1, "takes no arguments"),
            ("under", 1, "takes arguments"),
            ("named('(')", 7, "invalid regex"),
            ("imports imports", 9, "after a complete matcher"),
        ] {
            match Matcher::parse(text) {
                Err(MatcherError::Syntax { column: c, message }) => {
                    assert_eq!(c, column, "{text}: {message}");
                    assert!(message.contains(says), "{text}: {message}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn matchers_are_checked_against_the_language() {
        assert!(
            parsed("kind('import_statement')")
                .check(Lang::Python)
                .is_ok()
        );
        let e = parsed("kind('no_such_kind')")
            .check(Lang::Python)
            .unwrap_err();
        assert!(e.to_string().contains("no node kind `no_such_kind`"), "{e}");
        assert!(parsed("imports").check(Lang::Bash).is_err());
        assert!(parsed("kwarg('x')").check(Lang::Rust).is_err());
        assert!(parsed("~under(type_checking)").check(Lang::Go).is_err());
        assert!(
            parsed("imports & child_of(control_flow)")
                .check(Lang::Rust)
                .is_ok()
        );
    }

    /// Every kind the grammar table names exists in its grammar: a renamed kind in a grammar
    /// upgrade would otherwise make a preset silently match nothing.
    #[test]
    fn the_grammar_table_names_real_kinds() {
        for lang in Lang::ALL {
            let grammar = lang.grammar();
            for k in Grammar::of(lang).named_kinds() {
                assert_ne!(grammar.id_for_node_kind(k, true), 0, "{lang}: `{k}`");
            }
            let callee = Grammar::of(lang).callee;
            assert!(
                grammar.field_id_for_name(callee).is_some(),
                "{lang}: field `{callee}`"
            );
        }
        for m in [private(), dunder(), constant()] {
            assert!(matches!(&*m.expr, Expr::Named(_)), "{m}");
        }
    }

    #[test]
    fn other_languages_have_their_categories() {
        let ts = ParsedCode::parse(
            Lang::TypeScript,
            "import x from 'y';\nfunction f() {\n  if (a) {\n    eval(s);\n  }\n}\n",
        )
        .unwrap();
        let evals: Vec<usize> = (calls("eval") & under(control_flow()))
            .violations(&ts, None)
            .iter()
            .map(|v| v.line)
            .collect();
        assert_eq!(evals, vec![4]);
        let rs =
            ParsedCode::parse(Lang::Rust, "fn main() {\n    if x { use std::fs; }\n}\n").unwrap();
        assert_eq!(
            (imports() & child_of(control_flow()))
                .violations(&rs, None)
                .len(),
            1
        );
    }
}

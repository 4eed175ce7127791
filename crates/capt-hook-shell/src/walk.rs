//! Walking tree-sitter-bash trees into parts: statements, operators, redirects and heredocs.
//! Simple commands, substitutions and payloads are in `command.rs`.

use tree_sitter::Node;

use crate::command::make_word;
use crate::source::{Src, parse_tree};
use crate::words::{dequote, one_layer};
use crate::{Command, Op, Part, Redirect, Unreadable};

/// Node depth past which the walk stops descending; keeps deeply nested input off the stack.
pub(crate) const MAX_DEPTH: usize = 200;

/// Where the parts being produced go.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Level {
    /// Nesting of the commands found at this level.
    pub nesting: u8,
    /// Their host part, for nested levels.
    pub host: Option<usize>,
    /// Operators only touch parts from this index on.
    pub floor: usize,
    /// Whether commands found here may carry spans.
    pub spans: bool,
}

/// Statement-level information handed to the command(s) of a redirected statement.
#[derive(Default)]
pub(crate) struct StmtExtra<'t> {
    /// Redirects of the enclosing statement.
    pub redirects: Vec<Redirect>,
    /// Words a redirect swallowed (`echo a >out b`): bash passes them as arguments.
    pub extra_args: Vec<Node<'t>>,
    /// The commands cannot be spliced (swallowed words, degraded heredoc).
    pub spanless: bool,
    /// What a heredoc or here-string of the statement feeds to stdin.
    pub stdin: Option<String>,
}

/// Accumulates the parts of a whole command line.
#[derive(Default)]
pub(crate) struct Walker {
    pub parts: Vec<Part>,
    pub comments: Vec<String>,
    pub has_error: bool,
    /// Set by a degraded multi-heredoc: local offset where the real commands resume.
    pub dead_end: Option<usize>,
    /// The first reason the line could not be read to the end.
    pub unreadable: Option<Unreadable>,
    /// How many command lines were rebuilt with substituted arguments so far.
    pub rebuilt: usize,
    /// Why an interpreter program of the line could not be read to the end (the first one).
    pub unread_code: Option<String>,
    /// The `( … )` subshells being walked, outermost first (see [`Command::subshells`]).
    pub subshells: Vec<u32>,
    /// How many subshells the line has opened so far (their numbers).
    pub opened_subshells: u32,
}

/// Statement containers: operator tokens among their children join the parts around them.
fn is_container(kind: &str) -> bool {
    matches!(
        kind,
        "program"
            | "list"
            | "pipeline"
            | "compound_statement"
            | "subshell"
            | "do_group"
            | "if_statement"
            | "elif_clause"
            | "else_clause"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "heredoc_redirect"
            | "command_substitution"
            | "process_substitution"
            | "negated_command"
    )
}

fn op_of(kind: &str) -> Option<Op> {
    Some(match kind {
        ";" => Op::Seq,
        "&&" => Op::And,
        "||" => Op::Or,
        "|" | "|&" => Op::Pipe,
        "&" => Op::Background,
        _ => return None,
    })
}

impl Walker {
    /// Parses `src.text` and walks it as a program. After a degraded
    /// multi-heredoc the rest of the text is parsed again from where the bodies end, since
    /// tree-sitter's recovery has turned body lines into commands.
    pub(crate) fn walk_text(&mut self, src: &Src<'_>, lvl: Level, depth: usize) {
        let saved = self.dead_end.take();
        let mut offset = 0;
        while offset < src.text.len() {
            let text = src.text.get(offset..).unwrap_or("");
            let Some(tree) = parse_tree(text) else {
                self.has_error = true;
                self.cut(Unreadable::TooLong);
                break;
            };
            let root = tree.root_node();
            self.has_error |= root.has_error();
            let sub = Src {
                text,
                map: src.map.shifted(offset),
                contexts: src.contexts.clone(),
                payload_depth: src.payload_depth,
            };
            let mut resume = None;
            let mut cursor = root.walk();
            for child in root.children(&mut cursor) {
                self.walk_tail(child, &sub, lvl, depth + 1);
                if let Some(end) = self.dead_end.take()
                    && end > child.end_byte()
                {
                    resume = Some(end);
                    break;
                }
            }
            match resume {
                Some(end) => offset += end,
                None => break,
            }
        }
        self.dead_end = saved;
    }

    /// Records that the walk stopped short of the end of the line.
    pub(crate) fn cut(&mut self, why: Unreadable) {
        self.unreadable.get_or_insert(why);
    }

    /// Walks any node, dispatching on its kind.
    pub(crate) fn walk(&mut self, node: Node<'_>, src: &Src<'_>, lvl: Level, depth: usize) {
        if depth > MAX_DEPTH {
            self.cut(Unreadable::Nesting);
            return;
        }
        match node.kind() {
            "comment" => self.comment(node, src),
            "command" => self.walk_command(node, src, lvl, depth, StmtExtra::default()),
            "declaration_command" | "unset_command" => self.walk_declaration(node, src, lvl, depth),
            // A statement of bare assignments changes the environment of what follows: it is a
            // part (without an executable) so conditions can see it.
            "variable_assignment" | "variable_assignments" => {
                let env = assignments(node, src);
                self.push_synthetic(src.slice(node.byte_range()), src, lvl, Vec::new(), env);
                let mut cursor = node.walk();
                let singles: Vec<Node<'_>> = if node.kind() == "variable_assignment" {
                    vec![node]
                } else {
                    node.named_children(&mut cursor).collect()
                };
                for single in singles {
                    let mut cursor = single.walk();
                    for child in single.children(&mut cursor) {
                        self.walk(child, src, lvl, depth + 1);
                    }
                }
            }
            "redirected_statement" => self.walk_redirected(node, src, lvl, depth),
            "list" => self.walk_list(node, src, lvl, depth),
            // Heredoc bodies are data; their substitutions, like those of redirect targets, are
            // found by the statement or command holding them.
            "heredoc_body" | "heredoc_redirect" | "file_redirect" | "herestring_redirect" => {}
            kind => {
                let ops = is_container(kind);
                let subshell = kind == "subshell";
                if subshell {
                    self.opened_subshells = self.opened_subshells.saturating_add(1);
                    self.subshells.push(self.opened_subshells);
                }
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    match op_of(child.kind()) {
                        Some(op) if !child.is_named() => {
                            if ops {
                                self.set_op(lvl, op);
                            }
                        }
                        _ => self.walk(child, src, lvl, depth + 1),
                    }
                }
                if subshell {
                    self.subshells.pop();
                }
            }
        }
    }

    /// `a && b && c` nests as `list(list(a && b) && c)`: a long chain would be as deep as it is
    /// long, so the left spine is walked in a loop instead of by recursion.
    fn walk_list(&mut self, node: Node<'_>, src: &Src<'_>, lvl: Level, depth: usize) {
        let mut spine = vec![node];
        let mut current = node;
        while let Some(first) = current.child(0).filter(|c| c.kind() == "list") {
            spine.push(first);
            current = first;
        }
        for (k, list) in spine.iter().rev().enumerate() {
            let mut cursor = list.walk();
            // Past the innermost list, the first child is the list just walked.
            for child in list.children(&mut cursor).skip(usize::from(k > 0)) {
                self.walk_tail(child, src, lvl, depth + 1);
            }
        }
    }

    pub(crate) fn comment(&mut self, node: Node<'_>, src: &Src<'_>) {
        let text = src.slice(node.byte_range());
        let text = text.strip_prefix('#').unwrap_or(text);
        self.comments.push(text.trim().to_owned());
    }

    /// Sets the operator of the last part produced at `lvl`.
    fn set_op(&mut self, lvl: Level, op: Op) {
        let floor = lvl.floor.min(self.parts.len());
        if let Some(part) = self.parts[floor..]
            .iter_mut()
            .rev()
            .find(|p| p.command.nesting == lvl.nesting && p.command.host == lvl.host)
        {
            part.op = Some(op);
        }
    }

    /// A part with no executable, standing for a redirect-only statement.
    pub(crate) fn push_synthetic(
        &mut self,
        raw: &str,
        src: &Src<'_>,
        lvl: Level,
        redirects: Vec<Redirect>,
        env: Vec<(String, String)>,
    ) {
        self.parts.push(Part {
            command: Command {
                raw: raw.to_owned(),
                executable: String::new(),
                args: Vec::new(),
                env,
                redirects,
                span: None,
                nesting: lvl.nesting,
                host: lvl.host,
                contexts: src.contexts.to_vec(),
                tainted: false,
                words: Vec::new(),
                runs: Vec::new(),
                launched: Vec::new(),
                subshells: self.subshells.clone(),
            },
            op: None,
        });
    }

    /// A statement with redirects: they apply to every command of its body.
    fn walk_redirected(&mut self, node: Node<'_>, src: &Src<'_>, lvl: Level, depth: usize) {
        let mut extra = StmtExtra::default();
        let body = node.child_by_field_name("body");
        let mut tails = Vec::new();
        let mut scan = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if Some(child) == body {
                continue;
            }
            match child.kind() {
                "file_redirect" | "herestring_redirect" => {
                    let (redirect, swallowed) = parse_redirect(child, src);
                    if child.kind() == "herestring_redirect" {
                        extra.stdin = Some(herestring_text(child, src));
                    }
                    extra.redirects.push(redirect);
                    extra.spanless |= !swallowed.is_empty();
                    extra.extra_args.extend(swallowed);
                    scan.push(child);
                }
                "heredoc_redirect" => {
                    let doc = read_heredoc(child, src);
                    extra.redirects.extend(doc.redirects);
                    if let Some(end) = doc.dead_end {
                        extra.spanless = true;
                        self.dead_end = Some(self.dead_end.map_or(end, |d| d.max(end)));
                    }
                    tails.extend(doc.tails);
                    scan.extend(doc.expanded);
                    extra.stdin = doc.body.or(extra.stdin);
                }
                "comment" => self.comment(child, src),
                _ => {}
            }
        }
        let start = self.parts.len();
        match body {
            Some(b) if b.kind() == "command" => self.walk_command(b, src, lvl, depth + 1, extra),
            _ => {
                if let Some(b) = body {
                    self.walk(b, src, lvl, depth + 1);
                }
                // tree-sitter reads `a && b > out` as `(a && b) > out`; bash gives the redirect
                // to `b` alone. Only a group, subshell or loop shares it with every command.
                let shared = !body.is_some_and(|b| matches!(b.kind(), "list" | "pipeline"));
                self.apply_statement(node, src, lvl, start, extra, shared);
            }
        }
        // Substitutions in the statement's redirect targets and heredoc bodies run too; they
        // hang off the statement's first command.
        let nested = Level {
            nesting: lvl.nesting.saturating_add(1),
            host: (self.parts.len() > start).then_some(start),
            floor: 0,
            spans: false,
        };
        for n in scan {
            self.substitutions(n, src, nested, depth + 1);
        }
        self.tails(tails, src, lvl, depth);
    }

    /// One child of a statement container: an operator joining parts, or a statement.
    pub(crate) fn walk_tail(&mut self, tail: Node<'_>, src: &Src<'_>, lvl: Level, depth: usize) {
        match op_of(tail.kind()) {
            Some(op) if !tail.is_named() => self.set_op(lvl, op),
            _ => self.walk(tail, src, lvl, depth),
        }
    }

    /// Gives a compound body's commands the statement's redirects (or adds a redirect-only
    /// part); with `shared` false only the body's last command gets them.
    fn apply_statement(
        &mut self,
        node: Node<'_>,
        src: &Src<'_>,
        lvl: Level,
        start: usize,
        extra: StmtExtra<'_>,
        shared: bool,
    ) {
        let same_level = |p: &Part| p.command.nesting == lvl.nesting && p.command.host == lvl.host;
        let Some(last) = self.parts[start..]
            .iter()
            .rposition(same_level)
            .map(|i| i + start)
        else {
            self.push_synthetic(
                src.slice(node.byte_range()),
                src,
                lvl,
                extra.redirects,
                Vec::new(),
            );
            return;
        };
        let from = if shared { start } else { last };
        for part in self.parts[from..].iter_mut().filter(|p| same_level(p)) {
            part.command
                .redirects
                .extend(extra.redirects.iter().cloned());
            if extra.spanless {
                part.command.span = None;
            }
        }
        let words: Vec<_> = extra
            .extra_args
            .iter()
            .map(|n| make_word(src, n.kind(), n.byte_range(), false))
            .collect();
        let command = &mut self.parts[last].command;
        command.args.extend(words.iter().map(|w| w.text.clone()));
        command.tainted |= words.iter().any(|w| w.value.is_none());
        command.words.extend(words);
        if !extra.extra_args.is_empty() {
            command.find_runs();
        }
    }
}

/// The `NAME=value` pairs of a `variable_assignment(s)` node.
fn assignments(node: Node<'_>, src: &Src<'_>) -> Vec<(String, String)> {
    let one = |n: Node<'_>| {
        let name = n
            .child_by_field_name("name")
            .map_or("", |x| src.slice(x.byte_range()));
        let value = n.child_by_field_name("value").map_or(String::new(), |v| {
            one_layer(v.kind(), src.slice(v.byte_range()))
        });
        (name.to_owned(), value)
    };
    if node.kind() == "variable_assignment" {
        return vec![one(node)];
    }
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .filter(|c| c.kind() == "variable_assignment")
        .map(one)
        .collect()
}

/// Reads a heredoc redirect: its redirect(s), the commands written after the delimiter on
/// the same line (`cat <<EOF | sh`), and where a degraded multi-heredoc's bodies end.
pub(crate) fn read_heredoc<'t>(node: Node<'t>, src: &Src<'_>) -> Heredoc<'t> {
    let mut doc = Heredoc {
        redirects: Vec::new(),
        tails: Vec::new(),
        dead_end: None,
        body: None,
        expanded: Vec::new(),
    };
    let mut quoted = false;
    let mut op = "<<";
    let mut delimiter = String::new();
    let mut fd = None;
    let mut extras = Vec::new();
    let mut body_node = None;
    let (mut body_start, mut body_end) = (node.end_byte(), None);
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "<<" | "<<-" => op = child.kind(),
            "file_descriptor" => fd = src.slice(child.byte_range()).parse().ok(),
            "heredoc_start" => {
                let text = src.slice(child.byte_range());
                quoted = text.contains(['\'', '"', '\\']);
                delimiter = dequote(text, 0, None)
                    .value
                    .unwrap_or_else(|| text.to_owned());
                let from = child.end_byte();
                let line_end = src
                    .text
                    .get(from..)
                    .and_then(|t| t.find('\n'))
                    .map_or(src.text.len(), |i| from + i);
                extras = extra_heredocs(src.text, from..line_end);
                body_start = line_end + 1;
            }
            "heredoc_body" => body_node = Some(child),
            "heredoc_end" => body_end = Some(child.start_byte()),
            "file_redirect" | "herestring_redirect" => {
                // A mangled extra `<<B` shows up as a `<B` file redirect: not a real one.
                if !extras
                    .iter()
                    .any(|x: &ExtraDoc| x.range.contains(&child.start_byte()))
                {
                    doc.redirects.push(parse_redirect(child, src).0);
                }
            }
            "ERROR" => {}
            // Operators, the commands after them, and comments.
            _ => doc.tails.push(child),
        }
    }
    doc.redirects.insert(
        0,
        Redirect {
            fd,
            op: op.to_owned(),
            target: delimiter,
        },
    );
    if !extras.is_empty() {
        doc.dead_end = Some(bodies_end(src.text, node.end_byte(), &extras));
    }
    // The body is read from the text: tree-sitter misreads some bodies (one starting with
    // `\rm` comes out as words and an empty body node).
    let end = body_end.unwrap_or(node.end_byte());
    if body_start <= end {
        doc.body = Some(src.slice(body_start..end).to_owned());
    }
    // Bash expands substitutions in the body unless the delimiter is quoted.
    if !quoted {
        doc.expanded.extend(body_node);
    }
    doc
}

/// The text a here-string feeds to stdin: its word's value, or its source text when an
/// expansion leaves the value unknown.
pub(crate) fn herestring_text(node: Node<'_>, src: &Src<'_>) -> String {
    let mut cursor = node.walk();
    let word = node
        .named_children(&mut cursor)
        .find(|c| c.kind() != "comment" && c.kind() != "ERROR");
    word.map_or(String::new(), |w| {
        let text = src.slice(w.byte_range());
        dequote(text, 0, None)
            .value
            .unwrap_or_else(|| one_layer(w.kind(), text))
    })
}

/// What a heredoc redirect contributes to its statement.
pub(crate) struct Heredoc<'t> {
    pub redirects: Vec<Redirect>,
    pub tails: Vec<Node<'t>>,
    pub dead_end: Option<usize>,
    /// The body's text (what a shell reading stdin would run).
    pub body: Option<String>,
    /// The body node when bash expands it (unquoted delimiter): its substitutions run.
    pub expanded: Vec<Node<'t>>,
}

/// A further heredoc operator on a heredoc's line, which tree-sitter does not understand.
struct ExtraDoc {
    /// Local byte range of `<<DELIM`.
    range: std::ops::Range<usize>,
    delimiter: String,
    strip_tabs: bool,
}

/// Scans the rest of a heredoc's first line for more `<<DELIM` operators (outside quotes).
fn extra_heredocs(text: &str, range: std::ops::Range<usize>) -> Vec<ExtraDoc> {
    let b = text.as_bytes();
    let end = range.end.min(b.len());
    let mut found = Vec::new();
    let mut i = range.start;
    while i < end {
        match b[i] {
            b'\\' => i += 2,
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < end && b[i] != q {
                    i += if q == b'"' && b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'<' if b.get(i + 1) == Some(&b'<') => {
                if b.get(i + 2) == Some(&b'<') {
                    i += 3;
                    continue;
                }
                let start = i;
                i += 2;
                let strip_tabs = b.get(i) == Some(&b'-');
                if strip_tabs {
                    i += 1;
                }
                while i < end && matches!(b[i], b' ' | b'\t') {
                    i += 1;
                }
                let word_start = i;
                let mut quote = None;
                while i < end {
                    match (quote, b[i]) {
                        (None, q @ (b'\'' | b'"')) => quote = Some(q),
                        (Some(q), c) if c == q => quote = None,
                        (None, c) if c.is_ascii_whitespace() || b";&|<>()".contains(&c) => break,
                        _ => {}
                    }
                    i += 1;
                }
                let word = text.get(word_start..i).unwrap_or("");
                let delimiter = dequote(word, 0, None)
                    .value
                    .unwrap_or_else(|| word.to_owned());
                if !delimiter.is_empty() {
                    found.push(ExtraDoc {
                        range: start..i,
                        delimiter,
                        strip_tabs,
                    });
                }
            }
            _ => i += 1,
        }
    }
    found
}

/// Where the bodies of the extra heredocs end: each reads lines up to its delimiter line (or to
/// the end of the text, as bash does for an unterminated one), starting after the first body.
fn bodies_end(text: &str, first_end: usize, extras: &[ExtraDoc]) -> usize {
    let next_line = |pos: usize| {
        text.get(pos..)
            .and_then(|t| t.find('\n'))
            .map_or(text.len(), |i| pos + i + 1)
    };
    let mut pos = next_line(first_end.min(text.len()));
    for doc in extras {
        loop {
            if pos >= text.len() {
                return text.len();
            }
            let line_end = text
                .get(pos..)
                .and_then(|t| t.find('\n'))
                .map_or(text.len(), |i| pos + i);
            let line = text.get(pos..line_end).unwrap_or("");
            let line = if doc.strip_tabs {
                line.trim_start_matches('\t')
            } else {
                line
            };
            pos = (line_end + 1).min(text.len());
            if line == doc.delimiter {
                break;
            }
        }
    }
    pos
}

/// Parses a `file_redirect` / `herestring_redirect`; also returns the extra destination words a
/// file redirect swallowed.
pub(crate) fn parse_redirect<'t>(node: Node<'t>, src: &Src<'_>) -> (Redirect, Vec<Node<'t>>) {
    let mut fd = None;
    let mut op = String::new();
    let mut target = None;
    let mut extra = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.kind() == "file_descriptor" {
            fd = src.slice(child.byte_range()).parse().ok();
        } else if !child.is_named() && op.is_empty() {
            op = child.kind().to_owned();
        } else if child.is_named() && child.kind() != "comment" && child.kind() != "ERROR" {
            if target.is_none() {
                target = Some(one_layer(child.kind(), src.slice(child.byte_range())));
            } else {
                extra.push(child);
            }
        }
    }
    (
        Redirect {
            fd,
            op,
            target: target.unwrap_or_default(),
        },
        extra,
    )
}

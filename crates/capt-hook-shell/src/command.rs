//! Simple commands: argv, env prefixes, redirects, then their substitutions and payloads.

use std::ops::Range;

use tree_sitter::Node;

use crate::jobs;
use crate::scripts;
use crate::source::{Src, SrcMap};
use crate::walk::{
    Level, MAX_DEPTH, StmtExtra, Walker, herestring_text, parse_redirect, read_heredoc,
};
use crate::words::{Word, dequote, one_layer};
use crate::wrappers::{Found, basename};
use crate::{Command, Part, QuoteLayer, Redirect, Unreadable};

/// The program a command runs, behind its wrappers, for messages.
fn word_program(c: &Command) -> String {
    c.unwrapped()
        .first()
        .map_or_else(|| c.executable.clone(), |p| (*p).to_owned())
}

/// Payloads re-parsed inside payloads stop after this many levels.
const MAX_PAYLOAD_DEPTH: u8 = 3;

/// Builds the [`Word`] for a local byte range whose outermost node has kind `kind`.
pub(crate) fn make_word(src: &Src<'_>, kind: &str, range: Range<usize>, spans: bool) -> Word {
    let text = src.slice(range.clone());
    let d = dequote(text, 0, None);
    Word {
        text: one_layer(kind, text),
        value: d.value,
        expandable: d.expandable,
        span: if spans { src.map.range(range) } else { None },
    }
}

/// True when the text between two children holds a newline that is not a line continuation.
fn has_newline(gap: &str) -> bool {
    let b = gap.as_bytes();
    b.iter()
        .enumerate()
        .any(|(i, &c)| c == b'\n' && (i == 0 || b[i - 1] != b'\\'))
}

/// What a command node's children amount to.
#[derive(Default)]
struct Parts<'t> {
    env: Vec<(String, String)>,
    /// (outer node kind, local range) of each argv word.
    words: Vec<(&'t str, Range<usize>)>,
    /// Nodes searched for substitutions, in document order.
    scan: Vec<Node<'t>>,
    redirects: Vec<Redirect>,
    swallowed: Vec<Node<'t>>,
    tails: Vec<Node<'t>>,
    spanless: bool,
    span: Option<Range<usize>>,
    /// What a heredoc or here-string feeds to the command's stdin.
    stdin: Option<String>,
}

impl Parts<'_> {
    fn cover(&mut self, r: Range<usize>) {
        self.span = Some(match self.span.take() {
            Some(s) => s.start.min(r.start)..s.end.max(r.end),
            None => r,
        });
    }
}

/// The quote layer of a whole word, `None` when it mixes layers.
fn layer_of(kind: &str) -> Option<QuoteLayer> {
    match kind {
        "word" | "number" => Some(QuoteLayer::Bare),
        "raw_string" => Some(QuoteLayer::Single),
        "string" | "translated" => Some(QuoteLayer::Double),
        _ => None,
    }
}

impl Walker {
    /// Walks a `command` node: one part, then its substitutions, then its payload.
    pub(crate) fn walk_command<'t>(
        &mut self,
        node: Node<'t>,
        src: &Src<'_>,
        lvl: Level,
        depth: usize,
        extra: StmtExtra<'t>,
    ) {
        let mut p = Parts::default();
        let mut start = node.start_byte();
        let mut prev_end = start;
        let mut dollar: Option<Range<usize>> = None;
        let mut cursor = node.walk();
        let mut more = cursor.goto_first_child();
        while more {
            let child = cursor.node();
            let field = cursor.field_name();
            more = cursor.goto_next_sibling();
            let range = child.byte_range();
            // tree-sitter glues `a=1 b=2 <newline> cmd` into one command; bash runs two statements.
            if p.words.is_empty()
                && (!p.env.is_empty() || !p.redirects.is_empty())
                && has_newline(src.slice(prev_end..range.start))
            {
                self.assignments_only(
                    src.slice(start..prev_end),
                    src,
                    lvl,
                    depth,
                    std::mem::take(&mut p),
                );
                start = range.start;
            }
            prev_end = range.end;
            match (child.kind(), field) {
                ("comment", _) => self.comment(child, src),
                ("variable_assignment", _) if p.words.is_empty() => {
                    let name = child
                        .child_by_field_name("name")
                        .map_or("", |n| src.slice(n.byte_range()));
                    let value = child.child_by_field_name("value");
                    let text = value.map_or(String::new(), |v| {
                        one_layer(v.kind(), src.slice(v.byte_range()))
                    });
                    p.env.push((name.to_owned(), text));
                    p.scan.extend(value);
                    p.cover(range);
                }
                ("file_redirect" | "herestring_redirect", _) => {
                    let (redirect, swallowed) = parse_redirect(child, src);
                    if child.kind() == "herestring_redirect" {
                        p.stdin = Some(herestring_text(child, src));
                    }
                    p.redirects.push(redirect);
                    p.swallowed.extend(swallowed);
                    // Its target's substitutions run (the swallowed words are inside it).
                    p.scan.push(child);
                }
                ("heredoc_redirect", _) => {
                    let doc = read_heredoc(child, src);
                    p.redirects.extend(doc.redirects);
                    if let Some(end) = doc.dead_end {
                        p.spanless = true;
                        self.dead_end = Some(self.dead_end.map_or(end, |d| d.max(end)));
                    }
                    p.tails.extend(doc.tails);
                    p.scan.extend(doc.expanded);
                    p.stdin = doc.body.or(p.stdin.take());
                }
                ("$", Some("argument")) if !child.is_named() => {
                    if let Some(d) = dollar.replace(range) {
                        p.words.push(("word", d));
                    }
                }
                (_, Some("name" | "argument")) => {
                    let kind = match field {
                        Some("name") => child.named_child(0).map_or(child.kind(), |n| n.kind()),
                        _ => child.kind(),
                    };
                    // `$"…"` comes out as a `$` token followed by the string.
                    let word = match dollar.take() {
                        Some(d) if d.end == range.start => ("translated", d.start..range.end),
                        Some(d) => {
                            p.words.push(("word", d));
                            (kind, range.clone())
                        }
                        None => (kind, range.clone()),
                    };
                    p.cover(word.1.clone());
                    p.words.push(word);
                    p.scan.push(child);
                }
                _ => {}
            }
        }
        if let Some(d) = dollar {
            p.words.push(("word", d));
        }
        p.spanless |= extra.spanless || !p.swallowed.is_empty();
        p.redirects.extend(extra.redirects);
        p.stdin = p.stdin.or(extra.stdin);
        // Swallowed words are scanned with the redirect holding them.
        p.swallowed.extend(extra.extra_args);
        for n in &p.swallowed {
            p.words.push((n.kind(), n.byte_range()));
        }
        self.finish_command(node, start, src, lvl, depth, p);
    }

    /// Walks `export`/`declare`/`typeset`/`local`/`readonly`/`unset`: a part named by the
    /// keyword, with its words as arguments and their substitutions nested under it.
    pub(crate) fn walk_declaration(
        &mut self,
        node: Node<'_>,
        src: &Src<'_>,
        lvl: Level,
        depth: usize,
    ) {
        let mut p = Parts::default();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            let range = child.byte_range();
            match child.kind() {
                "comment" => self.comment(child, src),
                kind if child.is_named() || p.words.is_empty() => {
                    p.cover(range.clone());
                    p.words.push((kind, range));
                    if child.is_named() {
                        p.scan.push(child);
                    }
                }
                _ => {}
            }
        }
        self.finish_command(node, node.start_byte(), src, lvl, depth, p);
    }

    fn finish_command(
        &mut self,
        node: Node<'_>,
        start: usize,
        src: &Src<'_>,
        lvl: Level,
        depth: usize,
        mut p: Parts<'_>,
    ) {
        if p.words.is_empty() {
            let raw = src.slice(start..node.end_byte());
            self.assignments_only(raw, src, lvl, depth, p);
            return;
        }
        // Backtick substitutions may start at the blank before them.
        for w in &mut p.words {
            while src
                .text
                .as_bytes()
                .get(w.1.start)
                .is_some_and(u8::is_ascii_whitespace)
                && w.1.start < w.1.end
            {
                w.1.start += 1;
            }
        }
        let spans = lvl.spans && !p.spanless;
        let words: Vec<Word> = p
            .words
            .iter()
            .map(|(k, r)| make_word(src, k, r.clone(), spans))
            .collect();
        let command = Command {
            raw: src.slice(start..node.end_byte()).to_owned(),
            executable: words[0].text.clone(),
            args: words[1..].iter().map(|w| w.text.clone()).collect(),
            env: p.env,
            redirects: p.redirects,
            span: if spans {
                p.span.and_then(|r| src.map.range(r))
            } else {
                None
            },
            nesting: lvl.nesting,
            host: lvl.host,
            contexts: src.contexts.to_vec(),
            tainted: words.iter().any(|w| w.value.is_none()),
            words,
            runs: Vec::new(),
            launched: Vec::new(),
            subshells: self.subshells.clone(),
        };
        let mut command = command;
        let found = command.find_runs();
        // What the command reads on stdin, for a runner substituting it (`xargs`): a heredoc
        // or here-string, else the output of a literal `echo`/`printf` piped into it.
        let input = if found.templates.is_empty() {
            None
        } else {
            p.stdin.clone().or_else(|| self.piped_output(lvl))
        };
        // A shell or interpreter reading stdin runs what a literal `echo`/`printf` pipes into it
        // (`echo 'rm -rf /' | bash`) when no heredoc or here-string feeds it. Read before this
        // command joins the parts, so the part before it is the one piping.
        let stdin = p.stdin.clone().or_else(|| {
            (found.stdin_shell || found.stdin_script.is_some())
                .then(|| self.piped_output(lvl))
                .flatten()
        });
        let host = self.parts.len();
        self.parts.push(Part { command, op: None });
        let nested = Level {
            nesting: lvl.nesting.saturating_add(1),
            host: Some(host),
            floor: 0,
            spans: false,
        };
        for n in p.scan {
            self.substitutions(n, src, nested, depth + 1);
        }
        self.payloads(host, &found, stdin, input, &p.words, src, lvl, depth);
        self.tails(p.tails, src, lvl, depth);
    }

    /// A command without argv: a part without an executable (it redirects or assigns), then
    /// its substitutions.
    fn assignments_only(
        &mut self,
        raw: &str,
        src: &Src<'_>,
        lvl: Level,
        depth: usize,
        p: Parts<'_>,
    ) {
        if !p.redirects.is_empty() || !p.env.is_empty() {
            self.push_synthetic(raw, src, lvl, p.redirects, p.env);
        }
        for n in p.scan {
            self.walk(n, src, lvl, depth + 1);
        }
        self.tails(p.tails, src, lvl, depth);
    }

    /// Commands written after a heredoc delimiter on its line (`cat <<EOF | sh`).
    pub(crate) fn tails(&mut self, tails: Vec<Node<'_>>, src: &Src<'_>, lvl: Level, depth: usize) {
        for tail in tails {
            self.walk_tail(tail, src, lvl, depth + 1);
        }
    }

    /// Finds `$(…)`, backticks and `<(…)` below `node` and walks each one's commands at `lvl`.
    pub(crate) fn substitutions(
        &mut self,
        node: Node<'_>,
        src: &Src<'_>,
        lvl: Level,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            self.cut(Unreadable::Nesting);
            return;
        }
        match node.kind() {
            "command_substitution" | "process_substitution" => {
                let lvl = Level {
                    floor: self.parts.len(),
                    ..lvl
                };
                self.walk(node, src, lvl, depth + 1);
            }
            _ => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    self.substitutions(child, src, lvl, depth + 1);
                }
            }
        }
    }

    /// Walks a command string of the command at `host` one nesting level down.
    fn walk_nested(&mut self, inner: &Src<'_>, host: usize, lvl: Level, spans: bool, depth: usize) {
        let nested = Level {
            nesting: lvl.nesting.saturating_add(1),
            host: Some(host),
            floor: self.parts.len(),
            spans,
        };
        self.walk_text(inner, nested, depth + 1);
    }

    /// Re-parses the command strings a command hands to a shell (`sh -c '…'`, `eval …`,
    /// `watch …`, a heredoc or here-string fed to `bash`) and adds their commands.
    #[allow(clippy::too_many_arguments)]
    fn payloads(
        &mut self,
        host: usize,
        found: &Found,
        stdin: Option<String>,
        input: Option<String>,
        wsrc: &[(&str, Range<usize>)],
        src: &Src<'_>,
        lvl: Level,
        depth: usize,
    ) {
        if found.too_many {
            self.cut(Unreadable::TooManyJobs);
        }
        let script_stdin = stdin.clone().filter(|_| found.stdin_script.is_some());
        let stdin = stdin.filter(|_| found.stdin_shell);
        let mut texts = found.texts.clone();
        self.scripts(host, found, script_stdin, &mut texts);
        if let Some(input) = input {
            let words = self.parts[host].command.words.clone();
            for t in &found.templates {
                let Some(items) = jobs::split_input(&input, t.split) else {
                    continue;
                };
                let list = jobs::template_jobs(t, items);
                match jobs::expand(&words, t.command.clone(), &t.spec, &list) {
                    Some(more) => texts.extend(more),
                    None if list.len() > jobs::MAX_JOBS => self.cut(Unreadable::TooManyJobs),
                    None => {}
                }
            }
        }
        // Every rebuilt line is parsed again, and may rebuild more: a budget for the whole
        // line keeps `parallel bash -c "parallel …" ::: …` nested three deep from multiplying.
        self.rebuilt += texts.len();
        if self.rebuilt > jobs::MAX_REBUILT {
            self.cut(Unreadable::TooManyJobs);
            texts.clear();
        }
        if found.strings.is_empty() && stdin.is_none() && texts.is_empty() {
            return;
        }
        if src.payload_depth >= MAX_PAYLOAD_DEPTH {
            self.cut(Unreadable::PayloadDepth);
            return;
        }
        for (range, skip) in &found.strings {
            self.payload(host, range.clone(), *skip, wsrc, src, lvl, depth);
        }
        // Rebuilt command lines (substituted arguments, git aliases) map to no source text.
        for text in stdin.into_iter().chain(texts) {
            let inner = src.nested(&text, SrcMap::Unmapped, QuoteLayer::Bare);
            self.walk_nested(&inner, host, lvl, false, depth);
        }
    }

    /// Reads the interpreter programs of the command at `host` (`python -c TEXT`, a heredoc
    /// fed to `node`) and adds the command lines their calls run to `texts`; a program that
    /// cannot be read to the end is noted in [`Walker::unread_code`].
    fn scripts(
        &mut self,
        host: usize,
        found: &Found,
        stdin: Option<String>,
        texts: &mut Vec<String>,
    ) {
        let mut programs = Vec::new();
        for &(lang, i, skip) in &found.scripts {
            let Some(word) = self.parts[host].command.words.get(i) else {
                continue;
            };
            match word.value.as_deref().and_then(|v| v.get(skip..)) {
                Some(text) => programs.push((lang, text.to_owned())),
                None => {
                    self.unread_code.get_or_insert_with(|| {
                        format!(
                            "the program text of `{}` holds a shell expansion",
                            word_program(&self.parts[host].command)
                        )
                    });
                }
            }
        }
        if let (Some(lang), Some(text)) = (found.stdin_script, stdin) {
            programs.push((lang, text));
        }
        for (lang, text) in programs {
            let reading = scripts::read(lang, &text);
            if let Some(why) = reading.unread {
                self.unread_code.get_or_insert(why);
            }
            texts.extend(reading.commands);
        }
    }

    /// What the command before this one at `lvl` writes into the pipe, when it is a literal
    /// `echo` or `printf` joined to it by `|`.
    fn piped_output(&self, lvl: Level) -> Option<String> {
        let floor = lvl.floor.min(self.parts.len());
        let prev = self.parts[floor..]
            .iter()
            .rev()
            .find(|p| p.command.nesting == lvl.nesting && p.command.host == lvl.host)?;
        if prev.op != Some(crate::Op::Pipe) || prev.command.tainted {
            return None;
        }
        jobs::output_of(&prev.command.words)
    }

    /// Re-parses one command string: the words `indices` joined with blanks, the first
    /// `skip` bytes dropped (a value glued to its option).
    #[allow(clippy::too_many_arguments)]
    fn payload(
        &mut self,
        host: usize,
        indices: Range<usize>,
        skip: usize,
        wsrc: &[(&str, Range<usize>)],
        src: &Src<'_>,
        lvl: Level,
        depth: usize,
    ) {
        // fish and csh quote differently: their strings are read but not mapped back.
        let mappable = !self.parts[host].command.words[..indices.start.min(wsrc.len())]
            .iter()
            .any(|w| matches!(basename(w.key()), "fish" | "csh" | "tcsh"));
        let mut text = String::new();
        let mut table = Vec::new();
        let mut layers = Vec::new();
        // A payload holding an unresolved expansion (`bash -c "git stash $X"`) is still read,
        // with the expansion kept literally, as the original does: the commands around the
        // expansion are real. Such a payload cannot be mapped back to the outer line.
        let mut tainted = false;
        for (k, i) in indices.enumerate() {
            let Some((kind, range)) = wsrc.get(i) else {
                return;
            };
            if k > 0 {
                // The joining blank maps to the blank after the previous word.
                text.push(' ');
                table.push(table.last().map_or(range.start, |&e: &usize| e + 1));
            }
            match dequote(src.slice(range.clone()), range.start, Some(&mut table)).value {
                Some(value) => text.push_str(&value),
                None => {
                    tainted = true;
                    let Some(word) = self.parts[host].command.words.get(i) else {
                        return;
                    };
                    text.push_str(&word.text);
                }
            }
            layers.push(layer_of(kind));
        }
        if skip > 0 {
            let Some(rest) = text.get(skip..) else {
                return;
            };
            text = rest.to_owned();
            table.drain(..skip.min(table.len()));
        }
        if tainted {
            table.clear();
        }
        let layer = match layers.first() {
            Some(&first) if layers.iter().all(|l| *l == first) => first,
            _ => None,
        };
        let map = match layer {
            Some(_) if mappable && table.len() == text.len() => src.map.compose(&table),
            _ => SrcMap::Unmapped,
        };
        let spans = lvl.spans && !matches!(map, SrcMap::Unmapped);
        let inner = src.nested(&text, map, layer.unwrap_or(QuoteLayer::Bare));
        self.walk_nested(&inner, host, lvl, spans, depth);
    }
}

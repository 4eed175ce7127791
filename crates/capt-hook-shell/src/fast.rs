//! A parser-free path for plain command lines.
//!
//! Most commands an agent runs are words joined by `&&`, `|` and `;`, maybe with a trailing
//! `2>&1` or `> file`. For those, splitting on operators gives exactly what the tree-sitter walk
//! gives, in a fraction of the time. Two nestings are common enough to read here too: a quoted
//! command string handed to a shell (`bash -lc 'git fetch && git rebase'`) and a plain command
//! substitution (`git commit -m "$(cat msg.txt)"`), both holding a plain line themselves.
//! Anything else — other expansions, escapes, globs, comments, subshells, keywords, heredocs,
//! `eval`, newlines — returns `None` and takes the full parse. A differential test holds the two
//! paths equal on generated lines.

use std::ops::Range;

use crate::words::{dequote, one_layer};
use crate::wrappers::basename;
use crate::{Command, CommandLine, Op, Part, QuoteLayer, Redirect, Word};

/// Command strings inside command strings past this depth are left to the full walk (which
/// reports them as unreadable past its own limit).
const MAX_PAYLOAD_DEPTH: u8 = 3;

/// First words that make tree-sitter build something other than a simple command.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "in", "function", "select", "coproc", "time", "export", "declare", "typeset", "local",
    "readonly", "unset", "eval",
];

enum Token {
    /// A word: its range, the tree-sitter node kind it would get, and the inner ranges of its
    /// command substitutions.
    Word(Range<usize>, &'static str, Vec<Range<usize>>),
    Op(Op),
    /// A redirect: fd, operator, and the target word.
    Redirect(Option<u32>, &'static str, Range<usize>, &'static str),
}

/// Bytes that never appear in a plain line outside quotes.
fn is_special(b: u8) -> bool {
    matches!(
        b,
        b'$' | b'`'
            | b'\\'
            | b'('
            | b')'
            | b'{'
            | b'}'
            | b'['
            | b']'
            | b'*'
            | b'?'
            | b'~'
            | b'#'
            | b'!'
            | b'^'
            | b'\n'
            | b'\r'
    ) || !(b == b' ' || b == b'\t' || b.is_ascii_graphic())
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn ends_word(b: u8) -> bool {
    is_blank(b) || matches!(b, b'&' | b'|' | b';' | b'<' | b'>')
}

/// The end of a plain command substitution whose `$(` is at `i`: its inner text holds no
/// parenthesis, quote, expansion, escape or newline (so the first `)` closes it).
fn substitution_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i + 1) != Some(&b'(') || b.get(i + 2) == Some(&b'(') {
        return None;
    }
    let mut j = i + 2;
    while j < b.len() {
        match b[j] {
            b')' => return Some(j + 1),
            b'(' | b'$' | b'`' | b'\\' | b'\'' | b'"' | b'\n' | b'#' => return None,
            _ => j += 1,
        }
    }
    None
}

/// Reads one word starting at `i`; returns its end, its node kind and the byte ranges of the
/// inner text of its command substitutions.
fn word(b: &[u8], mut i: usize) -> Option<(usize, &'static str, Vec<Range<usize>>)> {
    let start = i;
    let (mut quoted, mut bare, mut bare_substs) = (0, false, 0);
    let mut substs = Vec::new();
    while i < b.len() && !ends_word(b[i]) {
        match b[i] {
            b'\'' => {
                let close = b[i + 1..].iter().position(|&c| c == b'\'')?;
                i += close + 2;
                quoted += 1;
            }
            b'"' => {
                let mut j = i + 1;
                loop {
                    match *b.get(j)? {
                        b'"' => break,
                        b'$' => {
                            let end = substitution_end(b, j)?;
                            substs.push(j + 2..end - 1);
                            j = end;
                        }
                        // Inside double quotes backticks and backslashes still mean something.
                        b'`' | b'\\' | b'!' => return None,
                        _ => j += 1,
                    }
                }
                i = j + 1;
                quoted += 1;
            }
            b'$' => {
                let end = substitution_end(b, i)?;
                substs.push(i + 2..end - 1);
                bare_substs += 1;
                i = end;
            }
            c if is_special(c) => return None,
            _ => {
                bare = true;
                i += 1;
            }
        }
    }
    if i == start {
        return None;
    }
    let kind = match (quoted, bare, bare_substs) {
        (0, false, 1) if substs.len() == 1 => "command_substitution",
        (0, _, _) => "word",
        (1, false, 0) if b[start] == b'"' => "string",
        (1, false, 0) => "raw_string",
        _ => "concatenation",
    };
    // A bare substitution glued to plain text is a concatenation for tree-sitter.
    let kind = if kind == "word" && !substs.is_empty() {
        "concatenation"
    } else {
        kind
    };
    Some((i, kind, substs))
}

fn tokens(raw: &str) -> Option<Vec<Token>> {
    let b = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if is_blank(c) {
            i += 1;
            continue;
        }
        let two = b.get(i..i + 2);
        let op = match (c, two) {
            (_, Some(b"&&")) => Some((Op::And, 2)),
            (_, Some(b"||")) => Some((Op::Or, 2)),
            (_, Some(b"|&")) | (_, Some(b"&>")) => return None,
            (b'|', _) => Some((Op::Pipe, 1)),
            (b';', _) if two == Some(b";;") => return None,
            (b';', _) => Some((Op::Seq, 1)),
            (b'&', _) => Some((Op::Background, 1)),
            _ => None,
        };
        if let Some((op, len)) = op {
            out.push(Token::Op(op));
            i += len;
            continue;
        }
        // A redirect: optional fd digits glued to the operator.
        let digits = b[i..].iter().take_while(|d| d.is_ascii_digit()).count();
        let rest = &b[i + digits..];
        let redirect = [">>", ">&", "<&", ">|", ">", "<"]
            .into_iter()
            .find(|o| rest.starts_with(o.as_bytes()));
        if let Some(op) = redirect {
            if rest.starts_with(b"<<") || rest.starts_with(b"<>") {
                return None;
            }
            let fd = if digits > 0 {
                Some(raw[i..i + digits].parse().ok()?)
            } else {
                None
            };
            let mut j = i + digits + op.len();
            while j < b.len() && is_blank(b[j]) {
                j += 1;
            }
            let (end, kind, substs) = word(b, j)?;
            if !substs.is_empty() {
                return None;
            }
            out.push(Token::Redirect(fd, op, j..end, kind));
            i = end;
            continue;
        }
        let (end, kind, substs) = word(b, i)?;
        out.push(Token::Word(i..end, kind, substs));
        i = end;
    }
    Some(out)
}

fn is_assignment(text: &str) -> bool {
    let Some((name, _)) = text.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The value of a word this path read, when it needs no dequoting: a bare word (nothing in it
/// is special here) or one quoted string without substitutions is its text with the quote
/// layer `one_layer` already took off. `None` sends the word through the full dequote.
fn plain_value(kind: &str, substs: &[Range<usize>], unquoted: &str) -> Option<String> {
    match kind {
        "word" | "raw_string" | "string" if substs.is_empty() => Some(unquoted.to_owned()),
        _ => None,
    }
}

/// One command read from its tokens, with what is nested in it.
struct Read {
    command: Command,
    /// Inner ranges (in the text) of the command substitutions in its words, in order.
    substs: Vec<Range<usize>>,
    /// What it runs besides its own argv.
    found: crate::wrappers::Found,
}

/// One command's tokens, already split off at operators.
fn command(raw: &str, toks: &[Token]) -> Option<Read> {
    let mut env = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let mut substs = Vec::new();
    let mut redirects = Vec::new();
    let mut span: Option<Range<usize>> = None;
    for t in toks {
        match t {
            Token::Word(r, kind, inner) => {
                // A word after a redirect is swallowed into argv by bash; leave that to the
                // full parse, which also drops the span.
                if !redirects.is_empty() {
                    return None;
                }
                let text = &raw[r.clone()];
                // tree-sitter reads some other `x=y` words before the command name as
                // assignments too (`--flag=value`); leave those to it.
                if words.is_empty() && text.contains('=') && !is_assignment(text) {
                    return None;
                }
                if words.is_empty() && is_assignment(text) {
                    if *kind != "word" {
                        return None;
                    }
                    let (name, value) = text.split_once('=')?;
                    env.push((name.to_owned(), value.to_owned()));
                } else {
                    let text = one_layer(kind, text);
                    let (value, expandable) = match plain_value(kind, inner, &text) {
                        Some(v) => (Some(v), false),
                        None => {
                            let d = dequote(&raw[r.clone()], 0, None);
                            (d.value, d.expandable)
                        }
                    };
                    words.push(Word {
                        text,
                        value,
                        expandable,
                        span: Some(r.clone()),
                    });
                    substs.extend(inner.iter().cloned());
                }
                span = Some(span.map_or(r.clone(), |s| s.start..r.end));
            }
            Token::Redirect(fd, op, r, kind) => redirects.push(Redirect {
                fd: *fd,
                op: (*op).to_owned(),
                target: one_layer(kind, &raw[r.clone()]),
            }),
            Token::Op(_) => return None,
        }
    }
    let first = words.first()?;
    if KEYWORDS.contains(&first.text.as_str()) {
        return None;
    }
    let span = span?;
    let mut command = Command {
        raw: raw[span.clone()].to_owned(),
        executable: words[0].text.clone(),
        args: words[1..].iter().map(|w| w.text.clone()).collect(),
        env,
        redirects,
        span: Some(span),
        nesting: 0,
        host: None,
        contexts: Vec::new(),
        tainted: words.iter().any(|w| w.value.is_none()),
        words,
        runs: Vec::new(),
        launched: Vec::new(),
        subshells: Vec::new(),
    };
    let found = command.find_runs();
    Some(Read {
        command,
        substs,
        found,
    })
}

/// The parts of a plain line, or `None` when it needs the full parse.
pub fn parse_simple(raw: &str) -> Option<CommandLine> {
    parse_at(raw, 0)
}

/// Appends `inner`'s parts as nested under part `host`: one level deeper, their hosts shifted,
/// inside the quote layer `layer` (payloads), their spans moved by `offset` or dropped.
fn nest(
    parts: &mut Vec<Part>,
    inner: Vec<Part>,
    host: usize,
    layer: Option<QuoteLayer>,
    offset: Option<usize>,
) {
    let base = parts.len();
    for mut part in inner {
        let c = &mut part.command;
        c.nesting = c.nesting.saturating_add(1);
        c.host = Some(c.host.map_or(host, |h| h + base));
        if let Some(layer) = layer {
            c.contexts.insert(0, layer);
        }
        let shift = |r: &mut Option<Range<usize>>| {
            *r = match offset {
                Some(o) => r.take().map(|r| r.start + o..r.end + o),
                None => None,
            };
        };
        shift(&mut c.span);
        for w in &mut c.words {
            shift(&mut w.span);
        }
        parts.push(part);
    }
}

/// Adds a command and what is nested in it (substitutions, then command strings).
fn push_command(
    raw: &str,
    toks: &[Token],
    op: Option<Op>,
    depth: u8,
    parts: &mut Vec<Part>,
) -> Option<()> {
    let read = command(raw, toks)?;
    let found = read.found;
    // Rebuilt command lines (substituted arguments, git aliases) are the full walk's; so is a
    // runner substituting what a literal `echo`/`printf` pipes into it.
    if !found.texts.is_empty()
        || found.too_many
        || !found.scripts.is_empty()
        || found.stdin_script.is_some()
    {
        return None;
    }
    if (!found.templates.is_empty() || found.stdin_shell || found.stdin_script.is_some())
        && let Some(prev) = parts.iter().rev().find(|p| p.command.nesting == 0)
        && prev.op == Some(Op::Pipe)
        && crate::jobs::output_of(&prev.command.words).is_some()
    {
        return None;
    }
    let host = parts.len();
    parts.push(Part {
        command: read.command,
        op,
    });
    for r in read.substs {
        let inner = parse_at(&raw[r], depth)?;
        // Substitution parts carry no spans, so one holding a command string is left to the
        // full walk, which knows how to drop those spans too.
        if inner.parts.iter().any(|p| p.command.nesting > 0) {
            return None;
        }
        nest(parts, inner.parts, host, None, None);
    }
    for (range, skip) in found.strings {
        // One quoted word handed to a shell that quotes like bash; the rest (eval, watch,
        // glued values, fish) takes the full walk.
        let program = basename(parts[host].command.words[0].key());
        if depth >= MAX_PAYLOAD_DEPTH
            || skip != 0
            || range.len() != 1
            || matches!(program, "fish" | "csh" | "tcsh")
        {
            return None;
        }
        let word = &parts[host].command.words[range.start];
        let (Some(value), Some(span)) = (word.value.clone(), word.span.clone()) else {
            return None;
        };
        // One quoted string without escapes: its value is exactly the text between the quotes.
        let text = raw.as_bytes();
        let layer = match (text[span.start], text[span.end - 1]) {
            (b'\'', b'\'') => QuoteLayer::Single,
            (b'"', b'"') => QuoteLayer::Double,
            _ => return None,
        };
        if value.len() + 2 != span.len() {
            return None;
        }
        let inner = parse_at(&value, depth + 1)?;
        nest(parts, inner.parts, host, Some(layer), Some(span.start + 1));
    }
    Some(())
}

/// [`parse_simple`] for a text read `depth` command strings deep.
fn parse_at(raw: &str, depth: u8) -> Option<CommandLine> {
    let toks = tokens(raw)?;
    let mut parts: Vec<Part> = Vec::new();
    let mut current: Vec<Token> = Vec::new();
    let mut iter = toks.into_iter().peekable();
    while let Some(t) = iter.next() {
        match t {
            Token::Op(op) => {
                push_command(raw, &current, Some(op), depth, &mut parts)?;
                current.clear();
                // `;` and `&` may end the line; the other operators need a right-hand side.
                if iter.peek().is_none() && !matches!(op, Op::Seq | Op::Background) {
                    return None;
                }
            }
            other => current.push(other),
        }
    }
    if !current.is_empty() {
        push_command(raw, &current, None, depth, &mut parts)?;
    }
    if parts.is_empty() {
        return None;
    }
    // A redirect belongs to the command it follows, as in bash (the full walk undoes
    // tree-sitter's `(a && b) > out` reading the same way).
    Some(CommandLine {
        raw: raw.to_owned(),
        parts,
        comments: Vec::new(),
        has_error: false,
        unreadable: None,
        unread_code: None,
    })
}

//! A parser-free path for plain command lines.
//!
//! Most commands an agent runs are words joined by `&&`, `|` and `;`, maybe with a trailing
//! `2>&1` or `> file`. For those, splitting on operators gives exactly what the tree-sitter walk
//! gives, in a fraction of the time. Anything else — expansions, escapes, globs, comments,
//! subshells, keywords, heredocs, shell payloads (`sh -c`, `eval`), newlines — returns `None` and
//! takes the full parse. A differential test holds the two paths equal on generated lines.

use std::ops::Range;

use crate::words::{dequote, one_layer};
use crate::wrappers::{SHELLS, basename};
use crate::{Command, CommandLine, Op, Part, Redirect, Word};

/// First words that make tree-sitter build something other than a simple command.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "in", "function", "select", "coproc", "time", "export", "declare", "typeset", "local",
    "readonly", "unset", "eval",
];

enum Token {
    /// A word: its range and the tree-sitter node kind it would get.
    Word(Range<usize>, &'static str),
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

/// Reads one word starting at `i`; returns its end and node kind.
fn word(b: &[u8], mut i: usize) -> Option<(usize, &'static str)> {
    let start = i;
    let (mut quoted, mut bare) = (0, false);
    while i < b.len() && !ends_word(b[i]) {
        match b[i] {
            b'\'' => {
                let close = b[i + 1..].iter().position(|&c| c == b'\'')?;
                i += close + 2;
                quoted += 1;
            }
            b'"' => {
                let close = b[i + 1..].iter().position(|&c| c == b'"')?;
                // Inside double quotes `$`, backticks and backslashes still mean something.
                if b[i + 1..i + 1 + close]
                    .iter()
                    .any(|&c| matches!(c, b'$' | b'`' | b'\\' | b'!'))
                {
                    return None;
                }
                i += close + 2;
                quoted += 1;
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
    let kind = match (quoted, bare) {
        (0, _) => "word",
        (1, false) if b[start] == b'"' => "string",
        (1, false) => "raw_string",
        _ => "concatenation",
    };
    Some((i, kind))
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
            let (end, kind) = word(b, j)?;
            out.push(Token::Redirect(fd, op, j..end, kind));
            i = end;
            continue;
        }
        let (end, kind) = word(b, i)?;
        out.push(Token::Word(i..end, kind));
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

/// One command's tokens, already split off at operators.
fn command(raw: &str, toks: &[Token]) -> Option<Command> {
    let mut env = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let mut redirects = Vec::new();
    let mut span: Option<Range<usize>> = None;
    for t in toks {
        match t {
            Token::Word(r, kind) => {
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
                    let d = dequote(text, 0, None);
                    words.push(Word {
                        text: one_layer(kind, text),
                        value: d.value,
                        expandable: d.expandable,
                        span: Some(r.clone()),
                    });
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
    // Shell payloads and eval are re-parsed by the full walk.
    if words.iter().any(|w| {
        let b = basename(&w.text);
        SHELLS.contains(&b) || b == "eval"
    }) {
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
        tainted: false,
        words,
        runs: Vec::new(),
    };
    // Command strings (`watch …`, `parallel …`, `env -S …`) take the full walk.
    let found = command.find_runs();
    if !found.strings.is_empty() {
        return None;
    }
    Some(command)
}

/// The parts of a plain line, or `None` when it needs the full parse.
pub fn parse_simple(raw: &str) -> Option<CommandLine> {
    let toks = tokens(raw)?;
    let mut parts: Vec<Part> = Vec::new();
    let mut current: Vec<Token> = Vec::new();
    let mut iter = toks.into_iter().peekable();
    while let Some(t) = iter.next() {
        match t {
            Token::Op(op) => {
                parts.push(Part {
                    command: command(raw, &current)?,
                    op: Some(op),
                });
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
        parts.push(Part {
            command: command(raw, &current)?,
            op: None,
        });
    }
    if parts.is_empty() {
        return None;
    }
    // tree-sitter reads a redirect as closing everything written before it in the same
    // statement (`a && b > out` parses as `(a && b) > out`, `a | b > x | c` as
    // `(a | b) > x | c`), so those commands carry it too; the full walk does the same.
    // Walking backwards, each part takes the redirects written after it in its statement; a
    // statement without redirects costs nothing, so plain chains stay linear.
    let mut later: Vec<Redirect> = Vec::new();
    for k in (0..parts.len()).rev() {
        if matches!(parts[k].op, Some(Op::Seq | Op::Background) | None) {
            later.clear();
        }
        let own = parts[k].command.redirects.clone();
        parts[k].command.redirects.extend(later.iter().cloned());
        if !own.is_empty() {
            later.splice(0..0, own);
        }
    }
    Some(CommandLine {
        raw: raw.to_owned(),
        parts,
        comments: Vec::new(),
        has_error: false,
        unreadable: None,
    })
}

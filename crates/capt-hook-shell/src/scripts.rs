//! Interpreter one-liners read for the shell commands they run: `python -c`, `node -e`,
//! `perl -e`, `ruby -e` (and the same programs fed by a heredoc or here-string).
//!
//! The program text is tokenised just far enough to find string literals and the calls that
//! hand them to a shell or `exec` (`os.system`, `subprocess.run`, `execSync`, `spawn`, perl and
//! ruby `system`/`exec`/backticks/`qx`/`%x`, and the library calls that delete a tree such as
//! `shutil.rmtree`). Each call whose arguments are literals becomes a command line the walker
//! parses like `sh -c`'s string, so every rule sees `python -c 'os.system("rm -rf /")'` run
//! `rm -rf /`. A call we cannot read to the end (an argument computed at run time, a string
//! that never closes, `eval` of computed text) is reported instead, so callers can ask rather
//! than allow: that program may run anything.

mod python_names;

use std::collections::HashMap;

/// The interpreters whose one-liners are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    Node,
    Perl,
    Ruby,
}

impl Lang {
    fn name(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Node => "node",
            Lang::Perl => "perl",
            Lang::Ruby => "ruby",
        }
    }
}

/// The interpreter a program name (a basename) is, if it is one we read.
pub(crate) fn lang(program: &str) -> Option<Lang> {
    let versioned = |p: &str, stem: &str| {
        p.strip_prefix(stem)
            .is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
    };
    if versioned(program, "python") || versioned(program, "pypy") {
        Some(Lang::Python)
    } else if matches!(program, "node" | "nodejs" | "bun") {
        Some(Lang::Node)
    } else if versioned(program, "perl") {
        Some(Lang::Perl)
    } else if matches!(program, "ruby" | "jruby" | "truffleruby") {
        Some(Lang::Ruby)
    } else {
        None
    }
}

/// Where an interpreter takes its program from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Input {
    /// Program text in these words (index, bytes of the word to skip: `-eCODE`).
    Text(Vec<(usize, usize)>),
    /// Standard input (`python3 -`, `node` with no script, a heredoc).
    Stdin,
    /// A script file or module: not read here.
    File,
}

/// Reads the interpreter's options in `words[start..end]` (`words[start]` is the program).
pub(crate) fn input<S: AsRef<str>>(lang: Lang, words: &[S], start: usize, end: usize) -> Input {
    let mut texts = Vec::new();
    let mut i = start + 1;
    while i < end {
        let w = words[i].as_ref();
        if w == "-" {
            return Input::Stdin;
        }
        if w == "--" {
            return if texts.is_empty() && i + 1 >= end {
                Input::Stdin
            } else if texts.is_empty() {
                Input::File
            } else {
                Input::Text(texts)
            };
        }
        if !w.starts_with('-') || w.len() < 2 {
            // The first operand is a script file, unless the program came from an option.
            break;
        }
        let step = match lang {
            Lang::Python => python_option(w, i, end, &mut texts),
            Lang::Node => node_option(w, i, end, &mut texts),
            Lang::Perl | Lang::Ruby => cluster_option(lang, w, i, end, &mut texts),
        };
        match step {
            Some(n) => i += n,
            // `-m module`: the program is a module's file.
            None => return Input::File,
        }
        if matches!(lang, Lang::Python | Lang::Node) && !texts.is_empty() {
            // python and node stop reading their own options at the program text.
            return Input::Text(texts);
        }
    }
    if !texts.is_empty() {
        Input::Text(texts)
    } else if i >= end {
        Input::Stdin
    } else {
        Input::File
    }
}

/// One python option at `i`: how many words it takes; `None` for `-m`.
fn python_option(w: &str, i: usize, end: usize, texts: &mut Vec<(usize, usize)>) -> Option<usize> {
    if w.starts_with("--") {
        return Some(if w == "--check-hash-based-pycs" { 2 } else { 1 });
    }
    for (k, c) in w[1..].char_indices() {
        match c {
            'c' => {
                if k + 2 < w.len() {
                    texts.push((i, k + 2));
                } else if i + 1 < end {
                    texts.push((i + 1, 0));
                }
                return Some(2);
            }
            'm' => return None,
            // These take a value: the rest of the word, or the next word.
            'W' | 'X' => return Some(if k + 2 < w.len() { 1 } else { 2 }),
            _ => {}
        }
    }
    Some(1)
}

/// One node (or bun) option at `i`.
fn node_option(w: &str, i: usize, end: usize, texts: &mut Vec<(usize, usize)>) -> Option<usize> {
    for long in ["--eval=", "--print="] {
        if w.starts_with(long) {
            texts.push((i, long.len()));
            return Some(1);
        }
    }
    match w {
        "-e" | "--eval" | "-p" | "--print" | "-pe" => {
            if i + 1 < end {
                texts.push((i + 1, 0));
            }
            Some(2)
        }
        "-r"
        | "--require"
        | "--import"
        | "--loader"
        | "--experimental-loader"
        | "-C"
        | "--conditions"
        | "--input-type"
        | "--title"
        | "--env-file" => Some(2),
        _ => Some(1),
    }
}

/// One perl or ruby switch cluster at `i` (`-lne`, `-pi.bak`, `-rjson`).
fn cluster_option(
    lang: Lang,
    w: &str,
    i: usize,
    end: usize,
    texts: &mut Vec<(usize, usize)>,
) -> Option<usize> {
    if w.starts_with("--") {
        return Some(1);
    }
    // Letters whose value is the rest of the cluster (or, for some, the next word); `-l` and
    // `-0` take digits only, and the cluster goes on after them.
    let (glued, next, digits): (&str, &str, &str) = match lang {
        Lang::Perl => ("iIMmxFCdDV", "", "l0"),
        _ => ("ixKTWF", "rICE", "0"),
    };
    let code = match lang {
        Lang::Perl => "eE",
        _ => "e",
    };
    let letters = &w.as_bytes()[1..];
    let mut k = 0;
    while k < letters.len() {
        let c = letters[k] as char;
        let rest = k + 1 < letters.len();
        if code.contains(c) {
            if rest {
                texts.push((i, k + 2));
                return Some(1);
            }
            if i + 1 < end {
                texts.push((i + 1, 0));
            }
            return Some(2);
        }
        if next.contains(c) {
            return Some(if rest { 1 } else { 2 });
        }
        if glued.contains(c) {
            return Some(1);
        }
        k += 1;
        if digits.contains(c) {
            while k < letters.len()
                && letters[k].is_ascii_hexdigit()
                && !code.contains(letters[k] as char)
            {
                k += 1;
            }
        }
    }
    Some(1)
}

/// What a program text runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    /// The command lines its calls run, as a shell would read them.
    pub commands: Vec<String>,
    /// Why some of it could not be read (the first reason), when it could not.
    pub unread: Option<String>,
}

/// More command lines than this from one program text make it unread: the walker would
/// otherwise re-parse an unbounded amount of text.
const MAX_COMMANDS: usize = 16;

/// `eval`/`exec` of a literal inside a literal inside …: past this depth the text is unread.
const MAX_DEPTH: usize = 3;

/// Reads `text`, a program in `lang`.
pub(crate) fn read(lang: Lang, text: &str) -> Reading {
    let mut out = Reading::default();
    read_into(lang, text, 0, &mut out);
    if out.commands.len() > MAX_COMMANDS {
        out.commands.truncate(MAX_COMMANDS);
        out.unread
            .get_or_insert_with(|| format!("{} program runs too many commands", lang.name()));
    }
    out
}

fn read_into(lang: Lang, text: &str, depth: usize, out: &mut Reading) {
    let (toks, offsets, unterminated) = lex(lang, text);
    if unterminated {
        out.unread
            .get_or_insert_with(|| format!("a string in the {} program never closes", lang.name()));
    }
    let mut aliases = aliases(lang, &toks, text);
    // Python names rebound after their import (`wipe = print`, a parameter) no longer run what
    // the import said; names bound to a known call (`r = os.system`) become aliases of it.
    let shadowed = if lang == Lang::Python {
        let names = python_names::read(&toks, &offsets, &aliases);
        for (name, target) in &names.aliases {
            aliases.add_module(name, target);
        }
        names.shadowed
    } else {
        Vec::new()
    };
    let scan = Scan {
        lang,
        toks: &toks,
        aliases,
        shadowed,
    };
    let mut i = 0;
    while i < toks.len() {
        i = scan.at(i, depth, out);
    }
}

/// One token of a program text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// A name (perl's sigil included: `$x`).
    Ident(String),
    /// A string literal: its value, `None` when it interpolates run-time values.
    Str(Option<String>),
    /// A list of words (`qw(…)`, `%w(…)`).
    Words(Vec<String>),
    /// A command substitution (backticks, `qx`, `%x`): its text, `None` when it interpolates.
    Cmd(Option<String>),
    /// One punctuation character.
    Punct(char),
    /// A line break (ends a perl or ruby call written without parentheses).
    Newline,
}

/// Splits `text` into tokens, with the byte offset each starts at; the flag says a string or
/// comment ran off the end.
fn lex(lang: Lang, text: &str) -> (Vec<Tok>, Vec<usize>, bool) {
    let b = text.as_bytes();
    let mut toks = Vec::new();
    let mut offsets = Vec::new();
    let mut start = 0;
    let mut i = 0;
    let mut unterminated = false;
    while i < b.len() {
        // The tokens the last step pushed started where it did.
        offsets.resize(toks.len(), start);
        start = i;
        let c = b[i];
        match c {
            b'\n' => {
                toks.push(Tok::Newline);
                i += 1;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'#' if lang != Lang::Node => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if lang == Lang::Node && b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if lang == Lang::Node && b.get(i + 1) == Some(&b'*') => {
                match text[i + 2..].find("*/") {
                    Some(k) => i += k + 4,
                    None => {
                        unterminated = true;
                        i = b.len();
                    }
                }
            }
            b'\'' | b'"' => {
                let (tok, next) = quoted(lang, text, i, "");
                unterminated |= next.is_none();
                toks.push(tok);
                i = next.unwrap_or(b.len());
            }
            b'`' => {
                let (tok, next) = quoted(lang, text, i, "");
                unterminated |= next.is_none();
                toks.push(match (lang, tok) {
                    (Lang::Node, t) => t,
                    (_, Tok::Str(s)) => Tok::Cmd(s),
                    (_, t) => t,
                });
                i = next.unwrap_or(b.len());
            }
            b'%' if lang == Lang::Ruby && percent_literal(b, i) => {
                let (tok, next) = ruby_percent(text, i);
                unterminated |= next.is_none();
                toks.push(tok);
                i = next.unwrap_or(b.len());
            }
            c if c.is_ascii_alphabetic()
                || c == b'_'
                || (lang == Lang::Perl && b"$@&".contains(&c)) =>
            {
                let start = i;
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &text[start..i];
                // A python string prefix (`r"…"`, `f'…'`, `rb"…"`).
                if lang == Lang::Python
                    && word.len() <= 2
                    && word.bytes().all(|x| b"rRbBuUfF".contains(&x))
                    && matches!(b.get(i), Some(b'\'' | b'"'))
                {
                    let (tok, next) = quoted(lang, text, i, word);
                    unterminated |= next.is_none();
                    toks.push(tok);
                    i = next.unwrap_or(b.len());
                    continue;
                }
                if lang == Lang::Perl
                    && let Some((tok, next)) = perl_quote_like(word, text, i)
                {
                    unterminated |= next.is_none();
                    toks.extend(tok);
                    i = next.unwrap_or(b.len());
                    continue;
                }
                toks.push(Tok::Ident(word.to_owned()));
            }
            c if c.is_ascii() => {
                toks.push(Tok::Punct(c as char));
                i += 1;
            }
            _ => {
                // Any other character (non-ASCII text outside strings) is no call.
                i += text[i..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    offsets.resize(toks.len(), start);
    (toks, offsets, unterminated)
}

/// A string starting with the quote at `i` (python prefixes in `prefix`): its token and the
/// index past it, `None` when it never closes.
fn quoted(lang: Lang, text: &str, i: usize, prefix: &str) -> (Tok, Option<usize>) {
    let b = text.as_bytes();
    let q = b[i];
    let triple = lang == Lang::Python && b.get(i..i + 3) == Some(&[q, q, q][..]);
    let open = if triple { 3 } else { 1 };
    let raw_prefix = prefix.contains(['r', 'R']);
    let fstring = prefix.contains(['f', 'F']);
    // Strings whose `$x`, `#{x}`, `${x}` or `{x}` put run-time values in the text.
    let interpolating = match lang {
        Lang::Python => fstring,
        Lang::Node => q == b'`',
        Lang::Perl | Lang::Ruby => q != b'\'',
    };
    let raw = raw_prefix || (q == b'\'' && matches!(lang, Lang::Perl | Lang::Ruby));
    let mut value = String::new();
    let mut computed = false;
    let mut j = i + open;
    while j < b.len() {
        let c = b[j];
        if c == q && (!triple || b.get(j..j + 3) == Some(&[q, q, q][..])) {
            let tok = if computed {
                Tok::Str(None)
            } else {
                Tok::Str(Some(value))
            };
            return (tok, Some(j + open));
        }
        if c == b'\n' && !triple && lang == Lang::Python {
            break;
        }
        if c == b'\\' && j + 1 < b.len() {
            let n = b[j + 1];
            if raw {
                // Raw strings keep the backslash, except before the quote or a backslash
                // (perl and ruby single quotes drop it there).
                if !raw_prefix && (n == q || n == b'\\') {
                    value.push(n as char);
                } else {
                    value.push('\\');
                    value.push(n as char);
                }
                j += 2;
                continue;
            }
            match n {
                b'n' => value.push('\n'),
                b't' => value.push('\t'),
                b'\n' => {}
                n if n.is_ascii() => value.push(n as char),
                _ => value.push('\\'),
            }
            j += if n.is_ascii() { 2 } else { 1 };
            continue;
        }
        if interpolating {
            let next = b.get(j + 1).copied();
            let starts = match lang {
                Lang::Python => c == b'{' && next != Some(b'{'),
                Lang::Node => c == b'$' && next == Some(b'{'),
                Lang::Ruby => c == b'#' && matches!(next, Some(b'{' | b'$' | b'@')),
                Lang::Perl => {
                    matches!(c, b'$' | b'@')
                        && next.is_some_and(|n| n.is_ascii_alphanumeric() || b"_{:$".contains(&n))
                }
            };
            if starts {
                computed = true;
            } else if lang == Lang::Python && (c == b'{' || c == b'}') && next == Some(c) {
                value.push(c as char);
                j += 2;
                continue;
            }
        }
        let len = text[j..].chars().next().map_or(1, char::len_utf8);
        value.push_str(&text[j..j + len]);
        j += len;
    }
    (Tok::Str(None), None)
}

/// The closing delimiter of a bracketing opener, else the character itself.
fn closer(open: u8) -> u8 {
    match open {
        b'(' => b')',
        b'[' => b']',
        b'{' => b'}',
        b'<' => b'>',
        c => c,
    }
}

/// The text between the delimiter at `i` and its match (brackets nest), and the index past
/// the closing one; `None` when it never closes.
fn delimited(text: &str, i: usize) -> Option<(&str, usize)> {
    let b = text.as_bytes();
    let open = *b.get(i)?;
    let close = closer(open);
    let mut depth = 0usize;
    let mut j = i + 1;
    while j < b.len() {
        let c = b[j];
        if c == b'\\' {
            j += 2;
            continue;
        }
        if c == close && depth == 0 {
            return Some((&text[i + 1..j], j + 1));
        }
        if open != close {
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
            }
        }
        j += 1;
    }
    None
}

/// Perl's quote-like operators after the word `word` ending at `i`: `q(…)`, `qq{…}`,
/// `qw(…)`, `qx(…)`, and the matching operators (`m//`, `s///`, `tr///`, `y///`, `qr//`),
/// whose text is skipped (it is a pattern, never run). `None` when `word` is none of them.
#[allow(clippy::type_complexity)]
fn perl_quote_like(word: &str, text: &str, i: usize) -> Option<(Vec<Tok>, Option<usize>)> {
    let b = text.as_bytes();
    let mut k = i;
    while k < b.len() && (b[k] == b' ' || b[k] == b'\t') {
        k += 1;
    }
    let d = *b.get(k)?;
    // A delimiter: punctuation that cannot start what usually follows a name (`=`, `,`, `;`).
    if d.is_ascii_alphanumeric() || b" \t\n=,;)_".contains(&d) || (k > i && d == b'#') {
        return None;
    }
    let parts = match word {
        "q" | "qq" | "qw" | "qx" | "m" | "qr" => 1,
        "s" | "tr" | "y" => 2,
        _ => return None,
    };
    let Some((first, mut next)) = delimited(text, k) else {
        return Some((vec![Tok::Str(None)], None));
    };
    if parts == 2 {
        // `s/a/b/`: the replacement shares the middle delimiter; `s{a}{b}` opens a new pair.
        let second = if closer(d) == d {
            delimited(text, next - 1)
        } else {
            let mut m = next;
            while m < b.len() && b[m].is_ascii_whitespace() {
                m += 1;
            }
            delimited(text, m)
        };
        match second {
            Some((_, n)) => next = n,
            None => return Some((vec![Tok::Str(None)], None)),
        }
    }
    // Pattern flags (`/g`, `/e`, …).
    while next < b.len() && b[next].is_ascii_alphabetic() {
        next += 1;
    }
    let interpolates = |s: &str| {
        let sb = s.as_bytes();
        sb.iter().enumerate().any(|(x, &c)| {
            matches!(c, b'$' | b'@')
                && sb
                    .get(x + 1)
                    .is_some_and(|n| n.is_ascii_alphanumeric() || b"_{:$".contains(n))
        })
    };
    let tok = match word {
        "q" => Tok::Str(Some(first.to_owned())),
        "qq" => Tok::Str((!interpolates(first)).then(|| first.to_owned())),
        "qw" => Tok::Words(first.split_whitespace().map(str::to_owned).collect()),
        "qx" => Tok::Cmd((d == b'\'' || !interpolates(first)).then(|| first.to_owned())),
        _ => return Some((Vec::new(), Some(next))),
    };
    Some((vec![tok], Some(next)))
}

/// True when the `%` at `i` starts a ruby percent literal (`%x(…)`, `%w[…]`, `%q{…}`).
fn percent_literal(b: &[u8], i: usize) -> bool {
    match (b.get(i + 1), b.get(i + 2)) {
        (Some(t), Some(d)) if b"xwWqQiI".contains(t) => !d.is_ascii_alphanumeric() && *d != b' ',
        _ => false,
    }
}

/// A ruby percent literal at `i`.
fn ruby_percent(text: &str, i: usize) -> (Tok, Option<usize>) {
    let kind = text.as_bytes()[i + 1];
    let Some((body, next)) = delimited(text, i + 2) else {
        return (Tok::Str(None), None);
    };
    let computed = kind != b'q' && kind != b'w' && kind != b'i' && body.contains("#{");
    let tok = match kind {
        b'x' => Tok::Cmd((!computed).then(|| body.to_owned())),
        b'w' | b'W' | b'i' | b'I' if !computed => {
            Tok::Words(body.split_whitespace().map(str::to_owned).collect())
        }
        _ => Tok::Str((!computed).then(|| body.to_owned())),
    };
    (tok, Some(next))
}

/// How a recognised call's arguments become a command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runs {
    /// A shell command string, or an argv list (`os.system`, `subprocess.run`, `system`).
    Shell,
    /// A program, then optionally an argv array (`spawn("rm", ["-rf", "/"])`, `os.execvp`).
    Program,
    /// Deletes the tree at its first argument (`shutil.rmtree`, `FileUtils.rm_rf`).
    RemoveTree,
    /// Deletes the file at its first argument (`os.remove`).
    Remove,
    /// Program text in the same language (`exec`, `eval`).
    Eval,
}

/// The calls of each language that run something, by the module that qualifies them (`""`:
/// a builtin, callable without a qualifier).
fn calls(lang: Lang) -> &'static [(&'static str, &'static [&'static str], Runs)] {
    use Runs::*;
    match lang {
        Lang::Python => &[
            ("os", &["system", "popen"], Shell),
            (
                "os",
                &[
                    "execv",
                    "execve",
                    "execvp",
                    "execvpe",
                    "execl",
                    "execle",
                    "execlp",
                    "execlpe",
                    "spawnv",
                    "spawnve",
                    "spawnvp",
                    "spawnvpe",
                    "spawnl",
                    "spawnle",
                    "spawnlp",
                    "spawnlpe",
                    "posix_spawn",
                    "posix_spawnp",
                ],
                Program,
            ),
            ("os", &["remove", "unlink"], Remove),
            ("os", &["removedirs"], RemoveTree),
            (
                "subprocess",
                &[
                    "run",
                    "call",
                    "check_call",
                    "check_output",
                    "Popen",
                    "getoutput",
                    "getstatusoutput",
                ],
                Shell,
            ),
            ("commands", &["getoutput", "getstatusoutput"], Shell),
            ("pty", &["spawn"], Shell),
            ("shutil", &["rmtree"], RemoveTree),
            ("", &["exec", "eval", "compile"], Eval),
        ],
        Lang::Node => &[
            ("child_process", &["exec", "execSync"], Shell),
            (
                "child_process",
                &["execFile", "execFileSync", "spawn", "spawnSync"],
                Program,
            ),
            ("fs", &["rmSync", "rm", "rmdirSync", "rmdir"], RemoveTree),
            ("fs", &["unlinkSync", "unlink"], Remove),
            ("Bun", &["spawn", "spawnSync"], Shell),
            ("", &["eval", "Function"], Eval),
        ],
        Lang::Perl => &[
            ("", &["system", "exec"], Shell),
            ("File::Path", &["rmtree", "remove_tree"], RemoveTree),
            ("", &["unlink"], Remove),
            ("", &["eval"], Eval),
        ],
        Lang::Ruby => &[
            ("", &["system", "exec", "spawn"], Shell),
            ("Kernel", &["system", "exec", "spawn"], Shell),
            ("Process", &["spawn", "exec"], Shell),
            ("IO", &["popen"], Shell),
            (
                "Open3",
                &[
                    "capture2",
                    "capture2e",
                    "capture3",
                    "popen2",
                    "popen2e",
                    "popen3",
                    "pipeline",
                ],
                Shell,
            ),
            (
                "FileUtils",
                &[
                    "rm_rf",
                    "rm_r",
                    "remove_dir",
                    "remove_entry",
                    "rmtree",
                    "remove_entry_secure",
                ],
                RemoveTree,
            ),
            ("FileUtils", &["rm", "rm_f", "remove"], Remove),
            ("File", &["delete", "unlink"], Remove),
            ("", &["eval", "instance_eval", "class_eval"], Eval),
        ],
    }
}

/// How `module.call` (`""` for a builtin: `.exec`) runs, when it is a call that runs something.
fn call_runs(lang: Lang, target: &str) -> Option<Runs> {
    let (module, call) = target.rsplit_once('.')?;
    calls(lang)
        .iter()
        .find_map(|(m, names, runs)| (*m == module && names.contains(&call)).then_some(*runs))
}

/// The names python's known calls give their first parameter (`shutil.rmtree(path)`,
/// `os.remove(path)`, `os.removedirs(name)`, `os.system(command)`, `os.popen(cmd)`,
/// `subprocess.run(args)`): passed as a keyword, it is still what runs or goes.
const PYTHON_FIRST_PARAMETERS: &[&str] = &["path", "name", "command", "cmd", "args"];

/// Local names that stand for a module or one of its calls: `import subprocess as sp`,
/// `from os import system`, `const cp = require('child_process')`, `{ execSync } = …`.
#[derive(Debug, Default, Clone)]
struct Aliases {
    /// Alias → the modules (or `module.call`s) it stands for, first bound first.
    modules: HashMap<String, Vec<String>>,
    /// Names callable without a qualifier → the modules they come from.
    names: HashMap<String, Vec<String>>,
}

impl Aliases {
    fn add_module(&mut self, alias: &str, module: &str) {
        add(&mut self.modules, alias, module);
    }

    fn add_name(&mut self, name: &str, module: &str) {
        add(&mut self.names, name, module);
    }

    /// The first module (or `module.call`) `alias` stands for.
    fn module(&self, alias: &str) -> Option<&str> {
        self.modules.get(alias)?.first().map(String::as_str)
    }

    fn has_name(&self, name: &str, module: &str) -> bool {
        self.names
            .get(name)
            .is_some_and(|ms| ms.iter().any(|m| m == module))
    }
}

/// Keyed lists stay free of repeats, so a program naming the same alias many times stays cheap.
fn add(map: &mut HashMap<String, Vec<String>>, key: &str, value: &str) {
    let list = map.entry(key.to_owned()).or_default();
    if !list.iter().any(|v| v == value) {
        list.push(value.to_owned());
    }
}

fn aliases(lang: Lang, toks: &[Tok], text: &str) -> Aliases {
    let mut a = Aliases::default();
    let ident = |k: usize| match toks.get(k) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let punct = |k: usize, c: char| toks.get(k) == Some(&Tok::Punct(c));
    match lang {
        Lang::Python => {
            for k in 0..toks.len() {
                // `import os, subprocess as sp`
                // A statement of its own: `from x import y` is read below.
                let plain = k == 0 || matches!(toks[k - 1], Tok::Newline | Tok::Punct(';'));
                if ident(k) == Some("import") && plain {
                    let mut j = k + 1;
                    while let Some(module) = ident(j) {
                        if ident(j + 1) == Some("as")
                            && let Some(alias) = ident(j + 2)
                        {
                            a.add_module(alias, module);
                            j += 3;
                        } else {
                            j += 1;
                        }
                        if !punct(j, ',') {
                            break;
                        }
                        j += 1;
                    }
                }
                // `from subprocess import run as r, call`
                if ident(k) == Some("from")
                    && let Some(module) = ident(k + 1)
                    && ident(k + 2) == Some("import")
                {
                    let mut j = k + 3;
                    let paren = punct(j, '(');
                    // Inside parentheses the list may run over lines.
                    let skip_lines = |mut j: usize| {
                        while paren && toks.get(j) == Some(&Tok::Newline) {
                            j += 1;
                        }
                        j
                    };
                    if paren {
                        j = skip_lines(j + 1);
                    }
                    if punct(j, '*') {
                        for (m, names, _) in calls(lang) {
                            if *m == module {
                                for n in *names {
                                    a.add_name(n, module);
                                }
                            }
                        }
                    }
                    while let Some(name) = ident(j) {
                        let local = if ident(j + 1) == Some("as") {
                            ident(j + 2)
                        } else {
                            None
                        };
                        a.add_name(local.unwrap_or(name), module);
                        if let Some(local) = local {
                            a.add_module(local, &format!("{module}.{name}"));
                        }
                        j = skip_lines(j + if local.is_some() { 3 } else { 1 });
                        if !punct(j, ',') {
                            break;
                        }
                        j = skip_lines(j + 1);
                    }
                }
            }
        }
        Lang::Node => {
            // `x = require("child_process")`, `import * as x from "child_process"`,
            // `{ execSync: run } = require("child_process")`: any name bound near the module's
            // name is taken for it, and its calls may come unqualified.
            for module in ["child_process", "fs"] {
                if !text.contains(module) {
                    continue;
                }
                for (k, t) in toks.iter().enumerate() {
                    if let Tok::Str(Some(s)) = t
                        && s.trim_start_matches("node:") == module
                    {
                        let from = k.saturating_sub(12);
                        for j in from..k {
                            if let Some(name) = ident(j) {
                                a.add_module(name, module);
                                a.add_name(name, module);
                            }
                        }
                    }
                }
            }
        }
        Lang::Perl => {
            if text.contains("File::Path") {
                a.add_name("rmtree", "File::Path");
                a.add_name("remove_tree", "File::Path");
            }
        }
        Lang::Ruby => {}
    }
    a
}

struct Scan<'a> {
    lang: Lang,
    toks: &'a [Tok],
    aliases: Aliases,
    /// Per token: a python name that, there, no longer means its import or alias.
    shadowed: Vec<bool>,
}

impl Scan<'_> {
    fn shadowed(&self, k: usize) -> bool {
        self.shadowed.get(k).copied().unwrap_or(false)
    }

    fn ident(&self, k: usize) -> Option<&str> {
        match self.toks.get(k) {
            Some(Tok::Ident(s)) => Some(s.as_str()),
            _ => None,
        }
    }

    fn punct(&self, k: usize, c: char) -> bool {
        self.toks.get(k) == Some(&Tok::Punct(c))
    }

    /// The module a qualifier names (`os`, an alias of it, `__import__("os")`,
    /// `require("child_process")`); the qualifier ends just before `dot`.
    fn module_before(&self, dot: usize) -> Option<String> {
        let q = dot.checked_sub(1)?;
        if let Some(name) = self.ident(q) {
            if let Some(m) = self.aliases.module(name) {
                return Some(m.to_owned());
            }
            // `File::Path::rmtree`, `fs.promises.rm`: the qualifier's own qualifier counts.
            if self.punct(q.wrapping_sub(1), ':') && self.punct(q.wrapping_sub(2), ':') {
                let outer = self.ident(q.wrapping_sub(3)).unwrap_or("");
                return Some(format!("{outer}::{name}"));
            }
            if name == "promises" && self.punct(q.wrapping_sub(1), '.') {
                return self.module_before(q - 1);
            }
            return Some(name.to_owned());
        }
        // `__import__("os").system`, `require("child_process").execSync`
        if self.punct(q, ')')
            && let Some(Tok::Str(Some(s))) = self.toks.get(q.wrapping_sub(1))
            && self.punct(q.wrapping_sub(2), '(')
            && matches!(
                self.ident(q.wrapping_sub(3)),
                Some("__import__" | "require")
            )
        {
            return Some(s.trim_start_matches("node:").to_owned());
        }
        None
    }

    /// Reads what starts at token `k`; returns the index to continue from.
    fn at(&self, k: usize, depth: usize, out: &mut Reading) -> usize {
        match &self.toks[k] {
            Tok::Cmd(Some(s)) => {
                out.commands.push(s.clone());
                return k + 1;
            }
            Tok::Cmd(None) => {
                unread(
                    out,
                    self.lang,
                    "a command substitution holds run-time values",
                );
                return k + 1;
            }
            Tok::Ident(_) => {}
            _ => return k + 1,
        }
        let Some(name) = self.ident(k) else {
            return k + 1;
        };
        // A rebound name (or qualifier) calls whatever it was rebound to.
        if self.shadowed(k)
            || (self.punct(k.wrapping_sub(1), '.') && self.shadowed(k.wrapping_sub(2)))
        {
            return k + 1;
        }
        let qualified = self.punct(k.wrapping_sub(1), '.')
            || (self.punct(k.wrapping_sub(1), ':') && self.punct(k.wrapping_sub(2), ':'));
        let module = if qualified {
            let dot = if self.punct(k - 1, '.') { k - 1 } else { k - 2 };
            self.module_before(dot)
        } else {
            None
        };
        let runs = calls(self.lang).iter().find_map(|(m, names, runs)| {
            if !names.contains(&name) {
                return None;
            }
            let hit = match &module {
                Some(q) => {
                    q == m
                        || (!m.is_empty()
                            && (q.ends_with(&format!("::{m}")) || m.ends_with(&format!("::{q}"))))
                }
                None if m.is_empty() => true,
                None => self.aliases.has_name(name, m),
            };
            hit.then_some(*runs)
        });
        // A qualified builtin (`obj.eval`, `re.compile`) is someone else's method.
        let runs = match runs {
            Some(Runs::Eval) if qualified => None,
            other => other,
        };
        // An alias of one call (`from subprocess import run as r`).
        let runs = runs.or_else(|| {
            self.aliases
                .modules
                .get(name)?
                .iter()
                .find_map(|from| call_runs(self.lang, from))
        });
        let Some(runs) = runs else {
            return k + 1;
        };
        // `Function` runs text only as `new Function(…)` or `Function(…)`; `exec` as a
        // python statement or call; a bare name that is not called runs nothing.
        let open = k + 1;
        let paren = self.punct(open, '(');
        let bare = matches!(self.lang, Lang::Perl | Lang::Ruby)
            && matches!(
                self.toks.get(open),
                Some(Tok::Str(_) | Tok::Words(_) | Tok::Ident(_) | Tok::Cmd(_))
            );
        if !paren && !bare {
            // Ruby and perl `eval { … }` / `eval do … end` run a block, not text.
            return k + 1;
        }
        let (args, next) = self.args(open, paren);
        self.record(runs, name, args, depth, out);
        next
    }

    /// The arguments of a call whose first token is at `k` (`(` when `paren`): each a literal
    /// string, a list of literal strings, or `None` for anything computed. Stops at the
    /// closing parenthesis, or (without one) at the end of the statement.
    fn args(&self, k: usize, paren: bool) -> (Vec<Option<Arg>>, usize) {
        let mut args = Vec::new();
        let mut i = if paren { k + 1 } else { k };
        let ends = |t: Option<&Tok>| match t {
            None => true,
            Some(Tok::Punct(')')) => paren,
            Some(Tok::Punct(';' | '}')) | Some(Tok::Newline) => !paren,
            Some(Tok::Ident(w)) => {
                !paren && matches!(w.as_str(), "if" | "unless" | "or" | "and" | "do")
            }
            _ => false,
        };
        loop {
            while paren && self.toks.get(i) == Some(&Tok::Newline) {
                i += 1;
            }
            if ends(self.toks.get(i)) {
                return (args, i + usize::from(paren));
            }
            let (arg, next) = self.arg(i);
            args.push(arg);
            i = next;
            // Skip to the next top-level comma, noting whether the item went on being computed.
            let mut depth = 0usize;
            let mut clean = true;
            while let Some(t) = self.toks.get(i) {
                match t {
                    Tok::Punct('(' | '[' | '{') => depth += 1,
                    Tok::Punct(')' | ']' | '}') if depth > 0 => depth -= 1,
                    Tok::Punct(',') if depth == 0 => break,
                    Tok::Newline if depth == 0 && !paren => break,
                    _ if depth == 0 && ends(Some(t)) => break,
                    _ => {}
                }
                clean = false;
                i += 1;
            }
            if !clean && let Some(last) = args.last_mut() {
                // `"rm " + path`, `"%s" % x`, `.format(…)`: the value is computed. A keyword
                // argument (`shell=True`) or an options object after it changes nothing.
                let keyword = matches!(self.toks.get(next), Some(Tok::Punct('=' | ':')));
                if !keyword {
                    *last = None;
                }
            }
            if self.punct(i, ',') {
                i += 1;
            }
        }
    }

    /// One argument at `i`: its value and the index past it.
    fn arg(&self, i: usize) -> (Option<Arg>, usize) {
        match self.toks.get(i) {
            Some(Tok::Str(Some(s))) => {
                // Adjacent literals join (python's implicit concatenation).
                let mut value = s.clone();
                let mut j = i + 1;
                while let Some(Tok::Str(Some(more))) = self.toks.get(j) {
                    value.push_str(more);
                    j += 1;
                }
                if let Some(Tok::Str(None)) = self.toks.get(j) {
                    return (None, j + 1);
                }
                (Some(Arg::Text(value)), j)
            }
            Some(Tok::Words(ws)) => (Some(Arg::List(ws.clone())), i + 1),
            Some(Tok::Punct(open @ ('[' | '('))) => {
                let close = if *open == '[' { ']' } else { ')' };
                let mut items = Vec::new();
                let mut j = i + 1;
                loop {
                    while self.toks.get(j) == Some(&Tok::Newline) {
                        j += 1;
                    }
                    match self.toks.get(j) {
                        Some(Tok::Str(Some(s))) => items.push(s.clone()),
                        Some(Tok::Punct(c)) if *c == close => {
                            return (Some(Arg::List(items)), j + 1);
                        }
                        // A computed item: skip the rest of the list.
                        _ => return (None, self.skip_group(i)),
                    }
                    j += 1;
                    while self.toks.get(j) == Some(&Tok::Newline) {
                        j += 1;
                    }
                    match self.toks.get(j) {
                        Some(Tok::Punct(',')) => j += 1,
                        Some(Tok::Punct(c)) if *c == close => {
                            return (Some(Arg::List(items)), j + 1);
                        }
                        _ => return (None, self.skip_group(i)),
                    }
                }
            }
            // An options object (`{ stdio: "inherit" }`): not a value that runs.
            Some(Tok::Punct('{')) => (Some(Arg::Options), self.skip_group(i)),
            // `mkdtemp()` or `tempfile.mkdtemp(…)`: a directory made fresh by the call. Anything
            // after the call (`mkdtemp() + "/.."`) makes the argument computed again (`args`).
            Some(Tok::Ident(_)) if self.lang == Lang::Python && self.fresh_dir(i).is_some() => {
                (Some(Arg::Fresh), self.fresh_dir(i).unwrap_or(i + 1))
            }
            // python's calls name what they run or delete in their first parameter, which a
            // keyword may give (`rmtree(path='/srv')`, `run(args=[…])`, `system(command=…)`):
            // that is the value, wherever it stands among the keywords.
            Some(Tok::Ident(kw))
                if self.lang == Lang::Python
                    && PYTHON_FIRST_PARAMETERS.contains(&kw.as_str())
                    && self.punct(i + 1, '=')
                    && !self.punct(i + 2, '=') =>
            {
                self.arg(i + 2)
            }
            // `shell=True`, `check=True`: keyword arguments.
            Some(Tok::Ident(_)) if self.punct(i + 1, '=') && !self.punct(i + 2, '=') => {
                (Some(Arg::Options), i + 1)
            }
            _ => (None, i + 1),
        }
    }

    /// The index past a call of python's `mkdtemp` (bare, or qualified by `tempfile`) whose
    /// name starts at `i`.
    fn fresh_dir(&self, i: usize) -> Option<usize> {
        // A rebound `mkdtemp` (or `tempfile`) makes nothing fresh.
        if self.shadowed(i) {
            return None;
        }
        let name = match self.ident(i)? {
            "tempfile" if self.punct(i + 1, '.') => i + 2,
            _ => i,
        };
        (self.ident(name) == Some("mkdtemp") && self.punct(name + 1, '('))
            .then(|| self.skip_group(name + 1))
    }

    /// The index past the bracketed group opening at `i`.
    fn skip_group(&self, i: usize) -> usize {
        let mut depth = 0usize;
        let mut j = i;
        while let Some(t) = self.toks.get(j) {
            match t {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return j + 1;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        j
    }

    /// Turns a recognised call's arguments into command lines, or an unread reason.
    fn record(
        &self,
        runs: Runs,
        name: &str,
        args: Vec<Option<Arg>>,
        depth: usize,
        out: &mut Reading,
    ) {
        let lang = self.lang;
        // Options objects and keyword arguments say how, not what.
        let mut values = args
            .into_iter()
            .filter(|a| !matches!(a, Some(Arg::Options)));
        let Some(first) = values.next() else {
            return;
        };
        let first = match first {
            // Deleting the directory the program just made deletes nothing of the user's.
            Some(Arg::Fresh) if matches!(runs, Runs::RemoveTree | Runs::Remove) => return,
            Some(Arg::Fresh) | None => return computed(out, lang, name),
            Some(first) => first,
        };
        match runs {
            Runs::Eval => match first {
                Arg::Text(t) if depth < MAX_DEPTH => read_into(lang, &t, depth + 1, out),
                _ => unread(out, lang, &format!("`{name}` runs text we cannot read")),
            },
            Runs::Shell => {
                let rest: Vec<Option<Arg>> = values.collect();
                match (first, rest.is_empty()) {
                    (Arg::Text(t), true) => out.commands.push(t),
                    (Arg::List(l), _) => out.commands.push(shell_join(&l)),
                    // perl and ruby `system("rm", "-rf", "/")`: an argv in separate arguments.
                    (Arg::Text(t), false) => {
                        let mut argv = vec![t];
                        for a in rest {
                            match a {
                                Some(Arg::Text(s)) => argv.push(s),
                                Some(Arg::List(l)) => argv.extend(l),
                                _ => {
                                    unread(
                                        out,
                                        lang,
                                        &format!(
                                            "`{name}` is called with a value computed at run time"
                                        ),
                                    );
                                    return;
                                }
                            }
                        }
                        out.commands.push(shell_join(&argv));
                    }
                    (Arg::Options | Arg::Fresh, _) => {}
                }
            }
            Runs::Program => {
                let Arg::Text(program) = first else {
                    if let Arg::List(l) = first {
                        out.commands.push(shell_join(&l));
                    }
                    return;
                };
                let mut argv = vec![program];
                for (n, a) in values.enumerate() {
                    match a {
                        // python's `os.execvp("rm", ["rm", "-rf", "/"])` repeats the program.
                        Some(Arg::List(l)) if lang == Lang::Python && n == 0 => {
                            argv = l;
                        }
                        Some(Arg::List(l)) => argv.extend(l),
                        Some(Arg::Text(s)) if lang == Lang::Python && n == 0 => argv = vec![s],
                        Some(Arg::Text(s)) => argv.push(s),
                        Some(Arg::Options) => {}
                        Some(Arg::Fresh) | None => return computed(out, lang, name),
                    }
                }
                out.commands.push(shell_join(&argv));
            }
            Runs::RemoveTree | Runs::Remove => {
                let flag = if runs == Runs::RemoveTree {
                    "-rf"
                } else {
                    "-f"
                };
                let paths = match first {
                    Arg::Text(t) => vec![t],
                    Arg::List(l) => l,
                    Arg::Options | Arg::Fresh => return,
                };
                let mut argv = vec!["rm".to_owned(), flag.to_owned(), "--".to_owned()];
                argv.extend(paths);
                out.commands.push(shell_join(&argv));
            }
        }
    }
}

/// One argument of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Arg {
    /// A literal string.
    Text(String),
    /// A list of literal strings.
    List(Vec<String>),
    /// Keyword arguments or an options object.
    Options,
    /// A directory the call makes on the spot (python's `tempfile.mkdtemp()`): new and empty,
    /// so deleting it deletes nothing that was there before the program ran.
    Fresh,
}

/// A call whose argument the line does not hold (a variable, a call's result): what it runs
/// cannot be read, so the line asks.
fn computed(out: &mut Reading, lang: Lang, name: &str) {
    unread(
        out,
        lang,
        &format!("`{name}` is called with a value computed at run time"),
    );
}

fn unread(out: &mut Reading, lang: Lang, why: &str) {
    out.unread
        .get_or_insert_with(|| format!("{} program: {why}", lang.name()));
}

/// An argv as one shell command line: each word quoted unless it is plain.
fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^".contains(&b));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmds(lang: Lang, text: &str) -> Vec<String> {
        let r = read(lang, text);
        assert_eq!(r.unread, None, "{text}");
        r.commands
    }

    fn unread_reason(lang: Lang, text: &str) -> String {
        read(lang, text)
            .unread
            .unwrap_or_else(|| panic!("{text} should be unread"))
    }

    #[test]
    fn python_calls_with_literals_are_command_lines() {
        use Lang::Python as P;
        assert_eq!(cmds(P, r#"import os; os.system("rm -rf /")"#), ["rm -rf /"]);
        assert_eq!(cmds(P, "import os\nos.popen('ls -la').read()"), ["ls -la"]);
        assert_eq!(
            cmds(
                P,
                "import subprocess; subprocess.run(['rm', '-rf', '/'], check=True)"
            ),
            ["rm -rf /"]
        );
        assert_eq!(
            cmds(
                P,
                "import subprocess as sp; sp.call('git reset --hard', shell=True)"
            ),
            ["git reset --hard"]
        );
        assert_eq!(
            cmds(P, "from subprocess import run\nrun(['git', 'push', '-f'])"),
            ["git push -f"]
        );
        assert_eq!(
            cmds(
                P,
                "from shutil import (\n    copytree,\n    rmtree as wipe,\n)\nwipe('/srv')"
            ),
            ["rm -rf -- /srv"]
        );
        assert_eq!(cmds(P, "__import__('os').system('rm -rf ~')"), ["rm -rf ~"]);
        // The first parameter given by keyword, among others or alone.
        assert_eq!(
            cmds(
                P,
                "import shutil; shutil.rmtree(ignore_errors=True, path='/srv')"
            ),
            ["rm -rf -- /srv"]
        );
        assert_eq!(
            cmds(
                P,
                "import os, subprocess; os.system(command='rm -rf /'); subprocess.run(args=['git', 'push', '-f'], check=True)"
            ),
            ["rm -rf /", "git push -f"]
        );
        assert!(
            unread_reason(P, "import shutil; shutil.rmtree(path=base + '/x')")
                .contains("`rmtree` is called with a value computed at run time")
        );
        assert_eq!(
            cmds(P, "import shutil; shutil.rmtree('/etc')"),
            ["rm -rf -- /etc"]
        );
        // A directory the program makes on the spot holds nothing of the user's.
        assert!(
            cmds(
                P,
                "import shutil, tempfile; shutil.rmtree(tempfile.mkdtemp())"
            )
            .is_empty()
        );
        assert!(
            cmds(
                P,
                "from tempfile import mkdtemp\nimport shutil\nshutil.rmtree(mkdtemp(prefix='x'))"
            )
            .is_empty()
        );
        assert!(
            unread_reason(
                P,
                "import shutil, tempfile; shutil.rmtree(tempfile.mkdtemp() + '/..')"
            )
            .contains("computed")
        );
        assert!(
            unread_reason(P, "import os, tempfile; os.system(tempfile.mkdtemp())")
                .contains("computed")
        );
        assert_eq!(
            cmds(P, "import os; os.execvp('rm', ['rm', '-rf', '/'])"),
            ["rm -rf /"]
        );
        assert_eq!(
            cmds(P, r#"exec("import os; os.system('rm -rf /')")"#),
            ["rm -rf /"]
        );
        assert_eq!(cmds(P, "os.system('echo ' 'hi')"), ["echo hi"]);
        assert_eq!(
            cmds(P, "subprocess.run(['bash', '-c', 'rm -rf \"$HOME\"'])"),
            [r#"bash -c 'rm -rf "$HOME"'"#]
        );
    }

    #[test]
    fn python_programs_that_run_nothing_read_clean() {
        use Lang::Python as P;
        assert_eq!(cmds(P, "print('rm -rf /')"), Vec::<String>::new());
        assert_eq!(
            cmds(P, "import json,sys; print(json.load(sys.stdin)['a'])"),
            Vec::<String>::new()
        );
        assert_eq!(
            cmds(P, "import re; re.compile('x').match('y')"),
            Vec::<String>::new()
        );
        assert_eq!(
            cmds(P, "import asyncio; asyncio.run(main())"),
            Vec::<String>::new()
        );
        assert_eq!(cmds(P, "x = f'{1+1}'; print(x)"), Vec::<String>::new());
        assert_eq!(cmds(P, "# os.system(cmd)\nprint(1)"), Vec::<String>::new());
    }

    #[test]
    fn python_calls_we_cannot_read_are_reported() {
        use Lang::Python as P;
        assert!(unread_reason(P, "import os; os.system(cmd)").contains("`system`"));
        assert!(unread_reason(P, "import os; os.system('rm -rf ' + path)").contains("computed"));
        assert!(unread_reason(P, "import os; os.system(f'rm -rf {d}')").contains("computed"));
        assert!(
            unread_reason(P, "import subprocess; subprocess.run(['rm', x])").contains("computed")
        );
        assert!(unread_reason(P, "exec(open('x.py').read())").contains("`exec`"));
        assert!(unread_reason(P, "print('unterminated").contains("never closes"));
    }

    /// Deletes the calls in `text` run (python), as `rm` command lines.
    fn deletes(text: &str) -> Vec<String> {
        cmds(Lang::Python, text)
    }

    #[test]
    fn python_rebinding_a_name_ends_its_alias() {
        // dcg's corpus: `wipe` is `print` when it is called.
        assert!(
            deletes("from shutil import rmtree as wipe; wipe = print; wipe('/tmp')").is_empty()
        );
        // A parameter hides the alias inside its function's body.
        assert!(
            deletes(
                "from shutil import rmtree as wipe\ndef report(wipe):\n    wipe('/tmp')\nreport(print)\n"
            )
            .is_empty()
        );
        assert!(
            deletes("from shutil import rmtree as wipe\n(lambda wipe: wipe('/x'))(print)")
                .is_empty()
        );
        // Every way a statement binds a name.
        for rebind in [
            "wipe: object = print",
            "def wipe(p): pass",
            "class wipe: pass",
            "import json as wipe",
            "from os import path as wipe",
            "with open('f') as wipe: pass",
        ] {
            let text = format!("from shutil import rmtree as wipe\n{rebind}\nwipe('/x')");
            assert!(deletes(&text).is_empty(), "{text}");
        }
        assert!(deletes("for wipe in [print]:\n    wipe('/x')").is_empty());
        // Imported names, builtins and module qualifiers are names too.
        assert!(deletes("from os import system\nsystem = print\nsystem('rm -rf /')").is_empty());
        assert!(deletes("exec = print\nexec('import os; os.system(1)')").is_empty());
        assert!(deletes("import os\nos = None\nos.system('rm -rf /')").is_empty());
        // A redefined `mkdtemp` makes no fresh directory.
        assert!(
            unread_reason(
                Lang::Python,
                "import shutil\ndef mkdtemp(): return '/home'\nshutil.rmtree(mkdtemp())"
            )
            .contains("computed")
        );
    }

    #[test]
    fn python_rebinding_to_a_known_call_makes_an_alias() {
        assert_eq!(
            deletes("import os\nr = print\nr = os.system\nr('rm -rf /')"),
            ["rm -rf /"]
        );
        assert_eq!(
            deletes("import shutil; wipe = print; wipe = shutil.rmtree; wipe('/srv')"),
            ["rm -rf -- /srv"]
        );
        assert_eq!(
            deletes("from shutil import rmtree\nr = rmtree\nw = r\nw('/srv')"),
            ["rm -rf -- /srv"]
        );
        assert_eq!(
            deletes("import subprocess\nsp = subprocess\nsp.run('ls')"),
            ["ls"]
        );
        assert_eq!(
            deletes("e = exec\ne('import os; os.system(\"ls\")')"),
            ["ls"]
        );
        assert_eq!(
            deletes("import shutil\nfor wipe in [shutil.rmtree]:\n    wipe('/x')"),
            ["rm -rf -- /x"]
        );
        assert_eq!(
            deletes("import shutil\ndef f(cb=shutil.rmtree):\n    cb('/x')"),
            ["rm -rf -- /x"]
        );
    }

    #[test]
    fn python_rebinding_hides_an_alias_only_where_it_surely_ran() {
        let rm_x = ["rm -rf -- /x"];
        for text in [
            // After the call: the call ran first.
            "from shutil import rmtree as wipe; wipe('/x'); wipe = print",
            // Another function's parameter; a parameter outside its body.
            "from shutil import rmtree as wipe\ndef f(y): pass\nwipe('/x')",
            "from shutil import rmtree as wipe\ndef f(wipe): pass\nwipe('/x')",
            "from shutil import rmtree as wipe\nf = lambda wipe: 0; wipe('/x')",
            // Under a condition, in a handler, in a function or class body: maybe not run, or
            // local.
            "from shutil import rmtree as wipe\nif c: wipe = print\nwipe('/x')",
            "from shutil import rmtree as wipe\nif c:\n    wipe = print\nwipe('/x')",
            "try:\n    from shutil import rmtree as wipe\nexcept ImportError:\n    wipe = print\nwipe('/x')",
            "from shutil import rmtree as wipe\ndef f():\n    wipe = print\nwipe('/x')",
            "from shutil import rmtree as wipe\nclass C:\n    wipe = print\nwipe('/x')",
            "from shutil import rmtree as wipe\nfor wipe in []: pass\nwipe('/x')",
            // Run again after the name is bound to the call again.
            "wipe = print\nfor _ in range(2):\n    wipe('/x')\n    from shutil import rmtree as wipe",
            // The value bound is computed from the call, or the call is handed to the parameter.
            "from shutil import rmtree as wipe\nwipe = wipe if c else print\nwipe('/x')",
            "from shutil import rmtree as wipe\ndef report(wipe):\n    wipe('/x')\nreport(wipe)",
            "import shutil\nfrom shutil import rmtree as wipe\ndef report(wipe):\n    wipe('/x')\nreport(shutil.rmtree)",
            // A call fetched by name may reach the parameter too.
            "import sys\nfrom shutil import rmtree as wipe\ndef report(wipe):\n    wipe('/x')\nreport(sys.modules['shutil'].rmtree)",
            "import importlib as i\nfrom shutil import rmtree as wipe\ndef report(wipe):\n    wipe('/x')\nreport(i.import_module(m).rmtree)",
            // Rebound out of sight.
            "import shutil\nfrom shutil import rmtree as wipe\nwipe = print\nglobals()['wipe'] = shutil.rmtree\nwipe('/x')",
            "from shutil import rmtree as wipe\nwipe = print\ndef g():\n    global wipe\n    from shutil import rmtree as wipe\ng()\nwipe('/x')",
            // The rebinding's own value calls the old one.
            "from shutil import rmtree as wipe\nwipe = wipe('/x')",
        ] {
            assert_eq!(deletes(text), rm_x, "{text}");
        }
    }

    #[test]
    fn the_line_follows_python_rebinding() {
        let (p, unread) =
            parts(r#"python3 -c "from shutil import rmtree as wipe; wipe = print; wipe('/tmp')""#);
        assert!(!p.iter().any(|c| c.starts_with("rm")), "{p:?}");
        assert_eq!(unread, None);
        let (p, unread) = parts(
            "python3 - <<'PY'
from shutil import rmtree as wipe
def report(wipe):
    wipe('/tmp')
report(print)
PY",
        );
        assert!(!p.iter().any(|c| c.starts_with("rm")), "{p:?}");
        assert_eq!(unread, None);
        let (p, _) = parts(
            "python3 - <<'PY'
from shutil import rmtree as wipe
wipe('/srv')
wipe = print
PY",
        );
        assert!(p.contains(&"rm -rf -- /srv".to_owned()), "{p:?}");
    }

    /// Reading a python program costs time linear in its length: eight times the text costs
    /// far less than 64 times the time a quadratic walk would take (best of five each, with
    /// 100 ms for a machine busy with other builds).
    fn assert_linear(make: impl Fn(usize) -> String) {
        use std::time::{Duration, Instant};
        let time = |n: usize| {
            let text = make(n);
            (0..5)
                .map(|_| {
                    let start = Instant::now();
                    std::hint::black_box(read(Lang::Python, &text));
                    start.elapsed()
                })
                .min()
                .unwrap_or_default()
        };
        let (small, large) = (time(1), time(8));
        assert!(
            large < small * 24 + Duration::from_millis(100),
            "{} bytes: {small:?}, 8x: {large:?}",
            make(1).len()
        );
    }

    #[test]
    fn python_rebinding_is_read_in_linear_time() {
        let unit = "from shutil import rmtree as wipe
import os as o
def f(wipe, cb=lambda y=1: y, *a, **k):
    wipe = print
    for i in range(3):
        wipe('/tmp')
        if i: wipe = o.system
(lambda wipe: wipe('/x'))(print)
class C:
    r = o.system
    def g(self): return [lambda: r for r in ()]
with open('f') as w: pass
";
        assert_linear(|n| unit.repeat(n * 20_000 / unit.len()));
        // Lambdas in the defaults of lambdas: each header is read once.
        assert_linear(|n| {
            let depth = n * 2_000;
            format!(
                "f = {}0{}",
                "lambda a=(".repeat(depth),
                "): a".repeat(depth)
            )
        });
    }

    #[test]
    fn python_rebinding_in_other_statement_forms() {
        let rm_x = ["rm -rf -- /x"];
        // `except … as name` binds the name in the handler only.
        assert!(
            deletes("from shutil import rmtree as wipe\ntry:\n    pass\nexcept OSError as wipe:\n    wipe('/x')")
                .is_empty()
        );
        assert_eq!(
            deletes(
                "from shutil import rmtree as wipe\ntry:\n    pass\nexcept OSError as wipe:\n    pass\nwipe('/x')"
            ),
            rm_x
        );
        // Decorated and async functions; a walrus in a header; match statements.
        assert!(
            deletes("from shutil import rmtree as wipe\n@dec\nasync def f(wipe):\n    wipe('/x')")
                .is_empty()
        );
        assert_eq!(
            deletes(
                "from shutil import rmtree as wipe\nwhile (n := 1):\n    wipe = print\nwipe('/x')"
            ),
            rm_x
        );
        assert_eq!(
            deletes(
                "from shutil import rmtree as wipe\nmatch x:\n    case 1:\n        wipe = print\nwipe('/x')"
            ),
            rm_x
        );
        assert_eq!(
            deletes(
                "from shutil import rmtree as wipe\nmatch x:\n    case 1: wipe = print\nwipe('/x')"
            ),
            rm_x
        );
        // A comment or blank line between a header and its body, a call over continued lines.
        assert!(
            deletes("from shutil import rmtree as wipe\ndef f(wipe):\n\n    # c\n    wipe(\n'/x')")
                .is_empty()
        );
        assert_eq!(
            deletes(
                "from shutil import rmtree as wipe\ndef f(wipe):\n    pass\n# c\nwipe(\n    '/x')"
            ),
            rm_x
        );
    }

    const PY_FRAGMENTS: &[&str] = &[
        "from shutil import rmtree as wipe",
        "import os",
        "\n",
        "    ",
        "\t",
        "def ",
        "async ",
        "class ",
        "lambda ",
        "for ",
        " in ",
        "with ",
        " as ",
        "except ",
        "try",
        "if ",
        "else",
        "match ",
        "case ",
        "global ",
        "wipe",
        "x",
        "print",
        "os.system",
        "shutil.rmtree",
        "__import__('os')",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ":",
        ":=",
        "=",
        "==",
        ",",
        ";",
        ".",
        "*",
        "**",
        "/",
        "->",
        "@",
        "\\\n",
        "'/tmp'",
        "\"",
        "'''",
        "#",
    ];

    fn py_soup() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop::collection::vec(prop::sample::select(PY_FRAGMENTS), 0..80).prop_map(|v| v.concat())
    }

    proptest::proptest! {
        #![proptest_config(capt_hook_proto::fuzz::config(400))]

        /// No panic and a bounded reading on python fragment soup and on arbitrary text.
        #[test]
        fn python_reading_survives_anything(text in proptest::prop_oneof![py_soup(), ".{0,300}"]) {
            let r = read(Lang::Python, &text);
            proptest::prop_assert!(r.commands.len() <= MAX_COMMANDS);
        }
    }

    #[test]
    fn node_calls() {
        use Lang::Node as N;
        assert_eq!(
            cmds(N, "require('child_process').execSync('rm -rf /')"),
            ["rm -rf /"]
        );
        assert_eq!(
            cmds(
                N,
                "const { execSync } = require('child_process'); execSync(\"git reset --hard\", { stdio: 'inherit' })"
            ),
            ["git reset --hard"]
        );
        assert_eq!(
            cmds(
                N,
                "const cp = require('node:child_process'); cp.spawnSync('rm', ['-rf', '/'])"
            ),
            ["rm -rf /"]
        );
        assert_eq!(
            cmds(N, "require('fs').rmSync('/home', { recursive: true })"),
            ["rm -rf -- /home"]
        );
        assert_eq!(cmds(N, "console.log(`rm -rf /`)"), Vec::<String>::new());
        assert_eq!(
            cmds(N, "// execSync(x)\nconsole.log(1)"),
            Vec::<String>::new()
        );
        assert!(
            unread_reason(N, "require('child_process').execSync(`rm -rf ${dir}`)")
                .contains("computed")
        );
        assert!(unread_reason(N, "eval(process.argv[2])").contains("`eval`"));
    }

    #[test]
    fn perl_and_ruby_calls() {
        assert_eq!(cmds(Lang::Perl, r#"system("rm -rf /")"#), ["rm -rf /"]);
        assert_eq!(
            cmds(Lang::Perl, "system 'git', 'push', '--force'"),
            ["git push --force"]
        );
        assert_eq!(
            cmds(Lang::Perl, "my $x = `git clean -fdx`;"),
            ["git clean -fdx"]
        );
        assert_eq!(cmds(Lang::Perl, "print qx(ls /)"), ["ls /"]);
        assert_eq!(cmds(Lang::Perl, "exec qw(rm -rf /)"), ["rm -rf /"]);
        assert_eq!(
            cmds(Lang::Perl, "s/'foo'/bar/g; print"),
            Vec::<String>::new()
        );
        assert_eq!(
            cmds(Lang::Perl, "print \"$_\\n\" for @ARGV"),
            Vec::<String>::new()
        );
        assert!(unread_reason(Lang::Perl, "system(\"rm -rf $dir\")").contains("computed"));
        assert!(unread_reason(Lang::Perl, "eval $code").contains("`eval`"));
        assert_eq!(cmds(Lang::Ruby, "system('rm -rf /')"), ["rm -rf /"]);
        assert_eq!(
            cmds(Lang::Ruby, "puts `git reset --hard`"),
            ["git reset --hard"]
        );
        assert_eq!(cmds(Lang::Ruby, "%x(rm -rf /tmp/a)"), ["rm -rf /tmp/a"]);
        assert_eq!(
            cmds(Lang::Ruby, "require 'fileutils'; FileUtils.rm_rf('/srv')"),
            ["rm -rf -- /srv"]
        );
        assert_eq!(cmds(Lang::Ruby, "puts 'system(x)'"), Vec::<String>::new());
        assert!(unread_reason(Lang::Ruby, "system(\"rm -rf #{d}\")").contains("computed"));
    }

    #[test]
    fn options_find_the_program_text() {
        let w = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        let at = |l: Lang, s: &str| {
            let words = w(s);
            input(l, &words, 0, words.len())
        };
        assert_eq!(at(Lang::Python, "python3 -c X"), Input::Text(vec![(2, 0)]));
        assert_eq!(
            at(Lang::Python, "python -u -c X"),
            Input::Text(vec![(3, 0)])
        );
        assert_eq!(at(Lang::Python, "python -cX"), Input::Text(vec![(1, 2)]));
        assert_eq!(at(Lang::Python, "python -m http.server"), Input::File);
        assert_eq!(at(Lang::Python, "python script.py -c x"), Input::File);
        assert_eq!(at(Lang::Python, "python3 -"), Input::Stdin);
        assert_eq!(at(Lang::Python, "python3"), Input::Stdin);
        assert_eq!(at(Lang::Node, "node -e X"), Input::Text(vec![(2, 0)]));
        assert_eq!(at(Lang::Node, "node --eval=X"), Input::Text(vec![(1, 7)]));
        assert_eq!(at(Lang::Node, "node server.js"), Input::File);
        assert_eq!(at(Lang::Perl, "perl -lne X f"), Input::Text(vec![(2, 0)]));
        assert_eq!(
            at(Lang::Perl, "perl -pi.bak -e X f"),
            Input::Text(vec![(3, 0)])
        );
        assert_eq!(
            at(Lang::Perl, "perl -e A -e B"),
            Input::Text(vec![(2, 0), (4, 0)])
        );
        assert_eq!(
            at(Lang::Ruby, "ruby -r json -e X"),
            Input::Text(vec![(4, 0)])
        );
        assert_eq!(at(Lang::Ruby, "ruby -E utf-8 x.rb"), Input::File);
    }

    /// What the whole line runs, as `program arg…` per part.
    fn parts(line: &str) -> (Vec<String>, Option<String>) {
        let cl = crate::CommandLine::parse(line);
        (cl.commands().map(|c| c.joined()).collect(), cl.unread_code)
    }

    #[test]
    fn the_line_runs_what_its_one_liners_run() {
        let (p, unread) = parts(r#"python3 -c 'import os; os.system("rm -rf /")'"#);
        assert!(p.contains(&"rm -rf /".to_owned()), "{p:?}");
        assert_eq!(unread, None);
        let (p, _) =
            parts(r#"sudo node -e "require('child_process').execSync('git reset --hard')""#);
        assert!(p.contains(&"git reset --hard".to_owned()), "{p:?}");
        // A shell inside the interpreter is read again.
        let (p, _) = parts(
            r#"python -c "import subprocess; subprocess.run(['sh', '-c', 'git clean -fdx'])""#,
        );
        assert!(p.contains(&"git clean -fdx".to_owned()), "{p:?}");
        // A heredoc fed to the interpreter is its program.
        let (p, _) = parts(
            "python3 - <<'EOF'
import shutil
shutil.rmtree('/srv/data')
EOF",
        );
        assert!(p.contains(&"rm -rf -- /srv/data".to_owned()), "{p:?}");
        let (p, _) = parts("cd x && perl -e 'system(\"rm -rf /\")'");
        assert!(p.contains(&"rm -rf /".to_owned()), "{p:?}");
        // A literal echo piped into a shell or an interpreter is its program.
        let (p, _) = parts("echo 'rm -rf /srv' | bash");
        assert!(p.contains(&"rm -rf /srv".to_owned()), "{p:?}");
        let (p, _) = parts(r#"printf 'import os; os.system("git clean -fdx")' | python3"#);
        assert!(p.contains(&"git clean -fdx".to_owned()), "{p:?}");
        // A mention is not a call.
        let (p, unread) = parts(r#"python3 -c 'print("rm -rf /")'"#);
        assert!(!p.iter().any(|c| c.starts_with("rm")), "{p:?}");
        assert_eq!(unread, None);
    }

    #[test]
    fn programs_we_cannot_read_are_flagged_on_the_line() {
        for line in [
            r#"python3 -c 'import os, sys; os.system(sys.argv[1])' x"#,
            r#"node -e "require('child_process').execSync(process.env.CMD)""#,
            r#"python3 -c "$PROGRAM""#,
            "ruby -e 'system(\"rm -rf #{ARGV[0]}\")'",
            "python3 <<EOF\nimport os\nos.system(input())\nEOF",
        ] {
            let (_, unread) = parts(line);
            assert!(unread.is_some(), "{line}");
        }
        for line in [
            "python3 script.py",
            "node server.js",
            "ls -la",
            "python3 -m pytest -q",
        ] {
            assert_eq!(parts(line).1, None, "{line}");
        }
    }
}

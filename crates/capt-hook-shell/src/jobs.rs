//! Commands that substitute arguments into the command they run (`parallel … ::: args`,
//! `xargs -I{}`) and git aliases that shell out: the command lines that would really run,
//! rebuilt as text so the walker reads them like any other command string.

use std::ops::Range;

/// A command whose arguments are substituted into more commands than this are not followed:
/// the line is reported unreadable instead (see [`crate::Unreadable::TooManyJobs`]).
pub(crate) const MAX_JOBS: usize = 16;

/// Rebuilt command lines per line, all runners and nesting levels together; past it the line
/// is unreadable.
pub(crate) const MAX_REBUILT: usize = 64;

/// Quotes `s` for a POSIX shell so that re-parsing it gives back exactly `s`, one word.
pub(crate) fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+:,./-".contains(&b))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// How a runner's input splits into arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Split {
    /// One argument per line, leading blanks dropped (`xargs -I`, `parallel`).
    Lines,
    /// Blank-separated words (`xargs` without `-I`).
    Blanks,
    /// Separated by this byte (`-0`, `-d`).
    Byte(u8),
}

/// A command run once per argument its runner reads from stdin, and how they are substituted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    /// The words run, program first (indices into the host's words).
    pub command: Range<usize>,
    /// How the arguments are placed in the command.
    pub spec: Spec,
    /// How stdin splits into arguments.
    pub split: Split,
    /// Arguments per command when they are appended (`xargs -n`); 0 puts them all in one.
    pub per: usize,
}

/// How one runner places its arguments in the command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Spec {
    /// The replacement string (`xargs -I STR`; `parallel -I STR` for `{}`); `None` for xargs
    /// appends the arguments.
    pub replace: Option<String>,
    /// GNU parallel's reading: the words joined and run by a shell, each argument quoted where
    /// it lands, with its other replacement strings (`{.}`, `{/}`, `{1}`, …).
    pub parallel: bool,
    /// `parallel -q`: the words are an argv (no shell reading).
    pub quoted: bool,
}

/// The command lines `words[cmd]` runs for each job (one argument per input group), at most
/// [`MAX_JOBS`]; `None` when there are more, or a replacement string cannot be read
/// (`{= perl =}`).
pub(crate) fn expand<S: AsRef<str>>(
    words: &[S],
    cmd: Range<usize>,
    spec: &Spec,
    jobs: &[Vec<String>],
) -> Option<Vec<String>> {
    if jobs.len() > MAX_JOBS {
        return None;
    }
    let mut out = Vec::new();
    for (n, args) in jobs.iter().enumerate() {
        let mut any = false;
        let mut shell = Vec::new();
        let mut argv = Vec::new();
        for w in &words[cmd.clone()] {
            let w = w.as_ref();
            if spec.parallel {
                let (s, hit) = fill_parallel(w, spec, args, n + 1, true)?;
                let (a, _) = fill_parallel(w, spec, args, n + 1, false)?;
                any |= hit;
                shell.push(s);
                argv.push(quote(&a));
            } else {
                match &spec.replace {
                    Some(r) if !r.is_empty() && w.contains(r.as_str()) => {
                        any = true;
                        argv.push(quote(&w.replace(r.as_str(), &args.join(" "))));
                    }
                    _ => argv.push(quote(w)),
                }
            }
        }
        // No replacement string: the arguments go at the end.
        if !any && (spec.replace.is_none() || spec.parallel) {
            for a in args {
                shell.push(quote(a));
                argv.push(quote(a));
            }
        }
        let argv = argv.join(" ");
        if spec.parallel && !spec.quoted {
            let shell = shell.join(" ");
            if shell != argv {
                out.push(shell);
            }
        }
        out.push(argv);
    }
    Some(out)
}

/// `word` with GNU parallel's replacement strings filled from `args` (one per input source);
/// `quoted` quotes each value for the shell (parallel's default). Returns whether any was
/// found; `None` for a perl expression `{= … =}`, which cannot be evaluated here.
fn fill_parallel(
    word: &str,
    spec: &Spec,
    args: &[String],
    job: usize,
    quoted: bool,
) -> Option<(String, bool)> {
    if word.contains("{=") {
        return None;
    }
    let all = args.join(" ");
    let put = |v: &str| if quoted { quote(v) } else { v.to_owned() };
    let mut out = String::new();
    let mut hit = false;
    let mut rest = word;
    while !rest.is_empty() {
        if let Some(r) = spec.replace.as_deref().filter(|r| !r.is_empty())
            && let Some(after) = rest.strip_prefix(r)
        {
            out.push_str(&put(&all));
            hit = true;
            rest = after;
            continue;
        }
        if rest.starts_with('{')
            && let Some(close) = rest.find('}')
            && let Some(value) = parallel_value(&rest[1..close], spec, args, &all, job)
        {
            out.push_str(&put(&value));
            hit = true;
            rest = &rest[close + 1..];
            continue;
        }
        let Some(c) = rest.chars().next() else {
            break;
        };
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    Some((out, hit))
}

/// The value of the replacement string `{inner}`, `None` when it is not one.
fn parallel_value(
    inner: &str,
    spec: &Spec,
    args: &[String],
    all: &str,
    job: usize,
) -> Option<String> {
    match inner {
        "#" => return Some(job.to_string()),
        "%" => return Some("1".to_owned()),
        _ => {}
    }
    let digits = inner.bytes().take_while(u8::is_ascii_digit).count();
    let value = if digits == 0 {
        // `-I STR` renames `{}` alone; the others keep their names.
        if inner.is_empty() && spec.replace.is_some() {
            return None;
        }
        all
    } else {
        let n: usize = inner[..digits].parse().ok()?;
        args.get(n.checked_sub(1)?)?.as_str()
    };
    let base = |v: &str| v.rsplit('/').next().unwrap_or(v).to_owned();
    let no_ext = |v: &str| match v.rfind('.') {
        Some(i) if !v[i..].contains('/') && i > 0 => v[..i].to_owned(),
        _ => v.to_owned(),
    };
    Some(match &inner[digits..] {
        "" => value.to_owned(),
        "." => no_ext(value),
        "/" => base(value),
        "//" => match value.rfind('/') {
            Some(0) => "/".to_owned(),
            Some(i) => value[..i].to_owned(),
            None => ".".to_owned(),
        },
        "/." => no_ext(&base(value)),
        _ => return None,
    })
}

/// The jobs of `parallel … ::: a b ::: c d` (`words[sep..end]` holds the input sources): one
/// argument per source and job, combined as parallel does (`:::` every combination, `:::+`
/// linked to the previous source). `None` when a source is a file (`::::`) or there are more
/// than [`MAX_JOBS`] (`Some(Err(()))`).
pub(crate) fn parallel_sources<S: AsRef<str>>(
    words: &[S],
    sep: usize,
    end: usize,
) -> Option<Result<Vec<Vec<String>>, ()>> {
    let mut jobs: Vec<Vec<String>> = vec![Vec::new()];
    let mut k = sep;
    while k < end {
        let mark = words[k].as_ref();
        let linked = match mark {
            ":::" => false,
            ":::+" => true,
            _ => return None,
        };
        let stop = (k + 1..end)
            .find(|&j| words[j].as_ref().starts_with(":::"))
            .unwrap_or(end);
        let values: Vec<String> = words[k + 1..stop]
            .iter()
            .map(|w| w.as_ref().to_owned())
            .collect();
        jobs = if linked {
            jobs.into_iter()
                .zip(values)
                .map(|(mut j, v)| {
                    j.push(v);
                    j
                })
                .collect()
        } else {
            if jobs.len().saturating_mul(values.len()) > MAX_JOBS {
                return Some(Err(()));
            }
            jobs.iter()
                .flat_map(|j| {
                    values.iter().map(move |v| {
                        let mut j = j.clone();
                        j.push(v.clone());
                        j
                    })
                })
                .collect()
        };
        k = stop;
    }
    Some(Ok(jobs))
}

/// What GNU parallel's options (`words[start+1..cmd]`) say about substitution: the spec, how
/// stdin splits, and whether the arguments can be known at all (`--pipe` feeds stdin to the
/// command as data, `-a FILE` reads a file).
pub(crate) fn parallel_spec<S: AsRef<str>>(
    words: &[S],
    start: usize,
    cmd: usize,
) -> Option<(Spec, Split)> {
    let mut spec = Spec {
        parallel: true,
        ..Spec::default()
    };
    let mut split = Split::Lines;
    let mut k = start + 1;
    while k < cmd {
        let w = words[k].as_ref();
        let next = words.get(k + 1).map(|n| n.as_ref().to_owned());
        match w {
            "-q" | "--quote" => spec.quoted = true,
            "-I" => {
                spec.replace = next;
                k += 1;
            }
            "--replace" | "-i" => spec.replace = Some("{}".to_owned()),
            "-0" | "--null" => split = Split::Byte(0),
            "-d" | "--delimiter" => {
                split = Split::Byte(delimiter(next.as_deref()?)?);
                k += 1;
            }
            "--pipe" | "--pipepart" | "-a" | "--arg-file" | "--colsep" | "-C" => return None,
            _ if w.starts_with("--arg-file=") || w.starts_with("--colsep=") => return None,
            _ if w.starts_with("--replace=") => {
                spec.replace = w.split_once('=').map(|(_, r)| r.to_owned());
            }
            _ if w.starts_with("-I") => spec.replace = Some(w[2..].to_owned()),
            _ if w.starts_with("-i") => spec.replace = Some(w[2..].to_owned()),
            _ => {}
        }
        k += 1;
    }
    // `-I {}` renames nothing.
    if spec.replace.as_deref() == Some("{}") {
        spec.replace = None;
    }
    Some((spec, split))
}

/// A `-d` delimiter: one byte, or a C escape.
fn delimiter(d: &str) -> Option<u8> {
    Some(match d {
        "\\n" => b'\n',
        "\\t" => b'\t',
        "\\0" => 0,
        _ if d.len() == 1 => d.as_bytes()[0],
        _ => return None,
    })
}

/// `xargs`'s options (`words[start+1..cmd]`, the command at `cmd`): how it reads stdin and
/// places the items. `None` when it reads a file (`-a`).
pub(crate) fn xargs_template<S: AsRef<str>>(
    words: &[S],
    start: usize,
    cmd: usize,
    end: usize,
) -> Option<Template> {
    let mut spec = Spec::default();
    let mut split = None;
    let mut per = 0;
    let mut k = start + 1;
    let number = |v: &str| v.parse::<usize>().ok();
    while k < cmd {
        let w = words[k].as_ref();
        let next = words.get(k + 1).map(|n| n.as_ref().to_owned());
        k += 1;
        if let Some(long) = w.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let takes = |value: Option<String>, k: &mut usize| {
                value.or_else(|| {
                    *k += 1;
                    next.clone()
                })
            };
            match name {
                "replace" => spec.replace = Some(value.unwrap_or_else(|| "{}".to_owned())),
                "null" => split = Some(Split::Byte(0)),
                "delimiter" => split = Some(Split::Byte(delimiter(&takes(value, &mut k)?)?)),
                "max-args" | "max-lines" => per = number(&takes(value, &mut k)?)?,
                "arg-file" => return None,
                _ => {}
            }
            continue;
        }
        // A short cluster: a valued letter takes the rest of the word, else the next word.
        for (i, c) in w.char_indices().skip(1) {
            let rest = &w[i + c.len_utf8()..];
            let value = |k: &mut usize| {
                if rest.is_empty() {
                    *k += 1;
                    next.clone()
                } else {
                    Some(rest.to_owned())
                }
            };
            match c {
                'I' => spec.replace = Some(value(&mut k)?),
                'i' => {
                    spec.replace = Some(if rest.is_empty() { "{}" } else { rest }.to_owned());
                }
                'd' => split = Some(Split::Byte(delimiter(&value(&mut k)?)?)),
                'n' | 'L' => per = number(&value(&mut k)?)?,
                'l' => per = if rest.is_empty() { 1 } else { number(rest)? },
                'a' => return None,
                'E' | 's' | 'P' => {
                    value(&mut k);
                }
                'e' => {}
                '0' => {
                    split = Some(Split::Byte(0));
                    continue;
                }
                _ => continue,
            }
            break;
        }
    }
    // `-I` reads one line per command.
    let split = match (&spec.replace, split) {
        (_, Some(s)) => s,
        (Some(_), None) => Split::Lines,
        (None, None) => Split::Blanks,
    };
    if spec.replace.is_some() {
        per = 1;
    }
    Some(Template {
        command: cmd..end,
        spec,
        split,
        per,
    })
}

/// The arguments a runner reads from `input`; `None` when quoting would make them differ
/// (xargs' own quotes and backslashes).
pub(crate) fn split_input(input: &str, split: Split) -> Option<Vec<String>> {
    let items: Vec<String> = match split {
        Split::Lines => input
            .lines()
            .map(|l| l.trim_start_matches([' ', '\t']).to_owned())
            .filter(|l| !l.is_empty())
            .collect(),
        Split::Blanks => {
            if input.contains(['\'', '"', '\\']) {
                return None;
            }
            input.split_whitespace().map(str::to_owned).collect()
        }
        Split::Byte(b) => input
            .split(char::from(b))
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    };
    Some(items)
}

/// The jobs of a template given the runner's input: one item each with a replacement string
/// or `per` = 1, else `per` items (all for 0).
pub(crate) fn template_jobs(t: &Template, items: Vec<String>) -> Vec<Vec<String>> {
    if items.is_empty() {
        return Vec::new();
    }
    if t.spec.parallel || t.per == 1 {
        return items.into_iter().map(|i| vec![i]).collect();
    }
    if t.per == 0 {
        return vec![items];
    }
    items.chunks(t.per).map(<[String]>::to_vec).collect()
}

/// What `echo …` or `printf FORMAT …` writes, when every word is known (the input of a runner
/// on the right of a pipe).
pub(crate) fn output_of<S: AsRef<str>>(words: &[S]) -> Option<String> {
    let (first, args) = words.split_first()?;
    match crate::basename(first.as_ref()) {
        "echo" => {
            let mut newline = true;
            let mut k = 0;
            while let Some(w) = args.get(k).map(AsRef::as_ref) {
                if w.len() < 2
                    || !w.starts_with('-')
                    || !w[1..].bytes().all(|b| b"neE".contains(&b))
                {
                    break;
                }
                if w.contains('e') {
                    // Escapes would need interpreting.
                    return None;
                }
                newline &= !w.contains('n');
                k += 1;
            }
            let mut out = args[k..]
                .iter()
                .map(AsRef::as_ref)
                .collect::<Vec<&str>>()
                .join(" ");
            if newline {
                out.push('\n');
            }
            Some(out)
        }
        "printf" => {
            let (format, args) = args.split_first()?;
            printf(format.as_ref(), args)
        }
        _ => None,
    }
}

/// A small `printf`: `%s`, `%b` without escapes, `%d`/`%i`/`%u`, `%%`, and the escapes `\n`,
/// `\t`, `\\`, `\0`; `None` for anything else.
fn printf<S: AsRef<str>>(format: &str, args: &[S]) -> Option<String> {
    let mut out = String::new();
    let mut next = 0;
    loop {
        let mut used = false;
        let mut chars = format.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push(match chars.next()? {
                    'n' => '\n',
                    't' => '\t',
                    '\\' => '\\',
                    '0' => '\0',
                    _ => return None,
                }),
                '%' => match chars.next()? {
                    '%' => out.push('%'),
                    's' | 'd' | 'i' | 'u' | 'b' => {
                        used = true;
                        let arg = args.get(next).map_or("", AsRef::as_ref);
                        if arg.contains('\\') {
                            return None;
                        }
                        out.push_str(arg);
                        next += 1;
                    }
                    _ => return None,
                },
                c => out.push(c),
            }
        }
        if !used || next >= args.len() {
            return Some(out);
        }
    }
}

/// `git -c alias.NAME=VALUE … NAME ARGS…` (`words[start]` is git): the command line the alias
/// runs. A `!` alias is a shell command line given the arguments; any other is a git command
/// line (followed, when it names another alias of the line, a few times).
pub(crate) fn git_alias<S: AsRef<str>>(
    words: &[S],
    start: usize,
    end: usize,
    env: &[(String, String)],
) -> Option<String> {
    // The environment git starts with: the command's assignments, then those an `env` (or
    // another wrapper taking `NAME=value` words) before git adds.
    let mut vars: Vec<(&str, &str)> = env.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    vars.extend(
        words[..start]
            .iter()
            .filter_map(|w| w.as_ref().split_once('='))
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_')),
    );
    let var = |name: &str| vars.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| *v);
    let alias_of = |setting: &str| -> Option<(String, String)> {
        let (key, value) = setting.split_once('=')?;
        let name = key
            .split_once('.')
            .filter(|(s, _)| s.eq_ignore_ascii_case("alias"))
            .map(|(_, n)| n)?;
        Some((name.to_ascii_lowercase(), value.to_owned()))
    };
    let mut aliases: Vec<(String, String)> = Vec::new();
    // GIT_CONFIG_COUNT=n with GIT_CONFIG_KEY_i / GIT_CONFIG_VALUE_i: settings like `-c`, read
    // before the command line's own.
    let count = var("GIT_CONFIG_COUNT").and_then(|n| n.parse::<usize>().ok());
    for i in 0..count.unwrap_or(0).min(64) {
        if let (Some(key), Some(value)) = (
            var(&format!("GIT_CONFIG_KEY_{i}")),
            var(&format!("GIT_CONFIG_VALUE_{i}")),
        ) {
            aliases.extend(alias_of(&format!("{key}={value}")));
        }
    }
    let mut k = start + 1;
    while k < end {
        let w = words[k].as_ref();
        if w == "-c" || w == "--config-env" {
            if let Some(v) = words.get(k + 1).filter(|_| k + 1 < end) {
                let v = v.as_ref();
                if w == "-c" {
                    aliases.extend(alias_of(v));
                } else if let Some((key, name)) = v.rsplit_once('=') {
                    aliases.extend(var(name).and_then(|value| alias_of(&format!("{key}={value}"))));
                }
            }
            k += 2;
            continue;
        }
        // `-calias.x=…` glued, and `--config-env=alias.x=VAR`.
        if let Some(setting) = w
            .strip_prefix("-c")
            .filter(|s| !s.is_empty() && !w.starts_with("--"))
        {
            aliases.extend(alias_of(setting));
            k += 1;
            continue;
        }
        if let Some(v) = w.strip_prefix("--config-env=") {
            if let Some((key, name)) = v.rsplit_once('=') {
                aliases.extend(var(name).and_then(|value| alias_of(&format!("{key}={value}"))));
            }
            k += 1;
            continue;
        }
        // One option at a time: a later `-c alias.…` is read above.
        let (len, _) = crate::programs::git_globals(&words[k..(k + 2).min(end)]);
        if len == 0 {
            break;
        }
        k += len;
    }
    if aliases.is_empty() || k >= end {
        return None;
    }
    let rest: Vec<String> = words[k + 1..end]
        .iter()
        .map(|w| quote(w.as_ref()))
        .collect();
    let mut name = words[k].as_ref().to_ascii_lowercase();
    let mut prefix: Vec<String> = Vec::new();
    for _ in 0..4 {
        let (_, value) = aliases.iter().rev().find(|(n, _)| *n == name)?;
        if let Some(body) = value.strip_prefix('!') {
            let mut text = body.to_owned();
            for w in prefix.iter().chain(&rest) {
                text.push(' ');
                text.push_str(w);
            }
            return Some(text);
        }
        let mut value_words = value.split_whitespace();
        let first = value_words.next()?.to_owned();
        let tail: Vec<String> = value_words.map(quote).collect();
        prefix = tail.into_iter().chain(prefix).collect();
        if !aliases
            .iter()
            .any(|(n, _)| *n == first.to_ascii_lowercase())
        {
            let mut text = format!("git {}", quote(&first));
            for w in prefix.iter().chain(&rest) {
                text.push(' ');
                text.push_str(w);
            }
            return Some(text);
        }
        name = first.to_ascii_lowercase();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<&str> {
        line.split(' ').collect()
    }

    #[test]
    fn quoting_round_trips() {
        assert_eq!(quote("rm"), "rm");
        assert_eq!(quote("-rf"), "-rf");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("A=1"), "'A=1'");
    }

    #[test]
    fn parallel_jobs_fill_replacement_strings() {
        let w = words("rm -rf {} {.} {/} {//} {/.} {#}");
        let spec = Spec {
            parallel: true,
            ..Spec::default()
        };
        let jobs = vec![vec!["/a/b.txt".to_owned()]];
        assert_eq!(
            expand(&w, 0..w.len(), &spec, &jobs).unwrap(),
            ["rm -rf /a/b.txt /a/b b.txt /a b 1"]
        );
        // No replacement string: the argument goes at the end.
        let w = words("rm -rf");
        assert_eq!(
            expand(&w, 0..2, &spec, &[vec!["/".to_owned()]]).unwrap(),
            ["rm -rf /"]
        );
        // The shell reading and the argv reading differ for a word holding blanks.
        let w = vec!["bash", "-c", "rm -rf {}"];
        assert_eq!(
            expand(&w, 0..3, &spec, &[vec!["/".to_owned()]]).unwrap(),
            ["bash -c rm -rf /", "bash -c 'rm -rf /'"]
        );
        let w = words("echo {1} {2}");
        let jobs = parallel_sources(&words("::: a b ::: c"), 0, 5)
            .unwrap()
            .unwrap();
        assert_eq!(jobs, [vec!["a", "c"], vec!["b", "c"]]);
        assert_eq!(
            expand(&w, 0..3, &spec, &jobs).unwrap(),
            ["echo a c", "echo b c"]
        );
        let linked = parallel_sources(&words("::: a b :::+ c d"), 0, 6)
            .unwrap()
            .unwrap();
        assert_eq!(linked, [vec!["a", "c"], vec!["b", "d"]]);
        assert!(parallel_sources(&words(":::: file"), 0, 2).is_none());
        let many = format!("::: {}", vec!["x"; MAX_JOBS + 1].join(" "));
        assert_eq!(
            parallel_sources(&words(&many), 0, MAX_JOBS + 2),
            Some(Err(()))
        );
        assert!(expand(&words("echo {=uc=}"), 0..2, &spec, &[vec![]]).is_none());
    }

    #[test]
    fn xargs_options() {
        let t = |line: &str| {
            let w = words(line);
            let cmd = w.iter().position(|x| *x == "rm").unwrap();
            xargs_template(&w, 0, cmd, w.len())
        };
        let i = t("xargs -I{} rm -rf {}").unwrap();
        assert_eq!(i.spec.replace.as_deref(), Some("{}"));
        assert_eq!((i.split, i.per), (Split::Lines, 1));
        assert_eq!(
            t("xargs -I X rm X").unwrap().spec.replace.as_deref(),
            Some("X")
        );
        assert_eq!(
            t("xargs --replace rm {}").unwrap().spec.replace.as_deref(),
            Some("{}")
        );
        assert_eq!(
            t("xargs -i rm {}").unwrap().spec.replace.as_deref(),
            Some("{}")
        );
        let n = t("xargs -0 -n 2 rm").unwrap();
        assert_eq!((n.split, n.per, n.spec.replace), (Split::Byte(0), 2, None));
        assert_eq!(t("xargs -0rn1 rm").unwrap().per, 1);
        assert!(t("xargs -a list rm").is_none());
        let w = words("xargs -I{} rm -rf {}");
        let tpl = xargs_template(&w, 0, 2, w.len()).unwrap();
        let jobs = template_jobs(&tpl, split_input("/\n  b c\n", tpl.split).unwrap());
        assert_eq!(
            expand(&w, tpl.command.clone(), &tpl.spec, &jobs).unwrap(),
            ["rm -rf /", "rm -rf 'b c'"]
        );
        let w = words("xargs rm -rf");
        let tpl = xargs_template(&w, 0, 1, w.len()).unwrap();
        let jobs = template_jobs(&tpl, split_input("a b\n/\n", tpl.split).unwrap());
        assert_eq!(
            expand(&w, tpl.command.clone(), &tpl.spec, &jobs).unwrap(),
            ["rm -rf a b /"]
        );
        assert!(split_input("'a b'", Split::Blanks).is_none());
    }

    #[test]
    fn literal_outputs() {
        assert_eq!(output_of(&words("echo / x")).as_deref(), Some("/ x\n"));
        assert_eq!(output_of(&words("echo -n /")).as_deref(), Some("/"));
        assert_eq!(output_of(&words("printf /")).as_deref(), Some("/"));
        assert_eq!(
            output_of(&["printf", "%s\\n", "a", "b"]).as_deref(),
            Some("a\nb\n")
        );
        assert_eq!(output_of(&["printf", "%5s", "a"]), None);
        assert_eq!(output_of(&words("echo -e a")), None);
        assert_eq!(output_of(&words("cat x")), None);
    }

    #[test]
    fn git_aliases() {
        let a = |line: &str| {
            let w: Vec<&str> = line.split(' ').collect();
            git_alias(&w, 0, w.len(), &[])
        };
        // Split on blanks, the alias value is cut short and `-rf` is no subcommand.
        assert_eq!(a("git -c alias.x=!rm -rf / x"), None);
        let w = vec!["git", "-c", "alias.x=!rm -rf /", "x"];
        assert_eq!(git_alias(&w, 0, 4, &[]).as_deref(), Some("rm -rf /"));
        let w = vec!["git", "-c", "alias.x=!rm -rf", "x", "/"];
        assert_eq!(git_alias(&w, 0, 5, &[]).as_deref(), Some("rm -rf /"));
        let w = vec![
            "git",
            "-C",
            "d",
            "-c",
            "alias.nuke=reset --hard",
            "NUKE",
            "HEAD",
        ];
        assert_eq!(
            git_alias(&w, 0, 7, &[]).as_deref(),
            Some("git reset --hard HEAD")
        );
        let w = vec!["git", "-c", "alias.a=b", "-c", "alias.b=!rm x", "a", "y"];
        assert_eq!(git_alias(&w, 0, 7, &[]).as_deref(), Some("rm x y"));
        // The alias is not invoked: nothing runs it.
        let w = vec!["git", "-c", "alias.x=!rm -rf /", "status"];
        assert_eq!(git_alias(&w, 0, 4, &[]), None);
        assert_eq!(a("git status"), None);
        // Glued `-c`, `--config-env` naming a variable, and GIT_CONFIG_COUNT's settings.
        assert_eq!(
            a("git -calias.x=branch x --delete f").as_deref(),
            Some("git branch --delete f")
        );
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect()
        };
        let w = words("git --config-env=alias.x=CMD x -d f");
        assert_eq!(
            git_alias(&w, 0, w.len(), &env(&[("CMD", "branch")])).as_deref(),
            Some("git branch -d f")
        );
        let w = words("git --config-env alias.x=CMD x");
        assert_eq!(
            git_alias(&w, 0, w.len(), &env(&[("CMD", "!rm -rf /")])).as_deref(),
            Some("rm -rf /")
        );
        let counted = env(&[
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "alias.x"),
            ("GIT_CONFIG_VALUE_0", "branch"),
        ]);
        let w = words("git x -d f");
        assert_eq!(
            git_alias(&w, 0, w.len(), &counted).as_deref(),
            Some("git branch -d f")
        );
        // Assignments an `env` before git passes count too; without the count, none is read.
        let w = words(
            "env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0=branch git x -D f",
        );
        assert_eq!(
            git_alias(&w, 4, w.len(), &[]).as_deref(),
            Some("git branch -D f")
        );
        let w = words("git x -d f");
        assert_eq!(git_alias(&w, 0, w.len(), &counted[1..]), None);
    }
}

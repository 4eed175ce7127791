//! Wrapper stripping (`sudo -u x`, `env A=1`, `timeout 5`, …) and shell-payload detection.

use crate::WRAPPER_COMMANDS;

/// Shells whose `-c` option runs a command string.
pub const SHELLS: &[&str] = &[
    "ash", "bash", "csh", "dash", "fish", "ksh", "sh", "tcsh", "zsh",
];

/// The last path component of a program name (`/usr/bin/sudo` → `sudo`).
pub fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Flags of each wrapper that take the next argument as their value.
fn value_flags(wrapper: &str) -> &'static [&'static str] {
    match wrapper {
        "sudo" => &[
            "-u",
            "--user",
            "-g",
            "--group",
            "-h",
            "--host",
            "-p",
            "--prompt",
            "-C",
            "--close-from",
            "-D",
            "--chdir",
            "-r",
            "--role",
            "-t",
            "--type",
            "-U",
            "--other-user",
            "-T",
            "--command-timeout",
        ],
        "doas" => &["-u", "-C"],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "nice" => &["-n", "--adjustment"],
        "env" => &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        "xargs" => &[
            "-I",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-L",
            "--max-lines",
            "-d",
            "--delimiter",
            "-E",
            "-a",
            "--arg-file",
            "-s",
            "--max-chars",
        ],
        "exec" => &["-a"],
        "time" => &["-f", "--format", "-o", "--output"],
        _ => &[],
    }
}

/// True for `NAME=…` (a word-character name followed by `=`).
fn is_assignment(arg: &str) -> bool {
    match arg.split_once('=') {
        Some((name, _)) => {
            !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// True for a `timeout` DURATION such as `5`, `5s`, `1.5`, `.5m`, `2d`.
fn is_duration(arg: &str) -> bool {
    let num = arg.strip_suffix(['s', 'm', 'h', 'd']).unwrap_or(arg);
    let mut parts = num.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next();
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    digits(int)
        && frac.is_none_or(digits)
        && (!int.is_empty() || frac.is_some_and(|f| !f.is_empty()))
}

/// How many leading argv elements are wrappers and their options.
pub fn wrapper_prefix_len<S: AsRef<str>>(argv: &[S]) -> usize {
    let mut i = 0;
    while let Some(head) = argv.get(i) {
        let wrapper = basename(head.as_ref());
        if !WRAPPER_COMMANDS.contains(&wrapper) {
            break;
        }
        i += 1;
        let flags = value_flags(wrapper);
        let mut duration_pending = wrapper == "timeout";
        while let Some(arg) = argv.get(i).map(AsRef::as_ref) {
            if arg.starts_with('-') {
                i += if flags.contains(&arg) { 2 } else { 1 };
            } else if !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit()) {
                duration_pending = false;
                i += 1;
            } else if is_assignment(arg) {
                i += 1;
            } else if duration_pending && is_duration(arg) {
                duration_pending = false;
                i += 1;
            } else {
                break;
            }
        }
    }
    i.min(argv.len())
}

/// Where a shell payload word is, relative to the unwrapped argv.
pub(crate) enum Payload {
    /// The command string is the word at this index.
    Shell(usize),
    /// `eval` with its words at these indices.
    Eval(std::ops::Range<usize>),
}

/// Finds the payload of an unwrapped argv (`values[0]` is the program); `None` when the
/// program is not a shell with `-c` or `eval`, or when the payload word is missing.
///
/// A `None` value stands for a word tainted by an expansion: it ends the option run, since its
/// real text is unknown.
pub(crate) fn find_payload(values: &[Option<&str>]) -> Option<Payload> {
    let program = basename(values.first().copied()??);
    if program == "eval" {
        return (values.len() > 1).then_some(Payload::Eval(1..values.len()));
    }
    if !SHELLS.contains(&program) {
        return None;
    }
    let mut i = 1;
    while let Some(word) = values.get(i) {
        let word = (*word)?;
        if word == "--" || !(word.starts_with('-') || word.starts_with('+')) || word.len() < 2 {
            return None;
        }
        let letters = &word[1..];
        if word.starts_with('-')
            && letters.bytes().all(|b| b.is_ascii_lowercase())
            && letters.contains('c')
        {
            return (i + 1 < values.len()).then_some(Payload::Shell(i + 1));
        }
        // `-o opt` / `-O opt` (also `+o`) take the next word as the option's name.
        i += if word.ends_with(['o', 'O']) && !word.starts_with("--") {
            2
        } else {
            1
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(argv: &[&str]) -> Option<usize> {
        let values: Vec<Option<&str>> = argv
            .iter()
            .map(|a| (!a.starts_with('$')).then_some(*a))
            .collect();
        match find_payload(&values) {
            Some(Payload::Shell(i)) => Some(i),
            Some(Payload::Eval(r)) => Some(r.start + 100),
            None => None,
        }
    }

    #[test]
    fn shell_payloads() {
        assert_eq!(payload(&["bash", "-c", "x"]), Some(2));
        assert_eq!(payload(&["/bin/sh", "-lc", "x"]), Some(2));
        assert_eq!(payload(&["zsh", "-xc", "x"]), Some(2));
        assert_eq!(payload(&["bash", "-o", "pipefail", "-c", "x"]), Some(4));
        assert_eq!(payload(&["bash", "-eo", "pipefail", "-c", "x"]), Some(4));
        assert_eq!(payload(&["bash", "-l", "script.sh"]), None);
        assert_eq!(payload(&["bash", "script.sh", "-c", "x"]), None);
        assert_eq!(payload(&["bash", "--", "-c", "x"]), None);
        assert_eq!(payload(&["bash", "-c"]), None);
        assert_eq!(payload(&["bash", "$X", "-c", "x"]), None);
        assert_eq!(payload(&["python", "-c", "x"]), None);
        assert_eq!(payload(&["eval", "a", "b"]), Some(101));
        assert_eq!(payload(&["eval"]), None);
    }

    #[test]
    fn durations() {
        for d in ["5", "5s", "1.5", ".5m", "2d", "10h"] {
            assert!(is_duration(d), "{d}");
        }
        for d in ["cargo", "s", ".", "1.2.3", "5x", ""] {
            assert!(!is_duration(d), "{d}");
        }
    }
}

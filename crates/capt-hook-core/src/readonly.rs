//! Commands known not to change anything, for the `read_only_command` condition.
//!
//! Fail-closed: a line counts as read-only only when every command in it is on the list, no
//! command writes through a redirect, and nothing is hidden behind a substitution, an env
//! prefix or a privilege wrapper.

use capt_hook_shell::CommandLine;

/// Programs that only read, whatever their arguments (within the per-program checks below).
const READ_ONLY: &[&str] = &[
    "basename",
    "cat",
    "cd",
    "column",
    "comm",
    "cut",
    "date",
    "df",
    "diff",
    "dirname",
    "du",
    "echo",
    "env",
    "false",
    "file",
    "fd",
    "find",
    "grep",
    "egrep",
    "fgrep",
    "head",
    "hostname",
    "id",
    "jq",
    "less",
    "ls",
    "md5sum",
    "more",
    "nl",
    "printenv",
    "printf",
    "ps",
    "pwd",
    "readlink",
    "realpath",
    "rg",
    "sha1sum",
    "sha256sum",
    "sort",
    "stat",
    "tail",
    "test",
    "tr",
    "tree",
    "true",
    "type",
    "uname",
    "uniq",
    "wc",
    "which",
    "whoami",
    "[",
];

/// Subcommands of multi-level tools that only read.
const READ_ONLY_SUBCOMMANDS: &[(&str, &[&str])] = &[
    (
        "git",
        &[
            "blame",
            "describe",
            "diff",
            "grep",
            "log",
            "ls-files",
            "ls-tree",
            "rev-parse",
            "show",
            "status",
            "shortlog",
            "reflog",
        ],
    ),
    ("cargo", &["metadata", "tree", "--version", "version"]),
    ("gh", &["status"]),
    ("jj", &["diff", "log", "show", "status", "st"]),
];

/// Arguments that turn an otherwise read-only program into a writer or executor.
const DANGEROUS_ARGS: &[(&str, &[&str])] = &[
    (
        "find",
        &[
            "-exec", "-execdir", "-delete", "-ok", "-okdir", "-fprint", "-fprintf", "-fls",
        ],
    ),
    ("sort", &["-o", "--output"]),
    ("env", &[]),
];

fn safe_redirect(op: &str, target: &str) -> bool {
    match op {
        "<" | "<<" | "<<<" | "<&" | ">&" => true,
        ">" | ">>" | "&>" | "&>>" | ">|" => target == "/dev/null",
        _ => false,
    }
}

/// True when every command of the line is a known read-only program.
pub fn is_read_only(line: &CommandLine) -> bool {
    if line.is_empty() || line.has_error {
        return false;
    }
    line.commands().all(|cmd| {
        if cmd.nesting > 0 || cmd.tainted || !cmd.env.is_empty() {
            return false;
        }
        if !cmd
            .redirects
            .iter()
            .all(|r| safe_redirect(&r.op, &r.target))
        {
            return false;
        }
        let argv = cmd.argv();
        let Some(first) = argv.first() else {
            return false;
        };
        let program = crate::glob::basename(first);
        // `env` with arguments runs another program; bare `env` only prints.
        if program == "env" && argv.len() > 1 {
            return false;
        }
        if let Some((_, subs)) = READ_ONLY_SUBCOMMANDS.iter().find(|(p, _)| *p == program) {
            let sub = argv[1..].iter().find(|a| !a.starts_with('-'));
            return match sub {
                Some(s) => subs.contains(s),
                None => argv[1..].iter().any(|a| subs.contains(a)),
            };
        }
        if !READ_ONLY.contains(&program) {
            return false;
        }
        let dangerous = DANGEROUS_ARGS
            .iter()
            .find(|(p, _)| *p == program)
            .is_some_and(|(_, bad)| {
                argv[1..].iter().any(|a| {
                    bad.iter()
                        .any(|b| a == b || a.starts_with(&format!("{b}=")))
                })
            });
        !dangerous
    })
}

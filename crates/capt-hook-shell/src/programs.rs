//! What some programs' options mean, for reading a command the way the program does: git's
//! global options (which stand before the subcommand) and the documented spellings of the flags
//! that guards name (`rm -r` = `-R` = `--recursive`). One table each, used by token matching and
//! by `read_only_command`.

/// One git option accepted before the subcommand.
#[derive(Debug, Clone, Copy)]
pub struct GitOption {
    /// The spelling (`-C`, `--git-dir`).
    pub name: &'static str,
    /// Takes the next word as its value (a long one may also use `=`).
    pub value: bool,
    /// Harmless for a read-only command (`-c` and `--exec-path` can make git run anything).
    pub read_only: bool,
}

const fn git(name: &'static str, value: bool, read_only: bool) -> GitOption {
    GitOption {
        name,
        value,
        read_only,
    }
}

/// git's global options (git(1), "OPTIONS").
pub const GIT_GLOBAL_OPTIONS: &[GitOption] = &[
    git("-C", true, true),
    git("-c", true, false),
    git("--config-env", true, false),
    git("--exec-path", false, false),
    git("--git-dir", true, true),
    git("--work-tree", true, true),
    git("--namespace", true, true),
    git("--super-prefix", true, false),
    git("--attr-source", true, true),
    git("--shallow-file", true, true),
    git("--list-cmds", true, true),
    git("--no-pager", false, true),
    git("-P", false, true),
    git("-p", false, false),
    git("--paginate", false, false),
    git("--bare", false, true),
    git("--no-replace-objects", false, true),
    git("--no-lazy-fetch", false, true),
    git("--no-optional-locks", false, true),
    git("--no-advice", false, true),
    git("--literal-pathspecs", false, true),
    git("--glob-pathspecs", false, true),
    git("--noglob-pathspecs", false, true),
    git("--icase-pathspecs", false, true),
];

/// Reads git's global options at the start of `args` (the words after `git`): how many words
/// they take, and whether every one of them is harmless for a read-only command. Stops at the
/// first word that is not a known global option, or just after a `--` ending them.
pub fn git_globals<S: AsRef<str>>(args: &[S]) -> (usize, bool) {
    let mut i = 0;
    let mut read_only = true;
    while let Some(arg) = args.get(i).map(AsRef::as_ref) {
        // `git -- reset --hard`: the end of git's own options, then the subcommand.
        if arg == "--" {
            i += 1;
            break;
        }
        let (name, glued) = match arg.split_once('=') {
            Some((n, _)) if arg.starts_with("--") => (n, true),
            _ => (arg, false),
        };
        let Some(opt) = GIT_GLOBAL_OPTIONS.iter().find(|o| o.name == name) else {
            // `-cname=value`: a setting glued to `-c` reads as one (failing closed: git itself
            // may refuse the spelling, but then nothing runs).
            if arg.len() > 2 && arg.starts_with("-c") && !arg.starts_with("--") {
                read_only = false;
                i += 1;
                continue;
            }
            break;
        };
        read_only &= opt.read_only;
        i += if opt.value && !glued { 2 } else { 1 };
    }
    (i.min(args.len()), read_only)
}

/// The flags of one program (or git subcommand) whose spellings differ: each entry is the
/// short letters and long names that mean the same thing.
pub struct FlagTable {
    /// `rm`, or `git push` for a git subcommand.
    pub program: &'static str,
    /// Groups of equivalent spellings: (short letters, long names).
    pub same: &'static [(&'static str, &'static [&'static str])],
    /// Short letters that take a value: the rest of their cluster is that value (`-mfix`).
    pub valued: &'static str,
}

/// The documented spellings of the flags guards name, per program. A flag not listed matches
/// only as written. `find`-style single-dash long options are listed in
/// [`SINGLE_DASH_LONG`].
pub const FLAG_TABLES: &[FlagTable] = &[
    FlagTable {
        program: "rm",
        same: &[
            ("rR", &["--recursive"]),
            ("f", &["--force"]),
            ("i", &["--interactive"]),
            ("d", &["--dir"]),
            ("v", &["--verbose"]),
        ],
        valued: "",
    },
    FlagTable {
        program: "cp",
        same: &[
            ("rR", &["--recursive"]),
            ("f", &["--force"]),
            ("a", &["--archive"]),
        ],
        valued: "St",
    },
    FlagTable {
        program: "mv",
        same: &[("f", &["--force"]), ("n", &["--no-clobber"])],
        valued: "St",
    },
    FlagTable {
        program: "ln",
        same: &[("s", &["--symbolic"]), ("f", &["--force"])],
        valued: "St",
    },
    FlagTable {
        program: "chmod",
        same: &[("R", &["--recursive"])],
        valued: "",
    },
    FlagTable {
        program: "chown",
        same: &[("R", &["--recursive"])],
        valued: "",
    },
    FlagTable {
        program: "chgrp",
        same: &[("R", &["--recursive"])],
        valued: "",
    },
    FlagTable {
        program: "shred",
        same: &[
            ("u", &["--remove"]),
            ("f", &["--force"]),
            ("z", &["--zero"]),
        ],
        valued: "ns",
    },
    FlagTable {
        program: "sed",
        same: &[("i", &["--in-place"]), ("E", &["--regexp-extended"])],
        valued: "ef",
    },
    FlagTable {
        program: "git push",
        same: &[
            ("f", &["--force"]),
            ("d", &["--delete"]),
            ("u", &["--set-upstream"]),
            ("n", &["--dry-run"]),
            ("q", &["--quiet"]),
        ],
        valued: "o",
    },
    FlagTable {
        program: "git clean",
        same: &[
            ("f", &["--force"]),
            ("n", &["--dry-run"]),
            ("i", &["--interactive"]),
            ("q", &["--quiet"]),
        ],
        valued: "e",
    },
    FlagTable {
        program: "git checkout",
        same: &[
            ("f", &["--force"]),
            ("p", &["--patch"]),
            ("q", &["--quiet"]),
        ],
        valued: "bB",
    },
    FlagTable {
        program: "git switch",
        same: &[
            ("f", &["--force", "--discard-changes"]),
            ("c", &["--create"]),
            ("C", &["--force-create"]),
        ],
        valued: "",
    },
    FlagTable {
        program: "git branch",
        same: &[
            ("d", &["--delete"]),
            ("f", &["--force"]),
            ("m", &["--move"]),
            ("c", &["--copy"]),
        ],
        valued: "",
    },
    FlagTable {
        program: "git tag",
        same: &[("d", &["--delete"]), ("f", &["--force"])],
        valued: "mF",
    },
    FlagTable {
        program: "git commit",
        same: &[
            ("a", &["--all"]),
            ("n", &["--no-verify"]),
            ("m", &["--message"]),
            ("q", &["--quiet"]),
        ],
        valued: "mFcCt",
    },
    FlagTable {
        program: "git add",
        same: &[("A", &["--all"]), ("f", &["--force"]), ("p", &["--patch"])],
        valued: "",
    },
    FlagTable {
        program: "git rm",
        same: &[("f", &["--force"]), ("r", &[]), ("q", &["--quiet"])],
        valued: "",
    },
    FlagTable {
        program: "git fetch",
        same: &[("f", &["--force"]), ("p", &["--prune"])],
        valued: "",
    },
    FlagTable {
        program: "git rebase",
        same: &[("i", &["--interactive"])],
        valued: "sX",
    },
    FlagTable {
        program: "git stash",
        same: &[("u", &["--include-untracked"]), ("a", &["--all"])],
        valued: "m",
    },
    FlagTable {
        program: "docker",
        same: &[("f", &["--force"]), ("a", &["--all"])],
        valued: "",
    },
    FlagTable {
        program: "kubectl",
        same: &[("A", &["--all-namespaces"])],
        valued: "nlcfo",
    },
    FlagTable {
        program: "npm",
        same: &[("g", &["--global"]), ("f", &["--force"])],
        valued: "",
    },
    FlagTable {
        program: "pip",
        same: &[("U", &["--upgrade"])],
        valued: "rce",
    },
    FlagTable {
        program: "curl",
        same: &[("k", &["--insecure"]), ("o", &["--output"])],
        valued: "oXHdeuAT",
    },
];

/// Programs whose single-dash words are whole options (`find -delete`), not letter clusters.
pub const SINGLE_DASH_LONG: &[&str] = &["find", "java", "go"];

/// The flag table of `program`, given its subcommand for git.
pub fn flag_table(program: &str, subcommand: Option<&str>) -> Option<&'static FlagTable> {
    FLAG_TABLES
        .iter()
        .find(|t| match t.program.split_once(' ') {
            Some((p, sub)) => p == program && subcommand == Some(sub),
            None => t.program == program,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_globals_are_read() {
        let g = |s: &str| git_globals(&s.split(' ').collect::<Vec<_>>());
        assert_eq!(g("-C dir reset --hard"), (2, true));
        assert_eq!(g("--no-pager -c core.pager=cat reset"), (3, false));
        assert_eq!(g("--git-dir=.git --work-tree=. reset"), (2, true));
        assert_eq!(g("--git-dir .git reset"), (2, true));
        assert_eq!(g("-P --bare log"), (2, true));
        assert_eq!(g("reset"), (0, true));
        assert_eq!(g("-C"), (1, true));
        assert_eq!(g("-- reset --hard"), (1, true));
        assert_eq!(g("-C d -- reset"), (3, true));
    }

    #[test]
    fn tables_are_well_formed() {
        for t in FLAG_TABLES {
            for (short, long) in t.same {
                assert!(
                    short.chars().all(|c| c.is_ascii_alphanumeric()),
                    "{}",
                    t.program
                );
                assert!(long.iter().all(|l| l.starts_with("--")), "{}", t.program);
            }
            assert!(
                FLAG_TABLES
                    .iter()
                    .filter(|o| o.program == t.program)
                    .count()
                    == 1,
                "{} listed twice",
                t.program
            );
        }
        assert!(flag_table("git", Some("push")).is_some());
        assert!(flag_table("git", None).is_none());
        assert!(flag_table("rm", None).is_some());
    }
}

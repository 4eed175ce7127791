//! Commands known not to change anything, for the `read_only_command` condition.
//!
//! Fail-closed: a line counts as read-only only when it was read to the end, its raw text holds
//! no expansion at all (`$`, backticks, braces, process substitution), and every part of it is
//! a bare, allow-listed program name (wrappers such as `sudo`, assignments and
//! `export`/`declare`/`unset` are not on the list) with no env prefix, no option that makes it
//! run a program or write a file, and only harmless redirects.

use capt_hook_shell::programs::git_globals;
use capt_hook_shell::{Command, CommandLine, Redirect};

/// Programs that only read, each with the argument prefixes that would make it write or run
/// something (`find -delete`, `sort -o`, `rg --pre`).
const READ_ONLY: &[(&str, &[&str])] = &[
    ("ls", &[]),
    ("cat", &[]),
    ("head", &[]),
    ("tail", &[]),
    ("wc", &[]),
    ("pwd", &[]),
    ("echo", &[]),
    ("printf", &["-v"]),
    ("grep", &[]),
    ("true", &[]),
    ("false", &[]),
    ("test", &[]),
    ("file", &["-C", "--compile"]),
    ("stat", &[]),
    ("readlink", &[]),
    ("realpath", &[]),
    ("basename", &[]),
    ("dirname", &[]),
    ("du", &[]),
    ("df", &[]),
    ("which", &[]),
    ("type", &[]),
    ("uname", &[]),
    ("id", &[]),
    ("whoami", &[]),
    ("groups", &[]),
    ("ps", &[]),
    ("pgrep", &[]),
    ("cut", &[]),
    ("tr", &[]),
    ("column", &[]),
    ("nl", &[]),
    ("jq", &[]),
    ("cmp", &[]),
    ("comm", &[]),
    ("md5", &[]),
    ("md5sum", &[]),
    ("shasum", &[]),
    ("sha256sum", &[]),
    ("cksum", &[]),
    ("rg", &["--pre", "--hostname-bin"]),
    ("fd", &["--exec"]),
    ("find", &["-delete", "-exec", "-ok", "-fls", "-fprint"]),
    ("diff", &["--to-file"]),
    ("sort", &["--output", "--compress-program"]),
    // `tree -o FILE` writes its listing; `tree --fromfile` only reads.
    ("tree", &["-o", "--output"]),
];

/// Short letters that write or change something, also inside a cluster (`tree -ao out`,
/// `sort -uo out`, `date -us @0`), per program.
const CLUSTER_FORBIDDEN: &[(&str, &str)] = &[
    // `-o FILE` writes the listing; `-R` writes `00Tree.html` into every directory (with -H).
    ("tree", "oR"),
    ("sort", "o"),
    // `fd -x` / `-X` run commands.
    ("fd", "xX"),
    // `date -s` sets the clock.
    ("date", "s"),
    // `file -C` compiles a magic file.
    ("file", "C"),
];

/// `hostname` only reads with these flags (`-F FILE`/`--file` and `-b`/`--boot` set the name,
/// and so does any operand).
const HOSTNAME_READS: &str = "aAdfiIsyhV";
const HOSTNAME_READS_LONG: &[&str] = &[
    "--alias",
    "--all-fqdns",
    "--domain",
    "--fqdn",
    "--long",
    "--ip-address",
    "--all-ip-addresses",
    "--short",
    "--yp",
    "--nis",
    "--help",
    "--version",
];

/// Subcommand tools: (name, flags allowed before the subcommand, flags that take a value there,
/// read-only subcommands, argument prefixes forbidden after the subcommand). git's options
/// before the subcommand come from [`capt_hook_shell::programs::GIT_GLOBAL_OPTIONS`].
type Subcommands = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

const SUBCOMMAND_TOOLS: &[Subcommands] = &[
    (
        "git",
        &[],
        &[],
        &[
            "status",
            "log",
            "diff",
            "show",
            "blame",
            "shortlog",
            "describe",
            "rev-parse",
            "rev-list",
            "ls-files",
            "ls-tree",
            "cat-file",
            "grep",
            "count-objects",
            "merge-base",
            "name-rev",
            "check-ignore",
            "cherry",
        ],
        &[
            "--output",
            "-o",
            "-O",
            "--open-files-in-pager",
            "--ext-diff",
            "--textconv",
            // `git cat-file --filters` runs the repository's clean/smudge filter programs.
            "--filters",
        ],
    ),
    (
        "jj",
        &["--no-pager", "--ignore-working-copy"],
        &["-R", "--repository", "--at-operation", "--at-op", "--color"],
        &["log", "status", "st", "diff", "show"],
        &["--tool", "--config"],
    ),
];

fn safe_redirect(r: &Redirect) -> bool {
    match r.op.as_str() {
        "<" => !r.target.starts_with("/dev/tcp/") && !r.target.starts_with("/dev/udp/"),
        "<<" | "<<-" | "<<<" => true,
        ">&" | "<&" => matches!(r.target.as_str(), "0" | "1" | "2" | "-"),
        ">" | ">>" => matches!(
            r.target.as_str(),
            "/dev/null" | "/dev/stdout" | "/dev/stderr"
        ),
        _ => false,
    }
}

/// A bare program name: no path, no quoting, nothing a shell would expand.
fn is_bare_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '+' | '-'))
}

fn has_arg(cmd: &Command, prefixes: &[&str]) -> bool {
    cmd.args
        .iter()
        .any(|a| prefixes.iter().any(|p| a.starts_with(p)))
}

fn read_only_subcommand(cmd: &Command, tool: &Subcommands) -> bool {
    let (name, bare, valued, subcommands, forbidden) = tool;
    let mut i = 0;
    if *name == "git" {
        let (len, harmless) = git_globals(&cmd.args);
        if !harmless {
            return false;
        }
        i = len;
    }
    while let Some(arg) = cmd.args.get(i) {
        if bare.contains(&arg.as_str()) {
            i += 1;
        } else if valued.contains(&arg.as_str()) {
            i += 2;
        } else if arg.starts_with('-') {
            return false;
        } else {
            return subcommands.contains(&arg.as_str())
                && !cmd.args[i + 1..]
                    .iter()
                    .any(|a| forbidden.iter().any(|p| a.starts_with(p)));
        }
    }
    false
}

/// True when some single-dash word of `cmd` holds a letter that writes for its program (see
/// [`CLUSTER_FORBIDDEN`]).
fn writing_letter(cmd: &Command) -> bool {
    CLUSTER_FORBIDDEN
        .iter()
        .filter(|(n, _)| *n == cmd.executable)
        .any(|(_, letters)| {
            cmd.args.iter().any(|a| {
                a.starts_with('-') && !a.starts_with("--") && a.contains(|c| letters.contains(c))
            })
        })
}

fn read_only_program(cmd: &Command) -> bool {
    let name = cmd.executable.as_str();
    if let Some(tool) = SUBCOMMAND_TOOLS.iter().find(|t| t.0 == name) {
        return read_only_subcommand(cmd, tool);
    }
    if writing_letter(cmd) {
        return false;
    }
    match name {
        // `uniq in out` writes `out`.
        "uniq" => cmd.args.iter().filter(|a| !a.starts_with('-')).count() <= 1,
        "date" => {
            !has_arg(cmd, &["-s", "--set"])
                && cmd
                    .args
                    .iter()
                    .all(|a| a.starts_with('-') || a.starts_with('+'))
        }
        "hostname" => cmd.args.iter().all(|a| {
            if a.starts_with("--") {
                HOSTNAME_READS_LONG.contains(&a.as_str())
            } else {
                a.len() > 1
                    && a.starts_with('-')
                    && a[1..].chars().all(|c| HOSTNAME_READS.contains(c))
            }
        }),
        _ => READ_ONLY
            .iter()
            .find(|(n, _)| *n == name)
            .is_some_and(|(_, forbidden)| !has_arg(cmd, forbidden)),
    }
}

/// True when every command of the line is a known read-only program.
pub fn is_read_only(line: &CommandLine) -> bool {
    let raw = line.raw.as_str();
    if line.is_empty()
        || line.unreadable.is_some()
        || raw.contains(['`', '$', '{'])
        || raw.contains("<(")
        || raw.contains(">(")
    {
        return false;
    }
    line.commands().all(|cmd| {
        cmd.env.is_empty()
            && cmd.redirects.iter().all(safe_redirect)
            && is_bare_name(&cmd.executable)
            && read_only_program(cmd)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ro(line: &str) -> bool {
        is_read_only(&CommandLine::parse(line))
    }

    #[test]
    fn reading_pipelines_pass() {
        assert!(ro("ls -la | head -20"));
        assert!(ro("git --no-pager log --oneline -5 && git status"));
        assert!(ro("git -C sub diff HEAD~1"));
        assert!(ro("grep -rn needle src 2>/dev/null"));
        assert!(ro("find . -name '*.rs'"));
        assert!(ro("jj log -r @"));
        assert!(ro("date +%Y"));
        assert!(ro("cat a.txt 2>&1 < input.txt"));
        assert!(ro("git --no-pager -C sub --git-dir=.git log"));
        assert!(ro("cat README.md | head -5"));
        assert!(ro("file README.md"));
        assert!(ro("sort -n data.txt"));
        assert!(ro("git log -p -3"));
        assert!(ro("tree -a -L 2 src"));
        assert!(ro("tree -aL 2 -I target"));
        assert!(ro("hostname"));
        assert!(ro("hostname -f"));
        assert!(ro("hostname -sI"));
        assert!(ro("hostname --fqdn"));
        assert!(ro("date -u +%s"));
        assert!(ro("git -- log --oneline"));
        assert!(ro("sort -u -k1,1 data.txt"));
        assert!(ro("file -b README.md"));
    }

    #[test]
    fn unreadable_lines_are_not_read_only() {
        let deep = format!("{}ls{}", "if true; then ".repeat(200), "; fi".repeat(200));
        let line = CommandLine::parse(&deep);
        assert!(line.unreadable.is_some());
        assert!(!is_read_only(&line));
        let wrapped = format!(
            "{}rm -rf /{}",
            "if true; then ".repeat(200),
            "; fi".repeat(200)
        );
        assert!(!ro(&wrapped));
    }

    #[test]
    fn anything_unproven_fails_closed() {
        for line in [
            "",
            "rm -rf build",
            "ls > listing.txt",
            "echo $(rm -rf ~)",
            "echo $HOME",
            "cat `which x`",
            "ls {a,b}",
            "FOO=1 ls",
            "sudo ls",
            "/bin/ls",
            "cd src && ls",
            "find . -delete",
            "find . -exec rm {} +",
            "sort -o out.txt in.txt",
            "sort -uo out.txt in.txt",
            "fd -x rm",
            "rg --pre ./script pattern",
            "git push",
            "git -c core.pager=x log",
            "git log --output=x",
            "uniq in.txt out.txt",
            "date -s 2020-01-01",
            "printf -v var x",
            "diff <(ls a) <(ls b)",
            "cat < /dev/tcp/host/80",
            "echo hi >&3",
            "export PATH=./evil && ls",
            "export GIT_EXTERNAL_DIFF=./evil.sh; git diff",
            "LD_PRELOAD=/evil.so; ls",
            "BASH_ENV=./x; ls",
            "PATH=./evil ls",
            "declare -x F=1; ls",
            "unset HOME; ls",
            "local a=b",
            "sort --compress-program=./x data.txt",
            "file -C -m magic",
            "git -c core.pager=./x log",
            "git --exec-path=./x log",
            "git --paginate log",
            "git log -p --ext-diff",
            "sudo ls",
            "if true; then if true; then rm -rf /; fi; fi",
            // Options that write a file or change the system, alone or inside a cluster.
            "tree -o out.txt",
            "tree -ao out.txt",
            "tree -aoout.txt",
            "tree --output=out.txt",
            "tree -R -H . -L 1",
            "hostname --file /etc/hostname",
            "hostname --file=/etc/hostname",
            "hostname -F /etc/hostname",
            "hostname -F/etc/hostname",
            "hostname -fF /etc/hostname",
            "hostname -b",
            "hostname --boot",
            "hostname newname",
            "date -us @0",
            "date -s@0",
            "file -bC -m magic",
            "fd -Hx rm",
            "git cat-file --filters HEAD:x",
            // Runners and rebuilt command lines are not read-only programs.
            "ssh host ls",
            "printf / | xargs -I{} ls {}",
            "git -c alias.l='!rm -rf /' l",
        ] {
            assert!(!ro(line), "{line}");
        }
    }
}

//! What a command runs beyond its own argv: the program behind wrappers (`sudo -u x`,
//! `env A=1`, `timeout 5`, …) and runners (`xargs`, `find -exec`, `busybox`), and the command
//! strings handed to a shell (`sh -c`, `eval`, `watch`, `parallel`, `flock -c`, `env -S`).
//!
//! Each wrapper's options are read from one table, so `sudo -u root rm` skips `root` but
//! `sudo -E rm` does not skip `rm`.

use std::ops::Range;

use crate::jobs;
use crate::scripts::{self, Lang};

/// Shells whose `-c` option runs a command string.
pub const SHELLS: &[&str] = &[
    "ash", "bash", "csh", "dash", "fish", "ksh", "mksh", "sh", "tcsh", "zsh",
];

/// The program a name runs: its last path component, `/` or a Windows `\\` separating them,
/// less a Windows `.exe` (`/usr/bin/sudo` → `sudo`, `C:\\Git\\bin\\git.exe` → `git`,
/// `rm.EXE` → `rm`): Git Bash, WSL and MSYS run `rm.exe` as `rm`, so a guard naming `rm`
/// must see it.
pub fn basename(program: &str) -> &str {
    let base = program.rsplit(['/', '\\']).next().unwrap_or(program);
    match base.len().checked_sub(4) {
        Some(stem) if stem > 0 && base.is_char_boundary(stem) => {
            if base[stem..].eq_ignore_ascii_case(".exe") {
                &base[..stem]
            } else {
                base
            }
        }
        _ => base,
    }
}

/// How the words after a wrapper's options and operands are run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    /// Executed as an argv.
    Exec,
    /// Joined with blanks and run by a shell (`watch`, `parallel`).
    Joined,
}

/// One wrapper or runner: how to find the program it runs among its arguments.
struct Wrapper {
    name: &'static str,
    /// Subcommand words that must follow the program for it to run another one (`uv run`,
    /// `pnpm exec`); empty for a plain wrapper.
    sub: &'static [&'static str],
    /// Options taking the next word as their value (a short one may also glue it: `-uroot`;
    /// a long one may use `=`).
    valued: &'static [&'static str],
    /// Options meaning nothing is run (`command -v`, `taskset -p`).
    inert: &'static [&'static str],
    /// Options whose value is a command string for a shell (`env -S`, `flock -c`).
    string: &'static [&'static str],
    /// Operands between the options and the program (`timeout DURATION`, `flock FILE`).
    operands: usize,
    /// `NAME=value` words before the program are assignments (`env`).
    assignments: bool,
    /// A lone `-` is an option, not the program (`env -` is `env -i`, `sg -` a login shell).
    dash: bool,
    /// A package runner (`uv run`, `npx`): `runs` sees the program it launches, `ran_command`
    /// reads the launcher literally (see [`Found::launched`]).
    launcher: bool,
    style: Style,
}

const fn w(name: &'static str, valued: &'static [&'static str]) -> Wrapper {
    Wrapper {
        name,
        sub: &[],
        valued,
        inert: &[],
        string: &[],
        operands: 0,
        assignments: false,
        dash: false,
        launcher: false,
        style: Style::Exec,
    }
}

/// Options of `uv run` / `uv tool run` / `uvx` that take the next word as their value.
const UV_VALUED: &[&str] = &[
    "--with",
    "--with-editable",
    "--with-requirements",
    "--from",
    "-p",
    "--python",
    "--env-file",
    "--directory",
    "--project",
    "--package",
    "--extra",
    "--group",
    "--only-group",
    "--no-group",
    "--index",
    "--default-index",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--index-strategy",
    "--keyring-provider",
    "--resolution",
    "--prerelease",
    "--exclude-newer",
    "--link-mode",
    "-C",
    "--config-setting",
    "--cache-dir",
    "--config-file",
    "--color",
    "--python-platform",
    "-P",
    "--upgrade-package",
    "--reinstall-package",
    "--refresh-package",
    "--no-binary-package",
    "--no-build-package",
    "--allow-insecure-host",
];

/// Options of `npx` / `npm exec` that take the next word as their value.
const NPX_VALUED: &[&str] = &[
    "-p",
    "--package",
    "--prefix",
    "--userconfig",
    "--registry",
    "--cache",
    "-w",
    "--workspace",
    "--loglevel",
];

/// Options of `docker exec` (and podman's) that take the next word as their value.
const DOCKER_EXEC_VALUED: &[&str] = &[
    "-e",
    "--env",
    "--env-file",
    "-u",
    "--user",
    "-w",
    "--workdir",
    "--detach-keys",
];

/// Options of `docker run` / `docker create`-style runs (and podman's, and `docker compose
/// run`'s) that take the next word as their value.
const DOCKER_RUN_VALUED: &[&str] = &[
    "-e",
    "--env",
    "--env-file",
    "-u",
    "--user",
    "-w",
    "--workdir",
    "-v",
    "--volume",
    "--volumes-from",
    "--mount",
    "-p",
    "--publish",
    "--expose",
    "--name",
    "--network",
    "--net",
    "--network-alias",
    "--entrypoint",
    "-l",
    "--label",
    "--label-file",
    "--platform",
    "--pull",
    "--restart",
    "--runtime",
    "--hostname",
    "-h",
    "--add-host",
    "--dns",
    "--dns-search",
    "--dns-option",
    "--cap-add",
    "--cap-drop",
    "--device",
    "--device-cgroup-rule",
    "--group-add",
    "--security-opt",
    "--ipc",
    "--pid",
    "--uts",
    "--userns",
    "--cgroupns",
    "--cgroup-parent",
    "--cidfile",
    "--cpus",
    "--cpu-shares",
    "-c",
    "--cpuset-cpus",
    "--cpuset-mems",
    "-m",
    "--memory",
    "--memory-swap",
    "--memory-reservation",
    "--shm-size",
    "--tmpfs",
    "--ulimit",
    "--gpus",
    "--log-driver",
    "--log-opt",
    "--stop-signal",
    "--stop-timeout",
    "--health-cmd",
    "--health-interval",
    "--health-retries",
    "--health-timeout",
    "--health-start-period",
    "--link",
    "--mac-address",
    "--ip",
    "--ip6",
    "--isolation",
    "--storage-opt",
    "--sysctl",
    "--attach",
    "-a",
    "--detach-keys",
    "--pids-limit",
    "--oom-score-adj",
    "--blkio-weight",
    "--service-ports",
];

/// Options of `pnpm exec` / `pnpm dlx` that take the next word as their value.
const PNPM_VALUED: &[&str] = &[
    "-C",
    "--dir",
    "-F",
    "--filter",
    "--workspace-concurrency",
    "--reporter",
    "--package",
    "--allow-build",
];

/// A runner reached through a subcommand (`uv run`, `pnpm exec`).
const fn sub(
    name: &'static str,
    sub: &'static [&'static str],
    valued: &'static [&'static str],
) -> Wrapper {
    Wrapper {
        sub,
        launcher: true,
        ..w(name, valued)
    }
}

/// A package runner named by its own program (`uvx`, `npx`, `bunx`).
const fn launcher(name: &'static str, valued: &'static [&'static str]) -> Wrapper {
    Wrapper {
        launcher: true,
        ..w(name, valued)
    }
}

/// Every wrapper and runner this crate sees through (`find -exec` and `busybox` are handled in
/// [`runs_in`]). Options not listed are taken as flags without a value.
const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        inert: &[
            "-e",
            "--edit",
            "-l",
            "--list",
            "-v",
            "--validate",
            "-K",
            "-V",
            "--version",
        ],
        ..w(
            "sudo",
            &[
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
                "-R",
                "--chroot",
            ],
        )
    },
    w("doas", &["-u", "-C"]),
    Wrapper {
        string: &["-S", "--split-string"],
        assignments: true,
        dash: true,
        // `-P` is the BSD search path; `-a`/`--argv0` GNU's name for the program.
        ..w(
            "env",
            &[
                "-u", "--unset", "-C", "--chdir", "-P", "-a", "--argv0", "-L",
            ],
        )
    },
    w("nice", &["-n", "--adjustment"]),
    Wrapper {
        inert: &["-p", "--pid", "-P", "--pgid", "-u", "--uid"],
        ..w("ionice", &["-c", "--class", "-n", "--classdata"])
    },
    Wrapper {
        operands: 1,
        ..w("timeout", &["-s", "--signal", "-k", "--kill-after"])
    },
    w("nohup", &[]),
    w("time", &["-f", "--format", "-o", "--output"]),
    Wrapper {
        inert: &["-v", "-V"],
        ..w("command", &[])
    },
    w("builtin", &[]),
    w("exec", &["-a"]),
    w(
        "stdbuf",
        &["-i", "--input", "-o", "--output", "-e", "--error"],
    ),
    w("setsid", &[]),
    Wrapper {
        string: &["-c", "--command"],
        operands: 1,
        ..w(
            "flock",
            &["-w", "--wait", "--timeout", "-E", "--conflict-exit-code"],
        )
    },
    Wrapper {
        inert: &["-p", "--pid", "-m", "--max"],
        operands: 1,
        ..w(
            "chrt",
            &[
                "-T",
                "--sched-runtime",
                "-P",
                "--sched-period",
                "-D",
                "--sched-deadline",
            ],
        )
    },
    Wrapper {
        inert: &["-p", "--pid"],
        operands: 1,
        ..w("taskset", &[])
    },
    w(
        "xargs",
        &[
            "-a",
            "--arg-file",
            "-d",
            "--delimiter",
            "-E",
            "-I",
            "-L",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-s",
            "--max-chars",
            "--process-slot-var",
        ],
    ),
    Wrapper {
        style: Style::Joined,
        ..w(
            "parallel",
            &[
                "-j",
                "--jobs",
                "-P",
                "--max-procs",
                "-S",
                "--sshlogin",
                "--sshloginfile",
                "--slf",
                "-a",
                "--arg-file",
                "-d",
                "--delimiter",
                "-E",
                "-I",
                "--colsep",
                "-C",
                "-n",
                "-N",
                "-L",
                "--max-args",
                "--max-lines",
                "--delay",
                "--timeout",
                "--joblog",
                "--results",
                "--res",
                "--tmpdir",
                "--workdir",
                "--wd",
                "--halt",
                "--memfree",
                "--load",
                "--retries",
                "--tagstring",
                "--basefile",
                "--bf",
                "--env",
                "--shebang-wrap",
            ],
        )
    },
    Wrapper {
        style: Style::Joined,
        ..w("watch", &["-n", "--interval", "-q", "--equexit"])
    },
    sub("uv", &["run"], UV_VALUED),
    sub("uv", &["tool", "run"], UV_VALUED),
    launcher("uvx", UV_VALUED),
    Wrapper {
        string: &["-c", "--call"],
        ..launcher("npx", NPX_VALUED)
    },
    Wrapper {
        string: &["-c", "--call"],
        ..sub("npm", &["exec"], NPX_VALUED)
    },
    Wrapper {
        string: &["-c", "--call"],
        ..sub("npm", &["x"], NPX_VALUED)
    },
    // `pnpm exec -c` runs its command through a shell.
    Wrapper {
        string: &["-c", "--shell-mode"],
        ..sub("pnpm", &["exec"], PNPM_VALUED)
    },
    Wrapper {
        string: &["-c", "--shell-mode"],
        ..sub("pnpm", &["dlx"], PNPM_VALUED)
    },
    launcher("bunx", &["-p", "--package"]),
    sub("bun", &["x"], &["-p", "--package"]),
    sub("yarn", &["exec"], &[]),
    sub("yarn", &["dlx"], &["-p", "--package"]),
    sub("rye", &["run"], &[]),
    // Coverage and watch tools that run the command they are given: `c8 rm -rf /`, `nyc …`,
    // `nodemon --exec 'cmd'` (a string for a shell; without it nodemon runs a script).
    w(
        "c8",
        &[
            "-r",
            "--reporter",
            "-o",
            "--reports-dir",
            "--report-dir",
            "--temp-directory",
            "-n",
            "--include",
            "-x",
            "--exclude",
            "--src",
        ],
    ),
    w(
        "nyc",
        &[
            "-r",
            "--reporter",
            "--report-dir",
            "--temp-dir",
            "-n",
            "--include",
            "-x",
            "--exclude",
            "-i",
            "--require",
            "--extension",
            "-e",
        ],
    ),
    Wrapper {
        string: &["--exec", "-x"],
        ..w(
            "nodemon",
            &[
                "-w", "--watch", "-e", "--ext", "-i", "--ignore", "-d", "--delay", "--signal",
                "--config",
            ],
        )
    },
    // `concurrently 'cmd a' 'cmd b'`: each argument is a command line for a shell. Joined, the
    // first one is read as the line's program (what the guards need most: `concurrently 'rm -rf
    // /' …`); the ones after it read as its arguments.
    Wrapper {
        style: Style::Joined,
        ..w(
            "concurrently",
            &[
                "-n",
                "--names",
                "-c",
                "--prefix-colors",
                "-p",
                "--prefix",
                "-s",
                "--success",
                "--kill-signal",
                "--restart-tries",
                "--restart-after",
                "--max-processes",
                "-m",
            ],
        )
    },
    // Credential helpers that run a command with a profile's credentials.
    Wrapper {
        operands: 1,
        ..sub(
            "aws-vault",
            &["exec"],
            &[
                "-d",
                "--duration",
                "-t",
                "--mfa-token",
                "--region",
                "--backend",
            ],
        )
    },
    sub(
        "aws-sso",
        &["exec"],
        &[
            "-A",
            "--arn",
            "-p",
            "--profile",
            "-a",
            "--account",
            "-R",
            "--role",
            "-S",
            "--sso",
        ],
    ),
    // `docker exec CONTAINER cmd …` and `docker run IMAGE cmd …` (podman's the same) run the
    // command inside a container, on the host's kernel, its devices when privileged and the
    // volumes it mounts: guards read it like any other argv.
    Wrapper {
        operands: 1,
        ..sub("docker", &["exec"], DOCKER_EXEC_VALUED)
    },
    Wrapper {
        operands: 1,
        ..sub("docker", &["container", "exec"], DOCKER_EXEC_VALUED)
    },
    Wrapper {
        operands: 1,
        ..sub("docker", &["run"], DOCKER_RUN_VALUED)
    },
    Wrapper {
        operands: 1,
        ..sub("docker", &["container", "run"], DOCKER_RUN_VALUED)
    },
    Wrapper {
        operands: 1,
        ..sub("docker", &["compose", "exec"], DOCKER_EXEC_VALUED)
    },
    Wrapper {
        operands: 1,
        ..sub("docker", &["compose", "run"], DOCKER_RUN_VALUED)
    },
    Wrapper {
        operands: 1,
        ..sub("docker-compose", &["exec"], DOCKER_EXEC_VALUED)
    },
    Wrapper {
        operands: 1,
        ..sub("docker-compose", &["run"], DOCKER_RUN_VALUED)
    },
    Wrapper {
        operands: 1,
        ..sub("podman", &["exec"], DOCKER_EXEC_VALUED)
    },
    Wrapper {
        operands: 1,
        ..sub("podman", &["run"], DOCKER_RUN_VALUED)
    },
    // `git submodule foreach 'cmd'`: git runs the joined words in a shell in each submodule.
    Wrapper {
        style: Style::Joined,
        ..sub("git", &["submodule", "foreach"], &[])
    },
    sub(
        "poetry",
        &["run"],
        &["-C", "--directory", "-P", "--project"],
    ),
    sub("pipenv", &["run"], &[]),
    sub("pdm", &["run"], &["-p", "--project"]),
    w(
        "strace",
        &[
            "-e",
            "-o",
            "-p",
            "-s",
            "-u",
            "-E",
            "-a",
            "-b",
            "-I",
            "-O",
            "-S",
            "-P",
            "-X",
            "-U",
            "--output",
            "--attach",
            "--string-limit",
            "--user",
            "--env",
            "--trace",
            "--signal",
            "--status",
            "--trace-path",
            "--columns",
            "--summary-columns",
        ],
    ),
    w(
        "ltrace",
        &[
            "-e",
            "-o",
            "-p",
            "-s",
            "-u",
            "-n",
            "-a",
            "-A",
            "-D",
            "-F",
            "-l",
            "-x",
            "--output",
            "--indent",
            "--align",
            "--config",
            "--library",
        ],
    ),
    // `sg GROUP -c 'cmd'` and `sg GROUP cmd …`: sg hands the command to /bin/sh.
    Wrapper {
        string: &["-c"],
        operands: 1,
        dash: true,
        style: Style::Joined,
        ..w("sg", &[])
    },
    Wrapper {
        operands: 1,
        ..w("chroot", &["--userspec", "--groups"])
    },
    // firejail's valued options are written `--name=value`.
    w("firejail", &[]),
    w(
        "systemd-run",
        &[
            "-u",
            "--unit",
            "-p",
            "--property",
            "-H",
            "--host",
            "-M",
            "--machine",
            "--description",
            "--slice",
            "-E",
            "--setenv",
            "--uid",
            "--gid",
            "--nice",
            "-D",
            "--working-directory",
            "--on-active",
            "--on-boot",
            "--on-startup",
            "--on-unit-active",
            "--on-unit-inactive",
            "--on-calendar",
            "--timer-property",
            "--path-property",
            "--socket-property",
            "--service-type",
        ],
    ),
    // `ssh host CMD …`: the remote shell runs the words joined with blanks.
    Wrapper {
        inert: &["-V", "-G"],
        operands: 1,
        style: Style::Joined,
        ..w(
            "ssh",
            &[
                "-B", "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O",
                "-o", "-p", "-Q", "-R", "-S", "-W", "-w",
            ],
        )
    },
];

/// The wrapper or runner at `words[start]`, and the index of its last word (the program, or
/// the last word of its subcommand: `uv tool run`).
fn wrapper<S: AsRef<str>>(
    words: &[S],
    start: usize,
    end: usize,
) -> Option<(&'static Wrapper, usize)> {
    let program = basename(words.get(start)?.as_ref());
    WRAPPERS
        .iter()
        .filter(|w| w.name == program)
        .find(|w| {
            w.sub.iter().enumerate().all(|(k, s)| {
                start + 1 + k < end && words.get(start + 1 + k).is_some_and(|x| x.as_ref() == *s)
            })
        })
        .map(|w| (w, start + w.sub.len()))
}

/// True when some wrapper or runner is named `program`.
fn is_wrapper_name(program: &str) -> bool {
    WRAPPERS.iter().any(|w| w.name == program)
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

/// What reading a wrapper's arguments found.
enum Inner {
    /// The program runs at this word index.
    Program(usize),
    /// A command string for a shell is the word at this index, from this byte on (a value
    /// glued to its option: `-S'rm x'`, `--split-string=rm`).
    String(usize, usize),
    /// The words from this index on are joined and run by a shell.
    Joined(usize),
    /// Nothing is run (an inert option, or no program given).
    Nothing,
}

/// Reads the options of the wrapper at `words[start]` (within `..end`).
fn inner<S: AsRef<str>>(wr: &Wrapper, words: &[S], start: usize, end: usize) -> Inner {
    let at = |i: usize| words[i].as_ref();
    let mut i = start + 1;
    while i < end {
        let arg = at(i);
        if arg == "--" {
            i += 1;
            break;
        }
        if wr.assignments && is_assignment(arg) {
            i += 1;
            continue;
        }
        if wr.name == "parallel" && arg.starts_with(":::") {
            break;
        }
        if arg == "-" && wr.dash {
            i += 1;
            continue;
        }
        if !arg.starts_with('-') || arg == "-" {
            break;
        }
        let (name, glued) = match arg.split_once('=') {
            Some((n, _)) if arg.starts_with("--") => (n, true),
            _ => (arg, false),
        };
        if wr.inert.contains(&name) {
            return Inner::Nothing;
        }
        let value_at = if arg.starts_with("--") {
            (wr.valued.contains(&name) || wr.string.contains(&name)) && !glued
        } else {
            // A short cluster: a valued letter takes the rest of the word, else the next word.
            let mut next_word = false;
            for (k, c) in arg.char_indices().skip(1) {
                let mut buf = [0u8; 8];
                let flag = format!("-{}", c.encode_utf8(&mut buf));
                if wr.inert.contains(&flag.as_str()) {
                    return Inner::Nothing;
                }
                if wr.string.contains(&flag.as_str()) {
                    let rest = k + c.len_utf8();
                    return if rest < arg.len() {
                        Inner::String(i, rest)
                    } else if i + 1 < end {
                        Inner::String(i + 1, 0)
                    } else {
                        Inner::Nothing
                    };
                }
                if wr.valued.contains(&flag.as_str()) {
                    next_word = k + c.len_utf8() == arg.len();
                    break;
                }
            }
            next_word
        };
        if arg.starts_with("--") && wr.string.contains(&name) {
            return match (glued, i + 1 < end) {
                (true, _) => Inner::String(i, name.len() + 1),
                (false, true) => Inner::String(i + 1, 0),
                (false, false) => Inner::Nothing,
            };
        }
        i += if value_at { 2 } else { 1 };
    }
    // `flock FILE -c STRING` puts the string option after the operand.
    i += wr.operands;
    // `aws-vault exec PROFILE -- cmd`: the end of options may follow the operands.
    if wr.operands > 0 && i < end && at(i) == "--" {
        i += 1;
    }
    if i >= end {
        return Inner::Nothing;
    }
    if !wr.string.is_empty() && wr.operands > 0 && wr.string.contains(&at(i)) {
        return if i + 1 < end {
            Inner::String(i + 1, 0)
        } else {
            Inner::Nothing
        };
    }
    match wr.style {
        Style::Exec => Inner::Program(i),
        Style::Joined if wr.name == "watch" && has_exec_flag(words, start, i) => Inner::Program(i),
        Style::Joined if wr.name != "parallel" => Inner::Joined(i),
        Style::Joined => {
            let cmd_end = (i..end).find(|&k| at(k).starts_with(":::")).unwrap_or(end);
            if cmd_end == i {
                // `parallel ::: "cmd a" "cmd b"`: each argument is a command line.
                Inner::Nothing
            } else {
                Inner::Joined(i)
            }
        }
    }
}

/// `watch -x` / `--exec` runs its arguments directly instead of through `sh -c`.
fn has_exec_flag<S: AsRef<str>>(words: &[S], start: usize, end: usize) -> bool {
    words[start + 1..end].iter().any(|a| {
        let a = a.as_ref();
        a == "--exec" || (a.starts_with('-') && !a.starts_with("--") && a.contains('x'))
    })
}

/// What one command runs besides its own argv, found from its word values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Found {
    /// Word ranges that are argvs of programs run (the wrapped program, `find -exec`'s command).
    pub runs: Vec<Range<usize>>,
    /// Command strings for a shell: word ranges joined with blanks (`sh -c` has one word),
    /// and how many bytes of the first word to skip (a value glued to its option).
    pub strings: Vec<(Range<usize>, usize)>,
    /// A shell reading its commands from stdin (`bash`, `sh -s`): the heredoc or here-string
    /// feeding it is a command string.
    pub stdin_shell: bool,
    /// Command lines rebuilt from the words: `parallel`'s command with its `:::` arguments
    /// substituted, the body of a git alias the line defines and invokes.
    pub texts: Vec<String>,
    /// Commands run once per item their runner reads from stdin (`xargs`, `parallel` without
    /// `:::`): the walker substitutes the items when it knows them (a here-string, `echo`).
    pub templates: Vec<jobs::Template>,
    /// A runner substitutes arguments into more commands than [`jobs::MAX_JOBS`].
    pub too_many: bool,
    /// The ranges of `runs` reached through a package runner (`uv run pytest`, `npx jest`):
    /// the original reads those launchers literally for `ran_command`, and so do we.
    pub launched: Vec<Range<usize>>,
    /// Interpreter program texts (`python -c TEXT`, `perl -e TEXT`): the language, the word's
    /// index and how many bytes of it to skip (`-eTEXT`). The walker reads them for the
    /// commands they run (see `scripts.rs`).
    pub scripts: Vec<(Lang, usize, usize)>,
    /// An interpreter reading its program from stdin (`python3 - <<EOF`): the heredoc or
    /// here-string feeding it is read as that program.
    pub stdin_script: Option<Lang>,
}

/// pnpm's own commands and their aliases (pnpm(1)): any other first word runs a package's
/// binary or a script of that name (`pnpm c8 …`, `pnpm test`).
const PNPM_COMMANDS: &[&str] = &[
    "access",
    "add",
    "approve-builds",
    "audit",
    "bin",
    "bugs",
    "c",
    "cat-file",
    "cat-index",
    "config",
    "create",
    "dedupe",
    "deploy",
    "deprecate",
    "dist-tag",
    "dlx",
    "docs",
    "doctor",
    "env",
    "exec",
    "fetch",
    "find-hash",
    "get",
    "help",
    "home",
    "i",
    "ignored-builds",
    "import",
    "info",
    "init",
    "install",
    "install-test",
    "it",
    "licenses",
    "link",
    "list",
    "ll",
    "ln",
    "login",
    "logout",
    "ls",
    "m",
    "multi",
    "outdated",
    "owner",
    "pack",
    "patch",
    "patch-commit",
    "patch-remove",
    "ping",
    "prune",
    "publish",
    "rb",
    "rebuild",
    "recursive",
    "remove",
    "repo",
    "rm",
    "root",
    "run",
    "run-script",
    "sbom",
    "search",
    "self-update",
    "server",
    "set",
    "setup",
    "show",
    "star",
    "start",
    "store",
    "t",
    "team",
    "test",
    "token",
    "tst",
    "un",
    "undeprecate",
    "uninstall",
    "unlink",
    "unpublish",
    "unstar",
    "up",
    "update",
    "upgrade",
    "v",
    "version",
    "view",
    "whoami",
    "why",
];

/// pnpm's global options that take the next word as their value.
const PNPM_GLOBAL_VALUED: &[&str] = &[
    "-C",
    "--dir",
    "-F",
    "--filter",
    "--filter-prod",
    "--reporter",
    "--loglevel",
    "--workspace-concurrency",
    "--test-pattern",
    "--changed-files-ignore-pattern",
];

/// The word at which `pnpm [options] BIN …` starts the binary it runs, when the first word
/// after pnpm's options is none of pnpm's commands.
fn pnpm_bin<S: AsRef<str>>(words: &[S], start: usize, end: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < end {
        let arg = words[i].as_ref();
        if !arg.starts_with('-') || arg == "-" {
            break;
        }
        i += if PNPM_GLOBAL_VALUED.contains(&arg) {
            2
        } else {
            1
        };
    }
    let word = words.get(i).filter(|_| i < end)?.as_ref();
    (!PNPM_COMMANDS.contains(&word)).then_some(i)
}

/// The command of `kubectl [options] exec POD [options] -- CMD …` (also `oc`): the words after
/// the `--`, run inside the pod's container.
fn kubectl_exec<S: AsRef<str>>(words: &[S], start: usize, end: usize) -> Option<usize> {
    let dashes = (start + 1..end).find(|&k| words[k].as_ref() == "--")?;
    words[start + 1..dashes]
        .iter()
        .any(|w| w.as_ref() == "exec")
        .then_some(dashes + 1)
        .filter(|&i| i < end)
}

/// Finds everything `words` (a command's word values, program first) runs. Linear in the
/// number of words times the nesting of runners (`find -exec` inside `xargs`).
#[cfg(test)]
pub(crate) fn runs_in<S: AsRef<str>>(words: &[S]) -> Found {
    runs_in_env(words, &[])
}

/// [`runs_in`], knowing the assignments before the command (`GIT_CONFIG_COUNT=1 … git x`):
/// git reads aliases from its environment too.
pub(crate) fn runs_in_env<S: AsRef<str>>(words: &[S], env: &[(String, String)]) -> Found {
    let mut found = Found::default();
    // Most commands run nothing else: answer those without allocating.
    let Some(first) = words.first() else {
        return found;
    };
    let program = basename(first.as_ref());
    if !is_wrapper_name(program)
        && !matches!(
            program,
            "find" | "busybox" | "eval" | "git" | "kubectl" | "oc"
        )
        && !SHELLS.contains(&program)
        && scripts::lang(program).is_none()
    {
        return found;
    }
    // Each range to read, and whether a package runner launched it.
    let mut todo = Vec::with_capacity(4);
    todo.push((0..words.len(), false));
    while let Some((range, launched)) = todo.pop() {
        let (start, end) = (range.start, range.end);
        if start >= end {
            continue;
        }
        let program = basename(words[start].as_ref());
        if program == "pnpm"
            && let Some(i) = pnpm_bin(words, start, end)
        {
            // `pnpm c8 rm -rf /`: pnpm runs a package's binary (or a script) named by a word
            // that is none of its own commands.
            found.launched.push(i..end);
            found.runs.push(i..end);
            todo.push((i..end, true));
        } else if let Some((wr, at)) = wrapper(words, start, end) {
            match inner(wr, words, at, end) {
                Inner::Program(i) => {
                    let launched = launched || wr.launcher;
                    if launched {
                        found.launched.push(i..end);
                    }
                    found.runs.push(i..end);
                    todo.push((i..end, launched));
                    if wr.name == "xargs" {
                        found
                            .templates
                            .extend(jobs::xargs_template(words, at, i, end));
                    }
                }
                // `env -S STRING ARGS…` runs the split string followed by the arguments.
                Inner::String(i, skip) if wr.name == "env" => found.strings.push((i..end, skip)),
                Inner::String(i, skip) => found.strings.push((i..i + 1, skip)),
                Inner::Joined(i) if wr.name == "parallel" => {
                    parallel(words, at, i, end, &mut found)
                }
                Inner::Joined(i) => found.strings.push((i..end, 0)),
                Inner::Nothing => {
                    if wr.name == "parallel" {
                        parallel_commands(words, start, end, &mut found);
                    }
                }
            }
        } else if program == "find" {
            for r in find_exec(words, start, end) {
                if launched {
                    found.launched.push(r.clone());
                }
                found.runs.push(r.clone());
                todo.push((r, launched));
            }
        } else if program == "busybox" {
            if start + 1 < end && !words[start + 1].as_ref().starts_with('-') {
                if launched {
                    found.launched.push(start + 1..end);
                }
                found.runs.push(start + 1..end);
                todo.push((start + 1..end, launched));
            }
        } else if program == "eval" {
            if start + 1 < end {
                found.strings.push((start + 1..end, 0));
            }
        } else if program == "git" {
            found.texts.extend(jobs::git_alias(words, start, end, env));
        } else if matches!(program, "kubectl" | "oc") {
            if let Some(i) = kubectl_exec(words, start, end) {
                found.runs.push(i..end);
                todo.push((i..end, launched));
            }
        } else if SHELLS.contains(&program) {
            match shell_string(words, start, end) {
                ShellInput::String(i) => found.strings.push((i..i + 1, 0)),
                ShellInput::Stdin => found.stdin_shell = true,
                ShellInput::File => {}
            }
        } else if let Some(lang) = scripts::lang(program) {
            match scripts::input(lang, words, start, end) {
                scripts::Input::Text(texts) => {
                    found
                        .scripts
                        .extend(texts.into_iter().map(|(i, skip)| (lang, i, skip)));
                }
                scripts::Input::Stdin => found.stdin_script = Some(lang),
                scripts::Input::File => {}
            }
        }
    }
    found.runs.sort_by_key(|r| r.start);
    found.launched.sort_by_key(|r| r.start);
    found.strings.sort_by_key(|(r, _)| r.start);
    found
}

/// `parallel [opts] CMD … ::: args` (`words[at]` is parallel, its command at `cmd`): GNU
/// parallel joins the words and runs them with a shell, moreutils' parallel (and `-q`) runs
/// them as an argv; both readings count. With literal `:::` arguments the commands that
/// would run are rebuilt with them substituted; without, the command is read as written, and
/// the walker substitutes what stdin holds when it knows it.
fn parallel<S: AsRef<str>>(words: &[S], at: usize, cmd: usize, end: usize, found: &mut Found) {
    let cmd_end = (cmd..end)
        .find(|&k| words[k].as_ref().starts_with(":::"))
        .unwrap_or(end);
    found.runs.push(cmd..cmd_end);
    let Some((spec, split)) = jobs::parallel_spec(words, at, cmd) else {
        found.strings.push((cmd..cmd_end, 0));
        return;
    };
    if cmd_end == end {
        found.strings.push((cmd..cmd_end, 0));
        found.templates.push(jobs::Template {
            command: cmd..cmd_end,
            spec,
            split,
            per: 1,
        });
        return;
    }
    match jobs::parallel_sources(words, cmd_end, end) {
        Some(Ok(list)) => match jobs::expand(words, cmd..cmd_end, &spec, &list) {
            Some(texts) => found.texts.extend(texts),
            None => found.strings.push((cmd..cmd_end, 0)),
        },
        Some(Err(())) => {
            found.too_many = true;
            found.strings.push((cmd..cmd_end, 0));
        }
        None => found.strings.push((cmd..cmd_end, 0)),
    }
}

/// `parallel ::: "cmd a" "cmd b"` (no command given): each argument is a command line.
fn parallel_commands<S: AsRef<str>>(words: &[S], start: usize, end: usize, found: &mut Found) {
    let Some(sep) = (start..end).find(|&k| words[k].as_ref().starts_with(":::")) else {
        return;
    };
    for (k, word) in words.iter().enumerate().take(end).skip(sep + 1) {
        if !word.as_ref().starts_with(":::") {
            found.strings.push((k..k + 1, 0));
        }
    }
}

/// The commands of `find … -exec CMD … ;|+` (also `-execdir`, `-ok`, `-okdir`).
fn find_exec<S: AsRef<str>>(words: &[S], start: usize, end: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = start + 1;
    while i < end {
        if matches!(words[i].as_ref(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let cmd = i + 1;
            let stop = (cmd..end)
                .find(|&k| matches!(words[k].as_ref(), ";" | "+"))
                .unwrap_or(end);
            if stop > cmd {
                out.push(cmd..stop);
            }
            i = stop + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// Where a shell invocation takes its commands from.
enum ShellInput {
    /// `-c STRING`: the string at this index.
    String(usize),
    /// Standard input (no script operand, or `-s`).
    Stdin,
    /// A script file, or something this reader does not follow.
    File,
}

fn shell_string<S: AsRef<str>>(words: &[S], start: usize, end: usize) -> ShellInput {
    let mut i = start + 1;
    while i < end {
        let word = words[i].as_ref();
        if word == "--" || word == "-" {
            return if word == "-" || i + 1 >= end {
                ShellInput::Stdin
            } else {
                ShellInput::File
            };
        }
        if !(word.starts_with('-') || word.starts_with('+')) || word.len() < 2 {
            return ShellInput::File;
        }
        let letters = &word[1..];
        if word.starts_with('-') && letters.bytes().all(|b| b.is_ascii_lowercase()) {
            if letters.contains('c') {
                return if i + 1 < end {
                    ShellInput::String(i + 1)
                } else {
                    ShellInput::File
                };
            }
            if letters.contains('s') {
                return ShellInput::Stdin;
            }
        }
        // `-o opt` / `-O opt` (also `+o`) take the next word as the option's name.
        i += if word.ends_with(['o', 'O']) && !word.starts_with("--") {
            2
        } else {
            1
        };
    }
    ShellInput::Stdin
}

/// How many leading argv elements are wrappers and their options: the start of the program
/// that finally runs when wrappers (`sudo`, `env`, `timeout`, `xargs`, …) are followed,
/// `argv.len()` when they run nothing, 0 when `argv[0]` is not a wrapper.
pub fn wrapper_prefix_len<S: AsRef<str>>(argv: &[S]) -> usize {
    let mut i = 0;
    while let Some(head) = argv.get(i) {
        let program = basename(head.as_ref());
        let next = match wrapper(argv, i, argv.len()) {
            Some((wr, at)) => match inner(wr, argv, at, argv.len()) {
                Inner::Program(k) => k,
                _ => return argv.len(),
            },
            None if program == "busybox" && i + 1 < argv.len() => i + 1,
            None => break,
        };
        i = next;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(line: &str) -> Vec<String> {
        let words: Vec<&str> = line.split(' ').collect();
        runs_in(&words)
            .runs
            .iter()
            .map(|r| words[r.clone()].join(" "))
            .collect()
    }

    fn strings(line: &str) -> Vec<String> {
        let words: Vec<&str> = line.split(' ').collect();
        runs_in(&words)
            .strings
            .iter()
            .map(|(r, skip)| words[r.clone()].join(" ")[*skip..].to_owned())
            .collect()
    }

    #[test]
    fn wrappers_with_their_options() {
        let cases: &[(&str, &[&str])] = &[
            ("sudo -u root rm -rf x", &["rm -rf x"]),
            ("sudo -uroot rm x", &["rm x"]),
            ("sudo -E rm x", &["rm x"]),
            ("sudo --user=root rm x", &["rm x"]),
            ("sudo -l rm", &[]),
            ("doas -u admin rm x", &["rm x"]),
            ("env -i A=1 -u B rm x", &["rm x"]),
            ("env A=1 B=2 make", &["make"]),
            ("nice -n 5 rm x", &["rm x"]),
            ("nice -5 rm x", &["rm x"]),
            ("ionice -c3 rm x", &["rm x"]),
            ("ionice -c 2 -n 7 rm x", &["rm x"]),
            ("ionice -p 42", &[]),
            ("timeout 5 rm x", &["rm x"]),
            ("timeout -s KILL -k 1 5s rm x", &["rm x"]),
            ("timeout --preserve-status 5 rm x", &["rm x"]),
            ("nohup rm x", &["rm x"]),
            ("time -p rm x", &["rm x"]),
            ("command rm x", &["rm x"]),
            ("command -p rm x", &["rm x"]),
            ("command -v rm", &[]),
            ("builtin cd x", &["cd x"]),
            ("exec -a name rm x", &["rm x"]),
            ("stdbuf -oL -e 0 rm x", &["rm x"]),
            ("setsid -f rm x", &["rm x"]),
            ("flock /tmp/l rm x", &["rm x"]),
            ("flock -w 5 /tmp/l rm x", &["rm x"]),
            ("chrt -f 10 rm x", &["rm x"]),
            ("chrt -p 10 42", &[]),
            ("taskset -c 0,1 rm x", &["rm x"]),
            ("taskset 0x3 rm x", &["rm x"]),
            ("taskset -p 0x3 42", &[]),
            ("xargs rm -rf", &["rm -rf"]),
            ("xargs -0 -n 1 -P 4 -I {} rm {}", &["rm {}"]),
            ("xargs -i rm {}", &["rm {}"]),
            ("xargs", &[]),
            ("busybox rm -rf x", &["rm -rf x"]),
            ("busybox --list", &[]),
            ("watch -x rm x", &["rm x"]),
            (
                "sudo env A=1 timeout 5 rm x",
                &["env A=1 timeout 5 rm x", "timeout 5 rm x", "rm x"],
            ),
            (
                "find . -name *.o -exec rm -rf {} + -exec sudo rm {} ;",
                &["rm -rf {}", "sudo rm {}", "rm {}"],
            ),
            ("find . -execdir rm {} ;", &["rm {}"]),
            ("find . -ok rm {} ;", &["rm {}"]),
            ("find . -name x", &[]),
            ("git push", &[]),
            ("sudo", &[]),
            ("sudo --", &[]),
            ("env - rm x", &["rm x"]),
            ("env -i rm x", &["rm x"]),
            ("env -P /bin rm x", &["rm x"]),
            ("env -a name rm x", &["rm x"]),
            ("env --argv0 name rm x", &["rm x"]),
            ("uv run rm x", &["rm x"]),
            ("uv run --with requests -p 3.12 rm x", &["rm x"]),
            ("uv run -- rm x", &["rm x"]),
            ("uv tool run --from pkg rm x", &["rm x"]),
            ("uv sync", &[]),
            ("uvx --python 3.12 rm x", &["rm x"]),
            ("npx --yes -p pkg rm x", &["rm x"]),
            ("npm exec -- rm x", &["rm x"]),
            ("npm install x", &[]),
            ("pnpm exec rm x", &["rm x"]),
            ("pnpm dlx rm x", &["rm x"]),
            ("pnpm install", &[]),
            ("bunx rm x", &["rm x"]),
            ("bun x rm x", &["rm x"]),
            ("poetry run rm x", &["rm x"]),
            ("poetry install", &[]),
            ("strace -f -e trace=file -o log rm x", &["rm x"]),
            ("ltrace -o log -e malloc rm x", &["rm x"]),
            ("chroot /mnt rm x", &["rm x"]),
            ("chroot --userspec=a:b /mnt rm x", &["rm x"]),
            ("chroot /mnt", &[]),
            ("firejail --net=none --private rm x", &["rm x"]),
            (
                "systemd-run --user -p MemoryMax=1G --unit x -E A=1 rm x",
                &["rm x"],
            ),
            ("parallel rm -rf ::: a b", &["rm -rf"]),
            ("parallel -j 4 rm ::: a", &["rm"]),
            ("yarn exec rm x", &["rm x"]),
            ("yarn dlx -p pkg rm x", &["rm x"]),
            ("yarn install", &[]),
            ("rye run rm x", &["rm x"]),
            ("npx c8 -r text rm x", &["c8 -r text rm x", "rm x"]),
            ("nyc --reporter lcov rm x", &["rm x"]),
            ("nodemon app.js", &["app.js"]),
            (
                "aws-vault exec prod -- aws s3 rb s3://b",
                &["aws s3 rb s3://b"],
            ),
            ("aws-vault exec prod aws s3 ls", &["aws s3 ls"]),
            ("aws-sso exec -A prod aws s3 ls", &["aws s3 ls"]),
            ("pnpm c8 rm -rf /", &["c8 rm -rf /", "rm -rf /"]),
            (
                "pnpm --silent wrangler kv delete k",
                &["wrangler kv delete k"],
            ),
            ("pnpm -C pkg jest --ci", &["jest --ci"]),
            ("pnpm test", &[]),
            ("pnpm rm lodash", &[]),
            ("pnpm publish", &[]),
            ("pnpm --filter web install", &[]),
            ("docker exec -it -u root c1 rm -rf /data", &["rm -rf /data"]),
            (
                "docker run --rm --privileged -v /dev:/dev alpine mkfs.ext4 /dev/sdb1",
                &["mkfs.ext4 /dev/sdb1"],
            ),
            ("docker run -it ubuntu", &[]),
            ("docker compose exec db dropdb app", &["dropdb app"]),
            ("podman exec c1 wipefs -a /dev/sdb", &["wipefs -a /dev/sdb"]),
            ("docker ps", &[]),
            (
                "kubectl exec pod -- wipefs -a /dev/sdb",
                &["wipefs -a /dev/sdb"],
            ),
            (
                "kubectl -n prod exec -it pod -c app -- rm -rf /data",
                &["rm -rf /data"],
            ),
            ("kubectl get pods -- x", &[]),
            ("kubectl exec pod", &[]),
        ];
        for (line, expected) in cases {
            assert_eq!(runs(line), *expected, "{line}");
        }
    }

    #[test]
    fn program_names_on_windows() {
        assert_eq!(basename("/usr/bin/rm"), "rm");
        assert_eq!(basename("rm.exe"), "rm");
        assert_eq!(basename("C:\\Program Files\\Git\\bin\\git.EXE"), "git");
        assert_eq!(basename("docker.exe"), "docker");
        assert_eq!(basename(".exe"), ".exe");
        assert_eq!(basename("rm"), "rm");
        assert_eq!(runs("sudo.exe rm.exe -rf x"), ["rm.exe -rf x"]);
    }

    #[test]
    fn command_strings() {
        let cases: &[(&str, &[&str])] = &[
            ("bash -c x", &["x"]),
            ("/bin/sh -lc x", &["x"]),
            ("zsh -xc x", &["x"]),
            ("bash -o pipefail -c x", &["x"]),
            ("bash -eo pipefail -c x", &["x"]),
            ("bash -l script.sh", &[]),
            ("bash script.sh -c x", &[]),
            ("bash -- -c x", &[]),
            ("bash -c", &[]),
            ("eval a b", &["a b"]),
            ("eval", &[]),
            ("sudo bash -c x", &["x"]),
            ("xargs sh -c x", &["x"]),
            ("watch rm -rf x", &["rm -rf x"]),
            ("watch -n 5 rm x", &["rm x"]),
            ("parallel ::: a b", &["a", "b"]),
            ("parallel rm -rf :::: list", &["rm -rf"]),
            ("parallel --pipe rm -rf ::: a", &["rm -rf"]),
            ("parallel rm -rf", &["rm -rf"]),
            ("flock /tmp/l -c x", &["x"]),
            ("flock -c x", &["x"]),
            ("env -S x", &["x"]),
            ("env --split-string=x", &["x"]),
            ("env -Sx", &["x"]),
            ("env -S rm -rf /", &["rm -rf /"]),
            ("env - -S x", &["x"]),
            ("sg wheel -c x", &["x"]),
            ("sg - wheel rm -rf /", &["rm -rf /"]),
            ("ssh -p 22 -i key host rm -rf /", &["rm -rf /"]),
            ("ssh -o StrictHostKeyChecking=no -J jump host x", &["x"]),
            ("ssh host", &[]),
            ("ssh -V host x", &[]),
            ("npx -c x", &["x"]),
            ("npm exec -c x", &["x"]),
            ("pnpm exec -c x", &["x"]),
            ("nodemon --exec x", &["x"]),
            ("concurrently -n a,b x y", &["x y"]),
            ("git submodule foreach x", &["x"]),
            ("git submodule foreach --recursive x", &["x"]),
            ("git submodule update", &[]),
        ];
        for (line, expected) in cases {
            assert_eq!(strings(line), *expected, "{line}");
        }
    }

    /// Command lines rebuilt with their arguments substituted, or a git alias's body.
    #[test]
    fn rebuilt_command_lines() {
        let texts = |words: &[&str]| runs_in(words).texts;
        let cases: &[(&[&str], &[&str])] = &[
            (
                &["parallel", "rm", "-rf", ":::", "a", "/"],
                &["rm -rf a", "rm -rf /"],
            ),
            (
                &["parallel", "bash", "-c", "rm -rf {}", ":::", "/"],
                &["bash -c rm -rf /", "bash -c 'rm -rf /'"],
            ),
            (
                &["parallel", "-q", "bash", "-c", "rm -rf {}", ":::", "/"],
                &["bash -c 'rm -rf /'"],
            ),
            (
                &["parallel", "-I", "X", "rm", "X/{}", ":::", "a"],
                &["rm a/{}", "rm 'a/{}'"],
            ),
            (
                &[
                    "parallel", "-j", "4", "rm", "{1}", "{2}", ":::", "a", ":::", "b",
                ],
                &["rm a b"],
            ),
            (&["parallel", "rm", ":::", "a b"], &["rm 'a b'"]),
            (&["git", "-c", "alias.x=!rm -rf /", "x"], &["rm -rf /"]),
            (&["git", "-c", "alias.x=!rm -rf /", "status"], &[]),
            (
                &["sudo", "git", "-c", "alias.n=reset --hard", "n"],
                &["git reset --hard"],
            ),
        ];
        for (words, expected) in cases {
            assert_eq!(texts(words), *expected, "{words:?}");
        }
        let many: Vec<String> = ["parallel", "rm", ":::"]
            .into_iter()
            .map(str::to_owned)
            .chain((0..=jobs::MAX_JOBS).map(|n| n.to_string()))
            .collect();
        assert!(runs_in(&many).too_many);
        assert!(!runs_in(&many[..many.len() - 1]).too_many);
    }

    #[test]
    fn shells_reading_stdin() {
        let stdin = |line: &str| {
            let words: Vec<&str> = line.split(' ').collect();
            runs_in(&words).stdin_shell
        };
        for line in ["bash", "sh -s", "sh -s arg", "bash -x", "sudo bash", "sh -"] {
            assert!(stdin(line), "{line}");
        }
        for line in ["bash script.sh", "sh -c x", "cat", "bash -- file"] {
            assert!(!stdin(line), "{line}");
        }
    }
}

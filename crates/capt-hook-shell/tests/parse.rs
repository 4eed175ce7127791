//! Command-line parsing: a fixture table pinned in one reviewed snapshot, plus targeted checks
//! (primary/head, words, wrappers, splicing, robustness on hostile input).

// A test fails by panicking: unwrap and expect are how it says what broke.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;

use capt_hook_shell::{CommandLine, Op, QuoteLayer, SpliceError, unwrap_argv};

/// Every line a reviewer needs to judge a parse, one part per line.
fn render(raw: &str) -> String {
    let cl = CommandLine::parse(raw);
    let mut out = String::new();
    let _ = writeln!(out, "=== {raw:?}");
    if cl.has_error {
        out.push_str("has_error\n");
    }
    if let Some(why) = cl.unreadable {
        let _ = writeln!(out, "unreadable: {why}");
    }
    if !cl.comments.is_empty() {
        let _ = writeln!(out, "comments {:?}", cl.comments);
    }
    for (i, part) in cl.parts.iter().enumerate() {
        let c = &part.command;
        let _ = write!(out, "#{i} n{} {:?}", c.nesting, c.argv());
        if let Some(op) = part.op {
            let _ = write!(out, " op={}", op.as_str());
        }
        match &c.span {
            Some(span) => {
                let _ = write!(out, " span={:?}", &cl.raw[span.clone()]);
            }
            None => out.push_str(" span=-"),
        }
        if let Some(host) = c.host {
            let _ = write!(out, " host={host}");
        }
        if !c.env.is_empty() {
            let _ = write!(out, " env={:?}", c.env);
        }
        if !c.redirects.is_empty() {
            let redirects: Vec<String> = c
                .redirects
                .iter()
                .map(|r| {
                    format!(
                        "{}{}{}",
                        r.fd.map(|f| f.to_string()).unwrap_or_default(),
                        r.op,
                        r.target
                    )
                })
                .collect();
            let _ = write!(out, " redir={redirects:?}");
        }
        if !c.contexts.is_empty() {
            let _ = write!(out, " ctx={:?}", c.contexts);
        }
        if c.tainted {
            out.push_str(" tainted");
        }
        for r in &c.runs {
            let words: Vec<&str> = c.words[r.clone()].iter().map(|w| w.key()).collect();
            let _ = write!(out, " runs={words:?}");
        }
        if c.executable.is_empty() {
            let _ = write!(out, " raw={:?}", c.raw);
        }
        out.push('\n');
    }
    out
}

const FIXTURES: &[&str] = &[
    r#"git stash pop && echo "git stash" | grep x; FOO=1 cargo test -- --nocapture"#,
    r#"echo 'it'\''s' "a\"b" c\ d"#,
    r#"sudo rm -rf "/tmp/a b" > /dev/null 2>&1"#,
    "echo git stash",
    "( git stash )",
    "{ git stash; }",
    "{ a; b; } > out",
    "# git stash",
    "ls # list it",
    "echo `git stash`",
    r#"bash -c "git stash $X""#,
    "sh -c 'git stash'",
    "bash -lc 'git push'",
    "zsh -xc 'git push'",
    "bash -o pipefail -c 'git push'",
    "bash -l script.sh",
    "sudo -u root bash -c 'rm -rf / # wipe'",
    "fish -c 'git push'",
    "eval git stash",
    r#"eval "git stash""#,
    "eval $CMD",
    r#"echo "$(git stash)""#,
    "echo 'git stash'",
    "x=$(ccx repo overview)",
    "tag=v$(git rev-parse HEAD) make",
    "VAR= cmd",
    "$(which python) -V",
    "diff <(sort a) <(sort b)",
    "echo hi > $(t)",
    "echo $(a $(b) | c) d",
    "cat <<'EOF'\ngit push --force\nEOF",
    "cat <<EOF | sh\nrm -rf /\nEOF",
    "cat <<EOF && foo\nbody\nEOF",
    "cat <<A <<B\ngit push\nA\nrm -rf x\nB\necho done",
    "cat <<A <<-B\nx\nA\n\ty\n\tB\necho done",
    "cat <<A <<B\nx\nA\nnever terminated",
    "export A=$(whoami)",
    r#"[ -f "$(a)" ] && ! b"#,
    "if true; then git stash; fi",
    "for f in *; do rm $f; done",
    "while read l; do echo $l; done < file",
    "f() { git stash; }",
    "case $x in a) rm x;; esac",
    "echo a >out b",
    "rm >log -rf /",
    "> out.txt",
    "a=1 b=2\nrm -rf /",
    "cd x && sudo pytest -q | tee log",
    r#"gh pr list --search "$(cat q.txt)""#,
    "bash -c 'ls' && foo",
    "a |& b",
    "a & b",
    "a && b || c; d",
    "a\nb",
    "sh -c 'a; b | c' ; d",
    "sh -c \"sh -c 'sh -c \\\"sh -c ls\\\"'\"",
    "eval eval eval eval git stash",
    r#"bash -c "echo \"hi\" && git push""#,
    r#"cat <<< "x $y""#,
    r#"echo $"x" $'a\nb'"#,
    "echo  `h`  z",
    "cat <<EOF # note\nx\nEOF",
    "x=1 y=$(a) && b",
    "bash -ce 'git push'",
    "xargs -I{} sh -c 'rm {}'",
    "git commit -m \"$(cat <<'EOF'\nfix: rm -rf\nEOF\n)\"",
    r#"echo "unterminated"#,
    "",
    "   \n\t ",
    // What runs behind wrappers and runners, each wrapper's options read from its table.
    "sudo -u root env A=1 -i nice -n 5 timeout -s KILL 5s rm -rf /x",
    "doas -u admin ionice -c3 stdbuf -oL setsid -f flock -w 5 /tmp/l chrt -f 10 taskset -c 0 rm x",
    "command -v rm; command rm x; builtin cd /; exec -a n rm x; time -p rm x; nohup rm x",
    "ls | xargs -0 -n 1 -I{} rm -rf {}",
    "find . -name '*.o' -exec rm -rf {} + -execdir sudo rm {} \\;",
    "busybox rm -rf x",
    "watch -n 5 'git stash' && watch -x rm x",
    "parallel -j 4 rm -rf ::: a b",
    "flock /tmp/l -c 'git stash'",
    "env -S 'rm -rf x'",
    // Arguments substituted into the command a runner runs.
    "parallel bash -c 'rm -rf {}' ::: /",
    "parallel -q rm -rf {.} ::: /a.b ::: c",
    "parallel rm -rf :::: list",
    "printf / | xargs -I{} rm -rf {}",
    "echo / tmp | xargs rm -rf",
    "xargs -I{} rm -rf {} <<< /",
    "cat list | xargs -I{} rm -rf {}",
    "printf '%s\n' a b | parallel rm {}",
    // env's options that take no value or a command line.
    "env -S 'PATH=/x git reset --hard' HEAD; env - rm -rf /; env -i A=1 rm x; env -P /bin rm x",
    // Runners.
    "uv run rm -rf /; uvx ruff check; npx -y rimraf /; pnpm exec rm -rf /; bunx rimraf x",
    "poetry run rm -rf /; strace -f -o log rm -rf /; ltrace -e malloc rm x",
    "sg wheel -c 'rm -rf /'; sg wheel rm -rf /; chroot /mnt rm -rf /",
    "firejail --private rm -rf /; systemd-run --user -p MemoryMax=1G rm -rf /",
    "ssh -p 22 -i key host 'rm -rf /'; ssh -o A=b host rm -rf /; ssh host",
    // git: its own `--`, and aliases that shell out.
    "git -- reset --hard",
    "git -c alias.x='!rm -rf /' x",
    "git -c alias.x='!rm -rf /' status",
    "\\rm -rf x; \"rm\" x; /usr/bin/rm x",
    // Command strings fed to a shell by heredoc and here-string.
    "bash <<EOF\nrm -rf /\nEOF",
    "sh -s <<'EOF'\ngit stash\nEOF",
    "bash <<EOF\n\\rm -rf victim\nEOF",
    "sh <<< 'git push --force'",
    "cat <<EOF\n$(git stash)\nEOF",
    "cat <<'EOF'\n$(git stash)\nEOF",
    // Substitutions in redirect targets and here-strings run too.
    "echo hi > \"$(git stash)\" 2> $(rm x)",
    "cat <<< $(git stash)",
    // Assignments and declarations are parts.
    "LD_PRELOAD=/x.so; ls",
    "export PATH=./evil && ls",
    "declare -x A=1; local b; readonly C; typeset -i n=3; unset D",
    // Redirects belong to the command they follow.
    "a > x && b > y",
    // Lines the parser cannot read to the end.
    "bash -c \"bash -c 'bash -c \\\"bash -c git\\\"'\"",
    "if true; then git stash",
];

#[test]
fn fixtures() {
    let rendered: String = FIXTURES.iter().map(|raw| render(raw)).collect();
    insta::assert_snapshot!("fixtures", rendered);
}

fn parse(raw: &str) -> CommandLine {
    CommandLine::parse(raw)
}

#[test]
fn primary_and_head_skip_nested_parts() {
    let primary = |raw: &str| parse(raw).primary().map(|c| c.executable.clone());
    assert_eq!(
        primary("cd x && sudo pytest -q | tee log").as_deref(),
        Some("tee")
    );
    assert_eq!(
        primary(r#"gh pr list --search "$(cat q.txt)""#).as_deref(),
        Some("gh")
    );
    assert_eq!(primary("bash -c 'ls' && foo").as_deref(), Some("foo"));
    assert_eq!(primary("sh -c 'git stash'").as_deref(), Some("sh"));
    assert_eq!(primary("# only a comment"), None);
    let cl = parse("echo $(a) && b");
    assert_eq!(cl.head().map(|c| c.executable.as_str()), Some("echo"));
    // The operator belongs to the host, not to the substitution between them.
    assert_eq!(cl.parts[0].op, Some(Op::And));
    assert_eq!(cl.parts[1].op, None);
    assert!(parse("").is_empty());
    assert!(parse("  \n ").is_empty());
}

#[test]
fn words_carry_dequoted_values() {
    let cl = parse(r#"echo 'it'\''s' "a\"b" c\ d $HOME *.rs ~/x"#);
    let c = &cl.parts[0].command;
    let values: Vec<Option<&str>> = c.words.iter().map(|w| w.value.as_deref()).collect();
    assert_eq!(
        values,
        [
            Some("echo"),
            Some("it's"),
            Some("a\"b"),
            Some("c d"),
            None,
            Some("*.rs"),
            Some("~/x")
        ]
    );
    let expandable: Vec<bool> = c.words.iter().map(|w| w.expandable).collect();
    assert_eq!(expandable, [false, false, false, false, false, true, true]);
    assert_eq!(c.words.len(), c.argv().len());
    assert!(c.tainted);
    let spans: Vec<&str> = c
        .words
        .iter()
        .map(|w| &cl.raw[w.span.clone().unwrap_or(0..0)])
        .collect();
    assert_eq!(spans[1], r#"'it'\''s'"#);
}

#[test]
fn unwrap_strips_wrappers_and_their_values() {
    let cases: &[(&str, &str)] = &[
        ("sudo -u root git push", "git push"),
        ("env A=1 B=2 make", "make"),
        ("timeout -s KILL 5 cargo test", "cargo test"),
        ("timeout 5s cargo test", "cargo test"),
        ("timeout 1.5 cargo test", "cargo test"),
        ("timeout -k 10 30m make", "make"),
        ("nice -n 10 make", "make"),
        ("nohup python x.py", "python x.py"),
        ("xargs -I{} rm {}", "rm {}"),
        ("xargs -I X rm X", "rm X"),
        ("xargs -n 1 -P 4 rm", "rm"),
        ("command -v git", ""),
        ("env -u HOME sh -c x", "sh -c x"),
        ("/usr/bin/sudo -- exec nice git push", "git push"),
        ("time git status", "git status"),
        ("doas -u admin rm x", "rm x"),
        ("git push", "git push"),
        ("sudo", ""),
    ];
    for (argv, expected) in cases {
        let argv: Vec<&str> = argv.split(' ').collect();
        assert_eq!(unwrap_argv(&argv).join(" "), *expected, "{argv:?}");
    }
    let cl = parse(r#"sudo -u root "git" push"#);
    assert_eq!(cl.parts[0].command.unwrapped(), ["git", "push"]);
}

#[test]
fn splice_rewrites_spans() {
    let cl = parse("cd x && git push --force | tee log");
    assert_eq!(
        cl.splice(&[(1, "git push".into())]).as_deref(),
        Ok("cd x && git push | tee log")
    );
    assert_eq!(
        cl.splice(&[(2, "cat".into()), (0, "pwd".into())])
            .as_deref(),
        Ok("pwd && git push --force | cat")
    );
    assert_eq!(cl.splice(&[]).as_deref(), Ok(cl.raw.as_str()));
    assert_eq!(
        cl.splice(&[(3, String::new())]),
        Err(SpliceError::OutOfRange { index: 3, len: 3 })
    );
    assert_eq!(
        cl.splice(&[(1, "a".into()), (1, "b".into())]),
        Err(SpliceError::Overlap {
            first: 1,
            second: 1
        })
    );

    // Redirects stay in place: the span covers the command without them.
    let cl = parse("FOO=1 make all > log 2>&1");
    assert_eq!(
        cl.splice(&[(0, "make test".into())]).as_deref(),
        Ok("make test > log 2>&1")
    );

    let cl = parse("echo $(git stash)");
    assert_eq!(
        cl.splice(&[(1, "ls".into())]),
        Err(SpliceError::NoSpan { index: 1 })
    );

    // Payload parts are spliced inside their quotes, if the replacement survives them.
    let cl = parse("sh -c 'git stash && ls'");
    assert_eq!(cl.parts[1].command.contexts, [QuoteLayer::Single]);
    assert_eq!(
        cl.splice(&[(1, "git stash list".into())]).as_deref(),
        Ok("sh -c 'git stash list && ls'")
    );
    assert!(matches!(
        cl.splice(&[(1, "echo 'x'".into())]),
        Err(SpliceError::Unembeddable {
            index: 1,
            layer: QuoteLayer::Single
        })
    ));
    let cl = parse(r#"bash -c "echo \"hi\"; git push""#);
    assert_eq!(
        cl.parts[1].command.span.clone().map(|s| &cl.raw[s]),
        Some(r#"echo \"hi\""#)
    );
    assert_eq!(
        cl.splice(&[(2, "git fetch".into())]).as_deref(),
        Ok(r#"bash -c "echo \"hi\"; git fetch""#)
    );
    assert!(cl.splice(&[(2, "echo $HOME".into())]).is_err());
    // fish payloads are not mapped back to the raw line.
    let cl = parse("fish -c 'git push'");
    assert_eq!(cl.parts[1].command.span, None);
}

#[test]
fn nested_payload_stops_at_depth_three() {
    let cl = parse("eval eval eval eval git stash");
    let nestings: Vec<u8> = cl.commands().map(|c| c.nesting).collect();
    assert_eq!(nestings, [0, 1, 2, 3]);
    assert!(cl.commands().all(|c| c.executable == "eval"));
}

#[test]
fn deep_nesting_does_not_overflow() {
    for n in [5_000, 10_000] {
        let raw = format!("echo {}x{}", "$(".repeat(n), ")".repeat(n));
        let cl = parse(&raw);
        assert!(!cl.is_empty());
        assert_eq!(cl.primary().map(|c| c.executable.as_str()), Some("echo"));
    }
    let raw = format!("{}x{}", "( ".repeat(5_000), " )".repeat(5_000));
    let _ = parse(&raw);
    let raw = format!("{}x{}", "\"$(".repeat(3_000), ")\"".repeat(3_000));
    let _ = parse(&raw);
    let raw = "eval ".repeat(5_000) + "x";
    assert_eq!(parse(&raw).parts.len(), 4);
}

#[test]
fn large_and_binary_input() {
    let big = format!("echo {}", "a".repeat(1 << 20));
    let cl = parse(&big);
    assert_eq!(cl.parts.len(), 1);
    assert_eq!(cl.parts[0].command.args[0].len(), 1 << 20);

    // ~1 MB of commands, a 10 MB quoted word, and a 1 MB payload.
    let many = "git status && ls -la | grep x; ".repeat(32_000);
    assert_eq!(parse(&many).parts.len(), 96_000);
    let huge = format!(r#"echo "{}""#, r#"a\"b "#.repeat(2_000_000));
    assert_eq!(parse(&huge).parts[0].command.args[0].len(), 10_000_000);
    let payload = format!(r#"sh -c "{}""#, r#"echo \"a\" && "#.repeat(70_000));
    let cl = parse(&payload);
    assert_eq!(cl.parts.len(), 70_002);
    assert!(cl.has_error);

    let cl = parse("echo a\0b | c \0");
    assert_eq!(cl.parts[0].command.args, ["a\0b"]);
}

#[test]
fn never_panics_on_token_soup() {
    const TOKENS: &[&str] = &[
        "a",
        "git",
        " ",
        "  ",
        "\n",
        ";",
        "&&",
        "||",
        "|",
        "|&",
        "&",
        "(",
        ")",
        "{",
        "}",
        "$(",
        "`",
        "'",
        "\"",
        "\\",
        "$",
        "${",
        "<<",
        "<<-",
        "EOF",
        "<<<",
        ">",
        "2>&1",
        "<(",
        "#",
        "=",
        "x=",
        "sh -c ",
        "eval ",
        "if ",
        "then ",
        "fi",
        "case ",
        "esac",
        "in",
        ";;",
        "[",
        "]",
        "[[",
        "é",
        "\0",
        "sudo ",
        "timeout 5 ",
        "$'\\x41",
        "\t",
    ];
    // A fixed linear congruential generator keeps the test deterministic.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    for _ in 0..3_000 {
        let len = next() % 40;
        let raw: String = (0..len).map(|_| TOKENS[next() % TOKENS.len()]).collect();
        let cl = parse(&raw);
        for part in &cl.parts {
            if let Some(span) = &part.command.span {
                assert!(cl.raw.get(span.clone()).is_some(), "{raw:?}");
            }
            let c = &part.command;
            // An empty executable (`"" x`) leaves argv empty but still has its words.
            let expected = if c.words.is_empty() {
                0
            } else {
                1 + c.args.len()
            };
            assert_eq!(c.words.len(), expected, "{raw:?}");
        }
        let all: Vec<(usize, String)> = (0..cl.parts.len()).map(|i| (i, "x".to_owned())).collect();
        let _ = cl.splice(&all);
    }
}

#[test]
fn parse_time_for_a_typical_command() {
    let raw = r#"git stash pop && echo "git stash" | grep x; FOO=1 cargo test -- --nocapture"#;
    let _ = parse(raw);
    let runs = 2_000;
    let start = std::time::Instant::now();
    for _ in 0..runs {
        std::hint::black_box(parse(std::hint::black_box(raw)));
    }
    let per = start.elapsed() / runs;
    // Informational only: timing assertions are flaky on shared machines.
    eprintln!("parse: {per:?} per call");
}

/// The parser-free path for plain lines must agree with the tree-sitter walk exactly, on every
/// line it accepts; and it must accept most plain lines (else it is not worth having).
#[test]
fn fast_path_matches_the_full_parse() {
    const WORDS: &[&str] = &[
        "git",
        "status",
        "--short",
        "-q",
        "head",
        "-20",
        "cargo",
        "test",
        "--",
        "a.txt",
        "/tmp/x",
        "'quoted str'",
        "\"dq str\"",
        "pre'mid'post",
        "x=y",
        "123",
        "a-b_c.d/e:f,g@h%i+j",
        "ls",
        "-la",
        "npm",
        "install",
        "''",
        "\"\"",
        "pytest",
        "sudo",
        "env",
        "timeout",
        "5",
        "grep",
        "-rn",
        "\"needle here\"",
        "src/",
        "echo",
        "'it''s'",
        "a\"b c\"d",
        "make",
        "--flag=value",
        "-n",
        "10",
        "'-v'",
        "python3",
        "-c",
        "=",
        "a=",
        ":",
        "bash",
        "-lc",
        "sh -c",
        "'git fetch && git rebase origin/main'",
        "\"git push | tee log\"",
        "'sh -c \"ls -la\"'",
        "\"$(cat msg.txt)\"",
        "$(git rev-parse HEAD)",
        "v$(date +%s)",
        "\"a $(b | c) d\"",
        "$(a)$(b)",
        "$(a; b &)",
        "'$(x)'",
        "xargs",
        "sudo -u root",
        "find . -exec",
        "\\;",
        "watch",
        "busybox",
    ];
    const ENV: &[&str] = &["FOO=1", "A_B=x", "PATH=/bin:/usr/bin", "E="];
    const OPS: &[&str] = &["&&", "||", "|", ";", "&"];
    const REDIRECTS: &[&str] = &[
        "> out",
        ">> log",
        "2>&1",
        "< in",
        "2> err",
        ">|x",
        "2>/dev/null",
        "> 'a b'",
        "1>&2",
    ];
    const SPACES: &[&str] = &[" ", "  ", "\t", " \t "];
    let mut state: u64 = 0x5eed_f00d;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as usize) % n
    };
    let mut accepted = 0;
    for _ in 0..5000 {
        let mut line = String::new();
        let commands = 1 + next(4);
        for c in 0..commands {
            if c > 0 {
                line.push_str(SPACES[next(SPACES.len())]);
                line.push_str(OPS[next(OPS.len())]);
                line.push_str(SPACES[next(SPACES.len())]);
            }
            if next(5) == 0 {
                line.push_str(ENV[next(ENV.len())]);
                line.push(' ');
            }
            let words = 1 + next(5);
            for w in 0..words {
                if w > 0 {
                    line.push_str(SPACES[next(SPACES.len())]);
                }
                line.push_str(WORDS[next(WORDS.len())]);
            }
            if next(4) == 0 {
                line.push(' ');
                line.push_str(REDIRECTS[next(REDIRECTS.len())]);
            }
        }
        if next(6) == 0 {
            line.push_str(if next(2) == 0 { ";" } else { " &" });
        }
        let full = CommandLine::parse_full(&line);
        if let Some(fast) = CommandLine::parse_fast(&line) {
            assert!(
                fast == full,
                "fast path differs on {line:?}\nfast: {fast:#?}\nfull: {full:#?}"
            );
            accepted += 1;
        }
    }
    assert!(accepted > 2500, "only {accepted} lines took the fast path");

    // The nestings the fast path reads itself, checked one by one.
    for line in [
        "bash -lc 'git fetch && git rebase origin/main' && git commit -m \"$(cat msg.txt)\"",
        "sh -c \"sh -c 'ls -la'\" | tee log",
        "echo \"a $(b | c) d\" v$(date) $(a)$(b)",
        "sudo -u root bash -c 'rm -rf x' ; xargs sh -c 'echo hi'",
    ] {
        let fast = CommandLine::parse_fast(line).expect(line);
        assert_eq!(fast, CommandLine::parse_full(line), "{line}");
    }
}

/// Shell fragments the property tests build lines from: every construct the walker treats
/// specially, so random lines reach its corners.
const FRAGMENTS: &[&str] = &[
    "git",
    " stash",
    " ",
    "\n",
    ";",
    " && ",
    " || ",
    " | ",
    " & ",
    "(",
    ")",
    "{ ",
    " }",
    "$(",
    "`",
    "'",
    "\"",
    "\\",
    "$X",
    "${Y}",
    "<<EOF\n",
    "EOF\n",
    "<<'Q'\n",
    "Q\n",
    "<<< ",
    " > out",
    " 2>&1",
    "<(",
    "#c",
    "x=1 ",
    "export A=",
    "sh -c ",
    "bash -lc ",
    "eval ",
    "if true; then ",
    "; fi",
    "for i in a; do ",
    "; done",
    "case $x in a) ",
    ";; esac",
    "[[ -f a ]]",
    "sudo ",
    "env A=1 ",
    "timeout 5 ",
    "xargs ",
    "find . -exec ",
    " {} +",
    " \\;",
    "watch ",
    "parallel ",
    " ::: ",
    "xargs -I{} ",
    "printf / | ",
    "ssh h ",
    "env -S ",
    "git -c alias.x='!rm' x",
    "rm -rf /",
    "é",
    "\t",
    "$'\\x41'",
    "!",
    "*",
    "~",
];

/// Valid statements, for lines whose parse must stay linear.
const STATEMENTS: &[&str] = &[
    "git stash",
    "sudo -u root rm -rf x",
    "echo \"$(a $(b | c))\" `d`",
    "bash -c 'ls && pwd' || sh -c \"git push\"",
    "cat <<EOF\nx $(y)\nEOF",
    "bash <<'Q'\nrm -rf x\nQ",
    "if true; then ls; elif false; then pwd; else id; fi",
    "for i in a b; do echo \"$i\"; done",
    "while read -r l; do echo $l; done < file",
    "x=1 y=$(z) cmd > out 2>&1",
    "export A=1; unset B",
    "find . -name '*.o' -exec rm {} +",
    "{ a; b; } > out",
    "( cd x && make )",
    "case $x in a) rm x;; *) ls;; esac",
    "f() { git stash; }",
    "xargs -I{} sh -c 'echo {}' < names",
    "a | b |& c & d",
    "eval \"git stash\"",
    "sh <<< 'git stash'",
    "printf 'a\\nb' | xargs -I{} rm {}",
    "parallel bash -c 'rm {}' ::: a b",
];

fn soup() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..80).prop_map(|v| v.concat())
}

/// What every parse must satisfy, whatever the input.
fn check_invariants(cl: &CommandLine) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::prop_assert;
    for (i, part) in cl.parts.iter().enumerate() {
        let c = &part.command;
        if let Some(h) = c.host {
            prop_assert!(h < i, "part {i} hosted by later part {h}");
            prop_assert!(c.nesting > cl.parts[h].command.nesting);
        }
        if let Some(span) = &c.span {
            prop_assert!(
                cl.raw.get(span.clone()).is_some(),
                "span {span:?} out of the line"
            );
        }
        for r in &c.runs {
            prop_assert!(
                r.start > 0 && r.end <= c.words.len(),
                "run {r:?} out of the words"
            );
        }
        prop_assert!(c.executable.is_empty() || c.words.len() == c.argv().len());
    }
    Ok(())
}

proptest::proptest! {
    #![proptest_config(capt_hook_proto::fuzz::config(400))]

    /// No panic, no hang, and sound parts on fragment soup and on arbitrary text.
    #[test]
    fn parser_survives_anything(line in proptest::prop_oneof![soup(), ".{0,300}"]) {
        let start = std::time::Instant::now();
        let cl = CommandLine::parse(&line);
        proptest::prop_assert!(start.elapsed() < std::time::Duration::from_secs(5));
        check_invariants(&cl)?;
        if let Some(fast) = CommandLine::parse_fast(&line) {
            proptest::prop_assert_eq!(fast, CommandLine::parse_full(&line));
        }
    }
}

proptest::proptest! {
    #![proptest_config(capt_hook_proto::fuzz::config(12))]

    /// Parse time grows linearly: eight times the text costs far less than 64 times the time
    /// (what a quadratic walk would take). Each side is the best of five runs, and the bound
    /// leaves 100 ms for a machine busy with other builds (the smaller side takes tens of
    /// milliseconds in a test build, so a quadratic walk of the larger one takes seconds). The lines are
    /// valid bash: on garbage, tree-sitter's own error recovery is not linear, and the parse is
    /// cut off by a time budget instead (`TooLong`).
    #[test]
    fn parse_time_is_linear(unit in proptest::collection::vec(proptest::sample::select(STATEMENTS), 1..12)) {
        let unit = format!("{}\n", unit.join("\n"));
        let time = |n: usize| {
            let line = unit.repeat(n);
            (0..5)
                .map(|_| {
                    let start = std::time::Instant::now();
                    std::hint::black_box(CommandLine::parse(&line));
                    start.elapsed()
                })
                .min()
                .unwrap_or_default()
        };
        let n = (20_000 / unit.len()).max(1);
        let (small, large) = (time(n), time(8 * n));
        proptest::prop_assert!(
            large < small * 24 + std::time::Duration::from_millis(100),
            "{} bytes: {small:?}, 8x: {large:?}", unit.len() * n
        );
    }
}

/// Every argv the line runs, nested ones included, joined with blanks.
fn argvs(raw: &str) -> Vec<String> {
    let cl = parse(raw);
    let mut out = Vec::new();
    for c in cl.commands() {
        for ws in c.run_words() {
            out.push(ws.iter().map(|w| w.key()).collect::<Vec<_>>().join(" "));
        }
    }
    out
}

#[test]
fn runners_substitute_their_arguments() {
    let cases: &[(&str, &str)] = &[
        ("parallel bash -c 'rm -rf {}' ::: /", "rm -rf /"),
        ("parallel rm -rf ::: a /", "rm -rf /"),
        ("parallel -j4 --halt now,fail=1 rm -rf {} ::: /", "rm -rf /"),
        ("parallel echo {1} {2} ::: a ::: /", "echo a /"),
        ("printf / | xargs -I{} rm -rf {}", "rm -rf /"),
        ("printf / | xargs -I {} rm -rf {}", "rm -rf /"),
        ("echo / | xargs --replace rm -rf {}", "rm -rf /"),
        ("echo / | xargs -I% rm -rf %", "rm -rf /"),
        ("echo / | xargs rm -rf", "rm -rf /"),
        ("xargs -I{} rm -rf {} <<< /", "rm -rf /"),
        ("printf '%s\\n' a / | parallel rm -rf", "rm -rf /"),
        // Unknown input: the command as written.
        ("cat list | xargs -I{} rm -rf {}", "rm -rf {}"),
        ("env -S 'PATH=/x git reset --hard'", "git reset --hard"),
        ("env -S 'rm -rf' /", "rm -rf /"),
        ("env - rm -rf /", "rm -rf /"),
        ("env -i PATH=/x rm -rf /", "rm -rf /"),
        ("env -P /bin rm -rf /", "rm -rf /"),
        ("uv run rm -rf /", "rm -rf /"),
        ("uvx --from x rm -rf /", "rm -rf /"),
        ("npx -y rimraf /", "rimraf /"),
        ("pnpm exec rm -rf /", "rm -rf /"),
        ("bunx rimraf /", "rimraf /"),
        ("poetry run rm -rf /", "rm -rf /"),
        ("strace -f -o log rm -rf /", "rm -rf /"),
        ("ltrace -e malloc rm -rf /", "rm -rf /"),
        ("sg wheel -c 'rm -rf /'", "rm -rf /"),
        ("sg wheel rm -rf /", "rm -rf /"),
        ("chroot /mnt rm -rf /", "rm -rf /"),
        ("firejail --private rm -rf /", "rm -rf /"),
        ("systemd-run --user -p MemoryMax=1G rm -rf /", "rm -rf /"),
        ("ssh -p 22 -i key -l me host 'rm -rf /'", "rm -rf /"),
        ("ssh -F cfg -J jump -o A=b host rm -rf /", "rm -rf /"),
        ("git -c alias.x='!rm -rf /' x", "rm -rf /"),
        ("git -c alias.x='!rm -rf' x /", "rm -rf /"),
        ("git -c alias.n='reset --hard' n", "git reset --hard"),
    ];
    for (line, argv) in cases {
        let seen = argvs(line);
        assert!(
            seen.iter().any(|a| a == argv),
            "{line}: {argv:?} not among {seen:?}"
        );
    }
    // Options that take a value never make it the program.
    for (line, not) in [
        ("ssh -p 22 host ls", "22 host ls"),
        ("env -P /bin ls", "/bin ls"),
        ("uv run --with rm ls", "rm ls"),
        ("git -c alias.x='!rm -rf /' status", "rm -rf /"),
    ] {
        assert!(!argvs(line).iter().any(|a| a == not), "{line}");
    }
    assert_eq!(
        parse(&format!("parallel rm ::: {}", vec!["x"; 17].join(" "))).unreadable,
        Some(capt_hook_shell::Unreadable::TooManyJobs)
    );
    // Rebuilding nested three deep stays within a budget for the whole line.
    let args = vec!["a"; 16].join(" ");
    let line = format!(
        "parallel bash -c \"parallel bash -c 'parallel rm {{}} ::: {args}' ::: {args}\" ::: {args}"
    );
    let start = std::time::Instant::now();
    let cl = parse(&line);
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    assert!(cl.unreadable.is_some());
    let line = format!("parallel bash -c 'parallel rm {{}} ::: {args}' ::: {args}");
    assert_eq!(
        parse(&line).unreadable,
        Some(capt_hook_shell::Unreadable::TooManyJobs)
    );
}

proptest::proptest! {
    #![proptest_config(capt_hook_proto::fuzz::config(64))]

    /// Whatever literal arguments a runner gets, the command it runs with each one is seen.
    #[test]
    fn substituted_arguments_are_seen(args in proptest::collection::vec("[a-z/. ]{1,6}", 1..5)) {
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        let line = format!("parallel rm -rf {{}} ::: {}", quoted.join(" "));
        let seen = argvs(&line);
        for a in &args {
            let want = format!("rm -rf {a}");
            proptest::prop_assert!(seen.contains(&want), "{line}: {want:?} not in {seen:?}");
        }
        let items: Vec<&String> = args.iter().filter(|a| !a.trim().is_empty()).collect();
        let line = format!(
            "printf '%s\\n' {} | xargs -I{{}} rm -rf {{}}",
            items.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(" ")
        );
        let seen = argvs(&line);
        for a in items {
            let want = format!("rm -rf {}", a.trim_start());
            proptest::prop_assert!(seen.contains(&want), "{line}: {want:?} not in {seen:?}");
        }
    }
}

/// A `( … )` subshell is recorded on each command in it, so what it changes (`cd`) can end
/// with it; groups `{ …; }` are no subshell, and numbers are unique in the line.
#[test]
fn subshells_are_recorded() {
    let cl = parse("( cd ~/.ssh ); rm id_rsa; (a; (b)); { c; }");
    let by: Vec<(String, Vec<u32>)> = cl
        .commands()
        .map(|c| (c.executable.clone(), c.subshells.clone()))
        .collect();
    assert_eq!(
        by,
        vec![
            ("cd".to_owned(), vec![1]),
            ("rm".to_owned(), vec![]),
            ("a".to_owned(), vec![2]),
            ("b".to_owned(), vec![2, 3]),
            ("c".to_owned(), vec![]),
        ]
    );
    assert!(
        parse("cd x && rm y")
            .commands()
            .all(|c| c.subshells.is_empty())
    );
}

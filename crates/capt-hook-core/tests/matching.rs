//! Token matching held against bash itself: bash decides what runs.
//!
//! Each line runs under real bash in a scratch directory whose `PATH` starts with fake `rm`
//! and `git` programs that only log their argv. Whatever bash ran, the matcher must see
//! (`runs` built from the logged argv matches the line); a line that ran neither must not match
//! (quoted mentions, `command -v`, quoted heredocs).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::Duration;

use capt_hook_core::Tokens;
use capt_hook_shell::CommandLine;

struct Scratch {
    _dir: tempfile::TempDir,
    root: PathBuf,
    bin: PathBuf,
    log: PathBuf,
}

/// A fake program that appends `name<TAB>arg<TAB>arg…` to `$LOG`.
const FAKE: &str = "#!/bin/sh\nn=${0##*/}\nfor a in \"$@\"; do n=\"$n\t$a\"; done\nprintf '%s\\n' \"$n\" >> \"$LOG\"\n";

fn scratch() -> Scratch {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().to_path_buf();
    let bin = root.join("bin");
    std::fs::create_dir(&bin).expect("bin dir");
    for name in ["rm", "git"] {
        let path = bin.join(name);
        std::fs::write(&path, FAKE).expect("fake program");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    // Something for `find` to find and `xargs` to read.
    std::fs::write(root.join("victim.o"), "").expect("victim");
    std::fs::write(root.join("names.txt"), "victim.o\n").expect("names");
    let log = root.join("ran.log");
    Scratch {
        _dir: dir,
        root,
        bin,
        log,
    }
}

/// Runs `line` with bash and returns the argvs the fake programs logged.
fn bash_runs(s: &Scratch, line: &str) -> Vec<Vec<String>> {
    let _ = std::fs::remove_file(&s.log);
    let path = format!(
        "{}:{}",
        s.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Process::new("bash")
        .arg("-c")
        .arg(line)
        .current_dir(&s.root)
        .env("PATH", path)
        .env("LOG", &s.log)
        .env("BIN", &s.bin)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bash runs");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "bash did not finish: {line:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    read_log(&s.log)
}

fn read_log(log: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

fn have(program: &str) -> bool {
    Process::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `rm -rf victim.o` / `git stash` behind each wrapper and nesting bash knows.
fn lines() -> Vec<String> {
    let targets = [
        "rm -rf victim.o",
        "rm -r -f victim.o",
        "rm --recursive --force victim.o",
        "git stash",
        "git -C . stash",
        "git --no-pager -c x.y=z stash",
        "git push --force origin",
        "git push -f",
        "\"$BIN/rm\" -fr victim.o",
        "\\rm -rf victim.o",
        "'git' stash",
    ];
    let mut wrappers = vec![
        "",
        "env ",
        "env FOO=1 -u BAR ",
        "env -i PATH=\"$PATH\" LOG=\"$LOG\" ",
        "nice ",
        "nice -n 5 ",
        "timeout 5 ",
        "timeout -s KILL -k 1 5s ",
        "nohup ",
        "command ",
        "exec ",
        "time -p ",
        "stdbuf -oL ",
        "setsid -w ",
        "flock lockfile ",
        "flock -w 5 lockfile ",
        "ionice -c 3 ",
        "taskset 0x1 ",
        "taskset -c 0 ",
        "nice env A=1 timeout 5 ",
    ];
    wrappers.retain(|w| {
        let program = w.split_whitespace().next().unwrap_or("");
        program.is_empty() || matches!(program, "command" | "exec" | "time") || have(program)
    });
    let mut out = Vec::new();
    for target in targets {
        for w in &wrappers {
            out.push(format!("{w}{target}"));
        }
        let quoted = target.replace('\'', "'\\''");
        let nests = [
            format!("true && {target}"),
            format!("false || {target} | cat"),
            format!("echo $({target})"),
            format!("echo \"`{target}`\""),
            format!("bash -c '{quoted}'"),
            format!("sh -lc '{quoted}'"),
            format!(
                "bash -c 'sh -c '\\''{}'\\'''",
                quoted.replace('\'', "'\\''")
            ),
            format!("eval '{quoted}'"),
            format!("bash <<EOF\n{target}\nEOF"),
            format!("bash <<'EOF'\n{target}\nEOF"),
            format!("sh <<< '{quoted}'"),
            format!("cat <<EOF\n$({target})\nEOF"),
            format!("echo hi > $({target} >/dev/null; echo out.txt)"),
            format!("if true; then {target}; fi"),
            format!("for i in 1; do {target}; done"),
            format!("( {target} )"),
            format!("{{ {target}; }}"),
            format!("f() {{ {target}; }}; f"),
            format!("x=$({target})"),
            format!("export X=$({target})"),
            format!("find . -name victim.o -exec {target} \\;"),
            format!("find . -name victim.o -exec {target} {{}} +"),
            format!("xargs {target} < names.txt"),
            format!("xargs -I{{}} {target} < names.txt"),
            format!("xargs sh -c '{quoted}' < names.txt"),
        ];
        out.extend(nests);
    }
    out
}

/// The token lists a logged argv stands for: the program alone, git's subcommand, each option
/// as written, and the spellings a guard would use (`rm -rf`, `git push --force`). Positional
/// words are left out: runners (`xargs`, `find -exec … {} +`) add their own at run time.
fn token_lists(argv: &[String]) -> Vec<Vec<String>> {
    let program = argv[0].clone();
    let mut head = vec![program.clone()];
    if program == "git" {
        // The fake git sees global options; the subcommand is the first other word.
        let mut i = 1;
        while let Some(a) = argv.get(i) {
            match a.as_str() {
                "-C" | "-c" => i += 2,
                a if a.starts_with('-') => i += 1,
                _ => break,
            }
        }
        if let Some(sub) = argv.get(i) {
            head.push(sub.clone());
        }
    }
    let mut out = vec![head.clone()];
    let rest = &argv[head.len().min(argv.len())..];
    for a in rest
        .iter()
        .filter(|a| a.starts_with('-') && a.len() > 1 && program != "git")
    {
        out.push([head.clone(), vec![a.clone()]].concat());
    }
    let has = |short: char, long: &str| {
        rest.iter()
            .any(|a| a == long || (a.starts_with('-') && !a.starts_with("--") && a.contains(short)))
    };
    if program == "rm"
        && (has('r', "--recursive") || has('R', "--recursive"))
        && has('f', "--force")
    {
        out.push(vec!["rm".into(), "-rf".into()]);
        out.push(vec!["rm".into(), "-fr".into()]);
        out.push(vec!["rm".into(), "--force".into(), "--recursive".into()]);
    }
    if head.len() == 2 && head[1] == "push" && has('f', "--force") {
        out.push(vec!["git".into(), "push".into(), "--force".into()]);
        out.push(vec!["git".into(), "push".into(), "-f".into()]);
    }
    out
}

#[test]
fn whatever_bash_runs_is_seen() {
    let s = scratch();
    let mut checked = 0;
    let mut misses = Vec::new();
    for line in lines() {
        let ran = bash_runs(&s, &line);
        let parsed = CommandLine::parse(&line);
        for argv in &ran {
            for tokens in token_lists(argv) {
                let t = Tokens::new(&tokens).expect("tokens");
                checked += 1;
                if !t.matches_line(&parsed) {
                    misses.push(format!("{line:?}: bash ran {argv:?}, {tokens:?} missed"));
                }
            }
        }
    }
    assert!(checked > 500, "only {checked} checks: bash ran too little");
    assert!(
        misses.is_empty(),
        "{} misses:\n{}",
        misses.len(),
        misses.join("\n")
    );
}

#[test]
fn what_bash_does_not_run_is_not_matched() {
    let s = scratch();
    for line in [
        "echo rm -rf victim.o",
        "echo 'git stash'",
        "git_stash=1; echo $git_stash",
        "command -v rm",
        "type rm",
        "cat <<'EOF'\nrm -rf victim.o\nEOF",
        "cat <<EOF\nrm -rf victim.o\nEOF",
        "printf '%s\\n' 'git stash' | cat",
        "# rm -rf victim.o",
        "echo \"$(echo rm -rf victim.o)\"",
        "grep -r 'git stash' .",
    ] {
        let ran = bash_runs(&s, line);
        assert!(ran.is_empty(), "{line:?} ran {ran:?}");
        let parsed = CommandLine::parse(line);
        for tokens in [vec!["rm"], vec!["git", "stash"]] {
            let t = Tokens::new(&tokens).expect("tokens");
            assert!(!t.matches_line(&parsed), "{line:?} matched {tokens:?}");
        }
    }
}

#[test]
fn nesting_past_the_parser_still_matches() {
    let s = scratch();
    let depth_lines = [
        format!("echo {}git stash{}", "$(".repeat(60), ")".repeat(60)),
        format!("{}git stash{}", "( ".repeat(220), " )".repeat(220)),
        format!(
            "{}git stash{}",
            "if true; then ".repeat(210),
            "; fi".repeat(210)
        ),
        "eval \"eval \\\"eval \\\\\\\"eval git stash\\\\\\\"\\\"\"".to_owned(),
        "bash -c \"bash -c 'bash -c \\\"bash -c \\\\\\\"git stash\\\\\\\"\\\"'\"".to_owned(),
    ];
    let t = Tokens::new(&["git", "stash"]).expect("tokens");
    for line in depth_lines {
        let ran = bash_runs(&s, &line);
        assert!(
            ran.iter().any(|a| a[..] == ["git", "stash"]),
            "bash did not run git stash for {line:?}: {ran:?}"
        );
        let parsed = CommandLine::parse(&line);
        assert!(t.matches_line(&parsed), "missed {line:?}");
    }
}

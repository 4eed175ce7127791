//! "Under the hood": the `git stash` ban the page traces through the dispatch pipeline, in its
//! three spellings, and the warning it becomes without `block`.

use captain_hook::{
    CommandMatch, DefError, EventKind, Expect, Input, Registry, block_command, cond, hook,
};

const STEM: &str = "under_the_hood";

/// Registers the page's hooks.
pub fn register(reg: &mut Registry) -> Result<(), DefError> {
    // "A hook firing": the ban as a regex over the raw line. A regex also fires on text that
    // only mentions the words, which the page warns about; the test pins that.
    reg.add(
        STEM,
        block_command(
            CommandMatch::pattern(r"git\s+stash")?,
            "git stash is not allowed; use jj shelve",
        )
        .name("regex ban")
        .test(
            Input::command("git stash pop"),
            Expect::block().matching("jj shelve"),
        )
        .test(Input::command("echo 'git stash'"), Expect::block())
        .test(Input::command("git status"), Expect::allow()),
    )?;

    // "Tracing a blocked git stash": the full declarative form, a structural match.
    reg.add(
        STEM,
        hook(
            &[EventKind::PreToolUse],
            "git stash is not allowed; use jj shelve",
        )
        .block(true)
        .only_if(cond::tool(&["Bash"]))
        .only_if(cond::runs(&["git", "stash"])?)
        .name("declarative ban")
        .test(Input::command("git stash pop"), Expect::block())
        .test(Input::command("cd repo && sudo git stash"), Expect::block())
        .test(Input::command("echo \"git stash\""), Expect::allow()),
    )?;

    // "Set block=False": the same hook as advice; the call still runs.
    reg.add(
        STEM,
        hook(
            &[EventKind::PreToolUse],
            "git stash is discouraged; prefer jj shelve",
        )
        .only_if(cond::tool(&["Bash"]))
        .only_if(cond::runs(&["git", "stash"])?)
        .name("advice")
        .test(
            Input::command("git stash"),
            Expect::warn().matching("jj shelve"),
        ),
    )?;

    // "A hook is data, not a script": the token-list form of the same ban.
    reg.add(
        STEM,
        block_command(
            CommandMatch::argv(&["git", "stash"])?,
            "Use jj instead of git stash",
        )
        .name("token ban")
        .test(
            Input::command("git stash"),
            Expect::block().matching("BLOCKED: Use jj instead of git stash."),
        )
        .test(Input::command("git log --grep stash"), Expect::allow()),
    )?;
    Ok(())
}

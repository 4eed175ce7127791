//! Conditions for Rust hooks: short constructors for the built-in conditions (compiled the way a
//! hook file compiles them, so a bad regex or token list is a [`DefError`] naming the condition),
//! and [`CustomCondition`], the trait a condition written in Rust implements.
//!
//! Conditions run on the dispatching thread before any handler, for every hook the event
//! concerns, so they must be quick. A predicate that may be slow or fail belongs in
//! [`crate::HookDef::when`], which runs with the handler under the event's deadline. A custom
//! condition that panics makes its hook a failed hook, never a silent skip (see
//! [`crate::dispatch`]).

use std::sync::Arc;

use capt_hook_core::condition::Scope;
use capt_hook_core::{Condition, Event, Glob, Mode, Pattern, Tokens};

use crate::primitives::DefError;

fn regex(what: &str, source: &str, mode: Mode) -> Result<Pattern, DefError> {
    Pattern::new(source, mode).map_err(|e| DefError::new(what, e.to_string()))
}

fn tokens<S: AsRef<str>>(what: &str, argv: &[S]) -> Result<Tokens, DefError> {
    Tokens::new(argv).map_err(|e| DefError::new(what, e.to_string()))
}

fn owned<S: AsRef<str>>(items: &[S]) -> Vec<String> {
    items.iter().map(|s| s.as_ref().to_owned()).collect()
}

/// `tool`: the call's tool is one of `names` (`"Edit|Write"` splits; aliases count).
pub fn tool<S: AsRef<str>>(names: &[S]) -> Condition {
    Condition::tool(names)
}

/// `runs`: some command of the line, nested ones included, starts with `argv`.
pub fn runs<S: AsRef<str>>(argv: &[S]) -> Result<Condition, DefError> {
    Ok(Condition::Runs(tokens("runs", argv)?))
}

/// `command`: the regex matches the raw Bash line or some command's words.
pub fn command(regex_source: &str) -> Result<Condition, DefError> {
    Ok(Condition::Command(regex(
        "command",
        regex_source,
        Mode::Plain,
    )?))
}

/// `tool_input`: the input field exists and matches the regex.
pub fn tool_input(field: &str, regex_source: &str) -> Result<Condition, DefError> {
    Ok(Condition::ToolInput(vec![(
        field.to_owned(),
        regex("tool_input", regex_source, Mode::Plain)?,
    )]))
}

/// `file_path`: the event's file matches one of the globs (fnmatch; `*` crosses `/`).
pub fn file_path<S: AsRef<str>>(globs: &[S]) -> Condition {
    Condition::file_path(globs.iter().map(|g| Glob::new(g.as_ref())).collect(), false)
}

/// `test_file`: the event's file is (or, with `false`, is not) a test file.
pub fn test_file(is: bool) -> Condition {
    Condition::TestFile(is)
}

/// `touched_file`: an earlier edit of the main agent targeted a matching file.
pub fn touched_file<S: AsRef<str>>(globs: &[S]) -> Condition {
    Condition::TouchedFile(owned(globs))
}

/// `ran_command`: an earlier Bash call ran a command starting with `argv`.
pub fn ran_command<S: AsRef<str>>(argv: &[S]) -> Result<Condition, DefError> {
    Ok(Condition::RanCommand(tokens("ran_command", argv)?))
}

/// `used_tool`: the tool was called in the current turn.
pub fn used_tool<S: AsRef<str>>(names: &[S]) -> Condition {
    Condition::UsedTool {
        names: capt_hook_core::condition::split_names(names),
        scope: Scope::Turn,
    }
}

/// `user_said`: a user prompt of the current turn matches (case-insensitive).
pub fn user_said(regex_source: &str) -> Result<Condition, DefError> {
    Ok(Condition::UserSaid {
        pattern: regex("user_said", regex_source, Mode::IgnoreCase)?,
        scope: Scope::Turn,
    })
}

/// `text_matches`: the session's prose (prompts and assistant text, never tool calls) matches.
pub fn text_matches(regex_source: &str) -> Result<Condition, DefError> {
    Ok(Condition::TextMatches {
        pattern: regex("text_matches", regex_source, Mode::Multiline)?,
        scope: Scope::Session,
    })
}

/// `text_matches` over the current turn's prose (and a Stop payload's closing message).
pub fn text_matches_in_turn(regex_source: &str) -> Result<Condition, DefError> {
    Ok(Condition::TextMatches {
        pattern: regex("text_matches", regex_source, Mode::Multiline)?,
        scope: Scope::Turn,
    })
}

/// `touched_this_file`: an earlier, completed edit of the main agent targeted this event's
/// file; with `since`, only one after the last successful call of that tool.
pub fn touched_this_file(since: Option<&str>) -> Condition {
    Condition::TouchedThisFile {
        since: since.map(str::to_owned),
    }
}

/// `open_tasks`: the main agent's native task list has (or, with `false`, has not) a task that
/// is not completed.
pub fn open_tasks(is: bool) -> Condition {
    Condition::OpenTasks(is)
}

/// `from_subagent`: the event comes (or, with `false`, does not come) from a subagent.
pub fn from_subagent(is: bool) -> Condition {
    Condition::FromSubagent(is)
}

/// `skip_permissions`: Claude Code runs with permission prompts skipped (or not).
pub fn skip_permissions(is: bool) -> Condition {
    Condition::SkipPermissions(is)
}

/// `waiting`: the session is (or is not) waiting on background work.
pub fn waiting(is: bool) -> Condition {
    Condition::Waiting(is)
}

/// `not`: the inner condition does not hold.
pub fn not(inner: Condition) -> Condition {
    Condition::Not(Box::new(inner))
}

/// `any`: at least one holds.
pub fn any(conditions: Vec<Condition>) -> Condition {
    Condition::Any(conditions)
}

/// `all`: every one holds.
pub fn all(conditions: Vec<Condition>) -> Condition {
    Condition::All(conditions)
}

/// A condition written in Rust. Implement it on a type (its fields are the condition's
/// parameters) and pass [`CustomCondition::condition`] to `only_if` or `skip_if`.
///
/// ```
/// use capt_hook_engine::cond::CustomCondition;
/// use capt_hook_core::Event;
///
/// /// The edited file lies under one of the given directories.
/// struct Under(Vec<String>);
///
/// impl CustomCondition for Under {
///     fn name(&self) -> String {
///         format!("under {:?}", self.0)
///     }
///     fn reads_tool(&self) -> bool {
///         true
///     }
///     fn holds(&self, evt: &Event) -> bool {
///         evt.file().is_some_and(|f| self.0.iter().any(|d| f.starts_with(d.as_str())))
///     }
/// }
///
/// let only_migrations = Under(vec!["db/migrations/".into()]).condition();
/// assert_eq!(only_migrations.to_string(), "{ custom = \"under [\\\"db/migrations/\\\"]\" }");
/// ```
pub trait CustomCondition: Send + Sync + 'static {
    /// How `explain` and test failures name the condition.
    fn name(&self) -> String;

    /// True when the condition can only hold on events that carry a tool call; a hook whose
    /// events never carry one is then refused at registration rather than never firing.
    fn reads_tool(&self) -> bool {
        false
    }

    /// Whether the condition holds for `evt`.
    fn holds(&self, evt: &Event) -> bool;

    /// The condition, ready for `only_if` / `skip_if`.
    fn condition(self) -> Condition
    where
        Self: Sized,
    {
        let name = format!("{{ custom = {:?} }}", self.name());
        let reads_tool = self.reads_tool();
        let this = Arc::new(self);
        Condition::Custom {
            name,
            reads_tool,
            check: Arc::new(move |evt: &Event| this.holds(evt)),
        }
    }
}

/// A condition from a closure; `name` is how `explain` shows it.
pub fn custom<F>(name: &str, check: F) -> Condition
where
    F: Fn(&Event) -> bool + Send + Sync + 'static,
{
    Condition::Custom {
        name: format!("{{ custom = {name:?} }}"),
        reads_tool: false,
        check: Arc::new(check),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capt_hook_core::{EventContext, EventKind};
    use serde_json::json;

    fn bash(command: &str) -> Event {
        Event::new(
            EventKind::PreToolUse,
            json!({"tool_name": "Bash", "tool_input": {"command": command}}),
            EventContext::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn constructors_compile_like_hook_files_and_name_bad_input() {
        let evt = bash("sudo git stash pop");
        assert!(runs(&["git", "stash"]).is_ok_and(|c| c.check(&evt)));
        assert!(command(r"git\s+stash").is_ok_and(|c| c.check(&evt)));
        assert!(tool(&["Edit|Bash"]).check(&evt));
        assert!(not(tool(&["Edit"])).check(&evt));
        assert!(tool_input("command", "^sudo").is_ok_and(|c| c.check(&evt)));
        assert_eq!(command("(").map(|_| ()).unwrap_err().field, "command");
        assert_eq!(runs::<&str>(&[]).map(|_| ()).unwrap_err().field, "runs");
        assert_eq!(user_said("[").map(|_| ()).unwrap_err().field, "user_said");
        assert!(custom("always", |_| true).check(&evt));
        assert!(!custom("never", |_| false).check(&evt));
    }
}
